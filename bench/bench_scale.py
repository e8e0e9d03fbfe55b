"""Every surface and a request's own database work, timed at 100,000, 1 million and 3 million
decision rows: what a team of 100 agents writes in a day, ten days and its 31-day retention.

Fills a database (SQLite in a temporary folder, or PostgreSQL at ``--database``,
migrated here) with rows drawn like a team's traffic: 50 keys, a conversation
per ~30 requests (100,000 at 3 million rows) over 31 days, work hours busier,
a few models, pinch on for all but the 5 % holdout and pruning most turns past
the first few, a recall on 3 % of the pruned requests, usage and the cache
forecast on most rows. Rows go in with
COPY on PostgreSQL and one executemany per batch on SQLite, their values as
they are (Django's per-field preparation took three quarters of the time).
Their figures are summed in memory by ``routing.summaries.writes.summed`` (the
recording path's own function) across the batches and written once, the
conversations' and tasks' units folded by ``routing.summaries.units.fold``
(the recording's and the rebuild's) and placed in ``ArmHour`` by ``placed``;
the conversations' rows are then built from the log by
``routing.conversations.build_from_log`` (the migration's builder). The sizes
fill one after another, so 1 million is 100,000 plus 900,000 more.

At each size it times (median of ``--repeat`` after a warm-up, milliseconds):
GET /metrics (JSON and Prometheus), the dashboard, the admin snapshot (what
the TUI reads), ``pinch_summary --json``, the blocks they are made of (to see
which still read the log), the sessions view (newest and dearer first),
admin's decision list (plain and by model), and a
request's database work: the key check (uncached), the budget
check, the conversation's state read back, and the decision's insert with its
conversation's update and its summaries. The figures print side by side, one column a size.

Run: ``.venv/bin/python bench/bench_scale.py [--database postgres://...]
[--sizes 100000,1000000,3000000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import describe_machine  # noqa: E402

KEYS = 50  # the sizing case: 100 developers, keys per team
REQUESTS_PER_CONVERSATION = 30  # 3 million rows, 100,000 conversations
DAYS = 31  # the retention
BATCH = 20_000  # rows a COPY or executemany (and a summaries upsert)
MODELS = (("qwen-small", 0.2), ("gpt-4.1-mini", 0.5), ("gpt-4.1", 0.3))
PRICES = {"qwen-small": 0.1, "gpt-4.1-mini": 0.4, "gpt-4.1": 2.0}  # USD per 1M prompt tokens
HOLDOUT = 0.05  # the share of conversations with pinch off
RECALL_SHARE = 0.03  # the pruned requests on which the model recalls a result
PASSWORD = "bench-scale"


def setup_django(database: str | None, tmp: Path) -> None:
    os.environ["DATABASE_URL"] = database or f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["ROUTER_DATA_DIR"] = str(tmp)
    os.environ["REDIS_URL"] = ""
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ["METRICS_PUBLIC"] = "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def conversation_rows(rng: random.Random, number: int, key_ids: list[int], now: datetime):
    """One conversation's decision rows, as column values by name."""
    from routing.models import RouteDecision

    key_id = rng.choice(key_ids)
    holdout = rng.random() < HOLDOUT
    model = rng.choices([m for m, _ in MODELS], [w for _, w in MODELS])[0]
    price = PRICES[model]
    requests = max(1, int(rng.expovariate(1 / REQUESTS_PER_CONVERSATION)))
    day = rng.randrange(DAYS)
    hour = rng.choices(range(24), [3 if 8 <= h < 20 else 1 for h in range(24)])[0]
    at = now - timedelta(days=day, hours=now.hour - hour + 24 * (hour > now.hour), minutes=59)
    conversation = f"conv-{number:07d}"
    for turn in range(requests):
        at += timedelta(seconds=rng.randint(5, 90))
        original = 4_000 + turn * rng.randint(1_000, 4_000)
        pruned = not holdout and turn > 4 and rng.random() < 0.8
        final = int(original * rng.uniform(0.3, 0.8)) if pruned else original
        status = rng.choices([200, 429, 502, None], [97, 1, 1, 1])[0]
        billed = status == 200
        cost = final * price / 1_000_000
        read = int(final * rng.uniform(0.5, 0.95)) if turn else 0
        # A result pinch took away is asked back on a few pruned requests (issue 40).
        recalls = 1 if pruned and billed and rng.random() < RECALL_SHARE else 0
        yield {
            "created_at": min(at, now - timedelta(seconds=1)),
            "path": RouteDecision.PATH_ROUTED,
            "api_key_id": key_id,
            "requested_model": "auto",
            "chosen_model": model,
            "provider": "openai",
            "upstream_model": model,
            "tier": "hard",
            "measured_tokens": final,
            "estimated_cost_usd": cost,
            "pinch_original_tokens": None if holdout else original,
            "pinch_final_tokens": None if holdout else final,
            "pinch_tools": {"bash": rng.randint(1, 4), "read_file": rng.randint(0, 3)}
            if pruned
            else None,
            "status_code": status,
            "upstream_latency_ms": rng.lognormvariate(8, 0.8) if status else None,
            "prompt_tokens": final if billed else None,
            "completion_tokens": rng.randint(50, 2_000) if billed else None,
            "cache_read_tokens": read if billed else None,
            "billed_prompt_cost_usd": cost * 0.4 if billed else None,
            "unpruned_cost_usd": cost * 0.4 * original / final if billed else None,
            "predicted_cache_read_tokens": read if billed else None,
            "predicted_cache_write_tokens": final - read if billed else None,
            "predicted_uncached_tokens": 0 if billed else None,
            "conversation": conversation,
            "session": conversation,
            "agent": "claude-code",
            "session_role": "main",
            "user_turn": turn == 0,
            "route_reason": "start" if turn == 0 else "held",
            "baseline_model": "gpt-4.1",
            "arm": "holdout" if holdout else "control",
            "quality_task": 0,
            "answer_tool_calls": turn < requests - 1,
            "relevance_used": pruned,
            "recalls": recalls,
            "recalled_tokens": rng.randint(200, 3_000) if recalls else 0,
        }


