"""The real Claude Code against errors a retry cannot mend, and on the shipped config.

Claude Code retries what the router answers unless told not to: without
``x-should-retry: false`` a wrong router key kept it silent for 180 s (11
retries), a provider key unset or a broken config file for about three
minutes (issue 41). This runs the set-up of bench/check_claude_code.py (the
router under gunicorn on loopback, the scripted upstream, nothing leaving the
machine; bench/claude_harness.py) once per scenario:

* ``wrong-key``: a router key the router does not know (401);
* ``unknown-model``: ``--model gtp-4.1``, a name nothing serves (404, with a
  did-you-mean);
* ``provider-key-unset``: ``--model keyless-model``, a model whose provider's
  key variable is unset (400);
* ``broken-config``: the config file broken after the router started (400);
* ``shipped-default``: the shipped config (its aliases, its models, both of
  its providers pointed at the scripted upstream) and no ``--model``: Claude
  Code's own default model name must answer and the task finish.

Each prints Claude Code's exit code, the seconds from its start to its exit
(the time to show the router's message, start-up included), what it printed,
and how many requests the router answered; a final error passes when Claude
Code stops in under ``FINAL_SECONDS`` after exactly one request for it, naming
the router's message.

Run: ``.venv/bin/python bench/check_final_errors.py [--scenario NAME ...]``
Needs node/npm (Claude Code is installed as bench/claude_harness.py does).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sqlite3
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import claude_harness as harness  # noqa: E402

# The bar: the time to the router's message under 5 s for every final error.
FINAL_SECONDS = 5.0
UNSET_KEY = "ROUTER_BENCH_UNSET_KEY"
# Time for gunicorn's other workers to boot after the first one answered.
BOOT_SECONDS = 3.0


class Scenario(NamedTuple):
    arguments: list[str]
    said: str  # what Claude Code must print: the router's own words (or the task's answer)
    final: bool = True


SCENARIOS = {
    "wrong-key": Scenario([], "Invalid API key"),  # Claude Code words a 401 itself
    "unknown-model": Scenario(["--model", "gtp-4.1"], "gtp-4.1"),
    "provider-key-unset": Scenario(["--model", "keyless-model"], UNSET_KEY),
    "broken-config": Scenario([], "pinch.budget_tokens"),
    "shipped-default": Scenario([], "", final=False),
}


def configure(path: Path, scenario: str, upstream_url: str) -> None:
    data = yaml.safe_load(path.read_text())
    if scenario == "shipped-default":
        data = yaml.safe_load((ROOT / "routing" / "config" / "default_config.yaml").read_text())
        for provider in ("local", "openai"):
            data["providers"][provider]["base_url"] = upstream_url + "/v1"
    elif scenario == "provider-key-unset":
        data["providers"]["keyless"] = {**data["providers"]["agent"], "api_key_env": UNSET_KEY}
        model = {**data["models"][1], "id": "keyless-model", "provider": "keyless"}
        data["models"].append(model)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def break_config(path: Path, router) -> None:
    """Break the file once the router serves: every worker has booted on the valid one.

    A worker that boots on a broken file stops gunicorn (router_project/wsgi.py),
    so the file is broken only after a request has been answered and the
    workers have had time to boot.
    """
    for _ in range(50):
        try:
            request = urllib.request.Request(
                router.url + "/v1/models", headers={"x-api-key": router.key}
            )
            with urllib.request.urlopen(request, timeout=5):
                break
        except OSError:
            time.sleep(0.2)
    time.sleep(BOOT_SECONDS)
    data = yaml.safe_load(path.read_text())
    data["pinch"]["budget_tokens"] = -1
    path.write_text(yaml.safe_dump(data))
    os.utime(path, (time.time(), time.time() + 1))  # a new mtime, however coarse the clock


def answered(database: Path) -> dict:
    """The decision rows: how many, and the model names Claude Code asked for."""
    with sqlite3.connect(database) as db:
        names = db.execute("SELECT requested_model FROM routing_routedecision").fetchall()
    return {"decisions": len(names), "asked_for": sorted({n for (n,) in names})}


def run(scenario: str, binary: Path) -> dict:
    spec = SCENARIOS[scenario]
    with tempfile.TemporaryDirectory(prefix=f"final-{scenario}-") as name:
        tmp = Path(name)
        task = harness.prepare_task(tmp, "openai")
        repo, home, upstream, router = task
        config = Path(router.env["ROUTER_CONFIG"])
        configure(config, scenario, upstream.base_url.removesuffix("/v1"))
        router.env.pop(UNSET_KEY, None)
        if scenario == "shipped-default":
            router.env["OPENAI_API_KEY"] = "sk-bench-not-a-key"
        if scenario == "wrong-key":
            router = dataclasses.replace(router, key="rk-not-a-router-key")
        case = harness.Case(spec.arguments, {}, "")
        with harness.serving(task):
            if scenario == "broken-config":
                break_config(config, router)
            done, seconds = harness.run_claude(binary, repo, home, router, None, True, case)
        try:
            printed = str(json.loads(done.stdout).get("result", ""))
        except ValueError:
            printed = done.stdout[-400:]
        return {
            "exit": done.returncode,
            "seconds": round(seconds, 1),
            "printed": printed[:400],
            "stderr": done.stderr[-300:],
            "upstream_requests": len(upstream.received),
            **answered(tmp / "router.sqlite3"),
            "wrote_answer": (repo / "ANSWER.md").exists(),
        }


def shown(scenario: str, binary: Path) -> dict:
    """Run ``scenario`` and print what happened, a line per figure."""
    print(f"\n== {scenario}", flush=True)
    outcome = run(scenario, binary)
    print("\n".join(f"  {key}: {value}" for key, value in outcome.items()))
    return outcome


def passed(scenario: str, outcome: dict) -> bool:
    spec = SCENARIOS[scenario]
    if not spec.final:
        return outcome["exit"] == 0 and outcome["wrote_answer"]
    return (
        outcome["exit"] != 0
        and outcome["seconds"] < FINAL_SECONDS
        and spec.said in outcome["printed"] + outcome["stderr"]
        and outcome["upstream_requests"] == 0
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=list(SCENARIOS), action="append")
    args = parser.parse_args()
    binary = harness.claude_binary()
    print(f"Claude Code {harness.claude_version(binary)}")
    failed = [s for s in args.scenario or list(SCENARIOS) if not passed(s, shown(s, binary))]
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")
    print("\nEvery final error stopped Claude Code at once; the shipped config served it.")


if __name__ == "__main__":
    main()
