"""Self-normalized IS estimates with small-sample intervals: one run (:func:`snis_interval`), many runs
on draw prefixes (:func:`snis_intervals_prefix`), and ``k`` contrasts (:func:`contrast_intervals`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .clusters import ClusterSums, _kish_dof, cluster_slots, cluster_sums
from .kinds import (
    DEFAULT_N_BOOT,
    DEFAULT_PRIOR_DOF,
    MIN_RELIABLE_DISTINCT,
    MIN_RELIABLE_DISTINCT_NO_PRIOR,
    MODERATED,
    BatchIntervals,
    FewDistinctQueriesWarning,
    IntervalEstimate,
    TooFewQueriesError,
    _level_iv,
    critical_value,
    resolve_ci,
)
from .prior import _moderated_se
from .ratio import ratio_intervals


def _per_draw_se(cs: "ClusterSums", d_shift: np.ndarray) -> np.ndarray:
    """Per-draw delta-method SE of SNIS (the previous ``snis`` formula) from cluster sums."""
    n = cs.n_draws.astype(np.float64)
    S = {k: v.sum(-1) for k, v in cs.sums.items()}
    with np.errstate(invalid="ignore", divide="ignore"):
        r = S["a"] / S["b"]
        ss = np.maximum(S["w2vv"] - 2 * r * S["w2v"] + r * r * S["w2"], 0.0)
        se = np.sqrt(n / (n - 1.0) * ss) / S["b"]
    return np.where(n > 1, se, np.nan)


def snis_intervals_prefix(values, weights, queries, stops, *, confidence_level=0.95, ci="auto", prior=None,
                          prior_dof=DEFAULT_PRIOR_DOF, n_boot=DEFAULT_N_BOOT, rng=None,
                          slots=None) -> BatchIntervals:
    """Self-normalized IS estimates and small-sample intervals of many runs on draw prefixes.

    Parameters
    ----------
    values, weights : ndarray of shape (n_reps, n_cols)
        Value (or difference) and importance weight ``p/q`` of every draw.
    queries : ndarray of shape (n_reps, n_cols), int
        Drawn query of every draw (defines the distinct-query clusters).
    stops : ndarray of shape (n_budgets, n_reps) or (n_reps,)
        Prefix lengths.
    confidence_level, ci, prior_dof, n_boot, rng
        See :func:`ratio_intervals`.
    prior : PredictedVariance, optional
        The model's predicted variance of the design (:func:`predicted_variance`);
        ``ci="t"`` pools it with the sample variance.
    slots : ndarray, optional
        Precomputed :func:`cluster_slots` of ``queries``.

    Returns
    -------
    BatchIntervals
        Arrays of the shape of ``stops``.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0, 1.0, 0.0, 0.0]]); q = np.array([[0, 1, 0, 2, 3]])
    >>> r = snis_intervals_prefix(v, np.ones_like(v), q, np.array([[5]]), ci="t")
    >>> r.n_distinct.tolist(), round(float(r.estimate[0, 0]), 3), round(float(r.standard_error[0, 0]), 4)
    ([[4]], 0.4, 0.32)
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 2 or w.shape != v.shape or np.shape(queries) != v.shape:
        raise ValueError("`values`, `weights` and `queries` must be 2-d arrays of one shape (n_reps, n_cols); "
                         f"got {v.shape}, {w.shape} and {np.shape(queries)}.")
    st = np.asarray(stops)
    squeeze = st.ndim == 1
    st = np.atleast_2d(st).astype(np.int64)
    sl = cluster_slots(queries) if slots is None else slots
    kind = resolve_ci(ci)
    c = float(np.mean(v[:, 0])) if v.size else 0.0  # shift-equivariant: centre for well-conditioned sums
    d = v - c
    arrays = {"a": w * d, "b": w, "k": np.ones_like(w)}
    per_draw = kind in ("normal", "t_draws", "t_draws_distinct")
    if per_draw:
        w2 = w * w
        arrays.update(w2=w2, w2v=w2 * d, w2vv=w2 * d * d)
    cs = cluster_sums(arrays, sl, st)
    res = ratio_intervals(cs.sums["a"], cs.sums["b"], cs.mask, confidence_level=confidence_level, ci=kind,
                          prior_var=None if prior is None else prior.total(0.0), counts=cs.sums["k"],
                          prior_dof=prior_dof, n_boot=n_boot, rng=rng,
                          normal_se=_per_draw_se(cs, c) if per_draw else None, n_draws=st)
    res = _shift(res, c)
    return _squeeze(res) if squeeze else res


