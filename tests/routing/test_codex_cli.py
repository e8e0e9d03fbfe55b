"""The real client: Codex CLI (npm @openai/codex) in ``codex exec`` mode, through the router.

Codex speaks only the Responses API. In a scratch git repo it is given a
custom model provider whose ``base_url`` is the router (``wire_api =
"responses"``); the router sends its requests to the test upstream's chat
completions, where a script answers with tool calls: Codex runs each command
in the scratch repo, sends the output back as a ``function_call_output``,
and after the last one prints the upstream's final answer. Telemetry,
feedback and update checks are off; the proxy variables point at a loopback
recorder that refuses everything, so nothing leaves the machine, and the
test knows what Codex tried to reach beyond the router.

Codex is installed by scripts/install-codex (CI runs it); ``CODEX_BIN``
names the binary.
"""

import json
import os
import re
import subprocess
from datetime import datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from routing.models import RouteDecision
from routing.replay.corpus import load_session, load_sessions
from tests.support.compaction import SUMMARY_MARKER, is_compaction
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config
from tests.support.egress import EgressRecorder
from tests.support.real_clients import git_repo, installed, readme_block
from tests.support.responses_upstream import ENCRYPTED

pytestmark = pytest.mark.django_db(transaction=True)

DEFAULT_BIN = Path.home() / ".cache/router-tests/codex-0.171.0/node_modules/.bin/codex"
TASK = "Look at the repo and tell me what notes.txt says."
FINAL = "Three files checked: notes.txt has 3 lines and says the build is green."
SCRIPT = [
    {"call": "exec_command", "arguments": {"cmd": "ls"}},
    {"call": "exec_command", "arguments": {"cmd": "cat notes.txt"}},
    {"call": "exec_command", "arguments": {"cmd": "wc -l notes.txt"}},
    {"text": FINAL},
]


@pytest.fixture
def codex_bin():
    return installed("CODEX_BIN", DEFAULT_BIN, "scripts/install-codex")


@pytest.fixture
def scratch_repo(tmp_path):
    files = {
        "notes.txt": "build: green\ntests: 42 passed\nowner: router team\n",
        "main.py": "print('hello')\n",
        "README.md": "# scratch\n",
    }
    return git_repo(tmp_path / "repo", files)


@pytest.fixture
def scripted(upstream, write_config, monkeypatch):
    """The test upstream behind the router, playing SCRIPT for script-* models."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    write_config(responses_config("http://127.0.0.1:9/unused", upstream.base_url))
    upstream.script = SCRIPT
    return upstream


def readme_config(router_url: str, model: str) -> str:
    """The README's ``config.toml`` for Codex, as written there, pointed at ``router_url``."""
    block = readme_block("Use it with Codex CLI", "toml")
    block = block.replace("http://127.0.0.1:8000/v1", f"{router_url}/v1")
    return block.replace('model = "auto"', f'model = "{model}"', 1)


# What a user writes, after the README's provider table: nothing more, or the header
# line the README used to need (Codex's built-in web_search, marked optional).
PROVIDER_EXTRAS = {
    "readme": "",
    "optional-tools-header": 'http_headers = { "X-Router-Optional-Tools" = "web_search" }\n',
}


def codex_home(tmp_path, router_url: str, model: str, config: str = "readme") -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    # The test's own additions: no update check, analytics or feedback (nothing may
    # leave the machine), no retries (a failure shows at once).
    (home / "config.toml").write_text(
        "check_for_update_on_startup = false\n"
        + readme_config(router_url, model)
        + "request_max_retries = 0\nstream_max_retries = 0\n"
        + PROVIDER_EXTRAS[config]
        + "\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n"
    )
    return home


