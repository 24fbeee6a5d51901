import numpy as np
import pytest

from activerank.design.without_replacement import (
    approximate_inclusion_probabilities,
    draw_without_replacement,
    draw_without_replacement_batch,
    inclusion_probabilities,
    joint_inclusion_probabilities,
)

from ..conftest import stat_reps


def _tiny(seed, n=6):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.2, 2.0, n), rng.uniform(0.3, 1.5, n)


def _indicators(batch, n_pool, b=0):
    """(n_reps, n_pool) inclusion indicators and 1/pi weights of budget ``b``."""
    mask = batch.mask()[b]
    rows = np.broadcast_to(np.arange(mask.shape[0])[:, None], mask.shape)
    inc = np.zeros((mask.shape[0], n_pool))
    z = np.zeros_like(inc)
    inc[rows[mask], batch.order[mask]] = 1.0
    z[rows[mask], batch.order[mask]] = 1.0 / batch.pi()[b][mask]
    return inc, z


def test_srswor_special_case_exact():
    # equal scores and unit costs: simple random sample without replacement of size n
    pi = inclusion_probabilities(np.ones(7), np.ones(7), 3)
    np.testing.assert_allclose(pi, 3 / 7, rtol=1e-12)
    P = joint_inclusion_probabilities(np.ones(7), np.ones(7), 3)
    off = P[~np.eye(7, dtype=bool)]
    np.testing.assert_allclose(off, 3 * 2 / (7 * 6), rtol=1e-12)


def test_expected_cost_within_budget_and_pairs_that_do_not_fit():
    a, lam = _tiny(3)
    budget = 2.0
    pi = inclusion_probabilities(a, lam, budget)
    assert pi @ lam <= budget + 1e-12
    P = joint_inclusion_probabilities(a, lam, budget)
    too_big = lam[:, None] + lam[None, :] > budget
    np.fill_diagonal(too_big, False)
    assert too_big.any()
    assert np.all(P[too_big] == 0)
    # sum_j pi_ij = E[n 1{i in S}] >= pi_i; and P is symmetric with pi on the diagonal
    np.testing.assert_allclose(P, P.T)
    np.testing.assert_allclose(np.diag(P), pi)


@pytest.mark.statistical
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_inclusion_probabilities_match_simulation(seed):
    a, lam = _tiny(seed)
    budget = 2.5
    reps = stat_reps(200_000)
    batch = draw_without_replacement_batch(a, lam, budget, reps, rng=seed + 100)
    inc, _ = _indicators(batch, a.size)
    pi = inclusion_probabilities(a, lam, budget)
    se = np.sqrt(pi * (1 - pi) / reps)
    assert np.all(np.abs(inc.mean(0) - pi) <= 4 * se + 1e-12)
    P = joint_inclusion_probabilities(a, lam, budget)
    emp = inc.T @ inc / reps
    se2 = np.sqrt(P * (1 - P) / reps)
    assert np.all(np.abs(emp - P) <= 4 * se2 + 1e-12)


