"""Matrix products: `matmul` (the primitive) and `dot`, with NumPy's rules for 1-D operands
and batch broadcasting.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

import numpy as _np

from ..primitive import defprimitive
from .elementwise import multiply
from .shaping import expand_dims, meta, moveaxis, ndim, reshape, shape, swapaxes, unbroadcast

__all__ = ["matmul", "dot"]


def _matmul_vjp_x(ans, x, y):
    like = meta(x)
    x_nd, y_nd = len(like[0]), ndim(y)

    def bprop(ct):
        if y_nd == 1:  # (..., n) @ (n,) -> (...): the gradient is the outer product
            g = expand_dims(ct, -1) * y
        elif x_nd == 1:  # (n,) @ (..., n, m) -> (..., m)
            g = matmul(y, expand_dims(ct, -1))[..., 0]
        else:
            g = matmul(ct, swapaxes(y, -1, -2))
        return unbroadcast(g, like)

    return bprop


def _matmul_vjp_y(ans, x, y):
    like = meta(y)
    x_nd, y_nd = ndim(x), len(like[0])

    def bprop(ct):
        if x_nd == 1 and y_nd == 1:
            g = multiply(ct, x)  # not `ct * x`: x may be a list, and ct a NumPy scalar
        elif y_nd == 1:  # (..., k, n) @ (n,) -> (..., k)
            g = matmul(expand_dims(ct, -2), x)[..., 0, :]
        elif x_nd == 1:  # (n,) @ (..., n, m) -> (..., m)
            g = expand_dims(x, -1) * expand_dims(ct, -2)
        else:
            g = matmul(swapaxes(x, -1, -2), ct)
        return unbroadcast(g, like)

    return bprop


matmul = defprimitive(
    _np.matmul,
    vjp=(_matmul_vjp_x, _matmul_vjp_y),
    jvp=(lambda t, ans, x, y: matmul(t, y), lambda t, ans, x, y: matmul(x, t)),
)


def dot(a, b):
    """NumPy's `dot`: a product with a scalar, `matmul` up to 2-D, and for N-D the sum over
    the last axis of `a` and the second-to-last of `b`."""
    a_nd, b_nd = ndim(a), ndim(b)
    if a_nd == 0 or b_nd == 0:
        return multiply(a, b)
    if b_nd <= 2:
        return matmul(a, b)
    # N-D: move b's contracted axis to the front, flatten both sides, one matmul, then restore.
    a_shape, b_shape = shape(a), shape(b)
    n = a_shape[-1]
    a2 = reshape(a, (-1, n))
    b2 = reshape(moveaxis(b, -2, 0), (n, -1))
    moved_b_rest = b_shape[:-2] + b_shape[-1:]
    return reshape(matmul(a2, b2), a_shape[:-1] + moved_b_rest)
