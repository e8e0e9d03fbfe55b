"""What a replay answers: each request's record, and their sums per session, family and run.

``routing.replay.sessions`` plans the requests and fills the records; this
module only adds them up and prices the sums (``routing.replay.prices``), so
the command's table (``metrics.replay``), the quality signals
(``routing.replay.quality``) and the benches read one set of figures.
A request's cost counts its recall round trips too (``routing.replay.recalls``):
what pinch took out and the agent needed is one call away, and that call is paid.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from routing.replay.prices import CONFIGURED, Prices


class _Priced:
    """The cost of a request (or, being linear in the token split, of a sum of
    requests) under a price model; at the configured prices it is summed as it goes."""

    def cost(self, prices: Prices) -> float:
        """With pinch: the payload sent and the recall round trips it led to."""
        if prices is CONFIGURED:
            return self.configured_cost_usd
        return prices.cost(
            self.cached_tokens + self.recall_cached_tokens,
            self.uncached_tokens + self.recall_uncached_tokens,
        )

    def baseline_cost(self, prices: Prices) -> float:
        if prices is CONFIGURED:
            return self.configured_baseline_cost_usd
        return prices.cost(self.baseline_cached_tokens, self.baseline_uncached_tokens)


@dataclass(frozen=True)
class TurnRecord(_Priced):
    conversation: str
    turn: int
    original_tokens: int
    final_tokens: int
    compressed: list[int]
    capped: list[int]
    relevance_used: bool
    prefix_match: int
    previous_len: int
    # The prompt split for the cache model: "cached" is what the session's
    # previous request also sent first (tool definitions included once there
    # is a previous request), "uncached" the rest; cached + uncached is
    # final_tokens for the payload sent, original_tokens for the baseline.
    cached_tokens: int = 0
    uncached_tokens: int = 0
    baseline_cached_tokens: int = 0
    baseline_uncached_tokens: int = 0
    references: int = 0
    references_kept: int = 0
    references_lost: list[str] = field(default_factory=list)  # sorted; pinch took them out
    # Of those lost, the ones one recall of a result pinch changed brings back, the
    # recalls that takes and their tokens, and the round trips' prompt split (read:
    # the payload again; written: each call and its answer): routing.replay.recalls.
    references_recallable: int = 0
    recalls: int = 0
    recalled_tokens: int = 0
    recall_cached_tokens: int = 0
    recall_uncached_tokens: int = 0
    # Where the router sent it: (model id, tier, route reason); routing.replay.routes prices it.
    route: tuple[str, str, str] = ("", "", "")
    cold: bool = False  # after a gap longer than the cache lifetime
    # The model the request went to, and its cost with pinch (recalls included) and
    # without at that model's configured prices, as the live router bills it
    # (routing.pricing).
    model: str = ""
    configured_cost_usd: float = 0.0
    configured_baseline_cost_usd: float = 0.0

    @property
    def pruned(self) -> bool:
        return bool(self.compressed or self.capped)


@dataclass(frozen=True)
class TurnError:
    conversation: str
    turn: int
    status: int
    message: str


def add_fields(total, part, names) -> None:
    """Add each named field of ``part`` to the field of the same name of ``total``."""
    for name in names:
        setattr(total, name, getattr(total, name) + getattr(part, name))


# The Totals fields that are the sum of the TurnRecord fields of the same name.
_FROM_RECORD = (
    "original_tokens",
    "final_tokens",
    "pruned",
    "relevance_used",
    "cached_tokens",
    "uncached_tokens",
    "baseline_cached_tokens",
    "baseline_uncached_tokens",
    "references",
    "references_kept",
    "references_recallable",
    "recalls",
    "recalled_tokens",
    "recall_cached_tokens",
    "recall_uncached_tokens",
    "configured_cost_usd",
    "configured_baseline_cost_usd",
)


@dataclass
class Totals(_Priced):
    name: str
    family: str = ""
    requests: int = 0
    errors: int = 0
    original_tokens: int = 0
    final_tokens: int = 0
    pruned: int = 0
    relevance_used: int = 0
    prefix_turns: int = 0
    prefix_share_sum: float = 0.0
    cached_tokens: int = 0
    uncached_tokens: int = 0
    baseline_cached_tokens: int = 0
    baseline_uncached_tokens: int = 0
    references: int = 0
    references_kept: int = 0
    references_recallable: int = 0
    recalls: int = 0
    recalled_tokens: int = 0
    recall_cached_tokens: int = 0
    recall_uncached_tokens: int = 0
    # What the recall store holds once the session ends: the UTF-8 bytes of every
    # original pinch named a handle for (a sum over the sessions of a group).
    recall_store_bytes: int = 0
    configured_cost_usd: float = 0.0
    configured_baseline_cost_usd: float = 0.0

    def add(self, record: TurnRecord) -> None:
        self.requests += 1
        add_fields(self, record, _FROM_RECORD)
        if record.previous_len:
            self.prefix_turns += 1
            self.prefix_share_sum += record.prefix_match / record.previous_len

    def merge(self, other: Totals) -> None:
        add_fields(self, other, _SUMMED)

    @property
    def saved_share(self) -> float:
        if not self.original_tokens:
            return 0.0
        return (self.original_tokens - self.final_tokens) / self.original_tokens

    def cost_ratio(self, prices: Prices) -> float | None:
        """Cost with pinch over cost without it (1.0: the same; above 1: pinch cost more)."""
        baseline = self.baseline_cost(prices)
        return self.cost(prices) / baseline if baseline else None

    def cost_saved_share(self, prices: Prices) -> float | None:
        """Share of the baseline's cost saved; negative when pinch cost more."""
        ratio = self.cost_ratio(prices)
        return None if ratio is None else 1 - ratio

    def costlier(self, prices: Prices) -> bool:
        """Whether pinch made this session dearer than sending it whole (beyond float noise)."""
        ratio = self.cost_ratio(prices)
        return ratio is not None and ratio > 1 + 1e-9

    @property
    def references_share(self) -> float | None:
        return self.references_kept / self.references if self.references else None

    @property
    def recallable_share(self) -> float | None:
        """Of the references, the share in the payload or one recall away."""
        if not self.references:
            return None
        return (self.references_kept + self.references_recallable) / self.references

    @property
    def recalls_per_pruned(self) -> float | None:
        return self.recalls / self.pruned if self.pruned else None

    @property
    def pruned_share(self) -> float:
        return self.pruned / self.requests if self.requests else 0.0

    @property
    def relevance_share(self) -> float:
        return self.relevance_used / self.requests if self.requests else 0.0

    @property
    def prefix_kept(self) -> float | None:
        """Mean over turns with a previous payload of prefix_match / previous_len."""
        return self.prefix_share_sum / self.prefix_turns if self.prefix_turns else None


