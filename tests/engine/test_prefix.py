"""The ``prefix`` method: queries sampled, a random-depth prefix judged in each (cascade metrics)."""

import itertools

import numpy as np
import pytest

import activerank as ar
from activerank.pool import pool_iv
from activerank.design.kinds.prefix import judging_paths, prefix_layout, stop_probabilities, within_estimate
from activerank.engine import FixedBudget, run
from activerank.metrics import parse_metric, pool_metric_values
from activerank.ragged import Rankings

from ..conftest import stat_reps
from .test_documents import _problem


def _truth(pool, labels, rankings, metric):
    vals = [pool_metric_values(labels, r.truncate(parse_metric(metric).k), metric=metric, ymax=2)
            for r in rankings]
    return np.mean(vals[0] if len(vals) == 1 else vals[0] - vals[1])


def _layout(rankings, contrast, metric, probs, n_grades=3):
    m = parse_metric(metric)
    r = [x.truncate(m.k) for x in rankings]
    n_docs = probs.shape[0]
    return prefix_layout(r, contrast, m, n_grades, n_docs, np.ones(r[0].n_queries), np.ones(n_docs))


@pytest.mark.parametrize("order", ["adaptive", "rank"])
@pytest.mark.parametrize("metric", ["err@4", "rr@3", "err@2"])
def test_increments_add_up_to_the_value_minus_the_prediction_for_every_label_vector(metric, order):
    # two overlapping rankings of 5 documents: a difference and one ranking; label vectors enumerated
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=5)
    a = Rankings.from_list([[0, 1, 2, 3, 4]])
    b = Rankings.from_list([[2, 0, 4, 1, 3]])
    lay = _layout((a, b), np.array([[1.0, -1.0], [1.0, 0.0]]), metric, probs)
    m = parse_metric(metric)
    R = m.grade_values(3)
    grid = np.array(list(itertools.product(range(3), repeat=5)))
    w = np.prod(probs[np.arange(5), grid], axis=1)
    va = np.array([pool_metric_values(g, a.truncate(m.k), metric=metric, ymax=2)[0] for g in grid])
    vb = np.array([pool_metric_values(g, b.truncate(m.k), metric=metric, ymax=2)[0] for g in grid])
    target = np.stack([va - vb, va], axis=1)
    pred = w @ target  # the model's expectation, by enumeration
    rows = lay.rows[0][lay.mask[0]]
    rho_j = probs[rows] @ R
    sd = np.sqrt(probs[rows] @ R**2 - rho_j**2)[None]
    f = R[grid[:, rows]]
    B = len(grid)
    docs, grad, scores = judging_paths(lay, np.zeros(B, dtype=np.int64), lay.system_values(probs),
                                       np.repeat(sd, B, 0), f, order=order)
    assert np.all(np.sort(docs, axis=1) == np.arange(rows.size))  # every document once
    if order == "rank":
        assert np.all(docs == np.arange(rows.size))
    D = (np.take_along_axis(f, docs, 1) - rho_j[docs])[..., None] * grad
    np.testing.assert_allclose(pred[None] + D.sum(1), target, atol=1e-12)


def test_within_query_estimator_and_its_variance_are_unbiased_by_enumeration():
    # fixed increments and a non-increasing P: integrate over U exactly (piecewise constant)
    D = np.array([[[0.3], [-0.2], [0.5], [0.1]]])
    P = np.array([[1.0, 0.7, 0.4, 0.1]])
    cuts = np.concatenate([[0.0], np.sort(P[0]), [1.0]])
    mean_e, mean_v, second = 0.0, 0.0, 0.0
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi <= lo:
            continue
        u = (lo + hi) / 2
        e, V = within_estimate(D, P, (u <= P))
        mean_e += (hi - lo) * e[0, 0]
        second += (hi - lo) * e[0, 0] ** 2
        mean_v += (hi - lo) * V[0, 0, 0]
    assert mean_e == pytest.approx(D.sum())
    assert mean_v == pytest.approx(second - mean_e**2)


def test_within_variance_equals_the_double_sum():
    rng = np.random.default_rng(4)
    D = rng.normal(size=(6, 7, 3))
    P = np.sort(rng.uniform(0.05, 1.0, size=(6, 7)), axis=1)[:, ::-1]
    judged = rng.random((6, 7)) < 0.7
    judged = np.cumprod(judged, axis=1).astype(bool)  # a prefix of the sequence
    _, V = within_estimate(D, P, judged)
    for b in range(6):
        ref = np.zeros((3, 3))
        for j in range(7):
            for l in range(7):
                if judged[b, j] and judged[b, l]:
                    lo, hi = min(j, l), max(j, l)
                    ref += (1 / P[b, lo] - 1) / P[b, hi] * np.outer(D[b, j], D[b, l])
        np.testing.assert_allclose(V[b], ref, atol=1e-12)


def test_stop_probabilities_are_non_increasing_and_positive_with_a_floor():
    a = np.array([[0.5, 0.0, 0.9, 0.1]])
    P = stop_probabilities(a, np.array([0.05]), np.array([0.2]))
    assert np.all(np.diff(P[0]) <= 0) and P.min() > 0
    assert stop_probabilities(a, np.array([0.05]), np.array([0.0])).tolist() == [[1.0] * 4]


