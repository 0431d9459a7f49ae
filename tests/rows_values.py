"""NumPy's and SciPy's references for the rows whose function cannot simply be read with NumPy's
names (see tests/test_values.py and `gradtable.reference`), keyed by (name, variant).

A reference computes what the row's function computes, with NumPy and SciPy, where SciPy's
own function would not say it: a pytree state for `odeint` (SciPy integrates a flat vector),
the triangle of `cho_factor` that holds the factor (SciPy leaves "random data" in the other),
the inverse of a matrix that `assume_a="diagonal"` declares diagonal (SciPy 1.17 returns
the input's off-diagonal entries unchanged), and singular covariances rounded to float32
(SciPy's own check rejects them as indefinite; it computes in float64 anyway).
"""

import numpy as np
from gradtable import counterpart

ROWS = []
NONDIFF = []

TOL = dict(rtol=1e-10, atol=1e-10)  # as tests/rows_scipy_integrate.py


def _pendulum(theta0, omega0, t, g, length=1.5, c=0.1):
    def f(y, t):
        return [y[1], -g / length * np.sin(y[0]) - c * y[1]]

    ys = counterpart("scipy.integrate.odeint")(f, [theta0, omega0], t, **TOL)
    return {"theta": ys[:, 0], "omega": ys[:, 1]}


def _matrix_decay(y0, k):
    t = np.array([0.0, 0.3, 0.7])
    ys = counterpart("scipy.integrate.odeint")(
        lambda y, t: (-k * y.reshape(2, 2)).ravel(), y0.ravel(), t, **TOL
    )
    return ys.reshape(3, 2, 2)


def _in_float64(f):
    return lambda *args: f(*(np.asarray(a, dtype=np.float64) for a in args))


MVN_LOGPDF, MVN_PDF, MVN_ENTROPY = (
    counterpart(f"scipy.stats.multivariate_normal.{f}") for f in ("logpdf", "pdf", "entropy")
)
CHO_FACTOR = counterpart("scipy.linalg.cho_factor")

REFERENCES = {
    ("scipy.integrate.odeint", "pendulum-pytree-tfirst"): _pendulum,
    ("scipy.integrate.odeint", "matrix-state"): _matrix_decay,
    ("scipy.linalg.cho_factor", "lower=False"): lambda a: np.triu(CHO_FACTOR(a, lower=False)[0]),
    ("scipy.linalg.cho_factor", "lower=True"): lambda a: np.tril(CHO_FACTOR(a, lower=True)[0]),
    ("scipy.linalg.inv", "assume_a=diagonal,lower=False"): lambda a: counterpart(
        "scipy.linalg.inv"
    )(a * np.eye(a.shape[-1], dtype=a.dtype), assume_a="diagonal"),
    ("scipy.stats.multivariate_normal.logpdf", "singular0"): _in_float64(
        lambda w, m, a: MVN_LOGPDF(m + w @ a.T, m, a @ a.T, allow_singular=True)
    ),
    ("scipy.stats.multivariate_normal.pdf", "singular0"): _in_float64(
        lambda w, m, a: MVN_PDF(m + w @ a.T, m, a @ a.T, allow_singular=True)
    ),
    ("scipy.stats.multivariate_normal.entropy", "singular0"): _in_float64(
        lambda a: MVN_ENTROPY(cov=a @ a.T)
    ),
}
