"""Checksums of the campaign store and the checks that use them.

SQLite's ``integrity_check`` finds damaged pages and indexes, but not a changed
value in an intact page: a flipped byte inside a grade, a document id or a
stored array passes it (12 of 24 random 8-byte flips did).  The store therefore
keeps (:mod:`activerank.campaign.schema`, table ``checksums``)

- a BLAKE2b checksum of every judgment row over all its columns (table
  ``judgment_checksums``) and a chain digest over those checksums in id order
  with the number of judgments and the largest id (so a lost, added or reordered
  row is found, too), updated by every import chunk in its transaction;
- a digest of every row of each design table (``meta``, ``queries``,
  ``documents``, ``rankers``, ``ranked``, ``arrays``, ``draws``), written once at
  creation;
- a digest of the table definitions (``sqlite_master``) and the schema version.

:func:`quick_problems` runs when a store is opened and costs little on any
store size (about 10 ms at 30,000 queries and 60,000 judgments, against 1.7 s
for loading the campaign): the schema digest, the digests of the small design
tables (``meta``: metric, method, budget, seed; ``rankers``; ``draws``), the
judgment count and largest id against the ledger, every grade on the scale.
:func:`full_problems` (``Campaign.check``, ``activerank campaign check``) adds
``integrity_check``, the foreign keys, the large design tables (0.2 to 0.7 s
each at that size) and every judgment's checksum.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import contextmanager

from .schema import CURRENT_VERSIONS, DB_ERRORS, DESIGN_TABLES, SCHEMA_VERSION, TABLES, create_tables, read_version

__all__ = ["CorruptStoreError", "append_judgments", "full_problems", "quick_problems", "seal"]

_ZERO = "00" * 16
_JUDGMENT_COLUMNS = ", ".join(TABLES["judgments"])
MAX_LISTED = 20  # rows named one by one in a report; the rest are counted
QUICK_DESIGN = ("meta", "rankers", "draws")  # design tables small enough to check on every opening


class CorruptStoreError(ValueError):
    """The campaign store failed a check: its message names the problems and the way out.

    Attributes
    ----------
    path : str
    problems : list of str
    """

    def __init__(self, path: str, problems, *, action: str = "refusing to use it"):
        self.path, self.problems = path, list(problems)
        shown = "; ".join(self.problems[:3]) + (f"; and {len(self.problems) - 3} more" if len(self.problems) > 3
                                                else "")
        super().__init__(
            f"{path}: the campaign store is damaged ({action}): {shown}. Restore it from a backup (made by "
            f"`activerank campaign backup`), or run `activerank campaign check {path}` for the full report.")


@contextmanager
def tolerant_text(conn: sqlite3.Connection):
    """Read TEXT that is not valid UTF-8 (a damaged byte) as a string with surrogates, not an exception:
    valid text reads exactly as usual, so checksums match; damaged text then differs from its checksum."""
    before = conn.text_factory
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        yield conn
    finally:
        conn.text_factory = before


@contextmanager
def snapshot(conn: sqlite3.Connection):
    """One read transaction, so that the ledger and the tables are read at one state (another process may
    commit an import chunk between two statements); reads text as :func:`tolerant_text`."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        with tolerant_text(conn):
            yield conn
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def row_checksum(row) -> str:
    """Checksum of one judgment row as read from the store (all columns of ``judgments``, in order)."""
    return hashlib.blake2b(repr(tuple(row)).encode(), digest_size=16).hexdigest()


def _chain(head: str, checksums) -> str:
    h = bytes.fromhex(head)
    for c in checksums:
        h = hashlib.blake2b(h + bytes.fromhex(c), digest_size=16).digest()
    return h.hex()


