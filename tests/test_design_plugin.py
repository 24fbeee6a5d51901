"""A design kind from outside the package runs through the API, a labeling campaign and a Dask pool.

The kind (:mod:`tests.design.toy_design`: stratified simple random sampling of queries, unequal inclusion
probabilities, its own variance estimator) is registered with one ``register_method`` call; nothing in
the package knows it.  Its estimator is checked by simulation on a small pool, where the sample is a
quarter to a half of the pool.
"""

import json

import numpy as np
import pytest

import activerank as ar
from activerank.design.methods import Method, get_method, register_method, unregister_method
from activerank.engine import FixedBudget, run
from activerank.metrics import pool_metric_values
from activerank.pool import pool_iv
from activerank.relevance.rankers import rank_by_scores

from .conftest import SyntheticPool, stat_reps
from .design.toy_design import StratifiedQueries

METHOD = "toy_stratified"


@pytest.fixture(autouse=True)
def toy():
    register_method(Method(METHOD, get_method("active").sample, StratifiedQueries(),
                           description="stratified SRS of queries (a test plug-in)"))
    yield
    unregister_method(METHOD)


def _pool(seed, n_queries=60):
    pool = SyntheticPool(np.random.default_rng(seed), n_queries=n_queries, max_docs=10)
    return pool, pool.sample_labels(np.random.default_rng(seed + 1))


def test_the_api_runs_it_and_reports_it():
    pool, labels = _pool(0)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    a, b = pool.probs[:, 2], pool.probs[:, 1]
    res = ar.estimate(pool, a, pool.probs, lab, budget=20, metric="dcg@5", method=METHOD, rng=0)
    assert res.method == METHOD and res.n_queries >= 4 and np.isfinite(res.standard_error)
    assert set(res.trace["stratum"]) == {0, 1} and res.trace["pi"].nunique() == 2  # unequal inclusion
    assert lab.n_calls == 1  # one batch for the whole sample
    cmp = ar.compare(pool, a, b, pool.probs, lab, budget=20, metric="err@10", method=METHOD, rng=0, judge="all")
    assert cmp.method == METHOD and np.isfinite(cmp.difference)
    assert METHOD in ar.design.methods.method_table()


@pytest.mark.statistical
def test_unbiased_with_nominal_coverage_and_an_honest_variance_on_a_small_pool():
    """Fixed labels, repeated samples of 15 of 40 queries (about 3/8 of the pool): the design's own truth."""
    pool, labels = _pool(3, n_queries=40)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    a = pool.probs[:, 2]
    dsg = ar.make_design(pool, (rank_by_scores(a, pool.offsets),), pool.probs, metric="dcg@5", method=METHOD)
    truth = float(np.mean(pool_metric_values(labels, dsg.target.rankings[0], metric="dcg@5", ymax=2)))
    budget = 15 * float(dsg.costs.cost.mean())
    pool_ = pool_iv(pool)
    rng = np.random.default_rng(7)
    reps = stat_reps(2000)
    est, var, cover = np.empty(reps), np.empty(reps), np.empty(reps, dtype=bool)
    for i in range(reps):
        res = run(dsg, pool_, lab, FixedBudget(budget, rng))
        ci = res.confidence_interval(0.95)
        est[i], var[i], cover[i] = res.estimate, res.standard_error**2, ci.low <= truth <= ci.high
    n = res.n_queries
    assert 0.25 <= n / 40 <= 0.5
    mc_se = est.std(ddof=1) / np.sqrt(reps)
    print(f"toy: bias {est.mean() - truth:+.4f} ({(est.mean() - truth) / mc_se:+.2f} MC SE), coverage {cover.mean():.3f}, "
          f"var ratio {var.mean() / est.var(ddof=1):.3f}, n/N {n}/40")
    assert abs(est.mean() - truth) <= 3 * mc_se
    assert 0.93 <= cover.mean() <= 0.97
    assert 0.9 <= var.mean() / est.var(ddof=1) <= 1.1


def test_a_campaign_plans_stores_and_estimates_it(tmp_path):
    pool, labels = _pool(1)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    a = pool.probs[:, 2]
    ref = ar.estimate(pool, a, pool.probs, lab, budget=20, metric="dcg@5", method=METHOD, rng=4)
    with ar.campaign.Campaign.create(tmp_path / "c.db", pool, a, pool.probs, budget=20, metric="dcg@5",
                                     method=METHOD, seed=4) as c:
        with pytest.raises(ValueError, match="still asks for"):
            c.estimate()
        rows = []
        for qid in np.unique(ref.trace["query_id"]).tolist():
            docs = c.tasks(qid)
            rows += [{"query_id": qid, "doc_id": d, "grade": int(g)} for d, g in zip(docs, lab(qid, docs))]
        path = tmp_path / "judged.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        c.import_judgments(path)
        assert c.status().queries_pending == ()
        res = c.estimate()
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)
    with ar.campaign.Campaign.open(tmp_path / "c.db") as c:  # everything the estimate needs is stored
        assert c.estimate().estimate == pytest.approx(ref.estimate, rel=1e-12)
        assert c.check() == []


def test_a_dask_pool_runs_it_as_in_memory():
    pytest.importorskip("dask.dataframe")
    import activerank.distributed as ard

    from .distributed._pools import boundaries, dask_frame, labeler_of, synthetic_frame

    df, labels = synthetic_frame(seed=5, n_queries=60)
    pool = ard.DaskPool(dask_frame(df, boundaries(df, 3)), cost="cost")
    mem, (sa,), probs, doc_costs = ard.in_memory(pool, scores=["score_a"], probs=["p0", "p1", "p2"])
    res_d = ard.estimate(pool, "score_a", ["p0", "p1", "p2"], labeler_of(labels), budget=15, metric="dcg@5",
                         method=METHOD, rng=2)
    res_m = ar.estimate(mem, sa, probs, labeler_of(labels), budget=15, metric="dcg@5", method=METHOD,
                        costs=doc_costs, rng=2)
    assert res_d.method == METHOD
    assert res_d.estimate == pytest.approx(res_m.estimate, rel=1e-12)
    assert res_d.standard_error == pytest.approx(res_m.standard_error, rel=1e-12)
