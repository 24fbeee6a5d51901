import itertools

import numpy as np
import pytest

from activerank.design.kinds.documents import (
    PoissonDesign,
    document_target,
    draw_poisson,
    draw_uniform,
    inclusion_probabilities,
    sampling_distribution,
    uniform_inclusion,
)
from activerank.design.kinds.two_stage import draw_two_stage, two_stage_design
from activerank.design.kinds.documents import (
    DocumentEstimate,
    census_snis,
    hansen_hurwitz,
    horvitz_thompson,
    poisson_variance,
    ratio_estimate,
)
from activerank.design.kinds.documents.estimators import _ht_kernel, _srs_kernel
from activerank.design.kinds.two_stage import two_stage_estimate, two_stage_variance
from activerank.relevance.rankers import rank_by_scores, remove_fraction
from tests.conftest import SyntheticPool, stat_reps

# --------------------------------------------------------------------------- tiny exact cases

TINY_RANKS = [[[0, 1, 2], [3, 4]], [[1, 0, 2], [4, 3]]]
TINY_PROBS = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8],
                       [0.3, 0.3, 0.4], [0.5, 0.4, 0.1]])
TINY_LABELS = np.array([2, 0, 1, 1, 2])


def _tiny(kind="single"):
    ranks = TINY_RANKS[:1] if kind == "single" else TINY_RANKS
    # DCG over the top 3 with a weighted query population
    return document_target(ranks, n_docs=5, metric="dcg@3", n_grades=3, query_weights=[0.7, 0.3])


def _exact_moments(outcomes):
    """outcomes: list of (probability, estimate vector, covariance estimate)."""
    p = np.array([o[0] for o in outcomes])
    est = np.array([o[1] for o in outcomes])
    cov = np.array([o[2] for o in outcomes])
    assert p.sum() == pytest.approx(1.0)
    mean = p @ est
    var = np.einsum("i,ij,ik->jk", p, est - mean, est - mean)
    return mean, var, np.einsum("i,ijk->jk", p, cov)


@pytest.mark.parametrize("kind", ["single", "pair"])
@pytest.mark.parametrize("model", [False, True])
def test_poisson_ht_exact_by_enumeration(kind, model):
    t = _tiny(kind)
    T = t.value(TINY_LABELS)
    pi = np.linspace(0.3, 0.9, t.n_units)
    d = PoissonDesign(pi=pi, costs=np.ones(t.n_units), budget=float(pi.sum()), kind="poisson")
    probs = TINY_PROBS if model else None
    outcomes = []
    for S in itertools.product([0, 1], repeat=t.n_units):
        S = np.array(S, dtype=bool)
        pr = float(np.prod(np.where(S, pi, 1 - pi)))
        r = horvitz_thompson(t, d, t.rows[S], TINY_LABELS[t.rows[S]], probs=probs)
        outcomes.append((pr, r.estimate, r.covariance))
    mean, var, mean_cov = _exact_moments(outcomes)
    np.testing.assert_allclose(mean, T, rtol=1e-12)  # unbiased
    u = t.utilities(TINY_LABELS[t.rows])
    m = t.moments(TINY_PROBS).mean if model else None
    np.testing.assert_allclose(var, poisson_variance(t, d, u, model_means=m), rtol=1e-10)  # variance formula
    np.testing.assert_allclose(mean_cov, var, rtol=1e-10)  # unbiased variance estimator


@pytest.mark.parametrize("model", [False, True])
def test_srswor_exact_by_enumeration(model):
    t = _tiny("pair")
    T = t.value(TINY_LABELS)
    judged = t.rows[:1]
    d = uniform_inclusion(t, 2.0, judged=judged)
    free = np.flatnonzero(d.pi < 1)
    outcomes = []
    combos = list(itertools.combinations(free, 2))
    for c in combos:
        S = np.r_[0, c]
        r = horvitz_thompson(t, d, t.rows[S], TINY_LABELS[t.rows[S]], probs=TINY_PROBS if model else None)
        outcomes.append((1 / len(combos), r.estimate, r.covariance))
    mean, var, mean_cov = _exact_moments(outcomes)
    np.testing.assert_allclose(mean, T, rtol=1e-12)
    u = t.utilities(TINY_LABELS[t.rows])
    np.testing.assert_allclose(var, poisson_variance(t, d, u, model_means=t.moments(TINY_PROBS).mean if model
                                                     else None), rtol=1e-10)
    np.testing.assert_allclose(mean_cov, var, rtol=1e-10)


