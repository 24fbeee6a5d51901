"""``--llm-grades``: judges' grade files calibrated into the relevance model of estimate/compare."""

import json
from importlib import resources

import numpy as np

import activerank as ar
from activerank.cli import main
from activerank.relevance.models import make_relevance_model
from activerank.relevance.rankers import expected_gain_scores

SAMPLE = str(resources.files("activerank.datasets").joinpath("mq2008_sample.txt"))
TRAIN = str(resources.files("activerank.datasets").joinpath("mq2008_sample_train.txt"))


def _judge_file(path, *, seed=0, bad_line=False):
    """A judge's 'qid Q0 docid grade' lines on the sample pool: the hidden grade, one off 40% of the time."""
    pool = ar.load_sample("test")
    rng = np.random.default_rng(seed)
    grades = np.clip(pool.labels + rng.choice([0, 0, 0, -1, 1], pool.n_docs), 0, 2)
    qids = np.repeat(pool.query_ids, np.diff(pool.offsets))
    lines = [f"{q} Q0 {d} {g}" for q, d, g in zip(qids, pool.doc_ids, grades)]
    if bad_line:
        lines[4] = lines[4].rsplit(" ", 1)[0] + " 7"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_estimate_with_a_judge(capsys, tmp_path):
    llm = _judge_file(tmp_path / "llm.txt")
    base = ["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--metric", "dcg@10"]
    assert main([*base, "--llm-grades", llm, "--llm-grades", llm, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judges"]["judges"] == ["llm.txt", "llm.txt"] and out["judges"]["calibrated"] is True
    assert out["cost_spent"] <= 10
    assert main([*base, "--llm-grades", llm]) == 0
    assert "judges llm.txt calibrated on" in capsys.readouterr().out


def test_bad_judge_file_names_the_line(capsys, tmp_path):
    llm = _judge_file(tmp_path / "llm.txt", bad_line=True)
    rc = main(["compare", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--scores-a", "model",
               "--scores-b", "feature:25", "--llm-grades", llm])
    err = capsys.readouterr().err
    assert rc != 0 and "--llm-grades:" in err and "line 5: grade 7 is not on the judge's declared scale 0..2" in err


def test_judge_file_is_never_an_output(capsys, tmp_path):
    llm = _judge_file(tmp_path / "llm.txt")
    rc = main(["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--llm-grades", llm,
               "--trace", llm])
    assert rc != 0 and "llm-grades" in capsys.readouterr().err
    assert open(llm).read().count("\n") == 607  # untouched


def _held_file(path, n_queries=6):
    """The sample pool's hidden grades of its first queries, as qrels (the labels a team already holds)."""
    pool = ar.load_sample("test")
    qids = np.repeat(pool.query_ids, np.diff(pool.offsets))
    end = int(pool.offsets[n_queries])
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in zip(qids[:end], pool.doc_ids[:end],
                                                                   pool.labels[:end])))
    return str(path)


def test_plan_with_a_judge_predicts_its_savings(capsys, tmp_path):
    llm, held = _judge_file(tmp_path / "llm.txt"), _held_file(tmp_path / "held.qrels")
    base = ["plan", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--metric", "dcg@10",
            "--methods", "active_wor,doc_dyn"]
    assert main([*base, "--qrels", held, "--llm-grades", llm]) == 0
    out = capsys.readouterr().out
    assert "without the judges: SE" in out and "the judges save" in out and "judges llm.txt calibrated" in out
    assert main([*base, "--qrels", held, "--llm-grades", llm, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["judges"] == ["llm.txt"] and all(0 < s < 1 for s in plan["se_without_judges"])
    assert main([*base, "--qrels", held]) == 0  # held labels alone: free, no comparison
    assert "without the judges" not in capsys.readouterr().out
    rc = main([*base, "--llm-grades", llm])
    assert rc != 0 and "give them with --qrels" in capsys.readouterr().err
    few = _held_file(tmp_path / "few.qrels", n_queries=1)
    rc = main([*base, "--qrels", few, "--llm-grades", llm])
    assert rc != 0 and "fewer than 30" in capsys.readouterr().err


def test_held_qrels_are_free_in_estimate_and_compare_and_calibrate_the_judges(capsys, tmp_path):
    held = _held_file(tmp_path / "held.qrels")
    llm = _judge_file(tmp_path / "llm.txt")
    base = ["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--metric", "dcg@10",
            "--budget-unit", "documents", "--costs", "constant", "--json"]
    assert main([*base, "--qrels", held]) == 0
    out = json.loads(capsys.readouterr().out)
    data = ar.load_sample("test")
    train = ar.load_sample("train")
    probs = make_relevance_model("logistic", data.n_grades, random_state=0).fit(train.X, train.labels
                                                                                 ).predict_proba(data.X)
    end = int(data.offsets[6])
    qids = np.repeat(data.query_ids, np.diff(data.offsets))
    judgments: dict = {}
    for q, d, g in zip(qids[:end], data.doc_ids[:end], data.labels[:end].tolist()):
        judgments.setdefault(q, {})[d] = g
    res = ar.estimate(data, expected_gain_scores(probs), probs, ar.KnownLabels.from_data(data), budget=10,
                      metric="dcg@10", budget_unit="documents", costs="constant", judgments=judgments, rng=0)
    assert out["estimate"] == res.estimate and out["cost_spent"] == res.cost_spent <= 10
    # with judges: calibrated on the held labels, so no calibration round is bought
    assert main(["compare", *base[1:], "--scores-a", "model", "--scores-b", "feature:25", "--qrels", held,
                 "--llm-grades", llm]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["judges"]["calibrated"] is True and out["judges"]["calibration_round_cost"] == 0.0
    rc = main([*base, "--qrels", str(tmp_path / "missing.qrels")])
    assert rc != 0 and "--qrels:" in capsys.readouterr().err
    before = open(held).read()
    rc = main([*base, "--qrels", held, "--trace", held])  # an input is never an output
    assert rc != 0 and "--qrels" in capsys.readouterr().err and open(held).read() == before
