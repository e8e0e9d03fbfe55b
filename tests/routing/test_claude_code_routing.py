"""The real Claude Code through ``claude-*: auto``: "say hi" below the hard tier, a hard task to it.

Runs bench/check_claude_code.py's routing check (the real client from npm,
the router under gunicorn, the scripted Anthropic upstream, nothing leaving
loopback): each run's tool loop on one model, a start and then held.
"""

import os
import shutil

import pytest

from bench.check_claude_code import ROUTING_CASES, check
from bench.claude_harness import CACHE, claude_binary


@pytest.fixture(scope="module")
def claude_bin():
    installed = (CACHE / "claude-code" / "node_modules" / ".bin" / "claude").exists()
    if not (installed or os.environ.get("CLAUDE_CODE_BIN") or shutil.which("npm")):
        if os.environ.get("CI"):
            pytest.fail("CI needs Claude Code: node and npm, or CLAUDE_CODE_BIN")
        pytest.skip("Claude Code is not installed and npm is not there to install it")
    return claude_binary()


@pytest.mark.parametrize("case", ROUTING_CASES.values(), ids=ROUTING_CASES.keys())
def test_the_real_claude_code_is_routed_by_its_task(claude_bin, case, capsys):
    assert check("anthropic", claude_bin, True, case), capsys.readouterr().out
