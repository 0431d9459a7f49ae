"""`fgrad.scipy.stats.dirichlet`: the Dirichlet distribution, `f(x, alpha)` as SciPy.

As SciPy, the K components of x lie along its first axis (x of shape (K,) or (K, N)), or
K - 1 of them, the last being 1 - sum(x): that form is the one to differentiate, since every
point of it is on the simplex. Inputs off the simplex are refused with SciPy's ValueErrors
(the sum is checked to 1e-9, or 1e-5 for float32 data, which cannot hold 1e-9); for Dask
arrays, whose values are not read, such points give nan instead. Differentiable in x and
alpha.

Imports: `fgrad.numpy`, `fgrad.scipy.special`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from ... import numpy as fnp
from ...numpy._mirror import missing_names
from .. import special as sp
from ._common import any_row, is_foreign_array, sequences_as_arrays, squeeze_ones, value

if TYPE_CHECKING:
    from typing import Any

    from ...typing import Array, ArrayLike

__all__ = ["entropy", "logpdf", "mean", "pdf", "var"]

if not TYPE_CHECKING:  # a method of scipy.stats.dirichlet not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats.dirichlet", page="fgrad.scipy.stats")


def _refuse(condition, message, lazy):
    """Raise ValueError(message()) where `condition` holds anywhere. A lazy condition (of a
    Dask array, whose values are not read) joins `lazy` instead: its points become nan."""
    if is_foreign_array(condition):
        lazy.append(condition)
    elif any_row(condition):
        raise ValueError(message())


def _check_alpha(alpha, who, lazy):
    av = value(alpha)
    if av.ndim != 1:
        raise ValueError(
            f"dirichlet.{who}: alpha must be one-dimensional (K,); got shape "
            f"{av.shape}, dtype {av.dtype}"
        )
    _refuse(
        _np.any(av <= 0),  # (a nan alpha passes, and gives nan, as in SciPy)
        lambda: f"dirichlet.{who}: every entry of alpha must be > 0; got minimum {av.min()!r}",
        lazy,
    )
    return av


def _check_x(x, alpha, av, lazy):
    xv = value(x)
    k = av.shape[0]
    if xv.ndim == 0 or xv.shape[0] not in (k, k - 1):
        raise ValueError(
            f"dirichlet.logpdf: x (shape {xv.shape}, dtype {xv.dtype}) must have K = {k} or "
            f"K - 1 entries along its first axis, as alpha (shape {av.shape})"
        )
    if xv.shape[0] == k - 1:
        x = fnp.concatenate([x, fnp.expand_dims(1.0 - fnp.sum(x, axis=0), 0)], axis=0)
        xv = value(x)
    # each condition per point (the first axis holds a point's components)
    _refuse(_np.any(xv < 0, axis=0), lambda: "dirichlet.logpdf: each entry of x must be >= 0", lazy)
    _refuse(_np.any(xv > 1, axis=0), lambda: "dirichlet.logpdf: each entry of x must be <= 1", lazy)
    zero = _np.logical_and(xv == 0, _np.reshape(av < 1, (k,) + (1,) * (xv.ndim - 1)))
    _refuse(
        _np.any(zero, axis=0),
        lambda: "dirichlet.logpdf: each entry of x must be > 0 where its alpha < 1",
        lazy,
    )
    tol = 1e-5 if xv.dtype == _np.float32 else 1e-9
    total = _np.sum(xv, axis=0)
    _refuse(
        _np.abs(total - 1.0) > tol,
        lambda: (
            "dirichlet.logpdf: x must lie on the simplex (sum 1 along the first "
            f"axis); its sums are {total}"
        ),
        lazy,
    )
    return x


def _nan_where(lazy, out, alpha, x=None):
    """out with nan at the points where a lazy check failed (SciPy would raise), and a nan
    derivative there in alpha and x (`nan_of`): in x's components of those points, and in all
    of alpha (which every point shares) when any point failed."""
    if not lazy:
        return out
    bad = lazy[0]
    for condition in lazy[1:]:
        bad = _np.logical_or(bad, condition)
    carriers = [fnp.sum(sp.nan_carrier(_np.any(bad), a)) for a in sp.traced_floats([alpha])]
    carriers += [fnp.sum(sp.nan_carrier(bad, a), axis=0) for a in sp.traced_floats([x])]
    return fnp.where(bad, sp.nan_of(carriers, out), out)


def _log_beta(alpha):
    return fnp.sum(sp.gammaln(alpha)) - sp.gammaln(fnp.sum(alpha))


def logpdf(x: ArrayLike, alpha: ArrayLike) -> Array:
    """sum((alpha - 1) log x) - log B(alpha) over the first axis of x (xlogy: an entry
    x_i = 0 with alpha_i = 1 contributes 0). Returns a scalar for one point, shape (N,) for
    x of shape (K, N) (length-1 axes squeezed, as SciPy).

    >>> import fgrad, numpy as np
    >>> from fgrad.scipy.stats.dirichlet import logpdf
    >>> round(float(logpdf(np.array([0.2, 0.3]), np.array([1.0, 1.0, 1.0]))), 6)  # log 2
    0.693147
    """
    x, alpha = sequences_as_arrays(x, alpha)
    lazy: list[Any] = []
    av = _check_alpha(alpha, "logpdf", lazy)
    x = _check_x(x, alpha, av, lazy)
    xs = fnp.moveaxis(x, 0, -1)
    out = fnp.sum(sp.xlogy(alpha - 1.0, xs), axis=-1) - _log_beta(alpha)
    return squeeze_ones(_nan_where(lazy, out, alpha, x))


def pdf(x: ArrayLike, alpha: ArrayLike) -> Array:
    """The Dirichlet density, exp(logpdf)."""
    return fnp.exp(logpdf(x, alpha))


def entropy(alpha: ArrayLike) -> Array:
    """log B(alpha) + (a0 - K) digamma(a0) - sum((alpha - 1) digamma(alpha)), a0 = sum(alpha)."""
    (alpha,) = sequences_as_arrays(alpha)
    lazy: list[Any] = []
    av = _check_alpha(alpha, "entropy", lazy)
    a0 = fnp.sum(alpha)
    k = av.shape[0]
    out = (
        _log_beta(alpha)
        + (a0 - float(k)) * sp.digamma(a0)
        - fnp.sum((alpha - 1.0) * sp.digamma(alpha))
    )
    return _nan_where(lazy, out, alpha)


def mean(alpha: ArrayLike) -> Array:
    """alpha / sum(alpha)."""
    (alpha,) = sequences_as_arrays(alpha)
    lazy: list[Any] = []
    _check_alpha(alpha, "mean", lazy)
    return _nan_where(lazy, alpha / fnp.sum(alpha), alpha)


def var(alpha: ArrayLike) -> Array:
    """alpha_i (a0 - alpha_i) / (a0**2 (a0 + 1)), a0 = sum(alpha)."""
    (alpha,) = sequences_as_arrays(alpha)
    lazy: list[Any] = []
    _check_alpha(alpha, "var", lazy)
    a0 = fnp.sum(alpha)
    return _nan_where(lazy, alpha * (a0 - alpha) / (a0 * a0 * (a0 + 1.0)), alpha)
