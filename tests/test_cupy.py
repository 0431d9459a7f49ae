"""CuPy arrays (on a GPU) through the transforms, by the same protocols as Dask's: the core rows
of the gradient table run with CuPy inputs and equal the NumPy results. Skipped, with the
reason, where CuPy or a CUDA device is missing (this project's CI has no GPU)."""

import importlib.util

import numpy as np
import pytest
from gradtable import load

import fgrad
from fgrad.tree_util import tree_leaves, tree_map


def _cupy_or_reason():
    if importlib.util.find_spec("cupy") is None:
        return None, "CuPy is not installed (it needs a CUDA device; pip install cupy-cuda12x)"
    import cupy

    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy is installed but no CUDA device is present"
    except Exception as e:  # no driver: CUDARuntimeError
        return None, f"CuPy is installed but CUDA is not usable here: {e}"
    return cupy, None


cp, REASON = _cupy_or_reason()
if cp is None:
    pytest.skip(f"no GPU for CuPy: {REASON}", allow_module_level=True)

ROWS, _ = load(["core"])


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_core_row_on_cupy_equals_numpy(row):
    args = row.args()
    out, pull = fgrad.vjp(row.fn, *args)
    ct = tree_map(np.ones_like, out)
    want = (out, pull(ct), fgrad.jvp(row.fn, args, tuple(np.ones_like(a) for a in args))[1])

    g_args = tuple(cp.asarray(a) for a in args)
    g_out, g_pull = fgrad.vjp(row.fn, *g_args)
    g_ct = tree_map(cp.asarray, ct)
    g_tangents = tuple(cp.ones_like(a) for a in g_args)
    got = (g_out, g_pull(g_ct), fgrad.jvp(row.fn, g_args, g_tangents)[1])
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        assert not isinstance(g, np.ndarray) or np.ndim(w) == 0, f"{row.id}: a NumPy result"
        np.testing.assert_allclose(cp.asnumpy(g), w, rtol=1e-10, atol=1e-12)
