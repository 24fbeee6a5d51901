"""The store file alone holds every acknowledged judgment (kill -9 during an import); backups; upgrades of older
stores; damage found by `campaign check` (random byte flips) and reported, never a traceback (grades off the
scale)."""

import json
import os
import shutil
import signal
import sqlite3
import time

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign, CorruptStoreError
from activerank.campaign.schema import DESIGN_TABLES, SCHEMA_VERSION, TABLES
from activerank.cli.campaign import main

from ..conftest import stat_reps



def run_cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _make_store(path, n_queries=200, n_docs=24, budget=120.0):
    rng = np.random.default_rng(5)
    qids = np.repeat(np.arange(1000, 1000 + n_queries), n_docs)
    doc_ids = np.array([f"doc-{q}-{j}" for q in range(n_queries) for j in range(n_docs)], dtype=object)
    pool = ar.Pool.from_qids(qids, doc_ids=doc_ids)
    probs = rng.dirichlet(np.ones(3), size=qids.size)
    Campaign.create(path, pool, rng.random(qids.size), probs, budget=budget, metric=f"dcg@{n_docs - 4}",
                    seed=3, method="active").close()


def _judgment_file(db, path):
    """Two annotators per task, the second disagreeing on some."""
    with Campaign.open(db) as c, open(path, "w") as f:
        for x in c.plan().queries[c.plan().new]:
            q = c.query_ids[x]
            for i, d in enumerate(c.tasks(q)):
                for a, g in (("a", (int(x) + i) % 3), ("b", (int(x) + 2 * i) % 3)):
                    f.write(json.dumps({"query_id": int(q), "doc_id": d, "grade": g, "annotator": a}) + "\n")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("durable")
    db = str(root / "fresh.db")
    _make_store(db)
    judged = str(root / "judged.jsonl")
    _judgment_file(db, judged)
    ref = str(root / "ref.db")
    shutil.copy(db, ref)
    t0 = time.perf_counter()
    with Campaign.open(ref) as c:
        rep = c.import_judgments(judged, chunk_size=100)
    assert rep.accepted > 4000
    return dict(db=db, judged=judged, ref=ref, t_import=time.perf_counter() - t0, n_lines=rep.n_rows)


