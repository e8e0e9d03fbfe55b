"""The LiteLLM proxy as an anchor for bench_proxy.py: the same upstream, the same bodies, one run.

Figures from a noisy shared 2-core machine move by tens of percent between
runs; a well-known gateway measured in the same run, against the same
upstream, gives them a fixed point anyone can reproduce. The anchor is the
LiteLLM proxy at a pinned version, installed with pip into a virtual
environment of its own under the user's cache directory (never into the
router's), configured like the router: one OpenAI-compatible model named
``auto`` at the bench upstream, one worker, no database, a master key (the
proxy refuses to start without one).

Offline: nothing at start or per request may reach the network. The
environment below makes LiteLLM use the copies bundled with the package
instead of fetching them (``LITELLM_LOCAL_*``: the model cost map, Anthropic
beta headers, auto-router presets, policy templates, blog posts), drops any
``DATABASE_URL`` so it runs without one, and quiets its log. Its usage
telemetry is off unless turned on (since 1.107), and no callback is set.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

LITELLM_VERSION = "1.108.7"
OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True",
    "DISABLE_SCHEMA_UPDATE": "True",
    "LITELLM_LOG": "ERROR",
}


def venv_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "llm-router-bench" / f"litellm-{LITELLM_VERSION}"


def install() -> Path:
    """The pinned LiteLLM proxy's executable, installed on first use (a few minutes, once)."""
    venv = venv_dir()
    executable = venv / "bin" / "litellm"
    if executable.exists():
        return executable
    print(f"installing litellm[proxy]=={LITELLM_VERSION} into {venv} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", f"litellm[proxy]=={LITELLM_VERSION}"],
        check=True,
    )
    return executable


@dataclass
class Anchor:
    url: str
    port: int
    key: str
    process: subprocess.Popen


def start_litellm(tmp: Path, upstream_url: str, port: int, start) -> Anchor:
    """Serve the proxy on 127.0.0.1:port; ``start`` is bench_proxy's process starter."""
    executable = install()
    key = "sk-bench-" + secrets.token_hex(16)
    config = tmp / "litellm.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model_list": [
                    {
                        "model_name": "auto",
                        "litellm_params": {
                            "model": "openai/fast",
                            "api_base": upstream_url,
                            "api_key": "bench",
                        },
                    }
                ],
                "general_settings": {"master_key": key},
            }
        )
    )
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env.update(OFFLINE_ENV)
    process = start(
        [
            str(executable),
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--num_workers",
            "1",
        ],
        env=env,
    )
    anchor = Anchor(f"http://127.0.0.1:{port}", port, key, process)
    wait_until_live(anchor)
    return anchor


def wait_until_live(anchor: Anchor, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if anchor.process.poll() is not None:
            out = anchor.process.stdout.read().decode(errors="replace")
            sys.exit(f"litellm exited with {anchor.process.returncode}:\n{out[-3000:]}")
        try:
            with urllib.request.urlopen(anchor.url + "/health/liveliness", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    sys.exit(f"litellm did not come up on {anchor.url} within {timeout:g}s")
