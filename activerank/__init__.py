"""activerank: active evaluation of ranking functions with graded relevance.

Estimate how good a ranker is (mean DCG@k / ERR@k over a query population), or
how much better one ranker is than another, from as few relevance judgments as
possible, following Sawade et al. (ECML PKDD 2012).

The pipeline, one subpackage per step: :mod:`~activerank.relevance` (models
p(y|x,z), rankers) -> :mod:`~activerank.metrics` (values, exact moments) ->
:mod:`~activerank.design` (targets, costs, methods, q) ->
:mod:`~activerank.engine` (draws, labels) -> :mod:`~activerank.inference`
(estimators, intervals, results); :mod:`~activerank.api` holds the public
functions.  Attributes load lazily, so ``import activerank`` stays cheap and
scikit-learn, pandas or SciPy load only when something needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

# public name -> module that defines it (loaded on first access, PEP 562)
_EXPORTS = {
    "estimate": "api", "compare": "api", "compare_many": "api", "rank_systems": "api",
    "estimate_sequential": "api", "estimate_adaptive": "api", "make_design": "api", "plan_budget": "api",
    "BudgetPlan": "design.planning",
    "Design": "design.design", "Pool": "pool", "PriorJudgments": "engine.schedules",
    "EstimateResult": "inference.results", "ComparisonResult": "inference.results",
    "MultiComparisonResult": "inference.results", "SystemRankingResult": "inference.results",
    "SequentialEstimateResult": "inference.results", "SequentialComparisonResult": "inference.results",
    "ConfidenceInterval": "inference.intervals", "JudgmentSet": "inference.judgments",
    "LowEffectiveSampleSizeWarning": "inference.snis", "FewLabelsWarning": "inference.caveats",
    "CallableLabeler": "labelers", "KnownLabels": "labelers", "LabelingError": "labelers",
    "LetorData": "io.letor", "letor_fold": "io.letor", "load_letor": "io.letor",
    "load_partitions": "io.letor", "load_sample": "io.letor",
    "METRICS": "metrics", "Metric": "metrics", "metric_value": "metrics", "parse_metric": "metrics",
    "pool_metric_values": "metrics",
    "PairMoments": "metrics", "PoolMoments": "metrics", "PoolPairMoments": "metrics",
    "QueryMoments": "metrics", "pair_moments": "metrics", "pool_moments": "metrics",
    "pool_pair_moments": "metrics", "query_moments": "metrics",
    "METHODS": "design.methods", "Method": "design.methods", "register_method": "design.methods",
    "Rankings": "ragged",
}
_SUBPACKAGES = ("api", "campaign", "datasets", "design", "distributed", "engine", "experiments", "inference",
                "integrations", "io", "labelers", "metrics", "pool", "ragged", "relevance")

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'activerank' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBPACKAGES))


if TYPE_CHECKING:  # pragma: no cover - for static analysis only
    from .api import (
        compare,
        compare_many,
        estimate,
        estimate_adaptive,
        estimate_sequential,
        make_design,
        plan_budget,
        rank_systems,
    )
    from .design.design import Design
    from .design.planning import BudgetPlan
    from .design.methods import METHODS, Method, register_method
    from .engine.schedules import PriorJudgments
    from .inference.intervals import ConfidenceInterval
    from .inference.judgments import JudgmentSet
    from .inference.results import (
        ComparisonResult,
        EstimateResult,
        MultiComparisonResult,
        SequentialComparisonResult,
        SequentialEstimateResult,
        SystemRankingResult,
    )
    from .inference.caveats import FewLabelsWarning
    from .inference.snis import LowEffectiveSampleSizeWarning
    from .io.letor import LetorData, letor_fold, load_letor, load_partitions, load_sample
    from .labelers import CallableLabeler, KnownLabels, LabelingError
    from .metrics import (
        METRICS,
        Metric,
        PairMoments,
        PoolMoments,
        PoolPairMoments,
        QueryMoments,
        metric_value,
        pair_moments,
        parse_metric,
        pool_metric_values,
        pool_moments,
        pool_pair_moments,
        query_moments,
    )
    from .pool import Pool
    from .ragged import Rankings
