"""`fgrad.scipy.signal`: SciPy's n-dimensional `convolve`, `correlate` and `fftconvolve`, and
`convolve2d` and `correlate2d` with their boundaries (see that section),
differentiable in both inputs to every order.

One primitive computes the full convolution (with `scipy.signal.convolve`, or
`fftconvolve` along chosen axes); the modes 'same' and 'valid' are slices of it, and
`correlate(in1, in2)` is the convolution of in1 with in2 reversed. The transpose of a
convolution with k is a correlation with k: the cotangent of in1 is the full convolution of
the cotangent with in2 reversed, sliced back to in1's extent, so the rules are convolutions
too and differentiate again.

Arrays of another library (Dask), which SciPy would compute in one piece, are convolved by
NumPy functions that dispatch to them and stay lazy: sums of shifted, scaled copies (one term
per element of the smaller operand), or windowed sums where the result is the smaller.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.taylor` (rules), `fgrad.numpy`, and
`scipy.signal` for values.
"""

from __future__ import annotations

import operator as _operator
from typing import TYPE_CHECKING

import numpy as _np
import scipy.signal as _ss

from .. import numpy as fnp, taylor as _taylor
from ..core import bind, dtype_of, innermost, is_foreign_array
from ..numpy._mirror import missing_names
from ..numpy.shaping import (
    batch_to_front,
    describe,
    meta,
    ndim,
    read_constant,
    reshape,
    shape,
    unbroadcast,
    variant,
)
from ..primitive import defprimitive, register_rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..core import Primitive
    from ..typing import Array, ArrayLike

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]

if not TYPE_CHECKING:  # a name of scipy.signal not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.signal", page=__name__)


def _conv_impl(x, k, axes, method):
    """The full convolution along `axes`; `method` is convolve's ('auto', 'direct', 'fft':
    in the inputs' dtype, as SciPy's) or 'fftconvolve' (fftconvolve's float result)."""
    if is_foreign_array(x) or is_foreign_array(k):
        return _shifted_sum(x, k, axes, method)
    if method == "fftconvolve":
        return _ss.fftconvolve(x, k, mode="full", axes=axes)
    if method == "fft":
        return _cast_back(_ss.fftconvolve(x, k, mode="full", axes=axes), x, k)
    others = [ax for ax in range(_np.ndim(x)) if ax not in axes]
    if others and not (_np.isfinite(x).all() and _np.isfinite(k).all()):
        return _rows_apart(x, k, axes, others, method)
    if others and _np.result_type(x, k) in (_np.float16, _np.bool_):
        # SciPy's n-dimensional direct sums refuse float16 and bool, and a row of one axis is
        # np.convolve's: each row as SciPy computes it (vmap of a 1-D convolve)
        return _rows_apart(x, k, axes, others, method)
    if all(x.shape[ax] == 1 or k.shape[ax] == 1 for ax in others):
        # along an axis where one operand has length 1, the full convolution is the product
        # broadcast along it: SciPy's convolution over every axis is the one wanted
        return _ss.convolve(x, k, mode="full", method=method)
    if method == "auto":  # SciPy's choice for one row is every row's
        row = tuple(slice(None) if ax in axes else 0 for ax in range(_np.ndim(x)))
        if _ss.choose_conv_method(x[row], k[row], mode="full") == "fft":
            return _cast_back(_ss.fftconvolve(x, k, mode="full", axes=axes), x, k)
    return _direct_along(x, k, axes)


def _cast_back(out, x, k):
    """SciPy's convolve by FFTs: the result rounded for integer inputs, and in the inputs'
    dtype (integers, bool and float16 too; fftconvolve's is a float, float32 for float16)."""
    dtype = _np.result_type(x, k)
    if dtype.kind in "ui":
        out = _np.around(out)
    return out.astype(dtype, copy=False)


def _rows_apart(x, k, axes, others, method):
    """SciPy's convolution of each row (the `others` axes broadcast), one call a row: for rows
    with an inf or a nan, which SciPy's direct sums (by padding with zeros: 0 * inf) and FFTs
    spread each in a way of its own, so no computation of all rows at once gives each row
    SciPy's value; and along an axis of length 1 a convolution of the whole would multiply
    one row's inf by another's padding."""
    lead = _np.broadcast_shapes(*(tuple(a.shape[ax] for ax in others) for a in (x, k)))

    def rows(a):
        a = _np.moveaxis(a, others, range(len(others)))
        return _np.broadcast_to(a, lead + a.shape[len(others) :])

    xs, ks = rows(x), rows(k)
    out = _np.stack(
        [_ss.convolve(xs[i], ks[i], mode="full", method=method) for i in _np.ndindex(lead)]
    )
    out = out.reshape(lead + out.shape[1:])
    return _np.moveaxis(out, range(len(others)), others)


