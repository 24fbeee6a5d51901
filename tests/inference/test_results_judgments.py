"""``result.judgments``: the labels a run held, and the round trip back into ``judgments=``."""

import warnings

import numpy as np
import pytest

import activerank as ar
from activerank.inference.judgments import JudgmentSet
from activerank.io.trec import read_qrels


@pytest.fixture(scope="module")
def sample():
    data = ar.load_sample()
    probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    return data, probs, ar.KnownLabels.from_data(data)


class Recording:
    """A labeler that remembers every (query, document) it was asked for."""

    def __init__(self, labeler):
        self.labeler, self.asked = labeler, []

    def __call__(self, query_id, doc_ids):
        self.asked.extend((query_id, d) for d in doc_ids)
        return self.labeler(query_id, doc_ids)


def _refuse(query_id, doc_ids):
    raise AssertionError(f"the labeler was asked for query {query_id!r} although its labels were given")


# --------------------------------------------------------------------------- the object


def test_judgment_set_is_a_read_only_mapping(tmp_path):
    j = JudgmentSet({7: {"d1": 2, "d2": 0}, 9: {"d3": 1}}, bought={9: {"d3": 1}})
    assert len(j) == 2 and list(j) == [7, 9] and j.n_labels == 3 and 7 in j
    assert j == {7: {"d1": 2, "d2": 0}, 9: {"d3": 1}}
    assert j.to_dict() == {7: {"d1": 2, "d2": 0}, 9: {"d3": 1}}
    assert j.bought == {9: {"d3": 1}} and j.bought.bought == j.bought
    assert list(j.to_records()) == [(7, "d1", 2), (7, "d2", 0), (9, "d3", 1)]
    assert repr(j) == "JudgmentSet(2 queries, 3 labels, 1 bought)"
    assert repr(JudgmentSet({1: {"a": 0}})) == "JudgmentSet(1 query, 1 label, 0 bought)"
    with pytest.raises(TypeError):
        j[8] = {"x": 1}
    with pytest.raises(TypeError):
        j[7]["d1"] = 0  # the inner mappings are read-only too
    d = j.to_dict()
    d[7]["d1"] = 0  # a copy: the set is unchanged
    assert j[7]["d1"] == 2
    assert j[np.int64(7)]["d2"] == 0  # NumPy ids find the same query
    path = tmp_path / "bought.qrels"
    assert j.to_qrels(path) == 3
    assert read_qrels(path).judgments == {"7": {"d1": 2, "d2": 0}, "9": {"d3": 1}}


def test_judgment_set_union():
    a = JudgmentSet({1: {"x": 1}}, bought={1: {"x": 1}})
    b = JudgmentSet({1: {"y": 0}, 2: {"z": 2}}, bought={2: {"z": 2}})
    u = a | b
    assert u == {1: {"x": 1, "y": 0}, 2: {"z": 2}} and u.bought == {1: {"x": 1}, 2: {"z": 2}}
    assert (a | {3: {"w": 1}}) == {1: {"x": 1}, 3: {"w": 1}} == ({3: {"w": 1}} | a)
    with pytest.raises(ValueError, match="conflicting grades for query 1, document 'x': 1 and 2"):
        a | {1: {"x": 2}}


@pytest.mark.parametrize("bad, kind, message", [
    ([1, 2], TypeError, r"`judgments` must be a mapping \{query_id: \{doc_id: grade\}\}; got list"),
    ({1: [0, 1]}, TypeError, "`judgments`: the judgments of query 1 must be a mapping"),
    ({1: {"d": True}}, ValueError, "`judgments`: query 1, document 'd': grade True is not an integer >= 0"),
    ({1: {"d": -1}}, ValueError, "grade -1 is not an integer >= 0"),
    ({1: {"d": 1.5}}, ValueError, "grade 1.5 is not an integer >= 0"),
])
def test_judgment_set_rejects_bad_input(bad, kind, message):
    with pytest.raises(kind, match=message):
        JudgmentSet(bad)


def test_bought_must_be_part_of_the_judgments():
    with pytest.raises(ValueError, match=r"`bought`: query 1, document 'd' \(grade 2\) is not in `judgments`"):
        JudgmentSet({1: {"d": 1}}, bought={1: {"d": 2}})


