"""Campaigns of the ``prefix`` method (activerank.campaign.prefix): tasks in rounds, one document per unfinished
sampled query, decided by the judgments stored so far; the estimate equals activerank's once every walk is done."""

import json
import sqlite3

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign
from activerank.campaign.store import PREFIX_SCHEMA_VERSION

METHOD = "prefix"


class Recording:
    """The annotator of the in-memory run: answers from the true labels and records every request."""

    def __init__(self, labels):
        self.inner, self.asked = labels, []

    def __call__(self, qid, docs):
        self.asked += [(str(qid), str(d)) for d in docs]
        return self.inner(qid, docs)


def _round(camp, labels, path):
    """Export the current round, answer it from ``labels``, import it; returns the exported (query, doc) pairs."""
    out = path.with_suffix(".tasks.jsonl")
    rep = camp.export_tasks(out, overwrite=True)
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert rep.n_rows == len(tasks) == rep.n_queries  # one document per waiting query
    rows = [{"query_id": t["query_id"], "doc_id": t["doc_id"],
             "grade": int(labels(t["query_id"], [t["doc_id"]])[0])} for t in tasks]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    camp.import_judgments(path)
    return [(str(t["query_id"]), str(t["doc_id"])) for t in tasks]


def _run_rounds(camp, labels, tmp_path, rounds_out=None):
    asked, rounds = [], 0
    while camp.status().draws_usable == 0:
        got = _round(camp, labels, tmp_path / f"r{rounds}.jsonl")
        assert got, "a round with waiting queries exports tasks"
        st = camp.status()
        assert st.cost_spent <= st.cost_planned <= camp.budget  # the hard budget holds in every round
        asked += got
        if rounds_out is not None:
            rounds_out.append(sorted(got))
        rounds += 1
        assert rounds < 200
    return asked, rounds


def _engine_rounds(camp, labels, seed):
    """The engine's label requests round by round (its FixedBudget loop on the campaign's design)."""
    d, pool = camp.design(), camp.pool()
    kind, rng = d.method_spec.kind, np.random.default_rng(seed)
    plan = kind.plan(d, camp.budget, judged=None, rng=rng)
    sample = kind.draw(d, plan, rng)
    held = np.full(pool.n_docs, -1, dtype=np.int64)
    out = []
    while True:
        req = kind.labels_needed(d, plan, sample, held)
        if not len(req):
            return out
        pairs = []
        for x, rows in req.by_query():
            qid, docs = pool.query_ids[x], pool.doc_keys(np.asarray(rows))
            held[np.asarray(rows)] = labels(qid, list(docs))
            pairs += [(str(qid), str(doc)) for doc in docs]
        out.append(sorted(pairs))


def _same(res, ref):
    assert type(res) is type(ref) and res.method == ref.method == METHOD
    for name in ("estimate", "difference", "standard_error"):
        if hasattr(ref, name):
            assert getattr(res, name) == pytest.approx(getattr(ref, name), rel=1e-12, abs=1e-15)
    if hasattr(ref, "differences"):
        np.testing.assert_allclose(res.differences, ref.differences, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.standard_errors, ref.standard_errors, rtol=1e-12, atol=1e-15)
    assert res.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12)
    np.testing.assert_array_equal(res.trace["doc_row"], ref.trace["doc_row"])
    np.testing.assert_allclose(res.trace["P"], ref.trace["P"], rtol=1e-12)


