"""WSGI entry point, served by gunicorn (see gunicorn.conf.py)."""

import os

from django.conf import settings
from django.core.signals import request_started
from django.core.wsgi import get_wsgi_application
from django.db import reset_queries

from router_project.wsgi_edges import WsgiEdges

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
# Chunked bodies read in full, HEAD answered without a body (router_project.wsgi_edges).
application = WsgiEdges(get_wsgi_application(), settings.ROUTER_MAX_BODY_BYTES)

if not settings.DEBUG:
    # Django empties every connection's query log as each request starts; the log
    # is only written under DEBUG, so the emptying (a walk of the connections and
    # a receiver, 5-10 us before every view) has nothing to do here.
    request_started.disconnect(reset_queries)

# Refuse to serve with a broken config file: gunicorn stops at start-up with the
# bad key named, instead of every request answering 500.
from routing.config.store import check_config_file  # noqa: E402  (needs Django set up)

check_config_file()
