"""Command line: ``activerank demo | estimate | compare | plan | campaign ... | experiment ...``.

``estimate``/``compare`` work on LETOR files (or Parquet pools) and answer
judgments from the pool's own labels (a simulation of the labeling process:
what would the estimate have been with this budget?).  Real annotators use
``campaign``.  The help texts are plain text written for the terminal, not this
docstring.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from ._common import (CLIError, cli_warnings, load_letor_file, n_grades_arg, nonneg_int, positive_float,
                      positive_int, probability_open, refuse_input_as_output, score_spec_path, scores_from_spec,
                      write_trace)

# the API's default (activerank.estimate / compare), on in-memory and Parquet pools alike
DEFAULT_METHOD = "auto"
DEFAULT_MODEL = "lightgbm"
COSTS = ("auto", "constant", "log_length", "uniform")

__all__ = ["build_parser", "main"]

DESCRIPTION = """\
Estimate a ranking metric (DCG, ERR, nDCG, P@k, ...) of a ranker, or the
difference between two rankers, from few relevance judgments: active
evaluation chooses which queries to judge within a labeling budget and
reports the estimate with a standard error and a confidence interval."""

EPILOG = """\
start here:
  activerank demo               a real estimate on the MQ2008 sample shipped
                                with activerank
  activerank COMMAND --help     what a command does and its options

estimate and compare simulate the judging: the labels in the pool file answer.
To judge with real annotators, use 'activerank campaign'."""

_POOL_TEXT = """\
The pool's own labels answer the judgments: a simulation of what the estimate
would have been with this budget.  To judge with real annotators, use
'activerank campaign'."""

ESTIMATE_DESCRIPTION = """\
Estimate one ranker's mean metric over the queries of a pool from a labeling
budget.

""" + _POOL_TEXT
COMPARE_DESCRIPTION = """\
Estimate the difference a - b between two rankers' mean metric over the
queries of a pool (positive: ranker a is better) from a labeling budget.

