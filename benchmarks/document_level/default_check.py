"""The default (``method`` omitted, i.e. ``"auto"``) on the document-level benchmark's tasks (issue 30).

Issue 30's check: "the default is no worse than the best single design by more
than 5 points (savings vs passive at equal documents) on any task".

The experiment harness (:mod:`activerank.experiments`) cannot run the default
itself: its methods are registered methods (``get_method``), and ``"auto"`` is
the public functions' choice between registered methods, not one of them.  So
this script does what the API does, on ``run.py``'s tasks, folds, truth, cost
model and budget grid (DCG@10, budgets in units of judging a whole query):

* the choice, per fold, task and budget of the grid: the API's rule
  (:func:`activerank.design.auto.auto_alternative` +
  :func:`~activerank.design.auto.choose_method`) on the designs the API builds
  for the task (``prepare_design`` with ``active_wor`` and the alternative,
  ``doc_dyn`` for DCG@10; checked against :func:`~activerank.design.auto.auto_design`
  at the reference budget);
* the numbers: each chosen design's batched hard-budget path (``doc_dyn``:
  :meth:`DocumentDesign.simulate`, as ``registered.py``; ``active_wor``:
  :meth:`WithoutReplacementDesign.simulate` with the census stratum exact, only
  where chosen), the default's curve taking at every budget the chosen design's
  runs; passive query sampling by ``run.py``'s kernel.

Savings vs passive at equal documents (``run.py``'s :func:`savings`: budget at
which the mean loss reaches passive's at the reference budget, 95% bootstrap)
for the default and for ``doc_dyn`` from this run, against the best single
design of ``results/<dataset>/savings.csv`` (``run.py``, 5 folds × 1000 runs;
the biased ``doc_uniform_inf`` excluded).

Run:  python benchmarks/document_level/default_check.py [--datasets mq2008,ohsumed] [--folds 1,2,3,4,5]
      [--reps 300]
Writes results/default_check.csv and results/default_check.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import run as bench
from common import RESULTS, TASKS, build_task, config
from registered import registered
from report import TITLES

from activerank.design.auto import auto_alternative, auto_design, choose_method
from activerank.design.costs import document_costs
from activerank.design.design import prepare_design
from activerank.experiments.harness import DATASETS, fit_fold
from activerank.pool import pool_iv

KIND = {"single": "mean", "pair": "difference", "index": "difference", "baseline": "baseline", "rank": "ranking"}
BIASED = ("doc_uniform_inf", "depth_k")


def api_args(task, spec):
    """The public functions' design arguments for ``task`` (no ``method``: auto)."""
    args = dict(metric=bench.METRIC, k=None, method="auto", costs=spec.cost_model, query_weights=None,
                defensive=0.1, predicted=None)
    kind = KIND[task.kind]
    if kind != "mean":
        args["judge"] = "changeable"
    if kind in ("baseline", "ranking"):
        args["names"] = tuple(f"s{j}" for j in range(len(task.rankings)))
    return kind, args


def choices(task, spec, budgets):
    """The default's method at every budget, and the query-level design (for its simulation)."""
    kind, args = api_args(task, spec)
    pool, pool_ = task.pool, pool_iv(task.pool)
    rk = tuple(task.rankings)
    query = prepare_design(pool, pool_, kind, rk, task.probs, **dict(args, method="active_wor"))
    alt, _ = auto_alternative(query.metric, per_query_costs=query.costs.model == "uniform")
    doc = None if alt is None else prepare_design(pool, pool_, kind, rk, task.probs, **dict(args, method=alt))
    picks = [choose_method(query, doc, float(b)).method for b in budgets]
    ref = float(spec.reference_budget)
    _, check = auto_design(pool, pool_, kind, rk, task.probs, ref, args)
    if check.method != choose_method(query, doc, ref).method:
        raise AssertionError("auto_design and choose_method disagree")
    return picks, query


def wor_packed(ctx, dsg, rng, reps):
    """active_wor on the grid by its plug-in's batched path (census stratum exact), packed like run.py."""
    plug = dsg.method_spec.kind
    n = dsg.n_queries
    out_y = dsg.target.outputs(dsg.target.values(ctx.task.labels, np.arange(n), dsg.n_grades))
    if not np.allclose(dsg.p @ out_y, ctx.T, atol=1e-10):
        raise AssertionError("the design's truth differs from run.py's")
    census = dsg.census
    p_rest = dsg.p.copy()
    p_rest[census] = 0.0
    share = float(p_rest.sum())
    pred = dsg.prediction
    o = plug.simulate(out_y, pred.mean, p_rest / share, dsg.q, dsg.costs.cost, ctx.rel, reps, rng,
                      output_variance=pred.output_variance)
    t = out_y.shape[1]
    est = np.asarray(o["estimate"]).reshape(t, ctx.rel.size, reps).transpose(1, 2, 0)
    se = np.asarray(o["standard_error"]).reshape(t, ctx.rel.size, reps).transpose(1, 2, 0)
    exact = out_y[census].T @ dsg.p[census] if census.size else np.zeros(t)
    # coverage of the interval the library reports: Student-t on each run's degrees of freedom
    dof = np.asarray(o["dof"], dtype=np.float64).reshape(ctx.rel.size, reps)
    packed = bench._pack("active_wor", exact + share * est, share * se, o["cost"], ctx.T, o["n"], dof=dof)
    packed["budgets"] = ctx.rel
    return packed


