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

from dataclasses import dataclass

import numpy as np

from ..inference.estimators import Estimator
from ..metrics._blas import single_blas_thread
from ..metrics.moments import kernel_backend
from ..ragged import Rankings

__all__ = ["JudgingWalk", "PrefixLayout", "PrefixPlan", "PrefixSampling", "judging_paths", "plan_prefix",
           "pooled_covariance", "prefix_estimate", "prefix_layout", "stop_scale",
           "stop_probabilities", "within_estimate"]

#: Number of nonzero ``tau`` values the design tries per query (plus ``tau = 0``: judge everything).
TAU_GRID = 24
#: Simulated label vectors per query behind the planning averages.
N_PLANNING_SIMULATIONS = 64
#: Floor of the stopping score, as a share of the query's mean score (keeps every ``P_j > 0``).
WITHIN_DEFENSIVE = 0.05


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

    @property
    def n_queries(self) -> int:
        return self.rows.shape[0]

    def system_values(self, probs) -> np.ndarray:
        """``rho = E[R(y)]`` at every system rank, shape (n_queries, n_systems, k) (0 on padding)."""
        rho = probs @ self.values
        r = self.system_rows
        return np.where(r >= 0, rho[np.maximum(r, 0)], 0.0)

    def document_values(self, probs, queries=None):
        """``(rho, sd)``: mean and standard deviation of ``R(y)`` under the model for every document of
        ``queries`` (default all) in layout order, shape (len(queries), J) each (padding: row 0's)."""
        rows = np.maximum(self.rows if queries is None else self.rows[queries], 0)
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


def _system_gradients(rho: np.ndarray, discount: np.ndarray) -> np.ndarray:
    """``dL_s / d rho'`` at every rank of every system, state ``rho`` (B, n_systems, k)."""
    one = 1.0 - rho
    S = np.ones_like(rho)
    S[..., 1:] = np.cumprod(one[..., :-1], axis=-1)
    k = rho.shape[-1]
    T = np.zeros_like(rho)
    for r in range(k - 2, -1, -1):  # the tail below rank r, with its own survival products
        T[..., r] = discount[r + 1] * rho[..., r + 1] + one[..., r + 1] * T[..., r + 1]
    return S * (discount[:k] - T)


def _document_gradients(rho: np.ndarray, discount: np.ndarray, pos: np.ndarray, contrast: np.ndarray) -> np.ndarray:
    """Gradient of the contrasts w.r.t. every document of the layout (``pos`` (B, J, s)): (B, J, t)."""
    g = _system_gradients(rho, discount)
    B, s, k = g.shape
    flat = np.where(pos >= 0, pos + np.arange(s) * k, s * k)  # (B, J, s) into [g | 0]
    gz = np.concatenate([g.reshape(B, s * k), np.zeros((B, 1))], axis=1)
    at = np.take_along_axis(gz, flat.reshape(B, -1), axis=1).reshape(pos.shape)
    # summed system by system (not BLAS): the same rounding as the numba twin, so exact ties of the
    # adaptive order break the same way on both backends
    out = at[..., 0, None] * contrast[:, 0]
    for si in range(1, s):
        out = out + at[..., si, None] * contrast[:, si]
    return out


def _norm(G: np.ndarray) -> np.ndarray:
    """``||g||`` over the last axis, summed output by output (the numba twin's order)."""
    sq = G[..., 0] ** 2
    for o in range(1, G.shape[-1]):
        sq = sq + G[..., o] ** 2
    return np.sqrt(sq)


def _reveal(rho: np.ndarray, pos: np.ndarray, value: np.ndarray) -> None:
    b, si = np.nonzero(pos >= 0)
    rho[b, si, pos[b, si]] = value[b]


