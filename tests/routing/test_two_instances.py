"""Two router instances sharing one PostgreSQL and one Redis, as docs/deployment.md sets up.

The turns of one conversation alternate between the two: each instance must
see the turn the other served (the prefix probe stays continuous through
Redis), and the decision log must hold every request, from both. With no
Redis between them (one database only, SQLite or PostgreSQL), the
conversation still holds its model: the routing state is read back from the
conversation's row, as it is when a request lands on another gunicorn worker.
"""

import contextlib
import json
import uuid

import pytest
import redis
import requests

from tests.support.chat_turns import tool_call_round
from tests.support.config import base_config
from tests.support.redis import REDIS_URL, redis_url_or_skip
from tests.support.served import (
    gunicorn_router,
    migrated_scratch_database,
    prepare,
    router_env,
    two_routers,
)

TURNS = 8


@pytest.fixture
def shared_redis_url():
    return redis_url_or_skip()


@pytest.fixture
def two_instances(tmp_path, upstream, shared_redis_url):
    with two_routers(tmp_path, base_config(upstream.base_url), shared_redis_url) as pair:
        yield pair


def alternate_turns(first, second, model="echo-medium", opening="task"):
    """A conversation whose turns alternate between the instances; its rows, oldest first,
    after checking that they are every request, from both."""
    messages = [{"role": "user", "content": f"{opening} {uuid.uuid4().hex}"}]
    served_by = []
    for turn in range(TURNS):
        instance = (first, second)[turn % 2]
        response = requests.post(
            instance.url + "/v1/chat/completions",
            json={"model": model, "messages": messages},
            headers={"Authorization": f"Bearer {instance.key}"},
            timeout=20,
        )
        assert response.status_code == 200
        # Written before the other instance reads the conversation's row (an agent's next
        # request comes after its tool runs; the row is written behind the answer).
        instance.recorded()
        served_by.append(response.headers["X-Router-Decision-Id"])
        messages += [
            response.json()["choices"][0]["message"],
            {"role": "user", "content": f"next {turn}"},
        ]

    code = (
        "from routing.models import RouteDecision as R; import json; print(json.dumps(["
        "[r.pk, r.prefix_match, r.prefix_previous_length, r.prefix_current_length, "
        "r.prefix_fallback, r.status_code, r.predicted_cache_read_tokens, r.cache_read_tokens, "
        "r.cache_surprise] for r in R.objects.order_by('created_at')]))"
    )
    rows = json.loads(first.manage("shell", "-c", code).strip().splitlines()[-1])
    # Every request, from both, in order (by time: each worker reserves its ids in blocks).
    assert [str(r[0]) for r in rows] == served_by
    return rows


def one_continuous_probe(rows) -> bool:
    """Turn n repeats all of turn n-1's payload, whichever instance served it."""
    return [r[1:6] for r in rows] == [
        [0 if n == 0 else 2 * n - 1, 0 if n == 0 else 2 * n - 1, 2 * n + 1, False, 200]
        for n in range(TURNS)
    ]


def test_a_conversation_alternating_between_instances_keeps_one_prefix_probe(two_instances):
    assert one_continuous_probe(alternate_turns(*two_instances))


def test_a_keys_rate_limit_and_budget_hold_across_both_instances(two_instances):
    first, second = two_instances
    key_id = first.manage(
        "shell", "-c", "from routing.models import ApiKey as K; print(K.objects.get().pk)"
    )
    # A bucket an earlier run left in the shared Redis would be this key's too.
    redis.Redis.from_url(REDIS_URL).delete(f"router:limit:1:{key_id.strip()}")
    first.manage("updateapikey", "e2e", "--rpm", "4")  # every worker sees it at its next request
    body = {"model": "echo-medium", "messages": [{"role": "user", "content": "hi"}]}
    statuses = [(first, second)[n % 2].chat(body).status_code for n in range(6)]
    # Four a minute for the key, not four per instance (or per worker: two each).
    assert statuses == [200, 200, 200, 200, 429, 429]

    first.manage("updateapikey", "e2e", "--rpm", "none", "--budget-usd", "0")
    for instance in (first, second):
        refused = instance.chat(body)
        assert refused.status_code == 400  # final: routing.errors.AGENT_RETRIED_FINALS
        assert refused.json()["error"]["code"] == "insufficient_quota"


