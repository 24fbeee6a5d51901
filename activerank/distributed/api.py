"""Public entry points for pools in a Dask DataFrame: :func:`estimate` and :func:`compare`.

The pipeline (one pass over the pool, then a fetch of the drawn queries):

1. per partition (``map_partitions``, on the workers): the per-query table
   (:mod:`.query_table`) -- the in-memory kernels on whole queries;
2. on the driver: ``p``, costs, ``Theta``, ``q`` from the table
   (:func:`.design.table_design`), and the budgeted draws
   (:func:`activerank.design.sampling.draw_budgeted`);
3. the drawn queries' documents only, by a filter on the query id
   (:func:`.frame.fetch_queries`; only the id, score and cost columns are read);
4. the engine (:func:`activerank.engine.run` with the
   :class:`~activerank.engine.FixedBudget` schedule) on a pool that lists every
   query but holds the drawn queries' documents only (:func:`.design.drawn_design`):
   the same draws, labeling step and estimate as :func:`activerank.estimate`.
"""

from __future__ import annotations

import copy
import types

import numpy as np

from ..design.sampling import DEFAULT_DEFENSIVE
from .documents import DOCUMENT_METHODS
from .frame import ColumnLabels

__all__ = ["compare", "compare_many", "create_campaign", "estimate", "estimate_sequential", "query_table_of",
           "rank_systems"]

COST_MODELS = ("auto", "column", "log_length", "constant", "uniform")


def _cost_model(pool, costs) -> str:
    if not isinstance(costs, str) or costs not in COST_MODELS:
        raise ValueError(f"`costs` must be one of {list(COST_MODELS)} for a distributed pool (per-document "
                         f"costs come from the pool's `cost` column); got {costs!r}.")
    if costs == "auto":
        return "column" if pool.cost is not None else "log_length" if pool.length is not None else "constant"
    if costs == "column" and pool.cost is None:
        raise ValueError("`costs`='column' needs the pool's `cost` column (DaskPool(frame, cost=...)).")
    if costs == "log_length" and pool.length is None:
        raise ValueError("`costs`='log_length' needs the pool's `length` column (DaskPool(frame, length=...)).")
    return costs


def _spec(pool, kind, scores, probs, *, metric, k, method, costs):
    """Validate everything that can be checked before reading a row."""
    from .frame import dask_pool_iv, frame_columns_iv
    from ..design.methods import get_method, method_names
    from ..metrics.registry import parse_metric
    from .query_table import TableSpec

    pool = dask_pool_iv(pool)
    names = {"mean": ("scores",), "difference": ("scores_a", "scores_b")}.get(kind)
    if names is None:  # several systems: one name per entry
        names = tuple(f"scores[{i}]" for i in range(len(scores)))
    cols = tuple(frame_columns_iv(pool, s, n)[0] if isinstance(s, str) else _not_a_column(s, n)
                 for s, n in zip(scores, names))
    model = None
    if isinstance(probs, str) or (isinstance(probs, (list, tuple)) and all(isinstance(c, str) for c in probs)):
        probs = tuple(frame_columns_iv(pool, probs, "probs"))
        if len(probs) < 2:
            raise ValueError(f"`probs` must name at least 2 grade columns; got {list(probs)}.")
    elif hasattr(probs, "predict_proba"):
        if pool.features is None:
            raise ValueError("`probs` is a relevance model: the pool must name its feature columns "
                             "(DaskPool(frame, features=[...])).")
        model, probs = probs, None
    else:
        raise TypeError("`probs` must be the list of probability columns (one per grade) or a fitted relevance "
                        f"model with predict_proba; got {type(probs).__name__}.")
    m = parse_metric(metric, k, require_moments="exact")
    # "auto" plans active_wor's per-query table (doc_dyn, its alternative, needs no table of its own); of the
    # document-level methods the Poisson designs with a budgeted order draw run (.documents)
    if isinstance(method, str) and method == "auto":
        spec_method = get_method("active_wor")
    else:
        spec_method = get_method(method, allowed=[*method_names(unit="query"), *DOCUMENT_METHODS])
        if spec_method.name in DOCUMENT_METHODS:
            spec_method.kind.check(spec_method.name, m, kind, predicted=None)
    cost_model = _cost_model(pool, costs)
    spec = TableSpec(kind, m, cols, probs, model, pool.features, cost_model, pool.query, pool.query_in_index,
                     pool.cost, pool.length, uniform=spec_method.relevance == "uniform", document=pool.document)
    return pool, spec, spec_method


def _not_a_column(scores, name):
    raise TypeError(f"`{name}` must be the name of a score column of the pool; got {type(scores).__name__}.")


