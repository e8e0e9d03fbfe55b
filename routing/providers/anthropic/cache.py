"""Prompt-cache breakpoints on a Messages request, where pinch will not rewrite.

Anthropic caches a prompt only up to blocks marked ``cache_control`` (at
most 4 a request), and a later request reads the cache only if everything
before a marked block is byte for byte what it was (tools, then system, then
messages, in that order). So the breakpoints go on the prefix that stays put:

1. the latest message: the next turn, which appends to this one, reads all
   that this one wrote;
2. the last message pinch's next prune step will not rewrite (pinch's
   ``next_step_start``): on the turn where pinch takes a step, the prefix
   before the step is still read;
3. where the previous turn put (2), when pinch's step moved it: the cache
   looks for an earlier write only 20 blocks back from a breakpoint, and a
   step of 8 tool results spans more, so the read needs a breakpoint of its
   own on the turn the step is taken;
4. the system prompt and 5. the tool definitions: read by any conversation
   with the same agent set-up, even when its messages differ early.

In that order of worth, as many as the 4 allow after the client's own
breakpoints (kept, and counted). A breakpoint whose prefix is shorter than
the model's minimum cacheable length would be ignored upstream and is not
placed. A 1-hour TTL is used when the model's config asks for it, except
after a client's 5-minute breakpoint, and before a client's 1-hour one
whatever the config says: longer TTLs must come first.
"""

from __future__ import annotations

import json

from pinch import CHARS_PER_TOKEN, estimate_tokens

MAX_BREAKPOINTS = 4
TTL_1H = "1h"


def place_breakpoints(
    request, stable_messages: int, previous_stable: int, min_tokens: int, ttl: str = "5m"
) -> list:
    """Mark ``request.body`` (a MessagesRequest); return the blocks marked, in prefix order.

    ``stable_messages``: how many leading chat messages the next prune step
    leaves as they are (``len(messages)`` when pinch is off);
    ``previous_stable``: the same for the previous turn.
    """
    body = request.body
    blocks = _prefix_blocks(body)
    client_marked = [block for block in blocks if "cache_control" in block]
    room = MAX_BREAKPOINTS - len(client_marked)
    if room <= 0:
        return client_marked

    # The blocks whose prefix is under the minimum: counted from the start
    # until the minimum is reached, every block after that one qualifies.
    short = set()
    total = 0
    for block in blocks:
        total += _block_tokens(block)
        if total >= min_tokens:
            break
        short.add(id(block))

    wanted = [
        _message_block(body, request.block_of, len(request.block_of) - 1),
        _message_block(body, request.block_of, stable_messages - 1),
        _message_block(body, request.block_of, previous_stable - 1),
        body["system"][-1] if body.get("system") else None,
        body["tools"][-1] if body.get("tools") else None,
    ]
    chosen = []
    for block in wanted:
        if block is None or "cache_control" in block or any(block is b for b in chosen):
            continue
        if id(block) in short:
            continue
        chosen.append(block)
        if len(chosen) == room:
            break

    marked = [b for b in blocks if "cache_control" in b or any(b is c for c in chosen)]
    # TTLs may only shorten along the prefix: ours before a client's 1-hour
    # breakpoint last an hour too, ours after a client's 5-minute one cannot.
    client_long = [i for i, b in enumerate(marked) if _ttl(b) == TTL_1H]
    long_ttl_allowed = ttl == TTL_1H
    for i, block in enumerate(marked):
        if "cache_control" in block:
            if _ttl(block) != TTL_1H:
                long_ttl_allowed = False
            continue
        long = long_ttl_allowed or (client_long and i < client_long[-1])
        block["cache_control"] = (
            {"type": "ephemeral", "ttl": TTL_1H} if long else {"type": "ephemeral"}
        )
    return marked


def _ttl(block: dict) -> str | None:
    control = block.get("cache_control")
    if not isinstance(control, dict):
        return None
    return control.get("ttl", "5m")


def _message_block(body: dict, block_of: list, index: int):
    """The last block of chat message ``index``, or of the nearest earlier one that has one."""
    for i in range(index, -1, -1):
        where = block_of[i]
        if where is None:
            continue
        if where[0] == "system":
            return body["system"][where[1]]
        content = body["messages"][where[1]]["content"]
        if isinstance(content, list):  # a string (a system turn's) has no block to mark
            return content[where[2]]
    return None


def _prefix_blocks(body: dict) -> list[dict]:
    """Every block that can carry a breakpoint, in cache-prefix order."""
    blocks = list(body.get("tools") or ())
    blocks += body.get("system") or ()
    for turn in body["messages"]:
        if isinstance(turn["content"], list):
            blocks += turn["content"]
    return blocks


def _block_tokens(block: dict) -> int:
    kind = block.get("type")
    if "input_schema" in block:  # a tool definition
        return len(json.dumps(block)) // CHARS_PER_TOKEN
    if kind == "text":
        return estimate_tokens(block.get("text"))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return sum(_block_tokens(inner) for inner in content)
        return estimate_tokens(content if isinstance(content, str) else "")
    if kind == "tool_use":
        return len(json.dumps(block.get("input"))) // CHARS_PER_TOKEN
    # Images: priced by pixels upstream; a data URL's length is no guide, so
    # count none rather than overstate the prefix.
    return 0
