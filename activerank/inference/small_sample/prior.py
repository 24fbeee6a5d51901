"""The relevance model's predicted variance of a design (:func:`predicted_variance`) and its pooling
with the sample variance (the moderated standard error)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _moderated_se(se, dof, prior_se2, prior_dof):
    """Pool the sample variance (``dof`` degrees of freedom) with a model-predicted one (``prior_dof``)."""
    dd = np.maximum(np.asarray(dof, dtype=np.float64), 0.0)
    s2 = np.where(np.isfinite(se), se, 0.0) ** 2
    out = np.sqrt((prior_dof * np.asarray(prior_se2, dtype=np.float64) + dd * s2) / (prior_dof + dd))
    return np.where(np.isfinite(se), out, np.nan)


@dataclass(frozen=True)
class PredictedVariance:
    """The relevance model's prediction of one draw's variance, in two parts.

    With ``m(x) = E_theta[L | x]``, ``s2(x) = Var_theta[L | x]``, ``M = sum p m``
    and weights ``w = p / q``, the importance-sampling term of a draw after a
    control variate with coefficient ``beta`` has predicted variance

    ``V(beta) = within + (1 - beta)^2 * between``,
    ``within = sum_x p^2/q s2(x)``,  ``between = sum_x p^2/q (m(x) - M)^2``

    (``beta = 0``: plain self-normalized weighting).  ``V / n_eff`` is the
    model's squared standard error, the prior the ``t`` interval pools with
    the sample variance (:func:`ratio_intervals`).
    """

    within: float
    between: float

    def total(self, coefficient=0.0):
        return self.within + (1.0 - np.asarray(coefficient, dtype=np.float64)) ** 2 * self.between


def predicted_variance(p, q, mean, variance) -> PredictedVariance:
    """:class:`PredictedVariance` of a design from the model's per-query moments.

    Parameters
    ----------
    p, q : array-like of shape (n_queries,)
        Target and sampling distributions.
    mean, variance : array-like of shape (n_queries,)
        ``E_theta[L | x]`` and ``Var_theta[L | x]`` (of the difference for a comparison).

    Examples
    --------
    >>> pv = predicted_variance([0.5, 0.5], [0.5, 0.5], [0.0, 1.0], [0.1, 0.1])
    >>> pv.within, pv.between, float(pv.total(1.0))
    (0.1, 0.25, 0.1)
    """
    p, q, mean, variance = (np.asarray(x, dtype=np.float64).reshape(-1) for x in (p, q, mean, variance))
    if not (p.shape == q.shape == mean.shape == variance.shape):
        raise ValueError(f"`p`, `q`, `mean` and `variance` must have one length; got {p.size}, {q.size}, "
                         f"{mean.size} and {variance.size}.")
    ok = (p > 0) & (q > 0)
    if np.any((p > 0) & ~(q > 0)):
        raise ValueError("`q` must be positive wherever `p` is.")
    r = np.where(ok, p * p / np.where(ok, q, 1.0), 0.0)
    M = float(p @ mean)
    return PredictedVariance(float(r @ np.maximum(variance, 0.0)), float(r @ (mean - M) ** 2))
