"""Loading LETOR / SVMlight ranking data into a query-grouped container.

A LETOR file holds one query-document pair per line::

    <label> qid:<qid> 1:<v> 2:<v> ... [# docid = <id> ...]

and lines of one query are contiguous.  :func:`load_letor` reads such a file
(in linear time; see :mod:`activerank.io._svmlight`) into a :class:`LetorData`,
whose per-query ``offsets`` follow the CSR layout of :mod:`activerank.ragged`.
:func:`load_partitions` and :func:`letor_fold` handle the five-partition layout
(``S1.txt`` ... ``S5.txt``) of LETOR 3.0 / 4.0, and :func:`load_sample` loads the
small MQ2008 excerpt shipped with the package.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from importlib import resources
from typing import Callable, Sequence

import numpy as np

from ..ragged import offsets_from_lengths, segment_ids
from . import _svmlight
from .limits import MAX_GRADE, MAX_N_GRADES

__all__ = [
    "LetorData",
    "load_letor",
    "load_partitions",
    "letor_fold",
    "concat",
    "load_sample",
    "ohsumed_doc_length",
    "fold_partitions",
]

@dataclass(frozen=True, eq=False)
class LetorData:
    """Query-grouped LETOR data (documents of one query are contiguous rows).

    Parameters
    ----------
    X : ndarray of shape (n_docs, n_features), float64
        Dense feature matrix.
    qids : ndarray of shape (n_docs,), int64
        Raw query id of every row.
    query_ids : ndarray of shape (n_queries,), int64
        Raw query id of every query, in row (file) order.
    offsets : ndarray of shape (n_queries + 1,), int64
        Query ``q`` owns rows ``offsets[q]:offsets[q + 1]``.
    labels : ndarray of shape (n_docs,), int64, or None
        Relevance grades in ``0 .. n_grades - 1``; ``None`` if unknown.
    doc_ids : ndarray of shape (n_docs,), object (str), or None
        Document ids from ``#docid = ...`` comments (``""`` where a line has
        none); ``None`` if no line of the source had one.
    n_grades : int
        Size of the label scale; grades are ``0 .. n_grades - 1`` and
        ``ymax = n_grades - 1``.
    doc_length : ndarray of shape (n_docs,), float64, or None
        Document length (or a relative length proxy, see :func:`load_letor`).

    Examples
    --------
    >>> import numpy as np
    >>> d = LetorData(X=np.zeros((3, 2)), qids=np.array([7, 7, 9]),
    ...               query_ids=np.array([7, 9]), offsets=np.array([0, 2, 3]),
    ...               labels=np.array([0, 2, 1]), n_grades=3)
    >>> d.n_queries, d.n_docs, d.lengths.tolist()
    (2, 3, [2, 1])
    >>> d.subset([1]).labels.tolist()
    [1]
    """

    X: np.ndarray
    qids: np.ndarray
    query_ids: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray | None = None
    doc_ids: np.ndarray | None = None
    n_grades: int = 2
    doc_length: np.ndarray | None = None

    def __post_init__(self):
        X = np.ascontiguousarray(self.X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"`X` must be 2-d (n_docs, n_features); got shape {X.shape}.")
        n = X.shape[0]
        qids = np.ascontiguousarray(self.qids, dtype=np.int64).reshape(-1)
        query_ids = np.ascontiguousarray(self.query_ids, dtype=np.int64).reshape(-1)
        offsets = np.ascontiguousarray(self.offsets, dtype=np.int64).reshape(-1)
        if qids.size != n:
            raise ValueError(f"`qids` must have one entry per row of X ({n}); got {qids.size}.")
        if offsets.size != query_ids.size + 1 or offsets[0] != 0 or offsets[-1] != n:
            raise ValueError(
                "`offsets` must have length n_queries + 1, start at 0 and end at n_docs "
                f"({n}); got length {offsets.size} for {query_ids.size} queries, "
                f"first {offsets[0] if offsets.size else None}, last {offsets[-1] if offsets.size else None}."
            )
        if np.any(np.diff(offsets) < 0):
            raise ValueError("`offsets` must be non-decreasing.")
        if not np.array_equal(np.repeat(query_ids, np.diff(offsets)), qids):
            raise ValueError("`qids` must equal `query_ids` repeated over each query's rows.")
        n_grades = self.n_grades
        if isinstance(n_grades, bool) or not isinstance(n_grades, (int, np.integer)) or n_grades < 2:
            raise ValueError(f"`n_grades` must be an integer >= 2; got {n_grades!r}.")
        n_grades = int(n_grades)
        labels = self.labels
        if labels is not None:
            labels = np.ascontiguousarray(labels, dtype=np.int64).reshape(-1)
            if labels.size != n:
                raise ValueError(f"`labels` must have one entry per row ({n}); got {labels.size}.")
            bad = np.flatnonzero((labels < 0) | (labels >= n_grades))
            if bad.size:
                raise ValueError(
                    f"`labels` must lie in 0..{n_grades - 1} (n_grades={n_grades}); "
                    f"row {bad[0]} has label {labels[bad[0]]}."
                )
        doc_ids = self.doc_ids
        if doc_ids is not None:
            doc_ids = np.asarray(doc_ids, dtype=object).reshape(-1)
            if doc_ids.size != n:
                raise ValueError(f"`doc_ids` must have one entry per row ({n}); got {doc_ids.size}.")
        doc_length = self.doc_length
        if doc_length is not None:
            doc_length = _check_lengths(doc_length, n, "doc_length")
        for name, arr in [("X", X), ("qids", qids), ("query_ids", query_ids), ("offsets", offsets),
                          ("labels", labels), ("doc_ids", doc_ids), ("doc_length", doc_length)]:
            if arr is not None:
                if arr is getattr(self, name) and arr.flags.writeable:
                    arr = arr.copy()
                arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "n_grades", n_grades)

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return self.query_ids.size

    @property
    def n_docs(self) -> int:
        """Number of rows (query-document pairs)."""
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return self.X.shape[1]

    @property
    def lengths(self) -> np.ndarray:
        """Documents per query, shape ``(n_queries,)``."""
        return np.diff(self.offsets)

    @property
    def ymax(self) -> int:
        """Largest grade of the scale, ``n_grades - 1``."""
        return self.n_grades - 1

    def query_index(self) -> np.ndarray:
        """0-based query index of every row, shape ``(n_docs,)``."""
        return segment_ids(self.offsets)

    def subset(self, queries) -> "LetorData":
        """Data of the selected queries, in the given order, with re-based offsets.

        Parameters
        ----------
        queries : array-like of int or bool
            Query indices (0-based positions, not raw qids) or a boolean mask
            of shape ``(n_queries,)``.

        Returns
        -------
        LetorData

        Examples
        --------
        >>> d = load_sample()
        >>> s = d.subset([2, 0])
        >>> s.query_ids.tolist() == d.query_ids[[2, 0]].tolist()
        True
        """
        q = np.asarray(queries)
        if q.dtype == bool:
            if q.shape != (self.n_queries,):
                raise ValueError(
                    f"`queries` as a boolean mask must have shape ({self.n_queries},); got {q.shape}."
                )
            q = np.flatnonzero(q)
        else:
            if q.size and not np.issubdtype(q.dtype, np.integer):
                raise TypeError(f"`queries` must be integer indices or a boolean mask; got dtype {q.dtype}.")
            q = q.astype(np.int64).reshape(-1)
            bad = np.flatnonzero((q < -self.n_queries) | (q >= self.n_queries))
            if bad.size:
                raise ValueError(
                    f"`queries` index {q[bad[0]]} is out of range for {self.n_queries} queries."
                )
            q = np.where(q < 0, q + self.n_queries, q)
        lengths = self.lengths[q]
        new_offsets = offsets_from_lengths(lengths)
        rows = np.repeat(self.offsets[q] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
        return self._take_rows(rows, self.query_ids[q], new_offsets)

    def _take_rows(self, rows, query_ids, offsets) -> "LetorData":
        return LetorData(
            X=self.X[rows],
            qids=self.qids[rows],
            query_ids=query_ids,
            offsets=offsets,
            labels=None if self.labels is None else self.labels[rows],
            doc_ids=None if self.doc_ids is None else self.doc_ids[rows],
            n_grades=self.n_grades,
            doc_length=None if self.doc_length is None else self.doc_length[rows],
        )

    def with_doc_length(self, doc_length) -> "LetorData":
        """Copy with ``doc_length`` replaced (array of shape ``(n_docs,)`` or ``None``).

        Examples
        --------
        >>> d = load_sample()
        >>> d.with_doc_length(d.X[:, 19]).doc_length.shape == (d.n_docs,)
        True
        """
        return dataclasses.replace(self, doc_length=doc_length)

    def __repr__(self) -> str:
        return (
            f"LetorData(n_queries={self.n_queries}, n_docs={self.n_docs}, "
            f"n_features={self.n_features}, n_grades={self.n_grades}, "
            f"labels={'yes' if self.labels is not None else 'no'}, "
            f"doc_ids={'yes' if self.doc_ids is not None else 'no'}, "
            f"doc_length={'yes' if self.doc_length is not None else 'no'})"
        )


def _check_lengths(values, n, name) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64).reshape(-1) if np.ndim(values) else None
    if values is None or values.size != n:
        got = "a scalar" if values is None else f"{values.size} values"
        raise ValueError(f"`{name}` must have one value per document ({n}); got {got}.")
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        raise ValueError(
            f"`{name}` must be finite and non-negative; row {bad[0]} has {values[bad[0]]!r}."
        )
    return np.ascontiguousarray(values)


def ohsumed_doc_length(X) -> np.ndarray:
    """Title+abstract length of OHSUMED (LETOR 3.0) documents from the raw features.

    In the raw ``Feature-min`` files, features 1-15 are computed on the title,
    16-30 on the abstract and 31-45 on title+abstract; within a block,
    feature 1 is ``sum tf`` and feature 3 is ``sum tf / |d|``.  Hence
    ``|d| = f31 / f33``.  Where ``f33 == 0`` (no query term in the document;
    about 10% of rows) the length is rebuilt as title + abstract length,
    ``f1/f3 + f16/f18``, using each part only where its denominator is > 0.
    Rows where no ratio is defined get the median of the defined lengths.
    Do not use this on the query-normalised files: their features are rescaled
    per query and the ratios are meaningless.

    Parameters
    ----------
    X : array-like of shape (n_docs, >= 33)
        Raw OHSUMED features (column ``j`` is feature ``j + 1``).

    Returns
    -------
    ndarray of shape (n_docs,), float64
        Estimated number of terms in title + abstract (positive).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.zeros((3, 45))
    >>> X[0, [30, 32]] = [10.0, 0.1]                        # f31 / f33 = 100
    >>> X[1, [0, 2, 15, 17]] = [2.0, 0.5, 3.0, 0.05]        # 4 + 60
    >>> ohsumed_doc_length(X).tolist()                      # row 2: median of defined
    [100.0, 64.0, 82.0]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 33:
        raise ValueError(
            f"`X` must be 2-d with at least 33 raw OHSUMED feature columns; got shape {X.shape}."
        )

    def ratio(num, den):
        out = np.full(X.shape[0], np.nan)
        ok = (X[:, den] > 0) & np.isfinite(X[:, num])
        out[ok] = X[ok, num] / X[ok, den]
        return out

    total = ratio(30, 32)
    title = ratio(0, 2)
    abstract = ratio(15, 17)
    parts = np.nansum(np.stack([title, abstract]), axis=0)
    have_part = np.isfinite(title) | np.isfinite(abstract)
    length = np.where(np.isfinite(total) & (total > 0), total, np.where(have_part, parts, np.nan))
    length[length <= 0] = np.nan
    defined = np.isfinite(length)
    fill = float(np.median(length[defined])) if defined.any() else 1.0
    length[~defined] = fill
    return length


