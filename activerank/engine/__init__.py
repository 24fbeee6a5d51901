"""The engine: design -> draws -> labels -> estimate, one path for every feature.

:func:`run` owns the labeling step (:class:`Judgments`), failure handling and
result assembly (:mod:`.assemble`); a :class:`Schedule` (:class:`FixedBudget`,
:class:`Sequential`, :class:`Adaptive`) only decides how draws proceed.
"""

from .core import Draws, RunContext, Schedule, estimate_from_plan, run
from .labeling import Judgments
from .schedules import STOPPING_REASONS, Adaptive, FixedBudget, PriorJudgments, Sequential

__all__ = ["STOPPING_REASONS", "Adaptive", "Draws", "FixedBudget", "Judgments", "PriorJudgments", "RunContext",
           "Schedule", "Sequential", "estimate_from_plan", "run"]
