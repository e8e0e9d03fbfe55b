"""SSE framing and the chat-completions event check, whatever the chunking."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routing.errors import ProviderError
from routing.protocols.base import parse_event
from routing.providers.sse import SseBuffer

STREAM = (
    b'data: {"a": 1}\n\n'
    b": keep-alive comment\n\n"
    b'event: message\r\ndata: {"b": 2}\r\n\r\n'
    b"data: [DONE]\n\n"
)
EVENTS = [
    b'data: {"a": 1}',
    b": keep-alive comment",
    b'event: message\ndata: {"b": 2}',
    b"data: [DONE]",
]


@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_any_chunking_gives_the_same_events(cuts):
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)])]
    buffer = SseBuffer()
    events = [event for chunk in chunks for event in buffer.feed(chunk)] + buffer.rest()
    assert events == EVENTS


def test_a_last_event_without_its_blank_line_still_comes_out():
    buffer = SseBuffer()
    assert buffer.feed(b'data: {"a": 1}\n') == []
    assert buffer.rest() == [b'data: {"a": 1}']


@pytest.mark.parametrize(
    "event, chunk",
    [
        (b'data: {"a": 1}', {"a": 1}),
        (b'data:{"a": 1}', {"a": 1}),
        (b"data: [DONE]", None),
        (b": comment", None),
        (b'event: x\nid: 7\ndata: {"a": 1}', {"a": 1}),
        (b'data: {"a":\ndata: 1}', {"a": 1}),
    ],
)
def test_chat_completion_events_parse(event, chunk):
    assert parse_event(event) == chunk


@pytest.mark.parametrize(
    "event",
    [b"<html>oops</html>", b"data: {not json", b"data: [1, 2]", b"data: 42", b"hello: world"],
)
def test_anything_else_is_malformed(event):
    with pytest.raises(ProviderError) as caught:
        parse_event(event)
    assert caught.value.kind == "malformed"


def test_bytes_that_are_not_utf8_come_out_replaced():
    buffer = SseBuffer()
    assert buffer.feed(b'data: {"text": "a\xff\xfeb"}\n\n') == [
        'data: {"text": "a\ufffd\ufffdb"}'.encode()
    ]


def test_an_event_past_max_bytes_is_malformed():
    buffer = SseBuffer(max_bytes=1000, provider_name="up")
    with pytest.raises(ProviderError) as caught:
        buffer.feed(b"data: " + b"x" * 2000)
    assert caught.value.kind == "malformed"
