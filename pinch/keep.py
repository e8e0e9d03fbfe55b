"""Which tool results leaving the protected window stay verbatim for good.

A result is kept when it holds what the agent is working with, read from
signals every agent family gives (chosen on some families, measured on the
others: docs/pinch.md, "A keep rule that travels"):

* ``shared``: it shares at least ``keep_min_shared`` distinctive tokens
  (paths, identifiers, numbers: pinch.lines) with the work in hand, the last
  user message and the agent's last three messages (the file it edits, the
  test it runs), and is at most ``keep_max_chars`` long;
* ``named``: what its call asked for (the path a read named, the pattern a
  grep searched) is named again by one of the agent's later calls, the mark
  of a file being edited (Claude Code reads a file and edits it calls later
  with its exact old text), and it is at most ``keep_named_max_chars`` long.

Token overlap, not the embedder: it is what the references measure, it is
deterministic (every worker decides alike), and it costs a regex.

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

# The agent's last few messages hold what it is doing now; three is what
# round two measured (a wider context kept more and saved less: docs/pinch.md).
RECENT_AGENT_MESSAGES = 3


def keeps(
    i: int,
    size: int,
    length: int,
    mentions: Callable[[int], set[str]],
    asked: Callable[[int], set[str]],
    assistants: Sequence[int],
    last_user: int | None,
    knobs,
) -> bool:
    """Whether result ``i`` (``size`` characters) stays verbatim at request ``messages[:length]``.

    ``mentions(t)``: the distinctive tokens message ``t`` uses; ``asked(t)``:
    those of the arguments of the call result ``t`` answers; ``assistants``:
    the indexes of the agent's messages, sorted; ``knobs``: PaybackKnobs.
    """
    now = bisect_left(assistants, length)
    if size <= knobs.keep_max_chars:
        context: set[str] = set()
        for t in assistants[max(now - RECENT_AGENT_MESSAGES, 0) : now]:
            context |= mentions(t)
        if last_user is not None:
            context |= mentions(last_user)
        if context and len(mentions(i) & context) >= knobs.keep_min_shared:
            return True
    if size <= knobs.keep_named_max_chars:
        target = asked(i)
        # Calls after the one that asked for it (that one is before the result).
        later = assistants[bisect_right(assistants, i) : now]
        if target and any(target & mentions(t) for t in later):
            return True
    return False
