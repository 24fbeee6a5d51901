"""Document-level designs and method="auto" on a Dask pool: the in-memory answer, candidates only on the driver."""

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402
import activerank.distributed.documents as docs_mod  # noqa: E402

from ._pools import LinearSoftmax, boundaries, dask_frame, labeler_of, synthetic_frame  # noqa: E402

PROBS = ["p0", "p1", "p2"]


def _same(res_d, res_m, fields):
    assert res_d.method == res_m.method
    for f in fields:
        assert getattr(res_d, f) == pytest.approx(getattr(res_m, f), rel=1e-12, abs=1e-12, nan_ok=True), f
    pd.testing.assert_frame_equal(res_d.trace, res_m.trace, check_exact=False, rtol=1e-12, atol=1e-12)
    assert res_d.trace.attrs.keys() == res_m.trace.attrs.keys()
    for key, value in res_m.trace.attrs.items():
        if isinstance(value, (float, list)):
            assert res_d.trace.attrs[key] == pytest.approx(value, rel=1e-12), key
        elif key != "auto":
            assert res_d.trace.attrs[key] == value, key


@pytest.mark.parametrize("method, costs, budget", [("doc_dyn", "auto", 4), ("doc_dyn", "uniform", 12),
                                                   ("doc_stat", "log_length", 30), ("doc_dyn", "auto", 400)])
def test_compare_equals_in_memory_on_a_local_cluster(client, data, method, costs, budget):
    df, labels, frame = data
    pool = ard.DaskPool(frame, cost="cost" if costs == "auto" else None, length="length")
    mem, (sa, sb), probs, doc_costs = ard.in_memory(pool, scores=["score_a", "score_b"], probs=PROBS)
    gen_d, gen_m = np.random.default_rng(11), np.random.default_rng(11)
    res_d = ard.compare(pool, "score_a", "score_b", PROBS, labeler_of(labels), budget=budget, metric="dcg@5",
                        method=method, costs=costs, rng=gen_d)
    res_m = ar.compare(mem, sa, sb, probs, labeler_of(labels), budget=budget, metric="dcg@5", method=method,
                       costs=doc_costs if costs == "auto" else costs, rng=gen_m, judge="all")
    _same(res_d, res_m, ["difference", "standard_error", "estimate_a", "estimate_b", "cost_spent", "n_draws",
                         "n_queries", "exact", "dof"])
    assert res_d.cost_spent <= budget
    assert gen_d.random() == gen_m.random()  # one double per unit, as in memory
    if budget == 400:  # the budget covers every unit: the pool's exact value
        assert res_d.exact and res_d.standard_error == 0.0


def test_kappa_by_brackets_equals_one_gather(data, monkeypatch):
    """Few units per gather: kappa found by bracketing sums over the partitions, the same design."""
    df, labels, frame = data
    args = (frame, "score_a", PROBS, labeler_of(labels))
    ref = ard.estimate(*args, budget=9, metric="dcg@10", method="doc_dyn", rng=4)
    monkeypatch.setattr(docs_mod, "_GATHER", 7)
    monkeypatch.setattr(docs_mod, "_GRID", 5)
    res = ard.estimate(*args, budget=9, metric="dcg@10", method="doc_dyn", rng=4)
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-13)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-13)
    assert res.trace["doc_row"].tolist() == ref.trace["doc_row"].tolist()


def test_only_candidates_come_to_the_driver_and_only_drawn_queries_are_asked(data, monkeypatch):
    df, labels, frame = data
    sizes, asked = [], []
    original = docs_mod._candidates

    def counting(*args):
        out = original(*args)
        sizes.append(out["idx"].size)
        return out

    def labeler(qid, doc_ids):
        asked.append(qid)
        return labeler_of(labels)(qid, doc_ids)

    monkeypatch.setattr(docs_mod, "_candidates", counting)
    with dask.config.set(scheduler="sync"):  # the counter runs here, not on a copy
        res = ard.estimate(frame, "score_a", PROBS, labeler, budget=6, metric="dcg@10", method="doc_dyn", rng=0)
    n_units = res.trace.attrs["n_units"]
    assert res.n_draws <= sum(sizes) < n_units / 3
    assert sorted(asked) == sorted(set(res.trace["query_id"].tolist()))


