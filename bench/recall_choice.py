"""What a recall should teach pinch: the corpus replayed under three answers, priced under a cache.

Pinch compresses old tool results; when the model needs one back it calls
the router's recall tool (routing/recall/). Offline there is no model to
call it, so a recall is simulated where the agent shows it needed one: the
agent's next message (its text, or its tool call's arguments) uses a
distinctive token (a path, an identifier, a number: pinch.lines) that only
a compressed result's original held, nowhere in the payload it was sent.

Three answers to "the model recalled result i", each replayed over every
session with the payback planner (pinch.payback.plan) at the shipped knobs:

- ``none``: nothing learnt; the result stays compressed, and every later
  need of it is another recall;
- ``first``: i is sent whole from the next request on (``plan``'s
  ``recalled``), though that rewrites the cached prefix from i (a revisit);
- ``again``: the same, once i was recalled in two requests (the router's
  choice: routing.models.recall.RESTORE_AFTER).

Each request is priced as the provider bills it under the cache (read
0.1x, write 1.25x of the input price, Anthropic's): the messages the
previous payload shares as its prefix are read, the rest written. A recall
costs a second upstream call within the request: the payload read again,
the call and the original written, and about 30 output tokens at 5x the
input price. Units: input-price tokens.

Run: ``.venv/bin/python bench/recall_choice.py`` (``CORPUS_DIR`` overrides the folder).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
django.setup()  # the shipped knobs come from the config schema, through routing

from bench.corpus import bench_conversations  # noqa: E402
from pinch.lines import distinctive_tokens, mentioned_tokens  # noqa: E402
from pinch.payback import CacheModel, plan  # noqa: E402
from pinch.tokens import estimate_tokens, extract_text  # noqa: E402
from routing.models.recall import RESTORE_AFTER  # noqa: E402
from tests.support.knobs import shipped_knobs  # noqa: E402

CACHE = CacheModel(read_multiplier=0.1, write_multiplier=1.25)
RECALL_OUTPUT = 30 * 5  # the recall call's output tokens, at 5x the input price
RECALL_CALL = 40  # tokens of the call and its framing in the second request
POLICIES = ("none", "first", "again")


def tokens(message) -> int:
    return estimate_tokens(extract_text(message))


def request_cost(previous: list, payload: list) -> float:
    """The request as billed under the cache: the shared leading messages read, the rest written."""
    shared = 0
    for before, now in zip(previous, payload):
        if before != now:
            break
        shared += 1
    read = sum(tokens(m) for m in payload[:shared])
    written = sum(tokens(m) for m in payload[shared:])
    return CACHE.read_multiplier * read + CACHE.write_multiplier * written


def learnt(recalled: dict[int, int], policy: str) -> frozenset[int]:
    """The results pinch is told to send whole: none, each recalled one, or (``again``)
    those recalled in RESTORE_AFTER requests."""
    if policy == "none":
        return frozenset()
    least = RESTORE_AFTER if policy == "again" else 1
    return frozenset(i for i, count in recalled.items() if count >= least)


def replay(messages: list, policy: str, knobs) -> dict:
    recalled: dict[int, int] = {}  # result -> its recalls so far
    ledger, previous, memo = None, [], {}
    cost = recall_cost = 0.0
    recalls = 0
    seen: dict[tuple[int, int], set[str]] = {}
    for t in (t for t, m in enumerate(messages) if t > 0 and m.get("role") == "assistant"):
        request = messages[:t]
        payload, ledger, stats = plan(
            request,
            ledger,
            knobs,
            CACHE,
            memo=memo,
            recalled=learnt(recalled, policy),
        )
        cost += request_cost(previous, payload)
        previous = payload
        changed = [*stats.get("compressed", ()), *stats.get("capped", ())]
        if not changed:
            continue
        sent: set[str] = set()
        for i, message in enumerate(payload):
            text = extract_text(message)
            key = (i, hash(text))
            if key not in seen:
                seen[key] = distinctive_tokens(text)
            sent |= seen[key]
        wanted = mentioned_tokens(messages[t]) - sent
        if not wanted:
            continue
        whole = sum(tokens(m) for m in payload)
        for i in changed:
            if wanted & distinctive_tokens(extract_text(messages[i])):
                recalls += 1
                recall_cost += (
                    CACHE.read_multiplier * whole
                    + CACHE.write_multiplier * (tokens(messages[i]) + RECALL_CALL)
                    + RECALL_OUTPUT
                )
                recalled[i] = recalled.get(i, 0) + 1
    return {"cost": cost, "recall_cost": recall_cost, "recalls": recalls}


def unpruned(messages: list) -> float:
    cost, previous = 0.0, []
    for t in (t for t, m in enumerate(messages) if t > 0 and m.get("role") == "assistant"):
        cost += request_cost(previous, messages[:t])
        previous = messages[:t]
    return cost


def main() -> None:
    _, sessions = bench_conversations()
    knobs = shipped_knobs()
    totals = {policy: {"cost": 0.0, "recall_cost": 0.0, "recalls": 0} for policy in POLICIES}
    whole = 0.0
    print(f"{'session':>8} {'pinch off':>11} " + " ".join(f"{p:>22}" for p in POLICIES))
    for session in sessions:
        base = unpruned(session.messages)
        whole += base
        cells = []
        for policy in POLICIES:
            result = replay(session.messages, policy, knobs)
            for name, value in result.items():
                totals[policy][name] += value
            cells.append(
                f"{result['cost'] + result['recall_cost']:>12.0f} ({result['recalls']:>3} rc)"
            )
        print(f"{session.name:>8} {base:>11.0f} " + " ".join(f"{c:>22}" for c in cells))
    print(f"\nall sessions, pinch off: {whole:,.0f} input-price tokens")
    for policy in POLICIES:
        total = totals[policy]
        spent = total["cost"] + total["recall_cost"]
        print(
            f"{policy:>8}: {spent:,.0f} ({spent / whole:.3f} of pinch off), payloads "
            f"{total['cost']:,.0f}, {total['recalls']} recalls costing {total['recall_cost']:,.0f}"
        )


if __name__ == "__main__":
    main()
