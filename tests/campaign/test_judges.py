"""Judges in a campaign: calibrated on the labels held at creation, they become the stored relevance model; the
annotators' agreement."""

import json

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign
from activerank.engine.judged import calibrate_held
from activerank.judges import JudgeOutputs
from activerank.pool import pool_iv

from .test_documents import answer


def _judge(data, seed=0):
    """Keeps the grade w.p. 0.7, else one grade off."""
    rng = np.random.default_rng(seed)
    step = np.where(rng.random(data.labels.size) < 0.7, 0, rng.choice([-1, 1], data.labels.size))
    return JudgeOutputs("sim", "grades", np.clip(data.labels + step, 0, 2).astype(float), 3)


def _held(data, tmp_path, n_queries=6):
    held = {}
    for x in range(n_queries):
        rows = range(int(data.offsets[x]), int(data.offsets[x + 1]))
        held[data.query_ids[x]] = {data.doc_ids[r]: int(data.labels[r]) for r in rows}
    path = tmp_path / "held.qrels"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in held.items() for d, g in docs.items()))
    return held, path


@pytest.mark.filterwarnings("ignore::activerank.LowEffectiveSampleSizeWarning")
@pytest.mark.parametrize("method", ["active", "doc_dyn"])
def test_the_calibrated_judge_is_the_campaigns_model(tmp_path, data, probs, labels, method):
    judge = _judge(data)
    held, path = _held(data, tmp_path)
    grades = np.full(data.labels.size, -1)
    n = int(data.offsets[6])
    grades[:n] = data.labels[:n]
    model, _ = calibrate_held(pool_iv(data), np.asarray(probs), [judge], grades, seed=3)
    assert not np.allclose(model, probs)
    a = data.X[:, 24]
    ref = ar.estimate(data, a, model, labels, budget=8, metric="dcg@10", method=method, rng=3, judgments=held,
                      costs="constant")
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="dcg@10", method=method, seed=3,
                         costs="constant", held_qrels=path, judges=judge) as c:
        np.testing.assert_array_equal(c.probs(), model)
        c.import_qrels(path)
        c.export_tasks(tmp_path / "t.jsonl")
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
        c.import_judgments(tmp_path / "a.jsonl")
        res = c.estimate()
    info = res.trace.attrs["judges"]
    assert info["judges"] == ["sim"] and info["calibrated"] and info["n_labels"] == n
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)


def test_a_document_campaign_plans_on_the_calibrated_judge(tmp_path, data, probs, labels):
    _, path = _held(data, tmp_path)
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 24], probs, budget=8, metric="dcg@10", seed=3,
                         held_qrels=path, judges=_judge(data)) as c:
        c.export_tasks(tmp_path / "t.jsonl")
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
        c.import_judgments(tmp_path / "a.jsonl")
        res = c.estimate()
    assert res.method == "doc_dyn" and res.trace.attrs["judges"]["calibrated"] and "auto" in res.trace.attrs


def test_judges_need_enough_held_labels(tmp_path, data, probs):
    judge = _judge(data)
    a = data.X[:, 24]
    with pytest.raises(ValueError, match="calibrated on the human labels held: pass `held_qrels`"):
        Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="dcg@10", judges=judge)
    _, path = _held(data, tmp_path, n_queries=1)
    with pytest.raises(ValueError, match=r"holds \d+ labels on documents the judges judged; .* at least 30"):
        Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="dcg@10", held_qrels=path, judges=judge)
    q, d = data.query_ids[0], data.doc_ids[0]
    path.write_text(f"{q} 0 {d} 1\n{q} 0 {data.doc_ids[1]} x\n")
    with pytest.raises(ValueError, match=r"`held_qrels` line 2: grade 'x' is not an integer in 0..2"):
        Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="dcg@10", held_qrels=path, judges=judge)
    with pytest.raises(TypeError, match="`judges` must be JudgeOutputs"):
        Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="dcg@10", held_qrels=path, judges="x")


def test_a_campaigns_annotators(tmp_path, data):
    probs = np.full((data.labels.size, 3), 1 / 3)
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=3, metric="dcg@5", method="active",
                         seed=0) as c:
        x = int(c.plan().queries[0])
        qid, docs = c.query_ids[x], c.tasks(c.query_ids[x])
        for ann, shift in (("ann", 0), ("bob", 1)):
            rows = [{"query_id": qid, "doc_id": d, "grade": (i + shift * (i % 2)) % 3, "annotator": ann}
                    for i, d in enumerate(docs)]
            (tmp_path / f"{ann}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            c.import_judgments(tmp_path / f"{ann}.jsonl")
        out = c.assessor_agreement()
    assert out.assessors == ("ann", "bob") and out.n_shared == len(docs)
    assert out.pairwise[0][5] == pytest.approx(np.mean([i % 2 == 0 for i in range(len(docs))]))
