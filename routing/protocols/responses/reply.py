"""A chat-completions answer as a Responses API ``response``, plain and streamed.

For a Responses client (Codex CLI) whose request went to a chat upstream.
Reasoning (``reasoning_content``, and Claude's signed ``thinking_blocks``)
becomes a ``reasoning`` item first, its text the summary, the blocks in its
``encrypted_content`` for the client to send back; ``content`` becomes a
``message`` item with one ``output_text`` part; each
tool call a ``function_call`` item keeping its id as ``call_id`` (the client
answers it with a ``function_call_output`` of that ``call_id``, which the
inbound translation turns back into ``tool_call_id``), its namespace or
custom-tool form restored; ``finish_reason: length`` an ``incomplete``
response; usage input/output tokens with the cached share.

``ResponseEvents`` turns a chunk stream into the Responses event stream as it
arrives: ``response.created`` and ``response.in_progress`` on the first
chunk; a message item opened (``output_item.added``, ``content_part.added``)
on the first text, its ``output_text.delta`` pieces; a ``function_call`` item
per tool call with its ``function_call_arguments.delta`` pieces; and, once
the upstream's ``[DONE]`` says usage is known, every item's ``.done`` events
and ``response.completed`` carrying the whole response.
"""

from __future__ import annotations

import copy
import json
import time

from routing.protocols.chunks import ChunkEvents
from routing.protocols.responses.inbound import ResponsesSource, encode_thinking
from routing.protocols.responses.shapes import new_id, responses_usage

# Fields of the request a response object repeats back, with their defaults.
_ECHOED = {
    "instructions": None,
    "max_output_tokens": None,
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "temperature": None,
    "tool_choice": "auto",
    "tools": [],
    "top_p": None,
    "prompt_cache_key": None,
    "metadata": {},
    "user": None,
    "store": True,
}


def response_shell(source: ResponsesSource, response_id: str, model_name: str) -> dict:
    """The response object before any output: what the request asked for, status in_progress."""
    body = source.body
    shell = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "model": model_name,
        "output": [],
        "reasoning": {"effort": (body.get("reasoning") or {}).get("effort"), "summary": None},
        "text": body.get("text") or {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": None,
    }
    for name, default in _ECHOED.items():
        value = body.get(name)
        shell[name] = default if value is None else value
    return shell


def _part(kind: str, text: str) -> dict:
    if kind == "refusal":
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(text: str, status: str = "completed", item_id: str | None = None) -> dict:
    return {
        "type": "message",
        "id": item_id or new_id("msg"),
        "status": status,
        "role": "assistant",
        "content": [_part("output_text", text)] if text or status == "completed" else [],
    }


def reasoning_item(text: str, blocks: list, status="completed", item_id=None) -> dict:
    """The model's reasoning: its text as the summary, Claude's signed blocks to send back."""
    item = {
        "type": "reasoning",
        "id": item_id or new_id("rs"),
        "status": status,
        "summary": [{"type": "summary_text", "text": text}] if text else [],
    }
    if blocks:
        item["encrypted_content"] = encode_thinking(blocks)
    return item


def call_item(source: ResponsesSource, call_id, name, arguments, status="completed") -> dict:
    """A chat tool call as the Responses item the client's tool list names."""
    mapped = source.tool_names.get(name) or {}
    if "custom" in mapped:
        try:
            value = json.loads(arguments) if arguments else {}
        except ValueError:
            value = {}
        text = value.get("input") if isinstance(value, dict) else None
        return {
            "type": "custom_tool_call",
            "id": new_id("ctc"),
            "status": status,
            "call_id": call_id,
            "name": mapped["custom"],
            "input": text if isinstance(text, str) else arguments or "",
        }
    item = {
        "type": "function_call",
        "id": new_id("fc"),
        "status": status,
        "call_id": call_id or new_id("call"),
        "name": mapped.get("name", name),
        "arguments": arguments or "",
    }
    if "namespace" in mapped:
        item["namespace"] = mapped["namespace"]
    return item


