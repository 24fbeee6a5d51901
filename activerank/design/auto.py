"""``method="auto"``: pick the design with the smaller predicted variance at the budget.

Candidates: the query-level ``active_wor`` design (one budgeted sample
without replacement, :mod:`activerank.design.wor_methods`; for comparisons with
``judge="changeable"`` paying only for documents that can change the
difference) and, for metrics that add over documents, the document-level
``doc_dyn`` design (:mod:`activerank.engine.documents`); for cascade metrics
(ERR, RR), the ``prefix`` design (:mod:`activerank.design.prefix`: Poisson
queries, a random-depth prefix judged in each).  Normalized metrics stay
query-level.

Predicted variances, summed over the target's contrasts, under the relevance
model, at the budget ``B`` (in the unit of judging whole queries):

* query level without replacement: ``share^2 * sum_x p'(x)^2 (1 / pi(x) - 1) Var_theta[theta | x]``,
  the variance of the difference estimator with the planning inclusion
  probabilities ``pi`` of the sample
  (:func:`~activerank.design.without_replacement.approximate_inclusion_probabilities`;
  ``p'`` = ``p`` renormalized on the sampled stratum, ``share`` its mass);
* query level with replacement (:func:`predicted_query_variance` of an
  ``active`` design): ``share^2 * sum_x p'(x)^2 / q(x) E[(theta - Theta)^2 | x] * (sum_x q(x) lambda(x)) / B``
  -- the asymptotic variance of the self-normalized estimator with the
  expected number of draws ``B / E_q[lambda]`` (repeated draws, which are
  free, are ignored, so this is conservative at budgets near the pool's size);
* document level: ``sum_z (1 / pi_z - 1) ||W_z||^2 Var[g(y_z)]``, the exact
  variance of the difference estimator of the Poisson design spending ``B``
  (:func:`activerank.inference.documents.expected_poisson_variance`);
* prefix: ``sum_x p(x)^2 [(Var_theta[theta | x] + W(x)) / pi(x) - Var_theta[theta | x]]``
  with the plan's inclusion probabilities and added within-query variance
  ``W`` for the budget (:func:`predicted_prefix_variance`; the planning
  simulations use a fixed seed, so the choice does not depend on ``rng``).

Both take the model's label distribution as the truth; in particular the
document-level prediction treats labels within a query as independent given
the model, so it ignores a shared query effect of the residuals
(``docs/document_level.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["AutoChoice", "auto_design", "choose_method", "predicted_prefix_variance", "predicted_query_variance"]

#: Seed of the planning simulations behind the prefix design's predicted variance.
PLANNING_SEED = 20121


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


def auto_design(pool, pool_, kind, rankings, probs, budget: float, design_args: dict):
    """``method="auto"``'s design: ``active_wor``'s or, for additive metrics, ``doc_dyn``'s (cascade metrics:
    ``prefix``'s), whichever has the smaller predicted variance at ``budget``.

    ``design_args`` are :func:`~activerank.design.design.prepare_design`'s keyword arguments (``method`` is
    set here).  Returns ``(design, AutoChoice)``; used by the API and by labeling campaigns.
    """
    from .design import prepare_design

    args = dict(design_args, method="active_wor")
    query = prepare_design(pool, pool_, kind, rankings, probs, **args)
    doc = None
    alternative = {"additive": "doc_dyn", "cascade": "prefix"}.get(query.metric.family)
    if alternative is not None and args.get("predicted") is None:
        doc = prepare_design(pool, pool_, kind, rankings, probs, **dict(args, method=alternative))
    choice = choose_method(query, doc, budget)
    return (doc if doc is not None and choice.method == doc.method else query), choice


def predicted_query_variance(design, budget: float) -> float:
    """Predicted summed variance of a query-level design's estimate at ``budget`` (see the module notes)."""
    stratum = _sampled_stratum(design)
    if stratum is None:
        return 0.0
    live, share, p_rest = stratum
    q, pred = design.q, design.prediction
    if not design.method_spec.replacement:  # the difference estimator under the planning inclusion probabilities
        from .without_replacement import approximate_inclusion_probabilities

        pi = approximate_inclusion_probabilities(q, design.costs.cost, float(budget))
        ok = live & (pi > 0)
        return share**2 * float(np.sum(p_rest[ok] ** 2 * (1.0 / pi[ok] - 1.0) * pred.variance[ok]))
    per_draw = float(np.sum(p_rest[live] ** 2 / q[live] * pred.sq_error[live]))
    cost_per_draw = float(np.dot(q, design.costs.cost))
    return share**2 * per_draw * cost_per_draw / float(budget)


def predicted_prefix_variance(design, budget: float) -> float:
    """Predicted summed variance of the ``prefix`` design's estimate at ``budget`` (module notes)."""
    from ..engine.prefix import _layout

    live = design.q > 0
    if not live.any():
        return 0.0
    plug = design.method_spec.estimator
    plan = plug.plan(_layout(design, None), design.probs, design.p, design.prediction.variance, live, float(budget),
                     np.random.default_rng(PLANNING_SEED), defensive=design.defensive)
    if plan.exact:
        return 0.0
    if plan.pi.sum() < 2.0:
        raise ValueError(f"`budget`={budget:g} is too small for the prefix method: it samples "
                         f"{plan.pi.sum():.3g} queries in expectation")
    ok = plan.pi > 0
    p, V, W, pi = design.p[ok], design.prediction.variance[ok], plan.within_variance[ok].sum(-1), plan.pi[ok]
    return float(np.sum(p**2 * ((V + W) / pi - V)))


def _sampled_stratum(design):
    """``(live, share, p')``: the queries that can be sampled, their target mass and ``p`` renormalized on
    them; None when nothing is left to sample."""
    q, p = design.q, design.p
    census = design.census
    live = q > 0
    share = 1.0 - float(p[census].sum()) if census.size else 1.0
    if not live.any() or share <= 0:
        return None
    p_rest = np.where(live, p, 0.0)
    return live, share, p_rest / p_rest.sum()


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
    from ..engine.documents import document_target_of, unit_costs
    from ..inference.documents import expected_poisson_variance
    from .documents import inclusion_probabilities

    v_query = predicted_query_variance(query_design, budget)
    if doc_design is None:
        return AutoChoice(query_design.method, {query_design.method: v_query},
                          f"{query_design.metric.family} metric: only query-level designs apply")
    try:
        if doc_design.method_spec.unit == "prefix":
            v_doc = predicted_prefix_variance(doc_design, budget)
        else:
            dt = document_target_of(doc_design)
            est = doc_design.method_spec.estimator
            pd_ = inclusion_probabilities(dt, doc_design.probs, budget, utility=est.utility,
                                          costs=unit_costs(doc_design, dt), defensive=doc_design.defensive)
            v_doc = expected_poisson_variance(dt, pd_, doc_design.probs, control_variate=est.control_variate)
    except ValueError as exc:  # e.g. the budget buys fewer than 2 documents in expectation
        return AutoChoice(query_design.method, {query_design.method: v_query, doc_design.method: np.inf},
                          f"{doc_design.method} not applicable: {exc}")
    pred = {query_design.method: v_query, doc_design.method: v_doc}
    if v_doc < v_query:
        return AutoChoice(doc_design.method, pred, "smaller predicted variance at the budget")
    return AutoChoice(query_design.method, pred, "smaller predicted variance at the budget")
