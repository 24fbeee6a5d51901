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
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BatchEstimate",
    "LowEffectiveSampleSizeWarning",
    "MIN_EFFECTIVE_SAMPLE_SIZE",
    "SNISEstimate",
    "joint_snis",
    "kish_ess",
    "mean_batch",
    "snis",
    "snis_batch",
    "snis_prefix",
    "warn_if_low_ess",
]

MIN_EFFECTIVE_SAMPLE_SIZE = 10.0


class LowEffectiveSampleSizeWarning(UserWarning):
    """The importance weights leave few effective samples; the CI may under-cover."""


def _user_stacklevel() -> int:
    """Stack level of the first frame outside this package, so a warning points at the user's call."""
    import os
    import sys
    import types  # noqa: F401  (the annotation)

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame: "types.FrameType | None" = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def kish_ess(weights) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of ``n`` weights: exactly ``n`` when the weights
    are equal, never above ``n`` (rounding would otherwise give ``n - 1e-15``).

    Examples
    --------
    >>> kish_ess(np.full(10, 0.1)), kish_ess([1.0, 3.0])
    (10.0, 1.6)
    """
    w = np.asarray(weights, dtype=np.float64)
    n = w.size
    if n == 0:
        return 0.0
    ess = float(w.sum() ** 2 / np.dot(w, w))
    return float(n) if ess >= n * (1.0 - 1e-12) else ess


def warn_if_low_ess(ess: float, n_draws: int, stacklevel: int | None = None, *, interval: str = "confidence interval"):
    """Warn that few effective samples leave ``interval`` (the interval the result reports, in words) shaky;
    the warning names the user's call.  It fires only below the threshold, not on rounding noise."""
    if ess < MIN_EFFECTIVE_SAMPLE_SIZE * (1.0 - 1e-9) and ess < n_draws * (1.0 - 1e-9):
        warnings.warn(
            f"effective sample size {ess:.3g} (from {n_draws} draws) is below "
            f"{MIN_EFFECTIVE_SAMPLE_SIZE:g}: the {interval} may "
            "under-cover. Increase the budget or the defensive mixture weight.",
            LowEffectiveSampleSizeWarning,
            stacklevel=_user_stacklevel() if stacklevel is None else stacklevel,
        )


@dataclass(frozen=True)
class SNISEstimate:
    estimate: float
    standard_error: float
    effective_sample_size: float


def snis(values, weights, *, n_distinct=None) -> SNISEstimate:
    """Self-normalized importance-weighted mean with delta-method standard error.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Observed metric values (or differences) of the draws.
    weights : ndarray of shape (n,)
        Importance weights ``p/q`` of the draws.
    n_distinct : int, optional
        Number of distinct queries among the draws; with fewer than 2 the
        spread of the draws says nothing about the pool, so the standard
        error is NaN (repeats of one query would otherwise give SE = 0).

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
    ess = kish_ess(w)
    if n < 2 or (n_distinct is not None and n_distinct < 2):
        return SNISEstimate(est, np.nan, ess)
    se2 = n / (n - 1) * np.dot(w * w, (v - est) ** 2) / total**2
    return SNISEstimate(est, float(np.sqrt(se2)), ess)


def joint_snis(values, weights, *, n_distinct=None):
    """Self-normalized IS means of several value columns with their joint covariance.

    Parameters
    ----------
    values : ndarray of shape (n, s)
        Metric values of the ``n`` draws under ``s`` systems.
    weights : ndarray of shape (n,)
        Importance weights ``p/q``.
    n_distinct : int, optional
        Distinct queries among the draws; with fewer than 2 the covariance is NaN.

    Returns
    -------
    estimate : ndarray of shape (s,)
    covariance : ndarray of shape (s, s)
        Delta-method covariance ``n/(n-1) sum w^2 (v - est)(v - est)^T / (sum w)^2``
        (NaN for ``n < 2``).
    ess : float
        Kish effective sample size.

    Examples
    --------
    >>> est, cov, ess = joint_snis(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), np.ones(4))
    >>> est.tolist(), round(float(cov[0, 0]), 6), float(cov[0, 1]), ess
    ([0.5, 0.5], 0.083333, 0.0, 4.0)
    """
    v = np.asfortranarray(values, dtype=np.float64)  # contiguous columns: same dot as snis()
    w = np.asarray(weights, dtype=np.float64)
    n, s = v.shape
    if n == 0:
        return np.full(s, np.nan), np.full((s, s), np.nan), 0.0
    total = w.sum()
    # column by column with np.dot, exactly as snis() does (bitwise-identical estimates)
    est = np.array([np.dot(w, v[:, j]) for j in range(s)]) / total
    ess = kish_ess(w)
    if n < 2 or (n_distinct is not None and n_distinct < 2):
        return est, np.full((s, s), np.nan), ess
    r = (v - est) * w[:, None]
    cov = n / (n - 1) * (r.T @ r) / total**2
    diag = np.array([np.dot(w * w, (v[:, j] - est[j]) ** 2) for j in range(s)])
    cov[np.diag_indices(s)] = n / (n - 1) * diag / total**2
    return est, cov, ess


# --------------------------------------------------------------------------- design


# --------------------------------------------------------------------------- batched (harness)


@dataclass(frozen=True, eq=False)
class BatchEstimate:
    """Estimates of many runs (any leading shape, e.g. ``(n_budgets, n_reps)``).

    Attributes
    ----------
    estimate : ndarray
        Self-normalized importance-weighted mean (NaN for a run without draws).
    standard_error : ndarray
        Delta-method standard error (NaN for runs with fewer than two draws).
    effective_sample_size : ndarray
        Kish's ``(sum w)^2 / sum w^2`` (0 for a run without draws).
    n_draws : ndarray of int
    """

    estimate: np.ndarray
    standard_error: np.ndarray
    effective_sample_size: np.ndarray
    n_draws: np.ndarray


def _gather_prefix(cums: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Prefix sums ``sum_{j < stop}`` from cumulative sums (0 where stop == 0)."""
    idx = np.maximum(stops - 1, 0)
    rows = np.arange(cums.shape[0])[None, :]
    out = cums[rows, idx]
    return np.where(stops > 0, out, 0.0)


