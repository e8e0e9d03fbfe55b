"""The config blocks of pinch: when it prunes, what it keeps, relevance, payback and recall
(docs/pinch.md). Part of routing/config/schema.py's one strict model, kept apart
because it is pinch's own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from routing.config.strict import Strict


class RelevanceConfig(Strict):
    enabled: bool = False
    backend: Literal["builtin", "openai"] = "builtin"
    model: str = "nomic-embed-text"
    base_url: str = "http://localhost:11434/v1"
    api_key_env: str | None = None
    timeout_seconds: float = Field(10.0, gt=0)
    min_candidates: int = Field(2, gt=0)
    max_chars: int = Field(2000, gt=0)


class PaybackConfig(Strict):
    """Prune only when it pays under the cache (pinch/payback.py; measured in docs/pinch.md)."""

    enabled: bool = True
    # Turns a session is expected still to run, per turn it has run.
    turns_ahead: float = Field(0.75, gt=0)
    # A step is taken when its expected payback is this many times its cost.
    min_payback: float = Field(4.0, gt=0)
    # A result leaving the window stays verbatim for good when it shares at
    # least keep_min_shared paths/identifiers with the work in hand and is no
    # longer than keep_max_chars (0: never).
    keep_min_shared: int = Field(3, gt=0)
    keep_max_chars: int = Field(0, ge=0)
    # A compressed result names, in up to this many characters, the paths and
    # identifiers its omitted text held (0: a bare placeholder).
    names_max_chars: int = Field(250, ge=0)
    # ... or this share of the result's length, when that is more.
    names_share: float = Field(0.04, ge=0, le=1)
    # What a result longer than max_summarize_chars keeps of its lines (null:
    # half of max_summarize_chars).
    lines_max_chars: int | None = Field(200, ge=200)
    # The most a conversation may cost over pinch off, as a share of what it
    # would have cost, had it ended after any request (0: never dearer).
    max_loss_share: float = Field(0.1, ge=0)
    # Requests a conversation runs before its length says how long it will go
    # on: a step staked on later turns counts only the turns after them.
    settle_turns: int = Field(12, ge=0)


class RecallConfig(Strict):
    """What pinch trims stays one tool call away (routing/recall/; docs/pinch.md, "Recall")."""

    enabled: bool = True
    # Recalls the router answers itself within one request; past it, the
    # model's answer goes to the client as it is.
    max_per_request: int = Field(3, ge=1)
    # The originals kept per conversation, and in all; the oldest go first.
    max_conversation_bytes: int = Field(8 * 1024 * 1024, gt=0)
    max_total_bytes: int = Field(1024 * 1024 * 1024, gt=0)


class PinchConfig(Strict):
    enabled: bool = True
    budget_tokens: int = Field(6000, gt=0)
    keep_last_turns: int = Field(4, gt=0)
    keep_last_tool_results: int | None = Field(4, gt=0)
    window_step: int | None = Field(8, gt=0)
    max_summarize_chars: int = Field(4000, ge=3000)
    protected_max_chars: int | None = Field(20000, ge=3000)
    prefix_probe: bool = True
    relevance: RelevanceConfig = RelevanceConfig()
    payback: PaybackConfig = PaybackConfig()
    recall: RecallConfig = RecallConfig()
    # The share of conversations sent with pinch off, to compare against
    # (routing/experiments.py; docs/quality.md). 0 turns the holdout off.
    holdout_share: float = Field(0.05, ge=0.0, le=1.0)
