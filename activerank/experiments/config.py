"""Settings and outputs of a harness run: :class:`ExperimentConfig` and :class:`ExperimentResults`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..design.sampling import DEFAULT_DEFENSIVE
from .data import DATASETS
from .scenarios import SCENARIOS, ScenarioInstance


@dataclass
class ExperimentConfig:
    """Settings of :func:`run` (defaults = the documented full run).

    Attributes
    ----------
    datasets : tuple of str
    folds : tuple of int
        Training partitions to rotate over.
    n_reps : int
        Repetitions per budget.
    metrics : tuple of str
    methods : tuple of str
    scenarios : tuple of str
        Keys of :data:`SCENARIOS` (or scenario letters).
    budgets : dict, optional
        Per-dataset budget grid (default: the dataset spec's).
    reference_budget : dict, optional
    defensive : float
    n_trees : int
        Trees of the random forests (small to keep training cheap).
    small_fraction : float
        Training-query fraction of the ``rf_regression_small`` ranker.
    seed : int
    n_boot : int
    n_jobs : int
    quick : bool
        Smaller hyper-parameter grids.
    cache_dir : str or None
        Where fitted models' pool predictions are cached.
    data_root : str or None
    """

    datasets: tuple = ("mq2008", "ohsumed")
    folds: tuple = (1, 2, 3, 4, 5)
    n_reps: int = 1000
    metrics: tuple = ("err@10", "dcg@10", "err", "dcg")
    methods: tuple = ("passive", "active", "active_uniform_model", "active_uniform_costs")
    scenarios: tuple = tuple(s.key for s in SCENARIOS)
    budgets: dict = field(default_factory=dict)
    reference_budget: dict = field(default_factory=dict)
    defensive: float = DEFAULT_DEFENSIVE
    n_trees: int = 50
    small_fraction: float = 0.25
    seed: int = 0
    n_boot: int = 300
    n_jobs: int = 2
    quick: bool = False
    cache_dir: str | None = None
    data_root: str | None = None

    def grid(self, dataset: str) -> np.ndarray:
        return np.asarray(self.budgets.get(dataset, DATASETS[dataset].budgets), dtype=np.float64)

    def reference(self, dataset: str) -> float:
        return float(self.reference_budget.get(dataset, DATASETS[dataset].reference_budget))

    def instances(self) -> list[ScenarioInstance]:
        out = [s for s in SCENARIOS if s.key in self.scenarios or s.scenario in self.scenarios]
        unknown = set(self.scenarios) - {s.key for s in SCENARIOS} - {s.scenario for s in SCENARIOS}
        if unknown:
            raise ValueError(f"`scenarios` has unknown entries {sorted(unknown)}; "
                             f"choose from {[s.key for s in SCENARIOS]} or letters a-d.")
        return out


@dataclass
class ExperimentResults:
    """Outputs of :func:`run`.

    Attributes
    ----------
    curves : pandas.DataFrame
        Tidy per (dataset, fold, instance, metric, method, budget) summary.
    analytic : pandas.DataFrame
        Per (dataset, fold, instance, metric, method) analytic variance and
        savings; method ``"oracle"`` is the ceiling.
    savings : pandas.DataFrame
        Per (dataset, instance, metric, method): simulated savings with
        bootstrap interval, and the analytic savings (pooled over folds).
    cost_samples : dict of str to ndarray
        Normalized query costs of one pool per dataset (single ranker, @10
        and full list) for the histogram.
    seconds : float
    """

    curves: pd.DataFrame
    analytic: pd.DataFrame
    savings: pd.DataFrame
    cost_samples: dict
    seconds: float
    config: ExperimentConfig | None = None
