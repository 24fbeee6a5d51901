"""Benchmark the relevance models p(y|x,z) on MQ2008 and OHSUMED (LETOR Fold1).

Layout: train S1-S3, validation S4 (hyper-parameters by validation log-loss
over a small grid), test S5.  For every model, on the test queries:

- ``logloss``      held-out multiclass log-loss (nats, lower is better);
- ``ece_rel``      expected calibration error of P(y >= 1), 10 equal-width bins;
- ``err10``/``ndcg10``  true mean ERR@10 / NDCG@10 of the ranker that orders
  each query by the model's expected gain sum_y (2^y - 1) p(y);
- ``corr_err10``   Pearson correlation, over test queries, between the model's
  predicted E[ERR@10 | x] (exact, ``activerank.metrics.moments.pool_moments``) for
  that ranker and the true per-query ERR@10;
- ``corr_err10_lr`` the same correlation for a *fixed* LightGBM lambdarank
  ranker (trained on S1-S3), i.e. how well the model predicts the quality of
  a ranker it did not produce -- the situation of active evaluation.

OHSUMED: models use the QueryLevelNorm features; document length (for cost
models) comes from the raw Feature-min twin files (``ohsumed_doc_length``).
``OHSUMED-raw`` is a side experiment with the raw Feature-min features for
the models (query-level normalisation removes the across-query scale that
tells how many relevant documents a query has).

Run:  python benchmarks/relevance_models.py [--data ROOT]  (default $ACTIVERANK_DATA) [--quick]
Writes benchmarks/results/relevance_models.csv and prints a table.
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
from activerank.io.letor import letor_fold, ohsumed_doc_length  # noqa: E402
from activerank.metrics import pool_metric_values  # noqa: E402
from activerank.relevance.models import fit_with_validation, grade_log_loss, make_relevance_model  # noqa: E402
from activerank.metrics.moments import pool_moments  # noqa: E402
from activerank.relevance.rankers import expected_gain_scores, fit_lambdarank_ranker, rank_by_scores  # noqa: E402

SEED = 0
DATASETS = ("MQ2008", "OHSUMED")  # "OHSUMED-raw" on request (--datasets)
N_JOBS = 2

# (label, factory name, fixed params, grid)
MODELS = [
    ("uniform", "uniform", {}, {}),
    ("rf_regression[linear]", "rf_regression", {"method": "linear", "n_estimators": 200},
     {"min_samples_leaf": [5, 20], "max_features": [0.3, 0.6]}),
    ("rf_regression[round]", "rf_regression", {"method": "round", "n_estimators": 200},
     {"min_samples_leaf": [5, 20], "max_features": [0.3, 0.6]}),
    ("rf_regression[leaf]", "rf_regression", {"method": "leaf", "n_estimators": 200},
     {"min_samples_leaf": [5, 20], "max_features": [0.3, 0.6]}),
    ("rf_classifier", "rf_classifier", {"n_estimators": 200},
     {"min_samples_leaf": [5, 20], "max_features": [0.3, 0.6]}),
    ("lightgbm", "lightgbm", {},
     {"num_leaves": [7, 31], "learning_rate": [0.03, 0.1], "n_estimators": [150]}),
    ("ordered_logit[AT]", "ordered_logit", {}, {"alpha": [0.1, 1.0, 10.0, 100.0]}),
    ("ordered_logit[IT]", "ordered_logit_it", {}, {"alpha": [0.1, 1.0, 10.0, 100.0]}),
    ("logistic", "logistic", {}, {"C": [0.01, 0.1, 1.0, 10.0]}),
]


def ece_relevant(probs, labels, n_bins=10):
    """Expected calibration error of P(y >= 1) with equal-width bins."""
    p = 1.0 - probs[:, 0]
    obs = (labels >= 1).astype(float)
    b = np.minimum((p * n_bins).astype(int), n_bins - 1)
    n = np.bincount(b, minlength=n_bins)
    sp = np.bincount(b, p, minlength=n_bins)
    so = np.bincount(b, obs, minlength=n_bins)
    nz = n > 0
    return float(np.sum(np.abs(sp[nz] - so[nz])) / p.size)


def pearson(a, b):
    """Pearson correlation; NaN if either side is constant (up to round-off)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if np.ptp(a) <= 1e-12 * max(1.0, np.abs(a).max()) or np.ptp(b) <= 1e-12 * max(1.0, np.abs(b).max()):
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def load(data_root, name):
    if name == "MQ2008":
        return letor_fold(f"{data_root}/mq2008", 1, n_grades=3, length_feature=20)
    root = f"{data_root}/ohsumed-letor3"
    if name == "OHSUMED":
        return letor_fold(
            f"{root}/QueryLevelNorm", 1, n_grades=3,
            length_root=f"{root}/Feature-min", length_feature=ohsumed_doc_length,
        )
    # side experiment: the raw (unnormalised) features, which keep across-query scale
    return letor_fold(f"{root}/Feature-min", 1, n_grades=3, length_feature=ohsumed_doc_length)