class JudgingWalk:
    """The judging sequence of ``B`` paths (one per sampled query or simulated label vector).

    ``order="adaptive"``: the next document is the not yet judged one with the
    largest score ``sd(R(y_d)) ||g_d||`` at the current state (ties to the
    earlier layout position); ``order="rank"``: layout order (best rank first).
    Either order is predictable (it depends on earlier labels only), which is
    all the estimator needs (module docstring).
    """

    def __init__(self, layout: PrefixLayout, queries, rho_sys, sd, *, order: str = "adaptive"):
        self.layout = layout
        self.rho = rho_sys[queries].copy()
        self.pos = layout.pos[queries]
        self.todo = layout.mask[queries].copy()
        self.sd = sd
        self.adaptive = order == "adaptive"
        self._b = np.arange(len(queries))

    def next(self):
        """``(j, g, score)``: every path's next document (``-1`` when none is left), its gradient (B, t) and
        its score (B,)."""
        B = self._b.size
        j = np.full(B, -1, dtype=np.int64)
        g = np.zeros((B, self.layout.contrast.shape[0]))
        score = np.zeros(B)
        act = np.flatnonzero(self.todo.any(1))  # paths with documents left (the others are done)
        if act.size == 0:
            return j, g, score
        G = _document_gradients(self.rho[act], self.layout.discount, self.pos[act], self.layout.contrast)
        a = self.sd[act] * _norm(G)
        todo = self.todo[act]
        ja = np.where(todo, a, -1.0).argmax(1) if self.adaptive else todo.argmax(1)  # rank: first left
        r = np.arange(act.size)
        j[act], g[act], score[act] = ja, G[r, ja], a[r, ja]
        return j, g, score

    def reveal(self, j, value) -> None:
        """Set the judged documents ``j`` (``-1``: none) to their values ``R(y)``, shape (B,)."""
        ok = j >= 0
        jj = np.maximum(j, 0)
        _reveal(self.rho, np.where(ok[:, None], self.pos[self._b, jj], -1), value)
        self.todo[self._b[ok], jj[ok]] = False


def _compiled(n_entries: int):
    """The numba twins (:mod:`activerank.design._prefix_numba`) when the kernel backend is numba, else None.

    Same rule as the moment kernels (:func:`~activerank.metrics.moments.kernel_backend`): ``auto`` takes
    them for ``n_entries`` (paths x documents) of at least ``2**15`` when numba imports.
    """
    if kernel_backend(None, n_entries) != "numba":
        return None
    from . import _prefix_numba

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
    walk = JudgingWalk(layout, queries, rho_sys, sd, order=order)
    docs = np.full((B, J), -1, dtype=np.int64)
    grads = np.zeros((B, J, layout.contrast.shape[0]))
    scores = np.full((B, J), np.inf)
    b = np.arange(B)
    for step in range(J):
        j, g, a = walk.next()
        ok = j >= 0
        if not ok.any():
            break
        docs[:, step], grads[:, step] = j, np.where(ok[:, None], g, 0.0)
        scores[:, step] = np.where(ok, a, np.inf)
        walk.reveal(j, grade_values[b, np.maximum(j, 0)])
    return docs, grads, scores


def _by_step(values, docs):
    """Layout-order ``values`` (B, J) taken in judging order (0 after the last step)."""
    return np.where(docs >= 0, np.take_along_axis(values, np.maximum(docs, 0), axis=1), 0.0)


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


def within_estimate(D, P, judged):
    """``e = sum_judged D_j / P_j`` and ``V_hat = sum_{j,l judged} D_j D_l' (1/P_min - 1)/P_max``.

    Parameters
    ----------
    D : ndarray of shape (B, J, t)
    P : ndarray of shape (B, J)
        Non-increasing along ``J``.
    judged : ndarray of shape (B, J), bool

    Returns
    -------
    e : ndarray of shape (B, t)
    V : ndarray of shape (B, t, t)
    """
    Dj = np.where(judged[..., None], D, 0.0)
    Pj = np.where(judged, P, 1.0)[..., None]
    E = Dj / Pj
    e = E.sum(1)
    # sum_{j,l} (1/P_min - 1)/P_max D_j D_l' in O(J): with A_j = (1/P_j - 1) D_j and the later-step sums
    # R_j = sum_{l > j} E_l, it is sum_j A_j E_j' + A_j R_j' + R_j A_j' (P is non-increasing along J)
    A = (1.0 / Pj - 1.0) * Dj
    R = np.cumsum(E[:, ::-1], axis=1)[:, ::-1] - E
    cross = np.einsum("bjs,bjt->bst", A, R)
    V = np.einsum("bjs,bjt->bst", A, E) + cross + cross.transpose(0, 2, 1)
    return e, V


