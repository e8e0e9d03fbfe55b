"""pinch_summary [--json] [--days N] [--by-session]: what pinch saved and what it cost the agent."""

import json

from django.core.management.base import BaseCommand, CommandError

from metrics.cache_forecast import cache_forecast, forecast_text
from metrics.quality import quality_summary
from metrics.quality_card import quality_lines
from metrics.savings import cause_lines, savings_by_cause
from metrics.summary import DEFAULT_DAYS, pinch_summary, summary_window
from routing.agent_sessions import SESSIONS_SHOWN, agent_sessions
from routing.config import ConfigError
from routing.config.store import current_config
from routing.formatting import format_days, pinch_card


class Command(BaseCommand):
    help = (
        "Show what pinch saved: calls pruned, tokens and dollars. The window is the "
        "billing period when objective.billing_reset_day is set, else the last --days days."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="print the figures as JSON (the keys of /metrics' pinch block, and its "
            "quality block under quality)",
        )
        parser.add_argument(
            "--days",
            type=int,
            default=DEFAULT_DAYS,
            help=f"window length in days (default {DEFAULT_DAYS}; "
            "ignored when objective.billing_reset_day is set)",
        )

        parser.add_argument(
            "--by-session",
            action="store_true",
            help=f"list the {SESSIONS_SHOWN} newest agent sessions of the window instead: "
            "agent, models, requests, turns, billed prompt cost, net saved",
        )

    def handle(self, *args, as_json: bool, days: int, by_session: bool = False, **options):
        if days < 1:
            raise CommandError(f"--days must be at least 1, got {days}")
        try:
            config = current_config()
        except ConfigError as error:
            raise CommandError(f"The router config is invalid: {error}") from None
        if by_session:
            sessions = agent_sessions(SESSIONS_SHOWN, since=summary_window(config, days=days).start)
            if as_json:
                self.stdout.write(json.dumps([s.as_json() for s in sessions], indent=2))
            else:
                self.stdout.write(_sessions_text(sessions))
            return

        summary = pinch_summary(config, days=days)
        if summary is None:
            message = "Pinch is disabled (pinch.enabled is false): nothing was pruned."
            if as_json:
                # stdout stays valid JSON for scripts; the explanation goes to stderr.
                self.stdout.write("null")
                self.stderr.write(message)
            else:
                self.stdout.write(message)
            return
        quality = quality_summary(config, days=days)
        causes = savings_by_cause(config, days=days)
        forecast = cache_forecast(summary_window(config, days=days))
        if as_json:
            figures = {
                **summary,
                "quality": quality,
                "savings_by_cause": causes,
                "cache_forecast": forecast,
            }
            self.stdout.write(json.dumps(figures, indent=2))
        else:
            self.stdout.write(self._text(summary, days, config.objective.assumed_cache_rate))
            self.stdout.write(forecast_text(forecast))
            self.stdout.write("\n".join(quality_lines(quality)))
            self.stdout.write(self._causes(causes))

    def _causes(self, causes: dict) -> str:
        lines = [
            f"Saved by cause ({causes['billed_calls_30d']:,} calls with reported usage; "
            "they and the bill add up to the cost without the router or the cache)"
        ]
        lines += [f"  {label:<32} {shown}" for _, label, shown, _ in cause_lines(causes)]
        return "\n".join(lines)

    def _text(self, summary: dict, days: int, cache_rate: float) -> str:
        if "reset_date" in summary:
            heading = (
                f"Pinch savings since the billing reset on {summary['reset_date']} "
                f"(next reset {summary['next_reset_date']})"
            )
        else:
            heading = f"Pinch savings over {format_days(days)}"
        card = pinch_card(summary)
        lines = [
            heading,
            f"  net of cache   {card['net_dollars_saved_usd_30d']} "
            f"(billed cache reads and writes against the estimated unpruned cost, "
            f"{summary['billed_calls_30d']:,} calls with reported usage)",
            f"  conversations  {card['conversations_cheaper_30d']} cheaper, "
            f"{card['conversations_dearer_30d']} dearer with pinch",
            f"  gross saved    {card['dollars_saved_usd_30d']} "
            f"(before the cache: blended prompt price, cache rate {cache_rate:g})",
            f"  calls          {card['calls_30d']} answered "
            f"({card['failed_calls_30d']} failed, counted apart)",
            f"  pruned calls   {card['pruned_calls_30d']} ({card['share_pruned']} of calls)",
            f"  tokens saved   {card['total_tokens_saved']} "
            f"(median {card['median_tokens_saved']} per pruned call)",
        ]
        if summary["unpriced_calls_30d"]:
            lines.append(
                f"  unpriced       {summary['unpriced_calls_30d']:,} "
                "(pruned calls to models no longer configured, priced at $0)"
            )
        return "\n".join(lines)


def _sessions_text(sessions) -> str:
    if not sessions:
        return "No agent sessions in this window."
    lines = [
        f"{'session':<38} {'agent':<12} {'requests':>8} {'turns':>5} {'sub·bg':>7} "
        f"{'billed':>10} {'net saved':>10}  last (UTC)        models"
    ]
    for s in sessions:
        shown = s.shown()
        lines.append(
            f"{s.session[:38]:<38} {s.agent or '—':<12} {shown['requests']:>8} "
            f"{shown['turns']:>5} {f'{s.subagent_requests}·{s.background_requests}':>7} "
            f"{shown['billed']:>10} {shown['net_saved']:>10}  "
            f"{s.last:%Y-%m-%d %H:%M:%S}  {', '.join(s.models)}"
        )
    return "\n".join(lines)
