"""Hard budget: realized cost <= budget on every run, with bias, coverage and variance ratio on the same runs
(issue 30 item 1).

Every cell (dataset x scenario x design x cost model x budget) is built once and run ``--reps`` times through
the engine with different seeds, exactly as :func:`activerank.estimate` / ``compare`` / ``compare_many`` run it
(the labeler returns the pool's hidden grades).  It records

* ``over``: runs whose realized cost exceeded the budget (goal: 0 in every cell), ``max_cost`` and
  ``mean_cost`` as fractions of the budget;
* ``bias_se``: ``(mean estimate - truth) / Monte-Carlo SE`` (the largest |.| over the contrasts of ``many``);
* ``coverage`` of the reported 95% interval (``many``: the simultaneous intervals);
* ``var_ratio``: mean reported variance / empirical variance of the estimates (the worst contrast).

Datasets: the MQ2008 sample shipped in the package (30 queries), OHSUMED fold 1 (106 queries; needs
``ACTIVERANK_DATA``) and a synthetic MSLR-like 40-query pool (5 grades, ~120 documents per query, skewed
per-query relevance, a weak model; ``benchmarks/wor_small_pool.py``).  Cost models: ``auto`` and
``awkward`` (per-document costs ``1 + 20 LogNormal(0, 1)`` on 5% of the documents, fixed seed).

Run:  python benchmarks/hard_budget.py [--reps 500] [--datasets sample,synthetic,ohsumed] [--designs ...]
Writes benchmarks/results/hard_budget.csv and hard_budget.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from multiprocessing import Pool

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import activerank as ar  # noqa: E402
from activerank._validation import labeler_iv, rng_iv, scores_iv  # noqa: E402
from activerank.api import make_design  # noqa: E402
from activerank.engine import FixedBudget, Judgments, run  # noqa: E402
from activerank.pool import pool_iv  # noqa: E402
from activerank.relevance.rankers import remove_fraction  # noqa: E402

SCENARIOS = ("single", "pair", "index", "many")
ADDITIVE_DESIGNS = ("doc_dyn", "doc_stat", "doc_uniform", "doc_hh", "two_stage", "doc_ubis", "active_wor")
CASCADE_DESIGNS = ("prefix", "active_wor")
#: budgets (mean query costs) per dataset: about a quarter to a half of the small pools
BUDGETS = {"sample": (12.0,), "synthetic": (10.0, 20.0), "ohsumed": (20.0,)}

_STATE: dict = {}


def load(dataset: str):
    """``(pool, probs, scores_a, scores_b)`` of a dataset."""
    from wor_small_pool import ohsumed_pool, sample_pool, synthetic_pool

    return {"sample": sample_pool, "synthetic": synthetic_pool, "ohsumed": ohsumed_pool}[dataset]()


def _setup(dataset: str):
    if dataset not in _STATE:
        pool, probs, sa, sb = load(dataset)
        pool_ = pool_iv(pool)
        a, b = scores_iv(sa, pool_, "scores"), scores_iv(sb, pool_, "scores")
        removed = remove_fraction(a, 0.1, rng=np.random.default_rng([7, len(dataset)]))
        rankings = {"single": (a,), "pair": (a, b), "index": (a, removed), "many": (a, removed, b)}
        rng = np.random.default_rng([11, len(dataset)])
        awkward = 1.0 + 20.0 * rng.lognormal(0.0, 1.0, pool.n_docs) * (rng.random(pool.n_docs) < 0.05)
        _STATE[dataset] = (pool, pool_, probs, rankings, labeler_iv(ar.KnownLabels.from_data(pool)), awkward)
    return _STATE[dataset]


def truth(pool, rankings, metric: str) -> np.ndarray:
    vals = np.array([ar.pool_metric_values(pool.labels, r, metric=metric, ymax=pool.n_grades - 1,
                                           offsets=pool).mean() for r in rankings])
    if vals.size == 1:
        return vals
    return vals[:1] - vals[1:] if vals.size == 2 else vals[:-1] - vals[-1]


def _point_and_interval(res):
    if isinstance(res, ar.MultiComparisonResult):
        ci = res.confidence_intervals()
        return np.asarray(res.differences), np.asarray(res.standard_errors), np.asarray(ci.low), np.asarray(ci.high)
    ci = res.confidence_interval()
    point = res.difference if isinstance(res, ar.ComparisonResult) else res.estimate
    return np.array([point]), np.array([res.standard_error]), np.array([ci.low]), np.array([ci.high])


def cell(task) -> dict:
    dataset, scenario, metric, method, costs_name, budget, reps, seed = task
    pool, pool_, probs, rankings, labeler, awkward = _setup(dataset)
    kind = {"single": "mean", "pair": "difference", "index": "difference", "many": "baseline"}[scenario]
    names = ("a", "b", "baseline") if kind == "baseline" else None
    costs = awkward if costs_name == "awkward" else "auto"
    t0 = time.perf_counter()
    base = dict(dataset=dataset, scenario=scenario, metric=metric, design=method, costs=costs_name, budget=budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dsg = make_design(pool, rankings[scenario], probs, metric=metric, method=method, target=kind,
                              names=names, costs=costs)
            true = truth(pool, rankings[scenario], metric)
        except ValueError as exc:
            return {**base, "refused": str(exc)[:160]}
        est, ses, cover, spent, raw_spent, nq = [], [], [], [], [], []
        errors = 0
        for rep in range(reps):
            rng = rng_iv(np.random.SeedSequence([seed, rep]))
            try:
                res = run(dsg, pool_, labeler, FixedBudget(float(budget), rng), judgments=Judgments(pool_, dsg.n_grades),
                          ci="auto")
            except ValueError:  # the budget buys too little (a clear error before any label): counted
                errors += 1
                continue
            point, se, low, high = _point_and_interval(res)
            tol = 1e-12 * max(1.0, float(np.abs(true).max()))
            est.append(point)
            ses.append(se)
            cover.append(bool(((low - tol <= true) & (true <= high + tol)).all()))
            spent.append(res.cost_spent / budget)
            raw_spent.append(res.cost_spent)
            nq.append(res.n_queries)
    e, s = np.array(est), np.array(ses)
    n = e.shape[0]
    if n < 2:
        return {**base, "reps": n, "errors": errors}
    sd = e.std(axis=0, ddof=1)
    bias = e.mean(axis=0) - true
    mc = sd / np.sqrt(n)
    z = np.where(mc > 1e-12, bias / np.where(mc > 1e-12, mc, 1.0), 0.0)
    ratio = np.where(sd > 0, np.mean(s**2, axis=0) / np.where(sd > 0, sd**2, 1.0), np.nan)
    w = int(np.argmax(np.abs(z)))
    wr = int(np.nanargmax(np.abs(np.log(ratio)))) if np.isfinite(ratio).any() else 0
    c = np.array(spent)
    return {**base, "reps": n, "errors": errors, "n_queries": float(np.mean(nq)),
            "over": int(np.count_nonzero(np.array(raw_spent) > budget)), "max_cost": float(c.max()), "mean_cost": float(c.mean()),
            "truth": float(true[w]), "bias_se": float(z[w]), "coverage": float(np.mean(cover)),
            "var_ratio": float(ratio[wr]), "seconds": time.perf_counter() - t0}


def tasks(datasets, designs, reps, seed, cost_models) -> list:
    out = []
    for di, ds in enumerate(datasets):
        for metric, family in (("dcg@10", ADDITIVE_DESIGNS), ("err@10", CASCADE_DESIGNS)):
            for method in family:
                if designs and method not in designs:
                    continue
                for ci, costs in enumerate(cost_models):
                    for budget in BUDGETS[ds]:
                        for si, sc in enumerate(SCENARIOS):
                            cell_seed = [seed, di, si, ci, int(budget), len(method), len(metric)]
                            out.append((ds, sc, metric, method, costs, budget, reps, cell_seed))
    return out


def report(df: pd.DataFrame, cmd: str) -> str:
    ran = df[df["reps"].fillna(0) > 0]
    exact = (ran["bias_se"] == 0) & (ran["coverage"] == 1)  # every run judged every changeable document
    n_exact = int(exact.sum())
    ran_all, ran = ran, ran[~exact]
    lines = ["# Hard budget: realized cost, bias, coverage and variance ratio on the same runs "
             "(benchmarks/hard_budget.py)", "",
             f"`{cmd}`: {len(ran_all)} cells, {int(ran_all['reps'].sum())} runs (seeded); {n_exact} cells exact in "
             "every run (the budget covers every document that can change the target) are left out of the "
             "bias, coverage and variance counts.", "",
             f"* realized cost over the budget: {int(ran_all['over'].sum())} of {int(ran_all['reps'].sum())} runs "
             f"(largest {ran_all['max_cost'].max():.4f} of the budget).",
             f"* |bias| <= 3 Monte-Carlo SE: {int((ran['bias_se'].abs() <= 3).sum())} of {len(ran)} cells.",
             f"* coverage in 0.93-0.97: {int(ran['coverage'].between(0.93, 0.97).sum())} of {len(ran)} cells "
             f"(range {ran['coverage'].min():.3f}-{ran['coverage'].max():.3f}).",
             f"* variance estimate / empirical variance in 0.9-1.1: {int(ran['var_ratio'].between(0.9, 1.1).sum())} "
             f"of {len(ran)} cells (range {ran['var_ratio'].min():.2f}-{ran['var_ratio'].max():.2f}).", ""]
    refused = df[df.get("refused", pd.Series(index=df.index, dtype=object)).notna()] if "refused" in df else df[:0]
    if len(refused):
        lines += [f"Refused before any label ({len(refused)} cells; the error names the smallest usable budget):", ""]
        lines += [f"* {r.dataset} {r.scenario} {r.design} {r.costs} B={r.budget:g}: {r.refused}" for r in refused.itertuples()]
        lines.append("")
    cols = ["dataset", "scenario", "metric", "design", "costs", "budget", "reps", "errors", "n_queries", "over",
            "max_cost", "mean_cost", "bias_se", "coverage", "var_ratio"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in ran_all[cols].itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(lines) + "\n"


def _commands(out: str) -> list:
    """The command lines of the earlier runs, from their report."""
    try:
        with open(out + ".md") as f:
            line = f.read().splitlines()[2]
        return [line.split("`")[1]]
    except (OSError, IndexError):
        return []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--datasets", default="sample,synthetic,ohsumed")
    ap.add_argument("--designs", default="", help="only these designs (comma-separated)")
    ap.add_argument("--costs", default="auto,awkward", help="cost models (comma-separated)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=2030)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "hard_budget"))
    ap.add_argument("--append", action="store_true", help="add the cells to an earlier run's CSV (same --out)")
    ap.add_argument("--from-log", default=None, metavar="LOG",
                    help="write the report from the cells an interrupted run printed (its stdout)")
    args = ap.parse_args(argv)
    if args.from_log:
        import ast

        with open(args.from_log) as f:
            rows = [ast.literal_eval(line.split("] ", 1)[1]) for line in f if line.startswith("[")]
        pd.DataFrame(rows).to_csv(args.out + ".csv", index=False)
        with open(args.out + ".md", "w") as f:
            f.write(report(pd.DataFrame(rows), f"{len(rows)} cells of an interrupted run, from its log"))
        return 0
    designs = tuple(d for d in args.designs.split(",") if d)
    todo = tasks(args.datasets.split(","), designs, args.reps, args.seed, args.costs.split(","))
    rows = []
    if args.workers > 1:
        with Pool(args.workers) as p:
            for i, r in enumerate(p.imap_unordered(cell, todo)):
                rows.append(r)
                print(f"[{i + 1}/{len(todo)}] {r}", flush=True)
    else:
        for i, t in enumerate(todo):
            rows.append(cell(t))
            print(f"[{i + 1}/{len(todo)}] {rows[-1]}", flush=True)
    df = pd.DataFrame(rows)
    cmd = "python benchmarks/hard_budget.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.append and os.path.exists(args.out + ".csv"):
        df = pd.concat([pd.read_csv(args.out + ".csv"), df], ignore_index=True)
        cmd = "; ".join([*_commands(args.out), cmd.strip()])
    df.to_csv(args.out + ".csv", index=False)
    with open(args.out + ".md", "w") as f:
        f.write(report(df, cmd.strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
