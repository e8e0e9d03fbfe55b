"""The default embedder: in process, offline, numpy only, no set-up.

A fresh install has to get relevance ordering without running a model server,
and the call sits on the request path, so it must cost milliseconds. Two
signals, blended:

* A hashed TF-IDF over words and identifier pieces. Tool results are about
  files, functions and commands, and a request names them: ``UsernameValidator``
  in the request is ``username_validator.py`` in an ``ls`` and ``class
  UsernameValidator`` in a ``cat``. So identifiers are split at camelCase,
  snake_case and digits, lowercased, and each compound also counts whole. The
  IDF is taken over the batch (the request and its candidates), so words every
  tool result shares ("error", "line", "self") weigh little without any corpus
  statistics to ship.
* A static token-embedding table distilled from all-MiniLM-L6-v2 (pinch/data/,
  built by scripts/build_static_embeddings.py): a text's vector is the mean of
  its WordPiece tokens' rows. It knows that "failing" is near "error" and
  "directory" near "folder", which the hashed part cannot.

Measured by a colleague on agent-like scenarios (a request and a dozen tool
results of ~2,000 characters, 2-3 relevant): hashed alone ranked relevant
results first with mean reciprocal rank 0.88 at ~15 ms for 1 + 50 texts;
0.5 static + 0.5 hashed reached 0.90, and 0.78 -> 0.87 where request and
result share few words, at 30-40 ms. Our own figures are in docs/relevance.md.

Speed is mostly Python per distinct word, so each distinct identifier run is
analysed once per process and kept in flat arrays (its hashed terms, its
WordPiece ids); a text then costs one regular expression, one Counter and a
few numpy gathers. Punctuation, which BERT counts as words, is counted with a
byte histogram rather than matched.

The blend is a concatenation of the two unit-normed halves, each scaled by the
square root of its weight, so the cosine ``order_by_relevance`` takes of two
such vectors is exactly the weighted sum of the two cosines.

Without the data files (a trimmed install) the hashed half works alone; that
is logged once per process.
"""

from __future__ import annotations

import json
import logging
import re
import struct
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from pinch.embedders.base import Embedder, EmbeddingError
from pinch.embedders.wordpiece import WordPiece, basic_words

logger = logging.getLogger("pinch.relevance.embedders")

# Where the distilled table ships, beside this package.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

# Bumped whenever a change here alters features for the same text, so cached
# features from an older release are never mixed with new ones.
FEATURE_VERSION = 1

# Width of the hashed half. 4,096 buckets keep a 201-row batch at 3 MB dense
# while two 2,000-character texts (~250 distinct terms each) collide on a
# handful of buckets at most; signed hashing makes those collisions cancel on
# average rather than add up.
HASH_DIM = 4096

# Weight of the static half in the blend; the hashed half gets the rest.
# 0.5 is where the measurements above were taken.
STATIC_WEIGHT = 0.5

# Identifier runs: letters, digits and "_", any script.
_RUNS = re.compile(r"\w+")

# The same runs on ASCII bytes: every other byte becomes a space and
# bytes.split() does the rest, at under half the cost of the expression.
_ASCII_RUN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_NON_RUN_TO_SPACE = bytes(b if b in _ASCII_RUN_BYTES else 0x20 for b in range(256))

# Pieces of one run: "HTTPServer2_conf" -> HTTP, Server, 2, conf.
_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_A-Za-z]+")

# ASCII punctuation as BERT sees it: every printable non-alphanumeric but "_",
# which is dealt with inside runs.
_ASCII_PUNCT = re.compile(r"[!-/:-@\[-^`{-~]")

# Control characters BERT deletes rather than splits at.
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# English words too common to say what a text is about. The batch IDF would
# discount them anyway, but a batch of a dozen texts is too small to be sure.
_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her "
    "his i if in into is it its me my no not of on or our she so than that the their them "
    "then there these they this to too was we were what when where which while who will "
    "with would you your".split()
)

# Distinct runs remembered before the memory is reset: about 30 MB at most,
# and more than a few hundred long sessions use. Runs repeat heavily in tool
# output, so after a few requests nearly every run is already known.
_RUN_LIMIT = 200_000

