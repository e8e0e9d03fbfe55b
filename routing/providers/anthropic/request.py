"""A chat-completions request as an Anthropic Messages request.

Every block is built anew (the caller's dicts are never shared with the
result), so marking cache breakpoints on the result cannot touch the
messages the router keeps for a retry or a fallback to another provider.
``MessagesRequest.block_of`` says where each chat message landed, so the
cache placement can put a breakpoint "after chat message i" without knowing
how messages were merged into turns.

Fields the Messages API has no place for are dropped rather than sent (it
refuses unknown fields); requests it cannot express at all raise
``TranslationError``, which the provider answers as a 400.
"""

from __future__ import annotations

import json

from routing.protocols.base import TranslationError
from routing.protocols.messages.shapes import THINKING_BLOCKS, MessagesRequest, thinking_block

# max_tokens is required upstream; chat clients often send none. A model's
# config may set its own (ModelConfig.default_max_tokens); this is the rest.
DEFAULT_MAX_TOKENS = 4096

# reasoning_effort -> extended-thinking budget_tokens. 1,024 is the API's
# minimum budget; each step up roughly quadruples it, as OpenAI's efforts do.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}

_DATA_URL_PREFIX = "data:"

# Tool definitions for a history whose tools the client no longer sends.
STAND_IN_DESCRIPTION = "A tool used earlier in this conversation; not available now."
STAND_IN_NAME = "earlier_tool"

# From this anthropic-version on the API refuses temperature, top_p and top_k
# at any value (400 "Extra inputs are not permitted"); before it they pass.
SAMPLING_REMOVED_IN = "2026-10-21"


def to_messages_request(
    chat: dict, default_max_tokens: int | None = None, api_version: str = SAMPLING_REMOVED_IN
) -> MessagesRequest:
    """Translate a chat-completions body (already validated by the router's schema).

    ``api_version``: the anthropic-version the request is sent with; it
    decides whether sampling parameters may be sent (ISO dates compare as text).
    """
    if (chat.get("n") or 1) != 1:
        raise TranslationError("n > 1 is not supported by Anthropic models", "n")
    system: list[dict] = []
    turns: list[dict] = []
    block_of: list = []
    for index, message in enumerate(chat["messages"]):
        role = message.get("role")
        where = f"messages[{index}]"
        if role in ("system", "developer"):
            system.extend(_text_blocks(message.get("content"), where))
            block_of.append(("system", len(system) - 1) if system else None)
            continue
        if role == "user":
            blocks, turn_role = _user_blocks(message.get("content"), where), "user"
        elif role == "assistant":
            blocks, turn_role = _assistant_blocks(message, where), "assistant"
        elif role == "tool":
            blocks, turn_role = [_tool_result(message, where)], "user"
        else:
            raise TranslationError(f"{where}: role {role!r} is not supported", f"{where}.role")
        if not blocks:
            block_of.append(None)
            continue
        # Consecutive messages of one role are one turn: tool results answering
        # one assistant turn must arrive together in the next user turn.
        if turns and turns[-1]["role"] == turn_role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": turn_role, "content": blocks})
        block_of.append(("messages", len(turns) - 1, len(turns[-1]["content"]) - 1))

    body: dict = {"model": chat["model"], "messages": turns}
    if system:
        body["system"] = system
    body["max_tokens"] = (
        chat.get("max_completion_tokens")
        or chat.get("max_tokens")
        or default_max_tokens
        or DEFAULT_MAX_TOKENS
    )
    if api_version < SAMPLING_REMOVED_IN:
        for name in ("temperature", "top_p"):
            if chat.get(name) is not None:
                body[name] = chat[name]
    stop = chat.get("stop")
    if stop:
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise TranslationError("stop must be a string or a list of strings", "stop")
        body["stop_sequences"] = stops
    metadata = chat.get("metadata")
    user_id = (metadata.get("user_id") if isinstance(metadata, dict) else None) or chat.get("user")
    if isinstance(user_id, str) and user_id:
        body["metadata"] = {"user_id": user_id}
    if chat.get("tools"):
        body["tools"] = [_tool(tool, i) for i, tool in enumerate(chat["tools"])]
    tool_choice = _tool_choice(chat.get("tool_choice"), chat.get("parallel_tool_calls"))
    if tool_choice is not None and body.get("tools"):
        body["tool_choice"] = tool_choice
    if not body.get("tools") and _has_tool_blocks(turns):
        # The API refuses tool_use / tool_result blocks in a request that
        # defines no tools (a client that stops offering them mid-session):
        # the tools the history used stand in, and may not be called.
        body["tools"] = _stand_in_tools(turns)
        body["tool_choice"] = {"type": "none"}
    output_format = _output_format(chat.get("response_format"))
    if output_format is not None:
        body["output_config"] = {"format": output_format}
    _thinking(body, chat.get("reasoning_effort"))
    if chat.get("stream"):
        body["stream"] = True
    return MessagesRequest(body=body, block_of=block_of)


def _has_tool_blocks(turns: list[dict]) -> bool:
    return any(b["type"] in ("tool_use", "tool_result") for t in turns for b in t["content"])


def _stand_in_tools(turns: list[dict]) -> list[dict]:
    names = [b["name"] for t in turns for b in t["content"] if b["type"] == "tool_use"]
    return [
        {"name": name, "description": STAND_IN_DESCRIPTION, "input_schema": {"type": "object"}}
        for name in dict.fromkeys(names or [STAND_IN_NAME])
    ]


