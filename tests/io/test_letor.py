"""Tests for activerank.io.letor: LETOR loading, validation, partitions and folds."""

import numpy as np
import pytest

from activerank.io.letor import (
    LetorData,
    concat,
    fold_partitions,
    letor_fold,
    load_letor,
    load_partitions,
    load_sample,
    ohsumed_doc_length,
)

from ..conftest import require_shared_data

LINES = [
    "2 qid:5 1:0.5 2:1 3:7 # docid = d1 inc = 1",
    "0 qid:5 1:0.1 2:0 3:3 # docid = d2",
    "1 qid:3 1:0.7 2:0.2 3:1 # docid = d3",
]


def write(tmp_path, lines, name="S1.txt"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


# ----------------------------------------------------------------- round trip


def test_round_trip_small_file(tmp_path):
    p = write(tmp_path, LINES)
    d = load_letor(p, n_grades=3, length_feature=3)
    assert d.n_queries == 2 and d.n_docs == 3 and d.n_features == 3
    np.testing.assert_array_equal(d.query_ids, [5, 3])
    np.testing.assert_array_equal(d.offsets, [0, 2, 3])
    np.testing.assert_array_equal(d.qids, [5, 5, 3])
    np.testing.assert_array_equal(d.labels, [2, 0, 1])
    np.testing.assert_allclose(d.X, [[0.5, 1, 7], [0.1, 0, 3], [0.7, 0.2, 1]])
    assert d.doc_ids.tolist() == ["d1", "d2", "d3"]
    np.testing.assert_allclose(d.doc_length, [7, 3, 1])
    assert d.X.dtype == np.float64 and d.labels.dtype == np.int64 and d.offsets.dtype == np.int64
    np.testing.assert_array_equal(d.lengths, [2, 1])

    # write it back in LETOR format and reload: identical
    out = []
    for r in range(d.n_docs):
        feats = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(d.X[r]))
        out.append(f"{d.labels[r]} qid:{d.qids[r]} {feats} #docid = {d.doc_ids[r]}")
    d2 = load_letor(write(tmp_path, out, "S2.txt"), n_grades=3)
    np.testing.assert_allclose(d2.X, d.X)
    np.testing.assert_array_equal(d2.labels, d.labels)
    np.testing.assert_array_equal(d2.offsets, d.offsets)
    assert d2.doc_ids.tolist() == d.doc_ids.tolist()


def test_infers_n_grades_and_no_docids(tmp_path):
    p = write(tmp_path, ["0 qid:1 1:1", "3 qid:1 1:2", "# a comment", "", "1 qid:2 1:0"])
    d = load_letor(p)
    assert d.n_grades == 4 and d.doc_ids is None and d.doc_length is None
    assert d.n_docs == 3


def test_unlabeled(tmp_path):
    d = load_letor(write(tmp_path, LINES), labeled=False, n_grades=3)
    assert d.labels is None and d.n_grades == 3
    with pytest.raises(ValueError, match="`n_grades` is required"):
        load_letor(write(tmp_path, LINES), labeled=False)


def test_arrays_are_read_only_and_callers_untouched():
    X = np.zeros((2, 1))
    d = LetorData(X=X, qids=[1, 1], query_ids=[1], offsets=[0, 2], labels=[0, 1], n_grades=2)
    assert X.flags.writeable
    with pytest.raises(ValueError):
        d.X[0, 0] = 1.0


# ----------------------------------------------------------------- bad input


def test_label_outside_scale_names_line(tmp_path):
    p = write(tmp_path, ["# header", LINES[0], LINES[1], "4 qid:3 1:1 2:1 3:1"])
    with pytest.raises(ValueError, match=r"line 4: label 4 is outside the grade scale 0\.\.2"):
        load_letor(p, n_grades=3)


def test_negative_label(tmp_path):
    p = write(tmp_path, ["-1 qid:3 1:1"])
    with pytest.raises(ValueError, match=r"line 1: label -1 is outside"):
        load_letor(p, n_grades=3)


def test_non_integer_label_names_line(tmp_path):
    p = write(tmp_path, [LINES[0], "0.5 qid:5 1:1"])
    with pytest.raises(ValueError, match=r"line 2: label 0\.5 is not an integer grade"):
        load_letor(p, n_grades=3)