def combine(picks, parts):
    """The default's result: at every budget the chosen design's runs."""
    first = next(iter(parts.values()))
    out = {"name": "default", "budgets": first["budgets"], "truth": first["truth"]}
    for k in ("loss", "cost", "coverage", "bias", "bias_se", "valid", "n"):
        out[k] = np.stack([parts[m][k][bi] for bi, m in enumerate(picks)])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="mq2008,ohsumed")
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args(argv)
    cfg = config(args.cache, args.data)
    rows, pick_rows = [], []
    t0 = time.perf_counter()
    for ds in args.datasets.split(","):
        spec = DATASETS[ds]
        rel = bench.REL[bench.REL <= max(spec.budgets)]
        di = list(DATASETS).index(ds)
        all_res: dict = {}
        for fold in [int(f) for f in args.folds.split(",")]:
            fm = fit_fold(spec, fold, cfg, data_root=cfg.data_root)
            doc_costs, _ = document_costs(fm.pool, fm.pool.n_docs, spec.cost_model)
            for ti, key in enumerate(args.tasks.split(",")):
                ctx = bench.Context(build_task(fm, key, fold), doc_costs, rel)
                if bench.determined(ctx):
                    continue
                ctx.u_grades = ctx.task.labels[ctx.t.rows]
                picks, query = choices(ctx.task, spec, rel)
                seed = [di, fold, ti, 30]
                res = {"passive": bench.query_level(ctx, ctx.p, ctx.full.cost, np.random.default_rng(seed + [0]),
                                                    args.reps, name="passive"),
                       "doc_dyn": registered(ctx, "doc_dyn", np.random.default_rng(seed + [1]), args.reps)}
                if "active_wor" in picks:
                    res["active_wor"] = wor_packed(ctx, query, np.random.default_rng(seed + [2]), args.reps)
                res["default"] = combine(picks, res)
                for name, r in res.items():
                    all_res.setdefault(key, {}).setdefault(name, []).append(r)
                pick_rows += [dict(dataset=ds, fold=fold, task=key, budget=b, method=m) for b, m in zip(rel, picks)]
                print(f"{ds} fold {fold} {key}: {dict(pd.Series(picks).value_counts())} "
                      f"({time.perf_counter() - t0:.0f}s)", flush=True)
        ref_sav = pd.read_csv(RESULTS / ds / "savings.csv")
        for key, res in all_res.items():
            mine = {r["method"]: r for r in bench.savings(res, ["default", "doc_dyn", "active_wor"],
                                                          float(spec.reference_budget))}
            other = ref_sav[(ref_sav.task == key) & ~ref_sav.method.isin(BIASED)]
            best = other.loc[other.savings.idxmax()]
            d = mine["default"]
            rows.append(dict(dataset=ds, task=key, default=d["savings"], default_low=d["low"],
                             default_high=d["high"], default_censored=d["censored"],
                             doc_dyn=mine["doc_dyn"]["savings"], best_method=best.method, best=best.savings,
                             best_low=best.low, best_high=best.high, gap=best.savings - d["savings"],
                             coverage=d["coverage"], max_bias_z=d["max_bias_z"], reps=args.reps,
                             folds=args.folds))
        # written after every dataset: a run cut short keeps the finished ones
        pd.DataFrame(rows).to_csv(RESULTS / "default_check.csv", index=False)
        write_md(pd.DataFrame(rows), pd.DataFrame(pick_rows), args, time.perf_counter() - t0)


def write_md(df, picks, args, seconds):
    pct = lambda x: f"{x:.0%}"  # noqa: E731
    lines = ["# The default (`method` omitted) vs the best single design, savings at equal documents (DCG@10)", "",
             f"Generated by `benchmarks/document_level/default_check.py --datasets {args.datasets} --folds "
             f"{args.folds} --reps {args.reps}` ({seconds / 60:.0f} min). The default's method at every budget "
             "of the grid is the API's auto rule on the task's designs; its runs are the chosen design's "
             "hard-budget simulation (module docstring). Savings vs passive query sampling (95% bootstrap); "
             "best = the best unbiased single design of `results/<dataset>/savings.csv` (run.py, 5 folds × 1000 "
             "runs). Issue 30's check: gap = best − default ≤ 5 points on every task.", "",
             "| dataset | task | default | doc_dyn (this run) | best single design (run.py) | gap (points) | check "
             "| coverage | max abs bias/SE |", "|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        cens = {-1: "≥", 1: "≤"}.get(int(r.default_censored), "")
        ok = r.gap <= 0.05
        lines.append(f"| {r.dataset} | {TITLES.get(r.task, r.task)} | {cens}{pct(r.default)} [{pct(r.default_low)}, "
                     f"{pct(r.default_high)}] | {pct(r.doc_dyn)} | {r.best_method} {pct(r.best)} [{pct(r.best_low)}, "
                     f"{pct(r.best_high)}] | {100 * r.gap:.1f} | {'ok' if ok else '**no**'} | {r.coverage:.3f} | "
                     f"{r.max_bias_z:.1f} |")
    share = picks.groupby("method").size() / len(picks)
    lines += ["", f"Check met on {int((df.gap <= 0.05).sum())} of {len(df)} tasks (largest gap "
              f"{100 * df.gap.max():.1f} points). Methods the default ran over all (fold, task, budget) points: "
              + ", ".join(f"{m} {s:.0%}" for m, s in share.items()) + "."]
    wor = picks[picks.method != "doc_dyn"]
    if len(wor):
        lines += ["", "Budgets where it ran a query-level design: " + "; ".join(
            f"{ds} {TITLES.get(t, t)}: {sorted(set(g.budget.tolist()))}" for (ds, t), g in
            wor.groupby(["dataset", "task"])) + "."]
    (RESULTS / "default_check.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
