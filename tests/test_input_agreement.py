"""Inputs that agree with each other: the grade scale of ``probs`` and a pool's documents per query.

Both used to give a number instead of an error: probabilities with more grade
columns than the data's scale changed ERR's top grade (ERR@10 of one ranker
judged in full 0.2208 with 3 columns, 0.0682 with 5, 0.0023 with 10), and a
pool listing a document twice for a query counted it twice.
"""

import numpy as np
import pytest

import activerank as ar
from activerank._validation import distinct_docs_iv, grade_count_iv


@pytest.fixture(scope="module")
def data():
    return ar.load_sample()


def uniform(n_docs, n_grades):
    return np.full((n_docs, n_grades), 1.0 / n_grades)


@pytest.mark.parametrize("columns", [2, 5, 10])
def test_probs_columns_must_match_the_pool_scale(data, columns):
    lab = ar.KnownLabels.from_data(data)
    probs = uniform(data.n_docs, columns)
    message = (rf"`probs` has {columns} grade columns but the pool has n_grades=3 \(grades 0\.\.2\).*"
               r"give the relevance model n_grades=3")
    with pytest.raises(ValueError, match=message):
        ar.estimate(data, data.X[:, 0], probs, lab, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.compare(data, data.X[:, 0], data.X[:, 1], probs, lab, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.compare_many(data, [data.X[:, 1]], data.X[:, 0], probs, lab, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.rank_systems(data, [data.X[:, 0], data.X[:, 1]], probs, lab, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.estimate_sequential(data, data.X[:, 0], probs, lab, target_half_width=0.1, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.make_design(data, [ar.relevance.rank_by_scores(data.X[:, 0], data.offsets)], probs, metric="dcg@5")


def test_probs_columns_must_match_the_labeler_scale(data):
    pool = ar.Pool(data.query_ids, data.offsets, data.doc_ids)      # a plain pool declares no scale
    lab = ar.KnownLabels.from_data(data)
    assert lab.n_grades == 3
    with pytest.raises(ValueError, match=r"`probs` has 5 grade columns but the labeler has n_grades=3"):
        ar.estimate(pool, data.X[:, 0], uniform(data.n_docs, 5), lab, budget=5, rng=0)
    # nothing declares a scale: the columns are the scale
    res = ar.estimate(pool, data.X[:, 0], uniform(data.n_docs, 5), ar.CallableLabeler(lab), budget=5, rng=0)
    assert np.isfinite(res.estimate)


def test_probs_columns_must_match_the_qrels_scale(data, tmp_path):
    from activerank.io.trec import read_qrels, write_qrels

    path = tmp_path / "q.qrels"
    write_qrels(path, {str(data.query_ids[0]): {data.doc_ids[r]: int(data.labels[r]) for r in range(3)}})
    pool = ar.Pool(data.query_ids[:1], data.offsets[:2], data.doc_ids[:data.offsets[1]])
    probs = uniform(pool.n_docs, 5)
    qrels = read_qrels(path, n_grades=3)
    assert qrels.n_grades == 3 and qrels.labeler(missing=0).n_grades == 3
    with pytest.raises(ValueError, match=r"`probs` has 5 grade columns but the labeler has n_grades=3"):
        ar.estimate(pool, data.X[:pool.n_docs, 0], probs, qrels.labeler(missing=0), budget=5, rng=0)
    assert read_qrels(path).labeler().n_grades is None          # no scale given: none declared


def test_matching_scales_pass(data):
    res = ar.estimate(data, data.X[:, 0], uniform(data.n_docs, 3), ar.KnownLabels.from_data(data), budget=5,
                      rng=0)
    assert np.isfinite(res.estimate)
    grade_count_iv([[0.2, 0.3, 0.5]], pool=data)
    with pytest.raises(ValueError, match="has 2 grade columns but the pool has n_grades=3"):
        grade_count_iv([[0.5, 0.5]], pool=data)          # a nested list is read as well


def test_known_labels_n_grades_is_checked():
    with pytest.raises(ValueError, match=r"`n_grades` must be an integer >= 2 or None; got 1"):
        ar.KnownLabels([1], [0, 1], [0], n_grades=1)


def test_pool_with_a_document_twice_in_a_query_is_refused(data):
    lab = ar.KnownLabels.from_data(data)
    probs = uniform(data.n_docs, 3)
    ids = data.doc_ids.copy()
    ids[5] = ids[2]
    pool = ar.Pool(data.query_ids, data.offsets, ids)
    message = rf"`pool` query '{data.query_ids[0]}' lists document id '{ids[2]}' twice \(rows 2 and 5\)"
    with pytest.raises(ValueError, match=message):
        ar.estimate(pool, data.X[:, 0], probs, lab, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.compare(pool, data.X[:, 0], data.X[:, 1], probs, lab, budget=5, rng=0)
    with pytest.raises(ValueError, match=message):
        ar.compare_many(pool, [data.X[:, 1]], data.X[:, 0], probs, lab, budget=5, rng=0)


def test_duplicate_ids_compare_by_their_string_form():
    offsets, qids = np.array([0, 3, 6]), np.array([7, 8])
    # the same id in two queries is fine
    distinct_docs_iv(np.array(["a", "b", "c", "a", "b", "c"], dtype=object), offsets, qids)
    distinct_docs_iv(np.arange(6) % 3, offsets, qids)
    with pytest.raises(ValueError, match=r"`pool` query '8' lists document id '7' twice \(rows 3 and 5\)"):
        distinct_docs_iv(np.array(["a", "b", "c", 7, "x", "7"], dtype=object), offsets, qids)
    with pytest.raises(ValueError, match=r"`pool` query '7' lists document id '2' twice \(rows 0 and 2\)"):
        distinct_docs_iv(np.array([2, 1, 2, 9, 9, 9]), offsets, qids)
    # the first duplicate in pool order is named
    with pytest.raises(ValueError, match=r"query '7' lists document id 'b' twice \(rows 1 and 2\)"):
        distinct_docs_iv(np.array(["a", "b", "b", "c", "c", "d"]), offsets, qids)


def test_many_queries_without_duplicates_pass():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 300, 200)
    offsets = np.r_[0, np.cumsum(lengths)]
    ids = np.concatenate([rng.permutation(10_000)[:n].astype(str) for n in lengths]).astype(object)
    distinct_docs_iv(ids, offsets, np.arange(200))
    ids[offsets[150] + 1] = ids[offsets[150]]
    with pytest.raises(ValueError, match=rf"`pool` query '150' lists .* twice \(rows {offsets[150]} and "
                                         rf"{offsets[150] + 1}\)"):
        distinct_docs_iv(ids, offsets, np.arange(200))
