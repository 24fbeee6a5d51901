"""Document-level campaigns (activerank.campaign.documents): (query id, document id) tasks of the engine's
budgeted sample, export -> import round trips, the estimate from the store against the in-memory engine."""

import csv
import json
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign
from activerank.campaign.store import DOCUMENT_SCHEMA_VERSION, RECORDED_SCHEMA_VERSION
from activerank.design.kinds.documents import DocumentHorvitzThompson
from activerank.design.methods import method_names

METRIC = "dcg@5"
# campaigns plan the Poisson designs' sample; the other document-level plug-ins' requests are recorded
DOC_METHODS = method_names(kind=DocumentHorvitzThompson)
OTHER_DOC_METHODS = tuple(m for m in method_names(unit="document") if m not in DOC_METHODS)


def read_tasks(path):
    path = str(path)
    with open(path, newline="") as f:
        if path.endswith(".jsonl"):
            return [json.loads(line) for line in f]
        return list(csv.DictReader(f))


def write_answers(rows, path):
    path = str(path)
    with open(path, "w", newline="") as f:
        if path.endswith(".jsonl"):
            for r in rows:
                f.write(json.dumps(r) + "\n")
        else:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)


def answer(tasks_path, out_path, labels, *, keep=None):
    """Simulated annotator: fills the task rows with the LETOR labels (only rows ``keep`` says yes to)."""
    rows = read_tasks(tasks_path)
    for r in rows:
        r["grade"] = int(labels(int(r["query_id"]), [r["doc_id"]])[0])
        r["annotator"] = "sim"
    rows = [r for i, r in enumerate(rows) if keep is None or keep(i, r)]
    write_answers(rows, out_path)
    return rows


class Recorder:
    """The in-memory labeler, recording what the engine asks for."""

    def __init__(self, labels):
        self.labels = labels
        self.asked = []

    def __call__(self, qid, docs):
        self.asked += [(str(qid), str(d)) for d in docs]
        return self.labels(qid, docs)


def tasks_of(camp):
    rows = camp.document_plan().rows
    qidx = np.repeat(np.arange(len(camp.query_ids)), np.diff(camp.pool().offsets))
    keys = camp.pool().doc_keys(rows)
    return [(camp.query_ids[qidx[r]], str(d)) for r, d in zip(rows.tolist(), keys)]


def assert_same_result(res, ref):
    assert type(res) is type(ref)
    for name in ("estimate", "difference", "standard_error"):
        if hasattr(ref, name):
            assert getattr(res, name) == pytest.approx(getattr(ref, name), rel=1e-12, abs=1e-12)
    for name in ("differences", "standard_errors", "relative", "covariance"):
        if hasattr(ref, name):
            np.testing.assert_allclose(getattr(res, name), getattr(ref, name), rtol=1e-12, atol=1e-12)
    assert res.n_draws == ref.n_draws and res.n_queries == ref.n_queries
    assert res.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12) and res.budget == ref.budget
    assert res.exact == ref.exact and res.method == ref.method
    np.testing.assert_array_equal(res.trace["doc_row"], ref.trace["doc_row"])
    np.testing.assert_allclose(res.trace["pi"], ref.trace["pi"], rtol=1e-12)


# --------------------------------------------------------------------------- the plan is the engine's sample


@pytest.mark.parametrize("method", DOC_METHODS)
def test_tasks_are_exactly_the_documents_the_engine_asks_for(tmp_path, data, probs, labels, method):
    rec = Recorder(labels)
    ar.estimate(data, data.X[:, 0], probs, rec, budget=4, metric=METRIC, method=method, rng=3)
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method=method,
                         seed=3) as c:
        assert c.unit == "document" and c.method == method
        assert tasks_of(c) == rec.asked
        st = c.status()
        assert st.unit == "document" and st.n_draws == st.n_documents_needed == len(rec.asked)
        assert st.n_documents_judged == 0 and st.draws_usable == 0
        assert c.check() == []


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("method", DOC_METHODS)
def test_round_trip_equals_activerank_estimate(tmp_path, data, probs, labels, method, fmt):
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method=method,
                         seed=3) as c:
        exp = c.export_tasks(tmp_path / f"t.{fmt}")
        rows = read_tasks(tmp_path / f"t.{fmt}")
        assert exp.n_rows == len(rows) == c.status().n_draws > 0
        assert list(rows[0]) == ["query_id", "query_text", "doc_id", "draw", "grade", "annotator"]
        # each task its own draw: its place in the budgeted draw's order
        assert sorted(int(r["draw"]) for r in rows) == list(range(len(rows)))
        answer(tmp_path / f"t.{fmt}", tmp_path / f"a.{fmt}", labels)
        rep = c.import_judgments(tmp_path / f"a.{fmt}")
        assert rep.accepted == exp.n_rows and not rep.rejected
        res = c.estimate()
        st = c.status()
        assert c.export_tasks(tmp_path / "rest.jsonl").n_rows == 0
        assert c.check() == []
    ref = ar.estimate(data, data.X[:, 0], probs, labels, budget=4, metric=METRIC, method=method, rng=3)
    assert_same_result(res, ref)
    assert st.n_documents_judged == st.n_documents_needed and st.draws_usable == st.n_draws
    assert st.cost_spent == pytest.approx(ref.cost_spent) and st.blocking_query is None


