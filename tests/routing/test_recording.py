"""Every answered request recorded exactly once: one drainer, values that fit, nothing lost quietly.

In-process, against the test database: the spool's files are real, the
concurrency is another open file holding the drain's lock (as another worker
process would), and a database or disk that refuses is made to.
"""

import fcntl
import json
import os

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test import Client
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from routing.models import Conversation, RouteDecision, StoredResponse
from routing.recording import decisions, health, room, spool, values
from tests.support.decisions import spooled_fields

HI = [{"role": "user", "content": "hi"}]


def spool_lines() -> list[dict]:
    path = spool.spool_dir() / spool.REJECTED_NAME
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_drain_leaves_the_spool_to_another_process_draining_it(db):
    spool.spool(spooled_fields())  # no id: two drainers would each give it one
    directory = spool.spool_dir()
    other = os.open(directory / spool.DRAIN_LOCK_NAME, os.O_RDWR | os.O_CREAT)
    fcntl.flock(other, fcntl.LOCK_EX)  # another worker is draining
    try:
        assert spool.drain() == 0
        assert RouteDecision.objects.count() == 0
    finally:
        os.close(other)
    assert spool.drain() == 1
    assert spool.drain() == 0
    assert RouteDecision.objects.count() == 1


def test_values_no_column_can_hold_are_fitted_and_every_row_drains(db):
    spool.spool(spooled_fields(id=900101))
    spool.spool(
        spooled_fields(
            id=900102,
            requested_model="claude-" + "x" * 300 + "\x00",
            prompt_tokens=10**20,
            completion_tokens="12",
            cached_tokens={"n": 1},
            upstream_latency_ms=float("inf"),
            error="nul\x00inside",
            attempts=[{"reason": "nul \x00 in a reason"}],
        )
    )
    spool.spool(spooled_fields(id=900103))

    assert spool.drain() == 3

    row = RouteDecision.objects.get(pk=900102)
    assert row.requested_model == ("claude-" + "x" * 300)[:200]
    assert (row.prompt_tokens, row.completion_tokens, row.cached_tokens) == (None, None, None)
    assert row.upstream_latency_ms is None
    assert row.error == "nulinside"
    assert RouteDecision.objects.count() == 3


def test_a_row_the_database_refuses_goes_aside_with_its_reason_and_the_rest_drain_on(db):
    spool.spool(spooled_fields(id=900201))
    with open(spool.spool_dir() / spool.SPOOL_NAME, "ab") as handle:
        # A line of a newer router, with a column this one does not have.
        handle.write(spool.encode_row(spooled_fields(id=900202, future_column=1)))
    spool.spool(spooled_fields(id=900203))

    call_command("drain_spool")  # no traceback

    assert sorted(RouteDecision.objects.values_list("pk", flat=True)) == [900201, 900203]
    (rejected,) = spool_lines()
    assert rejected["id"] == 900202
    assert "future_column" in rejected[spool.REASON_KEY]
    assert not spool.pending()


def test_rows_spooled_for_another_database_are_not_written_to_this_one(db):
    spool.spool(spooled_fields(id=900301))
    with open(spool.spool_dir() / spool.SPOOL_NAME, "ab") as handle:
        line = spool.encode_row(
            {**spooled_fields(id=900302), spool.DATABASE_KEY: "postgresql:db:5432:other"}
        )
        handle.write(line)

    assert spool.drain() == 2

    assert list(RouteDecision.objects.values_list("pk", flat=True)) == [900301]
    (rejected,) = spool_lines()
    assert rejected["id"] == 900302
    assert "postgresql:db:5432:other" in rejected[spool.REASON_KEY]


def test_each_spooled_line_names_its_database_without_credentials(db, settings):
    spool.spool(spooled_fields(id=900401))
    line = json.loads((spool.spool_dir() / spool.SPOOL_NAME).read_text().strip())
    named = line[spool.DATABASE_KEY]
    assert named == spool.database_identity()
    assert named.startswith(connection.vendor + ":")
    assert named.endswith(str(connection.settings_dict["NAME"]))
    password = connection.settings_dict.get("PASSWORD")
    assert not password or password not in named


