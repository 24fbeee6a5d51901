"""Metric values of judged rankings: one vectorized kernel per metric family.

:func:`pool_metric_values` evaluates every query of a (partly) labeled pool in
one pass over rank positions; :func:`metric_value` is the one-ranking wrapper.
The kernel :func:`label_matrix_values` works on a matrix of labels -- one column
per label vector -- so the Monte-Carlo moments
(:mod:`activerank.metrics.approximate`) evaluate many sampled label vectors with
the same code that computes the true values.

Ratio metrics (nDCG, AP, recall) also need the labels of the query's *judged*
documents (their normalizer: ideal DCG, number of relevant documents).  By
default that is every document of the query's pool, including documents a
ranking leaves out (an index update): ``trec_eval``'s normalizer with complete
qrels, and what every estimator of activerank targets
(:func:`normalizer_documents`).  Ranked documents outside the judged set count as
non-relevant, as in ``trec_eval``; a query without a relevant judged document
has the value 0 (``trec_eval``'s convention).
"""

from __future__ import annotations

import numpy as np

from .._validation import labels_iv, n_grades_from_ymax, rankings_iv
from ..ragged import PositionMajor, Rankings, offsets_from_lengths, segment_ids
from .registry import Metric, parse_metric

__all__ = ["label_matrix_values", "metric_value", "normalizer_documents", "pool_metric_values"]


# --------------------------------------------------------------------------- helpers


