"""End to end: the official anthropic SDK -> /v1/messages over real HTTP -> both kinds of upstream.

Each behaviour runs against the Anthropic test server (the request goes out
natively) and the OpenAI-compatible one (it goes out translated), through
the client model names Claude Code sends, mapped by the config's aliases.
"""

import base64
import json

import anthropic
import pytest

from routing.models import RouteDecision
from routing.selection import measure_prompt_tokens
from tests.support.anthropic_upstream import ANSWER as CLAUDE_ANSWER
from tests.support.anthropic_upstream import MID_CONVERSATION_SYSTEM, SIGNATURE, prefix_keys
from tests.support.config import ANTHROPIC_KEY, ANTHROPIC_KEY_ENV, anthropic_config
from tests.support.openai_upstream import ANSWER as OPENAI_ANSWER

pytestmark = pytest.mark.django_db(transaction=True)

# Client model name -> (what it is aliased to, the upstream's answer)
UPSTREAMS = {
    "claude-sonnet-4-6": ("claude-echo", CLAUDE_ANSWER),
    "gpt-through-claude": ("echo-medium", OPENAI_ANSWER),
}
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()


@pytest.fixture
def config_data(upstream, anthropic_upstream, write_config, monkeypatch):
    from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV

    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    data = anthropic_config(anthropic_upstream.base_url, upstream.base_url)
    data["aliases"] = {
        "claude-sonnet-4-6": "claude-echo",
        "gpt-through-claude": "echo-medium",
        "claude-haiku-*": "echo-small",
        "claude-opus-*": "auto",
    }
    write_config(data)
    return data


@pytest.fixture
def claude(live_server, config_data, api_key):
    return anthropic.Anthropic(base_url=live_server.url, api_key=api_key, max_retries=0, timeout=20)


@pytest.fixture(params=sorted(UPSTREAMS))
def name(request):
    """The client's model name: one goes to the Anthropic upstream, one to the OpenAI one."""
    return request.param


def native(name):
    return UPSTREAMS[name][0].startswith("claude")


def sent_bodies(name, upstream, anthropic_upstream):
    return anthropic_upstream.bodies() if native(name) else upstream.bodies()


def only_decision():
    rows = list(RouteDecision.objects.all())
    assert len(rows) == 1, rows
    return rows[0]


def test_plain_answer_names_the_model_asked_for_and_is_recorded(claude, name):
    raw = claude.messages.with_raw_response.create(
        model=name, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )
    message = raw.parse()
    assert message.content[0].text == UPSTREAMS[name][1]
    assert message.model == name
    assert message.stop_reason == "end_turn"
    assert raw.headers["X-Router-Model"] == UPSTREAMS[name][0]
    decision = only_decision()
    assert (decision.requested_model, decision.chosen_model) == (name, UPSTREAMS[name][0])
    assert decision.path == "passthrough"
    assert decision.status_code == 200
    assert decision.prompt_tokens > 0 and decision.usage_estimated is False


