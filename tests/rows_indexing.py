"""Gradient-table rows for the index helpers and conversions (fgrad/numpy/indexing.py): the
conversions are identities on traced values, checked to order 2; the index helpers and NumPy's
in-place `putmask` and `copyto` (on NumPy arrays) are declared without a derivative. See
tests/gradtable.py."""

import numpy as np
from gradtable import Nondiff, Row, unary_rows

import fgrad.numpy as fnp

DASK_CANNOT = {
    "asarray_chkfinite": "it checks every value for infs and NaNs, which computes the array",
}

ROWS = [
    *unary_rows("asanyarray", fnp.asanyarray),
    *unary_rows("ascontiguousarray", fnp.ascontiguousarray),
    *unary_rows("asfortranarray", fnp.asfortranarray),
    *unary_rows("asarray_chkfinite", fnp.asarray_chkfinite),
    # an array of floats is reshaped, as NumPy's ix_ does, and keeps its derivative
    Row("ix_", lambda x, y: fnp.ix_(x, y)[0] * fnp.ix_(x, y)[1], ((3,), (2,)), variant="floats"),
]


def _putmask():
    """putmask on a NumPy array (a traced one is refused: tests/test_constant_names.py)."""
    a = np.arange(5.0)
    fnp.putmask(a, a > 1, np.array([-1.0, -2.0]))
    return a


def _copyto():
    dst = np.zeros(4)
    fnp.copyto(dst, np.arange(4.0), where=np.array([True, False, True, False]))
    return dst


NONDIFF = [
    Nondiff("ix_", lambda x: sum(fnp.ix_(fnp.argsort(x), [0, 1]))),
    Nondiff("ix_", lambda x: sum(fnp.ix_(fnp.real(x) > 0, [1]))),
    Nondiff("unravel_index", lambda x: sum(fnp.unravel_index(fnp.argsort(x), (2, 2)))),
    Nondiff(
        "ravel_multi_index",
        lambda x: fnp.ravel_multi_index((fnp.argsort(x), fnp.argsort(-fnp.real(x))), (3, 3)),
    ),
    Nondiff("diag_indices_from", lambda x: sum(fnp.diag_indices_from(fnp.outer(x, x)))),
    Nondiff("tril_indices_from", lambda x: sum(fnp.tril_indices_from(fnp.outer(x, x), k=-1))),
    Nondiff("triu_indices_from", lambda x: sum(fnp.triu_indices_from(fnp.outer(x, x)))),
    Nondiff("putmask", lambda x: _putmask()),
    Nondiff("copyto", lambda x: _copyto()),
]
