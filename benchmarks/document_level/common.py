"""Shared setup of the document-level benchmarks: data, fold models, scenarios.

Fold protocol of :mod:`activerank.experiments.harness` (train on one LETOR
partition, the other four are the pool whose labels are the hidden truth);
rankers and relevance models come from :func:`~activerank.experiments.harness.fit_fold`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from activerank.experiments.harness import (  # noqa: E402
    SCENARIOS,
    ExperimentConfig,
    build_problem,
    default_data_root,
    fit_fold,
)
from activerank.metrics import pool_metric_values  # noqa: E402
from activerank.relevance.rankers import rank_by_scores, remove_fraction  # noqa: E402

RESULTS = HERE / "results"

# k systems: four candidates against the RF-regression baseline (last), and ranking all five
K_SYSTEMS = ("rf_classifier", "ordered_logit", "linear", "rf_regression_small", "rf_regression")
K_MODELS = ("rf_regression", "rf_classifier", "ordered_logit", "rf_regression_small")


def config(cache_dir=None, data_root=None) -> ExperimentConfig:
    cache = cache_dir or os.environ.get("ACTIVERANK_CACHE") or str(RESULTS / "cache")
    return ExperimentConfig(cache_dir=cache, n_jobs=1, data_root=data_root or default_data_root())


@dataclass(frozen=True, eq=False)
class Task:
    """One evaluation task on one fold's pool.

    rankings : list of Rankings (full lists, not truncated)
    contrasts : (n_targets, n_systems) matrix: targets are ``C @ R`` (R = per-system pool means)
    probs : relevance model p(y | x, z) used by every design
    labels : hidden true grades of the pool
    """

    key: str
    kind: str
    fold: int
    pool: object
    rankings: list
    contrasts: np.ndarray
    probs: np.ndarray
    labels: np.ndarray

    @property
    def n_queries(self):
        return self.pool.n_queries

    def true_values(self, metric):
        """Per-query values of every system, shape (n_systems, n_queries)."""
        ymax = self.pool.n_grades - 1
        return np.stack([pool_metric_values(self.labels, r, metric=metric, ymax=ymax) for r in self.rankings])

    def target(self, metric):
        v = self.true_values(metric).mean(axis=1)
        return self.contrasts @ v


def contrasts(kind: str, s: int) -> np.ndarray:
    if kind == "single":
        return np.ones((1, 1))
    if kind in ("pair", "index"):
        return np.array([[1.0, -1.0]])
    if kind == "baseline":
        return np.hstack([np.eye(s - 1), -np.ones((s - 1, 1))])
    if kind == "rank":
        return np.eye(s) - 1.0 / s
    raise ValueError(kind)


TASKS = {
    # key: (kind, rankers, models)
    "a_rf": ("single", ("rf_regression",), ("rf_regression",)),
    "a_ologit": ("single", ("ordered_logit",), ("ordered_logit",)),
    "b_rfreg_rfcls": ("pair", ("rf_regression", "rf_classifier"), ("rf_regression", "rf_classifier")),
    "b_ologit_linear": ("pair", ("ordered_logit", "linear"), ("ordered_logit",)),
    "b_ologit_rf": ("pair", ("ordered_logit", "rf_regression"), ("ordered_logit", "rf_regression")),
    "c_index": ("index", ("rf_regression", "rf_regression@removed"), ("rf_regression",)),
    "k_baseline": ("baseline", K_SYSTEMS, K_MODELS),
    "k_rank": ("rank", K_SYSTEMS, K_MODELS),
}


def build_task(fm, key, fold, *, seed=0) -> Task:
    kind, names, models = TASKS[key]
    pool = fm.pool
    ranks = []
    for n in names:
        if n.endswith("@removed"):
            base = rank_by_scores(fm.scores[n[: -len("@removed")]], pool.offsets)
            ranks.append(remove_fraction(base, 0.1, np.random.default_rng([seed, fold, 99])))
        else:
            ranks.append(rank_by_scores(fm.scores[n], pool.offsets))
    probs = np.mean([fm.probs[m] for m in models], axis=0)
    return Task(key, kind, fold, pool, ranks, contrasts(kind, len(names)), probs, pool.labels)
