"""How well the builtin embedder puts relevant tool results first.

Scenarios written for this test, shaped like agent sessions: one request and
about a dozen tool results of up to ~2,000 characters from one fictional
project ("ledgerly", an invoicing app), of which 2-3 matter to the request.
Some requests share many words with their results ("fix compute_total ...");
others share almost none ("kicked out" vs SESSION_COOKIE_AGE, "profile
picture" vs avatar, "dollars" vs USD), which is where a static table of word
meanings should help a bag of hashed words.

Run as a script for the figures (mean reciprocal rank of the first relevant
result, and the share of relevant/irrelevant pairs ordered correctly), hashed
alone against the hybrid:

    .venv/bin/python -m tests.pinch.test_embedders_quality
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass

import numpy as np
import pytest

from pinch import order_by_relevance
from pinch.embedders import BuiltinEmbedder


def _t(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


POOL = {
    "invoice_py": _t(
        """
        $ cat billing/invoice.py
        from decimal import ROUND_HALF_UP, Decimal

        from django.db import models

        from billing.currency import format_money
        from billing.discounts import DiscountCode

        VAT_RATE = Decimal("0.20")
        CENT = Decimal("0.01")


        class Invoice(models.Model):
            customer = models.ForeignKey("accounts.Customer", on_delete=models.PROTECT)
            number = models.CharField(max_length=32, unique=True)
            issued_on = models.DateField()
            discount_code = models.ForeignKey(
                DiscountCode, null=True, blank=True, on_delete=models.SET_NULL
            )
            currency = models.CharField(max_length=3, default="USD")

            def subtotal(self) -> Decimal:
                return sum((line.amount() for line in self.lines.all()), Decimal("0"))

            def vat(self, base: Decimal) -> Decimal:
                return (base * VAT_RATE).quantize(CENT, rounding=ROUND_HALF_UP)

            def apply_discount(self, amount: Decimal) -> Decimal:
                if self.discount_code is None:
                    return amount
                return self.discount_code.apply(amount)

            def compute_total(self) -> Decimal:
                base = self.subtotal()
                # BUG? VAT is computed on the undiscounted subtotal
                with_tax = base + self.vat(base)
                return self.apply_discount(with_tax).quantize(CENT)

            def render_total(self) -> str:
                return format_money(self.compute_total(), self.currency)


        class InvoiceLine(models.Model):
            invoice = models.ForeignKey(Invoice, related_name="lines", on_delete=models.CASCADE)
            description = models.CharField(max_length=200)
            quantity = models.PositiveIntegerField(default=1)
            unit_price = models.DecimalField(max_digits=12, decimal_places=2)

            def amount(self) -> Decimal:
                return self.unit_price * self.quantity
        """
    ),
    "pytest_billing": _t(
        """
        $ pytest tests/billing -x -q
        ..........F
        =================================== FAILURES ===================================
        ____________________________ test_discount_then_vat ____________________________

            def test_discount_then_vat(invoice_factory, discount_factory):
                code = discount_factory(percent=10)
                invoice = invoice_factory(lines=[("Consulting", 1, "90.00")], discount_code=code)
        >       assert invoice.compute_total() == Decimal("97.20")
        E       AssertionError: assert Decimal('97.19') == Decimal('97.20')
        E        +  where Decimal('97.19') = <bound method Invoice.compute_total of <Invoice: INV-0001>>()

        tests/billing/test_invoice.py:48: AssertionError
        ----------------------------- Captured log call ------------------------------
        DEBUG    billing.discounts:discounts.py:31 applying DiscountCode(SPRING10, 10%) to 108.00
        DEBUG    billing.discounts:discounts.py:35 discounted 108.00 -> 97.19 (rounded down)
        =========================== short test summary info ============================
        FAILED tests/billing/test_invoice.py::test_discount_then_vat - AssertionError: assert...
        !!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
        1 failed, 10 passed in 0.84s

        =============================== warnings summary ===============================
        tests/billing/test_invoice.py::test_invoice_number_sequence
          /app/billing/models.py:88: RemovedInDjango51Warning: The "default" storage is deprecated.
            storage = default_storage

        -- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
        """
    ),
    "grep_discount": _t(
        """
        $ grep -rn "discount" --include=*.py .
        ./billing/invoice.py:6:from billing.discounts import DiscountCode
        ./billing/invoice.py:16:    discount_code = models.ForeignKey(
        ./billing/invoice.py:27:    def apply_discount(self, amount: Decimal) -> Decimal:
        ./billing/invoice.py:28:        if self.discount_code is None:
        ./billing/invoice.py:30:        return self.discount_code.apply(amount)
        ./billing/invoice.py:36:        return self.apply_discount(with_tax).quantize(CENT)
        ./billing/discounts.py:9:class DiscountCode(models.Model):
        ./billing/discounts.py:12:    percent = models.PositiveSmallIntegerField()
        ./billing/discounts.py:24:    def apply(self, amount):
        ./billing/discounts.py:31:        log.debug("applying %s to %s", self, amount)
        ./billing/discounts.py:33:        discounted = amount * (100 - self.percent) / 100
        ./billing/discounts.py:34:        discounted = discounted.quantize(CENT, rounding=ROUND_DOWN)
        ./billing/discounts.py:35:        log.debug("discounted %s -> %s (rounded down)", amount, discounted)
        ./billing/admin.py:14:    list_display = ("number", "customer", "discount_code", "issued_on")
        ./billing/migrations/0004_invoice_discount_code.py:15:            name="discount_code",
        ./tests/billing/test_invoice.py:41:def test_discount_then_vat(invoice_factory, discount_factory):
        ./tests/billing/test_invoice.py:42:    code = discount_factory(percent=10)
        ./tests/billing/test_invoice.py:43:    invoice = invoice_factory(lines=[("Consulting", 1, "90.00")], discount_code=code)
        ./tests/billing/conftest.py:22:def discount_factory(db):
        ./tests/billing/conftest.py:24:    def make(percent=10, code="SPRING10"):
        ./reports/monthly.py:58:        row["discounts"] = invoice.subtotal() - invoice.compute_total()
        """
    ),
    "settings_base": _t(
        """
        $ sed -n 1,80p config/settings/base.py
        from pathlib import Path

        import environ

        env = environ.Env()
        BASE_DIR = Path(__file__).resolve().parent.parent.parent

        SECRET_KEY = env("DJANGO_SECRET_KEY")
        DEBUG = env.bool("DJANGO_DEBUG", default=False)
        ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost"])

        INSTALLED_APPS = [
            "django.contrib.admin",
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
            "django.contrib.staticfiles",
            "rest_framework",
            "accounts",
            "billing",
            "notifications",
            "reports",
            "search",
        ]

        MIDDLEWARE = [
            "django.middleware.security.SecurityMiddleware",
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "accounts.middleware.IdleTimeoutMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
        ]

        SESSION_ENGINE = "django.contrib.sessions.backends.cache"
        SESSION_COOKIE_AGE = 300  # seconds
        SESSION_EXPIRE_AT_BROWSER_CLOSE = True
        SESSION_SAVE_EVERY_REQUEST = False
        IDLE_TIMEOUT_SECONDS = 300

        CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
        DATABASES = {"default": env.db("DATABASE_URL", default="sqlite:///db.sqlite3")}

        LANGUAGE_CODE = "en-us"
        TIME_ZONE = "UTC"
        USE_I18N = True
        USE_TZ = True
        """
    ),
    "idle_middleware": _t(
        '''
        $ cat accounts/middleware.py
        import time

        from django.conf import settings
        from django.contrib.auth import logout
        from django.shortcuts import redirect


        class IdleTimeoutMiddleware:
            """Log a user out after IDLE_TIMEOUT_SECONDS without a request."""

            def __init__(self, get_response):
                self.get_response = get_response

            def __call__(self, request):
                if request.user.is_authenticated:
                    now = time.time()
                    last = request.session.get("last_seen", now)
                    if now - last > settings.IDLE_TIMEOUT_SECONDS:
                        logout(request)
                        return redirect(settings.LOGIN_URL + "?expired=1")
                    # Only written on page loads; XHR polling from the
                    # dashboard does not refresh last_seen.
                    if not request.headers.get("x-requested-with"):
                        request.session["last_seen"] = now
                return self.get_response(request)


        class ForceHttpsMiddleware:
            def __init__(self, get_response):
                self.get_response = get_response

            def __call__(self, request):
                if not request.is_secure() and not settings.DEBUG:
                    return redirect("https://" + request.get_host() + request.get_full_path())
                return self.get_response(request)


        $ sed -n 1,20p tests/accounts/test_idle.py
        def test_idle_user_is_logged_out(client, user, settings, frozen_now, monkeypatch):
            settings.IDLE_TIMEOUT_SECONDS = 300
            client.force_login(user)
            client.get("/invoices/")
            monkeypatch.setattr("time.time", lambda: frozen_now.timestamp() + 301)
            response = client.get("/invoices/")
            assert response.status_code == 302
            assert "expired=1" in response["Location"]
        '''
    ),
    "worker_logs": _t(
        """
        $ docker compose logs worker --tail 30
        worker-1  | [2024-05-14 09:12:01,118: INFO/MainProcess] Task notifications.tasks.send_password_reset[5c1e] received
        worker-1  | [2024-05-14 09:12:01,121: INFO/ForkPoolWorker-2] Rendering template emails/password_reset.txt for user 4412
        worker-1  | [2024-05-14 09:12:31,163: ERROR/ForkPoolWorker-2] Task notifications.tasks.send_password_reset[5c1e] raised unexpected: SMTPConnectError
        worker-1  | Traceback (most recent call last):
        worker-1  |   File "/app/notifications/mailer.py", line 41, in send_password_reset
        worker-1  |     connection.send_messages([message])
        worker-1  |   File "/usr/local/lib/python3.11/site-packages/django/core/mail/backends/smtp.py", line 128, in send_messages
        worker-1  |     new_conn_created = self.open()
        worker-1  |   File "/usr/local/lib/python3.11/smtplib.py", line 341, in connect
        worker-1  |     self.sock = self._get_socket(host, port, self.timeout)
        worker-1  | ConnectionRefusedError: [Errno 111] Connection refused (smtp.internal:25)
        worker-1  | [2024-05-14 09:12:31,170: WARNING/ForkPoolWorker-2] retry 3/3 exhausted, message dropped
        worker-1  | [2024-05-14 09:14:02,511: INFO/MainProcess] Task reports.tasks.nightly_rollup[77ab] received
        worker-1  | [2024-05-14 09:14:04,002: INFO/ForkPoolWorker-1] Task reports.tasks.nightly_rollup[77ab] succeeded in 1.49s
        worker-1  | [2024-05-14 09:20:11,930: INFO/MainProcess] Task notifications.tasks.send_password_reset[9d02] received
        worker-1  | [2024-05-14 09:20:41,977: ERROR/ForkPoolWorker-1] Task notifications.tasks.send_password_reset[9d02] raised unexpected: SMTPConnectError
        worker-1  | [2024-05-14 09:20:41,980: WARNING/ForkPoolWorker-1] retry 3/3 exhausted, message dropped
        """
    ),
    "mailer_py": _t(
        '''
        $ cat notifications/mailer.py
        import logging

        from django.conf import settings
        from django.core.mail import EmailMultiAlternatives, get_connection
        from django.template.loader import render_to_string

        log = logging.getLogger(__name__)


        def _message(subject, template, context, to):
            body = render_to_string(f"emails/{template}.txt", context)
            html = render_to_string(f"emails/{template}.html", context)
            message = EmailMultiAlternatives(subject, body, settings.DEFAULT_FROM_EMAIL, [to])
            message.attach_alternative(html, "text/html")
            return message


        def send_invoice(invoice):
            message = _message(
                f"Invoice {invoice.number}", "invoice", {"invoice": invoice}, invoice.customer.email
            )
            get_connection().send_messages([message])


        def send_password_reset(user, token):
            """Mail the reset link; the Celery task retries three times then drops it."""
            link = f"{settings.SITE_URL}/accounts/reset/{token}/"
            message = _message("Reset your password", "password_reset", {"link": link}, user.email)
            connection = get_connection(
                host=settings.EMAIL_HOST,
                port=settings.EMAIL_PORT,
                timeout=30,
            )
            log.info("sending password reset to user %s via %s", user.pk, settings.EMAIL_HOST)
            connection.send_messages([message])


        $ cat notifications/tasks.py
        from celery import shared_task
        from django.contrib.auth import get_user_model

        from notifications import mailer


        @shared_task(autoretry_for=(OSError,), max_retries=3, retry_backoff=True)
        def send_password_reset(user_id, token):
            user = get_user_model().objects.get(pk=user_id)
            mailer.send_password_reset(user, token)
        '''
    ),
    "explain_products": _t(
        """
        $ psql ledgerly -c "EXPLAIN ANALYZE SELECT * FROM catalog_product WHERE name ILIKE '%widget%' OR description ILIKE '%widget%' ORDER BY name LIMIT 50;"
                                                                QUERY PLAN
        --------------------------------------------------------------------------------------------------------------------------
         Limit  (cost=98213.55..98213.68 rows=50 width=412) (actual time=4712.031..4712.052 rows=50 loops=1)
           ->  Sort  (cost=98213.55..98240.31 rows=10704 width=412) (actual time=4712.029..4712.041 rows=50 loops=1)
                 Sort Key: name
                 Sort Method: top-N heapsort  Memory: 61kB
                 ->  Seq Scan on catalog_product  (cost=0.00..97857.00 rows=10704 width=412) (actual time=0.412..4698.337 rows=9981 loops=1)
                       Filter: (((name)::text ~~* '%widget%'::text) OR (description ~~* '%widget%'::text))
                       Rows Removed by Filter: 1190019
         Planning Time: 0.231 ms
         Execution Time: 4712.118 ms
        (9 rows)

        $ psql ledgerly -c "\\di catalog_product*"
                              List of relations
         Schema |           Name            | Type  |  Owner   |      Table
        --------+---------------------------+-------+----------+-----------------
         public | catalog_product_pkey      | index | ledgerly | catalog_product
         public | catalog_product_sku_key   | index | ledgerly | catalog_product
        (2 rows)

        $ psql ledgerly -c "\\dt+ catalog_*"
                                    List of relations
         Schema |          Name          | Type  |  Owner   |  Size   | Description
        --------+------------------------+-------+----------+---------+-------------
         public | catalog_category       | table | ledgerly | 48 kB   |
         public | catalog_price          | table | ledgerly | 212 MB  |
         public | catalog_product        | table | ledgerly | 611 MB  |
        (3 rows)
        """
    ),
    "search_views": _t(
        """
        $ cat search/views.py
        from django.db.models import Q
        from django.shortcuts import render

        from catalog.models import Product


        def search(request):
            query = request.GET.get("q", "").strip()
            results = []
            if query:
                products = Product.objects.filter(
                    Q(name__icontains=query) | Q(description__icontains=query)
                ).order_by("name")[:50]
                for product in products:
                    # one query per product for its category and its price list
                    results.append(
                        {
                            "product": product,
                            "category": product.category.name,
                            "prices": list(product.prices.all()),
                        }
                    )
            return render(request, "search/results.html", {"query": query, "results": results})


        def suggest(request):
            prefix = request.GET.get("q", "")[:20]
            names = Product.objects.filter(name__istartswith=prefix).values_list("name", flat=True)
            return render(request, "search/suggest.html", {"names": names[:10]})


        $ cat search/templates/search/results.html
        {% extends "base.html" %}
        {% block content %}
          <h1>Results for "{{ query }}"</h1>
          <ul class="results">
          {% for row in results %}
            <li>
              <a href="{{ row.product.get_absolute_url }}">{{ row.product.name }}</a>
              <span class="category">{{ row.category }}</span>
              {% for price in row.prices %}<span class="price">{{ price.amount }}</span>{% endfor %}
            </li>
          {% empty %}
            <li>No products match.</li>
          {% endfor %}
          </ul>
        {% endblock %}
        """
    ),
    "nginx_access": _t(
        """
        $ tail -n 14 /var/log/nginx/access.log
        10.0.3.21 - - [14/May/2024:10:02:11 +0000] "GET /search/?q=widget HTTP/1.1" 200 48211 "-" "Mozilla/5.0" rt=4.912
        10.0.3.21 - - [14/May/2024:10:02:17 +0000] "GET /static/app.3f9a.js HTTP/1.1" 200 210334 "-" "Mozilla/5.0" rt=0.002
        10.0.3.44 - - [14/May/2024:10:02:20 +0000] "GET /search/?q=bolt HTTP/1.1" 200 39980 "-" "Mozilla/5.0" rt=5.104
        10.0.3.44 - - [14/May/2024:10:02:31 +0000] "GET /search/suggest/?q=bo HTTP/1.1" 200 812 "-" "Mozilla/5.0" rt=0.311
        10.0.3.17 - - [14/May/2024:10:02:40 +0000] "GET /invoices/ HTTP/1.1" 200 18220 "-" "Mozilla/5.0" rt=0.088
        10.0.3.17 - - [14/May/2024:10:02:44 +0000] "GET /search/?q=hinge HTTP/1.1" 200 41102 "-" "Mozilla/5.0" rt=4.877
        10.0.3.90 - - [14/May/2024:10:02:51 +0000] "POST /api/orders/ HTTP/1.1" 201 512 "-" "python-requests/2.31" rt=0.041
        10.0.3.21 - - [14/May/2024:10:03:02 +0000] "GET /search/?q=widget+blue HTTP/1.1" 200 22107 "-" "Mozilla/5.0" rt=5.230
        10.0.3.17 - - [14/May/2024:10:03:09 +0000] "GET /accounts/profile/ HTTP/1.1" 200 9120 "-" "Mozilla/5.0" rt=0.064
        10.0.3.44 - - [14/May/2024:10:03:15 +0000] "GET /search/?q=nut HTTP/1.1" 504 167 "-" "Mozilla/5.0" rt=30.001
        10.0.3.90 - - [14/May/2024:10:03:22 +0000] "GET /api/orders/ HTTP/1.1" 200 2811204 "-" "python-requests/2.31" rt=2.113
        10.0.3.21 - - [14/May/2024:10:03:30 +0000] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.29" rt=0.001
        10.0.3.44 - - [14/May/2024:10:03:41 +0000] "GET /search/?q=washer HTTP/1.1" 200 37765 "-" "Mozilla/5.0" rt=4.998
        10.0.3.17 - - [14/May/2024:10:03:48 +0000] "GET /reports/monthly/ HTTP/1.1" 200 15523 "-" "Mozilla/5.0" rt=0.402
        """
    ),
    "ci_log": _t(
        """
        $ gh run view 9121 --log-failed
        build-image  Set up job        2024-05-14T07:58:02Z Current runner version: '2.316.1'
        build-image  Build and push    2024-05-14T07:58:40Z #9 [builder 4/7] RUN pip install --no-cache-dir -r requirements.txt
        build-image  Build and push    2024-05-14T07:58:52Z #9 11.82   Building wheel for psycopg2 (setup.py): started
        build-image  Build and push    2024-05-14T07:58:53Z #9 12.40   error: subprocess-exited-with-error
        build-image  Build and push    2024-05-14T07:58:53Z #9 12.41   Error: pg_config executable not found.
        build-image  Build and push    2024-05-14T07:58:53Z #9 12.41   pg_config is required to build psycopg2 from source.  Please add the directory
        build-image  Build and push    2024-05-14T07:58:53Z #9 12.41   containing pg_config to the $PATH or specify the full executable path with the option:
        build-image  Build and push    2024-05-14T07:58:53Z #9 12.42       python setup.py build_ext --pg-config /path/to/pg_config build ...
        build-image  Build and push    2024-05-14T07:58:53Z #9 12.42   or with the pg_config option in 'setup.cfg'.
        build-image  Build and push    2024-05-14T07:58:54Z #9 ERROR: process "/bin/sh -c pip install --no-cache-dir -r requirements.txt" did not complete successfully: exit code: 1
        build-image  Build and push    2024-05-14T07:58:54Z ERROR: failed to solve: process "/bin/sh -c pip install --no-cache-dir -r requirements.txt" did not complete successfully: exit code: 1
        build-image  Build and push    2024-05-14T07:58:54Z ##[error]buildx failed with: ERROR: failed to solve
        build-image  Post job cleanup  2024-05-14T07:58:56Z Cleaning up orphan processes
        """
    ),
    "dockerfile": _t(
        """
        $ cat Dockerfile
        # syntax=docker/dockerfile:1.6
        FROM python:3.12-slim AS builder
        WORKDIR /app
        # was python:3.11 until 2024-05-13 (bump by renovate, PR #412)
        RUN apt-get update && apt-get install -y --no-install-recommends build-essential \\
            && rm -rf /var/lib/apt/lists/*
        COPY requirements.txt .
        RUN pip install --no-cache-dir -r requirements.txt
        COPY . .
        RUN python manage.py collectstatic --noinput

        FROM python:3.12-slim
        WORKDIR /app
        COPY --from=builder /usr/local /usr/local
        COPY --from=builder /app /app
        ENV DJANGO_SETTINGS_MODULE=config.settings.production
        EXPOSE 8000
        CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3"]

        $ grep -n psycopg requirements.txt
        14:psycopg2==2.9.9

        $ head -n 8 requirements.txt
        Django==4.2.11
        djangorestframework==3.15.1
        django-environ==0.11.2
        celery==5.4.0
        redis==5.0.4
        Babel==2.15.0
        Pillow==10.3.0
        gunicorn==22.0.0

        $ cat docker-compose.yml
        services:
          db:
            image: postgres:16
            environment:
              POSTGRES_DB: ledgerly
              POSTGRES_PASSWORD: ledgerly
            volumes: ["pgdata:/var/lib/postgresql/data"]
          redis:
            image: redis:7
          web:
            build: .
            env_file: .env
            ports: ["8000:8000"]
            depends_on: [db, redis]
          worker:
            build: .
            command: celery -A config worker -B -l info
            env_file: .env
            depends_on: [db, redis]
        volumes:
          pgdata: {}
        """
    ),
    "curl_orders": _t(
        """
        $ curl -s -w '\\n%{size_download} bytes in %{time_total}s\\n' localhost:8000/api/orders/ | head -c 1400
        [{"id":1,"number":"ORD-000001","customer":17,"status":"shipped","total":"120.00","currency":"USD","created":"2021-02-01T10:12:00Z","lines":[{"sku":"W-100","quantity":2}]},{"id":2,"number":"ORD-000002","customer":4,"status":"shipped","total":"75.50","currency":"USD","created":"2021-02-01T11:40:00Z","lines":[{"sku":"B-220","quantity":5}]},{"id":3,"number":"ORD-000003","customer":91,"status":"cancelled","total":"0.00","currency":"USD","created":"2021-02-02T08:03:00Z","lines":[]},{"id":4,"number":"ORD-000004","customer":17,"status":"shipped","total":"310.00","currency":"EUR","created":"2021-02-02T09:55:00Z","lines":[{"sku":"H-010","quantity":10}]},{"id":5,"number":"ORD-000005","customer":52,"status":"open","total":"42.00","currency":"USD","created":"2021-02-03T14:20:00Z","lines":[{"sku":"N-004","quantity":100}]}
        ...
        2811204 bytes in 2.113s

        $ curl -s -o /dev/null -w '%{http_code} %{time_total}s\\n' -H 'User-Agent: LedgerlyMobile/3.2' localhost:8000/api/orders/
        200 2.241s
        $ curl -s localhost:8000/api/orders/?page=2 | head -c 120
        [{"id":1,"number":"ORD-000001","customer":17,"status":"shipped","total":"120.00","currency":"USD","crea

        $ curl -s localhost:8000/api/orders/ | python -c "import json,sys; print(len(json.load(sys.stdin)))"
        48213
        """
    ),
    "api_views": _t(
        '''
        $ cat api/views.py
        from rest_framework import generics, permissions, viewsets

        from api.serializers import CustomerSerializer, OrderSerializer, ProductSerializer
        from catalog.models import Product
        from orders.models import Order


        class OrderViewSet(viewsets.ModelViewSet):
            """Orders of the caller's organisation, newest first."""

            serializer_class = OrderSerializer
            permission_classes = [permissions.IsAuthenticated]

            def get_queryset(self):
                return (
                    Order.objects.filter(organisation=self.request.user.organisation)
                    .prefetch_related("lines")
                    .order_by("-created")
                )


        class ProductList(generics.ListAPIView):
            queryset = Product.objects.all()
            serializer_class = ProductSerializer
            pagination_class = None


        class CustomerDetail(generics.RetrieveUpdateAPIView):
            serializer_class = CustomerSerializer
            permission_classes = [permissions.IsAuthenticated]

            def get_object(self):
                return self.request.user.organisation.customers.get(pk=self.kwargs["pk"])

        $ grep -n "DEFAULT_PAGINATION\\|PAGE_SIZE" -r config/
        (no output)

        $ sed -n 1,30p api/serializers.py
        from rest_framework import serializers

        from orders.models import Order, OrderLine


        class OrderLineSerializer(serializers.ModelSerializer):
            class Meta:
                model = OrderLine
                fields = ["sku", "quantity"]


        class OrderSerializer(serializers.ModelSerializer):
            lines = OrderLineSerializer(many=True, read_only=True)

            class Meta:
                model = Order
                fields = ["id", "number", "customer", "status", "total", "currency", "created", "lines"]
        '''
    ),
    "avatar_upload": _t(
        """
        $ cat accounts/views/avatar.py
        from django.contrib.auth.decorators import login_required
        from django.http import JsonResponse
        from PIL import Image

        THUMB = (256, 256)


        @login_required
        def upload_avatar(request):
            upload = request.FILES["avatar"]
            image = Image.open(upload)  # no size check: the whole file is decoded in memory
            image = image.convert("RGB")
            image.thumbnail(THUMB)
            path = f"avatars/{request.user.pk}.jpg"
            with request.user.profile.storage.open(path, "wb") as out:
                image.save(out, "JPEG", quality=85)
            request.user.profile.avatar = path
            request.user.profile.save(update_fields=["avatar"])
            return JsonResponse({"avatar": path})

        $ grep -n "DATA_UPLOAD_MAX_MEMORY_SIZE\\|FILE_UPLOAD_MAX_MEMORY_SIZE\\|client_max_body_size" -r config/ deploy/
        deploy/nginx.conf:31:    client_max_body_size 60m;

        $ sed -n 1,40p frontend/src/components/AvatarUpload.tsx
        import { useState } from "react";
        import { api } from "../api";

        export function AvatarUpload({ onDone }: { onDone: (url: string) => void }) {
          const [busy, setBusy] = useState(false);

          async function choose(event: React.ChangeEvent<HTMLInputElement>) {
            const file = event.target.files?.[0];
            if (!file) return;
            setBusy(true);
            const form = new FormData();
            form.append("avatar", file); // sent as is, straight from the camera roll
            const { data } = await api.post("/accounts/avatar/", form);
            setBusy(false);
            onDone(data.avatar);
          }

          return (
            <label className="avatar-upload">
              <input type="file" accept="image/*" capture="user" onChange={choose} disabled={busy} />
              {busy ? "Uploading..." : "Change picture"}
            </label>
          );
        }
        """
    ),
    "journal_oom": _t(
        """
        $ journalctl -u ledgerly-web --since "1 hour ago" | tail -n 14
        May 14 10:41:02 web-2 gunicorn[2211]: [2024-05-14 10:41:02 +0000] [2231] [INFO] POST /accounts/avatar/ 58.1 MB multipart/form-data
        May 14 10:41:03 web-2 gunicorn[2231]: /usr/local/lib/python3.12/site-packages/PIL/Image.py:3186: DecompressionBombWarning: Image size (96000000 pixels) exceeds limit of 89478485 pixels, could be decompression bomb DOS attack.
        May 14 10:41:09 web-2 kernel: Out of memory: Killed process 2231 (gunicorn) total-vm:3412008kB, anon-rss:2988112kB
        May 14 10:41:09 web-2 gunicorn[2211]: [2024-05-14 10:41:09 +0000] [2211] [ERROR] Worker (pid:2231) was sent SIGKILL! Perhaps out of memory?
        May 14 10:41:09 web-2 gunicorn[2211]: [2024-05-14 10:41:09 +0000] [2302] [INFO] Booting worker with pid: 2302
        May 14 10:41:12 web-2 gunicorn[2302]: [2024-05-14 10:41:12 +0000] [2302] [INFO] GET /healthz 200
        May 14 10:52:40 web-2 gunicorn[2211]: [2024-05-14 10:52:40 +0000] [2240] [INFO] POST /accounts/avatar/ 44.7 MB multipart/form-data
        May 14 10:52:47 web-2 kernel: Out of memory: Killed process 2240 (gunicorn) total-vm:3120440kB, anon-rss:2711204kB
        May 14 10:52:47 web-2 gunicorn[2211]: [2024-05-14 10:52:47 +0000] [2211] [ERROR] Worker (pid:2240) was sent SIGKILL! Perhaps out of memory?
        May 14 10:52:48 web-2 systemd[1]: ledgerly-web.service: A process of this unit has been killed by the OOM killer.

        $ free -m
                       total        used        free      shared  buff/cache   available
        Mem:            3931        3522         120          12         288         171
        Swap:              0           0           0
        """
    ),
    "currency_py": _t(
        """
        $ cat billing/currency.py
        from decimal import Decimal

        from babel.numbers import format_currency
        from django.conf import settings
        from django.utils import translation

        # One currency for every customer until multi-currency lands (#233).
        DEFAULT_CURRENCY = getattr(settings, "DEFAULT_CURRENCY", "USD")


        def customer_currency(customer) -> str:
            return DEFAULT_CURRENCY


        def format_money(amount: Decimal, currency: str | None = None) -> str:
            currency = currency or DEFAULT_CURRENCY
            locale = translation.to_locale(translation.get_language() or settings.LANGUAGE_CODE)
            return format_currency(amount, currency, locale=locale)


        def convert(amount: Decimal, to: str) -> Decimal:
            if to == DEFAULT_CURRENCY:
                return amount
            raise NotImplementedError(f"no exchange rates for {to}")

        $ python manage.py shell -c "from accounts.models import Customer; print(Customer.objects.filter(country='DE').values_list('locale', flat=True)[:5])"
        <QuerySet ['de_DE', 'de_DE', 'de_DE', 'de_AT', 'de_DE']>


        $ python manage.py shell -c "from billing.currency import format_money; from decimal import Decimal; print(format_money(Decimal('1234.5')))"
        $1,234.50

        $ pip show babel | head -3
        Name: Babel
        Version: 2.15.0
        Summary: Internationalization utilities
        """
    ),
    "git_log": _t(
        """
        $ git log --oneline -22
        9c1f2e7 (HEAD -> main, origin/main) Bump python base image to 3.12 (#412)
        41d0a9b reports: add CSV export of the monthly rollup
        a7be310 accounts: shorten idle timeout to five minutes after pentest finding
        5e0c2d1 search: show category next to each result
        e81f4a0 api: expose order lines in OrderSerializer
        d2b7c95 billing: round discounts down, per finance
        0fa3b17 notifications: move SMTP host to smtp.internal
        77c4e12 frontend: avatar cropper on the profile page
        c3a9d0f Merge pull request #398 from ledgerly/feature/discount-codes
        b18e6a4 billing: discount codes on invoices
        91d44ea ci: cache pip downloads between runs
        6a0b3f9 deps: pin Django 4.2.11
        2c7d8e1 catalog: import 1.2M products from the supplier feed
        f4e9b20 reports: nightly rollup task
        8d1c5a3 docs: deployment notes for staging
        3b9f7e6 accounts: German and Austrian customers get de locale
        e5a2c10 api: orders endpoint for the mobile client
        0b6d4f8 tests: factories for invoices and discounts
        7f3e9a2 settings: split base/production
        c8a1b5d frontend: upgrade webpack to 5.91
        4d2e6f0 initial import


        $ git show --stat HEAD~2
        commit a7be310f1e0c2d19a2c4b8e7d6f5a4b3c2d1e0f9
        Author: Sam Ortiz <sam@ledgerly.example>
        Date:   Mon May 13 16:58:41 2024 +0200

            accounts: shorten idle timeout to five minutes after pentest finding

         accounts/middleware.py       | 12 +++++++++---
         config/settings/base.py      |  4 ++--
         tests/accounts/test_idle.py  | 21 +++++++++++++++++++++
         3 files changed, 30 insertions(+), 7 deletions(-)
        """
    ),
    "npm_build": _t(
        """
        $ cd frontend && npm run build

        > ledgerly-frontend@1.8.0 build
        > webpack --mode production

        npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory.
        npm WARN deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported
        npm WARN deprecated rimraf@3.0.2: Rimraf versions prior to v4 are no longer supported
        Browserslist: caniuse-lite is outdated. Please run:
          npx update-browserslist-db@latest

        asset app.3f9a.js 205 KiB [emitted] [immutable] [minimized] (name: main) 2 related assets
        asset vendor.c81d.js 412 KiB [emitted] [immutable] [minimized] (name: vendor) 1 related asset
        asset app.0e4b.css 38.2 KiB [emitted] [immutable] (name: main)
        orphan modules 1.12 MiB [orphan] 311 modules
        runtime modules 2.45 KiB 6 modules
        cacheable modules 1.44 MiB
          modules by path ./node_modules/ 1.1 MiB 142 modules
          modules by path ./src/ 318 KiB 96 modules
        WARNING in asset size limit: The following asset(s) exceed the recommended size limit (244 KiB).
        Assets:
          vendor.c81d.js (412 KiB)
        WARNING in webpack performance recommendations:
        You can limit the size of your bundles by using import() or require.ensure to lazy load some parts of your application.
        webpack 5.91.0 compiled with 2 warnings in 18342 ms

        $ ls -la dist/
        total 1304
        drwxr-xr-x 2 dev dev   4096 May 14 08:31 .
        drwxr-xr-x 7 dev dev   4096 May 14 08:31 ..
        -rw-r--r-- 1 dev dev  39117 May 14 08:31 app.0e4b.css
        -rw-r--r-- 1 dev dev 209921 May 14 08:31 app.3f9a.js
        -rw-r--r-- 1 dev dev   1822 May 14 08:31 app.3f9a.js.LICENSE.txt
        -rw-r--r-- 1 dev dev 421806 May 14 08:31 vendor.c81d.js
        -rw-r--r-- 1 dev dev    612 May 14 08:31 index.html
        """
    ),
    "tree": _t(
        """
        $ tree -L 2 -d --noreport
        .
        ├── accounts
        │   ├── migrations
        │   ├── templates
        │   └── views
        ├── api
        ├── billing
        │   └── migrations
        ├── catalog
        │   └── migrations
        ├── config
        │   └── settings
        ├── deploy
        │   ├── k8s
        │   └── nginx
        ├── frontend
        │   ├── public
        │   └── src
        ├── notifications
        │   └── templates
        ├── orders
        │   └── migrations
        ├── reports
        │   └── templates
        ├── search
        │   └── templates
        └── tests
            ├── accounts
            ├── api
            ├── billing
            └── reports

        $ ls
        Dockerfile  Makefile  README.md  accounts  api  billing  catalog  config  deploy
        docker-compose.yml  frontend  manage.py  notifications  orders  pyproject.toml
        reports  requirements.txt  search  setup.cfg  tests

        $ ls -la config/settings deploy/k8s
        config/settings:
        total 28
        drwxr-xr-x 2 dev dev 4096 May 13 17:02 .
        drwxr-xr-x 3 dev dev 4096 Apr  2 09:14 ..
        -rw-r--r-- 1 dev dev    0 Apr  2 09:14 __init__.py
        -rw-r--r-- 1 dev dev 3120 May 13 17:02 base.py
        -rw-r--r-- 1 dev dev  842 Apr 30 11:45 local.py
        -rw-r--r-- 1 dev dev 1577 May  2 16:20 production.py
        -rw-r--r-- 1 dev dev  409 Apr  2 09:14 test.py

        deploy/k8s:
        total 24
        drwxr-xr-x 2 dev dev 4096 May  6 10:31 .
        drwxr-xr-x 4 dev dev 4096 Apr  2 09:14 ..
        -rw-r--r-- 1 dev dev 1804 May  6 10:31 deployment.yaml
        -rw-r--r-- 1 dev dev  388 Apr  2 09:14 service.yaml
        -rw-r--r-- 1 dev dev  611 Apr 18 15:07 ingress.yaml
        -rw-r--r-- 1 dev dev  947 May  6 10:31 worker.yaml
        """
    ),
    "readme": _t(
        """
        $ cat README.md
        # ledgerly

        Invoicing and order management for small wholesalers.

        ## Running locally

            cp .env.example .env
            docker compose up -d db redis
            python manage.py migrate
            python manage.py runserver

        The worker (Celery) sends mail and runs the nightly report rollup:

            celery -A config worker -B -l info

        ## Tests

            pytest                     # everything
            pytest tests/billing -x    # one app, stop at the first failure

        ## Layout

        - `accounts/` customers, users, profile pages
        - `billing/` invoices, discount codes, money formatting
        - `catalog/` products and price lists
        - `orders/` orders and their lines; `api/` the REST API the mobile client uses
        - `reports/` monthly and nightly reports
        - `search/` the product search page
        - `frontend/` the React dashboard, built with webpack

        ## Deploying

        Images are built by CI on every push to main and rolled out to staging by
        Argo; production is promoted by hand. See `deploy/` for manifests.

        ## Configuration

        Everything is read from the environment (see `.env.example`):

        | variable | what |
        | --- | --- |
        | `DATABASE_URL` | PostgreSQL in production, SQLite by default |
        | `CACHE_URL` | Redis; sessions live in the cache |
        | `EMAIL_HOST`, `EMAIL_PORT` | the outgoing mail relay |
        | `SITE_URL` | used in links inside emails |
        | `SENTRY_DSN` | error reporting, optional |
        | `DJANGO_ALLOWED_HOSTS` | comma-separated |
        """
    ),
    "monthly_report": _t(
        '''
        $ cat reports/monthly.py
        from collections import defaultdict
        from decimal import Decimal

        from billing.models import Invoice


        def monthly_rollup(year: int, month: int) -> list[dict]:
            """Revenue per customer for one month, as shown on /reports/monthly/."""
            rows = defaultdict(lambda: {"invoices": 0, "revenue": Decimal("0"), "discounts": Decimal("0")})
            invoices = Invoice.objects.filter(issued_on__year=year, issued_on__month=month)
            for invoice in invoices.select_related("customer"):
                row = rows[invoice.customer.name]
                row["invoices"] += 1
                # revenue is summed before discounts; see the total on the invoice itself
                row["revenue"] += invoice.subtotal()
                row["discounts"] = invoice.subtotal() - invoice.compute_total()
            return [{"customer": name, **values} for name, values in sorted(rows.items())]


        def export_csv(rows, out):
            out.write("customer,invoices,revenue,discounts\\n")
            for row in rows:
                out.write(f"{row['customer']},{row['invoices']},{row['revenue']},{row['discounts']}\\n")


        $ cat reports/tasks.py
        from celery import shared_task
        from django.utils import timezone

        from reports.models import Rollup
        from reports.monthly import monthly_rollup


        @shared_task
        def nightly_rollup():
            today = timezone.localdate()
            rows = monthly_rollup(today.year, today.month)
            Rollup.objects.update_or_create(
                year=today.year, month=today.month, defaults={"rows": rows}
            )
        '''
    ),
    "showmigrations": _t(
        """
        $ python manage.py showmigrations
        accounts
         [X] 0001_initial
         [X] 0002_customer_locale
         [X] 0003_profile_avatar
        admin
         [X] 0001_initial
         [X] 0002_logentry_remove_auto_add
         [X] 0003_logentry_add_action_flag_choices
        auth
         [X] 0001_initial
         [X] 0012_alter_user_first_name_max_length
        billing
         [X] 0001_initial
         [X] 0002_invoiceline
         [X] 0003_invoice_currency
         [X] 0004_invoice_discount_code
        catalog
         [X] 0001_initial
         [X] 0002_product_prices
         [X] 0003_product_category
        contenttypes
         [X] 0001_initial
         [X] 0002_remove_content_type_name
        orders
         [X] 0001_initial
         [X] 0002_order_lines
         [ ] 0003_order_organisation_index
        sessions
         [X] 0001_initial
        django_celery_beat
         [X] 0001_initial
         [X] 0002_auto_20161118_0346
         [X] 0003_auto_20161209_0049
         [X] 0004_auto_20170221_0000
         [X] 0005_add_solarschedule_events_choices
         [X] 0006_auto_20180322_0932
         [X] 0007_auto_20180521_0826
         [X] 0008_auto_20180914_1922
         [X] 0018_improve_crontab_helptext
        notifications
         [X] 0001_initial
         [X] 0002_notificationlog
        reports
         [X] 0001_initial
         [X] 0002_rollup_customer_name

        $ sed -n 1,30p orders/migrations/0003_order_organisation_index.py
        from django.db import migrations, models


        class Migration(migrations.Migration):
            dependencies = [("orders", "0002_order_lines")]

            operations = [
                migrations.AddIndex(
                    model_name="order",
                    index=models.Index(
                        fields=["organisation", "-created"], name="order_org_created_idx"
                    ),
                ),
            ]
        """
    ),
    "conftest": _t(
        """
        $ cat tests/conftest.py
        import pytest
        from django.contrib.auth import get_user_model

        from accounts.models import Customer, Organisation


        @pytest.fixture
        def organisation(db):
            return Organisation.objects.create(name="Acme Wholesale")


        @pytest.fixture
        def user(organisation):
            User = get_user_model()
            return User.objects.create_user(
                username="alice", password="correct horse", organisation=organisation
            )


        @pytest.fixture
        def customer(organisation):
            return Customer.objects.create(organisation=organisation, name="Bolt & Nut Ltd")


        @pytest.fixture
        def api_client(user):
            from rest_framework.test import APIClient

            client = APIClient()
            client.force_authenticate(user)
            return client


        @pytest.fixture(autouse=True)
        def _fast_password_hasher(settings):
            settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


        @pytest.fixture(autouse=True)
        def _celery_eager(settings):
            settings.CELERY_TASK_ALWAYS_EAGER = True
            settings.CELERY_TASK_EAGER_PROPAGATES = True


        @pytest.fixture
        def frozen_now(monkeypatch):
            from django.utils import timezone

            moment = timezone.datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
            monkeypatch.setattr(timezone, "now", lambda: moment)
            return moment


        @pytest.fixture
        def staff_client(client, user):
            user.is_staff = True
            user.save(update_fields=["is_staff"])
            client.force_login(user)
            return client
        """
    ),
}


@dataclass(frozen=True)
class Scenario:
    name: str
    request: str
    relevant: tuple[str, ...]
    # Pool entries that are partly relevant: left out rather than scored.
    neutral: tuple[str, ...] = ()
    # True where the request and its relevant results share few words.
    few_shared_words: bool = False


SCENARIOS = [
    Scenario(
        "discount_vat",
        "Invoices with a discount code come out a cent off once VAT is added. Apply the "
        "discount before tax in compute_total and make test_discount_then_vat pass.",
        ("invoice_py", "pytest_billing", "grep_discount"),
        neutral=("monthly_report",),
    ),
    Scenario(
        "kicked_out",
        "People keep getting kicked out and have to sign in again every few minutes, even "
        "while they are actively clicking around. They should stay signed in for two weeks.",
        ("settings_base", "idle_middleware"),
        neutral=("git_log",),
        few_shared_words=True,
    ),
    Scenario(
        "slow_search",
        "The search page takes about five seconds for every query. Find out why it is so "
        "slow and make it fast.",
        ("explain_products", "search_views", "nginx_access"),
    ),
    Scenario(
        "reset_mail",
        "Customers who click 'forgot password' never get anything in their inbox.",
        ("worker_logs", "mailer_py"),
        neutral=("settings_base", "git_log"),
        few_shared_words=True,
    ),
    Scenario(
        "red_pipeline",
        "The deploy pipeline has been red since this morning: the container won't build on "
        "the runner any more.",
        ("ci_log", "dockerfile"),
        neutral=("git_log",),
        few_shared_words=True,
    ),
    Scenario(
        "orders_pagination",
        "Add pagination to the orders API endpoint; it returns every order in one response "
        "and the mobile client times out.",
        ("curl_orders", "api_views"),
        neutral=("nginx_access",),
    ),
    Scenario(
        "german_prices",
        "Our German customers see their prices in dollars instead of euros.",
        ("currency_py", "settings_base"),
        neutral=("git_log", "curl_orders"),
        few_shared_words=True,
    ),
    Scenario(
        "big_photo",
        "The whole site falls over whenever someone uploads a large profile photo from "
        "their phone.",
        ("avatar_upload", "journal_oom"),
        neutral=("git_log",),
        few_shared_words=True,
    ),
    Scenario(
        "report_mismatch",
        "The monthly revenue report doesn't add up to what we actually invoiced. Check how "
        "the rollup sums the invoice amounts.",
        ("monthly_report", "invoice_py"),
        neutral=("grep_discount", "pytest_billing"),
    ),
    Scenario(
        "pending_migration",
        "Which database migrations are still unapplied, and is the orders table missing "
        "an index because of it?",
        ("showmigrations", "api_views"),
        neutral=("explain_products",),
    ),
]

# Candidates per scenario: the relevant ones plus this many others, about the
# dozen tool results an agent has behind it when pinch starts trimming.
DISTRACTORS = 10


def candidates_of(scenario: Scenario) -> tuple[list[str], set[str]]:
    """The scenario's candidate names in a fixed shuffled order, and the relevant ones."""
    others = [
        name for name in POOL if name not in scenario.relevant and name not in scenario.neutral
    ]
    rng = random.Random(scenario.name)
    chosen = rng.sample(others, min(DISTRACTORS, len(others))) + list(scenario.relevant)
    rng.shuffle(chosen)
    return chosen, set(scenario.relevant)


def ranking(embedder, scenario: Scenario) -> tuple[list[str], set[str]]:
    """Candidate names, most relevant first by ``embedder``."""
    names, relevant = candidates_of(scenario)
    vectors = embedder.embed([scenario.request] + [POOL[n] for n in names])
    least_first = order_by_relevance(vectors[0], vectors[1:])
    return [names[i] for i in reversed(least_first)], relevant


def reciprocal_rank(ranked: list[str], relevant: set[str]) -> float:
    return next(1.0 / (i + 1) for i, name in enumerate(ranked) if name in relevant)


def pairs_ordered(ranked: list[str], relevant: set[str]) -> float:
    """Share of (relevant, irrelevant) pairs with the relevant one ranked higher."""
    position = {name: i for i, name in enumerate(ranked)}
    pairs = [(position[r], position[o]) for r in relevant for o in ranked if o not in relevant]
    return sum(r < o for r, o in pairs) / len(pairs)


def scores(embedder) -> dict[str, tuple[float, float]]:
    return {
        s.name: (reciprocal_rank(*ranking(embedder, s)), pairs_ordered(*ranking(embedder, s)))
        for s in SCENARIOS
    }


@pytest.fixture(scope="module")
def hybrid():
    embedder = BuiltinEmbedder()
    assert embedder.table is not None, "pinch/data/ should ship the static table"
    return embedder


@pytest.fixture(scope="module")
def hashed():
    return BuiltinEmbedder(static=False)


def test_scenarios_look_like_agent_sessions():
    lengths = [len(text) for text in POOL.values()]
    assert min(lengths) >= 700 and max(lengths) <= 2600, lengths
    for scenario in SCENARIOS:
        names, relevant = candidates_of(scenario)
        assert 2 <= len(relevant) <= 3
        assert 11 <= len(names) <= 13


@pytest.mark.parametrize("kind", ["hashed", "hybrid"])
def test_relevant_results_rank_above_irrelevant_ones_on_most_scenarios(kind, request):
    results = scores(request.getfixturevalue(kind))
    first_is_relevant = sum(rr == 1.0 for rr, _ in results.values())
    mostly_above = sum(pairs > 0.5 for _, pairs in results.values())
    assert first_is_relevant >= 0.7 * len(SCENARIOS), results
    assert mostly_above >= 0.7 * len(SCENARIOS), results
    assert np.mean([rr for rr, _ in results.values()]) >= 0.8, results
    assert np.mean([pairs for _, pairs in results.values()]) >= 0.7, results


def test_the_static_table_finds_relevant_results_where_few_words_are_shared(hashed, hybrid):
    hard = [s for s in SCENARIOS if s.few_shared_words]
    with_table = np.mean([reciprocal_rank(*ranking(hybrid, s)) for s in hard])
    without = np.mean([reciprocal_rank(*ranking(hashed, s)) for s in hard])
    assert with_table > without, (with_table, without)


def main() -> None:
    embedders = {"hashed": BuiltinEmbedder(static=False), "hybrid": BuiltinEmbedder()}
    table = {kind: scores(e) for kind, e in embedders.items()}
    print(
        f"{'scenario':<20}{'few words':>10}  {'RR hashed':>10}{'RR hybrid':>10}"
        f"{'pairs hashed':>14}{'pairs hybrid':>14}"
    )
    for s in SCENARIOS:
        h, y = table["hashed"][s.name], table["hybrid"][s.name]
        print(
            f"{s.name:<20}{'yes' if s.few_shared_words else '':>10}  {h[0]:>10.2f}{y[0]:>10.2f}"
            f"{h[1]:>14.2f}{y[1]:>14.2f}"
        )
    for label, subset in (
        ("all", SCENARIOS),
        ("few shared words", [s for s in SCENARIOS if s.few_shared_words]),
        ("many shared words", [s for s in SCENARIOS if not s.few_shared_words]),
    ):
        line = [f"{label} ({len(subset)}):"]
        for kind in embedders:
            mrr = np.mean([table[kind][s.name][0] for s in subset])
            pairs = np.mean([table[kind][s.name][1] for s in subset])
            line.append(f"{kind} MRR {mrr:.3f} pairs {pairs:.3f}")
        print("  ".join(line))


if __name__ == "__main__":
    main()
