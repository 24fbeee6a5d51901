"""Pay only for what can change the answer: documents that cancel in a comparison.

When two (or more) rankings of the same query are compared, the difference of
their metric values often does not depend on the labels of some of the
documents at all.  Those documents need no judgment; a query's labeling cost
in a comparison is the cost of the documents that *can* change a difference.
The value of every difference, and therefore the variance of any estimator
built from per-query differences, is untouched: only the cost changes.

Additive metrics (DCG@k, P@k, RBP, cumulative gain, ...)
    ``L_s = sum_z d_s(z) g(y_z)`` where ``d_s(z)`` is the discount of the
    position of document ``z`` in ranking ``s`` (0 when ``z`` is not in the
    top ``k`` of ``s``).  A contrast ``sum_s c_s L_s`` (``sum_s c_s = 0``, e.g.
    ``L_a - L_b``) equals ``sum_z (sum_s c_s d_s(z)) g(y_z)``.  If all
    ``d_s(z)`` are equal, ``sum_s c_s d_s(z) = d(z) sum_s c_s = 0``: the label
    ``y_z`` has coefficient exactly zero in every contrast and cannot change
    it.  Conversely, if two systems give ``z`` different discounts, the pairwise
    contrast of those two systems has a nonzero coefficient on ``g(y_z)``; as
    long as ``g`` is not constant over the grade scale, changing ``y_z``
    changes that contrast.  So for additive metrics the rule is exact: ``z``
    needs a label **iff** its discounts (0 when absent) are not all equal.  For
    P@k (constant discount ``1/k`` on the top ``k``) a document in every top
    ``k`` cancels wherever it sits; for DCG and RBP it cancels when it sits at
    the same rank everywhere.

ERR and other cascade metrics
    ``L = sum_i c_i R(y_i) prod_{j<i} (1 - R(y_j))``.  Let two lists ``a`` and
    ``b`` (same length ``n``) agree from position ``t`` on (``a_l = b_l`` for
    ``l >= t``) and contain the same *set* of documents above ``t``.  For
    ``l >= t`` the term of position ``l`` is ``c_l R(y_{a_l}) P_t
    prod_{t<=j<l} (1 - R(y_{a_j}))`` with ``P_t = prod_{z in a[:t]} (1 - R(y_z))``
    -- a product over a *set*, identical for ``b``.  The two terms are the same
    function of the labels, so they cancel for every label vector, and the
    documents of the shared suffix appear in no other term of the difference.
    Documents above ``t`` keep their labels (the prefix product multiplies
    every term below, and reordered documents change their own terms).  If the
    sets above ``t`` differ, the suffix terms differ by the factor ``P_t^a -
    P_t^b`` and nothing cancels.  The shared-suffix rule is sufficient; it is
    the only structural cancellation used here (a label-specific coincidence,
    such as a top-grade document stopping both cascades, is not structural).

Several systems
    For ``k`` candidates against a baseline and for ranking ``k`` systems
    (contrasts to the mean system) a document needs a label iff it can change
    at least one contrast.  ``L_j - Lbar = (1/k) sum_i (L_j - L_i)`` and
    ``L_i - L_j = (L_i - Lbar) - (L_j - Lbar)``, so the union over the
    contrasts to the mean is the union over all pairwise differences; the same
    holds for the contrasts with a baseline (``L_i - L_j = (L_i - L_b) - (L_j -
    L_b)``).  For additive metrics the union is "discounts not all equal"; for
    ERR it is the union of the pairwise shared-suffix rules.

A query with no changeable document has every contrast exactly 0: it is
*determined* and needs no sampling at all (a census stratum with known value
0, see :func:`census_distribution`).

References
----------
.. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
   "Active Evaluation of Ranking Functions based on Graded Relevance."
   ECML PKDD 2012 (labeling costs ``lambda(x)``, cost-aware ``q*``).
.. [2] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
   Comparative Evaluation of Ranking Functions." ICTIR 2016 (Sec. 4: documents
   at identical positions contribute nothing to a difference).
.. [3] O. Chapelle, D. Metzler, Y. Zhang, P. Grinspan. "Expected Reciprocal
   Rank for Graded Relevance." CIKM 2009.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._validation import rankings_iv
from ..metrics.registry import parse_metric
from ..ragged import Rankings, offsets_from_lengths
from .._validation import defensive_iv

__all__ = [
    "ChangeSet",
    "ChangeCosts",
    "CensusDesign",
    "changeable_documents",
    "changeable_costs",
    "census_distribution",
    "discount_table",
]


@dataclass(frozen=True, eq=False)
class ChangeSet:
    """Per query, the documents whose labels can change a comparison.

    Attributes
    ----------
    rows : Rankings
        CSR per query: the document rows that need a label, sorted by row.
    determined : ndarray of shape (n_queries,), bool
        True where no document can change any contrast (every contrast is 0).
    n_pooled : ndarray of shape (n_queries,), int
        Distinct documents in the union of the compared top-``k`` lists (what
        judging the whole query would cost in documents).
    rule : {"additive", "cascade"}
    """

    rows: Rankings
    determined: np.ndarray
    n_pooled: np.ndarray
    rule: str

    @property
    def n_queries(self) -> int:
        return self.rows.n_queries

    @property
    def n_changeable(self) -> np.ndarray:
        """Changeable documents per query, shape ``(n_queries,)``."""
        return self.rows.lengths


@dataclass(frozen=True, eq=False)
class ChangeCosts:
    """Per-query labeling cost counting only changeable documents.

    Attributes
    ----------
    cost : ndarray of shape (n_queries,)
        ``raw / scale``; 0 for determined queries.
    raw : ndarray of shape (n_queries,)
        Sum of the document costs of the changeable documents.
    scale : float
        Raw cost of one unit of ``cost`` (default: the pool mean of ``raw``,
        so ``cost`` has mean 1).
    determined : ndarray of shape (n_queries,), bool
    model : str
    """

    cost: np.ndarray
    raw: np.ndarray
    scale: float
    determined: np.ndarray
    model: str


@dataclass(frozen=True, eq=False)
class CensusDesign:
    """A query sampling distribution that skips determined queries.

    Attributes
    ----------
    q : ndarray of shape (n_queries,)
        Sampling distribution; 0 on determined queries.
    mass : float
        ``sum p(x)`` over the undetermined queries.  With draws from ``q`` and
        weights ``w = p/q``, ``mass * SNIS`` estimates the pool target
        (determined queries contribute exactly 0).
    """

    q: np.ndarray
    mass: float


def discount_table(metric, length: int) -> np.ndarray:
    """Discounts of ranks ``0..length - 1`` of an additive metric (0 past its cutoff).

    Parameters
    ----------
    metric : str or Metric
        An additive metric such as ``"dcg@10"``.
    length : int
        Number of ranks.

    Returns
    -------
    ndarray of shape (length,)

    Examples
    --------
    >>> discount_table("dcg@2", 3).round(4).tolist()
    [1.0, 0.6309, 0.0]
    """
    m = parse_metric(metric)
    if m.family != "additive":
        raise ValueError(f"`metric` {str(m)!r} is not additive over positions; use the cascade rule.")
    pos = np.arange(int(length), dtype=np.float64)
    d = m.discounts(int(length))
    if m.k is not None:
        d = np.where(pos < m.k, d, 0.0)
    return d


def _rankings_list_iv(rankings, n_docs: int) -> list[Rankings]:
    if isinstance(rankings, Rankings) or isinstance(rankings, (str, bytes)) or not hasattr(rankings, "__len__"):
        raise TypeError("`rankings` must be a sequence of at least two rankings (Rankings or lists of lists).")
    if len(rankings) < 2:
        raise ValueError(f"`rankings` must hold at least two rankings to compare; got {len(rankings)}.")
    out = [rankings_iv(r, n_docs, name=f"rankings[{i}]") for i, r in enumerate(rankings)]
    m = out[0].n_queries
    for i, r in enumerate(out[1:], start=1):
        if r.n_queries != m:
            raise ValueError(
                f"`rankings` must rank the same queries; rankings[0] has {m} queries, rankings[{i}] has "
                f"{r.n_queries}."
            )
    return out


def _discounts_iv(discounts) -> np.ndarray:
    d = np.asarray(discounts, dtype=np.float64).reshape(-1)
    if d.size == 0:
        raise ValueError("`discounts` must hold at least one position.")
    bad = np.flatnonzero(~np.isfinite(d))
    if bad.size:
        raise ValueError(f"`discounts` must be finite; position {bad[0]} has {d[bad[0]]!r}.")
    return d


def _n_docs_iv(n_docs) -> int:
    if isinstance(n_docs, bool) or not isinstance(n_docs, numbers.Integral) or n_docs < 1:
        raise ValueError(f"`n_docs` must be a positive integer (number of document rows); got {n_docs!r}.")
    return int(n_docs)


def _unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct keys, by one sort (NumPy's hash-based ``np.unique`` is several times slower on
    millions of int64 keys)."""
    k = np.sort(keys)
    keep = np.ones(k.size, dtype=bool)
    np.not_equal(k[1:], k[:-1], out=keep[1:])
    return k[keep]


