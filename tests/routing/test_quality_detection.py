"""Reading the agent's next move from its messages: repeats, reads of a path, errors, tasks."""

import json

import pytest

from routing.quality import call_signature, is_error_result, request_signals, stopped_mid_loop
from tests.support.scripted_agent import tool_call as call


def result(call_id, content="ok"):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@pytest.mark.parametrize(
    "first, second, same",
    [
        (("Read", {"file_path": "/r/a.py"}), ("Read", {"file_path": "/r/a.py"}), True),
        (("Read", {"file_path": "/r/a.py"}), ("bash", {"command": "cat /r/a.py"}), True),
        (("bash", {"command": "cat a.py"}), ("bash", {"command": "sed -n '1,40p' a.py"}), True),
        (
            ("bash", {"command": "cd /x && head -n 50 a.py"}),
            ("open", {"command": "open a.py"}),
            True,
        ),
        (
            ("Bash", {"command": "pytest -q", "description": "Run the tests"}),
            ("Bash", {"command": "pytest -q", "description": "Run them again"}),
            True,
        ),
        (("bash", {"command": "pytest -q"}), ("bash", {"command": "pytest -x"}), False),
        (("Read", {"file_path": "a.py"}), ("Read", {"file_path": "b.py"}), False),
        (("Write", {"file_path": "a.py", "content": "x"}), ("Read", {"file_path": "a.py"}), False),
        (
            ("str_replace_editor", {"command": "view", "path": "a.py"}),
            ("read_file", {"path": "a.py"}),
            True,
        ),
    ],
)
def test_a_repeat_is_the_same_call_or_a_read_of_the_same_path(first, second, same):
    signature = call_signature(first[0], json.dumps(first[1]))
    assert (signature == call_signature(second[0], json.dumps(second[1]))) is same


@pytest.mark.parametrize(
    "content, error",
    [
        ("Exit code 1\nwhoami: extra operand", True),
        ("<returncode>2</returncode>\n<output>boom", True),
        ("<returncode>0</returncode>\n<output>fine", False),
        ("Traceback (most recent call last):\n  File ...", True),
        ("Error: No such file", True),
        ("<tool_use_error>File does not exist.</tool_use_error>", True),
        ("def handle_error(self):\n    pass\n" + "x" * 400 + "Error", False),
        ("all good", False),
    ],
)
def test_an_error_result_is_told_by_its_head(content, error):
    assert is_error_result({"role": "tool", "content": content}) is error


def test_a_repeat_of_a_compressed_result_is_a_refetch_and_of_a_whole_one_the_baseline():
    messages = [
        {"role": "user", "content": "fix it"},
        call("Read", "1", file_path="a.py"),
        result("1", "A" * 100),
        call("Read", "2", file_path="b.py"),
        result("2", "B" * 100),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                *call("Read", "3", file_path="a.py")["tool_calls"],
                *call("Read", "4", file_path="b.py")["tool_calls"],
                *call("Read", "5", file_path="c.py")["tool_calls"],
            ],
        },
        result("3"),
        result("4", "Error: gone"),
        result("5"),
    ]
    signals = request_signals(messages, compressed={2})
    assert signals.calls == 3
    assert signals.repeats_compressed == 1  # a.py: its result (index 2) was compressed
    assert signals.repeats_whole == 1  # b.py
    assert (signals.seen_compressed, signals.seen_whole) == (1, 1)
    assert (signals.results, signals.errors) == (3, 1)
    assert signals.task == 1


def test_compressed_results_after_the_newest_message_are_not_what_the_agent_saw():
    messages = [
        {"role": "user", "content": "go"},
        call("Read", "1", file_path="a.py"),
        result("1"),
    ]
    assert request_signals(messages, compressed={2}).seen_compressed == 0


def test_a_request_without_an_agent_message_has_only_its_task():
    signals = request_signals(
        [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    )
    assert signals.calls == 0 and signals.task == 1


@pytest.mark.parametrize(
    "last, stopped",
    [
        ([call("Read", "1", file_path="a.py")], True),
        ([call("Read", "1", file_path="a.py"), result("1")], True),
        (
            [
                call("Read", "1", file_path="a.py"),
                result("1"),
                {"role": "assistant", "content": "done"},
            ],
            False,
        ),
        ([{"role": "user", "content": "thanks"}], False),
    ],
)
def test_a_recorded_session_that_ends_inside_a_tool_loop_stopped_mid_loop(last, stopped):
    assert stopped_mid_loop([{"role": "user", "content": "task"}, *last]) is stopped


def test_odd_shapes_never_raise():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "tool_calls": [None, {"function": "x"}, {"function": {"name": 3}}]},
        {"role": "tool", "content": None},
        "not a message",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": 1, "function": {"name": "f", "arguments": "{bad"}}],
        },
    ]
    assert request_signals(messages, compressed=[99]).calls == 1
