"""Ranking metrics: declarative specs (:mod:`.registry`), values of judged
rankings (:mod:`.values`) and exact moments under a relevance model
(:mod:`.moments`)."""

from .registry import METRICS, Metric, MetricDef, parse_metric
from .values import metric_value, pool_metric_values
from .moments import (
    PairMoments,
    PoolMoments,
    PoolPairMoments,
    QueryMoments,
    pair_moments,
    pool_moments,
    pool_pair_moments,
    query_moments,
)

__all__ = [
    "METRICS",
    "Metric",
    "MetricDef",
    "PairMoments",
    "PoolMoments",
    "PoolPairMoments",
    "QueryMoments",
    "metric_value",
    "pair_moments",
    "parse_metric",
    "pool_metric_values",
    "pool_moments",
    "pool_pair_moments",
    "query_moments",
]
