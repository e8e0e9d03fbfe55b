"""pinch_replay on the corpus' short sessions: a first step staked on later turns waits until
a conversation has run ``settle_turns`` requests (pinch/steps.py; docs/pinch.md, "Young
conversations, and what recall costs").

Without it, each of these sessions took its first step a few requests before it ended, and
cost more than sending it whole: 035 (tau-bench, 30 requests) under (0.1, 1.0), 019
(SWE-agent, 21) under (0.25, 1.0).
"""

import pytest

from metrics.replay import cli_overrides, replay_config
from routing.replay.corpus import load_sessions
from routing.replay.sessions import CachePrices, replay

pytestmark = pytest.mark.django_db

LAST_ROUND = (
    "pinch.payback.settle_turns=0",
    "pinch.payback.keep_max_chars=1500",
    "pinch.payback.lines_max_chars=400",
)

SHORT = [
    ("035.json", CachePrices(read_multiplier=0.1, write_multiplier=1.0)),
    ("019.json", CachePrices(read_multiplier=0.25, write_multiplier=1.0)),
]


def _session_cost(corpus_dir, name, prices, *settings):
    sessions = load_sessions([corpus_dir / name])
    config = replay_config(cli_overrides(settings=list(settings)))
    return replay(sessions, config, prices=prices).sessions[0]


@pytest.mark.parametrize(("name", "prices"), SHORT, ids=[name for name, _ in SHORT])
def test_a_short_session_is_no_dearer_than_pinch_off(default_config, corpus_dir, name, prices):
    shipped = _session_cost(corpus_dir, name, prices)
    assert not shipped.costlier(prices)

    # The last round's defaults: a step staked on turns the session did not run.
    before = _session_cost(corpus_dir, name, prices, *LAST_ROUND)
    assert before.costlier(prices)
