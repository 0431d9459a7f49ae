"""`fgrad.scipy.stats.t`: Student's t distribution, `f(x, df, loc=0, scale=1)` as SciPy.

`logpdf` and `pdf` are differentiable in x, df, loc and scale. The CDFs are SciPy's `stdtr`,
differentiable in x, loc and scale (derivative: the density) and in `df`: stdtr is an
incomplete beta function of df / (df + z^2), with parameters df/2 and 1/2, whose derivative
in its parameter is `fgrad.scipy.special.betainc`'s series (checked against mpmath); from
df = 100 on, where that form cancels, the integral of the density's derivative in df
(Gauss quadrature, to 1e-11 of mpmath up to df = 1e12; 0 at df = inf).

Imports: `fgrad.numpy`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from ._common import (
    invalid_to_nan,
    located,
    log_probability,
    scipy_scalar,
    student_t,
    t_log_density,
    weak,
)

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.t not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.t", page="fgrad.scipy.stats")

_stdtr = student_t("t.cdf/sf")


def logpdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """gammaln((df+1)/2) - gammaln(df/2) - log(pi df)/2 - (df+1)/2 log1p(z**2/df)
    - log(scale), z = (x - loc)/scale; nan for df <= 0 or scale <= 0. From df = 100 on,
    written without the cancellation of the gammaln's (`_common.t_log_density`), to the
    normal's at df = inf, as SciPy.

    >>> import fgrad
    >>> from fgrad.scipy.stats.t import logpdf
    >>> float(fgrad.grad(logpdf)(1.0, 1.0))  # Cauchy: -2x / (1 + x**2)
    -1.0
    """
    given = (x, df, loc, scale)
    z, scale, bad, (df,) = located(x, loc, scale, df)
    out = t_log_density(z, df) - weak(fnp.log, scale, z)
    return scipy_scalar(invalid_to_nan(bad, out, *given))


def pdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The t density, exp(logpdf)."""
    return fnp.exp(logpdf(x, df, loc, scale))


def _tail(x, df, loc, scale, sign, log):
    given = (x, df, loc, scale)
    z, _, bad, (df,) = located(x, loc, scale, df)
    out = _stdtr(sign * z, df)
    if log:
        out = log_probability(out, _stdtr(-sign * z, df))
    return scipy_scalar(invalid_to_nan(bad, out, *given))


def cdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """stdtr(df, z); d/dx is the density, d/d df as the module's docstring says."""
    return _tail(x, df, loc, scale, 1.0, False)


def logcdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log stdtr(df, z)."""
    return _tail(x, df, loc, scale, 1.0, True)


def sf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """stdtr(df, -z) (the t is symmetric: no cancellation in the right tail)."""
    return _tail(x, df, loc, scale, -1.0, False)


def logsf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log stdtr(df, -z)."""
    return _tail(x, df, loc, scale, -1.0, True)
