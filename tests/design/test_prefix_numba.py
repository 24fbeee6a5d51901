"""The ``prefix`` design's numba twins (the ``fast`` extra) equal the NumPy walk and planning sums.

They run only where numba is installed; CI runs the suite a second time with it (``.ci/run``).
"""

import importlib.util

import numpy as np
import pytest

import activerank.metrics.moments as mom
from activerank.design.kinds import prefix as pf
from activerank.design.cancellation import changeable_documents
from activerank.metrics import parse_metric
from activerank.relevance.rankers import rank_by_scores, remove_fraction

from ..engine.test_documents import _problem

needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba not installed (the `fast` extra)")

CASES = {
    "one": (1, np.ones((1, 1))),
    "difference": (2, np.array([[1.0, -1.0]])),
    "baseline": (3, np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])),
}


def _case(name, metric, seed=0, n_queries=60):
    pool, a, b, rng = _problem(seed, n_queries=n_queries)
    base = pool.probs @ np.arange(pool.n_grades)
    c = rank_by_scores(base + 3.0 * rng.random(base.size), pool.offsets)
    s, C = CASES[name]
    m = parse_metric(metric)
    systems = [r.truncate(m.k) for r in (a, b, c)[:s]]
    keep = None
    if name == "difference":  # an index update: changeable documents only, ragged lists
        systems[1] = remove_fraction(a, 0.3, rng).truncate(m.k)
        keep = changeable_documents(systems, n_docs=pool.probs.shape[0], metric=metric).rows
    doc_costs = rng.uniform(0.5, 2.0, pool.probs.shape[0])
    layout = pf.prefix_layout(systems, C, m, pool.n_grades, pool.probs.shape[0], np.ones(a.n_queries), doc_costs,
                              keep=keep)
    return pool, layout, rng


@needs_numba
@pytest.mark.parametrize("order", ["adaptive", "rank"])
@pytest.mark.parametrize("metric", ["err@10", "rr@5"])
@pytest.mark.parametrize("name", list(CASES))
def test_walk_twin_equals_numpy(name, metric, order, monkeypatch):
    pool, layout, rng = _case(name, metric)
    N = layout.n_queries
    paths = np.repeat(np.arange(N), 5)
    _, sd = layout.document_values(pool.probs, paths)
    f = layout.values[rng.integers(0, pool.n_grades, (paths.size, layout.rows.shape[1]))]
    out = {}
    for backend in ("numpy", "numba"):
        monkeypatch.setenv(mom.BACKEND_ENV, backend)
        out[backend] = pf.judging_paths(layout, paths, layout.system_values(pool.probs), sd, f, order=order)
    (d0, g0, s0), (d1, g1, s1) = out["numpy"], out["numba"]
    assert (d0 >= 0).any() and np.array_equal(d0, d1)
    np.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(s1, s0)  # the same summation order: equal bit for bit


@needs_numba
@pytest.mark.parametrize("order", ["adaptive", "rank"])
@pytest.mark.parametrize("name", list(CASES))
def test_planning_twin_equals_numpy(name, order, monkeypatch):
    pool, layout, _ = _case(name, "err@10", seed=1)
    N = layout.n_queries
    p = np.full(N, 1.0 / N)
    variance = np.where(layout.mask.any(1), 0.01 + 0.01 * np.arange(N) / N, 0.0)
    live = variance > 0
    plans = {}
    for backend in ("numpy", "numba"):
        monkeypatch.setenv(mom.BACKEND_ENV, backend)
        plans[backend] = pf.plan_prefix(layout, pool.probs, p, variance, live, 0.3 * live.sum(),
                                        np.random.default_rng(7), order=order, chunk=17)
    a, b = plans["numpy"], plans["numba"]
    assert a.tau[live].max() > 0  # the grid was used, not a census
    for field in ("floor", "tau", "pi", "expected_cost", "within_variance"):
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), rtol=1e-10, atol=1e-14, err_msg=field)
    assert b.budget == pytest.approx(a.budget, rel=1e-10)


def test_small_calls_stay_on_numpy(monkeypatch):
    monkeypatch.setenv(mom.BACKEND_ENV, "auto")
    assert pf.layout._compiled(100) is None
    monkeypatch.setenv(mom.BACKEND_ENV, "numpy")
    assert pf.layout._compiled(1 << 30) is None


@needs_numba
def test_exact_ties_break_the_same_way(monkeypatch):
    # constant probabilities and systems relative to their mean (contrasts 1 - 1/s): many exactly tied scores,
    # which a different summation order would break differently
    from activerank.ragged import Rankings

    m = parse_metric("err@5")
    rng = np.random.default_rng(0)
    C = np.eye(3) - 1.0 / 3
    n_docs = 6
    P = np.tile([0.5, 0.3, 0.2], (n_docs, 1))
    checked = 0
    for _ in range(300):
        systems = [Rankings(rng.permutation(n_docs)[:5].astype(np.int64), np.array([0, 5])) for _ in range(3)]
        layout = pf.prefix_layout(systems, C, m, 3, n_docs, np.ones(1), np.ones(n_docs))
        paths = np.zeros(4, dtype=np.int64)
        _, sd = layout.document_values(P, paths)
        f = layout.values[rng.integers(0, 3, (4, layout.rows.shape[1]))]
        out = {}
        for backend in ("numpy", "numba"):
            monkeypatch.setenv(mom.BACKEND_ENV, backend)
            out[backend] = pf.judging_paths(layout, paths, layout.system_values(P), sd, f)
        assert np.array_equal(out["numpy"][0], out["numba"][0])
        assert np.array_equal(out["numpy"][2], out["numba"][2])  # scores equal bit for bit
        checked += 1
    assert checked == 300
