"""What one decision row adds to the summary tables: the one home of every summed figure.

``contributions(fields)`` reads a decision's column values (a RouteDecision's
``__dict__`` when it is recorded, a ``.values()`` row when the tables are
rebuilt from the log) and says, per table, which row it adds to and what.
Recording and recomputing both call it, so the two cannot disagree on a
definition. The definitions are those the surfaces used on the raw rows:

- pruned: pinch sent fewer tokens than it was given (both counts measured);
- billed: both the billed and the unpruned prompt cost are known; uncached:
  billed with no cache read or written (an upstream that reports none);
- the cache forecast compares a row whose predicted and billed cache reads are
  both known and whose usage the provider reported;
- a key's spend: the prompt as billed, else as estimated, and the completion
  tokens (priced when read, at the model's price then);
- failed: answered with an error or never answered (``failed``); the median's
  histogram holds only the calls that were answered.

Medians cannot be summed, so tokens saved also go into a histogram
(``saved_bucket``): each saving rounded down to a round number at most 1 %
under it: to 3 significant digits while it starts with 1 (123,456 is counted
as 123,000), to an even third digit while it starts with 2 to 4 (235,000 as
234,000), to a third digit of 0 or 5 from 5 on (789 as 785); exact under 200
tokens. So a median read from it is at most 1 % under the exact one and reads as
a round number, and a day fills at most 350 buckets a decade of savings (3
significant digits everywhere, the grain before, filled 900, and a team's month
of them was the largest read of /metrics: docs/summaries.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from routing.cache_forecast import HIT, MISS
from routing.models import (
    ArmHour,
    CompressedTools,
    DecisionSummary,
    KeySpend,
    SavedTokens,
)

# Upstream LLM calls take from a fraction of a second (a short completion on a
# small model) to minutes (a long stream on a large one); the buckets span both.
LATENCY_BUCKETS_SECONDS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# The step of a saving's third significant digit, by its first three (100-999): a step at
# most 1 % of the smallest saving it covers, so the median is within 1 %.
_THIRD_DIGIT_STEPS = ((500, 5), (200, 2), (0, 1))
NO_STATUS = 0  # status_code NULL: a decision recorded before its answer was

# The columns contributions() reads: what a rebuild selects from the log.
READS = (
    "created_at",
    "path",
    "api_key_id",
    "chosen_model",
    "baseline_model",
    "status_code",
    "arm",
    "pinch_original_tokens",
    "pinch_final_tokens",
    "pinch_tools",
    "relevance_fallback",
    "upstream_latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "estimated_cost_usd",
    "billed_prompt_cost_usd",
    "unpruned_cost_usd",
    "usage_estimated",
    "cache_read_tokens",
    "cache_write_tokens",
    "predicted_cache_read_tokens",
    "predicted_cache_write_tokens",
    "predicted_uncached_tokens",
    "cache_surprise",
    "cache_miss_reason",
    "conversation",
    "quality_task",
    "answer_tool_calls",
    "measured_tokens",
    "quality_repeats_compressed",
    "quality_repeats_whole",
    "quality_seen_compressed",
    "quality_seen_whole",
    "quality_results",
    "quality_errors",
    "recalls",
    "recalled_tokens",
)
NO_TASK = -1  # quality_task NULL: the request was no tool round of a task


def failed(status: int | None) -> bool:
    """A call that failed: answered with an error, or never answered (no status recorded).
    Counted apart from the calls pinch's share is of (metrics.summary)."""
    return status is None or status >= 400


def hour_of(moment: datetime) -> datetime:
    """The start of ``moment``'s hour, in UTC: the key of every summary row."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    """The start of ``moment``'s day, in UTC: the key of a SavedTokens row."""
    return hour_of(moment).replace(hour=0)


def saved_bucket(tokens: int) -> int:
    """The histogram bucket of a saving: the round number at most 1 % under it that counts it
    (the module's doc)."""
    unit = 10 ** max(len(str(tokens)) - 3, 0)  # the third significant digit's
    leading = tokens // unit
    step = next(step for start, step in _THIRD_DIGIT_STEPS if leading >= start)
    return leading // step * step * unit


def _n(value) -> int:
    return value or 0


def contributions(
    fields: Mapping, figures: dict | None = None
) -> Iterator[tuple[type, tuple, dict]]:
    """(table, dimension values, figures to add) for each row one decision adds to.
    ``figures``: its ``decision_figures``, when known.

    The conversations and tasks it belongs to (``QualityUnit``) are not among them: what
    a decision adds to its conversation's place in ``ArmHour`` depends on the conversation's
    figures before it (routing/summaries/units.py, from ``unit_figures``)."""
    hour = hour_of(fields["created_at"])
    figures = decision_figures(fields) if figures is None else figures
    compared = bool(figures.get("forecast_compared"))
    status = fields.get("status_code")
    yield (
        DecisionSummary,
        (
            hour,
            fields["path"],
            fields.get("chosen_model") or "",
            fields.get("baseline_model") or "",
            NO_STATUS if status is None else status,
            fields.get("arm") or "",
            (fields.get("cache_miss_reason") or "") if compared else "",
        ),
        figures,
    )
    billed_usd = fields.get("billed_prompt_cost_usd")
    prompt_usd = billed_usd if billed_usd is not None else fields.get("estimated_cost_usd")
    yield (
        KeySpend,
        (hour, fields.get("api_key_id") or 0, fields.get("chosen_model") or ""),
        {
            "decisions": 1,
            "prompt_usd": prompt_usd or 0.0,
            "completion_tokens": _n(fields.get("completion_tokens")),
        },
    )
    # The median tokens saved is of the pruned calls that were answered, like the share.
    if figures["pruned"] and not failed(status):
        yield SavedTokens, (day_of(hour), saved_bucket(figures["tokens_saved"])), {"decisions": 1}
    yield ArmHour, (hour, fields.get("arm") or ""), quality_counts(fields, figures)
    tools = fields.get("pinch_tools")
    if isinstance(tools, dict):
        for name, count in tools.items():
            if isinstance(count, int) and not isinstance(count, bool):
                yield CompressedTools, (hour, str(name)[:200]), {"results": count}


