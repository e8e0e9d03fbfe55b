"""Stored responses (``store: true``) written like decision rows: the database, else the spool.

A stored response is written after its upstream was paid for, like a
decision: a database that refuses it (locked, down, or PostgreSQL refusing a
``\\u0000`` a client sent) must not turn a paid answer into a 503 or a cut
stream. So the row goes through the same bounded wait (routing/db_writes.py)
and, failing that, to ``<spool>/responses.jsonl`` (fsync'd), which every
drain of the decision spool writes afterwards (routing/recording/spool.py).
Strings are cleaned of NUL first (routing/recording/values.py).
"""

import logging
import os
from datetime import datetime

import orjson
from django.db import Error as DatabaseFailure
from django.db import IntegrityError, transaction
from django.utils import timezone

from routing.db_writes import request_write
from routing.models import StoredResponse
from routing.recording.values import json_safe

log = logging.getLogger(__name__)

SPOOL_NAME = "responses.jsonl"
# Not draining-*: that name is the decision spool's.
DRAINING_NAME = "responses-draining.jsonl"
_DATES = ("created_at", "expires_at")


def keep(fields: dict, spool_dir) -> None:
    """Write a stored response's row now, or spool it; never raises for the database."""
    fields = {
        **fields,
        "input_items": json_safe(fields["input_items"]),
        "response": json_safe(fields["response"]),
    }
    try:
        _save(fields)
    except (DatabaseFailure, ValueError) as error:
        log.warning("stored_response_write_failed reason=%s: %s", type(error).__name__, error)
        _spool(fields, spool_dir)


def _save(fields: dict) -> None:
    now = timezone.now()
    with request_write(), transaction.atomic():
        StoredResponse.objects.filter(expires_at__lte=now).delete()
        try:
            with transaction.atomic():
                StoredResponse.objects.create(**fields)
        except IntegrityError:
            return  # written already (a drain run twice): ids are the router's, never reused
        if fields["chain_root"]:
            # A conversation lives as long as its newest turn.
            StoredResponse.objects.filter(
                api_key_id=fields["api_key_id"], chain_root=fields["chain_root"]
            ).update(expires_at=fields["expires_at"])


def _spool(fields: dict, spool_dir) -> None:
    line = {**fields, **{name: fields[name].isoformat() for name in _DATES}}
    try:
        spool_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(spool_dir / SPOOL_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"\n" + orjson.dumps(line) + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        log.error("stored_response_lost id=%s reason=%s", fields["response_id"], error)
        return
    log.warning("stored_response_spooled id=%s", fields["response_id"])


def pending(spool_dir) -> bool:
    for name in (SPOOL_NAME, DRAINING_NAME):
        try:
            if (spool_dir / name).stat().st_size > 0:
                return True
        except OSError:
            pass
    return False


def drain(spool_dir) -> int:
    """Write the spooled stored responses; the caller holds the spool's drain lock."""
    path = spool_dir / SPOOL_NAME
    taken = spool_dir / DRAINING_NAME
    if path.exists() and not taken.exists():
        path.rename(taken)
    if not taken.exists():
        return 0
    count = 0
    for line in taken.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            fields = orjson.loads(line)
            for name in _DATES:
                fields[name] = datetime.fromisoformat(fields[name])
        except (ValueError, KeyError, TypeError):
            log.error("spooled_stored_response_unreadable bytes=%d", len(line))
            continue
        _save(fields)  # a database error stops here: the file stays for the next drain
        count += 1
    taken.unlink()
    return count
