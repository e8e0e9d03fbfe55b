"""How long the router takes to read a request body: JSON parsing plus the one schema check.

Every request pays this before anything else, so each protocol's schema
(routing/protocols/{chat,messages,responses}/request.py) must cost no more
than the hand-written checks it replaced. The bodies are the last request of
corpus session 026 (368 KB of agent history, the one bench/bench_proxy.py
drives through the router) as each client would send it: chat completions,
a Messages body (Claude Code's shape: tool_use and tool_result blocks), a
Responses body (Codex CLI's: message, function_call, function_call_output
items).

Run: ``.venv/bin/python bench/bench_parse.py [--rounds N] [--baseline REV]``;
prints, per protocol, the median over rounds of the per-call time of the
schema check (JSON parse + check) and of the whole parse (check, translation,
the chat schema), ``json.loads`` alone as the floor and, with ``--baseline``,
the same functions of each protocol's request.py as it was at git revision
REV, measured in the same rounds, interleaved (every other round in reverse
order), so a noisy moment, or the garbage one run leaves, hits both.
For chat completions before the protocol packages (``--baseline ae267c8``,
the hand-written checks its schema replaced) it is routing/chat_request.py's
``parse_chat_request`` after ``json.loads``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")

import django

django.setup()

from bench.bench_responses import as_items
from bench.corpus import bench_conversations, corpus_arguments
from bench.machine import describe_machine
from routing.protocols.base import json_body
from routing.protocols.chat import request as chat
from routing.protocols.messages import request as messages
from routing.protocols.responses import request as responses
from routing.providers.anthropic.request import to_messages_request

PROTOCOLS = ("chat", "messages", "responses")


def agent_bodies() -> dict[str, bytes]:
    """Session 026's last request as each protocol's client sends it."""
    _, conversations = bench_conversations()
    session = next(c for c in conversations if c.name == "026.json")
    turns = list(session.requests())[-1]
    as_messages = to_messages_request({"model": "auto", "messages": turns, "max_tokens": 4096})
    bodies = {
        "chat": {"model": "auto", "messages": turns},
        "messages": as_messages.body,
        "responses": {"model": "auto", "input": as_items(turns), "stream": True},
    }
    return {name: json.dumps(body).encode() for name, body in bodies.items()}


def per_call_ms(function, raw: bytes, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        function(raw)
    return (time.perf_counter() - started) * 1000 / calls


def functions(module, protocol: str) -> dict:
    """{"check": raw -> checked, "parse": raw -> ChatRequest} of a protocol's request module."""
    if protocol == "chat":
        return {"check": module.parse_chat_body, "parse": module.parse_chat_body}
    if protocol == "messages":
        return {
            "check": lambda raw: module.check_messages_body(json_body(raw)),
            "parse": module.parse_messages_body,
        }
    return {
        "check": lambda raw: module.check_responses_body(json_body(raw)),
        "parse": lambda raw: module.parse_responses_body(raw, None),
    }


def _module_at(revision: str, path: str):
    source = subprocess.run(
        ["git", "show", f"{revision}:{path}"], cwd=ROOT, capture_output=True, text=True
    )
    if source.returncode:
        return None
    module = types.ModuleType(f"baseline_{path.replace('/', '_').removesuffix('.py')}")
    sys.modules[module.__name__] = module  # dataclasses and pydantic look their module up
    exec(compile(source.stdout, f"{revision}:{path}", "exec"), module.__dict__)
    return module


def baseline_functions(revision: str, protocol: str) -> dict | None:
    """The same functions of the protocol's request module at REV (None: it had none)."""
    module = _module_at(revision, f"routing/protocols/{protocol}/request.py")
    if module is not None:
        return functions(module, protocol)
    if protocol != "chat":
        return None
    old = _module_at(revision, "routing/chat_request.py")
    parse = lambda raw: old.parse_chat_request(json.loads(raw))  # noqa: E731
    return {"check": parse, "parse": parse}


def main():
    parser = corpus_arguments(__doc__, rounds=15)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--baseline", help="a git revision to compare with")
    parser.add_argument("--protocol", choices=PROTOCOLS, action="append")
    args = parser.parse_args()

    bodies = agent_bodies()
    current = {"chat": chat, "messages": messages, "responses": responses}
    print(describe_machine())
    print(f"{args.rounds} rounds x {args.calls} calls, medians (ms per call)")
    for protocol in args.protocol or PROTOCOLS:
        raw = bodies[protocol]
        now = functions(current[protocol], protocol)
        then = baseline_functions(args.baseline, protocol) if args.baseline else None
        runs = {f"{step} now": fn for step, fn in now.items()}
        runs |= {f"{step} at {args.baseline}": fn for step, fn in (then or {}).items()}
        for fn in runs.values():
            fn(raw)  # warm up (imports, schema build)
        times = {name: [] for name in ["json.loads", *runs]}
        for round_ in range(args.rounds):
            times["json.loads"].append(per_call_ms(json.loads, raw, args.calls))
            # Every other round backwards: what one run leaves (garbage to collect)
            # is paid by the next, so no function always follows the same one.
            order = list(runs.items())
            for name, fn in order if round_ % 2 else reversed(order):
                times[name].append(per_call_ms(fn, raw, args.calls))
        median = statistics.median
        print(f"\n{protocol}: body {len(raw) / 1024:.0f} KB")
        for name, values in times.items():
            print(f"  {name:28s} {median(values):7.3f} ms")
        for step in now if then else ():
            pairs = zip(times[f"{step} now"], times[f"{step} at {args.baseline}"])
            ratio = median([a / b for a, b in pairs])
            print(f"  {step} now / then {'':16s} {ratio:7.2f}x (median of per-round ratios)")


if __name__ == "__main__":
    main()
