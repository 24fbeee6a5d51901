"""Document-level campaigns: the engine's (query, document) sample as the task list.

A campaign created with a registered method of ``unit="document"`` (e.g.
``doc_dyn``, ``doc_stat``; :mod:`activerank.design.methods`) does not plan
queries: its plan is the budgeted sample of (query, document) units that
:func:`activerank.estimate` / :func:`activerank.compare` with the same pool,
probabilities, budget and ``rng=seed`` would send to a labeler
(the document kind, :mod:`activerank.design.kinds.documents`, with the Poisson plug-in
:class:`~activerank.design.kinds.documents.DocumentHorvitzThompson`).  Creation computes
the sample with the engine's own functions (:func:`document_target_of`,
:func:`unit_costs`, the plug-in's design, :func:`draw_priority`)
and then runs the engine itself with a recording labeler to confirm that it
asks for exactly these documents with exactly these inclusion probabilities;
a method whose engine draws differ (a design this module does not know) is
refused rather than silently planned differently.

The store keeps everything the estimate needs, so it never depends on how a
later activerank would choose inclusion probabilities: the linear target over
units (rows, queries, weights ``W``, gains, offsets), the inclusion
probabilities and unit costs of the Poisson design, and the sampled units.

The other document-level methods (``doc_uniform``, ``doc_hh``, ``two_stage``,
``doc_ubis``: draws with replacement, two stages, within-query draws) choose
their documents before any label, too, but estimate from their own draw records
(repeated draws, first- and second-stage probabilities).  Their campaigns store
the documents the engine asks for with ``rng=seed`` (:class:`RecordedDocumentPlan`,
recorded by running the engine twice with a placeholder annotator, once
answering the lowest grade and once the highest, which must ask for the same
documents) and the raw document costs.  Their estimate runs the engine again
with ``rng=seed`` and the stored grades as the annotator, so it *is*
``activerank.estimate`` (and friends) on those grades. If that engine asks for a
document the campaign did not plan (another activerank draws differently), it
raises.

Partial judgments
-----------------
A budgeted sample (stores written since 0.5) takes its units in the order of
``xi = U / pi``; its first ``m`` units are a fixed-size priority sample with
the exact inclusion probabilities ``min(1, pi xi_(m+1))``, so the estimate
uses the longest run of judged tasks at the head of that order
(:meth:`DocumentPlan.judged_prefix`; an export's ``draw`` column is the
order) and counts the tasks missing and judged beyond it.  A Poisson sample
(older stores) with some units missing is not a Poisson sample, and its
estimate needs every sampled unit judged; the judgments stay stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..design.kinds.documents import (
    DocumentHorvitzThompson,
    DocumentTarget,
    PoissonDesign,
    document_target_of,
    draw_poisson,
    draw_priority,
    realized_pi,
    unit_costs,
)

__all__ = ["DocumentPlan", "RecordedDocumentPlan", "estimate_documents", "estimate_recorded", "held_units",
           "plan_documents"]

# the arrays a document-level campaign stores (table ``arrays``), and how they rebuild the plan
ARRAY_NAMES = ("unit_rows", "unit_query", "unit_weights", "unit_gains", "unit_offsets", "unit_pi", "unit_costs",
               "unit_sample")
# stored since the budgeted draw (0.5): the planned pi the draw ranked units by (``unit_pi`` is then the
# realized pi of the estimate); a store without it holds a Poisson sample of ``unit_pi``
OPTIONAL_ARRAY_NAMES = ("unit_planned_pi",)


@dataclass(frozen=True, eq=False)
class DocumentPlan:
    """The frozen document sample of a campaign.

    Attributes
    ----------
    target : DocumentTarget
        The linear target over (query, document) units.
    design : PoissonDesign
        Inclusion probability (of the estimate) and cost of every unit.
    sample : ndarray of int64
        Sampled unit indices, ascending (the engine's draw order: by query,
        then document row).
    planned : ndarray or None
        The planned ``pi`` a budgeted draw ranked the units by
        (:func:`~activerank.design.kinds.documents.draw_priority`); None for a
        Poisson sample of ``design.pi`` (stores written before 0.5).
    """

    target: DocumentTarget
    design: PoissonDesign
    sample: np.ndarray
    planned: np.ndarray | None = None

    @property
    def rows(self) -> np.ndarray:
        """Document row of every sampled unit (the tasks), in draw order."""
        return self.target.rows[self.sample]

    @property
    def queries(self) -> np.ndarray:
        """Pool query of every sampled unit, in draw order."""
        return self.target.query[self.sample]

    @property
    def costs(self) -> np.ndarray:
        """Cost of every sampled unit (budget units)."""
        return self.design.costs[self.sample]

    @property
    def n_tasks(self) -> int:
        return int(self.sample.size)

    @property
    def expected_cost(self) -> float:
        return float(self.design.budget)

    def by_query(self) -> dict:
        """``{query: rows}`` of the sampled units, queries in draw order."""
        x = self.queries
        cuts = np.flatnonzero(np.diff(x)) + 1
        return {int(part[0]): rows for part, rows in zip(np.split(x, cuts), np.split(self.rows, cuts))}

    def arrays(self) -> dict:
        """The arrays to store (:data:`ARRAY_NAMES`)."""
        t, d = self.target, self.design
        return {"unit_rows": t.rows, "unit_query": t.query, "unit_weights": t.weights, "unit_gains": t.gains,
                "unit_offsets": t.offsets, "unit_pi": d.pi, "unit_costs": d.costs, "unit_sample": self.sample,
                **({} if self.planned is None else {"unit_planned_pi": self.planned})}

    @classmethod
    def from_arrays(cls, a: dict, *, n_docs: int, expected_cost: float) -> "DocumentPlan":
        """Rebuild a plan from stored arrays (``a[name]`` for every name of :data:`ARRAY_NAMES`)."""
        missing = [n for n in ARRAY_NAMES if a.get(n) is None]
        if missing:
            raise ValueError(f"document-level campaign store lacks the arrays {missing}.")
        offsets = a["unit_offsets"].astype(np.int64)
        target = DocumentTarget(rows=a["unit_rows"].astype(np.int64), query=a["unit_query"].astype(np.int64),
                                weights=a["unit_weights"], gains=a["unit_gains"], n_queries=offsets.size - 1,
                                n_docs=int(n_docs), offsets=offsets)
        design = PoissonDesign(pi=a["unit_pi"], costs=a["unit_costs"], budget=float(expected_cost), kind="poisson")
        planned = a.get("unit_planned_pi")
        return cls(target, design, a["unit_sample"].astype(np.int64), planned)

    @property
    def budgeted(self) -> bool:
        """Whether the sample is a budgeted draw (never over the budget) rather than a Poisson sample."""
        return self.planned is not None

    def _priorities(self, seed: int) -> np.ndarray:
        """``xi = U / pi`` of every sampled unit (``sample`` order), from the draw's uniforms for ``seed``."""
        planned = self.planned
        if planned is None:
            raise ValueError("a Poisson sample (a store written before 0.5) has no draw order.")
        u = np.random.default_rng(seed).random(planned.shape)
        return u[self.sample] / planned[self.sample]

    def draw_order(self, seed: int) -> np.ndarray:
        """Every sampled unit's position in the budgeted draw's order (ascending ``U / pi``; ``sample`` order)."""
        if self.planned is None:
            return np.arange(self.sample.size)
        rank = np.empty(self.sample.size, dtype=np.int64)
        held = held_units(self.design)[self.sample]  # certain whatever their order: ranked after the tasks
        rank[np.lexsort((self._priorities(seed), held))] = np.arange(self.sample.size)
        return rank

    def judged_prefix(self, judged: np.ndarray, seed: int) -> tuple["DocumentPlan", int]:
        """The plan of the longest run of judged tasks at the head of the draw order, and its length.

        A budgeted draw takes units in the order of ``xi = U / pi`` (the uniforms of ``seed``); its first
        ``m`` units are a fixed-size priority sample with the exact inclusion probabilities
        ``min(1, pi xi_(m+1))`` (``docs/document_level.md``), so they estimate without bias while later
        tasks are still out.  ``judged`` flags every sampled unit (in ``sample`` order).  Units held at creation
        (:func:`held_units`) are always in, exactly; ``m`` counts the others (the tasks).
        """
        xi = self._priorities(seed)  # refuses a Poisson sample
        judged = np.asarray(judged, dtype=bool)
        held = held_units(self.design)[self.sample]
        if not judged[held].all():
            raise ValueError(f"{int(np.count_nonzero(held & ~judged))} documents whose labels were held at creation "
                             "are not stored: import the held qrels (Campaign.import_qrels) before estimating.")
        # held units are certain, whatever their place in the order; the others' head is a priority sample
        free = np.flatnonzero(~held)
        order = free[np.argsort(xi[free], kind="stable")]
        head = judged[order]
        m = int(head.size if head.all() else np.argmin(head))
        threshold = float(xi[order[m]]) if m < order.size else math.inf
        real = realized_pi(np.asarray(self.planned), threshold)
        real[held_units(self.design)] = 1.0
        take = np.sort(np.r_[self.sample[held], self.sample[order[:m]]])
        return DocumentPlan(self.target, replace(self.design, pi=real), take, self.planned), m

    def replay(self, seed: int) -> np.ndarray:
        """The sampled units the draw with ``seed`` takes (budgeted from ``planned``, or Poisson)."""
        rng = np.random.default_rng(seed)
        if self.planned is None:
            return np.flatnonzero(draw_poisson(self.design, rng))
        planned = PoissonDesign(pi=self.planned, costs=self.design.costs, budget=self.design.budget,
                                kind="poisson")
        return draw_priority(planned, rng)[0]


