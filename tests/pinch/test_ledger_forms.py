"""The ledger's own forms, made cheaply, are the forms they stand in for (pinch/ledger.py).

``Ledger.as_json`` is what the stores and the conversation's row keep, so its
bytes must not change; ``Ledger.updated`` stands in for
``dataclasses.replace``; ``Ledger.as_parsed`` for a round trip through the
JSON (the router keeps it instead of parsing its own text again); and
``messages_digest`` hashes its fingerprints joined, for what feeding them one
by one gave.
"""

import json
import math
from dataclasses import fields, replace
from hashlib import blake2b

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinch.ledger import Ledger, messages_digest

indexes = st.lists(st.integers(0, 10**6), max_size=30).map(tuple)
# A figure of integers alone (a clock or prices given as ints) reads back a float.
figures = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**9), 10**9))
ledgers = st.builds(
    Ledger,
    length=st.integers(0, 10**5),
    decided=st.integers(0, 10**4),
    kept=indexes,
    steps=indexes,
    digest=st.one_of(st.text(max_size=40), st.just("0" * 32)),
    cold=indexes,
    at=figures,
    earned=figures,
    baseline=figures,
    recall_cost=figures,
)


def json_as_it_was(ledger: Ledger) -> str:
    """The ledger's JSON as json.dumps wrote it, lists and all."""
    return json.dumps(
        [
            ledger.length,
            ledger.decided,
            list(ledger.kept),
            list(ledger.steps),
            ledger.digest,
            list(ledger.cold),
            ledger.at,
            ledger.earned,
            ledger.baseline,
            ledger.recall_cost,
        ],
        separators=(",", ":"),
    )


def typed(ledger: Ledger) -> list:
    return [(type(value), value) for value in (getattr(ledger, f.name) for f in fields(ledger))]


@given(ledgers)
def test_a_ledger_is_written_byte_for_byte_as_json_dumps_wrote_it(ledger):
    assert ledger.as_json() == json_as_it_was(ledger)


@given(ledgers)
def test_a_ledger_as_parsed_is_what_its_json_reads_back_as_types_and_all(ledger):
    assert typed(ledger.as_parsed()) == typed(Ledger.from_json(ledger.as_json()))


@given(ledgers, ledgers, st.sets(st.sampled_from([f.name for f in fields(Ledger)])))
def test_an_updated_ledger_is_the_one_dataclasses_replace_makes(ledger, other, names):
    changes = {name: getattr(other, name) for name in names}
    updated = ledger.updated(**changes)
    assert typed(updated) == typed(replace(ledger, **changes))
    assert updated == replace(ledger, **changes)
    assert hash(updated) == hash(replace(ledger, **changes))
    assert typed(ledger) == typed(replace(ledger))  # the original is left as it was


def test_a_ledger_is_not_updated_with_a_field_it_does_not_have():
    with pytest.raises(TypeError, match="lenght"):
        Ledger().updated(lenght=3)


@given(st.lists(st.text(min_size=0, max_size=40)))
def test_the_messages_digest_is_that_of_the_fingerprints_fed_one_by_one(fingerprints):
    digest = blake2b(digest_size=16)
    for fingerprint in fingerprints:
        digest.update(fingerprint.encode())
    assert messages_digest(fingerprints) == digest.hexdigest()


def test_an_unreadable_ledger_reads_as_none():
    good = json.loads(Ledger(length=3, at=1.5).as_json())
    assert Ledger.from_json(json.dumps(good)) == Ledger(length=3, at=1.5)
    for bad in ([*good[:7], math.inf, 0, 0], good[:5], [*good[:2], "x", *good[3:]], "[", ""):
        raw = bad if isinstance(bad, str) else json.dumps(bad)
        assert Ledger.from_json(raw) is None
