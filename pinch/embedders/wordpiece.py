"""A WordPiece tokenizer small enough to carry, for the static embedding table.

The builtin embedder looks up one vector per WordPiece token of MiniLM's
vocabulary, so it has to cut text exactly where MiniLM's own tokenizer does:
a token cut differently is a row of the table that was never meant to be read.
The ``tokenizers`` library would do it, but it is a compiled dependency of
several megabytes for what is, on this vocabulary, forty lines: BERT's basic
split (lowercase, accents stripped, every punctuation character a word of its
own) and then greedy longest-match-first over the vocabulary.

Checked against ``tokenizers`` 0.22 by scripts/build_static_embeddings.py:
the same ids on all 1,581 user messages and tool results of the shared corpus
(first 2,000 characters each), and on accented, CJK, Hangul, Greek, emoji,
box-drawing and control-character samples. On 20,000 random Unicode strings
the only differences left were the literal text "[UNK]" (a special token to
the library) and characters of rare scripts whose Unicode category differs
between the two libraries' Unicode versions. Where the library departs from
Google's original BERT code (no final-sigma rule, U+2028/U+2029 as spaces,
private-use characters deleted, one CJK range), this follows the library: the
table was built through it.

Almost all agent traffic is ASCII, so that path is one regular expression over
the lowercased text. Other text (box drawing in ``tree``, arrows, accents) is
translated through a per-character table and split at C speed: a
character-by-character loop cost ~4 ms per 2,000 characters, the table ~0.1 ms.
Words repeat heavily across tool results (paths, identifiers, log words), so
each word's pieces are computed once per process.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# BERT gives up on a word longer than this and emits [UNK] for all of it; the
# vocabulary was trained with the same limit, so matching it matters.
MAX_WORD_CHARS = 100

# The marker WordPiece puts before a piece that continues a word.
CONTINUATION = "##"

# The per-word cache is cleared when it reaches this many words: about 20 MB
# at worst, and enough for every distinct word of a few hundred long sessions.
_WORD_CACHE_LIMIT = 200_000

# On ASCII, BERT's split is: runs of letters and digits, and each punctuation
# character (every printable non-alphanumeric, "_" included) alone.
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")

# Control characters BERT deletes outright (so "a\x01b" is one word, "ab").
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# For text that is not all ASCII: per character, what BERT makes of it, as a
# str.translate table: deleted, a space, " c " (a word of its own), or the
# character lowercased without its accents. Translating, lowercasing and
# splitting on whitespace is then BERT's split at C speed. ASCII is filled in
# here; other characters as they are first met.
_CHAR_MAP: dict[int, str] = {cp: "" for cp in range(32)}
_CHAR_MAP.update({ord(c): " " for c in " \t\n\r"})
_CHAR_MAP.update({cp: f" {chr(cp)} " for cp in range(33, 127) if not chr(cp).isalnum()})
_CHAR_MAP[127] = ""

# Distinct characters remembered at most (~6 MB); past it, the slow path.
_CHAR_MAP_LIMIT = 50_000

# Unicode separators the tokenizers library splits at: spaces, and the line
# and paragraph separators (U+2028, U+2029), which Python's BERT code did not.
_SEPARATORS = ("Zs", "Zl", "Zp")

# Categories the tokenizers library deletes: controls and formats, as BERT
# did, and private-use characters too. (Unassigned ones it keeps.)
_DELETED = ("Cc", "Cf", "Co")


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    # The CJK Unified Ideograph blocks BERT splits into one word per character.
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B920 <= cp <= 0x2CEAF  # sic: the tokenizers library starts here, not 0x2B820
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_words(text: str) -> list[str]:
    """Split ``text`` the way BERT's basic tokenizer does, lowercased."""
    if text.isascii():
        if _ASCII_CONTROL.search(text):
            text = _ASCII_CONTROL.sub("", text)
        return _ASCII_WORDS.findall(text.lower())
    if len(_CHAR_MAP) > _CHAR_MAP_LIMIT:
        return basic_words_exact(text)
    for ch in set(text):
        cp = ord(ch)
        if cp > 127 and cp not in _CHAR_MAP:
            _CHAR_MAP[cp] = _char_entry(ch)
    return text.translate(_CHAR_MAP).lower().split()


def _char_entry(ch: str) -> str:
    """What BERT's basic tokenizer turns one non-ASCII character into."""
    cat = unicodedata.category(ch)
    if ch == "\ufffd" or cat == "Mn" or cat in _DELETED:
        return ""  # deleted (a lone combining accent is stripped like any other)
    if cat in _SEPARATORS:
        return " "
    out = []
    for c in unicodedata.normalize("NFD", ch.lower()):
        if unicodedata.category(c) == "Mn":
            continue
        out.append(f" {c} " if _is_punctuation(c) or _is_cjk(ord(c)) else c)
    return "".join(out)


def basic_words_exact(text: str) -> list[str]:
    """BERT's basic split, one character at a time: the reference for the fast paths.

    As the tokenizers library does it, which the table was built with: each
    character lowercased alone (so no final-sigma rule), U+2028/U+2029 taken
    for spaces, private-use characters deleted.
    """
    words: list[str] = []
    current: list[str] = []
    lowered = "".join(c.lower() for c in text)
    for ch in unicodedata.normalize("NFD", lowered):
        cat = unicodedata.category(ch)
        if cat == "Mn":
            # A combining accent: BERT strips accents when it lowercases.
            continue
        if ch in " \t\n\r" or cat in _SEPARATORS:
            if current:
                words.append("".join(current))
                current = []
            continue
        if ch == "\x00" or ch == "\ufffd" or cat in _DELETED:
            continue
        if _is_punctuation(ch) or _is_cjk(ord(ch)):
            if current:
                words.append("".join(current))
                current = []
            words.append(ch)
            continue
        current.append(ch)
    if current:
        words.append("".join(current))
    return words


class WordPiece:
    """Greedy longest-match-first WordPiece over a fixed vocabulary."""

    def __init__(self, vocab: Iterable[str], unk_token: str = "[UNK]"):
        self.ids: dict[str, int] = {}
        for i, token in enumerate(vocab):
            self.ids.setdefault(token, i)
        if unk_token not in self.ids:
            raise ValueError(f"the vocabulary has no {unk_token!r} token")
        self.unk_id = self.ids[unk_token]
        # No vocabulary entry is longer than this, so no longer match is tried.
        self._longest = max(len(t) for t in self.ids)
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path) -> WordPiece:
        with open(path, encoding="utf-8") as f:
            return cls(line.rstrip("\n") for line in f)

    def word_ids(self, word: str) -> tuple[int, ...]:
        """The ids of one basic word's pieces; ``(unk_id,)`` if it cannot be cut."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        ids = self._cut(word)
        if len(self._cache) >= _WORD_CACHE_LIMIT:
            self._cache.clear()
        self._cache[word] = ids
        return ids

    def _cut(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD_CHARS:
            return (self.unk_id,)
        vocab = self.ids
        out: list[int] = []
        start = 0
        n = len(word)
        while start < n:
            prefix = CONTINUATION if start else ""
            end = min(n, start + self._longest - len(prefix))
            found = None
            while end > start:
                found = vocab.get(prefix + word[start:end])
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk_id,)
            out.append(found)
            start = end
        return tuple(out)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without [CLS]/[SEP]."""
        out: list[int] = []
        for word in basic_words(text):
            out.extend(self.word_ids(word))
        return out