def query_table_of(pool, scores, probs, *, metric="err@10", k=None, method="active_wor", costs="auto",
                   progress=None):
    """The per-query table of a distributed pool (pandas; what the driver holds).

    Parameters
    ----------
    pool : DaskPool or dask.dataframe.DataFrame
    scores : str or sequence of one or two str
        Score column(s): one ranker, or two (a comparison).
    probs, metric, k, method, costs, progress
        As in :func:`estimate`.

    Returns
    -------
    pandas.DataFrame
        One row per query: query id, partition, ``n_docs``, ``n_grades``,
        ``raw_cost``, ``mean_0`` (predicted value of the target), ``variance``,
        ``system_<i>`` (predicted mean metric of ranking ``i``).
    """
    from .._progress import progress_iv
    from .query_table import query_table

    progress = progress_iv(progress)
    scores = (scores,) if isinstance(scores, str) else tuple(scores)
    kind = {1: "mean", 2: "difference"}.get(len(scores))
    if kind is None:
        raise ValueError(f"`scores` must name one or two score columns; got {len(scores)}.")
    pool, spec, _ = _spec(pool, kind, scores, probs, metric=metric, k=k, method=method, costs=costs)
    return query_table(pool, spec, progress=progress)


def _judgments_iv(judgments, td, drawn: np.ndarray) -> dict | None:
    """Earlier judgments, restricted to the drawn queries (the others' documents are not on the driver)."""
    from collections.abc import Mapping

    from .._validation import py_scalar

    if judgments is None:
        return None
    if not isinstance(judgments, Mapping):
        raise TypeError(f"`judgments` must be a dict {{query_id: {{doc_id: grade}}}}; got {type(judgments).__name__}.")
    known = set(td.query_ids.tolist())
    keep = set(td.query_ids[drawn].tolist())
    out = {}
    for qid, docs in judgments.items():
        key = py_scalar(qid)
        if key not in known:
            raise ValueError(f"`judgments` names query {key!r}, which is not in the pool.")
        if key in keep:
            out[qid] = docs
    return out


def _table_design(pool, spec, spec_method, kind, *, query_weights, defensive, progress=None):
    """The per-query table (one pass over the pool) and the design's per-query parts from it."""
    from .design import table_design
    from .query_table import query_table

    table = query_table(pool, spec, progress=progress)
    # its columns live on in the result; the driver's memory is per query, kept to one copy
    return table_design(table, query=pool.query, kind=kind, method=spec_method,
                        cost_model="array" if spec.cost_model == "column" else spec.cost_model,
                        query_weights=query_weights, defensive=defensive, n_systems=len(spec.scores))


def _drawn_pool(pool, spec, spec_method, kind, *, budget, query_weights, defensive, rng, names, extra_columns=(),
                progress=None, td=None, max_draws=None):
    """Table, design, draws and the drawn queries' documents: everything before labeling.

    Returns ``(td, plan, docs, design, mem_pool, sample)``; ``rng`` is not advanced (the draws are made on a
    copy).  ``sample`` is the one sample of a method without replacement (``plan`` then lists its queries
    in selection order), else None.  ``td``: the table design, when computed already.  ``max_draws``: the cap
    of a target-precision run's draw sequence (a with-replacement method; its run is a prefix of this plan).
    """
    from .design import drawn_design
    from .frame import fetch_queries

    if td is None:
        td = _table_design(pool, spec, spec_method, kind, query_weights=query_weights, defensive=defensive,
                           progress=progress)
    # the engine's draws, found ahead on a copy of the generator: which queries' documents to fetch
    kind_ = spec_method.kind
    ahead = copy.deepcopy(rng)
    if max_draws is None:
        planned = kind_.plan(td, budget, judged=None, rng=ahead)
        sample = kind_.draw(td, planned, ahead)
        plan = kind_.query_draws(td, planned, sample)
    else:  # the draws of engine.schedules.Sequential: the budgeted sequence with its cap
        from ..design.sampling import draw_budgeted

        sample, plan = None, draw_budgeted(td.q, td.costs.cost, budget, ahead, max_draws=max_draws)
    drawn = np.unique(plan.queries)
    # labeling needs ids, scores and costs: the probabilities stay where they are
    needed = [pool.document, *spec.scores, *(c for c in (pool.cost, pool.length) if c is not None)]
    docs = fetch_queries(pool, td.query_ids[drawn], needed + list(extra_columns), progress=progress)
    design, mem_pool = drawn_design(td, drawn, docs, query=pool.query, query_in_index=pool.query_in_index,
                                    document=pool.document, scores=spec.scores, kind=kind, metric=spec.metric,
                                    names=names, cost_model=spec.cost_model, cost=pool.cost, length=pool.length)
    return td, plan, docs, design, mem_pool, sample


