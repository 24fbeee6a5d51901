"""Two-stage designs: draw queries by ``q(x)``, then documents within each drawn query.

First stage: ``n`` draws ``x_d ~ q`` with replacement.  Second stage: for each
draw, an independent Poisson subsample of the units of ``x_d`` (unit ``z``
with probability ``pi_z``); a document already judged is reused for free,
and visiting a query for the first time costs an overhead ``c0(x)`` (reading
and understanding the topic), every newly judged document ``c_z``.
The estimator (:func:`activerank.inference.documents.two_stage_estimate`) is

``z_d = M + (1/q(x_d)) sum_{z in S_d} W_z e_z / pi_z``,  ``T_hat = mean_d z_d``

with ``e = u - m`` (model means ``m``, ``M = sum_z W_z m_z``; or ``m = 0``
without the control variate).  Its per-draw variance splits into

``between = sum_x ||Y_x - M_x||^2 / q_x - ||T - M||^2`` and
``within  = sum_x (1/q_x) sum_{z in x} (1/pi_z - 1) ||W_z||^2 e_z^2``,

and the expected cost of a draw is ``C = sum_x q_x (c0_x + sum_z pi_z c_z)``.
Minimizing ``(between + within) * C`` (variance at a fixed budget) with the
model expectations ``A_z = ||W_z||^2 E[e_z^2]`` and ``B_x = E||Y_x - M_x||^2 -
sum_{z in x} A_z`` gives (Cauchy-Schwarz over the joint vector ``(q_x, q_x
pi_z)``; derivation in ``docs/two_stage.md``)

``q_x ∝ sqrt(B_x / c0_x)``,   ``pi_z = sqrt( (A_z / c_z) / (B_x / c0_x) )``,

Cochran's optimal two-stage allocation.  ``pi_z > 1`` is capped by moving
the document into the query's fixed part (``B_x += A_z``, ``c0_x += c_z``)
and recomputing, largest ``A_z / c_z`` first.  With the control variate and
independent labels under the model, ``B_x = 0``: every drawn query judges
its most informative document for sure.  Without a per-query overhead
(``c0 = 0``) the optimum degenerates to single-stage document sampling
(:func:`activerank.design.documents.inclusion_probabilities`); fix the
expected number of documents per drawn query (``docs_per_query``) to get a
two-stage design on the document-count axis, with ``q`` optimal given ``pi``:
``q_x ∝ sqrt(S_x / C_x)``, ``S_x = B_x + sum_z A_z / pi_z``, ``C_x = c0_x +
sum_z pi_z c_z``.

References
----------
.. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977, Ch. 10-11
   (two-stage sampling, optimal sub-sampling fraction).
.. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992, Sec. 4.3 and 4.5 (two-stage designs, PPS with
   replacement at the first stage).
.. [3] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
   Comparative Evaluation of Ranking Functions." ICTIR 2016 (Sec. 3.5: the
   overhead of understanding a query amortized over several judgments).
.. [4] C. Sawade, S. Bickel, T. von Oertzen, T. Scheffer, N. Landwehr.
   "Active Evaluation of Ranking Functions based on Graded Relevance."
   ECML PKDD 2012 (the query-level special case, ``pi = 1``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from ..._validation import defensive_iv
from ..sampling import DEFAULT_DEFENSIVE
from .documents.designs import BudgetTooSmall, DocumentDesign, DocumentSample, _within
from .documents.estimators import (
    DocumentEstimate,
    _sample_iv,
    _support_iv,
    horvitz_thompson,
)
from .documents.sampling import PoissonDesign, waterfill
from .documents.target import DocumentTarget, _unit_costs_iv

__all__ = ["TwoStage", "TwoStageDesign", "TwoStagePlan", "draw_two_stage", "query_effect_variance", "two_stage_design",
           "two_stage_estimate", "two_stage_variance"]


@dataclass(frozen=True, eq=False)
class TwoStageDesign:
    """A two-stage design and its model-predicted variance.

    Attributes
    ----------
    q : ndarray of shape (n_queries,)
        First-stage distribution.
    pi : ndarray of shape (n_units,)
        Second-stage inclusion probability of every unit, given its query is drawn.
    costs : ndarray of shape (n_units,)
        Cost of judging every unit.
    query_cost : ndarray of shape (n_queries,)
        Overhead of the first visit of every query.
    model_means : ndarray of shape (n_units,)
        ``m`` of the control variate (zeros without it).
    model_total : ndarray of shape (n_targets,)
        ``M = sum_z W_z m_z``.
    expected_draw_cost : float
        ``sum_x q_x (c0_x + sum_z pi_z c_z)`` (first visits; reuse makes it lower).
    predicted_between, predicted_within : float
        Model-expected per-draw variance components (trace over targets).
    """

    q: np.ndarray
    pi: np.ndarray
    costs: np.ndarray
    query_cost: np.ndarray
    model_means: np.ndarray
    model_total: np.ndarray
    expected_draw_cost: float
    predicted_between: float
    predicted_within: float

    @property
    def predicted_variance_per_cost(self) -> float:
        """``(between + within) * expected_draw_cost``: variance times budget, smaller is better."""
        return (self.predicted_between + self.predicted_within) * self.expected_draw_cost


def _query_cost_iv(query_cost, n_queries: int) -> np.ndarray:
    c0 = np.asarray(query_cost, dtype=np.float64)
    if c0.ndim == 0:
        c0 = np.full(n_queries, float(c0))
    c0 = c0.reshape(-1)
    if c0.size != n_queries:
        raise ValueError(f"`query_cost` must be a number or have one entry per query ({n_queries}); got {c0.size}.")
    bad = np.flatnonzero(~np.isfinite(c0) | (c0 < 0))
    if bad.size:
        raise ValueError(f"`query_cost` must be finite and >= 0; query {bad[0]} has {c0[bad[0]]!r}.")
    return c0


def _capped_allocation(a, A, c, B, c0, query, offsets):
    """Cochran's ``pi = a sqrt(C/B)`` with the largest ``a`` capped at 1, per query (vectorized)."""
    n = a.size
    order = np.lexsort((-a, query))
    s, As, cs, qs = a[order], A[order], c[order], query[order]
    lengths = np.diff(offsets)
    cumA = np.cumsum(As)
    cumc = np.cumsum(cs)
    baseA = np.repeat(np.concatenate([[0.0], cumA])[offsets[:-1]], lengths)
    basec = np.repeat(np.concatenate([[0.0], cumc])[offsets[:-1]], lengths)
    Bj = B[qs] + (cumA - As - baseA)  # capping everything above position j
    Cj = c0[qs] + (cumc - cs - basec)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sqrt(Cj / Bj)
        ok = (s > 0) & (Bj > 0) & (s * ratio <= 1.0)
    pos = np.arange(n)
    big = np.iinfo(np.int64).max
    first = np.full(offsets.size - 1, big)
    np.minimum.at(first, qs[ok], pos[ok])
    has = first < big
    r_seg = np.zeros(offsets.size - 1)
    r_seg[has] = ratio[first[has]]
    cut = np.repeat(np.where(has, first, offsets[1:]), lengths)
    pi_s = np.where(pos < cut, 1.0, np.minimum(1.0, s * np.repeat(r_seg, lengths)))
    pi_s = np.where(s > 0, pi_s, 0.0)
    pi = np.empty(n)
    pi[order] = pi_s
    return pi


