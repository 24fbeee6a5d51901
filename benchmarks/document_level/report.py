"""Tables and figures from the CSVs written by run.py (no simulation here).

Run:  python benchmarks/document_level/report.py [--datasets mq2008,ohsumed]
Reads results/<dataset>/{curves,savings,depth_k}.csv; writes results/savings.md and
results/fig_<dataset>.png.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from common import RESULTS

GOALS = {"single": ("a_rf", "a_ologit", 0.30), "two rankers": ("b_rfreg_rfcls", "b_ologit_linear", "b_ologit_rf", 0.60),
         "index update": ("c_index", 0.75), "k systems": ("k_baseline", "k_rank", 0.50)}
TITLES = {
    "a_rf": "single: RF regression", "a_ologit": "single: ordered logit",
    "b_rfreg_rfcls": "pair: RF reg vs RF cls", "b_ologit_linear": "pair: ologit vs RankSVM",
    "b_ologit_rf": "pair: ologit vs RF reg", "c_index": "index update (10% removed)",
    "k_baseline": "4 candidates vs baseline", "k_rank": "ranking 5 systems",
}
METHODS = ["passive", "active", "active_cancel", "doc_uniform", "doc_uniform_inf", "doc_hh_naive", "doc_hh",
           "doc_stat", "doc_dyn", "two_stage", "ubis"]
UNBIASED = [m for m in METHODS if m != "doc_uniform_inf"]
SHOW = ["active", "active_cancel", "doc_uniform", "doc_hh", "doc_stat", "doc_dyn", "two_stage", "ubis"]


def goal_of(task):
    for name, spec in GOALS.items():
        if task in spec[:-1]:
            return name, spec[-1]
    return None, None


def fmt(row):
    if row is None or not np.isfinite(row.savings):
        return "–"
    cens = {-1: "≥", 1: "≤"}.get(int(row.censored), "")
    return f"{cens}{row.savings:.0%} [{row.low:.0%}, {row.high:.0%}]"


def mean_curves(curves):
    g = curves.groupby(["task", "method", "budget"], as_index=False).agg(
        cost=("mean_cost", "mean"), loss=("mean_loss", "mean"), coverage=("coverage", "mean"),
        valid=("valid", "all"), bias=("max_abs_bias", "mean"))
    return g


def interp_loss(curve, cost):
    c = curve[curve.valid & (curve.cost > 0)].sort_values("cost")
    if c.empty or cost < c.cost.iloc[0] or cost > c.cost.iloc[-1]:
        return np.nan
    return float(np.exp(np.interp(np.log(cost), np.log(c.cost), np.log(c.loss))))


def dataset_section(ds):
    folder = RESULTS / ds
    sav = pd.read_csv(folder / "savings.csv")
    curves = pd.read_csv(folder / "curves.csv")
    depth = pd.read_csv(folder / "depth_k.csv")
    mc = mean_curves(curves)
    n_folds = curves.fold.nunique()
    lines = [f"## {ds.upper()}", "",
             f"{n_folds} folds; savings vs passive query sampling at equal documents judged (budget where the "
             "design's mean loss reaches passive's at the reference budget; 95% bootstrap interval; "
             "≥ / ≤: censored at the grid's end).  Loss: absolute error (one target), summed squared error "
             "over the contrasts (k systems).", ""]
    head = "| task | goal | " + " | ".join(SHOW) + " |"
    lines += [head, "|" + "---|" * (len(SHOW) + 2)]
    for task in TITLES:
        sub = sav[sav.task == task]
        if sub.empty:
            continue
        name, goal = goal_of(task)
        cells = []
        best = sub[sub.method.isin([m for m in SHOW])].savings.max()
        for m in SHOW:
            r = sub[sub.method == m]
            cell = fmt(r.iloc[0]) if len(r) else "–"
            if len(r) and r.iloc[0].savings == best:
                cell = f"**{cell}**"
            cells.append(cell)
        lines.append(f"| {TITLES[task]} | ≥ {goal:.0%} | " + " | ".join(cells) + " |")
    lines += ["", "Bias check (every unbiased design, every budget, pooled over folds): largest |bias| / SE and "
              "mean 95% CI coverage over budgets with every run non-empty:", "",
              "| task | " + " | ".join(UNBIASED[1:]) + " |", "|" + "---|" * len(UNBIASED)]
    for task in TITLES:
        sub = sav[sav.task == task]
        if sub.empty:
            continue
        cells = []
        for m in UNBIASED[1:]:
            r = sub[sub.method == m]
            cells.append("–" if r.empty else f"{r.iloc[0].max_bias_z:.1f} / {r.iloc[0].coverage:.2f}")
        lines.append(f"| {TITLES[task]} | " + " | ".join(cells) + " |")
    # depth-k pooling and uniform document sampling at equal cost
    lines += ["", "Deterministic depth-k pooling (all queries, unjudged = 0) against doc_dyn at the same cost "
              "(loss = |bias| for depth-k; doc_dyn's mean loss interpolated at that cost):", "",
              "| task | k=1 cost | depth-1 loss | doc_dyn loss | k=3 cost | depth-3 loss | doc_dyn loss | "
              "k=10 cost | depth-10 loss | doc_dyn loss |", "|---|---|---|---|---|---|---|---|---|---|"]
    for task in TITLES:
        d = depth[depth.task == task].groupby("k", as_index=False).agg(cost=("cost", "mean"), loss=("loss", "mean"))
        if d.empty:
            continue
        dyn = mc[(mc.task == task) & (mc.method == "doc_dyn")]
        cells = []
        for k in (1, 3, 10):
            r = d[d.k == k].iloc[0]
            dl = interp_loss(dyn, r.cost)
            cells += [f"{r.cost:.0f}", f"{r.loss:.3g}", "–" if not np.isfinite(dl) else f"{dl:.3g}"]
        lines.append(f"| {TITLES[task]} | " + " | ".join(cells) + " |")
    lines += ["", "Uniform sampling of pooled documents (HT, unbiased) against doc_dyn: loss ratio "
              "doc_dyn / doc_uniform at equal cost (budgets 5, 20, 100):", "",
              "| task | 5 | 20 | 100 |", "|---|---|---|---|"]
    for task in TITLES:
        u = mc[(mc.task == task) & (mc.method == "doc_uniform")]
        dyn = mc[(mc.task == task) & (mc.method == "doc_dyn")]
        if u.empty:
            continue
        cells = []
        for b in (5, 20, 100):
            ub, db = u[u.budget == b], dyn[dyn.budget == b]
            cells.append("–" if ub.empty or db.empty else f"{db.loss.iloc[0] / ub.loss.iloc[0]:.2f}")
        lines.append(f"| {TITLES[task]} | " + " | ".join(cells) + " |")
    return lines, mc, depth


def figure(ds, mc, depth):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in TITLES if t in set(mc.task)]
    n = len(tasks)
    cols = 4
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    styles = {"passive": ("k", "-"), "active": ("0.4", "--"), "active_cancel": ("0.4", ":"),
              "doc_uniform": ("tab:orange", "-"), "doc_uniform_inf": ("tab:orange", ":"),
              "doc_hh_naive": ("tab:purple", ":"), "doc_hh": ("tab:purple", "-"), "doc_stat": ("tab:blue", "--"),
              "doc_dyn": ("tab:blue", "-"), "two_stage": ("tab:green", "-"), "ubis": ("tab:red", "-")}
    for ax, task in zip(axes.ravel(), tasks):
        for m in METHODS:
            c = mc[(mc.task == task) & (mc.method == m) & mc.valid].sort_values("cost")
            if c.empty:
                continue
            col, ls = styles[m]
            ax.plot(c.cost, c.loss, color=col, ls=ls, lw=1.4, label=m)
        d = depth[depth.task == task].groupby("k", as_index=False).agg(cost=("cost", "mean"), loss=("loss", "mean"))
        ax.scatter(d.cost, np.maximum(d.loss, 1e-12), marker="x", color="k", s=18, label="depth-k (k=1..10)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(TITLES[task], fontsize=9)
        ax.set_xlabel("documents judged (units of one whole query)", fontsize=7)
        ax.set_ylabel("mean loss", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=6, ncol=2)
    fig.suptitle(f"{ds.upper()} DCG@10: error vs documents judged", fontsize=11)
    fig.tight_layout()
    fig.savefig(RESULTS / f"fig_{ds}.png", dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--datasets", default="mq2008")
    args = ap.parse_args()
    lines = ["# Document-level, two-stage and query-level designs on one cost axis (DCG@10)", "",
             "Generated by `benchmarks/document_level/report.py` from `run.py`'s CSVs.", ""]
    for ds in args.datasets.split(","):
        if not (RESULTS / ds / "savings.csv").exists():
            continue
        sec, mc, depth = dataset_section(ds)
        lines += sec + ["", f"![{ds}](fig_{ds}.png)", ""]
        figure(ds, mc, depth)
    (RESULTS / "savings.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
