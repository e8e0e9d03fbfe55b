"""Auto per conversation: the task's tier at a start, held in the tool loop, changed when it pays.

End to end with the official anthropic SDK over real HTTP, with a body the
size and shape of the real Claude Code's (tests/support/claude_code_payload.py)
asked for as ``claude-opus-4-6`` and aliased to auto; and the rule itself,
table by table (routing.session_routing.choose).
"""

from datetime import timedelta

import anthropic
import pytest

from routing.classifier import Classification
from routing.config import validate_config
from routing.models import RouteDecision
from routing.session_routing import RouteState, change_pays, choose
from tests.support.chat_turns import tool_call_round
from tests.support.claude_code_payload import claude_code_body, tool_round, user_turn
from tests.support.config import ANTHROPIC_KEY, ANTHROPIC_KEY_ENV, anthropic_config, claude_model

HARD_TASK = (
    "Refactor the session store's architecture to remove the race condition between the "
    "expiry sweep and concurrent writes; design the migration so it can be rolled back."
)
TIERED = [
    claude_model("claude-small", tier="easy", price=1.0, cache={"ttl": "5m"}),
    claude_model("claude-mid", tier="medium", price=3.0, cache={"ttl": "5m"}),
    claude_model("claude-big", tier="hard", price=15.0, cache={"ttl": "5m"}),
]


def tiered_config(anthropic_url="http://127.0.0.1:9", openai_url="http://127.0.0.1:9/v1"):
    data = anthropic_config(anthropic_url, openai_url)
    # Only the three Claude models may be routed to.
    for model in data["models"]:
        model["routable"] = False
    data["models"] += [dict(m) for m in TIERED]
    data["aliases"] = {"claude-*": "auto"}
    return data


@pytest.fixture
def claude(live_server, upstream, anthropic_upstream, write_config, monkeypatch, api_key):
    from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV

    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_KEY)
    write_config(tiered_config(anthropic_upstream.base_url, upstream.base_url))
    return anthropic.Anthropic(base_url=live_server.url, api_key=api_key, max_retries=0, timeout=20)


def send(claude, body):
    reply = claude.messages.with_raw_response.create(**body)
    return reply.headers, RouteDecision.objects.order_by("-id").first()


@pytest.mark.django_db(transaction=True)
def test_a_trivial_claude_code_request_goes_below_the_hard_tier_and_a_hard_one_to_it(claude):
    headers, row = send(claude, claude_code_body("say hi"))
    assert row.measured_tokens > 35_000  # the harness: system prompt, tools, reminders
    assert (row.tier, row.chosen_model, row.route_reason) == ("easy", "claude-small", "start")
    assert headers["x-router-route"] == "start"

    _, row = send(claude, claude_code_body(HARD_TASK, session="s-2"))
    assert (row.tier, row.chosen_model) == ("hard", "claude-big")


@pytest.mark.django_db(transaction=True)
def test_a_conversation_keeps_its_model_through_the_tool_loop_and_changes_when_the_user_speaks(
    claude,
):
    body = claude_code_body(HARD_TASK)
    rows = [send(claude, body)[1]]
    for n in range(3):
        body = tool_round(body, n, output=f"result {n} " * 400)
        rows.append(send(claude, body)[1])
    assert {r.chosen_model for r in rows} == {"claude-big"}
    assert [r.route_reason for r in rows] == ["start", "held", "held", "held"]
    assert {r.classifier for r in rows[1:]} == {"session"}  # nothing classified in the loop

    # The user asks for something easy: the warm hard model reads the prompt at
    # $1.50/M on every turn to come, the cold small one writes it once at
    # $1.25/M and reads at $0.10/M: the change pays.
    body = user_turn(body, "thanks, now say hi")
    _, row = send(claude, body)
    assert (row.route_reason, row.chosen_model, row.tier) == ("changed", "claude-small", "easy")
    _, row = send(claude, tool_round(body, 9))
    assert (row.route_reason, row.chosen_model) == ("held", "claude-small")


