"""The quality block as people read it: the dashboard's quality card and pinch_summary's lines.

One home for how a quality figure reads (``0.43% [0.39–0.48%] n=70,551``),
so the card and the command never disagree. Figures come from
``metrics.quality``; this module only formats them.
"""

from __future__ import annotations

from metrics.quality import quality_summary
from routing.formatting import MISSING, format_count, format_money


def _percent(value) -> str:
    return MISSING if value is None else f"{value * 100:.2f}%"


def _plain(value, digits: int = 1) -> str:
    return MISSING if value is None else f"{value:,.{digits}f}"


def _with_interval(estimate: dict, show) -> str:
    """``value [low–high] n=N``; just the value when there is no interval."""
    text = show(estimate.get("value"))
    if estimate.get("low") is not None:
        text += f" [{show(estimate['low'])}–{show(estimate['high'])}]"
    return f"{text} n={format_count(estimate.get('n') or 0)}"


def _rate(quality: dict, key: str, count_key: str, seen_key: str) -> str:
    interval = quality[key.replace("_rate", "_interval")]
    estimate = {"value": quality[key], "n": quality[seen_key]}
    if interval:
        estimate.update(low=interval[0], high=interval[1])
    return f"{_with_interval(estimate, _percent)} ({format_count(quality[count_key])} repeats)"


def _difference(difference: dict, show) -> str:
    if difference.get("value") is None:
        return "too few to compare"
    text = f"{show(difference['value'])} [{show(difference['low'])}–{show(difference['high'])}]"
    return text + ("" if difference["significant"] else ", not significant yet")


def _signed_cost(value) -> str:
    return ("-" if value < 0 else "+") + format_money(abs(value))


def _signed_percent(value) -> str:
    return ("-" if value < 0 else "+") + _percent(abs(value))


def _signed_plain(value) -> str:
    return f"{value:+,.2f}"


def quality_card(quality: dict | None) -> dict | None:
    """The card's rows, formatted: the signals, then one row per arm."""
    if quality is None:
        return None
    arms = []
    for name, figures in quality["arms"].items():
        row = {
            "name": name,
            "conversations": format_count(figures["conversations"]),
            "cost": _with_interval(figures["cost_per_conversation_usd"], format_money),
            "turns": _with_interval(figures["turns_per_task"], _plain),
            "refetch": _with_interval(figures["refetch_rate"], _percent),
            "stopped": format_count(figures["stopped_mid_loop"]),
        }
        versus = figures.get("vs_control")
        if versus is not None:
            row["versus"] = {
                "cost": _difference(versus["cost_per_conversation_usd"], _signed_cost),
                "turns": _difference(versus["turns_per_task"], _signed_plain),
                "refetch": _difference(versus["refetch_rate"], _signed_percent),
                "verdict": versus["verdict"],
            }
        arms.append(row)
    difference = quality["refetch_difference"]
    return {
        "refetch": _rate(quality, "refetch_rate", "refetches", "compressed_results_seen"),
        "baseline": _rate(
            quality, "baseline_refetch_rate", "baseline_refetches", "whole_results_seen"
        ),
        "refetch_versus_baseline": _difference(difference, _signed_percent),
        "errors_after_prune": _with_interval(quality["tool_errors_after_prune"], _percent),
        "errors_otherwise": _with_interval(quality["tool_errors_otherwise"], _percent),
        "turns_per_task": _with_interval(quality["turns_per_task"], _plain),
        "prompt_tokens_per_task": _with_interval(quality["prompt_tokens_per_task"], _plain),
        "stopped_mid_loop": format_count(quality["conversations_stopped_mid_loop"]),
        "arms": arms,
        "recall": _recall(quality["recall"]),
    }


def _recall(recall: dict) -> dict:
    """The recall lines (metrics/recall_quality.py): counts, then the rate beside the holdout's."""
    return {
        "recalls": f"{format_count(recall['recalls'])} "
        f"({format_count(recall['recalled_tokens'])} tokens recalled)",
        "per_pruned_request": _plain(recall["recalls_per_pruned_request"], 3),
        "per_conversation": _plain(recall["recalls_per_conversation"], 3),
        "rate": _with_interval(recall["recall_rate"], _percent),
        "holdout": _with_interval(recall["holdout_repeat_rate"], _percent),
        "versus_holdout": _difference(recall["versus_holdout"], _signed_percent),
        "verdict": recall["verdict"],
    }


def quality_lines(quality: dict) -> list[str]:
    """pinch_summary's text: what pinch and the arms cost the agent."""
    card = quality_card(quality)
    lines = [
        "What it cost the agent (repeats per result and turn seen; 95% intervals)",
        f"  re-fetch after compression  {card['refetch']}",
        f"  baseline (seen whole)       {card['baseline']}",
        f"  difference                  {card['refetch_versus_baseline']}",
        f"  tool errors after a prune   {card['errors_after_prune']}",
        f"  tool errors otherwise       {card['errors_otherwise']}",
        f"  turns per task              {card['turns_per_task']}",
        f"  prompt tokens per task      {card['prompt_tokens_per_task']}",
        f"  stopped mid tool loop       {card['stopped_mid_loop']} conversation(s)",
        "Recalls (the router's recall tool; per compressed result and turn seen)",
        f"  recalls                     {card['recall']['recalls']}",
        f"  per pruned request          {card['recall']['per_pruned_request']}",
        f"  per conversation pruned     {card['recall']['per_conversation']}",
        f"  recall rate                 {card['recall']['rate']}",
        f"  holdout's repeat rate       {card['recall']['holdout']}",
        f"  difference                  {card['recall']['versus_holdout']}"
        f" — {card['recall']['verdict']}",
        "Arms (cost per conversation billed net of the cache, plus completion)",
    ]
    for arm in card["arms"]:
        lines.append(
            f"  {arm['name']:<12} {arm['conversations']} conversations; cost {arm['cost']}; "
            f"turns per task {arm['turns']}; repeats {arm['refetch']}"
        )
        if "versus" in arm:
            versus = arm["versus"]
            lines.append(
                f"  {'':<12} vs control: cost {versus['cost']}; turns {versus['turns']}; "
                f"repeats {versus['refetch']} — {versus['verdict']}"
            )
    return lines


def quality_context(config, now, days: int) -> dict:
    """The dashboard's context for templates/metrics/_quality.html (two queries)."""
    return {"quality": quality_card(quality_summary(config, now=now, days=days))}
