import itertools
import zlib

import numpy as np
import pytest

from activerank.design.cancellation import (
    ChangeCosts,
    census_distribution,
    changeable_costs,
    changeable_documents,
    discount_table,
)
from activerank.design.costs import query_costs
from activerank.metrics import pool_metric_values
from activerank.ragged import Rankings

YMAX = 2


def _batch_values(labels, rankings, *, metric=None, disc=None):
    """Metric value of every system for many label vectors of one query, shape (n_labelings, s)."""
    labels = np.atleast_2d(labels)
    n = labels.shape[1]
    out = np.zeros((labels.shape[0], len(rankings)))
    if disc is None and metric.startswith("dcg"):
        disc = discount_table(metric, n)
    for s, r in enumerate(rankings):
        if disc is not None:
            r = np.asarray(r, dtype=int)[: disc.size]
            out[:, s] = (2.0 ** labels[:, r] - 1.0) @ disc[: r.size]
        else:
            k = int(metric.partition("@")[2] or n)
            still = np.ones(labels.shape[0])
            for i, z in enumerate(r[:k]):
                rel = (2.0 ** labels[:, z] - 1.0) / 2.0**YMAX
                out[:, s] += still * rel / (i + 1)
                still *= 1.0 - rel
    return out


def test_batch_values_match_library():
    rng = np.random.default_rng(5)
    ranks = [[2, 0, 1, 3], [3, 1, 0]]
    labels = rng.integers(0, YMAX + 1, (6, 4))
    for metric in ("dcg@3", "err@3", "dcg", "err"):
        got = _batch_values(labels, ranks, metric=metric)
        for lab, row in zip(labels, got):
            want = [pool_metric_values(lab, [r], metric=metric, ymax=YMAX)[0] for r in ranks]
            np.testing.assert_allclose(row, want, rtol=1e-12)


def _random_case(rng, n_sys):
    n = int(rng.integers(2, 6))
    base = rng.permutation(n)
    out = []
    for _ in range(n_sys):
        kind = rng.integers(4)
        if kind == 0:
            r = base.copy()  # identical
        elif kind == 1:
            r = base.copy()  # adjacent swap
            i = rng.integers(max(1, n - 1))
            r[[i, min(i + 1, n - 1)]] = r[[min(i + 1, n - 1), i]]
        elif kind == 2:
            r = np.delete(base, rng.integers(n)) if n > 1 else base.copy()  # index update
        else:
            r = rng.permutation(n)[: rng.integers(1, n + 1)]
        out.append([int(v) for v in r])
    return n, out


CASES = [("dcg@3", None), ("dcg", None), ("err@3", None), ("err", None),
         (None, np.full(3, 1 / 3)),  # P@3
         (None, 0.2 * 0.8 ** np.arange(4))]  # RBP, phi = 0.8


@pytest.mark.parametrize("metric,disc", CASES)
@pytest.mark.parametrize("n_sys", [2, 3])
def test_cancelled_documents_cannot_change_any_difference(metric, disc, n_sys):
    """Enumerate every label vector of tiny queries: a cancelled document's label never moves a
    difference, and every kept document moves one for some label vector (the rule is minimal)."""
    rng = np.random.default_rng(zlib.crc32(f"{metric}-{n_sys}-{0 if disc is None else disc.size}".encode()))
    n_checked_cancel = 0
    for _ in range(100):
        n, ranks = _random_case(rng, n_sys)
        cs = changeable_documents([[r] for r in ranks], n_docs=n, metric=metric, discounts=disc)
        needed = set(cs.rows[0].tolist())
        pairs = np.array(list(itertools.combinations(range(n_sys), 2)))
        labels_all = np.array(list(itertools.product(range(YMAX + 1), repeat=n)))
        v = _batch_values(labels_all, ranks, metric=metric, disc=disc)
        diffs = v[:, pairs[:, 0]] - v[:, pairs[:, 1]]
        place = (YMAX + 1) ** np.arange(n - 1, -1, -1)
        idx = labels_all @ place
        for z in range(n):
            moved = 0.0
            for g in range(YMAX + 1):
                other = idx + (g - labels_all[:, z]) * place[z]
                moved = max(moved, np.abs(diffs[idx] - diffs[other]).max())
            if z not in needed:
                n_checked_cancel += 1
                assert moved <= 1e-12, (ranks, z, moved)
            else:  # minimal: exact for additive metrics (proof), and measured for ERR
                assert moved > 1e-9, (ranks, z)
        assert cs.determined[0] == (len(needed) == 0)
    assert n_checked_cancel > 10  # the test exercised cancellations