def _auto(pool, spec, td, *, budget, defensive, rng, judgments):
    """``method="auto"`` on a Dask pool: ``(AutoChoice, DocumentRun or None)``.

    The candidates of :func:`activerank.design.auto.auto_design` and its rule (the smaller predicted variance
    at the budget); a candidate that cannot run here is skipped, and the reason says so.  With earlier
    ``judgments`` (restricted to the pool's queries) both are predicted as if nothing were held, since the
    per-query table does not know the held documents; the chosen design then runs with them.
    """
    from ..design.auto import AutoChoice, auto_alternative
    from ..design.methods import get_method
    from .documents import _stream_state, prepare_units

    name = td.method.name
    v_query = float(td.method.kind.predicted_variance(td, float(budget)))
    family = spec.metric.family
    # the rules every route shares (design.auto); then what a Dask pool can run
    alternative, skipped = auto_alternative(spec.metric, per_query_costs=spec.cost_model == "uniform")
    if alternative is None:
        return AutoChoice(name, {name: v_query}, skipped or f"{family} metric: only query-level designs apply"), None
    if alternative == "prefix":
        return AutoChoice(name, {name: v_query, "prefix": np.inf},
                          "prefix not applicable: it judges documents one at a time in every drawn query, which "
                          "does not run on a Dask pool; only query-level designs run here"), None
    try:
        _stream_state(rng)
        doc = prepare_units(pool, spec, td, get_method("doc_dyn"), budget=budget, defensive=defensive)
    except ValueError as exc:
        return AutoChoice(name, {name: v_query, "doc_dyn": np.inf}, f"doc_dyn not applicable: {exc}"), None
    pred = {name: v_query, "doc_dyn": doc.predicted_variance}
    reason = "smaller predicted variance at the budget"
    if judgments:
        reason += (" (both predicted as if no label were held: the per-query table does not know the held "
                   "documents; the run holds them)")
    if doc.predicted_variance < v_query:
        if judgments:  # the run's units: the held documents certain and free
            doc = prepare_units(pool, spec, td, get_method("doc_dyn"), budget=budget, defensive=defensive,
                                judged=_judged_sets(judgments), census_ok=True)
        return AutoChoice("doc_dyn", pred, reason), doc
    return AutoChoice(name, pred, reason), None


def _judged_sets(judgments) -> dict | None:
    """``{query_id: {doc_id, ...}}`` of earlier judgments (what the workers look documents up in)."""
    from .._validation import py_scalar

    from collections.abc import Mapping

    if not judgments:
        return None
    for q, docs in judgments.items():
        if not isinstance(docs, Mapping):
            raise ValueError(f"`judgments` judgments of query {py_scalar(q)!r} must be a dict {{doc_id: grade}}.")
    return {py_scalar(q): {py_scalar(d) for d in docs} for q, docs in judgments.items()}


def _run_documents(pool, spec, td, doc, kind, labeler, *, rng, names, ci, progress, judgments=None, on_fit=None):
    """A document-level design's draw (candidates only to the driver), fetch, labeling and estimate;
    ``judgments`` (validated) are loaded as in memory: their documents are held units."""
    from dataclasses import replace

    from .._validation import probs_iv
    from ..engine import Judgments
    from .design import drawn_design
    from .documents import draw_candidates, run_documents
    from .frame import fetch_queries

    import pandas as pd

    from .._validation import py_scalar

    drawn = draw_candidates(doc, rng)
    # the queries of the drawn units, and of the earlier judgments (loaded whole, as in memory)
    known = pd.Index(td.query_ids).get_indexer([py_scalar(q) for q in (judgments or {})])
    queries = np.union1d(drawn["query"], known).astype(np.int64)
    from_column = isinstance(labeler, ColumnLabels)
    prob_columns = list(spec.probs or spec.features or ())
    needed = [pool.document, *spec.scores, *(c for c in (pool.cost, pool.length) if c is not None), *prob_columns]
    docs = fetch_queries(pool, td.query_ids[queries], needed + ([labeler.column] if from_column else []),
                         progress=progress)
    design, mem_pool = drawn_design(td, queries, docs, query=pool.query, query_in_index=pool.query_in_index,
                                    document=pool.document, scores=spec.scores, kind=kind, metric=spec.metric,
                                    names=names, cost_model=spec.cost_model, cost=pool.cost, length=pool.length)
    X = docs[prob_columns].to_numpy(np.float64)
    P = probs_iv(X if spec.probs is not None else spec.model.predict_proba(X), name="probs", n_rows=len(docs))
    design = replace(design, method=doc.method.name, probs=P)
    if from_column:
        labeler = labeler.labeler(docs, pool.query, pool.query_in_index, pool.document)
    store = Judgments(mem_pool, design.n_grades)
    if judgments:
        store.load(judgments, name="judgments")
    return run_documents(doc, drawn, design, mem_pool, labeler, store, ci=ci, on_fit=on_fit)


def _run(pool, kind, scores, probs, labeler, *, budget, rng, judgments, judges=None, **kw):
    """One fixed-budget run (:func:`_run_once`), after calibration rounds when ``judges`` need labels
    (:func:`.judges.run_with_rounds`)."""
    from .._validation import budget_iv, rng_iv
    from .judges import TooFewHeldLabels, run_with_rounds

    rng = rng_iv(rng)  # one generator for the rounds and the run
    try:
        return _run_once(pool, kind, scores, probs, labeler, budget=budget, rng=rng, judgments=judgments,
                         judges=judges, **kw)
    except TooFewHeldLabels:
        pass

    def once(*, budget, judgments, judges, min_labels, on_fit):
        return _run_once(pool, kind, scores, probs, labeler, budget=budget, rng=rng, judgments=judgments,
                         judges=judges, min_labels=min_labels, on_fit=on_fit, **kw)

    return run_with_rounds(once, budget=budget_iv(budget), judgments=judgments, judges=judges)