def test_streamed_answer_arrives_as_messages_events(claude, name):
    with claude.messages.stream(
        model=name, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert message.content[0].text.strip() == UPSTREAMS[name][1]
    assert message.model == name
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_delta" in kinds and "message_delta" in kinds
    decision = only_decision()
    assert decision.stream is True and decision.status_code == 200
    assert decision.completion_tokens > 0 and decision.usage_estimated is False


@pytest.mark.parametrize("model", ["claude-slow", "slow-stream"])
def test_first_delta_reaches_the_client_before_the_upstream_finishes(
    claude, upstream, anthropic_upstream, model
):
    # Both test servers hold the rest back after their first piece of text.
    early = "content_block_delta"
    server = anthropic_upstream if model.startswith("claude") else upstream
    with claude.messages.stream(
        model=model, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        events = iter(stream)
        seen = [next(events)]
        while seen[-1].type != early:
            seen.append(next(events))
        assert not server.stream_finished.is_set()
        server.release.set()
        rest = [e.type for e in events]
    assert seen[0].type == "message_start"
    assert rest[-1] == "message_stop"
    assert server.stream_finished.wait(timeout=5)  # set just after its last bytes went out


def ask(claude, stream: bool, **args):
    """(the final Message, the delta types seen on the way when streamed)."""
    if not stream:
        return claude.messages.create(**args), []
    with claude.messages.stream(**args) as events:
        deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
        return events.get_final_message(), deltas


@pytest.mark.parametrize("stream", [False, True])
def test_tool_use_comes_back_as_a_tool_use_block(claude, name, stream):
    message, deltas = ask(
        claude,
        stream,
        model=name,
        max_tokens=100,
        tools=TOOLS,
        messages=[{"role": "user", "content": "read the readme"}],
    )
    assert ("input_json_delta" in deltas) is stream
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert block.name == "read_file"
    assert block.input == {"path": "README.md"}
    assert message.stop_reason == "tool_use"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", ["claude-parallel", "parallel-x"])
def test_parallel_tool_calls_are_separate_blocks(claude, config_data, write_config, model, stream):
    config_data["models"].append({**config_data["models"][1], "id": "parallel-x"})
    config_data["models"][-1]["upstream_model"] = "parallel-x"
    write_config(config_data)
    message, _ = ask(
        claude,
        stream,
        model=model,
        max_tokens=100,
        tools=TOOLS,
        messages=[{"role": "user", "content": "read both"}],
    )
    calls = [b for b in message.content if b.type == "tool_use"]
    assert [c.input for c in calls] == [{"path": "a.py"}, {"path": "b.py"}]
    assert len({c.id for c in calls}) == 2


def test_three_turn_tool_round_trip(claude, name, upstream, anthropic_upstream):
    messages = [{"role": "user", "content": "read the readme"}]
    first = claude.messages.create(model=name, max_tokens=100, tools=TOOLS, messages=messages)
    (call,) = [b for b in first.content if b.type == "tool_use"]
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "# Readme\nhello"}
            ],
        },
    ]
    second = claude.messages.create(model=name, max_tokens=100, tools=TOOLS, messages=messages)
    assert second.content[0].text == f"Got 1 results: {call.id}"
    assert second.stop_reason == "end_turn"
    messages += [
        {"role": "assistant", "content": second.content[0].text},
        {"role": "user", "content": "thanks, summarise"},
    ]
    third = claude.messages.create(model=name, max_tokens=100, tools=TOOLS, messages=messages)
    assert third.content
    last = sent_bodies(name, upstream, anthropic_upstream)[-1]
    if native(name):
        assert last["messages"][2]["content"][0]["tool_use_id"] == call.id
    else:
        assert [m["role"] for m in last["messages"]] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
        assert last["messages"][1]["tool_calls"][0]["id"] == call.id
        assert last["messages"][2] == {
            "role": "tool",
            "tool_call_id": call.id,
            "name": "read_file",
            "content": "# Readme\nhello",
        }
    assert RouteDecision.objects.filter(status_code=200).count() == 3


THINKING_TURN = [
    # The test server issues and checks this signature, as the API checks its own.
    {"type": "thinking", "thinking": "Let me look at the file.", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"},
    {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.py"}},
]


def test_thinking_blocks_and_signatures_reach_a_claude_upstream_byte_for_byte(
    claude, anthropic_upstream, upstream
):
    messages = [
        {"role": "user", "content": "look at a.py"},
        {"role": "assistant", "content": THINKING_TURN},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "x = 1"}],
        },
    ]
    claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=100, tools=TOOLS, messages=messages
    )
    sent = anthropic_upstream.bodies()[0]["messages"][1]["content"]
    assert json.dumps(sent) == json.dumps(THINKING_TURN)
    # To a chat upstream the thinking is left out; the call and its result remain.
    claude.messages.create(model="gpt-through-claude", max_tokens=100, messages=messages)
    assistant = upstream.bodies()[0]["messages"][1]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["id"] == "toolu_01"


