"""A Responses API request as a chat-completions request, and pinch's changes back.

The pipeline plans on chat-completions messages: ``from_responses_request``
turns ``instructions`` and the ``input`` items into them. A
``function_call_output`` item becomes a ``tool`` message of its own, named
after the ``function_call`` it answers, so pinch finds its candidates, its
window and its tool names exactly as on a chat request; consecutive
``function_call`` items join the assistant message before them, as one
assistant turn with several tool calls. The chat body is also what an
OpenAI-compatible (or, through the Anthropic provider, a Claude) upstream is
sent.

For an upstream that serves the Responses API itself the client's items go
out instead (``routing.protocols.responses.native.native_body``): each one as sent, except the
``function_call_output`` items pinch rewrote. ``reasoning`` items with their
``encrypted_content`` therefore reach it untouched; a chat upstream cannot
read them, so they are left out of the chat messages (the wire logs it).
The exception is a reasoning item the router itself made from Claude's
thinking (``THINKING_PREFIX``): its blocks go back onto the assistant turn as
``thinking_blocks``, which the Anthropic provider sends back to Claude.

Tools: ``function`` tools map one to one; a ``namespace`` (Codex's
``multi_agent_v1``) is flattened into functions named ``<namespace>__<name>``
and mapped back on the answer; a ``custom`` (free-form) tool becomes a
function with one string argument, ``input``. Built-in tools (web_search,
file_search, ...) only a Responses upstream can run: for any other they are
named in ``builtin_tools`` and the wire refuses the request, or drops those
the client marked optional.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import ClassVar

from routing import jsonio
from routing.protocols.base import TranslationError
from routing.protocols.responses.shapes import TEXT_PARTS, input_items, new_id

# A reasoning item the router made from Claude's thinking blocks carries them,
# signatures included, in its encrypted_content: the client sends it back and
# the blocks go back to Claude, which refuses a tool turn without them.
THINKING_PREFIX = "router-thinking-v1:"
# Flattened namespace tools: "<namespace>__<name>", within chat's name rules.
NAMESPACE_SEPARATOR = "__"
_ROLES = ("user", "system", "developer", "assistant")
# Many chat-completions servers (vLLM, llama.cpp, Ollama) know no "developer" role.
_CHAT_ROLES = {"developer": "system"}
# Items a chat model has no use for: the model's own earlier reasoning.
_DROPPED_FOR_CHAT = ("reasoning",)
_TOOL_CHOICES = ("auto", "none", "required")
# A custom tool's free-form input, as the one argument of a chat function.
_CUSTOM_PARAMETERS = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The tool's free-form input."}},
    "required": ["input"],
}


@dataclass(frozen=True)
class ResponsesSource:
    """The client's request, kept to be sent natively, mapped back, answered and stored."""

    body: dict
    # history (from previous_response_id) + this request's input, as items
    items: list
    # chat message index -> index in ``items`` of the function_call_output it presents
    results: dict = field(default_factory=dict)
    # chat tool name -> {"namespace": ..., "name": ...} or {"custom": name}
    tool_names: dict = field(default_factory=dict)
    # built-in tools, by type, that only a Responses upstream can run
    builtin_tools: tuple = ()
    # items and parts a chat upstream cannot be sent, as "input.3: 'file_search_call'"
    untranslatable: tuple = ()
    # reasoning items left out of the chat messages
    dropped_reasoning: int = 0
    # built-in tool types the client lets the router leave out ("*": all)
    optional_tools: frozenset = frozenset()
    left_out_tokens: int = 0  # (see MessagesSource): the items map to chat messages

    # What the wire needs of the client, read once here: the built-in tools a chat upstream
    # would have to run (not marked optional), whether only a Responses upstream serves
    # the request, the model name it is answered as and the router's id for the response.
    refused_tools: tuple = ()
    needs_native: bool = False
    model: str = ""
    response_id: str = ""
    api_key_id: object = None  # the key whose stored responses it reads and adds to
    stores_response: bool = True  # kept for previous_response_id unless store: false
    # The provider capability that serves this request as sent (routing.providers.base).
    native_capability: ClassVar[str] = "responses"


def _bad(message: str, param: str | None = None) -> TranslationError:
    return TranslationError(message, param)


