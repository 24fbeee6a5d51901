"""The paper-reproduction notebook executes end to end at reduced size."""

import os
from pathlib import Path

import pytest

from .conftest import shared_data

NB = Path(__file__).resolve().parents[1] / "notebooks" / "paper_reproduction.ipynb"


@pytest.mark.skipif(shared_data("mq2008", "S1.txt") is None, reason="MQ2008 partitions not available")
def test_notebook_executes_small(monkeypatch):
    monkeypatch.setenv("ACTIVERANK_DATA", str(shared_data("mq2008", "S1.txt").parents[1]))
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("ACTIVERANK_NB_SMALL", "1")
    root = str(NB.parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    nb = nbformat.read(NB, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    text = "".join(str(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    assert "simulated savings" in text