@dataclass(frozen=True, eq=False)
class PrefixPlan:
    """The design of a budget: query inclusion probabilities and every query's stopping rule.

    Attributes
    ----------
    pi : ndarray of shape (n_queries,)
        Poisson inclusion probability (0 for queries not sampled: determined or ``p = 0``).
    tau : ndarray of shape (n_queries,)
        Stopping scale (0: judge every document of the query).
    floor : ndarray of shape (n_queries,)
        Floor of the stopping score.
    expected_cost : ndarray of shape (n_queries,)
        Model-expected cost of the query's judged prefix.
    within_variance : ndarray of shape (n_queries, n_outputs)
        Model-expected added within-query variance of every output.
    budget : float
        Expected cost of the design (``sum pi C``).
    live : ndarray of shape (n_queries,), bool
        The queries the design may sample.
    """

    pi: np.ndarray
    tau: np.ndarray
    floor: np.ndarray
    expected_cost: np.ndarray
    within_variance: np.ndarray
    budget: float
    live: np.ndarray

    @property
    def exact(self) -> bool:
        """Every live query sampled and judged whole with probability one (a census: the value is exact)."""
        live = self.live
        return bool(live.any() and np.all(self.pi[live] >= 1.0) and np.all(self.tau[live] == 0.0))

    def model_variance(self, p, output_variance) -> np.ndarray:
        """The model's predicted variance of every output's estimate,
        ``sum p^2 [(Var_theta + W) / pi - Var_theta]``, shape (n_outputs,)."""
        ok = self.live & (self.pi > 0)
        V = np.asarray(output_variance, dtype=np.float64)[ok]
        f = (np.asarray(p, dtype=np.float64)[ok] ** 2)[:, None]
        return (f * ((V + self.within_variance[ok]) / self.pi[ok, None] - V)).sum(0)


def _simulate_labels(probs_rows, n_sims, rng) -> np.ndarray:
    cdf = np.cumsum(probs_rows, axis=-1)
    u = rng.random((probs_rows.shape[0], n_sims, probs_rows.shape[1], 1))
    y = (u > cdf[:, None]).sum(-1)
    return np.minimum(y, probs_rows.shape[-1] - 1)


def _planning_sums(layout, q, n_sims, rho_sys, rho, sd, f, order, shares):
    """NumPy path of the planning averages of one chunk of queries ``q``: ``(floor, taus, W, C)`` with
    shapes (n,), (G, n), (G, n, t), (G, n) (the numba twin: :func:`._prefix_numba.planning_sums`)."""
    paths = np.repeat(q, n_sims)
    docs, g, a = judging_paths(layout, paths, rho_sys, sd[paths], f, order=order)  # step order
    m = docs >= 0
    d2 = ((_by_step(f, docs) - _by_step(rho[paths], docs)) ** 2)[..., None] * g**2  # per output
    mean_a = np.where(m, a, 0.0).sum(1).reshape(q.size, n_sims).sum(1) / np.maximum(
        m.sum(1).reshape(q.size, n_sims).sum(1), 1)
    fl = WITHIN_DEFENSIVE * mean_a
    top = np.where(m, a, 0.0).max(1).reshape(q.size, n_sims).max(1)
    grid = shares[:, None] * np.maximum(top, fl)[None, :]
    cost = _by_step(layout.cost[paths], docs)
    ng, t = shares.size, layout.contrast.shape[0]
    taus, W, C = np.zeros((ng, q.size)), np.zeros((ng, q.size, t)), np.zeros((ng, q.size))
    for gi in range(ng):
        tau = np.where(fl > 0, grid[gi], 0.0)
        P = stop_probabilities(a, np.repeat(fl, n_sims), np.repeat(tau, n_sims))
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where((m & (P > 0))[..., None], d2 * (1.0 / P - 1.0)[..., None], 0.0).sum(1)
        W[gi] = w.reshape(q.size, n_sims, -1).mean(1)
        C[gi] = np.where(m, P * cost, 0.0).sum(1).reshape(q.size, n_sims).mean(1)
        taus[gi] = tau
    return fl, taus, W, C