@pytest.mark.parametrize("model", [False, True])
def test_hansen_hurwitz_exact_by_enumeration(model):
    t = _tiny("pair")
    T = t.value(TINY_LABELS)
    Q = sampling_distribution(t, TINY_PROBS, defensive=0.3)
    live = np.flatnonzero(Q > 0)
    u = t.utilities(TINY_LABELS[t.rows])
    m = t.moments(TINY_PROBS).mean if model else np.zeros(t.n_units)
    outcomes = []
    for pair in itertools.product(live, repeat=2):
        pair = np.array(pair)
        r = hansen_hurwitz(t, Q, t.rows[pair], TINY_LABELS[t.rows[pair]], probs=TINY_PROBS if model else None)
        outcomes.append((float(np.prod(Q[pair])), r.estimate, r.covariance))
    mean, var, mean_cov = _exact_moments(outcomes)
    np.testing.assert_allclose(mean, T, rtol=1e-12)
    W, e = t.weights[live], (u - m)[live]
    M = t.weights.T @ m
    per_draw = np.einsum("i,ij,ik->jk", e**2 / Q[live], W, W) - np.outer(T - M, T - M)
    np.testing.assert_allclose(var, per_draw / 2, rtol=1e-10)
    np.testing.assert_allclose(mean_cov, var, rtol=1e-10)


def _two_stage_outcomes(t, d):
    """All (probability, z - M) outcomes of one draw: a query and a subset of its units."""
    out = []
    u = t.utilities(TINY_LABELS[t.rows])
    for x in range(t.n_queries):
        units = np.arange(t.offsets[x], t.offsets[x + 1])
        for S in itertools.product([0, 1], repeat=units.size):
            S = np.array(S, dtype=bool)
            pr = d.q[x] * float(np.prod(np.where(S, d.pi[units], 1 - d.pi[units])))
            if pr == 0:
                continue
            out.append((pr, x, units[S]))
    return out, u


@pytest.mark.parametrize("cv", [True, False])
def test_two_stage_exact_by_enumeration(cv):
    t = _tiny("pair")
    T = t.value(TINY_LABELS)
    d = two_stage_design(t, TINY_PROBS, docs_per_query=1.2, control_variate=cv, defensive=0.2)
    one, u = _two_stage_outcomes(t, d)
    outcomes = []
    for (p1, x1, s1), (p2, x2, s2) in itertools.product(one, repeat=2):
        units = np.r_[s1, s2]
        ud = np.r_[np.zeros(s1.size, int), np.ones(s2.size, int)]
        r = two_stage_estimate(t, d, [x1, x2], ud, t.rows[units], TINY_LABELS[t.rows[units]])
        outcomes.append((p1 * p2, r.estimate, r.covariance))
    mean, var, mean_cov = _exact_moments(outcomes)
    np.testing.assert_allclose(mean, T, rtol=1e-12)
    b, w = two_stage_variance(t, d, u)
    np.testing.assert_allclose(np.trace(var), (b + w) / 2, rtol=1e-10)
    np.testing.assert_allclose(mean_cov, var, rtol=1e-10)
    # inclusion probability of a unit in one draw is q(x) pi(z), checked by enumeration
    incl = np.zeros(t.n_units)
    for p, x, s in one:
        incl[s] += p
    np.testing.assert_allclose(incl, d.q[t.query] * d.pi, rtol=1e-12)


# --------------------------------------------------------------------------- seeded simulations


@pytest.fixture(scope="module")
def sim():
    rng = np.random.default_rng(2024)
    pool = SyntheticPool(rng, n_queries=150, max_docs=12)
    base = pool.probs @ np.array([0.0, 1.0, 3.0])
    a = rank_by_scores(base + rng.normal(0, 0.5, base.size), pool.offsets)
    b = rank_by_scores(base + rng.normal(0, 0.5, base.size), pool.offsets)
    labels = pool.sample_labels(rng)
    return pool, a, b, labels


