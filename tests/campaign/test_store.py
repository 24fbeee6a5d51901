"""Campaign store: round trip against activerank.estimate, bad files, idempotence, progress."""

import csv
import json
import sqlite3
import warnings

import numpy as np
import pytest

import activerank as ar
from activerank.campaign import Campaign, combine_grades
from activerank.inference.snis import LowEffectiveSampleSizeWarning

BUDGET = 12
METRIC = "dcg@5"


@pytest.fixture()
def camp(tmp_path, data, probs):
    c = Campaign.create(tmp_path / "c.db", data, data.X[:, 0], probs, budget=BUDGET, metric=METRIC, seed=3, method="active")
    yield c
    c.close()


def answer(tasks_path, out_path, data, *, annotator="sim", fmt=None, flip=None):
    """Simulated annotator: fills exported task rows with the LETOR labels."""
    lab = ar.KnownLabels.from_data(data)
    fmt = fmt or str(out_path).rsplit(".", 1)[1]
    src = str(tasks_path)
    if src.endswith(".jsonl"):
        with open(src) as f:
            rows = [json.loads(line) for line in f]
    else:
        with open(src, newline="") as f:
            rows = list(csv.DictReader(f))
    for r in rows:
        g = int(lab(int(r["query_id"]), [r["doc_id"]])[0])
        r["grade"] = flip(g) if flip else g
        r["annotator"] = annotator
    with open(out_path, "w", newline="") as f:
        if fmt == "jsonl":
            for r in rows:
                f.write(json.dumps(r) + "\n")
        else:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    return rows


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowEffectiveSampleSizeWarning)
        return fn(*a, **k)


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_round_trip_equals_activerank_estimate(tmp_path, data, probs, camp, fmt):
    exp = camp.export_tasks(tmp_path / f"tasks.{fmt}")
    assert exp.n_queries == len(camp.status().queries_pending) and exp.n_rows > 0
    answer(tmp_path / f"tasks.{fmt}", tmp_path / f"ans.{fmt}", data)
    rep = camp.import_judgments(tmp_path / f"ans.{fmt}")
    assert rep.accepted == exp.n_rows and not rep.rejected
    res = _quiet(camp.estimate)
    ref = _quiet(ar.estimate, data, data.X[:, 0], probs, ar.KnownLabels.from_data(data), budget=BUDGET,
                 metric=METRIC, method="active", rng=3)
    assert type(res) is type(ref)
    assert res.estimate == ref.estimate and res.standard_error == ref.standard_error
    assert res.n_draws == ref.n_draws and res.cost_spent == ref.cost_spent
    assert res.effective_sample_size == ref.effective_sample_size
    assert camp.check() == []
    # nothing left to export
    assert camp.export_tasks(tmp_path / "rest.jsonl").n_rows == 0


@pytest.mark.parametrize("judge", ["changeable", "all"])
@pytest.mark.parametrize("metric", ["err@10", "dcg@5"])
def test_round_trip_compare_passive(tmp_path, data, probs, judge, metric):
    with Campaign.create(tmp_path / "c.db", data, {"f1": data.X[:, 0], "f5": data.X[:, 4]}, probs,
                         budget=10, metric=metric, method="passive", seed=11, judge=judge) as c:
        c.export_tasks(tmp_path / "t.jsonl")
        answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", data)
        c.import_judgments(tmp_path / "a.jsonl")
        res = _quiet(c.estimate)
        assert c.names == ("f1", "f5")
        tasks = {q: set(c.tasks(q)) for q in c.status().queries_done}
    seen = {}

    def labeler(qid, docs):
        seen[str(qid)] = set(docs)
        return ar.KnownLabels.from_data(data)(qid, docs)

    ref = _quiet(ar.compare, data, data.X[:, 0], data.X[:, 4], probs, labeler,
                 budget=10, metric=metric, method="passive", rng=11, judge=judge)
    assert isinstance(res, ar.ComparisonResult)
    assert res.difference == ref.difference and res.standard_error == ref.standard_error
    assert res.cost_spent == ref.cost_spent and res.n_queries == ref.n_queries
    # the campaign asks annotators for exactly what compare asks its labeler for
    assert tasks == seen
    if judge == "all":
        assert res.estimate_a == ref.estimate_a and res.estimate_b == ref.estimate_b
    else:
        assert np.isnan([res.estimate_a, res.estimate_b, ref.estimate_a, ref.estimate_b]).all()


