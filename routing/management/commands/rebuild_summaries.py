"""rebuild_summaries: recompute the summary tables from the decision log.

Run it once after upgrading to the summaries (migration 0015) on a router that
already holds decisions, and whenever the tables are in doubt. The figures of
hours already purged from the log are kept (docs/summaries.md).
"""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from routing.summaries.writes import recompute


class Command(BaseCommand):
    help = (
        "Recompute the summary tables (what /metrics, the dashboard and the budgets read) "
        "from the decision log, from its oldest row or the last DAYS days."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, metavar="DAYS", help="Only the last DAYS days.")

    def handle(self, *args, days=None, **options):
        if days is not None and days < 1:
            raise CommandError("--days must be at least 1")
        since = None if days is None else timezone.now() - timedelta(days=days)
        read = recompute(since)
        self.stdout.write(f"Rebuilt the summaries from {read} decisions.")
