"""The per-message hash both of pinch's message digests are made of, carried between requests.

The ledger's digest (``pinch.ledger.message_hash``) and the prefix probe's
fingerprints (``pinch.prefix.message_fingerprints``) each hash every message
of a request, text and all: two passes of blake2b over the whole
conversation (about 0.27 ms each for session 026's 368 KB), of which the
request before hashed all but its last few messages already. Their inputs
differ (a role before the text, or the other fields' JSON), so one hash
cannot serve both; what they share is this: a short head, the text, a short
tail. With a ``memo`` the caller owns (and bounds), a text already hashed
behind the same head and tail is looked up instead: the key holds the text
itself, so a hit is an exact match of what would be hashed, and the digest
is the one hashing would give. Looking up costs Python's own hash of the
text (computed once per string, then kept on it) and a comparison, a
fraction of blake2b's pass.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Any

# 16 bytes: collisions are out of reach for conversations of any length, and
# 32 hex characters per message stay small in Redis.
DIGEST_BYTES = 16
# Below this many characters hashing a text costs about what the memo's
# lookup does (measured: blake2b of 1 KB takes ~1 us), so short texts are
# hashed every time and the memo holds the long ones only.
MEMO_MIN_CHARS = 1024


def hex_digest(head: bytes, text: str, tail: bytes = b"", memo: Any = None) -> str:
    """blake2b-128, in hex, of ``head``, ``text`` (UTF-8, lone surrogates kept) and ``tail``.

    ``memo``: a mapping with ``get`` and item assignment, keyed by the three
    inputs; None hashes every time.
    """
    key = None
    if memo is not None and len(text) >= MEMO_MIN_CHARS:
        key = (head, text, tail)
        found = memo.get(key)
        if found is not None:
            return found
    digest = blake2b(head, digest_size=DIGEST_BYTES)
    digest.update(text.encode("utf-8", "surrogatepass"))
    digest.update(tail)
    hexed = digest.hexdigest()
    if key is not None:
        memo[key] = hexed
    return hexed
