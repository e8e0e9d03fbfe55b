"""The knob curve with recall counted: what pinch saves when what it takes is one call away.

Each setting is replayed over the shared corpus once per cache price model
(``routing.replay.PRICE_MODELS``, every model billed so: pinch decides by
the prices it is billed at), as ``pinch_replay`` does, with each recall's
round trip priced into the cost (``routing.replay.recalls``). The sessions
are split by agent family: the settings are compared on the tuning part,
and the held-out family is reported beside it, never used to choose
(docs/pinch.md, "Recall and the defaults").

Per part and setting: tokens saved, references still in the payload, in
reach (in it or one recall away), recalls, cost with pinch over cost
without under each price model, the sessions dearer than pinch off, and
the worst session's ratio under any of them.

Run: ``.venv/bin/python bench/recall_curve.py [--hold-out FAMILY] [--only NAME...]``
(``CORPUS_DIR`` overrides where the conversations are read from). One line
per setting is printed as it finishes, so a long run can be read as it goes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")

import django

django.setup()

from bench.corpus import bench_conversations
from metrics.replay import cli_overrides, replay_config
from routing.replay.sessions import PRICE_MODELS, Totals, replay

# The shipped defaults first, then the last round's, then one knob at a time.
SETTINGS = {
    "shipped": [],
    "shipped, recall off": ["pinch.recall.enabled=false"],
    "the last round's (settle 0, keep 1,500, lines 400)": [
        "pinch.payback.settle_turns=0",
        "pinch.payback.keep_max_chars=1500",
        "pinch.payback.lines_max_chars=400",
    ],
    "settle_turns 0": ["pinch.payback.settle_turns=0"],
    "settle_turns 10": ["pinch.payback.settle_turns=10"],
    "settle_turns 14": ["pinch.payback.settle_turns=14"],
    "keep_max_chars 1500": ["pinch.payback.keep_max_chars=1500"],
    "names 200": ["pinch.payback.names_max_chars=200"],
}


def _part(runs: dict, names: set[str]) -> dict:
    """The figures of the sessions in ``names``, one run per price model."""
    first = next(iter(runs.values()))
    total = Totals("part")
    for session in first.sessions:
        if session.name in names:
            total.merge(session)
    ratios, dearer, worst = [], [], 1.0
    for prices, run in runs.items():
        part = Totals("part")
        for session in run.sessions:
            if session.name not in names:
                continue
            part.merge(session)
            ratio = session.cost_ratio(prices)
            if ratio is not None:
                worst = max(worst, ratio)
        ratios.append(part.cost_ratio(prices))
        dearer.append([s.name for s in run.sessions if s.name in names and s.costlier(prices)])
    return {"totals": total, "ratios": ratios, "dearer": dearer, "worst": worst}


def _row(name: str, figures: dict) -> str:
    total = figures["totals"]
    ratios = " / ".join(f"{r:.3f}" for r in figures["ratios"])
    dearer = " / ".join(
        ", ".join(n.removesuffix(".json") for n in names) or "0" for names in figures["dearer"]
    )
    return (
        f"| {name} | {total.saved_share:.1%} | {total.references_share:.1%} | "
        f"{total.recallable_share:.1%} | {total.recalls:,} | {ratios} | {dearer} | "
        f"{figures['worst']:.3f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold-out", default="Claude Code", help="the family held out")
    parser.add_argument("--only", nargs="*", help="the settings to run (default: all)")
    args = parser.parse_args()
    _, sessions = bench_conversations()
    held = {s.name for s in sessions if s.family == args.hold_out}
    if not held:
        sys.exit(f"no session of the family {args.hold_out!r}")
    tuned = {s.name for s in sessions} - held
    header = (
        "| setting | tokens saved | refs kept | in reach | recalls | "
        "cost x (0.1, 1.25) / (0.1, 1.0) / (0.25, 1.0) | dearer | worst |\n"
        "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |"
    )
    print(f"tuning part: {len(tuned)} sessions; held out ({args.hold_out}): {len(held)}")
    rows = {"tuning": [], "held out": []}
    for name, settings in SETTINGS.items():
        if args.only and name not in args.only:
            continue
        config = replay_config(cli_overrides(settings=settings))
        runs = {prices: replay(sessions, config, prices=prices) for prices in PRICE_MODELS}
        for part, names in (("tuning", tuned), ("held out", held)):
            row = _row(name, _part(runs, names))
            rows[part].append(row)
            print(f"{part}: {row}", flush=True)
    for part, lines in rows.items():
        print(f"\n{part}\n{header}")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
