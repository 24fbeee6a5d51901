"""Document-level designs as method plug-ins: which (query, document) units to judge, and the estimate.

A registered method with ``unit="document"`` (:mod:`activerank.design.methods`)
carries a :class:`DocumentDesign` as its estimator plug-in.  The engine runs
every such method through one code path
(:func:`activerank.engine.documents.document_sample`), and the experiment
harness through another (:meth:`DocumentDesign.simulate`); neither knows which
design it runs:

1. :meth:`~DocumentDesign.design_for` -- everything fixed before a label is
   bought, for the budget: inclusion probabilities, a sampling distribution,
   a two-stage allocation;
2. :meth:`~DocumentDesign.draw_units` -- the random sample, a :class:`DocumentSample`
   (sampled units in draw order, repeats allowed, with their selection
   probabilities and expansion weights);
3. the engine asks the labeler for the sampled documents not judged yet (one
   request per query);
4. :meth:`~DocumentDesign.estimate_units` -- the design's unbiased estimator and its
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
import weakref
from dataclasses import dataclass, field, replace

import numpy as np

from ....inference.estimators import Estimate
from ..base import DesignFit, DesignKind, LabelRequest
from .estimators import DocumentEstimate, expected_poisson_variance, horvitz_thompson, poisson_dof
from .sampling import (
    PoissonDesign,
    affordable_prefix,
    draw_priority,
    draw_uniform,
    inclusion_probabilities,
    uniform_inclusion,
)
from .target import DocumentTarget, document_target

__all__ = [
    "TARGET_KINDS",
    "BudgetTooSmall",
    "DocumentDesign",
    "DocumentSample",
    "DocumentHorvitzThompson",
    "UniformHorvitzThompson",
    "UnitPlan",
    "census_sample",
    "census_estimate",
    "document_target_of",
    "unit_costs",
    "unit_target",
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
        The plug-in's design (from :meth:`DocumentDesign.design_for`).
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


def document_target_of(design) -> DocumentTarget:
    """The design's target as a linear target over (query, document) units, weighted by ``p``."""
    t = design.target
    if t.metric.family != "additive":  # prepare_design refuses these already
        raise ValueError(f"document-level designs need an additive metric; got {str(t.metric)!r}.")
    return document_target(list(t.rankings), n_docs=design.probs.shape[0], metric=t.metric,
                           n_grades=design.n_grades, contrasts=t.contrast, query_weights=design.p)


# design -> (document target, unit costs); document target -> [(probs, costs, key, PoissonDesign)]: the
# predicted variance of ``method="auto"`` and the run it chooses build them once
_UNIT_TARGETS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_POISSON: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def unit_target(design) -> tuple[DocumentTarget, np.ndarray]:
    """``(document_target_of(design), unit_costs(...))``, computed once per design."""
    if design not in _UNIT_TARGETS:
        dt = document_target_of(design)
        _UNIT_TARGETS[design] = dt, unit_costs(dt, design.costs, design.document_costs)
    return _UNIT_TARGETS[design]


def _first_occurrence(units: np.ndarray) -> np.ndarray:
    first = np.zeros(units.size, dtype=bool)
    first[np.unique(units, return_index=True)[1]] = True
    return first


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
    return affordable_prefix(np.asarray(charged, dtype=np.float64), budget)


# --------------------------------------------------------------------------- the plug-in base


@dataclass(frozen=True, eq=False)
class UnitPlan:
    """What a document-level run fixes before its draw.

    Attributes
    ----------
    target : DocumentTarget
        The design's target as a linear target over (query, document) units.
    costs : ndarray of shape (n_units,)
        Unit costs in the budget's unit.
    judged : ndarray of shape (n_units,), bool
        Units whose grades were held before the run (free, reused).
    design : object or None
        The plug-in's design for the budget (:meth:`DocumentDesign.design_for`); None when every unit that
        can change a target is judged already (a census: exact).
    budget : float
    """

    target: DocumentTarget
    costs: np.ndarray
    judged: np.ndarray
    design: object
    budget: float


