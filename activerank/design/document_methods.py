"""Document-level designs as method plug-ins: which (query, document) units to judge, and the estimate.

A registered method with ``unit="document"`` (:mod:`activerank.design.methods`)
carries a :class:`DocumentDesign` as its estimator plug-in.  The engine runs
every such method through one code path
(:func:`activerank.engine.documents.document_sample`), and the experiment
harness through another (:meth:`DocumentDesign.simulate`); neither knows which
design it runs:

1. :meth:`~DocumentDesign.design` -- everything fixed before a label is
   bought, for the budget: inclusion probabilities, a sampling distribution,
   a two-stage allocation;
2. :meth:`~DocumentDesign.draw` -- the random sample, a :class:`DocumentSample`
   (sampled units in draw order, repeats allowed, with their selection
   probabilities and expansion weights);
3. the engine asks the labeler for the sampled documents not judged yet (one
   request per query);
4. :meth:`~DocumentDesign.estimate` -- the design's unbiased estimator and its
   covariance (:mod:`activerank.inference.documents`).

Every estimator here has the form ``T_hat = M + sum_i w_i W_{z_i} (u_{z_i} -
m_{z_i})`` over the sampled entries ``i`` (``m = 0``, ``M = 0`` without the
model's control variate); ``w_i`` is the entry's *expansion weight*, reported
in ``result.trace["weight"]``.

Built-in plug-ins (registered names in :mod:`activerank.design.methods`):

* :class:`DocumentHorvitzThompson` (``doc_dyn``, ``doc_stat``): Poisson
  pi-ps sampling for the expected budget, ``pi ∝ ||W|| sqrt(E e^2 / c)``;
  HT of ``u - m`` (Cormack & Grossman's dyn) or of ``u`` (stat);
  ``w = 1 / pi``.
* :class:`UniformHorvitzThompson` (``doc_uniform``): simple random sampling
  without replacement of ``n`` of the ``N`` pooled units; HT, ``w = N / n``.
* :class:`HansenHurwitz` (``doc_hh``): i.i.d. draws from Schnabel et al.'s
  ``Q*`` until the budget is spent (repeats free); Hansen-Hurwitz,
  ``w = 1 / (n Q)``.
* :class:`TwoStage` (``two_stage``): queries from ``q``, then a Poisson
  subsample of every drawn query's units; the two-stage estimator,
  ``w = 1 / (n q pi)``.
* :class:`WithinQuery` (``doc_ubis``): Schnabel et al. (2015)'s UBIS-``k``,
  ``k`` i.i.d. draws inside every query from its own ``Q_x``; ``w = 1 / (k
  Q_x)``.

Budgets and costs are in the engine's unit (the pool's mean cost of judging
a whole query; a unit's cost is its document cost in that unit, see
:func:`unit_costs`), so every design is on the query-level methods' cost axis.
Units judged before the run (``judged``) are reused: an exactly known census
for the Poisson, uniform and with-replacement designs, free second-stage
judgments for the two-stage design.

References
----------
.. [1] D. G. Horvitz, D. J. Thompson. "A Generalization of Sampling Without
   Replacement from a Finite Universe." JASA 47, 1952.
.. [2] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
   Comparative Evaluation of Ranking Functions." ICTIR 2016.
.. [3] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking Evaluation
   on a Budget." WWW 2015.
.. [4] G. V. Cormack, M. R. Grossman. "Unbiased Low-Variance Estimators for
   Precision and Related Information Retrieval Effectiveness Measures."
   SIGIR 2019.
.. [5] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from ..inference.documents import (
    DocumentEstimate,
    hansen_hurwitz,
    horvitz_thompson,
    two_stage_estimate,
    within_query_estimate,
)
from ..inference.estimators import Estimator
from .documents import (
    DocumentTarget,
    PoissonDesign,
    draw_poisson,
    draw_uniform,
    draw_within_queries,
    inclusion_probabilities,
    sampling_distribution,
    uniform_inclusion,
    within_query_distribution,
)
from .two_stage import TwoStageDesign, TwoStagePlan, draw_two_stage, two_stage_design

__all__ = [
    "TARGET_KINDS",
    "BudgetTooSmall",
    "DocumentDesign",
    "DocumentSample",
    "DocumentHorvitzThompson",
    "UniformHorvitzThompson",
    "HansenHurwitz",
    "TwoStage",
    "WithinQuery",
    "WithReplacementDesign",
    "census_sample",
    "census_estimate",
    "unit_costs",
]

#: Target kinds (:mod:`activerank.design.targets`) and the public function estimating each.
TARGET_KINDS = {"mean": "estimate", "difference": "compare", "baseline": "compare_many",
                "ranking": "rank_systems"}


# --------------------------------------------------------------------------- samples


class BudgetTooSmall(ValueError):
    """A draw bought too little for an estimate with a variance (the budget must be raised)."""



@dataclass(frozen=True, eq=False)
class DocumentSample:
    """What one document-level draw produced, before any label.

    Attributes
    ----------
    units : ndarray of shape (n,), int64
        Unit index (into the :class:`~activerank.design.documents.DocumentTarget`)
        of every sampled entry, in draw order; a unit repeats when it is drawn
        again (with-replacement and two-stage designs).  Census units included.
    prob : ndarray of shape (n,)
        Selection probability of the entry under its design: the inclusion
        probability ``pi`` (Poisson, uniform; 1 for census units), the
        per-draw probability ``Q`` (with replacement), the within-query
        inclusion probability ``pi`` given the draw's query (two-stage).
    weight : ndarray of shape (n,)
        Expansion weight ``w`` of the entry: ``T_hat = M + sum_i w_i W e``.
    census : ndarray of shape (n,), bool
        Units judged before the run that enter exactly.
    design : object
        The plug-in's design (from :meth:`DocumentDesign.design`).
    plan : object
        The plug-in's raw draw (what its estimator needs besides the entries).
    stop_reason : {"budget", "all_judged", "all_reachable", "max_draws"}
        ``"all_judged"``: every unit that can change a target is in the sample
        with certainty, the estimate is exact.
    extra_cost : float
        Cost charged besides the judged documents (a two-stage design's query
        overheads).
    columns : dict
        Extra trace columns (arrays of shape (n,)).
    attrs : dict
        Extra ``trace.attrs`` entries.
    """

    units: np.ndarray
    prob: np.ndarray
    weight: np.ndarray
    census: np.ndarray
    design: object
    plan: object = None
    stop_reason: str = "budget"
    extra_cost: float = 0.0
    columns: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.units.size


def census_sample(target: DocumentTarget, judged: np.ndarray) -> DocumentSample:
    """The sample of a run in which every unit that can change a target is judged already."""
    design = PoissonDesign(pi=judged.astype(np.float64), costs=np.zeros(target.n_units), budget=0.0,
                           kind="poisson")
    take = np.flatnonzero(judged)
    ones = np.ones(take.size)
    return DocumentSample(take, ones, ones, np.ones(take.size, dtype=bool), design, stop_reason="all_judged",
                          attrs={"expected_cost": 0.0})


def census_estimate(target: DocumentTarget, sample: DocumentSample, grades, probs) -> DocumentEstimate:
    """Exact value of the targets from a :func:`census_sample` (``probs``: the model of a difference
    estimator, or None)."""
    if not isinstance(sample.design, PoissonDesign):
        raise TypeError("`sample` must come from census_sample.")
    return horvitz_thompson(target, sample.design, target.rows[sample.units], grades, probs=probs)


def unit_costs(target: DocumentTarget, query_costs, document_costs) -> np.ndarray:
    """Cost of judging every unit in the budget's unit (judging all units of a query costs its query cost).

    Parameters
    ----------
    target : DocumentTarget
    query_costs : QueryCosts
        The design's per-query costs (their ``model`` and ``scale``).
    document_costs : ndarray of shape (n_docs,)
        Raw per-document costs.

    Returns
    -------
    ndarray of shape (n_units,)
    """
    if query_costs.model == "uniform":
        size = np.diff(target.offsets)
        return 1.0 / size[target.query]
    return document_costs[target.rows] / query_costs.scale


def _within(charged: np.ndarray, budget: float) -> int:
    """Draws of a budgeted run that fit in a smaller ``budget`` (same tolerance as the draw loops)."""
    return int(np.count_nonzero(np.cumsum(charged) <= budget + 1e-12 * max(1.0, budget)))


# --------------------------------------------------------------------------- the plug-in base


class DocumentDesign(Estimator):
    """Base class of document-level method plug-ins: a design, its draw and its estimator.

    Subclasses implement :meth:`design`, :meth:`draw` and :meth:`estimate`
    (and may override :meth:`dof` and :meth:`simulate`).

    Attributes
    ----------
    control_variate : bool
        Whether the estimator subtracts the relevance model's means (a
        difference estimator); also decides how a run whose every unit is
        judged already computes its exact value.
    targets : tuple of str
        Target kinds the estimator supports (keys of :data:`TARGET_KINDS`).
    """

    name = "document_design"
    control_variate = False
    targets: tuple = tuple(TARGET_KINDS)
    #: The design does not depend on the budget and a run for a smaller budget is a prefix of the run for
    #: a larger one (:meth:`_cut`): :meth:`simulate` then draws once per repetition for the whole grid.
    nested = False

    # ---- the query-level interface does not apply
    def __call__(self, values, weights, *, predictions=None, pool_predictions=None, n_distinct=None):
        raise TypeError("a document-level estimator works on (query, document) samples; the engine runs it "
                        "(activerank.engine.documents), not on weighted query draws.")

    def prefix(self, values, weights, stops, *, predictions=None, pool_prediction=None, queries=None):
        raise TypeError("a document-level method has no query-level batched estimator; the experiment "
                        "harness runs it with DocumentDesign.simulate.")

    # ---- the plug-in interface
    def design(self, target: DocumentTarget, probs, costs, budget: float, *, judged, defensive: float):
        """Everything fixed before a label for ``budget`` (raise ValueError if it buys too little)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def draw(self, design, target: DocumentTarget, rng: np.random.Generator) -> DocumentSample:
        """The random sample of one run."""
        raise NotImplementedError  # pragma: no cover - abstract

    def estimate(self, target: DocumentTarget, sample: DocumentSample, grades, probs) -> DocumentEstimate:
        """The estimate and its covariance; ``grades`` has one entry per sampled entry."""
        raise NotImplementedError  # pragma: no cover - abstract

    def dof(self, sample: DocumentSample) -> float:
        """Degrees of freedom of a Student-t interval (``inf``: normal)."""
        return math.inf

    def _cut(self, sample: DocumentSample, target: DocumentTarget, budget: float) -> DocumentSample:
        """The run for a smaller ``budget`` (nested designs only)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _draw_many(self, design, target: DocumentTarget, rng, n_reps: int) -> list:
        """``n_reps`` independent runs (None for a run that bought too little); subclasses may batch them."""
        runs: list = []
        for _ in range(n_reps):
            try:
                runs.append(self.draw(design, target, rng))
            except BudgetTooSmall:
                runs.append(None)
        return runs

    def _model(self, probs):
        return probs if self.control_variate else None

    @staticmethod
    def _full_census(target, costs, budget, judged, overhead: float = 0.0) -> PoissonDesign | None:
        """Every unjudged unit that can change a target, if the budget covers judging them all (plus
        ``overhead``): then the value is known exactly, and drawing towards it would only cost more."""
        live = target.matters & ~judged
        need = float(np.asarray(costs)[live].sum()) + overhead
        if budget < need:
            return None
        return PoissonDesign(pi=(live | judged).astype(np.float64), costs=np.where(judged, 0.0, costs),
                             budget=need, kind="poisson")

    @staticmethod
    def _full_census_draw(design: PoissonDesign) -> DocumentSample:
        take = np.flatnonzero(design.pi >= 1.0)
        ones = np.ones(take.size)
        return DocumentSample(take, ones, ones, design.costs[take] == 0.0, design, stop_reason="all_judged",
                              attrs={"expected_cost": float(np.dot(design.pi, design.costs))})

    def simulate(self, target: DocumentTarget, probs, costs, budgets, grades, n_reps: int, rng, *,
                 defensive: float) -> dict:
        """Monte-Carlo of ``n_reps`` runs per budget on a pool whose grades are known.

        Parameters
        ----------
        target : DocumentTarget
        probs : ndarray of shape (n_docs, n_grades)
        costs : ndarray of shape (n_units,)
            Unit costs in the budget's unit.
        budgets : ndarray of shape (n_budgets,)
        grades : ndarray of shape (n_units,)
            True grade of every unit.
        n_reps : int
        rng : numpy.random.Generator
        defensive : float

        Returns
        -------
        dict
            ``estimate`` and ``standard_error`` of shape (n_budgets, n_reps,
            n_targets) (NaN where the budget buys too little: the design
            refuses it, or the run raises :class:`BudgetTooSmall`), ``cost``,
            ``n_draws`` (sampled entries) and ``n_queries`` (distinct queries
            with a judged document), each of shape (n_budgets, n_reps).
        """
        budgets = np.asarray(budgets, dtype=np.float64).reshape(-1)
        nb, t = budgets.size, target.n_targets
        est = np.full((nb, n_reps, t), np.nan)
        se = np.full((nb, n_reps, t), np.nan)
        cost, draws, queries = (np.zeros((nb, n_reps)) for _ in range(3))
        costs = np.asarray(costs, dtype=np.float64)

        def record(bi, r, s):
            res = self.estimate(target, s, grades[s.units], probs)
            est[bi, r], se[bi, r] = res.estimate, res.standard_error
            judged_units = np.unique(s.units)
            cost[bi, r] = float(costs[judged_units].sum()) + s.extra_cost
            draws[bi, r] = s.size
            queries[bi, r] = np.unique(target.query[judged_units]).size

        judged = np.zeros(target.n_units, dtype=bool)
        designs = []
        for b in budgets:
            try:
                designs.append(self.design(target, probs, costs, float(b), judged=judged, defensive=defensive))
            except ValueError:  # the budget buys too little: empty runs
                designs.append(None)
        # nested designs: one run per repetition at the largest sampled budget, cut for the smaller ones
        nested = [i for i, d in enumerate(designs) if self.nested and d is not None
                  and not isinstance(d, PoissonDesign)]
        for bi, dsg in enumerate(designs):
            if dsg is None or bi in nested:
                continue
            for r, s in enumerate(self._draw_many(dsg, target, rng, n_reps)):
                if s is not None:  # None: the run bought too little, empty
                    record(bi, r, s)
        if nested:
            top = max(nested, key=lambda i: budgets[i])
            for r, run in enumerate(self._draw_many(designs[top], target, rng, n_reps)):
                if run is None:
                    continue
                for bi in nested:
                    try:
                        record(bi, r, run if bi == top else self._cut(run, target, float(budgets[bi])))
                    except BudgetTooSmall:
                        continue
        return dict(estimate=est, standard_error=se, cost=cost, n_draws=draws, n_queries=queries)


# --------------------------------------------------------------------------- Poisson (stat / dyn)


class DocumentHorvitzThompson(DocumentDesign):
    """Poisson pi-ps sampling of units and the Horvitz-Thompson / difference estimator.

    Every unit is judged independently with probability ``pi_z = min(1, kappa
    s_z)`` (``s ∝ ||W_z|| sqrt(E[e_z^2] / c_z)`` mixed with a defensive share,
    ``kappa`` water-filled so that the *expected* cost is the budget;
    :func:`~activerank.design.documents.inclusion_probabilities`); the estimate is
    :func:`~activerank.inference.documents.horvitz_thompson`: with
    ``control_variate`` the difference estimator ``M + HT(u - m)`` (Cormack &
    Grossman's ``dyn``), else plain HT (``stat``).

    Parameters
    ----------
    control_variate : bool, default True
    utility : {"residual", "rms"}, optional
        Shape of the inclusion probabilities (default: ``"residual"`` with the
        control variate, ``"rms"`` without).
    """

    name = "document_ht"

    def __init__(self, *, control_variate: bool = True, utility: str | None = None):
        self.control_variate = bool(control_variate)
        self.utility = utility if utility is not None else ("residual" if control_variate else "rms")

    def design(self, target, probs, costs, budget, *, judged, defensive):
        return inclusion_probabilities(target, probs, budget, utility=self.utility, costs=costs,
                                       defensive=defensive, judged=judged)

    def draw(self, design, target, rng):
        take = np.flatnonzero(draw_poisson(design, rng))
        pi = design.pi[take]
        exact = bool(np.all(design.pi[target.matters] >= 1.0))
        return DocumentSample(take, pi, 1.0 / pi, design.costs[take] == 0.0, design,
                              stop_reason="all_judged" if exact else "budget",
                              attrs={"expected_cost": float(np.dot(design.pi, design.costs))})

    def estimate(self, target, sample, grades, probs):
        return horvitz_thompson(target, sample.design, target.rows[sample.units], grades,
                                probs=self._model(probs))

    def __repr__(self) -> str:
        return f"DocumentHorvitzThompson(control_variate={self.control_variate}, utility={self.utility!r})"


# --------------------------------------------------------------------------- uniform (SRSWOR)


class UniformHorvitzThompson(DocumentDesign):
    """Uniform sampling of pooled documents without replacement (the field's baseline), HT estimate.

    ``n = round(budget / mean unit cost)`` of the ``N`` unjudged pooled units
    (every document of the compared top-``k`` lists, including those that
    cancel: a uniform design does not look at the target) are drawn by simple
    random sampling (:func:`~activerank.design.documents.uniform_inclusion`,
    :func:`~activerank.design.documents.draw_uniform`); the estimate is
    ``sum_census W u + (N / n) sum_S W u`` with the SRS variance ``N^2 (1 -
    n/N) s^2 / n`` (:func:`~activerank.inference.documents.horvitz_thompson`).

    References
    ----------
    .. [1] W. G. Cochran. *Sampling Techniques*, 3rd ed. Wiley, 1977, Ch. 2.
    """

    name = "document_uniform"

    def design(self, target, probs, costs, budget, *, judged, defensive):
        return uniform_inclusion(target, budget, costs=costs, judged=judged)

    def draw(self, design, target, rng):
        take = np.flatnonzero(draw_uniform(design, rng))
        pi = design.pi[take]
        judged = design.costs == 0.0  # units judged before the run: a census
        census = judged[take]
        n, N = int((~census).sum()), int((~judged).sum())
        return DocumentSample(take, pi, 1.0 / pi, census, design,
                              stop_reason="all_judged" if n == N else "budget",
                              attrs={"expected_cost": float(np.dot(design.pi, design.costs)),
                                     "population": N, "sample_size": n})

    def estimate(self, target, sample, grades, probs):
        d = sample.design
        if np.all(d.pi >= 1.0):  # every pooled unit sampled: a census, the value is exact
            d = PoissonDesign(pi=d.pi, costs=d.costs, budget=d.budget, kind="poisson")
        return horvitz_thompson(target, d, target.rows[sample.units], grades, probs=None)


# --------------------------------------------------------------------------- with replacement (HH)


@dataclass(frozen=True, eq=False)
class WithReplacementDesign:
    """Draws with replacement: the distribution ``Q`` over units, unit costs, budget, judged units."""

    Q: np.ndarray
    costs: np.ndarray
    budget: float
    judged: np.ndarray
    max_draws: int


class HansenHurwitz(DocumentDesign):
    """Schnabel et al.'s ``Q*`` with replacement until the budget is spent; Hansen-Hurwitz estimate.

    Units are drawn i.i.d. from ``Q ∝ ||W_z|| u~_z / sqrt(c_z)`` (mixed with
    the defensive ``||W_z|| / sqrt(c_z)``;
    :func:`~activerank.design.documents.sampling_distribution`, Schnabel et
    al. 2016, Eqs. 4, 9, 11, 13) by the budgeted draw loop: a unit's first
    draw is charged its cost, a repeat is free, the run stops right before the
    first draw that would overspend.  This is also Schnabel et al. (2015)'s
    importance sampling of judgments on a budget.  Estimate
    ``M + (1/n) sum_i W_i (u_i - m_i) / Q_i`` with covariance ``s^2 / n``
    (:func:`~activerank.inference.documents.hansen_hurwitz`); units judged
    before the run are an exact census (``Q = 0``).  With ``ci="t"`` the
    interval is Student-t with ``n - 1`` degrees of freedom.  A budget that
    covers judging every document that can change a target judges them all
    (the value is then exact; drawing with replacement towards that set would
    only collect repeats).

    Parameters
    ----------
    utility : {"rms", "mean", "residual", "none"}, default "rms"
        ``u~``: ``sqrt(E[u^2])`` (variance-optimal for the plain estimator
        under the model), ``E[u]`` (Schnabel et al.'s literal plug-in), ...
    control_variate : bool, default False
        Subtract the model's means (then ``utility="residual"`` is optimal).
    max_draws_per_unit : int, default 100
        Cap on draws (times the number of units).

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.
    .. [2] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    .. [3] M. H. Hansen, W. N. Hurwitz. "On the Theory of Sampling from Finite
       Populations." Ann. Math. Statist. 14, 1943.

    Examples
    --------
    >>> from activerank.design.documents import document_target
    >>> t = document_target([[[0, 1, 2, 3]]], n_docs=4, metric="dcg@4", n_grades=2)
    >>> hh = HansenHurwitz()
    >>> d = hh.design(t, np.full((4, 2), 0.5), np.ones(4), 3.0, judged=np.zeros(4, bool), defensive=0.1)
    >>> s = hh.draw(d, t, np.random.default_rng(0))
    >>> r = hh.estimate(t, s, np.ones(s.size, dtype=int), None)  # every document relevant
    >>> bool(np.isclose(r.estimate[0], t.value(np.ones(4, dtype=int))[0])), len(np.unique(s.units)) <= 3
    (True, True)
    """

    name = "document_hh"
    nested = True

    def __init__(self, *, utility: str = "rms", control_variate: bool = False, max_draws_per_unit: int = 100):
        self.utility = utility
        self.control_variate = bool(control_variate)
        if isinstance(max_draws_per_unit, bool) or not isinstance(max_draws_per_unit, numbers.Integral) \
                or max_draws_per_unit < 1:
            raise ValueError(f"`max_draws_per_unit` must be a positive integer; got {max_draws_per_unit!r}.")
        self.max_draws_per_unit = int(max_draws_per_unit)

    def design(self, target, probs, costs, budget, *, judged, defensive):
        full = self._full_census(target, costs, budget, judged)
        if full is not None:
            return full
        Q = sampling_distribution(target, probs, utility=self.utility, costs=costs, defensive=defensive,
                                  judged=judged)
        c = np.asarray(costs, dtype=np.float64)
        # two draws of the most expensive reachable unit: the smallest budget sure to give a variance
        cheapest = float(c[Q > 0].min())
        if budget < 2 * cheapest:
            raise ValueError(f"`budget`={budget:g} is too small: it buys fewer than 2 draws (the cheapest "
                             f"reachable document costs {cheapest:.4g}); a variance needs at least 2.")
        return WithReplacementDesign(Q, c, float(budget), np.asarray(judged, dtype=bool),
                                     self.max_draws_per_unit * target.n_units)

    def draw(self, design, target, rng):
        from .sampling import draw_budgeted

        if isinstance(design, PoissonDesign):
            return self._full_census_draw(design)
        return self._from_plan(design, draw_budgeted(design.Q, design.costs, design.budget, rng,
                                                     max_draws=design.max_draws))

    def _draw_many(self, design, target, rng, n_reps):
        # all repetitions in one vectorized draw loop (one repetition: exactly the engine's draw)
        from .draws import draw_budgeted_batch
        from .sampling import DrawPlan

        if isinstance(design, PoissonDesign):
            return super()._draw_many(design, target, rng, n_reps)
        batch = draw_budgeted_batch(design.Q, design.costs, design.budget, n_reps, rng, max_draws=design.max_draws)
        reachable = int((design.Q > 0).sum())
        runs: list = []
        for r, n in enumerate(batch.n_draws.tolist()):
            new = batch.new[r, :n]
            reason = ("all_reachable" if int(new.sum()) >= reachable else
                      "max_draws" if n >= design.max_draws else "budget")
            plan = DrawPlan(batch.queries[r, :n], new, batch.charged[r, :n], design.budget, reason)
            try:
                runs.append(self._from_plan(design, plan))
            except BudgetTooSmall:
                runs.append(None)
        return runs

    def _cut(self, sample, target, budget):
        from .sampling import DrawPlan

        plan = sample.plan
        n = _within(plan.charged, budget)
        sub = DrawPlan(plan.queries[:n], plan.new[:n], plan.charged[:n], float(budget),
                       plan.stop_reason if n == plan.n_draws else "budget")
        return self._from_plan(replace(sample.design, budget=float(budget)), sub)

    def _from_plan(self, design, plan):
        n = plan.n_draws
        if n < 2:
            raise BudgetTooSmall(f"`budget`={design.budget:g} bought {n} draw: a variance needs at least 2; "
                                 "raise the budget.")
        x = plan.queries  # unit indices
        census = np.flatnonzero(design.judged)
        units = np.concatenate([x, census])
        Qx = design.Q[x]
        prob = np.concatenate([Qx, np.ones(census.size)])
        weight = np.concatenate([1.0 / (n * Qx), np.ones(census.size)])
        is_census = np.concatenate([np.zeros(n, dtype=bool), np.ones(census.size, dtype=bool)])
        return DocumentSample(units, prob, weight, is_census, design, plan=plan, stop_reason=plan.stop_reason,
                              attrs={"n_with_replacement_draws": int(n)})

    def estimate(self, target, sample, grades, probs):
        if isinstance(sample.design, PoissonDesign):  # every unit that matters judged: exact
            return horvitz_thompson(target, sample.design, target.rows[sample.units], grades)
        g = np.asarray(grades)
        rows = target.rows[sample.units]
        c = sample.census
        return hansen_hurwitz(target, sample.design.Q, rows[~c], g[~c], probs=self._model(probs),
                              census_rows=rows[c] if c.any() else None, census_grades=g[c] if c.any() else None)

    def dof(self, sample):
        return math.inf if sample.plan is None else float(sample.plan.n_draws - 1)

    def __repr__(self) -> str:
        return f"HansenHurwitz(utility={self.utility!r}, control_variate={self.control_variate})"


# --------------------------------------------------------------------------- two stage


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
    >>> m = register_method(Method("two_stage_overhead", get_method("two_stage").sample,
    ...                            TwoStage(query_cost=2.0), unit="document"))
    >>> m.estimator
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

    def design(self, target, probs, costs, budget, *, judged, defensive):
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
        if budget < 2 * float(c0 + c[target.matters].min(initial=np.inf)):
            raise ValueError(f"`budget`={budget:g} is too small for two first-stage draws.")
        return _TwoStageRun(d, float(budget))

    def draw(self, design, target, rng):
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

    def estimate(self, target, sample, grades, probs):
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


# --------------------------------------------------------------------------- within queries (UBIS-k)


@dataclass(frozen=True, eq=False)
class _WithinQueryRun:
    Qx: np.ndarray
    costs: np.ndarray  # 0 for units judged before
    k: int
    budget: float

    def expected_cost(self, k: int) -> float:
        """``sum_z c_z (1 - (1 - Q_x(z))^k)``: every unit's chance to be drawn at least once in ``k`` draws."""
        live = self.Qx > 0
        return float(np.dot(self.costs[live], 1.0 - (1.0 - self.Qx[live]) ** k))


class WithinQuery(DocumentDesign):
    """Schnabel et al. (2015)'s UBIS-``k``: ``k`` draws with replacement inside every query.

    Every query with a document that can change a target gets ``k`` i.i.d.
    draws from its own ``Q_x(z) ∝ ||W_z|| u~_z / sqrt(c_z) + eps * (the
    query's mean)`` (:func:`~activerank.design.documents.within_query_distribution`);
    ``k`` is the largest number whose expected cost (distinct documents judged,
    repeats free) fits the budget.  Estimate ``sum_x (1/k) sum_i W_i u_i /
    Q_x(z_i)`` with the summed per-query sample covariances
    (:func:`~activerank.inference.documents.within_query_estimate`).  It visits
    every query, so budgets below two draws per query are refused; ``eps``
    plays the defensive share's part (``defensive`` is not used).  A budget that
    covers every document that can change a target judges them all (exact).

    Parameters
    ----------
    utility : str, default "rms"
        ``u~`` (see :func:`~activerank.design.documents.unit_scores`).
    eps : float, default 0.05
    max_k : int, default 10000

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, T. Joachims. "Unbiased Ranking
       Evaluation on a Budget." WWW 2015.
    """

    name = "document_ubis"
    nested = True
    utility: str
    eps: float
    max_k: int

    def __init__(self, *, utility: str = "rms", eps: float = 0.05, max_k: int = 10000):
        if isinstance(max_k, bool) or not isinstance(max_k, numbers.Integral) or max_k < 2:
            raise ValueError(f"`max_k` must be an integer >= 2; got {max_k!r}.")
        self.utility = utility
        self.eps = eps
        self.max_k = int(max_k)

    def design(self, target, probs, costs, budget, *, judged, defensive):
        full = self._full_census(target, costs, budget, judged)
        if full is not None:
            return full
        Qx = within_query_distribution(target, probs, utility=self.utility, eps=self.eps, costs=costs)
        run = _WithinQueryRun(Qx, np.where(judged, 0.0, np.asarray(costs, dtype=np.float64)), 2, float(budget))
        two = run.expected_cost(2)
        if two > budget:
            raise ValueError(f"`budget`={budget:g} is too small: two draws in every query (the fewest with a "
                             f"variance) cost {two:.4g} in expectation.")
        return replace(run, k=self._k(run, budget))

    def _k(self, run: _WithinQueryRun, budget: float) -> int:
        """The largest ``k`` whose expected cost fits ``budget`` (the cost grows with ``k``)."""
        lo, hi = 2, self.max_k  # expected_cost(lo) <= budget
        if run.expected_cost(lo) > budget:
            raise BudgetTooSmall(f"`budget`={budget:g} is too small for two draws in every query.")
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if run.expected_cost(mid) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def draw(self, design, target, rng):
        if isinstance(design, PoissonDesign):
            return self._full_census_draw(design)
        return self._from_draws(design, draw_within_queries(target, design.Qx, design.k, rng))

    def _cut(self, sample, target, budget):
        k = self._k(sample.design, budget)
        return self._from_draws(replace(sample.design, k=k, budget=float(budget)), sample.plan[:, :k])

    def _from_draws(self, design, draws):
        units = draws.reshape(-1)
        Q = design.Qx[units]
        return DocumentSample(units, Q, 1.0 / (design.k * Q), np.zeros(units.size, dtype=bool), design, plan=draws,
                              attrs={"draws_per_query": int(design.k),
                                     "expected_cost": design.expected_cost(design.k)})

    def estimate(self, target, sample, grades, probs):
        if isinstance(sample.design, PoissonDesign):  # every unit that matters judged: exact
            return horvitz_thompson(target, sample.design, target.rows[sample.units], grades)
        shape = sample.plan.shape
        return within_query_estimate(target, sample.design.Qx, target.rows[sample.units].reshape(shape),
                                     np.asarray(grades).reshape(shape))

    def __repr__(self) -> str:
        return f"WithinQuery(utility={self.utility!r}, eps={self.eps!r})"
