"""Arrays made from a few values, and NumPy 2's new spellings: `linspace`, `logspace`,
`geomspace` (differentiable in their end points, and `logspace` in its base, as in JAX),
`copy`, `diagflat`, `full_like`/`empty_like` declared without a derivative, and the array-API
names `permute_dims`, `concat` and `matrix_transpose` (compositions of the shaping
primitives), and NumPy's index tricks `r_` and `c_`, whose traced items (and the end points of
their `start:stop:num*1j` slices) are differentiable.

`linspace` is a primitive whose value is NumPy's own (bit for bit, traced or not) and whose
rules are its two linear weights, `1 - i/div` for `start` and `i/div` for `stop`; `logspace`
and `geomspace` follow NumPy's own steps on top of it, so their values equal NumPy's too.

Imports: `fgrad.core`, `fgrad.taylor`, `fgrad.primitive`, `fgrad.numpy.shaping`,
`fgrad.numpy.elementwise`, `fgrad.numpy.ufuncs`, `fgrad.numpy.arrays`.
"""

from __future__ import annotations

import operator as _operator
from typing import TYPE_CHECKING

import numpy as _np

# NumPy's constructors of constant arrays, exported as they are (no derivative flows to them;
# `full`, whose fill value may be traced, is written below)
from numpy import (
    arange as arange,
    empty as empty,
    eye as eye,
    identity as identity,
    ones as ones,
    zeros as zeros,
)

from .. import core as _core, taylor as _taylor
from ..core import Box, dtype_of, primal, shape_of
from ..primitive import defprimitive, register_rules
from ._mirror import exported, mirror
from .arrays import diag
from .elementwise import floor, mask_values, power, read_any, real
from .shaping import (
    array,
    asarray,
    astype,
    at,
    broadcast_to,
    concatenate,
    expand_dims,
    holds_foreign,
    is_default,
    is_traced,
    keeps_single_precision,
    like_batch_rule,
    meta,
    moveaxis,
    ndim,
    nondiff_function,
    numpy_applies,
    ravel,
    refuse_layout,
    refuse_out,
    result_type,
    shape,
    sum,
    swapaxes,
    transpose,
    unbroadcast,
    variant,
    with_example_ndim,
    zero_with_derivatives_of,
)
from .ufuncs import log10

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal

    from ..typing import Array, ArrayLike, DTypeLike


def _as_arrays(*xs):
    """Lists and tuples as arrays (traced items stacked), so that their dtype is known."""
    return tuple(asarray(x) if isinstance(x, (list, tuple)) else x for x in xs)


# --- linspace -------------------------------------------------------------------------------------


def _linspace_weights(ans, start, stop, num, endpoint, dtype, axis):
    """(w_start, w_stop, axis): the constant weights of start and stop in each sample, shaped
    to broadcast against the result, and the result's axis of samples."""
    b_nd = ndim(ans) - 1
    ax = axis % (b_nd + 1)
    div = (num - 1) if endpoint else num
    dt = dtype_of(ans)
    i = _np.arange(num, dtype=dt)
    w_stop = i / dt.type(div) if div > 0 else _np.zeros(num, dt)  # one sample: it is start
    w_stop = w_stop.reshape((num,) + (1,) * (b_nd - ax))
    return 1 - w_stop, w_stop, ax


def _linspace_vjp(which):
    def make(ans, start, stop, **params):
        weights = _linspace_weights(ans, start, stop, **params)
        w, ax = weights[which], weights[2]
        like = meta((start, stop)[which])
        return lambda ct: unbroadcast(sum(ct * w, axis=ax), like)

    return make


def _linspace_jvp(which):
    def rule(t, ans, start, stop, **params):
        weights = _linspace_weights(ans, start, stop, **params)
        w, ax = weights[which], weights[2]
        b_shape = _np.broadcast_shapes(shape_of(start), shape_of(stop))
        out = expand_dims(broadcast_to(t, b_shape), ax) * w
        if dtype_of(out) != dtype_of(ans):
            # real samples of a complex end point (dtype=float32) keep its real part only,
            # as NumPy's cast of the primal does
            out = astype(real(out) if dtype_of(ans).kind != "c" else out, dtype_of(ans))
        return out

    return rule


