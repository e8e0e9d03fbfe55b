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
  reported them, plus completion tokens at the model's price), turns per
  task and the repeat rate (repeats of any earlier call per result and turn:
  in the holdout nothing is compressed, so this is what compares), each
  with its interval, and every other arm against control, with
  ``significant`` false and a verdict saying so while the interval of the
  difference holds zero.

Two queries whatever the traffic: one on the conversation hours of the summary
tables (routing/summaries/: a conversation fills an hour or two, so it reads
about 30 times fewer rows than the log), grouped by (arm, conversation, task,
model), and one for each conversation's last answer (routing.conversations.last_answers,
on the conversations' own rows).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Sum

from metrics.intervals import Estimate, mean_difference, mean_interval, rate_difference, wilson
from metrics.summary import DEFAULT_DAYS, summary_window
from routing.config import RouterConfig
from routing.conversations import last_answers
from routing.experiments import CONTROL, arm_names
from routing.models import ConversationHour
from routing.summaries.contributions import NO_TASK

IDLE = timedelta(hours=1)  # a conversation quiet this long after asking for tools has stopped
RATE_DIGITS = 6


@dataclass
class _Arm:
    """One arm's conversations, tasks and counts, as the grouped rows add up."""

    cost: dict = field(default_factory=lambda: defaultdict(float))
    tasks: dict = field(default_factory=lambda: defaultdict(int))
    task_tokens: dict = field(default_factory=lambda: defaultdict(int))
    conversations: set = field(default_factory=set)
    repeats: int = 0
    seen: int = 0


def _rows(window):
    """The window's conversation hours (routing/summaries/), by arm, conversation, task, model."""
    return [
        (arm, conversation, None if task == NO_TASK else task, *figures)
        for arm, conversation, task, *figures in window.summaries(ConversationHour)
        .values_list("arm", "conversation", "task", "chosen_model")
        .annotate(
            rows=Sum("decisions"),
            billed=Sum("billed_usd"),
            billed_rows=Sum("billed_decisions"),
            completion=Sum("completion_tokens"),
            prompt=Sum("prompt_tokens"),
            repeats_compressed=Sum("repeats_compressed"),
            repeats_whole=Sum("repeats_whole"),
            seen_compressed=Sum("seen_compressed"),
            seen_whole=Sum("seen_whole"),
            results_after=Sum("results_after_prune"),
            errors_after=Sum("errors_after_prune"),
            results=Sum("results"),
            errors=Sum("errors"),
        )
        .order_by()
    ]


def _completion_usd(config: RouterConfig, model_id: str, tokens) -> float:
    model = config.model(model_id)
    return (tokens or 0) * model.completion_price / 1_000_000 if model is not None else 0.0


def quality_from_rows(rows, last_answers, config: RouterConfig, end: datetime) -> dict:
    """The quality block from the two queries' rows. Pure: no database."""
    arms: dict[str, _Arm] = defaultdict(_Arm)
    totals = defaultdict(int)
    for (
        arm,
        conversation,
        task,
        model_id,
        n,
        billed,
        billed_rows,
        completion,
        prompt,
        *counts,
    ) in rows:
        (rc, rw, sc, sw, results_after, errors_after, results, errors) = (c or 0 for c in counts)
        for name, value in zip(
            (
                "repeats_compressed",
                "repeats_whole",
                "seen_compressed",
                "seen_whole",
                "results_after",
                "errors_after",
                "results",
                "errors",
            ),
            (rc, rw, sc, sw, results_after, errors_after, results, errors),
            strict=True,
        ):
            totals[name] += value
        group = arms[arm]
        group.conversations.add(conversation)
        group.repeats += rc + rw
        group.seen += sc + sw
        if billed_rows:
            group.cost[conversation] += (billed or 0.0) + _completion_usd(
                config, model_id, completion
            )
        if task is not None:
            group.tasks[(conversation, task)] += n
            group.task_tokens[(conversation, task)] += prompt or 0

    stopped = defaultdict(int)
    for arm, last_at, asked in last_answers:
        if asked and last_at is not None and end - last_at >= IDLE:
            stopped[arm] += 1

    refetch = wilson(totals["repeats_compressed"], totals["seen_compressed"])
    baseline = wilson(totals["repeats_whole"], totals["seen_whole"])
    errors_after = wilson(totals["errors_after"], totals["results_after"])
    errors_other = wilson(
        totals["errors"] - totals["errors_after"], totals["results"] - totals["results_after"]
    )
    all_tasks = [n for group in arms.values() for n in group.tasks.values()]
    all_tokens = [n for group in arms.values() for n in group.task_tokens.values()]
    names = [*arm_names(config), *sorted(set(arms) - set(arm_names(config)))]
    arm_figures = {name: _arm_figures(arms.get(name, _Arm()), stopped[name]) for name in names}
    control = arms.get(CONTROL, _Arm())
    for name in names:
        if name != CONTROL:
            arm_figures[name]["vs_control"] = _versus(arms.get(name, _Arm()), control)
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
        "turns_per_task": mean_interval(all_tasks).as_dict(3),
        "prompt_tokens_per_task": mean_interval(all_tokens).as_dict(1),
        "conversations_stopped_mid_loop": sum(stopped.values()),
        "arms": arm_figures,
    }


def _rate(value):
    return None if value is None else round(value, RATE_DIGITS)


def _interval(estimate: Estimate):
    if estimate.low is None:
        return None
    return [round(estimate.low, RATE_DIGITS), round(estimate.high, RATE_DIGITS)]


def _arm_figures(group: _Arm, stopped: int) -> dict:
    return {
        "conversations": len(group.conversations),
        "cost_per_conversation_usd": mean_interval(list(group.cost.values())).as_dict(),
        "turns_per_task": mean_interval(list(group.tasks.values())).as_dict(3),
        "refetch_rate": wilson(group.repeats, group.seen).as_dict(RATE_DIGITS),
        "stopped_mid_loop": stopped,
    }


def _versus(arm: _Arm, control: _Arm) -> dict:
    figures = {
        "cost_per_conversation_usd": mean_difference(
            list(arm.cost.values()), list(control.cost.values())
        ).as_dict(),
        "turns_per_task": mean_difference(
            list(arm.tasks.values()), list(control.tasks.values())
        ).as_dict(3),
        "refetch_rate": rate_difference(
            wilson(arm.repeats, arm.seen), wilson(control.repeats, control.seen)
        ).as_dict(RATE_DIGITS),
    }
    significant = [name for name, d in figures.items() if d["significant"]]
    figures["verdict"] = (
        "significant: " + ", ".join(significant)
        if significant
        else "no difference is significant yet (every 95% interval holds 0)"
    )
    return figures


def quality_summary(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """The quality block over pinch_summary's window (two queries)."""
    window = summary_window(config, now, days)
    return quality_from_rows(
        list(_rows(window)), last_answers(window.start, window.end), config, window.end
    )
