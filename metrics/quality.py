"""What pinch and routing cost the agent, from the decisions: the ``quality`` block.

Read by ``pinch_summary --json``, ``GET /metrics`` (JSON and Prometheus) and
the dashboard's quality card, over the same window as ``pinch_summary``.
The signals per decision come from the request itself (routing/quality.py);
here they are added up:

* ``refetch_rate``: repeats of a call whose result the agent saw compressed,
  per compressed result and turn it saw; ``baseline_refetch_rate``: the same
  for results it saw whole. Both with Wilson intervals, counts beside them;
* tool errors per result, after a prune (the agent had seen something
  compressed) and otherwise;
* turns and prompt tokens per user task (from one user message to the next);
* conversations that stopped mid tool loop: the last answer asked for tools
  and nothing came back for ``IDLE`` (an hour; a busy agent answers in
  seconds);
* ``arms``: per arm (routing/experiments.py), conversations, cost per
  conversation (billed prompt, cache reads and writes as the provider
  reported them, plus every completion token at its model's price; the
  conversations with a billed prompt), turns per task and the repeat rate
  (repeats of any earlier call per result and turn: in the holdout nothing
  is compressed, so this is what compares), each with its interval, and
  every other arm against control, with ``significant`` false and a verdict
  saying so while the interval of the difference holds zero.

Three queries whatever the traffic, each returning a row per arm: the
database adds up the window's conversation hours (routing/summaries/) per
conversation and then per arm, into counts and each sample's ``Moments``
(size, sum, sum of squares: metrics/intervals.py), so no value per
conversation crosses to Python (at 100,000 conversations that alone took
half a second); and the conversations that stopped mid loop are counted on
the conversations' own rows (routing.conversations.stopped_mid_loop).
``quality_from_samples`` turns the per-arm samples into the block; the tests'
recomputation from the raw log (tests/support/raw_figures.py) feeds it too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Case, F, FloatField, Sum, Value, When

from metrics.intervals import (
    Estimate,
    Moments,
    mean_estimate,
    moments_difference,
    rate_difference,
    wilson,
)
from metrics.summary import DEFAULT_DAYS, Window, summary_window
from routing.config import RouterConfig
from routing.conversations import stopped_mid_loop
from routing.experiments import CONTROL, arm_names
from routing.models import ConversationHour
from routing.pricing import PER_TOKENS
from routing.summaries.contributions import NO_TASK

IDLE = timedelta(hours=1)  # a conversation quiet this long after asking for tools has stopped
RATE_DIGITS = 6
# The quality counts each arm adds up (ConversationHour's columns).
COUNTS = (
    "repeats_compressed",
    "repeats_whole",
    "seen_compressed",
    "seen_whole",
    "results_after_prune",
    "errors_after_prune",
    "results",
    "errors",
)


@dataclass(frozen=True)
class ArmSample:
    """One arm's window: its conversations, the samples of its means, its quality counts."""

    conversations: int = 0
    cost: Moments = Moments()  # USD per conversation, over those with a billed prompt
    turns: Moments = Moments()  # decisions per task
    task_tokens: Moments = Moments()  # prompt tokens per task
    counts: Counter = field(default_factory=Counter)


def _completion_usd(config: RouterConfig):
    """Completion tokens at their model's price, in SQL (a model no longer configured: $0)."""
    prices = [
        When(chosen_model=model.id, then=Value(model.completion_price / PER_TOKENS))
        for model in config.models
    ]
    price = Case(*prices, default=Value(0.0), output_field=FloatField())
    return Sum(F("completion_tokens") * price, output_field=FloatField())


def _per_arm(units, outer: str) -> list[tuple]:
    """``outer`` (the per-arm sums) over the per-unit rows of ``units``, grouped by arm."""
    sql, params = units.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT arm, {outer} FROM ({sql}) units GROUP BY arm", params)
        return cursor.fetchall()


def _conversations(window: Window, config: RouterConfig) -> list[tuple]:
    """(arm, conversations, billed ones, cost sum, cost squares, *COUNTS) per arm."""
    units = (
        window.summaries(ConversationHour)
        .values("arm", "conversation")
        .annotate(
            billed=Sum("billed_decisions"),
            cost=Sum("billed_usd") + _completion_usd(config),
            **{name: Sum(name) for name in COUNTS},
        )
        .order_by()
    )
    billed = "CASE WHEN billed > 0 THEN {} ELSE 0 END"
    sums = ", ".join(f"SUM({name})" for name in COUNTS)
    return _per_arm(
        units,
        f"COUNT(*), SUM({billed.format(1)}), SUM({billed.format('cost')}), "
        f"SUM({billed.format('cost * cost')}), {sums}",
    )


def _tasks(window: Window) -> list[tuple]:
    """(arm, tasks, turns sum, turns squares, tokens sum, tokens squares) per arm."""
    units = (
        window.summaries(ConversationHour)
        .exclude(task=NO_TASK)
        .values("arm", "conversation", "task")
        .annotate(turns=Sum("decisions"), tokens=Sum("prompt_tokens"))
        .order_by()
    )
    # Squares of token counts as floats: a sum of them overflows SQLite's 64-bit integers.
    return _per_arm(
        units,
        "COUNT(*), SUM(turns), SUM(turns * turns), SUM(tokens), SUM(tokens * 1.0 * tokens)",
    )


