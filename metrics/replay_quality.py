"""pinch_replay's second table: what the agents did next, per family, with its intervals.

The signals are ``routing.replay.quality``'s; the recall line is
``metrics.recall_quality``'s, the figures a live surface shows against the
holdout. Apart from ``metrics.replay`` (the savings table and the verdict),
as it reads another result.
"""

from __future__ import annotations

from metrics.intervals import mean_interval, wilson
from metrics.recall_quality import RecallSums, recall_figures
from routing.replay.quality import FamilyQuality

QUALITY_COLUMNS = (
    "family",
    "sessions",
    "requests",
    "exposure (compressed, repeated)",
    "seen whole, repeated",
    "natural (pinch off)",
    "errors after prune",
    "errors otherwise",
    "turns/task",
    "stopped mid-loop",
    "recalls (per compressed, seen)",
)


def _rate_cell(count: int, trials: int) -> str:
    estimate = wilson(count, trials)
    if estimate.value is None:
        return "-"
    return (
        f"{estimate.value * 100:.2f}% [{estimate.low * 100:.2f}-{estimate.high * 100:.2f}] "
        f"{count:,}/{trials:,}"
    )


def render_quality_table(families: list[FamilyQuality]) -> str:
    """The quality signals per agent family (routing.replay.quality), rates per result and turn.

    exposure: repeats of a call whose result the payload had compressed, per
    compressed result and turn the agent saw; seen whole: the same for results
    sent whole; natural: with nothing compressed, repeats per result seen;
    recalls: what the agent would have recalled, per compressed result and
    turn seen, judged against the natural rate below the table (the
    comparison the live holdout makes: metrics.recall_quality).
    """
    rows = [list(QUALITY_COLUMNS)]
    for family in families:
        turns = mean_interval(family.turns_per_task)
        rows.append(
            [
                family.name,
                f"{family.sessions:,}",
                f"{family.requests:,}",
                _rate_cell(family.refetches, family.compressed_seen),
                _rate_cell(family.whole_repeats, family.whole_seen),
                _rate_cell(family.natural_repeats, family.natural_seen),
                _rate_cell(family.errors_after_prune, family.results_after_prune),
                _rate_cell(family.errors_otherwise, family.results_otherwise),
                "-" if turns.value is None else f"{turns.value:.1f} (n={turns.n})",
                f"{family.stopped_mid_loop:,}",
                _rate_cell(family.recalls, family.compressed_seen),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(QUALITY_COLUMNS))]

    def line(row: list[str]) -> str:
        cells = [
            f"{cell:<{w}}" if i == 0 else f"{cell:>{w}}"
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    total = families[-1]
    recall = recall_figures(
        RecallSums(
            recalls=total.recalls,
            compressed_seen=total.compressed_seen,
            holdout_repeats=total.natural_repeats,
            holdout_seen=total.natural_seen,
        )
    )
    judged = f"recalls: {recall['verdict']}"
    return "\n".join([line(rows[0]), rule, *map(line, rows[1:-1]), rule, line(rows[-1]), judged])
