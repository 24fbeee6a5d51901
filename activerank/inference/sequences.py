"""Anytime-valid confidence sequences for the target-precision schedule.

:func:`activerank.estimate_sequential` draws queries i.i.d. from the (fixed)
sampling distribution ``q``, labels each new query, and stops as soon as the
interval's half-width is at most ``target_half_width`` -- or when the next
query would exceed the budget.  This module holds the interval.

Why not the usual interval.  Stopping when the Wald interval ``R_hat +- z SE``
is narrow enough is a data-dependent stopping rule: it stops preferentially
when the running SE happens to be small, and "peeking" after every label makes
the fixed-n interval under-cover (the test suite measures this).  We use an
**anytime-valid asymptotic confidence sequence** (Waudby-Smith, Arbour, Sinha,
Kennedy & Ramdas 2021, "Time-uniform central limit theory and asymptotic
confidence sequences", the Gaussian-mixture boundary of their Theorem 2.2):

``C_t = mu_hat_t +- sigma_hat_t * sqrt( 2 (t rho^2 + 1) / (t^2 rho^2) * log( sqrt(t rho^2 + 1) / alpha ) )``

covers the mean at *all* times simultaneously with probability tending to
``1 - alpha``, hence also at the (random) stopping time, whatever the rule.
``rho > 0`` only tunes where the sequence is tightest; we choose it so the
half-width under the relevance model reaches the target as early as possible
(or is smallest at the budget's expected number of draws),
``rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt``.

Which terms.  The sequence needs i.i.d. terms whose mean is the target exactly,
which the self-normalized ratio does not give.  We use the *centered
unnormalized* importance-sampling terms

``Z_j = c + w_j (L_j - c)``,  ``w_j = p(x_j) / q(x_j)``,

with ``c = R_theta = sum_x p(x) E_theta[L | x]`` fixed before any label is
seen.  Since ``E_q[w] = 1`` they are i.i.d. with ``E[Z_j] = R`` exactly, and
centering at the model's prediction keeps their variance close to the
self-normalized estimator's (``E_q[w^2 (L - c)^2] - (R - c)^2``; the plain
unnormalized terms ``w_j L_j`` can be far noisier).  For a comparison ``L`` is
``delta = L_a - L_b`` and ``c`` the predicted ``Delta``.

Why asymptotic rather than a betting sequence for bounded values.  The IS
terms are bounded (weights by ``1 / defensive``, ERR in [0, 1]) but the
bound is loose -- a few heavy-weight queries stretch it by up to
``1 / defensive`` -- so betting / empirical-Bernstein sequences, which pay
for the range, are much wider at the sample sizes of a labeling campaign; the
asymptotic sequence pays only for the variance.  The price is that its
guarantee is asymptotic: ``min_draws`` (default 30) keeps the rule from stopping
on a handful of draws whose sample variance is unreliable.  Simulations
(``tests/test_sequential.py``) show coverage at the stopping time above the
nominal level (a confidence sequence over-covers at any single time).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import confidence_level_iv

__all__ = ["INTERVAL_KIND", "asymptotic_cs", "choose_t_opt", "cs_radius", "rho_for_time"]

INTERVAL_KIND = "anytime-valid asymptotic confidence sequence (Waudby-Smith et al. 2021)"


def _alpha(confidence_level) -> float:
    return 1.0 - confidence_level_iv(confidence_level)


def rho_for_time(t_opt, confidence_level=0.95) -> float:
    """Mixture parameter ``rho`` that makes the sequence tightest near time ``t_opt``.

    ``rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt`` (Waudby-Smith et
    al. 2021).

    Examples
    --------
    >>> round(rho_for_time(100), 4)
    0.2817
    """
    a = _alpha(confidence_level)
    if not (isinstance(t_opt, numbers.Real) and float(t_opt) > 0):
        raise ValueError(f"`t_opt` must be a positive number; got {t_opt!r}.")
    return float(np.sqrt((-2 * np.log(a) + np.log(-2 * np.log(a) + 1)) / t_opt))


def cs_radius(t, sigma, confidence_level=0.95, *, rho) -> np.ndarray:
    """Half-width of the two-sided Gaussian-mixture asymptotic confidence sequence.

    Parameters
    ----------
    t : array-like of int
        Number of terms so far (>= 1).
    sigma : array-like
        Standard deviation estimate of the terms at time ``t``.
    confidence_level : float, default 0.95
    rho : float
        Mixture parameter (:func:`rho_for_time`).

    Returns
    -------
    ndarray
        ``sigma * sqrt(2 (t rho^2 + 1) / (t^2 rho^2) log(sqrt(t rho^2 + 1) / alpha))``,
        broadcast over ``t`` and ``sigma``.

    Examples
    --------
    >>> r = cs_radius(np.array([100, 400]), 1.0, rho=rho_for_time(100))
    >>> bool((r > 1.96 / np.sqrt([100, 400])).all())   # wider than the fixed-n interval
    True
    """
    a = _alpha(confidence_level)
    t = np.asarray(t, dtype=np.float64)
    r2 = float(rho) ** 2
    v = t * r2 + 1.0
    return np.asarray(sigma, dtype=np.float64) * np.sqrt(2.0 * v / (t * t * r2) * np.log(np.sqrt(v) / a))


def asymptotic_cs(z, confidence_level=0.95, *, rho):
    """Running center and half-width of the asymptotic CS for the mean of ``z``.

    Parameters
    ----------
    z : array-like of shape (..., n)
        I.i.d. terms, in time order along the last axis (any leading axes are
        independent sequences, e.g. simulation repetitions).
    confidence_level : float, default 0.95
    rho : float

    Returns
    -------
    center, radius : ndarray of shape (..., n)
        ``mu_hat_t`` and the half-width at every ``t = 1..n`` (``sigma_hat_t`` is
        the running standard deviation with divisor ``t``).

    Examples
    --------
    >>> c, r = asymptotic_cs(np.array([1.0, 0.0, 1.0, 0.0]), rho=0.5)
    >>> c.tolist(), bool(r[0] == 0.0)
    ([1.0, 0.5, 0.6666666666666666, 0.5], True)
    """
    z = np.asarray(z, dtype=np.float64)
    t = np.arange(1, z.shape[-1] + 1, dtype=np.float64)
    center = np.cumsum(z, axis=-1) / t
    var = np.maximum(np.cumsum(z * z, axis=-1) / t - center**2, 0.0)
    return center, cs_radius(t, np.sqrt(var), confidence_level, rho=rho)


def choose_t_opt(sigma, target, alpha_level, t_budget, min_draws) -> float:
    """Time at which to tune ``rho``: when the half-width (under the model) first meets the target."""
    t_budget = max(float(t_budget), float(min_draws), 1.0)
    if not (sigma > 0 and np.isfinite(sigma)):
        return t_budget
    cands = np.geomspace(max(min_draws, 1), max(t_budget, min_draws + 1) * 4, 60)
    grid = np.unique(np.geomspace(1, cands[-1] * 4, 400).round())
    best, best_t = np.inf, t_budget
    for t_opt in cands:
        r = cs_radius(grid, sigma, alpha_level, rho=rho_for_time(float(t_opt), alpha_level))
        hit = grid[r <= target]
        first = hit[0] if hit.size else np.inf
        if first < best:
            best, best_t = first, float(t_opt)
    return best_t if best <= t_budget else t_budget
