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
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from metrics.summary import pinch_summary
from routing.auth import create_api_key
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
DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "dashboard.png"
PASSWORD = "a-long-operator-password"


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
    models = [("gpt-4.1", "hard"), ("gpt-4.1-mini", "medium"), ("qwen-small", "easy")]
    rows = []
    for i in range(160):
        model, tier = models[i % 3]
        original = rng.randint(20_000, 130_000)
        pruned = original > 50_000 and rng.random() < 0.7
        final = original - rng.randint(4_000, 55_000) if pruned else original
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
                completion_tokens=rng.randint(40, 2400),
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
    django_user_model.objects.create_user("operator", password=PASSWORD, is_staff=True)
    summary = pinch_summary(default_config)
    assert summary["pruned_calls_30d"] > 0  # the card has something to show

    # The dashboard redirects to the admin login form; log in there like an operator.
    browser.get(f"{live_server.url}/dashboard/")
    assert "/admin/login/" in browser.current_url
    browser.find_element(By.NAME, "username").send_keys("operator")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    # click() returns before the next page has loaded: wait for it.
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}/dashboard/"))
    recent = (By.CSS_SELECTOR, '[data-testid="recent-decisions"]')  # the page's last section
    WebDriverWait(browser, 20).until(EC.presence_of_element_located(recent))

    def shown(testid):
        return browser.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    assert shown("pinch-share-pruned").text == f"{summary['share_pruned'] * 100:.2f}%"
    assert shown("pinch-tokens-saved").text == f"{summary['total_tokens_saved']:,}"
    assert shown("pinch-dollars-saved").text == f"${summary['dollars_saved_usd_30d']:.6f}"
    median = shown("pinch-median-saved")
    assert float(median.get_attribute("data-value")) == summary["median_tokens_saved"]
    assert float(median.text.replace(",", "")) == pytest.approx(
        summary["median_tokens_saved"], abs=0.05
    )
    assert int(shown("pinch-calls").text.replace(",", "")) == summary["calls_30d"]
    assert int(shown("pinch-pruned-calls").text) == summary["pruned_calls_30d"]

    bars = browser.find_elements(By.CSS_SELECTOR, "#savings-chart rect.bar")
    assert len(bars) == 31
    assert sum(int(b.get_attribute("data-tokens")) for b in bars) == summary["total_tokens_saved"]
    rows = browser.find_elements(By.CSS_SELECTOR, '[data-testid="recent-decisions"] tbody tr')
    assert len(rows) == 50
    newest = RouteDecision.objects.order_by("-created_at").first()
    assert rows[0].get_attribute("data-decision-id") == str(newest.pk)

    screenshot = tmp_path / "dashboard.png"
    if os.environ.get("ROUTER_SAVE_SCREENSHOTS") == "1":
        screenshot = DOCS_SCREENSHOT
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000
