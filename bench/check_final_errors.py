"""Every real agent against errors no retry mends, a rate limit, and the configs a user starts with.

An agent retries what the router answers unless the answer is final in its
own terms (routing.errors.AGENT_RETRIED_FINALS): without that a wrong router
key kept Claude Code silent for 180 s, Codex CLI retried a 401 five times
(~7 s) and opencode retried a spent budget's 429 without end (issue 41).
This runs Claude Code, Codex CLI and opencode (bench/agents.py: each as the
README sets it up, nothing leaving the machine) against the router under
gunicorn on loopback in front of a scripted upstream (bench/claude_harness.py),
once per scenario:

* ``wrong-key``: a router key the router does not know;
* ``unknown-model``: the model ``gtp-4.1``, a name nothing serves;
* ``provider-key-unset``: ``keyless-model``, whose provider's key variable is unset;
* ``provider-key-refused``: ``refused-model``, whose upstream answers 403 to the
  router's key for it (the router's 400 ``provider_key_rejected``);
* ``upstream-422``: ``unprocessable-model``, whose upstream answers 422 (relayed; to
  Codex a 400);
* ``no-vision`` (Codex only: ``codex exec -i``): an image for ``text-model``, a model
  without vision (the router's own 422, to Codex a 400);
* ``broken-config``: the config file broken after the router started;
* ``budget``: a key whose budget is spent (``--budget-usd 0``: it resets next month);
* ``rpm``: a key at its rate limit (``--rpm 20``, its minute spent before the
  agent starts): retryable, the agent must wait as Retry-After says and finish;
* ``shipped-default``: the shipped config and the agent's own default model name;
* ``shipped-1m``, ``shipped-sonnet`` (Claude Code only): the shipped config and
  ``--model claude-opus-4-8[1m]``, ``--model claude-sonnet-4-6``;
* ``readme-config``: the router config the README gives a user first, and the
  agent's README config.

It prints a table, agent x scenario: exit code, seconds from the agent's start
to its exit, seconds from the refused request to the agent showing the
router's message (its line on stdout or stderr; Claude Code's JSON result at
its exit), the requests the router answered and refused,
the model names asked for, pass or fail. A final error passes when the agent
exits within ``FINAL_SECONDS`` of the request, having sent it no more often
than it always does (``REQUESTS``), printing the router's message (or, for a
401 or a 404, the agent's own words for it); the others when the task
finishes. It exits non-zero on any failure.

Run: ``.venv/bin/python bench/check_final_errors.py [--agent claude|codex|opencode ...]
[--scenario NAME ...]``. Needs node/npm (the agents are installed from npm
into ~/.cache, as CI does).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import claude_harness as harness  # noqa: E402
from bench.agents import AGENTS, version  # noqa: E402
from bench.bench_proxy import PYTHON  # noqa: E402
from tests.support.real_clients import readme_block  # noqa: E402

# The bar: the time to the router's message under 5 s for every final error.
FINAL_SECONDS = 5.0
UNSET_KEY = "ROUTER_BENCH_UNSET_KEY"
# Time for gunicorn's other workers to boot after the first one answered (broken-config only:
# a worker that never answers yet takes no request, so the other scenarios need not wait).
BOOT_SECONDS = 3.0
RPM = 20  # a request every 3 s once the minute is spent: the agent waits about that long
SPENDER_MODEL = "agent-small"  # what spends the minute asks for: no agent names it
README = "readme"  # the model as the agent's README config names it
DEFAULT = "default"  # the name the agent asks for when none is set
README_CONFIG = readme_block("Configure it", "yaml")  # the router config a user copies first


class Scenario(NamedTuple):
    model: str  # a model name, README or DEFAULT
    # Agent (or "*": every agent) -> what it must print, the router's words or its own, when
    # the scenario is a final error for it; an agent not named must finish the task.
    said: dict
    config: str = "bench"  # bench (bench/claude_harness.py), shipped, readme
    limits: tuple = ()  # updateapikey flags
    wrong_key: bool = False
    agents: tuple = ()  # the agents it runs (empty: every one)
    image: bool = False  # the task comes with an image (only Codex's runner attaches one)
    upstream_refuses: bool = False  # the refusal is the upstream's: each reaches it once

    def said_to(self, agent: str) -> str | None:
        return self.said.get(agent, self.said.get("*"))


SCENARIOS = {
    # Claude Code words a 401 and a 404 itself.
    "wrong-key": Scenario(
        README, {"claude": "Invalid API key", "*": "Missing or invalid API key"}, wrong_key=True
    ),
    "unknown-model": Scenario(
        "gtp-4.1", {"claude": "issue with the selected model", "*": "does not exist"}
    ),
    "provider-key-unset": Scenario("keyless-model", {"*": UNSET_KEY}),
    # The upstream refuses the router's key for it (403): the router's final 400 naming it.
    "provider-key-refused": Scenario(
        "refused-model", {"*": "Your router key was accepted"}, upstream_refuses=True
    ),
    # The upstream answers 422 (FastAPI's status for a body it cannot take): relayed, final.
    "upstream-422": Scenario("unprocessable-model", {"*": "scripted 422"}, upstream_refuses=True),
    # An image for a pinned model without vision: the router's own 422 (a 400 to Codex).
    "no-vision": Scenario(
        "text-model", {"*": "does not accept images"}, agents=("codex",), image=True
    ),
    "broken-config": Scenario(README, {"*": "pinch.budget_tokens"}),
    "budget": Scenario(README, {"*": "regain access"}, limits=("--budget-usd", "0")),
    "rpm": Scenario(README, {}, limits=("--rpm", str(RPM))),
    "shipped-default": Scenario(DEFAULT, {}, config="shipped"),
    # Claude Code's other names on the shipped config: its picker's 1M-context default, and
    # the one README users pin with --model.
    "shipped-1m": Scenario("claude-opus-4-8[1m]", {}, config="shipped", agents=("claude",)),
    "shipped-sonnet": Scenario("claude-sonnet-4-6", {}, config="shipped", agents=("claude",)),
    # Claude Code's requests (a ~26,000-token prompt, 64,000 asked for the answer) fit
    # only the config's OpenAI model, not its local 32,768-token one.
    "readme-config": Scenario(README, {}, config="readme"),
}

# The requests each agent sends of a final error, none a retry: opencode asks its small
# model for the session's title besides the task; Claude Code sends a refused stream
# once more unstreamed when it is a 404 (its own fallback, whatever the headers say).
REQUESTS = {"claude": 1, "codex": 1, "opencode": 2}
MORE_REQUESTS = {("claude", "unknown-model"): 2}


def agent_model(agent: str, model: str) -> str | None:
    """The name passed to the agent's runner; None: none set (its default, or the README's)."""
    if model == README:
        return "auto" if agent == "codex" else None  # the README's config.toml sets "auto"
    return None if model == DEFAULT else model


def configure(path: Path, scenario: Scenario, upstream_url: str) -> None:
    """The router's config for ``scenario``, every provider at the scripted upstream."""
    data = yaml.safe_load(path.read_text())
    if scenario.config in ("shipped", "readme"):
        shipped = (ROOT / "routing" / "config" / "default_config.yaml").read_text()
        data = yaml.safe_load(shipped if scenario.config == "shipped" else README_CONFIG)
        for provider in ("local", "openai"):
            data["providers"][provider]["base_url"] = upstream_url + "/v1"
    else:
        data["aliases"]["gpt-*"] = "auto"  # as shipped: Codex's own names
        data["providers"]["keyless"] = {**data["providers"]["agent"], "api_key_env": UNSET_KEY}
        model = data["models"][1]
        data["models"] += [
            {**model, "id": "keyless-model", "provider": "keyless"},
            {**model, "id": "refused-model", "upstream_model": "fail-403-1000"},
            {**model, "id": "unprocessable-model", "upstream_model": "fail-422-1000"},
            {**model, "id": "text-model", "capabilities": ["tools"]},
        ]
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def post(router, body: dict) -> int:
    request = urllib.request.Request(
        router.url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {router.key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def wait_until_served(router) -> None:
    """Until the router answers."""
    for _ in range(50):
        headers = {"x-api-key": router.key}
        request = urllib.request.Request(router.url + "/v1/models", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=5):
                break
        except OSError:
            time.sleep(0.2)


def break_config(path: Path) -> None:
    """Broken once every worker has booted on the valid file (one booting on a broken file
    stops gunicorn: router_project/wsgi.py)."""
    time.sleep(BOOT_SECONDS)
    data = yaml.safe_load(path.read_text())
    data["pinch"]["budget_tokens"] = -1
    path.write_text(yaml.safe_dump(data))
    os.utime(path, (time.time(), time.time() + 1))  # a new mtime, however coarse the clock


def post_for_status(router, body: dict) -> int:
    try:
        return post(router, body)
    except OSError:
        return 0


def rpm_refusals(database: Path) -> int:
    with sqlite3.connect(database) as db:
        row = db.execute("SELECT SUM(count) FROM routing_limitrefusal WHERE reason = 'rpm'")
        return row.fetchone()[0] or 0


class MinuteSpender(threading.Thread):
    """Keeps the key's minute spent until the agent's first request is refused for it.

    The agent takes seconds to start (opencode 5-20 s here) and the bucket
    refills meanwhile, so the minute is spent again and again until the
    router counts a refusal that was not this thread's; ``answered`` and
    ``refused`` are this thread's own requests, left out of the agent's.
    """

    def __init__(self, router, database: Path):
        super().__init__(daemon=True)
        self.router, self.database = router, database
        self.answered = self.refused = 0
        self.done = threading.Event()

    def spend(self) -> None:
        body = {"model": SPENDER_MODEL, "messages": [{"role": "user", "content": "hi"}]}
        status = post_for_status(self.router, body)
        self.refused += status == 429
        self.answered += status == 200

    def start(self):
        """The minute spent now, then kept spent (what refills: a request every 3 s)."""
        while not self.refused:
            self.spend()
        super().start()

    def run(self):
        # Often: what refills is taken within ~0.1 s, so the agent's request is refused.
        while not self.done.is_set() and rpm_refusals(self.database) <= self.refused:
            self.spend()
            time.sleep(0.05)


def refusals(log: str) -> list[tuple[float, str]]:
    """The router's refused answers (its answer_refused lines): (epoch, status)."""
    found = []
    for line in log.splitlines():
        if "answer_refused" in line:
            stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            found.append((stamp, line.split("status=", 1)[1].split()[0]))
    return found


def to_message(shown: float | None, refused: list) -> float | None:
    """Seconds from the refused request whose message the agent showed (the last refused
    before it was shown: opencode's title request, refused seconds earlier, shows nothing)."""
    before = [at for at, _ in refused if shown is not None and at <= shown]
    return round(shown - before[-1], 1) if before else None


def decisions(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT requested_model FROM routing_routedecision ORDER BY id")
        return [n for (n,) in rows]


def run(agent: str, name: str, binary: Path) -> dict:
    scenario = SCENARIOS[name]
    with tempfile.TemporaryDirectory(prefix=f"final-{agent}-{name}-") as tmp_name:
        tmp = Path(tmp_name)
        task = harness.prepare_task(tmp, "openai")
        repo, _, upstream, router = task
        config = Path(router.env["ROUTER_CONFIG"])
        configure(config, scenario, upstream.base_url.removesuffix("/v1"))
        router.env.pop(UNSET_KEY, None)
        router.env["OPENAI_API_KEY"] = "sk-bench-not-a-key"  # the shipped openai provider's
        if scenario.limits:
            subprocess.run(
                [PYTHON, str(ROOT / "manage.py"), "updateapikey", "bench", *scenario.limits],
                env=router.env,
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        spender = MinuteSpender(router, tmp / "router.sqlite3")
        key = "rk-not-a-router-key" if scenario.wrong_key else router.key
        with harness.serving(task):
            wait_until_served(router)
            if name == "broken-config":
                break_config(config)
            if name == "rpm":
                spender.start()
            model = agent_model(agent, scenario.model)
            extra = {"image": True} if scenario.image else {}
            ran = AGENTS[agent].run(binary, tmp, repo, router, key, model, **extra)
            spender.done.set()
            if spender.is_alive():
                spender.join()
        log = task.router.process.stdout.read().decode(errors="replace")
        refused = refusals(log)[spender.refused :]  # the spender's refused before the agent's
        drained = spender.answered
        asked = [n for n in decisions(tmp / "router.sqlite3") if n != SPENDER_MODEL]
        said = scenario.said_to(agent)
        shown = ran.shown_at(said) if said else None
        return {
            "exit": ran.exit,
            "seconds": round(ran.seconds, 1),
            "to_message": to_message(shown, refused),
            "answered": len(asked),
            "refused": [status for _, status in refused],
            # Seconds from the first refusal to each (a second request sent late shows here).
            "refused_after": [round(at - refused[0][0], 1) for at, _ in refused],
            "asked_for": sorted(set(asked)),
            "upstream_requests": len(upstream.received) - drained,
            "printed": " ".join(ran.printed.split())[-400:],
        }


def passed(agent: str, name: str, outcome: dict) -> bool:
    if SCENARIOS[name].said_to(agent) is None:
        # rpm: refused at least once, then waited its turn and finished.
        waited = name != "rpm" or len(outcome["refused"]) >= 1
        return outcome["exit"] == 0 and outcome["answered"] >= 1 and waited
    sent = MORE_REQUESTS.get((agent, name), REQUESTS[agent])
    return (
        outcome["exit"] != 0
        and outcome["to_message"] is not None  # None: the expected words were never shown
        and outcome["to_message"] < FINAL_SECONDS
        and outcome["upstream_requests"] == (sent if SCENARIOS[name].upstream_refuses else 0)
        and len(outcome["refused"]) == sent
    )


def dash(value) -> str:
    return "-" if value is None else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", choices=list(AGENTS), action="append")
    parser.add_argument("--scenario", choices=list(SCENARIOS), action="append")
    args = parser.parse_args()
    rows, failed = [], []
    for agent in args.agent or list(AGENTS):
        binary = AGENTS[agent].binary()
        print(f"\n# {agent} {version(binary)} (default model name: {AGENTS[agent].default_model})")
        for name in args.scenario or list(SCENARIOS):
            if SCENARIOS[name].agents and agent not in SCENARIOS[name].agents:
                continue
            outcome = run(agent, name, binary)
            ok = passed(agent, name, outcome)
            print(f"== {agent} {name}: {'pass' if ok else 'FAIL'}")
            print("\n".join(f"  {k}: {v}" for k, v in outcome.items()), flush=True)
            rows.append((agent, name, outcome, ok))
            failed += [] if ok else [f"{agent} {name}"]
    print("\n| agent | scenario | exit | seconds | to message | answered | refused | asked for | |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for agent, name, o, ok in rows:
        refused = " ".join(o["refused"]) or "-"
        asked = ", ".join(o["asked_for"]) or "-"
        print(
            f"| {agent} | {name} | {o['exit']} | {o['seconds']} | {dash(o['to_message'])} "
            f"| {o['answered']} | {refused} | {asked} | {'pass' if ok else 'FAIL'} |"
        )
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")
    print("\nEvery final error stopped every agent at once, showing the router's message; each")
    print("waited out the rate limit; the shipped config served each agent's default model name.")


if __name__ == "__main__":
    main()