@pytest.mark.parametrize("judge", ["changeable", "all"])
@pytest.mark.parametrize("method", DOC_METHODS)
def test_round_trip_compare(tmp_path, data, probs, labels, method, judge):
    with Campaign.create(tmp_path / "c.db", data, {"f3": data.X[:, 2], "f21": data.X[:, 20]}, probs, budget=3,
                         metric=METRIC, method=method, seed=5, judge=judge) as c:
        c.export_tasks(tmp_path / "t.csv")
        answer(tmp_path / "t.csv", tmp_path / "a.csv", labels)
        c.import_judgments(tmp_path / "a.csv")
        res = c.estimate()
        tasks = tasks_of(c)
    rec = Recorder(labels)
    ref = ar.compare(data, data.X[:, 2], data.X[:, 20], probs, rec, budget=3, metric=METRIC, method=method, rng=5,
                     judge=judge)
    assert tasks == rec.asked and not ref.exact
    assert_same_result(res, ref)
    assert np.isnan([res.estimate_a, res.estimate_b]).all()


@pytest.mark.parametrize("target", ["baseline", "ranking"])
def test_round_trip_several_systems(tmp_path, data, probs, labels, target):
    systems = {"f1": data.X[:, 0], "f11": data.X[:, 10], "f40": data.X[:, 39]}
    with Campaign.create(tmp_path / "c.db", data, systems, probs, budget=3, metric=METRIC, method="doc_dyn",
                         seed=7, target=target) as c:
        c.export_tasks(tmp_path / "t.jsonl")
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
        c.import_judgments(tmp_path / "a.jsonl")
        res = c.estimate()
    if target == "baseline":
        ref = ar.compare_many(data, [data.X[:, 0], data.X[:, 10]], data.X[:, 39], probs, labels, budget=3,
                              metric=METRIC, method="doc_dyn", rng=7)
    else:
        ref = ar.rank_systems(data, list(systems.values()), probs, labels, budget=3, metric=METRIC,
                              method="doc_dyn", rng=7)
    assert_same_result(res, ref)


# --------------------------------------------------------------------------- partial judgments


def test_partial_judgments_estimate_from_the_judged_head_of_the_draw_order(tmp_path, data, probs, labels):
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method="doc_dyn",
                         seed=3) as c:
        c.export_tasks(tmp_path / "t.jsonl")
        n = c.status().n_draws
        with pytest.raises(ValueError, match=f"nothing to estimate yet: {n} of {n} sampled documents"):
            c.estimate()
        tasks = read_tasks(tmp_path / "t.jsonl")
        assert sorted(int(r["draw"]) for r in tasks) == list(range(n))  # the budgeted draw's order
        # every task but the first of the draw order answered: no judged head, no estimate, nothing lost
        answer(tmp_path / "t.jsonl", tmp_path / "late.jsonl", labels, keep=lambda i, r: int(r["draw"]) != 0)
        assert c.import_judgments(tmp_path / "late.jsonl").accepted == n - 1
        with pytest.raises(ValueError, match=r"nothing to estimate yet: 1 of .* only 0 judged ones lead"):
            c.estimate()
        st = c.status()
        assert st.draws_usable == 0
        assert st.n_documents_judged == n - 1 and st.n_judgments == n - 1
        # the first task answered too: the whole sample, the engine's estimate
        c.export_tasks(tmp_path / "rest.jsonl")
        rest = read_tasks(tmp_path / "rest.jsonl")
        assert [int(r["draw"]) for r in rest] == [0]
        answer(tmp_path / "rest.jsonl", tmp_path / "rest_a.jsonl", labels)
        c.import_judgments(tmp_path / "rest_a.jsonl")
        res = c.estimate()
    ref = ar.estimate(data, data.X[:, 0], probs, labels, budget=4, metric=METRIC, method="doc_dyn", rng=3)
    assert_same_result(res, ref)


