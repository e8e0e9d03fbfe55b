"""A conversation's row: its totals are its decisions summed, its state the latest one's.

Written through the recording path's one insert (routing/recording/inserts.py),
live and as the spool's drain replays it; read by the sessions view.
"""

import threading
from datetime import timedelta

import openai
import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routing.agent_sessions import agent_sessions
from routing.auth import create_api_key
from routing.conversations import TOTALS, recomputed
from routing.models import Conversation, RouteDecision
from routing.recording.inserts import insert_decisions
from tests.support.decisions import COUNTS, columns, decision, traffic_columns

T0 = timezone.now() - timedelta(hours=1)
traffic_rows = st.fixed_dictionaries(
    {
        **traffic_columns(st.none() | st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 6))),
        "conversation": st.sampled_from(["c-a", "c-b", "c-c"]),
        "seconds": st.integers(0, 50),  # repeats and late rows: arrival is the list order
        "quality_errors": COUNTS,
        "quality_repeats_compressed": COUNTS,
        # LIKE's own characters too: "m%" must not read as already used where "m1" is.
        "chosen_model": st.sampled_from(["m1", "m2", "m%", "m_", "m\\1"]),
        # How it reaches the database: written live, or drained from the spool (in a
        # batch with the rows after it), and whether a drain replays it once more.
        "drained": st.booleans(),
        "replayed": st.booleans(),
    }
)


def _fields(n: int, row: dict) -> dict:
    values = {k: v for k, v in row.items() if k not in ("seconds", "drained", "replayed")}
    if values["pinch_original_tokens"] is None:
        values["pinch_final_tokens"] = None
    made = decision(created_at=T0 + timedelta(seconds=row["seconds"]), **values)
    return columns(made, id=10_000 + n, route_state=f"state-{n}", pinch_ledger=f"ledger-{n}")


def _record(traffic: list[dict]) -> list[dict]:
    """Write the rows as the live write and the spool's drain do; returns them, in arrival order."""
    rows = [_fields(n, row) for n, row in enumerate(traffic)]
    batch = []
    for fields, row in zip(rows, traffic, strict=True):
        if row["drained"]:
            batch.append(fields)
            continue
        insert_decisions(batch)  # the drain the live write runs after its own row
        batch = []
        insert_decisions([fields], replayed=False)
    insert_decisions(batch)
    # A drain that died after its commit runs again: nothing counts twice.
    insert_decisions([fields for fields, row in zip(rows, traffic) if row["replayed"]])
    return rows


@pytest.mark.django_db
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(traffic=st.lists(traffic_rows, min_size=1, max_size=25))
def test_a_conversations_totals_equal_its_decisions_summed_and_its_state_is_the_latest(traffic):
    Conversation.objects.all().delete()
    RouteDecision.objects.all().delete()
    rows = _record(traffic)

    assert RouteDecision.objects.count() == len(rows)
    summed = recomputed(RouteDecision.objects.all())
    held = {c.key: c for c in Conversation.objects.all()}
    assert set(held) == set(summed)
    for key, conversation in held.items():
        for name in TOTALS:
            assert getattr(conversation, name) == pytest.approx(summed[key][name], abs=1e-9), name
        mine = [
            (fields["created_at"], n)
            for n, fields in enumerate(rows)
            if fields["conversation"] == key
        ]
        # The state is the latest request's (the later arrival of two at one time); a late
        # row counted, but moved nothing back.
        at, latest = max(mine)
        assert (conversation.first_at, conversation.last_at) == (min(mine)[0], at)
        assert conversation.route_state == f"state-{latest}"
        assert conversation.pinch_ledger == f"ledger-{latest}"
        assert conversation.last_status == rows[latest]["status_code"]
        assert conversation.last_answer_tool_calls == rows[latest]["answer_tool_calls"]
        assert conversation.model == rows[latest]["chosen_model"]
        used = {rows[n]["chosen_model"] for _, n in mine}
        assert set(filter(None, conversation.models_used.split("|"))) == used


@pytest.mark.django_db
def test_a_request_with_no_routing_state_or_ledger_leaves_the_conversations_as_they_were():
    insert_decisions([columns(decision(conversation="c1"), route_state="held", pinch_ledger="L")])
    # A passthrough request with pinch off, later in the same conversation.
    later = decision(conversation="c1", age=timedelta(seconds=-5), path="passthrough")
    insert_decisions([columns(later, route_state="", pinch_ledger="")])
    conversation = Conversation.objects.get()
    assert (conversation.route_state, conversation.pinch_ledger) == ("held", "L")
    assert conversation.requests == 2


