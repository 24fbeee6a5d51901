import warnings

import numpy as np
import pytest

from activerank.inference.crossfit import (
    MIN_DISTINCT_FOR_TUNING,
    crossfit_terms,
    model_assisted_crossfit,
    model_assisted_crossfit_prefix,
)
from activerank.inference.model_assisted import tuned_coefficient
from activerank.inference.small_sample import (
    FewDistinctQueriesWarning,
    PredictedVariance,
    TooFewQueriesError,
    cluster_slots,
    snis_interval,
)

from ..conftest import stat_reps

pytestmark = pytest.mark.filterwarnings("ignore::activerank.inference.small_sample.FewDistinctQueriesWarning")


def _brute_beta(v, m, w, x, M, j, min_distinct):
    """Coefficient for draw j from the other draws, query by query (shrunken, cluster-level)."""
    keep = np.arange(v.size) != j
    vv, mm, ww, xx = v[keep], m[keep], w[keep], x[keep]
    vbar, mbar = np.dot(ww, vv) / ww.sum(), np.dot(ww, mm) / ww.sum()
    A, C = {}, {}
    for vi, mi, wi, xi in zip(vv, mm, ww, xx):
        A[xi] = A.get(xi, 0.0) + wi * (vi - vbar)
        C[xi] = C.get(xi, 0.0) + wi * (mi - mbar)
    a, c = np.array(list(A.values())), np.array(list(C.values()))
    if len(A) < min_distinct:  # the gate counts the other draws' distinct queries
        return 0.0
    return float(tuned_coefficient(a @ c, c @ c, a @ a, len(A), c @ c > 0))


def _sample(rng, n=30, n_q=18):
    x = rng.integers(0, n_q, n)
    truth = rng.random(n_q)
    model = truth + 0.3 * rng.standard_normal(n_q)
    w = rng.uniform(0.4, 2.5, n_q)
    return truth[x], model[x], w[x], x


def test_coefficients_are_leave_one_draw_out_and_the_estimate_matches_brute_force():
    rng = np.random.default_rng(0)
    v, m, w, x = _sample(rng)
    M = 0.45
    terms = crossfit_terms(v[None], m[None], w[None], M, cluster_slots(x)[None], np.array([[v.size]]),
                           min_distinct=5, ratio_from=5)
    betas = np.array([_brute_beta(v, m, w, x, M, j, 5) for j in range(v.size)])
    num = w * (v - terms.shift - betas * (m - M))
    np.testing.assert_allclose(terms.draw_numerator[0, 0], num, rtol=1e-9, atol=1e-12)
    assert terms.coefficient[0, 0] == pytest.approx(betas.mean(), rel=1e-9)
    r = model_assisted_crossfit(v, m, w, M, x, min_distinct=5, jackknife=False, ci="t", ratio_from=5)
    est = np.sum(w * (v - betas * (m - M))) / w.sum()
    assert r.estimate == pytest.approx(est, rel=1e-10)
    # the jackknife of the ratio with these fixed numerators
    n, A, B = v.size, num.sum(), w.sum()
    jk = n * A / B - (n - 1) / n * np.sum((A - num) / (B - w))
    rj = model_assisted_crossfit(v, m, w, M, x, min_distinct=5, jackknife=True, ci="t", ratio_from=5)
    assert rj.estimate == pytest.approx(jk + terms.shift, rel=1e-10)
    # below `ratio_from` distinct queries: the centred unnormalized mean with the same coefficients
    rc = model_assisted_crossfit(v, m, w, M, x, min_distinct=5, ci="t", ratio_from=100)
    assert rc.estimate == pytest.approx(np.mean(M + w * (v - M - betas * (m - M))), rel=1e-10)
    assert rj.standard_error == pytest.approx(r.standard_error, rel=1e-12)
    assert rj.high - rj.estimate == pytest.approx(r.high - r.estimate, rel=1e-10)


