"""Pools beyond one machine: the same estimate on a Dask DataFrame (or Parquet) pool.

A pool with one row per (query, document), partitioned by whole queries,
never comes to the driver.  The pipeline, one module per step:

:mod:`.frame`         :class:`DaskPool` -- which columns mean what (query id, document id,
                      probabilities or features, cost, length; rankers' scores by name)
:mod:`.query_table`   per partition (``map_partitions``): the per-query table -- query id,
                      partition, predicted moments of the target, raw cost -- by the
                      in-memory kernels
:mod:`.design`        on the driver: ``p``, costs, ``q`` from the table; then a pool holding
                      only the drawn queries' documents
:mod:`.judges`        external judges' columns (:class:`JudgeColumns`), calibrated on the
                      driver on the held labels, applied by the workers as the relevance model
:mod:`.documents`     document-level Poisson designs (``doc_dyn``, ``doc_stat``): units per
                      partition, the budgeted order draw's candidates only on the driver
:mod:`.api`           :func:`estimate`, :func:`compare`, :func:`compare_many`,
                      :func:`rank_systems`, :func:`estimate_sequential`: ``method="auto"``'s choice, draws (the engine's
                      draw loop or the method's one sample without replacement),
                      fetch of the drawn queries, the engine's labeling and estimate;
                      :func:`create_campaign`: a labeling campaign storing only the
                      per-query table and the drawn queries' documents

Dask is imported only when one of these functions runs (the ``dask`` extra:
``pip install "activerank[dask]"``).  See ``docs/distributed.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {"estimate": "api", "estimate_sequential": "api", "compare": "api", "compare_many": "api", "rank_systems": "api",
            "create_campaign": "api", "query_table_of": "api", "ColumnLabels": "frame", "DaskPool": "frame",
            "in_memory": "frame", "JudgeColumns": "judges"}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'activerank.distributed' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for static analysis only
    from .api import (compare, compare_many, create_campaign, estimate, estimate_sequential, query_table_of,
                      rank_systems)
    from .frame import ColumnLabels, DaskPool, in_memory
    from .judges import JudgeColumns
