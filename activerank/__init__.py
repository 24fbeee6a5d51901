"""activerank: active evaluation of ranking functions with graded relevance.

Estimate how good a ranker is (mean DCG@k / ERR@k over a query population), or
how much better one ranker is than another, from as few relevance judgments as
possible, following Sawade et al. (ECML PKDD 2012).

Pipeline: relevance model -> exact moments -> costs -> sampling -> estimation.
"""

from . import (
    adaptive,
    calibration,
    campaign,
    costs,
    data,
    estimation,
    labelers,
    metrics,
    models,
    moments,
    multi,
    rankers,
    sampling,
    sequential,
    simulation,
    trec,
)
from .adaptive import PriorJudgments, estimate_adaptive
from .api import Design, Pool, compare, design, estimate
from .multi import MultiComparisonResult, SystemRankingResult, compare_many, rank_systems
from .sequential import SequentialComparisonResult, SequentialEstimateResult, estimate_sequential
from .data import LetorData, letor_fold, load_letor, load_partitions, load_sample
from .estimation import ComparisonResult, ConfidenceInterval, EstimateResult, LowEffectiveSampleSizeWarning
from .labelers import CallableLabeler, KnownLabels, LabelingError
from .metrics import METRICS, Metric, metric_value, parse_metric, pool_metric_values
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
from .ragged import Rankings

__version__ = "0.1.0"

__all__ = [
    "CallableLabeler",
    "ComparisonResult",
    "ConfidenceInterval",
    "Design",
    "EstimateResult",
    "KnownLabels",
    "LabelingError",
    "LetorData",
    "LowEffectiveSampleSizeWarning",
    "MultiComparisonResult",
    "Pool",
    "PriorJudgments",
    "SequentialComparisonResult",
    "SequentialEstimateResult",
    "SystemRankingResult",
    "compare",
    "compare_many",
    "design",
    "estimate",
    "estimate_adaptive",
    "estimate_sequential",
    "rank_systems",
    "letor_fold",
    "load_letor",
    "load_partitions",
    "load_sample",
    "METRICS",
    "Metric",
    "PairMoments",
    "PoolMoments",
    "PoolPairMoments",
    "QueryMoments",
    "Rankings",
    "metric_value",
    "pair_moments",
    "parse_metric",
    "pool_metric_values",
    "pool_moments",
    "pool_pair_moments",
    "query_moments",
]
