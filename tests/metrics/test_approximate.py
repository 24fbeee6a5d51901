import itertools
import zlib

import numpy as np
import pytest

import activerank as ar
from activerank.metrics import (
    custom_metric,
    judged_documents,
    monte_carlo_moments,
    monte_carlo_pair_moments,
    predicted_moments,
    predicted_pair_moments,
)
from activerank.metrics import approximate
from activerank.ragged import Rankings

from activerank.metrics.values import label_matrix_values

from .._reference import brute_force_pair, naive_ap, naive_ndcg, naive_rr, random_probs

RTOL = 1e-10
EXACT_TEXTS = ["dcg(gain=linear)", "dcg(gain=linear)@2", "p@1", "p@3", "p(rel=2)@2", "rbp", "rbp(p=0.5,rel=2)",
               "rbp(p=0.9)@2", "rbp(rel=graded)@3", "dcg(gain={1:3,2:1})@2", "rr", "rr@2", "rr(rel=2)", "success@2",
               "success(rel=2)@3", "err(ymax=4)", "err(ymax=6)@2"]
APPROX_TEXTS = ["ndcg(gain=exp)", "ndcg(gain=exp)@2", "ndcg(gain=linear)@3", "ndcg(gain={1:3,2:1})@2", "ap", "ap@2",
                "ap(rel=2)", "r@2", "r(rel=2)@3"]


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def overlap_patterns(rng, n):
    perm = rng.permutation(n)
    half = max(1, n // 2)
    drop = set(rng.choice(n, size=max(1, n // 3), replace=False).tolist())
    kept = np.array([z for z in perm if z not in drop], dtype=int)
    return [
        ("identical", perm, perm.copy()),
        ("reordered", perm, rng.permutation(n)),
        ("partial", perm[: n - 1], np.r_[perm[half:], perm[:1]][: n - 1]),
        ("disjoint", perm[:half], perm[half:]),
        ("empty_b", perm, np.array([], dtype=int)),
        ("removed", perm, kept),
    ]


def _enumerate(probs, text, rankings, judged=None):
    """Probability of every label vector and the metric value of each ranking under it.

    Values come from the value kernel (tested against naive loops in test_values.py),
    applied to all label vectors at once.
    """
    probs = np.asarray(probs)
    n, n_grades = probs.shape
    Y = np.array(list(itertools.product(range(n_grades), repeat=n)), dtype=np.int64).T  # (n, V)
    p = np.prod(probs[np.arange(n)[:, None], Y], axis=0)
    m = ar.parse_metric(text)
    J = Rankings.from_list([np.arange(n) if judged is None else judged])
    out = []
    for r in rankings:
        top = Rankings.from_list([np.asarray(r, dtype=np.int64)]).truncate(m.k)
        yr = Y[top.items]
        if m.family == "ratio":
            yr = np.where(np.isin(top.items, J.items)[:, None], yr, 0)
        out.append(label_matrix_values(m, n_grades, top, yr, J, Y[J.items])[0])
    return p, out


def _moments_from(p, La, Lb):
    return np.array([p @ La, p @ Lb, p @ La**2, p @ Lb**2, p @ (La * Lb)])


def _close(a, b):
    return abs(a - b) <= RTOL * max(1.0, abs(b))


# --------------------------------------------------------------------------- exact metrics vs enumeration


@pytest.mark.parametrize("text", EXACT_TEXTS)
@pytest.mark.parametrize("n_grades", [3, 5])
def test_exact_pair_moments_match_brute_force(text, n_grades):
    rng = np.random.default_rng(_seed(text, n_grades))
    for n in (1, 2, 4, 6) if n_grades < 5 else (1, 3, 5):
        probs = random_probs(rng, n, n_grades)  # one-hot rows: certain relevance (E[1 - R] = 0 for rr)
        for name, a, b in overlap_patterns(rng, n):
            p, (La, Lb) = _enumerate(probs, text, [a, b])
            want = _moments_from(p, La, Lb)
            res = ar.pair_moments(probs, a, b, metric=text)
            got = (res.mean_a, res.mean_b, res.second_a, res.second_b, res.cross)
            assert all(_close(g, w) for g, w in zip(got, want)), (name, n, got, want)
            ea, eb, sa, sb, cr = want
            assert abs(res.delta_variance - (sa + sb - 2 * cr - (ea - eb) ** 2)) <= RTOL * max(1.0, sa + sb)
            single = ar.query_moments(probs, a, metric=text)
            assert _close(single.mean, ea) and _close(single.second_moment, sa)


def test_rr_pair_with_certain_relevance_has_no_nan():
    # independent reference: plain-loop reciprocal rank over every label vector
    probs = np.array([[0.0, 1.0], [0.0, 1.0], [0.4, 0.6], [1.0, 0.0]])
    for a, b in [([0, 1, 2, 3], [3, 2, 1, 0]), ([2, 0], [0, 2]), ([3, 0], [1, 3])]:
        res = ar.pair_moments(probs, a, b, metric="rr")
        want = brute_force_pair(probs, lambda ys, a=a: naive_rr(ys, a), lambda ys, b=b: naive_rr(ys, b))
        assert np.allclose([res.mean_a, res.mean_b, res.second_a, res.second_b, res.cross], want, rtol=1e-12)


@pytest.mark.parametrize("text", ["rr", "rr@3", "p@3", "rbp(p=0.7)", "dcg(gain=linear)@4", "err(ymax=4)@3"])
def test_exact_pool_pair_moments_match_per_query(text):
    # many queries of different lengths: exercises the blocked, position-major pool kernels
    rng = np.random.default_rng(_seed(text))
    lengths = rng.integers(0, 9, 120)
    offsets = np.r_[0, np.cumsum(lengths)]
    probs = random_probs(rng, offsets[-1], 3)
    ra = [rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(120)]
    rb = [rng.permutation(r)[: rng.integers(0, r.size + 1)] for r in ra]
    pool = ar.pool_pair_moments(probs, ra, rb, metric=text)
    for q in range(0, 120, 7):
        rows = np.arange(offsets[q], offsets[q + 1])
        loc = {z: i for i, z in enumerate(rows)}
        one = ar.pair_moments(probs[rows], [loc[z] for z in ra[q]], [loc[z] for z in rb[q]], metric=text)
        for f in ("mean_a", "mean_b", "second_a", "second_b", "cross", "delta_variance"):
            assert abs(getattr(pool, f)[q] - getattr(one, f)) <= 1e-12 * max(1.0, abs(getattr(one, f))), (q, f)


@pytest.mark.parametrize("text", EXACT_TEXTS[:6])
def test_predicted_moments_auto_uses_exact_kernels(text):
    rng = np.random.default_rng(5)
    probs = random_probs(rng, 12, 3)
    r = [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9, 10, 11]]
    got = predicted_moments(probs, r, text)
    want = ar.pool_moments(probs, r, metric=text)
    np.testing.assert_array_equal(got.mean, want.mean)
    np.testing.assert_array_equal(got.variance, want.variance)
    gp = predicted_pair_moments(probs, r, [x[::-1] for x in r], text)
    wp = ar.pool_pair_moments(probs, r, [x[::-1] for x in r], metric=text)
    np.testing.assert_array_equal(gp.cross, wp.cross)


def test_existing_exact_metrics_reject_approximate_ones_clearly():
    with pytest.raises(ValueError, match=r"'ndcg\(gain=linear\)@5' has no exact moments .*predicted_moments"):
        ar.pool_moments([[0.5, 0.5]], [[0]], metric="ndcg(gain=linear)@5")
    with pytest.raises(ValueError, match=r"'ap' has no exact moments"):
        ar.pool_pair_moments([[0.5, 0.5]], [[0]], [[0]], metric="ap")
    with pytest.raises(ValueError, match=r"'ap' has no exact moments"):
        predicted_moments([[0.5, 0.5]], [[0]], "ap", method="exact")


# --------------------------------------------------------------------------- Monte Carlo vs enumeration


def _distribution(probs, fa, fb):
    """Every label vector's probability and the two metric values (for exact Monte-Carlo SEs)."""
    probs = np.asarray(probs)
    out = []
    for ys in itertools.product(range(probs.shape[1]), repeat=probs.shape[0]):
        p = float(np.prod(probs[np.arange(probs.shape[0]), ys]))
        if p > 0:
            out.append((p, fa(ys), fb(ys)))
    return np.array(out)


def _check_mc(got, p, values, n_samples, z=5.0):
    """A Monte-Carlo average of f(L) is within z standard errors of its exact expectation."""
    mean = float(np.dot(p, values))
    se = np.sqrt(max(float(np.dot(p, (values - mean) ** 2)), 0.0) / n_samples)
    assert abs(got - mean) <= z * se + 1e-12, (got, mean, se)


@pytest.mark.parametrize("text", APPROX_TEXTS + ["dcg@2", "rr", "err"])
def test_monte_carlo_pair_moments_match_enumeration(text):
    rng = np.random.default_rng(_seed(text, "mc"))
    S = 20000
    for n in (2, 4, 5):
        probs = random_probs(rng, n, 3)
        judged = np.arange(n)
        for name, a, b in overlap_patterns(rng, n)[:4]:
            p, (La, Lb) = _enumerate(probs, text, [a, b])
            J = [judged]
            res = monte_carlo_pair_moments(probs, [a], [b], text, rng=_seed(text, n, name), n_samples=S,
                                           judged=J if ar.parse_metric(text).family == "ratio" else None)
            _check_mc(res.mean_a[0], p, La, S)
            _check_mc(res.mean_b[0], p, Lb, S)
            _check_mc(res.second_a[0], p, La**2, S)
            _check_mc(res.cross[0], p, La * Lb, S)
            dmean = float(np.dot(p, La - Lb))
            _check_mc(res.delta_variance[0], p, (La - Lb - dmean) ** 2, S, z=6.0)
            if name == "identical":
                assert res.delta_variance[0] == 0.0 and res.delta_mean[0] == 0.0


def test_monte_carlo_single_moments_of_ndcg_with_judged_pool():
    # the ranking shows 2 of 4 judged documents; the ideal DCG uses all 4
    rng = np.random.default_rng(21)
    probs = random_probs(rng, 4, 3, sharp=False)
    def f(ys):
        return naive_ndcg(ys, [1, 3], range(4), k=2)

    dist = _distribution(probs, f, f)
    S = 20000
    res = predicted_moments(probs, [[1, 3]], "ndcg(gain=exp)@2", judged=[[0, 1, 2, 3]], rng=1, n_samples=S)
    _check_mc(res.mean[0], dist[:, 0], dist[:, 1], S)
    _check_mc(res.second_moment[0], dist[:, 0], dist[:, 1] ** 2, S)
    assert res.variance[0] == pytest.approx(res.second_moment[0] - res.mean[0] ** 2, abs=1e-12)
    # the default normalizer is the whole query's, as pool_metric_values': the pool says which rows it has
    pooled = predicted_moments(probs, [[1, 3]], "ndcg(gain=exp)@2", offsets=[0, 4], rng=1, n_samples=S)
    same_set = predicted_moments(probs, [[1, 3]], "ndcg(gain=exp)@2", judged=[[1, 3, 0, 2]], rng=1, n_samples=S)
    np.testing.assert_array_equal(pooled.mean, same_set.mean)
    _check_mc(pooled.mean[0], dist[:, 0], dist[:, 1], S)
    with pytest.raises(ValueError, match=r"`rankings` do not list every document of each query \(seen at query 0"):
        predicted_moments(probs, [[1, 3]], "ndcg(gain=exp)@2", rng=1, n_samples=S)
    # AP against the plain-loop reference, with the same judged pool
    def g(ys):
        return naive_ap(ys, [1, 3], range(4))

    dist = _distribution(probs, g, g)
    ap = predicted_moments(probs, [[1, 3]], "ap", judged=[[0, 1, 2, 3]], rng=2, n_samples=S)
    _check_mc(ap.mean[0], dist[:, 0], dist[:, 1], S)
    _check_mc(ap.second_moment[0], dist[:, 0], dist[:, 1] ** 2, S)


def test_monte_carlo_custom_metric_matches_enumeration():
    succ = custom_metric("succ2", lambda y, v: (y[..., :2] >= 1).any(axis=-1).astype(float))
    probs = random_probs(np.random.default_rng(2), 4, 3, sharp=False)
    def f(ys):
        return float(ys[2] >= 1 or ys[0] >= 1)

    dist = _distribution(probs, f, f)
    S = 20000
    res = predicted_moments(probs, [[2, 0, 3]], succ, rng=0, n_samples=S)
    _check_mc(res.mean[0], dist[:, 0], dist[:, 1], S)
    # success@2 is Bernoulli(1 - P(y_2 = 0) P(y_0 = 0)): check against the closed form too
    want = 1 - probs[2, 0] * probs[0, 0]
    assert abs(res.mean[0] - want) < 5 * np.sqrt(want * (1 - want) / S)


def test_monte_carlo_of_exact_metrics_agrees_with_exact_on_a_pool():
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 12, 60)
    offsets = np.r_[0, np.cumsum(lengths)]
    probs = random_probs(rng, offsets[-1], 3, sharp=False)
    r = [rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(60)]
    S = 4000
    for text in ("dcg@5", "err", "rr", "p@3", "rbp"):
        ex = ar.pool_moments(probs, r, metric=text)
        mc = monte_carlo_moments(probs, r, text, rng=3, n_samples=S)
        se = np.sqrt(ex.variance / S)
        z = np.abs(mc.mean - ex.mean) / np.where(se > 0, se, 1)
        assert np.all(z[se > 0] < 5) and np.all(mc.mean[se == 0] == ex.mean[se == 0])
        # second moments: relative error small on average (kurtosis-dependent, so a loose bound)
        big = ex.variance > 1e-3
        assert np.median(np.abs(mc.variance[big] / ex.variance[big] - 1)) < 0.05


def test_monte_carlo_blocks_and_certain_labels(monkeypatch):
    # one-hot probabilities: every draw is the true label vector, whatever the blocking
    rng = np.random.default_rng(4)
    lengths = rng.integers(0, 10, 50)
    offsets = np.r_[0, np.cumsum(lengths)]
    labels = rng.integers(0, 3, offsets[-1])
    probs = np.eye(3)[labels]
    r = [rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(50)]
    rb = [x[::-1] for x in r]
    for cells in (1 << 21, 64):
        monkeypatch.setattr(approximate, "_MC_CELLS", cells)
        for text in ("ndcg(gain=exp)@3", "ap", "ndcg(gain=linear)", "r@4"):
            res = predicted_pair_moments(probs, r, rb, text, rng=0, n_samples=8)
            np.testing.assert_allclose(res.mean_a, ar.pool_metric_values(labels, r, metric=text, ymax=2),
                                       rtol=1e-13)
            np.testing.assert_allclose(res.mean_b, ar.pool_metric_values(labels, rb, metric=text, ymax=2),
                                       rtol=1e-13)
            assert np.all(res.delta_variance == 0.0)


def test_monte_carlo_is_seeded():
    probs = random_probs(np.random.default_rng(0), 8, 3, sharp=False)
    r = [[0, 1, 2, 3], [4, 5, 6, 7]]
    a = predicted_moments(probs, r, "ap", rng=5, n_samples=64)
    b = predicted_moments(probs, r, "ap", rng=np.random.default_rng(5), n_samples=64)
    c = predicted_moments(probs, r, "ap", rng=6, n_samples=64)
    np.testing.assert_array_equal(a.mean, b.mean)
    assert not np.array_equal(a.mean, c.mean)


# --------------------------------------------------------------------------- judged documents


def test_judged_documents_rules():
    a = Rankings.from_list([[2, 0, 1], [4, 3, 5], []])
    b = Rankings.from_list([[1, 0, 2], [5, 3, 4], []])
    off = [0, 3, 6, 8]

    def lists(x):
        return [v.tolist() for v in x.to_list()]

    assert lists(judged_documents([a, b], "dcg@1")) == [[2, 1], [4, 5], []]
    assert lists(judged_documents([a, b], "rr@2")) == [[2, 0, 1], [4, 3, 5], []]
    assert lists(judged_documents(a, "err")) == [[2, 0, 1], [4, 3, 5], []]
    # ratio metrics: the whole query (query 2 has two unranked documents that must be judged)
    assert lists(judged_documents([a, b], "ndcg(gain=linear)@1", offsets=off)) == [[2, 1, 0], [4, 5, 3], [6, 7]]
    assert lists(judged_documents(a, "ap@1", offsets=off)) == [[2, 0, 1], [4, 3, 5], [6, 7]]
    assert lists(judged_documents(a, "r@1", offsets=off)) == [[2, 0, 1], [4, 3, 5], [6, 7]]
    # judging depth: union of top max(depth, k)
    assert lists(judged_documents([a, b], "ndcg(gain=linear,depth=2)@1")) == [[2, 1, 0], [4, 5, 3], []]
    # without offsets: complete rankings of a pool of n_docs rows say which rows a query has
    assert lists(judged_documents([a, b], "ap", n_docs=6)) == [[2, 0, 1], [4, 3, 5], []]
    with pytest.raises(ValueError, match=r"judged_documents of 'ap' needs the pool: pass `offsets`"):
        judged_documents([a, b], "ap")
    with pytest.raises(ValueError, match=r"`rankings` do not list every document of each query \(seen at query 2"):
        judged_documents([a, b], "ap", n_docs=8)


def test_judged_documents_accepts_pool_objects_and_feeds_costs():
    pool = ar.load_sample()
    from activerank.relevance.rankers import rank_by_scores
    from activerank.design.costs import query_costs
    r = rank_by_scores(pool.X[:, 24], pool)
    J = judged_documents(r, "ndcg(gain=linear)@10", offsets=pool)
    np.testing.assert_array_equal(J.lengths, pool.lengths)
    top = judged_documents(r, "dcg@10", offsets=pool)
    np.testing.assert_array_equal(top.lengths, np.minimum(pool.lengths, 10))
    qc = query_costs(np.ones(pool.n_docs), [J])
    np.testing.assert_array_equal(qc.raw, pool.lengths)


def test_judged_documents_bad_input():
    a = Rankings.from_list([[0, 1]])
    with pytest.raises(ValueError, match=r"`offsets` describes 2 queries but the rankings cover 1"):
        judged_documents(a, "ap", offsets=[0, 1, 2])
    with pytest.raises(ValueError, match=r"`offsets` must be a non-decreasing 1-d integer array"):
        judged_documents(a, "ap", offsets=[1, 2])
    with pytest.raises(ValueError, match=r"must all cover the same queries"):
        judged_documents([a, Rankings.from_list([[0], [1]])], "dcg")


def test_predicted_moments_bad_input():
    probs = [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(ValueError, match=r"`n_samples` must be >= 2"):
        predicted_moments(probs, [[0, 1]], "ap", n_samples=1)
    with pytest.raises(TypeError, match=r"`n_samples` must be an integer"):
        predicted_moments(probs, [[0, 1]], "ap", n_samples=2.5)
    with pytest.raises(ValueError, match=r"`method` must be one of"):
        predicted_moments(probs, [[0, 1]], "ap", method="delta")
    with pytest.raises(ValueError, match=r"`judged` and `offsets` are only used by metrics without exact moments"):
        predicted_moments(probs, [[0, 1]], "dcg", judged=[[0, 1]])
    with pytest.raises(ValueError, match=r"`judged` must cover the same queries"):
        predicted_moments(probs, [[0, 1]], "ap", judged=[[0], [1]])
    with pytest.raises(ValueError, match=r"`rankings_a` and `rankings_b` must cover the same queries"):
        predicted_pair_moments(probs, [[0, 1]], [[0], [1]], "ap")


def test_docs_examples_run():
    """Every Python block of docs/metrics.md runs as written (the user-defined metric example)."""
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    for code in blocks:
        namespace = {}
        exec(compile(code, "docs/metrics.md", "exec"), namespace)
    q = namespace["q"]
    assert q.shape == (namespace["pool"].n_queries,) and abs(q.sum() - 1) < 1e-12
