"""CSR per-query arrays: construction rules and the position-major walk."""

import numpy as np
import pytest

from activerank.ragged import (
    PositionMajor,
    Rankings,
    descending_keys,
    offsets_from_lengths,
    rank_rows_by_scores,
    segment_argsort,
    segment_ids,
)


def test_rankings_basic_operations():
    r = Rankings.from_list([[2, 0, 1], [], [4, 3]])
    assert r.n_queries == 3 and r.lengths.tolist() == [3, 0, 2]
    assert r.positions().tolist() == [0, 1, 2, 0, 1] and r.query_index().tolist() == [0, 0, 0, 2, 2]
    assert r.truncate(1).to_list()[2].tolist() == [4] and r.truncate(None) is r
    assert [a.tolist() for a in r.subset([2, 0]).to_list()] == [[4, 3], [2, 0, 1]]
    with pytest.raises(ValueError):
        r.items[0] = 7  # read-only


def test_rankings_reject_what_a_cast_would_hide():
    with pytest.raises(ValueError, match=r"`items` must hold integer row indices; entry 0 is 0.5"):
        Rankings(np.arange(15) + 0.5, [0, 15])
    with pytest.raises(TypeError, match=r"`items` must hold integer row indices; got dtype <U1"):
        Rankings(np.array(["a"]), [0, 1])
    with pytest.raises(ValueError, match=r"`offsets` must be non-decreasing; query 1 has a negative length \(3 -> 2\)"):
        Rankings([0, 1, 2, 3], [0, 3, 2, 4])
    with pytest.raises(ValueError, match=r"`offsets` must end at len\(items\) \(4\); got last offset 3"):
        Rankings([0, 1, 2, 3], [0, 3])
    assert Rankings(np.arange(3.0), [0, 3]).items.dtype == np.int64  # integral floats are fine


def test_rank_rows_by_scores_descending_ties_as_trec_eval():
    r = rank_rows_by_scores(np.array([0.1, 0.9, 0.5, 2.0, 2.0]), np.array([0, 3, 5]))
    assert [a.tolist() for a in r.to_list()] == [[1, 2, 0], [4, 3]]      # no ids: the row is the id
    ids = np.array(["x", "b", "a", "d2", "d10"], dtype=object)
    r = rank_rows_by_scores(np.array([1.0, 1.0, 1.0, 2.0, 2.0]), np.array([0, 3, 5]), ids)
    assert [a.tolist() for a in r.to_list()] == [[0, 1, 2], [3, 4]]      # "d2" > "d10" as text


def _lexsort_ranking(scores, offsets):
    """The reference: one global lexsort by (query, -score, -row) -- trec_eval's order without ids."""
    return np.lexsort((-np.arange(scores.size), -scores, segment_ids(offsets)))


@pytest.mark.parametrize("kind", ["continuous", "few values", "one ulp apart", "special", "wide range"])
def test_rank_rows_by_scores_equals_a_global_lexsort(kind):
    rng = np.random.default_rng(["continuous", "few values", "one ulp apart", "special", "wide range"].index(kind))
    for max_len in (2, 17, 300, 2000):
        lengths = rng.integers(0, max_len, 25)
        offsets = offsets_from_lengths(lengths)
        n = int(offsets[-1])
        scores = {
            "continuous": lambda: rng.random(n),
            "few values": lambda: rng.integers(0, 3, n).astype(float),
            # distinct scores that agree in all but the last bits: the packed keys tie, the repair re-sorts
            "one ulp apart": lambda: 1.0 + rng.integers(0, 4, n) * np.finfo(float).eps,
            "special": lambda: rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.0], n),
            "wide range": lambda: rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n),
        }[kind]()
        np.testing.assert_array_equal(rank_rows_by_scores(scores, offsets).items, _lexsort_ranking(scores, offsets))


def test_segment_argsort_ties_follow_the_given_order():
    rng = np.random.default_rng(3)
    offsets = offsets_from_lengths(rng.integers(0, 40, 30))
    keys = descending_keys(rng.integers(0, 4, offsets[-1]).astype(float))
    q = segment_ids(offsets)
    ties = np.lexsort((-np.arange(q.size), q))          # every query's rows, highest row first
    got = segment_argsort(keys, offsets, ties=ties)
    np.testing.assert_array_equal(got, np.lexsort((-np.arange(q.size), keys, q)))


@pytest.mark.parametrize("shift", [0, 40, 62])
def test_segment_argsort_reverse_ties_equals_a_lexsort(shift):
    # shift 0: keys that differ only in their low bits, so the packed keys tie and the repair re-sorts
    rng = np.random.default_rng(shift)
    offsets = offsets_from_lengths(rng.integers(0, 300, 40))
    q = segment_ids(offsets)
    keys = rng.integers(0, 2**63, q.size).astype(np.uint64) >> np.uint64(shift)
    got = segment_argsort(keys, offsets, reverse_ties=True)
    np.testing.assert_array_equal(got, np.lexsort((-np.arange(q.size), keys, q)))


def test_position_major_walk_matches_a_loop():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 6, 20)
    offsets = offsets_from_lengths(lengths)
    pm = PositionMajor(offsets)
    x = rng.random(offsets[-1])
    flat = x[pm.flat_order()]
    for i in range(pm.max_len):
        e = pm.entries(i)
        np.testing.assert_array_equal(flat[pm.bounds[i]:pm.bounds[i + 1]], x[e])
        # the queries still active at position i are a prefix of the longest-first order
        assert (lengths[pm.order[: e.size]] > i).all() and (lengths[pm.order[e.size:]] <= i).all()
    assert segment_ids(offsets).tolist() == np.repeat(np.arange(20), lengths).tolist()
    np.testing.assert_array_equal(pm.unsort(np.arange(20.0))[pm.order], np.arange(20.0))
