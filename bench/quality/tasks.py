"""The coding tasks: one bug each, put into the shipped project (``project/``), and a failing test.

Every task starts from the same small library (``project/inventory``, about
20,000 characters with its tests, so an agent that reads what it needs is
over pinch's default budget of 8,000 tokens within a few turns), breaks one
thing in it (or three), and adds a test that each break fails. Over the
budget is not enough for pinch to act: at the defaults a prune step is taken
when the session has run long enough to repay it (measured: about 25 turns
on this project), so the three-bug tasks are there to run that long. The agent is told which
tests fail and must fix the code, not the test. Solved: the whole suite
passes afterwards (``python -m unittest discover -s tests``), so a fix that
breaks something else does not count.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent / "project"
TEST_COMMAND = ["-m", "unittest", "discover", "-s", "tests"]


@dataclass(frozen=True)
class Bug:
    name: str
    file: str  # where the bug goes
    correct: str  # the shipped text ...
    broken: str  # ... replaced by this
    test: str  # the failing test's body (a unittest.TestCase method's lines)

    @property
    def test_id(self) -> str:
        return f"tests/test_task.py::TaskTests::test_{self.name.replace('-', '_')}"


@dataclass(frozen=True)
class Task:
    """One bug, or several at once (a longer session: where pinch's steps start to pay)."""

    name: str
    bugs: tuple[Bug, ...]

    def prompt(self) -> str:
        failing = ", ".join(bug.test_id for bug in self.bugs)
        which = "The test" if len(self.bugs) == 1 else "The tests"
        return (
            f"The repository in your working directory is a small Python library. {which} "
            f"{failing} fail. Find the bugs in the inventory package and fix them; do not "
            f"change the tests. Run the tests with: python -m unittest discover -s tests. "
            f"When every test passes, reply with a short summary of the fix."
        )

    def set_up(self, workspace: Path) -> None:
        """Copy the project into ``workspace``, break it, add the failing tests."""
        shutil.copytree(PROJECT, workspace, dirs_exist_ok=True)
        methods = []
        for bug in self.bugs:
            target = workspace / bug.file
            text = target.read_text()
            if text.count(bug.correct) != 1:
                raise ValueError(f"bug {bug.name}: the text to break is not in {bug.file} once")
            target.write_text(text.replace(bug.correct, bug.broken))
            body = "\n".join("        " + line for line in bug.test.strip().splitlines())
            methods.append(f"    def test_{bug.name.replace('-', '_')}(self):\n{body}\n")
        (workspace / "tests" / "test_task.py").write_text(TEST_HEADER + "\n".join(methods))


TEST_HEADER = '''"""The test the task is about."""

import unittest

from inventory.catalog import Catalog, Product
from inventory.money import Money
from inventory.orders import Order
from inventory.reports import to_reorder
from inventory.stock import InsufficientStock, StockLedger


class TaskTests(unittest.TestCase):
'''

BUGS = (
    Bug(
        "allocate-keeps-every-cent",
        "inventory/money.py",
        "Money(base + (1 if i < remainder else 0), self.currency)",
        "Money(base, self.currency)",
        """
parts = Money(1000).allocate(3)
self.assertEqual([p.cents for p in parts], [334, 333, 333])
""",
    ),
    Bug(
        "reserved-stock-is-not-available",
        "inventory/stock.py",
        "return self._on_hand[sku] - self._reserved[sku]",
        "return self._on_hand[sku]",
        """
stock = StockLedger()
stock.receive("A", 8)
stock.reserve("A", 5)
self.assertEqual(stock.available("A"), 3)
with self.assertRaises(InsufficientStock):
    stock.reserve("A", 4)
""",
    ),
    Bug(
        "tax-on-the-discounted-amount",
        "inventory/orders.py",
        "return self.taxable().percent(self.tax_rate)",
        "return self.subtotal().percent(self.tax_rate)",
        """
catalog = Catalog([Product("X", "Thing", Money.of(100))])
order = Order("T1", discount_percent=10)
order.add(catalog, "x", 1)
self.assertEqual(order.tax().format(), "EUR 18.90")
self.assertEqual(order.total().format(), "EUR 108.90")
""",
    ),
    Bug(
        "search-ignores-case",
        "inventory/catalog.py",
        "needle = text.strip().lower()",
        "needle = text.strip()",
        """
catalog = Catalog([Product("M", "Blue mug", Money.of(8), tags={"kitchen"})])
self.assertEqual([p.sku for p in catalog.search("MUG")], ["M"])
""",
    ),
    Bug(
        "reorder-at-the-level",
        "inventory/reports.py",
        "available <= product.reorder_level",
        "available < product.reorder_level",
        """
catalog = Catalog([Product("P", "Pot", Money.of(31), reorder_level=3)])
stock = StockLedger()
stock.receive("P", 3)
self.assertEqual([line.sku for line in to_reorder(catalog, stock)], ["P"])
""",
    ),
    Bug(
        "negative-amounts-format",
        "inventory/money.py",
        "whole, cents = divmod(abs(self.cents), CENTS)",
        "whole, cents = divmod(self.cents, CENTS)",
        """
self.assertEqual(Money(-150).format(), "EUR -1.50")
""",
    ),
    Bug(
        "failed-order-releases-its-reservations",
        "inventory/orders.py",
        "                done.append(line)\n",
        "",
        """
catalog = Catalog([Product("A", "Apple", Money.of(1)), Product("B", "Pear", Money.of(1))])
stock = StockLedger()
stock.receive("A", 5)
stock.receive("B", 1)
order = Order("T7")
order.add(catalog, "a", 2)
order.add(catalog, "b", 2)
with self.assertRaises(InsufficientStock):
    order.place(stock)
self.assertEqual(stock.available("A"), 5)
""",
    ),
)

# Each bug alone, then three at once (sessions long enough for pinch's steps at the defaults).
TASKS = (
    *(Task(bug.name, (bug,)) for bug in BUGS),
    Task("three-money-and-stock-bugs", (BUGS[0], BUGS[1], BUGS[5])),
    Task("three-order-and-report-bugs", (BUGS[2], BUGS[4], BUGS[6])),
    Task("three-catalog-and-order-bugs", (BUGS[3], BUGS[2], BUGS[1])),
)