def test_reopen_reproduces_design_and_plan(tmp_path, data, probs, camp):
    dsg, plan = camp.design(), camp.plan()
    with Campaign.open(camp.path) as again:
        assert np.array_equal(again.design().q, dsg.q) and np.array_equal(again.plan().queries, plan.queries)
        assert np.array_equal(again.probs(), probs)
        assert again.seed == 3 and again.metric == METRIC and again.budget == BUDGET
        assert again.pool().query_ids.tolist() == data.query_ids.tolist()
    ref = ar.make_design(data, (ar.relevance.rank_by_scores(data.X[:, 0], data.offsets),), probs, metric=METRIC)
    assert np.array_equal(ref.q, dsg.q)


# --------------------------------------------------------------------------- progress and budget


def test_partial_progress_uses_fully_judged_prefix(tmp_path, data, camp):
    camp.export_tasks(tmp_path / "t.jsonl")
    rows = answer(tmp_path / "t.jsonl", tmp_path / "all.jsonl", data)
    planned = list(dict.fromkeys(str(r["query_id"]) for r in rows))
    with pytest.raises(ValueError, match="nothing to estimate yet: the first drawn query"):
        camp.estimate()
    # first two planned queries fully, third one partially
    keep = [r for r in rows if str(r["query_id"]) in planned[:2]]
    third = [r for r in rows if str(r["query_id"]) == planned[2]]
    with open(tmp_path / "part.jsonl", "w") as f:
        for r in keep + third[:1]:
            f.write(json.dumps(r) + "\n")
    camp.import_judgments(tmp_path / "part.jsonl")
    st = camp.status()
    assert st.queries_done == tuple(planned[:2])
    assert st.queries_partial == (planned[2],) if len(third) > 1 else True
    assert st.blocking_query == planned[2]
    res = _quiet(camp.estimate)
    assert res.n_draws == st.draws_usable > 0
    assert set(res.trace.query_id.astype(str)) <= set(planned[:2])
    assert st.cost_spent + st.cost_in_progress <= st.cost_planned <= st.budget
    assert st.budget_left == pytest.approx(st.budget - st.cost_spent - st.cost_in_progress)
    # next export skips judged documents
    exp = camp.export_tasks(tmp_path / "t2.jsonl")
    assert exp.query_ids[0] == planned[2] and exp.n_rows == len(rows) - len(keep) - 1


def test_budget_never_exceeded(tmp_path, data, probs):
    for budget in (1.0, 3.7, 29.5, 100.0):
        with Campaign.create(tmp_path / f"b{budget}.db", data, data.X[:, 2], probs, budget=budget,
                             metric="err@10", seed=0, method="active") as c:
            st = c.status()
            assert st.cost_planned <= budget and st.budget_left <= budget
            assert c.export_tasks(tmp_path / "x.csv", max_cost=budget / 2).cost <= budget / 2


def test_export_limit_exclude_and_atomic(tmp_path, camp):
    a = camp.export_tasks(tmp_path / "a.csv", limit=2)
    assert a.n_queries == 2
    b = camp.export_tasks(tmp_path / "b.csv", limit=2, exclude_exported=True)
    assert not set(a.query_ids) & set(b.query_ids)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    header = (tmp_path / "a.csv").read_text().splitlines()[0]
    assert header == "query_id,query_text,doc_id,draw,grade,annotator"
    with pytest.raises(ValueError, match="cannot tell the format"):
        camp.export_tasks(tmp_path / "a.txt")
    with pytest.raises(ValueError, match="`limit` must be a non-negative integer"):
        camp.export_tasks(tmp_path / "a.csv", limit=-1)
    assert camp.export_tasks(tmp_path / "z.csv", limit=0).n_rows == 0


# --------------------------------------------------------------------------- idempotence, conflicts


