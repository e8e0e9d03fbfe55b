"""The replay on a session's recorded clock: a request after a cold gap is a full write.

Sessions 101-103 of the corpus carry ``assistant_times``; the loader reads
them, the replay plans each request at its time (pinch knows the gap, as the
router does from its ledger), and prices a request after a gap longer than
the model's cache lifetime as written in full, with pinch and without.
"""

import json

import pytest

from metrics.replay import cli_overrides, replay_config
from routing.replay.corpus import Session, load_session
from routing.replay.sessions import CachePrices, replay

pytestmark = pytest.mark.django_db

PRICES = CachePrices(read_multiplier=0.1, write_multiplier=1.25)


def _round(i, text):
    call = {"id": f"c{i}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": f"step {i}", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": text},
    ]


def _session(times):
    messages = [{"role": "system", "content": "s" * 3000}, {"role": "user", "content": "go"}]
    for i in range(6):
        messages += _round(i, f"{i} " + "x" * 6000)
    messages.append({"role": "assistant", "content": "done"})
    turns = [t for t, m in enumerate(messages) if m["role"] == "assistant"]
    return Session("timed.json", messages, times=dict(zip(turns, times, strict=True)))


def _records(session, cold_gaps=True, **options):
    overrides = cli_overrides(**options)
    return replay([session], replay_config(overrides), prices=PRICES, cold_gaps=cold_gaps).records


def test_assistant_times_are_read_as_seconds_by_message_index(tmp_path, corpus_dir):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "messages": [{"role": "user", "content": "hi"}],
                "assistant_times": {
                    "1": "2026-01-17T01:09:05.862Z",
                    "3": "2026-01-17T01:19:05.862Z",
                    "x": "?",
                },
            }
        )
    )
    times = load_session(path).times
    assert set(times) == {1, 3}
    assert times[3] - times[1] == pytest.approx(600)
    assert load_session(corpus_dir / "101.json").times  # the corpus sessions carry them


def test_a_request_after_a_gap_longer_than_the_cache_lifetime_is_written_in_full(default_config):
    # Five-minute cache at (0.1, 1.25); a 20-minute pause before the fourth request.
    times = [0, 10, 20, 1220, 1230, 1240, 1250]
    records = _records(_session(times), payback=False, budget_tokens=100000)
    cold = [r for r in records if r.cold]
    assert [r.turn for r in cold] == [records[3].turn]
    (gap,) = cold
    assert gap.cached_tokens == 0 and gap.baseline_cached_tokens == 0
    assert gap.uncached_tokens == gap.final_tokens
    # Without the times the same request reads its prefix.
    warm = _records(_session(times), cold_gaps=False, payback=False, budget_tokens=100000)
    assert not any(r.cold for r in warm)
    assert warm[3].cached_tokens > 0


def test_pinch_takes_the_free_step_a_cold_gap_offers(default_config):
    # Steps that must be repaid are refused (an enormous margin); the cold one is free.
    times = [0, 10, 20, 30, 1230, 1240, 1250]
    strict = ["pinch.payback.min_payback=1000", "pinch.keep_last_tool_results=2"]
    cold = _records(_session(times), budget_tokens=2000, settings=strict)
    warm = _records(_session(times), cold_gaps=False, budget_tokens=2000, settings=strict)
    stepped = [r.turn for r in cold if r.compressed and r.prefix_match < r.previous_len]
    assert stepped == [cold[4].turn]
    assert cold[4].cold and cold[4].final_tokens < cold[4].original_tokens
    assert sum(r.final_tokens for r in cold) < sum(r.final_tokens for r in warm)
