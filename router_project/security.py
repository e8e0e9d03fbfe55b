"""A Content-Security-Policy on every HTML page (the dashboard, admin, login).

Django 5.2 has no CSP of its own (6.0 will). The pages are server-rendered:
the dashboard draws its chart in SVG without a line of script, and admin loads
its scripts from its own static files, so scripts may come from this origin
only. Styles allow 'unsafe-inline' because admin and our templates carry
``style`` attributes and ``<style>`` blocks; a style cannot run code. JSON
answers (the API, /metrics) are not documents and get no header.
"""

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin

DEFAULT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    # A hook, not a __call__ of its own: the API's chain folds it with Django's
    # middlewares into one layer (router_project.api_front).
    def process_response(self, request, response):
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and response.get("Content-Type", "").startswith("text/html"):
            response.headers.setdefault("Content-Security-Policy", policy)
        return response
