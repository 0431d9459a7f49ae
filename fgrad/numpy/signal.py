"""Signal processing, polynomials, sample statistics and tensor products: `convolve`,
`correlate`, `diff`, `ediff1d`, `interp`, `polyval`, `trapezoid`, `cov`, `corrcoef`, `vander`,
and (defined in `fgrad.numpy.products`, exported from here) `einsum`, `tensordot`, `inner`,
`outer`, `vdot`, `kron`, `cross`.

Only the full convolution is a primitive (its rules are convolutions of the cotangent with
the reversed other operand); everything else is a composition of differentiable operations,
so it is differentiable to every order with no rules of its own. Results keep float32 where
NumPy would promote to float64 (`interp`, `cov`, `corrcoef`), as JAX does.

Imports: `fgrad.core`, `fgrad.primitive`, and the other modules of `fgrad.numpy` except
`linalg` and `fft`.
"""

import warnings as _warnings

import numpy as _np

from ..core import Box, primal
from ..primitive import defprimitive
from .elementwise import floor, multiply, real, sqrt, where
from .products import (
    as_array, conj_if_complex, cross, einsum, inner, kron, matmul, outer, tensordot, vdot,
)
from .shaping import (
    _normalize_axes, astype, broadcast_to, concatenate, meta, ndim, reshape, shape, squeeze, sum,
    transpose, unbroadcast,
)

__all__ = [
    "einsum", "tensordot", "inner", "outer", "vdot", "kron", "cross",
    "convolve", "correlate", "diff", "ediff1d", "interp", "polyval", "trapezoid", "cov",
    "corrcoef", "vander",
]


def _float_dtype(*xs):
    """The dtype of a result computed from xs: theirs if floating, else float64."""
    dt = _np.result_type(*[primal(x) for x in xs])
    return dt if _np.issubdtype(dt, _np.inexact) else _np.dtype(_np.float64)


def _is_traced(x):
    return type(x) is Box


# --- convolution and correlation ---------------------------------------------------------


def _conv_vjp(which):
    # out[k] = sum_i a[i] v[k - i], so d out / d a[i] pairs ct[k] with v[k - i]: the full
    # convolution of ct with the reversed v, from offset len(v) - 1. Symmetric in a and v.
    def maker(ans, a, v):
        like = meta((a, v)[which])
        other = (v, a)[which]
        m, n = shape(other)[0], like[0][0]
        return lambda ct: unbroadcast(_conv_full(ct, other[::-1])[m - 1 : m - 1 + n], like)

    return maker


_conv_full = defprimitive(
    lambda a, v: _np.convolve(a, v, mode="full"),
    vjp=(_conv_vjp(0), _conv_vjp(1)),
    jvp=(lambda t, ans, a, v: _conv_full(t, v), lambda t, ans, a, v: _conv_full(a, t)),
    name="convolve",
)


def _signal_1d(x, name, arg):
    x = as_array(x)
    nd = ndim(x)
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


