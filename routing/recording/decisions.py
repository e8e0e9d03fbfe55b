"""Recording what the router decided: one row per request that reached an upstream, written once.

``new_decision`` (called once the plan is accepted) builds the row in memory
and gives it its id: no write yet, so a request rejected before the upstream
call leaves nothing behind. ``finish_decision`` completes it with what
happened upstream (status, attempts, latency, usage or an estimate) and writes
it, or, in a served worker, hands it to the process's writer, which writes it
behind the answer, batched with others (routing/recording/writer.py,
``write_batch`` here): one transaction after the network wait, so no write lock is ever held
while an upstream answers: the row, its conversation's row updated in place
(routing.conversations, through routing/recording/inserts.py, the insert the
spool's drain uses too) and the key's ``last_used_at`` (at most once a minute).
If the database cannot take the write, the row goes to the spool
(routing/recording/spool.py) and reaches the database later, exactly once.

A worker killed between the two (a crash mid-stream) leaves its row in its
journal (routing/recording/journal.py), and the next drain writes it marked
interrupted; one killed with rows queued for its writer left their final lines
there, which the drain writes as they are.
docs/durability.md tells the whole path.
"""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import Error as DatabaseFailure
from django.db import IntegrityError, transaction
from django.utils import timezone

from pinch import CHARS_PER_TOKEN
from routing import conversations
from routing.auth import touch_api_key, touch_due
from routing.cache_forecast import forecast_fields, verdict_fields
from routing.db_writes import request_write
from routing.limits import ledger
from routing.models import ApiKey, RouteDecision
from routing.pricing import billed_prompt_cost_usd
from routing.recall import keeping
from routing.recall import store as recall_store
from routing.recall.keeping import book_round_trips, note_recalled
from routing.recall.keeping import decision_fields as recall_fields
from routing.recording import health, journal, room, spool, stored, writer
from routing.recording import ids as decision_ids
from routing.recording.inserts import insert_decisions
from routing.recording.values import fit

log = logging.getLogger(__name__)


@dataclass
class OpenDecision:
    """A row being built: ``fields`` are RouteDecision's column values and the state it
    leaves its conversation (routing.conversations.STATE_FIELDS)."""

    fields: dict
    api_key: ApiKey | None = None
    room: int = 0  # bytes promised on the spool's disk (routing/recording/room.py)
    # The config the request is served under: its prices are the summaries' (one read of
    # the config a request, not a second one in the write).
    config: object = None
    # The id its journal entry goes by: the row's own unless a write had to replace it.
    journaled: int | None = None
    # What its opening line was stamped with (spool.encode_fitted): its finished line's too.
    stamp: dict | None = None

    @property
    def id(self) -> int | None:
        return self.fields.get("id")


def new_decision(plan, api_key=None, hold=None) -> OpenDecision:
    """The row for a planned request, in memory, with its id reserved; ``hold``: its budget
    reservation (routing.limits.ledger), settled when the row is inserted."""
    model = plan.model
    pinch = plan.pinch
    prefix = plan.prefix or (None, None, None)
    fields = {
        "id": decision_ids.next_id(),
        "created_at": timezone.now(),
        "path": plan.path,
        "api_key_id": api_key.pk if api_key is not None else None,
        "requested_model": plan.request.model,
        "chosen_model": model.id,
        "provider": model.provider,
        "upstream_model": model.send_as,
        "tier": plan.tier,
        "classifier": plan.classifier,
        "measured_tokens": plan.measured_tokens,
        "estimated_cost_usd": plan.estimated_cost_usd,
        "pinch_original_tokens": pinch.original_tokens if pinch else None,
        "pinch_final_tokens": pinch.final_tokens if pinch else None,
        "pinch_summarized": pinch.summarized if pinch else None,
        "pinch_tools": pinch.compressed_tools or None if pinch else None,
        "pinch_ledger": pinch.ledger if pinch else "",
        "relevance_used": bool(pinch and pinch.relevance_used),
        "relevance_fallback": bool(pinch and pinch.relevance_fallback),
        "prefix_match": prefix[0],
        "prefix_previous_length": prefix[1],
        "prefix_current_length": prefix[2],
        "prefix_fallback": plan.prefix_fallback,
        "payload_fingerprints": plan.payload_fingerprints,
        "stream": plan.request.stream,
        "over_window": plan.over_window,
        "conversation": plan.conversation or "",
        **(plan.session.fields() if plan.session is not None else {}),
        "omitted_tools": list(plan.omitted_tools) or None,
        "route_reason": plan.route_reason,
        "route_state": plan.route_state,
        "background": plan.background,
        "baseline_model": plan.baseline.id if plan.baseline is not None else "",
        "arm": plan.arm.name,
        **(plan.signals.as_fields() if plan.signals is not None else {}),
        **forecast_fields(plan),
        # This request's new originals for the recall store, on the row's durable path.
        **recall_fields(pinch.to_store if pinch else {}),
    }
    if hold is not None:
        fields[ledger.HOLD_KEY] = hold.as_field()
    opening = fit(fields)
    line = spool.encode_fitted(opening)
    size = len(line) + room.ANSWER_BYTES
    # A Responses request may keep its answer with the row: room for its input as well.
    if getattr(plan.request.source, "stores_response", False):
        size += plan.measured_tokens * CHARS_PER_TOKEN
    # Before any upstream call: a row that could not be kept anywhere is refused here.
    if not room.promise(spool.spool_dir(), size):
        if not plan.config.routing.serve_unrecorded:
            raise health.recording_unavailable()
        size = 0
    # On disk until written: a worker that dies mid-answer still leaves the row.
    journal.opened(spool.spool_dir(), fields["id"], line)
    stamp = {key: opening[key] for key in spool.STAMP_KEYS}
    return OpenDecision(fields, api_key, size, plan.config, fields["id"], stamp)


