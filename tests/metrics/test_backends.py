"""Kernel backends: selection rules, and numba (the ``fast`` extra) equal to NumPy to 1e-12.

The equality tests run only where numba is installed; CI runs the suite a
second time with it (``.ci/run``).
"""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import activerank as ar
import activerank.metrics.moments as mom

from .._reference import random_probs

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed (the `fast` extra)")

SINGLE = ("mean", "second_moment", "variance")
PAIR = ("mean_a", "mean_b", "second_a", "second_b", "cross")


def test_import_does_not_load_numba():
    code = ("import sys, activerank, activerank.metrics.moments, activerank.design.sampling; "
            "import activerank.design.draws; print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_backend_selection(monkeypatch):
    monkeypatch.delenv(mom.BACKEND_ENV, raising=False)
    assert mom.kernel_backend("numpy") == "numpy"
    # small calls stay on NumPy under "auto" whatever is installed
    assert mom.kernel_backend("auto", n_entries=10) == "numpy"
    assert mom.kernel_backend(None, n_entries=10) == "numpy"
    monkeypatch.setenv(mom.BACKEND_ENV, "numpy")
    assert mom.kernel_backend(None) == "numpy"
    monkeypatch.setenv(mom.BACKEND_ENV, "fortran")
    with pytest.raises(ValueError, match="`environment variable ACTIVERANK_KERNELS` must be one of"):
        mom.kernel_backend(None)
    with pytest.raises(ValueError, match=r"`backend` must be one of \['auto', 'numpy', 'numba'\]"):
        mom.kernel_backend("fortran")
    with pytest.raises(ValueError, match="`backend` must be one of"):
        ar.pool_moments([[0.5, 0.5]], [[0]], metric="err", backend="fortran")


def test_missing_numba(monkeypatch):
    monkeypatch.setattr(mom, "_NUMBA", ImportError("No module named 'numba'"))
    assert mom.kernel_backend("auto") == "numpy"  # auto falls back quietly
    with pytest.raises(ImportError, match=r"needs numba \(`pip install activerank\[fast\]`\)"):
        mom.kernel_backend("numba")
    with pytest.raises(ImportError, match="needs numba"):
        ar.pool_moments([[0.5, 0.5]], [[0]], metric="err", backend="numba")


def _pool(rng, n_queries, n_grades, max_len, *, shared_rows=False):
    """Ragged pools (empty lists too) with every kind of pair, query by query."""
    lengths = rng.integers(0, max_len + 1, n_queries)
    offsets = np.r_[0, np.cumsum(lengths)]
    n_docs = max(int(offsets[-1]), 1)
    probs = random_probs(rng, n_docs, n_grades)
    ra, rb = [], []
    for q in range(n_queries):
        rows = np.arange(offsets[q], offsets[q + 1])
        if shared_rows and q % 3 == 0:
            rows = np.unique(np.r_[rows, rng.integers(0, n_docs, 3)])
        a = rng.permutation(rows)
        kind = q % 7
        if kind == 0:
            b = a.copy()  # identical
        elif kind == 1:
            b = a[rng.random(a.size) < 0.9]  # index update: removed, order kept
        elif kind == 2:
            b = rng.permutation(a[rng.random(a.size) < 0.7])  # reordered subset
        elif kind == 3:
            b = rng.permutation(rows)  # independent
        elif kind == 4:
            half = a.size // 2
            a, b = a[:half], a[half:]  # disjoint
        elif kind == 5:
            b = np.r_[a[: a.size // 2], rng.permutation(a[a.size // 2 :])]
        else:
            b = a[: a.size // 3]
        ra.append(a)
        rb.append(b)
    return probs, ra, rb


def _check(got, ref, fields):
    for f in fields:
        np.testing.assert_allclose(getattr(got, f), getattr(ref, f), rtol=1e-12, atol=1e-300, err_msg=f)


@needs_numba
@pytest.mark.parametrize("metric", ["err", "dcg", "err@1", "err@5", "dcg@5", "err@100"])
@pytest.mark.parametrize("n_grades", [2, 5])
@pytest.mark.parametrize("shared_rows", [False, True])
def test_numba_equals_numpy(metric, n_grades, shared_rows):
    rng = np.random.default_rng([n_grades, int(shared_rows), len(metric)])
    probs, ra, rb = _pool(rng, 140, n_grades, 60, shared_rows=shared_rows)
    # rb holds sparse subsets of a query's rows too: both the compact-row-block and the direct read path
    for r in (ra, rb):
        _check(ar.pool_moments(probs, r, metric=metric, backend="numba"),
               ar.pool_moments(probs, r, metric=metric, backend="numpy"), SINGLE)
    for order in (None, False):
        got = ar.pool_pair_moments(probs, ra, rb, metric=metric, backend="numba", order_preserving=order)
        ref = ar.pool_pair_moments(probs, ra, rb, metric=metric, backend="numpy", order_preserving=order)
        _check(got, ref, PAIR)
        scale = ref.second_a + ref.second_b
        assert np.all(np.abs(got.delta_variance - ref.delta_variance) <= 1e-12 * scale)
    # the two numba cross-moment kernels agree with each other too
    _check(ar.pool_pair_moments(probs, ra, rb, metric=metric, backend="numba", order_preserving=False),
           ar.pool_pair_moments(probs, ra, rb, metric=metric, backend="numba"), PAIR)


@needs_numba
def test_numba_matches_brute_force():
    from .._reference import brute_force_moments

    rng = np.random.default_rng(17)
    probs, ra, rb = _pool(rng, 30, 3, 5)
    for metric in ("err", "dcg"):
        pair = ar.pool_pair_moments(probs, ra, rb, metric=metric, backend="numba")
        for q in range(len(ra)):
            rows = np.union1d(ra[q], rb[q]).astype(int)
            local = {z: i for i, z in enumerate(rows)}
            want = brute_force_moments(probs[rows], [local[z] for z in ra[q]], [local[z] for z in rb[q]], metric)
            got = [getattr(pair, f)[q] for f in PAIR]
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@needs_numba
def test_auto_uses_numba_on_large_pools(monkeypatch):
    monkeypatch.delenv(mom.BACKEND_ENV, raising=False)
    assert mom.kernel_backend("auto", n_entries=1 << 20) == "numba"
    monkeypatch.setenv(mom.BACKEND_ENV, "numpy")
    assert mom.kernel_backend(None, n_entries=1 << 20) == "numpy"
