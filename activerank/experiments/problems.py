"""One task on one fold's pool (:class:`Problem`: rankings, costs, the model's predictions, the hidden
truth), and what a registered method does on it (its sampling distribution and estimator)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design.costs import QueryCosts, document_costs, query_costs
from ..design.draws import BatchPlan
from ..design.methods import get_method
from ..design.sampling import DEFAULT_DEFENSIVE
from ..design.targets import make_target
from ..inference.snis import BatchEstimate
from ..metrics import Metric, parse_metric, pool_metric_values
from ..relevance.rankers import rank_by_scores, remove_fraction
from .folds import FoldModels
from .scenarios import ScenarioInstance


@dataclass(frozen=True, eq=False)
class Problem:
    """Everything a method may use, plus the hidden truth, for one task on one pool.

    Attributes
    ----------
    instance : ScenarioInstance
    metric : Metric
    p : ndarray of shape (n_queries,)
        Target distribution (uniform over the pool).
    costs : QueryCosts
        ``costs.cost`` is ``lambda(x)`` normalized to mean 1 (the budget unit).
    predictions : dict of str to Prediction
        What the relevance model predicts about the target
        (:class:`~activerank.design.targets.Prediction`): ``"model"`` under
        the (mixture) relevance model, ``"uniform"`` under the uniform label
        distribution (the paper's uniD).
    values : ndarray of shape (n_queries,)
        True ``L(x)`` (or ``delta(x)``) -- only the simulated labeler and the
        error computation may look at it.
    target : float
        True ``R = sum p L`` (or ``Delta``).
    probs : ndarray of shape (n_docs, n_grades)
        The relevance model's probabilities (for methods that need more).
    rankings : tuple of Rankings
        Evaluated rankings, truncated at the metric's cutoff.
    labels : ndarray of shape (n_docs,) or None
        True grade of every document (document-level methods' simulated
        labeler and nothing else).
    document_costs : ndarray of shape (n_docs,) or None
        Raw per-document costs (``costs`` is their per-query sum).
    """

    instance: ScenarioInstance
    metric: Metric
    p: np.ndarray
    costs: QueryCosts
    predictions: dict
    values: np.ndarray
    target: float
    probs: np.ndarray
    rankings: tuple
    labels: np.ndarray | None = None
    document_costs: np.ndarray | None = None

    @property
    def moments(self) -> dict:
        """``{name: (mean, variance)}`` of the model's per-query predictions."""
        return {k: (v.mean[:, 0], v.variance) for k, v in self.predictions.items()}


def build_problem(fm: FoldModels, instance: ScenarioInstance, metric, *, cost_model="constant",
                  rng=None) -> Problem:
    """Rankings, costs, moments and true values for one task on one fold's pool.

    Parameters
    ----------
    fm : FoldModels
    instance : ScenarioInstance
    metric : str or Metric
    cost_model : str, array or callable
        Passed to :func:`activerank.design.costs.document_costs`.
    rng : None, int or numpy.random.Generator
        Randomness of the index-update removal.

    Returns
    -------
    Problem
    """
    m = parse_metric(metric, require_moments=True)
    pool = fm.pool
    ranks = {}

    def ranking(name):
        if name not in ranks:
            if name.endswith("@removed"):
                ranks[name] = remove_fraction(ranking(name[: -len("@removed")]), instance.remove,
                                              np.random.default_rng(rng))
            else:
                if name not in fm.scores:
                    raise ValueError(f"scenario {instance.key!r}: unknown ranker {name!r}; have {sorted(fm.scores)}.")
                ranks[name] = rank_by_scores(fm.scores[name], pool)  # ties as trec_eval (document ids)
        return ranks[name]

    names = [instance.ranker_a] + ([instance.ranker_b] if instance.is_pair else [])
    target = make_target("difference" if instance.is_pair else "mean", [ranking(n) for n in names], m,
                         offsets=pool.offsets)
    tops = target.rankings
    probs = np.mean([fm.probs[n] for n in instance.models], axis=0)
    ymax = pool.n_grades - 1
    true = [pool_metric_values(pool.labels, r, metric=m, ymax=ymax, offsets=pool) for r in tops]
    values = true[0] if len(true) == 1 else true[0] - true[1]
    n_q = pool.n_queries
    p = np.full(n_q, 1.0 / n_q)
    doc_costs, name = document_costs(pool, pool.n_docs, cost_model)
    qc = query_costs(doc_costs, list(tops), model=name)
    uniform = np.full_like(probs, 1.0 / probs.shape[1])
    predictions = {"model": target.predict(probs, p), "uniform": target.predict(uniform, p)}
    return Problem(instance, m, p, qc, predictions, values, float(p @ values), probs, tops, pool.labels,
                   doc_costs)


# --------------------------------------------------------------------------- methods


def method_distribution(problem: Problem, method, *, defensive: float = DEFAULT_DEFENSIVE) -> np.ndarray:
    """The sampling distribution of a registered method (:mod:`activerank.design.methods`) on a problem."""
    method = get_method(method)
    if method.unit != "query":
        raise ValueError(f"method {method.name!r} samples documents; this harness samples whole queries "
                         "(document-level designs are measured by benchmarks/document_level).")
    return method.distribution(problem.predictions[method.relevance], problem.costs.cost, problem.p,
                               defensive=defensive)


def method_estimate(problem: Problem, method, q: np.ndarray, plan: BatchPlan, stops: np.ndarray) -> BatchEstimate:
    """The method's estimator on every repetition and budget prefix (it sees values only at drawn queries)."""
    method = get_method(method)
    if method.unit != "query":
        raise ValueError(f"method {method.name!r} samples documents; its estimates come from "
                         "simulate(), not from query draws.")
    x = plan.queries
    mean = problem.predictions["model"].mean[:, 0]
    return method.kind.estimator.prefix(problem.values[x], problem.p[x] / q[x], stops, predictions=mean[x],
                                   pool_prediction=float(problem.p @ mean), queries=x)
