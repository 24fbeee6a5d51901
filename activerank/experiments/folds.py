"""Rankers and relevance models of one fold: trained and tuned on the training partition, their
predictions on the pool (cached on disk)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..io.letor import LetorData
from ..relevance.models import fit_with_validation, make_relevance_model
from ..relevance.rankers import expected_gain_scores, fit_linear_ranker
from .data import DatasetSpec, _spec_iv, load_dataset

if TYPE_CHECKING:  # pragma: no cover
    from .config import ExperimentConfig

CACHE_VERSION = "1"


@dataclass(frozen=True, eq=False)
class FoldModels:
    """Rankers' scores and relevance models' probabilities on one fold's pool.

    Attributes
    ----------
    pool : LetorData
        The four partitions not used for training (labels = hidden truth).
    scores : dict of str to ndarray (n_pool_docs,)
        Ranking scores of every ranker.
    probs : dict of str to ndarray (n_pool_docs, n_grades)
        ``p(y | x, z)`` of every ranker that has a relevance model.
    params : dict
        Tuned hyper-parameters (for the record).
    """

    pool: LetorData
    scores: dict
    probs: dict
    params: dict


def _fold_cache_key(spec: DatasetSpec, fold: int, cfg: "ExperimentConfig") -> str:
    blob = json.dumps(dict(v=CACHE_VERSION, d=spec.name, f=fold, t=cfg.n_trees, s=cfg.seed,
                           sf=cfg.small_fraction, quick=cfg.quick), sort_keys=True)
    return f"{spec.name}_fold{fold}_{hashlib.sha1(blob.encode()).hexdigest()[:10]}.npz"


def fit_fold(spec: DatasetSpec | str, fold: int, cfg: "ExperimentConfig", *, data_root=None) -> FoldModels:
    """Train rankers and relevance models on partition ``fold``; predict on the pool.

    The training partition's queries are split at random (seeded) into a
    fitting half and a validation half.  Models: ``rf_regression``,
    ``rf_classifier``, ``ordered_logit`` (tuned by validation log-loss),
    ``linear`` (RankSVM, no probabilities) and ``rf_regression_small``
    (RF regression on ``cfg.small_fraction`` of the fitting half's queries).
    Results are cached on disk in ``cfg.cache_dir`` (if set).

    Parameters
    ----------
    spec : DatasetSpec or str
    fold : int in 1..5
        Training partition.
    cfg : ExperimentConfig
    data_root : str, optional

    Returns
    -------
    FoldModels
    """
    spec = _spec_iv(spec)
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not 1 <= fold <= 5:
        raise ValueError(f"`fold` must be a partition number in 1..5; got {fold!r}.")
    data, part = load_dataset(spec, data_root)
    pool = data.subset(part != fold)
    names = ("rf_regression", "rf_classifier", "ordered_logit", "linear", "rf_regression_small")
    path = None
    if cfg.cache_dir:
        path = Path(cfg.cache_dir) / _fold_cache_key(spec, fold, cfg)
        if path.exists():
            z = np.load(path, allow_pickle=False)
            scores = {n: z[f"score_{n}"] for n in names}
            probs = {n: z[f"prob_{n}"] for n in names if f"prob_{n}" in z}
            params = json.loads(str(z["params"]))
            return FoldModels(pool, scores, probs, params)
    train_all = data.subset(part == fold)
    gen = np.random.default_rng([cfg.seed, fold, 17])
    perm = gen.permutation(train_all.n_queries)
    half = train_all.n_queries // 2
    train, vali = train_all.subset(np.sort(perm[:half])), train_all.subset(np.sort(perm[half:]))
    small = train.subset(np.sort(gen.permutation(train.n_queries)[: max(2, int(cfg.small_fraction * train.n_queries))]))
    G = spec.n_grades
    n_trees = cfg.n_trees
    rf = dict(n_estimators=n_trees, n_jobs=cfg.n_jobs, max_features=0.5)
    leaf_grid = {"min_samples_leaf": [5] if cfg.quick else [5, 20]}
    fits = {
        "rf_regression": fit_with_validation(
            partial(make_relevance_model, "rf_regression", G, random_state=cfg.seed, **rf), leaf_grid, train, vali),
        "rf_classifier": fit_with_validation(
            partial(make_relevance_model, "rf_classifier", G, random_state=cfg.seed, **rf), leaf_grid, train, vali),
        "ordered_logit": fit_with_validation(
            partial(make_relevance_model, "ordered_logit", G),
            {"alpha": [1.0, 10.0] if cfg.quick else [0.1, 1.0, 10.0, 100.0]}, train, vali),
    }
    best_leaf = fits["rf_regression"].params.get("min_samples_leaf", 5)
    fits["rf_regression_small"] = fit_with_validation(
        partial(make_relevance_model, "rf_regression", G, random_state=cfg.seed, **rf),
        {"min_samples_leaf": [best_leaf]}, small, vali)
    probs = {n: f.model.predict_proba(pool.X) for n, f in fits.items()}
    scores = {n: expected_gain_scores(p) for n, p in probs.items()}
    scores["linear"] = fit_linear_ranker(train, method="ranksvm", random_state=cfg.seed).scores(pool.X)
    params = {n: f.params for n, f in fits.items()}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, params=json.dumps(params),
                            **{f"score_{n}": s for n, s in scores.items()},
                            **{f"prob_{n}": p for n, p in probs.items()})
        os.replace(tmp, path)
    return FoldModels(pool, scores, probs, params)
