"""The payback replay is linear in tool rounds and decides as the plain sum did.

A conversation of n tool rounds replays n requests; each once added up the
tokens every earlier decision removed (8,000 rounds: 16 s of CPU). The count
now runs on from the last one: these tests hold it to the plain sum it
replaces, request by request, with and without a ledger carried between
them. Measured (``pinch.payback.plan`` over n tool rounds from no ledger,
median CPU of 3): 8,000 rounds took 5.0 s at 1de781f, 1.65 s now; 2,000
took 0.58 s and 0.41 s.
"""

from pinch import payback
from pinch.payback import CacheModel, plan
from tests.pinch.test_payback import replay_session, session
from tests.support.knobs import shipped_knobs

ANTHROPIC = CacheModel(read_multiplier=0.1, write_multiplier=1.25)
KNOBS = shipped_knobs(budget_tokens=2000, min_payback=1.0, turns_ahead=1.0)


def plain_removed(session_, ledger) -> int:
    kept = set(ledger.kept)
    return sum(session_.saving(i) for i in session_.results[: ledger.decided] if i not in kept)


def test_the_running_count_of_removed_tokens_equals_the_plain_sum(monkeypatch):
    checked = []
    running = payback._removed

    def both(session_, ledger):
        found = running(session_, ledger)
        checked.append((found, plain_removed(session_, ledger)))
        return found

    monkeypatch.setattr(payback, "_removed", both)
    replay_session(session(60, size=1500), KNOBS, ANTHROPIC)
    assert len(checked) > 50 and any(found for found, _ in checked)
    assert all(found == plain for found, plain in checked)


def test_a_long_session_decides_alike_with_or_without_a_ledger_between_requests():
    messages = session(120, size=900)
    carried = replay_session(messages, KNOBS, ANTHROPIC)
    _, payload, ledger, stats = carried[-1]
    fresh_payload, fresh_ledger, fresh_stats = plan(messages[:-1], None, KNOBS, ANTHROPIC)
    assert ledger.steps and ledger.decided > 50
    assert (fresh_ledger.decided, fresh_ledger.kept, fresh_ledger.steps) == (
        ledger.decided,
        ledger.kept,
        ledger.steps,
    )
    assert fresh_payload == payload and fresh_stats["final_tokens"] == stats["final_tokens"]
