"""`fgrad.scipy.signal`: SciPy's n-dimensional `convolve`, `correlate` and `fftconvolve`,
differentiable in both inputs to every order.

One primitive computes the full convolution (with `scipy.signal.convolve`, or
`fftconvolve` along chosen axes); the modes 'same' and 'valid' are slices of it, and
`correlate(in1, in2)` is the convolution of in1 with in2 reversed. The transpose of a
convolution with k is a correlation with k: the cotangent of in1 is the full convolution of
the cotangent with in2 reversed, sliced back to in1's extent, so the rules are convolutions
too and differentiate again.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy`, and `scipy.signal` for values.
"""

import numpy as _np
import scipy.signal as _ss

from .. import numpy as fnp
from ..core import primal
from ..numpy.shaping import describe, meta, shape, unbroadcast
from ..primitive import defprimitive

__all__ = ["convolve", "correlate", "fftconvolve"]


def _conv_impl(x, k, axes, method):
    if method == "fft":
        return _ss.fftconvolve(x, k, mode="full", axes=axes)
    return _ss.convolve(x, k, mode="full", method=method)


def _flip(x, axes):
    reverse = slice(None, None, -1)
    return x[tuple(reverse if ax in axes else slice(None) for ax in range(len(shape(x))))]


def _conv_vjp(which):
    # out[i] = sum_m x[i - m] k[m] along `axes`: d out / d x[j] pairs ct[j + m] with k[m], the
    # full convolution of ct with the reversed k from offset len(k) - 1 (symmetric in x, k).
    def maker(ans, x, k, axes, method):
        like = meta((x, k)[which])
        other = (k, x)[which]
        own_shape, other_shape = like[0], shape(other)

        def bprop(ct):
            full = _conv_p(ct, _flip(other, axes), axes=axes, method=method)
            index = tuple(
                slice(other_shape[ax] - 1, other_shape[ax] - 1 + own_shape[ax]) if ax in axes
                else slice(None)
                for ax in range(len(own_shape))
            )
            return unbroadcast(full[index], like)

        return bprop

    return maker


_conv_p = defprimitive(
    _conv_impl,
    vjp=(_conv_vjp(0), _conv_vjp(1)),
    jvp=(
        lambda t, ans, x, k, axes, method: _conv_p(t, k, axes=axes, method=method),
        lambda t, ans, x, k, axes, method: _conv_p(x, t, axes=axes, method=method),
    ),
    name="convolve",
)


def _prepare(in1, in2, who):
    in1, in2 = fnp.asarray(in1), fnp.asarray(in2)
    if _np.ndim(primal(in1)) != _np.ndim(primal(in2)):
        raise ValueError(
            f"scipy.signal.{who}: in1 has {describe(in1)} and in2 has {describe(in2)}; they "
            "must have the same number of dimensions"
        )
    for arg, x in (("in1", in1), ("in2", in2)):
        if 0 in _np.shape(primal(x)):
            raise ValueError(f"scipy.signal.{who}: {arg} has {describe(x)}; it is empty")
    return in1, in2


def _mode_slice(full, s1, s2, axes, mode, who):
    """'full' as it is; 'same': centred, with in1's extent; 'valid': where one input covers
    the other (one must be at least as large as the other along every axis of `axes`)."""
    if mode == "full":
        return full
    index = [slice(None)] * len(s1)
    if mode == "same":
        for ax in axes:
            start = (s2[ax] - 1) // 2  # (len(full) - len(in1)) // 2
            index[ax] = slice(start, start + s1[ax])
    elif mode == "valid":
        if not (all(s1[ax] >= s2[ax] for ax in axes) or all(s2[ax] >= s1[ax] for ax in axes)):
            raise ValueError(
                f"scipy.signal.{who}: for mode='valid', in1 {tuple(s1)} or in2 {tuple(s2)} must "
                "be at least as large as the other in every dimension"
            )
        for ax in axes:
            lo, hi = min(s1[ax], s2[ax]), max(s1[ax], s2[ax])
            index[ax] = slice(lo - 1, hi)
    else:
        raise ValueError(f"scipy.signal.{who}: mode must be 'full', 'valid' or 'same', got "
                         f"{mode!r}")
    return full[tuple(index)]


def _convolve(in1, in2, mode, axes, method, who):
    if _np.ndim(primal(in1)) == 0:  # SciPy: the product of two scalars
        return in1 * in2
    s1, s2 = shape(in1), shape(in2)
    full = _conv_p(in1, in2, axes=axes, method=method)
    return _mode_slice(full, s1, s2, axes, mode, who)


def _method(method, who):
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"scipy.signal.{who}: method must be 'auto', 'direct' or 'fft', got "
                         f"{method!r}")
    return method


def convolve(in1, in2, mode="full", method="auto"):
    """SciPy's `signal.convolve` of two n-dimensional arrays, mode 'full', 'valid' or 'same'
    ('same' has in1's shape, centred on the full result).

    >>> import fgrad, fgrad.scipy.signal as sig, numpy as np
    >>> fgrad.grad(lambda k: sig.convolve(np.array([1.0, 2.0, 3.0]), k).sum())(np.ones(2))
    array([6., 6.])
    """
    in1, in2 = _prepare(in1, in2, "convolve")
    axes = tuple(range(_np.ndim(primal(in1))))
    return _convolve(in1, in2, mode, axes, _method(method, "convolve"), "convolve")


def correlate(in1, in2, mode="full", method="auto"):
    """SciPy's `signal.correlate`: z[k] = sum_l in1[l] in2[l - k + N - 1]... that is, the
    convolution of in1 with in2 reversed along every axis, in the same modes."""
    in1, in2 = _prepare(in1, in2, "correlate")
    axes = tuple(range(_np.ndim(primal(in1))))
    return _convolve(in1, _flip(in2, axes), mode, axes, _method(method, "correlate"),
                     "correlate")


def fftconvolve(in1, in2, mode="full", axes=None):
    """SciPy's `signal.fftconvolve`: the convolution along `axes` (default all), computed
    with FFTs; along the other axes the inputs broadcast (their lengths are equal or 1)."""
    in1, in2 = _prepare(in1, in2, "fftconvolve")
    nd = _np.ndim(primal(in1))
    if axes is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(sorted({int(ax) % nd for ax in _np.atleast_1d(axes)})) if nd else ()
    return _convolve(in1, in2, mode, axes, "fft", "fftconvolve")