def _segment_sum(weights: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-segment column sums of ``weights`` (n_entries, S) over CSR ``offsets`` -> (n_segments, S)."""
    n_seg = offsets.size - 1
    if weights.shape[1] == 1:
        # one label vector: summed in entry order, as the values have always been computed
        out = np.bincount(segment_ids(offsets), weights[:, 0], minlength=n_seg)[:, None]
        return out.astype(np.float64, copy=False)  # bincount of no entries is integer
    from scipy.sparse import csr_matrix  # lazily: only Monte-Carlo label matrices get here

    # a 0/1 matrix with one row per segment: sparse-times-dense streams each row of weights once
    n = int(offsets[-1])
    summer = csr_matrix((np.ones(n), np.arange(n), offsets), shape=(n_seg, n))
    return np.asarray(summer @ weights, dtype=np.float64)


def _entry_index(judged: Rankings, rankings: Rankings, n_docs: int) -> np.ndarray:
    """Index into ``judged.items`` of every entry of ``rankings`` (same query, same row); -1 if absent."""
    if rankings.items.size == 0:
        return np.zeros(0, dtype=np.int64)
    n = max(int(n_docs), 1)
    kj = judged.query_index() * n + judged.items
    kr = rankings.query_index() * n + rankings.items
    out = np.full(kr.size, -1, dtype=np.int64)
    if kj.size == 0:
        return out
    order = np.argsort(kj, kind="stable")
    sorted_keys = kj[order]
    pos = np.minimum(np.searchsorted(sorted_keys, kr), sorted_keys.size - 1)
    found = sorted_keys[pos] == kr
    out[found] = order[pos[found]]
    return out


def union_rankings(lists: list[Rankings], n_docs: int) -> Rankings:
    """Per-query union of several rankings, in order of first appearance (list by list)."""
    m = lists[0].n_queries
    if len(lists) == 1:
        return lists[0]
    q = np.concatenate([r.query_index() for r in lists])
    rows = np.concatenate([r.items for r in lists])
    # query-major order, list order inside a query, rank order inside a list
    src = np.concatenate([np.full(r.items.size, i) for i, r in enumerate(lists)])
    rank = np.concatenate([r.positions() for r in lists])
    order = np.lexsort((rank, src, q))
    q, rows = q[order], rows[order]
    key = q * max(n_docs, 1) + rows
    _, first = np.unique(key, return_index=True)
    keep = np.sort(first)
    return Rankings(rows[keep], offsets_from_lengths(np.bincount(q[keep], minlength=m)))


def _untiled_query(union: Rankings, n_docs: int | None) -> int:
    """-1 if the (per query distinct) rows of ``union`` are exactly the consecutive blocks of a pool of
    ``n_docs`` rows -- every query lists all its documents -- else the first query that does not."""
    lengths = union.lengths
    lo = np.repeat(union.offsets[:-1], lengths)
    outside = (union.items < lo) | (union.items >= lo + np.repeat(lengths, lengths))
    if outside.any():
        return int(union.query_index()[np.flatnonzero(outside)[0]])
    if n_docs is not None and int(union.offsets[-1]) != n_docs:
        return union.n_queries - 1
    return -1


def normalizer_documents(metric: Metric, lists: list[Rankings], offsets=None, n_docs: int | None = None,
                         *, name: str = "rankings") -> Rankings:
    """Per query, the rows a ratio metric's normalizer is defined over (its judged documents).

    ``depth=None`` (default): every row of the query's pool -- rows
    ``offsets[q]:offsets[q + 1]`` -- including rows a ranking leaves out, listed
    after each ranking's top ``k``.  Without ``offsets`` the pool is read off the
    rankings when they list every document of each query (complete rankings of
    a pool); otherwise the normalizer is unknown and this raises.  ``depth=D``:
    the union of the rankings' top ``max(D, k)`` (``trec_eval``'s judged pool).
    """
    tops = [r.truncate(metric.k) for r in lists]
    depth = metric.params.get("depth")
    # the union's keys need a bound above every row
    bound = max([int(r.items.max(initial=-1)) + 1 for r in lists] + [n_docs or 0]
                + ([int(offsets[-1])] if offsets is not None else []))
    if depth is not None:
        return union_rankings(tops + [r.truncate(max(depth, metric.k or 0)) for r in lists], bound)
    if offsets is None:
        union = union_rankings(list(lists), bound)
        bad = _untiled_query(union, n_docs)
        if bad >= 0:
            raise ValueError(
                f"`{name}` do not list every document of each query (seen at query {bad}), so the normalizer "
                f"of {str(metric)!r} -- over every document of the query's pool, including those a ranking "
                "leaves out -- is unknown: pass the pool as `offsets` (e.g. offsets=pool), or `judged`.")
        offsets = union.offsets
    all_docs = Rankings(np.arange(offsets[-1], dtype=np.int64), np.asarray(offsets, dtype=np.int64))
    return union_rankings(tops + [all_docs], max(bound, int(offsets[-1])))


def pool_offsets_iv(offsets, n_queries: int, n_docs: int | None = None) -> np.ndarray | None:
    """The pool's query offsets (or ``None``): an array or an object carrying ``offsets``."""
    if offsets is None:
        return None
    if hasattr(offsets, "offsets") and not isinstance(offsets, np.ndarray):
        offsets = offsets.offsets
    off = np.asarray(offsets)
    if off.ndim != 1 or off.size < 1 or not np.issubdtype(off.dtype, np.integer) or off[0] != 0 \
            or np.any(np.diff(off) < 0):
        raise ValueError("`offsets` must be a non-decreasing 1-d integer array starting at 0 (or a pool).")
    if off.size - 1 != n_queries:
        raise ValueError(f"`offsets` describes {off.size - 1} queries but the rankings cover {n_queries}.")
    if n_docs is not None and int(off[-1]) != n_docs:
        raise ValueError(f"`offsets` describes {int(off[-1])} documents but there are {n_docs} document rows.")
    return off.astype(np.int64)


# --------------------------------------------------------------------------- kernels


def _additive(metric: Metric, n_grades: int, r: Rankings, Y: np.ndarray) -> np.ndarray:
    g = metric.grade_values(n_grades)[Y]
    d = metric.discounts(int(r.lengths.max(initial=0)))[r.positions()]
    return _segment_sum(d[:, None] * g, r.offsets)


