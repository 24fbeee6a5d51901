"""Writing a campaign: creating the store, importing judgments, backing it up.

Imports commit in chunks of lines and record each processed line under the
key ``(batch, line)``; a batch is identified by the SHA-256 of the file
content, so re-importing a file -- after a crash, or by mistake -- resumes
where the last commit ended and never stores a line twice.  Every chunk's
judgments get their checksums and move the judgment ledger on in the same
transaction (:mod:`activerank.campaign.integrity`); a chunk is reported
(``on_commit``) once it is durable in the store file
(:mod:`activerank.campaign.schema`, Durability).  Nothing is pickled or
evaluated.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import secrets
import sqlite3
from typing import TypeVar

import numpy as np

from .._progress import progress_bar, progress_iv
from .._validation import budget_iv, path_iv, scores_iv, seed_iv
from ..design.design import prepare_design
from ..design.methods import get_method, method_names
from ..design.sampling import DEFAULT_DEFENSIVE
from ..design.targets import default_names
from ..pool import pool_iv
from ..ragged import Rankings
from . import io as cio
from .integrity import CorruptStoreError, append_judgments, quick_problems, seal
from .replay import BUDGET_RTOL, family_arrays, family_meta, plan_family
from .reports import COMBINE_RULES, MAX_STORED_REJECTIONS, SCOPES, ImportReport, Rejection
from .schema import PREFIX_SCHEMA_VERSION, SCHEMA_VERSION, SIDECARS, array_blob, connect, create_tables, key, now, remove_files, replace_store

#: the campaign class a ``create`` builds (:class:`activerank.campaign.Campaign`, which mixes this in)
_C = TypeVar("_C", bound="_Writes")

__all__ = ["MAX_STORED_REJECTIONS"]

#: The designs ``method="auto"`` weighs in a campaign besides ``"active"``: those whose estimate comes from any
#: judged head of their tasks (the budgeted document sample's draw order).
CAMPAIGN_ALTERNATIVES = ("doc_dyn",)
CAMPAIGN_ROUTE = ("a campaign estimates from any judged head of its tasks, and the prefix design only once its walks "
                  "stop (method='prefix' runs it)")


def _create_args_iv(path, combine, overwrite, budget, seed, *, method=None, documents=True):
    """The arguments every new campaign checks first (in-memory and distributed pools alike).

    ``method``, if given, must be a registered method; with ``documents=False``
    (distributed pools, which fetch the documents of sampled whole queries) a query-level one.
    """
    path = path_iv(path)
    if combine not in COMBINE_RULES:
        raise ValueError(f"`combine` must be one of {list(COMBINE_RULES)}; got {combine!r}.")
    if method is not None:
        spec = get_method(method)
        if spec.unit in ("document", "prefix") and not documents:
            what = "judges documents one at a time" if spec.unit == "prefix" else "samples single documents"
            raise ValueError(
                f"`method`={spec.name!r} {what}; a campaign on a distributed pool plans whole "
                f"queries only: use a query-level method ({', '.join(method_names(unit='query'))}).")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} already exists; pass overwrite=True (CLI: --force) to replace it.")
    return path, budget_iv(budget), seed_iv(seed)


def _temp_beside(path: str, what: str) -> str:
    """A fresh hidden file name in the directory of ``path`` (a rename from it to ``path`` is atomic)."""
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.{what}")


def _inputs_iv(inputs) -> list:
    """``(absolute path, role)`` pairs from ``Campaign.create(inputs=...)``."""
    if inputs is None:
        return []
    if not hasattr(inputs, "items"):
        raise TypeError(f"`inputs` must be a mapping role -> path(s) or None; got {type(inputs).__name__}.")
    out = []
    for role, paths in inputs.items():
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        out += [(os.path.abspath(path_iv(p)), str(role)) for p in paths]
    return out


class _ImportState:
    """What one import knows of the store: each annotator's latest grade per pair, rejections kept."""

    def __init__(self, conn, batch_id):
        self.batch_id = batch_id
        self.latest: dict = {}
        self.last_judgment = 0
        # counted once: concurrent importers of one file may each keep up to one chunk beyond the cap
        self.n_rejected_stored = conn.execute(
            "SELECT COUNT(*) FROM import_lines WHERE batch_id = ? AND status = 'rejected'",
            (batch_id,)).fetchone()[0]

    def refresh(self, conn):
        """Catch up with the judgments stored since the last call (by this or another connection)."""
        for jid, row, ann, grade in conn.execute(
                "SELECT judgment_id, doc_row, annotator, grade FROM judgments WHERE judgment_id > ? "
                "ORDER BY judgment_id", (self.last_judgment,)):
            self.latest[(row, ann)] = grade
            self.last_judgment = jid


