"""The labeling step: the one place where a labeler is asked for grades.

:class:`Judgments` holds the grade of every judged document row of the pool
(-1 where none was bought).  Every schedule asks for labels through
:meth:`Judgments.ask`, which validates the answer against the grade scale and,
when the labeler fails, raises :class:`~activerank.labelers.LabelingError`
carrying every judgment acquired so far -- nothing bought is lost.  Earlier
judgments (a resumed run, reused campaigns) enter through
:meth:`Judgments.load` and are never asked for again.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import contextmanager

import numpy as np

from .._validation import py_scalar
from ..labelers import LabelingError, check_grades

__all__ = ["Judgments"]


class Judgments:
    """Grades of the pool's judged document rows.

    Parameters
    ----------
    pool : Pool
        The standardized pool.
    n_grades : int
        Size of the grade scale.
    """

    def __init__(self, pool, n_grades: int):
        self.pool = pool
        self.n_grades = int(n_grades)
        self.labels = np.full(pool.n_docs, -1, dtype=np.int64)
        #: rows whose grade the labeler gave in this run (not loaded)
        self.bought = np.zeros(pool.n_docs, dtype=bool)
        self._qindex: dict | None = None

    # ------------------------------------------------------------------ state

    def complete(self, rows) -> bool:
        """True when every row of ``rows`` is judged."""
        return bool((self.labels[np.asarray(rows, dtype=np.int64)] >= 0).all())

    def judged_queries(self, documents, queries) -> np.ndarray:
        """The ``queries`` (pool positions) whose documents ``documents(x)`` are all judged."""
        return np.array([x for x in np.asarray(queries).tolist() if self.complete(documents(x))], dtype=np.int64)

    def as_dict(self) -> dict:
        """``{query_id: {doc_id: grade}}`` of everything judged so far."""
        rows = np.flatnonzero(self.labels >= 0)
        qs = np.searchsorted(self.pool.offsets, rows, side="right") - 1
        out: dict = {}
        for r, x, doc in zip(rows.tolist(), qs.tolist(), self.pool.doc_keys(rows)):
            out.setdefault(self.pool.query_key(x), {})[doc] = int(self.labels[r])
        return out

    # ------------------------------------------------------------------ asking

    def ask(self, labeler, x: int, rows, *, where: str = "", trace=None) -> None:
        """Ask ``labeler`` for the not yet judged ``rows`` of pool query ``x``.

        Parameters
        ----------
        labeler : callable
            ``labeler(query_id, doc_ids) -> grades``.
        x : int
            Pool position of the query.
        rows : ndarray of int
            The query's document rows to judge (in the order shown).
        where : str
            Context for the error message (e.g. ``" (draw 4)"``).
        trace : callable, optional
            Returns the trace of the draws paid for so far (attached to the error).

        Raises
        ------
        LabelingError
            The labeler raised or answered badly; carries ``judgments`` (all
            acquired so far) and ``trace``.
        """
        rows = np.asarray(rows, dtype=np.int64)
        need = rows[self.labels[rows] < 0]
        if need.size == 0:
            return
        qid = self.pool.query_key(x)
        ids = self.pool.doc_keys(need)
        with self._keeping(f"labeling query {qid!r}{where}", trace):
            grades = check_grades(labeler(qid, ids), qid, ids, self.n_grades)
        self._store(need, grades)

    def ask_batch(self, labeler, request, *, trace=None) -> None:
        """Ask ``labeler`` for a design's :class:`~activerank.design.kinds.base.LabelRequest`.

        A labeler with ``label_batch`` gets the whole request in one call; any other is asked once per query,
        in request order.  Answers are validated per query; the valid ones are kept even when a later one
        fails (:class:`~activerank.labelers.LabelingError` then carries every judgment acquired).
        """
        groups = request.by_query()
        if not groups:
            return
        batch = getattr(labeler, "label_batch", None)
        if not callable(batch):
            for x, rows in groups:
                self.ask(labeler, x, rows, trace=trace)
            return
        qids = [self.pool.query_key(x) for x, _ in groups]
        ids = [self.pool.doc_keys(rows) for _, rows in groups]
        with self._keeping(f"labeling a batch of {len(groups)} queries", trace):
            answers = list(batch(list(zip(qids, ids))))
            if len(answers) != len(groups):
                raise ValueError(f"label_batch answered {len(answers)} requests; {len(groups)} were asked.")
        for (x, rows), qid, doc_ids, answer in zip(groups, qids, ids, answers):
            with self._keeping(f"labeling query {qid!r}", trace):
                grades = check_grades(answer, qid, doc_ids, self.n_grades)
            self._store(rows, grades)

    def _store(self, rows, grades) -> None:
        self.labels[rows] = grades
        self.bought[rows] = True

    @contextmanager
    def _keeping(self, what: str, trace):
        """A labeler's failure becomes a LabelingError carrying every judgment acquired (and the trace); an
        interrupt (Ctrl-C in a human-in-the-loop tool) keeps them too."""
        try:
            yield
        except Exception as exc:
            raise LabelingError(f"{what} failed: {exc}", judgments=self.as_dict(),
                                trace=None if trace is None else trace()) from exc
        except BaseException as exc:
            setattr(exc, "judgments", self.as_dict())
            raise

    # ------------------------------------------------------------------ earlier judgments

    def load(self, judgments, *, name: str, unknown_queries: str = "error") -> None:
        """Write earlier judgments ``{query_id: {doc_id: grade}}`` into the row grades.

        Parameters
        ----------
        judgments : dict
        name : str
            Parameter name for error messages (``"judgments"``, ``"reuse"``).
        unknown_queries : {"error", "ignore"}
            A query id that is not in the pool is an error (resuming a run) or
            skipped (reusing another campaign's judgments).
        """
        if not isinstance(judgments, Mapping):
            raise TypeError(f"`{name}` must be a dict {{query_id: {{doc_id: grade}}}}; "
                            f"got {type(judgments).__name__}.")
        if self._qindex is None:
            self._qindex = self.pool.query_index()
        index = self._qindex
        offsets = self.pool.offsets
        for qid, docs in judgments.items():
            qid = py_scalar(qid)
            if qid not in index:
                if unknown_queries == "ignore":
                    continue
                raise ValueError(f"`{name}` names query {qid!r}, which is not in the pool.")
            if not isinstance(docs, Mapping):
                raise ValueError(f"`{name}` judgments of query {qid!r} must be a dict {{doc_id: grade}}.")
            x = index[qid]
            lo, hi = int(offsets[x]), int(offsets[x + 1])
            lookup = {d: lo + j for j, d in enumerate(self.pool.doc_keys(np.arange(lo, hi)))}
            found = []
            for d in docs:
                r = lookup.get(py_scalar(d), -1)
                if r < 0:
                    raise ValueError(f"`{name}`: query {qid!r} has no document {d!r} in the pool.")
                found.append(r)
            try:
                grades = check_grades(list(docs.values()), qid, list(docs), self.n_grades)
            except ValueError as exc:
                raise ValueError(f"`{name}`: {exc}") from None
            rows = np.asarray(found, dtype=np.int64)
            clash = (self.labels[rows] >= 0) & (self.labels[rows] != grades)
            if clash.any():
                d = list(docs)[int(np.flatnonzero(clash)[0])]
                raise ValueError(f"`{name}`: conflicting grades for query {qid!r}, document {d!r}.")
            self.labels[rows] = grades
