"""The task-success harness's plumbing: a scripted model solves a task through the router.

bench/quality/run.py serves the router (gunicorn, the shipped defaults) in
front of an OpenAI-compatible server; here the server is the scripted test
upstream, playing a model that reads the code, runs the tests, fixes the
bug and runs them again. Real HTTP end to end, both arms.
"""

from bench.quality.run import main
from bench.quality.tasks import PROJECT, TASKS

TASK = next(t for t in TASKS if t.name == "three-money-and-stock-bugs")


def script():
    files = sorted(
        str(p.relative_to(PROJECT)) for p in PROJECT.rglob("*.py") if "__pycache__" not in p.parts
    )
    read = [{"call": "read_file", "arguments": {"path": path}} for path in files]
    run_tests = {"call": "run", "arguments": {"command": "python -m unittest discover -s tests"}}
    fixes = [
        {
            "call": "replace_in_file",
            "arguments": {"path": bug.file, "old": bug.broken, "new": bug.correct},
        }
        for bug in TASK.bugs
    ]
    # An agent that reads its way around for a while (long enough for pinch's steps to
    # pay at the defaults), then fixes the three bugs and checks.
    return [
        {"call": "list_files", "arguments": {}},
        *[step for _ in range(4) for step in (*read, run_tests)],
        *fixes,
        run_tests,
        {"text": "Fixed the three bugs."},
    ]


def test_the_harness_runs_a_task_with_pinch_on_and_off_and_reports_both_arms(upstream, tmp_path):
    upstream.script = script()
    steps = len(upstream.script)

    results = main(
        [
            "--base-url",
            upstream.base_url,
            "--model",
            "script-coder",
            "--tasks",
            TASK.name,
            "--max-turns",
            str(steps + 2),
            "--quiet",
            "--json",
            str(tmp_path / "quality.json"),
        ]
    )

    on, off = results["arms"]["pinch on"], results["arms"]["pinch off"]
    for arm in (on, off):
        assert arm["tasks"] == 1
        assert arm["solve_rate"]["value"] == 1.0
        assert arm["turns_per_task"]["value"] == steps
        assert arm["cost_per_task_usd"]["value"] > 0
        assert arm["requests"] == steps
    # The task is long enough that pinch fires at the shipped defaults.
    assert on["requests_pruned"] > 0
    assert off["requests_pruned"] == 0
    assert results["pinch_on_vs_off"]["solve_rate"]["significant"] is False
    assert (tmp_path / "quality.json").exists()
