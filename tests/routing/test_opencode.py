"""The real client: opencode (npm opencode-ai) in ``opencode run`` mode, through the router.

opencode speaks chat completions through its bundled OpenAI-compatible
provider. In a scratch git repo its project config (``opencode.json``, as the
README writes it) names one provider whose ``baseURL`` is the router and whose
``apiKey`` is a router key: nothing else. The router sends its requests to the test upstream, where
a script answers with tool calls (``bash``, ``read``, ``write``): opencode runs
each in the scratch repo, sends the result back, and prints the final answer.
Its small model (a title for the session) goes to ``echo-small``. Updates,
model-list fetches, LSP downloads, default plugins and sharing are off; the
proxy variables point at a loopback recorder that refuses everything, so
nothing leaves the machine (opencode 1.18.33 still tries registry.npmjs.org,
refused, and carries on).

With Claude names, opencode's own Anthropic provider (the README's second
config) speaks the Messages API to the router; the same loop runs through it.

opencode is installed by scripts/install-opencode (CI runs it); ``OPENCODE_BIN``
names the binary.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from routing.models import RouteDecision
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config
from tests.support.egress import EgressRecorder
from tests.support.real_clients import git_repo, installed, readme_block

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULT_BIN = Path.home() / ".cache/router-tests/opencode-1.18.33/node_modules/.bin/opencode"
TASK = "Look at the repo, read notes.txt and write what it says to ANSWER.md."
FINAL = "Done: notes.txt says the build is green, and ANSWER.md says so too."


def script(repo: Path) -> list:
    return [
        {"call": "bash", "arguments": {"command": "ls", "description": "List the files"}},
        {"call": "read", "arguments": {"filePath": str(repo / "notes.txt")}},
        {
            "call": "write",
            "arguments": {"filePath": str(repo / "ANSWER.md"), "content": "build: green\n"},
        },
        {"text": FINAL},
    ]


@pytest.fixture
def opencode_bin():
    return installed("OPENCODE_BIN", DEFAULT_BIN, "scripts/install-opencode")


@pytest.fixture
def scratch_repo(tmp_path):
    files = {"notes.txt": "build: green\ntests: 42 passed\n", "main.py": "print('hello')\n"}
    return git_repo(tmp_path / "repo", files)


def opencode_config(router_url: str) -> dict:
    """The README's config: one provider at the router, its key from ROUTER_API_KEY."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "router": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "LLM router",
                "options": {"baseURL": f"{router_url}/v1", "apiKey": "{env:ROUTER_API_KEY}"},
                "models": {"script-agent": {}, "echo-small": {}},
            }
        },
        "model": "router/script-agent",
        "small_model": "router/echo-small",
    }


def run_opencode(opencode_bin, repo: Path, home: Path, api_key: str):
    """``opencode run`` with the task, nothing leaving the machine; (done, egress targets)."""
    with EgressRecorder() as egress:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "ROUTER_API_KEY": api_key,
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "HTTP_PROXY": egress.url,
            "HTTPS_PROXY": egress.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "NO_COLOR": "1",
        }
        done = subprocess.run(
            [opencode_bin, "run", TASK],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        return done, list(egress.targets)


def _tool_loop(opencode_bin, scratch_repo, tmp_path, upstream, api_key, config: dict):
    """Run opencode with ``config`` through the scripted four-turn tool loop and check that
    it finished it: each tool's result sent back, the answer file written. Returns what
    opencode tried to reach beyond the router."""
    upstream.script = script(scratch_repo)
    (scratch_repo / "opencode.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    home.mkdir()

    done, tried = run_opencode(opencode_bin, scratch_repo, home, api_key)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\negress: {tried}"
    assert done.returncode == 0, report
    assert FINAL in done.stdout, report
    assert (scratch_repo / "ANSWER.md").read_text() == "build: green\n", report
    main = [json.loads(r["body"]) for r in upstream.received]
    main = [b for b in main if b["model"] == "script-agent"]
    assert len(main) == 4, report
    results = [m["content"] for m in main[-1]["messages"] if m["role"] == "tool"]
    assert "notes.txt" in json.dumps(results[0]) and "build: green" in json.dumps(results[1])
    return tried


def test_opencode_runs_several_tools_through_the_router_as_one_session(
    opencode_bin, scratch_repo, tmp_path, live_server, upstream, write_config, monkeypatch, api_key
):
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    write_config(responses_config("http://127.0.0.1:9/unused", upstream.base_url))
    tried = _tool_loop(
        opencode_bin, scratch_repo, tmp_path, upstream, api_key, opencode_config(live_server.url)
    )
    rows = list(RouteDecision.objects.order_by("id"))
    assert all(r.status_code == 200 and r.stream for r in rows), rows
    assert [r.requested_model for r in rows].count("script-agent") == 4
    # One run, one session: opencode's session id, on every request (the title's too).
    (session,) = {(r.session, r.agent) for r in rows}
    assert session[0].startswith("ses_") and session[1] == "opencode", session
    print(f"opencode tried to reach, beyond the router: {tried or 'nothing'}")


def anthropic_provider_config(router_url: str) -> str:
    """The README's config for opencode's own Anthropic provider, pointed at the router."""
    block = readme_block("Use it with opencode", "json", nth=1)
    return block.replace("http://127.0.0.1:8000", router_url)


def test_opencode_with_claude_names_through_its_anthropic_provider_runs_the_tool_loop(
    opencode_bin, scratch_repo, tmp_path, live_server, upstream, write_config, monkeypatch, api_key
):
    # Claude names pinned as the README shows: the main model to the script, the rest
    # (opencode's small model, claude-haiku-4-5..., for the session's title) elsewhere.
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    config = responses_config("http://127.0.0.1:9/unused", upstream.base_url)
    config["aliases"] = {"claude-sonnet-4-5": "script-agent", "claude-*": "echo-small"}
    write_config(config)
    # Four turns of the loop over /v1/messages, each tool's result sent back.
    _tool_loop(
        opencode_bin,
        scratch_repo,
        tmp_path,
        upstream,
        api_key,
        json.loads(anthropic_provider_config(live_server.url)),
    )
    rows = list(RouteDecision.objects.order_by("id"))
    assert all(r.status_code == 200 for r in rows), rows
    asked = [(r.requested_model, r.chosen_model) for r in rows]
    assert asked.count(("claude-sonnet-4-5", "script-agent")) == 4, asked
    assert all(r.session == rows[0].session for r in rows), rows
