"""createapikey NAME [limits]: make a router API key; the key is the last line printed."""

from django.core.management.base import BaseCommand, CommandError

from routing.auth import create_api_key
from routing.limits.settings import LimitsError
from routing.management.limit_options import add_limit_arguments, limits_from_options


class Command(BaseCommand):
    help = "Create a router API key. Only its hash is stored: copy the key now."

    def add_arguments(self, parser):
        parser.add_argument("name", help="who or what the key is for")
        parser.add_argument(
            "--staff", action="store_true", help="the key may also read /admin/api/snapshot"
        )
        add_limit_arguments(parser)

    def handle(self, *args, name, staff, **options):
        if not name.strip():
            raise CommandError("NAME must not be empty")
        try:
            key, raw = create_api_key(
                name.strip(), is_staff=staff, limits=limits_from_options(options)
            )
        except LimitsError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"Created API key {key.name!r} (id {key.pk}). It is shown only once:")
        self.stdout.write(raw)
