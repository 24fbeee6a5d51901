"""The judgments a run held: what ``result.judgments`` is and what ``judgments=`` takes back.

A :class:`JudgmentSet` is a read-only mapping ``{query_id: {doc_id: grade}}``, so it goes back into
``judgments=`` of :func:`activerank.estimate`, :func:`~activerank.compare`, :func:`~activerank.compare_many`
and :func:`~activerank.rank_systems` (and wherever a dict of judgments is taken) as it is.  It holds every
label a run held when it ended -- those passed in and those bought -- because judgments already acquired
are never dropped: feeding ``result.judgments`` from call to call keeps all of them.  :attr:`JudgmentSet.bought`
is the part the call bought from its labeler.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping
from types import MappingProxyType

import numpy as np

from .._validation import py_scalar

__all__ = ["JudgmentSet"]


def _copy(judgments, name: str) -> dict:
    """``{query_id: {doc_id: grade}}`` as plain nested dicts of Python scalars, validated."""
    if not isinstance(judgments, Mapping):
        raise TypeError(f"`{name}` must be a mapping {{query_id: {{doc_id: grade}}}}; got {type(judgments).__name__}.")
    out: dict = {}
    for qid, docs in judgments.items():
        if not isinstance(docs, Mapping):
            raise TypeError(f"`{name}`: the judgments of query {qid!r} must be a mapping {{doc_id: grade}}; "
                            f"got {type(docs).__name__}.")
        inner = {}
        for doc, grade in docs.items():
            if isinstance(grade, (bool, np.bool_)) or not isinstance(grade, numbers.Integral) or grade < 0:
                raise ValueError(f"`{name}`: query {qid!r}, document {doc!r}: grade {grade!r} is not an integer >= 0.")
            inner[py_scalar(doc)] = int(grade)
        if inner:
            out[py_scalar(qid)] = inner
    return out


class JudgmentSet(Mapping):
    """Relevance judgments ``{query_id: {doc_id: grade}}``, read-only.

    ``len()`` and iteration are over queries, as for a dict; :attr:`n_labels`
    counts the judged documents.

    Parameters
    ----------
    judgments : mapping, optional
        ``{query_id: {doc_id: grade}}``.
    bought : mapping, optional
        The part of ``judgments`` bought by the call that returned this set.

    Examples
    --------
    >>> j = JudgmentSet({7: {"d1": 2, "d2": 0}, 9: {"d3": 1}}, bought={9: {"d3": 1}})
    >>> j
    JudgmentSet(2 queries, 3 labels, 1 bought)
    >>> len(j), j.n_labels, dict(j[7]), j.bought.to_dict()
    (2, 3, {'d1': 2, 'd2': 0}, {9: {'d3': 1}})
    >>> j.to_records()
    [(7, 'd1', 2), (7, 'd2', 0), (9, 'd3', 1)]
    """

    __slots__ = ("_data", "_bought")

    def __init__(self, judgments: Mapping | None = None, *, bought: Mapping | None = None):
        self._data = _copy({} if judgments is None else judgments, "judgments")
        self._bought = _copy({} if bought is None else bought, "bought")
        for qid, docs in self._bought.items():
            for doc, grade in docs.items():
                if self._data.get(qid, {}).get(doc) != grade:
                    raise ValueError(f"`bought`: query {qid!r}, document {doc!r} (grade {grade}) is not in "
                                     "`judgments` with that grade.")

    @classmethod
    def from_rows(cls, pool, labels: np.ndarray, bought: np.ndarray) -> "JudgmentSet":
        """The judged rows (``labels >= 0``) of ``pool``; ``bought`` marks rows bought by this call."""
        rows = np.flatnonzero(labels >= 0)
        qs = np.searchsorted(np.asarray(pool.offsets), rows, side="right") - 1
        data: dict = {}
        new: dict = {}
        for r, x, doc, b in zip(rows.tolist(), qs.tolist(), pool.doc_keys(rows), bought[rows].tolist()):
            qid = pool.query_key(x)
            data.setdefault(qid, {})[doc] = int(labels[r])
            if b:
                new.setdefault(qid, {})[doc] = int(labels[r])
        out = cls.__new__(cls)
        out._data, out._bought = data, new
        return out

    # ------------------------------------------------------------------ mapping

    def __getitem__(self, query_id) -> Mapping:
        return MappingProxyType(self._data[py_scalar(query_id)])

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        n = self.n_labels
        return (f"JudgmentSet({len(self)} quer{'y' if len(self) == 1 else 'ies'}, {n} label{'' if n == 1 else 's'}, "
                f"{_n(self._bought)} bought)")

    # ------------------------------------------------------------------ views

    @property
    def n_labels(self) -> int:
        """Number of judged (query, document) pairs."""
        return _n(self._data)

    @property
    def bought(self) -> "JudgmentSet":
        """The labels bought from the labeler by the call that returned this set."""
        return JudgmentSet(self._bought, bought=self._bought)

    def to_dict(self) -> dict:
        """A plain ``{query_id: {doc_id: grade}}`` (a copy)."""
        return {q: dict(d) for q, d in self._data.items()}

    def to_records(self) -> list:
        """``[(query_id, doc_id, grade), ...]``: JSON keeps the ids' types in this form, unlike dict keys."""
        return [(q, d, g) for q, docs in self._data.items() for d, g in docs.items()]

    def to_qrels(self, path) -> int:
        """Write a TREC qrels file (``qid 0 docid grade``), atomically; returns the number of lines."""
        from ..io.trec import write_qrels

        return write_qrels(path, self._data)

    def __or__(self, other) -> "JudgmentSet":
        """Union with another set or dict (a pair graded differently in the two is an error)."""
        if not isinstance(other, Mapping):
            return NotImplemented
        theirs = other._data if isinstance(other, JudgmentSet) else _copy(other, "other")
        data = self.to_dict()
        for qid, docs in theirs.items():
            mine = data.setdefault(qid, {})
            for doc, grade in docs.items():
                if mine.setdefault(doc, grade) != grade:
                    raise ValueError(f"conflicting grades for query {qid!r}, document {doc!r}: "
                                     f"{mine[doc]} and {grade}.")
        bought = {q: dict(d) for q, d in self._bought.items()}
        for qid, docs in (other._bought if isinstance(other, JudgmentSet) else {}).items():
            bought.setdefault(qid, {}).update(docs)
        return JudgmentSet(data, bought=bought)

    __ror__ = __or__


def _n(data: dict) -> int:
    return sum(len(d) for d in data.values())
