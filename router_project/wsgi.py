"""WSGI entry point, served by gunicorn (see gunicorn.conf.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "router_project.settings")
application = get_wsgi_application()
