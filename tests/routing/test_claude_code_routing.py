"""The real Claude Code through ``claude-*: auto``: "say hi" below the hard tier, a hard task to it.

Runs bench/check_claude_code.py's routing check (the real client from npm,
the router under gunicorn, the scripted upstream of each kind, nothing leaving
loopback): each run's tool loop on one model, a start and then held. This is
what ``check_claude_code.py --routing`` runs, so CI runs it here only.
"""

import pytest

from bench.check_claude_code import ROUTING_CASES, check
from tests.support.claude_code import claude_code_binary


@pytest.fixture(scope="module")
def claude_bin():
    return claude_code_binary()


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize("case", ROUTING_CASES.values(), ids=ROUTING_CASES.keys())
def test_the_real_claude_code_is_routed_by_its_task(claude_bin, case, kind, capsys):
    assert check(kind, binary=claude_bin, quiet=True, case=case), capsys.readouterr().out
