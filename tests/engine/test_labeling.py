"""The labeling step: only missing documents are asked for, answers validated, nothing bought is lost."""

import numpy as np
import pytest

import activerank as ar
from activerank.engine import Judgments
from activerank.labelers import LabelingError


def _store():
    pool = ar.Pool.from_qids([1, 1, 1, 2, 2], doc_ids=["a", "b", "c", "d", "e"])
    return pool, Judgments(pool, 3)


def test_ask_only_missing_documents_and_as_dict():
    pool, store = _store()
    asked = []

    def labeler(qid, docs):
        asked.append((qid, list(docs)))
        return [1] * len(docs)

    store.load({1: {"b": 2}}, name="judgments")
    store.ask(labeler, 0, np.array([0, 1, 2]))
    store.ask(labeler, 0, np.array([0, 1, 2]))  # complete: the labeler is not called again
    assert asked == [(1, ["a", "c"])]
    assert store.as_dict() == {1: {"a": 1, "b": 2, "c": 1}} and store.complete([0, 1, 2])


def test_failure_keeps_every_judgment_and_the_trace():
    pool, store = _store()
    store.ask(lambda q, d: [0] * len(d), 0, np.array([0, 1]))
    with pytest.raises(LabelingError, match=r"labeling query 2 \(draw 3\) failed: labeler grades must be integers") as e:
        store.ask(lambda q, d: ["high"] * len(d), 1, np.array([3, 4]), where=" (draw 3)", trace=lambda: "T")
    assert e.value.judgments == {1: {"a": 0, "b": 0}} and e.value.trace == "T"

    def interrupted(qid, docs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as e:
        store.ask(interrupted, 1, np.array([3]))
    assert e.value.judgments == {1: {"a": 0, "b": 0}}


def test_load_rules():
    pool, store = _store()
    with pytest.raises(ValueError, match=r"`judgments` names query 3, which is not in the pool"):
        store.load({3: {"a": 1}}, name="judgments")
    store.load({3: {"a": 1}}, name="reuse", unknown_queries="ignore")
    with pytest.raises(ValueError, match=r"`reuse`: query 1 has no document 'd' in the pool"):
        store.load({1: {"d": 1}}, name="reuse")
    store.load({1: {"a": 1}}, name="reuse")
    with pytest.raises(ValueError, match=r"`reuse`: conflicting grades for query 1, document 'a'"):
        store.load({1: {"a": 2}}, name="reuse")
    with pytest.raises(TypeError, match=r"`judgments` must be a dict"):
        store.load([1, 2], name="judgments")


def test_a_batch_labeler_is_asked_once_per_batch_the_design_needs():
    """Query samples need one batch; prefix one per judging step of the queries that surely fit the budget, then
    the budget's tail query by query (docs/prefix.md §7: 19 batches here, depth 5)."""
    import numpy as np

    import activerank as ar
    from activerank.labelers import BatchLabeler

    from ..conftest import SyntheticPool

    pool = SyntheticPool(np.random.default_rng(0), n_queries=1500, max_docs=6)
    known = ar.KnownLabels(pool.query_ids, pool.offsets, pool.sample_labels(np.random.default_rng(1)))
    calls = []

    def batch(requests):
        calls.append(len(requests))
        return [known(q, d) for q, d in requests]

    for method, metric, most in (("active_wor", "err@5", 1), ("doc_dyn", "dcg@5", 1), ("prefix", "err@5", 25)):
        calls.clear()
        res = ar.estimate(pool, pool.probs[:, 2], pool.probs, BatchLabeler(batch), budget=1000, metric=metric,
                          method=method, rng=0)
        one = ar.estimate(pool, pool.probs[:, 2], pool.probs, known.__call__, budget=1000, metric=metric,
                          method=method, rng=0)
        assert 1 <= len(calls) <= most and sum(calls) >= 100
        assert res.estimate == one.estimate  # the same sample, asked for in batches
