"""A request body is read by orjson where it can be, and accepted or refused exactly as before.

Before orjson, pydantic-core's parser read every body: what it refused, and its words for
why, are the API's 400s. ``jsonio.loads_request`` must give the same value (the same types:
1 is not 1.0, an integer past 64 bits stays an integer) or the same error, on any bytes.
"""

import json
import math

import pydantic_core
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from routing.jsonio import dumps_text, loads_request


def pydantic_reads(raw: bytes):
    try:
        return "value", pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as error:
        return "error", str(error)


def router_reads(raw: bytes):
    try:
        return "value", loads_request(raw)
    except ValueError as error:
        return "error", str(error)


def same(a, b) -> bool:
    """Equal, and of the same types all the way down (0 is not 0.0 or False; -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b) or a != a and b != b
    return a == b


def assert_read_alike(raw: bytes):
    expected, got = pydantic_reads(raw), router_reads(raw)
    assert expected[0] == got[0], (raw[:200], expected, got)
    if expected[0] == "error":
        assert got[1] == expected[1]
    else:
        assert same(got[1], expected[1]), (raw[:200], expected, got)


# The pieces a hostile body is made of: JSON's own tokens, and what parsers disagree on.
_WHITESPACE = [b" ", b"\t", b"\n", b"\r", b"\x0c", b"\xc2\xa0", b"\xef\xbb\xbf", b"\x00"]
_STRINGS = [b'"k"', b'""', b'"\\ud800"', b'"\\udc00"', b'"\\ud83d\\ude00"', b'"\\ud83dx"']
_STRINGS += [b'"\\ud800\\u0041"', b'"\\u0000"', b'"\\x"', b'"\\/"', b'"\x01"', b'"\xff"']
_STRINGS += [b'"\xed\xa0\x80"', b'"\xe2\x82"']
_WORDS = b"[ ] { } , : true false null tru NaN Infinity -Infinity nan".split()
_NUMBERS = (
    b"0 -0 -0.0 01 1. .5 - +1 0.1 1e19 1e400 -1e400 1e-400 1E5 1.5e308 4.9e-324 "
    b"9223372036854775807 9223372036854775808 -9223372036854775808 -9223372036854775809 "
    b"18446744073709551615 18446744073709551616 123456789012345678901234567890 "
    b"-123456789012345678901234567890 12345678901234567890.5 1.00000000000000000000000001"
).split()
TOKENS = _WHITESPACE + _STRINGS + _WORDS + _NUMBERS
token_soup = st.lists(st.sampled_from(TOKENS), max_size=12).map(b"".join)

# Valid JSON of every kind of value, integers of any size and floats of any exponent included.
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)
valid = values.map(lambda value: json.dumps(value).encode())


@st.composite
def damaged(draw):
    """Valid JSON with a hostile token put somewhere in it."""
    raw = draw(valid)
    at = draw(st.integers(0, len(raw)))
    return raw[:at] + draw(st.sampled_from(TOKENS)) + raw[at:]


@st.composite
def nested(draw):
    """A value nested about as deep as either parser's limit (pydantic-core 201, orjson 1024)."""
    depth = draw(st.sampled_from([1, 99, 100, 101, 102, 150, 200, 201, 202, 1023, 1024, 1025]))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"a":', b"}]")]))
    inner = draw(st.sampled_from([b"1", b"[]", b"{}", b"2e19", b"18446744073709551616"]))
    return opener * depth + inner + closer * depth


PROPERTY = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(raw=token_soup | valid | damaged() | nested() | st.binary(max_size=40))
@example(raw=b'{"a":1,"b":2,"a":3}')
@example(raw=b'{"n": 18446744073709551616, "m": -9223372036854775809}')
@example(raw=b'{"t": 0.7, "big": 1e300, "wide": 9.3e18}')
def test_a_body_is_read_as_pydantic_core_reads_it(raw):
    assert_read_alike(raw)


@pytest.mark.parametrize("depth", [100, 101, 201, 202, 1024, 1025])
def test_nesting_past_pydantic_cores_limit_is_refused_in_its_words(depth):
    raw = b'{"x": ' + b"[" * depth + b"]" * depth + b"}"

    assert_read_alike(raw)
    assert router_reads(raw)[0] == ("value" if depth + 1 <= 201 else "error")


def test_an_integer_past_64_bits_stays_an_integer():
    assert loads_request(b'{"seed": 123456789012345678901234567890}') == {
        "seed": 123456789012345678901234567890
    }
    assert type(loads_request(b"[-9223372036854775809]")[0]) is int


# Any JSON value a parsed body holds, lone surrogates and every float included.
written = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.characters(exclude_categories=()), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(exclude_categories=()), max_size=3), inner)
    ),
    max_leaves=12,
)


@PROPERTY
@given(value=written)
def test_a_translated_tool_calls_arguments_are_written_as_json_dumps_writes_them(value):
    assert dumps_text(value) == json.dumps(value, ensure_ascii=False)