def snis_prefix(values, weights, stops) -> BatchEstimate:
    """SNIS estimates of every run on draw prefixes of given lengths.

    Parameters
    ----------
    values : ndarray of shape (n_reps, n_cols)
        Metric value (or difference) of every draw.
    weights : ndarray of shape (n_reps, n_cols)
        Importance weight ``p(x)/q(x)`` of every draw.
    stops : ndarray of shape (n_budgets, n_reps) or (n_reps,)
        Use the first ``stops[b, r]`` draws of run ``r``.

    Returns
    -------
    BatchEstimate
        Arrays of the shape of ``stops``.  With ``n`` draws the estimate is
        ``sum w v / sum w`` and the standard error
        ``sqrt(n/(n-1) * sum w^2 (v - est)^2 / (sum w)^2)``, as in
        :func:`snis`.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0, 1.0, 0.0]])
    >>> r = snis_prefix(v, np.ones_like(v), np.array([[4], [2]]))
    >>> r.estimate.ravel().tolist(), round(float(r.standard_error[0, 0]), 6)
    ([0.5, 0.5], 0.288675)
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 2 or w.shape != v.shape:
        raise ValueError(
            f"`values` and `weights` must be 2-d arrays of one shape (n_reps, n_cols); "
            f"got {v.shape} and {w.shape}."
        )
    st = np.asarray(stops)
    squeeze = st.ndim == 1
    st = np.atleast_2d(st).astype(np.int64)
    if st.shape[1] != v.shape[0]:
        raise ValueError(f"`stops` must have one column per repetition ({v.shape[0]}); got shape {st.shape}.")
    if st.size and (st.min() < 0 or st.max() > v.shape[1]):
        raise ValueError(f"`stops` must lie in 0..{v.shape[1]}; got range {st.min()}..{st.max()}.")
    if v.shape[1] == 0:
        z = np.zeros(st.shape)
        est = BatchEstimate(z + np.nan, z + np.nan, z, st)
    else:
        # SNIS is shift-equivariant: centre for numerically stable moment sums
        c = float(np.mean(v[:, 0]))
        d = v - c
        s_w = _gather_prefix(np.cumsum(w, axis=1), st)
        s_wv = _gather_prefix(np.cumsum(w * d, axis=1), st)
        w2 = w * w
        s_w2 = _gather_prefix(np.cumsum(w2, axis=1), st)
        s_w2v = _gather_prefix(np.cumsum(w2 * d, axis=1), st)
        s_w2vv = _gather_prefix(np.cumsum(w2 * d * d, axis=1), st)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_d = s_wv / s_w
            ss = np.maximum(s_w2vv - 2.0 * mean_d * s_w2v + mean_d**2 * s_w2, 0.0)
            se = np.sqrt(st / (st - 1.0) * ss / s_w**2)
            ess = np.where(st > 0, s_w**2 / s_w2, 0.0)
        estimate = np.where(st > 0, mean_d + c, np.nan)
        se = np.where(st > 1, se, np.nan)
        est = BatchEstimate(estimate, se, ess, st)
    if squeeze:
        return BatchEstimate(est.estimate[0], est.standard_error[0], est.effective_sample_size[0], est.n_draws[0])
    return est


def snis_batch(values, weights, valid) -> BatchEstimate:
    """SNIS estimate of every run of a :class:`BatchPlan`-shaped batch.

    Parameters
    ----------
    values, weights : ndarray of shape (n_reps, n_cols)
        Value and importance weight of every draw (anything where not valid).
    valid : ndarray of shape (n_reps, n_cols), bool
        A prefix mask per row (as in :class:`BatchPlan`).

    Returns
    -------
    BatchEstimate
        Arrays of shape ``(n_reps,)``.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 9.0, 9.0]])
    >>> ok = np.array([[True] * 4, [True, True, False, False]])
    >>> snis_batch(v, np.ones_like(v), ok).estimate.tolist()
    [0.5, 1.0]
    """
    valid = np.asarray(valid, dtype=bool)
    v = np.asarray(values, dtype=np.float64)
    if valid.shape != v.shape:
        raise ValueError(f"`valid` must have the shape of `values` {v.shape}; got {valid.shape}.")
    stops = valid.sum(axis=1)
    if not np.array_equal(valid, np.arange(v.shape[1])[None, :] < stops[:, None]):
        raise ValueError("`valid` must be a prefix mask in every row (True then False).")
    w = np.where(valid, np.asarray(weights, dtype=np.float64), 0.0)
    return snis_prefix(np.where(valid, v, 0.0), w, stops)


def mean_batch(values, valid) -> BatchEstimate:
    """Passive estimate: plain mean of every run's draws, SE ``s / sqrt(n)``.

    Equal to :func:`snis_batch` with constant weights (sampling from ``p``
    with a uniform ``p``).

    Examples
    --------
    >>> mean_batch(np.array([[1.0, 0.0, 1.0, 0.0]]), np.ones((1, 4), bool)).estimate.tolist()
    [0.5]
    """
    v = np.asarray(values, dtype=np.float64)
    return snis_batch(v, np.ones_like(v), valid)
