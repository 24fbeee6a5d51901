"""``judges=`` on a Dask pool: judge columns calibrated on the held labels, the in-memory answer."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402
from activerank.judges import JudgeOutputs  # noqa: E402

from ._pools import LinearSoftmax, boundaries, dask_frame, labeler_of, synthetic_frame  # noqa: E402

PROBS = ["p0", "p1", "p2"]


@pytest.fixture(scope="module")
def judged():
    """The seed-3 pool with an LLM-like judge column (grades 0-3, a tenth missing) and 10 queries held whole."""
    df, labels = synthetic_frame(seed=3)
    rng = np.random.default_rng(7)
    y = df["label"].to_numpy()
    grade = np.clip(y + np.where(rng.random(y.size) < 0.6, 0, rng.choice([-1, 1], y.size)) + (y == 2), 0, 3)
    df["llm"] = np.where(rng.random(y.size) < 0.1, np.nan, grade.astype(float))
    df["llm_score"] = y + rng.normal(0.0, 1.0, y.size)
    held = {int(q): {d: labels[d] for d in g["doc_id"]}
            for q, g in list(df.groupby("query_id", sort=False))[5:15]}
    return df, labels, dask_frame(df, boundaries(df, 5)), held


def _in_memory_judges(df, mem):
    return [JudgeOutputs("llm", "grades", df["llm"].to_numpy(), 4),
            JudgeOutputs("llm_score", "scores", df["llm_score"].to_numpy(), None)]


JUDGES = [ard.JudgeColumns("llm", levels=4), ard.JudgeColumns("llm_score", kind="scores")]


def test_doc_dyn_with_judges_equals_in_memory(client, judged):
    df, labels, frame, held = judged
    pool = ard.DaskPool(frame, cost="cost")
    mem, (sa, sb), probs, doc_costs = ard.in_memory(pool, scores=["score_a", "score_b"], probs=PROBS)
    res_d = ard.compare(pool, "score_a", "score_b", PROBS, labeler_of(labels), budget=4, metric="dcg@5",
                        method="doc_dyn", rng=4, judgments=held, judges=JUDGES)
    res_m = ar.compare(mem, sa, sb, probs, labeler_of(labels), budget=4, metric="dcg@5", method="doc_dyn",
                       costs=doc_costs, rng=4, judge="all", judgments=held, judges=_in_memory_judges(df, mem))
    info_d, info_m = res_d.trace.attrs["judges"], res_m.trace.attrs["judges"]
    assert info_d == info_m and info_d["calibrated"] and info_d["n_labels"] > 30
    assert res_d.method == res_m.method == "doc_dyn"
    for f in ("difference", "standard_error", "cost_spent", "n_draws"):
        assert getattr(res_d, f) == pytest.approx(getattr(res_m, f), rel=1e-9, abs=1e-12), f
    assert res_d.trace["doc_id"].tolist() == res_m.trace["doc_id"].tolist()


def test_query_level_runs_on_the_calibrated_model(judged):
    """active_wor with judges = active_wor on the in-memory calibrated probabilities as columns."""
    from activerank.engine.judged import calibrate_held

    df, labels, frame, held = judged
    pool = ard.DaskPool(frame, features=("f0", "f1"))
    base = LinearSoftmax()
    mem, (sa,), _, _ = ard.in_memory(frame, scores=["score_a"], probs=PROBS)
    lab = np.full(len(df), -1)
    row = {d: i for i, d in enumerate(df["doc_id"])}
    for docs in held.values():
        for d, g in docs.items():
            lab[row[d]] = g
    seed = int(np.random.default_rng(9).integers(0, 2**31 - 1))
    P, info = calibrate_held(mem, base.predict_proba(df[["f0", "f1"]].to_numpy()), _in_memory_judges(df, mem), lab,
                             seed=seed)
    assert info["calibrated"]
    ref_df = df.assign(**{f"c{g}": P[:, g] for g in range(3)})
    ref_frame = dask_frame(ref_df, boundaries(ref_df, 5))
    gen = np.random.default_rng(9)
    gen.integers(0, 2**31 - 1)  # the judged run draws its calibration seed first
    ref = ard.estimate(ref_frame, "score_a", ["c0", "c1", "c2"], labeler_of(labels), budget=6, metric="dcg@5",
                       method="active_wor", rng=gen, judgments=held)
    res = ard.estimate(pool, "score_a", base, labeler_of(labels), budget=6, metric="dcg@5", method="active_wor",
                       rng=9, judgments=held, judges=JUDGES)
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-9)
    assert res.trace["query_id"].tolist() == ref.trace["query_id"].tolist()
    assert res.trace.attrs["judges"]["judges"] == ["llm", "llm_score"]


def test_judges_need_clear_columns_and_held_labels_on_the_scale(judged):
    df, labels, frame, held = judged
    args = (frame, "score_a", PROBS, labeler_of(labels))
    kw = dict(budget=6, metric="dcg@5", rng=0)
    with pytest.raises(TypeError, match="JudgeColumns or a sequence"):
        ard.estimate(*args, judges="llm", judgments=held, **kw)
    with pytest.raises(ValueError, match=r"`judges\[0\].columns`: the pool's frame has no column 'gpt'"):
        ard.estimate(*args, judges=[ard.JudgeColumns("gpt", levels=4)], judgments=held, **kw)
    with pytest.raises(TypeError):  # only the columns are positional
        ard.JudgeColumns("llm", "grades", 4)
    bad = {**held, next(iter(held)): {**held[next(iter(held))], next(iter(held[next(iter(held))])): 1.5}}
    with pytest.raises(ValueError, match=r"`judgments`: query \d+, document 'd\d+': grade 1.5 is not an integer >= 0"):
        ard.estimate(*args, judges=JUDGES, judgments=bad, **kw)
    with pytest.raises(TypeError, match=r"`judgments`: the judgments of query \d+ must be a mapping"):
        ard.estimate(*args, judges=JUDGES, judgments={q: list(d) for q, d in held.items()}, **kw)
    q0, d0 = next(iter(held)), next(iter(held[next(iter(held))]))
    with pytest.raises(ValueError, match=r"has grade 7, outside the relevance model's 0..2"):
        ard.estimate(*args, judges=JUDGES, judgments={**held, q0: {**held[q0], d0: 7}}, **kw)
    with pytest.raises(ValueError, match=r"`judges\[0\]` \('llm'\): `levels` is required for kind='grades'"):
        ard.estimate(*args, judges=[ard.JudgeColumns("llm")], judgments=held, **kw)
    with pytest.raises(ValueError, match=r"kind='probabilities' takes one column per grade"):
        ard.estimate(*args, judges=[ard.JudgeColumns("llm", kind="probabilities")], judgments=held, **kw)
    with pytest.raises(ValueError, match=r"held rows: judge 'llm' .* grade 3 is not on the judge's declared scale"):
        ard.estimate(*args, judges=[ard.JudgeColumns("llm", levels=3)], judgments=held, **kw)
    # a probability row with a NaN is broken, not missing
    probs = df.assign(pa=0.7, pb=0.3)
    probs.loc[3, "pb"] = np.nan
    with pytest.raises(ValueError, match=r"probabilities must lie in \[0, 1\]"):
        ard.estimate(dask_frame(probs, boundaries(probs, 5)), "score_a", PROBS, labeler_of(labels),
                     judges=[ard.JudgeColumns(["pa", "pb"], kind="probabilities")], judgments=held, **kw)
    # off the scale outside the held queries: found by the worker, named by partition and judge
    off = df.assign(llm3=df["llm"].clip(upper=2))
    off.loc[len(off) - 1, "llm3"] = 3.0
    off_frame = dask_frame(off, boundaries(off, 5))
    with pytest.raises(ValueError, match=r"partition 4 .*judge 'llm3'.* row \d+: grade 3 is not on the judge's"):
        ard.estimate(off_frame, "score_a", PROBS, labeler_of(labels), judges=[ard.JudgeColumns("llm3", levels=3)],
                     judgments=held, **kw)


@pytest.mark.parametrize("method", ["doc_dyn", "active_wor"])
def test_a_run_without_enough_labels_buys_its_calibration_rounds(judged, method):
    """Rounds first, their labels held by the last run; with active_wor the first round fails after buying
    (1 query bought, no standard error), and is charged its budget: every label is kept and asked once."""
    df, labels, frame, held = judged
    asked = []
    base = labeler_of(labels)

    def counting(q, docs):
        asked.extend((q, d) for d in docs)
        return base(q, docs)

    few = {q: held[q] for q in list(held)[:1]}  # fewer than 30 labels held
    res = ard.estimate(frame, "score_a", PROBS, counting, budget=8, metric="dcg@5", method=method, rng=0,
                       judges=JUDGES, judgments=few)
    info = res.trace.attrs["judges"]
    assert info["round_estimates_used"] is False and info["calibration_round_cost"] > 0
    assert info["calibrated"] and info["n_labels"] > sum(len(d) for d in few.values())
    assert res.budget == 8 and info["calibration_round_cost"] < res.cost_spent <= 8
    assert len(asked) == len(set(asked)) == res.judgments.bought.n_labels
    assert all(d in res.judgments[q] for q, docs in few.items() for d in docs)  # the caller's labels kept
    if method == "doc_dyn":
        assert [r["planned_on_labels"] > 0 for r in info["calibration_rounds"]] == [False, True]
        assert [r["weight"] for r in info["calibration_rounds"]] == [0.0, 0.0]  # held, not weighed in
        assert all(len(r["estimate"]) == len(r["standard_error"]) == 1 for r in info["calibration_rounds"])
    else:
        assert "after buying" in info["calibration_round"] and info["calibration_round_cost"] == pytest.approx(1.2)
    if method == "active_wor":  # seeded (the cheaper of the two runs; the rounds are the same code)
        again = ard.estimate(frame, "score_a", PROBS, base, budget=8, metric="dcg@5", method=method, rng=0,
                             judges=JUDGES, judgments=few)
        assert again.estimate == res.estimate


def _qrels(held, path):
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in held.items() for d, g in docs.items()))
    return path


def _answer(tasks, out, labels):
    import json

    with open(out, "w") as fh:
        for line in open(tasks):
            r = json.loads(line)
            fh.write(json.dumps({**r, "grade": labels[r["doc_id"]], "annotator": "sim"}) + "\n")


def test_a_campaign_plans_on_the_judges_calibrated_on_its_held_qrels(judged, tmp_path):
    """The stored model is the calibrated one; the drawn queries' held labels are imported, never exported; once
    judged, the estimate is the run on that model holding those labels."""
    from activerank.distributed.judges import held_qrels_judgments, with_judges

    df, labels, frame, held = judged
    path = _qrels(held, tmp_path / "held.qrels")
    pool = ard.DaskPool(frame)
    assert held_qrels_judgments(path, pool, n_grades=3) == held  # ids in the pool's types
    camp = ard.create_campaign(tmp_path / "c.db", pool, ["score_a", "score_b"], PROBS, budget=15, metric="dcg@5",
                               seed=9, held_qrels=path, judges=JUDGES)
    assert camp.check() == []
    pool2, model, info = with_judges(pool, PROBS, JUDGES, held, seed=9)
    assert info["calibrated"] and info["n_labels"] > 30
    drawn_ids = camp.pool().query_ids[np.unique(camp.plan().queries)]
    held_drawn = {q: d for q, d in held.items() if str(q) in set(map(str, drawn_ids))}
    assert held_drawn  # the seed draws some held queries: their labels are stored, not asked
    camp.export_tasks(tmp_path / "t.jsonl")
    exported = {line.split('"doc_id": ')[1].split('"')[1] for line in open(tmp_path / "t.jsonl")}
    assert not exported & {d for docs in held_drawn.values() for d in docs}
    _answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
    camp.import_judgments(tmp_path / "a.jsonl")
    res = camp.estimate()
    camp.close()
    ref = ard.compare(pool2, "score_a", "score_b", model, ard.ColumnLabels("label"), budget=15, metric="dcg@5",
                      rng=9, method="active", judgments=held)
    assert res.trace.attrs["judges"] == info
    assert res.difference == pytest.approx(ref.difference, rel=1e-12, abs=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12, abs=1e-12)


def test_a_campaign_with_judges_needs_enough_held_labels(judged, tmp_path):
    df, labels, frame, held = judged
    kw = dict(budget=15, metric="dcg@5", seed=9, judges=JUDGES)
    with pytest.raises(ValueError, match="calibrated on the human labels held: pass `held_qrels`"):
        ard.create_campaign(tmp_path / "a.db", frame, "score_a", PROBS, **kw)
    few = _qrels({q: held[q] for q in list(held)[:1]}, tmp_path / "few.qrels")
    with pytest.raises(ValueError, match=r"`held_qrels`: \d+ labels are held, fewer than 30 .* planned once"):
        ard.create_campaign(tmp_path / "b.db", frame, "score_a", PROBS, held_qrels=few, **kw)
    bad = tmp_path / "bad.qrels"
    bad.write_text("x 0 d1 1\n")
    with pytest.raises(ValueError, match="query id 'x' is not an integer"):
        ard.create_campaign(tmp_path / "c.db", frame, "score_a", PROBS, held_qrels=bad, **kw)
    bad.write_text("5 0 d1 3\n")  # off the model's scale, with or without judges: refused before anything is made
    for name, extra in (("d.db", kw), ("e.db", dict(budget=15, seed=9))):
        with pytest.raises(ValueError, match="line 1"):
            ard.create_campaign(tmp_path / name, frame, "score_a", PROBS, held_qrels=bad, **extra)
    assert not any((tmp_path / n).exists() for n in ("a.db", "b.db", "c.db", "d.db", "e.db"))
