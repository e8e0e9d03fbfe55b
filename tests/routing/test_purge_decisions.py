"""Old decision rows and idle conversations can be purged; the window the figures read is
refused; the payload fingerprints of idle conversations are cleared."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from routing.conversation_model import Conversation
from routing.models import RouteDecision
from routing.recording.inserts import insert_decisions
from tests.support.decisions import columns

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


def test_conversations_idle_past_the_purge_go_with_their_decisions(default_config):
    recorded(100, "old")
    recorded(100, "resumed")
    recorded(1, "resumed")
    out = purge()
    assert set(Conversation.objects.values_list("key", flat=True)) == {"resumed"}
    # A conversation still going keeps the totals of its whole life.
    assert Conversation.objects.get(key="resumed").requests == 2
    assert "Deleted 1 conversations idle for 90 days." in out
