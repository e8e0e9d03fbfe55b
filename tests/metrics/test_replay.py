"""manage.py pinch_replay: real sessions through the router's planning path, nothing recorded."""

import itertools
import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError

from metrics.replay import REPLAY_KEYS, cli_overrides, render_table, replay_config
from pinch.lines import mentioned_tokens
from pinch.recall import NOTE
from routing.models import RouteDecision
from routing.replay.corpus import Session, load_sessions
from routing.replay.quality import replay_quality
from routing.replay.sessions import PRICE_MODELS, CachePrices, ReplayResult, TurnRecord, replay
from tests.support.claude_logs import SESSION, review_session, write_log

pytestmark = pytest.mark.django_db

# Small sessions of three different agents (mini-swe-agent, SWE-agent, OpenHands),
# ~20k-50k tokens at their longest: a budget of a few thousand tokens prunes them.
FILES = ("001.json", "020.json", "023.json")
BUDGET = "8000"

# Table cells (table_row): name, requests, errors, tokens w/o, with, saved,
# cost w/o, cost with, cost saved, pruned, relevance, prefix kept, refs kept,
# in reach, recalls, recall store, then one cost ratio per price model.
SAVED, COST_WITHOUT, COST_WITH, COST_SAVED, PRUNED, RELEVANCE, PREFIX, REFS_KEPT = range(5, 13)
FIRST_RATIO = REFS_KEPT + 4


@pytest.fixture
def paths(corpus_dir):
    return [str(corpus_dir / name) for name in FILES]


@pytest.fixture
def run(default_config, paths, tmp_path):
    """run(*options) -> (JSON lines as dicts, stdout, stderr) for the three sessions."""
    runs = iter(range(1000))

    def run_replay(*options, files=None):
        # These tests hold the budget prune's contracts; the payback steps ask for --payback.
        if "--payback" not in options:
            options = (*options, "--no-payback")
        out = tmp_path / f"replay-{next(runs)}.jsonl"
        stdout, stderr = StringIO(), StringIO()
        call_command(
            "pinch_replay",
            *(files or paths),
            "--json",
            str(out),
            "--table",
            *options,
            stdout=stdout,
            stderr=stderr,
        )
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        return lines, stdout.getvalue(), stderr.getvalue()

    return run_replay


def assistant_turns(corpus_dir, name):
    messages = json.loads((corpus_dir / name).read_text())["messages"]
    return [t for t, m in enumerate(messages) if m["role"] == "assistant" and t > 0]


def table_row(stdout, name):
    """The cells of the table row whose first cell is ``name``, numbers without commas."""
    for line in stdout.splitlines():
        cells = line.split()
        if cells and cells[0] == name:
            return [cell.replace(",", "") for cell in cells]
    raise AssertionError(f"no {name!r} row in:\n{stdout}")


def test_it_writes_one_json_line_per_assistant_turn_with_the_contract_keys(run, corpus_dir):
    lines, _, _ = run("--budget-tokens", BUDGET)

    expected = [(name, t) for name in FILES for t in assistant_turns(corpus_dir, name)]
    assert [(line["conversation"], line["turn"]) for line in lines] == expected
    types = {
        "conversation": str,
        "turn": int,
        "original_tokens": int,
        "final_tokens": int,
        "compressed": list,
        "capped": list,
        "relevance_used": bool,
        "prefix_match": int,
        "references": int,
        "references_kept": int,
        "references_lost": list,
        "references_recallable": int,
        "recalls": int,
        "recalled_tokens": int,
    }
    assert tuple(types) == REPLAY_KEYS
    for line in lines:
        assert list(line) == list(REPLAY_KEYS)
        for key, kind in types.items():
            assert type(line[key]) is kind, (key, line)
        assert all(type(i) is int for i in line["compressed"] + line["capped"])
        assert all(type(token) is str for token in line["references_lost"])
    assert any(line["compressed"] for line in lines), "an 8k budget must prune these sessions"


def test_table_totals_are_the_sums_of_the_json_lines(run):
    lines, stdout, _ = run("--budget-tokens", BUDGET)

    for name in (*FILES, "total"):
        mine = [line for line in lines if name in ("total", line["conversation"])]
        row = table_row(stdout, name)
        original = sum(line["original_tokens"] for line in mine)
        final = sum(line["final_tokens"] for line in mine)
        assert row[1:5] == [str(len(mine)), "0", str(original), str(final)]
        assert row[SAVED] == f"{(original - final) / original * 100:.1f}%"
        pruned = sum(1 for line in mine if line["compressed"] or line["capped"])
        assert row[PRUNED] == f"{pruned / len(mine) * 100:.1f}%"


