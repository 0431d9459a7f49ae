"""`fgrad.scipy.stats.gamma`: the gamma distribution, `f(x, a, loc=0, scale=1)` as SciPy
(support x >= loc; -inf log-density and 0 density below it, with zero gradients there).

`logpdf` and `pdf` are differentiable in x, a, loc and scale. The CDFs are the regularized
incomplete gamma functions, differentiable in x, loc and scale (derivative: the density);
differentiating them in `a` raises a TypeError (no closed form; fgrad does not guess one).

Imports: `fgrad.numpy`, `fgrad.scipy.special`, `fgrad.scipy.stats._common`.
"""

import math

from ... import numpy as fnp
from .. import special as sp
from ._common import (guard, harmonize, incomplete_gamma, invalid_to_nan, mask, select,
                      standardize, value, weak)

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]

_P, _Q = incomplete_gamma("gamma.cdf/sf", "a")


def _shape_ok(a, bad, *like):
    bad_a = mask(~(value(a) > 0), a, *like)
    if bad_a.any():
        a = fnp.where(mask(~(value(a) > 0), a), 1.0, a)
    return a, bad | bad_a


def _logpdf(x, a, loc, scale):
    x, a, loc, scale = harmonize(x, a, loc, scale)
    z, scale, bad = standardize(x, loc, scale)
    a, bad = _shape_ok(a, bad, z)
    inside = mask(value(z) >= 0, z, a)
    zg = guard(inside, z)
    out = sp.xlogy(a - 1.0, zg) - zg - weak(sp.gammaln, a) - weak(fnp.log, scale)
    return invalid_to_nan(bad, select(inside, out, -math.inf))


def _cdfs(P, Q, x, a, loc, scale, which):
    x, a, loc, scale = harmonize(x, a, loc, scale)
    z, _, bad = standardize(x, loc, scale)
    a, bad = _shape_ok(a, bad, z)
    if which == "cdf":
        out = P(z, a)
    elif which == "sf":
        out = Q(z, a)
    elif which == "logcdf":
        positive = mask(value(z) > 0, z, a)
        out = select(positive, fnp.log(guard(positive, P(z, a))), -math.inf)
    else:
        out = fnp.log(Q(z, a))
    return invalid_to_nan(bad, out)


def logpdf(x, a, loc=0, scale=1):
    """(a-1) log z - z - gammaln(a) - log(scale), z = (x - loc)/scale >= 0 (xlogy: the value
    at z = 0 is -log(scale) for a = 1); -inf for z < 0; nan for a <= 0 or scale <= 0.

    >>> import fgrad
    >>> float(fgrad.grad(logpdf)(2.0, 3.0))  # (a - 1)/x - 1
    0.0
    """
    return _logpdf(x, a, loc, scale)


def pdf(x, a, loc=0, scale=1):
    """The gamma density, exp(logpdf)."""
    return fnp.exp(_logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """The regularized lower incomplete gamma function P(a, z); d/dx is the density.
    Not differentiable in `a` (TypeError)."""
    return _cdfs(_P, _Q, x, a, loc, scale, "cdf")


def logcdf(x, a, loc=0, scale=1):
    """log P(a, z) (-inf for z <= 0). Not differentiable in `a` (TypeError)."""
    return _cdfs(_P, _Q, x, a, loc, scale, "logcdf")


def sf(x, a, loc=0, scale=1):
    """The upper regularized incomplete gamma function Q(a, z) = 1 - P(a, z), computed
    directly (no cancellation in the right tail). Not differentiable in `a` (TypeError)."""
    return _cdfs(_P, _Q, x, a, loc, scale, "sf")


def logsf(x, a, loc=0, scale=1):
    """log Q(a, z). Not differentiable in `a` (TypeError)."""
    return _cdfs(_P, _Q, x, a, loc, scale, "logsf")
