"""Figures of the paper-reproduction experiment.

matplotlib is an optional dependency (``pip install 'activerank[plots]'``),
imported only when a figure is drawn.

* :func:`error_curves` -- error vs budget with standard-error bars, one panel
  per scenario instance (like Sawade et al. 2012, Fig. 1-3): absolute error for
  single rankers, index update and more-training-data; model-selection error for
  comparisons.
* :func:`cost_histogram` -- histogram of the normalized query costs
  ``lambda(x)`` over a pool.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["aggregate_curves", "error_curves", "cost_histogram", "all_figures"]

_STYLE = {
    "passive": dict(color="0.3", marker="o", ls="--"),
    "active": dict(color="C3", marker="s", ls="-"),
    "active_uniform_model": dict(color="C0", marker="^", ls=":"),
    "active_uniform_costs": dict(color="C2", marker="v", ls="-."),
}


def _plt() -> Any:
    # no backend forcing: headless runs fall back to Agg, notebooks keep their inline backend
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "activerank's figures need matplotlib, an optional dependency: "
            "pip install 'activerank[plots]' (or 'activerank[experiments]' for the experiment harness; "
            "`python -m activerank.experiments --no-figures` runs without it)."
        ) from exc
    return plt


def aggregate_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """Average the per-fold curves over folds (SE combined as ``sqrt(sum se^2) / n_folds``).

    Returns one row per (dataset, instance, metric, method, budget) with
    ``abs_error, se_abs, sel_error, se_sel, coverage95, mean_queries``.
    """
    keys = ["dataset", "scenario", "instance", "metric", "method", "budget"]
    g = curves.groupby(keys, sort=False)
    out = g.agg(abs_error=("mean_abs_error", "mean"), sel_error=("selection_error", "mean"),
                coverage95=("coverage95", "mean"), mean_queries=("mean_queries", "mean"),
                n_folds=("fold", "nunique")).reset_index()
    se_abs = g["se_abs_error"].apply(lambda s: np.sqrt((s**2).sum()) / len(s)).values
    se_sel = g["se_selection_error"].apply(lambda s: np.sqrt((s**2).sum()) / len(s)).values
    out["se_abs"] = se_abs
    out["se_sel"] = se_sel
    return out


def error_curves(curves: pd.DataFrame, dataset: str, metric: str, path: str | Path | None = None, *,
                 title_map: dict[str, str] | None = None) -> Figure:
    """One figure: panels per scenario instance, error vs budget per method.

    Parameters
    ----------
    curves : pandas.DataFrame
        ``ExperimentResults.curves``.
    dataset, metric : str
    path : str or Path, optional
        Save as PNG there (and close the figure).
    title_map : dict, optional
        Instance key -> panel title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _plt()
    agg = aggregate_curves(curves[(curves.dataset == dataset) & (curves.metric == metric)])
    insts = list(dict.fromkeys(agg.instance))
    n = len(insts)
    ncol = min(4, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False)
    for ax, inst in zip(axes.ravel(), insts):
        sub = agg[agg.instance == inst]
        sel = sub.scenario.iloc[0] == "b"
        for method, d in sub.groupby("method", sort=False):
            y = d.sel_error if sel else d.abs_error
            e = d.se_sel if sel else d.se_abs
            ax.errorbar(d.budget, y, yerr=e, label=method, capsize=2, ms=3.5, lw=1.2,
                        **_STYLE.get(method, {}))
        ax.set_xscale("log")
        ax.set_xlabel("budget Λ (mean query cost = 1)")
        ax.set_ylabel("model-selection error" if sel else "absolute error")
        ax.set_title((title_map or {}).get(inst, inst), fontsize=9)
        ax.grid(alpha=0.3, which="both")
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=8)
    nf = int(agg.n_folds.max()) if len(agg) else 0
    fig.suptitle(f"{dataset}, {metric}: error vs labeling budget (mean over {nf} fold(s), ±1 SE)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig


def cost_histogram(cost_samples: dict[tuple[str, str], Any], dataset: str,
                   path: str | Path | None = None) -> Figure:
    """Histogram of normalized query costs ``lambda(x)`` of one pool (single ranker).

    Parameters
    ----------
    cost_samples : dict
        ``{(dataset, metric): costs}`` as in ``ExperimentResults.cost_samples``.
    dataset : str
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _plt()
    items = [(m, c) for (d, m), c in cost_samples.items() if d == dataset]
    fig, axes = plt.subplots(1, max(1, len(items)), figsize=(4 * max(1, len(items)), 3.2), squeeze=False)
    for ax, (metric, c) in zip(axes.ravel(), items):
        ax.hist(c, bins=40, color="C1", alpha=0.8)
        ax.set_xlabel("λ(x) (normalized, mean 1)")
        ax.set_ylabel("queries")
        ax.set_title(f"{dataset}, {metric}: cv {np.std(c) / np.mean(c):.2f}", fontsize=9)
    fig.suptitle(f"{dataset}: labeling cost per query (one pool, RF ranker's lists)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig


def all_figures(res: Any, out_dir: str | Path, *, title_map: dict | None = None) -> list[str]:
    """Write every error-curve figure and cost histogram of an experiment; return paths.

    ``title_map`` maps scenario-instance keys to panel titles.
    """
    titles = title_map or {}
    out = Path(out_dir)
    paths = []
    c = res.curves
    if len(c):
        for ds in dict.fromkeys(c.dataset):
            for metric in dict.fromkeys(c.metric):
                p = out / f"fig_{ds}_{metric.replace('@', '')}.png"
                error_curves(c, ds, metric, p, title_map=titles)
                paths.append(str(p))
    for ds in dict.fromkeys(d for d, _ in res.cost_samples):
        p = out / f"fig_{ds}_costs.png"
        cost_histogram(res.cost_samples, ds, p)
        paths.append(str(p))
    return paths
