"""Orders: lines of products at catalog prices, discounts, tax, and their totals.

The order of operations is the shop's policy and is tested: line totals,
then the order discount (a percentage of the subtotal), then tax on the
discounted amount, each rounded to the cent where it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inventory.catalog import Catalog
from inventory.money import Money, total
from inventory.stock import StockLedger

DEFAULT_TAX_RATE = 21.0  # percent


@dataclass(frozen=True)
class OrderLine:
    sku: str
    quantity: int
    unit_price: Money

    @property
    def amount(self) -> Money:
        return self.unit_price.times(self.quantity)


@dataclass
class Order:
    number: str
    lines: list[OrderLine] = field(default_factory=list)
    discount_percent: float = 0.0
    tax_rate: float = DEFAULT_TAX_RATE
    status: str = "open"

    def add(self, catalog: Catalog, sku: str, quantity: int) -> OrderLine:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        product = catalog.get(sku)
        if product.discontinued:
            raise ValueError(f"{product.sku} is discontinued")
        for i, line in enumerate(self.lines):
            if line.sku == product.sku:
                merged = OrderLine(product.sku, line.quantity + quantity, line.unit_price)
                self.lines[i] = merged
                return merged
        line = OrderLine(product.sku, quantity, product.price)
        self.lines.append(line)
        return line

    def remove(self, sku: str) -> None:
        sku = sku.strip().upper()
        self.lines = [line for line in self.lines if line.sku != sku]

    @property
    def currency(self) -> str:
        return self.lines[0].unit_price.currency if self.lines else "EUR"

    def subtotal(self) -> Money:
        return total((line.amount for line in self.lines), self.currency)

    def discount(self) -> Money:
        return self.subtotal().percent(self.discount_percent)

    def taxable(self) -> Money:
        return self.subtotal() - self.discount()

    def tax(self) -> Money:
        return self.taxable().percent(self.tax_rate)

    def total(self) -> Money:
        return self.taxable() + self.tax()

    def quantity(self) -> int:
        return sum(line.quantity for line in self.lines)

    def place(self, stock: StockLedger) -> None:
        """Reserve every line's stock, all or nothing."""
        if self.status != "open":
            raise ValueError(f"order {self.number} is {self.status}")
        done = []
        try:
            for line in self.lines:
                stock.reserve(line.sku, line.quantity, note=self.number)
                done.append(line)
        except Exception:
            for line in done:
                stock.release(line.sku, line.quantity, note=f"{self.number} rollback")
            raise
        self.status = "placed"

    def ship(self, stock: StockLedger) -> None:
        if self.status != "placed":
            raise ValueError(f"order {self.number} is {self.status}, not placed")
        for line in self.lines:
            stock.ship(line.sku, line.quantity, note=self.number, reserved=True)
        self.status = "shipped"

    def cancel(self, stock: StockLedger) -> None:
        if self.status == "placed":
            for line in self.lines:
                stock.release(line.sku, line.quantity, note=f"{self.number} cancelled")
        elif self.status != "open":
            raise ValueError(f"order {self.number} is {self.status}")
        self.status = "cancelled"
