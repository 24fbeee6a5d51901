"""Ragged (CSR) per-query arrays: the layout every pool-level kernel works on.

A pool of ``m`` queries is stored as flat arrays plus ``offsets`` of length
``m + 1``; query ``q`` owns ``flat[offsets[q]:offsets[q + 1]]``.  Rankings use
the same layout: ``items`` holds global document-row indices, best first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PositionMajor", "Rankings", "descending_keys", "offsets_from_lengths", "rank_rows_by_scores",
           "segment_argsort", "segment_ids", "segment_positions"]


def segment_ids(offsets: np.ndarray) -> np.ndarray:
    """Query index of every flat entry, shape ``(offsets[-1],)``."""
    lengths = np.diff(offsets)
    return np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)


def listed_once(items: np.ndarray, n_rows: int) -> bool:
    """Whether no row occurs twice in ``items`` (all below ``n_rows``): one byte scatter, no counting."""
    seen = np.zeros(n_rows, dtype=bool)
    seen[items] = True
    return int(np.count_nonzero(seen)) == items.size


def segment_positions(offsets: np.ndarray) -> np.ndarray:
    """0-based position of every flat entry inside its own segment."""
    n = int(offsets[-1])
    lengths = np.diff(offsets)
    return np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], lengths)


def offsets_from_lengths(lengths) -> np.ndarray:
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _index_array(values, name: str) -> np.ndarray:
    """int64 copy of integer (or integral-valued float) indices; anything else is an error, not a cast."""
    arr = np.asarray(values)
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f":
            raise TypeError(f"`{name}` must hold integer row indices; got dtype {arr.dtype}.")
        whole = np.isfinite(arr) & (arr == np.round(arr))
        if not whole.all():
            e = int(np.flatnonzero(~whole.reshape(-1))[0])
            raise ValueError(f"`{name}` must hold integer row indices; entry {e} is {arr.reshape(-1)[e].item()!r}.")
    return np.ascontiguousarray(arr, dtype=np.int64)


def rank_rows_by_scores(scores: np.ndarray, offsets: np.ndarray, doc_ids=None) -> "Rankings":
    """Rank every query's rows as ``trec_eval`` does (no validation).

    Score descending; equal scores by document id descending, ids compared as
    text (``strcmp``: code-point order of ``str(id)``); without ``doc_ids``
    (and between equal ids) the row index is the id, compared as a number.

    Examples
    --------
    >>> rank_rows_by_scores(np.array([0.1, 0.9, 0.5, 2.0, 2.0]), np.array([0, 3, 5])).items.tolist()
    [1, 2, 0, 4, 3]
    """
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    keys = descending_keys(scores)  # 1. the order: score descending (-0.0 = 0.0, NaN last)
    # 2. the tie-break: higher row first, then ids descending as text
    order = segment_argsort(keys, offsets, reverse_ties=True)
    if doc_ids is not None and order.size > 1:
        _order_ties_by_id(order, scores, segment_ids(offsets), np.asarray(doc_ids, dtype=object).reshape(-1))
    return Rankings(order, offsets)


_SIGN = np.uint64(1 << 63)
_NAN_KEY = np.uint64(0xFFF0_0000_0000_0001)   # right after the key of -inf
_PAD = np.uint64(0xFFFF_FFFF_FFFF_FFFF)       # above every key: padding sorts last


def descending_keys(scores) -> np.ndarray:
    """uint64 keys whose ascending order is the scores' descending order.

    ``-0.0`` and ``0.0`` get one key, every NaN the key after ``-inf`` (so they
    come last, as ``np.lexsort`` on ``-scores`` puts them).

    Examples
    --------
    >>> k = descending_keys(np.array([1.0, -2.0, np.inf, 0.0, -0.0, np.nan, -np.inf]))
    >>> np.argsort(k, kind="stable").tolist()
    [2, 0, 3, 4, 1, 6, 5]
    """
    s = np.asarray(scores, dtype=np.float64) + 0.0          # + 0.0 turns -0.0 into 0.0
    u = s.view(np.uint64)
    # descending IEEE order as unsigned integers: negatives keep their bits (sign set, larger
    # magnitude later), positives flip every bit but the sign; in place to keep the passes few
    keys = u >> np.uint64(63)
    keys -= np.uint64(1)                                    # 0 for negatives, all ones for positives
    keys >>= np.uint64(1)
    keys ^= u
    nan = np.isnan(s)
    if nan.any():
        keys[nan] = _NAN_KEY
    return keys


def _width_classes(max_len: int) -> np.ndarray:
    """Row widths of the sorting buckets: every length up to 16, then steps of at most 25% (padding)."""
    widths, w = list(range(1, 17)), 16
    while w < max_len:
        w = int(np.ceil(w * 1.25))
        widths.append(w)
    return np.asarray(widths, dtype=np.int64)


def segment_argsort(keys: np.ndarray, offsets: np.ndarray, *, ties=None, reverse_ties: bool = False) -> np.ndarray:
    """Rows of every segment ordered by ascending ``keys``, equal keys in row order (a stable sort).

    ``ties``, if given, holds every segment's rows in another order (rows stay
    in their segment); equal keys then keep that order instead.
    ``reverse_ties=True`` puts equal keys in reverse row order (higher row first).

    Segments are sorted in buckets of similar length, each one 2-d row-wise
    sort of packed ``key | position`` integers (no global sort, no stable
    merge sort); keys are truncated to fit the position bits, so the result
    is checked and the rare segments where truncation merged distinct keys are
    re-sorted exactly.

    Examples
    --------
    >>> segment_argsort(np.array([3, 1, 1, 2, 0], dtype=np.uint64), np.array([0, 3, 5])).tolist()
    [1, 2, 0, 4, 3]
    >>> segment_argsort(np.array([3, 1, 1, 2, 0], dtype=np.uint64), np.array([0, 3, 5]),
    ...                 ties=np.array([2, 1, 0, 3, 4])).tolist()
    [2, 1, 0, 4, 3]
    >>> segment_argsort(np.array([3, 1, 1, 2, 0], dtype=np.uint64), np.array([0, 3, 5]),
    ...                 reverse_ties=True).tolist()
    [2, 1, 0, 4, 3]
    """
    keys = np.asarray(keys, dtype=np.uint64)
    if ties is not None:
        ties = np.asarray(ties, dtype=np.int64)
        return ties[segment_argsort(keys[ties], offsets, reverse_ties=reverse_ties)]
    offsets = np.asarray(offsets, dtype=np.int64)
    order = np.arange(keys.size, dtype=np.int64)
    lengths = np.diff(offsets)
    if lengths.size == 0 or lengths.max() < 2:
        return order
    widths = _width_classes(int(lengths.max()))
    cls = np.searchsorted(widths, lengths)
    by_class = np.argsort(cls, kind="stable")
    bounds = np.searchsorted(cls[by_class], np.arange(widths.size + 1))
    for c in np.flatnonzero(np.diff(bounds)).tolist():
        width = int(widths[c])
        if width < 2:
            continue
        queries = by_class[bounds[c]:bounds[c + 1]]
        _sort_bucket(keys, offsets[queries], lengths[queries], width, order, reverse_ties)
    _repair(keys, offsets, order, reverse_ties)
    return order


def _sort_bucket(keys, starts, lengths, width, order, reverse_ties=False):
    """Sort segments (``starts``, ``lengths`` <= ``width``) as rows of a padded (k, width) matrix."""
    bits = np.uint64((width - 1).bit_length())
    pos = np.arange(width, dtype=np.int64)
    valid = pos < lengths[:, None]
    rows = (starts[:, None] + pos)[valid]
    # the low bits break ties: the position, or its complement for reverse row order
    tie = (np.uint64(width - 1) - pos.astype(np.uint64)) if reverse_ties else pos.astype(np.uint64)
    packed = np.full((starts.size, width), _PAD, dtype=np.uint64)
    packed[valid] = ((keys[rows] >> bits) << bits) | np.broadcast_to(tie, valid.shape)[valid]
    packed.sort(axis=1)                        # padding last: the first ``length`` of each row are real
    local = (packed[valid] & ((np.uint64(1) << bits) - np.uint64(1))).astype(np.int64)
    if reverse_ties:
        local = (width - 1) - local
    order[rows] = np.repeat(starts, lengths) + local


def _repair(keys, offsets, order, reverse_ties=False):
    """Re-sort exactly the segments where truncated keys tied although the full keys differ."""
    n = order.size
    if n < 2:
        return
    k = keys[order]
    inner = np.ones(n - 1, dtype=bool)
    ends = offsets[1:-1]
    inner[ends[(ends > 0) & (ends < n)] - 1] = False
    step = (order[1:] > order[:-1]) if reverse_ties else (order[1:] < order[:-1])
    bad = inner & ((k[1:] < k[:-1]) | ((k[1:] == k[:-1]) & step))
    if not bad.any():
        return
    segs = np.unique(np.searchsorted(offsets, np.flatnonzero(bad), side="right") - 1)
    lengths = np.diff(offsets)[segs]
    rows = np.repeat(offsets[segs] - offsets_from_lengths(lengths)[:-1], lengths) + np.arange(lengths.sum())
    seg = np.repeat(segs, lengths)
    order[rows] = rows[np.lexsort((-rows if reverse_ties else rows, keys[rows], seg))]


def _order_ties_by_id(order: np.ndarray, scores: np.ndarray, q: np.ndarray, doc_ids: np.ndarray) -> None:
    """Reorder, in place, the runs of equal scores of ``order`` by document id descending.

    Only tied entries have their ids converted to text: scores from a model are rarely tied, and
    the text of millions of ids would cost more than the sort."""
    s, g = scores[order], q[order]
    tied = (s[1:] == s[:-1]) & (g[1:] == g[:-1])  # entry i + 1 ties with entry i
    if not tied.any():
        return
    member = np.zeros(order.size, dtype=bool)
    member[1:] |= tied
    member[:-1] |= tied
    group = np.cumsum(member & ~np.r_[False, tied])
    idx = np.flatnonzero(member)
    sub = order[idx]
    _, codes = np.unique(doc_ids[sub].astype(str), return_inverse=True)
    order[idx] = sub[np.lexsort((-sub, -codes.reshape(-1), group[idx]))]


@dataclass(frozen=True, eq=False)
class Rankings:
    """Rankings of many queries in CSR form.

    Parameters
    ----------
    items : ndarray of shape (n_entries,), int64
        Global document-row indices, query by query, best first.
    offsets : ndarray of shape (n_queries + 1,), int64
        Query ``q`` ranks ``items[offsets[q]:offsets[q + 1]]``.

    Examples
    --------
    >>> r = Rankings.from_list([[2, 0, 1], [4, 3]])
    >>> r.n_queries, r[1].tolist()
    (2, [4, 3])
    >>> r.truncate(1).items.tolist()
    [2, 4]
    """

    items: np.ndarray
    offsets: np.ndarray

    def __post_init__(self):
        items = _index_array(self.items, "items")
        offsets = _index_array(self.offsets, "offsets")
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0:
            raise ValueError("`offsets` must be a 1-d array starting at 0.")
        dec = np.flatnonzero(np.diff(offsets) < 0)
        if dec.size:
            raise ValueError(f"`offsets` must be non-decreasing; query {dec[0]} has a negative length "
                             f"({offsets[dec[0]]} -> {offsets[dec[0] + 1]}).")
        if offsets[-1] != items.size:
            raise ValueError(
                f"`offsets` must end at len(items) ({items.size}); got last offset {offsets[-1]}."
            )
        items.setflags(write=False)
        offsets.setflags(write=False)
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "offsets", offsets)

    @classmethod
    def from_list(cls, rankings) -> "Rankings":
        """Build from a sequence of 1-d integer sequences (one per query)."""
        arrays = [np.asarray(r, dtype=np.int64).reshape(-1) for r in rankings]
        offsets = offsets_from_lengths([a.size for a in arrays])
        items = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return cls(items, offsets)

    @property
    def n_queries(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n_queries

    def __getitem__(self, q: int) -> np.ndarray:
        return self.items[self.offsets[q] : self.offsets[q + 1]]

    def to_list(self) -> list[np.ndarray]:
        return [self[q] for q in range(self.n_queries)]

    def positions(self) -> np.ndarray:
        """0-based rank position of every entry of ``items``."""
        return segment_positions(self.offsets)

    def query_index(self) -> np.ndarray:
        """Query index of every entry of ``items``."""
        return segment_ids(self.offsets)

    def truncate(self, k: int | None) -> "Rankings":
        """Keep the top ``k`` of every query (``None`` keeps everything)."""
        if k is None or np.all(self.lengths <= k):
            return self
        keep = self.positions() < k
        return Rankings(self.items[keep], offsets_from_lengths(np.minimum(self.lengths, k)))

    def subset(self, queries) -> "Rankings":
        """Rankings of the selected queries (indices or boolean mask), in that order."""
        queries = np.arange(self.n_queries)[np.asarray(queries)]
        lengths = self.lengths[queries]
        starts = self.offsets[queries]
        idx = np.repeat(starts - offsets_from_lengths(lengths)[:-1], lengths) + np.arange(lengths.sum())
        return Rankings(self.items[idx], offsets_from_lengths(lengths))


class PositionMajor:
    """Walk ragged segments rank position by rank position.

    Segments are sorted by length (longest first), so the segments still
    active at position ``i`` are always a prefix of the sorted order; kernels
    keep per-query state in that order and loop over positions only.
    """

    def __init__(self, offsets: np.ndarray):
        lengths = np.diff(offsets)
        self.order = np.argsort(-lengths, kind="stable")
        self.starts = offsets[:-1][self.order]
        sorted_len = lengths[self.order]
        self.n_queries = lengths.size
        self.max_len = int(sorted_len[0]) if sorted_len.size else 0
        # counts[i] = number of segments longer than i
        self.counts = np.searchsorted(-sorted_len, -np.arange(self.max_len), side="left")
        # bounds[i]:bounds[i + 1] is position i's slice of a position-major flat array
        self.bounds = offsets_from_lengths(self.counts)

    def entries(self, i: int) -> np.ndarray:
        """Flat indices of the entries at position ``i`` (sorted-segment order)."""
        return self.starts[: self.counts[i]] + i

    def flat_order(self) -> np.ndarray:
        """Flat entry indices in position-major order.

        ``x[pm.flat_order()][pm.bounds[i]:pm.bounds[i + 1]]`` equals
        ``x[pm.entries(i)]``.  Gathering per-entry data once into this order
        turns every position step of a kernel into a contiguous slice instead
        of a strided gather.
        """
        pos = np.repeat(np.arange(self.max_len, dtype=np.int64), self.counts)
        rank = np.arange(pos.size, dtype=np.int64) - np.repeat(self.bounds[:-1], self.counts)
        return self.starts[rank] + pos

    def unsort(self, values: np.ndarray) -> np.ndarray:
        out = np.empty_like(values)
        out[self.order] = values
        return out
