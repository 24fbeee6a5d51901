"""The campaign store's layout: tables, schema versions, connections and the upgrade of older stores.

Layout (schema version :data:`SCHEMA_VERSION`)
    ``schema_version``  the single version number of the layout.
    ``meta``            JSON-encoded settings: metric, method, budget, seed, ...
    ``queries``         frozen pool snapshot per query: id, text, target ``p``,
                        sampling ``q``, normalized and raw cost, model mean.
    ``documents``       pool documents: global row, query, document id, length.
    ``rankers``/``ranked``  the evaluated rankings truncated at the cutoff.
    ``arrays``          numeric arrays as raw little-endian bytes (``probs``).
    ``draws``           the complete draw sequence, fixed at creation.
    ``batches``         one per imported file (SHA-256 of its content, absolute path).
    ``import_lines``    one per processed data line of a batch: accepted,
                        duplicate, unanswered or rejected (with the reason).
    ``judgments``       every accepted judgment: document, grade, annotator,
                        judging time, import time, batch and line.
    ``judgment_checksums``  a BLAKE2b checksum of every judgment row (all its columns).
    ``checksums``       ``schema``: a digest of the table definitions and the version;
                        ``design:<table>``: a digest of every row of ``meta``, ``queries``,
                        ``documents``, ``rankers``, ``ranked``, ``arrays`` and ``draws``
                        each (written once, at creation); ``judgments``: the number of
                        judgments, the largest id, and a chain digest over their
                        checksums in id order (updated by every import chunk).
    ``input_files``     files the campaign was made from (``campaign init``'s pool,
                        training file, run and score files ...): never replaced by its outputs.
    ``exports``/``export_queries``  which task files were written.

A campaign on a distributed pool (:func:`activerank.distributed.create_campaign`)
stores every query's row but the documents, rankings and probabilities of the
drawn queries only (the other queries have ``n_docs = 0``).

What the campaign samples is told by ``meta`` (one layout for every method):

- a query-level method with replacement (``active``, ``passive``): ``draws``
  is the i.i.d. draw sequence with repetitions;
- a query-level method without replacement (``replacement=False``, e.g.
  ``active_wor``; :mod:`activerank.campaign.without_replacement`): ``meta``
  ``sampling = "without_replacement"`` and ``wor_threshold``, ``draws`` the
  budgeted sequential Poisson sample in selection order, ``arrays`` ``wor_pi``;
- a document-level Poisson method (``doc_dyn``, ``doc_stat``;
  :mod:`activerank.campaign.documents`): ``meta`` ``unit = "document"`` and
  ``expected_cost``, ``draws`` one row per task, ``arrays`` the linear target
  over units and the Poisson design (``unit_*``);
- another document-level method (``doc_uniform``, ``doc_hh``, ``two_stage``,
  ``doc_ubis``): also ``document_plan = "recorded"``, ``arrays`` the documents
  the engine asks for with ``rng=seed`` (``recorded_*``) and ``document_costs``;
- the ``prefix`` method (:mod:`activerank.campaign.prefix`): ``meta`` ``unit =
  "prefix"`` and ``expected_cost``, ``draws`` one row per live query in priority
  order (the hard budget cuts it), ``arrays`` the design and priority order
  (``prefix_*``, with the priorities ``prefix_xi``) and ``document_costs``;
  schema version :data:`PREFIX_SCHEMA_VERSION` (8), same tables.  A version 7
  prefix store holds the former Poisson sample (no ``prefix_xi``): it opens,
  its judgments export, but it is not estimated.

Versions 1 to 6 (before checksums; 3 to 6 told an activerank that could not
plan documents, samples without replacement, prefixes or recorded documents
to refuse the file) are read and upgraded to version 7 when a store is opened
(:func:`activerank.campaign.integrity.migrate`): the checksums are computed from the stored rows after a
full ``integrity_check``, the old write-ahead log is folded into the file.

Durability
----------
The store uses SQLite's rollback journal (``journal_mode=DELETE``,
``synchronous=FULL``), not a write-ahead log: a commit writes every changed
page into the store file itself and fsyncs it before the command reports the
commit (``on_commit``, ``committed FILE lines A-B``), so the file alone holds
every acknowledged judgment; there is no ``-wal``/``-shm`` file, and the
``-journal`` file exists only while a write transaction runs.  With a
write-ahead log the committed pages stay in ``c.db-wal`` until a checkpoint,
and a copy of ``c.db`` alone lost judgments that had been reported stored;
checkpointing (TRUNCATE) after every chunk gives the same guarantee, but needs
the checkpoint's outcome checked and leaves ``-wal``/``-shm`` files behind after
a crash, and it was no faster (``benchmarks/campaign_store.py``).  Every write is
an explicit ``BEGIN IMMEDIATE ... COMMIT`` transaction, so concurrent importers
queue on the write lock instead of failing.  One window remains: while a commit
writes its pages into the file (tens of microseconds per chunk), the file
alone is a mix of old and new pages; a process killed exactly then leaves a
hot ``-journal`` beside the store, which the next command opening the store
rolls back.  Copy a store with ``activerank campaign backup`` (SQLite's online
backup), or copy the file only when no ``-journal`` file lies beside it.  A
store still in WAL mode (opened by another process while being upgraded)
is checkpointed (TRUNCATE) after every write transaction instead.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import datetime, timezone

import numpy as np

__all__ = [
    "SCHEMA_VERSION", "DOCUMENT_SCHEMA_VERSION", "WOR_SCHEMA_VERSION", "PREFIX_SCHEMA_VERSION",
    "RECORDED_SCHEMA_VERSION", "CURRENT_VERSIONS", "READABLE_VERSIONS", "LEGACY_VERSIONS", "TABLES", "connect", "create_tables",
]

SCHEMA_VERSION = 7  # checksums of the judgments, the design and the schema; rollback journal
# every method family has the same layout since version 7 (meta tells them apart); the names are kept
DOCUMENT_SCHEMA_VERSION = WOR_SCHEMA_VERSION = RECORDED_SCHEMA_VERSION = SCHEMA_VERSION
# prefix stores of the hard budget (the priority order, ``prefix_xi``): version 8, so that an activerank that
# knows only the former Poisson sample refuses them instead of reading the whole priority order as its sample
PREFIX_SCHEMA_VERSION = 8
CURRENT_VERSIONS = (SCHEMA_VERSION, PREFIX_SCHEMA_VERSION)  # same tables; never upgraded into each other
LEGACY_VERSIONS = (1, 2, 3, 4, 5, 6)  # upgraded on open; 1: one ranker or a pair, no stored prediction arrays
READABLE_VERSIONS = (*LEGACY_VERSIONS, *CURRENT_VERSIONS)

# the tables of every version up to 6, unchanged in version 7
_TABLES_V6 = """
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