@pytest.fixture
def nowhere_to_record(monkeypatch):
    """The database refuses every write and the spool's disk is full."""

    def refuse(*args, **kwargs):
        raise OperationalError("database is locked")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(decisions, "_write", refuse)
    monkeypatch.setattr(spool, "spool", disk_full)
    monkeypatch.setattr(room, "keep", disk_full)
    monkeypatch.setattr(health, "_spool_writable", lambda: False)
    monkeypatch.setattr(health, "PROBE_SECONDS", 0.0)
    yield
    health.row_kept()


def chat(api_key):
    return Client().post(
        "/v1/chat/completions",
        {"model": "echo-medium", "messages": HI},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_key}",
    )


def test_once_a_row_is_lost_requests_are_refused_before_any_upstream_call(
    db, router_config, api_key, upstream, nowhere_to_record
):
    assert chat(api_key).status_code == 200  # its row is the one lost
    calls = len(upstream.received)

    refused = chat(api_key)

    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "recording_unavailable"
    assert len(upstream.received) == calls
    metrics = Client().get("/metrics", HTTP_ACCEPT="text/plain").content.decode()
    assert "router_recording_available 0.0" in metrics


def test_the_operator_may_choose_to_serve_unrecorded(
    db, router_config, write_config, api_key, upstream, nowhere_to_record
):
    router_config["routing"] = {"serve_unrecorded": True}
    write_config(router_config)
    assert chat(api_key).status_code == 200
    assert chat(api_key).status_code == 200


def test_requests_are_served_again_once_the_spool_can_take_a_row(
    db, router_config, api_key, upstream, nowhere_to_record, monkeypatch
):
    chat(api_key)
    assert chat(api_key).status_code == 503
    monkeypatch.setattr(health, "_spool_writable", lambda: True)  # room on the disk again
    assert chat(api_key).status_code == 200


def test_an_answer_not_seen_stays_unknown_on_its_row_and_its_conversation(db):
    spool.spool(spooled_fields(id=900501, conversation="c1", answer_tool_calls=None))
    spool.spool(spooled_fields(id=900502, conversation="c2", answer_tool_calls=False))
    spool.drain()
    rows = dict(RouteDecision.objects.values_list("pk", "answer_tool_calls"))
    assert rows == {900501: None, 900502: False}
    held = dict(Conversation.objects.values_list("key", "last_answer_tool_calls"))
    assert held == {"c1": None, "c2": False}


def test_stored_responses_an_older_router_spooled_apart_are_written_once(db):
    # Routers before 1f03d18 spooled a stored response on its own line, in its own file.
    def line(response_id, previous="", root=""):
        return json.dumps(
            {
                "response_id": response_id,
                "api_key_id": None,
                "created_at": "2026-12-06T10:00:00+00:00",
                "expires_at": "2099-01-01T00:00:00+00:00",
                "input_items": [{"role": "user", "content": "hi"}],
                "response": {"id": response_id, "output": []},
                "previous_response_id": previous,
                "chain_root": root,
                "chain_bytes": 10,
            }
        ).encode()

    directory = spool.spool_dir()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "responses-draining.jsonl").write_bytes(line("resp_a") + b"\n")
    older = [line("resp_a"), line("resp_b", "resp_a", "resp_a"), b"{cut short"]
    (directory / "responses.jsonl").write_bytes(b"\n".join(older) + b"\n")

    spool.drain(raise_errors=True)
    spool.drain(raise_errors=True)

    kept = dict(StoredResponse.objects.values_list("response_id", "chain_root"))
    assert kept == {"resp_a": "", "resp_b": "resp_a"}
    assert not any(directory.glob("responses*.jsonl"))


row_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.sampled_from("ab\x00 é"), max_size=260),
    st.lists(st.text(max_size=3), max_size=2),
)


@hypothesis_settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(values._FITTERS)), row_values))
@example({"attempts": float("nan")})  # found by CI: a NaN is kept as the fitter keeps it
def test_a_row_is_fitted_value_by_value_as_each_column_fits_it(row):
    # fit skips the call for values that fit as they are: whatever it skips, it keeps what
    # the column's own fitter makes of the value.
    each = {
        name: fitter(value, field)
        for name, value in row.items()
        for fitter, field in [values._FITTERS[name]]
    }

    fitted = values.fit(row)

    assert fitted.keys() == each.keys()
    for name, value in fitted.items():
        # repr too: a NaN is not == to itself, though both sides keep it alike.
        same = value == each[name] or repr(value) == repr(each[name])
        assert same and type(value) is type(each[name]), name