""" + _POOL_TEXT

PARQUET_TEXT = """\
A Parquet file or folder as POOL: one row per (query, document), every query's
rows adjacent within one partition (activerank.distributed; needs the 'dask'
extra)."""

ESTIMATE_EPILOG = """\
examples:
  activerank estimate pool.txt --train train.txt --budget 20
  activerank estimate pool.txt --model uniform --scores feature:25 --metric ndcg@10 --budget 20
  activerank estimate pool.txt --train train.txt --scores run:bm25.run --budget 20 --json"""

COMPARE_EPILOG = """\
examples:
  activerank compare pool.txt --train train.txt --scores-a model --scores-b feature:25 --budget 20
  activerank compare pool.txt --model uniform --scores-a run:new.run --scores-b run:old.run --budget 20"""

PLAN_DESCRIPTION = """\
Plan before buying any label: each design's predicted standard error and
interval half-width at a budget (--budget), and the budget a target half-width
needs (--half-width), from the relevance model's predicted variance (what
--method auto chooses by).  These are the model's expectations: a
miscalibrated model misjudges them.  With --scores-b the plan is for the
difference --scores minus --scores-b.  LETOR pools; nothing is judged."""

PLAN_EPILOG = """\
examples:
  activerank plan pool.txt --train train.txt --budget 20 --half-width 0.02
  activerank plan pool.txt --train train.txt --scores-b feature:25 --metric dcg@10 --half-width 0.5 --json"""

DEMO_DESCRIPTION = """\
A real active estimate on the MQ2008 sample shipped with activerank: a relevance
model (ordered logit) is fitted on 40 training queries; the pool is 30 other
queries whose labels answer the judgments.  Prints the estimated ERR@10 of the
model's ranking and its difference to BM25, each with its standard error and
95% interval, next to the true values from all labels."""

SCORES_HELP = ("model (the expected gain under the relevance model), feature:N (the pool's "
               "feature N, 1-based, higher ranks first), file:PATH (one score per line of the pool file) or "
               "run:PATH[#TAG] (a TREC run, matched by document id; TAG picks one run of several in the file); "
               "column:NAME for a Parquet pool")


def _metric_help() -> str:
    """The ``--metric`` help, generated from the metric registry."""
    from ..metrics.registry import METRICS, describe_metrics

    rows = describe_metrics()
    listed = "; ".join(r["name"] + ("@k" if r["needs_cutoff"] else "") + (f" ({r['options']})" if r["options"] else "")
                       for r in rows)
    exact = ", ".join(name for name, d in METRICS.items() if d.has_exact_moments)
    return (f"the metric, NAME[(OPTION=VALUE,...)][@k] (default err@10; without @k the whole list). "
            f"Metrics (options with their defaults): {listed}. E.g. ndcg@10, p(rel=2)@5, rbp(p=0.9). "
            f"Parquet pools take the metrics with exact moments: {exact}.").replace("%", "%%")


def _method_help() -> str:
    """The ``--method`` help, generated from the method registry."""
    from ..design.methods import get_method, method_names

    by_unit: dict = {}
    for name in method_names():
        by_unit.setdefault(get_method(name).unit, []).append(name)
    units = {"query": "whole queries", "document": "single documents (additive metrics)",
             "prefix": "the top documents of sampled queries (cascade metrics: err, rr)"}
    groups = "; ".join(f"{'J' if i == 0 else 'j'}udging {units.get(u, u)}: {', '.join(names)}" for i, (u, names) in enumerate(by_unit.items()))
    return (f"sampling and estimation method (default {DEFAULT_METHOD}: the design with the smallest variance the "
            f"relevance model predicts at the budget and cost model, reported with the result). {groups}. Parquet "
            "pools take the whole-query methods, doc_dyn and doc_stat, and auto (which skips prefix there).")


def _model(args, data):
    from ..relevance.models import make_relevance_model

    if args.model == "uniform":  # no fitting: every grade equally likely
        return make_relevance_model("uniform", data.n_grades, random_state=args.seed).fit(
            data.X, np.zeros(data.n_docs, dtype=int))
    if not args.train:
        default = " (the default)" if args.model == DEFAULT_MODEL else ""
        raise CLIError(f"--model {args.model}{default} needs --train FILE with labeled training queries "
                       "(or --model uniform, which needs none).")
    train = load_letor_file(args.train, n_grades=data.n_grades)
    return make_relevance_model(args.model, data.n_grades, random_state=args.seed).fit(train.X, train.labels)


def _common(p, scores):
    """The options ``estimate`` and ``compare`` share; ``scores`` adds the ranker option(s) after the pool."""
    from ..relevance.models import MODEL_NAMES

    p.add_argument("pool", metavar="POOL",
                   help="the queries to evaluate: a LETOR/SVMlight file ('label qid:Q 1:v 2:v ...'; its labels "
                        "answer the judgments), or a Parquet file or folder (see 'Parquet pools' below)")
    scores(p)
    model = p.add_argument_group("relevance model (predicts the grades; guides which queries to judge)")
    model.add_argument("--model", metavar="NAME", default=DEFAULT_MODEL, choices=MODEL_NAMES,
                       help=f"one of {', '.join(MODEL_NAMES)} (default {DEFAULT_MODEL}); every model but "
                            "uniform is fitted on --train")
    model.add_argument("--train", metavar="FILE",
                       help="labeled LETOR file of other queries to fit the model on (required unless "
                            "--model uniform)")
    model.add_argument("--grades", metavar="N", type=n_grades_arg, default=None,
                       help="size of the grade scale 0..N-1 (default: the largest label in the pool + 1)")
    _judge_options(p.add_argument_group(
        "external judges (LLMs, cross-encoders: calibrated on human labels into the relevance model; "
        "docs/judges.md)"), "repeat for several judges (LETOR pools)")
    p.add_argument("--qrels", metavar="FILE", default=None,
                   help="human labels already held ('qid Q0 docid grade'; LETOR pools): they cost nothing, enter the "
                        "estimate exactly, are never asked for again, and are what --llm-grades are calibrated on "
                        "first")
    design = p.add_argument_group("budget and design")
    design.add_argument("--budget", metavar="B", type=positive_float, required=True,
                        help="labeling budget, by default in units of the mean cost of judging one whole query "
                             "(with constant costs, about B queries; see --budget-unit); required")
    design.add_argument("--budget-unit", default="queries", choices=("queries", "cost", "documents"),
                        help="what --budget counts: mean query costs (default), the cost model's unit, or "
                             "judgments (documents; needs equal document costs)")
    design.add_argument("--metric", default="err@10", help=_metric_help())
    from ..design.methods import method_names

    names = (*method_names(), "auto")
    design.add_argument("--method", default=None, choices=names, metavar="METHOD", help=_method_help())
    design.add_argument("--costs", default="auto", choices=COSTS, metavar="MODEL",
                        help="cost of judging a document: constant (1 each), log_length (log of the document "
                             "length: --length-feature, or --length-column for Parquet), uniform (1 per query "
                             "whatever its size) or auto (the default: a Parquet pool's --cost-column, else "
                             "log_length when lengths are known, else constant)")
    design.add_argument("--length-feature", metavar="N", type=positive_int, default=None,
                        help="LETOR pools: the feature (1-based) holding the document length")
    design.add_argument("--seed", type=nonneg_int, default=0,
                        help="seed of the draws and of the model fit (default 0)")
    out = p.add_argument_group("output")
    out.add_argument("--confidence", metavar="LEVEL", type=probability_open, default=0.95,
                     help="confidence level of the interval (default 0.95)")
    out.add_argument("--ci", default="auto", choices=("auto", "t", "t_draws", "bootstrap", "normal"),
                     help="kind of interval: auto (the default) = t_draws (Student-t, per-draw standard error, "
                          "degrees of freedom from the effective number of distinct queries; equals t when no "
                          "query repeats, as in a sample without replacement), t (Student-t, cluster standard "
                          "error over the distinct queries), bootstrap (studentized over the distinct queries, "
                          "asymmetric) or normal (per-draw standard error, normal quantiles: the paper's)")
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    out.add_argument("--trace", metavar="FILE",
                     help="also write every draw (query, weight, value, cost, ...) to this CSV file")
    out.add_argument("--force", action="store_true",
                     help="replace an existing --trace FILE even if it is not a previous trace; never one of "
                          "the command's input files")
    dist = p.add_argument_group("Parquet pools", PARQUET_TEXT)
    dist.add_argument("--probs-columns", metavar="COLS",
                      help="comma-separated probability columns, one per grade (required for a Parquet pool)")
    dist.add_argument("--labels-column", metavar="NAME", default="label",
                      help="grade column that answers the judgments (default label)")
    dist.add_argument("--query-column", metavar="NAME", default="query_id", help="query id column (default query_id)")
    dist.add_argument("--doc-column", metavar="NAME", default="doc_id", help="document id column (default doc_id)")
    dist.add_argument("--cost-column", metavar="NAME", help="per-document cost column")
    dist.add_argument("--length-column", metavar="NAME", help="document length column (for --costs log_length)")
    dist.add_argument("--scheduler", metavar="ADDRESS",
                      help="Dask scheduler address, e.g. tcp://host:8786 (default: local threads)")


def _estimate_scores(p):
    p.add_argument("--scores", metavar="SPEC", default="model", help="the ranker (default model): " + SCORES_HELP)


def _compare_scores(p):
    p.add_argument("--scores-a", metavar="SPEC", required=True,
                   help="ranker a (required): " + SCORES_HELP)
    p.add_argument("--scores-b", metavar="SPEC", required=True,
                   help="ranker b (required), as --scores-a; the estimate is a - b")
    p.add_argument("--judge", default=None, choices=("changeable", "all"),
                   help="changeable (the default for LETOR pools): judge only the documents that can change "
                        "the difference, so the budget buys more queries but the rankers' own means are not "
                        "estimated; all: judge every document of a drawn query (per-ranker estimates too; "
                        "always so on Parquet pools)")


# --------------------------------------------------------------------------- running


def _inputs(args) -> list:
    """``(what, path)`` of every file or folder the command reads: none of them may be an output."""
    out = [("the pool", args.pool), ("the --train file", args.train),
           ("the --qrels file", getattr(args, "qrels", None))]
    out += [("a --llm-grades file", path) for path in (getattr(args, "llm_grades", None) or [])]
    for option in ("scores", "scores_a", "scores_b"):
        spec = getattr(args, option, None)
        path = score_spec_path(spec)
        out.append((f"the --{option.replace('_', '-')} file", path))
    return [(what, path) for what, path in out if path]


def _check_outputs(args) -> None:
    if args.trace:
        refuse_input_as_output(args.trace, _inputs(args), option="--trace")


def _is_parquet(path) -> bool:
    import os

    return os.path.isdir(path) or str(path).lower().endswith(".parquet")


def _column_spec(spec: str, option: str) -> str:
    kind, _, name = spec.partition(":")
    if kind != "column" or not name:
        raise CLIError(f"{option} must be 'column:NAME' for a Parquet pool; got {spec!r}.")
    return name


def _distributed(args, kind: str):
    """``estimate``/``compare`` on a Parquet pool: the per-query table on the Dask workers."""
    if not args.probs_columns:
        raise CLIError("a Parquet pool needs --probs-columns (the probability columns, one per grade).")
    if args.llm_grades:
        raise CLIError("--llm-grades is not available on Parquet pools yet; use a LETOR pool, or calibrate the "
                       "judges in Python (activerank.judges) and pass the probabilities as --probs-columns.")
    if args.qrels:
        raise CLIError("--qrels is not available on Parquet pools yet; pass held labels in Python "
                       "(activerank.distributed.estimate(..., judgments=...)).")
    if args.length_feature is not None:
        raise CLIError("--length-feature is for LETOR pools; a Parquet pool names its --length-column.")
    try:
        import activerank.distributed as ard
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - the extra is not installed
        raise CLIError(f"Parquet pools need the 'dask' extra (pip install \"activerank[dask]\"): {exc}") from None
    pool = ard.DaskPool.from_parquet(args.pool, query=args.query_column, document=args.doc_column,
                                     cost=args.cost_column, length=args.length_column)
    probs = [c.strip() for c in args.probs_columns.split(",") if c.strip()]
    if args.budget_unit != "queries":
        raise CLIError("--budget-unit is not available on Parquet pools yet (their budget is in mean query "
                       "costs); omit it.")
    common = dict(budget=args.budget, metric=args.metric, method=args.method or DEFAULT_METHOD,
                  costs=args.costs, rng=args.seed, ci=args.ci)
    if kind == "difference" and args.judge == "changeable":
        raise CLIError("--judge changeable is not available on Parquet pools yet (a distributed comparison judges "
                       "every document of a drawn query); pass --judge all or omit it.")
    labeler = ard.ColumnLabels(args.labels_column)
    client = Client(args.scheduler) if args.scheduler else None
    try:
        if kind == "mean":
            return ard.estimate(pool, _column_spec(args.scores, "--scores"), probs, labeler, **common)
        return ard.compare(pool, _column_spec(args.scores_a, "--scores-a"), _column_spec(args.scores_b, "--scores-b"),
                           probs, labeler, **common)
    finally:
        if client is not None:
            client.close()


def _letor(args, kind: str):
    """``estimate``/``compare`` on a LETOR file, a bar of its steps on a terminal (after ~2 s)."""
    from .._progress import progress_bar
    from ..api import compare, estimate
    from ..labelers import KnownLabels

    steps = ("reading the pool", "fitting the relevance model", "predicting the grades", "sampling and judging")
    with progress_bar(total=len(steps), desc=f"activerank {'estimate' if kind == 'mean' else 'compare'}",
                      unit="step") as bar:
        def step(i):
            bar.set_postfix_str(steps[i], refresh=False)
            if i:
                bar.update(1)

        step(0)
        data = load_letor_file(args.pool, args.grades, length_feature=args.length_feature)
        step(1)
        model = _model(args, data)
        step(2)
        probs = model.predict_proba(data.X)
        step(3)
        common = dict(budget=args.budget, metric=args.metric, method=args.method or DEFAULT_METHOD,
                      costs=args.costs, rng=args.seed, ci=args.ci, budget_unit=args.budget_unit,
                      judges=_judges(args, data), judgments=_held_qrels(args.qrels, data))
        if kind == "mean":
            return estimate(data, scores_from_spec(args.scores, data, probs), probs, KnownLabels.from_data(data),
                            **common)
        return compare(data, scores_from_spec(args.scores_a, data, probs, option="--scores-a"),
                       scores_from_spec(args.scores_b, data, probs, option="--scores-b"), probs,
                       KnownLabels.from_data(data), judge=args.judge or "changeable", **common)


def _judges(args, data):
    """The ``--llm-grades`` judges read against the pool, or None."""
    if not args.llm_grades:
        return None
    from ..judges import read_judge

    levels = args.llm_levels or data.n_grades
    try:
        return [read_judge(path, data, levels=levels) for path in args.llm_grades]
    except (OSError, ValueError) as exc:
        raise CLIError(f"--llm-grades: {exc}") from None


def _number(value):
    """A float for JSON; None for NaN or an infinity (not estimated, or no finite value)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _report(res, args, point_name):
    ci = res.confidence_interval(args.confidence)
    out = {point_name: res.estimate if point_name == "estimate" else res.difference}
    if point_name == "difference":
        out.update(ranker_a=args.scores_a, ranker_b=args.scores_b, estimate_a=_number(res.estimate_a),
                   estimate_b=_number(res.estimate_b))
    else:
        out.update(ranker=args.scores)
    out.update(standard_error=res.standard_error, ci_low=ci.low, ci_high=ci.high, confidence_level=args.confidence,
               n_queries=res.n_queries, n_draws=res.n_draws, cost_spent=res.cost_spent, budget=res.budget,
               budget_unit=res.budget_unit,
               effective_sample_size=res.effective_sample_size, metric=res.metric, method=res.method, ci=res.ci,
               dof=res.dof)
    out = {k: _number(v) if isinstance(v, (float, np.floating)) else v for k, v in out.items()}
    auto = res.trace.attrs.get("auto") if res.trace is not None else None
    out["auto"] = None if auto is None else {  # what method auto chose, and why
        "method": auto["method"], "reason": auto["reason"],
        "predicted_variance": {m: _number(v) for m, v in auto["predicted_variance"].items()}}
    out["judges"] = res.trace.attrs.get("judges") if res.trace is not None else None
    if args.trace:
        write_trace(args.trace, res.trace, protected=[path for _, path in _inputs(args)], force=args.force,
                    protected_name="an input file")
    if args.json:
        print(json.dumps(out, indent=2))
        return
    kind = f"{res.ci}, {res.dof:.3g} dof" if res.ci in ("t", "t_draws") else res.ci
    what = f"{res.metric} difference a - b" if point_name == "difference" else f"{res.metric} estimate"
    print(f"{what}: {out[point_name]:.4f} ± {res.standard_error:.4f} (SE); "
          f"{args.confidence:.0%} CI [{ci.low:.4f}, {ci.high:.4f}] ({kind})")
    if point_name == "difference":
        print(f"  a = {args.scores_a}, b = {args.scores_b}; " + _per_ranker(out))
    from ..design.methods import get_method

    if get_method(res.method).unit == "query":
        judged = f"{res.n_queries} queries judged in {res.n_draws} draws"
    else:  # documents sampled one by one, or a sequence of documents inside every sampled query
        judged = f"{len(res.trace)} documents judged in {res.n_queries} queries"
    print(f"  {judged}, cost {res.cost_spent:.2f} of {res.budget:g} ({res.budget_unit}); method {res.method}; "
          f"ESS {res.effective_sample_size:.1f}")
    if out["auto"] is not None:
        print(f"  method auto chose {res.method}: {out['auto']['reason']}")
    from ..inference._report import judges_note

    if judges_note(res):
        print(f"  {judges_note(res)}")


