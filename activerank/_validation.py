"""Input validation helpers (``_x_iv``): each validates *and* standardizes one input.

Every error names the parameter, the rule, and the first offending item, so a
user can find the bad row in a pool of a million queries.
"""

from __future__ import annotations

import numbers

import numpy as np

from .ragged import Rankings, offsets_from_lengths, segment_ids

PROB_ROW_TOL = 1e-6


def probs_iv(probs, *, name: str = "probs") -> np.ndarray:
    """Validate an (n_items, n_grades) matrix of label distributions."""
    if isinstance(probs, (str, bytes)) or probs is None:
        raise TypeError(f"`{name}` must be a 2-d array of probabilities, got {type(probs).__name__}.")
    try:
        arr = np.asarray(probs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be a numeric 2-d array: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"`{name}` must have shape (n_items, n_grades); got an array with {arr.ndim} dimension(s)."
        )
    if arr.shape[1] < 2:
        raise ValueError(f"`{name}` must have at least 2 grade columns; got shape {arr.shape}.")
    arr = np.ascontiguousarray(arr)
    # Fast path for the common valid case: two passes over the matrix (a BLAS
    # row sum and a min) instead of five.  A NaN or inf anywhere makes its row
    # sum non-finite and the min NaN, so the full diagnosis below only runs for
    # invalid input and still reports the first rule broken, as documented.
    if arr.size:
        sums = arr @ np.ones(arr.shape[1])
        if np.all(np.abs(sums - 1.0) <= PROB_ROW_TOL) and arr.min() >= 0:
            return arr
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argwhere(bad)[0, 0])
        raise ValueError(f"`{name}` must be finite; row {row} contains NaN or inf.")
    if (arr < 0).any():
        row = int(np.argwhere(arr < 0)[0, 0])
        raise ValueError(f"`{name}` must be non-negative; row {row} has a negative probability.")
    sums = arr.sum(axis=1)
    off = np.abs(sums - 1.0) > PROB_ROW_TOL
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"`{name}` rows must sum to 1 (tolerance {PROB_ROW_TOL:g}); row {row} sums to {sums[row]:.9g}."
        )
    return np.ascontiguousarray(arr)


def k_iv(k, *, name: str = "k") -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive integer or None, got {k!r}.")
    if k < 1:
        raise ValueError(f"`{name}` must be >= 1 (or None for the whole list), got {k}.")
    return int(k)


def _integer_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == bool:
        raise TypeError(f"`{name}` must hold integer indices, not booleans.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"`{name}` must hold integer indices, got dtype {arr.dtype}.")
        ok = np.isfinite(arr) & (arr == np.round(arr))
        if not ok.all():
            pos = int(np.flatnonzero(~ok.reshape(-1))[0])
            raise ValueError(
                f"`{name}` must hold integer indices; entry {pos} is {arr.reshape(-1)[pos].item()!r}."
            )
    return arr.astype(np.int64, copy=False).reshape(-1)


def ranking_iv(ranking, n_items: int, *, name: str = "ranking") -> np.ndarray:
    """Validate one ranking: distinct integer row indices in [0, n_items)."""
    arr = np.asarray(ranking)
    if arr.ndim > 1:
        raise ValueError(f"`{name}` must be a 1-d sequence of item indices; got shape {arr.shape}.")
    return rankings_iv([_integer_array(arr, name)], n_items, name=name).items


def rankings_iv(rankings, n_items: int, *, name: str = "rankings") -> Rankings:
    """Validate per-query rankings (a ``Rankings`` or a sequence of sequences)."""
    if isinstance(rankings, Rankings):
        items, offsets = rankings.items, rankings.offsets
    else:
        if isinstance(rankings, (str, bytes)) or not hasattr(rankings, "__len__"):
            raise TypeError(f"`{name}` must be a Rankings object or a sequence of index sequences.")
        arrays = []
        for q, r in enumerate(rankings):
            arr = np.asarray(r)
            if arr.ndim > 1:
                raise ValueError(f"`{name}`[{q}] must be 1-d; got shape {arr.shape}.")
            arrays.append(_integer_array(arr, f"{name}[{q}]"))
        offsets = offsets_from_lengths([a.size for a in arrays])
        items = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    if items.size and (items.min() < 0 or items.max() >= n_items):
        bad = (items < 0) | (items >= n_items)
        e = int(np.flatnonzero(bad)[0])
        qidx = segment_ids(offsets)
        raise ValueError(
            f"`{name}` indices must lie in [0, {n_items}); query {qidx[e]} has index {items[e]}."
        )
    _check_distinct(items, offsets, n_items, name)
    return rankings if isinstance(rankings, Rankings) else Rankings(items, offsets)


def _check_distinct(items: np.ndarray, offsets: np.ndarray, n_items: int, name: str) -> None:
    """Raise if some query lists an item twice.

    A global count per document row (one O(n) scatter) proves distinctness in
    the usual case where every row is ranked at most once in the whole pool;
    only entries whose row occurs more than once are sorted by (query, row) to
    tell a duplicate inside one query from a row shared by two queries.
    """
    if items.size < 2:
        return
    counts = np.bincount(items, minlength=n_items)
    if counts.max() <= 1:
        return
    cand = np.flatnonzero(counts[items] > 1)
    qidx = segment_ids(offsets)[cand]
    keys = qidx * max(n_items, 1) + items[cand]
    order = np.argsort(keys, kind="stable")
    dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if dup.size:
        e = order[dup[0] + 1]
        raise ValueError(
            f"`{name}` must not contain duplicates; query {qidx[e]} lists item {items[cand[e]]} twice."
        )


def labels_iv(labels, n_grades: int, *, name: str = "labels") -> np.ndarray:
    arr = _integer_array(labels, name)
    bad = (arr < 0) | (arr >= n_grades)
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`{name}` must lie on the grade scale 0..{n_grades - 1}; item {e} has grade {arr[e]}."
        )
    return arr


def n_grades_from_ymax(ymax, *, name: str = "ymax") -> int:
    if isinstance(ymax, bool) or not isinstance(ymax, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive integer (the top grade of the scale), got {ymax!r}.")
    if ymax < 1:
        raise ValueError(f"`{name}` must be >= 1, got {ymax}.")
    return int(ymax) + 1
