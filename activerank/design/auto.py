"""``method="auto"``: pick the design with the smaller predicted variance at the budget.

Candidates: the query-level ``active_wor`` design (one budgeted sample
without replacement, :mod:`activerank.design.kinds.query_wor`; for comparisons with
``judge="changeable"`` paying only for documents that can change the
difference) and, for metrics that add over documents, the document-level
``doc_dyn`` design (:mod:`activerank.design.kinds.documents`); for cascade metrics
(ERR, RR), the ``prefix`` design (:mod:`activerank.design.kinds.prefix`: Poisson
queries, a random-depth prefix judged in each).  Normalized metrics stay
query-level.

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

from dataclasses import dataclass

import numpy as np

from .costs import budget_unit_factor
from .design import prepare_design

__all__ = ["AutoChoice", "auto_design", "choose_method", "predicted_variance"]


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


def auto_design(pool, pool_, kind, rankings, probs, budget: float, design_args: dict, *, budget_unit="queries"):
    """``method="auto"``'s design: ``active_wor``'s or, for additive metrics, ``doc_dyn``'s (cascade metrics:
    ``prefix``'s), whichever has the smaller predicted variance at ``budget`` (in ``budget_unit``,
    :func:`~activerank.design.costs.budget_unit_factor`).

    ``design_args`` are :func:`~activerank.design.design.prepare_design`'s keyword arguments (``method`` is
    set here).  Returns ``(design, AutoChoice)``; used by the API and by labeling campaigns.
    """
    args = dict(design_args, method="active_wor")
    query = prepare_design(pool, pool_, kind, rankings, probs, **args)
    budget = budget / budget_unit_factor(budget_unit, query.costs, query.document_costs)
    doc = None
    alternative = {"additive": "doc_dyn", "cascade": "prefix"}.get(query.metric.family)
    if alternative is not None and args.get("predicted") is None:
        doc = prepare_design(pool, pool_, kind, rankings, probs, **dict(args, method=alternative))
    choice = choose_method(query, doc, budget)
    return (doc if doc is not None and choice.method == doc.method else query), choice


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
