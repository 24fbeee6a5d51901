import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import activerank as ar
from activerank.ragged import Rankings

from .._reference import brute_force_moments, random_probs

RTOL = 1e-10


def close(a, b):
    return abs(a - b) <= RTOL * max(1.0, abs(b))


def overlap_patterns(rng, n):
    """(name, ranking_a, ranking_b) for every overlap pattern the issue lists."""
    perm = rng.permutation(n)
    half = max(1, n // 2)
    drop = np.sort(rng.choice(n, size=max(1, n // 3), replace=False))
    kept = np.array([z for z in perm if z not in set(drop)], dtype=int)
    return [
        ("identical", perm, perm.copy()),
        ("reordered", perm, rng.permutation(n)),
        ("partial", perm[: n - 1], np.r_[perm[half:], perm[:1]][: n - 1]),
        ("disjoint", perm[:half], perm[half:]),
        ("empty_b", perm, np.array([], dtype=int)),
        ("removed", perm, kept),
    ]


@pytest.mark.parametrize("metric", ["dcg", "err"])
@pytest.mark.parametrize("n_grades", [2, 3, 5])
@pytest.mark.parametrize("k", [None, 1, 3])
def test_pair_moments_match_brute_force(metric, n_grades, k):
    rng = np.random.default_rng(1000 * n_grades + (k or 0) + (metric == "err"))
    for n in (1, 2, 4, 6) if n_grades < 5 else (1, 3, 5):
        probs = random_probs(rng, n, n_grades)
        for name, a, b in overlap_patterns(rng, n):
            ea, eb, sa, sb, cr = brute_force_moments(probs, a, b, metric, k)
            res = ar.pair_moments(probs, a, b, metric=metric, k=k)
            got = (res.mean_a, res.mean_b, res.second_a, res.second_b, res.cross)
            for g, want in zip(got, (ea, eb, sa, sb, cr)):
                assert close(g, want), (name, n, got, (ea, eb, sa, sb, cr))
            dvar = sa + sb - 2 * cr - (ea - eb) ** 2
            assert abs(res.delta_variance - dvar) <= RTOL * max(1.0, sa + sb)
            if name == "identical":
                assert res.delta_variance == 0.0
                assert res.delta_mean == 0.0
            single = ar.query_moments(probs, a, metric=metric, k=k)
            assert close(single.mean, ea) and close(single.second_moment, sa)
            assert abs(single.variance - (sa - ea**2)) <= RTOL * max(1.0, sa)


def test_one_hot_probs_give_deterministic_metric():
    probs = np.eye(3)[[2, 0, 1, 2]]
    for metric in ("dcg", "err@2"):
        res = ar.query_moments(probs, [3, 1, 0, 2], metric=metric)
        want = ar.metric_value([2, 0, 1, 2], [3, 1, 0, 2], metric=metric, ymax=2)
        assert res.mean == pytest.approx(want, rel=1e-14)
        assert res.variance == 0.0


def test_identical_after_truncation_has_zero_delta_variance():
    probs = random_probs(np.random.default_rng(3), 5, 3)
    res = ar.pair_moments(probs, [0, 1, 2, 3], [0, 1, 4], metric="err", k=2)
    assert res.delta_variance == 0.0 and res.cross == res.second_a


def test_item_outside_top_k_of_one_list_counts_only_where_ranked():
    # item 2 is in a's top 2 but at rank 3 of b: with k=2 b never sees it
    probs = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    res = ar.pair_moments(probs, [0, 2], [0, 1, 2], metric="dcg", k=2)
    assert res.mean_a == pytest.approx(1 / np.log2(3)) and res.mean_b == 0.0


def _random_pool(rng, n_queries, n_grades, max_len=7):
    lengths = rng.integers(0, max_len + 1, n_queries)
    offsets = np.r_[0, np.cumsum(lengths)]
    probs = random_probs(rng, int(offsets[-1]), n_grades)
    ra, rb = [], []
    for q in range(n_queries):
        rows = np.arange(offsets[q], offsets[q + 1])
        ra.append(rng.permutation(rows))
        keep = rng.random(rows.size) < 0.8
        rb.append(rng.permutation(rows[keep]) if rng.random() < 0.5 else ra[-1][keep])
    return probs, ra, rb


@pytest.mark.parametrize("metric", ["dcg@3", "err@3", "dcg", "err"])
def test_pool_kernels_equal_per_query_functions(metric):
    rng = np.random.default_rng(7)
    probs, ra, rb = _random_pool(rng, 60, 4)
    single = ar.pool_moments(probs, ra, metric=metric)
    pair = ar.pool_pair_moments(probs, ra, rb, metric=metric)
    for q in range(len(ra)):
        s = ar.query_moments(probs, ra[q], metric=metric)
        p = ar.pair_moments(probs, ra[q], rb[q], metric=metric)
        np.testing.assert_allclose(
            [single.mean[q], single.second_moment[q], single.variance[q]],
            [s.mean, s.second_moment, s.variance], rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(
            [pair.mean_a[q], pair.mean_b[q], pair.second_a[q], pair.second_b[q], pair.cross[q],
             pair.delta_variance[q]],
            [p.mean_a, p.mean_b, p.second_a, p.second_b, p.cross, p.delta_variance],
            rtol=1e-12, atol=1e-14)


def test_pool_err_pair_blocks_agree_with_one_block(monkeypatch):
    import activerank.metrics._stats as mom_stats

    rng = np.random.default_rng(11)
    probs, ra, rb = _random_pool(rng, 80, 3, max_len=12)
    whole = ar.pool_pair_moments(probs, ra, rb, metric="err")
    monkeypatch.setattr(mom_stats, "_PAIR_BLOCK_ELEMENTS", 50)  # forces many tiny blocks
    blocks = ar.pool_pair_moments(probs, ra, rb, metric="err")
    np.testing.assert_allclose(blocks.cross, whole.cross, rtol=1e-12)


def test_rankings_object_accepted():
    probs = random_probs(np.random.default_rng(0), 4, 3)
    r = Rankings.from_list([[0, 1], [3, 2]])
    a = ar.pool_moments(probs, r, metric="err")
    b = ar.pool_moments(probs, [[0, 1], [3, 2]], metric="err")
    np.testing.assert_array_equal(a.mean, b.mean)


@st.composite
def query_cases(draw):
    n_grades = draw(st.sampled_from([2, 3, 5]))
    n = draw(st.integers(1, 5 if n_grades < 5 else 4))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    probs = random_probs(rng, n, n_grades)
    a = rng.permutation(n)[: draw(st.integers(0, n))]
    b = rng.permutation(n)[: draw(st.integers(0, n))]
    k = draw(st.one_of(st.none(), st.integers(1, n)))
    metric = draw(st.sampled_from(["dcg", "err"]))
    return probs, a, b, k, metric


@settings(max_examples=150, deadline=None, derandomize=True)
@given(query_cases())
def test_property_pair_moments_brute_force(case):
    probs, a, b, k, metric = case
    want = brute_force_moments(probs, a, b, metric, k)
    res = ar.pair_moments(probs, a, b, metric=metric, k=k)
    got = [res.mean_a, res.mean_b, res.second_a, res.second_b, res.cross]
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-12)
    assert res.delta_variance >= 0.0


# --------------------------------------------------------------------------- bad input

GOOD = [[0.5, 0.5], [0.2, 0.8]]


@pytest.mark.parametrize(
    "probs, match",
    [
        ([[0.5, -0.5], [0.2, 0.8]], r"`probs` must be non-negative; row 0"),
        ([[np.nan, 1.0], [0.2, 0.8]], r"`probs` must be finite; row 0"),
        ([[0.5, 0.5], [0.2, 0.7]], r"`probs` rows must sum to 1 \(tolerance 1e-06\); row 1"),
        ([0.5, 0.5], r"`probs` must have shape \(n_items, n_grades\)"),
        ([[1.0], [1.0]], r"`probs` must have at least 2 grade columns"),
    ],
)
def test_bad_probs(probs, match):
    with pytest.raises(ValueError, match=match):
        ar.query_moments(probs, [0, 1], metric="dcg")


def test_probs_tolerance_accepts_tiny_rounding():
    ar.query_moments([[0.5, 0.5 + 5e-7], [0.2, 0.8]], [0, 1], metric="dcg")


@pytest.mark.parametrize(
    "ranking, match",
    [
        ([0, 0], r"`ranking` must not contain duplicates; query 0 lists item 0 twice"),
        ([0, 2], r"`ranking` indices must lie in \[0, 2\); query 0 has index 2"),
        ([-1], r"`ranking` indices must lie in \[0, 2\); query 0 has index -1"),
        ([0.5, 1], r"`ranking` must hold integer indices; entry 0 is 0.5"),
        ([[0, 1]], r"`ranking` must be a 1-d sequence"),
    ],
)
def test_bad_ranking(ranking, match):
    with pytest.raises(ValueError, match=match):
        ar.query_moments(GOOD, ranking, metric="err")


def test_bad_ranking_types():
    with pytest.raises(TypeError, match=r"`ranking` must hold integer indices, not booleans"):
        ar.query_moments(GOOD, [True, False], metric="err")
    with pytest.raises(TypeError, match=r"`rankings` must be a Rankings object"):
        ar.pool_moments(GOOD, "01", metric="err")


def test_bad_pair_inputs():
    with pytest.raises(ValueError, match=r"`ranking_b` must not contain duplicates"):
        ar.pair_moments(GOOD, [0, 1], [1, 1], metric="dcg")
    with pytest.raises(ValueError, match=r"`rankings_a` and `rankings_b` must cover the same queries"):
        ar.pool_pair_moments(GOOD, [[0], [1]], [[0]], metric="dcg")
    with pytest.raises(ValueError, match=r"`rankings_b` indices must lie in \[0, 2\); query 1"):
        ar.pool_pair_moments(GOOD, [[0], [1]], [[0], [5]], metric="dcg")


@pytest.mark.parametrize("k, exc, match", [
    (0, ValueError, r"`k` must be >= 1"),
    (-3, ValueError, r"`k` must be >= 1"),
    (2.5, TypeError, r"`k` must be a positive integer or None"),
    (True, TypeError, r"`k` must be a positive integer or None"),
])
def test_bad_k(k, exc, match):
    with pytest.raises(exc, match=match):
        ar.query_moments(GOOD, [0, 1], metric="dcg", k=k)


def test_metric_without_moments_rejected():
    with pytest.raises(ValueError, match=r"`metric` 'ndcg\(gain=linear\)@5' has no exact moments"):
        ar.query_moments(GOOD, [0, 1], metric="ndcg(gain=linear)@5")
