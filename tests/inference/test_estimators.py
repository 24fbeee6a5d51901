import warnings

import numpy as np
from scipy import stats
import pytest

import activerank as ar
from activerank.api import make_design as design
from activerank.engine import estimate_from_plan
from activerank.inference.model_assisted import model_assisted
from activerank.inference.snis import LowEffectiveSampleSizeWarning, snis
from activerank.metrics import pool_metric_values
from activerank.relevance.rankers import rank_by_scores
from activerank.design.sampling import draw_budgeted

from ..conftest import SyntheticPool, stat_reps


def test_snis_uniform_weights_is_plain_mean_with_sample_sd():
    rng = np.random.default_rng(0)
    v = rng.random(40)
    res = snis(v, np.full(40, 3.0))
    assert res.estimate == pytest.approx(v.mean(), rel=1e-14)
    assert res.standard_error == pytest.approx(v.std(ddof=1) / np.sqrt(40), rel=1e-12)
    assert res.effective_sample_size == pytest.approx(40)


def test_snis_edge_cases():
    assert np.isnan(snis(np.array([]), np.array([])).estimate)
    one = snis(np.array([2.0]), np.array([1.0]))
    assert one.estimate == 2.0 and np.isnan(one.standard_error)


def _simulate(pool, rankings, budget, reps, method, metric, seed, model_probs=None):
    """Repeated budgeted runs with labels drawn from ``pool.probs``; the design may use another model.

    Returns per-repetition estimates, standard errors, realized pool truths and draw counts.
    """
    rng = np.random.default_rng(seed)
    probs = pool.probs if model_probs is None else model_probs
    dsg = design(pool, rankings, probs, metric=metric, method=method, judge="all")
    pool_pred = float(np.dot(dsg.p, dsg.predicted_mean))
    ymax = pool.n_grades - 1
    est, se, truth, n_draws = [], [], [], []
    for _ in range(reps):
        labels = pool.sample_labels(rng)
        vals = [pool_metric_values(labels, r, metric=dsg.metric, ymax=ymax) for r in dsg.rankings]
        value = vals[0] if len(vals) == 1 else vals[0] - vals[1]
        plan = draw_budgeted(dsg.q, dsg.costs.cost, budget, rng)
        w = dsg.p[plan.queries] / dsg.q[plan.queries]
        if method.startswith("model_assisted"):
            r = model_assisted(value[plan.queries], dsg.predicted_mean[plan.queries], w, pool_pred,
                               tuned=method != "model_assisted_fixed")
        else:
            r = snis(value[plan.queries], w)
        est.append(r.estimate)
        se.append(r.standard_error)
        truth.append(float(np.dot(dsg.p, value)))
        n_draws.append(plan.n_draws)
    return np.array(est), np.array(se), np.array(truth), np.array(n_draws)


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active", "passive", "model_assisted", "model_assisted_variance",
                                    "model_assisted_fixed"])
@pytest.mark.parametrize("metric", ["err@10", "dcg@5"])
def test_single_ranker_bias_and_coverage(method, metric):
    pool = SyntheticPool(np.random.default_rng(1))
    scores = np.random.default_rng(2).random(pool.offsets[-1]) + pool.probs @ np.arange(3)
    rankings = (rank_by_scores(scores, pool.offsets),)
    reps = stat_reps(2000)
    est, se, truth, n = _simulate(pool, rankings, 60, reps, method, metric, seed=3)
    assert n.min() >= 50
    err = est - truth
    mc_se = err.std(ddof=1) / np.sqrt(reps)
    # self-normalized IS has O(1/n) bias; with n >= 50 it is far below 3 MC standard errors
    assert abs(err.mean()) <= 3 * mc_se + 1e-12
    cover = np.mean(np.abs(err) <= 1.959964 * se)
    lo, hi = (0.93, 0.97) if reps >= 2000 else (0.90, 0.99)
    assert lo <= cover <= hi, cover


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active", "active_uniform_costs", "model_assisted"])
def test_comparison_bias_and_coverage(method):
    pool = SyntheticPool(np.random.default_rng(4))
    rng = np.random.default_rng(5)
    base = pool.probs @ np.arange(3)
    ra = rank_by_scores(base + 0.5 * rng.random(base.size), pool.offsets)
    rb = rank_by_scores(base + 0.8 * rng.random(base.size), pool.offsets)
    reps = stat_reps(2000)
    est, se, truth, n = _simulate(pool, (ra, rb), 60, reps, method, "err@10", seed=6)
    assert n.min() >= 50
    err = est - truth
    assert abs(err.mean()) <= 3 * err.std(ddof=1) / np.sqrt(reps)
    cover = np.mean(np.abs(err) <= 1.959964 * se)
    lo, hi = (0.93, 0.97) if reps >= 2000 else (0.90, 0.99)
    assert lo <= cover <= hi, cover


def test_active_beats_passive_when_model_is_true():
    # with the true relevance model q* is variance-optimal: active MSE must be lower
    pool = SyntheticPool(np.random.default_rng(7))
    rankings = (rank_by_scores(pool.probs @ np.arange(3), pool.offsets),)
    mse = {}
    for method in ("active", "passive"):
        est, _, truth, _ = _simulate(pool, rankings, 30, stat_reps(600), method, "dcg@10", seed=8)
        mse[method] = np.mean((est - truth) ** 2)
    assert mse["active"] < mse["passive"]


