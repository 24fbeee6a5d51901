"""Document-level designs: sample (query, document) pairs, not whole queries.

For metrics that add over positions (DCG@k, P@k, RBP, cumulative gain), the
mean value of a system over a pool of queries with weights ``p(x)`` is linear
in the per-document utilities ``u_z = g(y_z)``:

``R_s = sum_x p(x) sum_i d(i) g(y_{s_i(x)}) = sum_z p(x_z) d_s(z) u_z``

with ``d_s(z)`` the discount of ``z``'s rank in system ``s`` (0 if ``z`` is
not in its top ``k``).  Any contrast ``T = C R`` -- one system (``C = [1]``),
a difference of two (``[1, -1]``), ``k`` candidates minus a baseline,
differences to the mean system for ranking -- is therefore a weighted total

``T_j = sum_z W[z, j] u_z``,   ``W[z, j] = p(x_z) sum_s C[j, s] d_s(z)``,

over the *units* ``z`` (documents in the union of the compared top-``k``
lists).  Documents with ``W[z] = 0`` cancel in every target (see
:mod:`activerank.design.cancellation`) and never need a label.  A
:class:`DocumentTarget` holds ``W``; the designs here pick which units to
judge, the estimators in :mod:`activerank.inference.documents` turn the
judgments into unbiased estimates of ``T`` with variances.

Designs (unit costs ``c_z``; ``E``/``Var`` under the relevance model
``p(y | x, z)``):

* **With replacement** (Schnabel et al. 2016): ``n`` i.i.d. draws from
  ``Q``; Hansen-Hurwitz estimator ``(1/n) sum W u / Q``.  Minimizing the sum
  of the targets' variances ``(1/n) (sum_z ||W_z||^2 E[u_z^2] / Q_z - ||T||^2)``
  under a cost per draw gives ``Q*(z) ∝ ||W_z|| sqrt(E[u_z^2] / c_z)``.  With
  ``E[u^2]`` replaced by a plug-in ``u~^2`` this is Schnabel et al.'s
  ``Q*`` for their four scenarios (one system: Eq. 4; two: Eq. 9; ``k`` vs a
  baseline: Eq. 11; ranking: Eq. 13, whose optimal baseline is the mean
  system, i.e. ``C = I - 1/k``); ``||W_z||`` is the Euclidean norm over the
  targets.  ``sqrt(E[u^2])`` is what minimizes the *expected* variance when
  ``u`` is random under the model; ``utility="mean"`` uses Schnabel's
  literal plug-in ``E[u]``.
* **Without replacement** (Poisson sampling, Horvitz-Thompson): unit ``z``
  is judged independently with probability ``pi_z``.  Minimizing
  ``sum_z (1/pi_z - 1) ||W_z||^2 E[e_z^2]`` subject to ``sum_z pi_z c_z =
  budget`` gives ``pi_z = min(1, kappa ||W_z|| sqrt(E[e_z^2] / c_z))``
  (water-filling), with ``e = u`` for the plain HT ("stat") estimator and
  ``e = u - E_theta[u]`` for the difference ("dyn") estimator
  (``utility="residual"``).
* **Uniform** sampling of pooled documents (the field's baseline): simple
  random sampling without replacement of ``n`` pooled units.

A defensive share ``defensive`` of every design follows ``||W_z|| /
sqrt(c_z)`` (Schnabel's ``Q^P``, utility 1), so every unit that can change a
target keeps a positive probability whatever the model says.  Judgments
already acquired are reused as a census: those units get ``pi = 1`` and cost
0 (``judged=``); with-replacement draws skip them and the estimator adds
their exact contribution.

References
----------
.. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
   Comparative Evaluation of Ranking Functions." ICTIR 2016.
.. [2] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
   Evaluation on a Budget." WWW 2015.
.. [3] G. V. Cormack, M. R. Grossman. "Unbiased Low-Variance Estimators for
   Precision and Related Information Retrieval Effectiveness Measures."
   SIGIR 2019.
.. [4] D. G. Horvitz, D. J. Thompson. "A Generalization of Sampling Without
   Replacement from a Finite Universe." JASA 47, 1952.
.. [5] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
   Sampling.* Springer, 1992 (Poisson and pi-ps sampling, Sec. 3.6).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ...._validation import defensive_iv
from ...sampling import DEFAULT_DEFENSIVE
from .target import DocumentTarget, _judged_iv, _unit_costs_iv

__all__ = [
    "PoissonDesign",
    "unit_scores",
    "sampling_distribution",
    "inclusion_probabilities",
    "uniform_inclusion",
    "affordable_prefix",
    "draw_poisson",
    "draw_priority",
    "realized_pi",
    "draw_with_replacement",
    "draw_uniform",
    "draw_within_queries",
    "waterfill",
    "within_query_distribution",
]

UTILITIES = ("rms", "mean", "residual", "none")


# --------------------------------------------------------------------------- targets


# --------------------------------------------------------------------------- scores and designs


def unit_scores(target: DocumentTarget, probs, *, utility="rms", costs=None) -> np.ndarray:
    """``||W_z|| u~_z / sqrt(c_z)``: the shape of every variance-optimal design.

    Parameters
    ----------
    target : DocumentTarget
    probs : array-like of shape (n_docs, n_grades)
        Relevance model ``p(y | x, z)``.
    utility : {"rms", "mean", "residual", "none"} or array-like of shape (n_units,)
        ``u~``: ``sqrt(E[u^2])`` (optimal for the plain estimators under the
        model), ``E[u]`` (Schnabel et al.'s plug-in), ``sqrt(Var[u])``
        (optimal for the difference/dyn estimators), 1 (``Q^P``), or given.
    costs : array-like, optional
        Per-document (``n_docs``) or per-unit cost; default 1.

    Returns
    -------
    ndarray of shape (n_units,)

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.
    """
    c = _unit_costs_iv(costs, target)
    if isinstance(utility, str):
        if utility not in UTILITIES:
            raise ValueError(f"`utility` must be one of {list(UTILITIES)} or an array; got {utility!r}.")
        if utility == "none":
            u = np.ones(target.n_units)
        else:
            mom = target.moments(probs)
            u = {"rms": np.sqrt(mom.second), "mean": mom.mean, "residual": np.sqrt(mom.variance)}[utility]
    else:
        u = np.asarray(utility, dtype=np.float64).reshape(-1)
        if u.size != target.n_units or not np.all(np.isfinite(u)) or np.any(u < 0):
            raise ValueError(f"`utility` must hold {target.n_units} finite non-negative values.")
    return target.norms * u / np.sqrt(c)


def _mix(score: np.ndarray, fallback: np.ndarray, weight: np.ndarray, defensive: float) -> np.ndarray:
    """``(1 - defensive) score + defensive fallback``, each normalized by ``sum(weight * .)``."""
    tf = float(np.dot(fallback, weight))
    ts = float(np.dot(score, weight))
    if not ts > 0:
        return fallback / tf
    return (1.0 - defensive) * score / ts + defensive * fallback / tf


def _matters_iv(target: DocumentTarget, live: np.ndarray) -> None:
    if not np.any(target.matters & live):
        raise ValueError("no unit can change any target (every weight is 0, or every such unit is judged): "
                         "there is nothing to sample.")


def sampling_distribution(target: DocumentTarget, probs, *, utility="rms", costs=None,
                          defensive: float = DEFAULT_DEFENSIVE, judged=None) -> np.ndarray:
    """Schnabel et al.'s ``Q*`` over units for draws with replacement.

    ``Q(z) = (1 - defensive) Q*(z) + defensive Q^P(z)`` with ``Q* ∝ ||W_z||
    u~_z / sqrt(c_z)`` and ``Q^P ∝ ||W_z|| / sqrt(c_z)``; units that cancel
    (``W_z = 0``) and judged units (reused as a census) get 0.

    Parameters
    ----------
    target : DocumentTarget
    probs : array-like of shape (n_docs, n_grades)
    utility : str or array-like
        See :func:`unit_scores`.
    costs : array-like, optional
        Per-document or per-unit cost.
    defensive : float in [0, 1]
    judged : array-like of bool (n_units,) or of document rows, optional
        Units already judged (excluded; the estimator adds them exactly).

    Returns
    -------
    Q : ndarray of shape (n_units,)

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016, Eqs. 4, 9,
       11, 13.
    """
    defensive = defensive_iv(defensive)
    c = _unit_costs_iv(costs, target)
    live = ~_judged_iv(judged, target)
    _matters_iv(target, live)
    score = np.where(live, unit_scores(target, probs, utility=utility, costs=c), 0.0)
    fallback = np.where(live, target.norms / np.sqrt(c), 0.0)
    one = np.ones(target.n_units)
    return _mix(score, fallback, one, defensive)


def waterfill(score, costs, budget, offsets=None) -> np.ndarray:
    """Inclusion probabilities ``pi = min(1, kappa * score)`` with ``sum pi c = budget``.

    With ``offsets`` (CSR segments) every segment gets its own ``kappa`` and
    budget (``budget`` then has one entry per segment).  Entries with score 0
    get ``pi = 0``; a budget at or above the segment's total cost of
    positive-score entries gives them all ``pi = 1``.

    Parameters
    ----------
    score : ndarray of shape (n,)
        Non-negative target shape of ``pi``.
    costs : ndarray of shape (n,)
        Positive costs.
    budget : float or ndarray of shape (n_segments,)
    offsets : ndarray of shape (n_segments + 1,), optional

    Returns
    -------
    pi : ndarray of shape (n,)

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.

    Examples
    --------
    >>> waterfill(np.array([4.0, 1.0, 1.0]), np.ones(3), 2.0).tolist()
    [1.0, 0.5, 0.5]
    """
    score = np.asarray(score, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    n = score.size
    if offsets is None:
        offsets = np.array([0, n], dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_seg = offsets.size - 1
    budget = np.broadcast_to(np.asarray(budget, dtype=np.float64), (n_seg,))
    seg = np.repeat(np.arange(n_seg), np.diff(offsets))
    # sort every segment by score, largest first: capped entries are a prefix
    order = np.lexsort((-score, seg))
    s, c = score[order], costs[order]
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    sc = s * c
    cum_c = np.cumsum(c)
    cum_sc = np.cumsum(sc)
    base_c = np.repeat(np.concatenate([[0.0], cum_c])[starts], lengths)
    base_sc = np.repeat(np.concatenate([[0.0], cum_sc])[starts], lengths)
    tot_sc = np.repeat(np.concatenate([[0.0], cum_sc])[offsets[1:]], lengths) - base_sc
    # capping the entries before position j: kappa_j = (B - sum c_capped) / sum_rest s c
    capped_c = cum_c - c - base_c
    rest_sc = tot_sc - (cum_sc - sc - base_sc)
    B = np.repeat(budget, lengths)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (B - capped_c) / rest_sc
        ok = (s > 0) & (kappa * s <= 1.0) & (kappa > 0)
    # first valid position per segment; if none, every positive entry is capped
    pos = np.arange(n)
    first = np.full(n_seg, np.iinfo(np.int64).max)
    np.minimum.at(first, seg[ok], pos[ok])
    has = first < np.iinfo(np.int64).max
    k_seg = np.zeros(n_seg)
    k_seg[has] = kappa[first[has]]
    first_e = np.repeat(np.where(has, first, offsets[1:]), lengths)
    pi_sorted = np.where(pos < first_e, 1.0, np.minimum(1.0, np.repeat(k_seg, lengths) * s))
    pi_sorted = np.where(s > 0, pi_sorted, 0.0)
    pi = np.empty(n)
    pi[order] = pi_sorted
    return pi


@dataclass(frozen=True, eq=False)
class PoissonDesign:
    """Independent inclusion of every unit with probability ``pi``.

    Attributes
    ----------
    pi : ndarray of shape (n_units,)
        Inclusion probabilities (1 for judged units, 0 for units that cancel).
    costs : ndarray of shape (n_units,)
        Cost charged when a unit is judged (0 for units already judged).
    budget : float
        Expected cost ``sum pi * costs``.
    kind : str
    """

    pi: np.ndarray
    costs: np.ndarray
    budget: float
    kind: str

    @property
    def expected_size(self) -> float:
        return float(np.sum(self.pi * (self.costs > 0)))


def _budget_iv(budget) -> float:
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"`budget` must be a positive finite number (expected cost to spend); got {budget!r}.")
    return float(budget)


def _too_small(expected: float, budget: float, smallest=None) -> None:
    """Refuse a budget that buys fewer than 2 documents; ``smallest()`` gives the smallest usable budget."""
    if expected < 2.0:
        hint = "" if smallest is None else f"; the smallest usable budget is {smallest():.4g}"
        raise ValueError(
            f"`budget`={budget:g} is too small: it buys {expected:.3g} judged documents in expectation; "
            f"a design-based variance needs at least 2{hint}."
        )


def _smallest_budget(score, costs) -> float:
    """The smallest budget whose water-filled ``pi`` buy 2 documents in expectation (bisection; ``pi`` and
    so their sum grow with the budget)."""
    live = score > 0
    lo, hi = 0.0, float(costs[live].sum())
    if np.count_nonzero(live) < 2:
        return math.inf
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if waterfill(score, costs, mid).sum() < 2.0 else (lo, mid)
    return hi


def inclusion_probabilities(target: DocumentTarget, probs, budget, *, utility="residual", costs=None,
                            defensive: float = DEFAULT_DEFENSIVE, judged=None) -> PoissonDesign:
    """Variance-optimal Poisson (without replacement) design for an expected budget.

    ``pi_z = min(1, kappa s_z)`` with ``s = (1 - defensive) s* + defensive s^P``
    (``s* ∝ ||W_z|| u~_z / sqrt(c_z)``, ``s^P ∝ ||W_z|| / sqrt(c_z)``, each
    scaled to unit expected cost) and ``kappa`` such that ``sum_z pi_z c_z =
    budget``.  This minimizes ``sum_z (1/pi_z - 1) ||W_z||^2 E[e_z^2]``, the
    summed variance of the HT (``utility="rms"``, ``e = u``) or difference
    (``utility="residual"``, ``e = u - E u``) estimator, at that cost.

    Parameters
    ----------
    target : DocumentTarget
    probs : array-like of shape (n_docs, n_grades)
    budget : float
        Expected cost of the new judgments (unit of ``costs``; with the
        default unit costs, the expected number of judged documents).
    utility : str or array-like
        See :func:`unit_scores`.
    costs : array-like, optional
    defensive : float in [0, 1]
    judged : array-like of bool or of document rows, optional
        Units already judged: ``pi = 1`` at cost 0 (a census).

    Returns
    -------
    PoissonDesign

    Raises
    ------
    ValueError
        If the budget buys fewer than 2 documents in expectation, or no unit
        can change a target.

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992, Sec. 3.6 and 12.2.
    .. [2] G. V. Cormack, M. R. Grossman. "Unbiased Low-Variance Estimators
       for Precision and Related IR Effectiveness Measures." SIGIR 2019.
    """
    budget = _budget_iv(budget)
    defensive = defensive_iv(defensive)
    c = _unit_costs_iv(costs, target)
    judged_m = _judged_iv(judged, target)
    live = ~judged_m & target.matters
    _matters_iv(target, ~judged_m)
    score = np.where(live, unit_scores(target, probs, utility=utility, costs=c), 0.0)
    fallback = np.where(live, target.norms / np.sqrt(c), 0.0)
    s = _mix(score, fallback, c, defensive)
    pi = waterfill(s, c, budget)
    _too_small(float(pi.sum()), budget, lambda: _smallest_budget(s, c))
    pi = np.where(judged_m, 1.0, pi)
    charged = np.where(judged_m, 0.0, c)
    return PoissonDesign(pi=pi, costs=charged, budget=float(np.dot(pi, charged)), kind="poisson")


def uniform_inclusion(target: DocumentTarget, budget, *, costs=None, judged=None) -> PoissonDesign:
    """Uniform sampling of pooled documents (the field's baseline).

    Every unjudged pooled unit -- including those that cancel, which a
    uniform design does not know about -- has the same inclusion probability.
    With equal costs that is ``n / N``, ``n`` the most units the budget pays
    for; draw the sample with :func:`draw_uniform` (simple random sampling
    without replacement).  With unequal costs the design is a uniform random
    order taken while it fits the budget (:func:`draw_priority` with equal
    ``pi``, ``kind="poisson"``), so no draw exceeds the budget either.

    Parameters
    ----------
    target : DocumentTarget
    budget : float
        Cost to spend (with unit costs: documents to judge).
    costs : array-like, optional
        Per-document or per-unit cost (default 1).
    judged : array-like of bool or of document rows, optional
        Units already judged (a census: ``pi = 1``, cost 0).

    Returns
    -------
    PoissonDesign
        ``kind = "srswor"`` (``pi`` exact for SRSWOR), or ``"poisson"`` (the
        planned ``pi`` of a budgeted draw) when the costs differ.

    References
    ----------
    .. [1] B. Carterette, E. Kanoulas, E. Yilmaz. "Advances on the Development of
       Evaluation Measures" (tutorial): depth-k pooling, uniform sampling, infAP.
    .. [2] D. G. Horvitz, D. J. Thompson. "A Generalization of Sampling Without
       Replacement from a Finite Universe." JASA 47, 1952.
    """
    budget = _budget_iv(budget)
    c = _unit_costs_iv(costs, target)
    judged_m = _judged_iv(judged, target)
    N = int((~judged_m).sum())
    if N == 0:
        raise ValueError("every pooled unit is judged already; nothing to sample.")
    free_c = c[~judged_m]
    charged = np.where(judged_m, 0.0, c)
    if np.ptp(free_c) <= 1e-12 * free_c.max():  # equal costs: as many as the budget pays for, never more
        n = int(min(N, math.floor(budget / float(free_c[0]) * (1 + 1e-12))))
        n -= int(n * float(free_c[0]) > budget)  # never over the budget by a rounding error
        _too_small(float(n), budget, lambda: 2.0 * float(free_c[0]))
        pi = np.where(judged_m, 1.0, n / N)
        return PoissonDesign(pi=pi, costs=charged, budget=float(np.dot(pi, charged)), kind="srswor")
    # unequal costs: a uniform random order taken while it fits the budget (draw_priority with equal pi)
    _too_small(budget / float(free_c.mean()), budget, lambda: 2.0 * float(free_c.mean()))
    pi = np.where(judged_m, 1.0, min(1.0, budget / float(free_c.sum())))
    return PoissonDesign(pi=pi, costs=charged, budget=budget, kind="poisson")


# --------------------------------------------------------------------------- draws


def draw_poisson(design: PoissonDesign, rng=None, *, n_reps=None) -> np.ndarray:
    """Sampled units of a Poisson design: every unit independently with probability ``pi``.

    Parameters
    ----------
    design : PoissonDesign
    rng : None, int or numpy.random.Generator
    n_reps : int, optional
        Draw this many independent samples at once.

    Returns
    -------
    ndarray of bool, shape (n_units,) or (n_reps, n_units)
        Judged units (``pi = 1``) are always in the sample.

    References
    ----------
    .. [1] C.-E. Särndal, B. Swensson, J. Wretman. *Model Assisted Survey
       Sampling.* Springer, 1992.
    """
    rng = np.random.default_rng(rng)
    shape = design.pi.shape if n_reps is None else (int(n_reps),) + design.pi.shape
    return rng.random(shape) < design.pi


def affordable_prefix(costs: np.ndarray, budget: float) -> int:
    """The most leading entries of ``costs`` (positive, in draw order) whose total is within ``budget``.

    The total is the exactly rounded sum (:func:`math.fsum`), as results report it, so a run's reported
    cost never exceeds its budget by a rounding error either; it grows with every entry, so the
    entries that fit are a prefix (what the budgeted draws' exactness rests on).
    """
    n = int(np.count_nonzero(np.cumsum(costs) <= budget * (1 + 1e-12)))
    while n > 0 and math.fsum(costs[:n]) > budget:
        n -= 1
    return n


def realized_pi(pi: np.ndarray, threshold: float) -> np.ndarray:
    """``min(1, pi xi_f)``: every unit's inclusion probability in a budgeted order sample stopped at ``xi_f``
    (``inf``: nothing was cut, every unit with ``pi > 0`` is certain)."""
    with np.errstate(invalid="ignore"):
        return np.where(pi > 0, np.minimum(1.0, pi * threshold), 0.0)


def draw_priority(design: PoissonDesign, rng=None) -> tuple[np.ndarray, PoissonDesign]:
    """Budgeted order sample of a Poisson design's units: the realized cost never exceeds ``design.budget``.

    Every unit with ``pi_z > 0`` that costs something gets ``xi_z = U_z / pi_z``;
    units are taken in ascending ``xi`` while the cumulative cost stays within the
    budget, and the first that does not fit, ``f``, ends the draw (sequential
    Poisson or priority sampling with a budget stop).  Given every other unit,
    ``z`` is taken iff ``xi_z`` is below a threshold that equals ``xi_f``
    whenever ``z`` is taken, so ``pi'_z = min(1, pi_z xi_f)`` is ``z``'s exact
    inclusion probability given the others: Horvitz-Thompson with ``pi'`` is
    unbiased, its terms are uncorrelated, and the Poisson variance estimator
    with ``pi'`` is unbiased (``docs/document_level.md``).  Units judged
    already (``pi = 1``, cost 0) are always in the sample.

    Parameters
    ----------
    design : PoissonDesign
        Target inclusion probabilities ``pi`` (their shape; the threshold sets
        the scale), costs and the budget.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    take : ndarray of int64
        Sampled units, ascending.
    realized : PoissonDesign
        The same design with ``pi'`` (every unit; 1 for all when every unit fits).

    References
    ----------
    .. [1] E. Ohlsson. "Sequential Poisson Sampling." J. Official Statistics 14, 1998.
    .. [2] N. Duffield, C. Lund, M. Thorup. "Priority Sampling for Estimation of
       Arbitrary Subset Sums." J. ACM 54(6), 2007.

    Examples
    --------
    >>> d = PoissonDesign(pi=np.array([1.0, 0.5, 0.5, 0.0]), costs=np.ones(4), budget=2.0, kind="poisson")
    >>> take, realized = draw_priority(d, 0)
    >>> take.size, bool(realized.pi[3] == 0.0)
    (2, True)
    """
    rng = np.random.default_rng(rng)
    pi, c = design.pi, design.costs
    u = rng.random(pi.shape)
    census = (pi >= 1.0) & (c == 0.0)
    live = np.flatnonzero((pi > 0) & ~census)
    with np.errstate(divide="ignore"):
        xi = u[live] / pi[live]
    order = live[np.argsort(xi, kind="stable")]
    n = affordable_prefix(c[order], float(design.budget))
    threshold = float(u[order[n]] / pi[order[n]]) if n < order.size else math.inf
    real = realized_pi(pi, threshold)
    real[census] = 1.0
    take = np.sort(np.concatenate([np.flatnonzero(census), order[:n]]))
    return take, PoissonDesign(pi=real, costs=c, budget=design.budget, kind="poisson")


def draw_uniform(design: PoissonDesign, rng=None, *, n_reps=None) -> np.ndarray:
    """Simple random sample without replacement of the unjudged units of a uniform design.

    Parameters
    ----------
    design : PoissonDesign
        From :func:`uniform_inclusion` (kind ``"srswor"``).
    rng : None, int or numpy.random.Generator
    n_reps : int, optional

    Returns
    -------
    ndarray of bool, shape (n_units,) or (n_reps, n_units)
        Exactly ``n`` unjudged units plus every judged (census) unit.

    References
    ----------
    .. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977, Ch. 2.
    """
    if design.kind != "srswor":
        raise ValueError("`design` must come from uniform_inclusion (kind 'srswor').")
    rng = np.random.default_rng(rng)
    free = design.pi < 1.0
    N = int(free.sum())
    n = int(round(float(design.pi[free][0]) * N)) if N else 0
    reps = 1 if n_reps is None else int(n_reps)
    keys = rng.random((reps, N))
    chosen = np.argpartition(keys, n - 1, axis=1)[:, :n] if 0 < n < N else np.tile(np.arange(N), (reps, 1))[:, :n]
    mask = np.zeros((reps, design.pi.size), dtype=bool)
    idx = np.flatnonzero(free)
    mask[np.arange(reps)[:, None], idx[chosen]] = True
    mask[:, ~free] = True
    return mask[0] if n_reps is None else mask


def draw_with_replacement(Q, costs, budget, rng=None):
    """Budgeted i.i.d. draws of units from ``Q``; a unit's first draw is charged, repeats are free.

    Parameters
    ----------
    Q : array-like of shape (n_units,)
        From :func:`sampling_distribution`.
    costs : array-like of shape (n_units,)
        Cost of every unit, in the budget's unit.
    budget : float
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DrawPlan
        ``queries`` holds the drawn unit indices, in order.

    Thin wrapper of :func:`activerank.design.sampling.draw_budgeted` with units in
    place of queries (``DrawPlan.queries`` holds unit indices).

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.
    """
    from ...sampling import draw_budgeted

    return draw_budgeted(Q, costs, budget, rng)


def within_query_distribution(target: DocumentTarget, probs, *, utility="rms", eps: float = 0.05,
                              costs=None) -> np.ndarray:
    """Per-query importance distribution ``Q_x`` of Schnabel et al. (2015), UBIS-k.

    ``Q_x(z) ∝ ||W_z|| u~_z / sqrt(c_z) + eps * (its mean over the query's units)`` over the
    units of each query that can change a target (0 for the others); every
    query's ``Q_x`` sums to 1 (queries without such units get all zeros).
    ``eps`` keeps the tails heavy (their ``Q_x ∝ f~ P + eps``).

    Parameters
    ----------
    target : DocumentTarget
    probs : array-like of shape (n_docs, n_grades)
    utility : str or array-like
        See :func:`unit_scores` (default ``sqrt(E[u^2])``).
    eps : float, default 0.05
    costs : array-like, optional

    Returns
    -------
    ndarray of shape (n_units,)

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    """
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not np.isfinite(eps) or eps < 0:
        raise ValueError(f"`eps` must be a finite number >= 0; got {eps!r}.")
    live = target.matters
    a = np.where(live, unit_scores(target, probs, utility=utility, costs=costs), 0.0)
    n = np.bincount(target.query, live, minlength=target.n_queries)
    qmean = np.bincount(target.query, a, minlength=target.n_queries) / np.maximum(n, 1)
    a = np.where(live, a + eps * qmean[target.query], 0.0)
    zero = live & (a <= 0)
    a = np.where(zero, 1.0, a)  # a query whose units all score 0: uniform over them
    tot = np.bincount(target.query, a, minlength=target.n_queries)
    return np.where(live, a / np.where(tot > 0, tot, 1.0)[target.query], 0.0)


def draw_within_queries(target: DocumentTarget, Qx, k: int, rng=None, *, n_reps=None) -> np.ndarray:
    """``k`` i.i.d. draws of units from every query's ``Q_x`` (UBIS-k).

    Parameters
    ----------
    target : DocumentTarget
    Qx : array-like of shape (n_units,)
        From :func:`within_query_distribution`.
    k : int
        Draws per query.
    rng : None, int or numpy.random.Generator
    n_reps : int, optional

    Returns
    -------
    ndarray of int, shape (n_live_queries, k) or (n_reps, n_live_queries, k)
        Unit indices; rows follow the queries with a positive ``Q_x`` in pool order.

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"`k` must be a positive integer (draws per query); got {k!r}.")
    rng = np.random.default_rng(rng)
    Qx = np.asarray(Qx, dtype=np.float64)
    tot = np.bincount(target.query, Qx, minlength=target.n_queries)
    qs = np.flatnonzero(tot > 0)
    # query x's units cover [x, x + 1) of one global inverse cdf
    starts = np.concatenate([[0.0], np.cumsum(Qx)])[target.offsets[:-1]]
    cdf = target.query + np.cumsum(Qx) - np.repeat(starts, np.diff(target.offsets))
    shape = (qs.size, int(k)) if n_reps is None else (int(n_reps), qs.size, int(k))
    u = rng.random(shape)
    draws = np.searchsorted(cdf, qs[(None,) * (len(shape) - 2) + (slice(None), None)] + u, side="right")
    return np.minimum(draws, target.n_units - 1)
