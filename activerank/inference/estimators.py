"""Estimator plug-ins: from weighted draws to point estimates and their covariance.

A sampling method (:mod:`activerank.design.methods`) pairs a sampling
distribution with one of these estimators.  Each estimator works on the
per-draw values of a target's ``t`` contrasts and offers two forms: one run
(:meth:`Estimator.__call__`, used by the engine) and many runs on prefixes of
batched draws (:meth:`Estimator.prefix`, used by the experiment harness for
thousands of simulated campaigns at once).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model_assisted import model_assisted_joint, model_assisted_prefix
from .snis import BatchEstimate, joint_snis, snis_prefix

__all__ = ["Estimate", "Estimator", "ModelAssisted", "SelfNormalized"]


@dataclass(frozen=True, eq=False)
class Estimate:
    """Point estimates of ``t`` contrasts from one run.

    Attributes
    ----------
    estimate : ndarray of shape (t,)
    covariance : ndarray of shape (t, t)
        NaN when the draws cannot support one (fewer than 2 distinct queries).
    effective_sample_size : float
        Kish's ``(sum w)^2 / sum w^2``.
    coefficient : ndarray of shape (t,) or None
        Control-variate coefficients of model-assisted estimators.
    """

    estimate: np.ndarray
    covariance: np.ndarray
    effective_sample_size: float
    coefficient: np.ndarray | None = None

    @property
    def standard_error(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


class Estimator:
    """Base class of the estimator plug-ins."""

    name = "base"
    uses_predictions = False

    def __call__(self, values, weights, *, predictions=None, pool_predictions=None,
                 n_distinct=None) -> Estimate:  # pragma: no cover - abstract
        raise NotImplementedError

    def prefix(self, values, weights, stops, *, predictions=None, pool_prediction=None,
               queries=None) -> BatchEstimate:  # pragma: no cover - abstract
        """Many runs at once: 2-d draws ``(n_reps, n_cols)`` and prefix lengths ``stops``; ``queries``
        (the drawn queries, same shape) lets an estimator count distinct queries."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SelfNormalized(Estimator):
    """Self-normalized importance weighting (Sawade et al. 2012, Eq. 6) with the delta-method covariance.

    Examples
    --------
    >>> e = SelfNormalized()(np.array([[1.0], [0.0], [1.0], [0.0]]), np.ones(4), n_distinct=4)
    >>> e.estimate.tolist(), round(float(e.standard_error[0]), 6)
    ([0.5], 0.288675)
    """

    name = "snis"

    def __call__(self, values, weights, *, predictions=None, pool_predictions=None, n_distinct=None):
        est, cov, ess = joint_snis(values, weights, n_distinct=n_distinct)
        return Estimate(est, cov, ess)

    def prefix(self, values, weights, stops, *, predictions=None, pool_prediction=None, queries=None):
        return snis_prefix(values, weights, stops)


class ModelAssisted(Estimator):
    """Control variate ``m(x) = E_theta[theta | x]`` with its exact pool mean
    (:func:`activerank.inference.model_assisted.model_assisted`): coefficient tuned
    (``tuned=True``) or fixed at 1 (the classical difference estimator)."""

    name = "model_assisted"
    uses_predictions = True

    def __init__(self, *, tuned: bool = True):
        self.tuned = tuned

    def __call__(self, values, weights, *, predictions=None, pool_predictions=None, n_distinct=None):
        est, cov, ess, beta = model_assisted_joint(values, predictions, weights, pool_predictions,
                                                   tuned=self.tuned, n_distinct=n_distinct)
        return Estimate(est, cov, ess, beta)

    def prefix(self, values, weights, stops, *, predictions=None, pool_prediction=None, queries=None):
        if not self.tuned or queries is None:
            return model_assisted_prefix(values, predictions, weights, pool_prediction, stops, tuned=self.tuned)
        # the engine's estimator: cross-fitted (no self-tuning bias), cluster standard errors
        from .crossfit import model_assisted_crossfit_prefix

        res = model_assisted_crossfit_prefix(values, predictions, weights, pool_prediction, queries, stops,
                                             ci="t")
        plain = snis_prefix(values, weights, stops)
        return BatchEstimate(res.estimate, res.standard_error, plain.effective_sample_size, plain.n_draws)

    def __repr__(self) -> str:
        return f"ModelAssisted(tuned={self.tuned})"
