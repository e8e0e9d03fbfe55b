"""purge_decisions --older-than DAYS: delete old decision rows (run it from cron)."""

from django.core.management.base import BaseCommand, CommandError

from routing.recording.decisions import purge_decisions


class Command(BaseCommand):
    help = "Delete route decisions older than DAYS days (the dashboards look back 30 at most)."

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=int, required=True, metavar="DAYS")

    def handle(self, *args, older_than, **options):
        if older_than < 31:
            raise CommandError(
                "--older-than must be at least 31: the savings figures read the last 30 days "
                "(or a whole billing period)"
            )
        deleted = purge_decisions(older_than)
        self.stdout.write(f"Deleted {deleted} decisions older than {older_than} days.")
