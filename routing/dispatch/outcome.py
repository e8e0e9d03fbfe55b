"""What one request's upstream call came to: the row's status, usage, cost and attempts.

Filled by the attempts (which model answered, at what price) and by the
protocol's wire and stream watcher as the answer passes (usage, errors);
recorded once, by the relay, through routing.recording.decisions.finish_decision.
"""

from dataclasses import dataclass, field

from pinch.payback import CacheModel
from routing.pricing import billed_prompt_cost_usd
from routing.recording.values import token_count


@dataclass
class Outcome:
    status: int = 0
    error: str = ""
    attempts: list = field(default_factory=list)
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    # The provider's own word on why its cache missed (Anthropic's cache diagnostics).
    cache_miss_reason: str | None = None
    usage_estimated: bool = False
    model: object = None
    nothing_ran: bool = False  # every try failed before any model ran (attempts.NOTHING_RAN)
    cost_usd: float | None = None
    # Set with the model that answered: the plan's estimate of the unpruned
    # request's (cached, written) split (None when pinch sent it whole: then
    # it cost what it cost).
    unpruned_split: tuple | None = None
    # Whether the answer asked for tool calls (None: no answer); a conversation
    # whose last answer did and that never came back stopped mid tool loop.
    answer_tool_calls: bool | None = None
    # What the wire keeps of the answer (a stored response), written with the row.
    stored_response: dict | None = None
    # The router's recall tool (routing/recall/): calls it answered within the
    # request and the tokens they gave back; None when the tool was not offered.
    recalls: int | None = None
    recalled_tokens: int | None = None
    # The handles those recalls found, marked on the store with the row.
    recalled_handles: set = field(default_factory=set)
    # The tokens each recall gave back, in order, and the cache prices their round trips
    # are booked at on pinch's ledger (routing.recall.keeping.book_round_trips).
    recalled_sizes: list = field(default_factory=list)
    recall_prices: CacheModel | None = None

    def unpruned_cost_usd(self, billed: float | None) -> float | None:
        """The estimated prompt cost of the same request without pinch (None unbilled).

        Priced like the billed cost (routing.pricing), against the cache the
        bill had: the estimated cached part read only when the provider
        billed cache reads for this request, the rest written only when it
        billed cache writes (a model with a cache block, Anthropic), else at
        the prompt price. A cache the bill never had would credit pinch's
        request with reads it could not have got, and charge pinch the
        difference (issue 41: "net loss with pinch" against an upstream that
        reported no cached tokens).
        """
        if billed is None or self.model is None:
            return None
        if self.unpruned_split is None:
            return billed
        cached, rest = self.unpruned_split
        if not self.cache_read_tokens:
            cached, rest = 0, cached + rest
        written = rest if self.model.cache is not None and self.cache_write_tokens else 0
        return billed_prompt_cost_usd(self.model, cached + rest, cached, written)

    def take_usage(self, usage):
        """Keep the answer's usage; a figure that is no count (a string, 10**20) is unknown."""
        if not isinstance(usage, dict):
            return
        self.prompt_tokens = token_count(usage.get("prompt_tokens"))
        self.completion_tokens = token_count(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        details = details if isinstance(details, dict) else {}
        self.cached_tokens = token_count(details.get("cached_tokens"))
        # Reads and writes of the provider's prompt cache, both inside prompt_tokens
        # (OpenAI reports writes as cache_write_tokens; the Anthropic provider too).
        self.cache_read_tokens = self.cached_tokens
        self.cache_write_tokens = token_count(details.get("cache_write_tokens"))
        reason = details.get("cache_miss_reason")
        self.cache_miss_reason = reason if isinstance(reason, str) else self.cache_miss_reason

    def upstream_error(self, message: str):
        # The upstream reported a failure inside the stream: relayed, and the row says so.
        self.status = 502
        self.error = f"upstream error event: {message}"
