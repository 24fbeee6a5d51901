import numpy as np
import pytest

from activerank.design.sampling import optimal_distribution
from activerank.design.without_replacement import draw_without_replacement, draw_without_replacement_batch
from activerank.inference.horvitz_thompson import (
    hajek,
    hajek_kernel,
    horvitz_thompson,
    ht_variance,
    model_assisted_wor,
)

from ..conftest import stat_reps


def _population(seed=0, n=400):
    rng = np.random.default_rng(seed)
    m = rng.beta(1.0, 3.0, n)                                   # model prediction
    y = np.clip(m + rng.normal(0, 1, n) * 0.15 * (0.3 + m), 0, None)  # true value, heteroscedastic
    lam = rng.uniform(0.5, 1.5, n)
    lam /= lam.mean()
    v = (0.15 * (0.3 + m)) ** 2                                 # predicted variance
    return y, m, v, lam


def test_formulas_by_hand():
    y = np.array([1.0, 3.0, 2.0])
    pi = np.array([0.5, 1.0, 0.25])
    w = np.array([0.1, 0.1, 0.1])
    ht = horvitz_thompson(y, pi, weights=w)
    g = w / pi
    assert ht.estimate[0] == pytest.approx(g @ y)
    assert ht.covariance[0, 0] == pytest.approx(np.sum(g**2 * (1 - pi) * y**2))
    hj = hajek(y, pi, weights=w)
    r = g @ y / g.sum()
    assert hj.estimate[0] == pytest.approx(r)
    assert hj.covariance[0, 0] == pytest.approx(3 / 2 * np.sum(g**2 * (1 - pi) * (y - r) ** 2) / g.sum() ** 2)
    assert ht_variance(y - r, pi, weights=w, normalizer=g.sum()) * 3 / 2 == pytest.approx(hj.covariance[0, 0])


def test_several_series_and_contrasts():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(30, 3))
    Mx = Y + rng.normal(scale=0.3, size=(30, 3))
    pi = rng.uniform(0.1, 1.0, 30)
    C = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])
    full = model_assisted_wor(Y, Mx, pi, [0.1, 0.2, 0.3])
    for j in range(3):  # each column alone gives the same estimate and variance
        one = model_assisted_wor(Y[:, j], Mx[:, j], pi, [0.1, 0.2, 0.3][j])
        assert one.estimate[0] == pytest.approx(full.estimate[j])
        assert one.covariance[0, 0] == pytest.approx(full.covariance[j, j])
    con = model_assisted_wor(Y, Mx, pi, [0.1, 0.2, 0.3], contrasts=C)
    np.testing.assert_allclose(con.estimate, C @ full.estimate)
    np.testing.assert_allclose(con.covariance, C @ full.covariance @ C.T)
    assert np.all(np.linalg.eigvalsh(full.covariance) > -1e-12)


def test_census_has_zero_variance_and_exact_estimate():
    y, m, _, lam = _population(2, 50)
    s = draw_without_replacement(np.ones(50), lam, 1e6, rng=0)
    r = model_assisted_wor(y[s.indices], m[s.indices], s.pi, m.mean())
    assert r.estimate[0] == pytest.approx(y.mean())
    assert r.covariance[0, 0] == 0


def test_few_queries_give_nan_standard_error():
    r = model_assisted_wor([1.0, 2.0], [1.0, 2.5], [0.5, 0.5], 2.0)
    assert np.isnan(r.covariance[0, 0])
    assert np.isnan(hajek([1.0], [0.5]).covariance[0, 0])


@pytest.mark.statistical
@pytest.mark.parametrize("design", ["uniform", "active"])
def test_unbiased_variance_formula_and_coverage(design):
    """|bias| <= 3 SE over >= 2000 runs, variance formula ~ empirical variance, 95% CI coverage 93-97%."""
    y, m, v, lam = _population()
    N = y.size
    p = np.full(N, 1.0 / N)
    R, M = p @ y, p @ m
    scores = p if design == "uniform" else optimal_distribution(v + (m - M) ** 2, lam, p, defensive=0.1)
    reps = stat_reps(4000)
    b = draw_without_replacement_batch(scores, lam, [80.0], reps, rng=3)
    assert b.stops.min() >= 50
    pi, mask, o = b.pi(), b.mask(), b.order[None]
    cases = {
        "ht": hajek_kernel(y[o], pi, p[o], mask, ratio=False),
        "hajek": hajek_kernel(y[o], pi, p[o], mask),
        "greg": hajek_kernel(y[o], pi, p[o], mask, predictions=m[o], pool_prediction=M),
        "difference": hajek_kernel(y[o], pi, p[o], mask, predictions=m[o], pool_prediction=M, tuned=1.0),
    }
    for name, (est, var, _) in cases.items():
        e = (est - R)[0]
        se_bias = e.std() / np.sqrt(reps)
        assert abs(e.mean()) <= 3 * se_bias, (name, e.mean(), se_bias)
        ratio = np.mean(var[0]) / np.mean(e**2)
        assert 0.85 <= ratio <= 1.15, (name, ratio)
        cover = np.mean(np.abs(e) <= 1.959964 * np.sqrt(var[0]))
        assert 0.93 <= cover <= 0.97, (name, cover)
    # the control variate helps on this population
    assert np.mean((cases["greg"][0] - R) ** 2) < 0.5 * np.mean((cases["hajek"][0] - R) ** 2)


