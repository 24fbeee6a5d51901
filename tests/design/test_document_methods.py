"""Document-level design plug-ins: one engine path, one harness path, every design (seeded)."""

import numpy as np
import pytest

import activerank as ar
from activerank.pool import pool_iv
from activerank.design.design import prepare_design
from activerank.design.kinds.documents import UniformHorvitzThompson, unit_costs
from activerank.design.kinds.two_stage import TwoStage
from activerank.design.methods import Method, get_method, method_names, register_method, unregister_method
from activerank.design.kinds.documents import document_target_of
from activerank.relevance.rankers import rank_by_scores

from ..conftest import SyntheticPool, stat_reps

KIND = {1: "mean", 2: "difference", 3: "baseline"}


def _problem(seed, n_queries=120):
    rng = np.random.default_rng(seed)
    pool = SyntheticPool(rng, n_queries=n_queries)
    base = pool.probs @ np.arange(pool.n_grades)
    a = rank_by_scores(base + rng.random(base.size), pool.offsets)
    b = rank_by_scores(base + 1.5 * rng.random(base.size), pool.offsets)
    c = rank_by_scores(base + 2.0 * rng.random(base.size), pool.offsets)
    return pool, (a, b, c), rng


def _design(pool, rankings, method, metric, **kw):
    return prepare_design(pool, pool_iv(pool), KIND[len(rankings)], tuple(rankings), pool.probs, metric=metric,
                          method=method, **kw)


def test_every_document_method_is_a_design_plug_in():
    names = method_names(unit="document")
    assert {"doc_dyn", "doc_stat", "doc_uniform", "doc_hh", "two_stage", "doc_ubis"} <= set(names)
    for name in names:
        plug = get_method(name).kind
        assert set(plug.targets) == {"mean", "difference", "baseline", "ranking"} and plug.unit == "document"
    # the unit comes with the kind: a document design registered under any q-rule samples documents
    assert Method("ok", get_method("active").sample, UniformHorvitzThompson()).unit == "document"


@pytest.mark.parametrize("method", method_names(unit="document"))
@pytest.mark.parametrize("n_systems", [1, 2, 3])
def test_engine_run_is_the_plug_in_draw_and_estimate(method, n_systems):
    """The engine adds labeling and bookkeeping, nothing else: the first repetition of the harness path
    (DocumentDesign.simulate) with the same seed is the public function's run, to the last bit."""
    pool, (a, b, c), rng = _problem(7, n_queries=50)
    rankings = {1: (a,), 2: (a, b), 3: (a, c, b)}[n_systems]
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    budget = 30.0 if method == "doc_ubis" else 9.0
    kw = dict(budget=budget, metric="dcg@5", method=method, rng=11)
    if n_systems == 1:
        res = ar.estimate(pool, a, pool.probs, lab, **kw)
        point, se = np.array([res.estimate]), np.array([res.standard_error])
    elif n_systems == 2:
        res = ar.compare(pool, a, b, pool.probs, lab, **kw)
        point, se = np.array([res.difference]), np.array([res.standard_error])
    else:
        res = ar.compare_many(pool, [a, c], b, pool.probs, lab, **kw)
        point, se = res.differences, res.standard_errors
    dsg = _design(pool, rankings, method, "dcg@5")
    dt = document_target_of(dsg)
    sim = get_method(method).kind.simulate(dt, pool.probs, unit_costs(dt, dsg.costs, dsg.document_costs),
                                                [budget], labels[dt.rows], 1, np.random.default_rng(11),
                                                defensive=dsg.defensive)
    np.testing.assert_array_equal(sim["estimate"][0, 0], point)
    np.testing.assert_array_equal(sim["standard_error"][0, 0], se)
    assert sim["cost"][0, 0] == pytest.approx(res.cost_spent, rel=1e-12)
    assert sim["n_draws"][0, 0] == res.n_draws and sim["n_queries"][0, 0] == res.n_queries


