import numpy as np
import pytest

import activerank.metrics.moments as mom
from activerank.metrics._blas import single_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_blas_limited_inside_and_restored_after():
    before = _blas_threads()
    inside = single_blas_thread(_blas_threads)()
    assert inside == [1] * len(before)
    assert _blas_threads() == before


def test_kernels_run_pinned(monkeypatch):
    seen = []
    real = mom._cascade_pair

    def spy(*args):
        seen.append(_blas_threads())
        return real(*args)

    monkeypatch.setattr(mom, "_cascade_pair", spy)
    probs = np.array([[0.5, 0.5], [0.2, 0.8]])
    mom.pool_pair_moments(probs, [[0, 1]], [[1, 0]], metric="err", backend="numpy")
    assert seen and all(t == 1 for t in seen[0])
