"""How long the router takes to read a request body: JSON parsing plus the one schema check.

Every request pays this before anything else, so the schema (routing/protocols/chat/request.py)
must cost no more than the hand-written checks it replaced. The body is the last
request of corpus session 026 (368 KB of agent history), the same one
bench/bench_proxy.py drives through the router.

Run: ``.venv/bin/python bench/bench_parse.py [--rounds N] [--baseline REV]``;
prints the median over rounds of the per-call time, one ``json.loads`` alone
as the floor and, with ``--baseline``, the parse of routing/protocols/chat/request.py as
it was at git revision REV (``json.loads`` + its ``parse_chat_request``),
measured in the same rounds, interleaved, so a noisy moment hits both.
``--baseline ae267c8`` is the hand-written checks the schema replaced.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django

from bench.corpus import bench_conversations, corpus_arguments
from bench.machine import describe_machine


def agent_body() -> bytes:
    _, conversations = bench_conversations()
    session = next(c for c in conversations if c.name == "026.json")
    messages = list(session.requests())[-1]
    return json.dumps({"model": "auto", "messages": messages}).encode()


def per_call_ms(function, raw: bytes, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        function(raw)
    return (time.perf_counter() - started) * 1000 / calls


def baseline_parser(revision: str):
    """json.loads + parse_chat_request of routing/chat_request.py (its old path) at REV."""
    source = subprocess.run(
        ["git", "show", f"{revision}:routing/chat_request.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("baseline_chat_request")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:routing/chat_request.py", "exec"), module.__dict__)
    return lambda raw: module.parse_chat_request(json.loads(raw))


def main():
    parser = corpus_arguments(__doc__, rounds=15)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--baseline", help="a git revision to compare with")
    args = parser.parse_args()

    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    django.setup()
    from routing.protocols.chat.request import parse_chat_body

    raw = agent_body()
    parse_chat_body(raw)  # warm up (imports, schema build)
    baseline = baseline_parser(args.baseline) if args.baseline else None
    floor, parse, before = [], [], []
    for _ in range(args.rounds):
        floor.append(per_call_ms(json.loads, raw, args.calls))
        parse.append(per_call_ms(parse_chat_body, raw, args.calls))
        if baseline:
            before.append(per_call_ms(baseline, raw, args.calls))
    median = statistics.median
    print(describe_machine())
    print(f"body: {len(raw) / 1024:.0f} KB, {args.rounds} rounds x {args.calls} calls, medians")
    print(f"json.loads alone         {median(floor):7.3f} ms")
    if baseline:
        print(f"at {args.baseline:21s} {median(before):7.3f} ms")
    print(f"parse_chat_body          {median(parse):7.3f} ms")
    print(f"ratio to json.loads      {median(parse) / median(floor):7.2f}x")
    if baseline:
        ratios = [p / b for p, b in zip(parse, before)]
        print(f"ratio to {args.baseline:15s} {median(ratios):7.2f}x (median of per-round ratios)")


if __name__ == "__main__":
    main()