def test_thinking_in_the_answer_keeps_its_signature(claude, anthropic_upstream):
    args = dict(
        model="claude-sonnet-4-6",
        max_tokens=4000,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": "hi"}],
    )
    plain = claude.messages.create(**args)
    with claude.messages.stream(**args) as stream:
        streamed = stream.get_final_message()
    for message in (plain, streamed):
        assert message.content[0].type == "thinking"
        assert message.content[0].signature == SIGNATURE
    assert anthropic_upstream.bodies()[0]["thinking"] == args["thinking"]


def test_images_reach_both_upstreams(claude, name, upstream, anthropic_upstream):
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    claude.messages.create(
        model=name,
        max_tokens=100,
        messages=[{"role": "user", "content": [image, {"type": "text", "text": "what is it?"}]}],
    )
    (sent,) = sent_bodies(name, upstream, anthropic_upstream)
    if native(name):
        assert sent["messages"][0]["content"][0] == image
    else:
        assert sent["messages"][0]["content"] == [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
            {"type": "text", "text": "what is it?"},
        ]


def test_count_tokens_asks_a_claude_upstream_and_estimates_otherwise(claude, anthropic_upstream):
    messages = [{"role": "user", "content": "x" * 3000}]
    native_count = claude.messages.count_tokens(model="claude-sonnet-4-6", messages=messages)
    (asked,) = [r for r in anthropic_upstream.received if r["path"].endswith("count_tokens")]
    assert native_count.input_tokens == prefix_keys(json.loads(asked["body"]))[1][-1]
    assert native_count.input_tokens != 1000
    assert "max_tokens" not in json.loads(asked["body"])
    estimated = claude.messages.count_tokens(model="gpt-through-claude", messages=messages)
    # The router's own measure, the one routing fits into a window (3 characters a token).
    assert estimated.input_tokens == measure_prompt_tokens(messages, None)
    assert RouteDecision.objects.count() == 0


def test_claude_code_model_names_map_through_aliases(claude):
    small = claude.messages.with_raw_response.create(
        model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    routed = claude.messages.with_raw_response.create(
        model="claude-opus-4-6", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    )
    assert small.parse().model == "claude-haiku-4-5"
    assert small.headers["X-Router-Model"] == "echo-small"
    assert routed.parse().model == "claude-opus-4-6"
    assert routed.headers["X-Router-Path"] == "routed"
    rows = {d.requested_model: d for d in RouteDecision.objects.all()}
    assert rows["claude-haiku-4-5"].chosen_model == "echo-small"
    assert rows["claude-opus-4-6"].path == "routed"


def test_models_list_reads_with_the_anthropic_sdk(claude):
    ids = [m.id for m in claude.models.list()]
    assert ids[0] == "auto" and "claude-echo" in ids


def test_the_router_key_works_as_a_bearer_token(live_server, config_data, api_key):
    client = anthropic.Anthropic(base_url=live_server.url, auth_token=api_key, max_retries=0)
    message = client.messages.create(
        model="gpt-through-claude", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == OPENAI_ANSWER


def test_beta_and_version_headers_are_forwarded_to_a_claude_upstream(claude, anthropic_upstream):
    claude.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={
            "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
            "anthropic-version": "2023-01-01",
        },
    )
    headers = {k.lower(): v for k, v in anthropic_upstream.received[0]["headers"].items()}
    assert headers["anthropic-beta"] == (
        "claude-code-20250219,interleaved-thinking-2025-05-14,test-beta-2026-01-01"
    )
    assert headers["anthropic-version"] == "2023-01-01"  # the client's, not the config's
    assert headers["x-api-key"] == ANTHROPIC_KEY


def test_server_side_betas_and_fields_are_held_back_from_a_claude_upstream(
    claude, anthropic_upstream
):
    claude.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"anthropic-beta": "mcp-client-2025-04-04,claude-code-20250219"},
        # On the operator's account, Anthropic would call this URL and run code.
        extra_body={
            "mcp_servers": [{"type": "url", "url": "https://attacker.example/mcp", "name": "x"}],
            "container": "container_attacker",
        },
    )
    received = anthropic_upstream.received[0]
    headers = {k.lower(): v for k, v in received["headers"].items()}
    assert headers["anthropic-beta"] == "claude-code-20250219,test-beta-2026-01-01"
    body = json.loads(received["body"])
    assert "mcp_servers" not in body and "container" not in body


