"""NumPy's `roots` and `poly`: a polynomial's roots from its coefficients and back.

Both are NumPy's steps written in fgrad operations: `roots` takes the eigenvalues of the
companion matrix (`linalg.eigvals`, whose derivative is dw = diag(V^-1 dA V): exact for simple
roots; at a repeated root the roots are not differentiable, and the derivative is not
finite), and `poly` multiplies the factors (1 - z_k) by `convolve` (or takes the eigenvalues of
a square matrix first). Which coefficients are zero, and whether complex roots come in
conjugate pairs, are read from the values, as NumPy reads them.

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`, `fgrad.numpy.linalg`,
`fgrad.numpy.signal`.
"""

from typing import Any

import numpy as _np

from ..core import constant_of, dtype_of
from . import linalg as _linalg
from ._mirror import exported, mirror
from ._values import is_true
from .arrays import sort
from .elementwise import conj, divide, equal, negative, not_equal, real
from .shaping import asarray, astype, concatenate, describe, ndim, numpy_applies, reshape, shape
from .signal import convolve
from .statistics import all as _all

_ZEROS = "which coefficients are zero is read from the values"
_PAIRS = "whether the roots come in conjugate pairs is read from the values"


@mirror("function")
def roots(p: Any) -> Any:
    """NumPy's `roots`: the roots of the polynomial with coefficients p (highest power first),
    differentiable in p where the roots are simple.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> np.sort(fnp.roots(np.array([1.0, -3.0, 2.0])))
    array([1., 2.])
    >>> fgrad.grad(lambda p: fnp.sort(fnp.roots(p))[1])(np.array([1.0, -3.0, 2.0]))
    array([-4., -2., -1.])
    """
    if numpy_applies(p):
        return _np.roots(p)
    p = asarray(p)
    if ndim(p) == 0:
        p = reshape(p, (1,))
    if ndim(p) != 1:
        raise ValueError(f"roots: p must be a 1-D sequence of coefficients, got {describe(p)}")
    n = shape(p)[0]
    nonzero = [k for k in range(n) if is_true(not_equal(constant_of(p[k]), 0), "roots", _ZEROS)]
    if not nonzero:
        return _np.array([])
    trailing = n - nonzero[-1] - 1
    p = p[nonzero[0] : nonzero[-1] + 1]
    if dtype_of(p).kind not in "fc":
        p = astype(p, float)
    n = shape(p)[0]
    if n > 1:
        # the companion matrix: NumPy's -p[1:] / p[0] on top of a shifted identity
        top = reshape(divide(negative(p[1:]), p[0]), (1, n - 1))
        below = _np.eye(n - 2, n - 1, dtype=dtype_of(p))
        found = _linalg.eigvals(concatenate([top, below]))
    else:
        found = _np.array([])
    return concatenate([found, _np.zeros(trailing, dtype_of(found))])


@mirror("function")
def poly(seq_of_zeros: Any) -> Any:
    """NumPy's `poly`: the coefficients (highest power first) of the monic polynomial with the
    given roots, or of the characteristic polynomial of a square matrix; real when the complex
    roots come in conjugate pairs, as NumPy's, traced or not (tracing never changes a value's
    dtype). Its derivative there is the real part's: a direction that moves one root of a pair
    alone (dz = [1j, 0] at z = [1+2j, 1-2j]) leaves NumPy's real branch (its result would be
    complex), and along it this real result changes by the real part of [0, -1j, 2+1j]. For
    the complex coefficients and their derivative, multiply the factors (1, -z_k) yourself
    (`fnp.convolve`), as JAX's `poly` does.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.poly(np.array([1.0, 2.0]))
    array([ 1., -3.,  2.])
    >>> fgrad.jacfwd(fnp.poly)(np.array([1.0, 2.0]))
    array([[ 0.,  0.],
           [-1., -1.],
           [ 2.,  1.]])
    """
    if numpy_applies(seq_of_zeros):
        return _np.poly(seq_of_zeros)
    z = asarray(seq_of_zeros)
    if ndim(z) == 0:
        z = reshape(z, (1,))
    sh = shape(z)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        z = _linalg.eigvals(z)
    elif len(sh) == 1:
        z = astype(z, _np.mintypecode(dtype_of(z).char))
    else:
        raise ValueError(
            "poly: seq_of_zeros must be 1-D (roots) or a non-empty square matrix, got "
            f"{describe(z)}"
        )
    if shape(z)[0] == 0:
        return 1.0
    dt = dtype_of(z)
    a = _np.ones((1,), dtype=dt)
    for k in range(shape(z)[0]):
        a = convolve(a, concatenate([_np.ones(1, dt), reshape(negative(z[k]), (1,))]))
    if dt.kind == "c":
        r = constant_of(z)
        if is_true(_all(equal(sort(r), sort(conj(r)))), "poly", _PAIRS):
            a = real(a)
    return a


__all__ = exported(globals())
