"""Experiment harness: problems, methods, analytic and simulated savings (small, seeded)."""

import os

import numpy as np
import pandas as pd
import pytest

from activerank.experiments import harness as ex

from ..conftest import require_shared_data
from activerank.io.letor import load_sample
from activerank.relevance.rankers import expected_gain_scores


def _fold_models(seed=0):
    """A fake fold on the shipped sample: noisy-truth relevance models and rankers."""
    pool = load_sample()
    g = np.random.default_rng(seed)
    onehot = np.eye(pool.n_grades)[pool.labels]
    probs = {}
    for name, noise in [("rf_regression", 1.0), ("rf_classifier", 2.0), ("ordered_logit", 1.5),
                        ("rf_regression_small", 3.0)]:
        raw = 0.6 * onehot + 0.4 * g.dirichlet(np.full(pool.n_grades, noise), size=pool.n_docs)
        probs[name] = raw / raw.sum(1, keepdims=True)
    scores = {n: expected_gain_scores(p) for n, p in probs.items()}
    scores["linear"] = pool.X[:, 0] + 0.1 * g.random(pool.n_docs)
    return ex.FoldModels(pool, scores, probs, {})


def test_problem_pair_and_single():
    fm = _fold_models()
    single = ex.build_problem(fm, ex.SCENARIOS[0], "err@10")
    assert single.values.shape == (fm.pool.n_queries,)
    assert single.costs.cost.mean() == pytest.approx(1.0)
    assert single.target == pytest.approx(single.values.mean())
    idx = next(s for s in ex.SCENARIOS if s.key == "c_index")
    pair = ex.build_problem(fm, idx, "dcg@10", rng=0)
    assert pair.instance.is_pair and pair.rankings[1].items.size < pair.rankings[0].items.size
    # uniD moments differ from the model's
    assert not np.allclose(pair.moments["model"][1], pair.moments["uniform"][1])


def test_methods_distributions():
    prob = ex.build_problem(_fold_models(), ex.SCENARIOS[0], "dcg@10", cost_model=np.linspace(0.5, 2, 607))
    qp = ex.method_distribution(prob, "passive")
    np.testing.assert_allclose(qp, prob.p)
    for name in ("active", "active_uniform_model", "active_uniform_costs"):
        q = ex.method_distribution(prob, name, defensive=0.2)
        assert q.sum() == pytest.approx(1.0) and (q >= 0.2 * prob.p - 1e-15).all()
    # uniC ignores costs: equals active when costs are constant
    const = ex.build_problem(_fold_models(), ex.SCENARIOS[0], "dcg@10", cost_model="constant")
    a = ex.method_distribution(const, "active")
    c = ex.method_distribution(const, "active_uniform_costs")
    lam = const.costs.cost
    if np.allclose(lam, lam[0]):
        np.testing.assert_allclose(a, c)


def test_unknown_method_is_a_clear_error():
    prob = ex.build_problem(_fold_models(), ex.SCENARIOS[0], "err@10")
    with pytest.raises(ValueError, match=r"`method` must be one of \[.*'active'"):
        ex.simulate(prob, "oracle_test", [5], 10, rng=0)


def test_simulate_summary_and_passive_error_scale():
    prob = ex.build_problem(_fold_models(), ex.SCENARIOS[0], "err@10")
    summ, loss = ex.simulate(prob, "passive", [5, 10, 20], 2000, rng=1)
    assert (np.diff(summ.mean_abs_error) < 0).all()
    assert (summ.mean_cost <= summ.budget + 1e-9).all()
    assert summ.coverage95.iloc[-1] > 0.8
    with pytest.raises(ValueError, match="increasing"):
        ex.simulate(prob, "passive", [10, 5], 10)