# --------------------------------------------------------------------------- what a run hands back


def test_result_judgments_are_what_the_labeler_was_asked(sample):
    data, probs, lab = sample
    rec = Recording(lab)
    res = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, rec, budget=12, metric="err@5", rng=1)
    asked = {}
    for q, d in rec.asked:
        asked.setdefault(q, {})[d] = int(lab(q, [d])[0])
    assert res.judgments == asked == res.judgments.bought
    assert len(rec.asked) == res.judgments.n_labels  # nothing asked twice
    assert set(res.judgments) <= set(res.trace["query_id"].tolist())


FUNCTIONS = {
    "estimate": lambda data, lab, probs, **kw: ar.estimate(data, data.X[:, 0], probs, lab, **kw),
    "compare": lambda data, lab, probs, **kw: ar.compare(data, data.X[:, 0], data.X[:, 1], probs, lab, **kw),
    "compare_many": lambda data, lab, probs, **kw: ar.compare_many(data, [data.X[:, 1], data.X[:, 2]], data.X[:, 0],
                                                                   probs, lab, **kw),
    "rank_systems": lambda data, lab, probs, **kw: ar.rank_systems(data, [data.X[:, j] for j in range(3)], probs,
                                                                   lab, **kw),
}


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
@pytest.mark.parametrize("method", ["active_wor", "active", "model_assisted"])
def test_round_trip_held_labels_are_free_and_known_exactly(sample, function, method):
    """Labels passed back cost nothing and are never asked for again: the queries they cover in full are a
    census stratum, the budget buys other queries, and ``cost_spent`` counts only the labels bought now."""
    data, probs, lab = sample
    run = FUNCTIONS[function]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
        first = run(data, lab, probs, budget=8, metric="err@5", method=method, rng=5)
        rec = Recording(lab)
        again = run(data, rec, probs, budget=8, metric="err@5", method=method, rng=5, judgments=first.judgments)
        as_dict = run(data, Recording(lab), probs, budget=8, metric="err@5", method=method, rng=5,
                      judgments=first.judgments.to_dict())
    held = {(q, d) for q, d, _ in first.judgments.to_records()}
    assert not held & set(rec.asked) and rec.asked  # new labels only
    assert repr(again) == repr(as_dict)
    assert not set(again.trace["query_id"]) & set(first.judgments)  # held queries are never drawn
    assert again.judgments == (first.judgments | again.judgments.bought)
    assert again.judgments.bought.n_labels == len(rec.asked)
    assert again.cost_spent == pytest.approx(again.trace.drop_duplicates("query")["cost"].sum())
    assert again.cost_spent <= 8 * (1 + 1e-9)


@pytest.mark.parametrize("method", ["active_wor", "active", "doc_dyn", "prefix"])
def test_every_label_held_costs_nothing_and_is_exact(sample, method):
    data, probs, lab = sample
    metric = "dcg@5" if method == "doc_dyn" else "err@5"
    everything = ar.JudgmentSet.from_rows(ar.pool.pool_iv(data), data.labels, np.ones(data.labels.size, bool))
    res = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, _refuse, budget=8, metric=metric, method=method,
                     rng=1, judgments=everything)
    truth = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, lab, budget=1e6, metric=metric, method=method,
                       rng=1)
    assert res.cost_spent == 0 and res.exact and res.standard_error == 0
    assert res.difference == pytest.approx(truth.difference, abs=1e-12)


@pytest.mark.parametrize("method, metric", [("prefix", "err@5"), ("doc_dyn", "dcg@5"), ("auto", "err@5"),
                                            ("two_stage", "dcg@5")])
def test_round_trip_never_asks_for_a_held_label(sample, method, metric):
    """Designs that plan around the labels held (document level, prefix) may draw differently; they never ask
    for a label they were given."""
    data, probs, lab = sample
    first = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, lab, budget=12, metric=metric, method=method, rng=2)
    rec = Recording(lab)
    again = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, rec, budget=12, metric=metric, method=method,
                       rng=2, judgments=first.judgments)
    held = {(q, d) for q, d, _ in first.judgments.to_records()}
    assert not held & set(rec.asked)
    assert again.judgments == (first.judgments | again.judgments.bought)
    assert again.judgments.bought.n_labels == len(rec.asked)


