"""The recall loop in chat-completions shape: OpenAI-compatible upstreams, and Claude translated.

Every client protocol that reaches a chat upstream (chat completions, and
Messages or Responses translated) goes through here, below the translation,
so the loop is written once for all of them.

A complete answer: while the model calls the router's tool (and the
request's recalls last), the call and its answer are appended and the
upstream asked again; the client gets one completion, the rounds' text
joined, the last round's calls without the router's, the usage summed.

A stream: text is relayed as it comes; the tool-call chunks, the finish
chunk and the usage chunk of a round are held to its end, since only then is
it known whether the model called the router's tool. If it did, they are
dropped (the agent's calls of that round too: the model asks for them again
once it has read what it recalled, and a call the client ran would need a
result the continuation does not have), the call is answered and the next
stream relayed as the same answer (no second role chunk, a blank line
between the rounds' text). Otherwise they go out as they came.
"""

from routing.protocols.base import Event, StreamReply
from routing.recall import TOOL_NAME
from routing.recall.answers import add_usage
from routing.recall.rounds import looped
from routing.recall.tool import CHAT_TOOL, with_tool

# Between the text of two rounds, so the model's sentences do not run together.
ROUND_BREAK = "\n\n"
# What an assistant message carries back to the upstream besides its calls.
_CARRIED = ("content", "reasoning_content", "thinking_blocks")


def _is_ours(call) -> bool:
    function = call.get("function") if isinstance(call, dict) else None
    return isinstance(function, dict) and function.get("name") == TOOL_NAME


def _continued(messages: list, said: dict, ours: list, recalls) -> list:
    """The conversation with the model's recall calls and their answers appended."""
    assistant = {"role": "assistant", **{k: said[k] for k in _CARRIED if k in said}}
    assistant["tool_calls"] = ours
    answers = [
        {
            "role": "tool",
            "tool_call_id": call.get("id"),
            "content": recalls.answer((call.get("function") or {}).get("arguments")),
        }
        for call in ours
    ]
    return [*messages, assistant, *answers]


def complete(call, body: dict, recalls) -> dict:
    """``call(body) -> completion``, looped while the model recalls; one completion back."""
    sent = with_tool(body, CHAT_TOOL)
    recalls.restart(offered=sent is not body)
    body = sent
    messages = list(body.get("messages") or ())
    texts, usage, rounds = [], None, 0
    while True:
        completion = call({**body, "messages": messages} if rounds else body)
        usage = add_usage(usage, completion.get("usage"))
        message = _message(completion)
        ours = [c for c in message.get("tool_calls") or () if _is_ours(c)]
        if not ours or recalls.spent:
            break
        if isinstance(message.get("content"), str) and message["content"]:
            texts.append(message["content"])
        messages = _continued(messages, message, ours, recalls)
        rounds += 1
    if not rounds and not ours:
        return completion
    return _one_answer(completion, texts, usage if rounds else completion.get("usage"))


def _message(completion: dict) -> dict:
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return {}
    message = choices[0].get("message")
    return message if isinstance(message, dict) else {}


def _one_answer(last: dict, texts: list, usage) -> dict:
    """The last completion with the earlier rounds' text before its own, and no call of ours."""
    message = dict(_message(last))
    if isinstance(message.get("content"), str) and message["content"]:
        texts = [*texts, message["content"]]
    if texts:
        message["content"] = ROUND_BREAK.join(texts)
    calls = [c for c in message.get("tool_calls") or () if not _is_ours(c)]
    choice = dict(last["choices"][0]) if message else {}
    if "tool_calls" in message:
        if calls:
            message["tool_calls"] = calls
        else:
            del message["tool_calls"]
            if choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "stop"
    answer = dict(last)
    if message:
        choice["message"] = message
        answer["choices"] = [choice, *last["choices"][1:]]
    if usage is not None:
        answer["usage"] = usage
    return answer


def stream(open_stream, body: dict, recalls) -> StreamReply:
    """``open_stream(body) -> StreamReply``, looped while the model recalls; one stream back."""
    sent = with_tool(body, CHAT_TOOL)
    recalls.restart(offered=sent is not body)
    return looped(open_stream, sent, recalls, _relayed)


