"""The shared corpus' recorded sessions as pytest parameters, for tests that replay them,
and the requests an agent sends of a session, as a worker parses them."""

import json

import pytest

from routing.replay.corpus import corpus_dir, load_sessions


def recorded_sessions() -> list:
    """One parameter per recorded session; a lone None when the corpus is absent (the test
    then says so through tests.support.ci.missing)."""
    folder = corpus_dir()
    if not folder.is_dir():
        return [pytest.param(None, id="no-corpus")]
    return [pytest.param(s, id=s.name) for s in load_sessions([folder])]


def agent_requests(messages):
    """Each request of a session: the messages before each of the agent's answers, and all."""
    for t, message in enumerate(messages):
        if t > 0 and message.get("role") == "assistant":
            yield messages[:t]
    yield messages


def wire_copy(messages):
    """The request as a worker parses it: equal content, none of the same objects."""
    return json.loads(json.dumps(messages))
