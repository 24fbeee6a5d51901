"""Every metric the registry knows is estimated through the same engine (issue 19)."""

import warnings

import numpy as np
import pytest

import activerank as ar
from activerank.design.draws import budget_stops, draw_budgeted_batch
from activerank.inference.snis import snis_prefix

from .conftest import SyntheticPool, stat_reps

METRICS = ["ndcg(gain=exp)@10", "nDCG(dcg='log2')@10", "p@10", "rr", "ap", "r@10", "success@5", "rbp(p=0.8)",
           "rbp(rel=graded)", "dcg(gain=linear)@10", "err(ymax=4)@10"]


@pytest.fixture(scope="module")
def sample():
    data, train = ar.load_sample(), ar.load_sample("train")
    probs = ar.relevance.make_relevance_model("logistic", 3).fit(train.X, train.labels).predict_proba(data.X)
    return data, probs, ar.KnownLabels.from_data(data)


@pytest.mark.parametrize("metric", METRICS)
def test_estimate_and_compare_run_for_every_metric(sample, metric):
    data, probs, lab = sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
        res = ar.estimate(data, data.X[:, 24], probs, lab, budget=10, metric=metric, rng=0)
        cmp = ar.compare(data, data.X[:, 24], data.X[:, 39], probs, lab, budget=10, metric=metric, rng=0)
    assert np.isfinite([res.estimate, res.standard_error, cmp.difference, cmp.standard_error]).all()
    assert res.metric == str(ar.parse_metric(metric)) and res.cost_spent <= 10


def test_ratio_metrics_judge_every_document_of_a_drawn_query(sample):
    data, probs, _ = sample
    dsg = ar.make_design(data, (ar.relevance.rank_by_scores(data.X[:, 24], data.offsets),), probs,
                         metric="ndcg(gain=exp)@10")
    x = 1  # a query with 61 documents: the ideal DCG@10 may need any of them
    assert sorted(dsg.documents(x).tolist()) == list(range(data.offsets[x], data.offsets[x + 1]))
    shallow = ar.make_design(data, (ar.relevance.rank_by_scores(data.X[:, 24], data.offsets),), probs,
                             metric="ndcg(gain=exp,depth=10)@10")
    assert shallow.documents(x).size == 10


@pytest.mark.statistical
@pytest.mark.parametrize("metric", ["ndcg(gain=exp)@10", "ap", "p@10", "rr"])
def test_active_estimates_are_consistent_for_every_metric(metric):
    """Fixed labels; the design's q* (Monte-Carlo moments for ratio metrics); SNIS over seeded runs."""
    rng = np.random.default_rng(3)
    pool = SyntheticPool(rng, n_queries=150)
    labels = pool.sample_labels(rng)
    scores = pool.probs @ np.arange(3) + 0.5 * rng.random(pool.probs.shape[0])
    dsg = ar.make_design(pool, (ar.relevance.rank_by_scores(scores, pool.offsets),), pool.probs, metric=metric)
    values = dsg.target.values(labels, np.arange(150), dsg.n_grades)[:, 0]
    truth = float(dsg.p @ values)
    reps = stat_reps(2000)
    plan = draw_budgeted_batch(dsg.q, dsg.costs.cost, 40.0, reps, rng)
    stops = budget_stops(plan, [40.0])[0]
    est = snis_prefix(values[plan.queries], dsg.p[plan.queries] / dsg.q[plan.queries], stops)
    err = est.estimate - truth
    mc_se = err.std(ddof=1) / np.sqrt(reps)
    assert abs(err.mean()) <= 3 * mc_se + 0.02 * est.standard_error.mean(), (err.mean(), mc_se)
    # the delta-method standard error tracks the spread of the estimates
    assert 0.8 <= est.standard_error.mean() / err.std() <= 1.25
