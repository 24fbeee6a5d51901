"""Tables and figure from benchmarks/peers/results/results.csv (see run.py).

Run:  python benchmarks/peers/report.py [--dir benchmarks/peers/results]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

AR = ("ar_wr_ma", "ar_wor_unif", "ar_wor_unif_b1", "ar_wor_active", "ar_safe")
GOALS = {"one": "≤ 0.95 (≤ 1.0 every budget)", "two": "≤ 0.85", "index": "≤ 0.35 ERR@10 / ≤ 0.5 DCG@10",
         "k_systems": "≤ 0.8"}


def _md(frame):
    frame = frame.reset_index()
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in frame.itertuples(index=False)]
    return "\n".join(lines)


def cell(r):
    win = "**" if r.ratio_high < 1 else ""
    return f"{win}{r.ratio:.2f}{win} [{r.ratio_low:.2f}, {r.ratio_high:.2f}]"


def table(df, method):
    sub = df[df.method == method]
    lines = ["| dataset | scenario | metric | mode | budgets | ratio per budget [95% bootstrap] | best peer per budget |",
             "|---|---|---|---|---|---|---|"]
    for (ds, sc, me, mo), g in sub.groupby(["dataset", "scenario", "metric", "mode"], sort=False):
        g = g.sort_values("budget")
        lines.append(f"| {ds} | {sc} | {me} | {mo} | {' / '.join(f'{b:g}' for b in g.budget)} | "
                     + " / ".join(cell(r) for _, r in g.iterrows()) + " | "
                     + " / ".join(g.best_peer) + " |")
    return "\n".join(lines)


def summary(df):
    rows = []
    for (ds, sc, me), g in df.groupby(["dataset", "scenario", "metric"], sort=False):
        row = {"dataset": ds, "scenario": sc, "metric": me, "goal": GOALS[sc]}
        for m in AR:
            r = g[g.method == m].ratio
            row[m] = f"{r.min():.2f}–{r.max():.2f} (gm {np.exp(np.log(r).mean()):.2f})"
        rows.append(row)
    out = pd.DataFrame(rows)
    cols = list(out.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in out.itertuples(index=False)]
    return "\n".join(lines)


def figure(df, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(df.groupby(["dataset", "scenario", "metric"], sort=False).groups)
    fig, axes = plt.subplots(4, 4, figsize=(16, 13), sharey=True)
    for ax, key in zip(axes.ravel(), keys):
        g = df[(df.dataset == key[0]) & (df.scenario == key[1]) & (df.metric == key[2]) & (df["mode"] == "queries")]
        for m in AR:
            s = g[g.method == m].sort_values("budget")
            ax.errorbar(s.budget, s.ratio, yerr=[s.ratio - s.ratio_low, s.ratio_high - s.ratio], label=m,
                        marker="o", ms=3, capsize=2)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(" ".join(key), fontsize=9)
    axes[0, 0].legend(fontsize=7)
    fig.supylabel("MSE ratio activerank method / best peer (equal distinct queries)")
    fig.supxlabel("distinct queries judged")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="benchmarks/peers/results")
    a = ap.parse_args(argv)
    d = Path(a.dir)
    df = pd.read_csv(d / "results.csv")
    md = ["# activerank vs PPI++ (ppi_py) and GLIDE, same inputs (issue 20)", "",
          "Regenerate: `python benchmarks/peers/run.py --reps 1000 --out benchmarks/peers/results` (Python >= 3.12 "
          "environment with `pip install -e .[peers]`), then `python benchmarks/peers/report.py`.", "",
          f"{int(df.reps.iloc[0])} seeded runs per cell; ratio = MSE(activerank method) / MSE(best peer in that cell); "
          "95% bootstrap interval (1000 resamples of runs); **bold** = interval excludes 1 (a win). "
          "Modes: `queries` = equal distinct queries (unit cost), `documents` = equal documents judged.", "",
          "## Range of the ratio over budgets and cost modes (gm = geometric mean)", "", summary(df), ""]
    for m in AR:
        md += [f"## `{m}`", "", table(df, m), ""]
    peers = df[df.method.isin(["ppi++", "glide_active", "glide_costopt"])]
    md += ["## Peers' MSE (×1e-4) per cell", "",
           peers.pivot_table(index=["dataset", "scenario", "metric", "mode", "budget"], columns="method",
                             values="mse", sort=False).mul(1e4).round(2).pipe(_md), ""]
    cov = df[df.method.isin(AR)].pivot_table(index=["dataset", "scenario", "metric", "mode", "budget"],
                                             columns="method", values="coverage", sort=False).round(3)
    md += ["## 95% CI coverage of activerank's intervals", "", _md(cov), ""]
    (d / "results.md").write_text("\n".join(md))
    figure(df, d / "fig_ratios.png")
    print(summary(df))


if __name__ == "__main__":
    main()
