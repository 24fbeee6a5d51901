"""Reproduce the experiments of Sawade et al. (ECML PKDD 2012, §5) on LETOR data.

Protocol (for a dataset in the five-partition layout ``S1.txt .. S5.txt``, or
given as a few files whose queries are dealt into five partitions by sorted
query id, as TREC News):

1. For every *training partition* ``t`` (rotated over all five): split its
   queries at random into halves, fit rankers and relevance models on one half
   and tune their hyper-parameters (validation log-loss, small grids) on the
   other.  The other four partitions form the **pool**; their labels are hidden
   from every method and only used to compute the true per-query values
   ``L(x)`` (or ``delta(x) = L_a(x) - L_b(x)``) the simulated labeler returns.
2. For every scenario instance, metric and method: compute the sampling
   distribution ``q`` (exactly as :func:`activerank.make_design`: exact moments,
   ``q* ∝ p sqrt(E[(L - R)^2 | x] / lambda(x))`` mixed with ``p`` by the
   ``defensive`` weight, costs normalized to mean query cost 1), then run
   ``n_reps`` budgeted campaigns at once with
   :func:`activerank.design.draws.draw_budgeted_batch` (first draw of a query is
   charged, repeats are free) and evaluate the SNIS estimator on every budget
   of the grid (budget runs are prefixes of the largest one).
3. Record absolute error, model-selection error (comparisons), CI coverage,
   draws and cost per budget (tidy CSV), the **label savings** (budget active
   needs to reach passive's error at a reference budget, with a bootstrap
   interval over repetitions) and the **analytic** savings
   ``1 - V(q) / V(p)`` with ``V(q) = sum p^2/q (L - R)^2 * sum q lambda``
   (and its ceiling with the true ``|L - R|``).

Scenarios (paper §5): ``a`` single ranker (RF-regression and ordered-logit
rankers); ``b`` comparisons (RF regression vs RF classification, ordered logit
vs a linear RankSVM, ordered logit vs RF regression); ``c`` index update (a
ranker vs the same ranker with 10% of each result list removed at random);
``d`` more training data (RF regression on all vs on 25% of the training
queries).  Rankers order documents by the expected gain of their relevance
model.  ``p(y | x, z)`` for active sampling is the evaluated ranker's own model
or, when both compared rankers have one, the mixture of the two.

Methods are the library's registered methods (:data:`activerank.design.methods.METHODS`,
:func:`activerank.design.methods.register_method`): the harness takes a method's
sampling distribution from the problem's predictions and runs its estimator on
every repetition at once (:meth:`~activerank.inference.estimators.Estimator.prefix`).
Document-level methods (``unit="document"``: ``doc_dyn``, ``doc_uniform``,
``doc_hh``, ``two_stage``, ...; additive metrics) run through their design
plug-in (:meth:`activerank.design.document_methods.DocumentDesign.simulate`) on
the same budget grid and cost unit (documents judged, in units of the mean
query cost); their analytic (query-level) variance is NaN.

Cost model.  OHSUMED: ``lambda(x) = sum_z log(len(z))`` over the judged
documents, with title+abstract length from the raw ``Feature-min`` files
(:func:`activerank.io.letor.ohsumed_doc_length`).  MQ2008: feature 20 (document
length) is min-max normalised *per query*, so no absolute length exists; we use
a **constant cost per judged document** (a query costs the number of distinct
documents in the evaluated top-k lists); likewise TREC News (fastrank's five
features, no length; 50 queries, so a pool holds 40).  Budgets are in units of
the pool's mean query cost.

Command line::

    python -m activerank.experiments --out benchmarks/results           # full run
    python -m activerank.experiments --datasets mq2008 --folds 1 --reps 200 --quick
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .._progress import outside_bars, progress_bar, progress_iv
from ..design.costs import QueryCosts, document_costs, query_costs
from ..io.letor import LetorData, concat, load_letor, load_partitions, ohsumed_doc_length
from ..metrics import Metric, parse_metric, pool_metric_values
from ..relevance.models import fit_with_validation, make_relevance_model
from ..relevance.rankers import expected_gain_scores, fit_linear_ranker, rank_by_scores, remove_fraction
from ..design.methods import get_method
from ..design.sampling import DEFAULT_DEFENSIVE, optimal_distribution
from ..design.targets import make_target
from ..inference.snis import BatchEstimate
from ..design.draws import BatchPlan, budget_stops, draw_budgeted_batch

__all__ = [
    "DatasetSpec",
    "DATASETS",
    "ScenarioInstance",
    "SCENARIOS",
    "Problem",
    "method_distribution",
    "method_estimate",
    "ExperimentConfig",
    "ExperimentResults",
    "load_dataset",
    "fit_fold",
    "build_problem",
    "simulate",
    "analytic_variance",
    "analytic_savings",
    "oracle_savings",
    "budget_to_reach",
    "label_savings",
    "run",
    "investigate",
    "main",
]

CACHE_VERSION = "1"
PAPER_SAVINGS = {
    "a_rf": "~20% (RF, ERR, Λ=300, MSLR)",
    "a_ologit": "~10% (ordered logit)",
    "b_rfreg_rfcls": "30–55% (model-selection error)",
    "b_ologit_linear": "30–55% (model-selection error)",
    "b_ologit_rf": "30–55% (model-selection error)",
    "c_index": "~75%",
    "d_moredata": "~45%",
}


# --------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class DatasetSpec:
    """Where a LETOR dataset lives and how its labeling costs are modeled.

    Attributes
    ----------
    name : str
        Also the key of the data set's layout in :data:`activerank.datasets.DATASETS`.
    subdir : str
        Directory (under the data root) with ``S1.txt`` .. ``S5.txt`` (or with ``files``).
    length_subdir : str or None
        Row-aligned twin files to read document length from (five-partition layout only).
    length_feature : int, callable or None
        As in :func:`activerank.io.letor.load_letor`.
    cost_model : str
        Document cost model for :func:`activerank.design.costs.document_costs`.
    budgets : tuple of float
        Budget grid (units of mean query cost).
    reference_budget : float
        Budget at which passive's error defines the savings target.
    cost_note : str
        How the cost model was chosen (reported next to the results).
    n_grades : int
        Size of the label scale (grades ``0 .. n_grades - 1``).
    files : tuple of str or None
        For a data set that is not split into ``S1.txt`` .. ``S5.txt``: the
        files under ``subdir`` that together hold every query.  Their queries
        are dealt into five partitions by sorted query id, round-robin
        (:func:`_deal_partitions`), so the five-fold protocol is unchanged.
    n_features : int or None
        Number of features, checked when reading (``None``: the first file fixes it).
    """

    name: str
    subdir: str
    length_subdir: str | None
    length_feature: object
    cost_model: str
    budgets: tuple
    reference_budget: float
    cost_note: str
    n_grades: int = 3
    files: tuple | None = None
    n_features: int | None = None


DATASETS: dict[str, DatasetSpec] = {
    "mq2008": DatasetSpec(
        name="mq2008",
        subdir="mq2008",
        length_subdir=None,
        length_feature=None,
        cost_model="constant",
        budgets=(10, 15, 20, 30, 50, 75, 100, 150, 200, 300),
        reference_budget=100,
        cost_note=("constant cost per judged document (feature 20, 'DL of the whole document', is "
                   "min-max normalised per query, so no absolute length is available)"),
    ),
    "ohsumed": DatasetSpec(
        name="ohsumed",
        subdir="ohsumed-letor3/QueryLevelNorm",
        length_subdir="ohsumed-letor3/Feature-min",
        length_feature=ohsumed_doc_length,
        cost_model="log_length",
        budgets=(4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40),
        reference_budget=15,
        cost_note=("log(title+abstract length) per judged document, length = f31/f33 of the raw "
                   "Feature-min files"),
    ),
    # 50 queries (fastrank's example split 45 + 5, merged and dealt into five partitions of 10): a pool
    # holds 40 queries, so the grid stops short of judging all of it
    "trec-news": DatasetSpec(
        name="trec-news",
        subdir="trec-news-2018-fastrank",
        length_subdir=None,
        length_feature=None,
        cost_model="constant",
        budgets=(2, 3, 5, 7, 10, 15, 20, 30),
        reference_budget=10,
        cost_note="constant cost per judged document (the five features give no document length)",
        n_grades=5,
        files=("trec_news_2018.train", "trec_news_2018.test"),
        n_features=5,
    ),
}


def default_data_root() -> str:
    """The data root: ``$ACTIVERANK_DATA`` (:func:`activerank.datasets.data_root`; a clear error without it)."""
    from ..datasets import data_root

    return str(data_root())


_DATA_CACHE: dict = {}


def load_dataset(spec: DatasetSpec | str, data_root: str | None = None) -> tuple[LetorData, np.ndarray]:
    """Load all five partitions of a dataset.

    Parameters
    ----------
    spec : DatasetSpec or str
        A spec or a key of :data:`DATASETS`.
    data_root : str, optional
        Default :func:`default_data_root`.

    Returns
    -------
    data : LetorData
        All queries of S1..S5 (or of ``spec.files``) in partition order.
    partition : ndarray of shape (n_queries,), int
        Partition number (1..5) of every query.

    Raises
    ------
    activerank.datasets.DatasetNotFoundError
        The data set is not under the data root (naming the expected layout).
    """
    spec = _spec_iv(spec)
    from ..datasets import data_root as _root, dataset_dir

    root = _root(data_root)
    key = (spec.name, str(root))
    if key not in _DATA_CACHE:
        dataset_dir(spec.name, root)  # a missing dataset: which one, the layout and where to get it
        folder = root / spec.subdir
        if spec.files is None:
            parts = []
            for k in range(1, 6):
                parts.append(load_partitions(
                    folder, [k], n_grades=spec.n_grades, n_features=spec.n_features,
                    length_feature=spec.length_feature,
                    length_root=None if spec.length_subdir is None else root / spec.length_subdir,
                ))
            data = concat(parts)
            part = np.repeat(np.arange(1, 6), [d.n_queries for d in parts])
        else:
            if spec.length_subdir is not None:
                raise ValueError(f"dataset {spec.name!r}: `length_subdir` needs the S1..S5 layout; "
                                 "with `files` give `length_feature` (read from the same files).")
            data = concat([load_letor(folder / f, n_grades=spec.n_grades, n_features=spec.n_features,
                                      length_feature=spec.length_feature) for f in spec.files])
            part = _deal_partitions(data.query_ids)
            order = np.argsort(part, kind="stable")
            data, part = data.subset(order), part[order]
        _DATA_CACHE[key] = (data, part)
    return _DATA_CACHE[key]


def _deal_partitions(query_ids, n_partitions: int = 5) -> np.ndarray:
    """Deal queries into partitions by sorted query id, round-robin.

    The ``i``-th smallest query id goes to partition ``i mod n_partitions + 1``:
    deterministic, independent of file order, and the partitions differ in
    size by at most one query.

    Parameters
    ----------
    query_ids : array-like of int, shape (n_queries,)
        Distinct raw query ids.
    n_partitions : int, default 5

    Returns
    -------
    ndarray of shape (n_queries,), int
        Partition number (``1 .. n_partitions``) of every query, in the input order.

    Examples
    --------
    >>> _deal_partitions([40, 10, 30, 20, 50, 60], 5).tolist()
    [4, 1, 3, 2, 5, 1]
    """
    ids = np.asarray(query_ids).reshape(-1)
    order = np.argsort(ids, kind="stable")
    part = np.empty(ids.size, dtype=np.int64)
    part[order] = np.arange(ids.size) % n_partitions + 1
    return part


def _spec_iv(spec) -> DatasetSpec:
    if isinstance(spec, DatasetSpec):
        return spec
    if spec not in DATASETS:
        raise ValueError(f"`dataset` must be one of {sorted(DATASETS)}; got {spec!r}.")
    return DATASETS[spec]


# --------------------------------------------------------------------------- models per fold


@dataclass(frozen=True, eq=False)
class FoldModels:
    """Rankers' scores and relevance models' probabilities on one fold's pool.

    Attributes
    ----------
    pool : LetorData
        The four partitions not used for training (labels = hidden truth).
    scores : dict of str to ndarray (n_pool_docs,)
        Ranking scores of every ranker.
    probs : dict of str to ndarray (n_pool_docs, n_grades)
        ``p(y | x, z)`` of every ranker that has a relevance model.
    params : dict
        Tuned hyper-parameters (for the record).
    """

    pool: LetorData
    scores: dict
    probs: dict
    params: dict


def _fold_cache_key(spec: DatasetSpec, fold: int, cfg: "ExperimentConfig") -> str:
    blob = json.dumps(dict(v=CACHE_VERSION, d=spec.name, f=fold, t=cfg.n_trees, s=cfg.seed,
                           sf=cfg.small_fraction, quick=cfg.quick), sort_keys=True)
    return f"{spec.name}_fold{fold}_{hashlib.sha1(blob.encode()).hexdigest()[:10]}.npz"


def fit_fold(spec: DatasetSpec | str, fold: int, cfg: "ExperimentConfig", *, data_root=None) -> FoldModels:
    """Train rankers and relevance models on partition ``fold``; predict on the pool.

    The training partition's queries are split at random (seeded) into a
    fitting half and a validation half.  Models: ``rf_regression``,
    ``rf_classifier``, ``ordered_logit`` (tuned by validation log-loss),
    ``linear`` (RankSVM, no probabilities) and ``rf_regression_small``
    (RF regression on ``cfg.small_fraction`` of the fitting half's queries).
    Results are cached on disk in ``cfg.cache_dir`` (if set).

    Parameters
    ----------
    spec : DatasetSpec or str
    fold : int in 1..5
        Training partition.
    cfg : ExperimentConfig
    data_root : str, optional

    Returns
    -------
    FoldModels
    """
    spec = _spec_iv(spec)
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not 1 <= fold <= 5:
        raise ValueError(f"`fold` must be a partition number in 1..5; got {fold!r}.")
    data, part = load_dataset(spec, data_root)
    pool = data.subset(part != fold)
    names = ("rf_regression", "rf_classifier", "ordered_logit", "linear", "rf_regression_small")
    path = None
    if cfg.cache_dir:
        path = Path(cfg.cache_dir) / _fold_cache_key(spec, fold, cfg)
        if path.exists():
            z = np.load(path, allow_pickle=False)
            scores = {n: z[f"score_{n}"] for n in names}
            probs = {n: z[f"prob_{n}"] for n in names if f"prob_{n}" in z}
            params = json.loads(str(z["params"]))
            return FoldModels(pool, scores, probs, params)
    train_all = data.subset(part == fold)
    gen = np.random.default_rng([cfg.seed, fold, 17])
    perm = gen.permutation(train_all.n_queries)
    half = train_all.n_queries // 2
    train, vali = train_all.subset(np.sort(perm[:half])), train_all.subset(np.sort(perm[half:]))
    small = train.subset(np.sort(gen.permutation(train.n_queries)[: max(2, int(cfg.small_fraction * train.n_queries))]))
    G = spec.n_grades
    n_trees = cfg.n_trees
    rf = dict(n_estimators=n_trees, n_jobs=cfg.n_jobs, max_features=0.5)
    leaf_grid = {"min_samples_leaf": [5] if cfg.quick else [5, 20]}
    fits = {
        "rf_regression": fit_with_validation(
            partial(make_relevance_model, "rf_regression", G, random_state=cfg.seed, **rf), leaf_grid, train, vali),
        "rf_classifier": fit_with_validation(
            partial(make_relevance_model, "rf_classifier", G, random_state=cfg.seed, **rf), leaf_grid, train, vali),
        "ordered_logit": fit_with_validation(
            partial(make_relevance_model, "ordered_logit", G),
            {"alpha": [1.0, 10.0] if cfg.quick else [0.1, 1.0, 10.0, 100.0]}, train, vali),
    }
    best_leaf = fits["rf_regression"].params.get("min_samples_leaf", 5)
    fits["rf_regression_small"] = fit_with_validation(
        partial(make_relevance_model, "rf_regression", G, random_state=cfg.seed, **rf),
        {"min_samples_leaf": [best_leaf]}, small, vali)
    probs = {n: f.model.predict_proba(pool.X) for n, f in fits.items()}
    scores = {n: expected_gain_scores(p) for n, p in probs.items()}
    scores["linear"] = fit_linear_ranker(train, method="ranksvm", random_state=cfg.seed).scores(pool.X)
    params = {n: f.params for n, f in fits.items()}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, params=json.dumps(params),
                            **{f"score_{n}": s for n, s in scores.items()},
                            **{f"prob_{n}": p for n, p in probs.items()})
        os.replace(tmp, path)
    return FoldModels(pool, scores, probs, params)


# --------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class ScenarioInstance:
    """One evaluation task of the paper's §5.

    Attributes
    ----------
    key : str
        Identifier used in the CSVs.
    scenario : {"a", "b", "c", "d"}
    title : str
    ranker_a : str
        Ranker whose value is estimated (or the first of a pair).
    ranker_b : str or None
        Second ranker of a comparison; ``"<name>@removed"`` means ``ranker``'s
        lists with ``remove`` of each list deleted at random.
    models : tuple of str
        Relevance models whose mixture gives ``p(y | x, z)``.
    remove : float
        Fraction removed for ``@removed`` rankings.
    """

    key: str
    scenario: str
    title: str
    ranker_a: str
    ranker_b: str | None
    models: tuple
    remove: float = 0.1

    @property
    def is_pair(self) -> bool:
        return self.ranker_b is not None

    @property
    def loss(self) -> str:
        """The error measure of the paper's figure for this scenario."""
        return "selection_error" if self.scenario == "b" else "abs_error"


SCENARIOS: tuple[ScenarioInstance, ...] = (
    ScenarioInstance("a_rf", "a", "(a) RF regression ranker", "rf_regression", None, ("rf_regression",)),
    ScenarioInstance("a_ologit", "a", "(a) ordered-logit ranker", "ordered_logit", None, ("ordered_logit",)),
    ScenarioInstance("b_rfreg_rfcls", "b", "(b) RF regression vs RF classification", "rf_regression",
                     "rf_classifier", ("rf_regression", "rf_classifier")),
    ScenarioInstance("b_ologit_linear", "b", "(b) ordered logit vs linear RankSVM", "ordered_logit",
                     "linear", ("ordered_logit",)),
    ScenarioInstance("b_ologit_rf", "b", "(b) ordered logit vs RF regression", "ordered_logit",
                     "rf_regression", ("ordered_logit", "rf_regression")),
    ScenarioInstance("c_index", "c", "(c) index update: 10% of each list removed", "rf_regression",
                     "rf_regression@removed", ("rf_regression",)),
    ScenarioInstance("d_moredata", "d", "(d) more training data: 100% vs 25% of queries", "rf_regression",
                     "rf_regression_small", ("rf_regression", "rf_regression_small")),
)


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


# --------------------------------------------------------------------------- simulation


def simulate(problem: Problem, method, budgets, n_reps: int, rng=None, *,
             defensive: float = DEFAULT_DEFENSIVE) -> tuple[pd.DataFrame, dict]:
    """Monte-Carlo of ``n_reps`` campaigns for every budget of a grid.

    Parameters
    ----------
    problem : Problem
    method : str or Method
        A registered method (:data:`activerank.design.methods.METHODS`).
    budgets : sequence of float
        Increasing budgets (units of mean query cost).
    n_reps : int
    rng : None, int or numpy.random.Generator
    defensive : float

    Returns
    -------
    summary : pandas.DataFrame
        One row per budget: ``budget, mean_abs_error, se_abs_error, rmse,
        selection_error, se_selection_error, coverage95, mean_draws,
        mean_queries, mean_cost, n_empty``.
    losses : dict of str to ndarray (n_budgets, n_reps)
        Per-repetition ``abs_error`` and ``selection_error`` (for bootstraps).
    """
    b = np.asarray(budgets, dtype=np.float64)
    if b.ndim != 1 or b.size == 0 or np.any(np.diff(b) <= 0):
        raise ValueError(f"`budgets` must be a non-empty increasing 1-d sequence; got {budgets!r}.")
    if get_method(method).unit == "prefix":
        raise ValueError(f"method {get_method(method).name!r} judges random-depth prefixes; it is simulated by "
                         "PrefixSampling.simulate (benchmarks/peers/prefix_api.py), not by this harness.")
    if get_method(method).unit == "document":
        return _simulate_documents(problem, get_method(method), b, n_reps, rng, defensive)
    if not get_method(method).replacement:
        return _simulate_without_replacement(problem, get_method(method), b, n_reps, rng, defensive)
    q = method_distribution(problem, method, defensive=defensive)
    plan = draw_budgeted_batch(q, problem.costs.cost, float(b[-1]), n_reps, rng)
    stops = budget_stops(plan, b)
    est = method_estimate(problem, method, q, plan, stops)
    cost, nq = _prefix_costs(plan, stops)
    return _summarize(problem, b, est.estimate, est.standard_error, stops, nq, cost)


def _prefix_costs(plan: BatchPlan, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cost and distinct queries of every budget prefix, each of shape (n_budgets, n_reps)."""
    charged_cum = np.cumsum(plan.charged, axis=1)
    rows = np.arange(plan.n_reps)[None, :]
    idx = np.maximum(stops - 1, 0)
    cost = np.where(stops > 0, charged_cum[rows, idx], 0.0)
    newcum = np.cumsum(plan.new, axis=1)
    return cost, np.where(stops > 0, newcum[rows, idx], 0)


def _simulate_without_replacement(problem: Problem, method, budgets: np.ndarray, n_reps: int, rng,
                                  defensive: float):
    """A query-level method without replacement on the budget grid: its plug-in's own Monte-Carlo."""
    q = method_distribution(problem, method, defensive=defensive)
    pred = problem.predictions[method.relevance]
    var = pred.output_variance[:, 0] if pred.output_variance is not None else None
    out = method.kind.simulate(problem.values, problem.predictions["model"].mean[:, 0], problem.p, q,
                                    problem.costs.cost, budgets, n_reps, np.random.default_rng(rng),
                                    output_variance=var)
    return _summarize(problem, budgets, out["estimate"], out["standard_error"], out["n"], out["n"], out["cost"])


def _simulate_documents(problem: Problem, method, budgets: np.ndarray, n_reps: int, rng, defensive: float):
    """A document-level method on the budget grid: its design plug-in's own Monte-Carlo."""
    from ..design.kinds.documents import unit_costs
    from ..design.kinds.documents import document_target

    if problem.labels is None or problem.document_costs is None:
        raise ValueError(f"method {method.name!r} samples documents: the problem needs `labels` and "
                         "`document_costs` (build it with build_problem).")
    if problem.metric.family != "additive":
        raise ValueError(f"method {method.name!r} samples single documents and needs a metric that adds over "
                         f"documents (DCG@k, P@k, RBP); got {str(problem.metric)!r}.")
    probs = problem.probs
    if method.relevance == "uniform":
        probs = np.full_like(probs, 1.0 / probs.shape[1])
    dt = document_target(list(problem.rankings), n_docs=probs.shape[0], metric=problem.metric,
                         n_grades=probs.shape[1], query_weights=problem.p)
    costs = unit_costs(dt, problem.costs, problem.document_costs)
    out = method.kind.simulate(dt, probs, costs, budgets, problem.labels[dt.rows], n_reps,
                                    np.random.default_rng(rng), defensive=defensive)
    return _summarize(problem, budgets, out["estimate"][..., 0], out["standard_error"][..., 0], out["n_draws"],
                      out["n_queries"], out["cost"])


def _summarize(problem: Problem, b, e, se, draws, n_queries, cost) -> tuple[pd.DataFrame, dict]:
    """Summary rows and per-repetition losses from estimates of shape (n_budgets, n_reps)."""
    t = problem.target
    empty = ~np.isfinite(e)
    # an empty run (no query affordable within the budget) is scored as estimating 0
    e = np.where(empty, 0.0, e)
    abs_err = np.abs(e - t)
    sel = np.where(e == 0.0, 0.5, (np.sign(e) != np.sign(t)).astype(float))
    covered = np.abs(e - t) <= 1.959964 * np.where(np.isfinite(se), se, np.inf)
    n = e.shape[1]
    summary = pd.DataFrame({
        "budget": b,
        "mean_abs_error": abs_err.mean(1),
        "se_abs_error": abs_err.std(1, ddof=1) / np.sqrt(n),
        "rmse": np.sqrt((abs_err**2).mean(1)),
        "selection_error": sel.mean(1),
        "se_selection_error": sel.std(1, ddof=1) / np.sqrt(n),
        "coverage95": covered.mean(1),
        "mean_draws": draws.mean(1),
        "mean_queries": n_queries.mean(1),
        "mean_cost": cost.mean(1),
        "n_empty": empty.sum(1),
    })
    return summary, {"abs_error": abs_err, "selection_error": sel}


# --------------------------------------------------------------------------- analytic savings


def analytic_variance(values, p, q, costs) -> float:
    """Asymptotic variance per unit budget of SNIS under ``q``.

    ``V(q) = sum_x p(x)^2 / q(x) (L(x) - R)^2 * sum_x q(x) lambda(x)`` with
    ``R = sum p L``: the variance of ``n`` draws times the expected cost of a
    draw.  (It ignores that repeated draws are free.)

    Examples
    --------
    >>> p = np.array([0.5, 0.5])
    >>> analytic_variance(np.array([0.0, 1.0]), p, p, np.ones(2))
    0.25
    """
    v = np.asarray(values, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    lam = np.asarray(costs, dtype=np.float64)
    dev2 = (v - p @ v) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(p > 0, p * p / q * dev2, 0.0)
    return float(term.sum() * (q @ lam))


def analytic_savings(values, p, q, costs) -> float:
    """``1 - V(q) / V(p)``: fraction of budget saved asymptotically (NaN if ``V(p) = 0``)."""
    vp = analytic_variance(values, p, p, costs)
    return float("nan") if vp <= 0 else 1.0 - analytic_variance(values, p, q, costs) / vp


def oracle_distribution(values, p, costs, *, defensive: float = 0.0) -> np.ndarray:
    """The best ``q`` for the true values: ``q ∝ p |L - R| / sqrt(lambda)`` (mixed with ``p``)."""
    v = np.asarray(values, dtype=np.float64)
    return optimal_distribution((v - p @ v) ** 2, np.asarray(costs, dtype=np.float64), p, defensive=defensive)


def oracle_savings(values, p, costs) -> float:
    """Ceiling of :func:`analytic_savings` over all ``q`` (uses the true ``|L - R|``)."""
    return analytic_savings(values, p, oracle_distribution(values, p, costs), costs)


# --------------------------------------------------------------------------- label savings


def budget_to_reach(budgets, curves, target) -> tuple[np.ndarray, np.ndarray]:
    """Smallest budget at which an error curve reaches ``target``.

    Linear interpolation of the error against ``log(budget)`` between grid
    points; the first crossing counts.

    Parameters
    ----------
    budgets : ndarray of shape (n_budgets,)
    curves : ndarray of shape (..., n_budgets)
    target : float or ndarray of shape (...)

    Returns
    -------
    budget : ndarray of shape (...)
        Interpolated budget; ``budgets[0]`` if already reached there and
        ``budgets[-1]`` if never reached.
    censored : ndarray of shape (...), int
        ``-1`` reached at or before the first grid point (true budget may be
        smaller), ``+1`` never reached (true budget is larger), else 0.

    Examples
    --------
    >>> b, c = budget_to_reach(np.array([10.0, 100.0]), np.array([1.0, 0.0]), 0.5)
    >>> round(float(b), 4), int(c)
    (31.6228, 0)
    """
    b = np.asarray(budgets, dtype=np.float64)
    c = np.asarray(curves, dtype=np.float64)
    t = np.broadcast_to(np.asarray(target, dtype=np.float64), c.shape[:-1])[..., None]
    ok = c <= t
    any_ok = ok.any(axis=-1)
    j = np.where(any_ok, ok.argmax(axis=-1), b.size - 1)
    jm = np.maximum(j - 1, 0)
    cj = np.take_along_axis(c, j[..., None], -1)[..., 0]
    cm = np.take_along_axis(c, jm[..., None], -1)[..., 0]
    lb = np.log(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(cm > cj, (cm - t[..., 0]) / (cm - cj), 1.0)
    logb = lb[jm] + np.clip(frac, 0.0, 1.0) * (lb[j] - lb[jm])
    out = np.exp(logb)
    censored = np.where(~any_ok, 1, np.where(j == 0, -1, 0))
    out = np.where(~any_ok, b[-1], np.where(j == 0, b[0], out))
    return out, censored


def label_savings(budgets, active: Sequence[np.ndarray], passive: Sequence[np.ndarray], reference_budget,
                  *, n_boot: int = 500, rng=None, level: float = 0.95) -> dict:
    """Label savings of active vs passive from per-repetition losses, with a bootstrap interval.

    The error curve of a method is the mean loss over repetitions, averaged
    over folds.  Savings ``= 1 - B_active / B_ref`` where ``B_active`` is the
    budget at which active's curve reaches passive's error at ``B_ref``
    (:func:`budget_to_reach`).  The bootstrap resamples repetitions
    independently per fold and method.

    Parameters
    ----------
    budgets : array-like of shape (n_budgets,)
    active, passive : sequence of ndarray of shape (n_budgets, n_reps)
        Per-fold losses.
    reference_budget : float
        Must be one of ``budgets``.
    n_boot : int
    rng : None, int or numpy.random.Generator
    level : float

    Returns
    -------
    dict
        ``savings, low, high, censored`` (censored: -1 lower bound, +1
        upper bound on the point estimate, 0 exact), ``passive_error``,
        ``active_error`` (at the reference budget).
    """
    b = np.asarray(budgets, dtype=np.float64)
    hit = np.flatnonzero(np.isclose(b, reference_budget))
    if hit.size == 0:
        raise ValueError(f"`reference_budget` {reference_budget} must be one of `budgets` {b.tolist()}.")
    r = int(hit[0])
    gen = np.random.default_rng(rng)

    def curve(losses):
        return np.mean([l.mean(axis=1) for l in losses], axis=0)

    def boot(losses):
        out = 0.0
        for l in losses:
            idx = gen.integers(0, l.shape[1], size=(n_boot, l.shape[1]))
            out = out + l[:, idx].mean(axis=2).T  # (n_boot, n_budgets)
        return out / len(losses)

    ca, cp = curve(active), curve(passive)
    point, cens = budget_to_reach(b, ca, cp[r])
    ba, bp = boot(active), boot(passive)
    bb, _ = budget_to_reach(b, ba, bp[:, r])
    a = (1 - level) / 2
    sav = 1.0 - bb / b[r]
    valid = cp[r] > 0
    return {
        "savings": float(1.0 - point / b[r]) if valid else float("nan"),
        "low": float(np.quantile(sav, a)) if valid else float("nan"),
        "high": float(np.quantile(sav, 1 - a)) if valid else float("nan"),
        "censored": int(cens),
        "passive_error": float(cp[r]),
        "active_error": float(ca[r]),
    }


# --------------------------------------------------------------------------- driver


@dataclass
class ExperimentConfig:
    """Settings of :func:`run` (defaults = the documented full run).

    Attributes
    ----------
    datasets : tuple of str
    folds : tuple of int
        Training partitions to rotate over.
    n_reps : int
        Repetitions per budget.
    metrics : tuple of str
    methods : tuple of str
    scenarios : tuple of str
        Keys of :data:`SCENARIOS` (or scenario letters).
    budgets : dict, optional
        Per-dataset budget grid (default: the dataset spec's).
    reference_budget : dict, optional
    defensive : float
    n_trees : int
        Trees of the random forests (small to keep training cheap).
    small_fraction : float
        Training-query fraction of the ``rf_regression_small`` ranker.
    seed : int
    n_boot : int
    n_jobs : int
    quick : bool
        Smaller hyper-parameter grids.
    cache_dir : str or None
        Where fitted models' pool predictions are cached.
    data_root : str or None
    """

    datasets: tuple = ("mq2008", "ohsumed")
    folds: tuple = (1, 2, 3, 4, 5)
    n_reps: int = 1000
    metrics: tuple = ("err@10", "dcg@10", "err", "dcg")
    methods: tuple = ("passive", "active", "active_uniform_model", "active_uniform_costs")
    scenarios: tuple = tuple(s.key for s in SCENARIOS)
    budgets: dict = field(default_factory=dict)
    reference_budget: dict = field(default_factory=dict)
    defensive: float = DEFAULT_DEFENSIVE
    n_trees: int = 50
    small_fraction: float = 0.25
    seed: int = 0
    n_boot: int = 300
    n_jobs: int = 2
    quick: bool = False
    cache_dir: str | None = None
    data_root: str | None = None

    def grid(self, dataset: str) -> np.ndarray:
        return np.asarray(self.budgets.get(dataset, DATASETS[dataset].budgets), dtype=np.float64)

    def reference(self, dataset: str) -> float:
        return float(self.reference_budget.get(dataset, DATASETS[dataset].reference_budget))

    def instances(self) -> list[ScenarioInstance]:
        out = [s for s in SCENARIOS if s.key in self.scenarios or s.scenario in self.scenarios]
        unknown = set(self.scenarios) - {s.key for s in SCENARIOS} - {s.scenario for s in SCENARIOS}
        if unknown:
            raise ValueError(f"`scenarios` has unknown entries {sorted(unknown)}; "
                             f"choose from {[s.key for s in SCENARIOS]} or letters a-d.")
        return out


@dataclass
class ExperimentResults:
    """Outputs of :func:`run`.

    Attributes
    ----------
    curves : pandas.DataFrame
        Tidy per (dataset, fold, instance, metric, method, budget) summary.
    analytic : pandas.DataFrame
        Per (dataset, fold, instance, metric, method) analytic variance and
        savings; method ``"oracle"`` is the ceiling.
    savings : pandas.DataFrame
        Per (dataset, instance, metric, method): simulated savings with
        bootstrap interval, and the analytic savings (pooled over folds).
    cost_samples : dict of str to ndarray
        Normalized query costs of one pool per dataset (single ranker, @10
        and full list) for the histogram.
    seconds : float
    """

    curves: pd.DataFrame
    analytic: pd.DataFrame
    savings: pd.DataFrame
    cost_samples: dict
    seconds: float
    config: ExperimentConfig | None = None


def _seed(cfg, *keys) -> np.random.SeedSequence:
    return np.random.SeedSequence([cfg.seed, *keys])


def _print_flush(line: str) -> None:
    print(line, flush=True)


def _logger(log: Callable[[str], None] | None) -> Callable[[str], None]:
    """``log`` called outside the progress bar (its line does not run into the bar's)."""
    def say(line: str) -> None:
        if log is not None:
            with outside_bars():
                log(line)

    return say


def run(cfg: ExperimentConfig, *, progress: bool | None = None,
        log: Callable[[str], None] | None = None) -> ExperimentResults:
    """Run the whole protocol (all datasets, folds, scenarios, metrics, methods).

    Parameters
    ----------
    cfg : ExperimentConfig
    progress : bool or None, default None
        A progress bar on stderr (one step per simulated method): None shows
        it on a terminal only, False never.
    log : callable, optional
        Called with one line per finished fold (``python -m
        activerank.experiments`` passes ``print``).

    Returns
    -------
    ExperimentResults
    """
    t0 = time.perf_counter()
    progress = progress_iv(progress)
    say = _logger(log)
    for name in cfg.methods:
        get_method(name, param="methods")
    if "passive" not in cfg.methods:
        raise ValueError("`methods` must include 'passive' (the savings baseline).")
    instances = cfg.instances()
    metrics = [_metric_label(m) for m in cfg.metrics]
    curve_rows, analytic_rows, save_rows = [], [], []
    cost_samples = {}
    steps = len(cfg.datasets) * len(cfg.folds) * len(instances) * len(metrics) * len(cfg.methods)
    with progress_bar(total=steps, desc="experiment", unit="method", enabled=progress) as bar:
        for di, ds in enumerate(cfg.datasets):
            spec = _spec_iv(ds)
            losses: dict = {}  # (instance, metric, method) -> list of per-fold arrays
            for fold in cfg.folds:
                tf = time.perf_counter()
                bar.set_postfix_str(f"{spec.name} fold {fold}: fitting models", refresh=False)
                fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
                t_fit = time.perf_counter() - tf
                bar.set_postfix_str(f"{spec.name} fold {fold}", refresh=False)
                _simulate_fold(cfg, di, spec, fold, fm, instances, metrics, curve_rows, analytic_rows, cost_samples,
                               losses, bar)
                say(f"{spec.name} fold {fold}: models {t_fit:.1f}s, total {time.perf_counter() - tf:.1f}s")
            save_rows += _savings_rows(cfg, di, spec, instances, metrics, analytic_rows, losses)
    curves = pd.concat(curve_rows, ignore_index=True) if curve_rows else pd.DataFrame()
    analytic = pd.DataFrame(analytic_rows)
    if len(analytic):
        analytic["savings"] = 1 - analytic.variance / analytic.variance_passive
    return ExperimentResults(curves, analytic, pd.DataFrame(save_rows), cost_samples,
                             time.perf_counter() - t0, cfg)


def _simulate_fold(cfg, di, spec, fold, fm, instances, metrics, curve_rows, analytic_rows, cost_samples, losses,
                   bar) -> None:
    """:func:`run` on one fold: every instance, metric and method simulated; rows appended to the lists."""
    grid = cfg.grid(spec.name)
    for ii, inst in enumerate(instances):
        for mi, metric in enumerate(metrics):
            prob = build_problem(fm, inst, metric, cost_model=spec.cost_model,
                                 rng=_seed(cfg, di, fold, ii, mi, 99))
            if inst.key == "a_rf" and fold == cfg.folds[0]:
                cost_samples[(spec.name, metric)] = prob.costs.cost.copy()
            lam = prob.costs.cost
            common = dict(dataset=spec.name, fold=fold, scenario=inst.scenario, instance=inst.key,
                          metric=metric, pool_queries=prob.p.size, target=prob.target)
            vp = analytic_variance(prob.values, prob.p, prob.p, lam)
            for ki, mname in enumerate(cfg.methods):
                method = get_method(mname)
                v = np.nan  # no query-level analytic variance for a document-level design
                if method.unit == "query":
                    v = analytic_variance(prob.values, prob.p,
                                          method_distribution(prob, method, defensive=cfg.defensive), lam)
                analytic_rows.append(dict(common, method=mname, variance=v, variance_passive=vp))
                summ, loss = simulate(prob, method, grid, cfg.n_reps, _seed(cfg, di, fold, ii, mi, ki),
                                      defensive=cfg.defensive)
                meta = dict(dataset=spec.name, fold=fold, scenario=inst.scenario, instance=inst.key,
                            metric=metric, method=mname)
                summ = pd.concat([pd.DataFrame({k: [v] * len(summ) for k, v in meta.items()}), summ], axis=1)
                summ["n_reps"] = cfg.n_reps
                summ["target"] = prob.target
                summ["pool_queries"] = prob.p.size
                curve_rows.append(summ)
                losses.setdefault((inst.key, metric, mname), []).append(loss)
                bar.update(1)
            qo = oracle_distribution(prob.values, prob.p, lam)
            analytic_rows.append(dict(common, method="oracle",
                                      variance=analytic_variance(prob.values, prob.p, qo, lam),
                                      variance_passive=vp))


def _savings_rows(cfg, di, spec, instances, metrics, analytic_rows, losses) -> list:
    """:func:`run`'s savings rows of one dataset, from its folds' analytic variances and losses."""
    grid = cfg.grid(spec.name)
    ref = cfg.reference(spec.name)
    rows = []
    an = pd.DataFrame([r for r in analytic_rows if r["dataset"] == spec.name])
    for ii, inst in enumerate(instances):
        for mi, metric in enumerate(metrics):
            sub = an[(an.instance == inst.key) & (an.metric == metric)]
            vpass = sub[sub.method == "passive"].variance.sum()
            oracle = 1 - sub[sub.method == "oracle"].variance.sum() / vpass if vpass > 0 else np.nan
            for ki, mname in enumerate(cfg.methods):
                if mname == "passive":
                    continue
                vm = sub[sub.method == mname].variance.sum(min_count=1)  # NaN for a document-level design
                per_fold = 1 - sub[sub.method == mname].variance.values / sub[sub.method == "passive"].variance.values
                row = dict(dataset=spec.name, scenario=inst.scenario, instance=inst.key, title=inst.title,
                           metric=metric, method=mname, reference_budget=ref)
                for measure in ("abs_error", "selection_error"):
                    if measure == "selection_error" and not inst.is_pair:
                        continue
                    s = label_savings(grid, [l[measure] for l in losses[(inst.key, metric, mname)]],
                                      [l[measure] for l in losses[(inst.key, metric, "passive")]],
                                      ref, n_boot=cfg.n_boot, rng=_seed(cfg, di, ii, mi, ki, 7))
                    tag = "sel" if measure == "selection_error" else "abs"
                    row.update({f"{tag}_{k}": v for k, v in s.items()})
                some = bool(np.isfinite(per_fold).any())  # a document-level design has no analytic variance
                row.update(analytic_savings=1 - vm / vpass if vpass > 0 else np.nan,
                           analytic_min_fold=float(np.nanmin(per_fold)) if some else np.nan,
                           analytic_max_fold=float(np.nanmax(per_fold)) if some else np.nan,
                           oracle_savings=oracle)
                rows.append(row)
    return rows


# --------------------------------------------------------------------------- investigation


def _predict(prob: Problem, probs):
    """The problem's target predicted under other probabilities."""
    kind = "difference" if len(prob.rankings) == 2 else "mean"
    return make_target(kind, prob.rankings, prob.metric).predict(probs, prob.p)


def _temper(probs, temperature):
    z = np.log(np.clip(probs, 1e-300, None)) / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _pooled(rows, key_cols):
    df = pd.DataFrame(rows)
    g = df.groupby(key_cols, sort=False)
    out = g.agg(variance=("variance", "sum"), variance_passive=("variance_passive", "sum"),
                min_fold=("savings", "min"), max_fold=("savings", "max")).reset_index()
    out["savings"] = 1 - out.variance / out.variance_passive
    return out


def investigate(cfg: ExperimentConfig, *, progress: bool | None = None,
                log: Callable[[str], None] | None = None) -> dict:
    """Why does (or doesn't) active sampling save labels?  Analytic what-if analysis.

    Uses the analytic savings ``1 - V(q)/V(p)`` (no Monte-Carlo noise) on the
    same folds and tasks as :func:`run`, varying one ingredient at a time:

    * ``defensive`` weight of the mixture with ``p`` (0 .. 0.5);
    * ``temperature`` of the relevance model (``p^(1/T)`` renormalized:
      T < 1 sharpens, T > 1 flattens) -- sensitivity to calibration;
    * ``costs``: the dataset's cost model vs a constant cost per document vs
      one unit per query;
    * ``model``: each relevance model alone instead of the mixture (pairs).

    and reports query-level diagnostics of the relevance model: correlation of
    predicted ``E[L|x]`` with the true ``L(x)``, of the predicted
    ``sqrt(E[(L-R)^2|x])`` with the true ``|L(x) - R|`` (what ``q`` needs),
    and the ratio of mean predicted to mean true ``(L - R)^2``.

    Parameters
    ----------
    cfg : ExperimentConfig
    progress, log
        As in :func:`run` (a bar step per instance and metric).

    Returns
    -------
    dict with DataFrames ``variants`` (pooled over folds) and ``diagnostics``
    (mean over folds).
    """
    progress = progress_iv(progress)
    say = _logger(log)
    rows, diag = [], []
    metrics = [_metric_label(m) for m in cfg.metrics]
    steps = len(cfg.datasets) * len(cfg.folds) * len(cfg.instances()) * len(metrics)
    with progress_bar(total=steps, desc="investigate", unit="task", enabled=progress) as bar:
        for di, ds in enumerate(cfg.datasets):
            spec = _spec_iv(ds)
            for fold in cfg.folds:
                bar.set_postfix_str(f"{spec.name} fold {fold}", refresh=False)
                fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
                for ii, inst in enumerate(cfg.instances()):
                    for mi, metric in enumerate(metrics):
                        # the problem run() simulates (seeded: the index update removes documents at random)
                        prob = build_problem(fm, inst, metric, cost_model=spec.cost_model,
                                             rng=_seed(cfg, di, fold, ii, mi, 99))
                        rows_, diag_ = _investigate_task(cfg, spec, fold, fm, inst, prob)
                        rows += rows_
                        diag.append(diag_)
                        bar.update(1)
                say(f"investigate {spec.name} fold {fold} done")
    variants = _pooled(rows, ["dataset", "instance", "metric", "variant", "value"])
    diagnostics = pd.DataFrame(diag).groupby(["dataset", "instance", "metric"], sort=False).mean(
        numeric_only=True).drop(columns="fold").reset_index()
    return {"variants": variants, "diagnostics": diagnostics}


def _investigate_task(cfg, spec, fold, fm, inst, prob: Problem) -> tuple[list, dict]:
    """:func:`investigate` on one problem (instance and metric) of a fold: its variant rows and diagnostics row."""
    rows: list = []
    metric = str(prob.metric)
    p, lam, L = prob.p, prob.costs.cost, prob.values
    vp = analytic_variance(L, p, p, lam)
    base = dict(dataset=spec.name, fold=fold, instance=inst.key, metric=metric)

    def add(variant, value, q, lam_eval=lam, vpass=vp):
        v = analytic_variance(L, p, q, lam_eval)
        rows.append(dict(base, variant=variant, value=str(value), variance=v,
                         variance_passive=vpass, savings=1 - v / vpass if vpass > 0 else np.nan))

    pred = prob.predictions["model"]
    mean, var, sq = pred.mean[:, 0], pred.variance, pred.sq_error
    for d in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5):
        add("defensive", d, optimal_distribution(sq, lam, p, defensive=d))
    for t in (0.5, 1.0, 2.0):
        sq_t = _predict(prob, _temper(prob.probs, t)).sq_error
        add("temperature", t, optimal_distribution(sq_t, lam, p, defensive=cfg.defensive))
    for cm in dict.fromkeys([spec.cost_model, "constant", "per_query"]):
        if cm == "per_query":
            lam_c = np.ones_like(lam)
        else:
            dc, _ = document_costs(fm.pool, fm.pool.n_docs, cm)
            lam_c = query_costs(dc, list(prob.rankings)).cost
        vpc = analytic_variance(L, p, p, lam_c)
        add("costs", cm, optimal_distribution(sq, lam_c, p, defensive=cfg.defensive), lam_c, vpc)
    if len(inst.models) > 1:
        for mname in inst.models:
            sq_m = _predict(prob, fm.probs[mname]).sq_error
            add("model", mname, optimal_distribution(sq_m, lam, p, defensive=cfg.defensive))
    dev = np.abs(L - prob.target)
    diag = dict(
        base,
        corr_mean=_corr(mean, L),
        corr_dev=_corr(np.sqrt(sq), dev),
        pred_over_true_sq=float(sq.mean() / np.mean(dev**2)) if np.mean(dev**2) > 0 else np.nan,
        var_share=float(var.mean() / sq.mean()) if sq.mean() > 0 else np.nan,
        cost_cv=float(lam.std() / lam.mean()),
    )
    return rows, diag


def _corr(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


# --------------------------------------------------------------------------- reporting


def _fmt_pct(x, lo=None, hi=None, cens=0) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    s = f"{100 * x:.0f}%"
    if cens == 1:
        s = f"≤ {s}"
    elif cens == -1:
        s = f"≥ {s}"
    if lo is not None and np.isfinite(lo):
        s += f" [{100 * lo:.0f}, {100 * hi:.0f}]"
    return s


def savings_table(savings: pd.DataFrame, method: str = "active") -> pd.DataFrame:
    """Compact per (dataset, scenario instance, metric) table of one method's savings.

    Columns: simulated savings on the scenario's primary error measure with
    95% bootstrap interval (``≥``/``≤`` when the crossing lies outside the
    budget grid), analytic savings (pooled over folds; min..max over folds),
    the oracle ceiling, and the paper's number.
    """
    s = savings[savings.method == method]
    rows = []
    for _, r in s.iterrows():
        inst = next(i for i in SCENARIOS if i.key == r.instance)
        tag = "sel" if inst.loss == "selection_error" else "abs"
        rows.append({
            "dataset": r.dataset,
            "scenario": r.title,
            "metric": r.metric,
            "measure": "model-selection error" if tag == "sel" else "absolute error",
            "Λ_ref": f"{r.reference_budget:g}",
            "passive error at Λ_ref": f"{r[f'{tag}_passive_error']:.4g}",
            "simulated savings [95% CI]": _fmt_pct(r[f"{tag}_savings"], r[f"{tag}_low"], r[f"{tag}_high"],
                                                   r[f"{tag}_censored"]),
            "abs-error savings": _fmt_pct(r["abs_savings"], r["abs_low"], r["abs_high"], r["abs_censored"])
            if tag == "sel" else "",
            "analytic (fold range)": f"{_fmt_pct(r.analytic_savings)} ({100 * r.analytic_min_fold:.0f}..{100 * r.analytic_max_fold:.0f})",
            "ceiling (true |L-R|)": _fmt_pct(r.oracle_savings),
            "paper (MSLR)": PAPER_SAVINGS.get(r.instance, ""),
        })
    return pd.DataFrame(rows)


def _markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def investigation_markdown(inv: dict) -> str:
    """Markdown section summarizing :func:`investigate` (active method, pooled over folds)."""
    v = inv["variants"].copy()
    v["col"] = v.variant + "=" + v.value
    tab = v.pivot_table(index=["dataset", "instance", "metric"], columns="col", values="savings", sort=False)
    tab = (100 * tab).round(0).astype("Int64").astype(str) + "%"
    tab = tab.reset_index()
    d = inv["diagnostics"].round(2)
    return "\n".join([
        "## Why active does or does not win: analytic what-if (savings 1 − V(q)/V(p), pooled over folds)", "",
        "Each column changes one ingredient of `active` (defensive weight; temperature T of the relevance "
        "model, p^(1/T) renormalized, T<1 sharper, T>1 flatter; cost model — `per_query` charges 1 per query, "
        "i.e. both V(q) and V(p) are evaluated under uniform costs; `model` = one of the two models instead of "
        "their mixture).", "",
        _markdown(tab), "",
        "Query-level diagnostics of the relevance model (mean over folds): `corr_mean` = corr(predicted "
        "E[L|x], true L(x)); `corr_dev` = corr(predicted sqrt E[(L−R)²|x], true |L(x)−R|) — what q* needs; "
        "`pred_over_true_sq` = mean predicted / mean true (L−R)² (1 = calibrated on average); `var_share` = "
        "share of the predicted E[(L−R)²|x] that is Var[L|x]; `cost_cv` = coefficient of variation of λ(x).", "",
        _markdown(d), ""])


def write_outputs(res: ExperimentResults, out_dir, *, figures: bool = True, command: str | None = None,
                  investigation: dict | None = None) -> list[str]:
    """Write CSVs, figures and ``savings.md`` into ``out_dir``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, df in (("curves.csv", res.curves), ("analytic.csv", res.analytic), ("savings.csv", res.savings)):
        df.to_csv(out / name, index=False)
        paths.append(str(out / name))
    if figures:
        from . import plots

        paths += plots.all_figures(res, out, title_map={s.key: s.title for s in SCENARIOS})
    md = ["# Label savings of active evaluation (activerank reproduction of Sawade et al. 2012)", ""]
    if command:
        md += [f"Regenerate: `{command}` (runtime {res.seconds / 60:.1f} min).", ""]
    cfg = res.config
    if cfg is not None:
        md += [f"Settings: folds {list(cfg.folds)} (training partition rotated; pool = the other four), "
               f"{cfg.n_reps} repetitions per budget, defensive weight {cfg.defensive}, "
               f"forests of {cfg.n_trees} trees.", ""]
        for ds in cfg.datasets:
            spec = DATASETS[ds]
            grid = ", ".join(f"{b:g}" for b in cfg.grid(ds))
            md.append(f"- **{ds}** cost model: {spec.cost_note}; budget grid [{grid}], "
                      f"reference budget Λ = {cfg.reference(ds):g} (mean query cost = 1).")
        md.append("")
    md += ["Savings = 1 − (budget active needs to reach passive's error at the reference budget) / "
           "(reference budget). Interval: 95% bootstrap over repetitions. ≥ / ≤: the crossing lies "
           "outside the budget grid (bound). Analytic: 1 − V(q)/V(p) with the pool's true L(x), pooled "
           "over folds (range over folds). Ceiling: the same with the true |L − R| in q.", ""]
    for method in [m for m in (cfg.methods if cfg else ["active"]) if m != "passive"]:
        tab = savings_table(res.savings, method)
        if len(tab):
            md += [f"## Method `{method}`", "", _markdown(tab), ""]
    if investigation is not None:
        for name, df in investigation.items():
            df.to_csv(out / f"investigation_{name}.csv", index=False)
            paths.append(str(out / f"investigation_{name}.csv"))
        md.append(investigation_markdown(investigation))
    (out / "savings.md").write_text("\n".join(md))
    paths.append(str(out / "savings.md"))
    return paths


def _parse_budgets(text):
    out = {}
    for part in text.split(";"):
        if part.strip():
            ds, _, vals = part.partition(":")
            out[ds.strip()] = tuple(float(v) for v in vals.split(","))
    return out


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``activerank experiment`` / ``python -m activerank.experiments``."""
    ap = argparse.ArgumentParser(
        prog="activerank experiment",
        description="Reproduce Sawade et al. (2012) §5 on LETOR data: error curves, label savings, figures.")
    ap.add_argument("--datasets", default="mq2008,ohsumed",
                    help="comma-separated data sets (default %(default)s; also trec-news)")
    ap.add_argument("--data", metavar="DIR", default=None,
                    help="data root with mq2008/, ohsumed-letor3/, trec-news-2018-fastrank/ (default: the "
                         "environment variable ACTIVERANK_DATA)")
    ap.add_argument("--out", default="benchmarks/results", help="output directory (default %(default)s)")
    ap.add_argument("--folds", default="1,2,3,4,5", help="training partitions (default %(default)s)")
    ap.add_argument("--reps", type=int, default=1000, help="repetitions per budget (default %(default)s)")
    ap.add_argument("--metrics", default="err@10,dcg@10,err,dcg",
                    help="comma-separated metrics with exact moments (default %(default)s)")
    ap.add_argument("--methods", default="passive,active,active_uniform_model,active_uniform_costs",
                    help="comma-separated methods, passive included (default %(default)s)")
    ap.add_argument("--scenarios", default=",".join(s.key for s in SCENARIOS),
                    help="instance keys or letters a-d")
    ap.add_argument("--budgets", default="", help="per-dataset grids, e.g. 'mq2008:10,20,50;ohsumed:5,10'")
    ap.add_argument("--reference", default="", help="per-dataset reference budget, e.g. 'mq2008:100'")
    ap.add_argument("--defensive", type=float, default=DEFAULT_DEFENSIVE,
                    help="weight of p mixed into q (default %(default)s)")
    ap.add_argument("--n-trees", type=int, default=50, help="trees of the random forests (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="seed of everything random (default %(default)s)")
    ap.add_argument("--n-boot", type=int, default=300,
                    help="bootstrap repetitions of the savings intervals (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel jobs of the model fits (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="smaller tuning grids")
    ap.add_argument("--no-cache", action="store_true", help="do not cache fitted models' predictions")
    ap.add_argument("--no-figures", action="store_true",
                    help="write no figures (without the 'plots' extra, matplotlib is not installed)")
    ap.add_argument("--investigate", action="store_true",
                    help="also run the analytic what-if analysis (defensive weight, calibration, costs, model)")
    return ap


def _metric_label(metric) -> str:
    """A validated metric, labelled as the configuration spells it (as the tables and figure files of earlier
    runs are: "err@10", not the canonical "err(ymax=scale)@10")."""
    parsed = parse_metric(metric, require_moments=True)
    return metric.strip() if isinstance(metric, str) else str(parsed)


def config_from_args(args) -> ExperimentConfig:
    """:class:`ExperimentConfig` from parsed command-line arguments."""
    split = lambda s: tuple(x.strip() for x in s.split(",") if x.strip())  # noqa: E731
    refs = {k: v[0] for k, v in _parse_budgets(args.reference).items()}
    return ExperimentConfig(
        datasets=split(args.datasets), folds=tuple(int(f) for f in split(args.folds)), n_reps=args.reps,
        metrics=split(args.metrics), methods=split(args.methods), scenarios=split(args.scenarios),
        budgets=_parse_budgets(args.budgets), reference_budget=refs, defensive=args.defensive,
        n_trees=args.n_trees, seed=args.seed, n_boot=args.n_boot, n_jobs=args.jobs, quick=args.quick,
        cache_dir=None if args.no_cache else str(Path(args.out) / "cache"), data_root=args.data)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    t0 = time.perf_counter()
    args = build_parser().parse_args(argv)
    cfg = config_from_args(args)
    command = "python -m activerank.experiments " + " ".join(sys.argv[1:] if argv is None else argv)
    from ..datasets import DatasetNotFoundError

    try:
        res = run(cfg, log=_print_flush)
        inv = investigate(cfg, log=_print_flush) if args.investigate else None
    except DatasetNotFoundError as exc:  # the one error a first run meets: say what to set, no traceback
        print(f"activerank experiment: error: {exc}", file=sys.stderr)
        return 2
    res.seconds = time.perf_counter() - t0
    paths = write_outputs(res, args.out, figures=not args.no_figures, command=command.strip(), investigation=inv)
    print(f"done in {res.seconds:.1f}s; wrote {len(paths)} files to {args.out}")
    for method in [m for m in cfg.methods if m != "passive"][:1]:
        print(savings_table(res.savings, method).to_string(index=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