def run(data_root, quick=False, datasets=DATASETS):
    rows = []
    for ds in datasets:
        t0 = time.perf_counter()
        train, vali, test = load(data_root, ds)
        ymax = test.n_grades - 1
        print(
            f"\n{ds}: train {train.n_queries} q / {train.n_docs} docs, vali {vali.n_queries} q, "
            f"test {test.n_queries} q / {test.n_docs} docs; median doc length "
            f"{np.median(test.doc_length):.3g} (loaded in {time.perf_counter() - t0:.1f}s)",
            flush=True,
        )
        lr = fit_lambdarank_ranker(train, random_state=SEED, n_jobs=N_JOBS).rank(test)
        lr_err = pool_metric_values(test.labels, lr, metric="err@10", ymax=ymax)
        lr_ndcg = pool_metric_values(test.labels, lr, metric="ndcg(gain=exp)@10", ymax=ymax)
        rows.append(dict(dataset=ds, model="(lambdarank ranker)", params="", logloss=np.nan, ece_rel=np.nan,
                         err10=lr_err.mean(), ndcg10=lr_ndcg.mean(), corr_err10=np.nan,
                         corr_err10_lr=np.nan, seconds=np.nan))
        for label, name, fixed, grid in MODELS:
            t0 = time.perf_counter()
            extra = {"n_jobs": N_JOBS} if name in ("rf_regression", "rf_classifier", "lightgbm") else {}
            if quick:
                grid = {k: v[:1] for k, v in grid.items()}
                if "n_estimators" in fixed:
                    fixed = {**fixed, "n_estimators": 50}
            factory = partial(make_relevance_model, name, test.n_grades, random_state=SEED, **fixed, **extra)
            res = fit_with_validation(factory, grid, train, vali)
            probs = res.model.predict_proba(test.X)
            rk = rank_by_scores(expected_gain_scores(probs), test)
            true_err = pool_metric_values(test.labels, rk, metric="err@10", ymax=ymax)
            true_ndcg = pool_metric_values(test.labels, rk, metric="ndcg(gain=exp)@10", ymax=ymax)
            pred_err = pool_moments(probs, rk, metric="err@10").mean
            pred_err_lr = pool_moments(probs, lr, metric="err@10").mean
            row = dict(
                dataset=ds,
                model=label,
                params=" ".join(f"{k}={v}" for k, v in res.params.items()),
                logloss=grade_log_loss(probs, test.labels),
                ece_rel=ece_relevant(probs, test.labels),
                err10=true_err.mean(),
                ndcg10=true_ndcg.mean(),
                corr_err10=pearson(pred_err, true_err),
                corr_err10_lr=pearson(pred_err_lr, lr_err),
                seconds=time.perf_counter() - t0,
            )
            rows.append(row)
            print(
                f"  {label:24s} logloss {row['logloss']:.4f}  ece {row['ece_rel']:.4f}  "
                f"ERR@10 {row['err10']:.4f}  NDCG@10 {row['ndcg10']:.4f}  "
                f"corr {row['corr_err10']:.3f} / {row['corr_err10_lr']:.3f}  "
                f"[{row['params']}] {row['seconds']:.1f}s",
                flush=True,
            )
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="data root holding mq2008/ and ohsumed-letor3/ (default: $ACTIVERANK_DATA)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS),
                    choices=["MQ2008", "OHSUMED", "OHSUMED-raw"])
    ap.add_argument("--quick", action="store_true", help="one grid point, fewer trees (smoke test)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "relevance_models.csv"))
    args = ap.parse_args(argv)
    if args.data is None:
        try:
            args.data = str(data_root())
        except DatasetNotFoundError as exc:
            ap.error(str(exc))
    df = run(args.data, quick=args.quick, datasets=args.datasets)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    df.to_csv(args.out, index=False, float_format="%.5f")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print("\n" + df.drop(columns=["params"]).to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
