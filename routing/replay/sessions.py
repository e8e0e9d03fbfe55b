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
  reference pinch removed is one the agent needed and could not read, unless
  one recall of a result pinch changed brings it back (``routing.replay.recalls``:
  the recalls are counted, their round trips priced into the cost with pinch and
  booked on the conversation's pinch ledger before its next request is planned);
* the recall store: what it holds once each session ends.

The price models are ``routing.replay.prices``; the records and their sums
``routing.replay.totals``; the command's table and report are in ``metrics.replay``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinch import estimate_tokens, extract_text
from pinch.lines import mentioned_tokens
from pinch.payback import Ledger, book_recalls
from routing.config import RouterConfig
from routing.errors import RouterError
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe, conversation_key
from routing.pricing import billed_prompt_cost_usd
from routing.protocols.chat.request import parse_chat_request
from routing.replay.corpus import Session
from routing.replay.price_list import listed_models
from routing.replay.prices import (
    CONFIGURED,
    PRICE_MODELS,
    CachePrices,
    Prices,
    ReplayError,
    priced_config,
    tools_block,
)
from routing.replay.recalls import recalls_for, store_bytes
from routing.replay.totals import ReplayResult, Totals, TurnError, TurnRecord
from routing.selection import estimated_tokens, tools_overhead_tokens

# The price models are part of what a replay is asked with: importable from here.
__all__ = [
    "CONFIGURED",
    "PRICE_MODELS",
    "CachePrices",
    "ReplayError",
    "ReplayResult",
    "Totals",
    "TurnRecord",
    "replay",
]

# What --payloads receives for each request: (conversation, turn, messages, tools) as sent.
PayloadSink = Callable[[str, int, list, list | None], None]


def replay_model(config: RouterConfig, model: str | None) -> str:
    """The model every request asks for: ``model``, or the auto model; ReplayError if unknown."""
    model = model or config.routing.auto_model
    if model != config.routing.auto_model and config.model(model) is None:
        known = ", ".join([config.routing.auto_model, *(m.id for m in config.models)])
        raise ReplayError(
            f"unknown model {model!r}; use one of: {known}; "
            f"or of the built-in price list: {', '.join(listed_models(config))}"
        )
    return model


def replay(
    sessions: list[Session],
    config: RouterConfig,
    model: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    tools_tokens: int = 0,
    prices: Prices | None = None,
    cold_gaps: bool = True,
    payloads: PayloadSink | None = None,
) -> ReplayResult:
    """Plan every request of every session; RouterErrors are counted, not raised.

    With a ``CachePrices``, every model bills its cache that way
    (``priced_config``); None or ``CONFIGURED``: each at its configured prices.
    With ``cold_gaps``, sessions with recorded times are replayed on them.
    ``payloads`` is handed each request's messages and tools as they would be
    sent, in order, as they are planned (a run's payloads are too big to keep).
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
        replayer = _SessionReplay(session, config, model, probe, extra_tools, cold_gaps, payloads)
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
        totals.recall_store_bytes = sum(replayer.store.values())
        result.sessions.append(totals)
    return result


def _message_tokens(message: Any) -> int:
    # The estimate pinch and routing use: the sum over a payload is its measured tokens.
    return estimate_tokens(extract_text(message))


class _SessionReplay:
    """One session's requests in order, with what the cache model and the references need."""

    def __init__(self, session, config, model, probe, extra_tools, cold_gaps=True, payloads=None):
        self.session = session
        self.payloads = payloads
        # The recall store at the end of the session: each handle named, its original's bytes.
        self.store: dict[str, int] = {}
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
        if self.payloads is not None:
            self.payloads(session.name, t, plan.send_messages, request.tools)
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
            recallable: dict[str, str] = {}
        else:
            original, final = pinch.original_tokens, pinch.final_tokens
            compressed, capped = list(pinch.compressed), list(pinch.capped)
            relevance_used = pinch.relevance_used
            recallable = pinch.recallable
        self.store.update(store_bytes(recallable))

        tools = self.tools_tokens
        warm = self.previous_turn and not cold
        baseline_cached = tools + self.leading[self.previous_turn] if warm else 0
        baseline_uncached = tools + self.leading[t] - baseline_cached
        sent = [_message_tokens(message) for message in plan.send_messages]
        cached = (tools if previous_len else 0) + sum(sent[:match]) if not cold else 0
        uncached = tools + sum(sent) - cached
        lost, kept = self._references(t, plan.send_messages)
        recalls = recalls_for(sorted(lost), recallable, cached + uncached)
        if recalls.handles and plan.conversation:
            self._book(plan, recalls, cached + uncached)
        self.previous_turn = t
        model = plan.model
        # Writes are billed only by a model with a cache block (Anthropic's); others
        # cache by themselves and charge the prompt price for the rest.
        writes = model.cache is not None
        written = uncached if writes else 0
        baseline_written = baseline_uncached if writes else 0
        recall_written = recalls.uncached_tokens if writes else 0
        recall_tokens = recalls.cached_tokens + recalls.uncached_tokens
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
            references_recallable=recalls.recallable,
            recalls=len(recalls.handles),
            recalled_tokens=recalls.recalled_tokens,
            recall_cached_tokens=recalls.cached_tokens,
            recall_uncached_tokens=recalls.uncached_tokens,
            route=(plan.model.id, plan.tier, plan.route_reason),
            cold=cold,
            model=model.id,
            configured_cost_usd=billed_prompt_cost_usd(model, cached + uncached, cached, written)
            + billed_prompt_cost_usd(model, recall_tokens, recalls.cached_tokens, recall_written),
            configured_baseline_cost_usd=billed_prompt_cost_usd(
                model,
                baseline_cached + baseline_uncached,
                baseline_cached,
                baseline_written,
            ),
        )

    def _book(self, plan, recalls, payload_tokens: int) -> None:
        """Book the request's recall round trips on the conversation's pinch ledger
        (``pinch.payback.book_recalls``), so the next request's plan counts them."""
        ledger = Ledger.from_json(self.probe.load_ledger(plan.conversation))
        if ledger is None:
            return
        sizes = [estimate_tokens(plan.pinch.recallable[h]) for h in recalls.handles]
        cache = self.config.cache_prices(plan.model)
        booked = book_recalls(ledger, cache, payload_tokens, sizes)
        self.probe.save_ledger(plan.conversation, booked.as_json())

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
