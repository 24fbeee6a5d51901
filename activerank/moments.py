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
  over items: prefix products ``U_a(i) U_b(l)`` of ``E[1 - R]``, a 2-d prefix
  product over shared items of ``E[(1 - R)^2] / E[1 - R]^2`` (computed by two
  cumulative products), and a correction for the two items at ``(i, l)``.
  ``O(|Y| (n_a + n_b) + n_a n_b)``, batched over queries in padded chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import probs_iv, ranking_iv, rankings_iv
from .metrics import Metric, parse_metric
from .ragged import PositionMajor, Rankings

__all__ = [
    "QueryMoments",
    "PairMoments",
    "PoolMoments",
    "PoolPairMoments",
    "query_moments",
    "pair_moments",
    "pool_moments",
    "pool_pair_moments",
]

# Upper bound on elements of one padded (queries x n_a x n_b) block in the
# ERR cross-moment kernel: keeps peak memory near 100 MB whatever the pool size.
_PAIR_BLOCK_ELEMENTS = 2_000_000


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


def _grade_values(metric: Metric, n_grades: int) -> np.ndarray:
    return metric.definition.gain(np.arange(n_grades, dtype=np.float64), n_grades - 1)


def _additive_item_stats(probs: np.ndarray, metric: Metric):
    g = _grade_values(metric, probs.shape[1])
    mu = probs @ g
    var = np.einsum("ij,ij->i", probs, (g[None, :] - mu[:, None]) ** 2)
    return mu, var


@dataclass(frozen=True)
class _CascadeStats:
    """Per-item expectations of the stopping probability ``R``."""

    r: np.ndarray  # E[R]
    r2: np.ndarray  # E[R^2]
    var: np.ndarray  # Var[R]
    u: np.ndarray  # E[1 - R]  (>= 2**-ymax > 0, so safe to divide by)
    w: np.ndarray  # E[(1 - R)^2]
    ru: np.ndarray  # E[R (1 - R)]


def _cascade_item_stats(probs: np.ndarray, metric: Metric) -> _CascadeStats:
    rv = _grade_values(metric, probs.shape[1])
    r = probs @ rv
    return _CascadeStats(
        r=r,
        r2=probs @ rv**2,
        var=np.einsum("ij,ij->i", probs, (rv[None, :] - r[:, None]) ** 2),
        u=probs @ (1.0 - rv),
        w=probs @ (1.0 - rv) ** 2,
        ru=probs @ (rv * (1.0 - rv)),
    )


# --------------------------------------------------------------------------- single-ranking kernels


def _additive_moments(probs, rankings: Rankings, metric: Metric):
    mu, var = _additive_item_stats(probs, metric)
    d = metric.definition.discount(rankings.positions())
    q = rankings.query_index()
    m = rankings.n_queries
    mean = np.bincount(q, d * mu[rankings.items], minlength=m)
    variance = np.bincount(q, d * d * var[rankings.items], minlength=m)
    return mean, variance


def _cascade_moments(probs, rankings: Rankings, metric: Metric, stats=None):
    st = _cascade_item_stats(probs, metric) if stats is None else stats
    pm = PositionMajor(rankings.offsets)
    mean = np.zeros(pm.n_queries)
    variance = np.zeros(pm.n_queries)
    discount = metric.definition.discount
    for i in range(pm.max_len - 1, -1, -1):
        z = rankings.items[pm.entries(i)]
        n = z.size
        c = discount(np.float64(i))
        m_next, v_next = mean[:n], variance[:n]
        variance[:n] = ((c - m_next) ** 2 + v_next) * st.var[z] + (st.u[z] ** 2) * v_next
        mean[:n] = c * st.r[z] + st.u[z] * m_next
    return pm.unsort(mean), pm.unsort(variance)


def _moments(probs: np.ndarray, rankings: Rankings, metric: Metric) -> PoolMoments:
    """Validated-input kernel: ``rankings`` already truncated at ``metric.k``."""
    if metric.family == "additive":
        mean, variance = _additive_moments(probs, rankings, metric)
    else:
        mean, variance = _cascade_moments(probs, rankings, metric)
    return PoolMoments(mean=mean, second_moment=variance + mean * mean, variance=variance)