def plan_prefix(layout: PrefixLayout, probs, p, variance, live, budget: float, rng, *, defensive: float = 0.1,
                n_sims: int = N_PLANNING_SIMULATIONS, order: str = "adaptive", chunk: int = 4096) -> PrefixPlan:
    """Choose ``pi_x`` and ``tau_x`` for an expected ``budget`` (module docstring).

    Parameters
    ----------
    layout : PrefixLayout
    probs : ndarray of shape (n_docs, n_grades)
    p : ndarray of shape (n_queries,)
        Query weights of the target.
    variance : ndarray of shape (n_queries,)
        The model's variance of the query's contrasts (summed over outputs).
    live : ndarray of shape (n_queries,), bool
        Queries that can be sampled (``p > 0``, not determined).
    budget : float
    rng : numpy.random.Generator
        Randomness of the planning simulations only.
    defensive : float
        Share of the pool's mean variance added to every query's, so that no live query has ``pi = 0``.
    order : {"adaptive", "rank"}
        The judging order (:class:`JudgingWalk`).
    """
    N, J = layout.rows.shape
    rho_sys = layout.system_values(probs)
    R = layout.values
    safe_rows = np.maximum(layout.rows, 0)
    rho, sd = layout.document_values(probs)
    full_cost = layout.cost.sum(1)
    W = np.zeros((TAU_GRID + 1, N, layout.contrast.shape[0]))
    C = np.repeat(full_cost[None, :], TAU_GRID + 1, axis=0)
    taus = np.zeros((TAU_GRID + 1, N))
    floor = np.zeros(N)
    idx = np.flatnonzero(live)
    shares = np.geomspace(1e-3, 1.0, TAU_GRID)
    fast = _compiled(idx.size * n_sims * J)
    for lo in range(0, idx.size, chunk):
        q = idx[lo:lo + chunk]
        y = _simulate_labels(probs[safe_rows[q]], n_sims, rng)  # (n, M, J); padding is masked below
        f = R[y.reshape(q.size * n_sims, J)]
        if fast is not None:
            sums = fast.planning_sums(q.astype(np.int64), n_sims, rho_sys, layout.pos, layout.mask, layout.cost,
                                      rho[q], sd[q], f, layout.discount, np.ascontiguousarray(layout.contrast),
                                      order == "adaptive", shares, WITHIN_DEFENSIVE)
        else:
            sums = _planning_sums(layout, q, n_sims, rho_sys, rho, sd, f, order, shares)
        floor[q], taus[1:, q], W[1:, q], C[1:, q] = sums
    V = np.where(live, np.asarray(variance, dtype=np.float64), 0.0)
    # a model certain of every label has variance 0 up to the moment kernels' rounding: plan on 0, not on noise
    V = np.where(V > 1e-12 * max(1.0, float(np.max(V, initial=0.0))), V, 0.0)
    vbar = float(V[live].mean()) if live.any() else 0.0
    # a model certain of every label (V = W = 0) still gets every live query sampled: it may be wrong
    V = (1.0 - defensive) * V + defensive * (vbar if vbar > 0 else 1.0)
    Wsum = W.sum(-1)
    pw = np.where(live, np.asarray(p, dtype=np.float64), 0.0)
    total = float(full_cost[live].sum())
    if budget >= total:  # judge every live query whole: the value is exact
        pi = live.astype(np.float64)
        return PrefixPlan(pi, np.zeros(N), floor, full_cost, np.zeros_like(W[0]), total, live)
    Ccl = np.maximum(C, 1e-300)

    def choose(mu):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            pis = np.minimum(1.0, pw[None] * np.sqrt((V[None] + Wsum) / (mu * Ccl)))
            val = np.where(pis > 0, pw[None] ** 2 * (V[None] + Wsum) / pis, 0.0) - pw[None] ** 2 * V[None] \
                + mu * pis * C
        j = np.argmin(val, axis=0)
        cols = np.arange(N)
        return np.where(live, pis[j, cols], 0.0), j

    lo_mu, hi_mu = 1e-30, 1e30
    for _ in range(200):
        mu = np.sqrt(lo_mu * hi_mu)
        pi, j = choose(mu)
        if float(np.dot(pi, C[j, np.arange(N)])) > budget:
            lo_mu = mu
        else:
            hi_mu = mu
        if hi_mu / lo_mu < 1 + 1e-10:
            break
    pi, j = choose(hi_mu)
    cols = np.arange(N)
    Cx = C[j, cols]
    return PrefixPlan(pi, taus[j, cols], floor, Cx, W[j, cols], float(np.dot(pi, Cx)), live)


