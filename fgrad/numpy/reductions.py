"""Reductions other than `sum`: `mean`, `max`, `min`, `prod`.

Ties of `max`/`min` split the gradient evenly among the tied elements (JAX's convention).
`prod` is exact where inputs are 0: its gradient is the product of the other elements.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

import numpy as _np

from ..core import primal
from ..primitive import defprimitive
from .elementwise import where
from .shaping import _kept_shape, _normalize_axes, ndim, reshape, shape, sum, transpose

__all__ = ["mean", "max", "min", "amax", "amin", "prod"]


def mean(a, axis=None, keepdims=False):
    """NumPy's `mean` with `axis` and `keepdims`."""
    axes = _normalize_axes(axis, ndim(a))
    s = shape(a)
    count = int(_np.prod([s[i] for i in axes], dtype=_np.int64))
    return sum(a, axis=axes, keepdims=keepdims) / count


# --- max and min -------------------------------------------------------------------------


def _tie_weights(ans, x, axis):
    """1/k at each of the k elements equal to the extremum along `axis`, 0 elsewhere."""
    xv = _np.asarray(primal(x))
    kept = _kept_shape(xv.shape, axis)
    hit = xv == _np.reshape(primal(ans), kept)
    return (hit / _np.sum(hit, axis=axis, keepdims=True)).astype(xv.dtype, copy=False), kept


def _extremum(impl, name):
    def vjp(ans, x, axis, keepdims):
        weights, kept = _tie_weights(ans, x, axis)
        return lambda ct: reshape(ct, kept) * weights

    def jvp(t, ans, x, axis, keepdims):
        weights, _ = _tie_weights(ans, x, axis)
        return _sum_over(t * weights, axis, keepdims)

    prim = defprimitive(
        lambda x, axis, keepdims: impl(x, axis=axis, keepdims=keepdims),
        vjp=vjp,
        jvp=jvp,
        name=name,
    )

    def reduce(a, axis=None, keepdims=False):
        return prim(a, axis=_normalize_axes(axis, ndim(a)), keepdims=bool(keepdims))

    reduce.__name__ = name
    reduce.__doc__ = f"NumPy's `{name}` with `axis` and `keepdims`; ties share the gradient evenly."
    return reduce


def _sum_over(x, axes, keepdims):
    return sum(x, axis=axes, keepdims=keepdims)


max = _extremum(_np.max, "max")
min = _extremum(_np.min, "min")
amax = max
amin = min


# --- prod --------------------------------------------------------------------------------


def _product_of_others(x, ans, axes, keepdims):
    """For each element, the product of the other elements in its reduction group.

    Without zeros this is ans / x. With zeros, division would give nan, so the reduced axes
    are moved to the end and each element's product of the others is taken directly
    (quadratic in the reduced length, and exact to every order).
    """
    xv = _np.asarray(primal(x))
    kept = _kept_shape(xv.shape, axes)
    if (xv != 0).all():
        ans_kept = ans if keepdims else reshape(ans, kept)
        return ans_kept / x
    rest = [i for i in range(xv.ndim) if i not in axes]
    order = rest + list(axes)
    moved = transpose(x, order)
    lead_shape = tuple(xv.shape[i] for i in rest)
    n = int(_np.prod([xv.shape[i] for i in axes], dtype=_np.int64))
    flat = reshape(moved, lead_shape + (1, n))
    others = _prod_p(where(_np.eye(n, dtype=bool), 1.0, flat), axis=(len(lead_shape) + 1,), keepdims=False)
    moved_shape = lead_shape + tuple(xv.shape[i] for i in axes)
    return transpose(reshape(others, moved_shape), tuple(_np.argsort(order)))


def _prod_vjp(ans, x, axis, keepdims):
    kept = _kept_shape(_np.shape(primal(x)), axis)
    others = _product_of_others(x, ans, axis, keepdims)
    return lambda ct: reshape(ct, kept) * others


_prod_p = defprimitive(
    lambda x, axis, keepdims: _np.prod(x, axis=axis, keepdims=keepdims),
    vjp=_prod_vjp,
    jvp=lambda t, ans, x, axis, keepdims: sum(
        t * _product_of_others(x, ans, axis, keepdims), axis=axis, keepdims=keepdims
    ),
    name="prod",
)


def prod(a, axis=None, keepdims=False):
    """NumPy's `prod` with `axis` and `keepdims`; exact at zeros to every order."""
    return _prod_p(a, axis=_normalize_axes(axis, ndim(a)), keepdims=bool(keepdims))
