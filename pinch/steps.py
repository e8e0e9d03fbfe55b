"""When a pinch step pays: the rule on the net cost, and what a provider's cache charges.

A step compresses old tool results. On the request it is taken in, it
rewrites the payload from its first changed message to the end of what the
previous request sent (``rewritten`` tokens, read from the cache the turn
before, written now) and removes ``saved`` tokens:

* net cost now: ``(write - read) * rewritten - write * saved``. When that is
  zero or less, the step is cheaper on its own request than sending the
  payload as it was: it is always taken, whatever later turns do;
* otherwise later turns pay it back at ``read * saved`` each, over the
  ``turns_ahead * (turns_so_far - settle_turns)`` turns a session is
  expected still to run (measured on the corpus, docs/pinch.md), and the
  step is taken when that repayment is ``min_payback`` times the net cost.
  The margin guards only what must be repaid, never the part the step earns
  at once. A conversation's first ``settle_turns`` requests say nothing of
  how long it will run: short tasks end within a few turns of the point
  where a first step starts to pay, and that first step is what made the
  corpus' short sessions dearer (docs/pinch.md, "What a recall costs, and
  young conversations");
* one unrepaid step at a time: while what pinch has saved the conversation
  so far (``banked``: its earlier requests and this one's prefix read,
  against sending each whole) is below zero, an earlier step has not yet
  been repaid, and a step that must be repaid too is not taken;
* a bounded loss: a step staked on later turns may cost at most what pinch
  has saved so far plus ``allowed_loss`` (the caller's share of what the
  conversation would have cost sent whole), so that, whenever the
  conversation ends, it costs at most that share more than with pinch off.

Why one unrepaid step at a time: whatever the margin, a step staked on later turns
loses when the conversation ends before they come, and no horizon
estimate sees the end coming (issue 22: 019 ended two turns after a step
that would have broken even in three). A long conversation absorbs such a
loss; stacking a second one on the first is what a short one cannot. The
clause caps the stake at one step, and costs nothing measurable on the
corpus (docs/pinch.md, "One unrepaid step at a time"). The bound turns that
into a guarantee a user can read: a step that could leave the conversation
more than ``max_loss_share`` dearer, were it to end at once, waits until the
conversation is big enough (or pinch has saved enough) to carry it
(docs/pinch.md, "What a step risks").

A cold cache (the conversation's previous request further back than the
model's cache lifetime) has nothing to rewrite: every token is written
anyway, ``rewritten`` is 0, and any step that saves is cheaper at once.

Round two applied the margin to the gross rewrite (``saved * (remaining *
read + write) >= min_payback * (write - read) * rewritten``), refusing steps
that cost less on the very request they were taken in (issue 22).

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CacheModel:
    """How a model's provider bills a prompt under its prefix cache, per unit of input price.

    ``automatic``: the provider caches any prefix by itself (OpenAI, DeepSeek,
    Gemini); False: only up to breakpoints the client marks (Anthropic), which
    coding agents set on their last messages, so the rule treats both alike.
    ``lifetime_seconds``: how long the provider keeps a prefix after its last
    use; a request after a longer gap finds the cache cold.
    """

    read_multiplier: float = 0.1
    write_multiplier: float = 1.25
    min_cacheable_tokens: int = 1024
    automatic: bool = True
    lifetime_seconds: float = 300.0

    def cold_after(self, gap_seconds: float | None) -> bool:
        """Whether a request ``gap_seconds`` after the previous one finds the cache cold."""
        return gap_seconds is not None and gap_seconds > self.lifetime_seconds


def net_cost_now(saved: int, rewritten: int, cache: CacheModel) -> float:
    """What a step costs on its own request, in input-price tokens (negative: it earns)."""
    read, write = cache.read_multiplier, cache.write_multiplier
    return (write - read) * rewritten - write * saved


def step_pays(
    saved: int,
    rewritten: int,
    turns_so_far: int,
    cache: CacheModel,
    turns_ahead: float,
    min_payback: float,
    banked: float = 0.0,
    allowed_loss: float = math.inf,
    settle_turns: int = 0,
) -> bool:
    """Whether a step that removes ``saved`` tokens and rewrites ``rewritten`` cached ones pays.

    Cheaper at once (``net_cost_now <= 0``) with something saved: taken.
    Otherwise taken when the conversation is not in the red on pinch
    (``banked >= 0``: what pinch saved it so far, input-price tokens) and the
    later turns' repayment, ``read * saved`` on each of ``turns_ahead *
    (turns_so_far - settle_turns)`` turns, is ``min_payback`` times the net
    cost, and the net cost is at most ``banked + allowed_loss`` (what the
    conversation may be out of pocket on pinch if it ends right after this
    step).
    """
    if saved <= 0:
        return False
    cost = net_cost_now(saved, rewritten, cache)
    if cost <= 0:
        return True
    if banked < 0 or cost > banked + allowed_loss:
        return False
    remaining = turns_ahead * max(turns_so_far - settle_turns, 0)
    repaid = saved * cache.read_multiplier * remaining
    return repaid >= min_payback * cost
