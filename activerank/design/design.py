"""The sampling design: Target × Method -> q, costs, predictions -- everything fixed before labeling."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import QueryCosts, RemainingCosts, query_costs
from .methods import Method, get_method
from .targets import Prediction, Target

__all__ = ["Design", "build_design", "prepare_design"]


@dataclass(frozen=True, eq=False)
class Design:
    """Everything decided before a label is bought.

    Attributes
    ----------
    target : Target
        What is estimated (rankings truncated at the metric's cutoff, names).
    method : str
        Name of the registered method (:mod:`activerank.design.methods`); its design kind is
        ``method_spec.kind``.
    p, q : ndarray of shape (n_queries,)
        Target and sampling distributions.
    costs : QueryCosts
        Cost of judging each query (the union of the rankings' top-k documents;
        with ``judge="changeable"`` only the documents that can change a
        contrast, in the unit of judging whole queries, 0 on determined queries).
    prediction : Prediction
        The relevance model's per-query predictions for the target (means of
        the contrasts, variance and expected squared error), kept for the
        estimator (control variates) and for reporting.
    n_grades : int
        Size of the grade scale.
    defensive : float
        Weight of ``p`` mixed into ``q``.
    document_costs : ndarray of shape (n_docs,) or None
        Raw per-document costs (for schedules that charge partly judged queries).
    probs : ndarray of shape (n_docs, n_grades) or None
        The relevance model (document-level methods choose inclusion
        probabilities from it once the budget is known).
    held : ndarray of shape (n_queries,), bool, or None
        Queries of a query-level design whose every document to judge is held already (labels passed in):
        known exactly, never sampled, free.  ``costs`` are then the costs of the documents not held.
    judged : ndarray of shape (n_docs,), bool, or None
        Document rows whose labels are held (passed in), for every kind: the document-level and prefix kinds
        predict their variance (``method="auto"``) with these documents known and free, as they run.
    """

    target: Target
    method: str
    p: np.ndarray
    q: np.ndarray
    costs: QueryCosts
    prediction: Prediction
    n_grades: int
    defensive: float = 0.1
    document_costs: np.ndarray | None = None
    probs: np.ndarray | None = None
    held: np.ndarray | None = None
    judged: np.ndarray | None = None

    @property
    def rankings(self) -> tuple:
        return self.target.rankings

    @property
    def metric(self):
        return self.target.metric

    @property
    def method_spec(self) -> Method:
        return get_method(self.method)

    @property
    def predicted_mean(self) -> np.ndarray:
        """Predicted per-query value of the target: shape (n_queries,) for one contrast, else (n_queries, t)."""
        mean = self.prediction.mean
        return mean[:, 0] if mean.shape[1] == 1 else mean

    @property
    def predicted_variance(self) -> np.ndarray:
        return self.prediction.variance

    @property
    def n_queries(self) -> int:
        return self.p.size

    @property
    def judge(self) -> str:
        """``"changeable"`` (only documents that can change a contrast are judged) or ``"all"``."""
        return self.target.judge

    @property
    def census(self) -> np.ndarray:
        """Pool positions of the exactly known queries with ``p > 0``: determined ones (every contrast exactly
        0, never judged) and, for query-level designs, those whose labels are all held; never sampled, they
        enter the estimate as an exactly known stratum."""
        known = self.target.determined if self.held is None else self.target.determined | self.held
        return np.flatnonzero(known & (self.p > 0))

    def documents(self, x: int) -> np.ndarray:
        """Global rows to judge for pool query ``x`` (union of the top-k lists; with
        ``judge="changeable"`` only those that can change a contrast)."""
        return self.target.documents(x)

    def __repr__(self) -> str:
        return (f"Design(target={self.target.kind!r}, metric='{self.metric}', method={self.method!r}, "
                f"n_queries={self.n_queries}, systems={list(self.target.names)}, cost_model={self.costs.model!r}, "
                f"judge={self.judge!r})")


def build_design(target: Target, probs: np.ndarray, *, method: Method, p: np.ndarray, doc_costs: np.ndarray,
                 cost_model: str, per_query_cost: bool, defensive: float,
                 predicted: tuple | None = None, judged: np.ndarray | None = None) -> Design:
    """Compute predictions, costs and ``q`` for validated inputs.

    Parameters
    ----------
    target : Target
    probs : ndarray of shape (n_docs, n_grades)
        Validated relevance-model probabilities.
    method : Method
    p : ndarray of shape (n_queries,)
        Target distribution (sums to 1).
    doc_costs : ndarray of shape (n_docs,)
        Raw per-document costs.
    cost_model : str
        Name of the cost model (recorded).
    per_query_cost : bool
        Charge one unit per query instead (``costs="uniform"``).
    defensive : float
    predicted : (mean, variance), optional
        Validated per-query predictions replacing the model's (one contrast only).
    judged : ndarray of shape (n_docs,), bool, optional
        Document rows whose labels are held already.  They cost nothing; a query-level design knows the
        queries they cover in full exactly (a census stratum) and samples the others at the cost of their
        documents not held.  Document-level and prefix designs reuse held labels themselves.
    """
    det = target.determined
    if target.changes is None:
        qc = query_costs(doc_costs, target.document_sets(), model=cost_model, per_query=per_query_cost)
    else:
        # the budget keeps its unit (the mean cost of judging a whole query): cancelled documents are
        # simply not paid for
        full = query_costs(doc_costs, target.full_document_sets(), model=cost_model, per_query=per_query_cost)
        qc = query_costs(doc_costs, target.document_sets(), model=cost_model, per_query=per_query_cost,
                         scale=full.scale, free=det)
    held = None
    if judged is not None and method.unit == "query" and np.any(judged):
        qc, held = _held_costs(target, qc, doc_costs, judged)
        det = det | held
    # determined queries are a census stratum (contrast exactly 0): q is chosen for the other queries
    p_live = np.where(det, 0.0, p)
    mass = float(p_live.sum())
    p_q = p if not det.any() else p_live / mass if mass > 0 else p
    if predicted is not None:
        from .sampling import expected_squared_error

        mean, variance = predicted
        prediction = Prediction(mean[:, None], variance, expected_squared_error(mean, variance, p_q),
                                output_variance=variance[:, None])
    else:
        P = np.full_like(probs, 1.0 / probs.shape[1]) if method.relevance == "uniform" else probs
        prediction = target.predict(P, p_q)
    if not det.any():
        q = method.distribution(prediction, qc.cost, p, defensive=defensive)
    elif mass > 0:
        q = method.distribution(prediction, np.where(det, 1.0, qc.cost), p_q, defensive=defensive)
        q = np.where(det, 0.0, q)
    else:  # every query with p > 0 is determined: the answer is known without a label
        q = np.zeros_like(p)
    held_rows = None if judged is None or not np.any(judged) else np.asarray(judged, dtype=bool)
    return Design(target, method.name, p, q, qc, prediction, probs.shape[1], defensive, doc_costs, probs, held,
                  held_rows)


def _held_costs(target, qc: QueryCosts, doc_costs, judged):
    """Query costs of the documents not held, and the queries held in full (with documents to judge)."""
    labels = np.where(np.asarray(judged, dtype=bool), 0, -1)
    remaining = RemainingCosts(target, qc, doc_costs).remaining(labels)
    held = (remaining == 0) & (qc.cost > 0)
    return QueryCosts(cost=remaining, raw=remaining * qc.scale, model=qc.model, unit=qc.scale), held


def prepare_design(pool, pool_, kind: str, rankings, probs, *, metric, k=None, method="active", costs="auto",
                   query_weights=None, defensive=0.1, predicted=None, names=None, methods=None,
                   judge="changeable", judged=None) -> Design:
    """Validate the design inputs and build the design: the one path of every entry point.

    Parameters
    ----------
    pool : object
        The pool as the user passed it (a cost callable may read anything it carries).
    pool_ : Pool
        The validated, standardized pool.
    kind : {"mean", "difference", "baseline", "ranking"}
        The target (:mod:`activerank.design.targets`).
    rankings : tuple of Rankings
        Validated rankings of the pool's queries.
    probs, metric, k, method, costs, query_weights, defensive, predicted
        As in :func:`activerank.estimate`.
    names : sequence of str, optional
        One name per ranking.
    methods : tuple of str, optional
        The method names allowed here (default: every registered method).
    judge : {"changeable", "all"}, default "changeable"
        What a comparison judges (:func:`activerank.design.targets.make_target`).
    """
    from .._validation import defensive_iv, judge_iv, predicted_iv, probs_iv, query_weights_iv
    from ..metrics.registry import parse_metric
    from .costs import document_costs
    from .targets import make_target

    m = parse_metric(metric, k, require_moments=True)
    spec = get_method(method, allowed=methods)
    judge = judge_iv(judge)
    spec.kind.check(spec.name, m, kind, predicted=predicted)
    P = probs_iv(probs, n_rows=pool_.n_docs)
    target = make_target(kind, rankings, m, names, offsets=pool_.offsets, judge=judge)
    p = query_weights_iv(query_weights, pool_.n_queries)
    defensive = defensive_iv(defensive)
    per_query = isinstance(costs, str) and costs == "uniform"
    doc_costs, cost_name = document_costs(pool, pool_.n_docs, "constant" if per_query else costs)
    if predicted is not None:
        if target.contrast.shape[0] != 1:
            raise ValueError("`predicted` is supported for one ranker or one comparison only.")
        predicted = predicted_iv(predicted, pool_.n_queries)
    return build_design(target, P, method=spec, p=p, doc_costs=doc_costs, cost_model=cost_name,
                        per_query_cost=per_query, defensive=defensive, predicted=predicted, judged=judged)
