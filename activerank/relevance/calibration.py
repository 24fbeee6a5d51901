"""Query-level calibration of the relevance model's moments.

Document-level models trained on query-normalized features predict the
per-query metric poorly (on MQ2008 the correlation between the model's
``E[ERR@10 | x]`` and the true per-query ERR@10 is about 0.3), yet both the
sampling distribution and the control variate need good per-query predictions.
A :class:`QueryCalibrator` learns, on labeled training queries, a regression of
the true per-query value ``L(x)`` (or ``delta(x)`` for a comparison) on
query-level features built from the model's exact moments, and a second
regression of the squared residual, giving calibrated ``(mean, variance)`` to
pass as ``predicted=`` to :func:`activerank.estimate` / :func:`activerank.compare`.

The relevance model's moments on its own training queries are over-confident,
so :func:`fit_query_calibrator` cross-fits: every training query's features
come from a relevance model that did not see that query, and the residual
model is fitted on out-of-fold residuals of the mean model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..metrics import parse_metric, pool_metric_values
from ..metrics.moments import _moments, _pair_moments
from ..ragged import Rankings

__all__ = ["QueryCalibrator", "query_features", "fit_query_calibrator", "cross_fitted_probs"]

_MIN_VARIANCE_FRACTION = 1e-3


def query_features(probs, rankings, *, metric, k=None) -> np.ndarray:
    """Per-query features from exact moments of one ranking or a pair.

    Parameters
    ----------
    probs : ndarray of shape (n_docs, n_grades)
    rankings : Rankings or tuple of one or two Rankings
    metric : str
    k : int or None

    Returns
    -------
    features : ndarray of shape (n_queries, n_features)
        One ranking: ``E[L]``, ``sd[L]``, mean relevance probability of the
        top-k, its maximum, ``log(1 + list length)``.  A pair: ``E[delta]``,
        ``sd[delta]``, ``E[L_a]``, ``E[L_b]``, ``sd[L_a]``, ``sd[L_b]`` and the
        log list lengths.
    """
    m = parse_metric(metric, k, require_moments=True)
    rankings = (rankings,) if isinstance(rankings, Rankings) else tuple(rankings)
    tops = [r.truncate(m.k) for r in rankings]
    lengths = [np.log1p(r.lengths) for r in rankings]
    if len(tops) == 1:
        mom = _moments(probs, tops[0], m)
        relevant = 1.0 - probs[tops[0].items, 0]
        q = tops[0].query_index()
        n = np.maximum(tops[0].lengths, 1)
        mean_rel = np.bincount(q, relevant, minlength=tops[0].n_queries) / n
        max_rel = np.zeros(tops[0].n_queries)
        np.maximum.at(max_rel, q, relevant)
        return np.column_stack([mom.mean, np.sqrt(mom.variance), mean_rel, max_rel, lengths[0]])
    pm = _pair_moments(probs, tops[0], tops[1], m)
    var_a = np.maximum(pm.second_a - pm.mean_a**2, 0)
    var_b = np.maximum(pm.second_b - pm.mean_b**2, 0)
    return np.column_stack([pm.delta_mean, np.sqrt(pm.delta_variance), pm.mean_a, pm.mean_b,
                            np.sqrt(var_a), np.sqrt(var_b), lengths[0], lengths[1]])


def _default_regressor(random_state):
    # A few hundred noisy per-query targets: a ridge on standardized features with
    # cross-validated shrinkage. Gradient boosting overfit on MQ2008 (correlation with the
    # truth fell from 0.36 to 0.20, see benchmarks/model_assisted.py).
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13)))


@dataclass(frozen=True, eq=False)
class QueryCalibrator:
    """Fitted query-level regressions for ``E[L | x]`` and ``E[(L - mean)^2 | x]``.

    Attributes
    ----------
    mean_model, residual_model : fitted regressors
    min_variance : float
        Floor on the predicted residual variance (a fraction of the training
        residual variance), so no query is declared perfectly predictable.
    """

    mean_model: object
    residual_model: object
    min_variance: float

    def predict(self, features) -> tuple[np.ndarray, np.ndarray]:
        """Calibrated ``(mean, variance)`` of shape (n_queries,) each."""
        F = np.asarray(features, dtype=np.float64)
        mean = self.mean_model.predict(F)
        variance = np.maximum(self.residual_model.predict(F), self.min_variance)
        return mean, variance


def _folds(n, n_splits, groups, random_state):
    if groups is None:
        from sklearn.model_selection import KFold

        return KFold(n_splits, shuffle=True, random_state=random_state).split(np.zeros(n))
    from sklearn.model_selection import GroupKFold

    return GroupKFold(n_splits).split(np.zeros(n), groups=groups)


def fit_calibrator(features, values, *, n_splits=5, regressor: Callable | None = None,
                   random_state=0) -> QueryCalibrator:
    """Fit mean and residual regressions on per-query ``features`` and true ``values``.

    The residual model is trained on out-of-fold residuals of the mean model
    (``n_splits`` folds), so its variance predictions are honest.

    Parameters
    ----------
    features : ndarray of shape (n_queries, n_features)
    values : ndarray of shape (n_queries,)
        True per-query metric values (or differences).
    n_splits : int, default 5
    regressor : callable, optional
        ``regressor(random_state)`` -> unfitted scikit-learn regressor.
    random_state : int
    """
    F = np.asarray(features, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] != y.size:
        raise ValueError(f"`features` must have shape (n_queries, n_features) with n_queries = "
                         f"len(values) = {y.size}; got {F.shape}.")
    if y.size < 2 * n_splits:
        raise ValueError(f"need at least {2 * n_splits} training queries for {n_splits}-fold "
                         f"cross-fitting; got {y.size}.")
    make = regressor or _default_regressor
    oof = np.empty_like(y)
    for tr, te in _folds(y.size, n_splits, None, random_state):
        oof[te] = make(random_state).fit(F[tr], y[tr]).predict(F[te])
    mean_model = make(random_state).fit(F, y)
    resid2 = (y - oof) ** 2
    residual_model = make(random_state).fit(F, resid2)
    floor = _MIN_VARIANCE_FRACTION * float(resid2.mean()) + np.finfo(float).tiny
    return QueryCalibrator(mean_model, residual_model, floor)


def cross_fitted_probs(data, model_factory: Callable, *, n_splits=5, random_state=0) -> np.ndarray:
    """Out-of-fold ``p(y | x, z)`` for every document of a labeled dataset.

    Queries are split into ``n_splits`` groups; each group's documents are
    predicted by a model fitted on the other groups (``model_factory()`` must
    return an unfitted relevance model).

    Returns
    -------
    probs : ndarray of shape (n_docs, n_grades)
    """
    if data.labels is None:
        raise ValueError("`data` must be labeled to cross-fit the relevance model.")
    groups = np.repeat(np.arange(data.n_queries), np.diff(data.offsets))
    probs = np.empty((data.n_docs, data.n_grades))
    for tr, te in _folds(data.n_docs, n_splits, groups, random_state):
        model = model_factory().fit(data.X[tr], data.labels[tr])
        probs[te] = model.predict_proba(data.X[te])
    return probs


def fit_query_calibrator(train, rankings, model_factory: Callable | None = None, *, metric, k=None,
                         probs=None, n_splits=5, random_state=0) -> QueryCalibrator:
    """Fit a :class:`QueryCalibrator` on labeled queries.

    Two honest ways to get the model's moments on labeled queries: pass
    ``probs`` from a relevance model that never saw ``train`` (e.g. a
    validation split -- preferred, since the rankers then behave as on the
    pool too), or pass ``model_factory`` to cross-fit the model on ``train``.

    Parameters
    ----------
    train : LetorData
        Labeled queries (a held-out validation split, or the training split).
    rankings : Rankings or tuple of one or two Rankings
        The evaluated ranker(s) applied to ``train`` (same ranker(s) that will
        be evaluated on the pool).
    model_factory : callable, optional
        Returns an unfitted relevance model, for cross-fitting.
    probs : ndarray of shape (train.n_docs, n_grades), optional
        Held-out predictions of the relevance model on ``train``.
    metric, k : as in :func:`activerank.estimate`
    n_splits : int, default 5
    random_state : int

    Returns
    -------
    QueryCalibrator
        Use ``calibrator.predict(query_features(pool_probs, pool_rankings, metric=...))``
        and pass the result as ``predicted=`` to ``estimate``/``compare``.
    """
    rankings = (rankings,) if isinstance(rankings, Rankings) else tuple(rankings)
    if (probs is None) == (model_factory is None):
        raise ValueError("pass exactly one of `model_factory` (cross-fitting) and `probs` (held-out).")
    if probs is None:
        probs = cross_fitted_probs(train, model_factory, n_splits=n_splits, random_state=random_state)
    F = query_features(probs, rankings, metric=metric, k=k)
    m = parse_metric(metric, k)
    vals = [pool_metric_values(train.labels, r, metric=m, ymax=train.n_grades - 1, offsets=train) for r in rankings]
    target = vals[0] if len(vals) == 1 else vals[0] - vals[1]
    return fit_calibrator(F, target, n_splits=n_splits, random_state=random_state)
