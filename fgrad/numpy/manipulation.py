"""More of NumPy's array manipulation, sorting and searching routines: `block`, `resize`,
`unstack`, `trim_zeros`, `sort_complex`, `apply_over_axes`, `fromfunction`, and the constants
`tri`, `nanargmax`, `nanargmin`, and NumPy's own `mask_indices` and `einsum_path`.

The differentiable functions are compositions of `concatenate`, `reshape`, `moveaxis`,
indexing and `take`, so they have every rule with none of their own. Where NumPy's result
depends on which values are zero (`trim_zeros`) or on their order (`sort_complex`), those are
read from the values, as NumPy reads them; the derivative then follows the selected elements.

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`, `fgrad.numpy.arrays`,
`fgrad.numpy.statistics`.
"""

import math as _math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from .. import core as _core
from ..core import constant_of, dtype_of, primal
from ._mirror import exported, mirror
from ._values import is_true, with_example
from .arrays import _constant_batch, lexsort, sort, take, take_along_axis
from .elementwise import imag, not_equal, real
from .shaping import (
    asarray,
    astype,
    axis_batch_rule,
    concatenate,
    describe,
    expand_dims,
    moveaxis,
    ndim,
    nondiff_function,
    numpy_applies,
    ravel,
    reshape,
    shape,
)
from .statistics import any as _any

nanargmax = with_example(
    nondiff_function(_np.nanargmax),
    """    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.nanargmax(np.array([1.0, np.nan, 3.0]))
    np.int64(2)""",
)
nanargmin = with_example(
    nondiff_function(_np.nanargmin),
    """    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.nanargmin(np.array([np.nan, 2.0, 1.0]))
    np.int64(2)""",
)
for _fn in (nanargmax, nanargmin):
    axis_batch_rule(_fn)
tri = with_example(
    nondiff_function(_np.tri),
    """    >>> import fgrad.numpy as fnp
    >>> fnp.tri(2, 3)
    array([[1., 0., 0.],
           [1., 1., 0.]])""",
)
_constant_batch(tri)


# NumPy's own functions: they read only sizes and shapes (mask_indices calls mask_func, fnp.triu
# for one, on a plain array of ones), so they are constants at every level
mask_indices = _np.mask_indices
einsum_path = _np.einsum_path


# --- joining, resizing, splitting -----------------------------------------------------------------


def _block_depth(arrays: Any, where: tuple = ()) -> tuple[int, int]:
    """(depth of list nesting, largest ndim of an array), checked as NumPy checks them."""
    if type(arrays) is tuple:
        raise TypeError(
            f"block: arrays{''.join(f'[{i}]' for i in where)} is a tuple; block takes nested "
            "lists only (a tuple would be ambiguous). Pass a list"
        )
    if type(arrays) is list:
        if not arrays:
            raise ValueError(
                f"block: arrays{''.join(f'[{i}]' for i in where)} is an empty list; pass at "
                "least one array at each level"
            )
        found = [_block_depth(a, where + (i,)) for i, a in enumerate(arrays)]
        depths = {d for d, _ in found}
        if len(depths) != 1:
            raise ValueError(
                f"block: the lists in arrays{''.join(f'[{i}]' for i in where)} are nested to "
                f"different depths {sorted(depths)}; nest every array equally deep"
            )
        return depths.pop() + 1, max(m for _, m in found)
    return 0, ndim(arrays)


def _assemble(arrays: Any, depth: int, list_ndim: int, result_ndim: int) -> Any:
    if type(arrays) is list:
        parts = [_assemble(a, depth + 1, list_ndim, result_ndim) for a in arrays]
        return concatenate(parts, axis=-(list_ndim - depth))
    a = asarray(arrays)
    return reshape(a, (1,) * (result_ndim - ndim(a)) + shape(a))


@mirror("shape")
def block(arrays: Any) -> Any:
    """NumPy's `block`: an array assembled from nested lists of blocks (the innermost lists
    joined along the last axis, the next along the one before, ...). Differentiable in every
    block.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.block([[np.eye(2), np.zeros((2, 1))], [np.ones((1, 2)), np.ones((1, 1))]])
    array([[1., 0., 0.],
           [0., 1., 0.],
           [1., 1., 1.]])
    """
    if numpy_applies(arrays):
        return _np.block(arrays)
    list_ndim, arr_ndim = _block_depth(arrays)
    return _assemble(arrays, 0, list_ndim, max(list_ndim, arr_ndim))


@mirror("shape")
def resize(a: Any, new_shape: Any) -> Any:
    """NumPy's `resize`: a's elements, flattened and repeated in order, filling `new_shape`.
    Differentiable in a (a repeated element gathers the gradient of its copies).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.resize(np.array([1.0, 2.0, 3.0]), (2, 2))
    array([[1., 2.],
           [3., 1.]])
    """
    if numpy_applies(a):
        return _np.resize(a, new_shape)
    a = asarray(a)
    n = _math.prod(shape(a))
    if n == 0:  # NumPy's resize of nothing is zeros
        return _np.resize(_np.zeros(shape(a), dtype_of(a)), new_shape)
    return take(ravel(a), _np.resize(_np.arange(n), new_shape))


