"""The recall loop on a native Responses upstream: a Responses client (Codex CLI), OpenAI.

The same loop as ``chat``, in the Responses API's shape. A complete answer:
while the model calls the router's tool (and the request's recalls last),
the round's output items (without a ``function_call`` of the agent's, which
nobody will answer) and a ``function_call_output`` for each recall are
appended to the input and the upstream asked again; the client gets one
``response``: the earlier rounds' messages and reasoning before the last
round's items, the usage summed, and the router's tool gone from ``tools``
(an upstream echoes the tools it was given), so a stored response holds no
trace of it either.

A stream: message and reasoning items are relayed as they come; a round's
``function_call`` items and its final event are held to its end. A round
that called the router's tool is continued with the next stream, whose
``response.created`` and ``response.in_progress`` are dropped and whose
items are numbered on from those the client has; every event relayed gets
the next ``sequence_number``; the last ``response.completed`` carries the
one response.
"""

from routing.protocols.base import StreamReply
from routing.recall import TOOL_NAME
from routing.recall.answers import add_usage
from routing.recall.rounds import Numbering, looped
from routing.recall.tool import RESPONSES_TOOL, with_tool

# Events after which a Responses stream says no more.
_FINAL = ("response.completed", "response.incomplete", "response.failed", "error")


# Items that ask the client to run something (a hosted tool's item, a web search, is
# the upstream's own and needs no output).
CLIENT_CALLS = frozenset(
    (
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
    )
)


def _is_call(item) -> bool:
    return isinstance(item, dict) and item.get("type") in CLIENT_CALLS


def _is_ours(item) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type") == "function_call"
        and item.get("name") == TOOL_NAME
    )


def _items(body: dict) -> list:
    value = body.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value or ())


def _continued(items: list, output: list, recalls) -> list:
    """The input with the round's items (its recall calls in them) and their outputs."""
    said = [i for i in output if not _is_call(i) or _is_ours(i)]
    answers = [
        {
            "type": "function_call_output",
            "call_id": i.get("call_id"),
            "output": recalls.answer(i.get("arguments")),
        }
        for i in said
        if _is_ours(i)
    ]
    return [*items, *said, *answers]


def without_tool(response: dict) -> dict:
    """``response`` without the router's tool in the ``tools`` the upstream echoes."""
    tools = response.get("tools")
    if not isinstance(tools, list):
        return response
    kept = [t for t in tools if not (isinstance(t, dict) and t.get("name") == TOOL_NAME)]
    return response if len(kept) == len(tools) else {**response, "tools": kept}


def _offered(body: dict, recalls) -> dict:
    sent = with_tool(body, RESPONSES_TOOL)
    recalls.restart(offered=sent is not body)
    return sent


def _one_response(last: dict, shown: list, usage) -> dict:
    kept = [i for i in last.get("output") or () if not _is_ours(i)]
    return without_tool({**last, "output": shown + kept, "usage": usage})


def complete(call, body: dict, recalls) -> dict:
    """``call(body) -> response``, looped while the model recalls; one response back."""
    body = _offered(body, recalls)
    items = _items(body)
    shown, usage, rounds = [], None, 0
    while True:
        response = call({**body, "input": items} if rounds else body)
        usage = add_usage(usage, response.get("usage"))
        output = response.get("output") if isinstance(response.get("output"), list) else []
        if not any(_is_ours(i) for i in output) or recalls.spent:
            break
        shown += [i for i in output if not _is_call(i)]
        items = _continued(items, output, recalls)
        rounds += 1
    if not rounds and not any(_is_ours(i) for i in output):
        return without_tool(response)
    return _one_response(response, shown, usage if rounds else response.get("usage"))


def stream(open_stream, body: dict, recalls) -> StreamReply:
    """``open_stream(body) -> StreamReply``, looped while the model recalls; one stream back."""
    return looped(open_stream, _offered(body, recalls), recalls, _relayed)


class _Round(Numbering):
    """One upstream stream: what the client saw of it, what it holds back."""

    key = "output_index"

    def __init__(self, shown: int):
        super().__init__(shown)
        self.final = None  # the final event, held

    def see(self, event, later: bool):
        """The event to relay now, or None (held, or a later round's opening)."""
        data = event.data
        kind = data.get("type") if data else None
        if kind in ("response.created", "response.in_progress"):
            return None if later else _cleaned(event)
        if kind in _FINAL:
            self.final = event
            return None
        index = data.get("output_index") if data else None
        if index is None:
            return event
        if kind == "response.output_item.added" and _is_call(data.get("item")):
            self.held[index] = []
        return self.relay(event, index)

    def output(self) -> list:
        response = self.final.data.get("response") if self.final is not None else None
        return list((response or {}).get("output") or ())

    def end(self, shown: list, summed):
        """The held events, as the client may see them; the final event, one response."""
        ours = [i for i, events in self.held.items() if _is_ours(events[0].data.get("item"))]
        yield from self.released(ours)
        if self.final is None:
            return
        response = self.final.data.get("response")
        if isinstance(response, dict):
            usage = summed if summed is not None else response.get("usage")
            self.final.data["response"] = _one_response(response, shown, usage)
            self.final.changed()
        yield self.final


def _cleaned(event):
    response = event.data.get("response")
    if isinstance(response, dict):
        cleaned = without_tool(response)
        if cleaned is not response:
            event.data["response"] = cleaned
            event.changed()
    return event


def _relayed(open_stream, body: dict, recalls, reply, current):
    items = _items(body)
    usage, rounds, shown, sequence = None, 0, [], 0
    while True:
        turn = _Round(len(shown) if rounds else 0)
        for event in reply.events:
            send = turn.see(event, later=rounds > 0)
            if send is not None:
                sequence = _sequenced(send, sequence)
                yield send
            if turn.final is not None:
                break
        output = turn.output()
        response = turn.final.data.get("response") if turn.final is not None else None
        usage = add_usage(usage, (response or {}).get("usage"))
        called = any(_is_ours(i) for i in output)
        if called and turn.final.data.get("type") == "response.completed" and not recalls.spent:
            shown += [i for i in output if not _is_call(i)]
            items = _continued(items, output, recalls)
            reply.close()
            reply = open_stream({**body, "input": items})
            current.response = reply.response
            rounds += 1
            continue
        for send in turn.end(shown, usage if rounds else None):
            sequence = _sequenced(send, sequence)
            yield send
        return


def _sequenced(event, number: int) -> int:
    """Number the event on from the ones the client has; the next number."""
    data = event.data
    if isinstance(data, dict) and "sequence_number" in data:
        if data["sequence_number"] != number:
            data["sequence_number"] = number
            event.changed()
        return number + 1
    return number
