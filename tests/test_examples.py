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
    evaluation, booster, table = res["evaluation"], res["booster"], res["history"]
    assert res["data"] == "shipped MQ2008 sample"
    # every evaluation within its budget; all of them together judged a fraction of the 607-document pool
    assert all(r.cost_spent <= res["budget"] == 8 for r in evaluation.results.values())
    assert 0 < evaluation.judgments.n_labels == table["labels_bought"].sum() < 607 / 2
    # the booster's best iteration is the callback's best checkpoint; the history has every round
    assert booster.best_iteration == evaluation.best_iteration
    assert len(res["lightgbm_history"]["activerank"]["prob_better"]) == max(evaluation.results)
    # the first comparison holds no label yet: it lands near the difference every label of the pool gives.
    # Later ones reuse the labels bought before as an exactly known stratum and sample most of the rest of
    # this 30-query pool (measured on the round-30 call over 200 seeds: bias -2.5 MC SE, coverage 0.89 --
    # the small-pool limit of the sample without replacement, issue "Fewest labels by default", item 4)
    first = table.index[0]
    assert abs(table.loc[first, "difference"] - res["true_difference"][first]) < 3 * table.loc[first, "standard_error"]
    assert any("P(new better)" in line for line in lines) and any("best checkpoint" in line for line in lines)


def test_training_job_cli_arguments(capsys):
    job = _load("training_job")
    res = job.main(["--size", "small", "--budget", "10", "--every", "20", "--min-prob", "0.5", "--patience", "1",
                    "--metric", "dcg@5"])
    evaluation = res["evaluation"]
    assert res["budget"] == 10.0 and evaluation.every == 20 and evaluation.patience == 1
    assert all(r.metric == "dcg@5" for r in evaluation.results.values())
    assert "dcg@5 - dcg@5(after 20 rounds)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        job.main(["--size", "huge"])
