"""The plan the completion service freezes (routing.plan.Plan.at_the_edge) is the plan that
``dataclasses.replace`` would build, derived fields and all: they are carried, not
recomputed, as the session and the tools left out change none of them.

Every request of the corpus' real sessions is planned, routed and pinned (a pinned
model's window exceeded included), and frozen both ways.
"""

from dataclasses import fields, replace

import pytest

from routing.config import validate_config
from routing.pipeline import plan_request
from routing.prefix_probe import PrefixProbe
from routing.protocols.chat.request import parse_chat_request
from routing.replay.corpus import corpus_dir
from routing.sessions import SessionTag
from tests.support.ci import missing
from tests.support.config import base_config
from tests.support.corpus import recorded_sessions

pytestmark = pytest.mark.django_db

CONFIG = validate_config(base_config("http://127.0.0.1:9/v1"))
EDGES = [
    (None, ()),
    (SessionTag("s@7", "claude-code", "main", True), ("web_search", "code_interpreter")),
]


def assert_frozen_alike(plan):
    for session, omitted in EDGES:
        carried = plan.at_the_edge(session, omitted)
        rebuilt = replace(plan, session=session, omitted_tools=omitted)
        assert type(carried) is type(rebuilt)
        for field in fields(rebuilt):
            assert getattr(carried, field.name) == getattr(rebuilt, field.name), field.name
        assert carried == rebuilt
        assert plan.session is None and plan.omitted_tools == ()  # the planned one unchanged


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_a_frozen_plan_is_the_plan_rebuilt_for_every_request_of_a_real_session(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    probe = PrefixProbe()
    for model in ("auto", "echo-small"):
        for messages in recorded.requests():
            request = parse_chat_request({"model": model, "messages": messages, "max_tokens": 500})
            assert_frozen_alike(plan_request(request, CONFIG, api_key_id=7, probe=probe))


def test_a_frozen_plan_keeps_a_pinned_models_exceeded_window():
    request = parse_chat_request(
        {
            "model": "echo-small",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 10**7,
        }
    )
    plan = plan_request(request, CONFIG, api_key_id=7, probe=PrefixProbe())
    assert plan.over_window
    assert_frozen_alike(plan)
