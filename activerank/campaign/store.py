"""The campaign store: one SQLite file holding a labeling campaign.

Layout (schema version :data:`SCHEMA_VERSION`)
    ``schema_version``  the single version number of the layout.
    ``meta``            JSON-encoded settings: metric, method, budget, seed, ...
    ``queries``         frozen pool snapshot per query: id, text, target ``p``,
                        sampling ``q``, normalized and raw cost, model mean.
    ``documents``       pool documents: global row, query, document id, length.
    ``rankers``/``ranked``  the evaluated rankings truncated at the cutoff.
    ``arrays``          numeric arrays as raw little-endian bytes (``probs``).

A campaign on a distributed pool (:func:`activerank.distributed.create_campaign`)
stores every query's row but the documents, rankings and probabilities of the
drawn queries only (the other queries have ``n_docs = 0``).
    ``draws``           the complete draw sequence, fixed at creation.
    ``batches``         one per imported file (SHA-256 of its content).
    ``import_lines``    one per processed data line of a batch: accepted,
                        duplicate, unanswered or rejected (with the reason).
    ``judgments``       every accepted judgment: document, grade, annotator,
                        judging time, import time, batch and line.
    ``exports``/``export_queries``  which task files were written.

A campaign of a document-level method (``unit="document"``, e.g. ``doc_dyn``;
:mod:`activerank.campaign.documents`) has schema version
:data:`DOCUMENT_SCHEMA_VERSION` (so that an activerank that cannot plan
documents refuses the file instead of misreading it), ``meta`` ``unit =
"document"`` and ``expected_cost``, the sampled units in ``draws`` (one row
per task: query, cost), and in ``arrays`` the linear target over units
(``unit_rows``, ``unit_query``, ``unit_weights``, ``unit_gains``,
``unit_offsets``), the Poisson design (``unit_pi``, ``unit_costs``) and the
sampled units (``unit_sample``): the estimate needs nothing else.

A campaign of a query-level method that samples without replacement
(``replacement=False``, e.g. ``active_wor``; :mod:`activerank.design.wor_methods`)
has schema version :data:`WOR_SCHEMA_VERSION`: ``draws`` holds the budgeted
sequential Poisson sample in selection order (one row per sampled query),
``meta`` ``sampling = "without_replacement"`` and ``wor_threshold`` (the
ranking variable of the first query that did not fit), and ``arrays``
``wor_pi`` the conditional inclusion probability of every sampled query.
Like a document sample, it is usable only whole: which queries of the sample
annotators finish first does not describe how the sample was drawn.

A campaign of the ``prefix`` method (``unit="prefix"``; :mod:`activerank.campaign.prefix`)
has schema version :data:`PREFIX_SCHEMA_VERSION`: ``meta`` ``unit = "prefix"``
and ``expected_cost``, ``draws`` one row per sampled query (its expected cost),
and ``arrays`` the design of every query (``prefix_pi``, ``prefix_tau``,
``prefix_floor``, ``prefix_expected_cost``, ``prefix_within_variance``,
``prefix_live``), the sample (``prefix_queries``, ``prefix_u``) and the raw
``document_costs``.  Its tasks come in rounds: one document per sampled query
whose walk is not finished, decided by the judgments stored so far.

A campaign of the other document-level methods (``doc_uniform``, ``doc_hh``,
``two_stage``, ``doc_ubis``) has schema version :data:`RECORDED_SCHEMA_VERSION`:
``meta`` ``unit = "document"``, ``document_plan = "recorded"`` and
``expected_cost``, ``draws`` one row per recorded document, and ``arrays`` the
documents the engine asks for with ``rng=seed`` (``recorded_rows``,
``recorded_query``, ``recorded_costs``) and the raw ``document_costs``; its
estimate runs the engine again on the stored grades.

Durability: the database runs in WAL mode with ``synchronous=FULL``; every
write is an explicit ``BEGIN IMMEDIATE ... COMMIT`` transaction.  Imports commit
in chunks of lines and record each processed line under the key
``(batch, line)``; a batch is identified by the SHA-256 of the file content,
so re-importing a file -- after a crash, or by mistake -- resumes where the
last commit ended and never stores a line twice.  Nothing is pickled or
evaluated.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import pathlib
import secrets
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import numpy as np

from .._validation import budget_iv, path_iv, scores_iv, seed_iv
from ..pool import pool_iv
from ..design.costs import QueryCosts
from ..design.design import Design
from ..design.sampling import DEFAULT_DEFENSIVE, DrawPlan, draw_budgeted
from ..design.design import prepare_design
from ..design.methods import get_method, method_names
from ..design.targets import Prediction, default_names, make_target
from ..design.without_replacement import WORSample
from ..engine import estimate_from_plan
from ..metrics.registry import parse_stored_metric
from ..pool import Pool
from ..ragged import Rankings, offsets_from_lengths
from . import io as cio
from .documents import ARRAY_NAMES as _UNIT_ARRAYS
from .documents import RECORDED_ARRAY_NAMES as _RECORDED_ARRAYS
from .documents import DocumentPlan, RecordedDocumentPlan, estimate_documents, estimate_recorded, plan_documents
from .prefix import ARRAY_NAMES as _PREFIX_ARRAYS
from .prefix import PrefixCampaignPlan, estimate_prefix, plan_prefix_campaign
from .without_replacement import estimate_without_replacement, plan_without_replacement

__all__ = [
    "SCHEMA_VERSION",
    "DOCUMENT_SCHEMA_VERSION",
    "WOR_SCHEMA_VERSION",
    "PREFIX_SCHEMA_VERSION",
    "RECORDED_SCHEMA_VERSION",
    "COMBINE_RULES",
    "Campaign",
    "CampaignStatus",
    "ExportReport",
    "ImportReport",
    "Rejection",
    "combine_grades",
]

SCHEMA_VERSION = 2
DOCUMENT_SCHEMA_VERSION = 3  # the layout of version 2 plus a document sample (campaigns of document-level methods)
WOR_SCHEMA_VERSION = 4  # the layout of version 2 plus the inclusion probabilities of a sample without replacement
PREFIX_SCHEMA_VERSION = 5  # the layout of version 2 plus the design and sample of the prefix method
RECORDED_SCHEMA_VERSION = 6  # the layout of version 2 plus the recorded documents of a document-level design
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6)  # version 1: one ranker or a pair, no stored prediction arrays
COMBINE_RULES = cio.COMBINE_RULES
MAX_STORED_REJECTIONS = 1000  # per imported file; further rejected lines are counted, not stored
SCOPES = ("tasks", "pool")
_BUDGET_RTOL = 1e-9

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE queries (
    qx INTEGER PRIMARY KEY,
    query_id TEXT NOT NULL UNIQUE,
    query_text TEXT,
    first_row INTEGER NOT NULL,
    n_docs INTEGER NOT NULL,
    p REAL NOT NULL,
    q REAL NOT NULL,
    cost REAL NOT NULL,
    raw_cost REAL NOT NULL,
    predicted_mean REAL NOT NULL
);
CREATE TABLE documents (
    doc_row INTEGER PRIMARY KEY,
    qx INTEGER NOT NULL REFERENCES queries(qx),
    doc_id TEXT NOT NULL,
    doc_length REAL,
    UNIQUE (qx, doc_id)
);
CREATE TABLE rankers (ranker INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE ranked (
    ranker INTEGER NOT NULL REFERENCES rankers(ranker),
    qx INTEGER NOT NULL REFERENCES queries(qx),
    pos INTEGER NOT NULL,
    doc_row INTEGER NOT NULL REFERENCES documents(doc_row),
    PRIMARY KEY (ranker, qx, pos)
);
CREATE TABLE arrays (name TEXT PRIMARY KEY, dtype TEXT NOT NULL, shape TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE draws (
    j INTEGER PRIMARY KEY,
    qx INTEGER NOT NULL REFERENCES queries(qx),
    new INTEGER NOT NULL,
    charged REAL NOT NULL
);
CREATE TABLE batches (
    batch_id INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    format TEXT NOT NULL,
    scope TEXT NOT NULL,
    annotator TEXT,
    n_rows INTEGER NOT NULL,
    notes TEXT NOT NULL,
    started_at TEXT NOT NULL,
    completed_at TEXT
);
CREATE TABLE import_lines (
    batch_id INTEGER NOT NULL REFERENCES batches(batch_id),
    line INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('accepted', 'duplicate', 'unanswered', 'rejected')),
    message TEXT,
    PRIMARY KEY (batch_id, line)
);
CREATE TABLE judgments (
    judgment_id INTEGER PRIMARY KEY,
    doc_row INTEGER NOT NULL REFERENCES documents(doc_row),
    grade INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    judged_at TEXT,
    imported_at TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    line INTEGER NOT NULL,
    UNIQUE (batch_id, line),
    FOREIGN KEY (batch_id, line) REFERENCES import_lines(batch_id, line)
);
CREATE INDEX judgments_by_doc ON judgments(doc_row, annotator);
CREATE TABLE exports (
    export_id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    format TEXT NOT NULL,
    created_at TEXT NOT NULL,
    n_rows INTEGER NOT NULL,
    n_queries INTEGER NOT NULL
);
CREATE TABLE export_queries (
    export_id INTEGER NOT NULL REFERENCES exports(export_id),
    qx INTEGER NOT NULL REFERENCES queries(qx),
    PRIMARY KEY (export_id, qx)
);
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _key(value) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=60.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


# --------------------------------------------------------------------------- combination rule


def combine_grades(grades, rule: str = "mean_gain") -> int:
    """Combine several annotators' grades for one query-document pair.

    Parameters
    ----------
    grades : sequence of int
        One grade per annotator (each annotator's latest judgment).
    rule : {"mean_gain", "majority"}
        ``"mean_gain"``: average the DCG gains ``2**g - 1`` and return the
        grade whose gain is nearest to that mean (ties to the lower grade) --
        averaging on the gain scale, as Schnabel et al. (2016, §3.7) do for
        multiple judgments, then rounding back to the grade scale because the
        estimator works with integer grades.  ``"majority"``: the most
        frequent grade, ties to the lower grade.  A single grade is returned
        unchanged by both rules.

    Returns
    -------
    int

    References
    ----------
    .. [1] T. Schnabel, A. Swaminathan, P. Frazier, T. Joachims. "Unbiased
       Comparative Evaluation of Ranking Functions." ICTIR 2016.

    Examples
    --------
    >>> combine_grades([0, 2]), combine_grades([2, 2, 1]), combine_grades([0, 2, 2], "majority")
    (1, 2, 2)
    """
    g = np.asarray(grades, dtype=np.int64)
    if g.size == 0:
        raise ValueError("`grades` must not be empty.")
    if g.size == 1:
        return int(g[0])
    if rule == "mean_gain":
        mean = float(np.mean(np.exp2(g) - 1.0))
        candidates = np.arange(int(g.max()) + 1)
        dist = np.abs((np.exp2(candidates) - 1.0) - mean)
        return int(candidates[np.argmin(dist)])  # argmin takes the first (lower) on ties
    if rule == "majority":
        values, counts = np.unique(g, return_counts=True)
        return int(values[np.argmax(counts)])
    raise ValueError(f"`rule` must be one of {list(COMBINE_RULES)}; got {rule!r}.")


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class Rejection:
    """A judgment-file line that was not stored, with the reason."""

    line: int
    message: str


@dataclass(frozen=True)
class ImportReport:
    """Outcome of importing one judgment file.

    Counts cover the whole file (including lines stored by an earlier,
    interrupted import of the same file); ``accepted_now`` counts what this
    call stored.

    Attributes
    ----------
    path, sha256, format : str
    batch_id : int
    n_rows : int
        Data lines in the file.
    accepted, duplicates, unanswered, accepted_now : int
        ``duplicates`` are lines repeating an annotator's current grade for
        the pair (not stored again); ``unanswered`` are lines with an empty
        grade (a task row the annotator left blank: skipped, not an error).
    rejected : tuple of Rejection
        The first :data:`MAX_STORED_REJECTIONS` rejected lines (in line order).
    n_rejected : int
        All rejected lines, including those beyond the cap (counted, not stored).
    already_imported : bool
        The same content had been imported completely before; nothing was done.
    resumed : bool
        An interrupted import of the same content was continued.
    notes : tuple of str
    """

    path: str
    sha256: str
    format: str
    batch_id: int
    n_rows: int
    accepted: int
    duplicates: int
    unanswered: int
    accepted_now: int
    rejected: tuple
    already_imported: bool
    resumed: bool
    notes: tuple = ()
    n_rejected: int = 0

    def messages(self) -> list[str]:
        """``"<file>: line <n>: <reason>"`` for every stored rejected line (and a count of the rest)."""
        out = [f"{self.path}: line {r.line}: {r.message}" for r in self.rejected]
        more = self.n_rejected - len(self.rejected)
        if more > 0:
            out.append(f"{self.path}: {more} more rejected lines not listed (only the first "
                       f"{len(self.rejected)} rejections are kept)")
        return out


@dataclass(frozen=True)
class ExportReport:
    """Outcome of :meth:`Campaign.export_tasks`."""

    path: str
    format: str
    n_rows: int
    n_queries: int
    query_ids: tuple
    cost: float


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


@dataclass(frozen=True)
class CampaignStatus:
    """Progress of a campaign.

    Costs are in the budget's unit (mean query cost of the pool = 1).

    Attributes
    ----------
    budget : float
    cost_planned : float
        Cost of every query the draw sequence asks for (``<= budget``; cost
        sums exceeding the budget only by floating-point rounding, relative
        ``1e-9``, are reported as the budget).
    cost_spent : float
        Cost of the planned queries whose documents are all judged.
    cost_in_progress : float
        Cost of planned queries with some but not all documents judged.
    budget_left : float
        ``budget - cost_spent - cost_in_progress``.
    n_draws : int
    queries_done, queries_partial, queries_pending : tuple of str
        Planned query ids, in draw order.
    n_documents_needed, n_documents_judged : int
        Documents of planned queries to judge / judged so far.
    n_judgments : int
        Stored judgments (all annotators, all documents).
    n_conflicts : int
        Pairs whose annotators disagree (combined by ``combine``).
    draws_usable : int
        Length of the draw-sequence prefix whose queries are all judged:
        what :meth:`Campaign.estimate` uses.
    blocking_query : str or None
        The first drawn query that is not fully judged (ends the prefix).
    n_imports, n_exports : int
    combine : str
    unit : {"query", "document", "prefix"}
        What the campaign samples.  A prefix campaign counts ``n_documents_needed`` as the documents its
        walks have judged plus one per query still being judged, ``cost_planned`` as the expected cost of
        the sampled queries and ``cost_spent`` as the cost of the judged documents.  Document-level campaigns count tasks in
        documents: ``n_draws`` = sampled documents, ``cost_spent`` = cost of
        those judged, ``cost_in_progress`` = 0, ``cost_planned`` = realized
        cost of the sample (may exceed ``budget``: Poisson sampling spends it
        in expectation), ``draws_usable`` = ``n_draws`` once all are judged,
        else 0 (the estimate needs the whole sample).
    """

    budget: float
    cost_planned: float
    cost_spent: float
    cost_in_progress: float
    budget_left: float
    n_draws: int
    queries_done: tuple
    queries_partial: tuple
    queries_pending: tuple
    n_documents_needed: int
    n_documents_judged: int
    n_judgments: int
    n_conflicts: int
    draws_usable: int
    blocking_query: str | None
    n_imports: int
    n_exports: int
    combine: str
    unit: str = "query"

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


# --------------------------------------------------------------------------- import helpers


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
    qkeys = [_key(q) for q in qlist]
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
        dkeys = [_key(d) for d in np.asarray(doc_ids, dtype=object).tolist()]
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


def _array_blob(arr: np.ndarray):
    a = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return a.dtype.str, json.dumps(list(a.shape)), a.tobytes()


# --------------------------------------------------------------------------- the campaign


class Campaign:
    """A labeling campaign persisted in one SQLite file.

    Build one with :meth:`create`, reopen it with :meth:`open`.  Use as a
    context manager (or call :meth:`close`).

    Workflow: :meth:`export_tasks` writes the next queries to judge (in draw
    order) as JSONL/CSV; annotators fill in grades; :meth:`import_judgments`
    validates and stores them; :meth:`status` reports progress and
    :meth:`estimate` computes the estimate and its standard error from the
    judgments so far.

    With a document-level method (``method="doc_dyn"``, ``"doc_stat"``, or
    any registered method of ``unit="document"``) the tasks are single
    (query, document) pairs: the Poisson sample the engine would judge
    (:mod:`activerank.campaign.documents`); the estimate needs all of them.

    Judgments of one pair by several annotators are all kept.  Per annotator
    the latest judgment (import order) counts; across annotators they are
    combined by the campaign's ``combine`` rule (see :func:`combine_grades`).
    """

    def __init__(self, path: str, conn: sqlite3.Connection):
        self.path = path
        self._conn = conn
        self._load()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(cls, path, pool, rankers, probs, *, budget, metric="err@10", k=None, method="active",
               costs="auto", query_weights=None, defensive=DEFAULT_DEFENSIVE, seed=None, names=None,
               target=None, query_text=None, combine="mean_gain", overwrite=False,
               description="", judge="changeable") -> "Campaign":
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
            As in :func:`activerank.estimate` (``method="auto"`` chooses once,
            at creation, with the API's rule; the choice is stored and reported
            in the result's ``trace.attrs["auto"]``), but the
            default method is ``"active"``: its draw sequence gives an
            estimate from any fully judged prefix while annotators work,
            where ``"active_wor"`` (the API's default) plans one sample
            without replacement that is usable only once judged whole.  A
            document-level method (``unit="document"``: ``doc_dyn``,
            ``doc_stat``; additive metrics) plans the engine's Poisson sample
            of single documents instead of a query draw sequence (the other
            document-level methods: the documents the engine asks for,
            recorded): the tasks are the documents
            ``activerank.estimate(..., method=method, rng=seed)`` would send to
            its labeler, the budget is spent in
            expectation (the realized cost of the sample may exceed it), and
            the estimate needs every sampled document judged.  ``method="prefix"``
            (cascade metrics) stores the engine's design and query sample; its
            tasks come in rounds, one document per sampled query still being
            judged, chosen from the judgments stored so far
            (:mod:`activerank.campaign.prefix`).
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
                if _key(q) not in index:
                    raise ValueError(f"`query_text` names query {_key(q)!r}, which is not in the pool.")
                texts[_key(q)] = str(t)
        design_args = dict(metric=metric, k=k, method=method, costs=costs, query_weights=query_weights,
                           defensive=defensive, names=names, judge=judge,
                           methods=method_names(unit="query") + method_names(unit="document")
                           + method_names(unit="prefix"))
        extra = None
        if auto:  # chosen once, by the API's rule (activerank.design.auto), and stored
            from ..design.auto import auto_design

            dsg, choice = auto_design(pool, pool_, target, rankings, probs, budget, design_args)
            extra = {"auto": choice.as_dict()}
        else:
            dsg = prepare_design(pool, pool_, target, rankings, probs, **design_args)
        documents = wor = prefix = None
        if dsg.method_spec.unit == "prefix":  # the engine's design and sample; tasks come in rounds
            prefix = plan_prefix_campaign(dsg, budget, seed)
            x = prefix.queries
            plan = DrawPlan(queries=x, new=np.ones(x.size, dtype=bool), charged=prefix.plan.expected_cost[x],
                            budget=budget)
        elif dsg.method_spec.unit == "document":  # the engine's Poisson sample of (query, document) units
            documents = plan_documents(dsg, pool_, budget, seed)
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
        return cls._write_new(path, dsg, pool_, plan, np.asarray(probs, dtype=np.float64), qkeys=qkeys, kind=kind,
                              dkeys=dkeys, texts=texts, names=names, target=target, seed=seed, budget=budget,
                              defensive=defensive, combine=combine, description=description, documents=documents,
                              wor=wor, prefix=prefix, extra_meta=extra)

    @classmethod
    def _write_new(cls, path, dsg, pool, plan, P, *, qkeys, kind, dkeys, texts, names, target, seed, budget,
                   defensive, combine, description, extra_meta=None, documents=None, wor=None,
                   prefix=None) -> "Campaign":
        """Write a new campaign file from a design, its (standardized) pool and draw plan, atomically.

        ``pool`` may hold documents for the drawn queries only (a distributed pool,
        :func:`activerank.distributed.create_campaign`): every other query then has none.
        ``documents`` is the document sample of a document-level method (``plan``
        then lists its units: one draw per task); ``wor`` the sample of a method without
        replacement (``plan`` lists its queries in selection order); ``prefix`` the design and sample of the
        prefix method (``plan`` lists the sampled queries with their expected costs).
        """
        # a Poisson sample spends the budget in expectation only: its realized cost may exceed it
        if documents is None and prefix is None and plan.cost_spent > budget * (1 + _BUDGET_RTOL):  # pragma: no cover
            raise RuntimeError(f"draw plan costs {plan.cost_spent} > budget {budget}.")
        offsets = np.asarray(pool.offsets, dtype=np.int64)
        doc_length = getattr(pool, "doc_length", None)

        from .._version import __version__

        meta = {
            "created_at": _now(), "activerank_version": __version__, "description": str(description),
            "metric": str(dsg.metric), "method": dsg.method, "budget": budget, "seed": seed,
            "defensive": float(defensive), "cost_model": dsg.costs.model, "n_grades": dsg.n_grades,
            "query_id_kind": kind, "combine": combine, "rankers": names, "target": target, "judge": dsg.judge,
            "n_queries": len(qkeys), "n_docs": len(dkeys), **(extra_meta or {}),
        }
        recorded = isinstance(documents, RecordedDocumentPlan)
        if documents is not None:
            meta.update(unit="document", expected_cost=documents.expected_cost)
        if recorded:
            meta.update(document_plan="recorded")
        if wor is not None:
            meta.update(sampling="without_replacement", wor_threshold=float(wor.threshold))
        if prefix is not None:
            meta.update(unit="prefix", expected_cost=prefix.expected_cost)
        directory = os.path.dirname(os.path.abspath(path))
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.creating")
        conn = _connect(tmp)
        try:
            conn.execute("BEGIN IMMEDIATE")
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute("INSERT INTO schema_version VALUES (?)",
                         (RECORDED_SCHEMA_VERSION if recorded else
                          DOCUMENT_SCHEMA_VERSION if documents is not None else
                          WOR_SCHEMA_VERSION if wor is not None else
                          PREFIX_SCHEMA_VERSION if prefix is not None else SCHEMA_VERSION,))
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
            conn.execute("INSERT INTO arrays VALUES (?, ?, ?, ?)", ("probs", *_array_blob(P)))
            arrays = [("prediction_mean", dsg.prediction.mean), ("prediction_variance", dsg.prediction.variance),
                      ("prediction_sq_error", dsg.prediction.sq_error)]
            for name, arr in (("prediction_system_mean", dsg.prediction.system_mean),
                              ("prediction_output_variance", dsg.prediction.output_variance)):
                if arr is not None:  # each ranking's own model-assisted mean; the small-sample prior
                    arrays.append((name, arr))
            if dsg.target.judged is not None:  # ratio metrics: the judged pool beyond the top-k lists
                arrays += [("judged_items", dsg.target.judged.items), ("judged_offsets", dsg.target.judged.offsets)]
            if documents is not None:
                arrays += list(documents.arrays().items())
            if wor is not None:
                arrays.append(("wor_pi", wor.pi))
            if prefix is not None:
                arrays += list(prefix.arrays().items())
            for name, arr in arrays:
                conn.execute("INSERT INTO arrays VALUES (?, ?, ?, ?)", (name, *_array_blob(np.asarray(arr))))
            conn.executemany(
                "INSERT INTO draws VALUES (?, ?, ?, ?)",
                [(j, int(x), int(nw), float(c)) for j, (x, nw, c) in
                 enumerate(zip(plan.queries, plan.new, plan.charged))],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(tmp + suffix):
                    os.unlink(tmp + suffix)
            raise
        conn.close()
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        os.replace(tmp, path)
        return cls.open(path)

    @classmethod
    def open(cls, path) -> "Campaign":
        """Open an existing campaign file.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ValueError
            The file is not a campaign store, or has another schema version.
        """
        path = path_iv(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no campaign file (create one with Campaign.create / "
                                    "`activerank campaign init`).")
        # check read-only first, so that opening a foreign file never modifies it
        uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
        try:
            probe = sqlite3.connect(uri, uri=True, timeout=60.0)
            try:
                row = probe.execute("SELECT version FROM schema_version").fetchone()
            finally:
                probe.close()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{path}: not an activerank campaign store ({exc}).") from None
        if row is None or row[0] not in READABLE_VERSIONS:
            raise ValueError(
                f"{path}: campaign store has schema version {None if row is None else row[0]}; "
                f"this activerank reads versions {list(READABLE_VERSIONS)}."
            )
        conn = _connect(path)
        try:
            return cls(path, conn)
        except BaseException:
            conn.close()
            raise

    def close(self):
        """Close the database connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (f"Campaign({self.path!r}, metric={self.metric!r}, method={self.method!r}, "
                f"budget={self.budget:g}, rankers={list(self.names)})")

    @contextmanager
    def _write(self):
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"campaign {self.path} is closed.")
        return self._conn

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
        self._design = Design(target, self.meta["method"], p, q,
                              QueryCosts(cost=cost, raw=raw, model=self.meta["cost_model"], unit=unit), prediction,
                              int(self.meta["n_grades"]), float(self.meta.get("defensive", DEFAULT_DEFENSIVE)))
        d = np.array(db.execute("SELECT qx, new, charged FROM draws ORDER BY j").fetchall(),
                     dtype=np.float64).reshape(-1, 3)
        self._plan = DrawPlan(queries=d[:, 0].astype(np.int64), new=d[:, 1].astype(bool), charged=d[:, 2],
                              budget=float(self.meta["budget"]))
        self._documents = self._wor = self._prefix = None
        if self.meta.get("sampling") == "without_replacement":
            self._wor = WORSample(indices=self._plan.queries, pi=self._array("wor_pi"),
                                  threshold=float(self.meta["wor_threshold"]), cost=self._plan.charged,
                                  budget=self._plan.budget)
        if self.unit == "prefix":  # the tasks depend on the judgments: see _refresh_prefix
            self._prefix = PrefixCampaignPlan.from_arrays({n: self._array(n) for n in _PREFIX_ARRAYS},
                                                          expected_cost=float(self.meta["expected_cost"]))
            self._design = replace(self._design, probs=self.probs(), document_costs=self._prefix.document_costs)
            self._prefix_layout = self._prefix.layout(self._design)  # built once: every replay reads it
            self._prefix_cost = self._prefix.document_cost(self._design, self._prefix_layout)
            self._planned = [int(x) for x in self._prefix.queries]
            self._refresh_prefix(self._combined()[0])
            return
        if self.meta.get("document_plan") == "recorded":  # the engine runs again at estimate time
            self._documents = RecordedDocumentPlan.from_arrays({n: self._array(n) for n in _RECORDED_ARRAYS})
            self._design = replace(self._design, probs=self.probs(), document_costs=self._documents.document_costs)
            self._needed = self._documents.by_query()
            self._planned = list(self._needed)
        elif self.unit == "document":  # the sampled (query, document) units are the tasks
            self._documents = DocumentPlan.from_arrays({n: self._array(n) for n in _UNIT_ARRAYS},
                                                       n_docs=int(self._offsets[-1]),
                                                       expected_cost=float(self.meta["expected_cost"]))
            self._needed = self._documents.by_query()
            self._planned = list(self._needed)
        else:  # planned queries in draw order and the documents each needs
            first = self._plan.queries[self._plan.new]
            self._planned = [int(x) for x in first]
            self._needed = {x: self._design.documents(x) for x in self._planned}
        self._needed_rows = {int(r): x for x, rows in self._needed.items() for r in rows}

    def _refresh_prefix(self, grades) -> None:
        """A prefix campaign's tasks given the stored ``grades``: every sampled query needs the documents its
        walk has judged and the one it asks for next (:mod:`activerank.campaign.prefix`)."""
        self._prefix_seen = False  # tasks() replays again unless it set this itself (default combine rule)
        judged, self._waiting = self._prefix.walk(self._design, grades, self._prefix_layout)
        self._needed = {x: (np.append(judged[x], self._waiting[x]) if x in self._waiting else judged[x])
                        for x in self._planned}
        self._needed_rows = {int(r): x for x, rows in self._needed.items() for r in rows}

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
        has judged and the one it asks for next, in judging order)."""
        if self._prefix is not None:  # replay the walks only when judgments arrived since the last replay
            last = self._db.execute("SELECT MAX(judgment_id) FROM judgments").fetchone()[0]
            if last != self._prefix_seen:
                self._refresh_prefix(self._combined()[0])
                self._prefix_seen = last
        x = self._qindex.get(_key(query))
        if x is None or x not in self._needed:
            raise ValueError(f"`query` {_key(query)!r} is not a planned query of this campaign.")
        return [self._dkeys[r] for r in self._needed[x]]

    # ------------------------------------------------------------------ judgments

    def _latest(self) -> dict:
        """``{(doc_row, annotator): grade}``: each annotator's latest grade per pair."""
        out = {}
        for row, ann, grade in self._db.execute(
                "SELECT doc_row, annotator, grade FROM judgments ORDER BY judgment_id"):
            out[(row, ann)] = grade
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
        if self._prefix is not None:
            self._refresh_prefix(grades)
        qidx = np.repeat(np.arange(len(self._qkeys)), np.diff(self._offsets))
        out: dict = {}
        for row in sorted(grades):
            if scope == "tasks" and row not in self._needed_rows:
                continue
            out.setdefault(self._qkeys[qidx[row]], {})[self._dkeys[row]] = grades[row]
        return out

    def write_qrels(self, path, *, combine=None, scope="tasks", overwrite=False) -> int:
        """Write the combined judgments as a TREC qrels file (atomically); returns the line count.

        ``path`` must not be the campaign store (or its WAL/SHM files); an
        existing file is replaced only if it is a qrels file, or with
        ``overwrite=True`` (see :func:`activerank.campaign.io.check_output_path`).
        """
        from ..io.trec import write_qrels

        path = cio.check_output_path(path_iv(path), kind="qrels", protected=[self.path], force=overwrite)
        return write_qrels(path, self.judgments(combine=combine, scope=scope))

    # ------------------------------------------------------------------ import

    def import_judgments(self, path, *, format=None, annotator=None, scope="tasks", chunk_size=500,
                         on_commit=None) -> ImportReport:
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
            durable.

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
        path = path_iv(path)
        fmt = cio.detect_format(path, format)
        if scope not in SCOPES:
            raise ValueError(f"`scope` must be one of {list(SCOPES)}; got {scope!r}.")
        if annotator is not None and not isinstance(annotator, str):
            raise TypeError(f"`annotator` must be a string or None; got {type(annotator).__name__}.")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
            raise ValueError(f"`chunk_size` must be a positive integer; got {chunk_size!r}.")
        if any(cio._same_file(path, self.path + suffix) for suffix in cio._STORE_SUFFIXES):
            raise ValueError(f"{path}: this is the campaign store itself, not a judgment file.")
        with open(path, "rb") as f:
            raw = f.read()
        sha = hashlib.sha256(raw).hexdigest()
        rows, notes = cio.parse_judgment_file(raw, fmt, path)
        db = self._db
        with self._write():
            found = db.execute("SELECT batch_id, completed_at FROM batches WHERE sha256 = ?", (sha,)).fetchone()
            if found is None:
                cur = db.execute(
                    "INSERT INTO batches (sha256, path, format, scope, annotator, n_rows, notes, started_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (sha, path, fmt, scope, annotator, len(rows), json.dumps(notes), _now()))
                batch_id, completed, resumed = cur.lastrowid, None, False
            else:
                batch_id, completed = found
                resumed = completed is None
        if completed is not None:
            return self._report(batch_id, path, sha, fmt, len(rows), 0, True, False, notes)
        done = {ln for (ln,) in db.execute("SELECT line FROM import_lines WHERE batch_id = ?", (batch_id,))}
        pending = [r for r in rows if r.line not in done]
        if self._prefix is not None:  # this round's tasks: what the walks ask for given the stored grades
            self._refresh_prefix(self._combined()[0])
        default_ann = "" if annotator is None else annotator.strip()
        state = _ImportState(db, batch_id)
        accepted_now = stored_now = 0
        for start in range(0, len(pending), chunk_size):
            chunk = pending[start:start + chunk_size]
            with self._write() as conn:
                lines, judg = self._classify_chunk(conn, state, chunk, scope, default_ann)
                conn.executemany("INSERT INTO import_lines VALUES (?, ?, ?, ?)", lines)
                conn.executemany(
                    "INSERT INTO judgments (doc_row, grade, annotator, judged_at, imported_at, batch_id, line) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", judg)
            accepted_now += len(judg)
            stored_now += len(lines)
            if on_commit is not None and lines:
                on_commit(lines[0][1], lines[-1][1], len(judg))
        with self._write() as conn:
            conn.execute("UPDATE batches SET completed_at = ? WHERE batch_id = ? AND completed_at IS NULL",
                         (_now(), batch_id))
        # a concurrent import of the same content did everything: as if it had been imported before
        already = resumed and stored_now == 0
        return self._report(batch_id, path, sha, fmt, len(rows), accepted_now, already, resumed and not already,
                            notes)

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
                    judg.append((row, grade, ann, when, _now(), state.batch_id, r.line))
            lines.append((state.batch_id, r.line, status, message))
        return lines, judg

    def import_qrels(self, path, *, annotator=None, scope="pool", chunk_size=500, on_commit=None) -> ImportReport:
        """Import a TREC qrels file as judgments (pre-existing ones by default: ``scope="pool"``).

        ``annotator`` defaults to ``"qrels:<file name>"``.
        """
        path = path_iv(path)
        if annotator is None:
            annotator = "qrels:" + os.path.basename(path)
        return self.import_judgments(path, format="qrels", annotator=annotator, scope=scope,
                                     chunk_size=chunk_size, on_commit=on_commit)

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
        if scope == "tasks" and self._prefix is not None and row in self._prefix_cost:
            pass  # a document the walk may ask for later: kept, used when the walk gets there
        elif scope == "tasks" and row not in self._needed_rows:
            if self._prefix is not None:
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

    # ------------------------------------------------------------------ progress

    def _progress(self, combine=None):
        grades, conflicts = self._combined(combine)
        if self._prefix is not None:
            self._refresh_prefix(grades)
        done, partial, pending = [], [], []
        for x in self._planned:
            rows = self._needed[x]
            n = sum(1 for r in rows.tolist() if r in grades)
            (done if n == rows.size else partial if n else pending).append(x)
        if self._documents is not None or self._wor is not None or self._prefix is not None:  # usable only whole
            prefix = self._plan.n_draws if not (partial or pending) else 0
            return grades, conflicts, done, partial, pending, prefix
        done_set = set(done)
        bad = np.flatnonzero([int(x) not in done_set for x in self._plan.queries])
        prefix = int(bad[0]) if bad.size else self._plan.n_draws
        return grades, conflicts, done, partial, pending, prefix

    def _clamp(self, cost: float) -> float:
        """Clamp a cost sum to the budget when it exceeds it only by rounding (relative 1e-9)."""
        return self.budget if self.budget < cost <= self.budget * (1 + _BUDGET_RTOL) else float(cost)

    def status(self, *, combine=None) -> CampaignStatus:
        """Budget spent and left, queries done / partially judged / pending.

        A document-level campaign counts its tasks in documents: ``n_draws``
        and ``n_documents_needed`` are the sampled documents, ``cost_spent``
        the cost of those judged, ``cost_in_progress`` 0, ``cost_planned``
        the realized cost of the sample (Poisson sampling spends the budget
        in expectation: it may exceed it), and ``draws_usable`` is all or
        nothing (the estimate needs the whole sample).  So is it for a sample
        without replacement (``active_wor``), counted in queries.
        """
        grades, conflicts, done, partial, pending, prefix = self._progress(combine)
        planned = self._clamp(math.fsum(self._plan.charged))
        if self._prefix is not None:  # costs of the judged documents; the rest is not decided yet
            spent = self._clamp(math.fsum(self._prefix_cost[r] for r in self._needed_rows if r in grades))
            in_prog = 0.0
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
        db = self._db
        n_judg = db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
        n_imp = db.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
        n_exp = db.execute("SELECT COUNT(*) FROM exports").fetchone()[0]
        return CampaignStatus(
            budget=self.budget, cost_planned=planned, cost_spent=spent, cost_in_progress=in_prog,
            budget_left=max(0.0, self.budget - spent - in_prog), n_draws=self._plan.n_draws,
            queries_done=tuple(self._qkeys[x] for x in done),
            queries_partial=tuple(self._qkeys[x] for x in partial),
            queries_pending=tuple(self._qkeys[x] for x in pending),
            n_documents_needed=len(self._needed_rows),
            n_documents_judged=sum(1 for r in self._needed_rows if r in grades),
            n_judgments=n_judg, n_conflicts=conflicts, draws_usable=prefix, blocking_query=blocking,
            n_imports=n_imp, n_exports=n_exp, combine=self.combine if combine is None else combine, unit=self.unit)

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
        prefix campaign until every sampled query's walk is finished
        (:mod:`activerank.campaign.prefix`).

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
        return res

    def _estimate(self, combine):
        if self._documents is not None:
            return self._estimate_documents(combine)
        if self._prefix is not None:
            return self._estimate_prefix(combine)
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
        labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
        for x in np.unique(plan.queries).tolist():
            rows = self._needed[x]
            labels[rows] = [grades[r] for r in rows.tolist()]
        return estimate_from_plan(self._design, self.pool(), plan, labels)

    def _estimate_without_replacement(self, combine):
        grades, _, done, partial, pending, _ = self._progress(combine)
        if partial or pending:
            raise ValueError(
                f"the sample without replacement ({self.method!r}) is usable only whole: {len(partial)} of its "
                f"{len(self._planned)} queries are partially judged and {len(pending)} not at all (module "
                "activerank.campaign.without_replacement); the judgments stay stored.")
        labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
        for x in self._planned:
            rows = self._needed[x]
            labels[rows] = [grades[r] for r in rows.tolist()]
        return estimate_without_replacement(self._design, self.pool(), self._wor, labels)

    def _estimate_prefix(self, combine):
        grades, _, done, partial, pending, _ = self._progress(combine)
        if self._waiting:
            first = next(x for x in self._planned if x in self._waiting)
            raise ValueError(
                f"nothing to estimate yet: {len(self._waiting)} of the {len(self._planned)} sampled queries wait "
                f"for a judgment ({len(partial)} started, {len(pending)} not; first: query {self._qkeys[first]!r}, "
                f"document {self._dkeys[self._waiting[first]]!r}). A prefix campaign estimates from its whole "
                "sample only, each query judged until its stopping rule says stop: export the next round of "
                "tasks (one document per waiting query) and import the judgments. The judgments are kept.")
        labels = np.full(int(self._offsets[-1]), -1, dtype=np.int64)
        for r in self._needed_rows:
            labels[r] = grades[r]
        return estimate_prefix(self._design, self.pool(), self._prefix, labels, budget=self.budget)

    def _estimate_documents(self, combine):
        grades, _ = self._combined(combine)
        rows = self._documents.rows.tolist()
        missing = [r for r in rows if r not in grades]
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

    # ------------------------------------------------------------------ export

    def export_tasks(self, path, *, format=None, limit=None, max_cost=None, exclude_exported=False,
                     overwrite=False) -> ExportReport:
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
            campaign store itself (and its WAL/SHM files) is never replaced;
            an unanswered task file (no grade filled in) or an empty file is
            replaced without it.  See
            :func:`activerank.campaign.io.check_output_path`.

        Returns
        -------
        ExportReport

        Raises
        ------
        ValueError
            ``path`` is the campaign store (or its WAL/SHM file), or bad options.
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
        ``draw`` column of the result's trace).
        """
        path = path_iv(path)
        fmt = cio.detect_format(path, format, allowed=cio.TASK_FORMATS)
        path = cio.check_output_path(path, kind="tasks", protected=[self.path], force=overwrite)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0):
            raise ValueError(f"`limit` must be a non-negative integer or None; got {limit!r}.")
        if max_cost is not None and (isinstance(max_cost, bool) or not isinstance(max_cost, numbers.Real)
                                     or not max_cost >= 0):
            raise ValueError(f"`max_cost` must be a number >= 0 or None; got {max_cost!r}.")
        grades, _ = self._combined()
        if self._prefix is not None:
            self._refresh_prefix(grades)
        exported = set()
        if exclude_exported and self._prefix is not None:
            exported = self._prefix_exported()
        elif exclude_exported:
            exported = {x for (x,) in self._db.execute("SELECT DISTINCT qx FROM export_queries")}
        if self._documents is None:
            first_draw = {int(x): j for j, x in reversed(list(enumerate(self._plan.queries.tolist())))}
        else:  # each task's own draw, and its cost
            unit_draw = {int(r): j for j, r in enumerate(self._documents.rows.tolist())}
            unit_cost = self._documents.costs
        rows, queries, total = [], [], 0.0
        kind_int = self.meta["query_id_kind"] == "int"
        for x in self._planned:
            if limit is not None and len(queries) >= limit:
                break
            if x in exported:
                continue
            todo = [r for r in self._needed[x].tolist() if r not in grades]
            if not todo:
                continue
            if self._prefix is not None:
                c = math.fsum(self._prefix_cost[r] for r in todo)
            elif self._documents is None:
                c = float(self._design.costs.cost[x])
            else:
                c = math.fsum(unit_cost[unit_draw[r]] for r in todo)
            if max_cost is not None and total + c > max_cost * (1 + _BUDGET_RTOL):
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
                               (path, fmt, _now(), len(rows), len(queries)))
            conn.executemany("INSERT INTO export_queries VALUES (?, ?)", [(cur.lastrowid, x) for x in queries])
        return ExportReport(path=path, format=fmt, n_rows=len(rows), n_queries=len(queries),
                            query_ids=tuple(self._qkeys[x] for x in queries), cost=self._clamp(total))

    def _prefix_exported(self) -> set:
        """Sampled queries of a prefix campaign whose current task was exported already: exported after the
        last judgment of any document of their walk (a judgment moves the walk on to a new task)."""
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

    def check(self) -> list[str]:
        """Consistency checks; returns a list of problems (empty when all is well).

        Runs SQLite's ``integrity_check``, replays the draw sequence from the
        stored ``q``, costs, budget and seed, and checks that the planned
        cost stays within the budget and that no file line is stored twice.
        A document-level campaign replays its Poisson sample from the stored
        inclusion probabilities and seed, and checks the *expected* cost
        against the budget (the realized cost may exceed it); a campaign
        without replacement replays its one sample, a prefix campaign its
        design and query sample.
        """
        problems = []
        db = self._db
        res = [r[0] for r in db.execute("PRAGMA integrity_check")]
        if res != ["ok"]:
            problems.append("integrity_check: " + "; ".join(res))
        if self._documents is not None:
            problems += self._check_documents()
        elif self._prefix is not None:
            problems += self._check_prefix()
        elif self._wor is not None:
            problems += self._check_without_replacement()
        else:
            replay = draw_budgeted(self._design.q, self._design.costs.cost, self.budget, self.seed)
            if not (np.array_equal(replay.queries, self._plan.queries)
                    and np.array_equal(replay.new, self._plan.new)):
                problems.append("the stored draw sequence differs from a replay with the stored seed")
            if self._plan.cost_spent > self.budget * (1 + _BUDGET_RTOL):
                problems.append(f"planned cost {self._plan.cost_spent} exceeds the budget {self.budget}")
        dup = db.execute("SELECT COUNT(*) FROM (SELECT batch_id, line FROM judgments GROUP BY batch_id, line "
                         "HAVING COUNT(*) > 1)").fetchone()[0]
        if dup:
            problems.append(f"{dup} file lines are stored more than once")
        fk = db.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            problems.append(f"{len(fk)} foreign-key violations")
        return problems

    def _check_without_replacement(self) -> list[str]:
        wor, problems = self._wor, []
        replay = plan_without_replacement(self._design, self.budget, self.seed)
        if not (np.array_equal(replay.indices, wor.indices) and np.allclose(replay.pi, wor.pi, rtol=1e-12, atol=0)):
            problems.append("the stored sample without replacement differs from a replay with the stored seed")
        if self._plan.cost_spent > self.budget * (1 + _BUDGET_RTOL):
            problems.append(f"planned cost {self._plan.cost_spent} exceeds the budget {self.budget}")
        return problems

    def _check_prefix(self) -> list[str]:
        cp, problems = self._prefix, []
        try:
            replay = plan_prefix_campaign(self._design, self.budget, self.seed)
        except ValueError as exc:
            return [f"the prefix design could not be replayed with the stored seed: {exc}"]
        if not (np.array_equal(replay.queries, cp.queries) and np.allclose(replay.U, cp.U, rtol=0, atol=0)
                and np.allclose(replay.plan.pi, cp.plan.pi, rtol=1e-9, atol=1e-12)):
            problems.append("the stored prefix sample differs from a replay with the stored seed")
        if not np.array_equal(self._plan.queries, cp.queries):
            problems.append("the stored draws differ from the stored prefix sample")
        if cp.expected_cost > self.budget * (1 + _BUDGET_RTOL):
            problems.append(f"expected cost {cp.expected_cost} of the prefix design exceeds the budget {self.budget}")
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
        expected = float(np.dot(dp.design.pi, dp.design.costs))
        if expected > self.budget * (1 + _BUDGET_RTOL):
            problems.append(f"expected cost {expected} of the document sample exceeds the budget {self.budget}")
        return problems