def _keys(r: Rankings, n_docs: int) -> np.ndarray:
    return r.query_index() * n_docs + r.items


def _row_owner(tops: list[Rankings], n_docs: int) -> np.ndarray | None:
    """``owner[row]`` = the query listing it (-1 if none), when every listed row belongs to one query and
    rows are numbered query by query (a pool); else None.  Then sets of (query, row) pairs are boolean
    masks over rows, decoded in (query, row) order without sorting keys."""
    owner = np.full(n_docs, -1, dtype=np.int64)
    queries = [r.query_index() for r in tops]
    for r, q in zip(tops, queries):
        owner[r.items] = q
    if not all(np.array_equal(owner[r.items], q) for r, q in zip(tops, queries)):
        return None
    listed = owner[owner >= 0]
    if listed.size > 1 and np.any(listed[1:] < listed[:-1]):
        return None
    return owner


def _additive_needed(tops: list[Rankings], disc: np.ndarray, n_docs: int, owner) -> np.ndarray:
    """Needed documents (discounts, 0 when absent, not all equal): a row mask with ``owner``, else keys
    ``query * n_docs + row``."""
    if owner is not None:
        lo = hi = None
        present = np.zeros(n_docs, dtype=bool)
        for r in tops:
            d = np.zeros(n_docs)
            d[r.items] = disc[r.positions()]
            present[r.items] = True
            if lo is None:
                lo, hi = d, d.copy()
            else:
                np.minimum(lo, d, out=lo)
                np.maximum(hi, d, out=hi)
        return present & (hi != lo)
    keys = np.concatenate([_keys(r, n_docs) for r in tops])
    d = np.concatenate([disc[r.positions()] for r in tops])
    uniq, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    lo = np.full(uniq.size, np.inf)
    hi = np.full(uniq.size, -np.inf)
    np.minimum.at(lo, inv, d)
    np.maximum.at(hi, inv, d)
    absent = counts < len(tops)
    lo = np.where(absent, np.minimum(lo, 0.0), lo)
    hi = np.where(absent, np.maximum(hi, 0.0), hi)
    return uniq[hi != lo]


