"""What a recall round trip costs a request: the router answering its own tool and asking again.

The router under gunicorn (bench/bench_proxy.py) in front of the local
OpenAI-compatible test upstream (tests/support/openai_upstream.py, in this
process), pinch trimming a 45 KB log out of a short agent conversation
(tests/support/recall_scenario.py). The same request is sent to two models
of the same upstream: ``recall-*`` calls ``router_recall`` for the log's
vault line and answers with it (two upstream calls, one answer), ``echo-*``
answers at once (one call; the router's tool offered, never called). The
difference of their medians is the round trip's cost in time; the tokens it
costs are the second call's prompt (the first one's, plus the recalled
lines): the router's measured prompt and the recalled tokens, from the rows.

Run: ``.venv/bin/python bench/bench_recall.py [--samples N]``
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_proxy import prepare_router, serve_router, stop
from bench.machine import describe_machine
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, base_config
from tests.support.openai_upstream import UpstreamServer
from tests.support.recall_scenario import AGENT_TOOLS, chat_conversation, model_like, recall_pinch

MODELS = ("echo-bench", "recall-bench")


def config(upstream_url: str) -> dict:
    data = recall_pinch(base_config(upstream_url))
    data["models"] += [model_like(data, "echo-medium", m) for m in MODELS]
    return data


def timed(url: str, key: str, model: str, stream: bool) -> float:
    """One request's wall time in ms, its answer read to the end."""
    body = {"model": model, "messages": chat_conversation(), "tools": AGENT_TOOLS}
    if stream:
        body["stream"] = True
    started = time.perf_counter()
    with requests.post(
        f"{url}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        stream=stream,
        timeout=60,
    ) as answer:
        answer.raise_for_status()
        for _ in answer.iter_content(65536):
            pass
    return (time.perf_counter() - started) * 1000


def rows(database: Path) -> dict:
    """Per model: the medians of the measured prompt, recalls and recalled tokens on its rows."""
    with sqlite3.connect(database) as db:
        found = db.execute(
            "SELECT chosen_model, measured_tokens, recalls, recalled_tokens "
            "FROM routing_routedecision"
        ).fetchall()
    figures = {}
    for model in MODELS:
        mine = [r for r in found if r[0] == model]
        figures[model] = [statistics.median(r[k] or 0 for r in mine) for k in (1, 2, 3)]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=41, help="requests per model and mode")
    args = parser.parse_args()
    upstream = UpstreamServer().start()
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as name:
        tmp = Path(name)
        router = prepare_router(tmp, upstream.base_url)
        Path(router.env["ROUTER_CONFIG"]).write_text(yaml.safe_dump(config(upstream.base_url)))
        router.env[PROVIDER_KEY_ENV] = PROVIDER_KEY
        serve_router(router)
        try:
            results = {}
            for stream in (False, True):
                for model in MODELS:
                    timed(router.url, router.key, model, stream)  # warm the worker
                for _ in range(args.samples):
                    # Interleaved, so a slow moment of the machine costs both alike.
                    for model in MODELS:
                        results.setdefault((model, stream), []).append(
                            timed(router.url, router.key, model, stream)
                        )
            sizes = [len(r["body"]) for r in upstream.received[-2:]]
        finally:
            stop(router.process)
            upstream.stop()
        figures = rows(tmp / "router.sqlite3")
    print(f"# machine: {describe_machine()}; {args.samples} samples per model and mode, medians")
    head = f"{'plain ms':>9} {'stream ms':>10} {'prompt tok':>11} {'recalls':>8}"
    print(f"{'':18} {head} {'recalled tok':>13}")
    for model in MODELS:
        plain, streamed = (statistics.median(results[(model, s)]) for s in (False, True))
        prompt, recalls, recalled = figures[model]
        print(
            f"{model:18} {plain:>9.1f} {streamed:>10.1f} {prompt:>11} {recalls:>8} {recalled:>13}"
        )
    for stream, label in ((False, "plain"), (True, "stream")):
        added = statistics.median(
            r - e
            for r, e in zip(results[("recall-bench", stream)], results[("echo-bench", stream)])
        )
        print(f"a recall round trip adds (paired, median), {label}: {added:.1f} ms")
    print(f"upstream bodies of the last recall: {sizes[0]:,} then {sizes[1]:,} bytes")
    print(
        "tokens a recall costs: the prompt sent once more (cached at a provider that caches), "
        "plus the recalled lines, plus the first call's completion"
    )


if __name__ == "__main__":
    main()
