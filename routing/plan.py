"""The frozen plan: everything a request needs to be sent, decided once, before dispatch.

``routing.pipeline.plan_request`` decides it (tier, pinch, the models in
order and their providers, what is measured, the chat body for a chat
upstream, the stable prefixes a provider places cache breakpoints at); the
completion service (routing.completion) adds what only the request's edge
knows (the agent session, the built-in tools left out for the chosen model)
when it freezes the plan for dispatch. After that nothing writes to it and
nothing calls back into it: the dispatcher, the wires and the providers read
its fields and take what they need as arguments. Every figure downstream
reads (the chosen model, its estimated cost, each candidate's, the window
needed) is a field computed here once, not a method that would send a
provider or the relay back into planning.
"""

from dataclasses import dataclass, field

from routing.config import ModelConfig, RouterConfig
from routing.experiments import Arm
from routing.models import RouteDecision
from routing.pricing import prompt_cost_usd
from routing.protocols.canonical import ChatRequest
from routing.pruning import PinchOutcome
from routing.quality import RequestSignals


@dataclass(frozen=True)
class Plan:
    request: ChatRequest
    config: RouterConfig  # the conversation's arm's (routing.experiments)
    path: str
    tier: str
    classifier: str
    candidates: tuple[ModelConfig, ...]
    # The provider of each candidate, resolved once (routing.providers.providers_for).
    providers: tuple
    send_messages: list
    pinch: PinchOutcome | None
    measured_tokens: int
    prefix: tuple[int, int, int] | None
    # The tool definitions as sent (the router's recall tool included), in tokens: counted
    # once (routing.selection.tools_overhead_tokens), read by the cache forecast too.
    tools_tokens: int = 0
    # The caller's body with the (maybe pruned) messages, for a chat upstream; a wire
    # sets the model's ``send_as`` on its copy (fallbacks differ only there).
    upstream_body: dict = field(default_factory=dict)
    prefix_fallback: bool = False  # see routing.prefix_probe
    payload_fingerprints: str = ""  # the probe's, shortened (pinch.prefix.packed)
    conversation: str | None = None
    # The unpruned request's (cached, written) token split, estimated, when
    # pinch changed the payload; None when it went whole.
    unpruned_split: tuple[int, int] | None = None
    # This turn's and the last turn's stable prefix (routing.pruning.stable_prefixes),
    # computed only when a candidate's provider places cache breakpoints; else None.
    stable_prefixes: tuple[int, int] | None = None
    # Added by the completion service before the plan is dispatched: the agent session
    # (routing.sessions) and the built-in tools left out for the chosen model.
    session: object = None
    omitted_tools: tuple = ()
    # Why a routed request went where it did, and what background work it is
    # (routing.session_routing); the model routing's savings are counted against.
    route_reason: str = ""
    background: str = ""
    route_state: str = ""  # the conversation's state after it (RouteState.as_json), or blank
    baseline: ModelConfig | None = None
    arm: Arm = field(default_factory=Arm)
    # What the request says the agent did (routing.quality); None if it could not be read.
    signals: RequestSignals | None = None
    # Each sent message's text tokens (pinch's estimate), carried through the conversation
    # (pinch.carry) for the cache forecast (routing.cache_forecast); None: read there.
    payload_tokens: list[int] | None = None
    # Derived once, below.
    model: ModelConfig = field(init=False)
    costs: dict = field(init=False)  # model id -> estimated prompt cost, each candidate's
    estimated_cost_usd: float = field(init=False)
    needed_window: int = field(init=False)  # the prompt as measured plus the answer asked for
    over_window: bool = field(init=False)

    def __post_init__(self):
        rate = self.config.objective.assumed_cache_rate
        costs = {m.id: prompt_cost_usd(m, self.measured_tokens, rate) for m in self.candidates}
        model = self.candidates[0]
        needed = self.measured_tokens + self.request.max_tokens
        derived = {
            "model": model,
            "costs": costs,
            "estimated_cost_usd": costs[model.id],
            "needed_window": needed,
            # A pinned model asked for a prompt its window cannot hold: sent anyway, as
            # asked (the caller may know better); the answer's header and the row say so.
            # Routing never picks such a model.
            "over_window": self.path == RouteDecision.PATH_PASSTHROUGH
            and needed > model.context_window,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def at_the_edge(self, session, omitted_tools: tuple) -> "Plan":
        """This plan with what the request's edge decides (the completion service's
        freeze): the agent session and the built-in tools left out. The derived fields
        are carried, as neither changes them: ``dataclasses.replace`` ran
        ``__post_init__`` again, every candidate's cost, 8 us of a 2 KB request."""
        frozen = object.__new__(Plan)
        frozen.__dict__.update(self.__dict__, session=session, omitted_tools=omitted_tools)
        return frozen
