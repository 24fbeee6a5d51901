"""Tests for activerank.relevance.models: every adapter yields valid distributions on every grade."""

from functools import partial

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from activerank.io.letor import load_sample
from activerank.relevance.models import (
    MODEL_NAMES,
    LightGBMRelevanceModel,
    OrderedLogitRelevanceModel,
    RandomForestRegressionRelevanceModel,
    SklearnRelevanceModel,
    UniformRelevanceModel,
    apply_floor,
    fit_with_validation,
    grade_log_loss,
    make_relevance_model,
)

FAST = {
    "rf_regression": dict(n_estimators=20),
    "rf_classifier": dict(n_estimators=20),
    "lightgbm": dict(n_estimators=20),
}


@pytest.fixture(scope="module")
def train():
    return load_sample("train")


@pytest.fixture(scope="module")
def test():
    return load_sample("test")


def check_probs(p, n_docs, n_grades, floor=1e-3):
    assert p.shape == (n_docs, n_grades)
    assert p.dtype == np.float64
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert p.min() >= floor / n_grades * (1 - 1e-9)


def make(name, n_grades=3, **kw):
    kw = {"random_state": 0, **FAST.get(name, {}), **kw}
    return make_relevance_model(name, n_grades, **kw)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_model_fits_sample(name, train, test):
    m = make(name).fit(train.X, train.labels)
    p = m.predict_proba(test.X)
    check_probs(p, test.n_docs, 3)
    if name not in ("uniform", "ordered_logit_it"):  # a real model beats the uniform log-loss on held-out queries
        assert grade_log_loss(p, test.labels) < np.log(3)


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("kept", [[0, 2], [0, 1], [1]])
def test_missing_grades_still_get_columns(name, kept, train, test):
    """Training labels miss a grade (also a middle one, and a one-grade case) on a 4-grade scale."""
    mask = np.isin(train.labels, kept)
    y = train.labels[mask]
    m = make(name, n_grades=4).fit(train.X[mask], y)
    p = m.predict_proba(test.X)
    check_probs(p, test.n_docs, 4)
    missing = np.setdiff1d(np.arange(4), kept)
    if name != "uniform":
        # unseen grades only carry (about) the floor mass
        assert p[:, missing].max() < 1e-2
        if len(kept) == 1:
            np.testing.assert_allclose(p[:, kept[0]], 1 - 1e-3 + 1e-3 / 4)


def test_mord_adapter_fit_predict(train, test):
    for variant in ("AT", "IT"):
        m = OrderedLogitRelevanceModel(3, variant=variant, alpha=1.0).fit(train.X, train.labels)
        p = m.predict_proba(test.X)
        check_probs(p, test.n_docs, 3)
        # ordinal: the expected grade increases with the linear predictor
        eta = ((test.X - m.mean_) / m.scale_) @ m.estimator_.coef_
        assert np.all(np.diff((p @ np.arange(3))[np.argsort(eta)]) >= -1e-12)
    # labels 1..2 only (mord would shift them to start at 0): columns land on grades 1, 2
    mask = train.labels > 0
    m = OrderedLogitRelevanceModel(3).fit(train.X[mask], train.labels[mask])
    p = m.predict_proba(test.X)
    assert p[:, 0].max() < 1e-3


def test_lightgbm_adapter_fit_predict(train, test):
    m = LightGBMRelevanceModel(3, n_estimators=30, random_state=1).fit(train.X, train.labels)
    p = m.predict_proba(test.X)
    check_probs(p, test.n_docs, 3)
    p2 = LightGBMRelevanceModel(3, n_estimators=30, random_state=1).fit(train.X, train.labels).predict_proba(test.X)
    np.testing.assert_array_equal(p, p2)  # deterministic given the seed
    # binary training labels -> binary objective, still 3 columns
    yb = np.minimum(train.labels, 1)
    pb = LightGBMRelevanceModel(3, n_estimators=10).fit(train.X, yb).predict_proba(test.X)
    check_probs(pb, test.n_docs, 3)
    assert pb[:, 2].max() < 1e-3


def test_sklearn_adapter(train, test):
    m = SklearnRelevanceModel(RandomForestClassifier(n_estimators=10, random_state=0), 3)
    check_probs(m.fit(train.X, train.labels).predict_proba(test.X), test.n_docs, 3)
    with pytest.raises(TypeError, match="`estimator` must be a classifier with fit and predict_proba"):
        SklearnRelevanceModel(object(), 3)
    # the unfitted estimator is not modified (cloned)
    est = LogisticRegression()
    SklearnRelevanceModel(est, 3).fit(train.X, train.labels)
    assert not hasattr(est, "classes_")


