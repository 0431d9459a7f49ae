"""Signal processing, polynomials and sample statistics: `convolve`,
`correlate`, `diff`, `ediff1d`, `interp`, `polyval`, `polyfit`, `trapezoid`, `cov`, `corrcoef`,
`vander` (the tensor products it uses, `einsum`, `outer`, ..., are `fgrad.numpy.products`').

Only the full convolution is a primitive (its rules are convolutions of the cotangent with
the reversed other operand); everything else is a composition of differentiable operations,
so it is differentiable to every order with no rules of its own. Results keep float32 where
NumPy would promote to float64 (`interp`, `cov`, `corrcoef`), as JAX does.

Imports: `fgrad.core`, `fgrad.primitive`, and the other modules of
`fgrad.numpy` except `fft` (`linalg` for `polyfit`'s least squares).
"""

from __future__ import annotations

import builtins as _builtins
import operator as _operator
import warnings as _warnings
from typing import TYPE_CHECKING

import numpy as _np

from .. import batching as _batching, core as _core
from ..core import Box, bind, constant_of, dtype_of, primal
from ..primitive import defbilinear, defprimitive, nondiff, register_rules
from . import linalg as _linalg
from ._mirror import exported, mirror
from .elementwise import (
    clip,
    equal,
    floor,
    greater,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    mask_values,
    multiply,
    multiply_operator,
    not_equal,
    read_any,
    real,
    scalar_if_0d,
    sqrt,
    where,
)
from .products import (
    conj_if_complex,
    einsum,
    gufunc_batch_rule,
    matmul,
    outer,
)
from .shaping import (
    _normalize_axes,
    all_rows,
    asarray,
    astype,
    at,
    batch_size,
    batched_axis,
    broadcast_to,
    concatenate,
    describe,
    expand_dims,
    getitem,
    held_number,
    holds_foreign,
    identity_derivatives,
    is_traced,
    keeps_single_precision,
    meta,
    ndim,
    numpy_applies,
    reshape,
    shape,
    squeeze,
    stack,
    sum,
    transpose,
    unbroadcast,
    zero_with_derivatives_of,
)

if TYPE_CHECKING:
    from typing import Any

    from ..typing import Array, ArrayLike, DTypeLike


def _float_dtype(*xs):
    """The dtype of a result NumPy computes from xs in double precision: NumPy's (theirs
    promoted with float64: float64 for integers and float16), except float32 and complex64,
    which fgrad keeps (`keeps_single_precision`)."""
    # (a list is an array-like: `dtype_of` reads its elements; numbers stay weakly typed, and
    # so does a traced one: `jit` holds a Python number argument as given)
    dt = _np.result_type(*map(_weak_or_dtype, xs))
    return dt if keeps_single_precision(dt) else _np.result_type(dt, _np.float64)


def _weak_or_dtype(x):
    """x for NumPy's `result_type`: a Python number (traced or not) as it is, else a dtype."""
    number = held_number(x)
    if number is not None:
        return number
    return dtype_of(x) if isinstance(x, (Box, list, tuple)) else x


def _is_traced(x):
    return type(x) is Box


# --- convolution and correlation ------------------------------------------------------------------


# Up to this many multiply-adds per row (output length times the shorter length), one einsum
# over sliding windows convolves a batch fastest; above it NumPy's `convolve` row after row
# inside the primitive is faster (its inner products are vectorized; einsum's strided loop is
# not), by 3-10x at 128 rows of 2000 with kernels of 3-500, and it keeps NumPy's bits.
_WINDOWS_UP_TO = 1024


def _convolve_foreign(a, v):
    """`_convolve_last` for arrays of another library (Dask), which has no convolve: the
    longer operand, shifted by k and scaled by the shorter one's element k, summed over k (a
    lazy graph of as many terms as the shorter operand is long)."""
    if _np.shape(a)[-1] < _np.shape(v)[-1]:
        a, v = v, a
    m = _np.shape(v)[-1]
    lead = [(0, 0)] * (_builtins.max(_np.ndim(a), _np.ndim(v)) - 1)
    out = None
    for k in range(m):
        term = _np.pad(a * v[..., k : k + 1], lead + [(k, m - 1 - k)])
        out = term if out is None else out + term
    return out


def _convolve_last(a, v):
    """The full convolution along the last axis; the leading axes (the rows of a batch, under
    `vmap`) broadcast. One pair of 1-D sequences is NumPy's own `convolve`."""
    if _core.is_foreign_array(a) or _core.is_foreign_array(v):
        return _convolve_foreign(a, v)
    if _np.ndim(a) == 1 and _np.ndim(v) == 1:
        return _np.convolve(a, v, mode="full")
    a, v = _np.asarray(a), _np.asarray(v)
    if a.shape[-1] < v.shape[-1]:  # a convolution is symmetric in its operands
        a, v = v, a
    n, m = a.shape[-1], v.shape[-1]
    # (the windows' padding times an inf or a nan of v would be a nan NumPy's sum of the
    # overlaps does not have: such rows take NumPy's convolve too)
    if (n + m - 1) * m > _WINDOWS_UP_TO or not _np.isfinite(v).all():
        lead = _np.broadcast_shapes(a.shape[:-1], v.shape[:-1])
        a = _np.broadcast_to(a, lead + (n,)).reshape(-1, n)
        v = _np.broadcast_to(v, lead + (m,)).reshape(-1, m)
        out = _np.empty((len(a), n + m - 1), _np.result_type(a, v))
        for i, (x, y) in enumerate(zip(a, v)):
            out[i] = _np.convolve(x, y, mode="full")
        return out.reshape(lead + (n + m - 1,))
    # the shorter operand, reversed, meets the sliding windows (a view) of the longer one
    padded = _np.pad(a, [(0, 0)] * (a.ndim - 1) + [(m - 1, m - 1)])
    windows = _np.lib.stride_tricks.sliding_window_view(padded, m, axis=-1)
    return _np.einsum("...kj,...j->...k", windows, v[..., ::-1])


def _conv_vjp(which):
    # out[k] = sum_i a[i] v[k - i], so d out / d a[i] pairs ct[k] with v[k - i]: the full
    # convolution of ct with the reversed v, from offset len(v) - 1. Symmetric in a and v.
    def maker(ans, a, v):
        like = meta((a, v)[which])
        other = (v, a)[which]
        m, n = shape(other)[-1], like[0][-1]
        return lambda ct: unbroadcast(
            _conv_full(ct, other[..., ::-1])[..., m - 1 : m - 1 + n], like
        )

    return maker


# Under vmap the convolution along the last axis is a generalized ufunc (n),(m)->(n+m-1);
# sparsity detection takes it as a banded contraction.
_conv_full = defbilinear(
    _convolve_last, (_conv_vjp(0), _conv_vjp(1)), name="convolve", sparsity="convolve"
)
register_rules(_conv_full, batch=gufunc_batch_rule(_conv_full, (1, 1)))


