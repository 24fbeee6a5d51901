"""Labelers: where relevance judgments come from.

A labeler is any callable ``labeler(query_id, doc_ids) -> grades`` returning
one integer grade per requested document.  A labeler may also judge many
queries in one call: an object with ``label_batch(requests) -> list of grades``
(``requests`` a list of ``(query_id, doc_ids)``; :class:`BatchLabeler` wraps a
function) is asked once per batch the design needs -- one call for most
designs, one per judging step for ``prefix`` -- instead of once per query.
Built-ins read known labels (for simulations on LETOR data; they answer
batches) or wrap a Python function (a human-in-the-loop tool).  Every answer is
validated against the grade scale before it is used.
"""

from __future__ import annotations

import numbers
from typing import Callable, Protocol, Sequence

import numpy as np

__all__ = ["BatchLabeler", "CallableLabeler", "KnownLabels", "Labeler", "LabelingError", "check_grades"]


class Labeler(Protocol):
    def __call__(self, query_id, doc_ids: Sequence) -> Sequence[int]: ...


class LabelingError(ValueError):
    """A labeler failed or answered badly; nothing acquired before is lost.

    Attributes
    ----------
    judgments : dict
        ``{query_id: {doc_id: grade}}`` for every query judged before the failure.
    trace : pandas.DataFrame or None
        The draws made (and paid for) before the failure.
    """

    def __init__(self, message, *, judgments=None, trace=None):
        super().__init__(message)
        self.judgments = {} if judgments is None else judgments
        self.trace = trace


def check_grades(grades, query_id, doc_ids, n_grades: int) -> np.ndarray:
    """Validate one labeler answer: one integer grade in ``0..n_grades-1`` per document.

    A grade is a number: an integer or an integral float (``2.0``).  Strings
    (``"1"``) and booleans are rejected -- a labeler written in Python answers
    numbers; only the untyped text formats (CSV, qrels) parse integer text.
    """
    arr = np.asarray(grades, dtype=object) if not isinstance(grades, np.ndarray) else grades
    if arr.ndim != 1 or arr.size != len(doc_ids):
        raise ValueError(
            f"labeler returned {arr.size if arr.ndim == 1 else arr.shape} grades for query "
            f"{query_id!r}, which has {len(doc_ids)} documents to judge."
        )
    if arr.dtype.kind in "iuf":  # a numeric array: checked whole, no per-grade Python calls
        values, items = arr.astype(np.float64, copy=False), arr
    else:
        items = arr.tolist()
        values = np.array([_grade_value(g) for g in items], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values))
                         | (values < 0) | (values > n_grades - 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"labeler grades must be integers on the scale 0..{n_grades - 1}: query {query_id!r}, "
            f"document {doc_ids[i]!r} got {_shown(items[i])!r}."
        )
    return values.astype(np.int64)


def _shown(g):
    """A grade as the labeler gave it (a NumPy scalar as the Python number it holds)."""
    return g.item() if isinstance(g, np.generic) else g


def _grade_value(g) -> float:
    """The number a grade stands for (NaN for anything that is not a real number)."""
    if isinstance(g, (bool, np.bool_, str, bytes)) or not isinstance(g, numbers.Real):
        return np.nan
    return float(g)


