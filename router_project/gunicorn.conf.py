"""gunicorn settings for the router.

Threaded workers: a streamed answer holds its thread until the upstream
finishes, so threads, not processes, carry the concurrency. gthread as it is
hands a connection to a thread at its first bytes, so a client sending its
request a byte at a time held a thread (256 such clients starved normal
requests of the default 2 x 128 threads); the router's worker class
(router_project/buffered_worker.py) reads each request whole in the worker's
poller first, so threads only meet complete requests, as behind nginx
(docs/deployment.md). Each value can be overridden from the environment
(README, "Settings"), read by the same typed helpers as Django's settings: a
bad value stops gunicorn naming it.
"""

from router_project import accept_share
from router_project.env import env_int, env_str
from router_project.wsgi_edges import json_server_errors

# gunicorn's own refusals (414, 431, 400 on a broken request line) in JSON, not HTML.
json_server_errors()

bind = env_str("ROUTER_BIND", "127.0.0.1:8000")
workers = env_int("ROUTER_WORKERS", 2)
# gthread, each request read whole before a thread sees it.
worker_class = "router_project.buffered_worker.BufferedThreadWorker"
threads = env_int("ROUTER_THREADS", 128)
# Upstream answers of long generations can take minutes; the worker timeout only
# guards against a wedged worker, not a slow upstream (threads keep heartbeating).
timeout = env_int("ROUTER_WORKER_TIMEOUT", 300)
graceful_timeout = 30
keepalive = 5
accesslog = env_str("ROUTER_ACCESS_LOG", "-") or None  # empty: no access log
wsgi_app = "router_project.wsgi:application"
# gunicorn's control socket defaults to one path per user (~/.gunicorn/gunicorn.ctl):
# every router on the host would share it, and a second instance failing at
# start-up (a bad config) deletes the running one's. The router needs none; an
# operator who wants gunicornc names a path of this instance's own.
control_socket = env_str("ROUTER_CONTROL_SOCKET", "")
control_socket_disable = not control_socket


def on_starting(server):
    """Check the config file once, in the master, before any worker starts.

    A missing or invalid file stops gunicorn with one line naming the path or
    the key (gunicorn prints a RuntimeError as ``Error: ...`` and exits 1),
    instead of every worker failing to boot with a traceback; a provider whose
    key variable is unset is logged as a warning.
    """
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
    django.setup()
    from routing.config.checks import startup_report

    error, warnings = startup_report()
    if error is not None:
        raise RuntimeError(error)
    for warning in warnings:
        server.log.warning(warning)


def when_ready(server):
    """Say where the router serves once it does: after the config check, with the socket bound."""
    from routing.errors import CREATE_KEY_COMMAND

    for listener in server.LISTENERS:
        server.log.info("Router serving on %s (create a key: %s)", listener, CREATE_KEY_COMMAND)


def pre_fork(server, worker):
    """A slot in the table of connections each worker holds, made in the master so that the
    workers share it: a burst of new connections is shared between them
    (router_project/accept_share.py)."""
    accept_share.seat(worker)


def child_exit(server, worker):
    """A worker gone (exited, killed, restarted) is no longer counted as one that could accept."""
    accept_share.unseat(worker)


def post_fork(server, worker):
    """Write decision rows behind the answers, in batches, on a thread of each worker
    (routing/recording/writer.py); a process without it writes each row before its answer."""
    from routing.recording.decisions import write_behind

    write_behind()


# The youngest generation's threshold (CPython's default is 700 allocations). A long
# request parses into thousands of containers: at 700 the collector ran several times a
# request and moved the live ones of every request in flight up to the older
# generations, whose passes stop every thread. With no cycle left on a request's path
# (tests/routing/test_hot_path_budget.py), its objects go by reference counting, and a
# rarer pass finds little. Measured on a served worker (368 KB body, 16 clients, the
# collector's CPU time per request): 0.73-0.86 ms with the cycle, 0.54-0.61 without it,
# 0.26-0.27 with the freeze below too, 0.10 with this threshold too; 2 KB at 1 client,
# 0.02-0.05 ms in every case.
YOUNG_COLLECTION_THRESHOLD = 7000


def post_worker_init(worker):
    """Leave what the worker loaded (Django, the URL map, the models, the config) out of the
    collector's passes, and run its youngest generation less often (see above)."""
    import gc

    gc.collect()  # what start-up left unreachable, so that none of it is frozen
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


def worker_exit(server, worker):
    """A worker's graceful exit (SIGTERM, a max_requests restart) writes the rows still
    queued before the process ends; a killed one leaves them in its journal."""
    from routing.recording import writer

    writer.stop()