@pytest.mark.django_db(transaction=True)
def test_background_work_goes_to_the_cheapest_tier_and_leaves_the_conversation_alone(claude):
    body = claude_code_body(HARD_TASK)
    send(claude, body)
    compact = user_turn(
        body,
        "Your task is to create a detailed summary of the conversation so far, paying "
        "close attention to the user's explicit requests.",
    )
    headers, row = send(claude, compact)
    assert (row.background, row.route_reason, row.tier) == ("compaction", "background", "easy")
    assert headers["x-router-background"] == "compaction"
    _, row = send(claude, tool_round(body, 1))
    assert (row.route_reason, row.chosen_model) == ("held", "claude-big")

    small = {**claude_code_body("Generate a title"), "model": "claude-haiku-4-5"}
    _, row = send(claude, small)
    assert (row.background, row.chosen_model) == ("small_model", "claude-small")


CONFIG = validate_config(tiered_config())
BIG, MID, SMALL = (CONFIG.model(name) for name in ("claude-big", "claude-mid", "claude-small"))


def conversation(typed_turns: int, loop: int = 0):
    messages = [{"role": "system", "content": "agent"}]
    for k in range(typed_turns):
        messages += [{"role": "user", "content": f"task {k}"}]
        messages += [{"role": "assistant", "content": "ok"}]
    for k in range(loop):
        messages += tool_call_round(k)
    return messages[:-1] if not loop else messages


def decide(messages, state, tier, now=1000.0, tokens=50_000, config=CONFIG):
    return choose(
        "claude-opus-4-6",
        messages,
        [{"type": "function", "function": {"name": "f"}}],
        tokens,
        config,
        state,
        now,
        lambda: Classification(tier, "heuristic"),
        lambda m: m.prompt_price,
    )


@pytest.mark.parametrize(
    "state_tier, classified, seconds_ago, tokens, reason, tier",
    [
        ("hard", "easy", 10, 50_000, "changed", "easy"),  # pays: see the HTTP test
        ("easy", "hard", 10, 50_000, "upgraded", "hard"),  # the task needs it
        ("hard", "easy", 600, 50_000, "cold", "easy"),  # the 5-minute cache is gone anyway
        ("hard", "easy", 10, 500, "cold", "easy"),  # under the shortest cached prompt
        ("hard", "hard", 10, 50_000, "kept", "hard"),
    ],
)
def test_a_new_task_changes_model_only_when_it_pays_or_the_cache_is_cold(
    state_tier, classified, seconds_ago, tokens, reason, tier
):
    model = {"hard": BIG, "easy": SMALL}[state_tier]
    state = RouteState(state_tier, model.id, 1, 1000.0 - seconds_ago)
    choice = decide(conversation(2), state, classified, tokens=tokens)
    assert (choice.reason, choice.tier) == (reason, tier)


def test_a_cheaper_model_that_would_not_repay_its_cold_prefix_is_not_taken():
    # $3 read at 0.1 against $2.50 written at 1.25: the warm model stays cheaper.
    data = tiered_config()
    next(m for m in data["models"] if m["id"] == "claude-small")["prompt_price"] = 2.5
    config = validate_config(data)
    assert not change_pays(config.model("claude-mid"), config.model("claude-small"), 1, config)
    state = RouteState("medium", "claude-mid", 1, 990.0)
    choice = decide(conversation(2), state, "easy", config=config)
    assert (choice.reason, choice.hold, choice.tier) == ("kept", "claude-mid", "medium")


def test_inside_the_tool_loop_nothing_is_classified():
    def refuse():
        raise AssertionError("classified inside the tool loop")

    state = RouteState("hard", "claude-big", 1, 999.0)
    choice = choose(
        "claude-opus-4-6",
        conversation(1, loop=3),
        [{"type": "function"}],
        50_000,
        CONFIG,
        state,
        1000.0,
        refuse,
        lambda m: m.prompt_price,
    )
    assert (choice.reason, choice.hold, choice.classifier) == ("held", "claude-big", "session")


def test_the_routing_state_is_shared_through_redis_and_a_broken_one_is_a_start(caplog):
    import uuid

    from routing.prefix_probe import PrefixProbe
    from tests.routing.test_prefix_probe import redis_url

    url, key = redis_url(), uuid.uuid4().hex
    worker_a, worker_b = PrefixProbe(url), PrefixProbe(url)
    state = RouteState("hard", "claude-big", 3, 1234.5)
    worker_a.save_route(key, state.as_json())
    assert RouteState.from_json(worker_b.load_route(key)) == state
    worker_a.save_route(key, "[not a state")
    assert RouteState.from_json(worker_b.load_route(key)) is None

    down = PrefixProbe("redis://127.0.0.1:1/0")
    down.save_route("k", state.as_json())
    assert RouteState.from_json(down.load_route("k")) == state
    assert "route_state_redis_unavailable" in caplog.text


