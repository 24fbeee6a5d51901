"""The budgeted draw loop (one run and batched runs) against a plain reference loop; batched estimators."""

import numpy as np
import pytest

from activerank.inference.snis import snis
from activerank.design.sampling import draw_budgeted
from activerank.design.draws import budget_stops, draw_budgeted_batch
from activerank.inference.snis import mean_batch, snis_batch, snis_prefix


def _pool(m=40, seed=0):
    g = np.random.default_rng(seed)
    q = g.dirichlet(np.full(m, 0.7))
    c = g.gamma(2.0, size=m)
    return q, c / c.mean()


def _reference_run(q, c, budget, seed):
    """Algorithm 1 written plainly, one draw at a time (same chunks of uniforms as the implementation)."""
    rng = np.random.default_rng(seed)
    m = q.size
    max_draws = 100 * m
    cdf = np.cumsum(q / q.sum())
    cdf[-1] = 1.0
    chunk = int(min(max(64, 4 * budget), max_draws))
    reachable = int((q > 0).sum())
    tol = 1e-12 * max(1.0, budget)
    seen, queries, new, spent = set(), [], [], 0.0
    while len(queries) < max_draws and len(seen) < reachable:
        for u in rng.random(min(chunk, max_draws - len(queries))):
            x = min(int(np.searchsorted(cdf, u, side="right")), m - 1)
            first = x not in seen
            if first and spent + c[x] > budget + tol:
                return np.array(queries, dtype=np.int64), np.array(new, dtype=bool), "budget"
            spent += c[x] if first else 0.0
            queries.append(x)
            new.append(first)
            seen.add(x)
            if len(seen) >= reachable:
                return np.array(queries, dtype=np.int64), np.array(new, dtype=bool), "all_reachable"
    return np.array(queries, dtype=np.int64), np.array(new, dtype=bool), "max_draws"


@pytest.mark.parametrize("budget", [1.0, 3.5, 20.0, 150.0])
def test_one_run_and_batched_runs_follow_the_reference_loop(budget):
    q, c = _pool()
    q[3] = 0.0  # an unreachable query
    for seed in range(8):
        ref_q, ref_new, ref_reason = _reference_run(q, c, budget, seed)
        one = draw_budgeted(q, c, budget, seed)
        np.testing.assert_array_equal(one.queries, ref_q)
        np.testing.assert_array_equal(one.new, ref_new)
        np.testing.assert_array_equal(one.charged, np.where(ref_new, c[ref_q], 0.0))
        assert one.stop_reason == ref_reason
        got = draw_budgeted_batch(q, c, budget, 1, seed)
        n = int(got.n_draws[0])
        np.testing.assert_array_equal(got.queries[0, :n], ref_q)
        np.testing.assert_array_equal(got.new[0, :n], ref_new)


def test_every_run_is_a_valid_plan():
    q, c = _pool(m=30, seed=1)
    budget = 12.0
    plan = draw_budgeted_batch(q, c, budget, 300, rng=3)
    for r in range(plan.n_reps):
        n = int(plan.n_draws[r])
        assert plan.valid[r, :n].all() and not plan.valid[r, n:].any()
        x = plan.queries[r, :n]
        _, first = np.unique(x, return_index=True)
        expect_new = np.zeros(n, bool)
        expect_new[first] = True
        np.testing.assert_array_equal(plan.new[r, :n], expect_new)
        np.testing.assert_allclose(plan.charged[r, :n], np.where(expect_new, c[x], 0.0))
        assert plan.charged[r].sum() <= budget + 1e-9
    # stopping was forced by the budget: the spend is close to the budget
    assert (plan.cost_spent > budget - c.max()).all()


def test_stops_once_all_reachable_queries_are_labeled():
    q = np.array([0.5, 0.0, 0.3, 0.2])
    c = np.ones(4)
    plan = draw_budgeted_batch(q, c, 100.0, 50, rng=0)
    np.testing.assert_array_equal(plan.n_queries, 3)
    last = plan.queries[np.arange(50), plan.n_draws - 1]
    assert plan.new[np.arange(50), plan.n_draws - 1].all()  # the completing draw ends the run
    assert not np.isin(1, plan.queries[plan.valid])
    assert last.size == 50


