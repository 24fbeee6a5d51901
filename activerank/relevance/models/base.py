"""The relevance-model interface: :class:`RelevanceModel` (scikit-learn conventions, the probability
floor of :mod:`activerank.relevance.models`), the input checks, :func:`apply_floor`,
:func:`grade_log_loss`, and the ``uniD`` baseline :class:`UniformRelevanceModel`."""

from __future__ import annotations

import inspect
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Self

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
        Uniform mixing weight, see :mod:`activerank.relevance.models`.
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
