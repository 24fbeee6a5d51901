"""External judges (LLMs, cross-encoders) as relevance models: read their outputs, calibrate them on human labels,
report their quality.

>>> from activerank.judges import read_judge, JudgeCalibrator, judge_report  # doctest: +SKIP

The calibrated probabilities are a relevance model like any other: pass them as ``probs`` to
:func:`activerank.estimate` and friends (see ``docs/judges.md``).
"""

from .assessors import AssessorAgreement, assessor_agreement
from .calibration import JudgeCalibrator, cross_fitted_proba
from .outputs import JUDGE_KINDS, JudgeOutputs, judge_outputs_of, read_judge
from .report import JudgeReport, judge_report, weighted_kappa

__all__ = ["JUDGE_KINDS", "AssessorAgreement", "JudgeCalibrator", "JudgeOutputs", "JudgeReport",
           "assessor_agreement", "cross_fitted_proba", "judge_outputs_of", "judge_report", "read_judge",
           "weighted_kappa"]
