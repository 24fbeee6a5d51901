"""Estimators for document-level and two-stage samples of linear targets.

Every target is ``T = sum_z W_z u_z`` over the units of a
:class:`~activerank.design.documents.DocumentTarget` (``u = g(y)``).  With
model means ``m_z = E_theta[u_z]`` (optional), write ``e_z = u_z - m_z`` and
``M = sum_z W_z m_z`` (exactly computable before any judgment).

* **Horvitz-Thompson, Poisson sample** (``stat`` when ``m = 0``, the
  difference estimator ``dyn`` of Cormack & Grossman 2019 otherwise)::

      T_hat = M + sum_{z in S} W_z e_z / pi_z
      Var   = sum_z (1 - pi_z) / pi_z * W_z W_z^T e_z^2
      V_hat = sum_{z in S} (1 - pi_z) / pi_z^2 * W_z W_z^T e_z^2     (unbiased)

  Unbiased for any fixed ``m`` (the model is fitted on other data) as long as
  every unit with ``W_z != 0`` has ``pi_z > 0``.
* **Simple random sample without replacement** of ``n`` of ``N`` units::

      T_hat = M + (N / n) sum_{z in S} W_z e_z,   V_hat = N^2 (1 - n/N) s^2 / n

  with ``s^2`` the sample covariance of ``W_z e_z``.
* **Hansen-Hurwitz, draws with replacement** from ``Q`` (Schnabel et al.
  2016, Eq. 3 and 6)::

      T_hat = M + (1/n) sum_i W_i e_i / Q_i,    V_hat = s^2 / n

  with ``s^2`` the sample covariance of the ``W_i e_i / Q_i``.
* **Two stage**: draws ``x_d ~ q`` with replacement, then an independent
  Poisson subsample of the units of ``x_d`` (inclusion ``pi``) per draw::

      z_d = M + (1 / q(x_d)) sum_{z in S_d} W_z e_z / pi_z,   T_hat = mean z_d,   V_hat = s_z^2 / n

  ``E[z_d] = T`` and ``Var z_d = between + within`` with
  ``between = sum_x (Y_x - M_x)^2 / q_x - (T - M)^2`` and
  ``within = sum_x (1/q_x) sum_{z in x} (1/pi_z - 1) W_z^2 e_z^2``
  (:func:`two_stage_variance`; derivation in ``docs/two_stage.md``).

Judged units reused as a census enter exactly (``pi = 1`` in a Poisson
design; ``census_*`` arguments for draws with replacement).  Intervals are
normal (``estimate +- z SE``).  A ratio of two targets (normalized metrics:
statAP-style precision over recall base, a gain normalized by the pool's
total gain) uses the delta method on the joint covariance
(:func:`ratio_estimate`; biased at O(1/n)).

References
----------
.. [1] D. G. Horvitz, D. J. Thompson. "A Generalization of Sampling Without
   Replacement from a Finite Universe." JASA 47, 1952.
.. [2] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
   Comparative Evaluation of Ranking Functions." ICTIR 2016.
.. [3] G. V. Cormack, M. R. Grossman. "Unbiased Low-Variance Estimators for
   Precision and Related Information Retrieval Effectiveness Measures."
   SIGIR 2019.
.. [4] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992 (Sec. 4.3 two-stage sampling, Sec. 6 the
   difference estimator, Sec. 5.6 ratio estimators).
.. [5] J. A. Aslam, V. Pavlu, E. Yilmaz. "A Statistical Method for System
   Evaluation Using Incomplete Judgments." SIGIR 2006 (statAP).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ....inference.small_sample.clusters import cluster_dof
from .sampling import PoissonDesign
from .target import DocumentTarget

__all__ = [
    "DocumentEstimate",
    "horvitz_thompson",
    "hansen_hurwitz",
    "ratio_estimate",
    "census_snis",
    "poisson_variance",
    "poisson_dof",
    "expected_poisson_variance",
    "within_query_estimate",
    "StatAPEstimate",
    "stat_ap",
]


@dataclass(frozen=True, eq=False)
class DocumentEstimate:
    """Estimate of ``n_targets`` linear targets with their joint covariance.

    Attributes
    ----------
    estimate : ndarray of shape (n_targets,)
    covariance : ndarray of shape (n_targets, n_targets)
        Estimated covariance of ``estimate``.
    n_judged : int
        Distinct units whose labels were used (census units included).
    method : str
    """

    estimate: np.ndarray
    covariance: np.ndarray
    n_judged: int
    method: str

    @property
    def standard_error(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diagonal(self.covariance, axis1=-2, axis2=-1), 0.0, None))

    def confidence_interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Normal interval ``estimate +- z SE`` for every target."""
        if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
            raise ValueError(f"`level` must lie in (0, 1); got {level!r}.")
        z = NormalDist().inv_cdf(0.5 + level / 2)
        se = self.standard_error
        return self.estimate - z * se, self.estimate + z * se