def _run_once(pool, kind, scores, probs, labeler, *, budget, metric, k, method, costs, query_weights, defensive,
              rng, judgments, names=None, ci="auto", progress=None, judges=None, min_labels=None, on_fit=None):
    """One fixed-budget run; ``on_fit(fit) -> fit``: what the engine reports instead of the run's DesignFit
    (:func:`.judges.run_with_rounds` keeps the rounds' fits and combines them into the last one's)."""
    from .._progress import progress_iv
    from .._validation import budget_iv, ci_iv, defensive_iv, labeler_iv, rng_iv
    from .documents import _stream_state, prepare_units
    from .frame import frame_columns_iv
    from ..engine import FixedBudget, Judgments, run
    from ..engine.judged import FitHook

    budget = budget_iv(budget)
    ci = ci_iv(ci)
    rng = rng_iv(rng)
    progress = progress_iv(progress)
    from_column = isinstance(labeler, ColumnLabels)
    if not from_column:
        labeler = labeler_iv(labeler)
    defensive = defensive_iv(defensive)
    judge_info = None
    if judges is not None:  # calibrated on the held labels, before any draw (the seed as in memory)
        from .frame import dask_pool_iv
        from .judges import with_judges

        pool, probs, judge_info = with_judges(dask_pool_iv(pool), probs, judges, judgments,
                                              seed=int(rng.integers(0, 2**31 - 1)), progress=progress,
                                              min_labels=min_labels)
    pool, spec, spec_method = _spec(pool, kind, scores, probs, metric=metric, k=k, method=method, costs=costs)
    if from_column:
        frame_columns_iv(pool, labeler.column, "ColumnLabels.column")
    documents = spec_method.name in DOCUMENT_METHODS
    if documents:
        spec_method.kind.check_ci(ci, types.SimpleNamespace(method=spec_method.name))
        _stream_state(rng)
    td = _table_design(pool, spec, spec_method, kind, query_weights=query_weights, defensive=defensive,
                       progress=progress)
    choice = doc = None
    held = _judgments_iv(judgments, td, np.arange(td.n_queries))
    if isinstance(method, str) and method == "auto":
        choice, doc = _auto(pool, spec, td, budget=budget, defensive=defensive, rng=rng, judgments=held)
    elif documents:
        doc = prepare_units(pool, spec, td, spec_method, budget=budget, defensive=defensive,
                            judged=_judged_sets(held), census_ok=True)
    if doc is not None:
        result = _run_documents(pool, spec, td, doc, kind, labeler, rng=rng, names=names, ci=ci, progress=progress,
                                judgments=held, on_fit=on_fit)
    else:
        td, plan, docs, design, mem_pool, _ = _drawn_pool(
            pool, spec, spec_method, kind, budget=budget, query_weights=query_weights, defensive=defensive,
            rng=rng, names=names, extra_columns=[labeler.column] if from_column else [], progress=progress, td=td)
        if from_column:
            labeler = labeler.labeler(docs, pool.query, pool.query_in_index, pool.document)
        store = Judgments(mem_pool, design.n_grades)
        earlier = _judgments_iv(judgments, td, np.unique(plan.queries))
        if earlier:
            store.load(earlier, name="judgments")
        schedule = FixedBudget(budget, rng) if on_fit is None else FitHook(budget, rng, on_fit)
        result = run(design, mem_pool, labeler, schedule, judgments=store, ci=ci)
        if not np.array_equal(result.trace["query"].to_numpy(), plan.queries):  # pragma: no cover - invariant
            raise RuntimeError("internal error: the engine's draws differ from the draws whose documents were "
                               "fetched.")
    if choice is not None:  # say what was chosen and why, as in memory
        result.trace.attrs["auto"] = choice.as_dict()
    if judge_info is not None:
        result.trace.attrs["judges"] = judge_info
    return result


#: Why ``method="auto"`` runs ``active`` in a campaign on a Dask pool
DASK_CAMPAIGN_AUTO = ("a campaign on a Dask pool samples whole queries, and active's draw sequence gives an estimate "
                      "from any fully judged head of its tasks (doc_dyn campaigns run on in-memory pools)")