def test_a_worker_reads_the_rows_only_when_the_request_does_not_follow_on_from_its_memory():
    from routing.prefix_probe import PrefixProbe
    from routing.session_routing import load_state

    mine = RouteState("easy", "claude-small", 1, 1000.0, turns=4)
    theirs = RouteState("hard", "claude-big", 9, 1090.0, turns=9)
    reads = []

    def recorded(key):
        reads.append(key)
        return theirs.as_json()

    worker = PrefixProbe("")
    worker.save_route("c1", mine.as_json())
    # The next request of this worker's own tool loop: its memory, no query.
    assert load_state(worker, "c1", 5, recorded) == mine and reads == []
    assert load_state(worker, "c1", 4, recorded) == mine and reads == []  # a retry
    # Five turns on: another worker served the rest, and recorded it.
    assert load_state(worker, "c1", 10, recorded) == theirs and reads == ["c1"]
    # Nothing in memory (a start, or a conversation another worker began).
    assert load_state(worker, "c2", 10, recorded) == theirs
    # A replay reads no rows.
    assert load_state(worker, "c1", 10, None) == mine


def test_background_work_carries_the_state_on_as_it_was_with_its_turns():
    from dataclasses import replace

    from routing.session_routing import SessionChoice, next_state

    state = RouteState("hard", "claude-big", 1, 999.0, turns=4)
    title = SessionChoice("easy", "background", "background", background="title")
    small = validate_config(tiered_config()).model("claude-small")
    # Its row and the store keep the conversation's state, so the next request follows on.
    assert next_state(title, small, 1200.0, 5, state) == replace(state, turns=5)
    # None yet: an empty one, read as a start, but known to follow on.
    empty = next_state(title, small, 1200.0, 5, None)
    assert (empty.tier, empty.model, empty.turns) == ("", "", 5)
    assert decide(conversation(1, loop=2), empty, "hard").reason == "start"


@pytest.mark.django_db
def test_the_state_read_back_from_the_conversation_is_the_latest_a_request_left(
    monkeypatch, caplog
):
    from django.db import OperationalError

    from routing.conversation_state import RecordedState, latest
    from routing.models import Conversation
    from routing.recording.inserts import insert_decisions
    from tests.support.decisions import columns, decision

    earlier = RouteState("easy", "claude-small", 1, 1000.0)
    later = RouteState("hard", "claude-big", 5, 1060.0)
    insert_decisions(
        [
            columns(
                decision(age=timedelta(seconds=30), conversation="c1"), route_state=later.as_json()
            ),
            # Recorded late (a spooled row): it counts, but leaves the later state alone.
            columns(
                decision(age=timedelta(seconds=60), conversation="c1"),
                route_state=earlier.as_json(),
            ),
            columns(decision(conversation="c2"), route_state=earlier.as_json()),
            columns(decision(conversation="c3"), route_state=""),  # background work, no state yet
        ]
    )

    def recorded_state(key):
        return RecordedState().read(key, "route_state")

    assert RouteState.from_json(recorded_state("c1")) == later
    assert recorded_state("c3") is None and recorded_state("c4") is None
    # This worker's own memory may be older than what another worker recorded since.
    assert latest(earlier, later) == latest(later, None) == later
    assert latest(None, None) is None

    def broken(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(Conversation.objects, "filter", broken)
    assert recorded_state("c1") is None  # a start, never a failed request
    assert "route_state_unread reason=OperationalError" in caplog.text


@pytest.mark.django_db
def test_a_request_reads_its_conversation_once_for_its_routing_ledger_and_fingerprints(
    django_assert_num_queries,
):
    from routing.conversation_state import RecordedState
    from routing.recording.inserts import insert_decisions
    from tests.support.decisions import columns, decision

    state = RouteState("easy", "claude-small", 1, 1000.0).as_json()
    insert_decisions(
        [columns(decision(conversation="c1"), route_state=state, payload_fingerprints="0123abcd")]
    )
    row = RecordedState()
    with django_assert_num_queries(1):
        assert row.reader("route_state")("c1") == state
        assert row.reader("pinch_ledger")("c1") is None
        assert row.reader("payload_fingerprints")("c1") == "0123abcd"
