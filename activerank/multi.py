"""Many systems at once: k candidates against a baseline, and ranking k systems.

Two questions, one labeling budget, one set of weighted draws:

* :func:`compare_many` -- how much better is each of ``m`` candidates than the
  production baseline?  Targets ``Delta_j = R_j - R_base`` with per-query
  differences ``delta_j(x) = L_j(x) - L_base(x)``.
* :func:`rank_systems` -- how do ``k`` systems order?  Targets each system's
  mean metric relative to the mean system, ``theta_i = R_i - mean_l R_l``
  (Schnabel et al. 2016, Sec. 6), with per-query ``L_i(x) - Lbar(x)``.

Sampling.  Every target is estimated by self-normalized importance weighting
from the same draws ``x_1..x_n ~ q`` with weights ``w = p/q``.  Minimizing
the *sum* of the targets' asymptotic variances subject to the expected cost,
exactly as for one target (Sawade et al. 2012, Derivation 1), gives

``q*(x)  ∝  p(x) * sqrt( sum_j E[(delta_j - Delta_j)^2 | x] / lambda(x) )``

with the moments under the relevance model.  For the candidates-vs-baseline
design the ``m`` terms come from the pair kernel of each candidate with the
baseline.  For ranking, ``sum_i (L_i - Lbar)^2 = (1/k) sum_{i<l} (L_i - L_l)^2``
so the sum of the variances of the differences to the mean system is, up to
the constant ``1/k``, the sum over all ``k(k-1)/2`` pairwise differences:
the same ``q*`` is optimal for the pairwise comparisons, and it is computed
from the pair kernel's per-query ``E[L_i L_l | x]`` (the per-query covariance
matrix of the ``L``'s) of every pair.  Judging a query costs the union of all
``k`` rankings' top-``k`` documents (a shared document is judged once).

Estimation.  With ``V`` the ``(n, s)`` matrix of the draws' metric values of
the ``s`` systems, ``R_hat = w^T V / sum(w)`` and the joint delta-method
covariance is

``Sigma_hat = n/(n-1) * sum_d w_d^2 (V_d - R_hat)(V_d - R_hat)^T / (sum w)^2``

(diagonal = :func:`activerank.inference.estimators.snis`'s squared standard error).
Differences are linear maps ``A R_hat`` with covariance ``A Sigma_hat A^T``.

Simultaneous intervals use the max-|t| (single-step) method: the critical
value ``c`` solves ``P(max_j |Z_j| <= c) = confidence_level`` for ``Z`` normal
with the estimates' correlation matrix, so all intervals ``est_j +- c SE_j``
hold jointly with the nominal probability (asymptotically).  ``c`` is
computed deterministically from a fixed scrambled Sobol' sample of
``2**15`` normal points (error in ``c`` about 0.002-0.005); Bonferroni
(``simultaneous="bonferroni"``) is the conservative closed-form alternative.

References
----------
.. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
   "Active Evaluation of Ranking Functions based on Graded Relevance."
   ECML PKDD 2012.
.. [2] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
   Comparative Evaluation of Ranking Functions." ICTIR 2016.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats

from .api import Design, _pool_iv, _query_values, _rankings_for_pool, _trace, design_inputs, label_plan
from .inference.estimators import ConfidenceInterval, RunInfo, _z, warn_if_low_ess
from .metrics.moments import _pair_moments
from .ragged import Rankings

# the k-system estimators are importance-weighted means; no control variate here
METHODS = ("active", "passive", "active_uniform_costs")
from .design.sampling import DEFAULT_DEFENSIVE, draw_budgeted, expected_squared_error, optimal_distribution

__all__ = [
    "MultiDesign",
    "SimultaneousIntervals",
    "MultiComparisonResult",
    "SystemRankingResult",
    "design_many",
    "estimate_many_from_labels",
    "compare_many",
    "rank_systems",
    "max_abs_t_critical_value",
    "kendall_tau",
    "joint_snis",
]

TARGETS = ("baseline", "mean")
_SOBOL_LOG2 = 15
_SOBOL_SEED = 20120924


# --------------------------------------------------------------------------- critical values


@lru_cache(maxsize=32)
def _sobol_normals(dim: int) -> np.ndarray:
    """Fixed ``(dim, 2**15)`` standard-normal QMC sample (deterministic, cached)."""
    u = stats.qmc.Sobol(dim, scramble=True, seed=np.random.default_rng(_SOBOL_SEED + dim))  # `rng=` needs SciPy>=1.15
    z = np.ascontiguousarray(stats.norm.ppf(u.random_base2(_SOBOL_LOG2)).T)  # (dim, 2**15)
    z.setflags(write=False)
    return z


def _simultaneous_iv(simultaneous):
    if simultaneous is True or simultaneous == "max_t":
        return "max_t"
    if simultaneous is False or simultaneous is None or simultaneous == "none":
        return "none"
    if simultaneous == "bonferroni":
        return "bonferroni"
    raise ValueError(
        f"`simultaneous` must be True (max-|t|), False, or 'bonferroni'; got {simultaneous!r}."
    )


def max_abs_t_critical_value(covariance, confidence_level: float = 0.95, *,
                             simultaneous=True) -> float:
    """Critical value ``c`` with ``P(max_j |Z_j| / sd_j <= c) = confidence_level``.

    Parameters
    ----------
    covariance : array-like of shape (s, s)
        Covariance (or correlation) of the estimates; may be singular (as for
        differences to the mean system).  Components with zero variance are
        left out (their intervals are points).
    confidence_level : float in (0, 1), default 0.95
    simultaneous : True, False or "bonferroni", default True
        True: the max-|t| quantile of the joint normal (deterministic
        scrambled-Sobol' evaluation); ``"bonferroni"``: ``z_{1 - alpha/(2s)}``;
        False: the per-estimate ``z_{1 - alpha/2}``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(max_abs_t_critical_value(np.eye(1)), 3)
    1.96
    >>> round(max_abs_t_critical_value(np.eye(3), simultaneous="bonferroni"), 3)
    2.394
    >>> c = max_abs_t_critical_value(np.eye(3))       # independent: exact 2.388
    >>> abs(c - 2.388) < 0.01
    True
    """
    mode = _simultaneous_iv(simultaneous)
    z = _z(confidence_level)
    cov = np.atleast_2d(np.asarray(covariance, dtype=np.float64))
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"`covariance` must be a square matrix; got shape {cov.shape}.")
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    keep = np.isfinite(sd) & (sd > 0)
    s = int(keep.sum())
    if mode == "none" or s <= 1:
        return z
    alpha = 1.0 - confidence_level
    if mode == "bonferroni" or not np.all(np.isfinite(cov[np.ix_(keep, keep)])):
        return float(stats.norm.ppf(1.0 - alpha / (2 * s)))
    corr = cov[np.ix_(keep, keep)] / np.outer(sd[keep], sd[keep])
    vals, vecs = np.linalg.eigh((corr + corr.T) / 2)
    factor = vecs * np.sqrt(np.clip(vals, 0.0, None))
    z = _sobol_normals(s)
    t = np.zeros(z.shape[1])
    for row in factor:  # matrix-vector products: fast and free of BLAS-thread contention
        np.maximum(t, np.abs(row @ z), out=t)
    return float(np.quantile(t, confidence_level))


def kendall_tau(a, b) -> float:
    """Kendall's tau-b between two score vectors (e.g. estimated vs true system means).

    Examples
    --------
    >>> kendall_tau([0.3, 0.1, 0.2], [3, 1, 2])
    1.0
    >>> round(kendall_tau([0.3, 0.1, 0.2], [1, 2, 3]), 4)
    -0.3333
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.size != b.size:
        raise ValueError(f"`a` and `b` must have the same length; got {a.size} and {b.size}.")
    if a.size < 2:
        raise ValueError("`a` and `b` must hold at least two systems.")
    return float(stats.kendalltau(a, b).statistic)


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True, eq=False)
class SimultaneousIntervals:
    """Intervals ``estimate +- critical_value * standard_error`` for named quantities.

    Attributes
    ----------
    names : tuple of str
    estimate, standard_error, low, high : ndarray of shape (s,)
    critical_value : float
        The common multiplier (max-|t|, Bonferroni, or per-interval ``z``).
    confidence_level : float
    simultaneous : str
        ``"max_t"``, ``"bonferroni"`` or ``"none"``.

    Examples
    --------
    >>> ci = SimultaneousIntervals.build(("a", "b"), np.array([0.1, -0.2]), np.eye(2) * 0.01,
    ...                                  0.95, simultaneous=False)
    >>> round(ci["a"].high, 4)
    0.296
    >>> ci.covers([0.0, 0.0]).tolist()
    [True, False]
    """

    names: tuple
    estimate: np.ndarray
    standard_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_value: float
    confidence_level: float
    simultaneous: str

    @classmethod
    def build(cls, names, estimate, covariance, confidence_level, *, simultaneous=True):
        mode = _simultaneous_iv(simultaneous)
        c = max_abs_t_critical_value(covariance, confidence_level, simultaneous=mode)
        se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
        est = np.asarray(estimate, dtype=np.float64)
        return cls(tuple(names), _ro(est), _ro(se), _ro(est - c * se), _ro(est + c * se), c,
                   float(confidence_level), mode)

    def __getitem__(self, name) -> ConfidenceInterval:
        try:
            i = self.names.index(name)
        except ValueError:
            raise KeyError(f"no interval named {name!r}; names are {list(self.names)}.") from None
        return ConfidenceInterval(float(self.low[i]), float(self.high[i]))

    def covers(self, values) -> np.ndarray:
        """Which intervals contain the given true values (shape (s,))."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if v.size != len(self.names):
            raise ValueError(f"`values` must have {len(self.names)} entries; got {v.size}.")
        return (self.low <= v) & (v <= self.high)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"estimate": self.estimate, "standard_error": self.standard_error,
                             "low": self.low, "high": self.high}, index=pd.Index(self.names, name="name"))


def _ro(a):
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------- estimator


def joint_snis(values, weights):
    """Self-normalized IS means of several value columns with their joint covariance.

    Parameters
    ----------
    values : ndarray of shape (n, s)
        Metric values of the ``n`` draws under ``s`` systems.
    weights : ndarray of shape (n,)
        Importance weights ``p/q``.

    Returns
    -------
    estimate : ndarray of shape (s,)
    covariance : ndarray of shape (s, s)
        Delta-method covariance ``n/(n-1) sum w^2 (v - est)(v - est)^T / (sum w)^2``
        (NaN for ``n < 2``).
    ess : float
        Kish effective sample size.

    Examples
    --------
    >>> est, cov, ess = joint_snis(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), np.ones(4))
    >>> est.tolist(), round(float(cov[0, 0]), 6), float(cov[0, 1]), ess
    ([0.5, 0.5], 0.083333, 0.0, 4.0)
    """
    v = np.asfortranarray(values, dtype=np.float64)  # contiguous columns: same dot as snis()
    w = np.asarray(weights, dtype=np.float64)
    n, s = v.shape
    if n == 0:
        return np.full(s, np.nan), np.full((s, s), np.nan), 0.0
    total = w.sum()
    # column by column with np.dot, exactly as snis() does (bitwise-identical estimates)
    est = np.array([np.dot(w, v[:, j]) for j in range(s)]) / total
    ess = float(total**2 / np.dot(w, w))
    if n < 2:
        return est, np.full((s, s), np.nan), ess
    r = (v - est) * w[:, None]
    cov = n / (n - 1) * (r.T @ r) / total**2
    diag = np.array([np.dot(w * w, (v[:, j] - est[j]) ** 2) for j in range(s)])
    cov[np.diag_indices(s)] = n / (n - 1) * diag / total**2
    return est, cov, ess


# --------------------------------------------------------------------------- design


@dataclass(frozen=True, eq=False)
class MultiDesign(Design):
    """A :class:`~activerank.api.Design` for several rankings at once.

    ``rankings`` are the candidates followed by the baseline (``target =
    "baseline"``) or the ``k`` systems (``target = "mean"``);
    ``predicted_mean`` has shape ``(n_queries, s)``: ``E_theta[delta_j | x]``
    of every target quantity (candidate minus baseline, or system minus the
    mean system).  ``documents(x)`` is the union of all rankings' top-k.
    """

    target: str = "baseline"
    names: tuple = ()


def design_many(pool, rankings, probs, *, target="baseline", metric="err@10", k=None,
                method="active", costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE,
                names=None) -> MultiDesign:
    """Sampling design for several rankings (everything fixed before labeling).

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    rankings : sequence of Rankings
        ``target="baseline"``: the candidates then the baseline (at least 2 in
        all).  ``target="mean"``: the systems to rank (at least 2).
    probs : array-like of shape (n_docs, n_grades)
    target : {"baseline", "mean"}
        What the draws must estimate well: each candidate's difference to the
        baseline, or each system's difference to the mean system (equivalently
        all pairwise differences).
    metric, k, method, costs, query_weights, defensive
        As in :func:`activerank.estimate`.
    names : sequence of str, optional
        One name per ranking (default ``"system_0"``...).

    Returns
    -------
    MultiDesign

    Examples
    --------
    >>> import activerank as ar
    >>> from activerank.relevance.rankers import rank_by_scores
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
    >>> rks = [rank_by_scores(data.X[:, j], data.offsets) for j in range(3)]
    >>> dsg = design_many(data, rks, probs, target="mean", metric="dcg@5")
    >>> dsg.predicted_mean.shape, round(float(dsg.q.sum()), 12)
    ((30, 3), 1.0)
    """
    if target not in TARGETS:
        raise ValueError(f"`target` must be one of {list(TARGETS)}; got {target!r}.")
    rankings = tuple(rankings)
    if len(rankings) < 2:
        raise ValueError(f"`rankings` must hold at least 2 rankings; got {len(rankings)}.")
    if not all(isinstance(r, Rankings) for r in rankings):
        raise TypeError("`rankings` must be a sequence of Rankings (see activerank.relevance.rankers.rank_by_scores).")
    names = _names_iv(names, len(rankings), "names", "system")
    m, P, tops, p, qc = design_inputs(pool, rankings, probs, metric=metric, k=k, method=method,
                                      costs=costs, query_weights=query_weights, methods=METHODS)
    n_q = tops[0].n_queries
    s = len(tops)
    if target == "baseline":
        base = tops[-1]
        pms = [_pair_moments(P, t, base, m) for t in tops[:-1]]
        predicted = np.stack([pm.delta_mean for pm in pms], axis=1)
        sq = expected_squared_error(pms[0].delta_mean, pms[0].delta_variance, p)
        for pm in pms[1:]:
            sq = sq + expected_squared_error(pm.delta_mean, pm.delta_variance, p)
    else:
        means = np.empty((n_q, s))
        sq = np.zeros(n_q)
        for i in range(s):
            for j in range(i + 1, s):
                pm = _pair_moments(P, tops[i], tops[j], m)
                means[:, i], means[:, j] = pm.mean_a, pm.mean_b
                # sum over pairs of E[(delta_ij - Delta_ij)^2 | x] = k * sum_i E[(L_i - Lbar - theta_i)^2 | x]
                pair_sq = expected_squared_error(pm.delta_mean, pm.delta_variance, p)
                sq = pair_sq if (i, j) == (0, 1) else sq + pair_sq
        predicted = means - means.mean(axis=1, keepdims=True)
    if method == "passive":
        q = p.copy()
    else:
        lam = np.ones_like(qc.cost) if method == "active_uniform_costs" else qc.cost
        q = optimal_distribution(sq, lam, p, defensive=defensive)
    return MultiDesign(tops, m, method, p, q, qc, predicted, P.shape[1], target=target, names=names)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, eq=False, kw_only=True)
class MultiComparisonResult(RunInfo):
    """Differences ``Delta_j = R_j - R_baseline`` of ``m`` candidates, from one set of draws.

    Attributes
    ----------
    names : tuple of str
        Candidate names (``m``).
    baseline : str
        Baseline name.
    differences : ndarray of shape (m,)
        Estimated ``Delta_j``.
    standard_errors : ndarray of shape (m,)
    covariance : ndarray of shape (m, m)
        Joint delta-method covariance of the ``differences`` (same draws, so
        they are correlated through the shared baseline and queries).
    estimates : ndarray of shape (m,)
        Candidates' own mean metric estimates.
    baseline_estimate : float
    metric, method, n_draws, n_queries, cost_spent, budget, effective_sample_size
        As in :class:`~activerank.inference.estimators.ComparisonResult`.
    trace : pandas.DataFrame
        One row per draw: ``draw, query, query_id, q, p, weight, new, cost,
        cumulative_cost``, then ``value_<name>`` per system (baseline last) and
        ``delta_<name>`` per candidate.
    """

    names: tuple
    baseline: str
    differences: np.ndarray
    standard_errors: np.ndarray
    covariance: np.ndarray
    estimates: np.ndarray
    baseline_estimate: float

    def confidence_intervals(self, confidence_level: float = 0.95, simultaneous=True) -> SimultaneousIntervals:
        """Intervals for every ``Delta_j``; by default jointly valid (max-|t|).

        Parameters
        ----------
        confidence_level : float in (0, 1), default 0.95
        simultaneous : True, False or "bonferroni", default True
            True: all ``m`` intervals cover jointly with ``confidence_level``
            (max-|t| of the joint normal with :attr:`covariance`); False:
            each one separately (= ``activerank.compare``'s interval);
            ``"bonferroni"``: conservative joint coverage.
        """
        return SimultaneousIntervals.build(self.names, self.differences, self.covariance,
                                           confidence_level, simultaneous=simultaneous)

    def prob_better(self) -> np.ndarray:
        """Normal-approximation probability that each ``Delta_j > 0``, shape (m,)."""
        return _prob_positive(self.differences, self.standard_errors)

    def summary(self, confidence_level: float = 0.95, simultaneous=True) -> pd.DataFrame:
        """One row per candidate: difference, SE, interval, P(better than baseline)."""
        df = self.confidence_intervals(confidence_level, simultaneous).to_frame()
        df = df.rename(columns={"estimate": "difference"})
        df.insert(0, "estimate", self.estimates)
        df["prob_better"] = self.prob_better()
        return df


@dataclass(frozen=True, eq=False, kw_only=True)
class SystemRankingResult(RunInfo):
    """Estimated ordering of ``k`` systems from one set of draws.

    Attributes
    ----------
    names : tuple of str
    estimates : ndarray of shape (k,)
        Each system's estimated mean metric ``R_i``.
    covariance : ndarray of shape (k, k)
        Joint covariance of ``estimates``.
    relative : ndarray of shape (k,)
        ``R_i - mean_l R_l``: difference to the mean system (sums to 0).
    relative_covariance : ndarray of shape (k, k)
        Covariance of ``relative`` (rank ``k - 1``).
    standard_errors : ndarray of shape (k,)
        Standard errors of ``relative``.
    ranking : tuple of str
        Names ordered best first by the estimates.
    win_probabilities : pandas.DataFrame of shape (k, k)
        ``P(R_i > R_j)`` under the normal approximation of ``R_hat_i - R_hat_j``
        (rows ``i``, columns ``j``; 0.5 on the diagonal).
    """

    names: tuple
    estimates: np.ndarray
    covariance: np.ndarray
    relative: np.ndarray
    relative_covariance: np.ndarray
    standard_errors: np.ndarray
    ranking: tuple
    win_probabilities: pd.DataFrame = field(repr=False)

    def confidence_intervals(self, confidence_level: float = 0.95, simultaneous=True) -> SimultaneousIntervals:
        """Intervals for every ``R_i - mean R`` (jointly valid by default; see
        :meth:`MultiComparisonResult.confidence_intervals`)."""
        return SimultaneousIntervals.build(self.names, self.relative, self.relative_covariance,
                                           confidence_level, simultaneous=simultaneous)

    def pairwise_intervals(self, confidence_level: float = 0.95, simultaneous=True) -> SimultaneousIntervals:
        """Intervals for all ``k(k-1)/2`` differences ``R_i - R_j`` (``i < j``), named ``"i - j"``;
        simultaneous over all pairs by default (a Tukey-type max-|t| interval)."""
        k = len(self.names)
        i, j = np.triu_indices(k, 1)
        A = np.zeros((i.size, k))
        A[np.arange(i.size), i] = 1.0
        A[np.arange(i.size), j] = -1.0
        labels = [f"{self.names[a]} - {self.names[b]}" for a, b in zip(i, j)]
        return SimultaneousIntervals.build(labels, A @ self.estimates, A @ self.covariance @ A.T,
                                           confidence_level, simultaneous=simultaneous)

    def kendall_tau(self, truth) -> float:
        """Kendall's tau-b between the estimated and a given true ordering.

        ``truth``: true mean metric (or any score, higher = better) per system,
        an array in ``names`` order or a mapping ``{name: value}``.
        """
        if isinstance(truth, dict):
            missing = [n for n in self.names if n not in truth]
            if missing:
                raise ValueError(f"`truth` has no value for system(s) {missing}.")
            truth = [truth[n] for n in self.names]
        t = np.asarray(truth, dtype=np.float64).reshape(-1)
        if t.size != len(self.names):
            raise ValueError(f"`truth` must have one value per system ({len(self.names)}); got {t.size}.")
        return kendall_tau(self.estimates, t)

    def summary(self, confidence_level: float = 0.95, simultaneous=True) -> pd.DataFrame:
        """Systems best first: estimate, relative difference, SE, interval, rank."""
        df = self.confidence_intervals(confidence_level, simultaneous).to_frame()
        df = df.rename(columns={"estimate": "relative"})
        df.insert(0, "estimate", self.estimates)
        df["rank"] = pd.Series({n: r + 1 for r, n in enumerate(self.ranking)})
        return df.loc[list(self.ranking)]


def _prob_positive(diff, se):
    diff = np.asarray(diff, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = stats.norm.cdf(diff / se)
    degenerate = ~(se > 0)
    out = np.where(degenerate, np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5)), out)
    return out


# --------------------------------------------------------------------------- estimation


def estimate_many_from_labels(pool, dsg: MultiDesign, plan, acquired: dict):
    """Estimator over a draw plan whose drawn queries are all in ``acquired``.

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    dsg : MultiDesign
        From :func:`design_many`.
    plan : DrawPlan
    acquired : dict
        ``{query index: grades of dsg.documents(query)}``.

    Returns
    -------
    MultiComparisonResult or SystemRankingResult
        According to ``dsg.target``.
    """
    values = np.stack(_query_values(dsg, acquired, int(pool.offsets[-1])), axis=1)
    x = plan.queries
    w = dsg.p[x] / dsg.q[x]
    names = dsg.names
    common = dict(metric=str(dsg.metric), method=dsg.method, n_draws=plan.n_draws,
                  n_queries=int(np.unique(x).size), cost_spent=plan.cost_spent, budget=plan.budget)
    cols = {f"value_{n}": values[:, i] for i, n in enumerate(names)}
    if dsg.target == "baseline":
        delta = values[:, :-1] - values[:, -1:]
        cols.update({f"delta_{n}": delta[:, j] for j, n in enumerate(names[:-1])})
        diff, cov, ess = joint_snis(delta[x], w)
        own, _, _ = joint_snis(values[x], w)
        warn_if_low_ess(ess, plan.n_draws, stacklevel=3)
        return MultiComparisonResult(
            names=names[:-1], baseline=names[-1], differences=_ro(diff),
            standard_errors=_ro(np.sqrt(np.diag(cov))), covariance=_ro(cov),
            estimates=_ro(own[:-1]), baseline_estimate=float(own[-1]),
            effective_sample_size=ess, trace=_trace(pool, dsg, plan, values=cols), **common)
    est, cov, ess = joint_snis(values[x], w)
    warn_if_low_ess(ess, plan.n_draws, stacklevel=3)
    s = est.size
    M = np.eye(s) - 1.0 / s
    rel_cov = M @ cov @ M
    rel_cov = (rel_cov + rel_cov.T) / 2
    rel = est - est.mean()
    diff = est[:, None] - est[None, :]
    var = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov
    win = _prob_positive(diff, np.sqrt(np.clip(var, 0.0, None)))
    np.fill_diagonal(win, 0.5)
    order = np.argsort(-est, kind="stable")
    return SystemRankingResult(
        names=names, estimates=_ro(est), covariance=_ro(cov), relative=_ro(rel),
        relative_covariance=_ro(rel_cov), standard_errors=_ro(np.sqrt(np.clip(np.diag(rel_cov), 0, None))),
        ranking=tuple(names[i] for i in order),
        win_probabilities=pd.DataFrame(win, index=pd.Index(names, name="system"), columns=list(names)),
        effective_sample_size=ess, trace=_trace(pool, dsg, plan, values=cols), **common)


# --------------------------------------------------------------------------- validation


def _names_iv(names, count: int, param: str, prefix: str) -> tuple:
    if names is None:
        return tuple(f"{prefix}_{i}" for i in range(count))
    if isinstance(names, str) or not hasattr(names, "__len__"):
        raise ValueError(f"`{param}` must be a sequence of {count} strings; got {names!r}.")
    names = tuple(names)
    if len(names) != count:
        raise ValueError(f"`{param}` must have one name per system ({count}); got {len(names)}.")
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"`{param}` must be non-empty strings; got {bad[0]!r}.")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"`{param}` must be unique; {dup[0]!r} appears more than once.")
    return names


def _scores_list_iv(scores_list, pool, param: str, minimum: int) -> list:
    if isinstance(scores_list, (Rankings, str)) or not hasattr(scores_list, "__len__"):
        raise ValueError(
            f"`{param}` must be a list of per-document score arrays (or Rankings), one per system; "
            f"got {type(scores_list).__name__}."
        )
    if isinstance(scores_list, np.ndarray) and scores_list.ndim == 1:
        raise ValueError(
            f"`{param}` must be a list of per-document score arrays, one per system; got a single "
            "1-d array (wrap it in a list)."
        )
    items = list(scores_list)
    if len(items) < minimum:
        raise ValueError(f"`{param}` must hold at least {minimum} system(s); got {len(items)}.")
    return [_rankings_for_pool(s, pool, f"{param}[{i}]") for i, s in enumerate(items)]


def _common_iv(budget, method):
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {list(METHODS)}, got {method!r}.")
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be a positive number, got {budget!r}.")


def _run_many(pool, rankings, probs, labeler, *, target, budget, metric, k, method, costs,
              query_weights, defensive, rng, names):
    dsg = design_many(pool, rankings, probs, target=target, metric=metric, k=k, method=method,
                      costs=costs, query_weights=query_weights, defensive=defensive, names=names)
    plan = draw_budgeted(dsg.q, dsg.costs.cost, budget, rng)
    acquired = label_plan(pool, dsg, plan, labeler)
    return estimate_many_from_labels(pool, dsg, plan, acquired)


# --------------------------------------------------------------------------- public API


def compare_many(pool, candidate_scores, baseline_scores, probs, labeler, *, budget, metric="err@10",
                 k=None, method="active", costs="auto", query_weights=None,
                 defensive=DEFAULT_DEFENSIVE, rng=None, names=None,
                 baseline_name="baseline") -> MultiComparisonResult:
    """Estimate how much each of several candidates beats a baseline, from one budget.

    Draws queries from ``q*(x) ∝ p(x) sqrt(sum_j E[(delta_j - Delta_j)^2 | x] / lambda(x))``
    (the distribution minimizing the sum of the ``m`` difference variances;
    ``delta_j = L_j - L_baseline``), judges the union of all rankings' top-k
    documents of each drawn query, and estimates every ``Delta_j`` with its
    joint covariance.  With one candidate this is exactly
    :func:`activerank.compare` (same draws, same numbers for the same ``rng``).

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    candidate_scores : list of array-like of shape (n_docs,) or Rankings
        One entry per candidate (at least one).
    baseline_scores : array-like of shape (n_docs,) or Rankings
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)``.
    labeler : callable
        ``labeler(query_id, doc_ids) -> grades``.
    budget : float
        Labeling budget in units of the pool's mean query cost, where a query's
        cost is that of the union of all ``m + 1`` rankings' top-k documents.
    metric, k, method, costs, query_weights, defensive, rng
        As in :func:`activerank.estimate`.
    names : sequence of str, optional
        Candidate names (default ``"candidate_0"``, ...).
    baseline_name : str, default "baseline"

    Returns
    -------
    MultiComparisonResult
        ``differences``, ``standard_errors``, ``covariance``,
        ``confidence_intervals(confidence_level, simultaneous=True)``,
        ``prob_better()``, ``summary()``, ``trace``.

    Examples
    --------
    >>> import activerank as ar
    >>> from activerank.multi import compare_many
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = compare_many(data, [data.X[:, 1], data.X[:, 2]], data.X[:, 0], probs,
    ...                    ar.KnownLabels.from_data(data), budget=15, metric="err@5", rng=0,
    ...                    names=["f1", "f2"])
    >>> res.names, res.covariance.shape
    (('f1', 'f2'), (2, 2))
    >>> ci = res.confidence_intervals()           # simultaneous 95% intervals
    >>> bool(ci.critical_value > 1.96)
    True
    """
    pool = _pool_iv(pool)
    _common_iv(budget, method)
    cands = _scores_list_iv(candidate_scores, pool, "candidate_scores", 1)
    base = _rankings_for_pool(baseline_scores, pool, "baseline_scores")
    cand_names = _names_iv(names, len(cands), "names", "candidate")
    if not isinstance(baseline_name, str) or not baseline_name:
        raise ValueError(f"`baseline_name` must be a non-empty string; got {baseline_name!r}.")
    if baseline_name in cand_names:
        raise ValueError(f"`baseline_name` {baseline_name!r} must differ from the candidate `names`.")
    return _run_many(pool, (*cands, base), probs, labeler, target="baseline", budget=budget,
                     metric=metric, k=k, method=method, costs=costs, query_weights=query_weights,
                     defensive=defensive, rng=rng, names=(*cand_names, baseline_name))


def rank_systems(pool, scores_list, probs, labeler, *, budget, metric="err@10", k=None,
                 method="active", costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE,
                 rng=None, names=None) -> SystemRankingResult:
    """Rank ``k`` systems by their mean metric from one labeling budget.

    Estimates each system's mean metric relative to the mean system,
    ``theta_i = R_i - mean_l R_l`` (Schnabel et al. 2016, Sec. 6), drawing
    queries from the ``q*`` that minimizes ``sum_i Var(theta_hat_i)`` --
    equivalently the sum of all pairwise-difference variances -- under the
    relevance model and per-query costs (union of all rankings' top-k).

    Parameters
    ----------
    pool : LetorData, Pool, or object with ``offsets`` and ``query_ids``
    scores_list : list of array-like of shape (n_docs,) or Rankings
        One entry per system (at least two).
    probs, labeler, budget, metric, k, method, costs, query_weights, defensive, rng
        As in :func:`compare_many`.
    names : sequence of str, optional
        System names (default ``"system_0"``, ...).

    Returns
    -------
    SystemRankingResult
        ``ranking`` (best first), ``estimates``, ``relative``,
        ``win_probabilities`` (``P(R_i > R_j)``),
        ``confidence_intervals()`` (simultaneous for ``theta``),
        ``pairwise_intervals()``, ``kendall_tau(truth)``, ``summary()``.

    Examples
    --------
    >>> import activerank as ar
    >>> from activerank.multi import rank_systems
    >>> data = ar.load_sample()
    >>> probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
    >>> res = rank_systems(data, [data.X[:, j] for j in range(3)], probs,
    ...                    ar.KnownLabels.from_data(data), budget=15, metric="err@5", rng=0)
    >>> len(res.ranking), res.win_probabilities.shape
    (3, (3, 3))
    >>> abs(float(res.relative.sum())) < 1e-12
    True
    """
    pool = _pool_iv(pool)
    _common_iv(budget, method)
    systems = _scores_list_iv(scores_list, pool, "scores_list", 2)
    names = _names_iv(names, len(systems), "names", "system")
    return _run_many(pool, tuple(systems), probs, labeler, target="mean", budget=budget,
                     metric=metric, k=k, method=method, costs=costs, query_weights=query_weights,
                     defensive=defensive, rng=rng, names=names)
