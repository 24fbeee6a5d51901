"""``activerank campaign`` CLI, and crash tests (SIGKILL during import and export)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from importlib import resources

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign
from activerank.cli.campaign import main
from activerank.inference.snis import LowEffectiveSampleSizeWarning

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def files():
    ds = resources.files("activerank.datasets")
    return str(ds / "mq2008_sample.txt"), str(ds / "mq2008_sample_train.txt")


def run_cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _answer(tasks, out, data, annotator="sim"):
    lab = ar.KnownLabels.from_data(data)
    with open(tasks) as f, open(out, "w") as g:
        for line in f:
            r = json.loads(line)
            r["grade"] = int(lab(int(r["query_id"]), [r["doc_id"]])[0])
            r["annotator"] = annotator
            g.write(json.dumps(r) + "\n")


# --------------------------------------------------------------------------- functional


def test_cli_round_trip_equals_estimate(tmp_path, files, capsys):
    pool, train = files
    db, tasks, ans = str(tmp_path / "c.db"), str(tmp_path / "t.jsonl"), str(tmp_path / "a.jsonl")
    code, out, _ = run_cli(["campaign", "init", db, "--pool", pool, "--train", train, "--model", "lightgbm",
                            "--ranker", "feature:1", "--grades", "3", "--budget", "12", "--metric", "dcg@5",
                            "--seed", "4", "--method", "active"], capsys)
    assert code == 0 and "created campaign" in out and "seed 4" in out
    code, out, err = run_cli(["campaign", "estimate", db], capsys)
    assert code == 1 and "nothing to estimate yet" in err
    code, out, _ = run_cli(["campaign", "export", db, tasks], capsys)
    assert code == 0 and out.startswith("wrote ")
    data = ar.load_letor(pool, n_grades=3)     # as the CLI loads it (no length feature: constant costs)
    _answer(tasks, ans, data)
    code, out, err = run_cli(["campaign", "import", db, ans], capsys)
    assert code == 0 and "committed" in out and err == ""
    code, out, _ = run_cli(["campaign", "import", db, ans], capsys)
    assert code == 0 and "already imported" in out
    code, out, _ = run_cli(["campaign", "estimate", db, "--json"], capsys)
    got = json.loads(out)
    model = ar.relevance.make_relevance_model("lightgbm", 3, random_state=0)
    tr = ar.load_letor(train, n_grades=3)
    probs = model.fit(tr.X, tr.labels).predict_proba(data.X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowEffectiveSampleSizeWarning)
        ref = ar.estimate(data, data.X[:, 0], probs, ar.KnownLabels.from_data(data), budget=12,
                          metric="dcg@5", method="active", rng=4)
    assert got["estimate"] == ref.estimate and got["standard_error"] == ref.standard_error
    assert got["n_draws"] == ref.n_draws == got["n_draws_planned"]
    code, out, _ = run_cli(["campaign", "status", db, "--json"], capsys)
    st = json.loads(out)
    assert code == 0 and st["queries_pending"] == [] and st["cost_spent"] <= st["budget"]
    code, out, _ = run_cli(["campaign", "status", db], capsys)
    assert "queries:" in out and "budget 12" in out
    code, out, _ = run_cli(["campaign", "qrels", db, str(tmp_path / "j.qrels")], capsys)
    assert code == 0 and (tmp_path / "j.qrels").read_text().count("\n") == st["n_documents_needed"]


def _tiny_letor(path, *, n_queries=8, n_docs=6, seed=0):
    """A tiny labeled LETOR file with document ids."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(n_queries):
        for d in range(n_docs):
            feats = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(rng.random(3)))
            lines.append(f"{rng.integers(0, 3)} qid:{100 + q} {feats} #docid = d{q}-{d}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_cli_status_of_a_budgeted_document_sample_names_the_judged_head(tmp_path, capsys):
    pool = _tiny_letor(tmp_path / "tiny.txt")
    db, tasks = str(tmp_path / "c.db"), str(tmp_path / "t.csv")
    code, _, err = run_cli(["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3", "--budget",
                            "2", "--metric", "dcg@4", "--method", "doc_dyn", "--seed", "8", "--ranker", "feature:1"],
                           capsys)
    assert code == 0, err
    assert run_cli(["campaign", "export", db, tasks], capsys)[0] == 0
    lab = ar.KnownLabels.from_data(ar.load_letor(pool, n_grades=3))
    lines = (tmp_path / "t.csv").read_text().splitlines()
    rows = [r.split(",") for r in lines[1:]]
    last = max(int(r[3]) for r in rows)
    kept = [",".join(r[:4] + [str(int(lab(int(r[0]), [r[2]])[0])), "ann"]) for r in rows if int(r[3]) != last]
    (tmp_path / "a.csv").write_text("\n".join([lines[0]] + kept) + "\n")
    assert run_cli(["campaign", "import", db, str(tmp_path / "a.csv")], capsys)[0] == 0
    code, out, _ = run_cli(["campaign", "status", db], capsys)
    assert code == 0 and f"sampled documents: 1 still to judge; the estimate uses the first {last} tasks" in out


@pytest.mark.parametrize("method", ["doc_dyn", "doc_stat"])
@pytest.mark.parametrize("rankers", [["feature:1"], ["feature:1", "feature:2"]])
def test_cli_document_level_campaign_end_to_end(tmp_path, capsys, method, rankers):
    pool = _tiny_letor(tmp_path / "tiny.txt")
    db, tasks, ans = str(tmp_path / "c.db"), str(tmp_path / "t.csv"), str(tmp_path / "a.csv")
    argv = ["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3", "--budget", "2",
            "--metric", "dcg@4", "--method", method, "--seed", "8"]
    for r in rankers:
        argv += ["--ranker", r]
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    assert f"method {method}" in out and "sampled documents to judge" in out
    code, out, err = run_cli(["campaign", "export", db, tasks], capsys)
    assert code == 0 and out.startswith("wrote "), err
    data = ar.load_letor(pool, n_grades=3)
    lab = ar.KnownLabels.from_data(data)
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0] == "query_id,query_text,doc_id,draw,grade,annotator" and len(lines) > 2
    answered = [lines[0]] + [",".join(r.split(",")[:4] + [str(int(lab(int(r.split(",")[0]), [r.split(",")[2]])[0])),
                                                          "ann"]) for r in lines[1:]]
    # the first task of the draw order left for later: no estimate yet, exit code 1, how many are missing
    first = 1 + [r.split(",")[3] for r in lines[1:]].index("0")
    (tmp_path / "part.csv").write_text("\n".join(answered[:first] + answered[first + 1:]) + "\n")
    code, out, err = run_cli(["campaign", "import", db, str(tmp_path / "part.csv")], capsys)
    assert code == 0, err
    code, out, err = run_cli(["campaign", "estimate", db], capsys)
    assert code == 1 and f"nothing to estimate yet: 1 of {len(lines) - 1} sampled documents" in err
    code, out, _ = run_cli(["campaign", "status", db], capsys)
    assert code == 0 and "sampled documents: 1 still to judge before an estimate" in out
    (tmp_path / "a.csv").write_text("\n".join(answered) + "\n")
    code, out, err = run_cli(["campaign", "import", db, ans], capsys)
    assert code == 0, err
    code, out, err = run_cli(["campaign", "estimate", db, "--json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    code, out, _ = run_cli(["campaign", "status", db, "--json"], capsys)
    st = json.loads(out)
    assert st["unit"] == "document" and st["n_documents_judged"] == st["n_documents_needed"] == len(lines) - 1
    probs = np.full((data.n_docs, 3), 1 / 3)
    scores = [data.X[:, int(r.split(":")[1]) - 1] for r in rankers]
    if len(rankers) == 1:
        ref = ar.estimate(data, scores[0], probs, lab, budget=2, metric="dcg@4", method=method, rng=8)
        assert got["estimate"] == pytest.approx(ref.estimate, rel=1e-12, abs=1e-12)
    else:
        ref = ar.compare(data, *scores, probs, lab, budget=2, metric="dcg@4", method=method, rng=8)
        assert got["difference"] == pytest.approx(ref.difference, rel=1e-12, abs=1e-12)
    assert got["standard_error"] == pytest.approx(ref.standard_error, rel=1e-12, abs=1e-12)
    assert got["n_draws"] == ref.n_draws == st["n_draws"] and got["method"] == method


def test_cli_trec_mode_compare(tmp_path, capsys):
    run = tmp_path / "runs.txt"
    lines = []
    rng = np.random.default_rng(0)
    for q in range(8):
        for tag in ("sysA", "sysB"):
            for d in range(6):
                lines.append(f"q{q} Q0 doc{q}_{d} {d + 1} {rng.random():.6f} {tag}")
    run.write_text("\n".join(lines) + "\n")
    qrels = tmp_path / "old.qrels"
    qrels.write_text("q0 0 doc0_0 2\nq0 0 doc0_1 0\nzz 0 nodoc 1\n")
    db = str(tmp_path / "t.db")
    argv = ["campaign", "init", db, "--run", str(run), "--budget", "4", "--metric", "err@3", "--qrels", str(qrels),
            "--seed", "0"]
    code, out, err = run_cli(argv, capsys)   # a qrels line outside the pool: reported, nothing created
    assert code == 2 and f"{qrels}: line 3: unknown query id 'zz'" in err and "--allow-unknown" in err, err
    assert sorted(os.listdir(tmp_path)) == ["old.qrels", "runs.txt"]   # no store, no temporary file
    code, out, _ = run_cli(argv + ["--allow-unknown"], capsys)
    assert code == 0 and "['sysA', 'sysB']" in out and "2 stored, 1 lines skipped" in out
    code, out, _ = run_cli(["campaign", "export", db, str(tmp_path / "t.csv")], capsys)
    assert code == 0
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert rows[0] == "query_id,query_text,doc_id,draw,grade,annotator"
    answered = [rows[0]] + [",".join(r.split(",")[:4] + ["1", "ann"]) for r in rows[1:]]
    (tmp_path / "a.csv").write_text("\n".join(answered) + "\n")
    code, out, err = run_cli(["campaign", "import", db, str(tmp_path / "a.csv")], capsys)
    assert code == 0, err
    code, out, err = run_cli(["campaign", "estimate", db, "--json"], capsys)
    assert "warning: effective sample size" in err  # budget 4: ESS < 10, reported on stderr
    got = json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert code == 0 and "difference" in got and "estimate_a" in got
    # only the documents that can change the difference were judged: the rankers' own means are unknown
    assert got["estimate_a"] is None and got["estimate_b"] is None
    with Campaign.open(db) as c:
        assert c.names == ("sysA", "sysB") and c.n_grades == 3 and c.design().judge == "changeable"
    db2 = str(tmp_path / "t2.db")
    code, out, _ = run_cli(["campaign", "init", db2, "--run", str(run), "--budget", "4", "--metric", "err@3",
                            "--seed", "0", "--grades", "3", "--judge", "all"], capsys)
    assert code == 0, (out, _)
    with Campaign.open(db2) as c:
        assert code == 0 and c.design().judge == "all"


@pytest.mark.filterwarnings("ignore::activerank.inference.snis.LowEffectiveSampleSizeWarning")
@pytest.mark.parametrize("mode", ["baseline", "ranking"])
def test_cli_k_system_campaign_equals_the_api(tmp_path, files, capsys, mode):
    pool, train = files
    db, tasks, ans = str(tmp_path / "k.db"), str(tmp_path / "t.jsonl"), str(tmp_path / "a.jsonl")
    extra = ["--baseline", "feature:1"] if mode == "baseline" else ["--ranker", "feature:1", "--rank-systems"]
    code, out, err = run_cli(["campaign", "init", db, "--pool", pool, "--train", train, "--model", "lightgbm",
                              "--ranker", "feature:25", "--ranker", "feature:40", *extra, "--grades", "3",
                              "--budget", "10", "--metric", "err@5", "--seed", "6"], capsys)
    assert code == 0, err
    run_cli(["campaign", "export", db, tasks], capsys)
    data = ar.load_letor(pool, n_grades=3)
    _answer(tasks, ans, data)
    code, _, err = run_cli(["campaign", "import", db, ans], capsys)
    assert code == 0, err
    code, out, err = run_cli(["campaign", "estimate", db], capsys)
    assert code == 0 and ("minus baseline 'feature:1'" if mode == "baseline" else "mean system") in out, err
    code, out, _ = run_cli(["campaign", "estimate", db, "--json"], capsys)
    got = json.loads(out)["systems"]
    model = ar.relevance.make_relevance_model("lightgbm", 3, random_state=0)
    tr = ar.load_letor(train, n_grades=3)
    probs = model.fit(tr.X, tr.labels).predict_proba(data.X)
    lab = ar.KnownLabels.from_data(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowEffectiveSampleSizeWarning)
        if mode == "baseline":
            ref = ar.compare_many(data, {"feature:25": data.X[:, 24], "feature:40": data.X[:, 39]}, data.X[:, 0],
                                  probs, lab, budget=10, metric="err@5", method="active", rng=6,
                                  baseline_name="feature:1")
            expected = dict(zip(ref.names, ref.differences))
            key = "difference"
        else:
            ref = ar.rank_systems(data, {"feature:25": data.X[:, 24], "feature:40": data.X[:, 39],
                                         "feature:1": data.X[:, 0]}, probs, lab, budget=10, metric="err@5",
                                  method="active", rng=6)
            expected = dict(zip(ref.names, ref.relative))
            key = "relative"
    assert set(got) == set(expected)
    for name, value in expected.items():
        assert got[name][key] == pytest.approx(value, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("sub", ["init", "export", "import", "status", "estimate", "qrels", "backup", "check"])
def test_cli_help(sub, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["campaign", sub, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: activerank campaign {sub}" in out and "exit codes" in out


def test_cli_wired_into_main_cli(tmp_path, files, capsys):
    from activerank.cli import main as ar_main

    with pytest.raises(SystemExit) as exc:
        ar_main(["campaign", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and all(c in out for c in ("init", "qrels", "backup", "check"))
    with pytest.raises(SystemExit) as exc:
        ar_main(["--help"])
    assert "estimate, qrels, backup, check" in " ".join(capsys.readouterr().out.split())


def test_cli_errors(tmp_path, files, capsys):
    pool, train = files
    db = str(tmp_path / "c.db")
    cases = [
        (["campaign", "init", db, "--budget", "5"], "give either --pool FILE"),
        (["campaign", "init", db, "--pool", pool, "--budget", "5", "--grades", "3"],
         "--model lightgbm needs --train FILE"),
        (["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3", "--budget", "5",
          "--ranker", "feature:99"], "feature must be 1..46"),
        (["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3", "--budget", "5",
          "--ranker", "magic"], "--ranker must be 'model'"),
        (["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3", "--budget", "5",
          "--metric", "mapp@3"], "is not a known metric"),
        (["campaign", "init", db, "--pool", str(tmp_path / "none.txt"), "--model", "uniform", "--grades", "3",
          "--budget", "5"], "No such file"),
        (["campaign", "status", str(tmp_path / "none.db")], "no campaign file"),
        (["campaign", "estimate", pool], "not an activerank campaign store"),
    ]
    for argv, msg in cases:
        code, out, err = run_cli(argv, capsys)
        assert code == 2, (argv, out, err)
        assert err.startswith(f"activerank campaign {argv[1]}: error:") and msg in err, err
    with pytest.raises(SystemExit) as exc:
        main(["campaign", "init", db, "--pool", pool, "--budget", "-3"])
    assert exc.value.code == 2
    assert "must be a positive finite number" in capsys.readouterr().err

    code, _, _ = run_cli(["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3",
                          "--budget", "5", "--seed", "1"], capsys)
    assert code == 0
    code, _, err = run_cli(["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3",
                            "--budget", "5"], capsys)
    assert code == 2 and "already exists" in err and "--force" in err
    code, _, err = run_cli(["campaign", "export", db, str(tmp_path / "t.txt")], capsys)
    assert code == 2 and "cannot tell the format" in err
    code, _, err = run_cli(["campaign", "import", db, str(tmp_path / "nothere.jsonl")], capsys)
    assert code == 2 and "No such file" in err
    (tmp_path / "w.csv").write_text("qid,docid,grade\n")
    code, _, err = run_cli(["campaign", "import", db, str(tmp_path / "w.csv")], capsys)
    assert code == 2 and "wrong column names" in err
    with Campaign.open(db) as c:
        q = c.query_ids[c.plan().queries[0]]
        d = c.tasks(q)[0]
    (tmp_path / "b.jsonl").write_text(json.dumps({"query_id": q, "doc_id": d, "grade": 1}) + "\n"
                                      + '{"query_id": 1\n')
    code, out, err = run_cli(["campaign", "import", db, str(tmp_path / "b.jsonl")], capsys)
    assert code == 1 and "b.jsonl: line 2: malformed JSON" in err and "1 judgments stored now" in out


# --------------------------------------------------------------------------- crash tests


N_QUERIES, N_DOCS, K = 300, 24, 20
# budget 50: a judgment file of about 8,000 lines (2,000 new judgments), 80 commits at chunks of 100, so a kill at
# a random time lands mid-import; larger files only made these tests slower (a 33,000-line file took 60 s of the
# fast tier)


def _big_campaign(path):
    rng = np.random.default_rng(123)
    qids = np.repeat(np.arange(1000, 1000 + N_QUERIES), N_DOCS)
    doc_ids = np.array([f"doc-{q}-{j}" for q in range(N_QUERIES) for j in range(N_DOCS)], dtype=object)
    pool = ar.Pool.from_qids(qids, doc_ids=doc_ids)
    probs = rng.dirichlet(np.ones(3), size=qids.size)
    c = Campaign.create(path, pool, rng.random(qids.size), probs, budget=50.0, metric=f"dcg@{K}", seed=7)
    c.close()
    return pool


def _big_judgment_file(db, path):
    """Two annotators per task (the second disagreeing sometimes), plus malformed lines."""
    with Campaign.open(db) as c:
        lines = []
        for x in c.plan().queries[c.plan().new]:
            q = c.query_ids[x]
            for i, d in enumerate(c.tasks(q)):
                g = (int(x) + i) % 3
                lines.append(json.dumps({"query_id": int(q), "doc_id": d, "grade": g, "annotator": "a"}))
                lines.append(json.dumps({"query_id": int(q), "doc_id": d, "grade": (g + i % 2) % 3,
                                         "annotator": "b"}))
                if len(lines) % 997 == 0:
                    lines.append('{"query_id": 1, "doc_')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


def _state(db):
    with Campaign.open(db) as c:
        assert c.check() == []
        conn = c._db
        lines = set(conn.execute("SELECT line, status FROM import_lines"))
        judg = conn.execute("SELECT doc_row, grade, annotator, line FROM judgments").fetchall()
    assert len(judg) == len(set(judg)), "a judgment is stored twice"
    assert len(judg) == sum(1 for _, s in lines if s == "accepted")
    return lines, sorted(judg)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    root = tmp_path_factory.mktemp("crash")
    db0 = str(root / "fresh.db")
    _big_campaign(db0)
    judgments = str(root / "judgments.jsonl")
    n_lines = _big_judgment_file(db0, judgments)
    ref_db = str(root / "ref.db")
    shutil.copy(db0, ref_db)
    t0 = time.perf_counter()
    with Campaign.open(ref_db) as c:
        rep = c.import_judgments(judgments, chunk_size=100)
    t_import = time.perf_counter() - t0
    assert rep.accepted >= 2000 and len(rep.rejected) >= 5 and n_lines > 7500
    ref_tasks = str(root / "ref_tasks.jsonl")
    t0 = time.perf_counter()
    with Campaign.open(db0) as c:
        c.export_tasks(ref_tasks)
    t_export = time.perf_counter() - t0
    return dict(root=root, db0=db0, judgments=judgments, ref=_state(ref_db), t_import=t_import,
                t_export=t_export, ref_tasks=open(ref_tasks).read())


def _fork_and_kill(target, delay):
    """Run ``target(write_fd)`` in a forked child, SIGKILL it after ``delay`` s; return what it wrote."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            target(w)
        finally:
            os._exit(0)
    os.close(w)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    return b"".join(chunks).decode()


def _acked_lines(text):
    acked = set()
    for line in text.splitlines():
        if line.startswith("ack "):
            a, b = map(int, line.split()[1:3])
            acked.update(range(a, b + 1))
    return acked


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("seed", range(4))
def test_crash_during_import(big, seed, tmp_path):
    db = str(tmp_path / "c.db")
    shutil.copy(big["db0"], db)
    judgments = big["judgments"]
    delay = np.random.default_rng(seed).uniform(0.0, 1.1 * big["t_import"])

    def child(w):
        with Campaign.open(db) as c:
            c.import_judgments(judgments, chunk_size=100,
                               on_commit=lambda a, b, n: os.write(w, f"ack {a} {b}\n".encode()))
        os.write(w, b"done\n")

    out = _fork_and_kill(child, delay)
    acked = _acked_lines(out)
    data_lines = {ln for ln, _ in big["ref"][0]}
    copy = str(tmp_path / "copy.db")              # the store file alone holds every acknowledged line
    shutil.copyfile(db, copy)
    if not os.path.exists(db + "-journal"):       # unless killed inside a commit (schema.py, Durability)
        assert Campaign.check_file(copy) == []
        with Campaign.open(copy) as c:
            assert acked & data_lines <= {ln for (ln,) in c._db.execute("SELECT line FROM import_lines")}
    lines, judg = _state(db)                       # opens cleanly, no duplicates
    stored = {ln for ln, _ in lines}
    assert acked & data_lines <= stored            # every acknowledged line is there
    with Campaign.open(db) as c:                   # re-import completes the file
        rep = c.import_judgments(judgments, chunk_size=100)
    if "done" in out:
        assert rep.already_imported
    elif rep.already_imported:
        # killed between the final commit and the "done" line: the last chunk was acknowledged
        with open(judgments) as f:
            assert max(acked, default=0) == len(f.read().splitlines())
    assert _state(db) == big["ref"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("seed", range(3))
def test_crash_during_export(big, seed, tmp_path):
    db = str(tmp_path / "c.db")
    shutil.copy(big["db0"], db)
    out_path = str(tmp_path / "tasks.jsonl")
    with open(out_path, "w") as f:
        f.write("OLD\n")
    delay = np.random.default_rng(100 + seed).uniform(0.0, 1.1 * big["t_export"])

    def child(w):
        with Campaign.open(db) as c:
            c.export_tasks(out_path, overwrite=True)      # "OLD" is not a task file
        os.write(w, b"done\n")

    out = _fork_and_kill(child, delay)
    content = open(out_path).read()
    assert content in ("OLD\n", big["ref_tasks"])    # never a partial file
    if "done" in out:
        assert content == big["ref_tasks"]
    with Campaign.open(db) as c:
        assert c.check() == []
        c.export_tasks(out_path, overwrite=True)
    assert open(out_path).read() == big["ref_tasks"]


def test_crash_cli_subprocess_import(big, tmp_path):
    """The real CLI in a subprocess, killed after its first acknowledged commit."""
    db = str(tmp_path / "c.db")
    shutil.copy(big["db0"], db)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "activerank.cli.campaign", "campaign", "import", db,
                             big["judgments"], "--chunk-size", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    acks = [proc.stdout.readline()]
    time.sleep(np.random.default_rng(1).uniform(0, 0.5 * big["t_import"]))
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate()
    acked = set()
    for line in acks + rest.splitlines():
        if line.startswith("committed "):
            a, b = line.split(" lines ")[1].split(":")[0].split("-")
            acked.update(range(int(a), int(b) + 1))
    assert acked, "the importer acknowledged no commit before the kill"
    lines, _ = _state(db)
    data_lines = {ln for ln, _ in big["ref"][0]}
    assert acked & data_lines <= {ln for ln, _ in lines}
    assert main(["campaign", "import", db, big["judgments"]]) == 1    # completes; some lines rejected
    assert _state(db) == big["ref"]


# --------------------------------------------------------------------------- outputs never destroy data


@pytest.fixture
def judged(tmp_path, files, capsys):
    """A campaign (named without a known extension) holding judgments for every task."""
    pool, _ = files
    db = str(tmp_path / "store.jsonl")       # an extension that lets `export STORE STORE` pass format detection
    code, _, err = run_cli(["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3",
                            "--budget", "6", "--seed", "3"], capsys)
    assert code == 0, err
    tasks, ans = str(tmp_path / "t.jsonl"), str(tmp_path / "a.jsonl")
    assert run_cli(["campaign", "export", db, tasks], capsys)[0] == 0
    _answer(tasks, ans, ar.load_letor(pool, n_grades=3))
    assert run_cli(["campaign", "import", db, ans], capsys)[0] == 0
    return db, _judgments(db)


def _judgments(db):
    with Campaign.open(db) as c:
        assert c.check() == []
        rows = sorted(c._db.execute("SELECT doc_row, grade, annotator, batch_id, line FROM judgments"))
    assert rows
    return rows


def _intact(db, before):
    assert os.path.getsize(db) > 0
    assert _judgments(db) == before


@pytest.mark.parametrize("argv", [
    ["export", "{db}", "{db}"],
    ["export", "{db}", "{db}", "--force"],
    ["export", "{db}", "{db}-wal", "--format", "jsonl", "--force"],
    ["export", "{db}", "{db}-shm", "--format", "csv"],
    ["export", "{db}", "{link}"],
    ["qrels", "{db}", "{db}"],
    ["qrels", "{db}", "{db}", "--force"],
    ["qrels", "{db}", "{db}-wal"],
    ["qrels", "{db}", "{hard}", "--force"],
    ["estimate", "{db}", "--trace", "{db}"],
    ["estimate", "{db}", "--trace", "{db}", "--force"],
    ["estimate", "{db}", "--trace", "{db}-shm", "--force"],
    ["estimate", "{db}", "--trace", "{link}", "--force"],
])
def test_output_never_replaces_the_store(judged, tmp_path, capsys, argv):
    db, before = judged
    link, hard = str(tmp_path / "link.jsonl"), str(tmp_path / "hard.qrels")
    os.symlink(db, link)
    os.link(db, hard)
    argv = ["campaign"] + [a.format(db=db, link=link, hard=hard) for a in argv]
    code, out, err = run_cli(argv, capsys)
    assert code == 2, (out, err)
    assert "would destroy" in err and "campaign store" in err and "Traceback" not in err
    _intact(db, before)


def test_existing_foreign_outputs_need_force(judged, tmp_path, files, capsys):
    db, before = judged
    pool, _ = files
    letor = tmp_path / "pool.txt"
    shutil.copy(pool, letor)
    original = letor.read_bytes()
    for argv in (["export", db, str(letor), "--format", "csv"], ["qrels", db, str(letor)],
                 ["estimate", db, "--trace", str(letor)]):
        code, _, err = run_cli(["campaign"] + argv, capsys)
        assert code == 2 and "already exists" in err and "--force" in err, err
        assert letor.read_bytes() == original
    # an answered task file holds annotators' work: not ours to replace
    answered = tmp_path / "b.jsonl"
    shutil.copy(tmp_path / "a.jsonl", answered)
    code, _, err = run_cli(["campaign", "export", db, str(answered)], capsys)
    assert code == 2 and "answered rows" in err
    # the imported one is a file the campaign read: refused even with --force
    code, _, err = run_cli(["campaign", "export", db, str(tmp_path / "a.jsonl"), "--force"], capsys)
    assert code == 2 and "a file this campaign read" in err
    # previous outputs of the same kind are replaced without --force
    assert run_cli(["campaign", "export", db, str(tmp_path / "t.jsonl")], capsys)[0] == 0
    q = tmp_path / "j.qrels"
    for _ in range(2):
        assert run_cli(["campaign", "qrels", db, str(q)], capsys)[0] == 0
    trace = tmp_path / "trace.csv"
    for _ in range(2):
        assert run_cli(["campaign", "estimate", db, "--trace", str(trace)], capsys)[0] == 0
    assert trace.read_text().startswith("draw,")
    # --force replaces a foreign file (never the store)
    code, _, err = run_cli(["campaign", "qrels", db, str(letor), "--force"], capsys)
    assert code == 0, err
    assert letor.read_text().split("\n")[0].split()[1] == "0"
    _intact(db, before)


def test_main_cli_trace_never_replaces_inputs(tmp_path, files, capsys):
    from activerank.cli import main as ar_main

    pool, _ = files
    p = tmp_path / "pool.txt"
    shutil.copy(pool, p)
    original = p.read_bytes()
    base = ["estimate", str(p), "--model", "uniform", "--budget", "20", "--seed", "1"]
    assert ar_main(base + ["--trace", str(p), "--force"]) == 2
    err = capsys.readouterr().err
    assert "would destroy" in err and "an input file" in err
    other = tmp_path / "notes.txt"
    other.write_text("my notes\n")
    assert ar_main(base + ["--trace", str(other)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert p.read_bytes() == original and other.read_text() == "my notes\n"
    assert ar_main(base + ["--trace", str(other), "--force"]) == 0


# --------------------------------------------------------------------------- concurrent and foreign imports


def test_concurrent_reimport_of_one_file_is_safe_and_quiet(big, tmp_path):
    """Two real processes import the same file at once: both finish without error, every line stored once."""
    db = str(tmp_path / "c.db")
    shutil.copy(big["db0"], db)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "activerank.cli.campaign", "campaign", "import", db, big["judgments"],
           "--chunk-size", "50"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, results):
        # exit 1: the file holds some malformed lines (rejected rows), never 2 (error)
        assert p.returncode == 1, err
        assert "error" not in err and "Traceback" not in err and "UNIQUE" not in err, err
        assert all(line.startswith(big["judgments"] + ": line ") for line in err.splitlines()), err
    commits = [out.count("committed ") for out, _ in results]
    assert sum(commits) >= 2, commits
    assert _state(db) == big["ref"]               # every line once, same judgments as one import
    assert main(["campaign", "import", db, big["judgments"]]) == 1   # and a third import is a no-op


def test_import_of_the_store_or_binary_file_is_refused_before_reading(tmp_path, files, capsys):
    pool, _ = files
    db = str(tmp_path / "c.db")
    assert run_cli(["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3",
                    "--budget", "5", "--seed", "1"], capsys)[0] == 0
    copy = tmp_path / "copy.jsonl"
    shutil.copy(db, copy)
    (tmp_path / "blob.qrels").write_bytes(b"q1 0 d1 1\n" + bytes(range(256)) * 40)
    (tmp_path / "x.csv.gz.csv").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 50)
    (tmp_path / "prose.jsonl").write_text("Dear annotators,\nplease judge the documents below.\n" * 30)
    (tmp_path / "prose.qrels").write_text("this is not a qrels file at all\n" * 30)
    cases = [([db, "--format", "jsonl"], "this is the campaign store itself"),
             ([str(copy)], "line 1: this is an SQLite database"),
             ([str(tmp_path / "blob.qrels")], "line 2: binary data (a NUL byte)"),
             ([str(tmp_path / "x.csv.gz.csv")], "gzip-compressed"),
             ([str(tmp_path / "prose.jsonl")], "not a jsonl judgment file: none of its first 20 data lines"),
             ([str(tmp_path / "prose.qrels")], "not a qrels judgment file: none of its first 20 data lines")]
    for args, msg in cases:
        code, out, err = run_cli(["campaign", "import", db] + args, capsys)
        assert code == 2 and msg in err and "Traceback" not in err, (args, err)
    with Campaign.open(db) as c:
        assert c.check() == []
        assert c._db.execute("SELECT COUNT(*) FROM import_lines").fetchone()[0] == 0
        assert c._db.execute("SELECT COUNT(*) FROM batches").fetchone()[0] == 0


def test_stored_rejections_are_capped_and_counted(tmp_path, files, capsys):
    from activerank.campaign.store import MAX_STORED_REJECTIONS

    pool, _ = files
    db = str(tmp_path / "c.db")
    assert run_cli(["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3",
                    "--budget", "5", "--seed", "1"], capsys)[0] == 0
    with Campaign.open(db) as c:
        q = c.query_ids[c.plan().queries[0]]
        d = c.tasks(q)[0]
    n_bad = MAX_STORED_REJECTIONS + 700
    lines = [json.dumps({"query_id": q, "doc_id": d, "grade": 1})]
    lines += [json.dumps({"query_id": q, "doc_id": f"nodoc{i}", "grade": 1}) for i in range(n_bad)]
    p = tmp_path / "many.jsonl"
    p.write_text("\n".join(lines) + "\n")
    for attempt in range(2):                       # the second import reports the same counts
        with Campaign.open(db) as c:
            rep = c.import_judgments(p, chunk_size=300)
        assert rep.accepted == 1 and rep.n_rejected == n_bad and rep.already_imported == bool(attempt)
        assert len(rep.rejected) == MAX_STORED_REJECTIONS
        assert rep.messages()[-1].endswith(f"700 more rejected lines not listed (only the first "
                                           f"{MAX_STORED_REJECTIONS} rejections are kept)")
    with Campaign.open(db) as c:
        assert c._db.execute("SELECT COUNT(*) FROM import_lines").fetchone()[0] == 1 + MAX_STORED_REJECTIONS
        assert c.check() == []
    code, out, err = run_cli(["campaign", "import", db, str(p)], capsys)
    assert code == 1 and "already imported" in out


def test_init_never_replaces_its_own_inputs(tmp_path, files, capsys):
    pool, _ = files
    p = tmp_path / "pool.txt"
    shutil.copy(pool, p)
    original = p.read_bytes()
    code, _, err = run_cli(["campaign", "init", str(p), "--pool", str(p), "--model", "uniform", "--grades", "3",
                            "--budget", "5", "--force"], capsys)
    assert code == 2 and "would destroy" in err and "an input file" in err
    assert p.read_bytes() == original


def test_cli_prefix_campaign_in_rounds_equals_estimate(tmp_path, files, capsys):
    pool, train = files
    db = str(tmp_path / "c.db")
    code, out, err = run_cli(["campaign", "init", db, "--pool", pool, "--train", train, "--model", "lightgbm",
                              "--ranker", "feature:25", "--grades", "3", "--budget", "6", "--metric", "err@10",
                              "--method", "prefix", "--seed", "3"], capsys)
    assert code == 0 and "tasks come in rounds" in out, err
    code, out, err = run_cli(["campaign", "init", str(tmp_path / "auto.db"), "--pool", pool, "--train", train,
                              "--model", "lightgbm", "--ranker", "feature:25", "--grades", "3", "--budget", "6",
                              "--metric", "err@10", "--seed", "3"], capsys)
    # the default, auto: a campaign weighs only designs that estimate from any judged head of their tasks
    assert code == 0 and "method active (chosen by method=auto)" in out, err
    data = ar.load_letor(pool, n_grades=3)
    for r in range(100):
        code, out, _ = run_cli(["campaign", "status", db], capsys)
        if "queries reached: all done" in out:
            break
        assert "still being judged" in out
        tasks, ans = str(tmp_path / f"t{r}.jsonl"), str(tmp_path / f"a{r}.jsonl")
        code, out, err = run_cli(["campaign", "export", db, tasks], capsys)
        assert code == 0, err
        n = int(out.split()[1])
        assert f"({n} queries" in out  # one document per query still being judged
        _answer(tasks, ans, data)
        code, out, err = run_cli(["campaign", "import", db, ans], capsys)
        assert code == 0 and err == "", err
    code, out, err = run_cli(["campaign", "estimate", db, "--json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    model = ar.relevance.make_relevance_model("lightgbm", 3, random_state=0)
    tr = ar.load_letor(train, n_grades=3)
    probs = model.fit(tr.X, tr.labels).predict_proba(data.X)
    ref = ar.estimate(data, data.X[:, 24], probs, ar.KnownLabels.from_data(data), budget=6, metric="err@10",
                      method="prefix", rng=3)
    assert got["estimate"] == pytest.approx(ref.estimate, rel=1e-12)
    assert got["standard_error"] == pytest.approx(ref.standard_error, rel=1e-12)


def test_cli_init_with_llm_grades(tmp_path, files, capsys):
    """``init --llm-grades FILE --qrels HELD``: the judge calibrated on the held labels is the stored model."""
    pool, train = files
    data = ar.load_letor(pool, n_grades=3)
    rng = np.random.default_rng(0)
    step = np.where(rng.random(data.labels.size) < 0.7, 0, rng.choice([-1, 1], data.labels.size))
    judged = np.clip(data.labels + step, 0, 2)
    llm = tmp_path / "llm.txt"
    llm.write_text("".join(f"{data.query_ids[x]} Q0 {data.doc_ids[r]} {judged[r]}\n"
                           for x in range(data.n_queries) for r in range(data.offsets[x], data.offsets[x + 1])))
    held = tmp_path / "held.qrels"
    n = int(data.offsets[6])
    held.write_text("".join(f"{data.query_ids[x]} 0 {data.doc_ids[r]} {data.labels[r]}\n"
                            for x in range(6) for r in range(data.offsets[x], data.offsets[x + 1])))
    db = str(tmp_path / "c.db")
    base = ["campaign", "init", db, "--pool", pool, "--train", train, "--model", "lightgbm", "--ranker", "feature:1",
            "--grades", "3", "--budget", "8", "--metric", "dcg@5", "--seed", "4"]
    code, _, err = run_cli(base + ["--llm-grades", str(llm)], capsys)
    assert code == 2 and "calibrated on human labels; give them with --qrels" in err
    code, out, err = run_cli(base + ["--llm-grades", str(llm), "--qrels", str(held)], capsys)
    assert code == 0, err
    with Campaign.open(db) as c:
        info = c.meta["judges"]
        assert info["calibrated"] and info["n_labels"] == n and info["judges"] == ["llm.txt"]
