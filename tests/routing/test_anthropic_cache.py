"""Prompt-cache breakpoints on requests to Claude models, followed over many turns.

The Anthropic fake keeps a prompt cache by the documented rules (a prefix is
written at a breakpoint, read when a later request's breakpoint, or one of
the 20 blocks before it, ends the same prefix), so what a session would pay
is read off its usage. The router must place breakpoints so that every turn
after the first reads the cache, pinch's steps included.
"""

import json

import pytest

from routing.models import RouteDecision
from routing.replay.corpus import load_sessions
from tests.support.anthropic_upstream import prefix_blocks, prefix_keys, without_markers
from tests.support.config import claude_model
from tests.support.router import openai_client

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command and return its output. " * 80,
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
SYSTEM = "You are a careful coding agent. Follow the repository's conventions. " * 60


@pytest.fixture
def sdk(live_server, claude_config, api_key):
    return openai_client(live_server, api_key, timeout=30)


def marked(body):
    """(position, where) of each breakpoint in the body's cache-prefix order."""
    return [
        (i, where)
        for i, (where, block) in enumerate(prefix_blocks(body))
        if "cache_control" in block
    ]


def plain_prefix(body, end):
    """The body's first ``end`` cacheable blocks as JSON, breakpoint markers left out."""
    return json.dumps([[w, without_markers(b)] for w, b in prefix_blocks(body)[:end]])


