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
result share few words, at 30-40 ms. On the ten scenarios of
tests/pinch/test_embedders_quality.py: MRR 0.85 hashed, 0.93 hybrid (0.83 ->
1.00 where few words are shared). Full figures are in docs/relevance.md.

Speed is mostly Python per distinct word, so each distinct identifier run is
analysed once per process and kept in flat arrays (its hashed terms, its
WordPiece ids); a text then costs a bytes.translate, a split and a Counter,
and the numpy work is done once per batch rather than per text (a numpy call
costs about what its arithmetic on one text does). Punctuation, which BERT
counts as words, comes from a byte histogram. Measured with
bench/bench_embedders.py on 2 busy cores: 1 request + 200 tool results of
2,000 characters in ~45-55 ms of CPU with an empty cache, ~10 ms on a later
turn; the first version, all numpy calls per text, took ~85 ms cold.

The blend is a concatenation of the two unit-normed halves, each scaled by the
square root of its weight, so the cosine ``order_by_relevance`` takes of two
such vectors is exactly the weighted sum of the two cosines.

Without the data files (a trimmed install) the hashed half works alone; that
is logged once per process.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from pinch.embedders.base import Embedder, EmbeddingError
from pinch.embedders.terms import ASCII_CONTROL, ASCII_PUNCT, NON_RUN_TO_SPACE, RUNS, terms_of_run
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

# Distinct runs remembered before the memory is reset: about 30 MB at most,
# and more than a few hundred long sessions use. Runs repeat heavily in tool
# output, so after a few requests nearly every run is already known.
_RUN_LIMIT = 200_000

# A feature is: u32 term count, u32 static width, then the term hashes (u32),
# the term counts (f32) and the static vector (f32).
_HEADER = struct.Struct("<II")

