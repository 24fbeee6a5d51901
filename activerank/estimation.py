"""Estimators and their frozen results.

Self-normalized importance weighting (Sawade et al. 2012, Eq. 6): with draws
``x_1..x_n ~ q`` and weights ``w_j = p(x_j) / q(x_j)``,

``R_hat = sum_j w_j L_j / sum_j w_j``.

Its delta-method standard error is
``SE^2 = n/(n-1) * sum_j w_j^2 (L_j - R_hat)^2 / (sum_j w_j)^2``
(the ``n/(n-1)`` factor makes it the usual ``s/sqrt(n)`` when ``q = p``), and
the normal interval is ``R_hat +- z SE``.  Kish's effective sample size
``(sum w)^2 / sum w^2`` tells when that normal approximation is shaky.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "ConfidenceInterval",
    "EstimateResult",
    "ComparisonResult",
    "LowEffectiveSampleSizeWarning",
    "snis",
]

MIN_EFFECTIVE_SAMPLE_SIZE = 10.0


class LowEffectiveSampleSizeWarning(UserWarning):
    """The importance weights leave few effective samples; the CI may under-cover."""


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float


@dataclass(frozen=True)
class SNISEstimate:
    estimate: float
    standard_error: float
    effective_sample_size: float


def snis(values, weights) -> SNISEstimate:
    """Self-normalized importance-weighted mean with delta-method standard error.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Observed metric values (or differences) of the draws.
    weights : ndarray of shape (n,)
        Importance weights ``p/q`` of the draws.

    Examples
    --------
    >>> r = snis(np.array([1.0, 0.0, 1.0, 0.0]), np.ones(4))
    >>> r.estimate, round(r.standard_error, 6)
    (0.5, 0.288675)
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n = v.size
    if n == 0:
        return SNISEstimate(np.nan, np.nan, 0.0)
    total = w.sum()
    est = float(np.dot(w, v) / total)
    ess = float(total**2 / np.dot(w, w))
    if n < 2:
        return SNISEstimate(est, np.nan, ess)
    se2 = n / (n - 1) * np.dot(w * w, (v - est) ** 2) / total**2
    return SNISEstimate(est, float(np.sqrt(se2)), ess)


def _z(confidence_level) -> float:
    if not (isinstance(confidence_level, (float, int)) and 0 < confidence_level < 1):
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}.")
    return float(stats.norm.ppf(0.5 + confidence_level / 2))


def warn_if_low_ess(ess: float, n_draws: int, stacklevel: int = 2):
    if ess < MIN_EFFECTIVE_SAMPLE_SIZE:
        warnings.warn(
            f"effective sample size {ess:.1f} (from {n_draws} draws) is below "
            f"{MIN_EFFECTIVE_SAMPLE_SIZE:g}; the normal confidence interval may under-cover. "
            "Increase the budget or the defensive mixture weight.",
            LowEffectiveSampleSizeWarning,
            stacklevel=stacklevel,
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class _Result:
    standard_error: float
    metric: str
    method: str
    n_draws: int
    n_queries: int
    cost_spent: float
    budget: float
    effective_sample_size: float
    trace: pd.DataFrame = field(repr=False)

    def _point(self) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Normal (Wald) interval ``point +- z * standard_error``."""
        z = _z(confidence_level)
        point = self._point()
        return ConfidenceInterval(point - z * self.standard_error, point + z * self.standard_error)


@dataclass(frozen=True, eq=False, kw_only=True)
class EstimateResult(_Result):
    """Estimate of a ranker's mean metric over the query distribution ``p``.

    Attributes
    ----------
    estimate : float
        Estimated ``R = sum_x p(x) L(x)``.
    standard_error : float
    metric, method : str
    n_draws : int
        Draws made (with repetitions).
    n_queries : int
        Distinct queries judged.
    cost_spent, budget : float
        In units of the pool's mean query cost.
    effective_sample_size : float
    trace : pandas.DataFrame
        One row per draw: ``draw, query, query_id, q, p, weight, new, cost,
        cumulative_cost, value``.
    """

    estimate: float

    def _point(self) -> float:
        return self.estimate


@dataclass(frozen=True, eq=False, kw_only=True)
class ComparisonResult(_Result):
    """Estimate of ``Delta = R_a - R_b`` for two rankers on the same queries.

    ``difference`` is the estimated ``Delta``; ``estimate_a`` and
    ``estimate_b`` the two rankers' own estimates from the same draws.
    """

    difference: float
    estimate_a: float
    estimate_b: float

    def _point(self) -> float:
        return self.difference

    def prob_a_better(self) -> float:
        """Normal-approximation probability that ``Delta > 0``."""
        if not self.standard_error > 0:
            return float(self.difference > 0)
        return float(stats.norm.cdf(self.difference / self.standard_error))
