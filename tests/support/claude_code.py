"""The real Claude Code for the tests that run it: its binary, or a skip (a failure under CI)."""

import os
import shutil
from pathlib import Path

import pytest

from bench.claude_harness import CACHE, claude_binary


def claude_code_binary() -> Path:
    """The binary bench/claude_harness.py runs (installed from npm when it can be)."""
    installed = (CACHE / "claude-code" / "node_modules" / ".bin" / "claude").exists()
    if not (installed or os.environ.get("CLAUDE_CODE_BIN") or shutil.which("npm")):
        if os.environ.get("CI"):
            pytest.fail("CI needs Claude Code: node and npm, or CLAUDE_CODE_BIN")
        pytest.skip("Claude Code is not installed and npm is not there to install it")
    return claude_binary()
