"""method="auto": the design with the smaller predicted variance at the budget."""

import warnings

import numpy as np
import pytest

import activerank as ar
from activerank.pool import pool_iv
from activerank.design.auto import predicted_variance
from activerank.engine import FixedBudget, run
from activerank.inference.snis import LowEffectiveSampleSizeWarning
from activerank.metrics import pool_metric_values
from activerank.relevance.rankers import rank_by_scores

from ..conftest import SyntheticPool, stat_reps


def _problem(seed, n_queries=150):
    rng = np.random.default_rng(seed)
    pool = SyntheticPool(rng, n_queries=n_queries)
    base = pool.probs @ np.arange(pool.n_grades)
    a = rank_by_scores(base + rng.random(base.size), pool.offsets)
    b = rank_by_scores(base + 1.5 * rng.random(base.size), pool.offsets)
    return pool, a, b, rng


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowEffectiveSampleSizeWarning)
        return fn(*args, **kw)


@pytest.mark.parametrize("metric,family", [("ndcg(gain=exp)@5", "ratio"), ("ap@5", "ratio")])
def test_auto_stays_query_level_for_ratio_metrics(metric, family):
    pool, a, b, rng = _problem(0, n_queries=40)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    res = _quiet(ar.compare, pool, a, b, pool.probs, lab, budget=10, metric=metric, method="auto", rng=1)
    ref = _quiet(ar.compare, pool, a, b, pool.probs, lab, budget=10, metric=metric, method="active_wor", rng=1)
    auto = res.trace.attrs["auto"]
    assert res.method == auto["method"] == "active_wor" and family in auto["reason"]
    assert set(auto["predicted_variance"]) == {"active_wor"}
    assert (res.difference, res.standard_error) == (ref.difference, ref.standard_error)


@pytest.mark.parametrize("metric,alternative", [("dcg@5", "doc_dyn"), ("err@5", "prefix"), ("rr@5", "prefix")])
def test_auto_runs_the_design_it_chose_and_says_why(metric, alternative):
    pool, a, b, rng = _problem(1, n_queries=60)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    for fn, args in ((ar.estimate, (a,)), (ar.compare, (a, b))):
        res = _quiet(fn, pool, *args, pool.probs, lab, budget=15, metric=metric, method="auto", rng=2)
        auto = res.trace.attrs["auto"]
        v = auto["predicted_variance"]
        assert set(v) == {"active_wor", alternative} and res.method == auto["method"] == min(v, key=v.get)
        ref = _quiet(fn, pool, *args, pool.probs, lab, budget=15, metric=metric, method=res.method, rng=2)
        point = "estimate" if fn is ar.estimate else "difference"
        assert getattr(res, point) == getattr(ref, point) and res.standard_error == ref.standard_error
    # a budget too small for two documents in expectation leaves only the query-level design
    from activerank.design.auto import choose_method

    q = ar.make_design(pool, (a,), pool.probs, metric="dcg@1", costs="constant", method="active_wor")
    d = ar.make_design(pool, (a,), pool.probs, metric="dcg@1", costs="constant", method="doc_dyn")
    choice = choose_method(q, d, 1.5)
    assert choice.method == "active_wor" and choice.predicted_variance["doc_dyn"] == np.inf
    assert "too small" in choice.reason


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active", "active_wor", "doc_dyn", "prefix"])
def test_predicted_variances_match_the_simulated_error(method):
    """Labels drawn from the model: the predicted variance is the mean squared error of the estimate."""
    pool, a, b, rng = _problem(2)
    budget = 30.0
    metric = "err@5" if method == "prefix" else "dcg@5"
    dsg = ar.make_design(pool, (a, b), pool.probs, metric=metric, method=method)
    predicted = predicted_variance(dsg, budget)
    pool_ = pool_iv(pool)
    reps = stat_reps(600)
    err = np.empty(reps)
    for i in range(reps):
        labels = pool.sample_labels(rng)
        truth = np.mean(pool_metric_values(labels, a.truncate(5), metric=metric, ymax=2)
                        - pool_metric_values(labels, b.truncate(5), metric=metric, ymax=2))
        res = _quiet(run, dsg, pool_, ar.KnownLabels(pool.query_ids, pool.offsets, labels), FixedBudget(budget, rng))
        err[i] = res.difference - truth
    mse = float(np.mean(err**2))
    # Monte-Carlo error of the mean square ~ sqrt(2 / reps) = 6%; the with-replacement prediction is
    # asymptotic and ignores that repeated draws are free; without replacement the planning inclusion
    # probabilities approximate the sequential Poisson design's
    assert mse == pytest.approx(predicted, rel=0.25 if method == "active" else 0.2), (mse, predicted)


