"""How figures read on a screen: the dashboard, admin, the TUI and the command.

One home, so the card, the TUI, the admin decision list and ``manage.py
pinch_summary`` print the same figure the same way (``12.34%``, ``3,752,522``,
``$3.170006``, ``46 ms``, ``1,204 → 88``).
"""

import math

MISSING = "—"  # a figure that was not measured
MAX_COST_DECIMALS = 10  # a one-token prompt on the cheapest models is ~1e-8 USD

SHARE_KEYS = {"share_pruned"}  # shares of 1, shown as a percent
# USD, six decimals: savings per call are tiny.
DOLLAR_KEYS = {"dollars_saved_usd_30d", "net_dollars_saved_usd_30d"}

# The card's figures, in the order the surfaces list them.
CARD_KEYS = (
    "share_pruned",
    "total_tokens_saved",
    "median_tokens_saved",
    "dollars_saved_usd_30d",
    "net_dollars_saved_usd_30d",
    "conversations_cheaper_30d",
    "conversations_dearer_30d",
    "pruned_calls_30d",
    "calls_30d",
)


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


def format_cost(usd) -> str:
    """One request's cost: three significant digits, cents at least (``$0.0000004``, ``$1.25``)."""
    if usd is None:
        return MISSING
    if usd == 0:
        return "$0"
    decimals = min(MAX_COST_DECIMALS, max(2, 2 - math.floor(math.log10(abs(usd)))))
    text = f"{usd:,.{decimals}f}"
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0").ljust(2, "0")
    return f"${whole}.{fraction}"


def format_tokens_in_out(prompt, completion, estimated: bool = False) -> str:
    """Usage of one request: ``1,204 → 88``; ``≈`` when the router estimated it."""
    if prompt is None and completion is None:
        return MISSING
    text = f"{format_count_or_missing(prompt)} → {format_count_or_missing(completion)}"
    return f"≈ {text}" if estimated else text


def format_share(value: float) -> str:
    return f"{value * 100:.2f}%"


def format_dollars(value: float) -> str:
    return f"${value:.6f}"


def format_pinch_value(key: str, value) -> str:
    """One figure of the pinch summary as every surface shows it; ``—`` when absent."""
    if value is None:
        return MISSING
    if key in SHARE_KEYS:
        return format_share(value)
    if key in DOLLAR_KEYS:
        return format_dollars(value)
    return format_count(value)


def pinch_card(summary: dict | None) -> dict | None:
    """The card's figures as displayed (None when pinch is disabled)."""
    if summary is None:
        return None
    return {key: format_pinch_value(key, summary[key]) for key in CARD_KEYS}
