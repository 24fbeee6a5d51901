"""One definition per metric: a census (every query bought) returns ``pool_metric_values``' mean.

Through the in-memory API every method is checked by the agreement tests; here the two other paths a
metric flows through: labeling campaigns (the store plans, the annotators' judgments come back as files)
and Dask pools (the per-query table is computed partition by partition).  Rankers with tied scores (LETOR
feature 25) check that both rank ties as ``rank_by_scores`` does.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import activerank as ar

SPECS = ("nDCG@10", "ERR@10", "P@10", "RR", "err@10", "ap")


@pytest.fixture(scope="module")
def sample():
    pool, train = ar.load_sample(), ar.load_sample("train")
    probs = ar.relevance.make_relevance_model("logistic", 3).fit(train.X, train.labels).predict_proba(pool.X)
    return pool, probs, ar.KnownLabels.from_data(pool)


def _truth(pool, scores, spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ranking = ar.relevance.rank_by_scores(scores, pool)
        return float(ar.pool_metric_values(pool.labels, ranking, metric=spec, ymax=pool.ymax).mean())


@pytest.mark.parametrize("spec", SPECS)
def test_campaign_census_equals_pool_metric_values(sample, spec, tmp_path):
    pool, probs, lab = sample
    bm25 = pool.X[:, 24]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        camp = ar.campaign.Campaign.create(tmp_path / "c.db", pool, bm25, probs, budget=1000, metric=spec,
                                           method="active_wor", seed=0)
    with camp:
        lines = []
        for x in np.unique(camp.plan().queries).tolist():
            qid = camp.query_ids[x]
            docs = camp.tasks(qid)
            lines += [json.dumps({"query_id": int(qid), "doc_id": d, "grade": int(g)})
                      for d, g in zip(docs, lab(int(qid), docs))]
        (tmp_path / "judged.jsonl").write_text("\n".join(lines) + "\n")
        camp.import_judgments(tmp_path / "judged.jsonl")
        res = camp.estimate()
    assert res.n_queries == pool.n_queries
    assert res.metric == str(ar.parse_metric(res.metric))
    assert res.estimate == pytest.approx(_truth(pool, bm25, spec), abs=1e-12)


@pytest.mark.parametrize("spec", ("ERR@10", "P@10", "RR", "err@10", "dcg@5"))
def test_dask_census_equals_pool_metric_values(sample, spec):
    pytest.importorskip("dask.dataframe")
    import dask.dataframe as dd
    import pandas as pd

    import activerank.distributed as ard

    pool, probs, lab = sample
    df = pd.DataFrame({"query_id": np.repeat(pool.query_ids, np.diff(pool.offsets)), "doc_id": pool.doc_ids,
                       "bm25": pool.X[:, 24]})
    df[["p0", "p1", "p2"]] = probs
    frame = dd.from_pandas(df, npartitions=1, sort=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        res = ard.estimate(ard.DaskPool(frame), "bm25", ["p0", "p1", "p2"], lab, budget=1e6, metric=spec, rng=0,
                           costs="constant")
    assert res.n_queries == pool.n_queries
    assert res.estimate == pytest.approx(_truth(pool, pool.X[:, 24], spec), abs=1e-12)