HARD_TASK = (
    "Refactor the session store's architecture to remove the race condition between the "
    "expiry sweep and concurrent writes; design the migration so it can be rolled back."
)


TOOLS = [{"type": "function", "function": {"name": "cat", "parameters": {"type": "object"}}}]


@pytest.fixture(params=["sqlite", "postgres"])
def two_instances_without_redis(request, tmp_path, upstream):
    with contextlib.ExitStack() as stack:
        # SQLite: the file router_env gives both; PostgreSQL: a scratch database.
        database = {}
        if request.param == "postgres":
            database["DATABASE_URL"] = stack.enter_context(migrated_scratch_database())
        config = base_config(upstream.base_url)
        cached = {"id": "cache-medium", "upstream_model": "cache-medium", "routable": False}
        config["models"].append({**config["models"][1], **cached})
        env = router_env(tmp_path, config, REDIS_URL="", **database)
        key = prepare(env)
        first = stack.enter_context(gunicorn_router(env, key))
        second = stack.enter_context(gunicorn_router(env, key))
        yield first, second


def test_a_conversation_alternating_between_instances_without_redis_holds_its_model(
    two_instances_without_redis,
):
    first, second = two_instances_without_redis
    messages = [{"role": "user", "content": f"say hi ({uuid.uuid4().hex})"}]
    routes = []

    def send(instance):
        response = instance.chat({"model": "auto", "messages": messages, "tools": TOOLS})
        assert response.status_code == 200
        instance.recorded()  # as in alternate_turns
        routes.append((response.headers["X-Router-Route"], response.json()["model"]))

    for turn in range(4):  # the agent's tool loop, each request on the other instance
        send((first, second)[turn % 2])
        messages += tool_call_round(turn, output=f"result {turn}")
    # The user asks for hard work, on the first instance; the loop goes on, on the second,
    # whose own memory still holds the conversation's easy task of four requests ago.
    messages.append({"role": "user", "content": HARD_TASK})
    send(first)
    messages += tool_call_round(4, output="result 4")
    send(second)

    assert routes == [
        ("start", "echo-small"),
        ("held", "echo-small"),
        ("held", "echo-small"),
        ("held", "echo-small"),
        ("upgraded", "echo-hard"),
        ("held", "echo-hard"),
    ]


def test_without_redis_the_prefix_probe_and_the_cache_forecast_follow_the_conversation(
    two_instances_without_redis,
):
    # A model whose upstream reports cache reads as OpenAI's automatic cache does, and a
    # conversation over the cacheable minimum: the forecast has something to be right about.
    rows = alternate_turns(*two_instances_without_redis, "cache-medium", "x" * 4000)
    assert one_continuous_probe(rows)
    # Each instance predicts the cache the other one warmed, as the provider bills it:
    # no request after the first is predicted cold (an unexpected "hit") or short of its reads.
    assert [r[6] > 0 for r in rows] == [False] + [True] * (TURNS - 1)
    assert [r[7] > 0 for r in rows] == [False] + [True] * (TURNS - 1)
    assert [r[8] for r in rows] == [""] * TURNS


def test_without_redis_a_keys_rate_limit_holds_across_the_hosts_workers_and_instances(
    two_instances_without_redis,
):
    first, second = two_instances_without_redis
    first.manage("updateapikey", "e2e", "--rpm", "4")
    body = {"model": "echo-medium", "messages": [{"role": "user", "content": "hi"}]}
    statuses = [(first, second)[n % 2].chat(body).status_code for n in range(6)]
    # Four a minute for the key, not four per worker (two instances of two workers each,
    # sharing the data folder: the buckets are its files).
    assert statuses == [200, 200, 200, 200, 429, 429]
