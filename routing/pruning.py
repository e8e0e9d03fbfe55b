"""Pinch at the request edge: the payback steps, or the budget prune with its relevance order.

Called exactly once per request, before the measured-context decision, so the
pruned list is what is measured and what is sent. With pinch off this returns
the caller's own list, and the payload goes upstream exactly as received.

With ``pinch.payback.enabled`` (the default) the pure ``pinch.payback.plan``
decides, under the cache prices of the model the request goes to, with the
conversation's ledger from the prefix probe's store (memory, or Redis), or
from the conversation's row when another worker served it since
(``LedgerSlot``); the ledger also holds when the conversation's last request
was, so a request after a gap longer than the model's cache lifetime is
planned cold. Any failure there logs ``pinch_payback_failed`` and sends the
caller's messages unchanged: pinch never breaks a request. Otherwise ``prune_context`` prunes to
the budget, least relevant first when relevance ordering is on.
"""

import logging
import threading
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from django.conf import settings

from pinch import estimate_tokens, extract_text, next_step_start, prune_context
from pinch.carry import MessageFacts
from pinch.payback import CacheModel, Ledger, PaybackKnobs, plan
from pinch.recall import handle_for, with_handles
from pinch.relevance import relevance_for
from routing.config import PinchConfig
from routing.conversation_state import read_back
from routing.embedding_tier import shared_embedding_tier
from routing.models import tokens_saved
from routing.prefix_probe import MAX_CONVERSATIONS, digests

log = logging.getLogger(__name__)

# Compressed texts kept per process: a result compresses to the same text on
# every turn, and a long session has a few hundred of them. Each is at most
# max_summarize_chars / 2 characters: 10,000 of them stay under ~20 MB.
MEMO_ITEMS = 10_000


@dataclass(frozen=True)
class PinchOutcome:
    original_tokens: int
    final_tokens: int
    summarized: int
    compressed: list = field(default_factory=list)
    capped: list = field(default_factory=list)
    compressed_tools: dict = field(default_factory=dict)
    relevance_used: bool = False
    relevance_fallback: bool = False
    step: bool = False
    # The payback plan's (this turn's, the last turn's) stable prefix; None: the budget prune's.
    stable: tuple[int, int] | None = None
    # The conversation's previous request was longer ago than the cache keeps
    # a prefix (None: unknown, no earlier request in the ledger's store).
    cold: bool | None = None
    # The conversation's ledger after this request (Ledger.as_json), for its row.
    ledger: str = ""
    # What pinch took out of this request's payload that the model may recall
    # (routing/recall/): the handle named in the result's place -> the original text.
    recallable: dict = field(default_factory=dict)
    # Of those, the ones the request before did not carry the same way: what the
    # recall store has yet to keep (routing/recall/keeping.py).
    to_store: dict = field(default_factory=dict)

    @classmethod
    def from_stats(cls, stats: dict, noted: int = 0, **fields) -> "PinchOutcome":
        """The outcome of a prune from the pure core's stats (prune_context's, or plan's);
        ``noted``: tokens the recall notes add to its payload (``_recallable``)."""
        return cls(
            original_tokens=stats["original_tokens"],
            final_tokens=stats["final_tokens"] + noted,
            summarized=stats.get("summarized", 0),
            compressed=stats.get("compressed", []),
            capped=stats.get("capped", []),
            compressed_tools=stats.get("compressed_tools", {}),
            **fields,
        )

    @property
    def tokens_saved(self) -> int:
        return tokens_saved(self.original_tokens, self.final_tokens)


class BoundedMemo:
    """A thread-safe mapping that forgets its oldest entries past ``max_items``."""

    def __init__(self, max_items: int = MEMO_ITEMS):
        self.max_items = max_items
        self._items = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            return self._items.get(key)

    def __setitem__(self, key, value):
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self):
        with self._lock:
            self._items.clear()


