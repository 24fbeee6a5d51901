import numpy as np
import pandas as pd
import pytest

import activerank as ar
from activerank.metrics import pool_metric_values
from activerank.metrics.moments import pool_moments, pool_pair_moments
from activerank import compare_many, rank_systems
from activerank.api import make_design
from activerank.inference.intervals import SimultaneousIntervals, kendall_tau, max_abs_t_critical_value
from activerank.inference.snis import joint_snis


def design_many(pool, rankings, probs, *, target="baseline", metric="err@10", judge="all", **kw):
    """The k-system design (target "mean" is the ranking of systems relative to the mean system)."""
    return make_design(pool, rankings, probs, target={"mean": "ranking"}.get(target, target), metric=metric,
                       judge=judge, **kw)
from activerank.ragged import Rankings
from activerank.relevance.rankers import rank_by_scores
from activerank.design.sampling import draw_budgeted
from activerank.inference.snis import snis

from .conftest import SyntheticPool, stat_reps


def _scores(pool, noise, seed):
    rng = np.random.default_rng(seed)
    base = pool.probs @ np.arange(pool.n_grades)
    return [base + s * rng.random(base.size) for s in noise]


def _labeler(pool, seed=1):
    return ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(np.random.default_rng(seed)))


# --------------------------------------------------------------------------- k = 2 agrees with compare


@pytest.mark.parametrize("judge", ["all", "changeable"])
@pytest.mark.parametrize("method", ["active", "passive", "active_uniform_costs"])
@pytest.mark.parametrize("metric", ["err@10", "dcg@5"])
def test_one_candidate_is_exactly_compare(synthetic_pool, method, metric, judge):
    pool = synthetic_pool
    a, b = _scores(pool, [0.5, 0.8], 5)
    lab = _labeler(pool)
    kw = dict(budget=40, metric=metric, method=method, rng=3, judge=judge)
    ref = ar.compare(pool, a, b, pool.probs, lab, **kw)
    res = compare_many(pool, [a], b, pool.probs, lab, **kw)
    assert res.differences[0] == ref.difference
    assert res.standard_errors[0] == ref.standard_error
    if judge == "all":
        assert res.estimates[0] == ref.estimate_a and res.baseline_estimate == ref.estimate_b
    else:  # only differences are judged
        assert np.isnan([res.estimates[0], res.baseline_estimate, ref.estimate_a, ref.estimate_b]).all()
    assert res.covariance[0, 0] == pytest.approx(ref.standard_error**2, rel=1e-14)
    assert (res.n_draws, res.n_queries, res.cost_spent) == (ref.n_draws, ref.n_queries, ref.cost_spent)
    assert res.effective_sample_size == ref.effective_sample_size
    np.testing.assert_array_equal(res.trace["query"], ref.trace["query"])
    np.testing.assert_array_equal(res.trace["weight"], ref.trace["weight"])
    ci, ci_ref = res.confidence_intervals(simultaneous=False), ref.confidence_interval()
    assert (ci.low[0], ci.high[0]) == (ci_ref.low, ci_ref.high)
    # with one estimate the simultaneous interval is the ordinary one
    assert res.confidence_intervals().critical_value == ci.critical_value
    assert res.prob_better()[0] == pytest.approx(ref.prob_a_better(), abs=1e-15)


