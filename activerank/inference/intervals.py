"""Confidence intervals: normal quantiles, simultaneous (max-|t|) intervals, win probabilities.

Simultaneous intervals use the max-|t| (single-step) method: the critical
value ``c`` solves ``P(max_j |Z_j| <= c) = confidence_level`` for ``Z`` normal
with the estimates' correlation matrix, so all intervals ``est_j +- c SE_j``
hold jointly with the nominal probability (asymptotically).  ``c`` is
computed deterministically from a fixed scrambled Sobol' sample of
``2**15`` normal points (error in ``c`` about 0.002-0.005); Bonferroni
(``simultaneous="bonferroni"``) is the conservative closed-form alternative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .._validation import confidence_level_iv
from .ranges import trim

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "ConfidenceInterval",
    "SimultaneousIntervals",
    "kendall_tau",
    "max_abs_t_critical_value",
    "normal_cdf",
    "normal_quantile",
    "prob_positive",
]

_SOBOL_LOG2 = 15
_SOBOL_SEED = 20120924
_STD_NORMAL = NormalDist()


class ConfidenceInterval(NamedTuple):
    """An interval ``(low, high)``; unpacks as ``low, high = result.confidence_interval()``."""

    low: float
    high: float


def normal_quantile(confidence_level) -> float:
    """Two-sided normal critical value ``z_{1 - alpha/2}`` for ``confidence_level = 1 - alpha``."""
    level = confidence_level_iv(confidence_level)
    return _STD_NORMAL.inv_cdf(0.5 + level / 2)


def normal_cdf(x):
    """Standard normal CDF, elementwise (NaN stays NaN)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


@lru_cache(maxsize=32)
def _sobol_normals(dim: int) -> np.ndarray:
    """Fixed ``(dim, 2**15)`` standard-normal QMC sample (deterministic, cached)."""
    import inspect

    from scipy.special import ndtri
    from scipy.stats import qmc

    # SciPy >= 1.15 calls the generator `rng`; older releases call it `seed` (same stream)
    key = "rng" if "rng" in inspect.signature(qmc.Sobol).parameters else "seed"
    sampler = qmc.Sobol(dim, scramble=True, **{key: np.random.default_rng(_SOBOL_SEED + dim)})
    z = np.ascontiguousarray(ndtri(sampler.random_base2(_SOBOL_LOG2)).T)  # (dim, 2**15)
    z.setflags(write=False)
    return z


def simultaneous_iv(simultaneous):
    if simultaneous is True or simultaneous == "max_t":
        return "max_t"
    if simultaneous is False or simultaneous is None or simultaneous == "none":
        return "none"
    if simultaneous == "bonferroni":
        return "bonferroni"
    raise ValueError(
        f"`simultaneous` must be True (max-|t|), False, or 'bonferroni'; got {simultaneous!r}."
    )


def max_abs_t_critical_value(covariance, confidence_level: float = 0.95, *,
                             simultaneous=True, dof: float = math.inf) -> float:
    """Critical value ``c`` with ``P(max_j |Z_j| / sd_j <= c) = confidence_level``.

    Parameters
    ----------
    covariance : array-like of shape (s, s)
        Covariance (or correlation) of the estimates; may be singular (as for
        differences to the mean system).  Components with zero variance are
        left out (their intervals are points).
    confidence_level : float in (0, 1), default 0.95
    simultaneous : True, False or "bonferroni", default True
        True: the max-|t| quantile of the joint normal (deterministic
        scrambled-Sobol' evaluation); ``"bonferroni"``: ``z_{1 - alpha/(2s)}``;
        False: the per-estimate ``z_{1 - alpha/2}``.
    dof : float, default inf
        Degrees of freedom of the estimated covariance: finite ``dof`` gives
        the quantiles of the multivariate Student ``t`` (the small-sample
        intervals of :mod:`activerank.inference.small_sample`, ``dof = d - 1``
        for ``d`` distinct queries); ``inf`` the normal ones.

    Returns
    -------
    float

    Examples
    --------
    >>> round(max_abs_t_critical_value(np.eye(1)), 3)
    1.96
    >>> round(max_abs_t_critical_value(np.eye(3), simultaneous="bonferroni"), 3)
    2.394
    >>> c = max_abs_t_critical_value(np.eye(3))       # independent: exact 2.388
    >>> abs(c - 2.388) < 0.01
    True
    """
    mode = simultaneous_iv(simultaneous)
    dof = float(dof)
    confidence_level = confidence_level_iv(confidence_level)
    z = normal_quantile(confidence_level) if math.isinf(dof) else _t_quantile(0.5 + confidence_level / 2, dof)
    cov = np.atleast_2d(np.asarray(covariance, dtype=np.float64))
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"`covariance` must be a square matrix; got shape {cov.shape}.")
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    keep = np.isfinite(sd) & (sd > 0)
    s = int(keep.sum())
    if mode == "none" or s <= 1:
        return z
    alpha = 1.0 - confidence_level
    if mode == "bonferroni" or not np.all(np.isfinite(cov[np.ix_(keep, keep)])):
        if math.isinf(dof):
            return _STD_NORMAL.inv_cdf(1.0 - alpha / (2 * s))
        return _t_quantile(1.0 - alpha / (2 * s), dof)
    corr = cov[np.ix_(keep, keep)] / np.outer(sd[keep], sd[keep])
    vals, vecs = np.linalg.eigh((corr + corr.T) / 2)
    factor = vecs * np.sqrt(np.clip(vals, 0.0, None))
    normals = _sobol_normals(s if math.isinf(dof) else s + 1)
    t = np.zeros(normals.shape[1])
    for row in factor:  # matrix-vector products: fast and free of BLAS-thread contention
        np.maximum(t, np.abs(row @ normals[:s]), out=t)
    if not math.isinf(dof):
        # multivariate t: the normal vector over sqrt(chi2_dof / dof), from one more QMC coordinate
        from scipy.special import chdtri, ndtr

        t /= np.sqrt(chdtri(dof, ndtr(normals[s])) / dof)
    return float(np.quantile(t, confidence_level))


