"""The request pipeline up to the upstream call: classify, prune, measure, choose.

``plan_request`` is the single code path shared by the API view, the dry run
(``X-Router-Dry-Run``) and ``manage.py pinch_replay``, so what the replay and
the dry run report is what the router does. Its order is a contract:

* routed (``auto``): the conversation's tier (routing.session_routing: held
  through the tool loop, the task classified on the FULL messages at a start
  or a new user turn) -> prune once -> measure the pruned payload plus tool
  definitions -> the conversation's model while it fits, else the cheapest
  fitting model of the tier;
* images for a model without vision are described first when
  ``local_vision`` is on (routing.local_vision), so pinch prunes that request;
* passthrough (a model id): prune once -> measure; the capability check
  follows in ``open_decision``, before the decision exists, so a request it
  rejects leaves no row. The row itself is written once, complete, when the
  answer ends (routing/recording/decisions.py).

Before all of it the conversation's arm is decided (routing/experiments.py:
the holdout runs with pinch off, an experiment with its own settings) and the
request is planned with the arm's config; after it, the quality signals of
the request are read (routing/quality.py) for the decision row.

A client's model name goes through the config's ``aliases`` first, so a name
like ``claude-haiku-4-5`` can mean a registry model or ``auto``; the row keeps
the name the client asked for.
"""

import logging
from dataclasses import dataclass, field

from django.conf import settings

from pinch import estimate_tokens, extract_text
from routing.classifier import classify
from routing.config import ModelConfig, RouterConfig
from routing.conversation_state import RecordedState
from routing.errors import RouterError
from routing.experiments import Arm, arm_config, assign_arm
from routing.limits.ledger import held as budget_held
from routing.local_vision import with_local_vision
from routing.model_list import unknown_model_error
from routing.models import RouteDecision
from routing.prefix_probe import PrefixProbe, conversation_key, prefix_probe
from routing.pricing import blended_prompt_price, prompt_cost_usd
from routing.protocols.canonical import ChatRequest
from routing.providers import CallContext, model_provider
from routing.pruning import (
    LedgerSlot,
    PinchOutcome,
    pinch_messages,
    previous_request_length,
    stable_prefixes,
    turn_lengths,
)
from routing.quality import RequestSignals, request_signals
from routing.recall.store import recalled_indexes
from routing.recording.decisions import OpenDecision, new_decision
from routing.recording.health import require_recording
from routing.selection import (
    baseline_model,
    candidates_for,
    measure_prompt_tokens,
    tools_overhead_tokens,
)
from routing.session_routing import route_request, shifted

log = logging.getLogger(__name__)


@dataclass
class Plan:
    request: ChatRequest
    config: RouterConfig
    path: str
    tier: str
    classifier: str
    candidates: list[ModelConfig]
    send_messages: list
    pinch: PinchOutcome | None
    measured_tokens: int
    prefix: tuple[int, int, int] | None
    prefix_fallback: bool = False  # see routing.prefix_probe
    payload_fingerprints: str = ""  # the probe's, shortened (pinch.prefix.packed)
    conversation: str | None = None
    # The unpruned request's (cached, written) token split, estimated, when
    # pinch changed the payload; None when it went whole.
    unpruned_split: tuple[int, int] | None = None
    # Set by the view before the decision opens: the agent session (routing.sessions)
    # and the built-in tools the wire leaves out for the chosen model.
    session: object = None
    omitted_tools: tuple = ()
    # Why a routed request went where it did, and what background work it is
    # (routing.session_routing); the model routing's savings are counted against.
    route_reason: str = ""
    background: str = ""
    route_state: str = ""  # the conversation's state after it (RouteState.as_json), or blank
    baseline: ModelConfig | None = None
    # The conversation's arm (routing.experiments); ``config`` is already the arm's.
    arm: Arm = field(default_factory=Arm)
    # What the request says the agent did (routing.quality); None if it could not be read.
    signals: RequestSignals | None = None
    _stable_prefixes: tuple[int, int] | None = field(default=None, init=False, repr=False)

    @property
    def model(self) -> ModelConfig:
        return self.candidates[0]

    @property
    def needed_window(self) -> int:
        """The prompt as measured plus the answer asked for: what must fit the window."""
        return self.measured_tokens + self.request.max_tokens

    @property
    def over_window(self) -> bool:
        """A pinned model asked for a prompt its window cannot hold: sent anyway, as asked.

        Routing never picks such a model; a pinned id is passed through (the
        caller may know better, e.g. a window larger than the config says), and
        the answer's header and the row say so.
        """
        return self.path == RouteDecision.PATH_PASSTHROUGH and (
            self.needed_window > self.model.context_window
        )

    @property
    def estimated_cost_usd(self) -> float:
        return self.cost_on(self.model)

    def cost_on(self, model: ModelConfig) -> float:
        return prompt_cost_usd(
            model, self.measured_tokens, self.config.objective.assumed_cache_rate
        )

    def upstream_body(self, model: ModelConfig) -> dict:
        """The caller's body with the model and (maybe pruned) messages swapped in."""
        body = dict(self.request.body)
        body["model"] = model.send_as
        body["messages"] = self.send_messages
        if self.request.stream:
            # Ask for usage so the decision records real token counts; the extra
            # usage chunk is only relayed if the caller asked for it too.
            body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return body

    def call_context(self, model: ModelConfig) -> CallContext:
        return CallContext(model=model, stable_prefixes=self.stable_prefixes)

    def stable_prefixes(self) -> tuple[int, int]:
        """This turn's and the last turn's stable prefix (routing.pruning.stable_prefixes)."""
        if self._stable_prefixes is None:
            self._stable_prefixes = stable_prefixes(
                self.request.messages,
                self.config.pinch,
                self.pinch,
                tools_overhead_tokens(self.request.tools),
            )
        return self._stable_prefixes


