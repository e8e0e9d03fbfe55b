"""The relevance edge: when it ranks, when it declines, and that it never fails a request.

Failure paths run against a real HTTP server on 127.0.0.1 (EmbeddingServer),
in each of the ways an embeddings endpoint can go wrong.
"""

from __future__ import annotations

import logging
import threading

import pytest

from pinch import estimate_tokens, extract_text, prune_context, relevance, trim_candidates
from pinch.relevance import (
    RelevanceResult,
    relevance_for,
    reset_relevance_state,
)
from tests.support.embedding_server import EmbeddingServer
from tests.support.relevance_scenario import QUERY, RESULTS, conversation, make_cfg


def total_tokens(messages):
    return sum(estimate_tokens(extract_text(m)) for m in messages)


@pytest.fixture(autouse=True)
def _fresh_process_state():
    reset_relevance_state()
    yield
    reset_relevance_state()


@pytest.fixture
def server():
    with EmbeddingServer() as s:
        yield s


def unavailable_records(caplog):
    return [
        r
        for r in caplog.records
        if r.name == "pinch.relevance" and r.getMessage().startswith("relevance_unavailable")
    ]


# --- when it ranks ------------------------------------------------------------


def test_it_orders_the_same_candidates_prune_context_trims():
    messages = conversation()
    cfg = make_cfg()
    order = relevance_for(messages, cfg, budget_tokens=500, extra_fixed_tokens=0).order
    candidates = trim_candidates(messages, keep_last_turns=2)
    assert len(candidates) == len(RESULTS)
    assert sorted(order) == list(range(len(candidates)))


def test_the_results_about_the_request_come_last_so_they_are_trimmed_last():
    order = relevance_for(conversation(), make_cfg(), 500, 0).order
    # RESULTS[0] (invoice.py) and RESULTS[3] (the failing test) are the relevant ones.
    assert set(order[-2:]) == {0, 3}


def test_prune_context_keeps_the_relevant_results_verbatim():
    messages = conversation()
    cfg = make_cfg()
    budget = total_tokens(messages) - 800  # a deficit three placeholders cover
    order = relevance_for(messages, cfg, budget, 0).order
    pruned, stats = prune_context(
        messages, budget_tokens=budget, keep_last_turns=2, relevance_order=order
    )
    assert stats["pruned"]
    kept = [m["content"] for m in pruned if m.get("role") == "tool"]
    assert RESULTS[0] in kept and RESULTS[3] in kept


def test_the_result_object_says_used():
    result = relevance_for(conversation(), make_cfg(), 500, 0)
    assert isinstance(result, RelevanceResult)
    assert result.status == "used" and result.candidates == len(RESULTS)
    assert result.order is not None and result.elapsed_ms >= 0


def test_the_query_is_the_last_user_message_and_texts_are_cut_to_max_chars(server):
    cfg = make_cfg(backend="openai", base_url=server.base_url, max_chars=100)
    long_query = "fix compute_total " * 20
    order = relevance_for(conversation(query=long_query), cfg, 500, 0).order
    assert order is not None
    inputs = server.requests[0]["body"]["input"]
    assert inputs[0] == long_query[:100]
    assert [len(t) for t in inputs[1:]] == [100] * len(RESULTS)


def test_the_openai_backend_makes_one_request_for_query_and_candidates(server, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-edge")
    cfg = make_cfg(backend="openai", base_url=server.base_url, api_key_env="TEST_EMBED_KEY")
    order = relevance_for(conversation(), cfg, 500, 0).order
    assert sorted(order) == list(range(len(RESULTS)))
    assert len(server.requests) == 1
    assert len(server.requests[0]["body"]["input"]) == 1 + len(RESULTS)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-edge"


# --- when it declines ---------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda cfg: setattr(cfg, "enabled", False), "pinch disabled"),
        (lambda cfg: setattr(cfg.relevance, "enabled", False), "relevance disabled"),
        (lambda cfg: setattr(cfg.relevance, "min_candidates", 6), "fewer than min_candidates=6"),
    ],
)
def test_it_skips_without_logging(change, reason, caplog):
    cfg = make_cfg()
    change(cfg)
    with caplog.at_level(logging.DEBUG, logger="pinch.relevance"):
        result = relevance_for(conversation(), cfg, 500, 0)
    assert (result.order, result.status) == (None, "skipped")
    assert reason in result.reason
    assert unavailable_records(caplog) == []


def test_it_skips_a_conversation_under_budget():
    messages = conversation()
    budget = total_tokens(messages)
    assert relevance_for(messages, make_cfg(), budget, 0).order is None
    assert relevance_for(messages, make_cfg(), budget, 0).reason.startswith("under budget")


def test_tool_definitions_can_tip_a_conversation_over_budget():
    messages = conversation()
    budget = total_tokens(messages)
    assert relevance_for(messages, make_cfg(), budget, extra_fixed_tokens=0).order is None
    order = relevance_for(messages, make_cfg(), budget, extra_fixed_tokens=1).order
    assert order is not None and len(order) == len(RESULTS)


def test_the_budget_guard_agrees_with_prune_context():
    messages = conversation()
    for extra in (0, 1, 50):
        budget = total_tokens(messages) + 25
        _, stats = prune_context(
            messages, budget_tokens=budget, keep_last_turns=2, extra_fixed_tokens=extra
        )
        order = relevance_for(messages, make_cfg(), budget, extra).order
        assert (order is not None) == stats["pruned"]


