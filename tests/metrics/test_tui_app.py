"""The terminal dashboard, driven by textual's pilot against a real router (live_server).

No mocks: the app fetches /admin/api/snapshot over HTTP from pytest-django's
live server, with a staff key made by create_api_key, and the tests read what
the widgets show. The pilot runs inside ``asyncio.run``; the database is
touched from a worker thread there (Django refuses sync queries inside an event
loop), and that thread closes its connection so PostgreSQL can drop the test
database afterwards.
"""

import asyncio
import re
import time
from datetime import timedelta

import pytest
from django.db import connection
from textual.widgets import DataTable, Static

from metrics.summary import pinch_summary
from metrics.tui import DECISION_COLUMNS, RouterTui
from routing.auth import create_api_key
from routing.formatting import CARD_KEYS, CARD_LABELS, format_money
from tests.support.decisions import decision, seed
from tests.support.ports import refused_port

SCREEN = (150, 45)


def shown_pinch_rows(app) -> dict:
    table = app.query_one("#pinch", DataTable)
    return {str(row.key.value): str(table.get_row(row.key)[1]) for row in table.ordered_rows}


def status_text(app) -> str:
    return str(app.query_one("#status", Static).content)


def expected_rows(summary: dict) -> dict:
    median = float(summary["median_tokens_saved"])
    return {
        "share_pruned": f"{summary['share_pruned'] * 100:.2f}%",
        "total_tokens_saved": f"{summary['total_tokens_saved']:,}",
        "median_tokens_saved": f"{median:,.0f}" if median.is_integer() else f"{median:,.1f}",
        "dollars_saved_usd_30d": format_money(summary["dollars_saved_usd_30d"]),
        "net_dollars_saved_usd_30d": format_money(summary["net_dollars_saved_usd_30d"]),
        "conversations_cheaper_30d": f"{summary['conversations_cheaper_30d']:,}",
        "conversations_dearer_30d": f"{summary['conversations_dearer_30d']:,}",
        "pruned_calls_30d": f"{summary['pruned_calls_30d']:,}",
        "calls_30d": f"{summary['calls_30d']:,}",
        "failed_calls_30d": f"{summary['failed_calls_30d']:,}",
    }


async def until(pilot, condition, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the TUI did not get there in time")
        await pilot.pause(0.05)


async def in_db_thread(function, *args):
    def run():
        try:
            return function(*args)
        finally:
            connection.close()

    return await asyncio.to_thread(run)


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_pinch_rows_pinch_summary_computes(live_server, default_config, savings_rows):
    _, token = create_api_key("tui", is_staff=True)
    summary = pinch_summary(default_config)
    app = RouterTui(live_server.url, token, interval=60)

    async def scenario():
        async with app.run_test(size=SCREEN) as pilot:
            await until(pilot, lambda: app.fetches >= 1)
            assert app.error is None
            assert shown_pinch_rows(app) == expected_rows(summary)
            assert shown_pinch_rows(app)["share_pruned"] == "80.00%"
            assert shown_pinch_rows(app)["failed_calls_30d"] == "1"
            assert shown_pinch_rows(app)["dollars_saved_usd_30d"] == "$0.0043"
            decisions = app.query_one("#decisions", DataTable)
            assert decisions.row_count == len(savings_rows)
            assert "prefix probe on (measurement only)" in str(
                app.query_one("#knobs", Static).content
            )

    asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_pressing_r_refreshes_the_figures(live_server, default_config, savings_rows):
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=3600)  # only r refreshes

    async def scenario():
        async with app.run_test(size=SCREEN) as pilot:
            await until(pilot, lambda: app.fetches >= 1)
            assert shown_pinch_rows(app)["total_tokens_saved"] == "6,050"

            await in_db_thread(lambda: seed(decision(saved=10_000)))
            await pilot.press("r")
            await until(pilot, lambda: app.fetches >= 2)

            summary = await in_db_thread(pinch_summary, default_config)
            assert shown_pinch_rows(app) == expected_rows(summary)
            assert shown_pinch_rows(app)["total_tokens_saved"] == "16,050"
            assert app.query_one("#decisions", DataTable).row_count == len(savings_rows) + 1

    asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_router_is_explained_and_retried_until_it_answers(
    live_server, default_config, savings_rows
):
    _, token = create_api_key("tui", is_staff=True)
    with refused_port() as port:
        dead_url = f"http://127.0.0.1:{port}"
        app = RouterTui(dead_url, token, interval=0.2, timeout=2)

        async def scenario():
            async with app.run_test(size=SCREEN) as pilot:
                await until(pilot, lambda: app.fetches >= 3)  # it keeps trying on the timer
                assert status_text(app).startswith(
                    f"Cannot reach the router at {dead_url}: Connection refused"
                )
                assert "retrying every 0.2 s" in status_text(app)
                assert app.query_one("#pinch", DataTable).row_count == 0

                app.url = live_server.url  # the router comes back
                await until(pilot, lambda: app.error is None and app.snapshot is not None)
                assert shown_pinch_rows(app)["total_tokens_saved"] == "6,050"
                assert status_text(app).startswith("Updated ")

        asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("staff", [False, None], ids=["non-staff key", "unknown key"])
