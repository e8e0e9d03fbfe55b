"""Compressing a result by its lines (pinch/lines.py): what a later turn needs survives the cut."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinch.core import _elide
from pinch.lines import (
    cap_lines,
    compress_lines,
    distinctive_tokens,
    mentioned_tokens,
    named_tokens,
)

MARKER = re.compile(r"\[(\d+) chars trimmed\.\.\.\]")


def log_with_a_failure_in_the_middle():
    lines = [f"collecting item {i} of the suite, all fine so far" for i in range(200)]
    lines[97] = "src/payments/ledger.py:412: AssertionError: balance_after == 120 failed"
    lines[98] = "def settle_invoice(invoice_id, amount_cents):"
    return "\n".join(lines)


def test_an_error_line_and_a_definition_in_the_middle_survive_where_head_and_tail_lose_them():
    text = log_with_a_failure_in_the_middle()
    chosen = compress_lines(text, 2000)
    head_and_tail = _elide(text, 2000)
    for needle in ("src/payments/ledger.py:412", "settle_invoice"):
        assert needle in chosen
        assert needle not in head_and_tail
    assert len(chosen) <= 2000


def test_lines_that_mention_what_the_call_asked_for_are_kept():
    lines = [f"match_{i}: something unrelated happens here" for i in range(300)]
    lines[150] = "    retry_budget = compute_retry_budget(config)"
    text = "\n".join(lines)
    asked = '{"pattern": "compute_retry_budget"}'
    assert "compute_retry_budget(config)" in compress_lines(text, 600, asked)


def test_a_result_that_fits_comes_back_unchanged():
    assert compress_lines("short output\nsecond line", 100) == "short output\nsecond line"


def test_one_long_line_is_cut_into_pieces_that_can_be_chosen():
    record = ", ".join(f'"field_{i}": "value {i}"' for i in range(200))
    record = record.replace('"field_120": "value 120"', '"reservation_id": "X7BYG1"')
    out = compress_lines(record, 800)
    assert len(out) <= 800
    assert MARKER.search(out)


texts = st.lists(
    st.one_of(
        st.text(min_size=0, max_size=120),
        st.builds(lambda n: f"path/to/file_{n}.py:{n}: error here", st.integers(0, 999)),
        st.just(""),
    ),
    min_size=1,
    max_size=120,
).map("\n".join)


def test_a_cap_keeps_as_much_as_fits_and_leaves_out_the_plainest_pieces_first():
    text = log_with_a_failure_in_the_middle()
    capped = cap_lines(text, 6000)
    assert 5800 <= len(capped) <= 6000
    for needle in ("src/payments/ledger.py:412", "settle_invoice", "item 0 ", "item 199 "):
        assert needle in capped
    # compress_lines keeps only pieces that score: here, far less than the room.
    assert len(compress_lines(text, 6000)) < 1000
    assert cap_lines("short output", 100) == "short output"


def test_a_cap_of_plain_text_keeps_both_its_ends_as_a_head_and_a_tail_would():
    # A file read as Claude Code returns it: numbered lines with nothing to
    # score, then a reminder the client appends. The end of the file stays.
    lines = [f"{n + 1:>6}\u2192Line {n}: the demo" for n in range(800)]
    text = "\n".join(lines) + "\n<system-reminder>Mind the file.</system-reminder>"
    capped = cap_lines(text, 3000)
    assert len(capped) <= 3000
    for kept in ("Line 0: the demo", "Line 799: the demo", "Mind the file."):
        assert kept in capped
    assert "Line 400: the demo" not in capped


@pytest.mark.parametrize("cut", [compress_lines, cap_lines])
@settings(max_examples=200, deadline=None)
@given(text=texts, limit=st.integers(60, 3000))
def test_the_cut_is_bounded_exact_and_deterministic(cut, text, limit):
    out = cut(text, limit)
    assert out == cut(text, limit)
    if len(text) <= limit:
        assert out == text
        return
    assert len(out) <= limit
    # What is not a marker is the original text, in order; the markers count the rest
    # exactly (each marker sits on its own line: the line breaks around it are ours).
    trimmed = sum(int(n) for n in MARKER.findall(out))
    kept = [piece for piece in MARKER.split(out)[::2]]
    kept_chars = sum(len(piece) for piece in kept)
    markers = len(MARKER.findall(out))
    around = sum(1 for piece in kept[:-1] if piece.endswith("\n")) + sum(
        1 for piece in kept[1:] if piece.startswith("\n")
    )
    assert kept_chars - around + trimmed == len(text)
    assert markers <= len(kept)


def test_distinctive_tokens_are_paths_identifiers_and_numbers_not_words():
    found = distinctive_tokens("Fix the bug in src/app.py: call getValue with max_len 4096 now")
    assert found == {"src/app.py", "getValue", "max_len", "4096"}


def test_a_message_mentions_what_its_tool_calls_ask_for():
    message = {
        "role": "assistant",
        "content": "Editing it.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "Edit",
                    "arguments": '{"file_path": "/etc/app/config.yaml", "old": "retries: 3\\n"}',
                },
            }
        ],
    }
    # A token starts at a word character: the leading slash is not part of it.
    assert "etc/app/config.yaml" in mentioned_tokens(message)


def test_named_tokens_list_what_the_kept_text_lacks_in_order_within_the_room():
    text = "see src/app/models.py then run_tests and 12345; words; src/app/models.py again " + (
        "a" * 100 + "_b"
    )
    assert named_tokens(text, "", 100) == "src/app/models.py run_tests 12345"
    assert named_tokens(text, "already run_tests here", 100) == "src/app/models.py 12345"
    assert named_tokens(text, "", 20) == "src/app/models.py"
    assert named_tokens(text, "", 0) == ""


def test_named_tokens_leave_out_a_name_that_begins_or_ends_a_longer_one():
    text = "edit app/models.py: see src/app/models.py, models_v2 and models_v2_test, 1234 and 12345"
    assert named_tokens(text, "", 100) == "src/app/models.py models_v2_test 1234 12345"


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text(), st.integers(0, 300))
def test_named_tokens_fit_their_room_and_are_distinctive(text, kept, room):
    names = named_tokens(text, kept, room)
    assert len(names) <= room
    assert set(names.split()) <= distinctive_tokens(text)
    assert not any(
        b.startswith(a + sep) or b.endswith(sep + a)
        for a in names.split()
        for b in names.split()
        for sep in "/.-_"
    )
