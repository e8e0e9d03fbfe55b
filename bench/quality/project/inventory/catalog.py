"""The products a shop sells, by SKU, with their prices and reorder levels."""

from __future__ import annotations

from dataclasses import dataclass, field

from inventory.money import Money


class UnknownProduct(KeyError):
    """No product has that SKU."""


@dataclass
class Product:
    sku: str
    name: str
    price: Money
    reorder_level: int = 0
    tags: set[str] = field(default_factory=set)
    discontinued: bool = False

    def __post_init__(self) -> None:
        if not self.sku or not self.sku.strip():
            raise ValueError("a product needs a SKU")
        self.sku = self.sku.strip().upper()
        if self.reorder_level < 0:
            raise ValueError("reorder_level cannot be negative")


class Catalog:
    """Products by SKU. SKUs are case-insensitive: stored upper-case."""

    def __init__(self, products=()):
        self._products: dict[str, Product] = {}
        for product in products:
            self.add(product)

    def add(self, product: Product) -> None:
        if product.sku in self._products:
            raise ValueError(f"duplicate SKU {product.sku}")
        self._products[product.sku] = product

    def get(self, sku: str) -> Product:
        try:
            return self._products[sku.strip().upper()]
        except KeyError:
            raise UnknownProduct(sku) from None

    def __contains__(self, sku: str) -> bool:
        return sku.strip().upper() in self._products

    def __len__(self) -> int:
        return len(self._products)

    def __iter__(self):
        return iter(sorted(self._products.values(), key=lambda p: p.sku))

    def price_of(self, sku: str) -> Money:
        return self.get(sku).price

    def search(self, text: str) -> list[Product]:
        """Products whose name or a tag contains ``text``, ignoring case, by SKU."""
        needle = text.strip().lower()
        if not needle:
            return []
        return [
            product
            for product in self
            if needle in product.name.lower() or any(needle in tag.lower() for tag in product.tags)
        ]

    def active(self) -> list[Product]:
        """Products still sold."""
        return [product for product in self if not product.discontinued]

    def discontinue(self, sku: str) -> None:
        self.get(sku).discontinued = True

    def tagged(self, tag: str) -> list[Product]:
        return [product for product in self if tag in product.tags]
