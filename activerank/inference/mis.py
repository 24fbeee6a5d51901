"""Multiple importance sampling: combining draws from several sampling distributions.

Treat all ``n = sum_b n_b`` draws of batches ``b`` (each from its own ``q_b``)
as draws from the mixture ``q_bar(x) = sum_b (n_b / n) q_b(x)`` and weight
draw ``j`` by the balance heuristic ``w_j = p(x_j) / q_bar(x_j)``
(Veach & Guibas 1995).  With identical ``q_b`` the weights are exactly
``p / q``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["mis_weights", "mixture"]


def mis_weights(p, qs, n_draws, queries) -> np.ndarray:
    """Balance-heuristic importance weights ``p(x) / sum_b (n_b / n) q_b(x)``.

    Parameters
    ----------
    p : ndarray of shape (n_queries,)
        Target distribution.
    qs : ndarray of shape (n_batches, n_queries)
        Sampling distribution of every batch.
    n_draws : ndarray of shape (n_batches,)
        Number of draws ``n_b`` of every batch.
    queries : ndarray of shape (n,)
        Pool index of the draws to weight.

    Returns
    -------
    weights : ndarray of shape (n,)

    Examples
    --------
    >>> p = np.array([0.5, 0.5]); q = np.array([0.8, 0.2])
    >>> mis_weights(p, np.stack([q, q]), np.array([3, 5]), np.array([0, 1])).tolist()
    [0.625, 2.5]
    >>> mis_weights(p, np.stack([q, p]), np.array([1, 1]), np.array([1])).round(4).tolist()
    [1.4286]
    """
    qs = np.atleast_2d(np.asarray(qs, dtype=np.float64))
    mix = mixture(qs, np.asarray(n_draws, dtype=np.float64).reshape(-1))
    x = np.asarray(queries, dtype=np.int64)
    return np.asarray(p, dtype=np.float64)[x] / mix[x]


def mixture(qs: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    """``sum_b (n_b / n) q_b``; exactly ``q_0`` when all batches share it (no rounding)."""
    if all(np.array_equal(qs[0], qb) for qb in qs[1:]):
        return qs[0].copy()
    return (n_b / n_b.sum()) @ qs
