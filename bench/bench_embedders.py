"""How long relevance ranking costs on the request path, per embedder and cache state.

Ranks one request against 50 and 200 real tool results from the shared corpus
(../shared/corpus/conversations, results of 2,000 characters or more), with
the builtin embedder hashed-only and hybrid side by side, and reports the
median of several rounds of ``embed`` + ``order_by_relevance``:

* new process  - a new embedder (its per-word memory empty) and an empty cache;
                 the table load is reported apart, on its own line
* cold cache   - an embedder that has already seen other tool results (a
                 process in steady state) and an empty cache: a new conversation
* next turn    - cache warm but for the request and one new result: the
                 common case, every turn of a running session
* warm cache   - every text cached; only the batch step (IDF, blend) runs

Each size is measured twice: candidates cut to ``max_chars`` (2,000, the
default, which is what the edge embeds) and at full length (what it would
cost without the cut). Wall-clock and this thread's CPU time are both shown,
as medians, with the smallest CPU time seen: the machine has 2 cores shared
with other work, so wall time is noisy, and the minimum CPU time is the best
guide to the cost on one quiet core.

    .venv/bin/python bench/bench_embedders.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np

from bench.corpus import bench_conversations
from bench.machine import describe_machine
from pinch import order_by_relevance
from pinch.embedders import BuiltinEmbedder
from pinch.embedding_cache import CachedEmbedder, EmbeddingCache

# The edge's default cut: candidates are embedded from their first 2,000 chars.
MAX_CHARS = 2000

# Sizes asked for: a typical long session, and a very long one.
SIZES = (50, 200)


def load_corpus() -> tuple[str, list[str], list[str]]:
    """A request, the long tool results (>= MAX_CHARS), and every other tool result."""
    query, long_results, others = "", [], []
    folder, sessions = bench_conversations()
    for session in sessions:
        for m in session.messages:
            text = m.get("content")
            if not isinstance(text, str) or not text.strip():
                continue
            if m.get("role") == "user" and not query:
                query = text
            elif m.get("role") == "tool":
                (long_results if len(text) >= MAX_CHARS else others).append(text)
    if len(long_results) < max(SIZES):
        sys.exit(f"need {max(SIZES)} tool results of {MAX_CHARS}+ chars in {folder}")
    return query, long_results, others


def timed(fn, *args) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    fn(*args)
    return (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000


def rank(embedder, texts: list[str]) -> list[int]:
    vectors = embedder.embed(texts)
    return order_by_relevance(vectors[0], vectors[1:])


def measure(static: bool, texts: list[str], warmup: list[str], rounds: int) -> dict:
    new_text = texts[1] + " (edited)"
    results: dict[str, list[tuple[float, float]]] = {
        k: [] for k in ("new process", "cold cache", "next turn", "warm cache")
    }
    for _ in range(rounds):
        fresh = CachedEmbedder(BuiltinEmbedder(static=static), EmbeddingCache())
        results["new process"].append(timed(rank, fresh, texts))

        steady = BuiltinEmbedder(static=static)
        steady.featurize(warmup)
        embedder = CachedEmbedder(steady, EmbeddingCache())
        results["cold cache"].append(timed(rank, embedder, texts))
        turn = ["a new request " + texts[0]] + texts[1:] + [new_text]
        results["next turn"].append(timed(rank, embedder, turn))
        results["warm cache"].append(timed(rank, embedder, texts))
    return {
        k: (
            statistics.median(w for w, _ in v),
            statistics.median(c for _, c in v),
            min(c for _, c in v),
        )
        for k, v in results.items()
    }


def machine() -> str:
    blas = os.environ.get("OPENBLAS_CORETYPE")
    return f"{describe_machine()}; numpy {np.__version__}" + (
        f"; OPENBLAS_CORETYPE={blas}" if blas else ""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    query, long_results, others = load_corpus()
    print(f"machine: {machine()}")
    print(
        f"corpus: {len(long_results)} tool results of {MAX_CHARS}+ chars; request "
        f"{len(query[:MAX_CHARS])} chars; median of {args.rounds} rounds; ms wall / ms CPU"
    )

    loads = [timed(BuiltinEmbedder)[0] for _ in range(args.rounds)]
    print(f"table load (BuiltinEmbedder()): {statistics.median(loads):.1f} ms wall\n")

    header = f"{'batch':<24}{'state':<13}{'hashed-only':>23}{'hybrid':>23}"
    print(header)
    print(f"{'':<37}{'wall / CPU / min CPU':>23}{'wall / CPU / min CPU':>23}")
    print("-" * len(header))
    for size in SIZES:
        for cut in (True, False):
            chosen = long_results[:size]
            cands = [t[:MAX_CHARS] for t in chosen] if cut else chosen
            texts = [query[:MAX_CHARS]] + cands
            chars = sum(map(len, cands)) // len(cands)
            label = f"1+{size} x {'cut' if cut else 'full'} ~{chars}c"
            warmup = [t[:MAX_CHARS] if cut else t for t in others + long_results[size:]]
            hashed = measure(False, texts, warmup, args.rounds)
            hybrid = measure(True, texts, warmup, args.rounds)
            for state in hashed:
                h, y = hashed[state], hybrid[state]
                print(
                    f"{label:<24}{state:<13}{h[0]:>9.1f} /{h[1]:>6.1f} /{h[2]:>5.1f}"
                    f"{y[0]:>9.1f} /{y[1]:>6.1f} /{y[2]:>5.1f}"
                )
                label = ""
        print()
    print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
