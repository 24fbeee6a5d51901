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

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DrawPlan",
    "optimal_distribution",
    "expected_squared_error",
    "draw_budgeted",
    "query_weights_iv",
]

DEFAULT_DEFENSIVE = 0.1


def query_weights_iv(query_weights, n_queries: int) -> np.ndarray:
    """Validate the target distribution ``p(x)`` over the pool (default uniform)."""
    if query_weights is None:
        return np.full(n_queries, 1.0 / n_queries)
    w = np.asarray(query_weights, dtype=np.float64).reshape(-1)
    if w.size != n_queries:
        raise ValueError(
            f"`query_weights` must have one entry per query ({n_queries}); got {w.size}."
        )
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`query_weights` must be finite and >= 0; query {i} has {w[i]!r}.")
    if w.sum() <= 0:
        raise ValueError("`query_weights` must have a positive sum.")
    return w / w.sum()


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


def defensive_iv(defensive) -> float:
    if isinstance(defensive, bool) or not isinstance(defensive, numbers.Real):
        raise TypeError(f"`defensive` must be a number in [0, 1], got {defensive!r}.")
    if not 0.0 <= defensive <= 1.0:
        raise ValueError(f"`defensive` must lie in [0, 1], got {defensive}.")
    return float(defensive)


def distribution_iv(q, costs):
    """Validate a sampling distribution and per-query costs of one pool."""
    q = np.asarray(q, dtype=np.float64).reshape(-1)
    costs = np.asarray(costs, dtype=np.float64).reshape(-1)
    if q.size == 0:
        raise ValueError("`q` must not be empty.")
    if costs.size != q.size:
        raise ValueError(f"`costs` must have one entry per query ({q.size}); got {costs.size}.")
    bad = np.flatnonzero(~np.isfinite(q) | (q < 0))
    if bad.size:
        raise ValueError(f"`q` must be finite and >= 0; query {bad[0]} has {q[bad[0]].item()!r}.")
    if not q.sum() > 0:
        raise ValueError("`q` must have a positive sum.")
    # zero is allowed: a query whose documents are all judged already costs nothing
    bad = np.flatnonzero(~np.isfinite(costs) | (costs < 0))
    if bad.size:
        raise ValueError(f"`costs` must be finite and >= 0; query {bad[0]} has {costs[bad[0]].item()!r}.")
    return q, costs


def max_draws_iv(max_draws, n_queries: int) -> int:
    if max_draws is None:
        return 100 * n_queries
    if isinstance(max_draws, bool) or not isinstance(max_draws, numbers.Integral) or max_draws < 1:
        raise ValueError(f"`max_draws` must be a positive integer; got {max_draws!r}.")
    return int(max_draws)


def budget_iv(budget, costs: np.ndarray, q: np.ndarray) -> float:
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be a positive number, got {budget!r}.")
    if not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"`budget` must be a positive finite number, got {budget}.")
    cheapest = float(costs[q > 0].min())
    if budget < cheapest:
        raise ValueError(
            f"`budget`={budget:g} is below the cheapest query's cost ({cheapest:.4g} in units of the "
            "mean query cost); no query could be labeled."
        )
    return float(budget)


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
    """

    queries: np.ndarray
    new: np.ndarray
    charged: np.ndarray
    budget: float

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


def _first_occurrence(draws: np.ndarray, seen: np.ndarray) -> np.ndarray:
    _, first = np.unique(draws, return_index=True)
    mask = np.zeros(draws.size, dtype=bool)
    mask[first] = True
    return mask & ~seen[draws]


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
    rng = np.random.default_rng(rng)
    q, costs = distribution_iv(q, costs)
    budget = budget_iv(budget, costs, q)
    m = q.size
    max_draws = max_draws_iv(max_draws, m)
    cdf = np.cumsum(q / q.sum())
    cdf[-1] = 1.0
    reachable = int((q > 0).sum())
    seen = np.zeros(m, dtype=bool)
    parts_q, parts_new = [], []
    spent, n_drawn, n_seen = 0.0, 0, 0
    tol = 1e-12 * max(1.0, budget)
    chunk = int(min(max(64, 4 * budget), max_draws))
    while n_drawn < max_draws and n_seen < reachable:
        draws = np.searchsorted(cdf, rng.random(min(chunk, max_draws - n_drawn)), side="right")
        draws = np.minimum(draws, m - 1)
        new = _first_occurrence(draws, seen)
        cum = spent + np.cumsum(np.where(new, costs[draws], 0.0))
        over = np.flatnonzero(cum > budget + tol)
        stop = over[0] if over.size else draws.size
        done_all = np.flatnonzero(n_seen + np.cumsum(new) >= reachable)
        if done_all.size and done_all[0] < stop:
            stop = done_all[0] + 1
        parts_q.append(draws[:stop])
        parts_new.append(new[:stop])
        seen[draws[:stop]] = True
        n_seen += int(new[:stop].sum())
        n_drawn += stop
        if stop < draws.size:
            break
        spent = float(cum[-1])
    queries = np.concatenate(parts_q)
    new = np.concatenate(parts_new)
    charged = np.where(new, costs[queries], 0.0)
    return DrawPlan(queries=queries, new=new, charged=charged, budget=budget)
