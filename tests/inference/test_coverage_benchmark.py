"""A reduced run of ``benchmarks/interval_coverage.py`` on real MQ2008 data (CI-sized, < 1 min).

The full benchmark (2000 repetitions, 2 datasets x 3 scenarios x 2 metrics x 6
methods, results in ``benchmarks/results/coverage/``) takes minutes; this runs
the same code on two MQ2008 scenarios at ERR@10 and checks the issue-15 goals
with margins for the smaller Monte-Carlo sample.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from ..conftest import load_benchmark, stat_reps

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("ACTIVERANK_DATA", ROOT.parent / "shared" / "data"))

pytestmark = [
    pytest.mark.statistical,
    pytest.mark.skipif(not (DATA / "mq2008" / "S1.txt").exists(), reason="MQ2008 data not available"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    bench = load_benchmark(ROOT / "benchmarks", "interval_coverage.py", "_bench_interval_coverage")
    methods = {k: bench.METHODS[k] for k in ("passive", "active", "model_assisted", "model_assisted_cf")}
    old = bench.INTERVALS
    bench.INTERVALS = {"snis": ("normal", "t_draws"), "self_tuned": ("normal",), "crossfit": ("t_draws",)}
    try:
        df = bench.run(["mq2008"], ["err@10"], ["single", "index"], stat_reps(600), 3, 199, str(DATA),
                       str(tmp_path_factory.mktemp("cache")), methods, say=lambda s: None)
    finally:
        bench.INTERVALS = old
    return df[df.budget.isin([5, 10, 20])]


def test_default_interval_covers_at_small_budgets(results):
    t = results[results.interval == "t_draws"]  # the default, ci="auto"
    print("\n" + t.pivot_table(index=["scenario", "method"], columns="budget", values="coverage").round(3)
          .to_string())
    assert (t.coverage >= 0.90).all(), t[t.coverage < 0.90][["scenario", "method", "budget", "coverage"]]
    assert t.nan_se.sum() == 0
    # the check has teeth: the previous normal interval under-covers here
    old = results[(results.interval == "normal") & (results.method == "passive") & (results.scenario == "index")]
    assert old[old.budget == 10].coverage.iloc[0] < 0.88


def test_cross_fitted_model_assisted_is_unbiased_and_not_worse_than_passive(results):
    cf = results[(results.method == "model_assisted_cf") & (results.interval == "t_draws")]
    assert (cf.bias_z.abs() < 3.5).all(), cf[["scenario", "budget", "bias_z"]]
    assert (cf[cf.budget == 5].mse_vs_passive <= 1.25).all(), cf[["scenario", "budget", "mse_vs_passive"]]
