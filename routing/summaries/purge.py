"""purge_decisions: old decision rows deleted in short batches, the summaries left true.

A single ``DELETE ... WHERE created_at < cutoff`` of a day of a team's traffic
(100,000 rows) holds its locks, and on SQLite the one write lock every
request's decision needs, for as long as it runs. Here each batch of
``PURGE_BATCH`` rows, the oldest ids first, is its own short statement, so a
request's write waits for one batch at most.

The cutoff is rounded down to a UTC midnight, so the log keeps or loses whole
days: a rebuild from the log (``recompute``) then never sees half a day. What
the summaries keep of a purged day (docs/summaries.md):

- ``DecisionSummary`` rows stay: they are Prometheus's all-time counters, which
  must never go down, and a few hundred rows a day;
- ``KeySpend``, ``SavedTokens``, ``CompressedTools`` and ``ArmHour``
  serve only the windows
  (a budget period, the 30 days, a billing month: 31 days at most) and go with
  the log's rows, before the same cutoff;
- each batch's decisions are taken out of their conversations' and tasks' units
  (routing/summaries/units.py) in the batch's transaction, so a unit's figures stay
  those of its decisions in the log: a conversation that began before the cutoff and
  goes on after it keeps the figures of its days in the log, and moves in ``ArmHour``
  as they change.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from routing.models import ArmHour, CompressedTools, KeySpend, RouteDecision, SavedTokens
from routing.summaries import units
from routing.summaries.contributions import READS, day_of
from routing.summaries.writes import add_summed, config_in_force

PURGE_BATCH = 5000  # rows a statement: a few milliseconds of lock on PostgreSQL or SQLite


def purge_decisions(older_than_days: int, batch: int = PURGE_BATCH) -> int:
    """Delete the decisions of the whole UTC days older than that many days, and the
    window-only summaries of those days; returns how many decisions went."""
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    cutoff = day_of(timezone.now() - timedelta(days=older_than_days))
    old = RouteDecision.objects.filter(created_at__lt=cutoff)
    deleted = 0
    while True:
        ids = list(old.order_by("id").values_list("id", flat=True)[:batch])
        if not ids:
            break
        # The first ``batch`` old rows by id are exactly the old rows in this id range.
        rows = old.filter(id__gte=ids[0], id__lte=ids[-1])
        with transaction.atomic():
            gone = list(rows.exclude(conversation="").order_by().values(*READS))
            add_summed({ArmHour: units.remove(gone, config_in_force())})
            count, _ = rows.delete()
        deleted += count
    KeySpend.objects.filter(hour__lt=cutoff).delete()
    CompressedTools.objects.filter(hour__lt=cutoff).delete()
    ArmHour.objects.filter(hour__lt=cutoff).delete()
    SavedTokens.objects.filter(day__lt=cutoff).delete()
    return deleted
