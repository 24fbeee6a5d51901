"""The engine's default small-sample intervals (ci="t") through the public API."""

import warnings

import numpy as np
import pytest
from scipy import stats

import activerank as ar
from activerank.inference.intervals import ConfidenceInterval
from activerank.inference.small_sample import FewDistinctQueriesWarning, contrast_intervals
from activerank.metrics import pool_metric_values
from activerank.relevance.rankers import rank_by_scores

from ..conftest import SyntheticPool, stat_reps


def _problem(seed):
    rng = np.random.default_rng(seed)
    pool = SyntheticPool(rng, n_queries=150)
    a = pool.probs @ np.arange(3) + 0.5 * rng.random(pool.probs.shape[0])
    b = pool.probs @ np.arange(3) + 0.8 * rng.random(pool.probs.shape[0])
    return pool, a, b, rng


def test_t_interval_is_the_cluster_covariance_over_distinct_queries():
    pool, a, b, rng = _problem(3)
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    res = ar.compare(pool, a, b, pool.probs, lab, budget=25, metric="dcg@5", rng=4, method="passive",
                     ci="t", judge="all")
    tr = res.trace
    x = tr["query"].to_numpy()
    # passive: the model prior is the only difference to the plain cluster formula, and it can only
    # pull the standard error towards the prediction; the point estimate is unchanged
    plain = contrast_intervals(tr[["delta"]].to_numpy(), tr["weight"].to_numpy(), x)
    assert res.difference == pytest.approx(float(plain.estimate[0]), rel=1e-12)
    assert res.dof == np.unique(x).size - 1 == plain.dof
    normal = ar.compare(pool, a, b, pool.probs, lab, budget=25, metric="dcg@5", rng=4, method="passive",
                        ci="normal", judge="all")
    assert normal.difference == res.difference and normal.dof == np.inf and normal.ci == "normal"
    lo, hi = res.confidence_interval()
    assert hi - res.difference == pytest.approx(stats.t.ppf(0.975, res.dof) * res.standard_error, rel=1e-9)
    assert lo < res.difference < hi
    with pytest.raises(ValueError, match=r"`ci` must be one of \['auto', 't', 't_draws', 'bootstrap', 'normal'\]; got 'z'"):
        ar.compare(pool, a, b, pool.probs, lab, budget=25, rng=4, ci="z")


def test_compare_many_uses_multivariate_t():
    pool, a, b, rng = _problem(5)
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    c = a + 0.3 * rng.random(a.size)
    res = ar.compare_many(pool, [a, c], b, pool.probs, lab, budget=20, metric="dcg@5", method="active", rng=1)
    assert res.ci == "t_draws" and np.isfinite(res.dof)  # the default (ci="auto")
    t_sim = res.confidence_intervals(simultaneous=True).critical_value
    t_one = res.confidence_intervals(simultaneous=False).critical_value
    normal = ar.compare_many(pool, [a, c], b, pool.probs, lab, budget=20, metric="dcg@5", method="active", rng=1,
                             ci="normal")
    z_sim = normal.confidence_intervals(simultaneous=True).critical_value
    # heavier tails than the normal at the same dependence, and the joint value above the single one
    assert t_sim > t_one > 1.96 and t_sim > z_sim


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active", "model_assisted"])
def test_coverage_and_bias_at_ten_queries(method):
    """At ~10 distinct queries the t interval covers near nominal; the cross-fitted model-assisted
    estimate is unbiased (the self-tuned one was biased by up to +5 SE, issue 15)."""
    pool, a, b, rng = _problem(11)
    ra, rb = rank_by_scores(a, pool.offsets), rank_by_scores(b, pool.offsets)
    reps = stat_reps(300)
    err, cover_t, se = (np.empty(reps) for _ in range(3))
    for i in range(reps):
        labels = pool.sample_labels(rng)
        lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
        truth = float(np.mean(pool_metric_values(labels, ra.truncate(5), metric="dcg@5", ymax=2)
                              - pool_metric_values(labels, rb.truncate(5), metric="dcg@5", ymax=2)))
        kw = dict(budget=10, metric="dcg@5", rng=rng.integers(2**32), method=method)
        with warnings.catch_warnings():  # ~10 draws: the low-ESS warning is expected on most runs
            warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
            res = ar.compare(pool, a, b, pool.probs, lab, **kw)
        lo, hi = res.confidence_interval()
        err[i], se[i] = res.difference - truth, res.standard_error
        cover_t[i] = lo <= truth <= hi
    mc_se = err.std(ddof=1) / np.sqrt(reps)
    print(f"\n{method}: reps={reps} coverage(t)={cover_t.mean():.3f} bias={err.mean():.4f} "
          f"(MC SE {mc_se:.4f}) mean SE / SD = {se.mean() / err.std(ddof=1):.2f}")
    assert abs(err.mean()) <= 3 * mc_se
    # nominal 0.95; at 300 reps the binomial SE is 0.013: 0.90 is > 3 SE below nominal
    assert cover_t.mean() >= 0.90