def test_reimport_is_idempotent_and_duplicates_are_not_stored(tmp_path, data, camp):
    camp.export_tasks(tmp_path / "t.jsonl")
    answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", data)
    first = camp.import_judgments(tmp_path / "a.jsonl")
    again = camp.import_judgments(tmp_path / "a.jsonl")
    assert again.already_imported and again.accepted_now == 0 and again.accepted == first.accepted
    # the same judgments in another file (reordered): duplicates, not stored again
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    (tmp_path / "b.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    dup = camp.import_judgments(tmp_path / "b.jsonl")
    assert dup.accepted == 0 and dup.duplicates == len(lines)
    assert camp.status().n_judgments == first.accepted


def test_conflicting_annotators_combined_by_mean_gain(tmp_path, data, camp):
    camp.export_tasks(tmp_path / "t.jsonl")
    answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", data, annotator="alice")
    answer(tmp_path / "t.jsonl", tmp_path / "b.jsonl", data, annotator="bob", flip=lambda g: 2 - g)
    camp.import_judgments(tmp_path / "a.jsonl")
    camp.import_judgments(tmp_path / "b.jsonl")
    st = camp.status()
    j = camp.judgments()
    j_major = camp.judgments(combine="majority")
    lab = ar.KnownLabels.from_data(data)
    n_conf = 0
    for q, docs in j.items():
        for d, g in docs.items():
            true = int(lab(int(q), [d])[0])
            assert g == combine_grades([true, 2 - true], "mean_gain")
            assert j_major[q][d] == min(true, 2 - true)
            n_conf += true != 1
    assert st.n_conflicts == n_conf > 0
    # all stored: both annotators' judgments kept
    assert st.n_judgments == 2 * st.n_documents_needed
    # an annotator's later judgment replaces their earlier one
    q0 = next(iter(j))
    d0 = next(iter(j[q0]))
    (tmp_path / "fix.jsonl").write_text(json.dumps({"query_id": q0, "doc_id": d0, "grade": 2,
                                                    "annotator": "bob"}) + "\n")
    camp.import_judgments(tmp_path / "fix.jsonl")
    true = int(lab(int(q0), [d0])[0])
    assert camp.judgments()[q0][d0] == combine_grades([true, 2])


def test_combine_grades_rules():
    assert combine_grades([1]) == 1
    assert combine_grades([0, 2]) == 1       # gains 0, 3 -> mean 1.5 -> gain 1 (grade 1)
    assert combine_grades([1, 2]) == 1       # gains 1, 3 -> mean 2 -> tie between 1 and 3 -> lower
    assert combine_grades([2, 2, 1]) == 2
    assert combine_grades([0, 0, 2], "majority") == 0
    assert combine_grades([0, 2], "majority") == 0
    with pytest.raises(ValueError, match="`rule` must be one of"):
        combine_grades([1, 2], "median")
    with pytest.raises(ValueError, match="must not be empty"):
        combine_grades([])


# --------------------------------------------------------------------------- bad files


@pytest.fixture()
def task(camp):
    """A valid (query id, doc id) task and an unrequested pool document."""
    x = camp.plan().queries[0]
    qid = camp.query_ids[x]
    doc = camp.tasks(qid)[0]
    return qid, doc


def _rej(rep):
    return {r.line: r.message for r in rep.rejected}


def test_bad_jsonl_rows_rejected_with_line_numbers(tmp_path, camp, task):
    qid, doc = task
    ok = json.dumps({"query_id": qid, "doc_id": doc, "grade": 1})
    lines = [
        ok,                                                                   # 1 ok
        '{"query_id": "%s", "doc_id": "%s", "gr' % (qid, doc),                # 2 truncated
        json.dumps({"query_id": qid, "doc_id": doc, "grade": "3.5"}),         # 3
        json.dumps({"query_id": qid, "doc_id": doc, "grade": -1}),            # 4
        json.dumps({"query_id": qid, "doc_id": doc, "grade": "high"}),        # 5
        json.dumps({"query_id": "nope", "doc_id": doc, "grade": 1}),          # 6
        json.dumps({"query_id": qid, "doc_id": "GX-none", "grade": 1}),       # 7
        json.dumps({"qid": qid, "docid": doc, "relevance": 1}),               # 8 wrong names
        "[1, 2, 3]",                                                          # 9
        json.dumps({"query_id": qid, "doc_id": doc, "grade": 3.5}),           # 10
        json.dumps({"query_id": qid, "doc_id": doc, "grade": True}),          # 11
        json.dumps({"query_id": qid, "doc_id": doc, "grade": 1, "judged_at": "yesterday"}),  # 12
        json.dumps({"query_id": qid, "doc_id": doc, "grade": 2, "annotator": "x",
                    "judged_at": "2024-05-01T10:00:00+00:00"}),               # 13 ok
    ]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines))   # no final newline
    rep = camp.import_judgments(tmp_path / "bad.jsonl")
    rej = _rej(rep)
    assert rep.accepted == 2 and sorted(rej) == list(range(2, 13))
    assert rej[2].startswith("malformed JSON")
    # one rule for numeric strings: JSON grades are numbers; text formats (CSV, qrels) parse integer text
    assert rej[3] == 'grade "3.5" is a JSON string; write a number (grades are numbers in JSONL)'
    assert rej[4] == "grade -1 is outside the scale 0..2"
    assert rej[5] == 'grade "high" is a JSON string; write a number (grades are numbers in JSONL)'
    assert rej[6] == "unknown query id 'nope' (not in the campaign's pool)"
    assert rej[7] == f"unknown document id 'GX-none' for query '{qid}' (not in the campaign's pool)"
    assert rej[8].startswith("missing fields 'query_id', 'doc_id', 'grade'")
    assert "found ['qid', 'docid', 'relevance']" in rej[8]
    assert rej[9] == "expected a JSON object, got list"
    assert rej[10] == "grade 3.5 is not an integer"
    assert rej[11] == "grade true is not an integer"
    assert rej[12] == "judged_at 'yesterday' is not an ISO 8601 time"
    assert rep.messages()[0] == f"{tmp_path / 'bad.jsonl'}: line 2: {rej[2]}"
    # annotator x and anonymous both stored: a conflict combined by the rule
    assert camp.status().n_conflicts == 1


