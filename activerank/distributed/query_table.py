"""The per-query table: what the driver needs of a pool, computed partition by partition.

For every query: its id, the partition holding it (numbered as Dask ran the
pass: a Parquet pool's files may be fused into fewer partitions), its number of documents,
its raw labeling cost (the union of the rankings' top-k documents, in the
cost model's unit) and the relevance model's predictions for the target
(per-query means of the contrasts, their summed variance, every ranking's
predicted mean metric).  A partition's rows go through exactly the kernels
of the in-memory path -- :func:`activerank.design.targets.make_target` and
``Target.predict`` (the exact moments of :mod:`activerank.metrics.moments`),
:func:`activerank.design.costs.document_costs` and
:func:`activerank.design.costs.query_costs` -- so the table's numbers are
those of the in-memory design, query by query.

What needs the whole pool (the pool means ``Theta``, the cost
normalization, ``p``, ``q``) is left to the driver
(:func:`activerank.distributed.design.table_design`).
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .frame import DaskPool, compute, query_values

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics.registry import Metric

__all__ = ["TableSpec", "n_outputs", "partition_inputs", "partition_table", "query_table", "table_columns"]


@dataclass(frozen=True)
class TableSpec:
    """What a partition needs to know to compute its rows of the table (shipped to the workers).

    Attributes
    ----------
    kind : {"mean", "difference"}
        The target.
    metric : Metric
    scores : tuple of str
        Score columns, one per ranking.
    probs : tuple of str or None
        Probability columns (``None``: ``model`` predicts them from ``features``).
    model : object or None
        Fitted relevance model with ``predict_proba``.
    features : tuple of str or None
    cost_model : {"column", "log_length", "constant", "uniform"}
    query : str
        Query id column (or index name).
    query_in_index : bool
    cost, length : str or None
        Cost and length columns.
    uniform : bool
        Moments under uniform grade probabilities (methods with ``relevance="uniform"``).
    document : str or None
        Document id column: tied scores are ranked by it, as in memory (trec_eval's order).
    """

    kind: str
    metric: Metric
    scores: tuple
    probs: tuple | None
    model: Any
    features: tuple | None
    cost_model: str
    query: str
    query_in_index: bool
    cost: str | None = None
    length: str | None = None
    uniform: bool = False
    document: str | None = None


def n_outputs(kind: str, n_systems: int) -> int:
    """Contrasts of a target: one (mean, difference), every candidate (baseline), every system (ranking)."""
    return {"mean": 1, "difference": 1, "baseline": n_systems - 1}.get(kind, n_systems)


def table_columns(query: str, n_outputs: int, n_systems: int, *, output_variance: bool = False) -> list:
    """Columns of the per-query table (``output_<j>``: every contrast's variance, baseline targets)."""
    return ([query, "partition", "n_docs", "n_grades", "raw_cost"] + [f"mean_{j}" for j in range(n_outputs)]
            + ["variance"] + [f"system_{i}" for i in range(n_systems)]
            + ([f"output_{j}" for j in range(n_outputs)] if output_variance else []))


def _meta(frame_meta, spec: TableSpec):
    import pandas as pd

    qdtype = frame_meta.index.dtype if spec.query_in_index else frame_meta[spec.query].dtype
    cols = table_columns(spec.query, n_outputs(spec.kind, len(spec.scores)), len(spec.scores),
                         output_variance=spec.kind == "baseline")
    dtypes: dict[str, Any] = {c: np.float64 for c in cols}
    # small integer columns: the driver holds this table for millions of queries
    dtypes.update({spec.query: qdtype, "partition": np.int32, "n_docs": np.int32, "n_grades": np.int16})
    return pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in cols})


def _grouped(qids: np.ndarray, part: int):
    """Offsets of a partition's queries; the rows of a query must be adjacent."""
    from .._validation import py_scalar
    from ..pool import Pool

    missing = np.flatnonzero(pd_isna(qids))
    if missing.size:
        raise ValueError(f"partition {part}: row {missing[0]} has no query id (null).")
    starts = np.r_[0, np.flatnonzero(qids[1:] != qids[:-1]) + 1]
    ids = qids[starts]
    if np.unique(ids).size != ids.size:
        uniq, counts = np.unique(ids, return_counts=True)
        raise ValueError(
            f"partition {part}: the rows of query {py_scalar(uniq[counts > 1][0])!r} are not adjacent; every "
            "query's documents must be consecutive rows of one partition (sort each partition by query).")
    return Pool(ids, np.r_[starts, qids.size].astype(np.int64))


def pd_isna(values: np.ndarray) -> np.ndarray:
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


def _probs(df, spec: TableSpec) -> np.ndarray:
    from .._validation import probs_iv

    if spec.probs is not None:
        return probs_iv(df[list(spec.probs)].to_numpy(np.float64), name=f"probs columns {list(spec.probs)}")
    X = df[list(spec.features or ())].to_numpy(np.float64)
    return probs_iv(spec.model.predict_proba(X), name="probs (the model's predict_proba)", n_rows=len(df))


