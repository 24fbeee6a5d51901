"""Labelers: answers validated against the grade scale; known labels for simulations."""

import numpy as np
import pytest

import activerank as ar
from activerank.labelers import CallableLabeler, KnownLabels, LabelingError, check_grades


def test_known_labels_by_row_and_by_doc_id():
    lab = KnownLabels([7, 9], [0, 2, 3], [0, 2, 1])
    assert lab(7, [1, 0]).tolist() == [2, 0] and lab.n_calls == 1
    with pytest.raises(ValueError, match="no document 2"):
        lab(7, [2])
    with pytest.raises(ValueError, match="no query with id 8"):
        lab(8, [0])
    named = KnownLabels([7, 9], [0, 2, 3], [0, 2, 1], doc_ids=["a", "b", "c"])
    assert named(9, ["c"]).tolist() == [1]
    data = ar.load_sample()
    assert KnownLabels.from_data(data)(int(data.query_ids[0]), [data.doc_ids[0]]).tolist() == [data.labels[0]]


def test_check_grades_rules():
    assert check_grades([0, 2.0, np.int64(1)], "q", ["a", "b", "c"], 3).tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match=r"returned 1 grades for query 'q', which has 2 documents"):
        check_grades([1], "q", ["a", "b"], 3)
    for bad in (3, -1, 1.5, np.nan, "high", True):
        with pytest.raises(ValueError, match=r"integers on the scale 0..2: query 'q', document 'a'"):
            check_grades([bad], "q", ["a"], 3)


def test_callable_labeler_and_error_carries_judgments():
    with pytest.raises(TypeError, match="`fn` must be callable"):
        CallableLabeler(3)
    assert CallableLabeler(lambda q, d: [1] * len(d))(1, ["x", "y"]) == [1, 1]
    err = LabelingError("boom", judgments={1: {"x": 2}})
    assert isinstance(err, ValueError) and err.judgments == {1: {"x": 2}} and err.trace is None
