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
"""

from __future__ import annotations

import inspect
import itertools
import numbers
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Self

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

DEFAULT_FLOOR = 1e-3


# --------------------------------------------------------------------------- helpers


def _n_grades_iv(n_grades: Any) -> int:
    if isinstance(n_grades, bool) or not isinstance(n_grades, numbers.Integral):
        raise TypeError(f"`n_grades` must be an integer >= 2; got {n_grades!r}.")
    if n_grades < 2:
        raise ValueError(f"`n_grades` must be >= 2; got {n_grades}.")
    return int(n_grades)


def _floor_iv(floor: Any) -> float:
    if isinstance(floor, bool) or not isinstance(floor, numbers.Real):
        raise TypeError(f"`floor` must be a real number in [0, 1); got {floor!r}.")
    if not 0.0 <= float(floor) < 1.0:
        raise ValueError(f"`floor` must be in [0, 1); got {floor}.")
    return float(floor)


def _X_iv(X: Any, *, n_features: int | None = None, name: str = "X") -> np.ndarray:
    if hasattr(X, "X") and hasattr(X, "offsets"):  # a LetorData
        X = X.X
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"`{name}` must be a 2-d numeric array; got {type(X).__name__}.")
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be a 2-d numeric array: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must have shape (n_docs, n_features); got {arr.ndim} dimension(s).")
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError(f"`{name}` must be finite; row {r}, column {c} is {arr[r, c]}.")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"`{name}` has {arr.shape[1]} features but the model was fitted on {n_features}."
        )
    return arr


def _y_iv(y: Any, n_docs: int, n_grades: int, *, name: str = "y") -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.size != n_docs:
        raise ValueError(f"`{name}` must have shape ({n_docs},) to match X; got shape {y.shape}.")
    if n_docs == 0:
        raise ValueError(f"`{name}` is empty; need at least one labeled document to fit.")
    if y.dtype == bool or not np.issubdtype(y.dtype, np.number):
        raise TypeError(f"`{name}` must hold integer grades; got dtype {y.dtype}.")
    yf = y.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(yf) | (yf != np.round(yf)))
    if bad.size:
        raise ValueError(f"`{name}` must hold integer grades; row {bad[0]} is {yf[bad[0]]:g}.")
    yi = yf.astype(np.int64)
    bad = np.flatnonzero((yi < 0) | (yi >= n_grades))
    if bad.size:
        raise ValueError(
            f"`{name}` must lie in 0..{n_grades - 1} (n_grades={n_grades}); row {bad[0]} is {yi[bad[0]]}."
        )
    return yi


def _data_xy(data: Any, name: str) -> tuple[Any, Any]:
    """Accept a LetorData (with labels) or an (X, y) pair."""
    if hasattr(data, "X") and hasattr(data, "labels"):
        if data.labels is None:
            raise ValueError(f"`{name}` has no labels; tuning needs labeled data.")
        return data.X, data.labels
    try:
        X, y = data
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a LetorData or an (X, y) pair; got {type(data).__name__}.") from None
    return X, y


def apply_floor(raw: ArrayLike, floor: float = DEFAULT_FLOOR) -> NDArray[np.float64]:
    """Renormalize non-negative scores per row and mix with the uniform distribution.

    Parameters
    ----------
    raw : array-like of shape (n_docs, n_grades)
        Non-negative (negative entries from round-off are clipped to 0).
    floor : float in [0, 1), default 1e-3
        Weight of the uniform component; every grade gets at least
        ``floor / n_grades``.

    Returns
    -------
    probs : ndarray of shape (n_docs, n_grades), float64
        Rows sum to 1.  All-zero rows become uniform.

    Examples
    --------
    >>> apply_floor([[1.0, 0.0], [0.0, 0.0]], floor=0.1).round(6).tolist()
    [[0.95, 0.05], [0.5, 0.5]]
    """
    p = np.clip(np.asarray(raw, dtype=np.float64), 0.0, None)
    k = p.shape[1]
    s = p.sum(axis=1, keepdims=True)
    p = np.divide(p, s, out=np.full_like(p, 1.0 / k), where=s > 0)
    p = (1.0 - floor) * p + floor / k
    p /= p.sum(axis=1, keepdims=True)
    return p


def grade_log_loss(probs: ArrayLike, y: ArrayLike, *, eps: float = 1e-15) -> float:
    """Mean negative log-likelihood ``-mean log p(y_i)`` of integer grades.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)
    y : array-like of shape (n_docs,)
        Integer grades in ``0 .. n_grades - 1``.
    eps : float
        Probabilities are clipped to ``[eps, 1]`` before the log.

    Returns
    -------
    float

    Examples
    --------
    >>> round(grade_log_loss([[0.5, 0.5], [0.9, 0.1]], [1, 0]), 4)
    0.3993
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"`probs` must have shape (n_docs, n_grades); got {p.ndim} dimension(s).")
    yi = _y_iv(y, p.shape[0], p.shape[1])
    return float(-np.mean(np.log(np.clip(p[np.arange(yi.size), yi], eps, 1.0))))


