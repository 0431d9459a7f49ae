"""`fgrad.scipy.stats.norm`: the normal distribution, `f(x, loc=0, scale=1)` as SciPy.

Built from `fgrad.numpy` and `fgrad.scipy.special` (ndtr, log_ndtr, ndtri): the log-CDFs are
stable in both tails, so `grad(logcdf)(-1000.0)` is about 1000, not nan.

Imports: `fgrad.numpy`, `fgrad.scipy.special`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from .. import special as sp
from ._common import (
    LOG_2PI,
    harmonize,
    in_range,
    invalid_to_nan,
    scipy_scalar,
    standardize,
    value,
    weak,
)

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.norm not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.norm", page="fgrad.scipy.stats")


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the normal density: -z**2/2 - log(scale) - log(2 pi)/2, z = (x - loc)/scale
    (nan where scale <= 0, as SciPy).

    >>> import fgrad
    >>> from fgrad.scipy.stats.norm import logpdf
    >>> float(fgrad.grad(logpdf)(1.0))
    -1.0
    """
    z, s, bad = standardize(x, loc, scale)
    out = -0.5 * (z * z) - weak(fnp.log, s, z) - 0.5 * LOG_2PI
    return scipy_scalar(invalid_to_nan(bad, out, x, loc, scale))


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The normal density, exp(logpdf)."""
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The normal CDF ndtr((x - loc)/scale)."""
    z, _, bad = standardize(x, loc, scale)
    return scipy_scalar(invalid_to_nan(bad, sp.ndtr(z), x, loc, scale))


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF by log_ndtr: exact and with exact gradients deep in the left tail."""
    z, _, bad = standardize(x, loc, scale)
    return scipy_scalar(invalid_to_nan(bad, sp.log_ndtr(z), x, loc, scale))


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function 1 - cdf, as ndtr(-z) (no cancellation in the right tail)."""
    z, _, bad = standardize(x, loc, scale)
    return scipy_scalar(invalid_to_nan(bad, sp.ndtr(-z), x, loc, scale))


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function, log_ndtr(-z)."""
    z, _, bad = standardize(x, loc, scale)
    return scipy_scalar(invalid_to_nan(bad, sp.log_ndtr(-z), x, loc, scale))


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile function loc + scale * ndtri(q) (nan outside [0, 1], and nan where
    scale <= 0, as SciPy and the other norm functions)."""
    return _quantile(q, loc, scale, 1.0)


def isf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The inverse survival function loc - scale * ndtri(q) (nan where scale <= 0)."""
    return _quantile(q, loc, scale, -1.0)


def _quantile(q, loc, scale, sign):
    """loc + sign * scale * ndtri(q), nan (with nan derivatives) where scale <= 0 or is nan:
    the range check of `standardize`, which the quantiles, having no z, do not go through."""
    given = (q, loc, scale)
    q, loc, scale = harmonize(q, loc, scale)
    scale, bad = in_range(scale, value(scale) > 0, q, loc)
    out = loc + (sign * scale) * sp.ndtri(q)
    return scipy_scalar(invalid_to_nan(bad, out, *given))