@pytest.mark.parametrize("method", ["linear", "round", "leaf"])
def test_rf_regression_methods(method, train, test):
    m = RandomForestRegressionRelevanceModel(3, method=method, n_estimators=15).fit(train.X, train.labels)
    p = m.predict_proba(test.X)
    check_probs(p, test.n_docs, 3)
    if method == "linear":  # mean of the distribution = regression prediction (up to the floor)
        np.testing.assert_allclose(p @ np.arange(3), m.forest_.predict(test.X), atol=2e-3)
    assert m.tree_predictions(test.X).shape == (test.n_docs, 15)


def test_rf_regression_seeded(train, test):
    a = make("rf_regression", random_state=3).fit(train.X, train.labels).predict_proba(test.X)
    b = make("rf_regression", random_state=3).fit(train.X, train.labels).predict_proba(test.X)
    np.testing.assert_array_equal(a, b)


def test_uniform():
    m = UniformRelevanceModel(4)
    np.testing.assert_allclose(m.predict_proba(np.zeros((2, 5))), 0.25)
    assert m.fit(np.zeros((2, 5)), [0, 3]) is m


def test_floor():
    p = apply_floor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.0, 2.0, -1e-18]], 0.03)
    np.testing.assert_allclose(p, [[0.98, 0.01, 0.01], [1 / 3] * 3, [0.495, 0.495, 0.01]])
    for floor in (0.0, 0.5):
        m = RandomForestRegressionRelevanceModel(3, n_estimators=5, floor=floor)
        assert m.floor == floor


def test_input_validation(train):
    m = make("ordered_logit")
    with pytest.raises(ValueError, match=r"`y` must lie in 0\.\.2 \(n_grades=3\); row 1 is 3"):
        m.fit(np.zeros((3, 2)), [0, 3, 1])
    with pytest.raises(ValueError, match=r"`y` must hold integer grades; row 2 is 0\.5"):
        m.fit(np.zeros((3, 2)), [0, 1, 0.5])
    with pytest.raises(ValueError, match=r"`y` must have shape \(3,\) to match X"):
        m.fit(np.zeros((3, 2)), [0, 1])
    with pytest.raises(ValueError, match=r"`X` must be finite; row 0, column 1 is nan"):
        m.fit(np.array([[0.0, np.nan]]), [0])
    with pytest.raises(ValueError, match=r"`X` must have shape \(n_docs, n_features\)"):
        m.fit(np.zeros(3), [0, 1, 0])
    with pytest.raises(ValueError, match="is not fitted"):
        make("logistic").predict_proba(np.zeros((1, 2)))
    m.fit(train.X, train.labels)
    with pytest.raises(ValueError, match="`X` has 3 features but the model was fitted on 46"):
        m.predict_proba(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"`name` must be one of \["):
        make_relevance_model("svm", 3)
    with pytest.raises(ValueError, match="`n_grades` must be >= 2"):
        make_relevance_model("uniform", 1)
    with pytest.raises(ValueError, match=r"`floor` must be in \[0, 1\)"):
        UniformRelevanceModel(3, floor=1.0)
    with pytest.raises(ValueError, match="`variant` must be 'AT' or 'IT'"):
        OrderedLogitRelevanceModel(3, variant="SE")
    with pytest.raises(ValueError, match="`alpha` must be a non-negative number"):
        OrderedLogitRelevanceModel(3, alpha=-1)
    with pytest.raises(ValueError, match=r"`method` must be one of \('leaf', 'linear', 'round'\)"):
        RandomForestRegressionRelevanceModel(3, method="median")


def test_grade_log_loss():
    assert grade_log_loss([[0.5, 0.5], [0.9, 0.1]], [1, 0]) == pytest.approx(-(np.log(0.5) + np.log(0.9)) / 2)
    with pytest.raises(ValueError, match=r"`y` must lie in 0\.\.1"):
        grade_log_loss([[0.5, 0.5]], [2])


def test_fit_with_validation(train, test):
    res = fit_with_validation(partial(make_relevance_model, "ordered_logit", 3), {"alpha": [0.01, 1e4]}, train, test)
    assert len(res.scores) == 2
    best = min(res.scores, key=lambda s: s[1])
    assert res.params == best[0]
    assert grade_log_loss(res.model.predict_proba(test.X), test.labels) == pytest.approx(best[1])
    res2 = fit_with_validation(partial(make_relevance_model, "uniform", 3), {}, (train.X, train.labels), test, refit=True)
    assert res2.params == {} and res2.scores[0][1] == pytest.approx(np.log(3))
    with pytest.raises(ValueError, match=r"`grid\['alpha'\]` must be a non-empty sequence"):
        fit_with_validation(partial(make_relevance_model, "ordered_logit", 3), {"alpha": []}, train, test)
    with pytest.raises(TypeError, match="`train` must be a LetorData or an"):
        fit_with_validation(partial(make_relevance_model, "uniform", 3), {}, 5, test)
    with pytest.raises(ValueError, match="`vali` has no labels"):
        from dataclasses import replace

        fit_with_validation(partial(make_relevance_model, "uniform", 3), {}, train, replace(test, labels=None))