def _shift(res: BatchIntervals, c) -> BatchIntervals:
    return BatchIntervals(res.estimate + c, res.standard_error, res.low + c, res.high + c, res.dof,
                          res.n_draws, res.n_distinct, res.ci, res.confidence_level)


def _squeeze(res: BatchIntervals) -> BatchIntervals:
    return BatchIntervals(*(getattr(res, f)[0] for f in ("estimate", "standard_error", "low", "high", "dof",
                                                         "n_draws", "n_distinct")), res.ci, res.confidence_level)


def _single_iv(values, weights, queries):
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 1 or w.shape != v.shape:
        raise ValueError(f"`values` and `weights` must be 1-d arrays of one length; got {v.shape} and {w.shape}.")
    if not (np.isfinite(v).all() and np.isfinite(w).all()):
        raise ValueError("`values` and `weights` must be finite.")
    if (w <= 0).any():
        raise ValueError(f"`weights` must be positive; draw {int(np.flatnonzero(w <= 0)[0])} is {w[w <= 0][0]!r}.")
    x = np.arange(v.size) if queries is None else np.asarray(queries).reshape(-1)
    if x.shape != v.shape:
        raise ValueError(f"`queries` must have one entry per draw ({v.size}); got {x.size}.")
    return v, w, x


def _check_distinct(n_distinct: int, ci: str, has_prior: bool):
    if n_distinct < 2:
        raise TooFewQueriesError(
            f"a standard error needs at least 2 distinct queries; got {n_distinct} "
            "(repeats of one query carry no information about the spread over queries).")
    moderated = has_prior and ci in MODERATED
    limit = MIN_RELIABLE_DISTINCT if moderated else MIN_RELIABLE_DISTINCT_NO_PRIOR
    if n_distinct < limit:
        warnings.warn(
            f"only {n_distinct} distinct queries: the {ci!r} interval's coverage is not reliable below {limit}"
            + ("" if moderated else " without the model's predicted variance (`prior`)")
            + " (see docs/intervals.md).", FewDistinctQueriesWarning, stacklevel=3)