def plan_request(
    request: ChatRequest,
    config: RouterConfig,
    api_key_id=None,
    probe: PrefixProbe | None = None,
    measure_prefix: bool = True,
    cheaper_tier: bool = False,
    now: float | None = None,
) -> Plan:
    """Decide where the request goes and what is sent. No database writes, no upstream call.

    ``cheaper_tier``: a routed request goes one tier below the classifier's
    (a key past its soft budget with budget fallback, routing.limits), and the
    conversation's model is not held above it.
    ``now``: when the request is made (POSIX seconds; the clock when None),
    the replay's recorded times.
    """
    key = conversation_key(api_key_id, request.model, request.messages, request.conversation)
    arm = assign_arm(config, key)
    config = arm_config(config, arm)
    extra_tokens = tools_overhead_tokens(request.tools)
    target = config.resolve_model_name(request.model)
    routed = target == config.routing.auto_model
    store = None
    if config.pinch.enabled or routed:
        # One store per process (Redis when configured): ledger, probe, routing state.
        store = probe or prefix_probe(settings.REDIS_URL)
    route, remember_route, route_state = None, None, ""
    # State other workers recorded is read back, except in a replay: it brings its own
    # store and has no decision rows.
    reader = RecordedState().reader if probe is None else lambda column: None
    recalled = recalled_indexes if probe is None else None
    if routed:
        path = RouteDecision.PATH_ROUTED
        route, remember_route = route_request(
            request,
            config,
            store,
            key,
            lambda: shifted(
                classify(request.messages, request.tools, config),
                arm.routing.tier_shift,
                config.routing.tiers,
            ),
            lambda m: blended_prompt_price(m, config.objective.assumed_cache_rate),
            remember=measure_prefix,
            recorded=reader("route_state"),
        )
        tier, classifier_name, hold = route.tier, route.classifier, route.hold
        if cheaper_tier:
            tier, classifier_name = _tier_below(config, tier), f"{classifier_name}+budget"
            hold = None
        price_model = config.model(hold or "") or _cheapest_of_tier(config, tier)
    else:
        pinned = config.model(target)
        if pinned is None:
            raise unknown_model_error(config, request.model)
        path, tier, classifier_name = RouteDecision.PATH_PASSTHROUGH, pinned.tier, ""
        price_model = pinned
    if not config.pinch.enabled:
        store = None  # the ledger and the probe are pinch's
    # Images for a model without vision, described by a local model when configured.
    request = with_local_vision(request, config, price_model)
    send_messages, pinch = pinch_messages(
        request.messages,
        config.pinch,
        extra_tokens,
        cache=config.cache_prices(price_model) if price_model is not None else None,
        slot=None
        if store is None
        else LedgerSlot(store, key, reader("pinch_ledger"), recalled=recalled),
        now=now,
    )
    measured = measure_prompt_tokens(send_messages, request.tools)
    if request.source is not None:
        measured += request.source.left_out_tokens  # thinking, documents: sent natively

    if path == RouteDecision.PATH_ROUTED:
        candidates = candidates_for(
            config, tier, measured, request.max_tokens, request.needed_capabilities
        )
        source = request.source
        if source is not None and source.needs_native:
            # Server tools, documents, built-in tools...: only a model that takes the
            # client's protocol as sent can serve them (Claude Code's WebSearch, a
            # Responses request with file_search, are such requests).
            native = [
                m
                for m in candidates
                if source.served_natively(model_provider(config, m).capabilities)
            ]
            candidates = native or candidates
        # The conversation's model stays first while it fits (routing.session_routing).
        held = [m for m in candidates if m.id == hold]
        candidates = held + [m for m in candidates if m.id != hold]
        route_state = remember_route(candidates[0]).as_json()
    else:
        candidates = [pinned]

    prefix, prefix_fallback, fingerprints = None, False, ""
    if measure_prefix and store is not None and config.pinch.prefix_probe:
        recorded = reader("payload_fingerprints")
        figures = store.figures(key, send_messages, turn_lengths(request.messages), recorded)
        prefix, prefix_fallback = tuple(figures[:3]), figures.fallback
        fingerprints = figures.packed

    return Plan(
        request=request,
        config=config,
        path=path,
        tier=tier,
        classifier=classifier_name,
        candidates=candidates,
        send_messages=send_messages,
        pinch=pinch,
        measured_tokens=measured,
        prefix=prefix,
        prefix_fallback=prefix_fallback,
        payload_fingerprints=fingerprints,
        conversation=key,
        unpruned_split=_unpruned_split(request.messages, pinch, prefix, extra_tokens),
        route_reason=route.reason if route is not None else "",
        background=route.background if route is not None else "",
        route_state=route_state,
        baseline=baseline_model(config, path, candidates[0], measured, request),
        arm=arm,
        signals=_signals(request.messages, pinch),
    )


