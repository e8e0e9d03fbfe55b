"""fetch_snapshot, the TUI's one HTTP seam, against a real router; and the tui command."""

import pytest
from django.core.management import CommandError, call_command

from metrics.summary import pinch_summary
from metrics.tui import SnapshotError, fetch_snapshot, snapshot_url
from routing.auth import create_api_key
from tests.support.ports import refused_port


@pytest.mark.parametrize(
    "url",
    ["http://r:8000", "http://r:8000/", "http://r:8000/admin/api/snapshot"],
)
def test_the_snapshot_path_is_added_once(url):
    assert snapshot_url(url) == "http://r:8000/admin/api/snapshot"


@pytest.mark.django_db(transaction=True)
def test_it_returns_the_snapshot(live_server, default_config, savings_rows):
    _, token = create_api_key("tui", is_staff=True)

    data = fetch_snapshot(live_server.url, token, timeout=5)

    assert data["pinch"] == pinch_summary(default_config)
    assert len(data["recent_decisions"]) == len(savings_rows)


@pytest.mark.django_db(transaction=True)
def test_a_refused_token_raises_one_readable_error(live_server, default_config):
    with pytest.raises(SnapshotError) as refused:
        fetch_snapshot(live_server.url, "rk-wrong", timeout=5)

    assert str(refused.value).startswith("The router refused the token (HTTP 403: Staff only")


def test_an_unreachable_router_raises_one_readable_error():
    with refused_port() as port:
        url = f"http://127.0.0.1:{port}"

        with pytest.raises(SnapshotError) as unreachable:
            fetch_snapshot(url, "rk-any", timeout=2)

        assert str(unreachable.value) == f"Cannot reach the router at {url}: Connection refused"


@pytest.mark.django_db(transaction=True)
def test_a_server_that_is_not_the_router_is_named(live_server):
    with pytest.raises(SnapshotError) as wrong:
        fetch_snapshot(f"{live_server.url}/nowhere/admin/api/snapshot", "rk-any", timeout=5)

    assert "answered HTTP 404" in str(wrong.value)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--token", " "], "--token is required"),
        (["--token", "rk-x", "--url", "127.0.0.1:8000"], "--url must start with http://"),
        (["--token", "rk-x", "--interval", "0"], "--interval and --timeout must be greater"),
    ],
)
def test_the_command_refuses_bad_arguments_clearly(args, message, monkeypatch):
    monkeypatch.delenv("ROUTER_TOKEN", raising=False)

    with pytest.raises(CommandError, match=message):
        call_command("tui", *args)
