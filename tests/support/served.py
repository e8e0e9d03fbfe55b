"""The router served as in production, for end-to-end tests and benchmarks.

``gunicorn_router`` runs gunicorn with the shipped gunicorn.conf.py (DJANGO_DEBUG=0,
its own SQLite file unless a DATABASE_URL is given) and a router key;
``nginx_in_front`` runs docs/deploy/nginx.conf, as shipped but for its ports,
in front of it. Both listen on 127.0.0.1 only and are stopped on exit, also
when start-up fails.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import yaml

from tests.support.config import PROVIDER_KEY, PROVIDER_KEY_ENV
from tests.support.gunicorn import wait_until_serving
from tests.support.ports import listening_socket

ROOT = Path(__file__).resolve().parents[2]
NGINX_CONF = ROOT / "docs" / "deploy" / "nginx.conf"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    url: str
    key: str
    env: dict
    port: int
    # gunicorn's process: its output (stdout and stderr) can be read once it has stopped
    process: subprocess.Popen | None = None

    def manage(self, *args) -> str:
        """Run a manage.py command with this router's environment; its stdout."""
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def chat(self, body: dict, key: str | None = None, **kwargs):
        """POST /v1/chat/completions with this router's key (or ``key``); the response."""
        return requests.post(
            self.url + "/v1/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {key or self.key}"},
            timeout=30,
            **kwargs,
        )

    def recorded(self, seconds: float = 20.0) -> None:
        """Wait until this router has written the rows of every answer it gave."""
        wait_until_recorded(Path(self.env["ROUTER_DATA_DIR"]), seconds)

    def count_rows(self, **filters) -> int:
        self.recorded()
        code = (
            "from routing.models import RouteDecision as R; "
            f"print(R.objects.filter(**{filters!r}).count())"
        )
        return int(self.manage("shell", "-c", code).strip().splitlines()[-1])


def wait_until_recorded(data_dir: Path, seconds: float = 20.0) -> None:
    """Wait until the router serving from ``data_dir`` has written (or spooled) the row of
    every answer it gave: a served worker writes rows behind its answers
    (routing/recording/writer.py) and closes each row's journal entry once it is kept, so
    every live worker's journal is empty then. A dead worker's journal is the drain's."""
    deadline = time.monotonic() + seconds
    while True:
        waiting = [path.name for path in _live_journals(data_dir / "spool") if _holds_rows(path)]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            pytest.fail(f"the router had not written its rows within {seconds}s: {waiting}")
        time.sleep(0.02)


def _live_journals(spool: Path):
    for path in spool.glob("inflight-*.jsonl"):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            yield path  # its worker holds it: alive
        finally:
            os.close(fd)  # a dead one's lock, if taken, goes with the descriptor


def _holds_rows(journal: Path) -> bool:
    try:
        with open(journal, "rb") as handle:
            return handle.read(1) not in (b"", b"\0")
    except FileNotFoundError:
        return False


def router_env(tmp_path: Path, config: dict, **extra) -> dict:
    path = tmp_path / "router.yaml"
    path.write_text(yaml.safe_dump(config))
    return {
        **os.environ,
        # Its own SQLite file by default: the served process must not touch the test database.
        "DATABASE_URL": f"sqlite:///{tmp_path / 'router.sqlite3'}",
        "ROUTER_DATA_DIR": str(tmp_path),
        "ROUTER_CONFIG": str(path),
        "DJANGO_DEBUG": "0",
        "ROUTER_WORKERS": "2",
        "ROUTER_ACCESS_LOG": "",
        PROVIDER_KEY_ENV: PROVIDER_KEY,
        **extra,
    }


def prepare(env: dict) -> str:
    """Give the router a migrated database with a key "e2e" in it; returns the raw key.

    A new SQLite file is a copy of one migrated once per test process (key included):
    migrating and making the key took two Django start-ups, about 4 s of every router's
    start on a quiet machine, 40 s under load.
    """
    path = _sqlite_path(env["DATABASE_URL"])
    if path is not None and not path.exists():
        template, key = _migrated_sqlite()
        shutil.copyfile(template, path)
        return key
    return _MIGRATED_COPIES.get(env["DATABASE_URL"]) or _migrate_with_key(env)


def _sqlite_path(url: str) -> Path | None:
    return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None


def _migrate_with_key(env: dict) -> str:
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    out = subprocess.run(
        [*manage, "createapikey", "e2e"], env=env, check=True, cwd=ROOT, capture_output=True
    ).stdout.decode()
    return out.strip().splitlines()[-1]


