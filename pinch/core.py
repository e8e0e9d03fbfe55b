"""pinch: shrink a conversation to a token budget by trimming old tool results.

Agent sessions resend their whole history on every turn, and most of that
history is tool output the model has already acted on. This module decides,
per request and before any paid token is sent, which of those results to cut
down and how, under rules that keep the request valid and its meaning intact:

* only ``tool`` messages change; user, assistant and system messages are what
  the model is being asked and are never touched;
* nothing is removed or reordered, so every tool call keeps its result;
* the recent part of the conversation (the protected window) stays verbatim,
  except for true outliers, which are capped;
* below the budget, the caller's list comes back as the same object.

It is pure on purpose: no Django, no settings, no I/O, no module state. It runs
on every request, is called with explicit knobs by the dispatcher, and is
tested offline. Relevance ordering is computed elsewhere (the relevance edge)
and only arrives here as a list of indexes.

Speed matters as much as safety: the under-budget path is one pass of
``len(text) // 3`` per message, and the over-budget path adds one pass to find
the window (two with ``window_step``) and one to name tools, never anything
quadratic.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pinch.tokens import estimate_tokens, extract_text

# The marker names the exact number of characters cut, so a reader (or a
# model) knows how much is missing and that the gap is deliberate.
_TRIM_MARKER = "[{count} chars trimmed...]"
# The two newlines put the marker on a line of its own between head and tail.
_MARKER_NEWLINES = 2
# A short old result is not worth a head and a tail: a placeholder that names
# the tool keeps the call/result pairing readable at a few tokens' cost.
_PLACEHOLDER = "[{name}: result omitted]"
_FALLBACK_TOOL_NAME = "tool"


def trim_candidates(
    messages: Sequence[Any],
    keep_last_turns: int = 4,
    keep_last_tool_results: int | None = None,
    window_step: int | None = None,
) -> list[int]:
    """Return the indexes of the tool results pinch may compress, oldest first.

    These are the ``tool`` messages before the protected window. The window
    starts at the ``keep_last_turns``-th user message from the end, or at the
    ``keep_last_tool_results``-th tool result from the end when that is later
    (None disables that rule). With too few of either, that rule protects
    everything. Values below 1 count as 1: the latest turn is always kept.

    ``window_step`` K quantizes the tool-result rule. Were the window to start
    at tool result ``j`` (0-based, counted from the start of the conversation),
    it starts at tool result ``(j // K) * K`` instead: the candidates stay the
    same while an agent adds K tool results, then grow by K at once. None and
    1 are the plain rule, values below 1 count as 1, and it does nothing when
    ``keep_last_tool_results`` is None. The user-turn rule is not quantized
    (it moves only when a user speaks); the later of the two starts still wins.

    Why: under a provider's prompt cache, a tool result compressed for the
    first time rewrites the payload from that message on, and everything after
    it, read from the cache at a tenth of the price the turn before, is
    written again at 1.25 times. With a window that slides by one result a
    turn, that happens on nearly every turn over the budget; in steps, once
    every K results. Over a session of uniform pruning the pruned payload then
    fails to start with the previous one at most ``1 + U + (R - k) // K``
    times (the budget's crossing, U new user messages, the steps), R the tool
    results of the last request and k ``keep_last_tool_results``.
    Measured with ``pinch_replay`` on the 24 sessions of the shared corpus
    (docs/benchmarks.md, "Pruning in steps"), uniform pruning at a 30,000-token
    budget: with K = 8 the payload stops repeating the previous one on 64 of
    1,548 turns instead of 429, and the cache-aware cost saved goes from 7.1%
    to 22.3% for 35.1% of the tokens instead of 36.2%. At 10,000 tokens, where
    sliding one at a time costs 8% more than no pinch, K = 8 saves 33.7% of
    the cost and 55.1% of the tokens.

    The relevance edge builds its embedding list from this same function, with
    the same knobs, so ``relevance_order`` indexes line up with the list
    prune_context compresses.
    """
    start = _protected_start(messages, keep_last_turns, keep_last_tool_results, window_step)
    return _tool_results(messages, 0, start)


def next_step_start(
    messages: Sequence[Any],
    keep_last_turns: int = 4,
    keep_last_tool_results: int | None = None,
    window_step: int | None = None,
    settled: bool = True,
) -> int:
    """Return the index of the first message a later prune step may rewrite.

    Everything before it reaches the upstream the same way on the next turn
    as on this one, whatever the agent appends, so it is the prefix worth a
    prompt-cache breakpoint. ``len(messages)`` when no message can change.

    Turn to turn the protected window only moves forward, and a step
    compresses the tool results it leaves behind: the first one it can touch
    is the first tool result at or after this turn's window start. That holds
    when every candidate before the window already has its final form
    (``settled``: this turn went over budget and the uniform pass compressed
    them all). Otherwise (under budget, or a relevance order that left some
    verbatim) the first step may start at the first candidate.
    """
    start = _protected_start(messages, keep_last_turns, keep_last_tool_results, window_step)
    if not settled:
        candidates = _tool_results(messages, 0, start)
        if candidates:
            return candidates[0]
    later = _tool_results(messages, start, len(messages))
    return later[0] if later else len(messages)


def prune_context(
    messages: list[Any],
    budget_tokens: int,
    keep_last_turns: int = 4,
    max_summarize_chars: int = 4000,
    protected_max_chars: int | None = 20000,
    relevance_order: Iterable[int] | None = None,
    extra_fixed_tokens: int = 0,
    keep_last_tool_results: int | None = None,
    window_step: int | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """Trim old tool results until the conversation fits ``budget_tokens``.

    Returns ``(messages, stats)``. When nothing changes (under budget, or
    nothing could be shortened) the caller's list itself comes back. Otherwise
    a new list of the same length: untouched messages are the caller's own
    dicts, changed ones are shallow copies whose ``content`` is a string.

    Over budget, two things happen:

    * capping: a tool result inside the protected window longer than
      ``protected_max_chars`` is cut to at most that many characters (head,
      marker, tail). It is applied whatever the relevance order; None turns it
      off.
    * compressing candidates (see trim_candidates, which also says what
      ``window_step`` does to the window): a result longer than
      ``max_summarize_chars`` keeps a head and a tail totalling at most half of
      that; a shorter one becomes ``[<tool name>: result omitted]``. With
      ``relevance_order`` None every candidate is compressed. Otherwise the
      order is a list of indexes into the candidate list, least relevant
      first; candidates are compressed in that order until the savings (the
      capping's included) cover ``original_tokens - budget_tokens``, and the
      rest, including any the order does not name, stay verbatim. Bad or
      repeated indexes are skipped.

    A change that would not make a message shorter is not made.

    ``extra_fixed_tokens`` is what rides along outside the messages (tool
    definitions); it counts toward the budget and is included in both totals.

    Stats always hold ``pruned``, ``original_tokens``, ``final_tokens`` and
    ``tokens_saved``; when pruned also ``summarized`` (how many results
    changed), ``compressed`` and ``capped`` (their message indexes, sorted) and
    ``compressed_tools`` (changed results per tool name).
    """
    original_tokens = sum(estimate_tokens(extract_text(m)) for m in messages) + extra_fixed_tokens
    if original_tokens <= budget_tokens:
        return messages, _unchanged_stats(original_tokens)

    start = _protected_start(messages, keep_last_turns, keep_last_tool_results, window_step)
    candidates = _tool_results(messages, 0, start)
    replaced: dict[int, str] = {}
    saved = 0

    capped: list[int] = []
    if protected_max_chars is not None:
        for i in _tool_results(messages, start, len(messages)):
            text = extract_text(messages[i])
            if len(text) <= protected_max_chars:
                continue
            shorter = _elide(text, protected_max_chars)
            if len(shorter) < len(text):
                replaced[i] = shorter
                capped.append(i)
                saved += estimate_tokens(text) - estimate_tokens(shorter)

    names = _tool_names(messages, candidates + capped)

    if relevance_order is None:
        walk: Iterable[int] = candidates
        deficit = None
    else:
        walk = _ordered(relevance_order, candidates)
        deficit = original_tokens - budget_tokens

    compressed: list[int] = []
    for i in walk:
        if deficit is not None and saved >= deficit:
            break
        text = extract_text(messages[i])
        if len(text) > max_summarize_chars:
            shorter = _elide(text, max_summarize_chars // 2)
        else:
            shorter = _PLACEHOLDER.format(name=names[i])
        if len(shorter) < len(text):
            replaced[i] = shorter
            compressed.append(i)
            saved += estimate_tokens(text) - estimate_tokens(shorter)

    if not replaced:
        return messages, _unchanged_stats(original_tokens)

    out = list(messages)
    for i, text in replaced.items():
        message = dict(messages[i])
        message["content"] = text
        out[i] = message

    tool_counts: dict[str, int] = {}
    for i in replaced:
        tool_counts[names[i]] = tool_counts.get(names[i], 0) + 1

    # Only changed messages differ from the input, so the per-message deltas
    # give the exact sum over the output without estimating the list again.
    final_tokens = original_tokens - saved
    return out, {
        "pruned": True,
        "original_tokens": original_tokens,
        "final_tokens": final_tokens,
        "tokens_saved": max(original_tokens - final_tokens, 0),
        "summarized": len(replaced),
        "compressed": sorted(compressed),
        "capped": capped,
        "compressed_tools": tool_counts,
    }


def _unchanged_stats(tokens: int) -> dict[str, Any]:
    return {"pruned": False, "original_tokens": tokens, "final_tokens": tokens, "tokens_saved": 0}


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _tool_results(messages: Sequence[Any], start: int, stop: int) -> list[int]:
    return [
        i
        for i, m in enumerate(messages[start:stop], start)
        if isinstance(m, dict) and m.get("role") == "tool"
    ]


def _protected_start(
    messages: Sequence[Any],
    keep_last_turns: int,
    keep_last_tool_results: int | None,
    window_step: int | None = None,
    end: int | None = None,
) -> int:
    """Where the protected window of ``messages[:end]`` starts (``end``: all of them)."""
    end = len(messages) if end is None else min(end, len(messages))
    turns = max(keep_last_turns, 1)
    results = None if keep_last_tool_results is None else max(keep_last_tool_results, 1)
    step = 1 if window_step is None else max(window_step, 1)
    if results is not None and step > 1:
        return _stepped_start(messages[:end], turns, results, step)
    # Walking back from the end, whichever rule is satisfied first marks the
    # later of the two starts, which is the one that applies.
    seen_turns = seen_results = 0
    for i in range(end - 1, -1, -1):
        role = _role(messages[i])
        if role == "user":
            seen_turns += 1
            if seen_turns == turns:
                return i
        elif role == "tool" and results is not None:
            seen_results += 1
            if seen_results == results:
                return i
    return 0


def _stepped_start(messages: Sequence[Any], turns: int, results: int, step: int) -> int:
    """_protected_start with the tool-result rule quantized to multiples of ``step``.

    Two passes at most: one forward to find the tool results, one backward
    from the end to the tool rule's start, which is all the user rule needs
    to look at (a user message before it would start an earlier window, which
    loses to the later one anyway).
    """
    positions = _tool_results(messages, 0, len(messages))
    start = 0
    if len(positions) >= results:
        start = positions[(len(positions) - results) // step * step]
    seen_turns = 0
    for i in range(len(messages) - 1, start, -1):
        if _role(messages[i]) == "user":
            seen_turns += 1
            if seen_turns == turns:
                return i
    return start


def _ordered(order: Iterable[Any], candidates: list[int]) -> Iterator[int]:
    """Yield the message index of each valid, first-seen candidate index in ``order``."""
    seen: set[int] = set()
    for raw in order:
        if isinstance(raw, bool):
            continue
        try:
            k = operator.index(raw)
        except TypeError:
            continue
        if 0 <= k < len(candidates) and k not in seen:
            seen.add(k)
            yield candidates[k]


class CallIndex:
    """What each tool result answers, read in one forward pass that can go on where it stopped.

    ``names``: the tool behind each result (by message index): its own
    ``name``, else the nearest earlier assistant call with its
    ``tool_call_id`` (clients that reuse ids like ``call_0`` mean the latest
    one), else a generic name. ``arguments``: the raw arguments of the call
    a result answers, when one did. ``read``: how many leading messages are
    read; ``read_on`` reads on to ``stop``, so the next request of a
    conversation that only adds messages reads only those (pinch.carry).
    """

    def __init__(self) -> None:
        self.read = 0
        self.names: dict[int, str] = {}
        self.arguments: dict[int, str] = {}
        self._names_by_id: dict[str | int, str] = {}
        self._arguments_by_id: dict[Any, str] = {}

    def copy(self) -> CallIndex:
        other = CallIndex()
        other.read = self.read
        other.names, other.arguments = dict(self.names), dict(self.arguments)
        other._names_by_id = dict(self._names_by_id)
        other._arguments_by_id = dict(self._arguments_by_id)
        return other

    def read_on(self, messages: Sequence[Any], stop: int) -> CallIndex:
        for i in range(self.read, stop):
            message = messages[i]
            role = _role(message)
            if role == "tool":
                self.names[i] = _result_name(message, self._names_by_id)
                call_id = message.get("tool_call_id")
                if isinstance(call_id, (str, int)) and call_id in self._arguments_by_id:
                    self.arguments[i] = self._arguments_by_id[call_id]
            elif role == "assistant":
                calls = message.get("tool_calls")
                for call in calls or ():
                    if isinstance(call, dict) and isinstance(call.get("function"), dict):
                        arguments = call["function"].get("arguments")
                        if isinstance(call.get("id"), (str, int)) and isinstance(arguments, str):
                            self._arguments_by_id[call["id"]] = arguments
                if calls and isinstance(calls, list):
                    self._name_calls(calls)
        self.read = max(self.read, stop)
        return self

    def _name_calls(self, calls: list) -> None:
        for call in calls:
            # Malformed calls are skipped; a well-formed one is a dict all the way.
            try:
                call_id = call["id"]
                name = call["function"]["name"]
            except (TypeError, KeyError):
                continue
            if isinstance(call_id, (str, int)) and isinstance(name, str) and name:
                self._names_by_id[call_id] = name


def _tool_names(messages: Sequence[Any], wanted: list[int]) -> dict[int, str]:
    """The tool behind each wanted result (``CallIndex.names``), in one forward pass."""
    if not wanted:
        return {}
    names = CallIndex().read_on(messages, max(wanted) + 1).names
    return {i: names[i] for i in wanted}


def _result_name(message: dict, by_call_id: dict[str | int, str]) -> str:
    own = message.get("name")
    if isinstance(own, str) and own:
        return own
    call_id = message.get("tool_call_id")
    if isinstance(call_id, (str, int)):
        return by_call_id.get(call_id, _FALLBACK_TOOL_NAME)
    return _FALLBACK_TOOL_NAME


def _elide(text: str, max_chars: int) -> str:
    """Cut the middle out of ``text``: head, marker line, tail, at most ``max_chars`` long.

    Head and tail share the room evenly and are cut back (by at most half of
    each) to line boundaries, so a model reads whole lines on both sides of
    the gap. When ``max_chars`` is too small for anything but the marker, only
    the marker remains; callers keep the original if that is not shorter.
    """
    size = len(text)
    if size <= max_chars:
        return text
    # The count can't have more digits than the text's length has.
    reserve = len(_TRIM_MARKER.format(count=size)) + _MARKER_NEWLINES
    room = max(max_chars - reserve, 0)
    head_end = room - room // 2
    tail_start = size - room // 2
    if head_end > 0:
        newline = text.rfind("\n", head_end // 2, head_end + 1)
        if newline != -1:
            head_end = newline
    if tail_start < size:
        newline = text.find("\n", tail_start - 1, tail_start + (size - tail_start) // 2)
        if newline != -1:
            tail_start = newline + 1
    head = text[:head_end]
    tail = text[tail_start:]
    marker = _TRIM_MARKER.format(count=tail_start - head_end)
    return "\n".join(piece for piece in (head, marker, tail) if piece)
