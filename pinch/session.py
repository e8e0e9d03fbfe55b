"""One conversation as the payback planner reads it (pinch/payback.py): its knobs, and per
message what every step evaluation needs, computed once (token counts, tool results and
their names, hashes, compressed and capped texts through the caller's memo).

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from itertools import accumulate
from typing import Any

from pinch.carry import MessageFacts
from pinch.core import _PLACEHOLDER
from pinch.lines import cap_lines, compress_lines, decoded_arguments, mentioned_tokens, named_tokens
from pinch.recall import handle_for, noted
from pinch.steps import CacheModel
from pinch.tokens import estimate_tokens, extract_text

# The name the session's figure of each message's text length is carried by (pinch.carry).
CHARS = "payback.chars"


@dataclass(frozen=True)
class PaybackKnobs:
    """The knobs of ``plan``, each the config key of its name (routing/config/schema.py).

    No defaults here: the config schema holds the one default of each knob, and
    ``routing.pruning.payback_knobs`` builds these from it.
    """

    budget_tokens: int
    keep_last_turns: int
    keep_last_tool_results: int | None
    max_summarize_chars: int
    protected_max_chars: int | None
    turns_ahead: float
    min_payback: float
    keep_max_chars: int
    keep_min_shared: int
    names_max_chars: int
    names_share: float
    lines_max_chars: int | None
    max_loss_share: float
    settle_turns: int


@dataclass
class Session:
    """One conversation's messages with what every step evaluation needs, computed once."""

    messages: Sequence[Any]
    knobs: PaybackKnobs
    cache: CacheModel
    extra_fixed_tokens: int
    memo: Any = None
    # Results the model needed back (their message indexes): sent whole from now
    # on, and kept when they are decided (docs/pinch.md, "Recall").
    recalled: frozenset[int] = frozenset()
    # Each result pinch shortens carries its recall note (pinch/recall.py): what
    # compressing it saves is net of the note's tokens.
    notes: bool = False
    # The caller's memo of long texts' hashes, carried from request to request
    # (pinch.digests.hex_digest): the hashes are the same without it.
    digests: Any = None
    # The request's pinch.carry.MessageFacts: its figures per message, the planner's
    # own carried from the conversation's previous request (None: each read here).
    facts: Any = None
    tokens: list[int] = field(default_factory=list)
    leading: list[int] = field(default_factory=list)
    results: list[int] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)
    compressed: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Each message's role, token estimate and hash (role and text, for the ledger's
        # digest and the memo's keys: no JSON) from the request's facts, carried from the
        # conversation's previous request where it repeats it.
        facts = self.facts
        if facts is None or facts.messages is not self.messages:
            facts = MessageFacts(self.messages, digests=self.digests)
        self.tokens, self.hashes, roles = facts.tokens, facts.hashes, facts.roles
        # Each text's length: what the payload compares a shorter one with.
        self.chars = facts.figure(CHARS, lambda i, m: len(extract_text(m)))
        self.users = [t for t, role in enumerate(roles) if role == "user"]
        self.assistants = [t for t, role in enumerate(roles) if role == "assistant" and t]
        self.results = [t for t, role in enumerate(roles) if role == "tool"]
        self.leading = list(accumulate(self.tokens, initial=0))
        # Only tool results are ever sent whole again: an index from an edited history is not.
        self.recalled = frozenset(self.recalled).intersection(self.results)
        calls = facts.calls()
        self.names, self.calls = calls.names, calls.arguments
        knobs = self.knobs
        self._sizes = f"{knobs.names_max_chars}:{knobs.names_share}:{knobs.lines_max_chars}"
        derived = facts.derived_for((knobs, self.notes))
        self.compressed, self._savings, self._mentions = (
            derived.compressed,
            derived.savings,
            derived.mentions,
        )
        self.removed_at = (0, 0)  # (results decided, the tokens their compressions removed)

    def whole(self, kept) -> set[int]:
        """The results sent whole: those kept, and the recalled ones."""
        return set(kept) | self.recalled

    def mentions(self, i: int) -> set[str]:
        """The distinctive tokens message ``i`` uses (text, and tool-call arguments)."""
        found = self._mentions.get(i)
        if found is None:
            found = self._mentions[i] = mentioned_tokens(self.messages[i])
        return found

    def saving(self, i: int) -> int:
        """Tokens compressing result ``i`` takes out, its recall note counted (0 when what
        would be sent in its place is no shorter)."""
        if i not in self._savings:
            sent = self.compress(i)
            if self.notes and len(sent) < self.chars[i]:
                sent = noted(sent, handle_for(i))
            # self.tokens[i] is the whole text's estimate, made once per session.
            self._savings[i] = max(self.tokens[i] - estimate_tokens(sent), 0)
        return self._savings[i]

    def total(self, length: int) -> int:
        return self.leading[length] + self.extra_fixed_tokens

    def compress(self, i: int) -> str:
        """The compressed text of result ``i``: a pure function of its text and call."""
        found = self.compressed.get(i)
        if found is not None:
            return found
        text = extract_text(self.messages[i])
        key = None
        raw_call, name = self.calls.get(i, ""), self.names.get(i, "tool")
        limit = self.knobs.max_summarize_chars
        if self.memo is not None:
            key = _memo_key(self.hashes[i], raw_call, name, limit, self._sizes)
            found = self.memo.get(key)
        if found is None:
            asked = decoded_arguments(raw_call) if raw_call else ""
            # As prune_context: a long result keeps half of max_summarize_chars
            # (its most useful lines here), a short one becomes a placeholder.
            room = self.knobs.lines_max_chars or limit // 2
            found = compress_lines(text, room, asked) if len(text) > limit else ""
            # A long result holds more names than a short one: its room grows with it.
            room = max(self.knobs.names_max_chars, int(self.knobs.names_share * len(text)))
            names = named_tokens(text, found, room)
            if not found.strip():
                found = _PLACEHOLDER.format(name=name)
                if names:
                    found = f"{found[:-1]}; it named: {names}]"
            elif names:
                found = f"{found}\n[the trimmed text named: {names}]"
            if len(found) >= len(text):
                found = text
            if key is not None:
                self.memo[key] = found
        self.compressed[i] = found
        return found

    def capped(self, i: int, max_chars: int) -> str:
        """Result ``i`` cut to ``max_chars`` by ``pinch.lines.cap_lines``: plainest pieces first."""
        raw_call = self.calls.get(i, "")
        key = _memo_key(self.hashes[i], raw_call, "", max_chars, "cap")
        found = None if self.memo is None else self.memo.get(key)
        if found is None:
            asked = decoded_arguments(raw_call) if raw_call else ""
            found = cap_lines(extract_text(self.messages[i]), max_chars, asked)
            if self.memo is not None:
                self.memo[key] = found
        return found


def _memo_key(text_hash: str, raw_call: str, name: str, limit: int, sizes: str) -> str:
    digest = blake2b(digest_size=16)
    for part in (text_hash, raw_call, name, str(limit), sizes):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()