def test_not_a_task_and_pool_scope(tmp_path, data, camp):
    planned = set(camp.status().queries_pending)
    x = next(i for i, q in enumerate(camp.query_ids) if q not in planned)
    qid = camp.query_ids[x]
    doc = str(data.doc_ids[data.offsets[x]])
    (tmp_path / "o.jsonl").write_text(json.dumps({"query_id": int(qid), "doc_id": doc, "grade": 1}) + "\n")
    rep = camp.import_judgments(tmp_path / "o.jsonl")
    assert "is not a task of this campaign (the query is not in the draw sequence)" in rep.rejected[0].message
    (tmp_path / "o2.jsonl").write_text(json.dumps({"query_id": qid, "doc_id": doc, "grade": 1}) + "\n \n")
    rep = camp.import_judgments(tmp_path / "o2.jsonl", scope="pool")
    assert rep.accepted == 1 and camp.judgments(scope="pool")[qid] == {doc: 1}
    assert qid not in camp.judgments()


def test_csv_wrong_columns_is_a_file_error(tmp_path, camp):
    (tmp_path / "w.csv").write_text("qid,docid,relevance\n1,2,3\n")
    with pytest.raises(ValueError, match=r"w\.csv: line 1: wrong column names: the CSV header must contain "
                       r"'query_id', 'doc_id', 'grade'; missing 'query_id', 'doc_id', 'grade' "
                       r"\(found 'qid', 'docid', 'relevance'\)"):
        camp.import_judgments(tmp_path / "w.csv")
    assert camp.status().n_imports == 0


def test_csv_rows_bom_and_crlf(tmp_path, camp, task):
    qid, doc = task
    body = ("query_id,doc_id,grade,annotator\r\n"
            f"{qid},{doc},2,ann\r\n"
            f"{qid},{doc},3.5,ann2\r\n"
            f"{qid},{doc},high,ann3\r\n"
            f"{qid},{doc},-1,ann4\r\n"
            f"{qid},{doc}\r\n"
            f"{qid},{doc},,ann5\r\n")
    (tmp_path / "x.csv").write_bytes(b"\xef\xbb\xbf" + body.encode())
    rep = camp.import_judgments(tmp_path / "x.csv")
    assert rep.accepted == 1 and rep.unanswered == 1
    assert _rej(rep) == {3: "grade '3.5' is not an integer", 4: "grade 'high' is not an integer",
                         5: "grade -1 is outside the scale 0..2", 6: "expected 4 fields as in the header, got 2"}
    assert "UTF-8 byte-order mark (BOM)" in rep.notes[0] and "CRLF" in rep.notes[1]
    assert camp.judgments()[qid][doc] == 2


def test_jsonl_bom_and_crlf(tmp_path, camp, task):
    qid, doc = task
    line = json.dumps({"query_id": qid, "doc_id": doc, "grade": 1})
    (tmp_path / "x.jsonl").write_bytes(b"\xef\xbb\xbf" + (line + "\r\n" + line.replace("1}", "0}") +
                                                          "\r\n").encode())
    rep = camp.import_judgments(tmp_path / "x.jsonl", annotator="a")
    assert rep.accepted == 2 and not rep.rejected and len(rep.notes) == 2
    assert camp.judgments()[qid][doc] == 0   # same annotator: the later line counts


