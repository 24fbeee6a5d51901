"""Compiled (numba) twins of the moment kernels: the optional ``fast`` extra.

Imported only when the numba backend is selected (see
:func:`activerank.metrics.moments.kernel_backend`), never at ``import activerank``.
Every function loops over queries and, inside a query, over its list in
ranking order: the probability row of an entry is read once, its statistics
are kept in registers or a per-query scratch array, and the recursions of
:mod:`activerank.metrics.moments` run per query -- no position-major
transposition, no padded blocks, no per-step Python overhead.  The formulas
are those of the NumPy kernels (see that module's docstring); the results
agree with them to rounding (tested to 1e-12 relative).

Compiled code is cached on disk (``cache=True``), so only the first process on
a machine pays the compilation (a few seconds).  No ``parallel=True``: the
kernels stay single-threaded like the NumPy path, so timings hold steady on a
shared machine.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["additive_single", "additive_pair", "cascade_single", "cascade_pair"]


# --------------------------------------------------------------------------- item statistics


@njit(cache=True, nogil=True, inline="always")
def _mean_var(probs, z, v):
    """``E[v(y)]`` and ``Var[v(y)]`` of row ``z`` (variance as ``sum_j p_j (v_j s - E v)^2``)."""
    s = 0.0
    mu = 0.0
    for j in range(v.size):
        p = probs[z, j]
        s += p
        mu += p * v[j]
    var = 0.0
    for j in range(v.size):
        d = v[j] * s - mu
        var += probs[z, j] * d * d
    return mu, var


@njit(cache=True, nogil=True, inline="always")
def _cascade_stats3(probs, z, cols):
    """``E[R], E[1-R], Var R`` of row ``z``; ``cols[0]``/``cols[1]`` hold ``R``/``1-R`` per grade."""
    s = 0.0
    r = 0.0
    u = 0.0
    for j in range(cols.shape[1]):
        p = probs[z, j]
        s += p
        r += p * cols[0, j]
        u += p * cols[1, j]
    var = 0.0
    for j in range(cols.shape[1]):
        d = cols[0, j] * s - r
        var += probs[z, j] * d * d
    return r, u, var


@njit(cache=True, nogil=True, inline="always")
def _cascade_stats(probs, z, cols, out):
    """``out[:] = E[R], E[1-R], Var R, E[R^2], E[(1-R)^2], E[R(1-R)]`` of row ``z``.

    ``cols`` has shape (5, n_grades): ``R, 1-R, R^2, (1-R)^2, R(1-R)`` per grade.
    """
    s = 0.0
    r = 0.0
    u = 0.0
    r2 = 0.0
    w = 0.0
    ru = 0.0
    for j in range(cols.shape[1]):
        p = probs[z, j]
        s += p
        r += p * cols[0, j]
        u += p * cols[1, j]
        r2 += p * cols[2, j]
        w += p * cols[3, j]
        ru += p * cols[4, j]
    var = 0.0
    for j in range(cols.shape[1]):
        d = cols[0, j] * s - r
        var += probs[z, j] * d * d
    out[0] = r
    out[1] = u
    out[2] = var
    out[3] = r2
    out[4] = w
    out[5] = ru


# --------------------------------------------------------------------------- single ranking


@njit(cache=True, nogil=True, inline="always")
def _row_block(items, lo, hi):
    """First row and width of the row range ranked by ``items[lo:hi]`` when that range
    is compact (at most twice the list), else width 0.

    A query's documents usually sit in consecutive rows, ranked in a shuffled
    order: reading their statistics row by row (sequential, prefetched) into a
    small scratch array and then following the ranking is ~1.6x faster than
    reading the probability rows in ranking order.
    """
    first = items[lo]
    last = first
    for e in range(lo + 1, hi):
        z = items[e]
        if z < first:
            first = z
        elif z > last:
            last = z
    width = last - first + 1
    if width > 2 * (hi - lo):
        return first, 0
    return first, width


@njit(cache=True, nogil=True)
def additive_single(probs, items, offsets, gain, disc):
    """DCG-type ``E[L]`` and ``Var[L]`` per query: ``sum d mu`` and ``sum d^2 v``."""
    m = offsets.size - 1
    mean = np.zeros(m)
    variance = np.zeros(m)
    longest = 0
    for q in range(m):
        longest = max(longest, offsets[q + 1] - offsets[q])
    mu_of = np.empty(2 * longest)
    var_of = np.empty(2 * longest)
    for q in range(m):
        lo = offsets[q]
        hi = offsets[q + 1]
        if hi == lo:
            continue
        first, width = _row_block(items, lo, hi)
        for i in range(width):
            mu_of[i], var_of[i] = _mean_var(probs, first + i, gain)
        acc_m = 0.0
        acc_v = 0.0
        for e in range(lo, hi):
            if width:
                mu, var = mu_of[items[e] - first], var_of[items[e] - first]
            else:
                mu, var = _mean_var(probs, items[e], gain)
            d = disc[e - lo]
            acc_m += d * mu
            acc_v += d * d * var
        mean[q] = acc_m
        variance[q] = acc_v
    return mean, variance


@njit(cache=True, nogil=True)
def cascade_single(probs, items, offsets, cols, disc):
    """ERR-type ``E[L]`` and ``Var[L]`` per query by the suffix recursion."""
    m = offsets.size - 1
    mean = np.zeros(m)
    variance = np.zeros(m)
    longest = 0
    for q in range(m):
        longest = max(longest, offsets[q + 1] - offsets[q])
    stats = np.empty((2 * longest, 3))
    for q in range(m):
        lo = offsets[q]
        hi = offsets[q + 1]
        if hi == lo:
            continue
        first, width = _row_block(items, lo, hi)
        for i in range(width):
            stats[i, 0], stats[i, 1], stats[i, 2] = _cascade_stats3(probs, first + i, cols)
        mn = 0.0
        vr = 0.0
        for e in range(hi - 1, lo - 1, -1):
            if width:
                i = items[e] - first
                r, u, var = stats[i, 0], stats[i, 1], stats[i, 2]
            else:
                r, u, var = _cascade_stats3(probs, items[e], cols)
            c = disc[e - lo]
            vr = ((c - mn) ** 2 + vr) * var + (u * u) * vr
            mn = c * r + u * mn
        mean[q] = mn
        variance[q] = vr
    return mean, variance


# --------------------------------------------------------------------------- pairs


@njit(cache=True, nogil=True)
def additive_pair(probs, a_items, a_off, b_items, b_off, pos_ab, shared_b, gain, disc):
    """DCG-type pair moments per query.

    ``pos_ab[e]`` is the rank in ``b`` of a-entry ``e`` (-1 if absent) and
    ``shared_b[e]`` whether b-entry ``e`` is also in ``a``.  Returns
    ``mean_a, mean_b, var_a, var_b, cov, delta_var``; ``delta_var`` is
    ``sum_z (d_a(z) - d_b(z))^2 v_z``, free of cancellation.
    """
    m = a_off.size - 1
    mean_a = np.zeros(m)
    mean_b = np.zeros(m)
    var_a = np.zeros(m)
    var_b = np.zeros(m)
    cov = np.zeros(m)
    dvar = np.zeros(m)
    for q in range(m):
        a0 = a_off[q]
        b0 = b_off[q]
        sm = 0.0
        sv = 0.0
        sc = 0.0
        sd = 0.0
        for e in range(a0, a_off[q + 1]):
            mu, var = _mean_var(probs, a_items[e], gain)
            d = disc[e - a0]
            sm += d * mu
            sv += d * d * var
            p = pos_ab[e]
            if p >= 0:
                db = disc[p]
                sc += d * db * var
                d = d - db
            sd += d * d * var
        mean_a[q] = sm
        var_a[q] = sv
        cov[q] = sc
        sm = 0.0
        sv = 0.0
        for e in range(b0, b_off[q + 1]):
            mu, var = _mean_var(probs, b_items[e], gain)
            d = disc[e - b0]
            sm += d * mu
            sv += d * d * var
            if not shared_b[e]:
                sd += d * d * var
        mean_b[q] = sm
        var_b[q] = sv
        dvar[q] = sd
    return mean_a, mean_b, var_a, var_b, cov, dvar


@njit(cache=True, nogil=True)
def _suffix(st, n, disc):
    """Mean and variance of the ERR suffix recursion over ``n`` entries of scratch stats ``st``."""
    mn = 0.0
    vr = 0.0
    for i in range(n - 1, -1, -1):
        c = disc[i]
        u = st[i, 1]
        vr = ((c - mn) ** 2 + vr) * st[i, 2] + (u * u) * vr
        mn = c * st[i, 0] + u * mn
    return mn, vr


@njit(cache=True, nogil=True)
def _cross_general(sa, na, sb, nb, pos, disc, V, F):
    """``E[L_a L_b]`` of one query for any two lists, ``O(n_a n_b)``.

    The per-query form of ``moments._cascade_cross_block``: walking down ``a``,
    ``V[l] = E[P^a_i P^b_l] / S_i`` and ``F[l] = c_l E[R(b_l)]`` (or
    ``c_l E[R(1-R)] / E[1-R]`` once ``b_l`` is above ``a_i`` in ``a``).
    """
    V[0] = 1.0
    for l in range(1, nb):
        V[l] = V[l - 1] * sb[l - 1, 1]
    for l in range(nb):
        F[l] = disc[l] * sb[l, 0]
    S = 1.0
    cross = 0.0
    for i in range(na):
        r = sa[i, 0]
        u = sa[i, 1]
        ratio = sa[i, 5] / u
        p = pos[i]
        if p < 0:
            tot = 0.0
            for l in range(nb):
                tot += V[l] * F[l]
            row = r * tot
        else:
            left = 0.0
            for l in range(p):
                left += V[l] * F[l]
            h = sa[i, 4] / (u * u)
            right = 0.0
            for l in range(p + 1, nb):
                right += V[l] * F[l]
                V[l] *= h
            row = r * left + sa[i, 3] * disc[p] * V[p] + ratio * right
            F[p] = disc[p] * ratio
        cross += disc[i] * S * row
        S *= u
    return cross


@njit(cache=True, nogil=True)
def _pair_ordered(sa, na, sb, nb, pos_a, shared_b, disc):
    """All pair moments of one query whose shared items keep their order, one pass.

    Walks both lists from the bottom (a merged list: an item only in one list
    leaves the other's suffix unchanged) keeping ``A, B`` (suffix means),
    ``VA, VB`` (suffix variances) and ``X = E[S^a S^b]``; see
    ``moments._cascade_pair_ordered``.
    """
    i = na - 1
    l = nb - 1
    A = 0.0
    B = 0.0
    VA = 0.0
    VB = 0.0
    X = 0.0
    while i >= 0 or l >= 0:
        if i >= 0 and pos_a[i] < 0:  # only in a
            ca = disc[i]
            r = sa[i, 0]
            u = sa[i, 1]
            X = ca * r * B + u * X
            VA = ((ca - A) ** 2 + VA) * sa[i, 2] + (u * u) * VA
            A = ca * r + u * A
            i -= 1
        elif l >= 0 and not shared_b[l]:  # only in b
            cb = disc[l]
            r = sb[l, 0]
            u = sb[l, 1]
            X = cb * r * A + u * X
            VB = ((cb - B) ** 2 + VB) * sb[l, 2] + (u * u) * VB
            B = cb * r + u * B
            l -= 1
        else:  # the same item at the bottom of both (the order is preserved)
            ca = disc[i]
            cb = disc[l]
            r = sa[i, 0]
            u = sa[i, 1]
            X = ca * cb * sa[i, 3] + sa[i, 5] * (ca * B + cb * A) + sa[i, 4] * X
            VA = ((ca - A) ** 2 + VA) * sa[i, 2] + (u * u) * VA
            A = ca * r + u * A
            VB = ((cb - B) ** 2 + VB) * sa[i, 2] + (u * u) * VB
            B = cb * r + u * B
            i -= 1
            l -= 1
    return A, B, VA, VB, X


@njit(cache=True, nogil=True)
def cascade_pair(probs, a_items, a_off, b_items, b_off, pos_ab, shared_b, ordered, cols, disc):
    """ERR-type pair moments per query: ``mean_a, mean_b, var_a, var_b, cross``.

    ``ordered[q]``: the shared items of query ``q`` keep their order (one-pass
    kernel); otherwise the general ``O(n_a n_b)`` cross moment.
    """
    m = a_off.size - 1
    mean_a = np.zeros(m)
    mean_b = np.zeros(m)
    var_a = np.zeros(m)
    var_b = np.zeros(m)
    cross = np.zeros(m)
    max_a = 1
    max_b = 1
    for q in range(m):
        max_a = max(max_a, a_off[q + 1] - a_off[q])
        max_b = max(max_b, b_off[q + 1] - b_off[q])
    sa = np.empty((max_a, 6))
    sb = np.empty((max_b, 6))
    V = np.empty(max_b + 1)
    F = np.empty(max_b + 1)
    for q in range(m):
        a0 = a_off[q]
        b0 = b_off[q]
        na = a_off[q + 1] - a0
        nb = b_off[q + 1] - b0
        for i in range(na):
            _cascade_stats(probs, a_items[a0 + i], cols, sa[i])
        for l in range(nb):
            _cascade_stats(probs, b_items[b0 + l], cols, sb[l])
        pos = pos_ab[a0 : a0 + na]
        if ordered[q]:
            A, B, VA, VB, X = _pair_ordered(sa, na, sb, nb, pos, shared_b[b0 : b0 + nb], disc)
            mean_a[q] = A
            mean_b[q] = B
            var_a[q] = VA
            var_b[q] = VB
            cross[q] = X
        else:
            mean_a[q], var_a[q] = _suffix(sa, na, disc)
            mean_b[q], var_b[q] = _suffix(sb, nb, disc)
            if na and nb:
                cross[q] = _cross_general(sa, na, sb, nb, pos, disc, V, F)
    return mean_a, mean_b, var_a, var_b, cross
