"""Every result type presents itself alike: summary(), to_dict(), _repr_html_ and a short __repr__."""

import html
import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import activerank as ar
from activerank.inference._report import RUN_COLUMNS, decimals, jsonable
from activerank.inference.results import EstimateResult


@pytest.fixture(scope="module")
def sample():
    data = ar.load_sample()
    probs = ar.relevance.UniformRelevanceModel(data.n_grades).fit(data.X, data.labels).predict_proba(data.X)
    return data, probs, ar.KnownLabels.from_data(data)


def _results(sample):
    data, probs, lab = sample
    a, b, c = data.X[:, 0], data.X[:, 1], data.X[:, 2]
    kw = dict(budget=15, rng=0)
    return {
        "estimate": ar.estimate(data, a, probs, lab, metric="err@5", method="active_wor", **kw),
        "estimate_auto": ar.estimate(data, a, probs, lab, metric="dcg@5", **kw),  # the default: method="auto"
        "estimate_exact": ar.estimate(data, a, probs, lab, metric="err@5", budget=1000, rng=0),
        "estimate_bootstrap": ar.estimate(data, a, probs, lab, metric="err@5", method="active", ci="bootstrap",
                                         **kw),
        "compare": ar.compare(data, a, b, probs, lab, metric="err@5", **kw),
        "compare_all": ar.compare(data, a, b, probs, lab, metric="dcg@5", judge="all", **kw),
        "compare_many": ar.compare_many(data, [b, c], a, probs, lab, metric="err@5", names=["f1", "f2"], **kw),
        "rank_systems": ar.rank_systems(data, [a, b, c], probs, lab, metric="err@5", **kw),
        "sequential": ar.estimate_sequential(data, a, probs, lab, target_half_width=0.5, budget=25,
                                             metric="err@5", rng=0),
        "sequential_pair": ar.estimate_sequential(data, (a, b), probs, lab, target_half_width=0.5, budget=25,
                                                  metric="err@5", rng=0),
        "adaptive": ar.estimate_adaptive(data, a, ar.relevance.make_relevance_model("logistic", data.n_grades),
                                         data.X, lab, budget=20, n_batches=2, metric="dcg@5", rng=0),
    }


@pytest.fixture(scope="module")
def results(sample):
    with warnings.catch_warnings():  # few distinct queries for the bootstrap: not what is tested here
        warnings.simplefilter("ignore")
        return _results(sample)


CASES = ["estimate", "estimate_auto", "estimate_exact", "estimate_bootstrap", "compare", "compare_all",
         "compare_many", "rank_systems", "sequential", "sequential_pair", "adaptive"]
ONE_ROW = {"estimate", "estimate_auto", "estimate_exact", "estimate_bootstrap", "compare", "compare_all",
           "sequential", "sequential_pair", "adaptive"}


@pytest.mark.parametrize("case", CASES)
def test_summary_is_a_table_with_the_runs_facts(results, case):
    res = results[case]
    df = res.summary()
    assert isinstance(df, pd.DataFrame)
    run = df.attrs["run"]
    assert list(run)[:len(RUN_COLUMNS)] == list(RUN_COLUMNS)
    assert run["n_queries"] == res.n_queries and run["method"] == res.method
    assert run["labels_bought"] == res.judgments.bought.n_labels > 0
    assert ("stopping_reason" in run) == case.startswith("sequential")
    if case in ONE_ROW:
        assert len(df) == 1 and list(df.columns[-len(run):]) == list(run)
        point = df.iloc[0, 0]
        assert point == pytest.approx(res._point(), nan_ok=True)
        low, high = res.confidence_interval(df.attrs["confidence_level"])
        assert (df["low"].iloc[0], df["high"].iloc[0]) == (low, high)
    # the same table whatever the arguments: only the numbers change
    other = res.summary(0.8, simultaneous=False)
    assert type(other) is type(df) and list(other.columns) == list(df.columns) and list(other.index) == list(df.index)
    assert (other["high"] - other["low"] <= df["high"] - df["low"] + 1e-12).all()


def test_several_system_tables_keep_their_columns(results):
    many, ranking = results["compare_many"].summary(), results["rank_systems"].summary()
    assert list(many.columns) == ["estimate", "difference", "standard_error", "low", "high", "prob_better"]
    assert list(ranking.columns) == ["estimate", "relative", "standard_error", "low", "high", "rank"]
    assert list(ranking.index) == list(results["rank_systems"].ranking)


def test_the_auto_choice_is_reported(results):
    res = results["estimate_auto"]
    auto = res.trace.attrs["auto"]
    why = res.summary()["chosen_because"].iloc[0]
    assert why.startswith("auto: ") and auto["reason"] in why and all(m in why for m in auto["predicted_variance"])
    assert res.to_dict()["auto"]["method"] == res.method == auto["method"]
    assert results["estimate"].summary()["chosen_because"].iloc[0] is None
    assert results["estimate"].to_dict()["auto"] is None


def test_sequential_levels_default_to_the_stopping_level(results):
    res = results["sequential"]
    assert res.summary().attrs["confidence_level"] == res.confidence_level
    assert res.to_dict()["confidence_interval"] == list(res.confidence_interval())
    assert res.summary()["stopping_reason"].iloc[0] == res.stopping_reason


