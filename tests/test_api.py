import warnings

import numpy as np
import pytest

import activerank as ar
from activerank.labelers import CallableLabeler, LabelingError


@pytest.fixture
def setup(synthetic_pool):
    pool = synthetic_pool
    labels = pool.sample_labels(np.random.default_rng(0))
    return pool, labels, ar.KnownLabels(pool.query_ids, pool.offsets, labels)


def test_estimate_and_compare_run(setup):
    pool, labels, lab = setup
    res = ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, budget=20, metric="err@10", method="active_wor", rng=0)
    assert res.cost_spent <= 20 and res.method == "active_wor" and res.metric == "err(ymax=scale)@10"
    assert set(res.trace.columns) >= {"draw", "query", "query_id", "q", "pi", "p", "weight", "new", "cost",
                                      "cumulative_cost", "value"}
    assert res.trace["query"].is_unique and res.n_draws == res.n_queries  # without replacement
    cmp = ar.compare(pool, pool.probs[:, 2], pool.probs[:, 1], pool.probs, lab, budget=20,
                     metric="dcg@5", rng=0, judge="all")
    assert cmp.difference == pytest.approx(cmp.estimate_a - cmp.estimate_b, abs=1e-12)
    assert 0.0 <= cmp.prob_a_better() <= 1.0
    # judging only the documents that can change the difference: the rankers' own means are unknown
    cmp = ar.compare(pool, pool.probs[:, 2], pool.probs[:, 1], pool.probs, lab, budget=20, metric="dcg@5", rng=0,
                     method="active_wor")
    assert np.isnan(cmp.estimate_a) and np.isnan(cmp.estimate_b) and np.isfinite(cmp.difference)
    assert cmp.trace["value_a"].isna().all() and cmp.trace["delta"].notna().all()


def test_repeated_draws_are_not_charged_or_relabeled(setup):
    pool, labels, lab = setup
    res = ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, budget=60, metric="err@10",
                      costs="uniform", rng=1)
    t = res.trace
    assert (t.loc[~t["new"], "cost"] == 0).all()
    assert res.n_queries == t["new"].sum() and lab.n_calls == 1  # KnownLabels takes the whole batch at once
    one_by_one = ar.CallableLabeler(lab)  # a labeler without batches is asked once per new query
    again = ar.estimate(pool, pool.probs[:, 2], pool.probs, one_by_one, budget=60, metric="err@10",
                        costs="uniform", rng=1)
    assert again.estimate == res.estimate and lab.n_calls == 1 + res.n_queries
    assert res.cost_spent == pytest.approx(t["cost"].sum()) and res.cost_spent <= 60


def test_compare_charges_union_of_documents():
    pool = ar.Pool.from_qids([1, 1, 1, 2, 2])
    probs = np.full((5, 2), 0.5)
    seen = {}

    def labeler(qid, docs):
        seen[qid] = list(docs)
        return [1] * len(docs)

    a = ar.Rankings.from_list([[0, 1], [3]])
    b = ar.Rankings.from_list([[1, 2], [3, 4]])
    # both queries judged: the census is exact, so no effective-sample-size warning applies
    res = ar.compare(pool, a, b, probs, labeler, budget=5, metric="dcg", costs="constant", rng=0, judge="all")
    assert res.exact
    assert sorted(seen[1]) == [0, 1, 2] and sorted(seen[2]) == [3, 4]
    # document 3 is at rank 1 in both lists: its gain cancels in the difference and it is not judged
    seen.clear()
    res = ar.compare(pool, a, b, probs, labeler, budget=5, metric="dcg", costs="constant", rng=0)
    assert res.exact
    assert sorted(seen[1]) == [0, 1, 2] and sorted(seen[2]) == [4]


def test_labeler_failure_keeps_acquired_judgments(setup):
    pool, labels, lab = setup
    calls = []

    def flaky(qid, docs):
        calls.append(qid)
        if len(calls) == 4:
            return [9] * len(docs)  # outside the 0..2 scale
        return lab(qid, docs)

    with pytest.raises(LabelingError, match=r"labeler grades must be integers on the scale 0..2") as info:
        ar.estimate(pool, pool.probs[:, 2], pool.probs, flaky, budget=30, metric="err@10", rng=0)
    err = info.value
    assert set(err.judgments) == set(calls[:3])
    assert err.trace["query_id"].nunique() == 3 and err.trace["new"].all()  # the documents bought before
    for qid, judged in err.judgments.items():
        assert all(labels[row] == g for row, g in judged.items())


def test_labeler_exception_wrapped(setup):
    pool, _, _ = setup

    def broken(qid, docs):
        raise RuntimeError("annotation tool offline")

    with pytest.raises(LabelingError, match=r"annotation tool offline"):
        ar.estimate(pool, pool.probs[:, 2], pool.probs, CallableLabeler(broken), budget=10,
                    metric="err@10", rng=0)