def test_the_judged_head_of_the_draw_order_gives_an_estimate_while_tasks_are_out(tmp_path, data, probs, labels):
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=6, metric=METRIC, method="doc_dyn",
                         seed=5) as c:
        c.export_tasks(tmp_path / "t.jsonl")
        n = c.status().n_draws
        m = n // 2
        answer(tmp_path / "t.jsonl", tmp_path / "head.jsonl", labels,
               keep=lambda i, r: int(r["draw"]) < m or int(r["draw"]) == n - 1)
        c.import_judgments(tmp_path / "head.jsonl")
        res = c.estimate()
        assert res.trace.attrs["partial"] and res.trace.attrs["tasks_in_estimate"] == m
        assert c.status().draws_usable == m  # the judged head the estimate uses
        assert res.trace.attrs["tasks_missing"] == n - m - 1 and res.trace.attrs["tasks_judged_outside_estimate"] == 1
        assert len(res.trace) == m and res.cost_spent <= res.budget
        assert np.all(res.trace["pi"] <= 1.0) and np.isfinite(res.standard_error)


@pytest.mark.statistical
def test_estimates_from_judged_heads_are_unbiased(data, probs, labels):
    """Annotators answer the first m tasks of the draw order (m at random): the estimate stays unbiased."""
    from activerank.campaign.documents import estimate_documents, plan_documents
    from activerank.pool import pool_iv

    dsg = ar.make_design(data, (ar.relevance.rank_by_scores(data.X[:, 0], data.offsets),), probs, metric=METRIC,
                         method="doc_dyn")
    truth = float(np.mean(ar.pool_metric_values(data.labels, dsg.target.rankings[0], metric=METRIC, ymax=2)))
    rng = np.random.default_rng(0)
    est = []
    for seed in range(600):
        plan = plan_documents(dsg, pool_iv(data), 6.0, seed)
        m = int(rng.integers(2, plan.n_tasks + 1))
        rank = plan.draw_order(seed)
        head, got = plan.judged_prefix(rank < m, seed)
        assert got == m
        res = estimate_documents(dsg, pool_iv(data), head, data.labels[head.rows], probs, budget=6.0)
        est.append(res.estimate)
    est = np.array(est)
    assert abs(est.mean() - truth) <= 3.5 * est.std() / np.sqrt(est.size)


def test_scope_tasks_refuses_unsampled_documents_and_pool_keeps_them(tmp_path, data, probs, labels):
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method="doc_dyn",
                         seed=3) as c:
        plan = c.document_plan()
        sampled = set(plan.rows.tolist())
        x = int(plan.queries[0])
        offsets = c.pool().offsets
        unsampled = next(r for r in range(offsets[x], offsets[x + 1]) if r not in sampled)
        other_q = next(q for q in range(len(c.query_ids)) if q not in set(plan.queries.tolist()))
        qid, doc = c.query_ids[x], c.pool().doc_keys([unsampled])[0]
        qid2, doc2 = c.query_ids[other_q], c.pool().doc_keys([offsets[other_q]])[0]
        lines = [{"query_id": qid, "doc_id": doc, "grade": 1}, {"query_id": qid2, "doc_id": doc2, "grade": 2}]
        write_answers(lines, tmp_path / "extra.jsonl")
        rep = c.import_judgments(tmp_path / "extra.jsonl")
        assert rep.accepted == 0 and [r.message for r in rep.rejected] == [
            f"document {doc!r} of query {qid!r} is not a task of this campaign (the document was not sampled); "
            "import pre-existing judgments with scope='pool'",
            f"document {doc2!r} of query {qid2!r} is not a task of this campaign (no document of the query was "
            "sampled); import pre-existing judgments with scope='pool'"]
        write_answers(lines, tmp_path / "old.jsonl")
        (tmp_path / "old.jsonl").write_text((tmp_path / "old.jsonl").read_text() + "\n")  # another file content
        rep = c.import_judgments(tmp_path / "old.jsonl", scope="pool")
        assert rep.accepted == 2
        assert c.judgments(scope="tasks") == {} and c.judgments(scope="pool") == {qid: {doc: 1}, qid2: {doc2: 2}}
        st = c.status()
        assert st.n_judgments == 2 and st.n_documents_judged == 0
        # judgments outside the sample never enter the estimate
        c.export_tasks(tmp_path / "t.jsonl")
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
        c.import_judgments(tmp_path / "a.jsonl")
        res = c.estimate()
    ref = ar.estimate(data, data.X[:, 0], probs, labels, budget=4, metric=METRIC, method="doc_dyn", rng=3)
    assert_same_result(res, ref)


