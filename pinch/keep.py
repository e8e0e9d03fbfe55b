"""Which tool results leaving the protected window stay verbatim for good.

A result is kept when it shares at least ``keep_min_shared`` distinctive
tokens (paths, identifiers, numbers: pinch.lines) with the work in hand, the
last user message and the agent's last three messages (the file it edits,
the test it runs), and is at most ``keep_max_chars`` long.

Token overlap, not the embedder: it is what the references measure, it is
deterministic (every worker decides alike), and it costs a regex. Two wider
signals were measured and dropped (docs/pinch.md, "A keep rule that
travels"): the agent's messages since the result arrived (kept more, saved
less, on every family), and results whose call target a later call names
again, the mark of a file being edited (it keeps nearly every result of a
mini-swe-agent session, whose shell commands name the same files all along).
What travels instead is compression that keeps the names (pinch.lines).

Pure: no Django, no I/O, no module state.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

# The agent's last few messages hold what it is doing now; three is what
# round two measured.
RECENT_AGENT_MESSAGES = 3


def keeps(
    size: int,
    tokens: set[str],
    length: int,
    mentions: Callable[[int], set[str]],
    assistants: Sequence[int],
    last_user: int | None,
    knobs,
) -> bool:
    """Whether a result of ``size`` characters holding ``tokens`` stays verbatim at ``length``.

    ``mentions(t)``: the distinctive tokens message ``t`` uses;
    ``assistants``: the indexes of the agent's messages, sorted; ``knobs``:
    PaybackKnobs (``keep_max_chars``, ``keep_min_shared``).
    """
    if size > knobs.keep_max_chars or not tokens:
        return False
    now = bisect_left(assistants, length)
    context: set[str] = set()
    for t in assistants[max(now - RECENT_AGENT_MESSAGES, 0) : now]:
        context |= mentions(t)
    if last_user is not None:
        context |= mentions(last_user)
    return len(tokens & context) >= knobs.keep_min_shared