def _signal_1d(x, name, arg):
    x = asarray(x)
    nd = ndim(x)
    if nd == 0 and name == "correlate":  # NumPy's convolve takes a scalar, its correlate not
        raise ValueError(
            f"correlate: {arg} is a scalar ({describe(x)}); it must be a 1-D sequence (pass "
            f"[{arg}], or use multiply to scale the other operand)"
        )
    if nd == 0:
        return reshape(x, (1,))
    if nd != 1:
        raise ValueError(
            f"{name}: {arg} has shape {shape(x)}; it must be one-dimensional (flatten it, or "
            "use einsum/matmul for batches)"
        )
    if shape(x)[0] == 0:
        raise ValueError(f"{name}: {arg} is empty")
    return x


def _mode_slice(full, n, m, mode, name):
    lo, hi = min(n, m), max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start = (lo - 1) // 2
        return full[start : start + hi]
    if mode == "valid":
        return full[lo - 1 : hi]
    raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")


@mirror("function")
def convolve(a: ArrayLike, v: ArrayLike, mode: str = "full") -> Array:
    """NumPy's `convolve` of two 1-D sequences, mode 'full', 'same' or 'valid'.

    >>> import fgrad.numpy as fnp
    >>> fnp.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    a, v = _signal_1d(a, "convolve", "a"), _signal_1d(v, "convolve", "v")
    return _mode_slice(_conv_full(a, v), shape(a)[0], shape(v)[0], mode, "convolve")


@mirror("function")
def correlate(a: ArrayLike, v: ArrayLike, mode: str = "valid") -> Array:
    """NumPy's `correlate` of two 1-D sequences: c[k] = sum_n a[n + k] conj(v[n]), mode
    'valid' (NumPy's default), 'same' or 'full'."""
    a, v = _signal_1d(a, "correlate", "a"), _signal_1d(v, "correlate", "v")
    n, m = shape(a)[0], shape(v)[0]
    if m > n:  # NumPy swaps the operands, then reverses (and conjugates) the result
        return conj_if_complex(correlate(v, a, mode))[::-1]
    return _mode_slice(_conv_full(a, conj_if_complex(v)[::-1]), n, m, mode, "correlate")


# --- differences ----------------------------------------------------------------------------------

_NO_VALUE: Any = _np._NoValue  # NumPy's "not given" default; typed Any as `shaping.NO_VALUE`


def _between(first, middle, last, axis=0):
    """`middle` with `first` and `last` joined at its ends along `axis` (None: no end)."""
    parts = [p for p in (first, middle, last) if p is not None]
    return middle if len(parts) == 1 else concatenate(parts, axis=axis)


@mirror("function")
def diff(
    a: ArrayLike,
    n: int = 1,
    axis: int = -1,
    prepend: ArrayLike = _NO_VALUE,
    append: ArrayLike = _NO_VALUE,
) -> Array:
    """NumPy's `diff`: the n-th forward difference along `axis`, after joining `prepend` and
    `append` (a scalar is broadcast to one slice)."""
    if n == 0:
        return a  # as NumPy: the input itself, unconverted (a list stays that list)
    a = asarray(a)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    nd = ndim(a)
    if nd == 0:
        raise ValueError("diff: the input a is a scalar; it needs at least one dimension")
    if not -nd <= _operator.index(axis) < nd:
        raise _np.exceptions.AxisError(
            f"diff: axis {axis} is out of bounds for a of {describe(a)} ({nd}-D); pass an "
            f"axis from {-nd} to {nd - 1}"
        )
    axis = _normalize_axes(axis, nd)[0]

    def slab(end):
        if end is _NO_VALUE:
            return None
        a_dtype = dtype_of(a)
        if isinstance(end, (int, float)) and _np.issubdtype(a_dtype, _np.inexact):
            end = _np.asarray(end, dtype=a_dtype)  # a Python number is weakly typed, as in JAX
        end = asarray(end)
        if ndim(end) == 0:
            one = list(shape(a))
            one[axis] = 1
            end = broadcast_to(end, tuple(one))
        return end

    a = _between(slab(prepend), a, slab(append), axis)
    lead = (slice(None),) * axis
    if dtype_of(a) == _np.bool_:  # NumPy's not_equal (as np.diff of booleans); no derivative
        for _ in range(n):
            a = not_equal(a[lead + (slice(1, None),)], a[lead + (slice(None, -1),)])
        return a
    for _ in range(n):
        a = a[lead + (slice(1, None),)] - a[lead + (slice(None, -1),)]
    return a


@mirror("function")
def ediff1d(
    ary: ArrayLike, to_end: ArrayLike | None = None, to_begin: ArrayLike | None = None
) -> Array:
    """NumPy's `ediff1d`: differences of the flattened array, with `to_begin` and `to_end`
    (cast to its dtype, as NumPy does) joined at the ends."""
    flat = reshape(asarray(ary), (-1,))
    d = flat[1:] - flat[:-1]
    dtype = dtype_of(d)

    def cast(end):
        if end is None:
            return None
        end = asarray(end)
        if not _np.can_cast(dtype_of(end), dtype, casting="same_kind"):
            raise TypeError(
                f"ediff1d: to_begin/to_end of dtype {dtype_of(end)} cannot be "
                f"cast to the input's dtype {dtype}"
            )
        return astype(reshape(end, (-1,)), dtype)

    return _between(cast(to_begin), d, cast(to_end))


# --- interpolation and polynomials ----------------------------------------------------------------


@mirror("function")
def interp(
    x: ArrayLike,
    xp: ArrayLike,
    fp: ArrayLike,
    left: ArrayLike | None = None,
    right: ArrayLike | None = None,
    period: float | None = None,
) -> Array:
    """NumPy's `interp`: piecewise-linear interpolation, differentiable in `x`, `fp`, `xp`,
    `left` and `right`.

    At a knot x == xp[k] the derivative in x is the slope of the segment to the right (JAX's
    convention), and at x == xp[-1] that of the last segment. float32 inputs give float32.
    `x` and `xp` must be real, as in NumPy; `fp` (and then `left`, `right`) may be complex.
    """
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    for arg, v in (("x", x), ("xp", xp)):
        if dtype_of(v).kind == "c":
            raise TypeError(
                f"interp: {arg} is complex ({describe(v)}); NumPy interpolates at "
                f"real points only: pass fgrad.numpy.real({arg}) if its imaginary "
                "part is meant to be dropped (fp may be complex)"
            )
    if dtype_of(fp).kind != "c":
        for arg, v in (("left", left), ("right", right)):
            if v is not None and dtype_of(v).kind == "c":
                raise TypeError(
                    f"interp: {arg} is complex ({describe(v)}) but fp is real "
                    f"({describe(fp)}); NumPy refuses a complex {arg} for real fp: "
                    "make fp complex, or pass a real value"
                )
    if ndim(xp) != 1 or ndim(fp) != 1:
        raise ValueError(
            f"interp: xp and fp must be 1-D; they have shapes {shape(xp)} and {shape(fp)}"
        )
    if shape(xp) != shape(fp):
        raise ValueError(
            f"interp: xp and fp must have the same length; they have {shape(xp)[0]} and "
            f"{shape(fp)[0]}"
        )
    if shape(xp)[0] == 0:
        raise ValueError("interp: the sample points xp are empty")
    dtype = _float_dtype(x, fp)
    # NumPy interpolates fp in the result's precision: integers as floats (f1 - f0 in uint8
    # would wrap: 1 - 3 is 254), and float16 or float32 values of a float64 result in float64
    # (f1 - f0 rounded to float16 was 7e-5 off NumPy's)
    if dtype_of(fp) != dtype:
        fp = astype(fp, dtype)
    knots_dtype = _np.finfo(dtype).dtype  # the knots take the result's (real) precision
    if not _is_traced(xp):
        _core.refuse_lazy("interp", "each x's segment is found from the knots' values", xp)
        xp = _np.asarray(xp, dtype=knots_dtype)
    elif dtype_of(xp) != knots_dtype:  # (traced ones too: float32 knots of a float64 result
        xp = astype(xp, knots_dtype)  # made its segment widths in float32, 3e-10 off)
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be non-zero")
        period = abs(period)
        left = right = None
        # x mod period: the subtracted multiple of the period is a constant
        x = x - period * floor(constant_of(x) / period)
        xp = xp - period * floor(constant_of(xp) / period)
        if _core.holds_batch(xp):
            xp, fp = _sorted_by(constant_of(xp), xp, fp)
        else:
            order = _np.argsort(primal(xp))  # NumPy's sort: its order of knots that tie
            xp, fp = xp[order], fp[order]
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    # Rows of a batch put their points in different segments: then the segments, the masks
    # and the gathers are fgrad operations, and every mask is applied (no branch on a value).
    rows = _core.holds_batch(x) or _core.holds_batch(xp)
    # Under `jit` they are recorded operations too, but each branch reads its mask's `any`
    # (a guard on one bool): the record applies the operations an eager call applies, to
    # the bit. (Reading the values themselves would guard each, a record per call.)
    staged_points = _core.holds_staged(x) or _core.holds_staged(xp)
    points_readable = not (rows or staged_points)  # (then the segments are NumPy's search)
    # values of another library (Dask's, lazy) are not read: every mask made from them is
    # applied, as for a batch's rows (NumPy would read a protocol-only array as an object)
    lazy_values = _core.is_foreign_array(_core.innermost(fp))
    readable = points_readable and not _core.holds_staged(fp) and not lazy_values
    n = shape(xp)[0]
    if staged_points or not rows:  # (a `jit` record's gathers of the knots read the segments)
        why = "each x's segment is found from its value"
        _core.refuse_lazy("interp", why, _core.innermost(x), _core.innermost(xp))
    if points_readable:
        xv, xpv = _np.asarray(primal(x)), _np.asarray(primal(xp))
    else:
        xv, xpv = constant_of(x), constant_of(xp)
    below, above = less(xv, xpv[0]), greater(xv, xpv[-1])
    nan_x = not_equal(xv, xv) if rows else xv != xv
    if n == 1:
        y = broadcast_to(fp[0], shape(x))
    else:
        if points_readable:
            j = _np.clip(_np.searchsorted(xpv, xv, side="right") - 1, 0, n - 2)
        else:  # searchsorted(xp, x, "right") of sorted knots: how many are <= x
            # (not > x: a nan x is after every knot, in NumPy's order, as searchsorted puts it)
            j = sum(logical_not(greater(xpv, expand_dims(xv, -1))), axis=-1) - 1
            j = clip(j, 0, n - 2)
        x0, x1, f0, f1 = _gather(xp, j), _gather(xp, j + 1), _gather(fp, j), _gather(fp, j + 1)
        outside = logical_or(below, above) if rows else below | above
        # (and at a nan x, whose value is nan, below: the formula's nan would make the
        # reverse derivatives of the other points nan, 0 * nan in the sums of their slopes)
        outside = logical_or(outside, nan_x) if rows else outside | nan_x
        if _some(outside, rows):
            # the formula's value is not taken outside the knots (fp[0], fp[-1], left or
            # right is): x0 there, so that an infinite x gives no 0 * inf to the derivatives
            x = where(outside, constant_of(x0), x)
        dx = x1 - x0
        # only at x == xp[-1] == xp[-2] (a nan x, clipped to the last segment too, is nan below)
        flat = _np.asarray(primal(dx)) == 0 if points_readable else equal(constant_of(dx), 0)
        some_flat = _some(flat, rows)
        # NumPy's formula, slope * (x - x0) + f0, so that the value is NumPy's to the bit
        slope = (f1 - f0) / (where(flat, 1.0, dx) if some_flat else dx)
        with _np.errstate(invalid="ignore"):  # (0 * inf at an infinite knot: NumPy's
            y = slope * (x - x0) + f0  # interp does not warn, and retries as below)
            if dtype_of(fp).kind != "c":
                y = _retried_from_the_right(
                    y, x, x0, x1, f0, f1, slope, rows or lazy_values, readable
                )
        if some_flat:
            y = where(flat, f1, y)
        # at the last knot NumPy gives fp[-1] itself (the formula may round off it), with
        # the last segment's derivatives here (the convention above)
        at_end = equal(xv, xpv[-1]) if rows else xv == xpv[-1]
        if _some(at_end, rows):
            y = where(at_end, constant_of(f1) + zero_with_derivatives_of(y), y)
        if _some(nan_x, rows):  # NumPy's value at a nan x: nan (nan + 0j for complex values)
            nan = complex(_np.nan, 0.0) if dtype_of(y).kind == "c" else _np.nan
            y = where(nan_x, _np.asarray(nan, dtype_of(y)), y)  # (one knot: fp[0], below)
    if _some(below, rows):
        y = where(below, fp[0] if left is None else left, y)
    if _some(above, rows):
        y = where(above, fp[-1] if right is None else right, y)
    y = astype(y, dtype) if dtype_of(y) != dtype else y
    return scalar_if_0d(y)  # (a NumPy scalar for a scalar x, as NumPy gives)


def _some(mask, rows):
    """Whether `interp` takes the branch for `mask`: with `rows` (a batch's) always, as no
    row is read; otherwise when an element is true, read (under `jit`, a guard on one bool)."""
    return True if rows else bool(primal(mask.any()))


def _retried_from_the_right(y, x, x0, x1, f0, f1, slope, rows, readable):
    """NumPy's interp where slope * (x - x0) + f0 is nan (0 * inf, in a segment with an
    infinite end: interp(-1, [-inf, 0], [1, 2]) is 2): x0's own f0 at x == x0, else the same
    line from the segment's other end, slope * (x - x1) + f1, else (still nan) f0 if f0 ==
    f1. One formula, whose end is chosen by `where`: x reaches the result by one path, so
    its derivative keeps its sign (-0.0 outside the knots, as eager); and x minus the end is
    0 where f0 is taken, so that no 0 * inf reaches the derivatives through `where`."""

    def values(v):
        return _np.asarray(primal(v)) if readable else constant_of(v)

    yv, xv, x0v = values(y), values(x), values(x0)
    if rows:
        # (functions, not operators: also for arrays that only speak NumPy's protocols)
        retry = not_equal(yv, yv)  # (nan)
        at_x0 = logical_and(retry, equal(xv, x0v))
        back = logical_and(retry, logical_not(at_x0))
    else:
        retry = yv != yv
        if not _some(retry, rows):
            return y
        at_x0 = retry & (xv == x0v)
        back = retry & ~at_x0
    f0v, f1v = values(f0), values(f1)
    bv = values(slope) * (xv - values(x1)) + f1v
    if rows:
        use_f0 = logical_or(
            at_x0, logical_and(logical_and(back, not_equal(bv, bv)), equal(f0v, f1v))
        )
    else:
        use_f0 = at_x0 | (back & (bv != bv) & (f0v == f1v))
    line = slope * where(use_f0, 0.0, x - where(back, x1, x0)) + where(back, f1, f0)
    return where(use_f0, f0, line)  # y, to the bit, where it is not retried


def _sorted_by(keys, *values):
    """values (1-D, as long as keys) in the order of a stable sort of keys, in fgrad
    operations for keys that differ between rows: each element's rank counts the keys below
    it and the equal keys before it, and position r takes the element of rank r."""
    n = shape(keys)[0]
    below = sum(less(keys, expand_dims(keys, -1)), axis=-1)
    tied_before = where(_np.tri(n, k=-1, dtype=bool), equal(keys, expand_dims(keys, -1)), False)
    rank = below + sum(tied_before, axis=-1)
    hit = equal(rank, expand_dims(_np.arange(n), -1))  # hit[r, i]: element i has rank r
    return tuple(sum(where(hit, v, 0), axis=-1) for v in values)


def _gather(v, idx):
    """v[idx] for a 1-D v; a batched idx (one per row) picks by a comparison with every
    position, as getitem takes only constant indices."""
    if not _core.holds_batch(idx):
        # (an index a `jit` record computes, into constant knots: fgrad's getitem records
        # the gather; NumPy's would read the index, a guard on every element)
        return getitem(v, idx) if type(idx) is Box else v[idx]
    hit = equal(expand_dims(idx, -1), _np.arange(shape(v)[0]))
    return sum(where(hit, v, 0), axis=-1)


@mirror("function")
def polyval(p: ArrayLike, x: ArrayLike) -> Array:
    """NumPy's `polyval(p, x)`: the polynomial with coefficients `p` (highest power first) at
    `x`, by Horner's scheme; differentiable in both.

    >>> import fgrad.numpy as fnp
    >>> float(fnp.polyval([3.0, 0.0, 1.0], 5.0))
    76.0
    """
    p, x = asarray(p), asarray(x)
    if ndim(p) == 0:
        raise ValueError("polyval: p must be a sequence of coefficients, not a scalar")
    if shape(p)[0] == 0:  # the empty sum: NumPy's zeros_like(x)
        return _np.zeros(shape(x), dtype_of(x))
    y = _np.zeros(shape(x), dtype_of(x)) + p[0]
    for k in range(1, shape(p)[0]):
        y = y * x + p[k]
    return y


@mirror("creation")
def vander(x: ArrayLike, N: int | None = None, increasing: bool = False) -> Array:
    """NumPy's `vander`: columns are powers of x (decreasing unless `increasing`), NumPy's
    values bit for bit: x^k is the running product x * x * ... * x (NumPy's
    `multiply.accumulate`, not `x ** k`, which rounds otherwise), in NumPy's dtype (x's
    promoted with the default integer). Single-precision x (float32, complex64) gives its
    own dtype, NumPy's values (made in double precision) rounded once, as JAX keeps it; NumPy
    returns float64 or complex128 (and so does fgrad for float16 x).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.vander(np.array([2.0, 3.0]), 3)
    array([[4., 2., 1.],
           [9., 3., 1.]])
    >>> fgrad.jacfwd(lambda x: fnp.vander(x, 3)[:, 0])(np.array([2.0, 3.0]))
    array([[4., 0.],
           [0., 6.]])
    """
    kept = _single_precision(x) if isinstance(x, (_np.ndarray, _np.generic, Box)) else None
    if numpy_applies(x):
        out = _np.vander(x, N, increasing)
        return out if kept is None else out.astype(kept)
    x = asarray(x)
    if ndim(x) != 1:
        raise ValueError(f"vander: x must be one-dimensional; it has shape {shape(x)}")
    n = shape(x)[0]
    if N is None:
        N = n
    dt = _np.promote_types(dtype_of(x), int)  # NumPy's
    columns = [_np.ones((n, min(N, 1)), dt)]
    if N > 1:
        x = astype(x, dt) if dtype_of(x) != dt else x
        # (the array method: `cumprod` is fgrad.numpy.statistics', which this module does not
        # import) the running products, as NumPy's `multiply.accumulate` makes them
        columns.append(broadcast_to(reshape(x, (n, 1)), (n, N - 1)).cumprod(axis=1))
    v = _between(None, columns[0], columns[1] if N > 1 else None, axis=1)
    if not increasing:
        v = v[:, ::-1]
    return v if kept is None else astype(v, kept)


# --- integration ----------------------------------------------------------------------------------


@mirror("function")
def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: float = 1.0, axis: int = -1) -> Array:
    """NumPy's `trapezoid`: the trapezoidal rule along `axis`, with sample points `x` (1-D, or
    the shape of y) or a spacing `dx`; differentiable in y, x and dx."""
    y = asarray(y)
    nd = ndim(y)
    axis = _normalize_axes(axis, nd)[0]
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if ndim(x) == 1:
            d = diff(x)
            along = [1] * nd
            along[axis] = shape(d)[0]
            d = reshape(d, tuple(along))
        else:
            d = diff(x, axis=axis)
    lead = (slice(None),) * axis
    upper, lower = y[lead + (slice(1, None),)], y[lead + (slice(None, -1),)]
    return sum(multiply(d, upper + lower) / 2.0, axis=axis)


