"""Targets that judge only the documents that can change a contrast (``judge="changeable"``)."""

import itertools
import zlib

import numpy as np
import pytest

from activerank.design.costs import query_costs
from activerank.design.design import build_design
from activerank.design.methods import get_method
from activerank.design.targets import make_target
from activerank.metrics import parse_metric
from activerank.metrics.values import label_matrix_values
from activerank.ragged import Rankings

METRICS = ("dcg@3", "dcg", "err@3", "err", "p@2", "rbp(p=0.7)@3", "rr")


def _random_case(rng, n_systems):
    """Two tiny queries (2-4 documents each, rows numbered query by query) and ``n_systems`` rankings."""
    lengths = rng.integers(2, 5, 2)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rankings = []
    for _ in range(n_systems):
        lists = []
        for x in range(lengths.size):
            docs = rng.permutation(np.arange(offsets[x], offsets[x + 1]))
            # a system may drop documents (index update) or keep the others' order
            keep = rng.integers(1, docs.size + 1)
            lists.append(docs[:keep].tolist() if rng.random() < 0.5 else sorted(docs[:keep].tolist()))
        rankings.append(Rankings.from_list(lists))
    return offsets, rankings


def _all_contrasts(target, n_docs, n_grades):
    """Every contrast of every query for every label vector, shape (n_queries, n_outputs, G, ..., G)."""
    Y = np.array(list(itertools.product(range(n_grades), repeat=n_docs))).T  # (n_docs, G^n)
    vals = np.stack([label_matrix_values(target.metric, n_grades, r, Y[r.items]) for r in target.rankings],
                    axis=-1)  # (n_queries, G^n, n_systems)
    out = target.outputs(vals)  # (n_queries, G^n, n_outputs)
    return np.moveaxis(out, 1, 2).reshape(out.shape[0], out.shape[2], *([n_grades] * n_docs))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kind", ["difference", "baseline", "ranking"])
def test_judged_documents_are_exactly_those_that_can_change_a_contrast(metric, kind):
    """By enumeration of every label vector of tiny pools: a document left out never moves any contrast;
    for additive metrics every judged document moves one for some label vector (the rule is exact)."""
    m = parse_metric(metric)
    rng = np.random.default_rng(zlib.crc32(f"{metric}/{kind}".encode()))
    n_grades = 3
    for _ in range(6):
        offsets, rankings = _random_case(rng, 2 if kind == "difference" else 3)
        full = make_target(kind, rankings, m)
        t = make_target(kind, rankings, m, judge="changeable")
        assert t.judge == "changeable" and full.judge == "all"
        n = int(offsets[-1])
        C = _all_contrasts(full, n, n_grades)
        moves = np.array([np.ptp(C, axis=2 + z).max() > 1e-12 for z in range(n)])
        for x in range(offsets.size - 1):
            judged = set(t.documents(x).tolist())
            listed = set(full.documents(x).tolist())
            assert judged <= listed
            for z in listed - judged:
                assert not moves[z], (metric, kind, x, z)
            if m.family == "additive":
                assert judged == {z for z in listed if moves[z]}
            # determined <=> nothing to judge
            assert t.determined[x] == (len(judged) == 0)
            # documents keep the order of first appearance
            assert t.documents(x).tolist() == [z for z in full.documents(x).tolist() if z in judged]


def test_costs_count_only_changeable_documents_in_the_unit_of_whole_queries():
    # query 0: document 0 keeps rank 1 (cancels), 1 and 2 swap; query 1: identical lists (determined);
    # query 2: b drops document 6, so 7 moves up
    a = Rankings.from_list([[0, 1, 2], [3, 4], [5, 6, 7]])
    b = Rankings.from_list([[0, 2, 1], [3, 4], [5, 7]])
    doc_costs = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    m = parse_metric("dcg@3")
    t = make_target("difference", [a, b], m, judge="changeable")
    assert [t.documents(x).tolist() for x in range(3)] == [[1, 2], [], [6, 7]]
    assert t.determined.tolist() == [False, True, False]
    probs = np.full((8, 3), 1 / 3)
    p = np.full(3, 1 / 3)
    dsg = build_design(t, probs, method=get_method("active"), p=p, doc_costs=doc_costs, cost_model="array",
                       per_query_cost=False, defensive=0.1)
    full_raw = np.array([6.0, 9.0, 21.0])
    np.testing.assert_allclose(dsg.costs.raw, [5.0, 0.0, 15.0])
    np.testing.assert_allclose(dsg.costs.cost, dsg.costs.raw / full_raw.mean())
    assert dsg.costs.scale == pytest.approx(full_raw.mean())
    # the determined query is never drawn and forms the census
    assert dsg.q[1] == 0.0 and dsg.q.sum() == pytest.approx(1.0)
    assert dsg.census.tolist() == [1]
    # q* over the other queries: p / mass mixed with the defensive weight, costs = changeable costs
    sq = dsg.prediction.sq_error
    s = np.sqrt(sq[[0, 2]] / dsg.costs.cost[[0, 2]])
    np.testing.assert_allclose(dsg.q[[0, 2]], 0.9 * s / s.sum() + 0.1 * 0.5)
    # uniform costs: one unit per query that needs judging
    dsg = build_design(t, probs, method=get_method("passive"), p=p, doc_costs=doc_costs, cost_model="array",
                       per_query_cost=True, defensive=0.1)
    np.testing.assert_array_equal(dsg.costs.cost, [1.0, 0.0, 1.0])
    np.testing.assert_allclose(dsg.q, [0.5, 0.0, 0.5])
    # "all" keeps full judging
    full = make_target("difference", [a, b], m)
    qc = query_costs(doc_costs, full.document_sets())
    np.testing.assert_allclose(qc.raw, full_raw)


def test_single_ranker_ratio_and_custom_metrics_always_judge_everything():
    a = Rankings.from_list([[0, 1, 2]])
    b = Rankings.from_list([[0, 2, 1]])
    assert make_target("mean", [a], parse_metric("dcg@3"), judge="changeable").changes is None
    t = make_target("difference", [a, b], parse_metric("ndcg(gain=exp)@3"), offsets=np.array([0, 3]),
                    judge="changeable")
    assert t.changes is None and sorted(t.documents(0).tolist()) == [0, 1, 2]
    with pytest.raises(ValueError, match="`judge` must be one of"):
        make_target("difference", [a, b], parse_metric("dcg@3"), judge="some")