def _linspace_impl(start, stop, num, endpoint, dtype, axis):
    if _core.is_foreign_array(start) or _core.is_foreign_array(stop):
        return _linspace_foreign(start, stop, num, endpoint, dtype, axis)
    return _np.linspace(start, stop, num=num, endpoint=endpoint, dtype=dtype, axis=axis)


def _linspace_foreign(start, stop, num, endpoint, dtype, axis):
    """NumPy's linspace, step for step, for end points of another library (Dask), whose
    linspace takes numbers only. NumPy reads whether a step is zero to choose how it scales
    the samples; here that choice is made lazily, with the same result."""
    div = num - 1 if endpoint else num
    dt = _np.result_type(start, stop, float)
    delta = _np.subtract(stop, start, dtype=dt)
    y = _np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * _np.ndim(delta))
    if div > 0:
        step = delta / div
        y = _np.where(_np.any(step == 0), y / div * delta, y * step)
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        last = _np.broadcast_to(stop, _np.shape(y)[1:]).astype(dt)
        y = _np.concatenate([y[:-1], _np.expand_dims(last, 0)])
    if axis != 0:
        y = _np.moveaxis(y, 0, axis)
    if dtype is not None and _np.issubdtype(dtype, _np.integer):
        y = _np.floor(y)
    return y.astype(dt if dtype is None else dtype)


_linspace_p = defprimitive(
    _linspace_impl,
    vjp=(_linspace_vjp(0), _linspace_vjp(1)),
    jvp=(_linspace_jvp(0), _linspace_jvp(1)),
    name="linspace",
    forward="linear",
)


def _linspace_batch(args, dims, num, endpoint, dtype, axis):
    """The end points with their batch axes first, padded to one row's broadcast rank (the
    unbatched ones broadcast from the right), and the samples axis one further along."""
    rows_nd = max(len(shape(a)) - (d is not None) for a, d in zip(args, dims))
    start, stop = (a if d is None else with_example_ndim(a, d, rows_nd) for a, d in zip(args, dims))
    ax = axis % (rows_nd + 1) + 1
    return _linspace_p(start, stop, num=num, endpoint=endpoint, dtype=dtype, axis=ax), 0


register_rules(
    _linspace_p,
    batch=_linspace_batch,
    # start + (stop - start) * i / (num - 1): linear in the end points together
    taylor=_taylor.linear_rule(_linspace_p),
    sparsity=(
        "dense",
        "the output's elements depend on the inputs' through a structure not derived yet "
        "(issue 35)",
    ),
)


@mirror("creation")
def linspace(
    start: ArrayLike,
    stop: ArrayLike,
    num: int = 50,
    endpoint: bool = True,
    retstep: bool = False,
    dtype: DTypeLike | None = None,
    axis: int = 0,
    *,
    device: Literal["cpu"] | None = None,
) -> Array | tuple[Array, Array]:
    """NumPy's `linspace`, differentiable in `start` and `stop` (scalars or arrays). Its values
    are NumPy's own; sample i has slope 1 - i/div in start and i/div in stop.

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(lambda b: fnp.sum(fnp.linspace(0.0, b, 5)))(2.0))
    2.5
    """
    num = _operator.index(num)
    # (another library's end points take fgrad's path, here and in logspace and geomspace:
    # Dask lacks or limits these functions)
    if numpy_applies(start, stop):
        # (NumPy's stub overloads on Literal flags; the flags pass through to NumPy)
        return _np.linspace(start, stop, num, endpoint, retstep, dtype, axis, device=device)  # type: ignore[call-overload]
    if dtype is not None and not _np.issubdtype(dtype, _np.inexact):
        # Integer (or bool) samples of traced or lazy end points: the float samples, floored
        # for an integer dtype and cast, as NumPy makes them; they have no derivative.
        y = linspace(start, stop, num, endpoint, retstep, None, axis)
        y, step = y if retstep else (y, None)
        y = astype(floor(y) if _np.issubdtype(dtype, _np.integer) else y, dtype)
        return (y, step) if retstep else y
    start, stop = _as_arrays(start, stop)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    if dtype is None:
        dtype = result_type(start, stop, float(num))
    y = _linspace_p(
        start,
        stop,
        num=num,
        endpoint=bool(endpoint),
        dtype=_np.dtype(dtype),
        axis=_operator.index(axis),
    )
    if not retstep:
        return y
    div = (num - 1) if endpoint else num
    if div <= 0:  # NumPy's step of a sequence of 0 or 1 samples
        return y, _np.nan
    return y, astype((asarray(stop) - start) / div, dtype_of(y))


