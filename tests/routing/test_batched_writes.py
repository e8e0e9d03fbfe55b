"""Rows written in one batch (the served writer's, a drain's) leave every table as the same
rows written one at a time: the decisions and their conversations (routing/conversations.py
adds a conversation's rows of a batch in one UPDATE) value for value; their units and the
summaries too, but for the last digits of their float sums (a batch's figures are summed in
memory first: routing/summaries/writes.py, and float addition is not associative).

The rows are those of real sessions of the corpus served through the router, and generated
traffic whose rows come late, tie, change model, leave their state blank, and whose costs
are floats that sum differently in another order.
"""

import json
import math
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routing.models import Conversation, QualityUnit, RouteDecision
from routing.recording import decisions, journal, room, writer
from routing.recording.inserts import insert_decisions
from routing.replay.corpus import corpus_dir
from routing.summaries.writes import TABLES
from tests.support.ci import missing
from tests.support.corpus import recorded_sessions
from tests.support.decisions import COUNTS, columns, decision, traffic_columns

pytestmark = pytest.mark.django_db

COMPARED = (RouteDecision, Conversation, QualityUnit, *TABLES)
EXACT = ("RouteDecision", "Conversation")
T0 = timezone.now() - timedelta(hours=2)


def tables() -> dict:
    """Every row of the tables the rows touch, in an order of their own values (the ids of
    rows other than the decisions' are the database's, given in the order of the writes)."""
    held = {}
    for table in COMPARED:
        rows = [
            {k: v for k, v in row.items() if table is RouteDecision or k != "id"}
            for row in table.objects.values()
        ]
        held[table.__name__] = sorted(rows, key=_place)
    return held


def _place(row: dict) -> str:
    """A row's place in its table's: by its values but its floats (which may differ in their
    last digits)."""
    return repr(sorted((k, v) for k, v in row.items() if not isinstance(v, float)))


def written(rows: list[dict], batch: int) -> dict:
    """The tables after ``rows`` are written as the writer writes them, ``batch`` at a time
    (each batch one transaction); emptied again after."""
    for start in range(0, len(rows), batch):
        with transaction.atomic():
            part = [dict(row) for row in rows[start : start + batch]]
            insert_decisions(part, replayed=False)
    held = tables()
    for table in COMPARED:
        table.objects.all().delete()
    return held


def assert_alike(batched: dict, one_at_a_time: dict):
    for table in EXACT:
        assert batched[table] == one_at_a_time[table], table
    for table, rows in one_at_a_time.items():
        assert len(batched[table]) == len(rows), table
        for mine, theirs in zip(batched[table], rows, strict=True):
            assert mine.keys() == theirs.keys()
            for name, value in theirs.items():
                if isinstance(value, float):
                    close = math.isclose(mine[name], value, rel_tol=1e-12, abs_tol=1e-12)
                    assert close, (table, name)
                else:
                    assert mine[name] == value, (table, name)


def assert_batched_alike(rows: list[dict], batch: int):
    one_at_a_time = written(rows, 1)
    assert one_at_a_time["RouteDecision"], "no rows written"
    assert_alike(written(rows, batch), one_at_a_time)


def requests(messages: list[dict], first: int):
    """The session's first requests: the messages before each of the agent's answers."""
    sent = 0
    for t, message in enumerate(messages):
        if t > 0 and message.get("role") == "assistant":
            yield messages[:t]
            sent += 1
            if sent == first:
                return


@pytest.fixture
def served_rows(router_config, api_key, monkeypatch):
    """The finished rows of requests served by the router, taken instead of written."""
    rows = []

    def taken(decision, drain=True):
        rows.append(decision.fields)
        room.release(decision.room)
        journal.closed(decision.journaled)

    monkeypatch.setattr(decisions, "_keep", taken)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")

    def serve(messages: list[dict], model: str = "auto"):
        body = json.dumps({"model": model, "messages": messages})
        response = client.post("/v1/chat/completions", data=body, content_type="application/json")
        assert response.status_code == 200, response.content[:300]

    return rows, serve


def test_real_sessions_rows_written_in_batches_leave_the_tables_as_one_at_a_time(served_rows):
    recorded = [param.values[0] for param in recorded_sessions()]
    if recorded[0] is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    rows, serve = served_rows
    # The sessions' requests interleaved, as the agents of a team send them to one router:
    # a batch holds several conversations, each several times.
    sessions = [list(requests(session.messages, 6)) for session in recorded]
    for turn in range(max(len(s) for s in sessions)):
        for n, session in enumerate(sessions):
            if turn < len(session):
                serve(session[turn], model=("auto", "echo-small", "echo-hard")[(turn + n) % 3])
    assert len({row["conversation"] for row in rows}) > 1
    assert_batched_alike(rows, writer.BATCH_ROWS)
    assert_batched_alike(rows, len(rows))  # a drain's


traffic_rows = st.fixed_dictionaries(
    {
        **traffic_columns(st.none() | st.floats(0, 1, allow_nan=False)),
        "conversation": st.sampled_from(["c-a", "c-b", "c-c", ""]),
        # Repeats (ties), and rows later in the list that are earlier in time.
        "seconds": st.integers(0, 20),
        "completion_tokens": COUNTS,
        "quality_task": st.none() | st.integers(0, 2),
        # Blank: the row moves no model; LIKE's own characters must read as themselves.
        "chosen_model": st.sampled_from(["m1", "m2", "m%", "m_", "m\\1", ""]),
        # Never blank on a recorded row (the plan's arm: routing/experiments.py). A blank arm
        # keeps the one before; the units' batch (routing/summaries/units.py) reads it at the
        # batch's latest time, not at its own row's.
        "arm": st.sampled_from(["control", "holdout"]),
        "tier": st.sampled_from(["easy", "hard", ""]),
        "pinch_tools": st.none() | st.just({"bash": 2}),
        # The state each request leaves its conversation: blank leaves the one before.
        "route_state": st.sampled_from(["", "s1", "s2"]),
        "pinch_ledger": st.sampled_from(["", "l1", "l2"]),
        "payload_fingerprints": st.sampled_from(["", "f1"]),
    }
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(traffic=st.lists(traffic_rows, min_size=1, max_size=90), batch=st.integers(2, 70))
def test_generated_rows_written_in_batches_leave_the_tables_as_one_at_a_time(traffic, batch):
    rows = []
    for n, row in enumerate(traffic):
        state = {k: row.pop(k) for k in ("route_state", "pinch_ledger", "payload_fingerprints")}
        at = T0 + timedelta(seconds=row.pop("seconds"))
        if row["pinch_original_tokens"] is None:
            row["pinch_final_tokens"] = None
        rows.append(columns(decision(created_at=at, **row), id=20_000 + n, **state))
    assert_batched_alike(rows, batch)
