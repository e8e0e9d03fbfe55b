"""prune_context, rule by rule: budget guard, placeholders, elision, capping, relevance order."""

import copy
import json
import re

import pytest

from pinch import estimate_tokens, extract_text, prune_context, trim_candidates

ELIDED = re.compile(
    r"\A(?P<head>.*?)\n?\[(?P<count>\d+) chars trimmed\.\.\.\]\n?(?P<tail>.*)\Z", re.DOTALL
)


def user(text="next step"):
    return {"role": "user", "content": text}


def call(call_id, name, *more):
    calls = [(call_id, name), *more]
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, n in calls
        ],
    }


def result(call_id, content, **extra):
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def lines(size, tag="line"):
    """Text of whole numbered lines, exactly ``size`` characters long."""
    text = "".join(f"{tag} {i:05d} of some tool output\n" for i in range(size // 20 + 1))
    return text[:size]


def total(messages, extra=0):
    return sum(estimate_tokens(extract_text(m)) for m in messages) + extra


def loop(*sizes, name="bash", turns_after=4):
    """One user request, one call/result pair per size, then ``turns_after`` more users.

    With the default four later users, every result is a candidate at the default
    ``keep_last_turns``.
    """
    messages = [user("please fix the bug")]
    for i, size in enumerate(sizes):
        messages += [call(f"c{i}", name), result(f"c{i}", lines(size))]
    messages += [user(f"and then {i}") for i in range(turns_after)]
    return messages


# --- budget guard -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("over_by", "extra", "pruned"),
    [(-1, 0, False), (0, 0, False), (1, 0, True), (-100, 100, False), (-100, 101, True)],
    ids=["under", "exactly-at-budget", "one-over", "tools-fill-to-budget", "tools-tip-over"],
)
def test_budget_guard_counts_messages_plus_fixed_overhead(over_by, extra, pruned):
    messages = loop(6000, 6000)
    budget = total(messages) - over_by
    out, stats = prune_context(messages, budget_tokens=budget, extra_fixed_tokens=extra)
    assert stats["pruned"] is pruned
    assert stats["original_tokens"] == total(messages) + extra
    if not pruned:
        assert out is messages
        assert stats == {
            "pruned": False,
            "original_tokens": total(messages) + extra,
            "final_tokens": total(messages) + extra,
            "tokens_saved": 0,
        }
    else:
        assert stats["final_tokens"] == total(out) + extra


def test_over_budget_with_nothing_to_shorten_returns_the_input_list_unpruned():
    messages = [user("x" * 9000), call("c0", "bash"), result("c0", "ok"), user("go")]
    out, stats = prune_context(messages, budget_tokens=10, keep_last_turns=1)
    assert out is messages
    assert stats == {
        "pruned": False,
        "original_tokens": total(messages),
        "final_tokens": total(messages),
        "tokens_saved": 0,
    }


# --- placeholders -----------------------------------------------------------------------


def test_short_old_result_becomes_placeholder_named_after_its_tool_call():
    messages = loop(300, name="read_file")
    out, stats = prune_context(messages, budget_tokens=1)
    assert out[2] == {
        "role": "tool",
        "tool_call_id": "c0",
        "content": "[read_file: result omitted]",
    }
    assert stats["compressed"] == [2]
    assert stats["compressed_tools"] == {"read_file": 1}


@pytest.mark.parametrize(
    ("messages", "placeholder"),
    [
        (
            [user(), call("c0", "bash"), result("c0", "x" * 300, name="grep"), user()],
            "[grep: result omitted]",
        ),
        ([user(), call("c0", "bash"), result("zz", "x" * 300), user()], "[tool: result omitted]"),
        (
            [user(), call("c0", "bash"), {"role": "tool", "content": "x" * 300}, user()],
            "[tool: result omitted]",
        ),
        (
            [user(), call("c0", "ls", ("c1", "cat")), result("c0", "x" * 300), user()],
            "[ls: result omitted]",
        ),
        (
            [user(), call("c0", "ls", ("c1", "cat")), result("c1", "x" * 300), user()],
            "[cat: result omitted]",
        ),
        (
            [
                user(),
                call("c0", "ls"),
                result("c0", "a" * 9),
                call("c0", "cat"),
                result("c0", "x" * 300),
                user(),
            ],
            "[cat: result omitted]",
        ),
        (
            [
                user(),
                {"role": "assistant", "tool_calls": [{"id": "c0", "function": "bad"}]},
                result("c0", "x" * 300),
                user(),
            ],
            "[tool: result omitted]",
        ),
        (
            [user(), call("c0", "bash"), result(["c0"], "x" * 300), user()],
            "[tool: result omitted]",
        ),
    ],
    ids=[
        "own-name-wins",
        "unanswered-id-falls-back",
        "no-id-falls-back",
        "first-of-parallel-calls",
        "second-of-parallel-calls",
        "reused-id-means-nearest-earlier-call",
        "malformed-call-ignored",
        "unhashable-id-falls-back",
    ],
)
def test_placeholder_names_the_tool_from_the_message_or_its_call(messages, placeholder):
    out, _ = prune_context(messages, budget_tokens=1, keep_last_turns=1)
    omitted = [m["content"] for m in out if m["role"] == "tool" and "omitted" in m["content"]]
    assert omitted[-1] == placeholder


def test_result_shorter_than_its_placeholder_stays_verbatim():
    messages = loop(300, 300)
    messages[2] = result("c0", "ok")
    out, stats = prune_context(messages, budget_tokens=1)
    assert out[2] is messages[2]
    assert stats["compressed"] == [4]


def test_list_of_parts_result_becomes_a_plain_string():
    parts = [{"type": "text", "text": "x" * 500}, {"type": "image_url", "image_url": {"url": "u"}}]
    messages = [user(), call("c0", "screenshot"), result("c0", parts), user()]
    out, _ = prune_context(messages, budget_tokens=1, keep_last_turns=1)
    assert out[2]["content"] == "[screenshot: result omitted]"
    long_parts = [{"type": "text", "text": lines(9000)}]
    messages[2] = result("c0", long_parts)
    out, _ = prune_context(messages, budget_tokens=1, keep_last_turns=1)
    assert isinstance(out[2]["content"], str)
    assert "chars trimmed..." in out[2]["content"]


# --- elision ------------------------------------------------------------------------------


def split_elided(text):
    match = ELIDED.match(text)
    assert match, text[:200]
    return match["head"], int(match["count"]), match["tail"]


@pytest.mark.parametrize("size", [4001, 6000, 10_000, 250_000])
def test_long_old_result_keeps_whole_lines_around_an_exact_trim_marker(size):
    original = lines(size)
    messages = [user(), call("c0", "bash"), result("c0", original), user()]
    out, stats = prune_context(
        messages, budget_tokens=1, keep_last_turns=1, max_summarize_chars=4000
    )
    elided = out[2]["content"]
    head, count, tail = split_elided(elided)
    assert len(elided) <= 2000
    assert original.startswith(head) and original.endswith(tail)
    assert len(head) + count + len(tail) == len(original)
    assert original[len(head)] == "\n", "head should end where a line ends"
    assert original[len(original) - len(tail) - 1] == "\n", "tail should start a line"
    # Line boundaries cost at most half of each share.
    assert len(head) >= 450 and len(tail) >= 450
    assert stats["compressed"] == [2]


def test_single_line_result_is_cut_mid_line_with_an_exact_count():
    original = "0123456789" * 1000
    messages = [user(), call("c0", "bash"), result("c0", original), user()]
    out, _ = prune_context(messages, budget_tokens=1, keep_last_turns=1, max_summarize_chars=4000)
    head, count, tail = split_elided(out[2]["content"])
    assert head + original[len(head) : len(head) + count] + tail == original
    assert len(out[2]["content"]) <= 2000


@pytest.mark.parametrize(
    ("size", "becomes"), [(4000, "placeholder"), (4001, "elided")], ids=["at-limit", "over-limit"]
)
def test_results_up_to_max_summarize_chars_become_placeholders(size, becomes):
    messages = [user(), call("c0", "bash"), result("c0", lines(size)), user()]
    out, _ = prune_context(messages, budget_tokens=1, keep_last_turns=1, max_summarize_chars=4000)
    if becomes == "placeholder":
        assert out[2]["content"] == "[bash: result omitted]"
    else:
        assert "chars trimmed..." in out[2]["content"]


# --- the protected window and its cap -----------------------------------------------------


def test_last_tool_results_are_protected_in_a_single_turn_agent_loop():
    messages = loop(*[600] * 10, turns_after=0)
    out, stats = prune_context(messages, budget_tokens=1, keep_last_tool_results=3)
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assert stats["compressed"] == results[:-3]
    assert all(out[i] is messages[i] for i in results[-3:])


def test_without_the_tool_result_rule_a_single_turn_loop_is_all_protected():
    messages = loop(*[600] * 10, turns_after=0)
    out, stats = prune_context(messages, budget_tokens=1, protected_max_chars=None)
    assert out is messages and stats["pruned"] is False


def test_outsized_result_inside_the_window_is_capped_at_protected_max_chars():
    original = lines(60_000)
    messages = [user(), call("c0", "bash"), result("c0", original)]
    out, stats = prune_context(messages, budget_tokens=1, protected_max_chars=20_000)
    capped = out[2]["content"]
    head, count, tail = split_elided(capped)
    assert 19_000 <= len(capped) <= 20_000
    assert len(head) + count + len(tail) == len(original)
    assert stats["capped"] == [2] and stats["compressed"] == []
    assert stats["summarized"] == 1 and stats["compressed_tools"] == {"bash": 1}


@pytest.mark.parametrize(("limit", "changed"), [(None, False), (20_000, False), (19_999, True)])
def test_protected_cap_is_disabled_by_none_and_spares_results_at_the_limit(limit, changed):
    messages = [user(), call("c0", "bash"), result("c0", lines(20_000))]
    out, stats = prune_context(messages, budget_tokens=1, protected_max_chars=limit)
    assert (out[2] is not messages[2]) is changed
    assert stats["pruned"] is changed


def test_protected_cap_applies_whatever_the_relevance_order():
    messages = loop(3000, 3000) + [call("c9", "bash"), result("c9", lines(60_000))]
    _, stats = prune_context(messages, budget_tokens=1, relevance_order=[])
    assert stats["capped"] == [len(messages) - 1] and stats["compressed"] == []


def test_capping_savings_count_first_so_relevance_order_may_compress_nothing():
    messages = loop(3000, 3000) + [call("c9", "bash"), result("c9", lines(60_000))]
    budget = total(messages) - 1000
    _, ordered = prune_context(messages, budget_tokens=budget, relevance_order=[0, 1])
    _, uniform = prune_context(messages, budget_tokens=budget)
    assert ordered["capped"] == uniform["capped"] == [len(messages) - 1]
    assert ordered["compressed"] == [] and uniform["compressed"] == [2, 4]


# --- relevance order ---------------------------------------------------------------------

# Four old results of 1000 tokens; each placeholder ("[bash: result omitted]") is 7 tokens.
SAVING = 1000 - 7


@pytest.mark.parametrize(
    ("deficit", "compressed"),
    [
        (1, 1),
        (SAVING, 1),
        (SAVING + 1, 2),
        (2 * SAVING, 2),
        (3 * SAVING + 1, 4),
        (10**9, 4),
    ],
)
def test_relevance_order_stops_once_the_deficit_is_covered(deficit, compressed):
    messages = loop(3000, 3000, 3000, 3000)
    budget = total(messages) - deficit
    _, stats = prune_context(messages, budget_tokens=budget, relevance_order=[3, 1, 0, 2])
    candidates = trim_candidates(messages)
    assert stats["compressed"] == sorted(candidates[k] for k in [3, 1, 0, 2][:compressed])
    assert stats["tokens_saved"] == compressed * SAVING


def test_older_result_ranked_more_relevant_survives_while_newer_one_is_compressed():
    messages = loop(3000, 3000)
    older, newer = trim_candidates(messages)
    out, stats = prune_context(
        messages, budget_tokens=total(messages) - 100, relevance_order=[1, 0]
    )
    assert out[older] is messages[older]
    assert out[newer]["content"] == "[bash: result omitted]"
    assert stats["compressed"] == [newer]


def test_relevance_order_none_is_byte_identical_to_leaving_it_out():
    messages = loop(300, 9000, 3000, 25_000) + [call("c9", "bash"), result("c9", lines(30_000))]
    with_none = prune_context(messages, budget_tokens=500, relevance_order=None)
    without = prune_context(messages, budget_tokens=500)
    assert json.dumps(with_none) == json.dumps(without)


def test_full_relevance_order_that_never_covers_the_deficit_equals_uniform():
    messages = loop(300, 9000, 3000, 5000)
    ordered = prune_context(messages, budget_tokens=1, relevance_order=[2, 0, 3, 1])
    uniform = prune_context(messages, budget_tokens=1)
    assert json.dumps(ordered[0]) == json.dumps(uniform[0])
    assert ordered[1]["compressed"] == uniform[1]["compressed"]


def test_bad_and_repeated_indexes_in_the_order_are_skipped():
    messages = loop(3000, 3000, 3000, 3000)
    candidates = trim_candidates(messages)
    budget = total(messages) - SAVING - 1
    order = [7, -1, True, "x", 1.5, None, 2, 2, 0, 1]
    _, stats = prune_context(messages, budget_tokens=budget, relevance_order=order)
    assert stats["compressed"] == [candidates[0], candidates[2]]


def test_candidates_the_order_leaves_out_stay_verbatim():
    messages = loop(3000, 3000, 3000)
    candidates = trim_candidates(messages)
    out, stats = prune_context(messages, budget_tokens=1, relevance_order=[1])
    assert stats["compressed"] == [candidates[1]]
    assert out[candidates[0]] is messages[candidates[0]]


# --- what must never happen --------------------------------------------------------------


def test_user_assistant_and_system_messages_are_never_changed_however_large():
    messages = [{"role": "system", "content": "s" * 90_000}, user("u" * 90_000)]
    messages += [call("c0", "bash"), result("c0", lines(9000)), user("go" * 30_000)]
    messages[2]["content"] = "a" * 90_000
    snapshot = copy.deepcopy(messages)
    out, stats = prune_context(messages, budget_tokens=1, keep_last_turns=1)
    assert stats["compressed"] == [3]
    assert [out[i] is messages[i] for i in range(5)] == [True, True, True, False, True]
    assert messages == snapshot


def test_callers_list_and_dicts_are_not_mutated():
    messages = loop(300, 9000, 3000) + [call("c9", "bash"), result("c9", lines(30_000))]
    snapshot = copy.deepcopy(messages)
    ids = [id(m) for m in messages]
    out, stats = prune_context(messages, budget_tokens=1)
    assert stats["pruned"] and out is not messages
    assert messages == snapshot and [id(m) for m in messages] == ids
    assert len(out) == len(messages)
    assert [m.get("tool_call_id") for m in out] == [m.get("tool_call_id") for m in messages]


def test_pruned_stats_describe_what_changed():
    messages = loop(300, 9000, name="cat") + [call("c9", "pytest"), result("c9", lines(30_000))]
    out, stats = prune_context(messages, budget_tokens=1, extra_fixed_tokens=50)
    assert stats == {
        "pruned": True,
        "original_tokens": total(messages, 50),
        "final_tokens": total(out, 50),
        "tokens_saved": total(messages) - total(out),
        "summarized": 3,
        "compressed": [2, 4],
        "capped": [len(messages) - 1],
        "compressed_tools": {"cat": 2, "pytest": 1},
    }