@pytest.mark.statistical
def test_contrast_covariance_matches_empirical():
    rng = np.random.default_rng(8)
    y, m, v, lam = _population(3)
    N = y.size
    Y = np.stack([y, y + rng.normal(0, 0.05, N), 0.5 * y + rng.normal(0, 0.1, N)], axis=1)
    p = np.full(N, 1.0 / N)
    C = np.array([[1.0, -1.0, 0.0], [1.0, 0.0, -1.0]])
    reps = stat_reps(2000)
    ests, covs = [], []
    gen = np.random.default_rng(9)
    for _ in range(reps):  # the public per-run API, as the engine would call it
        s = draw_without_replacement(p, lam, 70.0, rng=gen)
        r = hajek(Y[s.indices], s.pi, weights=p[s.indices], contrasts=C)
        ests.append(r.estimate)
        covs.append(r.covariance)
    ests, covs = np.array(ests), np.array(covs)
    emp = np.cov(ests.T)
    np.testing.assert_allclose(covs.mean(0), emp, rtol=0.15, atol=0.05 * np.abs(emp).max())
    bias = ests.mean(0) - C @ (p @ Y)
    assert np.all(np.abs(bias) <= 3 * ests.std(0) / np.sqrt(reps))


@pytest.mark.statistical
def test_anti_correlated_model_costs_little():
    y, m, v, lam = _population(4)
    N = y.size
    p = np.full(N, 1.0 / N)
    bad = 1.0 - m  # anti-correlated predictions
    b = draw_without_replacement_batch(p, lam, [60.0], stat_reps(2000), rng=5)
    pi, mask, o = b.pi(), b.mask(), b.order[None]
    hj, _, _ = hajek_kernel(y[o], pi, p[o], mask)
    ma, _, beta = hajek_kernel(y[o], pi, p[o], mask, predictions=bad[o], pool_prediction=p @ bad)
    R = p @ y
    assert np.mean((ma - R) ** 2) <= 1.0 * np.mean((hj - R) ** 2)  # tuned beta < 0 uses the anti-correlation
    assert np.median(beta) < 0


@pytest.mark.parametrize("call, match", [
    (lambda: hajek([1.0, 2.0], [0.5, 0.0]), r"`pi` must lie in \(0, 1\]; sampled query 1"),
    (lambda: hajek([1.0, 2.0], [0.5, 1.5]), r"`pi` must lie in \(0, 1\]"),
    (lambda: hajek([1.0, np.nan], [0.5, 0.5]), r"`values` must be finite; sampled query 1"),
    (lambda: hajek([1.0, 2.0, 3.0], [0.5, 0.5]), r"`values` must have shape"),
    (lambda: hajek([1.0, 2.0], [0.5, 0.5], weights=[1.0]), "`weights` must have one entry"),
    (lambda: model_assisted_wor([[1.0, 2.0]], [[1.0]], [0.5], 0.0), "one column per series"),
    (lambda: hajek([[1.0, 2.0]], [0.5], contrasts=[[1.0, 0.0, 1.0]]), r"`contrasts` must have shape"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_tuned_must_be_true_or_number():
    with pytest.raises(TypeError, match="`tuned` must be True or a number"):
        model_assisted_wor([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0.5] * 3, 2.0, tuned="yes")


def test_prior_coefficient_shrinks_towards_the_model():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(200, 12))
    y = m + rng.normal(size=(200, 12)) * 2.0          # calibrated model, noisy labels, small samples
    pi = np.full((200, 12), 0.05)
    mask = np.ones((200, 12), bool)
    w = np.ones((200, 12))
    _, _, b0 = hajek_kernel(y, pi, w, mask, predictions=m, pool_prediction=0.0)
    _, _, b1 = hajek_kernel(y, pi, w, mask, predictions=m, pool_prediction=0.0, prior_coefficient=1.0)
    assert np.mean((b1 - 1) ** 2) < np.mean((b0 - 1) ** 2)
    # a clearly miscalibrated model (true slope 0.2) is not pulled back to 1 with many labels
    m2 = rng.normal(size=(50, 400))
    y2 = 0.2 * m2 + 0.1 * rng.normal(size=(50, 400))
    _, _, b2 = hajek_kernel(y2, np.full_like(m2, 0.5), np.ones_like(m2), np.ones(m2.shape, bool),
                            predictions=m2, pool_prediction=0.0, prior_coefficient=1.0)
    assert np.abs(b2 - 0.2).max() < 0.05
