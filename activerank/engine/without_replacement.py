"""Query-level methods that sample without replacement, in the engine.

A registered method whose estimator is a
:class:`~activerank.design.wor_methods.WithoutReplacementDesign` (``replacement=False``
in :class:`~activerank.design.methods.Method`, e.g. ``active_wor``) runs through
the engine's fixed-budget schedule and this one function: the plug-in draws a
budgeted sequential Poisson sample with the design's ``q`` as scores and its
query costs (every query at most once, the cost of the sample within the
budget), the labeler is asked -- through the one labeling step -- for every
sampled query in selection order, and the plug-in's model-assisted estimator
turns the judged sample into the estimate.  Determined queries of a comparison
(contrasts exactly 0, ``q = 0``) are an exactly known census stratum, as in the
with-replacement loop.
"""

from __future__ import annotations

import numpy as np

from .._validation import sample_budget_iv
from ..design.without_replacement import WORSample
from ..inference.estimators import Estimate
from .core import Draws, RunContext, clamp_cost

__all__ = ["wor_estimate", "wor_sample"]


def wor_sample(ctx: RunContext, budget: float, rng) -> Draws:
    """Draw a without-replacement sample for ``budget``, label it, estimate.

    Returns
    -------
    Draws
        One entry per sampled query (selection order), with ``estimate`` and
        ``trace`` set; the census stratum enters the estimate exactly.
    """
    d = ctx.design
    if not d.q.any():  # every query is determined: nothing to draw or judge
        return Draws.census_only(d, budget)
    budget = sample_budget_iv(budget, d.costs.cost, d.q)
    sample = d.method_spec.estimator.draw(d.q, d.costs.cost, budget, rng)
    x, pi, charged = sample.indices, sample.pi, sample.cost
    for j, xj in enumerate(x.tolist()):
        ctx.label(xj, where=f" (sample position {j})",
                  trace=lambda j=j: _trace(ctx, x[:j], pi[:j], charged[:j], None))
    return wor_estimate(ctx, sample, budget)


def wor_estimate(ctx: RunContext, sample: WORSample, budget: float) -> Draws:
    """The estimate of a without-replacement ``sample`` whose queries are judged in ``ctx``'s store.

    :func:`wor_sample` after labeling, and a campaign that planned the same
    sample (:class:`activerank.campaign.Campaign`) once it is judged.
    """
    d = ctx.design
    plug = d.method_spec.estimator
    costs = d.costs.cost
    x, pi, charged = sample.indices, sample.pi, sample.cost
    census = d.census
    p_rest = d.p.copy()
    p_rest[census] = 0.0
    share = float(p_rest.sum())
    p_norm = p_rest / share
    if x.size < 2 and sample.threshold != np.inf:
        raise ValueError(
            f"the budget ({budget:g}) bought {x.size} quer{'y' if x.size == 1 else 'ies'} outside the exactly "
            "known ones: no standard error can be computed from fewer than 2. Raise the budget "
            "(pass judgments=err.judgments to reuse the labels already bought).")
    target = d.target
    judged = np.union1d(x, census)
    pool_values = ctx.values(judged)  # full-pool arrays, filled on ``judged``
    pool_outputs = target.outputs(pool_values)
    system_values, outputs = pool_values[x], pool_outputs[x]
    pred = d.prediction
    model_var = plug.model_variance(d.q, costs, budget, p_norm, pred.output_variance) if ctx.ci != "normal" \
        else None
    fit = plug.fit(outputs, pred.mean[x], pi, p_norm[x], pred.pool_mean(p_norm), model_variance=model_var,
                   ci=ctx.ci)
    main = fit.estimate
    if census.size:
        exact = pool_outputs[census].T @ d.p[census]
        main = Estimate(exact + share * main.estimate, share**2 * main.covariance, main.effective_sample_size,
                        main.coefficient)
    own = None
    if target.kind != "mean" and target.changes is None:  # every document judged: each ranking's own value
        # every ranking with the contrasts' (shared) coefficient, so the contrasts of the rankings' own
        # estimates are the contrast estimates (estimate_a - estimate_b = difference)
        coef = np.asarray(main.coefficient, dtype=np.float64)
        beta = float(coef[0]) if coef.size and np.all(coef == coef[0]) else None
        own = _own(plug, ctx.ci, system_values, pred.system_mean, x, pi, p_norm, beta)
        if census.size:
            own = Estimate(pool_values[census].T @ d.p[census] + share * own.estimate, share**2 * own.covariance,
                           own.effective_sample_size)
    complete = sample.threshold == np.inf and bool(np.all(np.isin(np.flatnonzero(p_rest > 0), x)))
    if target.changes is not None:  # only documents that can change a contrast were judged
        system_values = np.full_like(system_values, np.nan)
    trace = _trace(ctx, x, pi, charged, (system_values, outputs))
    trace.attrs.update(design="budgeted sequential Poisson sampling without replacement (scores = q)",
                       threshold=float(sample.threshold), coefficient=main.coefficient.tolist(),
                       sample_variance=(share**2 * fit.sample_variance).tolist())
    if fit.model_variance is not None:
        trace.attrs["model_variance"] = (share**2 * fit.model_variance).tolist()
    return Draws(x, np.ones(x.size, dtype=bool), charged, pi, d.p[x] / pi, float(budget),
                 clamp_cost(float(charged.sum()), float(budget)),
                 "all_judged" if complete else ("budget" if sample.threshold != np.inf else "all_reachable_judged"),
                 census=census, estimate=main, trace=trace, attrs={"dof": fit.dof, "own": own})


def _own(plug, ci, system_values, system_mean, x, pi, p_norm, beta) -> Estimate:
    """Every ranking's own mean: GREG on the model's per-system predictions with coefficient ``beta``
    (tuned per ranking when None), Hájek without predictions."""
    if system_mean is None:
        zeros = np.zeros_like(system_values)
        return plug.fit(system_values, zeros, pi, p_norm[x], np.zeros(system_values.shape[1]), ci=ci,
                        coefficient=0.0).estimate
    return plug.fit(system_values, system_mean[x], pi, p_norm[x], system_mean.T @ p_norm, ci=ci,
                    coefficient=beta, fitted=beta is not None and plug.coefficient is None).estimate


def _trace(ctx, x, pi, charged, values):
    """One row per sampled query: ``draw, query, query_id, q, pi, p, weight, new, cost, cumulative_cost``
    and (once judged) the value columns."""
    import pandas as pd

    from .assemble import value_columns

    cols = {"draw": np.arange(x.size), "query": x, "query_id": np.asarray(ctx.pool.query_ids)[x],
            "q": ctx.design.q[x], "pi": pi,
            "p": ctx.design.p[x], "weight": ctx.design.p[x] / pi, "new": np.ones(x.size, dtype=bool),
            "cost": charged, "cumulative_cost": np.cumsum(charged)}
    if values is not None:
        cols.update(value_columns(ctx.design.target, *values))
    return pd.DataFrame(cols)