@pytest.mark.parametrize("content, msg", [
    ("".encode("utf-16") + 'x'.encode("utf-16-le"), "UTF-16"),
    (b"\n\n", "file has no judgment rows"),
    (b"", "file has no judgment rows"),
])
def test_file_level_errors(tmp_path, camp, content, msg):
    (tmp_path / "f.jsonl").write_bytes(content)
    with pytest.raises(ValueError, match=msg):
        camp.import_judgments(tmp_path / "f.jsonl")
    (tmp_path / "f.csv").write_bytes(b"")
    with pytest.raises(ValueError, match="no CSV header"):
        camp.import_judgments(tmp_path / "f.csv")
    with pytest.raises(ValueError, match="cannot tell the format"):
        camp.import_judgments(tmp_path / "f.dat")


def test_invalid_utf8_line_rejected(tmp_path, camp, task):
    qid, doc = task
    good = json.dumps({"query_id": qid, "doc_id": doc, "grade": 1}).encode()
    (tmp_path / "u.jsonl").write_bytes(good + b"\n\xff\xfe{}\n")
    rep = camp.import_judgments(tmp_path / "u.jsonl")
    assert rep.accepted == 1 and _rej(rep)[2].startswith("not valid UTF-8")


# --------------------------------------------------------------------------- qrels, files, store


def test_qrels_pre_existing_and_write_back(tmp_path, data, camp):
    from activerank.io.trec import read_qrels, write_qrels

    lab = ar.KnownLabels.from_data(data)
    first = camp.query_ids[camp.plan().queries[0]]
    docs = camp.tasks(first)
    write_qrels(tmp_path / "old.qrels", {first: {d: int(lab(int(first), [d])[0]) for d in docs},
                                         "99999": {"x": 1}})
    rep = camp.import_qrels(tmp_path / "old.qrels")
    assert rep.accepted == len(docs) and len(rep.rejected) == 1
    assert camp.status().queries_done == (first,)
    n = camp.write_qrels(tmp_path / "out.qrels")
    assert n == len(docs)
    assert read_qrels(tmp_path / "out.qrels").judgments == {first: {d: int(lab(int(first), [d])[0]) for d in docs}}


def test_create_and_open_errors(tmp_path, data, probs, camp):
    with pytest.raises(FileExistsError, match="already exists"):
        Campaign.create(camp.path, data, data.X[:, 0], probs, budget=5, metric=METRIC, seed=0, method="active")
    with pytest.raises(FileNotFoundError, match="no campaign file"):
        Campaign.open(tmp_path / "missing.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ValueError, match="not an activerank campaign store"):
        Campaign.open(tmp_path / "junk.db")
    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("CREATE TABLE schema_version (version INTEGER)")
    conn.execute("INSERT INTO schema_version VALUES (99)")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match="schema version 99"):
        Campaign.open(tmp_path / "other.db")
    for kw, exc, msg in [
        (dict(budget=-1), ValueError, "`budget` must be a positive finite number"),
        (dict(budget=5, seed=-2), TypeError, "`seed` must be a non-negative integer"),
        (dict(budget=5, combine="avg"), ValueError, "`combine` must be one of"),
        (dict(budget=5, method="greedy"), ValueError, "`method` must be one of"),
        (dict(budget=5, query_text={"nope": "x"}), ValueError, "`query_text` names query 'nope'"),
    ]:
        with pytest.raises(exc, match=msg):
            Campaign.create(tmp_path / "e.db", data, data.X[:, 0], probs, metric=METRIC, **kw)
    with pytest.raises(ValueError, match="one ranker .* or two"):
        Campaign.create(tmp_path / "e.db", data, [data.X[:, 0]] * 3, probs, budget=5, metric=METRIC, method="active")
    dup = ar.LetorData(X=data.X[:2], qids=[1, 1], query_ids=[1], offsets=[0, 2], doc_ids=["a", "a"], n_grades=3)
    with pytest.raises(ValueError, match="lists document id 'a' twice"):
        Campaign.create(tmp_path / "e.db", dup, np.zeros(2), probs[:2], budget=1, metric=METRIC, method="active")
    assert not (tmp_path / "e.db").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".creating")]