# A feature is: u32 term count, u32 static width, then the term hashes (u32),
# the term counts (f32) and the static vector (f32).
_HEADER = struct.Struct("<II")

_missing_data_logged = False
_missing_data_lock = threading.Lock()


def _terms_of_run(run: str) -> tuple[int, ...]:
    """Stable 32-bit hashes of a run's pieces, and of the run whole if compound."""
    pieces = [p.lower() for p in _PIECES.findall(run)]
    terms = [p for p in pieces if len(p) > 1 and not p.isdigit() and p not in _STOPWORDS]
    if len(pieces) > 1:
        whole = run.strip("_").lower()
        if whole and not whole.isdigit():
            terms.append(whole)
    # crc32, not hash(): str hashes change per process, and features are
    # shared between workers through Redis.
    return tuple(zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in terms)


class StaticTable:
    """The distilled MiniLM token table, memory-mapped, and its tokenizer."""

    def __init__(self, directory: Path):
        # A plain ndarray over the map: np.memmap's subclass hooks cost more
        # than the gather itself on a few hundred rows.
        self.vectors = np.asarray(np.load(directory / "static_embeddings.npy", mmap_mode="r"))
        self.scales = np.load(directory / "static_scales.npy").astype(np.float32)
        self.tokenizer = WordPiece.from_file(directory / "static_vocab.txt")
        meta = json.loads((directory / "static_meta.json").read_text(encoding="utf-8"))
        rows = len(self.tokenizer.ids)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != rows or len(self.scales) != rows:
            raise ValueError("table, scales and vocabulary disagree on the number of tokens")
        self.dim = int(self.vectors.shape[1])
        self.fingerprint = str(meta.get("table_sha256", "unknown"))[:12]

    def ids_of_run(self, run: str) -> tuple[int, ...]:
        """WordPiece ids of an ASCII ``\\w+`` run; BERT splits "_" off as punctuation."""
        word_ids = self.tokenizer.word_ids
        parts = run.lower().split("_")
        if len(parts) == 1:
            return word_ids(parts[0])
        underscore = word_ids("_")
        out: list[int] = []
        for i, part in enumerate(parts):
            if i:
                out.extend(underscore)
            if part:
                out.extend(word_ids(part))
        return tuple(out)

    def mean(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The unit mean of rows ``ids`` (repeats allowed), row i counted ``counts[i]`` times."""
        keep = ids != self.tokenizer.unk_id
        ids, counts = ids[keep], counts[keep]
        if not len(ids):
            return np.zeros(self.dim, dtype=np.float32)
        # float32 @ int8 promotes the gathered rows to float32 inside matmul.
        summed = (counts * self.scales[ids]).astype(np.float32) @ self.vectors[ids]
        norm = float(np.linalg.norm(summed))
        return summed / norm if norm > 0 else summed

    def vector(self, text: str) -> np.ndarray:
        """``text``'s vector by BERT's own word split, for any script."""
        ids: list[int] = []
        counts: list[int] = []
        for word, n in Counter(basic_words(text)).items():
            for token in self.tokenizer.word_ids(word):
                ids.append(token)
                counts.append(n)
        return self.mean(np.array(ids, dtype=np.intp), np.array(counts, dtype=np.float32))


def load_static_table(directory: Path = DATA_DIR) -> StaticTable | None:
    """The shipped table, or None (logged once per process) when it cannot be read."""
    global _missing_data_logged
    try:
        return StaticTable(directory)
    except (OSError, ValueError, KeyError) as exc:
        with _missing_data_lock:
            if not _missing_data_logged:
                _missing_data_logged = True
                logger.warning(
                    "static embedding table unavailable (%s: %s); builtin embedder uses the "
                    "hashed TF-IDF alone",
                    type(exc).__name__,
                    exc,
                )
        return None


class _Ragged:
    """Rows of small integer tuples in one flat array, appended in batches."""

    def __init__(self, dtype):
        self.flat = np.zeros(1024, dtype=dtype)
        self.starts = np.zeros(1024, dtype=np.intp)
        self.lengths = np.zeros(1024, dtype=np.intp)
        self.rows = 0
        self.used = 0

    def append(self, rows: list[tuple[int, ...]]) -> None:
        lengths = np.fromiter(map(len, rows), dtype=np.intp, count=len(rows))
        values = np.fromiter((v for r in rows for v in r), dtype=self.flat.dtype)
        first, stop = self.rows, self.rows + len(rows)
        self.starts = _room(self.starts, stop)
        self.lengths = _room(self.lengths, stop)
        self.flat = _room(self.flat, self.used + len(values))
        self.lengths[first:stop] = lengths
        self.starts[first:stop] = self.used + np.cumsum(lengths) - lengths
        self.flat[self.used : self.used + len(values)] = values
        self.rows, self.used = stop, self.used + len(values)

    def expand(self, rows: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of ``rows`` laid end to end, each with its row's count."""
        lengths = self.lengths[rows]
        owner = np.repeat(np.arange(len(rows)), lengths)
        within = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return self.flat[self.starts[rows][owner] + within], counts[owner]


def _room(array: np.ndarray, size: int) -> np.ndarray:
    if size <= len(array):
        return array
    grown = np.zeros(max(size, 2 * len(array)), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class _Runs:
    """What each distinct identifier run contributes, analysed once."""

    def __init__(self, describe: Callable[[str], tuple[tuple[int, ...], tuple[int, ...]]]):
        # Keys are ASCII runs as bytes (the fast path) or other runs as str.
        self.describe = describe
        self.clear()

    def clear(self) -> None:
        self.index: dict[str, int] = {}
        self.terms = _Ragged(np.uint32)
        self.pieces = _Ragged(np.intp)

    def rows(self, runs: list[bytes | str]) -> np.ndarray:
        index = self.index
        rows = [index.get(r, -1) for r in runs]
        if -1 in rows:
            new = [r for r, i in zip(runs, rows) if i < 0]
            if len(index) + len(new) > _RUN_LIMIT:
                self.clear()
                index, new = self.index, list(runs)
            described = [
                self.describe(r.decode("ascii") if isinstance(r, bytes) else r) for r in new
            ]
            self.terms.append([d[0] for d in described])
            self.pieces.append([d[1] for d in described])
            for r in new:
                index[r] = len(index)
            rows = [index[r] for r in runs]
        return np.array(rows, dtype=np.intp)


class BuiltinEmbedder(Embedder):
    """Hashed TF-IDF over identifier pieces, blended with a static MiniLM table."""

    def __init__(self, static: bool = True, data_dir: Path | None = None):
        self.table = load_static_table(data_dir or DATA_DIR) if static else None
        if self.table is None:
            self.identity = f"builtin:v{FEATURE_VERSION}:hashed"
        else:
            self.identity = f"builtin:v{FEATURE_VERSION}:hybrid:{self.table.fingerprint}"
        self._runs = _Runs(self._describe_run)
        # The run memory is shared by every thread that embeds.
        self._lock = threading.Lock()
        # ASCII punctuation characters BERT reads as one known token each.
        codes, ids = [], []
        if self.table is not None:
            for code in range(128):
                if _ASCII_PUNCT.match(chr(code)):
                    pieces = self.table.tokenizer.word_ids(chr(code))
                    if len(pieces) == 1:
                        codes.append(code)
                        ids.append(pieces[0])
        self._punct_codes = np.array(codes, dtype=np.intp)
        self._punct_ids = np.array(ids, dtype=np.intp)

    @property
    def dim(self) -> int:
        return HASH_DIM + (self.table.dim if self.table is not None else 0)

    def _describe_run(self, run: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if self.table is None or not run.isascii():
            return _terms_of_run(run), ()
        return _terms_of_run(run), self.table.ids_of_run(run)

    def _text_features(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Term hashes and their counts for the hashed half, and the static vector."""
        ascii_text = text.isascii()
        if ascii_text:
            if _ASCII_CONTROL.search(text):
                # BERT deletes these rather than splitting at them.
                text = _ASCII_CONTROL.sub("", text)
            raw = text.encode("ascii")
            counter = Counter(raw.translate(_NON_RUN_TO_SPACE).split())
        else:
            counter = Counter(_RUNS.findall(text))
        rows = self._runs.rows(list(counter))
        counts = np.fromiter(counter.values(), dtype=np.float32, count=len(counter))

        terms, term_counts = self._runs.terms.expand(rows, counts)
        hashes, inverse = np.unique(terms, return_inverse=True)
        values = np.bincount(inverse, weights=term_counts, minlength=len(hashes))

        if self.table is None:
            static = None
        elif not ascii_text:
            static = self.table.vector(text)
        else:
            ids, id_counts = self._runs.pieces.expand(rows, counts)
            histogram = np.bincount(np.frombuffer(raw, np.uint8), minlength=128)
            punct = histogram[self._punct_codes]
            seen = punct > 0
            static = self.table.mean(
                np.concatenate([ids, self._punct_ids[seen]]),
                np.concatenate([id_counts, punct[seen].astype(np.float32)]),
            )
        return hashes.astype("<u4"), values.astype("<f4"), static

    def featurize(self, texts: Sequence[str]) -> list[bytes]:
        out = []
        with self._lock:
            for text in texts:
                hashes, values, static = self._text_features(text)
                width = 0 if static is None else len(static)
                parts = [_HEADER.pack(len(hashes), width), hashes.tobytes(), values.tobytes()]
                if static is not None:
                    parts.append(static.astype("<f4").tobytes())
                out.append(b"".join(parts))
        return out

    def finish(self, features: Sequence[bytes]) -> np.ndarray:
        n = len(features)
        static_dim = self.table.dim if self.table is not None else 0
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        hashes, values, rows = [], [], []
        statics = np.zeros((n, static_dim), dtype=np.float32)
        for i, feature in enumerate(features):
            try:
                count, width = _HEADER.unpack_from(feature)
                at = _HEADER.size
                hashes.append(np.frombuffer(feature, dtype="<u4", count=count, offset=at))
                at += 4 * count
                values.append(np.frombuffer(feature, dtype="<f4", count=count, offset=at))
                at += 4 * count
                if width != static_dim or len(feature) != at + 4 * width:
                    raise ValueError("feature from another table")
                if width:
                    statics[i] = np.frombuffer(feature, dtype="<f4", count=width, offset=at)
            except (struct.error, ValueError) as exc:
                raise EmbeddingError(f"unreadable builtin feature: {exc}") from None
            rows.append(np.full(count, i, dtype=np.intp))

        all_hashes = np.concatenate(hashes)
        hashed = np.zeros((n, HASH_DIM), dtype=np.float32)
        if len(all_hashes):
            all_values = np.concatenate(values).astype(np.float64)
            all_rows = np.concatenate(rows)
            # Each text lists a term once, so a term's count here is its
            # document frequency in the batch.
            _, inverse, df = np.unique(all_hashes, return_inverse=True, return_counts=True)
            idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
            weight = (1.0 + np.log(all_values)) * idf[inverse]
            # The top bit of the hash picks the sign, the low bits the bucket.
            sign = 1.0 - 2.0 * (all_hashes >> 31).astype(np.float64)
            bucket = (all_hashes & (HASH_DIM - 1)).astype(np.intp)
            flat = np.bincount(
                all_rows * HASH_DIM + bucket, weights=weight * sign, minlength=n * HASH_DIM
            )
            hashed = flat.reshape(n, HASH_DIM).astype(np.float32)
            norms = np.linalg.norm(hashed, axis=1, keepdims=True)
            np.divide(hashed, norms, out=hashed, where=norms > 0)

        if static_dim == 0:
            return hashed
        out = np.empty((n, HASH_DIM + static_dim), dtype=np.float32)
        out[:, :HASH_DIM] = hashed * np.float32(np.sqrt(1.0 - STATIC_WEIGHT))
        out[:, HASH_DIM:] = statics * np.float32(np.sqrt(STATIC_WEIGHT))
        return out
