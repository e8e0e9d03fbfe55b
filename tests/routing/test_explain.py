"""The explain headers and the dry run, where test_pinch_pipeline.py leaves them unchecked.

Covered there: the headers of a plain answer and a dry run of a pruned request.
Here: pinch switched off, streamed answers, and that the dry run and
``pinch_replay`` report the same pinch figures for the same request, since both
claim to show what the router does.
"""

import json

import openai
import pytest
import requests

from routing.config.store import current_config
from routing.models import RouteDecision
from routing.replay.corpus import Session
from routing.replay.sessions import replay

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live_server, api_key):
    return openai.OpenAI(
        base_url=live_server.url + "/v1", api_key=api_key, max_retries=0, timeout=30
    )


def test_with_pinch_off_one_header_says_so_and_no_pinch_figures_are_sent(
    sdk, router_config, write_config
):
    router_config["pinch"]["enabled"] = False
    write_config(router_config)

    reply = sdk.chat.completions.with_raw_response.create(
        model="echo-medium", messages=[{"role": "user", "content": "hi"}]
    )

    assert reply.headers["X-Router-Pinch"] == "disabled"
    assert "X-Router-Pinch-Original-Tokens" not in reply.headers
    assert "X-Router-Pinch-Final-Tokens" not in reply.headers
    assert reply.headers["X-Router-Relevance"] == "no"
    # "hi" is 0 tokens at characters / 3: the router counts 1, plus 3 for the
    # message and 3 for the primed reply.
    assert reply.headers["X-Router-Measured-Tokens"] == "7"


def test_streamed_answers_carry_the_explain_headers(sdk, router_config):
    with sdk.chat.completions.with_streaming_response.create(
        model="auto", messages=[{"role": "user", "content": "hi"}], stream=True
    ) as reply:
        headers = reply.headers
        body = reply.read()

    decision = RouteDecision.objects.get()
    assert b"data: [DONE]" in body
    assert headers["X-Router-Decision-Id"] == str(decision.pk)
    assert headers["X-Router-Path"] == "routed"
    assert headers["X-Router-Tier"] == decision.tier
    assert headers["X-Router-Model"] == decision.chosen_model
    assert headers["X-Router-Pinch-Final-Tokens"] == str(decision.pinch_final_tokens)
    assert float(headers["X-Router-Overhead-Ms"]) >= 0


def test_the_dry_run_and_the_replay_report_the_same_pinch_figures(
    live_server, api_key, router_config, write_config, corpus_dir
):
    router_config["pinch"]["budget_tokens"] = 20000
    write_config(router_config)
    messages = json.loads((corpus_dir / "013.json").read_text())["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")

    response = requests.post(
        live_server.url + "/v1/chat/completions",
        json={"model": "auto", "messages": messages[:last]},
        headers={"Authorization": f"Bearer {api_key}", "X-Router-Dry-Run": "1"},
        timeout=30,
    )
    replayed = replay([Session("013.json", messages[: last + 1])], current_config())

    dry = response.json()["pinch"]
    record = replayed.records[-1]
    assert record.turn == last
    assert dry["compressed"], "a 20k budget prunes this request"
    assert (
        dry["original_tokens"],
        dry["final_tokens"],
        dry["compressed"],
        dry["capped"],
        dry["relevance_used"],
    ) == (
        record.original_tokens,
        record.final_tokens,
        record.compressed,
        record.capped,
        record.relevance_used,
    )
    assert response.headers["X-Router-Pinch-Final-Tokens"] == str(record.final_tokens)
    # The two counts say which results changed where: before the window, and capped inside it.
    assert response.headers["X-Router-Pinch-Compressed"] == str(len(dry["compressed"]))
    assert response.headers["X-Router-Pinch-Capped"] == str(len(dry["capped"]))
