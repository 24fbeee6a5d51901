"""Public entry points: thin calls of the engine.

Every function validates its inputs once (:mod:`activerank._validation`),
builds the sampling design (a :class:`~activerank.design.targets.Target` -- what
is estimated -- times a registered :class:`~activerank.design.methods.Method`
-- how queries are sampled), and runs a schedule through the engine
(:func:`activerank.engine.run`):

==========================  ====================  ======================
function                    target                schedule
==========================  ====================  ======================
:func:`estimate`            one ranker's mean     fixed budget
:func:`compare`             ``R_a - R_b``         fixed budget
:func:`compare_many`        candidates - baseline fixed budget
:func:`rank_systems`        systems - mean system fixed budget
:func:`estimate_sequential` one ranker or a pair  target precision
:func:`estimate_adaptive`   one ranker or a pair  adaptive batches
==========================  ====================  ======================

:func:`plan_budget` buys nothing: each design's predicted precision at a budget, and the budget a target
precision needs.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from ._validation import (
    budget_iv,
    budget_unit_iv,
    choice_iv,
    ci_iv,
    confidence_level_iv,
    defensive_iv,
    features_iv,
    grade_count_iv,
    int_iv,
    labeler_iv,
    model_iv,
    names_iv,
    positive_real_iv,
    rng_iv,
    scores_iv,
    scores_list_iv,
    train_iv,
)
from .engine.schedules import reuse_iv
from .pool import pool_iv
from .design.auto import SEQUENTIAL_AUTO, auto_alternative, auto_candidates, choose_method
from .design.costs import budget_unit_factor
from .design.design import Design, prepare_design
from .design.methods import method_names
from .design.sampling import DEFAULT_DEFENSIVE
from .engine import Adaptive, FixedBudget, Judgments, Sequential, run
from .engine.judged import (MIN_CALIBRATION_LABELS, AfterCalibrationRounds, calibrate_held, calibrate_judges,
                            calibrate_sequential, calibration_labels, judges_iv)
from .inference.estimators import SelfNormalized
from .pool import Pool
from .ragged import Rankings

__all__ = ["Design", "Pool", "compare", "compare_many", "estimate", "estimate_adaptive", "estimate_sequential",
           "make_design", "plan_budget", "rank_systems"]

REFIT_MODES = ("each_batch", "never")


# --------------------------------------------------------------------------- design


def make_design(pool, rankings, probs, *, metric, k=None, method="active", costs="auto", query_weights=None,
                defensive=DEFAULT_DEFENSIVE, predicted=None, target=None, names=None, judge="changeable") -> Design:
    """Compute the sampling design: everything fixed before labeling, for one ranking or several.

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
    judge : {"changeable", "all"}, default "changeable"
        As in :func:`compare`.

    Returns
    -------
    Design
    """
    pool_ = pool_iv(pool)
    rankings = tuple(rankings)
    if not rankings or not all(isinstance(r, Rankings) for r in rankings):
        raise TypeError("`rankings` must be a sequence of Rankings (see activerank.relevance.rank_by_scores).")
    kind = target or {1: "mean", 2: "difference"}.get(len(rankings), "baseline")
    choice_iv(kind, "target", ("mean", "difference", "baseline", "ranking"))
    lo, hi = {"mean": (1, 1), "difference": (2, 2)}.get(kind, (2, None))
    if len(rankings) < lo or (hi is not None and len(rankings) > hi):
        raise ValueError(f"`target`={kind!r} needs {lo if lo == hi else f'at least {lo}'} rankings; "
                         f"got {len(rankings)}.")
    rankings = tuple(scores_iv(r, pool_, f"rankings[{i}]") for i, r in enumerate(rankings))
    grade_count_iv(probs, pool=pool)
    return prepare_design(pool, pool_, kind, rankings, probs, metric=metric, k=k, method=method, costs=costs,
                          query_weights=query_weights, defensive=defensive, predicted=predicted, names=names,
                          judge=judge)


# --------------------------------------------------------------------------- fixed budget


def _held(pool_, probs, judgments):
    """The labels passed in (free, and used by the design) as a judgments store, or None."""
    if judgments is None or len(np.shape(probs)) != 2:
        return None
    store = Judgments(pool_, np.shape(probs)[1])
    store.load(judgments, name="judgments")
    return store


def _in_unit(res, budget: float, unit: str, factor: float):
    """``res`` with its budget and cost in ``unit`` (``factor`` of them per engine unit)."""
    if unit == "queries":
        return res
    spent = res.cost_spent * factor
    if spent <= budget * (1 + 1e-12):  # the unit's rounding is not overspending
        spent = min(spent, budget)
    return replace(res, budget=budget, cost_spent=spent, budget_unit=unit)


def _fixed(pool, pool_, kind, rankings, probs, labeler, *, budget, rng, judgments=None, ci="auto",
           budget_unit="queries", judges=None, **design_args):
    budget = budget_iv(budget)
    unit = budget_unit_iv(budget_unit)
    ci = ci_iv(ci)
    rng = rng_iv(rng)
    labeler = labeler_iv(labeler)
    grade_count_iv(probs, pool=pool, labeler=labeler)
    store = _held(pool_, probs, judgments)
    auto = isinstance(design_args.get("method"), str) and design_args["method"] == "auto"

    # the designs of one relevance model and set of labels held, by (model, held rows): a judged run plans on
    # a model at two budgets and runs a calibration round there, and a design does not depend on the budget, so
    # they are built (and their kinds' planning, e.g. prefix's simulations, done) once
    built: dict = {}

    def design_for(P, judged, b):
        key = (id(P), None if judged is None else hashlib.sha1(np.packbits(judged).tobytes()).hexdigest())
        if key not in built:
            args = design_args if judged is None else dict(design_args, judged=judged)
            built[key] = P, (auto_candidates(pool, pool_, kind, rankings, P, args, budget_unit=unit) if auto
                             else prepare_design(pool, pool_, kind, rankings, P, **args))
        made = built[key][1]  # the entry holds P: its id is not reused while the run lasts
        return made.choose(b) if auto else (made, None)

    spent0, judge_info = 0.0, None
    if judges is not None:  # round 1 (if needed) and the calibrated relevance model (engine.judged)
        judges = judges_iv(judges, pool_)
        probs = np.asarray(probs, dtype=np.float64)
        store = Judgments(pool_, probs.shape[1]) if store is None else store

        def make_design(P, judged, b):
            d = design_for(P, judged, b)[0]
            return d, budget_unit_factor(unit, d.costs, d.document_costs)

        probs, rounds, judge_info = calibrate_judges(pool_, probs, labeler, judges, store, make_design=make_design,
                                                     budget=budget, rng=rng, ci=ci)
        spent0 = judge_info["calibration_round_cost"]  # the rounds', and a failed round's charge
    dsg, choice = design_for(probs, None if store is None else store.labels >= 0, budget - spent0)
    factor = budget_unit_factor(unit, dsg.costs, dsg.document_costs)
    store = Judgments(pool_, dsg.n_grades) if store is None else store
    if judges is None:
        schedule = FixedBudget(budget / factor, rng)
    else:  # the last round, combined with the calibration rounds (engine.judged)
        schedule = AfterCalibrationRounds((budget - spent0) / factor, rng, rounds, factor=factor,
                                          whole_budget=budget / factor,
                                          charged=judge_info.get("failed_round_charge", 0.0))
    res = run(dsg, pool_, labeler, schedule, judgments=store, ci=ci)
    if choice is not None:  # say what was chosen and why
        res.trace.attrs["auto"] = choice.as_dict()
    if judge_info is not None:
        res.trace.attrs["judges"] = judge_info
    return _in_unit(res, budget, unit, factor)


def estimate(pool, scores, probs, labeler, *, budget, metric="err@10", k=None, method="auto",
             costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None,
             predicted=None, judgments=None, ci="auto", budget_unit="queries", judges=None):
    """Estimate a ranker's mean metric from a budget of relevance judgments.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
        The unlabeled queries and their documents.
    scores : array-like of shape (n_docs,) or Rankings
        The ranker's score per document (ranked descending per query, ties by
        document id descending as trec_eval does) or ready-made rankings.
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)`` for every document row.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``.  Document ids are the pool's
        ``doc_ids`` when it has them, else global row indices.
    budget : float
        Labeling budget, by default in units of the pool's mean query cost (``budget_unit``).
    metric : str, default "err@10"
        Any metric spelling of ``docs/metrics.md``, e.g. ``"err@10"`` (the
        paper's ERR with the label scale's top grade), ``"dcg@10"``,
        ``"nDCG@10"`` (ir_measures'); ``k`` may also be given separately.
    k : int or None, optional
    method : str, default "auto"
        ``"auto"`` runs the design the relevance model predicts to have the smallest variance at the budget
        and cost model: ``"active_wor"`` or, for metrics that add over documents, ``"doc_dyn"`` (cascade
        metrics: ``"prefix"``, up to cutoff 100); query-level for normalized metrics, per-query costs and
        comparisons with ``judge="all"`` (each ranker's own mean asked for).  What ran and
        why: ``result.method`` and ``trace.attrs["auto"]`` (the predicted variances and a reason).  Or any
        registered method (``docs/methods.md``): ``"active_wor"`` takes one budgeted sample of queries
        without replacement and estimates the model's exact pool mean plus the Horvitz-Thompson sum of the
        residuals; ``"active"`` is Sawade et al.'s Algorithm 1 (draws with replacement from ``q*``);
        ``"doc_dyn"`` and the other document-level methods (additive metrics) and ``"prefix"`` (cascade
        metrics) judge single documents.  Every method keeps the realized cost within the budget.
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
    judgments : dict or JudgmentSet, optional
        Labels held already, ``{query_id: {doc_id: grade}}`` -- e.g. ``result.judgments`` of an earlier
        call or ``LabelingError.judgments`` of an interrupted one.  They cost nothing and are never asked
        for again: queries whose documents are all held are known exactly (a census stratum of a query-level
        design), the rest are sampled at the cost of their documents not held, and the document-level and
        prefix designs treat held documents as judged.  ``cost_spent`` counts only labels bought in this call.
    ci : {"auto", "t", "t_draws", "bootstrap", "normal"}, default "auto"
        The standard error and interval (``result.ci``, ``result.dof``); every choice has the same draws and
        point estimate.  ``"auto"``: the design's small-sample interval (Student-t, the sample's variance
        pooled with the model's predicted variance).  ``"t"``: distinct-query cluster SE; ``"t_draws"``:
        per-draw SE with Kish's effective number of distinct queries; ``"bootstrap"``: a studentized bootstrap
        (query draws with replacement, one ranker or one difference); ``"normal"``: the paper's interval.
        Measured coverage of each: ``docs/intervals.md``.
    budget_unit : {"queries", "cost", "documents"}, default "queries"
        What ``budget`` counts (and ``result.budget``, ``result.cost_spent`` report): the pool's mean query
        cost, the cost model's own unit (e.g. the ``costs`` array's), or judgments (documents; needs equal
        document costs).  Every design keeps the realized cost within the budget on every run.
    judges : JudgeOutputs or sequence of them, optional
        External judges' outputs (an LLM, a cross-encoder; :func:`activerank.judges.read_judge`) on the pool's
        documents.  They are calibrated on human labels into the relevance model the design plans with, with
        ``probs`` as extra features: on the labels held (``judgments=``) if there are at least 30 on judged
        documents, else on two calibration rounds spending 15% of the budget each, refitted after each
        (:mod:`activerank.engine.judged`); those labels are then held, so the estimate stays unbiased.
        ``trace.attrs["judges"]`` says what was done.

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
    pool_ = pool_iv(pool)
    rankings = (scores_iv(scores, pool_, "scores"),)
    return _fixed(pool, pool_, "mean", rankings, probs, labeler, budget=budget, rng=rng, judgments=judgments,
                  judges=judges, ci=ci, budget_unit=budget_unit, metric=metric, k=k, method=method, costs=costs,
                  query_weights=query_weights, defensive=defensive, predicted=predicted)


def compare(pool, scores_a, scores_b, probs, labeler, *, budget, metric="err@10", k=None,
            method="auto", costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE,
            rng=None, predicted=None, judgments=None, judge="changeable", ci="auto", budget_unit="queries",
            judges=None):
    """Estimate ``Delta = R_a - R_b`` between two rankers from a labeling budget.

    Same parameters as :func:`estimate`, with two rankers, plus ``judge``.
    Judging a query costs the documents of the union of both rankings'
    top-k lists that can change the difference (all of them with
    ``judge="all"``); a shared document is judged once and counts for both.

    Parameters
    ----------
    judge : {"changeable", "all"}, default "changeable"
        ``"changeable"``: judge (and pay for) only the documents whose labels
        can change the difference -- for additive metrics (DCG@k, P@k, RBP) a
        document at the same position in both top-k lists cancels, for ERR /
        RR the documents of a shared suffix below the last difference with the
        same documents above it (:mod:`activerank.design.cancellation`).  The
        difference is unchanged for every label vector, so the estimator and
        its variance per query are too; only the cost falls.  Queries where
        nothing can change (every contrast exactly 0) are known without a label
        and never drawn.  The budget keeps its unit (the mean cost of judging a
        whole query), so it buys more queries.  The rankers' own means are
        then not estimable: ``estimate_a`` and ``estimate_b`` are NaN.  Ratio
        (nDCG, AP) and custom metrics always judge every document.
        ``"all"``: judge every document of a drawn query (per-ranker
        estimates available).
    budget_unit : {"queries", "cost", "documents"}, default "queries"
        As in :func:`estimate`.

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
    pool_ = pool_iv(pool)
    rankings = (scores_iv(scores_a, pool_, "scores_a"), scores_iv(scores_b, pool_, "scores_b"))
    return _fixed(pool, pool_, "difference", rankings, probs, labeler, budget=budget, rng=rng,
                  judgments=judgments, judges=judges, ci=ci, budget_unit=budget_unit, metric=metric, k=k,
                  method=method, costs=costs,
                  query_weights=query_weights, defensive=defensive, predicted=predicted, judge=judge)


def plan_budget(pool, scores, probs, *, scores_b=None, budget=None, target_half_width=None, metric="err@10",
                k=None, methods=None, costs="auto", query_weights=None, confidence_level=0.95, judgments=None,
                judge="changeable", judges=None, rng=None):
    """Each design's predicted precision at a budget, and the budget a target precision needs; buys nothing.

    The relevance model predicts every design's variance at a budget (the rule ``method="auto"`` chooses
    by); the plan reports it as a standard error and a normal-interval half-width, and bisects the budget
    whose predicted half-width meets ``target_half_width``.  These are the model's expectations: a
    miscalibrated model misjudges them (``docs/planning.md``).

    Parameters
    ----------
    pool, scores, probs, metric, k, costs, query_weights, judgments
        As in :func:`estimate`; with ``scores_b`` (and ``judge``, as in :func:`compare`) the plan is for the
        difference ``scores - scores_b``.
    budget : float, optional
        The budget to predict the precision at, in units of the pool's mean query cost.
    target_half_width : float, optional
        The interval half-width wanted; at least one of ``budget`` and ``target_half_width`` is needed.
    methods : sequence of str, optional
        Registered methods to plan; default ``active_wor``, ``active`` and the design ``method="auto"``
        weighs against ``active_wor`` for the metric (``doc_dyn`` for additive, ``prefix`` for cascade
        metrics).
    confidence_level : float, default 0.95
    judges : JudgeOutputs or sequence of them, optional
        External judges, calibrated on the labels held (``judgments=``, at least 30 on judged documents) as
        :func:`estimate` does: the designs are planned on the calibrated model, and each is set against the
        same method on ``probs`` alone, predicted under the calibrated model too -- ``se_without_judges``,
        ``budget_equivalent_without_judges`` and ``savings`` (``docs/judges.md``).
    rng : None, int or numpy.random.Generator
        Seeds the calibration's solver, as in :func:`estimate` (used only with ``judges``).

    Returns
    -------
    BudgetPlan
        ``summary()`` is a table: per method the predicted SE and half-width at ``budget`` and the
        ``budget_needed`` for ``target_half_width``; ``auto`` is what ``method="auto"`` runs at ``budget``.

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    >>> plan = ar.plan_budget(data, data.X[:, 0], probs, budget=10, target_half_width=0.05, metric="err@10")
    >>> plan.methods
    ('active_wor', 'active', 'prefix')
    >>> plan.budget_needed[0] <= data.n_queries
    True
    """
    from .design.planning import plan_designs

    pool_ = pool_iv(pool)
    if budget is None and target_half_width is None:
        raise ValueError("plan_budget needs `budget`, `target_half_width` or both; got neither.")
    budget = None if budget is None else budget_iv(budget)
    if target_half_width is not None:
        target_half_width = positive_real_iv(target_half_width, "target_half_width")
    level = confidence_level_iv(confidence_level)
    rankings = (scores_iv(scores, pool_, "scores"),)
    if scores_b is not None:
        rankings += (scores_iv(scores_b, pool_, "scores_b"),)
    grade_count_iv(probs, pool=pool)
    known = method_names()
    if methods is not None:
        methods = [methods] if isinstance(methods, str) else list(methods)
        for m in methods:
            choice_iv(m, "methods", known)
    rng = rng_iv(rng)
    store = _held(pool_, probs, judgments)
    raw_probs, judge_names = probs, ()
    if judges is not None:
        probs, info = _held_judges(pool_, probs, judges, store, rng)
        if not info.get("calibrated"):  # a plan "with judges" that silently planned without them would mislead
            raise ValueError(f"`judges` could not be calibrated: {info.get('reason')}.")
        judge_names = tuple(info["judges"])
    kind = "mean" if len(rankings) == 1 else "difference"
    args = dict(metric=metric, k=k, costs=costs, query_weights=query_weights,
                judged=None if store is None else store.labels >= 0, judge=judge)
    query = prepare_design(pool, pool_, kind, rankings, probs, method="active_wor", **args)
    alternative = {"additive": "doc_dyn", "cascade": "prefix"}.get(query.metric.family)
    if methods is None:
        methods = ["active_wor", "active"] + ([alternative] if alternative else [])
    designs: dict = {}
    for m in methods:
        try:
            designs[m] = query if m == "active_wor" else prepare_design(pool, pool_, kind, rankings, probs,
                                                                         method=m, **args)
        except ValueError as exc:  # e.g. a document design asked for a metric that does not add up
            designs[m] = exc
    auto = None
    if budget is not None:  # the rule of method="auto" (design.auto), on the designs built here
        used, skipped = auto_alternative(query.metric, per_query_costs=query.costs.model == "uniform",
                                         judge_all=kind != "mean" and judge == "all")
        doc = designs.get(used) if used in designs else (
            prepare_design(pool, pool_, kind, rankings, probs, method=used, **args) if used else None)
        auto = choose_method(query, None if isinstance(doc, Exception) else doc, budget)
        if skipped:
            auto = replace(auto, reason=skipped)
    unjudged = None
    if judge_names:  # the same methods without the judges, to be predicted under the calibrated model
        unjudged = {}
        for m in designs:
            try:
                unjudged[m] = prepare_design(pool, pool_, kind, rankings, raw_probs, method=m, **args)
            except ValueError as exc:
                unjudged[m] = exc
    return plan_designs(designs, metric=str(query.metric), target=kind, budget=budget,
                        target_half_width=target_half_width, confidence_level=level, auto=auto, unjudged=unjudged,
                        judges=judge_names)


def compare_many(pool, candidate_scores, baseline_scores, probs, labeler, *, budget, metric="err@10",
                 k=None, method="auto", costs="auto", query_weights=None,
                 defensive=DEFAULT_DEFENSIVE, rng=None, names=None, baseline_name="baseline",
                 judgments=None, judge="changeable", ci="auto", budget_unit="queries", judges=None):
    """Estimate how much each of several candidates beats a baseline, from one budget.

    Draws queries from ``q*(x) ∝ p(x) sqrt(sum_j E[(delta_j - Delta_j)^2 | x] / lambda(x))``
    (the distribution minimizing the sum of the ``m`` difference variances;
    ``delta_j = L_j - L_baseline``), judges the union of all rankings' top-k
    documents of each drawn query, and estimates every ``Delta_j`` with its
    joint covariance.  With one candidate this is exactly
    :func:`activerank.compare` (same draws, same numbers for the same ``rng``).

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    candidate_scores : list of array-like of shape (n_docs,) or Rankings
        One entry per candidate (at least one).
    baseline_scores : array-like of shape (n_docs,) or Rankings
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)``.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``.
    budget : float
        Labeling budget in units of the pool's mean query cost, where a query's
        cost is that of the union of all ``m + 1`` rankings' top-k documents.
    metric, k, method, costs, query_weights, defensive, rng, ci, budget_unit, judges
        As in :func:`activerank.estimate` (``ci="auto"``, ``"t_draws"`` or ``"t"``: simultaneous intervals
        are max-|t| of the multivariate Student t with ``result.dof`` degrees of freedom;
        ``ci="bootstrap"`` is refused: it gives one interval for one contrast).
    names : sequence of str, optional
        Candidate names (default ``"candidate_0"``, ...).
    baseline_name : str, default "baseline"
    judge : {"changeable", "all"}, default "changeable"
        As in :func:`activerank.compare`: a document is judged iff it can
        change at least one difference; ``estimates`` and
        ``baseline_estimate`` are then NaN.

    Returns
    -------
    MultiComparisonResult
        ``differences``, ``standard_errors``, ``covariance``,
        ``confidence_intervals(confidence_level, simultaneous=True)``,
        ``prob_better()``, ``summary()``, ``trace``.

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = ar.compare_many(data, [data.X[:, 1], data.X[:, 2]], data.X[:, 0], probs,
    ...                    ar.KnownLabels.from_data(data), budget=15, metric="err@5", rng=0,
    ...                    names=["f1", "f2"])
    >>> res.names, res.covariance.shape
    (('f1', 'f2'), (2, 2))
    >>> ci = res.confidence_intervals()           # simultaneous 95% intervals
    >>> bool(ci.critical_value > 1.96)
    True
    """
    pool_ = pool_iv(pool)
    if isinstance(candidate_scores, dict) and names is None:
        names = [str(n) for n in candidate_scores]
    cands = scores_list_iv(candidate_scores, pool_, "candidate_scores", 1)
    base = scores_iv(baseline_scores, pool_, "baseline_scores")
    cand_names = names_iv(names, len(cands), "names", "candidate")
    if not isinstance(baseline_name, str) or not baseline_name:
        raise ValueError(f"`baseline_name` must be a non-empty string; got {baseline_name!r}.")
    if baseline_name in cand_names:
        raise ValueError(f"`baseline_name` {baseline_name!r} must differ from the candidate `names`.")
    return _fixed(pool, pool_, "baseline", (*cands, base), probs, labeler, budget=budget, rng=rng,
                  judgments=judgments, judges=judges, ci=ci, budget_unit=budget_unit, metric=metric, k=k,
                  method=method, costs=costs,
                  query_weights=query_weights, defensive=defensive, names=(*cand_names, baseline_name),
                  judge=judge)


def rank_systems(pool, scores_list, probs, labeler, *, budget, metric="err@10", k=None,
                 method="auto", costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE,
                 rng=None, names=None, judgments=None, judge="changeable", ci="auto", budget_unit="queries",
                 judges=None):
    """Rank ``k`` systems by their mean metric from one labeling budget.

    Estimates each system's mean metric relative to the mean system,
    ``theta_i = R_i - mean_l R_l`` (Schnabel et al. 2016, Sec. 6), drawing
    queries from the ``q*`` that minimizes ``sum_i Var(theta_hat_i)`` --
    equivalently the sum of all pairwise-difference variances -- under the
    relevance model and per-query costs (union of all rankings' top-k).

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    scores_list : list of array-like of shape (n_docs,) or Rankings
        One entry per system (at least two).
    probs, labeler, budget, metric, k, method, costs, query_weights, defensive, rng, ci, budget_unit, judges
        As in :func:`compare_many`.
    names : sequence of str, optional
        System names (default ``"system_0"``, ...).
    judge : {"changeable", "all"}, default "changeable"
        As in :func:`activerank.compare`: a document is judged iff it can
        change the difference of some pair of systems; ``estimates`` (and
        ``covariance``) are then NaN and ``ranking``, ``win_probabilities``,
        ``pairwise_intervals()`` come from ``relative``.

    Returns
    -------
    SystemRankingResult
        ``ranking`` (best first), ``estimates``, ``relative``,
        ``win_probabilities`` (``P(R_i > R_j)``),
        ``confidence_intervals()`` (simultaneous for ``theta``),
        ``pairwise_intervals()``, ``kendall_tau(truth)``, ``summary()``.

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = ar.rank_systems(data, [data.X[:, j] for j in range(3)], probs,
    ...                    ar.KnownLabels.from_data(data), budget=15, metric="err@5", rng=0)
    >>> len(res.ranking), res.win_probabilities.shape
    (3, (3, 3))
    >>> abs(float(res.relative.sum())) < 1e-12
    True
    """
    pool_ = pool_iv(pool)
    if isinstance(scores_list, dict) and names is None:
        names = [str(n) for n in scores_list]
    systems = scores_list_iv(scores_list, pool_, "scores_list", 2)
    names = names_iv(names, len(systems), "names", "system")
    return _fixed(pool, pool_, "ranking", tuple(systems), probs, labeler, budget=budget, rng=rng,
                  judgments=judgments, judges=judges, ci=ci, budget_unit=budget_unit, metric=metric, k=k,
                  method=method, costs=costs,
                  query_weights=query_weights, defensive=defensive, names=names, judge=judge)


# --------------------------------------------------------------------------- target precision


def _one_or_two(scores, pool_):
    """One ranking (kind "mean"), or two when ``scores`` is a tuple of two (kind "difference")."""
    if isinstance(scores, tuple):
        if len(scores) != 2:
            raise ValueError(f"`scores` must be one ranker's scores or a tuple of two; got a tuple of {len(scores)}.")
        return "difference", (scores_iv(scores[0], pool_, "scores[0]"), scores_iv(scores[1], pool_, "scores[1]"))
    return "mean", (scores_iv(scores, pool_, "scores"),)


def estimate_sequential(pool, scores, probs, labeler, *, target_half_width, budget, confidence_level=0.95,
                        metric="err@10", k=None, method="auto", costs="auto", query_weights=None,
                        defensive=DEFAULT_DEFENSIVE, min_draws=30, max_draws=None, t_opt=None, rng=None,
                        sequence="windowed", judge="changeable", judgments=None, judges=None):
    """Label one query at a time until the anytime-valid interval is narrow enough.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    scores : array-like of shape (n_docs,), Rankings, or tuple of two of them
        One ranker, or ``(scores_a, scores_b)`` to estimate ``Delta = R_a - R_b``.
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)``.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``; asked once per new query.
    target_half_width : float
        Stop once the confidence sequence's half-width is at most this.
    budget : float
        Hard cap on the labeling cost, in units of the pool's mean query cost.
    confidence_level : float, default 0.95
    metric, k, method, costs, query_weights, defensive
        As in :func:`activerank.estimate`, but ``method`` is one that draws with replacement (``"active"``,
        ``"passive"``, ``"active_uniform_costs"``): the run stops at the first draw that meets the target,
        so it needs a draw sequence, not one sample without replacement.  The default ``"auto"`` runs
        ``"active"`` and says so in ``trace.attrs["auto"]``.
    min_draws : int, default 30
        Never stop on the target before this many draws (the asymptotic
        sequence needs a sample variance worth the name).
    max_draws : int, optional
        Hard cap on draws (default ``100 * n_queries``).
    t_opt : float, optional
        Time at which to tune ``rho`` of the mixture sequence
        (``sequence="mixture"``); default: when the half-width predicted by
        the relevance model meets the target, capped at the number of draws
        the budget buys.
    rng : None, int or numpy.random.Generator
    sequence : {"windowed", "mixture", "fixed_width"}, default "windowed"
        The anytime-valid confidence sequence.  ``"windowed"``: a constant
        boundary on the window of stopping times fixed before the first label
        (``min_draws`` to the draws the budget buys) intersected with a
        Gaussian-mixture tail, on terms with a predictable control variate
        (the relevance model's prediction, coefficient from earlier draws
        only) -- the same guarantee; measured 8-31% fewer labels than
        ``"mixture"`` at 0.99-1.00 coverage (docs/intervals.md).  Its boundary
        is computed once per window (cached per process): with a budget near
        the pool's whole cost the window spans up to ``max_draws`` draws and
        that takes up to a minute (56 s at 20,000 draws); a smaller
        ``max_draws`` or ``"mixture"`` starts at once.
        ``"mixture"``: the Gaussian-mixture asymptotic sequence of Waudby-Smith
        et al. (2021) on centered importance-sampling terms.
        ``"fixed_width"``: stop when the Student-t interval of the same terms
        (at a stricter level, :data:`~activerank.inference.confidence_sequences.FIXED_WIDTH_ALPHA_SHARE`)
        is narrow enough and report it (Chow & Robbins 1965): valid at this
        stopping time only, not anytime-valid -- measured 35-50% fewer labels
        than ``"mixture"`` at 0.95-0.97 coverage (docs/intervals.md). Use it
        when the run ends at the stop; use a sequence when you may keep
        labeling and look again.
    judge : {"changeable", "all"}, default "changeable"
        For two rankers, as in :func:`activerank.compare`.
    judgments : dict or JudgmentSet, optional
        Labels held already, as in :func:`activerank.estimate`: free, never asked for again; queries whose
        documents are all held are known exactly and never drawn.
    judges : JudgeOutputs or sequence of them, optional
        External judges' outputs, calibrated into the relevance model the draws follow, on the labels held
        (``judgments=``).  With fewer than :data:`~activerank.engine.judged.MIN_CALIBRATION_LABELS` of them on
        judged documents, calibration rounds buy labels first (as in :func:`activerank.estimate`, at their
        shares of the budget the feature model predicts for the target, capped at ``budget``); the run then
        holds them.  The model is fixed before the first draw, so the sequence stays valid.  ``cost_spent``
        includes the rounds; ``trace.attrs["judges"]`` says what was done (``docs/judges.md``).

    Returns
    -------
    SequentialEstimateResult or SequentialComparisonResult
        ``confidence_interval()`` is the anytime-valid interval at the stopping
        time; ``stopping_reason`` says why it stopped; ``trace`` has one row
        per draw with the running ``cs_center`` and ``cs_half_width``.

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = ar.estimate_sequential(data, data.X[:, 0], probs, ar.KnownLabels.from_data(data),
    ...                           target_half_width=0.5, budget=25, metric="err@5", rng=0)
    >>> res.stopping_reason in ("target", "budget", "all_judged"), res.cost_spent <= 25
    (True, True)
    >>> ci = res.confidence_interval()
    >>> res.interval.startswith("anytime-valid")
    True
    """
    pool_ = pool_iv(pool)
    kind, rankings = _one_or_two(scores, pool_)
    labeler = labeler_iv(labeler)
    grade_count_iv(probs, pool=pool, labeler=labeler)
    schedule = sequential_schedule(budget, rng, target_half_width=target_half_width,
                                   confidence_level=confidence_level, min_draws=min_draws, max_draws=max_draws,
                                   t_opt=t_opt, sequence=sequence)
    store = _held(pool_, probs, judgments)
    auto = isinstance(method, str) and method == "auto"

    def make_design(P, judged, b=None):
        return prepare_design(pool, pool_, kind, rankings, P, metric=metric, k=k, method="active" if auto else method,
                              costs=costs, query_weights=query_weights, defensive=defensive,
                              methods=method_names(estimator=SelfNormalized), judge=judge, judged=judged), 1.0

    whole, spent0, judge_info = schedule.budget, 0.0, None
    if judges is not None:  # calibration rounds if needed, their labels held by the run (engine.judged)
        judges = judges_iv(judges, pool_)
        probs = np.asarray(probs, dtype=np.float64)
        store = Judgments(pool_, probs.shape[1]) if store is None else store
        probs, spent0, judge_info = calibrate_sequential(
            pool_, probs, labeler, judges, store, make_design=make_design, budget=schedule.budget,
            target_half_width=schedule.target, confidence_level=schedule.level, rng=schedule.rng)
        schedule.budget -= spent0  # the run gets what the rounds left
    dsg = make_design(probs, None if store is None else store.labels >= 0)[0]
    res = run(dsg, pool_, labeler, schedule, judgments=store)
    if spent0:
        res = replace(res, cost_spent=res.cost_spent + spent0, budget=whole)
    if auto:
        res.trace.attrs["auto"] = SEQUENTIAL_AUTO.as_dict()
    if judge_info is not None:
        res.trace.attrs["judges"] = judge_info
    return res


def sequential_schedule(budget, rng, *, target_half_width, confidence_level, min_draws, max_draws, t_opt,
                        sequence) -> Sequential:
    """The validated schedule of a target-precision run (:func:`estimate_sequential`, and on Dask pools)."""
    level = confidence_level_iv(confidence_level)
    target = positive_real_iv(target_half_width, "target_half_width")
    budget = budget_iv(budget)
    min_draws = int_iv(min_draws, "min_draws", 2)
    if t_opt is not None:
        t_opt = positive_real_iv(t_opt, "t_opt")
    sequence = choice_iv(sequence, "sequence", ("windowed", "mixture", "fixed_width"))
    return Sequential(budget, rng_iv(rng), target_half_width=target, confidence_level=level, min_draws=min_draws,
                      max_draws=max_draws, t_opt=t_opt, sequence=sequence)


def _held_judges(pool_, probs, judges, store, rng):
    """``probs`` calibrated with ``judges`` on the labels held only, and what was done (None without judges): a
    plan buys no labels."""
    if judges is None:
        return probs, None
    judges = judges_iv(judges, pool_)
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.full(pool_.n_docs, -1) if store is None else store.labels
    held = calibration_labels(judges, labels)
    if held < MIN_CALIBRATION_LABELS:
        raise ValueError(f"`judges` in a plan are calibrated on the labels held (`judgments=`): "
                         f"{held} of them lie on documents a judge judged, fewer than {MIN_CALIBRATION_LABELS}. "
                         "Run activerank.estimate(..., judges=...) first and pass its result.judgments, or leave "
                         "`judges` out.")
    calibrated, fitted = calibrate_held(pool_, probs, judges, labels, seed=int(rng.integers(0, 2**31 - 1)))
    return calibrated, {"judges": [j.name for j in judges], "calibration_round_cost": 0.0, **fitted}


# --------------------------------------------------------------------------- adaptive batches


def estimate_adaptive(pool, scores, model, X, labeler, *, budget, n_batches=4, metric="err@10", k=None,
                      refit="each_batch", train=None, reuse=None, weights="balance", costs="auto",
                      query_weights=None, defensive=DEFAULT_DEFENSIVE, method="active", rng=None,
                      judge="changeable", ci="auto"):
    """Active estimate (or comparison) that refits the relevance model between batches.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
        The unlabeled queries.  Hidden labels it may carry are never read.
    scores : array-like of shape (n_docs,), Rankings, or tuple of two of them
        The ranker's scores, or ``(scores_a, scores_b)`` to estimate
        ``Delta = R_a - R_b``.
    model : RelevanceModel
        Relevance model with ``fit(X, y)`` and ``predict_proba(X)``.  It is
        refitted **in place**.  If it is unfitted and ``train`` is None, the
        first batch uses uniform grade probabilities (the paper's uniD).
    X : array-like of shape (n_docs, n_features)
        Features of the pool's documents (what ``model`` predicts from).
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``; asked only for documents not
        judged before.
    budget : float
        Total labeling budget in units of the pool's mean query cost (as in
        :func:`activerank.estimate`); never exceeded.
    n_batches : int, default 4
        Batch ``b`` may spend up to ``budget * (b + 1) / n_batches`` minus what
        was spent before (unspent budget carries over).
    metric : str, default "err@10"
    k : int or None, optional
    refit : {"each_batch", "never"}
        ``"each_batch"`` refits ``model`` on ``train`` plus the judged
        documents after every batch; ``"never"`` keeps it (then all ``q_b`` are
        equal and the weights reduce to ``p / q``).
    train : (X_train, y_train) or LetorData, optional
        Labeled training data the model is fitted on at the start (if
        unfitted) and that every refit includes.
    reuse : PriorJudgments or list of PriorJudgments, optional
        Earlier judgments (see :class:`PriorJudgments` and the module notes).
    weights : {"balance", "per_batch"}, default "balance"
        ``"balance"``: the balance heuristic ``p / sum_b (n_b/n) q_b``.
        ``"per_batch"``: each draw keeps its own batch's ``p / q_b``, which
        makes the weighted sums martingales even though later ``q_b`` depend on
        earlier labels.  In the seeded simulations both have the same small
        finite-sample (self-normalization) bias and nearly the same error.
    costs, query_weights, defensive
        As in :func:`activerank.estimate`.  ``defensive`` must be > 0 here:
        the balance-heuristic mixture must keep every query reachable.
    rng : None, int or numpy.random.Generator
    ci : {"auto", "t", "t_draws", "bootstrap", "normal"}, default "auto"
        As in :func:`activerank.estimate`.
    judge : {"changeable", "all"}, default "changeable"
        For two rankers, as in :func:`activerank.compare` (queries where the
        difference is determined join the census stratum).

    Returns
    -------
    EstimateResult or ComparisonResult
        ``method="adaptive"``.  ``trace`` has one row per draw (reused draws
        first) with ``batch``, ``q`` (of the draw's batch), ``q_mixture``,
        ``weight`` (``p / q_mixture``, or ``p / q`` for ``"per_batch"``), ``stratum`` (``"census"`` for reused
        draws inside a census set), ``new``, ``cost``, ``cumulative_cost`` and
        the values; ``trace.attrs["batches"]`` is a per-batch table (source,
        ``n_draws``, ``n_new``, cost, budget allotted, training-set size of the
        model behind ``q_b``), ``trace.attrs["q"]`` the array of shape
        (n_components, n_queries) of all ``q_b`` and
        ``trace.attrs["census_queries"]`` the census query ids.

    Examples
    --------
    >>> import activerank as ar
    >>> data = ar.load_sample()
    >>> model = ar.relevance.make_relevance_model("logistic", data.n_grades)
    >>> res = ar.estimate_adaptive(data, data.X[:, 0], model, data.X, ar.KnownLabels.from_data(data),
    ...                         budget=20, n_batches=2, metric="dcg@5", rng=0)
    >>> res.cost_spent <= 20, sorted(res.trace["batch"].unique().tolist())
    (True, [0, 1])
    """
    pool_ = pool_iv(pool)
    kind, rankings = _one_or_two(scores, pool_)
    model = model_iv(model)
    labeler = labeler_iv(labeler)
    n_batches = int_iv(n_batches, "n_batches", 1)
    choice_iv(weights, "weights", ("balance", "per_batch"))
    choice_iv(refit, "refit", REFIT_MODES)
    Xa = features_iv(X, pool_.n_docs)
    train = train_iv(train, Xa.shape[1])
    if defensive_iv(defensive) <= 0:
        raise ValueError(f"`defensive` must be > 0 for adaptive sampling; got {defensive!r}.")
    budget = budget_iv(budget)
    reuse = reuse_iv(reuse)
    rng = rng_iv(rng)
    ci = ci_iv(ci)
    fitted = bool(getattr(model, "fitted_", False))
    if not fitted and train is not None:
        model.fit(*train)
        fitted = True
    if not fitted and refit == "never":
        raise ValueError("`model` is not fitted and `refit`='never' with no `train` data: nothing to "
                         "estimate q from; fit the model or pass `train`.")
    n_grades = getattr(model, "n_grades", None)

    def probs_now(is_fitted):
        if is_fitted:
            return np.asarray(model.predict_proba(Xa), dtype=np.float64)
        return np.full((pool_.n_docs, n_grades), 1.0 / n_grades)

    if n_grades is None:
        n_grades = probs_now(fitted).shape[1]
    probs = probs_now(fitted)
    grade_count_iv(probs, pool=pool, labeler=labeler, model=model)
    dsg = prepare_design(pool, pool_, kind, rankings, probs, metric=metric, k=k, method=method, costs=costs,
                         query_weights=query_weights, defensive=defensive,
                         methods=method_names(estimator=SelfNormalized), judge=judge)
    schedule = Adaptive(budget, rng, model=model, X=Xa, probs=probs, probs_now=probs_now,
                        fitted=fitted, n_batches=n_batches, refit=refit, train=train, reuse=reuse,
                        weights=weights, method=dsg.method_spec)
    return run(dsg, pool_, labeler, schedule, ci=ci)
