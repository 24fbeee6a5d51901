"""Intervals for ratio estimators ``sum_c a_c / sum_c b_c`` from cluster sums (:func:`ratio_intervals`):
the kernel every small-sample interval runs through."""

from __future__ import annotations

import numpy as np

from .bootstrap import _bca, _bootstrap_t
from .clusters import _kish_dof, kish_distinct
from .kinds import (
    DEFAULT_N_BOOT,
    DEFAULT_PRIOR_DOF,
    BatchIntervals,
    _level_iv,
    _n_boot_iv,
    critical_value,
    resolve_ci,
)
from .prior import _moderated_se


def _ratio_moments(a, b, mask):
    """Estimate, cluster SE and d of ``sum a / sum b`` over masked clusters (last axis)."""
    a = np.where(mask, a, 0.0)
    b = np.where(mask, b, 0.0)
    d = mask.sum(axis=-1)
    sa, sb = a.sum(axis=-1), b.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = sa / sb
        e = np.where(mask, a - est[..., None] * b, 0.0)
        se = np.sqrt(d / (d - 1.0) * np.sum(e * e, axis=-1)) / np.abs(sb)
    est = np.where(d > 0, est, np.nan)
    se = np.where(d > 1, se, np.nan)
    return est, se, d


def _fieller(a, b, mask, tq):
    """Fieller interval for ``E a / E b`` from cluster totals with quantile ``tq``."""
    a = np.where(mask, a, 0.0)
    b = np.where(mask, b, 0.0)
    d = mask.sum(axis=-1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = a.sum(-1) / d, b.sum(-1) / d
        da, db = np.where(mask, a - ma[..., None], 0.0), np.where(mask, b - mb[..., None], 0.0)
        # variances of the cluster means
        saa = (da * da).sum(-1) / (d - 1) / d
        sab = (da * db).sum(-1) / (d - 1) / d
        sbb = (db * db).sum(-1) / (d - 1) / d
        t2 = tq * tq
        qa = mb * mb - t2 * sbb
        qb = ma * mb - t2 * sab
        qc = ma * ma - t2 * saa
        disc = qb * qb - qa * qc
        root = np.sqrt(np.maximum(disc, 0.0))
        lo, hi = (qb - root) / qa, (qb + root) / qa
    bounded = (qa > 0) & (disc >= 0)
    return np.where(bounded, lo, -np.inf), np.where(bounded, hi, np.inf)


def ratio_intervals(a, b, mask, *, confidence_level=0.95, ci="auto", dof_offset=1, prior_se2=None,
                    prior_dof=DEFAULT_PRIOR_DOF, n_boot=DEFAULT_N_BOOT, rng=None, normal_se=None,
                    n_draws=None, counts=None, prior_var=None, draw_se=None) -> BatchIntervals:
    """Intervals for ratio estimators ``sum_c a_c / sum_c b_c`` given cluster sums.

    Parameters
    ----------
    a, b : ndarray of shape (..., n_slots)
        Cluster numerators and denominators (e.g. ``sum w v`` and ``sum w``).
    mask : ndarray of bool, same shape
        Which slots hold a distinct query.
    confidence_level : float
    ci : {"auto", "t", "t_draws", "bootstrap", "normal", "fieller", "t_draws_distinct", "bootstrap_prior", "bca"}
        ``"t"``: cluster SE, ``d - 1`` degrees of freedom; ``"t_draws"``: the
        per-draw variance (``draw_se``, moderated with ``prior_var / n``) with
        Kish's ``n^2 / sum k^2 - 1`` degrees of freedom (:func:`kish_distinct`);
        ``"bootstrap"``: studentized cluster bootstrap of the sample alone
        (the prior is not used); measured alternatives:
        ``"t_draws_distinct"`` (per-draw variance, ``d - 1`` degrees of
        freedom), ``"bootstrap_prior"`` (studentized with the moderated SE),
        ``"bca"`` (BCa cluster bootstrap).
    dof_offset : int, default 1
        Degrees of freedom ``d - dof_offset`` for ``"t"`` and ``"fieller"``.
    prior_se2 : ndarray, optional
        Model-predicted squared standard error (shape of the estimates).  For
        ``ci="t"`` the reported SE is the moderated
        ``sqrt((prior_dof * prior_se2 + (d - 1) SE^2) / (prior_dof + d - 1))``;
        the degrees of freedom stay ``d - 1``.  Ignored when ``prior_var`` is given.
    prior_dof : float, default 2
        Weight of the prior in sample degrees of freedom.
    n_boot : int
    rng : None, int or numpy.random.Generator
        Only the bootstraps use it.
    normal_se : ndarray, optional
        Per-draw standard errors for ``ci="normal"`` (default: the cluster SE).
    n_draws : ndarray, optional
        Draws of every run (shape of the estimates); default the number of clusters.
    counts : ndarray of shape (..., n_slots), optional
        Draws of every distinct query (default 1).
    prior_var : ndarray, optional
        The model's predicted per-draw variance ``V`` (shape of the estimates,
        :meth:`PredictedVariance.total`): ``prior_se2 = V sum k^2 / n^2`` for the
        cluster intervals, ``V / n`` for the per-draw ones.
    draw_se : ndarray, optional
        Per-draw standard errors for ``"t_draws"`` / ``"t_draws_distinct"`` (default ``normal_se``).

    Returns
    -------
    BatchIntervals

    Examples
    --------
    >>> a = np.array([[1.0, 0.0, 2.0, 1.0]]); b = np.ones((1, 4)); m = np.ones((1, 4), bool)
    >>> r = ratio_intervals(a, b, m, ci="t")
    >>> float(r.estimate[0]), round(float(r.standard_error[0]), 4), round(float(r.high[0]), 4)
    (1.0, 0.4082, 2.2992)
    """
    level = _level_iv(confidence_level)
    kind = resolve_ci(ci)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    k = np.ones_like(a) if counts is None else np.asarray(counts, dtype=np.float64)
    est, se, d = _ratio_moments(a, b, mask)
    n = np.where(mask, k, 0.0).sum(-1) if n_draws is None else np.asarray(n_draws, dtype=np.float64)
    per_draw = kind in ("t_draws", "t_draws_distinct")
    if prior_var is not None:
        pv = np.asarray(prior_var, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            prior_se2 = pv / n if per_draw else pv * (np.where(mask, k, 0.0) ** 2).sum(-1) / n**2
    if kind == "normal":
        if normal_se is not None:
            se = np.where(d > 1, np.asarray(normal_se, dtype=np.float64), np.nan)
        dof = np.full(est.shape, np.inf)
    elif per_draw:
        dse = normal_se if draw_se is None else draw_se
        if dse is not None:
            se = np.where(d > 1, np.asarray(dse, dtype=np.float64), np.nan)
        dof = (d - 1.0) if kind == "t_draws_distinct" else _kish_dof(kish_distinct(k, mask), d)
    else:
        dof = (d - dof_offset).astype(np.float64)
    moderate = prior_se2 is not None and prior_dof > 0 and kind in ("t", "t_draws", "t_draws_distinct",
                                                                    "bootstrap_prior")
    if moderate:
        se = _moderated_se(se, dof, prior_se2, prior_dof)
    q = critical_value(level, np.where(dof >= 1, dof, np.nan))
    if kind in ("t", "normal", "t_draws", "t_draws_distinct"):
        lo, hi = est - q * se, est + q * se
    elif kind == "fieller":
        lo, hi = _fieller(a, b, mask, q)
    elif kind == "bca":
        lo, hi = _bca(a, b, mask, est, level, _n_boot_iv(n_boot), np.random.default_rng(rng))
    else:  # "bootstrap" from the sample alone, or "bootstrap_prior" studentized with the moderated SE
        pv_boot = None
        if moderate:
            pv_boot = prior_var if prior_var is not None else prior_se2 * n**2 / (np.where(mask, k, 0.0) ** 2).sum(-1)
        lo, hi = _bootstrap_t(a, b, mask, est, se, level, _n_boot_iv(n_boot), np.random.default_rng(rng),
                              counts=k, prior_var=pv_boot, prior_dof=prior_dof)
    bad = ~(d > 1) | ~np.isfinite(se)
    lo = np.where(bad, -np.inf, lo)
    hi = np.where(bad, np.inf, hi)
    nd = d if n_draws is None else np.asarray(n_draws)
    return BatchIntervals(est, se, lo, hi, np.where(dof >= 1, dof, np.nan), nd, d, kind, level)
