"""Rows written behind the answer (routing/recording/writer.py) are as durable as rows
written before it: batched, bounded, never lost to a worker's death or exit.

The first tests run the writer in this process (its batches held until the test
writes them); the others serve the router with gunicorn, as a user runs it.
"""

import json
import os
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from routing.models import Conversation, DecisionSummary, RouteDecision
from routing.recording import decisions, inserts, spool, writer
from tests.routing.test_durability import ask, lock_sqlite, serve, worker_pids
from tests.support.served import router_env

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def post(db, router_config, api_key):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")

    def send():
        body = {"model": "echo-medium", "messages": HI}
        response = client.post(
            "/v1/chat/completions", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 200
        return int(response["X-Router-Decision-Id"])

    return send


@pytest.fixture
def held():
    """This process's writer once ``start`` is called, handing each batch it takes to the
    test (``taken``) and waiting until ``release`` is set before it takes the next."""
    taken, release = [], threading.Event()

    def hold(batch):
        taken.extend(batch)
        release.wait()

    yield SimpleNamespace(taken=taken, release=release, start=lambda: writer.start(hold))
    release.set()
    writer.stop()


def wait_for(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the writer did not take the rows"
        time.sleep(0.01)


def journal_holds_rows() -> bool:
    return any(
        path.read_bytes()[:1] not in (b"", b"\0")
        for path in spool.spool_dir().glob("inflight-*.jsonl")
    )


def test_a_batch_of_rows_is_written_in_one_transaction_with_its_figures_summed_once(post, held):
    warm = post()  # written by the request itself: no writer runs yet
    held.release.set()
    held.start()
    ids = [post() for _ in range(3)]
    wait_for(lambda: len(held.taken) == 3)
    assert RouteDecision.objects.count() == 1  # the three are queued, not written

    with CaptureQueriesContext(connection) as captured:
        decisions.write_batch(held.taken)

    statements = [q["sql"] for q in captured.captured_queries]
    # The rows: one statement run for each (Django logs it once, "3 times: ...").
    assert statements.count(f"3 times: {inserts._insert_sql(connection.vendor)}") == 1
    assert not any(s.startswith('INSERT INTO "routing_routedecision"') for s in statements)
    # Their conversation, each summary table and the conversation's units: one statement
    # for the batch.
    assert sum(s.startswith('UPDATE "routing_conversation"') for s in statements) == 1
    for table in ("routing_qualityunit", "routing_decisionsummary", "routing_keyspend"):
        assert sum(s.startswith(f'INSERT INTO "{table}"') for s in statements) == 1
    assert sorted(RouteDecision.objects.values_list("id", flat=True)) == [warm, *ids]
    assert Conversation.objects.get().requests == 4
    assert sum(DecisionSummary.objects.values_list("decisions", flat=True)) == 4
    assert not journal_holds_rows()


def test_past_its_backlog_the_writer_takes_no_more_and_the_request_writes_its_own_row(
    post, held, monkeypatch
):
    monkeypatch.setattr(writer, "MAX_BACKLOG", 2)
    held.start()
    first = post()
    wait_for(lambda: len(held.taken) == 1)  # the writer is busy with it
    queued = [post(), post()]
    assert writer.backlog() == 3
    own = post()  # the backlog is full: written before its answer
    assert list(RouteDecision.objects.values_list("id", flat=True)) == [own]
    assert writer.backlog() == 3

    held.release.set()
    wait_for(lambda: len(held.taken) == 3)
    decisions.write_batch(held.taken)
    assert sorted(RouteDecision.objects.values_list("id", flat=True)) == [first, *queued, own]


def test_a_row_past_the_backlogs_bytes_is_written_by_its_own_request(post, held, monkeypatch):
    # Rows with recall originals can be large: the backlog is bounded in bytes too.
    monkeypatch.setattr(writer, "MAX_BACKLOG_BYTES", 1)
    held.start()
    own = post()
    assert list(RouteDecision.objects.values_list("id", flat=True)) == [own]
    assert writer.backlog() == 0


def test_a_database_failure_mid_batch_spools_the_rows_and_each_is_written_once(
    post, held, monkeypatch
):
    held.release.set()
    held.start()
    ids = [post() for _ in range(3)]
    wait_for(lambda: len(held.taken) == 3)

    def locked(rows):
        raise OperationalError("database is locked")

    with monkeypatch.context() as patched:
        # After the batch's INSERTs: the whole transaction must roll back.
        patched.setattr(inserts.conversations, "record", locked)
        decisions.write_batch(held.taken)

    assert RouteDecision.objects.count() == 0
    assert not journal_holds_rows()
    assert spool.drain(raise_errors=True) == 3
    assert spool.drain(raise_errors=True) == 0
    assert sorted(RouteDecision.objects.values_list("id", flat=True)) == ids
    assert Conversation.objects.get().requests == 3


@pytest.mark.django_db(transaction=True)
def test_a_lone_row_is_written_after_the_writers_wait_without_more_requests(post):
    decisions.write_behind()  # the writer as a served worker runs it
    try:
        decision_id = post()
        # Not held until a batch fills: written within the wait (and its write), well inside this.
        wait_for(lambda: RouteDecision.objects.filter(pk=decision_id).exists(), seconds=10)
        # The journal lets the row go just after its batch commits, on the writer's thread.
        wait_for(lambda: not journal_holds_rows(), seconds=10)
    finally:
        writer.stop()


@pytest.mark.django_db(transaction=True)
def test_a_graceful_stop_writes_a_row_still_waiting_for_its_batch(post):
    decisions.write_behind()
    decision_id = post()
    writer.stop()  # a worker's exit: the row's wait is cut short, not the row
    assert RouteDecision.objects.filter(pk=decision_id).exists()
    assert not journal_holds_rows()


def test_a_worker_killed_with_rows_queued_leaves_them_with_their_real_figures(tmp_path, upstream):
    with serve(tmp_path, upstream) as served:
        assert ask(served)  # the worker knows the key and the config
        locker = lock_sqlite(tmp_path / "router.sqlite3")
        try:
            # Its writer waits for the lock: the three rows are queued, journaled final.
            for _ in range(3):
                assert ask(served)
            (worker,) = worker_pids(served)
            os.kill(worker, signal.SIGKILL)
        finally:
            locker.communicate("\n", timeout=10)

        # The next worker's first write recovers the dead one's journal.
        assert ask(served)
        assert served.count_rows() == 5
        assert served.count_rows(status_code=200, prompt_tokens=11, usage_estimated=False) == 5
        assert served.count_rows(error__startswith="interrupted") == 0


def test_a_graceful_stop_writes_the_rows_still_queued(tmp_path, upstream):
    with serve(tmp_path, upstream) as served:
        assert ask(served)
        locker = lock_sqlite(tmp_path / "router.sqlite3")
        try:
            for _ in range(3):
                assert ask(served)  # queued behind the lock
            served.process.terminate()  # SIGTERM: gunicorn stops its worker gracefully
        finally:
            locker.communicate("\n", timeout=10)
        served.process.wait(30)

        spool_dir = Path(served.env["ROUTER_DATA_DIR"]) / "spool"
        # Nothing left for a recovery: the stop wrote the queue (or spooled it).
        assert [p.read_bytes()[:1] for p in spool_dir.glob("inflight-*.jsonl")] == [b"\0"]
        served.manage("drain_spool")
        assert served.count_rows(status_code=200, usage_estimated=False) == 4


def test_a_stored_response_is_readable_by_the_very_next_request_on_any_worker(tmp_path, upstream):
    import openai

    from tests.support.config import base_config
    from tests.support.served import gunicorn_router, prepare

    env = router_env(tmp_path, base_config(upstream.base_url), ROUTER_WORKERS="2")
    with gunicorn_router(env, prepare(env)) as served:
        sdk = openai.OpenAI(
            base_url=served.url + "/v1", api_key=served.key, max_retries=0, timeout=30
        )
        previous = sdk.responses.create(model="echo-medium", input="turn 0")
        # Each turn names the one before at once, on whichever worker takes it.
        for turn in range(1, 12):
            previous = sdk.responses.create(
                model="echo-medium", input=f"turn {turn}", previous_response_id=previous.id
            )
        assert served.count_rows(status_code=200) == 12