def load_letor(
    path,
    *,
    n_grades: int | None = None,
    n_features: int | None = None,
    length_feature: int | Callable | None = None,
    length_path=None,
    labeled: bool = True,
) -> LetorData:
    """Read a LETOR / SVMlight file with query ids into a :class:`LetorData`.

    Parameters
    ----------
    path : str or os.PathLike
        File with lines ``label qid:N f:v ... [# docid = ID ...]``.
    n_grades : int, optional
        Size of the label scale (grades ``0 .. n_grades - 1``).  Default: the
        largest label in the file + 1 (at least 2).  Give it explicitly when a
        file may miss the top grade (small partitions, samples).
    n_features : int, optional
        Expected number of features.  If given, a line using a larger feature
        index, or a file whose largest feature index is smaller, raises.
    length_feature : int or callable, optional
        Where document length comes from.  An int is a **1-based** feature
        number (e.g. ``20`` for MQ2008, "DL of the whole document"; note that
        the MQ2008 values are min-max normalised within each query, so they
        are a *relative* length proxy, not a term count).  A callable maps the
        raw feature matrix ``(n_docs, n_features)`` to lengths ``(n_docs,)``,
        e.g. :func:`ohsumed_doc_length` for OHSUMED ``Feature-min`` files.
    length_path : str or os.PathLike, optional
        Read the length from this *other* file (same rows, same qids, e.g. the
        raw ``Feature-min`` twin of a ``QueryLevelNorm`` file) instead of
        ``path``.  Requires ``length_feature``.
    labeled : bool, default True
        If False the label column is ignored and ``labels`` is ``None``
        (``n_grades`` is then required).

    Returns
    -------
    LetorData

    Raises
    ------
    ValueError
        Naming the file and line (or query) for: an empty file, binary data, a
        line without ``qid:``, a non-numeric or non-integer label, a label
        outside ``0 .. n_grades - 1`` (or above
        :data:`activerank.io.limits.MAX_GRADE` when ``n_grades`` is not
        given), a malformed ``index:value`` pair, a feature index that is 0,
        negative, repeated or decreasing, a non-finite feature value, a
        feature index above ``n_features`` (or above
        :data:`activerank.io.limits.MAX_FEATURE_INDEX` when it is not given:
        features are stored dense), or a query whose lines are not
        contiguous.

    Examples
    --------
    >>> import tempfile, os
    >>> text = ("2 qid:5 1:0.5 2:1 # docid = d1\\n"
    ...         "0 qid:5 1:0.1 2:0 # docid = d2\\n"
    ...         "1 qid:3 1:0.7 2:0.2 # docid = d3\\n")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = os.path.join(tmp, "S1.txt")
    ...     with open(p, "w") as f:
    ...         _ = f.write(text)
    ...     d = load_letor(p, n_grades=3, length_feature=1)
    >>> d.query_ids.tolist(), d.offsets.tolist(), d.labels.tolist()
    ([5, 3], [0, 2, 3], [2, 0, 1])
    >>> d.doc_ids.tolist(), d.doc_length.tolist()
    (['d1', 'd2', 'd3'], [0.5, 0.1, 0.7])
    """
    if n_grades is not None and (
        isinstance(n_grades, bool) or not isinstance(n_grades, (int, np.integer)) or n_grades < 2
    ):
        raise ValueError(f"`n_grades` must be an integer >= 2 or None; got {n_grades!r}.")
    if n_grades is not None and n_grades > MAX_N_GRADES:
        raise ValueError(f"`n_grades` must be at most {MAX_N_GRADES} (grades 0..{MAX_GRADE}); got {n_grades}.")
    if n_features is not None and (
        isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1
    ):
        raise ValueError(f"`n_features` must be a positive integer or None; got {n_features!r}.")
    if not labeled and n_grades is None:
        raise ValueError("`n_grades` is required when `labeled=False`.")
    if length_path is not None and length_feature is None:
        raise ValueError("`length_path` requires `length_feature` (which feature or function gives length).")
    _check_length_feature(length_feature, n_features)

    path = os.fspath(path)
    parts, X, widest = _read_parts(path, n_features=n_features, n_grades=n_grades, labeled=labeled)
    if n_features is not None and widest < n_features:
        raise ValueError(
            f"{path}: file has at most {widest} features per line, but "
            f"n_features={n_features} (feature count mismatch)."
        )
    line_no = np.concatenate([p.line_no for p in parts])
    qids = np.concatenate([p.qids for p in parts])
    n = qids.size
    labels = None
    if labeled:
        labels = np.concatenate([p.y for p in parts]).astype(np.int64)
        if n_grades is None:
            n_grades = max(int(labels.max()) + 1, 2)
    doc_ids = None
    if any(p.doc_ids is not None for p in parts):
        doc_ids = np.concatenate([np.full(p.qids.size, "", dtype=object) if p.doc_ids is None else p.doc_ids
                                  for p in parts])
    del parts
    offsets = _query_offsets(qids, line_no, path)

    doc_length = None
    if length_feature is not None:
        if length_path is None:
            source = X
        else:
            other = load_letor(length_path, labeled=False, n_grades=n_grades or 2)
            if other.n_docs != n or not np.array_equal(other.qids, qids):
                raise ValueError(
                    f"`length_path` {os.fspath(length_path)} does not match {path}: "
                    f"{other.n_docs} vs {n} rows or different qids."
                )
            if doc_ids is not None and other.doc_ids is not None:
                diff = np.flatnonzero(np.asarray(other.doc_ids) != np.asarray(doc_ids, dtype=object))
                if diff.size:
                    raise ValueError(
                        f"`length_path` {os.fspath(length_path)} does not match {path}: line "
                        f"{line_no[diff[0]]} has docid {doc_ids[diff[0]]!r} vs {other.doc_ids[diff[0]]!r}."
                    )
            source = other.X
        doc_length = _lengths_from(source, length_feature, path)

    return LetorData(
        X=X,
        qids=qids,
        query_ids=qids[offsets[:-1]],
        offsets=offsets,
        labels=labels,
        doc_ids=doc_ids,
        n_grades=int(n_grades),
        doc_length=doc_length,
    )


