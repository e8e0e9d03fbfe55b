"""The request pipeline up to the upstream call: classify, prune, measure, choose.

``plan_request`` is the single code path shared by the completion service, the dry run
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
  follows in the completion service (routing.completion), before the
  decision exists, so a request it rejects leaves no row. The row itself is
  written once, complete, when the answer ends (routing/recording/decisions.py).

What it returns is the frozen plan (routing.plan): the models in order with
their providers, the chat body for a chat upstream, the stable prefixes a
provider places cache breakpoints at; nothing downstream changes it.

Before all of it the conversation's arm is decided (routing/experiments.py:
the holdout runs with pinch off, an experiment with its own settings) and the
request is planned with the arm's config; after it, the quality signals of
the request are read (routing/quality.py) for the decision row.

A client's model name goes through the config's ``aliases`` first, so a name
like ``claude-haiku-4-5`` can mean a registry model or ``auto``; the row keeps
the name the client asked for.
"""

import logging
from functools import partial

from django.conf import settings

from pinch import CHARS_PER_TOKEN, estimate_tokens, extract_text
from routing.classifier import classify
from routing.config import ModelConfig, RouterConfig
from routing.conversation_state import RecordedState
from routing.experiments import arm_config, assign_arm
from routing.local_vision import with_local_vision
from routing.model_list import unknown_model_error
from routing.models import RouteDecision
from routing.plan import Plan
from routing.prefix_probe import PrefixProbe, carried_facts, conversation_key, prefix_probe
from routing.pricing import blended_prompt_price
from routing.protocols.canonical import ChatRequest
from routing.providers import providers_for
from routing.pruning import (
    LedgerSlot,
    PinchOutcome,
    pinch_messages,
    previous_request_length,
    stable_prefixes,
    turn_lengths,
)
from routing.quality import RequestSignals, request_signals
from routing.recall.store import restored
from routing.recall.tool import tools_sent, tools_sent_chars
from routing.selection import (
    baseline_model,
    candidates_for,
    measure_prompt_tokens,
    remeasured,
    tools_chars,
)
from routing.session_routing import route_request, shifted

