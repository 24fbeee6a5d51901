"""The ``prefix`` method in the engine: Poisson queries, a random-depth prefix judged in each.

A registered method with ``unit="prefix"`` (:mod:`activerank.design.methods`,
its plug-in a :class:`~activerank.design.prefix.PrefixSampling`) runs through
the engine's fixed-budget schedule and this one function: the plug-in plans the
design for the budget (query inclusion probabilities and per-query stopping
rules), draws the Poisson sample of queries and their uniforms; the labeler is
asked -- through the one labeling step, one document per request, in the
plug-in's judging order (by default the document whose label is expected to
move the estimate most, given the labels seen) -- for the documents of every
sampled query until its stopping rule says stop;
the plug-in's estimator turns the judged prefixes into the estimate and its
covariance.  Documents judged earlier (``judgments=``) are free.  The budget is
spent in expectation, as by the Poisson document designs.  Only the target's
contrasts are estimated: a comparison's per-ranking means (``estimate_a``,
``estimate_b``) are NaN, as with ``judge="changeable"``.
"""

from __future__ import annotations

import math

import numpy as np

from ..design.prefix import (JudgingWalk, pooled_covariance, prefix_estimate, prefix_layout, stop_scale,
                             within_estimate)
from ..inference.estimators import Estimate
from .core import Draws, RunContext

__all__ = ["plan_and_draw", "prefix_sample", "walk_sample"]


def _layout(design, judged):
    t = design.target
    keep = t.changes.rows if t.changes is not None else None
    return prefix_layout(t.rankings, t.contrast, t.metric, design.n_grades, design.probs.shape[0],
                         design.costs.cost, design.document_costs, keep=keep, judged=judged)


def plan_and_draw(design, budget: float, rng, *, judged=None):
    """The ``prefix`` design for ``budget`` and its sample: ``(layout, plan, x, U)``.

    ``judged`` (bool per document row) marks documents judged already: they cost nothing.
    Raises (before any label) when the budget samples fewer than 2 queries in
    expectation, or the Poisson draw has fewer than 2.
    """
    d = design
    plug = d.method_spec.estimator
    layout = _layout(d, judged)
    live = d.q > 0
    plan = plug.plan(layout, d.probs, d.p, d.prediction.variance, live, float(budget), rng,
                     defensive=d.defensive)
    if plan.pi.sum() < 2.0 - 1e-6 and not plan.exact:
        raise ValueError(f"`budget`={budget:g} is too small for the prefix method: it samples "
                         f"{plan.pi.sum():.3g} queries in expectation; at least 2 are needed for a standard error.")
    x, U = plug.draw(plan, rng)
    if x.size < 2 and not plan.exact:  # before any label is bought
        raise ValueError(f"the budget ({budget:g}) drew {x.size} quer{'y' if x.size == 1 else 'ies'} for the prefix "
                         "method's sample (Poisson: the sample size is random); no standard error can be computed "
                         "from fewer than 2. Raise the budget, or run again with another rng.")
    return layout, plan, x, U


