"""What the end-to-end tests of real agents (Codex CLI, opencode) share: finding the binary.

Each agent is installed from npm by its scripts/install-* script into a
cache outside the repo, and named by an environment variable; without it the
test is skipped, and under CI it fails naming what is missing.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def installed(variable: str, default: Path, install: str) -> str:
    """The agent's binary: ``$variable``, else ``default`` when it exists; skip (fail in CI)."""
    found = os.environ.get(variable) or (str(default) if default.exists() else None)
    if not found or not shutil.which(found):
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {variable}: run {install} and set {variable}")
        pytest.skip(f"not installed ({install}, then set {variable})")
    return found


def git_repo(path: Path, files: dict) -> Path:
    """A scratch git repository holding ``files`` (name -> text)."""
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path