@pytest.mark.parametrize("case", CASES)
def test_to_dict_round_trips_through_json(results, case):
    res = results[case]
    d = res.to_dict()
    text = json.dumps(d, allow_nan=False)  # no NaN or infinity: None instead
    assert json.loads(text) == d
    assert d["type"] == type(res).__name__ and d["metric"] == res.metric and d["method"] == res.method
    assert "trace" not in d and "bootstrap" not in d
    assert d["labels_bought"] == res.judgments.bought.n_labels
    # the judgments come back as they were (ids keep their types in the records)
    back = {}
    for q, doc, g in d["judgments"]:
        back.setdefault(q, {})[doc] = g
    assert back == res.judgments.to_dict()


def test_to_dict_values(results):
    d = results["compare"].to_dict()
    res = results["compare"]
    assert d["difference"] == res.difference and d["standard_error"] == res.standard_error
    assert d["estimate_a"] is None and math.isnan(res.estimate_a)  # judge="changeable": not estimated
    assert d["prob_a_better"] == res.prob_a_better()
    assert d["confidence_level"] == 0.95 and d["confidence_interval"] == list(res.confidence_interval())
    assert d["dof"] == res.dof
    assert results["sequential"].to_dict()["dof"] is None  # infinite: normal quantiles
    assert results["estimate_exact"].to_dict()["exact"] is True
    many = results["compare_many"]
    dm = many.to_dict()
    assert dm["names"] == ["f1", "f2"] and dm["differences"] == many.differences.tolist()
    ci = many.confidence_intervals()
    assert dm["confidence_intervals"]["low"] == ci.low.tolist() and dm["confidence_intervals"]["simultaneous"] == "max_t"
    assert dm["estimates"] == [None, None]
    rank = results["rank_systems"]
    dr = rank.to_dict()
    assert dr["ranking"] == list(rank.ranking)
    n0, n1 = rank.names[:2]
    assert dr["win_probabilities"][n0][n1] == rank.win_probabilities.loc[n0, n1]


def test_jsonable():
    v = jsonable({"a": np.float64(np.nan), 1: (np.int64(2), np.inf, True), "m": np.array([[1.5, np.nan]])})
    assert v == {"a": None, "1": [2, None, True], "m": [[1.5, None]]}


# the README's promise: no 16-digit floats, the estimate to the standard error's two significant digits
REPRS = {
    "estimate": r"EstimateResult\(err\(ymax=scale\)@5 = \d\.\d+ ± \d\.\d+, 95% CI \[\d\.\d+, \d\.\d+\], \d+ queries, "
                r"method (active_wor|doc_dyn|prefix)\)",
    "compare": r"ComparisonResult\(err\(ymax=scale\)@5 a - b = [+-]\d\.\d+ ± \d\.\d+, 95% CI \[[+-]\d\.\d+, [+-]\d\.\d+\], "
               r"P\(a better\) = \d\.\d\d, \d+ queries, method (active_wor|doc_dyn|prefix)\)",
    "compare_many": r"MultiComparisonResult\(err\(ymax=scale\)@5 vs 'baseline': f1 [+-]\d\.\d+ ± \d\.\d+, f2 [+-]\d\.\d+ ± "
                    r"\d\.\d+, \d+ queries, method (active_wor|doc_dyn|prefix)\)",
    "rank_systems": r"SystemRankingResult\(err\(ymax=scale\)@5 ranking system_\d > system_\d > system_\d, \d+ queries, "
                    r"method (active_wor|doc_dyn|prefix)\)",
    "sequential": r"SequentialEstimateResult\(err\(ymax=scale\)@5 = .*, method active, stopped: (target|budget|all_judged)\)",
}


@pytest.mark.parametrize("case", CASES)
def test_repr_is_short(results, case):
    text = repr(results[case])
    assert text.startswith(type(results[case]).__name__ + "(") and len(text) < 200
    assert not re.search(r"\d\.\d{6,}", text), text
    if case in REPRS:
        assert re.fullmatch(REPRS[case], text), text


def test_repr_rounds_to_the_standard_error(results):
    res = results["estimate"]
    places = decimals(res.standard_error)
    assert f"{res.estimate:.{places}f} ± {res.standard_error:.{places}f}" in repr(res)
    assert decimals(0.021) == 3 and decimals(0.0087) == 4 and decimals(1.23) == 1 and decimals(0.0) == 3
    assert decimals(float("nan")) == 3


@pytest.mark.parametrize("case", CASES)
def test_repr_html(results, case):
    res = results[case]
    text = res._repr_html_()
    assert text.startswith("<div>") and "<table" in text and "labels bought" in text
    assert html.escape(repr(res)) in text


def test_result_built_by_hand_presents_itself():
    """A result made without the engine (no judgments, no auto choice) still has every view."""
    res = EstimateResult(metric="dcg@5", method="passive", n_draws=3, n_queries=3, cost_spent=3.0, budget=3.0,
                         effective_sample_size=3.0, trace=pd.DataFrame(), estimate=1.0, standard_error=0.5)
    assert res.judgments is None and res.summary()["labels_bought"].iloc[0] is None
    assert res.to_dict()["judgments"] is None
    assert repr(res) == "EstimateResult(dcg@5 = 1.00 ± 0.50, 95% CI [0.02, 1.98], 3 queries, method passive)"
    assert "<table" in res._repr_html_()