def test_mean_number_of_draws_agrees_with_loop():
    q, c = _pool(m=25, seed=2)
    budget = 8.0
    n = 400
    loop = np.array([draw_budgeted(q, c, budget, 1000 + s).n_draws for s in range(n)])
    batch = draw_budgeted_batch(q, c, budget, n, rng=7).n_draws
    se = np.sqrt(loop.var(ddof=1) / n + batch.var(ddof=1) / n)
    assert abs(loop.mean() - batch.mean()) < 4 * se
    loop_q = np.array([np.unique(draw_budgeted(q, c, budget, 5000 + s).queries).size for s in range(n)])
    batch_q = draw_budgeted_batch(q, c, budget, n, rng=8).n_queries
    se = np.sqrt(loop_q.var(ddof=1) / n + batch_q.var(ddof=1) / n)
    assert abs(loop_q.mean() - batch_q.mean()) < 4 * se


def test_budget_stops_are_the_runs_for_smaller_budgets():
    q, c = _pool(m=30, seed=4)
    plan = draw_budgeted_batch(q, c, 20.0, 200, rng=5)
    budgets = np.array([2.0, 5.0, 11.0, 20.0])
    stops = budget_stops(plan, budgets)
    np.testing.assert_array_equal(stops[-1], plan.n_draws)
    assert (np.diff(stops, axis=0) >= 0).all()
    cum = plan.cumulative_cost
    rows = np.arange(plan.n_reps)
    for b, st in zip(budgets, stops):
        spent = np.where(st > 0, cum[rows, np.maximum(st - 1, 0)], 0.0)
        assert (spent <= b + 1e-9).all()
        more = st < plan.n_draws  # the next draw of the long run would exceed b
        nxt = cum[rows[more], st[more]]
        assert (nxt > b).all()
    with pytest.raises(ValueError, match="budgets"):
        budget_stops(plan, [30.0])


def test_snis_prefix_matches_snis():
    g = np.random.default_rng(0)
    v = g.normal(3.0, 1.0, size=(5, 12))
    w = g.gamma(1.0, size=(5, 12))
    stops = np.array([[12, 3, 1, 0, 7], [2, 12, 5, 6, 12]])
    res = snis_prefix(v, w, stops)
    for b in range(2):
        for r in range(5):
            n = stops[b, r]
            ref = snis(v[r, :n], w[r, :n])
            if n == 0:
                assert np.isnan(res.estimate[b, r]) and res.effective_sample_size[b, r] == 0
                continue
            assert res.estimate[b, r] == pytest.approx(ref.estimate, rel=1e-10)
            assert res.effective_sample_size[b, r] == pytest.approx(ref.effective_sample_size, rel=1e-10)
            if n > 1:
                assert res.standard_error[b, r] == pytest.approx(ref.standard_error, rel=1e-8)
            else:
                assert np.isnan(res.standard_error[b, r])


def test_snis_batch_and_passive_mean():
    g = np.random.default_rng(1)
    v = g.random((4, 9))
    valid = np.arange(9)[None, :] < np.array([9, 4, 2, 6])[:, None]
    m = mean_batch(v, valid)
    for r in range(4):
        x = v[r, valid[r]]
        assert m.estimate[r] == pytest.approx(x.mean())
        assert m.standard_error[r] == pytest.approx(x.std(ddof=1) / np.sqrt(x.size))
    w = g.random((4, 9))
    s = snis_batch(v, w, valid)
    assert s.estimate[1] == pytest.approx(snis(v[1, :4], w[1, :4]).estimate)
    with pytest.raises(ValueError, match="prefix"):
        snis_batch(v, w, ~valid)


def test_validation_messages():
    q, c = _pool(m=5)
    with pytest.raises(ValueError, match="n_reps"):
        draw_budgeted_batch(q, c, 3.0, 0)
    with pytest.raises(ValueError, match="costs"):
        draw_budgeted_batch(q, -c, 3.0, 2)
    with pytest.raises(ValueError, match="costs` must have one entry"):
        draw_budgeted_batch(q, c[:3], 3.0, 2)
    with pytest.raises(ValueError, match="budget"):
        draw_budgeted_batch(q, c, 1e-6, 2)
    with pytest.raises(ValueError, match="`q`"):
        draw_budgeted_batch(np.zeros(5), c, 3.0, 2)


def test_model_assisted_prefix_matches_scalar_estimator():
    from activerank.inference.model_assisted import model_assisted
    from activerank.inference.model_assisted import model_assisted_prefix

    rng = np.random.default_rng(5)
    v = rng.random((3, 40))
    m = v + rng.normal(0, 0.2, v.shape)
    w = rng.uniform(0.5, 2.0, v.shape)
    stops = np.array([[10, 25, 40], [40, 3, 17]])
    for tuned in (True, False):
        batch = model_assisted_prefix(v, m, w, 0.55, stops, tuned=tuned)
        for b in range(2):
            for r in range(3):
                n = stops[b, r]
                one = model_assisted(v[r, :n], m[r, :n], w[r, :n], 0.55, tuned=tuned)
                assert batch.estimate[b, r] == pytest.approx(one.estimate, rel=1e-9)
                assert batch.standard_error[b, r] == pytest.approx(one.standard_error, rel=1e-7)


