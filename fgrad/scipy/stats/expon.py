"""`fgrad.scipy.stats.expon`: the exponential distribution, `f(x, loc=0, scale=1)` as SciPy
(support x >= loc; -inf log-density and 0 density below it, with zero gradients there).

Imports: `fgrad.numpy`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as _np

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from ._common import guard, invalid_to_nan, located, mask, scipy_scalar, select, value, weak

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.expon not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.expon", page="fgrad.scipy.stats")


def _setup(x, loc, scale):
    z, scale, bad, _ = located(x, loc, scale)
    return z, scale, bad, mask(value(z) >= 0, z)


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """-(x - loc)/scale - log(scale) for x >= loc, -inf below.

    >>> import fgrad
    >>> from fgrad.scipy.stats.expon import logpdf
    >>> float(fgrad.grad(logpdf, argnums=1)(2.0, 0.0, 1.0))  # d/dloc
    1.0
    """
    z, s, bad, inside = _setup(x, loc, scale)
    out = select(inside, -z - weak(fnp.log, s, z), -math.inf)
    return scipy_scalar(invalid_to_nan(bad, out, x, loc, scale))


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The exponential density, exp(logpdf) (0 below loc)."""
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """1 - exp(-z) for z = (x - loc)/scale >= 0 (as -expm1(-z)), 0 below."""
    z, _, bad, inside = _setup(x, loc, scale)
    out = select(inside, -fnp.expm1(-guard(inside, z, 0.0)), 0.0)
    return scipy_scalar(invalid_to_nan(bad, out, x, loc, scale))


def _log1mexp(z):
    """log(1 - exp(-z)) for z > 0, accurate for small and large z (Maechler's split at
    log 2)."""
    small = mask(value(z) < math.log(2.0), z)
    near = fnp.log(-fnp.expm1(-guard(small, z, 1.0)))
    far = fnp.log1p(-fnp.exp(-guard(_np.logical_not(small), z, 1.0)))
    return fnp.where(small, near, far)


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log(1 - exp(-z)), stable for small and large z; -inf for z <= 0."""
    z, _, bad, _ = _setup(x, loc, scale)
    positive = mask(value(z) > 0, z)
    out = select(positive, _log1mexp(guard(positive, z)), -math.inf)
    return scipy_scalar(invalid_to_nan(bad, out, x, loc, scale))


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """exp(-z) for z >= 0, 1 below."""
    z, _, bad, inside = _setup(x, loc, scale)
    out = select(inside, fnp.exp(-guard(inside, z, 0.0)), 1.0)
    return scipy_scalar(invalid_to_nan(bad, out, x, loc, scale))


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """-z for z >= 0, 0 below."""
    z, _, bad, inside = _setup(x, loc, scale)
    return scipy_scalar(invalid_to_nan(bad, select(inside, -z, 0.0), x, loc, scale))