def test_contrasts_with_baseline_and_mean_share_the_union():
    rng = np.random.default_rng(3)
    for metric in ("dcg@3", "err@3"):
        for _ in range(30):
            n, ranks = _random_case(rng, 3)
            cs = changeable_documents([[r] for r in ranks], n_docs=n, metric=metric)
            pairwise = set()
            for i, j in itertools.combinations(range(3), 2):
                pairwise |= set(changeable_documents([[ranks[i]], [ranks[j]]], n_docs=n, metric=metric).rows[0])
            assert set(cs.rows[0].tolist()) == pairwise
            # contrasts to the mean system are invariant to the labels of the cancelled documents
            cancelled = sorted(set(range(n)) - pairwise)
            labels_all = np.array(list(itertools.product(range(YMAX + 1), repeat=n)))
            v = _batch_values(labels_all, ranks, metric=metric)
            for z in cancelled:
                other = labels_all.copy()
                other[:, z] = (other[:, z] + 1) % (YMAX + 1)
                w = _batch_values(other, ranks, metric=metric)
                np.testing.assert_allclose(v - v.mean(1, keepdims=True), w - w.mean(1, keepdims=True), atol=1e-12)
                np.testing.assert_allclose(v[:, :2] - v[:, 2:], w[:, :2] - w[:, 2:], atol=1e-12)


def test_vectorized_over_queries_matches_one_query_at_a_time():
    rng = np.random.default_rng(11)
    for metric in ("dcg@4", "err@4", "dcg", "err"):
        lists_a, lists_b, offs = [], [], 0
        singles = []
        for _ in range(40):
            n, (a, b) = _random_case(rng, 2)
            singles.append(changeable_documents([[a], [b]], n_docs=n, metric=metric).rows[0] + offs)
            lists_a.append([v + offs for v in a])
            lists_b.append([v + offs for v in b])
            offs += n
        cs = changeable_documents([lists_a, lists_b], n_docs=offs, metric=metric)
        for q, s in enumerate(singles):
            assert cs.rows[q].tolist() == s.tolist()


def test_index_update_keeps_prefix_out_and_pays_shifted_documents():
    a = [[0, 1, 2, 3, 4, 5]]
    b = [[0, 1, 3, 4, 5]]  # document 2 removed
    cs = changeable_documents([a, b], n_docs=6, metric="dcg@4")
    assert cs.rows[0].tolist() == [2, 3, 4]  # 4 enters b's top 4; 0 and 1 keep their ranks
    assert cs.n_pooled.tolist() == [5]
    cs_err = changeable_documents([a, b], n_docs=6, metric="err@4")
    assert cs_err.rows[0].tolist() == [0, 1, 2, 3, 4]  # the prefix multiplies everything below
    # removal below the cutoff: nothing changes
    cs2 = changeable_documents([a, [[0, 1, 2, 3, 5]]], n_docs=6, metric="dcg@4")
    assert cs2.determined.tolist() == [True]


def test_precision_cancels_anywhere_inside_the_cutoff():
    cs = changeable_documents([[[0, 1, 2, 3]], [[2, 0, 1, 4]]], n_docs=5, discounts=np.full(3, 1 / 3))
    assert cs.rows[0].tolist() == []  # same top-3 set
    cs = changeable_documents([[[0, 1, 2, 3]], [[3, 0, 1, 2]]], n_docs=5, discounts=np.full(3, 1 / 3))
    assert cs.rows[0].tolist() == [2, 3]


def test_err_shared_suffix_needs_same_set_above():
    cs = changeable_documents([[[0, 1, 2]], [[1, 0, 2]]], n_docs=4, metric="err")
    assert cs.rows[0].tolist() == [0, 1]
    cs = changeable_documents([[[0, 1, 2]], [[0, 3, 2]]], n_docs=4, metric="err")
    assert cs.rows[0].tolist() == [0, 1, 2, 3]


def test_costs_sum_changeable_documents_and_scale():
    a = [[0, 1, 2], [3, 4, 5], [6, 7]]
    b = [[0, 2, 1], [3, 4, 5], [7, 6]]
    c = np.arange(1.0, 9.0)
    cs = changeable_documents([a, b], n_docs=8, metric="dcg@3")
    cc = changeable_costs(c, cs)
    np.testing.assert_allclose(cc.raw, [c[1] + c[2], 0.0, c[6] + c[7]])
    assert cc.cost.mean() == pytest.approx(1.0)
    full = query_costs(c, [Rankings.from_list(a), Rankings.from_list(b)], k=3)
    cc2 = changeable_costs(c, cs, scale=full.scale)
    np.testing.assert_allclose(cc2.cost, cc.raw / full.scale)
    assert np.all(cc2.raw <= full.raw)
    assert cc.determined.tolist() == [False, True, False]


def test_discount_table():
    np.testing.assert_allclose(discount_table("dcg@2", 4), [1.0, 1 / np.log2(3), 0.0, 0.0])
    with pytest.raises(ValueError, match="not additive"):
        discount_table("err@3", 3)


