"""Campaigns of query-level methods without replacement (activerank.campaign.without_replacement): the plan
is the engine's one sample, usable only whole, and its estimate equals activerank.estimate / compare."""

import json
import sqlite3

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign
from activerank.campaign.store import WOR_SCHEMA_VERSION

METHOD = "active_wor"


def _answers(camp, labels, queries=None):
    """One judgments row per task of the planned queries (all, or the pool indices ``queries``)."""
    rows = []
    for x in (camp.plan().queries if queries is None else queries).tolist():
        qid = camp.query_ids[x]
        docs = camp.tasks(qid)
        rows += [{"query_id": qid, "doc_id": d, "grade": int(g)} for d, g in zip(docs, labels(int(qid), docs))]
    return rows


def _import(camp, rows, path):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return camp.import_judgments(path)


def _same(res, ref):
    assert type(res) is type(ref) and res.method == ref.method == METHOD
    for name in ("estimate", "difference", "standard_error"):
        if hasattr(ref, name):
            assert getattr(res, name) == pytest.approx(getattr(ref, name), rel=1e-12, abs=1e-15)
    if hasattr(ref, "differences"):
        np.testing.assert_allclose(res.differences, ref.differences, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.standard_errors, ref.standard_errors, rtol=1e-12, atol=1e-15)
    assert res.n_draws == ref.n_draws and res.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12)
    np.testing.assert_array_equal(res.trace["query"], ref.trace["query"])
    np.testing.assert_allclose(res.trace["pi"], ref.trace["pi"], rtol=1e-12)


def test_plan_is_the_engines_sample_and_the_estimate_equals_estimate(tmp_path, data, probs, labels):
    a = data.X[:, 24]
    ref = ar.estimate(data, a, probs, labels, budget=10, metric="err@10", method=METHOD, rng=4)
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=10, metric="err@10", method=METHOD,
                         seed=4) as c:
        np.testing.assert_array_equal(c.plan().queries, ref.trace["query"])
        assert np.unique(c.plan().queries).size == c.plan().queries.size  # every query at most once
        assert c.plan().charged.sum() <= 10 + 1e-9
        _import(c, _answers(c, labels), tmp_path / "a.jsonl")
        res = c.estimate()
    _same(res, ref)
    with sqlite3.connect(tmp_path / "c.db") as con:
        assert con.execute("SELECT version FROM schema_version").fetchone()[0] == WOR_SCHEMA_VERSION
    with Campaign.open(tmp_path / "c.db") as c:  # everything the estimate needs is stored
        _same(c.estimate(), ref)
        assert c.check() == []  # the stored sample replays from the seed (was compared with a draw sequence)


@pytest.mark.parametrize("judge", ["changeable", "all"])
def test_comparison_round_trip(tmp_path, data, probs, labels, judge):
    a, b = data.X[:, 24], data.X[:, 39]
    ref = ar.compare(data, a, b, probs, labels, budget=12, metric="dcg@10", method=METHOD, rng=5, judge=judge)
    with Campaign.create(tmp_path / "c.db", data, [a, b], probs, budget=12, metric="dcg@10", method=METHOD,
                         seed=5, judge=judge) as c:
        _import(c, _answers(c, labels), tmp_path / "a.jsonl")
        res = c.estimate()
    _same(res, ref)
    if judge == "all":
        assert res.estimate_a - res.estimate_b == pytest.approx(res.difference, rel=1e-12)


def test_k_systems_round_trip(tmp_path, data, probs, labels):
    systems = {f"s{j}": data.X[:, j] for j in (10, 24, 39)}
    ref = ar.compare_many(data, [systems["s10"], systems["s24"]], systems["s39"], probs, labels, budget=12,
                          metric="dcg@5", method=METHOD, rng=6, names=["s10", "s24"], baseline_name="s39")
    with Campaign.create(tmp_path / "c.db", data, systems, probs, budget=12, metric="dcg@5", method=METHOD,
                         seed=6, target="baseline") as c:
        _import(c, _answers(c, labels), tmp_path / "a.jsonl")
        res = c.estimate()
    _same(res, ref)


def test_partial_judgments_refuse_the_estimate_and_keep_everything(tmp_path, data, probs, labels):
    a = data.X[:, 24]
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=10, metric="err@10", method=METHOD,
                         seed=4) as c:
        planned = c.plan().queries
        n = planned.size
        with pytest.raises(ValueError, match=rf"usable only whole: 0 of its {n} queries are partially judged "
                                             rf"and {n} not at all"):
            c.estimate()
        # the first queries of the selection order done: still not a sample of this design
        rows = _answers(c, labels, planned[: n - 1])
        assert _import(c, rows, tmp_path / "first.jsonl").accepted == len(rows)
        with pytest.raises(ValueError, match=rf"0 of its {n} queries are partially judged and 1 not at all"):
            c.estimate()
        st = c.status()
        assert st.draws_usable == 0 and st.n_judgments == len(rows)
        assert st.blocking_query == c.query_ids[planned[-1]]
        _import(c, _answers(c, labels, planned[n - 1:]), tmp_path / "last.jsonl")
        assert c.status().draws_usable == n
        res = c.estimate()
    _same(res, ar.estimate(data, a, probs, labels, budget=10, metric="err@10", method=METHOD, rng=4))


def test_budget_too_small_is_refused_at_creation(tmp_path, data, probs):
    with pytest.raises(ValueError, match=r"`budget`=1 is below the cost of the two cheapest queries .* needs at "
                                         r"least 2 queries"):
        Campaign.create(tmp_path / "c.db", data, data.X[:, 24], probs, budget=1, metric="err@10", method=METHOD,
                        seed=0)


def test_distributed_campaigns_accept_sampling_without_replacement(tmp_path, data, probs):
    from activerank.campaign.store import _create_args_iv

    # distributed pools plan the sample on the driver (tests/distributed/test_campaign.py)
    path, budget, seed = _create_args_iv(tmp_path / "c.db", "mean_gain", False, 5, 0, method=METHOD, documents=False)
    assert budget == 5 and seed == 0


@pytest.mark.filterwarnings("ignore::activerank.LowEffectiveSampleSizeWarning")
@pytest.mark.parametrize("method", ["active_wor", "active"])
def test_labels_held_at_creation_are_free_and_known_exactly(tmp_path, data, probs, labels, method):
    """``init --qrels``: the queries the qrels cover in full are an exactly known stratum, never planned, and
    nothing is spent before a task is judged; the estimate equals activerank's with the same labels held."""
    a = data.X[:, 24]
    held_q = [data.query_ids[i] for i in range(5)]
    held = {q: {d: int(g) for d, g in zip(*_docs_and_grades(data, q))} for q in held_q}
    qrels = tmp_path / "held.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in held.items() for d, g in docs.items()))
    ref = ar.estimate(data, a, probs, labels, budget=8, metric="err@10", method=method, rng=3, judgments=held)
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="err@10", method=method, seed=3,
                         held_qrels=qrels) as c:
        c.import_qrels(qrels)
        st = c.status()
        assert st.cost_spent == 0 and not set(map(str, held_q)) & set(map(str, c.plan().queries.tolist()))
        assert not {str(c.query_ids[x]) for x in c.plan().queries.tolist()} & set(map(str, held_q))
        _import(c, _answers(c, labels), tmp_path / "a.jsonl")
        res = c.estimate()
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)
    assert res.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12)


def _docs_and_grades(data, qid):
    x = int(np.flatnonzero(data.query_ids == qid)[0])
    rows = np.arange(data.offsets[x], data.offsets[x + 1])
    return data.doc_ids[rows].tolist(), data.labels[rows].tolist()
