"""Document-level designs: (query, document) units sampled for additive metrics (DCG@k, P@k, RBP).

One kind, in four modules: the linear target over units (:mod:`.target`),
inclusion probabilities and draws (:mod:`.sampling`), the estimators
(:mod:`.estimators`), and the registered plug-ins with the design-kind
protocol (:mod:`.designs`: Poisson and uniform; :mod:`.with_replacement`:
Hansen-Hurwitz and UBIS-k).  The two-stage design builds on it
(:mod:`activerank.design.kinds.two_stage`).
"""

from .designs import (
    TARGET_KINDS,
    BudgetTooSmall,
    DocumentDesign,
    DocumentHorvitzThompson,
    DocumentSample,
    UniformHorvitzThompson,
    UnitPlan,
    census_estimate,
    census_sample,
    document_target_of,
    unit_costs,
)
from .estimators import (
    DocumentEstimate,
    StatAPEstimate,
    census_snis,
    expected_poisson_variance,
    hansen_hurwitz,
    horvitz_thompson,
    poisson_dof,
    poisson_variance,
    ratio_estimate,
    stat_ap,
    within_query_estimate,
)
from .sampling import (
    UTILITIES,
    PoissonDesign,
    affordable_prefix,
    draw_poisson,
    draw_priority,
    realized_pi,
    draw_uniform,
    draw_with_replacement,
    draw_within_queries,
    inclusion_probabilities,
    sampling_distribution,
    uniform_inclusion,
    unit_scores,
    waterfill,
    within_query_distribution,
)
from .target import DocumentTarget, UnitMoments, document_target, scenario_contrasts
from .with_replacement import HansenHurwitz, WithinQuery, WithReplacementDesign

__all__ = [
    "TARGET_KINDS", "UTILITIES", "BudgetTooSmall", "DocumentDesign", "DocumentEstimate", "DocumentHorvitzThompson",
    "DocumentSample", "DocumentTarget", "HansenHurwitz", "PoissonDesign", "StatAPEstimate", "UniformHorvitzThompson",
    "UnitMoments", "UnitPlan", "WithReplacementDesign", "WithinQuery", "census_estimate", "census_sample",
    "census_snis", "document_target", "document_target_of", "affordable_prefix", "draw_poisson", "draw_priority", "realized_pi", "draw_uniform", "draw_with_replacement",
    "draw_within_queries", "expected_poisson_variance", "hansen_hurwitz", "horvitz_thompson", "inclusion_probabilities",
    "poisson_dof", "poisson_variance", "ratio_estimate", "sampling_distribution", "scenario_contrasts", "stat_ap",
    "uniform_inclusion", "unit_costs", "unit_scores", "waterfill", "within_query_distribution",
    "within_query_estimate",
]
