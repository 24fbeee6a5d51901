"""Estimates and intervals stay inside the metric's range, for every design and target (issue 31 item 3)."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import activerank as ar
from activerank.inference.ranges import clip, contrast_bounds, relative_bounds, trim
from activerank.metrics import custom_metric, parse_metric
from tests.conftest import stat_reps

# (method, metric): one per design kind -- query draws, without replacement, documents, two stage, prefix
DESIGNS = [("active", "ndcg@10"), ("model_assisted", "err@10"), ("active_wor", "ndcg@10"),
           ("doc_dyn", "p@10"), ("two_stage", "dcg@10"), ("prefix", "err@10")]
TARGETS = ["estimate", "compare", "compare_many", "rank_systems"]


@pytest.fixture(scope="module")
def lightgbm_sample():
    """The issue's setting: the shipped sample with a LightGBM relevance model."""
    train, pool = ar.load_sample("train"), ar.load_sample("test")
    model = ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=0, n_jobs=1)
    probs = model.fit(train.X, train.labels).predict_proba(pool.X)
    return pool, probs, (ar.relevance.expected_gain_scores(probs), pool.X[:, 24])


@pytest.fixture(scope="module")
def sample():
    train, pool = ar.load_sample("train"), ar.load_sample("test")
    model = ar.relevance.make_relevance_model("logistic", pool.n_grades)
    probs = model.fit(train.X, train.labels).predict_proba(pool.X)
    scores = (ar.relevance.expected_gain_scores(probs), pool.X[:, 24], pool.X[:, 10])
    return pool, probs, scores


def _zero(pool):
    return ar.KnownLabels.from_data(dataclasses.replace(pool, labels=np.zeros_like(pool.labels)))


def _run(target, pool, probs, scores, labeler, **kw):
    a, b, c = scores
    if target == "estimate":
        return ar.estimate(pool, a, probs, labeler, **kw)
    if target == "compare":
        return ar.compare(pool, a, b, probs, labeler, **kw)
    if target == "compare_many":
        return ar.compare_many(pool, [a, c], b, probs, labeler, **kw)
    return ar.rank_systems(pool, [a, b, c], probs, labeler, **kw)


def _check_in_range(res):
    """Every point estimate and interval end of ``res`` inside its range; returns the points checked."""
    lo, hi = res.metric_range
    own, diff = (lo, hi), contrast_bounds((lo, hi))
    if isinstance(res, ar.MultiComparisonResult):
        ci = res.confidence_intervals()
        parts = [(res.differences, diff), (res.estimates, own), ([res.baseline_estimate], own),
                 (ci.low, diff), (ci.high, diff)]
    elif isinstance(res, ar.SystemRankingResult):
        ci, pw = res.confidence_intervals(), res.pairwise_intervals()
        rel = relative_bounds((lo, hi), len(res.names))
        parts = [(res.estimates, own), (res.relative, rel), (ci.low, rel), (ci.high, rel), (pw.low, diff),
                 (pw.high, diff)]
    elif isinstance(res, ar.ComparisonResult):
        parts = [([res.difference], diff), ([res.estimate_a, res.estimate_b], own),
                 (list(res.confidence_interval()), diff)]
    else:
        parts = [([res.estimate], own), (list(res.confidence_interval()), own)]
    for values, (low, high) in parts:
        v = np.asarray(values, dtype=np.float64)
        v = v[~np.isnan(v)]
        assert ((low <= v) & (v <= high)).all(), (type(res).__name__, v, (low, high))


# --------------------------------------------------------------------------- the registry's ranges


