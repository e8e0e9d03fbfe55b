"""How money and costs read for a person, on every surface (routing.formatting)."""

import pytest

from routing.formatting import format_cost, format_days, format_money, money_tone


@pytest.mark.parametrize(
    "usd, text",
    [
        (1.546629, "$1.55"),
        (-0.121927, "-$0.12"),
        (-0.002654, "-$0.0027"),
        (0.001, "$0.001"),
        (0.1, "$0.10"),
        (0, "$0"),
        (1234.5, "$1,234.50"),
        (4e-7, "≈ $0"),
        (None, "—"),
    ],
)
def test_money_has_its_sign_before_the_dollar_and_two_significant_digits(usd, text):
    assert format_money(usd) == text


@pytest.mark.parametrize(
    "usd, text",
    [(0.054, "$0.0540"), (0.0161, "$0.0161"), (0.00000105, "<$0.0001"), (0, "$0"), (None, "—")],
)
def test_a_column_of_request_costs_has_one_precision(usd, text):
    assert format_cost(usd) == text


@pytest.mark.parametrize(
    "usd, tone", [(0.4, "gain"), (-0.0001, "loss"), (0, "even"), (None, "even")]
)
def test_a_loss_has_its_own_colour(usd, tone):
    assert money_tone(usd) == tone


@pytest.mark.parametrize("days, text", [(1, "the last day"), (30, "the last 30 days")])
def test_a_window_reads_as_a_person_says_it(days, text):
    assert format_days(days) == text
