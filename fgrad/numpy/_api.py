"""NumPy's calling conventions on fgrad.numpy's functions: the names declared without a
derivative keep NumPy's own signature, and a NumPy keyword that cannot mean anything inside a
transform is refused by name.

Imports: `fgrad.core`, `fgrad.primitive`.
"""

import inspect

import numpy as _np

from ..core import primal
from ..primitive import nondiff

NO_VALUE = _np._NoValue  # NumPy's own "not given" default, so signatures read as NumPy's


def nondiff_function(theirs, name=None):
    """NumPy's function `theirs` declared without a derivative: it is applied to the plain
    values of its arguments, so it accepts exactly what NumPy's does (its signature is
    NumPy's), and its result is a constant at every level."""
    name = name or theirs.__name__
    prim = nondiff(theirs, name)

    def fn(*args, **kwargs):
        if kwargs:
            kwargs = {key: primal(value) for key, value in kwargs.items()}
        return prim(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"NumPy's `{name}`, declared without a derivative: it runs on the plain "
                  "values of its arguments, and its result is a constant at every level.")
    fn.__signature__ = inspect.signature(theirs)
    return fn


def refuse(name, keyword, why, instead):
    """The TypeError for a NumPy keyword given a value fgrad cannot honour: it names the
    function and the keyword, says why, and what to write instead."""
    return TypeError(f"{name}(..., {keyword}=...): {why}. {instead}")


def refuse_out(out, name):
    """NumPy's `out=` writes into an array; inside a transform arrays are values."""
    if out is not None:
        raise TypeError(
            f"{name}(..., out=...) cannot write into an array inside fgrad: arrays are "
            f"values here. Use the returned value instead: y = fgrad.numpy.{name}(x)"
        )


def given(value):
    """Whether a keyword whose default is NumPy's "no value" was given."""
    return value is not NO_VALUE


def refuse_layout(name, **keywords):
    """For a traced input: NumPy's keywords about the memory of a new array (its layout
    `order`, `subok`, `like`, `device`, ...), each given as `keyword=(value, default)`, must
    keep their defaults, as fgrad's traced values have no memory layout, subclass or device
    to set."""
    for keyword, (value, default) in keywords.items():
        if keyword == "device" and value == "cpu":
            continue  # NumPy's one device, the same as none
        if not is_default(value, default):
            raise refuse(name, keyword, "it sets the memory layout, array subclass or device "
                         "of a new array, which fgrad's traced values do not have",
                         "Leave it out, and convert the result after the transform")


def is_default(value, default):
    return value is default or (type(value) in (str, bool, int) and value == default)
