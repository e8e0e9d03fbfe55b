"""Template filters for figures, so pages print them as ``routing.formatting`` does.

``{{ d.upstream_latency_ms|latency }}`` reads ``46 ms`` on the dashboard, as
in admin and the TUI.
"""

from django import template

from routing import formatting

register = template.Library()

register.filter("count", formatting.format_count_or_missing)
register.filter("latency", formatting.format_latency)
register.filter("cost", formatting.format_cost)


@register.simple_tag
def tokens_in_out(decision) -> str:
    """A decision's usage, ``1,204 → 88`` (``≈`` when the router estimated it)."""
    return formatting.format_tokens_in_out(
        decision.prompt_tokens, decision.completion_tokens, decision.usage_estimated
    )
