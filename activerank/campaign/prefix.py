"""Campaigns of the ``prefix`` method: rounds of tasks, one document per query whose walk surely goes on.

``method="prefix"`` (:mod:`activerank.design.kinds.prefix`, ``docs/prefix.md`` §7)
orders every live query by its priority ``xi = u / w`` and judges them in that
order, each one's documents one at a time: which document comes next, and
whether the query stops, depend on the labels seen in it; the first query whose
walk would push the cost over the budget is cut.  So a campaign cannot list its
tasks up front.  It runs in rounds instead.  At creation it stores the engine's
design and priority order for ``rng=seed``: every query's planned inclusion
probability, stopping scale and floor, the live queries in priority order,
their priorities ``xi`` and uniforms ``U``.  In each round, every query whose
walk surely takes its next label within the budget (whatever the walks before
it still judge; :func:`activerank.design.kinds.prefix.budget_walk`) has exactly
one task, the next document its walk asks for given the judgments stored so
far.  These are the labels the engine asks for in the same round.  Importing
the judgments moves the walks on.  The campaign is finished when no walk asks
for more: every query before the cut has stopped (``U > P_j``, or every
document it needs is judged), and the cut query cannot take its next label.

The walk is the engine's own, replayed from the stored grades.  A document judged
once is never asked again.  Once the campaign is finished, the estimate runs the
engine on the stored order with the stored grades as the labeler, so it equals
``activerank.estimate`` / ``compare`` / ``compare_many`` / ``rank_systems`` with
``method="prefix"`` and ``rng=seed`` given the same grades.

The budget is a hard cap: the judgments the walks ask for never cost more than it.
The cut query's judgments are bought (they count as spent and stay stored) but do
not enter the estimate.  Judgments imported ahead of the walks (documents nobody
asked for yet) are kept; they count once a walk reaches them, and never past the
budget (those of the cut query only as far as the budget would have bought them).

Partial judgments.  The estimate needs the campaign finished and otherwise raises,
naming how many queries still wait.  Which queries annotators finish first does
not describe how the sample was drawn.  The judgments stay stored.

Stores of the former design.  A store written before the hard budget (schema
version 7, no ``prefix_xi``) holds a Poisson sample of queries: it opens, shows
its status and exports its judgments and tasks as before, but this version does
not estimate it; reuse its judgments (``campaign qrels``, then
``activerank.estimate(..., judgments=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design.kinds.prefix import PrefixPlan

__all__ = ["LEGACY_MESSAGE", "PrefixCampaignPlan", "PrefixProgress", "estimate_prefix", "plan_prefix_campaign"]

# the arrays a prefix campaign stores (table ``arrays``); ``prefix_xi`` since the hard budget
ARRAY_NAMES = ("prefix_pi", "prefix_tau", "prefix_floor", "prefix_expected_cost", "prefix_within_variance",
               "prefix_live", "prefix_queries", "prefix_u", "document_costs")
OPTIONAL_ARRAY_NAMES = ("prefix_xi",)

LEGACY_MESSAGE = (
    "this prefix campaign was created before the prefix method's hard budget: it holds the former design's Poisson "
    "sample of queries, which this version of activerank no longer estimates. Its judgments are kept and can be "
    "reused: export them (`activerank campaign qrels`, or Campaign.write_qrels / judgments()) and pass them as "
    "`judgments=` to activerank.estimate / compare (with method='prefix' they cost nothing), or create a new "
    "campaign and import them.")


@dataclass(frozen=True)
class PrefixProgress:
    """Where the walks of a prefix campaign stand given the stored grades.

    Attributes
    ----------
    planned : list of int
        Queries the budget has surely reached, in priority order (the former design: the sampled queries).
    judged : dict
        Planned query -> document rows its walk has judged (and the budget bought), in judging order.
    waiting : dict
        Planned query -> the document row its walk asks for now (only walks that surely take it).
    finished : bool
        No walk asks for a label any more.
    n_used : int
        Queries of the sample (before the cut query), once finished.
    cut : int or None
        The cut query, once finished (None: no query is cut).
    """

    planned: list
    judged: dict
    waiting: dict
    finished: bool
    n_used: int
    cut: int | None


@dataclass(frozen=True, eq=False)
class PrefixCampaignPlan:
    """The frozen design and priority order of a prefix campaign.

    Attributes
    ----------
    plan : PrefixPlan
        Planned inclusion probabilities, stopping scales and floors of every pool query.
    queries : ndarray of shape (n,), int
        Every live query in ascending priority (the former design: the Poisson sample, in pool order).
    U : ndarray of shape (n,)
        Their uniforms (document ``j`` of query ``i`` is judged iff ``U_i <= P_j``).
    document_costs : ndarray of shape (n_docs,)
        Raw per-document costs (a query's cost is split over its documents in proportion).
    xi : ndarray of shape (n,) or None
        The priorities ``u / w`` (ascending); None in a store of the former Poisson design.
    """

    plan: PrefixPlan
    queries: np.ndarray
    U: np.ndarray
    document_costs: np.ndarray
    xi: np.ndarray | None = None

    @property
    def legacy(self) -> bool:
        """A store of the former Poisson design (no priorities): not estimated by this version."""
        return self.xi is None

    @property
    def order_set(self) -> frozenset:
        """The queries of the priority order (the former design: of the sample)."""
        return frozenset(self.queries.tolist())

    @property
    def n_queries(self) -> int:
        return int(self.queries.size)

    @property
    def expected_cost(self) -> float:
        return float(self.plan.budget)

    def draw(self):
        """The engine's draw (:class:`~activerank.design.kinds.prefix.PrefixDraw`)."""
        from ..design.kinds.prefix import PrefixDraw

        return PrefixDraw(self.queries, self.U, self.xi)

    def arrays(self) -> dict:
        p = self.plan
        out = {"prefix_pi": p.pi, "prefix_tau": p.tau, "prefix_floor": p.floor,
               "prefix_expected_cost": p.expected_cost, "prefix_within_variance": p.within_variance,
               "prefix_live": p.live.astype(np.int8), "prefix_queries": self.queries.astype(np.int64),
               "prefix_u": self.U, "document_costs": self.document_costs}
        if self.xi is not None:
            out["prefix_xi"] = self.xi
        return out

    @classmethod
    def from_arrays(cls, arrays: dict, *, expected_cost: float) -> "PrefixCampaignPlan":
        missing = [n for n in ARRAY_NAMES if arrays.get(n) is None]
        if missing:
            raise ValueError(f"prefix campaign store lacks the arrays {missing}.")
        plan = PrefixPlan(arrays["prefix_pi"], arrays["prefix_tau"], arrays["prefix_floor"],
                          arrays["prefix_expected_cost"], arrays["prefix_within_variance"], float(expected_cost),
                          arrays["prefix_live"].astype(bool))
        xi = arrays.get("prefix_xi")
        return cls(plan, arrays["prefix_queries"].astype(np.int64), arrays["prefix_u"], arrays["document_costs"],
                   None if xi is None else np.asarray(xi, dtype=np.float64))

    def layout(self, design):
        """The judging layout of ``design`` (nothing judged before the campaign: every document costs)."""
        from ..design.kinds.prefix import design_layout

        return design_layout(design, None)

    def walk(self, design, grades: dict, budget: float, layout=None) -> PrefixProgress:
        """Replay the walks on the stored ``grades`` (``{doc_row: grade}``) under ``budget``; ``layout``:
        :meth:`layout` of ``design`` if already built."""
        layout = self.layout(design) if layout is None else layout
        labels = np.full(design.probs.shape[0], -1, dtype=np.int64)
        if grades:
            labels[np.fromiter(grades.keys(), dtype=np.int64)] = np.fromiter(grades.values(), dtype=np.int64)
        if self.legacy:
            return self._walk_poisson(design, layout, labels)
        from ..design.kinds.prefix import budget_walk
        from ..design.kinds.prefix.budget import fits_limit

        bw = budget_walk(layout, design.probs, self.plan, self.draw(), design.method_spec.kind.order, labels,
                         float(budget))
        walk = bw.walk
        asked = np.flatnonzero(bw.request)
        if bw.finished:  # the sample and the cut query (none cut: every live query)
            reach = bw.n_used + (1 if bw.cut >= 0 else 0)
        else:  # every query before the last one asked for is reached (complete or asked for)
            reach = int(asked[-1]) + 1
        x = self.queries[:reach]
        rows = layout.rows[x]
        judged, waiting = {}, {}
        for i, q in enumerate(x.tolist()):
            steps = np.flatnonzero(walk.judged[i])
            if i == bw.cut:  # judgments held ahead of the walk count only as far as the budget buys them
                before = float(bw.spent[:i].sum())
                step_cost = layout.cost[q, walk.docs[i, steps]]
                steps = steps[before + np.cumsum(step_cost) <= fits_limit(budget)]
            judged[q] = rows[i, walk.docs[i, steps]]
        for i in asked.tolist():
            waiting[int(x[i])] = int(walk.waiting[i])
        cut = int(x[bw.cut]) if bw.finished and bw.cut >= 0 else None
        return PrefixProgress([int(q) for q in x], judged, waiting, bool(bw.finished), int(bw.n_used), cut)

    def _walk_poisson(self, design, layout, labels) -> PrefixProgress:
        """The former design's walks: every sampled query to its own depth (status and tasks only)."""
        from ..design.kinds.prefix import walk_sample

        walk = walk_sample(layout, design.probs, self.plan, self.queries, self.U, design.method_spec.kind.order,
                           labels)
        rows = layout.rows[self.queries]
        judged, waiting = {}, {}
        for i, q in enumerate(self.queries.tolist()):
            judged[q] = rows[i, walk.docs[i, np.flatnonzero(walk.judged[i])]]
            if walk.waiting[i] >= 0:
                waiting[q] = int(walk.waiting[i])
        return PrefixProgress([int(q) for q in self.queries], judged, waiting, not waiting, self.n_queries, None)

    def document_cost(self, design, layout=None) -> dict:
        """``{doc_row: cost}`` of every document a query of the order may ask for (budget units)."""
        layout = self.layout(design) if layout is None else layout
        rows, cost = layout.rows[self.queries], layout.cost[self.queries]
        ok = rows >= 0
        return dict(zip(rows[ok].tolist(), cost[ok].tolist()))


def plan_prefix_campaign(design, budget: float, seed: int) -> PrefixCampaignPlan:
    """The engine's ``prefix`` design and priority order for ``budget`` with ``rng=seed``.

    Raises
    ------
    ValueError
        No document can change a target, or the budget completes fewer than 2 queries in expectation.
    """
    if not design.q.any():
        raise ValueError("no document can change the compared values in any query (every difference is "
                         "exactly 0): there is nothing to judge.")
    try:
        kind, rng = design.method_spec.kind, np.random.default_rng(seed)
        run = kind.plan(design, budget, judged=None, rng=rng)
        drawn = kind.draw(design, run, rng)
        plan, x, U, xi = run.plan, drawn.queries, drawn.U, drawn.xi
    except ValueError as exc:  # the engine's wording speaks of its rng: a campaign has a seed
        raise ValueError(str(exc).replace("run again with another rng", "create it with another seed")) from None
    return PrefixCampaignPlan(plan, np.asarray(x, dtype=np.int64), np.asarray(U, dtype=np.float64),
                              np.asarray(design.document_costs, dtype=np.float64), np.asarray(xi, dtype=np.float64))


def estimate_prefix(design, pool, cplan: PrefixCampaignPlan, labels: np.ndarray, *, budget: float, ci: str = "auto"):
    """The engine's result for a finished campaign.

    Parameters
    ----------
    design : Design
        With ``probs`` and ``document_costs`` set.
    pool : Pool
    cplan : PrefixCampaignPlan
    labels : ndarray of shape (n_docs,)
        Stored grades of the documents the walks judged (-1 elsewhere).
    budget : float
        The campaign budget.

    Returns
    -------
    EstimateResult, ComparisonResult, MultiComparisonResult or SystemRankingResult

    Raises
    ------
    ValueError
        A store of the former Poisson design (:data:`LEGACY_MESSAGE`).
    """
    from ..design.kinds.prefix import PrefixRun
    from ..engine.core import estimate_sample

    if cplan.legacy:
        raise ValueError(LEGACY_MESSAGE)
    run = PrefixRun(cplan.layout(design), cplan.plan, float(budget))
    return estimate_sample(design, pool, run, cplan.draw(), labels, ci=ci)
