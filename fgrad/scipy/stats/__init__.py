"""`fgrad.scipy.stats`: SciPy's probability distributions as modules of differentiable
functions, laid out as `jax.scipy.stats`: `norm.logpdf(x, loc=0, scale=1)`,
`gamma.cdf(x, a, loc=0, scale=1)`, `multivariate_normal.logpdf(x, mean, cov)`, ... with
SciPy's signatures (no frozen distributions).

The densities are compositions of `fgrad.numpy` and `fgrad.scipy.special` operations in
their stable forms (log_ndtr for the normal's log-CDFs, xlogy for 0 log 0, a Cholesky factor
for the multivariate normal), so they need no rules of their own; the CDFs of t, gamma, chi2
and beta are primitives differentiable in x, loc and scale (see `_common`). Outside the
support the log-density is -inf and the density 0, with zero (not nan) gradients; invalid
parameters (scale <= 0, a shape <= 0) give nan, as SciPy.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy`, `fgrad.scipy.special`, SciPy.
"""

from typing import TYPE_CHECKING

from ...numpy._mirror import missing_names
from . import beta, chi2, dirichlet, expon, gamma, multivariate_normal, norm, poisson, t

__all__ = [
    "beta",
    "chi2",
    "dirichlet",
    "expon",
    "gamma",
    "multivariate_normal",
    "norm",
    "poisson",
    "t",
]

if not TYPE_CHECKING:  # a name of scipy.stats (a distribution, a test) not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.stats", page=__name__)
