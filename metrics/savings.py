"""What each cause saved, from the same rows as the bill: routing, pinch, the cache.

Every billed decision (the provider reported usage) is priced four ways,
each one cause away from the next, so the causes and the bill add up by
construction: what the request would have cost

0. on the baseline model (the row's ``baseline_model``: ``routing.baseline_model``,
   else the dearest model the request could have used; a pinned request's own),
   unpruned, every prompt token at the full input price;
1. on the model it went to, the same way;
2. on that model, unpruned, with the cache's reads and writes (the row's
   ``unpruned_cost_usd``, which is the billed cost when pinch sent it whole);
3. as billed: pinch's payload with the cache (``billed_prompt_cost_usd``).

Completion tokens are priced on the baseline model in 0 and on the chosen one
after. ``routing_usd_30d`` is 0 - 1, ``cache_usd_30d`` 1 - 2, ``pinch_usd_30d``
2 - 3 and ``bill_usd_30d`` is 3, so ``baseline_usd_30d`` = bill + routing +
cache + pinch, to the micro-dollar as shown (the total is the sum of the
rounded parts). The unpruned prompt is the billed prompt tokens plus what
pinch removed. A row whose model is no longer configured cannot be priced:
``unpriced_calls_30d`` counts them, and they add to no cause but pinch.

Pinch's figure is pinch net of the cache, the one ``pinch_summary`` shows as
``net_dollars_saved_usd_30d``: both come from ``metrics.summary.net_saving_usd``
(one home, so the two never differ by a rounding). Each row's net was priced
when it was written, so a row of a model no longer configured still counts
there.

Against the cache the bill had (issue 41): a row the provider billed no cache
read or write for (an upstream that reports no cached tokens) had its
unpruned estimate priced without a cache too, every token at the full price
(``routing.dispatch.Outcome.unpruned_cost_usd``). For such rows step 1 *is*
step 2: their unpruned cost stands for the full price on the chosen model,
so the cache is credited exactly nothing, and routing prices the same cost
on the baseline at the ratio of the two prompt prices. Otherwise the
estimate's token count (characters / 3) and the provider's count would
differ, and the difference would read as a cache saving nobody had.

Two grouped queries over the window of ``pinch_summary`` (``summary_window``), on
the summary tables (routing/summaries/); the arithmetic is Python's on the sums,
so SQLite and PostgreSQL agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Sum

from metrics.summary import (
    DEFAULT_DAYS,
    DOLLAR_DIGITS,
    Window,
    model_rows,
    net_saving_usd,
    summary_window,
)
from routing.config import RouterConfig
from routing.formatting import format_money
from routing.pricing import PER_TOKENS

CAUSES = ("routing_usd_30d", "pinch_usd_30d", "cache_usd_30d")


def cause_rows(window: Window):
    """``(chosen, baseline, rows, prompt, removed, completion tokens, billed, unpruned USD,
    uncached prompt, uncached removed tokens, uncached unpruned USD)``."""
    return (
        window.summaries()
        .filter(billed__gt=0)
        .values_list("chosen_model", "baseline_model")
        .annotate(
            decisions=Sum("billed"),
            prompt=Sum("billed_prompt_tokens"),
            removed=Sum("billed_removed_tokens"),
            completion=Sum("billed_completion_tokens"),
            billed_usd=Sum("billed_prompt_usd"),
            unpruned=Sum("unpruned_usd"),
            uncached_prompt=Sum("uncached_prompt_tokens"),
            uncached_removed=Sum("uncached_removed_tokens"),
            uncached_unpruned=Sum("uncached_unpruned_usd"),
        )
        .order_by("chosen_model", "baseline_model")
    )


def causes_from_rows(rows: Iterable[tuple], config: RouterConfig, pinch: float) -> dict:
    """The savings by cause from ``cause_rows``' tuples and pinch's net saving
    (``net_saving_usd``). Pure: no database."""
    routing = cache = bill = 0.0
    billed_calls = unpriced = 0
    for (
        chosen_id,
        baseline_id,
        count,
        prompt,
        removed,
        completion,
        billed,
        unpruned,
        uncached_prompt,
        uncached_removed,
        uncached_unpruned,
    ) in rows:
        billed_calls += count
        chosen = config.model(chosen_id)
        if chosen is None:
            unpriced += count
            continue
        baseline = config.model(baseline_id) or chosen
        unpruned, uncached_unpruned = unpruned or 0.0, uncached_unpruned or 0.0
        # The rows with a cache: their unpruned tokens at the full price. The rows without:
        # their unpruned cost, which is already at the full price.
        cached_tokens = prompt + removed - uncached_prompt - uncached_removed
        uncached_on_baseline = (
            uncached_unpruned * baseline.prompt_price / chosen.prompt_price
            if chosen.prompt_price
            else 0.0
        )
        full_on_baseline = (
            cached_tokens * baseline.prompt_price + completion * baseline.completion_price
        ) / PER_TOKENS + uncached_on_baseline
        completion_cost = completion * chosen.completion_price / PER_TOKENS
        cached_full = cached_tokens * chosen.prompt_price / PER_TOKENS
        full_on_chosen = cached_full + uncached_unpruned + completion_cost
        as_billed = (billed or 0.0) + completion_cost
        routing += full_on_baseline - full_on_chosen
        # Step 1 - step 2 over the rows with a cache alone: the rows without add 0 exactly.
        cache += cached_full - (unpruned - uncached_unpruned)
        bill += as_billed
    figures = {
        "routing_usd_30d": round(routing, DOLLAR_DIGITS),
        "pinch_usd_30d": round(pinch, DOLLAR_DIGITS),
        "cache_usd_30d": round(cache, DOLLAR_DIGITS),
        "bill_usd_30d": round(bill, DOLLAR_DIGITS),
    }
    # The sum of the rounded parts, so the identity holds on every surface as shown.
    figures["baseline_usd_30d"] = round(sum(figures.values()), DOLLAR_DIGITS)
    figures["billed_calls_30d"] = billed_calls
    figures["unpriced_calls_30d"] = unpriced
    return figures


def savings_by_cause(config: RouterConfig, now: datetime | None = None, days: int = DEFAULT_DAYS):
    """What routing, pinch and the cache saved over the window, and the bill (two queries)."""
    return window_causes(config, summary_window(config, now, days))


def window_causes(config: RouterConfig, window: Window) -> dict:
    return causes_from_rows(cause_rows(window), config, net_saving_usd(model_rows(window)))


# How the surfaces name the figures, in the order they list them.
CAUSE_LABELS = (
    ("routing_usd_30d", "routing"),
    ("pinch_usd_30d", "pinch (net of the cache)"),
    ("cache_usd_30d", "the prompt cache"),
    ("bill_usd_30d", "billed"),
    ("baseline_usd_30d", "without the router or the cache"),
)


def cause_lines(figures: dict) -> list[tuple[str, str, str, float]]:
    """(key, label, dollars as shown, value) per figure: the dashboard, the TUI, the command."""
    return [(key, label, format_money(figures[key]), figures[key]) for key, label in CAUSE_LABELS]


def savings_context(config: RouterConfig, window: Window) -> dict:
    """The dashboard include's context (templates/metrics/_savings_by_cause.html)."""
    figures = window_causes(config, window)
    return {**figures, "lines": cause_lines(figures)}
