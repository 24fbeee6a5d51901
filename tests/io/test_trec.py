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


# --------------------------------------------------------------------------- columnar reader == line reader


def _random_run_files(tmp_path, rng, trial):
    paths = []
    for i in range(int(rng.integers(1, 4))):
        fmt = rng.choice(["int", "g", "e", "f"])
        lines, seen = [], set()
        for j in range(int(rng.integers(1, 3))):
            tag = f"T{i}{j}"
            for q in rng.permutation(5)[: rng.integers(1, 6)]:
                for r, dd in enumerate(rng.permutation(8)[: rng.integers(1, 9)]):
                    doc = rng.choice(["d", "D", "doc-", "é", "ß", "z", "a", "ü-"]) + str(dd)
                    if (tag, q, doc) in seen:
                        continue
                    seen.add((tag, q, doc))
                    sc = (int(rng.integers(0, 4)) if fmt == "int"
                          else float(rng.choice([0.5, 1.25, -3.0, 1e-5, 123456.789012, 0.1 + 0.2, 0.0])))
                    text = {"int": str(sc), "g": f"{sc:.17g}", "e": f"{sc:e}", "f": f"{sc:.6f}"}[str(fmt)]
                    sep = str(rng.choice([" ", "\t", "  "]))
                    lines.append(sep.join([f"q{q}", "Q0", doc, str(r + 1), text, tag]))
        text = "\n".join(lines) + str(rng.choice(["\n", "", "\n\n"]))
        if rng.random() < 0.3:
            text = text.replace("\n", "\r\n")
        data = text.encode()
        if rng.random() < 0.2:
            data = b"\xef\xbb\xbf" + data
        p = tmp_path / f"{trial}_{i}.run"
        p.write_bytes(data)
        paths.append(p)
    return paths


def test_columnar_reader_equals_line_reader(tmp_path):
    from activerank.io.trec import runs as trec

    rng = np.random.default_rng(7)
    n_fast = 0
    for trial in range(60):
        paths = _random_run_files(tmp_path, rng, trial)
        for queries in ("union", "intersection"):
            try:
                ref = trec._read_runs_lines(paths, "split", queries)
            except ValueError:
                with pytest.raises(ValueError):
                    read_runs(paths, queries=queries)
                continue
            got = trec._read_runs_columnar(paths, "split", queries)   # must not need the fallback
            n_fast += 1
            assert got.pool.query_ids.tolist() == ref.pool.query_ids.tolist()
            assert got.pool.doc_ids.tolist() == ref.pool.doc_ids.tolist()
            assert np.array_equal(got.pool.offsets, ref.pool.offsets)
            assert list(got.rankings) == list(ref.rankings)
            for tag in ref.rankings:
                assert np.array_equal(got.rankings[tag].items, ref.rankings[tag].items)
                assert np.array_equal(got.rankings[tag].offsets, ref.rankings[tag].offsets)
                assert np.array_equal(got.scores[tag], ref.scores[tag])
    assert n_fast > 60


@pytest.mark.parametrize("text", [
    "q1 Q0 d1 1_0 0.5 A\n",                  # int() accepts underscores: the line reader decides
    "q1 Q0 d1 1 1_0.5 A\n",
    "q1 Q0 d1 1 0.5 A\u00a0\n",              # a non-ASCII space: str.split() splits there
    "q1 Q0 d1 ١ 0.5 A\n",                    # an Arabic-Indic digit rank
    "q1 Q0 d1 1 12345678901234567890.5 A\n",  # beyond the exact fast path for floats
])
def test_unusual_spellings_read_as_the_line_reader_reads_them(tmp_path, text):
    from activerank.io.trec import runs as trec

    p = _write(tmp_path, "u.run", text)
    got, ref = read_runs(p), trec._read_runs_lines([p], "split", "union")
    assert got.pool.doc_ids.tolist() == ref.pool.doc_ids.tolist() and list(got.rankings) == list(ref.rankings)
    assert all(np.array_equal(got.scores[k], ref.scores[k]) for k in ref.scores)


# --------------------------------------------------------------------------- rankings from a mapping, grade bound


