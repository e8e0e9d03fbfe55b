"""The library's own tests: they pass on the shipped code."""

import unittest

from inventory.catalog import Catalog, Product, UnknownProduct
from inventory.money import CurrencyMismatch, Money, total
from inventory.orders import Order
from inventory.reports import stock_report, to_reorder, valuation
from inventory.stock import InsufficientStock, StockLedger


def shop():
    catalog = Catalog(
        [
            Product("mug-1", "Blue mug", Money.of("8.50"), reorder_level=5, tags={"kitchen"}),
            Product("tea-2", "Green tea", Money.of("4.20"), reorder_level=10, tags={"food"}),
            Product("pot-3", "Tea pot", Money.of("31.00"), reorder_level=2, tags={"kitchen"}),
        ]
    )
    stock = StockLedger()
    stock.receive("MUG-1", 20)
    stock.receive("TEA-2", 8)
    stock.receive("POT-3", 3)
    return catalog, stock


class MoneyTests(unittest.TestCase):
    def test_parsing_and_formatting(self):
        self.assertEqual(Money.of("12.3").cents, 1230)
        self.assertEqual(Money.of("1234.5").format(), "EUR 1,234.50")

    def test_sums_refuse_mixed_currencies(self):
        with self.assertRaises(CurrencyMismatch):
            Money.of(1) + Money.of(1, "USD")

    def test_total_of_nothing_is_zero(self):
        self.assertTrue(total([]).is_zero())

    def test_percent_rounds_half_away_from_zero(self):
        self.assertEqual(Money(250).percent(1).cents, 3)


class CatalogTests(unittest.TestCase):
    def test_skus_ignore_case(self):
        catalog, _ = shop()
        self.assertEqual(catalog.get("Mug-1").name, "Blue mug")
        with self.assertRaises(UnknownProduct):
            catalog.get("nope")

    def test_search_by_tag(self):
        catalog, _ = shop()
        self.assertEqual([p.sku for p in catalog.search("kitchen")], ["MUG-1", "POT-3"])


class StockTests(unittest.TestCase):
    def test_shipping_more_than_available_fails(self):
        _, stock = shop()
        with self.assertRaises(InsufficientStock):
            stock.ship("POT-3", 4)

    def test_adjust_records_the_difference(self):
        _, stock = shop()
        self.assertEqual(stock.adjust("TEA-2", 6).quantity, -2)
        self.assertEqual(stock.on_hand("TEA-2"), 6)


class OrderTests(unittest.TestCase):
    def test_totals_without_discount(self):
        catalog, _ = shop()
        order = Order("A1")
        order.add(catalog, "mug-1", 2)
        self.assertEqual(order.subtotal().cents, 1700)
        self.assertEqual(order.tax().cents, 357)
        self.assertEqual(order.total().cents, 2057)

    def test_place_and_ship(self):
        catalog, stock = shop()
        order = Order("A2")
        order.add(catalog, "pot-3", 2)
        order.place(stock)
        order.ship(stock)
        self.assertEqual(stock.on_hand("POT-3"), 1)
        self.assertEqual(order.status, "shipped")


class ReportTests(unittest.TestCase):
    def test_valuation(self):
        catalog, stock = shop()
        self.assertEqual(valuation(catalog, stock).format(), "EUR 296.60")

    def test_report_lists_every_product(self):
        catalog, stock = shop()
        self.assertEqual(len(stock_report(catalog, stock).splitlines()), 5)

    def test_reorder_lists_short_products(self):
        catalog, stock = shop()
        self.assertEqual([line.sku for line in to_reorder(catalog, stock)], ["TEA-2"])


if __name__ == "__main__":
    unittest.main()
