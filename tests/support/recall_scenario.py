"""A conversation whose old tool result pinch trims, and the config that makes it so.

The agent read a long log (the vault line in its middle), then listed a
directory; with one tool result protected, the log is trimmed to its head and
tail with a recall note, and a ``recall-*`` model (tests/support/recall_upstream.py)
asks for the vault line back.
"""

import copy

from tests.support.recall_upstream import long_result

QUESTION = "What is the vault code in the log?"
AGENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The agent's {name}.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_log", "list_dir")
]


def recall_pinch(config: dict, **recall) -> dict:
    """``config`` (a copy) trimming every tool result but the last, recall on, ``recall`` set."""
    data = copy.deepcopy(config)
    data["pinch"].update(
        budget_tokens=1000, keep_last_turns=1, keep_last_tool_results=1, max_summarize_chars=3000
    )
    data["pinch"]["recall"] = {"enabled": True, **recall}
    return data


def model_like(config: dict, base: str, model_id: str) -> dict:
    """A model entry like ``base``'s, sent upstream as ``model_id``."""
    entry = next(m for m in config["models"] if m["id"] == base)
    return {**entry, "id": model_id, "upstream_model": model_id}


def chat_conversation() -> list:
    """The agent's conversation in chat completions: the log read, then a listing."""

    def call(call_id, name):
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}

    return [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call("call_1", "read_log")]},
        {"role": "tool", "tool_call_id": "call_1", "content": long_result()},
        {"role": "assistant", "content": None, "tool_calls": [call("call_2", "list_dir")]},
        {"role": "tool", "tool_call_id": "call_2", "content": "a.py b.py"},
    ]


# What Claude Code leaves of an old tool result it cleared from its own history.
CLEARED = "[Old tool result content cleared]"


def vault_task() -> list:
    """The chat conversation, then the user's next task: the trimmed log's vault line."""
    return [
        *chat_conversation(),
        {"role": "assistant", "content": "I listed the directory."},
        {"role": "user", "content": "Now find the vault code."},
    ]


def tool_answered(messages: list, asked) -> list:
    """The agent's next request: ``messages``, the model's tool call (``asked``, an SDK
    message) and the tool's result."""
    [call] = asked.tool_calls
    return [
        *messages,
        asked.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "README.md: nothing about a vault"},
    ]


def log_cleared(messages: list) -> list:
    """``messages`` with the old log cleared by the client, as Claude Code clears it."""
    return [*messages[:2], {**messages[2], "content": CLEARED}, *messages[3:]]


MESSAGES_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in AGENT_TOOLS
]


def messages_conversation() -> list:
    """The same conversation as a Claude client sends it."""

    def call(call_id, name):
        return {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}],
        }

    def result(call_id, text):
        return {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
        }

    return [
        {"role": "user", "content": QUESTION},
        call("toolu_1", "read_log"),
        result("toolu_1", long_result()),
        call("toolu_2", "list_dir"),
        result("toolu_2", "a.py b.py"),
    ]


RESPONSES_TOOLS = [
    {"type": "function", **{k: t["function"][k] for k in ("name", "description", "parameters")}}
    for t in AGENT_TOOLS
]


def responses_conversation() -> list:
    """The same conversation as a Responses client (Codex CLI) sends it."""

    def call(call_id, name):
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}

    def output(call_id, text):
        return {"type": "function_call_output", "call_id": call_id, "output": text}

    return [
        {"type": "message", "role": "user", "content": QUESTION},
        call("call_1", "read_log"),
        output("call_1", long_result()),
        call("call_2", "list_dir"),
        output("call_2", "a.py b.py"),
    ]