def finish_decision(decision: OpenDecision, outcome) -> None:
    """Complete the row with what happened upstream (an ``Outcome``) and write it, or spool it."""
    fields = decision.fields
    fields.update(
        status_code=outcome.status,
        error=outcome.error[:300],
        attempts=outcome.attempts,
        upstream_latency_ms=outcome.latency_ms,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        cached_tokens=outcome.cached_tokens,
        cache_read_tokens=outcome.cache_read_tokens,
        cache_write_tokens=outcome.cache_write_tokens,
        usage_estimated=outcome.usage_estimated,
        answer_tool_calls=outcome.answer_tool_calls,
        recalls=outcome.recalls,
        recalled_tokens=outcome.recalled_tokens,
    )
    note_recalled(fields, outcome.recalled_handles)
    book_round_trips(fields, outcome.recall_prices, outcome.recalled_sizes)
    fields.update(verdict_fields(fields, outcome))
    billed = outcome.prompt_tokens is not None and not outcome.usage_estimated
    if outcome.model is not None and billed:
        fields["billed_prompt_cost_usd"] = billed_prompt_cost_usd(
            outcome.model,
            outcome.prompt_tokens,
            outcome.cache_read_tokens,
            outcome.cache_write_tokens,
        )
    fields["unpruned_cost_usd"] = outcome.unpruned_cost_usd(fields.get("billed_prompt_cost_usd"))
    if outcome.nothing_ran:
        # No model ran, none is charged: the attempts say which were tried.
        fields.update(chosen_model="", provider="", upstream_model="", estimated_cost_usd=0.0)
    elif outcome.model is not None:
        fields.update(
            chosen_model=outcome.model.id,
            provider=outcome.model.provider,
            upstream_model=outcome.model.send_as,
            estimated_cost_usd=outcome.cost_usd,
        )
    ledger.charge(fields, outcome.model)
    if outcome.stored_response is not None:
        # Kept with its decision, in one transaction or one spool line.
        fields[stored.STORED_KEY] = outcome.stored_response
    # Whatever a client or an upstream put in it, the row fits its columns.
    decision.fields = fit(fields)
    if not _queued(decision):
        _keep(decision)


def _queued(decision: OpenDecision) -> bool:
    """Hand the finished row to this process's writer (routing/recording/writer.py), its
    final line in the journal first; False when it must be written now: no writer runs
    here, its backlog is full, the row has no id to journal it by, or it carries a stored
    response (the client's next request may name it, ``previous_response_id``, on any
    worker). A row's recall originals are read from memory here until it is written
    (routing/recall/store.py reads the store again on a miss for the rows elsewhere)."""
    fields = decision.fields
    if not writer.running() or decision.journaled is None:
        return False
    if stored.STORED_KEY in fields:
        return False
    # Fitted just now (finish_decision): not fitted a second time on the request's path.
    line = spool.encode_fitted({**fields, journal.FINISHED_KEY: True}, decision.stamp)
    journal.finished(spool.spool_dir(), decision.journaled, line)
    keeping.queued(fields, decision.config.pinch.recall)
    if writer.submit(decision, len(line)):
        return True
    keeping.written(fields)  # the request writes it: the store answers once it has
    return False


def write_behind() -> None:
    """Start this process's writer: rows are written behind their answers from now on (a
    served worker: router_project/gunicorn.conf.py)."""
    writer.start(write_batch)
    # A recall that misses reads the store again until rows queued elsewhere are in.
    recall_store.rows_written_behind(writer.WRITTEN_WITHIN_SECONDS)


