"""The unlabeled query pool: which document rows belong to which query.

A pool is what activerank samples from: queries (with their ids) and their
candidate documents, stored query by query as contiguous rows (CSR layout,
``offsets``).  Any object with ``offsets`` and ``query_ids`` -- such as
:class:`~activerank.io.letor.LetorData` -- can be passed where a pool is
expected; the public functions standardize it to a :class:`Pool`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import _unique_ids_iv, distinct_docs_iv, offsets_iv, py_scalar

__all__ = ["Pool", "pool_iv"]


@dataclass(frozen=True, eq=False)
class Pool:
    """The unlabeled query pool.

    Attributes
    ----------
    query_ids : ndarray of shape (n_queries,)
        Query ids (unique), in pool order.
    offsets : ndarray of shape (n_queries + 1,), int64
        Query ``x`` owns document rows ``offsets[x]:offsets[x + 1]``.
    doc_ids : ndarray of shape (n_docs,) or None
        Document ids, used when asking a labeler; without them documents are
        named by their global row number.
    doc_length : ndarray of shape (n_docs,) or None
        Document lengths, for the log-length cost model.

    Examples
    --------
    >>> pool = Pool.from_qids([7, 7, 9])
    >>> pool.query_ids.tolist(), pool.offsets.tolist()
    ([7, 9], [0, 2, 3])
    >>> pool
    Pool(n_queries=2, n_docs=3, doc_ids=no, doc_length=no)
    """

    query_ids: np.ndarray
    offsets: np.ndarray
    doc_ids: np.ndarray | None = None
    doc_length: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "query_ids", np.asarray(self.query_ids))
        object.__setattr__(self, "offsets", np.asarray(self.offsets))
        for name in ("doc_ids", "doc_length"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, np.asarray(getattr(self, name)))

    @classmethod
    def from_qids(cls, qids, *, doc_ids=None, doc_length=None) -> "Pool":
        """Pool from one query id per document row (rows of a query contiguous)."""
        qids = np.asarray(qids).reshape(-1)
        if qids.size == 0:
            raise ValueError("`qids` must not be empty.")
        starts = np.r_[0, np.flatnonzero(qids[1:] != qids[:-1]) + 1]
        query_ids = qids[starts]
        uniq, counts = np.unique(query_ids, return_counts=True)
        if (counts > 1).any():
            dup = uniq[counts > 1][0]
            raise ValueError(f"`qids` must group each query's rows contiguously; query {py_scalar(dup)!r} is split.")
        offsets = np.r_[starts, qids.size].astype(np.int64)
        return cls(query_ids, offsets, doc_ids, doc_length)

    @property
    def n_queries(self) -> int:
        return self.offsets.size - 1

    @property
    def n_docs(self) -> int:
        return int(self.offsets[-1])

    def doc_keys(self, rows) -> list:
        """Document ids of global ``rows`` (the row numbers themselves without ``doc_ids``)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.doc_ids is None:
            return rows.tolist()
        return [py_scalar(d) for d in self.doc_ids[rows]]

    def query_key(self, x: int):
        """The id of pool query ``x`` as a plain Python value."""
        return py_scalar(self.query_ids[x])

    def query_index(self) -> dict:
        """``{query id: pool position}``."""
        return {q: i for i, q in enumerate(np.asarray(self.query_ids).tolist())}

    def __repr__(self) -> str:
        yes = {True: "yes", False: "no"}
        return (f"Pool(n_queries={self.n_queries}, n_docs={self.n_docs}, doc_ids={yes[self.doc_ids is not None]}, "
                f"doc_length={yes[self.doc_length is not None]})")


def pool_iv(pool):
    """Validate a pool (anything with ``offsets`` and ``query_ids``) -> :class:`~activerank.pool.Pool`.

    The standardized pool keeps ``doc_ids`` and ``doc_length`` when present.
    Query ids must be unique, and so must the document ids of each query
    (compared by their string form, as campaigns compare them).
    """
    if not (hasattr(pool, "offsets") and hasattr(pool, "query_ids")):
        raise TypeError(
            "`pool` must have `offsets` and `query_ids` (e.g. a LetorData or activerank.Pool); "
            f"got {type(pool).__name__}."
        )
    offsets = offsets_iv(pool.offsets, name="pool.offsets")
    if offsets.size < 2:
        raise ValueError("`pool` must contain at least one query.")
    m, n_docs = offsets.size - 1, int(offsets[-1])
    qids = np.asarray(pool.query_ids).reshape(-1)
    if qids.size != m:
        raise ValueError(f"`pool.query_ids` must have one id per query ({m}, from `pool.offsets`); "
                         f"got {qids.size}.")
    _unique_ids_iv(qids)
    doc_ids = getattr(pool, "doc_ids", None)
    if doc_ids is not None:
        doc_ids = np.asarray(doc_ids)
        if doc_ids.shape != (n_docs,):
            raise ValueError(f"`pool.doc_ids` must have one id per document ({n_docs}); got shape {doc_ids.shape}.")
        distinct_docs_iv(doc_ids, offsets, qids)
    doc_length = getattr(pool, "doc_length", None)
    if doc_length is not None:
        doc_length = np.asarray(doc_length)
        if doc_length.shape != (n_docs,):
            raise ValueError(f"`pool.doc_length` must have one entry per document ({n_docs}); "
                             f"got shape {doc_length.shape}.")
    if isinstance(pool, Pool):
        return pool
    return Pool(qids, offsets, doc_ids, doc_length)