def test_cluster_standard_error_uses_the_adjusted_query_totals():
    rng = np.random.default_rng(1)
    v, m, w, x = _sample(rng)
    M = 0.5
    r = model_assisted_crossfit(v, m, w, M, x, min_distinct=5, jackknife=False, ci="t", ratio_from=5)
    betas = np.array([_brute_beta(v, m, w, x, M, j, 5) for j in range(v.size)])
    adj = v - betas * (m - M)
    expect = snis_interval(adj, w, x, ci="t")
    assert r.standard_error == pytest.approx(expect.standard_error, rel=1e-9)
    assert r.dof == expect.dof == len(set(x.tolist())) - 1


def test_gates_follow_the_expected_count_when_given():
    rng = np.random.default_rng(7)
    v, m, w, x = _sample(rng, n=40, n_q=30)
    d = len(set(x.tolist()))
    off = model_assisted_crossfit(v, m, w, 0.5, x, expected_distinct=d - 8.0, min_distinct=d - 5)
    assert not off.tuned and off.coefficient == 0.0
    on = model_assisted_crossfit(v, m, w, 0.5, x, expected_distinct=30.0, min_distinct=d + 5)
    assert on.tuned and on.coefficient != 0.0


def test_expected_distinct_counts():
    from activerank.inference.crossfit import expected_distinct

    q = np.full(50, 0.02)
    assert expected_distinct(q, np.ones(50), 20.0) == pytest.approx(20.0, rel=1e-6)
    assert expected_distinct(q, np.ones(50), 60.0) == pytest.approx(50.0, rel=1e-6)  # budget buys everything


def test_too_few_distinct_queries_give_the_centred_unnormalized_mean():
    rng = np.random.default_rng(2)
    v, m, w, x = _sample(rng, n=12, n_q=6)
    M = 0.5
    for jk in (False, True):  # a mean has no ratio bias: the jackknife changes nothing
        r = model_assisted_crossfit(v, m, w, M, x, jackknife=jk)
        assert len(set(x.tolist())) < MIN_DISTINCT_FOR_TUNING
        assert not r.tuned and r.coefficient == 0.0
        terms = M + w * (v - M)
        assert r.estimate == pytest.approx(terms.mean(), rel=1e-12)
        plain = snis_interval(terms, np.ones_like(terms), x)
        assert r.standard_error == pytest.approx(plain.standard_error, rel=1e-10)
    with pytest.raises(TooFewQueriesError):
        model_assisted_crossfit(v[:3], m[:3], w[:3], 0.5, [1, 1, 1])


def test_a_perfect_model_removes_the_variance_and_a_useless_one_is_shrunk_to_zero():
    rng = np.random.default_rng(3)
    L = rng.random(60)
    perfect = model_assisted_crossfit(L, L + 0.2, np.ones(60), L.mean() + 0.2, prior=PredictedVariance(0.0, 0.1))
    assert perfect.coefficient == pytest.approx(1.0, abs=1e-9)
    assert perfect.estimate == pytest.approx(L.mean(), abs=1e-9) and perfect.standard_error < 1e-6
    noise = rng.random(60)
    useless = model_assisted_crossfit(L, noise, np.ones(60), 0.5)
    assert abs(useless.coefficient) < 0.15