def test_two_systems_ranking_matches_compare(synthetic_pool):
    pool = synthetic_pool
    a, b = _scores(pool, [0.5, 0.8], 6)
    lab = _labeler(pool)
    # per-draw (normal) standard errors: the ranking target has no model prior for its t interval
    kw = dict(budget=40, rng=7, ci="normal", judge="all", method="active_wor")
    ref = ar.compare(pool, a, b, pool.probs, lab, **kw)
    res = rank_systems(pool, [a, b], pool.probs, lab, names=["a", "b"], **kw)
    np.testing.assert_array_equal(res.trace["query"], ref.trace["query"])
    diff = res.estimates[0] - res.estimates[1]
    assert diff == pytest.approx(ref.difference, rel=1e-12, abs=1e-15)
    var = res.covariance[0, 0] + res.covariance[1, 1] - 2 * res.covariance[0, 1]
    assert np.sqrt(var) == pytest.approx(ref.standard_error, rel=1e-10)
    assert res.relative[0] == pytest.approx(diff / 2, rel=1e-12)
    assert res.win_probabilities.loc["a", "b"] == pytest.approx(ref.prob_a_better(), rel=1e-9)
    # judging only what can change the difference: same draws and difference, no per-system values
    kw = dict(budget=40, rng=7, ci="normal", method="active_wor")
    ref = ar.compare(pool, a, b, pool.probs, lab, **kw)
    res = rank_systems(pool, [a, b], pool.probs, lab, names=["a", "b"], **kw)
    np.testing.assert_array_equal(res.trace["query"], ref.trace["query"])
    assert np.isnan(res.estimates).all() and np.isnan(res.covariance).all()
    assert 2 * res.relative[0] == pytest.approx(ref.difference, rel=1e-12, abs=1e-15)
    assert 2 * res.standard_errors[0] == pytest.approx(ref.standard_error, rel=1e-10)
    assert res.win_probabilities.loc["a", "b"] == pytest.approx(ref.prob_a_better(), rel=1e-9)
    assert res.pairwise_intervals().estimate[0] == pytest.approx(ref.difference, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------- design


def test_design_sampling_distribution_from_moments(synthetic_pool):
    """q* recomputed independently: per-query covariance matrix of (L_1..L_k) for the
    ranking target, sum of candidate-minus-baseline errors for the baseline target."""
    pool = synthetic_pool
    rks = [rank_by_scores(s, pool.offsets) for s in _scores(pool, [0.3, 0.6, 1.0, 2.0], 8)]
    metric = "err@10"
    k = len(rks)
    n_q = pool.offsets.size - 1
    p = np.full(n_q, 1.0 / n_q)
    mean = np.stack([pool_moments(pool.probs, r, metric=metric).mean for r in rks], axis=1)
    cov = np.zeros((n_q, k, k))
    for i in range(k):
        cov[:, i, i] = pool_moments(pool.probs, rks[i], metric=metric).variance
        for j in range(i + 1, k):
            cov[:, i, j] = cov[:, j, i] = pool_pair_moments(pool.probs, rks[i], rks[j], metric=metric).covariance

    def q_star(sq, lam, defensive=0.1):
        s = p * np.sqrt(sq / lam)
        return (1 - defensive) * s / s.sum() + defensive * p

    # ranking: sum_i E[(L_i - Lbar - theta_i)^2 | x] = tr(M C M) + ||mean part||^2
    dsg = design_many(pool, rks, pool.probs, target="mean", metric=metric)
    M = np.eye(k) - 1.0 / k
    rel_mean = mean @ M
    theta = p @ rel_mean
    sq = np.einsum("ij,qjl,li->q", M, cov, M) + ((rel_mean - theta) ** 2).sum(axis=1)
    np.testing.assert_allclose(dsg.q, q_star(sq, dsg.costs.cost), rtol=1e-9)
    np.testing.assert_allclose(dsg.predicted_mean, rel_mean, rtol=1e-12, atol=1e-15)

    # baseline (last ranking): sum_j Var[L_j - L_b] + (E[L_j - L_b] - Delta_j)^2
    dsg = design_many(pool, rks, pool.probs, target="baseline", metric=metric, names=list("abcd"))
    A = np.hstack([np.eye(k - 1), -np.ones((k - 1, 1))])
    dmean = mean @ A.T
    sq = np.einsum("ij,qjl,il->q", A, cov, A) + ((dmean - p @ dmean) ** 2).sum(axis=1)
    np.testing.assert_allclose(dsg.q, q_star(sq, dsg.costs.cost), rtol=1e-9)
    assert dsg.target.names == tuple("abcd") and dsg.target.kind == "baseline"

    # costs: union of all rankings' top-10 documents
    n = pool.offsets[-1]
    raw = np.zeros(n_q)
    for x in range(n_q):
        docs = np.unique(np.concatenate([r[x][:10] for r in rks]))
        raw[x] = np.log(np.maximum(pool.doc_length[docs], 2.0)).sum()
        np.testing.assert_array_equal(np.sort(dsg.documents(x)), docs)
    np.testing.assert_allclose(dsg.costs.cost, raw / raw.mean(), rtol=1e-12)
    assert n > 0


def test_passive_design_is_p(synthetic_pool):
    pool = synthetic_pool
    rks = [rank_by_scores(s, pool.offsets) for s in _scores(pool, [0.3, 0.6, 1.0], 8)]
    w = np.random.default_rng(0).random(pool.offsets.size - 1)
    dsg = design_many(pool, rks, pool.probs, target="mean", method="passive", query_weights=w)
    np.testing.assert_allclose(dsg.q, w / w.sum())


# --------------------------------------------------------------------------- estimator pieces


def test_joint_snis_diagonal_is_snis_and_covariance_is_bilinear():
    rng = np.random.default_rng(0)
    v = rng.random((30, 3))
    w = rng.random(30) + 0.2
    est, cov, ess = joint_snis(v, w)
    for j in range(3):
        r = snis(np.ascontiguousarray(v[:, j]), w)
        assert est[j] == r.estimate and cov[j, j] == pytest.approx(r.standard_error**2, rel=1e-14)
    # Var of a linear combination equals snis of the combined values
    a = np.array([1.0, -2.0, 0.5])
    assert a @ cov @ a == pytest.approx(snis(v @ a, w).standard_error ** 2, rel=1e-12)
    np.testing.assert_allclose(cov, cov.T)
    assert ess == pytest.approx(snis(v[:, 0], w).effective_sample_size)
    e1, c1, _ = joint_snis(v[:1], w[:1])
    assert np.isfinite(e1).all() and np.isnan(c1).all()


def test_max_abs_t_critical_value():
    from scipy import stats

    for m in (2, 4, 8):  # independent estimates: exact Sidak value
        exact = stats.norm.ppf((1 + 0.95 ** (1 / m)) / 2)
        assert max_abs_t_critical_value(np.eye(m) * 3.0) == pytest.approx(exact, abs=0.01)
    R = 0.6 * np.ones((4, 4)) + 0.4 * np.eye(4)
    c = max_abs_t_critical_value(R, 0.9)
    assert c == max_abs_t_critical_value(R, 0.9)  # deterministic
    assert stats.norm.ppf(0.95) < c < max_abs_t_critical_value(R, 0.9, simultaneous="bonferroni")
    # perfectly correlated estimates need no correction; zero-variance ones are ignored
    assert max_abs_t_critical_value(np.ones((3, 3))) == pytest.approx(1.959964, abs=0.01)
    assert max_abs_t_critical_value(np.diag([1.0, 0.0])) == pytest.approx(1.959964, abs=1e-6)
    # singular (differences to the mean of 4 independent systems)
    M = np.eye(4) - 0.25
    t = np.abs(np.random.default_rng(1).standard_normal((400_000, 4)) @ M / np.sqrt(np.diag(M))).max(axis=1)
    assert max_abs_t_critical_value(M) == pytest.approx(np.quantile(t, 0.95), abs=0.02)
    assert max_abs_t_critical_value(R, simultaneous=False) == pytest.approx(1.959964, abs=1e-6)
    with pytest.raises(ValueError, match="`simultaneous` must be"):
        max_abs_t_critical_value(R, simultaneous="holm")
    with pytest.raises(ValueError, match=r"`confidence_level` must lie in \(0, 1\)"):
        max_abs_t_critical_value(R, 95)
    with pytest.raises(ValueError, match="`covariance` must be a square matrix"):
        max_abs_t_critical_value(np.ones((2, 3)))


def test_kendall_tau():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1, 2], [1, 2, 3])


