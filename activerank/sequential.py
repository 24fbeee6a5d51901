"""Target precision: label one query at a time until the interval is narrow enough.

:func:`estimate_sequential` draws queries i.i.d. from the (fixed) sampling
distribution ``q`` of :func:`activerank.api.design`, labels each new query,
and stops as soon as the interval's half-width is at most
``target_half_width`` -- or when the next query would exceed the budget.

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

import bisect
import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .api import _pool_iv, _py, design
from .adaptive import _scores_pair
from .inference.estimators import ComparisonResult, ConfidenceInterval, EstimateResult
from .labelers import LabelingError, check_grades
from .metrics import pool_metric_values
from .metrics.moments import _moments
from .design.sampling import DEFAULT_DEFENSIVE

__all__ = [
    "INTERVAL_KIND",
    "STOPPING_REASONS",
    "SequentialEstimateResult",
    "SequentialComparisonResult",
    "asymptotic_cs",
    "cs_radius",
    "rho_for_time",
    "estimate_sequential",
]

INTERVAL_KIND = "anytime-valid asymptotic confidence sequence (Waudby-Smith et al. 2021)"
STOPPING_REASONS = ("target", "budget", "all_judged", "all_reachable_judged", "max_draws")


def _alpha(confidence_level) -> float:
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, numbers.Real) \
            or not 0 < confidence_level < 1:
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}.")
    return 1.0 - float(confidence_level)


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
    if not (isinstance(t_opt, numbers.Real) and t_opt > 0):
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


def _choose_t_opt(sigma, target, alpha_level, t_budget, min_draws) -> float:
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


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False, kw_only=True)
class _Anytime:
    """Mixin: the interval is the confidence sequence at the stopping time."""

    interval: str = INTERVAL_KIND
    stopping_reason: str
    confidence_level: float
    target_half_width: float
    half_width: float
    rho: float
    sigma: float
    center: float

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """Anytime-valid interval at the stopping time (not the Wald interval).

        ``confidence_level`` defaults to the level the run stopped on; any other
        level gives the sequence at that level with the same ``rho`` (still
        anytime-valid).
        """
        level = self.confidence_level if confidence_level is None else confidence_level
        _alpha(level)
        point = self._point()
        if self.stopping_reason == "all_judged":
            return ConfidenceInterval(point, point)
        r = float(cs_radius(self.n_draws, self.sigma, level, rho=self.rho))
        return ConfidenceInterval(point - r, point + r)


@dataclass(frozen=True, eq=False, kw_only=True)
class SequentialEstimateResult(_Anytime, EstimateResult):
    """:class:`~activerank.inference.estimators.EstimateResult` of a run stopped at a target precision.

    Attributes
    ----------
    estimate : float
        Mean of the centered importance-sampling terms at the stopping time.
    standard_error : float
        ``sigma / sqrt(n_draws)``: the fixed-n standard error, for reference
        only -- the Wald interval is *not* valid after data-dependent stopping.
    interval : str
        What :meth:`confidence_interval` returns (:data:`INTERVAL_KIND`).
    stopping_reason : {"target", "budget", "all_judged", "all_reachable_judged", "max_draws"}
    confidence_level, target_half_width, half_width : float
        Level the rule used, the requested and the attained half-width.
    rho, sigma, center : float
        Mixture parameter, terms' standard deviation and the centering ``c``.
    """



@dataclass(frozen=True, eq=False, kw_only=True)
class SequentialComparisonResult(_Anytime, ComparisonResult):
    """:class:`~activerank.inference.estimators.ComparisonResult` of a run stopped at a target precision.

    Same extra attributes as :class:`SequentialEstimateResult`; ``difference``
    is ``estimate_a - estimate_b`` (each the centered IS mean of its ranker).
    ``prob_a_better`` uses the fixed-n normal approximation and is not
    anytime-valid; use ``confidence_interval()`` to decide.
    """


# --------------------------------------------------------------------------- the loop


@dataclass(frozen=True, eq=False)
class _Run:
    queries: np.ndarray
    new: np.ndarray
    charged: np.ndarray
    values: np.ndarray  # (n_draws, n_outputs)
    center: np.ndarray  # running CS center of the last output
    radius: np.ndarray
    reason: str


def _sequential_loop(q, p, cost, c, value_of, *, budget, target, confidence_level, rho, min_draws,
                     max_draws, rng):
    """Draw from ``q`` one at a time until the CS half-width of the last output meets ``target``.

    ``value_of(x)`` is called once per new query and returns the outputs'
    values (the last one is the stopping target); ``c`` holds their centers.
    """
    alpha = _alpha(confidence_level)
    m = q.size
    cdf = np.cumsum(q / q.sum())
    cdf[-1] = 1.0
    cdf = cdf.tolist()
    reachable = (q > 0).tolist()
    n_reach = int(np.count_nonzero(q > 0))
    pos_p = (p > 0).tolist()
    n_target = int(np.count_nonzero(p > 0))
    w_of = np.where(q > 0, p / np.where(q > 0, q, 1.0), 0.0).tolist()
    cost_l = np.asarray(cost, dtype=np.float64).tolist()
    c = np.asarray(c, dtype=np.float64)
    c_last = float(c[-1])
    known = {}
    n_known_reach = n_known_p = 0
    queries, new, vals, centers, radii = [], [], [], [], []
    spent, t, mean, m2 = 0.0, 0, 0.0, 0.0
    tol = 1e-12 * max(1.0, budget)
    r2 = rho * rho
    log_a = math.log(alpha)
    u, ui = rng.random(256).tolist(), 0
    reason = "max_draws"
    while t < max_draws:
        if n_known_reach == n_reach:
            reason = "all_judged" if n_known_p == n_target else "all_reachable_judged"
            break
        if ui == 256:
            u, ui = rng.random(256).tolist(), 0
        x = min(bisect.bisect_right(cdf, u[ui]), m - 1)
        ui += 1
        is_new = x not in known
        if is_new:
            if spent + cost_l[x] > budget + tol:
                reason = "budget"
                break
            known[x] = tuple(float(v) for v in value_of(x))
            spent += cost_l[x]
            n_known_reach += reachable[x]
            n_known_p += pos_p[x]
        v = known[x]
        z = c_last + w_of[x] * (v[-1] - c_last)
        t += 1
        d = z - mean  # Welford running mean / variance (divisor t)
        mean += d / t
        m2 += d * (z - mean)
        vv = t * r2 + 1.0
        rad = math.sqrt(max(m2, 0.0) / t) * math.sqrt(2.0 * vv / (t * t * r2) * (0.5 * math.log(vv) - log_a))
        queries.append(x)
        new.append(is_new)
        vals.append(v)
        centers.append(mean)
        radii.append(rad)
        if t >= min_draws and rad <= target:
            reason = "target"
            break
    queries = np.asarray(queries, dtype=np.int64)
    new = np.asarray(new, dtype=bool)
    charged = np.where(new, np.asarray(cost, dtype=np.float64)[queries], 0.0)
    k = c.size
    return _Run(queries, new, charged,
                np.asarray(vals, dtype=np.float64).reshape(-1, k), np.asarray(centers), np.asarray(radii),
                reason)


def estimate_sequential(pool, scores, probs, labeler, *, target_half_width, budget, confidence_level=0.95,
                        metric="err@10", k=None, method="active", costs="auto", query_weights=None,
                        defensive=DEFAULT_DEFENSIVE, min_draws=30, max_draws=None, t_opt=None, rng=None):
    """Label one query at a time until the anytime-valid interval is narrow enough.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    scores : array-like of shape (n_docs,), Rankings, or tuple of two of them
        One ranker, or ``(scores_a, scores_b)`` to estimate ``Delta = R_a - R_b``.
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)``.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``; asked once per new query.
    target_half_width : float
        Stop once the confidence sequence's half-width is at most this.
    budget : float
        Hard cap on the labeling cost, in units of the pool's mean query cost.
    confidence_level : float, default 0.95
    metric, k, method, costs, query_weights, defensive
        As in :func:`activerank.estimate` (``method`` in ``{"active",
        "passive", "active_uniform_costs"}``).
    min_draws : int, default 30
        Never stop on the target before this many draws (the asymptotic
        sequence needs a sample variance worth the name).
    max_draws : int, optional
        Hard cap on draws (default ``100 * n_queries``).
    t_opt : float, optional
        Time at which to tune ``rho``; default: when the half-width predicted
        by the relevance model meets the target, capped at the number of
        draws the budget buys.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    SequentialEstimateResult or SequentialComparisonResult
        ``confidence_interval()`` is the anytime-valid interval at the stopping
        time; ``stopping_reason`` says why it stopped; ``trace`` has one row
        per draw with the running ``cs_center`` and ``cs_half_width``.

    Examples
    --------
    >>> import activerank as ar
    >>> from activerank.sequential import estimate_sequential
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = estimate_sequential(data, data.X[:, 0], probs, ar.KnownLabels.from_data(data),
    ...                           target_half_width=0.5, budget=25, metric="err@5", rng=0)
    >>> res.stopping_reason in ("target", "budget", "all_judged"), res.cost_spent <= 25
    (True, True)
    >>> ci = res.confidence_interval()
    >>> res.interval.startswith("anytime-valid")
    True
    """
    pool = _pool_iv(pool)
    rankings = _scores_pair(scores, pool)
    if not callable(labeler):
        raise TypeError(f"`labeler` must be callable; got {type(labeler).__name__}.")
    _alpha(confidence_level)  # validates `confidence_level` before any label is bought
    if isinstance(target_half_width, bool) or not isinstance(target_half_width, numbers.Real) \
            or not (np.isfinite(target_half_width) and target_half_width > 0):
        raise ValueError(f"`target_half_width` must be a positive finite number; got {target_half_width!r}.")
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not (np.isfinite(budget) and budget > 0):
        raise ValueError(f"`budget` must be a positive finite number; got {budget!r}.")
    if isinstance(min_draws, bool) or not isinstance(min_draws, numbers.Integral) or min_draws < 2:
        raise ValueError(f"`min_draws` must be an integer >= 2; got {min_draws!r}.")
    if method not in ("active", "passive", "active_uniform_costs"):
        raise ValueError(f"`method` must be one of ['active', 'passive', 'active_uniform_costs']; got {method!r}.")
    dsg, c, rho, max_draws = _prepare(pool, rankings, probs, metric=metric, k=k, method=method, costs=costs,
                                      query_weights=query_weights, defensive=defensive,
                                      target_half_width=float(target_half_width), budget=float(budget),
                                      confidence_level=confidence_level, min_draws=int(min_draws),
                                      max_draws=max_draws, t_opt=t_opt)
    cost, p, q = dsg.costs.cost, dsg.p, dsg.q
    gen = np.random.default_rng(rng)
    n_docs = int(np.asarray(pool.offsets)[-1])
    doc_ids = getattr(pool, "doc_ids", None)
    labels = np.zeros(n_docs, dtype=np.int64)
    acquired = {}

    def value_of(x):
        rows = dsg.documents(x)
        ids = rows.tolist() if doc_ids is None else [doc_ids[r] for r in rows]
        qid = _py(pool.query_ids[x])
        try:
            grades = check_grades(labeler(qid, ids), qid, ids, dsg.n_grades)
        except Exception as exc:
            raise LabelingError(f"labeling query {qid!r} failed: {exc}",
                                judgments={**acquired}) from exc
        acquired[qid] = dict(zip(ids, grades.tolist()))
        labels[rows] = grades
        vals = [pool_metric_values(labels, r.subset([x]), metric=dsg.metric, ymax=dsg.n_grades - 1)[0]
                for r in dsg.rankings]
        if len(vals) == 2:
            vals.append(vals[0] - vals[1])
        return vals

    run = _sequential_loop(q, p, cost, c, value_of, budget=float(budget), target=float(target_half_width),
                           confidence_level=confidence_level, rho=rho, min_draws=int(min_draws),
                           max_draws=max_draws, rng=gen)
    return _result(pool, dsg, run, c, rho, confidence_level, float(target_half_width), float(budget))


def _prepare(pool, rankings, probs, *, metric, k, method, costs, query_weights, defensive, target_half_width,
             budget, confidence_level, min_draws, max_draws, t_opt):
    """Design, centers ``c`` (model-predicted pool means) and the mixture parameter ``rho``."""
    dsg = design(pool, rankings, probs, metric=metric, k=k, method=method, costs=costs,
                 query_weights=query_weights, defensive=defensive)
    m = dsg.p.size
    max_draws = 100 * m if max_draws is None else int(max_draws)
    if max_draws < 1:
        raise ValueError(f"`max_draws` must be >= 1; got {max_draws!r}.")
    cost = dsg.costs.cost
    if float(cost[dsg.q > 0].min()) > budget:
        raise ValueError(f"`budget`={budget:g} is below the cheapest query's cost "
                         f"({float(cost[dsg.q > 0].min()):.4g}); no query could be labeled.")
    p, q = dsg.p, dsg.q
    # centers: the model's predicted pool means (fixed before any label)
    P = np.asarray(probs, dtype=np.float64)
    if len(rankings) == 1:
        means = [dsg.predicted_mean]
    else:
        means = [_moments(P, r, dsg.metric).mean for r in dsg.rankings]
        means.append(means[0] - means[1])
    c = np.array([float(np.dot(p, mu)) for mu in means])
    # sigma of the target terms under the model (for tuning rho only)
    mu_t = means[-1]
    var_t = _model_sq_error(P, dsg, len(rankings))
    sigma_model = float(np.sqrt(max(np.sum(np.where(q > 0, p * p / np.where(q > 0, q, 1.0), 0.0)
                                           * (var_t + (mu_t - c[-1]) ** 2)), 0.0)))
    if t_opt is None:
        t_budget = budget / float(np.dot(q, cost))
        t_opt = _choose_t_opt(sigma_model, target_half_width, confidence_level, t_budget, min_draws)
    rho = rho_for_time(float(t_opt), confidence_level)

    return dsg, c, rho, max_draws


def _model_sq_error(P, dsg, n_rankings) -> np.ndarray:
    """``Var_theta[L | x]`` (or of ``delta``) per query."""
    if n_rankings == 1:
        return _moments(P, dsg.rankings[0], dsg.metric).variance
    from .metrics.moments import _pair_moments

    return _pair_moments(P, dsg.rankings[0], dsg.rankings[1], dsg.metric).delta_variance


def _result(pool, dsg, run: _Run, c, rho, confidence_level, target, budget):
    p, q = dsg.p, dsg.q
    x = run.queries
    n = x.size
    w = p[x] / q[x]
    z = c[None, :] + w[:, None] * (run.values - c[None, :])
    if run.reason == "all_judged":
        # every query with p > 0 is judged: the pool mean is known exactly
        first = np.unique(x, return_index=True)[1]
        xs, vs = x[first], run.values[first]
        exact = vs.T @ p[xs]
        points, sigma, se, hw = exact, 0.0, 0.0, 0.0
    else:
        points = z.mean(axis=0) if n else np.full(c.size, np.nan)
        sigma = float(z[:, -1].std()) if n else np.nan
        se = float(z[:, -1].std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
        hw = float(run.radius[-1]) if n else np.inf
    charged = run.charged
    trace = pd.DataFrame({
        "draw": np.arange(n), "query": x, "query_id": np.asarray(pool.query_ids)[x],
        "q": q[x], "p": p[x], "weight": w, "new": run.new, "cost": charged,
        "cumulative_cost": np.cumsum(charged),
    })
    if run.values.shape[1] == 1:
        trace["value"] = run.values[:, 0]
    else:
        trace["value_a"], trace["value_b"], trace["delta"] = run.values.T
    trace["is_term"] = z[:, -1] if n else np.zeros(0)
    trace["cs_center"] = run.center
    trace["cs_half_width"] = run.radius
    ess = float(w.sum() ** 2 / np.dot(w, w)) if n else 0.0
    common = dict(metric=str(dsg.metric), method=dsg.method, n_draws=int(n), n_queries=int(np.unique(x).size),
                  cost_spent=float(charged.sum()), budget=budget, effective_sample_size=ess,
                  standard_error=float(se), trace=trace, stopping_reason=run.reason,
                  confidence_level=float(confidence_level), target_half_width=target, half_width=float(hw),
                  rho=float(rho), sigma=float(sigma), center=float(c[-1]))
    if c.size == 1:
        return SequentialEstimateResult(estimate=float(points[0]), **common)
    return SequentialComparisonResult(difference=float(points[2]), estimate_a=float(points[0]),
                                      estimate_b=float(points[1]), **common)
