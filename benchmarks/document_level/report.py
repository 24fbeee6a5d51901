"""Tables and figures from the CSVs written by run.py (no simulation here).

Run:  python benchmarks/document_level/report.py [--datasets mq2008,ohsumed,trec-news]
Reads results/<dataset>/{curves,savings,depth_k,checks,skipped}.csv; writes results/savings.md and
results/fig_<dataset>.png.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from common import RESULTS as DEFAULT_RESULTS

RESULTS = DEFAULT_RESULTS  # set by --results

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
NAMES = {"mq2008": "MQ2008", "ohsumed": "OHSUMED", "trec-news": "TREC News"}
MIN_N = 50  # as run.py: the bias / coverage check applies from 50 sampled units on


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


def title(ds):
    return NAMES.get(ds, ds.upper())


def best_design(sub):
    """The SHOW design with the largest savings on one task (row) or None."""
    s = sub[sub.method.isin(SHOW) & np.isfinite(sub.savings)]
    return None if s.empty else s.loc[s.savings.idxmax()]


def dataset_section(ds):
    folder = RESULTS / ds
    sav = pd.read_csv(folder / "savings.csv")
    curves = pd.read_csv(folder / "curves.csv")
    depth = pd.read_csv(folder / "depth_k.csv")
    checks = pd.read_csv(folder / "checks.csv")
    skipped = pd.read_csv(folder / "skipped.csv") if (folder / "skipped.csv").exists() else pd.DataFrame()
    mc = mean_curves(curves)
    n_folds = curves.fold.nunique()
    reps = None
    log = folder / "run.log"
    if log.exists():
        heads = [ln for ln in log.read_text().splitlines() if ln.startswith("# run.py")]
        reps = heads[-1].split("--reps ")[1].split()[0] if heads else None
    lines = [f"## {title(ds)}", "",
             f"{n_folds} folds × {reps or '?'} repetitions; savings vs passive query sampling at equal documents "
             "judged (budget where the design's mean loss reaches passive's at the reference budget; 95% "
             "bootstrap interval; ≥ / ≤: censored at the grid's end).  Loss: absolute error (one target), summed "
             "squared error over the contrasts (k systems).", ""]
    if len(skipped):
        cells = ", ".join(f"fold {r.fold} {r.task}" for r in skipped.itertuples())
        lines += [f"Skipped (no judgment can change the target: the compared top-10 lists give every document "
                  f"the same discount, so every design is exact without a label): {cells}. Those tasks pool "
                  "the remaining folds.", ""]
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
    lines += ["", f"Bias check (every unbiased design, pooled over folds, budgets where the design samples ≥ {MIN_N} "
              "units on average — distinct queries or documents; first-stage draws for two_stage, draws for ubis): "
              "largest |bias| / SE over those budgets and targets, and the smallest 95% CI coverage; "
              "– = no budget reaches "
              f"{MIN_N} units. An estimate that equals the truth with SE 0 (a census) counts as unbiased and "
              "covered.", "",
              "| task | " + " | ".join(UNBIASED) + " |", "|" + "---|" * (len(UNBIASED) + 1)]
    for task in TITLES:
        sub = checks[(checks.task == task) & checks.valid & (checks.mean_n >= MIN_N)]
        if task not in set(checks.task):
            continue
        cells = []
        for m in UNBIASED:
            r = sub[sub.method == m]
            cells.append("–" if r.empty else f"{r.max_bias_z.max():.1f} / {r.coverage.min():.2f}")
        lines.append(f"| {TITLES[task]} | " + " | ".join(cells) + " |")
    big = checks[checks.valid & (checks.mean_n >= MIN_N) & checks.method.isin(UNBIASED)]
    flag = big[(big.max_bias_z > 3) | (big.coverage < 0.93)]
    # |z| > 3 by chance: 0.27% per target; a k-system cell reports the largest of its 4-5 targets
    n_targets = big.task.map(curves.groupby("task").n_targets.first())
    chance = float((1 - (1 - 0.0027) ** n_targets).sum())
    lines += ["", f"Cells with |bias| / SE > 3 or coverage < 0.93 (of {len(big)} (task, design, budget) cells with "
              f"≥ {MIN_N} units; {int((big.max_bias_z > 3).sum())} exceed 3 SE, {chance:.1f} would by chance "
              "for unbiased designs): " + ("none." if flag.empty else "")]
    if not flag.empty:
        lines += ["", "| task | design | budget | mean units | bias / SE (abs.) | coverage |", "|---|---|---|---|---|---|"]
        for r in flag.sort_values(["task", "method", "budget"]).itertuples():
            lines.append(f"| {TITLES.get(r.task, r.task)} | {r.method} | {r.budget:g} | {r.mean_n:.0f} | "
                         f"{r.max_bias_z:.1f} | {r.coverage:.3f} |")
    # depth-k pooling and uniform document sampling at equal cost
    lines += ["", "Deterministic depth-k pooling (all queries, unjudged = 0) against doc_dyn at the same cost "
              "(loss = |bias| for depth-k; doc_dyn's mean loss interpolated at that cost; – = the cost lies "
              "outside doc_dyn's grid). Last column: the k where depth-k has the smaller loss, of the k < 10 whose "
              "cost lies inside doc_dyn's grid (depth-10 judges every document of the compared top-10 lists and "
              "is exact):", "",
              "| task | k=1 cost | depth-1 loss | doc_dyn loss | k=3 cost | depth-3 loss | doc_dyn loss | "
              "k=10 cost | depth-10 loss | doc_dyn loss | depth-k better at |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
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
        # only depths whose cost lies inside doc_dyn's budget grid can be compared
        compared = [(int(r.k), r.loss < dl) for r in d.itertuples()
                    if r.k < 10 and np.isfinite(dl := interp_loss(dyn, r.cost))]
        wins = [k for k, won in compared if won]
        span = f"{compared[0][0]}–{compared[-1][0]}" if compared else "–"
        lines.append(f"| {TITLES[task]} | " + " | ".join(cells) + " | "
                     + (", ".join(map(str, wins)) if wins else "none") + f" of {span} |")
    grid = sorted(set(mc[mc.method == "doc_dyn"].budget))
    points = [b for b in (5, 20, 100) if b in grid] or grid[-3:]
    lines += ["", "Uniform sampling of pooled documents (HT, unbiased) against doc_dyn: loss ratio "
              f"doc_dyn / doc_uniform at equal cost (budgets {', '.join(f'{b:g}' for b in points)}; < 1: "
              "doc_dyn better):", "",
              "| task | " + " | ".join(f"{b:g}" for b in points) + " | max over the grid |",
              "|---|" + "---|" * (len(points) + 1)]
    for task in TITLES:
        u = mc[(mc.task == task) & (mc.method == "doc_uniform")]
        dyn = mc[(mc.task == task) & (mc.method == "doc_dyn")]
        if u.empty:
            continue
        both = u.merge(dyn, on="budget", suffixes=("_u", "_d"))
        both = both[both.valid_u & both.valid_d]
        cells = []
        for b in points:
            ub, db = u[u.budget == b], dyn[dyn.budget == b]
            cells.append("–" if ub.empty or db.empty else f"{db.loss.iloc[0] / ub.loss.iloc[0]:.2f}")
        worst = (both.loss_d / both.loss_u).max() if len(both) else np.nan
        cells.append("–" if not np.isfinite(worst) else f"{worst:.2f}")
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
        shown = []
        for m in METHODS:
            c = mc[(mc.task == task) & (mc.method == m) & mc.valid].sort_values("cost")
            if c.empty:
                continue
            col, ls = styles[m]
            ax.plot(c.cost, c.loss, color=col, ls=ls, lw=1.4, label=m)
            shown.append(c.loss.to_numpy())
        d = depth[depth.task == task].groupby("k", as_index=False).agg(cost=("cost", "mean"), loss=("loss", "mean"))
        shown.append(d.loss.to_numpy())
        every = np.concatenate(shown)
        # exact answers (a census: loss ~1e-16) would squash the curves; the axis stops above rounding
        # and exact points sit on its floor as triangles
        floor = every[every > 1e-9 * every.max()].min() / 3
        exact = d.loss < 1e-9 * every.max()
        ax.scatter(d.cost[~exact], d.loss[~exact], marker="x", color="k", s=18, label="depth-k (k=1..10)")
        ax.scatter(d.cost[exact], np.full(int(exact.sum()), floor), marker="v", color="k", s=22,
                   label="depth-k exact (loss 0)", clip_on=False)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(bottom=floor)
        ax.set_title(TITLES[task], fontsize=9)
        ax.set_xlabel("documents judged (units of one whole query)", fontsize=7)
        ax.set_ylabel("mean loss", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=6, ncol=2)
    fig.suptitle(f"{title(ds)} DCG@10: error vs documents judged", fontsize=11)
    fig.tight_layout()
    fig.savefig(RESULTS / f"fig_{ds}.png", dpi=110)
    plt.close(fig)


def summary(datasets):
    """Per task: the goal, doc_dyn's savings and the best design's, for every dataset."""
    head = "| task | goal | " + " | ".join(f"{title(ds)}: doc_dyn | {title(ds)}: best" for ds in datasets) + " |"
    lines = ["## Summary: savings vs passive query sampling at equal documents judged (DCG@10)", "",
             "Goals of issue 17 (set for MQ2008). **Bold**: the goal is met (point estimate).", "",
             head, "|---|---|" + "---|---|" * len(datasets)]
    tabs = {ds: pd.read_csv(RESULTS / ds / "savings.csv") for ds in datasets}
    for task in TITLES:
        _, goal = goal_of(task)
        cells = []
        for ds in datasets:
            sub = tabs[ds][tabs[ds].task == task]
            dyn = sub[sub.method == "doc_dyn"]
            best = best_design(sub)

            def mark(text, value):
                return f"**{text}**" if np.isfinite(value) and value >= goal else text

            cells.append("–" if dyn.empty else mark(fmt(dyn.iloc[0]), dyn.iloc[0].savings))
            cells.append("–" if best is None else mark(f"{best.method} {fmt(best)}", best.savings))
        lines.append(f"| {TITLES[task]} | ≥ {goal:.0%} | " + " | ".join(cells) + " |")
    return lines + [""]


def main():
    global RESULTS
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--datasets", default="mq2008,ohsumed,trec-news")
    ap.add_argument("--results", default=str(DEFAULT_RESULTS), help="folder run.py wrote to (default %(default)s)")
    args = ap.parse_args()
    from pathlib import Path

    RESULTS = Path(args.results)
    lines = ["# Document-level, two-stage and query-level designs on one cost axis (DCG@10)", "",
             "Generated by `benchmarks/document_level/report.py` from `run.py`'s CSVs.", ""]
    present = [ds for ds in args.datasets.split(",") if (RESULTS / ds / "savings.csv").exists()]
    lines += summary(present)
    for ds in present:
        sec, mc, depth = dataset_section(ds)
        lines += sec + ["", f"![{ds}](fig_{ds}.png)", ""]
        figure(ds, mc, depth)
    (RESULTS / "savings.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
