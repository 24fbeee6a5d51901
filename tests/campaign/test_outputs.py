"""Campaign outputs never replace a file a campaign command read; CSV cells are escaped against formula injection;
`init --qrels` reports every rejected line and stores nothing unless asked to skip unknown ids."""

import csv
import json
import os
import shutil
from importlib import resources

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign
from activerank.campaign.io import escape_cell, unescape_cell
from activerank.cli.campaign import main


def run_cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _answer(tasks, out, data):
    lab = ar.KnownLabels.from_data(data)
    with open(tasks) as f, open(out, "w") as g:
        for line in f:
            r = json.loads(line)
            r["grade"] = int(lab(int(r["query_id"]), [r["doc_id"]])[0])
            g.write(json.dumps(r) + "\n")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A campaign made from every kind of input file, and judged: role -> path, plus the store."""
    root = tmp_path_factory.mktemp("inputs")
    ds = resources.files("activerank.datasets")
    pool, train = str(root / "pool.txt"), str(root / "train.txt")
    shutil.copy(ds / "mq2008_sample.txt", pool)
    shutil.copy(ds / "mq2008_sample_train.txt", train)
    data = ar.load_letor(pool, n_grades=3)
    scores, run, qrels, text = (str(root / n) for n in ("scores.txt", "r.run", "old.qrels", "queries.tsv"))
    np.savetxt(scores, data.X[:, 0])
    from activerank.io.trec import write_run
    from activerank.relevance.rankers import rank_by_scores

    write_run(run, data, rank_by_scores(data.X[:, 24], data.offsets), tag="f25")
    q0, d0 = data.query_ids[0], data.doc_ids[0]
    with open(qrels, "w") as f:
        f.write(f"{q0} 0 {d0} 1\n")
    with open(text, "w") as f:
        f.writelines(f"{q}\tquery {q}\n" for q in data.query_ids)
    db = str(root / "c.db")
    main(["campaign", "init", db, "--pool", pool, "--train", train, "--model", "uniform", "--grades", "3",
          "--ranker", f"file:{scores}", "--ranker", f"run:{run}#f25", "--qrels", qrels, "--query-text", text,
          "--budget", "6", "--seed", "2"])
    tasks, judged = str(root / "t.jsonl"), str(root / "judged.jsonl")
    assert main(["campaign", "export", db, tasks]) == 0
    _answer(tasks, judged, data)
    assert main(["campaign", "import", db, judged]) == 0
    with Campaign.open(db) as c:
        recorded = set(c.input_files())
    files = dict(pool=pool, train=train, scores=scores, run=run, qrels=qrels, query_text=text, judged=judged)
    assert recorded == {os.path.abspath(p) for p in files.values()}
    return dict(files, db=db)


OUTPUTS = {
    "export": ["export", "{db}", "{out}", "--format", "jsonl"],
    "qrels": ["qrels", "{db}", "{out}"],
    "trace": ["estimate", "{db}", "--trace", "{out}"],
    "backup": ["backup", "{db}", "{out}"],
}


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("output", sorted(OUTPUTS))
@pytest.mark.parametrize("role", ["pool", "train", "scores", "run", "qrels", "query_text", "judged"])
def test_no_output_replaces_a_file_the_campaign_read(inputs, capsys, role, output, force):
    target, before = inputs[role], open(inputs[role], "rb").read()
    store = open(inputs["db"], "rb").read()
    argv = [a.format(db=inputs["db"], out=target) for a in OUTPUTS[output]] + (["--force"] if force else [])
    code, out, err = run_cli(["campaign"] + argv, capsys)
    assert code == 2 and "a file this campaign read" in err and "would destroy" in err, (argv, err)
    assert "Traceback" not in err
    assert open(target, "rb").read() == before and open(inputs["db"], "rb").read() == store


@pytest.mark.parametrize("role", ["pool", "train", "scores", "run", "qrels", "query_text"])
def test_init_never_replaces_any_of_its_inputs(inputs, tmp_path, capsys, role):
    f = inputs
    target = str(tmp_path / os.path.basename(f[role]))
    copies = {r: (target if r == role else f[r]) for r in f}
    shutil.copy(f[role], target)
    before = open(target, "rb").read()
    argv = ["campaign", "init", target, "--pool", copies["pool"], "--train", copies["train"], "--model", "uniform",
            "--grades", "3", "--ranker", f"file:{copies['scores']}", "--baseline", f"run:{copies['run']}#f25",
            "--qrels", copies["qrels"], "--query-text", copies["query_text"], "--budget", "6", "--force"]
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and "would destroy" in err and "an input file" in err, err
    assert open(target, "rb").read() == before
    assert os.listdir(tmp_path) == [os.path.basename(target)]


def test_init_from_runs_never_replaces_a_run(tmp_path, capsys):
    run = tmp_path / "runs.txt"
    run.write_text("".join(f"q{q} Q0 d{q}_{d} {d + 1} {1 - d / 10} {t}\n" for q in range(4) for t in "ab"
                           for d in range(5)))
    before = run.read_bytes()
    code, _, err = run_cli(["campaign", "init", str(run), "--run", str(run), "--grades", "3", "--budget", "2",
                            "--force"], capsys)
    assert code == 2 and "would destroy" in err and run.read_bytes() == before


# --------------------------------------------------------------------------- CSV injection


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1",
                                  "'=x", "'plain", "''=x", "-1.5", "+3", "doc-7", "", "a=b"])
def test_escape_cell_is_undone_by_unescape(text):
    esc = escape_cell(text)
    assert unescape_cell(esc) == text
    assert not esc.startswith(("=", "+", "-", "@", "\t", "\r")) or esc in ("-1.5", "+3")


def _runs_as_formula(cell: str) -> bool:
    """Would a spreadsheet run this cell as a formula (text, not a plain number, starting with = + - @ tab CR)?"""
    try:
        float(cell)
        return False
    except ValueError:
        return cell.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_csv_tasks_escape_formulas_and_round_trip(tmp_path):
    # ids starting with a tab or CR are escaped too, but imports strip ids of white space: they cannot round-trip;
    # a CR inside a cell is quoted (the csv module left it bare with LF line ends)
    evil = ["=HYPERLINK(\"http://evil.example\",\"click\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "'=quoted",
            "x\r=cr", "plain"]
    qids = np.repeat(["=q1", "q2"], len(evil))
    pool = ar.Pool.from_qids(qids, doc_ids=np.array(evil * 2, dtype=object))
    probs = np.full((qids.size, 3), 1 / 3)
    with Campaign.create(tmp_path / "c.db", pool, np.arange(qids.size, dtype=float), probs, budget=2,
                         metric="dcg@7", seed=1, method="passive") as c:
        c.export_tasks(tmp_path / "t.csv")
        with open(tmp_path / "t.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        cells = [v for r in rows for v in r.values()]
        assert rows and not [v for v in cells if _runs_as_formula(v)]
        assert "'=HYPERLINK(\"http://evil.example\",\"click\")" in cells and "''=quoted" in cells
        for r in rows:  # the annotators' answers, their own cells escaped too
            r["grade"], r["annotator"] = "2", escape_cell("=ann")
        with open(tmp_path / "a.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        rep = c.import_judgments(tmp_path / "a.csv")
        assert rep.accepted == len(rows) and rep.n_rejected == 0, rep.messages()
        got = c.judgments()
        annotators = {a for (a,) in c._db.execute("SELECT DISTINCT annotator FROM judgments")}
    assert annotators == {"=ann"}
    exported = {(unescape_cell(r["query_id"]), unescape_cell(r["doc_id"])) for r in rows}
    assert {(q, d) for q, docs in got.items() for d in docs} == exported
    assert {d for _, d in exported} <= set(evil) and {q for q, _ in exported} <= {"=q1", "q2"}


def test_trace_csv_escapes_text_cells(tmp_path):
    import pandas as pd

    from activerank.campaign.io import write_trace

    write_trace(tmp_path / "t.csv", pd.DataFrame({"draw": [0, 1], "query_id": ["=1+1", "q"], "value": [-1.5, 2.0]}))
    assert (tmp_path / "t.csv").read_text().splitlines() == ["draw,query_id,value", "0,'=1+1,-1.5", "1,q,2.0"]


# --------------------------------------------------------------------------- init --qrels


def test_init_qrels_reports_every_rejected_line_and_creates_nothing(tmp_path, capsys):
    ds = resources.files("activerank.datasets")
    pool = str(ds / "mq2008_sample.txt")
    data = ar.load_letor(pool, n_grades=3)
    q0, d0, d1 = data.query_ids[0], data.doc_ids[0], data.doc_ids[1]
    qrels = tmp_path / "q.qrels"
    qrels.write_text(f"{q0} 0 {d0} 1\n"            # fine
                     f"999999 0 {d0} 1\n"          # unknown query id
                     f"{q0} 0 GX-nowhere 2\n"      # unknown document id
                     f"{q0} 0 {d1} 7\n"            # grade off the scale
                     f"{q0} 0 {d1}\n")             # malformed line
    db = str(tmp_path / "c.db")
    base = ["campaign", "init", db, "--pool", pool, "--model", "uniform", "--grades", "3", "--budget", "5",
            "--qrels", str(qrels)]
    for extra in ([], ["--allow-unknown"]):
        code, out, err = run_cli(base + extra, capsys)
        assert code == 2 and not os.path.exists(db), err
        lines = [ln for ln in err.splitlines() if ln.startswith(f"{qrels}: line")]
        reasons = {int(ln.split(": line ")[1].split(":")[0]): ln.split(": ", 2)[2] for ln in lines}
        assert reasons[4] == "grade 7 is outside the scale 0..2"
        assert reasons[5].startswith("a qrels line must have 4 fields")
        if extra:
            assert set(reasons) == {4, 5} and "--allow-unknown" not in err.splitlines()[-1]
        else:
            assert reasons[2] == "unknown query id '999999' (not in the campaign's pool)"
            assert reasons[3] == f"unknown document id 'GX-nowhere' for query '{q0}' (not in the campaign's pool)"
            assert "4 lines rejected" in err and "no campaign created" in err and "--allow-unknown" in err
        assert sorted(os.listdir(tmp_path)) == ["q.qrels"]
    qrels.write_text(f"{q0} 0 {d0} 1\n999999 0 {d0} 1\n{q0} 0 GX-nowhere 2\n")
    code, out, err = run_cli(base, capsys)
    assert code == 2 and "2 lines rejected" in err
    code, out, err = run_cli(base + ["--allow-unknown"], capsys)
    assert code == 0 and "1 stored, 2 lines skipped (query or document not in the pool" in out, err
    with Campaign.open(db) as c:
        assert c.judgments(scope="pool") == {str(q0): {d0: 1}}
    # an existing store is replaced only once the new one is complete
    before = open(db, "rb").read()
    code, _, err = run_cli(base + ["--force"], capsys)
    assert code == 2 and open(db, "rb").read() == before
