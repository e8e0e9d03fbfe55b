"""pinch_replay's report: its options as config overrides, the JSON lines, the table.

The replay itself (planning every request of a recorded session through the
router's pipeline, pricing it under a prompt cache, counting the references
kept) is ``routing.replay.sessions``; the sessions come from ``routing.replay.corpus``. This
module turns the command's options into config keys and the result into what
an operator reads.

The per-request lines (``write_json_lines``) are a contract read by other
tools; their keys are ``REPLAY_KEYS``. The cost figures are in the table only.
The payloads (``payload_writer``, ``--payloads``) are the other: every
request's messages and tools as pinch would send them, keys ``PAYLOAD_KEYS``,
so anyone can score what pinch really sends with a measure of their own.
"""

from __future__ import annotations

import json
from typing import IO, Any

import yaml
from django.db import DatabaseError

from routing.config import ConfigError, RouterConfig
from routing.config.store import check_overrides, stored_overrides
from routing.replay.price_list import PriceSource
from routing.replay.prices import CONFIGURED, Prices
from routing.replay.sessions import PayloadSink, ReplayError, ReplayResult, Totals

REPLAY_KEYS = (
    "conversation",
    "turn",
    "original_tokens",
    "final_tokens",
    "compressed",
    "capped",
    "relevance_used",
    "prefix_match",
    "references",
    "references_kept",
    "references_lost",
    "references_recallable",
    "recalls",
    "recalled_tokens",
)

PAYLOAD_KEYS = ("conversation", "turn", "price_model", "messages", "tools")

# The replay must not call a provider; an LLM classifier would, once per turn.
# The tier only picks the model, which the replay's figures do not depend on.
# Every session runs the settings replayed: no holdout, no experiment's arm
# (the replay compares pinch on and off itself, on every session).
FORCED_OVERRIDES = {
    "classifier.backend": "heuristic",
    "pinch.holdout_share": 0.0,
    "experiments": [],
}


# --- Configuration ---


def cli_overrides(
    budget_tokens: Any = None,
    keep_last_turns: Any = None,
    keep_last_tool_results: Any = None,
    relevance: bool | None = None,
    pinch: bool = True,
    window_step: Any = None,
    payback: bool | None = None,
    settings: list[str] | None = None,
) -> dict[str, Any]:
    """Dotted config keys for the command's options; None means "not given".

    Values are not range-checked here: they go through the config schema, so a
    bad one is refused with the same message, naming the same key, as in the
    file or in admin. ``keep_last_tool_results`` also takes "none" (null: only
    the user-turn window protects, 6krrt's behaviour), and so does
    ``window_step`` (null: the window slides one tool result at a time).
    Relevance ordering orders the budget prune, so ``relevance=True`` also
    turns the payback steps off. ``settings`` are ``dotted.key=value`` strings
    (``--set``), the value read as YAML (``8000``, ``null``, ``false``), applied
    last.
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
        if relevance and payback is None:
            payback = False
    if payback is not None:
        overrides["pinch.payback.enabled"] = payback
    if not pinch:
        overrides["pinch.enabled"] = False
    for setting in settings or ():
        key, sep, raw = setting.partition("=")
        if not sep or not key.strip():
            raise ReplayError(f"--set {setting!r}: expected dotted.key=value")
        try:
            overrides[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ReplayError(f"--set {setting!r}: the value is not valid YAML") from None
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

    Raises ReplayError naming the offending key when the result is invalid,
    or when the database that holds the overrides cannot be read (a fresh
    checkout has not run ``migrate`` yet).
    """
    try:
        merged = {**stored_overrides(), **overrides, **FORCED_OVERRIDES}
        return check_overrides(merged)
    except ConfigError as error:
        raise ReplayError(f"invalid setting: {error}") from None
    except DatabaseError as error:
        raise ReplayError(
            f"cannot read the router's config overrides from the database ({error}); "
            "run `python manage.py migrate` first"
        ) from None


# --- Output ---


def write_json_lines(result: ReplayResult, out: IO[str]) -> None:
    for record in result.records:
        out.write(json.dumps({key: getattr(record, key) for key in REPLAY_KEYS}) + "\n")


def payload_writer(out: IO[str], prices: Prices) -> PayloadSink:
    """A ``replay(payloads=...)`` sink writing one JSON line per request, run under ``prices``."""

    def write(conversation: str, turn: int, messages: list, tools: list | None) -> None:
        line = dict(zip(PAYLOAD_KEYS, (conversation, turn, prices.label, messages, tools)))
        out.write(json.dumps(line) + "\n")

    return write


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
    ("refs kept", ">"),
    ("in reach", ">"),
    ("recalls", ">"),
    ("recall store", ">"),
)


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def _ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.3f}x"


def _dollars(amount: float) -> str:
    return f"${amount:,.2f}"


def _kilobytes(size: int) -> str:
    return f"{size / 1024:,.0f}KB"


def _row(totals: Totals, prices: Prices, ratios: list[float | None]) -> list[str]:
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
        _percent(totals.references_share),
        _percent(totals.recallable_share),
        f"{totals.recalls:,}",
        _kilobytes(totals.recall_store_bytes),
        *(_ratio(value) for value in ratios),
    ]


