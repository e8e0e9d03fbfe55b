"""Amounts of money as integer cents, so that sums never drift.

Every amount carries its currency; adding two currencies is an error rather
than a silent conversion. Division is only offered as ``allocate``, which
splits an amount into parts that add up to it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

CENTS = 100


class CurrencyMismatch(ValueError):
    """Two amounts in different currencies were combined."""


@dataclass(frozen=True, order=True)
class Money:
    cents: int
    currency: str = "EUR"

    @classmethod
    def of(cls, amount: str | int | float, currency: str = "EUR") -> Money:
        """Money from a decimal amount such as ``"12.30"`` or ``12``."""
        text = str(amount).strip()
        negative = text.startswith("-")
        if negative:
            text = text[1:]
        whole, _, fraction = text.partition(".")
        fraction = (fraction + "00")[:2]
        cents = int(whole or "0") * CENTS + int(fraction)
        return cls(-cents if negative else cents, currency)

    @classmethod
    def zero(cls, currency: str = "EUR") -> Money:
        return cls(0, currency)

    def _same(self, other: Money) -> None:
        if not isinstance(other, Money):
            raise TypeError(f"cannot combine Money with {type(other).__name__}")
        if other.currency != self.currency:
            raise CurrencyMismatch(f"{self.currency} and {other.currency}")

    def __add__(self, other: Money) -> Money:
        self._same(other)
        return Money(self.cents + other.cents, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._same(other)
        return Money(self.cents - other.cents, self.currency)

    def __neg__(self) -> Money:
        return Money(-self.cents, self.currency)

    def times(self, quantity: int) -> Money:
        """This amount ``quantity`` times (a line of an order)."""
        return Money(self.cents * quantity, self.currency)

    def percent(self, rate: float) -> Money:
        """``rate`` percent of this amount, rounded half away from zero to the cent."""
        exact = self.cents * rate / 100
        rounded = int(abs(exact) + 0.5)
        return Money(rounded if exact >= 0 else -rounded, self.currency)

    def allocate(self, parts: int) -> list[Money]:
        """Split into ``parts`` amounts that differ by at most a cent and add up to this one."""
        if parts < 1:
            raise ValueError("parts must be at least 1")
        base, remainder = divmod(self.cents, parts)
        return [Money(base + (1 if i < remainder else 0), self.currency) for i in range(parts)]

    def is_zero(self) -> bool:
        return self.cents == 0

    def format(self) -> str:
        """``EUR 1,234.50``; negative amounts as ``EUR -1,234.50``."""
        sign = "-" if self.cents < 0 else ""
        whole, cents = divmod(abs(self.cents), CENTS)
        return f"{self.currency} {sign}{whole:,}.{cents:02d}"

    def __str__(self) -> str:
        return self.format()


def total(amounts, currency: str = "EUR") -> Money:
    """The sum of ``amounts`` (zero in ``currency`` when there are none)."""
    result = Money.zero(currency)
    for amount in amounts:
        result = result + amount
    return result
