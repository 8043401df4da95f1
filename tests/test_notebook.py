"""examples/notebook.ipynb runs top to bottom in a real Jupyter kernel, with
the inline backend: figures come out as images, the sweep runs in parallel
from a notebook cell, and no cell raises."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import nbformat
from conftest import EXAMPLES
from nbclient import NotebookClient


def test_example_notebook_runs_top_to_bottom(tmp_path: Path) -> None:
    nb = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    # Run in a scratch directory holding the scenario it loads, so the
    # sweep's cache (.aqmlab-cache/) lands there, not in the source tree.
    shutil.copy(EXAMPLES / "dumbbell.toml", tmp_path)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    # goodput, sojourn CDF and the comparison bar chart, each shown inline.
    assert len(pngs) >= 3 and all(base64.b64decode(p).startswith(b"\x89PNG") for p in pngs)
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("aqmlab.SweepResult" in h and "8 runs" in h for h in html)
    # The run's rich view: its tables and its key plot, inline.
    assert any("aqmlab.Result" in h and "<table" in h and "data:image/png;base64" in h for h in html)
