"""The recall store: what pinch took out comes back by its handle, from any worker, or the
model is told plainly why not; it takes the decision's durable path; a store that fails
never costs a request its row; recalls are marked for pinch; purged with the conversation."""

import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from routing.models import Conversation, RecallOriginal, RecallUsage, RouteDecision
from routing.recall import store
from routing.recall.expiry import forget_idle_originals
from routing.recall.keeping import ORIGINALS
from routing.recording import spool
from tests.support.recall import carrying, held_bytes, record

pytestmark = pytest.mark.django_db

CONVERSATION = "c" * 32


def test_a_stored_original_comes_back_by_its_handle_without_the_request_that_stored_it():
    record(CONVERSATION, {"r3": "the whole listing\n" * 100, "r5": "pytest output"})
    recall = store.lookup(CONVERSATION, "r3", pending={})
    assert (recall.status, recall.text) == (store.KEPT, "the whole listing\n" * 100)
    assert store.lookup(CONVERSATION, "r5", {}).text == "pytest output"


def test_the_requests_own_originals_answer_before_the_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert store.lookup(CONVERSATION, "r7", {"r7": "fresh"}).text == "fresh"


def test_an_original_of_another_conversation_is_not_given_out():
    record(CONVERSATION, {"r3": "secret of the first conversation"})
    recall = store.lookup("d" * 32, "r3", {})
    assert recall.status == store.UNKNOWN and recall.text is None
    assert "No original is kept under r3" in recall.answer


@pytest.mark.parametrize(
    "handle", ["r999", "x3", "r-1", "r" + "9" * 40, "r３", "", None, "r3; DROP TABLE"]
)
def test_a_handle_the_store_never_gave_is_unknown_and_said_so(handle):
    record(CONVERSATION, {"r3": "kept"})
    recall = store.lookup(CONVERSATION, handle, {})
    assert recall.status == store.UNKNOWN
    assert recall.answer.startswith("No original is kept under")


def test_a_database_that_cannot_answer_says_not_available_and_logs_it(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(RecallOriginal.objects, "filter", broken)
    with caplog.at_level(logging.WARNING):
        recall = store.lookup(CONVERSATION, "r3", {})
    assert recall.status == store.UNAVAILABLE
    assert "cannot be read right now" in recall.answer
    assert "recall_unavailable reason=OperationalError" in caplog.text


def test_a_handle_already_held_is_not_written_again():
    record(CONVERSATION, {"r3": "first text"})
    record(CONVERSATION, {"r3": "first text", "r9": "new"})
    assert sorted(RecallOriginal.objects.values_list("handle", flat=True)) == ["r3", "r9"]
    assert sum(RecallUsage.objects.values_list("bytes", flat=True)) == held_bytes()


def test_a_store_that_fails_keeps_the_decision_row_and_logs_it(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise OperationalError("disk I/O error")

    monkeypatch.setattr(RecallOriginal.objects, "bulk_create", broken)
    with caplog.at_level(logging.WARNING):
        row = record(CONVERSATION, {"r3": "lost original"})
    assert RouteDecision.objects.filter(pk=row["id"]).exists()
    assert Conversation.objects.get(key=CONVERSATION).requests == 1
    assert "recall_store_failed reason=OperationalError" in caplog.text
    assert store.lookup(CONVERSATION, "r3", {}).status == store.UNKNOWN


def test_originals_spooled_with_their_decision_are_stored_when_it_is_drained():
    fields = carrying(CONVERSATION, {"r4": "spooled original \ud800 with a lone surrogate"})
    spool.spool(fields)
    assert RecallOriginal.objects.count() == 0
    assert spool.drain(raise_errors=True) == 1
    assert (
        store.lookup(CONVERSATION, "r4", {}).text == "spooled original \ufffd with a lone surrogate"
    )
    decision = RouteDecision.objects.get()
    assert not hasattr(decision, ORIGINALS)


def test_a_result_recalled_in_two_requests_is_kept_on_its_conversation_for_pinch():
    record(CONVERSATION, {"r3": "a", "r5": "b", "r8": "c"})
    record(CONVERSATION, {}, recalled=["r5", "r8"])
    record(CONVERSATION, {}, recalled=["r5"])
    with CaptureQueriesContext(connection) as queries:
        # r8 once: not yet (a first recall does not pay a rewrite; docs/pinch.md, "Recall").
        assert store.restored_in_store(CONVERSATION) == frozenset({5})
    assert len(queries) == 1
    assert store.restored_in_store("d" * 32) == frozenset()
    # Kept where planning reads it, with the conversation's state: no query of the store.
    assert Conversation.objects.get(key=CONVERSATION).recall_restored == "5"


def test_purge_deletes_the_originals_of_idle_conversations_only():
    idle, active = "a" * 32, "b" * 32
    record(idle, {f"r{i}": f"old {i} " * 50 for i in range(7)}, age=timedelta(days=40))
    record(active, {"r2": "still going"}, age=timedelta(days=40))
    record(active, {"r6": "today"})
    assert forget_idle_originals(31, batch=3) == 7
    assert set(RecallOriginal.objects.values_list("conversation", flat=True)) == {active}
    # The store's total is what it holds still.
    assert sum(RecallUsage.objects.values_list("bytes", flat=True)) == held_bytes()
    assert store.lookup(idle, "r0", {}).status == store.UNKNOWN


def test_the_purge_command_names_the_originals_it_deleted():
    record("a" * 32, {"r1": "old"}, age=timedelta(days=40))
    out = StringIO()
    call_command("purge_decisions", "--older-than", "31", stdout=out)
    assert "Deleted 1 recall originals of those conversations." in out.getvalue()
    assert not RecallOriginal.objects.exists()
    assert not Conversation.objects.exists()
