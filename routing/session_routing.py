"""Auto decided per conversation, at task boundaries, with the prompt cache in the price.

A provider caches a prompt prefix per model, so a conversation that changes
model pays its whole prompt again, at the write price. Classifying every
request anew moved agent sessions between models in the middle of their tool
loops; and an agent's requests inside one task are the same task, however
their payload grows. So the tier is chosen when a conversation starts and
when the user speaks again (routing.task_text), and held in between:

* background work (routing.background) goes to the cheapest tier and leaves
  the conversation's state as it was: a title request is no new task. But
  when the conversation's model is warm and reading the prompt there costs
  less than the cheapest model writing it (the rule below, with no turns to
  come: a compaction in the middle of a task), it stays there;
* the first request of a conversation (no state): the task's tier;
* the same task as the conversation's last request (the agent's tool loop):
  the model held, nothing classified;
* a new task: classified. A harder tier is taken (the task needs it); with
  the cache cold anyway (the last request longer ago than the model's cache
  lasts, or a prompt shorter than it caches) the task's tier is taken as at
  a start; a cheaper model only when it pays under the cache: its prefix is
  written in full now and read on each of the ``R`` turns expected still to
  run, against the held model reading it now and on those turns, per prompt
  token ``new.price * (write' + R * read') < held.price * read * (1 + R)``,
  with the prices pinch's steps use (``RouterConfig.cache_prices``) and
  ``R = pinch.payback.turns_ahead * turns run so far`` (pinch's estimate).

A routing arm (routing.experiments, ``routing.tier_shift``) shifts the tier
the task is classified to, so its conversations hold the shifted tier too.

The state (tier, model, where the task began, when) lives beside pinch's
ledger in the prefix probe's store (process memory, or Redis), and on the
conversation's row (routing/models/conversation.py, moved by each decision
recorded), which every worker and instance shares: a request
that does not follow on from the store's state (another worker may have
served the conversation since) reads the row too and takes the later, so a
conversation whose requests land on two workers with no Redis between them
still holds its model (``load_state``). A lost
state (unreadable, or the database down) is a start: the task is classified
again, to the same tier, so losing it costs at most a model change, never a
failed request.
Completion prices are left out of the rule: they favour the cheaper model,
so the rule errs toward keeping the cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from routing.background import SHORT, background_kind
from routing.classifier import Classification
from routing.config import ModelConfig, RouterConfig
from routing.conversation_state import read_back
from routing.selection import measure_prompt_tokens
from routing.task_text import task_start

# Why a routed request went where it did (the decision row's route_reason).
START = "start"
HELD = "held"
KEPT = "kept"
CHANGED = "changed"
UPGRADED = "upgraded"
COLD = "cold"
BACKGROUND = "background"
PER_REQUEST = "per_request"  # session routing off: classified on its own
HELD_CLASSIFIER = "session"  # the classifier column of a held request: none ran
# A 5-minute cache block lasts 300 s, a 1-hour one 3,600 s (Anthropic's TTLs).
CACHE_BLOCK_SECONDS = {"5m": 300.0, "1h": 3600.0}


# json.dumps(..., separators=...) builds an encoder a call: one, built once.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True)
class RouteState:
    """A conversation's tier and model, where its task began, when it was last seen.

    ``turns``: the assistant messages of the request that left it, so that the
    next request shows whether it follows on directly (one more).
    """

    tier: str
    model: str
    task: int
    at: float
    turns: int = -1

    def as_json(self) -> str:
        return _COMPACT.encode([self.tier, self.model, self.task, self.at, self.turns])

    @classmethod
    def from_json(cls, raw: str | bytes | None) -> RouteState | None:
        """The state in ``raw``, or None for anything unreadable (then the request is a start)."""
        if not raw:
            return None
        try:
            tier, model, task, at, turns = json.loads(raw)
            return cls(str(tier), str(model), int(task), float(at), int(turns))
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class SessionChoice:
    tier: str
    classifier: str
    reason: str
    background: str = ""
    # The model to keep first among the candidates (the conversation's), or None.
    hold: str | None = None
    task: int = -1


def cache_seconds(model: ModelConfig, config: RouterConfig) -> float:
    """How long ``model`` keeps a prefix cached after the last request that read it."""
    if model.cache is not None:
        return CACHE_BLOCK_SECONDS[model.cache.ttl]
    return config.routing.session.automatic_cache_seconds


def shifted(classification: Classification, shift: int, tiers) -> Classification:
    """A routing arm's tier (routing.experiments: ``tier_shift``), within the configured tiers."""
    if not shift:
        return classification
    level = min(max(tiers.index(classification.tier) + shift, 0), len(tiers) - 1)
    return Classification(tiers[level], classification.outcome)


def change_pays(
    held: ModelConfig, new: ModelConfig, turns_so_far: int, config: RouterConfig
) -> bool:
    """Whether moving a warm conversation from ``held`` to ``new`` costs less over its rest."""
    old, fresh = config.cache_prices(held), config.cache_prices(new)
    remaining = config.pinch.payback.turns_ahead * turns_so_far
    stay = held.prompt_price * old.read_multiplier * (1 + remaining)
    move = new.prompt_price * (fresh.write_multiplier + fresh.read_multiplier * remaining)
    return move < stay


def cheapest_of_tier(config: RouterConfig, tier: str, rank: Callable) -> ModelConfig | None:
    models = [m for m in config.models if m.routable and m.tier == tier]
    return min(models, key=rank, default=None)


