"""The LightGBM callback: estimates in the evaluation history, labels bought once, early stopping.

On the shipped MQ2008 sample (always), and on LightGBM's own lambdarank example data (``rank.train`` /
``rank.test`` with ``.query`` group files, in the shared data directory; skipped when absent).
"""

import math

import numpy as np
import pytest

import activerank as ar
from activerank.integrations.lightgbm import ActiveEvaluation
from tests.conftest import require_shared_data

lgb = pytest.importorskip("lightgbm")

PARAMS = {"objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1,
          "deterministic": True, "force_col_wise": True, "num_threads": 1, "seed": 0}


class Recording:
    """A labeler that remembers every (query, document) it was asked for."""

    def __init__(self, labeler):
        self.labeler, self.asked = labeler, []

    def __call__(self, query_id, doc_ids):
        self.asked.extend((query_id, d) for d in doc_ids)
        return self.labeler(query_id, doc_ids)


@pytest.fixture(scope="module")
def sample():
    train, pool = ar.load_sample("train"), ar.load_sample("test")
    probs = (ar.relevance.make_relevance_model("logistic", pool.n_grades)
             .fit(train.X, train.labels).predict_proba(pool.X))
    return train, pool, probs


def _train(train, callbacks, rounds):
    return lgb.train(PARAMS, lgb.Dataset(train.X, train.labels, group=train.lengths), num_boost_round=rounds,
                     callbacks=callbacks)


def _true_value(booster, pool, rounds, metric):
    rankings = ar.relevance.rank_by_scores(booster.predict(pool.X, num_iteration=rounds), pool.offsets)
    return float(ar.pool_metric_values(pool.labels, rankings, metric=metric, ymax=pool.n_grades - 1).mean())


def test_estimates_enter_the_evaluation_history(sample):
    train, pool, probs = sample
    labeler = Recording(ar.KnownLabels.from_data(pool))
    evaluation = ActiveEvaluation(pool, probs, labeler, budget=8, every=4, metric="err@10", rng=0)
    history = {}
    _train(train, [evaluation, lgb.record_evaluation(history)], 10)
    rec = history["activerank"]
    assert set(rec) == {"err@10", "err@10_low", "err@10_high"} and all(len(v) == 10 for v in rec.values())
    assert list(evaluation.results) == [4, 8, 10]  # every 4th round and the last
    for rounds in range(1, 11):
        if rounds in evaluation.results:
            res = evaluation.results[rounds]
            low, high = res.confidence_interval(0.95)
            assert (rec["err@10"][rounds - 1], rec["err@10_low"][rounds - 1], rec["err@10_high"][rounds - 1]) == \
                (res.estimate, low, high)
        else:
            assert math.isnan(rec["err@10"][rounds - 1])
    # every label bought once for the whole run, and each evaluation reused the earlier ones
    assert len(labeler.asked) == len(set(labeler.asked)) == evaluation.judgments.n_labels
    runs = list(evaluation.results.values())
    for before, after in zip(runs, runs[1:]):
        assert set(before.judgments.to_records()) <= set(after.judgments.to_records())
    assert sum(r.judgments.bought.n_labels for r in runs) == len(labeler.asked)
    assert all(r.cost_spent <= 8 for r in runs)
    table = evaluation.history()
    assert list(table.index) == [4, 8, 10] and table["estimate"].tolist() == [r.estimate for r in runs]
    assert table["labels_bought"].sum() == len(labeler.asked)
    assert repr(evaluation).startswith("ActiveEvaluation(estimate err@10 every 4 rounds on a budget of 8: 3 evaluations")


def test_the_log_shows_the_estimates(sample, capsys):
    train, pool, probs = sample
    evaluation = ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), budget=8, every=5, metric="dcg@5",
                                  rng=0, name="labels")
    _train(train, [evaluation, lgb.log_evaluation(5)], 5)
    out = capsys.readouterr()
    assert "labels's dcg@5:" in out.out + out.err and "dcg@5_low" in out.out + out.err


