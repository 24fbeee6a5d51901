"""Judge a random-depth prefix of every sampled query: two-stage sampling for cascade metrics (ERR, RR).

A cascade metric ``L = sum_i c(i) R(y_i) prod_{j<i} (1 - R(y_j))`` is not a sum
over documents, so the document-level designs (:mod:`activerank.design.documents`)
do not apply; but it is *multilinear* in the per-document values ``R(y_d)``.
Under the relevance model (labels independent given ``x``), the expected value
given the labels of some documents is therefore the metric evaluated with
``R(y_d)`` for the judged documents and ``rho_d = E[R(y_d) | x, d]`` for the
others.  Judge the query's documents (the union of the compared top-``k``
lists; with ``judge="changeable"`` only those that can change a contrast) one
by one in a *predictable* order -- by default, next the document with the
largest ``sd(R(y_d)) ||g_d||`` given the labels seen (:class:`JudgingWalk`;
``order="rank"``: best rank first) -- and let ``G_j`` be that conditional
expectation after ``j`` judgments: ``G_0 = m(x)`` is the model's prediction,
``G_J = L`` the true value, and the increments are exact,

``D_j = G_j - G_{j-1} = (R(y_j) - rho_j) g_j``,

with ``g_j`` the gradient of the target's contrasts with respect to document
``j``'s value at the state before it is judged (it depends on earlier labels
only).  Stop after document ``j`` with a probability that may depend on the
labels seen: with ``U ~ Uniform(0, 1)`` drawn once per query and a
non-increasing sequence ``P_j`` computed from the labels before step ``j``,
the ``j``-th document is judged iff ``U <= P_j``, so ``P(judged | labels) = P_j`` and

``e(x) = sum_{j judged} D_j / P_j``

is an unbiased estimate of ``L(x) - m(x)`` whatever the model.  Here
``P_j = min(1, min_{l <= j} max(a_l, f_x) / tau_x)`` with the model's
standard deviation of the increment ``a_l = sd(R(y_l)) ||g_l||`` (deep
documents and documents below a likely relevant one matter little) and a
defensive floor ``f_x``.  Queries are a Poisson sample with probabilities
``pi_x``; the estimate is

``T_hat = sum_pool p m + sum_S p (e / pi)``,

with the unbiased variance estimate ``sum_S p^2 [(1 - pi)/pi^2 e e' +
V_hat_x / pi]`` (pooled with the model's predicted variance as ``PRIOR_DOF``
pseudo observations, :func:`pooled_covariance`), where ``V_hat_x = sum_{j, l judged} D_j D_l'
(1/P_{min(j,l)} - 1) / P_{max(j,l)}`` estimates the within-query variance
``sum_{j,l} D_j D_l' (1/P_{min(j,l)} - 1)`` (two judgments ``j < l`` happen
together iff ``U <= P_l``).

The design (:func:`plan_prefix`) chooses ``tau_x`` and ``pi_x`` together:
for a price ``mu`` of one unit of expected cost, every query takes the
``tau`` (from a grid, ``tau = 0`` meaning "judge everything") and ``pi``
minimizing ``p^2 (V + W(tau)) / pi - p^2 V + mu pi C(tau)``, where ``V`` is
the model's variance of the query's contrasts, ``W(tau)`` the added
within-query variance and ``C(tau)`` the expected cost of the judged prefix
(both by Monte Carlo under the model; the Monte Carlo only shapes the
design, the estimate stays unbiased); ``mu`` is set so that the expected
cost equals the budget.  Spending the budget in expectation is what the
Poisson document designs do too (:mod:`activerank.engine.documents`).

References
----------
.. [1] O. Chapelle, D. Metzler, Y. Zhang, P. Grinspan. "Expected reciprocal
   rank for graded relevance." CIKM 2009 (the cascade metric).
.. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992, Sec. 4.3 (two-stage designs, their variance
   and its unbiased estimator).
.. [3] G. V. Cormack, M. R. Grossman. "Unbiased low-variance estimators for
   precision and related information retrieval effectiveness measures."
   SIGIR 2019 (the model's expectation plus importance-weighted residuals).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ....metrics._blas import single_blas_thread
from ....metrics.moments import kernel_backend
from ....ragged import Rankings

__all__ = ["JudgingWalk", "PrefixLayout", "Walk", "judging_paths", "prefix_layout", "stop_probabilities", "stop_scale",
           "walk_sample"]


@dataclass(frozen=True, eq=False)
class PrefixLayout:
    """Every query's documents in judging order (padded), and where they sit in each ranking.

    Attributes
    ----------
    rows : ndarray of shape (n_queries, J), int64
        Global document rows in judging order; ``-1`` pads.
    mask : ndarray of shape (n_queries, J), bool
        Real entries.
    pos : ndarray of shape (n_queries, J, n_systems), int64
        0-based rank of the document in every system's top ``k`` (``-1``: absent).
    system_rows : ndarray of shape (n_queries, n_systems, k), int64
        Every system's top ``k`` (``-1`` pads).
    cost : ndarray of shape (n_queries, J)
        Cost of a new judgment in the budget's unit (0 for padding and documents judged already).
    values : ndarray of shape (n_grades,)
        The metric's ``R(y)`` per grade.
    discount : ndarray of shape (k,)
        ``c(i)`` per 0-based rank.
    contrast : ndarray of shape (n_outputs, n_systems)
    """

    rows: np.ndarray
    mask: np.ndarray
    pos: np.ndarray
    system_rows: np.ndarray
    cost: np.ndarray
    values: np.ndarray
    discount: np.ndarray
    contrast: np.ndarray
    # the model's values of the last ``probs`` seen ({"probs": probs, name: array}): a prefix run replays its
    # walks once per batch of labels, with the same model every time
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_queries(self) -> int:
        return self.rows.shape[0]

    def _model(self, probs, name, compute):
        if self._memo.get("probs") is not probs:
            self._memo.clear()
            self._memo["probs"] = probs
        if name not in self._memo:
            out = compute()
            for a in (out if isinstance(out, tuple) else (out,)):
                a.setflags(write=False)  # shared by every caller
            self._memo[name] = out
        return self._memo[name]

    def system_values(self, probs) -> np.ndarray:
        """``rho = E[R(y)]`` at every system rank, shape (n_queries, n_systems, k) (0 on padding)."""
        return self._model(probs, "system", lambda: self._system_values(probs))

    def _system_values(self, probs) -> np.ndarray:
        rho = probs @ self.values
        r = self.system_rows
        return np.where(r >= 0, rho[np.maximum(r, 0)], 0.0)

    def document_values(self, probs, queries=None):
        """``(rho, sd)``: mean and standard deviation of ``R(y)`` under the model for every document of
        ``queries`` (default all) in layout order, shape (len(queries), J) each (padding: row 0's)."""
        rho, sd = self._model(probs, "document", lambda: self._document_values(probs))
        return (rho, sd) if queries is None else (rho[queries], sd[queries])

    def _document_values(self, probs):
        rows = np.maximum(self.rows, 0)
        rho = probs[rows] @ self.values
        return rho, np.sqrt(np.maximum(probs[rows] @ self.values**2 - rho**2, 0.0))


def _padded(r: Rankings, k: int) -> np.ndarray:
    lens = np.minimum(np.diff(r.offsets), k)
    j = np.arange(k)
    m = j[None, :] < lens[:, None]
    out = np.full((r.n_queries, k), -1, dtype=np.int64)
    out[m] = r.items[(r.offsets[:-1, None] + j[None, :])[m]]
    return out


def prefix_layout(rankings, contrast, metric, n_grades: int, n_docs: int, query_costs, document_costs, *,
                  keep: Rankings | None = None, judged=None) -> PrefixLayout:
    """The judging order of every query: its documents by best rank over the systems, ties by system order.

    Parameters
    ----------
    rankings : sequence of Rankings
        The compared rankings, truncated at the metric's cutoff.
    contrast : ndarray of shape (n_outputs, n_systems)
    metric : Metric
        A cascade metric (its ``R(y)`` and ``c(i)``).
    n_grades, n_docs : int
    query_costs : ndarray of shape (n_queries,)
        Cost of judging every document of the query to judge, in the budget's unit.
    document_costs : ndarray of shape (n_docs,)
        Raw per-document costs: a query's cost is split over its documents in proportion.
    keep : Rankings, optional
        Per query, the only rows to judge (the changeable ones; the others cancel in every contrast).
    judged : ndarray of shape (n_docs,), bool, optional
        Documents judged already (free).
    """
    systems = list(rankings)
    N, s = systems[0].n_queries, len(systems)
    k = int(metric.k) if metric.k is not None else max(int(np.diff(r.offsets).max(initial=0)) for r in systems)
    k = max(k, 1)
    srows = np.stack([_padded(r, k) for r in systems], axis=1)  # (N, s, k)
    rank = np.broadcast_to(np.arange(k)[None, None, :], srows.shape)
    sys_ = np.broadcast_to(np.arange(s)[None, :, None], srows.shape)
    qx = np.broadcast_to(np.arange(N)[:, None, None], srows.shape)
    ok = srows >= 0
    x, row, rk, sy = qx[ok], srows[ok], rank[ok], sys_[ok]
    if keep is not None:
        kq = np.repeat(np.arange(N), np.diff(keep.offsets))
        keys = np.asarray(keep.items, dtype=np.int64) + kq * np.int64(n_docs)
        inside = np.isin(x.astype(np.int64) * n_docs + row, keys)
        x, row, rk, sy = x[inside], row[inside], rk[inside], sy[inside]
    order = np.lexsort((sy, rk, x))
    x, row, rk = x[order], row[order], rk[order]
    _, first = np.unique(x.astype(np.int64) * n_docs + row, return_index=True)
    first = np.sort(first)  # first appearance in (query, rank, system) order
    x, row = x[first], row[first]
    counts = np.bincount(x, minlength=N)
    J = max(int(counts.max(initial=0)), 1)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    col = np.arange(x.size) - start[x]
    rows = np.full((N, J), -1, dtype=np.int64)
    rows[x, col] = row
    mask = rows >= 0
    pos = np.full((N, J, s), -1, dtype=np.int64)
    for si in range(s):
        hit = (rows[:, :, None] == srows[:, si, None, :]) & mask[:, :, None]
        pos[:, :, si] = np.where(hit.any(-1), hit.argmax(-1), -1)
    raw = np.where(mask, np.asarray(document_costs, dtype=np.float64)[np.maximum(rows, 0)], 0.0)
    tot = raw.sum(1, keepdims=True)
    share = np.divide(raw, tot, out=np.where(mask, 1.0 / np.maximum(counts[:, None], 1), 0.0), where=tot > 0)
    cost = np.asarray(query_costs, dtype=np.float64)[:, None] * share
    if judged is not None:
        cost = np.where(mask & np.asarray(judged)[np.maximum(rows, 0)], 0.0, cost)
    return PrefixLayout(rows, mask, pos, srows, cost, metric.grade_values(n_grades),
                        np.asarray(metric.discounts(k), dtype=np.float64), np.asarray(contrast, dtype=np.float64))


def _system_gradients(rho: np.ndarray, discount: np.ndarray, out: np.ndarray) -> None:
    """``dL_s / d rho'`` at every rank of every system, state ``rho`` (k, n_systems, B), rank-major (every
    rank's slice is one contiguous vector over the paths); written to ``out`` (same shape)."""
    one = 1.0 - rho
    k = rho.shape[0]
    S = np.empty_like(rho)
    S[0] = 1.0
    if k > 1:
        S[1] = one[0]
    for r in range(2, k):  # rank by rank, in a cumulative product's order (np.cumprod along axis 0 is slower)
        np.multiply(S[r - 1], one[r - 1], out=S[r])
    T = np.empty_like(rho)
    T[k - 1] = 0.0
    tmp = np.empty_like(rho[0])
    for r in range(k - 2, -1, -1):  # the tail below rank r, with its own survival products
        np.multiply(one[r + 1], T[r + 1], out=tmp)
        np.multiply(rho[r + 1], discount[r + 1], out=T[r])
        T[r] += tmp
    np.multiply(S, np.subtract(discount[:k, None, None], T, out=T), out=out)


def _document_gradients(at: np.ndarray, contrast: np.ndarray) -> np.ndarray:
    """Gradient of the contrasts w.r.t. every document from the systems' gradients at its ranks ``at``
    (J, s, B) (0 where absent): (J, t, B)."""
    s = at.shape[1]
    # summed system by system (not BLAS): the same rounding as the numba twin, so exact ties of the
    # adaptive order break the same way on both backends
    out = at[:, 0, None, :] * contrast[None, :, 0, None]
    for si in range(1, s):
        out += at[:, si, None, :] * contrast[None, :, si, None]
    return out


def _norm(G: np.ndarray) -> np.ndarray:
    """``||g||`` over the outputs (axis 1 of (J, t, B)), summed output by output (the numba twin's order)."""
    sq = G[:, 0] ** 2
    for o in range(1, G.shape[1]):
        sq += G[:, o] ** 2
    return np.sqrt(sq, out=sq)


def _first_max(a: np.ndarray) -> np.ndarray:
    """``a.argmax(0)`` of a (J, B) array, one contiguous pass per row (ties: the first; faster than the
    strided reduction)."""
    best = a[0].copy()
    arg = np.zeros(a.shape[1], dtype=np.int64)
    for j in range(1, a.shape[0]):
        up = a[j] > best
        arg[up] = j
        np.maximum(best, a[j], out=best)
    return arg


class JudgingWalk:
    """The judging sequence of ``B`` paths (one per sampled query or simulated label vector).

    ``order="adaptive"``: the next document is the not yet judged one with the
    largest score ``sd(R(y_d)) ||g_d||`` at the current state (ties to the
    earlier layout position); ``order="rank"``: layout order (best rank first).
    Either order is predictable (it depends on earlier labels only), which is
    all the estimator needs (module docstring).

    The state is held rank-major (``(k, systems, B)``, documents ``(J, B)``), so every step is a
    few dozen contiguous vector operations over the paths.
    """

    def __init__(self, layout: PrefixLayout, queries, rho_sys, sd, *, order: str = "adaptive"):
        queries = np.asarray(queries, dtype=np.int64)
        B = queries.size
        self.layout = layout
        self.rho = np.ascontiguousarray(rho_sys[queries].transpose(2, 1, 0))  # (k, s, B)
        k, s = self.rho.shape[0], self.rho.shape[1]
        self.pos = layout.pos[queries]  # (B, J, s)
        self.todo = np.ascontiguousarray(layout.mask[queries].T)  # (J, B)
        self.sd = np.ascontiguousarray(np.asarray(sd, dtype=np.float64).T)  # (J, B)
        self.adaptive = order == "adaptive"
        self.contrast = np.asarray(layout.contrast, dtype=np.float64)
        self._index()

    def _index(self) -> None:
        k, s, B = self.rho.shape
        self._b = np.arange(B)
        # every document's rank in every system as a flat index into the gradients (k, s, B) and one 0 after
        self._g = np.zeros(k * s * B + 1)
        posT = self.pos.transpose(1, 2, 0)  # (J, s, B)
        flat = posT * (s * B) + np.arange(s)[None, :, None] * B + self._b[None, None, :]
        self._at = np.where(posT >= 0, flat, k * s * B)

    def keep(self, paths) -> None:
        """Walk on with only ``paths`` (positions among the current paths, ascending): later steps cost
        what the paths still walking cost."""
        self.rho = np.ascontiguousarray(self.rho[:, :, paths])
        self.pos = self.pos[paths]
        self.todo = np.ascontiguousarray(self.todo[:, paths])
        self.sd = np.ascontiguousarray(self.sd[:, paths])
        self._index()

    def next(self):
        """``(j, g, score)``: every path's next document (``-1`` when none is left), its gradient (B, t) and
        its score (B,)."""
        B = self._b.size
        t = self.contrast.shape[0]
        todo = self.todo
        act = todo.any(0)  # paths with documents left (the others are done)
        if not act.any():
            return np.full(B, -1, dtype=np.int64), np.zeros((B, t)), np.zeros(B)
        k, s = self.rho.shape[0], self.rho.shape[1]
        _system_gradients(self.rho, self.layout.discount, self._g[:-1].reshape(k, s, B))
        G = _document_gradients(self._g.take(self._at), self.contrast)  # (J, t, B)
        a = _norm(G)
        a *= self.sd
        j = _first_max(np.where(todo, a, -1.0)) if self.adaptive else todo.argmax(0)  # rank: first left
        g = G[j, :, self._b]
        score = a[j, self._b]
        j = np.where(act, j, -1)
        g[~act] = 0.0
        score[~act] = 0.0
        return j, g, score

    def reveal(self, j, value) -> None:
        """Set the judged documents ``j`` (``-1``: none) to their values ``R(y)``, shape (B,)."""
        b = self._b[j >= 0]
        jj = j[b]
        p = self.pos[b, jj]  # (n, s)
        bb, si = np.nonzero(p >= 0)
        self.rho[p[bb, si], si, b[bb]] = np.asarray(value)[b[bb]]
        self.todo[jj, b] = False


def _compiled(n_entries: int):
    """The numba twins (:mod:`activerank.design.kinds.prefix._numba`) when the kernel backend is numba, else None.

    Same rule as the moment kernels (:func:`~activerank.metrics.moments.kernel_backend`): ``auto`` takes
    them for ``n_entries`` (paths x documents) of at least ``2**15`` when numba imports.
    """
    if kernel_backend(None, n_entries) != "numba":
        return None
    from . import _numba as _prefix_numba

    return _prefix_numba


@single_blas_thread
def judging_paths(layout: PrefixLayout, queries, rho_sys, sd, grade_values, *, order: str = "adaptive"):
    """The full judging sequence of ``B`` label vectors.

    Parameters
    ----------
    layout : PrefixLayout
    queries : ndarray of shape (B,)
        The query of every path.
    rho_sys : ndarray of shape (n_queries, n_systems, k)
        The model's ``rho`` at every system rank (:meth:`PrefixLayout.system_values`).
    sd : ndarray of shape (B, J)
        The model's standard deviation of ``R(y)`` of every document (layout order).
    grade_values : ndarray of shape (B, J)
        ``R(y)`` of the path's labels, layout order (anything on padding).
    order : {"adaptive", "rank"}

    Returns
    -------
    docs : ndarray of shape (B, J), int
        Layout position judged at every step (``-1`` after the last).
    gradients : ndarray of shape (B, J, n_outputs)
        ``g`` at every step.
    scores : ndarray of shape (B, J)
        The stopping score at every step (``inf`` after the last).
    """
    B, J = len(queries), layout.rows.shape[1]
    fast = _compiled(B * J)
    if fast is not None:
        return fast.judging_paths(np.asarray(queries, dtype=np.int64), np.ascontiguousarray(rho_sys, dtype=np.float64),
                                  layout.pos, layout.mask, np.ascontiguousarray(sd, dtype=np.float64),
                                  np.ascontiguousarray(grade_values, dtype=np.float64), layout.discount,
                                  np.ascontiguousarray(layout.contrast), order == "adaptive")
    docs, grads, scores = _judging_steps(layout, queries, rho_sys, sd, grade_values, order=order)
    return docs.T, grads.transpose(2, 0, 1), scores.T


def _judging_steps(layout: PrefixLayout, queries, rho_sys, sd, grade_values, *, order: str = "adaptive"):
    """NumPy :func:`judging_paths`, step-major: ``docs`` (J, B), ``gradients`` (J, n_outputs, B) and ``scores``
    (J, B), every step's entries contiguous over the paths."""
    B, J = len(queries), layout.rows.shape[1]
    docs = np.full((J, B), -1, dtype=np.int64)
    grads = np.zeros((J, layout.contrast.shape[0], B))
    scores = np.full((J, B), np.inf)
    queries = np.asarray(queries, dtype=np.int64)
    for lo in range(0, B, _PATH_BLOCK):  # blocks of paths: a step's arrays stay in cache
        sl = slice(lo, min(B, lo + _PATH_BLOCK))
        walk = JudgingWalk(layout, queries[sl], rho_sys, sd[sl], order=order)
        cur = np.arange(sl.start, sl.stop)  # the paths the walk still holds
        for step in range(J):
            j, g, a = walk.next()
            ok = j >= 0
            if not ok.any():
                break
            docs[step, cur], grads[step, :, cur] = j, np.where(ok[:, None], g, 0.0)
            scores[step, cur] = np.where(ok, a, np.inf)
            walk.reveal(j, grade_values[cur, np.maximum(j, 0)])
            left = walk.todo.any(0)
            if 2 * int(left.sum()) <= cur.size:  # compact once half the paths have judged their last document
                walk.keep(np.flatnonzero(left))
                cur = cur[left]
    return docs, grads, scores


#: Paths walked together by the NumPy :func:`judging_paths` (bounds the working set of a step).
_PATH_BLOCK = 1 << 13


def _by_step(values, docs):
    """Layout-order ``values`` (B, J) taken in judging order (0 after the last step)."""
    return np.where(docs >= 0, np.take_along_axis(values, np.maximum(docs, 0), axis=1), 0.0)


# --------------------------------------------------------------------------- the method plug-in


@dataclass(frozen=True, eq=False)
class Walk:
    """The judging walk of every sampled query given the labels known (:func:`walk_sample`).

    Attributes
    ----------
    D : ndarray of shape (n, J, t)
        Increments of the contrasts at every step.
    P : ndarray of shape (n, J)
        Probability that the step's document is judged given the labels before it.
    judged : ndarray of shape (n, J), bool
    docs : ndarray of shape (n, J), int
        Layout position judged at every step (``-1``: none).
    waiting : ndarray of shape (n,), int
        Document row a query's walk waits for (``-1``: its walk is complete).
    """

    D: np.ndarray
    P: np.ndarray
    judged: np.ndarray
    docs: np.ndarray
    waiting: np.ndarray


def walk_sample(layout: PrefixLayout, probs, plan, x, U, order, labels) -> Walk:
    """Judge the sampled queries' prefixes step by step (all queries' ``j``-th judgments in one step).

    ``labels`` holds the grade of every document row (-1 where unknown): a query whose walk reaches an
    unknown document waits there.  The walk is a deterministic function of the known labels, so replaying
    it after more labels arrive continues it exactly.

    Parameters
    ----------
    layout : PrefixLayout
    probs : ndarray of shape (n_docs, n_grades)
    plan : PrefixPlan
    x, U : ndarray of shape (n,)
        Sampled queries and their uniforms.
    order : {"adaptive", "rank"}
    labels : ndarray of shape (n_docs,)
    """
    R = layout.values
    rows = layout.rows[x]
    rho, sd = layout.document_values(probs, x)
    walk = JudgingWalk(layout, x, layout.system_values(probs), sd, order=order)
    n, J = rows.shape
    t = layout.contrast.shape[0]
    D = np.zeros((n, J, t))
    P = np.ones((n, J))
    judged = np.zeros((n, J), dtype=bool)
    docs = np.full((n, J), -1, dtype=np.int64)
    waiting = np.full(n, -1, dtype=np.int64)
    prev = np.ones(n)
    tau, floor = plan.tau[x], plan.floor[x]
    b = np.arange(n)
    cur = b  # the paths the walk still holds (a path that stops never goes on)
    for step in range(J):
        j, g, a = np.full(n, -1, dtype=np.int64), np.zeros((n, t)), np.zeros(n)
        j[cur], g[cur], a[cur] = walk.next()
        active = (j >= 0) & (U <= prev) & (waiting < 0)
        if not active.any():
            break
        jj = np.maximum(j, 0)
        Pj = np.minimum(prev, stop_scale(a, floor, tau))  # the running minimum of stop_probabilities
        hit = active & (U <= Pj)
        row = rows[b, jj]
        grade = np.where(hit, labels[np.maximum(row, 0)], -1)
        wait = hit & (grade < 0)
        waiting[wait] = row[wait]
        hit &= ~wait
        active &= ~wait
        f = np.where(hit, R[np.maximum(grade, 0)], rho[b, jj])
        D[:, step] = np.where(hit[:, None], (f - rho[b, jj])[:, None] * g, 0.0)
        walk.reveal(np.where(hit, j, -1)[cur], f[cur])
        docs[:, step] = np.where(hit, j, -1)
        P[:, step] = np.where(active, Pj, prev)
        prev = np.where(active, Pj, prev)
        judged[:, step] = hit
        going = ((U <= prev) & (waiting < 0))[cur]
        if 2 * int(going.sum()) <= cur.size:  # compact once half the walks have stopped
            walk.keep(np.flatnonzero(going))
            cur = cur[going]
    return Walk(D, P, judged, docs, waiting)


def stop_scale(score, floor, tau) -> np.ndarray:
    """``min(1, max(score, floor) / tau)`` elementwise (``tau = 0``: 1): one step's bound on ``P``."""
    tau = np.asarray(tau, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tau > 0, np.minimum(1.0, np.maximum(score, floor) / np.where(tau > 0, tau, 1.0)), 1.0)


def stop_probabilities(scores, floor, tau) -> np.ndarray:
    """``P_j = min_{l <= j} stop_scale(a_l)``, i.e. ``min(1, min_{l <= j} max(a_l, floor) / tau)``, shape of
    ``scores`` (B, J); the engine takes the same running minimum step by step."""
    s = stop_scale(scores, np.asarray(floor, dtype=np.float64)[:, None], np.asarray(tau, dtype=np.float64)[:, None])
    return np.minimum.accumulate(s, axis=1)