# --------------------------------------------------------------------------- validation helpers


def _rankers_iv(rankers, names, pool, target):
    """Normalize ``rankers`` to (target kind, names, tuple of Rankings)."""
    if isinstance(rankers, dict):
        if names is not None:
            raise ValueError("`names` must not be given when `rankers` is a dict (its keys are the names).")
        names = [str(k) for k in rankers]
        items = list(rankers.values())
    elif isinstance(rankers, Rankings) or (isinstance(rankers, np.ndarray) and rankers.ndim == 1):
        items = [rankers]
    elif isinstance(rankers, (list, tuple)):
        items = list(rankers)
    else:
        raise TypeError(
            "`rankers` must be scores (1-d array) or Rankings for one ranker, a list/tuple of two "
            f"for a comparison (or more with `target`), or a dict name -> scores; got {type(rankers).__name__}."
        )
    if target is None:
        if len(items) not in (1, 2):
            raise ValueError(f"`rankers` must hold one ranker (estimate) or two (compare) unless `target` is "
                             f"'baseline' or 'ranking'; got {len(items)}.")
        target = "mean" if len(items) == 1 else "difference"
    need = {"mean": (1, 1), "difference": (2, 2), "baseline": (2, None), "ranking": (2, None)}
    if target not in need:
        raise ValueError(f"`target` must be one of {list(need)}; got {target!r}.")
    lo, hi = need[target]
    if len(items) < lo or (hi is not None and len(items) > hi):
        raise ValueError(f"`target`={target!r} needs {lo if lo == hi else f'at least {lo}'} rankers; got {len(items)}.")
    if names is None:
        names = default_names(target, len(items))
    names = [str(n) for n in names]
    if len(names) != len(items) or len(set(names)) != len(names):
        raise ValueError(f"`names` must give {len(items)} distinct names; got {names}.")
    label = {"mean": ["scores"], "difference": ["scores_a", "scores_b"]}.get(
        target, [f"rankers[{n!r}]" for n in names])
    return target, names, tuple(scores_iv(s, pool, label[i]) for i, s in enumerate(items))


def _pool_ids(pool):
    """String query ids, their kind ('int'/'str'), and string doc ids per row."""
    qids = np.asarray(pool.query_ids)
    offsets = np.asarray(pool.offsets, dtype=np.int64)
    qlist = qids.tolist()
    kind = "int" if all(isinstance(q, int) and not isinstance(q, bool) for q in qlist) else "str"
    qkeys = [key(q) for q in qlist]
    seen = {}
    for i, k in enumerate(qkeys):
        if not k:
            raise ValueError(f"`pool` query {i} has an empty query id.")
        if k in seen:
            raise ValueError(f"`pool` query id {k!r} appears twice (queries {seen[k]} and {i}).")
        seen[k] = i
    doc_ids = getattr(pool, "doc_ids", None)
    n_docs = int(offsets[-1])
    if doc_ids is None:
        dkeys = [str(r) for r in range(n_docs)]
    else:
        dkeys = [key(d) for d in np.asarray(doc_ids, dtype=object).tolist()]
        if len(dkeys) != n_docs:
            raise ValueError(f"`pool.doc_ids` must have one entry per document ({n_docs}); got {len(dkeys)}.")
    for x in range(offsets.size - 1):
        local = {}
        for r in range(offsets[x], offsets[x + 1]):
            d = dkeys[r]
            if not d:
                raise ValueError(
                    f"`pool` document row {r} (query {qkeys[x]!r}) has an empty document id; "
                    "every judged document needs an id."
                )
            if d in local:
                raise ValueError(
                    f"`pool` query {qkeys[x]!r} lists document id {d!r} twice (rows {local[d]} and {r})."
                )
            local[d] = r
    return qkeys, kind, dkeys


# --------------------------------------------------------------------------- the campaign's part


def _held_lines(path, pool, qkeys, dkeys):
    """``(line number, pool row, grade text)`` of every ``qid iter docid grade`` line of a qrels file that names a
    pair of the pool.  Lenient: lines are validated, with their reasons, when the file is imported; ids outside
    the pool are ignored here."""
    qindex = {q: x for x, q in enumerate(qkeys)}
    offsets = pool.offsets
    rows_of: dict = {}  # per query met: doc id -> pool row
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 4 or parts[0] not in qindex:
                continue
            x = qindex[parts[0]]
            if x not in rows_of:
                rows_of[x] = {dkeys[r]: r for r in range(int(offsets[x]), int(offsets[x + 1]))}
            row = rows_of[x].get(parts[2])
            if row is not None:
                yield number, row, parts[3]