def _shifted_sum(x, k, axes, method):
    """The full convolution for arrays of another library (Dask), which SciPy would compute in
    one piece: the operand with more elements along `axes`, scaled by each element of the
    other and shifted to its position, summed (as `fgrad.numpy`'s convolve does along one
    axis; a lazy graph of one term per element of the smaller operand). Exact, so
    fftconvolve agrees with SciPy's FFTs to rounding, in its dtype."""
    if _np.prod([x.shape[ax] for ax in axes]) < _np.prod([k.shape[ax] for ax in axes]):
        x, k = k, x  # a convolution is symmetric in its operands
    widths = [k.shape[ax] for ax in axes]
    out = None
    for offsets in _np.ndindex(*widths):
        index, pad = [slice(None)] * k.ndim, [(0, 0)] * k.ndim
        for ax, j, width in zip(axes, offsets, widths):
            index[ax], pad[ax] = slice(j, j + 1), (j, width - 1 - j)
        term = _np.pad(x * k[tuple(index)], pad)
        out = term if out is None else out + term
    # SciPy's FFTs give float64 for integers, unless no axis has both lengths above 1 (then
    # fftconvolve returns the plain product)
    transformed = any(x.shape[ax] != 1 and k.shape[ax] != 1 for ax in axes)
    if method == "fftconvolve" and transformed and out.dtype.kind in "biu":
        return out.astype(_np.float64)
    return out


def _direct_along(x, k, axes):
    """The full convolution along `axes` of x and k, whose other axes have equal lengths (the
    rows of a batch): k (the operand with the smaller extent along `axes`) reversed, times the
    sliding windows of the other, zero-padded, in one einsum; the work of a direct convolution.
    """
    if _np.prod([x.shape[ax] for ax in axes]) < _np.prod([k.shape[ax] for ax in axes]):
        x, k = k, x  # a convolution is symmetric in its operands
    widths = [k.shape[ax] for ax in axes]
    pad = [(k.shape[ax] - 1,) * 2 if ax in axes else (0, 0) for ax in range(x.ndim)]
    windows = _np.lib.stride_tricks.sliding_window_view(_np.pad(x, pad), widths, axis=axes)
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = letters[: x.ndim]
    window = "".join(letters[x.ndim + i] for i in range(len(axes)))
    k_term = "".join(window[axes.index(ax)] if ax in axes else out[ax] for ax in range(x.ndim))
    flipped = k[tuple(slice(None, None, -1) if ax in axes else slice(None) for ax in range(k.ndim))]
    return _np.einsum(f"{out}{window},{k_term}->{out}", windows, flipped)


def _flip(x, axes):
    reverse = slice(None, None, -1)
    return x[tuple(reverse if ax in axes else slice(None) for ax in range(len(shape(x))))]


def _transpose_is_windowed(ans, own_shape, other_shape, axes):
    """Whether the reverse rule of a convolution of arrays of another library (Dask) takes its
    cotangent as windowed sums: there shifted copies cost one term per element of the smaller
    operand, and both ct and the other operand are large when this input is the small one,
    whose elements are then each one windowed sum. On NumPy arrays, never."""
    if not is_foreign_array(innermost(ans)):
        return False
    return _np.prod([own_shape[ax] for ax in axes]) < _np.prod([other_shape[ax] for ax in axes])


def _conv_vjp(which):
    # out[i] = sum_m x[i - m] k[m] along `axes`: d out / d x[j] pairs ct[j + m] with k[m], the
    # full convolution of ct with the reversed k from offset len(k) - 1 (symmetric in x, k).
    def maker(ans, x, k, axes, method):
        like = meta((x, k)[which])
        other = (k, x)[which]
        own_shape, other_shape = like[0], shape(other)
        windowed = _transpose_is_windowed(ans, own_shape, other_shape, axes)

        def bprop(ct):
            if windowed:  # d out / d x[j] = sum_m ct[j + m] k[m]
                return unbroadcast(_windowed(ct, other, axes), like)
            full = _conv_p(ct, _flip(other, axes), axes=axes, method=method)
            index = tuple(
                slice(other_shape[ax] - 1, other_shape[ax] - 1 + own_shape[ax])
                if ax in axes
                else slice(None)
                for ax in range(len(own_shape))
            )
            return unbroadcast(full[index], like)

        return bprop

    return maker