def run_codex(codex_bin, repo: Path, home: Path, api_key: str, task: str = TASK):
    """Run ``codex exec`` in ``repo``; (the finished process, what it tried to reach)."""
    with EgressRecorder() as egress:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home.parent),
            "CODEX_HOME": str(home),
            "ROUTER_API_KEY": api_key,
            "HTTP_PROXY": egress.url,
            "HTTPS_PROXY": egress.url,
            "ALL_PROXY": egress.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "NO_COLOR": "1",
        }
        done = subprocess.run(
            [codex_bin, "exec", "--sandbox", "danger-full-access", "--skip-git-repo-check", task],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
        return done, list(egress.targets)


def tool_outputs(body) -> list:
    """The command outputs Codex sent back, from a chat or a Responses request."""
    if "messages" in body:
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]


# model -> what the router sends it: chat completions (translated) or the Responses API (native)
MODELS = {"script-agent": "/v1/chat/completions", "script-native": "/v1/responses"}


@pytest.mark.parametrize("config", sorted(PROVIDER_EXTRAS))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_codex_runs_several_commands_through_the_router_and_prints_its_answer(
    model, config, codex_bin, scratch_repo, tmp_path, live_server, scripted, api_key
):
    upstream = scripted
    home = codex_home(tmp_path, live_server.url, model, config)

    done, tried = run_codex(codex_bin, scratch_repo, home, api_key)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\negress: {tried}"
    assert done.returncode == 0, report
    assert FINAL in done.stdout, report

    assert {r["path"] for r in upstream.received} == {MODELS[model]}, report
    bodies = [json.loads(r["body"]) for r in upstream.received]
    assert len(bodies) == 4, report
    # Each command's real output went back to the model as a tool result.
    results = tool_outputs(bodies[-1])
    assert len(results) == 3
    assert "notes.txt" in results[0] and "main.py" in results[0]
    assert "tests: 42 passed" in results[1]
    assert "3 notes.txt" in results[2]
    if model == "script-agent":
        # Codex's tools reached the chat upstream as functions, its web_search left out.
        names = {t["function"]["name"] for t in bodies[0]["tools"]}
        assert "exec_command" in names and "web_search" not in names
        assert all(
            m["name"] == "exec_command" for m in bodies[-1]["messages"] if m["role"] == "tool"
        )
    else:
        # The Responses upstream got Codex's tools as sent, web_search included, and
        # the encrypted reasoning it produced came back to it untouched.
        assert "web_search" in [t["type"] for t in bodies[0]["tools"]]
        if "reasoning.encrypted_content" in (bodies[0].get("include") or ()):
            reasoning = [i for i in bodies[-1]["input"] if i.get("type") == "reasoning"]
            assert reasoning and all(i["encrypted_content"] == ENCRYPTED for i in reasoning)

    rows = list(RouteDecision.objects.order_by("id"))
    assert len(rows) == 4
    assert all(r.status_code == 200 and r.stream and r.chosen_model == model for r in rows)
    # One run, one session: Codex's prompt_cache_key, its session id.
    (session,) = {(r.session, r.agent) for r in rows}
    assert re.fullmatch(r"[0-9a-f-]{36}@\d+", session[0]) and session[1] == "codex", session
    assert [r.user_turn for r in rows] == [True, False, False, False]
    # web_search left out for the chat model, and said so on every row.
    omitted = ["web_search"] if model == "script-agent" else None
    assert all(r.omitted_tools == omitted for r in rows)
    # Only loopback traffic: the recorder refused whatever Codex tried beyond the router.
    print(f"Codex tried to reach, beyond the router: {tried or 'nothing'}")


def test_codex_on_the_auto_model_is_routed(
    codex_bin, scratch_repo, tmp_path, live_server, scripted, api_key
):
    home = codex_home(tmp_path, live_server.url, "auto")

    done, tried = run_codex(codex_bin, scratch_repo, home, api_key)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\negress: {tried}"
    assert done.returncode == 0, report
    # The echo models call the first tool once, then answer naming the result they got.
    assert "Got 1 results: call_1" in done.stdout, report
    rows = list(RouteDecision.objects.order_by("id"))
    assert len(rows) == 2
    assert all(r.path == "routed" and r.requested_model == "auto" for r in rows)
    assert all(r.status_code == 200 and r.chosen_model.startswith("echo-") for r in rows)