def _check_length_feature(length_feature, n_features):
    if length_feature is None or callable(length_feature):
        return
    if isinstance(length_feature, bool) or not isinstance(length_feature, (int, np.integer)):
        raise TypeError(
            "`length_feature` must be a 1-based feature number (int), a callable X -> lengths, "
            f"or None; got {type(length_feature).__name__}."
        )
    if length_feature < 1 or (n_features is not None and length_feature > n_features):
        raise ValueError(
            f"`length_feature` is a 1-based feature number and must be in 1..{n_features or 'n_features'}; "
            f"got {length_feature}."
        )


def _lengths_from(X, length_feature, path):
    if callable(length_feature):
        return _check_lengths(length_feature(X), X.shape[0], "length_feature(X)")
    if length_feature > X.shape[1]:
        raise ValueError(
            f"{path}: `length_feature`={length_feature} but the file has only {X.shape[1]} features."
        )
    return _check_lengths(X[:, length_feature - 1], X.shape[0], f"feature {length_feature}")


def _read_parts(path: str, *, n_features, **options):
    """``(parts, X, widest)``: every block's :class:`~activerank.io._svmlight.Part` (without features),
    the dense read-only features of all rows, and the largest feature index.

    The data lines are counted first (a quick pass), so ``X`` is allocated
    once and each block's features go straight into their rows: memory stays
    near one copy of ``X``.
    """
    with open(path, "rb") as f:
        if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            raise ValueError(f"{path}: line 1: file is UTF-16 encoded; save it as UTF-8 (or ASCII).")
        f.seek(0)
        n = sum(_svmlight.count_data_lines(block) for _, block in _svmlight.blocks(f))
        if n == 0:
            raise ValueError(f"{path}: file is empty (no data lines).")
        f.seek(0)
        parts, X, filled, widest = [], None, 0, 0
        for first_line, block in _svmlight.blocks(f):
            part = _svmlight.read_block(block, first_line, path, n_features=n_features, n_rows=n, **options)
            if part is None:
                continue
            Xs, part.features = part.features, None
            rows, width = Xs.shape
            if filled + rows > n:
                raise ValueError(f"{path}: the file changed while it was read; read it again.")
            widest = max(widest, width)
            X = _widen(X, n, filled, max(n_features or 0, width))
            Xs.resize(rows, X.shape[1])                # more columns: no copy, the new ones are empty
            Xs.toarray(out=X[filled:filled + rows])
            filled += rows
            parts.append(part)
    if filled != n:
        raise ValueError(f"{path}: the file changed while it was read; read it again.")
    X.setflags(write=False)   # LetorData keeps a read-only array as it is, without a copy
    return parts, X, widest


