"""Picking the model for a routed request.

The cheapest model of the tier (blended prompt price, see routing.pricing)
whose context window holds the measured prompt plus the requested completion;
if none of the tier fits, the next tier up. The rest of that ordered list is
the fallback chain when the chosen model's provider fails.
"""

import json

from pinch import CHARS_PER_TOKEN, estimate_tokens, extract_text
from routing.config import ModelConfig, RouterConfig
from routing.errors import RouterError
from routing.pricing import blended_prompt_price


def tools_overhead_tokens(tools) -> int:
    """Tool definitions ride along on every call and fill the same window."""
    return len(json.dumps(tools)) // CHARS_PER_TOKEN if tools else 0


def measure_prompt_tokens(messages, tools) -> int:
    return sum(estimate_tokens(extract_text(m)) for m in messages) + tools_overhead_tokens(tools)


def candidates_for(
    config: RouterConfig, tier: str, measured_tokens: int, max_tokens: int, needed: set[str]
) -> list[ModelConfig]:
    """Models to try in order: the tier's fitting models by price, then the tiers above."""
    tiers = config.routing.tiers
    rate = config.objective.assumed_cache_rate
    needed_window = measured_tokens + max_tokens
    ordered = []
    for tier_name in tiers[tiers.index(tier) :]:
        fitting = [
            m
            for m in config.models
            if m.tier == tier_name
            and m.context_window >= needed_window
            and needed.issubset(m.capabilities)
        ]
        fitting.sort(key=lambda m: blended_prompt_price(m, rate))
        ordered.extend(fitting)
    if ordered:
        return ordered
    if not any(needed.issubset(m.capabilities) for m in config.models):
        raise RouterError(
            422,
            f"No configured model supports what this request needs ({', '.join(sorted(needed))}).",
            "capability_unavailable",
        )
    raise RouterError(
        400,
        f"The request measures {measured_tokens} prompt tokens plus {max_tokens} for the answer; "
        f"no configured model of tier {tier!r} or above has a context window that large.",
        "context_length_exceeded",
    )
