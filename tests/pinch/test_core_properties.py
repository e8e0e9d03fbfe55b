"""Invariants of prune_context over generated conversations and over real agent sessions.

The rule tests pin each behaviour on a hand-made case; these check that the
promises hold on shapes nobody thought to write down: any mix of roles, parallel
and reused tool-call ids, orphan results, None and list-of-parts content, and
every combination of knobs.
"""

import copy
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.corpus import corpus_dir, load_conversations
from pinch import estimate_tokens, extract_text, prune_context, trim_candidates

settings.register_profile(
    "pinch", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

TOOLS = ["bash", "read_file", "grep", "browser_get_state"]


def make_text(size: int, style: str) -> str:
    if style == "lines":
        return "".join(f"{i:04d}: output line\n" for i in range(size // 18 + 1))[:size]
    if style == "unicode":
        return ("日本語のテキスト ✓\n" * (size // 11 + 1))[:size]
    return "x" * size


texts = st.builds(
    make_text,
    st.one_of(st.integers(0, 400), st.integers(0, 40_000)),
    st.sampled_from(["lines", "unicode", "single"]),
)
parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, texts),
        st.just({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
        st.builds(lambda t: {"type": "tool_result", "content": t}, texts),
        st.builds(
            lambda t: {"type": "tool_result", "content": [{"type": "text", "text": t}]}, texts
        ),
    ),
    max_size=3,
)
contents = st.one_of(texts, texts, st.none(), parts)


@st.composite
def conversations(draw):
    messages = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(contents)})
    for step in range(draw(st.integers(0, 24))):
        kind = draw(st.sampled_from(["user", "user", "calls", "calls", "calls", "say", "orphan"]))
        if kind == "user":
            messages.append({"role": "user", "content": draw(contents)})
        elif kind == "say":
            messages.append({"role": "assistant", "content": draw(contents)})
        elif kind == "orphan":
            orphan = {"role": "tool", "content": draw(contents)}
            if draw(st.booleans()):
                orphan["tool_call_id"] = "never-called"
            messages.append(orphan)
        else:
            # Some clients reuse ids like "call_0"; results must still pair by position.
            ids = [
                draw(st.sampled_from([f"call_{step}_{j}", "call_0"]))
                for j in range(draw(st.integers(1, 3)))
            ]
            names = [draw(st.sampled_from(TOOLS)) for _ in ids]
            messages.append(
                {
                    "role": "assistant",
                    "content": draw(st.one_of(st.none(), texts)),
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": "{}"}}
                        for i, n in zip(ids, names)
                    ],
                }
            )
            for call_id in ids:
                reply = {"role": "tool", "tool_call_id": call_id, "content": draw(contents)}
                if draw(st.integers(0, 4)) == 0:
                    reply["name"] = draw(st.sampled_from(TOOLS))
                messages.append(reply)
    return messages


knobs = st.fixed_dictionaries(
    {
        "budget_tokens": st.integers(0, 30_000),
        "keep_last_turns": st.integers(0, 5),
        "keep_last_tool_results": st.one_of(st.none(), st.integers(0, 6)),
        "max_summarize_chars": st.sampled_from([3000, 4000, 8000, 30]),
        "protected_max_chars": st.sampled_from([None, 3000, 20_000, 10]),
        "extra_fixed_tokens": st.integers(0, 3000),
    }
)


def total(messages, extra=0):
    return sum(estimate_tokens(extract_text(m)) for m in messages) + extra


def assert_invariants(messages, out, stats, knob):
    """Everything prune_context promises about one call, whatever the input."""
    extra = knob.get("extra_fixed_tokens", 0)
    assert len(out) == len(messages)
    assert [m.get("role") for m in out] == [m.get("role") for m in messages]
    assert [m.get("tool_call_id") for m in out] == [m.get("tool_call_id") for m in messages]
    assert [m.get("tool_calls") for m in out] == [m.get("tool_calls") for m in messages]

    changed = [i for i in range(len(out)) if out[i] is not messages[i]]
    for i in range(len(out)):
        if messages[i].get("role") != "tool":
            assert out[i] is messages[i]
    for i in changed:
        before, after = messages[i], out[i]
        assert before["role"] == "tool"
        assert isinstance(after["content"], str)
        assert len(after["content"]) < len(extract_text(before))
        assert {k: v for k, v in after.items() if k != "content"} == {
            k: v for k, v in before.items() if k != "content"
        }

    assert stats["original_tokens"] == total(messages, extra)
    assert stats["final_tokens"] == total(out, extra)
    assert stats["tokens_saved"] == max(stats["original_tokens"] - stats["final_tokens"], 0)
    if stats["original_tokens"] <= knob.get("budget_tokens", 50_000):
        assert out is messages
    if not stats["pruned"]:
        assert out is messages
        assert set(stats) == {"pruned", "original_tokens", "final_tokens", "tokens_saved"}
        return
    candidates = trim_candidates(
        messages, knob.get("keep_last_turns", 4), knob.get("keep_last_tool_results")
    )
    assert changed == sorted(stats["compressed"] + stats["capped"])
    assert set(stats["compressed"]) <= set(candidates)
    assert not set(stats["capped"]) & set(candidates)
    assert stats["summarized"] == len(changed) > 0
    assert sum(stats["compressed_tools"].values()) == len(changed)


@settings(settings.get_profile("pinch"))
@given(conversations(), knobs)
def test_pruning_keeps_every_promise_on_any_conversation(messages, knob):
    snapshot = copy.deepcopy(messages)
    out, stats = prune_context(messages, **knob)
    assert messages == snapshot, "the caller's messages were mutated"
    assert json.dumps(messages) == json.dumps(snapshot)
    assert_invariants(messages, out, stats, knob)


@settings(settings.get_profile("pinch"))
@given(conversations(), knobs, st.data())
def test_a_relevance_order_never_compresses_more_than_uniform(messages, knob, data):
    candidates = trim_candidates(messages, knob["keep_last_turns"], knob["keep_last_tool_results"])
    order = data.draw(
        st.one_of(
            st.permutations(range(len(candidates))),
            st.lists(st.integers(-2, len(candidates) + 2), max_size=len(candidates) + 4),
        )
    )
    snapshot = copy.deepcopy(messages)
    out, stats = prune_context(messages, relevance_order=order, **knob)
    assert messages == snapshot
    assert_invariants(messages, out, stats, knob)

    _, uniform = prune_context(messages, **knob)
    assert stats["final_tokens"] >= uniform["final_tokens"]
    if stats["pruned"]:
        assert set(stats["compressed"]) <= set(uniform["compressed"])
        assert stats["capped"] == uniform["capped"]


@settings(settings.get_profile("pinch"))
@given(conversations(), knobs)
def test_relevance_order_none_matches_the_call_without_it(messages, knob):
    assert json.dumps(prune_context(messages, relevance_order=None, **knob)) == json.dumps(
        prune_context(messages, **knob)
    )


# --- the real corpus ----------------------------------------------------------------------

CORPUS = corpus_dir()
CORPUS_KNOBS = {"budget_tokens": 20_000, "keep_last_tool_results": 6}


def _corpus():
    if not CORPUS.is_dir():
        if os.environ.get("CI"):  # CI always has the corpus: its absence is a failure
            raise RuntimeError(f"CI needs the shared corpus at {CORPUS}")
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS}"))]
    return [pytest.param(c, id=c.name) for c in load_conversations(CORPUS)]


@pytest.mark.parametrize("conversation", _corpus())
def test_every_real_session_keeps_the_promises_at_a_tight_budget(conversation):
    messages = conversation.messages
    snapshot = copy.deepcopy(messages)
    out, stats = prune_context(messages, **CORPUS_KNOBS)
    assert messages == snapshot
    assert_invariants(messages, out, stats, CORPUS_KNOBS)

    # Newest-first is the opposite of what recency would pick: it must still hold.
    candidates = trim_candidates(messages, 4, 6)
    reverse = list(range(len(candidates)))[::-1]
    ordered, ordered_stats = prune_context(messages, relevance_order=reverse, **CORPUS_KNOBS)
    assert_invariants(messages, ordered, ordered_stats, CORPUS_KNOBS)
    assert ordered_stats["final_tokens"] >= stats["final_tokens"]
