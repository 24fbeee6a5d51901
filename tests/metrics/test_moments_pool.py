"""Pool-level kernels agree with the per-query functions (<= 1e-12 relative) on random pools.

The pool kernels batch queries into blocks (padded, sorted by list length) and
compute item statistics in chunks, so a query's result is produced by a
different code path -- different block composition, padding width, chunk
boundaries -- than when it is passed alone.  These tests pin that the path
does not matter, including for the internal knobs (block and chunk sizes) and
for the matching fallback used when a document row is ranked by two queries.
"""

import numpy as np
import pytest

import activerank as ar
import activerank.metrics._stats as mom_stats
from activerank.ragged import PositionMajor, Rankings

from .._reference import brute_force_moments, random_probs

RTOL = 1e-12
SINGLE = ("mean", "second_moment", "variance")
PAIR = ("mean_a", "mean_b", "second_a", "second_b", "cross", "delta_variance")


def _pool(rng, n_queries, n_grades, max_len, *, shared_rows=False):
    """Random pool; each query's rankings: a permutation, and one of
    identical / index update / reordered subset / disjoint-ish / empty."""
    lengths = rng.integers(0, max_len + 1, n_queries)
    offsets = np.r_[0, np.cumsum(lengths)]
    n_docs = int(offsets[-1])
    probs = random_probs(rng, max(n_docs, 1), n_grades)
    ra, rb = [], []
    for q in range(n_queries):
        rows = np.arange(offsets[q], offsets[q + 1])
        if shared_rows and rows.size and q % 3 == 0:
            # this query also ranks rows of another query (same documents, two queries)
            other = rng.integers(0, n_docs, size=min(3, n_docs))
            rows = np.unique(np.r_[rows, other])
        a = rng.permutation(rows)
        kind = q % 5
        if kind == 0:
            b = a.copy()
        elif kind == 1:
            b = a[rng.random(a.size) < 0.9]
        elif kind == 2:
            b = rng.permutation(a[rng.random(a.size) < 0.7])
        elif kind == 3:
            b = rng.permutation(rows)
        else:
            b = a[: a.size // 3]
        ra.append(a)
        rb.append(b)
    return probs, ra, rb


def _assert_rows(pool_res, q, single_res, fields):
    moments = [f for f in fields if f != "delta_variance"]
    got = np.array([getattr(pool_res, f)[q] for f in moments])
    want = np.array([getattr(single_res, f) for f in moments])
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-300)
    if "delta_variance" in fields:
        # For ERR, Var[L_a - L_b] = Var_a + Var_b - 2 Cov cancels when the two
        # lists nearly agree (index updates): it is exact relative to the
        # variances it is formed from, which is what a sampler weighting by
        # sqrt(Var) can resolve anyway.
        scale = single_res.second_a + single_res.second_b
        assert abs(pool_res.delta_variance[q] - single_res.delta_variance) <= RTOL * scale


@pytest.mark.parametrize("metric", ["dcg", "err", "dcg@5", "err@5", "err@1"])
@pytest.mark.parametrize("n_grades", [2, 5])
def test_pool_equals_per_query(metric, n_grades):
    rng = np.random.default_rng(hash((metric, n_grades)) % 2**32)
    probs, ra, rb = _pool(rng, 70, n_grades, 40)
    single = ar.pool_moments(probs, ra, metric=metric)
    pair = ar.pool_pair_moments(probs, ra, rb, metric=metric)
    for q in range(len(ra)):
        _assert_rows(single, q, ar.query_moments(probs, ra[q], metric=metric), SINGLE)
        _assert_rows(pair, q, ar.pair_moments(probs, ra[q], rb[q], metric=metric), PAIR)


@pytest.mark.parametrize("metric", ["dcg", "err"])
def test_pool_equals_per_query_on_local_probs(metric):
    """Per-query calls with only that query's rows (as a user would slice them)."""
    rng = np.random.default_rng(5)
    probs, ra, rb = _pool(rng, 40, 5, 30)
    pair = ar.pool_pair_moments(probs, ra, rb, metric=metric)
    for q in range(len(ra)):
        rows = np.union1d(ra[q], rb[q])
        local = {z: i for i, z in enumerate(rows)}
        la = [local[z] for z in ra[q]]
        lb = [local[z] for z in rb[q]]
        res = ar.pair_moments(probs[rows] if rows.size else probs[:0], la, lb, metric=metric)
        _assert_rows(pair, q, res, PAIR)


@pytest.mark.parametrize("metric", ["dcg", "err"])
def test_rows_shared_between_queries(metric):
    """Matching falls back to (query, row) sorting when a row is ranked by two queries."""
    rng = np.random.default_rng(9)
    probs, ra, rb = _pool(rng, 50, 3, 15, shared_rows=True)
    assert np.bincount(np.concatenate(ra)).max() > 1
    pair = ar.pool_pair_moments(probs, ra, rb, metric=metric)
    for q in range(len(ra)):
        _assert_rows(pair, q, ar.pair_moments(probs, ra[q], rb[q], metric=metric), PAIR)


