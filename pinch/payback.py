"""Pinch that pays: prune in steps that repay their cache rewrite, decide each result once.

Under a provider's prompt cache a token is not a price. The prefix the
provider saw in the previous request is read at ``read`` times the input
price (0.1 at Anthropic and OpenAI from GPT-5.6); everything from the first
changed message on is written again at ``write`` (1.25 there). So
compressing old tool results is an investment, priced by ``pinch.steps``: a
step cheaper on its own request than sending the payload as it was is always
taken; otherwise the later turns must repay its net cost ``min_payback``
times over, and not while an earlier step is still unrepaid (the ledger
keeps what pinch has saved the conversation so far), nor when it could
leave the conversation more than ``max_loss_share`` dearer than sending it
whole (the ledger keeps that cost too). After a gap longer
than the cache's lifetime (``cold``), nothing is read from the cache and a
step that saves is always taken. Below the model's minimum cacheable
prompt nothing is cached, and a step only saves.

Each tool result's fate is decided once, at the step that takes it out of
the protected window: compressed (pinch.lines, content-only and
deterministic) or kept verbatim for good, because it matters to the work in
hand (``pinch.keep``). A decision is never revisited, so between steps the
payload only grows at its end and the cached prefix holds.

The decisions are a pure function of the messages: ``plan`` replays the rule
over every earlier request of the conversation (each ``messages[:t]`` before
an assistant message ``t``) that the ``Ledger`` it is given does not cover,
so a worker with no state, or state from another worker, reaches the same
choices. The ledger (a few integers per conversation) is only what spares
the replay; the router keeps it beside the prefix probe's hashes.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from pinch.core import _protected_start
from pinch.keep import keeps
from pinch.ledger import Ledger, messages_digest
from pinch.recall import round_trips
from pinch.session import PaybackKnobs, Session
from pinch.steps import CacheModel, net_cost_now, step_pays
from pinch.tokens import estimate_tokens

__all__ = ["CacheModel", "Ledger", "PaybackKnobs", "book_recalls", "plan"]


def plan(
    messages: Sequence[Any],
    ledger: Ledger | None,
    knobs: PaybackKnobs,
    cache: CacheModel,
    extra_fixed_tokens: int = 0,
    memo: Any = None,
    cold: bool = False,
    recalled: frozenset[int] = frozenset(),
    notes: bool = False,
    digests: Any = None,
    facts: Any = None,
) -> tuple[list[Any], Ledger, dict[str, Any]]:
    """The payload to send for ``messages``, the ledger after it, and stats like prune_context's.

    ``cold``: this request comes after a gap longer than the cache keeps a
    prefix (the caller knows the clock): nothing it sends is read from the
    cache, so a step rewrites nothing paid for and is taken whenever it saves.
    The ledger records it, so a rebuild from the ledger decides alike.

    ``ledger`` may be None, stale or from an edited history: what it does not
    soundly cover is rebuilt from the messages. When nothing changes (under
    the budget, no decision taken, no result over ``protected_max_chars``)
    the caller's list itself comes back. ``memo``, a
    mapping the caller owns (and may bound), keeps compressed texts between
    calls: a result compresses to the same text every time, so computing it
    once per process is enough. ``notes``: the caller adds a recall note to
    each result pinch shortens (``pinch.recall.with_handles``); a result is
    compressed only when what is sent in its place, note included, is
    shorter, and the ledger books what is left. ``digests``, another mapping
    the caller owns (and bounds), keeps long texts' hashes between calls
    (``pinch.digests``): the ledger's digest is the same without it.
    ``facts``: the request's ``pinch.carry.MessageFacts`` of ``messages``, which
    carry what the conversation's previous request read of the messages it
    repeats: the plan is the same without them.
    """
    session = Session(
        messages, knobs, cache, extra_fixed_tokens, memo, recalled, notes, digests, facts
    )
    fingerprints = session.hashes
    ledger = _trusted(ledger, fingerprints)
    # Every earlier request the ledger does not cover, then this one. A ledger of these very
    # messages (the same request again: a retry) holds already all this would write in it.
    covered = 0 < ledger.length == len(messages)
    assistants = session.assistants
    for t in assistants[bisect_right(assistants, ledger.length) :]:
        ledger = _advance(session, ledger, t)
    before = ledger.decided
    if not covered:
        if len(messages) > ledger.length:
            if cold:
                ledger = ledger.updated(cold=(*ledger.cold, len(messages)))
            ledger = _advance(session, ledger, len(messages))
        ledger = ledger.updated(length=len(messages), digest=messages_digest(fingerprints))
    payload, stats = _payload(session, ledger, len(messages))
    stats["step"] = bool(ledger.steps) and ledger.steps[-1] == len(messages)
    # Where a provider that caches at breakpoints should mark. Everything
    # before the first undecided result is final: no later step rewrites it.
    # And what the previous request sent is intact unless this one stepped:
    # its end is where the last turn wrote, so that is where to read.
    stats["stable_prefix"] = _first_undecided(session, ledger.decided)
    previous = session.assistants[-1] if session.assistants else 0
    if stats["step"] or not previous:
        stats["stable_prefix_before"] = _first_undecided(session, before)
    else:
        stats["stable_prefix_before"] = previous
    return payload, ledger, stats


def book_recalls(
    ledger: Ledger, cache: CacheModel, payload_tokens: int, sizes: list[int]
) -> Ledger:
    """``ledger`` with the round trips of recalling results of ``sizes`` tokens booked.

    A recall answers for what pinch took out: sent whole, the result would
    have cost nothing more. So its round trips (``pinch.recall.round_trips``:
    the payload of ``payload_tokens`` read again, the call and the original
    written) come off what pinch has saved the conversation, and a step
    staked on later turns waits until pinch is out of the red again, as
    after an unrepaid step.
    """
    read, written = round_trips(payload_tokens, sizes)
    cost = cache.read_multiplier * read + cache.write_multiplier * written
    return ledger.updated(recall_cost=ledger.recall_cost + cost)


def _first_undecided(session: Session, decided: int) -> int:
    results = session.results
    return results[decided] if decided < len(results) else len(session.messages)


def _trusted(ledger: Ledger | None, fingerprints: list[str]) -> Ledger:
    """``ledger`` if it covers these messages; else a fresh one that keeps its cold requests
    and what recalls cost.

    Those are the inputs the messages do not hold, so a rebuild replays the
    cold requests too (of an edited history, they are the best known) and
    counts every recall from the start (erring towards fewer steps).
    """
    if ledger is None:
        return Ledger()
    fresh = Ledger(cold=ledger.cold, recall_cost=ledger.recall_cost)
    if not 0 < ledger.length <= len(fingerprints):
        return fresh
    if ledger.digest != messages_digest(fingerprints[: ledger.length]):
        return fresh
    return ledger


def _advance(session: Session, ledger: Ledger, length: int) -> Ledger:
    """The ledger after the request ``messages[:length]``: a step or nothing, and what it earned."""
    cache = session.cache
    prior = _previous_request(session, ledger, length)
    # Read from the cache only above the model's minimum cached prompt.
    previous = prior if session.total(length) >= cache.min_cacheable_tokens else 0
    removed = _removed(session, ledger)
    # What this request costs sent whole: the previous request's prompt read,
    # the rest written. Below the cacheable minimum that errs low (nothing is
    # read there), as a bound on the loss should.
    read = session.total(prior) if prior else 0
    written = session.total(length) - read
    baseline = ledger.baseline + cache.read_multiplier * read + cache.write_multiplier * written
    after, net = _decide(session, ledger.updated(baseline=baseline), length, previous, removed)
    if previous:
        # The prefix read costs ``read`` per token: what earlier steps removed
        # is saved again, and a step taken now costs its net on top.
        earned = cache.read_multiplier * removed - net
    else:
        # Nothing read from the cache: every token sent is written, the ones
        # removed are saved at the write price.
        earned = cache.write_multiplier * _removed(session, after)
    return after.updated(earned=ledger.earned + earned)


def _previous_request(session: Session, ledger: Ledger, length: int) -> int:
    """The previous request's length, whose prompt the cache still holds; 0 on the
    first request and after a cold gap."""
    earlier = bisect_left(session.assistants, length)
    if not earlier or length in ledger.cold:
        return 0
    return session.assistants[earlier - 1]


def _removed(session: Session, ledger: Ledger) -> int:
    """Tokens the ledger's compressions take out of the payload.

    Counted on from the session's last count (a ledger only grows, in result order):
    8,000 tool rounds took 16 s when each request added them all up again.
    """
    done, total = session.removed_at
    if ledger.decided < done:
        done, total = 0, 0
    if ledger.decided > done:
        results = session.results
        kept = session.whole(ledger.kept[bisect_left(ledger.kept, results[done]) :])
        total += sum(session.saving(i) for i in results[done : ledger.decided] if i not in kept)
        session.removed_at = (ledger.decided, total)
    return total


def _decide(
    session: Session, ledger: Ledger, length: int, previous: int, removed: int
) -> tuple[Ledger, float]:
    """The ledger after deciding at ``length``, and the net cost now of the step taken (or 0)."""
    knobs = session.knobs
    total = session.total(length)
    if total <= knobs.budget_tokens:
        return ledger.updated(length=length), 0.0
    window = _protected_start(
        session.messages, knobs.keep_last_turns, knobs.keep_last_tool_results, end=length
    )
    undecided = session.results[ledger.decided : bisect_left(session.results, window)]
    if not undecided:
        return ledger.updated(length=length), 0.0

    users = session.users[: bisect_left(session.users, length)]
    last_user = users[-1] if users else None
    kept, compressed, saved = [], [], 0
    for i in undecided:
        if i in session.recalled or keeps(
            session.chars[i],
            session.mentions(i),
            length,
            session.mentions,
            session.assistants,
            last_user,
            knobs,
        ):
            kept.append(i)
            continue
        if session.saving(i) > 0:
            compressed.append(i)
            saved += session.saving(i)
        else:
            kept.append(i)
    decided = ledger.updated(
        length=length,
        decided=ledger.decided + len(undecided),
        kept=ledger.kept + tuple(kept),
    )
    if not compressed:
        # Nothing to rewrite: keeping is free, and final.
        return decided, 0.0
    if not previous:
        # Nothing is read from the cache, so a step rewrites nothing paid for.
        if saved <= 0:
            return ledger.updated(length=length), 0.0
        return decided.updated(steps=ledger.steps + (length,)), 0.0
    cache = session.cache
    rewritten = _payload_tokens(session, ledger, min(compressed), previous)
    # This request and the ones before it: one per earlier assistant message.
    turns = bisect_left(session.assistants, length) + 1
    # What a step may risk: what pinch saved the conversation before, and on
    # this request's prefix read (certain, whatever the step costs), less what
    # the model's recalls of what it took out have cost.
    banked = ledger.earned - ledger.recall_cost + cache.read_multiplier * removed
    allowed_loss = knobs.max_loss_share * ledger.baseline
    if not step_pays(
        saved,
        rewritten,
        turns,
        cache,
        knobs.turns_ahead,
        knobs.min_payback,
        banked,
        allowed_loss,
        knobs.settle_turns,
    ):
        return ledger.updated(length=length), 0.0
    net = net_cost_now(saved, rewritten, cache)
    return decided.updated(steps=ledger.steps + (length,)), net


def _payload_tokens(session: Session, ledger: Ledger, start: int, stop: int) -> int:
    """Tokens of the current payload's messages ``start:stop`` under the ledger's decisions."""
    total = session.leading[stop] - session.leading[start]
    results = session.results
    first = bisect_left(results, start, 0, ledger.decided)
    end = bisect_left(results, stop, 0, ledger.decided)
    if first < end:
        kept = session.whole(ledger.kept)
        total -= sum(session.saving(i) for i in results[first:end] if i not in kept)
    return max(total, 0)


def _payload(session: Session, ledger: Ledger, length: int) -> tuple[list[Any], dict[str, Any]]:
    messages, knobs, chars = session.messages, session.knobs, session.chars
    original = session.total(length)
    kept = session.whole(ledger.kept)
    replaced: dict[int, str] = {}
    compressed: list[int] = []
    known = session.compressed  # most of them, carried from the request before
    for i in session.results[: ledger.decided]:
        if i in kept:
            continue
        shorter = known.get(i) or session.compress(i)
        if len(shorter) < chars[i]:
            replaced[i] = shorter
            compressed.append(i)
    capped: list[int] = []
    cap = knobs.protected_max_chars
    if cap is not None:
        # An outsized result is capped from the request it arrives in, budget
        # or not, so the cap never rewrites what the provider has cached; one
        # kept for good keeps its cap. Its plainest pieces go, not its middle:
        # the next message quotes a subagent's report or a long file anywhere.
        undecided = session.results[ledger.decided :]
        # (A recalled result may be both: restored before it is decided.)
        for i in dict.fromkeys([*undecided, *sorted(kept)]):
            if chars[i] > cap:
                shorter = session.capped(i, cap)
                if len(shorter) < chars[i]:
                    replaced[i] = shorter
                    capped.append(i)
    if not replaced:
        return messages, _stats(original, original)
    out = list(messages)
    saved = 0
    tool_counts: dict[str, int] = {}
    for i, text in replaced.items():
        out[i] = {**messages[i], "content": text}
        saved += session.tokens[i] - estimate_tokens(text)
        name = session.names.get(i, "tool")
        tool_counts[name] = tool_counts.get(name, 0) + 1
    stats = _stats(original, original - saved)
    stats.update(
        pruned=True,
        summarized=len(replaced),
        compressed=sorted(compressed),
        capped=sorted(capped),
        compressed_tools=tool_counts,
    )
    return out, stats


def _stats(original: int, final: int) -> dict[str, Any]:
    return {
        "pruned": False,
        "original_tokens": original,
        "final_tokens": final,
        "tokens_saved": max(original - final, 0),
    }