# --------------------------------------------------------------------------- kernels (batch capable)


def _outer_sum(mask, values, weights):
    """``sum_z mask_z * values_z * W_zj W_zk`` for every ``(j, k)``; mask (..., n_units)."""
    t = weights.shape[1]
    out = np.empty(mask.shape[:-1] + (t, t))
    for j in range(t):
        for k in range(j, t):
            out[..., j, k] = out[..., k, j] = mask @ (values * weights[:, j] * weights[:, k])
    return out


def _ht_kernel(W, e, pi, mask, offset):
    """HT estimate and unbiased covariance from inclusion masks (any leading shape)."""
    safe = np.where(pi > 0, pi, 1.0)
    est = mask @ (W * (e / safe)[:, None]) + offset
    cov = _outer_sum(mask, (1.0 - pi) / safe**2 * e * e, W)
    return est, cov


def _srs_kernel(W, e, free, n, mask, offset):
    """SRSWOR of ``n`` of the ``free`` units (census for the others); mask (..., n_units)."""
    N = int(free.sum())
    y = W * e[:, None]
    census = mask @ (y * (~free)[:, None])
    f = mask * free
    s1 = f @ y
    est = census + (N / n) * s1 + offset
    s2 = _outer_sum(f, np.ones_like(e), y)
    mean = s1 / n
    S = (s2 - n * mean[..., :, None] * mean[..., None, :]) / max(n - 1, 1)
    cov = (N**2 * (1.0 - n / N) / n) * S
    return est, cov


def poisson_variance(target: DocumentTarget, design: PoissonDesign, u, *, model_means=None) -> np.ndarray:
    """Exact design covariance of the HT/difference estimator given all utilities ``u``.

    ``sum_z (1 - pi_z) / pi_z W_z W_z^T e_z^2`` (Poisson); for a uniform
    design (SRSWOR) ``N^2 (1 - n/N) S^2 / n`` over the unjudged units.

    Parameters
    ----------
    target : DocumentTarget
    design : PoissonDesign
    u : array-like of shape (n_units,)
        Every unit's utility (simulation: from the true labels).
    model_means : array-like of shape (n_units,), optional
        ``m`` of the difference estimator (default 0: plain HT).

    Returns
    -------
    ndarray of shape (n_targets, n_targets)

    References
    ----------
    .. [1] D. G. Horvitz, D. J. Thompson. "A Generalization of Sampling Without
       Replacement from a Finite Universe." JASA 47, 1952.
    .. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    u = np.asarray(u, dtype=np.float64)
    e = u - (0.0 if model_means is None else np.asarray(model_means, dtype=np.float64))
    W = target.weights
    if design.kind == "srswor":
        free = design.pi < 1.0
        N = int(free.sum())
        n = int(round(float(design.pi[free][0]) * N))
        y = (W * e[:, None])[free]
        S = np.cov(y.T, ddof=1).reshape(W.shape[1], W.shape[1])
        return N**2 * (1 - n / N) / n * S
    safe = np.where(design.pi > 0, design.pi, 1.0)
    return _outer_sum(np.ones(W.shape[0]), (1.0 - design.pi) / safe * e * e, W)


def expected_poisson_variance(target: DocumentTarget, design: PoissonDesign, probs, *,
                              control_variate: bool = True, under=None) -> float:
    """Model-expected summed variance of a Poisson design: ``sum_z (1 - pi_z)/pi_z ||W_z||^2 E[e_z^2]``.

    ``E[e^2] = Var_theta[u]`` for the difference estimator (``control_variate=True``),
    ``E_theta[u^2]`` for plain HT.  With a query-level design's predicted
    variance per unit cost this is what an automatic method choice compares
    (variance at the design's budget; multiply by the budget for variance per
    unit cost).  ``under``: another model's probabilities, under which the
    expectation is taken (``E[e^2] = Var_under[u] + (E_under[u] - E[u])^2``).

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    mom = target.moments(probs)
    e2 = mom.variance if control_variate else mom.second
    if under is not None:  # the labels drawn from another model; the control variate stays ``probs``' mean
        true = target.moments(under)
        e2 = true.variance + (true.mean - mom.mean) ** 2 if control_variate else true.second
    pi = design.pi
    safe = np.where(pi > 0, pi, 1.0)
    nrm2 = np.einsum("ij,ij->i", target.weights, target.weights)
    _support_iv(target, pi, "design.pi")
    return float(np.sum((1.0 - pi) / safe * nrm2 * e2))


