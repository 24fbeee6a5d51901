"""``active_wor`` through the engine on the cells of ``benchmarks/metric_bias.py`` (one design only).

Runs :func:`metric_bias.cell` for ``active_wor`` (every metric x scenario of the chosen datasets and budgets),
exactly as ``metric_bias.py`` does, and writes ``benchmarks/results/wor_small_pool_engine.csv`` -- the
after-numbers of the small-pool fix, to set against the ``active_wor`` rows of ``metric_bias.csv``.

Run:  python benchmarks/wor_small_pool_engine.py [--reps 500] [--datasets sample] [--budgets 12] [--workers 2]
      [--before]   (``--before``: ``small_pool=0``, the estimator before the fix, on the same seeds)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from multiprocessing import Pool

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import metric_bias as mb  # noqa: E402


def _init(before: bool) -> None:
    mb._init()
    if before:
        from activerank.design.methods import get_method

        get_method("active_wor").kind.small_pool = 0


def compare_table(before_csv: str, after_csv: str) -> str:
    """Markdown: bias / MC SE, coverage, mean SE / SD and SD of every cell, before and after."""
    b, a = pd.read_csv(before_csv), pd.read_csv(after_csv)
    keys = ["dataset", "scenario", "metric", "budget"]
    if "design" in b:
        b = b[b["design"] == "active_wor"]
    m = b.merge(a, on=keys, suffixes=("_b", "_a"))
    rows = ["| data | scenario | metric | n | reps | bias/SE before | after | coverage before | after | "
            "SE/SD before | after | SD after / before |", "|" + "---|" * 12]
    for _, r in m.sort_values(keys).iterrows():
        rows.append(f"| {r.dataset} | {r.scenario} | {r.metric} | {r.n_queries_a:.1f} | {int(r.reps_a)} | "
                    f"{r.bias_se_b:+.1f} | {r.bias_se_a:+.1f} | {r.coverage_b:.3f} | {r.coverage_a:.3f} | "
                    f"{r.mean_se_b / r.sd_b if r.sd_b else float('nan'):.2f} | "
                    f"{r.mean_se_a / r.sd_a if r.sd_a else float('nan'):.2f} | "
                    f"{r.sd_a / r.sd_b if r.sd_b else float('nan'):.2f} |")
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--datasets", default="sample")
    ap.add_argument("--budgets", default="12")
    ap.add_argument("--metrics", default=",".join(mb.README_METRICS))
    ap.add_argument("--scenarios", default=",".join(mb.SCENARIOS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=20240531)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "wor_small_pool_engine.csv"))
    ap.add_argument("--before", action="store_true",
                    help="the large-pool path on every pool (small_pool=0: the behaviour before the fix)")
    ap.add_argument("--table", nargs=2, metavar=("BEFORE_CSV", "AFTER_CSV"),
                    help="only print the before/after Markdown table of two result files")
    args = ap.parse_args(argv)
    if args.table:
        print(compare_table(*args.table), end="")
        return 0
    cache_dir = os.path.join(HERE, "results", "cache")
    todo = [t for t in mb.tasks(args.datasets.split(","), mb._metrics(args.metrics.split(",")),
                                args.scenarios.split(","), [float(b) for b in args.budgets.split(",")],
                                args.reps, args.seed, cache_dir, small_budget=0)
            if t[4] == "active_wor"]
    for ds in args.datasets.split(","):
        if ds != "sample":
            mb.load(ds, cache_dir)
    t0 = time.perf_counter()
    rows = []
    with Pool(args.workers, initializer=_init, initargs=(args.before,)) as workers:
        for row in workers.imap_unordered(mb.cell, todo):
            rows.append(row)
            print(row["dataset"], row["scenario"], row["metric"], row["budget"], f"n={row['n_queries']:.1f}",
                  f"bias_se={row['bias_se']:+.1f}", f"cov={row['coverage']:.3f}",
                  f"se/sd={row['mean_se'] / row['sd'] if row['sd'] else float('nan'):.2f}", flush=True)
    df = pd.DataFrame(rows).sort_values(["dataset", "scenario", "metric", "budget"])
    df.to_csv(args.out, index=False)
    print(f"{len(rows)} cells, {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