def test_the_operator_may_allow_every_beta_flag(
    claude, anthropic_upstream, config_data, write_config
):
    write_config({**config_data, "forwarding": {"anthropic_beta": ["*"]}})
    claude.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"anthropic-beta": "mcp-client-2025-04-04"},
    )
    headers = {k.lower(): v for k, v in anthropic_upstream.received[0]["headers"].items()}
    assert headers["anthropic-beta"] == "mcp-client-2025-04-04,test-beta-2026-01-01"


def test_the_clients_cache_breakpoints_are_kept_and_none_added_past_four(
    claude, anthropic_upstream
):
    marker = {"type": "ephemeral"}
    system = [{"type": "text", "text": "You are Claude Code. " * 400, "cache_control": marker}]
    tools = [{**TOOLS[0], "cache_control": marker}]
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a " * 3000, "cache_control": marker}],
        },
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "b " * 3000, "cache_control": marker}],
        },
    ]

    def send():
        claude.messages.create(
            model="claude-sonnet-4-6", max_tokens=10, system=system, tools=tools, messages=messages
        )

    send()
    sent = anthropic_upstream.bodies()[0]
    assert sent["system"] == system and sent["tools"] == tools
    assert sent["messages"][0]["content"] == messages[0]["content"]
    assert sent["messages"][2]["content"] == messages[2]["content"]
    # With one fewer of the client's own, the router adds its breakpoint on the last turn.
    messages[2]["content"][0].pop("cache_control")
    send()
    again = anthropic_upstream.bodies()[1]
    assert again["messages"][2]["content"][0]["cache_control"] == marker
    assert again["system"] == system
    assert anthropic_upstream.usages[1]["cache_read_input_tokens"] > 0


