"""Document-level methods (doc_dyn, doc_stat) through the engine."""

import numpy as np
import pytest

import activerank as ar
from activerank.pool import pool_iv
from activerank.engine import FixedBudget, run
from activerank.design.kinds.documents import document_target_of
from activerank.metrics import pool_metric_values
from activerank.relevance.rankers import rank_by_scores

from ..conftest import SyntheticPool, stat_reps


def _problem(seed, n_queries=200):
    rng = np.random.default_rng(seed)
    pool = SyntheticPool(rng, n_queries=n_queries)
    base = pool.probs @ np.arange(pool.n_grades)
    a = rank_by_scores(base + rng.random(base.size), pool.offsets)
    b = rank_by_scores(base + 1.5 * rng.random(base.size), pool.offsets)
    return pool, a, b, rng


def _truth(pool, labels, rankings, metric):
    vals = [pool_metric_values(labels, r.truncate(ar.metrics.parse_metric(metric).k), metric=metric, ymax=2)
            for r in rankings]
    return float(np.mean(vals[0] if len(vals) == 1 else vals[0] - vals[1]))


class Recording:
    def __init__(self, pool, labels):
        self.inner = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
        self.asked: dict = {}

    def __call__(self, qid, docs):
        assert qid not in self.asked
        self.asked[qid] = [int(d) for d in docs]
        return self.inner(qid, docs)


@pytest.mark.parametrize("method", ["doc_dyn", "doc_stat", "doc_hh", "two_stage"])
@pytest.mark.parametrize("metric", ["dcg@5", "p@3", "rbp(p=0.8)@5"])
def test_enough_budget_judges_every_document_that_matters_and_is_exact(method, metric):
    pool, a, b, rng = _problem(0, n_queries=30)
    labels = pool.sample_labels(rng)
    for rankings in ((a,), (a, b)):
        lab = Recording(pool, labels)
        fn = ar.estimate if len(rankings) == 1 else ar.compare
        res = fn(pool, *rankings, pool.probs, lab, budget=1e6, metric=metric, method=method, rng=1)
        point = res.estimate if len(rankings) == 1 else res.difference
        assert point == pytest.approx(_truth(pool, labels, rankings, metric), abs=1e-12)
        assert res.exact and res.standard_error == 0.0 and res.method == method
        dsg = ar.make_design(pool, rankings, pool.probs, metric=metric, method=method)
        dt = document_target_of(dsg)
        matters = {(int(x), int(r)) for x, r in zip(dt.query[dt.matters], dt.rows[dt.matters])}
        index = {q: x for x, q in enumerate(pool.query_ids.tolist())}
        asked = {(index[q], d) for q, docs in lab.asked.items() for d in docs}
        assert asked == matters  # every document that can change a target, and only those
        assert res.n_draws == len(matters) == len(res.trace)


def test_labeler_is_asked_only_for_drawn_documents_once_per_query():
    pool, a, b, rng = _problem(1, n_queries=60)
    labels = pool.sample_labels(rng)
    lab = Recording(pool, labels)
    res = ar.compare(pool, a, b, pool.probs, lab, budget=10, metric="dcg@5", method="doc_dyn", rng=2)
    t = res.trace
    assert set(t.columns) >= {"query", "query_id", "doc_row", "doc_id", "pi", "weight", "new", "cost", "grade"}
    by_query = {q: sorted(g["doc_row"].tolist()) for q, g in t.groupby("query_id")}
    assert {q: sorted(d) for q, d in lab.asked.items()} == by_query
    assert np.array_equal(t["grade"].to_numpy(), labels[t["doc_row"].to_numpy()])
    assert (t["pi"] > 0).all() and (t["pi"] <= 1).all()
    assert res.cost_spent == pytest.approx(t["cost"].sum()) and res.n_queries == len(by_query)
    assert np.isnan(res.estimate_a) and np.isfinite(res.difference) and res.standard_error > 0
    # expected cost = budget (Poisson sampling spends it in expectation)
    assert t.attrs["expected_cost"] == pytest.approx(10.0)


