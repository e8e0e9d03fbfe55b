"""Compress a tool result by choosing its lines, not by keeping its head and tail.

A head and a tail are blind to content: the path an agent greps for, the
definition it will edit, the one failing assertion of a test log sit in the
middle as often as at the ends. Within the same size, this keeps the lines
agents come back for, scored by what they hold:

* error and failure lines (tracebacks, ``FAILED``, ``error:``) and warnings;
* definitions (``def``, ``class``, ``function`` ...), which later edits name;
* paths and identifiers (``a/b.py``, ``snake_case``, ``CamelCase``, numbers
  with digits), the tokens a later message quotes back;
* lines that mention what the tool was asked for (the call's arguments: a
  grep pattern, a file name), and their neighbours;
* the first and the last line, which say what the output is and how it ended.

Lines longer than ``_PIECE_CHARS`` (minified JSON, long log records) are cut
into pieces at a comma or a space, so a one-line result can be chosen from too.
The chosen pieces keep their order; each gap becomes one ``[N chars
trimmed...]`` line naming exactly how much is missing, as the head-and-tail
elision does. Deterministic and content-only (the text and the call's
arguments): the same result always compresses to the same text, so a result
compressed once reads the same on every later turn and the cached prefix
holds.

The same ranking caps a result too big for the protected window
(``cap_lines``): there every piece may stay, prose too, and only the ones
ranked last go, so the cap sends as much as it allows.

Measured on the shared corpus with ``pinch_replay`` (docs/pinch.md, "Keeping
what the agent will use"): at the same size as the head and tail, choosing
lines keeps more of the tokens the agent's next message uses.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from typing import Any

from pinch.tokens import extract_text

_MARKER = "[{count} chars trimmed...]"
# A line longer than this is cut into pieces: a minified JSON record is one
# line of thousands of characters, and one piece of it can be worth keeping.
_PIECE_CHARS = 160

# A distinctive token: paths, dotted names, identifiers with an underscore, a
# digit or an inner capital. Plain words are what every message holds.
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_ERROR = re.compile(
    r"error|exception|traceback|fail|fatal|assert|denied|not found|no such|warning|invalid|"
    r"cannot|can't|refused|timeout|timed out|panic|abort",
    re.IGNORECASE,
)
_DEFINITION = re.compile(
    r"^\s*(?:\d+[:\-\u2192\t ]+\s*)?"
    r"(?:async\s+def|def|class|function|fn|func|interface|struct|enum|type|const|"
    r"export|public|private|protected|static|module|package|import|from|#include|impl)\b"
)

# Scores: what each kind of line is worth to a later turn, per line.
_ERROR_SCORE = 4.0
_DEFINITION_SCORE = 3.0
_ASKED_SCORE = 3.0
_NEIGHBOUR_SCORE = 1.0
_EDGE_SCORE = 2.5
_TOKEN_SCORE = 1.0
_TOKENS_COUNTED = 4
# A token longer than this (a hash, a base64 run) is not worth naming.
_NAME_CHARS = 80


def distinctive_tokens(text: str) -> set[str]:
    """The paths, identifiers and numbers in ``text`` that other text rarely shares."""
    found: set[str] = set()
    for token in _TOKEN.findall(text):
        if len(token) >= 4 and _is_distinctive(token):
            found.add(token)
    return found


def named_tokens(text: str, kept: str, room: int) -> str:
    """The distinctive tokens of ``text`` that ``kept`` lacks, space-separated, in ``room`` chars.

    In order of first appearance, each once; a token longer than
    ``_NAME_CHARS`` is left out (a hash or a blob says little for its size),
    and so is a token that begins or ends another one at a separator
    (``app/models.py`` when ``src/app/models.py`` is there, ``run_tests``
    when ``run_tests_fast`` is): the longer one already answers a search
    for either, so the room goes to a name not yet covered. What a
    compressed result still names: measured on the corpus, the references
    an agent makes to an old result are mostly such tokens (docs/pinch.md,
    "Keeping what the agent will use").
    """
    candidates = [
        token
        for token in dict.fromkeys(_TOKEN.findall(text))
        if 4 <= len(token) <= _NAME_CHARS and _is_distinctive(token)
    ]
    # Sorted, a token's extensions sit right after it: one bisection finds
    # whether any exists (tails: the same on the tokens reversed). A token
    # inside ``kept`` has its parts there too, so no candidate is left out
    # of these lists.
    heads = sorted(candidates)
    tails = sorted(token[::-1] for token in candidates)
    chosen: list[str] = []
    used = 0
    for token in candidates:
        if token in kept or _extended(heads, tails, token):
            continue
        if used + len(token) + 1 > room:
            break
        chosen.append(token)
        used += len(token) + 1
    return " ".join(chosen)


def _extended(heads: list[str], tails: list[str], token: str) -> bool:
    """Whether another candidate begins with ``token`` and a separator, or ends with one and it.

    ``heads``: the candidates sorted; ``tails``: the candidates reversed, sorted.
    """
    for separator in "/.-_":
        for pool, key in ((heads, token + separator), (tails, (separator + token)[::-1])):
            k = bisect_left(pool, key)
            if k < len(pool) and pool[k].startswith(key):
                return True
    return False


def call_arguments_text(message: Any) -> str:
    """The text of an assistant message's tool-call arguments (JSON string values, unescaped)."""
    pieces = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            arguments = call["function"].get("arguments")
            if isinstance(arguments, str):
                pieces.append(decoded_arguments(arguments))
    return "\n".join(pieces)


