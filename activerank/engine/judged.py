"""External judges as the relevance model of a fixed-budget run, calibrated on the human labels as they arrive.

With ``judges=`` the API runs two rounds through the same judgments store:

1. unless the caller already holds enough human labels on judged documents (:data:`MIN_CALIBRATION_LABELS`),
   a first round spends :data:`CALIBRATION_SHARE` of the budget with the design planned on ``probs`` (the
   feature model, or an uninformative prior);
2. a :class:`~activerank.judges.JudgeCalibrator` is fitted on every human label held (the caller's and the first
   round's), with ``probs`` as extra features, and the rest of the budget runs the design planned on the
   calibrated probabilities.

Every first-round label is *held* in the second round: known exactly, at no further cost, never asked again.
Given the first round, the second round's design is fixed and its estimator unbiased for the whole target,
so the two-round estimate is unbiased and its interval is the second round's (conditional) interval.
"""

from __future__ import annotations

import numpy as np

from ..judges import JudgeCalibrator, JudgeOutputs
from ..labelers import LabelingError
from .core import run
from .schedules import FixedBudget

__all__ = ["CALIBRATION_SHARE", "MIN_CALIBRATION_LABELS", "calibrate_judges", "judges_iv"]

#: share of the budget the first (calibration) round spends when the caller holds too few labels
CALIBRATION_SHARE = 0.3
#: human labels on judged documents that make the first round unnecessary
MIN_CALIBRATION_LABELS = 30


def judges_iv(judges, pool) -> list:
    """A non-empty list of JudgeOutputs on ``pool``'s rows."""
    if isinstance(judges, JudgeOutputs):
        judges = [judges]
    if isinstance(judges, (str, bytes)) or not hasattr(judges, "__iter__"):
        raise TypeError(f"`judges` must be JudgeOutputs or a sequence of them (activerank.judges.read_judge); got "
                        f"{type(judges).__name__}.")
    judges = list(judges)
    if not judges:
        raise ValueError("`judges` is empty: pass at least one judge, or leave `judges` out.")
    for i, j in enumerate(judges):
        if not isinstance(j, JudgeOutputs):
            raise TypeError(f"`judges[{i}]` must be JudgeOutputs (activerank.judges.read_judge); got "
                            f"{type(j).__name__}.")
        if j.n_docs != pool.n_docs:
            raise ValueError(f"`judges[{i}]` ({j.name!r}) covers {j.n_docs} documents; the pool has {pool.n_docs}: "
                             "read it against this pool.")
    return judges


def calibrate_judges(pool, probs, labeler, judges, store, *, make_design, budget: float, rng, ci: str):
    """Run the calibration round if needed and fit the calibrator; returns ``(probs, spent, info)``.

    Parameters
    ----------
    pool : Pool
        The standardized pool.
    probs : ndarray of shape (n_docs, n_grades)
        The relevance model without the judges.
    labeler, judges, store
        The run's labeler, judges (:func:`judges_iv`) and judgments store (filled in place).
    make_design : callable
        ``make_design(probs, judged) -> (design, budget factor)``: the run's design on a relevance model, and
        how many of the caller's budget units make one of the engine's.
    budget : float
        The whole budget, in the caller's unit.
    rng : numpy.random.Generator
        The run's generator (the first round draws from it).
    ci : str

    Returns
    -------
    probs : ndarray
        The calibrated probabilities (``probs`` unchanged when calibration was not possible; ``info`` says why).
    spent : float
        The first round's cost, in the caller's budget unit.
    info : dict
        What was done, for ``trace.attrs["judges"]``.
    """
    judged_any = np.zeros(pool.n_docs, dtype=bool)
    for j in judges:
        judged_any |= j.judged
    info = {"judges": [j.name for j in judges], "calibration_round_cost": 0.0}
    spent = 0.0
    if int(np.count_nonzero((store.labels >= 0) & judged_any)) < MIN_CALIBRATION_LABELS:
        design, factor = make_design(probs, store.labels >= 0)
        try:
            first = run(design, pool, labeler, FixedBudget(CALIBRATION_SHARE * budget / factor, rng),
                        judgments=store, ci=ci)
        except LabelingError:  # the labeler failed: never swallowed (it carries the judgments bought)
            raise
        except ValueError as exc:  # e.g. the share buys too little of this design: calibrate on what is held
            info["calibration_round"] = f"not run: {exc}"
        else:
            spent = float(first.cost_spent) * factor
            info.update(calibration_round=design.method, calibration_round_cost=spent)
    labels = store.labels
    use = (labels >= 0) & judged_any
    info["n_labels"] = int(np.count_nonzero(use))
    if np.unique(labels[use]).size < 2:
        info["calibrated"] = False
        info["reason"] = (f"the {info['n_labels']} human labels on judged documents hold fewer than 2 different grades: "
                          "the judges were not calibrated, the design used `probs`")
        return probs, spent, info
    groups = np.repeat(np.arange(pool.n_queries), np.diff(np.asarray(pool.offsets)))
    seed = int(rng.integers(0, 2**31 - 1))
    cal = JudgeCalibrator(probs.shape[1], random_state=seed).fit(judges, np.where(use, labels, -1),
                                                                 model_probs=probs, groups=groups)
    info.update(calibrated=True, C=cal.C_)
    return cal.predict_proba(judges, model_probs=probs), spent, info
