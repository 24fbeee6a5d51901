"""Small-sample standard errors for a fixed-budget or adaptive run (``ci="auto"``, the default).

A budgeted run draws with replacement and judges a query once: repeats are
free and carry no new information about the spread over queries.  The
engine's intervals therefore count *distinct* queries
(:mod:`activerank.inference.small_sample`): each contrast's variance pooled
with the relevance model's prediction of it (two pseudo degrees of freedom, so
a handful of queries that happen to agree cannot give a near-zero standard
error), and Student-t quantiles whose degrees of freedom come from the
distinct queries.  Three variants:

* ``ci="t"``: the cluster covariance over the ``d`` distinct sampled
  queries, ``d - 1`` degrees of freedom;
* ``ci="t_draws"``: the per-draw (with-replacement delta-method) covariance,
  which is the right variance of the estimator when ``q*`` makes queries
  repeat (the cluster one over-states it: measured coverage 0.98-1.00 on
  concentrated designs), with Kish's effective number of distinct queries
  ``n^2 / sum_c k_c^2`` minus one as degrees of freedom; identical to ``"t"``
  when no query repeats;
* ``ci="bootstrap"``: the studentized cluster bootstrap of the sample alone
  (cluster SE without the model's prior, asymmetric quantiles of the
  resampled t statistics,
  :class:`~activerank.inference.small_sample.BootstrapPivots`), for one
  contrast (one ranker or one difference).  It corrects for skewness (a
  single ranker's right-skewed DCG: 0.95-0.96 where ``"t"`` has 0.90-0.93 at
  10-20 queries) but cannot see what the sample missed (index updates with
  mostly-zero differences: 0.54-0.64 at 5-20 queries), so it is not the
  default.

The model-assisted estimators become cross-fitted
(:func:`activerank.inference.crossfit.model_assisted_crossfit`): no
self-tuning bias.  Measured coverage and bias: ``docs/intervals.md``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ....inference.caveats import MIN_LABELED_QUERIES
from ....inference.crossfit import (
    crossfit_terms,
    expected_distinct,
    model_assisted_crossfit,
)
from ....inference.estimators import Estimate, ModelAssisted, SelfNormalized
from ....inference.small_sample import (
    DEFAULT_N_BOOT,
    MIN_RELIABLE_DISTINCT_NO_PRIOR,
    BootstrapPivots,
    FewDistinctQueriesWarning,
    bootstrap_pivots,
    cluster_slots,
    contrast_intervals,
    predicted_variance,
)
from ....inference.small_sample.clusters import _kish_dof
from ....inference.small_sample.ratio import _ratio_moments

__all__ = ["SmallSample", "small_sample_estimates"]

@dataclass(frozen=True, eq=False)
class SmallSample:
    """What :func:`small_sample_estimates` hands back to the result assembly."""

    main: Estimate
    own: Estimate
    dof: float
    ci: str
    bootstrap: BootstrapPivots | None = None


def _sampling_q(d, p_norm):
    """The design's ``q`` over the sampled stratum (renormalized); ``d.q`` when the target has no
    per-output variance (as the cross-fit gate has always used)."""
    if d.prediction.output_variance is None:
        return d.q
    q = np.where(p_norm > 0, d.q, 0.0)
    return q / q.sum()


def _prior_variances(d, p_norm, coefficient=None):
    """The model's predicted per-draw variance of every output (``None`` if it is not available)."""
    pred = d.prediction
    var = pred.output_variance
    if var is None:
        return None
    q = _sampling_q(d, p_norm)
    out = []
    for j in range(pred.mean.shape[1]):
        pv = predicted_variance(p_norm, q, pred.mean[:, j], var[:, j])
        out.append(float(pv.total(0.0 if coefficient is None else coefficient[j])))
    return np.array(out), q


def _cov(values, w, xs, prior=None, per_draw=False) -> np.ndarray:
    return contrast_intervals(values, w, xs, prior_variance=prior, per_draw=per_draw).covariance


