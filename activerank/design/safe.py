"""A design that decides from its own pilot labels how far to trust the model ("safe default").

The baseline it must never lose to (beyond noise) is uniform sampling without
replacement with a PPI++-style power-tuned control variate (GREG with a tuned
coefficient, :func:`activerank.inference.horvitz_thompson.model_assisted_wor`).

Two stages, both budgeted sequential Poisson samples
(:mod:`activerank.design.without_replacement`):

1. **Pilot**: a share of the budget on a uniform sample ``S1``.  It gives the
   stage-1 estimate ``R1`` (GREG, tuned coefficient) and residuals
   ``e_i = (y_i - ybar) - beta (m_i - mbar)``.
2. **Decision** (:func:`choose_scores`): for every candidate score vector
   ``a_c`` (mixtures of the model's variance-optimal shape and uniform), the
   variance the remaining budget would give, ``V_c = sum_pool p^2 e^2 (1/pi_c - 1)``
   with the planning probabilities ``pi_c`` of
   :func:`~activerank.design.without_replacement.approximate_inclusion_probabilities`,
   is estimated from the pilot by Horvitz--Thompson.  The best candidate is
   accepted only if its estimated variance is below the uniform one by more
   than ``z`` standard errors of the paired difference; otherwise stage 2 stays
   uniform -- then the whole design *is* the baseline (two uniform stages).
3. **Stage 2** draws the remaining budget from the queries not yet judged with
   the chosen scores; its estimate is ``R2 = sum_{S1} p y + GREG over the
   rest`` (pilot queries enter as a census stratum), unbiased given stage 1.
4. **Combination** ``R = w R1 + (1 - w) R2`` with ``w = V2 / (V1 + V2)`` from
   the *pilot* only (``V1`` the pilot's variance estimate, ``V2`` the predicted
   stage-2 variance), so ``(1 - w)`` is stage-1 measurable and
   ``E[(1 - w)(R2 - R)] = 0``; the remaining bias ``Cov(w, R1)`` is of order
   ``1/n``.  Standard error ``sqrt(w^2 V1 + (1 - w)^2 V2_hat)`` (martingale
   sum: ``R2 - R`` is conditionally centred given stage 1).

Guarantee.  When the test rejects the model (the default outcome when its
predicted uncertainty does not track the realized residuals), the design is
the baseline up to splitting one uniform sample into two; the loss of that
split is the fixed-weight loss ``sum_b w_b^2 n / n_b`` (1.0 for weights
proportional to sample sizes) plus the finite-population terms -- measured
in ``benchmarks/peers``.  When it accepts, the false-acceptance rate is
controlled by ``z`` (one-sided, default 1.645).

References
----------
.. [1] A. N. Angelopoulos, J. C. Duchi, T. Zrnic. "PPI++: Efficient
   prediction-powered inference." arXiv:2311.01453, 2023.
.. [2] T. Zrnic, E. J. Candès. "Active statistical inference." ICML 2024.
.. [3] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992 (two-phase sampling, §9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..inference.horvitz_thompson import hajek_kernel
from .without_replacement import _approx_pi

__all__ = ["SafeDecision", "candidate_scores", "choose_scores", "combine_stages"]

DEFAULT_MIXTURES = (0.1, 0.4)
DEFAULT_Z = 1.645


def candidate_scores(p, costs, shapes, *, mixtures=DEFAULT_MIXTURES) -> np.ndarray:
    """Score vectors the decision chooses from; row 0 is uniform (equal probability).

    Each shape ``s`` (e.g. ``p sqrt(Var_theta[L|x] / lambda)``) is normalized to
    unit expected cost and mixed with the uniform scores:
    ``a = (1 - rho) s / sum(s lambda) + rho p / sum(p lambda)``.

    Parameters
    ----------
    p : ndarray of shape (n_queries,)
        Target weights.
    costs : ndarray of shape (n_queries,)
    shapes : sequence of ndarray of shape (n_queries,)
    mixtures : sequence of float
        Uniform weights ``rho`` in [0, 1).

    Returns
    -------
    scores : ndarray of shape (1 + len(shapes) * len(mixtures), n_queries)

    Examples
    --------
    >>> candidate_scores(np.full(2, 0.5), np.ones(2), [np.array([1.0, 3.0])], mixtures=[0.0]).tolist()
    [[0.5, 0.5], [0.25, 0.75]]
    """
    p = np.asarray(p, dtype=np.float64)
    lam = np.asarray(costs, dtype=np.float64)
    uni = p / max(float(p @ lam), np.finfo(float).tiny)
    rows = [uni]
    for s in shapes:
        s = np.maximum(np.asarray(s, dtype=np.float64), 0.0)
        tot = float(s @ lam)
        s = uni if not np.isfinite(tot) or tot <= 0 else s / tot
        for rho in mixtures:
            rows.append((1.0 - rho) * s + rho * uni)
    return np.array(rows)


@dataclass(frozen=True, eq=False)
class SafeDecision:
    """Outcome of :func:`choose_scores` (arrays over repetitions, shape ``(...)``).

    Attributes
    ----------
    choice : ndarray of int
        Row of the candidate matrix chosen for stage 2 (0 = uniform).
    variance_ratio : ndarray
        Estimated ``V_best / V_uniform`` (NaN when not estimable).
    stage2_variance : ndarray of shape (n_series, ...)
        Predicted variance of every series' stage-2 estimate under the chosen scores.
    stage1_estimate, stage1_variance : ndarray
        Pilot GREG estimate of ``R`` and its variance estimate.
    """

    choice: np.ndarray
    variance_ratio: np.ndarray
    stage2_variance: np.ndarray
    stage1_estimate: np.ndarray
    stage1_variance: np.ndarray


def choose_scores(values, predictions, pi, weights, mask, pool_prediction, planned_pi, *,
                  z: float = DEFAULT_Z, model_variance=None, refute_z: float = 0.0,
                  prior_coefficient=None) -> SafeDecision:
    """Pick stage-2 scores from pilot labels (vectorized over runs and series).

    Parameters
    ----------
    values, predictions : ndarray of shape (n_series, ..., n1)
        The pilot's labels ``y`` and model predictions ``m`` of every series
        (one ranker, a difference, or k contrasts; the decision minimizes the
        summed variance).
    pi, weights : ndarray of shape (..., n1)
        Inclusion probabilities and target weights ``p`` of the pilot queries
        (anything where ``mask`` is False).
    mask : ndarray of bool, shape (..., n1)
    pool_prediction : array-like of shape (n_series,)
        ``M = sum_pool p m`` of every series.
    planned_pi : ndarray of shape (n_candidates, ..., n1)
        Planning inclusion probabilities of the pilot queries under every
        candidate score vector for the stage-2 budget (row 0 = uniform), e.g.
        :func:`planned_pi` gathered at the pilot queries.
    z : float
        One-sided margin of the pilot test.
    model_variance : array-like of shape (n_candidates,), optional
        The model's own prediction of every candidate's stage-2 variance
        (e.g. ``sum_pool p^2 Var_theta[L|x] (1/pi_c - 1)``).  Without it the
        pilot must *prove* a candidate better than uniform (its estimated
        variance below uniform's by ``z`` standard errors); with it the
        model's best candidate is used unless the pilot *refutes* it (its
        estimated variance above uniform's by more than ``refute_z``
        standard errors) -- the model is trusted until its own pilot labels
        contradict it.
    refute_z : float, default 0
        Margin of the refutation (0: any estimated loss against uniform
        switches to uniform).
    prior_coefficient : float, optional
        Passed to :func:`~activerank.inference.horvitz_thompson.hajek_kernel`
        for the pilot's control-variate coefficient (1 = shrink towards the
        calibrated model's coefficient).

    Returns
    -------
    SafeDecision
        ``stage1_estimate`` and ``stage1_variance`` have shape
        ``(n_series, ...)``; the rest ``(...)``.
    """
    mask = np.asarray(mask, dtype=bool)
    y = np.where(mask, values, 0.0)
    m = np.where(mask, predictions, 0.0)
    S = y.shape[0]
    M = np.asarray(pool_prediction, dtype=np.float64).reshape((S,) + (1,) * (y.ndim - 2))
    est1, var1, beta = hajek_kernel(y, pi, weights, mask, predictions=m, pool_prediction=M,
                                    prior_coefficient=prior_coefficient)
    g = np.where(mask, weights / np.where(mask, pi, 1.0), 0.0)
    G = g.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar = (g * y).sum(-1, keepdims=True) / G
        mbar = (g * m).sum(-1, keepdims=True) / G
        e2 = np.where(mask, ((y - ybar) - beta[..., None] * (m - mbar)) ** 2, 0.0)   # (S, ..., n1)
        pp = np.asarray(planned_pi, dtype=np.float64)
        # unit contributions to the HT estimate of sum_pool p^2 e^2 (1/pi_c - 1), per series
        inv = np.where(mask[None], 1.0 / np.maximum(pp, 1e-300) - 1.0, 0.0)          # (C, ..., n1)
        ds = np.where(mask, weights**2 * e2 / np.where(mask, pi, 1.0), 0.0)[:, None] * inv[None]
        d = ds.sum(0)
        V = d.sum(-1)                                    # (n_candidates, ...)
        if model_variance is None:
            best = np.argmin(V, axis=0)
        else:
            best = np.full(V.shape[1:], int(np.argmin(np.asarray(model_variance, dtype=np.float64))))
        diff = np.take_along_axis(d, best[None, ..., None], 0)[0] - d[0]
        n1 = mask.sum(-1)
        dbar = diff.sum(-1) / n1
        sd = np.sqrt(np.where(mask, (diff - dbar[..., None]) ** 2, 0.0).sum(-1) / np.maximum(n1 - 1, 1))
        se = np.sqrt(n1) * sd
        if model_variance is None:
            accept = (best > 0) & (diff.sum(-1) + z * se < 0) & (n1 >= 4)
        else:
            accept = (best > 0) & ~(diff.sum(-1) - refute_z * se > 0)
        ratio = np.take_along_axis(V, best[None], 0)[0] / V[0]
    choice = np.where(accept, best, 0)
    Vs = ds.sum(-1)                                      # (S, C, ...)
    v2 = np.take_along_axis(Vs, np.broadcast_to(choice[None, None], (S, 1) + choice.shape), 1)[:, 0]
    return SafeDecision(choice=choice, variance_ratio=ratio, stage2_variance=v2,
                        stage1_estimate=est1, stage1_variance=var1)


def combine_stages(est1, var1, est2, var2, predicted_var2, predicted_var1=None):
    """``R = w R1 + (1 - w) R2`` with the pilot-measurable weight ``w = V2_pred / (V1 + V2_pred)``.

    ``V1`` is ``predicted_var1`` when given (e.g. the model's prediction of the
    pilot's variance: robust when the pilot's own estimate is 0 because it
    saw only zeros), else the pilot's variance estimate ``var1``.  Falls back
    to stage 2 alone when ``V1`` is not available.

    Returns
    -------
    estimate, variance, w : ndarray

    Examples
    --------
    >>> e, v, w = combine_stages(1.0, 1.0, 3.0, 1.0, 1.0)
    >>> float(e), float(v), float(w)
    (2.0, 0.5, 0.5)
    """
    est1, var1, est2, var2, pv2 = (np.asarray(x, dtype=np.float64) for x in
                                   (est1, var1, est2, var2, predicted_var2))
    pv1 = var1 if predicted_var1 is None else np.asarray(predicted_var1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = pv2 / (pv1 + pv2)
    w = np.where(np.isfinite(w) & np.isfinite(est1), np.clip(w, 0.0, 1.0), 0.0)
    est = w * np.where(np.isfinite(est1), est1, 0.0) + (1.0 - w) * est2
    var = w**2 * np.where(np.isfinite(var1), var1, 0.0) + (1.0 - w) ** 2 * var2
    return est, var, w


def planned_pi(scores, costs, budget) -> np.ndarray:
    """Planning inclusion probabilities of every candidate score row, shape ``(n_candidates, n_queries)``."""
    lam = np.asarray(costs, dtype=np.float64)
    return np.stack([_approx_pi(np.asarray(a, dtype=np.float64), lam, float(budget)) for a in scores])
