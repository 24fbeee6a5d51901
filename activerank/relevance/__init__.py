"""Relevance models p(y | x, z) and rankers.

:mod:`.models` (scikit-learn classifiers, LightGBM, mord ordered logit, random
forest regression turned into grade distributions, uniform), :mod:`.rankers`
(scores -> per-query rankings, index-update transform, LambdaRank / linear
rankers) and :mod:`.calibration` (query-level calibration of the moments).
"""

from .models import (
    LightGBMRelevanceModel,
    OrderedLogitRelevanceModel,
    RandomForestRegressionRelevanceModel,
    RelevanceModel,
    SklearnRelevanceModel,
    UniformRelevanceModel,
    fit_with_validation,
    grade_log_loss,
    make_relevance_model,
)
from .rankers import (
    ScoreRanker,
    expected_gain_scores,
    expected_grade_scores,
    fit_lambdarank_ranker,
    fit_linear_ranker,
    model_ranker,
    rank_by_scores,
    remove_fraction,
)

__all__ = [
    "LightGBMRelevanceModel",
    "OrderedLogitRelevanceModel",
    "RandomForestRegressionRelevanceModel",
    "RelevanceModel",
    "ScoreRanker",
    "SklearnRelevanceModel",
    "UniformRelevanceModel",
    "expected_gain_scores",
    "expected_grade_scores",
    "fit_lambdarank_ranker",
    "fit_linear_ranker",
    "fit_with_validation",
    "grade_log_loss",
    "make_relevance_model",
    "model_ranker",
    "rank_by_scores",
    "remove_fraction",
]


def __getattr__(name):
    # `calibration` loads the metric kernels; import it only when it is used
    if name == "calibration":
        import importlib

        return importlib.import_module(".calibration", __name__)
    raise AttributeError(f"module 'activerank.relevance' has no attribute {name!r}")