@pytest.fixture
def two_keys(live_server, router_config):
    def client(name):
        _, raw = create_api_key(name)
        return openai.OpenAI(
            base_url=live_server.url + "/v1",
            api_key=raw,
            max_retries=0,
            default_headers={"x-session-id": "ses_shared"},  # opencode's session header
        )

    return client("alice"), client("bob")


def test_two_keys_sending_the_same_session_and_messages_keep_two_conversations(two_keys):
    alice, bob = two_keys
    messages = [{"role": "user", "content": "the same task"}]
    for _ in range(2):
        alice.chat.completions.create(model="echo-medium", messages=messages)
    bob.chat.completions.create(model="echo-medium", messages=messages)

    by_key = {c.api_key.name: c for c in Conversation.objects.select_related("api_key")}
    assert {name: c.requests for name, c in by_key.items()} == {"alice": 2, "bob": 1}
    assert by_key["alice"].key != by_key["bob"].key
    # Each key's session is its own line, named for the key (routing/sessions.py).
    ids = {name: c.api_key_id for name, c in by_key.items()}
    sessions = agent_sessions()
    assert sorted((s.session, s.requests) for s in sessions) == sorted(
        [(f"ses_shared@{ids['alice']}", 2), (f"ses_shared@{ids['bob']}", 1)]
    )


@pytest.mark.django_db(transaction=True)
def test_workers_recording_one_conversation_at_once_lose_no_increment():
    workers, each = 4, 5
    start = threading.Barrier(workers)
    failures = []

    def work(worker):
        try:
            start.wait()
            for n in range(each):
                row = decision(conversation="busy", measured_tokens=10, user_turn=True)
                insert_decisions(
                    [columns(row, id=worker * 100 + n + 1, route_state=f"w{worker}")],
                    replayed=False,
                )
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    conversation = Conversation.objects.get(key="busy")
    assert conversation.requests == workers * each
    assert conversation.tokens_sent == workers * each * 10
    assert RouteDecision.objects.count() == workers * each


BEFORE = [("routing", "0015_summaries")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_builds_each_conversation_from_its_decision_rows():
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    Decision = executor.loader.project_state(BEFORE).apps.get_model("routing", "RouteDecision")

    def old_row(seconds, conversation, model="m1", **fields):
        return Decision(
            created_at=T0 + timedelta(seconds=seconds),
            conversation=conversation,
            path="routed",
            requested_model="auto",
            chosen_model=model,
            provider="p",
            upstream_model=model,
            measured_tokens=100 + seconds,
            estimated_cost_usd=0.0,
            **{"status_code": 200, **fields},
        )

    billed = {"billed_prompt_cost_usd": 0.01, "unpruned_cost_usd": 0.03}
    Decision.objects.bulk_create(
        [
            old_row(1, "c1", route_state="first", pinch_ledger="L1", session="s", **billed),
            # The latest of c1 was written before an earlier one (ids out of time order).
            old_row(9, "c1", "m2", route_state="last", pinch_ledger="L9", status_code=500),
            old_row(
                5, "c1", route_state="middle", pinch_original_tokens=900, pinch_final_tokens=600
            ),
            old_row(3, "c2", route_state="only", quality_results=4, quality_errors=1, **billed),
            old_row(4, "", route_state="before conversations were keyed"),
        ]
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # every app back to its latest

    summed = recomputed(RouteDecision.objects.all())
    built = {c.key: c for c in Conversation.objects.all()}
    assert set(built) == {"c1", "c2"}
    for key, conversation in built.items():
        assert {name: getattr(conversation, name) for name in TOTALS} == pytest.approx(summed[key])
    c1 = built["c1"]
    assert (c1.requests, c1.failed_requests, c1.tokens_saved) == (3, 1, 300)
    assert c1.net_saved_usd == pytest.approx(0.02)
    assert (c1.route_state, c1.pinch_ledger, c1.model, c1.last_status) == ("last", "L9", "m2", 500)
    assert (c1.first_at, c1.last_at) == (T0 + timedelta(seconds=1), T0 + timedelta(seconds=9))
    assert c1.models_used == "|m1|m2|"
    assert (built["c2"].quality_errors, built["c2"].route_state) == (1, "only")
