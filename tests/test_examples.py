"""The examples in examples/ run (at small size) and do what they say."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_training_job_small():
    job = _load("training_job")
    lines = []
    res = job.run("small", out=lines.append)
    cmp = res["comparison"]
    assert res["data"] == "shipped MQ2008 sample"
    # a small budget: a fraction of the 30-query pool judged, the budget respected
    assert cmp.cost_spent <= res["budget"] == 12 and 0 < cmp.n_queries < 30
    assert res["promote"] == (cmp.prob_a_better() >= res["min_prob"])
    # seeded run: the estimate of new - old lands near the difference every label of the pool gives
    assert abs(cmp.difference - res["true_difference"]) < 3 * cmp.standard_error
    assert any("P(new better)" in line for line in lines)


def test_training_job_cli_arguments(capsys):
    job = _load("training_job")
    res = job.main(["--size", "small", "--budget", "15", "--min-prob", "0.0", "--metric", "dcg@5"])
    assert res["promote"] and res["budget"] == 15.0 and res["comparison"].metric == "dcg@5"
    assert "dcg@5(checkpoint 20 rounds) - dcg@5(checkpoint 10 rounds)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        job.main(["--size", "huge"])
