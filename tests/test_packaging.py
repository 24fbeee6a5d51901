"""Packaging: `python -m activerank`, `--version`, py.typed, optional and lazily imported dependencies."""

import importlib.metadata
import subprocess
import sys
from importlib import resources

import activerank


def _run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def test_python_m_activerank_version():
    out = _run("-m", "activerank", "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"activerank {activerank.__version__}"
    # the installed distribution carries the same version (pyproject reads it from the package)
    assert importlib.metadata.version("activerank") == activerank.__version__


def test_python_m_activerank_runs_the_cli():
    out = _run("-m", "activerank", "estimate", "--help")
    assert out.returncode == 0 and "--budget" in out.stdout
    out = _run("-m", "activerank")
    assert out.returncode == 2 and "required: COMMAND" in out.stderr


def test_py_typed_shipped():
    assert resources.files("activerank").joinpath("py.typed").is_file()


def test_heavy_optional_dependencies_load_lazily():
    """Importing the package, the relevance models and the plotting module loads none of
    matplotlib (optional), lightgbm, mord or scikit-learn (loaded when a model is fitted)."""
    code = ("import sys, activerank, activerank.relevance, activerank.experiments.plots; "
            "import activerank.relevance.models as m; m.UniformRelevanceModel(3).predict_proba([[0.0]]); "
            "print(sorted({k.split('.')[0] for k in sys.modules} & "
            "{'matplotlib', 'lightgbm', 'mord', 'sklearn'}))")
    out = _run("-c", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_floor_constraints_match_pyproject():
    """.ci/constraints-floors.txt pins every dependency of pyproject.toml (core and extras) to its `>=` bound."""
    import re
    from pathlib import Path

    import pytest

    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    declared = {}
    # the `peers` extra is benchmark-only (benchmarks/peers) and not part of the floors job
    extras = {k: v for k, v in project["optional-dependencies"].items() if k != "peers"}
    for req in project["dependencies"] + [r for extra in extras.values() for r in extra]:
        own = re.fullmatch(r"activerank\[([a-z,]+)\]", req)
        if own:  # an extra made of other extras (`dev`, the `experiments` alias): their bounds count
            assert set(own[1].split(",")) <= extras.keys(), f"{req!r} names an unknown extra"
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[A-Za-z0-9_,.-]+\])?>=([0-9.]+)", req)
        assert m, f"{req!r}: every dependency needs a plain `name>=floor` bound"
        declared[m[1].lower().replace("_", "-")] = m[2]
    pinned = {}
    for line in (root / ".ci" / "constraints-floors.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pinned[name.lower().replace("_", "-")] = version
    floors = {name: tuple(int(x) for x in v.split(".")) for name, v in declared.items()}
    pins = {name: tuple(int(x) for x in v.split(".")) for name, v in pinned.items()}
    assert pins.keys() == floors.keys()
    for name in floors:  # 1.24 == 1.24.0
        width = max(len(floors[name]), len(pins[name]))
        assert floors[name] + (0,) * (width - len(floors[name])) == pins[name] + (0,) * (width - len(pins[name])), name
