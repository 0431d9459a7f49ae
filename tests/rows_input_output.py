"""Declarations for input and output (fgrad/numpy/input_output.py): none has a derivative.
What reads from outside (a file, a buffer, an iterable) and the print options are NumPy's
own; `save` and `savez` write plain arrays (a traced one is refused: tests/test_numpy.py), so
their entries write a constant and read it back; `array_str` and `array_repr` take the traced
input and give its value's text, whose length each entry returns. See tests/gradtable.py."""

import io
import os
import tempfile

import numpy as np
from gradtable import Nondiff

import fgrad.numpy as fnp

ROWS = []  # nothing here has a derivative

_DATA = np.array([0.5, 1.5, 2.5])


def _npy(array):
    """`array` as the bytes of a .npy file, open for reading."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    buffer.seek(0)
    return buffer


def _saved(save, **arrays):
    """What `save` (fgrad.numpy's save or savez) wrote, read back by NumPy."""
    buffer = io.BytesIO()
    if save is fnp.save:
        save(buffer, arrays["arr"])
        buffer.seek(0)
        return np.load(buffer)
    save(buffer, **arrays)
    buffer.seek(0)
    with np.load(buffer) as archive:
        return archive["a"] + archive["b"]


def _from_file(array):
    """fgrad.numpy's fromfile of a file holding `array`'s bytes."""
    handle, path = tempfile.mkstemp(suffix=".bin")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(array.tobytes())
        return fnp.fromfile(path, dtype=array.dtype)
    finally:
        os.remove(path)


def _with_print_options(x):
    with fnp.printoptions(precision=2):
        return len(fnp.array_str(x))


def _set_print_options(x):
    before = fnp.get_printoptions()
    fnp.set_printoptions(precision=2)
    try:
        return len(fnp.array_str(x))
    finally:
        fnp.set_printoptions(**before)


NONDIFF = [
    Nondiff("load", lambda x: fnp.load(_npy(_DATA))),
    Nondiff("save", lambda x: _saved(fnp.save, arr=_DATA)),
    Nondiff("savez", lambda x: _saved(fnp.savez, a=_DATA, b=2.0 * _DATA)),
    Nondiff("fromfile", lambda x: _from_file(_DATA)),
    Nondiff("frombuffer", lambda x: fnp.frombuffer(_DATA.tobytes())),
    Nondiff("fromstring", lambda x: fnp.fromstring("0.5 1.5 2.5", sep=" ")),
    Nondiff("fromiter", lambda x: fnp.fromiter(iter(_DATA), dtype=np.float64)),
    Nondiff("from_dlpack", lambda x: fnp.from_dlpack(_DATA)),
    Nondiff(
        "frompyfunc", lambda x: fnp.frompyfunc(lambda v: v + 1.0, 1, 1)(_DATA).astype(np.float64)
    ),
    Nondiff("array_str", lambda x: len(fnp.array_str(x))),
    Nondiff("array_str", lambda x: len(fnp.array_str(x, precision=1, suppress_small=True))),
    Nondiff("array_repr", lambda x: len(fnp.array_repr(x, precision=1))),
    Nondiff("get_printoptions", lambda x: fnp.get_printoptions()["precision"]),
    Nondiff("printoptions", _with_print_options),
    Nondiff("set_printoptions", _set_print_options),
]