def test_uniform_costs_give_every_query_a_total_of_one():
    pool, (a, b, _), _ = _problem(8, n_queries=30)
    dsg = _design(pool, (a, b), "doc_hh", "dcg@5", costs="uniform")
    dt = document_target_of(dsg)
    c = unit_costs(dt, dsg.costs, dsg.document_costs)
    np.testing.assert_allclose(np.bincount(dt.query, c, minlength=dt.n_queries)[np.diff(dt.offsets) > 0], 1.0)
    auto = _design(pool, (a, b), "doc_hh", "dcg@5")
    c = unit_costs(dt, auto.costs, auto.document_costs)
    np.testing.assert_allclose(c, auto.document_costs[dt.rows] / auto.costs.scale)


class _OnlyOneRanker(UniformHorvitzThompson):
    targets = ("mean",)


def test_a_plug_in_that_supports_fewer_targets_is_refused_by_name():
    register_method(Method("doc_uniform_single", get_method("doc_uniform").sample, _OnlyOneRanker()))
    try:
        pool, (a, b, c), rng = _problem(9, n_queries=30)
        lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
        res = ar.estimate(pool, a, pool.probs, lab, budget=5, metric="dcg@5", method="doc_uniform_single", rng=0)
        assert res.method == "doc_uniform_single"
        with pytest.raises(ValueError, match=r"`method`='doc_uniform_single' does not support the 'difference' "
                                             r"target of compare\(\)"):
            ar.compare(pool, a, b, pool.probs, lab, budget=5, metric="dcg@5", method="doc_uniform_single")
        with pytest.raises(ValueError, match=r"does not support the 'ranking' target of rank_systems\(\)"):
            ar.rank_systems(pool, [a, b, c], pool.probs, lab, budget=5, metric="dcg@5",
                            method="doc_uniform_single")
    finally:
        unregister_method("doc_uniform_single")


def test_two_stage_with_a_query_overhead_uses_cochrans_allocation_and_charges_it():
    register_method(Method("two_stage_overhead", get_method("two_stage").sample, TwoStage(query_cost=2.0)))
    try:
        pool, (a, b, _), rng = _problem(10, n_queries=60)
        labels = pool.sample_labels(rng)
        lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
        res = ar.compare(pool, a, b, pool.probs, lab, budget=10, metric="dcg@5", method="two_stage_overhead",
                         rng=4)
        t = res.trace
        overhead = t.attrs["query_overhead_cost"]
        first_visits = np.unique(t.attrs["first_stage_queries"]).size
        dsg = _design(pool, (a, b), "two_stage_overhead", "dcg@5")
        dt = document_target_of(dsg)
        c = unit_costs(dt, dsg.costs, dsg.document_costs)
        assert overhead == pytest.approx(first_visits * 2.0 * c[dt.matters].mean())
        assert res.cost_spent == pytest.approx(t["cost"].sum() + overhead) and res.cost_spent <= 10.0
        # Cochran: with the control variate (B_x = 0) a drawn query judges its most informative document surely
        d = dsg.method_spec.kind.design_for(dt, pool.probs, c, 10.0, judged=np.zeros(dt.n_units, bool),
                                             defensive=dsg.defensive).design
        live = np.flatnonzero(np.bincount(dt.query, dt.matters, minlength=dt.n_queries) > 0)
        top = np.maximum.reduceat(d.pi, dt.offsets[:-1][live])
        np.testing.assert_allclose(top, 1.0)
        assert np.isfinite(res.difference) and res.standard_error > 0
    finally:
        unregister_method("two_stage_overhead")


