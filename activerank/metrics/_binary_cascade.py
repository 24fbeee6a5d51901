"""Exact cross moment of two cascade metrics whose stopping probability is 0/1.

Reciprocal rank is the cascade ``L = sum_i c_i R_i prod_{j<i} (1 - R_j)`` with
``R = 1[y >= rel]``.  The ERR cross-moment kernel divides by ``E[1 - R]``, which
is 0 for a document the model is sure is relevant; with binary ``R`` no division
is needed, because ``R^2 = R``, ``(1 - R)^2 = 1 - R`` and ``R (1 - R) = 0``:

``E[R(a_i) P^a_i R(b_l) P^b_l]`` (``P`` the products of ``1 - R`` above a rank)
is 0 if ``a_i`` lies above ``b_l`` in ``b`` or ``b_l`` above ``a_i`` in ``a``;
otherwise it is ``r(a_i) r(b_l) U(i, l)`` (``r(a_i) U(i, l)`` when
``a_i = b_l``), with ``U(i, l)`` the product of ``E[1 - R]`` over the *union* of
the items above ``a_i`` in ``a`` and above ``b_l`` in ``b``.  Walking down ``a``,
``U(i + 1, l) = U(i, l) E[1 - R(a_i)]`` for the ranks ``l`` of ``b`` that
``a_i`` is not above, and unchanged elsewhere: products only.

``O(n_a n_b)`` per query, vectorized over blocks of queries of similar length
and looping over the ranks of ``a`` only, like the ERR kernel.
"""

from __future__ import annotations

import numpy as np

from ..ragged import PositionMajor, Rankings
from . import _stats
from ._stats import (
    _CascadeStats,
    _cascade_entry_stats,
    _cascade_recursion,
    _discounts,
    _block_entries,
    _match,
)
from .registry import Metric

__all__ = ["binary_cascade_pair"]


def _cross_block(sa: _CascadeStats, sb: _CascadeStats, ra: Rankings, rb: Rankings, queries, pos_ab, c_all):
    """``E[L_a L_b]`` for one block of queries sorted by ``len(a)`` descending."""
    q_n = queries.size
    na = int(ra.lengths[queries].max(initial=0))
    nb = int(rb.lengths[queries].max(initial=0))
    if na == 0 or nb == 0:
        return np.zeros(q_n)
    w = nb + 1  # spare column l = nb stands for "absent from b" (discount 0)
    cb = np.append(c_all[:nb], 0.0)
    # per-block entry indices: the work stays linear in the block, never in the pool
    eb, in_b = _block_entries(rb.offsets[queries], rb.lengths[queries], nb)
    U = np.ones((q_n, w))
    if nb > 1:
        np.cumprod(np.where(in_b[:, :-1], sb.u[eb[:, :-1]], 1.0), axis=1, out=U[:, 1:nb])
    F = np.zeros((q_n, w))  # c_l r(b_l) while b_l is not above the current a_i in a
    F[:, :nb] = np.where(in_b, cb[:nb] * sb.r[eb], 0.0)

    ea, in_a = _block_entries(ra.offsets[queries], ra.lengths[queries], na)
    ea, in_a = ea.T, in_a.T
    p = np.where(in_a, np.minimum(pos_ab[ea], nb), nb)
    coef = c_all[:na][:, None] * np.where(in_a, sa.r[ea], 0.0)  # c_i r(a_i)
    u_a = np.where(in_a, sa.u[ea], 1.0)
    c_p = cb[p]
    active = np.searchsorted(-ra.lengths[queries], -np.arange(na), side="left")

    rows = np.zeros((na, q_n))
    lidx = np.arange(w)
    Z = np.empty((q_n, w))
    below = np.empty((q_n, w), dtype=bool)
    for i in range(na):
        n = active[i]
        Un, pi = U[:n], p[i, :n]
        sel = np.arange(n)
        np.multiply(Un, F[:n], out=Z[:n])
        np.less(lidx, pi[:, None], out=below[:n])
        rows[i, :n] = np.einsum("ij,ij->i", Z[:n], below[:n]) + c_p[i, :n] * Un[sel, pi]
        # a_i joins the prefix of a: every rank of b it is not above gains the factor E[1 - R(a_i)]
        np.multiply(Un, u_a[i, :n, None], out=Un, where=lidx <= pi[:, None])
        F[sel, pi] = 0.0
    return (coef * rows).sum(axis=0)


def binary_cascade_pair(probs: np.ndarray, ra: Rankings, rb: Rankings, metric: Metric):
    """Joint moments of a binary cascade metric for two rankings of every query.

    Same contract as the ERR pair kernel: returns ``mean_a, mean_b, var_a,
    var_b, cov, delta_variance``, each of shape (n_queries,).
    """
    pa, pb = PositionMajor(ra.offsets), PositionMajor(rb.offsets)
    oa, ob = pa.flat_order(), pb.flat_order()
    sa = _cascade_entry_stats(probs, ra.items, metric)
    sb = _cascade_entry_stats(probs, rb.items, metric)
    mean_a, var_a = _cascade_recursion(pa, _CascadeStats(sa.r[oa], sa.u[oa], sa.var[oa]), metric)
    mean_b, var_b = _cascade_recursion(pb, _CascadeStats(sb.r[ob], sb.u[ob], sb.var[ob]), metric)
    m = ra.n_queries
    ia, ib = _match(ra, rb, probs.shape[0])
    pos_ab = np.full(ra.items.size, np.iinfo(np.int64).max)
    pos_ab[ia] = rb.positions()[ib]
    c_all = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))) + 1)
    cross = np.zeros(m)
    size_b = np.maximum(rb.lengths, 1)
    order = np.argsort(-size_b, kind="stable")
    start = 0
    while start < m:
        width = int(size_b[order[start]])
        n_q = max(1, _stats._PAIR_BLOCK_ELEMENTS // width)
        block = order[start : start + n_q]
        block = block[np.argsort(-ra.lengths[block], kind="stable")]
        cross[block] = _cross_block(sa, sb, ra, rb, block, pos_ab, c_all)
        start += n_q
    cov = cross - mean_a * mean_b
    dvar = np.maximum(var_a + var_b - 2.0 * cov, 0.0)
    return mean_a, mean_b, var_a, var_b, cov, dvar