def two_stage_design(target: DocumentTarget, probs, *, costs=None, query_cost=0.0, docs_per_query=None,
                     control_variate: bool = True, defensive: float = DEFAULT_DEFENSIVE,
                     residual_second_moment=None, query_excess=None) -> TwoStageDesign:
    """Cost-optimal two-stage design (queries by ``q``, documents by ``pi`` within a drawn query).

    Parameters
    ----------
    target : DocumentTarget
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)`` for ``E[e^2]`` and the control variate.
    costs : array-like, optional
        Per-document (``n_docs``) or per-unit cost of a judgment (default 1).
    query_cost : float or array-like of shape (n_queries,)
        Overhead ``c0(x)`` of the first visit of a query (default 0).
    docs_per_query : float, optional
        Fix the expected number of judged documents per drawn query (``pi``
        water-filled inside every query); ``q`` is then optimal given ``pi``.
        Required when ``query_cost`` is 0 (the unconstrained optimum is then
        single-stage document sampling).
    control_variate : bool, default True
        Use ``e = u - E_theta[u]`` (difference estimator at both stages).
    defensive : float in [0, 1]
        Share of a utility-free component in every unit's utility and of a
        uniform component (over queries with a unit that matters) in ``q``.
    residual_second_moment : array-like of shape (n_units,), optional
        ``E[e_z^2]`` to design with instead of the model's (``Var`` with the
        control variate, ``E[u^2]`` without).
    query_excess : array-like of shape (n_queries,), optional
        ``B_x = E[(sum_z W_z e_z)^2] - sum_z W_z^2 E[e_z^2]``, the within-query
        cross terms, instead of the model's (0 with the control variate:
        independent labels).  Residuals that share a query effect of variance
        ``tau^2`` give ``B_x ≈ tau^2 ((sum_z W_z)^2 - sum_z W_z^2)``
        (:func:`query_effect_variance` estimates ``tau^2`` from labeled data).

    Returns
    -------
    TwoStageDesign

    References
    ----------
    .. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977.
    .. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    .. [3] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.

    Examples
    --------
    >>> from activerank.design.kinds.documents import document_target
    >>> t = document_target([[[0, 1, 2], [3, 4]]], n_docs=5, metric="dcg@3", n_grades=2)
    >>> probs = np.full((5, 2), 0.5)
    >>> d = two_stage_design(t, probs, query_cost=1.0)
    >>> bool(np.isclose(d.q.sum(), 1.0)), bool(d.pi.max() == 1.0)
    (True, True)
    """
    defensive = defensive_iv(defensive)
    c = _unit_costs_iv(costs, target)
    c0 = _query_cost_iv(query_cost, target.n_queries)
    mom = target.moments(probs)
    W = target.weights
    nrm2 = np.einsum("ij,ij->i", W, W)
    matters = target.matters
    m = mom.mean if control_variate else np.zeros(target.n_units)
    e2 = mom.variance if control_variate else mom.second
    if residual_second_moment is not None:
        e2 = _per_iv(residual_second_moment, target.n_units, "residual_second_moment", nonneg=True)
    A = nrm2 * e2
    # defensive utility: (1 - eps) sqrt(E e^2) + eps * (its ||W||-weighted mean)
    u = np.sqrt(e2)
    norms = np.sqrt(nrm2)
    ubar = float(norms @ u / norms.sum()) if norms.sum() > 0 else 1.0
    ubar = ubar if ubar > 0 else 1.0
    A_def = nrm2 * ((1 - defensive) * u + defensive * ubar) ** 2
    Mx = target.query_totals(m)
    if query_excess is not None:
        B = _per_iv(query_excess, target.n_queries, "query_excess", nonneg=False)
    elif control_variate:
        B = np.zeros(target.n_queries)
    else:
        B = np.einsum("ij,ij->i", Mx, Mx) - np.bincount(target.query, nrm2 * m * m, minlength=target.n_queries)
    a = np.where(matters, np.sqrt(A_def / c), 0.0)
    has_unit = np.bincount(target.query, matters, minlength=target.n_queries) > 0
    if docs_per_query is None:
        if np.any(has_unit & (c0 <= 0)):
            raise ValueError(
                "`query_cost` must be > 0 for the optimal two-stage allocation; without a per-query "
                "overhead the optimum is single-stage document sampling "
                "(design.documents.inclusion_probabilities), or fix `docs_per_query`."
            )
        pi = _capped_allocation(a, A_def, c, B, c0, target.query, target.offsets)
    else:
        if isinstance(docs_per_query, bool) or not isinstance(docs_per_query, numbers.Real) or docs_per_query <= 0:
            raise ValueError(f"`docs_per_query` must be a positive number; got {docs_per_query!r}.")
        pi = waterfill(a, np.ones(target.n_units), float(docs_per_query), target.offsets)
    with np.errstate(divide="ignore", invalid="ignore"):
        Sz = np.where(pi > 0, A_def / pi, 0.0)
    S = B + np.bincount(target.query, Sz, minlength=target.n_queries)
    C = c0 + np.bincount(target.query, pi * c, minlength=target.n_queries)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(has_unit & (C > 0), np.sqrt(np.maximum(S, 0.0) / C), 0.0)
    fallback = has_unit / has_unit.sum()
    q = fallback if not score.sum() > 0 else (1 - defensive) * score / score.sum() + defensive * fallback
    # model-predicted components (without the defensive inflation)
    live = q > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        Vz = np.where(pi > 0, (1.0 / np.where(pi > 0, pi, 1.0) - 1.0) * A, 0.0)
    Vx = np.bincount(target.query, Vz, minlength=target.n_queries)
    Ex = B + np.bincount(target.query, A, minlength=target.n_queries)  # E ||Y_x - M_x||^2
    T_model = Mx.sum(axis=0)
    between = float(np.sum(Ex[live] / q[live])) - (0.0 if control_variate else float(T_model @ T_model))
    within = float(np.sum(Vx[live] / q[live]))
    return TwoStageDesign(q=q, pi=pi, costs=c, query_cost=c0, model_means=m,
                          model_total=W.T @ m, expected_draw_cost=float(q @ C),
                          predicted_between=between, predicted_within=within)


