"""Small-sample standard errors and intervals that count distinct queries.

Budgeted runs draw queries with replacement and judge a query once: a repeat
is free, so a run keeps drawing repeats until the next *new* query would
exceed the budget.  The estimators weight a query by its multiplicity,

``R_hat = sum_c a_c / sum_c b_c``,  ``a_c = sum_{j in c} w_j v_j``,  ``b_c = sum_{j in c} w_j``

over the ``d`` distinct queries ``c`` (clusters of draws).  Repeats add no
information about the pool, but they are part of the with-replacement
design: the per-draw delta-method variance (``n/(n-1) sum_j w_j^2 (v_j -
R_hat)^2 / (sum w)^2``, :func:`activerank.inference.estimators.snis`) is the
estimator's variance (measured SE/SD 0.99 where queries repeat), while the
cluster variance, which treats each distinct query with its multiplicity as
one unit, over-states it there (SE/SD 1.32, coverage 0.98-1.00).  What
repeats do not add is *stability* of the variance estimate: it is a sum of
``d`` distinct terms weighted by their multiplicities ``k_c``.  Hence:

* ``ci="t_draws"`` (``"auto"``): the per-draw variance with Student-t
  quantiles whose degrees of freedom are Kish's effective number of distinct
  queries ``n^2 / sum_c k_c^2`` minus one (the Satterthwaite degrees of
  freedom of that weighted sum; :func:`kish_distinct`) -- equal to ``"t"``
  when no query repeats;
* ``ci="t"``: the **cluster (query-level) variance**
  ``SE^2 = d/(d-1) sum_c (a_c - R_hat b_c)^2 / (sum_c b_c)^2`` -- the
  sandwich variance with the distinct queries as units -- and ``d - 1``
  degrees of freedom (conservative where queries repeat);
* a **studentized bootstrap over distinct queries** (``ci="bootstrap"``):
  resample the ``d`` clusters (each with its multiplicity and weights),
  recompute ``R_hat*`` and its cluster SE, and use the quantiles of
  ``(R_hat* - R_hat) / SE*`` (:func:`bootstrap_pivots`): asymmetric, it
  corrects for skewness, but it sees only the sample;
* a **Fieller** interval for the ratio ``sum a / sum b`` (``ci="fieller"``),
  which also carries the noise of the denominator (the weights);
* ``ci="normal"``: the previous behaviour, per-draw SE and ``z`` (kept for
  comparison and for the anytime sequences, whose terms are draws).

**Model-moderated variance.**  On heavy-tailed pools (an index update where
most queries have a difference of exactly 0 and a few a large one) a small
sample often holds none of the rare large values: its spread is near zero
and no interval computed from the sample alone can cover (measured 0.58-0.68
at 5-10 queries, passive sampling).  The relevance model predicts the
design's variance (:func:`predicted_variance`: ``sum p^2/q E_theta[(L - R)^2 |
x]``, the quantity the sampling distribution ``q*`` is built from), and
``ci="t"`` pools it with the sample variance as ``prior_dof`` (default 2)
pseudo degrees of freedom, ``SE^2 = (2 SE_model^2 + (d-1) SE^2) / (d + 1)``,
keeping ``d - 1`` degrees of freedom for the quantile (``"t_draws"`` the same
with its own degrees of freedom and ``SE_model^2 = V / n``).  Its weight fades as
``2 / (d + 1)``; a model that over- or under-states the variance by a factor
2 moves the SE at ``d = 20`` by less than 5%.

The same kernel serves a single run (1-d inputs) and a batch of Monte-Carlo
repetitions on draw prefixes (2-d inputs plus ``stops``, as in
:mod:`activerank.design.draws`), so the coverage benchmark runs the
exact code a user runs.  Every estimator whose point estimate is a ratio of
cluster sums fits: a single ranker, a difference of two rankers (values =
per-query differences), each of ``k`` contrasts (:func:`contrast_intervals`),
and the cross-fitted model-assisted estimator
(:mod:`activerank.inference.crossfit`, which passes its adjusted cluster
numerators).

Which interval by default (``ci="auto"``): the choice was made by measured
coverage on MQ2008 and OHSUMED (``benchmarks/interval_coverage.py``, results in
``benchmarks/results/coverage/``): see :data:`AUTO_RULE`.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from .caveats import FewLabelsWarning

__all__ = [
    "AUTO_RULE",
    "CI_KINDS",
    "FewDistinctQueriesWarning",
    "TooFewQueriesError",
    "IntervalEstimate",
    "BatchIntervals",
    "BootstrapPivots",
    "ClusterSums",
    "ContrastIntervals",
    "PredictedVariance",
    "predicted_variance",
    "bootstrap_pivots",
    "cluster_slots",
    "kish_distinct",
    "cluster_sums",
    "resolve_ci",
    "ratio_intervals",
    "snis_interval",
    "snis_intervals_prefix",
    "contrast_intervals",
    "critical_value",
]

CI_KINDS = ("auto", "t", "t_draws", "bootstrap", "normal", "fieller", "t_draws_distinct", "bootstrap_prior", "bca")
#: kinds whose standard error pools the model's predicted variance (``prior``)
MODERATED = ("t", "t_draws", "t_draws_distinct", "bootstrap_prior")
#: kinds that only the coverage benchmark uses (measured alternatives, docs/intervals.md)
MEASURED_ALTERNATIVES = ("t_draws_distinct", "bootstrap_prior", "bca")
#: ``ci="auto"``: Student-t on the per-draw SE (moderated by the model's
#: predicted variance ``V / n`` when ``prior`` is given) with Kish's effective
#: number of distinct queries ``n^2 / sum_c k_c^2`` minus one as degrees of
#: freedom, at every ``d``.  Without repeats it *is* ``"t"`` (cluster SE,
#: ``d - 1``); where ``q*`` makes queries repeat the cluster SE over-states the
#: with-replacement variance (SE/SD 1.3, coverage 0.98-1.00) and ``"t_draws"``
#: is nominal.  Chosen by measured coverage (docs/intervals.md): in
#: [0.93, 0.97] on 89 of 140 cells at 10-20 distinct queries (``"t"``: 73) and
#: 69 of 70 at 50 (``"t"``: 30); the bootstrap under-covers badly on
#: heavy-tailed pools below 50 queries, Fieller is ``"t"`` without the prior.
AUTO_RULE = "t_draws"
#: Below this many distinct queries a warning says the coverage is not
#: reliable (measured >= 0.93 at about 5 queries with the model prior).
MIN_RELIABLE_DISTINCT = 5
#: The same without the model prior (measured down to 0.58 at 5 and 0.68 at
#: 10 queries on heavy-tailed pools).
MIN_RELIABLE_DISTINCT_NO_PRIOR = 20
#: Weight of the model's predicted variance, in sample degrees of freedom.
DEFAULT_PRIOR_DOF = 2.0
DEFAULT_N_BOOT = 999


class FewDistinctQueriesWarning(FewLabelsWarning):
    """Few distinct queries: the interval's coverage is not reliable (a :class:`FewLabelsWarning`, so one
    filter silences both)."""


class TooFewQueriesError(ValueError):
    """Fewer than two distinct queries: no standard error can be estimated."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class IntervalEstimate:
    """Point estimate, standard error and interval of one run.

    Attributes
    ----------
    estimate : float
    standard_error : float
        Cluster (distinct-query) standard error; the per-draw one for ``ci="normal"``.
    low, high : float
        Interval at ``confidence_level``.
    confidence_level : float
    ci : str
        The interval actually used (``"auto"`` resolved).
    dof : float
        Degrees of freedom of the ``t`` quantile (``inf`` for ``"normal"``).
    n_draws, n_distinct : int
    """

    estimate: float
    standard_error: float
    low: float
    high: float
    confidence_level: float
    ci: str
    dof: float
    n_draws: int
    n_distinct: int


