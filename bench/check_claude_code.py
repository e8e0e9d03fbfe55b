"""The real Claude Code through the router: a multi-tool task, to each kind of upstream.

Claude Code is the client most users point at the router, and only the
real one shows what it really sends (its system prompt, ~20 tools, beta
headers, background calls on the small model, streaming always on). This
installs it from npm (``@anthropic-ai/claude-code``, into a cache directory,
never the repo), serves the router with gunicorn on loopback (its own temp
SQLite and config), and for each upstream kind (the Anthropic test server,
natively; the OpenAI-compatible one, translated) runs

    claude -p "<task>" --output-format json --model claude-sonnet-4-6

in a scratch git repo with ``ANTHROPIC_BASE_URL`` at the router. The
upstream is a scripted model (tests/support/agent_upstream.py) that asks for
two ``Read`` calls at once, a ``Bash`` call and a ``Write`` call, then gives
its final answer; the check passes when Claude Code ran all of them (the
file it wrote is there), printed the final answer, every decision row ended
200, pinch shrank the conversation on the later turns, and every row of the
run carries one session (Claude Code's session id). Then ``/compact`` in the
same conversation (``--continue``): the upstream answers the compaction
request with a summary, and a follow-up task goes on from it (one ``Bash``
call, then an answer the upstream gives only when the summary is there).

``--matrix`` runs the model names a user gives Claude Code: a Claude name
mapped by the config's aliases (``claude-sonnet-4-6``), ``--model auto``, and
a router model id through ``ANTHROPIC_MODEL`` / ``ANTHROPIC_SMALL_FAST_MODEL``
(``agent-model`` / ``agent-small``), each to both upstream kinds. For the
last two Claude Code sends a system message inside ``messages``.

``--routing`` checks session routing (docs/routing.md): Claude Code asks for
``claude-opus-4-6``, which the ``claude-*`` glob sends to auto, once with
``-p "say hi"`` and once with a hard task (no /compact). The trivial task
must go below the hard tier and the hard one to it, each run's main-loop
requests to one model (a ``start``, then ``held``), and the harness must not
count: the first request measures >= 20,000 tokens either way.

Nothing may leave the machine: Claude Code runs with
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, ``DISABLE_TELEMETRY=1``,
``DISABLE_AUTOUPDATER=1``, ``DISABLE_ERROR_REPORTING=1`` and a fresh HOME,
under ``strace -f -e trace=connect`` when strace is there; any connect to an
address other than loopback (or the local DNS stub) fails the check, and the
addresses seen are printed.

Run: ``.venv/bin/python bench/check_claude_code.py [--upstream anthropic|openai|both]
[--matrix | --routing | --model NAME]``
Needs node/npm (CI runs it when node is present). ``CLAUDE_CODE_BIN``
points at an installed ``claude`` instead.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from bench.claude_harness import (
    CASES,
    Case,
    claude_binary,
    claude_version,
    prepare_task,
    run_claude,
    serving,
)
from tests.support.agent_upstream import FINAL_ANSWER, FOLLOW_UP_ANSWER, SUMMARY_MARKER, steps
from tests.support.served import wait_until_recorded

FOLLOW_UP = "Now check what ANSWER.md says."
# --routing: Claude Code's own model name goes to auto; the task decides the tier.
ROUTED_MODEL = "claude-opus-4-6"
HARD_TASK = (
    "Refactor the session store's architecture to remove the race condition between the "
    "expiry sweep and concurrent writes, and design the migration so it can be rolled back."
)
ROUTING_CASES = {
    name: Case(["--model", ROUTED_MODEL], {}, ROUTED_MODEL, task, tier, compact=False)
    for name, task, tier in (("say-hi", "say hi", "easy"), ("hard-task", HARD_TASK, "hard"))
}
# What Claude Code may connect to: the router, on loopback (and a local DNS stub).
LOCAL_ADDRESS = re.compile(
    r'sin6?_addr=inet_(?:pton\(AF_INET6, )?(?:addr\()?"(127\.|::1|::ffff:127\.)'
)


def connects(trace: Path) -> tuple[int, list[str]]:
    """(how many connects went to loopback, the ones to anywhere else), unix sockets aside."""
    local, outside = 0, []
    for line in trace.read_text().splitlines():
        if "connect(" not in line or "AF_UNIX" in line or "AF_NETLINK" in line:
            continue
        if LOCAL_ADDRESS.search(line):
            local += 1
        else:
            outside.append(line.split("connect(", 1)[1][:160])
    return local, outside


def decisions(database: Path) -> list[dict]:
    with sqlite3.connect(database) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute(
            "SELECT requested_model, chosen_model, path, stream, status_code, "
            "pinch_original_tokens, pinch_final_tokens, pinch_summarized, prompt_tokens, "
            "cache_read_tokens, cache_write_tokens, session, agent, session_role, tier, "
            "route_reason, measured_tokens "
            "FROM routing_routedecision ORDER BY id"
        ).fetchall()
    return [dict(row) for row in rows]


def check(kind: str, binary: Path, quiet: bool = True, case=CASES["alias"]) -> bool:
    with tempfile.TemporaryDirectory(prefix=f"claude-code-{kind}-") as name:
        tmp = Path(name)
        task = prepare_task(tmp, kind)
        repo, home, upstream, router = task
        trace = tmp / "connect.trace" if shutil.which("strace") else None
        with serving(task):
            done, seconds = run_claude(binary, repo, home, router, trace, quiet, case)
            # The last answer's row is written behind it (routing/recording/writer.py).
            wait_until_recorded(Path(router.env["ROUTER_DATA_DIR"]))
            task_rows = len(decisions(tmp / "router.sqlite3"))
            task_requests = len(upstream.received)
            if case.compact:
                compacted = run_claude(
                    binary, repo, home, router, None, quiet, case, "/compact", "-c"
                )
                follow_up = run_claude(
                    binary, repo, home, router, None, quiet, case, FOLLOW_UP, "-c"
                )
        rows = decisions(tmp / "router.sqlite3")
        ok = report(
            kind, repo, done, seconds, rows[:task_rows], upstream, task_requests, trace, quiet, case
        )
        if not case.compact:
            return ok
        after = upstream.bodies()[task_requests:]
        return report_compaction(compacted, follow_up, rows[task_rows:], after) and ok


def _result(done) -> dict:
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {}


def report_compaction(compacted, follow_up, rows, bodies) -> bool:
    """/compact answered from the upstream's summary, and the next task went on from it."""
    (done, seconds), (next_done, next_seconds) = compacted, follow_up
    problems = []
    if done.returncode != 0 or _result(done).get("is_error"):
        problems.append(f"/compact failed (exit {done.returncode}): {done.stdout[-400:]}")
    if (_result(next_done).get("result") or "").strip() != FOLLOW_UP_ANSWER:
        problems.append(f"follow-up answer: {_result(next_done).get('result')!r}")
    if not any(SUMMARY_MARKER in json.dumps(body) for body in bodies):
        problems.append("no request after /compact carried the summary")
    failed = [r for r in rows if r["status_code"] != 200]
    if failed:
        problems.append(f"decisions not 200 after /compact: {failed}")
    pinch = ", ".join(f"{r['pinch_original_tokens']} -> {r['pinch_final_tokens']}" for r in rows)
    sessions = sorted({r["session"] for r in rows})
    print(
        f"/compact: {seconds:.1f}s, follow-up {next_seconds:.1f}s, {len(rows)} decisions "
        f"(pinch {pinch}), sessions {sessions}"
    )
    for problem in problems:
        print(f"FAIL: {problem}")
    return not problems


