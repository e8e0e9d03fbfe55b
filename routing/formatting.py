"""How figures read on a screen: the dashboard, admin, the TUI and the command.

One home, so the card, the chart, the TUI, the admin decision list and
``manage.py pinch_summary`` print the same figure the same way (``12.34%``,
``3,752,522``, ``$3.17``, ``-$0.0027``, ``46 ms``, ``1,204 → 88``). It lives
in ``routing`` because routing's admin and ``metrics`` both print figures,
and apps import one way (metrics may import routing, never the reverse).

Money is for people: the sign before the dollar (``-$0.12``, a loss never
reads as ``$-0.12``), two significant digits and cents at least (six decimals
at most). A column of per-request costs has one precision, so it can be read
down (``$0.0540``, ``$0.0161``, ``<$0.0001``).
"""

import functools
import math

MISSING = "—"  # a figure that was not measured
MAX_MONEY_DECIMALS = 6  # under a millionth of a dollar is noise for a person
COST_DECIMALS = 4  # one request's cost: a hundredth of a cent tells requests apart

SHARE_KEYS = {"share_pruned"}  # shares of 1, shown as a percent
# USD, for people: format_money.
DOLLAR_KEYS = {"dollars_saved_usd_30d", "net_dollars_saved_usd_30d"}

# The card's figures, in the order the surfaces list them: the money first, net
# of the cache (it can be a loss), then the conversations it made cheaper and
# dearer, then the gross saving and the counts behind it.
CARD_KEYS = (
    "net_dollars_saved_usd_30d",
    "conversations_cheaper_30d",
    "conversations_dearer_30d",
    "dollars_saved_usd_30d",
    "share_pruned",
    "total_tokens_saved",
    "median_tokens_saved",
    "pruned_calls_30d",
    "calls_30d",
    "failed_calls_30d",
)
# What a person reads beside each figure (the TUI; the card has its own wording).
CARD_LABELS = {
    "net_dollars_saved_usd_30d": "Net saved, after the cache",
    "conversations_cheaper_30d": "Conversations cheaper",
    "conversations_dearer_30d": "Conversations dearer",
    "dollars_saved_usd_30d": "Gross saved, before the cache",
    "share_pruned": "Share of calls pruned",
    "total_tokens_saved": "Tokens saved",
    "median_tokens_saved": "Median saved per pruned call",
    "pruned_calls_30d": "Pruned calls",
    "calls_30d": "Calls answered",
    "failed_calls_30d": "Failed calls (apart)",
}


def format_count(value) -> str:
    """Tokens and calls: thousands separated, one decimal only for a half (a median)."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def format_count_or_missing(value) -> str:
    return MISSING if value is None else format_count(value)


def format_latency(milliseconds) -> str:
    """``46 ms`` under a second, ``4.5 s`` from there: one unit a reader sees at once."""
    if milliseconds is None:
        return MISSING
    if milliseconds < 999.5:  # 999.6 would read "1,000 ms"
        return f"{milliseconds:,.0f} ms"
    return f"{milliseconds / 1000:,.1f} s"


def _money_form(render):
    """Every money form reads nothing as ``—`` and zero as ``$0``; ``render`` does the rest."""

    @functools.wraps(render)
    def formatted(usd) -> str:
        if usd is None:
            return MISSING
        if usd == 0:
            return "$0"
        return render(usd)

    return formatted


@_money_form
def format_cost(usd) -> str:
    """One request's cost, four decimals in every row (``$0.0540``, ``<$0.0001``, ``$0``)."""
    smallest = 10**-COST_DECIMALS
    if abs(usd) < smallest / 2:
        return f"<${smallest:.{COST_DECIMALS}f}"
    return _signed(usd, COST_DECIMALS)


def _signed(usd: float, decimals: int) -> str:
    sign = "-" if usd < 0 and round(abs(usd), decimals) else ""
    return f"{sign}${abs(usd):,.{decimals}f}"


@_money_form
def format_money(usd) -> str:
    """A sum of money for people: ``$1.55``, ``-$0.12``, ``-$0.0027``, ``$0``."""
    if abs(usd) < 10**-MAX_MONEY_DECIMALS / 2:
        return "≈ $0"
    digits = 2 - math.floor(math.log10(abs(usd))) - 1  # two significant digits
    text = _signed(usd, min(MAX_MONEY_DECIMALS, max(2, digits)))
    whole, _, fraction = text.partition(".")
    # $0.0010 reads as $0.001; cents keep both digits ($0.10).
    return f"{whole}.{fraction.rstrip('0').ljust(2, '0')}"


def money_tone(usd) -> str:
    """``gain``, ``loss`` or ``even``: the colour a sum of money is shown in, on every surface."""
    if usd is None or round(usd, MAX_MONEY_DECIMALS) == 0:
        return "even"
    return "gain" if usd > 0 else "loss"


def format_days(days: int) -> str:
    """``the last day``, ``the last 30 days``: a window as a person says it."""
    return "the last day" if days == 1 else f"the last {days:,} days"


def format_tokens_in_out(prompt, completion, estimated: bool = False) -> str:
    """Usage of one request: ``1,204 → 88``; ``≈`` when the router estimated it."""
    if prompt is None and completion is None:
        return MISSING
    text = f"{format_count_or_missing(prompt)} → {format_count_or_missing(completion)}"
    return f"≈ {text}" if estimated else text


def format_share(value: float) -> str:
    return f"{value * 100:.2f}%"


def format_pinch_value(key: str, value) -> str:
    """One figure of the pinch summary as every surface shows it; ``—`` when absent."""
    if value is None:
        return MISSING
    if key in SHARE_KEYS:
        return format_share(value)
    if key in DOLLAR_KEYS:
        return format_money(value)
    return format_count(value)


def pinch_card(summary: dict | None) -> dict | None:
    """The card's figures as displayed (None when pinch is disabled)."""
    if summary is None:
        return None
    return {key: format_pinch_value(key, summary[key]) for key in CARD_KEYS}
