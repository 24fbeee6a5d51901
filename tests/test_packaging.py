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
    assert out.returncode == 2 and "required: command" in out.stderr


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
