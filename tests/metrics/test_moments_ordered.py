"""The one-pass ERR cross moment for order-preserving pairs (index updates).

When the items both lists rank keep their relative order (``b`` = ``a`` with
documents removed, or added, or both), ``E[L_a L_b | x]`` is one recursion
down a merged list.  It must equal brute-force enumeration and the general
``O(n_a n_b)`` kernel (``order_preserving=False``) to 1e-12.
"""

import numpy as np
import pytest

import activerank as ar
import activerank.metrics._pair as mom_pair

from .._reference import brute_force_moments, random_probs

FIELDS = ("mean_a", "mean_b", "second_a", "second_b", "cross")


def _ordered_variant(rng, a, pool_rows, kind):
    """A list whose items shared with ``a`` keep a's order."""
    a = np.asarray(a)
    if kind == "removed":
        return a[rng.random(a.size) < 0.7]
    if kind == "added":
        extra = [z for z in pool_rows if z not in set(a.tolist())]
        b = list(a)
        for z in extra:
            b.insert(int(rng.integers(0, len(b) + 1)), z)
        return np.array(b, dtype=np.int64)
    if kind == "both":
        b = list(a[rng.random(a.size) < 0.6])
        for z in [z for z in pool_rows if z not in set(a.tolist())]:
            b.insert(int(rng.integers(0, len(b) + 1)), z)
        return np.array(b, dtype=np.int64)
    if kind == "identical":
        return a.copy()
    if kind == "disjoint":
        return rng.permutation([z for z in pool_rows if z not in set(a.tolist())]).astype(np.int64)
    if kind == "prefix":
        return a[: a.size // 2]
    raise ValueError(kind)


KINDS = ("removed", "added", "both", "identical", "disjoint", "prefix")


def _ordered_pool(rng, n_queries, max_len, n_grades, *, spare=3):
    lengths = rng.integers(0, max_len + 1, n_queries) + spare
    offsets = np.r_[0, np.cumsum(lengths)]
    probs = random_probs(rng, int(offsets[-1]), n_grades)
    ra, rb = [], []
    for q in range(n_queries):
        rows = np.arange(offsets[q], offsets[q + 1])
        a = rng.permutation(rows[: rows.size - spare])[: rng.integers(0, rows.size - spare + 1)]
        ra.append(a)
        rb.append(_ordered_variant(rng, a, rng.permutation(rows), KINDS[q % len(KINDS)]))
    return probs, ra, rb


@pytest.mark.parametrize("metric, k", [("err", None), ("err", 2), ("err", 3)])
def test_ordered_pairs_match_brute_force(metric, k):
    rng = np.random.default_rng([7, k or 0])
    for kind in KINDS:
        for _ in range(6):
            n = int(rng.integers(1, 7))
            probs = random_probs(rng, n, 3)
            a = rng.permutation(n)[: rng.integers(0, n + 1)]
            b = _ordered_variant(rng, a, rng.permutation(n), kind)
            res = ar.pool_pair_moments(probs, [a], [b], metric=metric, k=k)
            want = brute_force_moments(probs, a, b, metric, k)
            got = [getattr(res, f)[0] for f in FIELDS]
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14, err_msg=f"{kind}: {a} / {b}")


def _assert_equal_pairs(got, ref):
    for f in FIELDS:
        np.testing.assert_allclose(getattr(got, f), getattr(ref, f), rtol=1e-12, atol=1e-300, err_msg=f)
    scale = ref.second_a + ref.second_b
    assert np.all(np.abs(got.delta_variance - ref.delta_variance) <= 1e-12 * scale)


@pytest.mark.parametrize("k", [None, 1, 5, 20])
@pytest.mark.parametrize("n_grades", [2, 5])
def test_ordered_equals_general_kernel(k, n_grades, monkeypatch):
    rng = np.random.default_rng([k or 0, n_grades])
    probs, ra, rb = _ordered_pool(rng, 120, 40, n_grades)
    used = []
    real = mom_pair._cascade_pair_ordered
    monkeypatch.setattr(mom_pair, "_cascade_pair_ordered", lambda *a: used.append(a[1].n_queries) or real(*a))
    ref = ar.pool_pair_moments(probs, ra, rb, metric="err", k=k, order_preserving=False, backend="numpy")
    assert not used
    auto = ar.pool_pair_moments(probs, ra, rb, metric="err", k=k, backend="numpy")
    declared = ar.pool_pair_moments(probs, ra, rb, metric="err", k=k, order_preserving=True, backend="numpy")
    assert used == [120, 120]  # every query took the one-pass path
    _assert_equal_pairs(auto, ref)
    _assert_equal_pairs(declared, auto)
    for f in ("mean_a", "mean_b"):
        np.testing.assert_array_equal(getattr(auto, f), getattr(ref, f))


def test_mixed_pools_split_per_query(monkeypatch):
    """Reordered queries go to the general kernel, the others to the one-pass path."""
    rng = np.random.default_rng(3)
    probs, ra, rb = _ordered_pool(rng, 90, 25, 5)
    reordered = [q for q in range(90) if q % 4 == 1 and rb[q].size > 1 and np.intersect1d(ra[q], rb[q]).size > 1]
    for q in reordered:
        rb[q] = rb[q][::-1].copy()
    used = []
    real = mom_pair._cascade_pair_ordered
    monkeypatch.setattr(mom_pair, "_cascade_pair_ordered", lambda *a: used.append(a[1].n_queries) or real(*a))
    ref = ar.pool_pair_moments(probs, ra, rb, metric="err", order_preserving=False, backend="numpy")
    got = ar.pool_pair_moments(probs, ra, rb, metric="err", backend="numpy")
    assert used == [90 - len(reordered)]
    _assert_equal_pairs(got, ref)
    with pytest.raises(ValueError, match=rf"`order_preserving`=True requires .* query {reordered[0]} lists"):
        ar.pool_pair_moments(probs, ra, rb, metric="err", order_preserving=True)


def test_rows_shared_between_queries():
    """Order detection works on the (query, row) matching fallback too."""
    rng = np.random.default_rng(11)
    probs = random_probs(rng, 30, 3)
    ra = [rng.permutation(30)[:12] for _ in range(8)]  # every row ranked by several queries
    rb = [_ordered_variant(rng, a, rng.permutation(30), KINDS[q % 3]) for q, a in enumerate(ra)]
    ref = ar.pool_pair_moments(probs, ra, rb, metric="err", order_preserving=False)
    _assert_equal_pairs(ar.pool_pair_moments(probs, ra, rb, metric="err", order_preserving=True), ref)


def test_order_detection():
    ia = np.array([0, 2, 5, 4, 7])  # query of b-entry: 0 0 1 1 2
    ib = np.arange(5)
    qb = np.array([0, 0, 1, 1, 2])
    assert mom_pair._order_consistent(ia, ib, qb, 4).tolist() == [True, False, True, True]


def test_order_preserving_type():
    with pytest.raises(TypeError, match="`order_preserving` must be True, False or None"):
        ar.pool_pair_moments([[0.5, 0.5]], [[0]], [[0]], metric="err", order_preserving="yes")
    # ignored for DCG
    res = ar.pool_pair_moments([[0.5, 0.5], [0.1, 0.9]], [[0, 1]], [[1, 0]], metric="dcg", order_preserving=True)
    assert res.cross.shape == (1,)
