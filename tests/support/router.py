"""Helpers for tests that go through the router: the openai SDK pointed at it, its one decision."""

import openai

from routing.models import RouteDecision


def openai_client(live_server, api_key, timeout=20) -> openai.OpenAI:
    """The official SDK as an agent would use it, with its own retries off (the router retries)."""
    return openai.OpenAI(
        base_url=live_server.url + "/v1", api_key=api_key, max_retries=0, timeout=timeout
    )


def only_decision() -> RouteDecision:
    rows = list(RouteDecision.objects.all())
    assert len(rows) == 1, rows
    return rows[0]
