"""Rankers: per-document scores -> per-query rankings, plus the "index update" transform.

:func:`rank_by_scores` sorts every query's documents by descending score,
ties broken as ``trec_eval`` does (document id descending), the one tie rule of
every entry point of activerank.  Scores may come
from a relevance model (:func:`expected_gain_scores`,
:func:`expected_grade_scores`), a LightGBM lambdarank model
(:func:`fit_lambdarank_ranker`) or a linear model (:func:`fit_linear_ranker`);
:class:`ScoreRanker` wraps any ``X -> scores`` function.
:func:`remove_fraction` simulates an index update by deleting a random
fraction of every result list.
"""

from __future__ import annotations

import numbers
from typing import Callable

import numpy as np

from .._validation import offsets_iv
from ..ragged import Rankings, offsets_from_lengths, rank_rows_by_scores, segment_ids

__all__ = [
    "rank_by_scores",
    "expected_gain_scores",
    "expected_grade_scores",
    "remove_fraction",
    "ScoreRanker",
    "model_ranker",
    "fit_lambdarank_ranker",
    "fit_linear_ranker",
]


def _offsets_iv(offsets, n_rows=None, *, name="offsets") -> np.ndarray:
    """Offsets, or an object carrying them (a pool, LETOR data), validated by :func:`offsets_iv`."""
    if hasattr(offsets, "offsets") and not isinstance(offsets, np.ndarray):
        offsets = offsets.offsets
    return offsets_iv(offsets, n_rows, name=name)


def rank_by_scores(scores, offsets, *, query_ids=None, doc_ids=None) -> Rankings:
    """Rank every query's rows by descending score, ties as ``trec_eval`` orders them.

    Equal scores are ordered by document id, descending, comparing the ids as
    text (``strcmp`` order, as ``trec_eval``, ``gdeval`` and ``ir_measures``'
    trec_eval provider do), so metric values on runs with ties match theirs.
    Without document ids the row index is the id (compared as a number: the
    higher row first); rows with equal ids are ordered the same way.  Every
    entry point of activerank that takes scores ranks them with this rule.

    Parameters
    ----------
    scores : array-like of shape (n_docs,)
        Finite or infinite floats; NaN is rejected.
    offsets : array-like of shape (n_queries + 1,), Pool or LetorData
        Query ``q`` owns rows ``offsets[q]:offsets[q + 1]``.  A pool or
        :class:`~activerank.io.letor.LetorData` is accepted: its offsets, query
        ids and document ids are used.
    query_ids : array-like of shape (n_queries,), optional
        Raw query ids, only used to name a query in error messages.
    doc_ids : array-like of shape (n_docs,), optional
        Document id of every row; default: the pool's ``doc_ids`` when
        ``offsets`` is a pool that has them, else the row indices.

    Returns
    -------
    Rankings
        ``items`` are global row indices, best first per query.

    Examples
    --------
    >>> r = rank_by_scores([0.1, 0.9, 0.5, 2.0, 2.0], [0, 3, 5])
    >>> r.to_list()[0].tolist(), r.to_list()[1].tolist()   # the tie of rows 3 and 4: higher row first
    ([1, 2, 0], [4, 3])
    >>> rank_by_scores([2.0, 2.0, 1.0], [0, 3], doc_ids=["d10", "d9", "d2"]).items.tolist()
    [1, 0, 2]
    """
    is_pool = hasattr(offsets, "offsets") and not isinstance(offsets, np.ndarray)
    if query_ids is None and is_pool:
        query_ids = getattr(offsets, "query_ids", None)
    if doc_ids is None and is_pool:
        doc_ids = getattr(offsets, "doc_ids", None)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"`scores` must be 1-d (n_docs,); got shape {s.shape}.")
    off = _offsets_iv(offsets, s.size)
    nan = np.flatnonzero(np.isnan(s))
    if nan.size:
        qi = int(segment_ids(off)[nan[0]])
        name = f"query {qi}" + (f" (qid {np.asarray(query_ids)[qi]})" if query_ids is not None else "")
        raise ValueError(f"`scores` contain NaN: {name}, row {nan[0]}.")
    if doc_ids is not None:
        doc_ids = np.asarray(doc_ids, dtype=object).reshape(-1)
        if doc_ids.size != s.size:
            raise ValueError(f"`doc_ids` must have one entry per row ({s.size}); got {doc_ids.size}.")
    return rank_rows_by_scores(s, off, doc_ids)


