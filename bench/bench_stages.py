"""Where each millisecond of a request goes, stage by stage, for each protocol and body size.

bench_proxy.py says how much the router adds; this says what the time is spent
on. It serves the router in process (the WSGI app through Django's test
client, a temp SQLite file, the shipped config with every model on
bench/fast_upstream.py, pinch on at its defaults), with a key that has limits
(rpm, tpm and a budget: the limiter's work is on the path) and a conversation
already under way (the session's earlier requests sent first, so the ledger,
the probe and the conversation's row exist), and times each stage by wrapping
the functions that do it. A stage's figure is its own time, its callees'
stages taken out; "Django and the rest" is what is left of the request
(the test client, middleware, the view's glue). Medians over the samples, per
request.

Bodies: the first request of corpus session 026 (2 KB, one user message) and
its last (368 KB of agent history), as each protocol's client sends them
(chat completions, Messages as Claude Code, Responses as Codex;
bench/bench_parse.py builds the same). ``--tools`` declares Claude Code's 24 tool
definitions (82 KB of JSON, tests/support/claude_code_payload.py) on every body,
in each protocol's shape, as an agent's requests carry them. Stages whose
functions a checkout lacks are left out, so the same script times the code
before and after a change.

Run: ``.venv/bin/python bench/bench_stages.py [--samples 40] [--protocol chat ...] [--tools]
[--profile N]``
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_proxy import router_beside_upstream  # noqa: E402

PYTHON = sys.executable
PROTOCOLS = ("chat", "messages", "responses")
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
EARLIER_REQUESTS = 4  # of the session, sent before the measured one: a conversation under way
WARMUP = 10

# (module, attribute or Class.method, stage). Both the names before issue 39's completion
# service and after it are listed; whichever a checkout has is timed.
STAGES = [
    ("routing.views", "ApiView.dispatch", "Django and the rest"),
    ("routing.views", "key_for_request", "key and config"),
    ("routing.views", "api_config", "key and config"),
    ("routing.completion", "api_config", "key and config"),
    ("routing.protocols.chat.request", "json_body", "parse JSON"),
    ("routing.protocols.messages.request", "json_body", "parse JSON"),
    ("routing.protocols.responses.request", "json_body", "parse JSON"),
    ("routing.protocols.chat.request", "parse_chat_request", "validate (schema)"),
    ("routing.protocols.messages.request", "check_messages_body", "validate (schema)"),
    ("routing.protocols.responses.request", "check_responses_body", "validate (schema)"),
    ("routing.protocols.messages.request", "from_messages_request", "translate to chat"),
    ("routing.protocols.responses.request", "from_responses_request", "translate to chat"),
    ("routing.protocols.responses.request", "conversation_items", "database read"),
    ("routing.conversation_state", "RecordedState.read", "database read"),
    ("routing.views", "admit", "limits"),
    ("routing.completion", "admit", "limits"),
    ("routing.limits.admission", "Admission.take", "limits"),
    ("routing.views", "plan_request", "plan (the rest)"),
    ("routing.completion", "plan_request", "plan (the rest)"),
    ("routing.pipeline", "route_request", "routing (tier, model)"),
    ("routing.pipeline", "candidates_for", "routing (tier, model)"),
    ("routing.pipeline", "baseline_model", "routing (tier, model)"),
    ("routing.pipeline", "conversation_key", "routing (tier, model)"),
    ("routing.pipeline", "measure_prompt_tokens", "pinch and its ledger"),
    ("routing.pipeline", "pinch_messages", "pinch and its ledger"),
    ("routing.prefix_probe", "PrefixProbe.figures", "prefix probe"),
    ("routing.pipeline", "_signals", "quality signals, forecast"),
    ("routing.pipeline", "_unpruned_split", "quality signals, forecast"),
    ("routing.recording.decisions", "forecast_fields", "quality signals, forecast"),
    ("routing.views", "open_decision", "open the decision (id, journal)"),
    ("routing.completion", "open_decision", "open the decision (id, journal)"),
    ("routing.providers.http", "HttpProvider._send", "upstream call"),
    ("routing.jsonio", "dumps", "serialise (upstream body, answer)"),
    ("routing.dispatch.relay", "finish_decision", "database write"),
]


class Clock:
    """Own time per stage: a stage's callees that are stages themselves are taken out."""

    def __init__(self):
        self.own = defaultdict(float)
        self.stack = []

    def wrap(self, function, stage):
        def timed(*args, **kwargs):
            self.stack.append(0.0)
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                inner = self.stack.pop()
                self.own[stage] += elapsed - inner
                if self.stack:
                    self.stack[-1] += elapsed

        return timed


def install(clock: Clock) -> list[str]:
    """Wrap every stage function this checkout has; return the stages found."""
    found = []
    for module_name, attribute, stage in STAGES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner, name = module, attribute
        if "." in attribute:
            class_name, name = attribute.split(".")
            owner = getattr(module, class_name, None)
        function = getattr(owner, name, None) if owner is not None else None
        if function is None:
            continue
        setattr(owner, name, clock.wrap(function, stage))
        found.append(stage)
    return found