# added by version 7 (to new stores, and to older ones by migrate)
_TABLES_V7 = """
CREATE TABLE judgment_checksums (
    judgment_id INTEGER PRIMARY KEY REFERENCES judgments(judgment_id),
    checksum TEXT NOT NULL
);
CREATE TABLE checksums (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    n INTEGER NOT NULL,
    last INTEGER NOT NULL
);
CREATE TABLE input_files (
    path TEXT NOT NULL,
    role TEXT NOT NULL,
    PRIMARY KEY (path, role)
);
"""

#: table -> its columns, in order (the schema check compares them)
TABLES = {
    "schema_version": ("version",),
    "meta": ("key", "value"),
    "queries": ("qx", "query_id", "query_text", "first_row", "n_docs", "p", "q", "cost", "raw_cost",
                "predicted_mean"),
    "documents": ("doc_row", "qx", "doc_id", "doc_length"),
    "rankers": ("ranker", "name"),
    "ranked": ("ranker", "qx", "pos", "doc_row"),
    "arrays": ("name", "dtype", "shape", "data"),
    "draws": ("j", "qx", "new", "charged"),
    "batches": ("batch_id", "sha256", "path", "format", "scope", "annotator", "n_rows", "notes", "started_at",
                "completed_at"),
    "import_lines": ("batch_id", "line", "status", "message"),
    "judgments": ("judgment_id", "doc_row", "grade", "annotator", "judged_at", "imported_at", "batch_id", "line"),
    "exports": ("export_id", "path", "format", "created_at", "n_rows", "n_queries"),
    "export_queries": ("export_id", "qx"),
    "judgment_checksums": ("judgment_id", "checksum"),
    "checksums": ("name", "digest", "n", "last"),
    "input_files": ("path", "role"),
}