@pytest.mark.parametrize("block", [1, 7, 64, 10**9])
@pytest.mark.parametrize("chunk", [1, 13, 1 << 15])
def test_block_and_chunk_sizes_do_not_matter(monkeypatch, block, chunk):
    rng = np.random.default_rng(13)
    probs, ra, rb = _pool(rng, 60, 5, 25)
    ref = ar.pool_pair_moments(probs, ra, rb, metric="err")
    ref_single = ar.pool_moments(probs, ra, metric="dcg")
    monkeypatch.setattr(mom_stats, "_PAIR_BLOCK_ELEMENTS", block)
    monkeypatch.setattr(mom_stats, "_STATS_CHUNK", chunk)
    got = ar.pool_pair_moments(probs, ra, rb, metric="err")
    for f in PAIR[:-1]:
        np.testing.assert_allclose(getattr(got, f), getattr(ref, f), rtol=RTOL, atol=1e-300)
    scale = ref.second_a + ref.second_b
    assert np.all(np.abs(got.delta_variance - ref.delta_variance) <= RTOL * scale)
    got_single = ar.pool_moments(probs, ra, metric="dcg")
    for f in SINGLE:
        np.testing.assert_allclose(getattr(got_single, f), getattr(ref_single, f), rtol=RTOL, atol=1e-300)


def test_long_lists_match_brute_force_structure():
    """Partial overlap in a new order agrees with a direct term-by-term O(n_a n_b) sum."""
    rng = np.random.default_rng(21)
    n = 40
    probs = random_probs(rng, n, 5)
    a = rng.permutation(n)
    b = np.r_[rng.permutation(a[: n // 2]), a[n // 2 :: 2]]
    res = ar.pair_moments(probs, a, b, metric="err")
    np.testing.assert_allclose(res.cross, _direct_err_cross(probs, a, b), rtol=1e-11)


def _direct_err_cross(probs, a, b):
    """E[L_a L_b] term by term: E[R(a_i) P^a_i R(b_l) P^b_l] as a product over items."""
    rv = (2.0 ** np.arange(probs.shape[1]) - 1) / 2.0 ** (probs.shape[1] - 1)
    pa = {z: i for i, z in enumerate(a)}
    pb = {z: i for i, z in enumerate(b)}
    absent = len(a) + len(b)
    total = 0.0
    for i, x in enumerate(a):
        for l, y in enumerate(b):
            # factor per item: which of R, (1 - R) it contributes through each list
            e = 1.0
            for z in set(a[:i + 1]) | set(b[:l + 1]):
                fa = rv if z == x else (1 - rv) if pa.get(z, absent) < i else 1.0
                fb = rv if z == y else (1 - rv) if pb.get(z, absent) < l else 1.0
                e *= probs[z] @ (np.ones_like(rv) * fa * fb)
            total += e / ((i + 1) * (l + 1))
    return total


@pytest.mark.parametrize("metric", ["dcg", "err", "err@2"])
def test_pool_matches_brute_force_on_small_queries(metric):
    rng = np.random.default_rng(3)
    probs, ra, rb = _pool(rng, 25, 3, 5)
    k = 2 if metric.endswith("@2") else None
    pair = ar.pool_pair_moments(probs, ra, rb, metric=metric)
    for q in range(len(ra)):
        # the reference enumerates every row of its probs: pass only this query's
        rows = np.union1d(ra[q], rb[q]).astype(int)
        local = {z: i for i, z in enumerate(rows)}
        want = brute_force_moments(probs[rows], [local[z] for z in ra[q]], [local[z] for z in rb[q]],
                                   metric.split("@")[0], k)
        got = [pair.mean_a[q], pair.mean_b[q], pair.second_a[q], pair.second_b[q], pair.cross[q]]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_position_major_flat_order():
    r = Rankings.from_list([[1, 2, 3], [4], [], [5, 6, 7, 8], [0, 9]])
    pm = PositionMajor(r.offsets)
    order = pm.flat_order()
    for i in range(pm.max_len):
        np.testing.assert_array_equal(order[pm.bounds[i] : pm.bounds[i + 1]], pm.entries(i))
    assert sorted(order.tolist()) == list(range(r.items.size))


def test_duplicate_detection_fast_and_fallback_paths():
    probs = random_probs(np.random.default_rng(0), 6, 2)
    # row 1 ranked by two queries is fine; twice by one query is not
    ar.pool_moments(probs, [[0, 1], [1, 2]], metric="dcg")
    with pytest.raises(ValueError, match=r"`rankings` must not contain duplicates; query 1 lists item 3 twice"):
        ar.pool_moments(probs, [[0, 1], [1, 3, 2, 3]], metric="dcg")
    with pytest.raises(ValueError, match=r"query 0 lists item 4 twice"):
        ar.pool_moments(probs, [[4, 5, 4], [1, 3]], metric="dcg")
