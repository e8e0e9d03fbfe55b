"""Rows carrying recall originals go behind the answer too (routing/recording/writer.py), and
nothing a recall needs is lost meanwhile: a worker gives back an original whose row still
waits for its own writer (routing/recall/store.py). Another worker or instance, right
after, is tests/routing/test_recall_two_instances.py."""

import json
import time

import pytest

from routing.models import RecallOriginal
from routing.recall import TOOL_NAME, store
from routing.recording import decisions, writer
from tests.routing.test_durability_write_behind import held  # noqa: F401 (a fixture)
from tests.support.recall import record
from tests.support.recall_scenario import (
    AGENT_TOOLS,
    log_cleared,
    model_like,
    recall_pinch,
    tool_answered,
    vault_task,
)
from tests.support.recall_upstream import NOTE, VAULT_LINE
from tests.support.router import openai_client

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPTED = "recallscript-model"


@pytest.fixture
def recall_config(router_config, write_config):
    data = recall_pinch(router_config)
    data["models"] += [model_like(data, "echo-medium", SCRIPTED)]
    write_config(data)
    return data


def test_a_result_whose_row_still_waits_for_the_writer_is_recalled_in_the_same_worker(
    live_server,
    api_key,
    recall_config,
    upstream,
    held,  # noqa: F811
):
    held.start()  # the writer takes the rows and holds them, unwritten
    sdk = openai_client(live_server, api_key)
    messages = vault_task()
    # After two results the scripted model asks for the agent's tool; after three it
    # recalls the handle the first request's payload named.
    upstream.script = [{"call": "read_log", "arguments": {"path": "README.md"}}] * 3
    first = sdk.chat.completions.create(model=SCRIPTED, messages=messages, tools=AGENT_TOOLS)
    asked = first.choices[0].message
    [handle] = NOTE.findall(upstream.bodies()[0]["messages"][2]["content"])
    upstream.script.append({"call": TOOL_NAME, "arguments": {"id": handle, "pattern": "VAULT"}})

    # The client clears the result: the next request carries no original, and its first
    # request's row has not been written.
    messages = tool_answered(log_cleared(messages), asked)
    upstream.received.clear()
    answer = sdk.chat.completions.create(model=SCRIPTED, messages=messages, tools=AGENT_TOOLS)

    assert RecallOriginal.objects.count() == 0, "the first row is still queued"
    assert VAULT_LINE in answer.choices[0].message.content
    recalling, continued = upstream.bodies()
    assert VAULT_LINE not in json.dumps(recalling)
    assert VAULT_LINE in continued["messages"][-1]["content"]

    # Once written, the store answers: nothing was lost between the two.
    held.release.set()
    decisions.write_batch(held.taken)
    conversation = held.taken[0].fields["conversation"]
    recall = store.lookup(conversation, handle, {})
    assert recall.status == store.KEPT and VAULT_LINE in recall.text
    assert RecallOriginal.objects.filter(handle=handle).exists()


CONVERSATION = "c" * 32


@pytest.fixture
def served_worker():
    """This process as a served worker: rows are written behind answers, here or elsewhere."""
    decisions.write_behind()
    yield
    writer.stop()
    store.rows_written_behind(0.0)


def test_a_miss_reads_the_store_again_until_a_row_queued_elsewhere_is_written(
    monkeypatch, served_worker
):

    def another_worker_writes(seconds):
        # Meanwhile, another worker's writer commits the row queued before the recall.
        record(CONVERSATION, {"r3": "written by the other worker"})

    monkeypatch.setattr(store.time, "sleep", another_worker_writes)
    recall = store.lookup(CONVERSATION, "r3", {}, asked_at=time.monotonic())
    assert (recall.status, recall.text) == (store.KEPT, "written by the other worker")


def test_a_miss_after_every_earlier_row_was_written_is_answered_at_once(
    django_assert_num_queries, served_worker
):
    long_ago = time.monotonic() - writer.WRITTEN_WITHIN_SECONDS
    with django_assert_num_queries(1):
        recall = store.lookup(CONVERSATION, "r3", {}, asked_at=long_ago)
    assert recall.status == store.UNKNOWN