class _Round:
    """What one upstream stream said that the client may not see until it ends."""

    def __init__(self):
        self.names: dict = {}  # tool-call index -> the function's name
        self.ours: dict = {}  # index -> the router's call, put together
        self.held: list = []  # the tool-call chunks, in order
        self.finish = None  # the finish chunk
        self.usage = None  # the round's usage
        self.usage_event = None  # its usage-only chunk
        self.envelope: dict = {}  # id, model...: for a usage chunk made here
        self.done = None  # [DONE]
        self.said = {"content": ""}  # the round's text, for the upstream when it continues
        self.set_apart = False

    def take_usage(self, event) -> None:
        """Usage is sent once, at the end, summed: a usage-only chunk is held, else moved there."""
        self.usage = event.data["usage"]
        if event.data.get("choices"):
            self.envelope = {k: v for k, v in event.data.items() if k not in ("choices", "usage")}
            del event.data["usage"]
            event.changed()
        else:
            self.usage_event = event

    def as_continuation(self, event, delta: dict, wrote: bool) -> bool:
        """A later round's chunk made part of the same answer: no second role, its text set
        apart from the earlier round's; False when nothing is left of it."""
        changed = delta.pop("role", None) is not None
        text = delta.get("content")
        if wrote and not self.set_apart and isinstance(text, str) and text:
            delta["content"] = ROUND_BREAK + text
            self.set_apart = changed = True
        if changed:
            event.changed()
        return any(v not in (None, "") for v in delta.values())

    def end(self, summed):
        """The held chunks, as the client may see them: no call of ours, the usage summed."""
        kept = {}  # the agent's call indexes, renumbered from 0
        for event in self.held:
            if self.ours:
                pieces = []
                for piece in event.data["choices"][0]["delta"]["tool_calls"]:
                    index = piece.get("index", 0) if isinstance(piece, dict) else 0
                    if index in self.ours:
                        continue
                    pieces.append({**piece, "index": kept.setdefault(index, len(kept))})
                if not pieces:
                    continue
                event.data["choices"][0]["delta"]["tool_calls"] = pieces
                event.changed()
            yield event
        if self.finish is not None:
            choice = self.finish.data["choices"][0]
            if self.ours and not kept and choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "stop"
                self.finish.changed()
            yield self.finish
        if self.usage_event is not None:
            if summed is not None:
                self.usage_event.data["usage"] = summed
                self.usage_event.changed()
            yield self.usage_event
        elif self.usage is not None:
            yield Event.of({**self.envelope, "choices": [], "usage": summed or self.usage})
        if self.done is not None:
            yield self.done

    def thought(self, delta: dict) -> None:
        """Keep the round's reasoning: a reasoning model's turn goes back upstream with it."""
        if isinstance(delta.get("reasoning_content"), str):
            self.said["reasoning_content"] = (
                self.said.get("reasoning_content", "") + delta["reasoning_content"]
            )
        if isinstance(delta.get("thinking_blocks"), list):
            self.said.setdefault("thinking_blocks", []).extend(delta["thinking_blocks"])

    def hold_calls(self, event, calls: list) -> None:
        self.held.append(event)
        for piece in calls:
            if not isinstance(piece, dict):
                continue
            index = piece.get("index", 0)
            function = piece.get("function") if isinstance(piece.get("function"), dict) else {}
            if function.get("name"):
                self.names[index] = function["name"]
            if self.names.get(index) != TOOL_NAME:
                continue
            call = self.ours.setdefault(
                index,
                {"id": None, "type": "function", "function": {"name": TOOL_NAME, "arguments": ""}},
            )
            call["id"] = piece.get("id") or call["id"]
            call["function"]["arguments"] += function.get("arguments") or ""


def _relayed(open_stream, body: dict, recalls, reply, current):
    messages = list(body.get("messages") or ())
    usage, rounds, wrote = None, 0, False
    while True:
        turn = _Round()
        for event in reply.events:
            if event.done:
                turn.done = event
                break
            chunk = event.data
            if chunk is None:
                yield event
                continue
            if isinstance(chunk.get("usage"), dict):
                turn.take_usage(event)
                if not chunk.get("choices"):
                    continue
            choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
            choice = choices[0] if choices and isinstance(choices[0], dict) else {}
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            calls = delta.get("tool_calls")
            if isinstance(calls, list) and calls:
                turn.hold_calls(event, calls)
                continue
            if choice.get("finish_reason"):
                turn.finish = event
                continue
            text = delta.get("content")
            if isinstance(text, str) and text:
                turn.said["content"] += text
            turn.thought(delta)
            if rounds and not turn.as_continuation(event, delta, wrote):
                continue
            wrote = wrote or bool(text)
            yield event
        usage = add_usage(usage, turn.usage)
        if turn.ours and not recalls.spent:
            ours = [turn.ours[i] for i in sorted(turn.ours)]
            said = {k: v for k, v in turn.said.items() if v}
            messages = _continued(messages, said, ours, recalls)
            reply.close()
            reply = open_stream({**body, "messages": messages})
            current.response = reply.response
            rounds += 1
            continue
        yield from turn.end(usage if rounds else None)
        return