@mirror("shape")
def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """NumPy's `unstack`: the slices of x along `axis`, as a tuple (the inverse of `stack`).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.unstack(np.arange(4.0).reshape(2, 2), axis=1)
    (array([0., 2.]), array([1., 3.]))
    """
    if numpy_applies(x):
        return _np.unstack(x, axis=axis)
    x = asarray(x)
    if ndim(x) == 0:
        raise ValueError(f"unstack: x must be at least 1-D, got {describe(x)}")
    moved = moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(shape(moved)[0]))


def _is_true(x: Any) -> bool:
    return is_true(x, "trim_zeros", "which elements are zero is read from the values")


def _nonzero_bounds(filt: Any, axes: Sequence[int]) -> list[tuple[int, int]] | None:
    """For each of `axes`, the first and last index of a nonzero slice (None: all zero)."""
    mask = not_equal(constant_of(filt), 0)
    if not _core.holds_batch(mask):
        _core.refuse_lazy(
            "trim_zeros", "which elements are zero is read from the values", primal(mask)
        )
        found = _np.argwhere(primal(mask))
        if found.size == 0:
            return None
        return [(int(found[:, ax].min()), int(found[:, ax].max())) for ax in axes]
    bounds = []
    for ax in axes:  # each row's bounds (the rows agree, or vmap splits them)
        others = tuple(d for d in range(ndim(mask)) if d != ax)
        along = _any(mask, axis=others) if others else mask
        hits = [i for i in range(shape(mask)[ax]) if _is_true(along[i])]
        if not hits:
            return None
        bounds.append((hits[0], hits[-1]))
    return bounds


@mirror("shape")
def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """NumPy's `trim_zeros`: filt without its leading ('f') and trailing ('b') zeros (along
    every axis, or `axis`). Which elements are zero is read from the values; the result is
    differentiable in the elements kept.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.trim_zeros(np.array([0.0, 1.0, 2.0, 0.0]))
    array([1., 2.])
    """
    if numpy_applies(filt):
        return _np.trim_zeros(filt, trim, axis)  # type: ignore[arg-type]  # any case, as NumPy
    filt = asarray(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"trim_zeros: trim must be 'f', 'b' or 'fb', got {trim!r}")
    nd = ndim(filt)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(
            _np.lib.array_utils.normalize_axis_tuple(axis, nd, argname="axis")  # NumPy's errors
        )
    if not axes:
        return filt
    bounds = _nonzero_bounds(filt, axes)
    index = [slice(None)] * nd
    for k, ax in enumerate(axes):
        if bounds is None:
            index[ax] = slice(0, 0)
        else:
            first, last = bounds[k]
            index[ax] = slice(first if "f" in trim else None, last + 1 if "b" in trim else None)
    return filt[tuple(index)]


@mirror("shape")
def sort_complex(a: Any) -> Any:
    """NumPy's `sort_complex`: a sorted by real part, then imaginary part, as a complex array.
    The gradient follows the permutation.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.sort_complex(np.array([1 + 2j, 1 - 1j, 0 + 5j]))
    array([0.+5.j, 1.-1.j, 1.+2.j])
    """
    if numpy_applies(a):
        return _np.sort_complex(a)
    a = asarray(a)
    _core.refuse_lazy("sort_complex", "the order is read from the values", _core.innermost(a))
    dt = dtype_of(a)
    if dt.kind != "c":
        # NumPy's complex type for the real dtype (complex64 for float32 and short ints)
        return astype(sort(a), _np.sort_complex(_np.zeros(1, dt)).dtype)
    c = constant_of(a)
    order = lexsort((imag(c), real(c)), axis=-1)
    return take_along_axis(a, order, -1)


@mirror("function")
def apply_over_axes(func: Callable, a: Any, axes: Any) -> Any:
    """NumPy's `apply_over_axes`: func(a, axis) applied for each axis in turn, each result
    kept at a's number of dimensions. Differentiable as func is.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.apply_over_axes(fnp.sum, np.arange(6.0).reshape(2, 3), [0, 1])
    array([[15.]])
    """
    val = asarray(a)
    n = ndim(val)
    if _np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = n + axis
        res = func(val, axis)
        if ndim(res) != ndim(val):
            res = expand_dims(res, axis)
            if ndim(res) != ndim(val):
                raise ValueError(
                    f"apply_over_axes: func(a, {axis}) returned an array of {describe(res)}; "
                    f"it must keep a's {n} dimensions or drop axis {axis} only"
                )
        val = res
    return val


@mirror("creation")
def fromfunction(
    function: Callable, shape: Any, *, dtype: Any = float, like: Any = None, **kwargs: Any
) -> Any:
    """NumPy's `fromfunction`: `function(*indices)` over a grid of the given shape (the indices
    as arrays of `dtype`). Differentiable in whatever `function` closes over.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.fromfunction(lambda i, j: i + 2 * j, (2, 2))
    array([[0., 2.],
           [1., 3.]])
    >>> float(fgrad.grad(lambda s: fnp.sum(fnp.fromfunction(lambda i, j: s * i, (2, 2))))(1.0))
    2.0
    """
    if like is not None:
        raise TypeError(
            "fromfunction(..., like=...) makes an array of another library; fgrad's values "
            "are NumPy's. Leave it out"
        )
    return function(*_np.indices(shape, dtype=dtype), **kwargs)


__all__ = exported(globals())