# the arrays a campaign of a recorded document design stores (table ``arrays``)
RECORDED_ARRAY_NAMES = ("recorded_rows", "recorded_query", "recorded_costs", "document_costs")


@dataclass(frozen=True, eq=False)
class RecordedDocumentPlan:
    """The documents a document-level design without a plain Poisson sample asks for, in request order.

    Attributes
    ----------
    rows : ndarray of int64
        Document rows (the tasks), each once, in the order the engine asks for them.
    queries : ndarray of int64
        Pool query of every row.
    costs : ndarray
        Cost charged for every row (budget units); a design's per-query overhead (e.g. ``TwoStage(query_cost=)``)
        is charged with the query's first row.
    document_costs : ndarray of shape (n_docs,)
        Raw per-document costs of the design (what the engine's cost model splits).
    """

    rows: np.ndarray
    queries: np.ndarray
    costs: np.ndarray
    document_costs: np.ndarray

    @property
    def n_tasks(self) -> int:
        return int(self.rows.size)

    @property
    def expected_cost(self) -> float:
        """The cost of the recorded documents and overheads (what the engine's run spends)."""
        return float(self.costs.sum())

    def by_query(self) -> dict:
        """``{query: rows}`` of the recorded documents, queries in the order first asked."""
        out: dict = {}
        for x, r in zip(self.queries.tolist(), self.rows.tolist()):
            out.setdefault(int(x), []).append(int(r))
        return {x: np.asarray(r, dtype=np.int64) for x, r in out.items()}

    def arrays(self) -> dict:
        return {"recorded_rows": self.rows, "recorded_query": self.queries, "recorded_costs": self.costs,
                "document_costs": self.document_costs}

    @classmethod
    def from_arrays(cls, a: dict) -> "RecordedDocumentPlan":
        missing = [n for n in RECORDED_ARRAY_NAMES if a.get(n) is None]
        if missing:
            raise ValueError(f"document-level campaign store lacks the arrays {missing}.")
        return cls(a["recorded_rows"].astype(np.int64), a["recorded_query"].astype(np.int64), a["recorded_costs"],
                   a["document_costs"])


