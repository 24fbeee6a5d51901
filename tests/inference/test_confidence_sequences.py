import numpy as np
import pytest
from scipy import stats

from activerank.inference.confidence_sequences import (
    expected_draws,
    gm_radius,
    predictable_terms,
    rho_for_time,
    running_cs,
    stop_on_target,
    window_critical_value,
    windowed_cs,
)
from activerank.inference.model_assisted import tuned_coefficient
from activerank.inference.sequences import asymptotic_cs, cs_radius
from activerank.inference.sequences import rho_for_time as seq_rho_for_time

from ..conftest import stat_reps


def test_window_critical_value_limits_and_monotonicity():
    assert window_critical_value(40, 40, 0.05) == pytest.approx(stats.norm.ppf(0.975), abs=2e-4)
    cs = [window_critical_value(30, t, 0.045) for t in (60, 150, 300)]
    assert cs[0] < cs[1] < cs[2] < 3.03  # tighter than the mixture sequence at its best
    assert window_critical_value(30, 150, 0.01) > window_critical_value(30, 150, 0.05)
    with pytest.raises(ValueError, match="`t_max`"):
        window_critical_value(50, 40, 0.05)
    with pytest.raises(ValueError, match="`t_min`"):
        window_critical_value(0, 40, 0.05)


def test_window_critical_value_against_a_simulated_random_walk():
    rng = np.random.default_rng(0)
    t_min, t_max, alpha = 30, 150, 0.05
    c = window_critical_value(t_min, t_max, alpha)
    n = 20000
    s = np.cumsum(rng.standard_normal((n, t_max), dtype=np.float32), axis=1)
    t = np.arange(1, t_max + 1)
    crossed = (np.abs(s[:, t_min - 1:]) / np.sqrt(t[t_min - 1:]) >= c).any(axis=1)
    assert crossed.mean() == pytest.approx(alpha, abs=4 * np.sqrt(alpha * (1 - alpha) / n))


def test_gm_pieces_match_activerank_sequential():
    t = np.array([10.0, 50.0, 200.0])
    assert rho_for_time(100, 0.05) == pytest.approx(seq_rho_for_time(100, 0.95))
    np.testing.assert_allclose(gm_radius(t, 0.7, 0.05, 0.3), cs_radius(t, 0.7, 0.95, rho=0.3), rtol=1e-12)
    z = np.random.default_rng(1).random(60)
    c1, r1 = running_cs(z, lambda tt, s: gm_radius(tt, s, 0.05, 0.3))
    c2, r2 = asymptotic_cs(z, rho=0.3)
    np.testing.assert_allclose(c1, c2, rtol=1e-12)
    np.testing.assert_allclose(r1, r2, rtol=1e-9, atol=1e-12)


def test_windowed_radius_is_the_window_boundary_inside_and_the_tail_outside():
    cs = windowed_cs(30, 120, 0.95, tail_share=0.1)
    assert cs.alpha_window == pytest.approx(0.045) and cs.alpha_tail == pytest.approx(0.005)
    t = np.array([5.0, 30.0, 80.0, 120.0, 500.0])
    r = cs.radius(t, 1.0)
    tail = gm_radius(t, 1.0, 0.005, cs.rho)
    np.testing.assert_allclose(r[[0, 4]], tail[[0, 4]])
    # studentized: the t_{t-1} quantile at the one-look level of c, for a divisor-t standard deviation
    level = 2 * stats.norm.sf(cs.critical_value)
    ct = stats.t.isf(level / 2, t[1:4] - 1) * np.sqrt(t[1:4] / (t[1:4] - 1))
    np.testing.assert_allclose(r[1:4], np.minimum(ct / np.sqrt(t[1:4]), tail[1:4]))
    assert (ct > cs.critical_value).all() and ct[-1] < ct[0]
    with pytest.raises(ValueError, match="`tail_share`"):
        windowed_cs(30, 120, tail_share=1.5)
    with pytest.raises(ValueError, match="`confidence_level`"):
        windowed_cs(30, 120, 95)


def test_expected_draws_coupon_collector_and_cap():
    q, lam = np.full(100, 0.01), np.ones(100)
    t = expected_draws(q, lam, 50.0)
    assert 100 * (1 - (1 - 0.01) ** t) == pytest.approx(50.0, rel=1e-9)
    assert expected_draws(q, lam, 100.0) == 100 * 100  # every query affordable: the cap