def test_rankings_from_dict(tmp_path):
    from activerank.io.trec import rankings_from_dict

    data = ar.load_sample()
    q0, q1 = data.query_ids[:2].tolist()
    d = data.doc_ids
    o = data.offsets
    r = rankings_from_dict({q1: [d[o[1] + 2], d[o[1]]], str(q0): [d[3], d[0], d[1]]}, data)
    assert r.n_queries == data.n_queries
    assert r[0].tolist() == [3, 0, 1] and r[1].tolist() == [o[1] + 2, o[1]] and r.lengths[2:].sum() == 0
    # {doc: score}: score descending, ties by doc id descending (as read_runs / trec_eval)
    r = rankings_from_dict({q0: {d[0]: 1.0, d[1]: 2.0, d[2]: 1.0}}, data)
    assert [d[i] for i in r[0]] == [d[1]] + sorted([d[0], d[2]], reverse=True)
    # the same as going through a run file
    p = tmp_path / "r.run"
    write_run(p, data, r, tag="x")
    assert np.array_equal(run_rankings_for_pool(read_runs(p), data).items, r.items)
    # a helper-built Rankings estimates like scores do
    probs = np.full((data.n_docs, 3), 1 / 3)
    res = ar.estimate(data, rankings_from_dict({q: list(d[o[i]:o[i + 1]]) for i, q in
                                                enumerate(data.query_ids.tolist())}, data),
                      probs, ar.KnownLabels.from_data(data), budget=40, metric="dcg@5", rng=0)
    assert np.isfinite(res.estimate)


@pytest.mark.parametrize("mapping, exc, msg", [
    ({"nope": ["a"]}, ValueError, r"`mapping` has query 'nope', which the pool lacks"),
    ({"18219": ["nodoc"]}, ValueError, r"`mapping`\['18219'\] lists document 'nodoc', which the pool lacks"),
    ({"18219": ["GX004-93-7097963", "GX004-93-7097963"]}, ValueError, r"lists document 'GX004-93-7097963' twice"),
    ({"18219": "GX004-93-7097963"}, TypeError, r"`mapping`\['18219'\] must be a sequence of document ids"),
    ({"18219": {"GX004-93-7097963": "high"}}, TypeError, r"must be a score \(a real number\); got 'high'"),
    ({"18219": {"GX004-93-7097963": float("nan")}}, ValueError, r"must be a finite score"),
    ([("18219", ["a"])], TypeError, r"`mapping` must be a mapping"),
])
def test_rankings_from_dict_errors(mapping, exc, msg):
    from activerank.io.trec import rankings_from_dict

    with pytest.raises(exc, match=msg):
        rankings_from_dict(mapping, ar.load_sample())


def test_rankings_from_dict_drop_and_pool_without_doc_ids():
    from activerank.io.trec import rankings_from_dict

    data = ar.load_sample()
    r = rankings_from_dict({"nope": ["x"], "18219": ["nodoc", "GX004-93-7097963"]}, data, missing="drop")
    assert r[0].tolist() == [0] and r.lengths.sum() == 1
    with pytest.raises(ValueError, match="`pool` must have `query_ids`, `offsets` and `doc_ids`"):
        rankings_from_dict({}, ar.Pool.from_qids(data.qids))
    with pytest.raises(ValueError, match="`missing` must be 'error' or 'drop'"):
        rankings_from_dict({}, data, missing="skip")


@pytest.mark.parametrize("grade, msg", [
    ("5000000", r"line 2: grade 5000000 is above 100, the largest supported grade"),
    ("100000000000000000000", r"line 2: grade 100000000000000000000 is outside the supported grade scale 0\.\.100"),
    ("1e20", r"line 2: grade '1e20' is not an integer"),
])
def test_qrels_grade_scale_is_bounded(tmp_path, grade, msg):
    p = _write(tmp_path, "big.qrels", f"7 0 d0 1\n7 0 d1 {grade}\n")
    with pytest.raises(ValueError, match=r"big\.qrels: " + msg):
        read_qrels(p)
    with pytest.raises(ValueError, match=r"`n_grades` must be at most 101"):
        read_qrels(p, n_grades=5000001)
