"""Replay recorded agent sessions through the router's planning path, turn by turn.

What pinch saves can only be judged on real sessions: the savings of one big
request say little, because an agent resends the whole conversation every
turn and the prompt-cache discount depends on what the NEXT request repeats.
So a session is replayed as the agent sent it: for every assistant message at
index ``t`` the request is ``messages[:t]`` (plus the tool definitions the
session offered, when its file records them), and every request goes through
``routing.pipeline.plan_request``, the one code path of the API view and the
dry run, with one fresh in-memory ``PrefixProbe`` per run so that the probe
sees each conversation's consecutive turns. Nothing is sent upstream and
nothing is written to the database: a replay can run against a production
database to try a setting before an operator saves it in admin.

Tokens are not dollars when the provider caches prompt prefixes, so every
request is also priced under a prefix-cache model (``CachePrices``): the
leading messages it shares with the session's previous request are billed at
the cached-read price, the rest at the price of writing them to the cache.
The unpruned baseline shares everything but its new messages; the pruned
payload shares its ``prefix_match`` messages.

The per-request lines (``TurnRecord.as_json``) are a contract read by other
tools; their keys are ``REPLAY_KEYS``. The cost figures are in the table only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pinch import estimate_tokens, extract_text
from routing.chat_request import parse_chat_request
from routing.config import ConfigError, RouterConfig
from routing.config.store import check_overrides, stored_overrides
from routing.errors import RouterError
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe, conversation_key
from routing.selection import estimated_tokens, tools_overhead_tokens

REPLAY_KEYS = (
    "conversation",
    "turn",
    "original_tokens",
    "final_tokens",
    "compressed",
    "capped",
    "relevance_used",
    "prefix_match",
)

# The replay must not call a provider; an LLM classifier would, once per turn.
# The tier only picks the model, which the replay's figures do not depend on.
FORCED_OVERRIDES = {"classifier.backend": "heuristic"}


class ReplayError(ValueError):
    """The replay cannot start (bad path, bad file, bad setting); the message says why."""


@dataclass(frozen=True)
class CachePrices:
    """A prompt priced under a prefix cache, Anthropic-like by default.

    ``price_per_1m`` is the full input price (multiplier 1.0) in dollars per
    million tokens. Tokens of the prefix the provider has seen in the previous
    request are billed at ``read_multiplier`` times that; the rest is written
    to the cache, at ``write_multiplier`` (the full price plus the write
    premium). Anthropic: 0.1 and 1.25 (5-minute cache). A provider that caches
    without a write premium: ``write_multiplier`` 1.0; no cache at all: both 1.0.
    """

    price_per_1m: float = 3.0
    read_multiplier: float = 0.1
    write_multiplier: float = 1.25

    def __post_init__(self) -> None:
        for name, option in (
            ("price_per_1m", "--price-per-1m"),
            ("read_multiplier", "--cache-read-multiplier"),
            ("write_multiplier", "--cache-write-multiplier"),
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ReplayError(f"{option}: must be a number >= 0, not {value!r}")

    def cost(self, cached_tokens: int, uncached_tokens: int) -> float:
        """Dollars for a prompt of ``cached_tokens`` read from cache and the rest written."""
        weighted = cached_tokens * self.read_multiplier + uncached_tokens * self.write_multiplier
        return weighted * self.price_per_1m / 1_000_000

    def describe(self) -> str:
        return (
            f"cost: ${self.price_per_1m:g} per 1M input tokens, prefix shared with the "
            f"session's previous request x{self.read_multiplier:g} (cache read), "
            f"the rest x{self.write_multiplier:g} (cache write)"
        )


@dataclass(frozen=True)
class Session:
    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None

    def turns(self) -> Iterator[int]:
        """Indexes of the assistant messages that had a request before them."""
        for t, message in enumerate(self.messages):
            if t > 0 and isinstance(message, dict) and message.get("role") == "assistant":
                yield t


@dataclass(frozen=True)
class TurnRecord:
    conversation: str
    turn: int
    original_tokens: int
    final_tokens: int
    compressed: list[int]
    capped: list[int]
    relevance_used: bool
    prefix_match: int
    previous_len: int
    # Not in the JSON lines: the prompt split for the cache model. "cached" is
    # what the session's previous request also sent first (tool definitions
    # included once there is a previous request), "uncached" the rest;
    # cached + uncached is final_tokens for the payload sent, original_tokens
    # for the unpruned baseline.
    cached_tokens: int = 0
    uncached_tokens: int = 0
    baseline_cached_tokens: int = 0
    baseline_uncached_tokens: int = 0

    def cost(self, prices: CachePrices) -> float:
        return prices.cost(self.cached_tokens, self.uncached_tokens)

    def baseline_cost(self, prices: CachePrices) -> float:
        return prices.cost(self.baseline_cached_tokens, self.baseline_uncached_tokens)

    @property
    def pruned(self) -> bool:
        return bool(self.compressed or self.capped)

    def as_json(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in REPLAY_KEYS}


@dataclass(frozen=True)
class TurnError:
    conversation: str
    turn: int
    status: int
    message: str


@dataclass
class Totals:
    name: str
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

    def add(self, record: TurnRecord) -> None:
        self.requests += 1
        self.cached_tokens += record.cached_tokens
        self.uncached_tokens += record.uncached_tokens
        self.baseline_cached_tokens += record.baseline_cached_tokens
        self.baseline_uncached_tokens += record.baseline_uncached_tokens
        self.original_tokens += record.original_tokens
        self.final_tokens += record.final_tokens
        self.pruned += record.pruned
        self.relevance_used += record.relevance_used
        if record.previous_len:
            self.prefix_turns += 1
            self.prefix_share_sum += record.prefix_match / record.previous_len

    @property
    def saved_share(self) -> float:
        if not self.original_tokens:
            return 0.0
        return (self.original_tokens - self.final_tokens) / self.original_tokens

    # The cost is linear in the token split, so the cost of a sum of requests
    # is the sum of their costs.
    def cost(self, prices: CachePrices) -> float:
        return prices.cost(self.cached_tokens, self.uncached_tokens)

    def baseline_cost(self, prices: CachePrices) -> float:
        return prices.cost(self.baseline_cached_tokens, self.baseline_uncached_tokens)

    def cost_saved_share(self, prices: CachePrices) -> float | None:
        """Share of the baseline's cache-aware cost saved; negative when pinch costs more."""
        baseline = self.baseline_cost(prices)
        if not baseline:
            return None
        return (baseline - self.cost(prices)) / baseline

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


