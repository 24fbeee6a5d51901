"""Compiled (numba) twins of the ``prefix`` design's judging walk and planning sums: the optional ``fast`` extra.

Imported only when the numba backend is selected
(:func:`activerank.metrics.moments.kernel_backend`), never at ``import activerank``.
The NumPy path (:func:`activerank.design.kinds.prefix.judging_paths` and the ``tau``
grid of :func:`activerank.design.kinds.prefix.plan_prefix`) processes all paths as
arrays and recomputes every document's gradient from padded
``(paths, systems, k)`` blocks at every step, then makes 24 passes over
``(paths, steps)`` arrays for the grid; it allocates a dozen temporaries per step.
Here each path is walked in registers and a per-path scratch array, and the
grid sums are accumulated in the same pass over a query's simulated paths.
The formulas and the order of operations are those of the NumPy path (which
sums the gradient's systems and the norm's outputs one by one for this reason),
so the scores are equal bit for bit and exact ties of the adaptive order break
the same way; the planning sums agree to rounding (tested to 1e-10).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["judging_paths", "planning_sums"]


@njit(cache=True, nogil=True)
def _walk(rho, pos, todo, sd, f, discount, contrast, adaptive, docs, grads, scores, S, T, gs, G, a):
    """One path's judging sequence; fills ``docs`` (J,), ``grads`` (J, t), ``scores`` (J,) in place.

    ``rho`` (s, k) is the path's state (modified), ``todo`` (J,) its undecided documents (modified);
    ``S, T, gs`` (s, k), ``G`` (J, t) and ``a`` (J,) are scratch.
    """
    s, k = rho.shape
    J = pos.shape[0]
    t = contrast.shape[0]
    for step in range(J):
        left = False
        for j in range(J):
            if todo[j]:
                left = True
                break
        if not left:
            return
        for si in range(s):
            S[si, 0] = 1.0
            for r in range(1, k):
                S[si, r] = S[si, r - 1] * (1.0 - rho[si, r - 1])
            T[si, k - 1] = 0.0
            for r in range(k - 2, -1, -1):
                T[si, r] = discount[r + 1] * rho[si, r + 1] + (1.0 - rho[si, r + 1]) * T[si, r + 1]
            for r in range(k):
                gs[si, r] = S[si, r] * (discount[r] - T[si, r])
        best = -1
        best_a = -np.inf
        for j in range(J):
            if not todo[j]:
                continue
            nrm = 0.0
            for o in range(t):
                acc = 0.0
                for si in range(s):
                    p = pos[j, si]
                    if p >= 0:
                        acc += gs[si, p] * contrast[o, si]
                G[j, o] = acc
                nrm += acc * acc
            a[j] = sd[j] * np.sqrt(nrm)
            if adaptive:
                if a[j] > best_a:
                    best_a = a[j]
                    best = j
            elif best < 0:
                best = j
        docs[step] = best
        for o in range(t):
            grads[step, o] = G[best, o]
        scores[step] = a[best]
        for si in range(s):
            p = pos[best, si]
            if p >= 0:
                rho[si, p] = f[best]
        todo[best] = False


@njit(cache=True, nogil=True)
def judging_paths(queries, rho_sys, pos, mask, sd, f, discount, contrast, adaptive):
    """Numba twin of :func:`activerank.design.kinds.prefix.judging_paths` (same arguments, unpacked layout)."""
    B = queries.size
    J = pos.shape[1]
    s, k = rho_sys.shape[1], rho_sys.shape[2]
    t = contrast.shape[0]
    docs = np.full((B, J), -1, dtype=np.int64)
    grads = np.zeros((B, J, t))
    scores = np.full((B, J), np.inf)
    rho = np.empty((s, k))
    S = np.empty((s, k))
    T = np.empty((s, k))
    gs = np.empty((s, k))
    G = np.empty((J, t))
    a = np.empty(J)
    todo = np.empty(J, dtype=np.bool_)
    for b in range(B):
        q = queries[b]
        rho[:, :] = rho_sys[q]
        todo[:] = mask[q]
        _walk(rho, pos[q], todo, sd[b], f[b], discount, contrast, adaptive, docs[b], grads[b], scores[b],
              S, T, gs, G, a)
    return docs, grads, scores


@njit(cache=True, nogil=True)
def planning_sums(queries, n_sims, rho_sys, pos, mask, cost, rho, sd, f, discount, contrast, adaptive, grid,
                  within_defensive):
    """The planning averages of :func:`activerank.design.kinds.prefix.plan_prefix` for one chunk of queries.

    Parameters
    ----------
    queries : (n,) int64
    n_sims : int
    rho_sys : (N, s, k); pos : (N, J, s); mask, cost : (N, J)
        The layout.
    rho, sd : (n, J)
        The model's mean and sd of every document's ``R(y)`` (layout order).
    f : (n * n_sims, J)
        ``R(y)`` of the simulated labels, query-major.
    grid : (G,)
        ``tau`` grid as shares of the query's largest score.

    Returns
    -------
    floor : (n,)
    taus : (G, n)
    W : (G, n, t)
        Mean added within-query variance per output.
    C : (G, n)
        Mean cost of the judged prefix.
    """
    n = queries.size
    J = pos.shape[1]
    s, k = rho_sys.shape[1], rho_sys.shape[2]
    t = contrast.shape[0]
    ng = grid.size
    floor = np.zeros(n)
    taus = np.zeros((ng, n))
    W = np.zeros((ng, n, t))
    C = np.zeros((ng, n))
    docs = np.empty((n_sims, J), dtype=np.int64)
    grads = np.empty((n_sims, J, t))
    scores = np.empty((n_sims, J))
    rhos = np.empty((s, k))
    S = np.empty((s, k))
    T = np.empty((s, k))
    gs = np.empty((s, k))
    G = np.empty((J, t))
    a = np.empty(J)
    todo = np.empty(J, dtype=np.bool_)
    w = np.empty(t)
    Mq = np.empty((n_sims, J))
    e2 = np.empty((n_sims, J, t))
    cq = np.empty((n_sims, J))
    nst = np.zeros(n_sims, dtype=np.int64)
    for i in range(n):
        q = queries[i]
        docs[:, :] = -1
        grads[:, :, :] = 0.0
        scores[:, :] = np.inf
        total = 0.0
        count = 0
        top = 0.0
        for m in range(n_sims):
            b = i * n_sims + m
            rhos[:, :] = rho_sys[q]
            todo[:] = mask[q]
            _walk(rhos, pos[q], todo, sd[i], f[b], discount, contrast, adaptive, docs[m], grads[m], scores[m],
                  S, T, gs, G, a)
            for step in range(J):
                if docs[m, step] < 0:
                    break
                total += scores[m, step]
                count += 1
                if scores[m, step] > top:
                    top = scores[m, step]
        fl = within_defensive * (total / max(count, 1))
        floor[i] = fl
        scale = max(top, fl)
        # per step, once for every tau: the running minimum of the floored scores (P = min(1, M / tau) is
        # the running minimum of min(1, max(score, floor) / tau): division by tau > 0 is monotone), the
        # squared increment per output and the step's cost
        for m in range(n_sims):
            b = i * n_sims + m
            run = np.inf
            nst[m] = 0
            for step in range(J):
                d = docs[m, step]
                if d < 0:
                    break
                run = min(run, max(scores[m, step], fl))
                Mq[m, step] = run
                r = f[b, d] - rho[i, d]
                for o in range(t):
                    e2[m, step, o] = r * r * grads[m, step, o] ** 2
                cq[m, step] = cost[q, d]
                nst[m] = step + 1
        for gi in range(ng):
            tau = grid[gi] * scale if fl > 0 else 0.0
            taus[gi, i] = tau
            for o in range(t):
                w[o] = 0.0
            cst = 0.0
            for m in range(n_sims):
                for step in range(nst[m]):
                    P = min(1.0, Mq[m, step] / tau) if tau > 0 else 1.0
                    cst += P * cq[m, step]
                    if P > 0:
                        for o in range(t):
                            w[o] += e2[m, step, o] * (1.0 / P - 1.0)
            for o in range(t):
                W[gi, i, o] = w[o] / n_sims
            C[gi, i] = cst / n_sims
    return floor, taus, W, C
