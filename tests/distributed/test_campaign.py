"""activerank.distributed.create_campaign: a campaign that stores the per-query table and the drawn queries only."""

import json
import sqlite3

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402
from activerank.campaign import Campaign  # noqa: E402

from ._pools import boundaries, dask_frame, synthetic_frame  # noqa: E402

PROBS = ["p0", "p1", "p2"]


def _answer(tasks, out, labels):
    rows = [json.loads(line) for line in open(tasks)]
    with open(out, "w") as fh:
        for r in rows:
            fh.write(json.dumps({**r, "grade": labels[r["doc_id"]], "annotator": "sim"}) + "\n")


def test_campaign_on_a_distributed_pool(tmp_path):
    df, labels = synthetic_frame(seed=7, n_queries=100)
    frame = dask_frame(df, boundaries(df, 4))
    camp = ard.create_campaign(tmp_path / "c.db", frame, ["score_a", "score_b"], PROBS, budget=15,
                               metric="err@10", seed=9)
    assert camp.check() == []
    # the store holds every query's design row, but documents of the drawn queries only
    db = sqlite3.connect(tmp_path / "c.db")
    n_queries, n_docs = (db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("queries", "documents"))
    db.close()
    drawn = np.unique(camp.plan().queries)
    assert n_queries == 100 and n_docs == int((df["query_id"].isin(camp.pool().query_ids[drawn])).sum()) < len(df)
    assert camp.probs().shape == (n_docs, 3)
    camp.export_tasks(tmp_path / "t.jsonl")
    _answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
    camp.import_judgments(tmp_path / "a.jsonl")
    res = camp.estimate()
    ref = ard.compare(frame, "score_a", "score_b", PROBS, ard.ColumnLabels("label"), budget=15, metric="err@10",
                      rng=9, method="active")  # a campaign's default: a draw sequence
    assert res.difference == pytest.approx(ref.difference, rel=1e-12, abs=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12, abs=1e-12)
    # the default is auto, as in the API; on a Dask pool it runs active and says why
    assert res.method == "active" and res.trace.attrs["auto"]["method"] == "active"
    assert "Dask pool samples whole queries" in res.trace.attrs["auto"]["reason"]
    # the in-memory campaign of the same pool draws the same queries
    mem, (sa, sb), probs, _ = ard.in_memory(frame, scores=["score_a", "score_b"], probs=PROBS)
    full = Campaign.create(tmp_path / "m.db", mem, [sa, sb], probs, budget=15, metric="err@10", costs="constant",
                           seed=9, judge="all")
    np.testing.assert_array_equal(full.plan().queries, camp.plan().queries)
    with pytest.raises(FileExistsError, match="already exists"):
        ard.create_campaign(tmp_path / "c.db", frame, "score_a", PROBS, budget=15, seed=9)
    with pytest.raises(ValueError, match="`scores` must name one or two score columns"):
        ard.create_campaign(tmp_path / "d.db", frame, ["score_a"] * 3, PROBS, budget=15, seed=9)
    with pytest.raises(ValueError, match="`method`='doc_dyn' samples single documents; a campaign on a "
                                         "distributed pool plans whole queries only"):
        ard.create_campaign(tmp_path / "e.db", frame, "score_a", PROBS, budget=15, metric="dcg@10", seed=9,
                            method="doc_dyn")
    assert not (tmp_path / "e.db").exists()
    assert ar.distributed.create_campaign is ard.create_campaign


def test_campaign_without_replacement_on_a_distributed_pool(tmp_path):
    df, labels = synthetic_frame(seed=7, n_queries=100)
    frame = dask_frame(df, boundaries(df, 4))
    camp = ard.create_campaign(tmp_path / "c.db", frame, ["score_a", "score_b"], PROBS, budget=15,
                               metric="err@10", seed=9, method="active_wor")
    assert camp.check() == []
    x = camp.plan().queries
    assert np.unique(x).size == x.size and camp.plan().charged.sum() <= 15 + 1e-9
    camp.export_tasks(tmp_path / "t.jsonl")
    _answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
    camp.import_judgments(tmp_path / "a.jsonl")
    res = camp.estimate()
    ref = ard.compare(frame, "score_a", "score_b", PROBS, ard.ColumnLabels("label"), budget=15, metric="err@10",
                      rng=9, method="active_wor")
    assert res.method == "active_wor"
    assert res.difference == pytest.approx(ref.difference, rel=1e-12, abs=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12, abs=1e-12)
    assert "auto" not in res.trace.attrs  # a method asked for by name
    # the in-memory campaign of the same pool plans the same sample
    mem, (sa, sb), probs, _ = ard.in_memory(frame, scores=["score_a", "score_b"], probs=PROBS)
    full = Campaign.create(tmp_path / "m.db", mem, [sa, sb], probs, budget=15, metric="err@10", costs="constant",
                           seed=9, judge="all", method="active_wor")
    np.testing.assert_array_equal(full.plan().queries, x)