class KnownLabels:
    """Answer from known labels (LETOR files, old qrels): for simulations.

    Parameters
    ----------
    query_ids : array-like of shape (n_queries,)
    offsets : array-like of shape (n_queries + 1,)
    labels : array-like of shape (n_docs,)
    doc_ids : array-like of shape (n_docs,), optional
        Document ids; when omitted, documents are addressed by their global row index.
    n_grades : int, optional
        Size of the grade scale the labels are on (``from_data`` takes the
        data's); the public functions refuse probabilities with another
        number of grade columns.

    Examples
    --------
    >>> lab = KnownLabels([7, 9], [0, 2, 3], [0, 2, 1])
    >>> lab(7, [1, 0]).tolist()
    [2, 0]
    >>> [g.tolist() for g in lab.label_batch([(7, [0]), (9, [2])])], lab.n_calls
    ([[0], [1]], 2)
    """

    def __init__(self, query_ids, offsets, labels, doc_ids=None, *, n_grades=None):
        if n_grades is not None and (isinstance(n_grades, bool) or not isinstance(n_grades, (int, np.integer))
                                     or n_grades < 2):
            raise ValueError(f"`n_grades` must be an integer >= 2 or None; got {n_grades!r}.")
        self.n_grades = None if n_grades is None else int(n_grades)
        self._labels = np.asarray(labels, dtype=np.int64)
        offsets = np.asarray(offsets, dtype=np.int64)
        self._rows = {qid: (int(offsets[i]), int(offsets[i + 1]))
                      for i, qid in enumerate(np.asarray(query_ids).tolist())}
        self._doc_ids = None if doc_ids is None else np.asarray(doc_ids, dtype=object)
        self.n_calls = 0

    @classmethod
    def from_data(cls, data) -> "KnownLabels":
        """From a labeled :class:`~activerank.io.letor.LetorData`."""
        if data.labels is None:
            raise ValueError("`data` has no labels; KnownLabels needs a labeled dataset.")
        return cls(data.query_ids, data.offsets, data.labels, getattr(data, "doc_ids", None),
                   n_grades=getattr(data, "n_grades", None))

    def __call__(self, query_id, doc_ids):
        self.n_calls += 1
        return self._answer(query_id, doc_ids)

    def label_batch(self, requests) -> list:
        """Grades for ``[(query_id, doc_ids), ...]`` in one call."""
        self.n_calls += 1
        return [self._answer(qid, docs) for qid, docs in requests]

    def _answer(self, query_id, doc_ids):
        key = query_id.item() if isinstance(query_id, np.generic) else query_id
        if key not in self._rows:
            raise ValueError(f"KnownLabels has no query with id {query_id!r}.")
        lo, hi = self._rows[key]
        if self._doc_ids is None:
            rows = np.asarray(doc_ids, dtype=np.int64)
            bad = (rows < lo) | (rows >= hi)
        else:
            index = {d: lo + j for j, d in enumerate(self._doc_ids[lo:hi].tolist())}
            rows = np.array([index.get(d, -1) for d in doc_ids], dtype=np.int64)
            bad = rows < 0
        if bad.any():
            d = list(doc_ids)[int(np.flatnonzero(bad)[0])]
            raise ValueError(f"KnownLabels: query {query_id!r} has no document {d!r}.")
        return self._labels[rows]


class CallableLabeler:
    """Wrap ``fn(query_id, doc_ids) -> grades`` (e.g. a UI that asks a person)."""

    def __init__(self, fn: Callable):
        if not callable(fn):
            raise TypeError(f"`fn` must be callable, got {type(fn).__name__}.")
        self.fn = fn

    def __call__(self, query_id, doc_ids):
        return self.fn(query_id, doc_ids)


class BatchLabeler:
    """Wrap ``fn(requests) -> list of grades`` that judges many queries in one call.

    ``requests`` is a list of ``(query_id, doc_ids)``; ``fn`` returns one grade sequence per request, in
    order.  The engine sends every batch its design needs in one call (:mod:`activerank.labelers`).

    Examples
    --------
    >>> lab = BatchLabeler(lambda reqs: [[1] * len(docs) for _, docs in reqs])
    >>> lab.label_batch([(7, ["a", "b"]), (9, ["c"])])
    [[1, 1], [1]]
    >>> lab(7, ["a"])
    [1]
    """

    def __init__(self, fn: Callable):
        if not callable(fn):
            raise TypeError(f"`fn` must be callable, got {type(fn).__name__}.")
        self.fn = fn

    def label_batch(self, requests) -> list:
        return list(self.fn(list(requests)))

    def __call__(self, query_id, doc_ids):
        return self.label_batch([(query_id, doc_ids)])[0]
