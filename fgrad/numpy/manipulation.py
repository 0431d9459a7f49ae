"""More of NumPy's array manipulation, sorting and searching routines: `pad`, `block`, `resize`,
`unstack`, `trim_zeros`, `sort_complex`, `apply_over_axes`, `fromfunction`, and the constants
`tri`, `einsum_path` (of shapes, traced operands included), and NumPy's own `mask_indices`.

The differentiable functions are compositions of `concatenate`, `reshape`, `moveaxis`,
indexing and `take`, so they have every rule with none of their own. Where NumPy's result
depends on which values are zero (`trim_zeros`) or on their order (`sort_complex`), those are
read from the values, as NumPy reads them; the derivative then follows the selected elements.

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`, `fgrad.numpy.arrays`,
`fgrad.numpy.reductions`, `fgrad.numpy.creation`, `fgrad.numpy.statistics`.
"""

import math as _math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from .. import core as _core
from ..core import constant_of, dtype_of, primal
from ._coverage import no_derivative
from ._mirror import exported, mirror
from ._values import is_true, with_example
from .arrays import _positions, flip, lexsort, sizes_function, sort, take, take_along_axis
from .creation import linspace
from .elementwise import imag, not_equal, real, round as _round, where
from .reductions import max as _max, mean, min as _min
from .shaping import (
    asarray,
    astype,
    broadcast_to,
    concatenate,
    describe,
    expand_dims,
    getitem,
    is_traced,
    moveaxis,
    ndim,
    numpy_applies,
    ravel,
    read_constant,
    read_int,
    reshape,
    shape,
    squeeze,
)
from .statistics import any as _any, median

# --- padding --------------------------------------------------------------------------------------

_GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")
_STAT_MODES = ("maximum", "minimum", "mean", "median")


@mirror("shape")
def pad(
    array: Any,
    pad_width: Any,
    mode: str = "constant",
    **kwargs: Any,
) -> Any:
    """NumPy's `pad`, with every form of `pad_width` NumPy accepts, for the modes 'constant'
    (with `constant_values`), 'edge', 'reflect', 'symmetric', 'wrap', the statistics
    'maximum', 'minimum', 'mean' and 'median' (with `stat_length`), 'linear_ramp' (with
    `end_values`) and 'empty' (whose pad NumPy leaves unset: fgrad's is 0).

    The copying modes apply NumPy's own `pad` to the positions of the elements, so the result
    agrees with NumPy exactly (including pads wider than the array); the values are then
    gathered from those positions, and the gradient of a padded element flows back to the
    element it copies. 'reflect' and 'symmetric' with `reflect_type='odd'` are NumPy's
    2 * edge - reflected (up to rounding for a pad wider than the array, which NumPy reflects
    again). The statistics and ramps are NumPy's steps, axis after axis, in fgrad
    operations: differentiable in the array, and in a traced scalar `constant_values` or
    `end_values`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.pad(np.array([1.0, 2.0, 6.0]), 2, mode="mean")
    array([3., 3., 1., 2., 6., 3., 3.])
    >>> fgrad.grad(lambda x: fnp.sum(fnp.pad(x, (0, 2), mode="linear_ramp")))(np.ones(3))
    array([1. , 1. , 1.5])
    """
    if callable(mode):  # NumPy's protocol: the function writes each padded vector in place
        if numpy_applies(array, pad_width, list(kwargs.values())):
            return _np.pad(array, pad_width, mode, **kwargs)
        raise TypeError(
            f"pad: a callable mode ({getattr(mode, '__name__', mode)!r}) writes into NumPy "
            f"arrays, and array is not one (a traced value, or another library's array: "
            f"{describe(array)}); use one of the named "
            "modes, or build the padding with fgrad.numpy.concatenate"
        )
    array = asarray(array)
    a_shape = shape(array)
    pos = _positions(a_shape)
    if mode in _GATHER_MODES:
        if mode in ("reflect", "symmetric") and kwargs.get("reflect_type", "even") == "odd":
            widths = _widths(array, pad_width, mode, kwargs, {"reflect_type"})
            for axis, pair in enumerate(widths):  # NumPy's order: axis after axis
                if any(pair):
                    array = _odd_along(array, axis, pair, mode)
            return array
        # (NumPy's stub overloads on Literal flags; the flags pass through to NumPy)
        return getitem(ravel(array), _np.pad(pos, pad_width, mode=mode, **kwargs))  # type: ignore[call-overload]
    if mode in _STAT_MODES or mode in ("linear_ramp", "empty"):
        return _pad_by_axis(array, pad_width, mode, kwargs)
    if mode != "constant":
        raise ValueError(
            f"pad: mode {mode!r} is not supported; use one of 'constant', "
            + ", ".join(repr(m) for m in (*_GATHER_MODES, *_STAT_MODES, "linear_ramp", "empty"))
        )
    unknown = set(kwargs) - {"constant_values"}
    if unknown:
        raise TypeError(f"pad: unexpected keyword arguments {sorted(unknown)} for mode 'constant'")
    c = kwargs.get("constant_values", 0)
    if is_traced(c) or _core.is_foreign_array(c):  # (another library's, lazy: never read)
        if ndim(c) != 0:
            raise TypeError(
                f"pad: a traced or lazy constant_values must be a scalar, got {describe(c)}; "
                "pass plain values for per-axis constants"
            )
        # the elements of `array` as they are, c (in array's dtype, as NumPy casts it) around
        # them: the value is NumPy's, and differentiable in c
        inside = _np.pad(_np.ones(a_shape, dtype=bool), pad_width, mode="constant")
        return where(inside, pad(array, pad_width), astype(c, dtype_of(array)))
    dtype = dtype_of(array)
    inside = _np.pad(_np.ones(a_shape, dtype=bool), pad_width, mode="constant")
    constants = _np.pad(
        _np.zeros(a_shape, dtype=dtype), pad_width, mode="constant", constant_values=c
    )
    source = _np.pad(pos, pad_width, mode="constant")  # 0 outside: a valid position, masked out
    flat = ravel(array)
    if 0 in a_shape:  # nothing to copy, and position 0 must exist: one element, masked out
        flat = concatenate([flat, _np.zeros(1, dtype)])
    return where(inside, getitem(flat, source), constants)


