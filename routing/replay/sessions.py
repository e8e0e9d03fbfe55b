"""Replay recorded agent sessions through the router's planning path, turn by turn.

What pinch saves can only be judged on real sessions: an agent resends the
whole conversation every turn, and the prompt-cache discount depends on what
the NEXT request repeats. So a session is replayed as the agent sent it: for
every assistant message at index ``t`` the request is ``messages[:t]`` (plus
the session's tool definitions, or a block of a given size), and every request
goes through ``routing.pipeline.plan_request``, the one code path of the API
view and the dry run, with one in-memory ``PrefixProbe`` per run: it holds the
prefix hashes and pinch's ledgers, so the replay sees each conversation's
turns as the router does. Nothing is sent upstream and nothing is written to
the database.

Three things are measured per request:

* tokens: estimated prompt tokens before and after pinch (tools included);
* money, under prefix-cache price models (``CachePrices``): the leading
  messages a payload shares with the session's previous payload are read at
  ``read_multiplier`` times the input price, the rest written at
  ``write_multiplier``; the unpruned baseline shares all but its new messages.
  A session that records when each answer was written (``assistant_times``)
  is replayed on that clock: a request after a gap longer than the model's
  cache lifetime finds the cache cold, pinch plans it so, and it is priced
  as a full write, with pinch and without (``cold_gaps=False`` ignores the
  times);
* references kept: the distinctive tokens (paths, identifiers, numbers:
  ``pinch.lines.distinctive_tokens``) that the agent's next message uses and
  that its context held only in tool results (no system, user or assistant
  message had them), and of those, the ones still in the payload sent. A
  reference pinch removed is one the agent needed and could not read.

The price models are ``routing.replay.prices``; the command's table and
report are in ``metrics.replay``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from pinch import estimate_tokens, extract_text
from pinch.lines import mentioned_tokens
from routing.config import RouterConfig
from routing.errors import RouterError
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe, conversation_key
from routing.pricing import billed_prompt_cost_usd
from routing.protocols.chat.request import parse_chat_request
from routing.replay.corpus import Session
from routing.replay.prices import (
    CONFIGURED,
    PRICE_MODELS,
    CachePrices,
    Prices,
    ReplayError,
    priced_config,
    tools_block,
)
from routing.selection import estimated_tokens, tools_overhead_tokens

# The price models are part of what a replay is asked with: importable from here.
__all__ = [
    "CONFIGURED",
    "PRICE_MODELS",
    "CachePrices",
    "ReplayError",
    "ReplayResult",
    "Totals",
    "replay",
]


class _Priced:
    """The cost of a request (or, being linear in the token split, of a sum of
    requests) under a price model; at the configured prices it is summed as it goes."""

    def cost(self, prices: Prices) -> float:
        if prices is CONFIGURED:
            return self.configured_cost_usd
        return prices.cost(self.cached_tokens, self.uncached_tokens)

    def baseline_cost(self, prices: Prices) -> float:
        if prices is CONFIGURED:
            return self.configured_baseline_cost_usd
        return prices.cost(self.baseline_cached_tokens, self.baseline_uncached_tokens)


@dataclass(frozen=True)
class TurnRecord(_Priced):
    conversation: str
    turn: int
    original_tokens: int
    final_tokens: int
    compressed: list[int]
    capped: list[int]
    relevance_used: bool
    prefix_match: int
    previous_len: int
    # The prompt split for the cache model: "cached" is what the session's
    # previous request also sent first (tool definitions included once there
    # is a previous request), "uncached" the rest; cached + uncached is
    # final_tokens for the payload sent, original_tokens for the baseline.
    cached_tokens: int = 0
    uncached_tokens: int = 0
    baseline_cached_tokens: int = 0
    baseline_uncached_tokens: int = 0
    references: int = 0
    references_kept: int = 0
    references_lost: list[str] = field(default_factory=list)  # sorted; pinch took them out
    # Where the router sent it: (model id, tier, route reason); routing.replay.routes prices it.
    route: tuple[str, str, str] = ("", "", "")
    cold: bool = False  # after a gap longer than the cache lifetime
    # The model the request went to, and its cost with pinch and without at that
    # model's configured prices, as the live router bills it (routing.pricing).
    model: str = ""
    configured_cost_usd: float = 0.0
    configured_baseline_cost_usd: float = 0.0

    @property
    def pruned(self) -> bool:
        return bool(self.compressed or self.capped)


@dataclass(frozen=True)
class TurnError:
    conversation: str
    turn: int
    status: int
    message: str


def add_fields(total, part, names) -> None:
    """Add each named field of ``part`` to the field of the same name of ``total``."""
    for name in names:
        setattr(total, name, getattr(total, name) + getattr(part, name))


# The Totals fields that are the sum of the TurnRecord fields of the same name.
_FROM_RECORD = (
    "original_tokens",
    "final_tokens",
    "pruned",
    "relevance_used",
    "cached_tokens",
    "uncached_tokens",
    "baseline_cached_tokens",
    "baseline_uncached_tokens",
    "references",
    "references_kept",
    "configured_cost_usd",
    "configured_baseline_cost_usd",
)


@dataclass
class Totals(_Priced):
    name: str
    family: str = ""
    requests: int = 0
    errors: int = 0
    original_tokens: int = 0
    final_tokens: int = 0
    pruned: int = 0
    relevance_used: int = 0
    prefix_turns: int = 0
    prefix_share_sum: float = 0.0
    cached_tokens: int = 0
    uncached_tokens: int = 0
    baseline_cached_tokens: int = 0
    baseline_uncached_tokens: int = 0
    references: int = 0
    references_kept: int = 0
    configured_cost_usd: float = 0.0
    configured_baseline_cost_usd: float = 0.0

    def add(self, record: TurnRecord) -> None:
        self.requests += 1
        add_fields(self, record, _FROM_RECORD)
        if record.previous_len:
            self.prefix_turns += 1
            self.prefix_share_sum += record.prefix_match / record.previous_len

    def merge(self, other: Totals) -> None:
        add_fields(self, other, _SUMMED)

    @property
    def saved_share(self) -> float:
        if not self.original_tokens:
            return 0.0
        return (self.original_tokens - self.final_tokens) / self.original_tokens

    def cost_ratio(self, prices: Prices) -> float | None:
        """Cost with pinch over cost without it (1.0: the same; above 1: pinch cost more)."""
        baseline = self.baseline_cost(prices)
        return self.cost(prices) / baseline if baseline else None

    def cost_saved_share(self, prices: Prices) -> float | None:
        """Share of the baseline's cost saved; negative when pinch cost more."""
        ratio = self.cost_ratio(prices)
        return None if ratio is None else 1 - ratio

    def costlier(self, prices: Prices) -> bool:
        """Whether pinch made this session dearer than sending it whole (beyond float noise)."""
        ratio = self.cost_ratio(prices)
        return ratio is not None and ratio > 1 + 1e-9

    @property
    def references_share(self) -> float | None:
        return self.references_kept / self.references if self.references else None

    @property
    def pruned_share(self) -> float:
        return self.pruned / self.requests if self.requests else 0.0

    @property
    def relevance_share(self) -> float:
        return self.relevance_used / self.requests if self.requests else 0.0

    @property
    def prefix_kept(self) -> float | None:
        """Mean over turns with a previous payload of prefix_match / previous_len."""
        return self.prefix_share_sum / self.prefix_turns if self.prefix_turns else None