@mirror("creation")
def logspace(
    start: ArrayLike,
    stop: ArrayLike,
    num: int = 50,
    endpoint: bool = True,
    base: ArrayLike = 10.0,
    dtype: DTypeLike | None = None,
    axis: int = 0,
) -> Array:
    """NumPy's `logspace`: `base ** linspace(start, stop)`, differentiable in `start`, `stop`
    and `base`, with NumPy's values."""
    if numpy_applies(start, stop, base):
        return _np.logspace(start, stop, num, endpoint, base, dtype, axis)
    start, stop, base = _as_arrays(start, stop, base)
    if not isinstance(base, (float, int)) and ndim(base):
        # An array base broadcasts with start and stop, as in NumPy, before the samples axis.
        nd = len(_np.broadcast_shapes(*(shape_of(a) for a in (start, stop, base))))
        start, stop, base = (
            expand_dims(asarray(a), tuple(range(nd - ndim(a)))) if ndim(a) < nd else a
            for a in (start, stop, base)
        )
        base = expand_dims(base, axis)
    y = power(base, linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return y if dtype is None else astype(y, dtype)


@mirror("creation")
def geomspace(
    start: ArrayLike,
    stop: ArrayLike,
    num: int = 50,
    endpoint: bool = True,
    dtype: DTypeLike | None = None,
    axis: int = 0,
) -> Array:
    """NumPy's `geomspace`, differentiable in `start` and `stop`: real end points of one sign,
    or complex ones (holomorphic in both). The first and last samples are exactly `start` and
    `stop`, and the values are NumPy's own, traced or not. Float32 (complex64) end points give
    float32 (complex64) samples: NumPy's, rounded once (NumPy returns float64; JAX keeps
    float32).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fnp.geomspace(1.0, 1000.0, 4)
    array([   1.,   10.,  100., 1000.])
    """
    start, stop = _as_arrays(start, stop)
    kept = _geomspace_single(start, stop, dtype)
    if numpy_applies(start, stop):
        out = _np.geomspace(start, stop, num, endpoint, dtype, axis)
        return out if kept is None else out.astype(kept)
    # the end points' values (of each row, under `vmap`); lazy ones (Dask's) are not read for
    # the check: a zero one gives nan, not NumPy's error
    p_start, p_stop = mask_values(start), mask_values(stop)
    if read_any(p_start == 0) or read_any(p_stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    # NumPy's steps, in NumPy's dtype: the end points are rotated by the sign (the unit
    # phase, for complex) of start onto the positive reals, and back. The rotation is a
    # constant: the samples start**(1 - t) stop**t do not depend on it.
    dt = _np.result_type(dtype_of(p_start), dtype_of(p_stop), float(num), _np.zeros((), dtype))
    start, stop = astype(asarray(start), dt), astype(asarray(stop), dt)
    out_sign = _np.sign(astype(p_start, dt))
    start = start / out_sign
    stop = stop / out_sign
    result = logspace(log10(start), log10(stop), num=num, endpoint=endpoint, base=10.0)
    if num > 0:  # exp(log(x)) is not always x: the end points are set exactly
        result = at(result)[0].set(start)  # (`at`: result may be a lazy array, not traced)
        if num > 1 and endpoint:
            result = at(result)[-1].set(stop)
    result = result * out_sign  # in NumPy's order: a complex product rounds by it
    if axis != 0:
        result = moveaxis(result, 0, axis)
    result = astype(result, dt if dtype is None else dtype)
    return result if kept is None else astype(result, kept)


def _geomspace_single(start, stop, dtype):
    """The single-precision dtype (float32, complex64) geomspace keeps where NumPy would
    return double precision for single-precision end points, else None (float16 end points
    take NumPy's float64: `keeps_single_precision`)."""
    if dtype is not None:
        return None
    kept = result_type(start, stop)
    return kept if keeps_single_precision(kept) else None


# --- copies and constant arrays -------------------------------------------------------------------


@mirror("creation")
def copy(a: ArrayLike, order: Literal["K", "A", "C", "F"] = "K", subok: bool = False) -> Array:
    """NumPy's `copy`: the identity, with a value of its own (traced values are never
    mutated, so a traced `a` is returned as it is)."""
    if not is_traced(a) and not holds_foreign(a):
        # (NumPy's stub overloads on Literal flags; the flags pass through to NumPy)
        return _np.copy(a, order=order, subok=subok)  # type: ignore[call-overload]
    refuse_layout("copy", order=(order, "K"), subok=(subok, False))
    # another library's array (Dask's): a new one of its own, lazy; a list of them, stacked
    return asarray(a) if is_traced(a) else array(a)


@mirror("creation")
def diagflat(v: ArrayLike, k: int = 0) -> Array:
    """NumPy's `diagflat`: a 2-D array with the flattened `v` on its k-th diagonal."""
    if not is_traced(v) and not holds_foreign(v):
        return _np.diagflat(v, k)
    return diag(ravel(v), k)


_full_like_constant = nondiff_function(_np.full_like)
empty_like = nondiff_function(_np.empty_like)
like_batch_rule(_full_like_constant)
like_batch_rule(empty_like)


def _as_shape(shape):
    """`shape` as NumPy's constructors read it: a sequence of lengths, or one length given
    alone, which may be any 0-d integer (a NumPy scalar or 0-d array, or under `jit` a
    Python-int argument, read where `np.ones` asks for its index, a guard as `int(n)` is)."""
    if isinstance(shape, (tuple, list)):
        return tuple(shape)
    return (shape,) if ndim(shape) == 0 else tuple(shape)


def _filled(fill_value, shape, dtype, like=None):
    """`fill_value` (traced) cast to `dtype` and spread over `shape`: the value NumPy's
    `full` writes (it casts the fill value unsafely, as `astype` does), and its derivative
    is the fill value's, summed back from every element it fills. A product with ones (x * 1
    is x, bit for bit) rather than `broadcast_to`: NumPy's result is a new writable array,
    where a broadcast is a read-only view with zero strides. The ones are of the library of
    `like` (full_like's `a`) or of the fill value, and keep `like`'s chunks."""
    shape = _as_shape(shape)
    filled = astype(fill_value, dtype) * _ones(shape, dtype, like, fill_value)
    return filled if shape else asarray(filled)  # (NumPy's 0-d product is a scalar)


def _ones(shape, dtype, *candidates):
    """Ones of `shape` for `_filled`: those of the first candidate that is an array of another
    library (lazy Dask ones, never allocated whole, in its chunks where it has this shape, as
    Dask's `full_like` keeps them), or else NumPy's."""
    for x in candidates:
        x = _core.innermost(x)
        if _core.is_foreign_array(x):
            return _np.ones_like(x, dtype=dtype, shape=None if shape_of(x) == shape else shape)
    return _np.ones(shape, dtype)


@mirror("creation")
def full(
    shape: Any,
    fill_value: ArrayLike,
    dtype: DTypeLike | None = None,
    order: Literal["C", "F"] = "C",
    *,
    device: Literal["cpu"] | None = None,
    like: Any = None,
) -> Array:
    """NumPy's `full`, differentiable in a traced `fill_value` (JAX's `full` is too); a fill
    value of another library (Dask's) gives that library's array, lazily.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda v: fnp.sum(fnp.full((2, 3), v) ** 2))(0.5)
    np.float64(6.0)
    """
    if not is_traced(fill_value) and not holds_foreign(fill_value):
        return _np.full(shape, fill_value, dtype, order, device=device, like=like)
    refuse_layout("full", order=(order, "C"), device=(device, None), like=(like, None))
    return _filled(
        fill_value, shape, _fill_dtype(fill_value) if dtype is None else _np.dtype(dtype)
    )


def _fill_dtype(fill_value):
    """NumPy's dtype of a fill value. That of a Python int depends on its size (int64, then
    uint64, then object): for one `jit` keeps traced, the size is read as guards, so a replay
    with a larger int takes another path (a record made with 3 wrapped 2**63 + 5 around)."""
    if type(_core.innermost(fill_value)) is not int:
        return dtype_of(fill_value)
    if bool(fill_value >= -(2**63)) and bool(fill_value < 2**63):
        return _np.dtype(_np.int64)
    if bool(fill_value >= 0) and bool(fill_value < 2**64):
        return _np.dtype(_np.uint64)
    return _np.dtype(object)


@mirror("creation")
def full_like(
    a: ArrayLike,
    fill_value: ArrayLike,
    dtype: DTypeLike | None = None,
    order: Literal["C", "F", "A", "K"] = "K",
    subok: bool = True,
    shape: Any = None,
    *,
    device: Literal["cpu"] | None = None,
) -> Array:
    """NumPy's `full_like`: a constant shaped like `a` (no derivative flows from `a`),
    differentiable in a traced `fill_value` (it was a constant too, whose gradient was 0).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.full_like(x, x[1])))(np.array([1.0, 2.0, 3.0]))
    array([0., 3., 0.])
    """
    if not is_traced(fill_value) and not holds_foreign(fill_value):
        # only the keywords given (Dask's full_like takes no device, order or subok), and by
        # name: the batching rule reads a `shape`
        given = dict(dtype=dtype, order=order, subok=subok, shape=shape, device=device)
        defaults = dict(dtype=None, order="K", subok=True, shape=None, device=None)
        keywords = {k: v for k, v in given.items() if not is_default(v, defaults[k])}
        return _full_like_constant(a, fill_value, **keywords)
    refuse_layout("full_like", order=(order, "K"), device=(device, None))
    dtype = dtype_of(a) if dtype is None else _np.dtype(dtype)
    return _filled(fill_value, shape_of(a) if shape is None else shape, dtype, like=a)


# --- NumPy 2's array-API spellings ----------------------------------------------------------------


@mirror("shape")
def permute_dims(a: ArrayLike, axes: Sequence[int] | None = None) -> Array:
    """NumPy 2's `permute_dims`, the array-API name of `transpose`."""
    return transpose(a, axes)


def _concat(arrays, axis, out, dtype, casting):
    # NumPy's `concat` is `concatenate` itself: an array passed whole is joined along its first
    # axis's pieces, as there (the array API asks for a tuple, NumPy does not).
    refuse_out(out, "concat")
    return concatenate(arrays, axis=axis, dtype=dtype, casting=casting)


concat = variant(
    concatenate, "concat", _concat, "NumPy 2's `concat`, the array-API name of `concatenate`."
)


@mirror("shape")
def matrix_transpose(x: ArrayLike, /) -> Array:
    """NumPy 2's `matrix_transpose`: swap the last two axes of an array of matrices."""
    if ndim(x) < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-D, got shape {shape_of(x)}")
    return swapaxes(x, -1, -2)


# --- NumPy's index tricks r_ and c_ ---------------------------------------------------------------


class _AxisConcatenator:
    """`r_[...]` and `c_[...]`: NumPy's concatenation by index syntax, with traced values.

    Each item is an array, a number, or a slice (`0:3` is `arange(0, 3)`, `0:1:5j` is
    `linspace(0, 1, 5)`, differentiable in its end points); a first item that is a string
    sets the axis, the minimum number of dimensions and where a 1-D item's axis goes
    (`'0,2'`, `'-1,2,0'`), as in NumPy. Items that hold no traced value are NumPy's own; the
    result is differentiable in every traced one. (NumPy's matrix directives 'r', 'c' and
    the string form build `numpy.matrix`, which fgrad does not differentiate.)
    """

    __slots__ = ("axis", "name", "ndmin", "trans1d")

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __len__(self):
        return 0

    def __repr__(self):
        return f"fgrad.numpy.{self.name}"

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not any(_holds_traced(item) or holds_foreign(item) for item in items):
            return getattr(_np, self.name)[key]
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        pieces, kinds = [], []
        for k, item in enumerate(items):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError(f"{self.name}: special directives must be the first entry")
                axis, ndmin, trans1d = self._directive(item, axis, ndmin, trans1d)
                continue
            if isinstance(item, slice):
                piece = _slice_values(item, self.name)
                if ndmin > 1:
                    piece = _at_least(piece, ndmin, -1)
                    if trans1d != -1:
                        piece = swapaxes(piece, -1, trans1d)
                kinds.append(dtype_of(piece))
            elif type(item) in _np.ScalarType:
                piece = item
                kinds.append(item)  # a number takes part in the dtype as NumPy weighs it
            else:
                piece = _at_least(asarray(item), ndmin, trans1d)
                kinds.append(dtype_of(piece))
            pieces.append(piece)
        if not pieces:
            return concatenate((), axis=axis)  # NumPy's error for nothing to join
        dtype = _np.result_type(*kinds)
        pieces = [_at_least(astype(asarray(_as_array(p, dtype)), dtype), ndmin, -1) for p in pieces]
        return concatenate(pieces, axis=axis)

    def _directive(self, item, axis, ndmin, trans1d):
        if item in ("r", "c"):
            raise TypeError(
                f"{self.name}['{item}', ...] builds a numpy.matrix, which fgrad does not "
                "differentiate; leave out the directive (and reshape the result)"
            )
        try:
            parts = [int(p) for p in item.split(",")]
        except ValueError as error:
            raise ValueError(f"{self.name}: unknown special directive {item!r}") from error
        if len(parts) == 1:
            return parts[0], ndmin, trans1d
        if len(parts) in (2, 3):
            return parts[0], parts[1], parts[2] if len(parts) == 3 else trans1d
        raise ValueError(f"{self.name}: unknown special directive {item!r}")


def _holds_traced(item):
    if isinstance(item, slice):  # (a lazy bound, of another library, is refused there)
        return not numpy_applies(item.start, item.stop, item.step)
    return is_traced(item)


def _as_array(piece, dtype):
    return _np.asarray(piece, dtype=dtype) if type(piece) in _np.ScalarType else piece


def _slice_values(item, name):
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if type(step) is Box:
        raise TypeError(
            f"{name}: the step of a slice is a traced value; a count or step has no derivative"
        )
    if isinstance(step, (complex, _np.complexfloating)):
        return linspace(start, item.stop, num=int(abs(step)))
    # arange: start + i * step, so its slope in start is 1; stop only sets the count
    _core.refuse_lazy(
        name, "a slice's count depends on its bounds", primal(start), primal(item.stop)
    )
    values = _np.arange(primal(start), primal(item.stop), step)
    if type(start) is Box:
        values = values + zero_with_derivatives_of(start)  # the values are NumPy's
    return values


def _at_least(x, ndmin, trans1d):
    """NumPy's `array(x, ndmin=ndmin)`, then, for an item with fewer axes, its axes moved
    to `trans1d` as r_ and c_ do."""
    nd = ndim(x)
    if nd >= ndmin:
        return x
    if is_traced(x) or holds_foreign(x):
        x = array(x, ndmin=ndmin)
    else:
        x = _np.array(x, ndmin=ndmin, copy=None)
    if trans1d == -1:
        return x
    k2 = ndmin - nd
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    order = list(range(ndmin))
    return transpose(x, order[:k1] + order[k2:] + order[k1:k2])


r_ = mirror("shape")(_AxisConcatenator(0, 1, -1, "r_"))
c_ = mirror("shape")(_AxisConcatenator(-1, 2, 0, "c_"))

__all__ = exported(globals())
