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

Dtypes, SciPy's, with float32 kept: SciPy computes every distribution in float64 and returns
float64; fgrad does too, except that float32 data gives float32 (README, "Float32 in, float32
out"), next to which a Python number is weak. Integer and float16 arguments are converted to
that float dtype before anything is computed (`_common.float_arguments`), so a float16 or
uint8 argument gives a float64 result with float64's precision, in eager code and under every
transform. SciPy itself subtracts loc from x first, in their integer type, and takes
log(scale) of an 8-bit integer in float16: its norm.logpdf(uint8 3, loc=uint8 4) is that of
x - loc = 255, and its logpdf of an int8 scale is 2e-4 off; fgrad's is the float64 value of
the same numbers (a bool x and loc are refused, as in SciPy: NumPy does not subtract bools).
dirichlet's mean and var keep their argument's float dtype (float16 too), as SciPy's do.

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
