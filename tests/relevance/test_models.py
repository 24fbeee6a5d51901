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
    # scikit-learn convention: the constructor stores, fit validates
    with pytest.raises(TypeError, match="`estimator` must be a classifier with fit and predict_proba"):
        SklearnRelevanceModel(object(), 3).fit(train.X, train.labels)
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
    # constructors only store (scikit-learn convention); fit and the factory validate
    X, y = train.X[:20], train.labels[:20]
    with pytest.raises(ValueError, match=r"`floor` must be in \[0, 1\)"):
        UniformRelevanceModel(3, floor=1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"`floor` must be in \[0, 1\)"):
        make_relevance_model("uniform", 3, floor=1.0)
    with pytest.raises(ValueError, match="`variant` must be 'AT' or 'IT'"):
        OrderedLogitRelevanceModel(3, variant="SE").fit(X, y)
    with pytest.raises(ValueError, match="`alpha` must be a non-negative number"):
        OrderedLogitRelevanceModel(3, alpha=-1).fit(X, y)
    with pytest.raises(ValueError, match="`alpha` must be a non-negative number"):
        make_relevance_model("ordered_logit", 3, alpha=-1)
    with pytest.raises(ValueError, match=r"`method` must be one of \('leaf', 'linear', 'round'\)"):
        RandomForestRegressionRelevanceModel(3, method="median").fit(X, y)
    with pytest.raises(ValueError, match="`n_grades` must be >= 2"):
        LightGBMRelevanceModel(1).fit(X, y)
    with pytest.raises(TypeError, match="`n_grades` must be an integer >= 2"):
        OrderedLogitRelevanceModel("3").fit(X, y)


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


# --------------------------------------------------------------------------- scikit-learn estimator protocol


def _all_models(n_grades=3):
    yield from (make(name, n_grades) for name in MODEL_NAMES)
    yield SklearnRelevanceModel(LogisticRegression(C=0.5), n_grades, floor=0.01)
    yield LightGBMRelevanceModel(n_grades, n_estimators=5, min_split_gain=0.0)  # extra LGBM kwarg


@pytest.mark.parametrize("model", list(_all_models()), ids=lambda m: type(m).__name__)
def test_sklearn_clone_and_params(model, train, test):
    from sklearn.base import clone, is_classifier

    params = model.get_params(deep=False)
    # constructor arguments are stored unchanged under their own names
    for key, value in params.items():
        assert getattr(model, key) is value
    c = clone(model)  # raises if a constructor modified or dropped a parameter
    assert type(c) is type(model) and c is not model
    assert c.get_params(deep=False).keys() == params.keys()
    assert is_classifier(model)
    fitted = model.fit(train.X, train.labels)
    assert fitted is model and not hasattr(clone(model), "fitted_")  # clones are unfitted
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    np.testing.assert_array_equal(model.predict(test.X), model.predict_proba(test.X).argmax(axis=1))
    assert model.score(test.X, test.labels) == pytest.approx(-grade_log_loss(model.predict_proba(test.X),
                                                                              test.labels))
    if not isinstance(model, UniformRelevanceModel):  # uniform ignores the features and every seed
        np.testing.assert_array_equal(clone(model).fit(train.X, train.labels).predict_proba(test.X),
                                      model.predict_proba(test.X))


def test_set_params_and_repr():
    m = OrderedLogitRelevanceModel(3)
    assert m.set_params(alpha=10.0, floor=0.01) is m and (m.alpha, m.floor) == (10.0, 0.01)
    assert repr(m) == ("OrderedLogitRelevanceModel(n_grades=3, variant='AT', alpha=10.0, max_iter=1000, "
                       "standardize=True, floor=0.01)")
    with pytest.raises(ValueError, match="Invalid parameter 'alpah' for OrderedLogitRelevanceModel"):
        m.set_params(alpah=1.0)
    s = SklearnRelevanceModel(LogisticRegression(), 3)
    deep = s.get_params()
    assert deep["estimator__C"] == 1.0 and "estimator" in deep and "n_grades" in deep
    s.set_params(estimator__C=0.25, n_grades=4)
    assert s.estimator.C == 0.25 and s.n_grades == 4
    lg = LightGBMRelevanceModel(3, min_split_gain=0.1)
    assert lg.get_params()["min_split_gain"] == 0.1
    lg.set_params(max_bin=63, num_leaves=7)  # LightGBM's own kwargs pass through, as in LGBMClassifier
    assert lg.get_params()["max_bin"] == 63 and lg.num_leaves == 7
    assert lg._make_estimator().get_params()["max_bin"] == 63