def _probs_iv(probs) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"`probs` must have shape (n_docs, n_grades >= 2); got shape {p.shape}.")
    return p


def expected_gain_scores(probs) -> np.ndarray:
    """Expected DCG gain ``sum_y (2^y - 1) p(y)`` of every row.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)

    Returns
    -------
    ndarray of shape (n_docs,)

    Examples
    --------
    >>> expected_gain_scores([[0.5, 0.25, 0.25]]).tolist()
    [1.0]
    """
    p = _probs_iv(probs)
    return p @ (np.exp2(np.arange(p.shape[1])) - 1.0)


def expected_grade_scores(probs) -> np.ndarray:
    """Expected grade ``sum_y y p(y)`` of every row.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)

    Returns
    -------
    ndarray of shape (n_docs,)

    Examples
    --------
    >>> expected_grade_scores([[0.5, 0.25, 0.25]]).tolist()
    [0.75]
    """
    p = _probs_iv(probs)
    return p @ np.arange(p.shape[1], dtype=np.float64)


def remove_fraction(rankings, fraction: float, rng=None) -> Rankings:
    """Index update: delete a random fraction of every result list.

    Query ``q`` with ``n`` ranked items loses ``min(floor(fraction * n + 0.5),
    n - 1)`` of them, chosen uniformly at random without replacement (so every
    non-empty list keeps at least one item); the survivors keep their relative
    order.  Empty lists stay empty.

    Parameters
    ----------
    rankings : Rankings or sequence of sequences
    fraction : float in [0, 1]
    rng : numpy.random.Generator, int or None
        Passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    Rankings

    Examples
    --------
    >>> r = Rankings.from_list([[0, 1, 2, 3], [4, 5], [6]])
    >>> out = remove_fraction(r, 0.5, rng=0)
    >>> out.lengths.tolist()
    [2, 1, 1]
    """
    if not isinstance(rankings, Rankings):
        rankings = Rankings.from_list(rankings)
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0.0 <= fraction <= 1.0:
        raise ValueError(f"`fraction` must be a number in [0, 1]; got {fraction!r}.")
    gen = np.random.default_rng(rng)
    lengths = rankings.lengths
    n_remove = np.minimum(np.floor(fraction * lengths + 0.5).astype(np.int64), np.maximum(lengths - 1, 0))
    q = rankings.query_index()
    keys = gen.random(rankings.items.size)
    order = np.lexsort((keys, q))  # random permutation within each query
    rank_in_query = np.empty_like(order)
    rank_in_query[order] = rankings.positions()
    keep = rank_in_query >= n_remove[q]
    return Rankings(rankings.items[keep], offsets_from_lengths(lengths - n_remove))