def test_a_relevance_model_query_weights_and_column_labels(data):
    df, labels, frame = data
    pool = ard.DaskPool(frame, features=["f0", "f1"])
    model = LinearSoftmax()
    weights = np.random.default_rng(1).uniform(0.5, 2.0, df["query_id"].nunique())
    res_d = ard.estimate(pool, "score_a", model, ard.ColumnLabels("label"), budget=10, metric="dcg@5",
                         method="doc_dyn", query_weights=weights, rng=6)
    mem, (sa,), _, _ = ard.in_memory(pool, scores=["score_a"], probs=PROBS)
    probs = model.predict_proba(df[["f0", "f1"]].to_numpy())
    res_m = ar.estimate(mem, sa, probs, labeler_of(labels), budget=10, metric="dcg@5", method="doc_dyn",
                        costs="constant", query_weights=weights, rng=6)
    _same(res_d, res_m, ["estimate", "standard_error", "cost_spent", "n_draws"])


# --------------------------------------------------------------------------- method="auto"


@pytest.mark.parametrize("metric, budget", [("dcg@10", 6), ("dcg@3", 25), ("p@5", 3), ("err@10", 10)])
def test_auto_equals_in_memory(client, data, metric, budget):
    df, labels, frame = data
    pool = ard.DaskPool(frame, cost="cost")
    mem, (sa, sb), probs, doc_costs = ard.in_memory(pool, scores=["score_a", "score_b"], probs=PROBS)
    res_d = ard.compare(pool, "score_a", "score_b", PROBS, labeler_of(labels), budget=budget, metric=metric, rng=3)
    cascade = metric.startswith("err")
    # a cascade metric: in memory auto may run prefix, which a Dask pool skips: the same as active_wor
    # in memory, judge='all' keeps auto query-level (it asks for the rankers' own means); the same design as Dask's
    res_m = ar.compare(mem, sa, sb, probs, labeler_of(labels), budget=budget, metric=metric, costs=doc_costs, rng=3,
                       judge="all", method=res_d.method)
    auto_d = res_d.trace.attrs.pop("auto")
    auto_m = res_m.trace.attrs.pop("auto", None)
    _same(res_d, res_m, ["difference", "standard_error", "cost_spent", "n_draws"])
    assert auto_d["method"] == res_d.method
    if cascade:
        assert res_d.method == "active_wor"
        assert auto_d["reason"].startswith("prefix not applicable") and "Dask" in auto_d["reason"]
        assert auto_d["predicted_variance"]["prefix"] == np.inf
    else:  # a Dask comparison judges every document of a drawn query, and weighs doc_dyn
        assert auto_m is None and set(auto_d["predicted_variance"]) == {"active_wor", "doc_dyn"}


def test_auto_skips_what_cannot_run_and_says_why(data):
    df, labels, frame = data
    args = (frame, "score_a", PROBS, labeler_of(labels))
    same = ard.compare(frame, "score_a", "score_a", PROBS, labeler_of(labels), budget=5, metric="dcg@5", rng=1)
    assert same.method == "active_wor"
    assert same.trace.attrs["auto"]["reason"].startswith("doc_dyn not applicable: no unit can change any target")
    mt = ard.estimate(*args, budget=8, metric="dcg@10", rng=np.random.Generator(np.random.MT19937(1)))
    assert mt.method == "active_wor" and "PCG64" in mt.trace.attrs["auto"]["reason"]
    # with labels held, both designs are predicted as if none were, and the choice runs with them, free
    earlier = _some_judgments(df, labels, 3, 4, seed=2)
    asked = []

    def counting(q, docs):
        asked.extend((q, d) for d in docs)
        return labeler_of(labels)(q, docs)

    held = ard.estimate(frame, "score_a", PROBS, counting, budget=8, metric="dcg@10", rng=1, judgments=earlier)
    assert held.method == "doc_dyn" and "as if no label were held" in held.trace.attrs["auto"]["reason"]
    assert not {(q, d) for q, docs in earlier.items() for d in docs} & set(asked)
    explicit = ard.estimate(*args, budget=8, metric="dcg@10", rng=1, judgments=earlier, method="doc_dyn")
    assert held.estimate == explicit.estimate and held.standard_error == explicit.standard_error
    # the rules every route shares (activerank.design.auto): per-query costs stay query-level, as in memory
    per_query = ard.estimate(*args, budget=8, metric="dcg@10", rng=1, costs="uniform")
    assert per_query.method == "active_wor" and "per-query costs" in per_query.trace.attrs["auto"]["reason"]


