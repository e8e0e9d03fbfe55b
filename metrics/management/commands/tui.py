"""tui --url URL --token TOKEN: the terminal dashboard (metrics.tui) for a running router."""

import os

from django.core.management.base import BaseCommand, CommandError

from metrics.tui import DEFAULT_INTERVAL, DEFAULT_TIMEOUT, RouterTui

TOKEN_ENV = "ROUTER_TOKEN"  # keeps the key out of shell history and `ps` when preferred


class Command(BaseCommand):
    help = (
        "A terminal dashboard of pinch savings and recent decisions, read over HTTP from "
        "/admin/api/snapshot with a staff API key. Keys: r refresh, q quit."
    )
    requires_system_checks = ()  # an HTTP client: it needs no database and no checks

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the router's base URL")
        parser.add_argument(
            "--token",
            default=os.environ.get(TOKEN_ENV, ""),
            help=f"a staff API key (manage.py createapikey NAME --staff); default ${TOKEN_ENV}",
        )
        parser.add_argument(
            "--interval", type=float, default=DEFAULT_INTERVAL, help="seconds between refreshes"
        )
        parser.add_argument(
            "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds to wait for the router"
        )

    def handle(self, *args, url, token, interval, timeout, **options):
        if not token.strip():
            raise CommandError(
                f"--token is required (or set {TOKEN_ENV}): a staff API key, "
                "made with manage.py createapikey NAME --staff"
            )
        if not url.startswith(("http://", "https://")):
            raise CommandError(f"--url must start with http:// or https://, got {url!r}")
        if interval <= 0 or timeout <= 0:
            raise CommandError("--interval and --timeout must be greater than 0")
        RouterTui(url, token.strip(), interval=interval, timeout=timeout).run()