def _cascade_pair_needed(ra: Rankings, rb: Rankings, n_docs: int, owner) -> np.ndarray:
    """The documents of ``a`` or ``b`` outside their cancelling shared suffix: a row mask with ``owner``,
    else keys."""
    m = ra.n_queries
    na, nb = ra.lengths, rb.lengths
    qa, qb = ra.query_index(), rb.query_index()
    pa, pb = ra.positions(), rb.positions()
    same_len = na == nb
    ea, eb = same_len[qa], same_len[qb]
    # equal-length queries line up entry by entry in the two flat arrays
    mis = ra.items[ea] != rb.items[eb]
    t = np.where(same_len, 0, np.maximum(na, nb)).astype(np.int64)
    # the deepest mismatch of a query is its last one (entries run by query, then position): no ufunc.at
    q_mis, p_mis = qa[ea][mis], pa[ea][mis]
    last = np.flatnonzero(np.append(q_mis[1:] != q_mis[:-1], True)) if q_mis.size else q_mis
    t[q_mis[last]] = p_mis[last] + 1
    # shared suffix cancels only if the documents above it form the same set
    top_a = pa < t[qa]
    top_b = pb < t[qb]
    if owner is not None:
        mark = np.zeros(n_docs, dtype=bool)
        mark[rb.items[top_b]] = True
        hits = mark[ra.items[top_a]]
    else:
        hits = np.isin(_keys(ra, n_docs)[top_a], _keys(rb, n_docs)[top_b], assume_unique=True)
    n_hits = np.bincount(qa[top_a][hits], minlength=m)
    cut = np.where(same_len & (n_hits == t), t, np.maximum(na, nb))
    keep_a, keep_b = pa < cut[qa], pb < cut[qb]
    if owner is not None:
        out = np.zeros(n_docs, dtype=bool)
        out[ra.items[keep_a]] = True
        out[rb.items[keep_b]] = True
        return out
    return _unique(np.concatenate([_keys(ra, n_docs)[keep_a], _keys(rb, n_docs)[keep_b]]))


