"""Per-family replays: planning a campaign's sample, rebuilding it from the store, estimating and checking it.

Everything that depends on how a campaign's method samples lives here, side
by side per family, so that a new family (or one generic design plug-in
interface) changes this module only:

- query-level with replacement (``active``, ``passive``): the draw sequence,
  estimated from its longest fully judged prefix by the engine;
- without replacement (``active_wor``; :mod:`activerank.campaign.without_replacement`);
- document-level, a Poisson sample or the recorded documents of the engine
  (:mod:`activerank.campaign.documents`);
- ``prefix``, queries then documents one at a time (:mod:`activerank.campaign.prefix`);
- any other design kind, through its protocol alone (:mod:`activerank.design.kinds.base`): the store keeps
  what its ``to_arrays`` returns, the tasks are what ``labels_needed`` asks for given the stored grades (in
  rounds when the design is sequential), and the estimate is its ``estimate`` once nothing is asked for.

:func:`plan_family` draws the sample at creation, :func:`family_meta` and
:func:`family_arrays` say what of it the store keeps, and :class:`_Replay`
(a part of :class:`activerank.campaign.Campaign`) rebuilds it on opening,
estimates from the stored grades and replays it in :meth:`~_Replay.check`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..design.kinds.documents import DocumentDesign
from ..design.kinds.prefix import PrefixSampling
from ..design.kinds.query import QueryDraws
from ..design.kinds.query_wor import WithoutReplacementDesign
from ..design.sampling import DrawPlan, draw_budgeted
from ..design.without_replacement import WORSample
from ..engine import estimate_from_plan
from .documents import ARRAY_NAMES as _UNIT_ARRAYS
from .documents import OPTIONAL_ARRAY_NAMES as _UNIT_OPTIONAL
from .documents import RECORDED_ARRAY_NAMES as _RECORDED_ARRAYS
from .documents import (
    DocumentPlan,
    RecordedDocumentPlan,
    estimate_documents,
    estimate_recorded,
    held_units,
    plan_documents,
)
from .integrity import full_problems
from .schema import PREFIX_SCHEMA_VERSION
from .prefix import ARRAY_NAMES as _PREFIX_ARRAYS
from .prefix import LEGACY_MESSAGE as _PREFIX_LEGACY
from .prefix import OPTIONAL_ARRAY_NAMES as _PREFIX_OPTIONAL
from .prefix import PrefixCampaignPlan, estimate_prefix, plan_prefix_campaign
from .without_replacement import estimate_without_replacement, plan_without_replacement

__all__ = ["BUDGET_RTOL", "family_arrays", "family_meta", "plan_family"]

BUDGET_RTOL = 1e-9  # cost sums beyond the budget by rounding only (relative) count as within it


# --------------------------------------------------------------------------- creation


def plan_family(dsg, pool, budget: float, seed: int):
    """The sample of a new campaign: ``(plan, documents, wor, prefix, kind_arrays)``, the last four None but
    one's own.

    ``plan`` lists the draws (query-level with replacement), the units (one per
    document task), the sample without replacement in selection order, the
    prefix method's priority order (every live query, with its planned expected
    cost; the hard budget decides how far it is judged), or the queries of
    another design kind's sample (:meth:`~activerank.design.kinds.base.DesignKind.query_draws`).
    """
    documents = wor = prefix = None
    if not _builtin(dsg.method_spec.kind):  # any other design kind: its protocol alone
        kind = dsg.method_spec.kind
        rng = np.random.default_rng(seed)
        planned = kind.plan(dsg, budget, judged=None, rng=rng)
        sample = kind.draw(dsg, planned, rng)
        plan = kind.query_draws(dsg, planned, sample)
        if plan.n_draws == 0:
            raise ValueError("the design sampled no query: there is nothing to judge.")
        return plan, None, None, None, dict(kind.to_arrays(dsg, planned, sample))
    if dsg.method_spec.unit == "prefix":  # the engine's design and priority order; tasks come in rounds
        prefix = plan_prefix_campaign(dsg, budget, seed)
        x = prefix.queries
        plan = DrawPlan(queries=x, new=np.ones(x.size, dtype=bool), charged=prefix.plan.expected_cost[x],
                        budget=budget)
    elif dsg.method_spec.unit == "document":  # the engine's Poisson sample of (query, document) units
        documents = plan_documents(dsg, pool, budget, seed)
        plan = DrawPlan(queries=documents.queries, new=np.ones(documents.n_tasks, dtype=bool),
                        charged=documents.costs, budget=budget)
    else:
        if not dsg.q.any():
            raise ValueError("no document can change the compared values in any query (every difference is "
                             "exactly 0): there is nothing to judge.")
        if dsg.method_spec.replacement:
            plan = draw_budgeted(dsg.q, dsg.costs.cost, budget, seed)
        else:  # the engine's one sample without replacement (the plug-in draws it, as in estimate)
            wor = plan_without_replacement(dsg, budget, seed)
            plan = DrawPlan(queries=wor.indices, new=np.ones(wor.n, dtype=bool), charged=wor.cost,
                            budget=budget)
    return plan, documents, wor, prefix, None


def _builtin(kind) -> bool:
    """The kinds whose campaigns have a family of their own (above); every other one is generic."""
    return isinstance(kind, (QueryDraws, WithoutReplacementDesign, DocumentDesign, PrefixSampling))


def family_meta(documents=None, wor=None, prefix=None, kind_arrays=None) -> dict:
    """The ``meta`` entries that tell the family of a new campaign."""
    meta = {}
    if kind_arrays is not None:
        meta.update(sampling="kind", kind_arrays=sorted(kind_arrays))
    if documents is not None:
        meta.update(unit="document", expected_cost=documents.expected_cost)
        if isinstance(documents, RecordedDocumentPlan):
            meta.update(document_plan="recorded")
    if wor is not None:
        meta.update(sampling="without_replacement", wor_threshold=float(wor.threshold))
    if prefix is not None:
        meta.update(unit="prefix", expected_cost=prefix.expected_cost)
    return meta


def family_arrays(documents=None, wor=None, prefix=None, kind_arrays=None) -> list:
    """The ``(name, array)`` pairs a new campaign of the family stores in ``arrays``."""
    out = [(f"kind_{n}", np.asarray(a)) for n, a in sorted((kind_arrays or {}).items())]
    if documents is not None:
        out += list(documents.arrays().items())
    if wor is not None:
        out.append(("wor_pi", wor.pi))
    if prefix is not None:
        out += list(prefix.arrays().items())
    return out


# --------------------------------------------------------------------------- the campaign's part


class _Replay:
    """The family-specific part of :class:`activerank.campaign.Campaign` (a mixin; see the module docstring)."""

    def _load_family(self):
        """Rebuild the stored sample and the documents each planned query needs (after the design is loaded)."""
        self._documents = self._wor = self._prefix = self._kind = None
        self._rounds, self._rounds_seen, self._task_cost = False, False, None
        if self.meta.get("sampling") == "kind":  # another design kind: tasks in rounds, from its protocol
            self._load_kind()
            return
        if self.meta.get("sampling") == "without_replacement":
            self._wor = WORSample(indices=self._plan.queries, pi=self._array("wor_pi"),
                                  threshold=float(self.meta["wor_threshold"]), cost=self._plan.charged,
                                  budget=self._plan.budget)
        if self.unit == "prefix":  # the tasks depend on the judgments: see _refresh_prefix
            self._prefix = PrefixCampaignPlan.from_arrays(
                {n: self._array(n) for n in _PREFIX_ARRAYS + _PREFIX_OPTIONAL},
                expected_cost=float(self.meta["expected_cost"]))
            self._design = replace(self._design, probs=self.probs(), document_costs=self._prefix.document_costs)
            self._prefix_layout = self._prefix.layout(self._design)  # built once: every replay reads it
            self._task_cost = self._prefix.document_cost(self._design, self._prefix_layout)
            self._planned, self._prefix_state = [], None  # the queries the budget reached: _refresh_prefix
            self._rounds = True
            self._refresh(self._combined()[0])
            return
        if self.meta.get("document_plan") == "recorded":  # the engine runs again at estimate time
            self._documents = RecordedDocumentPlan.from_arrays({n: self._array(n) for n in _RECORDED_ARRAYS})
            self._design = replace(self._design, probs=self.probs(), document_costs=self._documents.document_costs)
            self._needed = self._documents.by_query()
            self._planned = list(self._needed)
        elif self.unit == "document":  # the sampled (query, document) units are the tasks
            self._documents = DocumentPlan.from_arrays({n: self._array(n) for n in _UNIT_ARRAYS + _UNIT_OPTIONAL},
                                                       n_docs=int(self._offsets[-1]),
                                                       expected_cost=float(self.meta["expected_cost"]))
            self._needed = self._documents.by_query()
            self._planned = list(self._needed)
        else:  # planned queries in draw order and the documents each needs
            first = self._plan.queries[self._plan.new]
            self._planned = [int(x) for x in first]
            self._needed = {x: self._design.documents(x) for x in self._planned}
        self._needed_rows = {int(r): x for x, rows in self._needed.items() for r in rows}

    def _load_kind(self):
        """Rebuild another design kind's stored plan and sample (the method must be registered)."""
        from ..design.methods import get_method

        kind = get_method(self.method).kind
        self._design = replace(self._design, probs=self.probs())
        arrays = {n: self._array(f"kind_{n}") for n in self.meta["kind_arrays"]}
        self._kind = (kind, *kind.from_arrays(self._design, arrays))
        self._planned = list(dict.fromkeys(int(x) for x in self._plan.queries.tolist()))
        offsets, cost = self._offsets, self._design.costs.cost
        # a query's documents share its cost
        self._task_cost = {r: float(cost[x]) / max(int(offsets[x + 1] - offsets[x]), 1)
                           for x in self._planned for r in range(int(offsets[x]), int(offsets[x + 1]))}
        self._rounds = True
        self._refresh(self._combined()[0])

    def _labels(self, grades) -> np.ndarray:
        labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
        if grades:
            labels[np.fromiter(grades.keys(), dtype=np.int64)] = np.fromiter(grades.values(), dtype=np.int64)
        return labels

    def _refresh(self, grades) -> None:
        """This round's tasks given the stored ``grades`` (campaigns whose tasks depend on them)."""
        self._rounds_seen = False  # tasks() replays again unless it set this itself (default combine rule)
        if self._kind is not None:
            self._refresh_kind(grades)
        else:
            self._refresh_prefix(grades)

    def _refresh_kind(self, grades) -> None:
        """Every sampled query needs its judged documents and those the design asks for now."""
        kind, plan, sample = self._kind
        request = kind.labels_needed(self._design, plan, sample, self._labels(grades))
        asked = dict(request.by_query())
        self._waiting = {x: int(rows[0]) for x, rows in asked.items()}
        offsets = self._offsets
        self._needed = {}
        for x in self._planned:
            judged = [r for r in range(int(offsets[x]), int(offsets[x + 1])) if r in grades]
            self._needed[x] = np.union1d(np.asarray(judged, dtype=np.int64), asked.get(x, np.zeros(0, np.int64)))
        self._needed_rows = {int(r): x for x, rows in self._needed.items() for r in rows}

    def _refresh_prefix(self, grades) -> None:
        """A prefix campaign's tasks given the stored ``grades``: every query the budget has reached needs the
        documents its walk has judged and, if its walk surely goes on, the one it asks for next
        (:mod:`activerank.campaign.prefix`)."""
        state = self._prefix.walk(self._design, grades, self.budget, self._prefix_layout)
        self._prefix_state, self._planned, self._waiting = state, state.planned, state.waiting
        judged = state.judged
        self._needed = {x: (np.append(judged[x], self._waiting[x]) if x in self._waiting else judged[x])
                        for x in self._planned}
        self._needed_rows = {int(r): x for x, rows in self._needed.items() for r in rows}

    # ------------------------------------------------------------------ estimate

    def estimate(self, *, combine=None):
        """Estimate from the judgments so far.

        Uses the longest prefix of the draw sequence whose queries are all
        fully judged.  A prefix of i.i.d. draws is itself an i.i.d. sample
        from ``q`` (its length does not depend on the labels), so the
        estimator stays valid; using fully judged queries *beyond* an
        unfinished one would select draws by how fast annotators answered.
        Partially judged queries are reported by :meth:`status`.  Once every
        planned query is judged the result equals ``activerank.estimate`` /
        ``activerank.compare`` with the same pool, probabilities, seed and
        budget (given the same grades).

        A document-level campaign (``unit="document"``) estimates from its
        whole Poisson sample only, and equals the in-memory engine
        (``method="doc_dyn"`` etc., same seed) once every sampled document
        is judged; before that it raises (a sample missing the tasks nobody
        has answered yet is not a Poisson sample; see
        :mod:`activerank.campaign.documents`).  So does a campaign of a
        method without replacement (``active_wor``) until every sampled query
        is judged (:mod:`activerank.campaign.without_replacement`), and a
        prefix campaign until no walk asks for a judgment (:mod:`activerank.campaign.prefix`; a store of the
        former Poisson prefix design is not estimated: the error says how to reuse its judgments).

        Returns
        -------
        EstimateResult, ComparisonResult, MultiComparisonResult or SystemRankingResult
            As :func:`activerank.estimate` (one ranker),
            :func:`activerank.compare` (two), :func:`activerank.compare_many`
            or :func:`activerank.rank_systems`.  ``budget`` is the campaign
            budget; ``n_draws`` and ``cost_spent`` cover the usable prefix.

        Raises
        ------
        ValueError
            No draw is usable yet (the first drawn query is not fully judged;
            document-level: some sampled document is not judged -- the
            message says how many).  The judgments stay stored.
        """
        res = self._estimate(combine)
        if "auto" in self.meta:  # what method="auto" chose at creation, as the API reports it
            res.trace.attrs["auto"] = self.meta["auto"]
        if "judges" in self.meta:  # how the judges were calibrated into the stored model
            res.trace.attrs["judges"] = self.meta["judges"]
        return res

    def _estimate(self, combine):
        if self._documents is not None:
            return self._estimate_documents(combine)
        if self._prefix is not None:
            return self._estimate_prefix(combine)
        if self._kind is not None:
            return self._estimate_kind(combine)
        if self._wor is not None:
            return self._estimate_without_replacement(combine)
        grades, _, done, partial, pending, prefix = self._progress(combine)
        if prefix == 0:
            x = int(self._plan.queries[0])
            rows = self._needed[x]
            n = sum(1 for r in rows.tolist() if r in grades)
            raise ValueError(
                f"nothing to estimate yet: the first drawn query {self._qkeys[x]!r} has {n} of {rows.size} "
                "documents judged (the estimate uses draws in order, up to the first query not fully judged)."
            )
        plan = DrawPlan(queries=self._plan.queries[:prefix], new=self._plan.new[:prefix],
                        charged=self._plan.charged[:prefix], budget=self._plan.budget)
        labels = self._held_labels(grades)
        for x in np.unique(plan.queries).tolist():
            rows = self._needed[x]
            labels[rows] = [grades[r] for r in rows.tolist()]
        return estimate_from_plan(self._design, self.pool(), plan, labels)

    def _held_labels(self, grades) -> np.ndarray:
        """Grades of the queries whose labels were held at creation (an exactly known stratum), -1 elsewhere."""
        labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
        held = self._design.held
        for x in ([] if held is None else np.flatnonzero(held).tolist()):
            rows = self._design.documents(x)
            missing = [r for r in rows.tolist() if r not in grades]
            if missing:
                raise ValueError(f"query {self._qkeys[x]!r} was planned as held (its labels given at creation) but "
                                 f"{len(missing)} of its documents have no stored judgment: import the qrels file "
                                 "given at creation (import_qrels, scope='pool').")
            labels[rows] = [grades[r] for r in rows.tolist()]
        return labels

    def _estimate_without_replacement(self, combine):
        grades, _, done, partial, pending, _ = self._progress(combine)
        if partial or pending:
            raise ValueError(
                f"the sample without replacement ({self.method!r}) is usable only whole: {len(partial)} of its "
                f"{len(self._planned)} queries are partially judged and {len(pending)} not at all (module "
                "activerank.campaign.without_replacement); the judgments stay stored.")
        labels = self._held_labels(grades)
        for x in self._planned:
            rows = self._needed[x]
            labels[rows] = [grades[r] for r in rows.tolist()]
        return estimate_without_replacement(self._design, self.pool(), self._wor, labels)

    def _estimate_kind(self, combine):
        grades, _, done, partial, pending, _ = self._progress(combine)
        if self._waiting:
            n = sum(len(self._needed[x]) - sum(1 for r in self._needed[x].tolist() if r in grades)
                    for x in self._waiting)
            raise ValueError(
                f"nothing to estimate yet: method {self.method!r} still asks for {n} documents of "
                f"{len(self._waiting)} of its {len(self._planned)} sampled queries; it estimates from its whole "
                "sample. The judgments stay stored.")
        from ..engine.core import estimate_sample

        kind, plan, sample = self._kind
        return estimate_sample(self._design, self.pool(), plan, sample, self._labels(grades))

    def _estimate_prefix(self, combine):
        if self._prefix.legacy:
            raise ValueError(_PREFIX_LEGACY)
        grades, _, done, partial, pending, _ = self._progress(combine)
        if self._waiting:
            first = next(x for x in self._planned if x in self._waiting)
            raise ValueError(
                f"nothing to estimate yet: {len(self._waiting)} of the {len(self._planned)} queries the budget has "
                f"reached wait for a judgment ({len(partial)} started, {len(pending)} not; first: query "
                f"{self._qkeys[first]!r}, document {self._dkeys[self._waiting[first]]!r}). A prefix campaign "
                "estimates once its budget is spent or every walk has stopped: export the next round of "
                "tasks (one document per waiting query) and import the judgments. The judgments are kept.")
        labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
        for r in self._needed_rows:
            labels[r] = grades[r]
        return estimate_prefix(self._design, self.pool(), self._prefix, labels, budget=self.budget)

    def _estimate_documents(self, combine):
        grades, _ = self._combined(combine)
        rows = self._documents.rows.tolist()
        missing = [r for r in rows if r not in grades]
        if missing and isinstance(self._documents, DocumentPlan) and self._documents.budgeted:
            return self._estimate_document_prefix(grades, rows, missing)
        if missing:
            qidx = np.repeat(np.arange(len(self._qkeys)), np.diff(self._offsets))
            first = missing[0]
            raise ValueError(
                f"nothing to estimate yet: {len(missing)} of {len(rows)} sampled documents (tasks) are not judged "
                f"(first: document {self._dkeys[first]!r} of query {self._qkeys[int(qidx[first])]!r}); a "
                f"document-level campaign ({self.method!r}) estimates from its complete Poisson sample only, since "
                "the documents answered so far are not a valid sample. The judgments are kept: import the "
                "missing ones.")
        if isinstance(self._documents, RecordedDocumentPlan):
            labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
            labels[rows] = [grades[r] for r in rows]
            return estimate_recorded(self._design, self.pool(), self._documents, labels, budget=self.budget,
                                     seed=self.seed)
        return estimate_documents(self._design, self.pool(), self._documents, np.array([grades[r] for r in rows]),
                                  self.probs(), budget=self.budget)

    def _estimate_document_prefix(self, grades, rows, missing):
        """A budgeted document sample judged in part: the estimate of its longest judged head in draw order."""
        judged = np.array([r in grades for r in rows])
        plan, m = self._documents.judged_prefix(judged, self.seed)
        tasks = ~held_units(self._documents.design)[self._documents.sample]  # the rest were held at creation
        task_rows = set(np.asarray(rows)[tasks].tolist())
        missing = [r for r in missing if r in task_rows]
        judged &= tasks
        if m < 2:
            raise ValueError(
                f"nothing to estimate yet: {len(missing)} of {len(rows)} sampled documents (tasks) are not judged, "
                f"and only {m} judged ones lead the sample's draw order (at least 2 are needed: tasks judged in "
                "the order of an export's `draw` column give an estimate from the first ones). The judgments are "
                "kept: import the missing ones.")
        take_rows = plan.rows.tolist()
        res = estimate_documents(self._design, self.pool(), plan, np.array([grades[r] for r in take_rows]),
                                 self.probs(), budget=self.budget)
        res.trace.attrs.update(partial=True, tasks_missing=len(missing), tasks_in_estimate=m,
                               tasks_judged_outside_estimate=int(judged.sum()) - m)
        return res

    # ------------------------------------------------------------------ checks

    def check(self) -> list[str]:
        """Consistency checks; returns a list of problems (empty when all is well).

        The store (:func:`activerank.campaign.integrity.full_problems`): SQLite's
        ``integrity_check`` and foreign keys, the schema against its checksum, the
        design against the digest written at creation, every judgment against its
        checksum and the ledger (one message per changed row), every grade on the
        scale, no file line stored twice.  The budget ledger: the draws charge
        the stored query costs and stay within the budget.  The replay: the draw
        sequence again from the stored ``q``, costs, budget and seed.  A
        document-level campaign replays its Poisson sample from the stored
        inclusion probabilities and seed, and checks the *expected* cost
        against the budget (the realized cost may exceed it); a campaign
        without replacement replays its one sample, a prefix campaign its
        design and priority order, and checks that the judgments its walks
        hold cost at most the budget.
        """
        problems = full_problems(self._db)
        if self._documents is not None:
            problems += self._check_documents()
        elif self._prefix is not None:
            problems += self._check_prefix()
        elif self._kind is not None:
            problems += self._check_kind()
        elif self._wor is not None:
            problems += self._check_without_replacement()
        else:
            replay = draw_budgeted(self._design.q, self._design.costs.cost, self.budget, self.seed)
            if not (np.array_equal(replay.queries, self._plan.queries)
                    and np.array_equal(replay.new, self._plan.new)):
                problems.append("the stored draw sequence differs from a replay with the stored seed")
            problems += self._check_charges(np.where(self._plan.new, self._design.costs.cost[self._plan.queries], 0.0))
        return problems

    def _check_kind(self) -> list[str]:
        """Plan and draw again from the stored seed: the same arrays."""
        kind, _, _ = self._kind
        rng = np.random.default_rng(self.seed)
        planned = kind.plan(self._design, self.budget, judged=None, rng=rng)
        again = kind.to_arrays(self._design, planned, kind.draw(self._design, planned, rng))
        same = set(again) == set(self.meta["kind_arrays"]) and all(
            np.array_equal(np.asarray(again[n]), self._array(f"kind_{n}")) for n in again)
        return [] if same else [f"the stored sample of method {self.method!r} differs from a replay with the stored "
                                "seed"]

    def _check_charges(self, expected) -> list[str]:
        """The budget ledger of a query-level campaign: each draw charges the stored cost, the sum the budget."""
        out = []
        bad = np.flatnonzero(self._plan.charged != expected)
        if bad.size:
            j = int(bad[0])
            out.append(f"{bad.size} draws charge another cost than their query's stored cost (first: draw {j}, "
                       f"query {self._qkeys[int(self._plan.queries[j])]!r}, charged {self._plan.charged[j]!r}, "
                       f"cost {expected[j]!r})")
        total = math.fsum(self._plan.charged)
        if not total <= self.budget * (1 + BUDGET_RTOL):
            out.append(f"planned cost {total} exceeds the budget {self.budget}")
        return out

    def _check_without_replacement(self) -> list[str]:
        wor, problems = self._wor, []
        replay = plan_without_replacement(self._design, self.budget, self.seed)
        if not (np.array_equal(replay.indices, wor.indices) and np.allclose(replay.pi, wor.pi, rtol=1e-12, atol=0)):
            problems.append("the stored sample without replacement differs from a replay with the stored seed")
        return problems + self._check_charges(self._design.costs.cost[self._plan.queries])

    def _check_prefix(self) -> list[str]:
        cp, problems = self._prefix, []
        if not np.array_equal(self._plan.queries, cp.queries):
            problems.append("the stored draws differ from the stored prefix sample")
        version = self._db.execute("SELECT version FROM schema_version").fetchone()[0]
        if cp.legacy:  # the former Poisson design: this version draws another sample, no replay
            if version == PREFIX_SCHEMA_VERSION:
                problems.append(f"schema version {version} but no stored priorities (prefix_xi)")
            if cp.expected_cost > self.budget * (1 + BUDGET_RTOL):
                problems.append(f"expected cost {cp.expected_cost} of the prefix design exceeds the budget "
                                f"{self.budget}")
            return problems
        if version != PREFIX_SCHEMA_VERSION:
            problems.append(f"a prefix store with priorities has schema version {version}, expected "
                            f"{PREFIX_SCHEMA_VERSION}")
        try:
            replay = plan_prefix_campaign(self._design, self.budget, self.seed)
        except ValueError as exc:
            return problems + [f"the prefix design could not be replayed with the stored seed: {exc}"]
        if not (np.array_equal(replay.queries, cp.queries) and np.array_equal(replay.U, cp.U)
                and np.array_equal(replay.xi, cp.xi)
                and np.allclose(replay.plan.pi, cp.plan.pi, rtol=1e-9, atol=1e-12)):
            problems.append("the stored prefix priority order differs from a replay with the stored seed")
        # the hard budget: what the walks hold (the cut query's bought part included) fits in it
        grades = self._combined()[0]
        self._refresh(grades)
        spent = math.fsum(self._task_cost[r] for r in self._needed_rows if r in grades)
        asked = math.fsum(self._task_cost[r] for r in self._waiting.values())
        if spent + asked > self.budget * (1 + BUDGET_RTOL):
            problems.append(f"the judgments of the prefix walks ({spent}) and those asked for ({asked}) cost more "
                            f"than the budget {self.budget}")
        return problems

    def _check_documents(self) -> list[str]:
        dp, problems = self._documents, []
        if isinstance(dp, RecordedDocumentPlan):
            try:
                again = plan_documents(self._design, self.pool(), self.budget, self.seed)
            except ValueError as exc:
                return [f"the document design could not be replayed with the stored seed: {exc}"]
            if not (np.array_equal(again.rows, dp.rows) and np.allclose(again.costs, dp.costs, rtol=1e-12, atol=0)):
                problems.append("the stored documents differ from a replay of the engine with the stored seed")
            return problems
        if not np.array_equal(dp.replay(self.seed), dp.sample):
            problems.append("the stored document sample differs from a replay with the stored seed and inclusion "
                            "probabilities")
        if not (np.array_equal(self._plan.queries, dp.queries) and np.array_equal(self._plan.charged, dp.costs)):
            problems.append("the stored draws differ from the stored document sample")
        if dp.budgeted:  # a budgeted draw: the sample itself is within the budget
            spent = float(dp.costs.sum())
            if spent > self.budget * (1 + BUDGET_RTOL):
                problems.append(f"the cost {spent} of the document sample exceeds the budget {self.budget}")
        else:
            expected = float(np.dot(dp.design.pi, dp.design.costs))
            if expected > self.budget * (1 + BUDGET_RTOL):
                problems.append(f"expected cost {expected} of the document sample exceeds the budget {self.budget}")
        return problems
