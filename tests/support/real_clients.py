"""What the end-to-end runs of real agents (Codex CLI, opencode) share: finding the binary,
a scratch repository, and the configs the README gives a user.

Each agent is installed from npm by its scripts/install-* script into a
cache outside the repo, and named by an environment variable; without it the
test is skipped, and under CI it fails naming what is missing. The tests and
bench/check_final_errors.py read each config from the README itself, so what
they run is what a user copies.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


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


def readme_block(section: str, language: str, nth: int = 0) -> str:
    """The ``nth`` (from 0) ``language`` code block of the README's section titled ``section``."""
    text = README.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return text.split(f"```{language}\n")[nth + 1].split("```", 1)[0]
