"""Reductions other than `sum`: `mean`, `max`, `min`, `prod`.

Ties of `max`/`min` split the gradient evenly among the tied elements (JAX's convention).
`prod`'s gradient is the product of the other elements, taken without division, so it is
exact at zeros and at tiny values to every order.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`.
"""

import numpy as _np

from ..core import primal
from ..primitive import defprimitive
from .shaping import (
    _kept_shape, _normalize_axes, cast_to, concatenate, ndim, refuse_out, reshape, shape, sum,
    transpose,
)

__all__ = ["mean", "max", "min", "amax", "amin", "prod"]


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """NumPy's `mean` with `axis`, `dtype` and `keepdims`."""
    refuse_out(out, "mean")
    axes = _normalize_axes(axis, ndim(a))
    s = shape(a)
    count = int(_np.prod([s[i] for i in axes], dtype=_np.int64))
    return cast_to(sum(a, axis=axes, keepdims=keepdims) / count, dtype)


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

    def reduce(a, axis=None, out=None, keepdims=False):
        refuse_out(out, name)
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


def _product_of_others(x, axes):
    """For each element, the product of the other elements in its reduction group.

    `ans / x` would be the short way, but it is nan where x is 0, wrong where the product
    underflows, and its derivative cancels catastrophically for tiny x. So it is taken as
    (product of the elements before) * (product of the elements after), both by exclusive
    scans made of multiplications only: exact at zeros and differentiable to every order.
    """
    xv = primal(x)
    x_shape = _np.shape(xv)
    rest = [i for i in range(len(x_shape)) if i not in axes]
    order = rest + list(axes)
    lead_shape = tuple(x_shape[i] for i in rest)
    n = int(_np.prod([x_shape[i] for i in axes], dtype=_np.int64))
    if n == 0:
        return _np.zeros(x_shape, dtype=_np.result_type(xv))
    flat = reshape(transpose(x, order), lead_shape + (n,))
    before = _exclusive_cumprod(flat)
    after = _exclusive_cumprod(flat[..., ::-1])[..., ::-1]
    moved_shape = lead_shape + tuple(x_shape[i] for i in axes)
    return transpose(reshape(before * after, moved_shape), tuple(_np.argsort(order)))


def _shifted(p, k, fill):
    """p moved k places along its last axis, with `fill` (1 or 0) coming in at the start."""
    n = shape(p)[-1]
    if k >= n:
        return _np.full(shape(p), fill, dtype=_np.result_type(primal(p)))
    pad = _np.full(shape(p)[:-1] + (k,), fill, dtype=_np.result_type(primal(p)))
    return concatenate([pad, p[..., : n - k]], axis=-1)


def _exclusive_cumprod(a):
    """[1, a0, a0 a1, ..., a0 ... a_{n-2}] along the last axis, in log2(n) doubling steps."""
    n = shape(a)[-1]
    p, k = _shifted(a, 1, 1), 1
    while k < n:
        p, k = p * _shifted(p, k, 1), 2 * k
    return p


def _linear_recurrence(a, b):
    """h with h_i = b_i + a_i h_{i-1} (h_{-1} = 0) along the last axis, in log2(n) doubling
    steps of multiplications and additions only (no division: exact at zeros, to every order).

    After the step with shift k, (A_i, B_i) is the affine map h_{i-2k} -> h_i, so composing
    it with the map k places before doubles the window; B_i is h_i once the window covers i.
    """
    n = shape(b)[-1]
    k = 1
    while k < n:
        b = b + a * _shifted(b, k, 0)
        if 2 * k < n:
            a = a * _shifted(a, k, 1)
        k *= 2
    return b


def _prod_vjp(ans, x, axis, keepdims):
    kept = _kept_shape(_np.shape(primal(x)), axis)
    others = _product_of_others(x, axis)
    return lambda ct: reshape(ct, kept) * others


_prod_p = defprimitive(
    lambda x, axis, keepdims: _np.prod(x, axis=axis, keepdims=keepdims),
    vjp=_prod_vjp,
    jvp=lambda t, ans, x, axis, keepdims: sum(
        t * _product_of_others(x, axis), axis=axis, keepdims=keepdims
    ),
    name="prod",
)


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """NumPy's `prod` with `axis`, `dtype` and `keepdims`; exact at zeros to every order."""
    refuse_out(out, "prod")
    return cast_to(_prod_p(a, axis=_normalize_axes(axis, ndim(a)), keepdims=bool(keepdims)), dtype)
