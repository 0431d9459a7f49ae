"""Arrays made from a few values, and NumPy 2's new spellings: `linspace`, `logspace`,
`geomspace` (differentiable in their end points, and `logspace` in its base, as in JAX),
`copy`, `diagflat`, `full_like`/`empty_like` declared without a derivative, and the array-API
names `permute_dims`, `concat` and `matrix_transpose` (compositions of the shaping
primitives).

`linspace` is a primitive whose value is NumPy's own (bit for bit, traced or not) and whose
rules are its two linear weights, `1 - i/div` for `start` and `i/div` for `stop`; `logspace`
and `geomspace` follow NumPy's own steps on top of it, so their values equal NumPy's too.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`,
`fgrad.numpy.ufuncs`, `fgrad.numpy.arrays`.
"""

import operator as _operator

import numpy as _np

from ..core import Box, primal
from ..primitive import defprimitive
from ._api import nondiff_function
from .arrays import diag
from .elementwise import power
from .shaping import (
    asarray, astype, broadcast_to, concatenate, expand_dims, meta, moveaxis, ndim, ravel,
    refuse_out, sum, swapaxes, transpose, unbroadcast,
)
from .ufuncs import log10

__all__ = [
    "linspace", "logspace", "geomspace", "copy", "diagflat", "full_like", "empty_like",
    "permute_dims", "concat", "matrix_transpose",
]


def _traced(*xs):
    return any(type(x) is Box for x in xs)


# --- linspace ------------------------------------------------------------------------------


def _linspace_weights(ans, start, stop, num, endpoint, dtype, axis):
    """(w_start, w_stop, axis): the constant weights of start and stop in each sample, shaped
    to broadcast against the result, and the result's axis of samples."""
    b_nd = _np.ndim(primal(ans)) - 1
    ax = axis % (b_nd + 1)
    div = (num - 1) if endpoint else num
    dt = _np.result_type(primal(ans))
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
        b_shape = _np.broadcast_shapes(_np.shape(primal(start)), _np.shape(primal(stop)))
        return expand_dims(broadcast_to(t, b_shape), ax) * w

    return rule


_linspace_p = defprimitive(
    lambda start, stop, num, endpoint, dtype, axis: _np.linspace(
        start, stop, num=num, endpoint=endpoint, dtype=dtype, axis=axis),
    vjp=(_linspace_vjp(0), _linspace_vjp(1)),
    jvp=(_linspace_jvp(0), _linspace_jvp(1)),
    name="linspace",
)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """NumPy's `linspace`, differentiable in `start` and `stop` (scalars or arrays). Its values
    are NumPy's own; sample i has slope 1 - i/div in start and i/div in stop.

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(lambda b: fnp.sum(fnp.linspace(0.0, b, 5)))(2.0))
    2.5
    """
    num = _operator.index(num)
    if not _traced(start, stop) or (
            dtype is not None and not _np.issubdtype(dtype, _np.inexact)):
        # Nothing traced, or an integer result (floored samples have no derivative).
        return _np.linspace(primal(start), primal(stop), num, endpoint, retstep, dtype, axis,
                            device=device)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    if dtype is None:
        dtype = _np.result_type(primal(start), primal(stop), float(num))
    y = _linspace_p(start, stop, num=num, endpoint=bool(endpoint), dtype=_np.dtype(dtype),
                    axis=_operator.index(axis))
    if not retstep:
        return y
    div = (num - 1) if endpoint else num
    if div <= 0:  # NumPy's step of a sequence of 0 or 1 samples
        return y, _np.nan
    return y, astype((asarray(stop) - start) / div, _np.result_type(primal(y)))


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """NumPy's `logspace`: `base ** linspace(start, stop)`, differentiable in `start`, `stop`
    and `base`, with NumPy's values."""
    if not _traced(start, stop, base):
        return _np.logspace(start, stop, num, endpoint, base, dtype, axis)
    if not isinstance(base, (float, int)) and ndim(base):
        # An array base broadcasts with start and stop, as in NumPy, before the samples axis.
        nd = len(_np.broadcast_shapes(*(_np.shape(primal(a)) for a in (start, stop, base))))
        start, stop, base = (
            expand_dims(asarray(a), tuple(range(nd - ndim(a)))) if ndim(a) < nd else a
            for a in (start, stop, base))
        base = expand_dims(base, axis)
    y = power(base, linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return y if dtype is None else astype(y, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's `geomspace` for real end points (of one sign), differentiable in `start` and
    `stop`; the first and last samples are exactly `start` and `stop`, as in NumPy. Plain
    inputs get NumPy's own result; traced float32 end points give float32 samples (NumPy
    promotes them to float64; JAX keeps float32)."""
    if not _traced(start, stop):
        return _np.geomspace(start, stop, num, endpoint, dtype, axis)
    p_start, p_stop = primal(start), primal(stop)
    if _np.iscomplexobj(p_start) or _np.iscomplexobj(p_stop):
        raise TypeError("geomspace: complex start or stop is not differentiable in fgrad yet; "
                        "pass real values")
    if _np.any(p_start == 0) or _np.any(p_stop == 0):
        raise ValueError("Geometric sequence cannot include zero")
    dt = _np.result_type(p_start, p_stop, float(num))
    start, stop = astype(asarray(start), dt), astype(asarray(stop), dt)
    out_sign = _np.sign(p_start).astype(dt)  # constant: start is rotated to be positive
    start = start / out_sign
    stop = stop / out_sign
    result = logspace(log10(start), log10(stop), num=num, endpoint=endpoint, base=10.0)
    if num > 0:  # exp(log(x)) is not always x: the end points are set exactly
        result = result.at[0].set(start)
        if num > 1 and endpoint:
            result = result.at[-1].set(stop)
    result = out_sign * result
    if axis != 0:
        result = moveaxis(result, 0, axis)
    return result if dtype is None else astype(result, dtype)


# --- copies and constant arrays -----------------------------------------------------------


def copy(a, order="K", subok=False):
    """NumPy's `copy`: the identity, with a value of its own (traced values are never
    mutated, so a traced `a` is returned as it is)."""
    if type(a) is Box:
        return a
    return _np.copy(a, order=order, subok=subok)


def diagflat(v, k=0):
    """NumPy's `diagflat`: a 2-D array with the flattened `v` on its k-th diagonal."""
    if type(v) is not Box:
        return _np.diagflat(v, k)
    return diag(ravel(v), k)


full_like = nondiff_function(_np.full_like)
empty_like = nondiff_function(_np.empty_like)


# --- NumPy 2's array-API spellings ----------------------------------------------------------


def permute_dims(a, axes=None):
    """NumPy 2's `permute_dims`, the array-API name of `transpose`."""
    return transpose(a, axes)


def concat(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """NumPy 2's `concat`, the array-API name of `concatenate`."""
    refuse_out(out, "concat")
    if type(arrays) is Box or not isinstance(arrays, (list, tuple)):
        raise TypeError("concat: pass a list or tuple of arrays, not a single array")
    if dtype is not None:
        arrays = [astype(asarray(a), dtype) for a in arrays]
    return concatenate(arrays, axis=axis)


def matrix_transpose(x, /):
    """NumPy 2's `matrix_transpose`: swap the last two axes of an array of matrices."""
    if ndim(x) < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-D, got shape "
                         f"{_np.shape(primal(x))}")
    return swapaxes(x, -1, -2)