def _cascade(metric: Metric, n_grades: int, r: Rankings, Y: np.ndarray) -> np.ndarray:
    # walk the ranks, carrying the probability that the user is still looking
    rel = metric.grade_values(n_grades)[Y]
    pm = PositionMajor(r.offsets)
    c = metric.discounts(pm.max_len)
    still = np.ones((pm.n_queries, Y.shape[1]))
    value = np.zeros((pm.n_queries, Y.shape[1]))
    for i in range(pm.max_len):
        e = pm.entries(i)
        n = e.size
        value[:n] += c[i] * rel[e] * still[:n]
        still[:n] *= 1.0 - rel[e]
    return pm.unsort(value)


def _ideal_dcg(metric: Metric, n_grades: int, judged: Rankings, YJ: np.ndarray) -> np.ndarray:
    """Ideal DCG@k of the judged documents, from counts (no sort).

    With ``C_v`` the number of judged documents whose gain is >= ``v``, the
    ideal ranking puts them in the top ``C_v`` ranks, so ``IDCG = sum_v (v -
    v') D(C_v)`` over the distinct positive gains ``v`` (``v'`` the next lower
    one, 0 below the lowest), ``D(n)`` the summed discount of the first
    ``min(n, k)`` ranks.  Gains need not grow with the grade (``gain={...}``).
    """
    gains = metric.grade_values(n_grades)
    cap = int(judged.lengths.max(initial=0))
    if metric.k is not None:
        cap = min(cap, metric.k)
    cum = np.zeros(cap + 1)
    np.cumsum(metric.discounts(cap), out=cum[1:])
    ideal = np.zeros((judged.n_queries, YJ.shape[1]))
    G = gains[YJ]
    below = 0.0
    for v in np.unique(gains[gains > 0]):
        count = _segment_sum((G >= v).astype(np.float64), judged.offsets)
        ideal += (v - below) * cum[np.minimum(count.astype(np.int64), cap)]
        below = v
    return ideal


def _ndcg(metric, n_grades, r, Y, judged, YJ):
    dcg = _additive(metric, n_grades, r, Y)
    ideal = _ideal_dcg(metric, n_grades, judged, YJ)
    return np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


def _average_precision(metric, n_grades, r, Y, judged, YJ):
    rel = metric.grade_values(n_grades)[Y]  # 0/1
    q = r.query_index()
    cs = np.cumsum(rel, axis=0)
    start = _exclusive_starts(cs, rel, r)
    precision = (cs - start[q]) / (r.positions() + 1.0)[:, None]
    num = _segment_sum(rel * precision, r.offsets)
    n_rel = _segment_sum(metric.grade_values(n_grades)[YJ], judged.offsets)
    return np.divide(num, n_rel, out=np.zeros_like(num), where=n_rel > 0)


def _recall(metric, n_grades, r, Y, judged, YJ):
    rel = metric.grade_values(n_grades)  # 0/1
    num = _segment_sum(rel[Y], r.offsets)
    n_rel = _segment_sum(rel[YJ], judged.offsets)
    return np.divide(num, n_rel, out=np.zeros_like(num), where=n_rel > 0)


def _exclusive_starts(cs: np.ndarray, rel: np.ndarray, r: Rankings) -> np.ndarray:
    """Running total of ``cs`` just before each query's first entry, shape (n_queries, S)."""
    first = r.offsets[:-1]
    out = np.zeros((r.n_queries, cs.shape[1]))
    nonempty = r.lengths > 0
    f = first[nonempty]
    out[nonempty] = cs[f] - rel[f]
    return out