# --------------------------------------------------------------------------- validation


def _model_iv(target: DocumentTarget, probs):
    if probs is None:
        return np.zeros(target.n_units), 0.0
    m = target.moments(probs).mean
    return m, target.weights.T @ m


def _sample_iv(target: DocumentTarget, rows, grades, *, allow_repeats=False):
    idx = target.unit_index(rows)
    u = target.utilities(grades)
    if u.size != idx.size:
        raise ValueError(f"`grades` must have one entry per judged row ({idx.size}); got {u.size}.")
    if not allow_repeats and idx.size != np.unique(idx).size:
        dup = idx[np.flatnonzero(np.bincount(idx, minlength=target.n_units)[idx] > 1)[0]]
        raise ValueError(f"`rows` lists document row {target.rows[dup]} more than once.")
    return idx, u


def _support_iv(target: DocumentTarget, prob, name: str):
    zero = np.flatnonzero(target.matters & ~(prob > 0))
    if zero.size:
        z = zero[0]
        raise ValueError(
            f"`{name}` is 0 for document row {target.rows[z]} of query {target.query[z]}, whose label "
            "changes a target: the estimate would be biased (use a defensive mixture)."
        )


# --------------------------------------------------------------------------- public estimators


def horvitz_thompson(target: DocumentTarget, design: PoissonDesign, rows, grades, *,
                     probs=None) -> DocumentEstimate:
    """Horvitz-Thompson (``stat``) or difference (``dyn``) estimate from a without-replacement sample.

    Parameters
    ----------
    target : DocumentTarget
    design : PoissonDesign
        From :func:`~activerank.design.documents.inclusion_probabilities`
        (Poisson) or :func:`~activerank.design.documents.uniform_inclusion`
        (SRSWOR).  Judged (census) units have ``pi = 1``.
    rows : array-like of int
        Document rows judged (the sample, census units included).
    grades : array-like of int
        Their grades.
    probs : array-like of shape (n_docs, n_grades), optional
        Relevance model: with it, the difference estimator ``M + HT(u - m)``
        (Cormack & Grossman's ``dyn``); without it, plain HT (``stat``).
        Must not depend on the sampled labels.

    Returns
    -------
    DocumentEstimate

    Raises
    ------
    ValueError
        A row outside the pooled units, a repeated row, a grade off the
        scale, or a unit whose label changes a target but has ``pi = 0``.

    References
    ----------
    .. [1] D. G. Horvitz, D. J. Thompson. "A Generalization of Sampling Without
       Replacement from a Finite Universe." JASA 47, 1952.
    .. [2] G. V. Cormack, M. R. Grossman. "Unbiased Low-Variance Estimators for
       Precision and Related IR Effectiveness Measures." SIGIR 2019.

    Examples
    --------
    >>> from activerank.design.kinds.documents import document_target, PoissonDesign
    >>> t = document_target([[[0, 1]]], n_docs=2, discounts=[1.0, 0.5], gains=[0.0, 1.0])
    >>> d = PoissonDesign(pi=np.array([1.0, 0.5]), costs=np.ones(2), budget=1.5, kind="poisson")
    >>> r = horvitz_thompson(t, d, [0, 1], [1, 1])
    >>> r.estimate.tolist(), r.standard_error.round(4).tolist()
    ([2.0], [0.7071])
    """
    if not isinstance(design, PoissonDesign):
        raise TypeError(f"`design` must be a PoissonDesign; got {type(design).__name__}.")
    if design.pi.size != target.n_units:
        raise ValueError(f"`design` has {design.pi.size} units but the target has {target.n_units}.")
    _support_iv(target, design.pi, "design.pi")
    idx, u = _sample_iv(target, rows, grades)
    m, M = _model_iv(target, probs)
    mask = np.zeros(target.n_units)
    mask[idx] = 1.0
    e = np.zeros(target.n_units)
    e[idx] = u - m[idx]
    if design.kind == "srswor":
        free = design.pi < 1.0
        n = int((mask * free).sum())
        expected = int(round(float(design.pi[free][0]) * free.sum())) if free.any() else 0
        if n != expected:
            raise ValueError(f"a uniform design samples {expected} unjudged units; `rows` has {n}.")
        missing = np.flatnonzero(~free & (mask == 0))
        if missing.size:
            raise ValueError(f"census (judged) document row {target.rows[missing[0]]} is missing from `rows`.")
        est, cov = _srs_kernel(target.weights, e, free, max(n, 1), mask, M)
    else:
        est, cov = _ht_kernel(target.weights, e, design.pi, mask, M)
    name = ("dyn" if probs is not None else "stat") + ("_uniform" if design.kind == "srswor" else "")
    return DocumentEstimate(est, cov, int(idx.size), name)


