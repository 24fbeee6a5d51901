"""The ``prefix`` design: queries in priority order under a hard budget, a random-depth prefix of each judged
(cascade metrics: ERR, RR).

One kind in four modules: the judging layout, walk and stopping rule
(:mod:`.layout`), the hard budget's priority order and cut (:mod:`.budget`), the
plan of inclusion probabilities and stopping rules (:mod:`.plan`), and the registered plug-in with its estimator and the
design-kind protocol (:mod:`.sampling`); :mod:`._numba` holds compiled twins of
the walk and the planning sums (the ``fast`` extra).  The derivation is in
:mod:`.layout` and ``docs/prefix.md``.
"""

from .budget import BudgetWalk, budget_walk, depth_tables
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
from .plan import (
    N_PLANNING_SIMULATIONS,
    TAU_GRID,
    WITHIN_DEFENSIVE,
    PrefixPlan,
    PrefixPlanner,
    plan_prefix,
    prefix_planner,
)
from .sampling import (
    MIN_COMPLETED,
    PLANNING_SEED,
    PRIOR_DOF,
    PrefixDraw,
    PrefixRun,
    PrefixSampling,
    design_layout,
    expected_completed,
    pooled_covariance,
    prefix_dof,
    prefix_estimate,
    within_estimate,
)

__all__ = ["MIN_COMPLETED", "N_PLANNING_SIMULATIONS", "PLANNING_SEED", "PRIOR_DOF", "TAU_GRID", "WITHIN_DEFENSIVE",
           "BudgetWalk", "JudgingWalk", "PrefixDraw", "PrefixLayout", "PrefixPlan", "PrefixPlanner", "PrefixRun",
           "PrefixSampling", "Walk", "budget_walk", "depth_tables", "design_layout", "expected_completed",
           "judging_paths", "plan_prefix", "pooled_covariance", "prefix_dof", "prefix_estimate", "prefix_layout",
           "prefix_planner", "stop_probabilities", "stop_scale", "walk_sample", "within_estimate"]
