"""NumPy's window functions: `bartlett`, `blackman`, `hamming`, `hanning` and `kaiser`.

A window of length M is a constant (M is an integer), so the first four are declared without a
derivative. `kaiser(M, beta)` is differentiable in `beta`: it is NumPy's formula,
i0(beta sqrt(1 - ((n - alpha) / alpha)**2)) / i0(beta), written in fgrad operations with
`fgrad.numpy.i0` (NumPy's own series), so its value is NumPy's and every transform applies.

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`,
`fgrad.numpy.mathematical`, `fgrad.numpy.arrays` (`sizes_function`).
"""

from typing import Any

import numpy as _np

from ..core import dtype_of
from ._mirror import exported, mirror
from ._values import with_example
from .arrays import sizes_function
from .elementwise import multiply
from .mathematical import i0
from .shaping import astype, describe, numpy_applies


def _window(theirs: Any) -> Any:
    """NumPy's window function `theirs`, declared without a derivative, with an example whose
    expected output is NumPy's."""
    return with_example(
        sizes_function(theirs),
        f"    >>> import fgrad.numpy as fnp\n    >>> fnp.{theirs.__name__}(3)\n    {theirs(3)!r}",
    )


bartlett, blackman, hamming, hanning = map(
    _window, (_np.bartlett, _np.blackman, _np.hamming, _np.hanning)
)


@mirror("creation")
def kaiser(M: Any, beta: Any) -> Any:
    """NumPy's `kaiser` window of length M, differentiable in the shape parameter `beta`.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fnp.kaiser(3, 2.0)
    array([0.43867628, 1.        , 0.43867628])
    >>> round(float(fgrad.grad(lambda b: fnp.kaiser(3, b)[0])(2.0)), 6)
    -0.306097
    """
    if numpy_applies(beta):
        return _np.kaiser(M, beta)
    M = float(_np.asarray(M))  # NumPy's M as a float64 (it takes [0.0, M, beta] as an array)
    if M == 1:  # NumPy's ones, of the type of [0.0, M, beta]
        return _np.ones(1, _np.result_type(_np.float64, dtype_of(beta)))
    if dtype_of(beta).kind == "c":
        raise TypeError(f"kaiser: beta must be real, got {describe(beta)}; pass fnp.real(beta)")
    beta = astype(beta, _np.float64)
    n = _np.arange(0, M)
    alpha = (M - 1) / 2.0
    # the constant part in NumPy's order of operations, so the value is NumPy's bit for bit
    return i0(multiply(beta, _np.sqrt(1 - ((n - alpha) / alpha) ** 2.0))) / i0(beta)


__all__ = exported(globals())
