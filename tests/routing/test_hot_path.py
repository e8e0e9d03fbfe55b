"""The hot path reads no database and writes one row (and its conversation's, in place), and
still sees every change in time.

Config rows and router keys are cached per process (routing/changes.py); a
change saved through Django applies at the next request, one made behind
Django's back within the documented number of seconds. Whatever fails, an API
path answers in the OpenAI error shape.
"""

import json
import logging
import time

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from routing import changes
from routing.auth import revoke_api_keys
from routing.models import ApiKey, ConfigOverride, Conversation, RouteDecision
from routing.recording import spool
from tests.support.decisions import spooled_fields as decision_fields

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def post(db, router_config, api_key):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")

    def send(body=None, **extra):
        body = body or {"model": "echo-medium", "messages": HI}
        return client.post(
            "/v1/chat/completions", data=json.dumps(body), content_type="application/json", **extra
        )

    return send


def statements_of(captured) -> list[str]:
    return [
        q["sql"]
        for q in captured.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]


def recorded(statements) -> None:
    """The statements of one transaction: the decision's INSERT, its conversation's UPDATE in
    place, the quality units of the conversation and of its task read by key (locked) and
    written, one statement each for both (routing/summaries/units.py), then one upsert per
    summary table it adds to (docs/summaries.md)."""
    assert statements[0].startswith('INSERT INTO "routing_routedecision"')
    assert statements[1].startswith('UPDATE "routing_conversation"')
    assert statements[2].startswith("SELECT") and 'FROM "routing_qualityunit"' in statements[2]
    assert statements[3].startswith('INSERT INTO "routing_qualityunit"')
    summaries = ('"routing_decisionsummary"', '"routing_keyspend"', '"routing_armhour"')
    assert [sql.split(" (")[0].removeprefix("INSERT INTO ") for sql in statements[4:]] == list(
        summaries
    )
    assert all("ON CONFLICT" in sql for sql in statements[3:])


def test_a_warm_request_costs_its_insert_its_conversations_update_and_its_figures(post):
    assert post().status_code == 200  # reads the key, the config rows, reserves ids
    assert ApiKey.objects.get().last_used_at is not None  # touched with the first row
    with CaptureQueriesContext(connection) as captured:
        response = post()
    assert response.status_code == 200
    recorded(statements_of(captured))
    assert RouteDecision.objects.count() == 2
    assert Conversation.objects.get().requests == 2


def test_a_warm_request_of_a_rate_limited_key_costs_no_more_statements(post):
    from routing.limits.settings import set_key_limits

    set_key_limits(ApiKey.objects.get(), {"rpm_limit": 100, "tpm_limit": 10**6})
    assert post().status_code == 200
    with CaptureQueriesContext(connection) as captured:
        response = post()
    assert response.status_code == 200
    recorded(statements_of(captured))


def test_a_warm_request_of_a_budgeted_key_adds_its_reservation_and_its_settlement(post):
    from routing.limits.settings import set_key_limits

    set_key_limits(ApiKey.objects.get(), {"rpm_limit": 100, "budget_usd": 50.0})
    assert post().status_code == 200  # sums the key's spend, opens the period's ledger
    with CaptureQueriesContext(connection) as captured:
        response = post()
    assert response.status_code == 200
    statements = statements_of(captured)
    # The worst case reserved before the upstream call, settled in the row's transaction.
    ledger = 'UPDATE "routing_budgetledger"'
    assert statements[0].startswith(ledger) and statements[-1].startswith(ledger)
    recorded(statements[1:-1])


def test_plain_answers_reuse_one_keep_alive_connection_to_the_upstream(post, upstream):
    for _ in range(5):
        assert post().status_code == 200
    assert len({request["client"] for request in upstream.received}) == 1


def test_an_override_saved_in_django_applies_at_the_next_request(post):
    assert "X-Router-Pinch" not in post().headers
    ConfigOverride.objects.create(key="pinch.enabled", value=False)
    assert post().headers["X-Router-Pinch"] == "disabled"


def test_a_change_behind_djangos_back_applies_once_the_cache_expires(post, monkeypatch):
    ConfigOverride.objects.create(key="pinch.enabled", value=True)
    assert "X-Router-Pinch" not in post().headers
    monkeypatch.setattr(changes, "CACHE_SECONDS", 1.5)
    ConfigOverride.objects.update(value=False)  # a bulk update sends no signal
    assert "X-Router-Pinch" not in post().headers  # still the cached rows
    time.sleep(1.6)
    assert post().headers["X-Router-Pinch"] == "disabled"