# The batch axis goes in front of both operands (length 1 for one that is the same in every
# row) and is left out of the convolved axes: along it the operands broadcast.


def _with_batch_axis(x, d):
    return reshape(x, (1,) + shape(x)) if d is None else batch_to_front(x, d)


def _conv_batch(args, dims, axes, method):
    (x, k), (dx, dk) = args, dims
    x, k = _with_batch_axis(x, dx), _with_batch_axis(k, dk)
    return _conv_p(x, k, axes=tuple(ax + 1 for ax in axes), method=method), 0


# scipy.signal's convolutions, for sparsity detection: dense along their axes
_DENSE_CONVOLUTION = (
    "dense",
    "scipy.signal's convolutions mix the elements along their axes (issue 35: a banded "
    "rule for a short kernel, as fgrad.numpy.convolve's)",
)


_conv_p: Primitive = defprimitive(
    _conv_impl,
    vjp=(_conv_vjp(0), _conv_vjp(1)),
    jvp=(
        lambda t, ans, x, k, axes, method: _conv_p(t, k, axes=axes, method=method),
        lambda t, ans, x, k, axes, method: _conv_p(x, t, axes=axes, method=method),
    ),
    name="convolve",
    forward="linear",
)
register_rules(
    _conv_p,
    taylor=_taylor.bilinear_rule(_conv_p),
    batch=_conv_batch,
    sparsity=_DENSE_CONVOLUTION,
)


def _prepare(in1, in2, who):
    in1, in2 = fnp.asarray(in1), fnp.asarray(in2)
    if ndim(in1) != ndim(in2):
        raise ValueError(
            f"scipy.signal.{who}: in1 has {describe(in1)} and in2 has {describe(in2)}; they "
            "must have the same number of dimensions"
        )
    for arg, x in (("in1", in1), ("in2", in2)):
        if 0 in shape(x):
            raise ValueError(f"scipy.signal.{who}: {arg} has {describe(x)}; it is empty")
    return in1, in2


