"""The relevance edge: which old tool results pinch should compress first.

prune_context (pinch/core.py) is pure: given ``relevance_order`` it compresses
least relevant first and stops when the deficit is covered; given None it
compresses every candidate, which is what pinch did before relevance existed.
This module produces that order, and is the only part of pinch that may fail,
so it is built to fail closed: any error, timeout or bad answer returns None,
logged once as ``relevance_unavailable`` with the reason, and the request
gets uniform pruning, never an error.

One batched embedding call per request (the last user message as the query,
then every trim candidate), through a per-process cache: an agent resends its
conversation every turn, so a later turn embeds only what is new.

The time budget (``pinch.relevance.timeout_seconds``) bounds the whole call,
cache and backend included: the work runs on a small worker pool and the
request waits at most that long. A late answer is dropped; the worker still
finishes and caches what it computed, so the next turn is warm.

Measured with bench/bench_embedders.py on 2 busy cores: the builtin embedder
ranks 1 request + 200 tool results of 2,000 characters in ~45-55 ms of CPU
with an empty cache and ~10 ms on a later turn; figures in docs/relevance.md.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pinch import estimate_tokens, extract_text, last_user_text, order_by_relevance, trim_candidates
from pinch.embedders import Embedder, EmbedderSettings, EmbeddingError, make_embedder
from pinch.embedding_cache import DEFAULT_MAX_BYTES, CachedEmbedder, EmbeddingCache, SharedTier

logger = logging.getLogger("pinch.relevance")

# Workers that run embedding calls. A slow endpoint holds a worker for up to
# timeout_seconds; four let a few such requests overlap before later ones
# queue (and time out, failing closed) rather than pile up threads.
POOL_WORKERS = 4

Status = Literal["used", "skipped", "unavailable"]


class RelevanceSettings(EmbedderSettings, Protocol):
    """What the edge reads of ``pinch.relevance`` (the router's config satisfies it)."""

    enabled: bool
    min_candidates: int
    max_chars: int


class PinchSettings(Protocol):
    """What the edge reads of ``pinch`` (the router's ``PinchConfig`` satisfies it)."""

    enabled: bool
    keep_last_turns: int
    keep_last_tool_results: int | None
    window_step: int | None
    relevance: RelevanceSettings


@dataclass(frozen=True)
class RelevanceResult:
    """What the edge decided, for prune_context and for the decision record.

    ``order`` is set only when ``status == "used"``. ``skipped`` means
    relevance was not wanted (off, under budget, too few candidates);
    ``unavailable`` means it was wanted and failed, which the router records
    as a fallback to uniform pruning.
    """

    order: list[int] | None
    status: Status
    reason: str
    candidates: int = 0
    elapsed_ms: float = 0.0


class _Process:
    """One embedder, one cache and one worker pool per process, keyed by config."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.embedders: dict[tuple, CachedEmbedder] = {}
        self.caches: dict[SharedTier | None, EmbeddingCache] = {}
        self.pool: ThreadPoolExecutor | None = None

    def embedder(
        self, relevance_cfg: RelevanceSettings, shared: SharedTier | None
    ) -> CachedEmbedder:
        key = (
            relevance_cfg.backend,
            relevance_cfg.model,
            relevance_cfg.base_url,
            relevance_cfg.api_key_env,
            relevance_cfg.timeout_seconds,
            shared,
        )
        with self.lock:
            found = self.embedders.get(key)
            if found is None:
                cache = self.caches.get(shared)
                if cache is None:
                    cache = self.caches[shared] = EmbeddingCache(DEFAULT_MAX_BYTES, shared)
                # A config edited in admin replaces the embedder; the old one
                # goes, the cache (keyed by identity) stays.
                self.embedders.clear()
                found = self.embedders[key] = CachedEmbedder(make_embedder(relevance_cfg), cache)
            return found

    def executor(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.pool is None:
                self.pool = ThreadPoolExecutor(
                    max_workers=POOL_WORKERS, thread_name_prefix="pinch-relevance"
                )
            return self.pool


_process = _Process()


def reset_relevance_state() -> None:
    """Forget the process's embedders, caches and pool (for tests)."""
    global _process
    old, _process = _process, _Process()
    if old.pool is not None:
        old.pool.shutdown(wait=False, cancel_futures=True)


def _forget_after_fork() -> None:
    # A forked worker (gunicorn) has none of its parent's pool threads, and a
    # lock a parent thread held would stay held: start clean.
    global _process
    _process = _Process()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def relevance_for(
    messages: list[Any],
    cfg: PinchSettings,
    budget_tokens: int,
    extra_fixed_tokens: int = 0,
    *,
    shared_cache: SharedTier | None = None,
) -> RelevanceResult:
    """The order for ``prune_context(relevance_order=...)``, with the reason. Never raises.

    ``order`` is None when pinch or relevance is off, when the conversation is
    not over ``budget_tokens`` (counting ``extra_fixed_tokens``, the tool
    definitions, exactly as prune_context's guard does), when there are fewer
    than ``min_candidates`` trim candidates, or on any failure.
    """
    started = time.monotonic()
    try:
        skip = _skip_reason(messages, cfg, budget_tokens, extra_fixed_tokens)
        if skip is not None:
            return RelevanceResult(None, "skipped", skip)
        rel = cfg.relevance
        candidates = trim_candidates(
            messages,
            keep_last_turns=cfg.keep_last_turns,
            keep_last_tool_results=cfg.keep_last_tool_results,
            window_step=cfg.window_step,
        )
        if len(candidates) < rel.min_candidates:
            return RelevanceResult(
                None,
                "skipped",
                f"{len(candidates)} candidates, fewer than min_candidates={rel.min_candidates}",
                candidates=len(candidates),
            )
        query = last_user_text(messages)
        if not query.strip():
            return RelevanceResult(None, "skipped", "no user text to rank against")
        order = _rank(messages, candidates, query, rel, shared_cache, started)
        return RelevanceResult(
            order,
            "used",
            f"ranked {len(candidates)} candidates",
            candidates=len(candidates),
            elapsed_ms=(time.monotonic() - started) * 1000,
        )
    except Exception as exc:  # noqa: BLE001 - fail closed: nothing here may break a request
        reason = _reason(exc, cfg)
        backend = cfg.relevance.backend
        logger.warning(
            "relevance_unavailable: %s (backend %s)",
            reason,
            backend,
            extra={"reason": reason, "backend": backend},
        )
        return RelevanceResult(
            None, "unavailable", reason, elapsed_ms=(time.monotonic() - started) * 1000
        )


def _skip_reason(messages, cfg, budget_tokens, extra_fixed_tokens) -> str | None:
    if not cfg.enabled:
        return "pinch disabled"
    if not cfg.relevance.enabled:
        return "relevance disabled"
    # The same total as prune_context's guard, tool definitions included:
    # without them, relevance would decline exactly the requests that go over
    # budget only because of their tools.
    total = sum(estimate_tokens(extract_text(m)) for m in messages) + extra_fixed_tokens
    if total <= budget_tokens:
        return f"under budget ({total} <= {budget_tokens} tokens)"
    return None


def _rank(messages, candidates, query, rel, shared_cache, started) -> list[int]:
    max_chars = rel.max_chars
    texts = [query[:max_chars]] + [extract_text(messages[i])[:max_chars] for i in candidates]
    timeout = float(rel.timeout_seconds)
    deadline = started + timeout
    embedder = _process.embedder(rel, shared_cache)
    future = _process.executor().submit(_order_before, embedder, texts, deadline, timeout)
    try:
        return future.result(timeout=max(deadline - time.monotonic(), 0.0))
    except FutureTimeout:
        future.cancel()
        raise EmbeddingError(f"no answer within timeout_seconds={timeout:g}") from None


def _order_before(
    embedder: Embedder, texts: list[str], deadline: float, timeout: float
) -> list[int]:
    """Embed and rank, on a pool thread; the request waits until ``deadline`` at most."""
    # A job that waited in the queue past its deadline has no one to answer.
    if time.monotonic() >= deadline:
        raise EmbeddingError(
            f"timeout_seconds={timeout:g} passed before the embedding call started"
        )
    vectors = embedder.embed(texts)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise EmbeddingError(f"embedder returned shape {vectors.shape} for {len(texts)} texts")
    order = order_by_relevance(vectors[0], vectors[1:])
    if sorted(order) != list(range(len(texts) - 1)):
        raise EmbeddingError("ranking is not a permutation of the candidates")
    return order


def _reason(exc: Exception, cfg: PinchSettings) -> str:
    """A one-line reason with any API key value scrubbed out."""
    if isinstance(exc, EmbeddingError):
        reason = str(exc)
    else:
        reason = f"{type(exc).__name__}: {exc}"
    key_env = cfg.relevance.api_key_env
    key = os.environ.get(key_env) if key_env else None
    if key:
        # Before cutting the line short, or a cut could leave half a key.
        reason = reason.replace(key, "[redacted]")
    return " ".join(reason.split())[:300] or type(exc).__name__