@dataclass(frozen=True, eq=False)
class BatchIntervals:
    """Estimates and intervals of many runs (arrays of one shape, e.g. ``(n_budgets, n_reps)``).

    ``standard_error`` is NaN only where a run has fewer than two distinct
    queries (``n_distinct < 2``); ``low``/``high`` are then ``-inf``/``inf``.
    """

    estimate: np.ndarray
    standard_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    dof: np.ndarray
    n_draws: np.ndarray
    n_distinct: np.ndarray
    ci: str
    confidence_level: float

    def covers(self, truth) -> np.ndarray:
        """Whether each interval contains ``truth`` (broadcast)."""
        return (self.low <= truth) & (truth <= self.high)


# --------------------------------------------------------------------------- validation


def _level_iv(confidence_level) -> float:
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, numbers.Real) \
            or not 0 < confidence_level < 1:
        raise ValueError(f"`confidence_level` must lie in (0, 1), got {confidence_level!r}.")
    return float(confidence_level)


def _ci_iv(ci) -> str:
    if ci not in CI_KINDS:
        raise ValueError(f"`ci` must be one of {list(CI_KINDS)}; got {ci!r}.")
    return ci


def _n_boot_iv(n_boot) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (numbers.Integral, np.integer)) or n_boot < 99:
        raise ValueError(f"`n_boot` must be an integer >= 99; got {n_boot!r}.")
    return int(n_boot)


def resolve_ci(ci: str) -> str:
    """The interval ``ci="auto"`` stands for (:data:`AUTO_RULE`); other kinds unchanged.

    Examples
    --------
    >>> resolve_ci("auto"), resolve_ci("bootstrap")
    ('t_draws', 'bootstrap')
    """
    _ci_iv(ci)
    return AUTO_RULE if ci == "auto" else ci


def critical_value(confidence_level, dof):
    """Two-sided Student-t quantile ``t_{dof, 1 - alpha/2}`` (normal for ``dof = inf``), array-wise.

    Examples
    --------
    >>> round(float(critical_value(0.95, 4)), 4), round(float(critical_value(0.95, np.inf)), 4)
    (2.7764, 1.96)
    """
    from scipy import stats

    level = _level_iv(confidence_level)
    dof = np.asarray(dof, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        q = stats.t.ppf(0.5 + level / 2, np.where(dof >= 1, dof, np.nan))
    return np.where(np.isinf(dof), stats.norm.ppf(0.5 + level / 2), q)


# --------------------------------------------------------------------------- clusters


def _first_in_rows(draws: np.ndarray) -> np.ndarray:
    """True at the first occurrence of each value within its row."""
    order = np.argsort(draws, axis=1, kind="stable")
    s = np.take_along_axis(draws, order, axis=1)
    first_sorted = np.ones(s.shape, dtype=bool)
    first_sorted[:, 1:] = s[:, 1:] != s[:, :-1]
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)
    return first


def cluster_slots(queries) -> np.ndarray:
    """Slot of every draw's query in order of first appearance within its row.

    Parameters
    ----------
    queries : array-like of shape (n,) or (n_reps, n_cols), int
        Query (pool index or any integer id) of every draw.

    Returns
    -------
    slots : ndarray of the same shape, int64
        ``0`` for the first distinct query of the row, ``1`` for the second...
        so a draw prefix of length ``t`` holds exactly the slots
        ``< number of distinct queries among its first t draws``.

    Examples
    --------
    >>> cluster_slots([7, 3, 7, 9, 3]).tolist()
    [0, 1, 0, 2, 1]
    """
    x = np.asarray(queries)
    one = x.ndim == 1
    x = np.atleast_2d(x)
    if x.ndim != 2:
        raise ValueError(f"`queries` must be 1-d or 2-d; got shape {np.shape(queries)}.")
    if x.shape[1] == 0:
        return np.zeros(x.shape[1] if one else x.shape, dtype=np.int64)
    first = _first_in_rows(x)
    rank_first = np.cumsum(first, axis=1) - 1  # slot of the draws that open a cluster
    order = np.argsort(x, axis=1, kind="stable")
    s_first = np.take_along_axis(first, order, axis=1)
    s_rank = np.take_along_axis(rank_first, order, axis=1)
    # within the sorted row, carry the opening draw's slot forward over its repeats
    idx = np.where(s_first, np.arange(x.shape[1])[None, :], 0)
    np.maximum.accumulate(idx, axis=1, out=idx)
    s_slot = np.take_along_axis(s_rank, idx, axis=1)
    slots = np.empty_like(s_slot)
    np.put_along_axis(slots, order, s_slot, axis=1)
    return slots[0] if one else slots


@dataclass(frozen=True, eq=False)
class ClusterSums:
    """Per-distinct-query sums of a batch on draw prefixes.

    ``sums[name]`` has shape ``(n_budgets, n_reps, n_slots)``: the sum of the
    named per-draw array over the draws of each distinct query among the
    first ``stops[b, r]`` draws (0 for slots beyond ``n_distinct``).
    """

    sums: dict
    n_distinct: np.ndarray  # (n_budgets, n_reps)
    n_draws: np.ndarray  # (n_budgets, n_reps)

    @property
    def mask(self) -> np.ndarray:
        k = next(iter(self.sums.values())).shape[-1]
        return np.arange(k)[None, None, :] < self.n_distinct[..., None]


