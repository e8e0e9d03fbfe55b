"""next_step_start: the prefix a later prune step leaves as it was sent.

A provider whose cache needs explicit breakpoints puts one at the end of this
prefix, so the promise is checked on the output of prune_context itself:
whatever the agent appends, the next turn's pruned payload starts with the
same messages, byte for byte, up to that index.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from pinch import next_step_start, prune_context
from tests.pinch.test_core_properties import conversations


def tool(i, text="x" * 6000):
    return {"role": "tool", "tool_call_id": f"c{i}", "content": text}


def call(i):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash"}}],
    }


def session(results):
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    for i in range(results):
        messages += [call(i), tool(i)]
    return messages


def test_a_settled_prefix_ends_before_the_first_tool_result_of_the_window():
    messages = session(10)  # tool results at 3, 5, ..., 21
    # The window keeps the last 4 results (15, 17, 19, 21): 15 is the next to go.
    assert next_step_start(messages, keep_last_tool_results=4) == 15


def test_in_steps_the_prefix_ends_where_the_step_will_land():
    messages = session(10)
    # Steps of 4: the window starts at result (10 - 4) // 4 * 4 = 4, message 11.
    assert next_step_start(messages, keep_last_tool_results=4, window_step=4) == 11


def test_an_unsettled_conversation_is_stable_only_before_its_first_candidate():
    messages = session(10)
    assert next_step_start(messages, keep_last_tool_results=4, settled=False) == 3


def test_without_tool_results_nothing_will_be_rewritten():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    assert next_step_start(messages) == 2


appended = st.lists(st.sampled_from(["user", "call", "call", "call"]), min_size=0, max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    conversations(),
    appended,
    st.integers(500, 20_000),
    st.integers(1, 4),
    st.one_of(st.none(), st.integers(1, 6)),
    st.one_of(st.none(), st.integers(1, 8)),
)
def test_the_next_turns_pruned_payload_repeats_the_stable_prefix(
    messages, more, budget, turns, results, step
):
    knobs = dict(keep_last_turns=turns, keep_last_tool_results=results, window_step=step)
    now, stats = prune_context(messages, budget_tokens=budget, **knobs)
    settled = stats["original_tokens"] > budget
    stable = next_step_start(messages, **knobs, settled=settled)
    later = list(messages)
    for k, kind in enumerate(more):
        if kind == "user":
            later.append({"role": "user", "content": "next " * 50})
        else:
            later += [call(f"n{k}"), tool(f"n{k}", "y" * 5000)]
    then, _ = prune_context(later, budget_tokens=budget, **knobs)
    assert then[:stable] == now[:stable]