_memo = BoundedMemo()
# The ledger each conversation's last request here saved, by its slot's key: (its JSON, the
# ledger that JSON reads back as), for as many conversations as the probe's store keeps.
_ledgers = BoundedMemo(MAX_CONVERSATIONS)


@dataclass(frozen=True)
class LedgerSlot:
    """Where one conversation's ledger lives: a store (the prefix probe's) and its key.

    ``recorded(key)``: the ledger on the conversation's row
    (routing.conversation_state.RecordedState; None in a replay, which has no rows).
    ``recalled(key, lengths)``: the conversation's results pinch sends whole because the
    model recalled them (routing.recall.store.restored; ``lengths``: this request's
    ``turn_lengths``; None: none).
    """

    store: object
    key: str
    recorded: Callable[[str], str | None] | None = None
    recalled: Callable[[str, tuple[int, int]], frozenset[int]] | None = None

    def load(self, messages) -> Ledger | None:
        """The ledger before ``messages``: the store's while it was saved by the request just
        before, or by this same one (a retry); else the later of it and the recorded one, so
        that every worker knows the cold requests and the clock (routing.conversation_state)."""
        raw = self.store.load_ledger(self.key)
        held = _ledgers.get(self.key)
        # The store gives back the text this process saved (or Redis a copy of it) while
        # no other worker saved the conversation's since: its ledger is not parsed again.
        stored = held[1] if held is not None and held[0] == raw else Ledger.from_json(raw)
        follows = stored is not None and stored.length in turn_lengths(messages)
        return read_back(stored, follows, self.recorded, self.key, Ledger.from_json)

    def save(self, ledger: Ledger) -> str:
        """Keep ``ledger`` in the store; its JSON, for the conversation's row."""
        raw = ledger.as_json()
        self.store.save_ledger(self.key, raw)
        _ledgers[self.key] = (raw, ledger.as_parsed())
        return raw


def previous_request_length(messages) -> int:
    """The length of the conversation's previous request: up to its last answer (0: none)."""
    return next(
        (t for t in range(len(messages) - 1, 0, -1) if _role(messages[t]) == "assistant"), 0
    )


def turn_lengths(messages) -> tuple[int, int]:
    """The lengths that state saved for this conversation has when the request just before
    saved it, or this same one (a retry): then no other worker served the conversation since.
    Pinch removes no message, so a payload is as long as its request."""
    return previous_request_length(messages), len(messages)


def _role(message) -> str | None:
    return message.get("role") if isinstance(message, dict) else None


# The knobs of each pinch block served lately (a config's, an arm's), by the block's id, with
# the block itself: an id is not reused while its block is held here. Built afresh, they
# took ~40 us a request (fourteen lookups in the blocks' pydantic field lists).
_knobs: dict[int, tuple[PinchConfig, PaybackKnobs]] = {}
KNOBS_KEPT = 16


def payback_knobs(pinch_config: PinchConfig) -> PaybackKnobs:
    """Each knob is the ``pinch.payback`` key of its name, else the ``pinch`` key of its name."""
    held = _knobs.get(id(pinch_config))
    if held is not None and held[0] is pinch_config:
        return held[1]
    payback = pinch_config.payback
    knobs = PaybackKnobs(
        **{
            knob.name: getattr(
                payback if knob.name in type(payback).model_fields else pinch_config, knob.name
            )
            for knob in fields(PaybackKnobs)
        }
    )
    if len(_knobs) >= KNOBS_KEPT:
        _knobs.clear()  # configs replaced: the blocks served now come back at once
    _knobs[id(pinch_config)] = (pinch_config, knobs)
    return knobs