def _check(est, se, T, exact_var, *, label):
    est, se = np.asarray(est), np.asarray(se)
    n = est.shape[0]
    sd = est.std(axis=0, ddof=1)
    bias = est.mean(axis=0) - T
    assert np.all(np.abs(bias) <= 3 * sd / np.sqrt(n)), (label, bias, sd)
    ratio = sd**2 / exact_var
    assert np.all((ratio > 0.85) & (ratio < 1.15)), (label, ratio)
    vratio = (se**2).mean(axis=0) / exact_var
    assert np.all((vratio > 0.88) & (vratio < 1.12)), (label, vratio)
    cover = (np.abs(est - T) <= 1.959964 * se).mean(axis=0)
    assert np.all((cover >= 0.93) & (cover <= 0.97)), (label, cover)


@pytest.mark.statistical
@pytest.mark.parametrize("design", ["stat", "dyn", "uniform", "uniform_dyn"])
def test_without_replacement_designs_simulation(sim, design):
    pool, a, b, labels = sim
    n_docs = pool.probs.shape[0]
    t = document_target([a, b], n_docs=n_docs, metric="dcg@5", n_grades=3)
    T = t.value(labels)[0]
    u = t.utilities(labels[t.rows])
    probs = pool.probs if design in ("dyn", "uniform_dyn") else None
    if design.startswith("uniform"):
        d = uniform_inclusion(t, 300.0)
        masks = draw_uniform(d, 1, n_reps=stat_reps(2000))
    else:
        d = inclusion_probabilities(t, pool.probs, 120.0, utility="residual" if probs is not None else "rms")
        masks = draw_poisson(d, 1, n_reps=stat_reps(2000))
    assert masks.sum(1).min() >= 50
    m = t.moments(pool.probs).mean if probs is not None else np.zeros(t.n_units)
    exact = poisson_variance(t, d, u, model_means=m)[0, 0]
    # all repetitions through the batch kernel; the public estimator must agree on a subset
    M = t.weights.T @ m
    if design.startswith("uniform"):
        est, cov = _srs_kernel(t.weights, u - m, d.pi < 1, int(masks[0].sum()), masks.astype(float), M)
    else:
        est, cov = _ht_kernel(t.weights, u - m, d.pi, masks.astype(float), M)
    for i in range(10):
        r = horvitz_thompson(t, d, t.rows[masks[i]], labels[t.rows[masks[i]]], probs=probs)
        np.testing.assert_allclose(r.estimate, est[i], rtol=1e-10)
        np.testing.assert_allclose(r.covariance, cov[i], rtol=1e-8, atol=1e-15)
    _check(est[:, 0], np.sqrt(cov[:, 0, 0]), T, exact, label=design)


@pytest.mark.statistical
@pytest.mark.parametrize("model", [False, True])
def test_with_replacement_simulation(sim, model):
    pool, a, b, labels = sim
    n_docs = pool.probs.shape[0]
    t = document_target([a, b, remove_fraction(a, 0.2, rng=3)], n_docs=n_docs, metric="dcg@5", n_grades=3,
                        contrasts="baseline")
    T = t.value(labels)
    u = t.utilities(labels[t.rows])
    Q = sampling_distribution(t, pool.probs, utility="residual" if model else "rms")
    mm = t.moments(pool.probs).mean if model else np.zeros(t.n_units)
    live = Q > 0
    M = t.weights.T @ mm
    n = 100
    exact = (np.einsum("i,ij->j", (u - mm)[live] ** 2 / Q[live], t.weights[live] ** 2) - (T - M) ** 2) / n
    rng = np.random.default_rng(5)
    # vectorized and cheap: never below the 2000 runs the fixed 0.93-0.97 band of `_check` needs
    draws = rng.choice(t.n_units, size=(max(2000, stat_reps(2000)), n), p=Q)
    z = t.weights[draws] * ((u - mm)[draws] / Q[draws])[..., None]  # (reps, n, T)
    est = z.mean(axis=1) + M
    se = z.std(axis=1, ddof=1) / np.sqrt(n)
    for i in range(10):
        r = hansen_hurwitz(t, Q, t.rows[draws[i]], labels[t.rows[draws[i]]], probs=pool.probs if model else None)
        np.testing.assert_allclose(r.estimate, est[i], rtol=1e-10)
        np.testing.assert_allclose(r.standard_error, se[i], rtol=1e-8)
    _check(est, se, T, exact, label=f"hh model={model}")


