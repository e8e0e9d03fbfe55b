"""The limit flags createapikey and updateapikey share, and what they ask for as a limits dict."""

from django.core.management.base import CommandError

from routing.limits.settings import LIMIT_FIELDS
from routing.models import BUDGET_PERIODS

UNSET = object()  # a flag not given: the limit stays as it is


def _count(text: str):
    return _parsed(text, int, "a whole number")


def _usd(text: str):
    return _parsed(text, float, "an amount in USD")


def _parsed(text: str, kind, what: str):
    if text.lower() == "none":
        return None  # remove the limit
    try:
        return kind(text)
    except ValueError:
        raise CommandError(f"{text!r} is not {what} (or 'none')") from None


def add_limit_arguments(parser) -> None:
    flags = (
        ("--rpm", "rpm_limit", _count, "requests per minute ('none': no limit)"),
        ("--tpm", "tpm_limit", _count, "prompt tokens per minute, measured after pinch"),
        ("--budget-usd", "budget_usd", _usd, "hard budget per period in USD: refused past it"),
        ("--soft-budget-usd", "soft_budget_usd", _usd, "soft budget: a warning header past it"),
    )
    for flag, field, kind, help_text in flags:
        parser.add_argument(flag, dest=field, type=kind, default=UNSET, help=help_text)
    parser.add_argument(
        "--budget-period",
        dest="budget_period",
        choices=[name for name, _ in BUDGET_PERIODS],
        default=UNSET,
        help="day, week, or month (a month starts on objective.billing_reset_day)",
    )
    parser.add_argument(
        "--budget-fallback",
        dest="budget_fallback",
        action="store_const",
        const=True,
        default=UNSET,
        help="past the soft budget, auto goes to the next cheaper tier",
    )
    parser.add_argument(
        "--no-budget-fallback", dest="budget_fallback", action="store_const", const=False
    )


def limits_from_options(options: dict) -> dict:
    """The limits the flags given set: field -> value (None removes a limit)."""
    return {
        field: options[field] for field in LIMIT_FIELDS if options.get(field, UNSET) is not UNSET
    }