def pinch_messages(
    messages,
    pinch_config: PinchConfig,
    extra_fixed_tokens: int,
    cache: CacheModel | None = None,
    slot: LedgerSlot | None = None,
    now: float | None = None,
    facts: MessageFacts | None = None,
):
    """(messages to send, PinchOutcome or None when pinch is off).

    ``cache`` (the prices of the model the request goes to) and ``slot`` (the
    conversation's ledger) serve the payback steps; without a slot the ledger
    is rebuilt from the messages, to the same decisions. ``now`` (seconds;
    the wall clock when None) is when the request is planned: the replay
    passes the recorded time. ``facts``: the request's figures per message
    (pinch.carry, carried from the conversation's previous request), which
    spare the payback steps reading them again; the same decisions without.
    """
    if not pinch_config.enabled:
        return messages, None
    now = time.time() if now is None else now
    cache = cache if cache is not None else _STRICTEST
    if pinch_config.payback.enabled:
        return _payback(messages, pinch_config, extra_fixed_tokens, cache, slot, now, facts)
    known = slot.load(messages) if slot is not None else None
    cold = _cold(known, cache, now)
    # The budget prune keeps no decisions; the ledger only carries the clock.
    ledger = Ledger(length=len(messages), at=now)
    recorded = slot.save(ledger) if slot is not None else ledger.as_json()
    relevance = relevance_for(
        messages,
        pinch_config,
        budget_tokens=pinch_config.budget_tokens,
        extra_fixed_tokens=extra_fixed_tokens,
        shared_cache=shared_embedding_tier(settings.REDIS_URL),
    )
    pruned, stats = prune_context(
        messages,
        budget_tokens=pinch_config.budget_tokens,
        keep_last_turns=pinch_config.keep_last_turns,
        max_summarize_chars=pinch_config.max_summarize_chars,
        protected_max_chars=pinch_config.protected_max_chars,
        relevance_order=relevance.order,
        extra_fixed_tokens=extra_fixed_tokens,
        keep_last_tool_results=pinch_config.keep_last_tool_results,
        window_step=pinch_config.window_step,
    )
    outcome = PinchOutcome.from_stats(
        stats,
        relevance_used=relevance.status == "used",
        relevance_fallback=relevance.status == "unavailable",
        cold=cold,
        ledger=recorded,
    )
    pruned, recallable, noted, to_store = _recallable(
        messages,
        pruned,
        stats,
        pinch_config,
        known,
        lambda: stable_prefixes(messages, pinch_config, outcome, extra_fixed_tokens)[1],
    )
    return pruned, replace(
        outcome,
        recallable=recallable,
        final_tokens=outcome.final_tokens + noted,
        to_store=to_store,
    )


def _cold(ledger: Ledger | None, cache: CacheModel, now: float) -> bool | None:
    """Whether the gap since the conversation's last request outlived the cache (None: unknown)."""
    if ledger is None or not ledger.at:
        return None
    return cache.cold_after(now - ledger.at)


def stable_prefixes(
    messages, pinch_config: PinchConfig, outcome: PinchOutcome | None, extra_fixed_tokens: int
) -> tuple[int, int]:
    """Leading messages the next prune step leaves as they are sent: (this turn's, the last turn's).

    All of them with pinch off. A provider that caches only at explicit
    breakpoints (Anthropic) writes at the end of this turn's stable prefix for
    the next turn to read, and reads where the last turn wrote: the request
    that ended before the model's latest answer (an agent appends the answer
    and what it asked for). When pinch takes a step the two differ, and the
    old one may be further back than the provider looks for it (Anthropic:
    20 blocks), so both are worth a breakpoint.
    """
    if outcome is None:
        return len(messages), len(messages)
    if outcome.stable is not None:
        return outcome.stable
    now = _stable_prefix(messages, pinch_config, outcome.original_tokens, outcome)
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not answers:
        return now, now
    before = messages[: answers[-1]]
    tokens = sum(estimate_tokens(extract_text(m)) for m in before) + extra_fixed_tokens
    return now, min(now, _stable_prefix(before, pinch_config, tokens, outcome))


