"""Moments of any metric under a relevance model, exact or Monte Carlo, and the documents it needs judged.

The sampling design needs, per query ``x``, ``E[L | x]`` and ``E[L^2 | x]`` (one
ranker) or the joint moments of ``L_a`` and ``L_b`` (two rankers) under
independent labels ``y_z ~ p(y | x, z)``.  Additive and cascade metrics have
exact closed forms (:mod:`activerank.metrics.moments`).  Ratio metrics (nDCG,
AP) and user-defined metrics do not: their value depends on the labels of every
judged document through a normalizer.  For those, :func:`predicted_moments`
draws ``n_samples`` label vectors for every judged document of every query from
``p(y | x, z)`` -- one matrix per block of queries, vectorized over documents
and samples -- evaluates the metric with the same kernel that computes true
values (:func:`activerank.metrics.values.label_matrix_values`) and averages.
In a comparison both rankings see the *same* sampled labels (a shared document
has one label), so ``Var[L_a - L_b | x]`` is estimated directly.

The estimate of the mean metric stays consistent whatever these approximate
moments are (they only shape the sampling distribution q); their quality
matters for efficiency only -- ``benchmarks/approximate_moments.py`` measures it.

:func:`judged_documents` says which documents a drawn query must have judged
for a metric: the evaluated rankings' top ``k`` for additive, cascade and custom
metrics; for ratio metrics additionally every document that can enter the
normalizer -- all documents of the query (``depth=None``, the default), or the
union of the rankings' top ``depth`` (``trec_eval``'s judged pool: unjudged
documents count as non-relevant).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import probs_iv, rankings_iv
from ..ragged import Rankings, offsets_from_lengths
from .moments import PoolMoments, PoolPairMoments, _moments, _pair_moments
from .registry import Metric, parse_metric
from .values import _entry_index, label_matrix_values, normalizer_documents, pool_offsets_iv
from .values import union_rankings as _union

__all__ = [
    "DEFAULT_N_SAMPLES",
    "judged_documents",
    "monte_carlo_moments",
    "monte_carlo_pair_moments",
    "predicted_moments",
    "predicted_pair_moments",
]

DEFAULT_N_SAMPLES = 256

# Sampled labels (documents x samples) held at once per block of queries: 2M
# cells = 16 MB of int64 labels, plus a few float arrays of the same size.
_MC_CELLS = 1 << 21

_METHODS = ("auto", "exact", "monte_carlo")


# --------------------------------------------------------------------------- judged documents


def _rankings_list_iv(rankings, n_docs, name="rankings") -> list[Rankings]:
    if isinstance(rankings, Rankings):
        return [rankings]
    if isinstance(rankings, (list, tuple)) and rankings and all(isinstance(r, Rankings) for r in rankings):
        out = [rankings_iv(r, n_docs, name=f"{name}[{i}]") for i, r in enumerate(rankings)]
        if len({r.n_queries for r in out}) > 1:
            raise ValueError(f"`{name}` must all cover the same queries; got {[r.n_queries for r in out]} queries.")
        return out
    return [rankings_iv(rankings, n_docs, name=name)]


def _max_row(rankings) -> int:
    if isinstance(rankings, Rankings):
        return int(rankings.items.max(initial=-1))
    if isinstance(rankings, (list, tuple)) and rankings and all(isinstance(r, Rankings) for r in rankings):
        return max(int(r.items.max(initial=-1)) for r in rankings)
    try:
        return int(max((int(np.max(r, initial=-1)) for r in rankings), default=-1))
    except (TypeError, ValueError):
        raise TypeError("`rankings` must be a Rankings object, a list of them, or a sequence of index "
                        "sequences.") from None


def judged_documents(rankings, metric, *, k=None, offsets=None, n_docs=None) -> Rankings:
    """Per query, the document rows the metric needs judged to evaluate the given rankings.

    Parameters
    ----------
    rankings : Rankings or sequence of Rankings
        The evaluated ranking(s) of every query (one ranker, or all rankers of a
        comparison: they share the judged set), full lists or cut at ``k``.
    metric : str, Metric or MetricDef
    k : int or None, optional
        Cutoff (alternative to ``@k``).
    offsets : array-like of shape (n_queries + 1,), optional
        The pool's query offsets (query ``q`` owns rows
        ``offsets[q]:offsets[q + 1]``), or a pool/LETOR object with ``.offsets``.
        Used by ratio metrics with ``depth=None``: every document of the query
        can enter the ideal ranking (nDCG) or be relevant (AP, recall), so every
        one must be judged.  Without ``offsets`` the pool is read off the
        rankings when they list every document of each query (``n_docs`` then
        needed), otherwise this raises.
    n_docs : int, optional
        Number of document rows (default: from ``offsets`` or the rankings).

    Returns
    -------
    Rankings
        Judged rows of every query: first each ranking's top ``k`` (ranking by
        ranking, first appearance kept), then -- for ratio metrics -- the rest of
        the judging pool (top ``depth`` of each ranking, or the query's remaining
        documents in row order).

    Notes
    -----
    * ``dcg``, ``err``, ``p``, ``rr``, ``rbp``, custom metrics: the union of the
      rankings' top ``k``.
    * ``ndcg``: the ideal DCG@k takes the ``k`` best grades among the judged
      documents, and any unjudged document could hold one, so with
      ``depth=None`` every document of the query is judged.  ``depth=D`` judges
      the union of the rankings' top ``max(D, k)`` and treats other documents
      as non-relevant (``trec_eval``'s pooled qrels); the metric then measures
      nDCG against that pool.
    * ``ap``, ``r``: the denominator counts the relevant judged documents, same
      rule.

    Examples
    --------
    >>> from activerank.ragged import Rankings
    >>> a = Rankings.from_list([[2, 0, 1], [4, 3]])
    >>> b = Rankings.from_list([[0, 1, 2], [3, 4]])
    >>> [x.tolist() for x in judged_documents([a, b], "dcg@1").to_list()]
    [[2, 0], [4, 3]]
    >>> [x.tolist() for x in judged_documents(a, "ndcg(gain=linear)@1", offsets=[0, 3, 6]).to_list()]
    [[2, 0, 1], [4, 3, 5]]
    >>> [x.tolist() for x in judged_documents(a, "ndcg(gain=linear,depth=2)@1").to_list()]
    [[2, 0], [4, 3]]
    """
    m = parse_metric(metric, k)
    if m.family == "ratio" and m.params.get("depth") is None and offsets is None and n_docs is None:
        raise ValueError(f"judged_documents of {str(m)!r} needs the pool: pass `offsets` (e.g. offsets=pool), "
                         "every document of a query enters its normalizer.")
    if n_docs is None:
        n_docs = int(_offsets_total(offsets)) if offsets is not None else _max_row(rankings) + 1
    lists = _rankings_list_iv(rankings, n_docs)
    off = pool_offsets_iv(offsets, lists[0].n_queries)
    if m.family != "ratio":
        return _union([r.truncate(m.k) for r in lists], n_docs)
    return normalizer_documents(m, lists, off, n_docs)


def _offsets_total(offsets) -> int:
    off = offsets.offsets if hasattr(offsets, "offsets") and not isinstance(offsets, np.ndarray) else offsets
    off = np.asarray(off).reshape(-1)
    return int(off[-1]) if off.size else 0


# --------------------------------------------------------------------------- Monte Carlo


def _n_samples_iv(n_samples) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
        raise TypeError(f"`n_samples` must be an integer >= 2, got {n_samples!r}.")
    if n_samples < 2:
        raise ValueError(f"`n_samples` must be >= 2, got {n_samples}.")
    return int(n_samples)


def _slice(r: Rankings, start: int, stop: int) -> Rankings:
    """Rankings of the contiguous queries ``start:stop``."""
    lo, hi = r.offsets[start], r.offsets[stop]
    return Rankings(r.items[lo:hi], r.offsets[start : stop + 1] - lo)


def _blocks(judged: Rankings, tops: list[Rankings], n_samples: int):
    """Contiguous query ranges whose sampled label matrices hold about ``_MC_CELLS`` cells."""
    per_query = judged.lengths + sum(r.lengths for r in tops) + 1
    cum = np.cumsum(per_query * n_samples)
    m = judged.n_queries
    start = 0
    while start < m:
        base = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, base + _MC_CELLS, side="right"))
        stop = min(max(stop, start + 1), m)
        yield start, stop
        start = stop


def _sample_labels(probs: np.ndarray, rows: np.ndarray, n_samples: int, rng) -> np.ndarray:
    """One grade per (row, sample) by inversion of the row's CDF; shape (rows.size, n_samples)."""
    # single precision halves the memory traffic; its 2^-24 resolution moves no probability measurably
    cdf = np.cumsum(probs[rows], axis=1).astype(np.float32)
    u = rng.random((rows.size, n_samples), dtype=np.float32)
    y = np.zeros((rows.size, n_samples), dtype=np.int8)
    for g in range(probs.shape[1] - 1):
        y += u >= cdf[:, g : g + 1]
    return y


def _mc_values(probs, tops: list[Rankings], judged: Rankings, metric: Metric, n_samples: int, rng):
    """Yield ``(start, stop, [values (n_block, S) per ranking])`` block by block."""
    n_grades = probs.shape[1]
    n_docs = probs.shape[0]
    for start, stop in _blocks(judged, tops, n_samples):
        jb = _slice(judged, start, stop)
        yj = _sample_labels(probs, jb.items, n_samples, rng)
        out = []
        for r in tops:
            rb = _slice(r, start, stop)
            idx = _entry_index(jb, rb, n_docs)
            y = np.where((idx >= 0)[:, None], yj[np.maximum(idx, 0)], 0)
            out.append(label_matrix_values(metric, n_grades, rb, y, jb, yj))
        yield start, stop, out


def _judged_iv(judged, metric, full, n_docs, offsets=None) -> Rankings:
    """The judged set of the Monte-Carlo moments: given, or the metric's (the normalizer's for ratio metrics)."""
    if judged is None:
        if metric.family == "ratio":
            return normalizer_documents(metric, full, pool_offsets_iv(offsets, full[0].n_queries, n_docs), n_docs)
        return _union([r.truncate(metric.k) for r in full], n_docs)
    if offsets is not None:
        raise ValueError("pass `judged` or `offsets`, not both.")
    J = rankings_iv(judged, n_docs, name="judged")
    if J.n_queries != full[0].n_queries:
        raise ValueError(f"`judged` must cover the same queries as the rankings; got {J.n_queries} and "
                         f"{full[0].n_queries} queries.")
    return J


def _mc_single(probs, top, judged, metric, n_samples, rng) -> PoolMoments:
    m = top.n_queries
    mean, second, variance = np.zeros(m), np.zeros(m), np.zeros(m)
    for start, stop, (L,) in _mc_values(probs, [top], judged, metric, n_samples, rng):
        mu = L.mean(axis=1)
        mean[start:stop] = mu
        second[start:stop] = np.mean(L * L, axis=1)
        variance[start:stop] = np.mean((L - mu[:, None]) ** 2, axis=1)
    return PoolMoments(mean=mean, second_moment=second, variance=variance)


def _mc_pair(probs, ta, tb, judged, metric, n_samples, rng) -> PoolPairMoments:
    m = ta.n_queries
    out = {f: np.zeros(m) for f in ("mean_a", "mean_b", "second_a", "second_b", "cross", "delta_variance")}
    for start, stop, (La, Lb) in _mc_values(probs, [ta, tb], judged, metric, n_samples, rng):
        s = slice(start, stop)
        out["mean_a"][s] = La.mean(axis=1)
        out["mean_b"][s] = Lb.mean(axis=1)
        out["second_a"][s] = np.mean(La * La, axis=1)
        out["second_b"][s] = np.mean(Lb * Lb, axis=1)
        out["cross"][s] = np.mean(La * Lb, axis=1)
        D = La - Lb
        out["delta_variance"][s] = np.mean((D - D.mean(axis=1, keepdims=True)) ** 2, axis=1)
    return PoolPairMoments(**out)


# --------------------------------------------------------------------------- public API


def _common_iv(probs, metric, k, method):
    m = parse_metric(metric, k, require_moments=True)
    if method not in _METHODS:
        raise ValueError(f"`method` must be one of {list(_METHODS)}, got {method!r}.")
    if method == "exact":
        m = parse_metric(m, require_moments="exact")
    P = probs_iv(probs)
    use_mc = method == "monte_carlo" or m.moments != "exact"
    return m, P, use_mc


def predicted_moments(probs, rankings, metric, *, k=None, judged=None, offsets=None, method="auto", rng=None,
                      n_samples=DEFAULT_N_SAMPLES) -> PoolMoments:
    """``E[L | x]``, ``E[L^2 | x]`` and ``Var[L | x]`` of every query, for any metric.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)
        Row ``z`` is ``p(y_z = . | x, z)``.
    rankings : Rankings or sequence of sequences
        Per-query rankings (full lists, or cut at the cutoff).
    metric : str, Metric or MetricDef
    k : int or None, optional
        Cutoff (alternative to ``@k``).
    judged : Rankings, optional
        Ratio metrics: the judged rows of every query whose labels enter the
        normalizer, e.g. :func:`judged_documents`.  Default: the metric's
        normalizer documents, as :func:`pool_metric_values` defines them (every
        document of the query's pool when ``depth=None``).
    offsets : array-like of shape (n_queries + 1,) or a pool, optional
        Ratio metrics: the pool's query offsets, needed when the rankings do
        not list every document of each query (as in
        :func:`pool_metric_values`).
    method : {"auto", "exact", "monte_carlo"}, default "auto"
        ``"auto"``: exact kernels for additive/cascade metrics, Monte Carlo for
        ratio and custom metrics.  ``"exact"`` rejects metrics without exact
        moments; ``"monte_carlo"`` samples for every metric (for checks).
    rng : None, int or numpy.random.Generator
        Seed of the Monte-Carlo draws (unused by exact moments).  Pass an int
        for reproducible moments.
    n_samples : int, default 256
        Label vectors drawn per query.  The relative standard error of a
        second moment is about ``sqrt(kurtosis / n_samples)``; on MQ2008 and
        OHSUMED 256 draws give a median relative error of 1-7% and a q* within
        0.6% of the efficiency of q* from 8192 draws
        (``benchmarks/results/approximate_moments.md``).

    Returns
    -------
    PoolMoments
        ``mean``, ``second_moment``, ``variance``; arrays of shape (n_queries,).
        Monte-Carlo moments are plug-in averages over the draws
        (``variance = second_moment - mean**2`` computed without cancellation).

    Examples
    --------
    >>> probs = [[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]
    >>> res = predicted_moments(probs, [[0, 1, 2]], "ndcg(gain=exp)", rng=0, n_samples=4000)
    >>> round(float(res.mean[0]), 1)   # exact: (1.5 / (1 + 1/log2(3)) + 0.5) / 2 = 0.7099
    0.7
    >>> predicted_moments(probs, [[0, 1], [2]], "dcg").mean.tolist()   # exact kernel
    [0.5, 1.0]
    """
    m, P, use_mc = _common_iv(probs, metric, k, method)
    full = rankings_iv(rankings, P.shape[0])
    top = full.truncate(m.k)
    if not use_mc:
        if judged is not None or offsets is not None:
            raise ValueError(f"`judged` and `offsets` are only used by metrics without exact moments, not by "
                             f"{str(m)!r}.")
        return _moments(P, top, m)
    J = _judged_iv(judged, m, [full], P.shape[0], offsets)
    return _mc_single(P, top, J, m, _n_samples_iv(n_samples), np.random.default_rng(rng))


def predicted_pair_moments(probs, rankings_a, rankings_b, metric, *, k=None, judged=None, offsets=None,
                           method="auto", rng=None, n_samples=DEFAULT_N_SAMPLES) -> PoolPairMoments:
    """Joint moments of two rankers' metric for every query, for any metric.

    Parameters
    ----------
    probs : array-like of shape (n_docs, n_grades)
    rankings_a, rankings_b : Rankings or sequence of sequences
        Rankings of the same queries; a document ranked by both has one label.
    metric, k, method, rng, n_samples
        As in :func:`predicted_moments`.
    judged : Rankings, optional
        Ratio metrics: the shared judged set of every query (e.g.
        ``judged_documents([ra, rb], metric, offsets=pool.offsets)``); both
        rankings are normalized against it.  Default: the metric's normalizer
        documents (every document of the query's pool when ``depth=None``; the
        union of both rankings' top ``depth`` otherwise).
    offsets : array-like of shape (n_queries + 1,) or a pool, optional
        As in :func:`predicted_moments`.

    Returns
    -------
    PoolPairMoments
        ``mean_a``, ``mean_b``, ``second_a``, ``second_b``, ``cross`` =
        ``E[L_a L_b | x]``, ``delta_variance`` = ``Var[L_a - L_b | x]`` and
        ``delta_mean``; Monte-Carlo moments use the same draws for both rankings.

    Examples
    --------
    >>> probs = [[0.5, 0.5], [0.2, 0.8]]
    >>> res = predicted_pair_moments(probs, [[0, 1]], [[1, 0]], "ap", rng=0)
    >>> bool(res.delta_mean[0] < 0)
    True
    """
    m, P, use_mc = _common_iv(probs, metric, k, method)
    fa = rankings_iv(rankings_a, P.shape[0], name="rankings_a")
    fb = rankings_iv(rankings_b, P.shape[0], name="rankings_b")
    if fa.n_queries != fb.n_queries:
        raise ValueError(f"`rankings_a` and `rankings_b` must cover the same queries; got {fa.n_queries} and "
                         f"{fb.n_queries} queries.")
    ta, tb = fa.truncate(m.k), fb.truncate(m.k)
    if not use_mc:
        if judged is not None or offsets is not None:
            raise ValueError(f"`judged` and `offsets` are only used by metrics without exact moments, not by "
                             f"{str(m)!r}.")
        return _pair_moments(P, ta, tb, m)
    J = _judged_iv(judged, m, [fa, fb], P.shape[0], offsets)
    return _mc_pair(P, ta, tb, J, m, _n_samples_iv(n_samples), np.random.default_rng(rng))


def monte_carlo_moments(probs, rankings, metric, *, k=None, judged=None, offsets=None, rng=None,
                        n_samples=DEFAULT_N_SAMPLES) -> PoolMoments:
    """:func:`predicted_moments` with ``method="monte_carlo"`` (any metric, sampled)."""
    return predicted_moments(probs, rankings, metric, k=k, judged=judged, offsets=offsets, method="monte_carlo",
                             rng=rng, n_samples=n_samples)


def monte_carlo_pair_moments(probs, rankings_a, rankings_b, metric, *, k=None, judged=None, offsets=None,
                             rng=None, n_samples=DEFAULT_N_SAMPLES) -> PoolPairMoments:
    """:func:`predicted_pair_moments` with ``method="monte_carlo"``."""
    return predicted_pair_moments(probs, rankings_a, rankings_b, metric, k=k, judged=judged, offsets=offsets,
                                  method="monte_carlo", rng=rng, n_samples=n_samples)