def test_a_key_revoked_through_the_service_stops_at_the_next_request(post):
    assert post().status_code == 200
    revoke_api_keys(ApiKey.objects.all())
    assert post().status_code == 401


def test_a_key_revoked_behind_djangos_back_stops_within_the_key_cache_time(post, settings):
    settings.ROUTER_KEY_CACHE_SECONDS = 1.5
    assert post().status_code == 200
    ApiKey.objects.update(revoked_at="2026-01-01T00:00:00Z")  # no signal, no counter bump
    assert post().status_code == 200  # trusted for up to ROUTER_KEY_CACHE_SECONDS
    time.sleep(1.6)
    assert post().status_code == 401


@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/chat/completions", {"model": "echo-medium", "messages": HI}),
        ("/v1/messages", {"model": "echo-medium", "max_tokens": 50, "messages": HI}),
        ("/v1/messages/count_tokens", {"model": "echo-medium", "messages": HI}),
    ],
)
def test_a_request_reads_the_change_counter_once_for_its_key_and_its_config(
    db, router_config, api_key, monkeypatch, path, body
):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    read = changes._read
    reads = []
    monkeypatch.setattr(changes, "_read", lambda: reads.append(path) or read())

    for _ in range(2):  # the first fills the caches
        reads.clear()
        response = client.post(path, data=json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content

    assert len(reads) == 1


def test_an_unexpected_failure_answers_json_500_and_logs_the_traceback(post, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("boom in the pipeline")

    monkeypatch.setattr("routing.completion.plan_request", broken)
    with caplog.at_level(logging.ERROR, logger="routing.errors"):
        response = post()
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "internal_error"
    assert "boom" not in response.content.decode()  # the detail is in the log, not the answer
    assert any("boom in the pipeline" in r.exc_text for r in caplog.records if r.exc_text)
    assert RouteDecision.objects.count() == 0


def test_a_get_on_the_chat_endpoint_is_a_json_405(db, api_key):
    response = Client().get("/v1/chat/completions", HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_drain_that_died_after_its_commit_writes_nothing_twice(db, settings):
    spool.spool(decision_fields(id=900001))
    spool.spool(decision_fields())  # spooled without an id: one is given at drain time
    directory = spool.spool_dir()
    assert spool.pending()

    assert spool.drain() == 2
    assert RouteDecision.objects.count() == 2
    given = RouteDecision.objects.exclude(pk=900001).get().pk

    # What a drain that died right after committing would leave: its file,
    # renamed, with the ids it had given.
    (directory / "draining-1-1.jsonl").write_bytes(
        b"".join(spool.encode_row(decision_fields(id=row_id)) for row_id in (900001, given))
    )
    assert spool.drain() == 2
    assert sorted(RouteDecision.objects.values_list("pk", flat=True)) == sorted([900001, given])
    assert list(directory.glob("*.jsonl")) == []


# Real commits: foreign keys are checked when a transaction commits, not inside a test's own.
def test_a_key_deleted_while_its_stream_ran_still_leaves_the_row(transactional_db, post, upstream):
    response = post({"model": "slow-stream", "messages": HI, "stream": True})
    chunks = iter(response.streaming_content)
    assert next(chunks).startswith(b"data:")
    ApiKey.objects.all().delete()  # admin deletes the key mid-answer
    upstream.release.set()
    assert b"data: [DONE]" in b"".join(chunks)
    decision = RouteDecision.objects.get()
    assert (decision.status_code, decision.api_key) == (200, None)
    assert spool.pending() is False


def test_a_spooled_row_whose_key_was_deleted_since_is_written_without_it(transactional_db):
    spool.spool(decision_fields(id=900002, api_key_id=424242))  # a key deleted since
    spool.spool(decision_fields(id=900004))
    assert spool.drain() == 2
    assert sorted(RouteDecision.objects.values_list("pk", "api_key_id")) == [
        (900002, None),
        (900004, None),
    ]
    assert not spool.pending()


def test_a_line_cut_short_goes_aside_and_the_rest_is_written(db):
    spool.spool(decision_fields(id=900005))
    with open(spool.spool_dir() / spool.SPOOL_NAME, "ab") as handle:
        handle.write(b'{"id": 900006, "created_at": "2026-12-01T1')  # the machine stopped here
    assert spool.drain() == 1
    assert list(RouteDecision.objects.values_list("pk", flat=True)) == [900005]
    assert (spool.spool_dir() / spool.REJECTED_NAME).read_bytes().startswith(b'{"id": 900006')
    assert not spool.pending()
