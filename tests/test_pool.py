"""The pool: construction, standardization and the validation of its invariants."""

import numpy as np
import pytest

import activerank as ar
from activerank.pool import pool_iv


def test_from_qids_and_summary():
    pool = ar.Pool.from_qids(["b", "b", "a"], doc_ids=["x", "y", "z"])
    assert pool.query_ids.tolist() == ["b", "a"] and pool.offsets.tolist() == [0, 2, 3]
    assert repr(pool) == "Pool(n_queries=2, n_docs=3, doc_ids=yes, doc_length=no)"
    assert pool.doc_keys([2, 0]) == ["z", "x"] and pool.query_key(1) == "a"
    assert pool.query_index() == {"b": 0, "a": 1}
    with pytest.raises(ValueError, match="query 1 is split"):
        ar.Pool.from_qids([1, 2, 1])


def test_pool_iv_standardizes_a_letor_dataset():
    data = ar.load_sample()
    pool = pool_iv(data)
    assert isinstance(pool, ar.Pool) and pool.n_queries == data.n_queries
    assert pool.doc_ids is not None and pool.doc_length is not None


@pytest.mark.parametrize("qids, offsets, message", [
    ([1, 1], [0, 1, 2], r"`pool.query_ids` must be unique; query id 1 appears twice \(queries 0 and 1\)"),
    ([1], [0, 1, 2], r"`pool.query_ids` must have one id per query \(2, from `pool.offsets`\); got 1"),
    ([1, 2], [0, 2, 1], r"`pool.offsets` must be non-decreasing"),
    ([], [0], r"`pool` must contain at least one query"),
])
def test_pool_iv_rejects_broken_pools(qids, offsets, message):
    with pytest.raises(ValueError, match=message):
        pool_iv(ar.Pool(np.array(qids), np.array(offsets)))
    with pytest.raises(TypeError, match="`pool` must have `offsets` and `query_ids`"):
        pool_iv(object())