def _stable_prefix(messages, pinch_config: PinchConfig, tokens: int, outcome: PinchOutcome) -> int:
    # Over budget and pruned uniformly, every candidate already has its final form.
    settled = tokens > pinch_config.budget_tokens and not outcome.relevance_used
    return next_step_start(
        messages,
        keep_last_turns=pinch_config.keep_last_turns,
        keep_last_tool_results=pinch_config.keep_last_tool_results,
        window_step=pinch_config.window_step,
        settled=settled,
    )


def _payback(messages, pinch_config, extra_fixed_tokens, cache, slot, now, facts):
    cold = known = None
    try:
        ledger = known = slot.load(messages) if slot is not None else None
        cold = _cold(ledger, cache, now)
        pruned, ledger, stats = plan(
            messages,
            ledger,
            payback_knobs(pinch_config),
            cache,
            extra_fixed_tokens,
            memo=_memo,
            cold=bool(cold),
            recalled=_recalled(slot, pinch_config, messages),
            notes=pinch_config.recall.enabled,
            digests=digests,
            facts=facts,
        )
        ledger = ledger.updated(at=now)
        recorded = slot.save(ledger) if slot is not None else ledger.as_json()
    except Exception as error:  # noqa: BLE001 - pinch never breaks a request
        log.warning("pinch_payback_failed reason=%s", type(error).__name__)
        tokens = sum(estimate_tokens(extract_text(m)) for m in messages) + extra_fixed_tokens
        return messages, PinchOutcome(original_tokens=tokens, final_tokens=tokens, summarized=0)
    stable = (stats["stable_prefix"], stats["stable_prefix_before"])
    pruned, recallable, noted, to_store = _recallable(
        messages, pruned, stats, pinch_config, known, lambda: stable[1]
    )
    outcome = PinchOutcome.from_stats(
        stats,
        noted,
        step=stats["step"],
        stable=stable,
        cold=cold,
        ledger=recorded,
        recallable=recallable,
        to_store=to_store,
    )
    return pruned, outcome


def _recalled(slot: LedgerSlot | None, pinch_config: PinchConfig, messages) -> frozenset[int]:
    """What recalls taught pinch about this conversation: the results to send whole."""
    if slot is None or slot.recalled is None or not pinch_config.recall.enabled:
        return frozenset()
    return slot.recalled(slot.key, turn_lengths(messages))


def _recallable(
    messages, pruned, stats: dict, pinch_config: PinchConfig, known, before: Callable[[], int]
) -> tuple[list, dict, int, dict]:
    """(pruned messages, each changed result's original by its recall handle, tokens the
    handles' notes add, the originals the recall store has yet to keep), when recall is on
    (pinch/recall.py).

    ``stats``: the prune's (prune_context's, or plan's). ``known``: the conversation's
    ledger before this request (None: the router has not served it before, so nothing of it
    is stored yet). ``before()``: the last turn's stable prefix (``stable_prefixes``).

    Of the originals, the store has yet to keep those past that prefix. Before it the
    payload is what the request before sent (pinch never revisits a decision, and caps a
    result from the request it arrives in), so its originals went to the store then: the
    write grows with what this request changed, not with the conversation.
    """
    if not pinch_config.recall.enabled:
        return pruned, {}, 0, {}
    changed = sorted([*stats.get("compressed", ()), *stats.get("capped", ())])
    pruned, recallable, noted = with_handles(messages, pruned, changed)
    # The first request the router serves of it (a conversation begun elsewhere, or before
    # recall was on): every original, once.
    to_store = recallable
    if known is not None and recallable:
        new = map(handle_for, changed[bisect_left(changed, before()) :])
        to_store = {handle: recallable[handle] for handle in new if handle in recallable}
    return pruned, recallable, noted, to_store


# Without a model to price by, the prices that make a step hardest to pay back.
_STRICTEST = CacheModel(read_multiplier=0.1, write_multiplier=1.25)