def test_earlier_judgments_are_a_census_and_never_asked_again():
    pool, a, b, rng = _problem(2, n_queries=20)
    labels = pool.sample_labels(rng)
    known = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    dsg = ar.make_design(pool, (a, b), pool.probs, metric="dcg@5", method="doc_dyn")
    dt = document_target_of(dsg)
    judgments = {}
    for x, r in zip(dt.query[dt.matters].tolist(), dt.rows[dt.matters].tolist()):
        judgments.setdefault(int(pool.query_ids[x]), {})[r] = int(labels[r])

    def never(qid, docs):
        raise AssertionError("already judged")

    res = ar.compare(pool, a, b, pool.probs, never, budget=5, metric="dcg@5", method="doc_dyn", rng=0,
                     judgments=judgments)
    assert res.exact and res.cost_spent == 0.0
    assert res.difference == pytest.approx(_truth(pool, labels, (a, b), "dcg@5"), abs=1e-12)
    assert (res.trace["stratum"] == "census").all()
    assert known.n_calls == 0


def test_k_systems_targets_run_document_level():
    pool, a, b, rng = _problem(3, n_queries=40)
    c = rank_by_scores(pool.probs @ np.arange(3) + 2 * rng.random(pool.probs.shape[0]), pool.offsets)
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    many = ar.compare_many(pool, [a, c], b, pool.probs, lab, budget=1e6, metric="dcg@5", method="doc_dyn", rng=0)
    vals = [pool_metric_values(labels, r.truncate(5), metric="dcg@5", ymax=2).mean() for r in (a, c, b)]
    np.testing.assert_allclose(many.differences, [vals[0] - vals[2], vals[1] - vals[2]], atol=1e-12)
    rank = ar.rank_systems(pool, [a, b, c], pool.probs, lab, budget=1e6, metric="dcg@5", method="doc_dyn", rng=0)
    np.testing.assert_allclose(rank.relative, np.array([vals[0], vals[2], vals[1]]) - np.mean(vals), atol=1e-12)
    assert rank.ranking[0] == ("system_0", "system_1", "system_2")[int(np.argmax([vals[0], vals[2], vals[1]]))]


def test_document_level_errors_are_clear():
    pool, a, b, rng = _problem(4, n_queries=20)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    for metric in ("err@10", "rr", "ndcg(gain=exp)@5", "ap"):
        with pytest.raises(ValueError, match=r"`method`='doc_dyn' samples single documents and needs a metric "
                                             r"that adds over documents"):
            ar.compare(pool, a, b, pool.probs, lab, budget=5, metric=metric, method="doc_dyn")
    with pytest.raises(ValueError, match="too small"):
        ar.estimate(pool, a, pool.probs, lab, budget=1e-3, metric="dcg@5", method="doc_dyn")
    with pytest.raises(ValueError, match="`method` must be one of"):
        ar.estimate_sequential(pool, a, pool.probs, lab, target_half_width=0.1, budget=5, metric="dcg@5",
                               method="doc_dyn")
    with pytest.raises(ValueError, match="`predicted`"):
        ar.estimate(pool, a, pool.probs, lab, budget=5, metric="dcg@5", method="doc_dyn",
                    predicted=(np.zeros(20), np.ones(20)))


@pytest.mark.statistical
@pytest.mark.parametrize("method,metric,pair,budget", [("doc_dyn", "dcg@5", True, 16.0),
                                                       ("doc_stat", "p@3", False, 30.0)])
def test_document_level_engine_is_unbiased_with_nominal_coverage(method, metric, pair, budget):
    pool, a, b, rng = _problem(5, n_queries=120)
    rankings = (a, b) if pair else (a,)
    dsg = ar.make_design(pool, rankings, pool.probs, metric=metric, method=method)
    pool_ = pool_iv(pool)
    reps = stat_reps(2000)
    err, se, n = np.empty(reps), np.empty(reps), np.empty(reps)
    for i in range(reps):
        labels = pool.sample_labels(rng)
        res = run(dsg, pool_, ar.KnownLabels(pool.query_ids, pool.offsets, labels), FixedBudget(budget, rng))
        err[i] = (res.difference if pair else res.estimate) - _truth(pool, labels, rankings, metric)
        se[i] = res.standard_error
        n[i] = res.n_draws
    assert n.min() >= 50
    assert abs(err.mean()) <= 3 * err.std(ddof=1) / np.sqrt(reps)
    # the variance estimator is unbiased: mean estimated variance near the empirical one
    assert np.mean(se**2) == pytest.approx(err.var(ddof=1), rel=0.15)
    cover = np.mean(np.abs(err) <= 1.959964 * se)
    lo, hi = (0.93, 0.97) if reps >= 2000 else (0.88, 0.99)
    assert lo <= cover <= hi, cover


