"""A full disk under load: every answered request has its row, and its stored response.

Issue 43: SQLite and the spool on a full 16 MB filesystem for 20 s under load
lost the rows of 39 of 147 answered requests and 11 of 39 stored responses;
with the spool's disk full and SQLite locked by another process, 7 of 141.
Here the disk is a real one (a 16 MB tmpfs, filled to its last byte while
the router, served by gunicorn, is under load from 16 threads), and after
the disk is freed and the spool drained, the answered requests and the rows
must be equal, and so the answered Responses requests and the stored
responses. Requests the router could not have recorded are refused before
any upstream call (503 ``recording_unavailable``).

The in-process tests below hold the same promise without root: the disk's
refusal is simulated where the router meets it (``posix_fallocate``, the
spool's write).
"""

import concurrent.futures
import errno
import os
import threading
import time

import pytest
import requests
from django.db import OperationalError
from django.test import Client

from routing.models import RouteDecision, StoredResponse
from routing.recording import decisions, ids, room, spool
from tests.routing.test_durability import lock_sqlite
from tests.routing.test_recording import chat
from tests.support.config import base_config
from tests.support.full_disk import fill, small_disk
from tests.support.served import gunicorn_router, prepare, router_env

HI = [{"role": "user", "content": "hi"}]
THREADS = 16


def send(served, n: int) -> tuple[str, int, str]:
    """A chat request, or a Responses one (stored), by turns; (kind, status, error code)."""
    headers = {"Authorization": f"Bearer {served.key}"}
    if n % 2:
        body = {"model": "echo-medium", "input": f"hi {n}"}
        answer = requests.post(served.url + "/v1/responses", json=body, headers=headers, timeout=30)
        kind = "responses"
    else:
        body = {"model": "echo-medium", "messages": HI}
        answer = requests.post(
            served.url + "/v1/chat/completions", json=body, headers=headers, timeout=30
        )
        kind = "chat"
    code = "" if answer.status_code == 200 else answer.json()["error"].get("code", "")
    return kind, answer.status_code, code


def load(served, seconds: float, or_until_refused: float = 0.0) -> list[tuple[str, int, str]]:
    """16 threads sending for ``seconds``, and on until a request is refused for want of
    room (503 ``recording_unavailable``), ``or_until_refused`` seconds at most; every answer."""
    started = time.monotonic()
    refused = threading.Event()
    answers = []
    lock = threading.Lock()

    def going() -> bool:
        elapsed = time.monotonic() - started
        return elapsed < seconds or (elapsed < or_until_refused and not refused.is_set())

    def worker(start):
        n = start
        while going():
            answer = send(served, n)
            with lock:
                answers.append(answer)
            if answer[1:] == (503, "recording_unavailable"):
                refused.set()
            n += THREADS

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    return answers


def count(served, model: str) -> int:
    code = f"from routing.models import {model} as M; print(M.objects.count())"
    return int(served.manage("shell", "-c", code).strip().splitlines()[-1])


@pytest.fixture(params=["sqlite on the full disk", "sqlite locked, the spool's disk full"])
def full_disk_router(request, tmp_path, upstream):
    disk = tmp_path / "disk"
    with small_disk(disk):
        on_disk = request.param == "sqlite on the full disk"
        database = (disk if on_disk else tmp_path) / "router.sqlite3"
        env = router_env(
            tmp_path,
            base_config(upstream.base_url),
            DATABASE_URL=f"sqlite:///{database}",
            ROUTER_DATA_DIR=str(disk),
        )
        with gunicorn_router(env, prepare(env)) as served:
            # A full disk is loud in the log: read it as it comes, or the pipe fills and
            # the workers block on their next log line.
            output = threading.Thread(target=served.process.stdout.read, daemon=True)
            output.start()
            yield served, disk, database, on_disk


def test_on_a_full_disk_every_answered_request_has_its_row_and_its_stored_response(
    full_disk_router,
):
    served, disk, database, on_disk = full_disk_router
    warm = load(served, 1.0)  # every worker has its room and its caches
    assert {status for _, status, _ in warm} == {200}
    filler = fill(disk)
    locker = None if on_disk else lock_sqlite(database)
    try:
        # On the database's full disk, rows kept in the workers' rooms fill them until a
        # request is refused; with the requests shared between the workers (their connections
        # are, router_project/accept_share.py) both rooms fill, which can take over 6 s on a
        # loaded machine.
        full = load(served, 6.0, or_until_refused=60.0 if on_disk else 0.0)
    finally:
        if locker is not None:
            locker.communicate("\n", timeout=10)
    filler.unlink()
    after = load(served, 1.0)
    served.recorded()  # every answered row written or spooled: the drain then has them all
    served.manage("drain_spool")

    answers = warm + full + after
    statuses = {(status, code) for _, status, code in answers}
    # Answered, or refused before any upstream call: nothing else.
    assert statuses <= {(200, ""), (503, "recording_unavailable")}
    if on_disk:
        # The database's own disk was full: the rows' room ran out, so some were refused.
        # (With SQLite locked, the rooms set aside may hold every row of a slow run.)
        assert (503, "recording_unavailable") in {(s, c) for _, s, c in full}
    answered = [kind for kind, status, _ in answers if status == 200]
    assert count(served, "RouteDecision") == len(answered)
    assert count(served, "StoredResponse") == answered.count("responses")
    assert not any(disk.joinpath("spool").glob("draining-*"))


# In process, without root: the disk's refusals where the router meets them.


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def locked(*args, **kwargs):
    raise OperationalError("database is locked")