def test_a_refused_token_is_explained(live_server, default_config, savings_rows, staff):
    token = create_api_key("agent")[1] if staff is False else "rk-not-a-real-key"
    app = RouterTui(live_server.url, token, interval=0.2)

    async def scenario():
        async with app.run_test(size=SCREEN) as pilot:
            await until(pilot, lambda: app.fetches >= 2)
            assert status_text(app).startswith("The router refused the token (HTTP 403")
            assert "createapikey NAME --staff" in status_text(app)
            assert shown_pinch_rows(app) == {}

    asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_it_says_pinch_is_disabled(live_server, write_default_config, savings_rows):
    write_default_config({"pinch.enabled": False})
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=60)

    async def scenario():
        async with app.run_test(size=SCREEN) as pilot:
            await until(pilot, lambda: app.fetches >= 1)
            table = app.query_one("#pinch", DataTable)
            assert table.get_row("disabled")[0] == "Pinch is disabled"
            assert set(CARD_KEYS).isdisjoint(shown_pinch_rows(app))

    asyncio.run(scenario())


def test_q_quits():
    app = RouterTui("http://127.0.0.1:9", "rk-x", interval=60, timeout=0.5)

    async def scenario():
        async with app.run_test(size=SCREEN) as pilot:
            await pilot.press("q")
            await pilot.pause()
            assert not app.is_running

    asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_latency_reads_as_on_the_dashboard(live_server, router_config, client, staff_user):
    fast, slow = seed(
        decision(upstream_latency_ms=46.4, age=timedelta(minutes=1)),
        decision(upstream_latency_ms=4_520.0, age=timedelta(minutes=2)),
    )
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=60)
    latency = DECISION_COLUMNS.index("latency")

    async def scenario():
        async with app.run_test(size=SCREEN) as pilot:
            await until(pilot, lambda: app.fetches >= 1)
            table = app.query_one("#decisions", DataTable)
            return [table.get_row(str(row.pk))[latency] for row in (fast, slow)]

    assert asyncio.run(scenario()) == ["46 ms", "4.5 s"]
    client.force_login(staff_user)
    dashboard = client.get("/dashboard/").content.decode()
    assert re.findall(r'data-testid="latency">([^<]+)<', dashboard) == ["46 ms", "4.5 s"]


@pytest.mark.django_db(transaction=True)
def test_a_long_decision_list_scrolls_with_the_keys_and_draws_no_scrollbar(
    live_server, router_config
):
    seed(*(decision(age=timedelta(minutes=i)) for i in range(50)))
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=60)

    async def scenario():
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.fetches >= 1)
            table = app.query_one("#decisions", DataTable)
            await until(pilot, lambda: table.max_scroll_y > 0)  # more rows than the screen holds
            # No scrollbar: its thumb alone showed as a stray glyph mid-screen.
            assert table.scrollbar_size_vertical == 0
            table.focus()
            for _ in range(45):
                await pilot.press("down")
            assert table.scroll_y > 0

    asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_at_120_by_70_every_pinch_row_and_every_decision_column_shows(live_server, default_config):
    """The last rows (pruned calls, calls) are on screen, labelled in words, and a net loss
    is red; the decisions table fits 120 columns, with no model ran said as such."""
    rows = [
        decision(
            saved=40_000 + i,
            conversation="lossy",
            requested_model="auto",
            chosen_model="gpt-4.1-mini",
            tier="medium",
            stream=True,
            pinch_original_tokens=150_000,
            pinch_final_tokens=110_000 - i,
            unpruned_cost_usd=0.001,
            billed_prompt_cost_usd=0.004,
            upstream_latency_ms=4_520.0,
            age=timedelta(minutes=i),
        )
        for i in range(60)
    ]
    rows.append(decision(chosen_model="", provider="", status_code=502, path="passthrough"))
    seed(*rows)
    _, token = create_api_key("tui", is_staff=True)
    app = RouterTui(live_server.url, token, interval=60)

    async def scenario():
        async with app.run_test(size=(120, 70)) as pilot:
            await until(pilot, lambda: app.fetches >= 1)
            await pilot.pause()
            pinch = app.query_one("#pinch", DataTable)
            labels = [str(pinch.get_row(row.key)[0]) for row in pinch.ordered_rows]
            assert labels[-3:] == ["Pruned calls", "Calls answered", "Failed calls (apart)"]
            assert labels == [CARD_LABELS[key] for key in CARD_KEYS]
            # Nothing hidden below a scroll: the table is as tall as its rows and header.
            assert pinch.size.height >= pinch.virtual_size.height == pinch.row_count + 1
            net = pinch.get_row("net_dollars_saved_usd_30d")[1]
            assert str(net) == "-$0.18" and "red" in str(net.style)
            decisions = app.query_one("#decisions", DataTable)
            assert decisions.virtual_size.width <= decisions.size.width <= 120
            cells = [decisions.get_row(row.key) for row in decisions.ordered_rows]
            assert any(c[1] == "auto → no model ran" for c in cells)
            routed = next(c for c in cells if c[2].startswith("routed"))
            assert routed[2] == "routed · medium ⇢" and routed[4] == "150k→110k"

    asyncio.run(scenario())
