"""activerank.plan_budget (activerank.design.planning): predicted precision per design, and the budget a
target half-width needs."""

import json
import math

import numpy as np
import pytest

import activerank as ar
from activerank.design.auto import predicted_variance
from activerank.design.planning import budget_for_half_width

from ..conftest import stat_reps


@pytest.fixture(scope="module")
def sample():
    data = ar.load_sample()
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(data.n_grades), size=data.n_docs)
    return data, probs


def _ranking(data):
    return ar.relevance.rank_by_scores(data.X[:, 0], data.offsets, doc_ids=data.doc_ids)


def test_plan_predicts_each_design_at_the_budget(sample):
    data, probs = sample
    plan = ar.plan_budget(data, data.X[:, 0], probs, budget=10, metric="dcg@10")
    assert plan.methods == ("active_wor", "active", "doc_dyn")
    for m, se, hw in zip(plan.methods, plan.predicted_se, plan.half_width):
        design = ar.make_design(data, [_ranking(data)], probs,
                                metric="dcg@10", method=m)
        assert se == pytest.approx(math.sqrt(predicted_variance(design, 10)), rel=1e-12)
        assert hw == pytest.approx(1.959963984540054 * se, rel=1e-12)
    assert all(math.isnan(n) for n in plan.budget_needed)       # no target given
    # auto chooses as estimate(method="auto") does
    res = ar.estimate(data, data.X[:, 0], probs, ar.KnownLabels.from_data(data), budget=10, metric="dcg@10",
                      method="auto", rng=0)
    assert plan.auto == res.method


@pytest.mark.parametrize("method", ["active_wor", "active", "prefix"])
def test_budget_needed_is_the_smallest_that_reaches_the_target(sample, method):
    data, probs = sample
    plan = ar.plan_budget(data, data.X[:, 0], probs, target_half_width=0.04, metric="err@10", methods=[method],
                          confidence_level=0.9)
    need = plan.budget_needed[0]
    design = ar.make_design(data, [_ranking(data)], probs, metric="err@10",
                            method=method)
    z = 1.6448536269514722
    assert z * math.sqrt(predicted_variance(design, need)) <= 0.04
    assert z * math.sqrt(predicted_variance(design, need / 1.002)) > 0.04
    if method != "active":  # without replacement a census has no variance: never more than the pool's cost
        assert need <= data.n_queries


def test_a_target_out_of_reach_is_infinite(sample):
    data, probs = sample
    design = ar.make_design(data, [_ranking(data)], probs, metric="err@10",
                            method="active")
    assert budget_for_half_width(design, 1e-9) == math.inf


def test_held_labels_make_the_plan_exact(sample):
    data, probs = sample
    everything = {q: {d: 0 for d in data.doc_ids[lo:hi]} for q, lo, hi in
                  zip(data.query_ids, data.offsets[:-1], data.offsets[1:])}
    plan = ar.plan_budget(data, data.X[:, 0], probs, budget=5, metric="dcg@10", methods=["active_wor"],
                          judgments=everything)
    assert plan.predicted_se == (0.0,)


def test_a_difference_and_designs_that_do_not_apply(sample):
    data, probs = sample
    plan = ar.plan_budget(data, data.X[:, 0], probs, scores_b=data.X[:, 1], budget=8, target_half_width=0.05,
                          metric="err@10", methods=["active_wor", "doc_dyn"])
    assert plan.target == "difference" and plan.notes[0] == ""
    assert "adds over documents" in plan.notes[1] and math.isnan(plan.predicted_se[1])
    d = plan.to_dict()
    assert json.loads(json.dumps(d)) == d and d["predicted_se"][1] is None
    table = plan.summary()
    assert list(table["method"]) == ["active_wor", "doc_dyn"] and table.attrs["auto"] == plan.auto
    assert repr(plan).startswith("BudgetPlan(err(ymax=scale)@10 difference at budget 8") and len(repr(plan)) < 120
    assert "<table" in plan._repr_html_()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(), ValueError, "needs `budget`, `target_half_width` or both"),
    (dict(budget=5, methods=["nope"]), ValueError, "methods"),
    (dict(target_half_width=-1.0), ValueError, "target_half_width"),
    (dict(target_half_width="x"), TypeError, "target_half_width"),
    (dict(budget=0), ValueError, "budget"),
])
def test_bad_input(sample, kwargs, error, message):
    data, probs = sample
    with pytest.raises(error, match=message):
        ar.plan_budget(data, data.X[:, 0], probs, metric="err@10", **kwargs)


# --------------------------------------------------------------------------- judges: predicted savings


