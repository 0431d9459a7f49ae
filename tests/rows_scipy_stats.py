"""Gradient-table rows for fgrad.scipy.stats: every function of norm, t, gamma, beta, chi2,
expon, poisson, dirichlet and multivariate_normal, differentiated in the data and every
parameter it is differentiable in (loc, scale, shape parameters; mu for poisson; x and alpha
for dirichlet; x, mean and cov for multivariate_normal), over shapes (), (3,), (3, 2) and
broadcasting triples. Data are drawn inside the support, away from its ends; the pdf and CDF
rows also take points outside the support (value 0 or 1, gradient 0). The CDFs of gamma and
chi2, t and beta are differentiated in their shape parameters too (and in their log tails;
against mpmath in tests/test_scipy_stats.py). See tests/gradtable.py."""

import numpy as np
from gradtable import Row

import fgrad.numpy as fnp
from fgrad.scipy.stats import (
    beta,
    chi2,
    dirichlet,
    expon,
    gamma,
    multivariate_normal,
    norm,
    poisson,
    t,
)

P = "scipy.stats."
ROWS = []
NONDIFF = []

# (x shape, loc shape, scale shape): scalars, arrays with scalar parameters, broadcasting
LOC_SCALE_SHAPES = [
    ((), (), ()),
    ((3,), (), ()),
    ((3, 2), (), ()),
    ((3, 2), (2,), (3, 1)),
    ((), (3,), ()),
]


def located(zlo, zhi, shapes, params=()):
    """A make= for (x, *params, loc, scale) with z = (x - loc)/scale in (zlo, zhi); each
    entry of `params` is (shape, lo, hi) for a shape parameter."""
    xs, ls, ss = shapes

    def make(rng):
        full = np.broadcast_shapes(xs, ls, ss)
        scale = rng.uniform(0.6, 1.8, ss)
        z = rng.uniform(zlo, zhi, full)
        if xs == full:
            loc = rng.uniform(-1.0, 1.0, ls)
            x = loc + scale * z
        else:  # x smaller than loc (only loc may be wider): loc is placed around x
            x = rng.uniform(-1.0, 1.0, xs)
            loc = x - scale * z
        p = tuple(rng.uniform(lo, hi, s) for s, lo, hi in params)
        return (x,) + p + (loc, scale)

    return make


def scalar_shapes(zlo, zhi, params):
    """x of each shape with scalar shape parameters, z in (zlo, zhi)."""
    return [
        located(zlo, zhi, s, tuple(((), lo, hi) for lo, hi in params)) for s in LOC_SCALE_SHAPES
    ]


def add(name, fn, makes, variant="", **kw):
    for i, make in enumerate(makes):
        ROWS.append(
            Row(P + name, fn, make=make, variant=f"{variant}{i}" if variant else str(i), **kw)
        )


# --- norm -----------------------------------------------------------------------------------------
for fname in ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]:
    add(f"norm.{fname}", getattr(norm, fname), scalar_shapes(-2.0, 2.0, ()))
add("norm.logcdf", norm.logcdf, [located(-30.0, -8.0, ((3,), (), ()))], variant="left-tail")
add("norm.logsf", norm.logsf, [located(8.0, 30.0, ((3,), (), ()))], variant="right-tail")
for fname in ["ppf", "isf"]:
    add(
        f"norm.{fname}",
        getattr(norm, fname),
        [
            lambda rng, s=s: (rng.uniform(0.1, 0.9, s), rng.uniform(-1, 1), rng.uniform(0.5, 2))
            for s in [(), (3,), (3, 2)]
        ],
    )

# --- expon ----------------------------------------------------------------------------------------
for fname in ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]:
    add(f"expon.{fname}", getattr(expon, fname), scalar_shapes(0.1, 3.0, ()))
