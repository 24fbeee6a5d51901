"""Public entry points: ``estimate`` (one ranker) and ``compare`` (two rankers).

Both follow the same pipeline -- relevance model probabilities -> exact moments
-> costs -> sampling distribution -> budgeted draws -> labels -> estimator --
split into a :class:`Design` (everything decided before any label is bought)
and the labeling/estimation step, so a labeling campaign can persist the
design and estimate later from stored judgments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validation import probs_iv
from .design.costs import QueryCosts, document_costs, query_costs
from .inference.estimators import ComparisonResult, EstimateResult, model_assisted, snis, warn_if_low_ess
from .labelers import LabelingError, check_grades
from .metrics import Metric, parse_metric, pool_metric_values
from .metrics.moments import _moments, _pair_moments
from .ragged import Rankings
from .relevance.rankers import rank_by_scores
from .design.sampling import (
    DEFAULT_DEFENSIVE,
    DrawPlan,
    draw_budgeted,
    expected_squared_error,
    optimal_distribution,
    query_weights_iv,
)

__all__ = ["Pool", "Design", "METHODS", "design", "make_design", "estimate", "compare", "label_plan", "estimate_from_labels"]

METHODS = ("active", "passive", "active_uniform_costs", "model_assisted", "model_assisted_variance",
           "model_assisted_fixed")
MODEL_ASSISTED = ("model_assisted", "model_assisted_variance", "model_assisted_fixed")


@dataclass(frozen=True, eq=False)
class Pool:
    """The unlabeled query pool: which document rows belong to which query.

    Any object with ``offsets`` and ``query_ids`` (such as
    :class:`~activerank.io.letor.LetorData`) can be used as a pool; this class is
    the minimal one.

    Examples
    --------
    >>> pool = Pool.from_qids([7, 7, 9])
    >>> pool.query_ids.tolist(), pool.offsets.tolist()
    ([7, 9], [0, 2, 3])
    """

    query_ids: np.ndarray
    offsets: np.ndarray
    doc_ids: np.ndarray | None = None
    doc_length: np.ndarray | None = None

    @classmethod
    def from_qids(cls, qids, *, doc_ids=None, doc_length=None) -> "Pool":
        """Pool from one query id per document row (rows of a query contiguous)."""
        qids = np.asarray(qids).reshape(-1)
        if qids.size == 0:
            raise ValueError("`qids` must not be empty.")
        starts = np.r_[0, np.flatnonzero(qids[1:] != qids[:-1]) + 1]
        query_ids = qids[starts]
        _, counts = np.unique(query_ids, return_counts=True)
        if (counts > 1).any():
            dup = np.unique(query_ids, return_counts=True)[0][counts > 1][0]
            raise ValueError(f"`qids` must group each query's rows contiguously; query {_py(dup)!r} is split.")
        offsets = np.r_[starts, qids.size].astype(np.int64)
        return cls(query_ids, offsets, doc_ids, doc_length)

    @property
    def n_queries(self) -> int:
        return self.offsets.size - 1

    @property
    def n_docs(self) -> int:
        return int(self.offsets[-1])


def _py(value):
    """Plain Python scalar for messages and dict keys (numpy scalars repr as np.int64(...))."""
    return value.item() if isinstance(value, np.generic) else value


def _pool_iv(pool):
    if not (hasattr(pool, "offsets") and hasattr(pool, "query_ids")):
        raise TypeError(
            "`pool` must have `offsets` and `query_ids` (e.g. a LetorData or activerank.Pool); "
            f"got {type(pool).__name__}."
        )
    offsets = np.asarray(pool.offsets, dtype=np.int64)
    if offsets.size < 2:
        raise ValueError("`pool` must contain at least one query.")
    return pool


def _rankings_for_pool(scores, pool, name: str) -> Rankings:
    """Per-query rankings from per-document scores, or validated given Rankings."""
    offsets = np.asarray(pool.offsets, dtype=np.int64)
    n_docs = int(offsets[-1])
    if isinstance(scores, Rankings):
        if scores.n_queries != offsets.size - 1:
            raise ValueError(
                f"`{name}` ranks {scores.n_queries} queries but the pool has {offsets.size - 1}."
            )
        q = scores.query_index()
        outside = (scores.items < offsets[q]) | (scores.items >= offsets[q + 1])
        if outside.any():
            e = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"`{name}` must rank each query's own documents; query {_py(pool.query_ids[q[e]])!r} "
                f"lists row {scores.items[e]}, outside rows [{offsets[q[e]]}, {offsets[q[e] + 1]})."
            )
        from ._validation import rankings_iv

        return rankings_iv(scores, n_docs, name=name)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size != n_docs:
        raise ValueError(
            f"`{name}` must have one score per pool document ({n_docs}); got shape {s.shape}."
        )
    nan = np.flatnonzero(np.isnan(s))
    if nan.size:
        q = int(np.searchsorted(offsets, nan[0], side="right") - 1)
        raise ValueError(
            f"`{name}` must not contain NaN; query {_py(pool.query_ids[q])!r} (document row {nan[0]}) has NaN."
        )
    return rank_by_scores(s, offsets)


def _predicted_iv(predicted, n_queries):
    try:
        mean, variance = (np.asarray(a, dtype=np.float64).reshape(-1) for a in predicted)
    except (TypeError, ValueError):
        raise TypeError("`predicted` must be a pair (mean, variance) of arrays.") from None
    for name, arr in (("mean", mean), ("variance", variance)):
        if arr.size != n_queries:
            raise ValueError(f"`predicted` {name} must have one entry per query ({n_queries}); got {arr.size}.")
        if not np.isfinite(arr).all():
            raise ValueError(f"`predicted` {name} must be finite; query {int(np.flatnonzero(~np.isfinite(arr))[0])} is not.")
    if (variance < 0).any():
        raise ValueError(f"`predicted` variance must be >= 0; query {int(np.flatnonzero(variance < 0)[0])} is negative.")
    return mean, variance


@dataclass(frozen=True, eq=False)
class Design:
    """Everything fixed before labeling: rankings, p, q, costs.

    Attributes
    ----------
    rankings : tuple of Rankings
        The evaluated ranking(s), truncated at the metric's cutoff.
    metric : Metric
    method : str
    p, q : ndarray of shape (n_queries,)
        Target and sampling distributions.
    costs : QueryCosts
        Costs of judging each query's documents (union over rankings).
    predicted_mean : ndarray of shape (n_queries,)
        ``E_theta[L | x]`` (or of ``delta`` for a comparison) under the model.
    """

    rankings: tuple
    metric: Metric
    method: str
    p: np.ndarray
    q: np.ndarray
    costs: QueryCosts
    predicted_mean: np.ndarray
    n_grades: int

    def documents(self, query: int) -> np.ndarray:
        """Global rows to judge for pool query ``query`` (union of the top-k lists)."""
        rows = np.concatenate([r[query] for r in self.rankings])
        _, first = np.unique(rows, return_index=True)
        return rows[np.sort(first)]


def design_inputs(pool, rankings, probs, *, metric, k, method, costs, query_weights,
                  methods=METHODS):
    """Validated pieces every design needs: metric, probs, truncated rankings, p, costs."""
    m = parse_metric(metric, k, require_moments=True)
    if method not in methods:
        raise ValueError(f"`method` must be one of {list(methods)}, got {method!r}.")
    P = probs_iv(probs)
    n_docs = int(pool.offsets[-1])
    if P.shape[0] != n_docs:
        raise ValueError(f"`probs` has {P.shape[0]} rows but the pool has {n_docs} documents.")
    tops = tuple(r.truncate(m.k) for r in rankings)
    p = query_weights_iv(query_weights, tops[0].n_queries)
    per_query = isinstance(costs, str) and costs == "uniform"
    doc_costs, cost_name = document_costs(pool, n_docs, "constant" if per_query else costs)
    qc = query_costs(doc_costs, list(tops), model=cost_name, per_query=per_query)
    return m, P, tops, p, qc


def design(pool, rankings, probs, *, metric, k=None, method="active", costs="auto",
           query_weights=None, defensive=DEFAULT_DEFENSIVE, predicted=None) -> Design:
    """Compute the sampling design for one ranking (``len(rankings) == 1``) or a pair.

    Parameters
    ----------
    pool, probs, metric, k, method, costs, query_weights, defensive
        As in :func:`estimate`.
    rankings : tuple of Rankings
        One ranking (estimate) or two (comparison) of the pool's queries.
    predicted : tuple of two ndarrays of shape (n_queries,), optional
        ``(mean, variance)``: per-query predictions of ``L`` (or ``delta``)
        and of ``E[(L - mean)^2 | x]`` that replace the relevance model's
        exact moments, e.g. from a query-level calibrator
        (:mod:`activerank.relevance.calibration`).

    Returns
    -------
    Design
    """
    m, P, tops, p, qc = design_inputs(pool, rankings, probs, metric=metric, k=k, method=method,
                                      costs=costs, query_weights=query_weights)
    if predicted is not None:
        mean, variance = _predicted_iv(predicted, tops[0].n_queries)
    elif len(tops) == 1:
        mom = _moments(P, tops[0], m)
        mean, variance = mom.mean, mom.variance
    else:
        pm = _pair_moments(P, tops[0], tops[1], m)
        mean, variance = pm.delta_mean, pm.delta_variance
    if method == "passive":
        q = p.copy()
    elif method in ("model_assisted_variance", "model_assisted_fixed"):
        # optimal for a calibrated model: the control variate removes the predictable part
        q = optimal_distribution(variance, qc.cost, p, defensive=defensive)
    else:
        lam = np.ones_like(qc.cost) if method == "active_uniform_costs" else qc.cost
        q = optimal_distribution(expected_squared_error(mean, variance, p), lam, p, defensive=defensive)
    return Design(tops, m, method, p, q, qc, mean, P.shape[1])


def label_plan(pool, dsg: Design, plan: DrawPlan, labeler, *, judgments=None) -> dict:
    """Ask ``labeler`` for every newly drawn query; returns ``{query index: grades}``.

    ``judgments`` (``{query index: grades}``) are reused instead of asking again.
    On failure a :class:`LabelingError` carries everything acquired so far.
    """
    acquired = {} if judgments is None else dict(judgments)
    doc_ids = getattr(pool, "doc_ids", None)
    n_grades = dsg.n_grades
    for j in np.flatnonzero(plan.new):
        x = int(plan.queries[j])
        if x in acquired:
            continue
        rows = dsg.documents(x)
        ids = rows.tolist() if doc_ids is None else [doc_ids[r] for r in rows]
        qid = _py(pool.query_ids[x])
        try:
            grades = check_grades(labeler(qid, ids), qid, ids, n_grades)
        except Exception as exc:
            raise LabelingError(
                f"labeling query {qid!r} (draw {j}) failed: {exc}",
                judgments=_by_query_id(pool, dsg, acquired),
                trace=_trace(pool, dsg, plan, stop=j),
            ) from exc
        except BaseException as exc:  # Ctrl-C in a human-in-the-loop tool: keep what was bought
            exc.judgments = _by_query_id(pool, dsg, acquired)
            raise
        acquired[x] = grades
    return acquired


def _from_query_ids(pool, dsg: Design, judgments) -> dict:
    """``{query_id: {doc_id: grade}}`` (as in ``LabelingError.judgments``) -> ``{query index: grades}``.

    Only queries whose every document to judge is present are reused.
    """
    if judgments is None:
        return {}
    if not isinstance(judgments, dict):
        raise TypeError("`judgments` must be a dict {query_id: {doc_id: grade}}.")
    index = {_py(q): i for i, q in enumerate(np.asarray(pool.query_ids).tolist())}
    doc_ids = getattr(pool, "doc_ids", None)
    acquired = {}
    for qid, judged in judgments.items():
        if qid not in index:
            raise ValueError(f"`judgments` names query {qid!r}, which is not in the pool.")
        x = index[qid]
        rows = dsg.documents(x)
        ids = rows.tolist() if doc_ids is None else [doc_ids[r] for r in rows]
        if all(d in judged for d in ids):
            acquired[x] = check_grades([judged[d] for d in ids], qid, ids, dsg.n_grades)
    return acquired


def _by_query_id(pool, dsg: Design, acquired: dict) -> dict:
    doc_ids = getattr(pool, "doc_ids", None)
    out = {}
    for x, grades in acquired.items():
        rows = dsg.documents(x)
        ids = rows.tolist() if doc_ids is None else [doc_ids[r] for r in rows]
        out[_py(pool.query_ids[x])] = dict(zip(ids, grades.tolist()))
    return out


def _trace(pool, dsg: Design, plan: DrawPlan, stop=None, values=None) -> pd.DataFrame:
    stop = plan.n_draws if stop is None else stop
    x = plan.queries[:stop]
    charged = plan.charged[:stop]
    df = pd.DataFrame({
        "draw": np.arange(stop),
        "query": x,
        "query_id": np.asarray(pool.query_ids)[x],
        "q": dsg.q[x],
        "p": dsg.p[x],
        "weight": dsg.p[x] / dsg.q[x],
        "new": plan.new[:stop],
        "cost": charged,
        "cumulative_cost": np.cumsum(charged),
    })
    if values is not None:
        for name, v in values.items():
            df[name] = v[x]
    return df


def _query_values(dsg: Design, acquired: dict, n_docs: int) -> list[np.ndarray]:
    """Metric value of every judged query under each ranking (NaN elsewhere)."""
    queries = np.array(sorted(acquired), dtype=np.int64)
    labels = np.zeros(n_docs, dtype=np.int64)
    for x in queries:
        labels[dsg.documents(int(x))] = acquired[int(x)]
    out = []
    for r in dsg.rankings:
        sub = r.subset(queries)
        vals = np.full(r.n_queries, np.nan)
        vals[queries] = pool_metric_values(labels, sub, metric=dsg.metric, ymax=dsg.n_grades - 1)
        out.append(vals)
    return out


def estimate_from_labels(pool, dsg: Design, plan: DrawPlan, acquired: dict):
    """Estimator over a draw plan whose drawn queries are all in ``acquired``."""
    if plan.n_draws == 0:
        raise ValueError(
            f"no query could be judged: the first draw needed more than the budget "
            f"({plan.budget:g}); raise the budget or the defensive weight.")
    values = _query_values(dsg, acquired, int(pool.offsets[-1]))
    x = plan.queries
    w = dsg.p[x] / dsg.q[x]
    common = dict(
        metric=str(dsg.metric), method=dsg.method, n_draws=plan.n_draws,
        n_queries=int(np.unique(x).size), cost_spent=plan.cost_spent, budget=plan.budget,
    )
    point = values[0] if len(values) == 1 else values[0] - values[1]
    n_distinct = common["n_queries"]
    if dsg.method in MODEL_ASSISTED:
        res = model_assisted(point[x], dsg.predicted_mean[x], w,
                             float(np.dot(dsg.p, dsg.predicted_mean)),
                             tuned=dsg.method != "model_assisted_fixed", n_distinct=n_distinct)
        common["control_coefficient"] = res.coefficient
    else:
        res = snis(point[x], w, n_distinct=n_distinct)
    warn_if_low_ess(res.effective_sample_size, plan.n_draws, stacklevel=4)
    common.update(standard_error=res.standard_error, effective_sample_size=res.effective_sample_size)
    if len(values) == 1:
        return EstimateResult(estimate=res.estimate,
                              trace=_trace(pool, dsg, plan, values={"value": values[0]}), **common)
    return ComparisonResult(
        difference=res.estimate,
        estimate_a=snis(values[0][x], w).estimate, estimate_b=snis(values[1][x], w).estimate,
        trace=_trace(pool, dsg, plan, values={"value_a": values[0], "value_b": values[1],
                                              "delta": point}), **common)


def _run(pool, rankings, probs, labeler, *, budget, metric, k, method, costs, query_weights,
         defensive, rng, predicted, judgments):
    pool = _pool_iv(pool)
    dsg = design(pool, rankings, probs, metric=metric, k=k, method=method, costs=costs,
                 query_weights=query_weights, defensive=defensive, predicted=predicted)
    plan = draw_budgeted(dsg.q, dsg.costs.cost, budget, rng)
    acquired = label_plan(pool, dsg, plan, labeler, judgments=_from_query_ids(pool, dsg, judgments))
    try:
        return estimate_from_labels(pool, dsg, plan, acquired)
    except BaseException as exc:
        # e.g. warnings turned into errors: the judgments are paid for, hand them back
        exc.judgments = _by_query_id(pool, dsg, acquired)
        raise


def estimate(pool, scores, probs, labeler, *, budget, metric="err@10", k=None, method="active",
             costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None,
             predicted=None, judgments=None) -> EstimateResult:
    """Estimate a ranker's mean metric from a budget of relevance judgments.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
        The unlabeled queries and their documents.
    scores : array-like of shape (n_docs,) or Rankings
        The ranker's score per document (ranked descending per query, ties to
        the lower row) or ready-made rankings.
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)`` for every document row.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``.  Document ids are the pool's
        ``doc_ids`` when it has them, else global row indices.
    budget : float
        Labeling budget in units of the pool's mean query cost.
    metric : str, default "err@10"
        ``"dcg@k"`` or ``"err@k"`` (``k`` may also be given separately).
    k : int or None, optional
    method : {"active", "passive", "active_uniform_costs", "model_assisted", "model_assisted_variance", \
"model_assisted_fixed"}
        ``"active"`` samples from the cost-aware optimal ``q*`` and uses the
        self-normalized importance-weighted mean; ``"passive"`` samples from
        ``p``; ``"active_uniform_costs"`` ignores costs when choosing ``q``
        (the paper's uniC).  The paper's uniD ablation is a uniform relevance
        model (``probs`` all equal).  ``"model_assisted"`` samples like
        ``"active"`` and adds the model's exact pool mean as a control variate
        with a tuned, shrunken coefficient
        (:func:`activerank.inference.estimators.model_assisted`); it saved 8-17% over
        active on MQ2008 single rankers and was never clearly worse.
        ``"model_assisted_variance"`` samples ``q ∝ p sqrt(Var[L|x] / lambda)``
        instead, optimal when the model is calibrated but costly when it is
        not (OHSUMED); ``"model_assisted_fixed"`` uses that ``q`` with the
        coefficient fixed at 1 (the classical difference estimator).
    costs : {"auto", "log_length", "constant", "uniform"}, array or callable
        Per-document cost model (see :func:`activerank.design.costs.document_costs`);
        ``"uniform"`` charges 1 per query.
    query_weights : array-like of shape (n_queries,), optional
        Target distribution ``p(x)`` (e.g. traffic); uniform by default.
    defensive : float, default 0.1
        Weight of ``p`` mixed into ``q*`` so that every query stays reachable.
    rng : None, int or numpy.random.Generator
    predicted : tuple (mean, variance) of ndarrays of shape (n_queries,), optional
        Per-query predictions replacing the model's exact moments when
        choosing ``q`` and as the control variate (e.g. from
        :class:`activerank.relevance.calibration.QueryCalibrator`).
    judgments : dict, optional
        Judgments already bought, ``{query_id: {doc_id: grade}}`` -- e.g.
        ``LabelingError.judgments`` from an interrupted run.  A drawn query
        whose documents are all in it is not sent to ``labeler`` again; rerun
        with the same ``rng`` seed to resume the same draw sequence.

    Returns
    -------
    EstimateResult

    References
    ----------
    .. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
       "Active Evaluation of Ranking Functions based on Graded Relevance."
       ECML PKDD 2012.

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = ar.estimate(data, data.X[:, 0], probs, ar.KnownLabels.from_data(data),
    ...                   budget=15, metric="dcg@5", rng=0)
    >>> res.cost_spent <= 15
    True
    """
    rankings = (_rankings_for_pool(scores, _pool_iv(pool), "scores"),)
    return _run(pool, rankings, probs, labeler, budget=budget, metric=metric, k=k,
                        method=method, costs=costs,
                        query_weights=query_weights, defensive=defensive, rng=rng,
                        predicted=predicted, judgments=judgments)


def compare(pool, scores_a, scores_b, probs, labeler, *, budget, metric="err@10", k=None,
            method="active", costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE,
            rng=None, predicted=None, judgments=None) -> ComparisonResult:
    """Estimate ``Delta = R_a - R_b`` between two rankers from a labeling budget.

    Same parameters as :func:`estimate`, with two rankers.  Judging a query
    costs the union of both rankings' top-k documents; a shared document is
    judged once and counts for both.

    Returns
    -------
    ComparisonResult
        ``difference``, ``standard_error``, ``confidence_interval()``,
        ``estimate_a``, ``estimate_b``, ``trace`` ...

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    >>> cmp = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, ar.KnownLabels.from_data(data),
    ...                  budget=15, metric="err@5", rng=0)
    >>> cmp.n_queries > 0
    True
    """
    pool_ = _pool_iv(pool)
    rankings = (_rankings_for_pool(scores_a, pool_, "scores_a"),
                _rankings_for_pool(scores_b, pool_, "scores_b"))
    return _run(pool, rankings, probs, labeler, budget=budget, metric=metric, k=k,
                        method=method, costs=costs,
                        query_weights=query_weights, defensive=defensive, rng=rng,
                        predicted=predicted, judgments=judgments)


make_design = design  # the public name: ``activerank.design`` is the subpackage
