"""Savings vs passive against the simulated judge's quadratic kappa (issue 33's figure).

Reads ``results/judge_check.csv`` and ``results/judge_check_kappa.csv`` (written by ``judge_check.py``) and draws,
per dataset, the savings of ``doc_dyn`` at equal documents against the judge's achieved kappa on the pool, one
line per task, with the no-judge savings at kappa 0 marked apart (the feature model alone).

Run:  python benchmarks/document_level/judge_figure.py   (needs the ``plots`` extra)
Writes results/fig_judge_kappa.png.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"
TASK_NAMES = {"a_rf": "one ranker", "b_ologit_rf": "two rankers", "k_baseline": "4 candidates vs baseline"}


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sav = pd.read_csv(RESULTS / "judge_check.csv")
    kap = pd.read_csv(RESULTS / "judge_check_kappa.csv")
    levels = (kap[kap["judge"].str.startswith("kappa_")].dropna(subset=["kappa_pool"])
              .groupby(["dataset", "judge"], as_index=False)["kappa_pool"].mean()
              .rename(columns={"kappa_pool": "kappa_achieved"}))  # mean over folds
    data = sav.merge(levels, on=["dataset", "judge"])
    datasets = list(dict.fromkeys(sav["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.6), sharey=True)
    for ax, ds in zip(axes, datasets):
        for task, name in TASK_NAMES.items():
            d = data[(data["dataset"] == ds) & (data["task"] == task)].sort_values("kappa_achieved")
            line = ax.errorbar(d["kappa_achieved"], 100 * d["savings"],
                               yerr=[100 * (d["savings"] - d["low"]), 100 * (d["high"] - d["savings"])],
                               marker="o", capsize=2, label=name)
            none = sav[(sav["dataset"] == ds) & (sav["task"] == task) & (sav["judge"] == "none")]
            ax.axhline(100 * float(none["savings"].iloc[0]), color=line[0].get_color(), ls=":", lw=1)
        ax.set_title(ds)
        ax.set_xlabel("judge's quadratic kappa (pool)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("savings vs passive at equal documents (%)")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle("doc_dyn with a calibrated simulated judge, DCG@10 (dotted: no judge)", fontsize=10)
    fig.tight_layout()
    fig.savefig(RESULTS / "fig_judge_kappa.png", dpi=120)
    print(f"wrote {RESULTS / 'fig_judge_kappa.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
