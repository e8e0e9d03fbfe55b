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

Served, the API goes further (``ApiFront``, the handler of
router_project.wsgi): an API request takes a middleware chain of its own,
built from settings.MIDDLEWARE without the layers that only hand it on (the
four above, and ``ApiErrorMiddleware``, whose work is its exception hook,
which Django calls from the handler, not from the chain), and the six left,
all hooks (``process_request``, ``process_response``), folded into one layer
(``Folded``). Each layer is two calls at least (Django's
``convert_exception_to_response`` wrapper, then the middleware): ten layers
became one. And the API's fixed paths
(``/v1/chat/completions``, ``/v1/messages``, ...) are resolved once, by the
URL resolver itself, instead of its patterns being tried in order on every
request (11-16 us). The answers are the ones the whole chain gives:
tests/router_project/test_api_front.py compares them, errors included.
"""

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as _Authentication
from django.contrib.messages.middleware import MessageMiddleware as _Message
from django.contrib.sessions.middleware import SessionMiddleware as _Session
from django.core.handlers.exception import convert_exception_to_response, response_for_exception
from django.core.handlers.wsgi import WSGIHandler
from django.urls import Resolver404, get_resolver
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string
from whitenoise.middleware import WhiteNoiseMiddleware as _WhiteNoise

API_ROOT = "/v1"


def is_api_path(path: str) -> bool:
    """Under /v1, where only API views are mounted (router_project/urls.py)."""
    return path.startswith(API_ROOT) and path[len(API_ROOT) : len(API_ROOT) + 1] in ("", "/")


def pages_only(middleware: type) -> type:
    """``middleware`` for every path but the API's, which it passes on untouched."""

    class PagesOnly(middleware):
        passes_api_by = True

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


class ApiFront:
    """A handler's middleware chain and URL resolution, with the API's shorter way.

    Mixed into Django's WSGI handler (``ApiFrontHandler``); the tests mix it
    into the test client's handler to compare its answers with the whole chain's.
    """

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async)  # the whole chain, and every hook registered
        if is_async:
            return
        pages = self._middleware_chain
        api = convert_exception_to_response(self._get_response)
        run = []  # hook middlewares, outermost first, to fold into one layer
        for middleware_path in reversed(settings.MIDDLEWARE):
            middleware = import_string(middleware_path)
            if getattr(middleware, "passes_api_by", False):
                continue
            if middleware.__call__ is MiddlewareMixin.__call__:
                run.insert(0, middleware(api))
                continue
            if run:
                api, run = convert_exception_to_response(Folded(run, api)), []
            api = convert_exception_to_response(middleware(api))
        if run:
            api = convert_exception_to_response(Folded(run, api))

        def by_path(request):
            if is_api_path(request.path_info):
                return api(request)
            return pages(request)

        self._middleware_chain = by_path
        self._resolved = (None, {})

    def resolve_request(self, request):
        if hasattr(request, "urlconf"):  # a middleware chose another URL map
            return super().resolve_request(request)
        resolver = get_resolver()
        if self._resolved[0] is not resolver:  # ROOT_URLCONF changed (tests), or first request
            self._resolved = (resolver, fixed_api_paths(resolver))
        match = self._resolved[1].get(request.path_info)
        if match is None:
            return super().resolve_request(request)
        request.resolver_match = match
        return match


class Folded:
    """One layer for a run of hook middlewares, answering as their chain of layers does.

    Django gives each middleware a layer of its own: its
    ``convert_exception_to_response`` wrapper, then ``MiddlewareMixin.__call__``,
    which calls ``process_request``, the next layer unless that answered, then
    ``process_response``. A failure in a layer is answered there
    (``response_for_exception``: handler400, handler500, ...), that layer's
    ``process_response`` skipped, and the outer layers' run on that answer.
    This does the same in one loop.
    """

    def __init__(self, middlewares: list, get_response):
        self.requests = [getattr(m, "process_request", None) for m in middlewares]
        self.responses = [getattr(m, "process_response", None) for m in middlewares]
        self.get_response = get_response

    def __call__(self, request):
        response = None
        entered = 0  # the layers whose process_response runs
        for process_request in self.requests:
            entered += 1
            if process_request is None:
                continue
            try:
                response = process_request(request)
            except Exception as exc:
                response = response_for_exception(request, exc)
                entered -= 1
                break
            if response:
                break
        else:
            response = self.get_response(request)
        for process_response in reversed(self.responses[:entered]):
            if process_response is None:
                continue
            try:
                response = process_response(request, response)
            except Exception as exc:
                response = response_for_exception(request, exc)
        return response


def fixed_api_paths(resolver) -> dict:
    """The API's paths without a parameter, each with what ``resolver`` resolves it to."""
    from routing.urls import urlpatterns  # the views: not importable while settings load

    resolved = {}
    for pattern in urlpatterns:
        path = f"{API_ROOT}/{pattern.pattern}"
        if "<" in path:
            continue
        try:
            resolved[path] = resolver.resolve(path)
        except Resolver404:  # a URL map without the API (a test's)
            continue
    return resolved


class ApiFrontHandler(ApiFront, WSGIHandler):
    """Django's WSGI handler, the API's way shortened (router_project.wsgi serves it)."""