def _per_ranker(out) -> str:
    if out["estimate_a"] is None or out["estimate_b"] is None:
        return ("the rankers' own means are not estimated (only documents that can change the difference "
                "were judged; --judge all estimates them)")
    return f"estimates a {out['estimate_a']:.4f}, b {out['estimate_b']:.4f}"


def _cmd_estimate(args):
    _check_outputs(args)
    res = _distributed(args, "mean") if _is_parquet(args.pool) else _letor(args, "mean")
    _report(res, args, "estimate")


def _cmd_compare(args):
    _check_outputs(args)
    res = _distributed(args, "difference") if _is_parquet(args.pool) else _letor(args, "difference")
    _report(res, args, "difference")


def _cmd_plan(args):
    from ..api import plan_budget

    if _is_parquet(args.pool):
        raise CLIError("plan takes LETOR pools; a Parquet pool's per-query table is planned through "
                       "activerank.distributed.")
    if args.budget is None and args.half_width is None:
        raise CLIError("plan needs --budget, --half-width or both.")
    data = load_letor_file(args.pool, args.grades, length_feature=args.length_feature)
    probs = _model(args, data).predict_proba(data.X)
    methods = None if not args.methods else [m.strip() for m in args.methods.split(",") if m.strip()]
    scores_b = None if args.scores_b is None else scores_from_spec(args.scores_b, data, probs, option="--scores-b")
    if args.llm_grades and not args.qrels:
        raise CLIError("--llm-grades: the judges are calibrated on human labels; give them with --qrels (at least "
                       "30 labels on judged pairs, e.g. an earlier campaign's qrels).")
    plan = plan_budget(data, scores_from_spec(args.scores, data, probs), probs, scores_b=scores_b,
                       budget=args.budget, target_half_width=args.half_width, metric=args.metric,
                       methods=methods, costs=args.costs, confidence_level=args.confidence,
                       judge=args.judge or "changeable", judgments=_held_qrels(args.qrels, data),
                       judges=_judges(args, data), rng=args.seed)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
        return
    what = f"{plan.metric} {'difference' if scores_b is not None else 'mean'}"
    print(f"plan for the {what} ({args.confidence:.0%} normal intervals, predicted by the relevance model):")
    for i, m in enumerate(plan.methods):
        if plan.notes[i]:
            print(f"  {m:12s} no prediction: {plan.notes[i]}")
            continue
        parts = []
        if plan.budget is not None:
            parts.append(f"SE {plan.predicted_se[i]:.4g}, half-width {plan.half_width[i]:.4g} at budget "
                         f"{plan.budget:g}")
        if plan.target_half_width is not None:
            need = plan.budget_needed[i]
            parts.append(f"half-width {plan.target_half_width:g} needs budget "
                         f"{need:.3g}" if math.isfinite(need) else "target out of reach")
        print(f"  {m:12s} " + "; ".join(parts))
        if plan.judges and math.isfinite(plan.se_without_judges[i]):
            need = plan.budget_equivalent_without_judges[i]
            reach = (f"that half-width needs budget {need:.3g} (the judges save {plan.savings[i]:.0%})"
                     if math.isfinite(need) else "that half-width is out of reach without them")
            print(f"  {'':12s} without the judges: SE {plan.se_without_judges[i]:.4g}; {reach}")
    if plan.judges:
        print(f"  judges {', '.join(plan.judges)} calibrated on the --qrels labels; both predictions are the "
              "calibrated model's")
    if plan.auto is not None:
        print(f"  --method auto would run {plan.auto} ({plan.auto_reason})")


