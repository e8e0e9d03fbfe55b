"""The real agents as a new user runs them against the router: Claude Code, Codex CLI, opencode.

bench/check_final_errors.py runs each one against the same router and the
same scenarios, so each agent here is the same four things: where its binary
is (installed from npm into a cache outside the repo, as CI does), its
version, how to run one task with a router key and a model name (None: the
name the agent asks for by default), and what it printed. Codex and opencode
get the config the README gives a user (tests/support/real_clients.py reads
it from the README), Claude Code its two variables (bench/claude_harness.py).
Nothing leaves the machine: each runs with a fresh HOME, its update checks,
telemetry and model fetches off, and its proxy variables at a closed
loopback port.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import NamedTuple

from bench import claude_harness as harness
from tests.support.real_clients import readme_block

ROOT = Path(__file__).resolve().parent.parent
TASK = "Say hi."
TIMEOUT_SECONDS = 180
# Port 9 (discard) refuses connections: whatever an agent tries beyond the router fails.
NOWHERE = "http://127.0.0.1:9"
# A 16x16 orange PNG (Codex omits an image it cannot decode, and sends nothing of it).
PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAF0lEQVR4nGP438BAEiJN9aiGUQ1DSgMAnHV/"
    "EBlpJJcAAAAASUVORK5CYII="
)
OFFLINE = {
    "HTTP_PROXY": NOWHERE,
    "HTTPS_PROXY": NOWHERE,
    "ALL_PROXY": NOWHERE,
    "NO_PROXY": "127.0.0.1,localhost",
    "NO_COLOR": "1",
}


class Ran(NamedTuple):
    """One run: exit code, seconds from its start, and each line it printed with when (epoch)."""

    exit: int
    seconds: float
    lines: list  # (epoch, text), stdout and stderr as they came

    @property
    def printed(self) -> str:
        return "\n".join(text for _, text in self.lines)

    def shown_at(self, text: str) -> float | None:
        """When ``text`` was first printed (the end of the run for a one-shot print)."""
        return next((at for at, line in self.lines if text in line), None)


def installed(script: str) -> Path:
    """The binary scripts/install-<agent> installs (or finds) in its cache."""
    done = subprocess.run(
        [str(ROOT / "scripts" / script)], check=True, capture_output=True, text=True
    )
    return Path(done.stdout.strip())


def version(binary: Path) -> str:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"


def timed(command: list, cwd: Path, env: dict) -> Ran:
    """Run ``command``, each line it prints stamped as it comes."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env={"PATH": os.environ["PATH"], **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    lines = []

    def read(stream):
        for line in stream:
            lines.append((time.time(), line.rstrip("\n")))

    readers = [threading.Thread(target=read, args=(s,)) for s in (process.stdout, process.stderr)]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for reader in readers:
        reader.join()
    return Ran(process.returncode, time.monotonic() - started, sorted(lines))


def run_claude(binary: Path, tmp: Path, repo: Path, router, key: str, model: str | None) -> Ran:
    home = tmp / "claude-home"
    home.mkdir(exist_ok=True)
    case = harness.Case(["--model", model] if model else [], {}, "")
    keyed = dataclasses.replace(router, key=key)
    done, seconds = harness.run_claude(binary, repo, home, keyed, None, True, case)
    try:
        printed = str(json.loads(done.stdout).get("result", ""))
    except ValueError:
        printed = done.stdout
    # One JSON result at the end (-p): shown when Claude Code exits.
    return Ran(done.returncode, seconds, [(time.time(), printed + "\n" + done.stderr)])


def codex_config(url: str, model: str | None) -> str:
    """The README's ``config.toml``; no model: Codex asks for its own default."""
    block = readme_block("Use it with Codex CLI", "toml")
    block = block.replace("http://127.0.0.1:8000/v1", f"{url}/v1")
    block = block.replace('model = "auto"', f'model = "{model}"' if model else "", 1)
    # The run's own additions: no update check, analytics or feedback (nothing leaves).
    return (
        "check_for_update_on_startup = false\n"
        + block
        + "\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n"
    )


def run_codex(
    binary: Path, tmp: Path, repo: Path, router, key: str, model: str | None, image=False
) -> Ran:
    """``image``: the task comes with a small PNG (``codex exec -i``)."""
    home = tmp / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(codex_config(router.url, model))
    env = {"HOME": str(tmp), "CODEX_HOME": str(home), "ROUTER_API_KEY": key, **OFFLINE}
    command = [binary, "exec", "--sandbox", "danger-full-access", "--skip-git-repo-check", TASK]
    if image:  # after the task: -i takes every value that follows it
        (tmp / "pixel.png").write_bytes(base64.b64decode(PIXEL_PNG))
        command += ["-i", str(tmp / "pixel.png")]
    return timed(command, repo, env)


def opencode_config(url: str, model: str | None) -> str:
    """The README's ``opencode.json`` (``router/auto``); a model: the same, naming it."""
    config = json.loads(readme_block("Use it with opencode", "json"))
    config["provider"]["router"]["options"]["baseURL"] = f"{url}/v1"
    if model:
        config["provider"]["router"]["models"] = {model: {}}
        config["model"] = f"router/{model}"
    return json.dumps(config)


def run_opencode(binary: Path, tmp: Path, repo: Path, router, key: str, model: str | None) -> Ran:
    home = tmp / "opencode-home"
    home.mkdir(exist_ok=True)
    (repo / "opencode.json").write_text(opencode_config(router.url, model))
    env = {
        "HOME": str(home),
        "ROUTER_API_KEY": key,
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        **OFFLINE,
    }
    return timed([binary, "run", TASK], repo, env)


class Agent(NamedTuple):
    binary: object  # () -> Path
    run: object  # (binary, tmp, repo, router, key, model) -> Ran
    default_model: str  # the name it asks for with no model set (for the table)


AGENTS = {
    "claude": Agent(harness.claude_binary, run_claude, "claude-opus-4-8"),
    "codex": Agent(lambda: installed("install-codex"), run_codex, "gpt-6.2-sol"),
    # opencode names no model of its own for a custom provider: the README's config does.
    "opencode": Agent(lambda: installed("install-opencode"), run_opencode, "auto"),
}
