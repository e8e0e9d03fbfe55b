"""The Pinch savings card's slots: where other features put their figures, in reading order.

The card's own figures are the money: the net saving after the prompt cache
(the headline, coloured by its sign), the conversations it made cheaper and
dearer, then the gross saving and the token counts. Other features add
sections to the card without editing its template: each is a template include
(``templates/metrics/_<feature>.html``) and a context function, listed in
``SLOTS`` below in the order a reader should meet them.

``BESIDE_THE_MONEY`` slots render inside the headline row, next to the net
figure: net savings are never shown without what they cost the agent (issue
20's quality signals), nor without the cache's prediction beside its bill
(issue 22). ``BELOW_THE_MONEY`` slots follow the token figures: savings by
cause (issue 23), budget per key (issue 24), sessions (issue 21).

A context function takes ``(config, window)`` and returns the dict its
template reads as ``slot``; it costs the page its own queries (the dashboard's
query-count test counts them), and a slot that has nothing to show returns
None and is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from metrics.summary import Window
from routing.config import RouterConfig

BESIDE_THE_MONEY = "beside"
BELOW_THE_MONEY = "below"


@dataclass(frozen=True)
class Slot:
    name: str  # the data-slot attribute tests and styles find it by
    template: str
    context: Callable[[RouterConfig, Window], dict | None]
    place: str = BELOW_THE_MONEY


# In reading order. Each feature adds one line at its place (see the module docstring):
# BESIDE_THE_MONEY: issue 20 "quality", then issue 22 "cache".
# BELOW_THE_MONEY: issue 23 "causes", issue 24 "budget", issue 21 "sessions".
SLOTS: tuple[Slot, ...] = ()


def filled_slots(config: RouterConfig, window: Window, slots=None) -> dict[str, list[dict]]:
    """{place: [{"name", "template", "data"}, ...]} for the slots with something to show."""
    placed: dict[str, list[dict]] = {BESIDE_THE_MONEY: [], BELOW_THE_MONEY: []}
    for slot in SLOTS if slots is None else slots:
        data = slot.context(config, window)
        if data is not None:
            placed[slot.place].append({"name": slot.name, "template": slot.template, "data": data})
    return placed
