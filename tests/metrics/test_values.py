import zlib

import numpy as np
import pytest

import activerank as ar
from activerank.metrics import custom_metric
from activerank.metrics.values import _entry_index
from activerank.ragged import Rankings

from .._reference import (
    naive_ap,
    naive_dcg_gain,
    naive_err,
    naive_ndcg,
    naive_precision,
    naive_rbp,
    naive_recall,
    naive_rr,
    naive_success,
)


def _pool(rng, n_queries=40, max_len=9, n_grades=3):
    lengths = rng.integers(0, max_len + 1, n_queries)
    offsets = np.r_[0, np.cumsum(lengths)]
    labels = rng.integers(0, n_grades, offsets[-1])
    rankings = [rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(n_queries)]
    return labels, offsets, rankings


def _naive(text, labels, ranking, judged, ymax):
    m = ar.parse_metric(text)
    o, k = m.params, m.k
    name = m.name
    if name == "dcg":
        return naive_dcg_gain(labels, ranking, k, o["gain"])
    if name == "err":
        return naive_err(labels, ranking, o["ymax"] or ymax, k)
    if name == "p":
        return naive_precision(labels, ranking, k, o["rel"])
    if name == "rbp":
        return naive_rbp(labels, ranking, o["p"], o["rel"], k)
    if name == "rr":
        return naive_rr(labels, ranking, o["rel"], k)
    if name == "ndcg":
        return naive_ndcg(labels, ranking, judged, k, o["gain"])
    if name == "r":
        return naive_recall(labels, ranking, judged, o["rel"], k)
    if name == "success":
        return naive_success(labels, ranking, o["rel"], k)
    return naive_ap(labels, ranking, judged, o["rel"], k)


METRIC_TEXTS = ["dcg", "dcg@3", "dcg(gain=linear)@4", "dcg(gain={1:5,2:2})@3", "err@4", "err(ymax=4)", "p@1",
                "p@5", "p(rel=2)@3", "rbp", "rbp(p=0.5)@3", "rbp(p=0.95,rel=2)", "rbp(rel=graded)@4", "rr", "rr@2",
                "rr(rel=2)", "success@1", "success(rel=2)@3", "ndcg(gain=exp)", "ndcg(gain=exp)@3",
                "ndcg(gain=linear)@5", "ndcg(gain={1:3,2:1})@3", "ap", "ap@3", "ap(rel=2)", "r@3", "r(rel=2)@1"]


@pytest.mark.parametrize("text", METRIC_TEXTS)
def test_pool_values_match_naive(text):
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    labels, offsets, rankings = _pool(rng)
    got = ar.pool_metric_values(labels, rankings, metric=text, ymax=2)
    want = [_naive(text, labels, r, r, 2) for r in rankings]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("text", ["ndcg(gain=exp)@3", "ndcg(gain=linear)", "ap", "ap(rel=2)@4", "r@2"])
