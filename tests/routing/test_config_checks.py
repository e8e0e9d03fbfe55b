"""What an operator sees at start-up: one line for a missing file, a warning for an unset key."""

import os
import subprocess
import sys
from pathlib import Path

import yaml
from django.core.checks import run_checks

from tests.support.config import PROVIDER_KEY_ENV, base_config
from tests.support.gunicorn import wait_until_serving
from tests.support.ports import listening_socket, refused_port

ROOT = Path(__file__).resolve().parents[2]


def router_env(tmp_path, config_path, **extra):
    env = {
        **os.environ,
        "ROUTER_CONFIG": str(config_path),
        "ROUTER_DATA_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'router.sqlite3'}",
        "ROUTER_ACCESS_LOG": "",
        **extra,
    }
    env.pop(PROVIDER_KEY_ENV, None)
    return env


def test_check_warns_about_a_provider_whose_key_variable_is_unset(write_config, monkeypatch):
    monkeypatch.delenv(PROVIDER_KEY_ENV, raising=False)
    write_config(base_config("http://127.0.0.1:1/v1"))

    checks = run_checks(include_deployment_checks=True)
    warnings = {m.msg.split(":")[0]: m.msg for m in checks if m.id == "routing.W001"}

    # One per provider naming the unset variable; 'down' names none, so it has no warning.
    assert set(warnings) == {"provider 'up'", "provider 'stuck'"}
    assert warnings["provider 'up'"].startswith(
        f"provider 'up': the environment variable {PROVIDER_KEY_ENV} is not set"
    )
    assert "echo-small" in warnings["provider 'up'"]
    assert "unreachable" not in warnings["provider 'up'"]
    monkeypatch.setenv(PROVIDER_KEY_ENV, "sk-x")
    assert not [m for m in run_checks() if m.id == "routing.W001"]


def test_check_names_a_missing_config_file_in_one_line(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env=router_env(tmp_path, missing),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        f"(routing.E001) cannot read config file {missing}: No such file or directory"
        in result.stderr
    )


def test_gunicorn_stops_on_a_missing_config_file_with_one_line(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    with refused_port() as port:  # never bound: gunicorn stops before it listens
        env = router_env(tmp_path, missing, ROUTER_BIND=f"127.0.0.1:{port}")
        result = subprocess.run(
            [sys.executable, "-m", "gunicorn", "-c", "router_project/gunicorn.conf.py"],
            env=env,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )

    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "HaltServer" not in output
    assert (
        f"Error: the router's config is invalid: cannot read config file {missing}: "
        "No such file or directory" in output
    )
    assert "Booting worker" not in output  # stopped before any worker started
    assert "Router serving" not in output  # and never said it was


def serve_once(tmp_path, **extra) -> tuple[int, str]:
    """Serve the standard config under gunicorn until it answers, stop it: (port, its output)."""
    config = tmp_path / "router.yaml"
    config.write_text(yaml.safe_dump(base_config("http://127.0.0.1:1/v1")))
    with listening_socket() as sock:
        port = sock.getsockname()[1]
        bind = {"ROUTER_BIND": f"fd://{sock.fileno()}", "ROUTER_WORKERS": "1"}
        env = router_env(tmp_path, config, **bind, **extra)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], env=env, check=True, cwd=ROOT
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "router_project/gunicorn.conf.py"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(sock.fileno(),),
        )
        try:
            wait_until_serving(server, f"http://127.0.0.1:{port}")
        finally:
            server.terminate()
            output = server.communicate(timeout=20)[0].decode()
    return port, output


def test_gunicorn_logs_a_provider_whose_key_variable_is_unset(tmp_path):
    port, output = serve_once(tmp_path)

    assert f"Router serving on http://127.0.0.1:{port} (create a key: .venv/bin/python" in output
    assert (
        f"[WARNING] provider 'up': the environment variable {PROVIDER_KEY_ENV} is not set" in output
    )


def test_a_command_that_calls_no_provider_prints_no_unset_key_warning(tmp_path):
    config = tmp_path / "router.yaml"
    config.write_text(yaml.safe_dump(base_config("http://127.0.0.1:1/v1")))
    env = router_env(tmp_path, config)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, check=True, cwd=ROOT)

    result = subprocess.run(
        [sys.executable, "manage.py", "pinch_summary"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert "routing.W001" not in result.stderr and PROVIDER_KEY_ENV not in result.stderr
    deploy = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert f"(routing.W001) provider 'up': the environment variable {PROVIDER_KEY_ENV}" in (
        deploy.stderr
    )


def test_a_second_router_on_the_host_leaves_the_first_ones_control_socket(tmp_path):
    # The per-user path gunicorn defaults to, standing for a running instance's socket:
    # another instance that boots, serves and stops must neither take nor delete it.
    running = tmp_path / ".gunicorn" / "gunicorn.ctl"
    running.parent.mkdir()
    running.write_text("the first router's")

    serve_once(tmp_path, HOME=str(tmp_path))

    assert running.read_text() == "the first router's"