def walk_sample(layout, probs, plan, x, U, order, obtain):
    """Judge the sampled queries' prefixes step by step (all queries' ``j``-th judgments in one step).

    Parameters
    ----------
    layout : PrefixLayout
    probs : ndarray of shape (n_docs, n_grades)
    plan : PrefixPlan
    x, U : ndarray of shape (n,)
        Sampled queries and their uniforms.
    order : {"adaptive", "rank"}
    obtain : callable
        ``obtain(i, row, step) -> (grade, new)``: the grade of document ``row``, the ``step``-th judgment
        of the ``i``-th sampled query, and whether it was bought now; ``grade < 0`` means not known yet: that query's walk waits there.

    Returns
    -------
    D : ndarray of shape (n, J, t)
    P : ndarray of shape (n, J)
    judged, new : ndarray of shape (n, J), bool
    docs : ndarray of shape (n, J), int
        Layout position judged at every step (``-1``: none).
    waiting : ndarray of shape (n,), int
        Document row a query waits for (``-1``: its walk is complete).
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
    new = np.zeros((n, J), dtype=bool)
    docs = np.full((n, J), -1, dtype=np.int64)
    waiting = np.full(n, -1, dtype=np.int64)
    prev = np.ones(n)
    tau, floor = plan.tau[x], plan.floor[x]
    b = np.arange(n)
    for step in range(J):
        j, g, a = walk.next()
        active = (j >= 0) & (U <= prev) & (waiting < 0)
        if not active.any():
            break
        jj = np.maximum(j, 0)
        Pj = np.minimum(prev, stop_scale(a, floor, tau))  # the running minimum of stop_probabilities
        hit = active & (U <= Pj)
        row = rows[b, jj]
        grade = np.full(n, -1, dtype=np.int64)
        for i in np.flatnonzero(hit):
            grade[i], new[i, step] = obtain(i, int(row[i]), step)
        wait = hit & (grade < 0)
        waiting[wait] = row[wait]
        hit &= ~wait
        active &= ~wait
        f = np.where(hit, R[np.maximum(grade, 0)], rho[b, jj])
        D[:, step] = np.where(hit[:, None], (f - rho[b, jj])[:, None] * g, 0.0)
        walk.reveal(np.where(hit, j, -1), f)
        docs[:, step] = np.where(hit, j, -1)
        P[:, step] = np.where(active, Pj, prev)
        prev = np.where(active, Pj, prev)
        judged[:, step] = hit
    return D, P, judged, new & judged, docs, waiting


def prefix_sample(ctx: RunContext, budget: float, rng, *, drawn=None) -> Draws:
    """Plan, draw and judge the ``prefix`` design for ``budget``; estimate.

    ``drawn`` = ``(layout, plan, x, U)`` skips planning and drawing (a campaign's stored sample).

    Returns
    -------
    Draws
        One entry per sampled query, with ``estimate`` and ``trace`` set
        (the trace has one row per judged document).
    """
    import pandas as pd

    d = ctx.design
    plug = d.method_spec.estimator
    labels = ctx.judgments.labels
    if not d.q.any():  # every query is determined: nothing to draw or judge
        return Draws.census_only(d, budget)
    if drawn is None:
        drawn = plan_and_draw(d, budget, rng, judged=labels >= 0)
    layout, plan, x, U = drawn

    def obtain(i, row, step):
        known = labels[row] >= 0
        ctx.judgments.ask(ctx.labeler, int(x[i]), np.array([row]),
                          where=f" (prefix sample, query position {i}, judgment {step})")
        return int(labels[row]), not known

    D, P, judged, new, docs, waiting = walk_sample(layout, d.probs, plan, x, U, plug.order, obtain)
    rows = layout.rows[x]
    e, V = within_estimate(D, P, judged)
    pool_mean = d.prediction.pool_mean(d.p)
    pi = plan.pi[x]
    est, cov = prefix_estimate(e, V, pi, d.p[x], pool_mean)
    sample_cov = cov
    ov = d.prediction.output_variance
    if ctx.ci != "normal" and ov is not None:  # small samples: the model's predicted variance pooled in
        cov = pooled_covariance(cov, x.size, plan.model_variance(d.p, ov))
    step_cost = np.where(docs >= 0, np.take_along_axis(layout.cost[x], np.maximum(docs, 0), axis=1), 0.0)
    charged_doc = np.where(new, step_cost, 0.0)
    charged = charged_doc.sum(1)
    jq, js = np.nonzero(judged)
    doc_rows = rows[jq, docs[jq, js]]
    trace = pd.DataFrame({
        "query": x[jq], "query_id": np.asarray(ctx.pool.query_ids)[x[jq]], "doc_row": doc_rows,
        "doc_id": ctx.pool.doc_keys(doc_rows), "step": js, "layout_position": docs[jq, js], "pi": pi[jq],
        "P": P[jq, js], "p": d.p[x[jq]], "new": new[jq, js], "cost": charged_doc[jq, js], "grade": labels[doc_rows],
    })
    trace["cumulative_cost"] = np.cumsum(trace["cost"].to_numpy())
    trace.attrs.update(design="Poisson sample of queries, a random-length sequence of documents judged in each "
                              "(prefix)",
                       expected_cost=float(plan.budget), n_sampled_queries=int(x.size),
                       sample_variance=np.diag(sample_cov).tolist())
    exact = plan.exact
    dof = math.inf if exact or ctx.ci == "normal" else float(max(x.size - 1, 1))
    estimate = Estimate(est, np.zeros_like(cov) if exact else cov, float(x.size))
    return Draws(x, charged > 0, charged, pi, d.p[x] / pi, float(budget), float(charged.sum()),
                 "all_judged" if exact else "budget", estimate=estimate, trace=trace, attrs={"dof": dof})