def _signals(messages, pinch: PinchOutcome | None) -> RequestSignals | None:
    """The quality signals, or None (logged): a measurement never fails a request."""
    compressed = [*pinch.compressed, *pinch.capped] if pinch is not None else ()
    try:
        return request_signals(messages, compressed)
    except Exception as error:  # noqa: BLE001 - measurement only
        log.warning("quality_signals_failed reason=%s", type(error).__name__)
        return None


def _unpruned_split(messages, pinch, prefix, tools_tokens: int) -> tuple[int, int] | None:
    """Estimated (cached, written) tokens of the request had pinch not touched it.

    The agent's previous request ended before its last assistant message;
    without pinch the provider would have read all of it from the cache (tool
    definitions first) when that request was recent: the prefix probe saw it,
    or the probe is off and nothing says otherwise. The rest is written.
    """
    if pinch is None or pinch.tokens_saved <= 0:
        return None
    warm = prefix is None or prefix[1] > 0
    previous = previous_request_length(messages)
    cached = 0
    if warm and previous:
        cached = tools_tokens + sum(estimate_tokens(extract_text(m)) for m in messages[:previous])
    return cached, max(pinch.original_tokens - cached, 0)


def _tier_below(config: RouterConfig, tier: str) -> str:
    tiers = config.routing.tiers
    return tiers[max(tiers.index(tier) - 1, 0)]


def _cheapest_of_tier(config: RouterConfig, tier: str) -> ModelConfig | None:
    """The model a routed request most likely goes to, to price pinch's steps by.

    The choice itself waits for the pruned size; the tier's cheapest model is
    what it picks whenever the window fits, which is nearly always.
    """
    rate = config.objective.assumed_cache_rate
    models = [m for m in config.models if m.routable and m.tier == tier] or list(config.models)
    return min(models, key=lambda m: blended_prompt_price(m, rate), default=None)


def check_capabilities(model: ModelConfig, request: ChatRequest) -> None:
    """422 for a pinned model that cannot possibly serve the request."""
    if request.has_images and not model.has("vision"):
        raise RouterError(
            422, f"The model {model.id!r} does not accept images.", "unsupported_capability"
        )
    if request.wants_json and not model.has("json_mode"):
        raise RouterError(
            422, f"The model {model.id!r} does not support JSON mode.", "unsupported_capability"
        )


def open_decision(plan: Plan, api_key=None) -> OpenDecision:
    """Accept the plan: on passthrough, check capabilities; then open its decision.

    A request the check rejects has no decision, so it leaves no row; a pruned
    passthrough that passes carries its real pinch tokens on the row.
    """
    if plan.path == RouteDecision.PATH_PASSTHROUGH:
        check_capabilities(plan.model, plan.request)
    # No upstream call that could not be recorded, unless the operator allows it.
    require_recording(plan.config.routing.serve_unrecorded)
    # The key's budget: the request's worst case reserved, given back if the decision fails to open.
    with budget_held(plan, api_key) as hold:
        return new_decision(plan, api_key, hold)
