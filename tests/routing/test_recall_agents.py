"""Real agents in a tool loop whose old result pinch trims: the model recalls it, the agent
never knows. Codex CLI (Responses, on a Responses upstream and on a chat one) and opencode
(chat completions), run as their own end-to-end tests run them (nothing leaves loopback).

The scripted model (``recallscript-*``, tests/support/recall_upstream.py) has the agent
``cat`` a log, then list the directory; the log, now outside the protected window, is
trimmed with a recall note; the model calls ``router_recall`` for the vault line and
answers with it. The agent prints that answer and exits cleanly.
"""

import json

import pytest

from routing.models import RouteDecision
from routing.recall import TOOL_NAME
from tests.routing.test_codex_cli import DEFAULT_BIN as CODEX_DEFAULT_BIN
from tests.routing.test_codex_cli import codex_home, run_codex
from tests.routing.test_opencode import DEFAULT_BIN as OPENCODE_DEFAULT_BIN
from tests.routing.test_opencode import opencode_config, run_opencode
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config
from tests.support.real_clients import git_repo, installed
from tests.support.recall_scenario import model_like, recall_pinch
from tests.support.recall_upstream import VAULT_LINE, chat_seen, log_file, responses_seen

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "Read big.log and tell me the vault code."


@pytest.fixture
def repo(tmp_path):
    return git_repo(tmp_path / "repo", {"big.log": log_file(), "main.py": "print('hi')\n"})


@pytest.fixture
def recalling_upstream(upstream, write_config, monkeypatch):
    """The test upstream behind the router, pinch trimming all but the last tool result."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    data = recall_pinch(responses_config("http://127.0.0.1:9/unused", upstream.base_url))
    data["models"] += [
        model_like(data, "script-agent", "recallscript-agent"),
        model_like(data, "script-native", "recallscript-native"),
    ]
    write_config(data)
    return upstream


def _assert_recalled_once(upstream, rows, report):
    last = json.loads(upstream.received[-1]["body"])
    seen = responses_seen(last) if "input" in last else chat_seen(last)
    # The agent's own result reached the model trimmed; the recall's answer held the line.
    assert not any(VAULT_LINE in text for text in seen.results), report
    assert [VAULT_LINE in text for text in seen.recalled] == [True], report
    recalled = [r for r in rows if r.recalls]
    assert [(r.recalls, r.status_code) for r in recalled] == [(1, 200)], rows
    assert recalled[0].recalled_tokens > 0


# model -> what the router sends it: chat completions (translated) or the Responses API
CODEX_MODELS = {
    "recallscript-agent": "/v1/chat/completions",
    "recallscript-native": "/v1/responses",
}


@pytest.mark.parametrize("model", sorted(CODEX_MODELS))
def test_codex_gets_one_clean_answer_after_the_model_recalls_a_trimmed_result(
    model, repo, tmp_path, live_server, recalling_upstream, api_key
):
    codex_bin = installed("CODEX_BIN", CODEX_DEFAULT_BIN, "scripts/install-codex")
    upstream = recalling_upstream
    upstream.script = [
        {"call": "exec_command", "arguments": {"cmd": "cat big.log"}},
        {"call": "exec_command", "arguments": {"cmd": "ls"}},
        {"text": "unused: the model recalls before it gets here"},
    ]
    home = codex_home(tmp_path, live_server.url, model)

    done, tried = run_codex(codex_bin, repo, home, api_key, TASK)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\negress: {tried}"
    assert done.returncode == 0, report
    assert VAULT_LINE in done.stdout, report
    assert TOOL_NAME not in done.stdout + done.stderr, report
    assert {r["path"] for r in upstream.received} == {CODEX_MODELS[model]}, report
    _assert_recalled_once(upstream, list(RouteDecision.objects.order_by("id")), report)


def test_opencode_gets_one_clean_answer_after_the_model_recalls_a_trimmed_result(
    repo, tmp_path, live_server, recalling_upstream, api_key
):
    opencode_bin = installed("OPENCODE_BIN", OPENCODE_DEFAULT_BIN, "scripts/install-opencode")
    upstream = recalling_upstream
    upstream.script = [
        {"call": "bash", "arguments": {"command": "cat big.log", "description": "Read the log"}},
        {"call": "bash", "arguments": {"command": "ls", "description": "List the files"}},
        {"text": "unused: the model recalls before it gets here"},
    ]
    config = opencode_config(live_server.url)
    config["provider"]["router"]["models"] = {"recallscript-agent": {}, "echo-small": {}}
    config["model"] = "router/recallscript-agent"
    (repo / "opencode.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    home.mkdir()

    done, tried = run_opencode(opencode_bin, repo, home, api_key)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\negress: {tried}"
    assert done.returncode == 0, report
    assert VAULT_LINE in done.stdout, report
    assert TOOL_NAME not in done.stdout + done.stderr, report
    rows = [r for r in RouteDecision.objects.order_by("id") if r.requested_model != "echo-small"]
    _assert_recalled_once(upstream, rows, report)
