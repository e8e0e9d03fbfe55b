"""WSGI entry point, served by gunicorn (see gunicorn.conf.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
application = get_wsgi_application()

# Refuse to serve with a broken config file: gunicorn stops at start-up with the
# bad key named, instead of every request answering 500.
from routing.config.store import check_config_file  # noqa: E402  (needs Django set up)

check_config_file()
