"""A Messages API request (Claude Code's) as a chat-completions request, and pinch's changes back.

The inverse of ``request.py``. The pipeline plans on chat-completions
messages: this turns a Messages body into one (``from_messages_request``),
with every ``tool_result`` block presented as a ``tool`` message of its own,
named after the ``tool_use`` it answers, so pinch finds its candidates, its
window and its tool names exactly as on a chat request. The chat body is also
what an OpenAI-compatible upstream is sent.

For an Anthropic upstream the client's own body goes out instead
(``routing.protocols.messages.native.native_request``, built where it is
sent): every block is the client's, copied key for key, except the
``tool_result`` blocks pinch rewrote, whose text is replaced in place
(``cache_control``, ``is_error``, images kept). Thinking and
``redacted_thinking`` blocks with their signatures, ``tool_use`` blocks,
images, documents, ``system`` blocks and the client's ``cache_control``
markers therefore reach the upstream as the client sent them, and its cache
breakpoints keep hitting.

Blocks chat completions has no place for (thinking, documents, server-tool
blocks) are left out of the chat messages and named in
``untranslatable`` when an OpenAI-compatible upstream would lose meaning by
their absence; thinking is simply dropped there (it is the model's own
scratch work, and a signature only an Anthropic model can check).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pinch import value_tokens
from routing import jsonio
from routing.protocols.messages.shapes import THINKING_BLOCKS, blocks_of

# Blocks the chat messages carry (every other block is measured apart: left_out_tokens).
_MAPPED_BLOCKS = frozenset({"text", "tool_use", "tool_result", "image"})

# Anthropic tool_choice type -> chat-completions tool_choice.
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


@dataclass(frozen=True)
class MessagesSource:
    """The client's Messages request, kept to be sent natively or mapped back."""

    body: dict
    # chat message index -> (turn, block) of the tool_result it presents
    results: dict = field(default_factory=dict)
    # for each chat message: where its last block is in the native body
    block_of: list = field(default_factory=list)
    # what a chat-completions upstream cannot be sent: "messages[0].content[1]: 'document'"
    untranslatable: tuple = ()
    # the prompt in blocks the chat messages leave out (thinking, documents): still
    # prompt to a native upstream, and to the key's limits (pinch.value_tokens)
    left_out_tokens: int = 0
    # Only an upstream that speaks Messages serves it (it holds what chat cannot say).
    needs_native: bool = False
    # The client's anthropic-beta and anthropic-version (routing.protocols.messages.request).
    client_headers: dict = field(default_factory=dict)
    builtin_tools: tuple = ()  # the Responses API's; a Messages request leaves none out
    # The provider capability that serves this request as sent (routing.providers.base).
    native_capability: ClassVar[str] = "messages"


def _is_custom_tool(tool: dict) -> bool:
    # Client tools have an input_schema; server tools (web_search_..., bash_...) a versioned type.
    return tool.get("type") in (None, "custom") and "input_schema" in tool