#: the tables fixed at creation, covered by the ``design`` digest, with the order of their rows
DESIGN_TABLES = {"meta": "key", "queries": "qx", "documents": "doc_row", "rankers": "ranker",
                 "ranked": "ranker, qx, pos", "arrays": "name", "draws": "j"}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def key(value) -> str:
    """The string form of a query or document id (NumPy scalars as their Python value)."""
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def array_blob(arr: np.ndarray):
    """``(dtype, shape, bytes)`` of an array as the ``arrays`` table stores it (little-endian)."""
    a = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return a.dtype.str, json.dumps(list(a.shape)), a.tobytes()


def connect(path: str) -> tuple[sqlite3.Connection, bool]:
    """A connection in autocommit mode with the store's settings; and whether it stayed in WAL mode.

    The journal mode can change only while no other connection has the file
    open: a store of version <= 6 (WAL mode) opened by another process at the
    same time keeps its write-ahead log, and the caller then checkpoints it
    after every write (see the module docstring).
    """
    conn = sqlite3.connect(path, isolation_level=None, timeout=60.0)
    try:
        mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn, str(mode).lower() == "wal"


def checkpoint(conn: sqlite3.Connection) -> None:
    """Fold the write-ahead log into the store file (a store left in WAL mode); raise if it cannot."""
    busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy or (log > 0 and done != log):
        raise sqlite3.OperationalError(
            f"could not copy the write-ahead log into the store file ({done} of {log} pages; another process "
            "is reading it): the judgments are committed in the -wal file; run the command again.")


def create_tables(conn: sqlite3.Connection, *, legacy: bool = True) -> None:
    """Create the tables of a new store (``legacy=False``: only those version 7 added)."""
    for stmt in ((_TABLES_V6 if legacy else "") + _TABLES_V7).split(";"):
        if stmt.strip():
            conn.execute(stmt)


def read_version(conn: sqlite3.Connection):
    """The stored schema version (None when the table is empty)."""
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return None if row is None else row[0]


SIDECARS = ("-journal", "-wal", "-shm")  # files SQLite keeps beside a store
# what reading a damaged store raises: SQLite's errors, and a message or text that is no longer UTF-8
DB_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def remove_files(path: str, *suffixes: str) -> None:
    """Remove ``path + suffix`` for every suffix, where it exists."""
    for suffix in suffixes:
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass


def fsync_directory(path: str) -> None:
    """Make a rename inside the directory of ``path`` durable (where the platform can)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def replace_store(new: str, path: str) -> None:
    """Move the complete store file ``new`` to ``path``, atomically.

    The journal, WAL and SHM files of a store being replaced are removed first:
    SQLite would apply a stale hot journal or WAL to the new file.
    """
    remove_files(path, *SIDECARS)
    os.replace(new, path)
    fsync_directory(path)


def is_hot_journal(path: str) -> bool:
    """A ``-journal`` file beside the store: a write was interrupted (the next opening rolls it back)."""
    try:
        return os.path.getsize(path + "-journal") > 0
    except OSError:
        return False