def test_predictable_coefficients_use_only_earlier_draws():
    rng = np.random.default_rng(2)
    n = 60
    v, m, w = rng.random(n), rng.random(n), rng.uniform(0.5, 2, n)
    m = 0.7 * v + 0.3 * m
    z, beta = predictable_terms(v, m, w, 0.4, 0.45, min_distinct=5)
    # changing a later draw does not change earlier coefficients
    v2 = v.copy()
    v2[40:] += 5.0
    _, beta2 = predictable_terms(v2, m, w, 0.4, 0.45, min_distinct=5)
    np.testing.assert_array_equal(beta[0, :41], beta2[0, :41])
    # brute force at one time
    j = 30
    u, g = w[:j] * (v[:j] - 0.4), w[:j] * (m[:j] - 0.45)
    du, dg = u - u.mean(), g - g.mean()
    expect = tuned_coefficient(du @ dg, dg @ dg, du @ du, j, True)
    assert beta[0, j] == pytest.approx(float(expect), rel=1e-9)
    assert z[0, j] == pytest.approx(0.4 + w[j] * (v[j] - 0.4) - beta[0, j] * w[j] * (m[j] - 0.45), rel=1e-12)
    assert (beta[0, :5] == 0).all()


def test_stop_on_target():
    radius = np.array([[5.0, 1.0, 0.5, 0.1], [5.0, 4.0, 3.0, 2.0]])
    stop, hit = stop_on_target(radius, 0.6, np.array([4, 3]), min_draws=2)
    assert stop.tolist() == [3, 3] and hit.tolist() == [True, False]


@pytest.mark.statistical
def test_windowed_sequence_is_time_uniform_and_tighter():
    """Gaussian terms: a miss at any time in [10, 400] has probability <= alpha (+ MC error); narrower."""
    rng = np.random.default_rng(3)
    reps, n = stat_reps(2000), 400
    z = rng.standard_normal((reps, n))
    cs = windowed_cs(30, 200, 0.95)
    center, radius = running_cs(z, cs.radius)
    miss = (np.abs(center) > radius)[:, 9:].any(axis=1).mean()
    # without the studentized multiplier the window alone misses too often (measured 0.064)
    plain = np.where((np.arange(1, n + 1) >= 30) & (np.arange(1, n + 1) <= 200),
                     np.minimum(cs.critical_value * np.sqrt(np.cumsum(z * z, 1) / np.arange(1, n + 1)
                                - center**2) / np.sqrt(np.arange(1, n + 1)), radius), radius)
    miss_plain = (np.abs(center) > plain)[:, 29:200].any(axis=1).mean()
    rho = rho_for_time(100, 0.05)
    _, r_gm = running_cs(z, lambda tt, s: gm_radius(tt, s, 0.05, rho))
    ratio = np.median(radius[:, 99] / r_gm[:, 99])
    print(f"\nwindowed CS: P(miss at some t in [10, 400]) = {miss:.3f} (known-variance c alone: "
          f"{miss_plain:.3f}); half-width at t=100 vs the mixture sequence: {ratio:.3f}")
    assert miss <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    assert ratio < 0.95


@pytest.mark.statistical
def test_target_precision_stop_uses_fewer_labels_and_still_covers():
    """The synthetic pool of tests/test_sequential.py, the stop simulated in batch (benchmarks/sequential_cs.py)."""
    import os
    import sys

    root = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
    sys.path.insert(0, root)
    try:
        import sequential_cs as bench
    finally:
        sys.path.remove(root)
    reps = stat_reps(400)
    rows = bench.run_pool("synthetic single", bench._synthetic(21, reps, False), [0.06], 150.0, reps, 1)
    by = {r["rule"]: r for r in rows}
    print("\n" + "\n".join(f"{k}: coverage {r['coverage']:.3f}, cost {r['mean_cost']:.1f}" for k, r in by.items()))
    assert by["windowed_cv"]["coverage"] >= 0.95
    assert by["windowed_cv"]["mean_cost"] <= 0.8 * by["current"]["mean_cost"]
    assert by["windowed"]["mean_cost"] < by["current"]["mean_cost"]