def from_messages_request(
    body: dict, count_only: bool = False, client_headers: dict | None = None
) -> tuple[dict, MessagesSource]:
    """(chat body, MessagesSource) for a body checked by routing.protocols.messages.request."""
    chat_messages: list = []
    block_of: list = []
    results: dict = {}
    untranslatable: list = []

    system = body.get("system")
    if system:
        text = system if isinstance(system, str) else _joined_text(system)
        chat_messages.append({"role": "system", "content": text})
        block_of.append(("system", 0 if isinstance(system, str) else len(system) - 1))

    tool_names: dict = {}
    # Blocks the chat messages leave out (thinking, documents), gathered on the one walk.
    left_out: list = []
    for t, turn in enumerate(body["messages"]):
        blocks = blocks_of(turn["content"])
        if turn["role"] == "system":
            # In place, as a chat system message: chat servers take them anywhere.
            chat_messages.append({"role": "system", "content": _joined_text(blocks)})
            block_of.append(("messages", t, len(blocks) - 1) if blocks else None)
            left_out += [b for b in blocks if b.get("type") not in _MAPPED_BLOCKS]
            continue
        if turn["role"] == "assistant":
            message = _assistant_message(blocks, tool_names, t, untranslatable, left_out)
            chat_messages.append(message)
            block_of.append(("messages", t, len(blocks) - 1) if blocks else None)
            continue
        # Tool results first, as messages of their own: a chat upstream wants them right
        # after the calls they answer; the turn's other blocks, then its results' images,
        # make one user message after them.
        parts, last, images_of_results = [], None, []
        for j, block in enumerate(blocks):
            kind = block["type"]
            if kind == "tool_result":
                text, images = _result_content(block.get("content"))
                if images:
                    images_of_results += images
                results[len(chat_messages)] = (t, j)
                chat_messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": block["tool_use_id"],
                        "name": tool_names.get(block["tool_use_id"], "tool"),
                        "content": text,
                    }
                )
                block_of.append(("messages", t, j))
                continue
            last = j
            if kind == "text":
                if block.get("text"):
                    parts.append({"type": "text", "text": block["text"]})
                continue
            part = _image_part(block) if kind == "image" else None
            if part is None:
                if kind not in _MAPPED_BLOCKS:
                    left_out.append(block)
                untranslatable.append(f"messages[{t}].content[{j}]: {kind!r}")
                continue
            parts.append(part)
        parts += images_of_results
        if parts:
            chat_messages.append({"role": "user", "content": _compact(parts)})
            block_of.append(("messages", t, last) if last is not None else None)

    chat: dict = {"model": body["model"], "messages": chat_messages}
    if not count_only:
        chat["max_tokens"] = body["max_tokens"]
    for name in ("temperature", "top_p", "stream"):
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("stop_sequences"):
        chat["stop"] = list(body["stop_sequences"])
    user_id = (body.get("metadata") or {}).get("user_id")
    if isinstance(user_id, str) and user_id:
        chat["user"] = user_id
    tools = [t for t in body.get("tools") or () if _is_custom_tool(t)]
    if tools:
        chat["tools"] = [_chat_tool(tool) for tool in tools]
        choice = _chat_tool_choice(body.get("tool_choice"))
        if choice is not None:
            chat["tool_choice"] = choice
        if (body.get("tool_choice") or {}).get("disable_parallel_tool_use"):
            chat["parallel_tool_calls"] = False
    for i, tool in enumerate(body.get("tools") or ()):
        if not _is_custom_tool(tool):
            untranslatable.append(f"tools[{i}]: server tool {tool.get('type')!r}")
    source = MessagesSource(
        body=body,
        results=results,
        block_of=block_of,
        untranslatable=tuple(untranslatable),
        left_out_tokens=sum(map(value_tokens, left_out)),
        needs_native=bool(untranslatable),
        client_headers=client_headers or {},
    )
    return chat, source


def _joined_text(blocks: list) -> str:
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))


def _assistant_message(
    blocks: list, tool_names: dict, t: int, untranslatable: list, left_out: list
) -> dict:
    texts, calls = [], []
    for j, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            tool_names[call_id] = name
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        # As json.dumps(input, ensure_ascii=False) writes it.
                        "arguments": jsonio.dumps_text(block.get("input") or {}),
                    },
                }
            )
        else:
            if kind not in _MAPPED_BLOCKS:
                left_out.append(block)
            if kind not in THINKING_BLOCKS:
                untranslatable.append(f"messages[{t}].content[{j}]: {kind!r}")
    message: dict = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return message


def _image_part(block: dict) -> dict | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif source.get("type") == "url":
        url = source.get("url")
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _result_content(content) -> tuple[str, list]:
    """The text of a tool_result's content, and its images as chat parts."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return "", []
    texts, images = [], []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image":
            part = _image_part(block)
            if part is not None:
                images.append(part)
    return "\n".join(texts), images


def _compact(parts: list):
    # Text only: a plain string, which every chat-completions server accepts.
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _chat_tool(tool: dict) -> dict:
    function = {
        "name": tool["name"],
        "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
    }
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _chat_tool_choice(choice):
    if not isinstance(choice, dict):
        return None
    if choice.get("type") == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return _TOOL_CHOICES.get(choice.get("type"))