def _moments(n, total, squares) -> Moments:
    # PostgreSQL sums integers as numeric (Decimal); an empty sum is NULL.
    return Moments(int(n or 0), float(total or 0), float(squares or 0))


def arm_samples(window: Window, config: RouterConfig) -> dict[str, ArmSample]:
    """Each arm's sample over the window's conversation hours (two queries)."""
    tasks = {arm: figures for arm, *figures in _tasks(window)}
    samples = {}
    for arm, conversations, billed, cost, squares, *counts in _conversations(window, config):
        n, turns, turn_squares, tokens, token_squares = tasks.get(arm, (0,) * 5)
        samples[arm] = ArmSample(
            conversations=conversations,
            cost=_moments(billed, cost, squares),
            turns=_moments(n, turns, turn_squares),
            task_tokens=_moments(n, tokens, token_squares),
            counts=Counter({name: int(value or 0) for name, value in zip(COUNTS, counts)}),
        )
    return samples


def _together(samples: list[Moments]) -> Moments:
    return Moments(
        sum(s.n for s in samples), sum(s.total for s in samples), sum(s.squares for s in samples)
    )


def quality_from_samples(
    samples: dict[str, ArmSample], stopped: dict[str, int], config: RouterConfig
) -> dict:
    """The quality block from the arms' samples and their conversations stopped mid loop.
    Pure: no database."""
    totals = sum((sample.counts for sample in samples.values()), Counter())
    refetch = wilson(totals["repeats_compressed"], totals["seen_compressed"])
    baseline = wilson(totals["repeats_whole"], totals["seen_whole"])
    errors_after = wilson(totals["errors_after_prune"], totals["results_after_prune"])
    errors_other = wilson(
        totals["errors"] - totals["errors_after_prune"],
        totals["results"] - totals["results_after_prune"],
    )
    ordered = sorted(samples)  # the float sums in one order, whatever order the rows came in
    names = [*arm_names(config), *sorted(set(samples) - set(arm_names(config)))]
    arm_figures = {
        name: _arm_figures(samples.get(name, ArmSample()), stopped.get(name, 0)) for name in names
    }
    control = samples.get(CONTROL, ArmSample())
    for name in names:
        if name != CONTROL:
            arm_figures[name]["vs_control"] = _versus(samples.get(name, ArmSample()), control)
    return {
        "refetch_rate": _rate(refetch.value),
        "refetch_interval": _interval(refetch),
        "baseline_refetch_rate": _rate(baseline.value),
        "baseline_refetch_interval": _interval(baseline),
        "refetches": totals["repeats_compressed"],
        "compressed_results_seen": totals["seen_compressed"],
        "baseline_refetches": totals["repeats_whole"],
        "whole_results_seen": totals["seen_whole"],
        "refetch_difference": rate_difference(refetch, baseline).as_dict(RATE_DIGITS),
        "tool_errors_after_prune": errors_after.as_dict(RATE_DIGITS),
        "tool_errors_otherwise": errors_other.as_dict(RATE_DIGITS),
        "turns_per_task": mean_estimate(_together([samples[a].turns for a in ordered])).as_dict(3),
        "prompt_tokens_per_task": mean_estimate(
            _together([samples[a].task_tokens for a in ordered])
        ).as_dict(1),
        "conversations_stopped_mid_loop": sum(stopped.values()),
        "arms": arm_figures,
    }


def _rate(value):
    return None if value is None else round(value, RATE_DIGITS)


def _interval(estimate: Estimate):
    if estimate.low is None:
        return None
    return [round(estimate.low, RATE_DIGITS), round(estimate.high, RATE_DIGITS)]


def _repeats(sample: ArmSample) -> Estimate:
    counts = sample.counts
    return wilson(
        counts["repeats_compressed"] + counts["repeats_whole"],
        counts["seen_compressed"] + counts["seen_whole"],
    )


def _arm_figures(sample: ArmSample, stopped: int) -> dict:
    return {
        "conversations": sample.conversations,
        "cost_per_conversation_usd": mean_estimate(sample.cost).as_dict(),
        "turns_per_task": mean_estimate(sample.turns).as_dict(3),
        "refetch_rate": _repeats(sample).as_dict(RATE_DIGITS),
        "stopped_mid_loop": stopped,
    }


def _versus(arm: ArmSample, control: ArmSample) -> dict:
    figures = {
        "cost_per_conversation_usd": moments_difference(arm.cost, control.cost).as_dict(),
        "turns_per_task": moments_difference(arm.turns, control.turns).as_dict(3),
        "refetch_rate": rate_difference(_repeats(arm), _repeats(control)).as_dict(RATE_DIGITS),
    }
    significant = [name for name, d in figures.items() if d["significant"]]
    figures["verdict"] = (
        "significant: " + ", ".join(significant)
        if significant
        else "no difference is significant yet (every 95% interval holds 0)"
    )
    return figures


def quality_summary(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """The quality block over pinch_summary's window (three queries)."""
    window = summary_window(config, now, days)
    return quality_from_samples(
        arm_samples(window, config), stopped_mid_loop(window.start, window.end, IDLE), config
    )