log = logging.getLogger(__name__)


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
    # The tools as sent: the router's recall tool counts where it is offered (routing/recall/),
    # in the measured prompt and in pinch's budget; not in the cost without pinch.
    tools = tools_sent(request.tools, config.pinch)
    # The definitions are written out once (json.dumps of an agent's took 0.1 ms or more, and
    # they were counted four times a request): every figure below takes these.
    declared_chars = tools_chars(request.tools)
    extra_tokens = tools_sent_chars(request.tools, config.pinch, declared_chars) // CHARS_PER_TOKEN
    router_tool_tokens = extra_tokens - declared_chars // CHARS_PER_TOKEN
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
    # What recalls taught pinch, kept with the conversation's state (none in a replay).
    recalled = None
    if probe is None:
        recalled = partial(restored, store=store, recorded=reader("recall_restored"))
    # What is read of each message, read once, and carried from the conversation's
    # previous request where this one repeats it (pinch.carry).
    facts = carried_facts(request.messages, store.last_facts(key)) if store is not None else None
    # The request as sent, measured once: routing reads it, and it is the payload's
    # figure too when pinch and local vision leave the messages as they are.
    unpruned = measure_prompt_tokens(
        request.messages, tools, facts.sizes if facts is not None else None, extra_tokens
    )
    if routed:
        path = RouteDecision.PATH_ROUTED
        route, remember_route = route_request(
            request,
            config,
            store,
            key,
            lambda: shifted(
                classify(request.messages, request.tools, config, facts),
                arm.routing.tier_shift,
                config.routing.tiers,
            ),
            lambda m: blended_prompt_price(m, config.objective.assumed_cache_rate),
            remember=measure_prefix,
            recorded=reader("route_state"),
            measured=unpruned,
            facts=facts,
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
    keeper = store
    if not config.pinch.enabled:
        store = None  # the ledger and the probe are pinch's
    # Images for a model without vision, described by a local model when configured.
    sent_as, sent_tools = request.messages, request.tools
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
        facts=facts,
    )
    measured = unpruned
    if send_messages is not sent_as:
        # Only what pinch or local vision changed is measured again.
        same_tools = request.tools is sent_tools
        sizes, sent = (
            (facts.sizes, facts.sent(send_messages)) if facts is not None else (None, None)
        )
        measured = remeasured(unpruned, sent_as, send_messages, sizes, sent) if same_tools else None
        if measured is None:
            measured = measure_prompt_tokens(send_messages, tools, tools_tokens=extra_tokens)
    if request.source is not None:
        measured += request.source.left_out_tokens  # thinking, documents: sent natively

    if path == RouteDecision.PATH_ROUTED:
        candidates = candidates_for(
            config, tier, measured, request.max_tokens, request.needed_capabilities
        )
        providers = providers_for(config, candidates)
        source = request.source
        if source is not None and source.needs_native:
            # Server tools, documents, built-in tools...: only a model that takes the
            # client's protocol as sent can serve them (Claude Code's WebSearch, a
            # Responses request with file_search, are such requests).
            native = [
                i
                for i, provider in enumerate(providers)
                if getattr(provider.capabilities, source.native_capability)
            ]
            if native:
                candidates = [candidates[i] for i in native]
                providers = tuple(providers[i] for i in native)
        # The conversation's model stays first while it fits (routing.session_routing).
        order = sorted(range(len(candidates)), key=lambda i: candidates[i].id != hold)
        candidates = [candidates[i] for i in order]
        providers = tuple(providers[i] for i in order)
        route_state = remember_route(candidates[0])
    else:
        candidates = [pinned]
        providers = providers_for(config, candidates)

    prefix, prefix_fallback, fingerprints = None, False, ""
    if measure_prefix and store is not None and config.pinch.prefix_probe:
        recorded = reader("payload_fingerprints")
        figures = store.figures(key, send_messages, turn_lengths(request.messages), recorded, facts)
        prefix, prefix_fallback = tuple(figures[:3]), figures.fallback
        fingerprints = figures.packed
    signals = _signals(request.messages, pinch, facts)
    payload_tokens = None
    if facts is not None and prefix is not None:  # what the cache forecast reads
        payload_tokens = facts.sent(send_messages).tokens
    if keeper is not None:
        keeper.keep_facts(key, facts)

    return Plan(
        request=request,
        config=config,
        path=path,
        tier=tier,
        classifier=classifier_name,
        candidates=tuple(candidates),
        providers=providers,
        send_messages=send_messages,
        upstream_body=_upstream_body(request, send_messages),
        pinch=pinch,
        measured_tokens=measured,
        tools_tokens=extra_tokens,
        prefix=prefix,
        prefix_fallback=prefix_fallback,
        payload_fingerprints=fingerprints,
        conversation=key,
        unpruned_split=_unpruned_split(request.messages, pinch, prefix, router_tool_tokens),
        stable_prefixes=stable_prefixes(request.messages, config.pinch, pinch, extra_tokens)
        if any(p.capabilities.cache_breakpoints for p in providers)
        else None,
        route_reason=route.reason if route is not None else "",
        background=route.background if route is not None else "",
        route_state=route_state,
        baseline=baseline_model(config, path, candidates[0], measured, request),
        arm=arm,
        signals=signals,
        payload_tokens=payload_tokens,
    )


def _upstream_body(request: ChatRequest, send_messages: list) -> dict:
    """The caller's body with the (maybe pruned) messages swapped in, for a chat upstream."""
    body = dict(request.body)
    body["messages"] = send_messages
    if request.stream:
        # Ask for usage so the decision records real token counts; the extra
        # usage chunk is only relayed if the caller asked for it too.
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    return body


def _signals(messages, pinch: PinchOutcome | None, facts) -> RequestSignals | None:
    """The quality signals, or None (logged): a measurement never fails a request."""
    compressed = [*pinch.compressed, *pinch.capped] if pinch is not None else ()
    # The facts are those of the messages they were read of (local vision may have made
    # new ones since).
    facts = facts if facts is not None and facts.messages is messages else None
    try:
        return request_signals(messages, compressed, facts=facts)
    except Exception as error:  # noqa: BLE001 - measurement only
        log.warning("quality_signals_failed reason=%s", type(error).__name__)
        return None


def _unpruned_split(messages, pinch, prefix, router_tool_tokens: int) -> tuple[int, int] | None:
    """Estimated (cached, written) tokens of the request had pinch not touched it.

    The agent's previous request ended before its last assistant message;
    without pinch the provider would have read all of it from the cache (tool
    definitions first) when that request was recent: the prefix probe saw it,
    or the probe is off and nothing says otherwise. The rest is written.
    Without pinch the router's recall tool is not sent: its tokens, in pinch's
    figures, are left out.
    """
    if pinch is None or pinch.tokens_saved <= 0:
        return None
    warm = prefix is None or prefix[1] > 0
    previous = previous_request_length(messages)
    cached = 0
    unpruned = pinch.original_tokens - router_tool_tokens
    if warm and previous:
        # pinch's original figure is the tools' and every message's text: what the previous
        # request carried is it but for this turn's few messages, read instead of all of them.
        cached = unpruned - sum(estimate_tokens(extract_text(m)) for m in messages[previous:])
    return cached, max(unpruned - cached, 0)


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