_missing_data_logged = False
_missing_data_lock = threading.Lock()


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

    def expand(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of ``rows`` laid end to end, and the position in ``rows`` of each."""
        lengths = self.lengths[rows]
        owner = np.repeat(np.arange(len(rows)), lengths)
        within = np.arange(len(owner)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return self.flat[self.starts[rows][owner] + within], owner


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
        self.index: dict[bytes | str, int] = {}
        self.terms = _Ragged(np.uint32)
        self.pieces = _Ragged(np.intp)

    def make_room(self, incoming: int) -> None:
        """Forget every run if ``incoming`` more could pass the limit.

        Called before a batch rather than during it, so that row numbers
        handed out for one text stay valid for the rest of the batch.
        """
        if len(self.index) + incoming > _RUN_LIMIT:
            self.clear()

    def rows(self, runs: list[bytes | str]) -> list[int]:
        index = self.index
        rows = [index.get(r, -1) for r in runs]
        if -1 in rows:
            new = [r for r, i in zip(runs, rows) if i < 0]
            described = [
                self.describe(r.decode("ascii") if isinstance(r, bytes) else r) for r in new
            ]
            self.terms.append([d[0] for d in described])
            self.pieces.append([d[1] for d in described])
            for r in new:
                index[r] = len(index)
            rows = [index[r] for r in runs]
        return rows


class BuiltinEmbedder(Embedder):
    """Hashed TF-IDF over identifier pieces, blended with a static MiniLM table."""

    @classmethod
    def from_settings(cls, settings) -> BuiltinEmbedder:
        return cls()  # nothing to set: offline, in process

    def __init__(self, static: bool = True, data_dir: Path | None = None):
        self.table = load_static_table(data_dir or DATA_DIR) if static else None
        if self.table is None:
            self.identity = f"builtin:v{FEATURE_VERSION}:hashed"
        else:
            self.identity = f"builtin:v{FEATURE_VERSION}:hybrid:{self.table.fingerprint}"
        self._runs = _Runs(self._describe_run)
        # The run memory is shared by every thread that embeds.
        self._lock = threading.Lock()
        # ASCII punctuation, which BERT reads as one word per character: each
        # one's contribution to a text's sum, one row per character code.
        self._punct_codes = np.zeros(0, dtype=np.intp)
        self._punct_rows = np.zeros((0, self.table.dim if self.table else 0), np.float32)
        if self.table is not None:
            codes, ids = [], []
            for code in range(128):
                if ASCII_PUNCT.match(chr(code)):
                    pieces = self.table.tokenizer.word_ids(chr(code))
                    if len(pieces) == 1 and pieces[0] != self.table.tokenizer.unk_id:
                        codes.append(code)
                        ids.append(pieces[0])
            self._punct_codes = np.array(codes, dtype=np.intp)
            self._punct_rows = self.table.scales[ids, None] * self.table.vectors[ids]

    @property
    def dim(self) -> int:
        return HASH_DIM + (self.table.dim if self.table is not None else 0)

    def _describe_run(self, run: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if self.table is None or not run.isascii():
            return terms_of_run(run), ()
        pieces = self.table.ids_of_run(run)
        return terms_of_run(run), tuple(p for p in pieces if p != self.table.tokenizer.unk_id)

    def featurize(self, texts: Sequence[str]) -> list[bytes]:
        """Per text: its distinct terms with counts, and its static vector.

        The Python work (splitting, counting) is per text; the numpy work is
        done once for the whole batch, since a numpy call costs about as much
        as the arithmetic it does on one text.
        """
        n = len(texts)
        if n == 0:
            return []
        cleaned, counters = [], []
        for text in texts:
            if text.isascii():
                if ASCII_CONTROL.search(text):
                    # BERT deletes these rather than splitting at them.
                    text = ASCII_CONTROL.sub("", text)
                raw = text.encode("ascii")
                counters.append(Counter(raw.translate(NON_RUN_TO_SPACE).split()))
                cleaned.append(raw)
            else:
                counters.append(Counter(RUNS.findall(text)))
                cleaned.append(text)

        with self._lock:
            self._runs.make_room(sum(map(len, counters)))
            rows: list[int] = []
            for counter in counters:
                rows.extend(self._runs.rows(list(counter)))
            rows_array = np.array(rows, dtype=np.intp)
            text_of_row = np.repeat(np.arange(n), [len(c) for c in counters])
            counts = np.fromiter(
                (v for c in counters for v in c.values()), dtype=np.float64, count=len(rows)
            )
            terms, term_row = self._runs.terms.expand(rows_array)
            pieces, piece_row = self._runs.pieces.expand(rows_array)

        # The hashed half: distinct (text, term) pairs and their summed counts.
        keys = (text_of_row[term_row].astype(np.uint64) << np.uint64(32)) | terms
        keys, inverse = np.unique(keys, return_inverse=True)
        term_counts = np.bincount(inverse, weights=counts[term_row], minlength=len(keys))
        hashes = (keys & np.uint64(0xFFFFFFFF)).astype("<u4")
        term_counts = term_counts.astype("<f4")
        term_bounds = np.searchsorted(keys >> np.uint64(32), np.arange(n + 1, dtype=np.uint64))

        statics = self._static_vectors(cleaned, pieces, text_of_row[piece_row], counts[piece_row])

        out = []
        for i in range(n):
            a, b = term_bounds[i], term_bounds[i + 1]
            parts = [
                _HEADER.pack(int(b - a), 0 if statics is None else statics.shape[1]),
                hashes[a:b].tobytes(),
                term_counts[a:b].tobytes(),
            ]
            if statics is not None:
                parts.append(statics[i].tobytes())
            out.append(b"".join(parts))
        return out

    def _static_vectors(self, cleaned, pieces, piece_text, piece_counts) -> np.ndarray | None:
        """Unit mean token rows per text, or None without a table.

        ``pieces`` are the WordPiece ids of the ASCII texts' runs, grouped by
        text (``piece_text`` is non-decreasing); punctuation is added from a
        byte histogram; other texts take BERT's exact split.
        """
        if self.table is None:
            return None
        n = len(cleaned)
        table = self.table
        sums = np.zeros((n, table.dim), dtype=np.float32)
        weights = (piece_counts * table.scales[pieces]).astype(np.float32)
        bounds = np.searchsorted(piece_text, np.arange(n + 1))
        for i, text in enumerate(cleaned):
            if isinstance(text, str):
                sums[i] = table.vector(text)
                continue
            a, b = bounds[i], bounds[i + 1]
            if b > a:
                sums[i] = weights[a:b] @ table.vectors[pieces[a:b]]
            histogram = np.bincount(np.frombuffer(text, np.uint8), minlength=128)
            # Row by row, not one matrix product for the batch: BLAS kernels round a
            # row differently by its position in the batch, and a text's vector must
            # not depend on which texts it was embedded with (the cache relies on it).
            sums[i] += histogram[self._punct_codes].astype(np.float32) @ self._punct_rows
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        np.divide(sums, norms, out=sums, where=norms > 0)
        return sums.astype("<f4")

    def finish(self, features: Sequence[bytes]) -> np.ndarray:
        n = len(features)
        static_dim = self.table.dim if self.table is not None else 0
        width = HASH_DIM + static_dim
        # The result is built in place: a 201-row batch is 3.5 MB, and every
        # extra pass over it costs as much as the arithmetic that fills it.
        out = np.zeros((n, width), dtype=np.float32)
        if n == 0:
            return out
        hashes, values, counts = [], [], []
        for i, feature in enumerate(features):
            try:
                count, static_width = _HEADER.unpack_from(feature)
                at = _HEADER.size
                hashes.append(np.frombuffer(feature, dtype="<u4", count=count, offset=at))
                at += 4 * count
                values.append(np.frombuffer(feature, dtype="<f4", count=count, offset=at))
                at += 4 * count
                if static_width != static_dim or len(feature) != at + 4 * static_width:
                    raise ValueError("feature from another table")
                if static_width:
                    out[i, HASH_DIM:] = np.frombuffer(feature, "<f4", static_width, at)
            except (struct.error, ValueError) as exc:
                raise EmbeddingError(f"unreadable builtin feature: {exc}") from None
            counts.append(count)

        all_hashes = np.concatenate(hashes)
        if len(all_hashes):
            rows = np.repeat(np.arange(n), counts)
            # Each text lists a term once, so a term's count here is its
            # document frequency in the batch.
            _, inverse, df = np.unique(all_hashes, return_inverse=True, return_counts=True)
            idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
            weight = (1.0 + np.log(np.concatenate(values))) * idf[inverse]
            # The top bit of the hash picks the sign, the low bits the bucket.
            weight[all_hashes >= np.uint32(1 << 31)] *= -1.0
            bucket = (all_hashes & np.uint32(HASH_DIM - 1)).astype(np.intp)
            np.add.at(out.reshape(-1), rows * width + bucket, weight.astype(np.float32))
            hashed = out[:, :HASH_DIM]
            norms = np.sqrt(np.einsum("ij,ij->i", hashed, hashed))
            scale = np.float32(np.sqrt(1.0 - STATIC_WEIGHT if static_dim else 1.0))
            hashed *= np.divide(scale, norms, out=np.zeros_like(norms), where=norms > 0)[:, None]
        if static_dim:
            out[:, HASH_DIM:] *= np.float32(np.sqrt(STATIC_WEIGHT))
        return out