def _raw_costs(df, spec: TableSpec, target, n: int) -> np.ndarray:
    from ..design.costs import document_costs, query_costs

    if spec.cost_model == "column":
        model = df[spec.cost].to_numpy(np.float64)
        carrier = None
    else:
        model = "constant" if spec.cost_model == "uniform" else spec.cost_model
        length = None if spec.length is None else df[spec.length].to_numpy(np.float64)
        carrier = types.SimpleNamespace(doc_length=length)
    doc_costs, _ = document_costs(carrier, n, model)
    return query_costs(doc_costs, target.document_sets(), per_query=spec.cost_model == "uniform").raw


def partition_inputs(df, spec: TableSpec, part: int):
    """A partition's queries (with document ids), probabilities and target: the in-memory validators'."""
    from .._validation import scores_iv
    from ..design.targets import make_target

    grouped = _grouped(query_values(df, spec.query, spec.query_in_index), part)
    if spec.document is not None:  # tied scores are ranked by document id, as in memory
        grouped = type(grouped)(grouped.query_ids, grouped.offsets, df[spec.document].to_numpy())
    P = _probs(df, spec)
    rankings = [scores_iv(df[c].to_numpy(), grouped, f"scores column {c!r}") for c in spec.scores]
    return grouped, P, make_target(spec.kind, rankings, spec.metric, offsets=grouped.offsets)


def partition_table(df, spec: TableSpec, partition_info=None):
    """Rows of the per-query table for one pandas partition (called by ``map_partitions``).

    Parameters
    ----------
    df : pandas.DataFrame
        One partition: whole queries, each query's rows adjacent.
    spec : TableSpec
    partition_info : dict, optional
        Given by Dask (``{"number": i, ...}``).

    Returns
    -------
    pandas.DataFrame
        Columns :func:`table_columns`, one row per query in partition order.
    """
    import pandas as pd

    part = -1 if partition_info is None else int(partition_info["number"])
    if len(df) == 0:
        return _meta(df, spec)
    try:
        grouped, P, target = partition_inputs(df, spec, part)
        if spec.uniform:
            P = np.full_like(P, 1.0 / P.shape[1])
        m = grouped.n_queries
        # p enters Prediction only through sq_error, which needs the whole pool: recomputed on the driver
        pred = target.predict(P, np.full(m, 1.0 / m))
        raw = _raw_costs(df, spec, target, len(df))
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if not msg.startswith("partition "):
            msg = f"partition {part} (rows and queries counted within it): {msg}"
        raise type(exc)(msg) from None
    cols = {spec.query: grouped.query_ids, "partition": np.full(m, part, dtype=np.int32),
            "n_docs": np.diff(grouped.offsets).astype(np.int32), "n_grades": np.full(m, P.shape[1], dtype=np.int16),
            "raw_cost": raw}
    cols.update({f"mean_{j}": pred.mean[:, j] for j in range(pred.mean.shape[1])})
    cols["variance"] = pred.variance
    system = pred.system_mean
    assert system is not None  # every target predicts its systems' means
    cols.update({f"system_{i}": system[:, i] for i in range(system.shape[1])})
    if spec.kind == "baseline":  # the per-contrast variances enter the pool's squared errors one by one
        assert pred.output_variance is not None
        cols.update({f"output_{j}": pred.output_variance[:, j] for j in range(pred.mean.shape[1])})
    return pd.DataFrame(cols)


def query_table(pool: DaskPool, spec: TableSpec, *, progress=None):
    """The per-query table of the whole pool (pandas, one row per query, in the frame's order).

    ``progress`` as in :func:`.api.estimate`.

    Raises
    ------
    ValueError
        A query's rows are split across partitions (or not adjacent within one),
        or any per-document input is invalid (named by partition and row).
    """
    import pandas as pd

    from .._validation import py_scalar

    meta = _meta(pool.frame._meta, spec)
    # only the columns the kernels read: a Parquet pool reads no others (document ids only to rank ties)
    needed = ([] if spec.query_in_index else [spec.query]) + list(spec.scores) + list(spec.probs or spec.features or ())
    needed += [c for c in (spec.cost, spec.length, spec.document) if c is not None]
    frame = pool.frame[list(dict.fromkeys(needed))]
    table = compute(frame.map_partitions(partition_table, spec, meta=meta), desc="per-query table",
                    progress=progress)
    table.index = pd.RangeIndex(len(table))  # not reset_index: no copy of a table of millions of queries
    if len(table) == 0:
        raise ValueError("`pool` holds no rows: the frame is empty.")
    dup = table[pool.query].duplicated(keep=False).to_numpy()
    if dup.any():
        first = table[pool.query].to_numpy()[np.flatnonzero(dup)[0]]
        parts = sorted(set(table["partition"].to_numpy()[dup & (table[pool.query].to_numpy() == first)].tolist()))
        raise ValueError(
            f"query {py_scalar(first)!r} is split across partitions {parts}: a pool must be partitioned by whole "
            "queries (e.g. frame.set_index(query_column), or Parquet files written grouped by query).")
    grades = np.unique(table["n_grades"].to_numpy())
    if grades.size > 1:
        raise ValueError(f"`probs` must have the same number of grades in every partition; got {grades.tolist()}.")
    return table
