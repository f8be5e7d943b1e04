"""examples/quickstart.ipynb runs from top to bottom and finds what it says it finds."""

from pathlib import Path

import nbclient  # the 'test' extra: nbclient, nbformat, ipykernel (the notebook's kernel)
import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"


def _text(cell):
    return "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for o in cell.get("outputs", [])
    )


@pytest.mark.slow
@pytest.mark.cluster
def test_quickstart_notebook_runs(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    outputs = "\n".join(_text(c) for c in nb.cells if c.cell_type == "code")
    assert "2" in _text(nb.cells[3])  # two workers
    for method in ("I-RELIEF", "IMMIGRATE"):
        assert f"{method} top 3: ['signal_a', 'signal_b', 'signal_c']" in outputs
    figures = [
        o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert len(figures) == 1