# --------------------------------------------------------------------------- the store alone


def _judged_campaign(tmp_path, data, probs, labels, method="doc_dyn"):
    c = Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method=method,
                        seed=3)
    c.export_tasks(tmp_path / "t.jsonl")
    answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
    c.import_judgments(tmp_path / "a.jsonl")
    return c


def test_reopened_store_gives_the_same_estimate(tmp_path, data, probs, labels):
    with _judged_campaign(tmp_path, data, probs, labels) as c:
        first = c.estimate()
        plan = c.document_plan()
    with Campaign.open(tmp_path / "c.db") as again:
        res = again.estimate()
        p2 = again.document_plan()
        assert again.unit == "document" and again.check() == []
    assert res.estimate == first.estimate and res.standard_error == first.standard_error
    for a, b in zip(plan.arrays().values(), p2.arrays().values()):
        np.testing.assert_array_equal(a, b)
    # a fresh interpreter, from the file alone
    code = ("import json, sys; from activerank.campaign import Campaign\n"
            "r = Campaign.open(sys.argv[1]).estimate()\n"
            "print(json.dumps([r.estimate.hex(), r.standard_error.hex(), r.n_draws]))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "c.db")], capture_output=True, text=True,
                         check=True).stdout
    est, se, n = json.loads(out)
    assert float.fromhex(est) == first.estimate and float.fromhex(se) == first.standard_error and n == first.n_draws


def test_estimate_uses_the_stored_design_not_the_current_code(tmp_path, data, probs, labels, monkeypatch):
    """Inclusion probabilities are frozen at creation: a later change of how they are chosen cannot move an
    existing campaign's estimate."""
    import activerank.campaign.documents as cdoc
    import activerank.design.kinds.documents.designs as ddes
    import activerank.design.kinds.documents.sampling as ddoc

    with _judged_campaign(tmp_path, data, probs, labels) as c:
        before = c.estimate()

    def broken(*args, **kwargs):
        raise AssertionError("the estimate must not recompute the design")

    for mod in (ddoc, ddes, cdoc):
        monkeypatch.setattr(mod, "inclusion_probabilities", broken, raising=False)
    monkeypatch.setattr(ddes, "document_target_of", broken)
    with Campaign.open(tmp_path / "c.db") as c:
        after = c.estimate()
    assert after.estimate == before.estimate and after.standard_error == before.standard_error


def test_store_layout(tmp_path, data, probs, labels):
    with _judged_campaign(tmp_path, data, probs, labels) as c:
        plan = c.document_plan()
    conn = sqlite3.connect(tmp_path / "c.db")
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(DOCUMENT_SCHEMA_VERSION,)]
    meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    assert meta["unit"] == "document" and meta["method"] == "doc_dyn"
    assert meta["expected_cost"] == pytest.approx(4.0)
    names = {n for (n,) in conn.execute("SELECT name FROM arrays")}
    assert {"unit_rows", "unit_query", "unit_weights", "unit_gains", "unit_offsets", "unit_pi", "unit_costs",
            "unit_sample"} <= names
    draws = conn.execute("SELECT qx, new, charged FROM draws ORDER BY j").fetchall()
    conn.close()
    assert [d[0] for d in draws] == plan.queries.tolist() and all(d[1] == 1 for d in draws)
    np.testing.assert_array_equal([d[2] for d in draws], plan.costs)


def test_check_detects_a_tampered_sample(tmp_path, data, probs, labels):
    with _judged_campaign(tmp_path, data, probs, labels) as c:
        sample = c.document_plan().sample
    conn = sqlite3.connect(tmp_path / "c.db")
    bad = np.ascontiguousarray(sample[1:], dtype="<i8")
    conn.execute("UPDATE arrays SET data = ?, shape = ? WHERE name = 'unit_sample'",
                 (bad.tobytes(), json.dumps([bad.size])))
    conn.commit()
    conn.close()
    with Campaign.open(tmp_path / "c.db") as c:
        problems = c.check()
    assert "the stored document sample differs from a replay with the stored seed and inclusion probabilities" \
        in problems
    assert "the stored draws differ from the stored document sample" in problems