def estimate_sequential(pool, scores, probs, labeler, *, target_half_width, budget, confidence_level=0.95,
                        metric="err@10", k=None, method="auto", costs="auto", query_weights=None,
                        defensive=DEFAULT_DEFENSIVE, min_draws=30, max_draws=None, t_opt=None, rng=None,
                        sequence="windowed", progress=None):
    """Label one query at a time until the interval is narrow enough, on a pool in a Dask DataFrame.

    The same run as :func:`activerank.estimate_sequential` on the same data and ``rng`` (two rankers:
    with ``judge="all"``, every document of a drawn query judged): its draw sequence is found ahead on the
    per-query table, and only the queries it can reach are fetched (the run stops on the target at a prefix of
    it).

    Parameters
    ----------
    pool, probs, labeler, metric, k, costs, query_weights, defensive, rng, progress
        As in :func:`estimate`.
    scores : str or sequence of two str
        One score column, or two (``R_a - R_b``).
    target_half_width, budget, confidence_level, min_draws, max_draws, t_opt, sequence
        As in :func:`activerank.estimate_sequential`.
    method : str, default "auto"
        A method that draws with replacement (``"active"``, ``"passive"``, ``"active_uniform_costs"``);
        ``"auto"`` runs ``"active"`` and says so in ``trace.attrs["auto"]``.

    Returns
    -------
    SequentialEstimateResult or SequentialComparisonResult
    """
    from .._progress import progress_iv
    from .._validation import choice_iv, defensive_iv, labeler_iv, max_draws_iv
    from ..api import sequential_schedule
    from ..design.auto import SEQUENTIAL_AUTO
    from ..design.methods import method_names
    from ..engine import run
    from ..inference.estimators import SelfNormalized

    scores = (scores,) if isinstance(scores, str) else tuple(scores)
    kind = {1: "mean", 2: "difference"}.get(len(scores))
    if kind is None:
        raise ValueError(f"`scores` must name one or two score columns; got {len(scores)}.")
    schedule = sequential_schedule(budget, rng, target_half_width=target_half_width,
                                   confidence_level=confidence_level, min_draws=min_draws, max_draws=max_draws,
                                   t_opt=t_opt, sequence=sequence)
    progress = progress_iv(progress)
    defensive = defensive_iv(defensive)
    auto = isinstance(method, str) and method == "auto"
    method = "active" if auto else method
    allowed = method_names(estimator=SelfNormalized)
    choice_iv(method, "method", allowed)
    from_column = isinstance(labeler, ColumnLabels)
    if not from_column:
        labeler = labeler_iv(labeler)
    pool, spec, spec_method = _spec(pool, kind, scores, probs, metric=metric, k=k, method=method, costs=costs)
    td = _table_design(pool, spec, spec_method, kind, query_weights=query_weights, defensive=defensive,
                       progress=progress)
    # the draws the run can make, found ahead on a copy of its generator (its cap as the schedule will set it)
    td, plan, docs, design, mem_pool, _ = _drawn_pool(
        pool, spec, spec_method, kind, budget=schedule.budget, query_weights=query_weights, defensive=defensive,
        rng=schedule.rng, names=None, extra_columns=[labeler.column] if from_column else [], progress=progress, td=td,
        max_draws=max_draws_iv(max_draws, td.n_queries))
    if from_column:
        labeler = labeler.labeler(docs, pool.query, pool.query_in_index, pool.document)
    result = run(design, mem_pool, labeler, schedule)
    x = result.trace["query"].to_numpy()
    if not np.array_equal(x, plan.queries[:x.size]):  # pragma: no cover - invariant
        raise RuntimeError("internal error: the run's draws differ from the draws whose documents were fetched.")
    if auto:
        result.trace.attrs["auto"] = SEQUENTIAL_AUTO.as_dict()
    return result