# --- sample covariance and correlation ------------------------------------------------------------


def _rows_2d(m, name, arg, dtype):
    m = asarray(m)
    if ndim(m) > 2:
        raise ValueError(f"{name}: {arg} has shape {shape(m)}; it must have at most 2 dimensions")
    out = astype(m, dtype)
    return out if ndim(out) == 2 else reshape(out, (1, -1))


def _weights(w, name, n, dtype):
    w = asarray(w)
    if dtype_of(w).kind == "c":  # NumPy would drop the imaginary part, with a warning
        raise TypeError(
            f"cov: {name} are complex ({describe(w)}); weights must be real: pass "
            f"fgrad.numpy.real({name}) or fgrad.numpy.abs({name})"
        )
    if _is_traced(w):
        # the weights as a constant for the checks, which read one boolean each (under `jit`
        # a guard that holds for every valid weight, where reading the weights was a guard on
        # each of them); lazy ones (Dask's) are not checked
        wv = None if _core.is_foreign_array(_core.innermost(w)) else constant_of(w)
        if dtype_of(w) != dtype:  # as the plain weights are: the data's precision is kept
            w = astype(w, dtype)
    elif _core.is_foreign_array(w):  # lazy (Dask's): cast, and not read for the checks
        wv, w = None, astype(w, dtype)
    else:
        wv = _np.asarray(w, dtype=float)
        w = wv.astype(dtype)
    if ndim(w) != 1 or shape(w)[0] != n:
        raise ValueError(f"cov: {name} has shape {shape(w)}; it needs one weight per sample ({n})")
    if wv is not None and read_any(less(wv, 0)):
        raise ValueError(f"cov: {name} cannot be negative")
    return w, wv