# --------------------------------------------------------------------------- every document-level design

NEW = ["doc_uniform", "doc_hh", "two_stage", "doc_ubis"]
ALL = ["doc_dyn", "doc_stat"] + NEW
# the budget spent in expectation (Poisson, uniform, UBIS), or never overspent (the draw loops)
EXPECTED_COST = ("doc_dyn", "doc_stat", "doc_uniform", "doc_ubis")


def _budget(method, budget):
    """UBIS-k visits every query at least twice: it needs more than the other designs."""
    return 3 * budget if method == "doc_ubis" else budget


def _expanded(dt, trace, probs, control_variate):
    """``M + sum_i w_i W_i (u_i - m_i)`` from a trace: the estimate its expansion weights imply."""
    idx = dt.unit_index(trace["doc_row"].to_numpy())
    u = dt.utilities(trace["grade"].to_numpy())
    m = dt.moments(probs).mean if control_variate else np.zeros(dt.n_units)
    w = trace["weight"].to_numpy()
    return dt.weights.T @ m + (dt.weights[idx] * (w * (u - m[idx]))[:, None]).sum(axis=0)


@pytest.mark.parametrize("method", NEW)
def test_new_methods_ask_once_per_query_for_the_sampled_documents_and_weights_add_up(method):
    pool, a, b, rng = _problem(1, n_queries=60)
    labels = pool.sample_labels(rng)
    lab = Recording(pool, labels)
    budget = _budget(method, 10)
    res = ar.compare(pool, a, b, pool.probs, lab, budget=budget, metric="dcg@5", method=method, rng=2)
    t = res.trace
    assert res.method == method and np.isnan(res.estimate_a) and res.standard_error > 0
    by_query = {q: sorted(set(g["doc_row"].tolist())) for q, g in t.groupby("query_id")}
    assert {q: sorted(d) for q, d in lab.asked.items()} == by_query
    assert np.array_equal(t["grade"].to_numpy(), labels[t["doc_row"].to_numpy()])
    # a unit is charged on its first judgment only; the draw loops never overspend
    assert t.groupby("doc_row")["new"].sum().eq(1).all()
    assert res.cost_spent == pytest.approx(t["cost"].sum())
    assert res.cost_spent <= budget  # every design: a hard budget
    if method in EXPECTED_COST:  # SRS: the most documents the budget pays for; UBIS: the largest k that always fits
        assert t.attrs["expected_cost"] <= budget * (1 + 1e-12)  # rounding of the sum only
    dsg = ar.make_design(pool, (a, b), pool.probs, metric="dcg@5", method=method)
    dt = document_target_of(dsg)
    plug = dsg.method_spec.kind
    assert res.difference == pytest.approx(_expanded(dt, t, pool.probs, plug.control_variate)[0], abs=1e-12)
    assert (t["pi"] > 0).all() and (t["pi"] <= 1).all()
    # intervals: Student-t over the i.i.d. draws (with replacement, first stage), normal for SRS
    if method in ("doc_uniform", "doc_ubis"):
        assert res.ci == "normal" and res.dof == np.inf
    else:
        n = t.attrs["n_with_replacement_draws"] if method == "doc_hh" else t.attrs["n_first_stage_draws"]
        assert res.ci == "t" and res.dof == n - 1 and n >= 2
        normal = ar.compare(pool, a, b, pool.probs, Recording(pool, labels), budget=budget, metric="dcg@5",
                            method=method, rng=2, ci="normal")
        assert normal.dof == np.inf and normal.difference == res.difference
        lo, hi = res.confidence_interval()
        assert hi - res.difference > normal.confidence_interval()[1] - normal.difference


