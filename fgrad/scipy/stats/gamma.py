"""`fgrad.scipy.stats.gamma`: the gamma distribution, `f(x, a, loc=0, scale=1)` as SciPy
(support x >= loc; -inf log-density and 0 density below it, with zero gradients there).

Every function is differentiable in x, a, loc and scale, to every order. The CDFs are the
regularized incomplete gamma functions `fgrad.scipy.special.gammainc` / `gammaincc` (d/dx is
the density; d/da a series or continued fraction, see there). Their logs are stable: log of
the value in [tiny, 1/2], log1p(-the complement) above 1/2, and a log-form series (logcdf,
z far below a) or continued fraction (logsf, z far above a) where the value underflows, so
`logsf(800, 2.5)` is -790.26 where SciPy gives -inf.

Imports: `fgrad.numpy`, `fgrad.scipy.special`, `fgrad.scipy.stats._common`, and NumPy for
constants (masks, term counts).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as _np

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from .. import special as sp
from ..special import all_rows
from ._common import (
    every,
    guard,
    invalid_to_nan,
    located,
    mask,
    scipy_scalar,
    select,
    some,
    value,
    weak,
)

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

if not TYPE_CHECKING:  # a method of scipy.stats.gamma not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.gamma", page="fgrad.scipy.stats")

_WHO = "scipy.stats.gamma"  # the name in an error about a lazy array


def _logpdf(x, a, loc, scale):
    given = (x, a, loc, scale)
    z, scale, bad, (a,) = located(x, loc, scale, a)
    inside = mask(value(z) >= 0, z, a)
    zg = guard(inside, z)
    log_scale = weak(fnp.log, scale, zg)
    out = sp.xlogy(a - 1.0, zg) - zg - weak(sp.gammaln, a, zg) - log_scale
    # at large a near the peak, in Stirling's form (the terms of size a log z cancel there)
    out = sp._in_stirlings_form(
        out, a, zg, lambda a, z: sp._gammainc_log_density_large(a, z) - log_scale
    )
    return scipy_scalar(invalid_to_nan(bad, select(inside, out, -math.inf), *given))


def _tiny(v):
    """Below this a CDF value is computed in log form: about 1e-103 in float64, 2e-13 in
    float32 (well above where the value itself underflows)."""
    return float(_np.finfo(v.dtype if v.dtype.kind == "f" else _np.float64).tiny) ** (1 / 3)


def _log_p_series(a, z):
    """log P(a, z) = a log z - z - gammaln(a + 1) + log S, S = sum_k z**k / ((a+1)...(a+k)),
    for z < a + 1 (used where P underflows: z far below a, and for a >= `_A_LARGE` only
    where z / (a + 1) < 1/2, `_log_tail`). The terms decrease from k = 0 by at most the
    ratio z / (a + 1); their number, to 1e-18, is read off the primal values (a constant,
    the same for every row of a batch): below 100 where this is used (the ratio is at most
    about 1/3 at a = `_A_LARGE` where P < 1e-103)."""
    ratios = all_rows(value(z).astype(float) / (value(a).astype(float) + 1.0), _WHO)
    ratio = float(_np.max(ratios)) if ratios.size else 0.0
    n = 30 if ratio <= 0 else int(min(2000, 30 + math.log(1e-18) / math.log(min(ratio, 0.999))))
    term, total = 1.0, 1.0
    for k in range(1, n + 1):
        term = term * (z / (a + float(k)))
        total = total + term
    return sp.xlogy(a, z) - z - sp.gammaln(a + 1.0) + fnp.log(total)


def _log_q_fraction(a, z):
    """log Q(a, z) = a log z - z - gammaln(a) + log r, r from Legendre's continued fraction
    1 / (z + 1 - a - 1 (1 - a) / (z + 3 - a - 2 (2 - a) / (z + 5 - a - ...))), run backwards,
    for z >= a + 1 (used where Q underflows: z far above a, for a < `_A_LARGE`: its length
    grows as sqrt(a), `_log_tail`)."""
    a_all = all_rows(value(a), _WHO)
    a_max = float(_np.max(a_all)) if a_all.size else 1.0
    f = 0.0
    for n in range(int(40 + 8 * math.sqrt(max(a_max, 0.0))), 0, -1):
        f = (n * (n - a)) / (z + (2.0 * n + 1.0) - a - f)
    return sp.xlogy(a, z) - z - sp.gammaln(a) - fnp.log(z + 1.0 - a - f)


# From this a on, the tails are Temme's uniform expansion (`_log_tail_temme`): the series
# and the fraction need of order sqrt(a) steps there (1.3e6 at a = 1e12, where the series
# was cut at 2000 terms, and the fraction 8e125 at a = 1e250).
_A_LARGE = 1000.0


def _temme_polynomials(terms):
    """The coefficients (by power of v = 1/(lambda - 1)) of p_k in Temme's c_k(eta) =
    p_k(v) + (-1)^(k+1) (2k-1)!! / eta^(2k+1) (DLMF 8.12.9, 8.12.11: c_k = c_(k-1)'(eta) /
    eta + (-1)^k g_k v, and d/d eta = eta (1 + mu) / mu d/d mu, mu = lambda - 1, so that
    p_k = -(v + 1) v^2 p_(k-1)'(v) + (-1)^k g_k v), g_k Stirling's coefficients (DLMF 5.11.3)."""
    stirling = [Fraction(1), Fraction(1, 12), Fraction(1, 288), Fraction(-139, 51840)]
    stirling += [Fraction(-571, 2488320), Fraction(163879, 209018880)]
    out = [[Fraction(0), Fraction(1)]]
    for k in range(1, terms):
        prev = out[-1]
        poly = [Fraction(0)] * (len(prev) + 2)
        for j in range(1, len(prev)):  # -(v + 1) v^2 * j c_j v^(j-1)
            poly[j + 2] -= j * prev[j]
            poly[j + 1] -= j * prev[j]
        poly[1] += (-1) ** k * stirling[k]
        out.append(poly)
    return tuple(tuple(float(c) for c in poly) for poly in out)


# c_0 ... c_4: at a >= `_A_LARGE` the next term is below 1e-16 of the sum (checked against
# mpmath in tests/test_scipy_stats.py)
_TEMME = _temme_polynomials(5)


def _mu_minus_log1p(mu):
    """mu - log1p(mu) for mu > -1, by its Taylor series mu^2 sum_j (-1)^j mu^(j-2) / j
    where |mu| < 1/4 (40 terms, to 1e-24; the difference cancels there)."""
    near = mask(_np.abs(value(mu)) < 0.25, mu)
    m = guard(near, mu, 0.0)
    series = 0.0
    for j in range(41, 1, -1):  # by Horner
        series = series * m + (-1.0) ** j / j
    series = series * (m * m)
    if every(near):
        return series
    mf = guard(_np.logical_not(near), mu)
    return fnp.where(near, series, mf - fnp.log1p(mf))


def _log_tail_temme(a, z, lower):
    """log P(a, z) (lower, z < a, z / a >= 1/2) or log Q(a, z) (z > a) for a >= `_A_LARGE`
    by Temme's uniform expansion (DLMF 8.12.3-8.12.8): with lambda = z / a, mu = lambda - 1,
    eta = sign(mu) sqrt(2 (mu - log1p(mu))),
    Q = erfc(eta sqrt(a/2)) / 2 + R, P = erfc(-eta sqrt(a/2)) / 2 - R,
    R = exp(-a eta^2 / 2) / sqrt(2 pi a) sum_k c_k(eta) / a^k,
    taken in log form (erfc(y) = exp(-y^2) erfcx(y)) so that nothing underflows. The parts
    of c_k that cancel as eta -> 0 are each at most 1/eta (a eta^2)^-k: a eta^2 is above 400
    where the tails are used (P or Q < 1e-103)."""
    mu = (z - a) / a
    h = _mu_minus_log1p(mu)
    eta = fnp.sign(mu) * fnp.sqrt(2.0 * h)
    v = 1.0 / mu
    total = 0.0
    for k in range(len(_TEMME) - 1, -1, -1):  # by Horner in 1/a
        c = 0.0
        for coefficient in reversed(_TEMME[k]):
            c = c * v + coefficient
        c = c + (-1.0) ** (k + 1) * math.prod(range(1, 2 * k, 2)) / eta ** (2 * k + 1)
        total = total / a + c
    y = eta * fnp.sqrt(0.5 * a)
    if lower:
        scaled = fnp.sqrt(0.5 * math.pi * a) * sp.erfcx(-y) - total
    else:
        scaled = fnp.sqrt(0.5 * math.pi * a) * sp.erfcx(y) + total
    return -a * h - 0.5 * fnp.log((2.0 * math.pi) * a) + fnp.log(scaled)


# From z / a = this on (a >= `_A_LARGE`), log Q is its asymptotic series in 1/z
# (`_log_q_asymptotic`): Temme's form cancels there, in its value and in its derivative in a
# (-a (mu - log1p(mu)) and its a-derivative are each about z, their sum about log z: d/da
# at (1e18, 1000) gave 34.5 for 34.539, the value at (1e50, 1000) nan)
_Z_OVER_A_FAR = 1000.0
# its terms: each at most 1/`_Z_OVER_A_FAR` of the one before, the next below 1e-24
_Q_ASYMPTOTIC_TERMS = 8


def _log_q_asymptotic(a, z):
    """log Q(a, z) = (a-1) log z - z - gammaln(a) + log S for z >= `_Z_OVER_A_FAR` a, S =
    sum_k (a-1)(a-2)...(a-k) / z^k (DLMF 8.11.2; asymptotic, each term at most a / z times
    the one before; no cancellation, the value about -z, its derivative in a about
    log(z / a))."""
    term, total = 1.0, 1.0
    for k in range(1, _Q_ASYMPTOTIC_TERMS + 1):
        term = term * ((a - float(k)) / z)
        total = total + term
    return (a - 1.0) * fnp.log(z) - z - sp.gammaln(a) + fnp.log(total)


def _log_tail(a, z, lower):
    """log P(a, z) (lower) or log Q(a, z) where it underflows (P: z < a + 1, Q: z >= a + 1):
    the series or the continued fraction, whose length grows as sqrt(a), below `_A_LARGE`
    (and the series wherever z / (a + 1) < 1/2, where it is short); Temme's expansion
    above. An infinite a gives log P = -inf (P is 0 at every finite z)."""
    av, zv = value(a), value(z)
    large = av >= _A_LARGE
    if lower:
        large = _np.logical_and(large, zv >= 0.5 * (av + 1.0))
        infinite = mask(_np.isposinf(av), a, z)
        large = _np.logical_and(large, _np.logical_not(_np.isposinf(av)))
    large = mask(large, a, z)
    small = _np.logical_not(large)
    if lower:
        small = _np.logical_and(small, _np.logical_not(infinite))
    out = None
    if some(small):
        form = _log_p_series if lower else _log_q_fraction
        out = form(guard(small, a), guard(small, z, 0.5 if lower else 3.0))
    far = None
    if not lower and some(large):
        with _np.errstate(invalid="ignore"):
            far = mask(_np.logical_and(large, zv >= _Z_OVER_A_FAR * av), a, z)
        large = _np.logical_and(large, _np.logical_not(far))
    if some(large):
        far_z = 0.75 * _A_LARGE if lower else 2.0 * _A_LARGE
        temme = _log_tail_temme(guard(large, a, _A_LARGE), guard(large, z, far_z), lower)
        out = temme if out is None else fnp.where(large, temme, out)
    if far is not None and some(far):
        asymptotic = _log_q_asymptotic(
            guard(far, a, _A_LARGE), guard(far, z, 2.0 * _Z_OVER_A_FAR * _A_LARGE)
        )
        out = asymptotic if out is None else fnp.where(far, asymptotic, out)
    if lower and some(infinite):
        out = -math.inf if out is None else select(_np.logical_not(infinite), out, -math.inf)
    return out


def _log_cdf(a, z, lower):
    """log P(a, z) (lower) or log Q(a, z) for z > 0, each stable: log of the value where it
    is in [tiny, 1/2], log1p(-the complement) above 1/2 (P near 1 keeps its digits), and the
    log-form series or continued fraction below tiny (no underflow to -inf)."""
    this, other = (sp.gammainc, sp.gammaincc) if lower else (sp.gammaincc, sp.gammainc)
    y = this(a, z)
    yv = value(y)
    high = mask(yv > 0.5, z, a)
    av, zv = value(a), value(z)
    in_tail = (zv < av + 1.0) if lower else (zv >= av + 1.0)
    low = mask(_np.logical_and(yv < _tiny(yv), in_tail), z, a)
    mid = _np.logical_not(_np.logical_or(high, low))
    out = fnp.log(guard(mid, y))
    if some(high):
        out = fnp.where(high, fnp.log1p(-guard(high, other(a, z), 0.5)), out)
    if some(low):
        tail = _log_tail(guard(low, a), guard(low, z, 0.5 if lower else 3.0), lower)
        out = fnp.where(low, tail, out)
    return out


def _cdfs(x, a, loc, scale, which):
    given = (x, a, loc, scale)
    z, _, bad, (a,) = located(x, loc, scale, a)
    zv = value(z)
    # At z == 0 the CDFs take the density as their derivative in x (finite for a >= 1); below
    # it, and at z == inf, they are constants. logcdf is -inf at z == 0 and is taken from
    # z > 0 only. A nan x gives nan, as SciPy (`located`).
    inside = mask(
        _np.logical_and((zv > 0) if which == "logcdf" else (zv >= 0), zv < math.inf), z, a
    )
    below, above = {
        "cdf": (0.0, 1.0),
        "sf": (1.0, 0.0),
        "logcdf": (-math.inf, 0.0),
        "logsf": (0.0, -math.inf),
    }[which]
    zg = guard(inside, z)
    if which == "cdf":
        out = sp.gammainc(a, zg)
    elif which == "sf":
        out = sp.gammaincc(a, zg)
    else:
        out = _log_cdf(a, zg, lower=which == "logcdf")
    out = select(inside, out, below)
    top = mask(_np.isposinf(zv), z, a)
    if some(top):
        out = fnp.where(top, above, out)
    return scipy_scalar(invalid_to_nan(bad, out, *given))


def logpdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """(a-1) log z - z - gammaln(a) - log(scale), z = (x - loc)/scale >= 0 (xlogy: the value
    at z = 0 is -log(scale) for a = 1); -inf for z < 0; nan for a <= 0 or scale <= 0.

    >>> import fgrad
    >>> from fgrad.scipy.stats.gamma import logpdf
    >>> float(fgrad.grad(logpdf)(2.0, 3.0))  # (a - 1)/x - 1
    0.0
    """
    return _logpdf(x, a, loc, scale)


def pdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The gamma density, exp(logpdf)."""
    return fnp.exp(_logpdf(x, a, loc, scale))


def cdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The regularized lower incomplete gamma function P(a, z); d/dx is the density, d/da
    that of `fgrad.scipy.special.gammainc`.

    >>> import fgrad
    >>> from fgrad.scipy.stats.gamma import cdf
    >>> round(float(fgrad.grad(cdf, argnums=1)(1.0, 1.0)), 12)  # d/da P(a, 1) at a = 1
    -0.431729710635
    """
    return _cdfs(x, a, loc, scale, "cdf")


def logcdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log P(a, z) (-inf for z <= 0), stable at both ends (see the module docstring)."""
    return _cdfs(x, a, loc, scale, "logcdf")


def sf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The upper regularized incomplete gamma function Q(a, z) = 1 - P(a, z), computed
    directly (no cancellation in the right tail)."""
    return _cdfs(x, a, loc, scale, "sf")


def logsf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log Q(a, z), finite far in the right tail (see the module docstring)."""
    return _cdfs(x, a, loc, scale, "logsf")
