"""Campaigns of the ``prefix`` method: rounds of tasks, one document per unfinished sampled query.

``method="prefix"`` (:mod:`activerank.design.kinds.prefix`) samples queries (Poisson)
and judges each one's documents one at a time: which document comes next, and
whether the query stops, depend on the labels seen in it.  So a campaign cannot
list all its tasks up front.  It runs in rounds instead. At creation it stores
the engine's design and sample for ``rng=seed``: every query's inclusion
probability, stopping scale and floor, the sampled queries and their uniforms
``U``. In each round, every sampled query whose walk is not finished has exactly
one task, the next document its walk asks for given the judgments stored so
far. Importing those judgments moves the walks on. A query is finished when its
stopping rule says stop (``U > P_j``) or every document it needs is judged.

The walk is the engine's own (:func:`activerank.design.kinds.prefix.walk_sample`),
replayed from the stored grades. A document judged once is never asked
again. Once every sampled query is finished, the estimate runs the engine on
the stored sample with the stored grades as the labeler, so it equals
``activerank.estimate`` / ``compare`` / ``compare_many`` / ``rank_systems``
with ``method="prefix"`` and ``rng=seed`` given the same grades.

Partial judgments.  The estimate needs every sampled query finished and otherwise
raises, naming how many still wait. The unbiasedness argument holds for the whole
Poisson sample only. Which queries annotators finish first does not describe how
the sample was drawn. The judgments stay stored.

The budget is spent in expectation, as by the engine. The realized cost of the
judged prefixes may exceed it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design.kinds.prefix import PrefixPlan

__all__ = ["PrefixCampaignPlan", "estimate_prefix", "plan_prefix_campaign"]

# the arrays a prefix campaign stores (table ``arrays``)
ARRAY_NAMES = ("prefix_pi", "prefix_tau", "prefix_floor", "prefix_expected_cost", "prefix_within_variance",
               "prefix_live", "prefix_queries", "prefix_u", "document_costs")


@dataclass(frozen=True, eq=False)
class PrefixCampaignPlan:
    """The frozen design and sample of a prefix campaign.

    Attributes
    ----------
    plan : PrefixPlan
        Inclusion probabilities, stopping scales and floors of every pool query.
    queries : ndarray of shape (n,), int
        The sampled queries, in pool order.
    U : ndarray of shape (n,)
        Their uniforms (document ``j`` of query ``i`` is judged iff ``U_i <= P_j``).
    document_costs : ndarray of shape (n_docs,)
        Raw per-document costs (a query's cost is split over its documents in proportion).
    """

    plan: PrefixPlan
    queries: np.ndarray
    U: np.ndarray
    document_costs: np.ndarray

    @property
    def n_queries(self) -> int:
        return int(self.queries.size)

    @property
    def expected_cost(self) -> float:
        return float(self.plan.budget)

    def arrays(self) -> dict:
        p = self.plan
        return {"prefix_pi": p.pi, "prefix_tau": p.tau, "prefix_floor": p.floor,
                "prefix_expected_cost": p.expected_cost, "prefix_within_variance": p.within_variance,
                "prefix_live": p.live.astype(np.int8), "prefix_queries": self.queries.astype(np.int64),
                "prefix_u": self.U, "document_costs": self.document_costs}

    @classmethod
    def from_arrays(cls, arrays: dict, *, expected_cost: float) -> "PrefixCampaignPlan":
        missing = [n for n in ARRAY_NAMES if arrays.get(n) is None]
        if missing:
            raise ValueError(f"prefix campaign store lacks the arrays {missing}.")
        plan = PrefixPlan(arrays["prefix_pi"], arrays["prefix_tau"], arrays["prefix_floor"],
                          arrays["prefix_expected_cost"], arrays["prefix_within_variance"], float(expected_cost),
                          arrays["prefix_live"].astype(bool))
        return cls(plan, arrays["prefix_queries"].astype(np.int64), arrays["prefix_u"], arrays["document_costs"])

    def layout(self, design):
        """The judging layout of ``design`` (nothing judged before the campaign: every document costs)."""
        from ..design.kinds.prefix import design_layout

        return design_layout(design, None)

    def walk(self, design, grades: dict, layout=None):
        """Replay every sampled query's walk on the stored ``grades`` (``{doc_row: grade}``); ``layout``:
        :meth:`layout` of ``design`` if already built.

        Returns
        -------
        judged : dict
            Sampled query -> document rows its walk has judged, in judging order.
        waiting : dict
            Sampled query -> the document row its walk asks for next (finished queries are absent).
        """
        from ..design.kinds.prefix import walk_sample

        layout = self.layout(design) if layout is None else layout
        labels = np.full(design.probs.shape[0], -1, dtype=np.int64)
        if grades:
            labels[np.fromiter(grades.keys(), dtype=np.int64)] = np.fromiter(grades.values(), dtype=np.int64)
        walk = walk_sample(layout, design.probs, self.plan, self.queries, self.U, design.method_spec.kind.order,
                           labels)
        judged, docs, waiting = walk.judged, walk.docs, walk.waiting
        rows = layout.rows[self.queries]
        out, wait = {}, {}
        for i, x in enumerate(self.queries.tolist()):
            steps = np.flatnonzero(judged[i])
            out[x] = rows[i, docs[i, steps]]
            if waiting[i] >= 0:
                wait[x] = int(waiting[i])
        return out, wait

    def document_cost(self, design, layout=None) -> dict:
        """``{doc_row: cost}`` of every document a sampled query may ask for (budget units)."""
        layout = self.layout(design) if layout is None else layout
        rows, cost = layout.rows[self.queries], layout.cost[self.queries]
        ok = rows >= 0
        return dict(zip(rows[ok].tolist(), cost[ok].tolist()))


def plan_prefix_campaign(design, budget: float, seed: int) -> PrefixCampaignPlan:
    """The engine's ``prefix`` design and sample for ``budget`` with ``rng=seed``.

    Raises
    ------
    ValueError
        No document can change a target, or the budget samples fewer than 2 queries (in expectation, or
        in the draw).
    """
    if not design.q.any():
        raise ValueError("no document can change the compared values in any query (every difference is "
                         "exactly 0): there is nothing to judge.")
    try:
        kind, rng = design.method_spec.kind, np.random.default_rng(seed)
        run = kind.plan(design, budget, judged=None, rng=rng)
        drawn = kind.draw(design, run, rng)
        plan, x, U = run.plan, drawn.queries, drawn.U
    except ValueError as exc:  # the engine's wording speaks of its rng: a campaign has a seed
        raise ValueError(str(exc).replace("run again with another rng", "create it with another seed")) from None
    return PrefixCampaignPlan(plan, np.asarray(x, dtype=np.int64), np.asarray(U, dtype=np.float64),
                              np.asarray(design.document_costs, dtype=np.float64))


def estimate_prefix(design, pool, cplan: PrefixCampaignPlan, labels: np.ndarray, *, budget: float, ci: str = "auto"):
    """The engine's result for a campaign whose sampled queries are all finished.

    Parameters
    ----------
    design : Design
        With ``probs`` and ``document_costs`` set.
    pool : Pool
    cplan : PrefixCampaignPlan
    labels : ndarray of shape (n_docs,)
        Stored grades (-1 where none); every document the walks ask for is judged.
    budget : float
        The campaign budget.

    Returns
    -------
    EstimateResult, ComparisonResult, MultiComparisonResult or SystemRankingResult
    """
    from ..design.kinds.prefix import PrefixDraw, PrefixRun
    from ..engine.core import estimate_sample

    run = PrefixRun(cplan.layout(design), cplan.plan, float(budget))
    return estimate_sample(design, pool, run, PrefixDraw(cplan.queries, cplan.U), labels, ci=ci)
