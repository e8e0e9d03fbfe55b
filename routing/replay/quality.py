"""The quality signals on recorded sessions: what pinch's compression met in the real agent's work.

The corpus agents ran without pinch, so what they did next is their natural
behaviour. Replayed, each request's payload says which results pinch would
have compressed (``routing.replay.sessions``'s records), and the agent's next message
says whether it asked for one of them again anyway: the exposure. A real
agent that repeats a call whose result pinch compressed would, behind the
router, have needed it; a high exposure means pinch compresses what agents
come back to. Beside it the natural rate: the same repeats of results seen
whole, and, with nothing compressed, of every result (pinch off).

Per request, ``routing.quality.request_signals`` (the function the live path
calls) with the indexes the agent's previous request had compressed: what
it saw when it wrote its newest message. No Django, no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from routing.quality import RequestSignals, newest_agent_message, request_signals, stopped_mid_loop
from routing.replay.corpus import Session
from routing.replay.totals import ReplayResult, add_fields

_SUMMED = (
    "sessions",
    "requests",
    "refetches",
    "compressed_seen",
    "whole_repeats",
    "whole_seen",
    "natural_repeats",
    "natural_seen",
    "results_after_prune",
    "errors_after_prune",
    "results_otherwise",
    "errors_otherwise",
    "stopped_mid_loop",
    "recalls",
)


@dataclass
class FamilyQuality:
    """One agent family's signals (or one session's, or the total)."""

    name: str
    sessions: int = 0
    requests: int = 0
    refetches: int = 0  # repeats of a call whose result the payload had compressed
    compressed_seen: int = 0
    whole_repeats: int = 0  # the same, of results the payload had whole
    whole_seen: int = 0
    natural_repeats: int = 0  # pinch off: repeats of any earlier call
    natural_seen: int = 0
    results_after_prune: int = 0
    errors_after_prune: int = 0
    results_otherwise: int = 0
    errors_otherwise: int = 0
    stopped_mid_loop: int = 0
    recalls: int = 0  # what the agent would have recalled (routing.replay.recalls)
    turns_per_task: list[int] = field(default_factory=list)

    def add(self, pinched: RequestSignals, natural: RequestSignals) -> None:
        self.requests += 1
        self.refetches += pinched.repeats_compressed
        self.compressed_seen += pinched.seen_compressed
        self.whole_repeats += pinched.repeats_whole
        self.whole_seen += pinched.seen_whole
        self.natural_repeats += natural.repeats_whole
        self.natural_seen += natural.seen_whole
        if pinched.seen_compressed:
            self.results_after_prune += pinched.results
            self.errors_after_prune += pinched.errors
        else:
            self.results_otherwise += pinched.results
            self.errors_otherwise += pinched.errors

    def merge(self, other: FamilyQuality) -> None:
        add_fields(self, other, _SUMMED)
        self.turns_per_task.extend(other.turns_per_task)


def session_quality(session: Session, compressed_at: dict[int, list[int]]) -> FamilyQuality:
    """One session's signals; ``compressed_at[t]``: what the request before turn t compressed."""
    quality = FamilyQuality(session.name, sessions=1)
    tasks = Counter()
    for t in session.turns():
        request = session.messages[:t]
        newest = newest_agent_message(request)
        seen = compressed_at.get(newest, ()) if newest is not None else ()
        pinched = request_signals(request, seen)
        quality.add(pinched, request_signals(request) if seen else pinched)
        tasks[pinched.task] += 1
    quality.turns_per_task = list(tasks.values())
    quality.stopped_mid_loop = int(stopped_mid_loop(session.messages))
    return quality


def replay_quality(sessions: list[Session], result: ReplayResult) -> list[FamilyQuality]:
    """Per agent family, in the order first met, then the total (named "total")."""
    compressed: dict[str, dict[int, list[int]]] = {}
    recalls: Counter = Counter()
    for record in result.records:
        compressed.setdefault(record.conversation, {})[record.turn] = [
            *record.compressed,
            *record.capped,
        ]
        recalls[record.conversation] += record.recalls
    families: dict[str, FamilyQuality] = {}
    total = FamilyQuality("total")
    for session in sessions:
        quality = session_quality(session, compressed.get(session.name, {}))
        quality.recalls = recalls[session.name]
        families.setdefault(session.family, FamilyQuality(session.family)).merge(quality)
        total.merge(quality)
    return [*families.values(), total]
