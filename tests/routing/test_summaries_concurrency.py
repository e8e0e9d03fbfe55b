"""Writers recording at once never lose one another's increments to a summary row, nor count
one conversation twice (its quality units are read locked: routing/summaries/units.py)."""

import threading

import pytest
from django.db import connection, connections
from django.db.models import Sum

from routing.models import ArmHour, DecisionSummary, KeySpend, QualityUnit
from routing.summaries.contributions import NO_TASK
from tests.support.decisions import decision, seed

WRITERS = 4
ROWS_EACH = 25


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_add_every_decision_to_the_same_summary_rows():
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("an in-memory SQLite test database is one connection; PostgreSQL pass")
    start = threading.Barrier(WRITERS)
    errors = []

    def write():
        try:
            start.wait()
            for _ in range(ROWS_EACH):
                seed(
                    decision(
                        saved=1000,
                        estimated_cost_usd=0.5,
                        conversation="shared",
                        quality_task=0,
                        arm="control",
                        billed_prompt_cost_usd=0.001,
                        unpruned_cost_usd=0.002,
                    )
                )
        except Exception as error:  # reported below, with the thread's own traceback lost
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write) for _ in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    rows = list(DecisionSummary.objects.values_list("decisions", "pruned", "tokens_saved"))
    assert rows == [(WRITERS * ROWS_EACH, WRITERS * ROWS_EACH, WRITERS * ROWS_EACH * 1000)]
    spent = KeySpend.objects.get()
    assert spent.prompt_usd == pytest.approx(WRITERS * ROWS_EACH * 0.001)  # as billed
    units = dict(QualityUnit.objects.values_list("task", "decisions"))
    assert units == {NO_TASK: WRITERS * ROWS_EACH, 0: WRITERS * ROWS_EACH}
    placed = ArmHour.objects.aggregate(
        conversations=Sum("conversations"), cheaper=Sum("cheaper"), tasks=Sum("tasks")
    )
    assert placed == {"conversations": 1, "cheaper": 1, "tasks": 1}
