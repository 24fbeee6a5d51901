"""The registered ``active_wor`` method on the peers benchmark's cells (issue 20).

``active_wor`` = the engine's without-replacement design as the public API runs it
(:mod:`activerank.design.wor_methods`): budgeted sequential Poisson sample with
scores ``p sqrt(Var[L|x] / lambda)`` (defensive 0.1) over the undetermined queries
(comparisons: changeable-document costs, determined queries a census stratum),
difference estimator ``M + HT(y - m)`` (unbiased), SE pooled with the model's
predicted design variance, Student-t.  Simulated by the plug-in's own batched path
(:meth:`~activerank.design.wor_methods.WithoutReplacementDesign.simulate`, equal to
the engine's fit sample by sample: tests/design/test_wor_methods.py).

Same tasks, seeds layout, budgets and cost modes as ``run.py``; the peers are not
rerun: the ratio is MSE(active_wor) / the best peer's MSE stored in
``results/results.csv`` (same 1000-run cells), with a 95% interval from
bootstrapping active_wor's runs only (the peer's MSE taken as fixed: narrower than
run.py's intervals).  Runs in the main environment (no peer libraries needed)::

    python benchmarks/peers/wor_api.py --reps 1000

Writes ``results/wor_api.csv`` and ``results/wor_api.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import run as peers  # noqa: E402

from activerank.design.methods import get_method  # noqa: E402
from activerank.design.sampling import optimal_distribution  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def simulate_wor(t, lam, budgets, reps, seed):
    """Per contrast: the plug-in's batched simulation over the undetermined queries (one shared sample:
    the same generator state for every contrast); returns summed squared error per run and coverage."""
    plug = get_method("active_wor").estimator
    Y, Mx, V, p = t["Y"], t["M"], t["V"], t["p"]
    det = t.get("det", np.zeros(p.size, dtype=bool))
    live = ~det
    mass = float(p[live].sum())
    pq = p[live] / mass
    scores = optimal_distribution(V.sum(0)[live], lam[live], pq, defensive=0.1)
    R = p @ Y.T
    sq = np.zeros((len(budgets), reps))
    covered = np.zeros((len(budgets), reps))
    n = None
    for j in range(Y.shape[0]):
        out = plug.simulate(Y[j][live], Mx[j][live], pq, scores, lam[live], np.asarray(budgets, float), reps,
                            np.random.default_rng(seed), output_variance=V[j][live])
        est = mass * out["estimate"]  # determined queries: contrast exactly 0
        se = mass * out["standard_error"]
        n = out["n"]
        from scipy.stats import t as student

        q = student.ppf(0.975, np.maximum(n - 1, 1))
        err = est - R[j]
        sq += err**2
        covered += (np.abs(err) <= q * se + 1e-12 * np.maximum(1.0, np.abs(R[j]))) / Y.shape[0]  # exact runs: SE 0
    return sq, covered, n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--datasets", nargs="*", default=["mq2008", "ohsumed"])
    ap.add_argument("--data", default=None)
    args = ap.parse_args(argv)
    ref = pd.read_csv(RESULTS / "results.csv")
    rows = []
    gen = np.random.default_rng(0)
    for ds in args.datasets:
        fm = peers.fit_dataset(ds, args.data)
        budgets = peers.BUDGETS[ds]
        for mi, metric in enumerate(peers.METRICS):
            for si, (scen, t) in enumerate(peers.make_tasks(fm, ds, metric).items()):
                for ci, mode in enumerate(("queries", "documents")):
                    lam = t["cancel_costs"][mode] if scen != "one" else t["costs"][mode]
                    seed = [peers.SEED, ["mq2008", "ohsumed"].index(ds), mi, si, ci, 40]
                    sq, cov, n = simulate_wor(t, lam, budgets, args.reps, seed)
                    for bi, B in enumerate(budgets):
                        cell = ref[(ref.dataset == ds) & (ref.scenario == scen) & (ref.metric == metric)
                                   & (ref["mode"] == mode) & (ref.budget == B)]
                        peer = float(cell.best_peer_mse.iloc[0])
                        default = float(cell[cell.method == "ar_default"].mse.iloc[0])
                        boot = sq[bi][gen.integers(0, args.reps, (1000, args.reps))].mean(1) / peer
                        rows.append(dict(dataset=ds, scenario=scen, metric=metric, mode=mode, budget=B,
                                         mse=sq[bi].mean(), best_peer=cell.best_peer.iloc[0], best_peer_mse=peer,
                                         ratio=sq[bi].mean() / peer, low=np.quantile(boot, 0.025),
                                         high=np.quantile(boot, 0.975), vs_default=sq[bi].mean() / default,
                                         coverage=cov[bi].mean(), queries=n[bi].mean()))
                print(ds, metric, scen, flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(RESULTS / "wor_api.csv", index=False)
    lines = ["# `active_wor` (the registered without-replacement method) vs the best peer, same cells (issue 20)",
             "", f"Generated by `benchmarks/peers/wor_api.py --reps {args.reps}`. Ratio = MSE(active_wor) / MSE(best "
             "peer of the cell, from results.csv); [95% bootstrap over active_wor's runs]; **bold** = interval "
             "below 1; `vs default` = MSE ratio to `ar_default` (the API default, method='active'); coverage of "
             "the 95% Student-t interval (mean over contrasts).", "",
             "| dataset | scenario | metric | mode | ratio per budget | vs default per budget | coverage |",
             "|---|---|---|---|---|---|---|"]
    for key, g in df.groupby(["dataset", "scenario", "metric", "mode"], sort=False):
        r = " / ".join((f"**{a:.2f}** [{lo:.2f}, {hi:.2f}]" if hi < 1 else f"{a:.2f} [{lo:.2f}, {hi:.2f}]")
                       for a, lo, hi in zip(g.ratio, g.low, g.high))
        v = " / ".join(f"{x:.2f}" for x in g.vs_default)
        c = " / ".join(f"{x:.3f}" for x in g.coverage)
        lines.append(f"| {' | '.join(key)} | {r} | {v} | {c} |")
    lines += ["", "Summary (range over datasets and budgets):", "",
              "| scenario | metric | mode | ratio to best peer | cells with interval below 1 | vs default | coverage |",
              "|---|---|---|---|---|---|---|"]
    for key, g in df.groupby(["scenario", "metric", "mode"], sort=False):
        lines.append(f"| {' | '.join(key)} | {g.ratio.min():.2f}–{g.ratio.max():.2f} "
                     f"(gm {np.exp(np.log(g.ratio).mean()):.2f}) | {(g.high < 1).sum()}/{len(g)} | "
                     f"{g.vs_default.min():.2f}–{g.vs_default.max():.2f} | "
                     f"{g.coverage.min():.3f}–{g.coverage.max():.3f} |")
    (RESULTS / "wor_api.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-(len(df.groupby(['scenario', 'metric', 'mode'])) + 2):]))


if __name__ == "__main__":
    main()