@mirror("function")
def cov(
    m: ArrayLike,
    y: ArrayLike | None = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: ArrayLike | None = None,
    aweights: ArrayLike | None = None,
    *,
    dtype: DTypeLike | None = None,
) -> Array:
    """NumPy's `cov` with `rowvar`, `bias`, `ddof`, `fweights` and `aweights` (which may be
    traced); float32 data gives a float32 result (NumPy would give float64; float16 data
    gives NumPy's float64)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError(
            f"cov: ddof must be an integer (the degrees of freedom removed), got {ddof!r}"
        )
    if dtype is None:
        dtype = _float_dtype(m) if y is None else _float_dtype(m, y)
    X = _rows_2d(m, "cov", "m", dtype)
    if not rowvar and ndim(m) != 1:
        X = transpose(X)
    if shape(X)[0] == 0:
        return _np.array([]).reshape(0, 0)
    if y is not None:
        Y = _rows_2d(y, "cov", "y", dtype)
        if not rowvar and shape(Y)[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = shape(X)[1]
    w = None
    # (weights are real, as NumPy's: in complex data's precision, the degrees of freedom were
    # complex, and NumPy's float(fact) warned of a discarded imaginary part)
    real = _np.finfo(dtype).dtype
    if fweights is not None:
        w, fv = _weights(fweights, "fweights", n, real)
        if fv is not None and read_any(not_equal(fv, floor(fv))):
            raise TypeError("cov: fweights must be integers")
    if aweights is not None:
        aweights, _ = _weights(aweights, "aweights", n, real)
        w = aweights if w is None else w * aweights
    fact: Any  # the degrees of freedom: a number, or an array where weights are traced
    if w is None:
        avg = sum(X, axis=1) / n
        fact = n - ddof
    else:
        w_sum = sum(w)
        avg = sum(X * w, axis=1) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * sum(w * aweights) / w_sum
    lazy_values = _core.is_foreign_array(_core.innermost(fact))
    if _core.holds_batch(fact) or lazy_values:  # each row's own, or lazy: no branch on values
        # NumPy's warning reads the values: not those of a lazy (Dask) array
        if not lazy_values and (all_rows(fact, "cov") <= 0).any():
            _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = where(greater(constant_of(fact), 0), fact, 0.0)  # 0 where NumPy would set it
    elif bool(less_equal(fact, 0)):  # (traced: one boolean read, not the number)
        _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    # NumPy's 1 / fact is a float64 number, whatever the data's precision
    plain = not _is_traced(fact) and not _core.is_foreign_array(fact)
    fact = float(fact) if plain else astype(fact, _np.float64)
    X = X - reshape(avg, (-1, 1))
    X_T = conj_if_complex(transpose(X) if w is None else transpose(X * w))
    with _np.errstate(divide="ignore"):
        # batched or lazy: divided as it is (1/0 gives inf there)
        scale = 1.0 / fact if _core.holds_batch(fact) or lazy_values or fact != 0 else _np.inf
    # NumPy's `c *= true_divide(1, fact)`: times a float64 1/fact, rounded once to the data's
    # precision (a Python float, weakly typed, would round 1/fact to it first)
    product = matmul(X, X_T) * (_np.float64(scale) if plain else scale)
    return squeeze(product if dtype_of(product) == dtype else astype(product, dtype))


@mirror("function")
def corrcoef(
    x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, *, dtype: DTypeLike | None = None
) -> Array:
    """NumPy's `corrcoef`. NumPy clips the result to [-1, 1] to undo rounding; here the clip
    changes the value only, so the gradient is that of the exact formula (a rounding that
    lands at 1.0000000000000002 does not zero the gradient, as a clip would)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim(c) == 0:
        return c / c
    d = einsum("ii->i", c)
    stddev = sqrt(real(d) if dtype_of(d).kind == "c" else d)
    c = c / reshape(stddev, (-1, 1)) / reshape(stddev, (1, -1))
    return _unit_clip_p(c)


