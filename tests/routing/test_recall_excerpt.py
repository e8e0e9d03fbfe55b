"""What a recall gives back: the whole original, a range of its lines, or the lines a pattern
finds."""

import pytest

from routing.recall.excerpt import MAX_PATTERN_LINES, excerpt
from routing.recall.tool import RecallArguments, read_arguments

TEXT = "\n".join(f"line {n}" for n in range(1, 11)) + "\nERROR: disk full\nline 12"


def test_without_a_range_or_pattern_the_whole_original_comes_back_as_it_was():
    assert excerpt(TEXT) == TEXT


@pytest.mark.parametrize(
    ("from_line", "to_line", "expected"),
    [
        (3, 4, "(lines 3-4 of 12)\n3: line 3\n4: line 4"),
        (11, None, "(lines 11-12 of 12)\n11: ERROR: disk full\n12: line 12"),
        (None, 1, "(lines 1-1 of 12)\n1: line 1"),
        (0, 1, "(lines 1-1 of 12)\n1: line 1"),
        (40, 50, "(the result has 12 lines; ask for lines within 1-12)"),
    ],
)
def test_a_range_comes_back_numbered_so_the_model_can_ask_for_more_around_it(
    from_line, to_line, expected
):
    assert excerpt(TEXT, from_line, to_line) == expected


def test_a_pattern_finds_its_lines_case_insensitively_and_names_them():
    assert (
        excerpt(TEXT, pattern="error|fatal")
        == "(lines matching 'error|fatal', of 12)\n11: ERROR: disk full"
    )


def test_a_pattern_that_is_no_regular_expression_is_searched_as_text():
    assert excerpt("a (b\nc", pattern="(b") == "(lines matching '(b', of 2)\n1: a (b"


def test_a_pattern_that_finds_nothing_says_so():
    assert excerpt(TEXT, pattern="segfault") == "(no line of the 12 matches 'segfault')"


def test_a_pattern_that_finds_too_much_is_cut_and_says_how_much_more_there_is():
    text = "\n".join("same" for _ in range(MAX_PATTERN_LINES + 5))
    found = excerpt(text, pattern="same").split("\n")
    assert len(found) == 1 + MAX_PATTERN_LINES + 1
    assert found[-1].startswith("(5 more matching lines")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"id": "r4"}', RecallArguments("r4")),
        ({"id": " r4 ", "from_line": 2, "to_line": 9}, RecallArguments("r4", 2, 9)),
        ('{"id": "r4", "pattern": "x", "from_line": "2"}', RecallArguments("r4", pattern="x")),
        ('{"id": "r4", "from_line": true}', RecallArguments("r4")),
        ("{not json", None),
        ('{"handle": "r4"}', None),
        ("[]", None),
    ],
)
def test_a_calls_arguments_are_read_leniently_and_a_call_without_an_id_is_refused(raw, expected):
    assert read_arguments(raw) == expected