def changeable_documents(rankings, *, n_docs, metric=None, discounts=None) -> ChangeSet:
    """The documents whose labels can change the difference of compared rankings.

    Parameters
    ----------
    rankings : sequence of Rankings or of sequences of sequences
        ``s >= 2`` rankings of the same queries (document rows, best first):
        two rankers, ``k`` candidates and a baseline, or ``k`` systems to rank.
        A document needs a label iff it can change at least one difference of
        two of them (which is the same as changing at least one contrast with a
        baseline or with the mean system; see the module notes).
    n_docs : int
        Number of document rows (rankings index ``0..n_docs - 1``).
    metric : str or Metric, optional
        ``"dcg@k"`` (additive rule, discounts from the registry) or
        ``"err@k"`` (cascade rule).  Exactly one of ``metric`` and
        ``discounts`` must be given.
    discounts : array-like of shape (k,), optional
        Per-position discounts of any additive metric (e.g. P@k:
        ``np.full(k, 1 / k)``; RBP: ``(1 - phi) * phi ** np.arange(k)``); the
        rankings are cut at ``k = len(discounts)``.

    Returns
    -------
    ChangeSet

    Notes
    -----
    Additive rule: ``z`` is needed iff its discounts over the systems (0 where
    absent) are not all equal -- exact (necessary and sufficient) for any
    non-constant gain.  Cascade rule: per pair, everything above the maximal
    shared suffix is needed, and the suffix too unless the documents above it
    form the same set in both lists.  Proofs in the module docstring.  Work is
    vectorized over queries (sorting by ``(query, row)`` keys); the cascade
    rule loops over the ``s (s - 1) / 2`` pairs of systems.

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.

    Examples
    --------
    Index update: the second list lost document 1, so documents 2 and 3 move
    up; document 0 keeps rank 1 and cancels.

    >>> cs = changeable_documents([[[0, 1, 2, 3]], [[0, 2, 3]]], n_docs=4, metric="dcg@3")
    >>> cs.rows[0].tolist(), cs.determined.tolist()
    ([1, 2, 3], [False])

    ERR: a shared suffix below the last difference cancels when the documents
    above it are the same set.

    >>> changeable_documents([[[0, 1, 2]], [[1, 0, 2]]], n_docs=3, metric="err").rows[0].tolist()
    [0, 1]
    """
    n_docs = _n_docs_iv(n_docs)
    if (metric is None) == (discounts is None):
        raise ValueError("pass exactly one of `metric` (e.g. 'dcg@10', 'err@10') and `discounts`.")
    rs = _rankings_list_iv(rankings, n_docs)
    if discounts is not None:
        disc = _discounts_iv(discounts)
        tops = [r.truncate(disc.size) for r in rs]
        rule = "additive"
    else:
        m = parse_metric(metric, require_moments=True)
        if m.moments != "exact":
            raise ValueError(
                f"`metric` {str(m)!r} has no exact moments: a ratio metric (nDCG, AP) depends on every "
                "judged document of the query, so no document cancels; use an additive or cascade metric.")
        tops = [r.truncate(m.k) for r in rs]
        rule = m.family
        if rule == "additive":
            disc = discount_table(m, int(max(r.lengths.max(initial=0) for r in tops)))
    n_q = tops[0].n_queries
    owner = _row_owner(tops, n_docs)
    if rule == "additive":
        needed = _additive_needed(tops, disc, n_docs, owner)
    else:
        parts = [_cascade_pair_needed(tops[i], tops[j], n_docs, owner)
                 for i in range(len(tops)) for j in range(i + 1, len(tops))]
        needed = np.logical_or.reduce(parts) if owner is not None else _unique(np.concatenate(parts))
    if owner is not None:
        r = np.flatnonzero(needed)
        q = owner[r]
        listed = owner >= 0
        n_pooled = np.bincount(owner[listed], minlength=n_q)
    else:
        q, r = needed // n_docs, needed % n_docs
        pooled = _unique(np.concatenate([_keys(x, n_docs) for x in tops]))
        n_pooled = np.bincount(pooled // n_docs, minlength=n_q)
    rows = Rankings(r, offsets_from_lengths(np.bincount(q, minlength=n_q)))
    return ChangeSet(rows=rows, determined=rows.lengths == 0, n_pooled=n_pooled, rule=rule)


def changeable_costs(doc_costs, changes: ChangeSet, *, scale=None, model: str = "array") -> ChangeCosts:
    """Per-query cost of judging only the changeable documents.

    Parameters
    ----------
    doc_costs : array-like of shape (n_docs,)
        Per-document cost ``c(z) > 0`` (:func:`activerank.design.costs.document_costs`).
    changes : ChangeSet
        From :func:`changeable_documents`.
    scale : float, optional
        Raw cost of one budget unit.  Default: the pool mean of the raw
        costs (normalized costs have mean 1, as
        :func:`activerank.design.costs.query_costs`).  Pass the full-judging
        scale (``query_costs(...).scale``) to keep budgets in the unit of
        judging whole queries, so designs can be compared at equal documents
        judged.
    model : str
        Cost-model name recorded in the result.

    Returns
    -------
    ChangeCosts

    References
    ----------
    .. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
       "Active Evaluation of Ranking Functions based on Graded Relevance."
       ECML PKDD 2012.

    Examples
    --------
    >>> cs = changeable_documents([[[0, 1, 2], [3, 4]], [[0, 2, 1], [3, 4]]], n_docs=5, metric="dcg@3")
    >>> cc = changeable_costs(np.ones(5), cs)
    >>> cc.raw.tolist(), cc.cost.tolist(), cc.determined.tolist()
    ([2.0, 0.0], [2.0, 0.0], [False, True])
    """
    if not isinstance(changes, ChangeSet):
        raise TypeError(f"`changes` must be a ChangeSet (from changeable_documents); got {type(changes).__name__}.")
    c = np.asarray(doc_costs, dtype=np.float64).reshape(-1)
    rows = changes.rows
    if rows.items.size and rows.items.max() >= c.size:
        raise ValueError(
            f"`doc_costs` must have one entry per document row; it has {c.size} but the change set "
            f"refers to row {int(rows.items.max())}."
        )
    bad = np.flatnonzero(~np.isfinite(c) | (c <= 0))
    if bad.size:
        raise ValueError(f"`doc_costs` must be finite and > 0; document row {bad[0]} has {c[bad[0]]!r}.")
    raw = np.bincount(rows.query_index(), c[rows.items], minlength=rows.n_queries)
    if scale is None:
        scale = float(raw.mean())
        if not scale > 0:
            raise ValueError(
                "no document can change the compared values in any query (every difference is exactly 0); "
                "there is nothing to judge."
            )
    elif isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"`scale` must be a positive finite number; got {scale!r}.")
    return ChangeCosts(cost=raw / float(scale), raw=raw, scale=float(scale),
                       determined=changes.determined.copy(), model=f"changeable:{model}")