def test_rounds_ask_what_the_engine_asks_and_the_estimate_equals_estimate(tmp_path, data, probs, labels):
    a = data.X[:, 24]
    rec = Recording(labels)
    ref = ar.estimate(data, a, probs, rec, budget=8, metric="err@10", method=METHOD, rng=5)
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="err@10", method=METHOD,
                         seed=5) as c:
        assert c.unit == "prefix" and c.check() == []
        st = c.status()
        # the priority order holds every live query; the budget reaches some of them in the first round
        assert 0 < st.n_draws < len(c.plan().queries)
        assert st.n_documents_judged == 0 and st.n_documents_needed == st.n_draws
        with pytest.raises(ValueError, match="wait for a judgment"):
            c.estimate()
        engine_rounds, ours = _engine_rounds(c, labels, 5), []
        asked, rounds = _run_rounds(c, labels, tmp_path, ours)
        res = c.estimate()
        st, qids = c.status(), c.query_ids
        assert st.blocking_query is None and c.check() == []
    assert sorted(asked) == sorted(rec.asked)  # the same documents, each asked once
    assert ours == engine_rounds  # round by round what the engine asks for
    _same(res, ref)
    # the hard budget: spent (the cut query's labels included) = the engine's cost, within the budget
    assert st.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12) and ref.cost_spent <= 8 * (1 + 1e-9)
    assert st.cost_planned == st.cost_spent and st.draws_usable == ref.trace.attrs["n_sampled_queries"]
    cut = ref.trace.attrs["cut_query"]
    assert cut is not None and st.n_draws == st.draws_usable + 1  # this budget and seed cut a query
    assert qids[cut] in st.queries_done and st.n_documents_judged == len(ref.trace)
    with sqlite3.connect(tmp_path / "c.db") as con:
        assert con.execute("SELECT version FROM schema_version").fetchone()[0] == PREFIX_SCHEMA_VERSION
    with Campaign.open(tmp_path / "c.db") as c:  # everything the estimate needs is stored
        _same(c.estimate(), ref)
        assert c.check() == []


@pytest.mark.parametrize("target", [None, "baseline"])
def test_comparisons_round_trip(tmp_path, data, probs, labels, target):
    if target is None:
        systems, kw = [data.X[:, 24], data.X[:, 39]], {}
        ref = ar.compare(data, *systems, probs, labels, budget=10, metric="err@10", method=METHOD, rng=5)
    else:
        systems = {f"s{j}": data.X[:, j] for j in (10, 24, 39)}
        kw = {"target": "baseline"}
        ref = ar.compare_many(data, [systems["s10"], systems["s24"]], systems["s39"], probs, labels, budget=10,
                              metric="err@10", method=METHOD, rng=5, names=["s10", "s24"], baseline_name="s39")
    with Campaign.create(tmp_path / "c.db", data, systems, probs, budget=10, metric="err@10", method=METHOD,
                         seed=5, **kw) as c:
        _run_rounds(c, labels, tmp_path)
        _same(c.estimate(), ref)


def test_a_round_survives_reopening_and_tasks_follow_the_labels(tmp_path, data, probs, labels):
    a = data.X[:, 24]
    path = tmp_path / "c.db"
    with Campaign.create(path, data, a, probs, budget=8, metric="err@10", method=METHOD, seed=4) as c:
        first = _round(c, labels, tmp_path / "r0.jsonl")
        waiting = c.status().queries_partial
    with Campaign.open(path) as c:
        st = c.status()
        assert st.queries_partial == waiting and st.n_documents_judged == len(first)
        for qid in waiting:  # judged so far, then the next document asked
            docs = c.tasks(qid)
            assert (qid, docs[0]) in first and len(docs) == 2
        # a document outside the query's judging layout (below every ranking's cutoff) is not a task
        offsets = c.pool().offsets
        outside = [(qid, r) for qid in waiting for r in range(offsets[c.query_ids.index(qid)],
                                                              offsets[c.query_ids.index(qid) + 1])
                   if r not in c._task_cost]
        assert outside  # some query has documents below the cutoff
        qid, r = outside[0]
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps({"query_id": qid, "doc_id": c.pool().doc_keys([r])[0], "grade": 1}) + "\n")
        rep = c.import_judgments(bad)
        assert rep.accepted == 0 and "not among the query's documents to judge" in rep.rejected[0].message
        with pytest.raises(ValueError, match=r"wait for a judgment .*The judgments are kept"):
            c.estimate()
        assert c.status().n_documents_judged == len(first)


def test_distributed_pools_refuse_prefix():
    from activerank.campaign.store import _create_args_iv

    with pytest.raises(ValueError, match="plans whole queries only"):
        _create_args_iv("x.db", "mean_gain", False, 5, 1, method=METHOD, documents=False)