def test_uniform_sampling_samples_every_pooled_document_blindly_and_is_exact_at_full_budget():
    pool, a, b, rng = _problem(0, n_queries=30)
    labels = pool.sample_labels(rng)
    lab = Recording(pool, labels)
    res = ar.compare(pool, a, b, pool.probs, lab, budget=1e6, metric="dcg@5", method="doc_uniform", rng=1)
    dsg = ar.make_design(pool, (a, b), pool.probs, metric="dcg@5", method="doc_uniform")
    dt = document_target_of(dsg)
    assert res.exact and res.standard_error == 0.0
    assert res.difference == pytest.approx(_truth(pool, labels, (a, b), "dcg@5"), abs=1e-12)
    # a uniform design does not look at the target: documents that cancel are judged too
    assert res.n_draws == dt.n_units > int(dt.matters.sum())


@pytest.mark.parametrize("method", ALL)
def test_every_document_design_reuses_earlier_judgments(method):
    pool, a, b, rng = _problem(2, n_queries=40)
    labels = pool.sample_labels(rng)
    dsg = ar.make_design(pool, (a, b), pool.probs, metric="dcg@5", method=method)
    dt = document_target_of(dsg)
    keep = dt.matters & (np.arange(dt.n_units) % 2 == 0)
    judgments = {}
    for x, r in zip(dt.query[keep].tolist(), dt.rows[keep].tolist()):
        judgments.setdefault(int(pool.query_ids[x]), {})[r] = int(labels[r])
    known = {(int(pool.query_ids[x]), int(r)) for x, r in zip(dt.query[keep], dt.rows[keep])}
    lab = Recording(pool, labels)
    res = ar.compare(pool, a, b, pool.probs, lab, budget=_budget(method, 8), metric="dcg@5", method=method,
                     rng=3, judgments=judgments)
    assert not known & {(q, d) for q, docs in lab.asked.items() for d in docs}  # never asked again
    t = res.trace
    reused = np.array([(int(q), int(d)) in known for q, d in zip(t["query_id"], t["doc_row"])])
    assert not t["new"][reused].any() and (t["cost"][reused] == 0).all()
    if method in ("doc_dyn", "doc_stat", "doc_uniform", "doc_hh"):  # an exact census stratum
        assert reused.sum() == keep.sum() and (t["stratum"][reused] == "census").all()
    dt_m = dsg.method_spec.kind.control_variate
    assert res.difference == pytest.approx(_expanded(dt, t, pool.probs, dt_m)[0], abs=1e-12)
    # every document that can change the difference judged before: exact, nothing asked
    all_judged = {}
    for x, r in zip(dt.query[dt.matters].tolist(), dt.rows[dt.matters].tolist()):
        all_judged.setdefault(int(pool.query_ids[x]), {})[r] = int(labels[r])
    lab = Recording(pool, labels)
    res = ar.compare(pool, a, b, pool.probs, lab, budget=8, metric="dcg@5", method=method, rng=3,
                     judgments=all_judged)
    assert res.exact and res.cost_spent == 0.0 and not lab.asked and res.standard_error == 0.0
    assert res.difference == pytest.approx(_truth(pool, labels, (a, b), "dcg@5"), abs=1e-12)


@pytest.mark.parametrize("method", NEW)
def test_new_methods_estimate_k_systems(method):
    pool, a, b, rng = _problem(3, n_queries=60)
    c = rank_by_scores(pool.probs @ np.arange(3) + 2 * rng.random(pool.probs.shape[0]), pool.offsets)
    labels = pool.sample_labels(rng)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    budget = _budget(method, 12)
    many = ar.compare_many(pool, [a, c], b, pool.probs, lab, budget=budget, metric="dcg@5", method=method, rng=0)
    rank = ar.rank_systems(pool, [a, b, c], pool.probs, lab, budget=budget, metric="dcg@5", method=method, rng=0)
    for res, est, cov in ((many, many.differences, many.covariance), (rank, rank.relative, rank.relative_covariance)):
        assert res.method == method and np.all(np.isfinite(est)) and cov.shape == (est.size,) * 2
        assert np.all(np.linalg.eigvalsh(cov) >= -1e-12) and np.all(np.diag(cov) > 0)
    assert rank.relative.sum() == pytest.approx(0.0, abs=1e-12)
    ci = many.confidence_intervals()
    assert np.all(ci.low < many.differences) and np.all(many.differences < ci.high)


