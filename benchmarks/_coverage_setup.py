"""Pools, rankers and the LightGBM relevance model for the coverage benchmark.

One fold per dataset (training partition S1, pool S2-S5), built with the
experiment harness (:func:`activerank.experiments.harness.load_dataset`,
:func:`~activerank.experiments.harness.build_problem`), but with a LightGBM
relevance model (tuned on validation log-loss over a small grid) instead of the
harness's random forests:

* ``single``: the LightGBM expected-gain ranker;
* ``pair``: LightGBM expected gain vs a linear RankSVM (p(y|x,z) from LightGBM);
* ``index``: the LightGBM ranker vs the same ranker with 10% of every list removed.

The fitted predictions are cached (``.npz``) in ``cache_dir``.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import partial
from pathlib import Path

import numpy as np

from activerank.experiments.harness import (
    DATASETS,
    FoldModels,
    ScenarioInstance,
    build_problem,
    load_dataset,
)
from activerank.relevance.models import fit_with_validation, make_relevance_model
from activerank.relevance.rankers import expected_gain_scores, fit_linear_ranker

SCENARIOS = {
    "single": ScenarioInstance("single", "a", "single ranker (LightGBM expected gain)", "lightgbm", None,
                               ("lightgbm",)),
    "pair": ScenarioInstance("pair", "b", "LightGBM vs linear RankSVM", "lightgbm", "linear", ("lightgbm",)),
    "index": ScenarioInstance("index", "c", "index update (10% of every list removed)", "lightgbm",
                              "lightgbm@removed", ("lightgbm",)),
}
GRID = {"num_leaves": [7, 15], "learning_rate": [0.05], "n_estimators": [150]}
SETUP_VERSION = "1"


def fit_fold_lightgbm(dataset: str, fold: int = 1, *, data_root=None, cache_dir=None, seed: int = 0) -> FoldModels:
    """LightGBM relevance model + RankSVM trained on partition ``fold``; predictions on the other four."""
    spec = DATASETS[dataset]
    path = None
    if cache_dir:
        key = hashlib.sha1(json.dumps(dict(v=SETUP_VERSION, d=dataset, f=fold, s=seed, g=GRID),
                                      sort_keys=True).encode()).hexdigest()[:10]
        path = Path(cache_dir) / f"{dataset}_fold{fold}_lgb_{key}.npz"
    data, part = load_dataset(spec, data_root)
    pool = data.subset(part != fold)
    if path is not None and path.exists():
        z = np.load(path, allow_pickle=False)
        probs = {"lightgbm": z["prob"]}
        scores = {"lightgbm": z["score_lightgbm"], "linear": z["score_linear"]}
        return FoldModels(pool, scores, probs, json.loads(str(z["params"])))
    train_all = data.subset(part == fold)
    gen = np.random.default_rng([seed, fold, 17])
    perm = gen.permutation(train_all.n_queries)
    half = train_all.n_queries // 2
    train, vali = train_all.subset(np.sort(perm[:half])), train_all.subset(np.sort(perm[half:]))
    fit = fit_with_validation(partial(make_relevance_model, "lightgbm", spec.n_grades, random_state=seed,
                                      n_jobs=1), GRID, train, vali)
    prob = fit.model.predict_proba(pool.X)
    scores = {"lightgbm": expected_gain_scores(prob),
              "linear": fit_linear_ranker(train, method="ranksvm", random_state=seed).scores(pool.X)}
    params = {"lightgbm": fit.params}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, prob=prob, score_lightgbm=scores["lightgbm"], score_linear=scores["linear"],
                            params=json.dumps(params))
        os.replace(tmp, path)
    return FoldModels(pool, scores, {"lightgbm": prob}, params)


def problems(dataset: str, metrics, scenarios=tuple(SCENARIOS), *, data_root=None, cache_dir=None, seed=0):
    """``{(scenario, metric): Problem}`` for one dataset's fold 1."""
    fm = fit_fold_lightgbm(dataset, 1, data_root=data_root, cache_dir=cache_dir, seed=seed)
    spec = DATASETS[dataset]
    out = {}
    for si, s in enumerate(scenarios):
        for mi, m in enumerate(metrics):
            out[(s, m)] = build_problem(fm, SCENARIOS[s], m, cost_model=spec.cost_model,
                                        rng=np.random.SeedSequence([seed, si, mi, 99]))
    return out