# --------------------------------------------------------------------------- base class


class RelevanceModel:
    """Base class: a scikit-learn style probabilistic classifier over the grade scale.

    Subclasses implement ``_fit(X, y)`` (``y`` validated int64 in the scale,
    at least two distinct grades present) and ``_predict_raw(X)`` returning
    non-negative ``(n_docs, n_grades)`` scores, and extend
    ``_validate_params``.

    The models follow scikit-learn's estimator conventions without importing
    scikit-learn: constructor arguments are stored unchanged as attributes of
    the same name and validated in :meth:`fit` (or eagerly by
    :func:`make_relevance_model`), :meth:`get_params` / :meth:`set_params`
    support nested ``estimator__param`` names, and fitted attributes end in
    ``_``.  Hence ``sklearn.base.clone``, ``GridSearchCV`` (scored by
    :meth:`score`, the mean log-likelihood, unless ``scoring`` is given) and
    ``CalibratedClassifierCV`` accept them.  ``classes_`` is always
    ``0 .. n_grades - 1``, one per ``predict_proba`` column.

    Parameters
    ----------
    n_grades : int
        Size of the label scale (grades ``0 .. n_grades - 1``).
    floor : float, default 1e-3
        Uniform mixing weight, see the module docstring.
    """

    # scikit-learn < 1.6 recognizes classifiers by this attribute (later versions by __sklearn_tags__)
    _estimator_type = "classifier"

    def __init__(self, n_grades: int, *, floor: float = DEFAULT_FLOOR) -> None:
        self.n_grades = n_grades
        self.floor = floor

    # scikit-learn estimator protocol ------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters of this model (scikit-learn convention).

        Parameters
        ----------
        deep : bool, default True
            Also return the parameters of nested estimators as
            ``estimator__param``.

        Returns
        -------
        dict
        """
        out: dict[str, Any] = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters (``name`` or nested ``estimator__name``).

        Returns
        -------
        self
        """
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, sep, sub = key.partition("__")
            if head not in valid:
                raise ValueError(
                    f"Invalid parameter {head!r} for {type(self).__name__}; "
                    f"valid parameters are {sorted(self.get_params(deep=False))}."
                )
            if sep:
                nested.setdefault(head, {})[sub] = value
            else:
                setattr(self, head, value)
                valid[head] = value
        for head, sub_params in nested.items():
            valid[head].set_params(**sub_params)
        return self

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags())

    def __sklearn_is_fitted__(self) -> bool:
        return bool(getattr(self, "fitted_", False))

    def _validate_params(self) -> None:
        _n_grades_iv(self.n_grades)
        _floor_iv(self.floor)

    # public API ---------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        """Fit on features ``X`` (n_docs, n_features) and integer grades ``y`` (n_docs,).

        Returns
        -------
        self
        """
        self._validate_params()
        n_grades = _n_grades_iv(self.n_grades)
        X = _X_iv(X)
        y = _y_iv(y, X.shape[0], n_grades)
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.arange(n_grades)
        self.grades_seen_ = np.unique(y)
        self.class_prior_ = np.bincount(y, minlength=n_grades) / y.size
        self._constant = None
        if self.grades_seen_.size < 2:
            # one grade only: no discriminative model can be fitted
            self._constant = np.eye(n_grades)[self.grades_seen_[0]]
        else:
            self._fit(X, y)
        self.fitted_ = True
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Grade distribution of every row.

        Parameters
        ----------
        X : array-like of shape (n_docs, n_features)

        Returns
        -------
        probs : ndarray of shape (n_docs, n_grades), float64
            Rows sum to 1; every entry is at least ``floor / n_grades``.
        """
        if not getattr(self, "fitted_", False):
            raise ValueError(f"{type(self).__name__} is not fitted; call fit(X, y) first.")
        X = _X_iv(X, n_features=self.n_features_in_)
        if self._constant is not None:
            raw = np.broadcast_to(self._constant, (X.shape[0], self.classes_.size))
        else:
            raw = self._predict_raw(X)
        return apply_floor(raw, _floor_iv(self.floor))

    def predict(self, X: ArrayLike) -> NDArray[np.int64]:
        """Most probable grade of every row, shape ``(n_docs,)``."""
        return np.argmax(self.predict_proba(X), axis=1).astype(np.int64)

    def expected_grade(self, X: ArrayLike) -> NDArray[np.float64]:
        """Expected grade ``sum_y y p(y|x)``, shape ``(n_docs,)``."""
        p = self.predict_proba(X)
        return p @ np.arange(p.shape[1], dtype=np.float64)

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean log-likelihood ``mean log p(y_i | x_i)`` (higher is better; ``-grade_log_loss``).

        The default criterion of ``GridSearchCV`` on these models, matching
        :func:`fit_with_validation`.
        """
        return -grade_log_loss(self.predict_proba(X), y)

    # to implement -------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _columns(self, raw_cls: np.ndarray, classes: ArrayLike) -> np.ndarray:
        """Scatter per-class columns into the grade columns."""
        out = np.zeros((raw_cls.shape[0], self.classes_.size))
        out[:, np.asarray(classes, dtype=np.int64)] = raw_cls
        return out

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"


class UniformRelevanceModel(RelevanceModel):
    """The ``uniD`` baseline: p(y | x, z) = 1 / n_grades for every document.

    ``fit`` only validates its input and may be skipped entirely:
    ``predict_proba`` works on an unfitted model (any number of features).

    Parameters
    ----------
    n_grades : int
    floor : float, default 1e-3

    Examples
    --------
    >>> UniformRelevanceModel(3).predict_proba([[0.0], [1.0]]).tolist()
    [[0.3333333333333333, 0.3333333333333333, 0.3333333333333333], [0.3333333333333333, 0.3333333333333333, 0.3333333333333333]]
    """

    def fit(self, X: ArrayLike, y: ArrayLike) -> Self:
        self._validate_params()
        X = _X_iv(X)
        _y_iv(y, X.shape[0], _n_grades_iv(self.n_grades))
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.arange(self.n_grades)
        self.fitted_ = True
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        self._validate_params()
        k = _n_grades_iv(self.n_grades)
        X = _X_iv(X)  # the features are ignored: no check against n_features_in_
        return apply_floor(np.full((X.shape[0], k), 1.0 / k), _floor_iv(self.floor))

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - never called
        pass


class SklearnRelevanceModel(RelevanceModel):
    """Adapter for any scikit-learn classifier with ``predict_proba``.

    The estimator is cloned on every ``fit`` (the fitted copy is
    ``estimator_``); its ``classes_`` (the grades seen in training) are mapped
    to grade columns and unseen grades get only the floor mass.  If the
    training labels contain a single grade the estimator is not fitted and
    the model predicts that grade (floored).  Nested parameters are reachable
    as ``estimator__name`` (e.g. in ``GridSearchCV``).

    Parameters
    ----------
    estimator : sklearn classifier
        E.g. ``RandomForestClassifier(random_state=0)`` or ``LogisticRegression()``.
    n_grades : int
    floor : float, default 1e-3

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.array([[0.0], [0.2], [0.8], [1.0]]); y = np.array([0, 0, 2, 2])
    >>> m = SklearnRelevanceModel(LogisticRegression(), n_grades=3).fit(X, y)
    >>> p = m.predict_proba(X)
    >>> p.shape, bool(np.allclose(p.sum(1), 1)), bool((p[:, 1] > 0).all())
    ((4, 3), True, True)
    """

    def __init__(self, estimator: Any, n_grades: int, *, floor: float = DEFAULT_FLOOR) -> None:
        self.estimator = estimator
        self.n_grades = n_grades
        self.floor = floor

    def _validate_params(self) -> None:
        super()._validate_params()
        est = self.estimator
        if not hasattr(est, "fit") or not hasattr(est, "predict_proba"):
            raise TypeError(
                "`estimator` must be a classifier with fit and predict_proba; "
                f"got {type(est).__name__}."
            )

    def _make_estimator(self) -> Any:
        from sklearn.base import clone

        return clone(self.estimator)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.estimator_ = self._make_estimator()
        self.estimator_.fit(X, y)
        classes = np.asarray(self.estimator_.classes_)
        if not np.all(np.isin(classes, self.classes_)):
            raise ValueError(  # pragma: no cover - y was validated
                f"estimator classes_ {classes.tolist()} are not grades 0..{self.classes_.size - 1}."
            )

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        return self._columns(self.estimator_.predict_proba(X), self.estimator_.classes_)


class LightGBMRelevanceModel(SklearnRelevanceModel):
    """Gradient-boosted trees (``lightgbm.LGBMClassifier``) as a grade distribution.

    With three or more grades in the training labels LightGBM fits a
    multiclass (softmax) model; with two it fits a binary one.  Either way
    the classifier's ``classes_`` are mapped to grade columns.  Runs silently
    (``verbose=-1``), single-threaded by default and ``deterministic=True``.
    LightGBM is imported on ``fit``.

    Parameters
    ----------
    n_grades : int
    n_estimators : int, default 200
    learning_rate : float, default 0.05
    num_leaves : int, default 15
    min_child_samples : int, default 20
    reg_lambda : float, default 1.0
    subsample, colsample_bytree : float, default 0.8
        Row (bagging, every iteration) and feature subsampling.
    random_state : int, default 0
    n_jobs : int, default 1
    floor : float, default 1e-3
    **params
        Passed to ``LGBMClassifier`` (kept as attributes and parameters of
        this model, as LightGBM's own scikit-learn wrapper does).

    Examples
    --------
    >>> from activerank.io.letor import load_sample
    >>> d = load_sample("train")
    >>> m = LightGBMRelevanceModel(3, n_estimators=20).fit(d.X, d.labels)
    >>> m.predict_proba(d.X[:2]).shape
    (2, 3)
    """

    def __init__(
        self,
        n_grades: int,
        *,
        n_estimators: int = 200,
        learning_rate: float = 0.05,
        num_leaves: int = 15,
        min_child_samples: int = 20,
        reg_lambda: float = 1.0,
        subsample: float = 0.8,
        colsample_bytree: float = 0.8,
        random_state: int | None = 0,
        n_jobs: int = 1,
        floor: float = DEFAULT_FLOOR,
        **params: Any,
    ) -> None:
        self.n_grades = n_grades
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.floor = floor
        self._extra_params = list(params)
        for key, value in params.items():
            setattr(self, key, value)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        out = super().get_params(deep=deep)
        out.update((k, getattr(self, k)) for k in self._extra_params)
        return out

    def set_params(self, **params: Any) -> Self:
        # unknown names are LGBMClassifier keyword arguments, as in LightGBM's own wrapper
        known = set(self._get_param_names())
        for key, value in params.items():
            if key not in known and "__" not in key:
                if key not in self._extra_params:
                    self._extra_params.append(key)
                setattr(self, key, value)
        return super().set_params(**{k: v for k, v in params.items() if k in known or "__" in k})

    def _validate_params(self) -> None:
        RelevanceModel._validate_params(self)

    def _lgb_params(self) -> dict[str, Any]:
        params = dict(
            n_estimators=self.n_estimators,
            learning_rate=self.learning_rate,
            num_leaves=self.num_leaves,
            min_child_samples=self.min_child_samples,
            reg_lambda=self.reg_lambda,
            subsample=self.subsample,
            subsample_freq=1 if self.subsample < 1 else 0,
            colsample_bytree=self.colsample_bytree,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
            verbose=-1,
            deterministic=True,
            force_col_wise=True,
        )
        params.update((k, getattr(self, k)) for k in self._extra_params)
        return params

    def _make_estimator(self) -> Any:
        from lightgbm import LGBMClassifier

        return LGBMClassifier(**self._lgb_params())

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():  # feature-name warnings on plain arrays
            warnings.simplefilter("ignore", UserWarning)
            return self._columns(self.estimator_.predict_proba(X), self.estimator_.classes_)


class OrderedLogitRelevanceModel(RelevanceModel):
    """Ordered-logit (proportional odds) model via mord, the MAP model of the paper.

    ``P(y <= j | x) = sigmoid(theta_j - w.x)`` with an L2 prior of strength
    ``alpha`` on ``w``; features are standardized (training mean / std) first.

    mord quirks handled here: mord requires the training labels to be the
    contiguous integers ``0 .. k-1``.  The grades seen in training are
    therefore re-coded to their ranks ``0 .. k-1`` (so a scale with a missing
    middle grade fits an ordinal model over the observed grades), mord's
    ``predict_proba`` columns are scattered back to the seen grades, and
    unseen grades get only the floor mass.  mord's probabilities are
    differences of sigmoids and may be ~-1e-17; they are clipped at 0.
    mord is imported on ``fit``.

    Parameters
    ----------
    n_grades : int
    variant : {"AT", "IT"}, default "AT"
        mord ``LogisticAT`` (all-threshold) or ``LogisticIT`` (immediate-threshold).
        Both share the cumulative-logit form, but IT is trained with a
        surrogate of the 0-1 loss, so its probabilities are usually poorly
        calibrated (it can be worse than uniform in log-loss); prefer AT.
    alpha : float, default 1.0
        L2 regularization strength.
    max_iter : int, default 1000
    standardize : bool, default True
    floor : float, default 1e-3

    Examples
    --------
    >>> from activerank.io.letor import load_sample
    >>> d = load_sample("train")
    >>> m = OrderedLogitRelevanceModel(3).fit(d.X, d.labels)
    >>> p = m.predict_proba(d.X)
    >>> p.shape, bool(abs(p.sum(1) - 1).max() < 1e-12)
    ((618, 3), True)
    """

    def __init__(
        self,
        n_grades: int,
        *,
        variant: str = "AT",
        alpha: float = 1.0,
        max_iter: int = 1000,
        standardize: bool = True,
        floor: float = DEFAULT_FLOOR,
    ) -> None:
        self.n_grades = n_grades
        self.variant = variant
        self.alpha = alpha
        self.max_iter = max_iter
        self.standardize = standardize
        self.floor = floor

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.variant not in ("AT", "IT"):
            raise ValueError(f"`variant` must be 'AT' or 'IT'; got {self.variant!r}.")
        alpha = self.alpha
        if not isinstance(alpha, numbers.Real) or not alpha >= 0:
            raise ValueError(f"`alpha` must be a non-negative number; got {alpha!r}.")

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        import mord

        if self.standardize:
            self.mean_ = X.mean(axis=0)
            sd = X.std(axis=0)
            self.scale_ = np.where(sd > 0, sd, 1.0)
            X = (X - self.mean_) / self.scale_
        cls = mord.LogisticAT if self.variant == "AT" else mord.LogisticIT
        y_rank = np.searchsorted(self.grades_seen_, y)
        with warnings.catch_warnings():  # mord passes a deprecated `disp` option to scipy
            warnings.simplefilter("ignore", DeprecationWarning)
            self.estimator_ = cls(alpha=float(self.alpha), max_iter=int(self.max_iter)).fit(X, y_rank)

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        if self.standardize:
            X = (X - self.mean_) / self.scale_
        raw = np.clip(self.estimator_.predict_proba(X), 0.0, None)
        return self._columns(raw, self.grades_seen_)


class RandomForestRegressionRelevanceModel(RelevanceModel):
    """Random-forest *regression* of the grade, turned into a grade distribution.

    Sawade et al. (following Li, Burges & Wu 2007 and Mohan et al. 2011) fit
    a regression forest to the grades and read class probabilities off it.
    Three conversions are offered (``method``):

    ``"leaf"`` (default)
        Quantile-regression-forest style (Meinshausen 2006): the grade
        histogram of the training documents that share the test document's
        leaf, averaged over trees.  The regression forest serves as an
        adaptive neighbourhood, and the distribution is a proper average of
        empirical label distributions (no interpolation between grades).
    ``"linear"``
        Each tree's prediction ``t`` is split between the two neighbouring
        grades ``lo <= t <= hi`` with weights ``(hi - t) / (hi - lo)`` and
        ``(t - lo) / (hi - lo)``; the distribution is the average over trees.
        Its mean equals the forest's regression prediction exactly.
        "Neighbouring" means among the grades *seen in training*, so a grade
        absent from the training labels gets only the floor mass.
    ``"round"``
        Histogram of the per-tree predictions rounded to the nearest seen
        grade (coarse: steps of 1 / n_trees).

    Why ``"leaf"``: a tree's prediction is the *mean* label of its leaf, and a
    mean does not identify a distribution (0.6 is the mean of a leaf with 70%
    zeros and 30% twos and of one with 40% zeros and 60% ones), so
    ``"linear"``/``"round"`` place mass on grades by proximity to that mean
    rather than by how often the grades occur; ``"leaf"`` keeps the
    frequencies.

    Measured on the LETOR Fold1 test sets (``benchmarks/relevance_models.py``,
    hyper-parameters tuned on the validation split), ``"leaf"`` had the
    lowest log-loss and calibration error of the three: MQ2008 log-loss 0.516
    vs 0.544 (linear) / 0.554 (round), ECE of P(y>=1) 0.018 vs 0.047 / 0.043;
    OHSUMED log-loss 0.638 vs 0.761 / 0.786, ECE 0.156 vs 0.217 / 0.215; and
    the best ERR@10 / NDCG@10 of the induced ranker on both.  The floor
    (module docstring) is applied on top.

    Parameters
    ----------
    n_grades : int
    method : {"leaf", "linear", "round"}, default "leaf"
    n_estimators : int, default 200
    min_samples_leaf : int, default 10
    max_features : float or str, default 0.5
    random_state : int, default 0
    n_jobs : int, default 1
    floor : float, default 1e-3

    Examples
    --------
    >>> from activerank.io.letor import load_sample
    >>> d = load_sample("train")
    >>> m = RandomForestRegressionRelevanceModel(3, n_estimators=20, method="linear")
    >>> p = m.fit(d.X, d.labels).predict_proba(d.X)
    >>> bool(np.allclose(p @ np.arange(3), m.forest_.predict(d.X), atol=1e-2))
    True
    """

    METHODS = ("leaf", "linear", "round")

    def __init__(
        self,
        n_grades: int,
        *,
        method: str = "leaf",
        n_estimators: int = 200,
        min_samples_leaf: int = 10,
        max_features: float | str | None = 0.5,
        random_state: int | None = 0,
        n_jobs: int = 1,
        floor: float = DEFAULT_FLOOR,
    ) -> None:
        self.n_grades = n_grades
        self.method = method
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.floor = floor

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.method not in self.METHODS:
            raise ValueError(f"`method` must be one of {self.METHODS}; got {self.method!r}.")

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        from sklearn.ensemble import RandomForestRegressor

        self.forest_ = RandomForestRegressor(
            n_estimators=int(self.n_estimators),
            min_samples_leaf=int(self.min_samples_leaf),
            max_features=self.max_features,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        ).fit(X, y.astype(np.float64))
        if self.method == "leaf":
            K = self.classes_.size
            leaves = self.forest_.apply(X)  # (n_train, n_trees)
            self._leaf_hist = []
            for t, est in enumerate(self.forest_.estimators_):
                n_nodes = est.tree_.node_count
                h = np.bincount(
                    leaves[:, t] * K + y, minlength=n_nodes * K
                ).reshape(n_nodes, K).astype(np.float64)
                s = h.sum(axis=1, keepdims=True)
                self._leaf_hist.append(np.divide(h, s, out=np.zeros_like(h), where=s > 0))

    def tree_predictions(self, X: ArrayLike) -> NDArray[np.float64]:
        """Per-tree regression predictions, shape ``(n_docs, n_trees)``."""
        X = _X_iv(X, n_features=self.n_features_in_)
        return np.stack([est.predict(X) for est in self.forest_.estimators_], axis=1)

    def _predict_raw(self, X: np.ndarray) -> np.ndarray:
        K = self.classes_.size
        n = X.shape[0]
        if self.method == "leaf":
            leaves = self.forest_.apply(X)
            out = np.zeros((n, K))
            for tree, hist in enumerate(self._leaf_hist):
                out += hist[leaves[:, tree]]
            return out / len(self._leaf_hist)
        seen = self.grades_seen_.astype(np.float64)
        T = np.clip(self.tree_predictions(X), seen[0], seen[-1])  # (n, n_trees)
        rows = np.repeat(np.arange(n), T.shape[1])
        t = T.ravel()
        # bracket every tree prediction by two neighbouring *observed* grades
        idx = np.clip(np.searchsorted(seen, t, side="right") - 1, 0, seen.size - 2)
        lo, hi = seen[idx], seen[idx + 1]
        frac = (t - lo) / (hi - lo)
        flat: np.ndarray
        if self.method == "round":
            g = np.where(frac >= 0.5, hi, lo).astype(np.int64)
            flat = np.bincount(rows * K + g, minlength=n * K).astype(np.float64)
        else:  # linear
            flat = np.bincount(rows * K + lo.astype(np.int64), weights=1.0 - frac, minlength=n * K)
            flat += np.bincount(rows * K + hi.astype(np.int64), weights=frac, minlength=n * K)
        return flat.reshape(n, K) / T.shape[1]


# --------------------------------------------------------------------------- factory


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


# --------------------------------------------------------------------------- tuning


@dataclass
class TuningResult:
    """Outcome of :func:`fit_with_validation`.

    Attributes
    ----------
    model : RelevanceModel
        Fitted with ``params`` (on train, or train + vali if ``refit=True``).
    params : dict
        Best grid point.
    scores : list of (dict, float)
        Every grid point with its validation log-loss, in grid order.
    """

    model: RelevanceModel
    params: dict[str, Any]
    scores: list[tuple[dict[str, Any], float]]


def fit_with_validation(
    model_factory: Callable[..., RelevanceModel],
    grid: Mapping[str, Sequence[Any]],
    train: Any,
    vali: Any,
    *,
    refit: bool = False,
) -> TuningResult:
    """Pick hyper-parameters by validation log-loss over a small grid.

    Parameters
    ----------
    model_factory : callable
        ``model_factory(**params)`` returns an unfitted relevance model, e.g.
        ``functools.partial(make_relevance_model, "lightgbm", 3)``.
    grid : mapping of str to sequence
        Parameter name -> candidate values; the full Cartesian product is
        tried (keep it small).  An empty mapping tries ``model_factory()``.
    train, vali : LetorData or (X, y)
        Fitting and validation data.  Following Sawade et al., one may split
        a training fold in halves (e.g. by query with ``LetorData.subset``).
    refit : bool, default False
        Refit the best configuration on train + vali.

    Returns
    -------
    TuningResult

    Examples
    --------
    >>> from functools import partial
    >>> from activerank.io.letor import load_sample
    >>> tr, va = load_sample("train"), load_sample("test")
    >>> res = fit_with_validation(partial(make_relevance_model, "ordered_logit", 3),
    ...                           {"alpha": [1.0, 100.0]}, tr, va)
    >>> sorted(res.params), len(res.scores)
    (['alpha'], 2)
    """
    if not callable(model_factory):
        raise TypeError(f"`model_factory` must be callable; got {type(model_factory).__name__}.")
    if not isinstance(grid, Mapping):
        raise TypeError(f"`grid` must be a mapping of parameter name to candidate values; got {type(grid).__name__}.")
    for k, v in grid.items():
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) == 0:
            raise ValueError(f"`grid[{k!r}]` must be a non-empty sequence of candidate values; got {v!r}.")
    Xtr, ytr = _data_xy(train, "train")
    Xva, yva = _data_xy(vali, "vali")
    names = list(grid)
    scores: list[tuple[dict[str, Any], float]] = []
    best: tuple[dict[str, Any], float, RelevanceModel] | None = None
    for values in itertools.product(*(grid[k] for k in names)):
        params = dict(zip(names, values))
        model = model_factory(**params).fit(Xtr, ytr)
        loss = grade_log_loss(model.predict_proba(Xva), yva)
        scores.append((params, loss))
        if best is None or loss < best[1]:
            best = (params, loss, model)
    assert best is not None  # the product of non-empty sequences has at least one point
    params, _, model = best
    if refit:
        model = model_factory(**params).fit(np.concatenate([np.asarray(Xtr), np.asarray(Xva)]),
                                            np.concatenate([np.asarray(ytr), np.asarray(yva)]))
    return TuningResult(model=model, params=params, scores=scores)