def create_campaign(path, pool, scores, probs, *, budget, metric="err@10", k=None, method="auto", costs="auto",
                    query_weights=None, defensive=DEFAULT_DEFENSIVE, seed=None, names=None, combine="mean_gain",
                    overwrite=False, description="", progress=None, held_qrels=None, judges=None):
    """A labeling campaign (:class:`activerank.campaign.Campaign`) on a pool in a Dask DataFrame.

    The store keeps the per-query table (``p``, ``q``, costs, predictions of every
    query) and the drawn queries' documents, rankings and probabilities only --
    not the whole pool -- so a campaign works on pools of any size.  The draw
    sequence is fixed at creation, as for an in-memory campaign: once every
    drawn query is judged, ``Campaign.estimate()`` equals
    :func:`activerank.distributed.estimate` / :func:`compare` with ``rng=seed``
    and the same method.  The default ``"auto"`` runs ``"active"`` here and
    stores why (:data:`DASK_CAMPAIGN_AUTO`): a draw sequence gives an estimate
    from any fully judged prefix (an in-memory campaign's ``auto`` also weighs
    ``"doc_dyn"``); ``"active_wor"`` plans one sample without replacement,
    usable once judged whole.
    Judgments of documents of undrawn queries (``scope="pool"`` imports) are
    refused: the store does not know those documents.

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file to create.
    pool, probs, budget, metric, k, method, costs, query_weights, defensive
        As in :func:`estimate`.
    scores : str or sequence of one or two str
        One score column (the campaign estimates its metric) or two (``R_a - R_b``).
    seed : int or None
        Seed of the draw sequence (stored; ``None`` picks one).
    names : sequence of str, optional
        Ranker names (default ``"ranker"`` or ``"a"``, ``"b"``).
    combine, overwrite, description
        As in :meth:`activerank.campaign.Campaign.create`.
    progress : bool or None, default None
        As in :func:`estimate`.
    held_qrels : str or os.PathLike, optional
        Human labels already held (``qid iter docid grade``).  The judges are calibrated on them, and the
        lines of the queries the campaign draws are imported as pre-existing judgments at creation, so they
        are never exported as tasks.  The store keeps the drawn queries' documents only: the other lines are
        recorded as rejected in that import (the labels stay in the file).
    judges : JudgeColumns or sequence of them, optional
        External judges' outputs in columns of the pool, calibrated on ``held_qrels`` (at least 30 labels on
        judged pairs) into the campaign's relevance model, as :meth:`activerank.campaign.Campaign.create`
        does in memory; ``trace.attrs["judges"]`` of its results says how.

    Returns
    -------
    Campaign
    """
    from .._progress import progress_iv
    from .._validation import defensive_iv, rng_iv
    from ..campaign.replay import plan_family
    from ..campaign.store import Campaign, _create_args_iv, _pool_ids
    from ..design.targets import default_names

    auto = isinstance(method, str) and method == "auto"
    method = "active" if auto else method
    path, budget, seed = _create_args_iv(path, combine, overwrite, budget, seed, method=method, documents=False)
    defensive = defensive_iv(defensive)
    progress = progress_iv(progress)
    scores = (scores,) if isinstance(scores, str) else tuple(scores)
    kind = {1: "mean", 2: "difference"}.get(len(scores))
    if kind is None:
        raise ValueError(f"`scores` must name one or two score columns; got {len(scores)}.")
    names = [str(n) for n in (default_names(kind, len(scores)) if names is None else names)]
    if len(names) != len(scores) or len(set(names)) != len(names):
        raise ValueError(f"`names` must give {len(scores)} distinct names; got {names}.")
    fitted = None
    if held_qrels is not None or judges is not None:  # read and checked before anything is made
        pool, probs, fitted = _held_and_judges(pool, probs, judges, held_qrels, seed=seed, progress=progress)
    pool, spec, spec_method = _spec(pool, kind, scores, probs, metric=metric, k=k, method=method, costs=costs)
    prob_columns = list(spec.probs or spec.features or ())
    td, _, docs, design, mem_pool, _ = _drawn_pool(
        pool, spec, spec_method, kind, budget=budget, query_weights=query_weights, defensive=defensive,
        rng=rng_iv(seed), names=tuple(names), extra_columns=prob_columns, progress=progress)
    # the campaign's own plan on the drawn pool: the draws whose documents were just fetched
    plan, _, wor, _, kind_arrays = plan_family(design, mem_pool, budget, seed)
    X = docs[prob_columns].to_numpy(np.float64)
    P = X if spec.probs is not None else np.asarray(spec.model.predict_proba(X), dtype=np.float64)
    qkeys, id_kind, dkeys = _pool_ids(mem_pool)
    extra: dict = {"pool": "distributed", "pool_n_docs": int(td.n_docs.sum())}
    if fitted is not None:
        extra["judges"] = fitted
    if auto:  # stored as an in-memory campaign stores its choice
        from ..design.auto import AutoChoice

        v = float(td.method.kind.predicted_variance(td, float(budget)))
        extra["auto"] = AutoChoice("active", {"active": v}, DASK_CAMPAIGN_AUTO).as_dict()
    camp = Campaign._write_new(path, design, mem_pool, plan, P.reshape(len(docs), -1), qkeys=qkeys, kind=id_kind,
                               dkeys=dkeys, texts={}, names=names, target=kind, seed=seed, budget=budget,
                               defensive=defensive, combine=combine, description=description, extra_meta=extra,
                               wor=wor, kind_arrays=kind_arrays)
    if held_qrels is not None:  # the drawn queries' held labels: known, never exported as tasks
        try:
            camp.import_qrels(held_qrels, annotator="held")
        except BaseException:  # no campaign without its held labels (nothing was judged in it yet)
            from ..campaign.schema import SIDECARS, remove_files

            camp.close()
            remove_files(str(path), "", *SIDECARS)
            raise
    return camp


def _held_and_judges(pool, probs, judges, held_qrels, *, seed, progress):
    """``(pool, probs, info)`` of a campaign: ``held_qrels`` checked, ``judges`` (if any) calibrated on them."""
    from .frame import dask_pool_iv
    from .judges import TooFewHeldLabels, held_qrels_judgments, with_judges

    pool = dask_pool_iv(pool)
    if held_qrels is None:
        raise ValueError("`judges` in a campaign are calibrated on the human labels held: pass `held_qrels` (at "
                         "least 30 labels on pairs a judge graded, e.g. an earlier campaign's qrels).")
    n_grades = len(probs) if isinstance(probs, (list, tuple)) and all(isinstance(c, str) for c in probs) else None
    held = held_qrels_judgments(held_qrels, pool, n_grades=n_grades)  # checked even when only imported
    if judges is None:
        return pool, probs, None
    try:
        return with_judges(pool, probs, judges, held, seed=int(seed) % (2**31 - 1), progress=progress)
    except TooFewHeldLabels as exc:  # a campaign cannot buy calibration rounds: it is planned once
        from ..engine.judged import MIN_CALIBRATION_LABELS

        raise TooFewHeldLabels(f"`held_qrels`: {exc.held}, fewer than {MIN_CALIBRATION_LABELS} on judged documents. "
                               "A campaign is planned once, before its first task, so it cannot buy calibration "
                               "labels: label some queries first (e.g. a campaign without judges) and pass their "
                               "qrels, or leave `judges` out.") from None


