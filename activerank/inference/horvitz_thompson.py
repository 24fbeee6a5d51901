"""Horvitz--Thompson, Hájek and model-assisted (GREG) estimators for samples without replacement.

For a sample ``S`` with inclusion probabilities ``pi_i`` and target weights
``p_i`` (``R = sum_i p_i y_i`` over the pool; ``p_i = 1/N`` for the mean):

* Horvitz--Thompson: ``R_HT = sum_S g_i y_i`` with ``g_i = p_i / pi_i``;
* Hájek (ratio): ``R_H = sum_S g_i y_i / sum_S g_i`` -- exact for a constant
  ``y`` and with a smaller variance when the sample size or cost is random;
* model-assisted difference / GREG: ``R_MA = R_H(y) + beta (M - R_H(m))`` with
  the model's prediction ``m_i`` for every pool query and its exact pool value
  ``M = sum_i p_i m_i``.  ``beta = 1`` is the difference estimator;
  ``tuned=True`` estimates the variance-minimizing ``beta`` from the sample
  (the without-replacement twin of PPI++ power tuning), shrunk towards 0
  when the sample correlation is within noise
  (:func:`activerank.inference.model_assisted.tuned_coefficient`).

Variance.  For the budgeted sequential Poisson design of
:mod:`activerank.design.without_replacement` the weights ``1{i in S}/pi_i`` are
uncorrelated with unit mean (``pi`` = conditional inclusion probability), so

``Var(R_HT) = E[ sum_S p_i^2 y_i^2 (1 - pi_i) / pi_i^2 ]``

exactly; the Hájek and GREG estimators use the same form on their linearized
residuals ``e_i = (y_i - R_H) - beta (m_i - R_H(m))``, divided by
``(sum_S g_i)^2`` and multiplied by the small-sample factor
``n / (n - 1 - [tuned])`` (this makes it the textbook ``(1 - n/N) s^2 / n`` for
a simple random sample without replacement).  The same formula is the
Poisson-sampling approximation for other high-entropy designs (conditional
Poisson, Pareto, sequential Poisson with given ``pi``).

Several series at once.  ``values`` of shape ``(n, k)`` (k rankers or k
contrasts, one ``predictions`` column each) gives a vector estimate and its
``(k, k)`` covariance matrix (residual cross-products); a ``contrasts`` matrix
``C`` of shape ``(c, k)`` returns ``C R`` and ``C Sigma C^T`` -- e.g. k
candidates minus a baseline.

All kernels take arrays with leading batch axes and a sample mask, so a
benchmark evaluates thousands of runs and budgets without a Python loop.

References
----------
.. [1] D. G. Horvitz, D. J. Thompson. "A generalization of sampling without
   replacement from a finite universe." JASA 47:663-685, 1952.
.. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992 (Hájek estimator §5.7, GREG §6).
.. [3] A. N. Angelopoulos, J. C. Duchi, T. Zrnic. "PPI++: Efficient
   prediction-powered inference." arXiv:2311.01453, 2023.
.. [4] N. Duffield, C. Lund, M. Thorup. "Priority sampling for estimation of
   arbitrary subset sums." J. ACM 54(6), 2007.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model_assisted import tuned_coefficient

__all__ = [
    "WOREstimate",
    "horvitz_thompson",
    "hajek",
    "ht_variance",
    "model_assisted_wor",
    "hajek_kernel",
]


@dataclass(frozen=True)
class WOREstimate:
    """Estimate of one or several pool means from a without-replacement sample.

    Attributes
    ----------
    estimate : ndarray of shape (k,)
        Estimated ``R`` (one entry per series or contrast; ``k = 1`` for a
        single series).
    covariance : ndarray of shape (k, k)
        Estimated covariance matrix (NaN with too few sampled queries).
    coefficient : ndarray of shape (k,)
        Control-variate coefficient ``beta`` per series (0 without predictions).
    n : int
        Sampled queries.
    """

    estimate: np.ndarray
    covariance: np.ndarray
    coefficient: np.ndarray
    n: int

    @property
    def standard_error(self) -> np.ndarray:
        """Square root of the covariance diagonal, shape ``(k,)``."""
        return np.sqrt(np.diag(self.covariance))


def _as_2d(x, name, n):
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"`{name}` must have shape (n,) or (n, k) with n = {n}; got {np.shape(x)}.")
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"`{name}` must be finite; sampled query {bad[0, 0]} has {a[tuple(bad[0])]!r}.")
    return a


def _pi_weights_iv(pi, weights):
    pi = np.asarray(pi, dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(pi) | (pi <= 0) | (pi > 1 + 1e-12))
    if bad.size:
        raise ValueError(f"`pi` must lie in (0, 1]; sampled query {bad[0]} has {pi[bad[0]].item()!r}.")
    pi = np.minimum(pi, 1.0)
    if weights is None:
        w = np.ones_like(pi)
    else:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.size != pi.size:
            raise ValueError(f"`weights` must have one entry per sampled query ({pi.size}); got {w.size}.")
        bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
        if bad.size:
            raise ValueError(f"`weights` must be finite and >= 0; sampled query {bad[0]} has {w[bad[0]].item()!r}.")
    return pi, w


def hajek_kernel(values, pi, weights, mask, *, predictions=None, pool_prediction=None, tuned=True,
                 ratio=True, prior_coefficient=None):
    """Batched Hájek / HT / GREG estimates and variances (private-style kernel, public for benchmarks).

    Parameters
    ----------
    values : ndarray of shape (..., n)
    pi, weights : ndarray broadcastable to (..., n)
        Inclusion probabilities (any positive value where ``mask`` is False)
        and target weights ``p_i``.
    mask : ndarray of bool, broadcastable to (..., n)
        Sampled entries.
    predictions : ndarray of shape (..., n), optional
        Model predictions ``m_i`` (control variate).
    pool_prediction : float or ndarray of shape (...), optional
        ``M = sum p_i m_i`` over the pool (required with ``predictions``).
    tuned : bool or float, default True
        True: variance-optimal shrunken ``beta``; a number: that fixed ``beta``.
    ratio : bool, default True
        Hájek (self-normalized) means; False gives Horvitz--Thompson
        (``sum g y``, no normalization) -- then ``values`` must already be
        scaled so that ``sum_pool p_i y_i`` is the target.
    prior_coefficient : float, optional
        With ``tuned=True``: shrink the plug-in ``beta_hat`` towards this value
        instead of towards 0, ``beta = b0 + s (beta_hat - b0)`` with
        ``s = max(0, 1 - Var(beta_hat) / (beta_hat - b0)^2)`` (positive-part
        James--Stein).  ``b0 = 1`` is what a calibrated model predicts
        (``Cov_theta(L, m) = Var(m)`` when ``m = E_theta[L|x]``): the model's
        coefficient is kept unless the labels show it is off by more than
        noise.

    Returns
    -------
    estimate, variance, beta : ndarray of shape (...)
    """
    mask = np.asarray(mask, dtype=bool)
    y = np.where(mask, values, 0.0)
    safe_pi = np.where(mask, pi, 1.0)
    g = np.where(mask, weights / safe_pi, 0.0)
    omega = g * g * (1.0 - np.where(mask, safe_pi, 1.0))
    n = mask.sum(axis=-1)
    G = g.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = G if ratio else np.ones_like(G)
        ybar = (g * y).sum(axis=-1) / norm
        dy = np.where(mask, y - (ybar[..., None] if ratio else 0.0), 0.0)
        n_par = 1
        if predictions is None:
            beta = np.zeros_like(ybar)
            est = ybar
            resid = dy
        else:
            if pool_prediction is None:
                raise ValueError("`pool_prediction` is required with `predictions`.")
            m = np.where(mask, predictions, 0.0)
            mbar = (g * m).sum(axis=-1) / norm
            dm = np.where(mask, m - (mbar[..., None] if ratio else 0.0), 0.0)
            if isinstance(tuned, (bool, np.bool_)) and tuned:
                vm = (omega * dy * dm).sum(axis=-1)
                mm = (omega * dm * dm).sum(axis=-1)
                vv = (omega * dy * dy).sum(axis=-1)
                informative = mm > 1e-12 * np.maximum((omega * m * m).sum(axis=-1), np.finfo(float).tiny)
                if prior_coefficient is None:
                    beta = tuned_coefficient(vm, mm, vv, n, informative)
                else:
                    b0 = float(prior_coefficient)
                    ok = informative & (n > 2)
                    bh = np.where(ok, vm / np.where(ok, mm, 1.0), b0)
                    rss = np.maximum(vv - bh * vm, 0.0)
                    var_b = np.where(ok, rss / np.maximum((n - 2.0) * np.where(ok, mm, 1.0), 1e-300), np.inf)
                    s = np.clip(1.0 - var_b / np.maximum((bh - b0) ** 2, 1e-300), 0.0, 1.0)
                    beta = np.where(ok, b0 + s * (bh - b0), b0)
                n_par = 2
            else:
                beta = np.broadcast_to(np.asarray(float(tuned) if not isinstance(tuned, bool) else 0.0),
                                       ybar.shape).astype(np.float64)
            est = ybar + beta * (np.asarray(pool_prediction, dtype=np.float64) - mbar)
            resid = dy - beta[..., None] * dm
        ss = (omega * resid * resid).sum(axis=-1)
        dof = n - n_par if ratio else n
        factor = np.where(dof >= 1, n / np.maximum(dof, 1), np.nan) if ratio else 1.0
        var = factor * ss / norm**2
    est = np.where(n > 0, est, np.nan)
    var = np.where(n >= n_par + (1 if ratio else 0), var, np.nan)
    return est, var, beta


def _estimate(values, pi, weights, predictions, pool_prediction, tuned, contrasts, ratio, prior_coefficient=None):
    pi, w = _pi_weights_iv(pi, weights)
    n = pi.size
    Y = _as_2d(values, "values", n)
    k = Y.shape[1]
    if predictions is not None:
        Mx = _as_2d(predictions, "predictions", n)
        if Mx.shape[1] != k:
            raise ValueError(f"`predictions` must have one column per series ({k}); got {Mx.shape[1]}.")
        P = np.broadcast_to(np.asarray(pool_prediction, dtype=np.float64).reshape(-1), (k,))
    mask = np.ones((k, n), dtype=bool)
    est, var, beta = hajek_kernel(Y.T, pi[None], w[None], mask,
                                  predictions=None if predictions is None else Mx.T,
                                  pool_prediction=None if predictions is None else P,
                                  tuned=tuned, ratio=ratio, prior_coefficient=prior_coefficient)
    # covariance from residual cross-products (the kernel gives the diagonal)
    g = w / pi
    omega = g * g * (1.0 - pi)
    G = g.sum() if ratio else 1.0
    R = Y - ((g @ Y) / G if ratio else 0.0)
    if predictions is not None:
        R = R - beta[None, :] * (Mx - ((g @ Mx) / G if ratio else 0.0))
    n_par = 1 + int(predictions is not None and isinstance(tuned, bool) and tuned)
    if ratio:
        factor = n / (n - n_par) if n > n_par else np.nan
    else:
        factor = 1.0
    cov = factor * (R * omega[:, None]).T @ R / G**2
    if n < n_par + int(ratio):
        cov = np.full((k, k), np.nan)
    np.fill_diagonal(cov, var)
    if contrasts is not None:
        C = np.asarray(contrasts, dtype=np.float64)
        if C.ndim != 2 or C.shape[1] != k:
            raise ValueError(f"`contrasts` must have shape (c, {k}); got {C.shape}.")
        return WOREstimate(C @ est, C @ cov @ C.T, beta, n)
    return WOREstimate(est, cov, beta, n)


def horvitz_thompson(values, pi, *, weights=None, contrasts=None) -> WOREstimate:
    """Horvitz--Thompson estimate ``sum_S p_i y_i / pi_i`` with its unbiased variance estimate.

    Parameters
    ----------
    values : array-like of shape (n,) or (n, k)
        Observed values of the sampled queries.
    pi : array-like of shape (n,)
        Their inclusion probabilities (the conditional ``pi`` of
        :class:`activerank.design.without_replacement.WORSample`).
    weights : array-like of shape (n,), optional
        Target weights ``p_i`` (default 1: the estimate is the pool total;
        pass ``1/N`` for the mean).
    contrasts : array-like of shape (c, k), optional
        Return ``C R`` and ``C Sigma C^T``.

    Returns
    -------
    WOREstimate
        Variance ``sum_S p^2 y^2 (1 - pi) / pi^2`` (exactly unbiased for the
        budgeted sequential Poisson design; the Poisson-sampling form otherwise).

    References
    ----------
    .. [1] D. G. Horvitz, D. J. Thompson. JASA 47:663-685, 1952.

    Examples
    --------
    >>> r = horvitz_thompson([1.0, 3.0], [0.5, 1.0])
    >>> r.estimate.tolist(), r.covariance.tolist()
    ([5.0], [[2.0]])
    """
    return _estimate(values, pi, weights, None, None, False, contrasts, ratio=False)


def hajek(values, pi, *, weights=None, contrasts=None) -> WOREstimate:
    """Hájek (self-normalized) estimate ``sum_S g y / sum_S g``, ``g = p / pi``, with linearized variance.

    Parameters
    ----------
    values : array-like of shape (n,) or (n, k)
    pi : array-like of shape (n,)
    weights : array-like of shape (n,), optional
        Target weights ``p_i`` (default equal).
    contrasts : array-like of shape (c, k), optional

    Returns
    -------
    WOREstimate
        Variance ``n/(n-1) sum_S g^2 (1 - pi) (y - R)^2 / (sum_S g)^2``.

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992, §5.7.

    Examples
    --------
    >>> r = hajek([1.0, 0.0, 1.0, 0.0], np.full(4, 0.1))     # SRSWOR of 4 from 40
    >>> float(r.estimate[0]), round(float(r.covariance[0, 0]), 6)   # (1 - 4/40) s^2 / 4
    (0.5, 0.075)
    """
    return _estimate(values, pi, weights, None, None, False, contrasts, ratio=True)


def ht_variance(residuals, pi, *, weights=None, normalizer=1.0) -> float:
    """``sum_S p_i^2 e_i^2 (1 - pi_i) / pi_i^2 / normalizer^2`` for given residuals.

    The building block of every variance here: pass ``y`` for the
    Horvitz--Thompson variance, Hájek or GREG residuals with
    ``normalizer = sum_S p_i / pi_i`` for theirs.

    Examples
    --------
    >>> ht_variance([1.0, 3.0], [0.5, 1.0])
    2.0
    """
    pi, w = _pi_weights_iv(pi, weights)
    e = np.asarray(residuals, dtype=np.float64).reshape(-1)
    if e.size != pi.size:
        raise ValueError(f"`residuals` must have one entry per sampled query ({pi.size}); got {e.size}.")
    g = w / pi
    return float(np.sum(g * g * (1.0 - pi) * e * e) / float(normalizer) ** 2)


def model_assisted_wor(values, predictions, pi, pool_prediction, *, weights=None, tuned=True,
                       contrasts=None, prior_coefficient=None) -> WOREstimate:
    """Model-assisted (difference / GREG) estimate for a without-replacement sample.

    ``R_MA = R_H(y) + beta (M - R_H(m))`` with Hájek means ``R_H``, the
    model's per-query predictions ``m`` (e.g. the exact ``E_theta[L|x]``) and
    their exact pool value ``M = sum_pool p_i m_i``.

    Parameters
    ----------
    values : array-like of shape (n,) or (n, k)
    predictions : array-like of the shape of ``values``
    pi : array-like of shape (n,)
    pool_prediction : float or array-like of shape (k,)
    weights : array-like of shape (n,), optional
        Target weights ``p_i`` of the sampled queries.
    tuned : bool or float, default True
        True: ``beta`` minimizing the estimated variance
        ``sum omega (dy - beta dm)^2`` with ``omega = g^2 (1 - pi)``, shrunk
        towards 0 when its sample correlation is within noise; a number fixes
        ``beta`` (1 = difference estimator).
    contrasts : array-like of shape (c, k), optional
    prior_coefficient : float, optional
        With ``tuned=True``: shrink ``beta`` towards this value instead of 0
        (:func:`hajek_kernel`; 1 is what a calibrated model predicts).

    Returns
    -------
    WOREstimate

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992, §6.
    .. [2] A. N. Angelopoulos, J. C. Duchi, T. Zrnic. "PPI++: Efficient
       prediction-powered inference." arXiv:2311.01453, 2023.

    Examples
    --------
    >>> L = np.array([1.0, 2.0, 3.0, 4.0])
    >>> r = model_assisted_wor(L, L + 0.5, np.full(4, 0.5), pool_prediction=3.0)
    >>> round(float(r.estimate[0]), 12), float(r.coefficient[0])
    (2.5, 1.0)
    """
    if tuned is not True and not (isinstance(tuned, (int, float)) and not isinstance(tuned, bool)):
        raise TypeError(f"`tuned` must be True or a number (fixed coefficient); got {tuned!r}.")
    if prior_coefficient is not None and (isinstance(prior_coefficient, bool)
                                          or not isinstance(prior_coefficient, (int, float))
                                          or not np.isfinite(prior_coefficient)):
        raise TypeError(f"`prior_coefficient` must be a finite number or None; got {prior_coefficient!r}.")
    return _estimate(values, pi, weights, predictions, pool_prediction, tuned, contrasts, ratio=True,
                     prior_coefficient=prior_coefficient)
