"""The recall store across a real session and across instances: every original a payload
names is stored by the request that first named it (each written at most twice, however
long the session), and a router instance that did not serve the conversation gives it back."""

import contextlib
import json
import re

import pytest

from routing.config import PinchConfig
from routing.prefix_probe import PrefixProbe
from routing.pruning import LedgerSlot, pinch_messages
from tests.routing.test_payback_pipeline import session_requests
from tests.support.config import base_config
from tests.support.served import (
    gunicorn_router,
    migrated_scratch_database,
    prepare,
    router_env,
)

NAMED = re.compile(r"\[recall (r\d+)\]")


@pytest.mark.parametrize("name", ["013.json", "025.json", "102.json"])
def test_each_request_hands_the_store_only_what_it_newly_trimmed(corpus_dir, name):
    config = PinchConfig(budget_tokens=8000)
    slot = LedgerSlot(PrefixProbe(), "conversation")
    stored: dict[str, str] = {}
    writes: dict[str, int] = {}
    trimmed = 0
    for messages in session_requests(corpus_dir, name):
        _, outcome = pinch_messages(messages, config, 0, slot=slot)
        for handle, text in outcome.to_store.items():
            stored[handle] = text
            writes[handle] = writes.get(handle, 0) + 1
        # Nothing the payload names is missing from the store once its request is written.
        assert outcome.recallable.items() <= stored.items()
        trimmed += len(outcome.recallable)
    assert stored, "the session should be long enough for pinch to trim"
    # Capped when it arrives, compressed at a later step: twice at most, not once a request.
    assert max(writes.values()) <= 2
    assert sum(writes.values()) < trimmed


def agent_turns(tool_outputs: list[str]) -> list[dict]:
    messages = [{"role": "user", "content": "inspect the repository"}]
    for k, output in enumerate(tool_outputs):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": output},
        ]
    return messages


@pytest.fixture(params=["sqlite", "postgres"])
def two_instances(request, tmp_path, upstream):
    with contextlib.ExitStack() as stack:
        database = {}
        if request.param == "postgres":
            database["DATABASE_URL"] = stack.enter_context(migrated_scratch_database())
        config = base_config(upstream.base_url)
        config["pinch"].update(
            budget_tokens=3000,
            keep_last_tool_results=2,
            keep_last_turns=1,
            recall={"enabled": True},
        )
        env = router_env(tmp_path, config, REDIS_URL="", **database)
        key = prepare(env)
        first = stack.enter_context(gunicorn_router(env, key))
        second = stack.enter_context(gunicorn_router(env, key))
        yield first, second


LOOKUP = (
    "import json, sys; from routing.models import RouteDecision as R; "
    "from routing.recall.store import lookup; "
    "c = R.objects.latest('id').conversation; "
    "print(json.dumps({{h: [r.status, r.text] for h in {handles!r} "
    "for r in [lookup(c, h, {{}})]}}))"
)


def test_an_instance_that_did_not_serve_the_conversation_gives_its_originals_back(
    two_instances, upstream
):
    first, second = two_instances
    outputs = [f"file {k}\n" + f"line {k} of a long listing\n" * 400 for k in range(6)]
    # Every turn of the conversation goes to the first instance only.
    for turns in range(1, len(outputs) + 1):
        messages = agent_turns(outputs[:turns])
        response = first.chat({"model": "echo-medium", "messages": messages})
        assert response.status_code == 200
    sent = upstream.bodies()[-1]["messages"]
    handles = [h for m in sent if m["role"] == "tool" for h in NAMED.findall(m["content"])]
    assert handles, "pinch should have trimmed the older listings"
    # Another process of the other instance, with nothing of this request in memory.
    first.recorded()
    answer = second.manage("shell", "-c", LOOKUP.format(handles=handles))
    found = json.loads(answer.strip().splitlines()[-1])
    messages = agent_turns(outputs)
    assert found == {h: ["kept", messages[int(h[1:])]["content"]] for h in handles}
