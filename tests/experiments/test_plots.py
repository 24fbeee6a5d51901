"""Figures of the experiment harness: aggregation arithmetic and files written."""

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from activerank.experiments import plots  # noqa: E402


def _curves():
    rows = []
    for fold in (1, 2):
        for method in ("passive", "active"):
            for budget in (5.0, 10.0):
                rows.append(dict(dataset="d", scenario="a", instance="a_rf", metric="err@10", method=method,
                                 budget=budget, fold=fold, mean_abs_error=0.1 * fold / budget,
                                 se_abs_error=0.01 * fold, selection_error=0.0, se_selection_error=0.0,
                                 coverage95=0.9 + 0.02 * fold, mean_queries=budget))
    return pd.DataFrame(rows)


def test_aggregate_curves_averages_folds_and_combines_standard_errors():
    agg = plots.aggregate_curves(_curves())
    row = agg[(agg.method == "active") & (agg.budget == 5.0)].iloc[0]
    assert row.abs_error == pytest.approx((0.1 / 5 + 0.2 / 5) / 2)
    assert row.se_abs == pytest.approx(np.sqrt(0.01**2 + 0.02**2) / 2)
    assert row.coverage95 == pytest.approx(0.93) and row.n_folds == 2


def test_figures_are_written(tmp_path):
    fig = plots.error_curves(_curves(), "d", "err@10", tmp_path / "e.png", title_map={"a_rf": "RF"})
    assert (tmp_path / "e.png").stat().st_size > 1000 and fig.axes[0].get_title() == "RF"
    plots.cost_histogram({("d", "err@10"): np.linspace(0.5, 1.5, 50)}, "d", tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_missing_matplotlib_names_the_extra(monkeypatch):
    import sys

    # a None entry in sys.modules makes `import matplotlib.pyplot` raise ImportError
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'activerank\[plots\]'"):
        plots.cost_histogram({("mq2008", "err@10"): [1.0, 1.0]}, "mq2008")