def test_uniform_predicts_unfitted():
    np.testing.assert_allclose(UniformRelevanceModel(2).predict_proba(np.zeros((3, 7))), 0.5)


def test_grid_search_cv(train):
    """GridSearchCV picks the parameters of the best mean held-out log-likelihood, queries kept whole."""
    from sklearn.model_selection import GridSearchCV, GroupKFold, ParameterGrid

    grid = {"num_leaves": [3, 15], "n_estimators": [5, 40]}
    cv = GroupKFold(n_splits=3)
    gs = GridSearchCV(LightGBMRelevanceModel(3), grid, cv=cv)
    gs.fit(train.X, train.labels, groups=train.qids)
    # the same criterion by hand: mean over folds of the held-out mean log-likelihood
    by_hand = []
    for params in ParameterGrid(grid):
        fold_scores = []
        for tr, te in cv.split(train.X, train.labels, groups=train.qids):
            m = LightGBMRelevanceModel(3, **params).fit(train.X[tr], train.labels[tr])
            fold_scores.append(-grade_log_loss(m.predict_proba(train.X[te]), train.labels[te]))
        by_hand.append(np.mean(fold_scores))
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], by_hand, rtol=1e-10)
    assert gs.best_params_ == list(ParameterGrid(grid))[int(np.argmax(by_hand))]
    assert len(set(np.round(by_hand, 6))) > 1  # the grid points really differ
    assert isinstance(gs.best_estimator_, LightGBMRelevanceModel)
    assert gs.best_estimator_.predict_proba(train.X).shape == (train.n_docs, 3)
    # nested parameters of a wrapped scikit-learn classifier, scored by scikit-learn's own log-loss
    gs2 = GridSearchCV(SklearnRelevanceModel(LogisticRegression(max_iter=2000), 3),
                       {"estimator__C": [0.01, 1.0]}, cv=cv, scoring="neg_log_loss")
    gs2.fit(train.X, train.labels, groups=train.qids)
    assert gs2.best_params_["estimator__C"] in (0.01, 1.0)
    assert np.all(np.isfinite(gs2.cv_results_["mean_test_score"]))


def test_calibrated_classifier_cv(train, test):
    """CalibratedClassifierCV fits clones of a relevance model; the result plugs back in as a model."""
    from sklearn.calibration import CalibratedClassifierCV

    base = LightGBMRelevanceModel(3, n_estimators=20)
    cal = CalibratedClassifierCV(base, method="sigmoid", cv=3).fit(train.X, train.labels)
    np.testing.assert_array_equal(cal.classes_, [0, 1, 2])
    inner = cal.calibrated_classifiers_[0].estimator
    assert isinstance(inner, LightGBMRelevanceModel) and inner is not base and inner.fitted_
    assert not hasattr(base, "fitted_")  # the template was cloned, not fitted
    p = cal.predict_proba(test.X)
    assert p.shape == (test.n_docs, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    # wrapped again: a floored grade distribution usable by activerank, still clonable as a whole
    wrapped = SklearnRelevanceModel(CalibratedClassifierCV(base, method="isotonic", cv=3), 3)
    pw = wrapped.fit(train.X, train.labels).predict_proba(test.X)
    check_probs(pw, test.n_docs, 3)
    assert grade_log_loss(pw, test.labels) < np.log(3)
    from sklearn.base import clone

    assert clone(wrapped).get_params()["estimator__estimator__n_estimators"] == 20
