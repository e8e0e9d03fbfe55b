"""What pinch has decided for one conversation, in a form a store can keep (pinch/payback.py).

A few numbers per conversation: which tool results are decided, which were
kept, where the steps and the cold requests were, what pinch has saved the
conversation so far and what it would have cost without pinch, a digest of
the messages it covers and when its last request was planned. The router
keeps it beside the prefix probe's hashes (memory, or Redis) and on each
decision row, which every worker reads; anything it cannot read is absent,
and the decisions are rebuilt from the messages to the same result.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from hashlib import blake2b
from typing import Any

from pinch.digests import hex_digest
from pinch.tokens import extract_text


@dataclass(frozen=True)
class Ledger:
    """What has been decided for one conversation, up to request length ``length``.

    ``decided`` tool results (in conversation order) have their fate; those in
    ``kept`` stay verbatim for good, the others are compressed. ``steps`` are
    the request lengths at which a step was taken, ``cold`` those that came
    after a gap longer than the cache's lifetime (the one input to the
    decisions the messages do not hold). ``earned``: what pinch has saved
    this conversation on its requests so far, against sending each whole, in
    input-price tokens under the cache prices it was planned by (what a step
    staked on later turns may risk: pinch/steps.py); ``baseline``: what the
    same requests would have cost sent whole, in the same units (the share of
    it a conversation may run over: ``max_loss_share``). ``digest`` covers the
    messages the ledger was built on, so an edited history is not trusted.
    ``at``: when the request at ``length`` was planned (the caller's clock,
    seconds), so the next one knows its gap. ``recall_cost``: what the model's
    recalls of what pinch took out have cost the conversation (their round
    trips, in the same units; ``pinch.payback.book_recalls``): pinch's
    doing too, so it comes off what pinch has saved, and like ``cold`` it is
    an input the messages do not hold, kept when the rest is rebuilt.
    """

    length: int = 0
    decided: int = 0
    kept: tuple[int, ...] = ()
    steps: tuple[int, ...] = ()
    digest: str = ""
    cold: tuple[int, ...] = ()
    at: float = 0.0
    earned: float = 0.0
    baseline: float = 0.0
    recall_cost: float = 0.0

    def as_json(self) -> str:
        return _ENCODER.encode(
            (
                self.length,
                self.decided,
                self.kept,
                self.steps,
                self.digest,
                self.cold,
                self.at,
                self.earned,
                self.baseline,
                self.recall_cost,
            )
        )

    @classmethod
    def from_json(cls, raw: str | bytes | None) -> Ledger | None:
        """The ledger in ``raw``, or None for anything unreadable (then it is rebuilt)."""
        if not raw:
            return None
        try:
            length, decided, kept, steps, digest, cold, at, *costs = json.loads(raw)
            earned, baseline, recall_cost = map(float, costs)
            if not all(map(math.isfinite, (earned, baseline, recall_cost))):
                return None
            return cls(
                int(length),
                int(decided),
                tuple(map(int, kept)),
                tuple(map(int, steps)),
                str(digest),
                tuple(map(int, cold)),
                float(at),
                earned,
                baseline,
                recall_cost,
            )
        except (TypeError, ValueError):
            return None

    def updated(self, **changes: Any) -> Ledger:
        """This ledger with ``changes`` (field name -> value), as ``dataclasses.replace``
        makes it: a Ledger has no ``__post_init__`` and every field is an init field, so a
        copy of its fields does, without replace's walk over them (~4 us a call, and the
        planner takes several a request)."""
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"Ledger has no field {sorted(unknown)[0]!r}")
        ledger = object.__new__(Ledger)
        ledger.__dict__.update(self.__dict__, **changes)
        return ledger

    def as_parsed(self) -> Ledger:
        """This ledger as ``from_json(self.as_json())`` gives it back, without the JSON: its
        clock and costs as floats (an integer there reads back as one)."""
        return self.updated(
            at=float(self.at),
            earned=float(self.earned),
            baseline=float(self.baseline),
            recall_cost=float(self.recall_cost),
        )


_FIELDS = frozenset(field.name for field in fields(Ledger))
# Compact, as the stores and rows keep it; built once (json.dumps with separators builds
# one a call). Its tuples are JSON arrays, as lists are.
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def messages_digest(fingerprints: Sequence[str]) -> str:
    """The digest a ledger keeps of the messages it covers: their ``message_hash``es, in order.

    Hashed joined, in one pass: blake2b of the concatenation is that of its parts fed one
    by one, which took a call and an encode per message."""
    return blake2b("".join(fingerprints).encode(), digest_size=16).hexdigest()


def message_hash(message: Any, memo: Any = None) -> str:
    """A short hash of a message's role, text and tool calls (ids, names, arguments).

    ``memo``: the caller's, carrying long texts' hashes from request to
    request (``pinch.digests.hex_digest``); the hash is the same without it.
    """
    head = str(message.get("role") if isinstance(message, dict) else None).encode() + b"\0"
    tail = []
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            for part in (call.get("id"), function.get("name"), function.get("arguments")):
                tail.append(b"\0" + str(part).encode("utf-8", "surrogatepass"))
    if isinstance(message, dict) and message.get("tool_call_id") is not None:
        tail.append(b"\0" + str(message["tool_call_id"]).encode("utf-8", "surrogatepass"))
    return hex_digest(head, extract_text(message), b"".join(tail), memo)
