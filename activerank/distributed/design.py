"""The driver's side: the design from the per-query table, then a pool of the drawn queries only.

:func:`table_design` turns the per-query table into the sampling design's
per-query parts -- ``p``, the normalized costs, the prediction (with the
pool means ``Theta`` that need every query) and ``q`` from the registered
method -- exactly as :func:`activerank.design.design.build_design` does for
an in-memory pool.  :func:`drawn_design` then builds a
:class:`~activerank.design.design.Design` over a :class:`~activerank.pool.Pool`
that lists every query of the pool but holds documents for the drawn ones
only (the others have none): the engine draws, labels and estimates on it
unchanged, and no undrawn query's documents ever reach the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..design.costs import QueryCosts
    from ..design.methods import Method
    from ..design.targets import Prediction

__all__ = ["TableDesign", "drawn_design", "table_design"]


@dataclass(frozen=True, eq=False)
class TableDesign:
    """The per-query parts of a design, from the per-query table: what a query-level design kind plans and
    draws from (:mod:`activerank.design.kinds.base`) before any document is fetched.

    Attributes
    ----------
    query_ids : ndarray of shape (n_queries,)
    n_docs : ndarray of shape (n_queries,)
    p, q : ndarray of shape (n_queries,)
    costs : QueryCosts
    prediction : Prediction
    n_grades : int
    method : Method
    defensive : float
    """

    query_ids: np.ndarray
    n_docs: np.ndarray
    p: np.ndarray
    q: np.ndarray
    costs: QueryCosts
    prediction: Prediction
    n_grades: int
    method: Method
    defensive: float

    @property
    def n_queries(self) -> int:
        return self.p.size

    @property
    def census(self) -> np.ndarray:
        """No exactly known stratum: a distributed comparison judges every document of a drawn query."""
        return np.zeros(0, dtype=np.int64)


def table_design(table, *, query: str, kind: str, method, cost_model: str, query_weights, defensive: float,
                 n_systems: int) -> TableDesign:
    """``p``, costs, prediction and ``q`` from the per-query table (what ``build_design`` computes in memory).

    Parameters
    ----------
    table : pandas.DataFrame
        The per-query table (:func:`activerank.distributed.query_table.query_table`).
    query : str
        Its query id column.
    kind : {"mean", "difference", "baseline", "ranking"}
    method : Method
    cost_model : str
        Name recorded in the costs.
    query_weights : None or array-like of shape (n_queries,)
        In the table's query order.
    defensive : float
    n_systems : int
    """
    from .._validation import query_weights_iv
    from ..design.costs import QueryCosts
    from ..design.targets import Prediction
    from .query_table import n_outputs

    if kind not in ("mean", "difference", "baseline", "ranking"):
        raise ValueError(f"`kind` must be 'mean', 'difference', 'baseline' or 'ranking'; got {kind!r}.")
    m = len(table)
    p = query_weights_iv(query_weights, m)
    t = n_outputs(kind, n_systems)
    mean = np.ascontiguousarray(table[[f"mean_{j}" for j in range(t)]].to_numpy(np.float64))
    variance = table["variance"].to_numpy(np.float64)
    system = np.ascontiguousarray(table[[f"system_{i}" for i in range(n_systems)]].to_numpy(np.float64))
    prediction = Prediction(mean, variance, _squared_error(kind, table, mean, variance, system, p), system,
                            *_output_variance(kind, table, variance, t))
    raw = table["raw_cost"].to_numpy(np.float64)
    costs = QueryCosts(cost=raw / raw.mean(), raw=raw, model=cost_model)
    q = method.distribution(prediction, costs.cost, p, defensive=defensive)
    return TableDesign(table[query].to_numpy(), table["n_docs"].to_numpy(np.int64), p, q, costs, prediction,
                       int(table["n_grades"].iloc[0]), method, defensive)


def _squared_error(kind: str, table, mean, variance, system, p) -> np.ndarray:
    """``sum_j E[(theta_j - Theta_j)^2 | x]`` with the pool means ``Theta_j`` (which need every query), in the
    terms the in-memory target sums: its contrast (mean, difference), every contrast (baseline), every pair of
    systems (ranking: ``(R_i - R_l)``, whose variances sum to the table's ``variance``)."""
    from ..design.sampling import expected_squared_error

    if kind in ("mean", "difference"):
        return expected_squared_error(mean[:, 0], variance, p)
    if kind == "baseline":
        out = expected_squared_error(mean[:, 0], table["output_0"].to_numpy(np.float64), p)
        for j in range(1, mean.shape[1]):
            out = out + expected_squared_error(mean[:, j], table[f"output_{j}"].to_numpy(np.float64), p)
        return out
    out = variance.copy()
    s = system.shape[1]
    for i in range(s):
        for j in range(i + 1, s):
            d = system[:, i] - system[:, j]
            out = out + (d - float(np.dot(p, d))) ** 2
    return out


def _output_variance(kind: str, table, variance, t: int) -> tuple:
    """``Prediction.output_variance`` as the in-memory target gives it (none for a ranking)."""
    if kind in ("mean", "difference"):
        return (variance[:, None],)
    if kind == "baseline":
        return (np.stack([table[f"output_{j}"].to_numpy(np.float64) for j in range(t)], axis=1),)
    return ()


def drawn_design(td: TableDesign, drawn: np.ndarray, docs, *, query: str, query_in_index: bool, document: str, scores, kind: str,
                 metric, names, cost_model: str, cost: str | None, length: str | None):
    """The design and pool the engine runs on: every query, the drawn queries' documents only.

    Parameters
    ----------
    td : TableDesign
    drawn : ndarray of int
        Pool positions of the drawn queries, ascending.
    docs : pandas.DataFrame
        The drawn queries' rows (:func:`activerank.distributed.frame.fetch_queries`), in the frame's order.
    query, query_in_index, document, cost, length : column names
    scores : sequence of str
        Score columns, one per ranking.
    kind, metric, names
        The target.
    cost_model : str

    Returns
    -------
    design : Design
    pool : Pool
    """
    import types

    from ..design.costs import document_costs
    from ..design.design import Design
    from ..design.targets import make_target
    from ..pool import Pool
    from ..ragged import offsets_from_lengths, rank_rows_by_scores
    from .frame import query_values

    qids = query_values(docs, query, query_in_index)
    starts = np.r_[0, np.flatnonzero(qids[1:] != qids[:-1]) + 1] if qids.size else np.zeros(0, dtype=np.int64)
    counts = np.diff(np.r_[starts, qids.size])
    # the fetched rows come in the frame's order, which is the table's: query blocks in position order.
    # The frame is read twice (table, then documents): a pool that changed in between is refused.
    if not (np.array_equal(qids[starts], td.query_ids[drawn]) and np.array_equal(counts, td.n_docs[drawn])):
        raise ValueError("the pool changed between reading the per-query table and fetching the drawn queries' "
                         f"documents ({counts.size} query blocks fetched for {drawn.size} drawn queries); "
                         "recompute on a stable frame.")
    lengths = np.zeros(td.n_queries, dtype=np.int64)
    lengths[drawn] = counts
    offsets = offsets_from_lengths(lengths)
    doc_length = None if length is None else docs[length].to_numpy(np.float64)
    pool = Pool(td.query_ids, offsets, docs[document].to_numpy(), doc_length)
    # tied scores ranked by document id, as in memory and in the per-query table (trec_eval's order)
    rankings = [rank_rows_by_scores(docs[c].to_numpy(np.float64), offsets, pool.doc_ids) for c in scores]
    target = make_target(kind, rankings, metric, names, offsets=offsets)
    if cost_model == "column":
        doc_costs, _ = document_costs(None, len(docs), docs[cost].to_numpy(np.float64))
    else:
        doc_costs, _ = document_costs(types.SimpleNamespace(doc_length=doc_length), len(docs),
                                      "constant" if cost_model == "uniform" else cost_model)
    design = Design(target, td.method.name, td.p, td.q, td.costs, td.prediction, td.n_grades, td.defensive,
                    doc_costs)
    return design, pool