def test_feature_count_mismatch_names_line(tmp_path):
    p = write(tmp_path, [LINES[0], LINES[1], "1 qid:3 1:0.7 2:0.2 3:1 4:9"])
    with pytest.raises(ValueError, match=r"line 3 has feature index 4, but n_features=3"):
        load_letor(p, n_grades=3, n_features=3)


def test_feature_count_too_few(tmp_path):
    p = write(tmp_path, LINES)
    with pytest.raises(ValueError, match=r"at most 3 features per line, but n_features=46"):
        load_letor(p, n_features=46)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.txt"
    p.write_text("")
    with pytest.raises(ValueError, match="file is empty"):
        load_letor(p)
    p.write_text("# only a comment\n\n")
    with pytest.raises(ValueError, match="file is empty"):
        load_letor(p)


def test_non_contiguous_qids_names_query(tmp_path):
    p = write(tmp_path, [LINES[0], LINES[2], LINES[1]])
    with pytest.raises(ValueError, match=r"query qid:5 is not contiguous.*line 1.*reappears at line 3"):
        load_letor(p, n_grades=3)


def test_missing_qid(tmp_path):
    p = write(tmp_path, [LINES[0], "1 1:0.3"])
    with pytest.raises(ValueError, match=r"line 2 has no 'qid:' field"):
        load_letor(p, n_grades=3)


def test_unparsable(tmp_path):
    p = write(tmp_path, ["1 qid:1 1:abc"])
    with pytest.raises(ValueError, match=r"S1\.txt: line 1: feature 1 has value 'abc', not a number"):
        load_letor(p)