def test_batch_matches_single_runs():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 25, size=(6, 40))
    truth = rng.random(25)
    model = truth + 0.2 * rng.standard_normal(25)
    w = rng.uniform(0.5, 2.0, 25)
    stops = rng.integers(12, 41, size=(2, 6))
    pv = PredictedVariance(0.02, 0.05)
    batch = model_assisted_crossfit_prefix(truth[x], model[x], w[x], 0.5, x, stops, prior=pv)
    for b in range(2):
        for r in range(6):
            n = stops[b, r]
            xx = x[r, :n]
            one = model_assisted_crossfit(truth[xx], model[xx], w[xx], 0.5, xx, prior=pv)
            assert batch.estimate[b, r] == pytest.approx(one.estimate, rel=1e-10)
            assert batch.standard_error[b, r] == pytest.approx(one.standard_error, rel=1e-9)
            assert batch.high[b, r] == pytest.approx(one.high, rel=1e-9)


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="`predictions`"):
        model_assisted_crossfit([0.1, 0.2, 0.3], [0.1, 0.2], [1.0] * 3, 0.2)
    with pytest.raises(ValueError, match="`pool_prediction`"):
        model_assisted_crossfit([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], [1.0] * 3, float("nan"))
    with pytest.raises(ValueError, match="one shape"):
        model_assisted_crossfit_prefix(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), 0.0,
                                       np.ones((2, 2), int), [3, 3])


@pytest.mark.statistical
def test_cross_fitting_removes_the_self_tuning_bias():
    """A convex value-model relation: the self-tuned coefficient is biased by > 10 SE, cross-fitting is not."""
    from activerank.design.draws import budget_stops, draw_budgeted_batch
    from activerank.inference.model_assisted import model_assisted_prefix

    rng = np.random.default_rng(0)
    n_q = 500
    m = rng.exponential(1.0, n_q)
    L = m**2 / 4 + 0.3 * rng.standard_normal(n_q)
    p = np.full(n_q, 1.0 / n_q)
    M, R = p @ m, p @ L
    reps = max(2000, stat_reps(2000))  # vectorized: the "> 10 SE" teeth need the full size
    plan = draw_budgeted_batch(p, np.ones(n_q), 20.0, reps, 1)
    stops = budget_stops(plan, [12.0, 20.0])
    x = plan.queries
    ones = np.ones(x.shape)
    self_tuned = model_assisted_prefix(L[x], m[x], ones, M, stops).estimate - R
    cf = model_assisted_crossfit_prefix(L[x], m[x], ones, M, x, stops, ci="t").estimate - R

    def z(e):
        return e.mean(axis=1) / (e.std(axis=1, ddof=1) / np.sqrt(reps))

    print(f"\nbias z at 12/20 draws: self-tuned {np.round(z(self_tuned), 1)}, cross-fitted {np.round(z(cf), 1)}")
    assert (np.abs(z(cf)) < 3.0).all()
    assert (np.abs(z(self_tuned)) > 10.0).all()  # the check has teeth


@pytest.mark.statistical
def test_jackknife_removes_the_ratio_bias_of_concentrated_weights():
    """Weights 0.2-3, a heavy tail: the ratio is biased at 20-40 queries, the jackknifed one is not."""
    from activerank.design.draws import budget_stops, draw_budgeted_batch

    rng = np.random.default_rng(5)
    n_q = 85
    big = rng.random(n_q) < 0.15
    v = np.where(big, rng.gamma(2.0, 0.15, n_q), rng.normal(0.0, 0.005, n_q))
    p = np.full(n_q, 1.0 / n_q)
    q = 0.1 * p + 0.9 * np.where(big, 1.0, 0.05) / np.where(big, 1.0, 0.05).sum()
    reps = stat_reps(3000)
    plan = draw_budgeted_batch(q, np.ones(n_q), 40.0, reps, 2)
    stops = budget_stops(plan, [20.0, 40.0])
    x = plan.queries
    w = p[x] / q[x]
    zero = np.zeros(x.shape)
    out = {}
    for jk in (False, True):
        e = model_assisted_crossfit_prefix(v[x], zero, w, 0.0, x, stops, jackknife=jk, ci="t").estimate - p @ v
        out[jk] = e.mean(axis=1) / (e.std(axis=1, ddof=1) / np.sqrt(reps))
    print(f"\nbias z at 20/40 queries: SNIS {np.round(out[False], 1)}, jackknifed {np.round(out[True], 1)}")
    assert (np.abs(out[True]) < 3.0).all()
    assert np.abs(out[False]).max() > 4.0