class ScoreRanker:
    """A ranking function defined by a per-document score ``score_fn(X) -> (n_docs,)``.

    Parameters
    ----------
    score_fn : callable
        Maps a feature matrix ``(n_docs, n_features)`` to scores ``(n_docs,)``.
    name : str, optional
        Label for reports.

    Examples
    --------
    >>> import numpy as np
    >>> rk = ScoreRanker(lambda X: X[:, 0], name="f1")
    >>> rk.rank(np.array([[0.1], [0.7], [0.3]]), [0, 3]).items.tolist()
    [1, 2, 0]
    """

    def __init__(self, score_fn: Callable[[np.ndarray], np.ndarray], *, name: str | None = None):
        if not callable(score_fn):
            raise TypeError(f"`score_fn` must be callable; got {type(score_fn).__name__}.")
        self.score_fn = score_fn
        self.name = name or getattr(score_fn, "__name__", "score")

    def scores(self, X) -> np.ndarray:
        """Scores of every row, shape ``(n_docs,)``."""
        X = X.X if hasattr(X, "offsets") and hasattr(X, "X") else X
        s = np.asarray(self.score_fn(np.asarray(X, dtype=np.float64)), dtype=np.float64).reshape(-1)
        if s.size != np.shape(X)[0]:
            raise ValueError(f"`score_fn` returned {s.size} scores for {np.shape(X)[0]} rows.")
        return s

    def rank(self, X, offsets=None) -> Rankings:
        """Rankings of every query.

        Parameters
        ----------
        X : LetorData or array-like of shape (n_docs, n_features)
        offsets : array-like of shape (n_queries + 1,)
            Required when ``X`` is an array.

        Returns
        -------
        Rankings
        """
        if hasattr(X, "offsets") and hasattr(X, "X"):
            return rank_by_scores(self.scores(X.X), X)
        if offsets is None:
            raise ValueError("`offsets` is required when `X` is an array (pass a LetorData otherwise).")
        return rank_by_scores(self.scores(X), offsets)

    def __repr__(self):
        return f"ScoreRanker(name={self.name!r})"


def model_ranker(model, *, score: str = "expected_gain", name: str | None = None) -> ScoreRanker:
    """Ranker that orders documents by a fitted relevance model's expected gain or grade.

    Parameters
    ----------
    model : RelevanceModel
        Anything with ``predict_proba(X) -> (n_docs, n_grades)``.
    score : {"expected_gain", "expected_grade"}
    name : str, optional

    Returns
    -------
    ScoreRanker

    Examples
    --------
    >>> from activerank.relevance.models import UniformRelevanceModel
    >>> rk = model_ranker(UniformRelevanceModel(3))
    >>> rk.rank(np.zeros((3, 1)), [0, 3]).items.tolist()   # all tied: trec_eval's order, higher row first
    [2, 1, 0]
    """
    fns = {"expected_gain": expected_gain_scores, "expected_grade": expected_grade_scores}
    if score not in fns:
        raise ValueError(f"`score` must be one of {sorted(fns)}; got {score!r}.")
    if not hasattr(model, "predict_proba"):
        raise TypeError(f"`model` must have predict_proba; got {type(model).__name__}.")
    f = fns[score]
    return ScoreRanker(lambda X: f(model.predict_proba(X)), name=name or f"{type(model).__name__}:{score}")


def _labeled(train, name="train"):
    if not (hasattr(train, "X") and hasattr(train, "offsets")):
        raise TypeError(f"`{name}` must be a LetorData; got {type(train).__name__}.")
    if train.labels is None:
        raise ValueError(f"`{name}` has no labels; a ranker needs labeled training data.")
    return train


def fit_lambdarank_ranker(
    train,
    *,
    n_estimators: int = 300,
    learning_rate: float = 0.05,
    num_leaves: int = 15,
    min_child_samples: int = 20,
    random_state: int = 0,
    n_jobs: int = 1,
    **params,
) -> ScoreRanker:
    """Fit a LightGBM ``LGBMRanker`` (lambdarank objective) and wrap it.

    Parameters
    ----------
    train : LetorData
        Labeled, query-grouped training data (``lengths`` give the groups).
    n_estimators, learning_rate, num_leaves, min_child_samples : LightGBM parameters
    random_state : int, default 0
    n_jobs : int, default 1
    **params
        Passed to ``LGBMRanker`` (e.g. ``label_gain``).

    Returns
    -------
    ScoreRanker
        Its ``estimator`` attribute holds the fitted ``LGBMRanker``.

    Examples
    --------
    >>> from activerank.io.letor import load_sample
    >>> rk = fit_lambdarank_ranker(load_sample("train"), n_estimators=10)
    >>> rk.rank(load_sample()).n_queries
    30
    """
    import warnings

    from lightgbm import LGBMRanker

    train = _labeled(train)
    est = LGBMRanker(
        objective="lambdarank",
        n_estimators=n_estimators,
        learning_rate=learning_rate,
        num_leaves=num_leaves,
        min_child_samples=min_child_samples,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=-1,
        deterministic=True,
        force_col_wise=True,
        **params,
    )
    est.fit(train.X, train.labels, group=train.lengths)

    def score(X):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return est.predict(X)

    rk = ScoreRanker(score, name="lambdarank")
    rk.estimator = est
    return rk


