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
    # the default (method="auto") runs the prefix design for ERR@10 on the sample at budget 12
    assert "ERR@10 of the model ranker,     prefix" in out and "true difference" in out
    assert "ERR@10(model) - ERR@10(BM25), prefix" in out


def test_estimate_json_and_trace(capsys, tmp_path):
    trace = tmp_path / "trace.csv"
    base = ["estimate", SAMPLE, "--train", TRAIN, "--model", "logistic", "--budget", "10", "--metric", "dcg@5",
            "--grades", "3", "--json"]
    assert main(base) == 0  # the default, method auto: the design and why, as the API reports them
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == out["auto"]["method"] in ("active_wor", "doc_dyn") and out["auto"]["reason"]
    rc = main([*base, "--trace", str(trace), "--method", "active_wor"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "dcg@5" and out["ci_low"] <= out["estimate"] <= out["ci_high"]
    # active_wor samples without replacement; 10 of 30 queries is a small pool's share: coefficient 1
    # and Student-t on Satterthwaite's degrees of freedom (at most n - 1)
    assert out["method"] == "active_wor" and out["ci"] == "t" and 1 <= out["dof"] <= out["n_queries"] - 1
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
    assert rc == 0 and "err(ymax=scale)@10 difference a - b: " in out and "dof)" in out
    # which ranker is a and which is b; the default judges only what can change the difference
    assert "a = feature:25, b = feature:1; the rankers' own means are not estimated" in out
    assert "warning: effective sample size" in err
    rc = main(["compare", SAMPLE, "--model", "uniform", "--scores-a", "feature:25", "--scores-b", "feature:1",
               "--budget", "10", "--grades", "3", "--ci", "normal", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ci"] == "normal" and out["dof"] is None
    assert out["ranker_a"] == "feature:25" and out["ranker_b"] == "feature:1"
    assert out["estimate_a"] is None and out["estimate_b"] is None  # not estimated (judge changeable)


def test_compare_names_the_rankers_and_their_estimates(capsys):
    argv = ["compare", SAMPLE, "--model", "uniform", "--scores-a", "feature:25", "--scores-b", "feature:1",
            "--budget", "12", "--grades", "3", "--judge", "all"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out)[:5] == ["difference", "ranker_a", "ranker_b", "estimate_a", "estimate_b"]
    assert 0 <= out["estimate_a"] <= 1 and 0 <= out["estimate_b"] <= 1  # ERR@10 of each ranker
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"a = feature:25, b = feature:1; estimates a {out['estimate_a']:.4f}, b {out['estimate_b']:.4f}" in text


@pytest.mark.parametrize("argv, message", [
    (["estimate", SAMPLE, "--budget", "10"], "--model lightgbm (the default) needs --train FILE"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "5", "--costs", "log_length"],
     "needs document lengths"),
    (["estimate", SAMPLE, "--model", "uniform", "--budget", "5", "--length-feature", "99"],
     "--length-feature=99 but the file has only 46 features"),
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
    # two true warnings at 4 queries, each one line: uneven weights, and few labels
    assert len(err) == 2 and all(line.startswith("activerank estimate: warning: ") for line in err)
    assert err[0].startswith("activerank estimate: warning: effective sample size")
    assert err[1].startswith("activerank estimate: warning: the estimate rests on")
    assert not warnings.showwarning.__name__ == "show"   # the override ended with the command


def test_warnings_clean_in_a_real_process(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "activerank.cli", "estimate", SAMPLE, "--model", "uniform",
                           "--budget", "3", "--seed", "1", "--method", "active"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("activerank estimate: warning: ") for line in lines), proc.stderr


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
    from activerank.cli.commands import DEFAULT_METHOD

    ref = ard.compare(ard.DaskPool.from_parquet(str(tmp_path)), "score_a", "score_b", ["p0", "p1", "p2"],
                      ard.ColumnLabels("label"), budget=20, metric="dcg@5", rng=3, method=DEFAULT_METHOD)
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
        assert inspect.signature(f).parameters["method"].default == cli.DEFAULT_METHOD == "auto"
    for f in (ard.estimate, ard.compare, ard.compare_many, ard.rank_systems):
        assert inspect.signature(f).parameters["method"].default == cli.DEFAULT_METHOD


def test_plan_text_and_json(capsys):
    rc = main(["plan", SAMPLE, "--model", "uniform", "--budget", "10", "--half-width", "0.05", "--grades", "3"])
    text = capsys.readouterr().out
    assert rc == 0 and "active_wor" in text and "needs budget" in text and "--method auto would run" in text
    rc = main(["plan", SAMPLE, "--model", "uniform", "--scores-b", "feature:25", "--metric", "dcg@10",
               "--half-width", "0.5", "--methods", "active_wor,prefix", "--grades", "3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["target"] == "difference" and out["budget"] is None and out["auto"] is None
    assert out["budget_needed"][0] > 0 and out["notes"][1]          # prefix takes cascade metrics only
    assert main(["plan", SAMPLE, "--model", "uniform"]) == 2
    assert "needs --budget, --half-width or both" in capsys.readouterr().err


def _help(*command):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    return out.getvalue()


def test_help_texts_are_plain_and_complete():
    """What a new user reads: no reStructuredText markup, every option explained, every metric and method listed."""
    from activerank.design.methods import method_names
    from activerank.metrics.registry import METRICS

    top = _help()
    assert "``" not in top and "activerank demo" in top and "COMMAND --help" in top
    for cmd in ("demo", "estimate", "compare", "plan", "campaign", "experiment"):
        assert f"    {cmd}" in top
    for cmd in ("demo", "estimate", "compare", "plan"):
        text = _help(cmd)
        assert "``" not in text and ":func:" not in text
        parser = {a.dest: a for a in _subparser(cmd)._actions}
        undocumented = [d for d, a in parser.items() if not a.help]
        assert not undocumented, (cmd, undocumented)
    text = " ".join(_help("estimate").split())
    for name in METRICS:
        assert f" {name} (" in text or f" {name}@k (" in text, name
    assert all(name in text for name in method_names())
    assert "--model lightgbm" not in text and "required unless --model uniform" in text
    compare = " ".join(_help("compare").split())
    assert "run:PATH[#TAG]" in compare and "the estimate is a - b" in compare


def _subparser(name):
    from activerank.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[name]


def test_letor_commands_show_their_steps_on_a_terminal(capsys, monkeypatch):
    import activerank._progress as progress

    monkeypatch.setattr(progress, "progress_shown", lambda enabled: True)  # as if stderr were a terminal
    monkeypatch.setattr(progress, "DELAY", 0.0)
    assert main(["estimate", SAMPLE, "--model", "uniform", "--budget", "5"]) == 0
    out, err = capsys.readouterr()
    assert "activerank estimate:" in err and "/4 [" in err and "step/s" in err  # four steps (later ones may
    # be too quick to be drawn)
    assert out.startswith("err(ymax=scale)@10 estimate: ")  # the bar stays on stderr
