import numpy as np
import pytest

from activerank.pool import Pool
from activerank.design.costs import document_costs, query_costs
from activerank.ragged import Rankings


def test_log_length_costs_guard_short_documents():
    pool = Pool.from_qids([1, 1, 1], doc_length=np.array([0.0, 1.0, 100.0]))
    c, name = document_costs(pool, 3, "auto")
    assert name == "log_length"
    np.testing.assert_allclose(c, [np.log(2), np.log(2), np.log(100)])


def test_constant_when_no_length():
    c, name = document_costs(Pool.from_qids([1, 2]), 2, "auto")
    assert name == "constant" and c.tolist() == [1.0, 1.0]


def test_union_of_top_k_and_normalization():
    a = Rankings.from_list([[0, 1, 2], [3, 4]])
    b = Rankings.from_list([[2, 1, 0], [4, 5]])
    doc = np.array([1.0, 2.0, 4.0, 1.0, 1.0, 1.0])
    qc = query_costs(doc, [a, b], k=2)
    # query 0: top-2 union {0,1} u {2,1} = {0,1,2} -> 7; query 1: {3,4} u {4,5} -> 3
    np.testing.assert_allclose(qc.raw, [7.0, 3.0])
    assert qc.cost.mean() == pytest.approx(1.0) and qc.scale == pytest.approx(5.0)
    uni = query_costs(doc, [a, b], per_query=True)
    np.testing.assert_allclose(uni.cost, [1.0, 1.0])


@pytest.mark.parametrize("costs, match", [
    (np.array([1.0, 0.0]), r"`costs` must be finite and > 0; document row 1 has 0.0"),
    (np.array([1.0, np.nan]), r"`costs` must be finite and > 0; document row 1"),
    (np.array([1.0, np.inf]), r"`costs` must be finite and > 0; document row 1"),
    (np.array([1.0]), r"`costs` must have one entry per document \(2\); got 1"),
    ("bogus", r"`costs` must be one of"),
])
def test_bad_costs(costs, match):
    with pytest.raises(ValueError, match=match):
        document_costs(Pool.from_qids([1, 1]), 2, costs)


def test_log_length_without_lengths():
    with pytest.raises(ValueError, match=r"`costs`='log_length' needs document lengths"):
        document_costs(Pool.from_qids([1, 1]), 2, "log_length")


def test_callable_costs():
    c, name = document_costs(Pool.from_qids([1, 1]), 2, lambda pool: [2.0, 3.0])
    assert name == "callable" and c.tolist() == [2.0, 3.0]
