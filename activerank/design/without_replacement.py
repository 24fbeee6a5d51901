"""Budgeted sampling without replacement with unequal probabilities.

Algorithm 1 of Sawade et al. draws queries *with* replacement: a redrawn query
brings no new label, and at 80 of 627 queries the finite-population factor
alone is 0.87.  This module offers the without-replacement alternative, as a
design the engine can register next to the with-replacement loop.

Design: budgeted sequential Poisson (priority) order sampling
-------------------------------------------------------------
Every pool query ``i`` with score ``a_i > 0`` gets a ranking variable
``xi_i = U_i / a_i`` with independent ``U_i ~ Uniform(0, 1)``.  Queries are
taken in increasing ``xi`` while the cumulative cost stays within the budget
``Lambda``: the sample is the longest prefix of the ``xi`` order whose cost is
``<= Lambda`` (the run stops before the first query that does not fit, exactly
like :func:`activerank.design.sampling.draw_budgeted`).  The cost of the sample,
not the number of draws, is what the budget bounds -- always, not only in
expectation.

With unit costs this is Ohlsson's sequential Poisson sampling of fixed size
``n`` (a close relative of Rosén's Pareto order sampling), whose inclusion
probabilities are approximately ``min(1, c a_i)``.  Its *exact* unconditional
inclusion probabilities have no closed form, but the design has a stronger
property that makes them unnecessary (Duffield, Lund & Thorup's priority
sampling argument, extended here to a cost budget):

* Let ``tau`` be the ranking variable of the first query that did not fit
  (``+inf`` if the whole reachable pool fits).  A query ``i`` is in the sample
  iff ``xi_i < tau_i``, where ``tau_i`` depends on the *other* queries only (the
  threshold of the same design run on the pool without ``i`` with budget
  ``Lambda - lambda_i``), and for every sampled query ``tau_i = tau``.
* Hence, given the others, ``i`` is included with probability
  ``pi_i = min(1, a_i tau)`` -- the *conditional inclusion probability*, known
  for every sampled query -- and ``Z_i = 1{i in S} / pi_i`` has
  ``E[Z_i] = 1`` exactly (for ``lambda_i <= Lambda``).
* By the same argument on the reduced pool, ``E[Z_i Z_j] = 1`` for ``i != j``
  whenever ``lambda_i + lambda_j <= Lambda``: the ``Z`` are uncorrelated, so the
  Horvitz--Thompson estimator ``sum_S y_i / pi_i`` is exactly unbiased and
  ``sum_S y_i^2 (1 - pi_i) / pi_i^2`` is an unbiased estimator of its
  variance (:mod:`activerank.inference.horvitz_thompson`).

The exact unconditional first- and second-order inclusion probabilities are
available for tiny pools by enumeration (:func:`inclusion_probabilities`,
:func:`joint_inclusion_probabilities`; used by the tests) and approximately for
any pool (:func:`approximate_inclusion_probabilities`).

Scores.  Any non-negative score works; the variance-optimal shape for a
Horvitz--Thompson total with costs is ``a_i ∝ |e_i| / sqrt(lambda_i)`` with
``e_i`` the residual to be estimated -- the shape of Sawade et al.'s ``q*``
(:func:`activerank.design.sampling.optimal_distribution` gives it, including the
defensive mixture).  Scores equal to ``p`` give an equal-probability
(uniform) design; with unit costs and uniform ``p`` the sample is a simple
random sample without replacement.

References
----------
.. [1] E. Ohlsson. "Sequential Poisson sampling." Journal of Official
   Statistics 14(2):149-162, 1998.
.. [2] N. Duffield, C. Lund, M. Thorup. "Priority sampling for estimation of
   arbitrary subset sums." Journal of the ACM 54(6), 2007.
.. [3] B. Rosén. "On sampling with probability proportional to size."
   Journal of Statistical Planning and Inference 62:159-191, 1997.
.. [4] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = [
    "WORSample",
    "WORBatch",
    "draw_without_replacement",
    "draw_without_replacement_batch",
    "inclusion_probabilities",
    "joint_inclusion_probabilities",
    "approximate_inclusion_probabilities",
    "simulated_inclusion_probabilities",
]

_TOL = 1e-12


def _scores_costs_iv(scores, costs):
    a = np.asarray(scores, dtype=np.float64).reshape(-1)
    lam = np.asarray(costs, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("`scores` must not be empty.")
    if lam.size != a.size:
        raise ValueError(f"`costs` must have one entry per query ({a.size}); got {lam.size}.")
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        raise ValueError(f"`scores` must be finite and >= 0; query {bad[0]} has {a[bad[0]].item()!r}.")
    if not a.max() > 0:
        raise ValueError("`scores` must have at least one positive entry.")
    bad = np.flatnonzero(~np.isfinite(lam) | (lam < 0))
    if bad.size:
        raise ValueError(f"`costs` must be finite and >= 0; query {bad[0]} has {lam[bad[0]].item()!r}.")
    return a, lam


def _budget_iv(budget, name="budget") -> float:
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`{name}` must be a positive number, got {budget!r}.")
    if not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {budget}.")
    return float(budget)


@dataclass(frozen=True, eq=False)
class WORSample:
    """One budgeted without-replacement sample.

    Attributes
    ----------
    indices : ndarray of shape (n,), int
        Pool index of every sampled query, in selection order (increasing
        ranking variable).
    pi : ndarray of shape (n,)
        Conditional inclusion probability ``min(1, a_i tau)`` of every sampled
        query (the Horvitz--Thompson weight is ``1 / pi``).
    threshold : float
        ``tau``, the ranking variable of the first query that did not fit
        (``inf`` when the whole reachable pool fits).
    cost : ndarray of shape (n,)
        Cost of every sampled query.
    budget : float
    """

    indices: np.ndarray
    pi: np.ndarray
    threshold: float
    cost: np.ndarray
    budget: float

    @property
    def n(self) -> int:
        return int(self.indices.size)

    @property
    def cost_spent(self) -> float:
        return min(float(self.cost.sum()), self.budget)


def _prefix_length(cum_sorted, budget, n_reachable):
    budget = np.asarray(budget, dtype=np.float64)
    lim = budget + _TOL * np.maximum(1.0, budget)
    return np.minimum((cum_sorted <= lim[..., None]).sum(axis=-1), n_reachable)


def draw_without_replacement(scores, costs, budget, rng=None) -> WORSample:
    """Budgeted sequential Poisson sample without replacement.

    Queries are taken in increasing ``xi_i = U_i / a_i`` while their cumulative
    cost stays ``<= budget``; see the module docstring for why
    ``pi_i = min(1, a_i tau)`` makes Horvitz--Thompson estimation exactly
    unbiased.

    Parameters
    ----------
    scores : array-like of shape (n_queries,)
        Non-negative sampling scores ``a_i`` (any scale; e.g. ``q*`` from
        :func:`activerank.design.sampling.optimal_distribution`).  A query with
        score 0 is never sampled.
    costs : array-like of shape (n_queries,)
        Non-negative query costs ``lambda_i`` in the budget's unit (0 for a
        query whose documents are already judged).
    budget : float
        ``Lambda``: the sample's total cost never exceeds it.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    WORSample

    References
    ----------
    .. [1] E. Ohlsson. "Sequential Poisson sampling." J. Official Statistics
       14(2):149-162, 1998.
    .. [2] N. Duffield, C. Lund, M. Thorup. "Priority sampling for estimation
       of arbitrary subset sums." J. ACM 54(6), 2007.

    Examples
    --------
    >>> s = draw_without_replacement([1.0, 1.0, 2.0, 0.5], [1.0, 1.0, 1.0, 1.0], 2, rng=0)
    >>> s.n, bool(s.cost.sum() <= 2), bool(np.all((s.pi > 0) & (s.pi <= 1)))
    (2, True, True)
    """
    a, lam = _scores_costs_iv(scores, costs)
    budget = _budget_iv(budget)
    rng = np.random.default_rng(rng)
    with np.errstate(divide="ignore"):
        xi = rng.random(a.size) / a  # a == 0 -> inf: never reached
    order = np.argsort(xi, kind="stable")
    n_reach = int((a > 0).sum())
    cum = np.cumsum(lam[order])
    s = int(_prefix_length(cum[None], budget, n_reach)[0])
    tau = float(xi[order[s]]) if s < n_reach else np.inf
    idx = order[:s]
    pi = np.minimum(1.0, a[idx] * tau) if np.isfinite(tau) else np.ones(s)
    return WORSample(indices=idx, pi=pi, threshold=tau, cost=lam[idx], budget=budget)


@dataclass(frozen=True, eq=False)
class WORBatch:
    """``n_reps`` independent samples for a grid of budgets (common random numbers).

    The sample for a smaller budget is a prefix of the one for a larger budget
    (same ranking variables), so one sort serves every budget.

    Attributes
    ----------
    order : ndarray of shape (n_reps, n_cols), int
        Pool index of the first ``n_cols`` queries of every run's ranking order.
    stops : ndarray of shape (n_budgets, n_reps), int
        Sample size of every run under every budget (the first ``stops``
        entries of ``order``).
    threshold : ndarray of shape (n_budgets, n_reps)
        ``tau`` of every run and budget.
    scores : ndarray of shape (n_queries,) or (n_reps, n_queries)
    budgets : ndarray of shape (n_budgets,)
    """

    order: np.ndarray
    stops: np.ndarray
    threshold: np.ndarray
    scores: np.ndarray
    budgets: np.ndarray

    def pi(self) -> np.ndarray:
        """Conditional inclusion probabilities, shape ``(n_budgets, n_reps, n_cols)``.

        Entries beyond a run's stop are meaningless (use :meth:`mask`).
        """
        if self.scores.ndim == 1:
            a = self.scores[self.order][None]
        else:
            a = np.take_along_axis(self.scores, self.order, axis=1)[None]
        t = self.threshold[..., None]
        with np.errstate(invalid="ignore"):
            return np.where(np.isfinite(t), np.minimum(1.0, a * t), 1.0)

    def mask(self) -> np.ndarray:
        """True for sampled entries, shape ``(n_budgets, n_reps, n_cols)``."""
        return np.arange(self.order.shape[1])[None, None, :] < self.stops[..., None]


def draw_without_replacement_batch(scores, costs, budgets, n_reps, rng=None) -> WORBatch:
    """Many independent budgeted samples at once, for every budget of a grid.

    Vectorized over repetitions (one ``argsort`` per run); the same rules as
    :func:`draw_without_replacement`, which it reproduces for ``n_reps=1``
    (same random stream).

    Parameters
    ----------
    scores : array-like of shape (n_queries,) or (n_reps, n_queries)
        One score vector for every run, or one per run (e.g. a second stage
        that excludes each run's already judged queries with score 0).
    costs : array-like of shape (n_queries,)
    budgets : float or array-like of shape (n_budgets,) or (n_budgets, n_reps)
        A grid of budgets, the same for every run or one per run.
    n_reps : int
    rng : None, int or numpy.random.Generator

    Returns
    -------
    WORBatch

    Examples
    --------
    >>> b = draw_without_replacement_batch(np.ones(10), np.ones(10), [2, 5], 3, rng=0)
    >>> b.stops.tolist()
    [[2, 2, 2], [5, 5, 5]]
    """
    if isinstance(n_reps, bool) or not isinstance(n_reps, numbers.Integral) or n_reps < 1:
        raise ValueError(f"`n_reps` must be a positive integer; got {n_reps!r}.")
    a2 = np.asarray(scores, dtype=np.float64)
    if a2.ndim == 2:
        if a2.shape[0] != n_reps:
            raise ValueError(f"2-d `scores` must have one row per repetition ({n_reps}); got {a2.shape[0]}.")
        _, lam = _scores_costs_iv(a2.max(axis=0), costs)
        bad = np.argwhere(~np.isfinite(a2) | (a2 < 0))
        if bad.size:
            raise ValueError(f"`scores` must be finite and >= 0; run {bad[0, 0]}, query {bad[0, 1]}.")
        a = a2
    else:
        a, lam = _scores_costs_iv(scores, costs)
    bud = np.atleast_1d(np.asarray(budgets, dtype=np.float64))
    if bud.ndim > 2 or (bud.ndim == 2 and bud.shape[1] != n_reps):
        raise ValueError(f"`budgets` must have shape (n_budgets,) or (n_budgets, {n_reps}); got {bud.shape}.")
    for b in bud.reshape(-1):
        _budget_iv(float(b), "budgets")
    rng = np.random.default_rng(rng)
    with np.errstate(divide="ignore"):
        xi = rng.random((int(n_reps), lam.size)) / a
    order = np.argsort(xi, axis=1, kind="stable")
    xs = np.take_along_axis(xi, order, axis=1)
    cum = np.cumsum(lam[order], axis=1)
    n_reach = (a > 0).sum(axis=-1)
    stops = np.stack([_prefix_length(cum, b, n_reach) for b in bud])  # loop over budgets only
    rows = np.arange(order.shape[0])[None, :]
    tau = np.where(stops < n_reach, xs[rows, np.minimum(stops, lam.size - 1)], np.inf)
    width = int(min(lam.size, stops.max() + 1))
    return WORBatch(order=order[:, :width], stops=stops.astype(np.int64), threshold=tau,
                    scores=a, budgets=bud)


# --------------------------------------------------------------------------- inclusion probabilities


def _threshold_survival(a, lam, cap, t):
    """``P(T > t)`` for the threshold ``T`` of the design on pool (a, lam) with budget ``cap``.

    ``T > t`` iff the queries with ``xi <= t`` (independent Bernoulli with
    ``min(1, a t)``) cost at most ``cap`` in total.  Exact by enumerating the
    ``2^m`` subsets (tiny pools only).  ``t`` has shape (n_t,).
    """
    m = a.size
    if cap < -_TOL:
        return np.zeros_like(t)
    if m == 0:
        return np.ones_like(t)
    subsets = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)  # (2^m, m)
    fits = subsets.astype(np.float64) @ lam <= cap + _TOL * max(1.0, abs(cap))
    p = np.minimum(1.0, a[None, :] * t[:, None])  # (n_t, m)
    logp = np.where(subsets[None], p[:, None, :], 1.0 - p[:, None, :])  # (n_t, 2^m, m)
    prob = np.prod(logp, axis=2)
    return prob[:, fits].sum(axis=1)


def _expect_over_threshold(g_prime, a, lam, cap, breaks):
    """``E[g(T)] = int_0^inf g'(t) P(T > t) dt`` (``g(0) = 0``), exact piecewise Gauss--Legendre.

    Between consecutive breakpoints ``1/a_j`` both ``g'`` and ``P(T > t)`` are
    polynomials of degree <= m + 2, so Gauss--Legendre with m + 3 nodes is exact.
    """
    nodes, wts = np.polynomial.legendre.leggauss(a.size + 3)
    total = 0.0
    for lo, hi in zip(breaks[:-1], breaks[1:]):
        if hi <= lo:
            continue
        t = 0.5 * (hi - lo) * nodes + 0.5 * (hi + lo)
        total += 0.5 * (hi - lo) * float(np.dot(wts, g_prime(t) * _threshold_survival(a, lam, cap, t)))
    return total


def _tiny_pool_iv(scores, costs, budget, max_size=14):
    a, lam = _scores_costs_iv(scores, costs)
    budget = _budget_iv(budget)
    if a.size > max_size:
        raise ValueError(f"exact inclusion probabilities enumerate 2^n subsets; `scores` has {a.size} "
                         f"queries, more than {max_size}.  Use approximate_inclusion_probabilities.")
    if np.any(a == 0):
        raise ValueError("exact inclusion probabilities need all `scores` > 0.")
    return a, lam, budget


def inclusion_probabilities(scores, costs, budget) -> np.ndarray:
    """Exact unconditional inclusion probabilities ``P(i in S)`` (tiny pools).

    ``pi_i = E[min(1, a_i T_i)]`` where ``T_i`` is the threshold of the design
    run on the pool without ``i`` with budget ``Lambda - lambda_i``; computed by
    enumerating subsets and exact piecewise quadrature.  ``O(n 2^n)``: for
    checks on pools of at most 14 queries.

    Parameters
    ----------
    scores, costs : array-like of shape (n_queries,)
        Scores must be positive.
    budget : float

    Returns
    -------
    pi : ndarray of shape (n_queries,)

    Examples
    --------
    >>> inclusion_probabilities(np.ones(4), np.ones(4), 2).round(12).tolist()   # SRSWOR: n/N
    [0.5, 0.5, 0.5, 0.5]
    """
    a, lam, budget = _tiny_pool_iv(scores, costs, budget)
    out = np.zeros(a.size)
    for i in range(a.size):  # tiny pools only (enumeration)
        if lam[i] > budget * (1 + _TOL):
            continue
        rest = np.arange(a.size) != i
        breaks = np.unique(np.concatenate([[0.0], 1.0 / a]))
        breaks = breaks[breaks <= 1.0 / a[i]]
        ai = a[i]
        out[i] = _expect_over_threshold(lambda t, ai=ai: np.full_like(t, ai), a[rest], lam[rest],
                                        budget - lam[i], breaks)
    return out


def joint_inclusion_probabilities(scores, costs, budget) -> np.ndarray:
    """Exact second-order inclusion probabilities ``P(i, j in S)`` (tiny pools).

    ``pi_ij = E[min(1, a_i T) min(1, a_j T)]`` with ``T`` the threshold of the
    design on the pool without ``i, j`` and budget ``Lambda - lambda_i -
    lambda_j`` (0 when the pair does not fit the budget).  The diagonal holds
    :func:`inclusion_probabilities`.

    Returns
    -------
    pi2 : ndarray of shape (n_queries, n_queries)

    Examples
    --------
    >>> P = joint_inclusion_probabilities(np.ones(4), np.ones(4), 2)
    >>> round(float(P[0, 1]), 12)    # SRSWOR: n(n-1) / (N(N-1))
    0.166666666667
    """
    a, lam, budget = _tiny_pool_iv(scores, costs, budget)
    n = a.size
    out = np.diag(inclusion_probabilities(a, lam, budget))
    for i in range(n):  # tiny pools only (enumeration)
        for j in range(i + 1, n):
            cap = budget - lam[i] - lam[j]
            if cap < -_TOL * max(1.0, budget):
                continue
            rest = (np.arange(n) != i) & (np.arange(n) != j)
            ai, aj = a[i], a[j]

            def g_prime(t, ai=ai, aj=aj):
                # d/dt [min(1, ai t) min(1, aj t)]
                fi, fj = np.minimum(1.0, ai * t), np.minimum(1.0, aj * t)
                return np.where(ai * t < 1, ai, 0.0) * fj + fi * np.where(aj * t < 1, aj, 0.0)

            breaks = np.unique(np.concatenate([[0.0], 1.0 / a]))
            breaks = breaks[breaks <= max(1.0 / ai, 1.0 / aj)]
            out[i, j] = out[j, i] = _expect_over_threshold(g_prime, a[rest], lam[rest], cap, breaks)
    return out


def simulated_inclusion_probabilities(scores, costs, budget, *, n_reps=20_000, rng=None,
                                      chunk=2_000) -> np.ndarray:
    """Unconditional inclusion probabilities ``P(i in S)`` of the sampler, estimated by simulation.

    Runs :func:`draw_without_replacement` ``n_reps`` times (vectorized in chunks of ``chunk`` runs) and
    returns every query's inclusion frequency: unbiased, with standard error
    ``sqrt(pi (1 - pi) / n_reps) <= 0.5 / sqrt(n_reps)`` (0.0035 at the default).  Costs
    ``O(n_reps n_queries log n_queries)``: meant for small pools, where the conditional ``pi`` of
    :class:`WORSample` makes a noisy weight (``benchmarks/results/wor_small_pool.md``).

    Parameters
    ----------
    scores, costs : array-like of shape (n_queries,)
    budget : float
    n_reps : int, default 20000
    rng : None, int or numpy.random.Generator
    chunk : int, default 2000
        Runs simulated at once (memory ``~ chunk * n_queries``).

    Returns
    -------
    pi : ndarray of shape (n_queries,)

    Examples
    --------
    >>> pi = simulated_inclusion_probabilities(np.ones(4), np.ones(4), 2, n_reps=4000, rng=0)
    >>> bool(np.all(np.abs(pi - 0.5) < 0.03)), float(pi.sum())      # SRSWOR: n/N, exactly n in total
    (True, 2.0)
    """
    a, lam = _scores_costs_iv(scores, costs)
    budget = _budget_iv(budget)
    if isinstance(n_reps, bool) or not isinstance(n_reps, numbers.Integral) or n_reps < 1:
        raise ValueError(f"`n_reps` must be a positive integer; got {n_reps!r}.")
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"`chunk` must be a positive integer; got {chunk!r}.")
    rng = np.random.default_rng(rng)
    hits = np.zeros(a.size)
    done = 0
    while done < n_reps:  # bounded memory: one chunk of runs at a time
        m = int(min(chunk, n_reps - done))
        b = draw_without_replacement_batch(a, lam, [budget], m, rng)
        np.add.at(hits, b.order[b.mask()[0]], 1.0)
        done += m
    return hits / float(n_reps)


def approximate_inclusion_probabilities(scores, costs, budget) -> np.ndarray:
    """``pi_i ≈ min(1, c a_i)`` with ``c`` solving ``sum_i lambda_i min(1, c a_i) = Lambda``.

    The large-pool approximation of the design (Rosén 1997; Ohlsson 1998):
    the threshold concentrates where the expected cost of the Poisson sample
    ``{xi <= t}`` meets the budget.  The realized sample stops before the
    first query that does not fit, so it spends on average about half a
    query's cost less; the approximation is for planning (expected variance
    of a design), not for weighting -- estimators use the exact conditional
    ``pi`` of :class:`WORSample`.

    Parameters
    ----------
    scores, costs : array-like of shape (n_queries,)
    budget : float

    Returns
    -------
    pi : ndarray of shape (n_queries,)

    Examples
    --------
    >>> approximate_inclusion_probabilities([1.0, 1.0, 4.0], [1.0, 1.0, 1.0], 2).round(6).tolist()
    [0.5, 0.5, 1.0]
    """
    a, lam = _scores_costs_iv(scores, costs)
    budget = _budget_iv(budget)
    return _approx_pi(a, lam, budget)


def _approx_pi(a, lam, budget):
    pos = a > 0
    if lam[pos].sum() <= budget:
        return pos.astype(np.float64)
    # sum lam min(1, c a) is piecewise linear and increasing in c: solve on the breakpoints 1/a
    r = 1.0 / a[pos]
    o = np.argsort(r)
    r, la, aa = r[o], lam[pos][o], a[pos][o]
    capped = np.concatenate([[0.0], np.cumsum(la)])[:-1]           # cost of queries with pi = 1 at c = r_k
    slope = np.cumsum((la * aa)[::-1])[::-1]                         # sum lam a over queries not capped
    cost_at = capped + slope * r                                     # expected cost at c = r_k
    k = int(np.searchsorted(cost_at, budget, side="right")) - 1
    if k < 0:
        c = budget / slope[0]
    else:
        c = r[k] + (budget - cost_at[k]) / slope[k + 1] if k + 1 < r.size else r[k]
    return np.where(pos, np.minimum(1.0, c * a), 0.0)
