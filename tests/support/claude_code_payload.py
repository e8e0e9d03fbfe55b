"""A /v1/messages body the size and shape of the real Claude Code's (2.1.197, ``claude -p``).

Measured on the real client (bench/check_claude_code.py's set-up, the body
as the upstream received it): a system prompt of three text blocks (a
billing header, one line, 26.7 KB of instructions), 24 tool definitions
(82 KB of JSON), and a first user message of four text blocks: three
``<system-reminder>`` blocks (the Agent tool's agent types, 1.8 KB; the
skills, 4.6 KB; the date) and then what the user typed. The reminders and the
instructions mention architecture, design, security, debugging and
refactoring whatever the task is, which is why the tier must not read them.
The text here is written for the tests (not Anthropic's), at those sizes.
"""

from __future__ import annotations

import json

SYSTEM_CHARS = 26_700
TOOLS = 24
TOOLS_JSON_CHARS = 82_000
_INSTRUCTIONS = (
    "You are an interactive agent for software engineering. Follow the repository's "
    "architecture and design conventions, refactor only when asked, review security "
    "before you commit, debug failures from their stack traces, and optimize nothing "
    "without a measurement. Keep answers short. "
)
_AGENTS = (
    "<system-reminder>\nAvailable agent types for the Agent tool:\n"
    + "".join(
        f"- agent-{i}: Helps with architecture, design reviews, security audits and "
        f"debugging sessions of kind {i}. (Tools: *)\n"
        for i in range(14)
    )
    + "</system-reminder>"
)
_SKILLS = (
    "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
    + "".join(
        f"- skill-{i}: Refactor, migrate, optimize or debug code; security-review the pending "
        f"changes; design an algorithm; explain the architecture of module {i}.\n"
        for i in range(28)
    )
    + "</system-reminder>\n"
)
_CONTEXT = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following "
    "context:\n# currentDate\nToday's date is 2026-12-01.\n</system-reminder>\n\n"
)


def _tool(i: int) -> dict:
    names = ["Read", "Bash", "Write", "Edit", "Grep", "Glob", "Agent", "TodoWrite"]
    name = names[i] if i < len(names) else f"Tool{i}"
    room = TOOLS_JSON_CHARS // TOOLS - 300
    description = (_INSTRUCTIONS * (room // len(_INSTRUCTIONS) + 1))[:room]
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "command": {"type": "string"}},
        },
    }


def claude_code_body(typed: str, model: str = "claude-opus-4-6", session: str = "s-1") -> dict:
    """The first request of a ``claude -p "<typed>"`` session, as Claude Code sends it."""
    instructions = (_INSTRUCTIONS * (SYSTEM_CHARS // len(_INSTRUCTIONS) + 1))[:SYSTEM_CHARS]
    return {
        "model": model,
        "max_tokens": 32000,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197;"},
            {"type": "text", "text": "You are a Claude agent, built on the Claude Agent SDK."},
            {"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}},
        ],
        "tools": [_tool(i) for i in range(TOOLS)],
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": session})},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": _AGENTS},
                    {"type": "text", "text": _SKILLS},
                    {"type": "text", "text": _CONTEXT},
                    {"type": "text", "text": typed},
                ],
            }
        ],
    }


def tool_round(body: dict, n: int, output: str = "file contents\n" * 50) -> dict:
    """``body`` with one more round of the tool loop: a Read call and its result.

    Claude Code attaches a reminder to some tool results (a changed file, the
    todo list): the user said nothing, so the task goes on.
    """
    call_id = f"toolu_{n:03d}"
    messages = [
        *body["messages"],
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": output},
                {"type": "text", "text": "<system-reminder>No todos.</system-reminder>"},
            ],
        },
    ]
    return {**body, "messages": messages}


def user_turn(body: dict, typed: str, answer: str = "Done.") -> dict:
    """``body`` after the agent's final answer and a new message the user typed."""
    messages = [
        *body["messages"],
        {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        {"role": "user", "content": [{"type": "text", "text": typed}]},
    ]
    return {**body, "messages": messages}
