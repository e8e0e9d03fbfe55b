"""WSGI entry point, served by gunicorn (see gunicorn.conf.py)."""

import os

import django
from django.conf import settings

from router_project.request_signals import drop_idle_receivers
from router_project.wsgi_edges import WsgiEdges

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
# Django's get_wsgi_application(), with the API's shorter way through the middleware
# (router_project.api_front); chunked bodies read in full, HEAD answered without a body
# (router_project.wsgi_edges).
django.setup(set_prefix=False)
from router_project.api_front import ApiFrontHandler  # noqa: E402  (needs Django set up)

application = WsgiEdges(ApiFrontHandler(), settings.ROUTER_MAX_BODY_BYTES)

# Django's receivers that have nothing to do here (router_project.request_signals).
drop_idle_receivers()

# Refuse to serve with a broken config file: gunicorn stops at start-up with the
# bad key named, instead of every request answering 500.
from routing.config.store import check_config_file  # noqa: E402  (needs Django set up)

check_config_file()