def _widen(X, n: int, filled: int, width: int) -> np.ndarray:
    """``X`` with at least ``width`` columns (allocated on first use; widened, rarely, by a copy)."""
    if X is None:
        return np.empty((n, width))
    if X.shape[1] >= width:
        return X
    wider = np.empty((n, width))
    wider[:filled, :X.shape[1]] = X[:filled]
    wider[:filled, X.shape[1]:] = 0.0
    return wider


def _query_offsets(qids: np.ndarray, line_no: np.ndarray, path: str) -> np.ndarray:
    """Query offsets of rows grouped by query; names the first query that reappears after others."""
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    segment_qid = qids[starts]
    _, first, inverse = np.unique(segment_qid, return_index=True, return_inverse=True)
    reappears = np.flatnonzero(first[inverse] != np.arange(starts.size))
    if reappears.size:
        seg = int(reappears[0])                  # the earliest re-appearance in file order
        raise ValueError(
            f"{path}: query qid:{segment_qid[seg]} is not contiguous: its lines start at line "
            f"{line_no[starts[first[inverse[seg]]]]} and it reappears at line {line_no[starts[seg]]} "
            "after other queries (lines of a query must be grouped)."
        )
    return np.r_[starts, qids.size].astype(np.int64)


def concat(datasets: Sequence[LetorData]) -> LetorData:
    """Concatenate query-grouped data sets (rows and queries in the given order).

    Parameters
    ----------
    datasets : sequence of LetorData
        Same number of features; a raw qid may occur in only one of them.
        ``n_grades`` of the result is the largest of the inputs.  ``labels``,
        ``doc_ids`` and ``doc_length`` are kept only if every input has them.

    Returns
    -------
    LetorData

    Examples
    --------
    >>> d = load_sample()
    >>> both = concat([d.subset([0, 1]), d.subset([2])])
    >>> both.n_queries, bool(both.offsets[-1] == d.offsets[3])
    (3, True)
    """
    datasets = list(datasets)
    if not datasets:
        raise ValueError("`datasets` must contain at least one LetorData.")
    for i, d in enumerate(datasets):
        if not isinstance(d, LetorData):
            raise TypeError(f"`datasets[{i}]` must be a LetorData; got {type(d).__name__}.")
    nf = {d.n_features for d in datasets}
    if len(nf) > 1:
        raise ValueError(f"`datasets` have different feature counts: {sorted(nf)}.")
    query_ids = np.concatenate([d.query_ids for d in datasets])
    uniq, counts = np.unique(query_ids, return_counts=True)
    if np.any(counts > 1):
        raise ValueError(
            f"query qid:{uniq[counts > 1][0]} occurs in more than one of `datasets` "
            "(queries must not be split across data sets)."
        )

    def cat(name):
        parts = [getattr(d, name) for d in datasets]
        return None if any(p is None for p in parts) else np.concatenate(parts)

    return LetorData(
        X=np.concatenate([d.X for d in datasets]),
        qids=np.concatenate([d.qids for d in datasets]),
        query_ids=query_ids,
        offsets=offsets_from_lengths(np.concatenate([d.lengths for d in datasets])),
        labels=cat("labels"),
        doc_ids=cat("doc_ids"),
        n_grades=max(d.n_grades for d in datasets),
        doc_length=cat("doc_length"),
    )