def _with_se(cov: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``cov``'s correlations with the standard errors ``se``."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    scale = np.divide(se, sd, out=np.zeros_like(se), where=sd > 0)
    out = cov * np.outer(scale, scale)
    out[np.diag_indices_from(out)] = se**2
    return out


def _crossfit(d, budget, xs, w, outputs, p_norm, ci):
    """Cross-fitted model-assisted estimate of every output, its covariance, and (``ci="bootstrap"``)
    output 0's cluster terms: numerator, denominator, counts, mask."""
    pred = d.prediction
    pool_pred = pred.pool_mean(p_norm)
    q = _sampling_q(d, p_norm)
    ed = expected_distinct(q, d.costs.cost, budget)
    var = pred.output_variance
    kind = "t_draws" if ci == "t_draws" else "t"
    est, se, beta = [], [], []
    for j in range(outputs.shape[1]):
        prior = None
        if var is not None and ci != "bootstrap":  # the bootstrap studentizes with the sample's own SE
            prior = predicted_variance(p_norm, q, pred.mean[:, j], var[:, j])
        r = model_assisted_crossfit(outputs[xs, j], pred.mean[xs, j], w, float(pool_pred[j]), xs, ci=kind,
                                    prior=prior, expected_distinct=ed, warn=False)
        est.append(r.estimate)
        se.append(r.standard_error)
        beta.append(r.coefficient)
    se_ = np.array(se)
    cov = _with_se(_cov(outputs[xs], w, xs, per_draw=ci == "t_draws"), se_)
    terms = None
    if ci == "bootstrap":
        sl = cluster_slots(xs)[None, :]
        t = crossfit_terms(outputs[xs, 0][None, :], pred.mean[xs, 0][None, :], w[None, :], float(pool_pred[0]),
                           sl, np.array([[xs.size]]), expected_distinct=[ed])
        terms = (t.numerator[0, 0], t.denominator[0, 0], t.counts[0, 0], t.mask[0, 0])
    return np.array(est), cov, np.array(beta), terms


def _ratio_terms(values, w, xs):
    """Cluster sums of the self-normalized estimator of one column: ``sum w v``, ``sum w``, draws, mask."""
    sl = cluster_slots(xs)
    d = int(sl.max()) + 1
    a = np.bincount(sl, weights=w * values, minlength=d)
    b = np.bincount(sl, weights=w, minlength=d)
    k = np.bincount(sl, minlength=d).astype(np.float64)
    return a, b, k, np.ones(d, dtype=bool)


def _pivots(terms, se: float, rng, n_boot=DEFAULT_N_BOOT) -> BootstrapPivots:
    """Studentized replicates of the sample alone (measured better than studentizing with the
    model-moderated SE, and than BCa: docs/intervals.md)."""
    a, b, k, mask = terms
    est, _, _ = _ratio_moments(a[None, :], b[None, :], mask[None, :])
    piv = bootstrap_pivots(a[None, :], b[None, :], mask[None, :], est, np.array([se]), n_boot=n_boot, rng=rng,
                           counts=k[None, :])
    return BootstrapPivots(piv[0])


def small_sample_estimates(d, budget, xs, w, outputs, system_values, main: Estimate, own: Estimate, p_norm, *,
                           ci: str = "t", rng=None) -> SmallSample:
    """``main`` and ``own`` with the small-sample covariances of ``ci`` (and, for model-assisted methods,
    cross-fitted estimates) over the sampled draws ``xs`` with weights ``w``.

    Parameters
    ----------
    budget : float
        The run's budget (the expected number of distinct queries of the cross-fit).
    ci : {"t", "t_draws", "bootstrap"}
        ``"bootstrap"``: the cluster covariance without the model's prior, plus the bootstrap distribution
        of output 0.
    rng : numpy.random.Generator, optional
        The bootstrap's generator (:func:`activerank.engine.core.bootstrap_generator`).
    p_norm : ndarray
        The target distribution over the sampled stratum (sums to 1).

    Returns
    -------
    SmallSample
        ``ci="normal"`` and ``dof = inf`` for a registered estimator the engine does not know: it keeps its
        own covariance and normal intervals.
    """
    estimator = d.method_spec.kind.estimator
    per_draw = ci == "t_draws"
    # the bootstrap studentizes with the sample's own cluster SE
    prior_info = None if ci == "bootstrap" else _prior_variances(d, p_norm)
    terms = None
    if isinstance(estimator, ModelAssisted) and estimator.tuned:
        est, cov, beta, terms = _crossfit(d, budget, xs, w, outputs, p_norm, ci)
        main = Estimate(est, cov, main.effective_sample_size, beta)
    elif isinstance(estimator, ModelAssisted):
        # the difference estimator (coefficient 1): SNIS of v - m, shifted by the pool prediction
        prior = None if prior_info is None else _prior_variances(d, p_norm, np.ones(outputs.shape[1]))[0]
        resid = outputs[xs] - d.prediction.mean[xs]
        cov = _cov(resid, w, xs, prior, per_draw)
        main = Estimate(main.estimate, cov, main.effective_sample_size, main.coefficient)
        if ci == "bootstrap":
            terms = _ratio_terms(resid[:, 0], w, xs)
    elif isinstance(estimator, SelfNormalized):
        prior = None if prior_info is None else prior_info[0]
        main = Estimate(main.estimate, _cov(outputs[xs], w, xs, prior, per_draw), main.effective_sample_size)
        if ci == "bootstrap":
            terms = _ratio_terms(outputs[xs, 0], w, xs)
    else:  # a registered estimator of its own keeps its covariance and normal intervals
        return SmallSample(main, own, np.inf, "normal")
    if d.target.kind == "mean":
        own = Estimate(own.estimate, main.covariance if isinstance(estimator, SelfNormalized)
                       else _cov(system_values[xs], w, xs, per_draw=per_draw), own.effective_sample_size)
    else:
        own = Estimate(own.estimate, _cov(system_values[xs], w, xs, per_draw=per_draw), own.effective_sample_size)
    k = np.bincount(cluster_slots(xs)).astype(np.float64)
    n_distinct = k.size
    dof = float(_kish_dof(xs.size**2 / (k * k).sum(), n_distinct)) if per_draw else float(n_distinct - 1)
    boot = None
    if terms is not None:
        # below MIN_LABELED_QUERIES the result's FewLabelsWarning says it (once, naming this interval)
        if MIN_LABELED_QUERIES <= n_distinct < MIN_RELIABLE_DISTINCT_NO_PRIOR:
            warnings.warn(
                f"only {n_distinct} distinct queries: the bootstrap interval sees only the sample, and its "
                f"coverage is not reliable below {MIN_RELIABLE_DISTINCT_NO_PRIOR} (measured down to 0.54 on pools "
                "where most differences are 0 and a few large; ci='auto' pools the model's predicted variance; "
                "docs/intervals.md).", FewDistinctQueriesWarning, stacklevel=2)
        boot = _pivots(terms, float(np.sqrt(main.covariance[0, 0])),
                       rng if rng is not None else np.random.default_rng())
    return SmallSample(main, own, dof, ci, boot)
