import json
from importlib import resources

import pytest

from activerank import LowEffectiveSampleSizeWarning
from activerank.cli import main


SAMPLE = str(resources.files("activerank.datasets").joinpath("mq2008_sample.txt"))
TRAIN = str(resources.files("activerank.datasets").joinpath("mq2008_sample_train.txt"))


def test_demo_runs(capsys):
    # the default budget is the one a newcomer runs: it must not trip the low-ESS warning
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "ERR@10 of the model ranker,  active" in out and "true difference" in out


def test_estimate_json_and_trace(capsys, tmp_path):
    trace = tmp_path / "trace.csv"
    rc = main(["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10",
               "--metric", "dcg@5", "--grades", "3", "--json", "--trace", str(trace)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "dcg@5" and out["ci_low"] <= out["estimate"] <= out["ci_high"]
    assert out["cost_spent"] <= 10 and trace.read_text().startswith("draw,query,query_id")


def test_compare_text(capsys):
    with pytest.warns(LowEffectiveSampleSizeWarning):  # budget 10: fewer than 10 effective draws
        rc = main(["compare", SAMPLE, "--model", "uniform", "--scores-a", "feature:25",
                   "--scores-b", "feature:1", "--budget", "10", "--grades", "3"])
    assert rc == 0 and "difference" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["estimate", SAMPLE, "--budget", "10"], "--model lightgbm needs --train FILE"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "0"], "`budget` must be a positive"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "5", "--scores", "feature:99"],
     "--scores 'feature:99': feature must be 1..46"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "5", "--metric", "map"],
     "is not a known metric"),
    (["estimate", "/nonexistent.txt", "--model", "uniform", "--budget", "5"], "nonexistent"),
])
def test_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