# --------------------------------------------------------------------------- export options, errors


def test_export_limit_exclude_and_max_cost(tmp_path, data, probs):
    with Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method="doc_dyn",
                         seed=3) as c:
        plan = c.document_plan()
        a = c.export_tasks(tmp_path / "a.csv", limit=2)
        assert a.n_queries == 2
        b = c.export_tasks(tmp_path / "b.csv", limit=2, exclude_exported=True)
        assert not set(a.query_ids) & set(b.query_ids)
        per_query = {c.query_ids[x]: float(plan.costs[plan.queries == x].sum()) for x in np.unique(plan.queries)}
        assert a.cost == pytest.approx(sum(per_query[q] for q in a.query_ids))
        m = c.export_tasks(tmp_path / "m.csv", max_cost=1.0)
        assert m.cost <= 1.0 + 1e-9 and m.cost + per_query[c.query_ids[int(plan.queries[m.n_rows])]] > 1.0


def test_create_errors(tmp_path, data, probs):
    with pytest.raises(ValueError, match="needs a metric that adds over documents"):
        Campaign.create(tmp_path / "e.db", data, data.X[:, 0], probs, budget=4, metric="err@10", method="doc_dyn")
    with pytest.raises(ValueError, match="`budget`=0.1 is too small"):
        Campaign.create(tmp_path / "e.db", data, data.X[:, 0], probs, budget=0.1, metric=METRIC, method="doc_stat")
    with pytest.raises(ValueError, match="no document can change the compared values"):
        Campaign.create(tmp_path / "e.db", data, [data.X[:, 0], data.X[:, 0]], probs, budget=4, metric=METRIC,
                        method="doc_dyn")
    with pytest.raises(ValueError, match="`method` must be one of"):
        Campaign.create(tmp_path / "e.db", data, data.X[:, 0], probs, budget=4, metric=METRIC, method="doc_magic")
    assert not (tmp_path / "e.db").exists()


@pytest.mark.parametrize("method", OTHER_DOC_METHODS)  # doc_uniform, doc_hh, two_stage, doc_ubis
@pytest.mark.parametrize("two", [False, True])
def test_recorded_designs_round_trip_and_equal_the_engine(tmp_path, data, probs, labels, method, two):
    rankers = [data.X[:, 24], data.X[:, 39]] if two else data.X[:, 24]
    rec = Recorder(labels)
    fn = ar.compare if two else ar.estimate
    ref = fn(data, *(rankers if two else [rankers]), probs, rec, budget=12, metric=METRIC, method=method, rng=3)
    with Campaign.create(tmp_path / "c.db", data, rankers, probs, budget=12, metric=METRIC, method=method,
                         seed=3) as c:
        assert c.unit == "document" and c.check() == []
        c.export_tasks(tmp_path / "t.jsonl")
        rows = answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels, keep=lambda i, r: i > 0)
        c.import_judgments(tmp_path / "a.jsonl")
        with pytest.raises(ValueError, match="nothing to estimate yet: 1 of"):
            c.estimate()
        answer(tmp_path / "t.jsonl", tmp_path / "b.jsonl", labels)
        c.import_judgments(tmp_path / "b.jsonl")
        res = c.estimate()
    assert len(rows) + 1 == int(ref.trace["new"].sum())  # one task per new document the engine asked for
    exported = [(str(r["query_id"]), str(r["doc_id"])) for r in read_tasks(tmp_path / "t.jsonl")]
    assert sorted(exported) == sorted(rec.asked)  # what the engine asks for, each document once
    for name in ("estimate", "difference", "standard_error", "cost_spent"):
        if hasattr(ref, name):
            assert getattr(res, name) == pytest.approx(getattr(ref, name), rel=1e-12, abs=1e-15)
    assert res.method == method
    with sqlite3.connect(tmp_path / "c.db") as con:
        assert con.execute("SELECT version FROM schema_version").fetchone()[0] == RECORDED_SCHEMA_VERSION
    with Campaign.open(tmp_path / "c.db") as c:
        assert c.estimate().standard_error == pytest.approx(ref.standard_error, rel=1e-12)


