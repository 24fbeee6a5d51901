"""TREC run / qrels reading and writing."""

import numpy as np
import pytest

import activerank as ar
from activerank.io.trec import (
    Qrels,
    read_qrels,
    read_runs,
    run_rankings_for_pool,
    write_qrels,
    write_run,
)


def _write(tmp_path, name, text, mode="w"):
    p = tmp_path / name
    if mode == "wb":
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def _docs(runs, tag, x):
    return [runs.pool.doc_ids[r] for r in runs.rankings[tag][x]]


RUN = """\
q1 Q0 d1 1 0.5 A
q1 Q0 d2 2 0.5 A
q1 Q0 d3 3 0.9 A
q2 Q0 d4 1 1.0 A
q1 Q0 d9 1 2.0 B
q1 Q0 d1 2 1.0 B
q3 Q0 d7 1 1.0 B
"""


def test_read_runs_orders_by_score_then_docid_descending_ignoring_rank(tmp_path):
    runs = read_runs(_write(tmp_path, "r.run", RUN))
    assert runs.names == ("A", "B")
    assert runs.pool.query_ids.tolist() == ["q1", "q2", "q3"]
    # ties on score 0.5: d2 before d1 (docid descending, as trec_eval); rank column ignored
    assert _docs(runs, "A", 0) == ["d3", "d2", "d1"]
    assert _docs(runs, "B", 0) == ["d9", "d1"]
    assert _docs(runs, "A", 2) == []          # run A has nothing for q3
    # pool documents: union in order of first appearance
    assert runs.pool.doc_ids[runs.pool.offsets[0]:runs.pool.offsets[1]].tolist() == ["d1", "d2", "d3", "d9"]
    assert np.isneginf(runs.scores["A"][3])    # d9 not retrieved by A


def test_read_runs_intersection_and_error_modes(tmp_path):
    p = _write(tmp_path, "r.run", RUN)
    runs = read_runs(p, queries="intersection")
    assert runs.pool.query_ids.tolist() == ["q1"]
    with pytest.raises(ValueError, match=r"r\.run: line 5: tag 'B' differs"):
        read_runs(p, multiple_tags="error")
    with pytest.raises(ValueError, match="tags must be unique across files"):
        read_runs([p, _write(tmp_path, "s.run", "q1 Q0 x 1 1 A\n")])


@pytest.mark.parametrize("line, msg", [
    ("q1 Q0 d1 1 0.5", "line 2: a run line must have 6 fields"),
    ("q1 Q0 d2 one 0.5 A", "line 2: rank 'one' is not an integer"),
    ("q1 Q0 d2 2 high A", "line 2: score 'high' is not a number"),
    ("q1 Q0 d2 2 nan A", "line 2: score 'nan' is not finite"),
    ("q1 Q0 d1 2 0.4 A", r"line 2: run 'A' retrieves document 'd1' for query 'q1' twice \(first at line 1\)"),
])
def test_read_runs_errors_name_file_and_line(tmp_path, line, msg):
    p = _write(tmp_path, "bad.run", "q1 Q0 d1 1 0.5 A\n" + line + "\n")
    with pytest.raises(ValueError, match="bad.run: " + msg):
        read_runs(p)


def test_read_runs_bom_crlf_and_empty(tmp_path):
    p = _write(tmp_path, "w.run", b"\xef\xbb\xbfq1 Q0 d1 1 1 A\r\nq1 Q0 d2 2 2 A\r\n", mode="wb")
    assert _docs(read_runs(p), "A", 0) == ["d2", "d1"]
    with pytest.raises(ValueError, match="empty"):
        read_runs(_write(tmp_path, "e.run", "\n\n"))
    with pytest.raises(ValueError, match="UTF-16"):
        read_runs(_write(tmp_path, "u.run", "q1 Q0 d1 1 1 A\n".encode("utf-16"), mode="wb"))


