"""`fgrad.scipy.stats.multivariate_normal`: the multivariate normal distribution,
`logpdf(x, mean=None, cov=1, allow_singular=False)` as SciPy (x's last axis is the
dimension; the result has x's other axes, with length-1 axes squeezed as SciPy does).

Differentiable in x, mean and cov. `cov` may be a scalar, a vector (a diagonal) or a matrix.
Complex arguments are refused with a TypeError (SciPy casts them to real, dropping the
imaginary part with a ComplexWarning).
A full-rank matrix goes through its Cholesky factor (log det = 2 sum log diag L, and the
Mahalanobis distance by a solve with L). With `allow_singular=True`, a rank-deficient matrix
goes through `eigh`: the pseudo-determinant and pseudo-inverse over the eigenvalues above
SciPy's cutoff; points off the affine support get -inf. Its gradients are exact along
perturbations that keep the rank (cov = A A^T with A thin), which is all a singular
covariance has: any other perturbation makes it full rank. As SciPy, only the lower triangle
of a matrix `cov` is read, so the gradient with respect to `cov` is 0 above the diagonal and
counts each entry below it for both (see `fgrad.numpy.linalg.eigh`).
At a point with an infinite deviation x - mean (and no nan one) the density is 0: logpdf is
-inf, with derivative 0 there (the constant of the limit, as off a singular covariance's
support; the other points of a batch keep theirs), for every covariance. SciPy agrees for a
generic full covariance but gives nan for some (cov = eye(2), or x = [inf, inf]), where its
solve forms 0 * inf.

Imports: `fgrad.numpy`, `fgrad.scipy.stats._common`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as _np

from ... import numpy as fnp
from ...core import refuse_lazy
from ...numpy._mirror import missing_names
from ._common import (
    LOG_2PI,
    float_arguments,
    is_plain_number,
    number_as_float,
    refuse_complex,
    result_float,
    some,
    squeeze_ones,
    value,
)

if TYPE_CHECKING:
    from ...typing import Array, ArrayLike

__all__ = ["entropy", "logpdf", "pdf"]

if not TYPE_CHECKING:  # a method of scipy.stats.multivariate_normal not mirrored yet says so
    __getattr__ = missing_names(
        __name__, "scipy.stats.multivariate_normal", page="fgrad.scipy.stats"
    )


def _process_parameters(mean, cov, dtype, who):
    """(dim, mean (dim,), cov as a scalar, (dim,) diagonal or (dim, dim) matrix), as SciPy
    infers dim: from mean's size, else from cov."""
    if mean is not None:
        mv = value(mean)
        dim = mv.size
        if mv.ndim > 1:
            raise ValueError(
                f"multivariate_normal.{who}: 'mean' must be a vector; got shape "
                f"{mv.shape}, dtype {mv.dtype}"
            )
        if mv.ndim == 0:
            mean = fnp.reshape(mean, (1,))
    else:
        cv = value(cov)
        dim = 1 if cv.ndim < 2 else cv.shape[0]
        mean = _np.zeros(dim, dtype)
    if type(cov) is bool or is_plain_number(cov):  # (weak, also as `jit` holds it)
        cov = number_as_float(cov, dtype)
    cv = value(cov)
    if (
        cv.ndim > 2
        or (cv.ndim >= 1 and cv.shape[0] != dim)
        or (cv.ndim == 2 and cv.shape[1] != dim)
    ):
        raise ValueError(
            f"multivariate_normal.{who}: 'cov' has shape {cv.shape} (dtype {cv.dtype}); for "
            f"dimension {dim} (from 'mean') it must be a scalar, ({dim},) or ({dim}, {dim})"
        )
    return dim, mean, cov


def _cutoff(s, dtype):
    """SciPy's `_eigvalsh_to_eps`: eigenvalues below this are taken as 0."""
    factor = {"f": 1e3, "d": 1e6}.get(dtype.char, 1e6)
    return factor * _np.finfo(dtype).eps * _np.max(_np.abs(s))