def _plan_parser(sub) -> None:
    from ..relevance.models import MODEL_NAMES

    p = sub.add_parser("plan", help="predicted precision per design at a budget, and the budget a target needs",
                       description=PLAN_DESCRIPTION, epilog=PLAN_EPILOG, formatter_class=_formatter)
    p.add_argument("pool", metavar="POOL", help="the queries to evaluate: a LETOR/SVMlight file")
    p.add_argument("--scores", metavar="SPEC", default="model", help="the ranker (default model): " + SCORES_HELP)
    p.add_argument("--scores-b", metavar="SPEC", default=None,
                   help="a second ranker, as --scores: plan the difference (scores - scores-b)")
    p.add_argument("--judge", default=None, choices=("changeable", "all"), help="with --scores-b, as in compare")
    p.add_argument("--model", metavar="NAME", default=DEFAULT_MODEL, choices=MODEL_NAMES,
                   help=f"relevance model, one of {', '.join(MODEL_NAMES)} (default {DEFAULT_MODEL})")
    p.add_argument("--train", metavar="FILE", help="labeled LETOR file to fit the model on (unless --model uniform)")
    p.add_argument("--grades", metavar="N", type=n_grades_arg, default=None,
                   help="size of the grade scale 0..N-1 (default: the largest label in the pool + 1)")
    p.add_argument("--budget", metavar="B", type=positive_float, default=None,
                   help="the budget to predict the precision at, in mean query costs")
    p.add_argument("--half-width", metavar="H", type=positive_float, default=None,
                   help="the interval half-width wanted: print the budget each design needs for it")
    p.add_argument("--metric", default="err@10", help=_metric_help())
    p.add_argument("--methods", metavar="M1,M2", default=None,
                   help="methods to plan (default: active_wor, active and the design auto weighs for the metric)")
    p.add_argument("--costs", default="auto", choices=COSTS, metavar="MODEL", help="cost model, as in estimate")
    p.add_argument("--length-feature", metavar="N", type=positive_int, default=None,
                   help="the feature (1-based) holding the document length")
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed of the model fit (default 0)")
    p.add_argument("--confidence", metavar="LEVEL", type=probability_open, default=0.95,
                   help="confidence level of the intervals (default 0.95)")
    p.add_argument("--qrels", metavar="FILE", default=None,
                   help="human labels held ('qid Q0 docid grade'): free in every design, and what --llm-grades "
                        "are calibrated on")
    _judge_options(p, "repeat for several judges; needs --qrels: plan on the calibrated judges and print what "
                      "they are predicted to save")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=_cmd_plan)