def test_census_distribution_and_unbiased_census_estimate():
    rng = np.random.default_rng(0)
    m = 50
    values = rng.normal(size=m)
    values[::3] = 0.0
    determined = np.zeros(m, bool)
    determined[::3] = True
    raw = np.where(determined, 0.0, rng.uniform(1, 3, m))
    cc = ChangeCosts(cost=raw / raw.mean(), raw=raw, scale=raw.mean(), determined=determined, model="t")
    p = np.full(m, 1 / m)
    d = census_distribution(rng.uniform(0.5, 2, m), cc, p, defensive=0.2)
    assert np.all(d.q[determined] == 0) and d.q.sum() == pytest.approx(1.0)
    assert d.mass == pytest.approx((~determined).mean())
    # mass * (p/q-weighted mean over the live queries) is the pool mean, exactly in expectation
    live = ~determined
    pc = np.where(live, p, 0) / d.mass
    exact = d.mass * np.sum(d.q[live] * (pc[live] / d.q[live]) * values[live])
    assert exact == pytest.approx(values.mean())


def test_bad_input_messages():
    with pytest.raises(ValueError, match="at least two rankings"):
        changeable_documents([[[0, 1]]], n_docs=2, metric="dcg")
    with pytest.raises(TypeError, match="sequence of at least two"):
        changeable_documents(Rankings.from_list([[0, 1]]), n_docs=2, metric="dcg")
    with pytest.raises(ValueError, match="exactly one of"):
        changeable_documents([[[0]], [[0]]], n_docs=1)
    with pytest.raises(ValueError, match="exactly one of"):
        changeable_documents([[[0]], [[0]]], n_docs=1, metric="dcg", discounts=[1.0])
    with pytest.raises(ValueError, match="same queries"):
        changeable_documents([[[0]], [[0], [1]]], n_docs=2, metric="dcg")
    with pytest.raises(ValueError, match=r"rankings\[1\].*query 0 has index 5"):
        changeable_documents([[[0]], [[5]]], n_docs=2, metric="dcg")
    with pytest.raises(ValueError, match="no exact moments"):
        changeable_documents([[[0]], [[0]]], n_docs=1, metric="ndcg(gain=exp)@3")
    with pytest.raises(ValueError, match="finite; position 1"):
        changeable_documents([[[0]], [[0]]], n_docs=1, discounts=[1.0, np.nan])
    with pytest.raises(ValueError, match="n_docs"):
        changeable_documents([[[0]], [[0]]], n_docs=0, metric="dcg")
    cs = changeable_documents([[[0, 1]], [[1, 0]]], n_docs=2, metric="dcg")
    with pytest.raises(ValueError, match="refers to row 1"):
        changeable_costs([1.0], cs)
    with pytest.raises(ValueError, match="document row 0 has"):
        changeable_costs([0.0, 1.0], cs)
    with pytest.raises(ValueError, match="nothing to judge"):
        changeable_costs([1.0, 1.0], changeable_documents([[[0, 1]], [[0, 1]]], n_docs=2, metric="dcg"))
    with pytest.raises(ValueError, match="scale"):
        changeable_costs([1.0, 1.0], cs, scale=0.0)
    cc = changeable_costs([1.0, 1.0], cs)
    with pytest.raises(ValueError, match="one entry per query"):
        census_distribution([1.0, 2.0], cc, [1.0])
    with pytest.raises(TypeError, match="ChangeCosts"):
        census_distribution([1.0], cs, [1.0])


@pytest.mark.parametrize("metric", ["dcg@3", "err", "p@2", "err@3"])
def test_rows_numbered_out_of_query_order_give_the_same_sets(metric):
    """The row-mask path (rows numbered query by query, as in a pool) and the key-sorting fallback agree."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        lengths = rng.integers(1, 6, 4)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        n = int(offsets[-1])
        systems = []
        for _s in range(3):
            lists = []
            for x in range(lengths.size):
                docs = rng.permutation(np.arange(offsets[x], offsets[x + 1]))
                lists.append(docs[: rng.integers(1, docs.size + 1)].tolist())
            systems.append(lists)
        perm = rng.permutation(n)  # renumber rows: no longer ordered by query
        moved = [[perm[lst].tolist() for lst in lists] for lists in systems]
        a = changeable_documents(systems, n_docs=n, metric=metric)
        b = changeable_documents(moved, n_docs=n, metric=metric)
        assert a.determined.tolist() == b.determined.tolist()
        assert a.n_pooled.tolist() == b.n_pooled.tolist()
        for x in range(lengths.size):
            assert sorted(perm[a.rows[x]].tolist()) == b.rows[x].tolist()
