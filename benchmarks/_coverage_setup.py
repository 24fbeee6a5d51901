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


# --------------------------------------------------------------------------- a concentrated design


class SyntheticPool:
    """A random pool whose labels are drawn from its relevance model (as ``tests/conftest.py``'s)."""

    def __init__(self, rng, n_queries=200, max_docs=12, n_grades=3):
        from activerank.ragged import offsets_from_lengths

        lengths = rng.integers(3, max_docs + 1, n_queries)
        self.offsets = offsets_from_lengths(lengths)
        self.query_ids = np.arange(1000, 1000 + n_queries)
        n = int(self.offsets[-1])
        # heterogeneous queries: some mostly irrelevant, some rich in relevant documents
        richness = rng.beta(0.6, 1.5, n_queries)
        alpha = np.stack([np.full(n_queries, 1.0), 2 * richness, richness], axis=1)[:, :n_grades]
        alpha = np.repeat(alpha, lengths, axis=0) + 0.05
        self.probs = np.array([rng.dirichlet(a) for a in alpha])
        self.doc_ids = None
        self.doc_length = rng.integers(20, 2000, n).astype(float)
        self.n_grades = n_grades

    def sample_labels(self, rng):
        cdf = np.cumsum(self.probs, axis=1)
        return (rng.random(self.probs.shape[0])[:, None] > cdf).sum(axis=1).clip(0, self.n_grades - 1)


def _index_update(pool, rng, removed=0.15):
    """Ranker a, and b = the same lists with a fraction of the documents removed."""
    import activerank as ar
    from activerank.relevance.rankers import rank_by_scores

    scores = pool.probs @ np.arange(pool.n_grades) + rng.random(pool.probs.shape[0])
    ra = rank_by_scores(scores, pool.offsets)
    keep = rng.random(scores.size) >= removed
    lists = [[z for z in ra[x].tolist() if keep[z]] or ra[x][:1].tolist() for x in range(ra.n_queries)]
    return ra, ar.Rankings.from_list(lists)


SYNTHETIC_METRICS = ("dcg@5", "err@10")


def synthetic_problems(metrics=SYNTHETIC_METRICS, *, seed=0):
    """``{("index", metric): Problem}`` of the synthetic index update of ``tests/test_api_changeable.py``.

    A calibrated model (labels drawn from it, once), only the documents that can change the difference
    judged (``judge="changeable"``): the determined queries (difference exactly 0) form a census stratum that
    is never drawn, the rest is cheap, so ``q*`` concentrates and queries repeat -- the design on which the
    distinct-query (cluster) standard error is conservative.  The problem is the sampled stratum (``p``
    renormalized over it); the engine's interval is ``exact + share * interval`` of it.
    """
    import activerank as ar
    from activerank.design.costs import QueryCosts
    from activerank.design.targets import Prediction
    from activerank.experiments.harness import Problem
    from activerank.metrics import pool_metric_values

    rng = np.random.default_rng(4)
    pool = SyntheticPool(rng)
    ra, rb = _index_update(pool, rng)
    labels = pool.sample_labels(np.random.default_rng([seed, 4]))
    out = {}
    for m in metrics:
        d = ar.make_design(pool, (ra, rb), pool.probs, metric=m, method="active")
        delta = (pool_metric_values(labels, d.rankings[0], metric=d.metric, ymax=2)
                 - pool_metric_values(labels, d.rankings[1], metric=d.metric, ymax=2))
        keep = np.ones(d.p.size, dtype=bool)
        keep[d.census] = False  # the sampled stratum
        p = d.p[keep] / d.p[keep].sum()
        costs = QueryCosts(d.costs.cost[keep], d.costs.raw[keep], d.costs.model, d.costs.unit)
        pr = d.prediction
        pred = Prediction(pr.mean[keep], pr.variance[keep], pr.sq_error[keep],
                          None if pr.system_mean is None else pr.system_mean[keep],
                          None if pr.output_variance is None else pr.output_variance[keep])
        out[("index", m)] = Problem(SCENARIOS["index"], d.metric, p, costs, {"model": pred, "uniform": pred},
                                    delta[keep], float(p @ delta[keep]), pool.probs, d.rankings)
    return out
