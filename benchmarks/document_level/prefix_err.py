"""ERR@10 on the document-level harness's axis: ``prefix`` vs passive query sampling (issues 17 and 20).

The document-level designs of ``run.py`` need an additive metric, so that
harness measures DCG@10 only.  ``method="prefix"`` (:mod:`activerank.design.kinds.prefix`)
judges random-length sequences of documents inside Poisson-sampled queries for
cascade metrics; this script puts it on the same axis for ERR@10: same folds,
tasks, relevance models, document cost models and budget unit (the mean cost of
judging one whole query), savings vs passive query sampling at the dataset's
reference budget (``1 - B / B_ref``, ``B`` where the design's mean loss reaches
passive's at ``B_ref``; 95% bootstrap over repetitions), bias and coverage
pooled over folds.  Query-level references: ``passive`` (uniform, SNIS) and
``active`` / ``active_cancel`` (Sawade et al.'s q*; for comparisons with the
changeable-document costs, determined queries a census).

``prefix`` runs through the engine's own design (:func:`activerank.make_design`
with ``method="prefix"``: its layout, model predictions and costs) and is
simulated by :meth:`~activerank.design.kinds.prefix.PrefixSampling.simulate`.

Run:  python benchmarks/document_level/prefix_err.py [--datasets mq2008,ohsumed,trec-news] [--reps 1000]
Writes results/<dataset>/prefix_err_{savings,checks}.csv and results/prefix_err.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run as dl  # noqa: E402
from common import RESULTS, TASKS, build_task, config  # noqa: E402

import activerank as ar  # noqa: E402
from activerank.design.cancellation import census_distribution, changeable_costs, changeable_documents  # noqa: E402
from activerank.design.costs import document_costs, query_costs  # noqa: E402
from activerank.design.sampling import optimal_distribution  # noqa: E402
from activerank.design.kinds.prefix import design_layout as _layout  # noqa: E402
from activerank.experiments.harness import DATASETS, fit_fold  # noqa: E402

METRIC = "err@10"
KIND = {"single": "mean", "pair": "difference", "index": "difference", "baseline": "baseline", "rank": "ranking"}


class ErrContext:
    """What ``run.query_level`` and ``run.Context.sq_error`` read, for ERR@10."""

    def __init__(self, task, doc_costs, rel):
        self.task, self.rel, self.C = task, rel, task.contrasts
        self.L = self.C @ task.true_values(METRIC)
        self.T = self.L.mean(axis=1)
        self.tops = [r.truncate(10) for r in task.rankings]
        self.full = query_costs(doc_costs, self.tops)
        self.scale = self.full.scale
        self.p = np.full(task.pool.n_queries, 1.0 / task.pool.n_queries)
        self.doc_costs = doc_costs

    @property
    def n_targets(self):
        return self.C.shape[0]

    def sq_error(self):
        return dl.Context.sq_error(self)


def prefix_run(ctx, doc_costs, budgets, reps, rng):
    task = ctx.task
    kind = KIND[TASKS[task.key][0]]
    dsg = ar.make_design(task.pool, tuple(task.rankings), task.probs, metric=METRIC, method="prefix",
                         costs=doc_costs, target=None if kind in ("mean", "difference") else kind)
    if not np.allclose(dsg.target.contrast, ctx.C):
        raise AssertionError("the engine's contrasts differ from the harness's")
    plug = dsg.method_spec.kind
    layout = _layout(dsg, None)
    live = dsg.q > 0
    nb, t = len(budgets), ctx.n_targets
    est, se = np.zeros((nb, reps, t)), np.full((nb, reps, t), np.inf)
    cost, n = np.zeros((nb, reps)), np.zeros((nb, reps))
    for bi, B in enumerate(budgets):
        plan = plug.plan_queries(layout, dsg.probs, dsg.p, dsg.prediction.variance, live, float(B), rng,
                         defensive=dsg.defensive)
        if plan.pi.sum() < 2.0 and not plan.exact:  # the engine refuses this budget
            continue
        e, c, nn, cc = plug.simulate(layout, plan, dsg.probs, task.labels, dsg.p, dsg.prediction.mean, reps, rng,
                                     output_variance=dsg.prediction.output_variance)
        est[bi], se[bi] = e, np.sqrt(np.clip(np.diagonal(c, axis1=1, axis2=2), 0, None))
        cost[bi], n[bi] = cc, nn
    out = dl._pack("prefix", est, se, cost, ctx.T, n)
    out["budgets"] = np.asarray(budgets, dtype=float)
    return out


def run_task(ctx, doc_costs, prefix_budgets, reps, seed):
    rng = lambda i: np.random.default_rng([seed, i])  # noqa: E731
    out = {"passive": dl.query_level(ctx, ctx.p, ctx.full.cost, rng(0), reps, name="passive")}
    sq = ctx.sq_error()
    q_act = optimal_distribution(sq, ctx.full.cost, ctx.p, defensive=0.1)
    out["active"] = dl.query_level(ctx, q_act, ctx.full.cost, rng(1), reps, name="active")
    if len(ctx.tops) > 1:
        cs = changeable_documents(ctx.tops, n_docs=ctx.task.pool.n_docs, metric=METRIC)
        cc = changeable_costs(doc_costs, cs, scale=ctx.scale)
        cd = census_distribution(sq, cc, ctx.p, defensive=0.1)
        out["active_cancel"] = dl.query_level(ctx, cd.q, cc.cost, rng(2), reps, mass=cd.mass, name="active_cancel")
    out["prefix"] = prefix_run(ctx, doc_costs, prefix_budgets, reps, rng(3))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="mq2008,ohsumed,trec-news")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--data", default=None)
    ap.add_argument("--report", action="store_true", help="only rewrite results/prefix_err.md from the CSVs")
    args = ap.parse_args(argv)
    dl.METRIC = METRIC  # run.Context.sq_error reads the module's metric
    cfg = config(data_root=args.data)
    if not args.report:
        for ds in args.datasets.split(","):
            simulate_dataset(ds, args, cfg)
    report(args)


def simulate_dataset(ds, args, cfg):
    spec = DATASETS[ds]
    ref = float(spec.reference_budget)
    rel = dl.REL[dl.REL <= max(spec.budgets)]
    pb = [b for b in rel if 2 <= b <= ref]
    di = list(DATASETS).index(ds)
    res: dict = {}
    for fold in [int(f) for f in args.folds.split(",")]:
        fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
        doc_costs, _ = document_costs(fm.pool, fm.pool.n_docs, spec.cost_model)
        for ti, key in enumerate(args.tasks.split(",")):
            tt = time.perf_counter()
            task = build_task(fm, key, fold)
            ctx = ErrContext(task, doc_costs, rel)
            if len(ctx.tops) > 1 and changeable_documents(ctx.tops, n_docs=task.pool.n_docs,
                                                          metric=METRIC).determined.all():
                print(f"{ds} fold {fold} {key}: skipped, no judgment can change the target", flush=True)
                continue
            out = run_task(ctx, doc_costs, pb, args.reps, [di, fold, ti, 17])
            for name, r in out.items():
                res.setdefault(key, {}).setdefault(name, []).append(r)
            print(f"{ds} fold {fold} {key}: {time.perf_counter() - tt:.0f}s", flush=True)
    rows, checks = [], []
    for key, r in res.items():
        for row in dl.savings(r, [n for n in ("active", "active_cancel", "prefix") if n in r], ref):
            rows.append(dict(dataset=ds, task=key, **row))
        chk = dl.pooled_check(r["prefix"])
        for bi, b in enumerate(r["prefix"][0]["budgets"]):
            checks.append(dict(dataset=ds, task=key, budget=b, mean_n=float(chk["n"][bi]),
                               max_bias_z=float(chk["z"][bi]), coverage=float(chk["coverage"][bi]),
                               valid=bool(chk["valid"][bi])))
    out_dir = RESULTS / ds
    out_dir.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out_dir / "prefix_err_savings.csv", index=False)
    pd.DataFrame(checks).to_csv(out_dir / "prefix_err_checks.csv", index=False)


def report(args):
    """results/prefix_err.md from the per-dataset CSVs."""
    md = ["# ERR@10: `prefix` vs passive query sampling at equal documents judged (issues 17, 20)", "",
          f"Generated by `benchmarks/document_level/prefix_err.py --reps {args.reps}` (folds {args.folds}). "
          "Savings = 1 − B/B_ref at the dataset's reference budget (MQ2008 100, OHSUMED 15, TREC News 10 units "
          "of one whole query's cost), [95% bootstrap]; `max |bias|/SE` (pooled over folds, largest over "
          "budgets and contrasts); coverage of prefix's 95% interval: mean over budgets (lowest budget with ≥ 50 "
          "sampled queries in brackets; TREC News never samples 50).", "",
          "| dataset | task | prefix | active (q*) | active_cancel | prefix max abs bias/SE | prefix coverage |",
          "|---|---|---|---|---|---|---|"]
    for ds in args.datasets.split(","):
        path = RESULTS / ds / "prefix_err_savings.csv"
        if not path.exists():
            continue
        sav = pd.read_csv(path)

        def cell(key, name):
            s = sav[(sav.task == key) & (sav.method == name)]
            if s.empty:
                return "—"
            s = s.iloc[0]
            bound = "≥ " if s.censored < 0 else ""
            return f"{bound}{100 * s.savings:.0f}% [{100 * s.low:.0f}, {100 * s.high:.0f}]"

        for key in dict.fromkeys(sav.task):
            s = sav[(sav.task == key) & (sav.method == "prefix")].iloc[0]
            low = "" if not np.isfinite(s.min_coverage_n50) else f" [{s.min_coverage_n50:.3f}]"
            md.append(f"| {ds} | {key} | {cell(key, 'prefix')} | {cell(key, 'active')} | "
                      f"{cell(key, 'active_cancel')} | {s.max_bias_z:.1f} | {s.coverage:.3f}{low} |")
    (RESULTS / "prefix_err.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
