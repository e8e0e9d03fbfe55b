"""Writers recording at once never lose one another's increments to a summary row."""

import threading

import pytest
from django.db import connection, connections

from routing.models import DecisionSummary, KeySpend
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
                seed(decision(saved=1000, estimated_cost_usd=0.5))
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
    assert spent.prompt_usd == pytest.approx(WRITERS * ROWS_EACH * 0.5)