def load_partitions(
    root,
    parts: Sequence[int],
    *,
    n_grades: int | None = None,
    n_features: int | None = None,
    length_feature: int | Callable | None = None,
    length_root=None,
    labeled: bool = True,
) -> LetorData:
    """Load and concatenate partition files ``root/S{k}.txt`` for ``k`` in ``parts``.

    Parameters
    ----------
    root : str or os.PathLike
        Directory holding ``S1.txt`` ... ``S5.txt``.
    parts : sequence of int
        Partition numbers (1-based), in the order to concatenate.
    n_grades, n_features, length_feature, labeled
        As in :func:`load_letor`.  If ``n_grades`` is None it is inferred from
        all selected partitions together; if ``n_features`` is None the first
        file fixes it for the others.
    length_root : str or os.PathLike, optional
        Directory with the row-aligned twin files to take document length
        from (e.g. OHSUMED ``Feature-min`` for ``QueryLevelNorm``).

    Returns
    -------
    LetorData

    Examples
    --------
    >>> from activerank.datasets import dataset_dir
    >>> d = load_partitions(dataset_dir("mq2008"), [4, 5])   # doctest: +SKIP
    >>> d.n_queries                                          # doctest: +SKIP
    313
    """
    parts = list(parts)
    if not parts:
        raise ValueError("`parts` must name at least one partition.")
    for k in parts:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"`parts` must be positive partition numbers; got {k!r}.")
    if len(set(parts)) != len(parts):
        raise ValueError(f"`parts` must not repeat a partition; got {parts}.")
    loaded = []
    nf = n_features
    for k in parts:
        path = os.path.join(os.fspath(root), f"S{k}.txt")
        if not os.path.exists(path):
            raise ValueError(f"partition file {path} does not exist (parts={parts}).")
        lpath = None if length_root is None else os.path.join(os.fspath(length_root), f"S{k}.txt")
        d = load_letor(
            path,
            n_grades=n_grades if n_grades is not None else (None if labeled else 2),
            n_features=nf,
            length_feature=length_feature,
            length_path=lpath,
            labeled=labeled,
        )
        nf = d.n_features
        loaded.append(d)
    out = concat(loaded)
    if n_grades is None and labeled:
        out = dataclasses.replace(out, n_grades=max(int(out.labels.max()) + 1, 2))
    return out


