"""Every notebook in notebooks/ runs top to bottom; its cells assert their key numbers.

A notebook is read into memory and executed there (the file is never rewritten), cell by cell,
by a fresh python3 kernel whose working directory is the notebooks folder. A cell that raises
fails the test with the cell's source and the error.

`python tests/test_notebooks.py` executes the notebooks the same way and saves them with their
outputs, for reading on GitHub. It records no execution times and keeps the notebook metadata
as it was, so saving again changes only outputs that changed. The suite sets
FGRAD_NOTEBOOKS_QUICK=1, which a notebook with a long full run reads to run a small version
(08_out_of_core); saving runs the full version.
"""

import copy
import pathlib
import re

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds, per cell
_ANSI_COLOR = re.compile(r"\x1b\[[0-9;]*m")


def execute(nb):
    """Run every cell of `nb` (a NotebookNode) in place; raise CellExecutionError on an error."""
    # With no kernel directories, "python3" resolves to ipykernel's own kernelspec, which starts
    # this interpreter (the one fgrad is installed in), even if a python3 kernelspec for some
    # other Python (say in ~/.local/share/jupyter) comes first on the Jupyter path.
    km = AsyncKernelManager(
        kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[])
    )
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        record_timing=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute(cleanup_kc=True)  # shut the kernel down: the client does not own km


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


# Notebooks that need an optional package beyond the dev extra's (none today) or a service.
NEEDS = {"08_out_of_core.ipynb": ("dask", "distributed")}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    for module in NEEDS.get(path.name, ()):
        pytest.importorskip(module, reason=f"{path.name} needs {module} (the dask extra)")
    # a notebook with a long full run (08: a data set larger than its cluster's memory) runs a
    # small version in the suite; the saved outputs are the full run's
    monkeypatch.setenv("FGRAD_NOTEBOOKS_QUICK", "1")
    nb = nbformat.read(path, as_version=4)
    error = None
    try:
        execute(nb)
    except CellExecutionError as e:
        error = _ANSI_COLOR.sub("", str(e))
    if error is not None:  # failing outside the except clause keeps the report to this one error
        failed = [
            i
            for i, cell in enumerate(nb.cells)
            if any(out.output_type == "error" for out in cell.get("outputs", []))
        ]
        where = f"cell {failed[0]}" if failed else "a cell"
        pytest.fail(f"{path.name}: {where} raised.\n{error}", pytrace=False)


if __name__ == "__main__":
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        metadata = copy.deepcopy(nb.metadata)
        execute(nb)
        nb.metadata = metadata  # not the kernel's language_info, which names its Python version
        nbformat.write(nb, path)
        print(f"saved {path.relative_to(NOTEBOOK_DIR.parent)} with its outputs")