def _held_rows(path, pool, qkeys, dkeys) -> np.ndarray:
    """Document rows of the pool that a qrels file names (:func:`_held_lines`)."""
    held = np.zeros(pool.n_docs, dtype=bool)
    held[[row for _, row, _ in _held_lines(path, pool, qkeys, dkeys)]] = True
    return held


def _held_grades(path, pool, qkeys, dkeys, n_grades: int) -> np.ndarray:
    """The grade of every pool row a qrels file names (-1 elsewhere), for calibrating judges; a grade that is not
    an integer on the scale raises, naming the line."""
    labels = np.full(pool.n_docs, -1, dtype=np.int64)
    for number, row, text in _held_lines(path, pool, qkeys, dkeys):
        try:
            grade = int(text)
        except ValueError:
            grade = -1
        if not 0 <= grade < n_grades:
            raise ValueError(f"`held_qrels` line {number}: grade {text!r} is not an integer in "
                             f"0..{n_grades - 1} (the relevance model's scale); the judges cannot be calibrated.")
        labels[row] = grade
    return labels


def _calibrated(pool, probs, judges, held_qrels, qkeys, dkeys, seed) -> tuple[np.ndarray, dict]:
    """``probs`` calibrated with ``judges`` on the held labels (engine.judged), and what was done."""
    from ..engine.judged import MIN_CALIBRATION_LABELS, calibrate_held, calibration_labels, judges_iv

    judges = judges_iv(judges, pool)
    if held_qrels is None:
        raise ValueError("`judges` in a campaign are calibrated on the human labels held: pass `held_qrels` (CLI: "
                         f"--qrels) with at least {MIN_CALIBRATION_LABELS} labels on judged documents, e.g. an "
                         "earlier campaign's qrels.")
    P = np.asarray(probs, dtype=np.float64)
    labels = _held_grades(held_qrels, pool, qkeys, dkeys, P.shape[1])
    n = calibration_labels(judges, labels)
    if n < MIN_CALIBRATION_LABELS:
        raise ValueError(f"`held_qrels` holds {n} labels on documents the judges judged; calibrating them in a "
                         f"campaign needs at least {MIN_CALIBRATION_LABELS}.")
    calibrated, info = calibrate_held(pool, P, judges, labels, seed=int(seed) % (2**31 - 1))
    return calibrated, {"judges": [j.name for j in judges], **info}


