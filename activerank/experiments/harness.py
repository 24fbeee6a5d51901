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
plug-in (:meth:`activerank.design.kinds.documents.designs.DocumentDesign.simulate`) on
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

The harness is spread over sibling modules, each re-exported here:
:mod:`.data` (data sets), :mod:`.scenarios`, :mod:`.folds` (models per
fold), :mod:`.problems` (a task on a pool, a method's distribution and
estimator), :mod:`.simulation`, :mod:`.savings` (analytic and simulated),
:mod:`.config` (settings and results) and :mod:`.reporting`.  This module
is the driver: :func:`run`, :func:`investigate` and the command line.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .._progress import outside_bars, progress_bar, progress_iv
from ..design.costs import document_costs, query_costs
from ..design.methods import get_method
from ..design.sampling import DEFAULT_DEFENSIVE, optimal_distribution
from ..design.targets import make_target
from ..metrics import parse_metric
# every public name of the harness stays importable from here, also those of the sibling modules
from .config import ExperimentConfig, ExperimentResults
from .data import DATASETS, DatasetSpec, _spec_iv, default_data_root, load_dataset
from .folds import CACHE_VERSION, FoldModels, fit_fold
from .problems import Problem, build_problem, method_distribution, method_estimate
from .reporting import investigation_markdown, savings_table, write_outputs
from .savings import (
    analytic_savings,
    analytic_variance,
    budget_to_reach,
    label_savings,
    oracle_distribution,
    oracle_savings,
)
from .scenarios import PAPER_SAVINGS, SCENARIOS, ScenarioInstance
from .simulation import simulate

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