# --------------------------------------------------------------------------- ci="bootstrap", ci="t_draws"


class _Recording:
    def __init__(self, pool, labels):
        self.inner = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
        self.asked = []

    def __call__(self, qid, docs):
        self.asked.append(qid)
        return self.inner(qid, docs)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
        warnings.simplefilter("ignore", FewDistinctQueriesWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("method", ["active", "passive", "model_assisted", "model_assisted_fixed"])
def test_bootstrap_keeps_the_draws_and_the_point_estimate(method):
    pool, a, b, rng = _problem(7)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    kw = dict(budget=15, metric="dcg@5", method=method, judge="all")  # no census stratum: SE of the trace
    t = _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=3, ci="t", **kw)
    g = np.random.default_rng(3)
    boot = _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=g, ci="bootstrap", **kw)
    g_t = np.random.default_rng(3)
    _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=g_t, ci="t", **kw)
    # the bootstrap's generator is derived from a copy: the caller's generator ends where ci="t" leaves it
    assert g.bit_generator.state == g_t.bit_generator.state
    np.testing.assert_array_equal(boot.trace["query"], t.trace["query"])
    assert boot.difference == t.difference
    assert boot.ci == "bootstrap" and t.ci == "t" and boot.dof == t.dof and t.bootstrap is None
    # studentized with the sample's own cluster SE (no model prior)
    if method in ("active", "passive"):
        plain = contrast_intervals(boot.trace[["delta"]].to_numpy(), boot.trace["weight"].to_numpy(),
                                   boot.trace["query"].to_numpy())
        assert boot.standard_error == pytest.approx(float(plain.standard_error[0]), rel=1e-12)
    assert boot.bootstrap.n_boot == 999
    ci = boot.confidence_interval()
    assert isinstance(ci, ConfidenceInterval)
    assert ci.low < boot.difference < ci.high
    # asymmetric, and not the t interval
    assert abs((ci.high - boot.difference) - (boot.difference - ci.low)) > 1e-6 * boot.standard_error
    assert ci != t.confidence_interval()
    narrow, wide = boot.confidence_interval(0.8), boot.confidence_interval(0.99)
    assert wide.low <= ci.low <= narrow.low < narrow.high <= ci.high <= wide.high
    assert 0.0 <= boot.prob_a_better() <= 1.0
    with pytest.warns(FewDistinctQueriesWarning, match=r"only \d+ distinct queries: the bootstrap interval"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
            again = ar.compare(pool, a, b, pool.probs, lab, rng=3, ci="bootstrap", **kw)  # seeded: reproducible
    assert again.confidence_interval() == ci
    other = _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=4, ci="bootstrap", **kw)
    assert other.confidence_interval() != ci


