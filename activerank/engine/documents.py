"""Document-level methods in the engine: (query, document) units drawn by the method's design plug-in.

A registered method with ``unit="document"`` (:mod:`activerank.design.methods`,
e.g. ``doc_dyn``, ``doc_hh``, ``two_stage``) runs through the same engine as
the query-level ones, and every such method through the one function here,
:func:`document_sample`: the design's target (one ranker, a difference,
candidates vs a baseline, systems vs the mean system) becomes a linear target
over the union of the compared top-``k`` documents
(:func:`activerank.design.documents.document_target`); the method's
:class:`~activerank.design.document_methods.DocumentDesign` plug-in fixes its
design for the budget and draws a sample; the labeler is asked -- through the
one labeling step, :meth:`~activerank.engine.labeling.Judgments.ask` -- only
for the sampled documents not judged yet, once per query; the plug-in's
estimator turns the judged sample into the estimate and its covariance.
Documents whose weight is 0 in every contrast (they cancel) are never
sampled by a design that looks at the target; documents judged earlier
(``judgments=``) are reused for free.

The budget is in the unit of the query-level methods (the pool's mean cost of
judging a whole query; :func:`activerank.design.document_methods.unit_costs`).
Poisson designs spend it in expectation, the with-replacement and two-stage
designs stop before the draw that would overspend it.
"""

from __future__ import annotations

import math

import numpy as np

from ..design import document_methods as dm
from ..design.documents import DocumentTarget, document_target
from ..inference.estimators import Estimate
from .core import Draws, RunContext

__all__ = ["document_target_of", "document_sample", "unit_costs"]


def document_target_of(design) -> DocumentTarget:
    """The design's target as a linear target over (query, document) units, weighted by ``p``."""
    t = design.target
    if t.metric.family != "additive":  # prepare_design refuses these already
        raise ValueError(f"document-level designs need an additive metric; got {str(t.metric)!r}.")
    return document_target(list(t.rankings), n_docs=design.probs.shape[0], metric=t.metric,
                           n_grades=design.n_grades, contrasts=t.contrast, query_weights=design.p)


def unit_costs(design, dt: DocumentTarget) -> np.ndarray:
    """Cost of judging every unit, in the budget's unit (judging all units of a query costs its query cost)."""
    return dm.unit_costs(dt, design.costs, design.document_costs)


def document_sample(ctx: RunContext, budget: float, rng) -> Draws:
    """Draw units by the method's design plug-in for ``budget``, label them, estimate.

    Returns
    -------
    Draws
        One entry per sampled unit (census units included, a unit drawn
        twice appears twice), with ``estimate`` and ``trace`` set.
    """
    import pandas as pd

    d = ctx.design
    plug = d.method_spec.estimator
    dt = document_target_of(d)
    c = unit_costs(d, dt)
    labels = ctx.judgments.labels
    judged = labels[dt.rows] >= 0
    census = not (dt.matters & ~judged).any()
    if census:  # every document that can change a target is judged already: the census is exact
        sample = dm.census_sample(dt, judged)
    else:
        sample = plug.draw(plug.design(dt, d.probs, c, budget, judged=judged, defensive=d.defensive), dt, rng)
    units = sample.units
    x = dt.query[units]
    rows = dt.rows[units]
    new = ~judged[units]
    new[new] = _first_occurrence(units[new])
    ask = np.unique(units[new])
    # units are sorted by query: one labeling request per query with its sampled documents
    if ask.size:
        cuts = np.flatnonzero(np.diff(dt.query[ask])) + 1
        for part in np.split(ask, cuts):
            ctx.judgments.ask(ctx.labeler, int(dt.query[part[0]]), dt.rows[part],
                              where=" (document-level sample)")
    grades = labels[rows]
    if census:
        res = dm.census_estimate(dt, sample, grades, d.probs if plug.control_variate else None)
    else:
        res = plug.estimate(dt, sample, grades, d.probs)
    charged = np.where(new, c[units], 0.0)
    trace = pd.DataFrame({
        "draw": np.arange(units.size), "query": x, "query_id": np.asarray(ctx.pool.query_ids)[x],
        "doc_row": rows, "doc_id": ctx.pool.doc_keys(rows), "pi": sample.prob, "p": d.p[x],
        "weight": sample.weight, "stratum": np.where(sample.census, "census", "sampled"), "new": new,
        "cost": charged, "cumulative_cost": np.cumsum(charged), "grade": grades, **sample.columns,
    })
    trace.attrs.update(sample.attrs)
    trace.attrs["n_units"] = int(dt.n_units)
    trace.attrs["n_units_that_matter"] = int(dt.matters.sum())
    if sample.extra_cost:
        trace.attrs["query_overhead_cost"] = float(sample.extra_cost)
    estimate = Estimate(res.estimate, res.covariance, float(units.size))
    # i.i.d. document draws: the Student-t of every t rule ("auto" included); HT designs report inf
    dof = plug.dof(sample) if ctx.ci in ("auto", "t", "t_draws") and not census else math.inf
    return Draws(x, new, charged, sample.prob, sample.weight, float(budget), float(charged.sum()) + sample.extra_cost,
                 sample.stop_reason, estimate=estimate, trace=trace, attrs={"dof": dof})


def _first_occurrence(units: np.ndarray) -> np.ndarray:
    first = np.zeros(units.size, dtype=bool)
    first[np.unique(units, return_index=True)[1]] = True
    return first
