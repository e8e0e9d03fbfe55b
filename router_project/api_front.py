"""The API's way through Django's middleware: what only pages use steps aside under /v1.

Every view under /v1 is a CSRF-exempt JSON endpoint that checks a router key:
it reads no session, no logged-in user, no flash message, no static file and
no CSRF cookie. The middlewares for the first four (sessions, auth, messages,
WhiteNoise) still ran on every API request, about 45 us of a warm
``GET /v1/models`` that took 240 us in Django (a fifth of it). Each of them is
wrapped here so that it hands an API request straight on, and serves the
admin, the dashboard and the other pages as before.

What an API answer carries is left to the middlewares that give it, which
run for every path: X-Request-Id and the ``answer_refused`` log line
(routing.request_ids), the security headers (SecurityMiddleware,
XFrameOptionsMiddleware), the Host check, whose DisallowedHost is a JSON 400,
and Content-Length (CommonMiddleware), the JSON errors (routing.error_handlers).
CsrfViewMiddleware stays whole, on every path (``check --deploy`` asks for
it by name); it passes the exempt API views in its view hook, as it did.
"""

from django.contrib.auth.middleware import AuthenticationMiddleware as _Authentication
from django.contrib.messages.middleware import MessageMiddleware as _Message
from django.contrib.sessions.middleware import SessionMiddleware as _Session
from whitenoise.middleware import WhiteNoiseMiddleware as _WhiteNoise

API_ROOT = "/v1"


def is_api_path(path: str) -> bool:
    """Under /v1, where only API views are mounted (router_project/urls.py)."""
    return path.startswith(API_ROOT) and path[len(API_ROOT) : len(API_ROOT) + 1] in ("", "/")


def pages_only(middleware: type) -> type:
    """``middleware`` for every path but the API's, which it passes on untouched."""

    class PagesOnly(middleware):
        def __call__(self, request):
            if is_api_path(request.path_info):
                return self.get_response(request)
            return super().__call__(request)

    PagesOnly.__name__ = PagesOnly.__qualname__ = middleware.__name__
    PagesOnly.__doc__ = f"{middleware.__module__}.{middleware.__name__}, for pages only."
    return PagesOnly


WhiteNoiseMiddleware = pages_only(_WhiteNoise)
SessionMiddleware = pages_only(_Session)
AuthenticationMiddleware = pages_only(_Authentication)
MessageMiddleware = pages_only(_Message)
