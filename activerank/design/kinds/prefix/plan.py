"""The ``prefix`` plan: per-query inclusion probabilities and stopping rules for a budget, chosen
together from Monte-Carlo simulations under the model (:func:`plan_prefix`; the derivation is in
:mod:`.layout`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .layout import _PATH_BLOCK, PrefixLayout, _compiled, _judging_steps

__all__ = ["N_PLANNING_SIMULATIONS", "TAU_GRID", "WITHIN_DEFENSIVE", "PrefixPlan", "PrefixPlanner", "plan_prefix",
           "prefix_planner"]

#: Number of nonzero ``tau`` values the design tries per query (plus ``tau = 0``: judge everything).
TAU_GRID = 24


#: Simulated label vectors per query behind the planning averages.
N_PLANNING_SIMULATIONS = 64


#: Floor of the stopping score, as a share of the query's mean score (keeps every ``P_j > 0``).
WITHIN_DEFENSIVE = 0.05


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
    u = rng.random((probs_rows.shape[0], n_sims, probs_rows.shape[1], 1))[..., 0]
    G = probs_rows.shape[-1]
    y = np.zeros(u.shape, dtype=np.int64)
    for gi in range(G - 1):  # the grade is the number of cdf values below u (the last grade catches the rest)
        y += u > cdf[:, None, :, gi]
    return y


def _planning_sums(layout, q, n_sims, rho_sys, rho, sd, f, order, shares):
    """NumPy path of the planning averages of one chunk of queries ``q``: ``(floor, taus, W, C)`` with
    shapes (n,), (G, n), (G, n, t), (G, n) (the numba twin: :func:`._numba.planning_sums`)."""
    paths = np.repeat(q, n_sims)
    B, J = paths.size, layout.rows.shape[1]
    docs, g, a = _judging_steps(layout, paths, rho_sys, sd[paths], f, order=order)  # step-major (J, .., B)
    m = docs >= 0
    # every step's document values by one gather from the path-major tables (0 after the last step)
    at = np.maximum(docs, 0) + np.arange(B) * J
    rq = np.maximum(docs, 0) + paths * J
    d2 = (np.where(m, f.ravel()[at] - rho.ravel()[rq], 0.0) ** 2)[:, None, :] * g**2  # (J, t, B)
    cost = np.where(m, layout.cost.ravel()[rq], 0.0)
    mean_a = np.where(m, a, 0.0).sum(0).reshape(q.size, n_sims).sum(1) / np.maximum(
        m.sum(0).reshape(q.size, n_sims).sum(1), 1)
    fl = WITHIN_DEFENSIVE * mean_a
    top = np.where(m, a, 0.0).max(0).reshape(q.size, n_sims).max(1)
    grid = shares[:, None] * np.maximum(top, fl)[None, :]
    ng, t = shares.size, layout.contrast.shape[0]
    taus, W, C = np.zeros((ng, q.size)), np.zeros((ng, q.size, t)), np.zeros((ng, q.size))
    # P_j = min(1, min_{l <= j} max(a_l, floor) / tau) = min(1, M_j / tau) with the running minimum M_j of the
    # floored scores, once for every tau (division by tau > 0 is monotone: stop_probabilities bit for bit).
    # With floor > 0 every P_j > 0 (tau is at most the largest floored score); floor = 0 means tau = 0: P = 1.
    M = np.minimum.accumulate(np.maximum(a, np.repeat(fl, n_sims)), axis=0)
    whole = fl <= 0  # tau = 0: judge every document
    full = cost.sum(0).reshape(q.size, n_sims).mean(1)
    for gi in range(ng):
        taus[gi] = np.where(whole, 0.0, grid[gi])
    qb = max(1, _PATH_BLOCK // n_sims)
    for lo in range(0, q.size, qb):  # blocks of queries: the grid's passes stay in cache
        sq, sp = slice(lo, lo + qb), slice(lo * n_sims, (lo + qb) * n_sims)
        Mb, d2b, cb = M[:, sp], d2[:, :, sp], cost[:, sp]
        P, inv = np.empty_like(Mb), np.empty_like(Mb)
        nq = Mb.shape[1] // n_sims
        for gi in range(ng):
            np.divide(Mb, np.repeat(np.where(whole[sq], 1.0, taus[gi, sq]), n_sims), out=P)  # whole: see below
            np.minimum(P, 1.0, out=P)
            with np.errstate(divide="ignore", invalid="ignore"):  # P = 0 only on whole queries' paths
                np.divide(1.0, P, out=inv)
                inv -= 1.0
                for o in range(t):  # sums over the steps: one contiguous add per step
                    W[gi, sq, o] = np.multiply(d2b[:, o], inv).sum(0).reshape(nq, n_sims).mean(1)
            C[gi, sq] = np.multiply(P, cb, out=P).sum(0).reshape(nq, n_sims).mean(1)
    W[:, whole] = 0.0
    C[:, whole] = full[whole]
    return fl, taus, W, C


def plan_prefix(layout: PrefixLayout, probs, p, variance, live, budget: float, rng, *, defensive: float = 0.1,
                n_sims: int = N_PLANNING_SIMULATIONS, order: str = "adaptive", chunk: int = 4096) -> PrefixPlan:
    """Choose ``pi_x`` and ``tau_x`` for an expected ``budget`` (module docstring):
    :func:`prefix_planner` then :meth:`PrefixPlanner.allocate`.

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
    return prefix_planner(layout, probs, p, variance, live, rng, defensive=defensive, n_sims=n_sims, order=order,
                          chunk=chunk).allocate(budget)


