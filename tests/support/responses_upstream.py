"""The Responses API side of the OpenAI test upstream: POST /v1/responses, plain and streamed.

What OpenAI serves beside chat completions, for the router's native path
(a provider with ``responses_api: true``). It answers as the chat side does:
a ``function_call`` to the first function tool when tools are offered and
the last input item is not a tool output, else text (naming the call ids of
the outputs it was given). Asked to ``include`` ``reasoning.encrypted_content``
it puts a ``reasoning`` item with an opaque ``encrypted_content`` before its
answer, as a reasoning model does; the client is to send it back untouched.
Events carry increasing ``sequence_number``s and end with ``response.completed``.
A ``recall-*`` model recalls what pinch trimmed (tests/support/recall_upstream.py).
A ``script-*`` model plays the server's ``script``, one step per tool output
in the input, as the chat side does.
"""

import json
import time

from tests.support import recall_upstream, split_key
from tests.support.scripted import script_step, usage_of

ENCRYPTED = "gAAAAB-opaque-reasoning-blob=="
USAGE = {
    "input_tokens": 13,
    "input_tokens_details": {"cached_tokens": 5},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 2},
    "total_tokens": 22,
}


def _usage(body) -> dict:
    """USAGE; a script model's input is its body's size (as on the chat side, usage_of)."""
    if not body.get("model", "").startswith("script"):
        return USAGE
    prompt = usage_of(body)["prompt_tokens"]
    return {**USAGE, "input_tokens": prompt, "total_tokens": prompt + USAGE["output_tokens"]}


def _items(body) -> list:
    value = body.get("input")
    return (
        [{"type": "message", "role": "user", "content": value}] if isinstance(value, str) else value
    )


def _call(name: str, arguments: dict, number: int) -> dict:
    return {
        "type": "function_call",
        "id": f"fc_{number}",
        "call_id": f"call_{number}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def _message(text: str) -> dict:
    return {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def output_items(body, answer: str, server) -> list:
    """The answer's items; a ``script-*`` model plays ``script`` as the chat side does."""
    items = _items(body)
    output = []
    if "reasoning.encrypted_content" in (body.get("include") or ()):
        output.append(
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": ENCRYPTED}
        )
    done = sum(1 for item in items if item.get("type") == "function_call_output")
    if body.get("model", "").startswith("recall"):
        recalled = _recall(body, done)
        if recalled is not None:
            return [*output, *recalled]
    if body.get("model", "").startswith(("script", "recallscript")):
        step = script_step(server, items, "function_call_output")
        if "call" in step:
            return [*output, _call(step["call"], step.get("arguments") or {}, done + 1)]
        return [*output, _message(step["text"])]
    functions = [t for t in body.get("tools") or () if t.get("type") == "function"]
    if functions and items[-1].get("type") != "function_call_output":
        return [*output, _call(functions[0]["name"], {"path": "README.md"}, 1)]
    results = []
    for item in reversed(items):
        if item.get("type") != "function_call_output":
            break
        results.insert(0, item["call_id"])
    text = f"Got {len(results)} results: {', '.join(results)}" if results else answer
    return [*output, _message(text)]


def _recall(body, done: int) -> list | None:
    """A ``recall-*`` model's items (tests/support/recall_upstream.py), or None: as echo."""
    step = recall_upstream.step(recall_upstream.responses_seen(body), body["model"])
    if step is None:
        return None
    if "text" in step:
        return [_message(step["text"])]
    calls = [_message("Let me read the whole log.")]
    if step["also"]:
        calls.append(_call(step["also"], {"path": "a.py"}, done + 1))
    arguments = recall_upstream.recall_arguments(step["recall"])
    return [*calls, _call(recall_upstream.RECALL_TOOL, arguments, done + 2)]


def response(body, output, status="completed") -> dict:
    return {
        # native-sameid: an upstream that reuses its ids (one id for every answer).
        "id": "resp_reused"
        if str(body.get("model")).startswith("native-sameid")
        else f"resp_upstream_{time.monotonic_ns()}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "usage": _usage(body) if status == "completed" else None,
    }


def events(body, answer: str, server, cut_key: str | None = None) -> list:
    """The event stream of the answer, as (type, payload) pairs in order; with ``cut_key``,
    its text in two deltas with that key cut between them (tests/support/split_key.py)."""
    output = output_items(body, answer, server)
    done = response(body, output)
    shell = {**done, "status": "in_progress", "output": []}
    found = [
        ("response.created", {"response": shell}),
        ("response.in_progress", {"response": shell}),
    ]
    for index, item in enumerate(output):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            found += [
                (
                    "response.output_item.added",
                    {
                        "output_index": index,
                        "item": {**item, "status": "in_progress", "content": []},
                    },
                ),
                ("response.content_part.added", {**ids, "part": part}),
            ]
            words = text.split(" ")
            pieces = [w + " " for w in words[:-1]] + words[-1:]
            if cut_key:
                pieces = split_key.deltas(cut_key)
            found += [("response.output_text.delta", {**ids, "delta": p}) for p in pieces]
            found += [
                ("response.output_text.done", {**ids, "text": text}),
                ("response.content_part.done", {**ids, "part": item["content"][0]}),
            ]
        elif item["type"] == "function_call":
            ids = {"item_id": item["id"], "output_index": index}
            found += [
                (
                    "response.output_item.added",
                    {
                        "output_index": index,
                        "item": {**item, "arguments": "", "status": "in_progress"},
                    },
                ),
                ("response.function_call_arguments.delta", {**ids, "delta": item["arguments"]}),
                ("response.function_call_arguments.done", {**ids, "arguments": item["arguments"]}),
            ]
        else:
            found.append(("response.output_item.added", {"output_index": index, "item": item}))
        found.append(("response.output_item.done", {"output_index": index, "item": item}))
    found.append(("response.completed", {"response": done}))
    return found


def answer(handler, body, text: str, cut_key: str | None = None) -> None:
    """Serve one POST /v1/responses for the OpenAI test upstream; ``text``: its answer."""
    if not body.get("stream"):
        return handler._json(200, response(body, output_items(body, text, handler.server)))
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    try:
        for number, (kind, payload) in enumerate(events(body, text, handler.server, cut_key)):
            data = json.dumps({"type": kind, "sequence_number": number, **payload})
            handler._write_chunk(f"event: {kind}\ndata: {data}\n\n".encode())
        handler._write_chunk(b"")
    except (BrokenPipeError, ConnectionResetError):
        pass