def _record(design, pool, budget: float, seed: int, grade: int):
    """Run the engine with an annotator answering ``grade`` to everything: the trace of the new documents."""
    from ..engine import FixedBudget, run

    def placeholder(query_id, doc_ids):
        return np.full(len(doc_ids), grade, dtype=np.int64)

    trace = run(design, pool, placeholder, FixedBudget(budget, np.random.default_rng(seed))).trace
    new = trace[trace["new"].to_numpy(bool)]
    cost = new["cost"].to_numpy(np.float64).copy()
    overhead = float(trace.attrs.get("query_overhead_cost", 0.0))
    if overhead > 0 and cost.size:  # charged with each query's first new document
        x = new["query"].to_numpy(np.int64)
        first = np.unique(x, return_index=True)[1]
        drawn = trace.attrs.get("first_stage_queries")
        if drawn is not None and len(drawn):  # per first-stage draw of the query
            per = np.bincount(np.asarray(drawn, dtype=np.int64), minlength=int(x.max()) + 1)[x[first]]
            cost[first] += overhead * per / per.sum()
        else:
            cost[first] += overhead / first.size
    return new.assign(cost=cost)


def record_documents(design, pool, budget: float, seed: int) -> RecordedDocumentPlan:
    """The documents the engine asks for with ``rng=seed``, recorded (module docstring).

    Raises
    ------
    ValueError
        The design asks for other documents when the answers change (its draws depend on the labels).
    """
    lo = _record(design, pool, budget, seed, 0)
    hi = _record(design, pool, budget, seed, design.n_grades - 1)
    rows = lo["doc_row"].to_numpy(np.int64)
    if not np.array_equal(rows, hi["doc_row"].to_numpy(np.int64)):
        raise ValueError(f"`method`={design.method!r} chooses its documents from the labels it sees; a campaign "
                         "exports its document tasks before any label and cannot plan it.")
    return RecordedDocumentPlan(rows, lo["query"].to_numpy(np.int64), lo["cost"].to_numpy(np.float64),
                                np.asarray(design.document_costs, dtype=np.float64))


