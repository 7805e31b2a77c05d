"""A real notebook run by a real Jupyter kernel (nbclient + ipykernel): the README quickstart and
a LangGraph graph with RememStore and RememSaver, cell by cell. Kernel cells run on the
kernel's event loop, where remem's sync calls must work as they do in a script.

The kernel is this interpreter (the venv's python), found through a kernelspec written to a
temporary directory on ``JUPYTER_PATH``; every Jupyter and IPython directory points into the
test's temporary directory, so nothing is read from or written to the user's home."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("langgraph.graph")

NOTEBOOK = Path(__file__).with_name("quickstart.ipynb")
KERNEL = "remem-test-venv"

#: what each code cell prints, in order (the cells assert the rest themselves)
PRINTED = [
    "event loop running",
    "LocalEmbedder",
    "2",
    "I drink green tea every morning | 我住在柏林",
    "I drink green tea every morning",
    "{'text': 'likes tea'} [('users', 'u1', 'memories')]",
    "['I like tea', 'I know 1 things']",
    "['I like tea', 'I know 1 things', 'I live in Lyon', 'I know 2 things'] 8",
    "['which?', 'm3']",
]


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec running this interpreter, in a directory of the test's own."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher",
                 "-f", "{connection_file}"],
        "display_name": "remem test venv", "language": "python"}))
    for name, where in (("JUPYTER_PATH", "jupyter"), ("JUPYTER_DATA_DIR", "jupyter-data"),
                        ("JUPYTER_CONFIG_DIR", "jupyter-config"),
                        ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"), ("IPYTHONDIR", "ipython")):
        monkeypatch.setenv(name, str(tmp_path / where))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's own paths, no warning
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's startup notice
    return KERNEL


def _printed(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stdout").strip()


def test_the_quickstart_notebook_runs_in_a_real_kernel(kernel: str, tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, kernel_name=kernel, timeout=300,
                                     startup_timeout=120,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # a failing cell raises CellExecutionError naming the cell and its error
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [_printed(cell) for cell in code] == PRINTED
    assert all(o.output_type != "error" for cell in code for o in cell.outputs)
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