def test_it_skips_when_the_candidates_are_all_protected():
    # One user turn and keep_last_turns=2: the protected window covers everything.
    messages = conversation(later_turns=1)[:-1] + [{"role": "assistant", "content": "done"}]
    messages[1]["content"] = QUERY
    result = relevance_for(messages, make_cfg(), 100, 0)
    assert result.status == "skipped"
    assert result.candidates == 0


def test_it_skips_when_there_is_no_user_text():
    messages = conversation(query="")
    result = relevance_for(messages, make_cfg(), 100, 0)
    assert result.status == "skipped" and "no user text" in result.reason


# --- it never fails a request -------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("status_500", "HTTP 500"),
        ("status_401", "HTTP 401"),
        ("not_json", "not JSON"),
        ("no_data", "'data'"),
        ("wrong_count", "vectors for"),
        ("nan", "NaN"),
        ("mixed_dims", "mismatched dimensions"),
        ("duplicate_index", "appears twice"),
    ],
)
def test_a_bad_endpoint_gives_none_and_one_log_line(server, caplog, mode, reason):
    server.mode = mode
    cfg = make_cfg(backend="openai", base_url=server.base_url)
    with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
        result = relevance_for(conversation(), cfg, 500, 0)
        order = relevance_for(conversation(), cfg, 500, 0).order
    assert order is None
    assert (result.order, result.status) == (None, "unavailable")
    assert reason in result.reason
    records = unavailable_records(caplog)
    assert len(records) == 2  # one per call
    assert reason in records[0].getMessage() and records[0].reason == result.reason


def test_a_timeout_bounds_the_whole_call(server, caplog):
    server.mode, server.delay = "slow", 5.0
    cfg = make_cfg(backend="openai", base_url=server.base_url, timeout_seconds=0.3)
    with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
        result = relevance_for(conversation(), cfg, 500, 0)
    assert result.status == "unavailable" and result.order is None
    assert not server.answered.is_set(), "the request waited for the slow embedder"
    assert len(unavailable_records(caplog)) == 1


def test_the_time_budget_also_bounds_the_builtin_embedder(monkeypatch, caplog):
    from pinch.embedders import BuiltinEmbedder

    real = BuiltinEmbedder.featurize
    release, finished = threading.Event(), threading.Event()

    def stuck_featurize(self, texts):
        release.wait(10)
        finished.set()
        return real(self, texts)

    monkeypatch.setattr(BuiltinEmbedder, "featurize", stuck_featurize)
    try:
        with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
            order = relevance_for(conversation(), make_cfg(timeout_seconds=0.1), 500, 0).order
        assert order is None
        assert not finished.is_set(), "the request waited for the embedder"
    finally:
        release.set()
    assert "timeout_seconds=0.1" in unavailable_records(caplog)[0].getMessage()


def test_an_unreachable_endpoint_gives_none(caplog):
    with EmbeddingServer() as s:
        url = s.base_url  # closed again on exit
    cfg = make_cfg(backend="openai", base_url=url, timeout_seconds=1.0)
    with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
        assert relevance_for(conversation(), cfg, 500, 0).order is None
    assert "cannot connect" in unavailable_records(caplog)[0].getMessage()


def test_an_unknown_backend_gives_none(caplog):
    with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
        assert relevance_for(conversation(), make_cfg(backend="magic"), 500, 0).order is None
    assert "unknown relevance backend" in unavailable_records(caplog)[0].getMessage()


def test_a_broken_config_gives_none_rather_than_raising(caplog):
    cfg = make_cfg()
    del cfg.relevance.timeout_seconds
    with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
        assert relevance_for(conversation(), cfg, 500, 0).order is None
    assert len(unavailable_records(caplog)) == 1


def test_the_api_key_never_reaches_the_log(server, caplog, monkeypatch):
    secret = "sk-do-not-log-this"
    monkeypatch.setenv("TEST_EMBED_KEY", secret)
    server.mode = "status_401"
    cfg = make_cfg(backend="openai", base_url=server.base_url, api_key_env="TEST_EMBED_KEY")
    with caplog.at_level(logging.DEBUG):
        assert relevance_for(conversation(), cfg, 500, 0).order is None
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret not in caplog.text


def test_an_echoed_key_is_redacted_from_the_reason(monkeypatch, caplog):
    secret = "sk-echoed-back"
    monkeypatch.setenv("TEST_EMBED_KEY", secret)

    def boom(*args, **kwargs):
        raise RuntimeError(f"server said: bad key {secret}")

    monkeypatch.setattr(relevance, "order_by_relevance", boom)
    cfg = make_cfg(api_key_env="TEST_EMBED_KEY")
    with caplog.at_level(logging.WARNING, logger="pinch.relevance"):
        result = relevance_for(conversation(), cfg, 500, 0)
    assert result.status == "unavailable"
    assert secret not in result.reason and secret not in caplog.text
    assert "[redacted]" in result.reason


# --- process state ------------------------------------------------------------


def test_one_embedder_per_process_and_config(server):
    first = relevance._process.embedder(make_cfg().relevance, None)
    assert relevance._process.embedder(make_cfg().relevance, None) is first
    other = relevance._process.embedder(
        make_cfg(backend="openai", base_url=server.base_url).relevance, None
    )
    assert other is not first
    assert other.cache is first.cache  # the cache is keyed by identity, so it is kept


def test_reset_forgets_the_embedder():
    first = relevance._process.embedder(make_cfg().relevance, None)
    reset_relevance_state()
    assert relevance._process.embedder(make_cfg().relevance, None) is not first
