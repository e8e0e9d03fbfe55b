"""Django settings, read from the environment.

Every variable is documented in README.md ("Settings"). Defaults serve the
router on loopback over plain HTTP with a SQLite file, so a fresh checkout runs
with nothing configured; TLS is expected to end at a reverse proxy in front.
"""

import os
import tempfile
from pathlib import Path

from router_project.env import database_from_url, env_bool, env_int, env_list, env_str
from router_project.security import DEFAULT_POLICY

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("ROUTER_DATA_DIR", str(BASE_DIR / "data")))

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    # A fixed development key would let anyone forge sessions on a deployment that
    # forgot to set one; a per-data-dir random key survives restarts instead.
    from router_project.secret import load_or_create_secret_key

    SECRET_KEY = load_or_create_secret_key(DATA_DIR)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# HTTPS-only behaviour, all off by default: TLS usually ends at the proxy.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
# Only for a domain submitted to the browsers' HSTS preload list.
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", False)
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "router_project.apps.RouterAdminConfig",  # django.contrib.admin with our site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "routing",
    "metrics",
]

MIDDLEWARE = [
    # Outermost: every answer, Django's own refusals included, gets an X-Request-Id.
    "routing.request_ids.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "router_project.security.ContentSecurityPolicyMiddleware",
    # router_project.api_front: these four serve pages only; an API request passes them by.
    "router_project.api_front.WhiteNoiseMiddleware",
    "router_project.api_front.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "router_project.api_front.AuthenticationMiddleware",
    "router_project.api_front.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "routing.error_handlers.ApiErrorMiddleware",
]

ROOT_URLCONF = "router_project.urls"
WSGI_APPLICATION = "router_project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL"), DATA_DIR / "router.sqlite3")}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Threaded workers write concurrently: WAL lets readers go on during a write,
    # IMMEDIATE takes the write lock up front instead of failing on upgrade.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # Reuse each thread's connection: opening one (and its PRAGMAs) per request
    # was a measurable share of the router's added latency.
    DATABASES["default"]["CONN_MAX_AGE"] = 60
    # Tests use a file, not memory, so live-server threads get connections of
    # their own (an in-memory database is one shared connection); named per
    # process so two test runs on one machine never share it.
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"router_test_{os.getpid()}.sqlite3")
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# gunicorn serves no files: WhiteNoise serves the admin's CSS and JS straight
# from the installed apps, so no collectstatic step (and no STATIC_ROOT) is needed.
WHITENOISE_USE_FINDERS = True
LOGIN_URL = "/admin/login/"

# The router enforces its own body limit (ROUTER_MAX_BODY_BYTES) with a 413 in
# the OpenAI error shape; Django's own limit would answer with a bare 400.
DATA_UPLOAD_MAX_MEMORY_SIZE = None
ROUTER_MAX_BODY_BYTES = env_int("ROUTER_MAX_BODY_BYTES", 20 * 1024 * 1024)
# gunicorn's worker reads each request whole before a thread sees it
# (router_project/buffered_worker.py): within this many seconds of its first byte, else 408;
# and at most this many request bytes held by one worker at once, else 503.
ROUTER_REQUEST_READ_SECONDS = env_int("ROUTER_REQUEST_READ_SECONDS", 60)
ROUTER_WORKER_BUFFER_BYTES = env_int("ROUTER_WORKER_BUFFER_BYTES", 256 * 1024 * 1024)
ROUTER_CONFIG = env_str("ROUTER_CONFIG", "")
REDIS_URL = env_str("REDIS_URL", "")
# How long a worker trusts a router key it checked, without a query (routing/auth.py).
ROUTER_KEY_CACHE_SECONDS = env_int("ROUTER_KEY_CACHE_SECONDS", 30)
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
# Without a token /metrics answers 401, unless the operator makes it public on purpose
# (then without the tool-name labels: tool names are what tenants' agents called).
METRICS_PUBLIC = env_bool("METRICS_PUBLIC", False)

# On every HTML page (router_project/security.py); empty sends none.
CONTENT_SECURITY_POLICY = env_str("DJANGO_CONTENT_SECURITY_POLICY", DEFAULT_POLICY)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "routing.error_handlers.openai_exception_handler",
    "UNAUTHENTICATED_USER": None,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"no_traceback": {"()": "router_project.log_filters.WithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        # A bad Host is a client's mistake: one line naming it, not a traceback.
        "django.security.DisallowedHost": {"filters": ["no_traceback"]},
    },
}