def _unit_clip(c):
    """NumPy's clip of a correlation to [-1, 1] (the real and imaginary parts each), written as
    c plus the correction, as `corrcoef` applies it."""
    clipped = _np.clip(_np.real(c), -1, 1)
    if _np.iscomplexobj(c):
        clipped = clipped + 1j * _np.clip(_np.imag(c), -1, 1)
    return c + (clipped - c)


# The clip undoes rounding: it changes the value only, and the derivative is the exact
# formula's (a rounding that lands at 1.0000000000000002 does not zero the gradient, as a clip
# would). A primitive of its own, so that `jit` records it as one operation (computing it from
# the values read them, a guard on every element, and jit recorded again at every call) and
# every level passes tangents, cotangents and coefficients through it unchanged.
_unit_clip_p = identity_derivatives(_unit_clip, "corrcoef_clip")


# --- polynomial arithmetic ------------------------------------------------------------------------
# Coefficients run from the highest power down, as in NumPy. Plain inputs get NumPy's own
# result; traced ones keep float32 where NumPy would promote (polyint), as JAX does.


def _poly(p, name, arg="p"):
    p = asarray(p)
    if ndim(p) == 0:
        p = reshape(p, (1,))
    if ndim(p) != 1:
        raise ValueError(
            f"{name}: {arg} must be a 1-D sequence of coefficients, got shape {shape(p)}"
        )
    return p


def _pad_front(p, n):
    """p with zeros in front to length n (a higher power with coefficient 0)."""
    k = shape(p)[0]
    if k >= n:
        return p
    return concatenate([_np.zeros(n - k, dtype_of(p)), p])


def _aligned(a1, a2, name):
    """The coefficients of a1 and a2 with the shorter padded to the other's length, in NumPy's
    steps: operands of equal length (along their first axis) are returned as they are, so two
    2-D arrays of one shape add elementwise as in NumPy; only a shorter one is padded, which
    must be 1-D."""
    a1, a2 = _at_least_1d(a1), _at_least_1d(a2)
    n1, n2 = shape(a1)[0], shape(a2)[0]
    if n1 < n2:
        a1 = _pad_front(_poly(a1, name, "a1"), n2)
    elif n2 < n1:
        a2 = _pad_front(_poly(a2, name, "a2"), n1)
    return a1, a2


def _at_least_1d(p):
    p = asarray(p)
    return reshape(p, (1,)) if ndim(p) == 0 else p


@mirror("function")
def polyadd(a1: ArrayLike, a2: ArrayLike) -> Array:
    """NumPy's `polyadd`: the sum of two polynomials (the shorter padded with leading zeros)."""
    if numpy_applies(a1, a2):
        return _np.polyadd(a1, a2)
    a1, a2 = _aligned(a1, a2, "polyadd")
    return a1 + a2


@mirror("function")
def polysub(a1: ArrayLike, a2: ArrayLike) -> Array:
    """NumPy's `polysub`: a1 - a2 as polynomials."""
    if numpy_applies(a1, a2):
        return _np.polysub(a1, a2)
    a1, a2 = _aligned(a1, a2, "polysub")
    return a1 - a2


