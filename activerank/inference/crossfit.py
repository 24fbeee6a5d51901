"""Model-assisted estimation without self-tuning bias: a cross-fitted control variate.

The model-assisted estimator uses the relevance model's per-query prediction
``m(x) = E_theta[L | x]`` and its exact pool mean ``M = sum_x p(x) m(x)`` as a
control variate.  Tuning its coefficient on the same draws it corrects
(:func:`activerank.inference.estimators.model_assisted`) correlates the
coefficient's error with the draws' ``m - M`` and biases the estimate by
``O(1/n)`` -- measured up to +5 standard errors at 3-20 queries (issue 15).
Here every draw ``j`` gets a coefficient ``beta_{-j}`` estimated **without
that draw** (leave-one-draw-out cross-fitting).  Because ``E_q[w (m - M)] = 0``
and ``beta_{-j}`` is a function of the other draws only -- independent of draw
``j`` for i.i.d. draws -- every correction term has mean zero (proof sketch:
``docs/model_assisted.md``).

The estimate depends on the number ``d`` of distinct queries:

* ``d < 20`` (:data:`RATIO_FROM_DISTINCT`): the **centred unnormalized** form
  ``R_hat = M + (1/n) sum_j w_j (v_j - M - beta_{-j} (m_j - M))``, exactly
  unbiased for a fixed number ``n`` of draws (``E_q[w] = 1``).  The
  self-normalized ratio divides by ``sum w``, which one heavy weight among a
  handful of draws swings: measured up to +8 SE of bias and 1.8x the MSE of
  passive sampling at 5-10 queries (OHSUMED index update), against
  0.1-1.1x for this form.
* ``d >= 20``: the **self-normalized** form
  ``R_hat = sum_j w_j (v_j - beta_{-j} (m_j - M)) / sum_j w_j`` (lower
  variance when the model's ``M`` is off and the weights vary), with its
  ``O(1/n)`` ratio bias removed by a delete-one-draw jackknife
  (``jackknife=True``).  At fewer queries the jackknife over-corrects when
  one draw carries most of the weight (measured -9 SE on a synthetic pool
  at 10 queries), hence the centred form there.
* ``d < 10`` (:data:`MIN_DISTINCT_FOR_TUNING`): no coefficient
  (``beta = 0``) -- a handful of queries cannot tell a useful model from
  noise.

Why draws and not distinct queries as folds.  Leaving out a whole distinct
query (all its draws) looks natural, but the *other* distinct queries of a
budgeted run are, given query ``c``, drawn from the pool without ``c``: the
coefficient then depends on ``c``'s identity, and when a run judges a large
part of the pool the estimate drifts towards a leave-one-out census
statistic that is not the pool mean (measured +13 to +20 SE on OHSUMED at 50
of 85 queries).  Draws are i.i.d. whatever the multiplicities, so
leave-one-draw-out keeps the argument exact.

The coefficient minimizes the query-level (cluster) variance of the other
draws, ``sum_c A_c C_c / sum_c C_c^2`` with ``A_c = sum_{j in c} w_j (v_j -
v_bar)`` and ``C_c = sum_{j in c} w_j (m_j - m_bar)`` (weighted means of the
other draws), shrunk towards 0 by the ratio of adjusted to raw ``R^2`` with
the number of *distinct queries* among the other draws as the sample size
(:func:`activerank.inference.estimators.tuned_coefficient`).

Standard errors and intervals are those of
:mod:`activerank.inference.small_sample` on the per-query sums of the
estimator's terms (cluster SE, ``t`` with ``d - 1`` degrees of freedom,
optionally moderated by the model's predicted variance after the control
variate, ``within + (1 - beta_bar)^2 between``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model_assisted import tuned_coefficient
from .small_sample import (
    DEFAULT_N_BOOT,
    DEFAULT_PRIOR_DOF,
    BatchIntervals,
    IntervalEstimate,
    cluster_slots,
    cluster_sums,
    ratio_intervals,
    resolve_ci,
)
from .small_sample.snis_intervals import _check_distinct, _shift, _single_iv, _squeeze

__all__ = [
    "MIN_DISTINCT_FOR_TUNING",
    "RATIO_FROM_DISTINCT",
    "CrossFitEstimate",
    "crossfit_terms",
    "expected_distinct",
    "model_assisted_crossfit",
    "model_assisted_crossfit_prefix",
]

#: Fewer distinct queries than this: no control-variate coefficient.
MIN_DISTINCT_FOR_TUNING = 10
#: Fewer distinct queries than this: the centred unnormalized mean instead of the ratio.
RATIO_FROM_DISTINCT = 20


@dataclass(frozen=True, eq=False)
class CrossFitTerms:
    """Cluster sums of the cross-fitted estimator on every prefix.

    Attributes
    ----------
    numerator, denominator : ndarray of shape (n_budgets, n_reps, n_slots)
        Per distinct query: ``sum w (v - shift - beta_{-j} (m - M))`` and ``sum w``
        (ratio form), or ``sum (w (v - M) + M - shift)`` and the draw count
        (centred form, runs with fewer than ``min_distinct`` distinct queries).
    mask : ndarray of bool, same shape
    counts : ndarray, same shape
        Draws of every distinct query.
    draw_numerator, draw_denominator : ndarray of shape (n_budgets, n_reps, n_cols)
        Per draw numerator and denominator of the estimate (0 beyond the prefix).
    coefficient : ndarray of shape (n_budgets, n_reps)
        Mean ``beta_{-j}`` over the prefix's draws.
    shift : float
        Constant subtracted from the values (the estimator is shift-equivariant).
    n_draws, n_distinct : ndarray of shape (n_budgets, n_reps)
    """

    numerator: np.ndarray
    denominator: np.ndarray
    mask: np.ndarray
    counts: np.ndarray
    draw_numerator: np.ndarray
    draw_denominator: np.ndarray
    coefficient: np.ndarray
    shift: float
    n_draws: np.ndarray
    n_distinct: np.ndarray


def crossfit_terms(values, predictions, weights, pool_prediction, slots, stops, *,
                   min_distinct=MIN_DISTINCT_FOR_TUNING, shrink=True, ratio_from=RATIO_FROM_DISTINCT,
                   expected_distinct=None) -> CrossFitTerms:
    """Leave-one-draw-out control-variate terms of many runs on draw prefixes.

    Parameters
    ----------
    values, predictions, weights : ndarray of shape (n_reps, n_cols)
    pool_prediction : float
        ``M = sum_x p(x) m(x)``.
    slots : ndarray of shape (n_reps, n_cols), int
        :func:`~activerank.inference.small_sample.cluster_slots` of the drawn queries.
    stops : ndarray of shape (n_budgets, n_reps)
    min_distinct : int
    shrink : bool
    ratio_from : int
    expected_distinct : float or array-like of shape (n_budgets,) or (n_budgets, n_reps), optional
        The design's expected number of distinct queries for the budget
        (:func:`expected_distinct`), fixed before sampling; the
        ``min_distinct`` and ``ratio_from`` gates use it.  Without it they use
        the realized counts (the coefficient gate the distinct queries among
        the *other* draws) -- measured +4.5 SE of bias on MQ2008 at a budget
        whose runs straddle the gate, because which runs pass it depends on
        the drawn queries' costs.

    Returns
    -------
    CrossFitTerms
    """
    v = np.asarray(values, dtype=np.float64)
    m = np.asarray(predictions, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    shift = float(np.mean(v[:, 0])) if v.size else 0.0
    expected = None
    if expected_distinct is not None:
        st_shape = np.atleast_2d(np.asarray(stops)).shape
        e = np.asarray(expected_distinct, dtype=np.float64)
        expected = np.broadcast_to(e.reshape(-1, 1) if e.ndim == 1 else e, st_shape)
    aj, bj, cj = w * (v - shift), w, w * (m - pool_prediction)
    cs = cluster_sums({"a": aj, "b": bj, "c": cj, "k": np.ones_like(w)}, slots, stops)
    a, b, c, k = cs.sums["a"], cs.sums["b"], cs.sums["c"], cs.sums["k"]
    st = cs.n_draws
    n_b, n_reps, n_slots = a.shape
    rows = np.arange(n_reps)[:, None]
    sl = np.minimum(np.asarray(slots, dtype=np.int64), n_slots - 1)
    col = np.arange(sl.shape[1])[None, :]
    keys = np.arange(n_reps)[:, None] * n_slots + sl
    numerator = np.empty_like(a)
    denominator = np.empty_like(a)
    draw_num = np.zeros((n_b,) + aj.shape)
    draw_den = np.zeros((n_b,) + aj.shape)
    coef = np.zeros((n_b, n_reps))

    def tot(x):
        return x.sum(axis=-1, keepdims=True)

    for i in range(n_b):  # loop over budgets only
        use = col < st[i][:, None]
        ai, bi, ci = a[i], b[i], c[i]
        A, B, C, K = (x[i][rows, sl] for x in (a, b, c, k))  # own cluster's sums, per draw
        A2, B2, C2 = A - aj, B - bj, C - cj  # own cluster without this draw
        d = cs.n_distinct[i][:, None].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            lb = tot(bi) - bj
            vbar, mbar = (tot(ai) - aj) / lb, (tot(ci) - cj) / lb
            lab = tot(ai * bi) - A * B + A2 * B2
            lac = tot(ai * ci) - A * C + A2 * C2
            lbc = tot(bi * ci) - B * C + B2 * C2
            lcc = tot(ci * ci) - C * C + C2 * C2
            laa = tot(ai * ai) - A * A + A2 * A2
            lbb = tot(bi * bi) - B * B + B2 * B2
            # centred at the other draws' weighted means: a perfect model gets beta = 1 exactly
            vm = lac - mbar * lab - vbar * lbc + vbar * mbar * lbb
            mm = np.maximum(lcc - 2 * mbar * lbc + mbar**2 * lbb, 0.0)
            vv = np.maximum(laa - 2 * vbar * lab + vbar**2 * lbb, 0.0)
            d_loo = d - (K == 1)  # distinct queries among the other draws
            scale = np.maximum(np.abs(ci).max(axis=-1, keepdims=True) ** 2, np.finfo(float).tiny)
            informative = mm > 1e-12 * scale * np.maximum(d_loo, 1.0)
            if shrink:
                beta = tuned_coefficient(vm, mm, vv, d_loo, informative)
            else:
                ok = informative & (d_loo >= 2)
                beta = np.where(ok, vm / np.where(ok, mm, 1.0), 0.0)
        # the gates must not depend on draw j: the design's expected count when given, else the other draws'
        gate = d_loo if expected is None else expected[i][:, None]
        tuned = gate >= min_distinct
        beta = np.where(use & tuned & np.isfinite(beta), beta, 0.0)
        # the centred unnormalized mean M + mean w (v - M - beta (m - M)) below `ratio_from` distinct queries
        ratio = (d if expected is None else expected[i][:, None]) >= ratio_from
        centred = w * (v - pool_prediction) - beta * cj + pool_prediction - shift
        draw_num[i] = np.where(use, np.where(ratio, aj - beta * cj, centred), 0.0)
        draw_den[i] = np.where(use, np.where(ratio, bj, 1.0), 0.0)
        numerator[i] = np.bincount(keys[use], weights=draw_num[i][use], minlength=n_reps * n_slots
                                   ).reshape(n_reps, n_slots)
        denominator[i] = np.bincount(keys[use], weights=draw_den[i][use], minlength=n_reps * n_slots
                                     ).reshape(n_reps, n_slots)
        with np.errstate(invalid="ignore", divide="ignore"):
            coef[i] = np.where(st[i] > 0, beta.sum(axis=1) / st[i], 0.0)
    return CrossFitTerms(numerator, denominator, cs.mask, k, draw_num, draw_den, coef, shift, st, cs.n_distinct)


def expected_distinct(q, costs, budget) -> float:
    """Expected number of distinct queries a budgeted run judges (fixed before sampling).

    ``sum_x (1 - (1 - q_x)^t)`` at the expected number of draws ``t`` the
    budget buys (:func:`activerank.inference.confidence_sequences.expected_draws`).

    Examples
    --------
    >>> round(expected_distinct(np.full(100, 0.01), np.ones(100), 50.0), 1)
    50.0
    """
    from .confidence_sequences import expected_draws

    q = np.asarray(q, dtype=np.float64)
    q = q / q.sum()
    t = expected_draws(q, costs, budget)
    return float(np.sum(-np.expm1(t * np.log1p(-np.minimum(q[q > 0], 1 - 1e-15)))))


def _jackknife_correction(terms: CrossFitTerms) -> np.ndarray:
    """Delete-one-draw jackknife bias correction of ``sum num / sum den`` on every prefix (0 for a mean)."""
    st = terms.n_draws
    use = np.arange(terms.draw_numerator.shape[-1])[None, None, :] < st[..., None]
    ww = terms.draw_denominator
    num = terms.draw_numerator
    A = num.sum(-1, keepdims=True)
    B = ww.sum(-1, keepdims=True)
    n = st.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = np.where(use, (A - num) / (B - ww), 0.0)
        r = A[..., 0] / B[..., 0]
        jk = n * r - (n - 1.0) / n * loo.sum(-1)
    return np.where((n > 1) & np.isfinite(jk), jk - r, 0.0)


def _draw_se(terms: CrossFitTerms) -> np.ndarray:
    """Per-draw (delta-method) SE of ``sum num / sum den`` on every prefix: the draws as units."""
    num, den = terms.draw_numerator, terms.draw_denominator  # 0 beyond each prefix
    n = terms.n_draws.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num.sum(-1) / den.sum(-1)
        e = num - r[..., None] * den  # 0 where num = den = 0
        se = np.sqrt(n / (n - 1.0) * (e * e).sum(-1)) / np.abs(den.sum(-1))
    return np.where(n > 1, se, np.nan)


def _intervals(terms, *, prior, prior_dof, confidence_level, ci, jackknife, n_boot, rng):
    kind = resolve_ci(ci)
    draw_se = _draw_se(terms) if kind in ("t_draws", "t_draws_distinct") else None
    res = ratio_intervals(terms.numerator, terms.denominator, terms.mask, confidence_level=confidence_level,
                          ci=kind, prior_var=None if prior is None else prior.total(terms.coefficient),
                          counts=terms.counts, prior_dof=prior_dof, n_boot=n_boot, rng=rng,
                          n_draws=terms.n_draws, draw_se=draw_se, normal_se=None)
    if jackknife:
        res = _shift(res, _jackknife_correction(terms))
    return _shift(res, terms.shift)


def model_assisted_crossfit_prefix(values, predictions, weights, pool_prediction, queries, stops, *,
                                   confidence_level=0.95, ci="auto", prior=None, prior_dof=DEFAULT_PRIOR_DOF,
                                   min_distinct=MIN_DISTINCT_FOR_TUNING, shrink=True, jackknife=True,
                                   n_boot=DEFAULT_N_BOOT, rng=None, slots=None,
                                   ratio_from=RATIO_FROM_DISTINCT, expected_distinct=None) -> BatchIntervals:
    """Cross-fitted model-assisted estimates and intervals of many runs on draw prefixes.

    Parameters
    ----------
    values, predictions, weights : ndarray of shape (n_reps, n_cols)
        Observed value, model prediction ``m(x)`` and importance weight of every draw.
    pool_prediction : float
        ``M = sum_x p(x) m(x)``.
    queries : ndarray of shape (n_reps, n_cols), int
    stops : ndarray of shape (n_budgets, n_reps) or (n_reps,)
    confidence_level, ci, prior_dof, n_boot, rng
        As in :func:`activerank.inference.small_sample.ratio_intervals`.
    prior : PredictedVariance, optional
        :func:`~activerank.inference.small_sample.predicted_variance` of the design.
    min_distinct : int, default :data:`MIN_DISTINCT_FOR_TUNING`
        No control-variate coefficient below this many distinct queries.
    shrink : bool, default True
    jackknife : bool, default True
        Remove the self-normalized form's ``O(1/n)`` bias by a delete-one-draw
        jackknife (the interval moves with the estimate; its width is unchanged).
    slots : ndarray, optional
        Precomputed cluster slots of ``queries``.
    ratio_from : int, default :data:`RATIO_FROM_DISTINCT`
        Self-normalized form from this many distinct queries on (centred
        unnormalized below).
    expected_distinct : float or array-like of shape (n_budgets,), optional
        The design's expected number of distinct queries at each budget
        (:func:`expected_distinct`); recommended -- the gates then do not
        depend on the draws (see :func:`crossfit_terms`).

    Returns
    -------
    BatchIntervals

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> m = rng.random((1, 40)); v = m + 0.1 * rng.standard_normal((1, 40))
    >>> r = model_assisted_crossfit_prefix(v, m, np.ones_like(v), 0.5, np.arange(40)[None], np.array([[40]]))
    >>> r.n_distinct.tolist(), bool(r.standard_error[0, 0] < v.std() / np.sqrt(40) / 2)
    ([[40]], True)
    """
    v = np.asarray(values, dtype=np.float64)
    m = np.asarray(predictions, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 2 or m.shape != v.shape or w.shape != v.shape or np.shape(queries) != v.shape:
        raise ValueError("`values`, `predictions`, `weights` and `queries` must be 2-d arrays of one shape; "
                         f"got {v.shape}, {m.shape}, {w.shape} and {np.shape(queries)}.")
    st = np.asarray(stops)
    squeeze = st.ndim == 1
    st = np.atleast_2d(st).astype(np.int64)
    sl = cluster_slots(queries) if slots is None else slots
    terms = crossfit_terms(v, m, w, float(pool_prediction), sl, st, min_distinct=min_distinct, shrink=shrink,
                           ratio_from=ratio_from, expected_distinct=expected_distinct)
    res = _intervals(terms, prior=prior, prior_dof=prior_dof, confidence_level=confidence_level, ci=ci,
                     jackknife=jackknife, n_boot=n_boot, rng=rng)
    return _squeeze(res) if squeeze else res


@dataclass(frozen=True)
class CrossFitEstimate(IntervalEstimate):
    """:class:`~activerank.inference.small_sample.IntervalEstimate` plus the control variate.

    Attributes
    ----------
    coefficient : float
        Mean of the leave-one-draw-out coefficients (0 when the control
        variate was not used).
    tuned : bool
        False when fewer than ``min_distinct`` distinct queries left the
        control variate out.
    """

    coefficient: float = 0.0
    tuned: bool = True


def model_assisted_crossfit(values, predictions, weights, pool_prediction, queries=None, *,
                            confidence_level=0.95, ci="auto", prior=None, prior_dof=DEFAULT_PRIOR_DOF,
                            min_distinct=MIN_DISTINCT_FOR_TUNING, shrink=True, jackknife=True,
                            ratio_from=RATIO_FROM_DISTINCT, expected_distinct=None, n_boot=DEFAULT_N_BOOT,
                            rng=None, warn=True) -> CrossFitEstimate:
    """Cross-fitted model-assisted estimate of one run with a small-sample interval.

    Parameters
    ----------
    values, predictions, weights : array-like of shape (n,)
        Observed values, model predictions ``m(x_j)`` and importance weights of the draws.
    pool_prediction : float
        ``M = sum_x p(x) m(x)`` over the whole pool.
    queries : array-like of shape (n,), optional
        Query of every draw (default: all distinct).
    confidence_level : float, default 0.95
    ci : {"auto", "t", "bootstrap", "normal", "fieller"}, default "auto"
    prior : PredictedVariance, optional
        :func:`~activerank.inference.small_sample.predicted_variance` of the design (recommended).
    prior_dof : float, default 2
    min_distinct : int, default :data:`MIN_DISTINCT_FOR_TUNING`
        No control-variate coefficient below this many distinct queries.
    shrink : bool, default True
    jackknife : bool, default True
    ratio_from : int, default :data:`RATIO_FROM_DISTINCT`
    expected_distinct : float, optional
        The design's expected number of distinct queries for the budget
        (:func:`expected_distinct`, computed before sampling); the gates use it
        instead of the realized count.
    n_boot : int
    rng : None, int or numpy.random.Generator
    warn : bool, default True
        Warn (:class:`~activerank.inference.small_sample.FewDistinctQueriesWarning`) with few distinct
        queries; the engine passes False (it warns about the effective sample size itself).

    Returns
    -------
    CrossFitEstimate

    Raises
    ------
    TooFewQueriesError
        With fewer than two distinct queries.

    Examples
    --------
    >>> L = np.array([0.1, 0.4, 0.35, 0.8, 0.5, 0.2, 0.9, 0.6, 0.3, 0.7, 0.45, 0.05])
    >>> m = L + np.array([0.05, -0.02, 0.04, -0.05, 0.01, 0.03, -0.04, 0.02, -0.01, 0.05, -0.03, 0.0])
    >>> from activerank.inference.small_sample import PredictedVariance
    >>> r = model_assisted_crossfit(L, m, np.ones(12), pool_prediction=0.5, jackknife=False,
    ...                             prior=PredictedVariance(within=0.002, between=0.06))
    >>> r.tuned, round(r.coefficient, 2), round(r.estimate, 3)
    (True, 1.04, 0.499)
    """
    v, w, x = _single_iv(values, weights, queries)
    m = np.asarray(predictions, dtype=np.float64).reshape(-1)
    if m.shape != v.shape or not np.isfinite(m).all():
        raise ValueError(f"`predictions` must be {v.size} finite numbers, one per draw; got shape {m.shape}.")
    M = float(pool_prediction)
    if not np.isfinite(M):
        raise ValueError(f"`pool_prediction` must be finite; got {pool_prediction!r}.")
    kind = resolve_ci(ci)
    sl = cluster_slots(x)[None, :]
    d = int(sl.max()) + 1 if v.size else 0
    if warn or d < 2:
        _check_distinct(d, kind, prior is not None)
    terms = crossfit_terms(v[None, :], m[None, :], w[None, :], M, sl, np.array([[v.size]]),
                           min_distinct=min_distinct, shrink=shrink, ratio_from=ratio_from,
                           expected_distinct=None if expected_distinct is None else [expected_distinct])
    res = _intervals(terms, prior=prior, prior_dof=prior_dof, confidence_level=confidence_level,
                     ci=kind, jackknife=jackknife, n_boot=n_boot, rng=rng)
    return CrossFitEstimate(float(res.estimate[0, 0]), float(res.standard_error[0, 0]), float(res.low[0, 0]),
                            float(res.high[0, 0]), res.confidence_level, kind, float(res.dof[0, 0]), int(v.size), d,
                            coefficient=float(terms.coefficient[0, 0]),
                            tuned=(d if expected_distinct is None else expected_distinct) >= min_distinct)
