"""The recall store's bounds under hostile conversations: never over them, per conversation
or in all, the oldest originals pushed out first (and said to be gone), the request's row
always written."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routing.models import RecallOriginal, RecallUsage, RouteDecision
from routing.recall import store
from tests.support.recall import held_bytes, record

pytestmark = pytest.mark.django_db

PER_CONVERSATION = 10_000
TOTAL = 25_000


@pytest.fixture
def bounded(router_config, write_config):
    router_config["pinch"]["recall"] = {
        "max_conversation_bytes": PER_CONVERSATION,
        "max_total_bytes": TOTAL,
    }
    write_config(router_config)


def held_handles(conversation: str) -> list[str]:
    rows = RecallOriginal.objects.filter(conversation=conversation, evicted_at__isnull=True)
    return list(rows.order_by("id").values_list("handle", flat=True))


class Rollback(Exception):
    """Undoes one Hypothesis example's writes."""


# Requests of hostile conversations: (conversation, sizes of the results it adds).
requests = st.lists(
    st.tuples(st.sampled_from("abcd"), st.lists(st.integers(1, 12_000), max_size=4)),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(requests=requests)
def test_the_store_never_holds_more_than_its_bounds_and_pushes_out_the_oldest_first(
    bounded, requests
):
    try:
        with transaction.atomic():
            sent: dict[str, list[str]] = {}
            for n, (name, sizes) in enumerate(requests):
                conversation = name * 32
                originals = {f"r{n * 10 + k}": "x" * size for k, size in enumerate(sizes)}
                row = record(conversation, originals)
                assert RouteDecision.objects.filter(pk=row["id"]).exists()
                # One result over a bound is never held (it is gone from the start).
                fits = [h for h, text in originals.items() if len(text) <= PER_CONVERSATION]
                sent.setdefault(conversation, []).extend(fits)
                for key, handles in sent.items():
                    assert held_bytes(key) <= PER_CONVERSATION
                    # What is held is the newest of what was sent: a tail, oldest gone first.
                    held = held_handles(key)
                    assert held == handles[len(handles) - len(held) :]
                assert held_bytes() <= TOTAL
                assert sum(RecallUsage.objects.values_list("bytes", flat=True)) == held_bytes()
            raise Rollback
    except Rollback:
        pass


def test_a_result_pushed_out_is_said_to_be_gone(bounded):
    conversation = "e" * 32
    for n in range(4):
        record(conversation, {f"r{n}": f"{n}" * 4000})
    recall = store.lookup(conversation, "r0", {})
    assert recall.status == store.GONE
    assert "no longer kept" in recall.answer
    assert store.lookup(conversation, "r3", {}).text == "3" * 4000


def test_a_single_result_over_the_bound_is_gone_from_the_start_and_pushes_nothing_out(bounded):
    conversation = "f" * 32
    record(conversation, {"r1": "kept " * 100})
    row = record(conversation, {"r2": "y" * (PER_CONVERSATION + 1)})
    assert RouteDecision.objects.filter(pk=row["id"]).exists()
    assert store.lookup(conversation, "r2", {}).status == store.GONE
    assert store.lookup(conversation, "r1", {}).text == "kept " * 100


def test_the_total_bound_pushes_out_other_conversations_oldest_first(bounded):
    for n, name in enumerate("abc"):
        record(name * 32, {f"r{n}": "z" * 9000})
    assert store.lookup("a" * 32, "r0", {}).status == store.GONE
    assert store.lookup("b" * 32, "r1", {}).text == "z" * 9000
    assert store.lookup("c" * 32, "r2", {}).text == "z" * 9000


def test_the_total_is_checked_without_reading_the_originals(bounded):
    for n in range(30):
        record(f"{n:032d}", {"r1": "w" * 500})
    with CaptureQueriesContext(connection) as queries:
        record("g" * 32, {"r1": "w" * 500})
    store_queries = [q["sql"] for q in queries if "recall" in q["sql"].lower()]
    # The total: the counter rows; the conversation's own rows: its index. No full scan.
    assert not any(
        "recalloriginal" in sql.lower() and "sum" in sql.lower() and "conversation" not in sql
        for sql in store_queries
    )