def _lines_in(path):
    """Import lines stored in a store file, or None if the file is not a sound database."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if [r[0] for r in conn.execute("PRAGMA integrity_check")] != ["ok"]:
            return None
        return {ln for (ln,) in conn.execute("SELECT line FROM import_lines")}
    except (sqlite3.DatabaseError, UnicodeDecodeError):
        return None
    finally:
        conn.close()


# --------------------------------------------------------------------------- kill -9: the file alone


@pytest.mark.statistical  # ~30 s: the fast tier kills 4 imports (tests/campaign/test_cli.py, test_crash_during_import)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_copy_of_the_store_file_alone_holds_every_acknowledged_judgment(store, tmp_path):
    """SIGKILL at >= 24 random moments of an import; after each, copy only the store file (no journal).

    Every copy passes integrity_check and the full check, and holds every line the importer acknowledged
    (on_commit) -- unless the kill hit the instant a commit writes its pages into the file (a hot journal is
    left beside it, and the copy alone may be torn: schema.py, Durability); then the store itself, opened
    with its journal, is sound and holds every acknowledged line.
    """
    rng = np.random.default_rng(2024)
    torn, n_kills = 0, max(24, stat_reps(24))
    for k in range(n_kills):
        db = str(tmp_path / f"k{k}.db")
        shutil.copy(store["db"], db)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the importer
            os.close(r)
            try:
                with Campaign.open(db) as c:
                    c.import_judgments(store["judged"], chunk_size=100,
                                       on_commit=lambda a, b, n: os.write(w, f"ack {a} {b}\n".encode()))
                os.write(w, b"done\n")
            finally:
                os._exit(0)
        os.close(w)
        time.sleep(rng.uniform(0.0, 1.1 * store["t_import"]))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(r) as f:
            out = f.read()
        acked = set()
        for line in out.splitlines():
            if line.startswith("ack "):
                a, b = map(int, line.split()[1:3])
                acked.update(range(a, b + 1))
        hot = os.path.exists(db + "-journal")
        copy = str(tmp_path / f"copy{k}.db")
        shutil.copyfile(db, copy)                        # the store file only
        lines = _lines_in(copy)
        if lines is None and hot:                        # torn mid-commit: the store with its journal is whole
            torn += 1
            Campaign.open(db).close()                    # rolls the interrupted commit back
            lines = _lines_in(db)
            assert lines is not None and acked <= lines, k
            continue
        assert lines is not None, (k, "the copy of the store file fails integrity_check")
        assert acked <= lines, (k, f"{len(acked - lines)} acknowledged lines missing from the copy")
        assert Campaign.check_file(copy) == [], k
        if "done" in out:
            assert not hot and len(lines) == store["n_lines"]
    assert torn <= n_kills // 4, f"{torn} of {n_kills} kills tore the store file"


def test_no_file_beside_the_store_after_a_command(store, tmp_path, capsys):
    db = str(tmp_path / "c.db")
    shutil.copy(store["db"], db)
    assert run_cli(["campaign", "import", db, store["judged"]], capsys)[0] == 0
    assert run_cli(["campaign", "status", db], capsys)[0] == 0
    assert os.listdir(tmp_path) == ["c.db"]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


# --------------------------------------------------------------------------- backup


def test_backup_is_a_checked_copy_and_never_replaces_the_store_or_its_inputs(store, tmp_path, capsys):
    db = str(tmp_path / "c.db")
    shutil.copy(store["ref"], db)
    dest = str(tmp_path / "b.db")
    code, out, err = run_cli(["campaign", "backup", db, dest], capsys)
    assert code == 0 and "backed up" in out, err
    assert Campaign.check_file(dest) == []
    with Campaign.open(db) as a, Campaign.open(dest) as b:
        assert a.judgments(scope="pool") == b.judgments(scope="pool") and a.status() == b.status()
    code, _, err = run_cli(["campaign", "backup", db, dest], capsys)     # an existing file needs --force
    assert code == 2 and "already exists" in err
    assert run_cli(["campaign", "backup", db, dest, "--force"], capsys)[0] == 0
    before = open(db, "rb").read()
    for target in (db, store["judged"]):
        for force in ([], ["--force"]):
            code, _, err = run_cli(["campaign", "backup", db, target] + force, capsys)
            assert code == 2 and "would destroy" in err and "Traceback" not in err, err
    assert open(db, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == ["b.db", "c.db"]


# --------------------------------------------------------------------------- upgrade of older stores


def _downgrade(path, version=6):
    """A store as activerank wrote it before version 7: no checksum tables, WAL mode."""
    conn = sqlite3.connect(path, isolation_level=None)
    for t in ("judgment_checksums", "checksums", "input_files"):
        conn.execute(f"DROP TABLE {t}")
    conn.execute("UPDATE schema_version SET version = ?", (version,))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()


@pytest.mark.filterwarnings("ignore::activerank.inference.snis.LowEffectiveSampleSizeWarning")
def test_older_store_is_upgraded_on_open(store, tmp_path):
    db = str(tmp_path / "old.db")
    shutil.copy(store["ref"], db)
    with Campaign.open(db) as c:
        want = c.judgments(scope="pool"), c.estimate().estimate
    _downgrade(db)
    with Campaign.open(db) as c:
        assert c.check() == []
        assert (c.judgments(scope="pool"), c.estimate().estimate) == want
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("SELECT COUNT(*) FROM judgment_checksums").fetchone()[0] > 4000
    conn.close()
    assert not os.path.exists(db + "-wal")


def test_damaged_older_store_is_not_upgraded(store, tmp_path):
    db = str(tmp_path / "old.db")
    shutil.copy(store["ref"], db)
    _downgrade(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA writable_schema=ON")   # an index that disagrees with its table: integrity_check fails
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'doc_row, annotator', 'annotator, doc_row') "
                 "WHERE name = 'judgments_by_doc'")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptStoreError, match="cannot upgrade it to schema version 7.*campaign check"):
        Campaign.open(db)
    assert sqlite3.connect(db).execute("SELECT version FROM schema_version").fetchone()[0] == 6


# --------------------------------------------------------------------------- damage


def test_grade_off_the_scale_is_reported_per_row_never_a_traceback(store, tmp_path, capsys):
    db = str(tmp_path / "c.db")
    shutil.copy(store["ref"], db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE judgments SET grade = 57 WHERE judgment_id IN (3, 9)")
    conn.commit()
    conn.close()
    for cmd in (["estimate", db], ["status", db], ["export", db, str(tmp_path / "t.jsonl")]):
        code, out, err = run_cli(["campaign"] + cmd, capsys)
        assert code == 3 and "Traceback" not in err, (cmd, err)
        assert "judgment 3 (" in err and "grade 57 is outside the scale 0..2" in err, err
        assert "judgment 9 (" in err and "campaign check" in err and "backup" in err, err
    code, out, err = run_cli(["campaign", "check", db], capsys)
    assert code == 3 and "grade 57 is outside the scale 0..2" in out and "checksum mismatch" in out, out
    with pytest.raises(CorruptStoreError, match="grade 57"):
        Campaign.open(db)


def test_quick_check_on_open_finds_a_lost_judgment(store, tmp_path, capsys):
    db = str(tmp_path / "c.db")
    shutil.copy(store["ref"], db)
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM judgment_checksums WHERE judgment_id = 100")
    conn.execute("DELETE FROM judgments WHERE judgment_id = 100")
    conn.commit()
    conn.close()
    code, out, err = run_cli(["campaign", "status", db], capsys)
    assert code == 3 and "judgments lost or added outside an import" in err and "Restore it from a backup" in err
    code, out, _ = run_cli(["campaign", "check", db, "--json"], capsys)
    assert code == 3 and not json.loads(out)["ok"]


def test_quick_check_on_open_finds_a_changed_budget(store, tmp_path, capsys):
    db = str(tmp_path / "c.db")
    shutil.copy(store["db"], db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '1000.0' WHERE key = 'budget'")
    conn.commit()
    conn.close()
    code, out, err = run_cli(["campaign", "estimate", db], capsys)
    assert code == 3 and "the design table 'meta' (metric, method, budget, seed ...) changed" in err, err


def _dump(path):
    """What a flip must not change unnoticed: the schema, the design tables and the judgments."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = bytes
    try:
        out = {"schema": conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall(),
               "version": conn.execute("SELECT * FROM schema_version").fetchall()}
        for table in (*DESIGN_TABLES, "judgments"):
            out[table] = conn.execute(f"SELECT {', '.join(TABLES[table])} FROM {table} ORDER BY rowid").fetchall()
        return out
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:   # SQLite's message may quote damaged bytes
        return f"unreadable: {exc}"
    finally:
        conn.close()


