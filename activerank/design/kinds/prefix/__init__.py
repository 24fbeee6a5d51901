"""The ``prefix`` design: Poisson queries, a random-depth prefix of each judged (cascade metrics: ERR, RR).

One kind in three modules: the judging layout, walk and stopping rule
(:mod:`.layout`), the plan of inclusion probabilities and stopping rules
(:mod:`.plan`), and the registered plug-in with its estimator and the
design-kind protocol (:mod:`.sampling`); :mod:`._numba` holds compiled twins of
the walk and the planning sums (the ``fast`` extra).  The derivation is in
:mod:`.layout` and ``docs/prefix.md``.
"""

from .layout import (
    JudgingWalk,
    PrefixLayout,
    Walk,
    judging_paths,
    prefix_layout,
    stop_probabilities,
    stop_scale,
    walk_sample,
)
from .plan import N_PLANNING_SIMULATIONS, TAU_GRID, WITHIN_DEFENSIVE, PrefixPlan, plan_prefix
from .sampling import (
    PLANNING_SEED,
    PRIOR_DOF,
    PrefixDraw,
    PrefixRun,
    PrefixSampling,
    design_layout,
    pooled_covariance,
    prefix_dof,
    prefix_estimate,
    within_estimate,
)

__all__ = ["N_PLANNING_SIMULATIONS", "PLANNING_SEED", "PRIOR_DOF", "TAU_GRID", "WITHIN_DEFENSIVE", "JudgingWalk",
           "PrefixDraw", "PrefixLayout", "PrefixPlan", "PrefixRun", "PrefixSampling", "Walk", "design_layout",
           "judging_paths", "plan_prefix", "pooled_covariance", "prefix_dof", "prefix_estimate", "prefix_layout",
           "stop_probabilities", "stop_scale", "walk_sample", "within_estimate"]
