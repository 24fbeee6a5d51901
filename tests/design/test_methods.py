"""The method registry: one set of names for the API, the CLI, the harness and campaigns."""

import json

import numpy as np
import pytest

import activerank as ar
from activerank.design.methods import METHODS, Method, get_method, method_names, register_method, unregister_method
from activerank.experiments import harness as ex
from activerank.inference.estimators import SelfNormalized


def _half_active(prediction, costs, p, defensive):
    """Midway between the active q* and p: a method the engine has never seen."""
    return 0.5 * METHODS["active"].distribution(prediction, costs, p, defensive=defensive) + 0.5 * p


@pytest.fixture
def half_active():
    method = register_method(Method("half_active", _half_active, SelfNormalized(), description="test"))
    yield method
    unregister_method("half_active")


def test_builtin_names_and_clear_errors():
    assert method_names()[:3] == ("active", "passive", "active_uniform_costs")
    assert {"model_assisted", "model_assisted_variance", "model_assisted_fixed",
            "active_uniform_model"} <= set(method_names())
    with pytest.raises(ValueError, match=r"`method` must be one of \[.*'active'.*\], got 'nope'"):
        get_method("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_method(METHODS["active"])
    with pytest.raises(TypeError, match="must be a DesignKind .* or an Estimator"):
        register_method(Method("x", _half_active, "snis"))


@pytest.mark.filterwarnings("ignore::activerank.inference.snis.LowEffectiveSampleSizeWarning")
def test_a_registered_method_runs_through_estimate_harness_and_campaign(half_active, tmp_path):
    data = ar.load_sample()
    train = ar.load_sample("train")
    probs = ar.relevance.make_relevance_model("logistic", 3).fit(train.X, train.labels).predict_proba(data.X)
    lab = ar.KnownLabels.from_data(data)
    a, b = data.X[:, 24], data.X[:, 39]
    # the Python API
    res = ar.estimate(data, a, probs, lab, budget=8, metric="err@10", method="half_active", rng=1)
    dsg = ar.make_design(data, (ar.relevance.rank_by_scores(a, data.offsets),), probs, metric="err@10",
                         method="half_active")
    active = ar.make_design(data, (ar.relevance.rank_by_scores(a, data.offsets),), probs, metric="err@10")
    np.testing.assert_allclose(dsg.q, 0.5 * active.q + 0.5 * active.p)
    assert res.method == "half_active" and np.allclose(res.trace["q"], dsg.q[res.trace["query"]])
    cmp = ar.compare_many(data, [a], b, probs, lab, budget=8, metric="dcg@5", method="half_active", rng=2)
    assert cmp.method == "half_active"
    # the experiment harness (its own batched estimator path)
    fm = ex.FoldModels(data, {"f": a}, {"f": probs}, {})
    inst = ex.ScenarioInstance("t", "a", "test", "f", None, ("f",))
    prob = ex.build_problem(fm, inst, "err@10")
    summ, _ = ex.simulate(prob, "half_active", [5, 10], 50, rng=0)
    assert list(summ.budget) == [5, 10] and (summ.mean_cost <= summ.budget + 1e-9).all()
    # a campaign: created, judged, estimated with the method's estimator
    with ar.campaign.Campaign.create(tmp_path / "c.db", data, a, probs, budget=8, metric="err@10",
                                     method="half_active", seed=1) as camp:
        _judge_every_task(camp, lab, tmp_path / "j.jsonl")
        from_store = camp.estimate()
    same = ar.estimate(data, a, probs, lab, budget=8, metric="err@10", method="half_active", rng=1)
    assert from_store.method == "half_active" and from_store.estimate == pytest.approx(same.estimate, rel=1e-12)


@pytest.mark.filterwarnings("ignore::activerank.inference.snis.LowEffectiveSampleSizeWarning")
@pytest.mark.parametrize("name", method_names())
def test_every_registered_method_runs_through_estimate_harness_and_campaign(name, tmp_path):
    """Every built-in method: the Python API, the experiment harness, and a campaign (of the
    document-level methods campaigns plan the Poisson sample or record the engine's requests; a query-level
    method without replacement plans its one sample; the prefix method exports its tasks in rounds)."""
    data = ar.load_sample()
    method = get_method(name)
    probs = ar.relevance.UniformRelevanceModel(3).fit(data.X, data.labels).predict_proba(data.X)
    probs = 0.5 * probs + 0.5 * np.eye(3)[data.labels]  # informative, never certain
    lab = ar.KnownLabels.from_data(data)
    a, b = data.X[:, 24], data.X[:, 39]
    metric = "err@5" if method.unit == "prefix" else "dcg@5"
    res = ar.estimate(data, a, probs, lab, budget=12, metric=metric, method=name, rng=1)
    assert res.method == name and np.isfinite(res.estimate) and res.standard_error > 0
    cmp = ar.compare(data, a, b, probs, lab, budget=12, metric=metric, method=name, rng=2)
    assert cmp.method == name and np.isfinite(cmp.difference)
    fm = ex.FoldModels(data, {"f": a, "g": b}, {"f": probs, "g": probs}, {})
    if method.unit == "prefix":  # simulated by its plug-in (benchmarks/peers/prefix_api.py); campaigns in rounds
        prob = ex.build_problem(fm, ex.ScenarioInstance("t", "a", "test", "f", None, ("f",)), metric)
        with pytest.raises(ValueError, match="PrefixSampling.simulate"):
            ex.simulate(prob, name, [12, 20], 20, rng=0)
        with ar.campaign.Campaign.create(tmp_path / "c.db", data, a, probs, budget=12, metric=metric,
                                         method=name, seed=1) as camp:
            for r in range(50):  # a round per judging step: the next document of every unfinished query
                if camp.status().draws_usable:
                    break
                _judge_every_task(camp, lab, tmp_path / f"j{r}.jsonl")
            from_store = camp.estimate()
        assert from_store.estimate == pytest.approx(res.estimate, rel=1e-12)
        return
    for inst in (ex.ScenarioInstance("t", "a", "test", "f", None, ("f",)),
                 ex.ScenarioInstance("u", "b", "test", "f", "g", ("f", "g"))):
        prob = ex.build_problem(fm, inst, metric)
        summ, loss = ex.simulate(prob, name, [12, 20], 20, rng=0)
        assert list(summ.budget) == [12, 20] and (summ.n_empty == 0).all()
        assert (summ.mean_cost <= summ.budget * (1.1 if method.unit == "document" else 1) + 1e-9).all()
        assert loss["abs_error"].shape == (2, 20) and np.all(np.isfinite(loss["abs_error"]))
    if method.unit == "document":
        # the campaign's tasks are (query, document) pairs (Poisson designs: the sample; the others: what the
        # engine asks for), estimated as the engine does
        with ar.campaign.Campaign.create(tmp_path / "c.db", data, a, probs, budget=12, metric=metric,
                                         method=name, seed=1) as camp:
            tasks = camp.export_tasks(tmp_path / "t.jsonl")
            rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
            for r in rows:
                r["grade"] = int(lab(r["query_id"], [r["doc_id"]])[0])
            (tmp_path / "j.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
            camp.import_judgments(tmp_path / "j.jsonl")
            from_store = camp.estimate()
        assert tasks.n_rows == len(rows) and from_store.estimate == pytest.approx(res.estimate, rel=1e-12)
        assert from_store.standard_error == pytest.approx(res.standard_error, rel=1e-12)
        return
    with ar.campaign.Campaign.create(tmp_path / "c.db", data, a, probs, budget=12, metric=metric, method=name,
                                     seed=1) as camp:
        _judge_every_task(camp, lab, tmp_path / "j.jsonl")
        from_store = camp.estimate()
        assert from_store.estimate == pytest.approx(res.estimate, rel=1e-12)
        assert from_store.standard_error == pytest.approx(res.standard_error, rel=1e-12)
        assert from_store.n_draws == res.n_draws and from_store.cost_spent == pytest.approx(res.cost_spent)


def _judge_every_task(camp, lab, path):
    """Answer every (current) task of a query-level or prefix campaign from ``lab`` through a judgments file."""
    rows = []
    for x in np.unique(camp.plan().queries).tolist():
        qid = camp.query_ids[x]
        for doc, g in zip(camp.tasks(qid), lab(int(qid), camp.tasks(qid))):
            rows.append(json.dumps({"query_id": int(qid), "doc_id": doc, "grade": int(g)}))
    path.write_text("\n".join(rows) + "\n")
    camp.import_judgments(path)


def test_docs_method_table_is_the_registry():
    """docs/methods.md is generated from the registry (regenerate it after adding a built-in method)."""
    from pathlib import Path

    from activerank.design.methods import method_table

    text = (Path(__file__).resolve().parents[2] / "docs" / "methods.md").read_text(encoding="utf-8")
    assert text.endswith(method_table()), "docs/methods.md is stale: regenerate it from method_table()"
