"""manage.py pinch_summary: the same figures for an operator's terminal."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from metrics.cache_forecast import cache_forecast
from metrics.quality import quality_summary
from metrics.savings import savings_by_cause
from metrics.summary import pinch_summary, summary_window
from routing.models import ConfigOverride
from tests.support.decisions import decision, seed


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("pinch_summary", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def decisions(db):
    return seed(decision(saved=1500), decision(saved=500), decision(saved=0), decision())


def test_it_prints_the_figures_for_a_person(default_config, decisions):
    out, _ = run()

    assert "Pinch savings over the last 30 days" in out
    assert "calls          4" in out
    assert "pruned calls   2 (50.00% of calls)" in out
    assert "tokens saved   2,000 (median 1,000 per pruned call)" in out
    assert "gross saved    $0.004 (before the cache" in out
    assert out.index("net of cache") < out.index("gross saved")  # the net figure first


def test_json_has_the_same_keys_and_numbers_as_the_service(default_config, decisions):
    out, _ = run("--json")

    figures = json.loads(out)
    assert figures.pop("quality") == quality_summary(default_config)
    assert figures.pop("savings_by_cause") == savings_by_cause(default_config)
    assert figures.pop("cache_forecast") == cache_forecast(summary_window(default_config))
    assert figures == pinch_summary(default_config)


def test_days_narrows_the_window(default_config, db):
    seed(decision(saved=100, age=timedelta(days=2)), decision(saved=900, age=timedelta(days=5)))

    out, _ = run("--json", "--days", "3")

    assert json.loads(out)["total_tokens_saved"] == 100


def test_the_billing_period_is_named(write_default_config, db):
    write_default_config({"objective.billing_reset_day": 1})

    out, _ = run()

    assert "since the billing reset on" in out
    assert "next reset" in out


def test_unpriced_calls_are_explained(default_config, db):
    seed(decision(saved=100, chosen_model="retired-model"))

    out, _ = run()

    assert "unpriced       1 (pruned calls to models no longer configured" in out


def test_it_says_plainly_when_pinch_is_disabled(default_config, decisions):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    out, _ = run()  # returns normally: exit status 0

    assert out.strip() == "Pinch is disabled (pinch.enabled is false): nothing was pruned."


def test_json_is_null_when_pinch_is_disabled(default_config, decisions):
    ConfigOverride.objects.create(key="pinch.enabled", value=False)

    out, err = run("--json")

    assert json.loads(out) is None
    assert "Pinch is disabled" in err


def test_a_bad_config_is_a_clear_error(tmp_path, settings, db):
    bad = tmp_path / "bad.yaml"
    bad.write_text("providers: {}\nmodels: []\npinch:\n  budget_tokens: -1\n")
    settings.ROUTER_CONFIG = str(bad)

    with pytest.raises(CommandError, match="config is invalid: pinch.budget_tokens"):
        run()


def test_days_below_one_is_refused(default_config, db):
    with pytest.raises(CommandError, match="--days must be at least 1"):
        run("--days", "0")