# --------------------------------------------------------------------------- results


def test_ranking_result_fields(synthetic_pool):
    pool = synthetic_pool
    lab = _labeler(pool)
    scores = _scores(pool, [0.2, 1.0, 3.0, 0.6], 9)
    res = rank_systems(pool, scores, pool.probs, lab, budget=50, rng=0, names=["w", "x", "y", "z"], judge="all",
                       method="active_wor")
    assert res.names == ("w", "x", "y", "z")
    assert abs(res.relative.sum()) < 1e-14
    np.testing.assert_allclose(res.relative_covariance.sum(axis=0), 0.0, atol=1e-15)
    assert list(res.ranking) == [res.names[i] for i in np.argsort(-res.estimates)]
    W = res.win_probabilities.to_numpy()
    np.testing.assert_allclose(W + W.T, 1.0, atol=1e-12)
    assert set(res.win_probabilities.index) == set(res.names)
    assert res.kendall_tau(res.estimates) == 1.0
    assert res.kendall_tau({n: -v for n, v in zip(res.names, res.estimates)}) == -1.0
    summary = res.summary()
    assert list(summary.index) == list(res.ranking) and summary["rank"].tolist() == [1, 2, 3, 4]
    ci, ci1 = res.confidence_intervals(), res.confidence_intervals(simultaneous=False)
    assert ci.simultaneous == "max_t" and ci.critical_value > ci1.critical_value
    assert (ci.low < ci1.low).all() and ci["w"].low == ci.low[0]
    pw = res.pairwise_intervals()
    assert len(pw.names) == 6 and pw.names[0] == "w - x"
    assert pw.estimate[0] == pytest.approx(res.estimates[0] - res.estimates[1])
    assert pw.critical_value > ci.critical_value  # more simultaneous statements
    assert {f"value_{n}" for n in res.names} <= set(res.trace.columns)
    with pytest.raises(AttributeError):
        res.estimates = None
    with pytest.raises(ValueError):
        res.estimates[0] = 1.0  # read-only
    with pytest.raises(ValueError, match="`truth` must have one value per system"):
        res.kendall_tau([1.0, 2.0])
    with pytest.raises(ValueError, match=r"`truth` has no value for system\(s\) \['z'\]"):
        res.kendall_tau({"w": 1, "x": 2, "y": 3})
    with pytest.raises(KeyError, match="no interval named 'v'"):
        ci["v"]


