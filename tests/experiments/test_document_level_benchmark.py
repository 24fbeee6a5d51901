"""benchmarks/document_level/run.py: determined tasks are skipped, exact answers pass the bias/coverage check."""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ..conftest import load_benchmark
from .test_harness import _fold_models

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "document_level"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark(BENCH, "run.py", "_bench_document_level_run")  # run.py imports its sibling `common`


def test_an_exact_answer_with_zero_se_is_covered_and_unbiased(bench):
    T = np.array([2.0, -1.0])
    est = np.broadcast_to(T + 1e-14, (3, 4, 2)).copy()  # census: the truth up to rounding, SE exactly 0
    se = np.zeros_like(est)
    cost = np.ones((3, 4))
    out = bench._pack("x", est, se, cost, T, np.full((3, 4), 60))
    assert (out["coverage"] == 1.0).all() and (out["n"] == 60).all()
    wrong = bench._pack("x", est + 0.5, se, cost, T, np.full((3, 4), 60))
    assert (wrong["coverage"] == 0.0).all()
    z = bench.bias_z(np.array([1e-14, 0.5, 0.5]), np.array([0.0, 0.0, 0.25]), bench.exact_tolerance(2.0))
    assert z.tolist() == [0.0, np.inf, 2.0]
    chk = bench.pooled_check([out, out])
    assert (chk["z"] == 0).all() and (chk["coverage"] == 1).all()
    assert np.isinf(bench.pooled_check([wrong])["z"]).all()


def test_coverage_is_scored_with_the_runs_student_t_interval(bench):
    T = np.array([0.0])
    est = np.full((1, 2, 1), 2.5)  # 2.5 SE off: outside a normal 95% interval, inside t on 4 dof (2.78)
    se = np.ones_like(est)
    cost = np.ones((1, 2))
    assert bench._pack("x", est, se, cost, T)["coverage"][0] == 0.0
    assert bench._pack("x", est, se, cost, T, dof=np.array([[4.0, np.inf]]))["coverage"][0] == 0.5
    assert bench.t_quantile(np.array([np.nan, np.inf]))[0] == pytest.approx(1.959964)


def test_a_task_no_judgment_can_change_is_skipped(bench, tmp_path, monkeypatch, capsys):
    fm = _fold_models(3)
    fm.scores["rf_classifier"] = fm.scores["rf_regression"].copy()  # two rankers that agree everywhere
    monkeypatch.setattr(bench, "fit_fold", lambda *a, **k: fm)
    task = bench.build_task(fm, "b_rfreg_rfcls", 1)
    costs = np.ones(fm.pool.n_docs)
    assert bench.determined(bench.Context(task, costs, bench.REL[:8]))
    assert not bench.determined(bench.Context(bench.build_task(fm, "b_ologit_rf", 1), costs, bench.REL[:8]))
    args = argparse.Namespace(folds="1", tasks="a_rf,b_rfreg_rfcls,c_index", reps=40)
    sav = bench.run_dataset("trec-news", args, argparse.Namespace(data_root=None), tmp_path, print)
    assert "fold 1 b_rfreg_rfcls: skipped, no judgment can change the target" in capsys.readouterr().out
    skipped = pd.read_csv(tmp_path / "skipped.csv")
    assert skipped[["fold", "task"]].values.tolist() == [[1, "b_rfreg_rfcls"]]
    assert set(sav.task) == {"a_rf", "c_index"} and np.isfinite(sav.savings).all()
    checks = pd.read_csv(tmp_path / "checks.csv")
    assert set(checks.task) == {"a_rf", "c_index"} and (checks.coverage.between(0, 1)).all()
    assert (tmp_path / "raw").is_dir() and (tmp_path / "curves.csv").exists()
