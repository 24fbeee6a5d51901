"""Ranking metrics: declarative specs (:mod:`.registry`), values of judged
rankings (:mod:`.values`), exact moments under a relevance model
(:mod:`.moments`) and moments for every metric, exact or Monte Carlo, plus the
documents a metric needs judged (:mod:`.approximate`)."""

from .registry import (
    METRICS,
    Metric,
    MetricDef,
    Param,
    custom_metric,
    describe_metrics,
    parse_metric,
    register_metric,
)
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
from .approximate import (
    DEFAULT_N_SAMPLES,
    judged_documents,
    monte_carlo_moments,
    monte_carlo_pair_moments,
    predicted_moments,
    predicted_pair_moments,
)

__all__ = [
    "DEFAULT_N_SAMPLES",
    "METRICS",
    "Metric",
    "MetricDef",
    "PairMoments",
    "Param",
    "PoolMoments",
    "PoolPairMoments",
    "QueryMoments",
    "custom_metric",
    "describe_metrics",
    "judged_documents",
    "metric_value",
    "monte_carlo_moments",
    "monte_carlo_pair_moments",
    "pair_moments",
    "parse_metric",
    "pool_metric_values",
    "pool_moments",
    "pool_pair_moments",
    "predicted_moments",
    "predicted_pair_moments",
    "query_moments",
    "register_metric",
]