def test_with_pinch_off_nothing_is_saved_and_the_prefix_is_whole(run, corpus_dir):
    lines, stdout, _ = run("--no-pinch", "--budget-tokens", BUDGET)

    assert len(lines) == sum(len(assistant_turns(corpus_dir, name)) for name in FILES)
    for line in lines:
        assert line["original_tokens"] == line["final_tokens"] > 0
        assert line["compressed"] == line["capped"] == []
        assert line["relevance_used"] is False
    row = table_row(stdout, "total")
    assert [row[SAVED], *row[PRUNED : PREFIX + 1]] == ["0.0%", "0.0%", "0.0%", "100.0%"]
    # Nothing taken out: nothing to recall, and the recall store stays empty.
    assert row[REFS_KEPT:FIRST_RATIO] == ["100.0%", "100.0%", "0", "0KB"]
    assert row[FIRST_RATIO:] == ["1.000x"] * 4  # the config's prices, then three models
    assert "pinch disabled" in stdout


def test_a_lower_budget_saves_more(run):
    def saved(lines):
        return sum(line["original_tokens"] - line["final_tokens"] for line in lines)

    generous, _, _ = run("--budget-tokens", "12000")
    tight, _, _ = run("--budget-tokens", "3000")
    assert [line["original_tokens"] for line in tight] == [
        line["original_tokens"] for line in generous
    ]
    assert saved(tight) > saved(generous) > 0


def test_no_relevance_never_uses_relevance_ordering(run):
    lines, stdout, _ = run("--budget-tokens", "3000", "--no-relevance")

    assert lines and not any(line["relevance_used"] for line in lines)
    assert table_row(stdout, "total")[RELEVANCE] == "0.0%"
    assert "relevance=off" in stdout


def test_relevance_ordering_is_used_on_pruned_turns_when_on(run):
    lines, _, _ = run("--budget-tokens", "3000", "--relevance")

    assert any(line["relevance_used"] for line in lines)


def test_prefix_match_never_exceeds_the_previous_payload(run):
    lines, stdout, _ = run("--budget-tokens", "3000", "--keep-last-tool-results", "2")

    previous = {}
    for line in lines:
        # The previous request of a session was messages[:previous turn]: that many messages.
        assert 0 <= line["prefix_match"] <= previous.get(line["conversation"], 0)
        previous[line["conversation"]] = line["turn"]
    # Pruning rewrites messages that the previous turn sent verbatim, so some
    # turn keeps less than its whole predecessor.
    assert any(
        line["prefix_match"] < prev["turn"]
        for prev, line in itertools.pairwise(lines)
        if prev["conversation"] == line["conversation"]
    )
    kept = table_row(stdout, "total")[PREFIX]
    assert kept != "-" and float(kept.rstrip("%")) < 100


def test_replay_records_nothing_in_the_database(run):
    run("--budget-tokens", "3000")
    run("--no-pinch")

    assert RouteDecision.objects.count() == 0


