"""How long prune_context takes on real requests, next to the cost of merely parsing them.

pinch runs on every chat-completions request, so its cost is paid per turn by
every agent session. This replays the shared corpus the way an agent sent it
(for each assistant turn t, the request is ``messages[:t]``), times
prune_context on each request, and prints the time per 100k tokens of
conversation. Beside it, as a floor, the time to ``json.loads`` and
``json.dumps`` the same request bodies: a router must at least parse and
re-serialise the body, so pinch is cheap when it costs a fraction of that.

Run: ``.venv/bin/python bench/bench_prune.py [--rounds N] [--budget TOKENS]``
(``CORPUS_DIR`` overrides where the conversations are read from).
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import bench_conversations, corpus_arguments
from bench.machine import describe_machine
from pinch import prune_context

PER = 100_000  # tokens: the unit the target is stated in (< 1 ms per 100k tokens)


def median_ns(fn: Callable[[], object], rounds: int) -> int:
    # Garbage collection off while timing, as timeit does, so one unlucky
    # collection does not decide a request's figure.
    gc.disable()
    try:
        samples = []
        for _ in range(rounds):
            start = time.perf_counter_ns()
            fn()
            samples.append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    return int(statistics.median(samples))


def per_100k_us(ns: int, tokens: int) -> float:
    return ns / 1000 * PER / tokens


def main() -> None:
    parser = corpus_arguments(__doc__, rounds=7)
    parser.add_argument("--budget", type=int, default=50_000, help="pinch budget in tokens")
    args = parser.parse_args()

    folder, conversations = bench_conversations()
    requests = [r for c in conversations for r in c.requests()]

    settings = {
        "keep_last_tool_results=6": {"keep_last_tool_results": 6},
        "keep_last_tool_results=None": {"keep_last_tool_results": None},
    }
    rows: dict[str, list[tuple[int, int, dict]]] = {name: [] for name in settings}
    floor: list[tuple[int, int]] = []
    for request in requests:
        body = json.dumps({"model": "auto", "messages": request})
        _, baseline = prune_context(request, budget_tokens=args.budget)
        tokens = baseline["original_tokens"]
        if tokens == 0:
            continue
        for name, knobs in settings.items():
            _, stats = prune_context(request, budget_tokens=args.budget, **knobs)
            ns = median_ns(
                lambda r=request, k=knobs: prune_context(r, budget_tokens=args.budget, **k),
                args.rounds,
            )
            rows[name].append((ns, tokens, stats))
        floor.append((median_ns(lambda b=body: json.dumps(json.loads(b)), args.rounds), tokens))

    print(
        f"# machine: {describe_machine()}; "
        f"corpus={folder} ({len(conversations)} conversations); rounds={args.rounds}; "
        f"budget={args.budget} keep_last_turns=4"
    )
    floor_total = sum(ns for ns, _ in floor) / 1000 * PER / sum(t for _, t in floor)
    floor_median = statistics.median(per_100k_us(ns, t) for ns, t in floor)
    header = (
        f"{'':42} {'requests':>8} {'over':>5} {'tokens':>10} {'median':>8} {'worst':>8} "
        f"{'overall':>8} {'worst>B':>8} {'x json':>7} {'saved (median, over budget)':>28}"
    )
    print("µs per 100k tokens: median and worst per request, overall = sum(time)/sum(tokens),")
    print("worst>B = worst among requests over budget; x json = overall / json floor overall")
    print(header)
    for name, data in rows.items():
        speeds = [per_100k_us(ns, t) for ns, t, _ in data]
        over = [(ns, t, s) for ns, t, s in data if s["original_tokens"] > args.budget]
        overall = sum(ns for ns, _, _ in data) / 1000 * PER / sum(t for _, t, _ in data)
        worst_over = max((per_100k_us(ns, t) for ns, t, _ in over), default=0.0)
        if over:
            saved = statistics.median(s["tokens_saved"] for _, _, s in over)
            share = statistics.median(s["tokens_saved"] / s["original_tokens"] for _, _, s in over)
            saving = f"{saved:>9,.0f} tok ({share:.0%})"
        else:
            saving = "-"
        print(
            f"{'prune_context ' + name:42} {len(data):>8} {len(over):>5} "
            f"{sum(t for _, t, _ in data):>10,} {statistics.median(speeds):>8.1f} "
            f"{max(speeds):>8.1f} {overall:>8.1f} {worst_over:>8.1f} "
            f"{overall / floor_total:>7.3f} {saving:>28}"
        )
    floor_speeds = [per_100k_us(ns, t) for ns, t in floor]
    print(
        f"{'json.loads+json.dumps (floor)':42} {len(floor):>8} {'':>5} "
        f"{sum(t for _, t in floor):>10,} {floor_median:>8.1f} {max(floor_speeds):>8.1f} "
        f"{floor_total:>8.1f} {'':>8} {1:>7.3f}"
    )


if __name__ == "__main__":
    main()