@dataclass(frozen=True, eq=False)
class PrefixPlanner:
    """The planning averages of every query and stopping scale, from which :meth:`allocate` chooses the plan
    of any budget (the simulations do not depend on the budget, so trying several budgets is cheap).

    Attributes
    ----------
    taus, W, C : ndarray of shape (G, n_queries), (G, n_queries, n_outputs), (G, n_queries)
        Stopping scale, added within-query variance and expected cost of every grid entry (entry 0: judge all).
    floor : ndarray of shape (n_queries,)
    V : ndarray of shape (n_queries,)
        The model's variance with the defensive share mixed in.
    pw : ndarray of shape (n_queries,)
        Query weights (0 off ``live``).
    full_cost : ndarray of shape (n_queries,)
    live : ndarray of shape (n_queries,), bool
    """

    taus: np.ndarray
    W: np.ndarray
    C: np.ndarray
    floor: np.ndarray
    V: np.ndarray
    pw: np.ndarray
    full_cost: np.ndarray
    live: np.ndarray
    _plans: dict = field(default_factory=dict, repr=False, compare=False)  # budget -> PrefixPlan

    @property
    def total_cost(self) -> float:
        """The cost of judging every live query whole (a larger budget gives the exact value)."""
        return float(self.full_cost[self.live].sum())

    def allocate(self, budget: float) -> PrefixPlan:
        """The plan whose expected cost is ``budget``: price ``mu`` by bisection (module docstring).  Plans are
        kept by budget (``method="auto"`` predicts at the budget it then runs)."""
        budget = float(budget)
        if budget not in self._plans:
            self._plans[budget] = self._allocate(budget)
        return self._plans[budget]

    def _allocate(self, budget: float) -> PrefixPlan:
        N = self.live.size
        live, pw, V, C = self.live, self.pw, self.V, self.C
        if budget >= self.total_cost:  # judge every live query whole: the value is exact
            pi = live.astype(np.float64)
            return PrefixPlan(pi, np.zeros(N), self.floor, self.full_cost, np.zeros_like(self.W[0]), self.total_cost,
                              live)
        VW = V[None] + self.W.sum(-1)
        Ccl = np.maximum(C, 1e-300)
        cols = np.arange(N)
        pw2VW = pw[None] ** 2 * VW  # the terms that do not depend on mu, once
        pw2V = pw[None] ** 2 * V[None]

        pis, val, tmp = np.empty_like(VW), np.empty_like(VW), np.empty_like(VW)

        def choose(mu):
            # min(1, pw sqrt((V + W) / (mu C))) and pw^2 (V + W) / pi - pw^2 V + mu pi C, in place (the bisection
            # evaluates them some 40 times)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                np.multiply(Ccl, mu, out=pis)
                np.divide(VW, pis, out=pis)
                np.sqrt(pis, out=pis)
                np.multiply(pis, pw, out=pis)
                np.minimum(pis, 1.0, out=pis)
                np.divide(pw2VW, pis, out=val)
                val[~(pis > 0)] = 0.0
                np.subtract(val, pw2V, out=val)
                np.multiply(pis, mu, out=tmp)
                np.multiply(tmp, C, out=tmp)
                np.add(val, tmp, out=val)
            j = np.argmin(val, axis=0)
            return np.where(live, pis[j, cols], 0.0), j

        lo_mu, hi_mu = 1e-30, 1e30
        for _ in range(200):
            mu = np.sqrt(lo_mu * hi_mu)
            pi, j = choose(mu)
            if float(np.dot(pi, C[j, cols])) > budget:
                lo_mu = mu
            else:
                hi_mu = mu
            if hi_mu / lo_mu < 1 + 1e-10:
                break
        pi, j = choose(hi_mu)
        Cx = C[j, cols]
        return PrefixPlan(pi, self.taus[j, cols], self.floor, Cx, self.W[j, cols], float(np.dot(pi, Cx)), live)

    def smallest_budget(self, n_queries: float) -> float:
        """The smallest budget whose plan samples ``n_queries`` queries in expectation (``sum pi``; bisection,
        rounded up to 3 significant digits); the exact budget when even that samples fewer."""
        total = self.total_cost
        if self._allocate(total).pi.sum() < n_queries:
            return total
        lo, hi = 0.0, total
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if self._allocate(mid).pi.sum() >= n_queries:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-4 * hi:
                break
        digits = 2 - int(np.floor(np.log10(hi))) if hi > 0 else 0
        return float(np.ceil(hi * 10.0**digits) / 10.0**digits)


def prefix_planner(layout: PrefixLayout, probs, p, variance, live, rng, *, defensive: float = 0.1,
                   n_sims: int = N_PLANNING_SIMULATIONS, order: str = "adaptive", chunk: int = 4096) -> PrefixPlanner:
    """The planning simulations of :func:`plan_prefix` (its parameters but the budget)."""
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
    pw = np.where(live, np.asarray(p, dtype=np.float64), 0.0)
    return PrefixPlanner(taus, W, C, floor, V, pw, full_cost, np.asarray(live, dtype=bool))