class _Spectrum:
    """What logpdf and entropy need of the covariance: its rank, log pseudo-determinant, and
    the Mahalanobis distance of a deviation (`maha(dev)`, dev of shape (N, dim)), plus a mask
    of the deviations in the support."""

    def __init__(self, cov, dim, dtype, allow_singular, who):
        cv = value(cov)
        why = "the covariance's rank, which picks the path and enters the value, is read"
        refuse_lazy("scipy.stats.multivariate_normal", why + " from its eigenvalues", cv)
        if cv.ndim < 2:  # a diagonal: its entries are the eigenvalues, the basis is e_i
            s = _np.broadcast_to(cv, (dim,)).astype(dtype)
            variances = fnp.broadcast_to(cov, (dim,))
        else:
            s = _np.linalg.eigvalsh(cv)
        eps = _cutoff(s, dtype)
        if _np.min(s) < -eps:
            raise ValueError(
                f"multivariate_normal.{who}: 'cov' must be symmetric positive "
                f"semidefinite; it has eigenvalue {_np.min(s)!r}"
            )
        keep = s > eps
        self.rank = int(keep.sum())
        if self.rank < dim and not allow_singular:
            raise _np.linalg.LinAlgError(
                f"multivariate_normal.{who}: 'cov' is singular (rank {self.rank} < {dim}); "
                "pass allow_singular=True for the degenerate distribution on its range"
            )
        self.null = None
        self._diagonal = cv.ndim < 2
        if cv.ndim < 2:
            safe = fnp.where(keep, variances, 1.0) if self.rank < dim else variances
            self.log_pdet = (
                fnp.sum(fnp.where(keep, fnp.log(safe), 0.0))
                if self.rank < dim
                else fnp.sum(fnp.log(variances))
            )
            inv = fnp.where(keep, 1.0 / safe, 0.0) if self.rank < dim else 1.0 / variances
            self._maha = lambda dev: fnp.sum(dev * dev * inv, axis=-1)
            if self.rank < dim:
                self.null, self.tol = _np.eye(dim, dtype=dtype)[:, ~keep], 1e3 * eps
        elif self.rank == dim:
            low = fnp.linalg.cholesky(cov)
            self.log_pdet = 2.0 * fnp.sum(fnp.log(fnp.diagonal(low)))
            self._maha = lambda dev: fnp.sum(fnp.square(fnp.linalg.solve(low, dev.T)), axis=0)
        else:
            w, u = fnp.linalg.eigh(cov)
            keep = value(w) > eps
            safe = fnp.where(keep, w, 1.0)
            self.log_pdet = fnp.sum(fnp.where(keep, fnp.log(safe), 0.0))
            inv = fnp.where(keep, 1.0 / safe, 0.0)
            self._maha = lambda dev: fnp.sum(fnp.square(dev @ u) * inv, axis=-1)
            self.null, self.tol = value(u)[:, ~keep], 1e3 * eps

    def maha(self, dev):
        return self._maha(dev)

    def in_support(self, dev):
        if self.null is None:
            return None
        return _np.linalg.norm(value(dev) @ self.null, axis=-1) < self.tol


def _process_quantiles(x, dim):
    """x as (..., dim), as SciPy: a scalar is one point; a vector is one point, or N points
    when dim is 1."""
    xv = value(x)
    if xv.ndim == 0:
        return fnp.reshape(x, (1,))
    if xv.ndim == 1 and dim == 1:
        return fnp.reshape(x, (xv.shape[0], 1))
    if xv.shape[-1] != dim:
        raise ValueError(
            f"multivariate_normal.logpdf: x has shape {xv.shape} (dtype "
            f"{xv.dtype}); its last axis must have length {dim}, the dimension"
        )
    return x


def logpdf(
    x: ArrayLike, mean: ArrayLike | None = None, cov: ArrayLike = 1, allow_singular: bool = False
) -> Array:
    """-(rank log(2 pi) + log pdet(cov) + (x - mean)^T cov^+ (x - mean)) / 2; -inf for x off
    the support of a singular covariance (allow_singular=True).

    >>> import fgrad, numpy as np
    >>> from fgrad.scipy.stats.multivariate_normal import logpdf
    >>> fgrad.grad(logpdf)(np.array([1.0, 2.0]), np.zeros(2), np.diag([1.0, 4.0]))
    array([-1. , -0.5])
    """
    # (integers and float16 as floats: x - mean wrapped around in uint8)
    x, mean, cov = float_arguments(x, mean, cov)
    refuse_complex("multivariate_normal.logpdf", x=x, mean=mean, cov=cov)
    dtype = result_float(x, mean, cov)
    dim, mean, cov = _process_parameters(mean, cov, dtype, "logpdf")
    x = _process_quantiles(x, dim)
    spec = _Spectrum(cov, dim, dtype, allow_singular, "logpdf")
    batch = _np.shape(value(x))[:-1]
    dev = fnp.reshape(x - mean, (-1, dim))
    far = _infinitely_far(dev)
    used = dev if far is None else fnp.where(_np.expand_dims(far, -1), 0.0, dev)
    out = -0.5 * (spec.rank * LOG_2PI + spec.log_pdet + spec.maha(used))
    inside = spec.in_support(dev)
    if inside is not None and not inside.all():
        out = fnp.where(inside, out, -math.inf)
    if far is not None:
        out = fnp.where(far, -math.inf, out)
    return squeeze_ones(fnp.reshape(out, batch))


def _infinitely_far(dev):
    """The mask of the points (rows of dev) with an infinite deviation and no nan one, where
    the density is 0, or None if there are none. (Their rows of dev are set to 0 for the
    formula, whose solve would form 0 * inf = nan there and in their derivatives.)"""
    dv = value(dev)
    far = _np.logical_and(
        _np.any(_np.isinf(dv), axis=-1), _np.logical_not(_np.any(_np.isnan(dv), axis=-1))
    )
    return far if some(far) else None


def pdf(
    x: ArrayLike, mean: ArrayLike | None = None, cov: ArrayLike = 1, allow_singular: bool = False
) -> Array:
    """The multivariate normal density, exp(logpdf)."""
    return fnp.exp(logpdf(x, mean, cov, allow_singular))


def entropy(mean: ArrayLike | None = None, cov: ArrayLike = 1) -> Array:
    """(rank (1 + log(2 pi)) + log pdet(cov)) / 2; it does not depend on the mean, and a
    singular covariance is allowed (as SciPy: the entropy of the degenerate distribution)."""
    mean, cov = float_arguments(mean, cov)
    refuse_complex("multivariate_normal.entropy", mean=mean, cov=cov)
    dtype = result_float(mean, cov)
    dim, mean, cov = _process_parameters(mean, cov, dtype, "entropy")
    spec = _Spectrum(cov, dim, dtype, True, "entropy")
    return 0.5 * (spec.rank * (1.0 + LOG_2PI) + spec.log_pdet)
