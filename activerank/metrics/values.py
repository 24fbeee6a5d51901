"""Metric values of judged rankings: one vectorized kernel per metric family.

:func:`pool_metric_values` evaluates every query of a (partly) labeled pool in
one pass over rank positions; :func:`metric_value` is the one-ranking wrapper.
"""

from __future__ import annotations

import numpy as np

from .._validation import labels_iv, n_grades_from_ymax, rankings_iv
from ..ragged import PositionMajor, Rankings
from .registry import Metric, parse_metric

__all__ = ["metric_value", "pool_metric_values"]


def _values_kernel(grades_entries, rankings: Rankings, metric: Metric, ymax: int) -> np.ndarray:
    """Metric values of fully labeled rankings; ``grades_entries`` aligns with ``rankings.items``."""
    d = metric.definition
    pos = rankings.positions()
    weights = d.discount(pos) * d.gain(grades_entries, ymax)
    if d.family == "additive":
        return np.bincount(rankings.query_index(), weights, minlength=rankings.n_queries)
    # cascade: walk the ranks, carrying the probability that the user is still looking
    rel = d.gain(grades_entries, ymax)
    pm = PositionMajor(rankings.offsets)
    still = np.ones(pm.n_queries)
    value = np.zeros(pm.n_queries)
    for i in range(pm.max_len):
        e = pm.entries(i)
        n = e.size
        value[:n] += d.discount(np.float64(i)) * rel[e] * still[:n]
        still[:n] *= 1.0 - rel[e]
    return pm.unsort(value)


def pool_metric_values(labels, rankings, *, metric, k=None, ymax) -> np.ndarray:
    """Metric value of every query of a fully labeled pool.

    Parameters
    ----------
    labels : array-like of shape (n_docs,)
        Integer grades in ``0..ymax`` for every document row.
    rankings : Rankings or sequence of sequences
        Per-query rankings of document rows, best first.
    metric : str
        E.g. ``"dcg@10"``, ``"err"``, ``"ndcg@10"``.
    k : int or None, optional
        Cutoff (alternative to the ``@k`` suffix).
    ymax : int
        Top grade of the label scale.

    Returns
    -------
    values : ndarray of shape (n_queries,)

    Notes
    -----
    For ``ndcg`` the ideal ordering is over the ranked items (after truncation
    the ideal DCG still uses the best ``k`` ranked items).
    """
    m = parse_metric(metric, k)
    n_grades = n_grades_from_ymax(ymax)
    labels = labels_iv(labels, n_grades)
    r = rankings_iv(rankings, labels.size)
    return _pool_values(labels, r, m, ymax)


def _pool_values(labels: np.ndarray, r: Rankings, m: Metric, ymax: int) -> np.ndarray:
    """:func:`pool_metric_values` on validated inputs (labels of the ranked rows must be grades)."""
    if m.family == "normalized":
        # the ideal ordering sorts the whole ranked list by grade, then cuts at k
        order = np.lexsort((-labels[r.items], r.query_index()))
        ideal_r = Rankings(r.items[order], r.offsets)
        dcg = Metric("dcg", m.k)
        ideal = pool_metric_values(labels, ideal_r, metric=dcg, ymax=ymax)
        actual = pool_metric_values(labels, r, metric=dcg, ymax=ymax)
        return np.divide(actual, ideal, out=np.zeros_like(actual), where=ideal > 0)
    r = r.truncate(m.k)
    return _values_kernel(labels[r.items], r, m, ymax)


def metric_value(labels, ranking, *, metric, k=None, ymax) -> float:
    """Metric value of one fully labeled ranking.

    Parameters
    ----------
    labels : array-like of shape (n_items,)
        Integer grade of every item, in ``0..ymax``.
    ranking : array-like of shape (n_ranked,)
        Distinct item indices, best first.
    metric : str
        ``"dcg"``, ``"err"`` or ``"ndcg"``, optionally with ``@k``.
    k : int or None, optional
        Cutoff; ``None`` evaluates the whole list.
    ymax : int
        Top grade of the label scale (ERR's ``R(y) = (2^y - 1) / 2^ymax``).

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
    """
    arr = np.asarray(ranking)
    if arr.ndim != 1:
        raise ValueError(f"`ranking` must be a 1-d sequence of item indices; got shape {arr.shape}.")
    return float(pool_metric_values(labels, [arr], metric=metric, k=k, ymax=ymax)[0])
