"""Sampling distributions (Sawade et al. 2012, Derivation 1) and the budgeted draw loop.

For the self-normalized importance-weighted estimator of ``R = sum_x p(x) L(x)``
drawing ``n`` queries from ``q``, the asymptotic variance is
``(1/n) sum_x p(x)^2 / q(x) * E[(L - R)^2 | x]``; with per-query costs and a
budget, minimizing it subject to ``sum_x q(x) lambda(x) = const`` gives

``q*(x)  ∝  p(x) * sqrt(E[(L - R_theta)^2 | x] / lambda(x))``

with the moments taken under the relevance model (``R_theta = sum p(x) E[L|x]``);
for a comparison replace ``L`` by ``delta = L_a - L_b``.  A defensive mixture
with ``p`` keeps every query reachable, bounding the weights ``p/q`` by
``1/defensive``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import affordable_budget_iv, defensive_iv, distribution_iv, max_draws_iv, rng_iv
from .draws import draw_budgeted_batch

__all__ = [
    "DEFAULT_DEFENSIVE",
    "DrawPlan",
    "draw_budgeted",
    "expected_squared_error",
    "optimal_distribution",
]

DEFAULT_DEFENSIVE = 0.1


def expected_squared_error(mean, variance, p) -> np.ndarray:
    """``E[(L - R_theta)^2 | x] = Var[L|x] + (E[L|x] - R_theta)^2`` for every query."""
    target = float(np.dot(p, mean))
    return variance + (mean - target) ** 2


def optimal_distribution(sq_error, costs, p, *, defensive: float = DEFAULT_DEFENSIVE) -> np.ndarray:
    """Cost-aware variance-optimal sampling distribution, mixed with ``p``.

    Parameters
    ----------
    sq_error : ndarray of shape (n_queries,)
        ``E[(L - R)^2 | x]`` under the relevance model.
    costs : ndarray of shape (n_queries,)
        Labeling cost ``lambda(x) > 0``.
    p : ndarray of shape (n_queries,)
        Target distribution over queries (sums to 1).
    defensive : float in [0, 1]
        Weight of ``p`` in the mixture ``(1 - defensive) q* + defensive p``.

    Returns
    -------
    q : ndarray of shape (n_queries,)

    Examples
    --------
    >>> q = optimal_distribution(np.array([4.0, 1.0]), np.array([1.0, 1.0]),
    ...                          np.array([0.5, 0.5]), defensive=0.0)
    >>> q.round(4).tolist()
    [0.6667, 0.3333]
    """
    defensive = defensive_iv(defensive)
    score = p * np.sqrt(np.maximum(sq_error, 0.0) / costs)
    total = score.sum()
    if not np.isfinite(total) or total <= 0:
        return p.copy()
    return (1.0 - defensive) * score / total + defensive * p


@dataclass(frozen=True, eq=False)
class DrawPlan:
    """The draw sequence of one budgeted run (Algorithm 1 of Sawade et al.).

    Attributes
    ----------
    queries : ndarray of shape (n_draws,)
        Pool index of every draw, in order (with repetitions).
    new : ndarray of shape (n_draws,), bool
        True where the draw is the query's first (its documents get judged).
    charged : ndarray of shape (n_draws,)
        Cost charged for the draw (0 for a repeated query).
    budget : float
    stop_reason : {"budget", "all_reachable", "max_draws"}
        Why the sequence ends: the next draw would exceed the budget, every
        query with ``q > 0`` is drawn, or the cap on draws was reached.
    """

    queries: np.ndarray
    new: np.ndarray
    charged: np.ndarray
    budget: float
    stop_reason: str = "budget"

    @property
    def cumulative_cost(self) -> np.ndarray:
        return np.cumsum(self.charged)

    @property
    def cost_spent(self) -> float:
        # draws were admitted with a 1e-12 relative rounding tolerance; don't report
        # rounding noise (15.000000000000004 for fifteen unit costs) as overspending
        return min(float(self.charged.sum()), self.budget)

    @property
    def n_draws(self) -> int:
        return self.queries.size


def draw_budgeted(q, costs, budget, rng=None, *, max_draws: int | None = None) -> DrawPlan:
    """Draw queries i.i.d. from ``q`` until the budget is spent.

    A query's first draw costs ``costs[x]``; drawing it again is free (its
    labels are reused).  The run stops right before the first draw whose cost
    would exceed the remaining budget, or once every query with ``q > 0`` has
    been labeled (further draws would add no information).

    Parameters
    ----------
    q : ndarray of shape (n_queries,)
        Sampling distribution.
    costs : ndarray of shape (n_queries,)
        Normalized query costs.
    budget : float
        Total budget Lambda, in the same unit as ``costs``.
    rng : None, int or numpy.random.Generator
    max_draws : int, optional
        Hard cap on the number of draws (default ``100 * n_queries``).

    Returns
    -------
    DrawPlan

    Examples
    --------
    >>> plan = draw_budgeted(np.array([0.5, 0.5]), np.array([1.0, 1.0]), 1.5, rng=0)
    >>> plan.cost_spent
    1.0
    """
    rng = rng_iv(rng)
    q, costs = distribution_iv(q, costs)
    budget = affordable_budget_iv(budget, costs, q)
    max_draws = max_draws_iv(max_draws, q.size)
    batch = draw_budgeted_batch(q, costs, budget, 1, rng, max_draws=max_draws)
    n = int(batch.n_draws[0])
    queries, new = batch.queries[0, :n], batch.new[0, :n]
    if int(new.sum()) >= int((q > 0).sum()):
        reason = "all_reachable"
    elif n >= max_draws:
        reason = "max_draws"
    else:
        reason = "budget"
    charged = np.where(new, costs[queries], 0.0)
    return DrawPlan(queries=queries, new=new, charged=charged, budget=budget, stop_reason=reason)
