"""compare_many and rank_systems on a Dask pool: the in-memory results (judge="all") at the same seed."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask.dataframe")

import activerank as ar  # noqa: E402
import activerank.distributed as ard  # noqa: E402

from ._pools import boundaries, dask_frame, labeler_of, synthetic_frame  # noqa: E402

PROBS = ["p0", "p1", "p2"]
SYSTEMS = ["score_a", "score_b", "score_c"]


@pytest.fixture(scope="module")
def data():
    df, labels = synthetic_frame(seed=5, n_queries=90)
    df["score_c"] = 0.5 * df["score_a"] + np.random.default_rng(0).random(len(df))
    pool = ard.DaskPool(dask_frame(df, boundaries(df, 4)), cost="cost")
    mem, scores, probs, doc_costs = ard.in_memory(pool, scores=SYSTEMS, probs=PROBS)
    return labels, pool, mem, scores, probs, doc_costs


def _same(res_d, res_m, fields):
    assert res_d.method == res_m.method
    for f in fields:
        np.testing.assert_allclose(getattr(res_d, f), getattr(res_m, f), rtol=1e-12, atol=1e-12, err_msg=f)
    pd.testing.assert_frame_equal(res_d.trace, res_m.trace, check_exact=False, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("metric, method", [("err@5", "active_wor"), ("dcg@5", "active"), ("dcg@10", "doc_dyn"),
                                            ("dcg@5", "auto"), ("err@5", "auto")])
def test_compare_many_equals_in_memory(data, metric, method):
    labels, pool, mem, (sa, sb, sc), probs, doc_costs = data
    res_d = ard.compare_many(pool, ["score_a", "score_c"], "score_b", PROBS, labeler_of(labels), budget=12,
                             metric=metric, method=method, rng=2)
    # a cascade metric: auto on a Dask pool skips prefix, which in memory it may run
    mem_method = res_d.method  # the design the Dask pool ran (auto there skips prefix; judge='all' below)
    res_m = ar.compare_many(mem, [sa, sc], sb, probs, labeler_of(labels), budget=12, metric=metric,
                            method=mem_method, costs=doc_costs, rng=2, judge="all", names=["score_a", "score_c"])
    res_d.trace.attrs.pop("auto", None)
    res_m.trace.attrs.pop("auto", None)
    assert res_d.names == ("score_a", "score_c")
    _same(res_d, res_m, ["differences", "standard_errors", "covariance", "cost_spent", "n_draws"])


@pytest.mark.parametrize("metric, method", [("err@5", "active_wor"), ("dcg@10", "doc_dyn"), ("dcg@5", "auto")])
def test_rank_systems_equals_in_memory(data, metric, method):
    labels, pool, mem, scores, probs, doc_costs = data
    res_d = ard.rank_systems(pool, SYSTEMS, PROBS, labeler_of(labels), budget=12, metric=metric, method=method,
                             rng=7, names=["a", "b", "c"])
    res_m = ar.rank_systems(mem, scores, probs, labeler_of(labels), budget=12, metric=metric, method=res_d.method,
                            costs=doc_costs, rng=7, judge="all", names=["a", "b", "c"])
    res_d.trace.attrs.pop("auto", None)
    res_m.trace.attrs.pop("auto", None)
    assert res_d.ranking == res_m.ranking
    _same(res_d, res_m, ["relative", "win_probabilities", "cost_spent", "n_draws"])


def test_bad_arguments_are_named(data):
    labels, pool, *_ = data
    lab = labeler_of(labels)
    with pytest.raises(TypeError, match="`candidate_scores` must be a list of score column names"):
        ard.compare_many(pool, "score_a", "score_b", PROBS, lab, budget=5)
    with pytest.raises(ValueError, match="`scores_list` must name at least 2 score columns; got 1"):
        ard.rank_systems(pool, ["score_a"], PROBS, lab, budget=5)
    with pytest.raises(ValueError, match=r"`scores\[1\]`: the pool's frame has no column 'nope'"):
        ard.rank_systems(pool, ["score_a", "nope"], PROBS, lab, budget=5)
    with pytest.raises(ValueError, match="`baseline_name` 'score_a' must differ"):
        ard.compare_many(pool, ["score_a"], "score_b", PROBS, lab, budget=5, baseline_name="score_a")
    with pytest.raises(TypeError, match="`baseline_scores` must be the name of a score column"):
        ard.compare_many(pool, ["score_a"], ["score_b"], PROBS, lab, budget=5)