@functools.cache
def _migrated_sqlite() -> tuple[Path, str]:
    """(an SQLite file migrated with a key "e2e" in it, that key's raw value); once a process."""
    folder = Path(tempfile.mkdtemp(prefix="router-migrated-"))
    atexit.register(shutil.rmtree, folder, True)
    database = folder / "router.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "ROUTER_DATA_DIR": str(folder)}
    return database, _migrate_with_key(env)


@contextlib.contextmanager
def _process(command, env, url, cwd=ROOT, pass_fds=()):
    process = subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=pass_fds,
    )
    try:
        wait_until_serving(process, url)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


# A scratch PostgreSQL database copied from a migrated one -> the key in it (for prepare).
_MIGRATED_COPIES: dict[str, str] = {}


@functools.cache
def _migrated_postgres() -> tuple[str, str]:
    """(a scratch PostgreSQL database's name, migrated with a key "e2e" in it, that key);
    once a process, dropped when it exits."""
    from tests.support.postgres import scratch_database

    stack = contextlib.ExitStack()
    url = stack.enter_context(scratch_database())
    atexit.register(stack.close)
    return url.rsplit("/", 1)[1], _migrate_with_key({**os.environ, "DATABASE_URL": url})


@contextlib.contextmanager
def migrated_scratch_database():
    """Yield the DATABASE_URL of a scratch PostgreSQL database, migrated, with a key
    "e2e" (prepare gives it): a copy of one migrated once per test process."""
    from tests.support.postgres import scratch_database

    template, key = _migrated_postgres()
    with scratch_database(template) as url:
        _MIGRATED_COPIES[url] = key
        yield url


@contextlib.contextmanager
def gunicorn_router(env: dict, key: str):
    """gunicorn with the shipped settings, on a free loopback port; yields a Served."""
    with listening_socket() as sock:
        port = sock.getsockname()[1]
        # The test's own listening socket, handed over: no other process can take the port.
        env = {**env, "ROUTER_BIND": f"fd://{sock.fileno()}"}
        url = f"http://127.0.0.1:{port}"
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            str(ROOT / "router_project/gunicorn.conf.py"),
        ]
        with _process(command, env, url, pass_fds=(sock.fileno(),)) as process:
            yield Served(url, key, {**env, "ROUTER_BIND": f"127.0.0.1:{port}"}, port, process)


@contextlib.contextmanager
def two_routers(tmp_path: Path, config: dict, redis_url: str):
    """Two instances sharing a scratch PostgreSQL database and ``redis_url``, as
    docs/deployment.md sets up several hosts; yields (first, second)."""
    import uuid

    with migrated_scratch_database() as database_url:
        env = router_env(
            tmp_path,
            config,
            DATABASE_URL=database_url,
            REDIS_URL=redis_url,
            # A secret key shared by both, as several hosts need.
            DJANGO_SECRET_KEY="two-instances-" + uuid.uuid4().hex,
        )
        key = prepare(env)
        with gunicorn_router(env, key) as first, gunicorn_router(env, key) as second:
            yield first, second


def nginx_config(listen_port: int, router_ports: list[int], work_dir: Path) -> str:
    """docs/deploy/nginx.conf with test ports, inside a main config of its own (no root paths)."""
    server = NGINX_CONF.read_text()
    servers = "".join(f"    server 127.0.0.1:{port};\n" for port in router_ports)
    server = re.sub(r"    server 127\.0\.0\.1:8000;[^\n]*\n", servers, server)
    server = server.replace("listen 80;", f"listen 127.0.0.1:{listen_port};")
    temp = {name: work_dir / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    for path in temp.values():
        path.mkdir(exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}worker_processes 1;\ndaemon off;\npid {work_dir / 'nginx.pid'};\n"
        f"error_log {work_dir / 'error.log'} warn;\nevents {{ worker_connections 1024; }}\n"
        f"http {{\n  access_log off;\n"
        f"  client_body_temp_path {temp['body']};\n  proxy_temp_path {temp['proxy']};\n"
        f"  fastcgi_temp_path {temp['fastcgi']};\n  uwsgi_temp_path {temp['uwsgi']};\n"
        f"  scgi_temp_path {temp['scgi']};\n{server}\n}}\n"
    )


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None
    )


@contextlib.contextmanager
def nginx_in_front(work_dir: Path, *routers: Served):
    """nginx with docs/deploy/nginx.conf in front of the given routers; yields its URL."""
    port = free_port()
    work_dir.mkdir(parents=True, exist_ok=True)
    conf = work_dir / "nginx.conf"
    conf.write_text(nginx_config(port, [r.port for r in routers], work_dir))
    url = f"http://127.0.0.1:{port}"
    with _process([nginx_binary(), "-c", str(conf), "-p", str(work_dir)], os.environ, url):
        yield url
