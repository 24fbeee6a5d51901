"""Judge calibration: conditional grade frequencies recovered, missing outputs fall back, quality report numbers."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

import activerank as ar
from activerank.judges import JudgeCalibrator, cross_fitted_proba, judge_report, read_judge, weighted_kappa


def _simulated(n_queries=40, per_query=50, seed=0, keep=0.6):
    """Human grades 0..2; a judge on a 0..3 scale that keeps the grade w.p. ``keep`` else moves it by one."""
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    qids = np.repeat(np.arange(n_queries), per_query)
    pool = ar.Pool.from_qids(qids)
    y = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    step = np.where(rng.random(n) < keep, 0, rng.choice([-1, 1], size=n))
    g = np.clip(y + step, 0, 3)
    judge = read_judge({int(q): {int(r): int(g[r]) for r in range(q * per_query, (q + 1) * per_query)}
                        for q in range(n_queries)}, pool, levels=4, name="sim")
    return pool, qids, y, g, judge


def test_recovers_the_conditional_grade_frequencies():
    pool, qids, y, g, judge = _simulated()
    cal = JudgeCalibrator(3, C=100.0, floor=0.0).fit([judge], y)
    p = cal.predict_proba([judge])
    for level in np.unique(g):
        freq = np.bincount(y[g == level], minlength=3) / (g == level).sum()
        np.testing.assert_allclose(p[g == level][0], freq, atol=0.02)


def test_missing_outputs_fall_back_on_the_model_and_floor_keeps_every_grade_possible():
    pool, qids, y, g, judge = _simulated()
    values = judge.values.copy()
    values[::3] = np.nan  # a third of the pairs ungraded
    from activerank.judges import JudgeOutputs

    partial = JudgeOutputs("partial", "grades", values, 4)
    model = np.full((y.size, 3), 0.1)
    model[np.arange(y.size), y] = 0.8  # an informative feature model
    cal = JudgeCalibrator(3, random_state=0).fit([partial], y, model_probs=model, groups=qids)
    p = cal.predict_proba([partial], model_probs=model)
    miss = np.isnan(values)
    assert np.mean(p[miss].argmax(1) == y[miss]) > 0.95  # the model decides where the judge is silent
    assert p.min() > 0 and np.allclose(p.sum(1), 1)
    with pytest.raises(ValueError, match="`model_probs` must be given to predict_proba exactly when"):
        cal.predict_proba([partial])
    with pytest.raises(ValueError, match="the judges the calibrator was fitted on"):
        cal.predict_proba([partial, partial], model_probs=model)


def test_more_judges_need_regularization_and_auto_provides_it():
    pool, qids, y, g, judge = _simulated(n_queries=10, per_query=30, seed=1)
    rng = np.random.default_rng(5)
    noisy = [read_judge({int(q): {int(r): int(rng.integers(0, 4)) for r in range(q * 30, q * 30 + 30)}
                         for q in range(10)}, pool, levels=4, name=f"noise{i}") for i in range(12)]
    judges = [judge] + noisy

    def loss(C):
        p = cross_fitted_proba(JudgeCalibrator(3, C=C), judges, y, groups=qids)
        return -np.mean(np.log(p[np.arange(y.size), y]))

    assert loss("auto") < loss(100.0) - 0.05  # 300 labels, 13 judges: unregularized overfits


def test_bad_input():
    pool, qids, y, g, judge = _simulated(n_queries=4, per_query=5)
    with pytest.raises(ValueError, match="at least 2 different values"):
        JudgeCalibrator(3).fit([judge], np.where(np.arange(y.size) < 3, 0, -1))
    with pytest.raises(ValueError, match=r"`labels` row 0: grade 5 is outside 0\.\.2"):
        JudgeCalibrator(3).fit([judge], np.r_[5, y[1:]])
    with pytest.raises(ValueError, match="not fitted yet"):
        JudgeCalibrator(3).predict_proba([judge])
    with pytest.raises(TypeError, match="sequence of JudgeOutputs"):
        JudgeCalibrator(3).fit([judge.values], y)
    with pytest.raises(ValueError, match="`C` must be a positive number or 'auto'"):
        JudgeCalibrator(3, C=0).fit([judge], y)


def test_weighted_kappa_matches_sklearn():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    b[:300] = a[:300]
    for w, sk in (("quadratic", "quadratic"), ("none", None)):
        assert weighted_kappa(a, b, n_levels=4, weights=w) == pytest.approx(cohen_kappa_score(a, b, weights=sk))


def test_report():
    pool, qids, y, g, judge = _simulated()
    r = judge_report(judge, y, n_grades=3, groups=qids, random_state=0)
    assert r.n_pairs == y.size and r.confusion.shape == (4, 3) and r.confusion.sum() == y.size
    assert r.kappa_quadratic == pytest.approx(cohen_kappa_score(g, y, weights="quadratic"))
    assert r.log_loss < r.log_loss_prior  # an informative judge beats the grade frequencies
    assert np.isnan(r.log_loss_model)
    assert "kappa quadratic" in r.summary() and r.to_dict()["n_pairs"] == y.size
    pred, obs, n = np.array(r.calibration).T
    assert n.sum() == y.size and np.average(np.abs(pred - obs), weights=n) < 0.1
    assert repr(r).startswith("JudgeReport(name='sim', n_pairs=2000")


def test_calibrated_judge_feeds_the_default_design():
    pool, qids, y, g, judge = _simulated(n_queries=30, per_query=20)
    train = qids < 10  # human labels held on a third of the queries
    labels = np.where(train, y, -1)
    probs = JudgeCalibrator(3, random_state=0).fit([judge], labels, groups=qids).predict_proba([judge])
    scores = g + np.random.default_rng(0).random(y.size)
    res = ar.estimate(pool, scores, probs, ar.KnownLabels(pool.query_ids, pool.offsets, y), budget=8,
                      metric="dcg@10", rng=0)
    assert res.trace.attrs["auto"]["method"] in ("active_wor", "doc_dyn") and np.isfinite(res.estimate)


def _feature_model(y, seed):
    """A calibrated weak feature model: the posterior of the grade given a noisy score ``y + N(0, 1)``."""
    z = y + np.random.default_rng(seed).normal(size=y.size)
    p = np.array([0.6, 0.3, 0.1]) * np.exp(-0.5 * (z[:, None] - np.arange(3)) ** 2)
    return p / p.sum(axis=1, keepdims=True)


def test_a_useless_judge_leaves_the_feature_model_unchanged_and_a_good_one_is_used():
    pool, qids, y, g, good = _simulated(keep=0.9, seed=3)
    rng = np.random.default_rng(7)
    useless = read_judge({int(q): {int(r): int(rng.integers(0, 4)) for r in range(q * 50, q * 50 + 50)}
                          for q in range(40)}, pool, levels=4, name="coin")
    model = _feature_model(y, 3)
    cal = JudgeCalibrator(3, random_state=0).fit([useless], y, model_probs=model, groups=qids)
    assert not cal.uses_judges_ and cal.cv_gain_error_["model"] <= cal.cv_gain_error_["judges"]
    out = cal.predict_proba([useless], model_probs=model)
    assert np.array_equal(out, model) and out is not model  # unchanged, and a copy
    cal = JudgeCalibrator(3, random_state=0).fit([good], y, model_probs=model, groups=qids)
    assert cal.uses_judges_ and cal.cv_gain_error_["judges"] < 0.8 * cal.cv_gain_error_["model"]
    # without a feature model there is nothing to fall back on
    assert JudgeCalibrator(3, random_state=0).fit([useless], y, groups=qids).cv_gain_error_ is None


def test_labels_on_fewer_than_3_queries_keep_the_feature_model():
    """Folds inside one or two queries cannot tell a judge from those queries' grade mix: even a good judge is
    left out then (and without `groups`), and used once the labels span 3 queries."""
    pool, qids, y, g, good = _simulated(keep=0.9, seed=3)
    model = _feature_model(y, 3)
    for n_queries, groups, used in ((2, qids, False), (3, None, False), (3, qids, True)):
        held = np.where(qids < n_queries, y, -1)
        cal = JudgeCalibrator(3, random_state=0).fit([good], held, model_probs=model, groups=groups)
        assert cal.uses_judges_ is used and cal.validated_by_query_ is (groups is not None and n_queries >= 3)
    # without a feature model the judges are all there is
    assert JudgeCalibrator(3, random_state=0).fit([good], np.where(qids < 2, y, -1), groups=qids).uses_judges_


def test_the_fallback_check_weighs_the_gains_it_is_given():
    pool, qids, y, g, judge = _simulated(seed=4)
    model = _feature_model(y, 4)
    with pytest.raises(ValueError, match="`gains` must be 3 finite numbers"):
        JudgeCalibrator(3, gains=[0, 1]).fit([judge], y, model_probs=model)
    a = JudgeCalibrator(3, random_state=0).fit([judge], y, model_probs=model, groups=qids)
    b = JudgeCalibrator(3, random_state=0, gains=[0, 1, 3]).fit([judge], y, model_probs=model, groups=qids)
    assert a.C_ == b.C_ and a.cv_gain_error_["model"] == pytest.approx(b.cv_gain_error_["model"])
    c = JudgeCalibrator(3, random_state=0, gains=[0, 2, 6]).fit([judge], y, model_probs=model, groups=qids)
    assert c.cv_gain_error_["model"] == pytest.approx(4 * a.cv_gain_error_["model"])
