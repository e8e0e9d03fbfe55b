"""Answering the recall calls of one request: the text the model gets back, and the tally.

A recall never breaks a request: a handle the store does not hold (never
stored, pushed out by a bound, expired), or a store that cannot be read, is
answered with the store's plain sentence saying which (routing.recall.store),
and the request goes on. The tally (calls answered, their tokens)
goes on the request's outcome, hence the decision row.
"""

import time

from pinch import estimate_tokens
from routing.recall.excerpt import excerpt
from routing.recall.store import lookup
from routing.recall.tool import read_arguments


class Recalls:
    """The recall calls of one upstream attempt: answered up to the config's limit, counted."""

    def __init__(self, plan, outcome):
        self.plan = plan
        self.conversation = plan.conversation or ""
        self.pending = plan.pinch.recallable if plan.pinch is not None else {}
        self.limit = plan.config.pinch.recall.max_per_request
        self.outcome = outcome
        # Every row this request can recall from was queued before now (routing.recall.store).
        self.asked_at = time.monotonic()

    def restart(self, offered: bool) -> None:
        """A new attempt (a retry, a fallback): its calls alone are counted; None when the
        tool was not offered (a request without tools)."""
        self.outcome.recalls = 0 if offered else None
        self.outcome.recalled_tokens = 0 if offered else None
        self.outcome.recalled_sizes = []

    @property
    def spent(self) -> bool:
        """No more recalls in this request: the next answer goes to the client as it is."""
        return (self.outcome.recalls or 0) >= self.limit

    def answer(self, raw_arguments) -> str:
        """The tool result for one call (its arguments as the upstream sent them)."""
        self.outcome.recalls = (self.outcome.recalls or 0) + 1
        arguments = read_arguments(raw_arguments)
        if arguments is None:
            return 'router_recall needs the id named in a shortened result, e.g. {"id": "r12"}.'
        recall = lookup(self.conversation, arguments.handle, self.pending, self.asked_at)
        if recall.text is None:
            return recall.answer
        # A result the model asked for mattered: its row is marked, and pinch learns
        # from it (docs/pinch.md, "What a recall teaches pinch").
        self.outcome.recalled_handles.add(recall.handle)
        text = recall.text
        part = excerpt(text, arguments.from_line, arguments.to_line, arguments.pattern)
        size = estimate_tokens(part)
        self.outcome.recalled_sizes.append(size)
        # Priced only when a recall is answered: most requests make none.
        self.outcome.recall_prices = self.plan.config.cache_prices(self.plan.model)
        self.outcome.recalled_tokens = (self.outcome.recalled_tokens or 0) + size
        return part


def add_usage(total: dict | None, usage) -> dict | None:
    """Two usage objects summed, in whatever protocol's shape: counts added, nested ones too.

    What is not a count (a service tier, a cache-miss reason) is the later call's.
    """
    if not isinstance(usage, dict):
        return total
    if total is None:
        return dict(usage)
    summed = dict(total)
    for name, value in usage.items():
        before = summed.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and isinstance(before, int):
            summed[name] = before + value
        elif isinstance(value, dict) and isinstance(before, dict):
            summed[name] = add_usage(before, value)
        elif value is not None:
            summed[name] = value
    return summed
