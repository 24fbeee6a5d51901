"""Results: one family of frozen dataclasses for every target and schedule.

:class:`EstimateResult` (one ranker), :class:`ComparisonResult` (two),
:class:`MultiComparisonResult` (candidates vs a baseline),
:class:`SystemRankingResult` (ranking k systems), and their target-precision
variants whose interval is an anytime-valid confidence sequence.  They are
built in one place, :mod:`activerank.engine.assemble`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .._validation import confidence_level_iv
from . import _report
from .intervals import (
    ConfidenceInterval,
    SimultaneousIntervals,
    kendall_tau,
    normal_cdf,
    normal_quantile,
    prob_positive,
)
from .judgments import JudgmentSet
from .ranges import UNBOUNDED, contrast_bounds, relative_bounds, trim
from .sequences import INTERVAL_KIND, _alpha, cs_radius
from .small_sample import BootstrapPivots

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "ComparisonResult",
    "EstimateResult",
    "MultiComparisonResult",
    "RunInfo",
    "SequentialComparisonResult",
    "SequentialEstimateResult",
    "SystemRankingResult",
]


def _critical(confidence_level, dof: float) -> float:
    """Two-sided critical value: normal for ``dof = inf``, else Student-t."""
    z = normal_quantile(confidence_level)
    if math.isinf(dof):
        return z
    from scipy.special import stdtrit

    return float(stdtrit(dof, 0.5 + confidence_level / 2))


def _cdf(x: float, dof: float) -> float:
    if math.isinf(dof):
        return float(normal_cdf(x))
    from scipy.special import stdtr

    return float(stdtr(dof, x))


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class RunInfo:
    """What every budgeted run reports, whatever it estimates."""

    metric: str
    method: str
    n_draws: int
    n_queries: int
    cost_spent: float
    budget: float
    effective_sample_size: float
    trace: "pd.DataFrame" = field(repr=False)
    exact: bool = False
    #: the interval kind used: ``"t"`` (cluster standard error over distinct queries, moderated by the
    #: relevance model's predicted variance, Student-t with ``dof`` degrees of freedom), ``"t_draws"`` (the
    #: per-draw standard error, moderated, Student-t with Kish's effective number of distinct queries minus
    #: one), ``"bootstrap"`` (``"t"``'s standard error with studentized cluster-bootstrap quantiles) or
    #: ``"normal"``
    ci: str = "normal"
    #: degrees of freedom of the intervals (``d - 1`` for ``d`` distinct sampled queries; ``inf``: normal)
    dof: float = math.inf
    #: the studentized bootstrap distribution (``ci="bootstrap"``), else None
    bootstrap: BootstrapPivots | None = field(default=None, repr=False)
    #: every label the run held when it ended (given with ``judgments=`` or bought: ``judgments.bought``);
    #: pass it as ``judgments=`` to a later call to reuse them
    judgments: JudgmentSet | None = field(default=None, repr=False)
    #: ``(low, high)``: the range of one ranker's metric (``inf``: unbounded; nDCG, ERR, P@k ... ``(0, 1)``,
    #: DCG ``(0, inf)``).  Every estimate and interval of the result lies inside the range of what it
    #: estimates: this one for a ranker's mean, ``(low - high, high - low)`` for a difference
    #: (:mod:`activerank.inference.ranges`)
    metric_range: tuple = UNBOUNDED
    #: a point estimate lay outside its range and was moved to the nearest bound (closer to every possible
    #: true value); :attr:`unadjusted` keeps the raw values
    range_adjusted: bool = False
    #: the raw values of the point estimates moved into range, by field name (empty when none was)
    unadjusted: dict = field(default_factory=dict, repr=False)
    #: the estimate rests on fewer than 5 judged queries (a ``FewLabelsWarning`` said so): its standard error
    #: and interval are not reliable
    few_labels: bool = False
    #: what ``budget`` and ``cost_spent`` count: ``"queries"`` (the pool's mean query cost), ``"cost"`` (the
    #: cost model's own unit) or ``"documents"`` (judgments)
    budget_unit: str = "queries"

    @property
    def budget_left(self) -> float:
        """``budget - cost_spent``: what the run left unspent (never negative), in ``budget_unit``."""
        return max(0.0, self.budget - self.cost_spent)

    # ------------------------------------------------------------------ presentation (one family)

    def summary(self, confidence_level: float | None = None, simultaneous=True) -> pd.DataFrame:
        """Table of the estimates, one row per estimated quantity, and the run's facts.

        The rows' columns depend on the result's kind (estimate or difference, standard error, interval
        ``low``/``high`` ...).  The run's facts -- ``n_queries``, ``labels_bought`` (documents the labeler
        judged in this call), ``cost_spent``, ``budget``, ``method``, ``chosen_because`` (why
        ``method="auto"`` chose it, else None) and, for target-precision runs, ``stopping_reason`` -- are
        in ``attrs["run"]``; the one-row tables of one ranker or one difference also end with them as
        columns (the several-system tables keep one column per statistic of a system).

        Parameters
        ----------
        confidence_level : float in (0, 1), optional
            Level of the intervals: default 0.95, or the level a target-precision run stopped on.
        simultaneous : True, False or "bonferroni", default True
            Results with several contrasts only: jointly valid intervals (see ``confidence_intervals``).
        """
        level = self._level(confidence_level)
        return _report.summary_frame(self, self._rows(level, simultaneous), level, self._extra(),
                                     self._run_columns)

    def to_dict(self) -> dict:
        """Every field but the trace as JSON-safe data (floats, lists, None for NaN and infinity), with the
        intervals at the default level, why ``method="auto"`` chose the method (``"auto"``) and the
        judgments as ``[query_id, doc_id, grade]`` records; ``json.loads(json.dumps(d)) == d``."""
        return _report.result_dict(self, self._derived(self._level(None)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._headline()})"

    def _repr_html_(self) -> str:
        return _report.result_html(self, self.summary())

    #: whether the summary's rows end with the run's facts (the one-row tables)
    _run_columns = False

    def _level(self, confidence_level: float | None) -> float:
        return 0.95 if confidence_level is None else confidence_level_iv(confidence_level)

    def _extra(self) -> dict:
        return {}

    def _tail(self) -> str:
        return f"{self.n_queries} quer{'y' if self.n_queries == 1 else 'ies'}, method {self.method}"

    def _rows(self, level: float, simultaneous) -> pd.DataFrame:  # pragma: no cover - overridden
        raise NotImplementedError

    def _derived(self, level: float) -> dict:  # pragma: no cover - overridden
        raise NotImplementedError

    def _headline(self) -> str:
        return f"{self.metric}, {self._tail()}"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class _Result(RunInfo):
    standard_error: float
    control_coefficient: float | None = None

    _run_columns = True

    def _point(self) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def _bounds(self) -> tuple:  # pragma: no cover - overridden
        raise NotImplementedError

    #: the field :meth:`_point` reads (its raw value is ``unadjusted[_point_field]`` when it was moved)
    _point_field = ""

    def confidence_interval(self, confidence_level: float = 0.95, *, in_range: bool = True) -> ConfidenceInterval:
        """Interval ``point +- c * standard_error``, intersected with the range of the estimated quantity.

        ``c`` is the Student-t quantile with :attr:`dof` degrees of freedom (``ci="t"``, ``"t_draws"``), or
        the normal one (``ci="normal"``, ``dof = inf``); with ``ci="bootstrap"`` the interval is the
        asymmetric ``[point - t_hi SE, point - t_lo SE]`` from the quantiles of the studentized bootstrap
        replicates (:class:`~activerank.inference.small_sample.BootstrapPivots`).  The true value lies in
        the range (:attr:`metric_range`), so intersecting never loses it; ``in_range=False`` gives the raw
        interval around the unadjusted point estimate.
        """
        level = confidence_level_iv(confidence_level)
        point = self._point()
        raw = float(self.unadjusted.get(self._point_field, point))
        if not in_range:
            return ConfidenceInterval(*self._raw_interval(raw, level))
        low, high = self._raw_interval(point, level)
        if raw != point and not np.isnan(raw):  # moved into range: keep the raw interval's part too
            raw_low, raw_high = self._raw_interval(raw, level)
            low, high = min(low, raw_low), max(high, raw_high)
        return ConfidenceInterval(*trim(low, high, self._bounds()))

    def _raw_interval(self, point: float, level: float) -> tuple:
        if self.bootstrap is not None:
            return self.bootstrap.interval(point, self.standard_error, level)
        z = _critical(level, self.dof)
        return point - z * self.standard_error, point + z * self.standard_error

    def _scalar_headline(self, label: str, sign: bool) -> str:
        """``label = 0.281 ± 0.021, 95% CI [0.240, 0.322]``, to two significant digits of the SE."""
        level = self._level(None)
        low, high = self.confidence_interval(level)
        places = _report.decimals(self.standard_error)
        f = _report.fmt
        return (f"{label} = {f(self._point(), places, sign)} ± {f(self.standard_error, places)}, "
                f"{100 * level:g}% CI [{f(low, places, sign)}, {f(high, places, sign)}]")

    def _scalar_rows(self, name: str, level: float, columns: dict) -> pd.DataFrame:
        import pandas as pd

        low, high = self.confidence_interval(level)
        cols = {"standard_error": self.standard_error, "low": low, "high": high, **columns}
        return pd.DataFrame({k: [v] for k, v in cols.items()}, index=pd.Index([name], name="name"))

    def _scalar_derived(self, level: float) -> dict:
        return {"confidence_level": level, "confidence_interval": list(self.confidence_interval(level))}


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
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

    _point_field = "estimate"

    def _point(self) -> float:
        return self.estimate

    def _bounds(self) -> tuple:
        return tuple(self.metric_range)

    def _rows(self, level: float, simultaneous) -> pd.DataFrame:
        df = self._scalar_rows(self.metric, level, {})
        df.insert(0, "estimate", self.estimate)
        return df

    def _derived(self, level: float) -> dict:
        return self._scalar_derived(level)

    def _headline(self) -> str:
        return f"{self._scalar_headline(self.metric, False)}, {self._tail()}"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class ComparisonResult(_Result):
    """Estimate of ``Delta = R_a - R_b`` for two rankers on the same queries.

    ``difference`` is the estimated ``Delta``; ``estimate_a`` and
    ``estimate_b`` are the two rankers' own self-normalized importance-weighted
    estimates from the same draws, without any control variate -- so for the
    model-assisted methods ``estimate_a - estimate_b`` differs from
    ``difference``.  They are NaN when only the documents that can change the
    difference were judged (``judge="changeable"``, the default of
    comparisons of additive and cascade metrics).
    """

    difference: float
    estimate_a: float
    estimate_b: float

    _point_field = "difference"

    def _point(self) -> float:
        return self.difference

    def _bounds(self) -> tuple:
        return contrast_bounds(self.metric_range)

    def prob_a_better(self) -> float:
        """Probability that ``Delta > 0`` (Student-t with :attr:`dof`, normal for ``inf``, the bootstrap-t
        distribution for ``ci="bootstrap"``; NaN without a standard error)."""
        if np.isnan(self.difference) or np.isnan(self.standard_error):
            return np.nan
        if self.standard_error == 0:
            return float(self.difference > 0)
        if self.bootstrap is not None:
            return self.bootstrap.prob_positive(self.difference, self.standard_error)
        return float(_cdf(self.difference / self.standard_error, self.dof))

    def _rows(self, level: float, simultaneous) -> pd.DataFrame:
        df = self._scalar_rows("a - b", level, {"prob_a_better": self.prob_a_better(),
                                                "estimate_a": self.estimate_a, "estimate_b": self.estimate_b})
        df.insert(0, "difference", self.difference)
        return df

    def _derived(self, level: float) -> dict:
        return {**self._scalar_derived(level), "prob_a_better": self.prob_a_better()}

    def _headline(self) -> str:
        return (f"{self._scalar_headline(self.metric + ' a - b', True)}, "
                f"P(a better) = {self.prob_a_better():.2f}, {self._tail()}")


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class MultiComparisonResult(RunInfo):
    """Differences ``Delta_j = R_j - R_baseline`` of ``m`` candidates, from one set of draws.

    Attributes
    ----------
    names : tuple of str
        Candidate names (``m``).
    baseline : str
        Baseline name.
    differences : ndarray of shape (m,)
        Estimated ``Delta_j``.
    standard_errors : ndarray of shape (m,)
    covariance : ndarray of shape (m, m)
        Joint delta-method covariance of the ``differences`` (same draws, so
        they are correlated through the shared baseline and queries).
    estimates : ndarray of shape (m,)
        Candidates' own mean metric estimates (NaN with ``judge="changeable"``).
    baseline_estimate : float
    metric, method, n_draws, n_queries, cost_spent, budget, effective_sample_size
        As in :class:`~activerank.inference.results.ComparisonResult`.
    trace : pandas.DataFrame
        One row per draw: ``draw, query, query_id, q, p, weight, new, cost,
        cumulative_cost``, then ``value_<name>`` per system (baseline last) and
        ``delta_<name>`` per candidate.
    """

    names: tuple
    baseline: str
    differences: np.ndarray
    standard_errors: np.ndarray
    covariance: np.ndarray
    estimates: np.ndarray
    baseline_estimate: float

    def confidence_intervals(self, confidence_level: float = 0.95, simultaneous=True, *,
                             in_range: bool = True) -> SimultaneousIntervals:
        """Intervals for every ``Delta_j``; by default jointly valid (max-|t|).

        Parameters
        ----------
        confidence_level : float in (0, 1), default 0.95
        simultaneous : True, False or "bonferroni", default True
            True: all ``m`` intervals cover jointly with ``confidence_level``
            (max-|t| of the joint normal with :attr:`covariance`); False:
            each one separately (= ``activerank.compare``'s interval);
            ``"bonferroni"``: conservative joint coverage.
        in_range : bool, default True
            Intersect each interval with the range of a difference, ``(low - high, high - low)`` of
            :attr:`metric_range` (False: the raw intervals around the unadjusted differences).
        """
        if not in_range:
            return SimultaneousIntervals.build(self.names, self.unadjusted.get("differences", self.differences),
                                               self.covariance, confidence_level, simultaneous=simultaneous,
                                               dof=self.dof)
        return SimultaneousIntervals.build(self.names, self.differences, self.covariance,
                                           confidence_level, simultaneous=simultaneous, dof=self.dof,
                                           bounds=contrast_bounds(self.metric_range))

    def prob_better(self) -> np.ndarray:
        """Probability that each ``Delta_j > 0`` (Student-t with :attr:`dof`, normal for ``inf``), shape (m,)."""
        return prob_positive(self.differences, self.standard_errors, self.dof)

    def _rows(self, level: float, simultaneous) -> pd.DataFrame:
        """One row per candidate: own estimate, difference, SE, interval, P(better than baseline)."""
        df = self.confidence_intervals(level, simultaneous).to_frame()
        df = df.rename(columns={"estimate": "difference"})
        df.insert(0, "estimate", self.estimates)
        df["prob_better"] = self.prob_better()
        return df

    def _derived(self, level: float) -> dict:
        return {"confidence_level": level,
                "confidence_intervals": _interval_dict(self.confidence_intervals(level)),
                "prob_better": self.prob_better()}

    def _headline(self) -> str:
        shown = [f"{n} {_report.fmt(d, _report.decimals(s), True)} ± {_report.fmt(s, _report.decimals(s))}"
                 for n, d, s in zip(self.names[:3], self.differences, self.standard_errors)]
        more = f", ... ({len(self.names) - 3} more)" if len(self.names) > 3 else ""
        return f"{self.metric} vs {self.baseline!r}: {', '.join(shown)}{more}, {self._tail()}"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SystemRankingResult(RunInfo):
    """Estimated ordering of ``k`` systems from one set of draws.

    Attributes
    ----------
    names : tuple of str
    estimates : ndarray of shape (k,)
        Each system's estimated mean metric ``R_i`` (NaN when only the
        documents that can change a difference were judged, ``judge="changeable"``:
        the pairwise results then come from ``relative``).
    covariance : ndarray of shape (k, k)
        Joint covariance of ``estimates``.
    relative : ndarray of shape (k,)
        ``R_i - mean_l R_l``: difference to the mean system (sums to 0).
    relative_covariance : ndarray of shape (k, k)
        Covariance of ``relative`` (rank ``k - 1``).
    standard_errors : ndarray of shape (k,)
        Standard errors of ``relative``.
    ranking : tuple of str
        Names ordered best first by the estimates.
    win_probabilities : pandas.DataFrame of shape (k, k)
        ``P(R_i > R_j)`` under the normal approximation of ``R_hat_i - R_hat_j``
        (rows ``i``, columns ``j``; 0.5 on the diagonal).
    """

    names: tuple
    estimates: np.ndarray
    covariance: np.ndarray
    relative: np.ndarray
    relative_covariance: np.ndarray
    standard_errors: np.ndarray
    ranking: tuple
    win_probabilities: "pd.DataFrame" = field(repr=False)

    def confidence_intervals(self, confidence_level: float = 0.95, simultaneous=True, *,
                             in_range: bool = True) -> SimultaneousIntervals:
        """Intervals for every ``R_i - mean R`` (jointly valid by default; see
        :meth:`MultiComparisonResult.confidence_intervals`), intersected with the range of a distance to
        the mean of ``k`` systems, ``+-(high - low)(k - 1)/k`` of :attr:`metric_range` unless ``in_range``
        is False."""
        if not in_range:
            return SimultaneousIntervals.build(self.names, self.unadjusted.get("relative", self.relative),
                                               self.relative_covariance, confidence_level,
                                               simultaneous=simultaneous, dof=self.dof)
        return SimultaneousIntervals.build(self.names, self.relative, self.relative_covariance,
                                           confidence_level, simultaneous=simultaneous, dof=self.dof,
                                           bounds=relative_bounds(self.metric_range, len(self.names)))

    def pairwise_intervals(self, confidence_level: float = 0.95, simultaneous=True, *,
                           in_range: bool = True) -> SimultaneousIntervals:
        """Intervals for all ``k(k-1)/2`` differences ``R_i - R_j`` (``i < j``), named ``"i - j"``;
        simultaneous over all pairs by default (a Tukey-type max-|t| interval), intersected with the range
        of a difference unless ``in_range`` is False.  They rest on the unadjusted estimates: moving two
        estimates into range separately would distort their difference."""
        k = len(self.names)
        i, j = np.triu_indices(k, 1)
        A = np.zeros((i.size, k))
        A[np.arange(i.size), i] = 1.0
        A[np.arange(i.size), j] = -1.0
        labels = [f"{self.names[a]} - {self.names[b]}" for a, b in zip(i, j)]
        est, cov = self._pairwise_basis()
        return SimultaneousIntervals.build(labels, A @ est, A @ cov @ A.T, confidence_level,
                                           simultaneous=simultaneous, dof=self.dof,
                                           bounds=contrast_bounds(self.metric_range) if in_range else None)

    def _pairwise_basis(self) -> tuple:
        """The unadjusted ``estimates`` and ``covariance``, or -- when only differences were judged (NaN
        estimates) -- ``relative`` and its covariance, which have the same pairwise differences."""
        if np.isnan(self.estimates).any():
            return self.unadjusted.get("relative", self.relative), self.relative_covariance
        return self.unadjusted.get("estimates", self.estimates), self.covariance

    def kendall_tau(self, truth) -> float:
        """Kendall's tau-b between the estimated and a given true ordering.

        ``truth``: true mean metric (or any score, higher = better) per system,
        an array in ``names`` order or a mapping ``{name: value}``.
        """
        if isinstance(truth, dict):
            missing = [n for n in self.names if n not in truth]
            if missing:
                raise ValueError(f"`truth` has no value for system(s) {missing}.")
            truth = [truth[n] for n in self.names]
        t = np.asarray(truth, dtype=np.float64).reshape(-1)
        if t.size != len(self.names):
            raise ValueError(f"`truth` must have one value per system ({len(self.names)}); got {t.size}.")
        return kendall_tau(self._pairwise_basis()[0], t)

    def _rows(self, level: float, simultaneous) -> pd.DataFrame:
        """Systems best first: estimate, relative difference, SE, interval, rank."""
        import pandas as pd

        df = self.confidence_intervals(level, simultaneous).to_frame()
        df = df.rename(columns={"estimate": "relative"})
        df.insert(0, "estimate", self.estimates)
        df["rank"] = pd.Series({n: r + 1 for r, n in enumerate(self.ranking)})
        return df.loc[list(self.ranking)]

    def _derived(self, level: float) -> dict:
        win = self.win_probabilities
        return {"confidence_level": level,
                "confidence_intervals": _interval_dict(self.confidence_intervals(level)),
                "win_probabilities": {str(i): {str(j): float(win.loc[i, j]) for j in win.columns} for i in win.index}}

    def _headline(self) -> str:
        order = " > ".join(self.ranking[:6]) + (" > ..." if len(self.ranking) > 6 else "")
        return f"{self.metric} ranking {order}, {self._tail()}"


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class _Anytime:
    """Mixin: the interval is the confidence sequence at the stopping time."""

    interval: str = INTERVAL_KIND
    stopping_reason: str
    confidence_level: float
    target_half_width: float
    half_width: float
    rho: float
    sigma: float
    center: float
    #: ``(t_min, t_max)`` of the windowed sequence (``sequence="windowed"``), None for the others
    window: tuple | None = None
    #: the stopping interval: ``"windowed"``, ``"mixture"`` (confidence sequences) or ``"fixed_width"``
    sequence: str = "mixture"

    def confidence_interval(self, confidence_level: float | None = None, *,
                            in_range: bool = True) -> ConfidenceInterval:
        """The stopping rule's interval at the stopping time (not the Wald interval).

        Anytime-valid for the confidence sequences; for ``sequence="fixed_width"``
        the Chow-Robbins interval, valid at this stop.  ``confidence_level``
        defaults to the level the run stopped on; any other level gives the
        same kind of interval at that level (same window, or same ``rho``).
        It is intersected with the range of the estimated quantity (which
        holds the true value at every time, so validity is kept) unless
        ``in_range`` is False.
        """
        level = self.confidence_level if confidence_level is None else confidence_level
        _alpha(level)
        point = self._point()  # type: ignore[attr-defined]  # of the result class this is mixed into
        raw = float(self.unadjusted.get(self._point_field, point))  # type: ignore[attr-defined]
        if self.stopping_reason == "all_judged":
            return ConfidenceInterval(point, point)
        r = self._radius(level)
        if not in_range:
            return ConfidenceInterval(raw - r, raw + r)
        return ConfidenceInterval(*trim(min(point, raw) - r, max(point, raw) + r,
                                        self._bounds()))  # type: ignore[attr-defined]

    def _radius(self, level: float) -> float:
        """Half-width of the stopping rule's interval at ``level``."""
        n = self.n_draws  # type: ignore[attr-defined]
        if self.sequence == "fixed_width":
            from .confidence_sequences import fixed_width_radius

            return float(fixed_width_radius(n, self.sigma, level))
        if self.window is not None:
            from .confidence_sequences import windowed_cs

            t_min, t_max = self.window
            return float(windowed_cs(t_min, t_max, level).radius(n, self.sigma))
        return float(cs_radius(n, self.sigma, level, rho=self.rho))

    def _level(self, confidence_level: float | None) -> float:
        return self.confidence_level if confidence_level is None else confidence_level_iv(confidence_level)

    def _extra(self) -> dict:
        return {"stopping_reason": self.stopping_reason}

    def _headline(self) -> str:
        return f"{super()._headline()}, stopped: {self.stopping_reason}"  # type: ignore[misc]


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SequentialEstimateResult(_Anytime, EstimateResult):
    """:class:`~activerank.inference.results.EstimateResult` of a run stopped at a target precision.

    Attributes
    ----------
    estimate : float
        Mean of the centered importance-sampling terms at the stopping time.
    standard_error : float
        ``sigma / sqrt(n_draws)``: the fixed-n standard error, for reference
        only -- the Wald interval is *not* valid after data-dependent stopping.
    interval : str
        What :meth:`confidence_interval` returns (:data:`INTERVAL_KIND`).
    stopping_reason : {"target", "budget", "all_judged", "all_reachable_judged", "max_draws"}
    confidence_level, target_half_width, half_width : float
        Level the rule used, the requested and the attained half-width.
    rho, sigma, center : float
        Mixture parameter, terms' standard deviation and the centering ``c``.
    """


@dataclass(frozen=True, eq=False, kw_only=True, repr=False)
class SequentialComparisonResult(_Anytime, ComparisonResult):
    """:class:`~activerank.inference.results.ComparisonResult` of a run stopped at a target precision.

    Same extra attributes as :class:`SequentialEstimateResult`; ``difference``
    is ``estimate_a - estimate_b`` (each the centered IS mean of its ranker).
    ``prob_a_better`` uses the fixed-n normal approximation and is not
    anytime-valid; use ``confidence_interval()`` to decide.
    """


def _interval_dict(ci: SimultaneousIntervals) -> dict:
    return {"names": list(ci.names), "low": ci.low, "high": ci.high, "critical_value": ci.critical_value,
            "simultaneous": ci.simultaneous}