def test_every_byte_flip_in_judgments_design_or_schema_is_flagged(store, tmp_path, capsys):
    """8-byte flips at 40 random positions of a judged store, and at 24 inside the pages of the judgments, the
    design tables and the schema: `campaign check` flags every flip that changes one of them (SQLite's
    integrity_check misses many)."""
    db, judged = str(tmp_path / "orig.db"), str(tmp_path / "judged.jsonl")
    _make_store(db, n_queries=40, n_docs=12, budget=25.0)   # small: one full check per flip
    _judgment_file(db, judged)
    with Campaign.open(db) as c:
        c.import_judgments(judged)
    size = os.path.getsize(db)
    conn = sqlite3.connect(db)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    targets = ["judgments", "sqlite_schema", *DESIGN_TABLES]
    pages = [p for (p,) in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({','.join('?' * len(targets))})",
                                        targets)]
    conn.close()
    ref = _dump(db)
    rng = np.random.default_rng(11)
    positions = list(rng.integers(0, size - 8, 40)) + [int((rng.choice(pages) - 1) * page + rng.integers(0, page - 8))
                                                       for _ in range(24)]
    landed = flagged = missed_by_integrity = 0
    original = open(db, "rb").read()
    for k, pos in enumerate(positions):
        copy = str(tmp_path / f"flip{k}.db")
        data = bytearray(original)
        data[pos:pos + 8] = bytes(b ^ int(x) for b, x in zip(data[pos:pos + 8], rng.integers(1, 256, 8)))
        open(copy, "wb").write(data)
        changed = _dump(copy) != ref
        code, out, err = run_cli(["campaign", "check", copy], capsys)
        assert "Traceback" not in err, err
        if changed:
            landed += 1
            assert code != 0, (k, pos, "a flip that changed the store passed `campaign check`")
            missed_by_integrity += _lines_in(copy) is not None
        flagged += code != 0
        for suffix in ("", "-journal"):
            if os.path.exists(copy + suffix):
                os.unlink(copy + suffix)
    assert landed >= 20 and missed_by_integrity >= 5, (landed, missed_by_integrity)
    print(f"byte flips: {len(positions)}, changed judgments/design/schema {landed} (all flagged; "
          f"{missed_by_integrity} of them pass integrity_check), flagged in all {flagged}")