def _judge_options(group, more: str) -> None:
    """``--llm-grades`` and ``--llm-levels`` (``more``: what the command does with them)."""
    group.add_argument("--llm-grades", metavar="FILE", action="append", default=None,
                       help="a judge's grades of the pool's (query, document) pairs: 'qid Q0 docid grade' lines, "
                            f"or a .tsv/.csv/.jsonl table; {more}")
    group.add_argument("--llm-levels", metavar="N", type=n_grades_arg, default=None,
                       help="the judges' grade scale 0..N-1 (default: the pool's)")


def _held_qrels(path, data):
    """The ``--qrels`` labels of the pool's pairs as ``judgments=`` keyed by the pool's ids (None without the
    option; pairs of other queries or documents are not the pool's and are left out)."""
    if path is None:
        return None
    from ..io.trec import read_qrels

    try:
        labels = read_qrels(path, n_grades=data.n_grades).labels_for(data)
    except (OSError, ValueError) as exc:
        raise CLIError(f"--qrels: {exc}") from None
    rows = np.flatnonzero(labels >= 0)
    if not rows.size:
        raise CLIError(f"--qrels: {path} judges none of the pool's (query, document) pairs (matched by id).")
    from ..pool import pool_iv

    pool = pool_iv(data)
    x = np.searchsorted(np.asarray(pool.offsets), rows, side="right") - 1
    qids, docs = [pool.query_key(int(i)) for i in x], pool.doc_keys(rows)
    held: dict = {}
    for q, d, g in zip(qids, docs, labels[rows].tolist()):
        held.setdefault(q, {})[d] = g
    return held


