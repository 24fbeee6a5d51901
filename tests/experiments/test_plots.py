"""activerank.experiments.plots: matplotlib is optional and imported only when drawing."""

import sys

import pytest

from activerank.experiments import plots


def test_missing_matplotlib_names_the_extra(monkeypatch):
    # a None entry in sys.modules makes `import matplotlib.pyplot` raise ImportError
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'activerank\[plots\]'"):
        plots.cost_histogram({("mq2008", "err@10"): [1.0, 1.0]}, "mq2008")


def test_cost_histogram_draws(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "costs.png"
    fig = plots.cost_histogram({("mq2008", "err@10"): [0.5, 1.0, 1.5]}, "mq2008", path)
    assert path.stat().st_size > 1000 and len(fig.axes) == 1
