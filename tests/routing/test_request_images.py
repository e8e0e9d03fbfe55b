"""Whether a chat request holds an image reads the same with or without the parse's count.

The parse counts the content parts of the messages (routing.protocols.schema.check_part_count);
with none, ``ChatRequest.has_images`` is False without a walk of the messages
(``has_parts``). On every real session of the corpus, and on generated messages whose content
is a string, null, an empty list or parts of any type, it says what the walk says.
"""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.protocols.chat.request import parse_chat_body
from routing.replay.corpus import corpus_dir
from tests.support.ci import missing
from tests.support.corpus import recorded_sessions


def assert_images_read_alike(messages):
    request = parse_chat_body(json.dumps({"model": "auto", "messages": messages}).encode())
    walked = replace(request, has_parts=None)

    assert request.has_images == walked.has_images


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_a_real_sessions_images_read_alike_counted_or_walked(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    assert_images_read_alike(recorded.messages)


parts = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "image_url", "input_image", "input_audio", "file"])}
    ),
    max_size=3,
)
contents = st.one_of(st.text(max_size=5), st.none(), parts)
messages = st.lists(
    st.builds(
        lambda role, content: {"role": role, "content": content},
        st.sampled_from(["system", "user", "assistant"]),
        contents,
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_generated_messages_images_read_alike_counted_or_walked(messages):
    assert_images_read_alike(messages)