def from_responses_request(
    body: dict, history: list = (), optional_tools: frozenset = frozenset(), api_key_id=None
) -> tuple[dict, ResponsesSource]:
    """(chat body, ResponsesSource) for a checked body after ``history``; raises if malformed.

    The body was checked once, by routing.protocols.responses.request.
    """
    items = [*history, *input_items(body)]
    builder = _ChatMessages()
    if body.get("instructions"):
        builder.messages.append({"role": "system", "content": body["instructions"]})
    for i, item in enumerate(items):
        builder.add(i, item)
    builder.flush_images()
    if not builder.messages:
        raise _bad("input: has no message the model could answer", "input")

    chat: dict = {"model": body["model"], "messages": builder.messages}
    if body.get("max_output_tokens"):
        chat["max_tokens"] = body["max_output_tokens"]
    for name in (
        "temperature",
        "top_p",
        "stream",
        "parallel_tool_calls",
        "user",
        "safety_identifier",
        "service_tier",
    ):
        if body.get(name) is not None:
            chat[name] = body[name]
    effort = (body.get("reasoning") or {}).get("effort")
    if isinstance(effort, str):
        chat["reasoning_effort"] = effort
    response_format = _response_format((body.get("text") or {}).get("format"))
    if response_format is not None:
        chat["response_format"] = response_format
    tools, tool_names, builtin = _chat_tools(body.get("tools") or ())
    if tools:
        chat["tools"] = tools
        choice = _chat_tool_choice(body.get("tool_choice"), tool_names)
        if choice is not None:
            chat["tool_choice"] = choice
    refused = () if "*" in optional_tools else tuple(t for t in builtin if t not in optional_tools)
    source = ResponsesSource(
        body=body,
        items=items,
        results=builder.results,
        tool_names=tool_names,
        builtin_tools=tuple(builtin),
        untranslatable=tuple(builder.untranslatable),
        dropped_reasoning=builder.dropped_reasoning,
        optional_tools=frozenset(optional_tools),
        refused_tools=refused,
        needs_native=bool(refused or builder.untranslatable),
        model=body["model"],
        response_id=new_id("resp"),
        stores_response=body.get("store") is not False,
        api_key_id=api_key_id,
    )
    return chat, source


class _ChatMessages:
    """Items in order -> chat messages; tool calls join the assistant turn they follow."""

    def __init__(self):
        self.messages: list = []
        self.results: dict = {}
        self.untranslatable: list = []
        self.dropped_reasoning = 0
        self.call_names: dict = {}  # call_id -> chat tool name
        self.pending_images: list = []  # images of tool outputs, sent after the tool messages
        self.pending_thinking: list = []  # Claude's thinking, for the assistant turn it began

    def _assistant(self, message: dict) -> dict:
        if self.pending_thinking:
            message["thinking_blocks"], self.pending_thinking = self.pending_thinking, []
        self.messages.append(message)
        return message

    def add(self, i: int, item: dict) -> None:
        # An item's place (``input[i]``) is written only into an error or an untranslatable
        # entry: formatting it for each of a long history's items cost 0.02 ms a request.
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "function_call_output" or kind == "custom_tool_call_output":
            self._output(i, item)
            return
        if self.pending_images:
            self.flush_images()
        if kind == "function_call" or kind == "custom_tool_call":
            self._call(i, item, kind)
        elif kind == "message":
            self._message(i, item)
        elif kind in _DROPPED_FOR_CHAT:
            blocks = decode_thinking(item.get("encrypted_content"))
            if blocks is None:
                self.dropped_reasoning += 1
            else:
                self.pending_thinking += blocks
        else:
            self.untranslatable.append(f"{_where(i)}: {kind!r}")

    def _message(self, i: int, item: dict) -> None:
        role = item.get("role")
        if role not in _ROLES:
            where = _where(i)
            raise _bad(
                f"{where}.role must be one of {', '.join(_ROLES)}; got {role!r}", f"{where}.role"
            )
        content = item.get("content")
        if isinstance(content, str):
            message = {"role": _CHAT_ROLES.get(role, role), "content": content}
            if role == "assistant":
                self._assistant(message)
            else:
                self.messages.append(message)
            return
        if not isinstance(content, list):
            where = _where(i)
            raise _bad(f"{where}.content must be a string or a list of parts", f"{where}.content")
        parts = []
        for j, part in enumerate(content):
            chat_part = self._part(part, i, j)
            if chat_part is not None:
                parts.append(chat_part)
        if role == "assistant":
            text = "".join(p["text"] for p in parts if p["type"] == "text")
            self._assistant({"role": "assistant", "content": text})
            return
        self.messages.append({"role": _CHAT_ROLES.get(role, role), "content": _compact(parts)})

    def _part(self, part, i: int, j: int) -> dict | None:
        if not isinstance(part, dict):
            where = f"{_where(i)}.content[{j}]"
            raise _bad(f"{where} must be an object", where)
        kind = part.get("type")
        if kind in TEXT_PARTS:
            text = part.get("text") if kind != "refusal" else part.get("refusal")
            return {"type": "text", "text": text if isinstance(text, str) else ""}
        if kind == "input_image" and isinstance(part.get("image_url"), str):
            image = {"url": part["image_url"]}
            if part.get("detail") in ("low", "high", "auto"):
                image["detail"] = part["detail"]
            return {"type": "image_url", "image_url": image}
        self.untranslatable.append(f"{_where(i)}.content[{j}]: {kind!r}")
        return None

    def _call(self, i: int, item: dict, kind: str) -> None:
        call_id = item.get("call_id")
        name = item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise _bad(f"{_where(i)}: a {kind} needs a call_id and a name", _where(i))
        if kind == "custom_tool_call":
            arguments = jsonio.dumps_text({"input": item.get("input") or ""})
        else:
            namespace = item.get("namespace")
            if namespace and isinstance(namespace, str):
                name = chat_tool_name(name, namespace)
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments or {})
        self.call_names[call_id] = name
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and not self.pending_thinking:
            last.setdefault("tool_calls", []).append(call)
            if not last.get("content"):
                last["content"] = None
            return
        self._assistant({"role": "assistant", "content": None, "tool_calls": [call]})

    def _output(self, i: int, item: dict) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            where = _where(i)
            raise _bad(
                f"{where}.call_id: required (the call the output answers)", f"{where}.call_id"
            )
        text, images = _output_content(item.get("output"), i, self.untranslatable)
        if images:
            self.pending_images += images
        self.results[len(self.messages)] = i
        self.messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": self.call_names.get(call_id, "tool"),
                "content": text,
            }
        )

    def flush_images(self) -> None:
        # Chat completions carries no image in a tool message: one user message after them.
        if self.pending_images:
            self.messages.append({"role": "user", "content": self.pending_images})
            self.pending_images = []


