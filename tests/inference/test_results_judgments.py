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


def _same_draws(r1, r2):
    """Identical traces but for the ``new`` (bought) flags, and the same numbers."""
    t1, t2 = r1.trace.drop(columns="new"), r2.trace.drop(columns="new")
    return t1.equals(t2) and repr(r1) == repr(r2)


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
@pytest.mark.parametrize("method", ["active_wor", "active", "model_assisted"])
def test_round_trip_same_seed_same_draws_no_labeler(sample, function, method):
    data, probs, lab = sample
    run = FUNCTIONS[function]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ar.LowEffectiveSampleSizeWarning)
        first = run(data, lab, probs, budget=12, metric="err@5", method=method, rng=5)
        again = run(data, _refuse, probs, budget=12, metric="err@5", method=method, rng=5,
                    judgments=first.judgments)
        as_dict = run(data, _refuse, probs, budget=12, metric="err@5", method=method, rng=5,
                      judgments=first.judgments.to_dict())
    assert _same_draws(first, again) and _same_draws(first, as_dict)
    assert again.judgments == first.judgments and again.judgments.bought.n_labels == 0
    assert again.summary().attrs["run"]["labels_bought"] == 0


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
    first = ar.estimate(data, data.X[:, 0], probs, lab, budget=8, metric="dcg@5", rng=0)
    prior = ar.PriorJudgments.from_census(first.judgments)  # a JudgmentSet is a mapping: taken as it is
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