def write_batch(decisions: list[OpenDecision]) -> None:
    """Write the writer's batch of finished rows in one transaction; a batch the database
    refuses goes row by row as a request's own row does (written, else spooled), one it
    cannot take at all (locked, away) is spooled whole."""
    try:
        _write_together(decisions)
    except Exception as error:
        log.warning("decision_batch_failed rows=%d reason=%s", len(decisions), type(error).__name__)
        for decision in decisions:
            if isinstance(error, spool.REFUSED_VALUE):
                _keep(decision, drain=False)
            else:
                _spooled(decision, error)
            keeping.written(decision.fields)
        return
    for decision in decisions:
        keeping.written(decision.fields)
        room.release(decision.room)
    health.row_kept()
    _drain_pending()
    # Last: an empty journal says the rows are written and what they found spooled too.
    for decision in decisions:
        journal.closed(decision.journaled)


def _keep(decision: OpenDecision, drain: bool = True) -> None:
    """Write the row now, or spool it; then give back its room and its journal entry."""
    try:
        _write(decision)
    except Exception as error:  # whatever kept the row from the database: spool it
        _spooled(decision, error)
        return
    room.release(decision.room)
    health.row_kept()
    if drain:
        _drain_pending()
    journal.closed(decision.journaled)


def _spooled(decision: OpenDecision, error: Exception) -> None:
    if isinstance(error, DatabaseFailure):
        log.warning("decision_write_failed reason=%s: %s", type(error).__name__, error)
    else:
        log.error("decision_write_failed", exc_info=error)
    if decision.id != decision.journaled:
        # An id the failed insert got from the database was rolled back with it, and
        # will be handed out again: the spooled row must not carry it.
        decision.fields["id"] = None
    _spool(decision)
    room.release(decision.room)
    journal.closed(decision.journaled)


def _drain_pending() -> None:
    try:
        if spool.pending():
            spool.drain()
    except Exception:  # the answer this request carries matters more than the backlog
        log.exception("spool_drain_failed")


def _spool(decision: OpenDecision) -> None:
    if decision.fields.get("id") is None:
        # An id before the spool, so that the drain has nothing to choose.
        decision.fields["id"] = decision_ids.next_id()
    try:
        spool.spool(decision.fields)
    except OSError:
        # The disk is full: the row goes into the blocks its request was promised, which
        # no other writer on the disk can take (routing/recording/room.py).
        try:
            room.keep(spool.room_line(decision.fields), decision.room)
        except OSError as disk_error:
            log.error("decision_lost id=%s reason=%s", decision.id, disk_error)
            health.row_lost()
            return
        decision.room = 0  # spent: nothing to release
    health.row_kept()


def _write_together(decisions: list[OpenDecision]) -> None:
    """The rows, their conversations and their figures in one transaction, the summaries'
    and units' upserts of rows served under one config grouped; the keys' touches join it."""
    by_config: dict[int, tuple] = {}
    for decision in decisions:
        by_config.setdefault(id(decision.config), (decision.config, []))[1].append(decision)
    keys = {d.api_key.pk: d.api_key for d in decisions if touch_due(d.api_key)}
    with request_write(), transaction.atomic():
        for config, group in by_config.values():
            insert_decisions([d.fields for d in group], replayed=False, config=config)
        for key in keys.values():
            touch_api_key(key)


def _write(decision: OpenDecision) -> None:
    try:
        # The row, its conversation and its figures are one transaction
        # (routing/recording/inserts.py); the key's touch joins it.
        _write_together([decision])
    except IntegrityError:
        with request_write():
            fixed = spool.without_stale_key(decision.fields)
            if fixed is None:
                if decision.id is None or not RouteDecision.objects.filter(pk=decision.id).exists():
                    raise
                # The reserved id is taken (a database restored from a backup,
                # ids reset by hand): a fresh one from the database keeps the row.
                log.error("decision_id_taken id=%s", decision.id)
                fixed = {**decision.fields, "id": None}
            decision.fields = fixed
            insert_decisions([fixed], replayed=False, config=decision.config)


def clear_stale_fingerprints(config) -> int:
    """Blank the payload fingerprints of conversations idle longer than a day, or than the
    longest cache lifetime of ``config``'s models when that is longer; returns how many changed.

    They are read only to predict a cache the provider may still hold (routing.prefix_probe):
    an hour at most. A whole payload's, they are the largest part of a conversation's row.
    """
    lifetimes = [config.cache_prices(model).lifetime_seconds for model in config.models]
    kept = max(timedelta(days=1), timedelta(seconds=max(lifetimes, default=0)))
    return conversations.clear_stale_fingerprints(kept)
