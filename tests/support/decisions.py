"""Decision rows for the metrics tests: only the fields a test cares about need naming."""

from datetime import datetime, timedelta

from django.utils import timezone
from hypothesis import strategies as st

from routing.config.store import forget_cached_config
from routing.models import RouteDecision
from routing.recording.inserts import insert_decisions

COUNTS = st.none() | st.integers(0, 5)


def traffic_columns(floats) -> dict:
    """Strategies of the columns a conversation's row and the summaries are written from,
    shared by the property tests of those writes; ``floats``: the cost columns' values."""
    return {
        "status_code": st.sampled_from([200, 200, 429, 500, None]),
        "session_role": st.sampled_from(["main", "subagent", "background", ""]),
        "user_turn": st.booleans(),
        "measured_tokens": st.integers(0, 10_000),
        "pinch_original_tokens": COUNTS.map(lambda n: None if n is None else 1000 + n * 100),
        "pinch_final_tokens": st.integers(900, 1400),
        "billed_prompt_cost_usd": floats,
        "unpruned_cost_usd": floats,
        "quality_results": COUNTS,
        "answer_tool_calls": st.none() | st.booleans(),
    }


def decision(*, age=timedelta(0), now=None, saved=None, **fields) -> RouteDecision:
    """An unsaved RouteDecision ``age`` before ``now``.

    ``saved=N`` is shorthand for pinch columns that shrank by N tokens
    (original 10_000 + N, final 10_000); ``saved=0`` is measured but not pruned.
    """
    if saved is not None:
        fields.setdefault("pinch_original_tokens", 10_000 + saved)
        fields.setdefault("pinch_final_tokens", 10_000)
    values = {
        "created_at": (now or timezone.now()) - age,
        "path": RouteDecision.PATH_ROUTED,
        "requested_model": "auto",
        "chosen_model": "gpt-4.1",
        "provider": "openai",
        "upstream_model": "gpt-4.1",
        "tier": "hard",
        "measured_tokens": 1000,
        "estimated_cost_usd": 0.0,
        "status_code": 200,
    }
    values.update(fields)
    return RouteDecision(**values)


def seed(*rows: RouteDecision) -> list[RouteDecision]:
    """Insert rows as the recording path does: each with its conversation, its figures in
    the summary tables. As another process would: the recording reads the config (its
    prices), and this process's cached copy of it is dropped again, so a test that counts
    a page's queries counts the page's config read."""
    for row, inserted in zip(rows, insert_decisions([columns(row) for row in rows])):
        row.pk = inserted["id"]
    forget_cached_config()
    return list(rows)


def columns(row: RouteDecision, **state) -> dict:
    """A decision's column values, as the recording path holds them, with the ``state`` it
    leaves its conversation (route_state, pinch_ledger, payload_fingerprints)."""
    fields = {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}
    return {**fields, **state}


def spooled_fields(**changes) -> dict:
    """The column values of a finished row, as the recording path holds them (for the spool)."""
    fields = {
        "id": None,
        "created_at": "2026-12-01T10:00:00+00:00",
        "path": "passthrough",
        "requested_model": "echo-medium",
        "chosen_model": "echo-medium",
        "provider": "up",
        "upstream_model": "echo-medium",
        "measured_tokens": 3,
        "estimated_cost_usd": 0.0,
        "status_code": 200,
        "attempts": [{"model": "echo-medium", "result": "ok", "status": 200, "ms": 1.0}],
    }
    fields.update(changes)
    fields["created_at"] = datetime.fromisoformat(fields["created_at"])
    return fields
