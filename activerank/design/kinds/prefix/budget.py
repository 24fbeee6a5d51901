"""The hard budget of the ``prefix`` design: queries in priority order, each judged to its own random depth,
the first one that does not fit is cut (``docs/prefix.md`` §7).

Every live query ``x`` (planned inclusion probability ``w_x > 0``) gets a priority
``xi_x = u_x / w_x`` and its own uniform ``U_x`` (its within-query walk,
:func:`.layout.walk_sample`).  Judging the queries one after the other in
ascending ``xi``, the first query whose walk would push the total cost over the
budget is cut the moment its next label does not fit; call it ``f``.  The sample
``S`` is the queries before ``f``, all complete, and ``x`` in ``S`` has the realized
inclusion probability ``min(1, w_x xi_f)`` (1 for every query when none is cut).

Labels come in batches, not one query at a time: a query's walk costs at most
``ub_x`` (its cost so far plus every document it has not judged and can still
reach, :func:`reachable`; its realized cost once complete), so the query at position ``i`` of the priority order is
surely reached, and its next label surely bought by the one-at-a-time process,
when ``sum_{k < i} ub_k + spent_i + next_i <= B``.  :func:`budget_walk` asks for
exactly those labels: every walk that can safely move on does, and the requests
are a pure function of the labels held.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import Walk, walk_sample

__all__ = ["BudgetWalk", "WalkMemo", "budget_walk", "depth_tables", "fits_limit", "reachable"]


def fits_limit(budget: float) -> float:
    """The cumulative cost a walk may reach: ``budget`` up to summation rounding (1e-9 relative, the
    tolerance of :func:`~activerank.design.kinds.query.clamp_cost`)."""
    return float(budget) * (1.0 + 1e-9)


@dataclass(frozen=True, eq=False)
class BudgetWalk:
    """The walks of the first ``n`` queries of the priority order given the labels held.

    Attributes
    ----------
    walk : Walk
        The walks of the first ``n`` queries of ``draw.queries`` (priority order).
    spent : ndarray of shape (n,)
        Cost of every walk's judged documents.
    complete : ndarray of shape (n,), bool
        The walk has stopped (it waits for no label).
    request : ndarray of shape (n,), bool
        The walk waits for a label that is surely bought (module docstring).
    cut : int
        Position of the cut query ``f`` in the priority order (-1: none, or not decided yet).
    n_used : int
        Queries in the sample ``S`` (the ones before ``f``; every live query when none is cut).
    """

    walk: Walk
    spent: np.ndarray
    complete: np.ndarray
    request: np.ndarray
    cut: int
    n_used: int

    @property
    def finished(self) -> bool:
        """No label is needed any more."""
        return not bool(self.request.any())


def reachable(layout, probs, plan, x, U) -> np.ndarray:
    """Documents the walk of query ``x`` with uniform ``U`` can ever judge, shape (n, J), bool.

    A document is judged only if ``U <= stop_scale(a)`` with its score ``a = sd ||g||``
    (:func:`.layout.walk_sample`), whatever the labels before it.  For a cascade metric with
    ``R(y)`` in [0, 1] and discounts ``c >= 0``, the derivative of one ranking's value with respect
    to the document at rank ``r`` is ``S_r (c(r) - T_r)`` with ``S_r`` in [0, 1] and ``T_r`` in
    ``[0, max_{i>r} c(i)]``, so ``|g_s| <= max_{i>=r} c(i)`` and ``||g|| <= ||sum_s |C_s| max_{i>=r_s} c(i)||``
    bounds the score in every state.  Documents whose bound falls below ``U`` are never judged.
    """
    from .layout import stop_scale

    c = np.asarray(layout.discount, dtype=np.float64)
    if np.any(c < 0):  # no bound: every document may be judged
        return layout.mask[x].copy()
    tail = np.concatenate([np.maximum.accumulate(c[::-1])[::-1], [0.0]])  # max_{i >= r} c(i); absent: 0
    pos = layout.pos[x]  # (n, J, s)
    top = tail[np.where(pos >= 0, pos, c.size)]  # (n, J, s)
    G = np.einsum("njs,ts->njt", top, np.abs(layout.contrast))
    _, sd = layout.document_values(probs, x)
    bound = sd * np.sqrt((G**2).sum(-1)) * (1.0 + 1e-9)  # a little above: rounding of the walk's own score
    scale = stop_scale(bound, plan.floor[x][:, None], plan.tau[x][:, None])
    return layout.mask[x] & (np.asarray(U)[:, None] <= scale)


def _walk_states(layout, probs, plan, x, U, order, labels):
    walk = walk_sample(layout, probs, plan, x, U, order, labels)
    cost = layout.cost[x]
    steps = np.where(walk.docs >= 0, np.take_along_axis(cost, np.maximum(walk.docs, 0), axis=1), 0.0)
    spent = np.where(walk.judged, steps, 0.0).sum(1)
    waiting = walk.waiting >= 0
    at = np.argmax(layout.rows[x] == walk.waiting[:, None], axis=1)  # layout position of the awaited row
    nxt = np.where(waiting, cost[np.arange(x.size), at], 0.0)
    # a walk in progress costs at most its judged documents plus every other one it can still reach
    done = np.zeros(cost.shape, dtype=bool)
    b, st = np.nonzero(walk.judged)
    done[b, walk.docs[b, st]] = True
    left = np.where(reachable(layout, probs, plan, x, U) & ~done, cost, 0.0).sum(1)
    ub = np.where(waiting, spent + left, spent)
    return walk, spent, ~waiting, nxt, ub


class WalkMemo:
    """The walk states of one draw's priority order, kept between the batches of a run.

    A query's walk reads the labels of the rows it judged and of the row it waits for, nothing else
    (:func:`.layout.walk_sample`), and the walk of one query does not depend on the others', so a kept state
    is reused while those labels are unchanged (the judged rows hold the same grades, the awaited row is still
    unjudged) and only the other queries are walked again: the same states as a full replay, bit for bit.
    Create one per (layout, model, plan, draw, order); :func:`budget_walk` fills it.
    """

    _FIELDS = ("D", "P", "judged", "docs", "waiting")

    def __init__(self):
        self.n = 0  # positions of the priority order kept: 0 .. n - 1
        self.parts: tuple = ()  # walk fields, spent, complete, nxt, ub, rows read (-1: none), their grades

    def states(self, layout, probs, plan, x, U, order, labels, lo: int, hi: int):
        """:func:`_walk_states` of positions ``lo:hi`` of the priority order ``x`` (uniforms ``U``)."""
        size = hi - lo
        fresh = np.ones(size, dtype=bool)
        if self.n > lo:
            kept = min(self.n, hi) - lo
            fresh[:kept] = ~self._unchanged(lo, lo + kept, labels)
        redo = np.flatnonzero(fresh)
        if redo.size == size and self.n <= lo:  # nothing kept here: walk the chunk as one batch
            out = self._with_reads(layout, x[lo:hi], _walk_states(layout, probs, plan, x[lo:hi], U[lo:hi], order,
                                                                  labels), labels)
        else:
            self._grow(hi)  # positions past the kept ones are all in ``redo``
            out = tuple(a[lo:hi].copy() for a in self.parts)
            if redo.size:
                new = self._with_reads(layout, x[lo + redo], _walk_states(layout, probs, plan, x[lo + redo],
                                                                          U[lo + redo], order, labels), labels)
                for a, b in zip(out, new):
                    a[redo] = b
        self._store(lo, hi, out)
        walk = Walk(*out[:5])
        return (walk,) + out[5:9]

    def _unchanged(self, lo: int, hi: int, labels) -> np.ndarray:
        read, grades, waiting = self.parts[9][lo:hi], self.parts[10][lo:hi], self.parts[4][lo:hi]
        same = np.where(read >= 0, labels[np.maximum(read, 0)] == grades, True).all(1)
        return same & ((waiting < 0) | (labels[np.maximum(waiting, 0)] < 0))

    @classmethod
    def _with_reads(cls, layout, x, states, labels) -> tuple:
        walk = states[0]
        rows = np.take_along_axis(layout.rows[x], np.maximum(walk.docs, 0), axis=1)
        read = np.where(walk.judged, rows, -1)
        grades = np.where(walk.judged, labels[np.maximum(read, 0)], -1)
        return tuple(getattr(walk, f) for f in cls._FIELDS) + tuple(states[1:]) + (read, grades)

    def _grow(self, hi: int) -> None:
        if hi > self.n:  # chunks double, so the copies add up to a few times the final size
            self.parts = tuple(np.concatenate([p, np.empty((hi - self.n,) + p.shape[1:], dtype=p.dtype)])
                               for p in self.parts)
            self.n = hi

    def _store(self, lo: int, hi: int, out: tuple) -> None:
        if not self.parts:
            self.parts = tuple(np.empty((0,) + a.shape[1:], dtype=a.dtype) for a in out)
        self._grow(hi)
        for p, a in zip(self.parts, out):
            p[lo:hi] = a


def _concat(walks):
    if len(walks) == 1:
        return walks[0]
    return Walk(*(np.concatenate([getattr(w, f) for w in walks]) for f in ("D", "P", "judged", "docs", "waiting")))


def budget_walk(layout, probs, plan, draw, order, labels, budget: float, *, first: int = 0,
                memo: WalkMemo | None = None) -> BudgetWalk:
    """Replay the walks of the priority order on ``labels`` far enough to decide what to ask next.

    Walks the queries in chunks (``first`` queries, then doubling) until the upper bounds of the walked
    queries exceed the budget: no later query can then be reached for sure.

    Parameters
    ----------
    layout : PrefixLayout
    probs : ndarray of shape (n_docs, n_grades)
    plan : PrefixPlan
    draw : PrefixDraw
        Live queries in priority order, their uniforms and priorities.
    order : {"adaptive", "rank"}
    labels : ndarray of shape (n_docs,)
        Grade per document row (-1: unknown).
    budget : float
    first : int
        Queries walked in the first chunk (0: twice the plan's expected sample size, at least 16).
    memo : WalkMemo, optional
        The walk states of earlier calls on the same draw (a run's batches): walks whose labels did not
        change are not replayed.
    """
    x, U = draw.queries, draw.U
    n = x.size
    limit = fits_limit(budget)
    size = first if first > 0 else max(16, int(2 * plan.pi.sum()) + 1)
    parts, lo = [], 0
    total = 0.0
    while True:
        hi = min(n, lo + size) if lo else min(n, size)
        parts.append(_walk_states(layout, probs, plan, x[lo:hi], U[lo:hi], order, labels) if memo is None
                     else memo.states(layout, probs, plan, x, U, order, labels, lo, hi))
        total += float(parts[-1][4].sum())
        lo = hi
        if lo >= n or total > limit:
            break
        size *= 2
    walk = _concat([p[0] for p in parts])
    spent, complete, nxt, ub = (np.concatenate([p[i] for p in parts]) for i in range(1, 5))
    before = np.cumsum(ub) - ub
    request = ~complete & (before + spent + nxt <= limit)
    cut, n_used = -1, lo
    if not request.any():
        # the first walk that cannot go on (or, with labels bought elsewhere, a complete one that does not fit)
        stop = np.flatnonzero(~complete | (before + spent > limit))
        if stop.size:
            cut = n_used = int(stop[0])
        elif lo < n:  # pragma: no cover - the walked upper bounds exceed the budget, so some walk stops
            raise RuntimeError("prefix budget walk: every walk fits although the budget is exhausted")
    return BudgetWalk(walk, spent, complete, request, cut, n_used)


def depth_tables(D, P, m, step_cost):
    """Within-query estimate, its variance estimate and the cost of every judged depth (simulations).

    A walk judges its first ``d`` steps for ``d = #{j : U <= P_j}`` (``P`` non-increasing), so a
    repetition only needs ``d``; the tables give :func:`.sampling.within_estimate` of every depth.

    Parameters
    ----------
    D : ndarray of shape (n, J, t)
    P : ndarray of shape (n, J)
    m : ndarray of shape (n, J), bool
        Real steps (a prefix of every row).
    step_cost : ndarray of shape (n, J)

    Returns
    -------
    E : ndarray of shape (n, J + 1, t)
    V : ndarray of shape (n, J + 1, t, t)
    C : ndarray of shape (n, J + 1)
    """
    n, J, t = D.shape
    Dm = np.where(m[..., None], D, 0.0)
    Pm = np.where(m, P, 1.0)[..., None]
    E = np.zeros((n, J + 1, t))
    E[:, 1:] = np.cumsum(Dm / Pm, axis=1)
    # adding step k: (A_k D_k' + D_k A_k') / P_k + (1/P_k - 1) / P_k D_k D_k', A_k = sum_{j<k} (1/P_j - 1) D_j
    A = np.cumsum((1.0 / Pm - 1.0) * Dm, axis=1) - (1.0 / Pm - 1.0) * Dm
    cross = np.einsum("njs,njt->njst", A / Pm, Dm)
    inc = cross + cross.transpose(0, 1, 3, 2) + np.einsum("njs,njt->njst", ((1.0 / Pm - 1.0) / Pm) * Dm, Dm)
    V = np.zeros((n, J + 1, t, t))
    V[:, 1:] = np.cumsum(inc, axis=1)
    C = np.zeros((n, J + 1))
    C[:, 1:] = np.cumsum(np.where(m, step_cost, 0.0), axis=1)
    return E, V, C
