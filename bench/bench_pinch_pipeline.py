"""How long the pinch stage takes as the router runs it: relevance edge + prune, per 100k tokens.

bench/bench_prune.py times the pure ``prune_context`` alone; the router pays
more than that on every request: ``routing.pruning.pinch_messages`` first asks
the relevance edge for an order (embedding the last user turn and every
trim-eligible tool result with the builtin embedder, whose features are cached
by content hash), then prunes. This times that call with the shipped default
config over every request of every corpus session (for each assistant turn t,
the request is ``messages[:t]``, see routing/replay/corpus.py), in four ways:

* relevance off: the edge declines at once, the rest is prune_context;
* relevance, cold: the embedding cache is emptied before every timed call,
  the cost of a conversation the process has never seen;
* relevance, session order: the cache is emptied once per round and the
  requests are replayed in order, so each turn finds the earlier turns' tool
  results cached: what a router serving one agent session pays;
* relevance, warm: the same request a second time, every feature cached;
* payback, session order (the shipped default, ``pinch.payback``): requests in
  order with the conversation's ledger carried in a fresh in-memory store per
  round, as a router serving one agent pays;
* payback, no ledger: every request rebuilds its decisions from the messages,
  what a worker pays the first time it sees a conversation.

The first four run the budget prune (``pinch.payback.enabled: false``), which
is what relevance ordering orders.

Then the edge's own target case: one query and 200 candidates (tool results
from the corpus), cold and warm.

Run: ``.venv/bin/python bench/bench_pinch_pipeline.py [--rounds N]``
(``CORPUS_DIR`` overrides where the conversations are read from).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
os.environ["REDIS_URL"] = ""  # the in-process cache is what is measured

import django

django.setup()

from bench.corpus import bench_conversations, corpus_arguments
from bench.machine import describe_machine
from pinch.embedders import make_embedder
from pinch.relevance import relevance_for, reset_relevance_state
from routing.config import DEFAULT_CONFIG_PATH, PinchConfig, apply_overrides, validate_config
from routing.config.source import read_config_file
from routing.prefix_probe import PrefixProbe
from routing.pruning import LedgerSlot, pinch_messages

PER = 100_000  # tokens: the unit bench_prune.py reports in
CANDIDATES = 200  # the relevance target: 1 query + 200 candidates under 50 ms cold


def pinch_config(relevance: bool, payback: bool = False) -> PinchConfig:
    """The shipped default config, relevance and payback on or off, through the strict schema."""
    data = read_config_file(DEFAULT_CONFIG_PATH)
    changes = {"pinch.relevance.enabled": relevance, "pinch.payback.enabled": payback}
    data = apply_overrides(data, changes, [])
    return validate_config(data).pinch


def timed_ns(fn: Callable[[], object]) -> int:
    started = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - started


def samples_ns(
    fn: Callable[[], object], rounds: int, before: Callable[[], object] | None = None
) -> list[int]:
    """``rounds`` timings of ``fn``; ``before`` runs untimed ahead of each."""
    samples = []
    for _ in range(rounds):
        if before is not None:
            before()
        samples.append(timed_ns(fn))
    return samples


def wall_and_cpu_ns(
    fn: Callable[[], object], rounds: int, before: Callable[[], object] | None = None
) -> tuple[list[int], list[int]]:
    """Wall and process CPU time of ``rounds`` calls (CPU counts the edge's worker thread too).

    On a shared machine wall time says what a request waited; the CPU time is
    the better guide to what one quiet core would take.
    """
    wall, cpu = [], []
    for _ in range(rounds):
        if before is not None:
            before()
        started, started_cpu = time.perf_counter_ns(), time.process_time_ns()
        fn()
        cpu.append(time.process_time_ns() - started_cpu)
        wall.append(time.perf_counter_ns() - started)
    return wall, cpu


def median_ns(fn: Callable[[], object], rounds: int, before: Callable[[], object] | None = None):
    return int(statistics.median(samples_ns(fn, rounds, before)))


def per_100k_ms(ns: float, tokens: int) -> float:
    return ns / 1e6 * PER / tokens


def synthetic_request(conversations, candidates: int, keep: int) -> list[dict]:
    """One user turn and ``candidates + keep`` real tool results; ``candidates`` are eligible."""
    results = [
        m["content"]
        for c in conversations
        for m in c.messages
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and len(m["content"]) > 200
    ]
    task = next(m for m in conversations[0].messages if m.get("role") == "user")
    messages = [{"role": "user", "content": task["content"]}]
    for i in range(candidates + keep):
        call_id = f"call_{i}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": results[i % len(results)]}
        )
    return messages


def main() -> None:
    args = corpus_arguments(__doc__, rounds=5).parse_args()

    folder, conversations = bench_conversations()
    sessions = [list(c.requests()) for c in conversations]
    requests = [r for s in sessions for r in s]

    off, on = pinch_config(relevance=False), pinch_config(relevance=True)
    print(f"# machine: {describe_machine()} at start")
    print(
        f"# corpus: {len(conversations)} sessions, {len(requests)} requests; shipped config "
        f"(budget {on.budget_tokens}, keep_last_tool_results {on.keep_last_tool_results}, "
        f"relevance {on.relevance.backend}); medians of {args.rounds} rounds per request"
    )

    # GC off while timing, as timeit does: one unlucky collection must not decide a figure.
    gc.disable()
    try:
        tokens, used, columns = [], [], {}
        columns["relevance off"] = []
        for request in requests:
            _, outcome = pinch_messages(request, off, 0)
            tokens.append(outcome.original_tokens)
            columns["relevance off"].append(
                median_ns(lambda r=request: pinch_messages(r, off, 0), args.rounds)
            )
        for request in requests:
            columns.setdefault("relevance, cold", []).append(
                median_ns(
                    lambda r=request: pinch_messages(r, on, 0), args.rounds, reset_relevance_state
                )
            )
        # Session order and warm are timed back to back on each request, so
        # that a busy moment of a shared machine weighs on both alike.
        session_order = [[] for _ in requests]
        warm = [[] for _ in requests]
        for _ in range(args.rounds):
            i = 0
            for session in sessions:
                reset_relevance_state()
                for request in session:
                    session_order[i].append(timed_ns(lambda r=request: pinch_messages(r, on, 0)))
                    warm[i].append(timed_ns(lambda r=request: pinch_messages(r, on, 0)))
                    i += 1
        columns["relevance, session order"] = [int(statistics.median(s)) for s in session_order]
        columns["relevance, warm"] = [int(statistics.median(s)) for s in warm]
        paying = pinch_config(relevance=False, payback=True)
        carried = [[] for _ in requests]
        for _ in range(args.rounds):
            store = PrefixProbe()
            i = 0
            for n, session in enumerate(sessions):
                slot = LedgerSlot(store, f"bench-{n}")
                for request in session:
                    carried[i].append(
                        timed_ns(lambda r=request, s=slot: pinch_messages(r, paying, 0, slot=s))
                    )
                    i += 1
        columns["payback, session order"] = [int(statistics.median(s)) for s in carried]
        columns["payback, no ledger"] = [
            median_ns(lambda r=request: pinch_messages(r, paying, 0), args.rounds)
            for request in requests
        ]
        used = [pinch_messages(r, on, 0)[1].relevance_used for r in requests]
    finally:
        gc.enable()

    over = [i for i, t in enumerate(tokens) if t > on.budget_tokens]
    print()
    print(
        "pinch_messages (relevance edge + prune_context, or the payback plan), ms per 100k tokens"
    )
    print("overall = sum(time) / sum(tokens); over budget = the requests pinch prunes")
    header = (
        f"{'':28} {'overall':>8} {'median':>8} {'worst':>8} "
        f"{'over: overall':>14} {'over: median':>13} {'over: worst':>12} {'worst ms':>9}"
    )
    print(header)
    for name, times in columns.items():
        speeds = [per_100k_ms(ns, t) for ns, t in zip(times, tokens, strict=True) if t]
        over_speeds = [per_100k_ms(times[i], tokens[i]) for i in over]
        overall = per_100k_ms(sum(times), sum(tokens))
        over_overall = per_100k_ms(sum(times[i] for i in over), sum(tokens[i] for i in over))
        print(
            f"{name:28} {overall:>8.3f} {statistics.median(speeds):>8.3f} {max(speeds):>8.3f} "
            f"{over_overall:>14.3f} {statistics.median(over_speeds):>13.3f} "
            f"{max(over_speeds):>12.3f} {max(times) / 1e6:>9.2f}"
        )
    print(
        f"({len(requests)} requests, {sum(tokens):,} tokens; {len(over)} over budget, "
        f"{sum(tokens[i] for i in over):,} tokens"
        + (f"; relevance ordering used on {sum(used)} of them)" if used else ")")
    )
    keep = on.keep_last_tool_results or 0
    messages = synthetic_request(conversations, CANDIDATES, keep)

    def rank():
        result = relevance_for(
            messages, on, budget_tokens=on.budget_tokens, extra_fixed_tokens=0, redis_url=""
        )
        if result.order is None or len(result.order) != CANDIDATES:
            sys.exit(f"the edge did not rank {CANDIDATES} candidates: {result!r}")

    gc.disable()
    try:
        cold = wall_and_cpu_ns(rank, args.rounds, reset_relevance_state)
        rank()
        warm = wall_and_cpu_ns(rank, args.rounds)
        # The reset drops the embedder too, so "cold" includes building it again
        # (reading the vocabulary): shown apart, it is paid once per process.
        build = wall_and_cpu_ns(lambda: make_embedder(on.relevance).embed(["warm up"]), args.rounds)
    finally:
        gc.enable()
    print()
    print(f"relevance_for: 1 query + {CANDIDATES} candidates (corpus tool results), ms")
    print(f"{'':28} {'median':>8} {'min':>8} {'max':>8} {'cpu median':>11} {'cpu min':>8}")
    rows = (
        ("cold (reset_relevance_state)", cold),
        ("  of which: a new embedder", build),
        ("warm (all cached)", warm),
    )
    for name, (wall, cpu) in rows:
        ms, cpu_ms = [ns / 1e6 for ns in wall], [ns / 1e6 for ns in cpu]
        print(
            f"{name:28} {statistics.median(ms):>8.2f} {min(ms):>8.2f} {max(ms):>8.2f} "
            f"{statistics.median(cpu_ms):>11.2f} {min(cpu_ms):>8.2f}"
        )


if __name__ == "__main__":
    main()