@pytest.fixture(scope="module")
def sim_small():
    rng = np.random.default_rng(77)
    pool = SyntheticPool(rng, n_queries=60, max_docs=10)
    base = pool.probs @ np.array([0.0, 1.0, 3.0])
    a = rank_by_scores(base + rng.normal(0, 0.5, base.size), pool.offsets)
    b = rank_by_scores(base + rng.normal(0, 0.5, base.size), pool.offsets)
    return pool, a, b, pool.sample_labels(rng)


@pytest.mark.statistical
@pytest.mark.parametrize("variant", ["docs_per_query", "optimal"])
def test_two_stage_simulation(sim_small, variant):
    pool, a, b, labels = sim_small
    n_docs = pool.probs.shape[0]
    t = document_target([a, b], n_docs=n_docs, metric="dcg@5", n_grades=3)
    T = t.value(labels)[0]
    u = t.utilities(labels[t.rows])
    if variant == "optimal":
        d = two_stage_design(t, pool.probs, query_cost=2.0)
    else:
        d = two_stage_design(t, pool.probs, docs_per_query=2.0)
    bw = two_stage_variance(t, d, u)
    rng = np.random.default_rng(9)
    ests, ses, nd, nj = [], [], [], []
    budget = 240.0 if variant == "optimal" else 100.0
    for _ in range(stat_reps(2000)):
        plan = draw_two_stage(d, t, budget, rng)
        r = two_stage_estimate(t, d, plan.draw_query, plan.unit_draw, t.rows[plan.unit], labels[t.rows[plan.unit]])
        ests.append(r.estimate[0])
        ses.append(r.standard_error[0])
        nd.append(plan.n_draws)
        nj.append(plan.new_unit.sum())
        assert plan.cost_spent <= budget + 1e-9
    nd = np.asarray(nd)
    # random n (budget stop): the variance is E[(b + w) / n] to first order
    exact = (bw[0] + bw[1]) * np.mean(1.0 / nd)
    assert min(nj) >= 50
    _check(ests, ses, T, exact, label=variant)


@pytest.mark.statistical
def test_ratio_estimator_bias_is_small(sim):
    """A normalized metric (relevant in the top 2 over relevant in the top 5) as a ratio of two linear
    targets: its O(1/n) bias stays well inside the SE and the delta-method variance matches."""
    pool, a, b, labels = sim
    n_docs = pool.probs.shape[0]
    k = 5
    t = document_target([a, a], n_docs=n_docs, discounts=np.r_[1.0, 1.0, np.zeros(k - 2)], gains=[0, 1, 1],
                        contrasts=[[1.0, 0.0], [0.0, 0.0]])
    # denominator target: every pooled top-k document
    W = t.weights.copy()
    W[:, 1] = 1.0 / t.n_queries
    t = type(t)(t.rows, t.query, W, t.gains, t.n_queries, t.n_docs, t.offsets)
    T = t.value(labels)
    d = inclusion_probabilities(t, pool.probs, 150.0, utility="rms")
    rng = np.random.default_rng(1)
    est, se = [], []
    for mask in draw_poisson(d, rng, n_reps=stat_reps(2000)):
        r = ratio_estimate(horvitz_thompson(t, d, t.rows[mask], labels[t.rows[mask]]))
        est.append(r.estimate[0])
        se.append(r.standard_error[0])
    est = np.array(est)
    sd = est.std(ddof=1)
    assert abs(est.mean() - T[0] / T[1]) < 0.1 * sd
    assert 0.85 < np.mean(np.square(se)) / sd**2 < 1.15


# --------------------------------------------------------------------------- errors