# --------------------------------------------------------------------------- pair kernels


def _match(ra: Rankings, rb: Rankings, n_docs: int):
    """Entries of ``ra`` and ``rb`` that rank the same item for the same query."""
    ka = ra.query_index() * n_docs + ra.items
    kb = rb.query_index() * n_docs + rb.items
    _, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    return ia, ib


def _identical(ra: Rankings, rb: Rankings) -> np.ndarray:
    """Queries whose two (truncated) rankings are the same list."""
    same = ra.lengths == rb.lengths
    ea, eb = same[ra.query_index()], same[rb.query_index()]
    # restricted to equal-length queries, the two flat arrays line up entry by entry
    diff = ra.items[ea] != rb.items[eb]
    differs = np.bincount(ra.query_index()[ea][diff], minlength=ra.n_queries) > 0
    return same & ~differs


def _additive_pair(probs, ra: Rankings, rb: Rankings, metric: Metric):
    mu, var = _additive_item_stats(probs, metric)
    disc = metric.definition.discount
    da, db = disc(ra.positions()), disc(rb.positions())
    qa, qb = ra.query_index(), rb.query_index()
    m = ra.n_queries
    va, vb = var[ra.items], var[rb.items]
    mean_a = np.bincount(qa, da * mu[ra.items], minlength=m)
    mean_b = np.bincount(qb, db * mu[rb.items], minlength=m)
    var_a = np.bincount(qa, da * da * va, minlength=m)
    var_b = np.bincount(qb, db * db * vb, minlength=m)
    ia, ib = _match(ra, rb, probs.shape[0])
    cov = np.bincount(qa[ia], da[ia] * db[ib] * va[ia], minlength=m)
    # Var[L_a - L_b] directly as sum_z (d_a(z) - d_b(z))^2 v_z: no cancellation
    coef_a = da.copy()
    coef_a[ia] -= db[ib]
    only_b = np.ones(rb.items.size, dtype=bool)
    only_b[ib] = False
    dvar = np.bincount(qa, coef_a**2 * va, minlength=m) + np.bincount(
        qb[only_b], (db**2 * vb)[only_b], minlength=m
    )
    return mean_a, mean_b, var_a, var_b, cov, dvar


def _pad(values, rankings: Rankings, queries: np.ndarray, width: int, fill):
    """Per-entry ``values`` of the given queries as a padded (n, width) block, and its mask."""
    mask = np.arange(width)[None, :] < rankings.lengths[queries][:, None]
    idx = rankings.offsets[queries][:, None] + np.arange(width)[None, :]
    out = np.full((queries.size, width), fill, dtype=np.asarray(values).dtype)
    out[mask] = values[idx[mask]]
    return out, mask