def decoded_arguments(arguments: str) -> str:
    """The string values inside a call's JSON arguments (escapes undone), or the raw text."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return "\n".join(_strings(value))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def mentioned_tokens(message: Any) -> set[str]:
    """The distinctive tokens a message uses: in its text and in its tool calls' arguments."""
    if not isinstance(message, dict):
        return set()
    return distinctive_tokens(extract_text(message)) | distinctive_tokens(
        call_arguments_text(message)
    )


def _is_distinctive(token: str) -> bool:
    if "_" in token or "/" in token or "." in token:
        return True
    if any(c.isdigit() for c in token):
        return True
    # An inner capital next to lower case: CamelCase, getValue.
    return any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)


def compress_lines(text: str, max_chars: int, asked: str = "") -> str:
    """Return at most ``max_chars`` of ``text``: its most useful pieces, in order, gaps marked.

    ``asked`` is the text of the tool call that produced the result (its
    arguments): pieces that mention its distinctive tokens score higher, and
    so do their neighbours. A piece that scores nothing (plain prose, a
    blank run) is never kept. The text itself comes back when it fits.
    """
    if len(text) <= max_chars:
        return text
    pieces, scores = _scored(text, asked)
    # Best value per character first; ties go to the earlier piece.
    ranked = sorted(range(len(pieces)), key=lambda k: (-_value(pieces, scores, k), k))
    chosen: list[int] = []
    used = 0
    for k in ranked:
        if scores[k] <= 0:
            break
        start, end = pieces[k]
        # Every chosen piece may open a gap after it: count its marker line too.
        cost = end - start + len(_MARKER.format(count=len(text))) + 2
        if used + cost > max_chars:
            continue
        chosen.append(k)
        used += cost
    out = _render(text, [pieces[k] for k in sorted(chosen)])
    # Runs of blank lines kept between pieces are not in the count above: in
    # the rare case they take the text over, the last pieces chosen go.
    while len(out) > max_chars and chosen:
        chosen.pop()
        out = _render(text, [pieces[k] for k in sorted(chosen)])
    return out


