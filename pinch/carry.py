"""A request's messages read once each, and what the conversation's previous request read of
the same messages carried over instead of read again.

An agent's request repeats the one before it but for its last few messages,
and every reader of a message (pinch's token estimate, the router's measure
of the prompt, the ledger's hash, the prefix probe's fingerprint, what the
payback planner makes of a tool result) finds the same figure in it as it
did a turn ago. Read afresh, they grew with the conversation: on corpus
session 026's 368 KB request the hashes, the measure and the planner's
per-message figures took about 1 ms of the request's own time, for two new
messages. ``MessageFacts`` reads each message once, and takes over what the
previous request's facts (``Carried``, which the caller keeps per
conversation, bounded) read of each leading message that is the same.

"The same" is exact: a message is its fingerprint's parts
(``pinch.prefix.fingerprint_parts``: its canonical JSON, which tells 1, 1.0
and true apart where Python's ``==`` does not, and its text), compared
byte for byte. A changed message, and every one after it, is read again,
so the figures are those a fresh read gives, carried or not (the tests
replay conversations both ways). The comparison costs one canonical JSON of
each message's small fields and a memcmp of its text: about 0.1 ms for the
368 KB request, where the figures it spares cost ten times that.

What the planner derives per tool result (pinch.session.Session: its
compressed text, what compressing it saves, the tokens it mentions) depends
on the message, the messages before it (the call it answers, the tool's
name) and the knobs: it is carried for the leading messages that are the
same, while the knobs are.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pinch.core import CallIndex
from pinch.digests import hex_digest
from pinch.ledger import message_hash
from pinch.prefix import common_prefix_length, fingerprint_parts
from pinch.tokens import estimate_tokens, extract_text, message_tokens


@dataclass(frozen=True)
class Carried:
    """What one request's facts keep for the conversation's next request (no messages)."""

    parts: list[tuple[bytes, str]]
    # Each figure read of every message ("tokens", "sizes", ...), by name.
    figures: dict[str, list]
    # The planner's per-result figures (pinch.session.Session) and the knobs they were
    # made under; None: no plan read them.
    derived: Derived | None = None
    # What each tool result answers, read to the request's end (None: not read).
    calls: CallIndex | None = None

    @property
    def chars(self) -> int:
        """What the kept texts and fields weigh, in characters: the caller's bound."""
        return sum(len(head) + len(text) for head, text in self.parts)


@dataclass
class Derived:
    """The payback planner's figures per tool result, by message index, under ``knobs``."""

    knobs: Any
    compressed: dict[int, str] = field(default_factory=dict)
    savings: dict[int, int] = field(default_factory=dict)
    mentions: dict[int, set[str]] = field(default_factory=dict)

    def before(self, stop: int) -> Derived:
        """A copy holding the figures of the messages before ``stop``."""
        return Derived(
            self.knobs,
            {i: v for i, v in self.compressed.items() if i < stop},
            {i: v for i, v in self.savings.items() if i < stop},
            {i: v for i, v in self.mentions.items() if i < stop},
        )


class MessageFacts:
    """Per message of one request, the figures its readers take of it, each read once.

    ``roles``: its role (None for no object); ``tokens``: pinch's estimate of
    its text (``estimate_tokens(extract_text(m))``); ``sizes``: every part the
    model is sent (``message_tokens``); ``hashes``: the ledger's
    (``message_hash``); ``fingerprints``: the prefix probe's.
    Each is read when first asked for, the repeated messages' taken from
    ``previous`` (the conversation's last ``carried()``; None: read them all).
    ``digests``: the caller's memo of long texts' hashes (``pinch.digests``).
    """

    def __init__(self, messages: Sequence[Any], previous: Carried | None = None, digests=None):
        self.messages = messages
        self.derived: Derived | None = None
        self._previous = previous
        self._digests = digests
        self._parts: list[tuple[bytes, str]] | None = None
        self._repeated: int | None = None
        self._figures: dict[str, list] = {}
        self._calls: CallIndex | None = None

    @property
    def parts(self) -> list[tuple[bytes, str]]:
        """Each message's identity: ``pinch.prefix.fingerprint_parts``."""
        if self._parts is None:
            self._parts = [fingerprint_parts(message) for message in self.messages]
        return self._parts

    @property
    def repeated(self) -> int:
        """Leading messages that are the previous request's, exactly."""
        if self._repeated is None:
            previous = self._previous
            same = 0 if previous is None else common_prefix_length(previous.parts, self.parts)
            self._repeated = same
        return self._repeated

    @property
    def roles(self) -> list:
        return self.figure("roles", lambda i, m: m.get("role") if isinstance(m, dict) else None)

    @property
    def tokens(self) -> list[int]:
        return self.figure("tokens", lambda i, m: estimate_tokens(extract_text(m)))

    @property
    def sizes(self) -> list[int]:
        return self.figure("sizes", lambda i, m: message_tokens(m))

    @property
    def hashes(self) -> list[str]:
        return self.figure("hashes", lambda i, m: message_hash(m, self._digests))

    @property
    def fingerprints(self) -> list[str]:
        parts = self.parts
        return self.figure("fingerprints", lambda i, m: hex_digest(*parts[i], memo=self._digests))

    def calls(self) -> CallIndex:
        """What each tool result answers (``pinch.core.CallIndex``), read on from where the
        previous request's reading stopped when this one repeats all it read."""
        if self._calls is None:
            carried = self._previous.calls if self._previous is not None else None
            if carried is not None and carried.read <= self.repeated:
                index = carried.copy()
            else:
                index = CallIndex()
            self._calls = index.read_on(self.messages, len(self.messages))
        return self._calls

    def derived_for(self, knobs: Any) -> Derived:
        """The planner's figures carried for the repeated messages under ``knobs`` (none
        when the knobs changed since), for the planner to add to."""
        if self.derived is None or self.derived.knobs != knobs:
            carried = self._previous.derived if self._previous is not None else None
            if carried is not None and carried.knobs == knobs:
                self.derived = carried.before(self.repeated)
            else:
                self.derived = Derived(knobs)
        return self.derived

    def carried(self) -> Carried:
        """What the conversation's next request takes over."""
        return Carried(self.parts, dict(self._figures), self.derived, self._calls)

    def figure(self, name: str, read) -> list:
        """``read(i, message)`` of every message, carried by ``name`` for the repeated ones: a
        reader outside pinch (routing's) keeps its own figure of a message so. ``read``
        must depend on the message alone."""
        found = self._figures.get(name)
        if found is None:
            previous = self._previous.figures.get(name) if self._previous is not None else None
            found = previous[: self.repeated] if previous else []
            messages = self.messages
            found += [read(i, messages[i]) for i in range(len(found), len(messages))]
            self._figures[name] = found
        return found
