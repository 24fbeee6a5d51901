"""The budgeted draw loop (Algorithm 1 of Sawade et al. 2012), for one run or thousands at once.

This is the one implementation of the loop.  :func:`activerank.design.sampling.draw_budgeted`
(one labeling campaign, what the engine uses) is ``draw_budgeted_batch`` with one repetition;
the experiment harness measures an estimator's error over thousands of campaigns on a pool
whose per-query metric values ``L(x)`` are known, drawing all repetitions at once as 2-d
arrays ``(n_reps, n_draws)`` with a validity mask.  The rules:

* draws are i.i.d. from ``q``;
* the first draw of a query is charged ``costs[x]``; drawing it again is free;
* a run stops right before the first draw whose cost would exceed the budget,
  or right after the draw that completes the set of reachable queries
  (``q > 0``), or after ``max_draws`` draws.

The random stream is consumed in chunks of ``min(max(64, 4 * budget), max_draws)``
uniforms per run and round, so a run's draws do not depend on how many runs are
drawn together or how the work is organized inside a chunk.

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
from ._inverse_cdf import InverseCDF

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


def _mark_new(draws_t: np.ndarray, rows: np.ndarray, seen: np.ndarray, n_queries: int) -> np.ndarray:
    """First draw of a query in its run: not seen before, nor earlier in this block.

    ``draws_t`` is a block of draws, one column per run (shape ``(n_draws,
    n_runs)``); ``seen`` is the flat ``(n_reps * n_queries,)`` table of drawn
    (run, query) pairs and is updated.  One vectorized gather and scatter per
    draw position (a loop over draws, never over repetitions): cheaper than
    sorting every row, and exact.
    """
    keys = draws_t + rows * n_queries
    new = np.empty(keys.shape, dtype=bool)
    for j in range(keys.shape[0]):
        col = keys[j]
        np.logical_not(seen[col], out=new[j])
        seen[col] = True
    return new


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

    Notes
    -----
    The random stream is consumed in the chunks of
    :func:`~activerank.design.sampling.draw_budgeted` (a ``(runs, chunk)`` block of
    uniforms per round), so the draws do not depend on how the work is
    organized inside a chunk.  Uniforms become queries by an exact guide-table
    inverse CDF (:class:`activerank.design._inverse_cdf.InverseCDF`, equal to
    ``searchsorted``), and each chunk is examined in column blocks: a run that
    stops in one block is dropped from the next, so the uniforms past its stop
    -- most of the last chunk -- are never mapped or checked.

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
    inverse = InverseCDF.from_weights(q)
    reachable = int((q > 0).sum())
    limit = budget + 1e-12 * max(1.0, budget)
    chunk = int(min(max(64, 4 * budget), max_draws))
    block = max(32, chunk // 8)

    seen = np.zeros(n_reps * m, dtype=bool)
    spent = np.zeros(n_reps)
    n_seen = np.zeros(n_reps, dtype=np.int64)
    n_drawn = np.zeros(n_reps, dtype=np.int64)
    active = np.arange(n_reps)
    parts = []  # (rows, first column, draws, new) per chunk
    while active.size:
        col0 = int(n_drawn[active[0]])  # rows still active have all drawn the same number so far
        size = int(min(chunk, max_draws - col0))
        uniforms = rng.random((active.size, size))
        draws_c = np.zeros((size, active.size), dtype=np.int64)
        new_c = np.zeros((size, active.size), dtype=bool)
        live = np.arange(active.size)  # rows of `uniforms` still drawing in this chunk
        run_cost = np.zeros(active.size)  # cumulative charge since the chunk began
        going = np.zeros(active.size, dtype=bool)
        for c0 in range(0, size, block):
            c1 = min(c0 + block, size)
            w = c1 - c0
            rows = active[live]
            every = live.size == active.size
            # one column per run (only for the block's uniforms): the running sums below then add
            # whole rows at a time, and the uniforms past every run's stop are never touched
            draws = inverse((uniforms[:, c0:c1] if every else uniforms[live, c0:c1]).T)
            new = _mark_new(draws, rows, seen, m)
            charge = costs[draws]
            charge *= new
            # continue the chunk's running sum exactly as one cumsum over the chunk would
            charge[0] += run_cost[live]
            run = np.cumsum(charge, axis=0)
            # cost charged is non-decreasing along a run: count the draws within budget
            stop = np.count_nonzero(spent[rows] + run <= limit, axis=0)
            count = np.cumsum(new, axis=0, dtype=np.int64)
            n_short = np.count_nonzero(count < (reachable - n_seen[rows]), axis=0)
            done = n_short < w  # the draw completing the set of reachable queries ends the run
            stop = np.minimum(stop, np.where(done, n_short + 1, w))
            if every:
                draws_c[c0:c1] = draws
                new_c[c0:c1] = new
            else:
                draws_c[c0:c1, live] = draws
                new_c[c0:c1, live] = new
            taken = stop > 0
            n_seen[rows[taken]] += count[stop[taken] - 1, np.flatnonzero(taken)]
            n_drawn[rows] += stop
            run_cost[live] = run[-1]
            cont = (stop == w) & ~done
            if c1 == size:
                going[live[cont]] = True
            live = live[cont]
            if live.size == 0:
                break
        parts.append((active, col0, draws_c, new_c))
        spent[active] += np.where(going, run_cost, 0.0)
        keep = going & (n_drawn[active] < max_draws) & (n_seen[active] < reachable)
        active = active[keep]
    width = int(n_drawn.max())
    queries = np.zeros((n_reps, width), dtype=np.int64)
    new = np.zeros((n_reps, width), dtype=bool)
    for rows, col0, draws_c, new_c in parts:
        cols = min(draws_c.shape[0], width - col0)
        queries[rows, col0 : col0 + cols] = draws_c[:cols].T
        new[rows, col0 : col0 + cols] = new_c[:cols].T
    valid = np.arange(width)[None, :] < n_drawn[:, None]
    queries *= valid
    new &= valid
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


