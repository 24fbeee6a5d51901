"""Exact inverse-CDF sampling with a guide table (Chen & Asau 1974).

Drawing a query from ``q`` maps a uniform ``u`` to
``min(searchsorted(cdf, u, side="right"), m - 1)``: a binary search of
``log2(m)`` dependent, cache-missing steps per draw, which dominated the
batched Monte-Carlo of the experiment harness.  A guide table splits ``[0, 1)``
into ``G`` equal buckets and stores, for every bucket, the range of ``cdf``
entries that fall into it; a draw looks up its bucket and compares ``u`` with
the few entries there (about one when ``G ~ m``).

The result is *exactly* the searchsorted index -- same draws, bit for bit --
because the bucket of a number is computed by one monotone function
``b(x) = clip(floor(x * G), 0, G - 1)`` for the uniforms and for the table
alike: every entry in a lower bucket than ``u`` is ``< u``, every entry in a
higher bucket is ``> u``, so only the entries sharing ``u``'s bucket need a
comparison.  Runs of equal ``cdf`` values (queries with ``q = 0``) are skipped
in one step, and draws that still meet several distinct entries after a few
steps (a bucket crowded by a very uneven ``q``) fall back to
``np.searchsorted`` on just those draws.

References
----------
.. [1] H.-C. Chen and Y. Asau. "On generating random variates from an
   empirical distribution." AIIE Transactions 6(2), 163-166, 1974.
"""

from __future__ import annotations

import numpy as np

__all__ = ["InverseCDF"]

# Bucket-local comparison steps before the remaining draws fall back to a binary search.
_MAX_STEPS = 4
# Guide-table size cap (32 MiB of int64).
_MAX_BUCKETS = 1 << 22


class InverseCDF:
    """Map uniforms to ``min(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)``.

    Parameters
    ----------
    cdf : array-like of shape (m,)
        Non-decreasing (a cumulative sum of a distribution; ``cdf[-1]`` is
        usually 1).
    n_buckets : int, optional
        Guide-table size (default ``8 * m``, at least 64, at most ``2**22``):
        then about one draw in sixteen meets a table entry to compare with.

    Examples
    --------
    >>> cdf = np.cumsum([0.2, 0.0, 0.5, 0.3])
    >>> u = np.array([0.0, 0.2, 0.19, 0.7, 0.71, 0.999])
    >>> InverseCDF(cdf)(u).tolist()
    [0, 2, 0, 3, 3, 3]
    >>> np.minimum(np.searchsorted(cdf, u, side="right"), 3).tolist()
    [0, 2, 0, 3, 3, 3]
    """

    def __init__(self, cdf, *, n_buckets: int | None = None):
        cdf = np.ascontiguousarray(cdf, dtype=np.float64).reshape(-1)
        if cdf.size == 0:
            raise ValueError("`cdf` must not be empty.")
        if not np.all(np.isfinite(cdf)):
            raise ValueError("`cdf` must be finite.")
        if np.any(cdf[1:] < cdf[:-1]):
            i = int(np.flatnonzero(cdf[1:] < cdf[:-1])[0]) + 1
            raise ValueError(f"`cdf` must be non-decreasing; entry {i} is below entry {i - 1}.")
        m = cdf.size
        if n_buckets is None:
            n_buckets = min(max(8 * m, 64), _MAX_BUCKETS)
        if isinstance(n_buckets, bool) or int(n_buckets) != n_buckets or n_buckets < 1:
            raise ValueError(f"`n_buckets` must be a positive integer; got {n_buckets!r}.")
        self.cdf = cdf
        self.n_buckets = int(n_buckets)
        # first entry of every bucket's range (entries of lower buckets are all < any u in it)
        self.lo = np.searchsorted(self._bucket(cdf), np.arange(self.n_buckets), side="left").astype(np.int64)
        # next entry with a larger value (runs of ties are crossed in one step); m past the end
        change = np.flatnonzero(cdf[1:] != cdf[:-1]) + 1
        run_end = np.append(change, m)
        self.next_larger = np.append(np.repeat(run_end, np.diff(np.r_[0, run_end])), m).astype(np.int64)
        # sentinel entry m: +inf compares above every u, so a walk stops there
        self._cdf_ext = np.append(cdf, np.inf)

    @classmethod
    def from_weights(cls, q) -> "InverseCDF":
        """The sampler of :func:`~activerank.design.sampling.draw_budgeted` for weights ``q``.

        Its cdf is ``cumsum(q / q.sum())`` with the last entry set to 1, and
        ``inv(u)`` equals ``min(searchsorted(that cdf, u, side="right"), m - 1)``
        for every ``u`` in ``[0, 1)``.  Setting the last entry to 1 can leave
        entries just above 1 before it (a rounded sum); a searchsorted over
        that array still finds the right place for ``u < 1`` because all those
        entries exceed ``u``, and so does the suffix minimum used here, which
        is non-decreasing as the guide table requires.

        Examples
        --------
        >>> inv = InverseCDF.from_weights([1.0, 0.0, 3.0])
        >>> inv(np.array([0.1, 0.25, 0.9])).tolist()
        [0, 2, 2]
        """
        q = np.asarray(q, dtype=np.float64).reshape(-1)
        cdf = np.cumsum(q / q.sum())
        cdf[-1] = 1.0
        return cls(np.minimum.accumulate(cdf[::-1])[::-1])

    def _bucket(self, x: np.ndarray) -> np.ndarray:
        b = np.multiply(x, self.n_buckets)
        np.clip(b, 0, self.n_buckets - 1, out=b)
        # truncation is floor on [0, G - 1]; both steps are monotone in x, as the proof needs
        return b.astype(np.int64)

    def __call__(self, u) -> np.ndarray:
        """Indices for uniforms ``u`` (any shape; values in ``[0, 1)``), int64, same shape."""
        u = np.asarray(u, dtype=np.float64)
        shape = u.shape
        u = u.ravel()  # flat (a copy only if u is not contiguous): idx below is updated in place
        idx = self.lo[self._bucket(u)]
        cdf = self._cdf_ext
        # Everything below idx is < u and every entry of a higher bucket is > u: the answer is
        # the first entry from idx on that exceeds u (an empty bucket's idx already does).
        todo = np.flatnonzero(cdf[idx] <= u)
        for _ in range(_MAX_STEPS):
            if todo.size == 0:
                break
            nxt = self.next_larger[idx[todo]]
            idx[todo] = nxt
            todo = todo[cdf[nxt] <= u[todo]]
        if todo.size:
            idx[todo] = np.searchsorted(self.cdf, u[todo], side="right")
        np.minimum(idx, self.cdf.size - 1, out=idx)
        return idx.reshape(shape)