def decision_figures(fields: Mapping) -> dict:
    """What one decision adds to its ``DecisionSummary`` row."""
    original, final = fields.get("pinch_original_tokens"), fields.get("pinch_final_tokens")
    pruned = original is not None and final is not None and original > final
    saved = original - final if pruned else 0
    billed_usd, unpruned_usd = fields.get("billed_prompt_cost_usd"), fields.get("unpruned_cost_usd")
    billed = billed_usd is not None and unpruned_usd is not None
    net = unpruned_usd - billed_usd if billed else 0.0
    compared = (
        fields.get("predicted_cache_read_tokens") is not None
        and fields.get("cache_read_tokens") is not None
        and not fields.get("usage_estimated")
    )
    latency = fields.get("upstream_latency_ms")
    figures = {
        "decisions": 1,
        "pruned": int(pruned),
        "tokens_saved": saved,
        "pruned_net_usd": net if pruned else 0.0,
        "billed": int(billed),
        "net_usd": net,
        "relevance_fallbacks": int(bool(fields.get("relevance_fallback"))),
    }
    if billed:
        figures.update(
            billed_prompt_tokens=_n(fields.get("prompt_tokens")),
            billed_removed_tokens=saved,
            billed_completion_tokens=_n(fields.get("completion_tokens")),
            billed_prompt_usd=billed_usd,
            unpruned_usd=unpruned_usd,
        )
        if not fields.get("cache_read_tokens") and not fields.get("cache_write_tokens"):
            # The bill had no cache, so neither had its unpruned estimate: every token at the
            # full price. The savings by cause credit the cache nothing for it (issue 41).
            figures.update(
                uncached_prompt_tokens=_n(fields.get("prompt_tokens")),
                uncached_removed_tokens=saved,
                uncached_unpruned_usd=unpruned_usd,
            )
    if latency is not None:
        figures["latency_count"] = 1
        figures["latency_sum_ms"] = latency
        for i, seconds in enumerate(LATENCY_BUCKETS_SECONDS):
            if latency <= seconds * 1000:
                figures[f"latency_le_{i}"] = 1
    if compared:
        figures.update(
            forecast_compared=1,
            predicted_read=fields["predicted_cache_read_tokens"],
            predicted_total=fields["predicted_cache_read_tokens"]
            + _n(fields.get("predicted_cache_write_tokens"))
            + _n(fields.get("predicted_uncached_tokens")),
            billed_read=fields["cache_read_tokens"],
            billed_total=_n(fields.get("prompt_tokens")),
            cache_misses=int(fields.get("cache_surprise") == MISS),
            cache_hits=int(fields.get("cache_surprise") == HIT),
        )
    return figures


def answered_pruned(fields: Mapping, decision: dict) -> int:
    """1 for a pruned decision that was answered, as ``pinch_summary`` counts the pruned calls:
    the recall figures' denominator (metrics/recall_quality.py)."""
    return int(bool(decision["pruned"]) and not failed(fields.get("status_code")))


def quality_counts(fields: Mapping, decision: dict) -> dict:
    """What one decision adds to its arm's hour (``ArmHour``): the quality signals' counts.
    ``decision``: its ``decision_figures``."""
    results, errors = _n(fields.get("quality_results")), _n(fields.get("quality_errors"))
    after_prune = _n(fields.get("quality_seen_compressed")) > 0
    return {
        "repeats_compressed": _n(fields.get("quality_repeats_compressed")),
        "repeats_whole": _n(fields.get("quality_repeats_whole")),
        "seen_compressed": _n(fields.get("quality_seen_compressed")),
        "seen_whole": _n(fields.get("quality_seen_whole")),
        "results_after_prune": results if after_prune else 0,
        "errors_after_prune": errors if after_prune else 0,
        "results": results,
        "errors": errors,
        "pruned": answered_pruned(fields, decision),
        "recalls": _n(fields.get("recalls")),
        "recalled_tokens": _n(fields.get("recalled_tokens")),
    }


def unit_figures(fields: Mapping, decision: dict | None = None) -> dict:
    """What one decision adds to its conversation's and its task's running figures
    (``QualityUnit``), but the completion's price, which the config holds
    (routing/summaries/units.py). ``decision``: its ``decision_figures``, when known."""
    decision = decision_figures(fields) if decision is None else decision
    billed_usd = fields.get("billed_prompt_cost_usd")
    prompt = fields.get("prompt_tokens")
    return {
        "decisions": 1,
        "billed_decisions": int(billed_usd is not None),
        "billed_usd": billed_usd or 0.0,
        "net_usd": decision["net_usd"],
        "net_decisions": decision["billed"],
        "surprises": decision.get("cache_misses", 0) + decision.get("cache_hits", 0),
        "prompt_tokens": _n(fields.get("measured_tokens") if prompt is None else prompt),
        "pruned": answered_pruned(fields, decision),
    }
