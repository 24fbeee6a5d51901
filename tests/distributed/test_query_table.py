"""The per-query table: the in-memory design's numbers, query by query, from partitions."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402
from activerank.distributed.query_table import partition_table  # noqa: E402

from ._pools import boundaries, dask_frame, synthetic_frame  # noqa: E402

PROBS = ["p0", "p1", "p2"]


@pytest.mark.parametrize("scores, metric", [(["score_a"], "err@10"), (["score_a", "score_b"], "dcg@5")])
def test_table_equals_the_in_memory_design(scores, metric):
    df, _ = synthetic_frame(seed=6, n_queries=60)
    frame = dask_frame(df, boundaries(df, 4))
    pool = ard.DaskPool(frame, length="length")
    table = ard.query_table_of(pool, scores, PROBS, metric=metric, costs="log_length")
    mem, ranked, probs, _ = ard.in_memory(pool, scores=scores, probs=PROBS)
    rankings = [ar.relevance.rank_by_scores(s, mem) for s in ranked]  # ties by document id, as the table
    d = ar.make_design(mem, rankings, probs, metric=metric, costs="log_length", judge="all")
    assert table["query_id"].tolist() == mem.query_ids.tolist()
    assert table["partition"].tolist() == sorted(table["partition"].tolist())
    assert set(table["partition"]) == {0, 1, 2, 3}
    np.testing.assert_array_equal(table["n_docs"], np.diff(mem.offsets))
    np.testing.assert_allclose(table["raw_cost"], d.costs.raw, rtol=1e-15)
    np.testing.assert_allclose(table["mean_0"], d.prediction.mean[:, 0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(table["variance"], d.prediction.variance, rtol=1e-13, atol=1e-15)
    system = table[[f"system_{i}" for i in range(len(scores))]].to_numpy()
    np.testing.assert_allclose(system, d.prediction.system_mean, rtol=1e-13, atol=1e-15)


def test_partition_table_runs_on_plain_pandas():
    """The kernel is a pandas function (what Spark's applyInPandas would call); an empty partition gives no rows."""
    df, _ = synthetic_frame(seed=1, n_queries=5)
    pool = ard.DaskPool(dask_frame(df, [0, len(df)]))
    from activerank.distributed.api import _spec

    _, spec, _ = _spec(pool, "mean", ("score_a",), PROBS, metric="err@10", k=None, method="active", costs="auto")
    rows = partition_table(df, spec, partition_info={"number": 7})
    assert len(rows) == 5 and set(rows["partition"]) == {7} and (rows["n_grades"] == 3).all()
    empty = partition_table(df.iloc[:0], spec)
    assert len(empty) == 0 and list(empty.columns) == list(rows.columns)


def test_an_empty_pool_is_refused():
    df, _ = synthetic_frame(seed=1, n_queries=5)
    with pytest.raises(ValueError, match="`pool` holds no rows"):
        ard.query_table_of(dask_frame(df.iloc[:0], [0, 0]), "score_a", PROBS)
