"""Rearranging, splitting, joining and indexing arrays: `flip`, `roll`, `tile`, `split`,
`take`, `diag`, `tril`, `sort`, `partition`, `unique`, `meshgrid`, ..., the index-producing
functions (`argmax`, `nanargmax`, `argsort`, `nonzero`, ...) declared without a derivative,
the scatter updates behind `x.at[idx].multiply/divide/power/min/max`, and the functions that
apply the user's function over an array (`apply_along_axis`, `vectorize`).

Every differentiable function here is a composition of the linear primitives of
`fgrad.numpy.shaping` (reshape, transpose, broadcast, concatenate, getitem and its adjoint
scatter-add) and of `where`, so none needs rules of its own and all are differentiable to every
order. The only NumPy work is on index arrays, which carry no derivative: `insert` and
`delete` apply NumPy's own function to an array of positions, so they accept every argument
form NumPy does and agree with it exactly, and then gather the values from those positions
(as `pad`, in `fgrad.numpy.manipulation`, does).

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`,
`fgrad.numpy.reductions`, `fgrad.numpy._values` (`with_example`).
"""

from __future__ import annotations

import functools as _functools
import inspect as _inspect
import operator as _operator
import re as _re
import warnings as _warnings
from typing import TYPE_CHECKING

import numpy as _np

from .. import batching as _batching, core as _core
from ..core import Box, constant_of, dtype_of, primal, shape_of
from ..primitive import deflinear, nondiff, register_rules
from . import reductions as _rd, shaping as _shaping
from ._mirror import exported, mirror
from ._values import with_example
from .elementwise import (
    divide,
    greater_equal,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    mask_values,
    maximum,
    minimum,
    multiply,
    not_equal,
    power,
    where,
)
from .shaping import (
    NO_VALUE,
    _normalize_axes,
    _normalize_index,
    as_array,
    asarray,
    astype,
    at,
    batch_to_front,
    broadcast_to,
    concatenate,
    describe,
    getitem,
    is_traced,
    moveaxis,
    ndim,
    nondiff_function,
    ravel,
    refuse_layout,
    refuse_unjoinable,
    reshape,
    shape,
    stack,
    sum,
    transpose,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..typing import Array, ArrayLike, DTypeLike


# --- helpers --------------------------------------------------------------------------------------


def _axis(axis, nd, name, arg="axis"):
    """One axis as a non-negative int, with NumPy's bounds check and a message that says so.
    A traced int (a `jit` argument) is read, a guard of the record."""
    axis = _shaping.read_int(axis)
    if not isinstance(axis, (int, _np.integer)):
        got = f"a traced value with {describe(axis)}" if is_traced(axis) else repr(axis)
        raise TypeError(f"{name}: {arg} must be an int, got {got}")
    if not -nd <= axis < nd:
        raise ValueError(f"{name}: {arg}={axis} is out of bounds for an array with {nd} dimensions")
    return int(axis) % nd


def _constant_index(idx, name, arg="indices", masks=False):
    """An index argument as a plain integer array. A traced integer index (computed under `jit`
    or `vmap`: `argmin(x)`, `(x > 0).astype(int)`) is read, which `jit` guards and `vmap`
    answers for rows that agree; a traced float one would carry a derivative, which an index
    has not. A lazy (Dask) index is refused: reading it would compute it."""
    _core.refuse_lazy(name, f"the values of its {arg} are read", _core.innermost(idx))
    if type(idx) is Box and dtype_of(idx).kind in "iub":
        idx = _np.asarray(idx)
    if type(idx) is Box:
        raise TypeError(
            f"{name}: {arg} is a traced float value ({describe(idx)}); indices have no "
            "derivative and must be integers. Compute them with integer operations "
            "(astype(int), argmin, ...) or from plain values"
        )
    out = _np.asarray(idx)
    if out.size == 0 and out.dtype == _np.float64:
        out = out.astype(_np.intp)  # `[]` is an empty list of indices, as in NumPy
    if not _np.issubdtype(out.dtype, _np.integer) and not (masks and out.dtype == bool):
        raise TypeError(f"{name}: {arg} must be integers, got dtype {out.dtype}")
    return out


def _index_list(obj):
    """A list index as NumPy reads it: an array, an empty one of integers (not of floats)."""
    if not isinstance(obj, list):
        return obj
    out = _np.asarray(obj)
    return out.astype(_np.intp) if out.size == 0 else out


def _along(axis, idx):
    """The index that applies `idx` along `axis` and keeps every other axis."""
    return (slice(None),) * axis + (idx,)


def _positions(a_shape):
    """The flat position of every element: NumPy's functions applied to it say where each
    element of the result comes from."""
    return _np.arange(int(_np.prod(a_shape, dtype=_np.int64))).reshape(a_shape)


# --- flipping, rolling, rotating ------------------------------------------------------------------


@mirror("shape")
def flip(m: ArrayLike, axis: int | tuple[int, ...] | None = None) -> Array:
    """NumPy's `flip`: reverse the order of elements along `axis` (None: all axes; int; tuple).

    >>> import fgrad.numpy as fnp
    >>> fnp.flip(fnp.arange(3.0))
    array([2., 1., 0.])
    """
    m = asarray(m)
    nd = ndim(m)
    axes = _normalize_axes(axis, nd)
    if not nd:
        return getitem(m, ())  # NumPy's m[()]: a 0-d array's scalar
    if not axes and type(m) is Box:
        return m  # nothing to record; a plain array: NumPy's m[:, ...], a view, below
    return getitem(m, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd)))


def _flip_axis(m, axis, name):
    """`flip(m, axis)`, refusing an m with no such axis as NumPy does."""
    m = asarray(m)
    if ndim(m) <= axis:
        dimensions = "dimensions" if axis else "dimension"
        raise ValueError(f"{name}: m must have at least {axis + 1} {dimensions}, got {describe(m)}")
    return flip(m, axis)


@mirror("shape")
def fliplr(m: ArrayLike) -> Array:
    """NumPy's `fliplr`: reverse the columns (axis 1) of an array of 2 or more dimensions."""
    return _flip_axis(m, 1, "fliplr")


@mirror("shape")
def flipud(m: ArrayLike) -> Array:
    """NumPy's `flipud`: reverse the rows (axis 0) of an array of 1 or more dimensions."""
    return _flip_axis(m, 0, "flipud")


def _roll_batch(args, dims, shift, axis):
    """The rows go first; each rolled axis moves one along."""
    return _roll_p(
        batch_to_front(args[0], dims[0]), shift=shift, axis=tuple(a + 1 for a in axis)
    ), 0


# One primitive (NumPy's roll) rather than two slices and a concatenation per axis: one
# operation of every transform, and one step of sparsity detection (a periodic stencil's
# residual rolls its grid four times per field). Linear: its transpose rolls back.
def _roll_impl(a, shift, axis):
    """NumPy's roll for shifts in 1 .. n - 1 of distinct axes: on a NumPy array, two slices and
    a concatenation per axis (the same values; a third of NumPy's roll's time on a 32 x 32
    grid); another library's array takes its own roll."""
    if type(a) is not _np.ndarray:
        return _np.roll(a, shift, axis)
    for k, ax in zip(shift, axis):
        n, before = a.shape[ax], (slice(None),) * ax
        a = _np.concatenate((a[before + (slice(n - k, None),)], a[before + (slice(0, n - k),)]), ax)
    return a


def _roll_transpose(ans, a, shift, axis):
    """Rolling back: by n - k along each axis (the shifts stay in 1 .. n - 1)."""
    back = tuple(shape_of(a)[ax] - k for k, ax in zip(shift, axis))
    return lambda ct: _roll_p(ct, shift=back, axis=axis)


_roll_p = deflinear(
    _roll_impl,
    _roll_transpose,
    name="roll",
    batch=_roll_batch,
    sparsity="moves",
)


@mirror("shape")
def roll(
    a: ArrayLike, shift: int | Sequence[int], axis: int | tuple[int, ...] | None = None
) -> Array:
    """NumPy's `roll`: shift elements along `axis` cyclically; `shift` and `axis` may be tuples
    (broadcast against each other, shifts of a repeated axis add up); `axis=None` rolls the
    flattened array.
    """
    if _shaping.numpy_applies(a, shift):  # NumPy's own: a new array (fgrad's gives a of no shift)
        return _np.roll(a, shift, axis)
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape(a))
    s = shape(a)
    totals: dict[int, Any] = {}  # axis -> its total shift
    for sh, ax in _np.broadcast(_np.asarray(shift), _np.asarray(axis)):
        ax = _axis(int(ax), len(s), "roll")
        totals[ax] = totals.get(ax, 0) + int(sh)
    moved = {ax: sh % s[ax] for ax, sh in totals.items() if s[ax] and sh % s[ax]}
    if not moved:
        return a
    return _roll_p(a, shift=tuple(moved.values()), axis=tuple(moved))


