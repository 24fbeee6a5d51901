import numpy as np
import pytest

from activerank.pool import Pool
from activerank.design.costs import document_costs, judged_union, query_costs
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


def _old_query_costs_raw(doc, rankings, k):
    """The implementation before the sort-free union: np.unique on (query, row) keys."""
    n = doc.size
    keys = np.unique(np.concatenate([r.truncate(k).query_index() * n + r.truncate(k).items for r in rankings]))
    return np.bincount(keys // n, doc[keys % n], minlength=rankings[0].n_queries)


def _random_rankings(rng, n_queries, n_rankings, *, layout):
    """Rankings of a pool whose rows are numbered query by query, shuffled, or shared between queries."""
    lengths = rng.integers(1, 9, n_queries)
    offsets = np.r_[0, np.cumsum(lengths)]
    n_docs = int(offsets[-1])
    relabel = rng.permutation(n_docs) if layout == "shuffled" else np.arange(n_docs)
    out = []
    for _ in range(n_rankings):
        lists = []
        for q in range(n_queries):
            rows = relabel[offsets[q]:offsets[q + 1]]
            if layout == "shared" and q % 4 == 0:
                rows = np.unique(np.r_[rows, rng.integers(0, n_docs, 2)])
            keep = rng.random(rows.size) < 0.8
            keep[0] = True  # every query ranks something (a query with nothing to judge is an error)
            lists.append(rng.permutation(rows[keep]))
        out.append(Rankings.from_list(lists))
    return out, n_docs


@pytest.mark.parametrize("layout", ["pool", "shuffled", "shared"])
@pytest.mark.parametrize("n_rankings", [1, 2, 3])
@pytest.mark.parametrize("k", [None, 2])
def test_judged_union_equals_unique_and_costs_are_bit_identical(layout, n_rankings, k):
    rng = np.random.default_rng([len(layout), n_rankings, k or 0])
    rankings, n_docs = _random_rankings(rng, 60, n_rankings, layout=layout)
    tops = [r.truncate(k) for r in rankings]
    keys = np.unique(np.concatenate([r.query_index() * n_docs + r.items for r in tops]))
    query, rows = judged_union(tops, n_docs)
    np.testing.assert_array_equal(query, keys // n_docs)
    np.testing.assert_array_equal(rows, keys % n_docs)
    doc = rng.uniform(0.1, 5.0, n_docs)
    raw = query_costs(doc, rankings, k=k).raw
    # same summation order as the np.unique implementation: equal to the last bit
    np.testing.assert_array_equal(raw, _old_query_costs_raw(doc, rankings, k))


def test_judged_union_edge_cases():
    empty = Rankings.from_list([[], []])
    q, r = judged_union([empty, empty], 3)
    assert q.size == 0 and r.size == 0
    # the same row listed by two queries is judged once per query
    a = Rankings.from_list([[1, 0], [1]])
    q, r = judged_union([a, a], 2)
    assert q.tolist() == [0, 0, 1] and r.tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match="`rankings` must all cover the same queries"):
        judged_union([a, Rankings.from_list([[0]])], 2)