add(
    "expon.logcdf",
    expon.logcdf,
    [located(0.15, 0.6, ((3,), (), ())), located(1.0, 30.0, ((3,), (), ()))],
    variant="tails",
)
# pdf, cdf and sf are 0 or 1 (constants) below loc: x on both sides, away from loc
for fname in ["pdf", "cdf", "sf", "logsf"]:
    add(
        f"expon.{fname}",
        lambda x, loc, scale, f=getattr(expon, fname): f(
            x * np.array([1.0, -1.0, 1.0]), loc, scale
        ),
        [lambda rng: (rng.uniform(0.5, 2.0, 3), -0.2, 1.3)],
        variant="outside",
        promotes=True,
    )

# --- gamma and chi2 -------------------------------------------------------------------------------
add("gamma.logpdf", gamma.logpdf, scalar_shapes(0.2, 3.0, [(0.6, 3.0)]))
add("gamma.pdf", gamma.pdf, scalar_shapes(0.2, 3.0, [(0.6, 3.0)]))
add(
    "gamma.logpdf",
    gamma.logpdf,
    [lambda rng: (rng.uniform(0.2, 3.0, (3, 2)), rng.uniform(0.6, 3.0, (2,)))],
    variant="a-broadcast",
)
add("chi2.logpdf", chi2.logpdf, scalar_shapes(0.2, 3.0, [(1.2, 6.0)]))
add("chi2.pdf", chi2.pdf, scalar_shapes(0.2, 3.0, [(1.2, 6.0)]))
# The CDFs in x, the shape parameter (a or df, through fgrad.scipy.special.gammainc(c)'s
# derivative in a), loc and scale: z in (0.3, 3) with a in (0.6, 3) crosses both ways of
# computing d/da (series for z < a + 1, continued fraction above) and both ways of taking the
# log (log P, and log1p(-Q) where P > 1/2).
CDF_SHAPES = [((), (), ()), ((3,), (), ()), ((3, 2), (2,), (3, 1))]
for dist, lo, hi in [("gamma", 0.6, 3.0), ("chi2", 1.2, 6.0)]:
    mod = {"gamma": gamma, "chi2": chi2}[dist]
    for fname in ["cdf", "logcdf", "sf", "logsf"]:
        f = getattr(mod, fname)
        add(f"{dist}.{fname}", f, [located(0.3, 3.0, s, (((), lo, hi),)) for s in CDF_SHAPES])
        add(
            f"{dist}.{fname}",
            f,
            [
                lambda rng, lo=lo, hi=hi: (
                    rng.uniform(0.3, 3.0, (3, 2)),
                    rng.uniform(lo, hi, (2,)),
                    0.1,
                    1.2,
                )
            ],
            variant="shape-broadcast",
        )
    # the tails in log form: logcdf far left (P underflows: a log-form series; x = exp(u)
    # keeps the finite differences relative) and far right (log1p(-Q)); logsf far right (Q
    # underflows: a log-form continued fraction)
    k = 1.0 if dist == "gamma" else 2.0  # chi2's z is x / 2
    add(
        f"{dist}.logcdf",
        lambda u, a, f=mod.logcdf: f(fnp.exp(u), a),
        [lambda rng, k=k: (rng.uniform(-80.0, -60.0, 3), k * rng.uniform(4.5, 6.0))],
        variant="left-tail",
    )
    add(
        f"{dist}.logcdf",
        mod.logcdf,
        [lambda rng, k=k: (k * rng.uniform(20.0, 40.0, 3), k * rng.uniform(0.6, 3.0))],
        variant="right-tail",
    )
    add(
        f"{dist}.logsf",
        mod.logsf,
        [lambda rng, k=k: (k * rng.uniform(300.0, 500.0, 3), k * rng.uniform(0.6, 3.0))],
        variant="right-tail",
    )
    add(
        f"{dist}.pdf",
        lambda x, a, f=mod.pdf: f(x * np.array([1.0, -1.0, 1.0]), a),
        [lambda rng, lo=lo, hi=hi: (rng.uniform(0.5, 2.0, 3), rng.uniform(lo + 0.5, hi))],
        variant="outside",
        promotes=True,
    )
    for fname in ["cdf", "sf"]:
        add(
            f"{dist}.{fname}",
            lambda x, a, f=getattr(mod, fname): f(x * np.array([1.0, -1.0, 1.0]), a),
            [lambda rng, lo=lo, hi=hi: (rng.uniform(0.5, 2.0, 3), rng.uniform(lo + 0.5, hi))],
            variant="outside",
            promotes=True,
        )

