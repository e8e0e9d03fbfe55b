"""JSON on the request path: orjson, falling back to the json module where orjson refuses.

A body is parsed once and what goes upstream is serialised once; with orjson
both are several times faster than with the json module (2 ms for a 368 KB
agent conversation with json; see docs/benchmarks.md). Where orjson refuses
what the json module reads (strings with lone surrogates, ``"\\ud800"``;
``NaN``, ``Infinity``), the body takes the json module's path, which writes
surrogates back as ASCII escapes. One difference stays: orjson reads an
integer past 64 bits as a float (no chat-completions parameter is one).
"""

import json

import orjson


def loads(data: bytes | str):
    """Parse JSON; raises ValueError (json.JSONDecodeError) naming the problem."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # Either truly invalid (the json module says where, in words) or only
        # outside orjson's range.
        return json.loads(data)


def dumps(value) -> bytes:
    """Serialise compactly to UTF-8 bytes."""
    try:
        return orjson.dumps(value)
    except TypeError:
        # Integers past 64 bits or lone surrogates: the json module escapes both to ASCII.
        return json.dumps(value, separators=(",", ":")).encode()
