"""The recall loop on a native Messages upstream: a Claude client, an Anthropic upstream.

The same loop as ``chat``, in the Messages API's shape. A complete answer:
while the model calls the router's tool (and the request's recalls last),
its turn (without any tool_use of the agent's, which nobody will answer) and
a user turn of ``tool_result``s are appended and the upstream asked again;
the client gets one Message, the earlier rounds' text and thinking before
the last round's blocks, the usage summed.

A stream: text and thinking blocks are relayed as they come; a round's
``tool_use`` blocks, its ``message_delta`` and ``message_stop`` are held to
its end. A round that called the router's tool is continued with the next
stream, whose ``message_start`` is dropped and whose blocks are numbered on
from those the client has; the last ``message_delta`` carries the summed usage.
"""

import json

from routing.protocols.base import StreamReply
from routing.protocols.messages.shapes import MessagesRequest
from routing.recall import TOOL_NAME
from routing.recall.answers import add_usage
from routing.recall.rounds import Numbering, looped
from routing.recall.tool import MESSAGES_TOOL, with_tool


def _is_ours(block) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "tool_use"
        and block.get("name") == TOOL_NAME
    )


def _is_agents_call(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use" and not _is_ours(block)


def _continued(messages: list, content: list, recalls) -> list:
    """The conversation with the model's turn (its recall calls in it) and their answers."""
    said = [b for b in content if not _is_agents_call(b)]
    answers = [
        {
            "type": "tool_result",
            "tool_use_id": b.get("id"),
            "content": recalls.answer(b.get("input")),
        }
        for b in said
        if _is_ours(b)
    ]
    return [*messages, {"role": "assistant", "content": said}, {"role": "user", "content": answers}]


def _offered(request: MessagesRequest, recalls) -> MessagesRequest:
    body = with_tool(request.body, MESSAGES_TOOL)
    recalls.restart(offered=body is not request.body)
    return MessagesRequest(body=body, block_of=request.block_of)


def complete(call, request: MessagesRequest, recalls) -> dict:
    """``call(request) -> message``, looped while the model recalls; one Message back."""
    request = _offered(request, recalls)
    messages = list(request.body.get("messages") or ())
    shown, usage, rounds = [], None, 0
    while True:
        body = {**request.body, "messages": messages}
        message = call(MessagesRequest(body=body, block_of=request.block_of))
        usage = add_usage(usage, message.get("usage"))
        content = message.get("content") if isinstance(message.get("content"), list) else []
        if not any(_is_ours(b) for b in content) or recalls.spent:
            break
        shown += [b for b in content if not isinstance(b, dict) or b.get("type") != "tool_use"]
        messages = _continued(messages, content, recalls)
        rounds += 1
    if not rounds and not any(_is_ours(b) for b in content):
        return message
    kept = [b for b in content if not _is_ours(b)]
    answer = {**message, "content": shown + kept, "usage": usage}
    if answer.get("stop_reason") == "tool_use" and not any(_is_agents_call(b) for b in kept):
        answer["stop_reason"] = "end_turn"
    return answer


def stream(open_stream, request: MessagesRequest, recalls) -> StreamReply:
    """``open_stream(request) -> StreamReply``, looped while the model recalls; one stream back."""
    return looped(open_stream, _offered(request, recalls), recalls, _relayed)


class _Block:
    """One content block put together from its start and deltas, to send back upstream."""

    def __init__(self, start: dict):
        self.block = dict(start)
        self.partial = ""

    def add(self, delta: dict) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            self.block["text"] = self.block.get("text", "") + (delta.get("text") or "")
        elif kind == "thinking_delta":
            self.block["thinking"] = self.block.get("thinking", "") + (delta.get("thinking") or "")
        elif kind == "signature_delta":
            self.block["signature"] = delta.get("signature") or ""
        elif kind == "input_json_delta":
            self.partial += delta.get("partial_json") or ""
        elif kind == "citations_delta":
            self.block.setdefault("citations", []).append(delta.get("citation"))

    def whole(self) -> dict:
        if self.partial:
            try:
                self.block["input"] = json.loads(self.partial)
            except ValueError:
                self.block["input"] = {}
        return self.block


class _Round(Numbering):
    """One upstream stream: what the client saw of it, what it holds back, what it said."""

    key = "index"

    def __init__(self, shown: int):
        super().__init__(shown)
        self.blocks: dict = {}  # upstream index -> _Block
        self.usage: dict = {}
        self.delta = None
        self.stop = None

    def see(self, event, later: bool):
        """The event to relay now, or None (held, or a later round's opening)."""
        data = event.data
        kind = data.get("type") if data else None
        if kind == "message_start":
            usage = (data.get("message") or {}).get("usage")
            self.usage.update({k: v for k, v in (usage or {}).items() if v is not None})
            return None if later else event
        if kind == "message_delta":
            usage = data.get("usage") or {}
            self.usage.update({k: v for k, v in usage.items() if v is not None})
            self.delta = event
            return None
        if kind == "message_stop":
            self.stop = event
            return None
        if kind not in ("content_block_start", "content_block_delta", "content_block_stop"):
            return None if later and kind == "ping" else event
        index = data.get("index")
        if kind == "content_block_start":
            block = data.get("content_block") or {}
            self.blocks[index] = _Block(block)
            if block.get("type") == "tool_use":
                self.held[index] = []
        elif kind == "content_block_delta" and index in self.blocks:
            self.blocks[index].add(data.get("delta") or {})
        return self.relay(event, index)

    def content(self) -> list:
        return [self.blocks[i].whole() for i in sorted(self.blocks)]

    def ours(self) -> list:
        return [i for i, b in sorted(self.blocks.items()) if _is_ours(b.block)]

    def end(self, summed: dict | None):
        """The held events, as the client may see them: no call of ours, the usage summed."""
        ours = self.ours()
        yield from self.released(ours)
        if self.delta is not None:
            delta = self.delta.data
            calls = [i for i in self.held if i not in ours]
            if ours and not calls and (delta.get("delta") or {}).get("stop_reason") == "tool_use":
                delta["delta"]["stop_reason"] = "end_turn"
                self.delta.changed()
            if summed is not None:
                delta["usage"] = summed
                self.delta.changed()
            yield self.delta
        if self.stop is not None:
            yield self.stop


def _relayed(open_stream, request: MessagesRequest, recalls, reply, current):
    messages = list(request.body.get("messages") or ())
    usage, rounds, shown = None, 0, 0
    while True:
        turn = _Round(shown)
        for event in reply.events:
            send = turn.see(event, later=rounds > 0)
            if send is not None:
                yield send
            if turn.stop is not None or (event.data or {}).get("type") == "error":
                break
        usage = add_usage(usage, turn.usage)
        if turn.ours() and turn.stop is not None and not recalls.spent:
            messages = _continued(messages, turn.content(), recalls)
            reply.close()
            body = {**request.body, "messages": messages}
            reply = open_stream(MessagesRequest(body=body, block_of=request.block_of))
            current.response = reply.response
            shown, rounds = turn.shown, rounds + 1
            continue
        yield from turn.end(usage if rounds else None)
        return