def test_compare_mode_stops_early_at_the_best_checkpoint(sample):
    train, pool, probs = sample
    labeler = Recording(ar.KnownLabels.from_data(pool))
    # a strict rule: a checkpoint must be better with probability 0.99, one miss stops training
    evaluation = ActiveEvaluation(pool, probs, labeler, budget=8, every=5, mode="compare", patience=1,
                                  min_prob_better=0.99, metric="err@10", rng=0)
    history = {}
    booster = _train(train, [evaluation, lgb.record_evaluation(history)], 50)
    assert evaluation.results  # the first checkpoint is the baseline: no labels for it
    assert 5 not in evaluation.results and evaluation.best_iteration is not None
    stop = max(evaluation.results)
    assert stop < 50 and booster.best_iteration == evaluation.best_iteration < stop
    assert booster.current_iteration() == booster.best_iteration  # lightgbm keeps the model up to the best
    # the stop comes at the start of the next round's callbacks: the deciding round is in the history
    assert evaluation.results[stop].prob_a_better() < 0.99
    assert set(history["activerank"]) == {"err@10_diff", "err@10_diff_low", "err@10_diff_high", "prob_better"}
    assert len(history["activerank"]["prob_better"]) == stop
    assert history["activerank"]["prob_better"][stop - 1] == evaluation.results[stop].prob_a_better()
    assert set(booster.best_score["activerank"]) == set(history["activerank"])
    assert len(labeler.asked) == len(set(labeler.asked))


def test_compare_mode_keeps_the_best(sample):
    train, pool, probs = sample
    evaluation = ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), budget=10, every=5, mode="compare",
                                  patience=3, metric="err@10", rng=0)
    booster = _train(train, [evaluation], 30)
    table = evaluation.history()
    assert list(table.index) == list(evaluation.results) and "prob_a_better" in table
    # the best checkpoint is the last one that was better than the best before it
    better = [r for r, res in evaluation.results.items() if res.prob_a_better() >= 0.5]
    assert evaluation.best_iteration == (better[-1] if better else 5)
    best = 5
    for rounds, row in table.iterrows():
        assert row["compared_to"] == best
        best = rounds if row["prob_a_better"] >= 0.5 else best
    # with patience, the booster ends at the best checkpoint even without stopping early (as lightgbm.early_stopping)
    assert booster.best_iteration == evaluation.best_iteration


def test_judgments_from_before_are_never_bought_again(sample):
    train, pool, probs = sample
    first = ar.estimate(pool, pool.X[:, 0], probs, ar.KnownLabels.from_data(pool), budget=10, metric="err@10",
                        rng=1)
    labeler = Recording(ar.KnownLabels.from_data(pool))
    evaluation = ActiveEvaluation(pool, probs, labeler, budget=8, every=5, rng=0, judgments=first.judgments)
    _train(train, [evaluation], 10)
    held = {(q, d) for q, d, _ in first.judgments.to_records()}
    assert not held & set(labeler.asked)
    assert held <= {(q, d) for q, d, _ in evaluation.judgments.to_records()}


def test_options_reach_the_estimate(sample):
    train, pool, probs = sample
    evaluation = ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), budget=15, every=5, metric="dcg@5",
                                  method="active", ci="normal", costs="uniform", rng=np.random.default_rng(3))
    _train(train, [evaluation], 5)
    res = evaluation.results[5]
    assert res.method == "active" and res.ci == "normal" and res.metric == "dcg@5"


