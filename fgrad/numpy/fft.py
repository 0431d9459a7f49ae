"""`fgrad.numpy.fft`: NumPy's discrete Fourier transforms with forward and reverse rules.

Three primitives carry every transform, each along one axis of an input already cut or
zero-padded to the transform's length (the cut and the padding are `getitem` and its adjoint,
so they differentiate themselves):

- `_c2c_p`, the complex DFT (`fft`, `ifft`). It is linear and its matrix is symmetric, so its
  vjp is the same transform applied to the cotangent (the transpose, not the adjoint: fgrad
  follows JAX's convention for complex numbers and never conjugates a cotangent unless the
  function conjugates).
- `_rfft_p`, the DFT of a real input keeping the first n//2 + 1 frequencies. Its transpose pads
  the cotangent back to n frequencies, applies the complex DFT and keeps the real part (the
  transpose of "a real input enters a complex transform").
- `_irfft_p`, the inverse of `rfft`: real-linear in its complex input (it ignores the imaginary
  parts of the zero and, for even n, the Nyquist frequency). Written as
  `Re(sum_k w_k x_k e^{2 pi i jk/n}) * scale` with w = 1 at those two frequencies and 2
  elsewhere, its transpose is `w * conj(rfft(ct)) * scale`, which is how JAX transposes it too.

The n-dimensional transforms are NumPy's loops over axes of these, `hfft`/`ihfft` are NumPy's
definitions through `irfft`/`rfft`, and `fftshift`/`ifftshift` are rolls built from slices and
`concatenate`. Single precision stays single: float32 in, complex64 (or float32) out, as in
NumPy 2.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`,
`fgrad.numpy.products`.
"""

from __future__ import annotations

import operator
import os
import sys
import warnings
from typing import TYPE_CHECKING

import numpy as _np

from ..core import Box, dtype_of
from ..primitive import deflinear, register_rules
from ._mirror import exported, mirror, missing_names
from .elementwise import conj, multiply, real
from .products import whole_along
from .shaping import (
    _index_add_p,
    asarray,
    batched_axis,
    concatenate,
    describe,
    getitem,
    holds_foreign,
    is_traced,
    meta,
    read_constant,
    read_int,
    shape,
    unbroadcast,
    variant as _variant,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Literal

    from ..typing import Array, ArrayLike
    from .shaping import _F


# The normalisation of the opposite direction: `hfft` is an `irfft`, `ihfft` an `rfft`, and the
# transpose of an `irfft` is an `rfft`, each scaled as its partner.
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


# --- argument checks ------------------------------------------------------------------------------


def _check_norm(norm, name):
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise ValueError(
            f"{name}: norm={norm!r} is not a normalization; use None (same as 'backward'), "
            "'ortho' or 'forward'"
        )
    return norm


def _numpy_into(out, name, a, **arguments):
    """NumPy's own `name` writing into `out`, for plain input, as `matmul(..., out=)` does;
    a traced (or lazy) input has no array to write into: a TypeError says so."""
    if is_traced(a) or holds_foreign(a):
        raise TypeError(
            f"{name}(..., out=...): argument 'a' ({describe(a)}) is traced, and inside a "
            "transform arrays are values, never written into. Use the returned array "
            f"instead: y = fgrad.numpy.fft.{name}(a)"
        )
    return getattr(_np.fft, name)(a, **arguments, out=out)


def _check_axis(x, axis, name):
    nd = len(shape(x))
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an integer, got {axis!r}") from None
    if not -nd <= ax < nd:
        raise ValueError(
            f"{name}: axis {ax} is out of bounds for the input of {describe(x)}; use an "
            f"axis in [-{nd}, {nd})"
            if nd
            else f"{name}: the input of {describe(x)} is a "
            "scalar; a transform needs an array with at least one axis"
        )
    return ax % nd


def _check_length(n, name, what="n"):
    n = read_int(n)  # a traced integer (a jitted function's int argument) is read, and guarded
    if type(n) is Box:
        raise TypeError(
            f"{name}: {what} is a traced value of {describe(n)}; a transform length is an int"
        )
    try:
        if isinstance(n, bool):  # (an int to Python; NumPy's fft refuses it)
            raise TypeError
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"{name}: invalid number of data points {what}={n}; it must be >= 1")
    return n


