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
from routing.recording import decisions, room, spool
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


def load(served, seconds: float) -> list[tuple[str, int, str]]:
    """16 threads sending for ``seconds``; every answer."""
    stop = time.monotonic() + seconds
    answers = []
    lock = threading.Lock()

    def worker(start):
        n = start
        while time.monotonic() < stop:
            answer = send(served, n)
            with lock:
                answers.append(answer)
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
        full = load(served, 6.0)
    finally:
        if locker is not None:
            locker.communicate("\n", timeout=10)
    filler.unlink()
    after = load(served, 1.0)
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


def test_a_disk_that_cannot_hold_the_row_refuses_before_any_upstream_call(
    db, router_config, api_key, upstream, monkeypatch
):
    monkeypatch.setattr(os, "posix_fallocate", no_space)
    refused = chat(api_key)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "recording_unavailable"
    assert upstream.received == []
    assert RouteDecision.objects.count() == 0


def test_a_full_spool_takes_the_row_in_the_room_its_request_was_promised(
    db, router_config, api_key, upstream, monkeypatch
):
    assert chat(api_key).status_code == 200  # the room file is there now
    writes = {"refused": 0}
    real_spool = spool.spool

    def full_once(fields):
        if not writes["refused"]:
            writes["refused"] += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        real_spool(fields)

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    given_back = []
    real_give_back = room.give_back
    monkeypatch.setattr(room, "give_back", lambda n: given_back.append(n) or real_give_back(n))
    monkeypatch.setattr(decisions, "insert_decisions", locked)
    monkeypatch.setattr(spool, "spool", full_once)
    assert chat(api_key).status_code == 200
    monkeypatch.undo()

    assert len(given_back) == 1 and given_back[0] > room.ANSWER_BYTES
    assert spool.drain(raise_errors=True) == 1
    assert RouteDecision.objects.count() == 2


def test_a_stored_response_is_never_written_without_its_row(
    db, responses_config_data, api_key, monkeypatch
):
    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

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