def encode_thinking(blocks: list) -> str:
    data = json.dumps(blocks, ensure_ascii=False, separators=(",", ":")).encode()
    return THINKING_PREFIX + base64.b64encode(data).decode()


def decode_thinking(value) -> list | None:
    """The thinking blocks a reasoning item of the router's carries, else None."""
    if not isinstance(value, str) or not value.startswith(THINKING_PREFIX):
        return None
    try:
        blocks = json.loads(base64.b64decode(value[len(THINKING_PREFIX) :], validate=True))
    except (ValueError, binascii.Error, RecursionError):  # 100,000 "[": nested past the stack
        return None
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return None
    return blocks


def _where(i: int) -> str:
    """Where input item ``i`` is, as an error names it."""
    return f"input[{i}]"


def _output_content(output, i: int, untranslatable: list) -> tuple[str, list]:
    """The text of input item ``i``'s tool output, and its images as chat parts."""
    if isinstance(output, str):
        return output, []
    if not isinstance(output, list):
        return json.dumps(output) if output is not None else "", []
    texts, images = [], []
    for j, part in enumerate(output):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            text = part.get("text") or ""
            if not isinstance(text, str):
                raise _bad(f"{_where(i)}.output[{j}].text must be a string", f"{_where(i)}.output")
            texts.append(text)
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            images.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            untranslatable.append(f"{_where(i)}.output[{j}]: {kind!r}")
    return "\n".join(texts), images


def _compact(parts: list):
    # Text only: a plain string, which every chat-completions server accepts.
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def chat_tool_name(name: str, namespace: str | None = None) -> str:
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}" if namespace else name


def _function(name: str, tool: dict, parameters=None) -> dict:
    function = {"name": name}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = (
        parameters
        or tool.get("parameters")
        or {
            "type": "object",
            "properties": {},
        }
    )
    if tool.get("strict") is not None and parameters is None:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _chat_tools(tools) -> tuple[list, dict, list]:
    """(chat tools, chat name -> Responses name, built-in tool types)."""
    chat_tools, names, builtin = [], {}, []
    for tool in tools:
        kind = tool["type"]
        if kind == "function":
            chat_tools.append(_function(tool["name"], tool))
        elif kind == "custom":
            names[tool["name"]] = {"custom": tool["name"]}
            chat_tools.append(_function(tool["name"], tool, _CUSTOM_PARAMETERS))
        elif kind == "namespace":
            for inner in tool["tools"]:
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    name = chat_tool_name(inner["name"], tool["name"])
                    names[name] = {"namespace": tool["name"], "name": inner["name"]}
                    chat_tools.append(_function(name, inner))
        else:
            builtin.append(kind)
    return chat_tools, names, builtin


def _chat_tool_choice(choice, tool_names: dict):
    if isinstance(choice, str):
        return choice if choice in _TOOL_CHOICES else None
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        name = chat_tool_name(choice.get("name") or "", choice.get("namespace"))
        return {"type": "function", "function": {"name": name}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        tools = [
            {
                "type": "function",
                "function": {"name": chat_tool_name(t["name"], t.get("namespace"))},
            }
            for t in choice.get("tools") or ()
            if isinstance(t, dict) and isinstance(t.get("name"), str)
        ]
        mode = choice.get("mode") if choice.get("mode") in ("auto", "required") else "auto"
        return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}
    return None


def _response_format(text_format):
    if not isinstance(text_format, dict):
        return None
    if text_format.get("type") == "json_object":
        return {"type": "json_object"}
    if text_format.get("type") == "json_schema":
        schema = {
            k: text_format[k]
            for k in ("name", "schema", "strict", "description")
            if k in text_format
        }
        return {"type": "json_schema", "json_schema": schema}
    return None
