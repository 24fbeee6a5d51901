"""Tables and files of a harness run: the savings table, the investigation's markdown, and the CSVs,
figures and ``savings.md`` (:func:`write_outputs`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .config import ExperimentResults
from .data import DATASETS
from .scenarios import PAPER_SAVINGS, SCENARIOS


def _fmt_pct(x, lo=None, hi=None, cens=0) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    s = f"{100 * x:.0f}%"
    if cens == 1:
        s = f"≤ {s}"
    elif cens == -1:
        s = f"≥ {s}"
    if lo is not None and np.isfinite(lo):
        s += f" [{100 * lo:.0f}, {100 * hi:.0f}]"
    return s


def savings_table(savings: pd.DataFrame, method: str = "active") -> pd.DataFrame:
    """Compact per (dataset, scenario instance, metric) table of one method's savings.

    Columns: simulated savings on the scenario's primary error measure with
    95% bootstrap interval (``≥``/``≤`` when the crossing lies outside the
    budget grid), analytic savings (pooled over folds; min..max over folds),
    the oracle ceiling, and the paper's number.
    """
    s = savings[savings.method == method]
    rows = []
    for _, r in s.iterrows():
        inst = next(i for i in SCENARIOS if i.key == r.instance)
        tag = "sel" if inst.loss == "selection_error" else "abs"
        rows.append({
            "dataset": r.dataset,
            "scenario": r.title,
            "metric": r.metric,
            "measure": "model-selection error" if tag == "sel" else "absolute error",
            "Λ_ref": f"{r.reference_budget:g}",
            "passive error at Λ_ref": f"{r[f'{tag}_passive_error']:.4g}",
            "simulated savings [95% CI]": _fmt_pct(r[f"{tag}_savings"], r[f"{tag}_low"], r[f"{tag}_high"],
                                                   r[f"{tag}_censored"]),
            "abs-error savings": _fmt_pct(r["abs_savings"], r["abs_low"], r["abs_high"], r["abs_censored"])
            if tag == "sel" else "",
            "analytic (fold range)": f"{_fmt_pct(r.analytic_savings)} ({100 * r.analytic_min_fold:.0f}..{100 * r.analytic_max_fold:.0f})",
            "ceiling (true |L-R|)": _fmt_pct(r.oracle_savings),
            "paper (MSLR)": PAPER_SAVINGS.get(r.instance, ""),
        })
    return pd.DataFrame(rows)


def _markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def investigation_markdown(inv: dict) -> str:
    """Markdown section summarizing :func:`investigate` (active method, pooled over folds)."""
    v = inv["variants"].copy()
    v["col"] = v.variant + "=" + v.value
    tab = v.pivot_table(index=["dataset", "instance", "metric"], columns="col", values="savings", sort=False)
    tab = (100 * tab).round(0).astype("Int64").astype(str) + "%"
    tab = tab.reset_index()
    d = inv["diagnostics"].round(2)
    return "\n".join([
        "## Why active does or does not win: analytic what-if (savings 1 − V(q)/V(p), pooled over folds)", "",
        "Each column changes one ingredient of `active` (defensive weight; temperature T of the relevance "
        "model, p^(1/T) renormalized, T<1 sharper, T>1 flatter; cost model — `per_query` charges 1 per query, "
        "i.e. both V(q) and V(p) are evaluated under uniform costs; `model` = one of the two models instead of "
        "their mixture).", "",
        _markdown(tab), "",
        "Query-level diagnostics of the relevance model (mean over folds): `corr_mean` = corr(predicted "
        "E[L|x], true L(x)); `corr_dev` = corr(predicted sqrt E[(L−R)²|x], true |L(x)−R|) — what q* needs; "
        "`pred_over_true_sq` = mean predicted / mean true (L−R)² (1 = calibrated on average); `var_share` = "
        "share of the predicted E[(L−R)²|x] that is Var[L|x]; `cost_cv` = coefficient of variation of λ(x).", "",
        _markdown(d), ""])


def write_outputs(res: ExperimentResults, out_dir, *, figures: bool = True, command: str | None = None,
                  investigation: dict | None = None) -> list[str]:
    """Write CSVs, figures and ``savings.md`` into ``out_dir``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, df in (("curves.csv", res.curves), ("analytic.csv", res.analytic), ("savings.csv", res.savings)):
        df.to_csv(out / name, index=False)
        paths.append(str(out / name))
    if figures:
        from . import plots

        paths += plots.all_figures(res, out, title_map={s.key: s.title for s in SCENARIOS})
    md = ["# Label savings of active evaluation (activerank reproduction of Sawade et al. 2012)", ""]
    if command:
        md += [f"Regenerate: `{command}` (runtime {res.seconds / 60:.1f} min).", ""]
    cfg = res.config
    if cfg is not None:
        md += [f"Settings: folds {list(cfg.folds)} (training partition rotated; pool = the other four), "
               f"{cfg.n_reps} repetitions per budget, defensive weight {cfg.defensive}, "
               f"forests of {cfg.n_trees} trees.", ""]
        for ds in cfg.datasets:
            spec = DATASETS[ds]
            grid = ", ".join(f"{b:g}" for b in cfg.grid(ds))
            md.append(f"- **{ds}** cost model: {spec.cost_note}; budget grid [{grid}], "
                      f"reference budget Λ = {cfg.reference(ds):g} (mean query cost = 1).")
        md.append("")
    md += ["Savings = 1 − (budget active needs to reach passive's error at the reference budget) / "
           "(reference budget). Interval: 95% bootstrap over repetitions. ≥ / ≤: the crossing lies "
           "outside the budget grid (bound). Analytic: 1 − V(q)/V(p) with the pool's true L(x), pooled "
           "over folds (range over folds). Ceiling: the same with the true |L − R| in q.", ""]
    for method in [m for m in (cfg.methods if cfg else ["active"]) if m != "passive"]:
        tab = savings_table(res.savings, method)
        if len(tab):
            md += [f"## Method `{method}`", "", _markdown(tab), ""]
    if investigation is not None:
        for name, df in investigation.items():
            df.to_csv(out / f"investigation_{name}.csv", index=False)
            paths.append(str(out / f"investigation_{name}.csv"))
        md.append(investigation_markdown(investigation))
    (out / "savings.md").write_text("\n".join(md))
    paths.append(str(out / "savings.md"))
    return paths