@pytest.mark.statistical
@pytest.mark.parametrize("method,n_systems,metric,budget", [
    ("doc_uniform", 1, "p@3", 30.0), ("doc_uniform", 2, "dcg@5", 16.0),
    ("doc_hh", 2, "dcg@5", 16.0), ("doc_hh", 3, "dcg@5", 16.0),
    ("two_stage", 1, "p@3", 30.0), ("two_stage", 3, "dcg@5", 16.0),
    ("doc_ubis", 1, "p@3", 90.0), ("doc_ubis", 3, "dcg@5", 48.0),
])
def test_design_based_unbiasedness_variance_and_coverage(method, n_systems, metric, budget):
    """Labels fixed, the design repeated (the harness path; see the test above for its equality with the
    public functions): |bias| <= 3 Monte-Carlo SE, mean estimated variance vs the empirical one, 95% coverage."""
    pool, (a, b, c), rng = _problem(5)
    rankings = {1: (a,), 2: (a, b), 3: (a, c, b)}[n_systems]
    labels = pool.sample_labels(rng)
    dsg = _design(pool, rankings, method, metric)
    dt = document_target_of(dsg)
    truth = dt.value(labels)
    reps = stat_reps(2000)
    out = get_method(method).kind.simulate(dt, pool.probs, unit_costs(dt, dsg.costs, dsg.document_costs),
                                                [budget], labels[dt.rows], reps, np.random.default_rng(1),
                                                defensive=dsg.defensive)
    err, se = out["estimate"][0] - truth, out["standard_error"][0]
    assert out["n_draws"].min() >= 50
    assert out["cost"].max() <= budget  # a hard budget
    if method == "doc_ubis":  # k fixed by what k draws per query can cost at most: 0.65-0.70 spent here
        assert out["cost"].mean() >= 0.6 * budget
    else:
        assert out["cost"].mean() == pytest.approx(budget, rel=0.05)
    assert np.all(np.abs(err.mean(axis=0)) <= 3 * err.std(axis=0, ddof=1) / np.sqrt(reps))
    np.testing.assert_allclose(np.mean(se**2, axis=0), err.var(axis=0, ddof=1), rtol=0.1 if reps >= 2000 else 0.3)
    cover = np.mean(np.abs(err) <= 1.959964 * se, axis=0)
    lo, hi = (0.93, 0.97) if reps >= 2000 else (0.88, 0.99)
    assert np.all((lo <= cover) & (cover <= hi)), cover


@pytest.mark.parametrize("method", ["doc_hh", "two_stage", "doc_ubis"])
def test_nested_designs_cut_one_run_into_the_runs_of_smaller_budgets(method):
    pool, (a, b, _), rng = _problem(11, n_queries=60)
    dsg = _design(pool, (a, b), method, "dcg@5")
    dt = document_target_of(dsg)
    c = unit_costs(dt, dsg.costs, dsg.document_costs)
    plug = dsg.method_spec.kind
    assert plug.nested
    none = np.zeros(dt.n_units, dtype=bool)
    budgets, top = (3.0, 7.5), 12.0
    if method == "doc_ubis":  # between two draws in every query and judging everything
        total = float(c[dt.matters].sum())
        two = plug.design_for(dt, pool.probs, c, 0.9 * total, judged=none, defensive=0.1).max_cost(2)
        budgets, top = (1.05 * two, 0.5 * (two + 0.9 * total)), 0.9 * total
    big = plug.draw_units(plug.design_for(dt, pool.probs, c, top, judged=none, defensive=0.1), dt, np.random.default_rng(3))
    for budget in budgets:
        cut = plug._cut(big, dt, budget)
        if method == "doc_ubis":  # the first k columns of the k_max draws per query, k the largest that fits
            k = cut.design.k
            assert 2 <= k < big.design.k and cut.design.max_cost(k) <= budget < cut.design.max_cost(k + 1)
            np.testing.assert_array_equal(cut.units, big.plan[:, :k].reshape(-1))
            continue
        n, charged = cut.plan.n_draws, big.plan.charged
        assert charged[:n].sum() <= budget < charged[: n + 1].sum()  # the next draw would overspend
        if method == "two_stage":  # its random stream does not depend on the budget: the very same run
            alone = plug.draw_units(plug.design_for(dt, pool.probs, c, budget, judged=none, defensive=0.1), dt,
                              np.random.default_rng(3))
            np.testing.assert_array_equal(cut.units, alone.units)
            np.testing.assert_array_equal(cut.weight, alone.weight)
        else:
            np.testing.assert_array_equal(cut.units, big.units[:n])
            np.testing.assert_allclose(cut.weight, 1.0 / (n * plug.design_for(dt, pool.probs, c, budget, judged=none,
                                                                         defensive=0.1).Q[cut.units]))