def test_a_design_that_chooses_from_the_labels_is_refused(tmp_path, data, probs, monkeypatch):
    import activerank.campaign.documents as cd

    real = cd._record

    def depends(design, pool, budget, seed, grade):  # as if the draws followed the answers
        t = real(design, pool, budget, seed, grade)
        return t.iloc[::-1] if grade else t

    monkeypatch.setattr(cd, "_record", depends)
    with pytest.raises(ValueError, match="chooses its documents from the labels it sees"):
        Campaign.create(tmp_path / "e.db", data, data.X[:, 0], probs, budget=6, metric=METRIC, method="doc_hh")
    assert not (tmp_path / "e.db").exists()


def test_a_recorded_designs_query_overhead_is_charged_as_the_engine_does(tmp_path, data, probs, labels):
    from activerank.design.kinds.two_stage import TwoStage
    from activerank.design.methods import Method, get_method, register_method, unregister_method

    register_method(Method("two_stage_overhead_c", get_method("two_stage").sample, TwoStage(query_cost=1.0)))
    try:
        ref = ar.estimate(data, data.X[:, 24], probs, labels, budget=12, metric=METRIC, method="two_stage_overhead_c",
                          rng=3)
        assert ref.trace.attrs["query_overhead_cost"] > 0
        with Campaign.create(tmp_path / "c.db", data, data.X[:, 24], probs, budget=12, metric=METRIC,
                             method="two_stage_overhead_c", seed=3) as c:
            assert c.status().cost_planned == pytest.approx(ref.cost_spent, rel=1e-12)
            rep = c.export_tasks(tmp_path / "t.jsonl")
            assert rep.cost == pytest.approx(ref.cost_spent, rel=1e-12)
            answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
            c.import_judgments(tmp_path / "a.jsonl")
            assert c.status().cost_spent == pytest.approx(ref.cost_spent, rel=1e-12)
            assert c.estimate().estimate == pytest.approx(ref.estimate, rel=1e-12)
    finally:
        unregister_method("two_stage_overhead_c")


@pytest.mark.parametrize("method", ["doc_dyn", "doc_stat"])
def test_labels_held_at_creation_are_certain_and_free(tmp_path, data, probs, labels, method):
    """``init --qrels`` in a document campaign: the held documents are certain, free and never exported, as
    ``judgments=`` makes them in activerank.estimate; a judged head of the tasks estimates with them in."""
    held = {}
    for x in range(6):
        rows = range(int(data.offsets[x]), int(data.offsets[x + 1]))
        held[data.query_ids[x]] = {data.doc_ids[r]: int(data.labels[r]) for r in rows}
    qrels = tmp_path / "held.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in held.items() for d, g in docs.items()))
    a = data.X[:, 24]
    ref = ar.estimate(data, a, probs, labels, budget=8, metric=METRIC, method=method, rng=3, judgments=held)
    n_held = int((ref.trace["stratum"] == "census").sum())
    assert n_held > 0
    with Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric=METRIC, method=method, seed=3,
                         held_qrels=qrels) as c:
        c.export_tasks(tmp_path / "t0.jsonl")
        answer(tmp_path / "t0.jsonl", tmp_path / "a0.jsonl", labels, keep=lambda i, r: int(r["draw"]) < 3)
        c.import_judgments(tmp_path / "a0.jsonl")
        with pytest.raises(ValueError, match="held at creation are not stored: import the held qrels"):
            c.estimate()
        assert c.status().draws_usable == 0
        c.import_qrels(qrels)
        c.export_tasks(tmp_path / "t.jsonl")
        rows = read_tasks(tmp_path / "t.jsonl")
        assert len(rows) == ref.n_draws - n_held - 3
        assert sorted(int(r["draw"]) for r in rows) == list(range(3, ref.n_draws - n_held))  # the tasks' own order
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels, keep=lambda i, r: int(r["draw"]) < 10)
        c.import_judgments(tmp_path / "a.jsonl")
        head = c.estimate()
        assert head.trace.attrs["tasks_in_estimate"] >= 10 and (head.trace["stratum"] == "census").sum() == n_held
        assert c.status().draws_usable == head.trace.attrs["tasks_in_estimate"]
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", labels)
        c.import_judgments(tmp_path / "a.jsonl")
        res = c.estimate()
    assert res.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)
    assert res.cost_spent == pytest.approx(ref.cost_spent, rel=1e-12)
