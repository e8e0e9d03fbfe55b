"""The replay with routing: where auto sends each request of real sessions, and what it costs.

``routing.replay.sessions`` plans every request of a session through ``plan_request``
with one prefix probe per run, which also holds each conversation's routing
state (routing.session_routing): the replay routes as the router does. This
runs it four ways on the same sessions, under one cache price model (with
or without a block of tool definitions):

* ``baseline``: every request pinned to the baseline model (``routing.baseline_model``,
  else the dearest routable model), pinch off;
* ``routing``: the auto model, pinch off;
* ``pinch``: pinned to the baseline model, pinch on;
* ``routing + pinch``: both.

Each model keeps its own prompt and completion prices; the price model sets
the cache's read and write multipliers for all of them (``own_prices``). A
request is priced on the model it went to: the prefix it shares with the
session's previous request is read, the rest written, and when the model
changed since that request nothing is read (a cache is per model). Its answer
(the session's next assistant message) at the model's completion price.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pinch import estimate_tokens, extract_text
from routing.config import RouterConfig
from routing.replay.corpus import Session
from routing.replay.sessions import CachePrices, ReplayResult, TurnRecord, priced_config, replay

PER_TOKENS = 1_000_000
ARMS = ("baseline", "routing", "pinch", "routing + pinch")


def own_prices(config: RouterConfig, prices: CachePrices) -> RouterConfig:
    """``config`` with ``prices``' cache multipliers on every model, each at its own price."""
    flat = priced_config(config, prices)
    models = tuple(
        priced.model_copy(
            update={
                "prompt_price": own.prompt_price,
                "cached_prompt_price": own.prompt_price * prices.read_multiplier,
            }
        )
        for priced, own in zip(flat.models, config.models, strict=True)
    )
    return flat.model_copy(update={"models": models})


def baseline_model_id(config: RouterConfig) -> str:
    if config.routing.baseline_model is not None:
        return config.routing.baseline_model
    routable = [m for m in config.models if m.routable] or list(config.models)
    return max(routable, key=lambda m: (m.prompt_price, m.completion_price)).id


@dataclass
class ArmCost:
    """One arm's requests, money and routing over all sessions."""

    requests: int = 0
    errors: int = 0
    prompt_usd: float = 0.0
    completion_usd: float = 0.0
    tiers: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    model_changes: int = 0
    sessions_changed: int = 0

    @property
    def usd(self) -> float:
        return self.prompt_usd + self.completion_usd


def price_run(
    result: ReplayResult, sessions: list[Session], config: RouterConfig, prices: CachePrices
) -> ArmCost:
    """What the requests of one replay cost on the models they went to (see the module doc)."""
    answers = {s.name: s.messages for s in sessions}
    cost = ArmCost(errors=len(result.errors))
    by_session: dict[str, list[TurnRecord]] = {}
    for record in result.records:
        by_session.setdefault(record.conversation, []).append(record)
    for name, records in by_session.items():
        previous, changes = None, 0
        for record in records:
            model_id, tier, reason = record.route
            model = config.model(model_id)
            cached, uncached = record.cached_tokens, record.uncached_tokens
            if previous is not None and model_id != previous:
                cached, uncached, changes = 0, cached + uncached, changes + 1
            weighted = cached * prices.read_multiplier + uncached * prices.write_multiplier
            answer = estimate_tokens(extract_text(answers[name][record.turn]))
            cost.requests += 1
            cost.prompt_usd += weighted * model.prompt_price / PER_TOKENS
            cost.completion_usd += answer * model.completion_price / PER_TOKENS
            cost.tiers[tier] += 1
            cost.reasons[reason or "pinned"] += 1
            previous = model_id
        cost.model_changes += changes
        cost.sessions_changed += changes > 0
    return cost


def route_replay(
    sessions: list[Session], config: RouterConfig, prices: CachePrices, tools_tokens: int = 0
) -> dict[str, ArmCost]:
    """The four arms on ``sessions`` under ``prices`` (module doc), by arm name."""
    priced = own_prices(config, prices)
    unpinched = priced.model_copy(
        update={"pinch": priced.pinch.model_copy(update={"enabled": False})}
    )
    baseline = baseline_model_id(config)
    runs = {
        "baseline": (unpinched, baseline),
        "routing": (unpinched, config.routing.auto_model),
        "pinch": (priced, baseline),
        "routing + pinch": (priced, config.routing.auto_model),
    }
    return {
        arm: price_run(
            replay(sessions, arm_config, model=model, tools_tokens=tools_tokens),
            sessions,
            arm_config,
            prices,
        )
        for arm, (arm_config, model) in runs.items()
    }