def _per_iv(values, n: int, name: str, *, nonneg: bool) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size != n:
        raise ValueError(f"`{name}` must have {n} entries; got {arr.size}.")
    bad = np.flatnonzero(~np.isfinite(arr) | ((arr < 0) if nonneg else False))
    if bad.size:
        rule = "finite and >= 0" if nonneg else "finite"
        raise ValueError(f"`{name}` must be {rule}; entry {bad[0]} is {arr[bad[0]]!r}.")
    return arr


def query_effect_variance(residuals, query) -> float:
    """Method-of-moments variance ``tau^2`` of a shared query effect in residuals ``e = u - m``.

    ``tau^2 = sum_x [(sum_{z in x} e_z)^2 - sum_{z in x} e_z^2] / sum_x n_x (n_x - 1)``:
    the mean product of two residuals of the same query (0 for independent
    labels).  Estimate it on labeled data the design does not sample from
    (e.g. the relevance model's validation queries).

    References
    ----------
    .. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977.

    Examples
    --------
    >>> query_effect_variance([1.0, 1.0, -1.0, -1.0], [0, 0, 1, 1])
    1.0
    """
    e = np.asarray(residuals, dtype=np.float64).reshape(-1)
    q = np.asarray(query, dtype=np.int64).reshape(-1)
    if e.size != q.size or e.size == 0:
        raise ValueError("`residuals` and `query` must be non-empty and of equal length.")
    s = np.bincount(q, e)
    s2 = np.bincount(q, e * e)
    n = np.bincount(q)
    pairs = float(np.sum(n * (n - 1)))
    if pairs == 0:
        raise ValueError("every query has a single residual; a query effect cannot be estimated.")
    return float(np.sum(s * s - s2) / pairs)


