"""Old decision rows and idle conversations can be purged; the window the figures read is
refused; the payload fingerprints of idle conversations are cleared."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from metrics.summary import pinch_summary
from routing.auth import create_api_key
from routing.models import (
    CompressedTools,
    Conversation,
    DecisionSummary,
    KeySpend,
    RouteDecision,
    SavedTokens,
)
from routing.recording.inserts import insert_decisions
from routing.summaries.purge import purge_decisions
from tests.support.decisions import columns, seed
from tests.support.decisions import decision as decision_row

pytestmark = pytest.mark.django_db


def unsaved(days_ago, **fields) -> RouteDecision:
    return RouteDecision(
        created_at=timezone.now() - timedelta(days=days_ago),
        **fields,
        path="routed",
        requested_model="auto",
        chosen_model="m",
        provider="p",
        upstream_model="m",
        measured_tokens=1,
        estimated_cost_usd=0.0,
    )


def decision(days_ago, **fields):
    row = unsaved(days_ago, **fields)
    row.save()
    return row


def test_it_deletes_only_rows_older_than_the_given_days():
    old, recent = decision(100), decision(10)
    out = StringIO()
    call_command("purge_decisions", "--older-than", "90", stdout=out)
    assert list(RouteDecision.objects.all()) == [recent]
    assert not RouteDecision.objects.filter(pk=old.pk).exists()
    assert "Deleted 1 decisions older than 90 days." in out.getvalue()


def test_it_refuses_to_purge_inside_the_window_the_figures_read():
    decision(20)
    with pytest.raises(CommandError, match="at least 31"):
        call_command("purge_decisions", "--older-than", "7")
    assert RouteDecision.objects.count() == 1


def purge(older_than="90"):
    out = StringIO()
    call_command("purge_decisions", "--older-than", older_than, stdout=out)
    return out.getvalue()


def recorded(days_ago, key, **state):
    """A decision recorded ``days_ago`` for conversation ``key``, leaving it ``state``."""
    insert_decisions([columns(unsaved(days_ago, conversation=key), **state)])


def state(key):
    row = Conversation.objects.get(key=key)
    return row.payload_fingerprints, row.route_state, row.pinch_ledger


def test_it_clears_the_payload_fingerprints_of_conversations_idle_for_a_day(default_config):
    kept = {"payload_fingerprints": "AAAABBBB", "route_state": "{}", "pinch_ledger": "[]"}
    recorded(1 / 24, "c1", **kept)
    recorded(2, "c2", **kept)
    out = purge()
    assert state("c1") == ("AAAABBBB", "{}", "[]")
    # The routing state and the ledger stay: a resumed conversation still reads them.
    assert state("c2") == ("", "{}", "[]")
    assert "Cleared the payload fingerprints of 1 idle conversations." in out
    # Done once: the next run finds nothing left to clear.
    assert "Cleared the payload fingerprints of 0 idle conversations." in purge()


def test_a_model_whose_cache_lasts_longer_keeps_them_that_long(router_config, write_config):
    router_config["models"][0]["cache_lifetime_seconds"] = 3 * 86400
    write_config(router_config)
    recorded(2, "c2", payload_fingerprints="AAAA")
    recorded(4, "c4", payload_fingerprints="AAAA")
    purge()
    assert state("c2")[0] == "AAAA"
    assert state("c4")[0] == ""


def seeded(days_ago, **fields):
    """A decision recorded the way the router records one: its figures in the summaries."""
    row = decision_row(age=timedelta(days=days_ago), **fields)
    seed(row)
    return row


def test_it_deletes_in_batches_of_bounded_size(db):
    for i in range(7):
        seeded(40 + i)
    recent = seeded(2)

    with CaptureQueriesContext(connection) as queries:
        deleted = purge_decisions(31, batch=3)

    assert deleted == 7
    assert list(RouteDecision.objects.all()) == [recent]
    deletes = [q["sql"] for q in queries if q["sql"].upper().startswith("DELETE")]
    log_deletes = [sql for sql in deletes if '"routing_routedecision"' in sql]
    assert len(log_deletes) == 3  # 3 + 3 + 1 rows, one short statement each


def test_a_purge_keeps_the_window_figures_and_the_all_time_counters(db, default_config):
    seeded(45, saved=900, api_key=create_api_key("team")[0], pinch_tools={"bash": 2})
    seeded(3, saved=300)
    counted_before = DecisionSummary.objects.aggregate(n=Sum("decisions"))["n"]
    window_before = pinch_summary(default_config)

    purge_decisions(31)

    assert pinch_summary(default_config) == window_before
    # Prometheus's counters never go down: the purged day's hourly figures stay.
    assert DecisionSummary.objects.aggregate(n=Sum("decisions"))["n"] == counted_before == 2
    # The window-only summaries of the purged day go with its rows.
    old_day = timezone.now() - timedelta(days=40)
    assert not KeySpend.objects.filter(hour__lt=old_day).exists()
    assert not SavedTokens.objects.filter(day__lt=old_day).exists()
    assert not CompressedTools.objects.filter(hour__lt=old_day).exists()
    assert SavedTokens.objects.count() == 1


def test_a_purge_removes_whole_utc_days(db):
    # The cutoff is the midnight before "31 days ago": a rebuild never sees half a day.
    cutoff = (timezone.now() - timedelta(days=31)).replace(hour=0, minute=0, second=0)
    before, after = cutoff - timedelta(seconds=1), cutoff + timedelta(seconds=1)
    seed(decision_row(now=before), decision_row(now=after))

    purge_decisions(31)

    assert [row.created_at for row in RouteDecision.objects.all()] == [after]


def test_conversations_idle_past_the_purge_go_with_their_decisions(default_config):
    recorded(100, "old")
    recorded(100, "resumed")
    recorded(1, "resumed")
    out = purge()
    assert set(Conversation.objects.values_list("key", flat=True)) == {"resumed"}
    # A conversation still going keeps the totals of its whole life.
    assert Conversation.objects.get(key="resumed").requests == 2
    assert "Deleted 1 conversations idle for 90 days." in out