def estimate_recorded(design, pool, plan: RecordedDocumentPlan, labels: np.ndarray, *, budget: float, seed: int):
    """The engine's result with ``rng=seed`` and the stored grades as the annotator.

    Parameters
    ----------
    design : Design
        With ``probs`` and ``document_costs`` set.
    labels : ndarray of shape (n_docs,)
        Grades of the recorded rows (-1 elsewhere).

    Raises
    ------
    ValueError
        The engine asks for a document the campaign did not record.
    """
    from .._validation import ci_iv
    from ..engine import FixedBudget, run

    planned = set(plan.rows.tolist())
    offsets = np.asarray(pool.offsets, dtype=np.int64)
    qindex = {k: x for x, k in enumerate(np.asarray(pool.query_ids).tolist())}

    def stored(query_id, doc_ids):
        x = qindex[query_id.item() if isinstance(query_id, np.generic) else query_id]
        lo = int(offsets[x])
        at = {d: lo + j for j, d in enumerate(pool.doc_keys(np.arange(lo, offsets[x + 1])))}
        rows = np.asarray([at[d] for d in doc_ids], dtype=np.int64)
        if not set(rows.tolist()) <= planned:
            raise ValueError(f"`method`={design.method!r}: this activerank draws documents the campaign did not "
                             "plan (the campaign was created by another version); its judgments are kept.")
        return labels[rows]

    return run(design, pool, stored, FixedBudget(budget, np.random.default_rng(seed)), ci=ci_iv("auto"))