def test_analytic_variance_predicts_simulated_mse():
    # large synthetic pool: Lambda * MSE -> V(q) when repeats are rare
    g = np.random.default_rng(0)
    m = 4000
    values = g.gamma(0.5, size=m)
    p = np.full(m, 1 / m)
    lam = g.gamma(3.0, size=m)
    lam /= lam.mean()
    q = ex.oracle_distribution(values, p, lam, defensive=0.3)
    from activerank.design.draws import budget_stops, draw_budgeted_batch
    from activerank.inference.snis import snis_prefix

    budget = 100.0
    for dist in (p, q):
        plan = draw_budgeted_batch(dist, lam, budget, 3000, rng=2)
        est = snis_prefix(values[plan.queries], p[plan.queries] / dist[plan.queries], budget_stops(plan, [budget]))
        mse = np.mean((est.estimate - values.mean()) ** 2)
        assert budget * mse == pytest.approx(ex.analytic_variance(values, p, dist, lam), rel=0.15)
    assert ex.analytic_savings(values, p, p, lam) == pytest.approx(0.0)
    assert ex.oracle_savings(values, p, lam) >= ex.analytic_savings(values, p, q, lam) - 1e-12


def test_budget_to_reach_and_label_savings():
    b = np.array([10.0, 20.0, 40.0, 80.0])
    got, cens = ex.budget_to_reach(b, np.array([[4.0, 3.0, 2.0, 1.0], [1.0, 0.5, 0.4, 0.3], [9, 9, 9, 9.0]]),
                                   np.array([2.0, 2.0, 2.0]))
    assert got.tolist() == [40.0, 10.0, 80.0] and cens.tolist() == [0, -1, 1]
    # active's error at budget B equals passive's at 2B (std ~ 1/sqrt(B)): savings 50%
    g = np.random.default_rng(0)
    bud = np.array([10.0, 20.0, 40.0, 80.0, 160.0])
    passive = [np.abs(g.normal(size=(5, 4000))) / np.sqrt(bud)[:, None] for _ in range(2)]
    active = [np.abs(g.normal(size=(5, 4000))) / np.sqrt(2 * bud)[:, None] for _ in range(2)]
    s = ex.label_savings(bud, active, passive, 40.0, n_boot=200, rng=1)
    assert s["low"] < s["savings"] < s["high"]
    assert s["savings"] == pytest.approx(0.5, abs=0.08)
    with pytest.raises(ValueError, match="reference_budget"):
        ex.label_savings(bud, active, passive, 33.0)


def test_config_validation():
    with pytest.raises(ValueError, match="scenarios"):
        ex.ExperimentConfig(scenarios=("zz",)).instances()
    assert [s.key for s in ex.ExperimentConfig(scenarios=("b",)).instances()] == [
        "b_rfreg_rfcls", "b_ologit_linear", "b_ologit_rf"]
    with pytest.raises(ValueError, match="dataset"):
        ex.load_dataset("nope")
    with pytest.raises(ValueError, match="passive"):
        ex.run(ex.ExperimentConfig(methods=("active",)), progress=None)


