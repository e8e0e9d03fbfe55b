"""Recall as a quality signal: the figures, from sums the surfaces already keep.

A recall is the model asking the router for a result pinch compressed or
capped (routing/recall/): pinch took something the agent needed. How often
is only a finding beside what agents do without pinch. An agent comes back
to an old result by itself too (it re-runs a command, re-reads a file): the
holdout's repeat rate, repeats of an earlier call per result and turn seen,
where nothing is compressed (metrics/quality.py, ``arms``). So the recall
rate is counted the same way, recalls per compressed result and turn the
agent saw (``quality_seen_compressed``), and compared with that natural
rate (live: the holdout's; replayed: the recorded agent's, which ran without
pinch) by the interval of the difference. A recall rate far above it is the
router telling on itself: pinch takes what agents come back for.

Pure: the caller hands in sums (from the decisions' ``recalls``,
``recalled_tokens`` and quality columns, or from a replay), so every surface
(``pinch_summary``, ``/metrics``, the dashboard, the holdout comparison)
shows the same figures from whatever it already adds up.
"""

from __future__ import annotations

from dataclasses import dataclass

from metrics.intervals import rate_difference, wilson

DIGITS = 6


@dataclass(frozen=True)
class RecallSums:
    """What the figures need, summed over a window (or a replay)."""

    pruned_requests: int = 0  # requests pinch changed
    pruned_conversations: int = 0  # conversations with at least one
    recalls: int = 0
    recalled_tokens: int = 0
    compressed_seen: int = 0  # compressed results the agent saw, per turn
    # The holdout's (pinch off) repeats of an earlier call, per result and turn seen.
    holdout_repeats: int = 0
    holdout_seen: int = 0


def _per(count: int, of: int) -> float | None:
    return round(count / of, DIGITS) if of else None


def recall_figures(sums: RecallSums) -> dict:
    """The recall block: counts, rates with their 95% intervals, the holdout comparison."""
    # A result capped as it arrives (in the turn's new results) can be recalled in that very
    # request, before the quality signals count it as seen compressed (they count the results
    # before the agent's newest message): each recall is of at least one result seen, so the
    # rate is never over 1.
    rate = wilson(sums.recalls, max(sums.compressed_seen, sums.recalls))
    natural = wilson(sums.holdout_repeats, sums.holdout_seen)
    versus = rate_difference(rate, natural)
    if versus.value is None:
        verdict = "no comparison yet: the natural rate or the recall rate has no sample"
    elif versus.significant and versus.value > 0:
        verdict = (
            "recalls above the natural repeat rate (pinch off): "
            "pinch takes what agents come back for"
        )
    elif versus.significant:
        verdict = "recalls below the natural repeat rate (pinch off)"
    else:
        verdict = "no significant difference from the natural repeat rate (the interval holds 0)"
    return {
        "recalls": sums.recalls,
        "recalled_tokens": sums.recalled_tokens,
        "recalls_per_pruned_request": _per(sums.recalls, sums.pruned_requests),
        "recalls_per_conversation": _per(sums.recalls, sums.pruned_conversations),
        "recall_rate": rate.as_dict(DIGITS),
        "holdout_repeat_rate": natural.as_dict(DIGITS),
        "versus_holdout": versus.as_dict(DIGITS),
        "verdict": verdict,
    }