def cluster_sums(arrays: dict, slots, stops) -> ClusterSums:
    """Sum per-draw arrays over the draws of each distinct query, on every prefix.

    Parameters
    ----------
    arrays : dict of str to ndarray (n_reps, n_cols)
        Per-draw quantities (e.g. ``w * v`` and ``w``).
    slots : ndarray (n_reps, n_cols), int
        :func:`cluster_slots` of the drawn queries.
    stops : ndarray (n_budgets, n_reps) or (n_reps,)
        Prefix lengths (draws used by every run).

    Returns
    -------
    ClusterSums
    """
    slots = np.asarray(slots, dtype=np.int64)
    n_reps, n_cols = slots.shape
    st = np.atleast_2d(np.asarray(stops)).astype(np.int64)
    if st.shape[1] != n_reps:
        raise ValueError(f"`stops` must have one column per repetition ({n_reps}); got shape {st.shape}.")
    if st.size and (st.min() < 0 or st.max() > n_cols):
        raise ValueError(f"`stops` must lie in 0..{n_cols}; got range {st.min()}..{st.max()}.")
    # slot counts on every prefix: new clusters open in order, so d = 1 + max slot seen so far
    run_max = np.maximum.accumulate(slots, axis=1) if n_cols else slots
    idx = np.maximum(st - 1, 0)
    rows = np.arange(n_reps)[None, :]
    n_distinct = np.where(st > 0, run_max[rows, idx] + 1, 0) if n_cols else np.zeros_like(st)
    k = int(n_distinct.max()) if n_distinct.size else 0
    k = max(k, 1)
    col = np.arange(n_cols)[None, :]
    keys = (np.arange(n_reps)[:, None] * k + np.minimum(slots, k - 1))
    out = {name: np.zeros((st.shape[0], n_reps, k)) for name in arrays}
    for b in range(st.shape[0]):  # loop over budgets only
        use = col < st[b][:, None]
        kb = keys[use]
        for name, arr in arrays.items():
            out[name][b] = np.bincount(kb, weights=np.asarray(arr, dtype=np.float64)[use],
                                       minlength=n_reps * k).reshape(n_reps, k)
    return ClusterSums(out, n_distinct, st)


# --------------------------------------------------------------------------- ratio intervals


def _ratio_moments(a, b, mask):
    """Estimate, cluster SE and d of ``sum a / sum b`` over masked clusters (last axis)."""
    a = np.where(mask, a, 0.0)
    b = np.where(mask, b, 0.0)
    d = mask.sum(axis=-1)
    sa, sb = a.sum(axis=-1), b.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = sa / sb
        e = np.where(mask, a - est[..., None] * b, 0.0)
        se = np.sqrt(d / (d - 1.0) * np.sum(e * e, axis=-1)) / np.abs(sb)
    est = np.where(d > 0, est, np.nan)
    se = np.where(d > 1, se, np.nan)
    return est, se, d


