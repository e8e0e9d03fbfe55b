"""scripts/setup installs only when the dependencies changed, so a restart reinstalls nothing.

Run in a copy of the project whose .venv/bin/python is a stand-in that records
how it was called: the test sees exactly when pip would run, without running it.
The browser and nginx checks of ``--test`` find stand-ins too, and apt-get is one
that records: nothing is installed on the machine running the test.
"""

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stand_in(path: Path, log: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    path.chmod(0o755)


def project_copy(tmp_path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup", tmp_path / "scripts" / "setup")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    stand_in(tmp_path / ".venv" / "bin" / "python", tmp_path / "calls.log")
    for tool in ("chromium", "chromedriver", "nginx", "apt-get"):
        stand_in(tmp_path / "bin" / tool, tmp_path / "apt.log")
    return tmp_path


def setup(project: Path, *args) -> list[str]:
    """Run scripts/setup; return the pip commands it ran."""
    log = project / "calls.log"
    log.unlink(missing_ok=True)
    path = f"{project / 'bin'}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["bash", "scripts/setup", *args],
        cwd=project,
        env={**os.environ, "PATH": path},
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert result.stderr == ""  # nothing to alarm an operator on a plain restart
    return log.read_text().splitlines() if log.exists() else []


# Quiet (its lines go to .venv/pip.log), and no compiling of every dependency up front.
PIP = "-m pip install --quiet --no-compile --disable-pip-version-check -e ."


def test_setup_installs_once_then_only_when_pyproject_changes(tmp_path):
    project = project_copy(tmp_path)

    first = setup(project)
    assert first[-1] == PIP
    assert setup(project) == []  # a restart: nothing to install

    with (project / "pyproject.toml").open("a") as file:
        file.write("\n# a changed dependency list\n")
    assert setup(project)[-1] == PIP
    assert setup(project) == []


def test_the_test_tools_are_installed_when_first_asked_for(tmp_path):
    project = project_copy(tmp_path)
    setup(project)

    assert setup(project, "--test")[-1] == PIP + "[test]"
    assert setup(project, "--test") == []
    assert setup(project) == []  # the test install holds the plain one
    assert not (project / "apt.log").exists()  # the machine was left as it was


def test_pips_own_lines_are_shown_only_when_the_install_fails(tmp_path):
    project = project_copy(tmp_path)
    python = project / ".venv" / "bin" / "python"
    python.write_text(
        '#!/bin/sh\necho "WARNING: a noisy index"\necho "ERROR: no wheel for x"\nexit 1\n'
    )
    result = subprocess.run(
        ["bash", "scripts/setup"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "ERROR: no wheel for x" in result.stderr
    assert "could not install" in result.stderr
    assert not (project / ".venv" / ".installed").exists()  # the next start tries again


def test_a_successful_install_prints_one_line_and_none_of_pips(tmp_path):
    project = project_copy(tmp_path)
    python = project / ".venv" / "bin" / "python"
    python.write_text('#!/bin/sh\necho "WARNING: a noisy index"\n')
    result = subprocess.run(
        ["bash", "scripts/setup"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "Installing the router's dependencies into .venv (once; about 20 s)..."
    ]
    assert result.stderr == ""