class DocumentDesign(DesignKind):
    """Base class of document-level method plug-ins: a design, its draw and its estimator.

    Subclasses implement :meth:`design_for`, :meth:`draw_units` and :meth:`estimate_units`
    (and may override :meth:`dof` and :meth:`simulate`); the design-kind
    protocol (:mod:`activerank.design.kinds.base`) is implemented here once for all of them.

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
    unit = "document"
    families = ("additive",)
    uses_predictions = False
    control_variate = False
    targets: tuple = tuple(TARGET_KINDS)
    #: The design does not depend on the budget and a run for a smaller budget is a prefix of the run for
    #: a larger one (:meth:`_cut`): :meth:`simulate` then draws once per repetition for the whole grid.
    nested = False

    # ---- the design-kind protocol
    def check(self, method, metric, target_kind, *, predicted) -> None:
        if metric.family != "additive":
            raise ValueError(
                f"`method`={method!r} samples single documents and needs a metric that adds over documents "
                f"(DCG@k, P@k, RBP); {str(metric)!r} is a {metric.family} metric: use a query-level method such as "
                "'active' (ERR and normalized metrics stay query-level).")
        if predicted is not None:
            raise ValueError(f"`predicted` (per-query predictions) is not used by the document-level method "
                             f"{method!r}; leave it None.")
        if target_kind not in self.targets:
            raise ValueError(
                f"`method`={method!r} does not support the {target_kind!r} target of "
                f"{TARGET_KINDS.get(target_kind, target_kind)}(); its estimator handles "
                f"{', '.join(repr(k) for k in self.targets) or 'no target'}.")

    def check_ci(self, ci, design) -> None:
        if ci == "bootstrap":
            raise ValueError("`ci`='bootstrap' (a studentized bootstrap over the distinct sampled queries) needs a "
                             f"query-level design; method {design.method!r} samples single documents (its interval "
                             "comes from the Horvitz-Thompson variance): use ci='auto', 't' or 'normal'.")

    def plan(self, design, budget, *, judged, rng=None) -> UnitPlan:
        dt, c = unit_target(design)
        held = np.asarray(judged, dtype=bool)[dt.rows]
        if not (dt.matters & ~held).any():  # every document that can change a target is judged: a census
            return UnitPlan(dt, c, held, None, float(budget))
        plug = self.design_for(dt, design.probs, c, float(budget), judged=held, defensive=design.defensive)
        return UnitPlan(dt, c, held, plug, float(budget))

    def draw(self, design, plan: UnitPlan, rng) -> DocumentSample:
        if plan.design is None:
            return census_sample(plan.target, plan.judged)
        return self.draw_units(plan.design, plan.target, rng)

    def labels_needed(self, design, plan: UnitPlan, sample: DocumentSample, labels) -> LabelRequest:
        dt = plan.target
        ask = np.unique(sample.units[~plan.judged[sample.units]])  # sorted: by query, then document row
        return LabelRequest.of(dt.query[ask], dt.rows[ask], labels)

    def estimate(self, design, plan: UnitPlan, sample: DocumentSample, labels, *, held, ci="auto",
                 ci_rng=None) -> DesignFit:
        import pandas as pd

        d, dt = design, plan.target
        units = sample.units
        x, rows = dt.query[units], dt.rows[units]
        new = ~plan.judged[units]
        new[new] = _first_occurrence(units[new])
        grades = labels[rows]
        census = plan.design is None
        if census:
            res = census_estimate(dt, sample, grades, d.probs if self.control_variate else None)
        else:
            res = self.estimate_units(dt, sample, grades, d.probs)
        charged = np.where(new, plan.costs[units], 0.0)
        trace = pd.DataFrame({
            "draw": np.arange(units.size), "query": x, "doc_row": rows, "pi": sample.prob, "p": d.p[x],
            "weight": sample.weight, "stratum": np.where(sample.census, "census", "sampled"), "new": new,
            "cost": charged, "cumulative_cost": np.cumsum(charged), "grade": grades, **sample.columns,
        })
        trace.attrs.update(sample.attrs)
        trace.attrs["n_units"] = int(dt.n_units)
        trace.attrs["n_units_that_matter"] = int(dt.matters.sum())
        if sample.extra_cost:
            trace.attrs["query_overhead_cost"] = float(sample.extra_cost)
        main = Estimate(res.estimate, res.covariance, float(units.size))
        # the Student-t of every t rule ("auto" included): i.i.d. draws count them, Poisson HT designs the
        # queries that carry the variance estimate
        dof = self.fit_dof(dt, sample, grades, d.probs) if ci in ("auto", "t", "t_draws") and not census \
            else math.inf
        own = main if d.target.kind == "mean" else None
        spent = math.fsum([*charged, sample.extra_cost])
        if spent <= plan.budget * (1 + 1e-12):  # draws are admitted with a 1e-12 rounding tolerance (as the
            spent = min(spent, plan.budget)     # query-level draws): rounding noise is not overspending
        return DesignFit(main, own, dof, int(units.size), int(np.unique(x).size), spent, plan.budget, sample.stop_reason == "all_judged",
                         trace, ci="normal" if math.isinf(dof) else "t")

    # ---- the plug-in interface
    def design_for(self, target: DocumentTarget, probs, costs, budget: float, *, judged, defensive: float):
        """Everything fixed before a label for ``budget`` (raise ValueError if it buys too little)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def draw_units(self, design, target: DocumentTarget, rng: np.random.Generator) -> DocumentSample:
        """The random sample of one run."""
        raise NotImplementedError  # pragma: no cover - abstract

    def estimate_units(self, target: DocumentTarget, sample: DocumentSample, grades, probs) -> DocumentEstimate:
        """The estimate and its covariance; ``grades`` has one entry per sampled entry."""
        raise NotImplementedError  # pragma: no cover - abstract

    def dof(self, sample: DocumentSample) -> float:
        """Degrees of freedom of a Student-t interval (``inf``: normal)."""
        return math.inf

    def fit_dof(self, target: DocumentTarget, sample: DocumentSample, grades, probs) -> float:
        """Degrees of freedom of a run's Student-t interval, given its grades (default: :meth:`dof`)."""
        return self.dof(sample)

    def _cut(self, sample: DocumentSample, target: DocumentTarget, budget: float) -> DocumentSample:
        """The run for a smaller ``budget`` (nested designs only)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _draw_many(self, design, target: DocumentTarget, rng, n_reps: int) -> list:
        """``n_reps`` independent runs (None for a run that bought too little); subclasses may batch them."""
        runs: list = []
        for _ in range(n_reps):
            try:
                runs.append(self.draw_units(design, target, rng))
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
            ``n_draws`` (sampled entries), ``n_queries`` (distinct queries
            with a judged document) and ``dof`` (the interval's degrees of
            freedom, :meth:`fit_dof`), each of shape (n_budgets, n_reps).
        """
        budgets = np.asarray(budgets, dtype=np.float64).reshape(-1)
        nb, t = budgets.size, target.n_targets
        est = np.full((nb, n_reps, t), np.nan)
        se = np.full((nb, n_reps, t), np.nan)
        cost, draws, queries = (np.zeros((nb, n_reps)) for _ in range(3))
        dof = np.full((nb, n_reps), np.nan)
        costs = np.asarray(costs, dtype=np.float64)

        def record(bi, r, s):
            res = self.estimate_units(target, s, grades[s.units], probs)
            est[bi, r], se[bi, r] = res.estimate, res.standard_error
            dof[bi, r] = self.fit_dof(target, s, grades[s.units], probs)
            judged_units = np.unique(s.units)
            cost[bi, r] = float(costs[judged_units].sum()) + s.extra_cost
            draws[bi, r] = s.size
            queries[bi, r] = np.unique(target.query[judged_units]).size

        judged = np.zeros(target.n_units, dtype=bool)
        designs = []
        for b in budgets:
            try:
                designs.append(self.design_for(target, probs, costs, float(b), judged=judged, defensive=defensive))
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
        return dict(estimate=est, standard_error=se, cost=cost, n_draws=draws, n_queries=queries, dof=dof)