@pytest.mark.parametrize("line, message", [
    ("abc qid:5 1:1", r"line 3: label 'abc' is not a number"),
    ("1 qid:5 0:0.5", r"line 3: feature index 0 is invalid \(LETOR/SVMlight feature indices are 1-based"),
    ("1 qid:5 -3:0.5", r"line 3: feature index -3 is invalid"),
    ("1 qid:5 1:0.5 1:0.6", r"line 3: feature index 1 appears twice"),
    ("1 qid:5 2:0.5 1:0.6", r"line 3: feature index 1 follows 2 \(indices must increase"),
    ("1 qid:5 1:", r"line 3: feature 1 has value '', not a number"),
    ("1 qid:5 x", r"line 3: 'x' is not an 'index:value' feature"),
    ("1 qid:five 1:1", r"line 3: query id 'qid:five' is not an integer"),
    ("1 qid:99999999999999999999 1:1", r"line 3: query id 'qid:99999999999999999999' does not fit"),
    ("1 qid:5 1:nan", r"line 3: feature 1 is nan; feature values must be finite"),
    ("1 qid:5 2:-inf", r"line 3: feature 2 is -inf; feature values must be finite"),
    ("99999999999999999999999 qid:5 1:1", r"line 3: label 99999999999999999999999 is above 100, the largest "
                                          r"supported grade"),
    ("5000000 qid:5 1:1", r"line 3: label 5000000 is above 100"),
    ("1 qid:5 999999999:1", r"line 3: feature index 999999999 is above 100000, the largest read without "
                            r"`n_features` \(features are stored dense: 2 x 999999999 values would need 14\.9 GiB"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    p = write(tmp_path, ["# header", LINES[0], line])
    with pytest.raises(ValueError, match=r"S1\.txt: " + message):
        load_letor(p)


def test_binary_and_utf16_files(tmp_path):
    p = tmp_path / "bin.txt"
    p.write_bytes(b"0 qid:1 1:0.1\n\x00\x01\x02 garbage\n")
    with pytest.raises(ValueError, match=r"bin\.txt: line 2: binary data \(a NUL byte\)"):
        load_letor(p)
    p.write_bytes(b"0 qid:1 1:0.1\n\xff\xfe\xfa qid:1 1:2\n")
    with pytest.raises(ValueError, match=r"bin\.txt: line 2: not valid UTF-8 text"):
        load_letor(p)
    p.write_bytes("0 qid:1 1:0.1\n".encode("utf-16"))
    with pytest.raises(ValueError, match=r"bin\.txt: line 1: file is UTF-16 encoded"):
        load_letor(p)


def test_huge_label_with_scale_reports_the_written_value(tmp_path):
    p = write(tmp_path, ["99999999999999999999999 qid:1 1:1"])
    with pytest.raises(ValueError, match=r"line 1: label 99999999999999999999999 is outside the grade scale "
                                         r"0\.\.2 \(n_grades=3\)"):
        load_letor(p, n_grades=3)
    with pytest.raises(ValueError, match=r"`n_grades` must be at most 101"):
        load_letor(p, n_grades=5000001)
    # an explicit n_features lifts the dense-size guard (the user asked for it)
    d = load_letor(write(tmp_path, ["1 qid:1 150000:1"], "wide.txt"), n_features=150000)
    assert d.X.shape == (1, 150000) and d.X[0, -1] == 1


def test_option_validation(tmp_path):
    p = write(tmp_path, LINES)
    with pytest.raises(ValueError, match="`n_grades` must be an integer >= 2"):
        load_letor(p, n_grades=1)
    with pytest.raises(ValueError, match="`n_features` must be a positive integer"):
        load_letor(p, n_features=0)
    with pytest.raises(ValueError, match="`length_feature` is a 1-based feature number"):
        load_letor(p, length_feature=0)
    with pytest.raises(TypeError, match="`length_feature` must be a 1-based feature number"):
        load_letor(p, length_feature="f20")
    with pytest.raises(ValueError, match="`length_feature`=9 but the file has only 3 features"):
        load_letor(p, length_feature=9)
    with pytest.raises(ValueError, match="`length_path` requires `length_feature`"):
        load_letor(p, length_path=p)
    with pytest.raises(ValueError, match=r"`length_feature\(X\)` must have one value per document"):
        load_letor(p, length_feature=lambda X: np.ones(2))
    with pytest.raises(ValueError, match=r"`feature 1` must be finite and non-negative; row 0"):
        load_letor(write(tmp_path, ["1 qid:1 1:-1"], "neg.txt"), length_feature=1)


def test_length_path_must_match(tmp_path):
    a = write(tmp_path, LINES, "a.txt")
    b = write(tmp_path, LINES[:2], "b.txt")
    with pytest.raises(ValueError, match="does not match"):
        load_letor(a, length_path=b, length_feature=3)
    c = write(tmp_path, [LINES[0], LINES[1], LINES[2].replace("d3", "zz")], "c.txt")
    with pytest.raises(ValueError, match="line 3 has docid 'd3' vs 'zz'"):
        load_letor(a, length_path=c, length_feature=3)
    d = load_letor(a, length_path=write(tmp_path, LINES, "twin.txt"), length_feature=1)
    np.testing.assert_allclose(d.doc_length, [0.5, 0.1, 0.7])


def test_letordata_validation():
    kw = dict(X=np.zeros((2, 1)), qids=[1, 1], query_ids=[1], offsets=[0, 2], n_grades=3)
    with pytest.raises(ValueError, match=r"`labels` must lie in 0\.\.2 \(n_grades=3\); row 1 has label 3"):
        LetorData(labels=[0, 3], **kw)
    with pytest.raises(ValueError, match="`offsets` must have length n_queries"):
        LetorData(**{**kw, "offsets": [0, 1]})
    with pytest.raises(ValueError, match="`qids` must equal `query_ids` repeated"):
        LetorData(**{**kw, "qids": [1, 2]})
    with pytest.raises(ValueError, match="`n_grades` must be an integer >= 2"):
        LetorData(**{**kw, "n_grades": 1})
    with pytest.raises(ValueError, match="`doc_length` must have one value per document"):
        LetorData(doc_length=[1.0], **kw)


# ----------------------------------------------------------------- subset / concat


def test_subset_and_concat():
    d = load_sample()
    s = d.subset([3, 1])
    np.testing.assert_array_equal(s.query_ids, d.query_ids[[3, 1]])
    rows = np.r_[d.offsets[3] : d.offsets[4], d.offsets[1] : d.offsets[2]]
    np.testing.assert_array_equal(s.X, d.X[rows])
    np.testing.assert_array_equal(s.labels, d.labels[rows])
    assert s.doc_ids.tolist() == d.doc_ids[rows].tolist()
    np.testing.assert_array_equal(s.offsets, [0, d.lengths[3], d.lengths[3] + d.lengths[1]])
    mask = np.zeros(d.n_queries, bool)
    mask[[1, 3]] = True
    np.testing.assert_array_equal(d.subset(mask).query_ids, d.query_ids[[1, 3]])
    assert d.subset([]).n_docs == 0
    assert d.subset([-1]).query_ids[0] == d.query_ids[-1]

    c = concat([d.subset(np.arange(10)), d.subset(np.arange(10, 30))])
    np.testing.assert_array_equal(c.X, d.X)
    np.testing.assert_array_equal(c.offsets, d.offsets)
    assert c.doc_ids.tolist() == d.doc_ids.tolist()
    np.testing.assert_array_equal(c.doc_length, d.doc_length)


def test_subset_and_concat_errors():
    d = load_sample()
    with pytest.raises(ValueError, match="`queries` index 30 is out of range for 30 queries"):
        d.subset([30])
    with pytest.raises(ValueError, match=r"boolean mask must have shape \(30,\)"):
        d.subset(np.ones(3, bool))
    with pytest.raises(TypeError, match="`queries` must be integer indices"):
        d.subset([0.5])
    with pytest.raises(ValueError, match="query qid:18219 occurs in more than one"):
        concat([d.subset([0]), d.subset([0])])
    with pytest.raises(ValueError, match="at least one"):
        concat([])
    with pytest.raises(TypeError, match=r"`datasets\[0\]` must be a LetorData"):
        concat([1])


# ----------------------------------------------------------------- the block reader


def _same(a, b):
    for k in ("X", "qids", "query_ids", "offsets", "labels"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.n_grades == b.n_grades
    assert (a.doc_ids is None) == (b.doc_ids is None)
    if a.doc_ids is not None:
        assert a.doc_ids.tolist() == b.doc_ids.tolist()


MIXED = [
    "# a header docid = not-a-document",
    "2 qid:5 1:0.5 2:1 # docid = d1 inc = 1",
    "",
    "  0\tqid:5 3:3\r",
    "1 qid:-3 1:0.7 2:0.2 #docid=d3",
    "0 qid:+8 2:1e-3",
    "1 qid:8 4:9 # no id here",
    " " * 100 + "1 qid:0009 1:2 # docid =\td9",     # long runs finish one by one after the vectorized steps
]


@pytest.mark.parametrize("block", [1, 7, 50, 1 << 26])
def test_blocks_of_any_size_give_the_same_data(tmp_path, monkeypatch, block):
    from activerank.io import _svmlight

    p = tmp_path / "S1.txt"
    p.write_bytes("\n".join(MIXED).encode())                       # no newline at the end
    whole = load_letor(p)
    assert whole.query_ids.tolist() == [5, -3, 8, 9] and whole.offsets.tolist() == [0, 2, 3, 5, 6]
    assert whole.doc_ids.tolist() == ["d1", "", "d3", "", "", "d9"]
    assert whole.X.shape == (6, 4) and whole.X[1, 2] == 3 and whole.X[3, 1] == 1e-3
    monkeypatch.setattr(_svmlight.blocks, "__defaults__", (block,))
    _same(load_letor(p), whole)


def test_errors_name_the_file_line_across_blocks(tmp_path, monkeypatch):
    from activerank.io import _svmlight

    monkeypatch.setattr(_svmlight.blocks, "__defaults__", (64,))
    good = [f"{q % 3} qid:{q} 1:0.5 2:{q}" for q in range(40)]
    p = write(tmp_path, good[:25] + ["1 qid:25 1:x"] + good[26:])
    with pytest.raises(ValueError, match=r"S1\.txt: line 26: feature 1 has value 'x', not a number"):
        load_letor(p)
    p = write(tmp_path, good + [good[3]])
    with pytest.raises(ValueError, match=r"query qid:3 is not contiguous: its lines start at line 4 and it "
                                         r"reappears at line 41"):
        load_letor(p)
    p = write(tmp_path, good[:30] + ["7 qid:30 1:1"] + good[31:])
    with pytest.raises(ValueError, match=r"line 31: label 7 is outside the grade scale 0\.\.2 \(n_grades=3\)"):
        load_letor(p, n_grades=3)
    p = write(tmp_path, good[:33] + ["1 qid:33 1:1 200001:1"] + good[34:])
    with pytest.raises(ValueError, match=r"line 34: feature index 200001 is above 100000.*40 x 200001 values"):
        load_letor(p)


def test_qid_must_be_spelled_qid_colon(tmp_path):
    # sklearn's reader skips any second token starting with "qid" (so "qidx:3" read as query 3)
    for token in ("qidx:3", "qid3:3", "qid=:3"):
        with pytest.raises(ValueError, match=r"line 2 has no 'qid:' field"):
            load_letor(write(tmp_path, [LINES[0], f"1 {token} 1:1"]))
    with pytest.raises(ValueError, match=r"line 2: query id 'qid:qid:3' is not an integer"):
        load_letor(write(tmp_path, [LINES[0], "1 qid:qid:3 1:1"]))


def test_non_contiguous_queries_are_found_without_quadratic_search(tmp_path):
    lines = [f"0 qid:{q} 1:1" for q in range(2000)] * 2             # every query reappears
    with pytest.raises(ValueError, match=r"query qid:0 is not contiguous: its lines start at line 1 and it "
                                         r"reappears at line 2001"):
        load_letor(write(tmp_path, lines))


# ----------------------------------------------------------------- sample, ohsumed length, folds


def test_sample():
    d = load_sample()
    assert (d.n_queries, d.n_docs, d.n_features, d.n_grades) == (30, 607, 46, 3)
    assert set(np.unique(d.labels)) == {0, 1, 2}
    np.testing.assert_array_equal(d.doc_length, d.X[:, 19])
    tr = load_sample("train")
    assert (tr.n_queries, tr.n_docs) == (40, 618)
    assert not set(tr.query_ids) & set(d.query_ids)
    with pytest.raises(ValueError, match="`split` must be one of"):
        load_sample("vali")


def test_ohsumed_doc_length():
    X = np.zeros((4, 45))
    X[0, [30, 32]] = [10.0, 0.1]
    X[1, [0, 2, 15, 17]] = [2.0, 0.5, 3.0, 0.05]
    X[2, [15, 17]] = [3.0, 0.1]
    out = ohsumed_doc_length(X)
    np.testing.assert_allclose(out, [100.0, 64.0, 30.0, 64.0])
    assert np.all(np.isfinite(out)) and np.all(out > 0)
    with pytest.raises(ValueError, match="at least 33 raw OHSUMED feature columns"):
        ohsumed_doc_length(np.zeros((2, 10)))


def test_fold_partitions():
    assert fold_partitions(1) == ([1, 2, 3], 4, 5)
    assert fold_partitions(5) == ([5, 1, 2], 3, 4)
    with pytest.raises(ValueError, match=r"`fold` must be an integer in 1\.\.5"):
        fold_partitions(6)


def test_load_partitions_errors(tmp_path):
    write(tmp_path, LINES, "S1.txt")
    write(tmp_path, ["1 qid:9 1:1 2:1"], "S2.txt")
    with pytest.raises(ValueError, match=r"S3\.txt does not exist"):
        load_partitions(tmp_path, [1, 3])
    with pytest.raises(ValueError, match=r"S2\.txt: file has at most 2 features per line, but n_features=3"):
        load_partitions(tmp_path, [1, 2])
    with pytest.raises(ValueError, match="must not repeat"):
        load_partitions(tmp_path, [1, 1])
    with pytest.raises(ValueError, match="at least one partition"):
        load_partitions(tmp_path, [])


def test_mq2008_fold1():
    tr, va, te = letor_fold(require_shared_data("mq2008"), 1, length_feature=20)
    assert (tr.n_queries, va.n_queries, te.n_queries) == (471, 157, 156)
    assert tr.n_docs + va.n_docs + te.n_docs == 15211
    assert tr.n_grades == va.n_grades == te.n_grades == 3
    # the shipped sample is the head of S5
    s = load_sample()
    np.testing.assert_array_equal(te.subset(np.arange(30)).X, s.X)


def test_ohsumed_with_raw_length():
    root = require_shared_data("ohsumed-letor3")
    d = load_partitions(
        f"{root}/QueryLevelNorm", [1], length_root=f"{root}/Feature-min", length_feature=ohsumed_doc_length
    )
    assert (d.n_queries, d.n_docs, d.n_features) == (21, 2570, 45)
    assert 80 < np.median(d.doc_length) < 130
    assert np.all(d.doc_length > 0)
