"""NumPy's ufunc methods on traced values: `outer`, `reduce` and `accumulate`, differentiable,
for NumPy's own ufuncs applied to a traced value (`np.subtract.outer(x, y)`, through
`Box.__array_ufunc__`) and as methods of the mirrors (`fnp.maximum.reduce(x)`); `at` and
`reduceat` are refused, saying what to write instead.

`outer(a, b)` is the ufunc of `a` with one more axis per axis of `b`, against `b`.
`reduce` and `accumulate` of the ufuncs that have a reduction of their own are that reduction
(`add.reduce` is `sum`, `maximum.accumulate`... see `_REDUCTIONS`, `_SCANS`), so their values
are NumPy's; any other ufunc of two inputs folds along the axis in order, as NumPy does
(`subtract.reduce([a, b, c])` is `(a - b) - c`), in NumPy's loop dtype (`dtype=`), from
`initial` or else from the ufunc's identity where it has one (`hypot.reduce` of one element x
is hypot(0, x) = |x|, `add.reduce(-0.0)` is 0.0). On plain values each method is NumPy's own.

Imports: `fgrad.core`; the functions it composes are fgrad.numpy's, passed in as the
package's namespace (`attach`), which is complete only once every family is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from ..core import Box, dtype_of

# ufunc -> the fgrad.numpy reduction its `reduce` is, and the keywords that reduction takes
_REDUCTIONS = {
    "add": ("sum", ("dtype", "keepdims", "initial", "where")),
    "multiply": ("prod", ("dtype", "keepdims", "initial", "where")),
    "maximum": ("max", ("keepdims", "initial", "where")),
    "minimum": ("min", ("keepdims", "initial", "where")),
    "logical_and": ("all", ("keepdims", "where")),
    "logical_or": ("any", ("keepdims", "where")),
}
_SCANS = {"add": "cumsum", "multiply": "cumprod"}
# ufunc -> the `.at[idx]` update that is its `at`
_UPDATES = {
    "add": "add",
    "subtract": "subtract",
    "multiply": "multiply",
    "divide": "divide",
    "true_divide": "divide",
    "power": "power",
    "minimum": "min",
    "maximum": "max",
}


def attach(fn: Any, theirs: _np.ufunc, namespace: dict) -> None:
    """Give the mirror `fn` of NumPy's ufunc `theirs` the ufunc's methods."""
    for method in ("outer", "reduce", "accumulate", "at", "reduceat"):
        setattr(fn, method, _method(fn, theirs, method, namespace))


def _method(fn, theirs, method, namespace):
    def call(*inputs: Any, **kwargs: Any) -> Any:
        if not any(type(x) is Box for x in inputs):  # plain values (or lazy ones): NumPy's own
            return getattr(theirs, method)(*inputs, **kwargs)
        return apply(fn, theirs, method, inputs, kwargs, namespace)

    call.__name__ = call.__qualname__ = f"{theirs.__name__}.{method}"
    call.__doc__ = f"NumPy's `{theirs.__name__}.{method}`, on traced values too (see fgrad.numpy)."
    return call


def apply(fn, theirs, method, inputs, kwargs, namespace):
    """`theirs.<method>(*inputs, **kwargs)` of traced inputs, in fgrad operations (`fn` is the
    mirror of the ufunc `theirs`)."""
    name = theirs.__name__
    if kwargs.get("out") is not None:
        raise TypeError(
            f"{name}.{method}(..., out=...) cannot write into an array inside fgrad: use the "
            "returned value instead"
        )
    kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    if method == "at":
        update = _UPDATES.get(name)
        instead = f"a = fnp.at(a)[idx].{update}(b)" if update else "a = fnp.at(a)[idx].set(...)"
        raise TypeError(
            f"{name}.at writes into its first argument in place, which a traced value cannot "
            f"take; write {instead}, which returns the updated array"
        )
    if method == "reduceat":
        raise TypeError(
            f"{name}.reduceat is not supported on traced values; reduce each slice "
            f"({name}.reduce(a[i:j])) and stack the results"
        )
    if theirs.nin != 2 or theirs.nout != 1:
        raise TypeError(f"{name}.{method}: only ufuncs of two inputs and one output have it")
    if method == "outer":
        a, b = inputs
        nd = namespace["ndim"](b)
        a = namespace["reshape"](a, tuple(namespace["shape"](a)) + (1,) * nd)
        return fn(a, b, **kwargs)
    (a,) = inputs
    a = namespace["asarray"](a)
    axis = kwargs.pop("axis", 0)
    if method == "reduce":
        return _reduce(fn, theirs, a, axis, kwargs, namespace)
    if method == "accumulate":
        return _accumulate(fn, name, a, axis, kwargs, namespace)
    raise AttributeError(f"{name} has no method {method!r}")


# The ufuncs without an identity that NumPy still reduces over several axes at once
_REORDERABLE = {"maximum", "minimum", "fmax", "fmin"}


def _reduce(fn, theirs, a, axis, kwargs, namespace):
    name = theirs.__name__
    nd = namespace["ndim"](a)
    reorderable = theirs.identity is not None or name in _REORDERABLE
    axes = _reduced_axes(axis, nd, name, reorderable)
    if axes != () and name in _REDUCTIONS:
        reduction, takes = _REDUCTIONS[name]
        if set(kwargs) <= set(takes):
            return namespace[reduction](a, axis=axis, **kwargs)
    refused = sorted(k for k in kwargs if k not in ("keepdims", "initial", "dtype"))
    if refused:
        raise TypeError(f"{name}.reduce on a traced value folds along axes, without {refused}")
    return _fold(fn, theirs, a, axes, kwargs, namespace)


def _fold(fn, theirs, a, axes, kwargs, namespace):
    """`theirs.reduce` as NumPy computes it: the elements (and `initial`) cast to the loop's
    dtype (`dtype`, or the one NumPy resolves for a), then folded in order from `initial`, or
    else from the ufunc's identity where it has one: `hypot.reduce(x)` of one element is
    hypot(0, x) = |x|, `add.reduce(-0.0)` is 0.0 + -0.0 = 0.0, `logical_xor.reduce(-3.0)` is
    True. `axes` () folds nothing but that start (a 0-d a, or axis=())."""
    loop = _loop_dtype(theirs, dtype_of(a), kwargs.get("dtype"))
    if dtype_of(a) != loop:
        a = namespace["astype"](a, loop)
    acc = kwargs.get("initial")
    if acc is None and theirs.identity is not None:
        acc = _np.asarray(theirs.identity).astype(loop)
    elif acc is not None:
        acc = namespace["astype"](namespace["asarray"](acc), loop)
    if axes == ():
        return a[()] if acc is None else fn(acc, a)  # (a 0-d a gives a scalar, as NumPy)
    rows = namespace["moveaxis"](a, axes, tuple(range(len(axes))))
    shape = namespace["shape"](rows)
    n = int(_np.prod(shape[: len(axes)], dtype=_np.int64))
    rows = namespace["reshape"](rows, (n,) + tuple(shape[len(axes) :]))
    if n == 0:
        if acc is None:
            raise ValueError(
                f"zero-size array to reduction operation {theirs.__name__} which has no identity"
            )
        acc = namespace["broadcast_to"](acc, tuple(shape[len(axes) :]))
    for k in range(n):
        acc = rows[k] if acc is None else fn(acc, rows[k])
    if kwargs.get("keepdims"):
        acc = namespace["expand_dims"](acc, axes)
    return acc


def _loop_dtype(theirs, dtype, asked):
    """The dtype NumPy's `theirs.reduce` computes in for an array of `dtype`: `asked` (the
    `dtype=` given), else the one NumPy resolves. Where it resolves none (`less`, whose
    result is not of its inputs' dtype; `ldexp`), NumPy's reduce raises, and so does this."""
    try:
        if asked is not None:
            asked = _np.dtype(asked)
            if theirs.resolve_dtypes((asked, asked, asked)) != (asked, asked, asked):
                raise TypeError(f"no loop of {theirs.__name__} computes in {asked}")
            return asked
        return theirs.resolve_dtypes((None, _np.dtype(dtype), None), reduction=True)[0]
    except TypeError as e:
        raise TypeError(
            f"{theirs.__name__}.reduce of an array of dtype {_np.dtype(dtype)}"
            + ("" if asked is None else f" with dtype={asked}")
            + f": {e} (NumPy's reduce has no loop for it either)"
        ) from None


def _reduced_axes(axis, nd, name, reorderable):
    """NumPy's `axis` of `reduce` on an array of `nd` axes, as a tuple of axes in [0, nd): ()
    when nothing is folded (a 0-d array at axis 0, -1 or None, where NumPy gives the value
    itself); a ufunc NumPy does not reorder (`subtract`) folds along one axis only."""
    if nd == 0 and (axis is None or axis in (0, -1)):
        return ()
    axes = tuple(range(nd)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    if not reorderable and len(axes) > 1:
        raise ValueError(
            f"reduction operation '{name}' is not reorderable, so at most one axis may be "
            f"specified (got axis={axis!r} for an array of {nd} axes)"
        )
    for k in axes:
        if not -nd <= k < nd:
            raise _np.exceptions.AxisError(int(k), nd)
    return tuple(sorted(int(k) % nd for k in axes))


def _accumulate(fn, name, a, axis, kwargs, namespace):
    if namespace["ndim"](a) == 0:
        raise TypeError(f"{name}.accumulate: cannot accumulate on a scalar (as NumPy)")
    if name in _SCANS and set(kwargs) <= {"dtype"}:
        return namespace[_SCANS[name]](a, axis=axis, **kwargs)
    if kwargs or not isinstance(axis, (int, _np.integer)):
        raise TypeError(
            f"{name}.accumulate on a traced value folds along one axis (an int), without "
            f"{sorted(kwargs) or 'a tuple of axes'}"
        )
    rows = namespace["moveaxis"](a, int(axis), 0)
    n = namespace["shape"](rows)[0]
    if n == 0:
        return a
    partial = [rows[0]]
    for k in range(1, n):
        partial.append(fn(partial[-1], rows[k]))
    return namespace["stack"](partial, axis=int(axis) % namespace["ndim"](a))
