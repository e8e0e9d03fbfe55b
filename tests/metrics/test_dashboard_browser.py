"""The dashboard in a real browser: headless Chromium reads the Pinch savings card.

The site is served by pytest-django's ``live_server``; the test logs in through
the admin login form like an operator, reads the card from the rendered DOM and
compares it with ``pinch_summary``. It saves a screenshot in the test's tmp
directory, or to docs/screenshots/dashboard.png with ROUTER_SAVE_SCREENSHOTS=1
(so an ordinary test run leaves the working tree alone).

Chromium is required, not optional: without it this test FAILS (CI installs
``chromium`` and ``chromium-driver``).
"""

import os
import random
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from metrics.summary import pinch_summary
from routing.auth import create_api_key
from routing.config.store import set_overrides
from routing.formatting import format_money
from routing.models import RouteDecision
from tests.support.decisions import decision, seed

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1360,1400",
)
GAIN_RGB, LOSS_RGB = "rgba(21, 128, 61, 1)", "rgba(185, 28, 28, 1)"  # --gain, --loss
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "a-long-operator-password"


def save_screenshot(browser, tmp_path, name):
    """In tmp_path, or in docs/screenshots with ROUTER_SAVE_SCREENSHOTS=1."""
    screenshot = tmp_path / name
    if os.environ.get("ROUTER_SAVE_SCREENSHOTS") == "1":
        screenshot = SCREENSHOTS / name
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000