# The Totals fields that add up across sessions: all but its names.
_SUMMED = tuple(f.name for f in fields(Totals) if f.name not in ("name", "family"))


@dataclass
class ReplayResult:
    records: list[TurnRecord] = field(default_factory=list)
    errors: list[TurnError] = field(default_factory=list)
    sessions: list[Totals] = field(default_factory=list)

    @property
    def total(self) -> Totals:
        total = Totals("total")
        for session in self.sessions:
            total.merge(session)
        return total

    def by_family(self) -> list[Totals]:
        families: dict[str, Totals] = {}
        for session in self.sessions:
            families.setdefault(session.family, Totals(session.family, session.family))
            families[session.family].merge(session)
        return list(families.values())

    def costlier_sessions(self, prices: Prices) -> list[str]:
        return [s.name for s in self.sessions if s.costlier(prices)]

    def dearer_ends(self, prices: Prices) -> tuple[int, int, float]:
        """(Of the ends after each request, how many pinch made dearer, of how many, the
        worst ratio): pinch plans from earlier requests only, so a session cut short
        is its replay cut short (docs/pinch.md, "What a step risks")."""
        dearer, worst = 0, 1.0
        totals: dict[str, list[float]] = {}
        for record in self.records:
            spent = totals.setdefault(record.conversation, [0.0, 0.0])
            spent[0] += record.cost(prices)
            spent[1] += record.baseline_cost(prices)
            if spent[0] > spent[1] * (1 + 1e-9):
                dearer += 1
                worst = max(worst, spent[0] / spent[1])
        return dearer, len(self.records), worst