def census_distribution(sq_error, costs: ChangeCosts, p, *, defensive: float = 0.1) -> CensusDesign:
    """Cost-aware ``q*`` over the undetermined queries; determined ones are a census.

    ``q*(x) ∝ p(x) sqrt(E[(delta - Delta)^2 | x] / lambda(x))`` (Sawade et al.
    2012, Derivation 1) with ``lambda`` the changeable-document cost, mixed
    with ``p`` restricted to the undetermined queries by ``defensive``.  A
    determined query has ``delta(x) = 0`` for every label vector and cost 0:
    it is known without sampling and gets ``q = 0``.

    Parameters
    ----------
    sq_error : array-like of shape (n_queries,)
        ``E[(delta - Delta)^2 | x]`` under the relevance model (summed over the
        contrasts for several systems).
    costs : ChangeCosts
    p : array-like of shape (n_queries,)
        Target distribution over the pool (sums to 1).
    defensive : float in [0, 1]

    Returns
    -------
    CensusDesign

    References
    ----------
    .. [1] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
       "Active Evaluation of Ranking Functions based on Graded Relevance."
       ECML PKDD 2012.
    .. [2] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.

    Examples
    --------
    >>> cs = changeable_documents([[[0, 1], [2, 3]], [[1, 0], [2, 3]]], n_docs=4, metric="dcg")
    >>> d = census_distribution([1.0, 0.0], changeable_costs(np.ones(4), cs), [0.5, 0.5])
    >>> d.q.tolist(), d.mass
    ([1.0, 0.0], 0.5)
    """
    if not isinstance(costs, ChangeCosts):
        raise TypeError(f"`costs` must be ChangeCosts (from changeable_costs); got {type(costs).__name__}.")
    defensive = defensive_iv(defensive)
    sq = np.asarray(sq_error, dtype=np.float64).reshape(-1)
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    m = costs.cost.size
    for name, arr in (("sq_error", sq), ("p", p)):
        if arr.size != m:
            raise ValueError(f"`{name}` must have one entry per query ({m}); got {arr.size}.")
        bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0))
        if bad.size:
            raise ValueError(f"`{name}` must be finite and >= 0; query {bad[0]} has {arr[bad[0]]!r}.")
    live = ~costs.determined
    mass = float(p[live].sum())
    if not mass > 0:
        raise ValueError("every query with positive `p` is determined (all differences are exactly 0); "
                         "nothing to sample.")
    pc = np.where(live, p, 0.0) / mass
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(live & (pc > 0), pc * np.sqrt(sq / np.where(live, costs.cost, 1.0)), 0.0)
    total = score.sum()
    q = pc.copy() if not (np.isfinite(total) and total > 0) else (1 - defensive) * score / total + defensive * pc
    return CensusDesign(q=q, mass=mass)
