"""stable_prefixes: where this turn's and the last turn's stable prefixes end, as dispatch asks.

pinch.next_step_start is property-tested in tests/pinch; this pins what the
request edge feeds it: pinch off, over or under the budget, and the previous
request being the conversation before the model's latest answer.
"""

from pinch.payback import CacheModel
from routing.config import PinchConfig
from routing.config.pinch_blocks import PaybackConfig
from routing.pruning import pinch_messages, stable_prefixes

# The budget prune's stable prefixes (the payback steps' are at the end).
PINCH = PinchConfig(
    budget_tokens=3000,
    keep_last_turns=4,
    keep_last_tool_results=2,
    window_step=None,
    payback=PaybackConfig(enabled=False),
)


def session(results, size=3000):
    messages = [{"role": "user", "content": "fix it"}]
    for i in range(results):
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "sh"}}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x" * size})
    return messages


def test_with_pinch_off_every_message_is_stable():
    messages = session(5)
    assert stable_prefixes(messages, PINCH, None, 0) == (11, 11)


def test_over_budget_the_prefix_ends_at_the_window_and_the_last_turns_one_step_back():
    messages = session(5)  # results at 2, 4, 6, 8, 10; the window keeps 8 and 10
    _, outcome = pinch_messages(messages, PINCH, 0)
    # The last request ended before the latest answer (message 9): its window kept 6 and 8.
    assert stable_prefixes(messages, PINCH, outcome, 0) == (8, 6)


def test_under_budget_the_first_step_may_land_on_the_first_candidate():
    messages = session(5, size=30)
    _, outcome = pinch_messages(messages, PINCH, 0)
    assert stable_prefixes(messages, PINCH, outcome, 0) == (2, 2)


def test_with_the_payback_steps_the_prefix_ends_at_the_first_result_not_yet_decided():
    paying = PINCH.model_copy(update={"payback": PaybackConfig(min_payback=1.0)})
    # No cache to speak of: every step pays, so results leave the window decided.
    free = CacheModel(read_multiplier=1.0, write_multiplier=1.0)
    messages = session(5)  # results at 2, 4, 6, 8, 10; the window keeps 8 and 10
    _, outcome = pinch_messages(messages, paying, 0, cache=free)
    # 2, 4 and 6 are decided (compressed for good): nothing before 8 changes again;
    # this request took a step, so it reads where the last one's stable prefix was.
    assert outcome.step
    assert stable_prefixes(messages, paying, outcome, 0) == (8, 6)
    # Under the budget nothing is decided, and nothing steps: the next turn may
    # step from the first result on; this one reads the whole last request (9).
    under, outcome = pinch_messages(session(5, size=30), paying, 0, cache=free)
    assert stable_prefixes(under, paying, outcome, 0) == (2, 9)