def _cmd_demo(args):
    from ..demo import run_demo

    run_demo(budget=args.budget, seed=args.seed)
    print("next: the same on your own LETOR files with 'activerank estimate' and 'activerank compare' "
          "(see their --help).")


# --------------------------------------------------------------------------- parser


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = argparse.ArgumentParser(prog="activerank", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=_formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    demo = sub.add_parser("demo", help="a real estimate on the MQ2008 sample shipped with activerank",
                          description=DEMO_DESCRIPTION, formatter_class=_formatter)
    demo.add_argument("--budget", metavar="B", type=positive_float, default=12.0,
                      help="labeling budget in units of the mean cost of judging one query (default 12, about "
                           "a third of the pool)")
    demo.add_argument("--seed", type=nonneg_int, default=0, help="seed of the draws (default 0)")
    demo.set_defaults(func=_cmd_demo)

    est = sub.add_parser("estimate", help="estimate one ranker's mean metric from a labeling budget",
                         description=ESTIMATE_DESCRIPTION, epilog=ESTIMATE_EPILOG, formatter_class=_formatter)
    _common(est, _estimate_scores)
    est.set_defaults(func=_cmd_estimate)

    cmp = sub.add_parser("compare", help="estimate the difference a - b between two rankers",
                         description=COMPARE_DESCRIPTION, epilog=COMPARE_EPILOG, formatter_class=_formatter)
    _common(cmp, _compare_scores)
    cmp.set_defaults(func=_cmd_compare)
    _plan_parser(sub)

    try:
        from .campaign import add_campaign_parser
    except ImportError:  # campaign support not installed in this build
        pass
    else:
        add_campaign_parser(sub)
    # listed for --help only: main() hands `experiment ...` to activerank.experiments.harness.main
    sub.add_parser("experiment", help="reproduce the paper's experiments on the full LETOR data sets "
                                      "(see 'activerank experiment --help')")
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["experiment"]:
        # the experiment harness owns its whole argument list (including --help)
        from ..experiments.harness import main as experiment_main

        return int(experiment_main(argv[1:]) or 0)
    parser = build_parser()
    if not argv:  # a first try without arguments: the whole help (what the commands are), then the error
        parser.print_help(sys.stderr)
        print(file=sys.stderr)
    args = parser.parse_args(argv)
    try:
        with cli_warnings(f"activerank {args.command}"):
            result = args.func(args)
    except (CLIError, ValueError, TypeError, OSError) as exc:
        print(f"activerank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0 if result is None else int(result)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
