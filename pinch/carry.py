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

"The same" is exact: the same JSON value, which Python's ``==`` tells apart
from any other but for numbers (1, 1.0 and true are equal to it). So a
message is compared with ``==`` (in C, a memcmp of its text) where the
previous request's had no number or boolean in it (``plain``: then ``==``
leaves no doubt), and through its fingerprint's parts
(``pinch.prefix.fingerprint_parts``: its canonical JSON, which tells them
apart) where it had. A changed message, and every one after it, is read
again, so the figures are those a fresh read gives, carried or not (the tests
replay conversations both ways). The comparison costs a few tens of us for
the 368 KB request, nearly all of it the memcmp of its texts (their canonical
JSON, message by message, cost 0.1 ms), where the figures it spares cost ten
times that. It holds because a parsed request
is a value: nothing changes its messages in place (what the router sends
differently is new objects, pinch's and local vision's).

What the planner derives per tool result (pinch.session.Session: its
compressed text, what compressing it saves, the tokens it mentions) depends
on the message, the messages before it (the call it answers, the tool's
name) and the knobs: it is carried for the leading messages that are the
same, while the knobs are. A walk over the messages that goes on from where
it stopped (routing's quality signals) keeps its state the same way
(``walked``).

What is sent for a request (pinch's payload) is its messages but for those
pinch rewrote, which are new objects each request though mostly what the
previous payload held: ``SentFacts`` takes a message's figures from the
request's facts where it is the very message read there, from the previous
payload's where it equals the message that held its place there.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from operator import is_not, ne
from typing import Any, NamedTuple

from pinch.core import CallIndex
from pinch.ledger import message_hash
from pinch.prefix import fingerprint, fingerprint_parts
from pinch.tokens import CHARS_PER_TOKEN, estimate_tokens, extract_text, message_tokens

# Past this depth a message is not called plain (it is compared through its canonical JSON):
# ``_plain`` stops there rather than recurse as deep as a body nests.
_PLAIN_DEPTH = 16


@dataclass(frozen=True)
class Carried:
    """What one request's facts keep for the conversation's next request."""

    # The request's messages, as parsed.
    messages: Sequence[Any]
    # Each figure read of every message ("tokens", "sizes", "plain", ...), by name.
    figures: dict[str, list]
    # The planner's per-result figures (pinch.session.Session) and the knobs they were
    # made under; None: no plan read them.
    derived: Derived | None = None
    # What each tool result answers, read to the request's end (None: not read).
    calls: CallIndex | None = None
    # Walks' states by name: (messages read, state) (``MessageFacts.walked``).
    walks: dict[str, tuple[int, Any]] = field(default_factory=dict)
    # The payload's messages that are not the request's (``SentFacts``); None: none read.
    sent: Rewrites | None = None
    # What the kept messages weigh, in characters (about): the caller's bound.
    chars: int = 0


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
            _before(self.compressed, stop),
            _before(self.savings, stop),
            _before(self.mentions, stop),
        )


def _before(figures: dict[int, Any], stop: int) -> dict[int, Any]:
    # Nearly always every one of them (the request repeats all the previous one read): a
    # copy in C then, not a comprehension.
    if not figures or max(figures) < stop:
        return dict(figures)
    return {i: v for i, v in figures.items() if i < stop}


class _Measures:
    """The two measures of a message a request's facts and its payload's both read, each
    through the class's ``figure``."""

    @property
    def tokens(self) -> list[int]:
        return self.figure("tokens", _tokens)

    @property
    def sizes(self) -> list[int]:
        return self.figure("sizes", _size)


class MessageFacts(_Measures):
    """Per message of one request, the figures its readers take of it, each read once.

    ``roles``: its role (None for no object); ``tokens``: pinch's estimate of
    its text (``estimate_tokens(extract_text(m))``); ``sizes``: every part the
    model is sent (``message_tokens``); ``hashes``: the ledger's
    (``message_hash``); ``fingerprints``: the prefix probe's; ``plain``: whether
    its scalars are all strings and nulls (``==`` then compares it exactly).
    Each is read when first asked for, the repeated messages' taken from
    ``previous`` (the conversation's last ``carried()``; None: read them all).
    ``digests``: the caller's memo of long texts' hashes (``pinch.digests``).
    """

    def __init__(self, messages: Sequence[Any], previous: Carried | None = None, digests=None):
        self.messages = messages
        self.derived: Derived | None = None
        self._previous = previous
        self._digests = digests
        self._repeated: int | None = None
        self._figures: dict[str, list] = {}
        self._calls: CallIndex | None = None
        self._walks: dict[str, tuple[int, Any]] = {}
        self._sent: SentFacts | None = None

    @property
    def repeated(self) -> int:
        """Leading messages that are the previous request's, exactly."""
        if self._repeated is None:
            previous = self._previous
            self._repeated = 0 if previous is None else _same_prefix(previous, self.messages)
        return self._repeated

    @property
    def roles(self) -> list:
        return self.figure("roles", lambda i, m: m.get("role") if isinstance(m, dict) else None)

    @property
    def hashes(self) -> list[str]:
        return self.figure("hashes", lambda i, m: message_hash(m, self._digests))

    @property
    def fingerprints(self) -> list[str]:
        return self.figure("fingerprints", self._fingerprint)

    @property
    def plain(self) -> list[bool]:
        return self.figure("plain", lambda i, m: _plain(m, _PLAIN_DEPTH))

    def _fingerprint(self, i: int, message: Any) -> str:
        return fingerprint(message, self._digests)

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

    def walked(self, name: str) -> tuple[int, Any] | None:
        """(messages read, state) of the previous request's walk ``name`` (``keep_walk``),
        when this request repeats every message it read; else None. The state is the
        previous request's: a walk that goes on from it goes on from a copy."""
        carried = self._previous.walks.get(name) if self._previous is not None else None
        if carried is not None and carried[0] <= self.repeated:
            return carried
        return None

    def keep_walk(self, name: str, read: int, state: Any) -> None:
        """A walk's state after reading the first ``read`` messages, for the next request;
        it must depend on those messages alone, and not be changed after."""
        self._walks[name] = (read, state)

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

    def sent(self, messages: Sequence[Any]) -> SentFacts:
        """The facts of what is sent for this request (``messages``: pinch's payload)."""
        if self._sent is None or self._sent.messages is not messages:
            previous = self._previous.sent if self._previous is not None else None
            self._sent = SentFacts(messages, self, previous)
        return self._sent

    def carried(self) -> Carried:
        """What the conversation's next request takes over."""
        self.plain  # noqa: B018 - read, so that the next request can compare with ==
        tokens = sum(self.sizes)
        sent = None
        if self._sent is not None and self._sent.changed:
            self._sent.sizes  # noqa: B018 - read first: carried with the rewrites, their weight
            sent = self._sent.carried()
            tokens += sum(sent.figures["sizes"])
        return Carried(
            self.messages,
            dict(self._figures),
            self.derived,
            self._calls,
            dict(self._walks),
            sent,
            CHARS_PER_TOKEN * tokens,
        )

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


class Rewrites(NamedTuple):
    """The messages of a request's payload that are not the request's (pinch's rewrites)."""

    at: dict[int, int]  # message index -> its place in the lists below
    messages: list
    plain: list[bool]  # as MessageFacts.plain
    figures: dict[str, list]  # each figure read of them, by name


class SentFacts(_Measures):
    """Per message of what is sent for a request, the figures ``MessageFacts`` reads.

    ``changed``: the indexes whose message is not the very one the request's
    facts read at that place (pinch's rewrites; one past the request's end too).
    A changed message equal to the one that held its place among the previous
    payload's (``previous``: ``Carried.sent``) takes its figures; any other is read.
    """

    def __init__(self, messages: Sequence[Any], facts: MessageFacts, previous: Rewrites | None):
        self.messages = messages
        # Weak: the facts keep their SentFacts (``MessageFacts.sent``), and a strong reference
        # back made a cycle that only the garbage collector freed, with the facts' figures
        # and the previous request's carried ones behind it: 35 containers a request at
        # 368 KB, held through gen2 passes of 20-70 ms of a served worker's CPU. A
        # SentFacts is read while its request's facts are.
        self._facts = weakref.proxy(facts)
        own = facts.messages
        if messages is own:  # pinch left the request as it was
            self.changed: list[int] = []
        else:
            changed = list(compress(count(), map(is_not, messages, own)))
            self.changed = changed + list(range(len(own), len(messages)))
        # The request's messages, every one of them: the request's figures serve.
        self._whole = not self.changed and len(messages) == len(own)
        self._previous = previous
        # Per changed message, the place of the equal one among the previous rewrites, or None.
        self._from: list[int | None] = [None] * len(self.changed)
        if previous is not None:
            for n, i in enumerate(self.changed):
                p = previous.at.get(i)
                if p is not None and _same(previous.messages[p], previous.plain[p], messages[i]):
                    self._from[n] = p
        self._figures: dict[str, list] = {}

    @property
    def fingerprints(self) -> list[str]:
        return self.figure("fingerprints", self._facts._fingerprint)

    def figure(self, name: str, read) -> list:
        """As ``MessageFacts.figure``: the request's figure, but for the changed messages."""
        found = self._figures.get(name)
        if found is None and self._whole:
            found = self._figures[name] = self._facts.figure(name, read)
        elif found is None:
            messages = self.messages
            found = self._facts.figure(name, read)[: len(messages)]
            found += [None] * (len(messages) - len(found))
            kept = self._previous.figures.get(name) if self._previous is not None else None
            for i, p in zip(self.changed, self._from):
                found[i] = read(i, messages[i]) if p is None or kept is None else kept[p]
            self._figures[name] = found
        return found

    def carried(self) -> Rewrites:
        """The changed messages and their figures, for the next request's payload."""
        changed, messages = self.changed, self.messages
        previous = self._previous
        return Rewrites(
            {i: n for n, i in enumerate(changed)},
            [messages[i] for i in changed],
            [
                _plain(messages[i], _PLAIN_DEPTH) if p is None else previous.plain[p]
                for i, p in zip(changed, self._from)
            ],
            {name: [found[i] for i in changed] for name, found in self._figures.items()},
        )


def _tokens(i: int, message: Any) -> int:
    return estimate_tokens(extract_text(message))


def _size(i: int, message: Any) -> int:
    return message_tokens(message)


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value``'s scalars are all strings and nulls (and it nests no deeper than
    ``depth``): a JSON value equal (``==``) to such a one is the very same value."""
    if isinstance(value, str) or value is None:
        return True
    if depth <= 0:
        return False
    if isinstance(value, dict):
        return all(_plain(v, depth - 1) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v, depth - 1) for v in value)
    return False


def _same(before: Any, plain: bool, now: Any) -> bool:
    """Whether ``now`` is exactly the JSON value ``before`` (``plain``: ``_plain(before)``)."""
    if plain:
        return before == now
    return fingerprint_parts(before) == fingerprint_parts(now)


def _same_prefix(previous: Carried, messages: Sequence[Any]) -> int:
    """How many leading ``messages`` are exactly ``previous.messages``'."""
    before = previous.messages
    try:
        # == in C first, to the first message that differs; then those of them it
        # could take for equal wrongly (not plain) are compared exactly.
        same = next(compress(count(), map(ne, before, messages)), min(len(before), len(messages)))
    except RecursionError:  # nested deeper than C's == goes: read afresh
        return 0
    plain = previous.figures["plain"]
    start = 0
    while True:
        try:
            odd = plain.index(False, start, same)
        except ValueError:
            return same
        if not _same(before[odd], False, messages[odd]):
            return odd
        start = odd + 1
