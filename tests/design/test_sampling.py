import numpy as np
import pytest

from activerank._validation import query_weights_iv
from activerank.design.sampling import draw_budgeted, expected_squared_error, optimal_distribution


def test_optimal_distribution_formula():
    sq = np.array([4.0, 1.0, 0.0, 9.0])
    lam = np.array([1.0, 4.0, 1.0, 1.0])
    p = np.array([0.25, 0.25, 0.25, 0.25])
    q = optimal_distribution(sq, lam, p, defensive=0.0)
    raw = p * np.sqrt(sq / lam)
    np.testing.assert_allclose(q, raw / raw.sum(), rtol=1e-15)
    qd = optimal_distribution(sq, lam, p, defensive=0.2)
    np.testing.assert_allclose(qd, 0.8 * q + 0.2 * p, rtol=1e-15)
    assert qd.min() >= 0.2 * 0.25  # defensive mixture bounds weights p/q by 1/0.2


def test_optimal_distribution_degenerate_falls_back_to_p():
    p = np.array([0.5, 0.5])
    np.testing.assert_array_equal(optimal_distribution(np.zeros(2), np.ones(2), p), p)


def test_expected_squared_error():
    mean, var, p = np.array([1.0, 3.0]), np.array([0.5, 0.0]), np.array([0.5, 0.5])
    np.testing.assert_allclose(expected_squared_error(mean, var, p), [1.5, 1.0])


@pytest.mark.parametrize("seed", range(20))
def test_budget_never_exceeded_and_repeats_free(seed):
    rng = np.random.default_rng(seed)
    m = 30
    q = rng.dirichlet(np.full(m, 0.5))
    costs = rng.uniform(0.2, 3.0, m)
    costs /= costs.mean()
    budget = rng.uniform(1.0, 20.0)
    plan = draw_budgeted(q, costs, budget, rng)
    assert plan.cost_spent <= budget + 1e-9
    seen = set()
    for x, new, c in zip(plan.queries, plan.new, plan.charged):
        assert new == (x not in seen)
        assert c == (costs[x] if new else 0.0)
        seen.add(x)
    # the run stopped because the next new query would not fit (or all were labeled)
    if len(seen) < m:
        assert plan.n_draws > 0


def test_stops_right_before_unaffordable_draw():
    q = np.array([0.5, 0.5])
    costs = np.array([0.5, 1.5])
    # seeded: whatever is drawn, spending must stop before the first draw that overflows
    for seed in range(30):
        plan = draw_budgeted(q, costs, 1.0, seed)
        assert plan.cost_spent <= 1.0
        assert 1 not in set(plan.queries)  # query 1 alone costs 1.5 > budget


def test_all_labeled_stops():
    plan = draw_budgeted(np.array([0.5, 0.5]), np.array([1.0, 1.0]), 100.0, 0)
    assert set(plan.queries) == {0, 1} and plan.new[-1]


def test_seeded_reproducible():
    q = np.full(10, 0.1)
    a = draw_budgeted(q, np.ones(10), 5, 42)
    b = draw_budgeted(q, np.ones(10), 5, np.random.default_rng(42))
    np.testing.assert_array_equal(a.queries, b.queries)


@pytest.mark.parametrize("budget, exc, match", [
    (0, ValueError, r"`budget` must be a positive finite number, got 0"),
    (-1.0, ValueError, r"`budget` must be a positive finite number"),
    (np.inf, ValueError, r"`budget` must be a positive finite number"),
    (0.1, ValueError, r"`budget`=0.1 is below the cheapest query's cost \(0.5"),
    ("10", TypeError, r"`budget` must be a positive number"),
])
def test_bad_budget(budget, exc, match):
    with pytest.raises(exc, match=match):
        draw_budgeted(np.array([0.5, 0.5]), np.array([0.5, 1.5]), budget, 0)


def test_query_weights_validation():
    np.testing.assert_allclose(query_weights_iv([1, 3], 2), [0.25, 0.75])
    with pytest.raises(ValueError, match=r"`query_weights` must have one entry per query \(3\); got 2"):
        query_weights_iv([1, 1], 3)
    with pytest.raises(ValueError, match=r"`query_weights` must be finite and >= 0; query 1"):
        query_weights_iv([1, -1], 2)
    with pytest.raises(ValueError, match=r"`query_weights` must have a positive sum"):
        query_weights_iv([0, 0], 2)


def test_defensive_validation():
    with pytest.raises(ValueError, match=r"`defensive` must lie in \[0, 1\]"):
        optimal_distribution(np.ones(2), np.ones(2), np.full(2, 0.5), defensive=1.5)


@pytest.mark.parametrize("q, costs, kw, match", [
    (np.zeros(3), np.ones(3), {}, r"`q` must have a positive sum"),
    (np.array([np.nan, 1, 1]), np.ones(3), {}, r"`q` must be finite and >= 0; query 0 has nan"),
    (np.array([-0.5, 1, 0.5]), np.ones(3), {}, r"`q` must be finite and >= 0; query 0"),
    (np.ones(3) / 3, np.ones(2), {}, r"`costs` must have one entry per query \(3\); got 2"),
    (np.ones(3) / 3, np.ones(3), {"max_draws": 0}, r"`max_draws` must be a positive integer"),
])
def test_draw_budgeted_validates(q, costs, kw, match):
    with pytest.raises(ValueError, match=match):
        draw_budgeted(q, costs, 2, 0, **kw)
