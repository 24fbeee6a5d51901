"""Small-sample standard errors for a fixed-budget run (``ci="t"``, the default).

A budgeted run draws with replacement and judges a query once: repeats are
free and carry no new information about the spread over queries.  The
engine's default intervals therefore count *distinct* queries
(:mod:`activerank.inference.small_sample`): the cluster covariance over the
``d`` distinct sampled queries, each contrast's variance pooled with the
relevance model's prediction of it (two pseudo degrees of freedom, so a
handful of queries that happen to agree cannot give a near-zero standard
error), and Student-t quantiles with ``d - 1`` degrees of freedom.  The
model-assisted estimators become cross-fitted
(:func:`activerank.inference.crossfit.model_assisted_crossfit`): no
self-tuning bias.  Measured coverage and bias: ``docs/intervals.md``.
"""

from __future__ import annotations

import numpy as np

from ..inference.crossfit import expected_distinct, model_assisted_crossfit
from ..inference.estimators import Estimate, ModelAssisted, SelfNormalized
from ..inference.small_sample import contrast_intervals, predicted_variance

__all__ = ["small_sample_estimates"]


def _prior_variances(d, p_norm, coefficient=None):
    """The model's predicted per-draw variance of every output (``None`` if it is not available)."""
    pred = d.prediction
    var = pred.output_variance
    if var is None:
        return None
    q = np.where(p_norm > 0, d.q, 0.0)
    q = q / q.sum()
    out = []
    for j in range(pred.mean.shape[1]):
        pv = predicted_variance(p_norm, q, pred.mean[:, j], var[:, j])
        out.append(float(pv.total(0.0 if coefficient is None else coefficient[j])))
    return np.array(out), q


def _cluster(values, w, xs, prior=None) -> np.ndarray:
    return contrast_intervals(values, w, xs, prior_variance=prior).covariance


def _with_se(cov: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``cov``'s correlations with the standard errors ``se``."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    scale = np.divide(se, sd, out=np.zeros_like(se), where=sd > 0)
    out = cov * np.outer(scale, scale)
    out[np.diag_indices_from(out)] = se**2
    return out


def _crossfit(d, draws, xs, w, outputs, p_norm, prior_info):
    """Cross-fitted model-assisted estimate of every output, and its covariance."""
    pred = d.prediction
    pool_pred = pred.pool_mean(p_norm)
    ed = expected_distinct(prior_info[1] if prior_info else d.q, d.costs.cost, draws.budget)
    var = pred.output_variance
    est, se, beta = [], [], []
    for j in range(outputs.shape[1]):
        prior = None
        if var is not None:
            prior = predicted_variance(p_norm, prior_info[1], pred.mean[:, j], var[:, j])
        r = model_assisted_crossfit(outputs[xs, j], pred.mean[xs, j], w, float(pool_pred[j]), xs, ci="t",
                                    prior=prior, expected_distinct=ed, warn=False)
        est.append(r.estimate)
        se.append(r.standard_error)
        beta.append(r.coefficient)
    se_ = np.array(se)
    cov = _with_se(_cluster(outputs[xs], w, xs), se_)
    return np.array(est), cov, np.array(beta)


def small_sample_estimates(d, draws, xs, w, outputs, system_values, main: Estimate, own: Estimate, p_norm):
    """``main`` and ``own`` with cluster covariances (and, for model-assisted methods, cross-fitted
    estimates) over the sampled draws ``xs`` with weights ``w``, and whether they apply (False for a
    registered estimator the engine does not know: it keeps its own covariance and normal intervals).

    ``p_norm`` is the target distribution over the sampled stratum (sums to 1).
    """
    estimator = d.method_spec.estimator
    prior_info = _prior_variances(d, p_norm)
    if isinstance(estimator, ModelAssisted) and estimator.tuned:
        est, cov, beta = _crossfit(d, draws, xs, w, outputs, p_norm, prior_info)
        main = Estimate(est, cov, main.effective_sample_size, beta)
    elif isinstance(estimator, ModelAssisted):
        # the difference estimator (coefficient 1): SNIS of v - m, shifted by the pool prediction
        prior = None if prior_info is None else _prior_variances(d, p_norm, np.ones(outputs.shape[1]))[0]
        cov = _cluster(outputs[xs] - d.prediction.mean[xs], w, xs, prior)
        main = Estimate(main.estimate, cov, main.effective_sample_size, main.coefficient)
    elif isinstance(estimator, SelfNormalized):
        prior = None if prior_info is None else prior_info[0]
        main = Estimate(main.estimate, _cluster(outputs[xs], w, xs, prior), main.effective_sample_size)
    else:  # a registered estimator of its own keeps its covariance and normal intervals
        return main, own, False
    if d.target.kind == "mean":
        own = Estimate(own.estimate, main.covariance if isinstance(estimator, SelfNormalized)
                       else _cluster(system_values[xs], w, xs), own.effective_sample_size)
    else:
        own = Estimate(own.estimate, _cluster(system_values[xs], w, xs), own.effective_sample_size)
    return main, own, True