def test_bootstrap_interval_is_the_kernel_on_the_run():
    """The engine's bootstrap is snis_interval(ci="bootstrap") on the trace, with the model prior and the
    generator derived from the run's seed."""
    from activerank.engine.core import bootstrap_generator
    from activerank.inference.small_sample import snis_interval

    pool, a, b, rng = _problem(8)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    res = _quiet(ar.estimate, pool, a, pool.probs, lab, budget=12, metric="dcg@5", method="active", rng=5,
                 ci="bootstrap")
    tr = res.trace
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = snis_interval(tr["value"], tr["weight"], tr["query"], ci="bootstrap", n_boot=999,
                            rng=bootstrap_generator(np.random.default_rng(5)))
    lo, hi = res.confidence_interval()
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-9)
    assert (lo, hi) == (pytest.approx(ref.low, rel=1e-9), pytest.approx(ref.high, rel=1e-9))


def test_bootstrap_with_a_census_stratum_and_adaptive_batches():
    pool, a, b, rng = _problem(9)
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    ra = rank_by_scores(a, pool.offsets)
    lists = [[z for z in ra[x].tolist() if z % 7] or ra[x][:1].tolist() for x in range(ra.n_queries)]
    rb = ar.Rankings.from_list(lists)  # an index update: many differences exactly 0 (census stratum)
    t = _quiet(ar.compare, pool, ra, rb, pool.probs, lab, budget=10, metric="dcg@5", method="active", rng=1)
    boot = _quiet(ar.compare, pool, ra, rb, pool.probs, lab, budget=10, metric="dcg@5", method="active", rng=1,
                  ci="bootstrap")
    assert boot.difference == t.difference and boot.n_draws == t.n_draws
    lo, hi = boot.confidence_interval()
    assert lo < boot.difference < hi
    from activerank.relevance.models import make_relevance_model

    X = pool.probs  # features: the model's own probabilities (a fast, informative logistic fit)
    kw = dict(budget=20, n_batches=2, metric="dcg@5", train=(X, labels), rng=2)
    at = _quiet(ar.estimate_adaptive, pool, a, make_relevance_model("logistic", 3), X, lab, ci="t", **kw)
    ab = _quiet(ar.estimate_adaptive, pool, a, make_relevance_model("logistic", 3), X, lab, ci="bootstrap", **kw)
    assert ab.estimate == at.estimate and ab.ci == "bootstrap"
    lo, hi = ab.confidence_interval()
    assert lo < ab.estimate < hi


def test_bootstrap_is_refused_before_any_label_where_it_does_not_apply():
    pool, a, b, rng = _problem(10)
    lab = _Recording(pool, pool.sample_labels(rng))
    c = a + 0.3 * rng.random(a.size)
    with pytest.raises(ValueError, match=r"`ci`='bootstrap' .* compare_many and rank_systems report joint"):
        ar.compare_many(pool, [a, c], b, pool.probs, lab, budget=10, metric="dcg@5", method="active", rng=1,
                        ci="bootstrap")
    with pytest.raises(ValueError, match=r"`ci`='bootstrap' .* compare_many and rank_systems"):
        ar.rank_systems(pool, [a, b, c], pool.probs, lab, budget=10, metric="dcg@5", method="active", rng=1,
                        ci="bootstrap")
    with pytest.raises(ValueError, match=r"`ci`='bootstrap' .* method 'doc_dyn' samples single documents"):
        ar.compare(pool, a, b, pool.probs, lab, budget=10, metric="dcg@5", method="doc_dyn", rng=1,
                   ci="bootstrap")
    assert lab.asked == []
    with pytest.raises(ValueError, match=r"`ci` must be one of \['auto', 't', 't_draws', 'bootstrap', "
                                         r"'normal'\]; got 'bca'"):
        ar.estimate(pool, a, pool.probs, lab, budget=10, method="active", rng=1, ci="bca")