@pytest.mark.parametrize("kwargs, kind, message", [
    (dict(patience=2), ValueError, "`patience` needs `mode`='compare'"),
    (dict(every=0), ValueError, "`every` must be an integer >= 1"),
    (dict(mode="best"), ValueError, "`mode` must be one of"),
    (dict(budget=0), ValueError, "`budget` must be a positive finite number"),
    (dict(mode="compare", min_prob_better=1.0), ValueError, r"`min_prob_better` must lie in \(0, 1\)"),
    (dict(confidence_level=95), ValueError, r"`confidence_level` must lie in \(0, 1\)"),
    (dict(X=np.zeros((3, 2))), ValueError, r"`X` must have shape \(n_docs=607, n_features\)"),
    (dict(rng=-1), ValueError, "`rng` must be a non-negative integer seed"),
    (dict(name=""), ValueError, "`name` must be a non-empty string"),
    (dict(judgments=[1]), TypeError, "`judgments` must be a mapping"),
])
def test_bad_options(sample, kwargs, kind, message):
    _, pool, probs = sample
    kw = dict(budget=8)
    kw.update(kwargs)
    with pytest.raises(kind, match=message):
        ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), **kw)


def test_a_pool_without_features_needs_x(sample):
    _, pool, probs = sample
    bare = ar.Pool.from_qids(np.repeat(pool.query_ids, pool.lengths))
    with pytest.raises(ValueError, match="`X` is needed"):
        ActiveEvaluation(bare, probs, ar.KnownLabels.from_data(pool), budget=8)


def test_cv_is_refused(sample):
    train, pool, probs = sample
    evaluation = ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), budget=8, every=1)
    with pytest.raises(TypeError, match="not with CVBooster"):
        lgb.cv(PARAMS, lgb.Dataset(train.X, train.labels, group=train.lengths), num_boost_round=1, nfold=2,
               callbacks=[evaluation])


# --------------------------------------------------------------------------- LightGBM's lambdarank example


def _load_lambdarank(root, split):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(root / f"rank.{split}"), n_features=300)
    lengths = np.loadtxt(root / f"rank.{split}.query", dtype=np.int64)
    qids = np.arange(lengths.size)
    return ar.LetorData(X=X.toarray(), qids=np.repeat(qids, lengths), query_ids=qids,
                        offsets=np.concatenate([[0], np.cumsum(lengths)]), labels=y.astype(np.int64), n_grades=5)


def test_lambdarank_example():
    root = require_shared_data("lightgbm-lambdarank-example")
    train, pool = _load_lambdarank(root, "train"), _load_lambdarank(root, "test")
    probs = (ar.relevance.make_relevance_model("lightgbm", pool.n_grades, random_state=0)
             .fit(train.X, train.labels).predict_proba(pool.X))
    labeler = Recording(ar.KnownLabels.from_data(pool))
    estimates = ActiveEvaluation(pool, probs, labeler, budget=10, every=10, metric="err@10", rng=0)
    booster = _train(train, [estimates], 40)
    assert list(estimates.results) == [10, 20, 30, 40]
    for rounds, res in estimates.results.items():  # seeded: each estimate near the value every label gives
        truth = _true_value(booster, pool, rounds, "err@10")
        assert abs(res.estimate - truth) < 4 * res.standard_error, (rounds, res, truth)
    # 50 queries, 768 documents: four evaluations on a budget of 10 queries each judged a fraction of them
    assert len(labeler.asked) == len(set(labeler.asked)) == estimates.judgments.n_labels < pool.n_docs / 2

    compare = ActiveEvaluation(pool, probs, ar.KnownLabels.from_data(pool), budget=10, every=10, mode="compare",
                               patience=2, metric="err@10", rng=0)
    booster = _train(train, [compare], 100)
    best = compare.best_iteration
    assert booster.best_iteration == best and best in compare.results
    for rounds, res in compare.results.items():
        assert res.cost_spent <= 10
    # the difference found for the best checkpoint is near the true one (seeded)
    res = compare.results[best]
    earlier = [r for r in compare.results if r < best]
    before = max([r for r in earlier if compare.results[r].prob_a_better() >= 0.5], default=10)
    truth = _true_value(booster, pool, best, "err@10") - _true_value(booster, pool, before, "err@10")
    assert abs(res.difference - truth) < 4 * res.standard_error + 1e-12, (best, before, res, truth)