@pytest.mark.parametrize("method", ["active_wor", "active", "doc_dyn"])
def test_a_prediction_under_its_own_model_is_the_prediction(sample, method):
    data, probs = sample
    design = ar.make_design(data, [_ranking(data)], probs, metric="dcg@10", method=method)
    kind = design.method_spec.kind
    assert kind.predicted_variance(design, 8.0, under=design) == pytest.approx(
        kind.predicted_variance(design, 8.0), rel=1e-12)
    other = ar.make_design(data, [_ranking(data)], np.full_like(probs, 1.0 / probs.shape[1]), metric="dcg@10",
                           method=method)
    assert kind.predicted_variance(design, 8.0, under=other) != pytest.approx(kind.predicted_variance(design, 8.0))


def _judged_world(seed=3, n_queries=100):
    from ..test_api_judges import _world

    pool, y, judge, prior, scores, lab = _world(seed=seed, n_queries=n_queries)
    held = {int(q): {r: int(y[r]) for r in range(q * 30, q * 30 + 30)} for q in range(4)}
    return pool, y, judge, prior, scores, lab, held


def test_judges_plan_on_the_calibrated_model_and_predict_the_savings():
    pool, y, judge, prior, scores, lab, held = _judged_world()
    kw = dict(budget=10, metric="dcg@10", judgments=held, methods=["active_wor", "doc_dyn"], rng=0)
    plain = ar.plan_budget(pool, scores, prior, **kw)
    assert plain.judges == () and all(math.isnan(s) for s in plain.savings)
    assert "savings" not in plain.summary().columns
    plan = ar.plan_budget(pool, scores, prior, judges=judge, **kw)
    assert plan.judges == ("sim",) and "with judges sim" in repr(plan)
    for se, raw, need, saved in zip(plan.predicted_se, plan.se_without_judges,
                                    plan.budget_equivalent_without_judges, plan.savings):
        assert se < raw and need > 10 and 0 < saved < 1
        assert saved == pytest.approx(1 - 10 / need)
    table = plan.summary()
    assert list(table.columns[-4:]) == ["se_without_judges", "budget_equivalent_without_judges", "savings", "note"]
    assert json.loads(json.dumps(plan.to_dict()))["savings"] == pytest.approx(list(plan.savings))
    with pytest.raises(ValueError, match=r"`judges` in a plan are calibrated on the labels held .* fewer than 30"):
        ar.plan_budget(pool, scores, prior, budget=10, metric="dcg@10", judges=judge)
    zeros = {q: {r: 0 for r in docs} for q, docs in held.items()}
    with pytest.raises(ValueError, match="`judges` could not be calibrated: the 120 human labels .* fewer than 2"):
        ar.plan_budget(pool, scores, prior, budget=10, metric="dcg@10", judgments=zeros, judges=judge)
    # prefix predicts under its own model only: no comparison, no failure
    err = ar.plan_budget(pool, scores, prior, budget=10, metric="err@10", judgments=held, judges=judge,
                         methods=["active_wor", "prefix"], rng=0)
    assert math.isfinite(err.savings[0]) and math.isnan(err.savings[1]) and math.isfinite(err.predicted_se[1])


@pytest.mark.statistical
def test_predicted_savings_match_the_measured_ones():
    """The variance ratio the plan predicts (both runs under the calibrated model) against the MSE ratio of
    the two runs on the true labels: measured 0.180 vs 0.167 (active_wor) and 0.297 vs 0.316 (doc_dyn), 200 runs."""
    import warnings

    from activerank.engine.judged import calibrate_held
    from activerank.pool import pool_iv

    pool, y, judge, prior, scores, lab, held = _judged_world()
    plan = ar.plan_budget(pool, scores, prior, budget=10, metric="dcg@10", judgments=held, judges=judge,
                          methods=["active_wor", "doc_dyn"], rng=0)
    labels = np.full(y.size, -1)
    for docs in held.values():
        for r, g in docs.items():
            labels[r] = g
    seed = int(np.random.default_rng(0).integers(0, 2**31 - 1))
    calibrated, _ = calibrate_held(pool_iv(pool), prior, [judge], labels, seed=seed)
    rankings = ar.relevance.rank_by_scores(scores, pool.offsets)
    truth = ar.pool_metric_values(y, rankings, metric="dcg@10", ymax=2, offsets=pool).mean()
    reps = stat_reps(200)
    for i, method in enumerate(plan.methods):
        mse = []
        for probs in (prior, calibrated):
            est = []
            for s in range(reps):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
                    est.append(ar.estimate(pool, scores, probs, lab, budget=10, metric="dcg@10", method=method,
                                           rng=s, judgments=held).estimate)
            mse.append(np.mean((np.array(est) - truth) ** 2))
        predicted = (plan.predicted_se[i] / plan.se_without_judges[i]) ** 2
        print(f"\n{method}: predicted variance ratio {predicted:.3f}, measured MSE ratio {mse[1] / mse[0]:.3f}")
        assert 0.6 < predicted / (mse[1] / mse[0]) < 1.6
