"""The registered ``prefix`` method on the peers benchmark's ERR@10 cells at equal documents (issues 20, 17).

``prefix`` (:mod:`activerank.design.kinds.prefix`) samples queries (Poisson) and judges
each sampled query top down to a random depth: document ``j`` is judged iff
``U <= P_j``, ``P_j`` non-increasing and computed from the labels seen, and the
estimate is the model's pool mean plus the importance-weighted increments of the
model's conditional expectation.  At equal *documents* judged it can visit many
more queries than a whole-query design.  (At equal *queries* -- one cost unit per
query -- it has nothing to gain and is not run.)

Same tasks, seed layout and budgets as ``run.py``; simulated with the plug-in's
batched path (:meth:`~activerank.design.kinds.prefix.PrefixSampling.simulate`, the
engine's estimator on the same draws).  The peers are not rerun: the ratio is
MSE(prefix) / the best peer's stored MSE in ``results/results.csv`` with a 95%
bootstrap over prefix's runs; ``vs active_wor`` uses ``results/wor_api.csv``.
Runs in the main environment::

    python benchmarks/peers/prefix_api.py --reps 1000

Writes ``results/prefix_api.csv`` and ``results/prefix_api.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import run as peers  # noqa: E402
import wor_api  # noqa: E402

from activerank.design.methods import get_method  # noqa: E402
from activerank.design.kinds.prefix import prefix_layout
from activerank.metrics.registry import parse_metric  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
METRIC = "err@10"


def contrast_of(scen: str, n_systems: int) -> np.ndarray:
    if scen == "one":
        return np.ones((1, 1))
    if scen == "k_systems":  # candidates first, the baseline last
        return np.hstack([np.eye(n_systems - 1), -np.ones((n_systems - 1, 1))])
    return np.array([[1.0, -1.0]])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--datasets", nargs="*", default=["mq2008", "ohsumed"])
    ap.add_argument("--data", default=None)
    args = ap.parse_args(argv)
    ref = pd.read_csv(RESULTS / "results.csv")
    wor = pd.read_csv(RESULTS / "wor_api.csv")
    plug = get_method("prefix").kind
    metric = parse_metric(METRIC)
    gen = np.random.default_rng(0)
    rows = []
    for ds in args.datasets:
        fm = peers.fit_dataset(ds, args.data)
        pool, probs = fm.pool, fm.probs["model"]
        mi = peers.METRICS.index(METRIC)
        for si, (scen, t) in enumerate(peers.make_tasks(fm, ds, METRIC).items()):
            systems = [r.truncate(10) for r in t["systems"]]
            C = contrast_of(scen, len(systems))
            lam = t["cancel_costs"]["documents"] if scen != "one" else t["costs"]["documents"]
            keep = t["changes"].rows if t["changes"] is not None else None
            lay = prefix_layout(systems, C, metric, probs.shape[1], pool.n_docs, lam, np.ones(pool.n_docs),
                                keep=keep)
            live = (t["p"] > 0) & ~t["det"]
            truth = t["Y"] @ t["p"]
            v_wor = wor_api.predicted_variances(t, lam, peers.BUDGETS[ds], "documents")[0]
            for bi, B in enumerate(peers.BUDGETS[ds]):
                seed = [peers.SEED, ["mq2008", "ohsumed"].index(ds), mi, si, bi, 50]
                t0 = time.perf_counter()
                plan = plug.plan_queries(lay, probs, t["p"], t["V"].sum(0), live, float(B), np.random.default_rng(seed))
                est, cov, n, cost = plug.simulate(lay, plan, probs, pool.labels, t["p"], t["M"].T, args.reps,
                                                  np.random.default_rng(seed + [1]), output_variance=t["V"].T)
                secs = time.perf_counter() - t0
                ok = plan.pi > 0  # what method="auto" compares (activerank.design.auto.predicted_prefix_variance)
                V = t["V"].sum(0)[ok]
                v_prefix = float(np.sum(t["p"][ok] ** 2 * ((V + plan.within_variance[ok].sum(-1)) / plan.pi[ok] - V)))
                err = est - truth[None, :]
                sq = (err**2).sum(1)
                se = np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2), 0, None))
                covered = (np.abs(err) <= 1.959964 * se + 1e-12).mean(1)
                z = (err.mean(0) / (err.std(0, ddof=1) / np.sqrt(args.reps) + 1e-300))
                cell = ref[(ref.dataset == ds) & (ref.scenario == scen) & (ref.metric == METRIC)
                           & (ref["mode"] == "documents") & (ref.budget == B)]
                peer = float(cell.best_peer_mse.iloc[0])
                w = wor[(wor.dataset == ds) & (wor.scenario == scen) & (wor.metric == METRIC)
                        & (wor["mode"] == "documents") & (wor.budget == B)]
                idx = gen.integers(0, args.reps, (1000, args.reps))
                boot = sq[idx].mean(1) / peer
                rows.append(dict(dataset=ds, scenario=scen, budget=B, mse=sq.mean(), best_peer=cell.best_peer.iloc[0],
                                 best_peer_mse=peer, ratio=sq.mean() / peer, low=np.quantile(boot, 0.025),
                                 high=np.quantile(boot, 0.975), vs_active_wor=sq.mean() / float(w.mse.iloc[0]),
                                 coverage=covered.mean(), max_bias_z=float(np.abs(z).max()),
                                 var_ratio=float(np.mean(err.var(0, ddof=1) / np.mean(se**2, 0))),
                                 queries=n.mean(), cost=cost.mean(), seconds=secs, v_prefix=v_prefix,
                                 v_wor=v_wor[bi], predicted_over_mse=v_prefix / sq.mean()))
                rows[-1].update(auto="prefix" if v_prefix < v_wor[bi] else "active_wor",
                                auto_ratio=rows[-1]["ratio"] if v_prefix < v_wor[bi] else float(w.ratio.iloc[0]))
                r = rows[-1]
                print(f"{ds} {scen} B={B}: ratio {r['ratio']:.3f} [{r['low']:.2f}, {r['high']:.2f}] vs wor "
                      f"{r['vs_active_wor']:.3f} cover {r['coverage']:.3f} |z| {r['max_bias_z']:.1f} "
                      f"var/se2 {r['var_ratio']:.2f} n {r['queries']:.0f} cost {r['cost']:.1f}", flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(RESULTS / "prefix_api.csv", index=False)
    lines = ["# `prefix` (random-depth prefixes of sampled queries) vs the best peer, ERR@10 at equal documents",
             "", f"Generated by `benchmarks/peers/prefix_api.py --reps {args.reps}`. Ratio = MSE(prefix) / MSE(best "
             "peer of the cell, results.csv) [95% bootstrap over prefix's runs]; **bold** = interval below 1; "
             "`vs active_wor` = ratio to the 0.3 default (wor_api.csv); coverage of the normal 95% interval (mean "
             "over contrasts); `|bias|/SE` = largest Monte-Carlo z of the bias over contrasts; `var/SE²` = "
             "empirical variance over the mean estimated variance; `queries` = mean sampled queries; `auto` = what "
             "method='auto' runs (the smaller of the predicted variances of prefix and active_wor) and its ratio "
             "to the best peer; `pred/MSE` = prefix's predicted variance over its realized MSE (the model's "
             "labels are not the truth).", "",
             "| dataset | scenario | budget | ratio | vs active_wor | coverage | abs bias/SE | var/SE² | queries "
             "| auto | pred/MSE |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        rat = f"**{r.ratio:.2f}** [{r.low:.2f}, {r.high:.2f}]" if r.high < 1 else \
            f"{r.ratio:.2f} [{r.low:.2f}, {r.high:.2f}]"
        lines.append(f"| {r.dataset} | {r.scenario} | {r.budget:g} | {rat} | {r.vs_active_wor:.2f} | "
                     f"{r.coverage:.3f} | {r.max_bias_z:.1f} | {r.var_ratio:.2f} | {r.queries:.0f} | "
                     f"{r.auto} {r.auto_ratio:.2f} | {r.predicted_over_mse:.2f} |")
    gm = lambda x: np.exp(np.log(np.clip(x, 1e-12, None)).mean())  # noqa: E731
    lines += ["", "| scenario | ratio to best peer (range, gm) | vs active_wor (range, gm) | coverage "
              "| auto runs prefix | auto ratio (range) |",
              "|---|---|---|---|---|---|"]
    for scen, g in df.groupby("scenario", sort=False):
        lines.append(f"| {scen} | {g.ratio.min():.2f}–{g.ratio.max():.2f} (gm {gm(g.ratio):.2f}) | "
                     f"{g.vs_active_wor.min():.2f}–{g.vs_active_wor.max():.2f} (gm {gm(g.vs_active_wor):.2f}) | "
                     f"{g.coverage.min():.3f}–{g.coverage.max():.3f} | {(g.auto == 'prefix').sum()}/{len(g)} | "
                     f"{g.auto_ratio.min():.2f}–{g.auto_ratio.max():.2f} |")
    (RESULTS / "prefix_api.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-(df.scenario.nunique() + 2):]))


if __name__ == "__main__":
    main()