def cap_lines(text: str, max_chars: int, asked: str = "") -> str:
    """Return ``text`` cut to at most ``max_chars`` by leaving out its least useful pieces.

    For a result the agent is still working with (one too big for the
    protected window): as ``compress_lines`` ranks the pieces, but every
    piece may stay, prose too, and as many stay as fit; only the ones
    ranked last go. A head and a tail would cut the middle blind, where a
    subagent's report or a long file holds what the next message quotes.
    """
    if len(text) <= max_chars:
        return text
    pieces, scores = _scored(text, asked)
    # Best value per character first; among equals (plain lines score
    # nothing) the middle goes first, so unscored text keeps both its ends.
    last = len(pieces) - 1
    ranked = sorted(
        range(len(pieces)), key=lambda k: (-_value(pieces, scores, k), min(k, last - k), k)
    )

    def render(count: int) -> str:
        return _render(text, [pieces[k] for k in sorted(ranked[:count])])

    # The most pieces, best first, whose text fits (a marker line per gap).
    low, high = 0, len(ranked)
    while low < high:
        middle = (low + high + 1) // 2
        if len(render(middle)) <= max_chars:
            low = middle
        else:
            high = middle - 1
    return render(low)


def _scored(text: str, asked: str) -> tuple[list[tuple[int, int]], list[float]]:
    """``text``'s pieces and what each is worth to a later turn."""
    pieces = _pieces(text)
    asked_tokens = distinctive_tokens(asked) if asked else set()
    scores = [_score(text[start:end], asked_tokens) for start, end in pieces]
    for k, (start, end) in enumerate(pieces):
        if asked_tokens and scores[k] >= _ASKED_SCORE and _mentions(text[start:end], asked_tokens):
            for j in (k - 1, k + 1):
                if 0 <= j < len(pieces):
                    scores[j] += _NEIGHBOUR_SCORE
    scores[0] += _EDGE_SCORE
    scores[-1] += _EDGE_SCORE
    return pieces, scores


def _value(pieces: list[tuple[int, int]], scores: list[float], k: int) -> float:
    """Piece ``k``'s score per character."""
    return scores[k] / (pieces[k][1] - pieces[k][0] + 8)


def _mentions(piece: str, tokens: set[str]) -> bool:
    return any(token in piece for token in tokens)


def _score(piece: str, asked_tokens: set[str]) -> float:
    if not piece.strip():
        return 0.0
    score = 0.0
    if _ERROR.search(piece):
        score += _ERROR_SCORE
    if _DEFINITION.match(piece):
        score += _DEFINITION_SCORE
    tokens = distinctive_tokens(piece)
    score += _TOKEN_SCORE * min(len(tokens), _TOKENS_COUNTED)
    if asked_tokens and tokens & asked_tokens:
        score += _ASKED_SCORE
    return score


def _pieces(text: str) -> list[tuple[int, int]]:
    """(start, end) spans: one per line, long lines cut at a comma or a space."""
    spans: list[tuple[int, int]] = []
    start = 0
    size = len(text)
    while start < size:
        newline = text.find("\n", start)
        end = size if newline == -1 else newline
        while end - start > _PIECE_CHARS:
            cut = _cut(text, start, start + _PIECE_CHARS)
            spans.append((start, cut))
            start = cut
        if end > start:
            spans.append((start, end))
        start = end + 1
    return spans or [(0, size)]


def _cut(text: str, start: int, limit: int) -> int:
    for separator in (", ", " ", ","):
        found = text.rfind(separator, start + _PIECE_CHARS // 2, limit)
        if found != -1:
            return found + len(separator)
    return limit


def _render(text: str, spans: list[tuple[int, int]]) -> str:
    """The chosen spans in order; each gap between them becomes one exact marker line.

    Spans that touch, or are separated by line breaks only, are joined by
    what separated them (line breaks before the first and after the last are
    kept too), so kept text reads exactly as it was.
    """
    out: list[str] = []
    position = 0
    for start, end in spans:
        gap = text[position:start]
        if gap.strip("\n"):
            if out:
                out.append("\n")
            out.append(_MARKER.format(count=len(gap)))
            out.append("\n")
        else:
            out.append(gap)
        out.append(text[start:end])
        position = end
    tail = text[position:]
    if tail.strip("\n"):
        if out:
            out.append("\n")
        out.append(_MARKER.format(count=len(tail)))
    else:
        out.append(tail)
    return "".join(out)
