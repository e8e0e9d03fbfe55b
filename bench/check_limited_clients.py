"""What the real Claude Code does against a key over its budget or its rate limit.

The router refuses a limited key the way the provider would (routing/limits/refusals.py);
what matters is what a real agent then does: stop, wait, or retry. This runs
the task of bench/check_claude_code.py (the same router under gunicorn, the
same scripted upstream, the same offline settings) with the router's key
limited, one scenario at a time:

* ``budget``: ``--budget-usd 0``, a spent budget (Anthropic's 400 "You have
  reached your specified API usage limits");
* ``rpm``: ``--rpm 3`` (three requests a minute; the fourth waits 20 s), a 429
  ``rate_limit_error`` with Retry-After;

and prints, per scenario, Claude Code's exit code and time, what it printed,
how many requests the router refused (by reason) and how many reached the
upstream; it fails when Claude Code does not do what it does against the real
API (``EXPECTED``). Codex CLI's behaviour is held by
tests/routing/test_codex_limits.py.

Run: ``.venv/bin/python bench/check_limited_clients.py [--scenario budget|rpm|both]``
Needs node/npm (Claude Code is installed as bench/claude_harness.py does).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import claude_harness as harness  # noqa: E402
from bench.bench_proxy import PYTHON  # noqa: E402

SCENARIOS = {"budget": ["--budget-usd", "0"], "rpm": ["--rpm", "3"]}
# What Claude Code does against the real API, measured with 2.1.197: a spent budget
# stops it at the first request, naming the reset; a rate limit it waits out and
# finishes the task, without hammering (one or two refusals).
EXPECTED = {
    "budget": lambda o: (
        o["exit"] != 0
        and o["refused"] == {"budget": 1}
        and o["upstream_requests"] == 0
        and "regain access" in o["printed"]
    ),
    "rpm": lambda o: o["exit"] == 0 and o["wrote_answer"] and 1 <= o["refused"].get("rpm", 0) <= 2,
}


def refusals(database: Path) -> dict:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT reason, count FROM routing_limitrefusal").fetchall()
        decided = db.execute("SELECT COUNT(*) FROM routing_routedecision").fetchone()[0]
    return {"refused": dict(rows), "decisions": decided}


def run(scenario: str, binary: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"limited-claude-{scenario}-") as name:
        tmp = Path(name)
        task = harness.prepare_task(tmp, "anthropic")
        repo, home, upstream, router = task
        subprocess.run(
            [PYTHON, str(ROOT / "manage.py"), "updateapikey", "bench", *SCENARIOS[scenario]],
            env=router.env,
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        with harness.serving(task):
            done, seconds = harness.run_claude(
                binary, repo, home, router, None, True, harness.CASES["alias"]
            )
        try:
            result = json.loads(done.stdout)
        except ValueError:
            result = {"result": done.stdout[-300:]}
        return {
            "exit": done.returncode,
            "seconds": round(seconds, 1),
            "is_error": result.get("is_error"),
            "printed": str(result.get("result", ""))[:300],
            "stderr": done.stderr[-300:],
            "upstream_requests": len(upstream.received),
            "wrote_answer": (repo / "ANSWER.md").exists(),
            **refusals(tmp / "router.sqlite3"),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "both"], default="both")
    args = parser.parse_args()
    binary = harness.claude_binary()
    print(f"Claude Code {harness.claude_version(binary)}")
    failed = []
    for scenario in SCENARIOS if args.scenario == "both" else [args.scenario]:
        print(f"\n== {scenario} ({' '.join(SCENARIOS[scenario])})")
        outcome = run(scenario, binary)
        for name, value in outcome.items():
            print(f"  {name}: {value}")
        if not EXPECTED[scenario](outcome):
            failed.append(scenario)
    if failed:
        sys.exit(f"Claude Code did not behave as against the real API: {', '.join(failed)}")
    print("\nClaude Code behaved as against the real API in every scenario.")


if __name__ == "__main__":
    main()
