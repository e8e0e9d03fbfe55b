"""order_by_relevance: cosine similarity, least relevant first, stable, forgiving of bad vectors."""

import math

import numpy as np
import pytest

from pinch import order_by_relevance

QUERY = [1.0, 0.0]


@pytest.mark.parametrize(
    ("candidates", "order"),
    [
        # parallel, orthogonal, opposite, near duplicate
        ([[2.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [1.0, 0.1]], [2, 1, 3, 0]),
        # scale does not matter, only direction
        ([[1000.0, 0.0], [0.001, 0.0]], [0, 1]),
        ([[0.5, 0.5], [0.9, 0.1], [0.1, 0.9]], [2, 0, 1]),
        # a single candidate
        ([[0.3, 0.7]], [0]),
    ],
    ids=["parallel-orthogonal-opposite-near", "scale-invariant", "angles", "single"],
)
def test_candidates_come_least_similar_first(candidates, order):
    assert order_by_relevance(QUERY, candidates) == order


@pytest.mark.parametrize(
    "bad_vector",
    [[0.0, 0.0], [math.nan, 1.0], [math.inf, 0.0]],
    ids=["zero", "nan", "inf"],
)
def test_vector_without_a_similarity_ranks_below_even_an_opposite_one(bad_vector):
    assert order_by_relevance(QUERY, [[1.0, 0.0], [-1.0, 0.0], bad_vector]) == [2, 1, 0]


def test_zero_query_keeps_candidate_order():
    assert order_by_relevance([0.0, 0.0], [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]) == [0, 1, 2]


def test_equal_similarities_keep_older_candidates_first():
    assert order_by_relevance(QUERY, [[0.0, 1.0], [1.0, 1.0], [0.0, 2.0], [2.0, 2.0]]) == [
        0,
        2,
        1,
        3,
    ]


def test_numpy_arrays_are_accepted_and_plain_ints_returned():
    order = order_by_relevance(
        np.array(QUERY, dtype=np.float32), np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    )
    assert order == [1, 0]
    assert all(type(i) is int for i in order)


def test_integer_vectors_are_accepted():
    assert order_by_relevance([1, 0], [[1, 0], [0, 1]]) == [1, 0]


@pytest.mark.parametrize("empty", [[], np.zeros((0, 2))], ids=["list", "array"])
def test_no_candidates_give_an_empty_order(empty):
    assert order_by_relevance(QUERY, empty) == []


@pytest.mark.parametrize(
    "candidates",
    [[[1.0, 0.0, 0.0]], [1.0, 0.0]],
    ids=["dimension-mismatch", "not-one-vector-per-candidate"],
)
def test_malformed_embeddings_raise_value_error_for_the_edge_to_catch(candidates):
    with pytest.raises(ValueError):
        order_by_relevance(QUERY, candidates)


def test_similarities_equal_but_for_float_noise_keep_the_older_candidate_first():
    query = [1.0, 0.0, 0.0]
    newer_first = [[0.6, 0.8 + 1e-9, 0.0], [0.6, 0.8, 0.0]]
    assert order_by_relevance(query, newer_first) == [0, 1]
    noisy_other_way = [[0.6, 0.8, 0.0], [0.6 + 1e-9, 0.8, 0.0]]
    assert order_by_relevance(query, noisy_other_way) == [0, 1]