# --------------------------------------------------------------------------- the method plug-in


def prefix_estimate(e, V, pi, p, pool_mean):
    """The two-stage difference estimator and its unbiased covariance estimate.

    Parameters
    ----------
    e : ndarray of shape (n, t)
        Within-query estimates of ``L(x) - m(x)`` of the sampled queries.
    V : ndarray of shape (n, t, t)
        Their within-query covariance estimates.
    pi, p : ndarray of shape (n,)
    pool_mean : ndarray of shape (t,)
        ``sum_pool p m``.

    Returns
    -------
    estimate : ndarray of shape (t,)
    covariance : ndarray of shape (t, t)
    """
    w = p / pi
    est = np.asarray(pool_mean, dtype=np.float64) + w @ e
    c1 = ((1.0 - pi) * w**2)[:, None, None] * e[:, :, None] * e[:, None, :]
    cov = c1.sum(0) + np.einsum("n,nst->st", p**2 / pi, V)
    return est, cov


#: Pseudo degrees of freedom of the model's predicted variance pooled into the sample's (small samples).
PRIOR_DOF = 2.0


def pooled_covariance(cov, n, model_variance, prior_dof: float = PRIOR_DOF):
    """``(prior_dof diag(V_model) + (n - 1) cov) / (prior_dof + n - 1)``: the sample's covariance estimate
    moderated by the model's predicted variance (``model_variance`` None: unchanged).

    The two-stage variance estimate is unbiased but, at a few dozen queries where a
    handful carry the target, often far too small (and exactly 0 when every judged
    step had ``P = 1``); the model's prediction enters as ``prior_dof`` pseudo
    observations, as for ``active_wor`` (:mod:`activerank.design.wor_methods`).

    Parameters
    ----------
    cov : ndarray of shape (..., t, t)
    n : int or ndarray of shape (...)
        Sampled queries.
    model_variance : ndarray of shape (t,) or None
    """
    if model_variance is None or prior_dof <= 0:
        return cov
    w = np.maximum(np.asarray(n, dtype=np.float64) - 1.0, 0.0)[..., None, None]
    return (prior_dof * np.diag(np.asarray(model_variance, dtype=np.float64)) + w * cov) / (prior_dof + w)


