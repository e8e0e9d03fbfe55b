"""A request over its key's rpm is refused before it is planned: it costs no classify or pinch.

The order is held by counting the planner's calls over real HTTP (timing is
the benchmarks' business): a key at rpm 1 sends two large requests; the
second is refused 429 and the planner ran once.
"""

import pytest
import requests

from routing import completion
from routing.auth import create_api_key
from routing.models import RouteDecision

pytestmark = pytest.mark.django_db(transaction=True)

LARGE = [{"role": "user", "content": "go"}] + [
    {"role": "user", "content": f"file {i}: " + "words " * 1000} for i in range(20)
]


def test_a_request_over_rpm_is_refused_before_any_planning(
    live_server, router_config, upstream, monkeypatch
):
    planned = []
    plan_request = completion.plan_request

    def counted(*args, **kwargs):
        planned.append(1)
        return plan_request(*args, **kwargs)

    monkeypatch.setattr(completion, "plan_request", counted)
    _, raw = create_api_key("one-a-minute", limits={"rpm_limit": 1})

    answers = [
        requests.post(
            live_server.url + "/v1/chat/completions",
            json={"model": "auto", "messages": LARGE},
            headers={"Authorization": f"Bearer {raw}"},
            timeout=30,
        )
        for _ in range(2)
    ]

    assert [a.status_code for a in answers] == [200, 429], answers[0].text[:300]
    assert answers[1].json()["error"]["code"] == "rate_limit_exceeded"
    assert len(planned) == 1
    assert len(upstream.received) == 1
    assert RouteDecision.objects.count() == 1


def test_a_request_refused_on_tpm_after_planning_leaves_the_rpm_bucket_one_spent(
    live_server, router_config, upstream
):
    _, raw = create_api_key("small", limits={"rpm_limit": 2, "tpm_limit": 100})
    post = lambda messages: requests.post(  # noqa: E731
        live_server.url + "/v1/chat/completions",
        json={"model": "echo-medium", "messages": messages},
        headers={"Authorization": f"Bearer {raw}"},
        timeout=30,
    )

    # Too large for tpm, refused after planning: final (no wait lifts it), so a 400 on chat.
    assert post(LARGE).status_code == 400
    assert post([{"role": "user", "content": "hi"}]).status_code == 200
    third = post([{"role": "user", "content": "hi"}])

    assert third.status_code == 429 and "requests per minute" in third.text
