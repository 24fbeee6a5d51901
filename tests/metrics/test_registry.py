import numpy as np
import pytest
from sklearn.metrics import dcg_score, ndcg_score

import activerank as ar
from activerank.metrics import Metric

from .._reference import naive_dcg, naive_err


@pytest.mark.parametrize("text, name, k", [
    ("dcg@10", "dcg", 10), ("err", "err", None), ("ERR@20", "err", 20), (" nDCG@5 ", "ndcg", 5),
])
def test_parse_metric(text, name, k):
    assert ar.parse_metric(text) == Metric(name, k)


def test_parse_metric_kwarg_and_suffix():
    assert ar.parse_metric("err", k=3) == Metric("err", 3)
    assert ar.parse_metric("err@3", k=3) == Metric("err", 3)
    with pytest.raises(ValueError, match=r"`k`=4 contradicts the cutoff in `metric`='err@3'"):
        ar.parse_metric("err@3", k=4)


@pytest.mark.parametrize("bad", ["map@10", "dcg@", "dcg@x", "err@10@2", "", "dcg10"])
def test_unknown_metric_template(bad):
    with pytest.raises(ValueError, match=r"`metric` .* is not a known metric; expected one of"):
        ar.parse_metric(bad)


def test_metric_cutoff_zero_rejected():
    with pytest.raises(ValueError, match=r"must be >= 1"):
        ar.parse_metric("dcg@0")
    with pytest.raises(TypeError, match=r"`metric` must be a string"):
        ar.parse_metric(10)


def test_dcg_matches_sklearn_exponential_gain():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 15))
        labels = rng.integers(0, 5, n)
        scores = rng.permutation(n).astype(float)  # no ties: sklearn and we agree on order
        ranking = np.argsort(-scores)
        for k in (None, 1, 3, 10):
            want = dcg_score([2.0**labels - 1], [scores], k=k)
            got = ar.metric_value(labels, ranking, metric="dcg", k=k, ymax=4)
            assert got == pytest.approx(want, rel=1e-12)
            if (labels > 0).any():
                want_n = ndcg_score([2.0**labels - 1], [scores], k=k)
                got_n = ar.metric_value(labels, ranking, metric="ndcg", k=k, ymax=4)
                assert got_n == pytest.approx(want_n, rel=1e-12)


def test_err_hand_example_chapelle():
    # 5-grade scale (ymax = 4) as in Chapelle et al. 2009: R(g) = (2^g - 1) / 16.
    # grades 4, 0, 2: 15/16 + (1/16)(1)(0)/2 + (1/16)(1)(3/16)/3 = 15/16 + 1/256
    assert ar.metric_value([4, 0, 2], [0, 1, 2], metric="err", ymax=4) == 0.94140625
    # ymax is the scale's top grade: the same labels on a 0-2 scale give another value
    assert ar.metric_value([2, 0, 1], [0, 1, 2], metric="err", ymax=2) == pytest.approx(
        0.75 + 0.25 * 1.0 * 0.25 / 3)


def test_pool_values_match_naive():
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 9, 40)
    labels = rng.integers(0, 3, lengths.sum())
    offsets = np.r_[0, np.cumsum(lengths)]
    rankings = [rng.permutation(np.arange(offsets[q], offsets[q + 1])) for q in range(40)]
    for k in (None, 4):
        dcg = ar.pool_metric_values(labels, rankings, metric="dcg", k=k, ymax=2)
        err = ar.pool_metric_values(labels, rankings, metric="err", k=k, ymax=2)
        np.testing.assert_allclose(dcg, [naive_dcg(labels, r, k) for r in rankings], rtol=1e-13)
        np.testing.assert_allclose(err, [naive_err(labels, r, 2, k) for r in rankings], rtol=1e-13)


def test_metric_value_bad_input():
    with pytest.raises(ValueError, match=r"`labels` must lie on the grade scale 0..2; item 1 has grade 3"):
        ar.metric_value([0, 3], [0, 1], metric="dcg", ymax=2)
    with pytest.raises(ValueError, match=r"`ymax` must be >= 1"):
        ar.metric_value([0, 0], [0, 1], metric="dcg", ymax=0)
    with pytest.raises(ValueError, match=r"`ranking` must be a 1-d sequence"):
        ar.metric_value([0, 0], [[0, 1]], metric="dcg", ymax=2)
