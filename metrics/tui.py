"""A terminal dashboard: the router's pinch savings and recent decisions, over HTTP.

It reads ``GET /admin/api/snapshot`` with a staff API key, like any remote
client would, so it works against a router on another host and needs no
database access. textual gives it a real app loop (a refresh timer that keeps
running while the screen redraws), key bindings (``r`` refresh, ``q`` quit)
and a test pilot that drives the app headless, so the tests press keys and read
the widgets instead of parsing terminal escapes.

All HTTP goes through ``fetch_snapshot``, the one seam: it returns the snapshot
or raises ``SnapshotError`` with a message meant for the operator. The fetch
runs in a worker thread so a slow router never freezes the screen; on an error
the last good figures stay on screen, marked stale, and the timer keeps
retrying.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import requests
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Footer, Header, Static

from metrics.charts import format_tokens
from metrics.key_budgets import cells as key_budget_cells
from metrics.savings import cause_lines
from routing.formatting import (
    CARD_KEYS,
    CARD_LABELS,
    format_count_or_missing,
    format_latency,
    format_pinch_value,
    money_tone,
)

SNAPSHOT_PATH = "/admin/api/snapshot"
DEFAULT_INTERVAL = 5.0  # seconds: the snapshot is 3 small queries, cheap enough to poll
DEFAULT_TIMEOUT = 5.0  # seconds: past this the router is as good as unreachable

KEY_BUDGET_COLUMNS = ("key", "spent", "budget", "soft", "used", "state", "resets (UTC)", "refused")

# Fits 120 columns with every column whole: path, tier and stream share one
# column, pinch tokens read compact (150k→123k) beside the exact saving.
DECISION_COLUMNS = (
    "time (UTC)",
    "requested → chosen",
    "path · tier",
    "status",
    "pinch tokens",
    "saved",
    "relevance",
    "latency",
)
TONE_STYLES = {"gain": "bold green", "loss": "bold red", "even": ""}
# Figures coloured by their sign: the net saving, and dearer conversations (a loss).
TONED_KEYS = {"net_dollars_saved_usd_30d"}


class SnapshotError(Exception):
    """The snapshot could not be read; the message says why, for an operator."""


def snapshot_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith(SNAPSHOT_PATH) else url + SNAPSHOT_PATH


def _network_reason(error: requests.RequestException, timeout: float) -> str:
    """The root cause in a few words ("Connection refused"), not urllib3's whole chain."""
    if isinstance(error, requests.Timeout):
        return f"no answer within {timeout:g} s"
    seen = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        stack.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
        stack.extend(arg for arg in getattr(current, "args", ()) if isinstance(arg, BaseException))
    return str(error)


