"""Labeling costs lambda(x): what judging one query costs.

Judging a query means judging every document that some evaluated ranking
shows in its top ``k`` (for a comparison: the union of both rankings' top ``k``;
a shared document is judged once).  A query's cost is the sum of its documents'
costs.  Costs are normalized so the mean query cost over the pool is 1 -- the
unit of the labeling budget Lambda -- and the raw scale is kept for reporting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import doc_costs_iv
from ..ragged import Rankings

__all__ = ["QueryCosts", "COST_MODELS", "document_costs", "query_costs"]

COST_MODELS = ("auto", "log_length", "constant", "uniform")


@dataclass(frozen=True, eq=False)
class QueryCosts:
    """Per-query labeling costs.

    Attributes
    ----------
    cost : ndarray of shape (n_queries,)
        Normalized cost (mean over the pool = 1): the budget's unit.
    raw : ndarray of shape (n_queries,)
        Cost in the document-cost model's own unit.
    model : str
        Name of the cost model used.
    """

    cost: np.ndarray
    raw: np.ndarray
    model: str

    @property
    def scale(self) -> float:
        """Raw cost of one normalized unit (the pool's mean raw query cost)."""
        return float(self.raw.mean()) if self.raw.size else 1.0


def _doc_length(pool):
    return getattr(pool, "doc_length", None)


def document_costs(pool, n_docs: int, model="auto") -> tuple[np.ndarray, str]:
    """Per-document cost ``c(z)`` for a cost model.

    Parameters
    ----------
    pool : object
        Anything with an optional ``doc_length`` array (e.g. ``LetorData``).
    n_docs : int
        Number of document rows.
    model : {"auto", "log_length", "constant"} or array-like or callable
        ``"log_length"``: ``c(z) = log(max(len(z), 2))`` (Sawade et al.:
        cost logarithmic in document length; lengths <= 1 -- missing or
        relative lengths -- are floored so no document is free).
        ``"constant"``: 1 per document.  ``"auto"``: log-length when the pool
        has document lengths, else constant.  An array gives ``c(z)`` directly
        and a callable is called as ``model(pool)``.

    Returns
    -------
    costs : ndarray of shape (n_docs,)
    name : str
    """
    if callable(model):
        return doc_costs_iv(model(pool), n_docs, "costs (returned by the callable)"), "callable"
    if isinstance(model, str):
        if model == "auto":
            model = "log_length" if _doc_length(pool) is not None else "constant"
        if model == "constant":
            return np.ones(n_docs), model
        if model == "log_length":
            length = _doc_length(pool)
            if length is None:
                raise ValueError(
                    "`costs`='log_length' needs document lengths, but the pool has no `doc_length`; "
                    "load it with a length feature or pass per-document costs."
                )
            length = doc_costs_iv(length, n_docs, "doc_length", allow_zero=True)
            return np.log(np.maximum(length, 2.0)), model
        raise ValueError(
            f"`costs` must be one of {list(COST_MODELS)}, an array of per-document costs "
            f"or a callable; got {model!r}."
        )
    return doc_costs_iv(model, n_docs, "costs"), "array"


def query_costs(doc_costs: np.ndarray, rankings: list[Rankings], *, k=None,
                model: str = "array", per_query: bool = False) -> QueryCosts:
    """Cost of judging each query: sum of costs over the union of the rankings' top ``k``.

    Parameters
    ----------
    doc_costs : ndarray of shape (n_docs,)
        Per-document cost.
    rankings : list of Rankings
        One or more rankings of the same queries.
    k : int or None
        Cutoff: only the top ``k`` of each ranking must be judged.
    model : str
        Name recorded in the result.
    per_query : bool, default False
        Charge every query 1 instead (the paper's ``uniC``).

    Returns
    -------
    QueryCosts

    Examples
    --------
    >>> from activerank.ragged import Rankings
    >>> a = Rankings.from_list([[0, 1], [2]])
    >>> b = Rankings.from_list([[1, 3], [2]])
    >>> qc = query_costs(np.array([1.0, 2.0, 3.0, 4.0]), [a, b])
    >>> qc.raw.tolist(), qc.cost.tolist()
    ([7.0, 3.0], [1.4, 0.6])
    """
    m = rankings[0].n_queries
    if per_query:
        raw = np.ones(m)
    else:
        tops = [r.truncate(k) for r in rankings]
        n = doc_costs.size
        keys = np.concatenate([r.query_index() * n + r.items for r in tops])
        keys = np.unique(keys)
        raw = np.bincount(keys // n, doc_costs[keys % n], minlength=m)
    empty = np.flatnonzero(raw <= 0)
    if empty.size:
        raise ValueError(
            f"every query must have a positive labeling cost; the query at pool position {empty[0]} "
            "ranks no document (drop it from the pool, or use costs='uniform')."
        )
    return QueryCosts(cost=raw / raw.mean(), raw=raw, model="uniform" if per_query else model)