def _check_real(x, name):
    if dtype_of(x).kind == "c":
        raise TypeError(
            f"{name} takes a real input, got one of {describe(x)}; use the complex transform "
            "(fft, fftn) for complex inputs, or pass real(x)"
        )


# --- cutting and zero-padding an axis -------------------------------------------------------------


def _resize(x, n, axis):
    """x cut or zero-padded at the end of `axis` to length n, as NumPy's `n=` does."""
    m = shape(x)[axis]
    lead = (slice(None),) * axis
    if n == m:
        return x
    if n < m:
        return getitem(x, lead + (slice(0, n),))
    new_shape = list(shape(x))
    new_shape[axis] = n
    zeros = _np.zeros(new_shape, dtype=dtype_of(x))
    return _index_add_p(zeros, x, idx=lead + (slice(0, m),))


# --- the three primitives -------------------------------------------------------------------------
# Each transforms along one axis and maps every other. Under `vmap` (`_along_batched_axis`, the
# rule of all three) the batch axis stays where it is and the transformed axis is shifted past
# it; for sparsity detection each output element depends on the whole lane along the axis.


def _along_batched_axis(prim):
    def rule(args, dims, axis, **params):
        (x,), (d,) = args, dims
        return prim(x, axis=batched_axis(axis, d), **params), d

    return rule


def _c2c(x, axis, norm, inverse):
    # Dask transforms an axis only when it is one chunk
    return (_np.fft.ifft if inverse else _np.fft.fft)(whole_along(x, (axis,)), axis=axis, norm=norm)


def _c2c_vjp(ans, x, axis, norm, inverse):
    like = meta(x)  # a real input keeps the real part of its cotangent
    return lambda ct: unbroadcast(_c2c_p(ct, axis=axis, norm=norm, inverse=inverse), like)


_c2c_p = deflinear(
    _c2c,
    _c2c_vjp,
    name="fft",
    sparsity="along_axis",
)
register_rules(_c2c_p, batch=_along_batched_axis(_c2c_p))


def _rfft_vjp(ans, x, axis, norm):
    like = meta(x)
    n = like[0][axis]
    return lambda ct: unbroadcast(
        real(_c2c_p(_resize(ct, n, axis), axis=axis, norm=norm, inverse=False)), like
    )


_rfft_p = deflinear(
    lambda x, axis, norm: _np.fft.rfft(whole_along(x, (axis,)), axis=axis, norm=norm),
    _rfft_vjp,
    name="rfft",
    sparsity="along_axis",
)
register_rules(_rfft_p, batch=_along_batched_axis(_rfft_p))