def test_store_layout_and_no_pickle(camp):
    conn = sqlite3.connect(camp.path)
    # a rollback journal: committed judgments are in the store file itself (schema, Durability)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(7,)]
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert json.loads(meta["seed"]) == 3 and json.loads(meta["metric"]) == METRIC
    conn.close()
    import importlib
    import inspect

    modules = ["store", "schema", "integrity", "reads", "writes", "replay", "reports", "io"]
    for mod in (importlib.import_module(f"activerank.campaign.{m}") for m in modules):
        src = inspect.getsource(mod)
        assert "import pickle" not in src and "pickle." not in src and "eval(" not in src


def test_query_text_in_tasks(tmp_path, data, probs):
    qt = {int(q): f"text of {q}" for q in data.query_ids}
    with Campaign.create(tmp_path / "q.db", data, data.X[:, 0], probs, budget=3, metric=METRIC, seed=1,
                         query_text=qt, method="active") as c:
        c.export_tasks(tmp_path / "t.jsonl")
    row = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert row["query_text"] == f"text of {row['query_id']}" and isinstance(row["query_id"], int)


# --------------------------------------------------------------------------- DCG cross-check


def _judged_run_and_qrels(tmp_path, data, probs):
    c = Campaign.create(tmp_path / "x.db", data, data.X[:, 0], probs, budget=15, metric="dcg@5", seed=5, method="active")
    c.export_tasks(tmp_path / "t.jsonl")
    answer(tmp_path / "t.jsonl", tmp_path / "a.jsonl", data)
    c.import_judgments(tmp_path / "a.jsonl")
    assert not c.status().queries_pending and not c.status().queries_partial
    return c


def test_dcg_cross_checked_against_ir_measures(tmp_path, data, probs):
    ir_measures = pytest.importorskip("ir_measures")
    from activerank.io.trec import write_run

    with _judged_run_and_qrels(tmp_path, data, probs) as c:
        top = c.design().rankings[0]
        pool = c.pool()
        done = [c.query_ids.index(q) for q in c.status().queries_done]
        c.write_qrels(tmp_path / "j.qrels")
        sub = ar.Pool(pool.query_ids[done], np.r_[0, np.cumsum(top.lengths[done])],
                      np.concatenate([pool.doc_ids[top[x]] for x in done]))
        write_run(tmp_path / "r.run", sub, ar.Rankings.from_list(
            [np.arange(sub.offsets[i], sub.offsets[i + 1]) for i in range(len(done))]))
        labels = np.zeros(int(pool.offsets[-1]), dtype=np.int64)
        j = c.judgments()
        for x in done:
            for r in top[x]:
                labels[r] = j[c.query_ids[x]][pool.doc_ids[r]]
        dcg = ar.pool_metric_values(labels, top.subset(done), metric="dcg@5", ymax=2)
        ideal = ar.pool_metric_values(labels, ar.Rankings.from_list(
            [top[x][np.argsort(-labels[top[x]], kind="stable")] for x in done]), metric="dcg@5", ymax=2)
        # only the top 5 are judged: they are the normalizer's documents (the qrels hold nothing else)
        ndcg = ar.pool_metric_values(labels, top.subset(done), metric="ndcg(gain=exp)@5", ymax=2,
                                     judged=top.subset(done))
    measure = ir_measures.nDCG(gains={0: 0, 1: 1, 2: 3}) @ 5   # exponential gain 2^g - 1
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "j.qrels")))
    run = list(ir_measures.read_trec_run(str(tmp_path / "r.run")))
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
    ours = {str(pool.query_ids[x]): (d / i if i > 0 else 0.0) for x, d, i in zip(done, dcg, ideal)}
    assert set(theirs) <= set(ours) and len(theirs) >= len(done) - sum(ideal == 0)
    for q, v in theirs.items():
        assert ours[q] == pytest.approx(v, rel=1e-12, abs=1e-12)
    assert np.allclose(ndcg, [ours[str(pool.query_ids[x])] for x in done])


def test_dcg_hand_computed(tmp_path, data, probs):
    """DCG@5 of one fully judged query by hand: sum (2^g - 1) / log2(rank + 1)."""
    with _judged_run_and_qrels(tmp_path, data, probs) as c:
        x = int(c.plan().queries[0])
        qid = c.query_ids[x]
        grades = [c.judgments()[qid][c.pool().doc_ids[r]] for r in c.design().rankings[0][x]]
        res = _quiet(c.estimate)
    hand = sum((2 ** g - 1) / np.log2(i + 2) for i, g in enumerate(grades))
    assert res.trace.value[res.trace["query"] == x].iloc[0] == pytest.approx(hand, rel=1e-12)