def poisson_dof(target: DocumentTarget, design: PoissonDesign, rows, grades, *, probs=None) -> float:
    """Student-t degrees of freedom of a Poisson sample's HT variance estimate, from the queries that carry
    it (``inf`` when it is 0).

    The estimate of :func:`horvitz_thompson` is a sum of per-unit terms
    ``(1 - pi_z) / pi_z^2 W_z^2 e_z^2``; grouped by query (the residuals of a
    query share the model's error for that query: the query is the ultimate
    cluster), :func:`~activerank.inference.small_sample.cluster_dof` gives
    twice the effective number of queries carrying it, at most ``g - 1`` for
    the ``g`` queries with a term, the smallest over the targets.  On a small
    pool a handful carry it, and a normal interval under-covers
    (``docs/document_level.md``).

    Parameters
    ----------
    target, design, rows, grades, probs
        As in :func:`horvitz_thompson` (Poisson designs).

    Returns
    -------
    float

    Examples
    --------
    >>> from activerank.design.kinds.documents import document_target, PoissonDesign
    >>> t = document_target([[[0, 1], [2, 3], [4, 5]]], n_docs=6, discounts=[1.0, 0.5], gains=[0.0, 1.0])
    >>> d = PoissonDesign(pi=np.full(6, 0.5), costs=np.ones(6), budget=3.0, kind="poisson")
    >>> poisson_dof(t, d, [0, 2, 4], [1, 1, 1])   # three queries alike: the g - 1 of a sample variance
    2.0
    """
    idx, u = _sample_iv(target, rows, grades)
    m, _ = _model_iv(target, probs)
    pi = design.pi[idx]
    e = u - m[idx]
    terms = target.weights[idx] ** 2 * ((1.0 - pi) / np.where(pi > 0, pi, 1.0) ** 2 * e * e)[:, None]
    k = np.atleast_1d(cluster_dof(terms, target.query[idx])) if idx.size else np.zeros(0)
    k = k[k > 0]
    return float(k.min()) if k.size else math.inf


