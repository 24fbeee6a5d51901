"""Batched Monte-Carlo of the budgeted sampling loop with known per-query values.

:func:`activerank.design.sampling.draw_budgeted` runs *one* labeling campaign.  To
measure an estimator's error one needs thousands of campaigns on a pool whose
per-query metric values ``L(x)`` are known.  This module draws all repetitions
at once as 2-d arrays ``(n_reps, n_draws)`` with a validity mask, with exactly
the rules of :func:`~activerank.design.sampling.draw_budgeted`:

* draws are i.i.d. from ``q``;
* the first draw of a query is charged ``costs[x]``; drawing it again is free;
* a run stops right before the first draw whose cost would exceed the budget,
  or right after the draw that completes the set of reachable queries
  (``q > 0``), or after ``max_draws`` draws.

With ``n_reps=1`` and the same seed, :func:`draw_budgeted_batch` reproduces
:func:`~activerank.design.sampling.draw_budgeted` draw for draw (it consumes the random
stream in the same chunks).

Because the stopping rule only looks at the cumulative charged cost, the run for
a budget ``b`` is a prefix of the run for any larger budget.  :func:`budget_stops`
uses that to evaluate a whole grid of budgets on one set of draws (common random
numbers across budgets), and :func:`activerank.inference.snis.snis_prefix` (and every estimator plug-in's
``prefix``) evaluates an estimator on all those prefixes with cumulative sums -- no Python loop over repetitions, draws or
budgets.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._validation import affordable_budget_iv, distribution_iv, max_draws_iv

__all__ = [
    "BatchPlan",
    "draw_budgeted_batch",
    "budget_stops",
]


@dataclass(frozen=True, eq=False)
class BatchPlan:
    """Draw sequences of ``n_reps`` independent budgeted runs.

    Attributes
    ----------
    queries : ndarray of shape (n_reps, n_cols), int64
        Pool index of every draw; entries where ``valid`` is False are padding
        (0) and must be ignored.
    new : ndarray of shape (n_reps, n_cols), bool
        True where the draw is the query's first in its run.
    charged : ndarray of shape (n_reps, n_cols)
        Cost charged for the draw (0 for a repeat and for padding).
    valid : ndarray of shape (n_reps, n_cols), bool
        True for the draws the run actually made (a prefix of every row).
    budget : float
        The budget the runs were drawn for.
    """

    queries: np.ndarray
    new: np.ndarray
    charged: np.ndarray
    valid: np.ndarray
    budget: float

    @property
    def n_reps(self) -> int:
        return self.queries.shape[0]

    @property
    def n_draws(self) -> np.ndarray:
        """Draws made by every run, shape ``(n_reps,)``."""
        return self.valid.sum(axis=1)

    @property
    def n_queries(self) -> np.ndarray:
        """Distinct queries judged by every run, shape ``(n_reps,)``."""
        return (self.new & self.valid).sum(axis=1)

    @property
    def cost_spent(self) -> np.ndarray:
        """Total cost charged by every run, shape ``(n_reps,)``."""
        return self.charged.sum(axis=1)

    @property
    def cumulative_cost(self) -> np.ndarray:
        """Cost charged up to and including every draw, shape ``(n_reps, n_cols)``."""
        return np.cumsum(self.charged, axis=1)


def _reps_iv(n_reps) -> int:
    if isinstance(n_reps, bool) or not isinstance(n_reps, (numbers.Integral, np.integer)) or n_reps < 1:
        raise ValueError(f"`n_reps` must be a positive integer; got {n_reps!r}.")
    return int(n_reps)


def _first_in_rows(draws: np.ndarray) -> np.ndarray:
    """True at the first occurrence of each value within its row."""
    order = np.argsort(draws, axis=1, kind="stable")
    s = np.take_along_axis(draws, order, axis=1)
    first_sorted = np.ones(s.shape, dtype=bool)
    first_sorted[:, 1:] = s[:, 1:] != s[:, :-1]
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)
    return first


def draw_budgeted_batch(q, costs, budget, n_reps, rng=None, *, max_draws: int | None = None) -> BatchPlan:
    """Draw ``n_reps`` independent budgeted runs at once.

    Same rules as :func:`activerank.design.sampling.draw_budgeted` (see the module
    docstring); the work is vectorized over repetitions, with a short loop over
    chunks of draws only while some run is still going.

    Parameters
    ----------
    q : array-like of shape (n_queries,)
        Sampling distribution (normalized internally).
    costs : array-like of shape (n_queries,)
        Query costs ``lambda(x) > 0`` in the budget's unit.
    budget : float
        Budget of every run.
    n_reps : int
        Number of independent runs.
    rng : None, int or numpy.random.Generator
    max_draws : int, optional
        Cap on the draws of one run (default ``100 * n_queries``).

    Returns
    -------
    BatchPlan

    Examples
    --------
    >>> plan = draw_budgeted_batch([0.5, 0.5], [1.0, 1.0], 1.5, n_reps=4, rng=0)
    >>> plan.cost_spent.tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    q, costs = distribution_iv(q, costs)
    n_reps = _reps_iv(n_reps)
    budget = affordable_budget_iv(budget, costs, q)
    rng = np.random.default_rng(rng)
    m = q.size
    max_draws = max_draws_iv(max_draws, m)
    cdf = np.cumsum(q / q.sum())
    cdf[-1] = 1.0
    reachable = int((q > 0).sum())
    tol = 1e-12 * max(1.0, budget)
    chunk = int(min(max(64, 4 * budget), max_draws))

    seen = np.zeros((n_reps, m), dtype=bool)
    spent = np.zeros(n_reps)
    n_seen = np.zeros(n_reps, dtype=np.int64)
    n_drawn = np.zeros(n_reps, dtype=np.int64)
    active = np.arange(n_reps)
    parts = []  # (columns, queries, new, valid) per chunk, for all rows
    while active.size:
        size = int(min(chunk, max_draws - n_drawn[active].min()))
        # rows still active have all drawn the same number so far
        draws = np.searchsorted(cdf, rng.random((active.size, size)), side="right")
        draws = np.minimum(draws, m - 1)
        new = _first_in_rows(draws) & ~seen[active[:, None], draws]
        charge = np.where(new, costs[draws], 0.0)
        cum = spent[active, None] + np.cumsum(charge, axis=1)
        over = cum > budget + tol
        stop = np.where(over.any(axis=1), over.argmax(axis=1), size)
        complete = (n_seen[active, None] + np.cumsum(new, axis=1)) >= reachable
        done_at = np.where(complete.any(axis=1), complete.argmax(axis=1) + 1, size + 1)
        stop = np.minimum(stop, done_at)
        valid = np.arange(size)[None, :] < stop[:, None]
        qs = np.zeros((n_reps, size), dtype=np.int64)
        nw = np.zeros((n_reps, size), dtype=bool)
        vd = np.zeros((n_reps, size), dtype=bool)
        qs[active] = np.where(valid, draws, 0)
        nw[active] = new & valid
        vd[active] = valid
        parts.append((qs, nw, vd))
        rr = np.broadcast_to(active[:, None], draws.shape)
        seen[rr[valid], draws[valid]] = True
        n_seen[active] += (new & valid).sum(axis=1)
        n_drawn[active] += stop
        spent[active] = cum[:, -1]
        keep = (stop == size) & (n_drawn[active] < max_draws) & (n_seen[active] < reachable)
        active = active[keep]
    queries = np.concatenate([p[0] for p in parts], axis=1)
    new = np.concatenate([p[1] for p in parts], axis=1)
    valid = np.concatenate([p[2] for p in parts], axis=1)
    width = int(valid.sum(axis=1).max())
    queries, new, valid = queries[:, :width], new[:, :width], valid[:, :width]
    charged = np.where(new, costs[queries], 0.0)
    return BatchPlan(queries=queries, new=new, charged=charged, valid=valid, budget=budget)