# --------------------------------------------------------------------------- Poisson (stat / dyn)


def _affordable_iv(design: PoissonDesign, target: DocumentTarget, budget: float) -> None:
    """Refuse a budget below the cost of one sampleable unit: a budgeted draw could never take it."""
    live = (design.pi > 0) & (design.costs > 0) & target.matters
    if not live.any():
        return
    worst = int(np.flatnonzero(live)[np.argmax(design.costs[live])])
    if design.costs[worst] > budget + 1e-12 * max(1.0, budget):
        raise ValueError(
            f"`budget`={budget:g} is too small: document row {target.rows[worst]} of query {target.query[worst]} "
            f"costs {design.costs[worst]:.4g} alone, and a draw that never exceeds the budget could never judge "
            f"it; the smallest usable budget is {design.costs[worst]:.4g} (and at least 2 documents' worth).")


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

    def design_for(self, target, probs, costs, budget, *, judged, defensive):
        if judged is None or not np.any(judged):
            design = self._inclusion(target, probs, costs, budget, defensive)
        else:
            design = inclusion_probabilities(target, probs, budget, utility=self.utility, costs=costs,
                                             defensive=defensive, judged=judged)
        _affordable_iv(design, target, budget)
        return replace(design, budget=float(budget))  # the budgeted draw's limit (sum pi c when not all fit)

    def draw_units(self, design, target, rng):
        take, realized = draw_priority(design, rng)
        sample = self.sample_of(realized, target, take)
        sample.attrs["expected_cost"] = float(np.dot(design.pi, design.costs))  # of the planned pi
        return sample

    def _inclusion(self, target, probs, costs, budget, defensive):
        """:func:`inclusion_probabilities` with no unit judged, kept per target, model, costs and budget."""
        key = (self.utility, float(budget), float(defensive))
        kept = _POISSON.setdefault(target, [])
        for p_, c_, k_, design in kept:
            if p_ is probs and c_ is costs and k_ == key:
                return design
        design = inclusion_probabilities(target, probs, float(budget), utility=self.utility, costs=costs,
                                         defensive=defensive)
        kept.append((probs, costs, key, design))
        return design

    @staticmethod
    def sample_of(design, target, take) -> DocumentSample:
        """The sample of the Poisson ``design`` whose sampled units are ``take`` (ascending)."""
        pi = design.pi[take]
        exact = bool(np.all(design.pi[target.matters] >= 1.0))
        return DocumentSample(take, pi, 1.0 / pi, design.costs[take] == 0.0, design,
                              stop_reason="all_judged" if exact else "budget",
                              attrs={"expected_cost": float(np.dot(design.pi, design.costs))})

    def predicted_variance(self, design, budget, *, under=None) -> float:
        """``sum_z (1 / pi_z - 1) ||W_z||^2 Var[g(y_z)]``: the exact variance of the difference estimator of the
        Poisson design spending ``budget`` under the model (labels within a query independent given the
        model, so a shared query effect of the residuals is ignored; ``docs/document_level.md``).  Documents
        held (``design.judged``) are known and free, as in the run.  ``under``: the expectation under that
        design's model, around this design's control variate."""
        if under is not None and (under.method != design.method or under.probs is None
                                  or np.shape(under.probs) != np.shape(design.probs)):
            raise ValueError(f"`under` must be a design of the same method ({design.method}) on the same documents.")
        dt, c = unit_target(design)
        if design.judged is None:
            pd_ = self._inclusion(dt, design.probs, c, budget, design.defensive)
        else:
            held = np.asarray(design.judged, dtype=bool)[dt.rows]
            if not (dt.matters & ~held).any():  # a census of what is held
                return 0.0
            pd_ = self.design_for(dt, design.probs, c, float(budget), judged=held, defensive=design.defensive)
        return float(expected_poisson_variance(dt, pd_, design.probs, control_variate=self.control_variate,
                                               under=None if under is None else under.probs))

    def estimate_units(self, target, sample, grades, probs):
        return horvitz_thompson(target, sample.design, target.rows[sample.units], grades,
                                probs=self._model(probs))

    def fit_dof(self, target, sample, grades, probs) -> float:
        """The effective number of queries carrying the HT variance estimate (:func:`poisson_dof`)."""
        return poisson_dof(target, sample.design, target.rows[sample.units], grades, probs=self._model(probs))

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

    def design_for(self, target, probs, costs, budget, *, judged, defensive):
        design = uniform_inclusion(target, budget, costs=costs, judged=judged)
        _affordable_iv(design, target, budget)
        return design

    def draw_units(self, design, target, rng):
        if design.kind == "poisson":  # unequal costs: a uniform order taken while it fits the budget
            take, realized = draw_priority(design, rng)
            sample = DocumentHorvitzThompson.sample_of(realized, target, take)
            sample.attrs["expected_cost"] = float(np.dot(design.pi, design.costs))  # of the planned pi
            return sample
        take = np.flatnonzero(draw_uniform(design, rng))
        pi = design.pi[take]
        judged = design.costs == 0.0  # units judged before the run: a census
        census = judged[take]
        n, N = int((~census).sum()), int((~judged).sum())
        return DocumentSample(take, pi, 1.0 / pi, census, design,
                              stop_reason="all_judged" if n == N else "budget",
                              attrs={"expected_cost": float(np.dot(design.pi, design.costs)),
                                     "population": N, "sample_size": n})

    def estimate_units(self, target, sample, grades, probs):
        d = sample.design
        # a budgeted draw (unequal costs: HT with its realized pi), or every pooled unit sampled (exact)
        if d.kind == "poisson" or np.all(d.pi >= 1.0):
            d = PoissonDesign(pi=d.pi, costs=d.costs, budget=d.budget, kind="poisson")
        return horvitz_thompson(target, d, target.rows[sample.units], grades, probs=None)


# --------------------------------------------------------------------------- with replacement (HH)


# --------------------------------------------------------------------------- two stage


# --------------------------------------------------------------------------- within queries (UBIS-k)