def test_every_registered_metric_declares_its_range():
    for spec, expected in [("ndcg@10", (0, 1)), ("err@10", (0, 1)), ("ERR@10", (0, 1)), ("p@10", (0, 1)),
                           ("rr", (0, 1)), ("ap", (0, 1)), ("r@10", (0, 1)), ("success@5", (0, 1)),
                           ("rbp", (0, 1)), ("dcg@10", (0, math.inf)), ("rbp(rel=graded)", (0, 2))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            assert parse_metric(spec).bounds(3) == expected, spec


def test_custom_metrics_are_unbounded_unless_declared():
    f = lambda y, valid: (y[..., :3] >= 2).any(axis=-1) * 1.0  # noqa: E731
    assert parse_metric(custom_metric("hit3", f), k=3).bounds(3) == (-math.inf, math.inf)
    assert parse_metric(custom_metric("hit3", f, bounds=(0, 1)), k=3).bounds(3) == (0.0, 1.0)
    with pytest.raises(ValueError, match="low <= high"):
        custom_metric("hit3", f, bounds=(1, 0))
    with pytest.raises(TypeError, match="pair of numbers"):
        custom_metric("hit3", f, bounds="0..1")


def test_clip_and_trim_keep_every_in_range_value():
    assert clip(4.6, (0, 1)) == 1.0 and clip(-0.7, (0, 1)) == 0.0 and math.isnan(clip(np.nan, (0, 1)))
    assert trim(-0.137, 0.856, (0.0, 1.0)) == (0.0, 0.856)
    low, high = trim(np.array([-0.5, 1.2, 0.2]), np.array([0.5, 1.5, 0.3]), (0.0, 1.0))
    assert low.tolist() == [0.0, 1.0, 0.2] and high.tolist() == [0.5, 1.0, 0.3]  # a miss becomes its bound
    assert contrast_bounds((0, 1)) == (-1, 1) and contrast_bounds((0, math.inf)) == (-math.inf, math.inf)
    assert relative_bounds((0, 1), 4) == (-0.75, 0.75) and relative_bounds((0, math.inf), 3)[1] == math.inf


# --------------------------------------------------------------------------- every design and target


@pytest.mark.parametrize("method,metric", DESIGNS)
@pytest.mark.parametrize("target", TARGETS)
def test_estimates_and_intervals_stay_in_range(sample, method, metric, target):
    """All labels 0 (the truth is the lower bound: unbiased estimators land below it about half the time) and
    the real labels, at small budgets: every estimate and interval end in range."""
    pool, probs, scores = sample
    real = ar.KnownLabels.from_data(pool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for labeler in (_zero(pool), real):
            for seed in range(4):
                try:
                    res = _run(target, pool, probs, scores, labeler, budget=5, metric=metric, method=method,
                               rng=seed)
                except ValueError as err:  # fewer than 2 queries bought: refused, clearly
                    assert "fewer than 2" in str(err)
                    continue
                _check_in_range(res)


def test_all_zero_labels_give_zero_not_a_negative_err(sample):
    """The issue's case: every label 0, active_wor (the default then), budget 3 -- ERR@10 was -0.675 in 20% of seeds."""
    pool, probs, scores = sample
    lab = _zero(pool)
    moved = 0
    for seed in range(20):
        with pytest.warns(ar.FewLabelsWarning, match=r"rests on \d judged quer"):
            res = ar.estimate(pool, scores[0], probs, lab, budget=3, metric="err@10", method="active_wor", rng=seed)
        low, high = res.confidence_interval()
        assert res.estimate >= 0.0 and res.few_labels and 0.0 <= low <= res.estimate <= high <= 1.0
        if res.range_adjusted:  # below 0: moved to 0, the truth
            moved += 1
            raw = res.unadjusted["estimate"]
            assert raw < 0 and res.estimate == 0.0 and low == 0.0
            low, high = res.confidence_interval(in_range=False)  # the raw interval, around the raw point
            assert low < raw < high and (low + high) / 2 == pytest.approx(raw)
    assert moved > 0


def test_a_moved_estimate_keeps_coverage_of_the_raw_interval(lightgbm_sample):
    """Intersected intervals contain the raw interval's in-range part (so they cover whatever it covered)."""
    pool, probs, scores = lightgbm_sample
    lab = ar.KnownLabels.from_data(pool)
    seen = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(60):
            res = ar.compare(pool, scores[0], scores[1], probs, lab, budget=5, metric="nDCG@10", rng=seed)
            assert 0 <= res.estimate_a <= 1 and 0 <= res.estimate_b <= 1
            for level in (0.8, 0.95):
                low, high = res.confidence_interval(level)
                raw_low, raw_high = res.confidence_interval(level, in_range=False)
                assert low <= max(raw_low, -1.0) + 1e-12 and high >= min(raw_high, 1.0) - 1e-12
                assert -1 <= low <= high <= 1
            seen += res.range_adjusted
    assert seen > 0  # estimate_a left [0, 1] on some seed (4.6 before this change)


@pytest.mark.parametrize("kind", ["sequential", "adaptive"])
def test_the_draws_path_stays_in_range(sample, kind):
    """Target-precision and adaptive runs (results assembled from draws) too."""
    pool, probs, scores = sample
    lab = _zero(pool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(3):
            if kind == "sequential":
                res = ar.estimate_sequential(pool, (scores[0], scores[1]), probs, lab, target_half_width=0.05,
                                             budget=8, metric="err@10", rng=seed)
            else:
                model = ar.relevance.make_relevance_model("logistic", pool.n_grades)
                res = ar.estimate_adaptive(pool, scores[0], model, pool.X, lab, budget=8, n_batches=2,
                                           metric="err@10", rng=seed)
            _check_in_range(res)


def test_results_report_the_range_handling(sample):
    pool, probs, scores = sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ar.estimate(pool, scores[0], probs, _zero(pool), budget=3, metric="err@10", method="active_wor", rng=1)
    run = res.summary().attrs["run"]
    assert run["few_labels"] is True and "range_adjusted" in run
    d = res.to_dict()
    assert d["metric_range"] == [0.0, 1.0] and d["few_labels"] is True
    assert d["range_adjusted"] == res.range_adjusted and isinstance(d["unadjusted"], dict)
    assert "few labels" in res._repr_html_()


# --------------------------------------------------------------------------- the warning rules


def test_the_ess_warning_never_fires_on_equal_weights(sample):
    """Passive sampling weights every draw equally: the effective sample size is the number of draws."""
    pool, probs, scores = sample
    lab = ar.KnownLabels.from_data(pool)
    from activerank.inference.snis import kish_ess

    assert kish_ess(np.full(10, 0.1)) == 10.0 and kish_ess(np.full(7, 1 / 3)) == 7.0
    for seed in range(5):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = ar.estimate(pool, scores[0], probs, lab, budget=10, method="passive", rng=seed)
        assert res.effective_sample_size == res.n_draws
        assert not [w for w in caught if w.category is ar.LowEffectiveSampleSizeWarning]


@pytest.mark.parametrize("ci,name", [("normal", "the normal interval"), ("auto", "Student-t interval with")])
def test_warnings_name_the_interval_actually_used(sample, ci, name):
    pool, probs, scores = sample
    lab = ar.KnownLabels.from_data(pool)
    found = set()
    for seed in range(10):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = ar.estimate(pool, scores[0], probs, lab, budget=4, method="active", rng=seed, ci=ci)
        for w in caught:
            if w.category in (ar.LowEffectiveSampleSizeWarning, ar.FewLabelsWarning):
                text = str(w.message)
                assert name in text, text
                if ci != "normal":
                    assert f"with {res.dof:g} degree" in text and res.ci != "normal"
                found.add(w.category)
        # fires exactly when true
        ess_warned = any(w.category is ar.LowEffectiveSampleSizeWarning for w in caught)
        assert ess_warned == (res.effective_sample_size < 10 and res.effective_sample_size < res.n_draws)
        assert any(w.category is ar.FewLabelsWarning for w in caught) == res.few_labels == (res.n_queries < 5)
    assert found == {ar.LowEffectiveSampleSizeWarning, ar.FewLabelsWarning}


def test_few_labels_is_one_filterable_family(sample):
    """FewDistinctQueriesWarning is a FewLabelsWarning: one filter silences both; enough queries: no flag."""
    from activerank.inference.small_sample import FewDistinctQueriesWarning

    assert issubclass(FewDistinctQueriesWarning, ar.FewLabelsWarning)
    pool, probs, scores = sample
    lab = ar.KnownLabels.from_data(pool)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", ar.FewLabelsWarning)
        warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
        res = ar.estimate(pool, scores[0], probs, lab, budget=3, method="active", ci="bootstrap", rng=0)
    assert res.few_labels and not [w for w in caught if w.category is not FutureWarning]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ar.estimate(pool, scores[0], probs, lab, budget=12, rng=0)
    assert not res.few_labels and res.n_queries >= 5
    assert not [w for w in caught if issubclass(w.category, ar.FewLabelsWarning)]
    exact = ar.estimate(pool, scores[0], probs, lab, budget=1000, rng=0)
    assert exact.exact and not exact.few_labels


# --------------------------------------------------------------------------- coverage with the handling on


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active_wor", "active"])
def test_coverage_with_the_range_handling(sample, method):
    """Seeded: the in-range intervals cover at least as often as the raw ones, near 95%, and the moved
    estimates are no farther from the truth (nDCG@10 difference on the sample, budget 12)."""
    pool, probs, scores = sample
    lab = ar.KnownLabels.from_data(pool)
    metric = "ndcg(gain=linear)@10"
    values = [ar.pool_metric_values(pool.labels, ar.relevance.rank_by_scores(s, pool.offsets), metric=metric,
                                    ymax=pool.n_grades - 1, offsets=pool).mean() for s in scores[:2]]
    truth = values[0] - values[1]
    reps = stat_reps(300)
    cover, cover_raw, err, err_raw = [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(reps):
            res = ar.compare(pool, scores[0], scores[1], probs, lab, budget=12, metric=metric, method=method,
                             rng=seed)
            low, high = res.confidence_interval()
            raw_low, raw_high = res.confidence_interval(in_range=False)
            cover.append(low <= truth <= high)
            cover_raw.append(raw_low <= truth <= raw_high)
            err.append(abs(res.difference - truth))
            err_raw.append(abs(res.unadjusted.get("difference", res.difference) - truth))
    assert np.mean(cover) >= np.mean(cover_raw)
    # active_wor under-covers here with or without the range handling (0.877 at 300 runs: 12 of 30 queries,
    # a tuned coefficient; benchmarks/results/metric_bias.md), so its floor is lower
    assert (0.9 if method == "active" else 0.85) <= np.mean(cover) <= 0.99
    assert np.all(np.array(err) <= np.array(err_raw) + 1e-12)