def test_ranking_result_fields_when_only_differences_are_judged(synthetic_pool):
    pool = synthetic_pool
    lab = _labeler(pool)
    scores = _scores(pool, [0.2, 1.0, 3.0, 0.6], 9)
    res = rank_systems(pool, scores, pool.probs, lab, budget=50, rng=0, names=["w", "x", "y", "z"],
                       metric="dcg@5", method="active_wor")
    assert np.isnan(res.estimates).all() and np.isnan(res.covariance).all()
    assert abs(res.relative.sum()) < 1e-14
    assert list(res.ranking) == [res.names[i] for i in np.argsort(-res.relative, kind="stable")]
    W = res.win_probabilities.to_numpy()
    np.testing.assert_allclose(W + W.T, 1.0, atol=1e-12)
    assert res.kendall_tau(res.relative) == 1.0
    pw = res.pairwise_intervals()
    assert pw.estimate[0] == pytest.approx(res.relative[0] - res.relative[1])
    assert np.isfinite(pw.low).all()
    assert res.trace["value_w"].isna().all()


def test_multi_comparison_fields(synthetic_pool):
    pool = synthetic_pool
    lab = _labeler(pool)
    *cands, base = _scores(pool, [0.2, 1.0, 3.0, 0.6], 10)
    res = compare_many(pool, cands, base, pool.probs, lab, budget=50, rng=1, names=["a", "b", "c"],
                       baseline_name="prod", judge="all", method="active_wor")
    assert res.names == ("a", "b", "c") and res.baseline == "prod"
    np.testing.assert_allclose(res.differences, res.estimates - res.baseline_estimate, atol=1e-14)
    np.testing.assert_allclose(res.standard_errors**2, np.diag(res.covariance))
    t = res.trace
    np.testing.assert_allclose(t["delta_b"], t["value_b"] - t["value_prod"])
    df = res.summary()
    assert list(df.index) == ["a", "b", "c"]
    assert set(df.columns) == {"estimate", "difference", "standard_error", "low", "high", "prob_better"}
    bonf = res.confidence_intervals(simultaneous="bonferroni")
    assert bonf.critical_value >= res.confidence_intervals().critical_value
    assert isinstance(res.confidence_intervals().to_frame(), pd.DataFrame)


# --------------------------------------------------------------------------- input validation


