"""Document-level methods in the engine: (query, document) pairs drawn by a Poisson design.

A registered method with ``unit="document"`` (:mod:`activerank.design.methods`,
e.g. ``doc_dyn``) runs through the same engine as the query-level ones: the
design's target (one ranker, a difference, candidates vs a baseline, systems
vs the mean system) becomes a linear target over the union of the compared
top-``k`` documents (:func:`activerank.design.documents.document_target`),
every document is judged independently with a probability ``pi`` chosen for
the budget (:func:`activerank.design.documents.inclusion_probabilities`,
cost-aware, mixed with a defensive share), the labeler is asked -- through
the one labeling step, :meth:`~activerank.engine.labeling.Judgments.ask` --
only for the drawn documents of each query, and the estimate is the
method's Horvitz-Thompson / difference estimator
(:func:`activerank.inference.documents.horvitz_thompson`).  Documents whose
weight is 0 in every contrast (they cancel) have ``pi = 0`` and are never
judged; documents judged earlier (``judgments=``) are a census (``pi = 1``,
free).

The budget is in the unit of the query-level methods (the pool's mean cost of
judging a whole query) and is spent *in expectation*: Poisson sampling judges
a random number of documents, so the realized cost varies around it.
"""

from __future__ import annotations

import numpy as np

from ..design.documents import (
    DocumentTarget,
    PoissonDesign,
    document_target,
    draw_poisson,
    inclusion_probabilities,
)
from ..inference.estimators import Estimate
from .core import Draws, RunContext

__all__ = ["document_target_of", "poisson_documents", "unit_costs"]


def document_target_of(design) -> DocumentTarget:
    """The design's target as a linear target over (query, document) units, weighted by ``p``."""
    t = design.target
    if t.metric.family != "additive":  # prepare_design refuses these already
        raise ValueError(f"document-level designs need an additive metric; got {str(t.metric)!r}.")
    return document_target(list(t.rankings), n_docs=design.probs.shape[0], metric=t.metric,
                           n_grades=design.n_grades, contrasts=t.contrast, query_weights=design.p)


def unit_costs(design, dt: DocumentTarget) -> np.ndarray:
    """Cost of judging every unit, in the budget's unit (judging all units of a query costs its query cost)."""
    if design.costs.model == "uniform":
        size = np.diff(dt.offsets)
        return 1.0 / size[dt.query]
    return design.document_costs[dt.rows] / design.costs.scale


def poisson_documents(ctx: RunContext, budget: float, rng) -> Draws:
    """Draw units by the method's Poisson design for ``budget``, label them, estimate.

    Returns
    -------
    Draws
        One entry per judged unit (census units included), with ``estimate``
        and ``trace`` set.
    """
    import pandas as pd

    d = ctx.design
    est = d.method_spec.estimator
    dt = document_target_of(d)
    c = unit_costs(d, dt)
    labels = ctx.judgments.labels
    judged = labels[dt.rows] >= 0
    if (dt.matters & ~judged).any():
        design = inclusion_probabilities(dt, d.probs, budget, utility=est.utility, costs=c,
                                         defensive=d.defensive, judged=judged)
    else:  # every document that can change a target is judged already: the census is exact
        design = PoissonDesign(pi=judged.astype(np.float64), costs=np.zeros(dt.n_units), budget=0.0,
                               kind="poisson")
    mask = draw_poisson(design, rng)
    new = mask & ~judged
    idx = np.flatnonzero(new)
    # units are sorted by query: one labeling request per query with its drawn documents
    if idx.size:
        cuts = np.flatnonzero(np.diff(dt.query[idx])) + 1
        for part in np.split(idx, cuts):
            ctx.judgments.ask(ctx.labeler, int(dt.query[part[0]]), dt.rows[part],
                              where=" (document-level sample)")
    take = np.flatnonzero(mask)
    rows = dt.rows[take]
    res = est.estimate(dt, design, rows, labels[rows], d.probs)
    pi = design.pi[take]
    charged = np.where(new[take], design.costs[take], 0.0)
    x = dt.query[take]
    exact = bool(np.all(design.pi[dt.matters] >= 1.0))
    trace = pd.DataFrame({
        "draw": np.arange(take.size), "query": x, "query_id": np.asarray(ctx.pool.query_ids)[x],
        "doc_row": rows, "doc_id": ctx.pool.doc_keys(rows), "pi": pi, "p": d.p[x], "weight": 1.0 / pi,
        "stratum": np.where(judged[take], "census", "sampled"), "new": new[take], "cost": charged,
        "cumulative_cost": np.cumsum(charged), "grade": labels[rows],
    })
    trace.attrs["expected_cost"] = float(np.dot(design.pi, design.costs))
    trace.attrs["n_units"] = int(dt.n_units)
    trace.attrs["n_units_that_matter"] = int(dt.matters.sum())
    estimate = Estimate(res.estimate, res.covariance, float(take.size))
    return Draws(x, new[take], charged, pi, 1.0 / pi, float(budget), float(charged.sum()),
                 "all_judged" if exact else "budget", estimate=estimate, trace=trace)
