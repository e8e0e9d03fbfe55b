"""Fingerprints of messages, to see how much of a payload repeats the previous turn's.

Providers discount a prompt prefix they have already seen, so whether pruning
keeps the front of the conversation stable from one turn to the next is worth
money. The prefix probe (routing) and the replay tool measure it by comparing
short per-message hashes instead of whole messages: hashes are cheap to keep
for one turn (in memory or Redis) and reveal nothing of the content. A
decision row keeps a shorter form of them (``packed``), so that a worker
that did not serve the previous turn compares against it.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from itertools import compress, count
from operator import ne
from typing import Any

import orjson

from pinch.digests import DIGEST_BYTES, hex_digest

# On a decision row, 3 bytes a message as 4 base64 characters: a comparison
# stops at the first difference, so a shortened hash errs only when that one
# changed message collides (one chance in 2**24), and a 400-message payload
# takes 1.6 KB.
_PACKED_BYTES = 3
_PACKED_CHARS = 4


def message_fingerprints(messages: Sequence[Any], memo: Any = None) -> list[str]:
    """Return one hex digest per message: equal messages hash alike, different ones not.

    The digest covers the message's canonical JSON (sorted keys, no spaces,
    unescaped Unicode), so key order on the wire does not matter; string
    content is hashed as raw text beside the other fields' JSON. ``memo``:
    the caller's, carrying long texts' hashes from request to request
    (``pinch.digests.hex_digest``); the fingerprints are the same without it.
    A request's ``pinch.carry.MessageFacts`` carry them from request to request
    (``fingerprints``, and its payload's: ``sent``).
    """
    return [fingerprint(message, memo) for message in messages]


def fingerprint_parts(message: Any) -> tuple[bytes, str]:
    """What a message's fingerprint hashes: (its canonical JSON but for a string content, that
    content; "" when the content is not a string, and then the whole message is the JSON).

    Two messages with equal parts are the same JSON value: the canonical form
    tells 1, 1.0 and true apart, which Python's ``==`` takes for equal.
    """
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        return _canonical(message), ""
    # The text is nearly all of a message: hashed as it is rather than through
    # json.dumps, which escapes every character of it first (measured: the
    # probe cost more than parsing the whole request body). The other fields
    # are small and go through the canonical JSON; the NUL cannot occur in it.
    rest = dict(message)  # a copy, then a deletion: a fifth faster than a comprehension
    del rest["content"]
    return _canonical(rest) + b"\0", content


def packed(fingerprints: Sequence[str]) -> str:
    """The fingerprints shortened to ``_PACKED_BYTES`` each, end to end, in URL-safe base64."""
    whole = "".join(fingerprints)
    if len(fingerprints) >= 8 and len(whole) == len(fingerprints) * 2 * DIGEST_BYTES:
        # message_fingerprints' (DIGEST_BYTES each), each one's first bytes taken in C: a
        # stride of slices (a slice of each fingerprint took three times as long for 200;
        # for a few, the slices are quicker).
        digests = bytes.fromhex(whole)
        raw = bytearray(len(fingerprints) * _PACKED_BYTES)
        for n in range(_PACKED_BYTES):
            raw[n::_PACKED_BYTES] = digests[n::DIGEST_BYTES]
    else:
        raw = bytes.fromhex("".join(f[: 2 * _PACKED_BYTES] for f in fingerprints))
    return base64.urlsafe_b64encode(raw).decode("ascii")


def unpacked(text: str | None) -> list[bytes] | None:
    """The shortened fingerprints in ``packed`` text; None for none or anything malformed."""
    if not text or len(text) % _PACKED_CHARS:
        return None
    try:
        raw = base64.b64decode(text, altchars=b"-_", validate=True)
    except ValueError:  # binascii.Error: not base64
        return None
    if len(raw) * _PACKED_CHARS != len(text) * _PACKED_BYTES:  # padded: not ``packed``'s
        return None
    return [raw[i : i + _PACKED_BYTES] for i in range(0, len(raw), _PACKED_BYTES)]


def common_prefix_length(previous: Sequence[Any], current: Sequence[Any]) -> int:
    """Return how many leading items of ``previous`` and ``current`` are equal."""
    # The first index where they differ, found in C (a Python loop took 7 us for 200).
    differ = compress(count(), map(ne, previous, current))
    return next(differ, min(len(previous), len(current)))


def fingerprint(message: Any, memo: Any = None) -> str:
    """One message's fingerprint (``message_fingerprints``)."""
    # Lone surrogates survive json.loads ("\ud800") but not strict UTF-8: hex_digest keeps them.
    head, text = fingerprint_parts(message)
    return hex_digest(head, text, memo=memo)


def _canonical(value: Any) -> bytes:
    # orjson writes the same canonical form as json.dumps(sort_keys=True,
    # separators=(",", ":"), ensure_ascii=False) but for the spelling of floats
    # with an exponent, several times faster (measured: the stdlib's dumps was
    # a seventh of a 368 KB request's time in the router).
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        # Lone surrogates, integers past 64 bits, values that are not JSON:
        # rare, so the stdlib's slower dumps, which takes them all. A parsed
        # request holds only JSON values; anything else is stringified rather
        # than raised, because this is telemetry and must not fail a request.
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )
        return text.encode("utf-8", "surrogatepass")