@mirror("function")
def polymul(a1: ArrayLike, a2: ArrayLike) -> Array:
    """NumPy's `polymul`: the product of two polynomials, the convolution of their
    coefficients."""
    if numpy_applies(a1, a2):
        return _np.polymul(a1, a2)
    why = "the product's length depends on the factors' values (leading zeros are dropped)"
    _core.refuse_lazy("polymul", why, _core.innermost(a1), _core.innermost(a2))
    return convolve(_nonzero_lead(a1, "a1"), _nonzero_lead(a2, "a2"))


def _nonzero_lead(p, arg):
    """p without its leading zero coefficients (all of them: one zero), as NumPy's polymul
    reads each factor (`poly1d`). Which are zero is read from the values (a `jit` guard); the
    dropped ones get no derivative, as NumPy's product has no place for them."""
    p = _poly(p, "polymul", arg)
    if shape(p)[0] == 0:  # no coefficient: NumPy reads the zero polynomial, [0]
        return _np.zeros(1, dtype=dtype_of(p))
    lead = 0
    while lead < shape(p)[0] - 1 and bool(p[lead] == 0):
        lead += 1
    return p[lead:] if lead else p


def _powers(n, p):
    """n, n-1, ..., 1 in p's dtype when it is floating, else NumPy's default integer (as
    NumPy's `polyder`: integer coefficients have integer derivatives)."""
    dt = dtype_of(p)
    return _np.arange(n, 0, -1, dtype=dt if _np.issubdtype(dt, _np.inexact) else None)


def _single_precision(*xs):
    """The single-precision dtype (float32, complex64) of the inputs xs that fgrad keeps where
    NumPy computes and returns double precision for them (polyder, polyint, vander), else
    None (`keeps_single_precision`: float16 takes NumPy's float64). Python numbers take the
    arrays' precision (they are weakly typed, as in JAX)."""
    # (a Python number that `jit` holds as given stays weakly typed, as it is eagerly)
    dt = _np.result_type(*[_weak_or_dtype(x) for x in xs if x is not None])
    return dt if keeps_single_precision(dt) else None


@mirror("function")
def polyder(p: ArrayLike, m: int = 1) -> Array:
    """NumPy's `polyder`: the m-th derivative of the polynomial p. Float32 coefficients give
    float32 ones, NumPy's (computed in float64) rounded once (NumPy returns float64).

    >>> import fgrad.numpy as fnp
    >>> fnp.polyder(fnp.array([1.0, 1.0, 1.0, 1.0]), 2)
    array([6., 2.])
    """
    kept = _single_precision(p) if isinstance(p, (_np.ndarray, _np.generic, Box)) else None
    if numpy_applies(p):
        out: Any = _np.polyder(p, m)  # (an array; NumPy's stub says poly1d)
        return out if kept is None else out.astype(kept)
    m = int(m)
    if m < 0:
        raise ValueError(
            f"polyder: order of derivative m must be non-negative, got {m} (see polyint)"
        )
    p = asarray(p)
    numpys = _np.result_type(dtype_of(p), _np.int_)  # p times its integer powers, as NumPy's
    if m and dtype_of(p) != numpys:  # NumPy's steps, in NumPy's dtype (float16: float64)
        p = astype(p, numpys)
    for _ in range(m):
        p = p[:-1] * _powers(shape(p)[0] - 1, p)
    return p if kept is None else astype(p, kept)


@mirror("function")
def polyint(p: ArrayLike, m: int = 1, k: ArrayLike | None = None) -> Array:
    """NumPy's `polyint`: the m-th antiderivative of p, with integration constants `k` (a
    scalar, or one per integration, the first used first); differentiable in p and k.
    Float32 coefficients (and constants) give float32 ones, NumPy's (computed in float64)
    rounded once (NumPy returns float64)."""
    kept = _single_precision(p, k) if isinstance(p, (_np.ndarray, _np.generic, Box)) else None
    if numpy_applies(p, k):
        out: Any = _np.polyint(p, m, k)  # (an array; NumPy's stub says poly1d)
        return out if kept is None else out.astype(kept)
    m = int(m)
    if m < 0:
        raise ValueError(f"polyint: order of integral m must be non-negative, got {m}")
    p = asarray(p)
    if k is None:
        k = _np.zeros(m, _float_dtype(p))
    k = asarray(k)
    if ndim(k) == 0:
        k = reshape(k, (1,))
    if shape(k)[0] == 1 and m > 1:
        k = broadcast_to(k, (m,))
    if shape(k)[0] < m:
        raise ValueError(
            f"polyint: k must be a scalar or have at least m = {m} constants, got shape {shape(k)}"
        )
    if m == 0:
        return p  # NumPy's p as it is: no step, so no cast (int8 stays int8)
    dt = _float_dtype(p, k)
    if kept is not None:
        dt = _np.result_type(kept, _np.float64)  # NumPy's steps, in NumPy's dtype
    p = astype(p, dt)
    for i in range(m):
        p = concatenate([p / _powers(shape(p)[0], p), astype(k[i : i + 1], dt)])
    return p if kept is None else astype(p, kept)


@mirror("function")
def polydiv(u: ArrayLike, v: ArrayLike) -> tuple[Array, Array]:
    """NumPy's `polydiv`: (quotient, remainder) of u / v by long division, differentiable in
    both. Leading remainder coefficients that NumPy drops as zero (`allclose(r[0], 0)`) are
    dropped here too. Those the division zeroes by construction have zero derivatives; a
    remainder coefficient that merely happens to be (near) zero at this point (v divides u)
    is dropped with its derivative, since NumPy's result has no place for it."""
    why = "the remainder's length depends on its values (leading zeros are dropped)"
    _core.refuse_lazy("polydiv", why, _core.innermost(u), _core.innermost(v))
    if not (is_traced(u) or is_traced(v)):
        return _np.polydiv(u, v)
    u, v = _poly(u, "polydiv", "u"), _poly(v, "polydiv", "v")
    # NumPy's `u + 0.0`, `v + 0.0`: integers become float64, and a -0.0 coefficient 0.0 (so
    # 1 / v[0] is +inf); the remainder is in their common dtype, but 1 / v[0] in v's own, as
    # NumPy's (a float32 v: rounded to float32, whatever u's precision)
    u, v = u + 0.0, v + 0.0
    dt = _np.result_type(dtype_of(u), dtype_of(v))
    m, n = shape(u)[0] - 1, shape(v)[0] - 1
    scale = 1.0 / v[0]
    r = astype(u, dt) if dtype_of(u) != dt else u
    terms = []
    for k in range(m - n + 1):
        # NumPy's `scale * r[k]` of two NumPy scalars, in its scalar arithmetic (the operator:
        # a NumPy scalar times a traced one would go to the multiply ufunc, whose complex
        # product rounds otherwise)
        d = multiply_operator(scale, r[k])
        terms.append(d)
        r = at(r)[k : k + n + 1].add(-(d * v))  # r is a plain array while only v is traced
    q = stack(terms) if terms else _np.zeros(1, dt)
    while shape(r)[0] > 1 and _leading_zero(r):
        r = r[1:]
    return q, r