def hansen_hurwitz(target: DocumentTarget, Q, rows, grades, *, probs=None, census_rows=None,
                   census_grades=None) -> DocumentEstimate:
    """Importance-sampling estimate from i.i.d. draws with replacement (Schnabel et al. 2016, Eq. 3).

    Parameters
    ----------
    target : DocumentTarget
    Q : array-like of shape (n_units,)
        The sampling distribution the draws came from (0 on census units).
    rows : array-like of int, shape (n_draws,)
        Document row of every draw, repeats included.
    grades : array-like of int, shape (n_draws,)
        Grade of every draw (a repeated row carries its one judgment).
    probs : array-like, optional
        Relevance model for the control variate ``M + (1/n) sum W (u - m)/Q``.
    census_rows, census_grades : array-like, optional
        Earlier judgments reused exactly (their units must have ``Q = 0``).

    Returns
    -------
    DocumentEstimate
        Covariance ``s^2 / n`` of the per-draw terms (Eq. 6).

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.
    """
    Q = np.asarray(Q, dtype=np.float64).reshape(-1)
    if Q.size != target.n_units:
        raise ValueError(f"`Q` must have one entry per unit ({target.n_units}); got {Q.size}.")
    census = np.zeros(target.n_units, dtype=bool)
    cu = np.zeros(target.n_units)
    if census_rows is not None:
        ci, cval = _sample_iv(target, census_rows, census_grades)
        census[ci] = True
        cu[ci] = cval
        if np.any(Q[ci] > 0):
            raise ValueError("census units must have Q = 0 (they are not sampled again).")
    _support_iv(target, np.where(census, 1.0, Q), "Q")
    idx, u = _sample_iv(target, rows, grades, allow_repeats=True)
    if idx.size < 2:
        raise ValueError(f"need at least 2 draws for an estimate with a variance; got {idx.size}.")
    if np.any(Q[idx] <= 0):
        bad = idx[np.flatnonzero(Q[idx] <= 0)[0]]
        raise ValueError(f"document row {target.rows[bad]} was drawn but has Q = 0.")
    m, _ = _model_iv(target, probs)
    live = ~census
    M = target.weights[live].T @ m[live] + target.weights[census].T @ cu[census]
    z = target.weights[idx] * ((u - m[idx]) / Q[idx])[:, None]
    n = idx.size
    est = z.mean(axis=0) + M
    cov = np.atleast_2d(np.cov(z.T, ddof=1)) / n
    return DocumentEstimate(est, cov, int(np.unique(idx).size + census.sum()),
                            "hh_cv" if probs is not None else "hh")


def _within_query_kernel(W, u, Qx, draws):
    """UBIS terms; draws (..., n_queries, k) unit indices -> estimate (..., T), covariance diag (..., T)."""
    k = draws.shape[-1]
    z = W[draws] * (u[draws] / Qx[draws])[..., None]  # (..., nq, k, T)
    est = z.mean(axis=-2).sum(axis=-2)
    if k < 2:
        return est, np.full(est.shape, np.nan)
    return est, (z.var(axis=-2, ddof=1) / k).sum(axis=-2)


def within_query_estimate(target: DocumentTarget, Qx, rows, grades) -> DocumentEstimate:
    """UBIS-k (Schnabel et al. 2015): every query gets ``k`` draws from its own ``Q_x``.

    ``T_hat = sum_x (1/k) sum_i W_i u_i / Q_x(z_i)`` (unbiased for every ``k >= 1``),
    covariance ``sum_x S_x / k`` with ``S_x`` the sample covariance of the
    query's ``k`` terms (unbiased; needs ``k >= 2``, NaN otherwise).

    Parameters
    ----------
    target : DocumentTarget
    Qx : array-like of shape (n_units,)
        From :func:`activerank.design.documents.within_query_distribution`.
    rows, grades : array-like of int, shape (n_live_queries, k)
        Drawn document rows (one row per query with a positive ``Q_x``, in pool
        order, as :func:`~activerank.design.documents.draw_within_queries`) and
        their grades.

    Returns
    -------
    DocumentEstimate

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    """
    Qx = np.asarray(Qx, dtype=np.float64).reshape(-1)
    r = np.asarray(rows)
    if r.ndim != 2:
        raise ValueError(f"`rows` must have shape (n_live_queries, k); got {r.shape}.")
    idx = target.unit_index(r.reshape(-1)).reshape(r.shape)
    u = np.zeros(target.n_units)
    uu = target.utilities(np.asarray(grades).reshape(-1))
    if uu.size != idx.size:
        raise ValueError(f"`grades` must match `rows` ({idx.size} entries); got {uu.size}.")
    tot = np.bincount(target.query, Qx, minlength=target.n_queries)
    live_q = np.flatnonzero(tot > 0)
    if idx.shape[0] != live_q.size or np.any(target.query[idx] != live_q[:, None]):
        raise ValueError("`rows` must hold, in pool order, the draws of every query with a positive Q_x.")
    _support_iv(target, Qx, "Qx")
    u[idx.reshape(-1)] = uu
    est, var = _within_query_kernel(target.weights, u, Qx, idx)
    k = idx.shape[1]
    if k < 2:
        cov = np.diag(var)
    else:  # the queries' draws are independent: per-query sample covariances of the k terms, summed
        z = target.weights[idx] * (u[idx] / Qx[idx])[..., None]  # (n_live_queries, k, n_targets)
        zc = z - z.mean(axis=1, keepdims=True)
        cov = np.einsum("qkt,qks->ts", zc, zc) / ((k - 1) * k)
    return DocumentEstimate(est, cov, int(np.unique(idx).size), "ubis")


