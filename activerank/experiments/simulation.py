"""Monte-Carlo of budgeted campaigns on a problem: every method on every budget of a grid, summarized as
error curves (:func:`simulate`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..design.draws import BatchPlan, budget_stops, draw_budgeted_batch
from ..design.methods import get_method
from ..design.sampling import DEFAULT_DEFENSIVE
from .problems import Problem, method_distribution, method_estimate


def simulate(problem: Problem, method, budgets, n_reps: int, rng=None, *,
             defensive: float = DEFAULT_DEFENSIVE) -> tuple[pd.DataFrame, dict]:
    """Monte-Carlo of ``n_reps`` campaigns for every budget of a grid.

    Parameters
    ----------
    problem : Problem
    method : str or Method
        A registered method (:data:`activerank.design.methods.METHODS`).
    budgets : sequence of float
        Increasing budgets (units of mean query cost).
    n_reps : int
    rng : None, int or numpy.random.Generator
    defensive : float

    Returns
    -------
    summary : pandas.DataFrame
        One row per budget: ``budget, mean_abs_error, se_abs_error, rmse,
        selection_error, se_selection_error, coverage95, mean_draws,
        mean_queries, mean_cost, n_empty``.
    losses : dict of str to ndarray (n_budgets, n_reps)
        Per-repetition ``abs_error`` and ``selection_error`` (for bootstraps).
    """
    b = np.asarray(budgets, dtype=np.float64)
    if b.ndim != 1 or b.size == 0 or np.any(np.diff(b) <= 0):
        raise ValueError(f"`budgets` must be a non-empty increasing 1-d sequence; got {budgets!r}.")
    if get_method(method).unit == "prefix":
        raise ValueError(f"method {get_method(method).name!r} judges random-depth prefixes; it is simulated by "
                         "PrefixSampling.simulate (benchmarks/peers/prefix_api.py), not by this harness.")
    if get_method(method).unit == "document":
        return _simulate_documents(problem, get_method(method), b, n_reps, rng, defensive)
    if not get_method(method).replacement:
        return _simulate_without_replacement(problem, get_method(method), b, n_reps, rng, defensive)
    q = method_distribution(problem, method, defensive=defensive)
    plan = draw_budgeted_batch(q, problem.costs.cost, float(b[-1]), n_reps, rng)
    stops = budget_stops(plan, b)
    est = method_estimate(problem, method, q, plan, stops)
    cost, nq = _prefix_costs(plan, stops)
    return _summarize(problem, b, est.estimate, est.standard_error, stops, nq, cost)


def _prefix_costs(plan: BatchPlan, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cost and distinct queries of every budget prefix, each of shape (n_budgets, n_reps)."""
    charged_cum = np.cumsum(plan.charged, axis=1)
    rows = np.arange(plan.n_reps)[None, :]
    idx = np.maximum(stops - 1, 0)
    cost = np.where(stops > 0, charged_cum[rows, idx], 0.0)
    newcum = np.cumsum(plan.new, axis=1)
    return cost, np.where(stops > 0, newcum[rows, idx], 0)


def _simulate_without_replacement(problem: Problem, method, budgets: np.ndarray, n_reps: int, rng,
                                  defensive: float):
    """A query-level method without replacement on the budget grid: its plug-in's own Monte-Carlo."""
    q = method_distribution(problem, method, defensive=defensive)
    pred = problem.predictions[method.relevance]
    var = pred.output_variance[:, 0] if pred.output_variance is not None else None
    out = method.kind.simulate(problem.values, problem.predictions["model"].mean[:, 0], problem.p, q,
                                    problem.costs.cost, budgets, n_reps, np.random.default_rng(rng),
                                    output_variance=var)
    return _summarize(problem, budgets, out["estimate"], out["standard_error"], out["n"], out["n"], out["cost"])


def _simulate_documents(problem: Problem, method, budgets: np.ndarray, n_reps: int, rng, defensive: float):
    """A document-level method on the budget grid: its design plug-in's own Monte-Carlo."""
    from ..design.kinds.documents import unit_costs
    from ..design.kinds.documents import document_target

    if problem.labels is None or problem.document_costs is None:
        raise ValueError(f"method {method.name!r} samples documents: the problem needs `labels` and "
                         "`document_costs` (build it with build_problem).")
    if problem.metric.family != "additive":
        raise ValueError(f"method {method.name!r} samples single documents and needs a metric that adds over "
                         f"documents (DCG@k, P@k, RBP); got {str(problem.metric)!r}.")
    probs = problem.probs
    if method.relevance == "uniform":
        probs = np.full_like(probs, 1.0 / probs.shape[1])
    dt = document_target(list(problem.rankings), n_docs=probs.shape[0], metric=problem.metric,
                         n_grades=probs.shape[1], query_weights=problem.p)
    costs = unit_costs(dt, problem.costs, problem.document_costs)
    out = method.kind.simulate(dt, probs, costs, budgets, problem.labels[dt.rows], n_reps,
                                    np.random.default_rng(rng), defensive=defensive)
    return _summarize(problem, budgets, out["estimate"][..., 0], out["standard_error"][..., 0], out["n_draws"],
                      out["n_queries"], out["cost"])


def _summarize(problem: Problem, b, e, se, draws, n_queries, cost) -> tuple[pd.DataFrame, dict]:
    """Summary rows and per-repetition losses from estimates of shape (n_budgets, n_reps)."""
    t = problem.target
    empty = ~np.isfinite(e)
    # an empty run (no query affordable within the budget) is scored as estimating 0
    e = np.where(empty, 0.0, e)
    abs_err = np.abs(e - t)
    sel = np.where(e == 0.0, 0.5, (np.sign(e) != np.sign(t)).astype(float))
    covered = np.abs(e - t) <= 1.959964 * np.where(np.isfinite(se), se, np.inf)
    n = e.shape[1]
    summary = pd.DataFrame({
        "budget": b,
        "mean_abs_error": abs_err.mean(1),
        "se_abs_error": abs_err.std(1, ddof=1) / np.sqrt(n),
        "rmse": np.sqrt((abs_err**2).mean(1)),
        "selection_error": sel.mean(1),
        "se_selection_error": sel.std(1, ddof=1) / np.sqrt(n),
        "coverage95": covered.mean(1),
        "mean_draws": draws.mean(1),
        "mean_queries": n_queries.mean(1),
        "mean_cost": cost.mean(1),
        "n_empty": empty.sum(1),
    })
    return summary, {"abs_error": abs_err, "selection_error": sel}