def convolve(a, v, mode="full"):
    """NumPy's `convolve` of two 1-D sequences, mode 'full', 'same' or 'valid'.

    >>> import fgrad.numpy as fnp
    >>> fnp.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    a, v = _signal_1d(a, "convolve", "a"), _signal_1d(v, "convolve", "v")
    return _mode_slice(_conv_full(a, v), shape(a)[0], shape(v)[0], mode, "convolve")


def correlate(a, v, mode="valid"):
    """NumPy's `correlate` of two 1-D sequences: c[k] = sum_n a[n + k] conj(v[n]), mode
    'valid' (NumPy's default), 'same' or 'full'."""
    a, v = _signal_1d(a, "correlate", "a"), _signal_1d(v, "correlate", "v")
    n, m = shape(a)[0], shape(v)[0]
    if m > n:  # NumPy swaps the operands, then reverses (and conjugates) the result
        return conj_if_complex(correlate(v, a, mode))[::-1]
    return _mode_slice(_conv_full(a, conj_if_complex(v)[::-1]), n, m, mode, "correlate")


# --- differences -------------------------------------------------------------------------

_NO_VALUE = _np._NoValue  # NumPy's own "not given" marker, so signatures read the same


def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    """NumPy's `diff`: the n-th forward difference along `axis`, after joining `prepend` and
    `append` (a scalar is broadcast to one slice)."""
    a = as_array(a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    nd = ndim(a)
    if nd == 0:
        raise ValueError("diff: the input a is a scalar; it needs at least one dimension")
    axis = _normalize_axes(axis, nd)[0]
    parts = []
    for end in (prepend, append):
        if end is _NO_VALUE:
            parts.append(None)
            continue
        a_dtype = _np.result_type(primal(a))
        if isinstance(end, (int, float)) and _np.issubdtype(a_dtype, _np.inexact):
            end = _np.asarray(end, dtype=a_dtype)  # a Python number is weakly typed, as in JAX
        end = as_array(end)
        if ndim(end) == 0:
            slab = list(shape(a))
            slab[axis] = 1
            end = broadcast_to(end, tuple(slab))
        parts.append(end)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
    if _np.result_type(primal(a)) == bool:
        return _np.diff(primal(a), n=n, axis=axis)  # NumPy's not_equal; no derivative
    lead = (slice(None),) * axis
    for _ in range(n):
        a = a[lead + (slice(1, None),)] - a[lead + (slice(None, -1),)]
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """NumPy's `ediff1d`: differences of the flattened array, with `to_begin` and `to_end`
    (cast to its dtype, as NumPy does) joined at the ends."""
    flat = reshape(as_array(ary), (-1,))
    d = flat[1:] - flat[:-1]
    dtype = _np.result_type(primal(d))
    parts = []
    for end in (to_begin, to_end):
        if end is None:
            parts.append(None)
            continue
        end = as_array(end)
        if not _np.can_cast(_np.result_type(primal(end)), dtype, casting="same_kind"):
            raise TypeError(
                f"ediff1d: to_begin/to_end of dtype {_np.result_type(primal(end))} cannot be "
                f"cast to the input's dtype {dtype}"
            )
        parts.append(astype(reshape(end, (-1,)), dtype))
    if parts[0] is None and parts[1] is None:
        return d
    return concatenate([p for p in (parts[0], d, parts[1]) if p is not None])


# --- interpolation and polynomials -------------------------------------------------------


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's `interp`: piecewise-linear interpolation, differentiable in `x`, `fp`, `xp`,
    `left` and `right`.

    At a knot x == xp[k] the derivative in x is the slope of the segment to the right (JAX's
    convention), and at x == xp[-1] that of the last segment. float32 inputs give float32.
    """
    x, xp, fp = as_array(x), as_array(xp), as_array(fp)
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
    if not _is_traced(xp):  # constant knots take the result's (real) precision
        xp = _np.asarray(xp, dtype=_np.finfo(dtype).dtype)
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be non-zero")
        period = abs(period)
        left = right = None
        # x mod period: the subtracted multiple of the period is a constant
        x = x - period * floor(primal(x) / period)
        xp = xp - period * floor(primal(xp) / period)
        order = _np.argsort(primal(xp), kind="stable")
        xp, fp = xp[order], fp[order]
        xp = concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    xv, xpv = _np.asarray(primal(x)), _np.asarray(primal(xp))
    n = xpv.shape[0]
    if n == 1:
        y = broadcast_to(fp[0], shape(x))
    else:
        j = _np.clip(_np.searchsorted(xpv, xv, side="right") - 1, 0, n - 2)
        x0, x1, f0, f1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
        dx = x1 - x0
        flat = _np.asarray(primal(dx)) == 0  # only at x == xp[-1] == xp[-2]: take fp[-1]
        w = (x - x0) / (where(flat, 1.0, dx) if flat.any() else dx)
        if flat.any():
            w = where(flat, 1.0, w)
        y = f0 + w * (f1 - f0)
    below, above = xv < xpv[0], xv > xpv[-1]
    if below.any():
        y = where(below, fp[0] if left is None else left, y)
    if above.any():
        y = where(above, fp[-1] if right is None else right, y)
    return astype(y, dtype) if _np.result_type(primal(y)) != dtype else y


def polyval(p, x):
    """NumPy's `polyval(p, x)`: the polynomial with coefficients `p` (highest power first) at
    `x`, by Horner's scheme; differentiable in both.

    >>> import fgrad.numpy as fnp
    >>> float(fnp.polyval([3.0, 0.0, 1.0], 5.0))
    76.0
    """
    p, x = as_array(p), as_array(x)
    if ndim(p) == 0:
        raise ValueError("polyval: p must be a sequence of coefficients, not a scalar")
    y = _np.zeros_like(primal(x)) + p[0]
    for k in range(1, shape(p)[0]):
        y = y * x + p[k]
    return y


def vander(x, N=None, increasing=False):
    """NumPy's `vander`: columns are powers of x (decreasing unless `increasing`)."""
    x = as_array(x)
    if ndim(x) != 1:
        raise ValueError(f"vander: x must be one-dimensional; it has shape {shape(x)}")
    if N is None:
        N = shape(x)[0]
    dt = _np.result_type(primal(x))
    powers = _np.arange(N, dtype=dt if _np.issubdtype(dt, _np.inexact) else None)
    if not increasing:
        powers = powers[::-1]
    return reshape(x, (-1, 1)) ** powers


# --- integration -------------------------------------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """NumPy's `trapezoid`: the trapezoidal rule along `axis`, with sample points `x` (1-D, or
    the shape of y) or a spacing `dx`; differentiable in y, x and dx."""
    y = as_array(y)
    nd = ndim(y)
    axis = _normalize_axes(axis, nd)[0]
    if x is None:
        d = dx
    else:
        x = as_array(x)
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


# --- sample covariance and correlation ---------------------------------------------------


def _rows_2d(m, name, arg, dtype):
    m = as_array(m)
    if ndim(m) > 2:
        raise ValueError(f"{name}: {arg} has shape {shape(m)}; it must have at most 2 dimensions")
    out = astype(m, dtype)
    return out if ndim(out) == 2 else reshape(out, (1, -1))


def _weights(w, name, n, dtype):
    if _is_traced(w):
        wv = _np.asarray(primal(w))
    else:
        wv = _np.asarray(w, dtype=float)
        w = wv.astype(dtype)
    if wv.ndim != 1 or wv.shape[0] != n:
        raise ValueError(f"cov: {name} has shape {wv.shape}; it needs one weight per sample ({n})")
    if (wv < 0).any():
        raise ValueError(f"cov: {name} cannot be negative")
    return w, wv


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's `cov` with `rowvar`, `bias`, `ddof`, `fweights` and `aweights` (which may be
    traced); float32 data gives a float32 result (NumPy would give float64)."""
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
    if fweights is not None:
        w, fv = _weights(fweights, "fweights", n, dtype)
        if not _np.all(fv == _np.around(fv)):
            raise TypeError("cov: fweights must be integers")
    if aweights is not None:
        aweights, _ = _weights(aweights, "aweights", n, dtype)
        w = aweights if w is None else w * aweights
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
    if primal(fact) <= 0:
        _warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    if not _is_traced(fact):
        fact = float(fact)  # a Python number keeps the data's precision
    X = X - reshape(avg, (-1, 1))
    X_T = conj_if_complex(transpose(X) if w is None else transpose(X * w))
    with _np.errstate(divide="ignore"):
        scale = 1.0 / fact if fact != 0 else _np.inf
    return squeeze(matmul(X, X_T) * scale)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """NumPy's `corrcoef`. NumPy clips the result to [-1, 1] to undo rounding; here the clip
    changes the value only, so the gradient is that of the exact formula (a rounding that
    lands at 1.0000000000000002 does not zero the gradient, as a clip would)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim(c) == 0:
        return c / c
    d = einsum("ii->i", c)
    stddev = sqrt(real(d) if _np.iscomplexobj(primal(d)) else d)
    c = c / reshape(stddev, (-1, 1)) / reshape(stddev, (1, -1))
    cv = _np.asarray(primal(c))
    clipped = _np.clip(cv.real, -1, 1)
    if _np.iscomplexobj(cv):
        clipped = clipped + 1j * _np.clip(cv.imag, -1, 1)
    return c + (clipped - cv)