def test_input_errors(synthetic_pool):
    pool = synthetic_pool
    lab = _labeler(pool)
    a, b, c = _scores(pool, [0.2, 1.0, 3.0], 11)
    kw = dict(budget=20)
    with pytest.raises(ValueError, match=r"`candidate_scores` must hold at least 1 system\(s\); got 0"):
        compare_many(pool, [], b, pool.probs, lab, **kw)
    with pytest.raises(ValueError, match=r"`candidate_scores` must be a list .* single 1-d array"):
        compare_many(pool, a, b, pool.probs, lab, **kw)
    with pytest.raises(ValueError, match=r"`scores_list` must hold at least 2 system\(s\); got 1"):
        rank_systems(pool, [a], pool.probs, lab, **kw)
    with pytest.raises(ValueError, match=r"`scores_list\[1\]` must have one score per pool document"):
        rank_systems(pool, [a, b[:-1]], pool.probs, lab, **kw)
    with pytest.raises(ValueError, match=r"`candidate_scores\[0\]` must not contain NaN"):
        compare_many(pool, [np.full_like(a, np.nan)], b, pool.probs, lab, **kw)
    with pytest.raises(ValueError, match=r"`baseline_scores` must have one score per pool document"):
        compare_many(pool, [a], b[:3], pool.probs, lab, **kw)
    with pytest.raises(ValueError, match=r"`names` must have one name per system \(2\); got 3"):
        compare_many(pool, [a, c], b, pool.probs, lab, names=["x", "y", "z"], **kw)
    with pytest.raises(ValueError, match=r"`names` must be unique; 'x' appears more than once"):
        rank_systems(pool, [a, b, c], pool.probs, lab, names=["x", "y", "x"], **kw)
    with pytest.raises(ValueError, match=r"`names` must be a sequence of 2 strings"):
        rank_systems(pool, [a, b], pool.probs, lab, names="xy", **kw)
    with pytest.raises(ValueError, match=r"`names` must be non-empty strings"):
        rank_systems(pool, [a, b], pool.probs, lab, names=["x", 3], **kw)
    with pytest.raises(ValueError, match=r"`baseline_name` 'x' must differ"):
        compare_many(pool, [a], b, pool.probs, lab, names=["x"], baseline_name="x", **kw)
    with pytest.raises(ValueError, match=r"`method` must be one of"):
        rank_systems(pool, [a, b], pool.probs, lab, method="greedy", **kw)
    with pytest.raises(TypeError, match=r"`budget` must be a positive number"):
        rank_systems(pool, [a, b], pool.probs, lab, budget="10")
    with pytest.raises(ValueError, match=r"`budget`=.* is below the cheapest"):
        rank_systems(pool, [a, b], pool.probs, lab, budget=0.01)
    with pytest.raises(ValueError, match=r"`probs` has 3 rows"):
        rank_systems(pool, [a, b], pool.probs[:3], lab, **kw)
    with pytest.raises(TypeError, match=r"`pool` must have `offsets`"):
        rank_systems(object(), [a, b], pool.probs, lab, **kw)
    rks = [rank_by_scores(s, pool.offsets) for s in (a, b)]
    with pytest.raises(ValueError, match=r"`target` must be one of \['mean', 'difference', 'baseline', 'ranking'\]"):
        design_many(pool, rks, pool.probs, target="best")
    with pytest.raises(ValueError, match=r"`target`='baseline' needs at least 2 rankings; got 1"):
        design_many(pool, rks[:1], pool.probs)
    with pytest.raises(TypeError, match=r"`rankings` must be a sequence of Rankings"):
        design_many(pool, [a, b], pool.probs)
    res = rank_systems(pool, [a, b], pool.probs, lab, budget=30, rng=0)
    with pytest.raises(ValueError, match=r"`confidence_level` must lie in \(0, 1\)"):
        res.confidence_intervals(95)
    with pytest.raises(ValueError, match=r"`simultaneous` must be True"):
        res.confidence_intervals(0.95, simultaneous="scheffe")
    with pytest.raises(ValueError, match=r"`values` must have 2 entries"):
        res.confidence_intervals().covers([0.0])


def test_rankings_objects_accepted(synthetic_pool):
    pool = synthetic_pool
    lab = _labeler(pool)
    scores = _scores(pool, [0.2, 1.0, 3.0], 12)
    rks = [rank_by_scores(s, pool.offsets) for s in scores]
    r1 = rank_systems(pool, scores, pool.probs, lab, budget=30, rng=2)
    r2 = rank_systems(pool, rks, pool.probs, lab, budget=30, rng=2)
    np.testing.assert_array_equal(r1.estimates, r2.estimates)


# --------------------------------------------------------------------------- seeded simulations


def _tiled(rankings, reps, n_docs):
    """``reps`` copies of ``rankings`` over ``reps`` stacked label vectors (one metric call)."""
    items = (rankings.items[None, :] + n_docs * np.arange(reps)[:, None]).reshape(-1)
    lengths = np.tile(rankings.lengths, reps)
    return Rankings(items, np.r_[0, np.cumsum(lengths)])


