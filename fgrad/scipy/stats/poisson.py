"""`fgrad.scipy.stats.poisson`: the Poisson distribution, `f(k, mu, loc=0)` as SciPy.

Differentiable in the mean `mu`; `k` and `loc` are integers, constants (a `jit` argument's value
is read; a k or loc a transform differentiates is refused with a TypeError). Complex arguments
are refused with a TypeError, as SciPy refuses them. The CDFs are regularized incomplete gamma
functions in `mu`, whose derivative is closed form: d/dmu cdf(k, mu) = -pmf(floor(k), mu).

Imports: `fgrad.core`, `fgrad.numpy`, `fgrad.scipy.special`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as _np

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from ...numpy.elementwise import is_lazy
from .. import special as sp
from . import gamma as _gamma
from ._common import (
    float_arguments,
    guard,
    in_range,
    incomplete_gamma,
    invalid_to_nan,
    mask,
    read_constant,
    refuse_complex,
    scipy_float,
    scipy_scalar,
    select,
    value,
)

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.poisson not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.poisson", page="fgrad.scipy.stats")

# The regularized incomplete gamma functions at (mu, n + 1), differentiated in mu.
_P, _Q = incomplete_gamma("poisson")


def _setup(k, mu, loc, who):
    # (a `jit` argument is read, a guard of the record: another k records another path)
    k = read_constant(k, f"poisson.{who}", "k", "it is an integer: pass fgrad.stop_gradient(k)")
    loc = read_constant(loc, f"poisson.{who}", "loc", "pass fgrad.stop_gradient(loc)")
    refuse_complex(f"poisson.{who}", k=k, mu=mu, loc=loc)
    (mu,) = float_arguments(mu)  # (an integer or float16 mu: computed in float64, as SciPy)
    mv = value(mu)
    dtype = scipy_float(mv.dtype)
    # (fnp's asarray: a Dask k or loc stays lazy, where NumPy's would compute it)
    kk = fnp.asarray(k, dtype=float) - fnp.asarray(loc, dtype=float)
    mu, bad = in_range(mu, mv >= 0, kk)
    # a nan k or loc is nan, as SciPy's (the support's masks, false at nan, would give -inf,
    # 0 or 1: a missing value taken for an impossible one)
    bad = _np.logical_or(bad, mask(_np.isnan(kk), mu, kk))
    return kk, mu, bad, dtype


def logpmf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    """k log(mu) - mu - gammaln(k + 1) at the integers k - loc >= 0 (xlogy: 0 log 0 = 0, so
    logpmf(0, 0) = 0), -inf elsewhere; nan for mu < 0 and for a nan k or loc.

    >>> import fgrad
    >>> from fgrad.scipy.stats.poisson import logpmf
    >>> float(fgrad.grad(logpmf, argnums=1)(3, 2.0))  # k/mu - 1
    0.5
    """
    return _logpmf(k, mu, loc, "logpmf")


def _logpmf(k, mu, loc, who):
    kk, m, bad, dtype = _setup(k, mu, loc, who)
    inside = mask((kk >= 0) & (_np.floor(kk) == kk), m, kk)
    kg = _np.where(inside, kk, 0.0).astype(dtype)
    out = sp.xlogy(kg, m) - m - fnp.asarray(sp.gammaln(kg + 1.0), dtype=dtype)
    return scipy_scalar(invalid_to_nan(bad, select(inside, out, -math.inf), mu))


def pmf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    """The Poisson probability mass, exp(logpmf) (0 off the support)."""
    return fnp.exp(_logpmf(k, mu, loc, "pmf"))


def _cdfs(k, mu, loc, which):
    kk, m, bad, dtype = _setup(k, mu, loc, which)
    n = _np.floor(kk)
    inside = mask(n >= 0, m, kk)
    a = (_np.where(inside, n, 0.0) + 1.0).astype(dtype)
    if which == "cdf":
        out = select(inside, _Q(m, a), 0.0)
    elif which == "sf":
        out = select(inside, _P(m, a), 1.0)
    else:
        # log Q(a, mu) and log P(a, mu) by the gamma distribution's stable logs, which go on
        # in log form where the value underflows (logcdf(0, 1000) is -1000; the log of Q
        # was -inf, as SciPy's). At mu = 0, Q is 1 (log Q's derivative there is -pmf(k, 0))
        # and P is 0: logsf is -inf. At mu = inf, Q is 0 and P is 1. (The stable logs read
        # the values, to choose a form: a lazy Dask k or mu takes the log of the value, as
        # SciPy.)
        lower = which == "logsf"
        mv = value(m)
        finite = mask(_np.logical_and(mv > 0 if lower else mv >= 0, mv < math.inf), m, kk)
        use = _np.logical_and(inside, finite)
        mg = guard(use, m)
        if is_lazy(m) or is_lazy(a):
            log_value = fnp.log((_P if lower else _Q)(mg, a))
        else:
            log_value = _gamma._log_cdf(a, mg, lower) + 0.0  # (log1p(-0.0) is -0.0)
        # (outside `use`: logcdf is -inf at mu = inf; logsf is -inf at 0 and 0 at inf)
        if lower:
            at_inf = mask(_np.isposinf(mv), m, kk)
            out = select(use, log_value, _np.where(at_inf, 0.0, -math.inf).astype(dtype))
        else:
            out = select(use, log_value, -math.inf)
        out = select(inside, out, 0.0 if lower else -math.inf)
    return scipy_scalar(invalid_to_nan(bad, out, mu))


def cdf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(K <= k) = Q(floor(k - loc) + 1, mu), the upper regularized incomplete gamma
    function; d/dmu = -pmf(floor(k - loc), mu). 0 for k < loc."""
    return _cdfs(k, mu, loc, "cdf")


def logcdf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log of the CDF (-inf for k < loc)."""
    return _cdfs(k, mu, loc, "logcdf")


def sf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(K > k) = P(floor(k - loc) + 1, mu), computed directly; 1 for k < loc."""
    return _cdfs(k, mu, loc, "sf")


def logsf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log of the survival function (0 for k < loc)."""
    return _cdfs(k, mu, loc, "logsf")
