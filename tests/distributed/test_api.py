"""activerank.distributed.estimate / compare: the in-memory estimate, on a Dask cluster."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402

from ._pools import LinearSoftmax, boundaries, dask_frame, labeler_of, synthetic_frame  # noqa: E402

PROBS = ["p0", "p1", "p2"]


def _same(res_d, res_m, fields):
    import pandas as pd

    for f in fields:
        assert getattr(res_d, f) == pytest.approx(getattr(res_m, f), rel=1e-12, abs=1e-12), f
    pd.testing.assert_frame_equal(res_d.trace, res_m.trace, check_exact=False, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("metric, method, costs", [("err@10", "active", "auto"), ("dcg@5", "model_assisted", "uniform"),
                                                   ("dcg@10", "passive", "log_length"),
                                                   ("err@10", "active_wor", "auto")])
def test_compare_equals_in_memory_on_a_local_cluster(client, data, metric, method, costs):
    df, labels, frame = data
    pool = ard.DaskPool(frame, cost="cost" if costs == "auto" else None, length="length")
    mem, (sa, sb), probs, doc_costs = ard.in_memory(pool, scores=["score_a", "score_b"], probs=PROBS)
    mem_costs = doc_costs if costs == "auto" else costs
    res_d = ard.compare(pool, "score_a", "score_b", PROBS, labeler_of(labels), budget=25, metric=metric,
                        method=method, costs=costs, rng=11)
    # the distributed path judges every document of a drawn query (judge="all")
    res_m = ar.compare(mem, sa, sb, probs, labeler_of(labels), budget=25, metric=metric, method=method,
                       costs=mem_costs, rng=11, judge="all")
    assert res_d.n_queries >= 10
    _same(res_d, res_m, ["difference", "standard_error", "estimate_a", "estimate_b", "cost_spent",
                         "effective_sample_size", "n_draws", "n_queries"])


# dask's Parquet reader calls a pandas API that pandas 3.1 deprecates (not ours)
@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_estimate_from_parquet_with_a_model_equals_in_memory(client, tmp_path):
    df, labels = synthetic_frame(seed=4, n_queries=90)
    cuts = boundaries(df, 3)
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        df.iloc[a:b].to_parquet(tmp_path / f"part.{i:03d}.parquet", index=False)
    pool = ard.DaskPool.from_parquet(str(tmp_path), features=["f0", "f1"])
    assert pool.frame.npartitions == 3
    model = LinearSoftmax()
    gen_d, gen_m = np.random.default_rng(8), np.random.default_rng(8)
    res_d = ard.estimate(pool, "score_a", model, labeler_of(labels), budget=20, metric="err@5", rng=gen_d)
    mem, (sa,), _, _ = ard.in_memory(pool, scores=["score_a"], probs=PROBS)
    probs = model.predict_proba(df[["f0", "f1"]].to_numpy())
    res_m = ar.estimate(mem, sa, probs, labeler_of(labels), budget=20, metric="err@5", costs="constant",
                        rng=gen_m, method=res_d.method)
    _same(res_d, res_m, ["estimate", "standard_error", "cost_spent", "n_queries"])
    # a Generator passed in moves on exactly as in memory
    assert gen_d.random() == gen_m.random()


def test_query_id_as_the_index(data):
    df, labels, _ = data
    frame = dask_frame(df.set_index("query_id"), boundaries(df, 4))
    res_d = ard.estimate(ard.DaskPool(frame), "score_a", PROBS, labeler_of(labels), budget=15, metric="dcg@5",
                         rng=2)
    mem, (sa,), probs, _ = ard.in_memory(frame, scores=["score_a"], probs=PROBS)
    # the default, "auto", as in memory (here: doc_dyn)
    res_m = ar.estimate(mem, sa, probs, labeler_of(labels), budget=15, metric="dcg@5", costs="constant",
                        rng=2, method="auto")
    assert res_d.method == res_m.method
    _same(res_d, res_m, ["estimate", "standard_error"])


@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_string_query_ids_from_parquet(data, tmp_path):
    df, labels, _ = data
    df = df.assign(query_id="q" + df["query_id"].astype(str))
    cuts = boundaries(df, 2)
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        df.iloc[a:b].to_parquet(tmp_path / f"part.{i}.parquet", index=False)
    pool = ard.DaskPool.from_parquet(str(tmp_path))
    res_d = ard.compare(pool, "score_a", "score_b", PROBS, labeler_of(labels), budget=15, rng=1)
    mem, (sa, sb), probs, _ = ard.in_memory(pool, scores=["score_a", "score_b"], probs=PROBS)
    res_m = ar.compare(mem, sa, sb, probs, labeler_of(labels), budget=15, costs="constant", rng=1,
                       judge="all")
    assert res_d.trace["query_id"].str.startswith("q").all()
    _same(res_d, res_m, ["difference", "standard_error"])


def test_only_the_drawn_queries_are_labeled_and_fetched(data):
    df, labels, frame = data
    asked = []

    def labeler(qid, docs):
        asked.append(qid)
        return [labels[d] for d in docs]

    res = ard.estimate(frame, "score_a", PROBS, labeler, budget=8, metric="err@10", rng=0)
    assert sorted(asked) == sorted(set(res.trace["query_id"].tolist()))
    assert len(asked) == len(set(asked)) == res.n_queries
    got = ard.frame.fetch_queries(ard.DaskPool(frame), [df["query_id"].iloc[0], df["query_id"].iloc[-1]],
                                 ["doc_id"])
    assert list(got.columns) == ["query_id", "doc_id"]
    assert set(got["query_id"]) == {df["query_id"].iloc[0], df["query_id"].iloc[-1]}
    assert len(got) == int((df["query_id"] == df["query_id"].iloc[0]).sum() + (df["query_id"] == df["query_id"].iloc[-1]).sum())


def test_interrupted_run_resumes_with_its_judgments(data):
    df, labels, frame = data
    full = ard.compare(frame, "score_a", "score_b", PROBS, labeler_of(labels), budget=20, metric="err@10", rng=4)
    calls = []

    def flaky(qid, docs):
        calls.append(qid)
        if len(calls) == 4:
            raise RuntimeError("annotator went home")
        return [labels[d] for d in docs]

    with pytest.raises(ar.LabelingError, match="annotator went home") as err:
        ard.compare(frame, "score_a", "score_b", PROBS, flaky, budget=20, metric="err@10", rng=4)
    judged = err.value.judgments
    assert len(judged) == 3
    again = []

    def counting(qid, docs):
        again.append(qid)
        return [labels[d] for d in docs]

    res = ard.compare(frame, "score_a", "score_b", PROBS, counting, budget=20, metric="err@10", rng=4,
                      judgments=judged)
    assert res.difference == full.difference and res.standard_error == full.standard_error
    assert not set(again) & set(judged)
    with pytest.raises(ValueError, match="names query 'nope', which is not in the pool"):
        ard.compare(frame, "score_a", "score_b", PROBS, counting, budget=20, metric="err@10", rng=4,
                    judgments={"nope": {}})


def test_labels_from_a_column(data):
    df, labels, frame = data
    res = ard.compare(frame, "score_a", "score_b", PROBS, ard.ColumnLabels("label"), budget=15, rng=1)
    ref = ard.compare(frame, "score_a", "score_b", PROBS, labeler_of(labels), budget=15, rng=1)
    assert res.difference == ref.difference and res.standard_error == ref.standard_error
    with pytest.raises(ValueError, match="`ColumnLabels.column`: the pool's frame has no column 'grade'"):
        ard.estimate(frame, "score_a", PROBS, ard.ColumnLabels("grade"), budget=5)
    bad = df.assign(label=df["label"].astype(float))
    bad.loc[:, "label"] = np.nan
    with pytest.raises(ValueError, match=r"labels column 'label' must hold integer grades; query \d+, document "
                                         r"'d\d+' has nan"):
        ard.estimate(dask_frame(bad, boundaries(df, 2)), "score_a", PROBS, ard.ColumnLabels("label"), budget=5)


# --------------------------------------------------------------------------- errors at the boundary


def test_missing_columns_are_named(data):
    _, labels, frame = data
    lab = labeler_of(labels)
    with pytest.raises(ValueError, match=r"`scores_b`: the pool's frame has no column 'score_c'"):
        ard.compare(frame, "score_a", "score_c", PROBS, lab, budget=5)
    with pytest.raises(ValueError, match=r"`probs`: the pool's frame has no column 'p9'"):
        ard.estimate(frame, "score_a", ["p0", "p9"], lab, budget=5)
    with pytest.raises(ValueError, match=r"`DaskPool`: the pool's frame has no column 'docno'"):
        ard.estimate(ard.DaskPool(frame, document="docno"), "score_a", PROBS, lab, budget=5)
    with pytest.raises(ValueError, match=r"`DaskPool.query`: the frame has no column \(or index\) 'qid'"):
        ard.estimate(ard.DaskPool(frame, query="qid"), "score_a", PROBS, lab, budget=5)
    with pytest.raises(ValueError, match="`DaskPool.features`: the pool's frame has no column 'f7'"):
        ard.estimate(ard.DaskPool(frame, features=["f0", "f7"]), "score_a", LinearSoftmax(), lab, budget=5)


def test_bad_arguments(data):
    df, labels, frame = data
    lab = labeler_of(labels)
    with pytest.raises(TypeError, match="pandas DataFrame: wrap it with dask.dataframe.from_pandas"):
        ard.estimate(df, "score_a", PROBS, lab, budget=5)
    with pytest.raises(TypeError, match="must be an activerank.distributed.DaskPool or a dask.dataframe"):
        ard.estimate([1, 2], "score_a", PROBS, lab, budget=5)
    with pytest.raises(TypeError, match="`scores` must be the name of a score column"):
        ard.estimate(frame, np.zeros(3), PROBS, lab, budget=5)
    with pytest.raises(ValueError, match="`probs` must name at least 2 grade columns"):
        ard.estimate(frame, "score_a", ["p0"], lab, budget=5)
    with pytest.raises(TypeError, match="`probs` must be the list of probability columns"):
        ard.estimate(frame, "score_a", np.ones((3, 2)), lab, budget=5)
    with pytest.raises(ValueError, match=r"the pool must name its feature columns"):
        ard.estimate(frame, "score_a", LinearSoftmax(), lab, budget=5)
    with pytest.raises(ValueError, match="has no exact moments"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=5, metric="ndcg(gain=exp)@10")
    with pytest.raises(ValueError, match=r"`costs` must be one of .* from the pool's `cost` column"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=5, costs=np.ones(3))
    with pytest.raises(ValueError, match="`costs`='log_length' needs the pool's `length` column"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=5, costs="log_length")
    with pytest.raises(ValueError, match="`costs`='column' needs the pool's `cost` column"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=5, costs="column")
    with pytest.raises(ValueError, match="`method` must be one of"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=5, method="nope")
    # document-level methods without a budgeted order draw are not distributed: named as not allowed
    with pytest.raises(ValueError, match=r"`method` must be one of \[.*'active'.*'doc_dyn'.*\], got 'doc_hh'"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=5, method="doc_hh")
    with pytest.raises(ValueError, match="`budget`"):
        ard.estimate(frame, "score_a", PROBS, lab, budget=-1)


def test_a_query_split_across_partitions_is_refused(data):
    df, labels, _ = data
    cuts = boundaries(df, 3)
    cuts[1] += 1  # one row of the next query's start moves into the previous partition
    with pytest.raises(ValueError, match=r"query \d+ is split across partitions \[0, 1\]: a pool must be "
                                         "partitioned by whole queries"):
        ard.estimate(dask_frame(df, cuts), "score_a", PROBS, labeler_of(labels), budget=5)


def test_rows_of_a_query_must_be_adjacent(data):
    df, labels, _ = data
    shuffled = df.iloc[np.r_[0, 5:len(df), 1:5]]  # the first query's rows end up apart
    with pytest.raises(ValueError, match=r"partition 0: the rows of query 5 are not adjacent"):
        ard.estimate(dask_frame(shuffled, [0, len(df)]), "score_a", PROBS, labeler_of(labels), budget=5)


def test_bad_rows_are_named_by_partition(data):
    df, labels, _ = data
    cuts = boundaries(df, 3)
    bad = df.copy()
    bad.loc[cuts[2] + 3, "p0"] = -0.5
    with pytest.raises(ValueError, match=r"partition 2 \(rows and queries counted within it\): `probs columns "
                                         r"\['p0', 'p1', 'p2'\]` must be non-negative; row 3"):
        ard.estimate(dask_frame(bad, cuts), "score_a", PROBS, labeler_of(labels), budget=5)
    bad = df.copy()
    bad.loc[cuts[1] + 1, "score_a"] = np.nan
    with pytest.raises(ValueError, match=r"partition 1 .*`scores column 'score_a'` must not contain NaN"):
        ard.estimate(dask_frame(bad, cuts), "score_a", PROBS, labeler_of(labels), budget=5)
    bad = df.copy()
    bad.loc[4, "cost"] = 0.0
    with pytest.raises(ValueError, match=r"partition 0 .*`costs` must be finite and > 0; document row 4"):
        ard.estimate(ard.DaskPool(dask_frame(bad, cuts), cost="cost"), "score_a", PROBS, labeler_of(labels),
                     budget=5)


def test_importing_the_subpackage_loads_no_dask():
    import subprocess
    import sys

    code = "import sys, activerank, activerank.distributed; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_document_level_methods_are_refused_by_name(data):
    df, labels, frame = data
    for method in set(ar.design.methods.method_names(unit="document")) - {"doc_dyn", "doc_stat"}:
        with pytest.raises(ValueError, match=r"`method` must be one of \[.*'active'.*\], got '" + method):
            ard.compare(ard.DaskPool(frame), "score_a", "score_b", PROBS, labeler_of(labels), budget=15,
                        metric="dcg@5", method=method, rng=0)



def test_the_default_samples_without_replacement_and_fetches_only_its_queries(data):
    df, labels, frame = data
    pool = ard.DaskPool(frame, cost="cost", length="length")
    mem, (sa,), probs, doc_costs = ard.in_memory(pool, scores=["score_a"], probs=PROBS)
    asked = []

    def labeler(qid, docs):
        asked.append(qid)
        return labeler_of(labels)(qid, docs)

    res_d = ard.estimate(pool, "score_a", PROBS, labeler, budget=12, rng=3)
    # err@10: auto on a Dask pool skips prefix (which the in-memory default may run)
    res_m = ar.estimate(mem, sa, probs, labeler_of(labels), budget=12, costs=doc_costs, rng=3, method="active_wor")
    assert res_d.method == res_m.method == "active_wor"
    _same(res_d, res_m, ["estimate", "standard_error", "cost_spent", "n_draws", "n_queries"])
    assert len(asked) == len(set(asked)) == res_d.n_queries  # every sampled query once
    assert res_d.cost_spent <= 12 + 1e-9


@pytest.mark.parametrize("on_client", [False, True])
def test_progress_bar_on_stderr_changes_nothing(data, client, on_client, monkeypatch, capsys):
    """progress=True: a bar on stderr (tasks of a local scheduler, or partitions of a Client), same result."""
    import dask

    import activerank._progress as progress

    df, labels, frame = data
    args = (frame, "score_a", PROBS, labeler_of(labels))
    with dask.config.set(scheduler=client if on_client else "threads"):
        ref = ard.estimate(*args, budget=15, metric="dcg@5", rng=2, progress=False)
        assert capsys.readouterr().err == ""
        monkeypatch.setattr(progress, "DELAY", 0.0)
        res = ard.estimate(*args, budget=15, metric="dcg@5", rng=2, progress=True)
    err = capsys.readouterr().err
    assert "per-query table" in err and "fetching the drawn queries" in err
    assert ("partition" if on_client else "task") in err
    assert res.estimate == ref.estimate and res.standard_error == ref.standard_error
    with pytest.raises(TypeError, match="`progress` must be None, True or False"):
        ard.estimate(*args, budget=15, progress="yes")
