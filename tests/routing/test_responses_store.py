"""Stored responses under hostile use: ids, tenants, chains, pages, a database that refuses.

Through the official openai SDK against the live router, as test_responses_api.
"""

import concurrent.futures
import json

import openai
import pytest
from django.db import OperationalError

from routing.auth import create_api_key
from routing.models import RouteDecision, StoredResponse
from routing.recording import spool, stored

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def config_data(responses_config_data):
    return responses_config_data


def client(live_server, key):
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=key, max_retries=0, timeout=20)


@pytest.fixture
def sdk(live_server, config_data, api_key):
    return client(live_server, api_key)


def test_an_upstream_reusing_its_ids_cannot_overwrite_another_keys_response(
    live_server, config_data, api_key
):
    a = client(live_server, api_key)
    b = client(live_server, create_api_key("tenant b")[1])

    first = a.responses.create(model="native-sameid", input="mine")
    second = b.responses.create(model="native-sameid", input="theirs")

    assert first.id != second.id and "resp_reused" not in (first.id, second.id)
    assert a.responses.retrieve(first.id).id == first.id
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(first.id)


def test_each_turn_stores_its_own_items_once(sdk):
    big = "x" * 100_000
    first = sdk.responses.create(model="echo-medium", input=big)
    turn = first
    for step in range(5):
        turn = sdk.responses.create(
            model="echo-medium", previous_response_id=turn.id, input=f"step {step}"
        )

    sizes = [len(json.dumps(row.input_items)) for row in StoredResponse.objects.all()]
    assert sum(sizes) < 2 * len(big)  # the big input once, not once a turn
    every = list(sdk.responses.input_items.list(turn.id, order="asc", limit=100))
    assert every[0].content[0].text == big
    assert [item.role for item in every][-1] == "user"
    assert len(every) == 11  # 6 inputs and 5 answers before the last input


def test_a_conversation_past_max_chain_bytes_is_not_continued(sdk, config_data, write_config):
    write_config({**config_data, "responses": {"max_chain_bytes": 1000}})
    first = sdk.responses.create(model="echo-medium", input="y" * 2000)

    with pytest.raises(openai.BadRequestError) as raised:
        sdk.responses.create(model="echo-medium", previous_response_id=first.id, input="more")
    assert raised.value.body["code"] == "conversation_too_long"


def test_input_items_pages_end_when_items_share_an_id(sdk):
    same = [
        {"type": "message", "role": "user", "content": "a", "id": "msg_same"},
        {"type": "message", "role": "user", "content": "b", "id": "msg_same"},
        {"type": "message", "role": "user", "content": "c", "id": "msg_same"},
    ]
    response = sdk.responses.create(model="echo-medium", input=same)

    texts = []
    for pages, item in enumerate(sdk.responses.input_items.list(response.id, order="asc", limit=1)):
        texts.append(item.content[0].text)
        assert pages < 10  # on main the cursor came back to the first item for ever
    assert texts == ["a", "b", "c"]


def test_a_stored_response_and_its_decision_are_spooled_and_drained_together(sdk, monkeypatch):
    real_write = stored._write_one

    def refuse(kept, created_at):
        raise OperationalError("database is locked")

    monkeypatch.setattr(stored, "_write_one", refuse)
    response = sdk.responses.create(model="echo-medium", input="keep me")
    assert response.output_text
    # One transaction: the row did not go in without its stored response.
    assert RouteDecision.objects.count() == 0
    assert StoredResponse.objects.count() == 0

    monkeypatch.setattr(stored, "_write_one", real_write)
    assert spool.drain() == 1
    assert RouteDecision.objects.get().status_code == 200
    assert StoredResponse.objects.get().response_id == response.id
    assert sdk.responses.retrieve(response.id).id == response.id


def test_nul_in_the_input_is_stored_not_refused(sdk):
    response = sdk.responses.create(model="echo-medium", input="before\u0000after")
    assert sdk.responses.retrieve(response.id).id == response.id


def test_parallel_continuations_of_one_chain_hold_at_most_the_workers_bound(
    sdk, config_data, write_config, monkeypatch
):
    from routing.protocols.responses.store import chain_gate

    first = sdk.responses.create(model="echo-medium", input="z" * 30_000)
    second = sdk.responses.create(model="echo-medium", previous_response_id=first.id, input="more")
    chain = StoredResponse.objects.get(response_id=second.id).chain_bytes
    # Room for two such chains at once in the worker, not eight.
    write_config({**config_data, "responses": {"max_chain_bytes_in_flight": 2 * chain}})
    most = {"held": 0}
    real_hold = chain_gate.hold

    def hold(nbytes, limit):
        real_hold(nbytes, limit)
        most["held"] = max(most["held"], chain_gate.held)

    monkeypatch.setattr(chain_gate, "hold", hold)

    def go_on(_):
        return sdk.responses.create(
            model="echo-medium", previous_response_id=second.id, input="go on"
        ).output_text

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(go_on, range(8)))
    assert all(answers)
    assert chain <= most["held"] <= 2 * chain
    assert chain_gate.held == 0  # every request gave its chain back when it ended


def test_a_continuation_that_waits_too_long_for_memory_is_told_to_retry(
    sdk, config_data, write_config, monkeypatch
):
    from routing.protocols.responses.store import chain_gate

    first = sdk.responses.create(model="echo-medium", input="w" * 10_000)
    write_config({**config_data, "responses": {"max_chain_bytes_in_flight": 1000}})
    monkeypatch.setattr(chain_gate, "WAIT_SECONDS", 0.2)
    chain_gate.hold(1000, 1000)  # another request holds the whole bound
    try:
        with pytest.raises(openai.InternalServerError) as refused:
            sdk.responses.create(model="echo-medium", previous_response_id=first.id, input="x")
    finally:
        chain_gate.release()
    assert refused.value.status_code == 503
    assert refused.value.body["code"] == "server_busy"
    assert refused.value.response.headers["retry-after"] == "5"
    assert chain_gate.held == 0
