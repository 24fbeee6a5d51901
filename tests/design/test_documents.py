import itertools

import numpy as np
import pytest

from activerank.design.cancellation import changeable_documents
from activerank.design.kinds.documents import (
    PoissonDesign,
    document_target,
    draw_poisson,
    draw_uniform,
    inclusion_probabilities,
    sampling_distribution,
    scenario_contrasts,
    uniform_inclusion,
    unit_scores,
    waterfill,
)
from activerank.metrics import pool_metric_values
from activerank.relevance.rankers import rank_by_scores, remove_fraction
from tests.conftest import SyntheticPool


def _systems(pool, rng, s=3):
    base = pool.probs @ np.array([0.0, 1.0, 3.0])
    out = [rank_by_scores(base + rng.normal(0, sd, base.size), pool.offsets) for sd in (0.0, 0.3, 0.6, 1.0)[:s]]
    return out


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(7)
    pool = SyntheticPool(rng, n_queries=80)
    return pool, _systems(pool, rng), pool.sample_labels(rng)


@pytest.mark.parametrize("kind", ["single", "difference", "baseline", "rank"])
@pytest.mark.parametrize("metric", ["dcg@5", "dcg"])
def test_target_value_equals_metric_contrasts(setup, kind, metric):
    pool, systems, labels = setup
    s = {"single": 1, "difference": 2}.get(kind, 3)
    systems = systems[:s]
    n_docs = pool.probs.shape[0]
    t = document_target(systems, n_docs=n_docs, metric=metric, n_grades=3, contrasts=kind)
    R = np.array([pool_metric_values(labels, r, metric=metric, ymax=2).mean() for r in systems])
    np.testing.assert_allclose(t.value(labels), scenario_contrasts(kind, s) @ R, rtol=1e-12, atol=1e-12)
    # units are the pooled (query, row) pairs, sorted by query then row
    assert np.all(np.diff(t.query * n_docs + t.rows) > 0)


def test_cancelled_units_have_exactly_zero_weight(setup):
    pool, systems, _ = setup
    n_docs = pool.probs.shape[0]
    upd = remove_fraction(systems[0], 0.2, rng=1)
    for ranks, kind in (([systems[0], upd], None), (systems, "rank"), (systems, "baseline")):
        t = document_target(ranks, n_docs=n_docs, metric="dcg@5", n_grades=3, contrasts=kind)
        cs = changeable_documents(ranks, n_docs=n_docs, metric="dcg@5")
        keys_t = set((t.query[t.matters] * n_docs + t.rows[t.matters]).tolist())
        keys_c = set((cs.rows.query_index() * n_docs + cs.rows.items).tolist())
        assert keys_t == keys_c
        assert np.all(t.weights[~t.matters] == 0.0)


def test_discounts_and_gains_for_other_additive_metrics():
    ranks = [[[0, 1, 2]], [[2, 0, 1]]]
    t = document_target(ranks, n_docs=3, discounts=np.full(2, 0.5), gains=[0, 1, 1])  # P@2, binary
    lab = np.array([1, 0, 2])
    p_a = (1 + 0) / 2
    p_b = (1 + 1) / 2
    np.testing.assert_allclose(t.value(lab), [p_a - p_b])
    rbp = 0.5 * 0.5 ** np.arange(3)
    t = document_target(ranks[:1], n_docs=3, discounts=rbp, gains=[0, 1, 1])
    np.testing.assert_allclose(t.value(lab), [rbp[0] * 1 + rbp[1] * 0 + rbp[2] * 1])


def test_query_weights_enter_the_weights():
    t = document_target([[[0], [1]]], n_docs=2, discounts=[1.0], gains=[0, 1], query_weights=[3, 1])
    np.testing.assert_allclose(t.weights.ravel(), [0.75, 0.25])


