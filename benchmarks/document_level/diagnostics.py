"""Why the document-level savings are what they are: analytic ceilings on MQ2008 (no simulation).

For every task and fold, at the reference budget (100 whole queries' worth of documents):

* analytic savings of Poisson π-ps designs vs passive query sampling: the budget at which the exact
  design variance ``sum (1/pi - 1) ||W||^2 e^2`` (true labels) equals passive's ``sum_j Var_x(L_j) / 100``,
  for pi shaped by the model (``stat``: sqrt E[u^2], ``dyn``: sqrt Var u), by ``||W||`` alone (no model),
  and by the true residuals (``oracle_dyn``: |e|, ``oracle_stat``: u) -- the ceiling a perfect relevance
  model would reach;
* how much of a document's utility the relevance model explains (R^2 of E[u] for u on the pooled units);
* the shared query effect of the residuals (tau^2 / mean e^2: intra-query correlation).

Run:  python benchmarks/document_level/diagnostics.py [--folds 1,2,3,4,5]
Writes results/diagnostics.md.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from common import RESULTS, TASKS, build_task, config
from run import Context

from activerank.design.costs import document_costs
from activerank.design.kinds.documents import unit_scores, waterfill
from activerank.design.kinds.two_stage import query_effect_variance
from activerank.experiments.harness import fit_fold


def analytic_savings(ctx, score, e, ref=100.0):
    t = ctx.t
    nrm2 = (t.weights**2).sum(1)
    target = ctx.L.var(axis=1).sum() / ref  # passive: SRS of ref queries (with replacement)
    s = score + 1e-12 * t.norms
    lo, hi = 1e-3, 3 * ref * ctx.scale
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        pi = waterfill(s, ctx.c, mid)
        ok = pi > 0
        v = np.sum(np.where(ok, (1 - pi) / np.where(ok, pi, 1.0), 0.0) * nrm2 * e * e)
        lo, hi = (mid, hi) if v > target else (lo, mid)
    return 1.0 - hi / (ref * ctx.scale)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--folds", default="1,2,3,4,5")
    ap.add_argument("--cache", default=None)
    args = ap.parse_args()
    cfg = config(args.cache)
    rows = []
    for fold in [int(f) for f in args.folds.split(",")]:
        fm = fit_fold("mq2008", fold, cfg)
        dc, _ = document_costs(fm.pool, fm.pool.n_docs, "constant")
        for key in TASKS:
            ctx = Context(build_task(fm, key, fold), dc)
            t, probs = ctx.t, ctx.task.probs
            m = ctx.mom.mean
            e = ctx.u - m
            row = dict(fold=fold, task=key, units=t.n_units, matter=int(t.matters.sum()))
            row["stat"] = analytic_savings(ctx, unit_scores(t, probs, utility="rms"), ctx.u)
            row["dyn"] = analytic_savings(ctx, unit_scores(t, probs, utility="residual"), e)
            row["norm_only"] = analytic_savings(ctx, t.norms.copy(), e)
            row["oracle_dyn"] = analytic_savings(ctx, t.norms * np.abs(e), e)
            row["oracle_stat"] = analytic_savings(ctx, t.norms * ctx.u, ctx.u)
            row["r2_model"] = 1 - np.mean(e**2) / np.var(ctx.u)
            row["tau2_share"] = query_effect_variance(e, t.query) / np.mean(e**2)
            rows.append(row)
    df = pd.DataFrame(rows)
    g = df.groupby("task", sort=False).mean(numeric_only=True)
    lines = ["# Analytic ceilings of document-level sampling (MQ2008, DCG@10, mean over folds)", "",
             "Savings vs passive query sampling at 100 queries' worth of documents, Poisson π-ps designs, exact "
             "design variance with the true labels (no Monte Carlo).  `norm_only`: π ∝ ||W|| (no relevance "
             "model); `oracle_*`: π shaped by the true residuals / utilities.  `r2_model`: share of the "
             "variance of a pooled document's utility explained by E_θ[u].  `tau2_share`: shared query effect "
             "of the residuals over their mean square.", "",
             "| task | stat | dyn | norm_only | oracle_dyn | oracle_stat | r2_model | tau2_share |",
             "|---|---|---|---|---|---|---|---|"]
    for task, r in g.iterrows():
        lines.append(f"| {task} | {r.stat:.0%} | {r.dyn:.0%} | {r.norm_only:.0%} | {r.oracle_dyn:.0%} | "
                     f"{r.oracle_stat:.0%} | {r.r2_model:.2f} | {r.tau2_share:.2f} |")
    (RESULTS / "diagnostics.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