def snis_interval(values, weights, queries=None, *, confidence_level=0.95, ci="auto", prior=None,
                  prior_dof=DEFAULT_PRIOR_DOF, n_boot=DEFAULT_N_BOOT, rng=None) -> IntervalEstimate:
    """Self-normalized IS estimate of one run with a small-sample interval.

    Parameters
    ----------
    values : array-like of shape (n,)
        Value (or per-query difference) of every draw.
    weights : array-like of shape (n,)
        Importance weights ``p/q``.
    queries : array-like of shape (n,), optional
        Query of every draw; draws of one query form one cluster.  Default:
        every draw is a distinct query.
    confidence_level : float, default 0.95
    ci : {"auto", "t", "t_draws", "bootstrap", "normal", "fieller"}, default "auto"
        ``"auto"`` = :data:`AUTO_RULE` (``"t_draws"``).  ``"normal"`` reproduces the previous
        per-draw SE with a ``z`` interval.  See :func:`ratio_intervals`.
    prior : PredictedVariance, optional
        The relevance model's predicted variance of the design
        (:func:`predicted_variance`); recommended -- it keeps heavy-tailed
        pools (many queries with value 0, a few large) from giving
        near-zero standard errors at small ``d``.
    prior_dof : float, default 2
    n_boot : int, default 999
    rng : None, int or numpy.random.Generator
        For ``ci="bootstrap"``.

    Returns
    -------
    IntervalEstimate

    Raises
    ------
    TooFewQueriesError
        With fewer than two distinct queries.

    Warns
    -----
    FewDistinctQueriesWarning
        With fewer than :data:`MIN_RELIABLE_DISTINCT` distinct queries
        (:data:`MIN_RELIABLE_DISTINCT_NO_PRIOR` without ``prior``).

    Examples
    --------
    >>> from activerank.inference.small_sample import PredictedVariance
    >>> vals = [0.2, 0.5, 0.2, 0.9, 0.4, 0.6, 0.3, 0.8, 0.1, 0.7, 0.5]
    >>> r = snis_interval(vals, [1.0] * 11, queries=[0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9],
    ...                   prior=PredictedVariance(within=0.04, between=0.02))
    >>> r.ci, r.n_draws, r.n_distinct, round(r.dof, 3), round(r.estimate, 4)
    ('t_draws', 11, 10, 8.308, 0.4727)
    >>> round(r.standard_error, 4), round(r.low, 4), round(r.high, 4)
    (0.0778, 0.2945, 0.651)

    Query 0 was drawn twice: the cluster interval (``ci="t"``) counts it once
    with double weight, which over-states the with-replacement variance:

    >>> c = snis_interval(vals, [1.0] * 11, queries=[0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9], ci="t",
    ...                   prior=PredictedVariance(within=0.04, between=0.02))
    >>> c.dof, round(c.standard_error, 4), round(c.low, 4), round(c.high, 4)
    (9.0, 0.0861, 0.278, 0.6675)
    """
    v, w, x = _single_iv(values, weights, queries)
    kind = resolve_ci(ci)
    sl = cluster_slots(x)[None, :]
    d = int(sl.max()) + 1 if v.size else 0
    _check_distinct(d, kind, prior is not None)
    res = snis_intervals_prefix(v[None, :], w[None, :], x[None, :], np.array([v.size]), prior=prior,
                                prior_dof=prior_dof, confidence_level=confidence_level, ci=kind, n_boot=n_boot,
                                rng=rng, slots=sl)
    return IntervalEstimate(float(res.estimate[0]), float(res.standard_error[0]), float(res.low[0]),
                            float(res.high[0]), res.confidence_level, kind, float(res.dof[0]), int(v.size), d)


# --------------------------------------------------------------------------- k contrasts


@dataclass(frozen=True, eq=False)
class ContrastIntervals:
    """Joint estimates of ``s`` contrasts with the cluster covariance and t intervals.

    Attributes
    ----------
    estimate, standard_error, low, high : ndarray of shape (s,)
    covariance : ndarray of shape (s, s)
        Cluster (distinct-query) covariance of ``estimate``.
    dof : float
        ``d - 1`` (Kish's effective number of distinct queries minus 1 with ``per_draw=True``).
    critical_value : float
        Per-contrast ``t`` quantile, or the simultaneous max-|t| quantile of
        the multivariate ``t`` with ``dof`` degrees of freedom.
    simultaneous : bool
    n_draws, n_distinct : int
    """

    estimate: np.ndarray
    standard_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    covariance: np.ndarray
    dof: float
    critical_value: float
    simultaneous: bool
    n_draws: int
    n_distinct: int


def _max_abs_t_quantile(corr, level, dof):
    """Quantile of ``max_j |T_j|`` for a multivariate t with correlation ``corr`` (deterministic QMC)."""
    from ..intervals import max_abs_t_critical_value

    return max_abs_t_critical_value(corr, level, simultaneous=True, dof=dof)