@mirror("shape")
def rot90(m: ArrayLike, k: int = 1, axes: Sequence[int] = (0, 1)) -> Array:
    """NumPy's `rot90`: rotate by 90 degrees `k` times in the plane of `axes`, from the first
    axis towards the second."""
    m = asarray(m)
    axes = tuple(axes)
    nd = ndim(m)
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must have length 2, got {axes!r}")
    a0, a1 = _axis(axes[0], nd, "rot90", "axes[0]"), _axis(axes[1], nd, "rot90", "axes[1]")
    if a0 == a1:
        raise ValueError(f"rot90: the two axes must differ, got {axes!r}")
    k = int(k) % 4
    if k == 0:
        return flip(m, ())  # (NumPy's m[:], a view of a plain array, not m itself)
    if k == 2:
        return flip(flip(m, a0), a1)
    order = list(range(nd))
    order[a0], order[a1] = order[a1], order[a0]
    if k == 1:
        return transpose(flip(m, a1), order)
    return flip(transpose(m, order), a1)


# --- repeating ------------------------------------------------------------------------------------


@mirror("shape")
def tile(A: ArrayLike, reps: int | Sequence[int]) -> Array:
    """NumPy's `tile`: A repeated `reps` times along each axis (a reshape, a broadcast and a
    reshape, so its gradient sums the copies)."""
    if _shaping.numpy_applies(A, reps):  # NumPy's own: a new array (fgrad's is a view of A)
        return _np.tile(A, reps)
    A = asarray(A)
    reps = tuple(int(r) for r in _np.atleast_1d(reps))
    s = shape(A)
    d = max(len(reps), len(s))
    s = (1,) * (d - len(s)) + tuple(s)
    reps = (1,) * (d - len(reps)) + reps
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    spread = tuple(n for pair in zip((1,) * d, s) for n in pair)
    copies = tuple(n for pair in zip(reps, s) for n in pair)
    return reshape(broadcast_to(reshape(A, spread), copies), tuple(r * n for r, n in zip(reps, s)))


@mirror("shape")
def repeat(a: ArrayLike, repeats: ArrayLike, axis: int | None = None) -> Array:
    """NumPy's `repeat`: each element repeated `repeats` times (an int, or one count per element
    along `axis`); `axis=None` repeats the flattened array."""
    if _shaping.numpy_applies(a, repeats):  # NumPy's own: a new array (fgrad's is a view of a)
        return _np.repeat(a, repeats, axis)
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    nd = ndim(a)
    ax = _axis(axis, nd, "repeat")
    n = shape(a)[ax]
    r = _constant_index(repeats, "repeat", "repeats")
    if _np.any(r < 0):
        raise ValueError(f"repeat: repeats must be non-negative, got {r}")
    if r.size == 1:  # one count for every element: a broadcast along a new axis
        r = int(r.reshape(()))
        s = shape(a)
        head, tail = s[: ax + 1], s[ax + 1 :]
        spread = broadcast_to(reshape(a, head + (1,) + tail), head + (r,) + tail)
        return reshape(spread, s[:ax] + (n * r,) + tail)
    if r.shape != (n,):
        raise ValueError(
            f"repeat: repeats has shape {r.shape}; it must be one int or one count for each of "
            f"the {n} elements along axis {ax}"
        )
    return getitem(a, _along(ax, _np.repeat(_np.arange(n), r)))


# --- joining --------------------------------------------------------------------------------------


@mirror("shape")
def atleast_1d(*arys: ArrayLike) -> Array | tuple[Array, ...]:
    """NumPy's `atleast_1d`: scalars become shape (1,); one array in, one out, else a tuple."""
    out = tuple(_at_least(a, 1) for a in arys)
    return out[0] if len(out) == 1 else out


@mirror("shape")
def atleast_2d(*arys: ArrayLike) -> Array | tuple[Array, ...]:
    """NumPy's `atleast_2d`: (n,) becomes (1, n) and a scalar (1, 1)."""
    out = tuple(_at_least(a, 2) for a in arys)
    return out[0] if len(out) == 1 else out


@mirror("shape")
def atleast_3d(*arys: ArrayLike) -> Array | tuple[Array, ...]:
    """NumPy's `atleast_3d`: (n,) becomes (1, n, 1), (m, n) (m, n, 1) and a scalar (1, 1, 1)."""
    out = tuple(_at_least(a, 3) for a in arys)
    return out[0] if len(out) == 1 else out


def _at_least(a, k):
    a = asarray(a)
    s = shape(a)
    if len(s) >= k:
        return a
    if k == 1 or len(s) == 0:
        return reshape(a, (1,) * (k - len(s)) + s)
    if k == 2:  # (n,) -> (1, n)
        return reshape(a, (1,) + s)
    return reshape(a, (1,) + s + (1,) if len(s) == 1 else s + (1,))


def _joinable(tup, name):
    """The arrays to join: a sequence's items, or an array's slices along its first axis (NumPy
    iterates whatever it is given)."""
    if type(tup) is Box or isinstance(tup, _np.ndarray):
        if ndim(tup) == 0:
            raise TypeError(
                f"{name}: a 0-d array ({describe(tup)}) is not a sequence of arrays to join"
            )
        return [getitem(tup, i) for i in range(shape(tup)[0])]
    tup = list(tup)
    if not tup:
        raise ValueError(f"{name}: need at least one array")
    return tup


@mirror("shape")
def hstack(
    tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind"
) -> Array:
    """NumPy's `hstack`: concatenate along axis 1 (axis 0 for 1-D arrays). Given one array,
    it joins the slices along its first axis, as NumPy does."""
    arrs = [_at_least(a, 1) for a in _joinable(tup, "hstack")]
    axis = 0 if ndim(arrs[0]) == 1 else 1
    return _joined_by("hstack", arrs, axis, dtype=dtype, casting=casting)


@mirror("shape")
def vstack(
    tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind"
) -> Array:
    """NumPy's `vstack`: concatenate along axis 0 after making each array at least 2-D. Given
    one array, it joins the slices along its first axis, as NumPy does."""
    arrs = [_at_least(a, 2) for a in _joinable(tup, "vstack")]
    return _joined_by("vstack", arrs, 0, dtype=dtype, casting=casting)


def _joined_by(who, arrs, axis, **keywords):
    """concatenate(arrs, axis=axis) for `who`, which names itself in the error where the arrays
    do not fit (on the failure path only)."""
    try:
        return concatenate(arrs, axis=axis, **keywords)
    except ValueError:
        refuse_unjoinable(arrs, axis, who)
        raise


@mirror("shape")
def row_stack(
    tup: Sequence[ArrayLike], *, dtype: DTypeLike | None = None, casting: str = "same_kind"
) -> Array:
    """NumPy's `row_stack`, an alias of `vstack` (deprecated in NumPy 2, with the same
    warning here)."""
    _warnings.warn(
        "`row_stack` alias is deprecated. Use `np.vstack` directly.",
        DeprecationWarning,
        stacklevel=2,
    )
    return vstack(tup, dtype=dtype, casting=casting)


@mirror("shape")
def dstack(tup: Sequence[ArrayLike]) -> Array:
    """NumPy's `dstack`: concatenate along axis 2 after making each array at least 3-D. Given
    one array, it joins the slices along its first axis, as NumPy does."""
    return _joined_by("dstack", [_at_least(a, 3) for a in _joinable(tup, "dstack")], 2)


@mirror("shape")
def column_stack(tup: Sequence[ArrayLike]) -> Array:
    """NumPy's `column_stack`: 1-D arrays become columns, then concatenate along axis 1. Given
    one array, it joins the slices along its first axis, as NumPy does."""
    arrs = []
    for a in _joinable(tup, "column_stack"):
        a = asarray(a)
        s = shape(a)
        arrs.append(reshape(a, (s[0] if s else 1, 1)) if len(s) < 2 else a)
    return _joined_by("column_stack", arrs, 1)


