"""Stock on hand per SKU, as a ledger of movements: nothing is overwritten.

Receiving adds, shipping removes, and a reservation holds stock for an order
that has not shipped yet: it is still on hand but no longer available.
Every movement is kept, so the history explains the figures.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

RECEIVE = "receive"
SHIP = "ship"
RESERVE = "reserve"
RELEASE = "release"
ADJUST = "adjust"


class InsufficientStock(ValueError):
    """A shipment or reservation asked for more than is available."""


@dataclass(frozen=True)
class Movement:
    sku: str
    kind: str
    quantity: int
    note: str = ""


class StockLedger:
    def __init__(self):
        self._movements: list[Movement] = []
        self._on_hand: dict[str, int] = defaultdict(int)
        self._reserved: dict[str, int] = defaultdict(int)

    def _record(self, sku: str, kind: str, quantity: int, note: str) -> Movement:
        movement = Movement(sku.strip().upper(), kind, quantity, note)
        self._movements.append(movement)
        return movement

    @staticmethod
    def _positive(quantity: int) -> None:
        if not isinstance(quantity, int) or quantity <= 0:
            raise ValueError(f"quantity must be a positive integer, not {quantity!r}")

    def receive(self, sku: str, quantity: int, note: str = "") -> Movement:
        self._positive(quantity)
        movement = self._record(sku, RECEIVE, quantity, note)
        self._on_hand[movement.sku] += quantity
        return movement

    def reserve(self, sku: str, quantity: int, note: str = "") -> Movement:
        self._positive(quantity)
        sku = sku.strip().upper()
        if quantity > self.available(sku):
            raise InsufficientStock(f"{sku}: {quantity} asked, {self.available(sku)} available")
        movement = self._record(sku, RESERVE, quantity, note)
        self._reserved[sku] += quantity
        return movement

    def release(self, sku: str, quantity: int, note: str = "") -> Movement:
        """Give back reserved stock (an order was cancelled)."""
        self._positive(quantity)
        sku = sku.strip().upper()
        if quantity > self._reserved[sku]:
            raise ValueError(f"{sku}: only {self._reserved[sku]} reserved")
        movement = self._record(sku, RELEASE, quantity, note)
        self._reserved[sku] -= quantity
        return movement

    def ship(self, sku: str, quantity: int, note: str = "", reserved: bool = False) -> Movement:
        """Send stock out; ``reserved`` ships what an earlier reservation held."""
        self._positive(quantity)
        sku = sku.strip().upper()
        if reserved:
            if quantity > self._reserved[sku]:
                raise InsufficientStock(f"{sku}: only {self._reserved[sku]} reserved")
            self._reserved[sku] -= quantity
        elif quantity > self.available(sku):
            raise InsufficientStock(f"{sku}: {quantity} asked, {self.available(sku)} available")
        movement = self._record(sku, SHIP, quantity, note)
        self._on_hand[sku] -= quantity
        return movement

    def adjust(self, sku: str, counted: int, note: str = "stock count") -> Movement | None:
        """Set on-hand to what a count found; None when it already matched."""
        sku = sku.strip().upper()
        difference = counted - self._on_hand[sku]
        if difference == 0:
            return None
        movement = self._record(sku, ADJUST, difference, note)
        self._on_hand[sku] = counted
        return movement

    def on_hand(self, sku: str) -> int:
        return self._on_hand[sku.strip().upper()]

    def reserved(self, sku: str) -> int:
        return self._reserved[sku.strip().upper()]

    def available(self, sku: str) -> int:
        """On hand minus reserved: what a new order can take."""
        sku = sku.strip().upper()
        return self._on_hand[sku] - self._reserved[sku]

    def history(self, sku: str | None = None) -> list[Movement]:
        if sku is None:
            return list(self._movements)
        sku = sku.strip().upper()
        return [m for m in self._movements if m.sku == sku]

    def skus(self) -> list[str]:
        return sorted(self._on_hand)