def _finish(response: dict, finish_reason, usage) -> dict:
    response["usage"] = responses_usage(usage)
    if finish_reason == "length":
        response["status"] = "incomplete"
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    else:
        response["status"] = "completed"
    return response


def to_response(completion: dict, source: ResponsesSource, response_id: str, model_name: str):
    """A chat completion (provider-checked) as a ``response`` object."""
    choice = (completion.get("choices") or [{}])[0]
    answer = choice.get("message") or {}
    response = response_shell(source, response_id, model_name)
    reasoning = answer.get("reasoning_content")
    blocks = answer.get("thinking_blocks")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    blocks = blocks if isinstance(blocks, list) else []
    if reasoning or blocks:
        response["output"].append(reasoning_item(reasoning, blocks))
    if isinstance(answer.get("content"), str) and answer["content"]:
        response["output"].append(message_item(answer["content"]))
    elif isinstance(answer.get("refusal"), str) and answer["refusal"]:
        item = message_item("")
        item["content"] = [_part("refusal", answer["refusal"])]
        response["output"].append(item)
    for call in answer.get("tool_calls") or ():
        function = call.get("function") or {}
        response["output"].append(
            call_item(source, call.get("id"), function.get("name"), function.get("arguments"))
        )
    return _finish(response, choice.get("finish_reason"), completion.get("usage"))


