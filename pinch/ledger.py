"""What pinch has decided for one conversation, in a form a store can keep (pinch/payback.py).

A few integers per conversation: which tool results are decided, which were
kept, where the steps and the cold requests were, what pinch has saved the
conversation so far, a digest of the messages it covers and when its last
request was planned. The router keeps it beside
the prefix probe's hashes (memory, or Redis); anything it cannot read is
absent, and the decisions are rebuilt from the messages to the same result.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Ledger:
    """What has been decided for one conversation, up to request length ``length``.

    ``decided`` tool results (in conversation order) have their fate; those in
    ``kept`` stay verbatim for good, the others are compressed. ``steps`` are
    the request lengths at which a step was taken, ``cold`` those that came
    after a gap longer than the cache's lifetime (the one input to the
    decisions the messages do not hold). ``earned``: what pinch has saved
    this conversation on its requests so far, against sending each whole, in
    input-price tokens under the cache prices it was planned by (the most a
    step staked on later turns may risk: pinch/steps.py). ``digest`` covers the messages the
    ledger was built on, so an edited history is not trusted. ``at``: when
    the request at ``length`` was planned (the caller's clock, seconds), so
    the next one knows its gap.
    """

    length: int = 0
    decided: int = 0
    kept: tuple[int, ...] = ()
    steps: tuple[int, ...] = ()
    digest: str = ""
    cold: tuple[int, ...] = ()
    at: float = 0.0
    earned: float = 0.0

    def as_json(self) -> str:
        return json.dumps(
            [
                self.length,
                self.decided,
                list(self.kept),
                list(self.steps),
                self.digest,
                list(self.cold),
                self.at,
                self.earned,
            ],
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: str | bytes | None) -> Ledger | None:
        """The ledger in ``raw``, or None for anything unreadable (then it is rebuilt)."""
        if not raw:
            return None
        try:
            length, decided, kept, steps, digest, cold, at, earned = json.loads(raw)
            ledger = cls(int(length), int(decided), tuple(map(int, kept)), tuple(map(int, steps)))
            cold, at, earned = tuple(map(int, cold)), float(at), float(earned)
            if not math.isfinite(earned):
                return None
            return replace(ledger, digest=str(digest), cold=cold, at=at, earned=earned)
        except (TypeError, ValueError):
            return None
