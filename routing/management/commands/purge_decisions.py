"""purge_decisions --older-than DAYS: delete old decision rows in short batches and the
conversations idle as long, with their recall originals (run it from cron, daily);
routing/summaries/purge.py says what the summaries keep."""

from django.core.management.base import BaseCommand, CommandError

from routing.config.store import current_config
from routing.conversations import forget_idle
from routing.recall.expiry import forget_idle_originals
from routing.recording.decisions import clear_stale_fingerprints
from routing.summaries.purge import purge_decisions


class Command(BaseCommand):
    help = (
        "Delete route decisions of the whole days older than DAYS days (the dashboards look "
        "back 30 at most) in batches, and the conversations idle as long with their recall "
        "originals, and clear the payload fingerprints of conversations idle for a day."
    )

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
        # The originals first: they are found by their conversation's row.
        originals = forget_idle_originals(older_than)
        self.stdout.write(f"Deleted {originals} recall originals of those conversations.")
        forgotten = forget_idle(older_than)
        self.stdout.write(f"Deleted {forgotten} conversations idle for {older_than} days.")
        cleared = clear_stale_fingerprints(current_config())
        self.stdout.write(f"Cleared the payload fingerprints of {cleared} idle conversations.")
