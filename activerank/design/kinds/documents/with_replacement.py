"""Document-level designs that draw with replacement: Schnabel et al.'s ``Q*`` over the pool
(Hansen-Hurwitz) and UBIS-``k`` inside every query."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from .designs import BudgetTooSmall, DocumentDesign, DocumentSample, _within
from .estimators import hansen_hurwitz, horvitz_thompson, within_query_estimate
from .sampling import (
    PoissonDesign,
    draw_within_queries,
    sampling_distribution,
    within_query_distribution,
)

__all__ = ["HansenHurwitz", "WithReplacementDesign", "WithinQuery"]


@dataclass(frozen=True, eq=False)
class WithReplacementDesign:
    """Draws with replacement: the distribution ``Q`` over units, unit costs, budget, judged units."""

    Q: np.ndarray
    costs: np.ndarray
    budget: float
    judged: np.ndarray
    max_draws: int


class HansenHurwitz(DocumentDesign):
    """Schnabel et al.'s ``Q*`` with replacement until the budget is spent; Hansen-Hurwitz estimate.

    Units are drawn i.i.d. from ``Q ∝ ||W_z|| u~_z / sqrt(c_z)`` (mixed with
    the defensive ``||W_z|| / sqrt(c_z)``;
    :func:`~activerank.design.documents.sampling_distribution`, Schnabel et
    al. 2016, Eqs. 4, 9, 11, 13) by the budgeted draw loop: a unit's first
    draw is charged its cost, a repeat is free, the run stops right before the
    first draw that would overspend.  This is also Schnabel et al. (2015)'s
    importance sampling of judgments on a budget.  Estimate
    ``M + (1/n) sum_i W_i (u_i - m_i) / Q_i`` with covariance ``s^2 / n``
    (:func:`~activerank.inference.documents.hansen_hurwitz`); units judged
    before the run are an exact census (``Q = 0``).  With ``ci="t"`` the
    interval is Student-t with ``n - 1`` degrees of freedom.  A budget that
    covers judging every document that can change a target judges them all
    (the value is then exact; drawing with replacement towards that set would
    only collect repeats).

    Parameters
    ----------
    utility : {"rms", "mean", "residual", "none"}, default "rms"
        ``u~``: ``sqrt(E[u^2])`` (variance-optimal for the plain estimator
        under the model), ``E[u]`` (Schnabel et al.'s literal plug-in), ...
    control_variate : bool, default False
        Subtract the model's means (then ``utility="residual"`` is optimal).
    max_draws_per_unit : int, default 100
        Cap on draws (times the number of units).

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.
    .. [2] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    .. [3] M. H. Hansen, W. N. Hurwitz. "On the Theory of Sampling from Finite
       Populations." Ann. Math. Statist. 14, 1943.

    Examples
    --------
    >>> from activerank.design.kinds.documents import document_target
    >>> t = document_target([[[0, 1, 2, 3]]], n_docs=4, metric="dcg@4", n_grades=2)
    >>> hh = HansenHurwitz()
    >>> d = hh.design_for(t, np.full((4, 2), 0.5), np.ones(4), 3.0, judged=np.zeros(4, bool), defensive=0.1)
    >>> s = hh.draw_units(d, t, np.random.default_rng(0))
    >>> r = hh.estimate_units(t, s, np.ones(s.size, dtype=int), None)  # every document relevant
    >>> bool(np.isclose(r.estimate[0], t.value(np.ones(4, dtype=int))[0])), len(np.unique(s.units)) <= 3
    (True, True)
    """

    name = "document_hh"
    nested = True

    def __init__(self, *, utility: str = "rms", control_variate: bool = False, max_draws_per_unit: int = 100):
        self.utility = utility
        self.control_variate = bool(control_variate)
        if isinstance(max_draws_per_unit, bool) or not isinstance(max_draws_per_unit, numbers.Integral) \
                or max_draws_per_unit < 1:
            raise ValueError(f"`max_draws_per_unit` must be a positive integer; got {max_draws_per_unit!r}.")
        self.max_draws_per_unit = int(max_draws_per_unit)

    def design_for(self, target, probs, costs, budget, *, judged, defensive):
        full = self._full_census(target, costs, budget, judged)
        if full is not None:
            return full
        Q = sampling_distribution(target, probs, utility=self.utility, costs=costs, defensive=defensive,
                                  judged=judged)
        c = np.asarray(costs, dtype=np.float64)
        # two draws of the most expensive reachable unit: the smallest budget sure to give a variance
        cheapest = float(c[Q > 0].min())
        if budget < 2 * cheapest:
            raise ValueError(f"`budget`={budget:g} is too small: it buys fewer than 2 draws (the cheapest "
                             f"reachable document costs {cheapest:.4g}); a variance needs at least 2; the "
                             f"smallest usable budget is {2 * cheapest:.4g}.")
        return WithReplacementDesign(Q, c, float(budget), np.asarray(judged, dtype=bool),
                                     self.max_draws_per_unit * target.n_units)

    def draw_units(self, design, target, rng):
        from ...sampling import draw_budgeted

        if isinstance(design, PoissonDesign):
            return self._full_census_draw(design)
        return self._from_plan(design, draw_budgeted(design.Q, design.costs, design.budget, rng,
                                                     max_draws=design.max_draws))

    def _draw_many(self, design, target, rng, n_reps):
        # all repetitions in one vectorized draw loop (one repetition: exactly the engine's draw)
        from ...draws import draw_budgeted_batch
        from ...sampling import DrawPlan

        if isinstance(design, PoissonDesign):
            return super()._draw_many(design, target, rng, n_reps)
        batch = draw_budgeted_batch(design.Q, design.costs, design.budget, n_reps, rng, max_draws=design.max_draws)
        reachable = int((design.Q > 0).sum())
        runs: list = []
        for r, n in enumerate(batch.n_draws.tolist()):
            new = batch.new[r, :n]
            reason = ("all_reachable" if int(new.sum()) >= reachable else
                      "max_draws" if n >= design.max_draws else "budget")
            plan = DrawPlan(batch.queries[r, :n], new, batch.charged[r, :n], design.budget, reason)
            try:
                runs.append(self._from_plan(design, plan))
            except BudgetTooSmall:
                runs.append(None)
        return runs

    def _cut(self, sample, target, budget):
        from ...sampling import DrawPlan

        plan = sample.plan
        n = _within(plan.charged, budget)
        sub = DrawPlan(plan.queries[:n], plan.new[:n], plan.charged[:n], float(budget),
                       plan.stop_reason if n == plan.n_draws else "budget")
        return self._from_plan(replace(sample.design, budget=float(budget)), sub)

    def _from_plan(self, design, plan):
        n = plan.n_draws
        if n < 2:
            raise BudgetTooSmall(f"`budget`={design.budget:g} bought {n} draw: a variance needs at least 2; "
                                 "raise the budget.")
        x = plan.queries  # unit indices
        census = np.flatnonzero(design.judged)
        units = np.concatenate([x, census])
        Qx = design.Q[x]
        prob = np.concatenate([Qx, np.ones(census.size)])
        weight = np.concatenate([1.0 / (n * Qx), np.ones(census.size)])
        is_census = np.concatenate([np.zeros(n, dtype=bool), np.ones(census.size, dtype=bool)])
        return DocumentSample(units, prob, weight, is_census, design, plan=plan, stop_reason=plan.stop_reason,
                              attrs={"n_with_replacement_draws": int(n)})

    def estimate_units(self, target, sample, grades, probs):
        if isinstance(sample.design, PoissonDesign):  # every unit that matters judged: exact
            return horvitz_thompson(target, sample.design, target.rows[sample.units], grades)
        g = np.asarray(grades)
        rows = target.rows[sample.units]
        c = sample.census
        return hansen_hurwitz(target, sample.design.Q, rows[~c], g[~c], probs=self._model(probs),
                              census_rows=rows[c] if c.any() else None, census_grades=g[c] if c.any() else None)

    def dof(self, sample):
        return math.inf if sample.plan is None else float(sample.plan.n_draws - 1)

    def __repr__(self) -> str:
        return f"HansenHurwitz(utility={self.utility!r}, control_variate={self.control_variate})"


@dataclass(frozen=True, eq=False)
class _WithinQueryRun:
    Qx: np.ndarray
    costs: np.ndarray  # 0 for units judged before
    k: int
    budget: float
    # every drawable unit's cost, descending within its query, and its rank there: what k distinct draws per
    # query cost at most
    desc_costs: np.ndarray
    desc_rank: np.ndarray

    @classmethod
    def of(cls, Qx, costs, query, k: int, budget: float) -> "_WithinQueryRun":
        live = np.flatnonzero(Qx > 0)
        order = live[np.lexsort((-costs[live], query[live]))]
        q = query[order]
        start = np.flatnonzero(np.r_[True, q[1:] != q[:-1]]) if q.size else np.zeros(0, dtype=np.int64)
        rank = np.arange(q.size) - np.repeat(start, np.diff(np.r_[start, q.size]))
        return cls(Qx, costs, k, budget, costs[order], rank)

    def expected_cost(self, k: int) -> float:
        """``sum_z c_z (1 - (1 - Q_x(z))^k)``: every unit's chance to be drawn at least once in ``k`` draws."""
        live = self.Qx > 0
        return float(np.dot(self.costs[live], 1.0 - (1.0 - self.Qx[live]) ** k))

    def max_cost(self, k: int) -> float:
        """The most ``k`` draws in every query can cost: the ``k`` dearest drawable units of each, all distinct."""
        return float(self.desc_costs[self.desc_rank < k].sum())


class WithinQuery(DocumentDesign):
    """Schnabel et al. (2015)'s UBIS-``k``: ``k`` draws with replacement inside every query.

    Every query with a document that can change a target gets ``k`` i.i.d.
    draws from its own ``Q_x(z) ∝ ||W_z|| u~_z / sqrt(c_z) + eps * (the
    query's mean)`` (:func:`~activerank.design.documents.within_query_distribution`);
    ``k`` is the largest number whose cost can never exceed the budget (every
    draw a new document; repeats are free, so most runs spend a little less).  Estimate ``sum_x (1/k) sum_i W_i u_i /
    Q_x(z_i)`` with the summed per-query sample covariances
    (:func:`~activerank.inference.documents.within_query_estimate`).  It visits
    every query, so budgets below two draws per query are refused; ``eps``
    plays the defensive share's part (``defensive`` is not used).  A budget that
    covers every document that can change a target judges them all (exact).

    Parameters
    ----------
    utility : str, default "rms"
        ``u~`` (see :func:`~activerank.design.documents.unit_scores`).
    eps : float, default 0.05
    max_k : int, default 10000

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    """

    name = "document_ubis"
    nested = True
    utility: str
    eps: float
    max_k: int

    def __init__(self, *, utility: str = "rms", eps: float = 0.05, max_k: int = 10000):
        if isinstance(max_k, bool) or not isinstance(max_k, numbers.Integral) or max_k < 2:
            raise ValueError(f"`max_k` must be an integer >= 2; got {max_k!r}.")
        self.utility = utility
        self.eps = eps
        self.max_k = int(max_k)

    def design_for(self, target, probs, costs, budget, *, judged, defensive):
        full = self._full_census(target, costs, budget, judged)
        if full is not None:
            return full
        Qx = within_query_distribution(target, probs, utility=self.utility, eps=self.eps, costs=costs)
        run = _WithinQueryRun.of(Qx, np.where(judged, 0.0, np.asarray(costs, dtype=np.float64)), target.query, 2,
                                 float(budget))
        two = run.max_cost(2)
        if two > budget * (1 + 1e-12):
            raise ValueError(f"`budget`={budget:g} is too small: two draws in every query (the fewest with a "
                             f"variance) can cost up to {two:.4g}; the smallest usable budget is {two:.4g}.")
        return replace(run, k=self._k(run, budget))

    def _k(self, run: _WithinQueryRun, budget: float) -> int:
        """The largest ``k`` whose cost can never exceed ``budget`` (every draw a new unit; the cost grows with
        ``k``): a hard budget with ``k`` fixed before any draw, so the estimate stays unbiased."""
        lo, hi = 2, self.max_k  # max_cost(lo) <= budget
        if run.max_cost(lo) > budget * (1 + 1e-12):
            raise BudgetTooSmall(f"`budget`={budget:g} is too small for two draws in every query.")
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if run.max_cost(mid) <= budget * (1 + 1e-12):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def draw_units(self, design, target, rng):
        if isinstance(design, PoissonDesign):
            return self._full_census_draw(design)
        return self._from_draws(design, draw_within_queries(target, design.Qx, design.k, rng))

    def _cut(self, sample, target, budget):
        k = self._k(sample.design, budget)
        return self._from_draws(replace(sample.design, k=k, budget=float(budget)), sample.plan[:, :k])

    def _from_draws(self, design, draws):
        units = draws.reshape(-1)
        Q = design.Qx[units]
        return DocumentSample(units, Q, 1.0 / (design.k * Q), np.zeros(units.size, dtype=bool), design, plan=draws,
                              attrs={"draws_per_query": int(design.k),
                                     "expected_cost": design.expected_cost(design.k)})

    def estimate_units(self, target, sample, grades, probs):
        if isinstance(sample.design, PoissonDesign):  # every unit that matters judged: exact
            return horvitz_thompson(target, sample.design, target.rows[sample.units], grades)
        shape = sample.plan.shape
        return within_query_estimate(target, sample.design.Qx, target.rows[sample.units].reshape(shape),
                                     np.asarray(grades).reshape(shape))

    def __repr__(self) -> str:
        return f"WithinQuery(utility={self.utility!r}, eps={self.eps!r})"