def fold_partitions(fold: int, n_partitions: int = 5) -> tuple[list[int], int, int]:
    """Partition numbers ``(train, vali, test)`` of LETOR fold ``fold``.

    Fold ``f`` trains on ``S_f, S_{f+1}, S_{f+2}``, validates on ``S_{f+3}``
    and tests on ``S_{f+4}`` (cyclically), so Fold1 = train S1-S3, vali S4,
    test S5, Fold2 = train S2-S4, vali S5, test S1, and so on.

    Examples
    --------
    >>> fold_partitions(1)
    ([1, 2, 3], 4, 5)
    >>> fold_partitions(2)
    ([2, 3, 4], 5, 1)
    """
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not 1 <= fold <= n_partitions:
        raise ValueError(f"`fold` must be an integer in 1..{n_partitions}; got {fold!r}.")
    seq = [(fold - 1 + i) % n_partitions + 1 for i in range(n_partitions)]
    return seq[: n_partitions - 2], seq[n_partitions - 2], seq[n_partitions - 1]


def letor_fold(
    root,
    fold: int,
    *,
    n_grades: int | None = None,
    n_features: int | None = None,
    length_feature: int | Callable | None = None,
    length_root=None,
) -> tuple[LetorData, LetorData, LetorData]:
    """Load ``(train, vali, test)`` of a five-partition LETOR fold.

    Layout (see :func:`fold_partitions`): Fold1 = train S1-S3, vali S4, test
    S5, and cyclically for Fold2-5.

    Parameters
    ----------
    root : str or os.PathLike
        Directory with ``S1.txt`` ... ``S5.txt``.
    fold : int
        1..5.
    n_grades : int, optional
        Label scale; default inferred from all three splits together, so
        the splits always share one scale.
    n_features, length_feature, length_root
        As in :func:`load_partitions`.

    Returns
    -------
    train, vali, test : LetorData

    Examples
    --------
    >>> from activerank.datasets import dataset_dir
    >>> tr, va, te = letor_fold(dataset_dir("mq2008"), 1,
    ...                         length_feature=20)   # doctest: +SKIP
    >>> tr.n_queries, va.n_queries, te.n_queries     # doctest: +SKIP
    (471, 157, 156)
    """
    train_p, vali_p, test_p = fold_partitions(fold)
    kw = dict(n_features=n_features, length_feature=length_feature, length_root=length_root)
    train = load_partitions(root, train_p, n_grades=n_grades, **kw)
    kw["n_features"] = train.n_features
    vali = load_partitions(root, [vali_p], n_grades=n_grades, **kw)
    test = load_partitions(root, [test_p], n_grades=n_grades, **kw)
    if n_grades is None:
        g = max(train.n_grades, vali.n_grades, test.n_grades)
        train, vali, test = (dataclasses.replace(d, n_grades=g) for d in (train, vali, test))
    return train, vali, test


