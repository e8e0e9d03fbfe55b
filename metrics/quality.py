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
  reported them, plus every completion token at its model's price when it was
  recorded; the conversations with a billed prompt), turns per task and the repeat rate
  (repeats of any earlier call per result and turn: in the holdout nothing
  is compressed, so this is what compares), each with its interval, and
  every other arm against control, with ``significant`` false and a verdict
  saying so while the interval of the difference holds zero;
* ``recall``: the router's recall tool as a signal (metrics/recall_quality.py):
  recalls and recalled tokens, per pruned request (answered, as
  ``pinch_summary`` counts them) and per conversation pinch pruned (counted like
  the others, in the window its latest decision falls in), and the recall rate
  per compressed result seen beside the holdout's repeat rate.

Three queries whatever the traffic, each returning a row per arm, over the
window's hours of ``ArmHour`` (routing/summaries/units.py): the counts of the
window's decisions, and each sample's ``Moments`` (size, sum, sum of squares:
metrics/intervals.py), kept as the decisions are written. A conversation, and
each task of it, is a sample in the window its latest decision falls in, with
the figures of its whole life in the log (it used to count the part of its
life inside the window: the same for every conversation that does not cross
the window's start). The conversations stopped mid loop: the hours' counts
and, for the last hour (quiet for ``IDLE`` is not on an hour), the units' own
rows.
``quality_from_samples`` turns the per-arm samples into the block; the tests'
recomputation from the raw log (tests/support/raw_figures.py) feeds it too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Sum

from metrics.intervals import (
    Estimate,
    Moments,
    mean_estimate,
    moments_difference,
    rate_difference,
    wilson,
)
from metrics.recall_quality import RecallSums, recall_figures
from metrics.summary import DEFAULT_DAYS, Window, summary_window
from routing.config import RouterConfig
from routing.experiments import CONTROL, HOLDOUT, arm_names
from routing.models import ArmHour, QualityUnit
from routing.summaries.contributions import NO_TASK, hour_of

IDLE = timedelta(hours=1)  # a conversation quiet this long after asking for tools has stopped
RATE_DIGITS = 6
# The quality counts each arm adds up (ArmHour's columns).
COUNTS = (
    "repeats_compressed",
    "repeats_whole",
    "seen_compressed",
    "seen_whole",
    "results_after_prune",
    "errors_after_prune",
    "results",
    "errors",
    "pruned",
    "recalls",
    "recalled_tokens",
)


@dataclass(frozen=True)
class ArmSample:
    """One arm's window: its conversations, the samples of its means, its quality counts."""

    conversations: int = 0
    pruned_conversations: int = 0  # those with an answered decision pinch pruned
    cost: Moments = Moments()  # USD per conversation, over those with a billed prompt
    turns: Moments = Moments()  # decisions per task
    task_tokens: Moments = Moments()  # prompt tokens per task
    counts: Counter = field(default_factory=Counter)


def _moments(n, total, squares) -> Moments:
    # PostgreSQL sums integers as numeric (Decimal); an empty sum is NULL.
    return Moments(int(n or 0), float(total or 0), float(squares or 0))


SAMPLED = (
    "conversations",
    "pruned_conversations",
    "billed_conversations",
    "cost_usd",
    "cost_squares",
    "tasks",
    "task_turns",
    "task_turn_squares",
    "task_tokens",
    "task_token_squares",
)


def arm_samples(window: Window) -> dict[str, ArmSample]:
    """Each arm's sample over the window's hours (``ArmHour``: one query, a row per arm)."""
    rows = (
        window.summaries(ArmHour)
        .values_list("arm")
        .annotate(*(Sum(name) for name in (*SAMPLED, *COUNTS)))
        .order_by()
    )
    samples = {}
    for arm, conversations, pruned, billed, cost, squares, tasks, *rest in rows:
        turns, turn_squares, tokens, token_squares, *counts = rest
        samples[arm] = ArmSample(
            conversations=int(conversations or 0),
            pruned_conversations=int(pruned or 0),
            cost=_moments(billed, cost, squares),
            turns=_moments(tasks, turns, turn_squares),
            task_tokens=_moments(tasks, tokens, token_squares),
            counts=Counter({name: int(value or 0) for name, value in zip(COUNTS, counts)}),
        )
    return samples


def stopped_mid_loop(window: Window, idle: timedelta = IDLE) -> dict[str, int]:
    """{arm: conversations last active in the window whose last answer asked for tools and
    that stayed quiet ``idle`` until its end}: the whole hours' counts (``ArmHour``), and the
    units of the last, partial hour read on their ``last_at`` index (two queries)."""
    quiet_since = window.end - idle
    partial = hour_of(quiet_since)
    whole = (
        window.summaries(ArmHour)
        .filter(hour__lt=partial)
        .values_list("arm")
        .annotate(Sum("asked_tools"))
        .order_by()
    )
    stopped = Counter({arm: int(n or 0) for arm, n in whole})
    last_hour = (
        QualityUnit.objects.filter(
            task=NO_TASK,
            last_at__gte=max(partial, hour_of(window.start)),
            last_at__lte=quiet_since,
            last_answer_tool_calls=True,
        )
        .values_list("arm")
        .annotate(n=Count("id"))
        .order_by()
    )
    stopped.update(dict(last_hour))
    return dict(+stopped)


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
        "recall": recall_figures(_recall_sums(samples, totals)),
    }


def _recall_sums(samples: dict[str, ArmSample], totals: Counter) -> RecallSums:
    """What the recall block needs (metrics/recall_quality.py), from the arms' samples: the
    recalls over every arm, the natural repeat rate from the holdout's (pinch off)."""
    holdout = samples.get(HOLDOUT, ArmSample()).counts
    return RecallSums(
        pruned_requests=totals["pruned"],
        pruned_conversations=sum(sample.pruned_conversations for sample in samples.values()),
        recalls=totals["recalls"],
        recalled_tokens=totals["recalled_tokens"],
        compressed_seen=totals["seen_compressed"],
        holdout_repeats=holdout["repeats_compressed"] + holdout["repeats_whole"],
        holdout_seen=holdout["seen_compressed"] + holdout["seen_whole"],
    )


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
    return quality_from_samples(arm_samples(window), stopped_mid_loop(window), config)