def agent_turns(rounds, result_chars=4000):
    """The requests of an agent session: a task, then one tool call and result per round."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Fix the bug."}]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {i}: looking.",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"cat f{i}"}),
                        },
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": f"{i:03d} line\n" * (result_chars // 9),
            }
        )
        yield list(messages)


def replay(sdk, requests, tools=TOOLS, model="claude-echo"):
    for messages in requests:
        sdk.chat.completions.create(model=model, messages=messages, tools=tools)
    return list(RouteDecision.objects.order_by("id"))


def took_a_step(decision):
    """pinch rewrote part of what the previous turn sent (the prefix probe saw it)."""
    return decision.prefix_match is not None and decision.prefix_match < (
        decision.prefix_previous_length or 0
    )


PINCH_IN_STEPS = {
    "enabled": True,
    "budget_tokens": 6000,
    "keep_last_turns": 4,
    "keep_last_tool_results": 3,
    "window_step": 3,
    "max_summarize_chars": 3000,
    "relevance": {"enabled": False},
    # The budget prune's window steps: a step every few turns of a short session.
    "payback": {"enabled": False},
}


def test_breakpoints_keep_their_prefix_byte_identical_from_turn_to_turn(
    sdk, claude_config, write_config, anthropic_upstream
):
    claude_config["pinch"] = PINCH_IN_STEPS
    write_config(claude_config)
    decisions = replay(sdk, agent_turns(14))
    bodies, usages = anthropic_upstream.bodies(), anthropic_upstream.usages
    steps = [i for i, d in enumerate(decisions) if took_a_step(d)]
    assert len(steps) >= 2  # the session is long enough for pinch to step, more than once

    for t, body in enumerate(bodies):
        points = marked(body)
        where = [w for _, w in points]
        assert len(points) <= 4
        # The system prompt, then messages: the latest one's last block last of all.
        assert "system" in where
        assert points[-1][0] == len(prefix_blocks(body)) - 1
        if t + 1 == len(bodies):
            break
        following = bodies[t + 1]
        for k, (position, _) in enumerate(points):
            same = plain_prefix(body, position + 1) == plain_prefix(following, position + 1)
            if k < len(points) - 1 or t + 1 not in steps:
                # Every breakpoint's prefix reaches the next turn byte for byte; the
                # latest message's too, unless pinch stepped there.
                assert same, (t, k)

    assert usages[0]["cache_read_input_tokens"] == 0
    assert usages[0]["cache_creation_input_tokens"] > 0
    for t in range(1, len(usages)):
        before, now = usages[t - 1], usages[t]
        written_before = before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        if t in steps:
            # The step rewrote the end; the stable prefix before it, messages
            # and all, not just the tools and system prompt, is still read.
            _, reach = prefix_keys(bodies[t])
            system_end = [p for p, w in marked(bodies[t]) if w == "system"][0]
            assert reach[system_end] < now["cache_read_input_tokens"] < written_before, t
        else:
            assert now["cache_read_input_tokens"] == written_before, t

    for decision, usage in zip(decisions, usages):
        read, write = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        assert (decision.cache_read_tokens, decision.cache_write_tokens) == (read, write)
        assert decision.cached_tokens == read
        assert decision.prompt_tokens == usage["input_tokens"] + read + write
        # Priced from the model's config: 3.00 uncached, 0.30 a read, 3.75 a write (5 min).
        billed = (usage["input_tokens"] * 3.0 + read * 0.3 + write * 3.75) / 1e6
        assert decision.billed_prompt_cost_usd == pytest.approx(billed)


def test_an_openai_compatible_models_cached_tokens_are_recorded_as_cache_reads(sdk):
    sdk.chat.completions.create(model="echo-medium", messages=[{"role": "user", "content": "hi"}])
    decision = RouteDecision.objects.get()
    # The OpenAI test upstream reports 11 prompt tokens, 3 of them cached; no writes.
    assert (decision.cached_tokens, decision.cache_read_tokens, decision.cache_write_tokens) == (
        3,
        3,
        None,
    )
    # echo-medium: 1.00 per 1M prompt tokens, 0.25 cached.
    assert decision.billed_prompt_cost_usd == pytest.approx((8 * 1.0 + 3 * 0.25) / 1e6)


def test_the_clients_own_breakpoints_are_kept_and_counted_against_the_four(sdk, anthropic_upstream):
    marker = {"type": "ephemeral"}
    messages = [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM, "cache_control": marker}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "a" * 4000, "cache_control": marker}],
        },
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "b" * 4000, "cache_control": marker}],
        },
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "c" * 4000},
    ]
    sdk.chat.completions.create(model="claude-echo", messages=messages, tools=TOOLS)
    body = anthropic_upstream.bodies()[0]
    # The client's three stay where it put them; the one left goes on the latest message.
    assert body["system"][0]["cache_control"] == marker
    assert body["messages"][0]["content"][0]["cache_control"] == marker
    assert body["messages"][2]["content"][0]["cache_control"] == marker
    assert body["messages"][4]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert len(marked(body)) == 4
    assert "cache_control" not in body["tools"][0]


def test_a_prefix_under_the_models_minimum_gets_no_breakpoint(sdk, anthropic_upstream):
    sdk.chat.completions.create(
        model="claude-echo",
        messages=[{"role": "system", "content": "short"}, {"role": "user", "content": "hi"}],
    )
    assert marked(anthropic_upstream.bodies()[0]) == []


def test_a_model_with_a_one_hour_cache_marks_its_breakpoints_so(
    live_server, claude_config, write_config, api_key, anthropic_upstream
):
    claude_config["models"].append(
        claude_model(
            "claude-hour", upstream="claude-echo-1h", cache={"min_tokens": 1024, "ttl": "1h"}
        )
    )
    write_config(claude_config)
    sdk = openai_client(live_server, api_key)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
    sdk.chat.completions.create(model="claude-hour", messages=messages)
    body = anthropic_upstream.bodies()[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def session_tools(messages):
    names = sorted({c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()})
    return [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in names
    ]


def test_a_corpus_session_reads_the_cache_on_every_turn_after_the_first(
    sdk, claude_config, write_config, anthropic_upstream, corpus_dir
):
    # The shipped pinch defaults (the payback steps, budget 8,000 tokens).
    claude_config["pinch"] = {"enabled": True}
    write_config(claude_config)
    (session,) = [c for c in load_sessions([corpus_dir]) if c.name == "101.json"]
    requests = list(session.requests())[:60]
    decisions = replay(sdk, requests, tools=session_tools(session.messages))
    usages = anthropic_upstream.usages
    steps = {t for t, d in enumerate(decisions) if took_a_step(d)}
    # More than once: a conversation's first staked step waits for it to settle
    # (pinch.payback settle_turns), so 60 requests of 101 take two.
    assert len(steps) >= 2
    reads = [u["cache_read_input_tokens"] for u in usages]
    written = [u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usages]
    first = next(t for t, u in enumerate(usages) if u["cache_creation_input_tokens"])
    for t in range(first + 1, len(usages)):
        if t not in steps:
            assert reads[t] == written[t - 1], t  # all the last turn wrote
    unread = [t for t in range(first + 1, len(usages)) if reads[t] == 0]
    # Only where pinch first crosses its budget, when the stable prefix is too
    # short to have been cached, does a turn read nothing; every other step
    # still reads the prefix before it.
    assert len(unread) <= 1 and set(unread) <= steps
    prompt = sum(u["input_tokens"] for u in usages) + sum(written)
    writes = sum(written) - sum(reads)
    # Input-price units: reads 0.1x, writes 1.25x (5 minutes), the rest 1x.
    billed = prompt - sum(reads) - writes + 0.1 * sum(reads) + 1.25 * writes
    print(
        f"session 101, {len(usages)} turns, {len(steps)} pinch steps: "
        f"{sum(reads) / prompt:.1%} of prompt tokens read from the cache, "
        f"prompt cost {billed / prompt:.1%} of the same tokens uncached"
    )