@pytest.mark.parametrize("metric", ["err@5", "rr@5"])
def test_enough_budget_judges_everything_that_matters_and_is_exact(metric):
    pool, a, b, rng = _problem(0, n_queries=30)
    labels = pool.sample_labels(rng)
    for rankings in ((a,), (a, b)):
        lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
        fn = ar.estimate if len(rankings) == 1 else ar.compare
        res = fn(pool, *rankings, pool.probs, lab, budget=1e6, metric=metric, method="prefix", rng=1)
        point = res.estimate if len(rankings) == 1 else res.difference
        assert point == pytest.approx(_truth(pool, labels, rankings, metric), abs=1e-12)
        assert res.standard_error == 0.0 and res.method == "prefix"


def test_documents_are_asked_one_at_a_time_and_the_trace_adds_up():
    pool, a, b, rng = _problem(1, n_queries=80)
    labels = pool.sample_labels(rng)
    asked = []

    def labeler(qid, docs):
        asked.append((qid, list(docs)))
        return ar.KnownLabels(pool.query_ids, pool.offsets, labels)(qid, docs)

    res = ar.estimate(pool, a, pool.probs, labeler, budget=8.0, metric="err@5", method="prefix", rng=3)
    assert all(len(d) == 1 for _, d in asked)
    tr = res.trace
    assert len(tr) == len(asked) and tr["new"].all()
    for _, grp in tr.groupby("query"):
        assert grp["step"].tolist() == list(range(len(grp)))  # a prefix of the judging sequence
        assert np.all(np.diff(grp["P"].to_numpy()) <= 1e-15)
    assert res.cost_spent == pytest.approx(tr["cost"].sum())


def test_a_model_certain_of_every_label_still_samples_and_reports_an_error_bar():
    pool, a, b, rng = _problem(3, n_queries=60)
    labels = pool.sample_labels(rng)
    wrong = np.eye(3)[np.zeros(pool.probs.shape[0], dtype=int)]  # certain: every document irrelevant
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    res = ar.estimate(pool, a, wrong, lab, budget=15.0, metric="err@5", method="prefix", rng=1)
    assert not res.exact and res.n_draws >= 2 and res.standard_error > 0


def test_errors_are_clear():
    pool, a, b, rng = _problem(2, n_queries=20)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    with pytest.raises(ValueError, match="needs a cascade metric"):
        ar.estimate(pool, a, pool.probs, lab, budget=5.0, metric="dcg@5", method="prefix", rng=1)
    with pytest.raises(ValueError, match="too small for the prefix method"):
        ar.estimate(pool, a, pool.probs, lab, budget=0.05, metric="err@5", method="prefix", rng=1)


@pytest.mark.statistical
@pytest.mark.parametrize("n_systems,budget", [(1, 25.0), (3, 24.0)])
def test_prefix_is_unbiased_with_nominal_coverage_and_honest_variance(n_systems, budget):
    pool, a, b, rng = _problem(5, n_queries=150)
    c = ar.relevance.rankers.rank_by_scores(pool.probs @ np.arange(3) + 2 * rng.random(pool.probs.shape[0]),
                                            pool.offsets)
    rankings = (a, b, c)[:n_systems]
    kind = {1: "mean", 2: "difference", 3: "baseline"}[n_systems]
    # one system: a miscalibrated model (tempered towards the top grade); labels come from pool.probs
    model = pool.probs if n_systems > 1 else (pool.probs ** 0.5 * np.array([0.5, 1.0, 2.0]))
    model = model / model.sum(1, keepdims=True)
    dsg = ar.make_design(pool, rankings, model, metric="err@5", method="prefix",
                         **({} if n_systems < 3 else {"target": "baseline"}))
    pool_ = pool_iv(pool)
    reps = stat_reps(1000)
    err, se, n = [], [], []
    for _ in range(reps):
        labels = pool.sample_labels(rng)
        res = run(dsg, pool_, ar.KnownLabels(pool.query_ids, pool.offsets, labels), FixedBudget(budget, rng))
        vals = [pool_metric_values(labels, r.truncate(5), metric="err@5", ymax=2) for r in rankings]
        truth = np.mean(vals[0]) if kind == "mean" else np.mean(vals[0] - vals[1]) if kind == "difference" \
            else np.mean(vals[0] - vals[2])
        point = res.differences[0] if kind == "baseline" else (res.estimate if kind == "mean" else res.difference)
        s = res.standard_errors[0] if kind == "baseline" else res.standard_error
        err.append(point - truth)
        se.append(s)
        n.append(res.n_draws)
    err, se = np.array(err), np.array(se)
    assert min(n) >= 50
    assert abs(err.mean()) <= 3 * err.std(ddof=1) / np.sqrt(reps)
    assert np.mean(se**2) == pytest.approx(err.var(ddof=1), rel=0.2 if reps >= 1000 else 0.35)
    cover = np.mean(np.abs(err) <= 1.959964 * se)
    # the goal band 0.93-0.97 widened by 3 Monte-Carlo SE of a coverage (one system: 0.935 over 5,000 runs)
    mc = 3 * np.sqrt(0.95 * 0.05 / reps)
    lo, hi = (0.93 - mc, 0.97 + mc) if reps >= 1000 else (0.88, 0.99)
    assert lo <= cover <= hi, cover
