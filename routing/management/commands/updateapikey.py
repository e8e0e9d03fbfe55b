"""updateapikey NAME [limits]: change an existing key's budgets and rate limits."""

from django.core.management.base import BaseCommand, CommandError

from routing.limits.settings import LimitsError, key_limits, set_key_limits
from routing.management.limit_options import add_limit_arguments, limits_from_options
from routing.models import ApiKey


class Command(BaseCommand):
    help = (
        "Change an active key's limits (the flags createapikey takes; 'none' removes a limit). "
        "They apply from the key's next request, in every worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the key's name (or its prefix, rk-...)")
        add_limit_arguments(parser)

    def handle(self, *args, name, **options):
        key = self._key(name.strip())
        wanted = limits_from_options(options)
        if not wanted:
            raise CommandError("Nothing to change: give --rpm, --tpm, --budget-usd, ...")
        try:
            changed = set_key_limits(key, wanted)
        except LimitsError as error:
            raise CommandError(str(error)) from None
        now = key_limits(key)
        if not changed:
            self.stdout.write(f"{key}: nothing changed.")
            return
        self.stdout.write(f"{key}: " + ", ".join(f"{field} = {now[field]}" for field in changed))

    def _key(self, name: str) -> ApiKey:
        active = ApiKey.objects.active()
        matches = list(active.filter(name=name)) or list(active.filter(prefix=name))
        if not matches:
            raise CommandError(f"No active API key is named {name!r} (see the admin's key list).")
        if len(matches) > 1:
            raise CommandError(
                f"{len(matches)} active keys are named {name!r}; give the key's prefix instead: "
                + ", ".join(k.prefix for k in matches)
            )
        return matches[0]
