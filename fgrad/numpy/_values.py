"""Helpers of the breadth modules (mathematical, windows, polynomials, histograms, selection,
manipulation) for the values they read: a boolean read from the values, and the plain values
of an index or mask argument. (Whether NumPy's own function applies is
`fgrad.numpy.shaping.numpy_applies`.)

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

import inspect
from collections.abc import Callable
from typing import Any

import numpy as _np

from .. import core as _core
from ..core import primal
from . import _ufunc_signature
from ._mirror import mirror
from .elementwise import _with_keywords, scalar_if_0d
from .shaping import describe, refuse_out


def is_true(x: Any, name: str, why: str) -> bool:
    """A boolean read from the values of x (under vmap each row's: the rows agree, or vmap runs
    them apart). A lazy Dask x is refused: `name` needs the value (`why`)."""
    if _core.holds_batch(x):
        return bool(x)
    value = primal(x)
    _core.refuse_lazy(name, why, value)
    return bool(value)


def constant_values(x: Any, name: str, arg: str) -> Any:
    """The plain values of an index or mask argument, which carries no derivative. One batched
    by vmap would place values differently in each row, and a lazy Dask one would have to be
    computed: both refused."""
    if _core.holds_batch(x):
        raise TypeError(
            f"{name}: {arg} is batched by vmap ({describe(x)}); each row would place the values "
            f"differently. Pass {arg} as a constant shared by the rows (close over it), or "
            "loop over the rows"
        )
    value = primal(x)
    _core.refuse_lazy(name, f"its {arg} is read to place the values", value)
    return _np.asarray(value)


def with_example(fn: Any, example: str) -> Any:
    """fn (a function declared with `nondiff_function`) with a call in its docstring."""
    fn.__doc__ = f"{fn.__doc__}\n\n{example}\n"
    return fn


def ufunc_mirror(fn: Callable, theirs: Any) -> Callable:
    """`fn` (the fgrad composition of the ufunc `theirs`, for traced inputs) with NumPy's
    signature of `theirs`, its output(s) included: `out` refused, the other keywords handled
    as every fgrad ufunc handles them (`fgrad.numpy.elementwise.as_ufunc`), and NumPy's own
    ufunc for plain NumPy inputs."""
    signature = inspect.signature(theirs)
    inputs = list(signature.parameters)[: theirs.nin]

    def ufunc(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs)
        given.apply_defaults()
        a = given.arguments
        out = a["out"]
        if any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
            refuse_out(out, theirs.__name__)
        keywords = {k: a[k] for k in _ufunc_signature.DEFAULTS}
        ans = _with_keywords(fn, theirs, tuple(a[x] for x in inputs), None, **keywords)
        return scalar_if_0d(ans)

    ufunc.__name__ = ufunc.__qualname__ = theirs.__name__
    ufunc.__module__ = fn.__module__
    ufunc.__doc__ = fn.__doc__
    ufunc.__signature__ = signature  # type: ignore[attr-defined]
    return mirror("ufunc")(ufunc)
