"""Relevance models p(y | x, z): distributions over the graded label scale.

Every model has one interface::

    model = SomeRelevanceModel(n_grades=3, ...).fit(X, y)
    probs = model.predict_proba(X)        # (n_docs, n_grades), rows sum to 1

``predict_proba`` always returns one column per grade ``0 .. n_grades - 1``,
also for grades that were absent from the training labels.

Probability floor
-----------------
Active evaluation samples documents in proportion to functions of p(y|x,z)
and reweights by ``p / q``; a model that puts *zero* mass on a grade that
does occur makes those weights unbounded.  Every model therefore mixes its
raw distribution with the uniform distribution,

    p(y) = (1 - floor) * p_raw(y) + floor / n_grades,

(``floor=1e-3`` by default), so each grade keeps at least
``floor / n_grades`` mass, rows still sum to 1, and ranking by expected gain
is unchanged up to an affine map.  A raw row that is all zero (cannot happen
for the adapters here, but possible for user estimators) becomes uniform.

Adapters
--------
- :class:`SklearnRelevanceModel` -- any scikit-learn classifier with
  ``predict_proba`` (``classes_`` mapped to grade columns).
- :class:`LightGBMRelevanceModel` -- ``lightgbm.LGBMClassifier``.
- :class:`OrderedLogitRelevanceModel` -- mord ``LogisticAT`` / ``LogisticIT``
  (the MAP ordered-logit model of Sawade et al.).
- :class:`RandomForestRegressionRelevanceModel` -- random-forest regression
  turned into a distribution over grades.
- :class:`UniformRelevanceModel` -- the ``uniD`` baseline, 1 / n_grades.

:func:`make_relevance_model` builds them by name and
:func:`fit_with_validation` picks hyper-parameters by validation log-loss.

The package's modules: :mod:`.base` (the interface, the floor, input checks,
the uniform model), :mod:`.adapters` (scikit-learn, LightGBM, mord, random
forest regression), :mod:`.factory` (models by name, default grids) and
:mod:`.tuning` (:func:`fit_with_validation`).
"""

from .adapters import (
    LightGBMRelevanceModel,
    OrderedLogitRelevanceModel,
    RandomForestRegressionRelevanceModel,
    SklearnRelevanceModel,
)
from .base import DEFAULT_FLOOR, RelevanceModel, UniformRelevanceModel, apply_floor, grade_log_loss
from .factory import DEFAULT_GRIDS, MODEL_NAMES, make_relevance_model
from .tuning import TuningResult, fit_with_validation

__all__ = [
    "RelevanceModel",
    "SklearnRelevanceModel",
    "LightGBMRelevanceModel",
    "OrderedLogitRelevanceModel",
    "RandomForestRegressionRelevanceModel",
    "UniformRelevanceModel",
    "make_relevance_model",
    "MODEL_NAMES",
    "grade_log_loss",
    "fit_with_validation",
    "TuningResult",
    "DEFAULT_GRIDS",
    "apply_floor",
]
