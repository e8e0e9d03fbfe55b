"""Two router instances sharing a database (PostgreSQL in its pass, one SQLite file
otherwise) recall each other's results, end to end: a conversation's request through one
gunicorn router is pruned (its originals stored, behind the answer), its next request goes
at once to the other, whose upstream recalls the handle the first one wrote, and the
client (the official openai SDK) gets one clean answer with the line only the original
held."""

import json

import openai
import pytest

from routing.recall import TOOL_NAME
from tests.routing.test_durability import postgres_url
from tests.support.config import base_config
from tests.support.recall_scenario import (
    AGENT_TOOLS,
    log_cleared,
    model_like,
    recall_pinch,
    tool_answered,
    vault_task,
)
from tests.support.recall_upstream import NOTE, VAULT_LINE
from tests.support.served import gunicorn_router, prepare, router_env, two_routers

pytestmark = pytest.mark.database_url

MODEL = "recall-model"


@pytest.fixture
def instances(tmp_path, upstream):
    config = recall_pinch(base_config(upstream.base_url))
    config["models"] += [model_like(config, "echo-medium", m) for m in (MODEL, SCRIPTED)]
    # No Redis: what one instance leaves for the other is in the database alone.
    if postgres_url():
        with two_routers(tmp_path, config, redis_url="") as pair:
            yield pair
        return
    env = router_env(tmp_path, config, REDIS_URL="")
    key = prepare(env)
    with gunicorn_router(env, key) as first, gunicorn_router(env, key) as second:
        yield first, second


def _sdk(instance) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=instance.url + "/v1", api_key=instance.key, max_retries=0, timeout=30
    )


def _decision(instance, decision_id: str) -> dict:
    code = (
        "import json; from routing.models import RouteDecision as R; "
        f"r = R.objects.get(pk={int(decision_id)}); "
        "print(json.dumps([r.conversation, r.recalls, r.recalled_tokens, r.status_code, "
        "r.pinch_original_tokens > r.pinch_final_tokens]))"
    )
    instance.recorded()
    conversation, recalls, tokens, status, pruned = json.loads(
        instance.manage("shell", "-c", code).strip().splitlines()[-1]
    )
    return {
        "conversation": conversation,
        "recalls": recalls,
        "recalled_tokens": tokens,
        "status": status,
        "pruned": pruned,
    }


def test_a_result_one_instance_trimmed_is_recalled_through_the_other(instances, upstream):
    first, second = instances
    # On the first instance the user speaks: pinch trims the old log, the model asks for a tool.
    messages = vault_task()
    raw = _sdk(first).chat.completions.with_raw_response.create(
        model=MODEL, messages=messages, tools=AGENT_TOOLS
    )
    asked = raw.parse().choices[0].message
    on_first = _decision(first, raw.headers["X-Router-Decision-Id"])
    assert on_first["pruned"] and on_first["recalls"] == 0
    [sent_by_first] = upstream.bodies()
    log = sent_by_first["messages"][2]["content"]
    assert VAULT_LINE not in log, "the first instance trimmed the vault line away"
    [handle] = NOTE.findall(log)

    # The agent runs the tool it was asked for and sends the result to the second instance.
    messages = tool_answered(messages, asked)
    raw = _sdk(second).chat.completions.with_raw_response.create(
        model=MODEL, messages=messages, tools=AGENT_TOOLS
    )
    answer = raw.parse()

    choice = answer.choices[0]
    assert VAULT_LINE in choice.message.content
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"
    assert TOOL_NAME not in answer.model_dump_json()
    _, recalling, continued = upstream.bodies()
    [recall] = continued["messages"][-2]["tool_calls"]
    assert recall["function"]["name"] == TOOL_NAME
    assert json.loads(recall["function"]["arguments"])["id"] == handle
    assert VAULT_LINE in continued["messages"][-1]["content"]
    on_second = _decision(second, raw.headers["X-Router-Decision-Id"])
    assert on_second["conversation"] == on_first["conversation"]
    assert on_second["recalls"] == 1 and on_second["recalled_tokens"] > 0
    assert on_second["status"] == 200


SCRIPTED = "recallscript-model"


def test_a_result_the_client_cleared_since_is_recalled_from_what_the_other_instance_stored(
    instances, upstream
):
    first, second = instances
    messages = vault_task()
    # The scripted model: after two results it asks for the agent's tool; after three it
    # recalls the handle the first instance's payload named (it kept it in mind).
    upstream.script = [{"call": "read_log", "arguments": {"path": "README.md"}}] * 3
    raw = _sdk(first).chat.completions.with_raw_response.create(
        model=SCRIPTED, messages=messages, tools=AGENT_TOOLS
    )
    asked = raw.parse().choices[0].message
    [handle] = NOTE.findall(upstream.bodies()[0]["messages"][2]["content"])
    upstream.script.append({"call": TOOL_NAME, "arguments": {"id": handle, "pattern": "VAULT"}})

    # The client clears the old result it holds (its own context management): the second
    # instance's request, sent at once, no longer carries the original; only the store has
    # it, or will once the first instance's writer has written its row.
    messages = tool_answered(log_cleared(messages), asked)
    upstream.received.clear()
    raw = _sdk(second).chat.completions.with_raw_response.create(
        model=SCRIPTED, messages=messages, tools=AGENT_TOOLS
    )

    assert VAULT_LINE in raw.parse().choices[0].message.content
    recalling, continued = upstream.bodies()
    assert VAULT_LINE not in json.dumps(recalling), "the second request does not carry it"
    assert VAULT_LINE in continued["messages"][-1]["content"]
    assert _decision(second, raw.headers["X-Router-Decision-Id"])["recalls"] == 1
