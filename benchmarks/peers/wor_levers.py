"""Levers on ``active_wor``'s coefficient at equal queries (issue 30): what each would change, measured.

Two seeded measurements, no library change:

* ``peers``: OHSUMED's two-rankers and k-systems cells at equal queries, the design the public API builds
  (``default_api.api_design``), simulated by the plug-in's batched path (same seeds as ``default_api.py``)
  under four variants: ``rule`` (the library: one shared tuned coefficient, the small-pool rule at sampling
  fraction >= 0.2), ``per`` (a tuned coefficient per contrast), ``nosmall`` (shared, no small-pool rule) and
  ``per_nosmall``.  Ratio = MSE / the best peer's MSE in ``results/results.csv``; coverage of the reported
  interval; max |bias| / Monte-Carlo SE; mean variance estimate / empirical variance.
* ``small``: the tuned coefficient without the small-pool rule (``tuned``) against the rule on the small pools
  of ``benchmarks/wor_small_pool.py`` (the shipped 30-query sample, the synthetic 40-query pool, OHSUMED) at
  budgets spanning sampling fractions 0.1-0.7: bias / MC SE, coverage, variance ratio, SD.

Run:  python benchmarks/peers/wor_levers.py [--reps 1000] [--small-reps 4000]   (needs ACTIVERANK_DATA)
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np
import pandas as pd
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", ".."))

import default_api as da  # noqa: E402
import run as peers  # noqa: E402
import wor_small_pool as wsp  # noqa: E402

from activerank.design.kinds.query_wor import WithoutReplacementDesign  # noqa: E402
from activerank.design.without_replacement import approximate_inclusion_probabilities  # noqa: E402
from activerank.inference.horvitz_thompson import hajek_kernel  # noqa: E402


class PerContrast(WithoutReplacementDesign):
    """The batched path with a tuned, shrunk coefficient per output instead of one shared one."""

    def _shared_batch(self, Y, Mx, p, pi, mask, order):
        o = order[None]
        parts = [hajek_kernel(Y[:, j][o], pi, p[o], mask, predictions=Mx[:, j][o],
                              pool_prediction=float(p @ Mx[:, j]), tuned=True, ratio=False,
                              prior_coefficient=self.prior_coefficient) for j in range(Y.shape[1])]
        return np.stack([q[0] for q in parts]), np.stack([q[1] for q in parts])


VARIANTS = {
    "rule": lambda: WithoutReplacementDesign(coefficient=None),
    "per": lambda: PerContrast(coefficient=None),
    "nosmall": lambda: WithoutReplacementDesign(coefficient=None, small_pool=0),
    "per_nosmall": lambda: PerContrast(coefficient=None, small_pool=0),
}


def simulate(plug, dsg, labels, budget, reps, rng):
    """``default_api.sim_wor`` with another plug-in."""
    out_y, truth = da.truth_of(dsg, labels)
    census = dsg.census
    p_rest = dsg.p.copy()
    p_rest[census] = 0.0
    share = float(p_rest.sum())
    pred = dsg.prediction
    o = plug.simulate(out_y, pred.mean, p_rest / share, dsg.q, dsg.costs.cost, np.array([float(budget)]), reps, rng,
                      output_variance=pred.output_variance)
    t = out_y.shape[1]
    est = np.asarray(o["estimate"]).reshape(t, reps).T
    se = share * np.asarray(o["standard_error"]).reshape(t, reps).T
    exact = out_y[census].T @ dsg.p[census] if census.size else np.zeros(t)
    return da.summarize(exact[None] + share * est, se, np.asarray(o["dof"]).reshape(reps),
                        np.asarray(o["cost"]).reshape(reps), truth, budget)


def peers_cells(reps):
    ref = pd.read_csv(da.RESULTS / "results.csv")
    fm = peers.fit_dataset("ohsumed", None)
    rows = []
    for mi, metric in enumerate(peers.METRICS):
        for si, (scen, t) in enumerate(peers.make_tasks(fm, "ohsumed", metric).items()):
            if scen not in ("two", "k_systems"):
                continue
            for bi, B in enumerate(peers.BUDGETS["ohsumed"]):
                dsg, _ = da.api_design(fm, t, scen, metric, "queries", B)
                cell = ref[(ref.dataset == "ohsumed") & (ref.scenario == scen) & (ref.metric == metric)
                           & (ref["mode"] == "queries") & (ref.budget == B)]
                peer = float(cell.best_peer_mse.iloc[0])
                seed = [peers.SEED, 1, mi, si, 0, bi, 60]  # default_api.py's
                for name, make in VARIANTS.items():
                    s = simulate(make(), dsg, fm.pool.labels, B, reps, np.random.default_rng(seed + [1]))
                    rows.append(dict(scenario=scen, metric=metric, budget=B, variant=name,
                                     ratio=s["sq"].mean() / peer, coverage=s["coverage"],
                                     max_bias_z=s["max_bias_z"], var_ratio=s["var_ratio"]))
    return pd.DataFrame(rows)


SMALL_CELLS = [("sample", "single", "ap"), ("sample", "single", "rr"), ("sample", "index", "dcg@10"),
               ("sample", "pair", "err@10"), ("sample", "pair", "dcg@10"), ("synthetic", "pair", "err@10"),
               ("synthetic", "single", "dcg@10"), ("ohsumed", "single", "dcg@10"), ("ohsumed", "pair", "dcg@10")]


def small_cells(reps):
    pools = {"sample": wsp.sample_pool(), "synthetic": wsp.synthetic_pool(), "ohsumed": wsp.ohsumed_pool()}
    rows = []
    for ds, scen, metric in SMALL_CELLS:
        pool, probs, sa, sb = pools[ds]
        d, y, m, v = wsp.cell_arrays(pool, probs, sa, sb, scen, metric, (7, 6) if ds == "sample" else (7, 40))
        p = d.p.copy()
        p[d.census] = 0.0
        pn = p / p.sum()
        truth = pn @ y
        live = d.q > 0
        for B in ([4, 6, 8, 10, 12] if ds != "ohsumed" else [12, 20, 25, 30, 40]):
            frac = approximate_inclusion_probabilities(d.q, d.costs.cost, float(B))[live].sum() / live.sum()
            for name in ("rule", "nosmall"):
                o = VARIANTS[name]().simulate(y, m, pn, d.q, d.costs.cost, np.array([float(B)]), reps,
                                              np.random.default_rng([5, B]), output_variance=v)
                err = np.asarray(o["estimate"]).ravel() - truth
                se = np.asarray(o["standard_error"]).ravel()
                sd = err.std(ddof=1)
                q = stats.t.ppf(0.975, np.maximum(np.asarray(o["dof"]).ravel(), 1e-9))
                rows.append(dict(pool=ds, scenario=scen, metric=metric, budget=B, n_pool=int(live.sum()),
                                 fraction=frac, variant="tuned" if name == "nosmall" else "rule", sd=sd,
                                 bias_z=err.mean() / (sd / np.sqrt(reps)),
                                 coverage=float(np.mean(np.abs(err) <= q * se + 1e-12)),
                                 var_ratio=float(np.mean(se**2) / sd**2)))
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--small-reps", type=int, default=4000)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    out = da.RESULTS / "wor_levers"
    a = peers_cells(args.reps)
    b = small_cells(args.small_reps)
    a.to_csv(f"{out}_peers.csv", index=False)
    b.to_csv(f"{out}_small.csv", index=False)
    pd.set_option("display.width", 200)
    print(a.pivot_table(index=["scenario", "metric", "budget"], columns="variant",
                        values=["ratio", "coverage"]).round(3).to_string())
    print(b.round(3).to_string())


if __name__ == "__main__":
    main()
