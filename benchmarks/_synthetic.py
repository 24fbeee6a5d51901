"""Synthetic pools at MSLR-WEB30K scale for the performance benchmarks.

MSLR-WEB30K has 31,531 queries and 3,771,125 judged documents: about 120
documents per query on average, a long right tail (up to 1,251) and a five-point
grade scale.  The generator reproduces those shape statistics -- the list-length
distribution is what drives the cost of every kernel (linear in the number of
documents for single-ranker moments, quadratic per query for the ERR cross
moment) -- and fills the relevance model with random Dirichlet rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from activerank.ragged import Rankings, offsets_from_lengths

MSLR30K_QUERIES = 31_531
MSLR30K_MEAN_DOCS = 119.6
MSLR30K_MAX_DOCS = 1_251
N_GRADES = 5

# Spread of log(list length).  With this value the clipped lognormal has mean
# ~120 and a 99.9th percentile near the MSLR maximum, and sum(n^2) -- the work
# of the quadratic ERR cross moment -- is about 1.6 x n_queries x mean^2.
LENGTH_LOG_SIGMA = 0.7


@dataclass(frozen=True, eq=False)
class SyntheticPool:
    """A pool: relevance model rows, per-query offsets and a reference ranking.

    Attributes
    ----------
    probs : ndarray of shape (n_docs, N_GRADES)
        Random Dirichlet(1, ..., 1) label distributions, one row per document.
    offsets : ndarray of shape (n_queries + 1,)
        Query ``q`` owns document rows ``offsets[q]:offsets[q + 1]``.
    ranking : Rankings
        A random permutation of every query's candidates (the "base" ranker).
    """

    probs: np.ndarray
    offsets: np.ndarray
    ranking: Rankings

    @property
    def n_queries(self) -> int:
        return self.offsets.size - 1

    @property
    def n_docs(self) -> int:
        return int(self.offsets[-1])

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def list_lengths(n_queries: int, rng: np.random.Generator, length_scale: float = 1.0) -> np.ndarray:
    """MSLR-like documents per query: a lognormal clipped to [1, MSLR30K_MAX_DOCS].

    ``length_scale`` multiplies the mean and the maximum (for pools with more,
    shorter lists at the same memory).
    """
    mu = np.log(MSLR30K_MEAN_DOCS * length_scale) - LENGTH_LOG_SIGMA**2 / 2
    n = np.rint(rng.lognormal(mu, LENGTH_LOG_SIGMA, n_queries)).astype(np.int64)
    return np.clip(n, 1, max(1, int(round(MSLR30K_MAX_DOCS * length_scale))))


def permute_within(offsets: np.ndarray, rng: np.random.Generator) -> Rankings:
    """An independent uniformly random ranking of every query's candidate rows."""
    lengths = np.diff(offsets)
    q = np.repeat(np.arange(lengths.size), lengths)
    # sorting by (query, random key) shuffles inside each query in one vectorized pass
    order = np.lexsort((rng.random(q.size), q))
    return Rankings(order, offsets)


def make_pool(scale: float = 1.0, seed: int = 0, *, length_scale: float = 1.0) -> SyntheticPool:
    """Synthetic pool with ``round(scale * 31,531)`` queries (lists ``length_scale`` x MSLR's).

    Examples
    --------
    >>> pool = make_pool(0.01, seed=1)
    >>> pool.n_queries, pool.probs.shape[1]
    (315, 5)
    """
    rng = np.random.default_rng(seed)
    n_queries = max(1, int(round(scale * MSLR30K_QUERIES)))
    offsets = offsets_from_lengths(list_lengths(n_queries, rng, length_scale))
    probs = rng.dirichlet(np.ones(N_GRADES), size=int(offsets[-1]))
    return SyntheticPool(probs=probs, offsets=offsets, ranking=permute_within(offsets, rng))
