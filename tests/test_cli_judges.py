"""``--llm-grades``: judges' grade files calibrated into the relevance model of estimate/compare."""

import json
from importlib import resources

import numpy as np

import activerank as ar
from activerank.cli import main

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