def plan_documents(design, pool, budget: float, seed: int) -> DocumentPlan | RecordedDocumentPlan:
    """The engine's document sample for ``design`` at ``budget`` with ``rng=seed``.

    Parameters
    ----------
    design : Design
        A design of a document-level method (``design.probs`` set).
    pool : Pool
        The standardized pool.
    budget : float
        Expected cost, in the budget unit of the query-level methods.
    seed : int

    Returns
    -------
    DocumentPlan or RecordedDocumentPlan
        The Poisson sample (``doc_dyn``, ``doc_stat``), or the recorded requests of the other designs.

    Raises
    ------
    ValueError
        No unit can change a target, the budget buys fewer than 2 documents
        in expectation, or the engine draws this method's documents
        differently (not a plain Poisson design).
    """
    est = design.method_spec.kind
    if not isinstance(est, DocumentHorvitzThompson):  # no plain Poisson sample: record what the engine asks
        return record_documents(design, pool, budget, seed)
    dt = document_target_of(design)
    if not dt.matters.any():
        raise ValueError("no document can change the compared values in any query (every difference is "
                         "exactly 0): there is nothing to judge.")
    c = unit_costs(dt, design.costs, design.document_costs)
    # the engine's design for the budget (its refusals too: a unit costing more than the budget); units held
    # at creation (``held_qrels``) are certain and free, as ``judgments=`` makes them in activerank.estimate
    held = np.zeros(dt.n_units, dtype=bool) if design.judged is None else np.asarray(design.judged)[dt.rows]
    pd = est.design_for(dt, design.probs, c, float(budget), judged=held, defensive=design.defensive)
    take, realized = draw_priority(pd, np.random.default_rng(seed))
    plan = DocumentPlan(dt, realized, take, pd.pi)
    _check_against_engine(plan, design, pool, budget, seed)
    return plan


def held_units(design: PoissonDesign) -> np.ndarray:
    """Units held at creation: certain and free (``pi = 1`` at cost 0); every other unit costs more than 0."""
    return (np.asarray(design.pi) == 1.0) & (np.asarray(design.costs) == 0.0)


def _check_against_engine(plan: DocumentPlan, design, pool, budget, seed) -> None:
    """Run the engine (fixed budget, ``rng=seed``) with a labeler that records what it is asked."""
    from ..engine import FixedBudget, Judgments, run

    def record(query_id, doc_ids):
        return np.zeros(len(doc_ids), dtype=np.int64)

    store = None
    if design.judged is not None and np.any(design.judged):  # held: a placeholder grade (draws ignore grades)
        store = Judgments(pool, design.n_grades)
        store.labels[np.asarray(design.judged, dtype=bool)] = 0
    trace = run(design, pool, record, FixedBudget(budget, np.random.default_rng(seed)), judgments=store).trace
    rows = trace["doc_row"].to_numpy(np.int64)
    pi = trace["pi"].to_numpy(np.float64)
    if not (np.array_equal(rows, plan.rows) and np.array_equal(pi, plan.design.pi[plan.sample])):
        raise ValueError(
            f"`method`={design.method!r}: the engine draws this method's documents differently from a Poisson "
            "design of activerank.design.kinds.documents.inclusion_probabilities; campaigns cannot plan it yet.")


def estimate_documents(design, pool, plan: DocumentPlan, grades: np.ndarray, probs: np.ndarray, *, budget: float):
    """The engine's result for a fully judged document sample.

    Parameters
    ----------
    design : Design
        The campaign's design (target, method, ``p``).
    pool : Pool
    plan : DocumentPlan
    grades : ndarray of shape (n_tasks,)
        Grade of every sampled unit, in draw order.
    probs : ndarray of shape (n_docs, n_grades)
        The stored relevance model (the difference estimator's model means).
    budget : float
        The campaign budget (reported as the result's ``budget``).

    Returns
    -------
    EstimateResult, ComparisonResult, MultiComparisonResult or SystemRankingResult
        What :func:`activerank.estimate` (and friends) return for the same
        sample and grades: the estimate through the method's estimator, the
        result through the engine's one assembly.
    """
    from ..design.kinds.documents import UnitPlan
    from ..engine.core import estimate_sample

    dt, pdsg, take = plan.target, plan.design, plan.sample
    kind = design.method_spec.kind
    labels = np.full(pool.n_docs, -1, dtype=np.int64)
    labels[plan.rows] = np.asarray(grades, dtype=np.int64)
    run = UnitPlan(dt, pdsg.costs, held_units(pdsg), pdsg, float(budget))
    design = replace(design, probs=probs)  # the stored relevance model: the difference estimator's means
    return estimate_sample(design, pool, run, kind.sample_of(pdsg, dt, take), labels)