def long_tool_session(rounds=12, size=3000):
    """A Claude Code-like conversation: one task, then rounds of tool_use / tool_result."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "fix the failing test"}]}]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading file {i}."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i:02d}",
                        "name": "read_file",
                        "input": {"path": f"src/m{i}.py"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i:02d}",
                        "content": [{"type": "text", "text": f"# m{i}.py\n" + "line\n" * size}],
                    }
                ],
            }
        )
    return messages


def test_a_pruned_conversation_changes_only_old_tool_results(
    claude, name, config_data, write_config, upstream, anthropic_upstream
):
    config_data["pinch"]["budget_tokens"] = 4000
    write_config(config_data)
    messages = long_tool_session()
    claude.messages.create(model=name, max_tokens=100, tools=TOOLS, messages=messages)
    decision = only_decision()
    assert decision.pinch_final_tokens < decision.pinch_original_tokens
    assert decision.pinch_summarized == 12 - 6  # keep_last_tool_results: 6
    (sent,) = sent_bodies(name, upstream, anthropic_upstream)
    if not native(name):
        tool_messages = [m for m in sent["messages"] if m["role"] == "tool"]
        assert [len(m["content"]) < 3000 for m in tool_messages] == [True] * 6 + [False] * 6
        return
    for i, (got, original) in enumerate(zip(sent["messages"], messages)):
        result = i % 2 == 0 and i > 0
        if result and i <= 12:
            block, was = got["content"][0], original["content"][0]
            assert block["tool_use_id"] == was["tool_use_id"]
            assert "chars trimmed" in block["content"][0]["text"]
        else:
            # Every block pinch did not change is the client's, key for key (the
            # router may add a breakpoint of its own: the client set none).
            for block in got["content"]:
                block.pop("cache_control", None)
            assert json.dumps(got) == json.dumps(original), i


IMAGE_ONLY = [
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}
]
DOCUMENT = [
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}},
    {"type": "text", "text": "summarise"},
]


@pytest.mark.parametrize(
    "model, max_tokens, content, status, error_type",
    [
        ("claude-nope", 5, "hi", 404, "not_found_error"),
        ("gpt-through-claude", 0, "hi", 400, "invalid_request_error"),
        # A document block has no chat-completions form: refused, not silently dropped.
        ("gpt-through-claude", 5, DOCUMENT, 400, "invalid_request_error"),
        ("text-only", 5, IMAGE_ONLY, 422, "invalid_request_error"),
        ("claude-fail-429-9", 5, "hi", 429, "rate_limit_error"),
        ("claude-fail-529-9", 5, "hi", 529, "overloaded_error"),
        ("fail-429-9", 5, "hi", 429, "rate_limit_error"),  # relayed from a chat upstream
        ("unreachable", 5, "hi", 502, "api_error"),
        ("hang-model", 5, "hi", 504, "timeout_error"),
    ],
    ids=["404", "400", "400-document", "422", "429", "529", "429-chat", "502", "504"],
)
def test_errors_come_back_in_anthropics_shape(
    claude, config_data, write_config, model, max_tokens, content, status, error_type
):
    config_data["models"] += [
        {**config_data["models"][-1], "id": m, "upstream_model": m}
        for m in ("claude-fail-429-9", "claude-fail-529-9")
    ]
    config_data["models"].append({**config_data["models"][0], "id": "fail-429-9"})
    config_data["models"][-1]["upstream_model"] = "fail-429-9"
    write_config(config_data)
    with pytest.raises(anthropic.APIStatusError) as caught:
        claude.messages.create(
            model=model, max_tokens=max_tokens, messages=[{"role": "user", "content": content}]
        )
    assert caught.value.status_code == status
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == error_type
    assert caught.value.body["error"]["message"]


def test_a_wrong_method_is_answered_in_anthropics_shape(live_server, config_data, api_key):
    import requests

    response = requests.get(
        live_server.url + "/v1/messages", headers={"x-api-key": api_key}, timeout=10
    )
    assert response.status_code == 405
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_bad_key_is_a_401_in_anthropics_shape(live_server, config_data, db):
    client = anthropic.Anthropic(base_url=live_server.url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client.messages.create(
            model="gpt-through-claude", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.body["error"]["type"] == "authentication_error"


def test_a_body_over_the_limit_is_a_413_in_anthropics_shape(claude, settings):
    settings.ROUTER_MAX_BODY_BYTES = 1000
    with pytest.raises(anthropic.APIStatusError) as caught:
        claude.messages.create(
            model="gpt-through-claude",
            max_tokens=5,
            messages=[{"role": "user", "content": "x" * 2000}],
        )
    assert caught.value.status_code == 413
    assert caught.value.body["error"]["type"] == "request_too_large"


def test_a_stream_error_event_is_relayed_and_recorded(claude):
    with (
        pytest.raises(anthropic.APIStatusError),
        claude.messages.stream(
            model="claude-streamerror", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        ) as stream,
    ):
        for _ in stream:
            pass
    decision = only_decision()
    assert "overloaded_error" in decision.error


def test_a_config_broken_while_running_is_a_final_error_in_anthropics_shape(
    claude, config_data, write_config
):
    config_data["pinch"]["budget_tokens"] = -1
    write_config(config_data)
    with pytest.raises(anthropic.APIStatusError) as caught:
        claude.messages.create(
            model="gpt-through-claude", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.status_code == 400
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert "pinch.budget_tokens" in caught.value.body["error"]["message"]


def test_dry_run_shows_the_decision_and_what_pinch_would_send(claude):
    raw = claude.messages.with_raw_response.create(
        model="claude-opus-4-6",
        max_tokens=5,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"X-Router-Dry-Run": "1"},
    )
    body = json.loads(raw.http_response.content)
    assert body["dry_run"] is True and body["path"] == "routed"
    assert body["requested_model"] == "claude-opus-4-6"
    assert RouteDecision.objects.count() == 0


@pytest.mark.parametrize(
    "content, chosen",
    [("summarise", "echo-small"), (DOCUMENT, "claude-echo")],
    ids=["text", "document"],
)
def test_routing_picks_a_claude_model_for_what_only_claude_takes(claude, content, chosen):
    # Routed, the cheapest model is a chat model; a document block (or a
    # server tool, as Claude Code's WebSearch sends) needs a Claude model.
    raw = claude.messages.with_raw_response.create(
        model="claude-opus-4-6",
        max_tokens=5,
        messages=[{"role": "user", "content": content}],
        extra_headers={"X-Router-Dry-Run": "1"},
    )
    assert json.loads(raw.http_response.content)["chosen_model"] == chosen
    message = claude.messages.create(
        model="claude-opus-4-6", max_tokens=5, messages=[{"role": "user", "content": content}]
    )
    assert message.content
    assert RouteDecision.objects.get().chosen_model == chosen


def test_batches_and_other_unserved_messages_paths_are_a_404_in_anthropics_shape(claude):
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.messages.batches.list()
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "not_found_error"
    assert "POST /v1/messages" in caught.value.body["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_that_reports_no_usage_is_estimated_not_zero(claude, stream):
    message, _ = ask(
        claude,
        stream,
        model="nousage-model",
        max_tokens=50,
        messages=[{"role": "user", "content": "x" * 300}],
    )
    assert message.content[0].text.strip() == OPENAI_ANSWER
    decision = only_decision()
    assert decision.usage_estimated is True
    assert decision.prompt_tokens == decision.measured_tokens > 0


# A system message inside ``messages``: Claude Code 2.1.197 asked for ``auto`` or a router
# model id sends the Agent tool's agent types so, with the beta flag
# mid-conversation-system-2026-04-07. A Claude model gets it as sent, a chat model in place.

AGENT_TYPES = "Available agent types for the Agent tool:\n- Explore: read-only search agent"
TURNS = [
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {"role": "system", "content": AGENT_TYPES},
]


def test_a_system_turn_inside_messages_is_answered_by_both_kinds_of_upstream(
    claude, name, upstream, anthropic_upstream
):
    answer = claude.messages.create(
        model=name,
        max_tokens=50,
        system="You are Claude Code.",
        messages=TURNS,
        extra_headers={"anthropic-beta": MID_CONVERSATION_SYSTEM},
    )

    assert answer.content[0].text == UPSTREAMS[name][1]
    (sent,) = sent_bodies(name, upstream, anthropic_upstream)
    if native(name):
        turn = sent["messages"][1]
        assert turn["role"] == "system"
        assert [b["text"] for b in turn["content"]] == [AGENT_TYPES]
    else:
        roles = [(m["role"], m["content"]) for m in sent["messages"]]
        assert roles == [
            ("system", "You are Claude Code."),
            ("user", "hi"),
            ("system", AGENT_TYPES),
        ]


def test_a_system_turn_with_a_tool_result_in_it_is_a_400_naming_it(claude):
    with pytest.raises(anthropic.BadRequestError) as raised:
        claude.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=50,
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "image", "source": {}}]},
            ],
        )
    assert "messages[1].content: a system message holds text blocks only" in str(raised.value)


def _long_tool_session(rounds: int = 8, chars: int = 25_000) -> list:
    """A conversation over the budget: pinch compresses its oldest tool results."""
    turns = [{"role": "user", "content": "read every file"}]
    for k in range(rounds):
        turns.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{k}", "name": "read_file", "input": {}}
                ],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "y" * chars}
        turns.append({"role": "user", "content": [result]})
    return turns


def test_count_tokens_counts_the_pruned_prompt_and_the_answers_usage_agrees(claude, name):
    turns = _long_tool_session()
    count = claude.messages.count_tokens(model=name, messages=turns, tools=TOOLS)
    raw = claude.messages.with_raw_response.create(
        model=name, max_tokens=20, messages=turns, tools=TOOLS
    )

    headers, answer = raw.headers, raw.parse()
    pruned = int(headers["X-Router-Pinch-Final-Tokens"])
    assert pruned < int(headers["X-Router-Pinch-Original-Tokens"])  # pinch acted
    if native(name):
        # Claude's own count of what is sent, and what it then billed: the same prompt.
        usage = answer.usage
        billed = (
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        )
        assert count.input_tokens == billed
    else:
        # The router's measure of the pruned prompt, the one routing used for the answer.
        assert count.input_tokens == int(headers["X-Router-Measured-Tokens"])
