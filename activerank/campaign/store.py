"""The campaign store: one SQLite file holding a labeling campaign (:class:`Campaign`).

The class is assembled from parts by responsibility:

- :mod:`~activerank.campaign.schema`: the tables, schema versions, the
  upgrade of older stores, durability (read this first);
- :mod:`~activerank.campaign.integrity`: checksums and the checks that use them;
- :mod:`~activerank.campaign.writes`: creating a store, importing judgments, backups;
- :mod:`~activerank.campaign.reads`: loading, status, judgments, qrels, task export;
- :mod:`~activerank.campaign.replay`: everything that depends on the method
  family (planning, rebuilding, estimating and replaying the sample);
- :mod:`~activerank.campaign.reports`: the report records and the combination rule.

This module opens and closes stores and keeps the names other modules import
from it.
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
from contextlib import contextmanager

from .._validation import path_iv
from .integrity import CorruptStoreError, design_problems, full_problems, migrate, quick_problems, tolerant_text
from .reads import _Reads
from .replay import BUDGET_RTOL as _BUDGET_RTOL  # noqa: F401  (the name before the split)
from .replay import _Replay
from .reports import (COMBINE_RULES, MAX_STORED_REJECTIONS, SCOPES, CampaignStatus, ExportReport,  # noqa: F401
                      ImportReport, Rejection, combine_grades)
from .schema import (DOCUMENT_SCHEMA_VERSION, PREFIX_SCHEMA_VERSION, READABLE_VERSIONS,  # noqa: F401
                     RECORDED_SCHEMA_VERSION, SCHEMA_VERSION, WOR_SCHEMA_VERSION, DB_ERRORS, checkpoint,
                     connect, is_hot_journal)
from .writes import _create_args_iv, _pool_ids, _rankers_iv, _Writes  # noqa: F401  (used by distributed)

__all__ = [
    "SCHEMA_VERSION",
    "DOCUMENT_SCHEMA_VERSION",
    "WOR_SCHEMA_VERSION",
    "PREFIX_SCHEMA_VERSION",
    "RECORDED_SCHEMA_VERSION",
    "COMBINE_RULES",
    "Campaign",
    "CampaignStatus",
    "CorruptStoreError",
    "ExportReport",
    "ImportReport",
    "Rejection",
    "combine_grades",
]


class Campaign(_Writes, _Reads, _Replay):
    """A labeling campaign persisted in one SQLite file.

    Build one with :meth:`create`, reopen it with :meth:`open`.  Use as a
    context manager (or call :meth:`close`).

    Workflow: :meth:`export_tasks` writes the next queries to judge (in draw
    order) as JSONL/CSV; annotators fill in grades; :meth:`import_judgments`
    validates and stores them; :meth:`status` reports progress and
    :meth:`estimate` computes the estimate and its standard error from the
    judgments so far.  :meth:`backup` copies the store safely, :meth:`check`
    (or :meth:`check_file`) reports damage.

    With a document-level method (``method="doc_dyn"``, ``"doc_stat"``, or
    any registered method of ``unit="document"``) the tasks are single
    (query, document) pairs: the Poisson sample the engine would judge
    (:mod:`activerank.campaign.documents`); the estimate needs all of them.

    Judgments of one pair by several annotators are all kept.  Per annotator
    the latest judgment (import order) counts; across annotators they are
    combined by the campaign's ``combine`` rule (see :func:`combine_grades`).
    """

    def __init__(self, path: str, conn: sqlite3.Connection, wal: bool = False):
        self.path = path
        self._conn = conn
        self._wal = wal  # a store another process kept in WAL mode: checkpointed after every write
        self._load()

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(cls, path) -> "Campaign":
        """Open an existing campaign file.

        A store of an older schema version is upgraded (checksums computed,
        :func:`activerank.campaign.integrity.migrate`).  Opening runs the quick
        checks (:func:`activerank.campaign.integrity.quick_problems`: schema,
        judgment ledger, grades on the scale; cheap on any store size).

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ValueError
            The file is not a campaign store, or has another schema version.
        CorruptStoreError
            The store failed a check (a ``ValueError``): its message names the
            problems and the way out (a backup; ``activerank campaign check``).
        """
        path = _probe(path_iv(path))
        conn, wal = connect(path)
        try:
            migrate(conn, path)
            problems = quick_problems(conn)
            if problems:
                raise CorruptStoreError(path, problems)
            return cls._loaded(path, conn, wal)
        except DB_ERRORS as exc:
            conn.close()
            raise CorruptStoreError(path, [f"database error: {exc}"]) from None
        except BaseException:
            conn.close()
            raise

    @classmethod
    def _loaded(cls, path, conn, wal):
        """The campaign of an open connection; a loading failure on a changed design is reported as damage."""
        try:
            return cls(path, conn, wal)
        except CorruptStoreError:
            raise
        except Exception as exc:
            try:
                with tolerant_text(conn):
                    changed = design_problems(conn)
            except DB_ERRORS as err:
                changed = [f"database error: {err}"]
            if changed:
                raise CorruptStoreError(path, changed + [f"the campaign cannot be loaded ({type(exc).__name__}: "
                                                         f"{exc})"]) from None
            raise

    @classmethod
    def check_file(cls, path) -> list[str]:
        """Every problem of the store at ``path`` (empty when all is well), without refusing a damaged one.

        Runs :meth:`check` when the store can be opened; otherwise the store-level
        checks (:func:`activerank.campaign.integrity.full_problems`) on the file
        and why it could not be opened.  This is ``activerank campaign check``.

        Raises
        ------
        FileNotFoundError, ValueError
            No file, or not a campaign store (or a version this activerank cannot read).
        """
        path = _probe(path_iv(path))
        try:
            conn, wal = connect(path)
        except DB_ERRORS as exc:
            return [f"the file cannot be opened as a database: {exc}"]
        try:
            migrate(conn, path)
        except Exception as exc:  # an older store that fails integrity_check is not upgraded
            conn.close()
            return list(getattr(exc, "problems", [f"the store cannot be upgraded: {exc}"]))
        try:
            camp = cls._loaded(path, conn, wal)
        except Exception as exc:  # damage beyond what the checks name is reported too, never a traceback
            conn.close()
            why = getattr(exc, "problems", [f"the store cannot be loaded: {type(exc).__name__}: {exc}"])
            return _raw_problems(path) + list(why)
        with camp:
            try:
                return camp.check()
            except Exception as exc:  # a replay on damaged data may fail in any way: reported, never a traceback
                return _raw_problems(path) + [f"the check could not replay the sample: {type(exc).__name__}: {exc}"]

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
        if self._wal:  # durable in the store file before the caller reports it (schema, Durability)
            checkpoint(conn)

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"campaign {self.path} is closed.")
        return self._conn


def _probe(path: str) -> str:
    """Refuse a missing file, a file that is no campaign store, or an unknown schema version -- read-only,
    so that opening a foreign file never modifies it."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no campaign file (create one with Campaign.create / "
                                "`activerank campaign init`).")
    with open(path, "rb") as f:
        magic = f.read(16)
    if magic != b"SQLite format 3\x00":
        raise ValueError(f"{path}: not an activerank campaign store (not an SQLite database).")
    # a hot journal (a write interrupted by a crash) needs a writable connection to be rolled back
    uri = pathlib.Path(path).resolve().as_uri() + ("" if is_hot_journal(path) else "?mode=ro")
    try:
        probe = sqlite3.connect(uri, uri=True, timeout=60.0)
        try:
            row = probe.execute("SELECT version FROM schema_version").fetchone()
        finally:
            probe.close()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise ValueError(f"{path}: not an activerank campaign store ({exc}).") from None
        raise CorruptStoreError(path, [f"its schema cannot be read: {exc}"]) from None
    except DB_ERRORS as exc:
        raise CorruptStoreError(path, [f"its schema cannot be read: {exc}"]) from None
    if row is None or row[0] not in READABLE_VERSIONS:
        raise ValueError(
            f"{path}: campaign store has schema version {None if row is None else row[0]}; "
            f"this activerank reads versions {list(READABLE_VERSIONS)}."
        )
    return path


def _raw_problems(path: str) -> list[str]:
    """The store-level checks on a fresh read-only connection (a store that cannot be loaded)."""
    uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=60.0)
    except DB_ERRORS as exc:
        return [f"the file cannot be opened as a database: {exc}"]
    try:
        return full_problems(conn)
    finally:
        conn.close()