def test_chained_runs_keep_every_label(sample):
    data, probs, lab = sample
    one = ar.estimate(data, data.X[:, 0], probs, lab, budget=8, metric="err@5", rng=0)
    two = ar.compare(data, data.X[:, 0], data.X[:, 1], probs, lab, budget=8, metric="err@5", rng=1,
                     judgments=one.judgments)
    three = ar.rank_systems(data, [data.X[:, j] for j in range(3)], probs, lab, budget=8, metric="err@5", rng=2,
                            judgments=two.judgments)
    assert three.judgments == one.judgments | two.judgments | three.judgments.bought
    assert set(one.judgments.to_records()) <= set(three.judgments.to_records())
    bought = [set(r.judgments.bought.to_records()) for r in (one, two, three)]
    assert not (bought[0] & bought[1]) and not (bought[1] & bought[2]) and not (bought[0] & bought[2])


@pytest.mark.filterwarnings("ignore::activerank.LowEffectiveSampleSizeWarning")
def test_reused_prior_judgments_are_not_bought(sample):
    """``estimate_adaptive(reuse=...)`` loads earlier judgments: held, not bought."""
    data, probs, lab = sample
    first = ar.estimate(data, data.X[:, 0], probs, lab, budget=8, metric="dcg@5", method="active_wor", rng=0)
    prior = ar.PriorJudgments.from_census(first.judgments)  # whole queries  # a JudgmentSet is a mapping: taken as it is
    rec = Recording(lab)
    res = ar.estimate_adaptive(data, data.X[:, 0], ar.relevance.make_relevance_model("logistic", data.n_grades),
                               data.X, rec, budget=8, n_batches=2, metric="dcg@5", rng=0, reuse=prior)
    assert res.judgments.bought.n_labels == len(rec.asked)
    assert set(first.judgments.to_records()) <= set(res.judgments.to_records())
    assert not set(first.judgments.to_records()) & set(res.judgments.bought.to_records())


def test_bad_judgments_still_name_the_parameter(sample):
    data, probs, lab = sample
    with pytest.raises(ValueError, match="`judgments` names query 'nope', which is not in the pool"):
        ar.estimate(data, data.X[:, 0], probs, lab, budget=8, rng=0, judgments=JudgmentSet({"nope": {"d": 1}}))


@pytest.mark.statistical
@pytest.mark.parametrize("method", ["active_wor", "active"])
def test_held_labels_keep_the_estimate_unbiased_with_nominal_coverage(method):
    """Labels of an earlier comparison held (free, an exactly known stratum): the estimate of another
    comparison stays unbiased with nominal coverage (200-query pool, about 25 queries bought)."""
    from ..conftest import SyntheticPool, stat_reps

    pool = SyntheticPool(np.random.default_rng(21), n_queries=200, max_docs=10)
    labels = pool.sample_labels(np.random.default_rng(22))
    lab = ar.KnownLabels(pool.query_ids, pool.offsets, labels)
    s0, s1, s2 = pool.probs[:, 2], pool.probs[:, 1], pool.probs[:, 2] + 0.3 * pool.probs[:, 0]
    truth = ar.compare(pool, s2, s1, pool.probs, lab, budget=1e6, metric="err@5", rng=0, judge="all").difference
    reps = stat_reps(400)
    err, se = np.empty(reps), np.empty(reps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
        for i in range(reps):
            held = ar.compare(pool, s1, s0, pool.probs, lab, budget=20, metric="err@5", method=method,
                              rng=10_000 + i).judgments
            r = ar.compare(pool, s2, s1, pool.probs, lab, budget=25, metric="err@5", method=method, rng=i,
                           judgments=held)
            err[i], se[i] = r.difference - truth, r.standard_error
    assert abs(err.mean()) <= 3 * err.std(ddof=1) / np.sqrt(reps)
    assert 0.93 <= np.mean(np.abs(err) <= 1.96 * se) <= 0.98