def estimate(pool, scores, probs, labeler, *, budget, metric="err@10", k=None, method="auto", costs="auto",
             query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None, judgments=None, ci="auto", progress=None,
             judges=None):
    """Estimate a ranker's mean metric on a pool in a Dask DataFrame.

    The same estimate as :func:`activerank.estimate` on the same data (equal
    to rounding for the same ``rng``), with only the per-query table and the
    drawn queries' documents on the driver.

    Parameters
    ----------
    pool : DaskPool or dask.dataframe.DataFrame
        One row per (query, document), partitioned by whole queries (a frame
        is read with the default column names ``query_id`` and ``doc_id``).
    scores : str
        The ranker's score column (ranked descending per query, ties to the
        earlier row).
    probs : sequence of str or fitted relevance model
        The probability columns ``p(y = 0 | x, z), ..., p(y = G - 1 | x, z)``,
        or a model with ``predict_proba`` applied to the pool's ``features``
        columns partition by partition.
    labeler : callable or ColumnLabels
        ``labeler(query_id, doc_ids) -> grades`` (document ids from the
        pool's ``document`` column), or :class:`ColumnLabels` to answer from
        a grade column of the pool (a simulation).
    budget : float
        Labeling budget in units of the pool's mean query cost.
    metric, k
        A metric with exact moments (``"dcg@k"``, ``"err@k"``, ...).
    method : str, default "auto"
        ``"auto"``, a registered query-level method (:mod:`activerank.design.methods`)
        or ``"doc_dyn"`` / ``"doc_stat"``.  ``"auto"`` runs whichever of
        ``"active_wor"`` and (additive metrics) ``"doc_dyn"`` has the smaller
        predicted variance at the budget, as :func:`activerank.estimate` does,
        and says why in ``trace.attrs["auto"]`` (``"prefix"``, the cascade
        metrics' alternative in memory, does not run on a Dask pool and is
        skipped).  ``"active_wor"``: one budgeted sample of queries without
        replacement (found on the driver from the per-query table, then only
        theirs are fetched); ``"active"`` etc. draw with replacement;
        ``"doc_dyn"``: documents in a budgeted priority order, only the
        candidates of the draw come to the driver (:mod:`.documents`).
    costs : {"auto", "column", "log_length", "constant", "uniform"}
        ``"auto"``: the pool's ``cost`` column if it has one, else
        log-length costs from its ``length`` column, else one unit per
        document.
    query_weights : array-like of shape (n_queries,), optional
        Target distribution over the queries in the per-query table's order
        (:func:`query_table_of`); uniform by default.
    defensive : float, default 0.1
    rng : None, int or numpy.random.Generator
    judgments : dict, optional
        Judgments already bought, ``{query_id: {doc_id: grade}}``; those of
        drawn queries are not asked for again.  ``"doc_dyn"`` / ``"doc_stat"``
        hold them as in memory (certain and free); ``"auto"`` then runs
        ``"active_wor"`` (its reason says so).
    ci : {"auto", "t", "t_draws", "bootstrap", "normal"}, default "auto"
        As in :func:`activerank.estimate`.
    progress : bool or None, default None
        A progress bar on stderr while the workers compute (the per-query
        table, then the fetch of the drawn queries): None shows it on a
        terminal only, False never.
    judges : JudgeColumns or sequence of them, optional
        External judges' outputs in columns of the pool (:class:`JudgeColumns`),
        calibrated on the labels held (``judgments=``; only the held queries'
        documents come to the driver) with ``probs`` as extra features, then
        applied by the workers as the relevance model -- the same calibration
        as :func:`activerank.estimate` with ``judges=`` and those labels held.
        With fewer than 30 on judged documents, calibration rounds buy them
        first and the run holds them (:func:`.judges.run_with_rounds`).
        ``trace.attrs["judges"]`` says what was done (:mod:`.judges`).

    Returns
    -------
    EstimateResult

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> import activerank.distributed as ard
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"query_id": np.repeat(np.arange(40), 5), "doc_id": np.arange(200),
    ...                    "score": rng.random(200), "p0": 0.6, "p1": 0.3, "p2": 0.1})
    >>> pool = ard.DaskPool(dd.from_pandas(df, npartitions=4, sort=False))
    >>> labels = rng.integers(0, 3, 200)
    >>> res = ard.estimate(pool, "score", ["p0", "p1", "p2"], lambda q, docs: labels[docs],
    ...                    budget=10, metric="dcg@3", rng=0)
    >>> res.n_queries > 1
    True
    """
    return _run(pool, "mean", (scores,), probs, labeler, budget=budget, metric=metric, k=k, method=method,
                costs=costs, query_weights=query_weights, defensive=defensive, rng=rng, judgments=judgments, ci=ci,
                progress=progress, judges=judges)