def _columns():
    """(column name, attribute, value when a row leaves it out, JSON or not) per column."""
    from django.db import models

    from routing.models import RouteDecision

    columns = []
    for f in RouteDecision._meta.concrete_fields:
        json = isinstance(f, models.JSONField)
        default = f.get_default()
        columns.append((f.column, f.attname, _json(default) if json else default, json))
    return columns


def _json(value):
    return None if value is None else json.dumps(value)


def _insert(rows: list[dict], next_id: int) -> None:
    """The rows into the log (COPY, or executemany) with ids from ``next_id``, in one go.

    The values are the rows' own (text, numbers, booleans, a UTC datetime, JSON as text):
    Django's per-field preparation took three quarters of the fill's time."""
    from django.db import connection

    columns = _columns()
    sqlite = connection.vendor == "sqlite"
    values = []
    for i, row in enumerate(rows):
        row["id"] = next_id + i
        value = []
        for _, name, default, is_json in columns:
            if name not in row:
                value.append(default)
            elif is_json:
                value.append(_json(row[name]))
            else:
                value.append(row[name])
        values.append(value)
    if sqlite:  # SQLite keeps datetimes as naive UTC text
        at = [name for _, name, _, _ in columns].index("created_at")
        adapt = connection.ops.adapt_datetimefield_value
        for value in values:
            value[at] = adapt(value[at])
    quoted = ", ".join(connection.ops.quote_name(column) for column, *_ in columns)
    with connection.cursor() as cursor:
        if not sqlite:
            with cursor.cursor.copy(f"COPY routing_routedecision ({quoted}) FROM STDIN") as copy:
                for value in values:
                    copy.write_row(value)
        else:
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(
                f"INSERT INTO routing_routedecision ({quoted}) VALUES ({marks})", values
            )


