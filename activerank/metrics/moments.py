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
from ._blas import single_blas_thread
from .registry import Metric, parse_metric
from ..ragged import PositionMajor, Rankings, listed_once, offsets_from_lengths, segment_ids

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

# Elements (queries x len(b)) of the arrays one step of the ERR cross-moment
# kernel updates: 64K doubles = 512 KB each, so the step's working set stays in
# L2 while the Python overhead per step (~20 us) is amortized over enough work.
_PAIR_BLOCK_ELEMENTS = 1 << 16

# Rows of the probability matrix gathered at a time for per-item statistics.
_STATS_CHUNK = 1 << 15

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


def _grade_values(metric: Metric, n_grades: int) -> np.ndarray:
    return metric.grade_values(n_grades)


def _row_stats(probs: np.ndarray, columns: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Expectations ``E[f_k(y)]`` and the variance of ``f_0(y)`` for every row of ``probs``.

    Parameters
    ----------
    probs : ndarray of shape (n_rows, n_grades)
    columns : ndarray of shape (n_grades, n_cols)
        ``columns[j, k] = f_k(j)``; column 0 is the metric's per-item value.
    rows : ndarray of int, optional
        Only these rows of ``probs``, in this order (gathered chunk by chunk).

    Returns
    -------
    ndarray of shape (n_cols + 1, n_rows or rows.size)
        Rows ``0..n_cols - 1`` hold ``E[f_k]``; the last row holds ``Var[f_0]``.

    Notes
    -----
    The variance is ``sum_j p_j (sum_k p_k (f_0(j) - f_0(k)))^2``: for rows
    summing to one this is ``sum_j p_j (f_0(j) - E f_0)^2``, but it needs no
    per-row broadcast of the mean (slow with a 5-wide inner axis), never
    cancels, and is exactly 0 for one-hot rows.  All work is matrix products and
    contiguous elementwise passes over cache-sized chunks, so a web-scale
    probability matrix (150 MB) is streamed from memory about once.
    """
    n_grades = probs.shape[1]
    n_rows = probs.shape[0] if rows is None else rows.size
    n_cols = columns.shape[1]
    out = np.empty((n_cols + 1, n_rows))
    v = columns[:, 0]
    diff_t = v[None, :] - v[:, None]  # diff_t[k, j] = f_0(j) - f_0(k)
    cols_t = np.ascontiguousarray(columns.T)
    ones = np.ones(n_grades)
    for s in range(0, n_rows, _STATS_CHUNK):
        if rows is None:
            p = probs[s : s + _STATS_CHUNK]
        else:
            # np.take: several times faster than fancy indexing for whole rows
            p = np.take(probs, rows[s : s + _STATS_CHUNK], axis=0)
        e = s + p.shape[0]
        np.matmul(cols_t, p.T, out=out[:n_cols, s:e])
        dev = p @ diff_t
        dev *= dev
        dev *= p
        np.matmul(dev, ones, out=out[n_cols, s:e])
    return out


def _entry_stats(probs: np.ndarray, items: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """:func:`_row_stats` of every ranked entry, shape ``(n_cols + 1, items.size)``.

    The entries' probability rows are gathered chunk by chunk (``np.take``, one
    40-byte row per entry) and reduced while in cache: faster than reducing
    the whole matrix and gathering every statistic (measured 0.17 s vs 0.27 s
    for the joint ERR statistics of 3.8M entries), the same numbers bit for
    bit, and no pool-sized temporaries.
    """
    return _row_stats(probs, columns, items)


def _additive_entry_stats(probs, items, metric: Metric):
    """Mean and variance of the gain of every entry."""
    g = _grade_values(metric, probs.shape[1])
    mu, var = _entry_stats(probs, items, g[:, None])
    return mu, var


@dataclass(frozen=True)
class _CascadeStats:
    """Per-entry expectations of the stopping probability ``R``."""

    r: np.ndarray  # E[R]
    u: np.ndarray  # E[1 - R]  (>= 2**-ymax > 0, so safe to divide by)
    var: np.ndarray  # Var[R]
    r2: np.ndarray | None = None  # E[R^2]
    w: np.ndarray | None = None  # E[(1 - R)^2]
    ru: np.ndarray | None = None  # E[R (1 - R)]


def _cascade_entry_stats(probs, items, metric: Metric, *, joint: bool = False) -> _CascadeStats:
    """Stats of every entry; ``joint`` adds the second-order ones the cross moment needs."""
    rv = _grade_values(metric, probs.shape[1])
    cols = [rv, 1.0 - rv]
    if joint:
        cols += [rv**2, (1.0 - rv) ** 2, rv * (1.0 - rv)]
    st = _entry_stats(probs, items, np.stack(cols, axis=1))
    if not joint:
        return _CascadeStats(r=st[0], u=st[1], var=st[2])
    return _CascadeStats(r=st[0], u=st[1], var=st[5], r2=st[2], w=st[3], ru=st[4])


# --------------------------------------------------------------------------- single-ranking kernels


def _discounts(metric: Metric, max_len: int) -> np.ndarray:
    """Discount of every rank ``0..max_len - 1`` (one table instead of one call per entry)."""
    return metric.discounts(max_len)


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


def _cascade_recursion(pm: PositionMajor, st: _CascadeStats, metric: Metric):
    """ERR mean and variance by the suffix recursion; ``st`` is in position-major order."""
    mean = np.zeros(pm.n_queries)
    variance = np.zeros(pm.n_queries)
    c_all = _discounts(metric, pm.max_len)
    for i in range(pm.max_len - 1, -1, -1):
        lo, hi = pm.bounds[i], pm.bounds[i + 1]
        n = hi - lo
        c = c_all[i]
        r, u, v = st.r[lo:hi], st.u[lo:hi], st.var[lo:hi]
        m_next, v_next = mean[:n], variance[:n]
        variance[:n] = ((c - m_next) ** 2 + v_next) * v + (u * u) * v_next
        mean[:n] = c * r + u * m_next
    return pm.unsort(mean), pm.unsort(variance)


def _cascade_moments(probs, rankings: Rankings, metric: Metric):
    pm = PositionMajor(rankings.offsets)
    st = _cascade_entry_stats(probs, rankings.items[pm.flat_order()], metric)
    return _cascade_recursion(pm, st, metric)


@single_blas_thread
def _moments(probs: np.ndarray, rankings: Rankings, metric: Metric, *,
             backend: str | None = None) -> PoolMoments:
    """Validated-input kernel: ``rankings`` already truncated at ``metric.k``."""
    _require_exact(metric)
    if kernel_backend(backend, rankings.items.size) == "numba" and not metric.definition.binary:
        mean, variance = _numba_moments(probs, rankings, metric)
    elif metric.family == "additive":
        mean, variance = _additive_moments(probs, rankings, metric)
    else:
        mean, variance = _cascade_moments(probs, rankings, metric)
    return PoolMoments(mean=mean, second_moment=variance + mean * mean, variance=variance)


def _cascade_columns(metric: Metric, n_grades: int) -> np.ndarray:
    """``R, 1 - R, R^2, (1 - R)^2, R (1 - R)`` of every grade, shape (5, n_grades)."""
    rv = _grade_values(metric, n_grades)
    return np.ascontiguousarray(np.stack([rv, 1.0 - rv, rv**2, (1.0 - rv) ** 2, rv * (1.0 - rv)]))


def _numba_moments(probs, rankings: Rankings, metric: Metric):
    nb = _load_numba()
    disc = _discounts(metric, int(rankings.lengths.max(initial=0)))
    if metric.family == "additive":
        return nb.additive_single(probs, rankings.items, rankings.offsets,
                                  _grade_values(metric, probs.shape[1]), disc)
    return nb.cascade_single(probs, rankings.items, rankings.offsets,
                             _cascade_columns(metric, probs.shape[1]), disc)


# --------------------------------------------------------------------------- pair kernels


def _match(ra: Rankings, rb: Rankings, n_docs: int):
    """Entries of ``ra`` and ``rb`` that rank the same item for the same query.

    Returns ``(ia, ib)``, flat entry indices into ``ra.items`` and ``rb.items``,
    ordered by ``ib``.
    """
    qa, qb = ra.query_index(), rb.query_index()
    if ra.items.size and listed_once(ra.items, n_docs):
        # every row occurs at most once in ``ra``: an O(n) lookup table row -> entry
        where_a = np.full(n_docs, -1, dtype=np.int64)
        where_a[ra.items] = np.arange(ra.items.size)
        ja = where_a[rb.items]
        hit = ja >= 0
        hit[hit] = qa[ja[hit]] == qb[hit]
        ib = np.flatnonzero(hit)
        return ja[ib], ib
    # rows shared across queries: match on (query, row) keys by sorting
    ka = qa * n_docs + ra.items
    kb = qb * n_docs + rb.items
    _, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    order = np.argsort(ib, kind="stable")
    return ia[order], ib[order]


def _identical(ra: Rankings, rb: Rankings) -> np.ndarray:
    """Queries whose two (truncated) rankings are the same list."""
    same = ra.lengths == rb.lengths
    if same.all():
        # common case (e.g. a ranker compared with itself): no masking needed
        differs = np.bincount(ra.query_index()[ra.items != rb.items], minlength=ra.n_queries) > 0
        return ~differs
    ea, eb = same[ra.query_index()], same[rb.query_index()]
    # restricted to equal-length queries, the two flat arrays line up entry by entry
    diff = ra.items[ea] != rb.items[eb]
    differs = np.bincount(ra.query_index()[ea][diff], minlength=ra.n_queries) > 0
    return same & ~differs


def _additive_pair(probs, ra: Rankings, rb: Rankings, metric: Metric):
    mu_a, va = _additive_entry_stats(probs, ra.items, metric)
    mu_b, vb = _additive_entry_stats(probs, rb.items, metric)
    disc = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))))
    da, db = disc[ra.positions()], disc[rb.positions()]
    qa, qb = ra.query_index(), rb.query_index()
    m = ra.n_queries
    mean_a = np.bincount(qa, da * mu_a, minlength=m)
    mean_b = np.bincount(qb, db * mu_b, minlength=m)
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


def _block_entries(offsets: np.ndarray, lengths: np.ndarray, width: int):
    """Flat entry index of every (query, rank) cell of a padded block, and its mask.

    ``offsets``/``lengths`` are those of the block's queries only: the work is
    linear in the block, never in the pool.  Padding cells hold entry 0.
    """
    cols = np.arange(width)
    mask = cols[None, :] < lengths[:, None]
    idx = np.where(mask, offsets[:, None] + cols[None, :], 0)
    return idx, mask


def _cascade_cross_block(sa: _CascadeStats, sb: _CascadeStats, off_a, len_a, off_b, len_b, pos_ab, c_all):
    """``E[L_a L_b]`` for one block of queries, sorted by ``len(a)`` descending.

    Walks down list ``a`` (one step per rank ``i``, vectorized over the block's
    queries and over all ranks ``l`` of ``b``) keeping, per query,

    * ``S_i = prod_{j<i} E[1 - R(a_j)]`` (precomputed for the whole block);
    * ``V(l) = E[P^a_i P^b_l] / S_i``: the prefix products of ``b``, with the
      factor ``h = E[(1-R)^2] / E[1-R]^2`` for every item already above both
      ``a_i`` and ``b_l`` (``V <= 1``, so nothing overflows);
    * ``F(l) = c_l E[R(b_l)]``, or ``c_l E[R(1-R)] / E[1-R]`` once ``b_l`` is
      above ``a_i`` in ``a``.

    With ``z = a_i`` at rank ``p`` of ``b`` (``p = nb`` if absent) the row sum
    ``sum_l c_l E[R(a_i) P^a_i R(b_l) P^b_l]`` is
    ``S_i (E[R_z] sum_{l<p} V F + E[R_z^2] c_p V(p) + E[R_z(1-R_z)]/E[1-R_z] sum_{l>p} V F)``;
    stepping to ``i + 1`` multiplies ``V(l > p)`` by ``h_z`` and switches ``F(p)``.
    Each step is five passes over a (queries x nb) array; everything that does
    not depend on ``V`` is computed for all steps at once.  A spare column
    ``l = nb`` (``F = 0``, ``c = 0``) absorbs the updates of items absent from
    ``b``, so no step needs a mask.
    """
    q_n = len_a.size
    na = int(len_a.max(initial=0))
    nb = int(len_b.max(initial=0))
    if na == 0 or nb == 0:
        return np.zeros(q_n)
    w = nb + 1
    cb = np.append(c_all[:nb], 0.0)
    eb, in_b = _block_entries(off_b, len_b, nb)
    # V(l) at i = 0: exclusive prefix products of E[1 - R] down b
    V = np.ones((q_n, w))
    if nb > 1:
        np.cumprod(np.where(in_b[:, :-1], sb.u[eb[:, :-1]], 1.0), axis=1, out=V[:, 1:nb])
    F = np.zeros((q_n, w))
    F[:, :nb] = np.where(in_b, cb[:nb] * sb.r[eb], 0.0)

    # per-step quantities, transposed to (na, queries) so step i reads contiguous rows
    ea, in_a = _block_entries(off_a, len_a, na)
    ea, in_a = ea.T, in_a.T
    p = np.where(in_a, np.minimum(pos_ab[ea], nb), nb)
    a_u = np.where(in_a, sa.u[ea], 1.0)
    S = np.ones((na, q_n))
    if na > 1:
        np.cumprod(a_u[:-1], axis=0, out=S[1:])
    ci = (c_all[:na] * in_a.T).T * S  # c_i S_i, zero past the end of a
    a_ratio = sa.ru[ea] / a_u
    coef_left = ci * sa.r[ea]
    coef_mid = ci * sa.r2[ea] * cb[p]
    coef_right = ci * a_ratio
    h = (sa.w[ea] / (a_u * a_u))[:, :, None]
    flat = np.arange(q_n)[None, :] * w + p  # (i, query) -> flat index of (query, p)
    f_new = cb[p] * a_ratio  # F(p) after a_i = b_p enters a's prefix (0 in the spare column)
    active = np.searchsorted(-len_a, -np.arange(na), side="left")

    left = np.zeros((na, q_n))
    mid = np.zeros((na, q_n))
    right = np.zeros((na, q_n))
    Z = np.empty((q_n, w))
    mask = np.empty((q_n, w), dtype=bool)
    Vf, Zf, Ff = V.reshape(-1), Z.reshape(-1), F.reshape(-1)
    ones = np.ones(w)
    lidx = np.arange(w)
    for i in range(na):
        n = active[i]
        Vn, Zn, Mn = V[:n], Z[:n], mask[:n]
        fi = flat[i, :n]
        np.multiply(Vn, F[:n], out=Zn)
        total = Zn @ ones
        np.greater(lidx, p[i, :n, None], out=Mn)
        r_sum = np.einsum("ij,ij->i", Zn, Mn)
        right[i, :n] = r_sum
        left[i, :n] = total - r_sum - Zf[fi]
        mid[i, :n] = Vf[fi]
        np.multiply(Vn, h[i, :n], out=Vn, where=Mn)
        Ff[fi] = f_new[i, :n]
    # sums of nonnegative terms: clip the rounding of total - right - Z(p)
    np.maximum(left, 0.0, out=left)
    return (coef_left * left + coef_mid * mid + coef_right * right).sum(axis=0)


def _order_consistent(ia: np.ndarray, ib: np.ndarray, qb: np.ndarray, m: int) -> np.ndarray:
    """Queries whose shared items appear in the same relative order in both lists.

    ``ia, ib`` are matched entries ordered by ``ib`` (as :func:`_match` returns
    them).  Queries are laid out in the same order in both flat arrays, so the
    shared items of a query keep their order exactly when ``ia`` increases
    along its matches: a decrease can only happen inside one query.
    """
    ok = np.ones(m, dtype=bool)
    if ia.size > 1:
        down = np.flatnonzero(ia[1:] < ia[:-1])
        ok[qb[ib[down + 1]]] = False
    return ok


def _subset_entries(offsets: np.ndarray, queries: np.ndarray):
    """Flat entry indices of the selected queries (in that order) and their CSR offsets."""
    lengths = offsets[queries + 1] - offsets[queries]
    sub_off = np.zeros(queries.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=sub_off[1:])
    idx = np.arange(int(sub_off[-1]), dtype=np.int64)
    idx += np.repeat(offsets[queries] - sub_off[:-1], lengths)
    return idx, sub_off


def _merged_slots(off_a, off_b, ja, jb):
    """Position of both lists' entries in one merged sequence per query.

    The shared items of every query appear in the same order in both lists
    (``ja, jb``: matched entries, increasing in both).  Then one sequence lists
    every item of ``a`` and ``b`` once with both lists' orders preserved: the
    items only in ``b`` go right before the next shared item (or at the end).
    For the ``t``-th shared item, at ranks ``(i, l)``, the position is
    ``i + l - t``; an item only in ``a`` at rank ``i`` after ``s`` shared items
    sits at ``i + l_{s-1} + 1 - s`` (``i`` if ``s = 0``); one only in ``b`` at
    rank ``l`` after ``t`` shared items at ``l + i_t - t`` (``i_t = len(a)``
    past the last shared item).

    Returns
    -------
    slot_a : ndarray of shape (n_a,), slot_b : ndarray of shape (n_b,)
        Position of every entry inside its query's merged sequence (a shared
        item gets the same position from both lists).
    length : ndarray of shape (n_queries,)
        Length of every merged sequence, ``len(a) + len(b) - shared``.
    """
    m = off_a.size - 1
    len_a = np.diff(off_a)
    n_a, n_b = int(off_a[-1]), int(off_b[-1])
    qa, qb = segment_ids(off_a), segment_ids(off_b)
    pos_a = np.arange(n_a, dtype=np.int64) - off_a[qa]
    pos_b = np.arange(n_b, dtype=np.int64) - off_b[qb]
    if jb.size == n_b:  # b is a with items removed (an index update): the merged list is a
        pos_b[jb] = pos_a[ja]
        return pos_a, pos_b, len_a, qa, qb
    if ja.size == n_a:  # a is b with items removed
        pos_a[ja] = pos_b[jb]
        return pos_a, pos_b, np.diff(off_b), qa, qb
    n_shared = np.bincount(qb[jb], minlength=m)
    first = offsets_from_lengths(n_shared)  # index of every query's first shared item in ja/jb
    # shared items above each entry, within its query
    shared = np.zeros(max(n_a, n_b), dtype=bool)
    shared[ja] = True
    s_a = np.cumsum(shared[:n_a]) - shared[:n_a] - first[qa]
    shared[:n_b] = False
    shared[jb] = True
    s_b = np.cumsum(shared[:n_b]) - shared[:n_b] - first[qb]
    i_sh, l_sh = pos_a[ja], pos_b[jb]

    slot_a = pos_a
    below = np.flatnonzero(s_a > 0)  # entries below a shared item (shared entries are set after)
    sb_ = s_a[below]
    slot_a[below] += l_sh[first[qa[below]] + sb_ - 1] + 1 - sb_
    slot_a[ja] = i_sh + l_sh - s_a[ja]
    nxt = len_a[qb]
    above = np.flatnonzero(s_b < n_shared[qb])  # entries of b above some shared item
    nxt[above] = i_sh[first[qb[above]] + s_b[above]]
    slot_b = pos_b
    slot_b += nxt - s_b
    slot_b[jb] = slot_a[ja]
    return slot_a, slot_b, len_a + np.diff(off_b) - n_shared, qa, qb


def _cascade_pair_ordered(probs, ra: Rankings, rb: Rankings, ja, jb, metric: Metric, c_all):
    """All pair moments in one pass when the shared items keep their order (index updates).

    Walks the merged sequence of :func:`_merged_slots` from the bottom, vectorized
    over queries (position-major), keeping for both lists the suffix value's
    mean and variance (the recursion of :func:`_cascade_recursion`, an item
    absent from a list leaving its suffix unchanged) and the cross moment
    ``X = E[S^a S^b]`` (``S_t = c R_t + (1 - R_t) S_{t+1}`` for an item of the
    list, ``R_t`` independent of everything below it):

    * item only in ``a``: ``X <- c_a r B + u X``;
    * item only in ``b``: ``X <- c_b r A + u X``;
    * shared item: ``X <- c_a c_b E[R^2] + E[R(1-R)] (c_a B + c_b A) + E[(1-R)^2] X``,

    with ``A, B`` the suffix means below.  ``O(|Y| (n_a + n_b))``, every term
    nonnegative.  Returns ``mean_a, mean_b, var_a, var_b, cross``.
    """
    slot_a, slot_b, length, qa, qb = _merged_slots(ra.offsets, rb.offsets, ja, jb)
    pm = PositionMajor(offsets_from_lengths(length))
    rank = np.empty(pm.n_queries, dtype=np.int64)
    rank[pm.order] = np.arange(pm.n_queries)
    n = int(pm.bounds[-1])
    # every entry's place in the position-major merged arrays
    at_a = pm.bounds[slot_a] + rank[qa]
    at_b = pm.bounds[slot_b] + rank[qb]
    rows = np.empty(n, dtype=np.int64)
    rows[at_a] = ra.items
    rows[at_b] = rb.items
    ca = np.zeros(n)
    ca[at_a] = c_all[ra.positions()]
    cb = np.zeros(n)
    cb[at_b] = c_all[rb.positions()]
    in_a = np.zeros(n, dtype=bool)
    in_a[at_a] = True
    in_b = np.zeros(n, dtype=bool)
    in_b[at_b] = True
    del slot_a, slot_b, at_a, at_b, qa, qb
    st = _cascade_entry_stats(probs, rows, metric, joint=True)
    del rows
    A, B, VA, VB, X = (np.zeros(pm.n_queries) for _ in range(5))
    tmp = np.empty(pm.n_queries)
    i = pm.max_len - 1
    while i >= 0:
        # positions whose entries fill one chunk: coefficients for them at once
        j = max(int(np.searchsorted(pm.bounds, pm.bounds[i + 1] - _STATS_CHUNK, side="left")), 0)
        j = min(j, i)
        lo0, hi0 = pm.bounds[j], pm.bounds[i + 1]
        co = _ordered_coefficients(st, ca, cb, in_a, in_b, slice(lo0, hi0))
        for t in range(i, j - 1, -1):
            lo, hi = pm.bounds[t] - lo0, pm.bounds[t + 1] - lo0
            k = hi - lo
            a_, b_, va_, vb_, x_, tm = A[:k], B[:k], VA[:k], VB[:k], X[:k], tmp[:k]
            # cross first: it needs the means below this item
            x_ *= co.kw[lo:hi]
            x_ += co.k0[lo:hi]
            np.multiply(co.ka[lo:hi], b_, out=tm)
            x_ += tm
            np.multiply(co.kb[lo:hi], a_, out=tm)
            x_ += tm
            # each list: ((c - E S')^2 + Var S') Var R + u^2 Var S' and c r + u E S', as in
            # _cascade_recursion; an absent item has c r = 0, Var R = 0, u = 1 (exact no-op)
            for c, v, u2, u, mr, mean, var in ((co.ca, co.va, co.ua2, co.ua, co.ma, a_, va_),
                                               (co.cb, co.vb, co.ub2, co.ub, co.mb, b_, vb_)):
                np.subtract(c[lo:hi], mean, out=tm)
                tm *= tm
                tm += var
                tm *= v[lo:hi]
                var *= u2[lo:hi]
                var += tm
                mean *= u[lo:hi]
                mean += mr[lo:hi]
        i = j - 1
    return pm.unsort(A), pm.unsort(B), pm.unsort(VA), pm.unsort(VB), pm.unsort(X)


@dataclass(frozen=True)
class _OrderedCoefficients:
    k0: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    kw: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    va: np.ndarray
    vb: np.ndarray
    ua: np.ndarray
    ub: np.ndarray
    ua2: np.ndarray
    ub2: np.ndarray
    ma: np.ndarray
    mb: np.ndarray


def _ordered_coefficients(st: _CascadeStats, ca, cb, in_a, in_b, sl) -> _OrderedCoefficients:
    """Per-item coefficients of the merged recursion for the entries in ``sl``."""
    r, u, var, r2, w, ru = st.r[sl], st.u[sl], st.var[sl], st.r2[sl], st.w[sl], st.ru[sl]
    ca, cb, in_a, in_b = ca[sl], cb[sl], in_a[sl], in_b[sl]
    both = in_a & in_b
    ma, mb = ca * r, cb * r
    ua, ub = np.where(in_a, u, 1.0), np.where(in_b, u, 1.0)
    return _OrderedCoefficients(
        k0=ca * cb * r2,
        ka=np.where(both, ca * ru, ma),
        kb=np.where(both, cb * ru, mb),
        kw=np.where(both, w, u),
        ca=ca, cb=cb,
        va=np.where(in_a, var, 0.0), vb=np.where(in_b, var, 0.0),
        ua=ua, ub=ub, ua2=ua * ua, ub2=ub * ub, ma=ma, mb=mb,
    )


def _cascade_pair(probs, ra: Rankings, rb: Rankings, metric: Metric, order_preserving=None):
    m = ra.n_queries
    ia, ib = _match(ra, rb, probs.shape[0])
    c_all = _discounts(metric, int(max(ra.lengths.max(initial=0), rb.lengths.max(initial=0))) + 1)
    qb = rb.query_index()
    ordered = _ordered_queries(ia, ib, qb, m, order_preserving)
    if ordered.all():
        res = _cascade_pair_ordered(probs, ra, rb, ia, ib, metric, c_all)
    elif not ordered.any():
        res = _cascade_pair_general(probs, ra, rb, ia, ib, metric, c_all)
    else:
        res = [np.empty(m) for _ in range(5)]
        for sel, kernel in ((ordered, _cascade_pair_ordered), (~ordered, _cascade_pair_general)):
            queries = np.flatnonzero(sel)
            sa, ea = _subset(ra, queries)
            sb, eb = _subset(rb, queries)
            keep = sel[qb[ib]]
            # matched entries of the selected queries, renumbered into the subsets
            new_a = np.full(ra.items.size, -1, dtype=np.int64)
            new_a[ea] = np.arange(ea.size)
            new_b = np.full(rb.items.size, -1, dtype=np.int64)
            new_b[eb] = np.arange(eb.size)
            part = kernel(probs, sa, sb, new_a[ia[keep]], new_b[ib[keep]], metric, c_all)
            for out, x in zip(res, part):
                out[queries] = x
    return _cascade_pair_finish(*res)


def _subset(r: Rankings, queries: np.ndarray):
    """Rankings of the selected queries and the flat index of their entries in ``r``."""
    idx, offsets = _subset_entries(r.offsets, queries)
    return Rankings(r.items[idx], offsets), idx


def _cascade_pair_general(probs, ra: Rankings, rb: Rankings, ia, ib, metric: Metric, c_all):
    """Pair moments for any two lists: the recursions of each, and the block cross kernel."""
    pa, pb = PositionMajor(ra.offsets), PositionMajor(rb.offsets)
    oa, ob = pa.flat_order(), pb.flat_order()
    # joint stats in CSR order for the cross moment; the recursion wants them position-major
    sa = _cascade_entry_stats(probs, ra.items, metric, joint=True)
    sb = _cascade_entry_stats(probs, rb.items, metric, joint=True)
    mean_a, var_a = _cascade_recursion(pa, _CascadeStats(sa.r[oa], sa.u[oa], sa.var[oa]), metric)
    mean_b, var_b = _cascade_recursion(pb, _CascadeStats(sb.r[ob], sb.u[ob], sb.var[ob]), metric)
    m = ra.n_queries
    cross = np.zeros(m)
    # rank of each a-entry inside b (clipped to the block width later)
    pos_ab = np.full(ra.items.size, np.iinfo(np.int64).max)
    pos_ab[ia] = rb.positions()[ib]
    # Blocks of queries with similar len(b) keep the padding small; inside a
    # block, queries sorted by len(a) make the active ones a prefix at every step.
    len_a, len_b = ra.lengths, rb.lengths
    size_b = np.maximum(len_b, 1)
    order = np.argsort(-size_b, kind="stable")
    start = 0
    while start < m:
        width = int(size_b[order[start]])
        n_q = max(1, _PAIR_BLOCK_ELEMENTS // width)
        block = order[start : start + n_q]
        block = block[np.argsort(-len_a[block], kind="stable")]
        cross[block] = _cascade_cross_block(sa, sb, ra.offsets[block], len_a[block], rb.offsets[block],
                                            len_b[block], pos_ab, c_all)
        start += n_q
    return mean_a, mean_b, var_a, var_b, cross


def _match_tables(ra: Rankings, rb: Rankings, ia, ib):
    """Rank in ``b`` of every a-entry (-1 if absent) and which b-entries are in ``a``."""
    pos_ab = np.full(ra.items.size, -1, dtype=np.int64)
    pos_ab[ia] = rb.positions()[ib]
    shared_b = np.zeros(rb.items.size, dtype=bool)
    shared_b[ib] = True
    return pos_ab, shared_b


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


def _cascade_pair_finish(mean_a, mean_b, var_a, var_b, cross):
    cov = cross - mean_a * mean_b
    dvar = np.maximum(var_a + var_b - 2.0 * cov, 0.0)
    return mean_a, mean_b, var_a, var_b, cov, dvar


def _ordered_queries(ia, ib, qb, m, order_preserving) -> np.ndarray:
    """Queries for the one-pass cross moment (see ``pool_pair_moments(order_preserving=)``)."""
    if order_preserving is False:
        return np.zeros(m, dtype=bool)
    ok = _order_consistent(ia, ib, qb, m)
    if order_preserving and not ok.all():
        q = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            "`order_preserving`=True requires the documents both rankings list to appear in the same "
            f"order in both; query {q} lists them in a different order (pass None to detect per query)."
        )
    return ok


@single_blas_thread
def _pair_moments(probs, ra: Rankings, rb: Rankings, metric: Metric, *,
                  order_preserving: bool | None = None, backend: str | None = None) -> PoolPairMoments:
    """Validated-input kernel: both rankings already truncated at ``metric.k``."""
    _require_exact(metric)
    fast = kernel_backend(backend, ra.items.size + rb.items.size) == "numba"
    if metric.family == "additive":
        kernel = _numba_additive_pair if fast else _additive_pair
        mean_a, mean_b, var_a, var_b, cov, dvar = kernel(probs, ra, rb, metric)
    elif metric.definition.binary:
        # a 0/1 stopping probability can be certain (E[1 - R] = 0): a division-free cross moment
        from ._binary_cascade import binary_cascade_pair  # imports this module's helpers
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
