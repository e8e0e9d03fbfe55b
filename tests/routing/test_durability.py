"""Never lose a decision: the database locked or gone, the client still answered, the row later.

The router runs as a user serves it (gunicorn, one worker, so its caches are
the ones the requests meet). The database is broken for real: the SQLite file
write-locked by another process, PostgreSQL cut behind a TCP forwarder.
"""

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import openai
import pytest
import requests

from tests.support.config import base_config
from tests.support.openai_upstream import ANSWER
from tests.support.served import gunicorn_router, prepare, router_env
from tests.support.tcp_proxy import TcpProxy

HI = [{"role": "user", "content": "hi"}]


def serve(tmp_path, upstream, **env):
    """One worker, so the requests meet the caches they warmed."""
    env = router_env(tmp_path, base_config(upstream.base_url), ROUTER_WORKERS="1", **env)
    return gunicorn_router(env, prepare(env))


def spooled(served) -> list[dict]:
    path = Path(served.env["ROUTER_DATA_DIR"]) / "spool" / "decisions.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ask(served, key=None, stream=False):
    sdk = openai.OpenAI(
        base_url=served.url + "/v1", api_key=key or served.key, max_retries=0, timeout=30
    )
    if stream:
        chunks = list(sdk.chat.completions.create(model="echo-medium", messages=HI, stream=True))
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip()
    return sdk.chat.completions.create(model="echo-medium", messages=HI).choices[0].message.content


def lock_sqlite(path):
    """Another process holds the write lock of the SQLite file until stopped."""
    locker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert locker.stdout.readline().strip() == "locked"
    return locker


def test_a_locked_sqlite_file_answers_the_client_spools_the_row_and_writes_it_once(
    tmp_path, upstream
):
    with serve(tmp_path, upstream) as served:
        assert ask(served) == ANSWER  # the worker now knows the key and the config
        served.recorded()  # its row is written behind the answer: in before the lock
        locker = lock_sqlite(tmp_path / "router.sqlite3")
        try:
            assert ask(served) == ANSWER
            assert ask(served, stream=True) == ANSWER  # the stream ends with [DONE], not cut
            # Readers are not blocked by the writer's lock (WAL): only the first row is in.
            assert served.count_rows() == 1
            rows = spooled(served)
            assert [(r["status_code"], r["stream"]) for r in rows] == [(200, False), (200, True)]
            assert all(r["prompt_tokens"] == 11 for r in rows)
        finally:
            locker.communicate("\n", timeout=10)

        assert ask(served) == ANSWER  # this worker writes its row, then drains the spool
        assert served.count_rows(status_code=200) == 4
        assert spooled(served) == []
        assert "Wrote 0 spooled" in served.manage("drain_spool")
        assert served.count_rows() == 4


def postgres_url():
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else ""


@pytest.fixture
def outage_database():
    """A database of its own on the test PostgreSQL server, reached through a cuttable proxy."""
    import psycopg

    parts = urlsplit(postgres_url())
    admin = dict(host=parts.hostname, port=parts.port or 5432, user=parts.username or "postgres")
    if parts.password:
        admin["password"] = parts.password
    name = f"router_outage_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    proxy = TcpProxy(admin["host"], admin["port"]).start()
    credentials = admin["user"] + (f":{parts.password}" if parts.password else "")
    try:
        yield proxy, f"postgres://{credentials}@127.0.0.1:{proxy.port}/{name}"
    finally:
        proxy.stop()
        with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.skipif(not postgres_url(), reason="runs in the PostgreSQL pass (DATABASE_URL)")
@pytest.mark.database_url
def test_postgres_gone_answers_known_keys_spools_and_catches_up_once_it_is_back(
    tmp_path, upstream, outage_database
):
    proxy, database_url = outage_database
    with serve(tmp_path, upstream, DATABASE_URL=database_url) as served:
        unseen_key = served.manage("createapikey", "unseen").strip().splitlines()[-1]
        assert ask(served) == ANSWER
        served.recorded()  # its row is in before the outage

        proxy.cut()
        assert ask(served) == ANSWER
        assert ask(served, stream=True) == ANSWER
        # A key this worker never checked cannot be checked now: a JSON 503, not HTML.
        response = served.chat({"model": "echo-medium", "messages": HI}, key=unseen_key)
        assert response.status_code == 503
        assert response.headers["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] == "db_unavailable"
        served.recorded()  # the worker's writer has given up on the database and spooled them
        assert [r["status_code"] for r in spooled(served)] == [200, 200]

        proxy.restore()
        assert ask(served) == ANSWER
        assert served.count_rows(status_code=200) == 4
        assert spooled(served) == []
        assert "Wrote 0 spooled" in served.manage("drain_spool")
        assert served.count_rows() == 4


def worker_pids(served) -> list[int]:
    """The workers that served a request: each keeps its journal of decisions in flight."""
    spool_dir = Path(served.env["ROUTER_DATA_DIR"]) / "spool"
    return [int(path.stem.split("-")[1]) for path in spool_dir.glob("inflight-*.jsonl")]


def test_a_worker_killed_mid_stream_leaves_its_row_marked_interrupted(tmp_path, upstream):
    with serve(tmp_path, upstream) as served:
        assert ask(served) == ANSWER
        (worker,) = worker_pids(served)
        body = {"model": "slow-stream", "messages": HI, "stream": True}
        response = served.chat(body, stream=True)
        lines = response.iter_lines()
        assert next(lines).startswith(b"data:")  # the upstream was called: this one is paid
        os.kill(worker, signal.SIGKILL)
        with pytest.raises(requests.RequestException):
            list(lines)
        upstream.release.set()

        # gunicorn starts a new worker; its first write also recovers the dead one's journal.
        assert ask(served) == ANSWER
        assert served.count_rows() == 3
        assert served.count_rows(error__startswith="interrupted") == 1
        assert served.count_rows(chosen_model="slow-stream", status_code=500) == 1
        assert "Wrote 0 spooled" in served.manage("drain_spool")
        assert served.count_rows() == 3