def _odd_along(array: Any, axis: int, pair: tuple, mode: str) -> Any:
    """NumPy's odd reflection ('reflect' or 'symmetric' with reflect_type='odd') along one
    axis. NumPy computes 2 * edge - reflected, again on what it padded for a pad wider than
    the array, so each padded element is a sum of at most three elements: the one the even
    reflection copies and the two edges, with small integer coefficients (NumPy's own pad of
    unit vectors gives them). A coefficient of 0 adds -0.0, which changes no sum, so a pad no
    wider than the array is NumPy's 2 * edge - reflected bit for bit (wider: up to rounding,
    as NumPy's sums are in another order)."""
    n = shape(array)[axis]
    if n == 0:
        raise ValueError(
            f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
        )
    dtype = dtype_of(array)

    def odd(v):  # NumPy's odd pad of a vector of this axis's length
        return _np.pad(v.astype(dtype), pair, mode=mode, reflect_type="odd")

    def along(v):  # a vector laid along the axis
        return v.reshape((1,) * axis + (-1,) + (1,) * (ndim(array) - axis - 1))

    unit_first, unit_last, inner = _np.zeros(n), _np.zeros(n), _np.ones(n)
    unit_first[0], unit_last[-1] = 1.0, 1.0
    inner[0] = inner[-1] = 0.0
    # the element the even reflection copies (NumPy's stub overloads on Literal modes)
    copied = _np.pad(_np.arange(n), pair, mode=mode)  # type: ignore[call-overload]
    terms = [
        (odd(inner), take(array, copied, axis=axis)),
        (odd(unit_first), getitem(array, _at(axis, slice(0, 1)))),
    ]
    if n > 1:
        terms.append((odd(unit_last), getitem(array, _at(axis, slice(n - 1, n)))))
    out = None
    for coef, values in terms:
        if not coef.any():
            continue
        term = where(along(coef != 0), along(coef) * values, _np.array(-0.0, dtype))
        out = term if out is None else out + term
    return out