# --- t --------------------------------------------------------------------------------------------
add("t.logpdf", t.logpdf, scalar_shapes(-2.0, 2.0, [(0.8, 6.0)]))
add("t.pdf", t.pdf, scalar_shapes(-2.0, 2.0, [(0.8, 6.0)]))
add(
    "t.logpdf",
    t.logpdf,
    [lambda rng: (rng.uniform(-2.0, 2.0, (3, 2)), rng.uniform(0.8, 6.0, (3, 1)))],
    variant="df-broadcast",
)
for fname in ["cdf", "logcdf", "sf", "logsf"]:
    f = getattr(t, fname)
    add(
        f"t.{fname}",
        lambda x, loc, scale, f=f: f(x, 3.5, loc, scale),
        [
            lambda rng, s=s: (
                rng.uniform(-3.0, 3.0, s),
                rng.uniform(-0.5, 0.5),
                rng.uniform(0.6, 1.5),
            )
            for s in [(), (3,), (3, 2)]
        ],
    )
    add(
        f"t.{fname}",
        lambda x, loc, scale, f=f: f(x, np.array([1.0, 4.5]), loc, scale),
        [
            lambda rng: (
                rng.uniform(-3.0, 3.0, (3, 2)),
                rng.uniform(-0.5, 0.5, (3, 1)),
                rng.uniform(0.6, 1.5, (2,)),
            )
        ],
        variant="df-array",
        promotes=True,
    )

# --- beta: support [loc, loc + scale] -------------------------------------------------------------
add(
    "beta.logpdf",
    beta.logpdf,
    [located(0.1, 0.9, s, (((), 0.6, 3.0), ((), 0.6, 3.0))) for s in LOC_SCALE_SHAPES],
)
add(
    "beta.pdf",
    beta.pdf,
    [located(0.1, 0.9, s, (((), 0.6, 3.0), ((), 0.6, 3.0))) for s in LOC_SCALE_SHAPES],
)
add(
    "beta.logpdf",
    beta.logpdf,
    [
        lambda rng: (
            rng.uniform(0.1, 0.9, (3, 2)),
            rng.uniform(0.6, 3.0, (2,)),
            rng.uniform(0.6, 3.0, (3, 1)),
        )
    ],
    variant="ab-broadcast",
)
add(
    "beta.logpdf",
    lambda x, b: beta.logpdf(x, 1.0, b),
    [lambda rng: (rng.uniform(0.1, 0.9, 3), rng.uniform(0.6, 3.0))],
    variant="a=1",
)
add(
    "beta.pdf",
    lambda x, a, b: beta.pdf(x * np.array([1.0, -1.0, 1.0]) + np.array([0.0, 0.0, 1.0]), a, b),
    [lambda rng: (rng.uniform(0.2, 0.8, 3), rng.uniform(0.6, 3.0), rng.uniform(0.6, 3.0))],
    variant="outside",
    promotes=True,
)
for fname in ["cdf", "logcdf", "sf", "logsf"]:
    f = getattr(beta, fname)
    add(
        f"beta.{fname}",
        lambda x, loc, scale, f=f: f(x, 2.5, 0.7, loc, scale),
        [located(0.1, 0.9, s) for s in LOC_SCALE_SHAPES],
    )
    add(
        f"beta.{fname}",
        lambda x, f=f: f(x, np.array([0.8, 3.0]), np.array([[1.5], [0.6], [2.0]])),
        [lambda rng: (rng.uniform(0.1, 0.9, (3, 2)),)],
        variant="ab-arrays",
        promotes=True,
    )
    add(
        f"beta.{fname}",
        lambda x, a, b, f=f: f(x, a, b),
        [
            lambda rng, s=s: (
                rng.uniform(0.1, 0.9, s),
                rng.uniform(0.6, 3.0, s),
                rng.uniform(0.6, 3.0),
            )
            for s in [(), (3,)]
        ],
        variant="ab",
    )
    add(
        f"t.{fname}",
        lambda x, df, f=getattr(t, fname): f(x, df),
        [
            lambda rng, s=s: (rng.uniform(-3.0, 3.0, s), rng.uniform(0.8, 6.0, s))
            for s in [(), (3,)]
        ],
        variant="df",
    )