def _cascade_cross_block(st: _CascadeStats, ra, rb, queries, pos_ab, pos_ba, discount):
    """E[L_a L_b] for one padded block of queries (see module docstring)."""
    na = int(ra.lengths[queries].max(initial=0))
    nb = int(rb.lengths[queries].max(initial=0))
    if na == 0 or nb == 0:
        return np.zeros(queries.size)
    A, mA = _pad(ra.items, ra, queries, na, -1)
    B, mB = _pad(rb.items, rb, queries, nb, -1)
    ia = np.arange(na)
    lb = np.arange(nb)

    def gather(x, items, mask, fill):
        return np.where(mask, x[np.maximum(items, 0)], fill)

    uA, uB = gather(st.u, A, mA, 1.0), gather(st.u, B, mB, 1.0)
    # exclusive prefix products of E[1 - R] down each list
    Ua = np.cumprod(np.concatenate([np.ones((queries.size, 1)), uA[:, :-1]], axis=1), axis=1)
    Ub = np.cumprod(np.concatenate([np.ones((queries.size, 1)), uB[:, :-1]], axis=1), axis=1)
    wa = np.where(mA, discount(ia.astype(np.float64))[None, :], 0.0) * Ua
    wb = np.where(mB, discount(lb.astype(np.float64))[None, :], 0.0) * Ub

    # position of a_i in b (nb if absent) and of b_l in a (na if absent)
    pab = np.minimum(_pad(pos_ab, ra, queries, na, nb)[0], nb)
    pba = np.minimum(_pad(pos_ba, rb, queries, nb, na)[0], na)

    # 2-d prefix product of E[(1-R)^2]/E[1-R]^2 over items above both (i, l)
    G = np.ones((queries.size, na + 1, nb + 1))
    qq, ii = np.nonzero(pab < nb)
    z = A[qq, ii]
    G[qq, ii + 1, pab[qq, ii] + 1] = st.w[z] / st.u[z] ** 2
    M = np.cumprod(np.cumprod(G, axis=1), axis=2)[:, :na, :nb]

    ra_ratio = gather(st.ru / st.u, A, mA, 0.0)
    rb_ratio = gather(st.ru / st.u, B, mB, 0.0)
    fa = np.where(pab[:, :, None] < lb[None, None, :], ra_ratio[:, :, None], gather(st.r, A, mA, 0.0)[:, :, None])
    fb = np.where(pba[:, None, :] < ia[None, :, None], rb_ratio[:, None, :], gather(st.r, B, mB, 0.0)[:, None, :])
    S = fa * fb
    same = pab[:, :, None] == lb[None, None, :]
    S = np.where(same, gather(st.r2, A, mA, 0.0)[:, :, None], S)
    return np.einsum("qi,qil,ql->q", wa, M * S, wb)


def _cascade_pair(probs, ra: Rankings, rb: Rankings, metric: Metric):
    st = _cascade_item_stats(probs, metric)
    mean_a, var_a = _cascade_moments(probs, ra, metric, st)
    mean_b, var_b = _cascade_moments(probs, rb, metric, st)
    m = ra.n_queries
    ia, ib = _match(ra, rb, probs.shape[0])
    # rank of each a-entry inside b (n_b sentinel added per block) and vice versa
    pos_ab = np.full(ra.items.size, np.iinfo(np.int64).max)
    pos_ab[ia] = rb.positions()[ib]
    pos_ba = np.full(rb.items.size, np.iinfo(np.int64).max)
    pos_ba[ib] = ra.positions()[ia]
    cross = np.zeros(m)
    # Blocks of queries with similar list lengths keep the padding small.
    size = np.maximum(np.maximum(ra.lengths, rb.lengths), 1)
    order = np.argsort(-size, kind="stable")
    start = 0
    while start < m:
        width = int(size[order[start]])
        n_q = max(1, _PAIR_BLOCK_ELEMENTS // (width * width))
        block = order[start : start + n_q]
        cross[block] = _cascade_cross_block(
            st, ra, rb, block, pos_ab, pos_ba, metric.definition.discount
        )
        start += n_q
    cov = cross - mean_a * mean_b
    dvar = np.maximum(var_a + var_b - 2.0 * cov, 0.0)
    return mean_a, mean_b, var_a, var_b, cov, dvar


def _pair_moments(probs, ra: Rankings, rb: Rankings, metric: Metric) -> PoolPairMoments:
    """Validated-input kernel: both rankings already truncated at ``metric.k``."""
    kernel = _additive_pair if metric.family == "additive" else _cascade_pair
    mean_a, mean_b, var_a, var_b, cov, dvar = kernel(probs, ra, rb, metric)
    second_a = var_a + mean_a**2
    second_b = var_b + mean_b**2
    cross = cov + mean_a * mean_b
    # identical lists: delta is 0 for every label vector, so report that exactly
    same = _identical(ra, rb)
    cross = np.where(same, second_a, cross)
    dvar = np.where(same, 0.0, dvar)
    return PoolPairMoments(mean_a, mean_b, second_a, second_b, cross, dvar)


# --------------------------------------------------------------------------- public API


def pool_moments(probs, rankings, *, metric, k=None) -> PoolMoments:
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
    return _moments(P, r, m)


def pool_pair_moments(probs, rankings_a, rankings_b, *, metric, k=None) -> PoolPairMoments:
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
    return _pair_moments(P, ra, rb, m)


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