def _mode_slice(full, s1, s2, axes, mode, who):
    """SciPy's modes, as centred cuts of the full result: 'full' as it is; 'same' with in1's
    shape along every axis (the broadcast ones too); 'valid' where one input covers the other
    along `axes` (one must be at least as large as the other along each of them), whole along
    the others."""
    if mode == "full":
        return full
    if mode == "same":
        keep = list(s1)
    elif mode == "valid":
        if not (all(s1[ax] >= s2[ax] for ax in axes) or all(s2[ax] >= s1[ax] for ax in axes)):
            raise ValueError(
                f"scipy.signal.{who}: for mode='valid', in1 {tuple(s1)} or in2 {tuple(s2)} must "
                "be at least as large as the other in every dimension"
            )
        keep = [abs(s1[ax] - s2[ax]) + 1 if ax in axes else n for ax, n in enumerate(shape(full))]
    else:
        raise ValueError(
            f"scipy.signal.{who}: mode must be 'full', 'valid' or 'same', got {mode!r}"
        )
    starts = [(n - k) // 2 for n, k in zip(shape(full), keep)]
    return full[tuple(slice(start, start + k) for start, k in zip(starts, keep))]


def _convolve(in1, in2, mode, axes, method, who):
    if ndim(in1) == 0:  # SciPy: the product of two scalars
        return in1 * in2
    s1, s2 = shape(in1), shape(in2)
    # no axis left to convolve (fftconvolve's, of length 1 in an input): the product
    full = _conv_p(in1, in2, axes=axes, method=method) if axes else in1 * in2
    return _mode_slice(full, s1, s2, axes, mode, who)


def _method(method, who):
    if method not in ("auto", "direct", "fft"):
        raise ValueError(
            f"scipy.signal.{who}: method must be 'auto', 'direct' or 'fft', got {method!r}"
        )
    return method


def convolve(in1: ArrayLike, in2: ArrayLike, mode: str = "full", method: str = "auto") -> Array:
    """SciPy's `signal.convolve` of two n-dimensional arrays, mode 'full', 'valid' or 'same'
    ('same' has in1's shape, centred on the full result).

    >>> import fgrad, fgrad.scipy.signal as sig, numpy as np
    >>> fgrad.grad(lambda k: sig.convolve(np.array([1.0, 2.0, 3.0]), k).sum())(np.ones(2))
    array([6., 6.])
    """
    in1, in2 = _prepare(in1, in2, "convolve")
    axes = tuple(range(ndim(in1)))
    return _convolve(in1, in2, mode, axes, _method(method, "convolve"), "convolve")


def correlate(in1: ArrayLike, in2: ArrayLike, mode: str = "full", method: str = "auto") -> Array:
    """SciPy's `signal.correlate`: the convolution of in1 with in2 reversed along every axis
    and conjugated, in the same modes."""
    in1, in2 = _prepare(in1, in2, "correlate")
    axes = tuple(range(ndim(in1)))
    return _convolve(
        in1, _flip(_conj(in2), axes), mode, axes, _method(method, "correlate"), "correlate"
    )


def fftconvolve(
    in1: ArrayLike, in2: ArrayLike, mode: str = "full", axes: int | Sequence[int] | None = None
) -> Array:
    """SciPy's `signal.fftconvolve`: the convolution along `axes` (default all), computed
    with FFTs; along the other axes the inputs broadcast (their lengths are equal or 1)."""
    in1, in2 = _prepare(in1, in2, "fftconvolve")
    return _convolve(in1, in2, mode, _fft_axes(in1, in2, axes), "fftconvolve", "fftconvolve")


def _fft_axes(in1, in2, axes):
    """fftconvolve's axes, by SciPy's rules: every axis by default; given ones must be
    integers in [-ndim, ndim), not repeated, and at least one; then the axes where an input
    has length 1 are left out (along them the convolution is the broadcast product), before
    'valid' compares the lengths."""
    s1, s2 = shape(in1), shape(in2)
    nd = len(s1)
    if nd == 0:  # SciPy: the product of two scalars, whatever the axes
        return ()
    if axes is None:
        chosen = list(range(nd))
    else:
        given = axes
        try:
            chosen = [_operator.index(ax) for ax in _np.atleast_1d(axes).tolist()]
        except TypeError:
            raise ValueError(
                f"scipy.signal.fftconvolve: axes must be an integer or a sequence of integers, "
                f"got {given!r}"
            ) from None
        where = f"axes={given!r} with in1 of shape {s1} and in2 of shape {s2}"
        if not chosen:
            raise ValueError(
                f"scipy.signal.fftconvolve: {where}: when given, axes cannot be "
                "empty; pass axes=None to convolve along every axis"
            )
        if not all(-nd <= ax < nd for ax in chosen):
            raise ValueError(
                f"scipy.signal.fftconvolve: {where}: axes exceeds dimensionality of input; "
                f"use axes in [-{nd}, {nd})"
            )
        chosen = [ax % nd for ax in chosen]
        if len(set(chosen)) != len(chosen):
            raise ValueError(
                f"scipy.signal.fftconvolve: {where}: all axes must be unique; give each axis once"
            )
    chosen = [ax for ax in chosen if s1[ax] != 1 and s2[ax] != 1]
    if not all(s1[ax] in (1, s2[ax]) or s2[ax] == 1 for ax in range(nd) if ax not in chosen):
        raise ValueError(
            f"scipy.signal.fftconvolve: incompatible shapes for in1 and in2: {s1} and {s2}; "
            f"along the axes not convolved (axes={axes!r}) their lengths must be equal or 1"
        )
    return tuple(sorted(chosen))


# --- convolve2d, correlate2d ----------------------------------------------------------------------
# SciPy's value, and rules from this model of it (checked against SciPy for every mode and
# boundary): along each axis, in1 of length M is extended to the positions -(K-1) .. M+K-2 by
# the boundary rule (zeros plus `fillvalue`, periodic, or mirrored with the edge repeated),
# a constant 0/1 matrix E with rows for the positions; the 'valid' convolution of the
# extension with the kernel (length K) is the 'full' result, and 'same' is its slice of
# length M from (K-1)//2 (convolve2d) or K//2 (correlate2d). correlate2d convolves with the
# kernel reversed and conjugated. 'valid' needs no extension; there SciPy swaps the inputs
# when in2 is the larger (and then correlate2d conjugates in1 instead of in2).
# The result is bilinear in (in1 without its fill, in2), so each forward rule is the
# primitive with one input replaced by its tangent, and the reverse rules are the transposed
# convolutions, sliced and folded back by E^T.

_BOUNDARIES = {
    "fill": "fill",
    "pad": "fill",
    "wrap": "wrap",
    "circular": "wrap",
    "symm": "symm",
    "symmetric": "symm",
}


def _sources(m, k, boundary):
    """For the positions -(k - 1) .. m + k - 2 along an axis of length m, the element each
    reads (-1 outside for 'fill')."""
    j = _np.arange(-(k - 1), m + k - 1)
    if boundary == "wrap":
        return j % m
    if boundary == "symm":
        p = j % (2 * m)
        return _np.where(p < m, p, 2 * m - 1 - p)
    return _np.where((j >= 0) & (j < m), j, -1)


def _fill(m, kk, boundary, fillvalue, dtype):
    """The fill of the extension (m + 2(kk - 1)): `fillvalue` where no element is read."""
    cover = [_sources(m[ax], kk[ax], boundary) >= 0 for ax in (0, 1)]
    return _np.asarray(~(cover[0][:, None] & cover[1][None, :]) * fillvalue, dtype=dtype)


def _conv2d_impl(x, k, mode, boundary, fillvalue, correlate):
    if is_foreign_array(x) or is_foreign_array(k):
        return _conv2d_foreign(x, k, mode, boundary, fillvalue, correlate)
    fn = _ss.correlate2d if correlate else _ss.convolve2d
    return fn(x, k, mode=mode, boundary=boundary, fillvalue=fillvalue)


def _conv2d_foreign(x, k, mode, boundary, fillvalue, correlate):
    """SciPy's convolve2d/correlate2d for arrays of another library (Dask), from the model
    above: x extended by its boundary (padded with the fill, or gathered by position: lazy,
    and as large as the extension), then the 'valid' convolution with k, sliced."""
    m, kk = x.shape, k.shape
    swap, conj_x, flip_k, conj_k = _conv2d_model(m, kk, mode, correlate)
    dtype = _np.result_type(x.dtype, k.dtype)
    a = _np.conj(x) if conj_x and x.dtype.kind == "c" else x
    b = k[::-1, ::-1] if flip_k else k
    b = _np.conj(b) if conj_k and b.dtype.kind == "c" else b
    if mode != "valid":
        if boundary == "fill":
            fill = _np.asarray(fillvalue, dtype=dtype)
            a = _np.pad(a.astype(dtype), [(n - 1, n - 1) for n in kk], constant_values=fill)
        else:
            for ax in (0, 1):
                a = _np.take(a, _sources(m[ax], kk[ax], boundary), axis=ax)
    big, small = (b, a) if swap else (a, b)
    (p0, p1), (s0, s1) = big.shape, small.shape
    if _windowed_is_shorter(big, small):
        out = _windowed(big, small[::-1, ::-1], (0, 1))
    else:
        out = _shifted_sum(big, small, (0, 1), "direct")[s0 - 1 : p0, s1 - 1 : p1]
    if mode == "same":
        t0, t1 = ((n // 2 if correlate else (n - 1) // 2) for n in kk)
        out = out[t0 : t0 + m[0], t1 : t1 + m[1]]
    return out


def _conj(x):
    return fnp.conj(x) if dtype_of(x).kind == "c" else x


def _valid(big, small):
    """The 'valid' 2-D convolution of big with small (small no larger along either axis)."""
    (p0, p1), (k0, k1) = shape(big), shape(small)
    if _windowed_is_shorter(big, small):
        return _windowed(big, small[::-1, ::-1], (0, 1))
    return _conv_p(big, small, axes=(0, 1), method="auto")[k0 - 1 : p0, k1 - 1 : p1]


def _windowed_is_shorter(big, small):
    """Whether the 'valid' 2-D convolution of arrays of another library (Dask) takes fewer
    terms as windowed sums (one per element of the result) than as shifted copies (one per
    element of small)."""
    if not (is_foreign_array(innermost(big)) or is_foreign_array(innermost(small))):
        return False
    (p0, p1), (k0, k1) = shape(big), shape(small)
    return (p0 - k0 + 1) * (p1 - k1 + 1) < k0 * k1


def _windowed(big, small, axes):
    """out[o] = the sum over `axes` of big[o : o + len(small)] * small, at every offset o where
    small fits in big (the other axes broadcast): a 'valid' correlation as one windowed sum
    per element of the result, in fgrad operations (on plain values too)."""
    frame = [shape(big)[ax] - shape(small)[ax] + 1 for ax in axes]
    index = [slice(None)] * len(shape(big))

    def block(offsets):
        if len(offsets) == len(axes):
            for ax, o in zip(axes, offsets):
                index[ax] = slice(o, o + shape(small)[ax])
            return fnp.sum(big[tuple(index)] * small, axis=axes, keepdims=True)
        rows = [block(offsets + (o,)) for o in range(frame[len(offsets)])]
        return fnp.concatenate(rows, axis=axes[len(offsets)])

    return block(())


def _conv2d_model(x_shape, k_shape, mode, correlate):
    """(swap, conj_x, flip_k, conj_k): the result is a slice of valid(A, B) (valid(B, A) with
    `swap`), A the extension of x (conjugated with `conj_x`), B = k (reversed with `flip_k`,
    conjugated with `conj_k`)."""
    swap = mode == "valid" and not all(a >= b for a, b in zip(x_shape, k_shape))
    return swap, correlate and swap, correlate, correlate and not swap


def _pad_zeros(x, widths):
    """x with `widths` zeros before and after along each axis, as zero blocks joined on (fgrad's
    pad gathers from the flattened array: slower on small arrays, and an array of another
    library (Dask) cannot do it lazily)."""
    for ax, (before, after) in enumerate(widths):
        if before or after:
            block = list(shape(x))
            block[ax] = before
            head = _np.zeros(block, dtype_of(x))
            block[ax] = after
            x = fnp.concatenate([head, x, _np.zeros(block, dtype_of(x))], axis=ax)
    return x


def _extension_maps(m, kk, boundary):
    """(extend, fold): x (m, in its last two axes; a batch in front) to its extension without
    the fill (m + 2(kk - 1)), and its transpose, folding an extension's cotangent back onto x;
    in fgrad operations, by slices along runs of consecutive sources. (Not as products with the
    model's 0/1 matrices E: those multiply every element by the zeros of its row, so one inf
    or nan made the whole extension nan, and E is quadratic in the axes' lengths.)"""
    runs = [_runs(_sources(m[ax], kk[ax], boundary)) for ax in (0, 1)]

    def extend(x):
        for ax in (-2, -1):
            pieces = []
            for _, length, lo, reverse in runs[ax]:
                if lo < 0:  # outside: zeros (the fill is added apart)
                    block = list(shape(x))
                    block[ax] = length
                    pieces.append(_np.zeros(block, dtype_of(x)))
                else:
                    pieces.append(_slice(x, ax, lo, length, reverse))
            x = fnp.concatenate(pieces, axis=ax)
        return x

    def fold(g):
        for ax in (-2, -1):
            total = None
            for start, length, lo, reverse in runs[ax]:
                if lo >= 0:
                    widths = [(0, 0)] * len(shape(g))
                    widths[ax] = (lo, m[ax] - lo - length)
                    piece = _pad_zeros(_slice(g, ax, start, length, reverse), widths)
                    total = piece if total is None else total + piece
            g = total
        return g

    return extend, fold


def _runs(src):
    """The runs of positions whose sources go on by one in one direction, or lie outside (-1):
    (start, length, the lowest source (-1 outside), whether the sources go down)."""
    runs = []  # [start, length, first source, step (0 while one long)]
    for p in range(len(src)):
        if runs:
            start, length, first, step = runs[-1]
            d = int(src[p] - src[p - 1])
            outside = src[p] < 0 and first < 0
            inside = src[p] >= 0 and first >= 0 and abs(d) == 1 and step in (0, d)
            if outside or inside:
                runs[-1] = [start, length + 1, first, d if inside else 0]
                continue
        runs.append([p, 1, int(src[p]), 0])
    return [
        (start, length, first - length + 1 if step < 0 else first, step < 0)
        for start, length, first, step in runs
    ]


def _slice(x, ax, lo, length, reverse):
    """x[lo : lo + length] along axis ax (-2 or -1), reversed with `reverse`."""
    after = (slice(None),) * (-1 - ax)
    piece = x[(Ellipsis, slice(lo, lo + length)) + after]
    return piece[(Ellipsis, slice(None, None, -1)) + after] if reverse else piece


def _conv2d_vjp(which):
    # x's cotangent needs only k's operand B; k's needs x's extension A
    def maker(ans, x, k, mode, boundary, fillvalue, correlate):
        m, kk = shape(x), shape(k)
        swap, conj_x, flip_k, conj_k = _conv2d_model(m, kk, mode, correlate)
        dtype = _np.result_type(dtype_of(x), dtype_of(k))
        like = meta((x, k)[which])
        ext = None
        if mode != "valid":
            ext = _extension_maps(m, kk, boundary)
        if which == 0:
            other = _conj(k) if conj_k else k
            other = other[::-1, ::-1] if flip_k else other
        else:
            other = _conj(x) if conj_x else x
            if ext is not None:
                other = ext[0](other)
                if boundary == "fill" and fillvalue != 0:
                    other = other + _fill(m, kk, boundary, fillvalue, dtype)
        own_is_big = (which == 0) != swap
        a_shape = tuple(a + 2 * (b - 1) for a, b in zip(m, kk)) if ext else m
        big, small = (kk, a_shape) if swap else (a_shape, kk)
        frame = tuple(a - b + 1 for a, b in zip(big, small))  # the shape of valid(big, small)
        starts = (
            tuple((n // 2 if correlate else (n - 1) // 2) for n in kk) if mode == "same" else (0, 0)
        )

        def bprop(ct):
            out = shape(ct)
            if out != frame:
                ct = _pad_zeros(ct, [(s0, f - s0 - o) for s0, f, o in zip(starts, frame, out)])
            if own_is_big:  # the transpose of valid(., small): a full convolution
                g = _conv_p(ct, other[::-1, ::-1], axes=(0, 1), method="auto")
            else:  # the transpose of valid(big, .)
                g = _valid(other, ct[::-1, ::-1])[::-1, ::-1]
            if which == 0:
                if ext is not None:
                    g = ext[1](g)
                g = _conj(g) if conj_x else g
            else:
                g = g[::-1, ::-1] if flip_k else g
                g = _conj(g) if conj_k else g
            return unbroadcast(g, like)

        return bprop

    return maker


@_taylor.declared("linear")
def _conv2d_taylor(primals, series, **params):
    """Bilinear in (in1, in2) but for the fill value, a constant border of in1 that only in1's
    value carries: the terms with a coefficient of in1 are taken with fill 0, as its forward
    rule does."""
    ans = bind(_conv2d_p, primals, params)
    order = next(len(s) for s in series if s is not None)
    xs, ks = (_taylor.full(p, s, order) for p, s in zip(primals, series))
    unfilled = {**params, "fillvalue": 0}
    out = []
    for k in range(1, order + 1):
        total = None
        for j in range(k + 1):
            if xs[j] is not None and ks[k - j] is not None:
                term = bind(_conv2d_p, (xs[j], ks[k - j]), unfilled if j else params)
                total = _taylor.add(total, term)
        out.append(total)
    return ans, tuple(out)


def _conv2d_batch(args, dims, mode, boundary, fillvalue, correlate):
    """SciPy's convolve2d of each row, from the model above: the valid convolution of the
    extension A of x (matrices E applied on both sides, and the fill) with B, sliced."""
    (x, k), (dx, dk) = args, dims
    x, k = _with_batch_axis(x, dx), _with_batch_axis(k, dk)
    m, kk = shape(x)[1:], shape(k)[1:]
    swap, conj_x, flip_k, conj_k = _conv2d_model(m, kk, mode, correlate)
    dtype = _np.result_type(dtype_of(x), dtype_of(k))
    a = _conj(x) if conj_x else x
    b = k[:, ::-1, ::-1] if flip_k else k
    b = _conj(b) if conj_k else b
    if mode != "valid":
        a = _extension_maps(m, kk, boundary)[0](a)
        if boundary == "fill" and fillvalue != 0:
            a = a + _fill(m, kk, boundary, fillvalue, dtype)
    big, small = (b, a) if swap else (a, b)
    (p0, p1), (s0, s1) = shape(big)[1:], shape(small)[1:]
    out = _conv_p(big, small, axes=(1, 2), method="direct")[:, s0 - 1 : p0, s1 - 1 : p1]
    if mode == "same":
        t0, t1 = ((n // 2 if correlate else (n - 1) // 2) for n in kk)
        out = out[:, t0 : t0 + m[0], t1 : t1 + m[1]]
    return out, 0


_conv2d_p: Primitive = defprimitive(
    _conv2d_impl,
    vjp=(_conv2d_vjp(0), _conv2d_vjp(1)),
    jvp=(  # linear in in1 without its fill, linear in in2
        lambda t, ans, x, k, mode, boundary, fillvalue, correlate: _conv2d_p(
            t, k, mode=mode, boundary=boundary, fillvalue=0, correlate=correlate
        ),
        lambda t, ans, x, k, mode, boundary, fillvalue, correlate: _conv2d_p(
            x, t, mode=mode, boundary=boundary, fillvalue=fillvalue, correlate=correlate
        ),
    ),
    name="convolve2d",
    forward="linear",
)
register_rules(_conv2d_p, taylor=_conv2d_taylor, batch=_conv2d_batch, sparsity=_DENSE_CONVOLUTION)


def _conv2d(in1, in2, mode, boundary, fillvalue, correlate):
    who = "correlate2d" if correlate else "convolve2d"
    in1, in2 = fnp.asarray(in1), fnp.asarray(in2)
    for arg, x in (("in1", in1), ("in2", in2)):
        if ndim(x) != 2:
            raise ValueError(
                f"scipy.signal.{who}: {arg} has {describe(x)}; it must be 2-D "
                "(use convolve/correlate for other dimensions)"
            )
        if 0 in shape(x):
            raise ValueError(f"scipy.signal.{who}: {arg} has {describe(x)}; it is empty")
    if mode not in ("full", "valid", "same"):
        raise ValueError(
            f"scipy.signal.{who}: mode must be 'full', 'valid' or 'same', got {mode!r}"
        )
    if boundary not in _BOUNDARIES:
        raise ValueError(
            f"scipy.signal.{who}: boundary must be 'fill', 'wrap' or 'symm' "
            f"(or 'pad', 'circular', 'symmetric'), got {boundary!r}"
        )
    fillvalue = read_constant(  # (a `jit` argument is read: another value records another path)
        fillvalue,
        f"scipy.signal.{who}",
        "fillvalue",
        "pad in1 with it and use boundary='fill' to differentiate it",
    )
    s1, s2 = shape(in1), shape(in2)
    if mode == "valid" and not (
        all(a >= b for a, b in zip(s1, s2)) or all(b >= a for a, b in zip(s1, s2))
    ):
        raise ValueError(
            f"scipy.signal.{who}: for mode='valid', in1 {s1} or in2 {s2} must "
            "be at least as large as the other in every dimension"
        )
    return _conv2d_p(
        in1,
        in2,
        mode=mode,
        boundary=_BOUNDARIES[boundary],
        fillvalue=fillvalue,
        correlate=correlate,
    )


def convolve2d(
    in1: ArrayLike,
    in2: ArrayLike,
    mode: str = "full",
    boundary: str = "fill",
    fillvalue: ArrayLike = 0,
) -> Array:
    """SciPy's `signal.convolve2d` of two 2-D arrays: modes 'full', 'valid', 'same', and
    boundary 'fill' (with `fillvalue`, a constant), 'wrap' or 'symm'; the value is SciPy's,
    differentiable in both inputs to every order.

    >>> import fgrad, fgrad.numpy as fnp, fgrad.scipy.signal as sig, numpy as np
    >>> fgrad.grad(lambda k: fnp.sum(sig.convolve2d(np.ones((3, 3)), k, "same", "wrap")))(
    ...     np.ones((2, 2)))  # each kernel entry meets every element once
    array([[9., 9.],
           [9., 9.]])
    """
    return _conv2d(in1, in2, mode, boundary, fillvalue, correlate=False)


def _correlate2d(in1, in2, mode, boundary, fillvalue):
    return _conv2d(in1, in2, mode, boundary, fillvalue, correlate=True)


# SciPy's correlate2d takes convolve2d's arguments: its signature is convolve2d's
correlate2d = variant(
    convolve2d,
    "correlate2d",
    _correlate2d,
    """SciPy's `signal.correlate2d`: the convolution of in1 with in2 reversed and conjugated,
    in the modes and boundaries of `convolve2d` ('same' is centred as SciPy centres it). In
    mode 'valid' with in2 the larger, SciPy conjugates in1 instead of in2; fgrad gives that
    same value and differentiates it.""",
)
