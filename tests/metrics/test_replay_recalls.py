"""pinch_replay and recall: what one recall brings back, what it costs, and the payloads as sent."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from metrics.recall_quality import RecallSums, recall_figures
from metrics.replay import PAYLOAD_KEYS, cli_overrides, replay_config
from pinch.recall import NOTE
from routing.replay.corpus import Session, load_sessions
from routing.replay.quality import replay_quality
from routing.replay.recalls import CALL_TOKENS
from routing.replay.sessions import PRICE_MODELS, CachePrices, replay

pytestmark = pytest.mark.django_db

NAME = "src/app/settings_local.py"
# A result pinch's budget prune replaces with a placeholder (under max_summarize_chars),
# the only place the context held NAME, which the agent's last message then uses.
RESULT = f"config lives in {NAME}\n" + "x" * 2900
MESSAGES = [
    {"role": "system", "content": "s" * 3000},
    {"role": "user", "content": "u" * 300},
    {
        "role": "assistant",
        "content": "a" * 30,
        "tool_calls": [
            {"id": call, "type": "function", "function": {"name": "cat", "arguments": "{}"}}
            for call in ("c1", "c2")
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": RESULT},
    {"role": "tool", "tool_call_id": "c2", "content": "y" * 300},
    {"role": "assistant", "content": f"I will edit {NAME} now"},
]
# Over a 2,000-token budget at turn 5, with only the last result protected.
PRUNE = {"budget_tokens": "2000", "keep_last_tool_results": "1", "window_step": "none"}
OPTIONS = (
    "--no-payback",
    "--budget-tokens",
    "2000",
    "--keep-last-tool-results",
    "1",
    "--window-step",
    "none",
)


def _replay(*settings):
    overrides = cli_overrides(payback=False, settings=list(settings), **PRUNE)
    return replay([Session("hand.json", MESSAGES)], replay_config(overrides))


def test_a_reference_pinch_took_out_is_one_recall_away_and_the_round_trip_is_paid(
    default_config,
):
    result = _replay()

    last = result.records[-1]
    assert last.compressed == [3] and last.references_lost == [NAME]
    assert (last.references_recallable, last.recalls) == (1, 1)
    assert last.recalled_tokens == len(RESULT) // 3
    # The round trip: the payload again (read), the call and the whole result (written).
    assert last.recall_cached_tokens == last.final_tokens
    assert last.recall_uncached_tokens == CALL_TOKENS + len(RESULT) // 3
    prices = CachePrices()
    payload_only = prices.cost(last.cached_tokens, last.uncached_tokens)
    round_trip = prices.cost(last.final_tokens, CALL_TOKENS + len(RESULT) // 3)
    assert last.cost(prices) == pytest.approx(payload_only + round_trip)
    assert result.sessions[0].recall_store_bytes == len(RESULT.encode())


def test_with_recall_off_nothing_is_recallable_and_nothing_is_paid_for_it(default_config):
    result = _replay("pinch.recall.enabled=false")

    last = result.records[-1]
    assert last.references_lost == [NAME]
    assert (last.references_recallable, last.recalls, last.recall_uncached_tokens) == (0, 0, 0)
    prices = CachePrices()
    assert last.cost(prices) == pytest.approx(prices.cost(last.cached_tokens, last.uncached_tokens))
    assert result.sessions[0].recall_store_bytes == 0


@pytest.fixture
def session_file(tmp_path):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"messages": MESSAGES}))
    return str(path)


def _command(*options):
    stdout = StringIO()
    call_command("pinch_replay", *options, stdout=stdout, stderr=StringIO())
    return stdout.getvalue()


def test_the_verdict_and_the_table_say_what_is_one_recall_away(default_config, session_file):
    stdout = _command(session_file, *OPTIONS, "--price-per-1m", "3", "--table")

    verdict, settings = stdout.splitlines()[:2]
    assert "1 left the payload, 1 of them one recall away (1 recall, in the cost)" in verdict
    assert settings.endswith(" recall=on")
    header = next(line for line in stdout.splitlines() if line.startswith("session"))
    row = next(line for line in stdout.splitlines() if line.startswith("hand.json"))
    cells = dict(zip(_columns(header), row.split(), strict=False))
    assert cells["refs kept"] == "0.0%" and cells["in reach"] == "100.0%"
    assert cells["recalls"] == "1"
    assert cells["recall store"] == f"{len(RESULT.encode()) / 1024:.0f}KB"


def _columns(header):
    # Column names hold single spaces; columns are two or more apart.
    return [name.strip() for name in header.split("  ") if name.strip()]


def test_payloads_holds_every_request_as_pinch_sends_it_once_per_price_model(
    default_config, session_file, tmp_path
):
    out = tmp_path / "payloads.jsonl"

    _command(session_file, *OPTIONS, "--price-per-1m", "3", "--payloads", str(out))

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(tuple(line) == PAYLOAD_KEYS for line in lines)
    assert [(line["price_model"], line["turn"]) for line in lines] == [
        (prices.label, turn) for prices in PRICE_MODELS for turn in (2, 5)
    ]
    for line in lines:
        assert line["conversation"] == "hand.json" and line["tools"] is None
        sent = line["messages"]
        if line["turn"] == 2:
            assert sent == MESSAGES[:2]
        else:
            # The old result as pinch sends it: a placeholder and its recall handle.
            note = NOTE.format(handle="r3")
            assert sent[3]["content"] == f"[cat: result omitted]\n{note}"
            assert sent[:3] + sent[4:] == MESSAGES[:3] + MESSAGES[4:5]


def test_with_pinch_off_the_payloads_are_the_sessions_requests_byte_for_byte(
    default_config, session_file, tmp_path
):
    out = tmp_path / "payloads.jsonl"

    _command(session_file, "--no-pinch", "--payloads", str(out))

    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 * (1 + len(PRICE_MODELS))  # the config's prices, then the three
    for line in lines:
        assert json.dumps(line["messages"]) == json.dumps(MESSAGES[: line["turn"]])


def test_the_quality_table_sets_the_recalls_against_the_natural_repeat_rate(
    default_config, corpus_dir
):
    paths = [str(corpus_dir / name) for name in ("001.json", "020.json", "023.json")]
    options = ("--no-payback", "--budget-tokens", "3000", "--window-step", "none")

    stdout = _command(*paths, *options, "--table").splitlines()

    overrides = cli_overrides(payback=False, budget_tokens="3000", window_step="none")
    sessions = load_sessions(paths)
    result = replay(sessions, replay_config(overrides))
    total = replay_quality(sessions, result)[-1]
    recalls = sum(record.recalls for record in result.records)
    assert recalls and total.recalls == recalls
    quality_total = [line for line in stdout if line.startswith("total")][-1]
    assert quality_total.endswith(f"{recalls:,}/{total.compressed_seen:,}")
    sums = RecallSums(
        recalls=recalls,
        compressed_seen=total.compressed_seen,
        holdout_repeats=total.natural_repeats,
        holdout_seen=total.natural_seen,
    )
    assert stdout[-1] == f"recalls: {recall_figures(sums)['verdict']}"
