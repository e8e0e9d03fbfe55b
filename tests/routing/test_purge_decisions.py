"""Old decision rows can be purged; the window the figures read is refused; old
payload fingerprints are cleared."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from routing.models import RouteDecision

pytestmark = pytest.mark.django_db


def decision(days_ago, **fields):
    return RouteDecision.objects.create(
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


def state(row):
    row.refresh_from_db()
    return row.payload_fingerprints, row.route_state, row.pinch_ledger


def test_it_clears_the_payload_fingerprints_of_rows_older_than_a_day(default_config):
    kept = {"payload_fingerprints": "AAAABBBB", "route_state": "{}", "pinch_ledger": "[]"}
    hour_old = decision(1 / 24, conversation="c1", **kept)
    two_days_old = decision(2, conversation="c2", **kept)
    out = purge()
    assert state(hour_old) == ("AAAABBBB", "{}", "[]")
    # The routing state and the ledger stay: a resumed conversation still reads them.
    assert state(two_days_old) == ("", "{}", "[]")
    assert "Cleared the payload fingerprints of 1 older decisions." in out
    # Done once: the next run finds nothing left to clear.
    assert "Cleared the payload fingerprints of 0 older decisions." in purge()


def test_a_model_whose_cache_lasts_longer_keeps_them_that_long(router_config, write_config):
    router_config["models"][0]["cache_lifetime_seconds"] = 3 * 86400
    write_config(router_config)
    two_days_old = decision(2, payload_fingerprints="AAAA")
    four_days_old = decision(4, payload_fingerprints="AAAA")
    purge()
    assert state(two_days_old)[0] == "AAAA"
    assert state(four_days_old)[0] == ""