def test_judgments_ahead_of_the_walk_are_kept_and_used(tmp_path, data, probs, labels):
    # an annotator who judges every document of every sampled query at once: one import, no more rounds
    a = data.X[:, 24]
    ref = ar.estimate(data, a, probs, labels, budget=8, metric="err@10", method=METHOD, rng=4)
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="err@10", method=METHOD,
                         seed=4) as c:
        rows = []
        for x in c.plan().queries.tolist():
            qid = c.query_ids[x]
            lo, hi = c.pool().offsets[x], c.pool().offsets[x + 1]
            docs = [d for r, d in zip(range(lo, hi), c.pool().doc_keys(np.arange(lo, hi))) if r in c._task_cost]
            rows += [{"query_id": qid, "doc_id": d, "grade": int(g)} for d, g in zip(docs, labels(int(qid), docs))]
        (tmp_path / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        rep = c.import_judgments(tmp_path / "all.jsonl")
        assert rep.accepted == len(rows) and rep.n_rejected == 0
        st = c.status()
        # walks stop early; the judgments past the budget count nowhere
        assert 0 < st.draws_usable <= st.n_draws and st.n_documents_judged < len(rows)
        assert st.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12) and st.cost_spent <= c.budget
        assert c.check() == []
        _same(c.estimate(), ref)
        assert c.export_tasks(tmp_path / "t.jsonl", overwrite=True).n_rows == 0


def test_exclude_exported_skips_only_tasks_already_out(tmp_path, data, probs, labels):
    a = data.X[:, 24]
    ref = ar.estimate(data, a, probs, labels, budget=8, metric="err@10", method=METHOD, rng=4)
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="err@10", method=METHOD,
                         seed=4) as c:
        for r in range(100):
            if c.status().draws_usable:
                break
            out = tmp_path / f"t{r}.jsonl"
            rep = c.export_tasks(out, exclude_exported=True)
            assert rep.n_rows > 0  # the walks moved on: new tasks, not the exported ones
            # exporting again before any answer gives nothing new
            assert c.export_tasks(tmp_path / f"again{r}.jsonl", exclude_exported=True).n_rows == 0
            tasks = [json.loads(line) for line in out.read_text().splitlines()]
            ans = [{**t, "grade": int(labels(t["query_id"], [t["doc_id"]])[0])} for t in tasks]
            (tmp_path / f"a{r}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in ans))
            c.import_judgments(tmp_path / f"a{r}.jsonl")
        _same(c.estimate(), ref)


def test_a_store_of_the_former_poisson_design_opens_but_is_not_estimated(tmp_path, data, probs, labels):
    from activerank.campaign.integrity import seal

    a = data.X[:, 24]
    path = tmp_path / "c.db"
    with Campaign.create(path, data, a, probs, budget=8, metric="err@10", method=METHOD, seed=4) as c:
        first = _round(c, labels, tmp_path / "r0.jsonl")
    # a store written before the hard budget: no priorities, schema version 7 (its checksums sealed as then)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM arrays WHERE name = 'prefix_xi'")
        con.execute("UPDATE schema_version SET version = 7")
        seal(con)
    with Campaign.open(path) as c:
        assert c.check() == []
        st = c.status()
        assert st.n_documents_judged == len(first) and st.n_judgments == len(first)
        judged = c.judgments()
        assert sum(len(d) for d in judged.values()) == len(first)  # every stored judgment exports
        assert c.write_qrels(tmp_path / "old.qrels") == len(first)
        c.backup(tmp_path / "backup.db")
        for _ in range(2):  # refused, and refused again: nothing is dropped
            with pytest.raises(ValueError, match=r"before the prefix method's hard budget.*Poisson.*judgments="):
                c.estimate()
        assert c.status().n_judgments == len(first)
    # its judgments are reused by the engine at no cost
    qrels = {k: {d: int(g) for d, g in v.items()} for k, v in judged.items()}
    res = ar.estimate(data, a, probs, labels, budget=8, metric="err@10", method=METHOD, rng=4,
                      judgments={int(k): v for k, v in qrels.items()})
    assert np.isfinite(res.estimate)


def test_check_finds_judgments_over_the_budget(tmp_path, data, probs, labels, monkeypatch):
    a = data.X[:, 24]
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="err@10", method=METHOD,
                         seed=5) as c:  # a seed whose budget cuts a query
        _run_rounds(c, labels, tmp_path)
        assert c.check() == []
        # a replay that walked past the budget (a broken budget walk) is reported
        from activerank.campaign.prefix import PrefixCampaignPlan

        walk = PrefixCampaignPlan.walk
        monkeypatch.setattr(PrefixCampaignPlan, "walk", lambda self, d, g, budget, layout=None:
                            walk(self, d, g, 2 * budget, layout))
        assert any("cost more than the budget 8" in p for p in c.check())
