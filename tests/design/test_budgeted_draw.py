"""The budgeted order sample of the document designs (``draw_priority``): never over the budget, exact."""

import numpy as np
import pytest

import activerank as ar
from activerank.design.kinds.documents import PoissonDesign, affordable_prefix, draw_priority, waterfill
from tests.conftest import SyntheticPool


def _design(rng, n=12, budget=6.0):
    y = rng.gamma(0.7, 1.0, n)
    c = rng.choice([1.0, 1.5, 2.0], n)
    pi = waterfill(np.sqrt(y + 0.2), c, budget)
    return y, PoissonDesign(pi=pi, costs=c, budget=budget, kind="poisson")


@pytest.mark.statistical  # 40,000 draws at every ACTIVERANK_STAT_SCALE: the variance ratio's 0.06 needs them
def test_horvitz_thompson_with_the_realized_pi_is_unbiased_and_so_is_its_variance_estimate():
    rng = np.random.default_rng(3)
    y, d = _design(rng)
    est, var = np.empty(40_000), np.empty(40_000)
    for r in range(est.size):
        take, real = draw_priority(d, rng)
        p = real.pi[take]
        assert d.costs[take].sum() <= d.budget
        est[r], var[r] = np.sum(y[take] / p), np.sum((1 - p) / p**2 * y[take] ** 2)
    mc_se = est.std() / np.sqrt(est.size)
    assert abs(est.mean() - y.sum()) <= 3.5 * mc_se
    # terms uncorrelated: the Poisson variance formula with the realized pi is unbiased
    assert var.mean() / est.var() == pytest.approx(1.0, abs=0.06)


@pytest.mark.parametrize("seed", range(25))
def test_no_draw_exceeds_the_budget_whatever_the_costs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    c = np.where(rng.random(n) < 0.1, 1.0 + 20 * rng.lognormal(0, 1, n), rng.uniform(0.01, 1.0, n))
    c[rng.random(n) < 0.2] = 0.0  # judged before: free, always in the sample
    budget = float(rng.uniform(c.max() if c.any() else 0.1, c.sum() + 1.0))
    pi = np.where(c == 0, 1.0, waterfill(rng.random(n) + 0.01, np.where(c > 0, c, 1.0), budget))
    d = PoissonDesign(pi=pi, costs=c, budget=budget, kind="poisson")
    for _ in range(20):
        take, real = draw_priority(d, rng)
        assert c[take].sum() <= budget
        assert np.all(real.pi[c == 0] == 1.0) and set(np.flatnonzero(c == 0)) <= set(take)
        assert np.all((real.pi > 0) & (real.pi <= 1.0) | (pi == 0))
        if c.sum() <= budget:  # everything fits: a census
            assert take.size == n and np.all(real.pi[pi > 0] == 1.0)


def test_affordable_prefix_counts_the_exactly_rounded_total():
    assert affordable_prefix(np.full(10, 0.1), 1.0) == 10
    assert affordable_prefix(np.array([0.5, 0.6, 0.1]), 1.0) == 1  # stops at the first that does not fit
    assert affordable_prefix(np.array([2.0]), 1.0) == 0


@pytest.mark.parametrize("method", ["doc_dyn", "doc_stat", "doc_uniform", "doc_hh", "two_stage", "doc_ubis"])
def test_document_methods_never_overspend_with_awkward_costs_and_held_labels(method):
    rng = np.random.default_rng(5)
    pool = SyntheticPool(rng, n_queries=25)
    a = pool.probs @ np.arange(pool.n_grades) + rng.normal(0, 0.3, pool.probs.shape[0])
    b = a + rng.normal(0, 0.5, pool.probs.shape[0])
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    costs = np.where(rng.random(pool.probs.shape[0]) < 0.05, 3.0, rng.uniform(0.5, 1.5, pool.probs.shape[0]))
    held, ran = None, 0
    for seed in range(6):
        try:
            res = ar.compare(pool, a, b, pool.probs, lab, budget=12.0, metric="dcg@5", method=method, costs=costs,
                             rng=seed, judgments=held)
        except ValueError as exc:  # a budget that cannot buy the design names the smallest usable one
            assert "smallest usable budget" in str(exc) or "too small" in str(exc)
            continue
        assert res.cost_spent <= res.budget
        held, ran = (res.judgments if seed % 2 == 0 else None), ran + 1
    assert ran >= 3


def test_a_document_dearer_than_the_budget_is_refused_naming_the_smallest_usable_budget():
    rng = np.random.default_rng(1)
    pool = SyntheticPool(rng, n_queries=10)
    a = pool.probs @ np.arange(pool.n_grades)
    b = a + rng.normal(0, 0.5, pool.probs.shape[0])
    costs = np.ones(pool.probs.shape[0])
    costs[3] = 500.0
    with pytest.raises(ValueError, match=r"smallest usable budget is \d"):
        ar.compare(pool, a, b, pool.probs, ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng)), budget=4.0,
                   metric="dcg@5", method="doc_dyn", costs=costs, rng=0)
