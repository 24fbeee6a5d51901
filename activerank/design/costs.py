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

__all__ = ["BUDGET_UNITS", "QueryCosts", "COST_MODELS", "RemainingCosts", "budget_unit_factor", "document_costs",
           "judged_union", "query_costs"]

COST_MODELS = ("auto", "log_length", "constant", "uniform")
#: what a budget counts: the pool's mean query cost (the engine's unit), the cost model's own unit, judgments
BUDGET_UNITS = ("queries", "cost", "documents")


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
    unit : float or None
        Raw cost of one normalized unit when it is not the pool mean of
        ``raw`` (costs of changeable documents, in the unit of judging whole
        queries).
    """

    cost: np.ndarray
    raw: np.ndarray
    model: str
    unit: float | None = None

    @property
    def scale(self) -> float:
        """Raw cost of one normalized unit (the pool's mean raw query cost, unless ``unit`` is set)."""
        if self.unit is not None:
            return self.unit
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


def judged_union(rankings, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (query, document row) pair some ranking lists, once, sorted by (query, row).

    The documents judging a query means judging: the union of the rankings'
    entries, a row listed by several rankings (or twice) counted once.

    Parameters
    ----------
    rankings : sequence of Rankings
        Rankings of the same queries (already truncated at the cutoff).
    n_docs : int
        Number of document rows (every entry is below it).

    Returns
    -------
    query : ndarray of shape (n_union,), int64
        Pool index of the query, non-decreasing.
    rows : ndarray of shape (n_union,), int64
        Document row, increasing within each query.

    Notes
    -----
    Equal to decoding ``np.unique(query * n_docs + row)`` over all entries,
    which hashes or sorts every entry.  In a pool every document row belongs
    to one query, and rows are numbered query by query (``Pool.offsets``): then
    the union is the set of marked rows, already in (query, row) order, found in
    linear time.  Rows shared between queries, or numbered out of query order,
    fall back to a sort of the keys (the order of the result is the same).

    Examples
    --------
    >>> from activerank.ragged import Rankings
    >>> a = Rankings.from_list([[2, 0], [3]])
    >>> b = Rankings.from_list([[0, 1], [4, 3]])
    >>> [x.tolist() for x in judged_union([a, b], 5)]
    [[0, 0, 0, 1, 1], [0, 1, 2, 3, 4]]
    """
    rankings = list(rankings)
    m = rankings[0].n_queries
    if any(r.n_queries != m for r in rankings):
        raise ValueError("`rankings` must all cover the same queries.")
    owner = np.full(n_docs, -1, dtype=np.int64)
    queries = [r.query_index() for r in rankings]
    for r, q in zip(rankings, queries):
        owner[r.items] = q
    # a row listed by two queries keeps only one of them as owner: the other entry then disagrees
    if all(np.array_equal(owner[r.items], q) for r, q in zip(rankings, queries)):
        rows = np.flatnonzero(owner >= 0)
        query = owner[rows]
        if query.size < 2 or np.all(query[1:] >= query[:-1]):
            return query, rows
    keys = np.concatenate([q * n_docs + r.items for r, q in zip(rankings, queries)])
    keys.sort()
    keep = np.ones(keys.size, dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=keep[1:])
    keys = keys[keep]
    return keys // n_docs, keys % n_docs


def query_costs(doc_costs: np.ndarray, rankings: list[Rankings], *, k=None,
                model: str = "array", per_query: bool = False, scale: float | None = None,
                free: np.ndarray | None = None) -> QueryCosts:
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
    scale : float, optional
        Raw cost of one normalized unit (default: the pool mean of the raw
        costs, so normalized costs have mean 1).
    free : ndarray of shape (n_queries,), bool, optional
        Queries that need no judgment (cost 0; every other query must cost
        more than 0).

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
    free = np.zeros(m, dtype=bool) if free is None else np.asarray(free, dtype=bool)
    if per_query:
        raw = np.where(free, 0.0, 1.0)
    else:
        query, rows = judged_union([r.truncate(k) for r in rankings], doc_costs.size)
        # summed in (query, row) order: the same sums, bit for bit, as before this was sped up
        raw = np.bincount(query, doc_costs[rows], minlength=m)
    empty = np.flatnonzero((raw <= 0) & ~free)
    if empty.size:
        raise ValueError(
            f"every query must have a positive labeling cost; the query at pool position {empty[0]} "
            "ranks no document (drop it from the pool, or use costs='uniform')."
        )
    if scale is None:
        return QueryCosts(cost=raw / raw.mean(), raw=raw, model="uniform" if per_query else model)
    return QueryCosts(cost=raw / scale, raw=raw, model="uniform" if per_query else model, unit=float(scale))


class RemainingCosts:
    """Every query's documents to judge and their costs in budget units: what judging the rest of a query
    costs once some of its documents are judged (labels held cost nothing)."""

    def __init__(self, target, costs: QueryCosts, document_costs: np.ndarray):
        n_docs = document_costs.size
        keys = np.unique(np.concatenate([r.query_index() * n_docs + r.items for r in target.document_sets()]))
        self.rows = keys % n_docs
        self.query = keys // n_docs
        m = costs.cost.size
        self.size = np.bincount(self.query, minlength=m)
        if costs.model == "uniform":
            self.cost = costs.cost[self.query] / self.size[self.query]
        else:
            self.cost = document_costs[self.rows] / costs.scale
        self.full = costs.cost

    def remaining(self, labels: np.ndarray) -> np.ndarray:
        """Cost of judging each query's not-yet-judged documents (0 when complete)."""
        m = self.size.size
        open_ = labels[self.rows] < 0
        n_open = np.bincount(self.query, weights=open_, minlength=m)
        part = np.bincount(self.query, weights=self.cost * open_, minlength=m)
        return np.where(n_open == self.size, self.full, np.where(n_open == 0, 0.0, part))


def budget_unit_factor(unit: str, costs: QueryCosts, document_costs) -> float:
    """How many of ``unit`` one budget unit of the engine (the pool's mean query cost) is.

    ``"queries"``: 1. ``"cost"``: the raw cost of one unit (``costs.scale``). ``"documents"``: the judgments
    it buys, which needs every document to cost the same (a budget in judgments cannot be kept with unequal
    document costs, nor with a charge per query).

    Examples
    --------
    >>> qc = QueryCosts(cost=np.array([0.8, 1.2]), raw=np.array([4.0, 6.0]), model="constant")
    >>> budget_unit_factor("cost", qc, np.ones(10)), budget_unit_factor("documents", qc, np.ones(10))
    (5.0, 5.0)
    """
    if unit == "queries":
        return 1.0
    if unit == "cost":
        return float(costs.scale)
    dc = None if document_costs is None else np.asarray(document_costs, dtype=np.float64)
    if costs.model == "uniform" or dc is None or dc.size == 0:
        raise ValueError("`budget_unit`='documents' counts judgments, but the cost model charges per query "
                         "(costs='uniform'); use budget_unit='queries' or a per-document cost model.")
    if np.ptp(dc) > 1e-12 * float(np.abs(dc).max()):
        raise ValueError(f"`budget_unit`='documents' counts judgments, which needs every document to cost the same; "
                         f"the cost model {costs.model!r} gives costs from {dc.min():.4g} to {dc.max():.4g}: pass "
                         "costs='constant', or give the budget in the cost model's unit (budget_unit='cost').")
    return float(costs.scale) / float(dc[0])