def _t_quantile(u: float, dof: float) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(dof, u))


def kendall_tau(a, b) -> float:
    """Kendall's tau-b between two score vectors (e.g. estimated vs true system means).

    Examples
    --------
    >>> kendall_tau([0.3, 0.1, 0.2], [3, 1, 2])
    1.0
    >>> round(kendall_tau([0.3, 0.1, 0.2], [1, 2, 3]), 4)
    -0.3333
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.size != b.size:
        raise ValueError(f"`a` and `b` must have the same length; got {a.size} and {b.size}.")
    if a.size < 2:
        raise ValueError("`a` and `b` must hold at least two systems.")
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


@dataclass(frozen=True, eq=False)
class SimultaneousIntervals:
    """Intervals ``estimate +- critical_value * standard_error`` for named quantities.

    Attributes
    ----------
    names : tuple of str
    estimate, standard_error, low, high : ndarray of shape (s,)
    critical_value : float
        The common multiplier (max-|t|, Bonferroni, or per-interval ``z``).
    confidence_level : float
    simultaneous : str
        ``"max_t"``, ``"bonferroni"`` or ``"none"``.

    Examples
    --------
    >>> ci = SimultaneousIntervals.build(("a", "b"), np.array([0.1, -0.2]), np.eye(2) * 0.01,
    ...                                  0.95, simultaneous=False)
    >>> round(ci["a"].high, 4)
    0.296
    >>> ci.covers([0.0, 0.0]).tolist()
    [True, False]
    """

    names: tuple
    estimate: np.ndarray
    standard_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_value: float
    confidence_level: float
    simultaneous: str

    @classmethod
    def build(cls, names, estimate, covariance, confidence_level, *, simultaneous=True, dof=math.inf,
              bounds=None):
        """The intervals ``estimate +- c SE``; with ``bounds = (low, high)`` each intersected with that range
        (:func:`activerank.inference.ranges.trim`)."""
        mode = simultaneous_iv(simultaneous)
        c = max_abs_t_critical_value(covariance, confidence_level, simultaneous=mode, dof=dof)
        se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
        est = np.asarray(estimate, dtype=np.float64)
        low, high = est - c * se, est + c * se
        if bounds is not None:
            low, high = trim(low, high, bounds)
        return cls(tuple(names), _ro(est), _ro(se), _ro(low), _ro(high), c, float(confidence_level), mode)

    def __getitem__(self, name) -> ConfidenceInterval:
        try:
            i = self.names.index(name)
        except ValueError:
            raise KeyError(f"no interval named {name!r}; names are {list(self.names)}.") from None
        return ConfidenceInterval(float(self.low[i]), float(self.high[i]))

    def covers(self, values) -> np.ndarray:
        """Which intervals contain the given true values (shape (s,))."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if v.size != len(self.names):
            raise ValueError(f"`values` must have {len(self.names)} entries; got {v.size}.")
        return (self.low <= v) & (v <= self.high)

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({"estimate": self.estimate, "standard_error": self.standard_error,
                             "low": self.low, "high": self.high}, index=pd.Index(self.names, name="name"))


def _ro(a):
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def prob_positive(diff, se, dof: float = math.inf):
    """``P(Delta > 0)`` from ``Delta_hat ~ diff + se * T`` (``T`` Student-t with ``dof``; normal for inf)."""
    diff = np.asarray(diff, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if math.isinf(dof):
            out = normal_cdf(diff / se)
        else:
            from scipy.special import stdtr

            out = stdtr(dof, diff / se)
    degenerate = ~(se > 0)
    out = np.where(degenerate, np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5)), out)
    return out
