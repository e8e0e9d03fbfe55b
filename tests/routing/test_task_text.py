"""What the user typed, read out of the payloads real agents send (routing.task_text)."""

import pytest

from routing.protocols.messages.inbound import from_messages_request
from routing.task_text import task_start, task_text, typed_chars, user_turns
from tests.support.claude_code_payload import claude_code_body, tool_round, user_turn


def chat_of(body):
    return from_messages_request(body)[0]["messages"]


CLAUDE_CODE_FIRST = chat_of(claude_code_body("say hi"))
CLAUDE_CODE_LOOP = chat_of(tool_round(tool_round(claude_code_body("fix the test"), 1), 2))
CLAUDE_CODE_SECOND_TASK = chat_of(user_turn(tool_round(claude_code_body("fix it"), 1), "now lint"))
CODEX = [
    {"role": "developer", "content": "<permissions instructions>on</permissions instructions>"},
    {
        "role": "user",
        "content": "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nAlways design for "
        "security; debug with care.\n</INSTRUCTIONS>",
    },
    {"role": "user", "content": "<environment_context><cwd>/repo</cwd></environment_context>"},
    {"role": "user", "content": "rename the helper"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "architecture security refactor debug"},
]
OPENCODE = [
    {"role": "system", "content": "You are opencode. Design, architecture, security."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "add a --verbose flag"},
            {"type": "text", "text": "<system-reminder>Plan mode is off.</system-reminder>"},
        ],
    },
]
IMAGE_ONLY = [
    {"role": "user", "content": "look at this"},
    {"role": "assistant", "content": "ok"},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]},
]


@pytest.mark.parametrize(
    "messages, typed, start, turns",
    [
        (CLAUDE_CODE_FIRST, "say hi", 1, 1),
        # Tool results (and the reminders attached to them) are not the user speaking.
        (CLAUDE_CODE_LOOP, "fix the test", 1, 1),
        (CLAUDE_CODE_SECOND_TASK, "now lint", 6, 2),
        (CODEX, "rename the helper", 3, 1),
        (OPENCODE, "add a --verbose flag", 1, 1),
        (IMAGE_ONLY, "", 2, 2),
        ([{"role": "system", "content": "only a system prompt"}], "", None, 0),
    ],
)
def test_the_task_is_what_the_user_typed_without_the_agents_harness(messages, typed, start, turns):
    assert task_text(messages) == typed
    assert task_start(messages) == start
    assert user_turns(messages) == turns


def test_the_harness_text_is_not_counted_as_typed():
    # Claude Code's first message is ~6.7 KB of reminders around a 6-character task.
    assert typed_chars(CLAUDE_CODE_FIRST) == len("say hi")
    assert typed_chars(CODEX) == len("rename the helper")


def test_the_llm_classifier_is_sent_only_what_the_user_typed(upstream, monkeypatch):
    from routing.classifier import classify
    from routing.config import validate_config
    from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, base_config

    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    data = base_config(upstream.base_url)
    judge = {"id": "judge", "provider": "up", "upstream_model": "says-hard", "tier": "easy"}
    data["models"].append({**judge, "context_window": 4096})
    data["classifier"] = {"backend": "llm", "llm": {"model": "judge", "timeout_seconds": 2}}
    result = classify(CLAUDE_CODE_FIRST, None, validate_config(data))
    assert result.outcome == "llm"
    assert upstream.bodies()[0]["messages"][1]["content"] == "say hi"