def _pairs(value: Any, nd: int, what: str) -> list:
    """NumPy's reading of a per-axis argument (`pad_width`, `stat_length`, `end_values`): one
    value, one (before, after) pair, or a pair per axis. A traced scalar serves every end."""
    if is_traced(value) or _core.is_foreign_array(value):  # (a lazy one: never read)
        if ndim(value) != 0:
            raise TypeError(
                f"pad: a traced {what} must be a scalar, got {describe(value)}; pass plain "
                "values for per-axis ones"
            )
        return [(value, value)] * nd
    if value is None:
        return [(None, None)] * nd
    # as NumPy's `_as_pairs`: its values as NumPy's scalars (an end value's type sets the
    # precision of its ramp, as in NumPy's linspace)
    x = _np.array(value)
    if x.size == 1:
        return [(x.ravel()[0], x.ravel()[0])] * nd
    if x.size == 2 and x.shape != (2, 1):
        return [(x.ravel()[0], x.ravel()[1])] * nd
    return [tuple(p) for p in _np.broadcast_to(x, (nd, 2)).tolist()]  # (Python's, as NumPy's)


def _at(axis: int, s: slice) -> tuple:
    return (slice(None),) * axis + (s,)


def _widths(array: Any, pad_width: Any, mode: str, kwargs: dict, allowed: set) -> list:
    """`pad_width` as a (before, after) pair of ints per axis, after refusing the keywords
    `mode` does not take and a negative width, as NumPy does."""
    unknown = set(kwargs) - allowed
    if unknown:
        raise TypeError(f"pad: unexpected keyword arguments {sorted(unknown)} for mode {mode!r}")
    # (traced ints, `jit` arguments: their values, guarded)
    pad_width = read_constant(pad_width, "pad", "pad_width", "it holds integers")
    widths = [(int(b), int(a)) for b, a in _pairs(pad_width, ndim(array), "pad_width")]
    if any(w < 0 for pair in widths for w in pair):
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width}")
    return widths


def _pad_by_axis(array: Any, pad_width: Any, mode: str, kwargs: dict) -> Any:
    """The statistics, ramps and 'empty' modes, as NumPy pads: axis after axis, each axis's
    pad computed from the array already padded along the axes before it."""
    allowed = {"linear_ramp": {"end_values"}, "empty": set()}.get(mode, {"stat_length"})
    widths = _widths(array, pad_width, mode, kwargs, allowed)
    nd = ndim(array)
    dtype = dtype_of(array)
    if mode != "empty" and _np.prod(shape(array)) == 0:
        for axis, pair in enumerate(widths):
            if shape(array)[axis] == 0 and any(pair):
                raise ValueError(
                    f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
                )
        return _pad_by_axis(array, pad_width, "empty", {})
    lengths = _pairs(kwargs.get("stat_length"), nd, "stat_length")
    ends = _pairs(kwargs.get("end_values", 0), nd, "end_values")
    for axis, pair in enumerate(widths):
        n = shape(array)[axis]
        if mode in _STAT_MODES:
            used = _stat_lengths(n, lengths[axis], mode)  # (NumPy checks every axis's)
        parts = []
        for side, width in enumerate(pair):
            if width == 0:
                continue  # (NumPy computes this side's value too, and never uses it)
            if mode in _STAT_MODES:
                chunk = slice(0, used[0]) if side == 0 else slice(n - used[1], n)
                value = _stat(getitem(array, _at(axis, chunk)), axis, mode, dtype)
            elif mode == "linear_ramp":
                edge = getitem(array, _at(axis, slice(0, 1) if side == 0 else slice(n - 1, n)))
                value = linspace(
                    ends[axis][side],
                    squeeze(edge, axis),
                    width,
                    endpoint=False,
                    dtype=dtype,
                    axis=axis,
                )
                value = value if side == 0 else flip(value, axis)
            else:  # 'empty': NumPy leaves the pad unset
                value = _np.zeros((), dtype)
            block = list(shape(array))
            block[axis] = width
            parts.append((side, broadcast_to(astype(value, dtype), tuple(block))))
        if parts:
            before = [p for side, p in parts if side == 0]
            after = [p for side, p in parts if side == 1]
            array = concatenate([*before, array, *after], axis=axis)
    return array