def replay_model(config: RouterConfig, model: str | None) -> str:
    """The model every request asks for: ``model``, or the auto model; ReplayError if unknown."""
    model = model or config.routing.auto_model
    if model != config.routing.auto_model and config.model(model) is None:
        known = ", ".join([config.routing.auto_model, *(m.id for m in config.models)])
        raise ReplayError(f"unknown model {model!r}; use one of: {known}")
    return model


def replay(
    sessions: list[Session],
    config: RouterConfig,
    model: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    tools_tokens: int = 0,
    prices: Prices | None = None,
    cold_gaps: bool = True,
) -> ReplayResult:
    """Plan every request of every session; RouterErrors are counted, not raised.

    With a ``CachePrices``, every model bills its cache that way
    (``priced_config``); None or ``CONFIGURED``: each at its configured prices.
    With ``cold_gaps``, sessions with recorded times are replayed on them.
    """
    if prices is not None and prices is not CONFIGURED:
        config = priced_config(config, prices)
    model = replay_model(config, model)
    probe = PrefixProbe()  # in memory: one per run, forgotten with it
    extra_tools = tools_block(tools_tokens)
    result = ReplayResult()
    total = sum(1 for session in sessions for _ in session.turns())
    done = 0
    for session in sessions:
        totals = Totals(session.name, session.family)
        replayer = _SessionReplay(session, config, model, probe, extra_tools, cold_gaps)
        for t in session.turns():
            outcome = replayer.turn(t)
            if isinstance(outcome, TurnError):
                result.errors.append(outcome)
                totals.errors += 1
            else:
                result.records.append(outcome)
                totals.add(outcome)
            done += 1
            if progress is not None:
                progress(done, total)
        result.sessions.append(totals)
    return result


def _message_tokens(message: Any) -> int:
    # The estimate pinch and routing use: the sum over a payload is its measured tokens.
    return estimate_tokens(extract_text(message))


