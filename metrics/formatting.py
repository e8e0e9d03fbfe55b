"""How the pinch figures read on a screen: the dashboard card, the TUI and the command.

One home, so the card, the TUI and ``manage.py pinch_summary`` print the same
figure the same way (``12.34%``, ``3,752,522``, ``$3.170006``).
"""

SHARE_KEYS = {"share_pruned"}  # shares of 1, shown as a percent
DOLLAR_KEYS = {"dollars_saved_usd_30d"}  # USD, six decimals: savings per call are tiny

# The card's figures, in the order the surfaces list them.
CARD_KEYS = (
    "share_pruned",
    "total_tokens_saved",
    "median_tokens_saved",
    "dollars_saved_usd_30d",
    "pruned_calls_30d",
    "calls_30d",
)


def format_count(value) -> str:
    """Tokens and calls: thousands separated, one decimal only for a half (a median)."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def format_share(value: float) -> str:
    return f"{value * 100:.2f}%"


def format_dollars(value: float) -> str:
    return f"${value:.6f}"


def format_pinch_value(key: str, value) -> str:
    """One figure of the pinch summary as every surface shows it; ``—`` when absent."""
    if value is None:
        return "—"
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