add(
    "beta.cdf",
    lambda x: beta.cdf(x * np.array([1.0, -1.0, 1.0]) + np.array([0.0, 0.0, 1.0]), 2.0, 3.0),
    [lambda rng: (rng.uniform(0.2, 0.8, 3),)],
    variant="outside",
    promotes=True,
)

# --- poisson: differentiable in mu; k is a constant -----------------------------------------------
K = np.array([[0.0, 1.0], [3.0, 2.5], [-1.0, 7.0]])  # 2.5 and -1 are off the support
for fname in ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]:
    f = getattr(poisson, fname)
    # logpmf is the constant -inf off the support: its rows use integer k >= 0 only
    # and logcdf is the constant -inf below the support: its rows use k >= 0
    k = {
        "logpmf": np.array([[0.0, 1.0], [3.0, 2.0], [5.0, 7.0]]),
        "logcdf": np.array([[0.0, 1.0], [3.0, 2.5], [5.0, 7.0]]),
    }.get(fname, K)
    add(
        f"poisson.{fname}",
        lambda mu, f=f: f(3.0, mu),
        [lambda rng, s=s: (rng.uniform(0.5, 6.0, s),) for s in [(), (3,), (3, 2)]],
    )
    add(
        f"poisson.{fname}",
        lambda mu, f=f, k=k: f(k, mu, 0),
        [lambda rng, s=s: (rng.uniform(0.5, 6.0, s),) for s in [(), (2,), (3, 1)]],
        variant="k-array",
    )
    add(
        f"poisson.{fname}",
        lambda mu, f=f: f(np.array([4, 5, 6]), mu, 2),
        [lambda rng: (rng.uniform(0.5, 6.0, 3),)],
        variant="loc=2",
    )

# --- dirichlet: x in its K - 1 free coordinates (every point of it is on the simplex) -------------


def simplex(k, n=None):
    def make(rng):
        w = rng.uniform(0.5, 1.5, (k,) if n is None else (k, n))
        x = (w / w.sum(axis=0))[:-1]
        return x, rng.uniform(0.6, 3.0, k)

    return make


for fname in ["logpdf", "pdf"]:
    f = getattr(dirichlet, fname)
    add(f"dirichlet.{fname}", f, [simplex(3), simplex(3, 4), simplex(2, 1), simplex(2)])
for fname in ["entropy", "mean", "var"]:
    add(
        f"dirichlet.{fname}",
        getattr(dirichlet, fname),
        [lambda rng, k=k: (rng.uniform(0.6, 3.0, k),) for k in (2, 4)],
    )

# --- multivariate_normal --------------------------------------------------------------------------
MVN = multivariate_normal