@dataclass(frozen=True, eq=False)
class TwoStagePlan:
    """The draws of one budgeted two-stage campaign.

    Attributes
    ----------
    draw_query : ndarray of shape (n_draws,)
        Query of every first-stage draw.
    unit_draw, unit : ndarray of shape (n_pairs,)
        Every sampled (draw, unit) pair.
    charged : ndarray of shape (n_draws,)
        Cost charged by every draw (query overhead on a first visit plus newly
        judged documents).
    new_unit : ndarray of shape (n_pairs,), bool
        True where the pair is the unit's first judgment.
    budget : float
    """

    draw_query: np.ndarray
    unit_draw: np.ndarray
    unit: np.ndarray
    charged: np.ndarray
    new_unit: np.ndarray
    budget: float

    @property
    def cost_spent(self) -> float:
        return float(self.charged.sum())

    @property
    def n_draws(self) -> int:
        return self.draw_query.size


def draw_two_stage(design: TwoStageDesign, target: DocumentTarget, budget, rng=None, *,
                   max_draws: int | None = None) -> TwoStagePlan:
    """Draw a two-stage campaign until the next draw would overspend ``budget``.

    Draws are made in chunks (vectorized within a chunk); the run stops right
    before the first draw whose charged cost would exceed the budget.

    Parameters
    ----------
    design : TwoStageDesign
    target : DocumentTarget
    budget : float
        Total cost (unit of the document and query costs).
    rng : None, int or numpy.random.Generator
    max_draws : int, optional
        Default ``100 * n_queries``.

    Returns
    -------
    TwoStagePlan

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"`budget` must be a positive finite number; got {budget!r}.")
    live_cost = design.query_cost[design.q > 0] + 0.0
    if budget < float(live_cost.min(initial=np.inf)):
        raise ValueError(f"`budget`={budget:g} is below the cheapest query overhead; nothing can be judged.")
    rng = np.random.default_rng(rng)
    max_draws = 100 * target.n_queries if max_draws is None else int(max_draws)
    cdf = np.cumsum(design.q / design.q.sum())
    cdf[-1] = 1.0
    seen_q = np.zeros(target.n_queries, dtype=bool)
    seen_u = np.zeros(target.n_units, dtype=bool)
    lengths = np.diff(target.offsets)
    spent, n_done = 0.0, 0
    parts = []
    tol = 1e-12 * max(1.0, budget)
    chunk = 256
    while n_done < max_draws:
        size = min(chunk, max_draws - n_done)
        dq = np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), target.n_queries - 1)
        # expand every draw to the units of its query and subsample them
        nl = lengths[dq]
        ud = np.repeat(np.arange(size), nl)
        unit = np.repeat(target.offsets[dq], nl) + (np.arange(nl.sum()) - np.repeat(np.cumsum(nl) - nl, nl))
        keep = rng.random(unit.size) < design.pi[unit]
        ud, unit = ud[keep], unit[keep]
        # first judgments inside the chunk (in draw order), not judged before
        _, first = np.unique(unit, return_index=True)
        new_u = np.zeros(unit.size, dtype=bool)
        new_u[first] = True
        new_u &= ~seen_u[unit]
        _, first_q = np.unique(dq, return_index=True)
        new_q = np.zeros(size, dtype=bool)
        new_q[first_q] = True
        new_q &= ~seen_q[dq]
        charge = np.where(new_q, design.query_cost[dq], 0.0) + np.bincount(
            ud, np.where(new_u, design.costs[unit], 0.0), minlength=size)
        cum = spent + np.cumsum(charge)
        over = np.flatnonzero(cum > budget + tol)
        stop = over[0] if over.size else size
        sel = ud < stop
        parts.append((dq[:stop], ud[sel] + n_done, unit[sel], charge[:stop], new_u[sel]))
        seen_q[dq[:stop]] = True
        seen_u[unit[sel]] = True
        n_done += stop
        if stop < size:
            break
        spent = float(cum[-1])
    return TwoStagePlan(
        draw_query=np.concatenate([p[0] for p in parts]),
        unit_draw=np.concatenate([p[1] for p in parts]),
        unit=np.concatenate([p[2] for p in parts]),
        charged=np.concatenate([p[3] for p in parts]),
        new_unit=np.concatenate([p[4] for p in parts]),
        budget=float(budget),
    )


def two_stage_variance(target: DocumentTarget, design, u) -> tuple[float, float]:
    """Exact per-draw variance components ``(between, within)`` given all utilities ``u``.

    ``Var(T_hat) = (between + within) / n`` for ``n`` draws, summed over the
    targets (the trace of the covariance).  See the module docstring and
    ``docs/two_stage.md``.

    Parameters
    ----------
    target : DocumentTarget
    design : TwoStageDesign
    u : array-like of shape (n_units,)

    Returns
    -------
    between, within : float

    References
    ----------
    .. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977.
    .. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    u = np.asarray(u, dtype=np.float64)
    e = u - design.model_means
    W = target.weights
    Yx = target.query_totals(e)  # Y_x - M_x
    live = design.q > 0
    nrm2 = np.einsum("ij,ij->i", W, W)
    if np.any(~live & np.any(Yx != 0, axis=1)):
        raise ValueError("a query with a nonzero contribution has q = 0; the design is biased.")
    T_M = Yx.sum(axis=0)
    between = float(np.sum(np.einsum("ij,ij->i", Yx[live], Yx[live]) / design.q[live]) - T_M @ T_M)
    safe = np.where(design.pi > 0, design.pi, 1.0)
    Vz = (1.0 / safe - 1.0) * nrm2 * e * e
    Vx = np.bincount(target.query, Vz, minlength=target.n_queries)
    within = float(np.sum(Vx[live] / design.q[live]))
    return between, within


