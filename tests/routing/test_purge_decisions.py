"""Old decision rows can be purged; the window the figures read is refused."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from routing.models import RouteDecision

pytestmark = pytest.mark.django_db


def decision(days_ago):
    return RouteDecision.objects.create(
        created_at=timezone.now() - timedelta(days=days_ago),
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