def test_the_rollout_codex_wrote_replays_as_the_requests_the_router_sent(
    codex_bin, scratch_repo, tmp_path, live_server, scripted, api_key
):
    home = codex_home(tmp_path, live_server.url, "script-agent")

    done, tried = run_codex(codex_bin, scratch_repo, home, api_key)

    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    (rollout,) = (home / "sessions").rglob("rollout-*.jsonl")  # filed by day
    session = load_session(rollout)
    sent = [json.loads(r["body"])["messages"] for r in scripted.received]
    replayed = list(session.requests())
    # Request by request, what pinch_replay measures is what the router read and sent...
    assert [r[1:] for r in replayed] == [s[1:] for s in sent]
    # ... but for the instructions: the log keeps Codex's base ones, and Codex sent a
    # variant for this model (the same opening, other sections).
    assert {r[0]["role"] for r in replayed + sent} == {"system"}
    opening = "You are a coding agent running in the Codex CLI"
    assert replayed[0][0]["content"].startswith(opening) and sent[0][0]["content"].startswith(
        opening
    )
    assert session.family == "Codex CLI" and session.meta["notes"] == []
    answered = [json.loads(line) for line in rollout.read_text().splitlines()]
    assert len(session.times) == len(sent)  # when each answer came, for the cold gaps
    assert min(session.times.values()) >= _seconds(answered[0]["timestamp"])

    # The command finds it under CODEX_HOME's sessions folder, as a user points it there.
    out = StringIO()
    call_command("pinch_replay", str(home / "sessions"), "--by-family", "--table", stdout=out)
    assert re.search(r"^Codex CLI +4 +0 ", out.getvalue(), re.M), out.getvalue()  # 4 requests


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


CONTINUED = "Continued from the summary: notes.txt says the build is green."
# Past this many tokens (the test upstream reports a script model's body size, 4 chars a
# token: Codex's first request is ~9,700) Codex compacts before its next request.
COMPACT_LIMIT = 9000


@pytest.mark.parametrize("model", sorted(MODELS))
def test_codex_compacts_its_context_through_the_router_and_goes_on_from_the_summary(
    model,
    codex_bin,
    scratch_repo,
    tmp_path,
    live_server,
    scripted,
    api_key,
):
    upstream = scripted
    upstream.after_compaction = [{"text": CONTINUED}]
    home = codex_home(tmp_path, live_server.url, model)
    config = home / "config.toml"
    config.write_text(f"model_auto_compact_token_limit = {COMPACT_LIMIT}\n" + config.read_text())

    done, tried = run_codex(codex_bin, scratch_repo, home, api_key)

    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\negress: {tried}"
    assert done.returncode == 0, report
    assert CONTINUED in done.stdout, report
    bodies = [json.loads(r["body"]) for r in upstream.received]
    conversations = [b.get("messages") or b.get("input") for b in bodies]
    compactions = [i for i, c in enumerate(conversations) if is_compaction(c)]
    assert len(compactions) == 1, report
    # The request after it went on from the summary, the tool rounds before it gone.
    after = conversations[compactions[0] + 1]
    assert SUMMARY_MARKER in json.dumps(after)
    assert not tool_outputs(bodies[compactions[0] + 1])
    rows = list(RouteDecision.objects.order_by("id"))
    assert len(rows) == len(bodies)
    assert all(r.status_code == 200 for r in rows)
    assert len({r.session for r in rows}) == 1
    if model == "script-agent":
        # Its log replays the requests after the compaction as the router sent them, from
        # the history the compaction left (the instructions aside: see the rollout test).
        (rollout,) = (home / "sessions").rglob("rollout-*.jsonl")
        *_, after_compaction = load_sessions([rollout])
        sent = [b["messages"][1:] for b in bodies[compactions[0] + 1 :]]
        assert [r[1:] for r in after_compaction.requests()] == sent
    print(
        "Codex compaction: pinch "
        + ", ".join(f"{r.pinch_original_tokens} -> {r.pinch_final_tokens}" for r in rows)
    )
