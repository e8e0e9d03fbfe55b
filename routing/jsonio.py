"""JSON on the request path: orjson, falling back where orjson refuses or reads otherwise.

A body is parsed once and what goes upstream is serialised once; with orjson
both are several times faster than with the json module (2 ms for a 368 KB
agent conversation with json; see docs/benchmarks.md). Where orjson refuses
what the json module reads (strings with lone surrogates, ``"\\ud800"``;
``NaN``, ``Infinity``), the body takes the json module's path, which writes
surrogates back as ASCII escapes. One difference stays: orjson reads an
integer past 64 bits as a float (no chat-completions parameter is one).

A client's request body is read as pydantic-core's parser reads it
(``loads_request``): what that parser refuses, in its words, is the API's
400. orjson reads a 368 KB agent body in about half its time, and reads
every body pydantic-core reads to the same value but two kinds: an integer
past 64 bits (a float to orjson, an int to pydantic-core) and nesting past
pydantic-core's limit (201 deep; orjson's is 1024). A walk of what orjson
read finds both (a float of 2**63 or more, a depth past ``_MAX_DEPTH``) and
sends those bodies, and every body orjson refuses, to pydantic-core, which
reads them as before and words the error (tests/routing/test_request_json.py
compares the two on generated hostile bytes).
"""

import json

import orjson
import pydantic_core

# Deeper than this, a body is read by pydantic-core (which refuses past 201 deep); agents'
# bodies, tool schemas included, nest some ten deep.
_MAX_DEPTH = 100
# orjson reads an integer below -2**63 or above 2**64 - 1 as a float at least this large.
_WIDE = float(2**63)


def loads(data: bytes | str):
    """Parse JSON; raises ValueError (json.JSONDecodeError) naming the problem."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # Either truly invalid (the json module says where, in words) or only
        # outside orjson's range.
        return json.loads(data)


def loads_request(raw: bytes):
    """A request body parsed as ``pydantic_core.from_json(raw, allow_inf_nan=False)`` parses it:
    the same value, or the same ValueError."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    else:
        if _read_alike(value):
            return value
    return pydantic_core.from_json(raw, allow_inf_nan=False)


def _read_alike(value) -> bool:
    """Whether pydantic-core reads the JSON orjson read as ``value`` to the same value."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return kind is not float or -_WIDE < value < _WIDE
    level = [value]
    # Level by level: the containers ``depth`` deep, then those inside them.
    for _depth in range(_MAX_DEPTH):
        deeper = []
        for node in level:
            for item in node.values() if type(node) is dict else node:
                kind = type(item)
                if kind is str:
                    # Most of a body's values: let by first (0.065 -> 0.055 ms on the
                    # 368 KB chat body of corpus session 026).
                    continue
                if kind is dict or kind is list:
                    deeper.append(item)
                elif kind is float and not -_WIDE < item < _WIDE:
                    return False
        if not deeper:
            return True
        level = deeper
    return False


# json.dumps(value, ensure_ascii=False)'s C encoder, which json.dumps builds anew on every
# call given an option: built once, without the check for cycles (parsed JSON has none).
_SPACED = json.encoder.c_make_encoder(
    None,  # markers: no check for cycles
    json.JSONEncoder().default,
    json.encoder.encode_basestring,  # ensure_ascii=False
    None,  # indent
    ": ",
    ", ",
    False,  # sort_keys
    False,  # skipkeys
    True,  # allow_nan
)


def dumps_text(value) -> str:
    """``json.dumps(value, ensure_ascii=False)`` to the character, about three times as fast
    (a translated tool call's arguments: 0.13 -> 0.045 ms for the 100 calls of session 026's
    368 KB Messages request)."""
    return "".join(_SPACED(value, 0))


def dumps(value) -> bytes:
    """Serialise compactly to UTF-8 bytes."""
    try:
        return orjson.dumps(value)
    except TypeError:
        # Integers past 64 bits or lone surrogates: the json module escapes both to ASCII.
        return json.dumps(value, separators=(",", ":")).encode()