def test_batch_equals_single_when_everything_gets_judged():
    # a run that labels every reachable query exactly at a chunk boundary must not draw again
    q, c = np.array([0.49, 0.49, 0.02]), np.ones(3)
    for seed in range(200):
        single = draw_budgeted(q, c, 10, rng=seed)
        batch = draw_budgeted_batch(q, c, 10, 1, rng=seed)
        np.testing.assert_array_equal(batch.queries[0][batch.valid[0]], single.queries)


def _reference_batch(q, costs, budget, n_reps, seed, max_draws=None):
    """The batch draw as first written: searchsorted per draw, whole chunks sorted per row.

    Kept as the reference the faster implementation must reproduce draw for draw.
    """
    rng = np.random.default_rng(seed)
    q, costs = np.asarray(q, float), np.asarray(costs, float)
    m = q.size
    max_draws = 100 * m if max_draws is None else max_draws
    cdf = np.cumsum(q / q.sum())
    cdf[-1] = 1.0
    reachable = int((q > 0).sum())
    tol = 1e-12 * max(1.0, budget)
    chunk = int(min(max(64, 4 * budget), max_draws))
    seen = np.zeros((n_reps, m), dtype=bool)
    spent, n_seen, n_drawn = np.zeros(n_reps), np.zeros(n_reps, int), np.zeros(n_reps, int)
    active = np.arange(n_reps)
    rows_q = [[] for _ in range(n_reps)]
    rows_new = [[] for _ in range(n_reps)]
    while active.size:
        size = int(min(chunk, max_draws - n_drawn[active].min()))
        draws = np.minimum(np.searchsorted(cdf, rng.random((active.size, size)), side="right"), m - 1)
        first = np.zeros(draws.shape, dtype=bool)
        for i, row in enumerate(draws):
            first[i, np.unique(row, return_index=True)[1]] = True
        new = first & ~seen[active[:, None], draws]
        cum = spent[active, None] + np.cumsum(np.where(new, costs[draws], 0.0), axis=1)
        over = cum > budget + tol
        stop = np.where(over.any(axis=1), over.argmax(axis=1), size)
        complete = (n_seen[active, None] + np.cumsum(new, axis=1)) >= reachable
        stop = np.minimum(stop, np.where(complete.any(axis=1), complete.argmax(axis=1) + 1, size + 1))
        for i, r in enumerate(active):
            rows_q[r] += draws[i, : stop[i]].tolist()
            rows_new[r] += new[i, : stop[i]].tolist()
            seen[r, draws[i, : stop[i]]] = True
            n_seen[r] += int(new[i, : stop[i]].sum())
        n_drawn[active] += stop
        spent[active] = cum[:, -1]
        active = active[(stop == size) & (n_drawn[active] < max_draws) & (n_seen[active] < reachable)]
    return rows_q, rows_new


@pytest.mark.parametrize("trial", range(60))
def test_batch_reproduces_the_chunked_reference_exactly(trial):
    """Guide-table draws and block-wise stopping change nothing: same draws, same stops."""
    g = np.random.default_rng([trial, 99])
    m = int(g.integers(1, 50))
    q = g.dirichlet(np.full(m, g.choice([0.05, 0.7, 5.0])))
    if trial % 3 == 0:
        q[g.random(m) < 0.4] = 0.0  # unreachable queries: ties in the cdf
    if q.sum() == 0:
        q[-1] = 1.0
    c = g.gamma(2.0, size=m)
    c /= c.mean()
    if trial % 5 == 0:
        c[g.random(m) < 0.3] = 0.0  # free queries (all documents judged already)
    budget = float(g.choice([float(c[q > 0].min()) + 0.01, 1.0, 3.5, 20.0, 150.0, 600.0]))
    budget = max(budget, float(c[q > 0].min()))
    n_reps = int(g.integers(1, 30))
    max_draws = None if trial % 4 else int(g.integers(1, 150))
    seed = int(g.integers(0, 2**31))
    plan = draw_budgeted_batch(q, c, budget, n_reps, seed, max_draws=max_draws)
    ref_q, ref_new = _reference_batch(q, c, budget, n_reps, seed, max_draws)
    for r in range(n_reps):
        n = int(plan.n_draws[r])
        assert plan.queries[r, :n].tolist() == ref_q[r]
        assert plan.new[r, :n].tolist() == ref_new[r]
        assert not plan.valid[r, n:].any()
        assert plan.cumulative_cost[r, n - 1] <= budget + 1e-9 if n else True
