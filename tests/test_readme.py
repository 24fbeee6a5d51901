"""Every ```python block and every shell command of README.md runs as written.

CI (``.ci/run``) runs this on a fresh install.  Python blocks run one by one in a fresh interpreter in a
temporary directory; shell blocks run command by command (``&&`` chains split, ``\\`` continuations
joined) in one temporary directory per block, so a block's later commands see the files its earlier
commands wrote.  The README's command-line examples use the sample files shipped in
``activerank/datasets/`` by their path relative to the repository root; the temporary directory links
``activerank/datasets`` to the installed package's copy, so the commands run verbatim without writing into
the checkout.  A README example must not print a warning of activerank's own.

Commands skipped, each with the reason (the test fails if an entry no longer occurs in the README, so the
list cannot go stale):
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import activerank

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TIMEOUT = 600

SKIP = {
    "python3 -m venv .venv":
        "creates the virtual environment this test already runs in (.ci/run creates it from scratch)",
    ".venv/bin/pip install -q .":
        "installs the package for use; the developer install below replaces it",
    '.venv/bin/pip install -q -e ".[dev]"':
        "installs the package, which .ci/run does right before running the tests",
    ".venv/bin/python -m pytest -n 2 --dist worksteal":
        "runs the fast test tier, of which this test is part",
    "python -m activerank.experiments --out benchmarks/results --investigate":
        "the full paper reproduction, ~20 min on 2 cores; its pipeline runs at small size in "
        "tests/experiments/test_harness.py and tests/test_notebook.py",
    "python -m activerank.experiments --datasets mq2008,ohsumed --metrics err@10,dcg@10 "
    "--methods passive,active,model_assisted,model_assisted_variance,model_assisted_fixed "
    "--out benchmarks/results/model_assisted --no-figures":
        "the model-assisted benchmark run, ~8 min on 2 cores; same harness as above",
}
__doc__ += "\n".join(f"\n- ``{cmd}``: {why}" for cmd, why in SKIP.items())

# the human step of the campaign example: annotators grade the exported tasks
ANNOTATORS = "# annotators fill in"


def _blocks(lang):
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def _commands(block):
    """Logical lines of a shell block: continuations joined, comments kept as their own items."""
    out, current = [], ""
    for line in block.splitlines():
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
            continue
        line = current + line.strip()
        current = ""
        if line.startswith("#"):
            out.append(line)
            continue
        line = re.sub(r"\s+#.*$", "", line).strip()  # trailing comment
        out.extend(part.strip() for part in line.split(" && ") if part.strip())
    return out


def _env(bindir):
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PATH"] = os.pathsep.join([str(bindir), env.get("PATH", "")])
    return env


@pytest.fixture
def workdir(tmp_path):
    """A scratch directory where ``activerank/datasets/...`` resolves to the installed sample files."""
    datasets = Path(activerank.__file__).resolve().parent / "datasets"
    (tmp_path / "activerank").mkdir()
    (tmp_path / "activerank" / "datasets").symlink_to(datasets, target_is_directory=True)
    return tmp_path


# "path:line: SomeWarning: message" as printed by the warnings module
WARNING_LINE = re.compile(r"^(?P<file>.+?):\d+: (?P<category>\w*Warning): ", flags=re.M)


def _own_warnings(stderr):
    """Warnings of activerank (its warning class, or issued from its code or from the README's own code).

    Third-party deprecation warnings (e.g. an old matplotlib under a new pyparsing in the floors
    environment) are not the README's doing and are not counted."""
    package = str(Path(activerank.__file__).resolve().parent)
    return [m[0] for m in WARNING_LINE.finditer(stderr)
            if m["category"] == "LowEffectiveSampleSizeWarning" or m["file"] == "<string>"
            or str(Path(m["file"]).resolve()).startswith(package)]


def _check(proc, what):
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert not _own_warnings(proc.stderr), f"{what} printed a warning:\n{proc.stderr}"


def test_own_warnings_filter():
    package = Path(activerank.__file__).resolve().parent
    stderr = (f"{package}/api.py:503: LowEffectiveSampleSizeWarning: effective sample size 9.9\n"
              "/x/site-packages/matplotlib/_fontconfig_pattern.py:88: PyparsingDeprecationWarning: 'parseString'\n"
              "<string>:3: UserWarning: from the README code\n")
    assert len(_own_warnings(stderr)) == 2 and "matplotlib" not in "".join(_own_warnings(stderr))


def _answer_tasks(workdir):
    """Stand-in for the annotators: grade tasks.jsonl from the sample's own labels into judged.jsonl."""
    from activerank import KnownLabels, load_sample

    labeler = KnownLabels.from_data(load_sample("test"))
    rows = [json.loads(line) for line in (workdir / "tasks.jsonl").read_text().splitlines()]
    assert rows, "the export wrote no tasks"
    with open(workdir / "judged.jsonl", "w") as f:
        for r in rows:
            r["grade"] = int(labeler(int(r["query_id"]), [r["doc_id"]])[0])
            r["annotator"] = "readme-test"
            f.write(json.dumps(r) + "\n")


def test_readme_has_examples():
    assert len(_blocks("python")) >= 1 and len(_blocks("bash")) >= 4


def test_skip_list_is_current():
    commands = {c for block in _blocks("bash") for c in _commands(block)}
    stale = [cmd for cmd in SKIP if cmd not in commands]
    assert not stale, f"skipped commands no longer in README.md: {stale}"


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_python_block_runs(index, tmp_path):
    code = _blocks("python")[index]
    # a plain scratch directory: an `activerank/` folder in the working directory would shadow the package
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(Path(sys.executable).parent),
                          capture_output=True, text=True, timeout=TIMEOUT)
    _check(proc, f"README python block {index}")