def schema_digest(conn: sqlite3.Connection) -> str:
    """Digest of the table and index definitions and the schema version."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    return hashlib.blake2b(repr((read_version(conn), rows)).encode(), digest_size=16).hexdigest()


def table_digest(conn: sqlite3.Connection, table: str) -> str:
    """Digest of every row of a design table (:data:`~.schema.DESIGN_TABLES`), in their stored order."""
    h = hashlib.blake2b(digest_size=16)
    cur = conn.execute(f"SELECT {', '.join(TABLES[table])} FROM {table} ORDER BY {DESIGN_TABLES[table]}")
    if table == "arrays":  # large blobs: hashed as bytes (their repr would cost more than the hash)
        for *head, data in cur:
            h.update(repr(head).encode())
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()
    while rows := cur.fetchmany(50_000):
        h.update(repr(rows).encode())
    return h.hexdigest()


def seal(conn: sqlite3.Connection) -> None:
    """Write every checksum from the stored rows (a new store, or one upgraded to version 7).

    Runs inside the caller's write transaction.
    """
    rows = conn.execute(f"SELECT {_JUDGMENT_COLUMNS} FROM judgments ORDER BY judgment_id").fetchall()
    sums = [row_checksum(r) for r in rows]
    conn.execute("DELETE FROM judgment_checksums")
    conn.executemany("INSERT INTO judgment_checksums VALUES (?, ?)", [(r[0], s) for r, s in zip(rows, sums)])
    ledger = [("judgments", _chain(_ZERO, sums), len(rows), rows[-1][0] if rows else 0),
              ("schema", schema_digest(conn), 0, 0)]
    ledger += [(f"design:{t}", table_digest(conn, t), 0, 0) for t in DESIGN_TABLES]
    conn.executemany("INSERT OR REPLACE INTO checksums VALUES (?, ?, ?, ?)", ledger)


def _ledger(conn):
    row = conn.execute("SELECT digest, n, last FROM checksums WHERE name = 'judgments'").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the judgment ledger (table checksums) is missing")
    return row


def append_judgments(conn: sqlite3.Connection, rows) -> None:
    """Store judgments ``(doc_row, grade, annotator, judged_at, imported_at, batch_id, line)`` with their
    checksums and move the ledger on (inside the caller's write transaction)."""
    if not rows:
        return
    head, n, last = _ledger(conn)
    top = conn.execute("SELECT COALESCE(MAX(judgment_id), 0) FROM judgments").fetchone()[0]
    start = max(top, last) + 1
    conn.executemany(f"INSERT INTO judgments ({_JUDGMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     [(start + i, *r) for i, r in enumerate(rows)])
    # checksums of the rows as stored (their types as SQLite returns them, as check() reads them)
    stored = conn.execute(f"SELECT {_JUDGMENT_COLUMNS} FROM judgments WHERE judgment_id >= ? ORDER BY judgment_id",
                          (start,)).fetchall()
    sums = [row_checksum(r) for r in stored]
    conn.executemany("INSERT INTO judgment_checksums VALUES (?, ?)", [(r[0], s) for r, s in zip(stored, sums)])
    conn.execute("UPDATE checksums SET digest = ?, n = ?, last = ? WHERE name = 'judgments'",
                 (_chain(head, sums), n + len(stored), stored[-1][0]))


# --------------------------------------------------------------------------- checks


def _n_grades(conn):
    row = conn.execute("SELECT value FROM meta WHERE key = 'n_grades'").fetchone()
    try:
        n = json.loads(row[0])
    except (TypeError, ValueError):
        return None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 2 else None


def _where(conn, batch_id, line) -> str:
    row = conn.execute("SELECT path FROM batches WHERE batch_id = ?", (batch_id,)).fetchone()
    return f"{row[0] if row else f'batch {batch_id}'}, line {line}"


def _listed(problems: list, n: int, what: str) -> list:
    if n > len(problems):
        problems.append(f"... {n - len(problems)} more {what} not listed")
    return problems


def grade_problems(conn: sqlite3.Connection, *, limit: int = MAX_LISTED) -> list[str]:
    """Every stored grade outside the campaign's scale, one message per row (the first ``limit``)."""
    n_grades = _n_grades(conn)
    if n_grades is None:
        return ["meta: n_grades is missing or not an integer >= 2"]
    bad = "typeof(grade) != 'integer' OR grade < 0 OR grade >= ?"
    n = conn.execute(f"SELECT COUNT(*) FROM judgments WHERE {bad}", (n_grades,)).fetchone()[0]
    if not n:
        return []
    rows = conn.execute(f"SELECT judgment_id, grade, batch_id, line FROM judgments WHERE {bad} "
                        "ORDER BY judgment_id LIMIT ?", (n_grades, limit)).fetchall()
    out = [f"judgment {jid} ({_where(conn, b, ln)}): grade {g!r} is outside the scale 0..{n_grades - 1}"
           for jid, g, b, ln in rows]
    return _listed(out, n, "judgments with a grade off the scale")


def _schema_problems(conn) -> list[str]:
    out = []
    version = read_version(conn)
    if version not in CURRENT_VERSIONS:
        out.append(f"schema_version holds {version!r}, expected one of {list(CURRENT_VERSIONS)}")
    have = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in TABLES if t not in have]
    if missing:
        out.append(f"tables missing: {', '.join(missing)}")
    row = conn.execute("SELECT digest FROM checksums WHERE name = 'schema'").fetchone() if "checksums" in have \
        else None
    if row is None:
        out.append("the schema checksum is missing")
    elif row[0] != schema_digest(conn):
        out.append("the table definitions (sqlite_master) or the schema version changed: schema checksum mismatch")
    return out


def _ledger_problems(conn) -> list[str]:
    head, n, last = _ledger(conn)
    count, top = conn.execute("SELECT COUNT(*), COALESCE(MAX(judgment_id), 0) FROM judgments").fetchone()
    if (count, top) != (n, last):
        return [f"the ledger counts {n} judgments up to id {last}; the table holds {count} up to id {top} "
                "(judgments lost or added outside an import)"]
    return []


def quick_problems(conn: sqlite3.Connection) -> list[str]:
    """The checks run on every opening: schema digest, judgment ledger, grade range (see the module docstring)."""
    try:
        with snapshot(conn):
            out = _schema_problems(conn)
            if out:
                return out
            return design_problems(conn, QUICK_DESIGN) + _ledger_problems(conn) + grade_problems(conn)
    except DB_ERRORS as exc:
        return [f"database error: {exc}"]


def _checksum_problems(conn) -> list[str]:
    """Every judgment row against its checksum, and the chain against the ledger."""
    out: list[str] = []
    n_bad = 0
    stored = dict(conn.execute("SELECT judgment_id, checksum FROM judgment_checksums"))
    sums = []
    for row in conn.execute(f"SELECT {_JUDGMENT_COLUMNS} FROM judgments ORDER BY judgment_id"):
        s = row_checksum(row)
        sums.append(s)
        if stored.pop(row[0], None) != s:
            n_bad += 1
            if len(out) < MAX_LISTED:
                out.append(f"judgment {row[0]} ({_where(conn, row[6], row[7])}): the stored row changed "
                           f"(doc_row {row[1]}, grade {row[2]!r}, annotator {row[3]!r}; checksum mismatch)")
    _listed(out, n_bad, "changed judgments")
    if stored:
        out.append(f"{len(stored)} judgment checksums belong to no judgment (ids {sorted(stored)[:5]}...)")
    head, n, last = _ledger(conn)
    if _chain(_ZERO, sums) != head and not n_bad:
        out.append("the judgment chain digest differs from the ledger (judgments lost, added or reordered)")
    return out + _ledger_problems(conn)


def full_problems(conn: sqlite3.Connection) -> list[str]:
    """Every store-level check: integrity, foreign keys, schema, design, judgment checksums, grades."""
    try:
        with snapshot(conn):
            return _full_problems(conn)
    except DB_ERRORS as exc:
        return [f"database error: {exc}"]


def _full_problems(conn) -> list[str]:
    out = []
    try:
        res = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if res != ["ok"]:
            out.append("integrity_check: " + "; ".join(res[:MAX_LISTED]))
    except DB_ERRORS as exc:
        return [f"integrity_check failed: {exc}"]
    steps = (_schema_problems, design_problems, _checksum_problems, grade_problems, _duplicate_lines,
             _foreign_keys)
    for step in steps:
        try:
            out += step(conn)
        except DB_ERRORS as exc:
            out.append(f"{step.__name__.strip('_').replace('_', ' ')}: database error: {exc}")
    return out


def design_problems(conn: sqlite3.Connection, tables=DESIGN_TABLES) -> list[str]:
    """Every design table (of ``tables``) whose rows differ from the digest written at creation."""
    stored = dict(conn.execute("SELECT name, digest FROM checksums WHERE name LIKE 'design:%'"))
    out = []
    for t in tables:
        digest = stored.get(f"design:{t}")
        if digest is None:
            out.append(f"the checksum of the design table {t!r} is missing")
        elif digest != table_digest(conn, t):
            out.append(f"the design table {t!r} ({_DESIGN_WHAT[t]}) changed since creation: checksum mismatch")
    return out


_DESIGN_WHAT = {"meta": "metric, method, budget, seed ...", "queries": "the pool's queries, p, q, costs",
                "documents": "the pool's documents", "rankers": "the ranker names",
                "ranked": "the evaluated rankings", "arrays": "model probabilities and the stored sample",
                "draws": "the draw sequence"}


def _duplicate_lines(conn) -> list[str]:
    dup = conn.execute("SELECT COUNT(*) FROM (SELECT batch_id, line FROM judgments GROUP BY batch_id, line "
                       "HAVING COUNT(*) > 1)").fetchone()[0]
    return [f"{dup} file lines are stored more than once"] if dup else []


def _foreign_keys(conn) -> list[str]:
    fk = conn.execute("PRAGMA foreign_key_check").fetchall()
    return [f"{len(fk)} foreign-key violations (first: table {fk[0][0]}, row {fk[0][1]})"] if fk else []


def migrate(conn: sqlite3.Connection, path: str) -> None:
    """Upgrade a store of version 1 to 6 to version 7 in one write transaction (a no-op on version 7 or 8).

    The store must pass SQLite's full ``integrity_check`` first: the checksums
    computed here vouch for the stored rows from now on.
    """
    if read_version(conn) in CURRENT_VERSIONS:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if read_version(conn) not in CURRENT_VERSIONS:  # another process may have upgraded it meanwhile
            res = [r[0] for r in conn.execute("PRAGMA integrity_check")]
            if res != ["ok"]:
                raise CorruptStoreError(path, ["integrity_check: " + "; ".join(res[:5])],
                                        action="cannot upgrade it to schema version 7")
            create_tables(conn, legacy=False)
            conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            seal(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