def _fieller(a, b, mask, tq):
    """Fieller interval for ``E a / E b`` from cluster totals with quantile ``tq``."""
    a = np.where(mask, a, 0.0)
    b = np.where(mask, b, 0.0)
    d = mask.sum(axis=-1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = a.sum(-1) / d, b.sum(-1) / d
        da, db = np.where(mask, a - ma[..., None], 0.0), np.where(mask, b - mb[..., None], 0.0)
        # variances of the cluster means
        saa = (da * da).sum(-1) / (d - 1) / d
        sab = (da * db).sum(-1) / (d - 1) / d
        sbb = (db * db).sum(-1) / (d - 1) / d
        t2 = tq * tq
        qa = mb * mb - t2 * sbb
        qb = ma * mb - t2 * sab
        qc = ma * ma - t2 * saa
        disc = qb * qb - qa * qc
        root = np.sqrt(np.maximum(disc, 0.0))
        lo, hi = (qb - root) / qa, (qb + root) / qa
    bounded = (qa > 0) & (disc >= 0)
    return np.where(bounded, lo, -np.inf), np.where(bounded, hi, np.inf)


def _resamples(a2, b2, k2, d, rows, n_boot, rng):
    """Cluster resamples of ``rows``: sums ``A, B, K`` of shape (len(rows), n_boot, d_max) and their mask.

    Each resample draws ``d`` of the row's ``d`` distinct queries with replacement (a query carries its
    multiplicity and weights along)."""
    dm = int(d[rows].max())
    u = rng.random((rows.size, n_boot, dm))
    dr = d[rows][:, None, None]
    pick = np.minimum((u * dr).astype(np.int64), dr - 1)
    use = np.arange(dm)[None, None, :] < dr
    take = lambda z: np.where(use, np.take_along_axis(z[rows][:, None, :dm], pick, axis=2), 0.0)  # noqa: E731
    return take(a2), take(b2), take(k2), use


def _chunks(d, n_boot, ok, chunk_elems=4_000_000):
    per = max(1, int(chunk_elems // max(1, n_boot * max(int(d.max(initial=1)), 1))))
    return [ok[s:s + per] for s in range(0, ok.size, per)]


def bootstrap_pivots(a, b, mask, est, se, *, n_boot, rng, counts=None, prior_var=None,
                     prior_dof=DEFAULT_PRIOR_DOF) -> np.ndarray:
    """Studentized cluster-bootstrap replicates ``(R* - R_hat) / SE*`` of ``sum a / sum b``, sorted.

    Parameters
    ----------
    a, b, mask : ndarray of shape (..., n_slots)
        Cluster sums and which slots hold a distinct query (:func:`ratio_intervals`).
    est, se : ndarray of shape (...)
        The sample's estimate and standard error.
    n_boot : int
    rng : numpy.random.Generator
    counts : ndarray of shape (..., n_slots), optional
        Draws of every distinct query; with ``prior_var`` the replicate's SE is
        moderated by the model's predicted variance exactly as the sample's
        (``prior_var * sum k*^2 / n*^2`` with ``prior_dof`` pseudo degrees of
        freedom), so a resample whose queries all agree keeps a positive SE.
    prior_var : ndarray of shape (...), optional
    prior_dof : float

    Returns
    -------
    ndarray of shape (..., n_boot)
        Sorted along the last axis; NaN rows where ``d < 2`` or ``se`` is not finite.
        Without a prior a replicate with ``SE* = 0`` gives ``+-inf`` (or 0 if ``R* = R_hat``).
    """
    shape = est.shape
    n_slots = a.shape[-1]
    a2 = np.where(mask, a, 0.0).reshape(-1, n_slots)
    b2 = np.where(mask, b, 0.0).reshape(-1, n_slots)
    k2 = (np.ones_like(a2) if counts is None else np.where(mask, counts, 0.0).reshape(-1, n_slots))
    d = mask.sum(axis=-1).reshape(-1)
    e_flat = est.reshape(-1)
    pv = None if prior_var is None else np.broadcast_to(np.asarray(prior_var, dtype=np.float64), shape).reshape(-1)
    out = np.full((d.size, n_boot), np.nan)
    ok = np.flatnonzero((d >= 2) & np.isfinite(se.reshape(-1)))
    for r in _chunks(d, n_boot, ok):
        A, B, K, use = _resamples(a2, b2, k2, d, r, n_boot, rng)
        dd = d[r][:, None].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            sb = B.sum(-1)
            rs = A.sum(-1) / sb
            e = np.where(use, A - rs[..., None] * B, 0.0)
            ses = np.sqrt(dd / (dd - 1.0) * (e * e).sum(-1)) / np.abs(sb)
            if pv is not None and prior_dof > 0:
                n_star = K.sum(-1)
                prior_se2 = pv[r][:, None] * (K * K).sum(-1) / n_star**2
                ses = np.sqrt((prior_dof * prior_se2 + (dd - 1.0) * ses**2) / (prior_dof + dd - 1.0))
            gap = rs - e_flat[r][:, None]
            # a resample whose clusters all agree has SE* = 0: |t| is unbounded there
            t = np.where(ses > 0, gap / ses, np.where(gap == 0, 0.0, np.copysign(np.inf, gap)))
        out[r] = np.sort(t, axis=1)
    return out.reshape(shape + (n_boot,))


def pivot_quantiles(pivots, confidence_level):
    """Outer order statistics ``(t_lo, t_hi)`` of sorted pivots at a two-sided level (no interpolation
    towards an infinite neighbour): the ``(B + 1) alpha / 2``-th smallest and largest for ``B = 999``."""
    alpha = 1.0 - _level_iv(confidence_level)
    with np.errstate(invalid="ignore"):
        lo = np.quantile(pivots, alpha / 2, axis=-1, method="lower")
        hi = np.quantile(pivots, 1 - alpha / 2, axis=-1, method="higher")
    return lo, hi


@dataclass(frozen=True, eq=False)
class BootstrapPivots:
    """The studentized cluster-bootstrap distribution of one run, for intervals at any level.

    Attributes
    ----------
    pivots : ndarray of shape (n_boot,)
        Sorted replicates ``(R* - R_hat) / SE*`` (:func:`bootstrap_pivots`).
        They do not depend on the estimate's location or scale, so an exactly
        known stratum (``R = exact + share * R_sampled``) keeps them.

    Examples
    --------
    >>> bp = BootstrapPivots(np.linspace(-3.0, 2.0, 1001))
    >>> [round(float(t), 3) for t in bp.quantiles(0.95)]
    [-2.875, 1.875]
    >>> bp.interval(1.0, 0.1, 0.95)
    (0.8125, 1.2875)
    """

    pivots: np.ndarray

    def __post_init__(self):
        p = np.sort(np.asarray(self.pivots, dtype=np.float64).reshape(-1))
        p.setflags(write=False)
        object.__setattr__(self, "pivots", p)

    @property
    def n_boot(self) -> int:
        return int(self.pivots.size)

    def quantiles(self, confidence_level) -> tuple:
        """Outer order statistics ``(t_lo, t_hi)`` at a two-sided ``confidence_level``."""
        lo, hi = pivot_quantiles(self.pivots, confidence_level)
        return float(lo), float(hi)

    def interval(self, estimate: float, standard_error: float, confidence_level) -> tuple:
        """``(estimate - t_hi SE, estimate - t_lo SE)``; a point when ``SE = 0``."""
        if standard_error == 0:
            return float(estimate), float(estimate)
        t_lo, t_hi = self.quantiles(confidence_level)
        return float(estimate - t_hi * standard_error), float(estimate - t_lo * standard_error)

    def prob_positive(self, estimate: float, standard_error: float) -> float:
        """``P(theta > 0)`` under the bootstrap-t confidence distribution: the share of pivots below
        ``estimate / SE`` (ties count half)."""
        if not standard_error > 0:
            return float(estimate > 0) if estimate != 0 else 0.5
        z = estimate / standard_error
        below = np.searchsorted(self.pivots, z, side="left")
        upto = np.searchsorted(self.pivots, z, side="right")
        return float((below + upto) / 2 / self.pivots.size)


def _bootstrap_t(a, b, mask, est, se, level, n_boot, rng, counts=None, prior_var=None,
                 prior_dof=DEFAULT_PRIOR_DOF):
    """Studentized cluster-bootstrap interval ``[R - t_hi SE, R - t_lo SE]``; ``se`` the (moderated) SE."""
    piv = bootstrap_pivots(a, b, mask, est, se, n_boot=n_boot, rng=rng, counts=counts, prior_var=prior_var,
                           prior_dof=prior_dof)
    t_lo, t_hi = pivot_quantiles(piv, level)
    flat = se == 0  # every cluster agrees (and no prior): a point, as for the t interval
    with np.errstate(invalid="ignore"):
        lo = np.where(flat, est, est - t_hi * se)
        hi = np.where(flat, est, est - t_lo * se)
    return lo, hi


def _bca(a, b, mask, est, level, n_boot, rng):
    """BCa interval over clusters: percentile of ``R*`` with bias correction and jackknife acceleration."""
    from scipy.special import ndtr, ndtri

    shape = est.shape
    n_slots = a.shape[-1]
    a2 = np.where(mask, a, 0.0).reshape(-1, n_slots)
    b2 = np.where(mask, b, 0.0).reshape(-1, n_slots)
    m2 = mask.reshape(-1, n_slots)
    d = m2.sum(-1)
    e_flat = est.reshape(-1)
    lo = np.full(d.size, -np.inf)
    hi = np.full(d.size, np.inf)
    ok = np.flatnonzero(d >= 2)
    alpha = 1.0 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        # jackknife over distinct queries: acceleration
        jk = (a2.sum(-1, keepdims=True) - a2) / (b2.sum(-1, keepdims=True) - b2)
        jk = np.where(m2, jk, np.nan)
        dev = np.nanmean(jk, axis=-1, keepdims=True) - jk
        num = np.nansum(dev**3, axis=-1)
        den = 6.0 * np.nansum(dev**2, axis=-1) ** 1.5
        acc = np.where(den > 0, num / den, 0.0)
    for r in _chunks(d, n_boot, ok):
        A, B, _, _ = _resamples(a2, b2, np.ones_like(a2), d, r, n_boot, rng)
        with np.errstate(invalid="ignore", divide="ignore"):
            rs = np.sort(A.sum(-1) / B.sum(-1), axis=1)
        below = (rs < e_flat[r][:, None]).mean(1) + 0.5 * (rs == e_flat[r][:, None]).mean(1)
        z0 = ndtri(np.clip(below, 0.5 / n_boot, 1 - 0.5 / n_boot))
        zs = ndtri(np.array([alpha / 2, 1 - alpha / 2]))[None, :]
        ar = acc[r][:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            adj = ndtr(z0[:, None] + (z0[:, None] + zs) / (1.0 - ar * (z0[:, None] + zs)))
        # outer order statistics, as for the studentized bootstrap
        i_lo = np.clip(np.floor(adj[:, 0] * (n_boot - 1)).astype(np.int64), 0, n_boot - 1)
        i_hi = np.clip(np.ceil(adj[:, 1] * (n_boot - 1)).astype(np.int64), 0, n_boot - 1)
        rows = np.arange(r.size)
        lo[r], hi[r] = rs[rows, i_lo], rs[rows, i_hi]
    return lo.reshape(shape), hi.reshape(shape)


def _moderated_se(se, dof, prior_se2, prior_dof):
    """Pool the sample variance (``dof`` degrees of freedom) with a model-predicted one (``prior_dof``)."""
    dd = np.maximum(np.asarray(dof, dtype=np.float64), 0.0)
    s2 = np.where(np.isfinite(se), se, 0.0) ** 2
    out = np.sqrt((prior_dof * np.asarray(prior_se2, dtype=np.float64) + dd * s2) / (prior_dof + dd))
    return np.where(np.isfinite(se), out, np.nan)


def kish_distinct(counts, mask):
    """Kish's effective number of distinct queries ``n^2 / sum_c k_c^2`` (``d`` when nothing repeats).

    The per-draw variance ``sum_c k_c w_c^2 e_c^2`` is a sum over the ``d``
    distinct queries weighted by their multiplicities ``k_c``; its
    Satterthwaite degrees of freedom (for terms of equal variance) are
    ``(sum k)^2 / sum k^2``.

    Examples
    --------
    >>> float(kish_distinct(np.array([1.0, 1, 1, 1]), np.ones(4, bool)))
    4.0
    >>> float(kish_distinct(np.array([3.0, 1]), np.ones(2, bool)))
    1.6
    """
    k = np.where(mask, counts, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return k.sum(-1) ** 2 / (k * k).sum(-1)


def _kish_dof(n_eff, d):
    """``n_eff - 1`` clipped to ``[1, d - 1]`` (a query drawn 10 times and one drawn once is not 0.2 dof)."""
    d = np.asarray(d, dtype=np.float64)
    return np.clip(np.asarray(n_eff, dtype=np.float64) - 1.0, np.minimum(1.0, d - 1.0), d - 1.0)


def ratio_intervals(a, b, mask, *, confidence_level=0.95, ci="auto", dof_offset=1, prior_se2=None,
                    prior_dof=DEFAULT_PRIOR_DOF, n_boot=DEFAULT_N_BOOT, rng=None, normal_se=None,
                    n_draws=None, counts=None, prior_var=None, draw_se=None) -> BatchIntervals:
    """Intervals for ratio estimators ``sum_c a_c / sum_c b_c`` given cluster sums.

    Parameters
    ----------
    a, b : ndarray of shape (..., n_slots)
        Cluster numerators and denominators (e.g. ``sum w v`` and ``sum w``).
    mask : ndarray of bool, same shape
        Which slots hold a distinct query.
    confidence_level : float
    ci : {"auto", "t", "t_draws", "bootstrap", "normal", "fieller", "t_draws_distinct", "bootstrap_prior", "bca"}
        ``"t"``: cluster SE, ``d - 1`` degrees of freedom; ``"t_draws"``: the
        per-draw variance (``draw_se``, moderated with ``prior_var / n``) with
        Kish's ``n^2 / sum k^2 - 1`` degrees of freedom (:func:`kish_distinct`);
        ``"bootstrap"``: studentized cluster bootstrap of the sample alone
        (the prior is not used); measured alternatives:
        ``"t_draws_distinct"`` (per-draw variance, ``d - 1`` degrees of
        freedom), ``"bootstrap_prior"`` (studentized with the moderated SE),
        ``"bca"`` (BCa cluster bootstrap).
    dof_offset : int, default 1
        Degrees of freedom ``d - dof_offset`` for ``"t"`` and ``"fieller"``.
    prior_se2 : ndarray, optional
        Model-predicted squared standard error (shape of the estimates).  For
        ``ci="t"`` the reported SE is the moderated
        ``sqrt((prior_dof * prior_se2 + (d - 1) SE^2) / (prior_dof + d - 1))``;
        the degrees of freedom stay ``d - 1``.  Ignored when ``prior_var`` is given.
    prior_dof : float, default 2
        Weight of the prior in sample degrees of freedom.
    n_boot : int
    rng : None, int or numpy.random.Generator
        Only the bootstraps use it.
    normal_se : ndarray, optional
        Per-draw standard errors for ``ci="normal"`` (default: the cluster SE).
    n_draws : ndarray, optional
        Draws of every run (shape of the estimates); default the number of clusters.
    counts : ndarray of shape (..., n_slots), optional
        Draws of every distinct query (default 1).
    prior_var : ndarray, optional
        The model's predicted per-draw variance ``V`` (shape of the estimates,
        :meth:`PredictedVariance.total`): ``prior_se2 = V sum k^2 / n^2`` for the
        cluster intervals, ``V / n`` for the per-draw ones.
    draw_se : ndarray, optional
        Per-draw standard errors for ``"t_draws"`` / ``"t_draws_distinct"`` (default ``normal_se``).

    Returns
    -------
    BatchIntervals

    Examples
    --------
    >>> a = np.array([[1.0, 0.0, 2.0, 1.0]]); b = np.ones((1, 4)); m = np.ones((1, 4), bool)
    >>> r = ratio_intervals(a, b, m, ci="t")
    >>> float(r.estimate[0]), round(float(r.standard_error[0]), 4), round(float(r.high[0]), 4)
    (1.0, 0.4082, 2.2992)
    """
    level = _level_iv(confidence_level)
    kind = resolve_ci(ci)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    k = np.ones_like(a) if counts is None else np.asarray(counts, dtype=np.float64)
    est, se, d = _ratio_moments(a, b, mask)
    n = np.where(mask, k, 0.0).sum(-1) if n_draws is None else np.asarray(n_draws, dtype=np.float64)
    per_draw = kind in ("t_draws", "t_draws_distinct")
    if prior_var is not None:
        pv = np.asarray(prior_var, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            prior_se2 = pv / n if per_draw else pv * (np.where(mask, k, 0.0) ** 2).sum(-1) / n**2
    if kind == "normal":
        if normal_se is not None:
            se = np.where(d > 1, np.asarray(normal_se, dtype=np.float64), np.nan)
        dof = np.full(est.shape, np.inf)
    elif per_draw:
        dse = normal_se if draw_se is None else draw_se
        if dse is not None:
            se = np.where(d > 1, np.asarray(dse, dtype=np.float64), np.nan)
        dof = (d - 1.0) if kind == "t_draws_distinct" else _kish_dof(kish_distinct(k, mask), d)
    else:
        dof = (d - dof_offset).astype(np.float64)
    moderate = prior_se2 is not None and prior_dof > 0 and kind in ("t", "t_draws", "t_draws_distinct",
                                                                    "bootstrap_prior")
    if moderate:
        se = _moderated_se(se, dof, prior_se2, prior_dof)
    q = critical_value(level, np.where(dof >= 1, dof, np.nan))
    if kind in ("t", "normal", "t_draws", "t_draws_distinct"):
        lo, hi = est - q * se, est + q * se
    elif kind == "fieller":
        lo, hi = _fieller(a, b, mask, q)
    elif kind == "bca":
        lo, hi = _bca(a, b, mask, est, level, _n_boot_iv(n_boot), np.random.default_rng(rng))
    else:  # "bootstrap" from the sample alone, or "bootstrap_prior" studentized with the moderated SE
        pv_boot = None
        if moderate:
            pv_boot = prior_var if prior_var is not None else prior_se2 * n**2 / (np.where(mask, k, 0.0) ** 2).sum(-1)
        lo, hi = _bootstrap_t(a, b, mask, est, se, level, _n_boot_iv(n_boot), np.random.default_rng(rng),
                              counts=k, prior_var=pv_boot, prior_dof=prior_dof)
    bad = ~(d > 1) | ~np.isfinite(se)
    lo = np.where(bad, -np.inf, lo)
    hi = np.where(bad, np.inf, hi)
    nd = d if n_draws is None else np.asarray(n_draws)
    return BatchIntervals(est, se, lo, hi, np.where(dof >= 1, dof, np.nan), nd, d, kind, level)


# --------------------------------------------------------------------------- model prior


@dataclass(frozen=True)
class PredictedVariance:
    """The relevance model's prediction of one draw's variance, in two parts.

    With ``m(x) = E_theta[L | x]``, ``s2(x) = Var_theta[L | x]``, ``M = sum p m``
    and weights ``w = p / q``, the importance-sampling term of a draw after a
    control variate with coefficient ``beta`` has predicted variance

    ``V(beta) = within + (1 - beta)^2 * between``,
    ``within = sum_x p^2/q s2(x)``,  ``between = sum_x p^2/q (m(x) - M)^2``

    (``beta = 0``: plain self-normalized weighting).  ``V / n_eff`` is the
    model's squared standard error, the prior the ``t`` interval pools with
    the sample variance (:func:`ratio_intervals`).
    """

    within: float
    between: float

    def total(self, coefficient=0.0):
        return self.within + (1.0 - np.asarray(coefficient, dtype=np.float64)) ** 2 * self.between


def predicted_variance(p, q, mean, variance) -> PredictedVariance:
    """:class:`PredictedVariance` of a design from the model's per-query moments.

    Parameters
    ----------
    p, q : array-like of shape (n_queries,)
        Target and sampling distributions.
    mean, variance : array-like of shape (n_queries,)
        ``E_theta[L | x]`` and ``Var_theta[L | x]`` (of the difference for a comparison).

    Examples
    --------
    >>> pv = predicted_variance([0.5, 0.5], [0.5, 0.5], [0.0, 1.0], [0.1, 0.1])
    >>> pv.within, pv.between, float(pv.total(1.0))
    (0.1, 0.25, 0.1)
    """
    p, q, mean, variance = (np.asarray(x, dtype=np.float64).reshape(-1) for x in (p, q, mean, variance))
    if not (p.shape == q.shape == mean.shape == variance.shape):
        raise ValueError(f"`p`, `q`, `mean` and `variance` must have one length; got {p.size}, {q.size}, "
                         f"{mean.size} and {variance.size}.")
    ok = (p > 0) & (q > 0)
    if np.any((p > 0) & ~(q > 0)):
        raise ValueError("`q` must be positive wherever `p` is.")
    r = np.where(ok, p * p / np.where(ok, q, 1.0), 0.0)
    M = float(p @ mean)
    return PredictedVariance(float(r @ np.maximum(variance, 0.0)), float(r @ (mean - M) ** 2))


# --------------------------------------------------------------------------- SNIS


def _per_draw_se(cs: "ClusterSums", d_shift: np.ndarray) -> np.ndarray:
    """Per-draw delta-method SE of SNIS (the previous ``snis`` formula) from cluster sums."""
    n = cs.n_draws.astype(np.float64)
    S = {k: v.sum(-1) for k, v in cs.sums.items()}
    with np.errstate(invalid="ignore", divide="ignore"):
        r = S["a"] / S["b"]
        ss = np.maximum(S["w2vv"] - 2 * r * S["w2v"] + r * r * S["w2"], 0.0)
        se = np.sqrt(n / (n - 1.0) * ss) / S["b"]
    return np.where(n > 1, se, np.nan)


def snis_intervals_prefix(values, weights, queries, stops, *, confidence_level=0.95, ci="auto", prior=None,
                          prior_dof=DEFAULT_PRIOR_DOF, n_boot=DEFAULT_N_BOOT, rng=None,
                          slots=None) -> BatchIntervals:
    """Self-normalized IS estimates and small-sample intervals of many runs on draw prefixes.

    Parameters
    ----------
    values, weights : ndarray of shape (n_reps, n_cols)
        Value (or difference) and importance weight ``p/q`` of every draw.
    queries : ndarray of shape (n_reps, n_cols), int
        Drawn query of every draw (defines the distinct-query clusters).
    stops : ndarray of shape (n_budgets, n_reps) or (n_reps,)
        Prefix lengths.
    confidence_level, ci, prior_dof, n_boot, rng
        See :func:`ratio_intervals`.
    prior : PredictedVariance, optional
        The model's predicted variance of the design (:func:`predicted_variance`);
        ``ci="t"`` pools it with the sample variance.
    slots : ndarray, optional
        Precomputed :func:`cluster_slots` of ``queries``.

    Returns
    -------
    BatchIntervals
        Arrays of the shape of ``stops``.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0, 1.0, 0.0, 0.0]]); q = np.array([[0, 1, 0, 2, 3]])
    >>> r = snis_intervals_prefix(v, np.ones_like(v), q, np.array([[5]]), ci="t")
    >>> r.n_distinct.tolist(), round(float(r.estimate[0, 0]), 3), round(float(r.standard_error[0, 0]), 4)
    ([[4]], 0.4, 0.32)
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 2 or w.shape != v.shape or np.shape(queries) != v.shape:
        raise ValueError("`values`, `weights` and `queries` must be 2-d arrays of one shape (n_reps, n_cols); "
                         f"got {v.shape}, {w.shape} and {np.shape(queries)}.")
    st = np.asarray(stops)
    squeeze = st.ndim == 1
    st = np.atleast_2d(st).astype(np.int64)
    sl = cluster_slots(queries) if slots is None else slots
    kind = resolve_ci(ci)
    c = float(np.mean(v[:, 0])) if v.size else 0.0  # shift-equivariant: centre for well-conditioned sums
    d = v - c
    arrays = {"a": w * d, "b": w, "k": np.ones_like(w)}
    per_draw = kind in ("normal", "t_draws", "t_draws_distinct")
    if per_draw:
        w2 = w * w
        arrays.update(w2=w2, w2v=w2 * d, w2vv=w2 * d * d)
    cs = cluster_sums(arrays, sl, st)
    res = ratio_intervals(cs.sums["a"], cs.sums["b"], cs.mask, confidence_level=confidence_level, ci=kind,
                          prior_var=None if prior is None else prior.total(0.0), counts=cs.sums["k"],
                          prior_dof=prior_dof, n_boot=n_boot, rng=rng,
                          normal_se=_per_draw_se(cs, c) if per_draw else None, n_draws=st)
    res = _shift(res, c)
    return _squeeze(res) if squeeze else res


def _shift(res: BatchIntervals, c) -> BatchIntervals:
    return BatchIntervals(res.estimate + c, res.standard_error, res.low + c, res.high + c, res.dof,
                          res.n_draws, res.n_distinct, res.ci, res.confidence_level)


def _squeeze(res: BatchIntervals) -> BatchIntervals:
    return BatchIntervals(*(getattr(res, f)[0] for f in ("estimate", "standard_error", "low", "high", "dof",
                                                         "n_draws", "n_distinct")), res.ci, res.confidence_level)


def _single_iv(values, weights, queries):
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.ndim != 1 or w.shape != v.shape:
        raise ValueError(f"`values` and `weights` must be 1-d arrays of one length; got {v.shape} and {w.shape}.")
    if not (np.isfinite(v).all() and np.isfinite(w).all()):
        raise ValueError("`values` and `weights` must be finite.")
    if (w <= 0).any():
        raise ValueError(f"`weights` must be positive; draw {int(np.flatnonzero(w <= 0)[0])} is {w[w <= 0][0]!r}.")
    x = np.arange(v.size) if queries is None else np.asarray(queries).reshape(-1)
    if x.shape != v.shape:
        raise ValueError(f"`queries` must have one entry per draw ({v.size}); got {x.size}.")
    return v, w, x


def _check_distinct(n_distinct: int, ci: str, has_prior: bool):
    if n_distinct < 2:
        raise TooFewQueriesError(
            f"a standard error needs at least 2 distinct queries; got {n_distinct} "
            "(repeats of one query carry no information about the spread over queries).")
    moderated = has_prior and ci in MODERATED
    limit = MIN_RELIABLE_DISTINCT if moderated else MIN_RELIABLE_DISTINCT_NO_PRIOR
    if n_distinct < limit:
        warnings.warn(
            f"only {n_distinct} distinct queries: the {ci!r} interval's coverage is not reliable below {limit}"
            + ("" if moderated else " without the model's predicted variance (`prior`)")
            + " (see docs/intervals.md).", FewDistinctQueriesWarning, stacklevel=3)


def snis_interval(values, weights, queries=None, *, confidence_level=0.95, ci="auto", prior=None,
                  prior_dof=DEFAULT_PRIOR_DOF, n_boot=DEFAULT_N_BOOT, rng=None) -> IntervalEstimate:
    """Self-normalized IS estimate of one run with a small-sample interval.

    Parameters
    ----------
    values : array-like of shape (n,)
        Value (or per-query difference) of every draw.
    weights : array-like of shape (n,)
        Importance weights ``p/q``.
    queries : array-like of shape (n,), optional
        Query of every draw; draws of one query form one cluster.  Default:
        every draw is a distinct query.
    confidence_level : float, default 0.95
    ci : {"auto", "t", "t_draws", "bootstrap", "normal", "fieller"}, default "auto"
        ``"auto"`` = :data:`AUTO_RULE` (``"t_draws"``).  ``"normal"`` reproduces the previous
        per-draw SE with a ``z`` interval.  See :func:`ratio_intervals`.
    prior : PredictedVariance, optional
        The relevance model's predicted variance of the design
        (:func:`predicted_variance`); recommended -- it keeps heavy-tailed
        pools (many queries with value 0, a few large) from giving
        near-zero standard errors at small ``d``.
    prior_dof : float, default 2
    n_boot : int, default 999
    rng : None, int or numpy.random.Generator
        For ``ci="bootstrap"``.

    Returns
    -------
    IntervalEstimate

    Raises
    ------
    TooFewQueriesError
        With fewer than two distinct queries.

    Warns
    -----
    FewDistinctQueriesWarning
        With fewer than :data:`MIN_RELIABLE_DISTINCT` distinct queries
        (:data:`MIN_RELIABLE_DISTINCT_NO_PRIOR` without ``prior``).

    Examples
    --------
    >>> vals = [0.2, 0.5, 0.2, 0.9, 0.4, 0.6, 0.3, 0.8, 0.1, 0.7, 0.5]
    >>> r = snis_interval(vals, [1.0] * 11, queries=[0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9],
    ...                   prior=PredictedVariance(within=0.04, between=0.02))
    >>> r.ci, r.n_draws, r.n_distinct, round(r.dof, 3), round(r.estimate, 4)
    ('t_draws', 11, 10, 8.308, 0.4727)
    >>> round(r.standard_error, 4), round(r.low, 4), round(r.high, 4)
    (0.0778, 0.2945, 0.651)

    Query 0 was drawn twice: the cluster interval (``ci="t"``) counts it once
    with double weight, which over-states the with-replacement variance:

    >>> c = snis_interval(vals, [1.0] * 11, queries=[0, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9], ci="t",
    ...                   prior=PredictedVariance(within=0.04, between=0.02))
    >>> c.dof, round(c.standard_error, 4), round(c.low, 4), round(c.high, 4)
    (9.0, 0.0861, 0.278, 0.6675)
    """
    v, w, x = _single_iv(values, weights, queries)
    kind = resolve_ci(ci)
    sl = cluster_slots(x)[None, :]
    d = int(sl.max()) + 1 if v.size else 0
    _check_distinct(d, kind, prior is not None)
    res = snis_intervals_prefix(v[None, :], w[None, :], x[None, :], np.array([v.size]), prior=prior,
                                prior_dof=prior_dof, confidence_level=confidence_level, ci=kind, n_boot=n_boot,
                                rng=rng, slots=sl)
    return IntervalEstimate(float(res.estimate[0]), float(res.standard_error[0]), float(res.low[0]),
                            float(res.high[0]), res.confidence_level, kind, float(res.dof[0]), int(v.size), d)


# --------------------------------------------------------------------------- k contrasts


@dataclass(frozen=True, eq=False)
class ContrastIntervals:
    """Joint estimates of ``s`` contrasts with the cluster covariance and t intervals.

    Attributes
    ----------
    estimate, standard_error, low, high : ndarray of shape (s,)
    covariance : ndarray of shape (s, s)
        Cluster (distinct-query) covariance of ``estimate``.
    dof : float
        ``d - 1`` (Kish's effective number of distinct queries minus 1 with ``per_draw=True``).
    critical_value : float
        Per-contrast ``t`` quantile, or the simultaneous max-|t| quantile of
        the multivariate ``t`` with ``dof`` degrees of freedom.
    simultaneous : bool
    n_draws, n_distinct : int
    """

    estimate: np.ndarray
    standard_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    covariance: np.ndarray
    dof: float
    critical_value: float
    simultaneous: bool
    n_draws: int
    n_distinct: int


def _max_abs_t_quantile(corr, level, dof):
    """Quantile of ``max_j |T_j|`` for a multivariate t with correlation ``corr`` (deterministic QMC)."""
    from .intervals import max_abs_t_critical_value

    return max_abs_t_critical_value(corr, level, simultaneous=True, dof=dof)


def contrast_intervals(values, weights, queries=None, *, contrasts=None, confidence_level=0.95,
                       simultaneous=False, prior_variance=None, prior_dof=DEFAULT_PRIOR_DOF,
                       per_draw=False) -> ContrastIntervals:
    """SNIS estimates of several value columns (or linear contrasts of them) with t intervals.

    Parameters
    ----------
    values : array-like of shape (n, k)
        Values of the ``n`` draws under ``k`` systems.
    weights : array-like of shape (n,)
    queries : array-like of shape (n,), optional
    contrasts : array-like of shape (s, k), optional
        Rows of a matrix ``A``; estimates ``A R`` (default the identity).
        E.g. candidates minus a baseline: ``[I, -1]``.
    confidence_level : float
    simultaneous : bool, default False
        Max-|t| critical value of the multivariate ``t`` with ``d - 1``
        degrees of freedom (all intervals hold jointly).
    prior_variance : array-like of shape (s,), optional
        The model's predicted per-draw variance of every contrast
        (:meth:`PredictedVariance.total`); each contrast's SE is moderated with
        it as in :func:`ratio_intervals` (the covariance's correlations are kept).
    prior_dof : float, default 2
    per_draw : bool, default False
        The draws as units (``ci="t_draws"``): the per-draw delta-method
        covariance of the with-replacement design, the prior ``V / n``, and
        Kish's effective number of distinct queries ``n^2 / sum_c k_c^2``
        minus 1 as degrees of freedom (:func:`kish_distinct`).  Equal to the
        default without repeats.

    Returns
    -------
    ContrastIntervals

    Examples
    --------
    >>> V = np.array([[0.2, 0.1], [0.5, 0.6], [0.3, 0.1], [0.9, 0.7], [0.4, 0.4]])
    >>> r = contrast_intervals(V, np.ones(5), contrasts=[[1.0, -1.0]])
    >>> round(float(r.estimate[0]), 3), r.dof
    (0.08, 4.0)
    """
    V = np.asarray(values, dtype=np.float64)
    if V.ndim != 2:
        raise ValueError(f"`values` must be 2-d (n_draws, n_systems); got shape {V.shape}.")
    w = np.asarray(weights, dtype=np.float64)
    A = np.eye(V.shape[1]) if contrasts is None else np.atleast_2d(np.asarray(contrasts, dtype=np.float64))
    if A.shape[1] != V.shape[1]:
        raise ValueError(f"`contrasts` must have {V.shape[1]} columns (one per system); got shape {A.shape}.")
    Y = V @ A.T
    _, w, x = _single_iv(Y[:, 0], w, queries)
    sl = cluster_slots(x)
    d = int(sl.max()) + 1 if x.size else 0
    if d < 2:
        raise TooFewQueriesError(f"a covariance needs at least 2 distinct queries; got {d}.")
    level = _level_iv(confidence_level)
    k = np.bincount(sl, minlength=d).astype(np.float64)
    units = np.arange(x.size) if per_draw else sl
    n_units = x.size if per_draw else d
    a = np.zeros((n_units, Y.shape[1]))
    np.add.at(a, units, w[:, None] * Y)
    b = np.bincount(units, weights=w, minlength=n_units)
    est = a.sum(0) / b.sum()
    e = a - b[:, None] * est[None, :]
    cov = n_units / (n_units - 1.0) * (e.T @ e) / b.sum() ** 2
    # identical contrast values on every draw give an exactly zero variance; rounding can leave -1e-17
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    dof = float(_kish_dof(x.size**2 / (k * k).sum(), d)) if per_draw else float(d - 1)
    if prior_variance is not None:
        pv = np.broadcast_to(np.asarray(prior_variance, dtype=np.float64), se.shape)
        prior_se2 = pv / x.size if per_draw else pv * (k * k).sum() / x.size**2
        new_se = _moderated_se(se, dof, prior_se2, prior_dof)
        scale = np.divide(new_se, se, out=np.ones_like(se), where=se > 0)
        cov = cov * np.outer(scale, scale)
        cov[np.diag_indices_from(cov)] = new_se**2
        se = new_se
    if simultaneous and Y.shape[1] > 1:
        keep = se > 0
        if keep.sum() > 1:
            corr = cov[np.ix_(keep, keep)] / np.outer(se[keep], se[keep])
            crit = _max_abs_t_quantile(corr, level, dof)
        else:
            crit = float(critical_value(level, dof))
    else:
        crit = float(critical_value(level, dof))
    return ContrastIntervals(est, se, est - crit * se, est + crit * se, cov, dof, crit, bool(simultaneous),
                             int(x.size), d)
