"""The hashed half of the built-in embedder: identifier runs, their pieces, their term hashes.

Tool results are about files, functions and commands, and a request names
them: identifiers are split at camelCase, snake_case and digits, lowercased,
and each compound also counts whole; stopwords and single letters say
nothing. Kept apart from pinch.embedders.builtin, which batches and blends.
"""

import re
import zlib

# Identifier runs: letters, digits and "_", any script.
RUNS = re.compile(r"\w+")

# The same runs on ASCII bytes: every other byte becomes a space and
# bytes.split() does the rest, at under half the cost of the expression.
_ASCII_RUN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
NON_RUN_TO_SPACE = bytes(b if b in _ASCII_RUN_BYTES else 0x20 for b in range(256))

# Pieces of one ASCII run: "HTTPServer2_conf" -> HTTP, Server, 2, conf.
_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# ASCII punctuation as BERT sees it: every printable non-alphanumeric but "_",
# which is dealt with inside runs.
ASCII_PUNCT = re.compile(r"[!-/:-@\[-^`{-~]")

# Control characters BERT deletes rather than splits at.
ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# English words too common to say what a text is about. The batch IDF would
# discount them anyway, but a batch of a dozen texts is too small to be sure.
_STOPWORD_TEXT = (
    "a an and are as at be been but by can could did do does for from had has have he her "
    "his i if in into is it its me my no not of on or our she so than that the their them "
    "then there these they this to too was we were what when where which while who will "
    "with would you your"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def terms_of_run(run: str) -> tuple[int, ...]:
    """Stable 32-bit hashes of a run's pieces, and of the run whole if compound."""
    if not run.isascii():
        # camelCase is an ASCII habit; elsewhere only "_" joins words.
        pieces = [p.lower() for p in run.split("_") if p]
    elif run.isalpha() and (run.islower() or run.isupper() or run[1:].islower()):
        # One piece ("validator", "HTTP", "Invoice"): most runs, so no regex.
        word = run.lower()
        if len(word) < 2 or word in _STOPWORDS:
            return ()
        return (zlib.crc32(word.encode("ascii")),)
    else:
        pieces = [p.lower() for p in _PIECES.findall(run)]
    terms = [p for p in pieces if len(p) > 1 and not p.isdigit() and p not in _STOPWORDS]
    if len(pieces) > 1:
        whole = run.strip("_").lower()
        if whole and not whole.isdigit():
            terms.append(whole)
    # crc32, not hash(): str hashes change per process, and features are
    # shared between workers through Redis.
    return tuple(zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in terms)