@dataclass(frozen=True, eq=False)
class StatAPEstimate:
    """statAP of one system: per-query ratio estimates and their mean.

    Attributes
    ----------
    estimate : float
        Mean over queries of ``numerator / denominator`` (0 where the
        denominator is 0).
    per_query : ndarray of shape (n_queries,)
    numerator : ndarray of shape (n_queries,)
        Unbiased estimate of ``sum_{relevant k} precision@k`` (HT over single
        and pairs of independent inclusions).
    denominator : ndarray of shape (n_queries,)
        Unbiased estimate of ``R``, the number of relevant documents of the query's pool.
    """

    estimate: float
    per_query: np.ndarray
    numerator: np.ndarray
    denominator: np.ndarray


def stat_ap(ranking, pool, inclusion, rows, grades, *, relevant=1) -> StatAPEstimate:
    """statAP (Aslam, Pavlu & Yilmaz 2006) from a Poisson sample of pooled documents.

    Average precision is not linear in single judgments (it has pairwise terms
    ``rel_i rel_j``), so it is estimated per query as a ratio:
    ``N_hat = sum_{k in S} (rel_k / pi_k) (1/k) (1 + sum_{j in S, j < k} rel_j / pi_j)``
    (``k, j`` ranks of the system's list; with independent inclusions
    ``E N_hat = sum_{k relevant} precision@k`` exactly) over
    ``R_hat = sum_{z in S} rel_z / pi_z`` (the query's pool; ``E R_hat = R``).
    ``statAP = mean_x N_hat_x / R_hat_x`` is consistent but biased at order
    ``1/n`` (a ratio), like Cormack & Grossman's ``dyn`` AP.

    Parameters
    ----------
    ranking : Rankings
        The evaluated system's ranked lists (document rows), every ranked row in the pool.
    pool : Rankings
        Per query, the pooled document rows the sample is drawn from (defines ``R``).
    inclusion : array-like of shape (n_docs,)
        Poisson inclusion probability of every document row (> 0 on the pool).
    rows, grades : array-like of int
        Judged rows (no repeats) and their grades.
    relevant : int, default 1
        Grades ``>= relevant`` count as relevant.

    Returns
    -------
    StatAPEstimate

    References
    ----------
    .. [1] J. A. Aslam, V. Pavlu, E. Yilmaz. "A Statistical Method for System
       Evaluation Using Incomplete Judgments." SIGIR 2006.
    .. [2] B. Carterette, E. Kanoulas, E. Yilmaz. "Advances on the Development
       of Evaluation Measures" (tutorial), statAP slides.
    """
    pi = np.asarray(inclusion, dtype=np.float64).reshape(-1)
    n_docs = pi.size
    r = np.asarray(rows, dtype=np.int64).reshape(-1)
    g = np.asarray(grades).reshape(-1)
    if g.size != r.size:
        raise ValueError(f"`grades` must have one entry per judged row ({r.size}); got {g.size}.")
    if r.size and (r.min() < 0 or r.max() >= n_docs):
        raise ValueError(f"`rows` must index document rows in [0, {n_docs}).")
    if np.unique(r).size != r.size:
        raise ValueError("`rows` must not repeat a document.")
    in_pool = np.zeros(n_docs, dtype=bool)
    in_pool[pool.items] = True
    outside = np.flatnonzero(~in_pool[ranking.items])
    if outside.size:
        raise ValueError(f"ranked document row {ranking.items[outside[0]]} is not in the pool.")
    if np.any(~in_pool[r]):
        raise ValueError(f"judged row {r[np.flatnonzero(~in_pool[r])[0]]} is not in the pool.")
    zero = np.flatnonzero(~(pi[pool.items] > 0))
    if zero.size:
        raise ValueError(f"inclusion probability is 0 for pooled document row {pool.items[zero[0]]}; "
                         "statAP would be biased.")
    y = np.zeros(n_docs)  # rel / pi on judged rows, 0 elsewhere
    y[r] = (g >= relevant) / pi[r]
    m = ranking.n_queries
    R_hat = np.bincount(pool.query_index(), y[pool.items], minlength=m)
    yk = y[ranking.items]
    qk = ranking.query_index()
    cum = np.cumsum(yk)
    before = cum - yk - np.repeat(np.concatenate([[0.0], cum])[ranking.offsets[:-1]], ranking.lengths)
    k = ranking.positions() + 1.0
    N_hat = np.bincount(qk, yk * (1.0 + before) / k, minlength=m)
    per = np.divide(N_hat, R_hat, out=np.zeros(m), where=R_hat > 0)
    return StatAPEstimate(float(per.mean()), per, N_hat, R_hat)