def bodies(protocol: str, tools: bool = False) -> dict[str, tuple[list[bytes], bytes]]:
    """{label: (the earlier requests, the measured one)} as the protocol's client sends them;
    ``tools``: with Claude Code's tool definitions declared."""
    from bench.bench_responses import as_items
    from bench.corpus import bench_conversations
    from routing.providers.anthropic.request import to_messages_request

    _, conversations = bench_conversations()
    session = next(c for c in conversations if c.name == "026.json")
    requests = list(session.requests())
    declared = _tools(protocol) if tools else {}

    def body(turns) -> bytes:
        if protocol == "chat":
            data = {"model": "auto", "messages": turns}
        elif protocol == "messages":
            data = to_messages_request({"model": "auto", "messages": turns, "max_tokens": 4096})
            data = data.body
        else:
            data = {"model": "auto", "input": as_items(turns), "store": False}
        return json.dumps({**data, **declared}).encode()

    last = len(requests) - 1
    return {
        "2 KB": ([], body(requests[0])),
        "368 KB": (
            [body(r) for r in requests[last - EARLIER_REQUESTS : last]],
            body(requests[last]),
        ),
    }


def _tools(protocol: str) -> dict:
    """Claude Code's tool definitions in ``protocol``'s shape, as a body's ``tools``."""
    from tests.support.claude_code_payload import claude_code_body

    tools = claude_code_body("")["tools"]
    if protocol == "messages":
        return {"tools": tools}
    functions = [
        {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
        for t in tools
    ]
    if protocol == "chat":
        return {"tools": [{"type": "function", "function": f} for f in functions]}
    return {"tools": [{"type": "function", **f} for f in functions]}


def child(args) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    import django

    django.setup()
    from django.test import Client

    from routing.limits.settings import set_key_limits
    from routing.models import ApiKey

    set_key_limits(
        ApiKey.objects.get(), {"rpm_limit": 10**6, "tpm_limit": 10**10, "budget_usd": 10.0**6}
    )
    clock = Clock()
    stages = list(dict.fromkeys(install(clock)))

    client = Client(HTTP_AUTHORIZATION=f"Bearer {os.environ['BENCH_KEY']}", HTTP_HOST="127.0.0.1")
    results = {}
    for protocol in args.protocol or PROTOCOLS:
        for label, (earlier, measured) in bodies(protocol, args.tools).items():

            def call(data, path=PATHS[protocol]):
                response = client.post(path, data=data, content_type="application/json")
                assert response.status_code == 200, response.content[:300]

            for data in earlier:
                call(data)
            for _ in range(WARMUP):
                call(measured)
            per_stage = defaultdict(list)
            totals = []
            profiler = cProfile.Profile() if args.profile else None
            if profiler is not None:
                profiler.enable()
            for _ in range(args.samples):
                clock.own.clear()
                started = time.perf_counter()
                call(measured)
                total = (time.perf_counter() - started) * 1000
                totals.append(total)
                timed = 0.0
                for stage in stages:
                    figure = clock.own.get(stage, 0.0) * 1000
                    per_stage[stage].append(figure)
                    timed += figure
                per_stage["(test client, outside the view)"].append(total - timed)
            if profiler is not None:
                profiler.disable()
                print(f"## {protocol} {label}: own time per request, ms", file=sys.stderr)
                _print_profile(profiler, args.samples, args.profile)
            results[(protocol, label)] = (statistics.median(totals), per_stage)
    print(
        json.dumps(
            {
                f"{p}|{b}": [t, {s: statistics.median(v) for s, v in st.items()}]
                for (p, b), (t, st) in results.items()
            }
        )
    )


def _print_profile(profiler, samples: int, top: int) -> None:
    """The functions with the most own time (cProfile's tottime), per request, to stderr."""
    rows = sorted(pstats.Stats(profiler).stats.items(), key=lambda item: -item[1][2])
    for (filename, line, name), (_, calls, own, cumulative, _) in rows[:top]:
        where = filename.replace(str(ROOT) + "/", "")
        print(
            f"{own / samples * 1000:8.3f} {cumulative / samples * 1000:8.3f} "
            f"{calls / samples:7.1f}  {where}:{line} {name}",
            file=sys.stderr,
        )


def run(args) -> dict:
    with router_beside_upstream("bench-stages-") as (tmp, router):
        # Claude Code's and Codex's bodies declare tools: every model takes them.
        config = tmp / "router.yaml"
        data = yaml.safe_load(config.read_text())
        for model in data["models"]:
            model["capabilities"] = ["tools", "vision", "json_mode"]
        config.write_text(yaml.safe_dump(data))
        env = {**router.env, "BENCH_KEY": router.key}
        command = [PYTHON, __file__, "--child", "--samples", str(args.samples)]
        command += ["--profile", str(args.profile)] if args.profile else []
        command += ["--tools"] if args.tools else []
        for protocol in args.protocol or ():
            command += ["--protocol", protocol]
        out = subprocess.run(command, env=env, cwd=ROOT, capture_output=True)
    if out.returncode:
        sys.exit(out.stderr.decode()[-3000:])
    if args.profile:
        print(out.stderr.decode())
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def report(results: dict) -> None:
    stages = list(dict.fromkeys(s for _, (_, st) in results.items() for s in st))
    columns = list(results)
    header = ["stage (ms, median)", *[c.replace("|", " ") for c in columns]]
    rows = [["request, in process", *[f"{results[c][0]:.2f}" for c in columns]]]
    for stage in stages:
        rows.append([stage, *[f"{results[c][1].get(stage, 0.0):.3f}" for c in columns]])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for row in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40, help="measured requests per cell")
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also print each cell's N functions of most own time (cProfile), per request; "
        "the table's figures then carry the profiler's cost",
    )
    parser.add_argument(
        "--tools", action="store_true", help="declare Claude Code's 24 tools (82 KB) on each body"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from bench.machine import describe_machine

    print(f"machine: {describe_machine()}")
    report(run(args))


if __name__ == "__main__":
    main()