class PrefixSampling(Estimator):
    """Plug-in of the ``prefix`` method: Poisson queries, a random-depth prefix judged in each (module doc).

    Attributes
    ----------
    targets : tuple of str
        Every target kind (one ranker, differences, candidates vs a baseline, systems vs the mean system).
    n_sims : int
        Planning simulations per query.

    Examples
    --------
    >>> import numpy as np
    >>> from activerank.design.prefix import prefix_estimate
    >>> est, cov = prefix_estimate(np.array([[0.1], [-0.1]]), np.zeros((2, 1, 1)), np.array([0.5, 0.5]),
    ...                            np.array([0.5, 0.5]), np.array([0.3]))
    >>> est.tolist()
    [0.3]
    """

    name = "prefix"
    uses_predictions = True
    targets = ("mean", "difference", "baseline", "ranking")

    def __init__(self, *, n_sims: int = N_PLANNING_SIMULATIONS, order: str = "adaptive"):
        if order not in ("adaptive", "rank"):
            raise ValueError(f"`order` must be 'adaptive' or 'rank'; got {order!r}.")
        self.n_sims = int(n_sims)
        self.order = order

    def __call__(self, values, weights, *, predictions=None, pool_predictions=None, n_distinct=None):
        raise TypeError("the prefix method judges documents one by one within sampled queries; the engine runs "
                        "it (activerank.engine.prefix), not on weighted query draws.")

    def prefix(self, values, weights, stops, *, predictions=None, pool_prediction=None, queries=None):
        raise TypeError("the prefix method has no query-draw batched estimator; benchmarks simulate it with "
                        "PrefixSampling.simulate.")

    def plan(self, layout, probs, p, variance, live, budget, rng, *, defensive=0.1) -> PrefixPlan:
        return plan_prefix(layout, probs, p, variance, live, budget, rng, defensive=defensive, n_sims=self.n_sims,
                           order=self.order)

    @staticmethod
    def draw(plan: PrefixPlan, rng):
        """Poisson sample of queries and one uniform per sampled query: (queries, U)."""
        u = rng.random(plan.pi.size)
        x = np.flatnonzero(u < plan.pi)
        return x, rng.random(x.size)

    def simulate(self, layout, plan, probs, labels, p, mean, n_reps, rng, *, output_variance=None):
        """Batched repetitions on a fully labelled pool (benchmarks): estimates and covariances.

        The judging sequence of a query is a deterministic function of its labels, so
        ``D`` and ``P`` are computed once per query; a repetition only draws the
        Poisson sample and the uniforms.

        Returns
        -------
        estimate : ndarray of shape (n_reps, t)
        covariance : ndarray of shape (n_reps, t, t)
        n : ndarray of shape (n_reps,)
            Sampled queries.
        cost : ndarray of shape (n_reps,)
            Realized cost.

        With ``output_variance`` (the model's per-query variance of every output, shape
        (n_queries, t)) the covariance is pooled with the model's prediction as the engine
        does (:func:`pooled_covariance`).
        """
        order = self.order
        live = plan.pi > 0
        q = np.flatnonzero(live)
        R = layout.values
        f = R[labels[np.maximum(layout.rows[q], 0)]]
        rho, sd = layout.document_values(probs, q)
        docs, g, a = judging_paths(layout, q, layout.system_values(probs), sd, f, order=order)
        m = docs >= 0
        D = ((_by_step(f, docs) - _by_step(rho, docs)))[..., None] * g
        P = stop_probabilities(a, plan.floor[q], plan.tau[q])
        step_cost = _by_step(layout.cost[q], docs)
        t = layout.contrast.shape[0]
        pool_mean = p @ mean
        model_var = None if output_variance is None else plan.model_variance(p, output_variance)
        est = np.zeros((n_reps, t))
        cov = np.zeros((n_reps, t, t))
        n = np.zeros(n_reps, dtype=np.int64)
        cost = np.zeros(n_reps)
        for r in range(n_reps):
            s = rng.random(q.size) < plan.pi[q]
            U = rng.random(int(s.sum()))
            judged = m[s] & (U[:, None] <= P[s])
            e, V = within_estimate(D[s], P[s], judged)
            est[r], cov[r] = prefix_estimate(e, V, plan.pi[q][s], p[q][s], pool_mean)
            n[r] = s.sum()
            if model_var is not None:
                cov[r] = pooled_covariance(cov[r], n[r], model_var)
            cost[r] = float(np.where(judged, step_cost[s], 0.0).sum())
        return est, cov, n, cost

    def __repr__(self) -> str:
        return f"PrefixSampling(n_sims={self.n_sims}, order={self.order!r})"
