"""k systems on MQ2008: 4 candidates vs a baseline, and ranking all 5 systems.

Setup (LETOR Fold1): rankers and the relevance model are trained on S1-S3;
the relevance model's hyper-parameters are picked by validation log-loss on S4;
the pool is S5 (156 queries), whose labels are hidden from every method and
only give the true per-query values the simulated labeler returns.

Systems
    baseline    LightGBM lambdarank (300 trees, 15 leaves, lr 0.05) -- "production"
    lr_big      LightGBM lambdarank, 63 leaves, 600 trees, lr 0.1
    ranksvm     linear RankSVM on standardized features
    model_eg    the relevance model's expected gain  sum_y (2^y - 1) p(y)
    bm25        BM25 of the whole document (LETOR feature 25)

Tasks (metric ERR@10 and DCG@10; cost = constant per judged document, i.e. a
query costs the number of distinct documents in the union of all five
top-10 lists -- MQ2008 lengths are query-normalised, see experiment.py)
    vs_baseline  ``compare_many`` design (q* minimizing the sum of the 4
                 candidate-minus-baseline variances): MSE of the 4 difference
                 estimates (mean over candidates), Kendall tau of the
                 candidates ordered by the estimated differences vs the true
                 order, top-1 accuracy, per-candidate and simultaneous
                 (max-|t|) 95% CI coverage.
    rank_all     ``rank_systems`` design (q* minimizing the summed variance of
                 the differences to the mean system): Kendall tau of the
                 estimated ranking of all 5 systems, top-1 accuracy, MSE of the
                 differences to the mean system, coverage.
for budgets Lambda (units of the mean query cost) and methods active/passive,
``--reps`` repetitions each (default 500).  Draws are simulated in batch
(``activerank.design.draws.draw_budgeted_batch``; budgets are prefixes of one
run) and every estimate is the library's joint SNIS estimator
(``activerank.inference.snis.joint_snis``), computed on prefixes.

Run:  python benchmarks/k_systems.py [--data ROOT]  (default $ACTIVERANK_DATA) [--reps 500] [--quick]
Writes benchmarks/results/k_systems.csv and prints a table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from activerank.datasets import DatasetNotFoundError, data_root  # noqa: E402
from activerank.io.letor import letor_fold  # noqa: E402
from activerank.metrics import pool_metric_values  # noqa: E402
from activerank.relevance.models import fit_with_validation, make_relevance_model  # noqa: E402
from activerank.api import make_design  # noqa: E402
from activerank.inference.intervals import kendall_tau, max_abs_t_critical_value  # noqa: E402
from activerank.relevance.rankers import (  # noqa: E402
    expected_gain_scores,
    fit_lambdarank_ranker,
    fit_linear_ranker,
    rank_by_scores,
)
from activerank.design.draws import budget_stops, draw_budgeted_batch  # noqa: E402

SEED = 0
BUDGETS = (10, 20, 40, 80)
METRICS = ("err@10", "dcg@10")
BM25_FEATURE = 25  # 1-based LETOR 4.0 feature number: BM25 of the whole document


def build_systems(data_root, quick=False):
    """Train the five systems and the relevance model; return pool, scores, probs."""
    train, vali, test = letor_fold(f"{data_root}/mq2008", 1, n_grades=3, length_feature=20)
    n_est = 50 if quick else None
    systems = {}
    systems["baseline"] = fit_lambdarank_ranker(train, random_state=SEED, n_jobs=2,
                                                **({"n_estimators": n_est} if quick else {}))
    systems["lr_big"] = fit_lambdarank_ranker(train, num_leaves=63, n_estimators=n_est or 600,
                                              learning_rate=0.1, random_state=SEED, n_jobs=2)
    systems["ranksvm"] = fit_linear_ranker(train, method="ranksvm", random_state=SEED)
    grid = {"num_leaves": [7, 31], "learning_rate": [0.03, 0.1], "n_estimators": [150]}
    if quick:
        grid = {k: v[:1] for k, v in grid.items()}
    factory = partial(make_relevance_model, "lightgbm", test.n_grades, random_state=SEED, n_jobs=2)
    model = fit_with_validation(factory, grid, train, vali).model
    probs = model.predict_proba(test.X)
    scores = {name: rk.scores(test.X) for name, rk in systems.items()}
    scores["model_eg"] = expected_gain_scores(probs)
    scores["bm25"] = test.X[:, BM25_FEATURE - 1]
    order = ["lr_big", "ranksvm", "model_eg", "bm25", "baseline"]  # candidates first, baseline last
    return test, {n: scores[n] for n in order}, probs


def _prefix(cums, stops):
    """sum over the first ``stops`` draws from row-wise cumulative sums; stops (n_b, reps)."""
    idx = np.maximum(stops - 1, 0)
    out = cums[np.arange(cums.shape[0])[None, :], idx]
    return np.where(stops > 0, out, 0.0)


def joint_snis_prefix(values, weights, stops):
    """Joint SNIS estimates and delta-method covariances on draw prefixes.

    values : (s, reps, n_cols); weights : (reps, n_cols); stops : (n_b, reps).
    Returns est (n_b, reps, s), cov (n_b, reps, s, s) -- per run identical to
    ``activerank.inference.snis.joint_snis`` on the first ``stops`` draws.
    """
    s = values.shape[0]
    c = values[:, :, 0].mean(axis=1)
    d = values - c[:, None, None]
    w2 = weights**2
    S_w = _prefix(np.cumsum(weights, axis=1), stops)
    S_w2 = _prefix(np.cumsum(w2, axis=1), stops)
    m = np.stack([_prefix(np.cumsum(weights * d[i], axis=1), stops) for i in range(s)], -1) / S_w[..., None]
    S_w2d = np.stack([_prefix(np.cumsum(w2 * d[i], axis=1), stops) for i in range(s)], -1)
    cov = np.empty(stops.shape + (s, s))
    n = stops.astype(float)
    for i in range(s):
        for j in range(i, s):
            S = _prefix(np.cumsum(w2 * d[i] * d[j], axis=1), stops)
            ss = S - m[..., i] * S_w2d[..., j] - m[..., j] * S_w2d[..., i] + m[..., i] * m[..., j] * S_w2
            with np.errstate(invalid="ignore", divide="ignore"):
                cov[..., i, j] = cov[..., j, i] = n / (n - 1) * ss / S_w**2
    return m + c, cov


def _tau_rows(est, truth):
    return np.array([kendall_tau(e, truth) for e in est])


def run_task(pool, names, values, probs, metric, task, method, budgets, reps, rng):
    """One (metric, task, method): rows per budget."""
    s = len(names)
    ranks = [rank_by_scores(v, pool.offsets) for v in values["scores"]]
    target = "baseline" if task == "vs_baseline" else "mean"
    dsg = make_design(pool, ranks, probs, target="baseline" if target == "baseline" else "ranking", metric=metric,
                      method=method, costs="constant", names=names,
                      judge="all")  # this script weights every query with p / q (no census stratum)
    L = values["L"]  # (s, n_q) true per-query values
    if target == "baseline":
        A = np.hstack([np.eye(s - 1), -np.ones((s - 1, 1))])
    else:
        A = np.eye(s) - 1.0 / s
    truth_all = L @ dsg.p  # true R_i
    truth = A @ truth_all
    plan = draw_budgeted_batch(dsg.q, dsg.costs.cost, max(budgets), reps, rng)
    stops = budget_stops(plan, budgets)
    Q = plan.queries
    W = np.where(plan.valid, dsg.p[Q] / dsg.q[Q], 0.0)
    est, cov = joint_snis_prefix(L[:, Q], W, stops)
    tgt = est @ A.T
    tcov = np.einsum("ij,brjk,lk->bril", A, cov, A)
    rows = []
    for b, budget in enumerate(budgets):
        err = tgt[b] - truth
        se = np.sqrt(np.clip(np.einsum("rii->ri", tcov[b]), 0.0, None))  # round-off can dip below 0
        cover = np.abs(err) <= 1.959964 * se
        crit = np.array([max_abs_t_critical_value(c) for c in tcov[b]])
        joint = np.all(np.abs(err) <= crit[:, None] * se, axis=1)
        # ordering: candidates by estimated difference (vs_baseline) or all systems (rank_all)
        order_est = tgt[b] if target == "baseline" else est[b]
        order_true = truth if target == "baseline" else truth_all
        taus = _tau_rows(order_est, order_true)
        top1 = np.argmax(order_est, axis=1) == np.argmax(order_true)
        rows.append(dict(
            metric=metric, task=task, method=method, budget=budget, reps=reps,
            n_draws=float(stops[b].mean()), n_queries=float(np.mean([np.unique(Q[r, :stops[b, r]]).size
                                                                    for r in range(reps)])),
            kendall_tau=float(taus.mean()), kendall_tau_se=float(taus.std(ddof=1) / np.sqrt(reps)),
            top1=float(top1.mean()),
            mse=float(np.mean(err**2)), mse_se=float(np.mean(err**2, axis=1).std(ddof=1) / np.sqrt(reps)),
            bias_max_t=float(np.max(np.abs(err.mean(0)) / (err.std(0, ddof=1) / np.sqrt(reps)))),
            coverage=float(cover.mean()), coverage_min=float(cover.mean(0).min()),
            simultaneous_coverage=float(joint.mean()), critical_value=float(np.mean(crit)),
        ))
    return rows


def run(data_root, reps=500, budgets=BUDGETS, quick=False):
    t0 = time.perf_counter()
    pool, scores, probs = build_systems(data_root, quick)
    names = list(scores)
    ymax = pool.n_grades - 1
    print(f"MQ2008 Fold1 pool S5: {pool.n_queries} queries, {pool.n_docs} documents; systems {names} "
          f"(trained in {time.perf_counter() - t0:.0f}s)", flush=True)
    rng = np.random.default_rng(SEED)
    rows, truths = [], []
    for metric in METRICS:
        L = np.stack([pool_metric_values(pool.labels, rank_by_scores(v, pool.offsets), metric=metric, ymax=ymax)
                      for v in scores.values()])
        truths.append(pd.Series(L.mean(axis=1), index=names, name=metric))
        values = {"scores": list(scores.values()), "L": L}
        for task in ("vs_baseline", "rank_all"):
            for method in ("active", "passive"):
                rows += run_task(pool, names, values, probs, metric, task, method, budgets, reps, rng)
    df = pd.DataFrame(rows)
    truth = pd.concat(truths, axis=1)
    return df, truth


def savings_table(df):
    """Active vs passive side by side, with the MSE ratio."""
    a = df[df.method == "active"].set_index(["metric", "task", "budget"])
    p = df[df.method == "passive"].set_index(["metric", "task", "budget"])
    out = pd.DataFrame({
        "tau_active": a.kendall_tau, "tau_passive": p.kendall_tau,
        "top1_active": a.top1, "top1_passive": p.top1,
        "mse_ratio": a.mse / p.mse,
        "cov_active": a.coverage, "simcov_active": a.simultaneous_coverage,
        "cov_passive": p.coverage, "simcov_passive": p.simultaneous_coverage,
    })
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="data root holding mq2008/ and ohsumed-letor3/ (default: $ACTIVERANK_DATA)")
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--quick", action="store_true", help="small models, 100 reps")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args(argv)
    if args.data is None:
        try:
            args.data = str(data_root())
        except DatasetNotFoundError as exc:
            ap.error(str(exc))
    reps = 100 if args.quick else args.reps
    t0 = time.perf_counter()
    df, truth = run(args.data, reps=reps, quick=args.quick)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "k_systems.csv")
    df.to_csv(path, index=False, float_format="%.6g")
    pd.set_option("display.width", 200)
    print("\nTrue mean metric on the pool:")
    print(truth.round(4).to_string())
    print("\nPer method:")
    cols = ["metric", "task", "method", "budget", "n_queries", "kendall_tau", "top1", "mse", "coverage",
            "coverage_min", "simultaneous_coverage", "critical_value", "bias_max_t"]
    print(df[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print("\nActive vs passive (mse_ratio < 1: active better):")
    print(savings_table(df).to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"\nwrote {os.path.relpath(path)} ({time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