def test_conditional_pi_equals_brute_force_threshold():
    """pi_i = min(1, a_i tau_i), tau_i = threshold of the design without i and budget Lambda - lambda_i."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        a = rng.uniform(0.05, 3.0, n)
        lam = rng.choice([0.0, 0.5, 1.0, 2.0], n, p=[0.1, 0.3, 0.4, 0.2])
        budget = float(rng.uniform(0.5, 5.0))
        seed = int(rng.integers(1 << 30))
        s = draw_without_replacement(a, lam, budget, rng=seed)
        xi = np.random.default_rng(seed).random(n) / a
        for pos, i in enumerate(s.indices):
            others = np.flatnonzero(np.arange(n) != i)
            o = others[np.argsort(xi[others], kind="stable")]
            over = np.flatnonzero(np.cumsum(lam[o]) > budget - lam[i] + 1e-12 * max(1, budget))
            tau_i = xi[o[over[0]]] if over.size else np.inf
            assert xi[i] < tau_i
            assert s.pi[pos] == pytest.approx(min(1.0, a[i] * tau_i), rel=1e-12)
        # and every query left out is at or beyond its own threshold
        assert s.cost.sum() <= budget * (1 + 1e-12)


@pytest.mark.statistical
def test_weights_unbiased_and_uncorrelated():
    # E[1{i in S}/pi_i] = 1 and E[Z_i Z_j] = 1 for pairs that fit the budget together
    a = np.array([1.0, 1.3, 0.8, 1.1, 0.9, 1.2, 1.0, 0.7])
    lam = np.array([1.0, 0.5, 1.0, 0.8, 1.2, 1.0, 0.6, 0.9])
    reps = stat_reps(200_000)
    batch = draw_without_replacement_batch(a, lam, 4.0, reps, rng=7)
    _, z = _indicators(batch, a.size)
    se = z.std(0) / np.sqrt(reps)
    assert np.all(np.abs(z.mean(0) - 1) <= 4 * se)
    prod = z[:, :, None] * z[:, None, :]
    mean, se2 = prod.mean(0), prod.std(0) / np.sqrt(reps)
    off = ~np.eye(a.size, dtype=bool)
    assert np.all(np.abs(mean[off] - 1) <= 4 * se2[off])


def test_budget_never_exceeded_prefix_and_batch_reproduces_single():
    rng = np.random.default_rng(2)
    a = rng.uniform(0.1, 2, 40)
    lam = rng.uniform(0.2, 3, 40)
    batch = draw_without_replacement_batch(a, lam, [3.0, 7.0, 12.0], 50, rng=11)
    cost = np.where(batch.mask(), lam[batch.order][None], 0.0).sum(-1)
    assert np.all(cost <= np.array([3.0, 7.0, 12.0])[:, None] * (1 + 1e-12))
    # nested: smaller budgets are prefixes of larger ones (same ranking variables)
    assert np.all(np.diff(batch.stops, axis=0) >= 0)
    one = draw_without_replacement_batch(a, lam, 7.0, 1, rng=11)
    single = draw_without_replacement(a, lam, 7.0, rng=11)
    np.testing.assert_array_equal(one.order[0, :one.stops[0, 0]], single.indices)
    np.testing.assert_allclose(one.pi()[0, 0, :single.n], single.pi)


def test_whole_pool_fits_is_a_census_and_zero_scores_never_sampled():
    s = draw_without_replacement([1.0, 2.0, 0.0], [1.0, 1.0, 1.0], 10, rng=0)
    assert sorted(s.indices.tolist()) == [0, 1]
    assert np.isinf(s.threshold)
    np.testing.assert_array_equal(s.pi, 1.0)


def test_approximate_inclusion_probabilities_spend_the_budget():
    rng = np.random.default_rng(4)
    a, lam = rng.uniform(0.01, 1, 500), rng.uniform(0.5, 2, 500)
    pi = approximate_inclusion_probabilities(a, lam, 60)
    assert pi @ lam == pytest.approx(60)
    assert pi.max() <= 1
    # and they track the realized inclusion frequencies on a large pool
    batch = draw_without_replacement_batch(a, lam, 60, 2000, rng=1)
    inc, _ = _indicators(batch, a.size)
    assert np.abs(inc.mean(0) - pi).max() < 0.06


@pytest.mark.parametrize("kwargs, match", [
    (dict(scores=[], costs=[], budget=1), "`scores` must not be empty"),
    (dict(scores=[1.0, -1.0], costs=[1, 1], budget=1), r"`scores` must be finite and >= 0; query 1"),
    (dict(scores=[0.0, 0.0], costs=[1, 1], budget=1), "at least one positive"),
    (dict(scores=[1.0, 1.0], costs=[1.0], budget=1), "one entry per query"),
    (dict(scores=[1.0, 1.0], costs=[1.0, np.nan], budget=1), r"`costs` must be finite and >= 0; query 1"),
    (dict(scores=[1.0, 1.0], costs=[1.0, 1.0], budget=0), "`budget` must be a positive"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        draw_without_replacement(**kwargs, rng=0)


def test_bad_budget_type_and_tiny_pool_limit():
    with pytest.raises(TypeError, match="`budget` must be a positive number"):
        draw_without_replacement([1.0], [1.0], "3")
    with pytest.raises(ValueError, match="more than 14"):
        inclusion_probabilities(np.ones(15), np.ones(15), 3)
    with pytest.raises(ValueError, match="`n_reps` must be a positive integer"):
        draw_without_replacement_batch([1.0], [1.0], 1, 0)


def test_simulated_inclusion_probabilities_match_the_exact_ones():
    """Unequal scores and costs on a tiny pool: the simulated frequencies are within 4 standard errors of the
    exact enumeration, seeded runs are reproducible, and the input is validated."""
    from activerank.design.without_replacement import inclusion_probabilities, simulated_inclusion_probabilities

    a = np.array([0.2, 1.0, 0.5, 2.0, 0.7, 0.1, 1.5])
    lam = np.array([1.0, 0.5, 2.0, 1.0, 1.0, 0.3, 1.5])
    exact = inclusion_probabilities(a, lam, 3.0)
    sim = simulated_inclusion_probabilities(a, lam, 3.0, n_reps=20_000, rng=1, chunk=3_000)
    se = np.sqrt(exact * (1 - exact) / 20_000)
    assert np.all(np.abs(sim - exact) <= 4 * se + 1e-12)
    assert np.array_equal(sim, simulated_inclusion_probabilities(a, lam, 3.0, n_reps=20_000, rng=1, chunk=3_000))
    with pytest.raises(ValueError, match="`n_reps` must be a positive integer"):
        simulated_inclusion_probabilities(a, lam, 3.0, n_reps=0)
    with pytest.raises(ValueError, match="`chunk` must be a positive integer"):
        simulated_inclusion_probabilities(a, lam, 3.0, chunk=0)
