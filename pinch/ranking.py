"""Turn embeddings into the order in which pinch compresses old tool results.

Kept apart from the code that produces the embeddings (the relevance edge,
which talks to models and may fail) so the ranking itself stays a pure,
offline-testable function: vectors in, indexes out. The edge passes the result
straight to ``prune_context(relevance_order=...)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Far below any difference in relevance that means something, far above float32 noise.
SIMILARITY_DECIMALS = 6


def order_by_relevance(
    query_embedding: Sequence[float] | np.ndarray,
    candidate_embeddings: Sequence[Sequence[float]] | np.ndarray,
) -> list[int]:
    """Return candidate indexes, least similar to the query first.

    Similarity is cosine. A candidate whose similarity is undefined (a zero
    vector, a NaN or infinite component, or a zero query) ranks below every
    real similarity, so it is compressed first: a vector that says nothing
    earns no protection. Equal similarities keep candidate order (a stable
    sort), so among equals the older result goes first, as in uniform pruning.

    Raises ValueError when the candidates are not a 2-D array matching the
    query's dimension; the relevance edge treats that like any other failure.
    """
    candidates = np.asarray(candidate_embeddings, dtype=np.float64)
    if candidates.shape[:1] == (0,):
        return []
    if candidates.ndim != 2:
        raise ValueError(
            f"candidate embeddings must be 2-D (one vector per candidate), got shape "
            f"{candidates.shape}"
        )
    query = np.asarray(query_embedding, dtype=np.float64).ravel()
    if query.shape[0] != candidates.shape[1]:
        raise ValueError(
            f"query has {query.shape[0]} dimensions but candidates have {candidates.shape[1]}"
        )
    with np.errstate(all="ignore"):
        dots = candidates @ query
        norms = np.linalg.norm(candidates, axis=1) * np.linalg.norm(query)
        similarity = dots / norms
    # Results identical after the edge's cut differ only in float noise (which
    # changes with BLAS and build); rounding makes them true ties, so the
    # stable sort decides by age and the order is the same on every machine.
    similarity = np.round(similarity, SIMILARITY_DECIMALS)
    similarity[~np.isfinite(similarity)] = -np.inf
    return np.argsort(similarity, kind="stable").tolist()
