"""Query-level calibration and model-assisted estimation on MQ2008 S5 (issue 6, items 1-2).

Relevance model and rankers are trained on S1-S3 (Fold1 training side); the pool is
S5 with its real LETOR labels as the truth.  For each method we repeat the budgeted
loop (same q, same costs as ``activerank.estimate``) and report the MSE of the
estimate, the label savings against passive at equal budget (1 - MSE/MSE_passive:
MSE is ~ proportional to 1/budget, so this is the fraction of labels saved), and the
correlation of predicted vs true per-query values before/after calibration.

Run:  python benchmarks/calibration.py [--reps 1000] [--data FOLDER]  (default $ACTIVERANK_DATA/mq2008)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

import activerank as ar
from activerank.api import make_design as design
from activerank.datasets import DatasetNotFoundError, dataset_dir
from activerank.relevance.calibration import fit_query_calibrator, query_features
from activerank.inference.model_assisted import model_assisted
from activerank.inference.snis import snis
from activerank.relevance.models import make_relevance_model
from activerank.relevance.rankers import fit_lambdarank_ranker, fit_linear_ranker
from activerank.design.sampling import draw_budgeted

HERE = Path(__file__).resolve().parent
METRIC = "err@10"


def _simulate(pool, rankings, probs, truth_values, method, budget, reps, rng, predicted=None):
    dsg = design(pool, rankings, probs, metric=METRIC, method=method, predicted=predicted,
                 costs="constant", judge="all")  # p / q weights over every query (no census stratum)
    target = float(np.dot(dsg.p, truth_values))
    pool_pred = float(np.dot(dsg.p, dsg.predicted_mean))
    err = np.empty(reps)
    cover = np.empty(reps, dtype=bool)
    for i in range(reps):
        plan = draw_budgeted(dsg.q, dsg.costs.cost, budget, rng)
        x = plan.queries
        w = dsg.p[x] / dsg.q[x]
        if method.startswith("model_assisted"):
            r = model_assisted(truth_values[x], dsg.predicted_mean[x], w, pool_pred,
                               tuned=method != "model_assisted_fixed")
        else:
            r = snis(truth_values[x], w)
        err[i] = r.estimate - target
        cover[i] = abs(err[i]) <= 1.959964 * r.standard_error
    return err, cover


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="folder with MQ2008 S1.txt ... S5.txt (default: $ACTIVERANK_DATA/mq2008)")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--budgets", default="20,40,80")
    ap.add_argument("--out", default=str(HERE / "results" / "calibration.csv"))
    args = ap.parse_args(argv)
    if args.data is None:
        try:
            args.data = str(dataset_dir("mq2008"))
        except DatasetNotFoundError as exc:
            ap.error(str(exc))
    t0 = time.perf_counter()
    train, vali, pool = ar.letor_fold(args.data, 1, n_grades=3)
    factory = lambda: make_relevance_model("lightgbm", 3, random_state=0)  # noqa: E731
    model = factory().fit(train.X, train.labels)
    probs = model.predict_proba(pool.X)
    rankers = {"lambdarank": fit_lambdarank_ranker(train, random_state=0),
               "linear": fit_linear_ranker(train, random_state=0)}
    pool_r = {n: r.rank(pool.X, pool.offsets) for n, r in rankers.items()}
    vali_r = {n: r.rank(vali.X, vali.offsets) for n, r in rankers.items()}
    truth = {n: ar.pool_metric_values(pool.labels, r, metric=METRIC, ymax=2) for n, r in pool_r.items()}

    scenarios = {
        "single lambdarank": (("lambdarank",), truth["lambdarank"]),
        "compare lambdarank-linear": (("lambdarank", "linear"),
                                      truth["lambdarank"] - truth["linear"]),
    }
    rows = []
    for scen, (names, values) in scenarios.items():
        pool_rankings = tuple(pool_r[n] for n in names)
        # calibrate on the validation split: model and rankers never saw it, as on the pool
        cal = fit_query_calibrator(vali, tuple(vali_r[n] for n in names), metric=METRIC,
                                   probs=model.predict_proba(vali.X))
        F = query_features(probs, pool_rankings, metric=METRIC)
        calibrated = cal.predict(F)
        raw_mean = F[:, 0]
        corr_raw = float(np.corrcoef(raw_mean, values)[0, 1])
        corr_cal = float(np.corrcoef(calibrated[0], values)[0, 1])
        print(f"{scen}: corr(predicted, true) raw {corr_raw:.3f} -> calibrated {corr_cal:.3f}")
        methods = [("passive", None), ("active", None), ("model_assisted", None),
                   ("model_assisted_variance", None),
                   ("model_assisted_fixed", None), ("active", calibrated),
                   ("model_assisted", calibrated)]
        for budget in [float(b) for b in args.budgets.split(",")]:
            mse = {}
            for method, pred in methods:
                label = method + ("+calibrated" if pred is not None else "")
                rng = np.random.default_rng(0)
                err, cover = _simulate(pool, pool_rankings, probs, values, method, budget,
                                       args.reps, rng, predicted=pred)
                mse[label] = float(np.mean(err**2))
                rows.append(dict(scenario=scen, budget=budget, method=label, mse=mse[label],
                                 mse_se=float(np.std(err**2, ddof=1) / np.sqrt(args.reps)),
                                 bias=float(err.mean()), coverage=float(cover.mean()),
                                 corr_raw=corr_raw, corr_calibrated=corr_cal))
            for r in rows[-len(methods):]:
                r["savings_vs_passive"] = 1 - r["mse"] / mse["passive"]
                r["savings_vs_active"] = 1 - r["mse"] / mse["active"]
    df = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(df[["scenario", "budget", "method", "mse", "coverage", "savings_vs_passive",
                  "savings_vs_active"]].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"[{time.perf_counter() - t0:.1f} s, {args.reps} repetitions per cell]")


if __name__ == "__main__":
    main()