def render_table(
    result: ReplayResult,
    prices: Prices | None = None,
    priced: dict[Prices, ReplayResult] | None = None,
    by_family: bool = False,
) -> str:
    """One row per session (or agent family) and a total row, then the sessions pinch made dearer.

    The dollar columns price ``result``'s requests under ``prices`` (each at
    its model's configured prices when None), without pinch and with it. ``priced`` maps price
    models to the replay run under them (``routing.replay.replay(prices=...)``,
    where pinch decides by those prices too); each gets an ``x (read, write)``
    column, cost with pinch over cost without, and a count of the sessions
    pinch made dearer. ``refs kept``: of the references the agent's next
    message made to tokens its context held only in tool results, the share
    still in the payload sent; ``in reach``: the share sent or one recall away;
    ``recalls``: the recalls that takes (their round trips are in the cost
    with pinch); ``recall store``: what the store holds at the end of the
    session (of the sessions, for a family or the total).
    """
    prices = prices or CONFIGURED
    priced = priced if priced is not None else {prices: result}
    columns = TABLE_COLUMNS + tuple((f"x {model.label}", ">") for model in priced)

    def groups(run: ReplayResult) -> list[Totals]:
        return [*(run.by_family() if by_family else run.sessions), run.total]

    ratio_columns = [[g.cost_ratio(model) for g in groups(run)] for model, run in priced.items()]
    rows = [[name for name, _ in columns]]
    for k, totals in enumerate(groups(result)):
        rows.append(_row(totals, prices, [column[k] for column in ratio_columns]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]

    def line(row: list[str]) -> str:
        cells = [
            f"{cell:{align}{width}}"
            for cell, (_, align), width in zip(row, columns, widths, strict=True)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    body = [line(row) for row in rows[1:-1]]
    dearer = []
    for model, run in priced.items():
        names = run.costlier_sessions(model)
        listed = f": {', '.join(names)}" if names else ""
        dearer.append(f"{model.label} {len(names)}{listed}")
    footer = f"sessions costlier than pinch off, of {len(result.sessions)}: " + "; ".join(dearer)
    ends = []
    for model, run in priced.items():
        cut, of, worst = run.dearer_ends(model)
        ends.append(f"{model.label} {cut:,} of {of:,}, worst {worst:.3f}x")
    risk = "had a session ended after any request, pinch would have cost more: " + "; ".join(ends)
    return "\n".join([line(rows[0]), rule, *body, rule, line(rows[-1]), footer, risk])


def verdict(
    result: ReplayResult,
    prices: Prices,
    priced: dict[Prices, ReplayResult],
    model: str,
    source: PriceSource | None = None,
) -> str:
    """The user's question answered in one line: what pinch would have saved on these
    sessions, in tokens and at ``prices``, and whether any session would have cost more
    under any of the cache price models replayed (``priced``), the worst by how much.
    ``source``: whose prices a model the user named was replayed at."""
    total = result.total
    saved = total.saved_share
    baseline, cost = total.baseline_cost(prices), total.cost(prices)
    if prices is not CONFIGURED:
        where = "at the prices given"
    elif source is not None:
        where = f"at {source.describe()}"
    else:
        where = "at each request's configured prices"
    if baseline > 0:
        money = (
            f"{_dollars(baseline - cost)} of {_dollars(baseline)} {where} "
            f"({_ratio(cost / baseline)} the cost without it)"
        )
    else:
        money = (
            f"no money: {model} costs $0 in this config; name a priced model (--model) "
            "or a price (--price-per-1m) to see dollars"
        )
    dearer = sorted(
        {name for model_, run in priced.items() for name in run.costlier_sessions(model_)}
    )
    worst = max(
        (
            ratio
            for run_prices, run in priced.items()
            for s in run.sessions
            if (ratio := s.cost_ratio(run_prices)) is not None
        ),
        default=1.0,
    )
    if dearer:
        risk = (
            f"{len(dearer)} session{'s' if len(dearer) != 1 else ''} dearer under some cache "
            f"price model ({', '.join(dearer)}), the worst at {worst:.3f}x"
        )
    else:
        risk = f"no session dearer under any cache price model (worst {worst:.3f}x)"
    sessions = len(result.sessions)
    return (
        f"On these {sessions} session{'s' if sessions != 1 else ''} ({total.requests:,} "
        f"requests) pinch would have sent {_percent(saved)} fewer prompt tokens and saved "
        f"{money}; {risk}{_recall_clause(total)}."
    )


def _recall_clause(total: Totals) -> str:
    """What the agents referred to in tool output: still sent, or one recall away."""
    if not total.references:
        return ""
    lost = total.references - total.references_kept
    clause = (
        f"; of the {total.references:,} references the agents' next messages made to tool "
        f"output, {lost:,} left the payload"
    )
    if total.references_recallable:
        clause += (
            f", {total.references_recallable:,} of them one recall away "
            f"({total.recalls:,} recall{'s' if total.recalls != 1 else ''}, in the cost)"
        )
    return clause


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
        payback = pinch.payback
        if payback.enabled:
            knobs += (
                f" payback=on (turns_ahead={payback.turns_ahead:g} "
                f"min_payback={payback.min_payback:g} keep_min_shared={payback.keep_min_shared} "
                f"keep_max_chars={payback.keep_max_chars} "
                f"names_max_chars={payback.names_max_chars} names_share={payback.names_share:g} "
                f"lines_max_chars={payback.lines_max_chars} "
                f"max_loss_share={payback.max_loss_share:g})"
            )
        else:
            knobs += " payback=off"
        # Recall changes what is sent (a note per changed result) and what it costs.
        knobs += f" recall={'on' if pinch.recall.enabled else 'off'}"
    return f"model={model or config.routing.auto_model} {knobs}"


def describe_errors(result: ReplayResult, limit: int = 10) -> str:
    lines = [f"{len(result.errors)} request(s) refused by the router (not in the totals):"]
    for error in result.errors[:limit]:
        lines.append(f"  {error.conversation} turn {error.turn}: {error.status} {error.message}")
    if len(result.errors) > limit:
        lines.append(f"  ... and {len(result.errors) - limit} more")
    return "\n".join(lines)