def _server_message(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.reason or ""


def fetch_snapshot(url: str, token: str, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """GET the router's admin snapshot; raise SnapshotError with a readable message."""
    endpoint = snapshot_url(url)
    try:
        response = requests.get(
            endpoint,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
        )
    except requests.RequestException as error:
        raise SnapshotError(
            f"Cannot reach the router at {url}: {_network_reason(error, timeout)}"
        ) from None
    if response.status_code in (401, 403):
        raise SnapshotError(
            f"The router refused the token (HTTP {response.status_code}: "
            f"{_server_message(response).rstrip('.')}). Use an active staff API key "
            "(.venv/bin/python manage.py createapikey NAME --staff)."
        )
    if response.status_code != 200:
        raise SnapshotError(
            f"The router answered HTTP {response.status_code} at {endpoint}: "
            f"{_server_message(response)}"
        )
    try:
        data = response.json()
    except ValueError:
        raise SnapshotError(f"{endpoint} did not answer JSON: is {url} the router?") from None
    if not isinstance(data, dict) or "recent_decisions" not in data:
        raise SnapshotError(f"{endpoint} did not answer a snapshot: is {url} the router?")
    return data


# ---------------------------------------------------------------------------
# Formatting: the figures as the dashboard and admin show them (routing.formatting).


def decision_cells(row: dict) -> tuple[str, ...]:
    requested, chosen = row.get("requested_model", ""), row.get("chosen_model", "")
    original, final = row.get("pinch_original_tokens"), row.get("pinch_final_tokens")
    try:
        when = datetime.fromisoformat(row["created_at"]).strftime("%m-%d %H:%M:%S")
    except (KeyError, TypeError, ValueError):
        when = str(row.get("created_at", ""))
    if not chosen:
        model = f"{requested} → no model ran"
    else:
        model = requested if requested == chosen else f"{requested} → {chosen}"
    where = f"{row.get('path', '')} · {row.get('tier') or '—'}" + (
        " ⇢" if row.get("stream") else ""
    )
    return (
        when,
        model,
        where,
        "—" if row.get("status_code") is None else str(row["status_code"]),
        "off" if original is None else f"{format_tokens(original)}→{format_tokens(final)}",
        format_count_or_missing(row.get("tokens_saved")),
        "yes" if row.get("relevance_used") else "—",
        format_latency(row.get("upstream_latency_ms")),
    )


def pinch_cell(key: str, summary: dict) -> Text:
    """A figure as the card shows it; the net saving green or red by its sign."""
    value = summary.get(key)
    style = ""
    if key in TONED_KEYS:
        style = TONE_STYLES[money_tone(value)]
    elif key == "conversations_dearer_30d" and value:
        style = TONE_STYLES["loss"]
    return Text(format_pinch_value(key, value), style=style)


def pinch_title(summary: dict | None) -> str:
    if summary and summary.get("reset_date"):
        return (
            f"Pinch savings since {summary['reset_date']} "
            f"(next reset {summary.get('next_reset_date')})"
        )
    return "Pinch savings (30 days), the money first"


def knobs_line(knobs: dict) -> str:
    def on(name):
        return "on" if knobs.get(name) else "off"

    return (
        f"pinch {on('pinch_enabled')} · relevance {on('pinch_relevance_enabled')} · "
        f"prefix probe {on('pinch_prefix_probe')} (measurement only)"
    )


# ---------------------------------------------------------------------------
# The app.


class RouterTui(App):
    TITLE = "LLM router"
    BINDINGS: ClassVar = [("r", "refresh", "Refresh now"), ("q", "quit", "Quit")]
    CSS = """
    #status { height: auto; padding: 0 1; color: $text-muted; }
    #status.error { color: $error; text-style: bold; }
    #knobs { height: auto; padding: 0 1; color: $text-muted; }
    .section { padding: 1 1 0 1; text-style: bold; }
    /* Every figure shows: nine rows and the header, never cut to a scroll. */
    #pinch { height: auto; margin: 0 1; }
    #causes { height: auto; max-height: 6; margin: 0 1; scrollbar-size: 0 0; }
    #keys { height: auto; max-height: 8; margin: 0 1; scrollbar-size: 0 0; }
    /* No scrollbars: in a captured or plain terminal their thumb is a stray glyph
       mid-screen; the cursor keys still scroll. */
    #decisions { height: 1fr; scrollbar-size: 0 0; }
    #pinch { scrollbar-size: 0 0; }
    """

    def __init__(
        self,
        url: str,
        token: str,
        interval: float = DEFAULT_INTERVAL,
        timeout: float = DEFAULT_TIMEOUT,
        fetch=fetch_snapshot,
    ):
        super().__init__()
        self.url = url
        self.token = token
        self.interval = interval
        self.timeout = timeout
        self.fetch = fetch
        self.snapshot: dict | None = None
        self.error: str | None = None
        self.fetches = 0  # completed fetches, good or not: tests wait on it

    def compose(self) -> ComposeResult:
        yield Header(show_clock=True)
        with Vertical():
            yield Static(f"Connecting to {self.url} …", id="status")
            yield Static("", id="knobs")
            yield Static("Pinch savings", id="pinch-title", classes="section")
            yield DataTable(id="pinch", show_cursor=False, zebra_stripes=True)
            yield Static("Saved by cause (30 days)", classes="section")
            yield DataTable(id="causes", show_cursor=False, zebra_stripes=True)
            yield Static("Keys: spend against budget", id="keys-title", classes="section")
            yield DataTable(id="keys", show_cursor=False, zebra_stripes=True)
            yield Static("Recent decisions", classes="section")
            yield DataTable(id="decisions", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.url
        self.query_one("#pinch", DataTable).add_columns("figure", "value")
        self.query_one("#causes", DataTable).add_columns("cause", "USD")
        self.query_one("#keys", DataTable).add_columns(*KEY_BUDGET_COLUMNS)
        self.query_one("#decisions", DataTable).add_columns(*DECISION_COLUMNS)
        self.set_interval(self.interval, self.action_refresh)
        self.action_refresh()

    def action_refresh(self) -> None:
        # exclusive: a refresh asked while one is in flight replaces it.
        self.run_worker(self._load, thread=True, exclusive=True, group="snapshot")

    def _load(self) -> None:
        try:
            data = self.fetch(self.url, self.token, self.timeout)
        except SnapshotError as error:
            self.call_from_thread(self.show_error, str(error))
        else:
            self.call_from_thread(self.show_snapshot, data)

    def show_snapshot(self, data: dict) -> None:
        self.snapshot, self.error = data, None
        self.fetches += 1
        status = self.query_one("#status", Static)
        status.remove_class("error")
        status.update(
            f"Updated {datetime.now():%H:%M:%S} from {self.url} · every {self.interval:g} s"
        )
        self.query_one("#knobs", Static).update(knobs_line(data.get("knobs") or {}))

        pinch = self.query_one("#pinch", DataTable)
        pinch.clear()
        summary = data.get("pinch")
        self.query_one("#pinch-title", Static).update(pinch_title(summary))
        if summary is None:
            pinch.add_row("Pinch is disabled", "", key="disabled")
        else:
            for key in CARD_KEYS:
                pinch.add_row(CARD_LABELS[key], pinch_cell(key, summary), key=key)

        causes = self.query_one("#causes", DataTable)
        causes.clear()
        if data.get("savings_by_cause"):
            for key, label, shown, _ in cause_lines(data["savings_by_cause"]):
                causes.add_row(label, shown, key=key)

        self.show_key_budgets(data.get("key_budgets") or [])
        decisions = self.query_one("#decisions", DataTable)
        decisions.clear()
        for row in data.get("recent_decisions") or []:
            decisions.add_row(*decision_cells(row), key=str(row.get("id")))

    def show_key_budgets(self, rows: list[dict]) -> None:
        keys = self.query_one("#keys", DataTable)
        keys.clear()
        keys.display = self.query_one("#keys-title", Static).display = bool(rows)
        for row in rows:
            shown = key_budget_cells(row)
            keys.add_row(
                *(shown[c] for c in ("key", "spent", "budget", "soft", "used", "state", "resets")),
                shown["refused"],
                key=row["prefix"],
            )

    def show_error(self, message: str) -> None:
        self.error = message
        self.fetches += 1
        status = self.query_one("#status", Static)
        status.add_class("error")
        stale = " Figures below are from the last good read." if self.snapshot else ""
        status.update(f"{message} — retrying every {self.interval:g} s.{stale}")