class _SessionReplay:
    """One session's requests in order, with what the cache model and the references need."""

    def __init__(self, session, config, model, probe, extra_tools, cold_gaps=True):
        self.session = session
        self.times = session.times if cold_gaps else {}
        # A session without times runs on a clock of a second a request: always warm.
        self.clock = 0.0
        self.cold = False
        self.config = config
        self.model = model
        self.probe = probe
        self.tools = session.tools or extra_tools
        self.tools_tokens = tools_overhead_tokens(self.tools)
        # leading[i]: estimated tokens of the session's first i messages.
        self.leading = [0]
        for message in session.messages:
            self.leading.append(self.leading[-1] + _message_tokens(message))
        # The previous request that went through; a refused one reached no cache.
        self.previous_turn = 0
        # Tokens the context holds outside tool results, and inside them.
        self.seen_until = 0
        self.outside_tools: set[str] = set()
        self.in_tools: set[str] = set()

    def turn(self, t: int) -> TurnRecord | TurnError:
        session = self.session
        body: dict[str, Any] = {"model": self.model, "messages": session.messages[:t]}
        if self.tools:
            body["tools"] = self.tools
        # The key stands in for the agent's API key: each session is its own agent.
        api_key_id = f"replay:{session.name}"
        now = self.times.get(t, self.clock + 1.0)
        gap, self.clock = now - self.clock, now
        try:
            request = parse_chat_request(body)
            plan = plan_request(
                request, self.config, api_key_id=api_key_id, probe=self.probe, now=now
            )
        except RouterError as error:
            return TurnError(session.name, t, error.status, error.message)
        lifetime = self.config.cache_prices(plan.model).lifetime_seconds
        # After a gap the provider has forgotten the prefix: everything is written.
        cold = bool(self.previous_turn) and gap > lifetime

        prefix = plan.prefix
        if prefix is None:
            # The router measures the prefix only while pinch and the probe are
            # on; the replay measures it anyway so a no-pinch run has its baseline.
            key = conversation_key(api_key_id, request.model, request.messages)
            prefix = self.probe.measure(key, plan.send_messages)
        match, previous_len, _ = prefix

        pinch = plan.pinch
        if pinch is None:
            # pinch's own estimate, so a no-pinch run is comparable with a pinch run.
            original = final = estimated_tokens(plan.send_messages, request.tools)
            compressed: list[int] = []
            capped: list[int] = []
            relevance_used = False
        else:
            original, final = pinch.original_tokens, pinch.final_tokens
            compressed, capped = list(pinch.compressed), list(pinch.capped)
            relevance_used = pinch.relevance_used

        tools = self.tools_tokens
        warm = self.previous_turn and not cold
        baseline_cached = tools + self.leading[self.previous_turn] if warm else 0
        baseline_uncached = tools + self.leading[t] - baseline_cached
        sent = [_message_tokens(message) for message in plan.send_messages]
        cached = (tools if previous_len else 0) + sum(sent[:match]) if not cold else 0
        uncached = tools + sum(sent) - cached
        lost, kept = self._references(t, plan.send_messages)
        self.previous_turn = t
        model = plan.model
        # Writes are billed only by a model with a cache block (Anthropic's); others
        # cache by themselves and charge the prompt price for the rest.
        written = uncached if model.cache is not None else 0
        baseline_written = baseline_uncached if model.cache is not None else 0
        return TurnRecord(
            conversation=session.name,
            turn=t,
            original_tokens=original,
            final_tokens=final,
            compressed=compressed,
            capped=capped,
            relevance_used=relevance_used,
            prefix_match=match,
            previous_len=previous_len,
            cached_tokens=cached,
            uncached_tokens=uncached,
            baseline_cached_tokens=baseline_cached,
            baseline_uncached_tokens=baseline_uncached,
            references=len(lost) + len(kept),
            references_kept=len(kept),
            references_lost=sorted(lost),
            route=(plan.model.id, plan.tier, plan.route_reason),
            cold=cold,
            model=model.id,
            configured_cost_usd=billed_prompt_cost_usd(model, cached + uncached, cached, written),
            configured_baseline_cost_usd=billed_prompt_cost_usd(
                model,
                baseline_cached + baseline_uncached,
                baseline_cached,
                baseline_written,
            ),
        )

    def _references(self, t: int, payload: list[Any]) -> tuple[list[str], list[str]]:
        """Tokens message ``t`` uses that only tool results held: (no longer sent, still sent)."""
        messages = self.session.messages
        for message in messages[self.seen_until : t]:
            tokens = mentioned_tokens(message)
            if isinstance(message, dict) and message.get("role") == "tool":
                self.in_tools |= tokens
            else:
                self.outside_tools |= tokens
        self.seen_until = t
        wanted = [
            token
            for token in mentioned_tokens(messages[t])
            if token in self.in_tools and token not in self.outside_tools
        ]
        sent = "\n".join(extract_text(message) for message in payload) if wanted else ""
        return [w for w in wanted if w not in sent], [w for w in wanted if w in sent]