@pytest.mark.parametrize("seed", range(10))
def test_waterfill_matches_bisection(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    s = rng.exponential(size=n) * (rng.random(n) < 0.8)
    c = rng.uniform(0.5, 2.0, n)
    total = float(c[s > 0].sum())
    if total == 0:
        return
    B = float(rng.uniform(0.05, 1.2) * total)
    pi = waterfill(s, c, B)
    assert np.all((pi >= 0) & (pi <= 1))
    assert np.all(pi[s == 0] == 0)
    assert float(pi @ c) == pytest.approx(min(B, total), rel=1e-9)
    lo, hi = 0.0, 1e12
    for _ in range(200):
        k = (lo + hi) / 2
        lo, hi = (k, hi) if np.minimum(1, k * s) @ c < B else (lo, k)
    np.testing.assert_allclose(pi, np.minimum(1, lo * s), atol=1e-8)


def test_waterfill_segments():
    s = np.array([5.0, 1.0, 1.0, 2.0, 2.0])
    pi = waterfill(s, np.ones(5), np.array([2.0, 1.0]), offsets=np.array([0, 3, 5]))
    np.testing.assert_allclose(pi, [1.0, 0.5, 0.5, 0.5, 0.5])


def test_sampling_distribution_is_schnabel_qstar(setup):
    pool, systems, _ = setup
    n_docs = pool.probs.shape[0]
    for kind, ranks in (("single", systems[:1]), ("difference", systems[:2]), ("baseline", systems),
                        ("rank", systems)):
        t = document_target(ranks, n_docs=n_docs, metric="dcg@5", n_grades=3, contrasts=kind)
        mom = t.moments(pool.probs)
        Q = sampling_distribution(t, pool.probs, utility="mean", defensive=0.0)
        want = np.sqrt((t.weights**2).sum(1)) * mom.mean
        np.testing.assert_allclose(Q, want / want.sum(), rtol=1e-12)
        Qd = sampling_distribution(t, pool.probs, defensive=0.3)
        assert Qd.sum() == pytest.approx(1.0)
        assert np.all(Qd[t.matters] > 0) and np.all(Qd[~t.matters] == 0)
    # pair Q* of Eq. 9: proportional to u~ |P(S) - P(S')|
    t = document_target(systems[:2], n_docs=n_docs, metric="dcg@5", n_grades=3)
    Q = sampling_distribution(t, pool.probs, utility="rms", defensive=0.0)
    want = np.abs(t.weights[:, 0]) * np.sqrt(t.moments(pool.probs).second)
    np.testing.assert_allclose(Q, want / want.sum(), rtol=1e-12)


def test_costs_enter_as_inverse_sqrt(setup):
    pool, systems, _ = setup
    n_docs = pool.probs.shape[0]
    t = document_target(systems[:1], n_docs=n_docs, metric="dcg@5", n_grades=3)
    c = np.log(pool.doc_length)
    a = unit_scores(t, pool.probs, costs=c)
    b = unit_scores(t, pool.probs)
    np.testing.assert_allclose(a, b / np.sqrt(c[t.rows]))


def test_inclusion_probabilities_budget_support_and_reuse(setup):
    pool, systems, _ = setup
    n_docs = pool.probs.shape[0]
    t = document_target(systems[:2], n_docs=n_docs, metric="dcg@5", n_grades=3)
    d = inclusion_probabilities(t, pool.probs, 40.0)
    assert d.budget == pytest.approx(40.0) and d.expected_size == pytest.approx(40.0)
    assert np.all(d.pi[t.matters] > 0) and np.all(d.pi[~t.matters] == 0)
    judged = np.flatnonzero(t.matters)[:10]
    d2 = inclusion_probabilities(t, pool.probs, 40.0, judged=t.rows[judged])
    assert np.all(d2.pi[judged] == 1.0) and np.all(d2.costs[judged] == 0.0)
    assert d2.budget == pytest.approx(40.0)
    big = inclusion_probabilities(t, pool.probs, 1e9)
    assert np.all(big.pi[t.matters] == 1.0)


def _subsets(n):
    return np.array(list(itertools.product([0, 1], repeat=n)), dtype=bool)


def test_inclusion_probabilities_by_enumeration():
    """Poisson: P(z in S) summed over all 2^n samples equals pi; SRSWOR: n/N; with replacement:
    1 - (1 - Q)^n over all n-draw sequences."""
    rng = np.random.default_rng(0)
    pi = rng.uniform(0.05, 1.0, 6)
    S = _subsets(6)
    prob = np.prod(np.where(S, pi, 1 - pi), axis=1)
    assert prob.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(prob @ S, pi, rtol=1e-12)
    # the simulated draws follow the same probabilities
    d = PoissonDesign(pi=pi, costs=np.ones(6), budget=float(pi.sum()), kind="poisson")
    np.testing.assert_allclose(draw_poisson(d, 0, n_reps=40000).mean(0), pi, atol=0.01)
    # SRSWOR: every size-n subset equally likely
    t = document_target([[[0, 1, 2, 3, 4]]], n_docs=5, discounts=np.ones(5), gains=[0, 1])
    du = uniform_inclusion(t, 2.0)
    np.testing.assert_allclose(du.pi, 0.4)
    subsets = [set(c) for c in itertools.combinations(range(5), 2)]
    np.testing.assert_allclose([np.mean([z in s for s in subsets]) for z in range(5)], du.pi)
    masks = draw_uniform(du, 1, n_reps=20000)
    assert np.all(masks.sum(1) == 2)
    np.testing.assert_allclose(masks.mean(0), 0.4, atol=0.015)
    # with replacement, n = 3 draws
    Q = rng.dirichlet(np.ones(4))
    seqs = np.array(list(itertools.product(range(4), repeat=3)))
    p_seq = np.prod(Q[seqs], axis=1)
    incl = np.array([(p_seq * np.any(seqs == z, axis=1)).sum() for z in range(4)])
    np.testing.assert_allclose(incl, 1 - (1 - Q) ** 3, rtol=1e-12)


def test_bad_input_messages(setup):
    pool, systems, _ = setup
    n_docs = pool.probs.shape[0]
    with pytest.raises(ValueError, match="not linear in per-document utilities"):
        document_target(systems[:1], n_docs=n_docs, metric="err@5", n_grades=3)
    with pytest.raises(ValueError, match="exactly one of"):
        document_target(systems[:1], n_docs=n_docs, n_grades=3)
    with pytest.raises(ValueError, match="`gains`"):
        document_target(systems[:1], n_docs=n_docs, discounts=[1.0])
    with pytest.raises(ValueError, match="`n_grades`"):
        document_target(systems[:1], n_docs=n_docs, metric="dcg@3")
    with pytest.raises(ValueError, match="`contrasts` is required"):
        document_target(systems, n_docs=n_docs, metric="dcg@3", n_grades=3)
    with pytest.raises(ValueError, match="shape"):
        document_target(systems[:2], n_docs=n_docs, metric="dcg@3", n_grades=3, contrasts=[[1, 0, -1]])
    t = document_target(systems[:2], n_docs=n_docs, metric="dcg@5", n_grades=3)
    outside = int(np.setdiff1d(np.arange(n_docs), t.rows)[0])
    with pytest.raises(ValueError, match=f"document row {outside}, which is not in the pool"):
        t.unit_index([int(t.rows[0]), outside])
    with pytest.raises(ValueError, match="too small"):
        inclusion_probabilities(t, pool.probs, 1.0)
    with pytest.raises(ValueError, match="positive finite"):
        inclusion_probabilities(t, pool.probs, -1.0)
    with pytest.raises(ValueError, match="`utility`"):
        sampling_distribution(t, pool.probs, utility="median")
    with pytest.raises(ValueError, match=r"`costs` must be finite and > 0; unit 0"):
        sampling_distribution(t, pool.probs, costs=np.zeros(t.n_units))
    with pytest.raises(ValueError, match="one column per grade"):
        t.moments(pool.probs[:, :2] / pool.probs[:, :2].sum(1, keepdims=True))
    same = document_target([systems[0], systems[0]], n_docs=n_docs, metric="dcg@5", n_grades=3)
    with pytest.raises(ValueError, match="nothing to sample"):
        sampling_distribution(same, pool.probs)