class _Writes:
    """The writing part of :class:`activerank.campaign.Campaign` (a mixin; see the module docstring)."""

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(cls: type[_C], path, pool, rankers, probs, *, budget, metric="err@10", k=None, method="auto",
               costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, seed=None, names=None,
               target=None, query_text=None, combine="mean_gain", overwrite=False,
               description="", judge="changeable", inputs=None, held_qrels=None, judges=None) -> _C:
        """Create a campaign file: freeze the pool, compute the design and the draw sequence.

        Parameters
        ----------
        path : str or os.PathLike
            The SQLite file to create.
        pool : LetorData, Pool, or object with ``offsets``, ``query_ids``
            (and ideally ``doc_ids``; without them documents are named by
            their global row number).
        rankers : scores, Rankings, list/tuple, or dict name -> scores
            One ranker (the campaign estimates its metric) or two (it
            estimates ``R_a - R_b``); with ``target``, several systems.
        probs : array-like of shape (n_docs, n_grades)
            Relevance model ``p(y | x, z)`` for every pool document.
        budget : float
            Labeling budget in units of the pool's mean query cost.
        metric, k, method, costs, query_weights, defensive
            As in :func:`activerank.estimate`.  The default ``method="auto"`` chooses once, at creation, by the
            API's rule among the designs that give an estimate from any judged head of their tasks while
            annotators work: ``"active"`` (its draw sequence) and, for additive metrics, ``"doc_dyn"`` (its
            budgeted order sample of single documents, exported with the draw order); the choice is stored and
            reported in the result's ``trace.attrs["auto"]``.  ``"active_wor"`` plans one sample without
            replacement that is usable only once judged whole.  The other document-level methods store the
            documents the engine asks for.  ``method="prefix"`` (cascade metrics) stores the engine's design and
            priority order of the queries; its tasks come in rounds, one document per query whose walk surely
            fits the hard budget, chosen from the judgments stored so far (:mod:`activerank.campaign.prefix`),
            and it estimates once its walks stop.  Every method keeps the realized cost within the budget.
        seed : int or None
            Seed of the draw sequence (stored).  ``None`` picks one at random
            (and stores it).  The same seed gives the same draws as
            ``activerank.estimate(..., rng=seed)``.
        names : sequence of str, optional
            Ranker names (default ``"ranker"`` or ``"a"``, ``"b"``).
        target : {"mean", "difference", "baseline", "ranking"}, optional
            What the campaign estimates (:mod:`activerank.design.targets`):
            default one ranker's mean or the difference of two.
            ``"baseline"``: every ranker minus the *last* one (as
            :func:`activerank.compare_many`); ``"ranking"``: the systems
            relative to the mean system (as :func:`activerank.rank_systems`).
        query_text : mapping query id -> str, optional
            Query text shown in exported tasks.
        combine : {"mean_gain", "majority"}
            How judgments of one pair by several annotators are combined.
        overwrite : bool, default False
            Replace an existing file at ``path``.
        description : str
        judge : {"changeable", "all"}, default "changeable"
            As in :func:`activerank.compare`: a comparison's tasks hold only
            the documents whose labels can change a difference (stored; the
            campaign's per-ranker estimates are then NaN).
        held_qrels : str or os.PathLike, optional
            A TREC qrels file of labels held already (``activerank campaign init --qrels``).  They cost
            nothing and shape the design as ``judgments=`` does in :func:`activerank.estimate`: a query-level
            design knows the queries they cover in full exactly and plans the others at the cost of their
            documents not held.  Lines naming ids outside the pool are ignored here; import the file with
            :meth:`import_qrels` (``scope="pool"``) before estimating -- the estimate needs the held grades.
        judges : JudgeOutputs or sequence of them, optional
            External judges (:func:`activerank.judges.read_judge`), calibrated on the labels of ``held_qrels``
            (at least 30 on judged documents) with ``probs`` as extra features; the calibrated model is the
            campaign's relevance model (stored, used by its design and estimates) and
            ``trace.attrs["judges"]`` of its results says how it was fitted.  Unbiased: the labels it was
            fitted on are held, known exactly in every estimate.
        inputs : mapping str -> path or sequence of paths, optional
            The files the campaign was made from, by role (``{"pool": ...,
            "train": ...}``): recorded, and never replaced by the campaign's
            outputs (task files, qrels, traces, backups), not even with
            ``overwrite=True``.  Imported judgment files are recorded by
            their import.

        Returns
        -------
        Campaign

        Raises
        ------
        FileExistsError
            ``path`` exists and ``overwrite`` is False.
        """
        auto = isinstance(method, str) and method == "auto"
        path, budget, seed = _create_args_iv(path, combine, overwrite, budget, seed, method=None if auto else method)
        pool_ = pool_iv(pool)
        target, names, rankings = _rankers_iv(rankers, names, pool_, target)
        qkeys, kind, dkeys = _pool_ids(pool)
        texts = {}
        if query_text is not None:
            if not hasattr(query_text, "items"):
                raise TypeError(f"`query_text` must be a mapping query id -> text; got {type(query_text).__name__}.")
            index = set(qkeys)
            for q, t in query_text.items():
                if key(q) not in index:
                    raise ValueError(f"`query_text` names query {key(q)!r}, which is not in the pool.")
                texts[key(q)] = str(t)
        design_args = dict(metric=metric, k=k, method=method, costs=costs, query_weights=query_weights,
                           defensive=defensive, names=names, judge=judge,
                           methods=method_names(unit="query") + method_names(unit="document")
                           + method_names(unit="prefix"))
        if held_qrels is not None:  # labels held are free: the design is planned around them
            design_args["judged"] = _held_rows(held_qrels, pool_, qkeys, dkeys)
        extra: dict | None = None
        if judges is not None:  # the judges, calibrated on the labels held, become the relevance model
            probs, fitted = _calibrated(pool_, probs, judges, held_qrels, qkeys, dkeys, seed)
            extra = {"judges": fitted}
        if auto:  # chosen once, by the API's rule (activerank.design.auto), and stored
            from ..design.auto import auto_design

            dsg, choice = auto_design(pool, pool_, target, rankings, probs, budget, design_args,
                                      query_method="active", alternatives=CAMPAIGN_ALTERNATIVES, route=CAMPAIGN_ROUTE)
            extra = {**(extra or {}), "auto": choice.as_dict()}
        else:
            dsg = prepare_design(pool, pool_, target, rankings, probs, **design_args)
        plan, documents, wor, prefix, kind_arrays = plan_family(dsg, pool_, budget, seed)
        return cls._write_new(path, dsg, pool_, plan, np.asarray(probs, dtype=np.float64), qkeys=qkeys, kind=kind,
                              dkeys=dkeys, texts=texts, names=names, target=target, seed=seed, budget=budget,
                              defensive=defensive, combine=combine, description=description, documents=documents,
                              wor=wor, prefix=prefix, kind_arrays=kind_arrays, extra_meta=extra,
                              inputs=_inputs_iv(inputs))

    @classmethod
    def _write_new(cls: type[_C], path, dsg, pool, plan, P, *, qkeys, kind, dkeys, texts, names, target, seed, budget,
                   defensive, combine, description, extra_meta=None, documents=None, wor=None,
                   prefix=None, kind_arrays=None, inputs=()) -> _C:
        """Write a new campaign file from a design, its (standardized) pool and draw plan, atomically.

        ``pool`` may hold documents for the drawn queries only (a distributed pool,
        :func:`activerank.distributed.create_campaign`): every other query then has none.
        ``documents`` is the document sample of a document-level method (``plan``
        then lists its units: one draw per task); ``wor`` the sample of a method without
        replacement (``plan`` lists its queries in selection order); ``prefix`` the design and sample of the
        prefix method (``plan`` lists every live query in priority order with its expected cost); ``kind_arrays`` what another
        design kind stores (:meth:`~activerank.design.kinds.base.DesignKind.to_arrays`).  ``inputs`` are
        ``(path, role)`` pairs of the files the campaign was made from.
        """
        # a Poisson sample spends the budget in expectation only: its realized cost may exceed it
        if documents is None and prefix is None and kind_arrays is None and plan.cost_spent > budget * (1 + BUDGET_RTOL):  # pragma: no cover
            raise RuntimeError(f"draw plan costs {plan.cost_spent} > budget {budget}.")
        offsets = np.asarray(pool.offsets, dtype=np.int64)
        doc_length = getattr(pool, "doc_length", None)

        from .._version import __version__

        meta = {
            "created_at": now(), "activerank_version": __version__, "description": str(description),
            "metric": str(dsg.metric), "method": dsg.method, "budget": budget, "seed": seed,
            "defensive": float(defensive), "cost_model": dsg.costs.model, "n_grades": dsg.n_grades,
            "query_id_kind": kind, "combine": combine, "rankers": names, "target": target, "judge": dsg.judge,
            "n_queries": len(qkeys), "n_docs": len(dkeys), **(extra_meta or {}),
        }
        meta.update(family_meta(documents, wor, prefix, kind_arrays))
        tmp = _temp_beside(path, "creating")
        conn, _ = connect(tmp)
        try:
            conn.execute("BEGIN IMMEDIATE")
            create_tables(conn)
            version = SCHEMA_VERSION if prefix is None else PREFIX_SCHEMA_VERSION
            conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
            lengths = np.diff(offsets)
            conn.executemany(
                "INSERT INTO queries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(x, qkeys[x], texts.get(qkeys[x]), int(offsets[x]), int(lengths[x]), float(dsg.p[x]),
                  float(dsg.q[x]), float(dsg.costs.cost[x]), float(dsg.costs.raw[x]),
                  float(dsg.prediction.mean[x, 0])) for x in range(len(qkeys))],
            )
            qidx = np.repeat(np.arange(len(qkeys)), lengths)
            dl = None if doc_length is None else np.asarray(doc_length, dtype=np.float64)
            conn.executemany(
                "INSERT INTO documents VALUES (?, ?, ?, ?)",
                [(r, int(qidx[r]), dkeys[r], None if dl is None else float(dl[r])) for r in range(len(dkeys))],
            )
            for i, (name, r) in enumerate(zip(names, dsg.rankings)):
                conn.execute("INSERT INTO rankers VALUES (?, ?)", (i, name))
                qi = r.query_index()
                pos = r.positions()
                conn.executemany(
                    "INSERT INTO ranked VALUES (?, ?, ?, ?)",
                    [(i, int(a), int(b), int(c)) for a, b, c in zip(qi, pos, r.items)],
                )
            conn.execute("INSERT INTO arrays VALUES (?, ?, ?, ?)", ("probs", *array_blob(P)))
            arrays = [("prediction_mean", dsg.prediction.mean), ("prediction_variance", dsg.prediction.variance),
                      ("prediction_sq_error", dsg.prediction.sq_error)]
            for name, arr in (("prediction_system_mean", dsg.prediction.system_mean),
                              ("prediction_output_variance", dsg.prediction.output_variance)):
                if arr is not None:  # each ranking's own model-assisted mean; the small-sample prior
                    arrays.append((name, arr))
            if dsg.held is not None:  # queries whose labels were held at creation: an exactly known stratum
                arrays.append(("held_queries", dsg.held.astype(np.int8)))
            if dsg.target.judged is not None:  # ratio metrics: the judged pool beyond the top-k lists
                arrays += [("judged_items", dsg.target.judged.items), ("judged_offsets", dsg.target.judged.offsets)]
            arrays += family_arrays(documents, wor, prefix, kind_arrays)
            for name, arr in arrays:
                conn.execute("INSERT INTO arrays VALUES (?, ?, ?, ?)", (name, *array_blob(np.asarray(arr))))
            conn.executemany(
                "INSERT INTO draws VALUES (?, ?, ?, ?)",
                [(j, int(x), int(nw), float(c)) for j, (x, nw, c) in
                 enumerate(zip(plan.queries, plan.new, plan.charged))],
            )
            conn.executemany("INSERT OR IGNORE INTO input_files VALUES (?, ?)", inputs)
            seal(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            remove_files(tmp, "", *SIDECARS)
            raise
        conn.close()
        replace_store(tmp, path)
        return cls.open(path)

    # ------------------------------------------------------------------ backup

    def backup(self, path, *, overwrite=False) -> str:
        """Copy the store to ``path`` with SQLite's online backup API, atomically; returns the path written.

        The copy is one consistent state of the store even while other
        processes import into it (they wait for the copy: it holds a read lock
        while it runs).  It is written to a temporary file beside ``path``,
        checked (SQLite's ``quick_check`` and the checks run on opening), and
        then renamed to ``path``.

        Parameters
        ----------
        path : str or os.PathLike
            The backup file.  Never the store itself (or its journal) nor a file
            the campaign read (:meth:`input_files`), not even with ``overwrite``.
        overwrite : bool, default False
            Replace an existing file at ``path`` (an empty file is replaced without it).

        Raises
        ------
        ValueError
            ``path`` is the store or one of its inputs; or the copy failed its check.
        FileExistsError
            ``path`` exists and ``overwrite`` is False.
        """
        path = self.check_output(path, kind="backup", overwrite=overwrite)
        tmp = _temp_beside(path, "backup")
        dst = sqlite3.connect(tmp, isolation_level=None)
        try:
            # one step: a copy in several steps restarts whenever another process commits meanwhile
            self._db.backup(dst, pages=-1)
            dst.execute("PRAGMA journal_mode=DELETE")
            res = [r[0] for r in dst.execute("PRAGMA quick_check")]
            problems = ([] if res == ["ok"] else ["quick_check: " + "; ".join(res[:5])]) + quick_problems(dst)
            if problems:
                raise CorruptStoreError(self.path, problems, action="its backup failed the check; nothing written")
            dst.close()
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        except BaseException:
            dst.close()
            remove_files(tmp, "", *SIDECARS)
            raise
        replace_store(tmp, path)
        return path

    # ------------------------------------------------------------------ import

    def import_judgments(self, path, *, format=None, annotator=None, scope="tasks", chunk_size=500,
                         on_commit=None, progress=None) -> ImportReport:
        """Validate and store the judgments of one file.

        Parameters
        ----------
        path : str or os.PathLike
            JSONL, CSV or qrels file (see :mod:`activerank.campaign.io`).
        format : {"jsonl", "csv", "qrels"}, optional
            Default: from the extension (``.jsonl``/``.json``/``.ndjson``,
            ``.csv``, ``.qrels``).
        annotator : str, optional
            Annotator of rows that name none (default ``""``).
        scope : {"tasks", "pool"}, default "tasks"
            ``"tasks"`` accepts only documents the campaign asks for (the
            top-k documents of planned queries; document-level campaigns:
            the sampled documents); ``"pool"`` accepts any pool document
            (pre-existing judgments, e.g. old qrels).
        chunk_size : int, default 500
            Lines per transaction.
        on_commit : callable, optional
            Called as ``on_commit(first_line, last_line, n_accepted)`` after
            each commit; every data line in ``first_line..last_line`` is then
            durable in the store file itself (a copy of the file alone holds
            it; see :mod:`activerank.campaign.schema`, Durability).
        progress : bool, optional
            A progress bar on stderr (default: on a terminal, for imports
            longer than a few seconds).

        Returns
        -------
        ImportReport

        Raises
        ------
        ValueError
            For a file-level problem (wrong CSV columns, UTF-16, binary data
            such as the campaign store itself, no recognizable row among the
            first lines, no rows): nothing is stored.  Row-level problems (malformed JSON, unknown
            query or document, grade not an integer on the scale) do not
            raise: those rows are listed in ``ImportReport.rejected`` with
            their line numbers and the valid rows are stored.

        Notes
        -----
        Idempotent: a file is identified by the SHA-256 of its content, and
        each processed line by ``(file, line)``.  Importing the same content
        again does nothing; importing it after an interrupted import stores
        exactly the lines not yet stored.  A line repeating an annotator's
        current grade for a pair (e.g. the same judgment in a re-sent file)
        is counted as a duplicate and not stored again.  Two processes may
        import the same file at the same time: each chunk re-reads, under the
        write lock, which lines the other has stored, so every line is stored
        once and neither fails.

        At most :data:`MAX_STORED_REJECTIONS` rejected lines are stored per
        file (with their reasons); further rejected lines are only counted
        (``ImportReport.n_rejected``).
        """
        if annotator is not None and not isinstance(annotator, str):
            raise TypeError(f"`annotator` must be a string or None; got {type(annotator).__name__}.")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
            raise ValueError(f"`chunk_size` must be a positive integer; got {chunk_size!r}.")
        progress = progress_iv(progress)
        path, fmt, raw = self._judgment_file(path, format, scope)
        sha = hashlib.sha256(raw).hexdigest()
        rows, notes = cio.parse_judgment_file(raw, fmt, path)
        db = self._db
        with self._write():
            found = db.execute("SELECT batch_id, completed_at FROM batches WHERE sha256 = ?", (sha,)).fetchone()
            if found is None:
                cur = db.execute(
                    "INSERT INTO batches (sha256, path, format, scope, annotator, n_rows, notes, started_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (sha, os.path.abspath(path), fmt, scope, annotator, len(rows), json.dumps(notes), now()))
                batch_id, completed, resumed = cur.lastrowid, None, False
            else:
                batch_id, completed = found
                resumed = completed is None
        if completed is not None:
            return self._report(batch_id, path, sha, fmt, len(rows), 0, True, False, notes)
        done = {ln for (ln,) in db.execute("SELECT line FROM import_lines WHERE batch_id = ?", (batch_id,))}
        pending = [r for r in rows if r.line not in done]
        if self._rounds:  # this round's tasks: what the sample asks for given the stored grades
            self._refresh(self._combined()[0])
        default_ann = "" if annotator is None else annotator.strip()
        state = _ImportState(db, batch_id)
        accepted_now = stored_now = 0
        with progress_bar(total=len(pending), desc=f"import {os.path.basename(path)}", unit="line",
                          enabled=progress) as bar:
            for start in range(0, len(pending), chunk_size):
                chunk = pending[start:start + chunk_size]
                with self._write() as conn:
                    lines, judg = self._classify_chunk(conn, state, chunk, scope, default_ann)
                    conn.executemany("INSERT INTO import_lines VALUES (?, ?, ?, ?)", lines)
                    append_judgments(conn, judg)
                accepted_now += len(judg)
                stored_now += len(lines)
                bar.update(len(chunk))
                if on_commit is not None and lines:
                    on_commit(lines[0][1], lines[-1][1], len(judg))
        with self._write() as conn:
            conn.execute("UPDATE batches SET completed_at = ? WHERE batch_id = ? AND completed_at IS NULL",
                         (now(), batch_id))
        # a concurrent import of the same content did everything: as if it had been imported before
        already = resumed and stored_now == 0
        return self._report(batch_id, path, sha, fmt, len(rows), accepted_now, already, resumed and not already,
                            notes)

    def validate_judgments(self, path, *, format=None, scope="tasks") -> tuple:
        """Every line of a judgment file that :meth:`import_judgments` would reject, with the reason.

        Stores nothing.  Unlike ``ImportReport.rejected`` the list is not capped
        (:data:`MAX_STORED_REJECTIONS`); lines with an empty grade (unanswered) are
        not rejections.  ``activerank campaign init --qrels`` checks its file with it
        before storing a line.

        Returns
        -------
        tuple of Rejection
            In line order.

        Raises
        ------
        ValueError
            For a file-level problem, as :meth:`import_judgments`.
        """
        path, fmt, raw = self._judgment_file(path, format, scope)
        rows, _ = cio.parse_judgment_file(raw, fmt, path)
        if self._rounds:  # this round's tasks
            self._refresh(self._combined()[0])
        out = []
        for r in rows:
            status, message, _ = self._check_row(r, scope, "")
            if status == "rejected" and message != cio.EMPTY_GRADE:
                out.append(Rejection(r.line, message))
        return tuple(out)

    def _judgment_file(self, path, format, scope):
        """``(path, format, content)`` of a judgment file, after the checks every import makes first."""
        path = path_iv(path)
        fmt = cio.detect_format(path, format)
        if scope not in SCOPES:
            raise ValueError(f"`scope` must be one of {list(SCOPES)}; got {scope!r}.")
        if any(cio._same_file(path, self.path + suffix) for suffix in cio._STORE_SUFFIXES):
            raise ValueError(f"{path}: this is the campaign store itself, not a judgment file.")
        with open(path, "rb") as f:
            return path, fmt, f.read()

    def _classify_chunk(self, conn, state, chunk, scope, default_ann):
        """Status of every line of ``chunk`` (inside the chunk's write transaction).

        Re-reads, under the write lock, what other connections stored since the
        last chunk -- lines of this file imported concurrently by another
        process, and new judgments (for the duplicate test) -- so that two
        imports of one file at once neither collide nor store a line twice.
        """
        first, last = chunk[0].line, chunk[-1].line
        taken = {ln for (ln,) in conn.execute(
            "SELECT line FROM import_lines WHERE batch_id = ? AND line BETWEEN ? AND ?",
            (state.batch_id, first, last))}
        state.refresh(conn)
        lines, judg = [], []
        for r in chunk:
            if r.line in taken:
                continue
            status, message, item = self._check_row(r, scope, default_ann)
            if status == "rejected" and message == cio.EMPTY_GRADE:
                status = "unanswered"
            if status == "rejected":
                if state.n_rejected_stored >= MAX_STORED_REJECTIONS:
                    continue  # counted, not stored: see ImportReport.n_rejected
                state.n_rejected_stored += 1
            if status == "accepted":
                row, grade, ann, when = item
                if state.latest.get((row, ann)) == grade:
                    status, message = "duplicate", (
                        f"repeats annotator {ann!r}'s grade {grade} for this pair; not stored again")
                else:
                    state.latest[(row, ann)] = grade
                    judg.append((row, grade, ann, when, now(), state.batch_id, r.line))
            lines.append((state.batch_id, r.line, status, message))
        return lines, judg

    def import_qrels(self, path, *, annotator=None, scope="pool", chunk_size=500, on_commit=None,
                     progress=None) -> ImportReport:
        """Import a TREC qrels file as judgments (pre-existing ones by default: ``scope="pool"``).

        ``annotator`` defaults to ``"qrels:<file name>"``.
        """
        path = path_iv(path)
        if annotator is None:
            annotator = "qrels:" + os.path.basename(path)
        return self.import_judgments(path, format="qrels", annotator=annotator, scope=scope,
                                     chunk_size=chunk_size, on_commit=on_commit, progress=progress)

    def _check_row(self, r, scope, default_ann):
        if r.error is not None:
            return "rejected", r.error, None
        f = r.fields
        qid, err = cio.parse_id(f.get("query_id"), "query_id")
        if err:
            return "rejected", err, None
        doc, err = cio.parse_id(f.get("doc_id"), "doc_id")
        if err:
            return "rejected", err, None
        x = self._qindex.get(qid)
        if x is None:
            return "rejected", f"unknown query id {qid!r} (not in the campaign's pool)", None
        row = self._dindex.get((x, doc))
        if row is None:
            return "rejected", f"unknown document id {doc!r} for query {qid!r} (not in the campaign's pool)", None
        if scope == "tasks" and self._task_cost is not None and row in self._task_cost:
            pass  # a document the sample may ask for later: kept, used when it gets there
        elif scope == "tasks" and row not in self._needed_rows:
            if self._rounds:
                why = ("the query was not sampled" if x not in self._needed
                       else "the document is not among the query's documents to judge")
            elif self._documents is not None:
                why = ("no document of the query was sampled" if x not in self._needed
                       else "the document was not sampled")
            else:
                why = ("the query is not in the draw sequence" if x not in self._needed
                       else "the document is not in the evaluated rankings' top documents")
            return "rejected", (f"document {doc!r} of query {qid!r} is not a task of this campaign ({why}); "
                                "import pre-existing judgments with scope='pool'"), None
        grade, err = cio.parse_grade(f.get("grade"), self.n_grades, typed=r.typed)
        if err:
            return "rejected", err, None
        ann, err = cio.parse_optional_text(f.get("annotator"), "annotator")
        if err:
            return "rejected", err, None
        when, err = cio.parse_time(f.get("judged_at"))
        if err:
            return "rejected", err, None
        return "accepted", None, (row, grade, default_ann if ann is None else ann, when)

    def _report(self, batch_id, path, sha, fmt, n_rows, accepted_now, already, resumed, notes) -> ImportReport:
        counts = dict(self._db.execute(
            "SELECT status, COUNT(*) FROM import_lines WHERE batch_id = ? GROUP BY status", (batch_id,)))
        rejected = tuple(Rejection(ln, msg) for ln, msg in self._db.execute(
            "SELECT line, message FROM import_lines WHERE batch_id = ? AND status = 'rejected' ORDER BY line",
            (batch_id,)))
        # every data line of a completed import is stored, except rejections beyond the cap
        n_rejected = len(rejected) + max(0, n_rows - sum(counts.values()))
        return ImportReport(path=path, sha256=sha, format=fmt, batch_id=batch_id, n_rows=n_rows,
                            accepted=counts.get("accepted", 0), duplicates=counts.get("duplicate", 0),
                            unanswered=counts.get("unanswered", 0),
                            accepted_now=accepted_now, rejected=rejected, already_imported=already,
                            resumed=resumed, notes=tuple(notes), n_rejected=n_rejected)

