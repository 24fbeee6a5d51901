"""Judge outputs: every source form, matched to the pool by id; bad files name the line."""

import json

import numpy as np
import pandas as pd
import pytest

import activerank as ar
from activerank.judges import JudgeOutputs, read_judge


@pytest.fixture
def pool():
    return ar.Pool.from_qids(["q1", "q1", "q1", "q2", "q2"], doc_ids=["a", "b", "c", "d", "e"])


def test_qrels_like_file(tmp_path, pool):
    p = tmp_path / "llm.txt"
    p.write_text("q1 0 a 2\nq1 0 c 0\n\nq2 0 e 1\n")
    j = read_judge(p, pool, levels=3)
    assert j.name == "llm.txt" and j.kind == "grades" and j.levels == 3
    np.testing.assert_array_equal(j.values, [2, np.nan, 0, np.nan, 1])
    assert j.judged.tolist() == [True, False, True, False, True]
    assert repr(j) == "JudgeOutputs(name='llm.txt', kind='grades', levels=3, judged=3 of 5)"


def test_dataframe_dict_tsv_and_jsonl_agree(tmp_path, pool):
    rows = [("q1", "a", 0.1, 0.9), ("q2", "d", 0.75, 0.25)]
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "p0", "p1"])
    (tmp_path / "j.tsv").write_text("qid\tdocid\tp0\tp1\n" + "".join(f"{q}\t{d}\t{a}\t{b}\n" for q, d, a, b in rows))
    (tmp_path / "j.jsonl").write_text("".join(json.dumps({"qid": q, "doc_id": d, "probs": [a, b]}) + "\n"
                                              for q, d, a, b in rows))
    as_dict = {"q1": {"a": [0.1, 0.9]}, "q2": {"d": [0.75, 0.25]}}
    got = [read_judge(s, pool, kind="probabilities") for s in (df, tmp_path / "j.tsv", tmp_path / "j.jsonl", as_dict)]
    for j in got:
        assert j.kind == "probabilities" and j.levels == 2
        np.testing.assert_allclose(j.values[[0, 3]], [[0.1, 0.9], [0.75, 0.25]])
        assert np.isnan(j.values[[1, 2, 4]]).all()


def test_log_probabilities_and_scores(pool):
    j = read_judge({"q1": {"b": [np.log(0.5), np.log(0.5)]}}, pool, kind="log_probabilities")
    assert j.kind == "probabilities"
    np.testing.assert_allclose(j.values[1], [0.5, 0.5])
    s = read_judge(pd.DataFrame({"qid": ["q2"], "docid": ["e"], "score": [-3.5]}), pool, kind="scores")
    assert s.levels is None and s.values[4] == -3.5


def test_pairs_outside_the_pool_are_refused_with_a_sample(tmp_path, pool):
    p = tmp_path / "j.txt"
    p.write_text("q1 0 a 1\nq1 0 zz 1\nq9 0 a 0\n")
    with pytest.raises(ValueError, match=r"2 of 3 rows name .* not in the pool, e\.g\. .*line 2 \(query 'q1', "
                                         r"document 'zz'\)"):
        read_judge(p, pool, levels=2)


@pytest.mark.parametrize("text, kind, match", [
    ("q1 0 a 1\nq1 0 a 1\n", "grades", r"line 2: query 'q1', document 'a' is judged twice \(first at line 1"),
    ("q1 0 a 3\n", "grades", r"line 1: grade 3 is not on the judge's declared scale 0\.\.2"),
    ("q1 0 a 1.5\n", "grades", r"line 1: grade 1\.5 is not on"),
    ("q1 0 a x\n", "grades", r"line 1: 'x' is not a number"),
    ("q1 0 a nan\n", "scores", r"line 1: nan is not a finite score"),
    ("q1 a 1\n", "grades", r"line 1: a judge line must have 4 fields"),
])
def test_bad_lines_are_named(tmp_path, pool, text, kind, match):
    p = tmp_path / "j.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_judge(p, pool, kind=kind, levels=3 if kind == "grades" else None)


def test_probabilities_that_do_not_sum_to_one(tmp_path, pool):
    p = tmp_path / "j.tsv"
    p.write_text("qid\tdocid\tp0\tp1\tp2\nq1\ta\t0.2\t0.3\t0.5\n\nq1\tb\t0.2\t0.2\t0.2\n")
    with pytest.raises(ValueError, match=r"j\.tsv: line 4: probabilities sum to 0\.6, not 1"):
        read_judge(p, pool, kind="probabilities")
    with pytest.raises(ValueError, match="3 probability columns, but `levels`=4"):
        read_judge(pd.DataFrame({"qid": ["q1"], "docid": ["a"], "p0": [1], "p1": [0], "p2": [0]}), pool,
                   kind="probabilities", levels=4)
    with pytest.raises(ValueError, match=r"DataFrame row 0: probabilities must lie in \[0, 1\]"):
        read_judge(pd.DataFrame({"qid": ["q1"], "docid": ["a"], "p0": [1.5], "p1": [-0.5]}), pool,
                   kind="probabilities")


def test_argument_errors(pool, tmp_path):
    with pytest.raises(ValueError, match="`levels` is required for kind='grades'"):
        read_judge({"q1": {"a": 1}}, pool)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        read_judge({"q1": {"a": 1}}, pool, kind="labels")
    with pytest.raises(TypeError, match="`source` must be a path, a pandas DataFrame or a dict"):
        read_judge([1, 2], pool, levels=2)
    with pytest.raises(ValueError, match="no query id column"):
        read_judge(pd.DataFrame({"q": ["q1"], "docid": ["a"], "grade": [1]}), pool, levels=2)
    got = read_judge(pd.DataFrame({"q": ["q1"], "d": ["a"], "g": [1]}), pool, levels=2,
                     columns={"query": "q", "doc": "d", "value": "g"})
    assert got.values[0] == 1
    p = tmp_path / "j.txt"
    p.write_text("q1 0 a 1\n")
    with pytest.raises(ValueError, match="need a table"):
        read_judge(p, pool, kind="probabilities")


def test_pool_without_doc_ids_matches_row_numbers():
    pool = ar.Pool.from_qids([7, 7, 9])
    j = read_judge({7: {1: 1}, 9: {2: 0}}, pool, levels=2)
    np.testing.assert_array_equal(j.values, [np.nan, 1, 0])
    assert isinstance(j, JudgeOutputs)


def test_duplicate_dataframe_rows_and_pool_ids():
    pool = ar.Pool.from_qids(["q1", "q1"], doc_ids=["a", "b"])
    df = pd.DataFrame({"qid": ["q1", "q1", "q1"], "docid": ["a", "b", "a"], "grade": [1, 0, 1]})
    with pytest.raises(ValueError, match=r"DataFrame row 2: query 'q1', document 'a' is judged twice \(first at "
                                         r"DataFrame row 0"):
        read_judge(df, pool, levels=2)
    twice = ar.Pool.from_qids(["q1", "q1"], doc_ids=["a", "a"])
    with pytest.raises(ValueError, match="the pool names document 'a' twice in query 'q1'"):
        read_judge({"q1": {"a": 1}}, twice, levels=2)
    with pytest.raises(ValueError, match=r"query 'q1', document 'a': True is not a number"):
        read_judge({"q1": {"a": True}}, pool, levels=2)
