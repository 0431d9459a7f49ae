"""Every notebook in notebooks/ runs top to bottom; its cells assert their key numbers.

A notebook is read into memory and executed there (the file is never rewritten), cell by cell,
by a fresh python3 kernel whose working directory is the notebooks folder. A cell that raises
fails the test with the cell's source and the error.

`python tests/test_notebooks.py` executes the notebooks the same way and saves them with their
outputs, for reading on GitHub (`python tests/test_notebooks.py 02 07` saves those whose names
start so). It records no execution times, keeps the notebook metadata as it was and joins the
pieces a busy kernel sends one print in, so saving again changes only outputs that changed.
The suite sets
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


_OVERWRITTEN = re.compile(r".*\r(?=[^\n])")  # a line's text before a carriage return


def merge_streams(nb):
    """Join each run of outputs of one stream into one output, as Jupyter shows them (nbconvert's
    coalesce_streams). A loaded kernel sends a print in pieces ("untagged dual numbers:",
    " 2.0"), and a saved piece is a block of its own where the notebook is shown (on the site,
    a line each); a progress bar's updates are dropped for its last, as a terminal shows it."""
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if last and out.output_type == last.output_type == "stream" and out.name == last.name:
                last.text += out.text
            else:
                merged.append(out)
        for out in merged:
            if out.output_type == "stream":
                out.text = _OVERWRITTEN.sub("", out.text)
        if "outputs" in cell:
            cell.outputs = merged


def test_saving_joins_the_pieces_of_a_print():
    """A loaded kernel sent `print("untagged dual numbers:", wrong)` in two pieces, saved as two
    outputs: the site showed "2.0" on a line of its own."""
    out = nbformat.v4.new_output
    cell = nbformat.v4.new_code_cell(
        outputs=[
            out("stream", name="stdout", text="untagged dual numbers:"),
            out("stream", name="stdout", text=" 2.0\n"),
            out("stream", name="stderr", text="a warning\n"),
            out(
                "stream", name="stdout", text="\rloss:   0%|\rloss: 100%| 30/30\nafter 30 epochs\n"
            ),
            out("execute_result", data={"text/plain": "3"}, execution_count=1),
        ]
    )
    nb = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("text")])
    merge_streams(nb)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in nb.cells[0].outputs] == [
        ("stream", "stdout", "untagged dual numbers: 2.0\n"),
        ("stream", "stderr", "a warning\n"),
        ("stream", "stdout", "loss: 100%| 30/30\nafter 30 epochs\n"),  # as a terminal shows it
        ("execute_result", None, None),
    ]
    nbformat.validate(nb)


if __name__ == "__main__":
    import sys

    wanted = sys.argv[1:]
    for path in NOTEBOOKS:
        if wanted and not path.name.startswith(tuple(wanted)):
            continue
        nb = nbformat.read(path, as_version=4)
        metadata = copy.deepcopy(nb.metadata)
        execute(nb)
        nb.metadata = metadata  # not the kernel's language_info, which names its Python version
        merge_streams(nb)
        nbformat.write(nb, path)
        print(f"saved {path.relative_to(NOTEBOOK_DIR.parent)} with its outputs")
