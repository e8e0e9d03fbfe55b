"""What a request to a Claude model costs the router beyond pinch: translation, cache placement.

For every request of every corpus session (``messages[:t]`` before each
assistant turn, see routing/replay/corpus.py) with the shipped pinch config, this
times, as the router runs them:

* pinch: ``routing.pruning.pinch_messages`` (relevance off), which every
  request pays whatever its provider; the yardstick;
* stable prefixes: ``routing.pruning.stable_prefixes`` (this turn's and the
  last turn's), paid only by a provider that asks (Anthropic);
* translate + breakpoints: the pruned chat-completions body into a Messages
  body (``to_messages_request``) with its cache breakpoints placed;
* serialise: ``json.dumps`` of that Messages body, against ``json.dumps`` of
  the chat-completions body the OpenAI-compatible provider sends;
* inbound (a Claude Code request on /v1/messages, the same conversation as a
  Messages body): reading it into the chat-completions request the pipeline
  plans on (``request.messages_to_chat``), and mapping pinch's changes
  back onto the client's body for a Claude upstream (``native.native_request``).

Figures are medians over the requests of ms per 100k prompt tokens (the
unit of bench_prune.py), and the ratio to the pinch stage.

Run: ``.venv/bin/python bench/bench_anthropic.py [--rounds N]``.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
os.environ["REDIS_URL"] = ""

import django

django.setup()

from bench.corpus import bench_conversations, corpus_arguments
from bench.machine import describe_machine
from routing.config import DEFAULT_CONFIG_PATH, apply_overrides, validate_config
from routing.config.source import read_config_file
from routing.protocols.messages.native import native_request
from routing.protocols.messages.request import messages_to_chat
from routing.providers.anthropic.cache import place_breakpoints
from routing.providers.anthropic.request import to_messages_request
from routing.pruning import pinch_messages, stable_prefixes

PER = 100_000
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def median_ns(fn, rounds: int) -> int:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - started)
    return int(statistics.median(samples))


def main() -> None:
    args = corpus_arguments(__doc__, rounds=5).parse_args()
    _, conversations = bench_conversations()
    requests = [r for c in conversations for r in c.requests()]
    data = apply_overrides(
        read_config_file(DEFAULT_CONFIG_PATH), {"pinch.relevance.enabled": False}, []
    )
    pinch = validate_config(data).pinch
    print(f"# machine: {describe_machine()}")
    print(
        f"# corpus: {len(conversations)} sessions, {len(requests)} requests; pinch budget "
        f"{pinch.budget_tokens}, window_step {pinch.window_step}; medians of {args.rounds} rounds"
    )

    columns: dict[str, list[float]] = {
        "pinch (every request)": [],
        "stable prefixes": [],
        "translate + breakpoints": [],
        "serialise Messages body": [],
        "serialise chat body": [],
        "inbound: Messages -> chat": [],
        "inbound: pinch back onto it": [],
    }
    gc.disable()
    try:
        for request in requests:
            sent, outcome = pinch_messages(request, pinch, 0)
            body = {"model": "claude", "messages": sent, "tools": TOOLS, "max_tokens": 4096}

            stable, previous = stable_prefixes(request, pinch, outcome, 0)

            def translate(body=body, stable=stable, previous=previous):
                translated = to_messages_request(body)
                place_breakpoints(translated, stable, previous, 1024)
                return translated

            messages_body = translate().body
            # The request as Claude Code would send it: the unpruned conversation.
            inbound = to_messages_request({**body, "messages": request}).body
            chat, source = messages_to_chat(inbound)
            pruned, _ = pinch_messages(chat["messages"], pinch, 0)
            per = PER / max(outcome.original_tokens, 1)
            timings = {
                "pinch (every request)": lambda r=request: pinch_messages(r, pinch, 0),
                "stable prefixes": lambda r=request, o=outcome: stable_prefixes(r, pinch, o, 0),
                "translate + breakpoints": translate,
                "serialise Messages body": lambda b=messages_body: json.dumps(b),
                "serialise chat body": lambda b=body: json.dumps(b),
                "inbound: Messages -> chat": lambda b=inbound: messages_to_chat(b),
                "inbound: pinch back onto it": lambda s=source, c=chat, p=pruned: native_request(
                    s, c["messages"], p, "claude"
                ),
            }
            for name, fn in timings.items():
                columns[name].append(median_ns(fn, args.rounds) / 1e6 * per)
    finally:
        gc.enable()

    base = statistics.median(columns["pinch (every request)"])
    print()
    print(f"{'ms per 100k prompt tokens':28} {'median':>8} {'p90':>8} {'x pinch':>8}")
    for name, values in columns.items():
        values = sorted(values)
        p90 = values[int(len(values) * 0.9)]
        median = statistics.median(values)
        print(f"{name:28} {median:8.3f} {p90:8.3f} {median / base:8.2f}")


if __name__ == "__main__":
    main()
