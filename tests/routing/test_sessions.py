"""Which agent session, and which of its conversations, a request belongs to (routing.sessions)."""

import json
from dataclasses import replace

import pytest

from routing.protocols.chat.request import parse_chat_request
from routing.sessions import session_tag

CLAUDE_CODE = {"HTTP_USER_AGENT": "claude-cli/2.1.197 (external, sdk-cli)"}
SESSION = "d5558455-ea7f-4cd3-a2e4-e3dc8b9f9821"
AGENT_TOOL = {"type": "function", "function": {"name": "Agent", "parameters": {}}}
READ_TOOL = {"type": "function", "function": {"name": "Read", "parameters": {}}}
ASKED = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "fix it"}]
TOOL_ROUND = [
    *ASKED,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "file"},
    {"role": "user", "content": "<system-reminder>...</system-reminder>"},
]


class Source:
    def __init__(self, body):
        self.body = body


def request(messages=ASKED, tools=(AGENT_TOOL, READ_TOOL), source=None, **body):
    chat = parse_chat_request(
        {"model": "auto", "messages": messages, **({"tools": list(tools)} if tools else {}), **body}
    )
    if source is not None:
        chat = replace(chat, source=Source(source))
    return chat


@pytest.mark.parametrize(
    "meta, source, session, agent",
    [
        ({**CLAUDE_CODE, "HTTP_X_CLAUDE_CODE_SESSION_ID": SESSION}, {}, SESSION, "claude-code"),
        (
            CLAUDE_CODE,
            {"metadata": {"user_id": json.dumps({"device_id": "d", "session_id": SESSION})}},
            SESSION,
            "claude-code",
        ),
        (
            CLAUDE_CODE,
            {"metadata": {"user_id": f"user_ab_account__session_{SESSION}"}},
            SESSION,
            "claude-code",
        ),
        (
            {"HTTP_USER_AGENT": "opencode/1.18.33 ai-sdk", "HTTP_X_SESSION_ID": "ses_1"},
            None,
            "ses_1",
            "opencode",
        ),
        (
            {"HTTP_USER_AGENT": "codex_exec/0.171.0"},
            {"prompt_cache_key": "019a-key"},
            "019a-key",
            "codex",
        ),
    ],
)
def test_the_session_is_the_one_the_agent_names(meta, source, session, agent):
    tag = session_tag(meta, request(source=source), 1, "conversation-hash")
    assert (tag.session, tag.agent) == (f"{session}@1", agent)


def test_another_key_naming_the_same_session_is_another_session():
    meta = {**CLAUDE_CODE, "HTTP_X_CLAUDE_CODE_SESSION_ID": SESSION}
    first = session_tag(meta, request(), 1, "conversation-hash").session
    other = session_tag(meta, request(), 2, "conversation-hash").session
    assert first != other and SESSION in first and SESSION in other


def test_without_a_name_the_session_is_the_routers_conversation():
    assert session_tag({}, request(), 1, "conversation-hash").session == "conversation-hash"
    # pinch off: no key was made, the same one is made here
    first = session_tag({}, request(), 1, None).session
    assert first and first == session_tag({}, request(messages=TOOL_ROUND), 1, None).session


@pytest.mark.parametrize(
    "tools, role",
    [((AGENT_TOOL, READ_TOOL), "main"), ((READ_TOOL,), "subagent"), ((), "background")],
)
def test_claude_codes_subagents_and_background_work_are_told_from_its_main_conversation(
    tools, role
):
    tag = session_tag(CLAUDE_CODE, request(tools=tools), 1, "c")
    assert tag.role == role


def test_another_agents_requests_with_tools_are_its_main_conversation():
    tag = session_tag(
        {"HTTP_USER_AGENT": "codex_exec/0.171.0"}, request(tools=(READ_TOOL,)), 1, "c"
    )
    assert tag.role == "main"


@pytest.mark.parametrize("messages, spoke", [(ASKED, True), (TOOL_ROUND, False)])
def test_a_user_turn_is_a_request_where_the_user_spoke_not_a_tool_round(messages, spoke):
    assert session_tag({}, request(messages=messages), 1, "c").user_turn is spoke