def test_bootstrap_refuses_a_target_precision_schedule_and_unknown_estimators():
    from activerank.engine import Sequential, run
    from activerank.pool import pool_iv

    pool, a, b, rng = _problem(12)
    lab = _Recording(pool, pool.sample_labels(rng))
    dsg = ar.make_design(pool, (rank_by_scores(a, pool.offsets),), pool.probs, metric="dcg@5")
    seq = Sequential(10.0, rng, target_half_width=0.1, confidence_level=0.95, min_draws=5, max_draws=None,
                     t_opt=None)
    with pytest.raises(ValueError, match="does not apply to a target-precision run"):
        run(dsg, pool_iv(pool), lab, seq, ci="bootstrap")
    assert lab.asked == []
    from activerank.engine.core import check_ci

    from activerank.design.kinds.query import QueryDraws
    from activerank.inference.estimators import Estimator

    class Odd(Estimator):
        pass

    spec = type("Spec", (), {"unit": "query", "kind": QueryDraws(Odd())})()
    fake = type("D", (), {"method_spec": spec, "method": "odd", "target": dsg.target})()
    with pytest.raises(ValueError, match="method 'odd' registers .* which has none: use ci='normal'"):
        check_ci("bootstrap", fake, None)


def test_t_draws_is_t_without_repeats_and_counts_kish_with_repeats():
    pool, a, b, rng = _problem(13)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    kw = dict(budget=25, metric="dcg@5", judge="all")
    for seed in range(40):  # a passive run without any repeat
        t = _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=seed, method="passive", ci="t", **kw)
        if t.n_draws == t.n_queries:
            break
    else:  # pragma: no cover
        pytest.fail("no run without repeats")
    td = _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=seed, method="passive", ci="t_draws", **kw)
    assert td.ci == "t_draws" and td.dof == t.dof
    assert td.standard_error == pytest.approx(t.standard_error, rel=1e-12)
    # a concentrated design: budget for many draws of few queries
    res = {ci: _quiet(ar.compare, pool, a, b, pool.probs, lab, rng=3, method="active", ci=ci, budget=40,
                      metric="dcg@5", costs="uniform", judge="all") for ci in ("t", "t_draws", "normal")}
    x = res["t"].trace["query"].to_numpy()
    k = np.unique(x, return_counts=True)[1].astype(float)
    assert k.max() > 1
    assert res["t_draws"].dof == pytest.approx(min(x.size**2 / (k * k).sum(), k.size) - 1.0, rel=1e-12)
    assert res["t_draws"].dof < res["t"].dof
    plain = contrast_intervals(res["t"].trace[["delta"]].to_numpy(), res["t"].trace["weight"].to_numpy(), x,
                               per_draw=True)
    # per draw, without the prior: the paper's (normal) standard error
    assert float(plain.standard_error[0]) == pytest.approx(res["normal"].standard_error, rel=1e-9)


@pytest.mark.statistical
def test_bootstrap_coverage_through_the_public_api():
    """ci="bootstrap" at about 20 distinct queries: coverage near nominal (measured 0.957 at 300
    repetitions), the same point estimate as ci="t" on every run, reproducible from the seed."""
    pool, a, b, rng = _problem(11)
    ra, rb = rank_by_scores(a, pool.offsets), rank_by_scores(b, pool.offsets)
    reps = stat_reps(300)
    cover = np.empty(reps, dtype=bool)
    for i in range(reps):
        labels = pool.sample_labels(rng)
        lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
        truth = float(np.mean(pool_metric_values(labels, ra.truncate(5), metric="dcg@5", ymax=2)
                              - pool_metric_values(labels, rb.truncate(5), metric="dcg@5", ymax=2)))
        kw = dict(budget=20, metric="dcg@5", rng=int(rng.integers(2**32)), method="active")
        res = _quiet(ar.compare, pool, a, b, pool.probs, lab, ci="bootstrap", **kw)
        if i < 5:
            t = _quiet(ar.compare, pool, a, b, pool.probs, lab, ci="t", **kw)
            assert res.difference == t.difference
            again = _quiet(ar.compare, pool, a, b, pool.probs, lab, ci="bootstrap", **kw)
            assert again.confidence_interval() == res.confidence_interval()
        lo, hi = res.confidence_interval()
        cover[i] = lo <= truth <= hi
    mc = np.sqrt(0.95 * 0.05 / reps)
    print(f"\nbootstrap coverage at ~20 queries: {cover.mean():.3f} (MC SE {mc:.3f})")
    assert abs(cover.mean() - 0.95) <= 3 * mc, cover.mean()
