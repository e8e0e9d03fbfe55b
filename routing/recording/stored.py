"""Stored responses (``store: true``) written with their decision: one transaction, or one
spool line, never one without the other.

A stored response is an answer paid for, like its decision. Written on its
own by the protocol layer, a full disk lost 11 of 39 (issue 43) and left rows
and responses that disagreed. So the Responses wire only says what to keep
(routing.protocols.responses.native ``to_keep``, on the request's Outcome: a
plain dict of ``response_id``, ``api_key_id``, ``input_items``, ``response``,
``previous_response_id`` and ``ttl_hours``, which a spool line can hold),
``finish_decision`` puts it on the decision's fields (``STORED_KEY``, not a
column), and the one insert of decisions (routing/recording/inserts.py)
writes it in the row's transaction,
live or when the spool drains: a stored response exists exactly when its
decision row does. Here its row is finished inside that transaction: the
chain it continues (its root and the chain's bytes, read from the previous
response), its expiry (``ttl_hours`` from its decision's time), expired rows
purged, the chain's expiry moved to its newest turn. Strings are cleaned of
NUL first (routing/recording/values.py).

Routers before that wrote their spooled stored responses apart, to
``<spool>/responses.jsonl`` (renamed ``responses-draining.jsonl`` while drained):
``drain_older_spool`` writes such files once (a response already there is
skipped by its id), so an upgrade loses none.
"""

import logging
from datetime import datetime, timedelta
from pathlib import Path

import orjson
from django.db import IntegrityError, transaction
from django.utils import timezone

from routing.db_writes import request_write
from routing.models import StoredResponse
from routing.recording.values import json_safe

log = logging.getLogger(__name__)

# The decision field that carries a stored response to the insert.
STORED_KEY = "_stored_response"
# What routers before 1f03d18 spooled stored responses to, each line a whole row.
OLDER_SPOOL_NAMES = ("responses-draining.jsonl", "responses.jsonl")


def write(rows: list[dict]) -> None:
    """Write the stored responses of decisions being inserted; inside the insert's transaction."""
    kept = [row for row in rows if isinstance(row.get(STORED_KEY), dict)]
    if not kept:
        return
    StoredResponse.objects.filter(expires_at__lte=timezone.now()).delete()
    for row in kept:
        _write_one(row[STORED_KEY], row["created_at"])


def _write_one(kept: dict, created_at) -> None:
    input_items = json_safe(kept["input_items"])
    response = json_safe(kept["response"])
    size = len(orjson.dumps(input_items)) + len(orjson.dumps(response.get("output") or []))
    previous_id = kept["previous_response_id"]
    root, before = kept["response_id"], 0  # a first turn roots its own chain
    if previous_id:
        previous = (
            StoredResponse.objects.filter(response_id=previous_id, api_key_id=kept["api_key_id"])
            .values_list("chain_root", "chain_bytes")
            .first()
        )
        root, before = (previous[0] or previous_id, previous[1]) if previous else (previous_id, 0)
    expires_at = created_at + timedelta(hours=kept["ttl_hours"])
    try:
        with transaction.atomic():  # a savepoint: the decision's transaction goes on
            StoredResponse.objects.create(
                response_id=kept["response_id"],
                api_key_id=kept["api_key_id"],
                created_at=created_at,
                expires_at=expires_at,
                input_items=input_items,
                response=response,
                previous_response_id=previous_id,
                chain_root=root,
                chain_bytes=before + size,
            )
    except IntegrityError:
        return  # the router's ids are never reused: this one is written already
    if previous_id:
        # A conversation lives as long as its newest turn.
        StoredResponse.objects.filter(api_key_id=kept["api_key_id"], chain_root=root).update(
            expires_at=expires_at
        )


def drain_older_spool(spool_dir: Path) -> int:
    """Write the stored responses an older router spooled apart from their decisions, each
    once; returns how many lines were read. A database error stops it, the file kept."""
    count = 0
    for name in OLDER_SPOOL_NAMES:
        path = spool_dir / name
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            if not line.strip():
                continue
            try:
                fields = orjson.loads(line)
                for date in ("created_at", "expires_at"):
                    fields[date] = datetime.fromisoformat(fields[date])
                row = StoredResponse(**fields)
            except (ValueError, KeyError, TypeError):
                log.error("spooled_stored_response_unreadable bytes=%d file=%s", len(line), name)
                continue
            _write_older(row)
            count += 1
        path.unlink()
        log.warning("older_stored_responses_drained lines=%d file=%s", len(lines), name)
    return count


def _write_older(row: StoredResponse) -> None:
    with request_write(), transaction.atomic():
        if StoredResponse.objects.filter(response_id=row.response_id).exists():
            return  # written already: the router's response ids are never reused
        row.input_items = json_safe(row.input_items)
        row.response = json_safe(row.response)
        row.save(force_insert=True)
        if row.chain_root:
            # A conversation lives as long as its newest turn.
            StoredResponse.objects.filter(
                api_key_id=row.api_key_id, chain_root=row.chain_root
            ).update(expires_at=row.expires_at)