def _stat_lengths(n: int, length_pair: tuple, mode: str) -> tuple[int, int]:
    """NumPy's `_get_stats`' lengths: the first and last `stat_length` elements along the axis
    (all n when None or longer), refused when empty for a maximum or minimum."""
    left, right = (n if k is None or int(k) > n else int(k) for k in length_pair)
    if (left == 0 or right == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")
    return left, right


def _stat(chunk: Any, axis: int, mode: str, dtype: Any) -> Any:
    """The statistic of a chunk along `axis` (kept), rounded for an integer array, as NumPy's."""
    stat = {"maximum": _max, "minimum": _min, "mean": mean, "median": median}[mode]
    value = stat(chunk, axis=axis, keepdims=True)
    return _round(value) if _np.issubdtype(dtype, _np.integer) else value


tri = with_example(
    sizes_function(_np.tri),
    """    >>> import fgrad.numpy as fnp
    >>> fnp.tri(2, 3)
    array([[1., 0., 0.],
           [1., 1., 0.]])""",
)


# NumPy's own function: it reads only sizes (mask_func, fnp.triu for one, is called on a plain
# array of ones), so it is a constant at every level
mask_indices = _np.mask_indices


@no_derivative("a contraction order and its report, read from the operands' shapes")
def einsum_path(*operands: Any, optimize: Any = "greedy", einsum_call: bool = False) -> Any:
    """NumPy's `einsum_path(subscripts, *operands, optimize='greedy')`: the contraction order
    NumPy's einsum takes, and its report. It reads only the operands' shapes, so a traced
    operand (under `vmap`, one row) is handed to NumPy as a stand-in of its shape and dtype
    that holds no values, and the path is a constant at every level.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> def f(x):
    ...     path, _ = fnp.einsum_path("ij,jk,kl->", x, x, x)
    ...     return fnp.einsum("ij,jk,kl->", x, x, x, optimize=path)
    >>> fgrad.grad(f)(np.eye(2))
    array([[3., 3.],
           [3., 3.]])
    """
    if numpy_applies(*operands):
        # (NumPy's stubs type only the public form, einsum_call=False)
        return _np.einsum_path(*operands, optimize=optimize, einsum_call=einsum_call)  # type: ignore[arg-type]
    if einsum_call:  # (NumPy's internal form returns the operands: the stand-ins here)
        raise TypeError(
            "einsum_path(..., einsum_call=True) returns the operands, which are traced here; "
            "call einsum_path without einsum_call (it gives the path and its report)"
        )
    # (an array of another library beside a traced one, a Dask array, takes a stand-in too:
    # NumPy's einsum_path would dispatch to its library with the stand-ins)
    stand_ins = [
        _np.broadcast_to(_np.empty((), dtype_of(x)), shape(x))
        if is_traced(x) or (hasattr(x, "shape") and type(x) is not _np.ndarray)
        else x
        for x in operands
    ]
    return _np.einsum_path(*stand_ins, optimize=optimize)


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
    new_shape = read_int(new_shape)  # (a traced int, a `jit` argument: its value, guarded)
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
    if isinstance(x, (list, tuple)):  # (a `jit` argument too: refused as eagerly)
        raise TypeError(
            f"unstack: x is a {type(x).__name__}; NumPy's unstack takes an array (a list has "
            "no ndim: AttributeError): pass fgrad.numpy.asarray(x)"
        )
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
    given, filt = filt, asarray(filt)
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
        return given  # nothing to trim: NumPy returns its argument as it is (a number too)
    bounds = _nonzero_bounds(filt, axes)
    index = [slice(None)] * nd
    for k, ax in enumerate(axes):
        if bounds is None:
            index[ax] = slice(0, 0)
        else:
            first, last = bounds[k]
            index[ax] = slice(first if "f" in trim else None, last + 1 if "b" in trim else None)
    # NumPy's: the argument itself sliced, so a list (a `jit` argument too) stays a list, as
    # eagerly; a nested list cannot take a tuple index (NumPy's TypeError)
    return given[index[0]] if nd == 1 else given[tuple(index)]


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
