"""`fgrad.scipy.stats.beta`: the beta distribution, `f(x, a, b, loc=0, scale=1)` as SciPy
(support loc <= x <= loc + scale; -inf log-density and 0 density outside, with zero
gradients there).

`logpdf` and `pdf` are differentiable in x, a, b, loc and scale. The CDFs are the
regularized incomplete beta function, differentiable in x, loc and scale (derivative: the
density) and in `a` and `b` (`fgrad.scipy.special.betainc`'s series: no closed form, checked
against mpmath; JAX's differentiates in x only).

Imports: `fgrad.numpy`, `fgrad.scipy.special`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as _np

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from .. import special as sp
from . import _common
from ._common import (
    guard,
    incomplete_beta,
    invalid_to_nan,
    located,
    mask,
    scipy_scalar,
    select,
    value,
    weak,
)

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.beta not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.beta", page="fgrad.scipy.stats")

_I, _Ic = incomplete_beta("beta.cdf/sf")


def logpdf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1
) -> Array:
    """(a-1) log z + (b-1) log(1-z) - betaln(a, b) - log(scale) for 0 <= z <= 1 (xlogy and
    xlog1py: finite at the ends when a or b is 1), -inf outside; nan for a, b or scale <= 0.

    >>> import fgrad
    >>> from fgrad.scipy.stats.beta import logpdf
    >>> float(fgrad.grad(logpdf)(0.25, 2.0, 2.0))  # 1/x - 1/(1 - x)
    2.666666666666667
    """
    given = (x, a, b, loc, scale)
    z, scale, bad, (a, b) = located(x, loc, scale, a, b)
    zv = value(z)
    inside = mask(_np.logical_and(zv >= 0, zv <= 1), z, a, b)
    zg = guard(inside, z, 0.5)
    log_scale = weak(fnp.log, scale, zg)
    out = sp.xlogy(a - 1.0, zg) + sp.xlog1py(b - 1.0, -zg) - _weak_betaln(a, b) - log_scale
    # at large a and b near the peak, in Stirling's form (the terms of size (a+b) log z cancel)
    out = sp._beta_in_stirlings_form(out, a, b, zg, log_scale)
    return scipy_scalar(invalid_to_nan(bad, select(inside, out, -math.inf), *given))


def _weak_betaln(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(sp.betaln(a, b))
    return sp.betaln(a, b)


def pdf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1
) -> Array:
    """The beta density, exp(logpdf)."""
    return fnp.exp(logpdf(x, a, b, loc, scale))


def _cdfs(x, a, b, loc, scale, which):
    given = (x, a, b, loc, scale)
    z, _, bad, (a, b) = located(x, loc, scale, a, b)
    zv = value(z)
    if which == "cdf":
        out = _I(z, a, b)
    elif which == "sf":
        out = _Ic(z, a, b)
    elif which == "logcdf":
        positive = mask(zv > 0, z, a, b)
        p, q = guard(positive, _I(z, a, b)), guard(positive, _Ic(z, a, b), 0.0)
        out = select(positive, _common.log_probability(p, q), -math.inf)
    else:
        below = mask(zv < 1, z, a, b)
        p, q = guard(below, _Ic(z, a, b)), guard(below, _I(z, a, b), 0.0)
        out = select(below, _common.log_probability(p, q), -math.inf)
    return scipy_scalar(invalid_to_nan(bad, out, *given))


def cdf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1
) -> Array:
    """The regularized incomplete beta function I(a, b, z); d/dx is the density, d/da and d/db
    `betainc`'s series.

    >>> import fgrad
    >>> from fgrad.scipy.stats.beta import cdf
    >>> round(float(fgrad.grad(cdf, argnums=1)(0.5, 1.0, 1.0)), 12)  # d/da 0.5**a = log(0.5)/2
    -0.34657359028
    """
    return _cdfs(x, a, b, loc, scale, "cdf")


def logcdf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1
) -> Array:
    """log I(a, b, z) (-inf for z <= 0)."""
    return _cdfs(x, a, b, loc, scale, "logcdf")


def sf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """1 - I(a, b, z), computed directly by SciPy's betaincc."""
    return _cdfs(x, a, b, loc, scale, "sf")


def logsf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1
) -> Array:
    """log(1 - I(a, b, z)) (-inf for z >= 1)."""
    return _cdfs(x, a, b, loc, scale, "logsf")
