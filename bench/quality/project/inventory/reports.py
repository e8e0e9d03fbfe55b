"""Reports over the catalog and the stock: valuation, what to reorder, a text table."""

from __future__ import annotations

from dataclasses import dataclass

from inventory.catalog import Catalog
from inventory.money import Money, total
from inventory.stock import StockLedger


@dataclass(frozen=True)
class ReorderLine:
    sku: str
    name: str
    available: int
    reorder_level: int

    @property
    def shortfall(self) -> int:
        return max(self.reorder_level - self.available, 0)


def valuation(catalog: Catalog, stock: StockLedger) -> Money:
    """What the stock on hand is worth at catalog prices (discontinued products included)."""
    return total((product.price.times(stock.on_hand(product.sku)) for product in catalog), "EUR")


def to_reorder(catalog: Catalog, stock: StockLedger) -> list[ReorderLine]:
    """Active products whose available stock is at or below their reorder level."""
    lines = []
    for product in catalog.active():
        available = stock.available(product.sku)
        if product.reorder_level and available <= product.reorder_level:
            lines.append(ReorderLine(product.sku, product.name, available, product.reorder_level))
    return sorted(lines, key=lambda line: (-line.shortfall, line.sku))


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain-text table: columns as wide as their widest cell, numbers right-aligned."""
    everything = [header, *rows]
    widths = [max(len(row[i]) for row in everything) for i in range(len(header))]

    def cell(text: str, width: int) -> str:
        numeric = text.replace(",", "").replace(".", "").lstrip("-").isdigit()
        return text.rjust(width) if numeric else text.ljust(width)

    lines = ["  ".join(cell(c, w) for c, w in zip(row, widths)).rstrip() for row in everything]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def stock_report(catalog: Catalog, stock: StockLedger) -> str:
    rows = [
        [
            product.sku,
            product.name,
            str(stock.on_hand(product.sku)),
            str(stock.reserved(product.sku)),
            str(stock.available(product.sku)),
            product.price.times(stock.on_hand(product.sku)).format(),
        ]
        for product in catalog
    ]
    return table(rows, ["sku", "name", "on hand", "reserved", "available", "value"])
