"""NumPy kernels of the cross moment ``E[L_a L_b | x]`` of two rankings (the formulas are in
:mod:`activerank.metrics.moments`): additive metrics, and ERR in general or when the shared items keep
their order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ragged import PositionMajor, Rankings, offsets_from_lengths, segment_ids
from . import _stats
from ._stats import (
    _additive_entry_stats,
    _block_entries,
    _cascade_entry_stats,
    _cascade_recursion,
    _CascadeStats,
    _discounts,
    _match,
)
from .registry import Metric


def _additive_pair(probs, ra: Rankings, rb: Rankings, metric: Metric):
    mu_a, va = _additive_entry_stats(probs, ra.items, metric)
    mu_b, vb = _additive_entry_stats(probs, rb.items, metric)
    disc = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))))
    da, db = disc[ra.positions()], disc[rb.positions()]
    qa, qb = ra.query_index(), rb.query_index()
    m = ra.n_queries
    mean_a = np.bincount(qa, da * mu_a, minlength=m)
    mean_b = np.bincount(qb, db * mu_b, minlength=m)
    var_a = np.bincount(qa, da * da * va, minlength=m)
    var_b = np.bincount(qb, db * db * vb, minlength=m)
    ia, ib = _match(ra, rb, probs.shape[0])
    cov = np.bincount(qa[ia], da[ia] * db[ib] * va[ia], minlength=m)
    # Var[L_a - L_b] directly as sum_z (d_a(z) - d_b(z))^2 v_z: no cancellation
    coef_a = da.copy()
    coef_a[ia] -= db[ib]
    only_b = np.ones(rb.items.size, dtype=bool)
    only_b[ib] = False
    dvar = np.bincount(qa, coef_a**2 * va, minlength=m) + np.bincount(
        qb[only_b], (db**2 * vb)[only_b], minlength=m
    )
    return mean_a, mean_b, var_a, var_b, cov, dvar


def _cascade_cross_block(sa: _CascadeStats, sb: _CascadeStats, off_a, len_a, off_b, len_b, pos_ab, c_all):
    """``E[L_a L_b]`` for one block of queries, sorted by ``len(a)`` descending.

    Walks down list ``a`` (one step per rank ``i``, vectorized over the block's
    queries and over all ranks ``l`` of ``b``) keeping, per query,

    * ``S_i = prod_{j<i} E[1 - R(a_j)]`` (precomputed for the whole block);
    * ``V(l) = E[P^a_i P^b_l] / S_i``: the prefix products of ``b``, with the
      factor ``h = E[(1-R)^2] / E[1-R]^2`` for every item already above both
      ``a_i`` and ``b_l`` (``V <= 1``, so nothing overflows);
    * ``F(l) = c_l E[R(b_l)]``, or ``c_l E[R(1-R)] / E[1-R]`` once ``b_l`` is
      above ``a_i`` in ``a``.

    With ``z = a_i`` at rank ``p`` of ``b`` (``p = nb`` if absent) the row sum
    ``sum_l c_l E[R(a_i) P^a_i R(b_l) P^b_l]`` is
    ``S_i (E[R_z] sum_{l<p} V F + E[R_z^2] c_p V(p) + E[R_z(1-R_z)]/E[1-R_z] sum_{l>p} V F)``;
    stepping to ``i + 1`` multiplies ``V(l > p)`` by ``h_z`` and switches ``F(p)``.
    Each step is five passes over a (queries x nb) array; everything that does
    not depend on ``V`` is computed for all steps at once.  A spare column
    ``l = nb`` (``F = 0``, ``c = 0``) absorbs the updates of items absent from
    ``b``, so no step needs a mask.
    """
    q_n = len_a.size
    na = int(len_a.max(initial=0))
    nb = int(len_b.max(initial=0))
    if na == 0 or nb == 0:
        return np.zeros(q_n)
    w = nb + 1
    cb = np.append(c_all[:nb], 0.0)
    eb, in_b = _block_entries(off_b, len_b, nb)
    # V(l) at i = 0: exclusive prefix products of E[1 - R] down b
    V = np.ones((q_n, w))
    if nb > 1:
        np.cumprod(np.where(in_b[:, :-1], sb.u[eb[:, :-1]], 1.0), axis=1, out=V[:, 1:nb])
    F = np.zeros((q_n, w))
    F[:, :nb] = np.where(in_b, cb[:nb] * sb.r[eb], 0.0)

    # per-step quantities, transposed to (na, queries) so step i reads contiguous rows
    ea, in_a = _block_entries(off_a, len_a, na)
    ea, in_a = ea.T, in_a.T
    p = np.where(in_a, np.minimum(pos_ab[ea], nb), nb)
    a_u = np.where(in_a, sa.u[ea], 1.0)
    S = np.ones((na, q_n))
    if na > 1:
        np.cumprod(a_u[:-1], axis=0, out=S[1:])
    ci = (c_all[:na] * in_a.T).T * S  # c_i S_i, zero past the end of a
    a_ratio = sa.ru[ea] / a_u
    coef_left = ci * sa.r[ea]
    coef_mid = ci * sa.r2[ea] * cb[p]
    coef_right = ci * a_ratio
    h = (sa.w[ea] / (a_u * a_u))[:, :, None]
    flat = np.arange(q_n)[None, :] * w + p  # (i, query) -> flat index of (query, p)
    f_new = cb[p] * a_ratio  # F(p) after a_i = b_p enters a's prefix (0 in the spare column)
    active = np.searchsorted(-len_a, -np.arange(na), side="left")

    left = np.zeros((na, q_n))
    mid = np.zeros((na, q_n))
    right = np.zeros((na, q_n))
    Z = np.empty((q_n, w))
    mask = np.empty((q_n, w), dtype=bool)
    Vf, Zf, Ff = V.reshape(-1), Z.reshape(-1), F.reshape(-1)
    ones = np.ones(w)
    lidx = np.arange(w)
    for i in range(na):
        n = active[i]
        Vn, Zn, Mn = V[:n], Z[:n], mask[:n]
        fi = flat[i, :n]
        np.multiply(Vn, F[:n], out=Zn)
        total = Zn @ ones
        np.greater(lidx, p[i, :n, None], out=Mn)
        r_sum = np.einsum("ij,ij->i", Zn, Mn)
        right[i, :n] = r_sum
        left[i, :n] = total - r_sum - Zf[fi]
        mid[i, :n] = Vf[fi]
        np.multiply(Vn, h[i, :n], out=Vn, where=Mn)
        Ff[fi] = f_new[i, :n]
    # sums of nonnegative terms: clip the rounding of total - right - Z(p)
    np.maximum(left, 0.0, out=left)
    return (coef_left * left + coef_mid * mid + coef_right * right).sum(axis=0)


def _order_consistent(ia: np.ndarray, ib: np.ndarray, qb: np.ndarray, m: int) -> np.ndarray:
    """Queries whose shared items appear in the same relative order in both lists.

    ``ia, ib`` are matched entries ordered by ``ib`` (as :func:`_match` returns
    them).  Queries are laid out in the same order in both flat arrays, so the
    shared items of a query keep their order exactly when ``ia`` increases
    along its matches: a decrease can only happen inside one query.
    """
    ok = np.ones(m, dtype=bool)
    if ia.size > 1:
        down = np.flatnonzero(ia[1:] < ia[:-1])
        ok[qb[ib[down + 1]]] = False
    return ok


def _subset_entries(offsets: np.ndarray, queries: np.ndarray):
    """Flat entry indices of the selected queries (in that order) and their CSR offsets."""
    lengths = offsets[queries + 1] - offsets[queries]
    sub_off = np.zeros(queries.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=sub_off[1:])
    idx = np.arange(int(sub_off[-1]), dtype=np.int64)
    idx += np.repeat(offsets[queries] - sub_off[:-1], lengths)
    return idx, sub_off


def _merged_slots(off_a, off_b, ja, jb):
    """Position of both lists' entries in one merged sequence per query.

    The shared items of every query appear in the same order in both lists
    (``ja, jb``: matched entries, increasing in both).  Then one sequence lists
    every item of ``a`` and ``b`` once with both lists' orders preserved: the
    items only in ``b`` go right before the next shared item (or at the end).
    For the ``t``-th shared item, at ranks ``(i, l)``, the position is
    ``i + l - t``; an item only in ``a`` at rank ``i`` after ``s`` shared items
    sits at ``i + l_{s-1} + 1 - s`` (``i`` if ``s = 0``); one only in ``b`` at
    rank ``l`` after ``t`` shared items at ``l + i_t - t`` (``i_t = len(a)``
    past the last shared item).

    Returns
    -------
    slot_a : ndarray of shape (n_a,), slot_b : ndarray of shape (n_b,)
        Position of every entry inside its query's merged sequence (a shared
        item gets the same position from both lists).
    length : ndarray of shape (n_queries,)
        Length of every merged sequence, ``len(a) + len(b) - shared``.
    """
    m = off_a.size - 1
    len_a = np.diff(off_a)
    n_a, n_b = int(off_a[-1]), int(off_b[-1])
    qa, qb = segment_ids(off_a), segment_ids(off_b)
    pos_a = np.arange(n_a, dtype=np.int64) - off_a[qa]
    pos_b = np.arange(n_b, dtype=np.int64) - off_b[qb]
    if jb.size == n_b:  # b is a with items removed (an index update): the merged list is a
        pos_b[jb] = pos_a[ja]
        return pos_a, pos_b, len_a, qa, qb
    if ja.size == n_a:  # a is b with items removed
        pos_a[ja] = pos_b[jb]
        return pos_a, pos_b, np.diff(off_b), qa, qb
    n_shared = np.bincount(qb[jb], minlength=m)
    first = offsets_from_lengths(n_shared)  # index of every query's first shared item in ja/jb
    # shared items above each entry, within its query
    shared = np.zeros(max(n_a, n_b), dtype=bool)
    shared[ja] = True
    s_a = np.cumsum(shared[:n_a]) - shared[:n_a] - first[qa]
    shared[:n_b] = False
    shared[jb] = True
    s_b = np.cumsum(shared[:n_b]) - shared[:n_b] - first[qb]
    i_sh, l_sh = pos_a[ja], pos_b[jb]

    slot_a = pos_a
    below = np.flatnonzero(s_a > 0)  # entries below a shared item (shared entries are set after)
    sb_ = s_a[below]
    slot_a[below] += l_sh[first[qa[below]] + sb_ - 1] + 1 - sb_
    slot_a[ja] = i_sh + l_sh - s_a[ja]
    nxt = len_a[qb]
    above = np.flatnonzero(s_b < n_shared[qb])  # entries of b above some shared item
    nxt[above] = i_sh[first[qb[above]] + s_b[above]]
    slot_b = pos_b
    slot_b += nxt - s_b
    slot_b[jb] = slot_a[ja]
    return slot_a, slot_b, len_a + np.diff(off_b) - n_shared, qa, qb


def _cascade_pair_ordered(probs, ra: Rankings, rb: Rankings, ja, jb, metric: Metric, c_all):
    """All pair moments in one pass when the shared items keep their order (index updates).

    Walks the merged sequence of :func:`_merged_slots` from the bottom, vectorized
    over queries (position-major), keeping for both lists the suffix value's
    mean and variance (the recursion of :func:`_cascade_recursion`, an item
    absent from a list leaving its suffix unchanged) and the cross moment
    ``X = E[S^a S^b]`` (``S_t = c R_t + (1 - R_t) S_{t+1}`` for an item of the
    list, ``R_t`` independent of everything below it):

    * item only in ``a``: ``X <- c_a r B + u X``;
    * item only in ``b``: ``X <- c_b r A + u X``;
    * shared item: ``X <- c_a c_b E[R^2] + E[R(1-R)] (c_a B + c_b A) + E[(1-R)^2] X``,

    with ``A, B`` the suffix means below.  ``O(|Y| (n_a + n_b))``, every term
    nonnegative.  Returns ``mean_a, mean_b, var_a, var_b, cross``.
    """
    slot_a, slot_b, length, qa, qb = _merged_slots(ra.offsets, rb.offsets, ja, jb)
    pm = PositionMajor(offsets_from_lengths(length))
    rank = np.empty(pm.n_queries, dtype=np.int64)
    rank[pm.order] = np.arange(pm.n_queries)
    n = int(pm.bounds[-1])
    # every entry's place in the position-major merged arrays
    at_a = pm.bounds[slot_a] + rank[qa]
    at_b = pm.bounds[slot_b] + rank[qb]
    rows = np.empty(n, dtype=np.int64)
    rows[at_a] = ra.items
    rows[at_b] = rb.items
    ca = np.zeros(n)
    ca[at_a] = c_all[ra.positions()]
    cb = np.zeros(n)
    cb[at_b] = c_all[rb.positions()]
    in_a = np.zeros(n, dtype=bool)
    in_a[at_a] = True
    in_b = np.zeros(n, dtype=bool)
    in_b[at_b] = True
    del slot_a, slot_b, at_a, at_b, qa, qb
    st = _cascade_entry_stats(probs, rows, metric, joint=True)
    del rows
    A, B, VA, VB, X = (np.zeros(pm.n_queries) for _ in range(5))
    tmp = np.empty(pm.n_queries)
    i = pm.max_len - 1
    while i >= 0:
        # positions whose entries fill one chunk: coefficients for them at once
        j = max(int(np.searchsorted(pm.bounds, pm.bounds[i + 1] - _stats._STATS_CHUNK, side="left")), 0)
        j = min(j, i)
        lo0, hi0 = pm.bounds[j], pm.bounds[i + 1]
        co = _ordered_coefficients(st, ca, cb, in_a, in_b, slice(lo0, hi0))
        for t in range(i, j - 1, -1):
            lo, hi = pm.bounds[t] - lo0, pm.bounds[t + 1] - lo0
            k = hi - lo
            a_, b_, va_, vb_, x_, tm = A[:k], B[:k], VA[:k], VB[:k], X[:k], tmp[:k]
            # cross first: it needs the means below this item
            x_ *= co.kw[lo:hi]
            x_ += co.k0[lo:hi]
            np.multiply(co.ka[lo:hi], b_, out=tm)
            x_ += tm
            np.multiply(co.kb[lo:hi], a_, out=tm)
            x_ += tm
            # each list: ((c - E S')^2 + Var S') Var R + u^2 Var S' and c r + u E S', as in
            # _cascade_recursion; an absent item has c r = 0, Var R = 0, u = 1 (exact no-op)
            for c, v, u2, u, mr, mean, var in ((co.ca, co.va, co.ua2, co.ua, co.ma, a_, va_),
                                               (co.cb, co.vb, co.ub2, co.ub, co.mb, b_, vb_)):
                np.subtract(c[lo:hi], mean, out=tm)
                tm *= tm
                tm += var
                tm *= v[lo:hi]
                var *= u2[lo:hi]
                var += tm
                mean *= u[lo:hi]
                mean += mr[lo:hi]
        i = j - 1
    return pm.unsort(A), pm.unsort(B), pm.unsort(VA), pm.unsort(VB), pm.unsort(X)


@dataclass(frozen=True)
class _OrderedCoefficients:
    k0: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    kw: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    va: np.ndarray
    vb: np.ndarray
    ua: np.ndarray
    ub: np.ndarray
    ua2: np.ndarray
    ub2: np.ndarray
    ma: np.ndarray
    mb: np.ndarray


def _ordered_coefficients(st: _CascadeStats, ca, cb, in_a, in_b, sl) -> _OrderedCoefficients:
    """Per-item coefficients of the merged recursion for the entries in ``sl``."""
    r, u, var, r2, w, ru = st.r[sl], st.u[sl], st.var[sl], st.r2[sl], st.w[sl], st.ru[sl]
    ca, cb, in_a, in_b = ca[sl], cb[sl], in_a[sl], in_b[sl]
    both = in_a & in_b
    ma, mb = ca * r, cb * r
    ua, ub = np.where(in_a, u, 1.0), np.where(in_b, u, 1.0)
    return _OrderedCoefficients(
        k0=ca * cb * r2,
        ka=np.where(both, ca * ru, ma),
        kb=np.where(both, cb * ru, mb),
        kw=np.where(both, w, u),
        ca=ca, cb=cb,
        va=np.where(in_a, var, 0.0), vb=np.where(in_b, var, 0.0),
        ua=ua, ub=ub, ua2=ua * ua, ub2=ub * ub, ma=ma, mb=mb,
    )


def _cascade_pair(probs, ra: Rankings, rb: Rankings, metric: Metric, order_preserving=None):
    m = ra.n_queries
    ia, ib = _match(ra, rb, probs.shape[0])
    c_all = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))) + 1)
    qb = rb.query_index()
    ordered = _ordered_queries(ia, ib, qb, m, order_preserving)
    if ordered.all():
        res = _cascade_pair_ordered(probs, ra, rb, ia, ib, metric, c_all)
    elif not ordered.any():
        res = _cascade_pair_general(probs, ra, rb, ia, ib, metric, c_all)
    else:
        res = [np.empty(m) for _ in range(5)]
        for sel, kernel in ((ordered, _cascade_pair_ordered), (~ordered, _cascade_pair_general)):
            queries = np.flatnonzero(sel)
            sa, ea = _subset(ra, queries)
            sb, eb = _subset(rb, queries)
            keep = sel[qb[ib]]
            # matched entries of the selected queries, renumbered into the subsets
            new_a = np.full(ra.items.size, -1, dtype=np.int64)
            new_a[ea] = np.arange(ea.size)
            new_b = np.full(rb.items.size, -1, dtype=np.int64)
            new_b[eb] = np.arange(eb.size)
            part = kernel(probs, sa, sb, new_a[ia[keep]], new_b[ib[keep]], metric, c_all)
            for out, x in zip(res, part):
                out[queries] = x
    return _cascade_pair_finish(*res)


def _subset(r: Rankings, queries: np.ndarray):
    """Rankings of the selected queries and the flat index of their entries in ``r``."""
    idx, offsets = _subset_entries(r.offsets, queries)
    return Rankings(r.items[idx], offsets), idx


def _cascade_pair_general(probs, ra: Rankings, rb: Rankings, ia, ib, metric: Metric, c_all):
    """Pair moments for any two lists: the recursions of each, and the block cross kernel."""
    pa, pb = PositionMajor(ra.offsets), PositionMajor(rb.offsets)
    oa, ob = pa.flat_order(), pb.flat_order()
    # joint stats in CSR order for the cross moment; the recursion wants them position-major
    sa = _cascade_entry_stats(probs, ra.items, metric, joint=True)
    sb = _cascade_entry_stats(probs, rb.items, metric, joint=True)
    mean_a, var_a = _cascade_recursion(pa, _CascadeStats(sa.r[oa], sa.u[oa], sa.var[oa]), metric)
    mean_b, var_b = _cascade_recursion(pb, _CascadeStats(sb.r[ob], sb.u[ob], sb.var[ob]), metric)
    m = ra.n_queries
    cross = np.zeros(m)
    # rank of each a-entry inside b (clipped to the block width later)
    pos_ab = np.full(ra.items.size, np.iinfo(np.int64).max)
    pos_ab[ia] = rb.positions()[ib]
    # Blocks of queries with similar len(b) keep the padding small; inside a
    # block, queries sorted by len(a) make the active ones a prefix at every step.
    len_a, len_b = ra.lengths, rb.lengths
    size_b = np.maximum(len_b, 1)
    order = np.argsort(-size_b, kind="stable")
    start = 0
    while start < m:
        width = int(size_b[order[start]])
        n_q = max(1, _stats._PAIR_BLOCK_ELEMENTS // width)
        block = order[start : start + n_q]
        block = block[np.argsort(-len_a[block], kind="stable")]
        cross[block] = _cascade_cross_block(sa, sb, ra.offsets[block], len_a[block], rb.offsets[block],
                                            len_b[block], pos_ab, c_all)
        start += n_q
    return mean_a, mean_b, var_a, var_b, cross


def _match_tables(ra: Rankings, rb: Rankings, ia, ib):
    """Rank in ``b`` of every a-entry (-1 if absent) and which b-entries are in ``a``."""
    pos_ab = np.full(ra.items.size, -1, dtype=np.int64)
    pos_ab[ia] = rb.positions()[ib]
    shared_b = np.zeros(rb.items.size, dtype=bool)
    shared_b[ib] = True
    return pos_ab, shared_b


def _cascade_pair_finish(mean_a, mean_b, var_a, var_b, cross):
    cov = cross - mean_a * mean_b
    dvar = np.maximum(var_a + var_b - 2.0 * cov, 0.0)
    return mean_a, mean_b, var_a, var_b, cov, dvar


def _ordered_queries(ia, ib, qb, m, order_preserving) -> np.ndarray:
    """Queries for the one-pass cross moment (see ``pool_pair_moments(order_preserving=)``)."""
    if order_preserving is False:
        return np.zeros(m, dtype=bool)
    ok = _order_consistent(ia, ib, qb, m)
    if order_preserving and not ok.all():
        q = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            "`order_preserving`=True requires the documents both rankings list to appear in the same "
            f"order in both; query {q} lists them in a different order (pass None to detect per query)."
        )
    return ok
