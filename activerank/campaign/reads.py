"""Reading a campaign: loading the store, its properties, progress, judgments, qrels and task export.

Judgments of one pair by several annotators are all kept; per annotator the
latest judgment (import order) counts, and across annotators they are combined
by the campaign's rule (:func:`activerank.campaign.reports.combine_grades`).
"""

from __future__ import annotations

import json
import math
import numbers
import os

import numpy as np

from .._progress import progress_bar, progress_iv
from .._validation import path_iv
from ..design.costs import QueryCosts
from ..design.design import Design
from ..design.sampling import DEFAULT_DEFENSIVE, DrawPlan
from ..design.targets import Prediction, make_target
from ..metrics.registry import parse_stored_metric
from ..pool import Pool
from ..ragged import Rankings, offsets_from_lengths
from . import io as cio
from .documents import DocumentPlan, held_units
from .integrity import CorruptStoreError, grade_problems
from .replay import BUDGET_RTOL
from .reports import COMBINE_RULES, SCOPES, CampaignStatus, ExportReport, combine_grades
from .schema import key, now

__all__: list[str] = []


class _Reads:
    """The reading part of :class:`activerank.campaign.Campaign` (a mixin; see the module docstring)."""

    # ------------------------------------------------------------------ loading

    def _load(self):
        db = self._db
        self.meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
        rows = db.execute("SELECT qx, query_id, query_text, first_row, n_docs, p, q, cost, raw_cost, "
                          "predicted_mean FROM queries ORDER BY qx").fetchall()
        self._qkeys = [r[1] for r in rows]
        self._qtext = [r[2] for r in rows]
        lengths = np.array([r[4] for r in rows], dtype=np.int64)
        self._offsets = offsets_from_lengths(lengths)
        p = np.array([r[5] for r in rows])
        q = np.array([r[6] for r in rows])
        cost = np.array([r[7] for r in rows])
        raw = np.array([r[8] for r in rows])
        mean = np.array([r[9] for r in rows])
        self._qindex = {k: x for x, k in enumerate(self._qkeys)}
        docs = db.execute("SELECT doc_row, qx, doc_id FROM documents ORDER BY doc_row").fetchall()
        self._dkeys = [d[2] for d in docs]
        self._dindex = {(d[1], d[2]): d[0] for d in docs}
        n_q = len(self._qkeys)
        rankings = []
        for (i,) in db.execute("SELECT ranker FROM rankers ORDER BY ranker").fetchall():
            ent = np.array(db.execute("SELECT qx, doc_row FROM ranked WHERE ranker = ? ORDER BY qx, pos",
                                      (i,)).fetchall(), dtype=np.int64).reshape(-1, 2)
            rankings.append(Rankings(ent[:, 1], offsets_from_lengths(np.bincount(ent[:, 0], minlength=n_q))))
        metric = parse_stored_metric(self.meta["metric"])  # a campaign keeps the metric it was created with
        names = self.meta["rankers"]
        kind = self.meta.get("target") or ("mean" if len(rankings) == 1 else "difference")
        judged_items = self._array("judged_items")
        judged = None if judged_items is None else Rankings(judged_items, self._array("judged_offsets"))
        # campaigns created before documents could cancel judged every document
        target = make_target(kind, rankings, metric, names, judged=judged, judge=self.meta.get("judge", "all"))
        stored = {name: self._array(name) for name in ("prediction_mean", "prediction_variance",
                                                         "prediction_sq_error")}
        if stored["prediction_mean"] is None:  # schema version 1: one ranker or a pair, the mean only
            nan = np.full(mean.size, np.nan)
            prediction = Prediction(mean[:, None], nan, nan)
        else:
            pm, pv = stored["prediction_mean"], stored["prediction_variance"]
            ov = self._array("prediction_output_variance")
            if ov is None:  # stores before it was kept: one contrast's variance is the stored total
                one = pm.shape[1] == 1 and bool(np.all(np.isfinite(pv)))
                ov = pv[:, None] if one else None
            prediction = Prediction(pm, pv, stored["prediction_sq_error"],
                                    system_mean=self._array("prediction_system_mean"), output_variance=ov)
        unit = None
        if target.changes is not None and (cost > 0).any():  # costs in the unit of judging whole queries
            i = int(np.flatnonzero(cost > 0)[0])
            unit = float(raw[i] / cost[i])
        held = self._array("held_queries")
        self._design = Design(target, self.meta["method"], p, q,
                              QueryCosts(cost=cost, raw=raw, model=self.meta["cost_model"], unit=unit), prediction,
                              int(self.meta["n_grades"]), float(self.meta.get("defensive", DEFAULT_DEFENSIVE)),
                              held=None if held is None else held.astype(bool))
        d = np.array(db.execute("SELECT qx, new, charged FROM draws ORDER BY j").fetchall(),
                     dtype=np.float64).reshape(-1, 3)
        self._plan = DrawPlan(queries=d[:, 0].astype(np.int64), new=d[:, 1].astype(bool), charged=d[:, 2],
                              budget=float(self.meta["budget"]))
        self._load_family()

    # ------------------------------------------------------------------ properties

    @property
    def metric(self) -> str:
        return self.meta["metric"]

    @property
    def method(self) -> str:
        return self.meta["method"]

    @property
    def budget(self) -> float:
        return float(self.meta["budget"])

    @property
    def unit(self) -> str:
        """What the campaign samples: ``"query"`` (whole queries), ``"document"`` (single documents) or
        ``"prefix"`` (queries, then documents one at a time inside each)."""
        return self.meta.get("unit", "query")

    @property
    def seed(self) -> int:
        return int(self.meta["seed"])

    @property
    def n_grades(self) -> int:
        return int(self.meta["n_grades"])

    @property
    def names(self) -> tuple:
        return tuple(self.meta["rankers"])

    @property
    def combine(self) -> str:
        return self.meta["combine"]

    @property
    def query_ids(self) -> tuple:
        """Pool query ids (strings), in pool order."""
        return tuple(self._qkeys)

    def pool(self) -> Pool:
        """The frozen pool (query ids typed as at creation, doc ids as str)."""
        if self.meta["query_id_kind"] == "int":
            qids = np.array([int(k) for k in self._qkeys], dtype=np.int64)
        else:
            qids = np.array(self._qkeys, dtype=object)
        return Pool(qids, self._offsets.copy(), np.array(self._dkeys, dtype=object))

    def design(self) -> Design:
        """The stored sampling design (rankings truncated at the cutoff, p, q, costs)."""
        return self._design

    def plan(self) -> DrawPlan:
        """The stored draw sequence (document-level campaigns: one draw per sampled document)."""
        return self._plan

    def document_plan(self) -> DocumentPlan | None:
        """The stored document sample (units, inclusion probabilities) of a document-level campaign, else None."""
        return self._documents

    def probs(self) -> np.ndarray:
        """The stored relevance-model probabilities, shape ``(n_docs, n_grades)``."""
        return self._array("probs")

    def _array(self, name):
        row = self._db.execute("SELECT dtype, shape, data FROM arrays WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        dtype, shape, data = row
        return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(json.loads(shape)).copy()

    def tasks(self, query) -> list[str]:
        """Document ids to judge for a planned query (by id), in ranking order (document-level
        campaigns: the query's sampled documents, in draw order; prefix campaigns: the documents its walk
        has judged and the one it asks for next, in judging order, and none for a query of the priority
        order the budget has not reached)."""
        if self._rounds:  # replay the sample only when judgments arrived since the last replay
            last = self._db.execute("SELECT MAX(judgment_id) FROM judgments").fetchone()[0]
            if last != self._rounds_seen:
                self._refresh(self._combined()[0])
                self._rounds_seen = last
        x = self._qindex.get(key(query))
        if x is not None and x not in self._needed and self._prefix is not None and x in self._prefix.order_set:
            return []  # a query of the priority order the budget has not reached (yet): nothing to judge now
        if x is None or x not in self._needed:
            raise ValueError(f"`query` {key(query)!r} is not a planned query of this campaign.")
        return [self._dkeys[r] for r in self._needed[x]]

    # ------------------------------------------------------------------ judgments

    def _latest(self) -> dict:
        """``{(doc_row, annotator): grade}``: each annotator's latest grade per pair.

        Raises :class:`CorruptStoreError` naming every stored grade off the scale (written into the store
        by other means than an import): the estimate never sees one.
        """
        out, n, bad = {}, self.n_grades, False
        for row, ann, grade in self._db.execute(
                "SELECT doc_row, annotator, grade FROM judgments ORDER BY judgment_id"):
            out[(row, ann)] = grade
            bad |= not (type(grade) is int and 0 <= grade < n)
        if bad:
            raise CorruptStoreError(self.path, grade_problems(self._db))
        return out

    def _combined(self, combine=None) -> tuple[dict, int]:
        rule = self.combine if combine is None else combine
        if rule not in COMBINE_RULES:
            raise ValueError(f"`combine` must be one of {list(COMBINE_RULES)}; got {rule!r}.")
        per_doc: dict = {}
        for (row, _), grade in self._latest().items():
            per_doc.setdefault(row, []).append(grade)
        conflicts = sum(1 for g in per_doc.values() if len(set(g)) > 1)
        return {row: combine_grades(g, rule) for row, g in per_doc.items()}, conflicts

    def judgments(self, *, combine=None, scope="tasks") -> dict:
        """Combined judgments ``{query id: {doc id: grade}}``.

        Parameters
        ----------
        combine : {"mean_gain", "majority"}, optional
            Override the campaign's rule.
        scope : {"tasks", "pool"}
            Only documents the campaign asks for, or every judged pool document.
        """
        if scope not in SCOPES:
            raise ValueError(f"`scope` must be one of {list(SCOPES)}; got {scope!r}.")
        grades, _ = self._combined(combine)
        if self._rounds:
            self._refresh(grades)
        qidx = np.repeat(np.arange(len(self._qkeys)), np.diff(self._offsets))
        out: dict = {}
        for row in sorted(grades):
            if scope == "tasks" and row not in self._needed_rows:
                continue
            out.setdefault(self._qkeys[qidx[row]], {})[self._dkeys[row]] = grades[row]
        return out

    def assessor_agreement(self):
        """Pairwise agreement of the annotators on the pairs several graded (each one's latest grade).

        Returns
        -------
        activerank.judges.AssessorAgreement
        """
        from ..judges import assessor_agreement

        qidx = np.repeat(np.arange(len(self._qkeys)), np.diff(self._offsets))
        by: dict = {}
        for (row, ann), grade in self._latest().items():
            by.setdefault("" if ann is None else str(ann), {})[(self._qkeys[qidx[row]], self._dkeys[row])] = grade
        return assessor_agreement(by, n_grades=self.n_grades)

    def write_qrels(self, path, *, combine=None, scope="tasks", overwrite=False) -> int:
        """Write the combined judgments as a TREC qrels file (atomically); returns the line count.

        ``path`` must not be the campaign store (or its journal) nor a file the
        campaign read (:meth:`check_output`); an existing file is replaced only
        if it is a qrels file, or with ``overwrite=True``.
        """
        from ..io.trec import write_qrels

        path = self.check_output(path, kind="qrels", overwrite=overwrite)
        return write_qrels(path, self.judgments(combine=combine, scope=scope))

    # ------------------------------------------------------------------ outputs

    def input_files(self) -> tuple:
        """Absolute paths of the files the campaign read: its inputs (``Campaign.create(inputs=...)``,
        ``activerank campaign init``) and every imported judgment file."""
        rows = self._db.execute("SELECT path FROM input_files UNION SELECT path FROM batches").fetchall()
        # stores before version 7 recorded judgment files as given: resolved here, relative to the working directory
        return tuple(sorted({os.path.abspath(p) for (p,) in rows}))

    def check_output(self, path, *, kind, overwrite=False, header=None) -> str:
        """Refuse an output path whose writing would destroy data; return it as ``str``.

        The store itself (and its journal, WAL and SHM files) and every file the
        campaign read (:meth:`input_files`) are refused, by path, symlink or hard
        link, even with ``overwrite=True``.  Another existing file is replaced
        only if it is a previous output of the same ``kind`` (an unanswered task
        file, a qrels file, a trace CSV with ``header``) or empty, otherwise only
        with ``overwrite=True`` (:func:`activerank.campaign.io.check_output_path`).

        Parameters
        ----------
        path : str or os.PathLike
        kind : {"tasks", "qrels", "trace", "backup"}
        overwrite : bool, default False
        header : sequence of str, optional
            The columns of a trace about to be written.
        """
        return cio.check_output_path(path_iv(path), kind=kind, protected=[self.path], force=overwrite,
                                     header=header, inputs=self.input_files())

    # ------------------------------------------------------------------ progress

    def _progress(self, combine=None):
        grades, conflicts = self._combined(combine)
        if self._rounds:
            self._refresh(grades)
        done, partial, pending = [], [], []
        for x in self._planned:
            rows = self._needed[x]
            n = sum(1 for r in rows.tolist() if r in grades)
            (done if n == rows.size else partial if n else pending).append(x)
        if self._prefix is not None:  # the sample: the queries before the cut, once no walk asks for more
            state = self._prefix_state
            prefix = state.n_used if state.finished and not (partial or pending) else 0
            return grades, conflicts, done, partial, pending, prefix
        if self._documents is not None or self._wor is not None or self._rounds:  # usable only whole
            prefix = self._plan.n_draws if not (partial or pending) else 0
            return grades, conflicts, done, partial, pending, prefix
        done_set = set(done)
        bad = np.flatnonzero([int(x) not in done_set for x in self._plan.queries])
        prefix = int(bad[0]) if bad.size else self._plan.n_draws
        return grades, conflicts, done, partial, pending, prefix

    def _clamp(self, cost: float) -> float:
        """Clamp a cost sum to the budget when it exceeds it only by rounding (relative 1e-9)."""
        return self.budget if self.budget < cost <= self.budget * (1 + BUDGET_RTOL) else float(cost)

    def _document_head(self, judged, whole) -> int:
        """Tasks a document-level estimate uses now: a budgeted sample's judged head in draw order (0 below
        the 2 an estimate needs; :meth:`DocumentPlan.judged_prefix`), else ``whole`` (all or nothing)."""
        plan = self._documents
        if not (isinstance(plan, DocumentPlan) and plan.budgeted) or judged.all():
            return whole
        if not judged[held_units(plan.design)[plan.sample]].all():  # held labels not imported: no estimate
            return 0
        m = plan.judged_prefix(judged, self.seed)[1]
        return m if m >= 2 else 0

    def status(self, *, combine=None) -> CampaignStatus:
        """Budget spent and left, queries done / partially judged / pending.

        A document-level campaign counts its tasks in documents: ``n_draws``
        and ``n_documents_needed`` are the sampled documents, ``cost_spent``
        the cost of those judged, ``cost_in_progress`` 0, ``cost_planned``
        the realized cost of the sample (Poisson sampling spends the budget
        in expectation: it may exceed it), and ``draws_usable`` the tasks the
        estimate uses now: a budgeted sample's judged head in draw order (0
        below 2), a Poisson sample's all or nothing.  A sample without
        replacement (``active_wor``) is usable only whole, counted in queries.
        """
        grades, conflicts, done, partial, pending, prefix = self._progress(combine)
        planned = self._clamp(math.fsum(self._plan.charged))
        n_draws = self._plan.n_draws
        if self._task_cost is not None:  # costs of the judged documents; the rest is not decided yet
            spent = self._clamp(math.fsum(self._task_cost[r] for r in self._needed_rows if r in grades))
            in_prog = 0.0
            if self._prefix is not None and not self._prefix.legacy:  # hard budget: judged + asked for now
                planned = self._clamp(spent + math.fsum(self._task_cost[r] for r in self._waiting.values()))
                n_draws = len(self._planned)
            blocking = next((self._qkeys[x] for x in self._planned if x in self._waiting), None)
        elif self._documents is None:
            cost = self._design.costs.cost
            spent = self._clamp(math.fsum(cost[x] for x in done))
            in_prog = min(self._clamp(math.fsum(cost[x] for x in partial)), self.budget - spent)
            blocking = None if prefix == self._plan.n_draws else self._qkeys[int(self._plan.queries[prefix])]
            if self._wor is not None:  # usable only whole: the first query of the sample not yet done
                done_set = set(done)
                blocking = next((self._qkeys[x] for x in self._planned if x not in done_set), None)
        else:
            judged = np.array([r in grades for r in self._documents.rows.tolist()], dtype=bool)
            spent, in_prog = self._clamp(math.fsum(self._documents.costs[judged])), 0.0
            done_set = set(done)
            waiting = [x for x in self._planned if x not in done_set]
            blocking = self._qkeys[waiting[0]] if waiting else None
            prefix = self._document_head(judged, prefix)
        db = self._db
        n_judg = db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
        n_imp = db.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
        n_exp = db.execute("SELECT COUNT(*) FROM exports").fetchone()[0]
        return CampaignStatus(
            budget=self.budget, cost_planned=planned, cost_spent=spent, cost_in_progress=in_prog,
            budget_left=max(0.0, self.budget - spent - in_prog), n_draws=n_draws,
            queries_done=tuple(self._qkeys[x] for x in done),
            queries_partial=tuple(self._qkeys[x] for x in partial),
            queries_pending=tuple(self._qkeys[x] for x in pending),
            n_documents_needed=len(self._needed_rows),
            n_documents_judged=sum(1 for r in self._needed_rows if r in grades),
            n_judgments=n_judg, n_conflicts=conflicts, draws_usable=prefix, blocking_query=blocking,
            n_imports=n_imp, n_exports=n_exp, combine=self.combine if combine is None else combine, unit=self.unit)


    # ------------------------------------------------------------------ export

    def export_tasks(self, path, *, format=None, limit=None, max_cost=None, exclude_exported=False,
                     overwrite=False, progress=None) -> ExportReport:
        """Write the next tasks: documents still to judge, query by query in draw order.

        Parameters
        ----------
        path : str or os.PathLike
            Output file, written atomically (temp file + rename): a crash
            leaves the old file or none, never a partial one.
        format : {"jsonl", "csv"}, optional
            Default: from the extension.
        limit : int, optional
            At most this many queries (a query's documents are never split).
        max_cost : float, optional
            Stop before the cumulative cost of exported queries exceeds this
            (budget units; document-level campaigns: of the exported
            documents).  All tasks of a query-level campaign lie within the
            campaign budget anyway: the draw sequence was cut at the budget
            when it was created.
        exclude_exported : bool, default False
            Skip queries already written by an earlier export.
        overwrite : bool, default False
            Replace an existing file that is not an unanswered task file.  The
            campaign store itself (and its journal) and the files the campaign
            read are never replaced; an unanswered task file (no grade filled
            in) or an empty file is replaced without it.  See :meth:`check_output`.
        progress : bool, optional
            A progress bar on stderr (default: on a terminal, for exports
            longer than a few seconds).

        Returns
        -------
        ExportReport

        Raises
        ------
        ValueError
            ``path`` is the campaign store (or its journal) or a file the
            campaign read, or bad options.
        FileExistsError
            ``path`` exists, is not an unanswered task file and ``overwrite``
            is False.

        Notes
        -----
        Rows have fields ``query_id, query_text, doc_id, draw, grade,
        annotator`` (``grade``/``annotator`` empty, for the annotator to fill
        in); ``draw`` is the position of the query's first draw.  A
        document-level campaign writes the same rows for its sampled
        documents (query id, document id), grouped by query in draw order;
        ``draw`` is then the document's own position in the sample (the
        ``draw`` column of the result's trace).  In CSV, a cell that a
        spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``,
        ``@``, a tab or a carriage return) is written with a leading ``'``
        (:func:`activerank.campaign.io.escape_cell`); importing the file back
        removes it.
        """
        path = path_iv(path)
        fmt = cio.detect_format(path, format, allowed=cio.TASK_FORMATS)
        path = self.check_output(path, kind="tasks", overwrite=overwrite)
        progress = progress_iv(progress)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0):
            raise ValueError(f"`limit` must be a non-negative integer or None; got {limit!r}.")
        if max_cost is not None and (isinstance(max_cost, bool) or not isinstance(max_cost, numbers.Real)
                                     or not max_cost >= 0):
            raise ValueError(f"`max_cost` must be a number >= 0 or None; got {max_cost!r}.")
        grades, _ = self._combined()
        if self._rounds:
            self._refresh(grades)
        exported = set()
        if exclude_exported and self._rounds:
            exported = self._round_exported()
        elif exclude_exported:
            exported = {x for (x,) in self._db.execute("SELECT DISTINCT qx FROM export_queries")}
        if self._documents is None:
            first_draw = {int(x): j for j, x in reversed(list(enumerate(self._plan.queries.tolist())))}
        else:  # each task's own draw, and its cost
            # a budgeted sample's draw order (its judged head estimates while later tasks are out)
            rank = (self._documents.draw_order(self.seed) if isinstance(self._documents, DocumentPlan)
                    else np.arange(self._documents.rows.size))
            unit_draw = {int(r): int(j) for j, r in zip(rank, self._documents.rows.tolist())}
            unit_pos = {int(r): j for j, r in enumerate(self._documents.rows.tolist())}
            unit_cost = self._documents.costs
        rows, queries, total = [], [], 0.0
        kind_int = self.meta["query_id_kind"] == "int"
        with progress_bar(total=len(self._planned), desc=f"export {os.path.basename(path)}", unit="query",
                          enabled=progress) as bar:
            for x in self._planned:
                bar.update(1)
                if limit is not None and len(queries) >= limit:
                    break
                if x in exported:
                    continue
                todo = [r for r in self._needed[x].tolist() if r not in grades]
                if not todo:
                    continue
                if self._task_cost is not None:
                    c = math.fsum(self._task_cost[r] for r in todo)
                elif self._documents is None:
                    c = float(self._design.costs.cost[x])
                else:
                    c = math.fsum(unit_cost[unit_pos[r]] for r in todo)
                if max_cost is not None and total + c > max_cost * (1 + BUDGET_RTOL):
                    break
                total += c
                queries.append(x)
                qid = int(self._qkeys[x]) if kind_int else self._qkeys[x]
                for r in todo:
                    rows.append({"query_id": qid, "query_text": self._qtext[x] or "", "doc_id": self._dkeys[r],
                                 "draw": first_draw[x] if self._documents is None else unit_draw[r], "grade": None,
                                 "annotator": None})
        cio.write_tasks(path, rows, fmt, list(cio.TASK_COLUMNS))
        with self._write() as conn:
            cur = conn.execute("INSERT INTO exports (path, format, created_at, n_rows, n_queries) VALUES (?, ?, ?, ?, ?)",
                               (path, fmt, now(), len(rows), len(queries)))
            conn.executemany("INSERT INTO export_queries VALUES (?, ?)", [(cur.lastrowid, x) for x in queries])
        return ExportReport(path=path, format=fmt, n_rows=len(rows), n_queries=len(queries),
                            query_ids=tuple(self._qkeys[x] for x in queries), cost=self._clamp(total))

    def _round_exported(self) -> set:
        """Sampled queries of a campaign whose tasks come in rounds (prefix, design kinds) whose current task was
        exported already: exported after the last judgment of any of their documents (a judgment moves the
        query on to a new task)."""
        db = self._db
        exported = dict(db.execute(
            "SELECT eq.qx, MAX(e.created_at) FROM export_queries eq JOIN exports e USING (export_id) GROUP BY eq.qx"))
        judged = dict(db.execute("SELECT doc_row, MAX(imported_at) FROM judgments GROUP BY doc_row"))
        out = set()
        for x, when in exported.items():
            last = max((judged.get(int(r), "") for r in self._needed.get(x, ())), default="")
            if last < when:
                out.add(x)
        return out

    # ------------------------------------------------------------------ checks