def compare(pool, scores_a, scores_b, probs, labeler, *, budget, metric="err@10", k=None, method="auto",
            costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None, judgments=None, ci="auto",
            progress=None, judges=None):
    """Estimate ``Delta = R_a - R_b`` between two rankers on a pool in a Dask DataFrame.

    Same parameters as :func:`estimate`, with two score columns; the same
    result as :func:`activerank.compare` with ``judge="all"`` on the same data
    and ``rng``: every document of a drawn query is judged (judging only the
    documents that can change the difference is not distributed yet).

    Returns
    -------
    ComparisonResult
    """
    return _run(pool, "difference", (scores_a, scores_b), probs, labeler, budget=budget, metric=metric, k=k,
                method=method, costs=costs, query_weights=query_weights, defensive=defensive, rng=rng,
                judgments=judgments, ci=ci, progress=progress, judges=judges)


def _columns_iv(columns, name: str, at_least: int) -> tuple:
    """A list of score column names (at least ``at_least``)."""
    if isinstance(columns, str) or not isinstance(columns, (list, tuple)):
        raise TypeError(f"`{name}` must be a list of score column names; got {type(columns).__name__}.")
    if len(columns) < at_least:
        raise ValueError(f"`{name}` must name at least {at_least} score column{'s' if at_least > 1 else ''}; "
                         f"got {len(columns)}.")
    return tuple(columns)


def compare_many(pool, candidate_scores, baseline_scores, probs, labeler, *, budget, metric="err@10", k=None,
                 method="auto", costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None,
                 names=None, baseline_name="baseline", judgments=None, ci="auto", progress=None, judges=None):
    """Estimate how much each of several candidates beats a baseline, on a pool in a Dask DataFrame.

    The same result as :func:`activerank.compare_many` with ``judge="all"`` on
    the same data and ``rng`` (every document of a drawn query is judged).

    Parameters
    ----------
    candidate_scores : list of str
        One score column per candidate (at least one).
    baseline_scores : str
        The baseline's score column.
    names : sequence of str, optional
        Candidate names (default: their column names).
    baseline_name : str, default "baseline"
    pool, probs, labeler, budget, metric, k, method, costs, query_weights, defensive, rng, judgments, ci, progress
    judges
        As in :func:`estimate`.

    Returns
    -------
    MultiComparisonResult
    """
    from .._validation import names_iv

    cands = _columns_iv(candidate_scores, "candidate_scores", 1)
    if not isinstance(baseline_scores, str):
        raise TypeError(f"`baseline_scores` must be the name of a score column; got {type(baseline_scores).__name__}.")
    cand_names = names_iv(names if names is not None else [str(c) for c in cands], len(cands), "names", "candidate")
    if not isinstance(baseline_name, str) or not baseline_name:
        raise ValueError(f"`baseline_name` must be a non-empty string; got {baseline_name!r}.")
    if baseline_name in cand_names:
        raise ValueError(f"`baseline_name` {baseline_name!r} must differ from the candidate `names`.")
    return _run(pool, "baseline", (*cands, baseline_scores), probs, labeler, budget=budget, metric=metric, k=k,
                method=method, costs=costs, query_weights=query_weights, defensive=defensive, rng=rng,
                judgments=judgments, names=(*cand_names, baseline_name), ci=ci, progress=progress, judges=judges)


def rank_systems(pool, scores_list, probs, labeler, *, budget, metric="err@10", k=None, method="auto",
                 costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, rng=None, names=None,
                 judgments=None, ci="auto", progress=None, judges=None):
    """Rank several systems by their mean metric, on a pool in a Dask DataFrame.

    The same result as :func:`activerank.rank_systems` with ``judge="all"`` on
    the same data and ``rng``.

    Parameters
    ----------
    scores_list : list of str
        One score column per system (at least two).
    names : sequence of str, optional
        System names (default: their column names).
    pool, probs, labeler, budget, metric, k, method, costs, query_weights, defensive, rng, judgments, ci, progress
    judges
        As in :func:`estimate`.

    Returns
    -------
    SystemRankingResult
    """
    from .._validation import names_iv

    systems = _columns_iv(scores_list, "scores_list", 2)
    names = names_iv(names if names is not None else [str(c) for c in systems], len(systems), "names", "system")
    return _run(pool, "ranking", systems, probs, labeler, budget=budget, metric=metric, k=k, method=method,
                costs=costs, query_weights=query_weights, defensive=defensive, rng=rng, judgments=judgments,
                names=names, ci=ci, progress=progress, judges=judges)