def _custom(metric, n_grades, r, Y):
    fn = metric.definition.function
    m, n_cols = r.n_queries, Y.shape[1]
    depth = int(r.lengths.max(initial=0))
    q, pos = r.query_index(), r.positions()
    labels = np.zeros((m, n_cols, depth), dtype=np.int64)
    labels[q, :, pos] = Y
    valid = np.zeros((m, 1, depth), dtype=bool)
    valid[q, 0, pos] = True
    out = np.asarray(fn(labels, np.broadcast_to(valid, labels.shape)), dtype=np.float64)
    if out.shape != (m, n_cols):
        raise ValueError(
            f"custom metric {metric.name!r} returned shape {out.shape} for labels of shape {labels.shape}; "
            f"expected {(m, n_cols)} (one value per list: reduce over the last axis).")
    if not np.isfinite(out).all():
        raise ValueError(f"custom metric {metric.name!r} returned a NaN or infinite value.")
    return out


def label_matrix_values(metric: Metric, n_grades: int, rankings: Rankings, Y: np.ndarray,
                        judged: Rankings | None = None, YJ: np.ndarray | None = None) -> np.ndarray:
    """Metric values for many label vectors at once (validated-input kernel).

    Parameters
    ----------
    metric : Metric
    n_grades : int
        Size of the grade scale ``0..n_grades - 1``.
    rankings : Rankings
        Rankings already truncated at ``metric.k``.
    Y : ndarray of int, shape (rankings.items.size, S)
        Grade of every ranked entry under each of ``S`` label vectors.
    judged, YJ : Rankings and ndarray of shape (judged.items.size, S), optional
        The judged documents of every query and their grades; required by
        ratio metrics (normalizers).

    Returns
    -------
    ndarray of shape (n_queries, S)
    """
    family = metric.family
    if family == "additive":
        return _additive(metric, n_grades, rankings, Y)
    if family == "cascade":
        return _cascade(metric, n_grades, rankings, Y)
    if family == "custom":
        return _custom(metric, n_grades, rankings, Y)
    if judged is None or YJ is None:
        raise ValueError(f"metric {str(metric)!r} needs the judged documents' labels.")
    kernel = {"ndcg": _ndcg, "ap": _average_precision, "r": _recall}[metric.name]
    return kernel(metric, n_grades, rankings, Y, judged, YJ)


# --------------------------------------------------------------------------- public API


def pool_metric_values(labels, rankings, *, metric, k=None, ymax, judged=None, offsets=None) -> np.ndarray:
    """Metric value of every query of a labeled pool.

    Parameters
    ----------
    labels : array-like of shape (n_docs,)
        Integer grades in ``0..ymax`` for every document row (unjudged rows: 0).
    rankings : Rankings or sequence of sequences
        Per-query rankings of document rows, best first (full lists or already
        cut at the metric's cutoff).
    metric : str, ir_measures measure, Metric or MetricDef
        E.g. ``"dcg@10"``, ``"err@10"``, ``"nDCG@10"``, ``"p(rel=2)@5"``,
        ``"ap"``, ``"ndcg_cut_10"`` (``docs/metrics.md``).
    k : int or None, optional
        Cutoff (alternative to the ``@k`` suffix).
    ymax : int
        Top grade of the label scale.
    judged : Rankings or sequence of sequences, optional
        Ratio metrics only (nDCG, AP, recall): the judged document rows of every
        query, whose labels give the normalizer (ideal DCG, number of relevant
        documents); ranked rows outside it count as non-relevant.  Default
        (``depth=None``): every document of the query's pool, including those a
        ranking leaves out -- the quantity every estimator of activerank
        targets (:func:`normalizer_documents`).
    offsets : array-like of shape (n_queries + 1,) or a pool, optional
        Ratio metrics: the pool's query offsets (query ``q`` owns rows
        ``offsets[q]:offsets[q + 1]``), e.g. ``offsets=pool``.  Needed when a
        ranking does not list every document of its query (an index update,
        rankings cut at ``k``); without it the pool is read off complete
        rankings, and incomplete ones raise.

    Returns
    -------
    values : ndarray of shape (n_queries,)

    Examples
    --------
    >>> labels = [2, 0, 1, 0]
    >>> pool_metric_values(labels, [[1, 0, 2, 3]], metric="rr", ymax=2).tolist()
    [0.5]
    >>> pool_metric_values(labels, [[1, 0, 2, 3]], metric="ap", ymax=2).tolist()   # (1/2 + 2/3) / 2
    [0.5833333333333333]
    >>> pool_metric_values(labels, [[1, 0]], metric="p@2", ymax=2).tolist()
    [0.5]

    A ranking that lost document 0 is normalized against the whole query:

    >>> pool_metric_values(labels, [[1, 2, 3]], metric="ap", ymax=2, offsets=[0, 4]).tolist()   # (1/2) / 2
    [0.25]
    """
    m = parse_metric(metric, k)
    n_grades = n_grades_from_ymax(ymax)
    labels = labels_iv(labels, n_grades)
    r = rankings_iv(rankings, labels.size)
    if m.family != "ratio":
        if judged is not None:
            raise ValueError(f"`judged` is only used by ratio metrics (ndcg, ap, r), not by {str(m)!r}.")
        top = r.truncate(m.k)
        return label_matrix_values(m, n_grades, top, labels[top.items][:, None])[:, 0]
    off = pool_offsets_iv(offsets, r.n_queries, labels.size)
    if judged is None:
        J = normalizer_documents(m, [r], off, labels.size)
    else:
        J = rankings_iv(judged, labels.size, name="judged")
        if J.n_queries != r.n_queries:
            raise ValueError(f"`judged` must cover the same queries as `rankings`; got {J.n_queries} and "
                             f"{r.n_queries} queries.")
    top = r.truncate(m.k)
    Y = labels[top.items]
    if judged is not None:
        Y = np.where(_entry_index(J, top, labels.size) >= 0, Y, 0)
    return label_matrix_values(m, n_grades, top, Y[:, None], J, labels[J.items][:, None])[:, 0]