def test_main_without_data_says_what_to_set(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ACTIVERANK_DATA", raising=False)
    assert ex.main(["--datasets", "mq2008", "--out", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("activerank experiment: error: no data root: the environment variable ACTIVERANK_DATA "
                          "is not set. Set it to the folder holding the full data sets")
    assert "export ACTIVERANK_DATA=" in err and "Traceback" not in err
    assert not (tmp_path / "res").exists()


def test_main_end_to_end_small(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVERANK_DATA", str(require_shared_data("mq2008", "S1.txt").parents[1]))
    out = tmp_path / "res"
    rc = ex.main(["--datasets", "mq2008", "--folds", "2", "--reps", "60", "--metrics", "err@10",
                  "--scenarios", "a_rf,c_index", "--n-trees", "8", "--quick", "--n-boot", "50",
                  "--budgets", "mq2008:10,20,40", "--reference", "mq2008:20", "--out", str(out),
                  "--investigate"])
    assert rc == 0
    curves = pd.read_csv(out / "curves.csv")
    assert set(curves.method) == {"passive", "active", "active_uniform_model", "active_uniform_costs"}
    assert len(curves) == 2 * 4 * 3
    sav = pd.read_csv(out / "savings.csv")
    assert set(sav.instance) == {"a_rf", "c_index"} and sav.oracle_savings.notna().all()
    assert (out / "fig_mq2008_err10.png").exists() and (out / "fig_mq2008_costs.png").exists()
    assert "Method `active`" in (out / "savings.md").read_text()
    assert list((out / "cache").glob("*.npz"))
    inv = pd.read_csv(out / "investigation_variants.csv")
    assert {"defensive", "temperature", "costs"} <= set(inv.variant)
    assert "what-if" in (out / "savings.md").read_text()


@pytest.mark.parametrize("method", ["doc_dyn", "doc_uniform", "doc_hh", "two_stage"])
def test_document_level_methods_run_in_the_harness(method):
    fm = _fold_models()
    idx = next(s for s in ex.SCENARIOS if s.key == "c_index")
    prob = ex.build_problem(fm, idx, "dcg@10", rng=0)
    summ, loss = ex.simulate(prob, method, [5, 20], 300, rng=1)
    # the errors shrink with the budget; the cost is the budget's (in expectation for doc_dyn)
    assert summ.mean_abs_error.iloc[1] < summ.mean_abs_error.iloc[0]
    assert (summ.n_empty == 0).all() and (summ.mean_cost <= 1.05 * summ.budget).all()
    assert (summ.mean_draws > 0).all() and (summ.mean_queries > 0).all()
    # (uniform sampling's normal interval under-covers here: few sampled documents can change the difference)
    assert (summ.coverage95 > (0.75 if method == "doc_uniform" else 0.85)).all()
    with pytest.raises(ValueError, match=f"method '{method}' samples single documents and needs a metric"):
        ex.simulate(ex.build_problem(fm, idx, "err@10", rng=0), method, [5], 10, rng=0)
    with pytest.raises(ValueError, match="samples documents"):
        ex.method_distribution(prob, method)


def test_harness_document_level_estimates_are_unbiased_for_the_pool_value():
    fm = _fold_models(1)
    prob = ex.build_problem(fm, ex.SCENARIOS[0], "dcg@10")
    problem_d = ex.build_problem(fm, next(s for s in ex.SCENARIOS if s.key == "b_rfreg_rfcls"), "dcg@10")
    for p in (prob, problem_d):
        from activerank.design.kinds.documents import unit_costs
        from activerank.design.kinds.documents import document_target
        from activerank.design.methods import get_method

        dt = document_target(list(p.rankings), n_docs=p.probs.shape[0], metric=p.metric, n_grades=3)
        assert dt.value(p.labels)[0] == pytest.approx(p.target, abs=1e-12)
        out = get_method("doc_hh").kind.simulate(dt, p.probs, unit_costs(dt, p.costs, p.document_costs),
                                                      [10.0], p.labels[dt.rows], 400, np.random.default_rng(2),
                                                      defensive=0.1)
        err = out["estimate"][0, :, 0] - p.target
        assert abs(err.mean()) <= 3 * err.std(ddof=1) / np.sqrt(err.size)


def test_the_harness_driver_runs_document_level_methods(monkeypatch):
    """run(): savings and curves for a document-level method next to passive; no query-level analytic variance."""
    monkeypatch.setattr(ex, "fit_fold", lambda *args, **kwargs: _fold_models(2))
    cfg = ex.ExperimentConfig(datasets=("mq2008",), folds=(1,), methods=("passive", "doc_hh", "two_stage"),
                              metrics=("dcg@10",), scenarios=("a_rf", "c_index"), n_reps=40, n_boot=20,
                              budgets={"mq2008": (5, 10, 20)}, reference_budget={"mq2008": 10}, data_root=".")
    res = ex.run(cfg, progress=None)
    assert set(res.curves.method) == {"passive", "doc_hh", "two_stage"} and (res.curves.n_empty == 0).all()
    doc = res.analytic[res.analytic.method.isin(["doc_hh", "two_stage"])]
    assert len(doc) == 4 and doc.variance.isna().all()
    sav = res.savings.set_index(["instance", "method"])
    assert np.isfinite(sav.loc[("c_index", "doc_hh"), "abs_savings"])
    assert sav.loc[[("c_index", "doc_hh"), ("a_rf", "two_stage")], "analytic_savings"].isna().all()
    table = ex.savings_table(res.savings, "doc_hh")
    assert len(table) == 2

