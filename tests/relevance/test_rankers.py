"""Tests for activerank.relevance.rankers."""

import numpy as np
import pytest

from activerank.io.letor import load_sample
from activerank.relevance.models import make_relevance_model
from activerank.ragged import Rankings
from activerank.relevance.rankers import (
    ScoreRanker,
    expected_gain_scores,
    expected_grade_scores,
    fit_lambdarank_ranker,
    fit_linear_ranker,
    model_ranker,
    rank_by_scores,
    remove_fraction,
)


def reference_rank(scores, offsets):
    out = []
    for q in range(len(offsets) - 1):
        rows = range(offsets[q], offsets[q + 1])
        out.append(sorted(rows, key=lambda r: (-scores[r], -r)))  # trec_eval: ties by id (the row) descending
    return out


def test_rank_by_scores_matches_reference():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 12, size=40)
    offsets = np.r_[0, np.cumsum(lengths)]
    scores = rng.integers(0, 4, size=offsets[-1]).astype(float)  # many ties
    scores[::7] = -np.inf
    r = rank_by_scores(scores, offsets)
    assert isinstance(r, Rankings)
    np.testing.assert_array_equal(r.offsets, offsets)
    assert [x.tolist() for x in r.to_list()] == reference_rank(scores, offsets)


def test_rank_by_scores_letordata_and_nan():
    d = load_sample()
    r = rank_by_scores(d.X[:, 0], d)
    np.testing.assert_array_equal(r.offsets, d.offsets)
    s = d.X[:, 0].copy()
    s[d.offsets[4] + 1] = np.nan
    with pytest.raises(ValueError, match=rf"`scores` contain NaN: query 4 \(qid {d.query_ids[4]}\), row {d.offsets[4] + 1}"):
        rank_by_scores(s, d)
    with pytest.raises(ValueError, match=r"`scores` contain NaN: query 1, row 2"):
        rank_by_scores([0.0, 1.0, np.nan], [0, 2, 3])


def test_rank_by_scores_validation():
    with pytest.raises(ValueError, match=r"`offsets` must end at the number of rows \(3\); got 2"):
        rank_by_scores([1.0, 2.0, 3.0], [0, 2])
    with pytest.raises(ValueError, match="`offsets` must start at 0"):
        rank_by_scores([1.0], [1, 1])
    with pytest.raises(ValueError, match="`offsets` must be non-decreasing; query 1"):
        rank_by_scores([1.0], [0, 2, 1])
    with pytest.raises(TypeError, match="`offsets` must hold integers"):
        rank_by_scores([1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match=r"`scores` must be 1-d"):
        rank_by_scores([[1.0]], [0, 1])


def test_score_transforms():
    p = np.array([[1.0, 0, 0], [0, 0, 1.0], [0.5, 0.25, 0.25]])
    np.testing.assert_allclose(expected_gain_scores(p), [0, 3, 1])
    np.testing.assert_allclose(expected_grade_scores(p), [0, 2, 0.75])
    with pytest.raises(ValueError, match=r"`probs` must have shape \(n_docs, n_grades >= 2\)"):
        expected_gain_scores([1.0, 2.0])


def test_remove_fraction():
    rng_lengths = np.random.default_rng(1).integers(0, 30, size=200)
    r = rank_by_scores(np.zeros(rng_lengths.sum()), np.r_[0, np.cumsum(rng_lengths)])
    out = remove_fraction(r, 0.3, rng=5)
    expected = rng_lengths - np.minimum(np.floor(0.3 * rng_lengths + 0.5), np.maximum(rng_lengths - 1, 0))
    np.testing.assert_array_equal(out.lengths, expected)
    assert np.all(out.lengths[rng_lengths > 0] >= 1)
    for q in range(r.n_queries):  # survivors are a subsequence of the original list
        orig = r[q].tolist()
        pos = [orig.index(x) for x in out[q].tolist()]
        assert pos == sorted(pos)
    # seeded: same seed same result, different seed different result
    np.testing.assert_array_equal(remove_fraction(r, 0.3, rng=5).items, out.items)
    assert not np.array_equal(remove_fraction(r, 0.3, rng=6).items, out.items)
    # extremes
    assert remove_fraction(r, 0.0, rng=0).items.tolist() == r.items.tolist()
    np.testing.assert_array_equal(remove_fraction(r, 1.0, rng=0).lengths, np.minimum(rng_lengths, 1))
    # every item is removed with about the same probability
    single = Rankings.from_list([np.arange(10)] * 2000)
    kept = np.bincount(remove_fraction(single, 0.5, rng=np.random.default_rng(0)).items, minlength=10)
    assert np.all(np.abs(kept / 2000 - 0.5) < 0.05)
    assert remove_fraction([[3, 1, 2]], 0.34, rng=0).lengths.tolist() == [2]
    with pytest.raises(ValueError, match=r"`fraction` must be a number in \[0, 1\]; got 1.5"):
        remove_fraction(r, 1.5)


def test_rankers_on_sample():
    tr, te = load_sample("train"), load_sample("test")
    for rk in (
        fit_lambdarank_ranker(tr, n_estimators=20),
        fit_linear_ranker(tr, method="ranksvm"),
        fit_linear_ranker(tr, method="logistic"),
        model_ranker(make_relevance_model("ordered_logit", 3).fit(tr.X, tr.labels)),
    ):
        r = rk.rank(te)
        assert r.n_queries == te.n_queries
        # each query's ranking is a permutation of its rows, ordered by score
        np.testing.assert_array_equal(np.sort(r.items), np.arange(te.n_docs))
        s = rk.scores(te.X)[r.items]
        same_q = r.query_index()[1:] == r.query_index()[:-1]
        assert np.all(np.diff(s)[same_q] <= 0)
    rk = fit_linear_ranker(tr, method="ranksvm")
    np.testing.assert_allclose(rk.scores(te.X), te.X @ rk.coef_ + rk.intercept_)


def test_ranker_validation():
    tr = load_sample("train")
    with pytest.raises(ValueError, match="`method` must be 'ranksvm' or 'logistic'"):
        fit_linear_ranker(tr, method="svm")
    with pytest.raises(ValueError, match="`C` must be a positive number"):
        fit_linear_ranker(tr, C=0)
    with pytest.raises(ValueError, match="has no query with two different labels"):
        fit_linear_ranker(tr.subset([i for i in range(tr.n_queries) if tr.labels[tr.offsets[i]:tr.offsets[i + 1]].max() == 0]))
    with pytest.raises(TypeError, match="`train` must be a LetorData"):
        fit_lambdarank_ranker(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="`score_fn` must be callable"):
        ScoreRanker(3)
    with pytest.raises(ValueError, match="`offsets` is required"):
        ScoreRanker(lambda X: X[:, 0]).rank(np.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"`score_fn` returned 1 scores for 2 rows"):
        ScoreRanker(lambda X: X[:1, 0]).rank(np.zeros((2, 1)), [0, 2])
    with pytest.raises(ValueError, match="`score` must be one of"):
        model_ranker(make_relevance_model("uniform", 3), score="median")