@pytest.mark.parametrize("index", range(len(_blocks("bash"))))
def test_shell_block_runs(index, workdir):
    bindir = Path(sys.executable).parent
    ran = 0
    for cmd in _commands(_blocks("bash")[index]):
        if cmd.startswith(ANNOTATORS):
            _answer_tasks(workdir)
            continue
        if cmd.startswith("#") or cmd in SKIP:
            continue
        # `.venv/bin/X` in the README is the environment this test runs in
        run = cmd.replace(".venv/bin/", f"{bindir}/")
        proc = subprocess.run(run, shell=True, executable="/bin/bash", cwd=workdir, env=_env(bindir),
                              capture_output=True, text=True, timeout=TIMEOUT)
        _check(proc, f"README command {cmd!r}")
        ran += 1
    if ran == 0:
        pytest.skip("every command of this block is on the skip list: " + "; ".join(
            SKIP[c] for c in _commands(_blocks("bash")[index]) if c in SKIP))


def test_results_tables_match_the_csvs():
    """Each cell of the per-scenario result tables is the number its CSV holds (one source per row:
    @10 rows from benchmarks/results/model_assisted/savings.csv, full-list rows from
    benchmarks/results/savings.csv), so the README cannot drift from the results or disagree with itself."""
    pd = pytest.importorskip("pandas")
    sources = {"@10": pd.read_csv(ROOT / "benchmarks/results/model_assisted/savings.csv"),
               "full": pd.read_csv(ROOT / "benchmarks/results/savings.csv")}
    names = {"RF-regression ranker": "a_rf", "ordered-logit ranker": "a_ologit",
             "RF regression vs RF classification": "b_rfreg_rfcls",
             "ordered logit vs linear RankSVM": "b_ologit_linear", "ordered logit vs RF regression": "b_ologit_rf",
             "index update": "c_index", "more training data": "d_moredata"}
    methods = ["active", "model_assisted", "model_assisted_variance", "model_assisted_fixed"]

    def fmt(r, tag):
        s = {1: "≤ ", -1: "≥ "}.get(int(r[f"{tag}_censored"]), "") + f"{100 * r[f'{tag}_savings']:.0f}%"
        return (s + f" [{100 * r[f'{tag}_low']:.0f}, {100 * r[f'{tag}_high']:.0f}]").replace("-", "−")

    rows = re.findall(r"^\| (MQ2008|OHSUMED) \| ([^|]+) \| (ERR@10|DCG@10|ERR|DCG) \| (.+) \|$",
                      README.read_text(encoding="utf-8"), flags=re.M)
    assert len(rows) == 2 * len(names) * 4  # every dataset x scenario instance x metric, once
    assert len({r[:3] for r in rows}) == len(rows)
    for dataset, ranker, metric, cells in rows:
        inst = names[ranker.strip()]
        df = sources["@10" if "@" in metric else "full"]
        tag = "sel" if inst.startswith("b") else "abs"
        got = [c.strip() for c in cells.split("|")]
        sel = df[(df.dataset == dataset.lower()) & (df.instance == inst) & (df.metric == metric.lower())]
        want = [fmt(sel[sel.method == m].iloc[0], tag) if (sel.method == m).any() else "—" for m in methods]
        assert got == want, (dataset, ranker, metric)