def test_bad_input_messages():
    t = _tiny("pair")
    d = PoissonDesign(pi=np.full(t.n_units, 0.5), costs=np.ones(t.n_units), budget=1.0, kind="poisson")
    with pytest.raises(ValueError, match="not in the pool"):
        horvitz_thompson(t, d, [0, 99], [1, 1])
    with pytest.raises(ValueError, match="more than once"):
        horvitz_thompson(t, d, [0, 0], [1, 1])
    with pytest.raises(ValueError, match="scale 0..2; entry 1 is 3"):
        horvitz_thompson(t, d, [0, 1], [1, 3])
    zero = PoissonDesign(pi=np.r_[0.0, np.full(t.n_units - 1, 0.5)], costs=np.ones(t.n_units), budget=1.0,
                         kind="poisson")
    with pytest.raises(ValueError, match=r"is 0 for document row 0 of query 0, whose label changes a target"):
        horvitz_thompson(t, zero, [1], [1])
    with pytest.raises(TypeError, match="PoissonDesign"):
        horvitz_thompson(t, object(), [0], [1])
    Q = sampling_distribution(t, TINY_PROBS)
    with pytest.raises(ValueError, match="at least 2 draws"):
        hansen_hurwitz(t, Q, [1], [1])
    with pytest.raises(ValueError, match="census units must have Q = 0"):
        hansen_hurwitz(t, Q, [1, 1], [0, 0], census_rows=[1], census_grades=[0])
    d2 = two_stage_design(t, TINY_PROBS, docs_per_query=1.0)
    with pytest.raises(ValueError, match="belongs to query 1, not to the query 0"):
        two_stage_estimate(t, d2, [0, 0], [0], [3], [1])
    with pytest.raises(ValueError, match="query_cost"):
        two_stage_design(t, TINY_PROBS)
    with pytest.raises(ValueError, match="below the cheapest query overhead"):
        draw_two_stage(two_stage_design(t, TINY_PROBS, query_cost=5.0), t, 1.0)
    with pytest.raises(ValueError, match="target index in"):
        ratio_estimate(horvitz_thompson(t, d, [0], [0]))
    two = DocumentEstimate(np.array([1.0, 0.0]), np.eye(2), 3, "stat")
    with pytest.raises(ValueError, match="undefined"):
        ratio_estimate(two)


def test_census_snis():
    est, se = census_snis([1.0, 3.0], [1.0, 1.0], 0.5)
    assert est == 1.0 and se == pytest.approx(0.5 * 1.0)


def test_within_query_ubis_exact_by_enumeration():
    from activerank.design.kinds.documents import draw_within_queries, within_query_distribution
    from activerank.design.kinds.documents import within_query_estimate

    t = _tiny("pair")
    T = t.value(TINY_LABELS)
    Qx = within_query_distribution(t, TINY_PROBS, eps=0.1)
    groups = [np.flatnonzero((t.query == x) & (Qx > 0)) for x in range(t.n_queries)]
    k = 2
    outcomes = []
    per_query = [list(itertools.product(g, repeat=k)) for g in groups]
    for combo in itertools.product(*per_query):
        draws = np.array(combo)
        pr = float(np.prod(Qx[draws]))
        r = within_query_estimate(t, Qx, t.rows[draws], TINY_LABELS[t.rows[draws]])
        outcomes.append((pr, r.estimate, r.covariance))
    mean, var, mean_cov = _exact_moments(outcomes)
    np.testing.assert_allclose(mean, T, rtol=1e-12)
    np.testing.assert_allclose(mean_cov, var, rtol=1e-10)
    # every unit's chance to be drawn at least once: 1 - (1 - Q_x)^k, by simulation of the sampler
    d = draw_within_queries(t, Qx, k, 0, n_reps=40000)
    hit = np.array([(d == z).any(axis=-1).any(axis=-1).mean() for z in range(t.n_units)])
    np.testing.assert_allclose(hit, 1 - (1 - Qx) ** k, atol=0.01)


def test_within_query_ubis_joint_covariance_exact_by_enumeration():
    """Two targets (each system's mean): the estimated covariance matrix is unbiased, off-diagonal too."""
    from activerank.design.kinds.documents import within_query_distribution
    from activerank.design.kinds.documents import within_query_estimate

    t = document_target(TINY_RANKS, n_docs=5, metric="dcg@3", n_grades=3, query_weights=[0.7, 0.3],
                        contrasts=np.eye(2))
    Qx = within_query_distribution(t, TINY_PROBS, eps=0.1)
    groups = [np.flatnonzero((t.query == x) & (Qx > 0)) for x in range(t.n_queries)]
    outcomes = []
    for k in (2, 3):
        outcomes = []
        for combo in itertools.product(*[list(itertools.product(g, repeat=k)) for g in groups]):
            draws = np.array(combo)
            r = within_query_estimate(t, Qx, t.rows[draws], TINY_LABELS[t.rows[draws]])
            outcomes.append((float(np.prod(Qx[draws])), r.estimate, r.covariance))
        mean, var, mean_cov = _exact_moments(outcomes)
        np.testing.assert_allclose(mean, t.value(TINY_LABELS), rtol=1e-12)
        np.testing.assert_allclose(mean_cov, var, rtol=1e-10, atol=1e-14)
        assert abs(var[0, 1]) > 1e-3  # the off-diagonal term is not trivially 0


