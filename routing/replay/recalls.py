"""What one recall brings back on a replayed request, and what the round trip costs.

The replay counts a reference as lost when the agent's next message uses a
token its context held only in tool results and the payload pinch sent no
longer holds it (``routing.replay.sessions``). With recall on, every result
pinch compressed or capped names a handle (pinch/recall.py), and the model
can ask the router for the whole result (routing/recall/). A lost reference
is **recallable** when one of those results holds it in its original text:
a single recall of that result brings it back.

The replay assumes an agent recalls exactly what it needed, no more: for
each recallable reference the newest changed result that held it, one recall
per result however many references it brings back. That prices recall as
the agent that does not guess would use it; an agent that recalls what it
did not need pays more, one that guesses right pays nothing.

A recall is a round trip: the router answers the model's call itself and
asks the upstream again with the payload, now read from the cache, plus the
call and the recalled text, written. A second recall on the same request
reads the first one too. Only prompts are priced, as everywhere in the
replay (the model's few tokens of call are left out).
"""

from __future__ import annotations

from dataclasses import dataclass

from pinch import estimate_tokens
from pinch.recall import CALL_TOKENS, round_trips

__all__ = ["CALL_TOKENS", "NONE", "Recalls", "recalls_for", "store_bytes"]


@dataclass(frozen=True)
class Recalls:
    """One request's recalls: what they bring back and the round trips' prompt split."""

    recallable: int = 0  # lost references that one recall brings back
    handles: tuple[str, ...] = ()  # the results recalled, newest first
    recalled_tokens: int = 0  # the originals' estimated tokens
    cached_tokens: int = 0  # read: the payload (and earlier recalls) again, per round trip
    uncached_tokens: int = 0  # written: each call and the text it brought back


NONE = Recalls()


def recalls_for(lost: list[str], recallable: dict[str, str], payload_tokens: int) -> Recalls:
    """The recalls that bring back what ``lost`` names (see the module docstring).

    ``recallable``: the payload's handles and the originals behind them
    (PinchOutcome.recallable); ``payload_tokens``: what the request sent,
    tool definitions included, that each round trip sends again.
    """
    if not lost or not recallable:
        return NONE
    # Newest first (pinch names them in message order): the latest result that held
    # a name is the one the agent last read it in.
    newest_first = list(reversed(recallable))
    chosen: list[str] = []
    brought_back = 0
    for token in lost:
        holder = next((h for h in newest_first if token in recallable[h]), None)
        if holder is None:
            continue
        brought_back += 1
        if holder not in chosen:
            chosen.append(holder)
    if not chosen:
        return NONE
    sizes = [estimate_tokens(recallable[handle]) for handle in chosen]
    cached, uncached = round_trips(payload_tokens, sizes)
    return Recalls(brought_back, tuple(chosen), sum(sizes), cached, uncached)


def store_bytes(recallable: dict[str, str]) -> dict[str, int]:
    """Each handle's original in UTF-8 bytes, as the recall store keeps it."""
    return {handle: len(text.encode()) for handle, text in recallable.items()}
