"""Relevance models around other libraries' learners: any scikit-learn classifier, LightGBM, mord's
ordered logit, and a random-forest regression turned into a grade distribution."""

from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Self

from .base import DEFAULT_FLOOR, RelevanceModel, _X_iv


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
    (:mod:`activerank.relevance.models`) is applied on top.

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