def test_new_methods_errors_are_clear(tmp_path):
    from activerank.design.kinds.two_stage import TwoStage

    pool, a, b, rng = _problem(4, n_queries=20)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(rng))
    for method in NEW:
        with pytest.raises(ValueError, match=rf"`method`='{method}' samples single documents and needs a metric"):
            ar.compare(pool, a, b, pool.probs, lab, budget=5, metric="err@10", method=method)
        with pytest.raises(ValueError, match="too small"):
            ar.estimate(pool, a, pool.probs, lab, budget=1e-3, metric="dcg@5", method=method)
        with pytest.raises(ValueError, match="samples single documents and needs a metric"):  # campaigns too
            ar.campaign.Campaign.create(tmp_path / "c.db", pool, [a, b], pool.probs, budget=5, metric="err@10",
                                        method=method, seed=0)
        with pytest.raises(ValueError, match="too small"):
            ar.campaign.Campaign.create(tmp_path / "c.db", pool, [a, b], pool.probs, budget=1e-3, metric="dcg@5",
                                        method=method, seed=0)
        assert not (tmp_path / "c.db").exists()
    with pytest.raises(ValueError, match="`docs_per_query` or a `query_cost` > 0"):
        TwoStage()
    with pytest.raises(ValueError, match="`docs_per_query` must be a positive number"):
        TwoStage(docs_per_query=0)


def _run(fn, pool, rankings, labels, **kw):
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    if fn is ar.compare_many:
        return fn(pool, list(rankings[:-1]), rankings[-1], pool.probs, lab, **kw)
    return fn(pool, *rankings, pool.probs, lab, **kw)


@pytest.mark.statistical
@pytest.mark.parametrize("method,metric,n_systems,budget", [("doc_uniform", "p@3", 1, 30.0),
                                                            ("doc_hh", "dcg@5", 2, 16.0),
                                                            ("two_stage", "dcg@5", 3, 16.0),
                                                            ("doc_ubis", "dcg@5", 2, 48.0)])
def test_new_methods_through_the_public_api_are_unbiased_with_nominal_coverage(method, metric, n_systems, budget):
    """Labels redrawn from the model in every repetition; the run goes through ar.estimate / ar.compare /
    ar.compare_many.  (The 2000-repetition design-based checks are in tests/design/test_document_methods.py.)"""
    pool, a, b, rng = _problem(5, n_queries=120)
    c = rank_by_scores(pool.probs @ np.arange(3) + 2 * rng.random(pool.probs.shape[0]), pool.offsets)
    rankings, fn = {1: ((a,), ar.estimate), 2: ((a, b), ar.compare), 3: ((a, c, b), ar.compare_many)}[n_systems]
    reps = stat_reps(200)
    err, se, n = np.empty(reps), np.empty(reps), np.empty(reps)
    for i in range(reps):
        labels = pool.sample_labels(rng)
        res = _run(fn, pool, rankings, labels, budget=budget, metric=metric, method=method, rng=rng)
        point = {1: "estimate", 2: "difference"}.get(n_systems)
        est, s = (getattr(res, point), res.standard_error) if point else (res.differences[0], res.standard_errors[0])
        truth = _truth(pool, labels, rankings[::2] if n_systems == 3 else rankings, metric)
        err[i], se[i], n[i] = est - truth, s, res.n_draws
    assert n.min() >= 50
    assert abs(err.mean()) <= 3 * err.std(ddof=1) / np.sqrt(reps)
    assert np.mean(se**2) == pytest.approx(err.var(ddof=1), rel=0.15 if reps >= 2000 else 0.3)
    cover = np.mean(np.abs(err) <= 1.959964 * se)
    lo, hi = (0.93, 0.97) if reps >= 2000 else (0.88, 0.99)
    assert lo <= cover <= hi, cover