def test_document_designs_refuse_what_they_cannot_do(data):
    df, labels, frame = data
    args = (frame, "score_a", PROBS, labeler_of(labels))
    with pytest.raises(ValueError, match="needs a metric that adds over documents"):
        ard.estimate(*args, budget=8, metric="err@10", method="doc_dyn")
    with pytest.raises(ValueError, match="`judgments` names query 'nope', which is not in the pool"):
        ard.estimate(*args, budget=8, metric="dcg@10", method="doc_dyn", judgments={"nope": {}})
    with pytest.raises(ValueError, match="`judgments`: query 5 has no document 'x'"):
        ard.estimate(*args, budget=8, metric="dcg@10", method="doc_dyn", judgments={5: {"x": 1}})
    with pytest.raises(ValueError, match="`rng`: a document-level design on a Dask pool"):
        ard.estimate(*args, budget=8, metric="dcg@10", method="doc_dyn", rng=np.random.Generator(np.random.MT19937(1)))
    with pytest.raises(ValueError, match="`ci`='bootstrap'"):
        ard.estimate(*args, budget=8, metric="dcg@10", method="doc_dyn", ci="bootstrap")
    with pytest.raises(ValueError, match="is too small: it buys"):
        ard.estimate(*args, budget=0.05, metric="dcg@10", method="doc_dyn")


# --------------------------------------------------------------------------- earlier judgments


def _some_judgments(df, labels, n_queries, per_query, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for q in rng.choice(df["query_id"].unique(), n_queries, replace=False):
        docs = df.loc[df["query_id"] == q, "doc_id"].to_numpy()
        out[int(q)] = {d: labels[d] for d in rng.choice(docs, min(per_query, docs.size), replace=False)}
    return out


@pytest.mark.parametrize("method, budget", [("doc_dyn", 3), ("doc_stat", 10)])
def test_held_documents_are_a_census_as_in_memory(data, method, budget):
    df, labels, frame = data
    pool = ard.DaskPool(frame, cost="cost")
    mem, (sa, sb), probs, doc_costs = ard.in_memory(pool, scores=["score_a", "score_b"], probs=PROBS)
    held = _some_judgments(df, labels, 12, 4, seed=0)
    res_d = ard.compare(pool, "score_a", "score_b", PROBS, labeler_of(labels), budget=budget, metric="dcg@5",
                        method=method, rng=4, judgments=held)
    res_m = ar.compare(mem, sa, sb, probs, labeler_of(labels), budget=budget, metric="dcg@5", method=method,
                       costs=doc_costs, rng=4, judge="all", judgments=held)
    assert (res_d.trace["stratum"] == "census").sum() > 0
    _same(res_d, res_m, ["difference", "standard_error", "cost_spent", "n_draws", "exact"])


def test_every_unit_held_is_exact_and_a_failed_run_resumes(data):
    df, labels, frame = data
    mem, (sa,), probs, _ = ard.in_memory(frame, scores=["score_a"], probs=PROBS)
    every = {int(q): {d: labels[d] for d in g["doc_id"]} for q, g in df.groupby("query_id", sort=False)}
    gen = np.random.default_rng(2)
    res = ard.estimate(frame, "score_a", PROBS, labeler_of(labels), budget=3, metric="dcg@5", method="doc_dyn",
                       rng=gen, judgments=every)
    ref = ar.estimate(mem, sa, probs, labeler_of(labels), budget=3, metric="dcg@5", method="doc_dyn",
                      costs="constant", rng=2, judgments=every)
    assert res.exact and res.standard_error == 0.0 and res.cost_spent == 0.0
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-13)
    assert gen.random() == np.random.default_rng(2).random()  # a census draws nothing, as in memory
    calls = []

    def flaky(qid, doc_ids):
        calls.append(qid)
        if len(calls) == 5:
            raise RuntimeError("annotator went home")
        return labeler_of(labels)(qid, doc_ids)

    with pytest.raises(ar.LabelingError) as err:
        ard.estimate(frame, "score_a", PROBS, flaky, budget=6, metric="dcg@10", method="doc_dyn", rng=9)
    bought = err.value.judgments
    assert len(bought) == 4
    res_d = ard.estimate(frame, "score_a", PROBS, labeler_of(labels), budget=6, metric="dcg@10", method="doc_dyn",
                         rng=9, judgments=bought)
    res_m = ar.estimate(mem, sa, probs, labeler_of(labels), budget=6, metric="dcg@10", method="doc_dyn",
                        costs="constant", rng=9, judgments=bought)
    _same(res_d, res_m, ["estimate", "standard_error", "cost_spent", "n_draws"])
