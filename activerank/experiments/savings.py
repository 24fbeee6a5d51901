"""Label savings: analytic (``1 - V(q) / V(p)`` and its ceiling) and simulated (the budget active
needs to reach passive's error, with a bootstrap interval)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..design.sampling import optimal_distribution


def analytic_variance(values, p, q, costs) -> float:
    """Asymptotic variance per unit budget of SNIS under ``q``.

    ``V(q) = sum_x p(x)^2 / q(x) (L(x) - R)^2 * sum_x q(x) lambda(x)`` with
    ``R = sum p L``: the variance of ``n`` draws times the expected cost of a
    draw.  (It ignores that repeated draws are free.)

    Examples
    --------
    >>> p = np.array([0.5, 0.5])
    >>> analytic_variance(np.array([0.0, 1.0]), p, p, np.ones(2))
    0.25
    """
    v = np.asarray(values, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    lam = np.asarray(costs, dtype=np.float64)
    dev2 = (v - p @ v) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(p > 0, p * p / q * dev2, 0.0)
    return float(term.sum() * (q @ lam))


def analytic_savings(values, p, q, costs) -> float:
    """``1 - V(q) / V(p)``: fraction of budget saved asymptotically (NaN if ``V(p) = 0``)."""
    vp = analytic_variance(values, p, p, costs)
    return float("nan") if vp <= 0 else 1.0 - analytic_variance(values, p, q, costs) / vp


def oracle_distribution(values, p, costs, *, defensive: float = 0.0) -> np.ndarray:
    """The best ``q`` for the true values: ``q ∝ p |L - R| / sqrt(lambda)`` (mixed with ``p``)."""
    v = np.asarray(values, dtype=np.float64)
    return optimal_distribution((v - p @ v) ** 2, np.asarray(costs, dtype=np.float64), p, defensive=defensive)


def oracle_savings(values, p, costs) -> float:
    """Ceiling of :func:`analytic_savings` over all ``q`` (uses the true ``|L - R|``)."""
    return analytic_savings(values, p, oracle_distribution(values, p, costs), costs)


# --------------------------------------------------------------------------- label savings


def budget_to_reach(budgets, curves, target) -> tuple[np.ndarray, np.ndarray]:
    """Smallest budget at which an error curve reaches ``target``.

    Linear interpolation of the error against ``log(budget)`` between grid
    points; the first crossing counts.

    Parameters
    ----------
    budgets : ndarray of shape (n_budgets,)
    curves : ndarray of shape (..., n_budgets)
    target : float or ndarray of shape (...)

    Returns
    -------
    budget : ndarray of shape (...)
        Interpolated budget; ``budgets[0]`` if already reached there and
        ``budgets[-1]`` if never reached.
    censored : ndarray of shape (...), int
        ``-1`` reached at or before the first grid point (true budget may be
        smaller), ``+1`` never reached (true budget is larger), else 0.

    Examples
    --------
    >>> b, c = budget_to_reach(np.array([10.0, 100.0]), np.array([1.0, 0.0]), 0.5)
    >>> round(float(b), 4), int(c)
    (31.6228, 0)
    """
    b = np.asarray(budgets, dtype=np.float64)
    c = np.asarray(curves, dtype=np.float64)
    t = np.broadcast_to(np.asarray(target, dtype=np.float64), c.shape[:-1])[..., None]
    ok = c <= t
    any_ok = ok.any(axis=-1)
    j = np.where(any_ok, ok.argmax(axis=-1), b.size - 1)
    jm = np.maximum(j - 1, 0)
    cj = np.take_along_axis(c, j[..., None], -1)[..., 0]
    cm = np.take_along_axis(c, jm[..., None], -1)[..., 0]
    lb = np.log(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(cm > cj, (cm - t[..., 0]) / (cm - cj), 1.0)
    logb = lb[jm] + np.clip(frac, 0.0, 1.0) * (lb[j] - lb[jm])
    out = np.exp(logb)
    censored = np.where(~any_ok, 1, np.where(j == 0, -1, 0))
    out = np.where(~any_ok, b[-1], np.where(j == 0, b[0], out))
    return out, censored


def label_savings(budgets, active: Sequence[np.ndarray], passive: Sequence[np.ndarray], reference_budget,
                  *, n_boot: int = 500, rng=None, level: float = 0.95) -> dict:
    """Label savings of active vs passive from per-repetition losses, with a bootstrap interval.

    The error curve of a method is the mean loss over repetitions, averaged
    over folds.  Savings ``= 1 - B_active / B_ref`` where ``B_active`` is the
    budget at which active's curve reaches passive's error at ``B_ref``
    (:func:`budget_to_reach`).  The bootstrap resamples repetitions
    independently per fold and method.

    Parameters
    ----------
    budgets : array-like of shape (n_budgets,)
    active, passive : sequence of ndarray of shape (n_budgets, n_reps)
        Per-fold losses.
    reference_budget : float
        Must be one of ``budgets``.
    n_boot : int
    rng : None, int or numpy.random.Generator
    level : float

    Returns
    -------
    dict
        ``savings, low, high, censored`` (censored: -1 lower bound, +1
        upper bound on the point estimate, 0 exact), ``passive_error``,
        ``active_error`` (at the reference budget).
    """
    b = np.asarray(budgets, dtype=np.float64)
    hit = np.flatnonzero(np.isclose(b, reference_budget))
    if hit.size == 0:
        raise ValueError(f"`reference_budget` {reference_budget} must be one of `budgets` {b.tolist()}.")
    r = int(hit[0])
    gen = np.random.default_rng(rng)

    def curve(losses):
        return np.mean([l.mean(axis=1) for l in losses], axis=0)

    def boot(losses):
        out = 0.0
        for l in losses:
            idx = gen.integers(0, l.shape[1], size=(n_boot, l.shape[1]))
            out = out + l[:, idx].mean(axis=2).T  # (n_boot, n_budgets)
        return out / len(losses)

    ca, cp = curve(active), curve(passive)
    point, cens = budget_to_reach(b, ca, cp[r])
    ba, bp = boot(active), boot(passive)
    bb, _ = budget_to_reach(b, ba, bp[:, r])
    a = (1 - level) / 2
    sav = 1.0 - bb / b[r]
    valid = cp[r] > 0
    return {
        "savings": float(1.0 - point / b[r]) if valid else float("nan"),
        "low": float(np.quantile(sav, a)) if valid else float("nan"),
        "high": float(np.quantile(sav, 1 - a)) if valid else float("nan"),
        "censored": int(cens),
        "passive_error": float(cp[r]),
        "active_error": float(ca[r]),
    }