def test_unknown_query_from_known_labels(setup):
    pool, labels, _ = setup
    other = ar.KnownLabels(pool.query_ids + 1_000_000, pool.offsets, labels)
    with pytest.raises(LabelingError, match=r"KnownLabels has no query with id \d+"):
        ar.estimate(pool, pool.probs[:, 2], pool.probs, other, budget=10, metric="err", rng=0)


def test_wrong_number_of_grades(setup):
    pool, _, _ = setup
    with pytest.raises(LabelingError, match=r"labeler returned \d+ grades for query"):
        ar.estimate(pool, pool.probs[:, 2], pool.probs, lambda q, d: [0] * (len(d) + 1), budget=10,
                    metric="err", rng=0)


@pytest.mark.parametrize("bad", ["3.5", "-1", "high"])
def test_bad_grade_values(setup, bad):
    pool, _, _ = setup
    with pytest.raises(LabelingError, match=r"labeler grades must be integers on the scale 0..2"):
        ar.estimate(pool, pool.probs[:, 2], pool.probs, lambda q, d: [bad] * len(d), budget=10,
                    metric="err", rng=0)


def test_bad_inputs(setup):
    pool, labels, lab = setup
    s, P = pool.probs[:, 2], pool.probs
    with pytest.raises(ValueError, match=r"`probs` has 10 rows but the pool has"):
        ar.estimate(pool, s, P[:10], lab, budget=10, rng=0)
    s_nan = s.copy()
    s_nan[5] = np.nan
    with pytest.raises(ValueError, match=r"`scores` must not contain NaN; query 1000 \(document row 5\)"):
        ar.estimate(pool, s_nan, P, lab, budget=10, rng=0)
    with pytest.raises(ValueError, match=r"`scores` must have one score per pool document"):
        ar.estimate(pool, s[:-1], P, lab, budget=10, rng=0)
    with pytest.raises(ValueError, match=r"`budget` must be a positive finite number"):
        ar.estimate(pool, s, P, lab, budget=0, rng=0)
    with pytest.raises(ValueError, match=r"is below the cheapest query's cost"):
        ar.estimate(pool, s, P, lab, budget=1e-3, rng=0)
    with pytest.raises(ValueError, match=r"`method` must be one of"):
        ar.estimate(pool, s, P, lab, budget=10, method="clever", rng=0)
    with pytest.raises(ValueError, match=r"`costs` must be finite and > 0; document row 0"):
        ar.estimate(pool, s, P, lab, budget=10, costs=np.zeros(len(s)), rng=0)
    with pytest.raises(ValueError, match=r"is not a known metric"):
        ar.estimate(pool, s, P, lab, budget=10, metric="mapp@10", rng=0)
    with pytest.raises(TypeError, match=r"`pool` must have `offsets` and `query_ids`"):
        ar.estimate(np.zeros(3), s, P, lab, budget=10, rng=0)
    with pytest.raises(ValueError, match=r"`scores_b` must rank each query's own documents"):
        outside = ar.Rankings.from_list([[len(s) - 1]] * (len(pool.offsets) - 1))
        ar.compare(pool, s, outside, P, lab, budget=10, rng=0)


def test_pool_from_qids_rejects_split_query():
    with pytest.raises(ValueError, match=r"`qids` must group each query's rows contiguously; query 1"):
        ar.Pool.from_qids([1, 2, 1])


def test_shipped_sample_end_to_end():
    data = ar.load_sample()
    train = ar.load_sample("train")
    model = ar.relevance.make_relevance_model("ordered_logit", data.n_grades).fit(train.X, train.labels)
    probs = model.predict_proba(data.X)
    res = ar.estimate(data, model.expected_grade(data.X), probs, ar.KnownLabels.from_data(data),
                      budget=20, metric="err@10", rng=0)
    assert np.isfinite(res.estimate) and res.cost_spent <= 20


def test_interrupt_keeps_judgments(setup):
    pool, labels, lab = setup
    calls = []

    def person(qid, docs):
        calls.append(qid)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return lab(qid, docs)

    with pytest.raises(KeyboardInterrupt) as info:
        ar.estimate(pool, pool.probs[:, 2], pool.probs, person, budget=30, metric="err@10", rng=0)
    assert set(info.value.judgments) == set(calls[:2])


def test_warning_as_error_after_labeling_keeps_judgments(setup):
    import warnings

    pool, labels, lab = setup
    with warnings.catch_warnings():
        warnings.simplefilter("error", ar.LowEffectiveSampleSizeWarning)
        with pytest.raises(ar.LowEffectiveSampleSizeWarning) as info:
            ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, budget=3, metric="err@10", method="active", rng=0)
    assert len(info.value.judgments) > 0 and lab.n_calls == 1


