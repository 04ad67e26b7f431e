"""The example notebook runs top to bottom in a real Jupyter kernel and shows pictures.

The kernel is this interpreter (a kernel spec written to a temporary ``JUPYTER_PATH``), so the
test needs no kernel installed by hand and never picks up another Python's ``python3`` kernel.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "examples" / "tour.ipynb"
KERNEL = "ceql-test-python"


def _kernel_spec(tmp: Path) -> Path:
    spec = tmp / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "ceql test (this Python)",
        "language": "python",
    }))
    return tmp


def _outputs(nb: Any, marker: str) -> list[dict[str, Any]]:
    """The outputs of the one code cell whose source starts with ``marker``."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(marker)]
    return list(cell.outputs)


def _data(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for o in outputs:
        out.update(o.get("data", {}))
    return out


@pytest.mark.e2e
def test_tour_notebook_runs_and_shows_html_and_pictures(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(_kernel_spec(tmp_path / "jupyter")))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # the kernel's inline backend makes the image outputs
    nb = nbformat.read(TOUR, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=120,
                            resources={"metadata": {"path": str(TOUR.parent)}})
    client.execute(env=env)

    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    query = _data(_outputs(nb, "q = ceql.compile("))
    assert "ceql-query" in query["text/html"] and "<svg" in query["text/html"]
    assert "PARTITION BY [user]" in query["text/html"]
    table = _data(_outputs(nb, "matches = ceql.Matches("))["text/html"]
    assert "ceql-matches" in table and "<table" in table and "<th>l</th>" in table
    one = _data(_outputs(nb, "matches[0]"))["text/html"]
    assert "ceql-match" in one
    explained = _data(_outputs(nb, "ceql.explain(q.text)"))
    assert "<svg" in explained["image/svg+xml"] and "<svg" in explained["text/html"]
    assert explained["text/plain"].startswith("SELECT ANY * FROM clicks")
    printed = _outputs(nb, "print(ceql.explain(q.text))")
    assert any(o.output_type == "stream" and "automaton:" in o.text for o in printed)
    plot = _data(_outputs(nb, "ceql.plot.timeline("))
    assert plot.get("image/png") or plot.get("image/svg+xml")


@pytest.mark.parametrize("notebook", sorted((ROOT / "examples").glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_notebooks_are_stored_without_outputs(notebook: Path) -> None:
    """Outputs are made by running them (as their tests do), never committed."""
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    assert all(c.outputs == [] and c.execution_count is None for c in code)
