"""Inputs are never outputs: every path ``estimate``/``compare`` read is refused as ``--trace``, --force or not."""

import os
import shutil
from importlib import resources

import pytest

from activerank.cli import main

SAMPLE = resources.files("activerank.datasets").joinpath("mq2008_sample.txt")
TRAIN = resources.files("activerank.datasets").joinpath("mq2008_sample_train.txt")


@pytest.fixture
def files(tmp_path):
    """Copies of the inputs (a pool, training queries, a scores file, a TREC run) in a scratch folder."""
    import numpy as np

    import activerank as ar

    pool = tmp_path / "pool.txt"
    shutil.copyfile(SAMPLE, pool)
    shutil.copyfile(TRAIN, tmp_path / "train.txt")
    data = ar.load_letor(pool)
    np.savetxt(tmp_path / "scores.txt", data.X[:, 24])
    qids = np.repeat(data.query_ids, np.diff(data.offsets))
    with open(tmp_path / "bm25.run", "w") as f:
        for i, (q, d) in enumerate(zip(qids, data.doc_ids)):
            f.write(f"{q} Q0 {d} {i + 1} {data.X[i, 24]:.6f} bm25\n")
    return tmp_path


# (command, the option that reads the input, its value given the input path, how the message names it)
READERS = [
    ("estimate", None, "{}", "the pool"),
    ("estimate", "--train", "{}", "the --train file"),
    ("estimate", "--scores", "file:{}", "the --scores file"),
    ("estimate", "--scores", "run:{}", "the --scores file"),
    ("estimate", "--scores", "run:{}#bm25", "the --scores file"),
    ("compare", None, "{}", "the pool"),
    ("compare", "--train", "{}", "the --train file"),
    ("compare", "--scores-a", "file:{}", "the --scores-a file"),
    ("compare", "--scores-a", "run:{}#bm25", "the --scores-a file"),
    ("compare", "--scores-b", "file:{}", "the --scores-b file"),
    ("compare", "--scores-b", "run:{}", "the --scores-b file"),
]
INPUT_FILE = {None: "pool.txt", "--train": "train.txt"}


def _argv(command, option, value, files, trace):
    argv = [command, str(files / "pool.txt"), "--train", str(files / "train.txt"), "--model", "logistic",
            "--budget", "8", "--trace", str(trace)]
    if command == "compare":
        argv += ["--scores-a", "model", "--scores-b", "feature:25"]
    if option is not None:
        if option in argv:  # replace the default value of the option
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    return argv


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("command, option, spec, what", READERS)
def test_no_input_is_a_trace_output(files, capsys, command, option, spec, what, force):
    name = INPUT_FILE.get(option) or ("scores.txt" if spec.startswith("file:") else "bm25.run")
    target = files / name
    before = target.read_bytes()
    argv = _argv(command, option, spec.format(target), files, target)
    if option is None:
        argv[1] = str(target)
    assert main(argv + (["--force"] if force else [])) == 2
    err = capsys.readouterr().err
    assert f"error: --trace {target} is {what} {target}; writing it would destroy an input" in err
    assert "not even with --force" in err
    assert target.read_bytes() == before


@pytest.mark.parametrize("link", ["symlink", "hardlink", "relative"])
def test_an_input_reached_another_way_is_refused(files, capsys, monkeypatch, link):
    pool = files / "pool.txt"
    if link == "symlink":
        trace = files / "link.csv"
        trace.symlink_to(pool)
    elif link == "hardlink":
        trace = files / "hard.csv"
        os.link(pool, trace)
    else:
        monkeypatch.chdir(files)
        trace = "./sub/../pool.txt"
        (files / "sub").mkdir()
    before = pool.read_bytes()
    argv = ["estimate", str(pool), "--model", "uniform", "--budget", "5", "--trace", str(trace), "--force"]
    assert main(argv) == 2
    assert f"--trace {trace} is the pool {pool}; writing it would destroy an input" in capsys.readouterr().err
    assert pool.read_bytes() == before


def test_a_trace_next_to_the_inputs_is_written(files, capsys):
    trace = files / "trace.csv"
    assert main(_argv("compare", "--scores-b", f"run:{files / 'bm25.run'}", files, trace)) == 0
    assert trace.read_text().startswith(("draw,", "query,"))  # query-level designs trace draws, prefix documents
    capsys.readouterr()


# the pandas 3.1 deprecation that dask's Parquet reader triggers is not ours
@pytest.mark.filterwarnings("ignore:The inplace keyword")
@pytest.mark.parametrize("as_folder", [True, False])
@pytest.mark.parametrize("force", [False, True])
def test_parquet_pool_is_never_an_output(tmp_path, capsys, as_folder, force):
    pytest.importorskip("dask.dataframe")
    from .distributed._pools import synthetic_frame

    df, _ = synthetic_frame(seed=2, n_queries=30)
    folder = tmp_path / "pool"
    folder.mkdir()
    df.to_parquet(folder / "part.0.parquet", index=False)
    pool = folder if as_folder else folder / "part.0.parquet"
    trace = folder / "trace.csv" if as_folder else pool
    argv = ["estimate", str(pool), "--probs-columns", "p0,p1,p2", "--scores", "column:score_a", "--budget", "5",
            "--trace", str(trace)] + (["--force"] if force else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    if as_folder:
        assert f"--trace {trace} is inside the pool {pool}, a folder read as input" in err
        assert not trace.exists()
    else:
        assert f"--trace {trace} is the pool {pool}; writing it would destroy an input" in err
    assert sorted(p.name for p in folder.iterdir()) == ["part.0.parquet"]