@dataclass
class ReplayResult:
    records: list[TurnRecord] = field(default_factory=list)
    errors: list[TurnError] = field(default_factory=list)
    sessions: list[Totals] = field(default_factory=list)

    @property
    def total(self) -> Totals:
        total = Totals("total")
        for record in self.records:
            total.add(record)
        total.errors = len(self.errors)
        return total


# --- Loading ---


def _session_from_file(path: Path) -> Session:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ReplayError(f"{path}: cannot read a JSON conversation ({error})") from None
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        raise ReplayError(f"{path}: not a conversation file (no 'messages' list)")
    # The corpus format keeps what the agent offered under meta when it was
    # recorded; a top-level "tools" (the request body's own key) is read too.
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    tools = data.get("tools", meta.get("tools"))
    return Session(path.name, messages, tools if isinstance(tools, list) and tools else None)


def load_sessions(paths: Iterable[str | Path]) -> list[Session]:
    """Sessions from files and directories (every ``*.json`` in them, by name)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise ReplayError(f"{path}: no *.json conversation files in this directory")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ReplayError(f"{path}: no such file or directory")
    if not files:
        raise ReplayError("no conversation files given")
    return [_session_from_file(path) for path in files]


# --- Configuration ---


def cli_overrides(
    budget_tokens: Any = None,
    keep_last_turns: Any = None,
    keep_last_tool_results: Any = None,
    relevance: bool | None = None,
    pinch: bool = True,
    window_step: Any = None,
) -> dict[str, Any]:
    """Dotted config keys for the command's options; None means "not given".

    Values are not range-checked here: they go through the config schema, so a
    bad one is refused with the same message, naming the same key, as in the
    file or in admin. ``keep_last_tool_results`` also takes "none" (null: only
    the user-turn window protects, 6krrt's behaviour), and so does
    ``window_step`` (null: the window slides one tool result at a time).
    """
    overrides: dict[str, Any] = {}
    if budget_tokens is not None:
        overrides["pinch.budget_tokens"] = _number(budget_tokens)
    if keep_last_turns is not None:
        overrides["pinch.keep_last_turns"] = _number(keep_last_turns)
    if keep_last_tool_results is not None:
        overrides["pinch.keep_last_tool_results"] = _number_or_none(keep_last_tool_results)
    if window_step is not None:
        overrides["pinch.window_step"] = _number_or_none(window_step)
    if relevance is not None:
        overrides["pinch.relevance.enabled"] = relevance
    if not pinch:
        overrides["pinch.enabled"] = False
    return overrides


def _number_or_none(value: Any) -> Any:
    return None if str(value).strip().lower() in ("none", "null") else _number(value)


def _number(value: Any) -> Any:
    # A string that is not an integer is left as is for the schema to refuse by key.
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def replay_config(overrides: dict[str, Any]) -> RouterConfig:
    """The router's effective config (file + admin overrides) with ``overrides`` on top.

    Raises ReplayError naming the offending key when the result is invalid.
    """
    merged = {**stored_overrides(), **overrides, **FORCED_OVERRIDES}
    try:
        return check_overrides(merged)
    except ConfigError as error:
        raise ReplayError(f"invalid setting: {error}") from None


# --- The replay ---


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
) -> ReplayResult:
    """Plan every request of every session; RouterErrors are counted, not raised."""
    model = replay_model(config, model)

    probe = PrefixProbe()  # in memory: one per run, forgotten with it
    result = ReplayResult()
    total = sum(1 for session in sessions for _ in session.turns())
    done = 0
    for session in sessions:
        totals = Totals(session.name)
        # leading[i]: estimated tokens of the session's first i messages.
        leading = [0]
        for message in session.messages:
            leading.append(leading[-1] + _message_tokens(message))
        # The previous request that went through; a refused one reached no cache.
        previous_turn = 0
        for t in session.turns():
            outcome = _replay_turn(session, t, config, model, probe, leading, previous_turn)
            if isinstance(outcome, TurnError):
                result.errors.append(outcome)
                totals.errors += 1
            else:
                result.records.append(outcome)
                totals.add(outcome)
                previous_turn = t
            done += 1
            if progress is not None:
                progress(done, total)
        result.sessions.append(totals)
    return result


def _message_tokens(message: Any) -> int:
    # The estimate pinch and routing use: the sum over a payload is its measured tokens.
    return estimate_tokens(extract_text(message))


def _replay_turn(
    session: Session,
    t: int,
    config: RouterConfig,
    model: str,
    probe: PrefixProbe,
    leading: list[int],
    previous_turn: int,
) -> TurnRecord | TurnError:
    body: dict[str, Any] = {"model": model, "messages": session.messages[:t]}
    if session.tools:
        body["tools"] = session.tools
    # The key stands in for the agent's API key: each session is its own agent,
    # so two sessions that open with the same prompts never share a probe slot.
    api_key_id = f"replay:{session.name}"
    try:
        request = parse_chat_request(body)
        plan = plan_request(request, config, api_key_id=api_key_id, probe=probe)
    except RouterError as error:
        return TurnError(session.name, t, error.status, error.message)

    prefix = plan.prefix
    if prefix is None:
        # The router measures the prefix only while pinch and the probe are on;
        # the replay measures it anyway so a no-pinch run gives the baseline.
        key = conversation_key(api_key_id, request.model, request.messages)
        prefix = probe.measure(key, plan.send_messages)
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

    # The cache model. Tool definitions precede the messages in the prompt and
    # do not change within a session: cached once there was a previous request.
    tools = tools_overhead_tokens(session.tools)
    if previous_turn:
        baseline_cached = tools + leading[previous_turn]
    else:
        baseline_cached = 0
    baseline_uncached = tools + leading[t] - baseline_cached
    sent = [_message_tokens(message) for message in plan.send_messages]
    cached = (tools if previous_len else 0) + sum(sent[:match])
    uncached = tools + sum(sent) - cached
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
    )


# --- Output ---


def write_json_lines(result: ReplayResult, out: IO[str]) -> None:
    for record in result.records:
        out.write(json.dumps(record.as_json()) + "\n")


TABLE_COLUMNS = (
    ("session", "<"),
    ("requests", ">"),
    ("errors", ">"),
    ("tokens w/o pinch", ">"),
    ("with pinch", ">"),
    ("saved", ">"),
    ("cost w/o pinch", ">"),
    ("cost with pinch", ">"),
    ("cost saved", ">"),
    ("pruned", ">"),
    ("relevance", ">"),
    ("prefix kept", ">"),
)


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def _dollars(amount: float) -> str:
    return f"${amount:,.2f}"


def _row(totals: Totals, prices: CachePrices) -> list[str]:
    return [
        totals.name,
        f"{totals.requests:,}",
        f"{totals.errors:,}",
        f"{totals.original_tokens:,}",
        f"{totals.final_tokens:,}",
        _percent(totals.saved_share),
        _dollars(totals.baseline_cost(prices)),
        _dollars(totals.cost(prices)),
        _percent(totals.cost_saved_share(prices)),
        _percent(totals.pruned_share),
        _percent(totals.relevance_share),
        _percent(totals.prefix_kept),
    ]


def render_table(result: ReplayResult, prices: CachePrices | None = None) -> str:
    """One row per session and a total row; token columns are sums of the JSON lines.

    The cost columns price every request under ``prices`` (the defaults when
    None), without pinch (the unpruned requests) and with it (the payloads sent).
    """
    prices = prices or CachePrices()
    rows = [[name for name, _ in TABLE_COLUMNS]]
    rows += [_row(totals, prices) for totals in result.sessions]
    rows.append(_row(result.total, prices))
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]

    def line(row: list[str]) -> str:
        cells = [
            f"{cell:{align}{width}}"
            for cell, (_, align), width in zip(row, TABLE_COLUMNS, widths, strict=True)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    body = [line(row) for row in rows[1:-1]]
    return "\n".join([line(rows[0]), rule, *body, rule, line(rows[-1])])


def describe_settings(config: RouterConfig, model: str | None) -> str:
    """One line saying what was replayed with, so a pasted table carries its settings."""
    pinch = config.pinch
    if not pinch.enabled:
        knobs = "pinch disabled"
    else:
        relevance = f"on ({pinch.relevance.backend})" if pinch.relevance.enabled else "off"
        knobs = (
            f"budget_tokens={pinch.budget_tokens} keep_last_turns={pinch.keep_last_turns} "
            f"keep_last_tool_results={pinch.keep_last_tool_results} "
            f"window_step={pinch.window_step} "
            f"max_summarize_chars={pinch.max_summarize_chars} "
            f"protected_max_chars={pinch.protected_max_chars} relevance={relevance}"
        )
    return f"model={model or config.routing.auto_model} {knobs}"


def describe_errors(result: ReplayResult, limit: int = 10) -> str:
    lines = [f"{len(result.errors)} request(s) refused by the router (not in the totals):"]
    for error in result.errors[:limit]:
        lines.append(f"  {error.conversation} turn {error.turn}: {error.status} {error.message}")
    if len(result.errors) > limit:
        lines.append(f"  ... and {len(result.errors) - limit} more")
    return "\n".join(lines)