# The Totals fields that add up across sessions: all but its names.
_SUMMED = tuple(f.name for f in fields(Totals) if f.name not in ("name", "family"))


@dataclass
class ReplayResult:
    records: list[TurnRecord] = field(default_factory=list)
    errors: list[TurnError] = field(default_factory=list)
    sessions: list[Totals] = field(default_factory=list)

    @property
    def total(self) -> Totals:
        total = Totals("total")
        for session in self.sessions:
            total.merge(session)
        return total

    def by_family(self) -> list[Totals]:
        families: dict[str, Totals] = {}
        for session in self.sessions:
            families.setdefault(session.family, Totals(session.family, session.family))
            families[session.family].merge(session)
        return list(families.values())

    def costlier_sessions(self, prices: Prices) -> list[str]:
        return [s.name for s in self.sessions if s.costlier(prices)]

    def dearer_ends(self, prices: Prices) -> tuple[int, int, float]:
        """(Of the ends after each request, how many pinch made dearer, of how many, the
        worst ratio): pinch plans from earlier requests only, so a session cut short
        is its replay cut short (docs/pinch.md, "What a step risks")."""
        dearer, worst = 0, 1.0
        totals: dict[str, list[float]] = {}
        for record in self.records:
            spent = totals.setdefault(record.conversation, [0.0, 0.0])
            spent[0] += record.cost(prices)
            spent[1] += record.baseline_cost(prices)
            if spent[0] > spent[1] * (1 + 1e-9):
                dearer += 1
                worst = max(worst, spent[0] / spent[1])
        return dearer, len(self.records), worst