def spd(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T / d + np.eye(d)


def mvn_make(xshape, d, cov_kind):
    def make(rng):
        x = rng.normal(size=xshape)
        mean = rng.normal(size=d)
        cov = {
            "matrix": lambda: spd(rng, d),
            "diag": lambda: rng.uniform(0.5, 2.0, d),
            "scalar": lambda: rng.uniform(0.5, 2.0),
        }[cov_kind]()
        return x, mean, cov

    return make


for fname in ["logpdf", "pdf"]:
    f = getattr(MVN, fname)
    add(
        f"multivariate_normal.{fname}",
        f,
        [
            mvn_make((3,), 3, "matrix"),
            mvn_make((4, 3), 3, "matrix"),
            mvn_make((2, 2, 3), 3, "matrix"),
            mvn_make((4, 2), 2, "diag"),
            mvn_make((4, 2), 2, "scalar"),
            mvn_make((1, 3), 3, "matrix"),
        ],
    )
    add(
        f"multivariate_normal.{fname}",
        lambda x, c, f=f: f(x, cov=c),
        [
            lambda rng: (rng.normal(size=(3, 2)), spd(rng, 2)),
            lambda rng: (rng.normal(size=4), rng.uniform(0.5, 2.0)),
        ],
        variant="no-mean",
    )
    add(
        f"multivariate_normal.{fname}",
        lambda x, f=f: f(x),
        [lambda rng: (rng.normal(size=3),)],
        variant="standard-1d",
    )
    # allow_singular with a full-rank matrix: the same values by the same (Cholesky) path
    add(
        f"multivariate_normal.{fname}",
        lambda x, m, c, f=f: f(x, m, c, allow_singular=True),
        [mvn_make((4, 3), 3, "matrix")],
        variant="allow_singular-full-rank",
    )


def singular(rng):
    """cov = A A^T with A of shape (3, 2) (rank 2), and points on mean + range(A)."""
    a = rng.normal(size=(3, 2))
    w = rng.normal(size=(4, 2))
    return w, rng.normal(size=3), a


for fname in ["logpdf", "pdf"]:
    f = getattr(MVN, fname)
    # every perturbation of (w, mean, a) keeps the rank and keeps x in the support
    add(
        f"multivariate_normal.{fname}",
        lambda w, m, a, f=f: f(m + w @ a.T, m, a @ a.T, allow_singular=True),
        [singular],
        variant="singular",
    )
    add(
        f"multivariate_normal.{fname}",
        lambda w, m, v, f=f: f(
            fnp.stack([m[0] + w[:, 0], m[1] + 0.0 * w[:, 1], m[2] + w[:, 1]], axis=-1),
            m,
            v * np.array([1.0, 0.0, 1.0]),
            allow_singular=True,
        ),
        [lambda rng: (rng.normal(size=(4, 2)), rng.normal(size=3), rng.uniform(0.5, 2.0, 3))],
        variant="singular-diag",
        promotes=True,
    )

add(
    "multivariate_normal.entropy",
    MVN.entropy,
    [
        lambda rng: (rng.normal(size=3), spd(rng, 3)),
        lambda rng: (rng.normal(size=2), rng.uniform(0.5, 2.0, 2)),
    ],
)
add(
    "multivariate_normal.entropy",
    lambda c: MVN.entropy(cov=c),
    [lambda rng: (spd(rng, 2),), lambda rng: (rng.uniform(0.5, 2.0),)],
    variant="no-mean",
)
add(
    "multivariate_normal.entropy",
    lambda a: MVN.entropy(cov=a @ a.T),
    [lambda rng: (rng.normal(size=(3, 2)),)],
    variant="singular",
)

_GAMMA_TERMS = (
    "it is scipy.special.gammainc/gammaincc (see rows_special.DASK_CANNOT), whose log form in "
    "the far tails and derivative in the shape sum a series or a continued fraction whose "
    "number of terms is chosen from the largest shape and x in the data, which a lazy Dask "
    "array cannot give without computing"
)
_RANK = (
    "the covariance's rank, a Python int that picks the Cholesky or the eigendecomposition "
    "path and enters the value, is read from its eigenvalues (np.linalg.eigvalsh, which Dask "
    "does not implement)"
)
DASK_CANNOT = {
    f"scipy.stats.{family}.{name}": _GAMMA_TERMS
    for family in ("gamma", "chi2")
    for name in ("cdf", "logcdf", "sf", "logsf")
} | {f"scipy.stats.multivariate_normal.{name}": _RANK for name in ("logpdf", "pdf", "entropy")}
# the CDFs of beta and t in their shape parameters: scipy.special.betainc's derivatives in a and
# b (see rows_special.DASK_CANNOT), whose number of series terms is read from the data
_BETA_TERMS = (
    "its derivative in the shape parameters is scipy.special.betainc's in a and b, a series "
    "whose number of terms is chosen from the data, which a lazy Dask array cannot give "
    "without computing"
)
DASK_CANNOT |= {
    row.id: _BETA_TERMS for row in ROWS if row.variant.rstrip("0123456789") in ("ab", "df")
}
