"""The real Claude Code in a tool loop whose README pinch trims: the model recalls a line of it.

Claude Code runs its task (bench/claude_harness.py: the real client from npm, the router
under gunicorn, nothing leaving loopback) against a scripted model that, seeing the
README trimmed, calls the router's tool for the vault line and answers with it
(tests/support/recall_agent.py), on an Anthropic upstream (native Messages) and on an
OpenAI-compatible one (translated). Claude Code prints that answer and exits cleanly.
"""

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from bench.bench_proxy import prepare_router
from bench.claude_harness import (
    Task,
    config_for,
    run_claude,
    scratch_repo,
    serving,
)
from routing.recall import TOOL_NAME
from tests.support.claude_code import claude_code_binary
from tests.support.recall_agent import RecallAgentAnthropicServer, RecallAgentOpenAIServer
from tests.support.recall_upstream import VAULT_LINE, chat_seen, messages_seen

SERVERS = {"anthropic": RecallAgentAnthropicServer, "openai": RecallAgentOpenAIServer}


@pytest.fixture(scope="module")
def claude_bin():
    return claude_code_binary()


def _task(tmp: Path, kind: str) -> Task:
    repo = scratch_repo(tmp)
    lines = [f"Line {i}: the demo project explains itself." for i in range(800)]
    lines[400] = VAULT_LINE
    (repo / "README.md").write_text("# Demo\n\n" + "\n".join(lines) + "\n")
    home = tmp / "home"
    home.mkdir()
    upstream = SERVERS[kind](str(repo)).start()
    router = prepare_router(tmp, "http://127.0.0.1:9/v1")
    config = config_for(kind, upstream.base_url.removesuffix("/v1"))
    # The budget prune, so the README is trimmed whatever the payback rule would decide.
    config["pinch"]["payback"] = {"enabled": False}
    Path(router.env["ROUTER_CONFIG"]).write_text(yaml.safe_dump(config))
    return Task(repo, home, upstream, router)


def _recalls(database: Path) -> list:
    with sqlite3.connect(database) as db:
        return db.execute(
            "SELECT recalls, recalled_tokens, status_code FROM routing_routedecision "
            "WHERE recalls > 0 ORDER BY id"
        ).fetchall()


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_claude_code_gets_one_clean_answer_after_the_model_recalls_a_trimmed_result(
    claude_bin, kind, tmp_path
):
    task = _task(tmp_path, kind)
    with serving(task):
        done, _ = run_claude(claude_bin, task.repo, task.home, task.router, None)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    result = json.loads(done.stdout)
    assert VAULT_LINE in result["result"], report
    assert TOOL_NAME not in done.stdout, report
    bodies = [json.loads(r["body"]) for r in task.upstream.received]
    seen = [messages_seen(b) if kind == "anthropic" else chat_seen(b) for b in bodies]
    recalled = [s for s in seen if s.recalled]
    assert recalled, report
    # The README reached the model trimmed; the recall's answer held the line.
    assert not any(VAULT_LINE in text for text in recalled[-1].results), report
    assert any(VAULT_LINE in text for text in recalled[-1].recalled), report
    rows = _recalls(tmp_path / "router.sqlite3")
    assert [(r[0], r[2]) for r in rows] == [(1, 200)], rows
