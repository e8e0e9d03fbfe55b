"""The routing replay's table: cost per arm and price model, tiers, model changes.

One row per (price model, arm) of ``routing.replay.routes``: requests, the
cost (prompt and answers, each on the model the request went to), what it
saved against the baseline arm, the share of requests per tier, and how
often a session changed model (each change writes the new model's prompt
cold).
"""

from __future__ import annotations

from routing.config import RouterConfig
from routing.replay.routes import ArmCost
from routing.replay.sessions import CachePrices


def _share(count: int, total: int) -> str:
    return f"{count / total * 100:.0f}%" if total else "-"


def route_table(
    runs: dict[CachePrices, dict[str, ArmCost]], config: RouterConfig, sessions: int
) -> str:
    tiers = config.routing.tiers
    header = ["prices (read, write)", "arm", "requests", "cost", "saved", *tiers, "changes"]
    rows = [header]
    for prices, arms in runs.items():
        base = arms["baseline"].usd
        for name, arm in arms.items():
            saved = f"{(1 - arm.usd / base) * 100:.1f}%" if base else "-"
            rows.append(
                [
                    prices.label,
                    name,
                    f"{arm.requests:,}",
                    f"${arm.usd:,.2f}",
                    saved,
                    *(_share(arm.tiers[t], arm.requests) for t in tiers),
                    f"{arm.model_changes} in {arm.sessions_changed}/{sessions} sessions",
                ]
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    text = []
    for k, row in enumerate(rows):
        cells = [
            cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        text.append("  ".join(cells).rstrip())
        if k == 0:
            text.append("  ".join("-" * w for w in widths))
    return "\n".join(text)


def reasons_line(arm: ArmCost) -> str:
    """Why the routed requests went where they did, as counts."""
    return ", ".join(f"{reason} {count:,}" for reason, count in arm.reasons.most_common())