@pytest.mark.filterwarnings("ignore::activerank.LowEffectiveSampleSizeWarning")
def test_one_distinct_query_is_a_clear_error_that_keeps_the_judgments():
    pool = ar.Pool.from_qids([1, 1, 2, 2])
    probs = np.full((4, 2), 0.5)
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, [1, 0, 0, 1])
    # query 2's documents are so expensive that only query 1 is ever judged (and re-drawn)
    costs = np.array([1.0, 1.0, 100.0, 100.0])
    for seed in range(20):
        try:
            res = ar.compare(pool, [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], probs, lab,
                             budget=0.05, metric="dcg", costs=costs, method="passive", rng=seed)
        except ValueError as exc:
            if "no query could be judged" in str(exc):  # the first draw was the expensive query
                continue
            # only query 1 judged (and re-drawn): no standard error from one query -- an error, not a NaN
            assert "1 distinct query" in str(exc) and "judgments=err.judgments" in str(exc)
            assert exc.judgments == {1: {0: 1, 1: 0}}
            break
        pytest.fail(f"one distinct query returned a result: {res}")
    else:
        pytest.fail("no seed drew only the cheap query")


def test_resume_with_judgments_from_a_failed_run(setup):
    pool, labels, lab = setup
    calls = []

    def flaky(qid, docs):
        calls.append(qid)
        if len(calls) == 5:
            raise RuntimeError("annotator went home")
        return lab(qid, docs)

    kw = dict(budget=30, metric="err@10", rng=4, method="active_wor")  # whole queries held: known exactly
    with pytest.raises(LabelingError) as info:
        ar.estimate(pool, pool.probs[:, 2], pool.probs, flaky, **kw)
    fresh = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    held = info.value.judgments
    resumed = ar.estimate(pool, pool.probs[:, 2], pool.probs, ar.CallableLabeler(fresh), judgments=held, **kw)
    # the four judged queries are known exactly (free), never asked again; the budget buys other queries
    assert len(held) == 4 and not set(held) & set(resumed.trace["query_id"])
    assert fresh.n_calls == resumed.trace["new"].sum() and resumed.cost_spent <= 30 * (1 + 1e-9)
    assert resumed.judgments.bought.n_labels + sum(len(d) for d in held.values()) == resumed.judgments.n_labels
    with pytest.raises(ValueError, match=r"`judgments` names query 'nope', which is not in the pool"):
        ar.estimate(pool, pool.probs[:, 2], pool.probs, lab, judgments={"nope": {}}, **kw)


@pytest.mark.parametrize("bad", [[True, False], ["2.0", "1"]])
def test_boolean_or_float_string_grades_rejected(setup, bad):
    pool, _, _ = setup
    pool2 = ar.Pool.from_qids([1, 1])
    with pytest.raises(LabelingError, match=r"labeler grades must be integers"):
        ar.estimate(pool2, [0.0, 1.0], np.full((2, 3), 1 / 3), lambda q, d: bad, budget=1,
                    metric="dcg", rng=0)


@pytest.mark.parametrize("method", ["active_wor", "doc_dyn", "auto"])
def test_budget_in_judgments_buys_at_most_that_many_labels(method):
    pool = ar.load_sample()
    lab = ar.KnownLabels.from_data(pool)
    probs = np.full((pool.n_docs, pool.n_grades), 1.0 / pool.n_grades)
    res = ar.compare(pool, pool.X[:, 24], pool.X[:, 10], probs, lab, budget=60, budget_unit="documents",
                     metric="dcg@10", method=method, costs="constant", rng=3)
    assert res.budget_unit == "documents" and res.budget == 60
    assert res.judgments.bought.n_labels <= 60 and res.cost_spent == pytest.approx(res.judgments.bought.n_labels)
    assert res.budget_left == pytest.approx(60 - res.cost_spent)
    assert res.summary().attrs["run"]["budget_unit"] == "documents" and res.to_dict()["budget_unit"] == "documents"


def test_budget_in_the_cost_models_unit_is_the_costs_arrays():
    pool = ar.load_sample()
    lab = ar.KnownLabels.from_data(pool)
    probs = np.full((pool.n_docs, pool.n_grades), 1.0 / pool.n_grades)
    costs = np.where(np.arange(pool.n_docs) % 3 == 0, 2.5, 1.0)
    res = ar.estimate(pool, pool.X[:, 24], probs, lab, budget=80, budget_unit="cost", costs=costs, metric="dcg@10",
                      method="doc_dyn", rng=1)
    rows = res.trace["doc_row"].to_numpy()
    assert res.cost_spent == pytest.approx(costs[rows].sum()) and res.cost_spent <= 80


def test_a_budget_in_judgments_with_unequal_document_costs_is_refused():
    pool = ar.load_sample()
    lab = ar.KnownLabels.from_data(pool)
    probs = np.full((pool.n_docs, pool.n_grades), 1.0 / pool.n_grades)
    costs = np.where(np.arange(pool.n_docs) % 3 == 0, 2.5, 1.0)
    with pytest.raises(ValueError, match="budget_unit.*equal document costs|needs every document to cost the same"):
        ar.estimate(pool, pool.X[:, 24], probs, lab, budget=50, budget_unit="documents", costs=costs, rng=0)
    with pytest.raises(ValueError, match="`budget_unit` must be one of"):
        ar.estimate(pool, pool.X[:, 24], probs, lab, budget=5, budget_unit="judgments", rng=0)