def routing_problems(main: list[dict], tier: str) -> list[str]:
    """What is wrong with the main loop's routing, for a task that must reach ``tier``."""
    if not main:
        return ["no main-loop decision to check the routing of"]
    problems = []
    if {r["tier"] for r in main} != {tier}:
        problems.append(f"tiers {[r['tier'] for r in main]}; the task belongs to {tier!r}")
    if len({r["chosen_model"] for r in main}) != 1:
        problems.append(f"the tool loop changed model: {[r['chosen_model'] for r in main]}")
    reasons = [r["route_reason"] for r in main]
    if reasons != ["start"] + ["held"] * (len(main) - 1):
        problems.append(f"route reasons {reasons}: expected a start, then held")
    if (main[0]["measured_tokens"] or 0) < 20_000:
        problems.append(f"only {main[0]['measured_tokens']} tokens: not Claude Code's harness")
    return problems


def report(kind, repo, done, seconds, rows, upstream, requests, trace, quiet, case) -> bool:
    """The task's run: ``rows`` its decisions, the first ``requests`` the upstream got its."""
    client_model = case.client_model
    problems = []
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = {}
        problems.append(f"claude printed no JSON (exit {done.returncode}): {done.stdout[-800:]}")
    if (result.get("result") or "").strip() != FINAL_ANSWER:
        problems.append(
            f"final answer: {result.get('result')!r} (is_error={result.get('is_error')})"
        )
    if not (repo / "ANSWER.md").exists():
        problems.append("ANSWER.md was not written: the Write tool did not run")
    main = [r for r in rows if r["requested_model"] == client_model]
    tool_steps = len(steps(str(repo)))
    if len(main) < tool_steps + 1:
        problems.append(f"{len(main)} main-model decisions; the task needs {tool_steps + 1}")
    failed = [r for r in rows if r["status_code"] != 200]
    if failed:
        problems.append(f"decisions not 200: {failed}")
    pruned = [r for r in main if (r["pinch_final_tokens"] or 0) < (r["pinch_original_tokens"] or 0)]
    if not pruned:
        problems.append("pinch pruned none of Claude Code's requests")
    # What the tools gave back, as the upstream saw it in some request of the task (pinch
    # compresses the README's result on the later ones).
    seen = json.dumps(upstream.bodies()[:requests])
    for tool, evidence in (("Read", "Line 799: the demo"), ("Bash", "CHECK-OK")):
        if evidence not in seen:
            problems.append(f"the {tool} tool's result ({evidence!r}) never reached the upstream")
    if case.tier is not None:
        problems += routing_problems(main, case.tier)
    local, outside = connects(trace) if trace is not None else (0, [])
    if trace is not None and not local:
        problems.append("strace saw no connect at all: the trace is not working")
    if outside and quiet:
        problems.append(f"connects off the machine: {outside[:5]}")
    if getattr(upstream, "protocol_errors", None):
        problems.append(f"upstream protocol errors: {upstream.protocol_errors[:3]}")
    sessions = {(r["session"], r["agent"]) for r in rows}
    if len(sessions) != 1 or next(iter(sessions))[1] != "claude-code":
        problems.append(f"the run is not one Claude Code session: {sessions}")

    saved = sum((r["pinch_original_tokens"] or 0) - (r["pinch_final_tokens"] or 0) for r in main)
    print(f"\n== Claude Code -> router -> {kind} upstream: {seconds:.1f}s, exit {done.returncode}")
    print(f"final answer: {result.get('result')!r}")
    print(f"decisions: {len(rows)} ({len(main)} main model, {len(rows) - len(main)} background)")
    print(f"sessions: {sorted(sessions)}")
    for r in rows:
        print(
            f"  {r['requested_model']:<20} -> {r['chosen_model']:<12} {r['path']:<11} "
            f"{r['session_role']:<10} tier {r['tier'] or '-'} ({r['route_reason'] or 'pinned'}) "
            f"status {r['status_code']} stream {bool(r['stream'])} pinch "
            f"{r['pinch_original_tokens']} -> {r['pinch_final_tokens']} "
            f"({r['pinch_summarized'] or 0} results compressed), billed prompt "
            f"{r['prompt_tokens']} (cache read {r['cache_read_tokens']}, "
            f"written {r['cache_write_tokens']})"
        )
    print(f"pinch saved {saved} estimated tokens over {len(pruned)} pruned requests")
    if trace is None:
        print("connects: not traced (no strace)")
    else:
        print(f"connects: {local} to loopback, {len(outside)} elsewhere {outside[:8]}")
    for problem in problems:
        print(f"FAIL: {problem}")
    if problems and done.stderr:
        print(f"claude stderr:\n{done.stderr[-2000:]}")
    return not problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", choices=["anthropic", "openai", "both"], default="both")
    parser.add_argument("--model", help="the model name Claude Code asks for (--model NAME)")
    parser.add_argument(
        "--matrix",
        action="store_true",
        help="every case: a Claude name through aliases, auto, a router model id (env)",
    )
    parser.add_argument(
        "--allow-traffic",
        action="store_true",
        help="run without the variables that silence Claude Code, and show what it tries to reach",
    )
    parser.add_argument(
        "--routing",
        action="store_true",
        help=f"session routing: {ROUTED_MODEL} through auto, a trivial and a hard task",
    )
    args = parser.parse_args()
    binary = claude_binary()
    print(f"Claude Code {claude_version(binary)} at {binary}")
    kinds = ["anthropic", "openai"] if args.upstream == "both" else [args.upstream]
    if args.matrix:
        cases = list(CASES.values())
    elif args.routing:
        cases = list(ROUTING_CASES.values())
    elif args.model:
        cases = [Case(["--model", args.model], {}, args.model)]
    else:
        cases = [CASES["alias"]]
    results = [
        check(kind, binary, quiet=not args.allow_traffic, case=case)
        for case in cases
        for kind in kinds
    ]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