def _two_stage_terms(target, design, draw_query, unit_draw, unit_idx, e):
    """Per-draw terms ``z_d - M`` (shape (n_draws, n_targets))."""
    n_d = draw_query.size
    contrib = target.weights[unit_idx] * (e / design.pi[unit_idx])[:, None]
    z = np.zeros((n_d, target.n_targets))
    for j in range(target.n_targets):
        z[:, j] = np.bincount(unit_draw, contrib[:, j], minlength=n_d)
    return z / design.q[draw_query][:, None]


def two_stage_estimate(target: DocumentTarget, design, draw_query, unit_draw, rows, grades) -> DocumentEstimate:
    """Two-stage estimate: draws of queries from ``q``, Poisson subsamples of documents per draw.

    Parameters
    ----------
    target : DocumentTarget
    design : TwoStageDesign
        From :func:`activerank.design.two_stage.two_stage_design`.
    draw_query : array-like of int, shape (n_draws,)
        Pool query index of every first-stage draw.
    unit_draw : array-like of int, shape (n_judged,)
        For every sampled (draw, document) pair, the draw it belongs to.
    rows, grades : array-like of int, shape (n_judged,)
        Document row and grade of every sampled pair (a document sampled in
        two draws appears twice, with its one judgment).

    Returns
    -------
    DocumentEstimate
        ``mean z_d`` with covariance ``s_z^2 / n`` (unbiased under
        with-replacement first-stage draws).

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    dq = np.asarray(draw_query, dtype=np.int64).reshape(-1)
    ud = np.asarray(unit_draw, dtype=np.int64).reshape(-1)
    if dq.size < 2:
        raise ValueError(f"need at least 2 first-stage draws; got {dq.size}.")
    if dq.min() < 0 or dq.max() >= target.n_queries:
        raise ValueError(f"`draw_query` must hold query indices in [0, {target.n_queries}).")
    if np.any(design.q[dq] <= 0):
        raise ValueError(f"query {dq[np.flatnonzero(design.q[dq] <= 0)[0]]} was drawn but has q = 0.")
    idx, u = _sample_iv(target, rows, grades, allow_repeats=True)
    if ud.size != idx.size or (ud.size and (ud.min() < 0 or ud.max() >= dq.size)):
        raise ValueError("`unit_draw` must give, for every judged row, the index of its draw.")
    wrong = np.flatnonzero(target.query[idx] != dq[ud])
    if wrong.size:
        i = wrong[0]
        raise ValueError(f"judged row {target.rows[idx[i]]} belongs to query {target.query[idx[i]]}, "
                         f"not to the query {dq[ud[i]]} of its draw {ud[i]}.")
    _support_iv(target, np.where(design.q[target.query] > 0, design.pi, 0.0), "q * pi")
    z = _two_stage_terms(target, design, dq, ud, idx, u - design.model_means[idx])
    n = dq.size
    est = z.mean(axis=0) + design.model_total
    cov = np.atleast_2d(np.cov(z.T, ddof=1)) / n
    return DocumentEstimate(est, cov, int(np.unique(idx).size), "two_stage")


@dataclass(frozen=True, eq=False)
class _TwoStageRun:
    design: TwoStageDesign
    budget: float


class TwoStage(DocumentDesign):
    """Queries drawn from ``q``, then a Poisson subsample of every drawn query's units; two-stage estimate.

    The allocation is Cochran's (:func:`~activerank.design.two_stage.two_stage_design`,
    derivation in ``docs/two_stage.md``): with a per-query overhead
    ``query_cost > 0`` both stages are cost-optimal (``pi_z = sqrt((A_z /
    c_z) / (B_x / c0_x))``, capped, ``q_x ∝ sqrt(B_x / c0_x)``); without one
    (documents judged are the only cost) the optimum degenerates to
    single-stage document sampling, so ``docs_per_query`` fixes the expected
    number of judged documents per drawn query (water-filled on ``||W_z||
    sqrt(E e_z^2 / c_z)``) and ``q_x ∝ sqrt(S_x / C_x)`` is optimal given
    ``pi``.  Queries are drawn until the next draw would overspend the budget
    (a document judged before is free, a query's first visit costs the
    overhead).  Estimate ``mean_d z_d`` with ``z_d = M + (1/q_{x_d}) sum_{z in
    S_d} W_z e_z / pi_z`` and covariance ``s_z^2 / n``
    (:func:`~activerank.inference.documents.two_stage_estimate`); ``ci="t"``:
    Student-t with ``n - 1`` degrees of freedom over the ``n`` first-stage draws.
    A budget that covers every document that can change a target (and the
    overheads of their queries) judges them all: the value is then exact.

    Parameters
    ----------
    docs_per_query : float, optional
        Expected documents judged per drawn query; required without a
        ``query_cost``.
    query_cost : float, default 0
        Overhead of a query's first visit, in units of the mean cost of one
        document that can change a target.
    control_variate : bool, default True
        The difference estimator at both stages.

    References
    ----------
    .. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977, Ch. 10-11.
    .. [2] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992, Sec. 4.3-4.5.

    Examples
    --------
    A variant whose first visit of a query costs as much as judging two of its documents (the built-in
    ``two_stage`` judges about 2 documents per drawn query, without overhead):

    >>> from activerank.design.methods import Method, get_method, register_method, unregister_method
    >>> m = register_method(Method("two_stage_overhead", get_method("two_stage").sample, TwoStage(query_cost=2.0)))
    >>> m.kind
    TwoStage(docs_per_query=None, query_cost=2.0, control_variate=True)
    >>> unregister_method("two_stage_overhead")
    """

    name = "two_stage"
    nested = True
    docs_per_query: float | None
    query_cost: float

    def __init__(self, *, docs_per_query: float | None = None, query_cost: float = 0.0,
                 control_variate: bool = True):
        if docs_per_query is not None and (isinstance(docs_per_query, bool) or not isinstance(
                docs_per_query, numbers.Real) or not np.isfinite(docs_per_query) or docs_per_query <= 0):
            raise ValueError(f"`docs_per_query` must be a positive number; got {docs_per_query!r}.")
        if isinstance(query_cost, bool) or not isinstance(query_cost, numbers.Real) or not np.isfinite(query_cost) \
                or query_cost < 0:
            raise ValueError(f"`query_cost` must be a finite number >= 0; got {query_cost!r}.")
        if docs_per_query is None and query_cost == 0:
            raise ValueError("a two-stage design needs `docs_per_query` or a `query_cost` > 0: without a "
                             "per-query overhead the optimal allocation is single-stage document sampling.")
        self.docs_per_query = None if docs_per_query is None else float(docs_per_query)
        self.query_cost = float(query_cost)
        self.control_variate = bool(control_variate)

    def design_for(self, target, probs, costs, budget, *, judged, defensive):
        c = np.asarray(costs, dtype=np.float64)
        c0 = self.query_cost * float(c[target.matters].mean()) if target.matters.any() else 0.0
        open_queries = np.unique(target.query[target.matters & ~judged]).size
        full = self._full_census(target, c, budget, judged, overhead=c0 * open_queries)
        if full is not None:
            return full
        d = two_stage_design(target, probs, costs=c, query_cost=c0, docs_per_query=self.docs_per_query,
                             control_variate=self.control_variate, defensive=defensive)
        # documents judged before are free at the second stage (their judgments are reused)
        d = replace(d, costs=np.where(judged, 0.0, d.costs))
        smallest = 2 * float(c0 + c[target.matters].min(initial=np.inf))
        if budget < smallest:
            raise ValueError(f"`budget`={budget:g} is too small for two first-stage draws; the smallest usable "
                             f"budget is {smallest:.4g}.")
        return _TwoStageRun(d, float(budget))

    def draw_units(self, design, target, rng):
        if isinstance(design, PoissonDesign):
            return self._full_census_draw(design)
        return self._from_plan(design, target, draw_two_stage(design.design, target, design.budget, rng))

    def _cut(self, sample, target, budget):
        plan = sample.plan
        n = _within(plan.charged, budget)
        keep = plan.unit_draw < n
        sub = TwoStagePlan(plan.draw_query[:n], plan.unit_draw[keep], plan.unit[keep], plan.charged[:n],
                           plan.new_unit[keep], float(budget))
        return self._from_plan(replace(sample.design, budget=float(budget)), target, sub)

    def _from_plan(self, design, target, plan):
        d = design.design
        n = plan.n_draws
        if n < 2:
            raise BudgetTooSmall(f"`budget`={design.budget:g} bought {n} first-stage draw: a variance needs at "
                                 "least 2; raise the budget.")
        units, ud = plan.unit, plan.unit_draw
        q = d.q[target.query[units]]
        pi = d.pi[units]
        doc_cost = float(np.where(plan.new_unit, d.costs[units], 0.0).sum())
        return DocumentSample(units, pi, 1.0 / (n * q * pi), np.zeros(units.size, dtype=bool), design, plan=plan,
                              extra_cost=max(plan.cost_spent - doc_cost, 0.0),
                              columns={"first_stage_draw": ud, "q": q},
                              attrs={"n_first_stage_draws": int(n),
                                     "first_stage_queries": plan.draw_query,
                                     "expected_draw_cost": d.expected_draw_cost,
                                     "predicted_between": d.predicted_between,
                                     "predicted_within": d.predicted_within})

    def estimate_units(self, target, sample, grades, probs):
        if isinstance(sample.design, PoissonDesign):  # every unit that matters judged: exact
            return horvitz_thompson(target, sample.design, target.rows[sample.units], grades)
        plan = sample.plan
        return two_stage_estimate(target, sample.design.design, plan.draw_query, plan.unit_draw,
                                  target.rows[sample.units], grades)

    def dof(self, sample):
        return math.inf if sample.plan is None else float(sample.plan.n_draws - 1)

    def __repr__(self) -> str:
        return (f"TwoStage(docs_per_query={self.docs_per_query}, query_cost={self.query_cost}, "
                f"control_variate={self.control_variate})")