def test_it_reads_every_json_file_of_a_directory(run, corpus_dir, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in FILES[:2]:
        (folder / name).symlink_to(corpus_dir / name)
    (folder / "notes.txt").write_text("not a session")

    lines, _, stderr = run(files=[str(folder)])

    assert sorted({line["conversation"] for line in lines}) == list(FILES[:2])
    # One run per price model (the config's and three others), one bar over all of
    # them, counting requests, not requests times runs.
    n = len(lines)
    assert stderr.rstrip().endswith(f"] {n:,}/{n:,} requests, price model 4 of 4")
    assert f"/{4 * n:,}" not in stderr


def test_it_replays_a_folder_of_claude_code_session_logs(run, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    write_log(folder / f"{SESSION}.jsonl", review_session())

    lines, stdout, _ = run("--by-family", files=[str(folder)])

    assert [(line["conversation"], line["turn"]) for line in lines] == [
        (f"{SESSION}.jsonl", 1),
        (f"{SESSION}.jsonl", 4),
        (f"{SESSION}.jsonl", 7),
    ]
    assert table_row(stdout, "Claude")[1:3] == ["Code", "3"]  # the family: 3 requests


def test_options_outside_the_config_schema_are_command_errors_naming_the_key(run):
    cases = {
        ("--budget-tokens", "0"): "pinch.budget_tokens",
        ("--budget-tokens", "lots"): "pinch.budget_tokens",
        ("--keep-last-turns", "-1"): "pinch.keep_last_turns",
        ("--keep-last-tool-results", "0"): "pinch.keep_last_tool_results",
        ("--keep-last-tool-results", "all"): "pinch.keep_last_tool_results",
    }
    for options, key in cases.items():
        with pytest.raises(CommandError, match=key.replace(".", r"\.")):
            run(*options)


def test_bad_paths_and_unknown_models_are_command_errors(run, tmp_path, paths):
    with pytest.raises(CommandError, match="no such file"):
        run(files=[str(tmp_path / "missing.json")])
    (tmp_path / "odd.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(CommandError, match="odd.json: not a conversation file"):
        run(files=[str(tmp_path / "odd.json")])
    with pytest.raises(CommandError, match="unknown model 'gpt-9'"):
        run("--model", "gpt-9")


def test_a_database_not_yet_migrated_is_a_command_error_saying_to_migrate(run, monkeypatch):
    def no_table():
        raise OperationalError("no such table: routing_configoverride")

    monkeypatch.setattr("metrics.replay.stored_overrides", no_table)
    with pytest.raises(CommandError, match=r"no such table.*run `python manage.py migrate` first"):
        run()


def test_a_pinned_model_replays_the_passthrough_path(run):
    lines, stdout, _ = run("--model", "gpt-4.1-mini", "--budget-tokens", BUDGET)

    assert any(line["compressed"] for line in lines)
    assert "model=gpt-4.1-mini" in stdout


def test_requests_the_router_refuses_are_counted_and_the_replay_goes_on(
    write_default_config, corpus_dir
):
    # Every window at 8k tokens and pinch off: the long turns of 001 fit no model.
    write_default_config(
        {
            "pinch.enabled": False,
            "models": [
                {"id": "tiny", "provider": "local", "tier": "easy", "context_window": 8000},
                {"id": "tiny-hard", "provider": "local", "tier": "hard", "context_window": 8000},
            ],
        }
    )
    sessions = load_sessions([corpus_dir / "001.json"])

    result = replay(sessions, replay_config({}))

    turns = assistant_turns(corpus_dir, "001.json")
    assert result.errors and result.records
    assert len(result.errors) + len(result.records) == len(turns)
    assert {error.status for error in result.errors} == {400}
    assert result.sessions[0].errors == len(result.errors)
    assert result.total.requests == len(result.records)
    assert RouteDecision.objects.count() == 0


def test_refused_requests_are_reported_on_stderr(write_default_config, paths):
    write_default_config(
        {
            "pinch.enabled": False,
            "models": [{"id": "tiny", "provider": "local", "tier": "easy", "context_window": 8000}],
        }
    )
    stdout, stderr = StringIO(), StringIO()
    call_command("pinch_replay", paths[0], "--table", stdout=stdout, stderr=stderr)

    assert "request(s) refused by the router" in stderr.getvalue()
    assert "001.json turn" in stderr.getvalue() and ": 400 " in stderr.getvalue()
    errors = int(table_row(stdout.getvalue(), "total")[2])
    assert errors > 0


# --- The cache-aware cost (table only; the JSON lines are unchanged) ---


def dollars(amount):
    return f"${amount:.2f}"


def test_with_pinch_off_the_cost_with_pinch_is_the_baseline(run, default_config, paths):
    _, stdout, _ = run("--no-pinch", "--budget-tokens", BUDGET)

    for name in (*FILES, "total"):
        row = table_row(stdout, name)
        assert row[COST_WITH] == row[COST_WITHOUT] != "$0.00"
        assert row[COST_SAVED] == "0.0%"
    result = replay(load_sessions(paths), replay_config(cli_overrides(pinch=False)))
    prices = CachePrices()
    for record in result.records:
        assert record.cached_tokens == record.baseline_cached_tokens
        assert record.uncached_tokens == record.baseline_uncached_tokens
        assert record.cost(prices) == record.baseline_cost(prices)


def _call(call_id, name="cat"):
    return [{"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]


def recall_note(index: int) -> str:
    return NOTE.format(handle=f"r{index}")


def _hand_session(*messages):
    return Session("hand.json", [{"role": role, **fields} for role, fields in messages])


def _hand_replay(session, **options):
    # The window slides one result a turn unless a test says otherwise.
    options = {"window_step": "none", **options}
    overrides = cli_overrides(relevance=False, payback=False, **options)
    return replay([session], replay_config(overrides))


def test_a_hand_computed_two_turn_session(default_config):
    # Estimated tokens are characters // 3. Turn 2 asks with [S, U]; turn 5 with
    # [S, U, A, X, Y], over the 2,000 budget, and X (older than the last tool
    # result, shorter than max_summarize_chars) becomes "[cat: result omitted]".
    session = _hand_session(
        ("system", {"content": "s" * 3000}),  # 1000
        ("user", {"content": "u" * 300}),  # 100
        ("assistant", {"content": "a" * 30, "tool_calls": _call("c1") + _call("c2")}),  # 10
        ("tool", {"tool_call_id": "c1", "content": "x" * 3000}),  # 1000
        ("tool", {"tool_call_id": "c2", "content": "y" * 300}),  # 100
        ("assistant", {"content": "done"}),
    )
    # The placeholder and, on its own line, the handle to recall X by (pinch/recall.py).
    placeholder = len(f"[cat: result omitted]\n{recall_note(3)}") // 3

    result = _hand_replay(session, budget_tokens=2000, keep_last_tool_results=1)

    first, second = result.records
    assert (first.turn, second.turn) == (2, 5)
    assert second.compressed == [3] and second.prefix_match == 2
    # Turn 2: no previous request, everything is written to the cache.
    assert (first.baseline_cached_tokens, first.baseline_uncached_tokens) == (0, 1100)
    assert (first.cached_tokens, first.uncached_tokens) == (0, 1100)
    # Turn 5: both repeat [S, U]; the new messages are written, X as sent.
    assert (second.baseline_cached_tokens, second.baseline_uncached_tokens) == (1100, 1110)
    assert (second.cached_tokens, second.uncached_tokens) == (1100, 110 + placeholder)

    prices = CachePrices(price_per_1m=3.0, read_multiplier=0.1, write_multiplier=1.25)
    total = result.total
    baseline = (1100 * 1.25 + 1100 * 0.1 + 1110 * 1.25) * 3 / 1e6
    pinched = (1100 * 1.25 + 1100 * 0.1 + (110 + placeholder) * 1.25) * 3 / 1e6
    assert total.baseline_cost(prices) == pytest.approx(baseline)
    assert total.cost(prices) == pytest.approx(pinched)
    assert total.cost_saved_share(prices) == pytest.approx((baseline - pinched) / baseline)
    assert total.cost_saved_share(prices) > 0


def test_rewriting_a_cached_message_costs_the_cache_of_everything_after_it(default_config):
    # The loss DESIGN.md warns about, by hand: X was sent verbatim at turns 4
    # and 6; at turn 8 the request is over the 4,200 budget and X is elided, so
    # [A2, Y, A3] after it, cached until then, are written again.
    session = _hand_session(
        ("system", {"content": "s" * 3000}),  # 1000
        ("user", {"content": "u" * 300}),  # 100
        ("assistant", {"content": "a" * 30, "tool_calls": _call("c1")}),  # 10
        ("tool", {"tool_call_id": "c1", "content": "x" * 3000}),  # 1000
        ("assistant", {"content": "b" * 30, "tool_calls": _call("c2")}),  # 10
        ("tool", {"tool_call_id": "c2", "content": "y" * 6000}),  # 2000
        ("assistant", {"content": "c" * 30, "tool_calls": _call("c3")}),  # 10
        ("tool", {"tool_call_id": "c3", "content": "z" * 300}),  # 100
        ("assistant", {"content": "done"}),
    )
    placeholder = len(f"[cat: result omitted]\n{recall_note(3)}") // 3

    result = _hand_replay(session, budget_tokens=4200, keep_last_tool_results=2)

    assert [r.turn for r in result.records] == [2, 4, 6, 8]
    assert [r.compressed for r in result.records] == [[], [], [], [3]]
    assert [r.prefix_match for r in result.records] == [0, 2, 4, 3]
    assert [(r.baseline_cached_tokens, r.baseline_uncached_tokens) for r in result.records] == [
        (0, 1100),
        (1100, 1010),
        (2110, 2010),
        (4120, 110),
    ]
    last = result.records[-1]
    assert (last.cached_tokens, last.uncached_tokens) == (1110, placeholder + 2120)

    prices = CachePrices()
    baseline = (4230 * 1.25 + 7330 * 0.1) * 3 / 1e6
    pinched = ((6240 + placeholder) * 1.25 + 4320 * 0.1) * 3 / 1e6
    total = result.total
    assert total.original_tokens - total.final_tokens == 1000 - placeholder
    assert total.baseline_cost(prices) == pytest.approx(baseline)
    assert total.cost(prices) == pytest.approx(pinched)
    assert total.cost_saved_share(prices) < 0, "fewer tokens, a bigger bill"
    shown = f"{(baseline - pinched) / baseline:.1%}"  # the table rounds the same share
    assert shown in render_table(result, prices)


def test_cost_totals_are_the_sums_of_the_requests_and_the_sessions(run, default_config, paths):
    _, stdout, _ = run("--budget-tokens", BUDGET, "--price-per-1m", "3")
    overrides = cli_overrides(budget_tokens=BUDGET, payback=False)
    result = replay(load_sessions(paths), replay_config(overrides))
    prices = CachePrices()

    assert [totals.name for totals in result.sessions] == list(FILES)
    for totals in (*result.sessions, result.total):
        mine = [r for r in result.records if totals.name in ("total", r.conversation)]
        baseline = sum(record.baseline_cost(prices) for record in mine)
        pinched = sum(record.cost(prices) for record in mine)
        assert totals.baseline_cost(prices) == pytest.approx(baseline)
        assert totals.cost(prices) == pytest.approx(pinched)
        row = table_row(stdout, totals.name)
        assert row[COST_WITHOUT] == dollars(baseline)
        assert row[COST_WITH] == dollars(pinched)
        assert row[COST_SAVED] == f"{(baseline - pinched) / baseline * 100:.1f}%"
        # Every token is billed once, cached or not.
        assert sum(r.cached_tokens + r.uncached_tokens for r in mine) == totals.final_tokens
        assert (
            sum(r.baseline_cached_tokens + r.baseline_uncached_tokens for r in mine)
            == totals.original_tokens
        )
    total = result.total
    assert total.baseline_cost(prices) == pytest.approx(
        sum(totals.baseline_cost(prices) for totals in result.sessions)
    )
    assert total.cost(prices) == pytest.approx(
        sum(totals.cost(prices) for totals in result.sessions)
    )


def test_the_baseline_cost_follows_from_the_corpus_alone(run, corpus_dir):
    # Without pinch, request t repeats the previous request's messages and adds the rest.
    _, stdout, _ = run("--budget-tokens", BUDGET, "--price-per-1m", "3")

    for name in FILES:
        messages = json.loads((corpus_dir / name).read_text())["messages"]
        tokens = [len(m["content"]) // 3 if isinstance(m["content"], str) else 0 for m in messages]
        cached = uncached = previous = 0
        for t in assistant_turns(corpus_dir, name):
            cached += sum(tokens[:previous])
            uncached += sum(tokens[previous:t])
            previous = t
        expected = (cached * 0.1 + uncached * 1.25) * 3 / 1e6
        assert table_row(stdout, name)[COST_WITHOUT] == dollars(expected)


def test_without_a_cache_or_recalls_the_cost_saved_is_the_tokens_saved(run):
    _, stdout, _ = run(
        "--set",
        "pinch.recall.enabled=false",
        "--budget-tokens",
        BUDGET,
        "--cache-read-multiplier",
        "1",
        "--cache-write-multiplier",
        "1",
        "--price-per-1m",
        "10",
    )

    row = table_row(stdout, "total")
    assert row[COST_SAVED] == row[SAVED]
    assert row[COST_WITHOUT] == dollars(int(row[3]) * 10 / 1e6)
    assert "$10 per 1M input tokens" in stdout and "x1 (cache read)" in stdout


def test_prices_outside_their_range_are_command_errors_naming_the_option(run):
    for option in ("--price-per-1m", "--cache-read-multiplier", "--cache-write-multiplier"):
        with pytest.raises(CommandError, match=option):
            run(option, "-1")
        with pytest.raises(CommandError, match=option):
            run(option, "nan")


# --- Pruning in steps (pinch.window_step) ---


def breaks(lines):
    """Turns whose payload does not start with the session's whole previous payload."""
    return sum(
        1
        for prev, line in itertools.pairwise(lines)
        if prev["conversation"] == line["conversation"] and line["prefix_match"] < prev["turn"]
    )


def test_window_step_prunes_in_steps_and_keeps_more_of_the_prefix(run, paths):
    options = ("--budget-tokens", "3000", "--keep-last-tool-results", "2", "--no-relevance")
    plain, plain_out, _ = run(*options, "--window-step", "none")
    stepped, stepped_out, _ = run(*options, "--window-step", "8")

    assert "window_step=None" in plain_out and "window_step=8" in stepped_out
    assert [line["turn"] for line in stepped] == [line["turn"] for line in plain]
    # The same requests; fewer results compressed on each, never one the plain window keeps.
    for a, b in zip(plain, stepped, strict=True):
        assert a["original_tokens"] == b["original_tokens"]
        assert set(b["compressed"]) <= set(a["compressed"])
    assert sum(line["final_tokens"] for line in stepped) > sum(
        line["final_tokens"] for line in plain
    )
    # ... and the cache keeps more: fewer breaks, a larger prefix kept, a smaller bill.
    assert breaks(stepped) < breaks(plain)
    plain_row, stepped_row = table_row(plain_out, "total"), table_row(stepped_out, "total")
    assert float(stepped_row[PREFIX].rstrip("%")) > float(plain_row[PREFIX].rstrip("%"))
    knobs = {
        "budget_tokens": 3000,
        "keep_last_tool_results": 2,
        "relevance": False,
        "payback": False,
    }
    sessions = load_sessions(paths)
    costs = [
        replay(sessions, replay_config(cli_overrides(**knobs, window_step=step))).total.cost(
            CachePrices()
        )
        for step in ("none", "8")
    ]
    assert costs[1] < costs[0]


def test_window_step_1_replays_exactly_like_none(run):
    options = ("--budget-tokens", "3000", "--keep-last-tool-results", "2", "--no-relevance")
    plain, _, _ = run(*options, "--window-step", "none")
    one, _, _ = run(*options, "--window-step", "1")
    assert one == plain


def test_window_step_outside_the_schema_is_a_command_error_naming_the_key(run):
    for value in ("0", "-3", "often"):
        with pytest.raises(CommandError, match=r"pinch\.window_step"):
            run("--window-step", value)
    assert cli_overrides(window_step="None") == {"pinch.window_step": None}
    assert cli_overrides(window_step="16") == {"pinch.window_step": 16}
    assert cli_overrides() == {}


# --- issue 16: references kept, price models, tools block, the shipped defaults ---


def test_refs_kept_is_the_share_of_the_json_lines_references_still_sent(run):
    lines, stdout, _ = run("--budget-tokens", "3000", "--window-step", "none")
    for name in (*FILES, "total"):
        mine = [line for line in lines if name in ("total", line["conversation"])]
        references = sum(line["references"] for line in mine)
        kept = sum(line["references_kept"] for line in mine)
        assert 0 <= kept <= references
        expected = f"{kept / references * 100:.1f}%" if references else "-"
        assert table_row(stdout, name)[REFS_KEPT] == expected
    total = table_row(stdout, "total")[REFS_KEPT]
    assert float(total.rstrip("%")) < 100, "placeholders at a 3k budget lose references"


def test_the_json_lines_name_each_reference_the_payload_lost(run, corpus_dir):
    lines, _, _ = run("--budget-tokens", "3000", "--window-step", "none")
    assert any(line["references_lost"] for line in lines)
    for line in lines:
        lost = line["references_lost"]
        assert lost == sorted(set(lost))
        assert len(lost) == line["references"] - line["references_kept"]
        messages = json.loads((corpus_dir / line["conversation"]).read_text())["messages"]
        earlier = messages[: line["turn"]]
        in_results = set().union(*(mentioned_tokens(m) for m in earlier if m["role"] == "tool"))
        elsewhere = set().union(*(mentioned_tokens(m) for m in earlier if m["role"] != "tool"))
        # Each one the agent's message used, read only in a tool result before it.
        for token in lost:
            assert token in mentioned_tokens(messages[line["turn"]])
            assert token in in_results and token not in elsewhere


def test_pinch_off_keeps_every_reference(run):
    lines, _, _ = run("--no-pinch")
    assert sum(line["references"] for line in lines) > 0
    assert all(line["references_kept"] == line["references"] for line in lines)
    assert not any(line["references_lost"] for line in lines)


def test_each_price_model_column_is_its_own_replay_and_the_footer_counts_dearer_sessions(
    run, paths
):
    _, stdout, _ = run("--payback", "--budget-tokens", "3000")
    sessions = load_sessions(paths)
    config = replay_config(cli_overrides(budget_tokens="3000", payback=True))
    # The savings table's footer (the quality table follows it).
    footer = next(line for line in stdout.splitlines() if line.startswith("sessions costlier"))
    risk = next(line for line in stdout.splitlines() if line.startswith("had a session ended"))
    for k, prices in enumerate(PRICE_MODELS):
        result = replay(sessions, config, prices=prices)
        for totals in (*result.sessions, result.total):
            # After the config's own prices' column.
            assert table_row(stdout, totals.name)[FIRST_RATIO + 1 + k] == (
                f"{totals.cost_ratio(prices):.3f}x"
            )
        dearer = result.costlier_sessions(prices)
        listed = f": {', '.join(dearer)}" if dearer else ""
        assert f"{prices.label} {len(dearer)}{listed}" in footer
        cut, of, worst = result.dearer_ends(prices)
        assert f"{prices.label} {cut:,} of {of:,}, worst {worst:.3f}x" in risk


def test_the_risk_line_counts_the_ends_at_which_a_session_would_have_cost_more():
    # Written tokens only (read 0.1, write 1): cost with pinch and without, per request.
    def request(conversation, turn, with_pinch, whole):
        return TurnRecord(
            conversation, turn, whole, with_pinch, [], [], False, 0, 0,
            uncached_tokens=with_pinch, baseline_uncached_tokens=whole,
        )  # fmt: skip

    result = ReplayResult(
        records=[
            # a: 10 / 10, then a step: 40 / 25 (1.6x had it ended there), then 45 / 75.
            request("a", 1, 10, 10),
            request("a", 2, 30, 15),
            request("a", 3, 5, 50),
            # b: never dearer, though its second request alone costs more than a's whole.
            request("b", 1, 100, 200),
            request("b", 2, 120, 100),
        ]
    )
    prices = CachePrices(price_per_1m=1_000_000, read_multiplier=0.1, write_multiplier=1.0)
    assert result.dearer_ends(prices) == (1, 5, pytest.approx(1.6))
    assert ReplayResult(records=result.records[3:]).dearer_ends(prices) == (0, 2, 1.0)


def test_a_tools_block_rides_on_every_request_and_is_cached_after_the_first(run, paths):
    plain, _, _ = run("--no-pinch")
    padded, stdout, _ = run("--no-pinch", "--tools-tokens", "20000")
    assert "tools_tokens=20000" in stdout
    for a, b in zip(plain, padded, strict=True):
        assert 19_990 <= b["original_tokens"] - a["original_tokens"] <= 20_010
    result = replay(
        load_sessions(paths), replay_config(cli_overrides(pinch=False)), tools_tokens=20000
    )
    first = {}
    for record in result.records:
        if record.conversation not in first:
            first[record.conversation] = record
            assert record.baseline_cached_tokens == 0
        else:
            assert record.baseline_cached_tokens >= 19_990


def test_the_shipped_defaults_save_half_the_tokens_for_less_money_on_every_session(
    default_config, corpus_dir
):
    prices = CachePrices(read_multiplier=0.1, write_multiplier=1.25)
    result = replay(load_sessions([corpus_dir]), replay_config(cli_overrides()), prices=prices)
    total = result.total
    assert total.saved_share >= 0.50
    assert total.cost_ratio(prices) <= 0.75
    assert result.costlier_sessions(prices) == []
    # The budget prune at its old defaults loses more of what the agent uses.
    old = replay(
        load_sessions([corpus_dir]),
        replay_config(cli_overrides(budget_tokens="16000", payback=False)),
        prices=prices,
    )
    assert total.references_share > old.total.references_share
    assert old.costlier_sessions(prices)


def test_the_command_says_what_the_agents_did_next_per_family(run, paths):
    _, stdout, _ = run("--by-family")
    quality = stdout[stdout.index("What the agents did next") :].splitlines()
    assert quality[1].split()[:3] == ["family", "sessions", "requests"]
    assert "exposure (compressed, repeated)" in quality[1]
    expected = replay_quality(load_sessions(paths), replay(load_sessions(paths), replay_config({})))
    total = expected[-1]
    # The total row, then the line judging the recalls (tests/metrics/test_replay_recalls.py).
    assert quality[-2].split()[:3] == ["total", str(total.sessions), f"{total.requests:,}"]
    assert quality[-1].startswith("recalls: ")


def test_by_default_each_request_is_priced_at_its_models_configured_prices(
    run, default_config, paths
):
    from routing.pricing import billed_prompt_cost_usd

    _, stdout, _ = run("--budget-tokens", BUDGET)
    overrides = cli_overrides(budget_tokens=BUDGET, payback=False)  # as ``run`` asks
    result = replay(load_sessions(paths), replay_config(overrides))

    models = {record.model for record in result.records}
    assert models and "" not in models
    total = result.total
    expected = 0.0
    for record in result.records:
        model = default_config.model(record.model)
        writes = model.cache is not None
        written = record.uncached_tokens if writes else 0
        expected += billed_prompt_cost_usd(
            model, record.cached_tokens + record.uncached_tokens, record.cached_tokens, written
        )
        # And each recall's round trip: the payload read again, the recalled text written.
        read, rest = record.recall_cached_tokens, record.recall_uncached_tokens
        expected += billed_prompt_cost_usd(model, read + rest, read, rest if writes else 0)
    assert any(record.recalls for record in result.records)
    assert total.configured_cost_usd == pytest.approx(expected)
    row = table_row(stdout, "total")
    assert row[COST_WITH] == dollars(total.configured_cost_usd)
    assert row[COST_WITHOUT] == dollars(total.configured_baseline_cost_usd)
    # The reader is told which prices those were, model by model.
    line = next(line for line in stdout.splitlines() if line.startswith("cost: "))
    assert "each request at its model's configured prices" in line
    for model_id in models:
        model = default_config.model(model_id)
        assert f"{model_id} ${model.prompt_price:g}/1M" in line
    assert "x (config)" in stdout


def test_the_first_line_is_the_verdict_and_the_table_waits_for_a_flag(default_config, paths):
    stdout = StringIO()
    call_command("pinch_replay", *paths, "--price-per-1m", "3", stdout=stdout, stderr=StringIO())
    first, *rest = stdout.getvalue().splitlines()
    assert re.fullmatch(
        r"On these 3 sessions \([\d,]+ requests\) pinch would have sent \d+\.\d% fewer prompt "
        r"tokens and saved \$[\d,.]+ of \$[\d,.]+ at the prices given \(0\.\d+x the cost "
        r"without it\); (no session dearer under any cache price model \(worst \d\.\d+x\)|"
        r"\d+ sessions? dearer under some cache price model \(.+\), the worst at \d\.\d+x)"
        r"(; of the [\d,]+ references the agents' next messages made to tool output, [\d,]+ "
        r"left the payload(, [\d,]+ of them one recall away \([\d,]+ recalls?, in the cost\))?)?"
        r"\.",
        first,
    ), first
    assert not any(line.startswith("session ") for line in rest)  # no table
    assert "--table" in rest[-1]


def test_a_free_model_says_how_to_see_dollars(default_config, paths):
    stdout = StringIO()
    call_command(
        "pinch_replay", paths[0], "--model", "qwen-small", stdout=stdout, stderr=StringIO()
    )
    first = stdout.getvalue().splitlines()[0]
    assert "qwen-small costs $0 in this config; name a priced model (--model)" in first


def test_without_paths_it_reads_the_agents_own_log_folders(default_config, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(CommandError, match="neither ~/.claude/projects nor ~/.codex/sessions"):
        call_command("pinch_replay", stdout=StringIO(), stderr=StringIO())

    project = tmp_path / ".claude" / "projects" / "demo"
    project.mkdir(parents=True)
    write_log(project / f"{SESSION}.jsonl", review_session())
    stdout = StringIO()
    call_command("pinch_replay", stdout=stdout, stderr=StringIO())
    assert stdout.getvalue().startswith("On these 1 session")
