"""A hard budget holds: a $5 budget at $1 a request answers five, however the requests come.

Issue 43 measured the spend checked against a cached sum: $93 from one
client in sequence, $585 from 16 threads, $227 across two instances. Each
request now reserves its worst case before its upstream call and settles
what it cost with its row (routing/limits/ledger.py). The model here costs
exactly $1 a request (7 completion tokens, as the test upstream reports, at
$1/7 each; the prompt free) and the requests ask for 7 tokens at most, so
the worst case is the cost and the budget must be spent to the cent.
"""

import concurrent.futures

import openai
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from routing.auth import create_api_key
from routing.limits.budgets import spend_by_key
from routing.models import BudgetLedger, RouteDecision
from routing.recording import spool
from tests.support.config import base_config
from tests.support.redis import redis_url_or_skip
from tests.support.served import two_routers

pytestmark = pytest.mark.django_db(transaction=True)

DOLLAR = {
    "id": "echo-dollar",
    "provider": "up",
    "tier": "medium",
    "context_window": 32768,
    "prompt_price": 0.0,
    "completion_price": 1_000_000 / 7,
}
BODY = {
    "model": "echo-dollar",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 7,
}


def dollar_config(upstream_url: str) -> dict:
    config = base_config(upstream_url)
    config["models"].append(DOLLAR)
    return config


@pytest.fixture
def dollar_router(upstream, write_config, monkeypatch, router_config):
    write_config(dollar_config(upstream.base_url))


def sdk(live_server, raw):
    return openai.OpenAI(base_url=live_server.url + "/v1", api_key=raw, max_retries=0, timeout=20)


def ask(client) -> int:
    try:
        client.chat.completions.create(**BODY)
    except openai.BadRequestError as error:
        # Final: a spent budget does not come back soon, so it is no 429 an agent retries
        # (routing.errors.AGENT_RETRIED_FINALS); its code says what it is.
        assert error.body["code"] == "insufficient_quota"
        return 400
    return 200


def spent(key) -> float:
    from routing.config.store import current_config

    return spend_by_key([key], current_config())[key.pk].spent_usd


def test_one_client_in_sequence_spends_its_budget_and_no_more(live_server, dollar_router):
    key, raw = create_api_key("team-a", limits={"budget_usd": 5.0})
    client = sdk(live_server, raw)
    assert [ask(client) for _ in range(8)] == [200] * 5 + [400] * 3
    assert spent(key) == pytest.approx(5.0)
    assert RouteDecision.objects.count() == 5


def test_sixteen_threads_at_once_spend_the_budget_and_no_more(live_server, dollar_router):
    key, raw = create_api_key("team-a", limits={"budget_usd": 5.0})
    client = sdk(live_server, raw)
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: ask(client), range(48)))
    assert statuses.count(200) == 5
    assert spent(key) == pytest.approx(5.0)
    ledger = BudgetLedger.objects.get()
    assert ledger.settled_usd == pytest.approx(5.0)
    assert ledger.reserved_usd == pytest.approx(0.0, abs=1e-9)


def test_a_request_whose_worst_case_does_not_fit_is_refused_before_any_upstream_call(
    live_server, dollar_router, upstream
):
    key, raw = create_api_key("team-a", limits={"budget_usd": 5.0})
    client = sdk(live_server, raw)
    # 70 tokens at most: $10 on this model, though the answer would cost $1.
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(**{**BODY, "max_tokens": 70})
    assert "has $5.00 left of its monthly budget of $5.00" in caught.value.message
    assert "this request may cost up to $10.00" in caught.value.message
    assert upstream.received == []
    assert RouteDecision.objects.count() == 0
    assert BudgetLedger.objects.get().reserved_usd == pytest.approx(0.0, abs=1e-9)
    assert ask(client) == 200  # a request that fits still passes


def test_a_spooled_rows_reservation_is_settled_when_the_spool_drains(
    live_server, dollar_router, monkeypatch
):
    key, raw = create_api_key("team-a", limits={"budget_usd": 5.0})
    client = sdk(live_server, raw)

    def refused(*args, **kwargs):
        from django.db import OperationalError

        raise OperationalError("database is locked")

    from routing.recording import decisions

    with monkeypatch.context() as patched:
        patched.setattr(decisions, "insert_decisions", refused)
        assert [ask(client) for _ in range(6)] == [200] * 5 + [400]
    # Five rows wait in the spool, their worst cases still held: the sixth did not fit.
    assert RouteDecision.objects.count() == 0
    assert BudgetLedger.objects.get().reserved_usd == pytest.approx(5.0)
    with CaptureQueriesContext(connection) as captured:
        assert spool.drain(raise_errors=True) == 5
    ledger = BudgetLedger.objects.get()
    assert ledger.settled_usd == pytest.approx(5.0)
    assert ledger.reserved_usd == pytest.approx(0.0, abs=1e-9)
    # The five rows drained together settle their key's ledger in one statement.
    table = BudgetLedger._meta.db_table
    assert len([q for q in captured.captured_queries if f'UPDATE "{table}"' in q["sql"]]) == 1
    assert ask(client) == 400


@pytest.fixture
def two_instances(tmp_path, upstream):
    with two_routers(tmp_path, dollar_config(upstream.base_url), redis_url_or_skip()) as pair:
        yield pair


def test_sixteen_threads_over_two_instances_spend_the_budget_and_no_more(two_instances):
    first, second = two_instances
    first.manage("updateapikey", "e2e", "--budget-usd", "5")

    def send(n):
        return (first, second)[n % 2].chat(BODY).status_code

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(send, range(64)))
    assert statuses.count(200) == 5
    assert set(statuses) == {200, 400}
    code = (
        "from routing.models import KeySpend as S; from django.db.models import Sum; "
        "print(S.objects.aggregate(n=Sum('completion_tokens'))['n'])"
    )
    first.recorded()  # both instances serve from one data folder
    completion_tokens = int(first.manage("shell", "-c", code).strip().splitlines()[-1])
    assert completion_tokens * DOLLAR["completion_price"] / 1_000_000 == pytest.approx(5.0)
    assert first.count_rows() == 5
