"""drain_spool: write the decisions spooled while the database was down (recording/spool.py).

Workers drain the spool on their own as soon as they can write again; this is
for an operator who wants it done now, or a router that gets no traffic.
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import Error as DatabaseFailure

from routing.recording import spool


class Command(BaseCommand):
    help = "Write the spooled decisions to the database (each exactly once)."

    def handle(self, *args, **options):
        try:
            drained = spool.drain(raise_errors=True)
        except DatabaseFailure as error:
            raise CommandError(f"The database refused the spooled decisions: {error}") from None
        self.stdout.write(f"Wrote {drained} spooled decisions to the database.")