def _set_indexes_aside() -> list[str]:
    """PostgreSQL: drop the log's secondary indexes and skip its foreign-key triggers while
    it fills (the bench's key ids are real), as PostgreSQL's docs advise for a bulk load:
    one index build at the end costs less than keeping seven up to date row by row.
    Returns the statements that build them again."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'routing_routedecision'"
            " AND indexname NOT IN (SELECT conname FROM pg_constraint)"
        )
        indexes = cursor.fetchall()
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET session_replication_role = replica")
    return [definition for _, definition in indexes]


def _rebuild_indexes(definitions: list[str]) -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = DEFAULT")
        for definition in definitions:
            cursor.execute(definition)


def fill(target: int, rng: random.Random, key_ids: list[int], now: datetime) -> float:
    """Add rows (whole conversations) until the log holds ``target``; returns seconds taken."""
    from django.db import connection, transaction
    from django.db.models import Max

    from routing.conversations import build_from_log
    from routing.models import ArmHour, Conversation, RouteDecision
    from routing.summaries import units
    from routing.summaries.writes import add_summed, config_in_force, summed

    started = time.perf_counter()
    have = RouteDecision.objects.count()
    next_id = (RouteDecision.objects.aggregate(m=Max("id"))["m"] or 0) + 1
    number = next_id  # conversations are fewer than rows: new names, whatever filled before
    prices = units.completion_prices(config_in_force())
    folded: dict = {}  # the new conversations' and tasks' units, by the recording's own fold
    batch: list[dict] = []
    # The batches' figures summed in memory and written once: a team's 3 million rows
    # fall into a few hundred thousand summary rows, so one upsert each.
    totals = summed([])
    indexes = _set_indexes_aside()
    while have < target:
        for row in conversation_rows(rng, number, key_ids, now):
            batch.append(row)
            have += 1
            if len(batch) == BATCH or have == target:
                _insert(batch, next_id)
                summed(batch, totals)
                for fields in batch:
                    units.fold(folded, fields, prices)
                next_id += len(batch)
                batch = []
            if have == target:
                break
        number += 1
    _rebuild_indexes(indexes)
    for dimensions, figures in units.placed_sums(folded.values()).items():
        totals[ArmHour][dimensions].update(figures)
    with transaction.atomic():
        add_summed(totals)
        units.insert_all(folded)
    # The recording path keeps each conversation's row as its decisions are written; the
    # bulk fill skips that path, so the rows are built from the log (the migration's builder).
    Conversation.objects.all().delete()
    build_from_log(RouteDecision, Conversation)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('routing_routedecision', 'id'), %s)",
                [next_id],
            )
            cursor.execute("ANALYZE")
    return time.perf_counter() - started


def _median_ms(step, repeat: int) -> float:
    step()  # the warm-up: caches, the first plan
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def surfaces(repeat: int) -> dict[str, float]:
    """Milliseconds per surface and per request's database step, median of ``repeat``."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import transaction
    from django.test import Client

    from metrics.cache_forecast import cache_forecast
    from metrics.key_budgets import key_budget_rows
    from metrics.quality import quality_summary
    from metrics.report import request_totals
    from metrics.savings import savings_by_cause
    from metrics.summary import pinch_summary, summary_window
    from routing.agent_sessions import SESSIONS_SHOWN, agent_sessions
    from routing.auth import create_api_key, forget_checked_keys
    from routing.config.store import current_config
    from routing.conversation_state import RecordedState
    from routing.conversations import decision_columns
    from routing.limits.budgets import spend_by_key
    from routing.models import ApiKey, RouteDecision, hash_key
    from routing.recording.inserts import insert_decisions

    user = get_user_model().objects.filter(username="bench").first()
    if user is None:
        user = get_user_model().objects.create_superuser("bench", "", PASSWORD)
    client = Client(SERVER_NAME="localhost")
    client.force_login(user)
    _, raw = create_api_key("bench-staff", is_staff=True)
    key = ApiKey.objects.exclude(name="bench-staff").order_by("pk").first()
    key.budget_usd = 1000.0
    config = current_config()
    conversation = RouteDecision.objects.values_list("conversation", flat=True).last()

    def get(path, **headers):
        def step():
            response = client.get(path, **headers)
            assert response.status_code == 200, (path, response.status_code)

        return step

    def new_row() -> dict:
        return next(conversation_rows(random.Random(1), 0, [key.pk], _now()))

    def write_alone():  # the insert as it was before conversations and summaries
        with transaction.atomic():
            RouteDecision.objects.bulk_create([RouteDecision(**decision_columns(new_row()))])

    def key_check():
        forget_checked_keys()
        ApiKey.objects.active().filter(key_hash=hash_key(raw)).first()

    steps = {
        "GET /metrics (JSON)": get("/metrics"),
        "GET /metrics (Prometheus)": get("/metrics", HTTP_ACCEPT="text/plain"),
        "GET /dashboard/": get("/dashboard/"),
        "GET /admin/api/snapshot": get("/admin/api/snapshot"),
        "pinch_summary --json": lambda: call_command("pinch_summary", "--json", stdout=StringIO()),
        # The blocks /metrics and the dashboard are made of, to see which still read the log.
        "  block: pinch_summary()": lambda: pinch_summary(config),
        "  block: savings_by_cause()": lambda: savings_by_cause(config),
        "  block: cache_forecast()": lambda: cache_forecast(summary_window(config)),
        "  block: request_totals()": lambda: request_totals(summary_window(config)),
        "  block: quality_summary()": lambda: quality_summary(config),
        "  block: key_budget_rows()": lambda: key_budget_rows(config),
        "  block: agent_sessions()": lambda: agent_sessions(SESSIONS_SHOWN),
        "sessions view, newest": get("/admin/routing/agentsession/"),
        "sessions view, dearer first": get("/admin/routing/agentsession/?o=net"),
        "admin decision list": get("/admin/routing/routedecision/"),
        "admin list, one model": get("/admin/routing/routedecision/?chosen_model=gpt-4.1"),
        "request: key check": key_check,
        "request: budget": lambda: spend_by_key([key], config),
        "request: conversation state": lambda: RecordedState().read(conversation, "route_state"),
        "request: decision alone": write_alone,
        "request: decision + conversation + summaries": lambda: insert_decisions(
            [new_row()], replayed=False
        ),
    }
    return {name: _median_ms(step, repeat) for name, step in steps.items()}


