"""``method="auto"``, the default: pick the design with the smaller predicted variance at the budget.

Candidates: the query-level ``active_wor`` design (one budgeted sample
without replacement, :mod:`activerank.design.kinds.query_wor`; for comparisons with
``judge="changeable"`` paying only for documents that can change the
difference) and, for metrics that add over documents, the document-level
``doc_dyn`` design (:mod:`activerank.design.kinds.documents`); for cascade metrics
(ERR, RR), the ``prefix`` design (:mod:`activerank.design.kinds.prefix`: queries
in a budgeted priority order, a random-depth prefix judged in each).  Normalized
metrics stay query-level, and so does every metric under per-query costs
(``costs="uniform"``: judging part of a query costs as much as all of it) or
with ``predicted`` per-query moments.  A route that cannot run a design (a
campaign, whose estimate must come from any judged head of its tasks; a
sequential schedule; a Dask pool) names the ones it can, and the reason says
which were left out and why.

Predicted variances, summed over the target's contrasts, under the relevance
model, at the budget ``B`` (in the unit of judging whole queries), are each
design kind's own :meth:`~activerank.design.kinds.base.DesignKind.predicted_variance`
(:func:`predicted_variance`): for ``active_wor`` the difference estimator's
variance with the planning inclusion probabilities, for ``doc_dyn`` the exact
variance of the Poisson design spending ``B``, for ``prefix`` the two-stage
variance of its plan (fixed planning seed, so the choice does not depend on
``rng``).

Both take the model's label distribution as the truth; in particular the
document-level prediction treats labels within a query as independent given
the model, so it ignores a shared query effect of the residuals
(``docs/document_level.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .costs import budget_unit_factor
from .design import Design, prepare_design

__all__ = ["SEQUENTIAL_AUTO", "AutoCandidates", "AutoChoice", "auto_alternative", "auto_candidates", "auto_design",
           "choose_method", "predicted_variance"]


@dataclass(frozen=True)
class AutoChoice:
    """What ``method="auto"`` chose and why.

    Attributes
    ----------
    method : str
        The chosen registered method.
    predicted_variance : dict
        ``{method: predicted summed variance at the budget}`` of every
        candidate considered (``inf`` when the budget cannot run it).
    reason : str
    """

    method: str
    predicted_variance: dict
    reason: str

    def as_dict(self) -> dict:
        return {"method": self.method, "predicted_variance": dict(self.predicted_variance), "reason": self.reason}


#: Deepest cutoff at which auto weighs the prefix design: its planning simulations cost grows with the square
#: of the depth (full-list ERR on 95 MQ2008-sized queries: 8 s against 0.04 s for active_wor).
PREFIX_MAX_DEPTH = 100

#: ``method="auto"`` of a sequential schedule (:func:`activerank.estimate_sequential`).
SEQUENTIAL_AUTO = AutoChoice(
    "active", {}, "a sequential schedule stops after any draw, so it needs a draw sequence with replacement: "
    "'active' (Sawade et al.'s q*) is the one it runs; sample designs without replacement are left out")


def auto_design(pool, pool_, kind, rankings, probs, budget: float, design_args: dict, *, budget_unit="queries",
                query_method: str = "active_wor", alternatives: tuple = ("doc_dyn", "prefix"), route: str = ""):
    """``method="auto"``'s design: the query-level ``query_method``'s or, for additive metrics, ``doc_dyn``'s
    (cascade metrics: ``prefix``'s), whichever has the smaller predicted variance at ``budget`` (in
    ``budget_unit``, :func:`~activerank.design.costs.budget_unit_factor`).

    ``design_args`` are :func:`~activerank.design.design.prepare_design`'s keyword arguments (``method`` is
    set here).  A route that cannot run a design passes the ones it can in ``alternatives`` and says why
    the others are left out in ``route`` (e.g. a campaign estimates from any judged head of its tasks).
    Returns ``(design, AutoChoice)``; used by the API, labeling campaigns and Dask pools.  The same as
    :func:`auto_candidates` then :meth:`AutoCandidates.choose`.
    """
    return auto_candidates(pool, pool_, kind, rankings, probs, design_args, budget_unit=budget_unit,
                           query_method=query_method, alternatives=alternatives, route=route).choose(budget)


@dataclass(frozen=True, eq=False)
class AutoCandidates:
    """The designs ``method="auto"`` weighs, built once: the choice at any budget reuses them (and what their
    kinds keep per design, e.g. the ``prefix`` planning simulations, which do not depend on the budget).

    Attributes
    ----------
    query : Design
        The query-level design.
    alternative : Design or None
        The ``doc_dyn`` or ``prefix`` design (None: not considered).
    skipped : str
        Why no alternative, or which were left out ("" when none was).
    factor : float
        The caller's budget units per engine unit (:func:`~activerank.design.costs.budget_unit_factor`).
    """

    query: Design
    alternative: Design | None
    skipped: str
    factor: float

    def choose(self, budget: float):
        """``(design, AutoChoice)`` at ``budget`` (in the caller's unit)."""
        doc = self.alternative
        choice = choose_method(self.query, doc, budget / self.factor)
        if self.skipped:
            choice = replace(choice, reason=f"{self.skipped}; {choice.reason}" if doc is not None else self.skipped)
        return (doc if doc is not None and choice.method == doc.method else self.query), choice


def auto_candidates(pool, pool_, kind, rankings, probs, design_args: dict, *, budget_unit="queries",
                    query_method: str = "active_wor", alternatives: tuple = ("doc_dyn", "prefix"),
                    route: str = "") -> AutoCandidates:
    """The designs :func:`auto_design` weighs (its parameters but the budget)."""
    args = dict(design_args, method=query_method)
    query = prepare_design(pool, pool_, kind, rankings, probs, **args)
    factor = budget_unit_factor(budget_unit, query.costs, query.document_costs)
    alternative, skipped = auto_alternative(query.metric, per_query_costs=query.costs.model == "uniform",
                                            alternatives=alternatives, route=route, predicted=args.get("predicted"),
                                            judge_all=kind != "mean" and args.get("judge") == "all")
    doc = None if alternative is None else prepare_design(pool, pool_, kind, rankings, probs,
                                                          **dict(args, method=alternative))
    return AutoCandidates(query, doc, skipped, factor)


def auto_alternative(metric, *, per_query_costs: bool = False, alternatives: tuple = ("doc_dyn", "prefix"),
                     route: str = "", predicted=None, judge_all: bool = False):
    """The method auto weighs against the query-level design for ``metric`` (or None), and why none is ("").

    ``per_query_costs``: the cost model charges per query (``costs="uniform"``); ``judge_all``: a comparison
    with ``judge="all"``, which asks for every ranker's own mean too.
    """
    family = metric.family
    alternative = {"additive": "doc_dyn", "cascade": "prefix"}.get(family)
    if alternative is None:
        return None, ""
    if per_query_costs:  # a part of a query costs as much as all of it
        return None, (f"per-query costs (costs='uniform'): judging part of a query costs as much as judging it "
                      f"whole, so {alternative!r} is not considered; only query-level designs apply")
    if judge_all:  # document and prefix designs estimate the contrasts only
        return None, (f"judge='all' asks for every ranker's own mean, which only query-level designs estimate; "
                      f"{alternative!r} not considered")
    if predicted is not None:
        return None, f"`predicted` (per-query predictions) is used by query-level designs only; {alternative!r} skipped"
    if alternative not in alternatives:
        return None, f"{alternative!r} not considered: {route or 'not available here'}"
    depth = metric.k
    if alternative == "prefix" and (depth is None or depth > PREFIX_MAX_DEPTH):
        return None, (f"{str(metric)!r} judges to depth {'the whole list' if depth is None else depth}: "
                      f"the prefix design's planning grows with the square of the depth, so auto runs it only up "
                      f"to depth {PREFIX_MAX_DEPTH} (method='prefix' runs it anyway)")
    return alternative, ""


def predicted_variance(design, budget: float) -> float:
    """The model's predicted summed variance of ``design``'s estimate at ``budget`` (its kind's rule)."""
    return float(design.method_spec.kind.predicted_variance(design, float(budget)))


def choose_method(query_design, doc_design, budget: float) -> AutoChoice:
    """Compare the query-level design with the document-level one (``None`` when not applicable).

    Parameters
    ----------
    query_design : Design
        The query-level design (``active_wor`` for fixed budgets).
    doc_design : Design or None
        The alternative: the ``doc_dyn`` design (additive metrics) or the ``prefix`` design (cascade metrics).
    budget : float
    """
    v_query = predicted_variance(query_design, budget)
    if doc_design is None:
        return AutoChoice(query_design.method, {query_design.method: v_query},
                          f"{query_design.metric.family} metric: only query-level designs apply")
    try:
        v_doc = predicted_variance(doc_design, budget)
    except ValueError as exc:  # e.g. the budget buys fewer than 2 documents in expectation
        return AutoChoice(query_design.method, {query_design.method: v_query, doc_design.method: np.inf},
                          f"{doc_design.method} not applicable: {exc}")
    pred = {query_design.method: v_query, doc_design.method: v_doc}
    if v_doc < v_query:
        return AutoChoice(doc_design.method, pred, "smaller predicted variance at the budget")
    return AutoChoice(query_design.method, pred, "smaller predicted variance at the budget")