def budget_stops(plan: BatchPlan, budgets) -> np.ndarray:
    """Number of draws every run makes under each (smaller) budget.

    The run for budget ``b <= plan.budget`` is the prefix of the plan's run
    that stops before the first draw whose cumulative charged cost exceeds
    ``b`` (same tolerance as :func:`~activerank.design.sampling.draw_budgeted`).

    Parameters
    ----------
    plan : BatchPlan
        Drawn for the largest budget.
    budgets : array-like of shape (n_budgets,)
        Budgets, each ``<= plan.budget``.

    Returns
    -------
    stops : ndarray of shape (n_budgets, n_reps), int64

    Examples
    --------
    >>> plan = draw_budgeted_batch([0.5, 0.5], [1.0, 1.0], 2.0, n_reps=2, rng=1)
    >>> budget_stops(plan, [1.0, 2.0]).min(axis=1).tolist()
    [1, 2]
    """
    b = np.asarray(budgets, dtype=np.float64).reshape(-1)
    if b.size == 0:
        raise ValueError("`budgets` must not be empty.")
    bad = np.flatnonzero(~np.isfinite(b) | (b <= 0) | (b > plan.budget * (1 + 1e-12)))
    if bad.size:
        raise ValueError(
            f"`budgets` must be positive and at most the plan's budget {plan.budget:g}; "
            f"entry {bad[0]} is {b[bad[0]]!r}."
        )
    cum = np.where(plan.valid, plan.cumulative_cost, np.inf)
    tol = 1e-12 * np.maximum(1.0, b)
    limit = (b + tol)[:, None]
    n_valid = plan.n_draws
    # cumulative cost is non-decreasing along a row: count the prefix within budget
    stops = np.stack([(cum <= lim).sum(axis=1) for lim in limit])  # loop over budgets only
    return np.minimum(stops, n_valid[None, :]).astype(np.int64)


