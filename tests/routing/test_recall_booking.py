"""A recall the router answered is booked on its conversation's pinch ledger, live as in the
replay: the row leaves the booked ledger to the conversation, and the workers' state store
holds it for the next request, so pinch's payback counts what its recalls cost."""

from django.conf import settings

from pinch.ledger import Ledger
from pinch.payback import CacheModel, book_recalls
from routing.prefix_probe import prefix_probe
from routing.recall.keeping import book_round_trips

CACHE = CacheModel(read_multiplier=0.1, write_multiplier=1.25)


def _fields(ledger: Ledger) -> dict:
    return {
        "conversation": "conv-booked",
        "measured_tokens": 9000,
        "pinch_ledger": ledger.as_json(),
    }


def test_a_request_with_recalls_books_their_round_trips_on_the_row_and_the_state_store():
    ledger = Ledger(40, 30, (), (), earned=5000.0)
    fields = _fields(ledger)

    book_round_trips(fields, CACHE, [700, 300])

    booked = Ledger.from_json(fields["pinch_ledger"])
    # 9,000 tokens read again, then 9,000 + the first call and original; both originals written.
    assert booked.recall_cost == book_recalls(ledger, CACHE, 9000, [700, 300]).recall_cost
    assert booked.recall_cost > 0.1 * 18000
    assert booked.earned == ledger.earned and booked.length == ledger.length
    stored = prefix_probe(settings.REDIS_URL).load_ledger("conv-booked")
    assert Ledger.from_json(stored) == booked


def test_a_request_without_recalls_or_without_a_ledger_books_nothing():
    ledger = Ledger(40, 30, ())
    fields = _fields(ledger)
    book_round_trips(fields, CACHE, [])
    assert fields["pinch_ledger"] == ledger.as_json()

    unledgered = {"conversation": "conv-none", "measured_tokens": 9000, "pinch_ledger": ""}
    book_round_trips(unledgered, CACHE, [500])
    assert unledgered["pinch_ledger"] == ""
