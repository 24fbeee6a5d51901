"""A pool that lives in a Dask DataFrame (or Parquet files), one row per (query, document).

Every partition holds whole queries: the rows of a query are adjacent rows of
one partition.  That is the only layout rule; it lets every per-query
quantity be computed inside a partition (:mod:`.query_table`) and the
documents of a set of queries be fetched by a filter (:func:`fetch_queries`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ColumnLabels", "DaskPool", "compute", "fetch_queries", "in_memory"]


@dataclass(frozen=True, eq=False)
class DaskPool:
    """A pool in a Dask DataFrame: which columns mean what.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        One row per (query, document), partitioned by whole queries.
    query : str, default "query_id"
        Query id column (or the frame's index name, e.g. after
        ``frame.set_index("query_id")``).
    document : str, default "doc_id"
        Document id column (what a labeler is asked about).
    features : sequence of str, optional
        Feature columns, the input of a relevance model passed as ``probs``.
    cost : str, optional
        Per-document labeling cost column (``costs="auto"`` then uses it).
    length : str, optional
        Document length column (``costs="log_length"``; ``"auto"`` uses it when
        there is no ``cost`` column).

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> df = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["a", "b", "c"], "score": [0.3, 0.9, 0.1],
    ...                    "p0": [0.5, 0.2, 0.9], "p1": [0.5, 0.8, 0.1]})
    >>> DaskPool(dd.from_pandas(df, npartitions=1, sort=False))
    DaskPool(npartitions=1, query='query_id', document='doc_id', cost=None, length=None)
    """

    frame: Any
    query: str = "query_id"
    document: str = "doc_id"
    features: tuple | None = None
    cost: str | None = None
    length: str | None = None

    def __post_init__(self):
        if self.features is not None and not isinstance(self.features, str):
            object.__setattr__(self, "features", tuple(self.features))

    @classmethod
    def from_parquet(cls, path, *, query: str = "query_id", document: str = "doc_id", features=None,
                     cost: str | None = None, length: str | None = None, **read_parquet) -> "DaskPool":
        """Open Parquet files, one partition per file (a file must hold whole queries).

        ``read_parquet`` options pass through to ``dask.dataframe.read_parquet``;
        ``split_row_groups`` defaults to False there, since splitting a file by row
        groups may cut a query in two.
        """
        import dask.dataframe as dd

        read_parquet.setdefault("split_row_groups", False)
        return cls(dd.read_parquet(path, **read_parquet), query, document, features, cost, length)

    @property
    def query_in_index(self) -> bool:
        return self.query not in self.frame.columns

    def __repr__(self) -> str:
        return (f"DaskPool(npartitions={self.frame.npartitions}, query={self.query!r}, document={self.document!r}, "
                f"cost={self.cost!r}, length={self.length!r})")


@dataclass(frozen=True)
class ColumnLabels:
    """A simulated annotator: the grades stored in a column of the pool.

    Pass it as ``labeler`` to :func:`activerank.distributed.estimate` or
    :func:`~activerank.distributed.compare`: the column is read with the drawn
    queries' documents only, and answers as
    :class:`~activerank.labelers.KnownLabels` does for an in-memory pool (what
    would the estimate have been with this budget?).

    Parameters
    ----------
    column : str
        Integer grades ``0 .. n_grades - 1``.
    """

    column: str

    def labeler(self, docs, query: str, in_index: bool, document: str):
        """A :class:`~activerank.labelers.KnownLabels` over the fetched rows ``docs``."""
        from .._validation import py_scalar
        from ..labelers import KnownLabels
        from ..pool import Pool

        grades = np.asarray(docs[self.column], dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(grades) | (grades != np.round(grades)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"labels column {self.column!r} must hold integer grades; query "
                f"{py_scalar(query_values(docs, query, in_index)[i])!r}, document "
                f"{py_scalar(np.asarray(docs[document])[i])!r} has {grades[i].item()!r}.")
        if len(docs) == 0:
            return KnownLabels([], [0], [])
        held = Pool.from_qids(query_values(docs, query, in_index))
        return KnownLabels(held.query_ids, held.offsets, grades.astype(np.int64), np.asarray(docs[document]))


def query_values(df, query: str, in_index: bool) -> np.ndarray:
    """The query id of every row of a pandas partition."""
    return np.asarray(df.index if in_index else df[query])


def _select_queries(df, query: str, in_index: bool, ids):
    return df[np.isin(query_values(df, query, in_index), ids)]


def compute(collection, *, desc: str, progress=None):
    """``collection.compute()``, with a progress bar on stderr (``progress`` as in :func:`.api.estimate`).

    The bar counts the tasks Dask's local schedulers finish, or the partitions
    a distributed ``Client`` (the default one) has computed.
    """
    from .._progress import progress_bar, progress_shown

    if not progress_shown(progress):
        return collection.compute()
    from dask.base import get_scheduler

    # the scheduler .compute() would use: a distributed Client's `get`, or a local scheduler's function
    client = getattr(get_scheduler(collections=[collection]), "__self__", None)
    if not hasattr(client, "persist"):
        client = None
    with progress_bar(desc=desc, unit="task" if client is None else "partition", enabled=True) as bar:
        if client is None:
            with _task_counter(bar):
                return collection.compute()
        from distributed import as_completed, futures_of

        persisted = client.persist(collection)
        futures = futures_of(persisted)
        bar.total = len(futures)
        for _ in as_completed(futures):
            bar.update(1)
        return persisted.compute()


def _task_counter(bar):
    """A Dask callback advancing ``bar`` by one per task a local scheduler finishes (dask imported here)."""
    from dask.callbacks import Callback

    class TaskCounter(Callback):
        def _start_state(self, dsk, state):
            bar.total = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))

        def _posttask(self, key, result, dsk, state, worker_id):
            bar.update(1)

    return TaskCounter()


def fetch_queries(pool: DaskPool, query_ids, columns=None, *, progress=None):
    """The rows of ``query_ids`` (pandas), in the frame's order: a filter by query id on every partition.

    Every partition is scanned (Dask may fuse or split a Parquet pool's partitions differently from one
    read to the next, so partition numbers are not kept); with ``columns``, a Parquet pool reads only
    those columns.

    Parameters
    ----------
    pool : DaskPool
    query_ids : array-like
        The queries to fetch.
    columns : sequence of str, optional
        Only these columns (plus the query id).
    progress : bool or None
        As in :func:`.api.estimate`.
    """
    ids = np.asarray(query_ids)
    frame = pool.frame
    if columns is not None:
        frame = frame[list(dict.fromkeys(([] if pool.query_in_index else [pool.query]) + list(columns)))]
    return compute(frame.map_partitions(_select_queries, pool.query, pool.query_in_index, ids, meta=frame._meta),
                   desc="fetching the drawn queries", progress=progress)


def in_memory(pool, *, scores, probs):
    """Collect a (small) pool into the in-memory inputs of :func:`activerank.estimate`.

    For checks and benchmarks: the same data, in the same order, as the
    distributed path sees it.

    Parameters
    ----------
    pool : DaskPool or dask.dataframe.DataFrame
    scores : sequence of str
        Score columns, one per ranker.
    probs : sequence of str
        Probability columns.

    Returns
    -------
    pool : activerank.Pool
        With ``doc_ids`` (and ``doc_length`` when the pool names a length column).
    scores : list of ndarray of shape (n_docs,)
    probs : ndarray of shape (n_docs, n_grades)
    costs : ndarray of shape (n_docs,) or None
        The cost column, when the pool names one.
    """
    from ..pool import Pool

    pool = dask_pool_iv(pool)
    scores = frame_columns_iv(pool, scores, "scores")
    probs = frame_columns_iv(pool, probs, "probs")
    df = pool.frame.compute()
    length = None if pool.length is None else df[pool.length].to_numpy(np.float64)
    mem = Pool.from_qids(query_values(df, pool.query, pool.query_in_index), doc_ids=df[pool.document].to_numpy(),
                         doc_length=length)
    costs = None if pool.cost is None else df[pool.cost].to_numpy(np.float64)
    return mem, [df[c].to_numpy(np.float64) for c in scores], df[probs].to_numpy(np.float64), costs


def dask_pool_iv(pool):
    """A :class:`~activerank.distributed.frame.DaskPool` or a Dask DataFrame (default column names) ->
    a DaskPool whose named columns all exist."""
    if not isinstance(pool, DaskPool):
        if type(pool).__module__.split(".")[0] == "pandas":
            raise TypeError("`pool` is a pandas DataFrame: wrap it with dask.dataframe.from_pandas(df, "
                            "npartitions=..., sort=False), or use activerank.estimate for an in-memory pool.")
        if not (hasattr(pool, "map_partitions") and hasattr(pool, "npartitions") and hasattr(pool, "columns")):
            raise TypeError("`pool` must be an activerank.distributed.DaskPool or a dask.dataframe.DataFrame; "
                            f"got {type(pool).__name__}.")
        pool = DaskPool(pool)
    for attr in ("query", "document", "cost", "length"):
        value = getattr(pool, attr)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"`DaskPool.{attr}` must be a column name (str); got {value!r}.")
    if pool.features is not None:
        frame_columns_iv(pool, pool.features, "DaskPool.features")
    names = [c for c in (pool.document, pool.cost, pool.length) if c is not None]
    frame_columns_iv(pool, names, "DaskPool")
    if pool.query not in pool.frame.columns and pool.query != pool.frame.index.name:
        raise ValueError(f"`DaskPool.query`: the frame has no column (or index) {pool.query!r}; "
                         f"columns: {list(pool.frame.columns)}.")
    return pool


def frame_columns_iv(pool, columns, name: str) -> list:
    """Column names of ``pool.frame``: one name or a sequence of names, every one present."""
    if isinstance(columns, str):
        columns = [columns]
    try:
        columns = list(columns)
    except TypeError:
        raise TypeError(f"`{name}` must be a column name or a list of column names; got {columns!r}.") from None
    have = list(pool.frame.columns)
    for c in columns:
        if not isinstance(c, str):
            raise TypeError(f"`{name}` must name columns by str; got {c!r}.")
        if c not in have:
            raise ValueError(f"`{name}`: the pool's frame has no column {c!r}; columns: {have}.")
    return columns
