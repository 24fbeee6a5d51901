"""The driver's design from the per-query table, and the pool of the drawn queries only."""

import numpy as np
import pytest

pytest.importorskip("dask.dataframe")

import activerank.distributed as ard  # noqa: E402
from activerank.design.methods import get_method  # noqa: E402
from activerank.distributed.design import drawn_design, table_design  # noqa: E402
from activerank.metrics import parse_metric  # noqa: E402

from ._pools import boundaries, dask_frame, synthetic_frame  # noqa: E402


@pytest.fixture(scope="module")
def parts():
    df, _ = synthetic_frame(seed=5, n_queries=30)
    table = ard.query_table_of(dask_frame(df, boundaries(df, 3)), "score_a", ["p0", "p1", "p2"], metric="dcg@5")
    td = table_design(table, query="query_id", kind="mean", method=get_method("active"), cost_model="constant",
                      query_weights=None, defensive=0.1, n_systems=1)
    return df, td


def test_the_drawn_pool_holds_the_drawn_queries_only(parts):
    df, td = parts
    drawn = np.array([2, 7, 20])
    docs = df[df["query_id"].isin(td.query_ids[drawn])]
    design, pool = drawn_design(td, drawn, docs, query="query_id", query_in_index=False, document="doc_id",
                                scores=["score_a"], kind="mean", metric=parse_metric("dcg@5"), names=None,
                                cost_model="constant", cost=None, length=None)
    assert pool.n_queries == td.n_queries and pool.n_docs == len(docs)
    assert np.flatnonzero(np.diff(pool.offsets)).tolist() == drawn.tolist()
    assert design.q is td.q and design.documents(7).size == min(5, int(td.n_docs[7]))
    assert design.documents(3).size == 0


def test_a_pool_that_changed_between_the_passes_is_refused(parts):
    df, td = parts
    drawn = np.array([2, 7])
    docs = df[df["query_id"].isin(td.query_ids[drawn])].iloc[1:]  # one document fewer than in the table
    with pytest.raises(ValueError, match="the pool changed between reading the per-query table and fetching"):
        drawn_design(td, drawn, docs, query="query_id", query_in_index=False, document="doc_id", scores=["score_a"],
                     kind="mean", metric=parse_metric("dcg@5"), names=None, cost_model="constant", cost=None,
                     length=None)


def test_an_unknown_target_is_refused(parts):
    df, td = parts
    table = ard.query_table_of(dask_frame(df, [0, len(df)]), "score_a", ["p0", "p1", "p2"])
    with pytest.raises(ValueError, match="`kind` must be 'mean', 'difference', 'baseline' or 'ranking'; got 'pairs'"):
        table_design(table, query="query_id", kind="pairs", method=get_method("active"), cost_model="constant",
                     query_weights=None, defensive=0.1, n_systems=1)