def test_hansen_hurwitz_with_census_exact_by_enumeration():
    t = _tiny("pair")
    T = t.value(TINY_LABELS)
    census = t.rows[:2]
    Q = sampling_distribution(t, TINY_PROBS, judged=census, defensive=0.2)
    assert np.all(Q[:2] == 0)
    live = np.flatnonzero(Q > 0)
    outcomes = []
    for pair in itertools.product(live, repeat=2):
        pair = np.array(pair)
        r = hansen_hurwitz(t, Q, t.rows[pair], TINY_LABELS[t.rows[pair]], census_rows=census,
                           census_grades=TINY_LABELS[census])
        outcomes.append((float(np.prod(Q[pair])), r.estimate, r.covariance))
    mean, var, mean_cov = _exact_moments(outcomes)
    np.testing.assert_allclose(mean, T, rtol=1e-12)
    np.testing.assert_allclose(mean_cov, var, rtol=1e-10)


def _ap(rel_ranked, R):
    hits = np.cumsum(rel_ranked)
    k = np.arange(1, rel_ranked.size + 1)
    return float(np.sum(rel_ranked * hits / k) / R) if R else 0.0


def test_stat_ap_numerator_and_denominator_exact_by_enumeration():
    from activerank.design.kinds.documents import stat_ap
    from activerank.ragged import Rankings

    ranking = Rankings.from_list([[2, 0, 3], [5, 4]])
    pool = Rankings.from_list([[0, 1, 2, 3], [4, 5, 6]])
    grades = np.array([1, 2, 0, 1, 1, 0, 2])
    pi = np.linspace(0.35, 0.95, 7)
    rel = (grades >= 1).astype(float)
    N_true = [sum(rel[r[i]] * rel[r[: i + 1]].sum() / (i + 1) for i in range(r.size)) for r in ranking.to_list()]
    R_true = [rel[p].sum() for p in pool.to_list()]
    EN, ER = np.zeros(2), np.zeros(2)
    for S in itertools.product([0, 1], repeat=7):
        S = np.array(S, dtype=bool)
        pr = float(np.prod(np.where(S, pi, 1 - pi)))
        rows = np.flatnonzero(S)
        res = stat_ap(ranking, pool, pi, rows, grades[rows])
        EN += pr * res.numerator
        ER += pr * res.denominator
    np.testing.assert_allclose(EN, N_true, rtol=1e-12)
    np.testing.assert_allclose(ER, R_true, rtol=1e-12)
    full = stat_ap(ranking, pool, np.ones(7), np.arange(7), grades)
    np.testing.assert_allclose(full.per_query, [_ap(rel[r], R) for r, R in zip(ranking.to_list(), R_true)])
    with pytest.raises(ValueError, match="not in the pool"):
        stat_ap(ranking, Rankings.from_list([[0, 1, 2], [4, 5]]), pi, [], [])
    with pytest.raises(ValueError, match="is 0 for pooled document row 1"):
        stat_ap(ranking, pool, np.r_[1.0, 0.0, np.ones(5)], [], [])


def test_expected_poisson_variance_is_the_model_average_of_the_exact_variance():
    from activerank.design.kinds.documents import expected_poisson_variance

    t = _tiny("pair")
    d = PoissonDesign(pi=np.linspace(0.3, 0.9, t.n_units), costs=np.ones(t.n_units), budget=3.0, kind="poisson")
    m = t.moments(TINY_PROBS).mean
    # average the exact variance over every label vector, weighted by the model
    total = 0.0
    for lab in itertools.product(range(3), repeat=5):
        lab = np.array(lab)
        pr = float(np.prod(TINY_PROBS[np.arange(5), lab]))
        total += pr * poisson_variance(t, d, t.utilities(lab[t.rows]), model_means=m)[0, 0]
    assert expected_poisson_variance(t, d, TINY_PROBS) == pytest.approx(total, rel=1e-12)
