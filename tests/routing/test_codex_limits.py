"""The real Codex CLI against a limited key: what it does when the router refuses it.

Codex runs here with its own retries at their defaults (4 request retries),
as a user has it, against the scripted upstream of tests/routing/test_codex_cli.py.
A spent budget makes it stop at once, without a retry, printing the router's
message (which budget, when it resets): a 400 coded ``insufficient_quota``,
whose body Codex shows as sent (for OpenAI's own 429 ``insufficient_quota`` it
prints only "Quota exceeded. Check your plan and billing details.":
routing.errors.AGENT_RETRIED_FINALS); a rate limit (429 ``rate_limit_exceeded`` with Retry-After,
"Please try again in Ns") it retries ("Reconnecting... 1/5") after waiting,
and finishes the task.
"""

import pytest

from routing.limits.settings import set_key_limits
from routing.models import ApiKey, LimitRefusal, RouteDecision
from tests.routing import test_codex_cli as codex_cli
from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV, responses_config

# The Codex test's own fixtures and helpers: one way to install, set up and run Codex.
codex_bin, scratch_repo = codex_cli.codex_bin, codex_cli.scratch_repo
SCRIPT, codex_home, run_codex = codex_cli.SCRIPT, codex_cli.codex_home, codex_cli.run_codex

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def limited_codex(tmp_path, live_server, upstream, write_config, monkeypatch, api_key):
    """Codex's home with its retries at their defaults; set_limits(**limits) limits the key."""
    monkeypatch.setenv(PROVIDER_KEY_ENV, PROVIDER_KEY)
    write_config(responses_config("http://127.0.0.1:9/unused", upstream.base_url))
    upstream.script = SCRIPT
    home = codex_home(tmp_path, live_server.url, "script-agent")
    config = home / "config.toml"
    text = config.read_text().replace("request_max_retries = 0\n", "")
    config.write_text(text.replace("stream_max_retries = 0\n", ""))

    def set_limits(**limits):
        set_key_limits(ApiKey.objects.get(), limits)

    return home, set_limits


def refused(reason: str) -> int:
    row = LimitRefusal.objects.filter(reason=reason).first()
    return row.count if row else 0


def test_codex_stops_at_a_spent_budget_and_shows_why(
    limited_codex, codex_bin, scratch_repo, upstream, api_key
):
    home, set_limits = limited_codex
    set_limits(budget_usd=0.0)

    done, _ = run_codex(codex_bin, scratch_repo, home, api_key)

    report = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    print(report, f"\nrefused: {refused('budget')}")
    assert done.returncode != 0, report
    assert upstream.received == [] and not RouteDecision.objects.exists()
    # A 400 is final to Codex: it does not retry it, and shows the router's words.
    assert refused("budget") == 1
    assert "You will regain access on" in done.stdout + done.stderr, report


def test_codex_waits_out_a_rate_limit_and_finishes_the_task(
    limited_codex, codex_bin, scratch_repo, upstream, api_key
):
    home, set_limits = limited_codex
    set_limits(rpm_limit=3)  # the task takes 4 requests: the 4th waits 20 s for its turn

    done, _ = run_codex(codex_bin, scratch_repo, home, api_key)

    report = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    print(report, f"\nrefused: {refused('rpm')}, reached the upstream: {len(upstream.received)}")
    # Measured (Codex 0.171.0): one refusal, "Reconnecting... 1/5", then it waited its turn
    # rather than spend its retries at once, and finished the task.
    assert done.returncode == 0, report
    assert codex_cli.FINAL in done.stdout, report
    assert 1 <= refused("rpm") <= 2, report
    assert len(upstream.received) == 4, report
