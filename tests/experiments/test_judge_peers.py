"""benchmarks/document_level/judge_peers.py: the peers' estimators are PPI++ and StratPPI as published."""

from pathlib import Path

import numpy as np
import pytest

from ..conftest import load_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "document_level"


@pytest.fixture(scope="module")
def jp():
    return load_benchmark(BENCH, "judge_peers.py", "_bench_judge_peers")  # imports judge_check, run, common


def _toy(n=60, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.gamma(2.0, 1.0, size=(n, 2))
    y = 0.8 * f + rng.normal(0.0, 0.5 + 0.3 * f, size=(n, 2))
    return y, f


def _ppi_direct(y, f, labeled):
    """PPI++ (power-tuned mean) of one target, straight from the published formulas."""
    ys, fs, fu = y[labeled], f[labeled], f[~labeled]
    n, N = ys.size, fu.size
    lam = np.cov(ys, fs)[0, 1] / ((1 + n / N) * np.var(f, ddof=1))
    lam = min(max(lam, 0.0), 1.0)
    est = np.mean(ys - lam * fs) + lam * fu.mean()
    return est, np.var(ys - lam * fs, ddof=1) / n + lam**2 * np.var(fu, ddof=1) / N


def test_ppi_pp_matches_the_published_formula_run_by_run(jp):
    y, f = _toy()
    rng = np.random.default_rng(1)
    mask = (rng.random((5, y.shape[0])) < 0.3).astype(float)
    est, var = jp.ppi_pp(y, f, mask, (f.sum(axis=0), (f * f).sum(axis=0)))
    for r in range(5):
        for j in range(2):
            e, v = _ppi_direct(y[:, j], f[:, j], mask[r] > 0)
            assert est[r, j] == pytest.approx(e, rel=1e-10) and var[r, j] == pytest.approx(v, rel=1e-10)


def test_ppi_pp_census_is_the_mean_and_one_label_is_no_estimate(jp):
    y, f = _toy(n=10)
    full = np.ones((1, 10))
    est, var = jp.ppi_pp(y, f, full, (f.sum(axis=0), (f * f).sum(axis=0)))
    assert np.allclose(est, y.mean(axis=0)) and np.all(var == 0)
    one = np.zeros((1, 10))
    one[0, 3] = 1
    est, var = jp.ppi_pp(y, f, one, (f.sum(axis=0), (f * f).sum(axis=0)))
    assert np.isnan(est).all() and np.isnan(var).all()


def test_random_order_sample_never_exceeds_the_budget(jp):
    cost = np.random.default_rng(2).uniform(0.5, 2.0, size=40)
    U = np.random.default_rng(3).random((50, 40))
    mask, spent = jp.random_order_sample(cost, 7.3, U)
    assert np.allclose(mask @ cost, spent) and spent.max() <= 7.3


def test_neyman_allocation_spends_the_budget_within_the_caps(jp):
    sizes = np.array([50, 50, 50, 5])
    sigma = np.array([0.1, 1.0, 3.0, 10.0])
    cost = np.ones(4)
    n = jp.neyman(sizes, sigma, cost, 40.0)
    assert n[3] == 5 and (n <= sizes).all() and (n >= 2).all() and abs(n.sum() - 40) <= 2
    assert n[2] > n[1] > n[0]


@pytest.mark.parametrize("method", ["random_order", "strat"])
def test_the_peers_with_a_fixed_coefficient_are_unbiased_by_simulation(jp, method):
    y, f = _toy(n=40, seed=4)  # a small pool: the sample is a quarter to a half of it
    cost = np.ones(40)
    budgets = np.array([10.0, 20.0])
    rng = np.random.default_rng(0)
    reps = 4000
    if method == "random_order":
        est, se, spent, _ = jp.ppi_random_order(y, f, cost, budgets, rng, reps, lam=0.7)
    else:
        score = np.abs(f[:, 0]) + 0.1
        est, se, spent, _ = jp.strat_ppi(y, f, cost, score, budgets, rng, reps, H=4, lam=0.7)
    truth = y.mean(axis=0)
    bias = est.mean(axis=1) - truth
    mc_se = est.std(axis=1, ddof=1) / np.sqrt(reps)
    assert (np.abs(bias) <= 3 * mc_se).all()
    # the peers' i.i.d. variance formula ignores the finite-population correction: it over-covers
    cover = (np.abs(est - truth) <= 1.96 * se).mean(axis=1)
    assert (cover >= 0.93).all()
