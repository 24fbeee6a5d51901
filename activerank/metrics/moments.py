"""Exact moments of DCG@k and ERR@k under independent graded labels.

Given a relevance model ``p(y_z | x, z)`` for every ranked item ``z`` of a query
``x``, the labels are independent given the query, so the first and second
moments of a ranking metric ``L`` -- and the cross moment ``E[L_a L_b | x]`` of two
rankings of the same query, where a shared item carries one label -- are exact
sums and products over items.  No label vector is ever enumerated.

Formulas (``i`` is a 0-based rank, ``d_i``/``c_i`` the metric's discount):

* DCG, ``L = sum_i d_i g(y_i)``: ``E[L] = sum d_i mu_i``,
  ``Var[L] = sum d_i^2 v_i`` with ``mu, v`` the mean/variance of ``g(y)``;
  for two rankings ``Cov = sum_{z shared} d_a(z) d_b(z) v_z`` and
  ``Var[L_a - L_b] = sum_z (d_a(z) - d_b(z))^2 v_z`` (zero discount when absent).
  ``O(|Y| |r_a u r_b|)``.
* ERR, suffix recursion ``S_i = c_i R_i + (1 - R_i) S_{i+1}`` with ``R_i``
  independent of ``S_{i+1}``: ``E[S_i] = c_i r_i + (1 - r_i) E[S_{i+1}]`` and
  ``Var[S_i] = ((c_i - E S_{i+1})^2 + Var S_{i+1}) Var R_i + (1 - r_i)^2 Var S_{i+1}``.
  ``O(|Y| n)``.
* ERR cross moment: ``E[L_a L_b] = sum_{i,l} c_i c_l E[R(a_i) P^a_i R(b_l) P^b_l]``
  with ``P`` the products of ``(1 - R)`` above each rank.  Each term factorizes
  over items: prefix products of ``E[1 - R]``, a factor
  ``E[(1 - R)^2] / E[1 - R]^2`` for every item above both ``a_i`` and ``b_l``,
  and a correction for the two items at ``(i, l)``.  The kernel walks down
  ``a`` keeping one row over ``l`` (see ``_cascade_cross_block``):
  ``O(|Y| (n_a + n_b) + n_a n_b)``, vectorized over blocks of queries of
  similar length so the working set stays in cache.
* ERR cross moment when the shared items keep their order (index updates:
  ``b`` is ``a`` with documents removed or added): one suffix recursion down
  the merged list carries ``E[S^a]``, ``E[S^b]`` and ``E[S^a S^b]``
  (``_cascade_pair_ordered``), ``O(|Y| (n_a + n_b))``.  Queries are checked
  for this case one by one and routed to the matching kernel.

Item statistics are computed in cache-sized chunks of the probability matrix
and the ERR suffix recursion reads them in position-major order, so the
single-ranker kernels stream the pool's probabilities about once.

Backends: these NumPy kernels always work; with the optional ``fast`` extra
(numba) large pools go to compiled per-query loops of the same formulas
(:mod:`activerank.metrics._numba`), equal to these to 1e-12 -- see
:func:`kernel_backend`.  Every kernel runs with one BLAS thread
(:mod:`activerank.metrics._blas`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .._validation import probs_iv, ranking_iv, rankings_iv
from ..ragged import (
    PositionMajor,
    Rankings,
)
from ._blas import single_blas_thread
from ._pair import (
    _additive_pair,
    _cascade_pair,
    _cascade_pair_finish,
    _match_tables,
    _ordered_queries,
)
from ._stats import (
    _additive_entry_stats,
    _cascade_columns,
    _cascade_entry_stats,
    _cascade_recursion,
    _discounts,
    _grade_values,
    _identical,
    _match,
)
from .registry import Metric, parse_metric

__all__ = [
    "BACKENDS",
    "kernel_backend",
    "QueryMoments",
    "PairMoments",
    "PoolMoments",
    "PoolPairMoments",
    "query_moments",
    "pair_moments",
    "pool_moments",
    "pool_pair_moments",
]


# Kernel backends: "numpy" (always available) or "numba" (the optional ``fast``
# extra).  "auto" takes numba when it imports and the pool is large enough for
# compiled loops to matter; below that the NumPy kernels take milliseconds and
# the results stay bit-for-bit those of the NumPy path.
BACKENDS = ("auto", "numpy", "numba")
BACKEND_ENV = "ACTIVERANK_KERNELS"
_NUMBA_MIN_ENTRIES = 1 << 15
_NUMBA = None  # the imported activerank.metrics._numba module, or the ImportError met


def _load_numba():
    global _NUMBA
    if _NUMBA is None:
        try:
            from . import _numba as module
        except ImportError as exc:  # not installed, or incompatible with this NumPy
            module = exc
        _NUMBA = module
    return _NUMBA


def kernel_backend(backend: str | None = None, n_entries: int | None = None) -> str:
    """The moment-kernel backend a call uses: ``"numpy"`` or ``"numba"``.

    Parameters
    ----------
    backend : {"auto", "numpy", "numba"} or None
        ``None`` reads the environment variable ``ACTIVERANK_KERNELS`` (default
        ``"auto"``).  ``"auto"`` uses numba (``pip install activerank[fast]``)
        when it imports and the call ranks at least ``2**15`` entries;
        ``"numba"`` requires it.
    n_entries : int, optional
        Ranked entries of the call (``None``: as if large).

    Returns
    -------
    str

    Examples
    --------
    >>> kernel_backend("numpy")
    'numpy'
    """
    name = "backend"
    if backend is None:
        backend, name = os.environ.get(BACKEND_ENV, "auto"), f"environment variable {BACKEND_ENV}"
    if backend not in BACKENDS:
        raise ValueError(f"`{name}` must be one of {list(BACKENDS)}; got {backend!r}.")
    if backend == "numpy":
        return "numpy"
    if backend == "auto" and n_entries is not None and n_entries < _NUMBA_MIN_ENTRIES:
        return "numpy"
    module = _load_numba()
    if isinstance(module, ImportError):
        if backend == "numba":
            raise ImportError(
                f"the numba kernel backend needs numba (`pip install activerank[fast]`): {module}"
            ) from module
        return "numpy"
    return "numba"


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class QueryMoments:
    """Moments of a metric ``L`` for one query under the relevance model.

    Attributes
    ----------
    mean : float
        ``E[L | x]``.
    second_moment : float
        ``E[L^2 | x]``.
    variance : float
        ``Var[L | x]`` (computed without cancellation where the metric allows).
    """

    mean: float
    second_moment: float
    variance: float


@dataclass(frozen=True)
class PairMoments:
    """Joint moments of two rankings' metrics ``L_a``, ``L_b`` of one query.

    ``delta_mean`` and ``delta_variance`` refer to ``delta = L_a - L_b``.
    """

    mean_a: float
    mean_b: float
    second_a: float
    second_b: float
    cross: float
    delta_variance: float

    @property
    def delta_mean(self) -> float:
        return self.mean_a - self.mean_b


@dataclass(frozen=True, eq=False)
class PoolMoments:
    """Per-query moments for a whole pool; every array has shape (n_queries,)."""

    mean: np.ndarray
    second_moment: np.ndarray
    variance: np.ndarray


@dataclass(frozen=True, eq=False)
class PoolPairMoments:
    """Per-query joint moments of two rankers; arrays of shape (n_queries,)."""

    mean_a: np.ndarray
    mean_b: np.ndarray
    second_a: np.ndarray
    second_b: np.ndarray
    cross: np.ndarray
    delta_variance: np.ndarray

    @property
    def delta_mean(self) -> np.ndarray:
        return self.mean_a - self.mean_b

    @property
    def covariance(self) -> np.ndarray:
        return self.cross - self.mean_a * self.mean_b


# --------------------------------------------------------------------------- item statistics


# --------------------------------------------------------------------------- single-ranking kernels


def _additive_moments(probs, rankings: Rankings, metric: Metric):
    mu, var = _additive_entry_stats(probs, rankings.items, metric)
    d = _discounts(metric, int(rankings.lengths.max(initial=0)))[rankings.positions()]
    q = rankings.query_index()
    m = rankings.n_queries
    mean = np.bincount(q, d * mu, minlength=m)
    d *= d
    d *= var
    variance = np.bincount(q, d, minlength=m)
    return mean, variance


def _cascade_moments(probs, rankings: Rankings, metric: Metric):
    pm = PositionMajor(rankings.offsets)
    st = _cascade_entry_stats(probs, rankings.items[pm.flat_order()], metric)
    return _cascade_recursion(pm, st, metric)


@single_blas_thread
def _moments(probs: np.ndarray, rankings: Rankings, metric: Metric, *,
             backend: str | None = None) -> PoolMoments:
    """Validated-input kernel: ``rankings`` already truncated at ``metric.k``."""
    _require_exact(metric)
    if kernel_backend(backend, rankings.items.size) == "numba" and not metric.binary:
        mean, variance = _numba_moments(probs, rankings, metric)
    elif metric.family == "additive":
        mean, variance = _additive_moments(probs, rankings, metric)
    else:
        mean, variance = _cascade_moments(probs, rankings, metric)
    return PoolMoments(mean=mean, second_moment=variance + mean * mean, variance=variance)


def _numba_moments(probs, rankings: Rankings, metric: Metric):
    nb = _load_numba()
    disc = _discounts(metric, int(rankings.lengths.max(initial=0)))
    if metric.family == "additive":
        return nb.additive_single(probs, rankings.items, rankings.offsets,
                                  _grade_values(metric, probs.shape[1]), disc)
    return nb.cascade_single(probs, rankings.items, rankings.offsets,
                             _cascade_columns(metric, probs.shape[1]), disc)


# --------------------------------------------------------------------------- pair kernels


def _numba_additive_pair(probs, ra: Rankings, rb: Rankings, metric: Metric):
    ia, ib = _match(ra, rb, probs.shape[0])
    pos_ab, shared_b = _match_tables(ra, rb, ia, ib)
    disc = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))))
    return _load_numba().additive_pair(probs, ra.items, ra.offsets, rb.items, rb.offsets, pos_ab, shared_b,
                                       _grade_values(metric, probs.shape[1]), disc)


def _numba_cascade_pair(probs, ra: Rankings, rb: Rankings, metric: Metric, order_preserving=None):
    ia, ib = _match(ra, rb, probs.shape[0])
    ordered = _ordered_queries(ia, ib, rb.query_index(), ra.n_queries, order_preserving)
    pos_ab, shared_b = _match_tables(ra, rb, ia, ib)
    disc = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))) + 1)
    res = _load_numba().cascade_pair(probs, ra.items, ra.offsets, rb.items, rb.offsets, pos_ab, shared_b,
                                     ordered, _cascade_columns(metric, probs.shape[1]), disc)
    return _cascade_pair_finish(*res)


@single_blas_thread
def _pair_moments(probs, ra: Rankings, rb: Rankings, metric: Metric, *,
                  order_preserving: bool | None = None, backend: str | None = None) -> PoolPairMoments:
    """Validated-input kernel: both rankings already truncated at ``metric.k``."""
    _require_exact(metric)
    fast = kernel_backend(backend, ra.items.size + rb.items.size) == "numba"
    if metric.family == "additive":
        kernel = _numba_additive_pair if fast else _additive_pair
        mean_a, mean_b, var_a, var_b, cov, dvar = kernel(probs, ra, rb, metric)
    elif metric.binary:
        # a 0/1 stopping probability can be certain (E[1 - R] = 0): a division-free cross moment
        from ._binary_cascade import (
            binary_cascade_pair,  # imports this module's helpers
        )
        mean_a, mean_b, var_a, var_b, cov, dvar = binary_cascade_pair(probs, ra, rb, metric)
    else:
        kernel = _numba_cascade_pair if fast else _cascade_pair
        mean_a, mean_b, var_a, var_b, cov, dvar = kernel(probs, ra, rb, metric, order_preserving)
    second_a = var_a + mean_a**2
    second_b = var_b + mean_b**2
    cross = cov + mean_a * mean_b
    # identical lists: delta is 0 for every label vector, so report that exactly
    same = _identical(ra, rb)
    cross = np.where(same, second_a, cross)
    dvar = np.where(same, 0.0, dvar)
    return PoolPairMoments(mean_a, mean_b, second_a, second_b, cross, dvar)


def _require_exact(metric: Metric) -> None:
    if metric.moments != "exact":
        raise ValueError(
            f"`metric` {str(metric)!r} has no exact moments (only Monte-Carlo approximations): use "
            "activerank.metrics.predicted_moments / predicted_pair_moments.")


# --------------------------------------------------------------------------- public API


@single_blas_thread
def pool_moments(probs, rankings, *, metric, k=None, backend: str | None = None) -> PoolMoments:
    """Exact ``E[L | x]``, ``E[L^2 | x]`` and ``Var[L | x]`` for every query of a pool.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)
        Row ``z`` is ``p(y_z = . | x, z)`` for document row ``z``; the grade
        scale is ``0..n_grades - 1``.
    rankings : Rankings or sequence of sequences
        Per-query rankings (distinct document-row indices, best first).
    metric : str
        ``"dcg"`` or ``"err"``, optionally with a cutoff ``@k``.
    k : int or None, optional
        Cutoff (``None``: whole list); behaves exactly like ``metric(r[:k])``.
    backend : {"auto", "numpy", "numba"} or None, optional
        Kernel implementation (see :func:`kernel_backend`; ``None`` reads
        ``ACTIVERANK_KERNELS``, default ``"auto"``: numba when installed, for
        pools of at least ``2**15`` entries).  The backends agree to 1e-12.

    Returns
    -------
    PoolMoments
        ``mean``, ``second_moment``, ``variance``, each of shape (n_queries,).

    Examples
    --------
    >>> probs = [[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]
    >>> res = pool_moments(probs, [[0, 1], [2]], metric="dcg")
    >>> res.mean.tolist(), res.variance.tolist()
    ([0.5, 1.0], [0.25, 0.0])
    """
    m = parse_metric(metric, k, require_moments=True)
    P = probs_iv(probs)
    r = rankings_iv(rankings, P.shape[0]).truncate(m.k)
    return _moments(P, r, m, backend=_backend_iv(backend))


@single_blas_thread
def pool_pair_moments(probs, rankings_a, rankings_b, *, metric, k=None,
                      order_preserving: bool | None = None, backend: str | None = None) -> PoolPairMoments:
    """Exact joint moments of two rankers' metrics for every query of a pool.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)
        Label distribution of every document row.
    rankings_a, rankings_b : Rankings or sequence of sequences
        Rankings of the same queries (same count); they may share, reorder,
        add or drop items.  A shared item has one label.
    metric : str
        ``"dcg"`` or ``"err"``, optionally with ``@k``.
    k : int or None, optional
        Cutoff applied to each list; an item in one list's top ``k`` only
        contributes to that list.
    order_preserving : bool or None, optional
        How to compute the ERR cross moment ``E[L_a L_b | x]``.  When the items
        both lists rank appear in the same relative order in both (an index
        update: ``b`` is ``a`` with documents removed; also additions, identical
        and disjoint lists) it takes one pass over the two lists, ``O(n_a + n_b)``,
        instead of ``O(n_a n_b)``.  ``None`` (default) detects this per query
        (one linear pass over the shared items); ``True`` declares it for every
        query (an error if a query breaks it); ``False`` uses the general
        kernel everywhere.  The results agree to rounding (1e-12 relative).
        Ignored for DCG.
    backend : {"auto", "numpy", "numba"} or None, optional
        Kernel implementation, as in :func:`pool_moments`.

    Returns
    -------
    PoolPairMoments
        Arrays of shape (n_queries,): ``mean_a``, ``mean_b``, ``second_a``,
        ``second_b``, ``cross`` (``E[L_a L_b | x]``), ``delta_variance`` and the
        derived ``delta_mean``.

    Examples
    --------
    >>> probs = [[0.5, 0.5], [0.2, 0.8]]
    >>> res = pool_pair_moments(probs, [[0, 1]], [[1, 0]], metric="err")
    >>> bool(res.delta_mean[0] < 0)
    True
    """
    m = parse_metric(metric, k, require_moments=True)
    P = probs_iv(probs)
    ra = rankings_iv(rankings_a, P.shape[0], name="rankings_a").truncate(m.k)
    rb = rankings_iv(rankings_b, P.shape[0], name="rankings_b").truncate(m.k)
    if ra.n_queries != rb.n_queries:
        raise ValueError(
            f"`rankings_a` and `rankings_b` must cover the same queries; got "
            f"{ra.n_queries} and {rb.n_queries} queries."
        )
    if order_preserving is not None and not isinstance(order_preserving, (bool, np.bool_)):
        raise TypeError(f"`order_preserving` must be True, False or None; got {order_preserving!r}.")
    return _pair_moments(P, ra, rb, m, order_preserving=None if order_preserving is None
                         else bool(order_preserving), backend=_backend_iv(backend))


def _backend_iv(backend):
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"`backend` must be one of {list(BACKENDS)} or None; got {backend!r}.")
    return backend


def query_moments(probs, ranking, *, metric, k=None) -> QueryMoments:
    """Exact moments of a metric for one query.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_grades)
        Row ``z`` is ``p(y_z = . | x, z)``.
    ranking : array-like of shape (n_ranked,)
        Distinct row indices, best first.
    metric : str
        ``"dcg"`` or ``"err"``, optionally with ``@k``.
    k : int or None, optional
        Cutoff; ``None`` means the whole list.

    Returns
    -------
    QueryMoments
        ``mean`` (``E[L | x]``), ``second_moment`` (``E[L^2 | x]``), ``variance``.

    References
    ----------
    .. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
       "Active Evaluation of Ranking Functions based on Graded Relevance."
       ECML PKDD 2012.

    Examples
    --------
    >>> res = query_moments([[0.5, 0.5], [0.5, 0.5]], [0, 1], metric="err")
    >>> res.mean  # R(1) = 1/2: 1/4 + (1/2)(3/4)(1/4)
    0.34375
    """
    m = parse_metric(metric, k, require_moments=True)
    P = probs_iv(probs)
    r = Rankings.from_list([ranking_iv(ranking, P.shape[0])]).truncate(m.k)
    res = _moments(P, r, m)
    return QueryMoments(float(res.mean[0]), float(res.second_moment[0]), float(res.variance[0]))


def pair_moments(probs, ranking_a, ranking_b, *, metric, k=None) -> PairMoments:
    """Exact joint moments of two rankings of the same query.

    Parameters
    ----------
    probs : array-like of shape (n_items, n_grades)
        Label distribution of every item of the query.
    ranking_a, ranking_b : array-like of int
        Distinct item indices, best first.  They may share items (one label per
        item), be disjoint, reordered, or one may drop items of the other.
    metric : str
        ``"dcg"`` or ``"err"``, optionally with ``@k``.
    k : int or None, optional
        Cutoff applied to both lists.

    Returns
    -------
    PairMoments
        ``mean_a``, ``mean_b``, ``second_a``, ``second_b``, ``cross`` =
        ``E[L_a L_b | x]``, ``delta_variance`` = ``Var[L_a - L_b | x]`` and
        ``delta_mean``.

    Examples
    --------
    >>> res = pair_moments([[0.5, 0.5], [0.5, 0.5]], [0, 1], [0, 1], metric="dcg")
    >>> res.delta_variance
    0.0
    """
    m = parse_metric(metric, k, require_moments=True)
    P = probs_iv(probs)
    ra = Rankings.from_list([ranking_iv(ranking_a, P.shape[0], name="ranking_a")]).truncate(m.k)
    rb = Rankings.from_list([ranking_iv(ranking_b, P.shape[0], name="ranking_b")]).truncate(m.k)
    res = _pair_moments(P, ra, rb, m)
    return PairMoments(*(float(getattr(res, f)[0]) for f in
                         ("mean_a", "mean_b", "second_a", "second_b", "cross", "delta_variance")))
