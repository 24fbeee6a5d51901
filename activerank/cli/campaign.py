"""``activerank campaign init | export | import | status | estimate | qrels | backup | check``.

A labeling campaign for real annotators, kept in one SQLite file:

1. ``init`` freezes a pool, the ranker(s), the sampling design and the draw
   sequence (from LETOR files, or from TREC run files).
2. ``export`` writes the next tasks (query-document pairs, in draw order) as
   JSONL or CSV.  With a document-level method (``--method doc_dyn``) the
   tasks are the engine's sample of single documents; with ``--method prefix``
   they come in rounds, one document per query whose walk surely fits the
   hard budget (export, import, export again until ``status`` reports every
   query done).
3. ``import`` reads judgments back (JSONL/CSV/qrels), row by row; bad rows are
   reported with their line numbers, good rows are stored; re-importing a
   file is harmless.
4. ``status`` and ``estimate`` report progress and the current estimate.
5. ``qrels`` writes the combined judgments as a TREC qrels file.
6. ``backup`` copies the store safely (SQLite's online backup), even while an
   import runs; ``check`` reports every problem of a store (SQLite's
   integrity, the schema, the design and every judgment against their
   checksums, grades on the scale, the budget ledger, a replay of the sample).

Outputs never destroy data: no output (store, task file, qrels, trace,
backup) may be the campaign file or its journal/WAL/SHM files, nor any file a
campaign command read -- ``init``'s pool, training file, ``--ranker``/
``--baseline`` ``file:``/``run:`` files, runs, qrels and query texts, and the
judgment files ``import`` read -- not even with ``--force``; another existing
file is replaced only if it is a previous output of the same kind (an
unanswered task file, a qrels file, a trace CSV) or empty, otherwise only with
``--force``.  CSV outputs escape cells a spreadsheet would run as formulas
(:func:`activerank.campaign.io.escape_cell`).

``init --qrels`` stores nothing unless every line of the file is valid: each
rejected line is reported with its reason (unknown query id, unknown document
id, grade off the scale, malformed line); ``--allow-unknown`` skips the lines
whose query or document is not in the pool.

Every command opens the store with a quick check; a damaged store is refused
with exit code 3 and a message naming the way out (a backup, ``check``).

Exit codes: 0 success; 1 finished, but some input rows were rejected (import)
or there is nothing to estimate yet; 2 bad input (usage, unreadable or
malformed file, invalid option values); 3 the campaign store is damaged
(``check`` found problems, or a command refused to use the store).

Use :func:`add_campaign_parser` to attach the command to an ``argparse``
parser, or run ``python -m activerank.cli.campaign ...`` directly.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys

import numpy as np

from ._common import (cli_warnings, n_grades_arg, nonneg_int, positive_float, positive_int, probability_closed,
                      probability_open, score_spec_path)

__all__ = ["add_campaign_parser", "main", "run"]

EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_DAMAGED = 0, 1, 2, 3


class CampaignCLIError(Exception):
    """Bad command-line input for a campaign command (exit code 2)."""


# --------------------------------------------------------------------------- init helpers


def _read_query_text(path) -> dict:
    out = {}
    with open(path, encoding="utf-8-sig") as f:
        for i, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            qid, sep, text = line.partition("\t")
            if not sep or not qid.strip():
                raise CampaignCLIError(f"{path}: line {i}: expected 'query_id<TAB>text'.")
            out[qid.strip()] = text.strip()
    return out


def _letor_ranker(spec, data, probs):
    from ._common import CLIError, scores_from_spec

    try:
        return scores_from_spec(spec, data, probs, option="--ranker")
    except CLIError as exc:
        raise CampaignCLIError(str(exc)) from None


def _init_letor(args):
    from ..io.letor import load_letor
    from ..relevance.models import make_relevance_model

    train = None
    n_grades = args.grades
    if args.train:
        train = load_letor(args.train, n_grades=n_grades)
        n_grades = n_grades or train.n_grades
    data = load_letor(args.pool, n_grades=n_grades, length_feature=args.length_feature)
    n_grades = n_grades or data.n_grades
    model_name = args.model or "lightgbm"
    model = make_relevance_model(model_name, n_grades, random_state=args.model_seed)
    if model_name == "uniform":
        model.fit(data.X, np.zeros(data.n_docs, dtype=np.int64))
    elif train is None:
        raise CampaignCLIError(f"--model {model_name} needs --train FILE with labeled training queries "
                               "(or use --model uniform).")
    else:
        if train.n_features != data.n_features:
            raise CampaignCLIError(f"--train has {train.n_features} features but --pool has {data.n_features}.")
        model.fit(train.X, train.labels)
    probs = model.predict_proba(data.X)
    specs = (args.ranker or ["model"]) + ([args.baseline] if args.baseline else [])
    rankers = {spec: _letor_ranker(spec, data, probs) for spec in specs}
    if len(rankers) != len(specs):
        raise CampaignCLIError(f"--ranker and --baseline values must differ; got {specs}.")
    return data, rankers, probs


def _init_trec(args):
    from ..relevance.models import UniformRelevanceModel
    from ..io.trec import read_qrels, read_runs

    if args.model not in (None, "uniform"):
        raise CampaignCLIError("TREC run files carry no features: only --model uniform is possible with --run.")
    if args.ranker:
        raise CampaignCLIError("--ranker is for --pool (LETOR); with --run choose runs with --tag.")
    runs = read_runs(args.run, queries=args.queries)
    names = args.tag or [t for t in runs.names if t != args.baseline]
    if args.baseline:
        names = [t for t in names if t != args.baseline] + [args.baseline]
    unknown = [t for t in names if t not in runs.rankings]
    if unknown:
        raise CampaignCLIError(f"--tag {unknown[0]!r} is not a run tag; the run files hold {list(runs.names)}.")
    if len(names) > 2 and not (args.baseline or args.rank_systems):
        raise CampaignCLIError(f"the run files hold {list(runs.names)}: evaluate one run or compare two "
                               "(choose with --tag), or compare several with --baseline TAG or --rank-systems.")
    n_grades = args.grades
    if n_grades is None and args.qrels:
        n_grades = read_qrels(args.qrels).max_grade + 1
    if n_grades is None or n_grades < 2:
        raise CampaignCLIError("--grades N (size of the grade scale, >= 2) is required with --run "
                               "unless --qrels shows the scale.")
    n_docs = runs.pool.n_docs
    probs = UniformRelevanceModel(n_grades).fit(np.zeros((n_docs, 1)), np.zeros(n_docs, dtype=np.int64)) \
        .predict_proba(np.zeros((n_docs, 1)))
    return runs.pool, {t: runs.rankings[t] for t in names}, probs


def _init_inputs(args) -> dict:
    """Every file ``init`` reads, by role."""
    specs = (args.ranker or []) + ([args.baseline] if args.baseline and args.pool else [])
    roles = {"pool": [args.pool], "train": [args.train], "qrels": [args.qrels], "query_text": [args.query_text],
             "run": list(args.run or []), "scores": [score_spec_path(s) for s in specs],
             "llm_grades": list(args.llm_grades or [])}
    return {role: [p for p in paths if p] for role, paths in roles.items() if any(paths)}


def _cmd_init(args):
    import os

    from ..campaign import Campaign
    from ..campaign.io import check_output_path

    if bool(args.pool) == bool(args.run):
        raise CampaignCLIError("give either --pool FILE (LETOR) or --run FILE [--run FILE] (TREC runs).")
    inputs = _init_inputs(args)
    # the new store must not replace one of its own inputs, not even with --force
    check_output_path(args.store, kind="qrels", protected=[p for ps in inputs.values() for p in ps], force=True,
                      protected_name="an input file")
    if os.path.isdir(args.store):
        raise CampaignCLIError(f"{args.store} is a directory; give the campaign file to create.")
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.store))):
        raise CampaignCLIError(f"{args.store}: no such directory: {os.path.dirname(os.path.abspath(args.store))}")
    if os.path.lexists(args.store) and not args.force:
        raise FileExistsError(f"{args.store} already exists; pass overwrite=True (CLI: --force) to replace it.")
    if args.pool:
        if args.tag:
            raise CampaignCLIError("--tag selects TREC runs and needs --run.")
        pool, rankers, probs = _init_letor(args)
    else:
        if args.train or args.length_feature:
            raise CampaignCLIError("--train and --length-feature need --pool (LETOR).")
        pool, rankers, probs = _init_trec(args)
    query_text = _read_query_text(args.query_text) if args.query_text else None
    target = "baseline" if args.baseline else "ranking" if args.rank_systems else None
    if args.baseline and args.rank_systems:
        raise CampaignCLIError("--baseline (candidates vs a baseline) and --rank-systems exclude each other.")
    # built beside the store and renamed into place complete, pre-existing judgments included: a rejected
    # --qrels file (or a crash) leaves no campaign behind, and an older store at the path untouched
    tmp = os.path.join(os.path.dirname(os.path.abspath(args.store)),
                       f".{os.path.basename(args.store)}.{os.getpid()}.init")
    camp = Campaign.create(tmp, pool, rankers, probs, budget=args.budget, metric=args.metric, target=target,
                           method=args.method, costs=args.costs, defensive=args.defensive, seed=args.seed,
                           query_text=query_text, combine=args.combine, overwrite=True,
                           description=args.description or "", judge=args.judge, inputs=inputs,
                           held_qrels=args.qrels, judges=_init_judges(args, pool, probs))
    try:
        with camp:
            lines = _init_qrels(camp, args) if args.qrels else []
            lines += _init_summary(camp, args)
        from ..campaign.schema import replace_store

        replace_store(tmp, args.store)
    except BaseException:
        from ..campaign.schema import SIDECARS, remove_files

        remove_files(tmp, "", *SIDECARS)
        raise
    print("\n".join(lines))
    return EXIT_OK


def _init_judges(args, pool, probs):
    """The ``--llm-grades`` judges read against the pool (None without them); they need ``--qrels``."""
    if not args.llm_grades:
        if args.llm_levels is not None:
            raise CampaignCLIError("--llm-levels is the scale of --llm-grades files; give them too.")
        return None
    if not args.qrels:
        raise CampaignCLIError("--llm-grades: the judges are calibrated on human labels; give them with --qrels "
                               "(at least 30 labels on judged pairs, e.g. an earlier campaign's qrels).")
    from ..judges import read_judge

    levels = args.llm_levels or np.shape(probs)[1]
    try:
        return [read_judge(path, pool, levels=levels) for path in args.llm_grades]
    except (OSError, ValueError) as exc:
        raise CampaignCLIError(f"--llm-grades: {exc}") from None


_UNKNOWN = ("unknown query id", "unknown document id")


def _init_qrels(camp, args) -> list:
    """Store ``--qrels`` if every line is valid (lines naming unknown ids skipped with --allow-unknown)."""
    rejected = camp.validate_judgments(args.qrels, format="qrels", scope="pool")
    unknown = [r for r in rejected if r.message.startswith(_UNKNOWN)]
    bad = [r for r in rejected if not r.message.startswith(_UNKNOWN)] + ([] if args.allow_unknown else unknown)
    if bad:
        bad.sort(key=lambda r: r.line)
        for r in bad[:_MAX_SHOWN]:
            print(f"{args.qrels}: line {r.line}: {r.message}", file=sys.stderr)
        if len(bad) > _MAX_SHOWN:
            print(f"{args.qrels}: ... and {len(bad) - _MAX_SHOWN} more rejected lines", file=sys.stderr)
        hint = (" Lines whose query or document is not in the pool can be skipped with --allow-unknown."
                if unknown and not args.allow_unknown else "")
        raise CampaignCLIError(f"--qrels {args.qrels}: {len(bad)} lines rejected (listed above); no campaign "
                               f"created.{hint}")
    rep = camp.import_qrels(args.qrels)
    skipped = (f", {len(unknown)} lines skipped (query or document not in the pool; --allow-unknown)"
               if unknown else "")
    return [f"pre-existing judgments from {args.qrels}: {rep.accepted} stored{skipped}"]


_MAX_SHOWN = 50  # rejected --qrels lines printed one by one


def _init_summary(camp, args) -> list:
    st = camp.status()
    out = [f"created campaign {args.store}: {len(camp.query_ids)} queries, "
           f"{int(camp.pool().offsets[-1])} documents; rankers {list(camp.names)}"]
    chosen = " (chosen by method=auto)" if "auto" in camp.meta else ""
    out.append(f"  metric {camp.metric}, method {camp.method}{chosen}, seed {camp.seed}, combine {camp.combine}")
    n_queries = len(st.queries_done) + len(st.queries_partial) + len(st.queries_pending)
    if st.unit == "document":
        out.append(f"  budget {camp.budget:g}: {st.n_documents_needed} sampled documents to judge over {n_queries} "
                   f"queries, cost {st.cost_planned:.4g} (Poisson sampling spends the budget in expectation)")
    elif st.unit == "prefix":
        out.append(f"  budget {camp.budget:g} (a hard cap): {st.n_draws} queries of the priority order reached so far; "
                   "tasks come in rounds, one document per query still being judged (export, judge, import, "
                   "repeat until `status` reports every query done)")
    else:
        out.append(f"  budget {camp.budget:g}: {st.n_draws} draws over {n_queries} queries "
                   f"({st.n_documents_needed} documents to judge), planned cost {st.cost_planned:.4g}")
    return out


# --------------------------------------------------------------------------- other commands


def _open(args):
    from ..campaign import Campaign

    return Campaign.open(args.store)


def _cmd_export(args):
    with _open(args) as camp:
        rep = camp.export_tasks(args.output, format=args.format, limit=args.limit, max_cost=args.max_cost,
                                exclude_exported=args.exclude_exported, overwrite=args.force)
    print(f"wrote {rep.n_rows} tasks ({rep.n_queries} queries, cost {rep.cost:.4g}) to {rep.path}")
    return EXIT_OK


def _cmd_import(args):
    status = EXIT_OK
    with _open(args) as camp:
        for path in args.files:
            def ack(first, last, n, path=path):
                print(f"committed {path} lines {first}-{last}: {n} accepted", flush=True)

            rep = camp.import_judgments(path, format=args.format, annotator=args.annotator, scope=args.scope,
                                        chunk_size=args.chunk_size, on_commit=ack)
            for note in rep.notes:
                print(f"{path}: note: {note}")
            for msg in rep.messages():
                print(msg, file=sys.stderr)
            if rep.already_imported:
                print(f"{path}: already imported (same content, batch {rep.batch_id}); nothing to do")
            else:
                print(f"{path}: {rep.accepted_now} judgments stored now ({rep.accepted} in total from this file), "
                      f"{rep.duplicates} duplicates, {rep.unanswered} unanswered, {rep.n_rejected} rejected"
                      + (" (resumed an interrupted import)" if rep.resumed else ""), flush=True)
            if rep.n_rejected:
                status = EXIT_REJECTED
    return status


def _cmd_status(args):
    with _open(args) as camp:
        st = camp.status(combine=args.combine)
    if args.json:
        print(json.dumps(st.to_dict(), indent=2))
        return EXIT_OK
    n_planned = len(st.queries_done) + len(st.queries_partial) + len(st.queries_pending)
    print(f"budget {st.budget:g}: spent {st.cost_spent:.4g}, in progress {st.cost_in_progress:.4g}, "
          f"left {st.budget_left:.4g} (planned {st.cost_planned:.4g})")
    print(f"queries: {len(st.queries_done)} done, {len(st.queries_partial)} partially judged, "
          f"{len(st.queries_pending)} pending, of {n_planned} planned")
    print(f"documents: {st.n_documents_judged} of {st.n_documents_needed} judged; {st.n_judgments} judgments "
          f"stored, {st.n_conflicts} pairs with disagreeing annotators (combined by {st.combine})")
    if st.unit == "prefix":
        waiting = len(st.queries_partial) + len(st.queries_pending)
        print("queries reached: " + (f"{waiting} still being judged (one task each in the next export; first "
                                     f"{st.blocking_query!r})" if waiting
                                     else f"all done; {st.draws_usable} used by the estimate"))
    elif st.unit == "document":
        missing = st.n_documents_needed - st.n_documents_judged
        if not missing:
            print("sampled documents: all judged")
        elif st.draws_usable:  # a budgeted sample estimates from the judged head of its draw order
            print(f"sampled documents: {missing} still to judge; the estimate uses the first {st.draws_usable} "
                  f"tasks in draw order (waiting for query {st.blocking_query!r})")
        else:
            print(f"sampled documents: {missing} still to judge before an estimate (waiting for query "
                  f"{st.blocking_query!r})")
    else:
        print(f"draws usable for the estimate: {st.draws_usable} of {st.n_draws}"
              + (f" (waiting for query {st.blocking_query!r})" if st.blocking_query is not None else ""))
    if st.queries_partial:
        print("partially judged: " + ", ".join(st.queries_partial))
    return EXIT_OK


def _cmd_estimate(args):
    from ..inference.results import ComparisonResult

    with _open(args) as camp:
        st = camp.status(combine=args.combine)
        try:
            res = camp.estimate(combine=args.combine)
        except ValueError as exc:
            if "nothing to estimate yet" not in str(exc):
                raise
            print(f"activerank campaign estimate: {exc}", file=sys.stderr)
            return EXIT_REJECTED
        if args.trace:
            _write_trace(camp, args, res.trace)
    if not hasattr(res, "confidence_interval"):  # several systems
        return _report_many(res, st, args)
    point = "difference" if isinstance(res, ComparisonResult) else "estimate"
    ci = res.confidence_interval(args.confidence)
    out = {point: getattr(res, point), "standard_error": res.standard_error, "ci_low": ci.low,
           "ci_high": ci.high, "confidence_level": args.confidence, "n_queries": res.n_queries,
           "n_draws": res.n_draws, "n_draws_planned": st.n_draws, "cost_spent": res.cost_spent,
           "budget": res.budget, "effective_sample_size": res.effective_sample_size, "metric": res.metric,
           "method": res.method, "queries_partial": list(st.queries_partial),
           "queries_pending": len(st.queries_pending)}
    if point == "difference":  # NaN (null in JSON) when only the documents that can change it were judged
        out.update(estimate_a=_number(res.estimate_a), estimate_b=_number(res.estimate_b))
    if args.json:
        print(json.dumps(out, indent=2))
        return EXIT_OK
    print(f"{res.metric} {point}: {out[point]:.4f} ± {res.standard_error:.4f} (SE); "
          f"{args.confidence:.0%} CI [{ci.low:.4f}, {ci.high:.4f}]")
    print(f"  from {res.n_draws} of {st.n_draws} draws ({res.n_queries} queries), cost {res.cost_spent:.4g} "
          f"of {res.budget:g}; ESS {res.effective_sample_size:.1f}")
    if st.queries_partial:
        print(f"  partially judged (not used yet): {', '.join(st.queries_partial)}")
    if st.draws_usable < st.n_draws:
        print(f"  {len(st.queries_pending)} planned queries still pending")
    return EXIT_OK


def _write_trace(camp, args, trace):
    """The per-draw trace as CSV: never over the store or a file the campaign read; text cells escaped."""
    from ..campaign.io import write_trace

    write_trace(camp.check_output(args.trace, kind="trace", overwrite=args.force, header=list(trace.columns)),
                trace)


def _number(value):
    """A float for JSON output; None for NaN (a per-system value that was not estimated)."""
    v = float(value)
    return None if v != v else v


def _report_many(res, st, args):
    """k systems: one row per contrast with simultaneous intervals."""
    table = res.summary(args.confidence)
    if args.json:
        out = {"metric": res.metric, "method": res.method, "confidence_level": args.confidence,
               "n_queries": res.n_queries, "n_draws": res.n_draws, "n_draws_planned": st.n_draws,
               "cost_spent": res.cost_spent, "budget": res.budget,
               "effective_sample_size": res.effective_sample_size,
               "baseline": getattr(res, "baseline", None),
               "systems": {str(k): {c: _number(v) for c, v in row.items()} for k, row in table.iterrows()}}
        print(json.dumps(out, indent=2))
        return EXIT_OK
    what = f"minus baseline {res.baseline!r}" if hasattr(res, "baseline") else "relative to the mean system"
    print(f"{res.metric}: {len(table)} systems {what}; {args.confidence:.0%} simultaneous intervals")
    print(table.to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"  from {res.n_draws} of {st.n_draws} draws ({res.n_queries} queries), cost {res.cost_spent:.4g} "
          f"of {res.budget:g}; ESS {res.effective_sample_size:.1f}")
    return EXIT_OK


def _cmd_qrels(args):
    with _open(args) as camp:
        n = camp.write_qrels(args.output, combine=args.combine, scope=args.scope, overwrite=args.force)
    print(f"wrote {n} judgments to {args.output}")
    return EXIT_OK


def _cmd_backup(args):
    with _open(args) as camp:
        path = camp.backup(args.dest, overwrite=args.force)
    print(f"backed up {args.store} to {path}")
    return EXIT_OK


def _cmd_check(args):
    from ..campaign import Campaign

    problems = Campaign.check_file(args.store)
    if args.json:
        print(json.dumps({"store": args.store, "ok": not problems, "problems": problems}, indent=2))
    elif problems:
        print(f"{args.store}: {len(problems)} problem{'s' if len(problems) > 1 else ''} found:")
        for p in problems:
            print(f"  - {p}")
        print("Restore the store from a backup (`activerank campaign backup` makes one); judgment files "
              "imported since can be imported again (re-importing is harmless).")
    else:
        print(f"{args.store}: ok (integrity, schema, design and judgment checksums, grades, budget ledger, "
              "replay of the sample)")
    return EXIT_DAMAGED if problems else EXIT_OK


# --------------------------------------------------------------------------- parser


_EPILOG = ("exit codes: 0 success; 1 some rows rejected (import) or nothing to estimate yet; "
           "2 bad input; 3 the campaign store is damaged (see `activerank campaign check`)")


def add_campaign_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``campaign`` (with its sub-commands) to an ``argparse`` sub-parser set.

    Every leaf sets ``func`` to a handler ``func(args) -> int`` (exit code);
    the handlers report their own errors (message on stderr, exit code 2).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``.

    Returns
    -------
    argparse.ArgumentParser
        The ``campaign`` parser.
    """
    from ..design.methods import method_names
    from ..campaign.io import COMBINE_RULES, FORMATS, TASK_FORMATS
    from ..relevance.models import MODEL_NAMES

    camp = subparsers.add_parser(
        "campaign", help="labeling campaigns for real annotators (init, export, import, status, estimate, qrels, "
        "backup, check)",
        description="Labeling campaigns for real annotators, kept in one SQLite file: "
        "init -> export tasks -> import judgments -> status / estimate / qrels; backup and check the store. "
        "No output ever replaces the store or a file a campaign command read, not even with --force.",
        epilog=_EPILOG)
    sub = camp.add_subparsers(dest="campaign_command", required=True, metavar="COMMAND")

    p = sub.add_parser("init", help="create a campaign file from LETOR files or TREC run files",
                       description="Create a campaign: freeze the pool, the ranker(s), the sampling design and "
                       "the draw sequence. LETOR mode: --pool FILE [--train FILE --model NAME] --ranker SPEC "
                       "[--ranker SPEC]. TREC mode: --run FILE [--run FILE] [--tag TAG ...] --grades N.",
                       epilog=_EPILOG)
    p.add_argument("store", help="campaign file to create (SQLite)")
    src = p.add_argument_group("LETOR source")
    src.add_argument("--pool", help="LETOR/SVMlight file with the queries and documents to judge")
    src.add_argument("--train", help="labeled LETOR file to fit the relevance model on")
    src.add_argument("--ranker", action="append", metavar="SPEC",
                     help="ranker to evaluate (give twice to compare two): model (expected gain of the "
                     "relevance model) | feature:N (1-based column) | file:PATH (one score per line) | "
                     "run:PATH[#TAG] (TREC run matched by doc id); default model")
    src.add_argument("--length-feature", type=positive_int, help="1-based feature holding document length (for costs)")
    trec = p.add_argument_group("TREC source")
    trec.add_argument("--run", action="append", metavar="FILE", help="TREC run file (repeatable)")
    trec.add_argument("--tag", action="append", help="run tag to evaluate (give two to compare)")
    trec.add_argument("--queries", choices=("union", "intersection"), default="union",
                      help="pool queries with several runs (default union)")
    many = p.add_argument_group("several systems")
    many.add_argument("--baseline", metavar="SPEC",
                      help="baseline ranker (a --ranker SPEC, or a run tag with --run): the campaign estimates "
                      "every --ranker/--tag minus the baseline, as activerank.compare_many")
    many.add_argument("--rank-systems", action="store_true",
                      help="rank every --ranker/--tag by its difference to the mean system, as "
                      "activerank.rank_systems")
    p.add_argument("--model", choices=MODEL_NAMES, default=None,
                   help="relevance model (default lightgbm with --pool, uniform with --run)")
    p.add_argument("--model-seed", type=nonneg_int, default=0, help="random_state of the relevance model")
    p.add_argument("--grades", type=n_grades_arg, help="number of grades of the label scale")
    p.add_argument("--budget", type=positive_float, required=True,
                   help="labeling budget in units of the mean query cost")
    p.add_argument("--metric", default="err@10", help="dcg@k or err@k (default err@10)")
    p.add_argument("--method", default="auto", choices=(*method_names(), "auto"),
                   help="sampling/estimation method (default auto: chosen once, at init, by the API's rule among the "
                        "designs that give an estimate from any judged head of their tasks -- active, whose draw "
                        "sequence gives an estimate from any fully judged prefix, and for additive metrics such as "
                        "dcg@k the document-level doc_dyn); active_wor's one sample is usable only when judged "
                        "whole; prefix (cascade metrics such as err@k) judges documents one at a time inside sampled "
                        "queries, its tasks exported in rounds, and estimates once its walks stop")
    p.add_argument("--costs", default="auto", choices=("auto", "log_length", "constant", "uniform"))
    p.add_argument("--judge", default="changeable", choices=("changeable", "all"),
                   help="comparisons: judge only the documents that can change a difference (default), or all")
    p.add_argument("--defensive", type=probability_closed, default=0.1, help="weight of p in the sampling mixture")
    p.add_argument("--seed", type=nonneg_int, default=None, help="seed of the draw sequence (default: random, "
                   "stored and printed)")
    p.add_argument("--combine", choices=COMBINE_RULES, default="mean_gain",
                   help="how grades of several annotators are combined (default mean_gain)")
    p.add_argument("--qrels", help="pre-existing judgments (TREC qrels) to store; every line must be valid "
                   "(rejected lines are listed with their reasons and nothing is created)")
    p.add_argument("--allow-unknown", action="store_true",
                   help="with --qrels: skip lines whose query or document is not in the pool")
    p.add_argument("--llm-grades", metavar="FILE", action="append", default=None,
                   help="an external judge's grades of the pool's pairs ('qid Q0 docid grade' or .tsv/.csv/.jsonl); "
                   "repeat for several judges. Calibrated on the --qrels labels (at least 30 on judged pairs) into "
                   "the campaign's relevance model (docs/judges.md)")
    p.add_argument("--llm-levels", metavar="N", type=n_grades_arg, default=None,
                   help="the judges' grade scale 0..N-1 (default: the relevance model's)")
    p.add_argument("--query-text", help="TSV file 'query_id<TAB>text' shown in exported tasks")
    p.add_argument("--description", help="free text stored with the campaign")
    p.add_argument("--force", action="store_true", help="overwrite an existing campaign file (never an input file)")
    p.set_defaults(func=run, _handler=_cmd_init)

    p = sub.add_parser("export", help="write the next tasks (JSONL or CSV)",
                       description="Write the documents still to judge, query by query in draw order, "
                       "atomically (temp file + rename).", epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("output", help="task file to write (.jsonl or .csv)")
    p.add_argument("--format", choices=TASK_FORMATS, help="default: from the extension")
    p.add_argument("--limit", type=nonneg_int, help="at most this many queries")
    p.add_argument("--max-cost", type=positive_float, help="at most this much cost (budget units)")
    p.add_argument("--exclude-exported", action="store_true", help="skip queries exported before")
    p.add_argument("--force", action="store_true", help="replace an existing file that is not an unanswered "
                   "task file (the campaign file itself is never replaced)")
    p.set_defaults(func=run, _handler=_cmd_export)

    p = sub.add_parser("import", help="store judgments from JSONL, CSV or qrels files",
                       description="Validate judgments row by row and store the valid ones. Rejected rows are "
                       "printed to stderr as 'FILE: line N: reason'. After each commit the command prints "
                       "'committed FILE lines A-B: N accepted'. Re-importing a file is harmless: it resumes "
                       "an interrupted import or does nothing.", epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("files", nargs="+", help="judgment files (.jsonl, .csv, .qrels)")
    p.add_argument("--format", choices=FORMATS, help="default: from the extension")
    p.add_argument("--annotator", help="annotator of rows that name none")
    p.add_argument("--scope", choices=("tasks", "pool"), default="tasks",
                   help="accept only requested documents (tasks, default) or any pool document (pool)")
    p.add_argument("--chunk-size", type=positive_int, default=500, help="lines per transaction (default 500)")
    p.set_defaults(func=run, _handler=_cmd_import)

    p = sub.add_parser("status", help="budget spent/left and queries done/partial/pending",
                       epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("--combine", choices=COMBINE_RULES, help="override the campaign's combination rule")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _handler=_cmd_status)

    p = sub.add_parser("estimate", help="estimate (and CI) from the judgments so far",
                       description="Estimate from the longest prefix of the draw sequence whose queries are "
                       "fully judged; partially judged queries are listed. A document-level campaign needs every "
                       "sampled document judged.", epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("--confidence", type=probability_open, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--combine", choices=COMBINE_RULES, help="override the campaign's combination rule")
    p.add_argument("--trace", help="write the per-draw trace to this CSV file")
    p.add_argument("--force", action="store_true", help="replace an existing output file even if it is not a previous output of this command (the campaign file itself is never replaced)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _handler=_cmd_estimate)

    p = sub.add_parser("qrels", help="write the combined judgments as a TREC qrels file", epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("output", help="qrels file to write")
    p.add_argument("--scope", choices=("tasks", "pool"), default="tasks",
                   help="only requested documents (default) or every judged pool document")
    p.add_argument("--combine", choices=COMBINE_RULES, help="override the campaign's combination rule")
    p.add_argument("--force", action="store_true", help="replace an existing output file even if it is not a previous output of this command (the campaign file itself is never replaced)")
    p.set_defaults(func=run, _handler=_cmd_qrels)

    p = sub.add_parser("backup", help="copy the store safely (SQLite online backup), even during an import",
                       description="Copy the campaign store to DEST with SQLite's online backup API: one "
                       "consistent state even while another process imports, checked, then renamed into place. "
                       "Copying the store file with cp is safe only when no STORE-journal file lies beside it.",
                       epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("dest", help="backup file to write (never the store or a file the campaign read)")
    p.add_argument("--force", action="store_true", help="replace an existing file at DEST")
    p.set_defaults(func=run, _handler=_cmd_backup)

    p = sub.add_parser("check", help="report every problem of a campaign store (exit 3 if any)",
                       description="Check a campaign store: SQLite's integrity_check and foreign keys, the schema, "
                       "the design and every judgment against their checksums (any changed byte), grades on the "
                       "scale, the budget ledger, and a replay of the sample with the stored seed. Prints every "
                       "problem; exit code 3 if there is one.", epilog=_EPILOG)
    p.add_argument("store", help="campaign file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _handler=_cmd_check)
    return camp


def run(args) -> int:
    """Run a parsed ``campaign`` command; returns the exit code."""
    name = f"activerank campaign {args.campaign_command}"
    from ..campaign.integrity import CorruptStoreError

    try:
        with cli_warnings(name):
            return args._handler(args)
    except CorruptStoreError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_DAMAGED
    except (CampaignCLIError, ValueError, TypeError, FileNotFoundError, FileExistsError) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
    except sqlite3.DatabaseError as exc:
        store = getattr(args, "store", "")
        if args.campaign_command == "init":  # the store being created: no damage to report
            print(f"{name}: error: {store}: database error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"{name}: error: {store}: database error: {exc}. The store may be damaged: run `activerank "
              f"campaign check {store}`, and restore it from a backup if it reports problems.", file=sys.stderr)
        return EXIT_DAMAGED
    except OSError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv=None) -> int:
    """Entry point of ``python -m activerank.cli.campaign``: the ``campaign`` command on its own."""
    parser = argparse.ArgumentParser(prog="activerank")
    sub = parser.add_subparsers(dest="command", required=True)
    add_campaign_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
