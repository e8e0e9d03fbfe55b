"""Django's receivers of a request's start and end that have nothing to do in the served router.

Django sends ``request_started`` and ``request_finished`` around every
request, and each receiver is a call, often a walk of the connections or the
caches under asgiref's Local. Two of them are work for nothing here, and the
served application (router_project.wsgi) disconnects them:

- ``reset_queries`` empties every connection's query log as each request
  starts; the log is only written under DEBUG (a walk of the connections and
  a receiver, 5-10 us before every view);
- ``close_caches`` closes every cache as each request finishes; a cache
  whose backend keeps the base class's ``close`` closes nothing, and the
  router's (Django's default, a local-memory cache) is one: the walk took
  5-8 us after every answer. A cache that holds a connection keeps it.

``close_old_connections`` stays on both: it is what replaces a broken or aged
database connection (CONN_MAX_AGE, CONN_HEALTH_CHECKS), and Django's test
client disconnects it by that name around its requests.
"""

from django.conf import settings
from django.core.cache import close_caches
from django.core.cache.backends.base import BaseCache
from django.core.signals import request_finished, request_started
from django.db import reset_queries
from django.utils.module_loading import import_string


def caches_close_nothing(caches: dict) -> bool:
    """Does every cache of a CACHES setting keep the base class's ``close``, which does nothing?"""
    return all(
        import_string(cache["BACKEND"]).close is BaseCache.close for cache in caches.values()
    )


def drop_idle_receivers() -> None:
    if not settings.DEBUG:
        request_started.disconnect(reset_queries)
    if caches_close_nothing(settings.CACHES):
        request_finished.disconnect(close_caches)
