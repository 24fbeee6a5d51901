"""The paper-reproduction notebook: committed executed (small, no machine paths) and re-executed in CI.

Regenerate the committed outputs (reduced size, from the repository root, with the data available):
``python tests/test_notebook.py --write``.
"""

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks" / "paper_reproduction.ipynb"
MAX_BYTES = 400_000
# absolute paths of this or any machine must not leak into committed outputs
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users|var|private|opt)/")


def data_root() -> Path:
    return Path(os.environ.get("ACTIVERANK_DATA") or ROOT.parent / "shared" / "data")


def execute(nb):
    """Run ``nb`` in place at reduced size (ACTIVERANK_NB_SMALL=1) with the notebook folder as cwd."""
    import nbclient

    os.environ["ACTIVERANK_NB_SMALL"] = "1"
    os.environ["ACTIVERANK_DATA"] = str(data_root())
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    os.environ.setdefault("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB.parent)}})
    client.execute()
    return nb


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


@pytest.mark.skipif(not (data_root() / "mq2008" / "S1.txt").exists(), reason="MQ2008 partitions not available")
def test_notebook_executes_small(monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    for var in ("ACTIVERANK_NB_SMALL", "ACTIVERANK_DATA", "PYTHONPATH", "MPLBACKEND"):
        monkeypatch.setenv(var, os.environ.get(var, ""))  # restored after the test
    nb = execute(nbformat.read(NB, as_version=4))
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    text = "".join(str(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    assert "simulated savings" in text


def test_committed_notebook_is_executed_and_small():
    """Outputs are visible on GitHub without running anything, and the file stays small."""
    assert NB.stat().st_size < MAX_BYTES, f"{NB.name} is {NB.stat().st_size} bytes"
    nb = json.loads(NB.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), "every code cell executed"
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3  # error curves (2 metrics) + costs
    text = json.dumps(outputs)
    assert "simulated savings" in text
    assert not MACHINE_PATH.search(text), MACHINE_PATH.search(text)


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    if "--write" not in sys.argv:
        sys.exit(__doc__)
    import nbformat

    nb = execute(nbformat.read(NB, as_version=4))
    for cell in nb.cells:  # volatile metadata only
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(nb, NB)
    print(f"wrote {NB} ({NB.stat().st_size} bytes)")