def test_ratio_values_with_explicit_judged_set(text):
    # the judged set is the whole query; rankings only show a part of it and may hold unjudged rows
    rng = np.random.default_rng(7)
    labels, offsets, _ = _pool(rng, n_queries=30)
    rankings, judged = [], []
    for q in range(30):
        docs = np.arange(offsets[q], offsets[q + 1])
        judged.append(rng.permutation(docs)[: max(0, docs.size - 1)])   # one document left unjudged
        rankings.append(rng.permutation(docs)[: rng.integers(0, docs.size + 1)])
    got = ar.pool_metric_values(labels, rankings, metric=text, ymax=2, judged=judged)
    want = [_naive(text, labels, r, j, 2) for r, j in zip(rankings, judged)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert np.all(got <= 1.0 + 1e-12)


def test_ndcg_default_judged_set_is_the_full_ranked_list_not_the_top_k():
    labels = np.array([0, 0, 2, 1])
    full = [[0, 1, 2, 3]]
    # ideal DCG@2 takes the grade-2 and grade-1 documents ranked 3rd and 4th
    got = ar.pool_metric_values(labels, full, metric="ndcg(gain=exp)@2", ymax=2)
    assert got[0] == 0.0
    top2 = ar.pool_metric_values(labels, [[2, 3, 0, 1]], metric="ndcg(gain=exp)@2", ymax=2)
    assert top2[0] == pytest.approx(1.0)
    # with judging depth 2 only the top 2 are judged: the ideal is 0, so is nDCG
    assert ar.pool_metric_values(labels, full, metric="ndcg(gain=exp,depth=2)@2", ymax=2)[0] == 0.0


@pytest.mark.parametrize("text", ["ndcg(gain=linear)@3", "ndcg(gain=exp)", "ap", "ap@2", "r@3"])
def test_normalizer_counts_documents_a_ranking_dropped(text):
    # an index update: the ranking lost documents; the ideal (or the relevant count) still holds them,
    # exactly as the estimators' judged set (every document of the query) does
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    labels, offsets, rankings = _pool(rng, n_queries=30)
    removed = ar.relevance.remove_fraction(rankings, 0.3, rng=1)
    got = ar.pool_metric_values(labels, removed, metric=text, ymax=2, offsets=offsets)
    whole = [np.arange(offsets[q], offsets[q + 1]) for q in range(30)]
    want = [_naive(text, labels, r, j, 2) for r, j in zip(removed.to_list(), whole)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(got, ar.pool_metric_values(labels, removed, metric=text, ymax=2, judged=whole))
    pool = ar.Pool(np.arange(30), offsets)
    np.testing.assert_array_equal(got, ar.pool_metric_values(labels, removed, metric=text, ymax=2, offsets=pool))
    # without the pool, rankings that leave documents out cannot say what the normalizer is
    with pytest.raises(ValueError, match=r"`rankings` do not list every document of each query \(seen at query \d+\), "
                                         r"so the normalizer of .* pass the pool as `offsets`"):
        ar.pool_metric_values(labels, removed, metric=text, ymax=2)
    # complete rankings say it themselves: same values with or without offsets
    np.testing.assert_array_equal(ar.pool_metric_values(labels, rankings, metric=text, ymax=2),
                                  ar.pool_metric_values(labels, rankings, metric=text, ymax=2, offsets=offsets))


def test_rankings_cut_at_k_need_the_pool_for_ratio_metrics():
    labels = np.array([0, 1, 2, 0, 1])
    cut = [[0, 1], [3]]
    with pytest.raises(ValueError, match=r"seen at query 1"):
        ar.pool_metric_values(labels, cut, metric="ap", ymax=2)
    # the last query ends before the last label row: also incomplete
    with pytest.raises(ValueError, match=r"seen at query 1"):
        ar.pool_metric_values(labels, [[0, 1, 2], [3]], metric="ap", ymax=2)
    assert ar.pool_metric_values(labels, cut, metric="ap", ymax=2, offsets=[0, 3, 5]).tolist() == [0.25, 0.0]
    with pytest.raises(ValueError, match=r"`offsets` describes 4 documents but there are 5 document rows"):
        ar.pool_metric_values(labels, cut, metric="ap", ymax=2, offsets=[0, 3, 4])
    with pytest.raises(ValueError, match=r"`offsets` describes 1 queries but the rankings cover 2"):
        ar.pool_metric_values(labels, cut, metric="ap", ymax=2, offsets=[0, 5])


def test_metric_value_normalizes_over_every_item():
    # item 1 (grade 2) is not ranked: it still counts in the ideal and among the relevant items
    assert ar.metric_value([1, 2, 0], [0, 2], metric="ap", ymax=2) == 0.5
    assert ar.metric_value([1, 2, 0], [0, 2], metric="r@2", ymax=2) == 0.5
    assert ar.metric_value([1, 2, 0], [0, 2], metric="ndcg(gain=linear)", ymax=2) == pytest.approx(
        1 / (2 + 1 / np.log2(3)))


def test_err_ymax_option_reproduces_gdeval_scale():
    # R(2) = 3/16 with ymax = 4 (gdeval), 3/4 with the label scale's ymax = 2
    assert ar.metric_value([2, 0], [0, 1], metric="err(ymax=4)", ymax=2) == 3 / 16
    assert ar.metric_value([2, 0], [0, 1], metric="err", ymax=2) == 3 / 4
    assert ar.metric_value([2, 0], [0, 1], metric="err(ymax=2)", ymax=2) == 3 / 4


def test_precision_counts_missing_ranks_as_non_relevant():
    assert ar.metric_value([1, 1], [0, 1], metric="p@4", ymax=1) == 0.5


def test_hand_values():
    labels = [2, 0, 1, 0]
    r = [1, 0, 2, 3]
    assert ar.metric_value(labels, r, metric="rr", ymax=2) == 0.5
    assert ar.metric_value(labels, r, metric="rr(rel=2)", ymax=2) == 0.5
    assert ar.metric_value(labels, [2, 0], metric="rr(rel=2)", ymax=2) == 0.5
    assert ar.metric_value(labels, r, metric="ap", ymax=2) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert ar.metric_value(labels, r, metric="rbp(p=0.5)", ymax=2) == pytest.approx(0.5 * (0.5 + 0.25))
    assert ar.metric_value(labels, r, metric="dcg(gain=linear)", ymax=2) == pytest.approx(2 / np.log2(3) + 1 / 2)
    assert ar.metric_value(labels, [3, 1], metric="ap", ymax=2, judged=[0, 1, 2, 3]) == 0.0


def test_queries_without_relevant_documents_score_zero():
    labels = np.zeros(6, dtype=int)
    r = [[0, 1, 2], [], [3, 4, 5]]
    # trec_eval's convention: a normalizer without a relevant document gives 0, not an error
    for text in ("ndcg(gain=linear)@2", "ndcg(gain=exp)", "ap", "r@2", "rr", "p@2", "rbp", "dcg", "err",
                 "success@2"):
        np.testing.assert_array_equal(ar.pool_metric_values(labels, r, metric=text, ymax=2), 0.0)


def test_success_values_with_custom_metric():
    success = custom_metric("success_v", lambda y, valid: (y >= 2).any(axis=-1).astype(float))
    labels = np.array([0, 2, 1, 0, 2])
    r = [[0, 1, 2], [3, 2], [], [4]]
    assert ar.pool_metric_values(labels, r, metric=success, ymax=2).tolist() == [1.0, 0.0, 0.0, 1.0]
    m = ar.parse_metric(success, k=1)
    assert ar.pool_metric_values(labels, r, metric=m, ymax=2).tolist() == [0.0, 0.0, 0.0, 1.0]


def test_custom_metric_sees_valid_mask_and_ranked_order():
    def first_label_plus_length(y, valid):
        return y[..., 0] * 10.0 + valid.sum(axis=-1)

    d = custom_metric("first_len", first_label_plus_length)
    labels = np.array([0, 2, 1, 0, 2])
    got = ar.pool_metric_values(labels, [[1, 0, 2], [3, 4], [4]], metric=d, ymax=2)
    assert got.tolist() == [23.0, 2.0, 21.0]


def test_per_list_custom_metric_equals_vectorized():
    def mean_top(y):
        return float(np.mean(y)) if y.size else 0.0

    slow = custom_metric("mean_top", mean_top, vectorized=False)
    fast = custom_metric("mean_top", lambda y, v: np.where(v.any(-1), (y * v).sum(-1) / np.maximum(v.sum(-1), 1), 0.0))
    rng = np.random.default_rng(3)
    labels, offsets, rankings = _pool(rng)
    for k in (None, 3):
        a = ar.pool_metric_values(labels, rankings, metric=slow, k=k, ymax=2)
        b = ar.pool_metric_values(labels, rankings, metric=fast, k=k, ymax=2)
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_custom_metric_bad_output():
    wrong_shape = custom_metric("wrong_shape", lambda y, v: y.sum())
    with pytest.raises(ValueError, match=r"custom metric 'wrong_shape' returned shape \(\) .* expected \(2, 1\)"):
        ar.pool_metric_values([0, 1], [[0], [1]], metric=wrong_shape, ymax=1)
    nan = custom_metric("nan_metric", lambda y, v: np.full(y.shape[:-1], np.nan))
    with pytest.raises(ValueError, match=r"custom metric 'nan_metric' returned a NaN"):
        ar.pool_metric_values([0, 1], [[0], [1]], metric=nan, ymax=1)


def test_label_matrix_columns_are_independent_label_vectors():
    from activerank.metrics.values import label_matrix_values
    rng = np.random.default_rng(11)
    labels, offsets, rankings = _pool(rng, n_queries=25)
    r = Rankings.from_list(rankings)
    Y = np.stack([rng.integers(0, 3, labels.size) for _ in range(4)], axis=1)
    for text in ("dcg@3", "err", "rr", "p@2", "ndcg(gain=exp)@3", "ap", "r@3", "success@2"):
        m = ar.parse_metric(text)
        top = r.truncate(m.k)
        got = label_matrix_values(m, 3, top, Y[top.items], r, Y[r.items])
        for s in range(4):
            want = ar.pool_metric_values(Y[:, s], r, metric=m, ymax=2)
            np.testing.assert_allclose(got[:, s], want, rtol=1e-13, atol=1e-15)


def test_entry_index():
    judged = Rankings.from_list([[3, 1], [5]])
    r = Rankings.from_list([[1, 2], [5, 3]])
    assert _entry_index(judged, r, 6).tolist() == [1, -1, 2, -1]
    assert _entry_index(Rankings.from_list([[], []]), r, 6).tolist() == [-1, -1, -1, -1]


def test_values_bad_input():
    with pytest.raises(ValueError, match=r"`judged` is only used by ratio metrics"):
        ar.pool_metric_values([0, 1], [[0, 1]], metric="dcg", ymax=1, judged=[[0, 1]])
    with pytest.raises(ValueError, match=r"`judged` must cover the same queries as `rankings`; got 2 and 1"):
        ar.pool_metric_values([0, 1], [[0, 1]], metric="ndcg(gain=linear)", ymax=1, judged=[[0], [1]])
    with pytest.raises(ValueError, match=r"`judged` indices must lie in \[0, 2\)"):
        ar.pool_metric_values([0, 1], [[0, 1]], metric="ap", ymax=1, judged=[[0, 2]])