_SAMPLES = {"test": "mq2008_sample.txt", "train": "mq2008_sample_train.txt"}


def load_sample(split: str = "test") -> LetorData:
    """Load the small MQ2008 excerpt shipped with activerank.

    ``"test"``: the first 30 queries of MQ2008 S5 (607 documents);
    ``"train"``: the first 40 queries of S1 (618 documents).  Labels on the
    0..2 scale (``n_grades=3``), 46 features, document ids from the comments,
    and ``doc_length`` = feature 20 (query-normalised whole-document length,
    a relative proxy).  See ``activerank/datasets/SOURCE.md`` for attribution
    (LETOR 4.0, Qin & Liu, arXiv:1306.2597).

    Parameters
    ----------
    split : {"test", "train"}

    Returns
    -------
    LetorData

    Examples
    --------
    >>> d = load_sample()
    >>> d.n_queries, d.n_docs, d.n_features, d.n_grades
    (30, 607, 46, 3)
    >>> d.doc_ids[0]
    'GX004-93-7097963'
    """
    if split not in _SAMPLES:
        raise ValueError(f"`split` must be one of {sorted(_SAMPLES)}; got {split!r}.")
    ref = resources.files("activerank.datasets").joinpath(_SAMPLES[split])
    with resources.as_file(ref) as path:
        return load_letor(path, n_grades=3, n_features=46, length_feature=20)
