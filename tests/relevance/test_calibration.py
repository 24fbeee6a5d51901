import numpy as np
import pytest

import activerank as ar
from activerank.relevance.calibration import (
    cross_fitted_probs,
    fit_calibrator,
    fit_query_calibrator,
    query_features,
)
from activerank.relevance.models import UniformRelevanceModel, make_relevance_model
from activerank.relevance.rankers import rank_by_scores


def test_fit_calibrator_recovers_linear_signal():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(300, 3))
    noise_sd = 0.2 + 0.3 * (F[:, 1] > 0)
    y = 2.0 * F[:, 0] - F[:, 2] + rng.normal(size=300) * noise_sd
    cal = fit_calibrator(F, y)
    mean, var = cal.predict(F)
    assert np.corrcoef(mean, y)[0, 1] > 0.95
    assert (var > 0).all()
    # the residual model sees that F[:, 1] > 0 is noisier
    assert var[F[:, 1] > 0].mean() > var[F[:, 1] <= 0].mean()


def test_fit_calibrator_validation():
    with pytest.raises(ValueError, match=r"`features` must have shape \(n_queries, n_features\)"):
        fit_calibrator(np.zeros((5, 2)), np.zeros(6))
    with pytest.raises(ValueError, match=r"need at least 10 training queries"):
        fit_calibrator(np.zeros((6, 2)), np.zeros(6))


def test_query_features_single_and_pair():
    data = ar.load_sample()
    probs = np.full((data.n_docs, 3), 1 / 3)
    r = rank_by_scores(data.X[:, 0], data.offsets)
    F1 = query_features(probs, r, metric="err@10")
    F2 = query_features(probs, (r, rank_by_scores(data.X[:, 1], data.offsets)), metric="dcg@5")
    assert F1.shape == (data.n_queries, 5) and F2.shape == (data.n_queries, 8)
    np.testing.assert_allclose(F1[:, 0], ar.pool_moments(probs, r, metric="err@10").mean)


class _Recorder(UniformRelevanceModel):
    seen: list = []

    def fit(self, X, y):
        _Recorder.seen.append(X[:, 0].copy())
        return super().fit(X, y)


def test_cross_fitted_probs_never_predict_a_query_seen_in_training():
    data = ar.load_sample()
    X = data.X.copy()
    X[:, 0] = np.repeat(np.arange(data.n_queries), data.lengths)  # query tag in feature 0
    tagged = ar.LetorData(X=X, qids=data.qids, query_ids=data.query_ids, offsets=data.offsets,
                          labels=data.labels, n_grades=3)
    _Recorder.seen = []
    probs = cross_fitted_probs(tagged, lambda: _Recorder(3), n_splits=5)
    assert probs.shape == (data.n_docs, 3) and len(_Recorder.seen) == 5
    fit_queries = [set(s.astype(int)) for s in _Recorder.seen]
    assert set().union(*fit_queries) == set(range(data.n_queries))
    # every query is absent from exactly one fit (the one that predicts it)
    for q in range(data.n_queries):
        assert sum(q not in s for s in fit_queries) == 1


def test_fit_query_calibrator_and_estimate_with_predictions():
    train, pool = ar.load_sample("train"), ar.load_sample()
    factory = lambda: make_relevance_model("logistic", 3)  # noqa: E731
    r_train = rank_by_scores(train.X[:, 24], train.offsets)
    cal = fit_query_calibrator(train, r_train, factory, metric="err@10", n_splits=4)
    model = factory().fit(train.X, train.labels)
    probs = model.predict_proba(pool.X)
    r_pool = rank_by_scores(pool.X[:, 24], pool.offsets)
    mean, var = cal.predict(query_features(probs, r_pool, metric="err@10"))
    assert mean.shape == var.shape == (pool.n_queries,) and (var > 0).all()
    res = ar.estimate(pool, pool.X[:, 24], probs, ar.KnownLabels.from_data(pool), budget=12,
                      metric="err@10", method="model_assisted", predicted=(mean, var), rng=0)
    assert np.isfinite(res.estimate) and res.control_coefficient is not None
    with pytest.raises(ValueError, match=r"pass exactly one of `model_factory`"):
        fit_query_calibrator(train, r_train, factory, metric="err@10", probs=probs)


def test_predicted_validation():
    pool = ar.load_sample()
    probs = np.full((pool.n_docs, 3), 1 / 3)
    lab = ar.KnownLabels.from_data(pool)
    s = pool.X[:, 0]
    with pytest.raises(ValueError, match=r"`predicted` mean must have one entry per query \(30\)"):
        ar.estimate(pool, s, probs, lab, budget=5, predicted=(np.zeros(3), np.ones(3)))
    with pytest.raises(ValueError, match=r"`predicted` variance must be >= 0; query 0"):
        ar.estimate(pool, s, probs, lab, budget=5, predicted=(np.zeros(30), -np.ones(30)))
    with pytest.raises(TypeError, match=r"`predicted` must be a pair"):
        ar.estimate(pool, s, probs, lab, budget=5, predicted=np.zeros(30))
