"""Relevance models by name (:func:`make_relevance_model`, :data:`MODEL_NAMES`) and their small
default tuning grids (:data:`DEFAULT_GRIDS`)."""

from __future__ import annotations

from typing import Any, Callable

from .adapters import (
    LightGBMRelevanceModel,
    OrderedLogitRelevanceModel,
    RandomForestRegressionRelevanceModel,
    SklearnRelevanceModel,
)
from .base import DEFAULT_FLOOR, RelevanceModel, UniformRelevanceModel, _n_grades_iv


def _rf_classifier(n_grades: int, *, random_state: int | None = 0, n_estimators: int = 200,
                   min_samples_leaf: int = 5, max_features: float | str | None = 0.5, n_jobs: int = 1,
                   floor: float = DEFAULT_FLOOR) -> RelevanceModel:
    from sklearn.ensemble import RandomForestClassifier

    est = RandomForestClassifier(
        n_estimators=n_estimators,
        min_samples_leaf=min_samples_leaf,
        max_features=max_features,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    return SklearnRelevanceModel(est, n_grades, floor=floor)


def _logistic(n_grades: int, *, random_state: int | None = 0, C: float = 1.0, max_iter: int = 2000,
              floor: float = DEFAULT_FLOOR) -> RelevanceModel:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter, random_state=random_state))
    return SklearnRelevanceModel(est, n_grades, floor=floor)


def _rf_regression(n_grades: int, *, random_state: int | None = 0, **params: Any) -> RelevanceModel:
    return RandomForestRegressionRelevanceModel(n_grades, random_state=random_state, **params)


def _lightgbm(n_grades: int, *, random_state: int | None = 0, **params: Any) -> RelevanceModel:
    return LightGBMRelevanceModel(n_grades, random_state=random_state, **params)


def _ordered_logit(n_grades: int, *, random_state: int | None = None, **params: Any) -> RelevanceModel:
    # deterministic (convex problem, L-BFGS from a fixed start): random_state unused
    return OrderedLogitRelevanceModel(n_grades, **params)


def _ordered_logit_it(n_grades: int, *, random_state: int | None = None, **params: Any) -> RelevanceModel:
    params.setdefault("variant", "IT")
    return OrderedLogitRelevanceModel(n_grades, **params)


def _uniform(n_grades: int, *, random_state: int | None = None, **params: Any) -> RelevanceModel:
    return UniformRelevanceModel(n_grades, **params)


_FACTORIES: dict[str, Callable[..., RelevanceModel]] = {
    "rf_regression": _rf_regression,
    "rf_classifier": _rf_classifier,
    "lightgbm": _lightgbm,
    "ordered_logit": _ordered_logit,
    "ordered_logit_it": _ordered_logit_it,
    "logistic": _logistic,
    "uniform": _uniform,
}
MODEL_NAMES = tuple(_FACTORIES)

#: Small default hyper-parameter grids for :func:`fit_with_validation`.
DEFAULT_GRIDS: dict[str, dict[str, list]] = {
    "rf_regression": {"min_samples_leaf": [5, 20], "max_features": [0.3, 0.6]},
    "rf_classifier": {"min_samples_leaf": [5, 20], "max_features": [0.3, 0.6]},
    "lightgbm": {"num_leaves": [7, 31], "learning_rate": [0.03, 0.1], "n_estimators": [150]},
    "ordered_logit": {"alpha": [0.1, 1.0, 10.0, 100.0]},
    "ordered_logit_it": {"alpha": [0.1, 1.0, 10.0, 100.0]},
    "logistic": {"C": [0.01, 0.1, 1.0, 10.0]},
    "uniform": {},
}


def make_relevance_model(name: str, n_grades: int, *, random_state: int | None = 0,
                         **params: Any) -> RelevanceModel:
    """Build a relevance model by name.

    Parameters
    ----------
    name : str
        One of ``"rf_regression"``, ``"rf_classifier"``, ``"lightgbm"``,
        ``"ordered_logit"`` (mord LogisticAT), ``"ordered_logit_it"`` (mord
        LogisticIT), ``"logistic"`` (standardized multinomial
        LogisticRegression), ``"uniform"``.
    n_grades : int
    random_state : int or None, default 0
        Seed of randomized models (forests, LightGBM); ignored by the
        deterministic ones.
    **params
        Model hyper-parameters (e.g. ``min_samples_leaf``, ``alpha``, ``C``,
        ``floor``).

    Returns
    -------
    RelevanceModel
        Unfitted.

    Examples
    --------
    >>> make_relevance_model("ordered_logit", 3, alpha=10.0).alpha
    10.0
    """
    if name not in _FACTORIES:
        raise ValueError(f"`name` must be one of {list(MODEL_NAMES)}; got {name!r}.")
    _n_grades_iv(n_grades)
    model = _FACTORIES[name](n_grades, random_state=random_state, **params)
    model._validate_params()  # fail here, not at fit, on a bad name/value from a CLI or config
    return model
