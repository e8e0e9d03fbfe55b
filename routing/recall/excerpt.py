"""The part of an original a recall asks for: all of it, a line range, or the lines a pattern finds.

Pure text work, apart from the request path, so it is tested on its own. A
model that knows what it is looking for asks for a few lines of a 2,000-line
log rather than the whole of it back in its context; the lines come with
their numbers so that it can ask for the lines around them next.
"""

import re

# Lines a pattern returns at most: a pattern that matches everything is the whole text.
MAX_PATTERN_LINES = 200


def excerpt(
    text: str, from_line: int | None = None, to_line: int | None = None, pattern: str | None = None
) -> str:
    """``text`` whole when neither a range nor a pattern is given; else the lines asked for.

    Lines are numbered from 1, the range inclusive; a pattern is a regular
    expression (searched in each line, case-insensitively), or, when it does
    not compile, a plain piece of text.
    """
    if from_line is None and to_line is None and not pattern:
        return text
    lines = text.split("\n")
    total = len(lines)
    first = max(from_line or 1, 1)
    last = min(to_line or total, total)
    numbered = [(n, lines[n - 1]) for n in range(first, last + 1)]
    if pattern:
        found = _matcher(pattern)
        numbered = [(n, line) for n, line in numbered if found(line)]
        if not numbered:
            return f"(no line of the {total} matches {pattern!r})"
        shown = numbered[:MAX_PATTERN_LINES]
        more = len(numbered) - len(shown)
        body = "\n".join(f"{n}: {line}" for n, line in shown)
        tail = (
            f"\n({more} more matching lines; narrow the pattern or ask for a range)" if more else ""
        )
        return f"(lines matching {pattern!r}, of {total})\n{body}{tail}"
    if not numbered:
        return f"(the result has {total} lines; ask for lines within 1-{total})"
    body = "\n".join(f"{n}: {line}" for n, line in numbered)
    return f"(lines {first}-{last} of {total})\n{body}"


def _matcher(pattern: str):
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error:
        needle = pattern.lower()
        return lambda line: needle in line.lower()
    return lambda line: compiled.search(line) is not None