def contrast_intervals(values, weights, queries=None, *, contrasts=None, confidence_level=0.95,
                       simultaneous=False, prior_variance=None, prior_dof=DEFAULT_PRIOR_DOF,
                       per_draw=False) -> ContrastIntervals:
    """SNIS estimates of several value columns (or linear contrasts of them) with t intervals.

    Parameters
    ----------
    values : array-like of shape (n, k)
        Values of the ``n`` draws under ``k`` systems.
    weights : array-like of shape (n,)
    queries : array-like of shape (n,), optional
    contrasts : array-like of shape (s, k), optional
        Rows of a matrix ``A``; estimates ``A R`` (default the identity).
        E.g. candidates minus a baseline: ``[I, -1]``.
    confidence_level : float
    simultaneous : bool, default False
        Max-|t| critical value of the multivariate ``t`` with ``d - 1``
        degrees of freedom (all intervals hold jointly).
    prior_variance : array-like of shape (s,), optional
        The model's predicted per-draw variance of every contrast
        (:meth:`PredictedVariance.total`); each contrast's SE is moderated with
        it as in :func:`ratio_intervals` (the covariance's correlations are kept).
    prior_dof : float, default 2
    per_draw : bool, default False
        The draws as units (``ci="t_draws"``): the per-draw delta-method
        covariance of the with-replacement design, the prior ``V / n``, and
        Kish's effective number of distinct queries ``n^2 / sum_c k_c^2``
        minus 1 as degrees of freedom (:func:`kish_distinct`).  Equal to the
        default without repeats.

    Returns
    -------
    ContrastIntervals

    Examples
    --------
    >>> V = np.array([[0.2, 0.1], [0.5, 0.6], [0.3, 0.1], [0.9, 0.7], [0.4, 0.4]])
    >>> r = contrast_intervals(V, np.ones(5), contrasts=[[1.0, -1.0]])
    >>> round(float(r.estimate[0]), 3), r.dof
    (0.08, 4.0)
    """
    V = np.asarray(values, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError(f"`values` must be 2-d (n_draws, n_systems); got shape {V.shape}.")
    w = np.asarray(weights, dtype=np.float64)
    A = np.eye(V.shape[1]) if contrasts is None else np.atleast_2d(np.asarray(contrasts, dtype=np.float64))
    if A.shape[1] != V.shape[1]:
        raise ValueError(f"`contrasts` must have {V.shape[1]} columns (one per system); got shape {A.shape}.")
    Y = V @ A.T
    _, w, x = _single_iv(Y[:, 0], w, queries)
    sl = cluster_slots(x)
    d = int(sl.max()) + 1 if x.size else 0
    if d < 2:
        raise TooFewQueriesError(f"a covariance needs at least 2 distinct queries; got {d}.")
    level = _level_iv(confidence_level)
    k = np.bincount(sl, minlength=d).astype(np.float64)
    units = np.arange(x.size) if per_draw else sl
    n_units = x.size if per_draw else d
    a = np.zeros((n_units, Y.shape[1]))
    np.add.at(a, units, w[:, None] * Y)
    b = np.bincount(units, weights=w, minlength=n_units)
    est = a.sum(0) / b.sum()
    e = a - b[:, None] * est[None, :]
    cov = n_units / (n_units - 1.0) * (e.T @ e) / b.sum() ** 2
    # identical contrast values on every draw give an exactly zero variance; rounding can leave -1e-17
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    dof = float(_kish_dof(x.size**2 / (k * k).sum(), d)) if per_draw else float(d - 1)
    if prior_variance is not None:
        pv = np.broadcast_to(np.asarray(prior_variance, dtype=np.float64), se.shape)
        prior_se2 = pv / x.size if per_draw else pv * (k * k).sum() / x.size**2
        new_se = _moderated_se(se, dof, prior_se2, prior_dof)
        scale = np.divide(new_se, se, out=np.ones_like(se), where=se > 0)
        cov = cov * np.outer(scale, scale)
        cov[np.diag_indices_from(cov)] = new_se**2
        se = new_se
    if simultaneous and Y.shape[1] > 1:
        keep = se > 0
        if keep.sum() > 1:
            corr = cov[np.ix_(keep, keep)] / np.outer(se[keep], se[keep])
            crit = _max_abs_t_quantile(corr, level, dof)
        else:
            crit = float(critical_value(level, dof))
    else:
        crit = float(critical_value(level, dof))
    return ContrastIntervals(est, se, est - crit * se, est + crit * se, cov, dof, crit, bool(simultaneous),
                             int(x.size), d)
