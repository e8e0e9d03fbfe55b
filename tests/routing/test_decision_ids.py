"""Decision ids come from blocks reserved in the database: never one twice, and a busy
worker reserves rarely (a block sized to last a second at the last one's pace, up to
MAX_BLOCK), an idle one in small blocks (few ids left unused when it stops)."""

import pytest

from routing.recording import ids

pytestmark = pytest.mark.django_db


@pytest.fixture
def reservations(monkeypatch):
    """The sizes of the blocks reserved, and a clock the test moves."""
    sizes = []
    clock = {"now": 1000.0}
    reserve = ids._reserve

    def counted(count):
        sizes.append(count)
        return reserve(count)

    monkeypatch.setattr(ids, "_reserve", counted)
    monkeypatch.setattr(ids.time, "monotonic", lambda: clock["now"])
    ids.forget_reserved_ids()
    yield sizes, clock
    ids.forget_reserved_ids()


def test_a_busy_worker_reserves_a_seconds_ids_at_once(reservations):
    sizes, clock = reservations
    handed = []
    for _ in range(3000):
        handed.append(ids.next_id())
        clock["now"] += 0.002  # five hundred requests a second
    assert sizes == [64, 500, 500, 500, 500, 500, 500]
    assert len(set(handed)) == len(handed) and None not in handed
    assert handed == sorted(handed)


def test_a_block_is_at_most_the_largest_and_at_least_the_smallest(reservations):
    sizes, clock = reservations
    for _ in range(64 + ids.MAX_BLOCK):
        ids.next_id()
        clock["now"] += 0.0001
    clock["now"] += 100 * ids.BLOCK_SECONDS  # a worker gone quiet
    ids.next_id()
    assert sizes == [64, ids.MAX_BLOCK, 64]


def test_ids_from_blocks_of_every_size_are_never_handed_out_twice(reservations):
    sizes, clock = reservations
    handed = []
    for step in (0.0001, 2.0, 0.0001, 0.5):
        for _ in range(300):
            handed.append(ids.next_id())
            clock["now"] += step
    assert len(set(handed)) == len(handed)
    assert len(set(sizes)) > 1