def test_a_disk_that_cannot_hold_the_row_refuses_before_any_upstream_call(
    db, router_config, api_key, upstream, monkeypatch
):
    monkeypatch.setattr(os, "posix_fallocate", no_space)
    refused = chat(api_key)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "recording_unavailable"
    assert upstream.received == []
    assert RouteDecision.objects.count() == 0


def test_a_full_spool_keeps_the_row_in_the_room_its_request_was_promised(
    db, router_config, api_key, upstream, monkeypatch
):
    assert chat(api_key).status_code == 200  # the room file is there now
    monkeypatch.setattr(decisions, "insert_decisions", locked)
    monkeypatch.setattr(spool, "spool", no_space)
    assert chat(api_key).status_code == 200
    monkeypatch.undo()

    assert room.holds_rows(spool.spool_dir())
    assert not spool.spool_dir().joinpath(spool.SPOOL_NAME).exists()
    assert spool.drain(raise_errors=True) == 1
    assert RouteDecision.objects.count() == 2
    assert not room.holds_rows(spool.spool_dir())
    assert spool.drain(raise_errors=True) == 0  # drained once


def test_a_writer_taking_every_freed_block_cannot_take_a_spooled_rows_room(
    db, router_config, api_key, upstream, monkeypatch, settings, tmp_path
):
    # Another writer on the disk (SQLite's journal on it, a log) that takes any block
    # the moment it is freed: the row's room must not be given back to it. (Rooms given
    # back, truncated and synced, before the spool's append lost such rows.)
    with small_disk(tmp_path / "disk", megabytes=4) as disk:
        settings.DATA_DIR = disk
        assert chat(api_key).status_code == 200
        fill(disk)
        taken = []
        real_fsync, real_fdatasync = os.fsync, os.fdatasync

        def then_take_the_free_blocks(sync):
            def synced(fd):
                sync(fd)
                taken.append(fill(disk, f"greedy-{len(taken)}"))

            return synced

        monkeypatch.setattr(os, "fsync", then_take_the_free_blocks(real_fsync))
        monkeypatch.setattr(os, "fdatasync", then_take_the_free_blocks(real_fdatasync))
        monkeypatch.setattr(decisions, "insert_decisions", locked)
        answer = chat(api_key)
        monkeypatch.undo()
        for path in disk.glob("*fill*"):
            path.unlink()
        for path in disk.glob("greedy-*"):
            path.unlink()

        assert answer.status_code == 200
        assert spool.drain(raise_errors=True) == 1
        assert RouteDecision.objects.count() == 2


def test_a_dead_workers_room_file_is_drained_once(db, router_config, api_key, monkeypatch):
    monkeypatch.setattr(decisions, "insert_decisions", locked)
    monkeypatch.setattr(spool, "spool", no_space)
    assert chat(api_key).status_code == 200
    monkeypatch.undo()
    directory = spool.spool_dir()
    (own,) = directory.glob(f"{room.PREFIX}*")
    # The room file as a worker that died leaves it: its rows, then its zeros, unlocked.
    dead = directory / f"{room.PREFIX}999999999"
    dead.write_bytes(own.read_bytes())
    with room.taken(own):
        pass  # this process's own rows are given up: the dead file holds them

    assert spool.drain(raise_errors=True) == 1
    assert RouteDecision.objects.count() == 1
    assert not dead.exists()
    assert spool.drain(raise_errors=True) == 0


def test_a_row_kept_without_an_id_is_written_once_by_drains_that_stop_after_their_commit(
    db, router_config, api_key, monkeypatch
):
    monkeypatch.setattr(decisions, "insert_decisions", locked)
    monkeypatch.setattr(spool, "spool", no_space)
    monkeypatch.setattr(ids, "next_id", lambda: None)  # the database hands out no id either
    assert chat(api_key).status_code == 200
    monkeypatch.undo()
    real_write = spool._write

    def then_stop(rows):
        real_write(rows)
        raise OperationalError("the database went away after the commit")

    monkeypatch.setattr(spool, "_write", then_stop)
    spool.drain()
    monkeypatch.undo()
    spool.drain(raise_errors=True)

    assert RouteDecision.objects.count() == 1


def test_rows_whose_failed_insert_got_an_id_from_the_database_are_all_kept(
    db, router_config, api_key, monkeypatch
):
    # No id reserved: the insert takes one from the database (SQLite's RETURNING), and its
    # transaction then fails (a full disk at COMMIT): that id is handed out again.
    def taken_then_rolled_back(rows, replayed=True):
        rows[0]["id"] = 4242
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(ids, "next_id", lambda: None)
    monkeypatch.setattr(decisions, "insert_decisions", taken_then_rolled_back)
    monkeypatch.setattr(spool, "spool", no_space)
    assert [chat(api_key).status_code for _ in range(3)] == [200] * 3
    monkeypatch.undo()
    spool.drain(raise_errors=True)

    assert RouteDecision.objects.count() == 3


def test_a_stored_response_is_never_written_without_its_row(
    db, responses_config_data, api_key, monkeypatch
):
    monkeypatch.setattr(decisions, "insert_decisions", locked)
    answer = Client().post(
        "/v1/responses",
        {"model": "echo-medium", "input": "keep me"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {api_key}",
    )
    assert answer.status_code == 200
    assert (RouteDecision.objects.count(), StoredResponse.objects.count()) == (0, 0)
    monkeypatch.undo()
    spool.drain(raise_errors=True)
    assert (RouteDecision.objects.count(), StoredResponse.objects.count()) == (1, 1)
