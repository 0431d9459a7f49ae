"""Declarations for the functions of data types (fgrad/numpy/datatypes.py): none has a
derivative. `result_type`, `can_cast` and `common_type` take the traced input by its dtype;
the others are NumPy's own, applied to the input's dtype or shape. Each entry returns a number
or a boolean, as the table's checks need. See tests/gradtable.py."""

import numpy as np
from gradtable import Nondiff

import fgrad.numpy as fnp

ROWS = []  # nothing here has a derivative

NONDIFF = [
    Nondiff("result_type", lambda x: fnp.result_type(x, 1.0, np.int8) == np.float64),
    Nondiff("can_cast", lambda x: fnp.can_cast(x, np.float32)),
    Nondiff("can_cast", lambda x: fnp.can_cast(x, np.complex64, casting="same_kind")),
    Nondiff("common_type", lambda x: fnp.common_type(x, np.arange(2)) == np.float64),
    Nondiff("min_scalar_type", lambda x: fnp.min_scalar_type(x).itemsize),
    Nondiff("issubdtype", lambda x: fnp.issubdtype(x.dtype, np.floating)),
    Nondiff("isdtype", lambda x: fnp.isdtype(x.dtype, "real floating")),
    Nondiff("promote_types", lambda x: fnp.promote_types(x.dtype, np.float32) == np.float64),
    Nondiff("mintypecode", lambda x: fnp.mintypecode(x.dtype.char) == "d"),
    Nondiff("typename", lambda x: fnp.typename(x.dtype.char) == "double precision"),
    Nondiff("broadcast_shapes", lambda x: fnp.broadcast_shapes(x.shape, (2, 1))),
    Nondiff("iterable", lambda x: fnp.iterable(x)),
]