def test_uniform_q_gives_passive_mean_exactly():
    # equal list lengths + an uninformative model make every query look alike: q* = p
    rng = np.random.default_rng(0)
    pool = ar.Pool.from_qids(np.repeat(np.arange(50), 10))
    labels = rng.integers(0, 3, 500)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    uniform = np.full((500, 3), 1.0 / 3)
    kw = dict(budget=30, metric="dcg@10", costs="uniform", rng=3)
    a = ar.estimate(pool, rng.random(500), uniform, lab, method="active", **kw)
    b = ar.estimate(pool, rng.random(500), uniform, lab, method="passive", **kw)
    np.testing.assert_allclose(a.trace["weight"], 1.0, rtol=1e-12)
    assert a.estimate == pytest.approx(a.trace["value"].mean(), rel=1e-12)
    assert list(a.trace["query"]) == list(b.trace["query"])


def test_result_interval_and_fields(synthetic_pool):
    pool = synthetic_pool
    labels = pool.sample_labels(np.random.default_rng(1))
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    res = ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, budget=30, metric="err@10", method="active", rng=0)
    ci90, ci95 = res.confidence_interval(0.90), res.confidence_interval()
    assert ci95.low < ci90.low < res.estimate < ci90.high < ci95.high
    # default ci="auto" = "t_draws": Student-t with Kish's effective number of distinct queries minus 1
    k = res.trace["query"].value_counts().to_numpy().astype(float)
    assert res.ci == "t_draws" and res.dof == pytest.approx(max(min(k.sum() ** 2 / (k * k).sum(), k.size) - 1, 1))
    assert res.dof <= res.n_queries - 1
    assert ci95.high - res.estimate == pytest.approx(stats.t.ppf(0.975, res.dof) * res.standard_error, rel=1e-9)
    res = ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, budget=30, metric="err@10", method="active", rng=0,
                      ci="normal")
    ci95 = res.confidence_interval()
    assert res.ci == "normal" and res.dof == np.inf
    assert ci95.high - res.estimate == pytest.approx(1.959964 * res.standard_error, rel=1e-6)
    assert res.n_queries == res.trace["query"].nunique() and res.n_draws == len(res.trace)
    with pytest.raises(ValueError, match=r"`confidence_level` must lie in \(0, 1\)"):
        res.confidence_interval(95)
    with pytest.raises(AttributeError):
        res.estimate = 0.0  # frozen


def test_low_ess_warns(synthetic_pool):
    pool = synthetic_pool
    labels = pool.sample_labels(np.random.default_rng(1))
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    with pytest.warns(LowEffectiveSampleSizeWarning, match=r"effective sample size"):
        ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, budget=3, metric="err@10", method="active", rng=0)


def test_estimate_from_labels_matches_estimate(synthetic_pool):
    pool = synthetic_pool
    labels = pool.sample_labels(np.random.default_rng(2))
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    scores = pool.probs[:, 1]
    res = ar.estimate(pool, scores, pool.probs, lab, budget=25, metric="err", method="active", rng=11)
    dsg = design(pool, (rank_by_scores(scores, pool.offsets),), pool.probs, metric="err")
    plan = draw_budgeted(dsg.q, dsg.costs.cost, 25, np.random.default_rng(11))
    judged = np.full(labels.size, -1)
    for x in np.unique(plan.queries):
        judged[dsg.documents(int(x))] = labels[dsg.documents(int(x))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowEffectiveSampleSizeWarning)
        again = estimate_from_plan(dsg, ar.pool.Pool(pool.query_ids, pool.offsets), plan, judged)
    assert again.estimate == res.estimate and again.standard_error == res.standard_error


@pytest.mark.statistical
def test_tuned_control_variate_survives_an_anti_correlated_model():
    # the design's model predicts the opposite of the truth: the fixed control variate
    # adds its errors, the tuned coefficient must not be materially worse than plain active IS
    pool = SyntheticPool(np.random.default_rng(21))
    rankings = (rank_by_scores(pool.probs @ np.arange(3), pool.offsets),)
    flipped = pool.probs[:, ::-1]
    reps = stat_reps(800)
    mse = {}
    for method in ("active", "model_assisted", "model_assisted_variance", "model_assisted_fixed"):
        est, _, truth, _ = _simulate(pool, rankings, 60, reps, method, "dcg@10", seed=22,
                                     model_probs=flipped)
        mse[method] = np.mean((est - truth) ** 2)
    assert mse["model_assisted_fixed"] > 1.2 * mse["active"]
    assert mse["model_assisted"] < 1.1 * mse["active"]
    assert mse["model_assisted_variance"] < 1.1 * mse["active"]


@pytest.mark.statistical
def test_control_variate_helps_with_a_calibrated_model():
    pool = SyntheticPool(np.random.default_rng(23))
    rankings = (rank_by_scores(pool.probs @ np.arange(3), pool.offsets),)
    mse = {}
    for method in ("active", "model_assisted", "model_assisted_variance", "passive"):
        est, _, truth, _ = _simulate(pool, rankings, 40, stat_reps(800), method, "dcg@10", seed=24)
        mse[method] = np.mean((est - truth) ** 2)
    assert mse["model_assisted"] < mse["active"] < mse["passive"]
    assert mse["model_assisted_variance"] < mse["active"]


def test_model_assisted_estimator_properties():
    rng = np.random.default_rng(0)
    L = rng.random(50)
    w = rng.uniform(0.5, 2.0, 50)
    # an uninformative (constant) prediction reduces to the plain SNIS estimate
    flat = model_assisted(L, np.full(50, 0.3), w, 0.3)
    plain = snis(L, w)
    assert flat.estimate == pytest.approx(plain.estimate, rel=1e-13) and flat.coefficient == 0.0
    # fixed coefficient: R = M + SNIS(L - m)
    m = L + rng.normal(0, 0.1, 50)
    fixed = model_assisted(L, m, w, 0.7, tuned=False)
    assert fixed.estimate == pytest.approx(0.7 + snis(L - m, w).estimate, rel=1e-13)
    assert fixed.coefficient == 1.0