def _text_blocks(content, where: str) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in ("text", "refusal"):
            raise TranslationError(f"{where}.content[{i}]: only text parts are allowed here")
        text = part.get("text") if part.get("type") == "text" else part.get("refusal")
        if isinstance(text, str) and text:
            blocks.append(_with_cache_control({"type": "text", "text": text}, part))
    return blocks


def _user_blocks(content, where: str) -> list[dict]:
    if not isinstance(content, list):
        return _text_blocks(content, where)
    blocks = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if part.get("text"):
                blocks.append(_with_cache_control({"type": "text", "text": part["text"]}, part))
        elif kind == "image_url":
            blocks.append(_with_cache_control(_image(part, f"{where}.content[{i}]"), part))
        else:
            raise TranslationError(
                f"{where}.content[{i}]: part type {kind!r} is not supported for Anthropic models",
                f"{where}.content",
            )
    return blocks


def _image(part: dict, where: str) -> dict:
    image_url = part.get("image_url")
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str) or not url:
        raise TranslationError(f"{where}: image_url.url is required", where)
    if url.startswith(_DATA_URL_PREFIX):
        header, _, data = url[len(_DATA_URL_PREFIX) :].partition(",")
        media_type, _, encoding = header.partition(";")
        if encoding != "base64" or not data:
            raise TranslationError(f"{where}: a data URL image must be base64", where)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    if url.startswith("https://") or url.startswith("http://"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise TranslationError(f"{where}: image URL must be https:// or a data URL", where)


def _assistant_blocks(message: dict, where: str) -> list[dict]:
    # Thinking first, as the model wrote it: the API checks the signature.
    blocks = [
        thinking_block(block)
        for block in message.get("thinking_blocks") or ()
        if isinstance(block, dict) and block.get("type") in THINKING_BLOCKS
    ]
    blocks += _text_blocks(message.get("content"), where)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TranslationError(f"{where}.tool_calls must be a list", f"{where}.tool_calls")
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            raise TranslationError(f"{where}.tool_calls[{i}]: a function call needs a name")
        arguments = function.get("arguments") or "{}"
        try:
            tool_input = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            raise TranslationError(
                f"{where}.tool_calls[{i}].function.arguments is not JSON",
                f"{where}.tool_calls",
            ) from None
        if not isinstance(tool_input, dict):
            raise TranslationError(
                f"{where}.tool_calls[{i}].function.arguments must be a JSON object"
            )
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function["name"],
                "input": tool_input,
            }
        )
    return blocks


def _tool_result(message: dict, where: str) -> dict:
    content = message.get("content")
    block: dict = {"type": "tool_result", "tool_use_id": message["tool_call_id"]}
    if isinstance(content, list):
        block["content"] = _user_blocks(content, where)
    elif content:
        block["content"] = content
    if message.get("is_error") is True:
        block["is_error"] = True
    if isinstance(content, list):
        # A breakpoint the client set on a part of the result marks the result.
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("cache_control"), dict):
                block["cache_control"] = dict(part["cache_control"])
                for inner in block["content"]:
                    inner.pop("cache_control", None)
    return block


def _with_cache_control(block: dict, part: dict) -> dict:
    if isinstance(part.get("cache_control"), dict):
        block["cache_control"] = dict(part["cache_control"])
    return block


def _tool(tool, index: int) -> dict:
    where = f"tools[{index}]"
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict) or tool.get("type", "function") != "function":
        raise TranslationError(f"{where}: only function tools are supported", where)
    if not function.get("name"):
        raise TranslationError(f"{where}.function.name is required", where)
    translated = {
        "name": function["name"],
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if not isinstance(translated["input_schema"], dict):
        raise TranslationError(f"{where}.function.parameters must be an object", where)
    if isinstance(function.get("description"), str) and function["description"]:
        translated["description"] = function["description"]
    if isinstance(tool.get("cache_control"), dict):
        translated["cache_control"] = dict(tool["cache_control"])
    return translated


def _tool_choice(choice, parallel) -> dict | None:
    if choice is None:
        translated = None
    elif choice == "auto":
        translated = {"type": "auto"}
    elif choice == "none":
        return {"type": "none"}
    elif choice == "required":
        translated = {"type": "any"}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        translated = {"type": "tool", "name": choice["function"].get("name")}
    else:
        raise TranslationError(f"tool_choice {choice!r} is not supported", "tool_choice")
    if parallel is False:
        translated = translated or {"type": "auto"}
        translated["disable_parallel_tool_use"] = True
    return translated


def _output_format(response_format) -> dict | None:
    if not isinstance(response_format, dict) or response_format.get("type") in (None, "text"):
        return None
    if response_format.get("type") == "json_schema":
        json_schema = response_format.get("json_schema")
        schema = json_schema.get("schema") if isinstance(json_schema, dict) else None
        if not isinstance(schema, dict):
            raise TranslationError(
                "response_format.json_schema.schema is required", "response_format"
            )
        return {"type": "json_schema", "schema": schema}
    raise TranslationError(
        "Anthropic models accept response_format json_schema only (no json_object mode)",
        "response_format",
    )


def _thinking(body: dict, effort) -> None:
    if effort is None or effort == "none":
        return
    budget = THINKING_BUDGETS.get(effort) if isinstance(effort, str) else None
    if budget is None:
        raise TranslationError(
            f"reasoning_effort must be one of none, {', '.join(THINKING_BUDGETS)}",
            "reasoning_effort",
        )
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    # max_tokens covers thinking and answer, and must exceed the budget: the
    # client's max_tokens stays what the answer may use.
    if body["max_tokens"] <= budget:
        body["max_tokens"] += budget
    # Extended thinking accepts neither temperature nor a top_p below 0.95.
    body.pop("temperature", None)
    body.pop("top_p", None)
