"""Task success with pinch on and off: the coding tasks through the router, against any model.

What pinch costs an agent shows, in the end, in whether the agent still
solves its task. This runs the tasks (bench/quality/tasks.py) with our
agent loop (bench/quality/agent.py) through the router, served as a user
serves it (gunicorn, the shipped defaults, its own temp SQLite and config),
in front of any OpenAI-compatible server, once with pinch on and once with
it off, and reports per arm: tasks solved (with a Wilson interval), turns
per task and cost per task (mean with a t interval), how many
requests pinch pruned, and pinch on against pinch off with the interval of
each difference, saying when it is not significant.

    .venv/bin/python bench/quality/run.py --base-url http://127.0.0.1:8000/v1 \\
        --model Qwen/Qwen2.5-Coder-7B-Instruct --repeats 3

Cost prices the tokens the server reported (cache reads included) at
``--prompt-price`` / ``--cached-price`` / ``--completion-price`` USD per 1M
(defaults: a Claude Sonnet-like model), since a local model costs nothing.
docs/quality.md says what a real run needs. ``--json OUT`` writes every
task run and the summary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402
import yaml  # noqa: E402

from bench.bench_proxy import prepare_router, serve_router, stop  # noqa: E402
from bench.machine import describe_machine  # noqa: E402
from bench.quality.agent import run_agent  # noqa: E402
from bench.quality.tasks import TASKS, TEST_COMMAND  # noqa: E402
from metrics.intervals import (  # noqa: E402
    mean_difference,
    mean_interval,
    rate_difference,
    wilson,
)

ARMS = (("pinch on", True), ("pinch off", False))
MODEL_ID = "agent-model"


def router_config(args) -> dict:
    """The shipped config, one provider (the server under test) and one model on it."""
    data = yaml.safe_load((ROOT / "routing" / "config" / "default_config.yaml").read_text())
    data["providers"] = {
        "server": {
            "kind": "openai",
            "base_url": args.base_url,
            "api_key_env": args.api_key_env,
            "timeout_seconds": args.timeout,
        }
    }
    data["models"] = [
        {
            "id": MODEL_ID,
            "provider": "server",
            "upstream_model": args.model,
            "tier": "medium",
            "context_window": args.context_window,
            "prompt_price": args.prompt_price,
            "cached_prompt_price": args.cached_price,
            "completion_price": args.completion_price,
            "capabilities": ["tools"],
        }
    ]
    data["pinch"]["holdout_share"] = 0.0  # each arm is the whole run
    return data


def cost_usd(run, args) -> float:
    uncached = run.prompt_tokens - run.cached_tokens
    return (
        uncached * args.prompt_price
        + run.cached_tokens * args.cached_price
        + run.completion_tokens * args.completion_price
    ) / 1_000_000


def solved(workspace: Path) -> bool:
    done = subprocess.run(
        [sys.executable, *TEST_COMMAND], cwd=workspace, capture_output=True, timeout=120
    )
    return done.returncode == 0


def run_arm(args, pinch: bool, tasks) -> tuple[list[dict], dict]:
    """Every task of the arm through one router; (the task runs, pinch_summary --json)."""
    with tempfile.TemporaryDirectory(prefix="quality-") as name:
        tmp = Path(name)
        router = prepare_router(tmp, args.base_url)
        config = router_config(args)
        config["pinch"]["enabled"] = pinch
        Path(router.env["ROUTER_CONFIG"]).write_text(yaml.safe_dump(config))
        runs = []
        try:
            serve_router(router)
            client = openai.OpenAI(
                base_url=router.url + "/v1", api_key=router.key, max_retries=1, timeout=args.timeout
            )
            for repeat in range(args.repeats):
                for task in tasks:
                    workspace = tmp / f"{task.name}-{repeat}"
                    task.set_up(workspace)
                    # The run's name opens the prompt: each run is a conversation of its own.
                    prompt = f"[run {repeat + 1}] {task.prompt()}"
                    run = run_agent(client, MODEL_ID, prompt, workspace, args.max_turns)
                    record = {"task": task.name, "repeat": repeat, **asdict(run)}
                    record["solved"] = solved(workspace)
                    record["cost_usd"] = cost_usd(run, args)
                    runs.append(record)
                    if not args.quiet:
                        print(
                            f"  {'on ' if pinch else 'off'} {task.name:<40} "
                            f"{'solved' if record['solved'] else 'failed'} in {run.turns} turns"
                            + (f" ({run.error})" if run.error else ""),
                            flush=True,
                        )
            summary = subprocess.run(
                [sys.executable, str(ROOT / "manage.py"), "pinch_summary", "--json"],
                env=router.env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        finally:
            if router.process is not None:
                stop(router.process)
    return runs, json.loads(summary)


def arm_figures(runs: list[dict], summary) -> dict:
    return {
        "tasks": len(runs),
        "solve_rate": wilson(sum(r["solved"] for r in runs), len(runs)).as_dict(4),
        "turns_per_task": mean_interval([r["turns"] for r in runs]).as_dict(2),
        "cost_per_task_usd": mean_interval([r["cost_usd"] for r in runs]).as_dict(6),
        "requests_pruned": (summary or {}).get("pruned_calls_30d", 0),
        "requests": sum(r["turns"] for r in runs),
        "refetches": ((summary or {}).get("quality") or {}).get("refetches", 0),
    }


def compare(on: list[dict], off: list[dict]) -> dict:
    return {
        "solve_rate": rate_difference(
            wilson(sum(r["solved"] for r in on), len(on)),
            wilson(sum(r["solved"] for r in off), len(off)),
        ).as_dict(4),
        "turns_per_task": mean_difference(
            [r["turns"] for r in on], [r["turns"] for r in off]
        ).as_dict(2),
        "cost_per_task_usd": mean_difference(
            [r["cost_usd"] for r in on], [r["cost_usd"] for r in off]
        ).as_dict(6),
    }


def _shown(estimate: dict, fmt) -> str:
    if estimate.get("value") is None:
        return "-"
    text = fmt(estimate["value"])
    if estimate.get("low") is not None:
        text += f" [{fmt(estimate['low'])}, {fmt(estimate['high'])}]"
    return text


def report(results: dict) -> str:
    lines = []
    for arm, figures in results["arms"].items():
        turns = _shown(figures["turns_per_task"], lambda v: f"{v:.1f}")
        lines.append(
            f"{arm:<9}  solved {_shown(figures['solve_rate'], lambda v: f'{v:.0%}')} "
            f"of {figures['tasks']}  turns {turns}"
            f"  cost/task {_shown(figures['cost_per_task_usd'], lambda v: f'${v:.4f}')}"
            f"  pruned {figures['requests_pruned']}/{figures['requests']} requests"
            f"  re-fetches {figures['refetches']}"
        )
    versus = results["pinch_on_vs_off"]
    for name, fmt in (
        ("solve_rate", lambda v: f"{v:+.0%}"),
        ("turns_per_task", lambda v: f"{v:+.1f}"),
        ("cost_per_task_usd", lambda v: f"{v:+.4f}"),
    ):
        d = versus[name]
        verdict = "significant" if d["significant"] else "not significant"
        lines.append(f"on - off {name:<18} {_shown(d, fmt)}  {verdict}")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server (…/v1)")
    parser.add_argument("--model", required=True, help="the model name the server knows")
    parser.add_argument("--api-key-env", help="NAME of the env variable with the server's key")
    parser.add_argument("--context-window", type=int, default=131072)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each task per arm")
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per request")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument("--prompt-price", type=float, default=3.0)
    parser.add_argument("--cached-price", type=float, default=0.3)
    parser.add_argument("--completion-price", type=float, default=15.0)
    parser.add_argument("--json", dest="json_out", help="write the runs and figures here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    tasks = TASKS
    if args.tasks:
        wanted = set(args.tasks.split(","))
        tasks = tuple(t for t in TASKS if t.name in wanted)
        unknown = wanted - {t.name for t in tasks}
        if unknown:
            parser.error(f"unknown task(s): {', '.join(sorted(unknown))}")
    if not args.quiet:
        print(describe_machine())
    runs, figures = {}, {}
    for arm, pinch in ARMS:
        runs[arm], summary = run_arm(args, pinch, tasks)
        figures[arm] = arm_figures(runs[arm], summary)
    results = {
        "model": args.model,
        "arms": figures,
        "pinch_on_vs_off": compare(runs["pinch on"], runs["pinch off"]),
        "runs": runs,
    }
    print(report(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
