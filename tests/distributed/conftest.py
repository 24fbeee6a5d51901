"""Fixtures shared by the Dask test modules: a two-worker in-process cluster and the synthetic pool."""

import pytest


@pytest.fixture(scope="module")
def client():
    """Two workers of one thread each, in this process (starts in about a second)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def data():
    """``(frame, labels, dask frame in 5 partitions)`` of the seed-3 synthetic pool."""
    from ._pools import boundaries, dask_frame, synthetic_frame

    df, labels = synthetic_frame(seed=3)
    return df, labels, dask_frame(df, boundaries(df, 5))