def _now() -> datetime:
    return datetime.now(UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="a DATABASE_URL (default: SQLite in a temp folder)")
    parser.add_argument("--sizes", default="100000,1000000,3000000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument(
        "--time-only",
        action="store_true",
        help="time the surfaces of a database an earlier run filled, at the size it holds",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        setup_django(args.database, Path(tmp))
        from django.db import connection

        from routing.models import ApiKey, DecisionSummary, KeySpend, RouteDecision, SavedTokens

        print(describe_machine())
        print(f"database: {connection.vendor}")
        if args.time_only:
            size = RouteDecision.objects.count()
            print(f"timing the {size:,} rows it holds", flush=True)
            _print_columns({size: surfaces(args.repeat)}, args.repeat)
            return
        if RouteDecision.objects.exists():
            sys.exit("the database already holds decisions: give this run an empty one")
        key_ids = [
            ApiKey.objects.create(name=f"team-{i}", key_hash=f"{i:064d}", prefix="rk-").pk
            for i in range(KEYS)
        ]
        rng = random.Random(args.seed)
        now = _now()
        columns = {}
        for size in sizes:
            seconds = fill(size, rng, key_ids, now)
            print(
                f"filled to {size:,} rows in {seconds:.0f} s; summaries: "
                f"{DecisionSummary.objects.count():,} hourly, {KeySpend.objects.count():,} "
                f"key-hours, {SavedTokens.objects.count():,} histogram rows",
                flush=True,
            )
            columns[size] = surfaces(args.repeat)
            for name, ms in columns[size].items():
                print(f"  {name}: {ms:.1f} ms", flush=True)
        _print_columns(columns, args.repeat)


def _print_columns(columns: dict[int, dict[str, float]], repeat: int) -> None:
    """The surfaces' medians side by side, one column a size."""
    sizes = list(columns)
    names = list(next(iter(columns.values())))
    width = max(len(name) for name in names)
    print(f"\nmedian of {repeat} after a warm-up, milliseconds")
    print(f"{'':<{width}} " + " ".join(f"{size:>12,}" for size in sizes))
    for name in names:
        print(f"{name:<{width}} " + " ".join(f"{columns[s][name]:>12.1f}" for s in sizes))


if __name__ == "__main__":
    main()
