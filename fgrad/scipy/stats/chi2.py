"""`fgrad.scipy.stats.chi2`: the chi-squared distribution, `f(x, df, loc=0, scale=1)` as
SciPy: the gamma distribution with a = df/2 and scale 2 * scale.

Every function is differentiable in x, df, loc and scale, to every order (the CDFs through
the incomplete gamma functions' derivative in a, with the stable logs of `gamma`).

Imports: `fgrad.numpy`, `fgrad.scipy.stats.gamma`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from . import gamma as _gamma
from ._common import float_arguments

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.chi2 not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.chi2", page="fgrad.scipy.stats")


def _as_gamma(
    x: ArrayLike, df: ArrayLike, loc: ArrayLike, scale: ArrayLike
) -> tuple[Array, Array, Array, Array]:
    """gamma's (x, a, loc, scale): (x, df/2, loc, 2 scale), lists and tuples taken as arrays,
    integers and float16 as floats first (`float_arguments`: 2 scale overflowed in float16)."""
    x, df, loc, scale = float_arguments(x, df, loc, scale)
    return x, 0.5 * df, loc, 2.0 * scale


def logpdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """(df/2 - 1) log z - z - gammaln(df/2) - log(2 scale), z = (x - loc)/(2 scale) >= 0;
    -inf below loc; nan for df <= 0 or scale <= 0."""
    return _gamma._logpdf(*_as_gamma(x, df, loc, scale))


def pdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The chi-squared density, exp(logpdf)."""
    return fnp.exp(logpdf(x, df, loc, scale))


def cdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """P(df/2, (x - loc)/(2 scale)); d/dx is the density."""
    return _gamma._cdfs(*_as_gamma(x, df, loc, scale), "cdf")


def logcdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF (-inf at and below loc), stable in both tails."""
    return _gamma._cdfs(*_as_gamma(x, df, loc, scale), "logcdf")


def sf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """Q(df/2, (x - loc)/(2 scale)), computed directly."""
    return _gamma._cdfs(*_as_gamma(x, df, loc, scale), "sf")


def logsf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function, finite far in the right tail."""
    return _gamma._cdfs(*_as_gamma(x, df, loc, scale), "logsf")