def _within_query_pairs(offsets, labels, max_pairs, gen):
    """Row pairs (i, j) of the same query with labels[i] > labels[j], subsampled."""
    lengths = np.diff(offsets)
    q = segment_ids(offsets)
    counts = lengths[q]  # each row pairs with every row of its query
    i = np.repeat(np.arange(q.size), counts)
    start = np.repeat(offsets_from_lengths(counts)[:-1], counts)
    j = offsets[q[i]] + (np.arange(i.size) - start)
    keep = labels[i] > labels[j]
    i, j = i[keep], j[keep]
    if max_pairs is not None and i.size > max_pairs:
        sel = np.sort(gen.choice(i.size, size=max_pairs, replace=False))
        i, j = i[sel], j[sel]
    return i, j


def fit_linear_ranker(
    train,
    *,
    method: str = "ranksvm",
    C: float = 1.0,
    max_pairs: int | None = 200_000,
    random_state: int = 0,
) -> ScoreRanker:
    """Fit a linear scoring function on standardized features.

    Parameters
    ----------
    train : LetorData
        Labeled, query-grouped training data.
    method : {"ranksvm", "logistic"}, default "ranksvm"
        ``"ranksvm"``: a linear SVM (``LinearSVC``, no intercept) on
        within-query feature differences ``x_i - x_j`` of pairs with
        ``y_i > y_j`` (half of them sign-flipped to balance the classes),
        i.e. a RankSVM.  ``"logistic"``: ``LogisticRegression`` on the binary
        target ``y > 0``, scored by its decision function.
    C : float, default 1.0
        Inverse regularization strength.
    max_pairs : int or None, default 200000
        Random subsample of preference pairs (``"ranksvm"``; bounds memory).
    random_state : int, default 0

    Returns
    -------
    ScoreRanker
        ``coef_`` (on the original feature scale) and ``intercept_`` attributes
        give the linear function.

    Examples
    --------
    >>> from activerank.io.letor import load_sample
    >>> rk = fit_linear_ranker(load_sample("train"), method="logistic")
    >>> rk.rank(load_sample()).items.size
    607
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    train = _labeled(train)
    if method not in ("ranksvm", "logistic"):
        raise ValueError(f"`method` must be 'ranksvm' or 'logistic'; got {method!r}.")
    if not isinstance(C, numbers.Real) or not C > 0:
        raise ValueError(f"`C` must be a positive number; got {C!r}.")
    mean = train.X.mean(axis=0)
    sd = train.X.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = (train.X - mean) / sd
    gen = np.random.default_rng(random_state)
    if method == "logistic":
        target = (train.labels > 0).astype(int)
        if np.unique(target).size < 2:
            raise ValueError("`train` labels are all 0 or all > 0; the logistic ranker needs both.")
        est = LogisticRegression(C=C, max_iter=2000, random_state=random_state).fit(Z, target)
        w, b = est.coef_.ravel(), float(est.intercept_[0])
    else:
        i, j = _within_query_pairs(train.offsets, train.labels, max_pairs, gen)
        if i.size == 0:
            raise ValueError("`train` has no query with two different labels; RankSVM needs preference pairs.")
        D = Z[i] - Z[j]
        sign = np.where(gen.random(i.size) < 0.5, 1.0, -1.0)
        est = LinearSVC(C=C, fit_intercept=False, dual=False, max_iter=5000, random_state=random_state)
        est.fit(D * sign[:, None], (sign > 0).astype(int))
        w, b = est.coef_.ravel(), 0.0
    coef = w / sd
    intercept = b - float(mean @ coef)
    rk = ScoreRanker(lambda X: X @ coef + intercept, name=f"linear_{method}")
    rk.coef_ = coef
    rk.intercept_ = intercept
    rk.estimator = est
    return rk
