"""What a key's limits add to a request: the admission steps timed per request, in process.

The limiter runs on every request of a limited key, before the upstream
call, so its cost is added latency. This times, per request (medians and p99
of single calls, microseconds), what ``routing.limits.admission`` does in the
view: ``admit`` (the budget, before planning) and ``Admission.take`` (the
per-minute buckets, after it), for

* a key without limits (the floor: what every other key pays);
* rpm + tpm in the data folder's files (no Redis, or Redis down: one
  bucket for the host's workers, a locked file a key);
* rpm + tpm in Redis (one Lua script call: a round trip to a local Redis);
* a budget whose spend is cached (``limits.spend_refresh_seconds`` 5, the
  default: most requests read the cache);
* a budget re-summed on every request (``spend_refresh_seconds: 0``) over
  ``--decisions`` rows of the key in the period (one grouped query);
* everything at once (budget cached + rpm + tpm), memory and Redis;
* the hard budget's reservation and settlement on the ledger (two UPDATEs,
  routing/limits/ledger.py), which every request of a key with a hard budget adds.

It uses a temporary SQLite database (migrated here) and the shipped config;
Redis at ``--redis`` (127.0.0.1:6379/13 by default; its rows are skipped when
it does not answer).

Run: ``.venv/bin/python bench/bench_limits.py [--calls N] [--decisions N] [--redis URL]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import describe_machine  # noqa: E402

TOKENS = 20_000  # a mid-session agent prompt after pinch


def setup_django(tmp: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["ROUTER_DATA_DIR"] = str(tmp)
    os.environ["REDIS_URL"] = ""
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def timed(step, calls: int) -> tuple[float, float]:
    """(median, p99) microseconds of ``calls`` single calls of ``step``, after a warm-up."""
    for _ in range(min(calls // 10, 200)):
        step()
    times = []
    for _ in range(calls):
        started = time.perf_counter_ns()
        step()
        times.append((time.perf_counter_ns() - started) / 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def redis_answers(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
        return True
    except redis.RedisError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000, help="timed calls per row")
    parser.add_argument("--decisions", type=int, default=10_000, help="the key's rows this period")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp_name:
        setup_django(Path(tmp_name))
        import yaml
        from django.conf import settings

        from routing.auth import create_api_key
        from routing.config import DEFAULT_CONFIG_PATH, validate_config
        from routing.config.schema import LimitsConfig
        from routing.limits.admission import admit, forget_limit_state
        from routing.limits.ledger import reserve
        from routing.models import RouteDecision

        config = validate_config(yaml.safe_load(DEFAULT_CONFIG_PATH.read_text()))
        resum = config.model_copy(update={"limits": LimitsConfig(spend_refresh_seconds=0)})
        big = 10**9  # limits never reached: every call is admitted, the common case
        plain, _ = create_api_key("plain")
        rates, _ = create_api_key("rates", limits={"rpm_limit": big, "tpm_limit": big})
        budget, _ = create_api_key("budget", limits={"budget_usd": 1e9})
        both, _ = create_api_key(
            "both", limits={"budget_usd": 1e9, "rpm_limit": big, "tpm_limit": big}
        )
        model = config.models[0].id
        RouteDecision.objects.bulk_create(
            RouteDecision(
                path="routed",
                api_key=budget if i % 2 else both,
                requested_model="auto",
                chosen_model=model,
                provider="bench",
                upstream_model=model,
                measured_tokens=TOKENS,
                estimated_cost_usd=0.01,
                completion_tokens=500,
            )
            for i in range(args.decisions * 2)
        )

        def step(key, cfg=config):
            return lambda: admit(key, cfg).take(TOKENS)

        rows = [
            ("no limits", plain, config, ""),
            ("rpm + tpm, the host's files (locked)", rates, config, ""),
            ("rpm + tpm, Redis (Lua script)", rates, config, args.redis),
            ("budget, spend cached (refresh 5 s)", budget, config, ""),
            (f"budget, re-summed each request ({args.decisions:,} rows)", budget, resum, ""),
            ("budget + rpm + tpm, files", both, config, ""),
            ("budget + rpm + tpm, Redis", both, config, args.redis),
        ]
        print(describe_machine())
        print(f"{args.calls:,} calls a row; microseconds per request (admit + take)\n")
        print(f"{'limits':52} {'p50 µs':>9} {'p99 µs':>9}")
        have_redis = redis_answers(args.redis)
        for label, key, cfg, redis_url in rows:
            if redis_url and not have_redis:
                print(f"{label:52} {'(no Redis at ' + redis_url + ')':>19}")
                continue
            settings.REDIS_URL = redis_url
            forget_limit_state()
            calls = args.calls if cfg is config else max(args.calls // 20, 50)
            p50, p99 = timed(step(key, cfg), calls)
            print(f"{label:52} {p50:9.1f} {p99:9.1f}")

        # The hard budget's own two statements: the reservation before the upstream call
        # and its settlement (the same UPDATE the row's insert runs, here on its own).
        request = SimpleNamespace(max_tokens=1000)
        plan = SimpleNamespace(
            config=config, measured_tokens=TOKENS, request=request, candidates=[config.models[0]]
        )
        forget_limit_state()
        p50, p99 = timed(lambda: reserve(plan, budget).release(), max(args.calls // 5, 50))
        print(f"{'budget: worst case reserved + settled (ledger)':52} {p50:9.1f} {p99:9.1f}")


if __name__ == "__main__":
    main()
