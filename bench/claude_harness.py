"""Claude Code against the router, set up once for every check that runs it.

bench/check_claude_code.py (the tool loop, compaction, session routing) and
bench/check_final_errors.py (errors no retry mends, a key over its limits) run
the same real client the same way: installed from npm into a cache directory
(never the repo), in a scratch git repository with a fresh HOME, against the router
under gunicorn on loopback (its own temp SQLite and config) in front of a
scripted upstream (tests/support/agent_upstream.py), with the variables that
keep it from calling home. This is that set-up; each check keeps what it
asserts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import yaml

from bench.bench_proxy import Router, prepare_router, serve_router, stop
from tests.support.agent_upstream import AgentAnthropicServer, AgentOpenAIServer

PACKAGE = "@anthropic-ai/claude-code"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "router-bench"
# Aliased to agent-model; --model claude-opus-4-6 goes to auto through the "claude-*" glob.
CLIENT_MODEL = "claude-sonnet-4-6"
TASK = (
    "Read README.md and check.py, run check.py with python3, then write a one-line "
    "summary to ANSWER.md."
)
CLAUDE_TIMEOUT_SECONDS = 240


class Case(NamedTuple):
    """How Claude Code is run, and what its run must show."""

    arguments: list[str]
    env: dict[str, str]
    client_model: str  # the model name Claude Code then asks for
    task: str = TASK
    tier: str | None = None  # the tier every main-loop decision must reach (--routing)
    compact: bool = True  # then /compact and a follow-up in the same conversation


CASES = {
    "alias": Case(["--model", CLIENT_MODEL], {}, CLIENT_MODEL),
    "auto": Case(["--model", "auto"], {}, "auto"),
    "model-id": Case(
        [],
        {"ANTHROPIC_MODEL": "agent-model", "ANTHROPIC_SMALL_FAST_MODEL": "agent-small"},
        "agent-model",
    ),
}


def claude_binary() -> Path:
    given = os.environ.get("CLAUDE_CODE_BIN")
    if given:
        return Path(given)
    prefix = CACHE / "claude-code"
    binary = prefix / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        if not shutil.which("npm"):
            sys.exit("npm is needed to install Claude Code (or set CLAUDE_CODE_BIN)")
        prefix.mkdir(parents=True, exist_ok=True)
        print(f"installing {PACKAGE} into {prefix}", flush=True)
        subprocess.run(
            ["npm", "install", "--no-fund", "--no-audit", "--prefix", str(prefix), PACKAGE],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return binary


def scratch_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    # A long README: its Read result is what pinch compresses on later turns.
    (repo / "README.md").write_text(
        "# Demo\n\n" + "".join(f"Line {i}: the demo project explains itself.\n" for i in range(800))
    )
    (repo / "check.py").write_text('print("CHECK-OK")\n')
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def config_for(kind: str, url: str) -> dict:
    provider = {"kind": kind, "base_url": url if kind == "anthropic" else f"{url}/v1"}
    model = {
        "id": "agent-model",
        "provider": "agent",
        "tier": "medium",
        "context_window": 200000,
        "prompt_price": 3.0,
        "cached_prompt_price": 0.3,
        "completion_price": 15.0,
        "capabilities": ["tools", "vision"],
    }
    small = {**model, "id": "agent-small", "tier": "easy", "prompt_price": 1.0}
    large = {**model, "id": "agent-large", "tier": "hard", "prompt_price": 15.0}
    return {
        "providers": {"agent": provider},
        "models": [small, model, large],
        "aliases": {
            CLIENT_MODEL: "agent-model",
            "claude-haiku-*": "agent-small",
            "claude-*": "auto",
        },
        # A small budget and window so that Claude Code's own conversation is
        # pruned within the few turns of the task.
        "pinch": {
            # Every run's conversation pruned: none of them in pinch's holdout arm.
            "holdout_share": 0.0,
            "budget_tokens": 2000,
            "keep_last_turns": 1,
            # Two: the task reads README.md and check.py at once, and a step that pays
            # on its own request is always taken, so with one the README would be
            # compressed the first time it is sent and the upstream never see it whole.
            "keep_last_tool_results": 2,
            "window_step": None,
        },
    }


# What keeps Claude Code from calling home; --allow-traffic leaves them out to see what it tries.
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}


def run_claude(
    binary: Path, repo: Path, home: Path, router, trace, quiet=True, case=CASES["alias"], *more
):
    """``claude -p`` the case's task (or ``*more``: another prompt and flags) in ``repo``."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": router.url,
        "ANTHROPIC_API_KEY": router.key,
        **case.env,
        **(QUIET if quiet else {}),
    }
    command = [
        str(binary),
        "-p",
        *(more or (case.task,)),
        "--output-format",
        "json",
        *case.arguments,
        "--allowedTools",
        "Read,Bash,Write",
    ]
    if trace is not None:
        command = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *command]
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLAUDE_TIMEOUT_SECONDS,
        stdin=subprocess.DEVNULL,
    )
    return done, time.monotonic() - started


class Task(NamedTuple):
    """One run's scratch repository, Claude Code's HOME, the scripted upstream and the router."""

    repo: Path
    home: Path
    upstream: AgentAnthropicServer | AgentOpenAIServer
    router: Router


def prepare_task(tmp: Path, kind: str) -> Task:
    """The task's files, the upstream of ``kind`` started, the router configured for it."""
    repo = scratch_repo(tmp)
    home = tmp / "home"
    home.mkdir()
    server_class = AgentAnthropicServer if kind == "anthropic" else AgentOpenAIServer
    upstream = server_class(str(repo)).start()
    router = prepare_router(tmp, "http://127.0.0.1:9/v1")
    Path(router.env["ROUTER_CONFIG"]).write_text(
        yaml.safe_dump(config_for(kind, upstream.base_url.removesuffix("/v1")))
    )
    return Task(repo, home, upstream, router)


@contextlib.contextmanager
def serving(task: Task):
    """The router serving for the block; after it, the router and the upstream stopped."""
    try:
        serve_router(task.router)
        yield
    finally:
        if task.router.process is not None:
            stop(task.router.process)
        task.upstream.stop()


def claude_version(binary: Path) -> str:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    return done.stdout.strip()
