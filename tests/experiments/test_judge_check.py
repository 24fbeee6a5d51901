"""benchmarks/document_level/judge_check.py: the simulated judges are what its docstring says."""

from pathlib import Path

import numpy as np
import pytest

from activerank.judges.report import weighted_kappa

from ..conftest import load_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "document_level"


@pytest.fixture(scope="module")
def jc():
    return load_benchmark(BENCH, "judge_check.py", "_bench_judge_check")  # imports run, common, registered


FREQ = np.array([0.7, 0.2, 0.1])


def _pool(n_queries=400, per_query=20, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.choice(3, size=n_queries * per_query, p=FREQ)
    return labels, np.arange(0, n_queries * per_query + 1, per_query)


def test_neighbour_matrix_moves_one_grade_among_valid_neighbours(jc):
    M = jc.neighbour_matrix(0.6, 3)
    assert np.allclose(M.sum(axis=1), 1.0)
    assert np.allclose(M, [[0.6, 0.4, 0.0], [0.2, 0.6, 0.2], [0.0, 0.4, 0.6]])


@pytest.mark.parametrize("kappa", [0.2, 0.4, 0.6, 0.8])
def test_solved_a_reaches_the_kappa_in_population_and_in_a_sample(jc, kappa):
    a = jc.solve_a(kappa, FREQ)
    assert 0.0 <= a <= 1.0 and jc.population_kappa(a, FREQ) == pytest.approx(kappa, abs=1e-8)
    labels, _ = _pool()
    z = jc.neighbour_grades(labels, a, 3, np.random.default_rng(1))
    assert set(np.unique(z)) <= {0, 1, 2} and (np.abs(z - labels) <= 1).all()
    assert weighted_kappa(z, labels, n_levels=3) == pytest.approx(kappa, abs=0.03)


def test_an_unreachable_kappa_is_nan(jc):
    # five grades: one grade off is a small quadratic error, kappa stays high even at a = 0
    freq = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    assert jc.population_kappa(0.0, freq) > 0.2 and np.isnan(jc.solve_a(0.2, freq))


def test_biased_judge_over_grades_half_the_queries_capped_at_the_top(jc):
    labels, offsets = _pool()
    a = {"kappa_0.6": jc.solve_a(0.6, FREQ)}
    base = jc.neighbour_grades(labels, a["kappa_0.6"], 3, np.random.default_rng(5))
    z = jc.simulate_judge("biased", labels, offsets, a=a, freq=FREQ, hard_probs=None, rng=np.random.default_rng(5))
    # the same draws as the kappa-0.6 judge, then one grade up (capped) on every row of half of the queries
    q = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    up = np.minimum(base + 1, 2)
    biased = np.array([(z[q == i] == up[q == i]).all() for i in range(offsets.size - 1)])
    plain = np.array([(z[q == i] == base[q == i]).all() for i in range(offsets.size - 1)])
    assert (biased | plain).all() and not (biased & plain).any()
    assert biased.sum() == (offsets.size - 1) // 2


def test_easy_hard_judge_is_right_on_easy_queries_only(jc):
    labels, offsets = _pool(seed=2)
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3), size=labels.size)
    hard = jc.hard_queries(labels, probs, offsets)
    assert hard.sum() == (offsets.size - 1) // 2
    z = jc.simulate_judge("easy_hard", labels, offsets, a={}, freq=FREQ, hard_probs=probs, rng=rng)
    rows = jc.query_rows(offsets, np.flatnonzero(hard))
    assert (z[~rows] == labels[~rows]).all()
    assert abs(weighted_kappa(z[rows], labels[rows], n_levels=3)) < 0.05


def test_useless_judge_is_independent_of_the_truth(jc):
    labels, offsets = _pool(seed=4)
    z = jc.simulate_judge("useless", labels, offsets, a={}, freq=FREQ, hard_probs=None, rng=np.random.default_rng(6))
    assert abs(weighted_kappa(z, labels, n_levels=3)) < 0.03
    assert np.allclose(np.bincount(z, minlength=3) / z.size, FREQ, atol=0.02)