def test_tie_order_matches_trec_eval():
    ir_measures = pytest.importorskip("ir_measures")
    runs_docs = [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    for relevant in "abc":
        qrels = [ir_measures.Qrel("1", d, int(d == relevant)) for d, _ in runs_docs]
        run = [ir_measures.ScoredDoc("1", d, s) for d, s in runs_docs]
        p1 = ir_measures.calc_aggregate([ir_measures.P @ 1], qrels, run)[ir_measures.P @ 1]
        # activerank's reader puts "c" (largest docid) first on ties, as trec_eval does
        assert p1 == float(relevant == "c")


def test_write_run_round_trip(tmp_path):
    data = ar.load_sample()
    r = ar.relevance.rank_by_scores(data.X[:, 3], data.offsets)
    p = tmp_path / "x.run"
    write_run(p, data, r, tag="f4")
    runs = read_runs(p)
    back = run_rankings_for_pool(runs, data)
    assert np.array_equal(back.items, r.items) and np.array_equal(back.offsets, r.offsets)
    with pytest.raises(ValueError, match="`tag` must be a non-empty string without whitespace"):
        write_run(p, data, r, tag="a b")


def test_run_rankings_for_pool_missing_documents(tmp_path):
    data = ar.load_sample()
    q0 = str(data.query_ids[0])
    p = _write(tmp_path, "r.run", f"{q0} Q0 {data.doc_ids[1]} 1 2 T\n{q0} Q0 nosuchdoc 2 1 T\n")
    runs = read_runs(p)
    with pytest.raises(ValueError, match="retrieves document 'nosuchdoc'"):
        run_rankings_for_pool(runs, data)
    r = run_rankings_for_pool(runs, data, missing="drop")
    assert r[0].tolist() == [1] and r.lengths[1:].sum() == 0
    with pytest.raises(ValueError, match="no `doc_ids`"):
        run_rankings_for_pool(runs, ar.Pool.from_qids(data.qids))


QRELS = "7 0 d1 2\n7 0 d2 0\n8 0 d3 1\n"


def test_read_qrels_labeler_and_labels_for(tmp_path):
    q = read_qrels(_write(tmp_path, "q.qrels", QRELS))
    assert q.judgments == {"7": {"d1": 2, "d2": 0}, "8": {"d3": 1}}
    assert q.n_judgments == 3 and q.max_grade == 2
    lab = q.labeler()
    assert lab(7, ["d2", "d1"]).tolist() == [0, 2]
    with pytest.raises(ValueError, match="no judgment for query '7', document 'zz'"):
        lab(7, ["zz"])
    assert q.labeler(missing=0)(7, ["zz"]).tolist() == [0]
    pool = ar.Pool(np.array([7, 8]), np.array([0, 2, 4]), np.array(["d1", "x", "d3", "y"], dtype=object))
    assert q.labels_for(pool).tolist() == [2, -1, 1, -1]


@pytest.mark.parametrize("text, msg", [
    ("7 0 d1\n", "line 1: a qrels line must have 4 fields"),
    ("7 0 d1 high\n", "line 1: grade 'high' is not an integer"),
    ("7 0 d1 3.5\n", "line 1: grade '3.5' is not an integer"),
    ("7 0 d1 -1\n", "line 1: grade -1 is negative"),
    ("7 0 d1 1\n7 0 d1 2\n", "line 2: query '7', document 'd1' has grade 2 but line 1 gave 1"),
    ("7 0 d1 5\n", r"line 1: grade 5 is outside the scale 0..2"),
])
def test_read_qrels_errors(tmp_path, text, msg):
    with pytest.raises(ValueError, match="q.qrels: " + msg):
        read_qrels(_write(tmp_path, "q.qrels", text), n_grades=3)


def test_read_qrels_negative_zero_and_write_round_trip(tmp_path):
    q = read_qrels(_write(tmp_path, "q.qrels", "7 0 d1 -2\n7 0 d2 1\n"), negative="zero")
    assert q.judgments == {"7": {"d1": 0, "d2": 1}}
    out = tmp_path / "out.qrels"
    assert write_qrels(out, q) == 2
    assert out.read_text() == "7 0 d1 0\n7 0 d2 1\n"
    assert read_qrels(out).judgments == q.judgments
    with pytest.raises(ValueError, match="contains whitespace"):
        write_qrels(out, {"7": {"a b": 1}})
    with pytest.raises(ValueError, match="is not an integer"):
        write_qrels(out, {"7": {"a": 1.5}})
    with pytest.raises(TypeError, match="must be a mapping"):
        write_qrels(out, [1])
    assert isinstance(q, Qrels)