def _leading_zero(r):
    """Whether NumPy's polydiv drops r's first coefficient as zero (`allclose(r[0], 0)`). For
    a batch, each row's answer: the rows agree unless their remainders differ in length."""
    return bool(_np.abs(mask_values(r)[0]) <= 1e-8)  # NumPy's allclose(r[0], 0, rtol=1e-14)


@mirror("function")
def polyfit(
    x: ArrayLike,
    y: ArrayLike,
    deg: int,
    rcond: float | None = None,
    full: bool = False,
    w: ArrayLike | None = None,
    cov: bool | str = False,
) -> Array | tuple[Array, ...]:
    """NumPy's `polyfit`: the least-squares polynomial of degree `deg` through (x, y) (y may
    hold several data sets as columns), weighted by `w`, with NumPy's `rcond`, `full` and
    `cov` outputs. Differentiable in x, y and w wherever the fit is (where the rank of the
    scaled Vandermonde matrix does not change): the coefficients, the residuals, the singular
    values and the covariance. The values are NumPy's own fit of the plain values (with its
    checks and its RankWarning); the derivatives are those of the same fit written in fgrad
    operations, in NumPy's steps.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> slope = lambda y: fnp.polyfit(x, y, 1)[0]
    >>> np.round(fgrad.grad(slope)(np.array([1.0, 3.0, 5.0, 7.0])), 12)
    array([-0.3, -0.1,  0.1,  0.3])
    """
    if not (is_traced(x) or is_traced(y) or is_traced(w)):
        _core.refuse_lazy("polyfit", "its value is NumPy's own polyfit", x, y, w)
        # (NumPy's stub overloads on Literal flags; the flags pass through to NumPy)
        return _np.polyfit(x, y, deg, rcond, full, w, cov)  # type: ignore[call-overload]
    if _core.holds_batch(x) or _core.holds_batch(y) or _core.holds_batch(w):
        exact = None  # NumPy fits one row at a time: the values are the fgrad fit's
    elif _core.holds_staged(x) or _core.holds_staged(y) or _core.holds_staged(w):
        # in a `jit` record: NumPy's fit is an operation of the record, not read from it
        exact = _polyfit_p(x, y, w, deg=deg, rcond=rcond, full=full, cov=cov)
    else:
        exact = _np.polyfit(primal(x), primal(y), deg, rcond, full, primal(w), cov)  # type: ignore[call-overload]
    order = int(deg) + 1
    x, y = asarray(x) + 0.0, asarray(y) + 0.0
    n = shape(x)[0]
    if rcond is None:
        rcond = n * _np.finfo(dtype_of(x)).eps
    # NumPy's vander is in double precision for single-precision x (fgrad's keeps x's dtype):
    # the fit is NumPy's double-precision one, under vmap too
    lhs, rhs = vander(astype(x, _np.promote_types(dtype_of(x), int)), order), y
    if w is not None:
        w = asarray(w) + 0.0
        lhs = lhs * reshape(w, (-1, 1))
        rhs = rhs * (reshape(w, (-1, 1)) if ndim(rhs) == 2 else w)
    scale = sqrt(sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = _linalg.lstsq(lhs, rhs, rcond)
    c = transpose(transpose(c) / scale)
    fitted: tuple[Any, ...]
    if full:
        fitted = (c, resids, rank, s, rcond)
    elif cov:
        v = _linalg.inv(matmul(transpose(lhs), lhs)) / outer(scale, scale)
        fac = 1 if cov == "unscaled" else resids / (n - order)
        fitted = (c, v * fac if ndim(y) == 1 else reshape(v, shape(v) + (1,)) * fac)
    else:
        return _valued(exact, c)
    if exact is None:
        return fitted
    return tuple(_valued(e, f) for e, f in zip(exact, fitted))


def _valued(value, f):
    """NumPy's `value` carrying the derivatives of `f`, the same quantity computed in fgrad
    operations: `value + (f - f as a constant)`, whose second term is zero in value (and in a
    `jit` record computed, not read). Without a value (a batch), f; an integer (the rank) has
    no derivative to carry."""
    if value is None:
        return f
    if not is_traced(f) or dtype_of(f).kind not in "fc":
        return value
    return value + zero_with_derivatives_of(f)


# NumPy's polyfit of traced values inside a `jit` record (`polyfit`'s values): an operation the
# record computes at every replay; reading x and y for it was a guard on every element.
_polyfit_p = nondiff(
    lambda x, y, w, deg, rcond, full, cov: _np.polyfit(x, y, deg, rcond, full, w, cov),
    name="polyfit_values",
)


# (Under vmap polyfit computes its values in fgrad operations; a record made outside vmap and
# replayed inside one reaches this.)
register_rules(
    _polyfit_p,
    batch=lambda args, dims, **params: _batching.rows_one_by_one(
        _polyfit_p, args, dims, params, batch_size(args, dims), "NumPy fits one data set at a time"
    ),
)


# --- phase unwrapping and numerical gradients -----------------------------------------------------

# unwrap adds multiples of `period` that are constant where the phase is differentiable: its
# slope is 1, so both rules pass the tangent or cotangent through unchanged.
_unwrap_p = defprimitive(
    lambda p, discont, axis, period: _np.unwrap(p, discont, axis, period=period),
    vjp=lambda ans, p, **params: lambda ct: ct,
    jvp=lambda t, ans, p, **params: t,
    name="unwrap",
    forward="linear",
)


def _unwrap_taylor(primals, series, **params):
    # x plus constants: every coefficient passes through
    return bind(_unwrap_p, primals, params), series[0]


def _unwrap_batch(args, dims, discont, axis, period):
    (p,), (d,) = args, dims
    nd = len(shape(p)) - 1
    return _unwrap_p(p, discont=discont, axis=batched_axis(axis % nd, d), period=period), d


# the multiples of the period unwrap adds are constants: for sparsity detection each element
# depends on its own
register_rules(
    _unwrap_p,
    batch=_unwrap_batch,
    taylor=_unwrap_taylor,
    taylor_kind="linear",
    sparsity="keeps",
)


@mirror("function")
def unwrap(
    p: ArrayLike, discont: float | None = None, axis: int = -1, *, period: float = 2 * _np.pi
) -> Array:
    """NumPy's `unwrap` (its values exactly), differentiable in `p` with slope 1 (the added
    multiples k * period are constant where it is differentiable) and in a traced `period`
    with slope k. A traced `discont`, a threshold, has no derivative: its value is read (a
    guard under `jit`), as is a traced period's for NumPy's steps."""
    traced_period = period if _is_traced(period) else None
    limit = primal(discont) if _is_traced(discont) else discont
    step = primal(period) if _is_traced(period) else period
    p = asarray(p)
    if not _np.issubdtype(dtype_of(p), _np.inexact) and not _core.holds_batch(p):
        out = _np.unwrap(primal(p), limit, axis, period=step)
    else:
        out = _unwrap_p(p, discont=limit, axis=axis, period=step)
    if traced_period is None:
        return out
    # k, the number of periods added at each element (an integer, exactly, in NumPy's steps;
    # 0 where p is not finite, and its value is p's)
    added = (mask_values(out) - mask_values(p)) / step
    k = _np.where(_np.isfinite(added), _np.rint(added), 0.0)
    return out + zero_with_derivatives_of(traced_period) * k


def _gradient_along(f, ax, dx, edge_order):
    """NumPy's gradient of f along axis `ax`: `dx` is the spacing (a scalar), or the 1-D array
    of the differences of coordinates that are not evenly spaced (NumPy's second-order
    formulas for uneven steps, written as NumPy writes them, so the values are its own)."""
    n = shape(f)[ax]
    if n < edge_order + 1:
        raise ValueError(
            "gradient: shape of array too small to calculate a numerical gradient, at least "
            f"(edge_order + 1) = {edge_order + 1} elements are required along axis {ax}"
        )
    lead = (slice(None),) * ax

    def at_(s):
        return f[lead + (s,)]

    if ndim(dx) == 1:  # the steps between coordinates
        if not bool(equal(dx, dx[0]).all()):  # (NumPy's test, which reads them: under jit a guard)
            return _uneven_gradient_along(at_, ax, dx, edge_order, ndim(f))
        if not is_traced(dx):
            return _gradient_along(f, ax, dx[0], edge_order)
        # Even steps that are differentiated: NumPy's value, by the even formula, and the
        # derivatives of the uneven one, which depends on every step (the even formula
        # only on the first, which would miss how moving one coordinate changes the result)
        even = _gradient_along(constant_of(f), ax, constant_of(dx[0]), edge_order)
        return even + zero_with_derivatives_of(
            _uneven_gradient_along(at_, ax, dx, edge_order, ndim(f))
        )
    interior = (at_(slice(2, None)) - at_(slice(None, -2))) / (2.0 * dx)
    if edge_order == 1:
        first = (at_(slice(1, 2)) - at_(slice(0, 1))) / dx
        last = (at_(slice(-1, None)) - at_(slice(-2, -1))) / dx
    else:
        first = (
            (-1.5 / dx) * at_(slice(0, 1))
            + (2.0 / dx) * at_(slice(1, 2))
            + (-0.5 / dx) * at_(slice(2, 3))
        )
        last = (
            (0.5 / dx) * at_(slice(-3, -2))
            + (-2.0 / dx) * at_(slice(-2, -1))
            + (1.5 / dx) * at_(slice(-1, None))
        )
    return concatenate([first, interior, last], axis=ax)


def _uneven_gradient_along(at_, ax, dx, edge_order, nd):
    """`_gradient_along` for the differences `dx` of uneven coordinates (`at_`: a slice of f
    along the axis); each coefficient is a vector laid along the axis."""

    def along(c):
        return reshape(c, (1,) * ax + (-1,) + (1,) * (nd - ax - 1))

    dx1, dx2 = dx[:-1], dx[1:]
    a = along(-dx2 / (dx1 * (dx1 + dx2)))
    b = along((dx2 - dx1) / (dx1 * dx2))
    c = along(dx1 / (dx2 * (dx1 + dx2)))
    interior = a * at_(slice(None, -2)) + b * at_(slice(1, -1)) + c * at_(slice(2, None))
    if edge_order == 1:
        first = (at_(slice(1, 2)) - at_(slice(0, 1))) / dx[0]
        last = (at_(slice(-1, None)) - at_(slice(-2, -1))) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        first = (
            -(2.0 * d1 + d2) / (d1 * (d1 + d2)) * at_(slice(0, 1))
            + (d1 + d2) / (d1 * d2) * at_(slice(1, 2))
            - d1 / (d2 * (d1 + d2)) * at_(slice(2, 3))
        )
        d1, d2 = dx[-2], dx[-1]
        last = (
            d2 / (d1 * (d1 + d2)) * at_(slice(-3, -2))
            - (d2 + d1) / (d1 * d2) * at_(slice(-2, -1))
            + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * at_(slice(-1, None))
        )
    return concatenate([first, interior, last], axis=ax)


def _spacing(d, length, axis):
    """One spacing argument of `gradient` for an axis of `length` elements: a scalar as it
    is, coordinates (a 1-D array) as their differences."""
    if ndim(d) == 0:
        if not numpy_applies(d):
            return d  # (a lazy spacing, of another library: kept)
        return complex(d) if _np.iscomplexobj(d) else float(d)
    if isinstance(d, (list, tuple)):
        d = asarray(d)
    if ndim(d) != 1:
        raise ValueError(
            f"gradient: a spacing must be a scalar or a 1-D array of coordinates, got "
            f"{describe(d)} for axis {axis}"
        )
    _core.refuse_lazy(
        "gradient",
        "whether its coordinates are evenly spaced is read, to take NumPy's formula",
        _core.innermost(d),
    )
    if shape(d)[0] != length:
        raise ValueError(
            f"gradient: the coordinates for axis {axis} ({describe(d)}) must have one entry "
            f"per element along it, {length}"
        )
    if not _np.issubdtype(dtype_of(d), _np.inexact):
        d = astype(d, _np.float64)
    return d[1:] - d[:-1]


@mirror("function")
def gradient(
    f: ArrayLike,
    *varargs: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    edge_order: int = 1,
) -> Array | tuple[Array, ...]:
    """NumPy's `gradient`, with spacings given as scalars or as coordinate arrays (one for all
    axes, or one per axis): central differences inside, one-sided differences of order
    `edge_order` (1 or 2) at the ends. Linear in `f`, and differentiable in the spacings and
    coordinates. Plain inputs get NumPy's own result; traced float32 stays float32.

    >>> import fgrad.numpy as fnp
    >>> fnp.gradient(fnp.array([1.0, 2.0, 4.0, 7.0]), 2.0)
    array([0.5 , 0.75, 1.25, 1.5 ])
    """
    # (another library's arrays take fgrad's path: Dask's gradient limits the chunk sizes)
    if not any(_is_traced(d) or holds_foreign(d) for d in (f, *varargs)):
        # (NumPy's stub takes edge_order as Literal[1, 2]; any value reaches NumPy's check)
        return _np.gradient(primal(f), *varargs, axis=axis, edge_order=edge_order)  # type: ignore[call-overload]
    f = asarray(f)
    nd = ndim(f)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        for a in axes:
            if not -nd <= a < nd:
                raise ValueError(
                    f"gradient: axis {a} is out of bounds for an array with {nd} dimensions"
                )
        axes = tuple(int(a) % nd for a in axes)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(
            f"gradient: give 0, 1 or {len(axes)} spacings (one per axis), got {len(varargs)}"
        )
    spacing = [_spacing(d, shape(f)[ax], ax) for d, ax in zip(spacing, axes)]
    if not _np.issubdtype(dtype_of(f), _np.inexact):
        f = astype(f, _np.float64)
    # NumPy writes each result into an array of f's dtype: float64 spacings or coordinates
    # do not widen a float32 f's
    out = tuple(
        astype(_gradient_along(f, ax, dx, edge_order), dtype_of(f)) for ax, dx in zip(axes, spacing)
    )
    return out[0] if len(out) == 1 else out


__all__ = exported(globals())
