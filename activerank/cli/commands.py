"""Command line: ``activerank demo | estimate | compare | campaign ... | experiment ...``.

``estimate``/``compare`` work on LETOR files and answer judgments from the
file's own labels (a simulation of the labeling process: what would the
estimate have been with this budget?).  Real annotators use ``campaign``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ._common import (CLIError, cli_warnings, load_letor_file, n_grades_arg, nonneg_int, positive_float,
                      probability_open, scores_from_spec, write_trace)

# the API's default (activerank.estimate / compare), on in-memory and Parquet pools alike
DEFAULT_METHOD = "active_wor"

__all__ = ["build_parser", "main"]


def _model(args, data):
    from ..relevance.models import make_relevance_model

    train = load_letor_file(args.train, n_grades=data.n_grades) if args.train else None
    model = make_relevance_model(args.model, data.n_grades, random_state=args.seed)
    if args.model == "uniform":
        return model.fit(data.X, np.zeros(data.n_docs, dtype=int))
    if train is None:
        raise CLIError(f"--model {args.model} needs --train FILE with labeled training queries.")
    return model.fit(train.X, train.labels)


def _common(p):
    p.add_argument("pool", help="LETOR/SVMlight file with the queries to evaluate (its labels act as the annotator), "
                                "or a Parquet file or directory of them (a distributed pool, see --probs-columns)")
    p.add_argument("--train", help="labeled LETOR file to fit the relevance model on")
    p.add_argument("--model", default="lightgbm",
                   help="relevance model: lightgbm, rf_regression, rf_classifier, ordered_logit, logistic, uniform")
    p.add_argument("--budget", type=positive_float, required=True,
                   help="labeling budget in mean-query-cost units")
    p.add_argument("--metric", default="err@10", help="dcg@k or err@k (default err@10)")
    from ..design.methods import method_names

    names = (*method_names(), "auto")
    p.add_argument("--method", default=None, choices=names, metavar="METHOD",
                   help="sampling/estimation method, one of: " + ", ".join(names) + " (default active_wor; "
                        "Parquet pools take query-level methods only)")
    p.add_argument("--costs", default="auto", help="auto, log_length, constant or uniform")
    p.add_argument("--grades", type=n_grades_arg, default=None, help="number of grades of the label scale")
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed of the draws and the model (default 0)")
    p.add_argument("--confidence", type=probability_open, default=0.95,
                   help="confidence level of the interval (default 0.95)")
    p.add_argument("--ci", default="auto", choices=("auto", "t", "t_draws", "bootstrap", "normal"),
                   help="interval: t_draws (auto, the default: per-draw SE with the model's prior, t with the "
                        "effective number of distinct queries), t (distinct-query cluster SE), bootstrap "
                        "(studentized over distinct queries, asymmetric; one ranker or a pair) or the per-draw "
                        "normal one")
    p.add_argument("--trace", help="write the draw trace to this CSV file")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --trace file even if it is not a previous trace (inputs never)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    dist = p.add_argument_group("Parquet pools (activerank.distributed; needs the 'dask' extra)")
    dist.add_argument("--scheduler", help="Dask scheduler address (default: Dask's local threads)")
    dist.add_argument("--probs-columns", help="comma-separated probability columns, one per grade (required)")
    dist.add_argument("--labels-column", default="label", help="grade column acting as the annotator (default label)")
    dist.add_argument("--query-column", default="query_id", help="query id column (default query_id)")
    dist.add_argument("--doc-column", default="doc_id", help="document id column (default doc_id)")
    dist.add_argument("--cost-column", help="per-document cost column")
    dist.add_argument("--length-column", help="document length column (for --costs log_length)")


def _report(res, args, point_name):
    ci = res.confidence_interval(args.confidence)
    out = {point_name: getattr(res, point_name), "standard_error": res.standard_error,
           "ci_low": ci.low, "ci_high": ci.high, "confidence_level": args.confidence,
           "n_queries": res.n_queries, "n_draws": res.n_draws, "cost_spent": res.cost_spent,
           "budget": res.budget, "effective_sample_size": res.effective_sample_size,
           "metric": res.metric, "method": res.method, "ci": res.ci, "dof": None if res.dof == float("inf") else res.dof}
    if args.trace:
        write_trace(args.trace, res.trace, protected=[p for p in (args.pool, args.train) if p],
                    force=args.force, protected_name="an input file")
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        kind = f"{res.ci}, {res.dof:.3g} dof" if res.ci in ("t", "t_draws") else res.ci
        print(f"{res.metric} {point_name}: {out[point_name]:.4f} ± {res.standard_error:.4f} (SE); "
              f"{args.confidence:.0%} CI [{ci.low:.4f}, {ci.high:.4f}] ({kind})")
        from ..design.methods import get_method

        if get_method(res.method).unit == "query":
            judged = f"{res.n_queries} queries judged in {res.n_draws} draws"
        else:  # documents sampled one by one, or a sequence of documents inside every sampled query
            judged = f"{len(res.trace)} documents judged in {res.n_queries} queries"
        print(f"  {judged}, cost {res.cost_spent:.2f} of {res.budget:g}; method {res.method}; "
              f"ESS {res.effective_sample_size:.1f}")


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
    try:
        import activerank.distributed as ard
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - the extra is not installed
        raise CLIError(f"Parquet pools need the 'dask' extra (pip install \"activerank[dask]\"): {exc}") from None
    pool = ard.DaskPool.from_parquet(args.pool, query=args.query_column, document=args.doc_column,
                                     cost=args.cost_column, length=args.length_column)
    probs = [c.strip() for c in args.probs_columns.split(",") if c.strip()]
    common = dict(budget=args.budget, metric=args.metric, method=args.method or DEFAULT_METHOD,
                  costs=args.costs, rng=args.seed,
                  ci=args.ci)
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


def _cmd_estimate(args):
    from ..api import estimate
    from ..labelers import KnownLabels

    if _is_parquet(args.pool):
        return _report(_distributed(args, "mean"), args, "estimate")
    data = load_letor_file(args.pool, args.grades)
    model = _model(args, data)
    probs = model.predict_proba(data.X)
    res = estimate(data, scores_from_spec(args.scores, data, probs), probs,
                   KnownLabels.from_data(data), budget=args.budget, metric=args.metric,
                   method=args.method or DEFAULT_METHOD, costs=args.costs, rng=args.seed, ci=args.ci)
    _report(res, args, "estimate")


def _cmd_compare(args):
    from ..api import compare
    from ..labelers import KnownLabels

    if _is_parquet(args.pool):
        return _report(_distributed(args, "difference"), args, "difference")
    data = load_letor_file(args.pool, args.grades)
    model = _model(args, data)
    probs = model.predict_proba(data.X)
    res = compare(data, scores_from_spec(args.scores_a, data, probs, option="--scores-a"),
                  scores_from_spec(args.scores_b, data, probs, option="--scores-b"),
                  probs, KnownLabels.from_data(data), budget=args.budget,
                  metric=args.metric, method=args.method or DEFAULT_METHOD, costs=args.costs, rng=args.seed,
                  judge=args.judge or "changeable",
                  ci=args.ci)
    _report(res, args, "difference")


def _cmd_demo(args):
    from ..demo import run_demo

    run_demo(budget=args.budget, seed=args.seed)


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = argparse.ArgumentParser(prog="activerank", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run an active estimate on the shipped MQ2008 sample")
    demo.add_argument("--budget", type=positive_float, default=12.0)
    demo.add_argument("--seed", type=nonneg_int, default=0)
    demo.set_defaults(func=_cmd_demo)

    est = sub.add_parser("estimate", help="estimate one ranker's mean metric from a label budget")
    _common(est)
    est.add_argument("--scores", default="model",
                     help="model | feature:N | file:PATH | run:PATH[#TAG] (default model); column:NAME for Parquet")
    est.set_defaults(func=_cmd_estimate)

    cmp = sub.add_parser("compare", help="estimate the difference between two rankers")
    _common(cmp)
    cmp.add_argument("--scores-a", required=True, help="model | feature:N | file:PATH; column:NAME for Parquet")
    cmp.add_argument("--scores-b", required=True, help="model | feature:N | file:PATH; column:NAME for Parquet")
    cmp.add_argument("--judge", default=None, choices=("changeable", "all"),
                     help="judge only the documents that can change the difference (default for LETOR pools), "
                          "or all (Parquet pools: all)")
    cmp.set_defaults(func=_cmd_compare)

    try:
        from .campaign import add_campaign_parser
    except ImportError:  # campaign support not installed in this build
        pass
    else:
        add_campaign_parser(sub)
    # listed for --help only: main() hands `experiment ...` to activerank.experiments.harness.main
    sub.add_parser("experiment", help="reproduce the paper's experiments on LETOR data "
                                      "(see `activerank experiment --help`)")
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["experiment"]:
        # the experiment harness owns its whole argument list (including --help)
        from ..experiments.harness import main as experiment_main

        return int(experiment_main(argv[1:]) or 0)
    parser = build_parser()
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
