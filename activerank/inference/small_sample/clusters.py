"""Draws grouped by distinct query: the slot of every draw's query, per-query sums on draw prefixes,
Kish's effective number of distinct queries, and the effective number of queries that carry a
Horvitz-Thompson variance estimate (:func:`effective_clusters`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _first_in_rows(draws: np.ndarray) -> np.ndarray:
    """True at the first occurrence of each value within its row."""
    order = np.argsort(draws, axis=1, kind="stable")
    s = np.take_along_axis(draws, order, axis=1)
    first_sorted = np.ones(s.shape, dtype=bool)
    first_sorted[:, 1:] = s[:, 1:] != s[:, :-1]
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)
    return first


def cluster_slots(queries) -> np.ndarray:
    """Slot of every draw's query in order of first appearance within its row.

    Parameters
    ----------
    queries : array-like of shape (n,) or (n_reps, n_cols), int
        Query (pool index or any integer id) of every draw.

    Returns
    -------
    slots : ndarray of the same shape, int64
        ``0`` for the first distinct query of the row, ``1`` for the second...
        so a draw prefix of length ``t`` holds exactly the slots
        ``< number of distinct queries among its first t draws``.

    Examples
    --------
    >>> cluster_slots([7, 3, 7, 9, 3]).tolist()
    [0, 1, 0, 2, 1]
    """
    x = np.asarray(queries)
    one = x.ndim == 1
    x = np.atleast_2d(x)
    if x.ndim != 2:
        raise ValueError(f"`queries` must be 1-d or 2-d; got shape {np.shape(queries)}.")
    if x.shape[1] == 0:
        return np.zeros(x.shape[1] if one else x.shape, dtype=np.int64)
    first = _first_in_rows(x)
    rank_first = np.cumsum(first, axis=1) - 1  # slot of the draws that open a cluster
    order = np.argsort(x, axis=1, kind="stable")
    s_first = np.take_along_axis(first, order, axis=1)
    s_rank = np.take_along_axis(rank_first, order, axis=1)
    # within the sorted row, carry the opening draw's slot forward over its repeats
    idx = np.where(s_first, np.arange(x.shape[1])[None, :], 0)
    np.maximum.accumulate(idx, axis=1, out=idx)
    s_slot = np.take_along_axis(s_rank, idx, axis=1)
    slots = np.empty_like(s_slot)
    np.put_along_axis(slots, order, s_slot, axis=1)
    return slots[0] if one else slots


@dataclass(frozen=True, eq=False)
class ClusterSums:
    """Per-distinct-query sums of a batch on draw prefixes.

    ``sums[name]`` has shape ``(n_budgets, n_reps, n_slots)``: the sum of the
    named per-draw array over the draws of each distinct query among the
    first ``stops[b, r]`` draws (0 for slots beyond ``n_distinct``).
    """

    sums: dict
    n_distinct: np.ndarray  # (n_budgets, n_reps)
    n_draws: np.ndarray  # (n_budgets, n_reps)

    @property
    def mask(self) -> np.ndarray:
        k = next(iter(self.sums.values())).shape[-1]
        return np.arange(k)[None, None, :] < self.n_distinct[..., None]


def cluster_sums(arrays: dict, slots, stops) -> ClusterSums:
    """Sum per-draw arrays over the draws of each distinct query, on every prefix.

    Parameters
    ----------
    arrays : dict of str to ndarray (n_reps, n_cols)
        Per-draw quantities (e.g. ``w * v`` and ``w``).
    slots : ndarray (n_reps, n_cols), int
        :func:`cluster_slots` of the drawn queries.
    stops : ndarray (n_budgets, n_reps) or (n_reps,)
        Prefix lengths (draws used by every run).

    Returns
    -------
    ClusterSums
    """
    slots = np.asarray(slots, dtype=np.int64)
    n_reps, n_cols = slots.shape
    st = np.atleast_2d(np.asarray(stops)).astype(np.int64)
    if st.shape[1] != n_reps:
        raise ValueError(f"`stops` must have one column per repetition ({n_reps}); got shape {st.shape}.")
    if st.size and (st.min() < 0 or st.max() > n_cols):
        raise ValueError(f"`stops` must lie in 0..{n_cols}; got range {st.min()}..{st.max()}.")
    # slot counts on every prefix: new clusters open in order, so d = 1 + max slot seen so far
    run_max = np.maximum.accumulate(slots, axis=1) if n_cols else slots
    idx = np.maximum(st - 1, 0)
    rows = np.arange(n_reps)[None, :]
    n_distinct = np.where(st > 0, run_max[rows, idx] + 1, 0) if n_cols else np.zeros_like(st)
    k = int(n_distinct.max()) if n_distinct.size else 0
    k = max(k, 1)
    col = np.arange(n_cols)[None, :]
    keys = (np.arange(n_reps)[:, None] * k + np.minimum(slots, k - 1))
    out = {name: np.zeros((st.shape[0], n_reps, k)) for name in arrays}
    for b in range(st.shape[0]):  # loop over budgets only
        use = col < st[b][:, None]
        kb = keys[use]
        for name, arr in arrays.items():
            out[name][b] = np.bincount(kb, weights=np.asarray(arr, dtype=np.float64)[use],
                                       minlength=n_reps * k).reshape(n_reps, k)
    return ClusterSums(out, n_distinct, st)


def kish_distinct(counts, mask):
    """Kish's effective number of distinct queries ``n^2 / sum_c k_c^2`` (``d`` when nothing repeats).

    The per-draw variance ``sum_c k_c w_c^2 e_c^2`` is a sum over the ``d``
    distinct queries weighted by their multiplicities ``k_c``; its
    Satterthwaite degrees of freedom (for terms of equal variance) are
    ``(sum k)^2 / sum k^2``.

    Examples
    --------
    >>> float(kish_distinct(np.array([1.0, 1, 1, 1]), np.ones(4, bool)))
    4.0
    >>> float(kish_distinct(np.array([3.0, 1]), np.ones(2, bool)))
    1.6
    """
    k = np.where(mask, counts, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return k.sum(-1) ** 2 / (k * k).sum(-1)


def _kish_dof(n_eff, d):
    """``n_eff - 1`` clipped to ``[1, d - 1]`` (a query drawn 10 times and one drawn once is not 0.2 dof)."""
    d = np.asarray(d, dtype=np.float64)
    return np.clip(np.asarray(n_eff, dtype=np.float64) - 1.0, np.minimum(1.0, d - 1.0), d - 1.0)


def effective_clusters(terms, clusters=None):
    """Kish's effective number of clusters carrying a variance estimate, ``(sum_c v_c)^2 / sum_c v_c^2``.

    Parameters
    ----------
    terms : array-like of shape (n,) or (n, t)
        Every sampled unit's term of the variance estimate (of ``t`` outputs).
    clusters : array-like of shape (n,), int, optional
        The cluster (query) of every unit; None: every unit its own cluster.

    Returns
    -------
    float or ndarray of shape (t,)
        0 where every term is 0 (no variance estimated).

    Examples
    --------
    >>> float(effective_clusters([1.0, 1.0, 1.0, 1.0]))
    4.0
    >>> float(effective_clusters([1.0, 1.0, 2.0], clusters=[0, 0, 1]))
    2.0
    >>> float(effective_clusters([3.0, 1.0]))
    1.6
    """
    v = _cluster_terms(terms, clusters)
    total, sq = v.sum(0), (v * v).sum(0)
    out = np.where(sq > 0, total**2 / np.where(sq > 0, sq, 1.0), 0.0)
    return float(out[0]) if np.ndim(terms) == 1 else out


def _cluster_terms(terms, clusters) -> np.ndarray:
    """The terms summed per cluster, shape (n_clusters, t)."""
    v = np.asarray(terms, dtype=np.float64)
    v = v.reshape(v.shape[0], -1)
    if clusters is None:
        return v
    c = np.asarray(clusters).reshape(-1)
    if c.size != v.shape[0]:
        raise ValueError(f"`clusters` must have one entry per term ({v.shape[0]}); got {c.size}.")
    _, inv = np.unique(c, return_inverse=True)
    g = np.zeros((int(inv.max()) + 1 if inv.size else 0, v.shape[1]))
    np.add.at(g, inv.reshape(-1), v)
    return g


def cluster_dof(terms, clusters=None):
    """Student-t degrees of freedom of a Horvitz-Thompson-type variance estimate that a few clusters carry.

    The estimate is a sum of uncentered per-unit terms; summed per cluster (the
    query of every sampled document or prefix: the residuals of a query share
    the model's error for that query) into ``v_c``, it is a weighted sum of
    independent terms, each a rare-event term whose variance is about its
    square.  Satterthwaite's degrees of freedom ``2 (sum v)^2 / sum Var v_c``
    with ``Var v_c ~ v_c^2`` are twice the effective number of clusters
    (:func:`effective_clusters`), here clipped to ``[1, g - 1]`` for the ``g``
    clusters with a term (never more than the ``g - 1`` of a sample
    variance).  A handful of queries carrying the estimate gives a handful of
    degrees of freedom, however many were sampled.

    Parameters
    ----------
    terms : array-like of shape (n,) or (n, t)
    clusters : array-like of shape (n,), int, optional

    Returns
    -------
    float or ndarray of shape (t,)
        0 where every term is 0 (no variance estimated).

    Examples
    --------
    >>> float(cluster_dof([1.0, 1.0, 1.0, 1.0]))
    3.0
    >>> round(float(cluster_dof([12.0, 1.0, 1.0, 1.0, 1.0])), 2)   # one query carries 3/4 of it
    3.46
    """
    v = _cluster_terms(terms, clusters)
    k = np.atleast_1d(effective_clusters(v))
    g = (v != 0).sum(0)
    out = np.where(k > 0, np.clip(2.0 * k, 1.0, np.maximum(g - 1.0, 1.0)), 0.0)
    return float(out[0]) if np.ndim(terms) == 1 else out