@mirror("shape")
def append(arr: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    """NumPy's `append`: `values` joined to the end of `arr` (both flattened if `axis` is None)."""
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


@mirror("shape")
def insert(arr: ArrayLike, obj: ArrayLike, values: ArrayLike, axis: int | None = None) -> Array:
    """NumPy's `insert`, with every form of `obj` NumPy accepts (int, slice, sequence).

    NumPy's own `insert` places the positions of `values` among the positions of `arr`; the
    result gathers from both, so both are differentiable. The result has `arr`'s dtype.
    """
    arr, values = asarray(arr), asarray(values)
    obj = _index_list(obj)
    if type(obj) is Box or _core.is_foreign_array(obj):
        obj = _constant_index(obj, "insert", "obj")
    a_pos = _positions(shape(arr))
    v_pos = _positions(shape(values)) + a_pos.size
    where_from = _np.insert(a_pos, obj, v_pos, axis=axis)
    source = concatenate([ravel(arr), ravel(astype(values, dtype_of(arr)))])
    return getitem(source, where_from)


@mirror("shape")
def delete(arr: ArrayLike, obj: ArrayLike, axis: int | None = None) -> Array:
    """NumPy's `delete`, with every form of `obj` NumPy accepts (int, slice, sequence, mask)."""
    arr = asarray(arr)
    obj = _index_list(obj)
    if type(obj) is Box or _core.is_foreign_array(obj):
        obj = _constant_index(obj, "delete", "obj", masks=True)
    return getitem(ravel(arr), _np.delete(_positions(shape(arr)), obj, axis=axis))


@mirror("shape")
def broadcast_arrays(*args: ArrayLike, subok: bool = False) -> tuple[Array, ...]:
    """NumPy's `broadcast_arrays`: a tuple of the arguments broadcast to their common shape."""
    if not any(is_traced(a) for a in args):
        return _np.broadcast_arrays(*args, subok=subok)
    refuse_layout("broadcast_arrays", subok=(subok, False))
    arrays = [asarray(a) for a in args]
    target = _np.broadcast_shapes(*[shape(a) for a in arrays])
    return tuple(broadcast_to(a, target) for a in arrays)


@mirror("creation")
def meshgrid(
    *xi: ArrayLike, copy: bool = True, sparse: bool = False, indexing: str = "xy"
) -> tuple[Array, ...]:
    """NumPy's `meshgrid` (a tuple), with `indexing` 'xy' or 'ij' and `sparse`. (`copy=False`
    lets NumPy return views; the values are the same, and fgrad never writes into them.)"""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    nd = len(xi)
    ones = (1,) * nd
    out = [reshape(asarray(x), ones[:i] + (-1,) + ones[i + 1 :]) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = reshape(out[0], (1, -1) + ones[2:])
        out[1] = reshape(out[1], (-1, 1) + ones[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    return tuple(out)


# --- splitting ------------------------------------------------------------------------------------


@mirror("shape")
def array_split(ary: ArrayLike, indices_or_sections: int | ArrayLike, axis: int = 0) -> list[Array]:
    """NumPy's `array_split`: a list of sub-arrays along `axis`; `indices_or_sections` is a
    number of sections (which need not divide the axis) or the indices to split at."""
    ary = asarray(ary)
    ax = _axis(axis, ndim(ary), "array_split")
    n = shape(ary)[ax]
    indices_or_sections = _shaping.read_int(indices_or_sections)  # (a jitted function's int)
    if isinstance(indices_or_sections, (int, _np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(
                f"array_split: the number of sections must be larger than 0, got {sections}"
            )
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = [0] + [int(b) for b in _np.cumsum(sizes)]
    else:
        bounds = [0] + [int(i) for i in _constant_index(indices_or_sections, "array_split")] + [n]
    return [getitem(ary, _along(ax, slice(lo, hi))) for lo, hi in zip(bounds[:-1], bounds[1:])]


@mirror("shape")
def split(ary: ArrayLike, indices_or_sections: int | ArrayLike, axis: int = 0) -> list[Array]:
    """NumPy's `split`: like `array_split`, but a number of sections must divide the axis."""
    ary = asarray(ary)
    indices_or_sections = _shaping.read_int(indices_or_sections)  # (a jitted function's int)
    if isinstance(indices_or_sections, (int, _np.integer)):
        n = shape(ary)[_axis(axis, ndim(ary), "split")]
        if indices_or_sections <= 0 or n % indices_or_sections:
            raise ValueError(
                f"split: array split does not result in an equal division: {n} elements along "
                f"axis {axis} into {indices_or_sections} sections; use array_split"
            )
    return array_split(ary, indices_or_sections, axis)


@mirror("shape")
def hsplit(ary: ArrayLike, indices_or_sections: int | ArrayLike) -> list[Array]:
    """NumPy's `hsplit`: split along axis 1 (axis 0 for 1-D arrays)."""
    ary = asarray(ary)
    if ndim(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if ndim(ary) > 1 else 0)


def _split_needing(ary, indices_or_sections, axis, min_ndim, name):
    """`split` along `axis`, refusing (as NumPy does) an array of fewer than `min_ndim`
    dimensions: vsplit splits axis 0 but only of a 2-d array or more."""
    ary = asarray(ary)
    if ndim(ary) < min_ndim:
        raise ValueError(
            f"{name}: ary must have {min_ndim} or more dimensions, got {describe(ary)}"
        )
    return split(ary, indices_or_sections, axis)


@mirror("shape")
def vsplit(ary: ArrayLike, indices_or_sections: int | ArrayLike) -> list[Array]:
    """NumPy's `vsplit`: split along axis 0 of an array of 2 or more dimensions."""
    return _split_needing(ary, indices_or_sections, 0, 2, "vsplit")


@mirror("shape")
def dsplit(ary: ArrayLike, indices_or_sections: int | ArrayLike) -> list[Array]:
    """NumPy's `dsplit`: split along axis 2 of an array of 3 or more dimensions."""
    return _split_needing(ary, indices_or_sections, 2, 3, "dsplit")


# --- gathering ------------------------------------------------------------------------------------


@mirror("shape")
def take(
    a: ArrayLike, indices: ArrayLike, axis: int | None = None, out: None = None, mode: str = "raise"
) -> Array:
    """NumPy's `take`: elements at `indices` along `axis` (of the flattened array when None).
    `mode` 'raise' allows negative indices, 'wrap' wraps them around, 'clip' clips to
    [0, n-1] (as in NumPy, so a negative index means the first element). Repeated indices
    add up in the gradient.
    """
    if out is not None:
        raise TypeError("take(..., out=...) cannot write into an array; use the returned value")
    a = given = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, ndim(a), "take")
    n = shape(a)[ax]
    if _core.holds_batch(indices) or _core.holds_staged(indices):
        # one index array per row (as argmax gives under vmap), or indices a `jit` record
        # computes: gathered by fgrad operations, not read
        return getitem(a, _along(ax, _batched_indices(indices, n, mode, "take")))
    if mode == "raise" and _dasks_own_take(a, indices):
        return _np.take(a, indices, axis=ax)
    idx = _constant_index(indices, "take")
    if mode in ("wrap", "clip"):
        idx = idx.astype(_np.intp, copy=False)  # (n or n - 1 may not fit an int8 index)
    if mode == "wrap":
        idx = idx % n if n else idx
    elif mode == "clip":
        idx = _np.clip(idx, 0, max(n - 1, 0))
    elif mode == "raise":
        if idx.size and (idx.min() < -n or idx.max() >= n):
            _refuse_out_of_bounds(given, idx, a is not given, ax, n)
    else:
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    return getitem(a, _along(ax, idx))


def _refuse_out_of_bounds(a, idx, flattened, ax, n):
    """take's IndexError for the indices `idx` (some out of [-n, n)) into axis `ax` of length
    n of `a` (of a flattened, with axis=None): the first such index, and what to do."""
    bad = idx[(idx < -n) | (idx >= n)]
    where = "the flattened a" if flattened else f"axis {ax} of a"
    raise IndexError(
        f"take: index {bad.flat[0]} is out of bounds for {where} ({describe(a)}), whose "
        f"length is {n} (out of bounds: {bad.size} of {idx.size} indices); valid indices "
        f"are in [{-n}, {n - 1}]: pass mode='wrap' or mode='clip' to map the others in"
    )


def _dasks_own_take(a, indices):
    """Whether `take` is Dask's own, lazy: lazy indices into a lazy array, neither traced (a
    traced gather's gradient would scatter by the indices' values). Dask's take has no `mode`
    and checks no bound before it computes."""
    return (
        type(a) is not Box
        and type(indices) is not Box
        and _core.is_foreign_array(a)
        and _core.is_foreign_array(indices)
    )


def _batched_indices(indices, n, mode, name):
    """Integer indices batched by `vmap`, wrapped or clipped by `mode` as `take` does (NumPy's
    check of 'raise' would read every row: an index out of bounds is NumPy's IndexError when
    the gather runs)."""
    indices = constant_of(indices)
    if dtype_of(indices).kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype {dtype_of(indices)}")
    if mode in ("wrap", "clip"):
        indices = astype(indices, _np.intp)  # (n or n - 1 may not fit an int8 index)
    if mode == "wrap":
        return indices % n if n else indices
    if mode == "clip":
        return minimum(maximum(indices, 0), max(n - 1, 0))
    if mode != "raise":
        raise ValueError(f"{name}: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    return indices


@mirror("shape")
def take_along_axis(arr: ArrayLike, indices: ArrayLike, axis: int = -1) -> Array:
    """NumPy's `take_along_axis`: `indices` (as from `argsort`) pick along `axis` and broadcast
    against the other axes; `axis=None` works on the flattened array."""
    arr = asarray(arr)
    if _core.holds_batch(indices):
        return _take_along_batched(arr, indices, axis)
    staged = _core.holds_staged(indices)  # computed in a `jit` record: kept so, not read
    idx = constant_of(indices) if staged else _constant_index(indices, "take_along_axis")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(
                f"take_along_axis: with axis=None, indices must be 1-D, got shape {idx.shape}"
            )
        return getitem(ravel(arr), idx)
    s = shape(arr)
    ax = _axis(axis, len(s), "take_along_axis")
    if idx.ndim != len(s):
        raise ValueError(
            f"take_along_axis: indices (shape {idx.shape}) and arr ({describe(arr)}) must have "
            "the same number of dimensions"
        )
    # NumPy's own take_along_axis of the positions, then one gather from the flattened array:
    # its adjoint is a 1-D scatter-add, several times faster than a scatter through a tuple
    # of broadcast index arrays.
    if not staged:
        return getitem(ravel(arr), _np.take_along_axis(_positions(s), idx, ax))
    # Indices a `jit` record computes: the same positions, computed in the record, as each
    # element's position with its coordinate along the axis replaced by its index (counted
    # from the end when negative, as in NumPy). An index out of range is read, so that
    # NumPy's own take_along_axis raises its error.
    n = s[ax]
    # (in intp: idx * stride and idx + n in int8 or uint8 would wrap round to another position)
    idx = astype(idx, _np.intp)
    if n == 0 or bool(_np.any(logical_or(less(idx, -n), greater_equal(idx, n)))):
        # (an empty axis has no position to start from: its indices are read, an empty
        # array, or one NumPy's take_along_axis refuses)
        return take_along_axis(arr, primal(idx), axis)
    stride = int(_np.prod(s[ax + 1 :], dtype=_np.intp))
    base = _np.take(_positions(s), [0], axis=ax)
    return getitem(ravel(arr), base + where(less(idx, 0), idx + n, idx) * stride)


def _take_along_batched(arr, indices, axis):
    """take_along_axis with integer indices batched by `vmap`: an integer-array index, an
    arange along each other axis."""
    indices = _batched_indices(indices, 0, "raise", "take_along_axis")
    if axis is None:
        if ndim(indices) != 1:
            raise ValueError(
                f"take_along_axis: with axis=None, indices must be 1-D, got {describe(indices)}"
            )
        return getitem(ravel(arr), indices)
    s = shape(arr)
    ax = _axis(axis, len(s), "take_along_axis")
    if ndim(indices) != len(s):
        raise ValueError(
            f"take_along_axis: indices ({describe(indices)}) and arr ({describe(arr)}) must "
            "have the same number of dimensions"
        )
    grids = tuple(
        indices if j == ax else _np.arange(n).reshape((1,) * j + (n,) + (1,) * (len(s) - j - 1))
        for j, n in enumerate(s)
    )
    return getitem(arr, grids)


@mirror("shape")
def sort(
    a: ArrayLike,
    axis: int = -1,
    kind: str | None = None,
    order: str | Sequence[str] | None = None,
    *,
    stable: bool | None = None,
) -> Array:
    """NumPy's `sort` (`axis=None` sorts the flattened array). The values are gathered by a
    stable argsort, so the gradient follows the permutation; equal values keep their order
    (a tie gets no split gradient: each tied element keeps its own cotangent). `kind` and
    `stable` choose NumPy's algorithm, which changes no sorted value: they are checked as
    NumPy checks them, and the gradient is always a stable sort's."""
    if order is not None:
        raise ValueError("sort: order= is for structured arrays, which have no derivative")
    # NumPy's own errors for bad values (any string reaches NumPy, which names the valid ones)
    _np.sort(_np.zeros(0), kind=kind, stable=stable)  # type: ignore[arg-type]
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    if ndim(a) == 0:
        raise ValueError("sort: cannot sort a 0-d array along an axis; pass axis=None")
    v = mask_values(a)  # (one permutation per row under `vmap`, or a `jit` record's)
    _core.refuse_lazy("sort", "its rule orders the values with np.argsort", v)
    perm = _np.argsort(v, axis=axis, kind="stable")
    return take_along_axis(a, perm, axis)


@mirror("shape")
def partition(
    a: ArrayLike,
    kth: int | Sequence[int],
    axis: int = -1,
    kind: str = "introselect",
    order: str | Sequence[str] | None = None,
) -> Array:
    """NumPy's `partition`: along `axis`, the k-th element is where a sorted array would have
    it, smaller ones before and larger ones after. The values are NumPy's own arrangement,
    gathered from `a`, so the gradient follows each element to its place (a tie: the element
    a stable sort ranks there).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.partition(x, 1)[1])(np.array([3.0, 1.0, 2.0]))
    array([0., 0., 1.])
    """
    if order is not None:
        raise ValueError("partition: order= is for structured arrays, which have no derivative")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), -1
    ax = _axis(axis, ndim(a), "partition")
    if not _core.holds_batch(a):  # (its type, not its values: reading them is a guard)
        _core.refuse_lazy(
            "partition", "its rule arranges the values with np.partition", _core.innermost(a)
        )
    if type(a) is not Box:
        return _np.partition(a, kth, axis=ax, kind=kind)  # type: ignore[call-overload]
    # Where each value of NumPy's arrangement comes from: the element of `a` of the same rank
    # (stable argsorts rank equal values, NaNs last, the same way in both). The arrangement is
    # `np.partition`'s own (`argpartition`'s may differ: with a NaN, it does). Found by fgrad's
    # operations without derivative on the values, so that under `vmap` each row is arranged
    # as its own, and a `jit` record arranges the values of each replay (NumPy's calls on the
    # plain values here would be reads of every element: a guard on all of them).
    v = constant_of(a)
    arranged = _partitioned(v, kth, axis=ax, kind=kind)
    by_rank = argsort(v, axis=ax, kind="stable")
    rank_of = argsort(argsort(arranged, axis=ax, kind="stable"), axis=ax, kind="stable")
    return take_along_axis(a, take_along_axis(by_rank, rank_of, ax), ax)


argpartition = nondiff_function(_np.argpartition)
# NumPy's partition of plain values, without derivative: `partition`'s arrangement
_partitioned = nondiff_function(_np.partition)
for _fn in (argpartition, _partitioned):
    _shaping.axis_batch_rule(_fn)


@mirror("shape")
def rollaxis(a: ArrayLike, axis: int, start: int = 0) -> Array:
    """NumPy's `rollaxis`: `axis` moved to before position `start` (a transpose; prefer
    `moveaxis`, as NumPy's documentation does)."""
    a = asarray(a)
    n = ndim(a)
    ax = _axis(axis, n, "rollaxis")
    start = _operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start <= n:
        raise ValueError(
            f"rollaxis: 'start' arg requires {-n} <= start < {n + 1}, but "
            f"{start - n if start < 0 else start} was passed in"
        )
    if ax < start:
        start -= 1  # counted with the axis removed
    order = [i for i in range(n) if i != ax]
    order.insert(start, ax)
    return transpose(a, order)


@mirror("shape")
def unique(
    ar: ArrayLike,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: int | None = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
) -> Array | tuple[Array, ...]:
    """NumPy's `unique`, with all its keywords. The unique values are differentiable: each is
    gathered from its first occurrence in `ar` (the element `return_index` names), as in JAX;
    the indices, inverse and counts are NumPy's own integer arrays.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.unique(x) ** 2))(np.array([2.0, 1.0, 2.0]))
    array([4., 2., 0.])
    """
    why = "the number of unique values is known only once they are computed"
    _core.refuse_lazy("unique", why, _core.innermost(ar))  # (Dask's own lacks the keywords)
    if not is_traced(ar):
        # (NumPy's stub overloads on Literal flags; the flags pass through to NumPy)
        return _np.unique(  # type: ignore[call-overload]
            ar,
            return_index,
            return_inverse,
            return_counts,
            axis,
            equal_nan=equal_nan,
            sorted=sorted,
        )
    ar = asarray(ar)
    if _core.holds_batch(ar) and axis is None and sorted:
        return _unique_batched(ar, return_index, return_inverse, return_counts, equal_nan)
    found = _unique_p(
        ar,
        return_index=return_index,
        return_inverse=return_inverse,
        return_counts=return_counts,
        axis=axis,
        equal_nan=equal_nan,
        sorted=sorted,
    )
    index = found[0]
    values = getitem(ravel(ar), index) if axis is None else take(ar, index, axis=axis)
    extras = [index] if return_index else []
    extras += list(found[1:])
    return tuple([values] + extras) if extras else values


def _unique_indices(ar, return_index, **flags):
    """NumPy's `unique` of plain values (`flags`: its other keywords), as the indices that
    find its values in `ar` (each one's first occurrence), then the inverse and the counts if
    asked for."""
    found = _np.unique(ar, return_index=True, **flags)
    index = found[1]
    hashing = not flags["sorted"] and flags["axis"] is None
    if hashing and not (return_index or flags["return_inverse"] or flags["return_counts"]):
        # NumPy then finds the values by hashing, in an order of its own: find each one's
        # first occurrence (the sorting path's index) by sorting those values alike
        hashed = _np.unique(ar, equal_nan=flags["equal_nan"], sorted=False)
        if hashed.shape == index.shape:
            index = _np.empty_like(index)
            index[_np.argsort(hashed, kind="stable")] = found[1]
    return (index, *found[2:])


_ONE_ARRAY_AT_A_TIME = (
    "NumPy finds the unique values of one array at a time (a record made outside vmap, "
    "replayed inside it; rows with other counts of unique values cannot stack)"
)


def _unique_output(ar, which, **flags):
    """The output number `which` of `_unique_indices` (one array: rows of it stack)."""
    return _unique_indices(ar, **flags)[which]


# One output of `_unique_p` at a time, for its rows under vmap: `_unique_p` gives a tuple (the
# indices, and the inverse and counts if asked for), which the rows' stacking would take as
# one array; each output's rows are stacked on their own.
_unique_output_p = nondiff(_unique_output, name="unique_indices")
register_rules(
    _unique_output_p,
    batch=lambda args, dims, **params: _batching.rows_one_by_one(
        _unique_output_p,
        args,
        dims,
        params,
        _shaping.batch_size(args, dims),
        _ONE_ARRAY_AT_A_TIME,
    ),
    shape_from_values=True,
)


def _unique_rows(args, dims, **params):
    n = _shaping.batch_size(args, dims)
    outputs = 1 + params["return_inverse"] + params["return_counts"]
    stacked = [
        _batching.rows_one_by_one(
            _unique_output_p, args, dims, {**params, "which": k}, n, _ONE_ARRAY_AT_A_TIME
        )
        for k in range(outputs)
    ]
    return tuple(out for out, _ in stacked), tuple(dim for _, dim in stacked)


# The indices of `unique`, an operation of a `jit` record (reading the values for NumPy's
# unique here would be a guard on every element); the shapes of its results depend on the
# values: a record holds for those shapes (its guards). Under vmap its rows
# are found one at a time, each output stacked on its own (`_unique_rows`).
_unique_p = nondiff(_unique_indices, name="unique_indices")
register_rules(_unique_p, batch=_unique_rows, shape_from_values=True)


def _unique_batched(ar, return_index, return_inverse, return_counts, equal_nan):
    """`unique` of the flattened rows of a value batched by `vmap`, by a stable sort of each
    row: the first element of each run of equal values is a unique value's first occurrence.
    The rows must have as many unique values as each other (the count is read: rows that
    differ in it are run again in groups)."""
    flat = ravel(ar)
    v = constant_of(flat)
    n = shape(v)[0]
    perm = argsort(v, kind="stable")
    ordered = take_along_axis(v, perm, -1)
    new = not_equal(ordered[1:], ordered[:-1])
    if equal_nan and dtype_of(v).kind in "fc":  # NaNs sort last, and count as one value: a
        # NaN after a NaN begins no run (the first NaN, after a number, does)
        new = logical_and(new, logical_not(logical_and(isnan(ordered[1:]), isnan(ordered[:-1]))))
    first = concatenate([_np.ones(1, bool), new]) if n else new
    count = int(primal(sum(astype(first, _np.intp))))
    starts = argsort(logical_not(first), kind="stable")[:count]  # where each run begins
    index = take_along_axis(perm, starts, -1)
    extras = [index] if return_index else []
    if return_inverse:
        # the run of each sorted element: how many runs begin at or before it, less one
        begun = less_equal(reshape(starts, (count, 1)), _np.arange(n))
        run = sum(astype(begun, _np.intp), axis=0) - 1
        inverse = take_along_axis(run, argsort(perm, kind="stable"), -1)
        extras.append(reshape(inverse, shape(ar)) if ndim(ar) != 1 else inverse)
    if return_counts:
        ends = concatenate([starts[1:], _np.full(1, n, dtype_of(starts))])
        extras.append(ends - starts)
    values = getitem(flat, index)
    return tuple([values] + extras) if extras else values


# --- diagonals and triangles ----------------------------------------------------------------------


@mirror("shape")
def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """NumPy's `diagonal`: the diagonal of the (axis1, axis2) planes, as the last axis."""
    a = asarray(a)
    nd = ndim(a)
    if nd < 2:
        raise ValueError(f"diagonal: a must have at least 2 dimensions, got {describe(a)}")
    i1, i2 = _axis(axis1, nd, "diagonal", "axis1"), _axis(axis2, nd, "diagonal", "axis2")
    if i1 == i2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    s = shape(a)
    n1, n2 = s[i1], s[i2]
    offset = int(offset)
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    rows = _np.arange(length) + max(-offset, 0)
    cols = _np.arange(length) + max(offset, 0)
    return getitem(moveaxis(a, (i1, i2), (-2, -1)), (Ellipsis, rows, cols))


@mirror("shape")
def diag(v: ArrayLike, k: int = 0) -> Array:
    """NumPy's `diag`: the k-th diagonal of a 2-D array, or a 2-D array with the 1-D `v` on its
    k-th diagonal."""
    v = asarray(v)
    nd = ndim(v)
    if nd == 2:
        return diagonal(v, k)
    if nd != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got {describe(v)}")
    n = shape(v)[0]
    size = n + abs(int(k))
    rows = _np.arange(n) + max(-int(k), 0)
    cols = _np.arange(n) + max(int(k), 0)
    # set, not add: 0.0 + -0.0 would be 0.0, where NumPy keeps a -0.0 of v
    return at(_np.zeros((size, size), dtype=dtype_of(v)))[rows, cols].set(v)


@mirror("reduction")
def trace(
    a: ArrayLike,
    offset: int = 0,
    axis1: int = 0,
    axis2: int = 1,
    dtype: DTypeLike | None = None,
    out: None = None,
) -> Array:
    """NumPy's `trace`: the sum along a diagonal. `out=` is NumPy's on plain arrays (written
    into, and returned), and refused where a value is traced."""
    if out is not None:
        if _shaping.numpy_applies(a, out):
            return _np.trace(a, offset, axis1, axis2, dtype, out)
        _shaping.refuse_out(out, "trace")
    # dtype is the accumulator's, as NumPy's: summing in a's dtype and casting after loses the
    # bits of float32 and overflows float16 where the requested type would not
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _triangle(m, mask_of, name):
    m = asarray(m)
    s = shape(m)
    if len(s) == 0:
        raise ValueError(f"{name}: m must have at least 1 dimension, got {describe(m)}")
    mask = mask_of(*s[-2:]) if len(s) >= 2 else mask_of(s[0], s[0])
    return where(mask, m, _np.zeros((), dtype=dtype_of(m)))


@mirror("shape")
def tril(m: ArrayLike, k: int = 0) -> Array:
    """NumPy's `tril`: the lower triangle (on and below the k-th diagonal) of the last two axes."""
    return _triangle(m, lambda n1, n2: _np.tri(n1, n2, k=k, dtype=bool), "tril")


@mirror("shape")
def triu(m: ArrayLike, k: int = 0) -> Array:
    """NumPy's `triu`: the upper triangle (on and above the k-th diagonal) of the last two axes."""
    return _triangle(m, lambda n1, n2: ~_np.tri(n1, n2, k=k - 1, dtype=bool), "triu")


# --- choosing -------------------------------------------------------------------------------------


@mirror("function")
def select(
    condlist: Sequence[ArrayLike], choicelist: Sequence[ArrayLike], default: ArrayLike = 0
) -> Array:
    """NumPy's `select`: where the first true condition picks its choice, else `default`.
    The conditions are constants; choices and default are differentiable."""
    if len(condlist) != len(choicelist):
        raise ValueError(
            f"select: condlist ({len(condlist)} entries) and choicelist ({len(choicelist)}) "
            "must have the same length"
        )
    if len(condlist) == 0:  # (not `not condlist`: a 1-D bool array is a list of conditions)
        raise ValueError("select: condlist and choicelist are empty; pass at least one condition")
    _broadcast_shape(
        "select", {"condlist": condlist, "choicelist": choicelist, "default": [default]}
    )
    # NumPy's result dtype, Python numbers weak (NEP 50): the chained `where`s made two Python
    # numbers an int64 or float64 array first (float64 for [x32, 3], where NumPy gives float32)
    dtype = _np.result_type(
        *(
            v if type(v) in (int, float, complex, bool) else dtype_of(v)
            for v in (*choicelist, default)
        )
    )
    out = (
        _np.asarray(default, dtype=dtype)
        if type(default) in (int, float, complex, bool)
        else default
        if dtype_of(default) == dtype
        else astype(default, dtype)
    )
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        c = mask_values(cond)
        if dtype_of(c) != _np.dtype(bool):
            raise TypeError(f"select: conditions must be boolean arrays, got dtype {dtype_of(c)}")
        out = where(c, choice, out)
    return out


def _broadcast_shape(name: str, groups: dict) -> tuple:
    """The shape the arrays of `groups` (argument name: its arrays) broadcast to, or a
    ValueError that names `name`, each argument and its shapes."""
    shapes = {arg: [shape_of(x) for x in xs] for arg, xs in groups.items()}
    try:
        return _np.broadcast_shapes(*(sh for group in shapes.values() for sh in group))
    except ValueError:
        listed = "; ".join(
            f"{arg} {group[0]}" if arg == "default" else f"{arg} shapes {group}"
            for arg, group in shapes.items()
        )
        raise ValueError(
            f"{name}: the conditions, choices and default must broadcast to one shape, got "
            f"{listed}; give them shapes that broadcast together"
        ) from None


# --- the scatter updates of x.at[idx] -------------------------------------------------------------

_COMBINE = {"multiply": multiply, "divide": divide, "power": power, "min": minimum, "max": maximum}


def _scatter(x, idx, v, op):
    """x with x[idx] replaced by op(x[idx], v), as NumPy's `np.<ufunc>.at(x, idx, v)` would
    leave it: repeated indices apply their updates one after the other, in index order.

    Without repeats this is a gather, one elementwise op and a scatter. With repeats, multiply,
    divide and power apply the k-th occurrences of every index in round k (each round has no
    repeats), so every product is formed by multiplications and its derivative is exact at
    zeros. min and max reduce a table of x[t] and all the updates at t at once, so that ties
    share the gradient evenly among x[t] and the tied updates (JAX's convention).
    """
    combine = _COMBINE[op]
    x_shape = shape(x)
    targets = _positions(x_shape)[idx]
    flat_t = _np.ravel(targets)
    if _np.unique(flat_t).size == flat_t.size:
        return at(x)[idx].set(combine(getitem(x, idx), v))
    x_flat = ravel(x)
    u_flat = ravel(broadcast_to(asarray(v), targets.shape))
    order = _np.argsort(flat_t, kind="stable")
    sorted_t = flat_t[order]
    first = _np.r_[True, sorted_t[1:] != sorted_t[:-1]]
    start_of_group = _np.maximum.accumulate(_np.where(first, _np.arange(flat_t.size), 0))
    rank = _np.empty(flat_t.size, dtype=_np.intp)
    rank[order] = _np.arange(flat_t.size) - start_of_group  # k for the k-th update of a target
    if op in ("min", "max"):
        # One row per target: x[t] and its updates; the extremum of each row is the new x[t].
        # Rows with the same number of updates are reduced together, so no row needs padding
        # (a +-inf pad would be a value debug_nans stops at).
        uniq = sorted_t[first]
        dtype = dtype_of(x)
        n_x, n_u = int(_np.prod(x_shape, dtype=_np.int64)), flat_t.size
        table = _np.zeros((uniq.size, int(rank.max()) + 2), dtype=_np.intp)
        table[:, 0] = uniq
        row = _np.searchsorted(uniq, flat_t)
        table[row, rank + 1] = n_x + _np.arange(n_u)
        counts = _np.bincount(row, minlength=uniq.size)
        source = concatenate([x_flat, astype(u_flat, dtype)])
        reduce = _rd.min if op == "min" else _rd.max
        for c in _np.unique(counts):
            rows = _np.flatnonzero(counts == c)
            extremum = reduce(getitem(source, table[rows, : c + 1]), axis=1)
            x_flat = at(x_flat)[uniq[rows]].set(extremum)
    else:
        for k in range(int(rank.max()) + 1):
            sel = _np.flatnonzero(rank == k)
            tg = flat_t[sel]
            x_flat = at(x_flat)[tg].set(combine(getitem(x_flat, tg), getitem(u_flat, sel)))
    return reshape(x_flat, x_shape)


def _scatter_update(x, idx, v, op):
    """x.at[idx].<op>(v) for `fgrad.numpy.shaping._IndexUpdate`, which cannot import this
    module (this module imports it), so it is installed there."""
    return _scatter(x, _normalize_index(idx), v, op)


_shaping._INSTALLED["scatter"] = _scatter_update
_shaping._INSTALLED["combine"] = _COMBINE
_shaping._INSTALLED["where"] = where


# --- no derivative: indices and index constructors ------------------------------------------------

argmax = nondiff_function(_np.argmax)
argmin = nondiff_function(_np.argmin)
argsort = nondiff_function(_np.argsort)
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
for _fn in (argmax, argmin, argsort, nanargmax, nanargmin):
    _shaping.axis_batch_rule(_fn)


def _one_count_per_row(fn):
    """`fn` (nonzero, argwhere, flatnonzero) reading first, under `vmap`, each row's number of
    nonzero elements: rows that differ in it cannot share one result array, so reading it
    splits the batch into rows that agree (see `fgrad.batching`), and vmap then refuses
    outputs of different shapes with its message. The count read is passed to the primitive,
    whose batching rule (`_found_batch`) sizes the result by it: the rule sees every row,
    those on another path of a split batch too, and sizing by the largest count padded the
    active rows with positions of zeros, silently."""
    theirs = getattr(_np, fn.__name__)

    def counted(a: ArrayLike) -> Any:  # NumPy's signature: fn(a)
        if type(a) is Box and _core.holds_batch(a):
            if theirs is _np.nonzero and ndim(a) == 0:  # (a row of no axis has no positions)
                raise ValueError(
                    "Calling nonzero on 0d arrays is not allowed (each row here has "
                    f"{describe(a)}). Use fgrad.numpy.atleast_1d(x).nonzero() instead"
                )
            count = int(sum(not_equal(a, 0)))
            return fn.primitive(a, count=count)
        return fn(a)

    counted.__name__ = counted.__qualname__ = fn.__name__
    counted.__doc__ = fn.__doc__
    counted.__signature__ = _inspect.signature(theirs)
    counted.primitive = fn.primitive
    return mirror("constant")(counted)


def _found_batch(fn):
    """The rule of nonzero, argwhere and flatnonzero on rows batched by `vmap`: the flat
    positions of each row's nonzero elements, in order, by a stable argsort of the zero mask,
    as many as `count`: the active rows' count, read before by `_one_count_per_row`, so the
    rows that are used agree on it; the others (rows on another path of a split batch) are
    padded or cut, and discarded. Without a count, as many as the largest."""
    prim = fn.primitive

    def rule(args, dims, count=None):
        (a,), (d,) = args, dims
        a = batch_to_front(a, d)
        row = shape(a)[1:]
        found = not_equal(reshape(a, (shape(a)[0], -1)), 0)
        if count is None:  # not through `_one_count_per_row` (a `jit` record's mask): every row
            count = int(_np.max(primal(sum(astype(found, _np.intp), axis=1)), initial=0))
        flat = argsort(logical_not(found), axis=1, kind="stable")[:, :count]
        if fn is flatnonzero:
            return flat, 0
        strides = _np.cumprod((1,) + row[::-1])[-2::-1] if row else ()
        coords = [(flat // int(k)) % n for k, n in zip(strides, row)]
        if fn is nonzero:
            return tuple(coords), (0,) * len(coords)
        if not coords:  # 0-d rows: NumPy's argwhere gives (count, 0) positions per row
            return _np.zeros((shape(a)[0], count, 0), dtype_of(flat)), 0
        return stack(coords, axis=-1), 0

    register_rules(prim, batch=rule)


argwhere = _one_count_per_row(nondiff_function(_shaping.counted_positions(_np.argwhere)))
nonzero = _one_count_per_row(nondiff_function(_shaping.counted_positions(_np.nonzero)))
flatnonzero = _one_count_per_row(_shaping._flatnonzero)
for _fn in (argwhere, nonzero):
    register_rules(_fn.primitive, shape_from_values=True)
for _fn in (nonzero, argwhere, flatnonzero):
    _found_batch(_fn)


def _is_chunked(x):
    """Whether x is a chunked array of another library (Dask's), whose `searchsorted` needs
    its own path; other libraries' arrays go through NumPy's `__array_function__`."""
    return _core.is_foreign_array(x) and getattr(x, "chunks", None) is not None


def _searchsorted(a, v, side="left", sorter=None):
    """NumPy's `searchsorted`. Dask's reads both operands as its arrays, so with an operand
    (or the sorter) a chunked array the others become ones (in one chunk), and the result
    stays lazy; a sorter, which Dask's does not take, is applied first: the insertion points
    among a[sorter] are those NumPy finds with it."""
    if not any(_is_chunked(x) for x in (a, v, sorter)):  # NumPy's (through the protocols)
        return _np.searchsorted(a, v, side, sorter)
    foreign = next(x for x in (a, v, sorter) if _is_chunked(x))
    a, v = (x if _is_chunked(x) else _np.asarray(x, like=foreign) for x in (a, v))
    if sorter is not None:
        a = _np.take(a, sorter)
    if v.ndim == 0:  # (Dask's looks a number up as a vector of one: its block writes into it)
        return _np.searchsorted(a, _np.reshape(v, (1,)), side)[0]
    return _np.searchsorted(a, v, side)


searchsorted = nondiff_function(_searchsorted, name="searchsorted")


def _searchsorted_batch(args, dims, side="left", sorter=None):
    """Each row's v looked up in that row's sorted a: with a the same for every row, NumPy's
    own call on all the v at once; with a batched, the count of each row's elements of a
    below v (at or below, for side='right'), which is the insertion point in a sorted row."""
    a, v = args[0], args[1]
    da, dv = dims[0], dims[1]
    n = shape_of(a)[da] if da is not None else shape_of(v)[dv]
    if len(args) > 2 or sorter is not None:
        params = {"side": side, "sorter": sorter}
        why = "a sorter, or side given positionally"
        return _batching.rows_one_by_one(searchsorted.primitive, args, dims, params, n, why)
    if da is None:
        return searchsorted(a, v, side=side), dv
    rows = batch_to_front(a, da)  # (n, k): one sorted row of a per batch row
    v = _shaping.every_row(v, dv, n)
    v_nd = ndim(v) - 1
    a_spread = reshape(rows, (n,) + (1,) * v_nd + (shape(rows)[1],))
    below = (less if side == "left" else less_equal)(a_spread, _shaping.expand_dims(v, -1))
    return sum(below, axis=-1), 0


register_rules(searchsorted.primitive, batch=_searchsorted_batch)

lexsort = nondiff_function(_np.lexsort)


def _lexsort_batch(args, dims, axis=-1):
    """np.lexsort sorts every key's rows along `axis` at once: the batch axis goes just after
    the axis that lists the keys."""
    (keys,), (d,) = args, dims
    keys = batch_to_front(keys, d)
    if ndim(keys) == 2:  # one 1-D array per row: NumPy reads its elements as scalar keys
        why = "a 1-D row, whose elements NumPy reads as scalar keys"
        return _batching.rows_one_by_one(
            lexsort.primitive, args, dims, {"axis": axis}, shape(keys)[0], why
        )
    keys = moveaxis(keys, 0, 1)
    return lexsort(keys, axis=axis if axis < 0 else axis + 1), 0


register_rules(lexsort.primitive, batch=_lexsort_batch)


def sizes_function(theirs: Any) -> Any:
    """NumPy's function of sizes `theirs` (`indices`, `tri`, `hanning`, ...), declared without
    a derivative, every parameter read as a setting (`nondiff_function`'s `settings`), as
    `arange` and `eye` read theirs: under `vmap`, rows that agree on the sizes share one call,
    and rows that read different sizes go on apart (`BatchLevel.read`), so a function whose
    output has one shape in every row (`sum(hanning(n))`) gives the loop's answer; under
    `jit`, a traced size is a guard of the record."""
    settings = tuple(_inspect.signature(theirs).parameters)
    fn = nondiff_function(theirs, settings=settings)
    prim = fn.primitive

    def rule(args, dims, **params):
        # (only a caller of the primitive itself gets here: `fn` reads every size first)
        size = _shaping.batch_size(args, dims)
        why = "sizes given to the primitive itself, not read first"
        return _batching.rows_one_by_one(prim, args, dims, params, size, why)

    register_rules(prim, batch=rule)
    return fn


tril_indices = sizes_function(_np.tril_indices)
triu_indices = sizes_function(_np.triu_indices)
diag_indices = sizes_function(_np.diag_indices)
indices = sizes_function(_np.indices)


# --- functions applied over arrays: apply_along_axis and vectorize --------------------------------
# Both call the user's function on slices or elements of traced arrays, so what the function
# does with fgrad operations is differentiated like any other code, to every order and in
# both modes; the results are stacked (a differentiable operation) into NumPy's layout. Values
# and dtypes are NumPy's: the function is called on the same slices in the same order, and
# the results are cast to the dtype NumPy gives them (the first result's, or `otypes`).


def _dtype(x):
    return dtype_of(x)


def _stacked(results, lead_shape, dtype):
    """The results (each of one shape) stacked with `lead_shape` in front, in `dtype`."""
    results = [astype(asarray(r), dtype) for r in results]
    if not any(is_traced(r) for r in results):
        # NumPy's stack, of NumPy arrays or (dispatched, lazily) of another library's
        out = _np.stack([as_array(r) for r in results])
    else:
        out = stack(results)
    return reshape(out, tuple(lead_shape) + shape(results[0]))


# --- apply_along_axis -----------------------------------------------------------------------------


@mirror("function")
def apply_along_axis(
    func1d: Callable[..., Any], axis: int, arr: ArrayLike, *args: Any, **kwargs: Any
) -> Array:
    """NumPy's `apply_along_axis`: `func1d(slice, *args, **kwargs)` on every 1-D slice of
    `arr` along `axis`; the results (scalars or arrays, all of one shape) take the place of
    that axis. Differentiable through whatever fgrad operations `func1d` uses (in `arr`, and
    in traced values it closes over or is given in `args`).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sum(fnp.apply_along_axis(lambda r: r[0] * r[1], 1, x))
    >>> fgrad.grad(f)(np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[2., 1.],
           [4., 3.]])
    """
    arr = asarray(arr)
    nd = ndim(arr)
    axis = _shaping.read_int(axis)  # (a traced int, a `jit` argument: its value, guarded)
    if not isinstance(axis, (int, _np.integer)) or not -nd <= axis < nd:
        raise ValueError(
            f"apply_along_axis: axis {axis!r} is out of bounds for an array with {nd} dimensions"
        )
    axis = int(axis) % nd
    rows = moveaxis(arr, axis, -1)
    outer = shape(rows)[:-1]
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [func1d(getitem(rows, ind), *args, **kwargs) for ind in _np.ndindex(*outer)]
    res_shape = shape_of(results[0])
    for r in results[1:]:
        if shape_of(r) != res_shape:
            raise ValueError(
                f"apply_along_axis: func1d returned results of shapes {res_shape} "
                f"and {shape_of(r)}; NumPy needs one shape"
            )
    # NumPy writes every result into an array of the first one's dtype
    out = _stacked(results, outer, _dtype(results[0]))
    k = len(res_shape)
    n_out = len(outer) + k
    order = list(range(axis)) + list(range(n_out - k, n_out)) + list(range(axis, n_out - k))
    return transpose(out, order) if order != list(range(n_out)) else out


# --- vectorize ------------------------------------------------------------------------------------

_DIMENSION = r"\w+"
_CORE = rf"\((?:{_DIMENSION}(?:,\s*{_DIMENSION})*)?\)"
_CORES = rf"{_CORE}(?:,\s*{_CORE})*"
_SIGNATURE = rf"^\s*{_CORES}\s*->\s*{_CORES}\s*$"


def _parse_signature(signature):
    """'(m,n),(n)->(m)' as ([('m', 'n'), ('n',)], [('m',)])."""
    if not _re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = signature.split("->")

    def parse(part):
        return [tuple(_re.findall(_DIMENSION, core)) for core in _re.findall(_CORE, part)]

    return parse(ins), parse(outs)


@mirror("function")
class vectorize:
    """NumPy's `vectorize`: `pyfunc` applied to each element (or, with a gufunc `signature`
    such as '(n),(n)->()', to each core slice) of its broadcast arguments. Applied to traced
    values, `pyfunc` receives traced elements, so whatever fgrad operations it uses are
    differentiated. `otypes`, `excluded`, `cache` and the decorator form
    (`@vectorize(otypes=[float])`) are NumPy's.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = fnp.vectorize(lambda x, y: x * y if x > 0 else y)
    >>> fgrad.grad(lambda x: fnp.sum(f(x, 3.0)))(np.array([-1.0, 2.0]))
    array([0., 3.])
    """

    def __init__(
        self, pyfunc=NO_VALUE, otypes=None, doc=None, excluded=None, cache=False, signature=None
    ):
        if pyfunc is not NO_VALUE and not callable(pyfunc):
            raise TypeError("When used as a decorator, only accepts keyword arguments.")
        self.pyfunc = pyfunc
        self.cache = cache
        self.signature = signature
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)
        self._doc = doc
        if pyfunc is not NO_VALUE:
            _functools.update_wrapper(
                self, pyfunc, assigned=("__name__", "__qualname__"), updated=()
            )
        if isinstance(otypes, str):
            for char in otypes:
                if char not in _np.typecodes["All"]:
                    raise ValueError(f"Invalid otype specified: {char}")
            otypes = [_np.dtype(char) for char in otypes]
        elif otypes is not None:
            try:
                otypes = [_np.dtype(t) for t in otypes]
            except TypeError:
                raise ValueError("Invalid otype specification") from None
        self.otypes = otypes
        self.excluded = set() if excluded is None else set(excluded)
        self._cores = None if signature is None else _parse_signature(signature)

    def __call__(self, *args, **kwargs):
        if self.pyfunc is NO_VALUE:  # the decorator form: @vectorize(otypes=...)
            (pyfunc,) = args
            self.pyfunc = pyfunc
            _functools.update_wrapper(
                self, pyfunc, assigned=("__name__", "__qualname__"), updated=()
            )
            if self._doc is None:
                self.__doc__ = pyfunc.__doc__
            return self
        positions = [i for i in range(len(args)) if i not in self.excluded]
        names = [name for name in kwargs if name not in self.excluded]
        vectorized = [args[i] for i in positions] + [kwargs[name] for name in names]

        def func(*values):
            call_args, call_kwargs = list(args), dict(kwargs)
            for i, v in zip(positions, values):
                call_args[i] = v
            call_kwargs.update(zip(names, values[len(positions) :]))
            return self.pyfunc(*call_args, **call_kwargs)

        if not vectorized:
            return func()
        if self._cores is not None:
            return self._call_with_signature(func, vectorized)
        return self._call_elementwise(func, vectorized)

    def _results(self, func, calls, n_calls):
        """The outputs of `func` on each tuple of arguments in `calls`, each as a tuple."""
        if self.otypes is None and n_calls == 0:
            raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
        out = []
        for call_args in calls:
            r = func(*call_args)
            out.append(r if isinstance(r, tuple) else (r,))
        return out

    def _output_dtypes(self, results):
        if self.otypes is not None:
            return self.otypes
        return [dtype_of(r) for r in results[0]]

    def _call_elementwise(self, func, args):
        args = [asarray(a) for a in args]
        lead = _np.broadcast_shapes(*[shape(a) for a in args])
        args = [broadcast_to(a, lead) if shape(a) != lead else a for a in args]
        indices = list(_np.ndindex(*lead))
        results = self._results(
            func, ([getitem(a, i) for a in args] for i in indices), len(indices)
        )
        return self._assemble(results, lead)

    def _assemble(self, results, lead):
        if not results:  # size 0 with otypes
            outs = tuple(_np.zeros(lead, dtype=t) for t in self.otypes)
            return outs[0] if len(outs) == 1 else outs
        dtypes = self._output_dtypes(results)
        n_out = len(results[0])
        if len(dtypes) != n_out:
            raise ValueError(
                f"vectorize: pyfunc returned {n_out} outputs but otypes lists {len(dtypes)}"
            )
        outs = tuple(_stacked([r[j] for r in results], lead, dtypes[j]) for j in range(n_out))
        return outs[0] if n_out == 1 else outs

    def _call_with_signature(self, func, args):
        in_cores, out_cores = self._cores
        if len(args) != len(in_cores):
            raise TypeError(
                f"wrong number of positional arguments: expected {len(in_cores)}, got {len(args)}"
            )
        args = [asarray(a) for a in args]
        sizes, loops = {}, []
        for a, core in zip(args, in_cores):
            s = shape(a)
            if len(s) < len(core):
                raise ValueError(
                    f"{len(core)}-dimensional argument does not have enough "
                    f"dimensions for all core dimensions {core!r}"
                )
            for name, n in zip(core, s[len(s) - len(core) :]):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(
                        f"inconsistent size for core dimension {name!r}: {n} vs {sizes[name]}"
                    )
            loops.append(s[: len(s) - len(core)])
        lead = _np.broadcast_shapes(*loops)
        args = [
            broadcast_to(a, lead + shape(a)[len(loop) :]) if loop != lead else a
            for a, loop in zip(args, loops)
        ]
        indices = list(_np.ndindex(*lead))
        results = self._results(
            func, ([getitem(a, i) for a in args] for i in indices), len(indices)
        )
        if results and len(results[0]) != len(out_cores):
            raise ValueError(
                f"wrong number of outputs from pyfunc: expected {len(out_cores)}, "
                f"got {len(results[0])}"
            )
        for r in results:
            for value, core in zip(r, out_cores):
                s = shape_of(value)
                if len(s) != len(core):
                    raise ValueError(
                        f"wrong number of dimensions: expected {len(core)}, got {len(s)}"
                    )
                for name, n in zip(core, s):
                    if sizes.setdefault(name, n) != n:
                        raise ValueError(
                            f"inconsistent size for core dimension {name!r}: {n} vs {sizes[name]}"
                        )
        if not results:
            if self.otypes is None:
                raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
            missing = [name for core in out_cores for name in core if name not in sizes]
            if missing:
                raise ValueError(
                    f"cannot call `vectorize` with a signature including new "
                    f"output dimensions on size 0 inputs: {missing}"
                )
            outs = tuple(
                _np.zeros(lead + tuple(sizes[n] for n in core), dtype=t)
                for core, t in zip(out_cores, self.otypes)
            )
            return outs[0] if len(outs) == 1 else outs
        return self._assemble(results, lead)


__all__ = exported(globals())