@pytest.mark.parametrize("metric,alternative", [("dcg@5", "doc_dyn"), ("err@5", "prefix")])
def test_auto_plans_the_alternative_once(metric, alternative, monkeypatch):
    # the prediction's planning (prefix: the planning simulations; doc_dyn: the inclusion probabilities)
    # is the run's: one planning pass per call, and the same numbers as the method itself
    import activerank.design.kinds.documents.designs as docs
    import activerank.design.kinds.prefix.sampling as prefix

    calls = []
    spy = {"prefix": (prefix, "prefix_planner"), "doc_dyn": (docs, "inclusion_probabilities")}[alternative]
    inner = getattr(*spy)
    monkeypatch.setattr(*spy, lambda *a, **k: calls.append(1) or inner(*a, **k))
    pool, a, b, rng = _problem(1, n_queries=60)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    res = _quiet(ar.compare, pool, a, b, pool.probs, lab, budget=15, metric=metric, method="auto", rng=2)
    assert res.method == alternative and len(calls) == 1
    ref = _quiet(ar.compare, pool, a, b, pool.probs, lab, budget=15, metric=metric, method=alternative, rng=2)
    assert res.difference == ref.difference and res.standard_error == ref.standard_error


def test_prefix_plan_does_not_depend_on_the_run_rng():
    # planned with PLANNING_SEED, once per design and set of documents held
    pool, a, b, rng = _problem(2, n_queries=40)
    d = ar.make_design(pool, (a, b), pool.probs, metric="err@5", method="prefix")
    kind = d.method_spec.kind
    none = np.zeros(pool.probs.shape[0], dtype=bool)
    p1 = kind.plan(d, 8.0, judged=none, rng=np.random.default_rng(1))
    p2 = kind.plan(d, 8.0, judged=None, rng=np.random.default_rng(2))
    assert p1.plan is p2.plan and p1.layout is p2.layout
    held = none.copy()
    held[d.target.rankings[0].items[:20]] = True
    p3 = kind.plan(d, 8.0, judged=held, rng=np.random.default_rng(1))
    assert p3.layout is not p1.layout and p3.layout.cost.sum() < p1.layout.cost.sum()


# --------------------------------------------------------------------------- the default's candidate rules


@pytest.fixture(scope="module")
def default_setup():
    data = ar.load_sample()
    probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    return data, probs, ar.KnownLabels.from_data(data)


@pytest.mark.parametrize("call, reason", [
    (dict(metric="dcg@10", costs="uniform"), "per-query costs"),
    (dict(metric="err@10", costs="uniform"), "per-query costs"),
    (dict(metric="err"), "square of the depth"),
    (dict(metric="dcg@10", judge="all", pair=True), "judge='all'"),
])
def test_the_default_stays_query_level_where_only_query_designs_fit_and_says_why(default_setup, call, reason):
    data, probs, lab = default_setup
    call = dict(call)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if call.pop("pair", False):
            res = ar.compare(data, data.X[:, 24], data.X[:, 0], probs, lab, budget=10, rng=0, **call)
        else:
            res = ar.estimate(data, data.X[:, 24], probs, lab, budget=10, rng=0, **call)
    auto = res.trace.attrs["auto"]
    assert res.method == auto["method"] == "active_wor" and reason in auto["reason"]


def test_the_default_weighs_the_document_design_and_reports_it(default_setup):
    data, probs, lab = default_setup
    res = ar.estimate(data, data.X[:, 24], probs, lab, budget=10, metric="dcg@10", rng=0)
    auto = res.trace.attrs["auto"]
    assert set(auto["predicted_variance"]) == {"active_wor", "doc_dyn"}
    assert res.method == min(auto["predicted_variance"], key=auto["predicted_variance"].get)


def test_the_sequential_default_runs_active_and_says_why(default_setup):
    data, probs, lab = default_setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ar.estimate_sequential(data, data.X[:, 24], probs, lab, target_half_width=0.5, budget=10,
                                     metric="err@5", rng=0)
    assert res.method == "active" == res.trace.attrs["auto"]["method"]
    assert "draw sequence" in res.trace.attrs["auto"]["reason"]


@pytest.mark.parametrize("metric", ["dcg@10", "err@10"])
def test_held_labels_enter_every_candidates_prediction(metric):
    """With ``judgments=``, doc_dyn's and prefix's predicted variances count the held documents as known and free,
    as active_wor's does (before, they ignored them and auto picked active_wor against the evidence)."""
    pool, a, b, rng = _problem(3, n_queries=60)
    labels = pool.sample_labels(rng)
    p_ = pool_iv(pool)
    alt = "doc_dyn" if metric == "dcg@10" else "prefix"
    free = ar.make_design(pool, (a,), pool.probs, metric=metric, method=alt)
    held_rows = np.zeros(pool.probs.shape[0], dtype=bool)
    for x in range(0, 60, 2):  # every other query's top documents held
        held_rows[free.documents(x)] = True
    held = ar.api.prepare_design(pool, p_, "mean", (a,), pool.probs, metric=metric, method=alt, judged=held_rows)
    assert held.judged is not None and free.judged is None
    assert predicted_variance(held, 8.0) < 0.8 * predicted_variance(free, 8.0)
    all_rows = np.zeros(pool.probs.shape[0], dtype=bool)
    for x in range(60):
        all_rows[free.documents(x)] = True
    if metric == "dcg@10":  # every document that can change the target held: nothing left to estimate
        census = ar.api.prepare_design(pool, p_, "mean", (a,), pool.probs, metric=metric, method=alt,
                                       judged=all_rows)
        assert predicted_variance(census, 8.0) == 0.0