def log_in(browser, live_server, next_path):
    """Open ``next_path``, get the admin login form, log in as the operator, wait for the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{live_server.url}{next_path}")
    assert "/admin/login/" in browser.current_url
    browser.find_element(By.NAME, "username").send_keys("operator")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    # click() returns before the next page has loaded: wait for it.
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}{next_path}"))


@pytest.fixture
def browser(tmp_path):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists() and not shutil.which(p)]
    if missing:
        pytest.fail(
            f"Headless Chromium is required for the browser test; missing {', '.join(missing)}. "
            "Install it with: apt-get update && apt-get install -y chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def a_month_of_traffic():
    """A deterministic month of agent traffic, so the screenshot looks like real use."""
    rng = random.Random(42)
    key, _ = create_api_key("opencode")
    models = [("gpt-4.1", "hard", 2.0), ("gpt-4.1-mini", "medium", 0.4), ("qwen-small", "easy", 0)]
    rows = []
    for i in range(160):
        model, tier, price = models[i % 3]
        original = rng.randint(20_000, 130_000)
        pruned = original > 50_000 and rng.random() < 0.7
        final = original - rng.randint(4_000, 55_000) if pruned else original
        conversation = f"c{i % 12}"
        # Two conversations in twelve lose under the cache: rewritten prefixes cost more.
        rewrite = 2.2 if i % 12 in (3, 7) else 0.9
        rows.append(
            decision(
                age=timedelta(hours=i * 4.4 + rng.random()),
                chosen_model=model,
                upstream_model=model,
                tier=tier,
                api_key=key,
                pinch_original_tokens=original,
                pinch_final_tokens=final,
                pinch_summarized=rng.randint(1, 12) if pruned else 0,
                relevance_used=pruned,
                stream=i % 3 != 0,
                status_code=200 if i % 17 else 429,
                upstream_latency_ms=rng.uniform(400, 8000),
                prompt_tokens=final,
                measured_tokens=final,
                estimated_cost_usd=final * price / 1e6,
                completion_tokens=rng.randint(40, 2400),
                conversation=conversation,
                unpruned_cost_usd=original * price / 1e6,
                billed_prompt_cost_usd=final * price * (rewrite if pruned else 1.0) / 1e6,
            )
        )
    seed(*rows)


@pytest.mark.django_db(transaction=True)
def test_the_browser_shows_pinch_summarys_figures(
    live_server, browser, default_config, django_user_model, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    a_month_of_traffic()
    # An operator: superuser, so the recent decisions are shown too.
    django_user_model.objects.create_user(
        "operator", password=PASSWORD, is_staff=True, is_superuser=True
    )
    summary = pinch_summary(default_config)
    assert summary["pruned_calls_30d"] > 0  # the card has something to show

    # The dashboard redirects to the admin login form; log in there like an operator.
    log_in(browser, live_server, "/dashboard/")
    recent = (By.CSS_SELECTOR, '[data-testid="recent-decisions"]')  # the page's last section
    WebDriverWait(browser, 20).until(EC.presence_of_element_located(recent))

    def shown(testid):
        return browser.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    # The headline is the net saving after the cache, green, with the dearer conversations.
    headline = shown("pinch-headline")
    assert summary["net_dollars_saved_usd_30d"] > 0 and summary["conversations_dearer_30d"] == 2
    assert headline.text.startswith("Net saved with pinch, after the prompt cache")
    net = shown("pinch-net-dollars-saved")
    assert net.text == format_money(summary["net_dollars_saved_usd_30d"])
    assert net.value_of_css_property("color") == GAIN_RGB
    assert shown("pinch-conversations-dearer").value_of_css_property("color") == LOSS_RGB
    assert shown("chart-net-total").text == net.text  # the legend and the card agree
    assert shown("pinch-share-pruned").text == f"{summary['share_pruned'] * 100:.2f}%"
    assert shown("pinch-tokens-saved").text == f"{summary['total_tokens_saved']:,}"
    assert shown("pinch-dollars-saved").text == format_money(summary["dollars_saved_usd_30d"])
    median = shown("pinch-median-saved")
    assert float(median.get_attribute("data-value")) == summary["median_tokens_saved"]
    assert float(median.text.replace(",", "")) == pytest.approx(
        summary["median_tokens_saved"], abs=0.05
    )
    assert int(shown("pinch-calls").text.replace(",", "")) == summary["calls_30d"]
    assert int(shown("pinch-pruned-calls").text) == summary["pruned_calls_30d"]

    bars = browser.find_elements(By.CSS_SELECTOR, "#savings-chart rect.bar")
    # From the first day anything was saved to today.
    first_saving = RouteDecision.objects.pruned().order_by("created_at").first().created_at
    assert bars[0].get_attribute("data-day") == first_saving.date().isoformat()
    assert bars[-1].get_attribute("data-day") == timezone.now().date().isoformat()
    assert sum(int(b.get_attribute("data-tokens")) for b in bars) == summary["total_tokens_saved"]
    rows = browser.find_elements(By.CSS_SELECTOR, '[data-testid="recent-decisions"] tbody tr')
    assert len(rows) == 50
    newest = RouteDecision.objects.order_by("-created_at").first()
    assert rows[0].get_attribute("data-decision-id") == str(newest.pk)

    # Every column of the recent decisions fits: the key (last) is not cut off.
    wrap = browser.find_element(By.CSS_SELECTOR, "#recent-decisions .table-wrap")
    assert browser.execute_script("return arguments[0].scrollWidth", wrap) <= wrap.size["width"]
    assert rows[0].find_elements(By.TAG_NAME, "td")[1].text == "opencode"

    save_screenshot(browser, tmp_path, "dashboard.png")


@pytest.mark.django_db(transaction=True)
def test_a_net_loss_reads_as_a_loss_at_a_glance(
    live_server, browser, default_config, django_user_model, tmp_path
):
    from selenium.webdriver.common.by import By

    key, _ = create_api_key("claude-code")
    # Pinch saved tokens, but rewrote each conversation's cached prefix: a loss net.
    seed(
        *(
            decision(
                age=timedelta(hours=3 * i + 1),
                saved=9_000 + 500 * i,
                api_key=key,
                conversation=f"s{i % 4}",
                unpruned_cost_usd=0.010,
                billed_prompt_cost_usd=0.012 if i % 4 else 0.009,
                upstream_latency_ms=900 + 40 * i,
            )
            for i in range(16)
        )
    )
    django_user_model.objects.create_user("operator", password=PASSWORD, is_staff=True)
    summary = pinch_summary(default_config)
    assert summary["net_dollars_saved_usd_30d"] < 0 < summary["dollars_saved_usd_30d"]

    log_in(browser, live_server, "/dashboard/")

    def shown(testid):
        return browser.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    assert shown("pinch-headline").text.startswith("Net loss with pinch, after the prompt cache")
    net = shown("pinch-net-dollars-saved")
    assert net.text == format_money(summary["net_dollars_saved_usd_30d"]) == "-$0.02"
    assert net.value_of_css_property("color") == LOSS_RGB
    # The gross saving is shown after the net one, smaller, and not in the loss colour.
    gross = shown("pinch-dollars-saved")
    assert gross.location["y"] > net.location["y"]
    assert int(gross.value_of_css_property("font-size")[:-2]) < int(
        net.value_of_css_property("font-size")[:-2]
    )
    assert shown("pinch-conversations-dearer").text == "3"
    save_screenshot(browser, tmp_path, "dashboard-loss.png")


@pytest.mark.django_db(transaction=True)
def test_the_admin_decision_list_shows_what_an_operator_looks_for_at_1400_px(
    live_server, browser, default_config, django_user_model, tmp_path
):
    from selenium.webdriver.common.by import By

    a_month_of_traffic()
    django_user_model.objects.create_user(
        "operator", password=PASSWORD, is_staff=True, is_superuser=True
    )
    browser.set_window_size(1400, 1000)
    log_in(browser, live_server, "/admin/routing/routedecision/")

    viewport = browser.execute_script("return document.documentElement.clientWidth")
    headers = browser.find_elements(By.CSS_SELECTOR, "#result_list thead th")
    shown = [h.text for h in headers if h.text]
    assert shown[:8] == [
        "TIME (UTC)",
        "MODEL",
        "STATUS",
        "TOKENS IN → OUT",
        "TOKENS SAVED",
        "EST. PROMPT COST",
        "LATENCY",
        "KEY",
    ]
    # All on screen: neither the page nor the list's own box scrolls sideways to reach one.
    results = browser.find_element(By.CSS_SELECTOR, "#changelist .results")
    right = results.location["x"] + results.size["width"]
    assert (
        browser.execute_script("return arguments[0].scrollWidth", results) <= results.size["width"]
    )
    for header in headers:
        assert header.location["x"] + header.size["width"] <= right, header.text
    assert browser.execute_script("return document.documentElement.scrollWidth") <= viewport

    first = browser.find_element(By.CSS_SELECTOR, "#result_list tbody tr")
    cells = {
        td.get_attribute("class").split()[0]: td.text
        for td in first.find_elements(By.CSS_SELECTOR, "td")
    }
    assert cells["field-routed_to"].startswith("auto → ")
    assert re.fullmatch(r"[\d,]+ → [\d,]+", cells["field-tokens_in_out"])
    assert re.fullmatch(r"<?\$[\d,]+(\.\d{4})?", cells["field-cost"])
    assert re.fullmatch(r"[\d.,]+ (ms|s)", cells["field-latency"])
    save_screenshot(browser, tmp_path, "admin-decisions.png")

    first.find_element(By.CSS_SELECTOR, "th a").click()
    detail = browser.find_element(By.ID, "content-main").text
    assert "0.000000" not in detail.replace("$0.000000", "")  # no float noise
    save_screenshot(browser, tmp_path, "admin-decision.png")

    # The controls page has the room the sidebar took, too.
    set_overrides({"pinch.budget_tokens": 40000, "pinch.prefix_probe": False})
    browser.get(f"{live_server.url}/admin/controls/")
    assert browser.find_element(By.ID, "knobs-panel").location["x"] < 100
    save_screenshot(browser, tmp_path, "controls.png")


@pytest.mark.django_db(transaction=True)
def test_a_router_started_today_charts_its_savings_by_the_hour(
    live_server, browser, default_config, django_user_model, tmp_path
):
    from selenium.webdriver.common.by import By

    key, _ = create_api_key("my-agent")
    seed(
        *(
            decision(
                age=timedelta(minutes=25 * i + 3),
                saved=2_000 + 900 * (i % 4),
                api_key=key,
                upstream_latency_ms=40 + 7 * i,
            )
            for i in range(14)
        )
    )
    # An operator: superuser, so the recent decisions are shown too.
    django_user_model.objects.create_user(
        "operator", password=PASSWORD, is_staff=True, is_superuser=True
    )

    browser.get(live_server.url + "/")  # the front page, where admin's "View site" lands
    assert browser.find_element(By.CSS_SELECTOR, '[data-testid="api-base-url"]').text == (
        live_server.url + "/v1"
    )
    save_screenshot(browser, tmp_path, "home.png")

    log_in(browser, live_server, "/dashboard/")
    title = browser.find_element(By.CSS_SELECTOR, "#savings-chart h2").text
    assert title.startswith("Saved per hour")
    bars = browser.find_elements(By.CSS_SELECTOR, "#savings-chart rect.bar")
    assert len(bars) == 12  # half a day of hours, not one bar at the edge of thirty days
    assert sum(int(b.get_attribute("data-tokens")) for b in bars) == sum(
        2_000 + 900 * (i % 4) for i in range(14)
    )
    first_row = browser.find_element(By.CSS_SELECTOR, '[data-testid="recent-decisions"] tbody tr')
    assert first_row.find_elements(By.TAG_NAME, "td")[1].text == "my-agent"  # not "my-agen"
    save_screenshot(browser, tmp_path, "dashboard-first-day.png")
