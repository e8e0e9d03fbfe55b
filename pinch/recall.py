"""Handles on what pinch took out, so the model can ask for it back by name.

Each tool result pinch compressed or capped gets one line naming its handle
(``r`` and the message's index in the conversation). An agent only appends
to its conversation, so a result keeps its index, its handle and therefore
the bytes sent in its place from turn to turn: the provider's cached prefix
is not rewritten by the note. The router serves the recall tool
(routing/recall/) and keeps the originals under the same handles.
"""

from __future__ import annotations

from typing import Any

from pinch.tokens import estimate_tokens, extract_text

# Short, because it rides on every shortened result of every request: the recall
# tool's description says what it means. Measured on the corpus, a 24-token note
# took about 5 points off pinch's saving; this one about one (docs/pinch.md, "Recall").
NOTE = "[recall {handle}]"


# A handle is short: a model that garbles one gets "unknown", not a look-up of its text.
_MAX_DIGITS = 9

# Tokens of one round trip's framing: the assistant's call ({"id": ..., "type":
# "function", "function": {"name": "router_recall", "arguments": "{\"id\": \"r123\"}"}})
# and the tool message around the answer, about 90 characters at 3 a token.
CALL_TOKENS = 30


def handle_for(index: int) -> str:
    """The handle of the result at message ``index``."""
    return f"r{index}"


def index_of(handle: str) -> int | None:
    """The message index ``handle`` names (``handle_for``'s inverse); None for anything else."""
    digits = handle[1:] if isinstance(handle, str) and handle.startswith("r") else ""
    if not digits.isascii() or not digits.isdigit() or len(digits) > _MAX_DIGITS:
        return None
    return int(digits)


def noted(content: str, handle: str) -> str:
    """``content`` (what pinch sends for the result ``handle`` names) with its recall note."""
    return f"{content}\n{NOTE.format(handle=handle)}"


def round_trips(payload_tokens: int, sizes: list[int]) -> tuple[int, int]:
    """(tokens read, tokens written) of recalling results of ``sizes`` tokens, in that order,
    on a request whose payload was ``payload_tokens``.

    A recall is a round trip: the router answers the model's call itself and
    asks the upstream again with the payload, now read from the cache, plus
    the call and the recalled text, written. A second recall on the same
    request reads the first one too. The replay prices recalls so
    (routing.replay.recalls) and pinch's ledger books them so (pinch.payback).
    """
    read = written = 0
    sent = payload_tokens
    for size in sizes:
        read += sent
        written += CALL_TOKENS + size
        sent += CALL_TOKENS + size
    return read, written


def with_handles(
    original: list[Any], pruned: list[Any], changed: list[int]
) -> tuple[list[Any], dict[str, str], int]:
    """(pruned messages with a recall note on each changed result, handle -> original text,
    tokens the notes add).

    ``changed``: the indexes pinch compressed or capped. A message whose
    content is not a plain string after pruning is left without a note.
    """
    if not changed:
        return pruned, {}, 0
    out = list(pruned)
    recallable: dict[str, str] = {}
    added = 0
    for i in changed:
        message = pruned[i]
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            continue
        handle = handle_for(i)
        text = noted(content, handle)
        out[i] = {**message, "content": text}
        recallable[handle] = extract_text(original[i])
        added += estimate_tokens(text) - estimate_tokens(content)
    return out, recallable, added
