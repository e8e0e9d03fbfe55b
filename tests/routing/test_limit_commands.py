"""Setting a key's limits from the command line: createapikey's flags and updateapikey."""

import pytest
from django.core.management import CommandError, call_command

from routing.auth import create_api_key
from routing.models import ApiKey

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_createapikey_sets_every_limit_the_issue_names():
    out = run(
        "createapikey",
        "team-a",
        "--rpm",
        "60",
        "--tpm",
        "200000",
        "--budget-usd",
        "25",
        "--budget-period",
        "week",
        "--soft-budget-usd",
        "20",
        "--budget-fallback",
    )
    key = ApiKey.objects.get(name="team-a")
    assert out.strip().splitlines()[-1].startswith("rk-")
    assert (key.rpm_limit, key.tpm_limit, key.budget_usd, key.soft_budget_usd) == (
        60,
        200000,
        25.0,
        20.0,
    )
    assert (key.budget_period, key.budget_fallback) == ("week", True)


def test_a_key_made_without_flags_has_no_limits():
    run("createapikey", "free")
    key = ApiKey.objects.get(name="free")
    assert (key.rpm_limit, key.tpm_limit, key.budget_usd, key.soft_budget_usd) == (None,) * 4
    assert (key.budget_period, key.budget_fallback) == ("month", False)


def test_updateapikey_changes_only_the_flags_given_and_none_removes_a_limit():
    key, _ = create_api_key("team-a", limits={"rpm_limit": 10, "budget_usd": 5.0})
    out = run("updateapikey", "team-a", "--rpm", "none", "--soft-budget-usd", "4")
    key.refresh_from_db()
    assert (key.rpm_limit, key.budget_usd, key.soft_budget_usd) == (None, 5.0, 4.0)
    assert "rpm_limit = None" in out and "soft_budget_usd = 4.0" in out


def test_updateapikey_finds_a_key_by_its_prefix_when_names_repeat():
    first, _ = create_api_key("shared")
    create_api_key("shared")
    with pytest.raises(CommandError, match="2 active keys are named 'shared'"):
        run("updateapikey", "shared", "--rpm", "5")
    run("updateapikey", first.prefix, "--rpm", "5")
    first.refresh_from_db()
    assert first.rpm_limit == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (["--soft-budget-usd", "9", "--budget-usd", "5"], "must not be above budget_usd"),
        (["--rpm", "0"], "rpm_limit must be a whole number of at least 1"),
        (["--budget-usd", "-1"], "budget_usd must be 0 or more"),
        (["--tpm", "lots"], "'lots' is not a whole number"),
    ],
)
def test_a_limit_that_cannot_be_meant_is_refused_naming_it(args, message):
    with pytest.raises(CommandError, match=message):
        run("createapikey", "bad", *args)
    assert not ApiKey.objects.filter(name="bad").exists()
    create_api_key("team-a")
    with pytest.raises(CommandError, match=message):
        run("updateapikey", "team-a", *args)


def test_updateapikey_of_an_unknown_key_says_so():
    with pytest.raises(CommandError, match="No active API key is named 'ghost'"):
        run("updateapikey", "ghost", "--rpm", "5")