def choose(
    client_model: str,
    messages,
    tools,
    measured_tokens: int,
    config: RouterConfig,
    state: RouteState | None,
    now: float,
    classify: Callable,
    rank: Callable,
    facts=None,
) -> SessionChoice:
    """Where a routed request goes: the tier, why, and the model to hold (pure but ``classify``).

    ``classify()`` returns the task's Classification and is called only when
    the tier is decided anew; ``rank(model)`` orders models by price.
    ``facts``: what is read of each message (pinch.carry.MessageFacts), or None.
    """
    tiers = config.routing.tiers
    kind = background_kind(client_model, messages, tools, measured_tokens, config, facts)
    classification = None
    if kind == SHORT:
        # A short question can still be hard work: then it is not background.
        classification = classify()
        if classification.tier == tiers[-1] and len(tiers) > 1:
            kind = ""
    held = config.model(state.model) if state is not None else None
    if held is not None and not held.routable:
        held = None  # taken out of auto since: the task is chosen for afresh
    if kind:
        outcome = classification.outcome if classification else BACKGROUND
        cheapest = cheapest_of_tier(config, tiers[0], rank)
        warm = held is not None and _warm(state, held, measured_tokens, now, config)
        if warm and cheapest is not None and not change_pays(held, cheapest, 0, config):
            # One request on the warm model reads its prompt from the cache for
            # less than the cheapest model writes it (a compaction mid-task).
            return SessionChoice(state.tier, outcome, BACKGROUND, kind, hold=held.id)
        return SessionChoice(tiers[0], outcome, BACKGROUND, background=kind)
    if not config.routing.session.enabled:
        classification = classification or classify()
        return SessionChoice(classification.tier, classification.outcome, PER_REQUEST)

    task = task_start(messages, facts)
    task = -1 if task is None else task
    if state is not None and held is not None and state.tier in tiers and state.task == task:
        return SessionChoice(state.tier, HELD_CLASSIFIER, HELD, hold=held.id, task=task)

    classification = classification or classify()
    tier = classification.tier
    choice = SessionChoice(tier, classification.outcome, START, task=task)
    if state is None or held is None or state.tier not in tiers:
        return choice
    if tiers.index(tier) > tiers.index(state.tier):
        return SessionChoice(tier, classification.outcome, UPGRADED, task=task)
    if not _warm(state, held, measured_tokens, now, config):
        return SessionChoice(tier, classification.outcome, COLD, task=task)
    candidate = cheapest_of_tier(config, tier, rank)
    if candidate is None or candidate.id == held.id:
        return SessionChoice(state.tier, classification.outcome, KEPT, hold=held.id, task=task)
    turns = assistant_turns(messages)
    if tier != state.tier and change_pays(held, candidate, turns, config):
        return SessionChoice(tier, classification.outcome, CHANGED, task=task)
    return SessionChoice(state.tier, classification.outcome, KEPT, hold=held.id, task=task)


def _warm(state: RouteState, held: ModelConfig, tokens: int, now: float, config) -> bool:
    """Whether the held model's cache still holds the conversation's prompt."""
    if now - state.at > cache_seconds(held, config):
        return False
    return tokens >= config.cache_prices(held).min_cacheable_tokens


def assistant_turns(messages) -> int:
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def next_state(
    choice: SessionChoice, model: ModelConfig, now: float, turns: int, state: RouteState | None
) -> RouteState:
    """The conversation's state after a request.

    Background work and a request classified on its own leave ``state`` as it
    was but for its turns, so that the next request still follows on from it;
    with no state, an empty one (no tier or model: the next request is a start)
    says as much, so that the next request need not look for one elsewhere.
    """
    if choice.reason in (BACKGROUND, PER_REQUEST):
        return replace(state or RouteState("", "", -1, now), turns=turns)
    return RouteState(choice.tier, model.id, choice.task, now, turns)


def load_state(store, key: str, turns: int, recorded=None) -> RouteState | None:
    """The conversation's state before a request with ``turns`` assistant messages.

    The store's while the request follows on directly from it (one more
    assistant message) or repeats it (a retry); else the later of it and
    ``recorded(key)``'s (the conversation row's ``route_state``): routing.conversation_state.
    """
    stored = RouteState.from_json(store.load_route(key)) if store is not None else None
    follows = stored is not None and stored.turns in (turns - 1, turns)
    return read_back(stored, follows, recorded, key, RouteState.from_json)


def route_request(
    request,
    config: RouterConfig,
    store,
    key: str,
    classify,
    rank,
    remember: bool,
    recorded=None,
    measured: int | None = None,
    facts=None,
):
    """``choose`` with the conversation's state (``load_state``); returns (choice, save).

    ``measured``: the request's prompt as measured (routing.selection), when the
    caller has it already; ``facts``: what is read of each message, carried
    through the conversation (pinch.carry.MessageFacts), when the caller has it.

    ``save(model)`` returns the state after the request once its model is
    known, as JSON for the conversation's row, and keeps it in ``store`` (not
    when ``remember`` is false: a dry run or a token count).
    """
    now = time.time()
    if facts is not None:
        turns = facts.roles.count("assistant")
    else:
        turns = assistant_turns(request.messages)
    state = load_state(store, key, turns, recorded)
    if measured is None:
        measured = measure_prompt_tokens(request.messages, request.tools)
    choice = choose(
        request.model,
        request.messages,
        request.tools,
        measured,
        config,
        state,
        now,
        classify,
        rank,
        facts,
    )

    def save(model: ModelConfig) -> str:
        after = next_state(choice, model, now, turns, state).as_json()
        if remember and store is not None:
            store.save_route(key, after)
        return after

    return choice, save
