"""How pinch measures messages: the token estimate and the text it counts."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinch import CHARS_PER_TOKEN, estimate_tokens, extract_text


def test_three_characters_make_a_token():
    assert CHARS_PER_TOKEN == 3


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        (None, 0),
        ("", 0),
        ("ab", 0),
        ("abc", 1),
        ("abcde", 1),
        ("x" * 3000, 1000),
        # Characters, not bytes: three two-byte characters are still one token.
        ("ééé", 1),
    ],
)
def test_estimate_is_length_floor_divided_by_three(text, tokens):
    assert estimate_tokens(text) == tokens


def _tool_result(content):
    return {"type": "tool_result", "tool_use_id": "t1", "content": content}


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ({"role": "user", "content": "hello"}, "hello"),
        ({"role": "assistant", "content": None}, ""),
        ({"role": "assistant"}, ""),
        ({"role": "user", "content": 42}, ""),
        ({"role": "user", "content": {"text": "not a list"}}, ""),
        (None, ""),
        ("a bare string", ""),
        (["role", "user"], ""),
        (
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            "a\nb",
        ),
        (
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:..."}},
                    {"type": "text", "text": "caption"},
                ],
            },
            "caption",
        ),
        ({"role": "user", "content": [_tool_result("file body")]}, "file body"),
        (
            {"role": "user", "content": [_tool_result([{"type": "text", "text": "nested"}])]},
            "nested",
        ),
        (
            {"role": "tool", "content": [{"type": "text", "text": 7}, "loose", None, {"x": 1}]},
            "",
        ),
        ({"role": "tool", "content": [_tool_result(None), _tool_result(3)]}, ""),
    ],
    ids=[
        "string",
        "none-content",
        "missing-content",
        "int-content",
        "dict-content",
        "none-message",
        "string-message",
        "list-message",
        "text-parts-joined-by-newline",
        "image-parts-ignored",
        "tool-result-string",
        "tool-result-nested-parts",
        "odd-parts-ignored",
        "odd-tool-result-content-ignored",
    ],
)
def test_extract_text_reads_strings_and_text_parts(message, text):
    assert extract_text(message) == text


def test_extract_text_stops_descending_into_endlessly_nested_parts():
    parts: list = []
    parts.append(_tool_result(parts))
    assert extract_text({"role": "user", "content": parts}) == ""


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "text", "content", "role", "x"]) | st.text(max_size=5),
            inner,
            max_size=4,
        )
    ),
    max_leaves=30,
)
_part_types = st.sampled_from(["text", "tool_result", "image_url", None, 3])


@given(
    st.one_of(
        _json,
        st.fixed_dictionaries({"role": st.text(max_size=5), "content": _json}),
        st.fixed_dictionaries(
            {
                "content": st.lists(
                    st.fixed_dictionaries({"type": _part_types, "text": _json, "content": _json}),
                    max_size=5,
                )
            }
        ),
    )
)
def test_extract_text_never_raises_and_always_returns_a_string(message):
    assert isinstance(extract_text(message), str)
