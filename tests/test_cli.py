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
    assert "ERR@10 of the model ranker, active_wor" in out and "true difference" in out
    assert "ERR@10(model) - ERR@10(BM25), active_wor" in out


def test_estimate_json_and_trace(capsys, tmp_path):
    trace = tmp_path / "trace.csv"
    rc = main(["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10",
               "--metric", "dcg@5", "--grades", "3", "--json", "--trace", str(trace)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "dcg@5" and out["ci_low"] <= out["estimate"] <= out["ci_high"]
    # the default method samples without replacement, tuned coefficient: Student-t on n - 2 degrees of freedom
    assert out["method"] == "active_wor" and out["ci"] == "t" and out["dof"] == out["n_queries"] - 2
    assert out["cost_spent"] <= 10 and trace.read_text().startswith("draw,query,query_id")
    wr = ["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--metric", "dcg@5",
          "--grades", "3", "--json", "--method", "active"]
    assert main(wr) == 0
    out = json.loads(capsys.readouterr().out)
    # with replacement: Student-t with Kish's effective number of distinct queries minus 1 (<= d - 1)
    assert out["ci"] == "t_draws" and 1 <= out["dof"] <= out["n_queries"] - 1
    rc = main([*wr, "--ci", "bootstrap"])
    boot = json.loads(capsys.readouterr().out)
    assert rc == 0 and boot["ci"] == "bootstrap" and boot["estimate"] == out["estimate"]
    assert boot["ci_low"] < boot["estimate"] < boot["ci_high"]


def test_compare_text(capsys):
    # budget 10: fewer than 10 effective draws; the command line reports the warning on stderr
    rc = main(["compare", SAMPLE, "--model", "uniform", "--scores-a", "feature:25",
               "--scores-b", "feature:1", "--budget", "10", "--grades", "3", "--method", "active"])
    out, err = capsys.readouterr()
    assert rc == 0 and "difference" in out and "dof)" in out
    assert "warning: effective sample size" in err
    rc = main(["compare", SAMPLE, "--model", "uniform", "--scores-a", "feature:25", "--scores-b", "feature:1",
               "--budget", "10", "--grades", "3", "--ci", "normal", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ci"] == "normal" and out["dof"] is None


@pytest.mark.parametrize("argv, message", [
    (["estimate", SAMPLE, "--budget", "10"], "--model lightgbm needs --train FILE"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "5", "--scores", "feature:99"],
     "--scores 'feature:99': feature must be 1..46"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "5", "--metric", "mapp"],
     "is not a known metric"),
    (["estimate", "/nonexistent.txt", "--model", "uniform", "--budget", "5"], "nonexistent"),
])
def test_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("option, value, message", [
    ("--budget", "0", "must be a positive finite number, got '0'"),
    ("--budget", "nan", "must be a positive finite number"),
    ("--budget", "lots", "must be a number, got 'lots'"),
    ("--seed", "-1", "must be an integer >= 0, got '-1'"),
    ("--seed", "1.5", "must be an integer, got '1.5'"),
    ("--grades", "1", "must be an integer in 2..101"),
    ("--confidence", "1.5", "must be a number strictly between 0 and 1"),
])
def test_bad_option_values_exit_2_naming_the_option(capsys, option, value, message):
    argv = ["estimate", SAMPLE, "--model", "uniform", "--budget", "5", option, value]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"argument {option}: {message}" in err and "Traceback" not in err


def test_warnings_print_as_one_clean_line(capsys):
    """The low-ESS warning: one 'activerank estimate: warning: ...' line, no source line, nothing leaked."""
    import warnings

    argv = ["estimate", SAMPLE, "--model", "uniform", "--budget", "3", "--seed", "1", "--method", "active"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert caught == []                          # shown by the CLI, not passed on
    assert len(err) == 1 and err[0].startswith("activerank estimate: warning: effective sample size")
    assert not warnings.showwarning.__name__ == "show"   # the override ended with the command


def test_warnings_clean_in_a_real_process(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "activerank.cli", "estimate", SAMPLE, "--model", "uniform",
                           "--budget", "3", "--seed", "1", "--method", "active"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("activerank estimate: warning: "), proc.stderr


# the pandas 3.1 deprecation that dask's Parquet reader triggers is not ours
@pytest.mark.filterwarnings("ignore:The inplace keyword")
def test_parquet_pool_through_the_distributed_path(capsys, tmp_path):
    pytest.importorskip("dask.dataframe")
    import activerank.distributed as ard

    from .distributed._pools import boundaries, synthetic_frame

    df, _ = synthetic_frame(seed=2, n_queries=60)
    cuts = boundaries(df, 2)
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        df.iloc[a:b].to_parquet(tmp_path / f"part.{i}.parquet", index=False)
    argv = ["compare", str(tmp_path), "--probs-columns", "p0,p1,p2", "--scores-a", "column:score_a",
            "--scores-b", "column:score_b", "--budget", "20", "--metric", "dcg@5", "--seed", "3", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    ref = ard.compare(ard.DaskPool.from_parquet(str(tmp_path)), "score_a", "score_b", ["p0", "p1", "p2"],
                      ard.ColumnLabels("label"), budget=20, metric="dcg@5", rng=3)
    assert out["difference"] == ref.difference and out["standard_error"] == ref.standard_error
    assert main(argv[:1] + argv[1:2] + argv[4:-1]) == 2
    assert "a Parquet pool needs --probs-columns" in capsys.readouterr().err
    assert main(["estimate", str(tmp_path), "--probs-columns", "p0,p1,p2", "--scores", "feature:3",
                 "--budget", "5"]) == 2
    assert "--scores must be 'column:NAME' for a Parquet pool; got 'feature:3'" in capsys.readouterr().err
    assert main(argv[:-1] + ["--judge", "changeable"]) == 2
    assert "--judge changeable is not available on Parquet pools" in capsys.readouterr().err


def test_cli_defaults_are_the_apis():
    """The command line's default method is the Python API's, in memory and on Parquet pools alike."""
    import inspect

    import activerank as ar
    import activerank.cli.commands as cli
    import activerank.distributed as ard

    for f in (ar.estimate, ar.compare, ar.compare_many, ar.rank_systems):
        assert inspect.signature(f).parameters["method"].default == cli.DEFAULT_METHOD == "active_wor"
    for f in (ard.estimate, ard.compare):
        assert inspect.signature(f).parameters["method"].default == cli.DEFAULT_METHOD