def _simulate(pool, rankings, target, budget, reps, method, metric, seed, chunk=250):
    """Repeated budgeted runs with labels drawn from the model (vectorized, no labeler loop).

    Returns per rep: estimates of the target quantities, their covariance, truths, n draws.
    """
    rng = np.random.default_rng(seed)
    dsg = design_many(pool, rankings, pool.probs, target=target, metric=metric, method=method)
    ymax = pool.n_grades - 1
    s = len(rankings)
    n_docs, n_q = pool.probs.shape[0], pool.offsets.size - 1
    A = (np.hstack([np.eye(s - 1), -np.ones((s - 1, 1))]) if target == "baseline"
         else np.eye(s) - 1.0 / s)
    cdf = np.cumsum(pool.probs, axis=1)
    est, cov, truth, n_draws = [], [], [], []
    for start in range(0, reps, chunk):
        r = min(chunk, reps - start)
        labels = (rng.random((r, n_docs))[:, :, None] > cdf[None]).sum(axis=2).clip(0, ymax)
        V = np.stack([pool_metric_values(labels.reshape(-1), _tiled(rk, r, n_docs), metric=dsg.metric,
                                         ymax=ymax).reshape(r, n_q) for rk in dsg.rankings], axis=2)
        for i in range(r):
            plan = draw_budgeted(dsg.q, dsg.costs.cost, budget, rng)
            w = dsg.p[plan.queries] / dsg.q[plan.queries]
            e, c, _ = joint_snis(V[i, plan.queries], w)
            est.append(A @ e)
            cov.append(A @ c @ A.T)
            truth.append(A @ (dsg.p @ V[i]))
            n_draws.append(plan.n_draws)
    return np.array(est), np.array(cov), np.array(truth), np.array(n_draws)


def _check_bias_and_coverage(est, cov, truth, reps):
    err = est - truth
    mc_se = err.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(err.mean(axis=0)) <= 3 * mc_se + 1e-12), (err.mean(axis=0), mc_se)
    se = np.sqrt(np.einsum("rii->ri", cov))
    cover = np.mean(np.abs(err) <= 1.959964 * se, axis=0)
    lo, hi = (0.93, 0.97) if reps >= 2000 else (0.90, 0.99)
    assert np.all((lo <= cover) & (cover <= hi)), cover
    # simultaneous max-|t| intervals: joint coverage at least nominal - 2%
    joint = np.mean([
        np.all(np.abs(e) <= max_abs_t_critical_value(c) * np.sqrt(np.diag(c)))
        for e, c in zip(err, cov)
    ])
    assert joint >= (0.93 if reps >= 2000 else 0.90), joint
    return cover, joint


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active", "passive"])
def test_compare_many_bias_and_coverage(method):
    pool = SyntheticPool(np.random.default_rng(21))
    rks = [rank_by_scores(s, pool.offsets) for s in _scores(pool, [0.3, 0.8, 2.0, 0.5], 22)]
    reps = stat_reps(2000)
    est, cov, truth, n = _simulate(pool, rks, "baseline", 70, reps, method, "err@10", seed=23)
    assert n.min() >= 50
    _check_bias_and_coverage(est, cov, truth, reps)


@pytest.mark.statistical
@pytest.mark.parametrize("metric", ["err@10", "dcg@5"])
def test_rank_systems_bias_and_coverage(metric):
    pool = SyntheticPool(np.random.default_rng(31))
    rks = [rank_by_scores(s, pool.offsets) for s in _scores(pool, [0.3, 0.8, 2.0, 0.5], 32)]
    reps = stat_reps(2000)
    est, cov, truth, n = _simulate(pool, rks, "mean", 70, reps, "active", metric, seed=33)
    assert n.min() >= 50
    _check_bias_and_coverage(est, cov, truth, reps)


def test_active_beats_passive_for_all_differences_with_true_model():
    # q* minimizes the summed variance: with the true relevance model its summed MSE is lower
    pool = SyntheticPool(np.random.default_rng(41))
    rks = [rank_by_scores(s, pool.offsets) for s in _scores(pool, [0.3, 0.8, 2.0, 0.5], 42)]
    mse = {}
    for method in ("active", "passive"):
        est, _, truth, _ = _simulate(pool, rks, "mean", 40, stat_reps(400), method, "err@10", seed=43)
        mse[method] = np.mean(((est - truth) ** 2).sum(axis=1))
    assert mse["active"] < mse["passive"]


def test_simultaneous_intervals_build():
    ci = SimultaneousIntervals.build(["a", "b"], np.array([1.0, 2.0]), np.diag([0.04, 0.09]), 0.9,
                                     simultaneous="bonferroni")
    from scipy import stats

    c = stats.norm.ppf(1 - 0.1 / 4)
    np.testing.assert_allclose(ci.high, [1 + 0.2 * c, 2 + 0.3 * c])
    assert ci.simultaneous == "bonferroni" and ci.confidence_level == 0.9