def _hermitian_weights(n, axis, nd, dtype):
    """1 at the zero frequency and (n even) the Nyquist frequency, 2 elsewhere, shaped to
    broadcast along `axis`: how often each of the n//2 + 1 inputs of an irfft of length n
    appears in the Hermitian-symmetric spectrum it stands for."""
    w = _np.full(n // 2 + 1, 2.0, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape([n // 2 + 1 if i == axis else 1 for i in range(nd)])


def _irfft_vjp(ans, x, n, axis, norm):
    like = meta(x)
    w = _hermitian_weights(n, axis, len(shape(ans)), dtype_of(ans))
    scaled_as_irfft = _SWAP[norm]  # rfft with this norm has irfft's scale

    def bprop(ct):
        if dtype_of(ct).kind == "c":
            ct = real(ct)  # the output is real: only the real part of a cotangent pairs with it
        return unbroadcast(multiply(conj(_rfft_p(ct, axis=axis, norm=scaled_as_irfft)), w), like)

    return bprop


_irfft_p = deflinear(
    lambda x, n, axis, norm: _np.fft.irfft(whole_along(x, (axis,)), n=n, axis=axis, norm=norm),
    _irfft_vjp,
    name="irfft",
    sparsity="along_axis",
)
register_rules(_irfft_p, batch=_along_batched_axis(_irfft_p))


# --- one-dimensional transforms -------------------------------------------------------------------
# Each transform's signature is written once: the others of its shape are `variant`s of it.


def _transform(
    template: _F, name: str, transform: Callable[..., Array], doc: str, **flags: bool
) -> _F:
    """The transform `name`, of `template`'s signature: NumPy's own with `out=` (for plain
    input), else `transform` of the arguments."""

    def body(a, out, **arguments):
        if out is not None:
            return _numpy_into(out, name, a, **arguments)
        return transform(a, name=name, **arguments, **flags)

    return _variant(template, name, body, doc)


def _complex_1d(a, n, axis, norm, name, inverse):
    x = asarray(a)
    ax = _check_axis(x, axis, name)
    n = shape(x)[ax] if n is None else _check_length(n, name)
    return _c2c_p(_resize(x, n, ax), axis=ax, norm=_check_norm(norm, name), inverse=inverse)


def _rfft_1d(a, n, axis, norm, name):
    x = asarray(a)
    _check_real(x, name)
    ax = _check_axis(x, axis, name)
    n = shape(x)[ax] if n is None else _check_length(n, name)
    return _rfft_p(_resize(x, n, ax), axis=ax, norm=_check_norm(norm, name))


def _hermitian_length(x, ax, n, name):
    """The length of a real signal given by the first half of its spectrum along ax: n, or by
    default 2 (m - 1) for m given frequencies."""
    if n is None:
        n = 2 * (shape(x)[ax] - 1)
        if n < 1:
            raise ValueError(
                f"{name}: the input of {describe(x)} has length 1 along axis {ax}, which "
                "gives an output of length 0; pass n"
            )
    return _check_length(n, name)


def _irfft_1d(a, n, axis, norm, name):
    x = asarray(a)
    ax = _check_axis(x, axis, name)
    n = _hermitian_length(x, ax, n, name)
    return _irfft_p(_resize(x, n // 2 + 1, ax), n=n, axis=ax, norm=_check_norm(norm, name))


def _hfft_1d(a, n, axis, norm, name):
    x = asarray(a)
    ax = _check_axis(x, axis, name)
    n = _hermitian_length(x, ax, n, name)
    return _irfft_1d(conj(x), n, ax, _SWAP[_check_norm(norm, name)], name)


def _ihfft_1d(a, n, axis, norm, name):
    return conj(_rfft_1d(a, n, axis, _SWAP[_check_norm(norm, name)], name))


@mirror("function")
def fft(
    a: ArrayLike, n: int | None = None, axis: int = -1, norm: str | None = None, out: None = None
) -> Array:
    """NumPy's `fft`: the DFT along `axis`, the input cut or zero-padded to length `n`.

    Its vjp is `fft` of the cotangent (the DFT matrix is symmetric; fgrad's vjps transpose,
    they do not conjugate), cut or padded back to the input's length.

    >>> import fgrad, fgrad.numpy as fnp
    >>> g = fgrad.grad(lambda x: fnp.real(fnp.fft.fft(x))[0])  # sum(x)
    >>> g(fnp.array([1.0, 2.0, 3.0])).tolist()
    [1.0, 1.0, 1.0]
    """
    if out is not None:
        return _numpy_into(out, "fft", a, n=n, axis=axis, norm=norm)
    return _complex_1d(a, n, axis, norm, "fft", False)


# --- n-dimensional transforms: NumPy's loops over the axes ----------------------------------------


_NONE_IN_S = (
    "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 and will "
    "raise an error in a future version of NumPy. To use the default behaviour of the "
    "corresponding 1-D transform, pass the value matching the default for its `n` parameter. "
    "To use the default behaviour for every axis, the `s` argument can be omitted."
)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _warn_at_caller(message, category):
    """`warnings.warn` pointed at the innermost line outside fgrad (where NumPy's own
    `stacklevel` points: the caller of the transform)."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)


def _nd_args(x, s, axes, name, inverse_real=False):
    """The lengths and axes of an n-dimensional transform, by NumPy's rules: `axes` defaults
    to every axis, or to the last len(s) axes when `s` is given; a length of -1 means the
    input's; an inverse real transform's last length defaults to 2 (m - 1). A length None
    (deprecated in NumPy 2, with its warning) stays None: the default `n` of the 1-D
    transform along that axis (`_length_now`), which for the last axis of an inverse real
    transform is 2 (m - 1), not m."""
    x_shape = shape(x)
    nd = len(x_shape)
    if axes is None:
        axes = range(nd) if s is None else range(-len(s), 0)
    elif isinstance(axes, (int, _np.integer)):
        raise TypeError(f"{name}: axes must be a sequence of ints, got {axes!r}; use a tuple")
    axes = [_check_axis(x, ax, name) for ax in axes]
    if s is None:
        lengths = [x_shape[ax] for ax in axes]
        if inverse_real and axes:
            lengths[-1] = 2 * (x_shape[axes[-1]] - 1)
    else:
        s = list(s)
        if len(s) != len(axes):
            raise ValueError(
                f"{name}: s={tuple(s)} and axes={tuple(axes)} have different lengths; give one "
                "length per transformed axis"
            )
        if any(k is None for k in s):
            _warn_at_caller(_NONE_IN_S, DeprecationWarning)
        s = [None if k is None else read_int(k) for k in s]  # (a jit argument: its value)
        lengths = [x_shape[ax] if _is_minus_one(k) else k for k, ax in zip(s, axes)]
    lengths = [None if k is None else _check_length(k, name, "s") for k in lengths]
    return lengths, axes


def _is_minus_one(k):
    return k is not None and type(k) is not Box and k == -1


def _length_now(x, k, ax):
    """A length of `s`, where None is the input's length along ax when its transform runs
    (after those of the axes before it in the loop: an axis given twice was resized)."""
    return shape(x)[ax] if k is None else k


def _complex_nd(a, s, axes, norm, name, inverse):
    x = asarray(a)
    lengths, axes = _nd_args(x, s, axes, name)
    norm = _check_norm(norm, name)
    for k, ax in reversed(list(zip(lengths, axes))):
        x = _c2c_p(_resize(x, _length_now(x, k, ax), ax), axis=ax, norm=norm, inverse=inverse)
    return x


def _real_nd_args(x, s, axes, norm, name, inverse_real=False):
    lengths, axes = _nd_args(x, s, axes, name, inverse_real)
    if not axes:
        raise ValueError(f"{name}: axes is empty; give at least one axis to transform")
    return lengths, axes, _check_norm(norm, name)


def _rfft_nd(a, s, axes, norm, name):
    x = asarray(a)
    _check_real(x, name)
    lengths, axes, norm = _real_nd_args(x, s, axes, norm, name)
    x = _rfft_p(
        _resize(x, _length_now(x, lengths[-1], axes[-1]), axes[-1]), axis=axes[-1], norm=norm
    )
    for k, ax in reversed(list(zip(lengths[:-1], axes[:-1]))):
        x = _c2c_p(_resize(x, _length_now(x, k, ax), ax), axis=ax, norm=norm, inverse=False)
    return x


def _irfft_nd(a, s, axes, norm, name):
    x = asarray(a)
    lengths, axes, norm = _real_nd_args(x, s, axes, norm, name, inverse_real=True)
    for k, ax in zip(lengths[:-1], axes[:-1]):
        x = _c2c_p(_resize(x, _length_now(x, k, ax), ax), axis=ax, norm=norm, inverse=True)
    n, ax = lengths[-1], axes[-1]
    n = _hermitian_length(x, ax, n, name)  # None: irfft's default 2 (m - 1)
    return _irfft_p(_resize(x, n // 2 + 1, ax), n=n, axis=ax, norm=norm)


@mirror("function")
def fftn(
    a: ArrayLike,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: str | None = None,
    out: None = None,
) -> Array:
    """NumPy's `fftn`: the DFT over `axes` (default all), each cut or padded to `s`.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.real(fnp.fft.fftn(x))[0, 0])(fnp.ones((2, 2))).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    if out is not None:
        return _numpy_into(out, "fftn", a, s=s, axes=axes, norm=norm)
    return _complex_nd(a, s, axes, norm, "fftn", False)


@mirror("function")
def fft2(
    a: ArrayLike,
    s: Sequence[int] | None = None,
    axes: Sequence[int] = (-2, -1),
    norm: str | None = None,
    out: None = None,
) -> Array:
    """NumPy's `fft2`: `fftn` over the last two axes."""
    if out is not None:
        return _numpy_into(out, "fft2", a, s=s, axes=axes, norm=norm)
    return _complex_nd(a, s, axes, norm, "fft2", False)


# --- the other transforms: each made from the one of its signature (fft, fftn, fft2) --------------


ifft = _transform(
    fft,
    "ifft",
    _complex_1d,
    """NumPy's `ifft`: the inverse DFT along `axis` (length `n`); its vjp is `ifft` of the
    cotangent.""",
    inverse=True,
)
rfft = _transform(
    fft,
    "rfft",
    _rfft_1d,
    """NumPy's `rfft`: the DFT of a real input along `axis`, its n//2 + 1 non-negative
    frequencies. A complex input is a TypeError, as in NumPy.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.imag(fnp.fft.rfft(x))[1])(fnp.zeros(4)).tolist()
    [0.0, -1.0, 0.0, 1.0]
    """,
)
irfft = _transform(
    fft,
    "irfft",
    _irfft_1d,
    """NumPy's `irfft`: the real signal of length `n` (default 2 (m - 1) for m input
    frequencies) whose `rfft` is `a`. Like NumPy it ignores the imaginary parts of the zero
    frequency and, for even n, of the Nyquist frequency, so their gradient is 0.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.fft.irfft(x)[0])(fnp.ones(3)).tolist()  # mean of the spectrum
    [0.25, 0.5, 0.25]
    """,
)
hfft = _transform(
    fft,
    "hfft",
    _hfft_1d,
    """NumPy's `hfft`: the real DFT of a signal with Hermitian symmetry given by its first
    half `a`; it is `irfft(conj(a), n, axis)` with the opposite normalization.""",
)
ihfft = _transform(
    fft,
    "ihfft",
    _ihfft_1d,
    """NumPy's `ihfft`: the inverse of `hfft` for a real input; it is
    `conj(rfft(a, n, axis))` with the opposite normalization.""",
)
ifftn = _transform(
    fftn,
    "ifftn",
    _complex_nd,
    "NumPy's `ifftn`: the inverse DFT over `axes` (default all), each of length `s`.",
    inverse=True,
)
rfftn = _transform(
    fftn,
    "rfftn",
    _rfft_nd,
    "NumPy's `rfftn`: `rfft` over the last of `axes`, then `fft` over the others.",
)
irfftn = _transform(
    fftn,
    "irfftn",
    _irfft_nd,
    """NumPy's `irfftn`: `ifft` over all but the last of `axes`, then `irfft` over it (whose
    length defaults to 2 (m - 1)).""",
)
ifft2 = _transform(
    fft2, "ifft2", _complex_nd, "NumPy's `ifft2`: `ifftn` over the last two axes.", inverse=True
)
rfft2 = _transform(fft2, "rfft2", _rfft_nd, "NumPy's `rfft2`: `rfftn` over the last two axes.")
irfft2 = _transform(fft2, "irfft2", _irfft_nd, "NumPy's `irfft2`: `irfftn` over the last two axes.")


# --- shifts ---------------------------------------------------------------------------------------


def _roll(x, k, axis):
    n = shape(x)[axis]
    k = k % n if n else 0
    if k == 0:
        return x
    lead = (slice(None),) * axis
    return concatenate(
        [getitem(x, lead + (slice(n - k, None),)), getitem(x, lead + (slice(0, n - k),))],
        axis=axis,
    )


def _shift(x, axes, sign, name):
    x = asarray(x)
    if not shape(x):  # (NumPy's roll of a 0-d array fails inside, whatever the axes)
        raise ValueError(
            f"{name}: x is a scalar ({describe(x)}), which NumPy does not shift; pass an "
            "array of at least one dimension (a scalar has no frequency to centre: use x)"
        )
    if axes is None:
        axes = range(len(shape(x)))
    elif isinstance(axes, (int, _np.integer)):
        axes = (axes,)
    for ax in axes:
        ax = _check_axis(x, ax, name)
        n = shape(x)[ax]
        x = _roll(x, sign * (n // 2), ax)
    return x


@mirror("shape")
def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """NumPy's `fftshift`: the zero frequency moved to the centre of `axes` (default all).

    >>> import fgrad.numpy as fnp
    >>> fnp.fft.fftshift(fnp.fft.fftfreq(5)).tolist()
    [-0.4, -0.2, 0.0, 0.2, 0.4]
    """
    return _shift(x, axes, 1, "fftshift")


@mirror("shape")
def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> Array:
    """NumPy's `ifftshift`, the inverse of `fftshift`."""
    return _shift(x, axes, -1, "ifftshift")


# --- frequencies ----------------------------------------------------------------------------------


def _read_length(n, name):
    """The length n of `fftfreq`/`rfftfreq` as given: a traced one (a `jit` argument) is read,
    guarded, with its own type (a NumPy uint8 stays uint8, as NumPy computes with it, and a
    bool stays a bool, which NumPy takes as an integer)."""
    return read_constant(n, name, "n", "pass the length as a constant")


def _check_frequency_count(n, name):
    if not isinstance(n, (int, _np.integer)):
        raise ValueError(f"{name}: n should be an integer, got {n!r}")


def _spacing_scaled(k, n, d):
    """The integers k times 1 / (n d), as NumPy computes the frequencies (a traced d)."""
    return k * (1.0 / (n * d))


@mirror("creation")
def fftfreq(n: int, d: float = 1.0, device: Literal["cpu"] | None = None) -> Array:
    """NumPy's `fftfreq`: the frequencies k / (n d) of an `fft` of length n. They have no
    derivative in n; a traced spacing `d` is differentiated. Computed in NumPy's steps (the
    integers k times 1 / (n d)), so the values are NumPy's to the last bit.

    >>> import fgrad.numpy as fnp
    >>> fnp.fft.fftfreq(4, 0.5)
    array([ 0. ,  0.5, -1. , -0.5])
    """
    n = _read_length(n, "fftfreq")
    if type(d) is not Box:
        return _np.fft.fftfreq(n, d, device=device)
    _check_frequency_count(n, "fftfreq")
    # NumPy's steps in n's own type (a uint8 n wraps in -(n // 2), and NumPy keeps that)
    k = _np.empty(n, int)
    half = (n - 1) // 2 + 1
    k[:half] = _np.arange(0, half, dtype=int)
    k[half:] = _np.arange(-(n // 2), 0, dtype=int)
    return _spacing_scaled(k, n, d)


@mirror("creation")
def rfftfreq(n: int, d: float = 1.0, device: Literal["cpu"] | None = None) -> Array:
    """NumPy's `rfftfreq`: the frequencies of an `rfft` of length n; a traced `d` is
    differentiated, as in `fftfreq`."""
    n = _read_length(n, "rfftfreq")
    if type(d) is not Box:
        return _np.fft.rfftfreq(n, d, device=device)
    _check_frequency_count(n, "rfftfreq")
    return _spacing_scaled(_np.arange(0, n // 2 + 1, dtype=int), n, d)


__all__ = exported(globals(), _np.fft)

if not TYPE_CHECKING:  # a name of numpy.fft not mirrored yet says so
    __getattr__ = missing_names(__name__, "numpy.fft", page=__name__)
