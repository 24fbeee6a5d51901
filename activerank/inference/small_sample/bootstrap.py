"""Cluster bootstraps over distinct queries: studentized pivots (:func:`bootstrap_pivots`,
:class:`BootstrapPivots`) and their intervals, and the BCa interval."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kinds import DEFAULT_PRIOR_DOF, _level_iv


def _resamples(a2, b2, k2, d, rows, n_boot, rng):
    """Cluster resamples of ``rows``: sums ``A, B, K`` of shape (len(rows), n_boot, d_max) and their mask.

    Each resample draws ``d`` of the row's ``d`` distinct queries with replacement (a query carries its
    multiplicity and weights along)."""
    dm = int(d[rows].max())
    u = rng.random((rows.size, n_boot, dm))
    dr = d[rows][:, None, None]
    pick = np.minimum((u * dr).astype(np.int64), dr - 1)
    use = np.arange(dm)[None, None, :] < dr
    take = lambda z: np.where(use, np.take_along_axis(z[rows][:, None, :dm], pick, axis=2), 0.0)  # noqa: E731
    return take(a2), take(b2), take(k2), use


def _chunks(d, n_boot, ok, chunk_elems=4_000_000):
    per = max(1, int(chunk_elems // max(1, n_boot * max(int(d.max(initial=1)), 1))))
    return [ok[s:s + per] for s in range(0, ok.size, per)]


def bootstrap_pivots(a, b, mask, est, se, *, n_boot, rng, counts=None, prior_var=None,
                     prior_dof=DEFAULT_PRIOR_DOF) -> np.ndarray:
    """Studentized cluster-bootstrap replicates ``(R* - R_hat) / SE*`` of ``sum a / sum b``, sorted.

    Parameters
    ----------
    a, b, mask : ndarray of shape (..., n_slots)
        Cluster sums and which slots hold a distinct query (:func:`ratio_intervals`).
    est, se : ndarray of shape (...)
        The sample's estimate and standard error.
    n_boot : int
    rng : numpy.random.Generator
    counts : ndarray of shape (..., n_slots), optional
        Draws of every distinct query; with ``prior_var`` the replicate's SE is
        moderated by the model's predicted variance exactly as the sample's
        (``prior_var * sum k*^2 / n*^2`` with ``prior_dof`` pseudo degrees of
        freedom), so a resample whose queries all agree keeps a positive SE.
    prior_var : ndarray of shape (...), optional
    prior_dof : float

    Returns
    -------
    ndarray of shape (..., n_boot)
        Sorted along the last axis; NaN rows where ``d < 2`` or ``se`` is not finite.
        Without a prior a replicate with ``SE* = 0`` gives ``+-inf`` (or 0 if ``R* = R_hat``).
    """
    shape = est.shape
    n_slots = a.shape[-1]
    a2 = np.where(mask, a, 0.0).reshape(-1, n_slots)
    b2 = np.where(mask, b, 0.0).reshape(-1, n_slots)
    k2 = (np.ones_like(a2) if counts is None else np.where(mask, counts, 0.0).reshape(-1, n_slots))
    d = mask.sum(axis=-1).reshape(-1)
    e_flat = est.reshape(-1)
    pv = None if prior_var is None else np.broadcast_to(np.asarray(prior_var, dtype=np.float64), shape).reshape(-1)
    out = np.full((d.size, n_boot), np.nan)
    ok = np.flatnonzero((d >= 2) & np.isfinite(se.reshape(-1)))
    for r in _chunks(d, n_boot, ok):
        A, B, K, use = _resamples(a2, b2, k2, d, r, n_boot, rng)
        dd = d[r][:, None].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            sb = B.sum(-1)
            rs = A.sum(-1) / sb
            e = np.where(use, A - rs[..., None] * B, 0.0)
            ses = np.sqrt(dd / (dd - 1.0) * (e * e).sum(-1)) / np.abs(sb)
            if pv is not None and prior_dof > 0:
                n_star = K.sum(-1)
                prior_se2 = pv[r][:, None] * (K * K).sum(-1) / n_star**2
                ses = np.sqrt((prior_dof * prior_se2 + (dd - 1.0) * ses**2) / (prior_dof + dd - 1.0))
            gap = rs - e_flat[r][:, None]
            # a resample whose clusters all agree has SE* = 0: |t| is unbounded there
            t = np.where(ses > 0, gap / ses, np.where(gap == 0, 0.0, np.copysign(np.inf, gap)))
        out[r] = np.sort(t, axis=1)
    return out.reshape(shape + (n_boot,))


def pivot_quantiles(pivots, confidence_level):
    """Outer order statistics ``(t_lo, t_hi)`` of sorted pivots at a two-sided level (no interpolation
    towards an infinite neighbour): the ``(B + 1) alpha / 2``-th smallest and largest for ``B = 999``."""
    alpha = 1.0 - _level_iv(confidence_level)
    with np.errstate(invalid="ignore"):
        lo = np.quantile(pivots, alpha / 2, axis=-1, method="lower")
        hi = np.quantile(pivots, 1 - alpha / 2, axis=-1, method="higher")
    return lo, hi


@dataclass(frozen=True, eq=False)
class BootstrapPivots:
    """The studentized cluster-bootstrap distribution of one run, for intervals at any level.

    Attributes
    ----------
    pivots : ndarray of shape (n_boot,)
        Sorted replicates ``(R* - R_hat) / SE*`` (:func:`bootstrap_pivots`).
        They do not depend on the estimate's location or scale, so an exactly
        known stratum (``R = exact + share * R_sampled``) keeps them.

    Examples
    --------
    >>> bp = BootstrapPivots(np.linspace(-3.0, 2.0, 1001))
    >>> [round(float(t), 3) for t in bp.quantiles(0.95)]
    [-2.875, 1.875]
    >>> bp.interval(1.0, 0.1, 0.95)
    (0.8125, 1.2875)
    """

    pivots: np.ndarray

    def __post_init__(self):
        p = np.sort(np.asarray(self.pivots, dtype=np.float64).reshape(-1))
        p.setflags(write=False)
        object.__setattr__(self, "pivots", p)

    @property
    def n_boot(self) -> int:
        return int(self.pivots.size)

    def quantiles(self, confidence_level) -> tuple:
        """Outer order statistics ``(t_lo, t_hi)`` at a two-sided ``confidence_level``."""
        lo, hi = pivot_quantiles(self.pivots, confidence_level)
        return float(lo), float(hi)

    def interval(self, estimate: float, standard_error: float, confidence_level) -> tuple:
        """``(estimate - t_hi SE, estimate - t_lo SE)``; a point when ``SE = 0``."""
        if standard_error == 0:
            return float(estimate), float(estimate)
        t_lo, t_hi = self.quantiles(confidence_level)
        return float(estimate - t_hi * standard_error), float(estimate - t_lo * standard_error)

    def prob_positive(self, estimate: float, standard_error: float) -> float:
        """``P(theta > 0)`` under the bootstrap-t confidence distribution: the share of pivots below
        ``estimate / SE`` (ties count half)."""
        if not standard_error > 0:
            return float(estimate > 0) if estimate != 0 else 0.5
        z = estimate / standard_error
        below = np.searchsorted(self.pivots, z, side="left")
        upto = np.searchsorted(self.pivots, z, side="right")
        return float((below + upto) / 2 / self.pivots.size)


def _bootstrap_t(a, b, mask, est, se, level, n_boot, rng, counts=None, prior_var=None,
                 prior_dof=DEFAULT_PRIOR_DOF):
    """Studentized cluster-bootstrap interval ``[R - t_hi SE, R - t_lo SE]``; ``se`` the (moderated) SE."""
    piv = bootstrap_pivots(a, b, mask, est, se, n_boot=n_boot, rng=rng, counts=counts, prior_var=prior_var,
                           prior_dof=prior_dof)
    t_lo, t_hi = pivot_quantiles(piv, level)
    flat = se == 0  # every cluster agrees (and no prior): a point, as for the t interval
    with np.errstate(invalid="ignore"):
        lo = np.where(flat, est, est - t_hi * se)
        hi = np.where(flat, est, est - t_lo * se)
    return lo, hi


def _bca(a, b, mask, est, level, n_boot, rng):
    """BCa interval over clusters: percentile of ``R*`` with bias correction and jackknife acceleration."""
    from scipy.special import ndtr, ndtri

    shape = est.shape
    n_slots = a.shape[-1]
    a2 = np.where(mask, a, 0.0).reshape(-1, n_slots)
    b2 = np.where(mask, b, 0.0).reshape(-1, n_slots)
    m2 = mask.reshape(-1, n_slots)
    d = m2.sum(-1)
    e_flat = est.reshape(-1)
    lo = np.full(d.size, -np.inf)
    hi = np.full(d.size, np.inf)
    ok = np.flatnonzero(d >= 2)
    alpha = 1.0 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        # jackknife over distinct queries: acceleration
        jk = (a2.sum(-1, keepdims=True) - a2) / (b2.sum(-1, keepdims=True) - b2)
        jk = np.where(m2, jk, np.nan)
        dev = np.nanmean(jk, axis=-1, keepdims=True) - jk
        num = np.nansum(dev**3, axis=-1)
        den = 6.0 * np.nansum(dev**2, axis=-1) ** 1.5
        acc = np.where(den > 0, num / den, 0.0)
    for r in _chunks(d, n_boot, ok):
        A, B, _, _ = _resamples(a2, b2, np.ones_like(a2), d, r, n_boot, rng)
        with np.errstate(invalid="ignore", divide="ignore"):
            rs = np.sort(A.sum(-1) / B.sum(-1), axis=1)
        below = (rs < e_flat[r][:, None]).mean(1) + 0.5 * (rs == e_flat[r][:, None]).mean(1)
        z0 = ndtri(np.clip(below, 0.5 / n_boot, 1 - 0.5 / n_boot))
        zs = ndtri(np.array([alpha / 2, 1 - alpha / 2]))[None, :]
        ar = acc[r][:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            adj = ndtr(z0[:, None] + (z0[:, None] + zs) / (1.0 - ar * (z0[:, None] + zs)))
        # outer order statistics, as for the studentized bootstrap
        i_lo = np.clip(np.floor(adj[:, 0] * (n_boot - 1)).astype(np.int64), 0, n_boot - 1)
        i_hi = np.clip(np.ceil(adj[:, 1] * (n_boot - 1)).astype(np.int64), 0, n_boot - 1)
        rows = np.arange(r.size)
        lo[r], hi[r] = rs[rows, i_lo], rs[rows, i_hi]
    return lo.reshape(shape), hi.reshape(shape)
