"""The interval kinds (``ci``) with their defaults and reliability limits, the result types, the input
checks of the interval functions, and the ``t`` quantile."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..caveats import FewLabelsWarning

CI_KINDS = ("auto", "t", "t_draws", "bootstrap", "normal", "fieller", "t_draws_distinct", "bootstrap_prior", "bca")
#: kinds whose standard error pools the model's predicted variance (``prior``)
MODERATED = ("t", "t_draws", "t_draws_distinct", "bootstrap_prior")
#: kinds that only the coverage benchmark uses (measured alternatives, docs/intervals.md)
MEASURED_ALTERNATIVES = ("t_draws_distinct", "bootstrap_prior", "bca")
#: ``ci="auto"``: Student-t on the per-draw SE (moderated by the model's
#: predicted variance ``V / n`` when ``prior`` is given) with Kish's effective
#: number of distinct queries ``n^2 / sum_c k_c^2`` minus one as degrees of
#: freedom, at every ``d``.  Without repeats it *is* ``"t"`` (cluster SE,
#: ``d - 1``); where ``q*`` makes queries repeat the cluster SE over-states the
#: with-replacement variance (SE/SD 1.3, coverage 0.98-1.00) and ``"t_draws"``
#: is nominal.  Chosen by measured coverage (docs/intervals.md): in
#: [0.93, 0.97] on 89 of 140 cells at 10-20 distinct queries (``"t"``: 73) and
#: 69 of 70 at 50 (``"t"``: 30); the bootstrap under-covers badly on
#: heavy-tailed pools below 50 queries, Fieller is ``"t"`` without the prior.
AUTO_RULE = "t_draws"
#: Below this many distinct queries a warning says the coverage is not
#: reliable (measured >= 0.93 at about 5 queries with the model prior).
MIN_RELIABLE_DISTINCT = 5
#: The same without the model prior (measured down to 0.58 at 5 and 0.68 at
#: 10 queries on heavy-tailed pools).
MIN_RELIABLE_DISTINCT_NO_PRIOR = 20
#: Weight of the model's predicted variance, in sample degrees of freedom.
DEFAULT_PRIOR_DOF = 2.0
DEFAULT_N_BOOT = 999


class FewDistinctQueriesWarning(FewLabelsWarning):
    """Few distinct queries: the interval's coverage is not reliable.

    A :class:`FewLabelsWarning`, so one filter silences both.
    """


class TooFewQueriesError(ValueError):
    """Fewer than two distinct queries: no standard error can be estimated."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class IntervalEstimate:
    """Point estimate, standard error and interval of one run.

    Attributes
    ----------
    estimate : float
    standard_error : float
        Cluster (distinct-query) standard error; the per-draw one for ``ci="normal"``.
    low, high : float
        Interval at ``confidence_level``.
    confidence_level : float
    ci : str
        The interval actually used (``"auto"`` resolved).
    dof : float
        Degrees of freedom of the ``t`` quantile (``inf`` for ``"normal"``).
    n_draws, n_distinct : int
    """

    estimate: float
    standard_error: float
    low: float
    high: float
    confidence_level: float
    ci: str
    dof: float
    n_draws: int
    n_distinct: int


@dataclass(frozen=True, eq=False)
class BatchIntervals:
    """Estimates and intervals of many runs (arrays of one shape, e.g. ``(n_budgets, n_reps)``).

    ``standard_error`` is NaN only where a run has fewer than two distinct
    queries (``n_distinct < 2``); ``low``/``high`` are then ``-inf``/``inf``.
    """

    estimate: np.ndarray
    standard_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    dof: np.ndarray
    n_draws: np.ndarray
    n_distinct: np.ndarray
    ci: str
    confidence_level: float

    def covers(self, truth) -> np.ndarray:
        """Whether each interval contains ``truth`` (broadcast)."""
        return (self.low <= truth) & (truth <= self.high)


# --------------------------------------------------------------------------- validation


def _level_iv(confidence_level) -> float:
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, numbers.Real) \
            or not 0 < confidence_level < 1:
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}.")
    return float(confidence_level)


def _ci_iv(ci) -> str:
    if ci not in CI_KINDS:
        raise ValueError(f"`ci` must be one of {list(CI_KINDS)}; got {ci!r}.")
    return ci


def _n_boot_iv(n_boot) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (numbers.Integral, np.integer)) or n_boot < 99:
        raise ValueError(f"`n_boot` must be an integer >= 99; got {n_boot!r}.")
    return int(n_boot)


def resolve_ci(ci: str) -> str:
    """The interval ``ci="auto"`` stands for (:data:`AUTO_RULE`); other kinds unchanged.

    Examples
    --------
    >>> resolve_ci("auto"), resolve_ci("bootstrap")
    ('t_draws', 'bootstrap')
    """
    _ci_iv(ci)
    return AUTO_RULE if ci == "auto" else ci


def critical_value(confidence_level, dof):
    """Two-sided Student-t quantile ``t_{dof, 1 - alpha/2}`` (normal for ``dof = inf``), array-wise.

    Examples
    --------
    >>> round(float(critical_value(0.95, 4)), 4), round(float(critical_value(0.95, np.inf)), 4)
    (2.7764, 1.96)
    """
    from scipy import stats

    level = _level_iv(confidence_level)
    dof = np.asarray(dof, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        q = stats.t.ppf(0.5 + level / 2, np.where(dof >= 1, dof, np.nan))
    return np.where(np.isinf(dof), stats.norm.ppf(0.5 + level / 2), q)