def metric_value(labels, ranking, *, metric, k=None, ymax, judged=None) -> float:
    """Metric value of one labeled ranking.

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Integer grade of every item of the query, in ``0..ymax``.
    ranking : array-like of shape (n_ranked,)
        Distinct item indices, best first (not necessarily all items).
    metric : str, ir_measures measure, Metric or MetricDef
        E.g. ``"dcg"``, ``"err@10"``, ``"nDCG@10"``, ``"rr"``.
    k : int or None, optional
        Cutoff; ``None`` evaluates the whole list.
    ymax : int
        Top grade of the label scale (ERR's ``R(y) = (2^y - 1) / 2^ymax`` unless
        the metric fixes ``ymax``).
    judged : array-like of int, optional
        Ratio metrics: the judged items (default: every item of ``labels``,
        ranked or not).

    Returns
    -------
    value : float

    References
    ----------
    .. [1] O. Chapelle, D. Metzler, Y. Zhang, P. Grinspan. "Expected reciprocal
       rank for graded relevance." CIKM 2009.

    Examples
    --------
    >>> round(metric_value([0, 2, 1], [1, 2, 0], metric="dcg", ymax=2), 6)
    3.63093
    >>> metric_value([2, 0], [0, 1], metric="err", ymax=2)
    0.75
    >>> metric_value([2, 0], [0, 1], metric="err(ymax=4)", ymax=2)   # ir_measures' ERR: gdeval's fixed scale
    0.1875
    >>> metric_value([1, 1, 0], [0, 2], metric="ndcg(gain=linear)", ymax=2)  # item 1 counts in the ideal
    0.6131471927654584
    """
    arr = np.asarray(ranking)
    if arr.ndim != 1:
        raise ValueError(f"`ranking` must be a 1-d sequence of item indices; got shape {arr.shape}.")
    J = None
    if judged is not None:
        J = [np.asarray(judged).reshape(-1)]
    n_items = np.asarray(labels).reshape(-1).size
    return float(pool_metric_values(labels, [arr], metric=metric, k=k, ymax=ymax, judged=J,
                                    offsets=None if J is not None else [0, n_items])[0])