def ratio_estimate(est: DocumentEstimate, numerator: int = 0, denominator: int = 1) -> DocumentEstimate:
    """Ratio of two jointly estimated targets with a delta-method variance.

    ``R = T_num / T_den``, ``Var ≈ (V_nn - 2 R V_nd + R^2 V_dd) / T_den^2``
    (Särndal et al. 1992, Sec. 5.6): normalized metrics such as statAP-style
    precision sums over an estimated recall base.  Biased at order ``1/n``.

    Parameters
    ----------
    est : DocumentEstimate
        Joint estimate of (at least) the two targets.
    numerator, denominator : int
        Target indices.

    Returns
    -------
    DocumentEstimate
        One target, the ratio.

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    t = est.estimate.size
    for name, j in (("numerator", numerator), ("denominator", denominator)):
        if isinstance(j, bool) or not isinstance(j, numbers.Integral) or not 0 <= j < t:
            raise ValueError(f"`{name}` must be a target index in [0, {t}); got {j!r}.")
    a, b = est.estimate[numerator], est.estimate[denominator]
    if b == 0:
        raise ValueError("the denominator target is estimated as 0; the ratio is undefined.")
    V = est.covariance
    r = a / b
    var = (V[numerator, numerator] - 2 * r * V[numerator, denominator] + r * r * V[denominator, denominator]) / b**2
    return DocumentEstimate(np.array([r]), np.array([[var]]), est.n_judged, est.method + "_ratio")


def census_snis(values, weights, mass: float, *, n_distinct=None) -> tuple[float, float]:
    """``mass * SNIS`` with its delta-method SE: query-level draws over the undetermined queries.

    With :func:`activerank.design.cancellation.census_distribution`, draws
    come only from queries whose difference is not known to be 0; their
    ``p``-weighted mean times the ``p``-mass of those queries estimates the
    pool target (the determined queries contribute exactly 0).

    Parameters
    ----------
    values : array-like of shape (n,)
        Per-draw differences ``delta(x)``.
    weights : array-like of shape (n,)
        ``p(x) / q(x)`` of the draws.
    mass : float
        :attr:`~activerank.design.cancellation.CensusDesign.mass`.
    n_distinct : int, optional
        Distinct queries drawn (SE is NaN below 2).

    Returns
    -------
    estimate, standard_error : float

    References
    ----------
    .. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
       "Active Evaluation of Ranking Functions based on Graded Relevance."
       ECML PKDD 2012.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if v.size != w.size or v.size == 0:
        raise ValueError("`values` and `weights` must be non-empty and of equal length.")
    total = w.sum()
    est = float(w @ v / total)
    n = v.size
    if n < 2 or (n_distinct is not None and n_distinct < 2):
        return mass * est, float("nan")
    se2 = n / (n - 1) * float((w * w) @ (v - est) ** 2) / total**2
    return mass * est, mass * float(np.sqrt(se2))
