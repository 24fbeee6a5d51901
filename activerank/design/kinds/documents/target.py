"""The linear target of document-level designs: ``T = W^T u`` over the (query, document) units of the
compared top-``k`` lists (the derivation is in :mod:`activerank.design.kinds.documents.sampling`)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ...._validation import probs_iv, query_weights_iv, rankings_iv
from ....metrics.registry import parse_metric
from ....ragged import Rankings, offsets_from_lengths
from ...cancellation import discount_table

__all__ = ["DocumentTarget", "UnitMoments", "document_target", "scenario_contrasts"]


@dataclass(frozen=True, eq=False)
class UnitMoments:
    """Model moments of every unit's utility ``u = g(y)``; arrays of shape (n_units,)."""

    mean: np.ndarray
    second: np.ndarray
    variance: np.ndarray


@dataclass(frozen=True, eq=False)
class DocumentTarget:
    """Targets that are linear in per-document utilities: ``T = W^T u``.

    Attributes
    ----------
    rows : ndarray of shape (n_units,), int64
        Document row of every unit (the union of the compared top-``k`` lists),
        sorted by query, then row.
    query : ndarray of shape (n_units,), int64
        Pool query index of every unit.
    weights : ndarray of shape (n_units, n_targets)
        ``W[z, j]``: coefficient of ``u_z`` in target ``j`` (``p(x)`` included).
    gains : ndarray of shape (n_grades,)
        Utility ``g(y)`` of every grade.
    n_queries, n_docs : int
    offsets : ndarray of shape (n_queries + 1,)
        Units of query ``x`` are ``offsets[x]:offsets[x + 1]``.
    """

    rows: np.ndarray
    query: np.ndarray
    weights: np.ndarray
    gains: np.ndarray
    n_queries: int
    n_docs: int
    offsets: np.ndarray

    @property
    def n_units(self) -> int:
        return self.rows.size

    @property
    def n_targets(self) -> int:
        return self.weights.shape[1]

    @property
    def matters(self) -> np.ndarray:
        """Units with a nonzero weight in some target (the others cancel)."""
        return np.any(self.weights != 0.0, axis=1)

    @property
    def norms(self) -> np.ndarray:
        """``||W_z||`` over the targets, shape (n_units,)."""
        return np.sqrt(np.einsum("ij,ij->i", self.weights, self.weights))

    def unit_index(self, rows, *, name: str = "rows") -> np.ndarray:
        """Unit index of document rows; a row outside the pooled units is an error."""
        r = np.asarray(rows)
        if r.size and (not np.issubdtype(r.dtype, np.integer)):
            raise TypeError(f"`{name}` must hold integer document rows; got dtype {r.dtype}.")
        r = r.astype(np.int64, copy=False).reshape(-1)
        lookup = np.full(self.n_docs, -1, dtype=np.int64)
        lookup[self.rows] = np.arange(self.n_units)
        out = np.full(r.size, -1, dtype=np.int64)
        ok = (r >= 0) & (r < self.n_docs)
        out[ok] = lookup[r[ok]]
        bad = np.flatnonzero(out < 0)
        if bad.size:
            raise ValueError(
                f"`{name}` entry {bad[0]} is document row {r[bad[0]]}, which is not in the pool of compared "
                "top-k documents (it cannot enter any target)."
            )
        return out

    def moments(self, probs) -> UnitMoments:
        """Mean, second moment and variance of every unit's utility under ``probs``."""
        P = probs_iv(probs)
        if P.shape[0] != self.n_docs:
            raise ValueError(f"`probs` must have one row per document ({self.n_docs}); got {P.shape[0]}.")
        if P.shape[1] != self.gains.size:
            raise ValueError(
                f"`probs` must have one column per grade ({self.gains.size}); got {P.shape[1]}."
            )
        p = P[self.rows]
        g = self.gains
        mean = p @ g
        second = p @ (g * g)
        # sum_j p_j (g_j - mean)^2 never cancels below 0
        variance = np.einsum("ij,ij->i", p, (g[None, :] - mean[:, None]) ** 2)
        return UnitMoments(mean, second, variance)

    def utilities(self, grades) -> np.ndarray:
        """``g(y)`` of integer grades."""
        y = np.asarray(grades)
        if y.size and not np.issubdtype(y.dtype, np.integer):
            if not (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
                raise TypeError(f"`grades` must hold integer grades; got dtype {y.dtype}.")
        y = y.astype(np.int64, copy=False).reshape(-1)
        bad = np.flatnonzero((y < 0) | (y >= self.gains.size))
        if bad.size:
            raise ValueError(
                f"`grades` must lie on the scale 0..{self.gains.size - 1}; entry {bad[0]} is {y[bad[0]]}."
            )
        return self.gains[y]

    def value(self, labels) -> np.ndarray:
        """Exact targets from the grades of all document rows, shape (n_targets,)."""
        lab = np.asarray(labels).reshape(-1)
        return self.weights.T @ self.utilities(lab[self.rows])

    def query_totals(self, u) -> np.ndarray:
        """Per-query totals ``Y_x = sum_{z in x} W_z u_z``, shape (n_queries, n_targets)."""
        u = np.asarray(u, dtype=np.float64)
        out = np.zeros((self.n_queries, self.n_targets))
        for j in range(self.n_targets):
            out[:, j] = np.bincount(self.query, self.weights[:, j] * u, minlength=self.n_queries)
        return out


def scenario_contrasts(kind: str, n_systems: int, *, baseline: int = -1) -> np.ndarray:
    """Contrast matrix ``C`` (targets = ``C @ R``) of the four scenarios.

    Parameters
    ----------
    kind : {"single", "difference", "baseline", "rank"}
        One system; ``R_0 - R_1``; every other system minus the baseline;
        every system minus the mean system (Schnabel et al. 2016, Sec. 6).
    n_systems : int
    baseline : int, default -1
        Index of the baseline system for ``"baseline"``.

    Returns
    -------
    ndarray of shape (n_targets, n_systems)

    Examples
    --------
    >>> scenario_contrasts("baseline", 3).tolist()
    [[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]]
    """
    s = int(n_systems)
    if kind == "single":
        if s != 1:
            raise ValueError(f"`kind`='single' needs exactly one system; got {s}.")
        return np.ones((1, 1))
    if kind == "difference":
        if s != 2:
            raise ValueError(f"`kind`='difference' needs exactly two systems; got {s}.")
        return np.array([[1.0, -1.0]])
    if kind == "baseline":
        if s < 2:
            raise ValueError(f"`kind`='baseline' needs at least two systems; got {s}.")
        b = range(s)[baseline]
        C = np.zeros((s - 1, s))
        others = [i for i in range(s) if i != b]
        C[np.arange(s - 1), others] = 1.0
        C[:, b] = -1.0
        return C
    if kind == "rank":
        if s < 2:
            raise ValueError(f"`kind`='rank' needs at least two systems; got {s}.")
        return np.eye(s) - 1.0 / s
    raise ValueError(f"`kind` must be one of 'single', 'difference', 'baseline', 'rank'; got {kind!r}.")


def _contrasts_iv(contrasts, s: int) -> np.ndarray:
    if contrasts is None:
        if s == 1:
            return scenario_contrasts("single", 1)
        if s == 2:
            return scenario_contrasts("difference", 2)
        raise ValueError(
            f"`contrasts` is required for {s} systems: 'baseline', 'rank' or an (n_targets, {s}) matrix."
        )
    if isinstance(contrasts, str):
        return scenario_contrasts(contrasts, s)
    C = np.asarray(contrasts, dtype=np.float64)
    if C.ndim == 1:
        C = C[None, :]
    if C.ndim != 2 or C.shape[1] != s or C.shape[0] < 1:
        raise ValueError(f"`contrasts` must have shape (n_targets, {s}); got {C.shape}.")
    if not np.all(np.isfinite(C)):
        raise ValueError("`contrasts` must be finite.")
    return C


def document_target(rankings, *, n_docs, metric=None, discounts=None, gains=None, n_grades=None,
                    contrasts=None, query_weights=None) -> DocumentTarget:
    """Units and weights of a linearly decomposable target.

    Parameters
    ----------
    rankings : Rankings, sequence of sequences, or a list of those
        One system's rankings, or a list of ``s`` systems' rankings of the
        same queries.
    n_docs : int
        Number of document rows.
    metric : str, optional
        An additive metric such as ``"dcg@10"`` (discounts and gains from the
        registry; needs ``n_grades``).
    discounts : array-like of shape (k,), optional
        Per-position discounts of any additive metric (P@k: ``1/k``; RBP:
        ``(1 - phi) phi^i``); rankings are cut at ``k``.  Needs ``gains``.
    gains : array-like of shape (n_grades,), optional
        Utility of every grade (overrides the metric's gain).
    n_grades : int, optional
        Size of the grade scale (with ``metric`` and no ``gains``).
    contrasts : {"single", "difference", "baseline", "rank"} or array-like, optional
        Targets ``C @ R``; default ``[1]`` for one system and ``[1, -1]``
        for two.  ``"baseline"`` takes the *last* system as the baseline.
    query_weights : array-like of shape (n_queries,), optional
        Target distribution ``p(x)`` (default uniform).

    Returns
    -------
    DocumentTarget

    Notes
    -----
    Rows of ``C`` that sum to 0 (contrasts) are applied to discount
    *differences* to the first system, so a document with equal discounts in
    every system gets a weight of exactly 0.0 (no rounding residue).

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.
    .. [2] G. V. Cormack, M. R. Grossman. "Unbiased Low-Variance Estimators for
       Precision and Related IR Effectiveness Measures." SIGIR 2019.

    Examples
    --------
    >>> t = document_target([[[0, 1]], [[1, 0]]], n_docs=2, metric="dcg@2", n_grades=3)
    >>> t.weights.ravel().round(4).tolist(), t.gains.tolist()
    ([0.3691, -0.3691], [0.0, 1.0, 3.0])
    """
    if isinstance(n_docs, bool) or not isinstance(n_docs, numbers.Integral) or n_docs < 1:
        raise ValueError(f"`n_docs` must be a positive integer; got {n_docs!r}.")
    n_docs = int(n_docs)
    systems = _systems_iv(rankings, n_docs)
    s = len(systems)
    C = _contrasts_iv(contrasts, s)
    if (metric is None) == (discounts is None):
        raise ValueError("pass exactly one of `metric` (an additive metric such as 'dcg@10') and `discounts`.")
    if discounts is not None:
        disc = np.asarray(discounts, dtype=np.float64).reshape(-1)
        if disc.size == 0 or not np.all(np.isfinite(disc)):
            raise ValueError("`discounts` must be a non-empty finite 1-d array.")
        if gains is None:
            raise ValueError("`gains` (utility of every grade) is required with `discounts`.")
        tops = [r.truncate(disc.size) for r in systems]
    else:
        m = parse_metric(metric)
        if m.family != "additive":
            raise ValueError(
                f"`metric` {str(m)!r} is not linear in per-document utilities; document-level designs need "
                "an additive metric (DCG, P@k, RBP); ERR stays query-level."
            )
        tops = [r.truncate(m.k) for r in systems]
        disc = discount_table(m, int(max(r.lengths.max(initial=0) for r in tops)))
        if gains is None:
            if isinstance(n_grades, bool) or not isinstance(n_grades, numbers.Integral) or n_grades < 2:
                raise ValueError(f"`n_grades` must be an integer >= 2 with `metric`; got {n_grades!r}.")
            gains = m.grade_values(int(n_grades))
    g = np.asarray(gains, dtype=np.float64).reshape(-1)
    if g.size < 2 or not np.all(np.isfinite(g)):
        raise ValueError(f"`gains` must be finite with one entry per grade (>= 2); got {g.tolist()}.")
    n_q = tops[0].n_queries
    p = query_weights_iv(query_weights, n_q)
    keys = [r.query_index() * n_docs + r.items for r in tops]
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    n_u = uniq.size
    D = np.zeros((n_u, s))  # discount of every unit in every system (0 where absent)
    start = 0
    for i, r in enumerate(tops):
        D[inv[start: start + r.items.size], i] = disc[r.positions()]
        start += r.items.size
    contrast_rows = np.abs(C.sum(axis=1)) <= 1e-12 * np.abs(C).sum(axis=1).clip(min=1.0)
    W = np.where(contrast_rows[None, :], (D - D[:, :1]) @ C.T, D @ C.T)
    query = uniq // n_docs
    W *= p[query][:, None]
    return DocumentTarget(rows=uniq % n_docs, query=query, weights=W, gains=g, n_queries=n_q,
                          n_docs=n_docs, offsets=offsets_from_lengths(np.bincount(query, minlength=n_q)))


def _systems_iv(rankings, n_docs: int) -> list[Rankings]:
    if isinstance(rankings, Rankings):
        return [rankings_iv(rankings, n_docs)]
    if isinstance(rankings, (str, bytes)) or not hasattr(rankings, "__len__") or len(rankings) == 0:
        raise TypeError("`rankings` must be a Rankings, a sequence of per-query lists, or a list of those.")
    first = rankings[0]
    nested = isinstance(first, Rankings) or (
        hasattr(first, "__len__") and len(first) > 0 and hasattr(first[0], "__len__"))
    systems = list(rankings) if nested else [rankings]
    out = [rankings_iv(r, n_docs, name=f"rankings[{i}]") for i, r in enumerate(systems)]
    for i, r in enumerate(out[1:], start=1):
        if r.n_queries != out[0].n_queries:
            raise ValueError(f"`rankings` must rank the same queries; system 0 has {out[0].n_queries}, "
                             f"system {i} has {r.n_queries}.")
    return out


def _unit_costs_iv(costs, target: DocumentTarget) -> np.ndarray:
    if costs is None:
        return np.ones(target.n_units)
    c = np.asarray(costs, dtype=np.float64).reshape(-1)
    if c.size == target.n_docs and c.size != target.n_units:
        c = c[target.rows]
    elif c.size != target.n_units:
        raise ValueError(
            f"`costs` must have one entry per document row ({target.n_docs}) or per unit ({target.n_units}); "
            f"got {c.size}."
        )
    bad = np.flatnonzero(~np.isfinite(c) | (c <= 0))
    if bad.size:
        raise ValueError(f"`costs` must be finite and > 0; unit {bad[0]} (document row "
                         f"{target.rows[bad[0]]}) has {c[bad[0]]!r}.")
    return c


def _judged_iv(judged, target: DocumentTarget) -> np.ndarray:
    if judged is None:
        return np.zeros(target.n_units, dtype=bool)
    j = np.asarray(judged)
    if j.dtype == bool:
        if j.size != target.n_units:
            raise ValueError(f"boolean `judged` must have one entry per unit ({target.n_units}); got {j.size}.")
        return j.reshape(-1).copy()
    mask = np.zeros(target.n_units, dtype=bool)
    mask[target.unit_index(j, name="judged")] = True
    return mask