class ResponseEvents(ChunkEvents):
    """Feed chat-completions chunks in order; get the Responses events each one makes."""

    def __init__(self, source: ResponsesSource, response_id: str, model_name: str):
        super().__init__()
        self.source = source
        self.response = response_shell(source, response_id, model_name)
        self.sequence = 0
        self.text_index: int | None = None  # output index of the open message item
        self.part_kind = "output_text"  # or "refusal": what the open message item holds
        self.answer = ""
        self.reasoning_index: int | None = None  # output index of the open reasoning item
        self.reasoning_text = ""
        self.thinking_blocks: list = []
        self.calls: dict[int, int] = {}  # chat tool call index -> output index

    def _event(self, kind: str, **fields) -> dict:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _snapshot(self) -> dict:
        # A copy: the response grows after the event that shows it goes out.
        return copy.deepcopy(self.response)

    def opening(self) -> list[dict]:
        return [
            self._event("response.created", response=self._snapshot()),
            self._event("response.in_progress", response=self._snapshot()),
        ]

    def _add(self, item: dict) -> tuple[int, dict]:
        index = len(self.response["output"])
        self.response["output"].append(item)
        return index, self._event("response.output_item.added", output_index=index, item=dict(item))

    def _open(self, item: dict, part_event: str, where: str, part: dict) -> tuple[int, list]:
        """An item added with its first part: (its output index, the two events that say so)."""
        index, added = self._add(item)
        opened = self._event(
            f"response.{part_event}.added",
            item_id=item["id"],
            output_index=index,
            **{f"{where}_index": 0},
            part=part,
        )
        return index, [added, opened]

    def reasoning(self, text: str) -> list[dict]:
        events = []
        if self.reasoning_index is None:
            item = reasoning_item("", [], status="in_progress")
            part = {"type": "summary_text", "text": ""}
            opened = self._open(item, "reasoning_summary_part", "summary", part)
            self.reasoning_index, events = opened
        self.reasoning_text += text
        events.append(
            self._event(
                "response.reasoning_summary_text.delta",
                item_id=self.response["output"][self.reasoning_index]["id"],
                output_index=self.reasoning_index,
                summary_index=0,
                delta=text,
            )
        )
        return events

    def thinking(self, blocks: list) -> list[dict]:
        self.thinking_blocks += [b for b in blocks if isinstance(b, dict)]
        return []

    def _close_reasoning(self) -> list[dict]:
        if self.reasoning_index is None and not self.thinking_blocks:
            return []
        events = []
        if self.reasoning_index is None:
            # Redacted thinking: blocks to send back, no text to show.
            index, added = self._add(reasoning_item("", [], status="in_progress"))
            events.append(added)
        else:
            index = self.reasoning_index
        item = reasoning_item(
            self.reasoning_text, self.thinking_blocks, item_id=self.response["output"][index]["id"]
        )
        self.response["output"][index] = item
        if self.reasoning_text:
            ids = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            events += [
                self._event(
                    "response.reasoning_summary_text.done", **ids, text=self.reasoning_text
                ),
                self._event("response.reasoning_summary_part.done", **ids, part=item["summary"][0]),
            ]
        events.append(self._event("response.output_item.done", output_index=index, item=item))
        self.reasoning_index, self.reasoning_text, self.thinking_blocks = None, "", []
        return events

    def text(self, text: str) -> list[dict]:
        return self._delta("output_text", text)

    def refusal(self, text: str) -> list[dict]:
        return self._delta("refusal", text)

    def _delta(self, kind: str, text: str) -> list[dict]:
        """Text (or a refusal) into the open message item, opening one first if need be."""
        events = []
        if self.text_index is not None and self.part_kind != kind:
            events += self._close_text()
        if self.text_index is None:
            events += self._close_reasoning()
            item = message_item("", status="in_progress")
            self.text_index, opened = self._open(item, "content_part", "content", _part(kind, ""))
            self.part_kind = kind
            events += opened
        self.answer += text
        fields = {"logprobs": []} if kind == "output_text" else {}
        events.append(
            self._event(
                f"response.{kind}.delta",
                item_id=self.response["output"][self.text_index]["id"],
                output_index=self.text_index,
                content_index=0,
                delta=text,
                **fields,
            )
        )
        return events

    def _close_text(self) -> list[dict]:
        if self.text_index is None:
            return []
        index, self.text_index = self.text_index, None
        item = message_item("", item_id=self.response["output"][index]["id"])
        part = item["content"][0] = _part(self.part_kind, self.answer)
        self.response["output"][index] = item
        ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
        if self.part_kind == "output_text":
            done = self._event("response.output_text.done", **ids, text=self.answer, logprobs=[])
        else:
            done = self._event("response.refusal.done", **ids, refusal=self.answer)
        self.answer = ""
        return [
            done,
            self._event("response.content_part.done", **ids, part=part),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def tool(self, call: dict) -> list[dict]:
        events = []
        position = call.get("index", 0)
        function = call.get("function") or {}
        if position not in self.calls:
            events += self._close_reasoning() + self._close_text()
            item = call_item(
                self.source, call.get("id"), function.get("name"), "", status="in_progress"
            )
            index, added = self._add(item)
            self.calls[position] = index
            events.append(added)
        index = self.calls[position]
        item = self.response["output"][index]
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            if item["type"] == "custom_tool_call":
                # A free-form tool's input is known once its JSON is whole: sent at the end.
                item["_arguments"] = item.get("_arguments", "") + arguments
            else:
                item["arguments"] += arguments
                events.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=index,
                        delta=arguments,
                    )
                )
        return events

    def _close_calls(self) -> list[dict]:
        events = []
        for index in self.calls.values():
            item = self.response["output"][index]
            if item["type"] == "custom_tool_call":
                arguments = item.pop("_arguments", "")
                done = call_item(self.source, item["call_id"], item["name"], arguments)
                item.update(input=done["input"], status="completed")
            else:
                item["status"] = "completed"
                events.append(
                    self._event(
                        "response.function_call_arguments.done",
                        item_id=item["id"],
                        output_index=index,
                        arguments=item["arguments"],
                    )
                )
            events.append(self._event("response.output_item.done", output_index=index, item=item))
        self.calls = {}
        return events

    def end(self) -> list[dict]:
        """The closing events, once the upstream's stream is complete."""
        events = self.start() + self._close_reasoning() + self._close_text() + self._close_calls()
        _finish(self.response, self.finish, self.usage)
        kind = "response.incomplete" if self.response["status"] == "incomplete" else None
        events.append(self._event(kind or "response.completed", response=self._snapshot()))
        return events

    def failed(self, code: str, message: str) -> dict:
        """``response.failed`` for a stream that broke after it started."""
        self.response["status"] = "failed"
        self.response["error"] = {"code": code, "message": message}
        return self._event("response.failed", response=self._snapshot())
