"""Gradient-table rows for fgrad.scipy.optimize: solutions differentiated by the implicit
function theorem (see tests/gradtable.py).

fgrad.custom_linear_solve has a row with the right-hand side as its argument (the matrix its
functions close over is a constant). fgrad.custom_root's row reads its parameter from a
closure, as JAX's custom_root takes it: grad(vmap(f)) and jit(vmap(f)) of it are refused with
a TypeError by design (`REFUSED` below; a vmap inside them cannot pair the closure's rows with
each row's solve), and the tables check that they are. tests/test_custom_solve.py checks both
further.

The solves are tight (second-order methods with fgrad's Hessian, gradient norms near 1e-10,
root residuals near 1e-13): the implicit derivatives are exact at the exact solution, and the
table compares them with central differences at a step of 1e-4, which divides the solve's
error by 1e-4. (L-BFGS-B, which stops near 1e-9 from the minimizer here, fails check_rule's
order-2 differences by 1e-5 for that reason alone; tests/test_optimize.py checks it.) The
problems are small and well conditioned, as each order-2 check runs dozens of solves.
SciPy's solvers work in float64, so the solution is float64 whatever the parameters' dtype.
"""

import numpy as np
from gradtable import Row, counterpart

import fgrad
import fgrad.numpy as fnp
from fgrad.scipy.optimize import (
    brentq,
    fixed_point,
    least_squares,
    minimize,
    root,
    root_scalar,
)

FLOAT64 = "SciPy's solvers work in float64: the solution is float64 for float32 parameters"
DASK = (
    "SciPy's solver steps on NumPy arrays, converting every value it evaluates with "
    "np.asarray: a lazy array would be computed at each step"
)
DASK_CANNOT = {
    name: DASK
    for name in (
        "scipy.optimize.minimize",
        "scipy.optimize.root",
        "scipy.optimize.least_squares",
        "scipy.optimize.root_scalar",
        "scipy.optimize.brentq",
        "scipy.optimize.fixed_point",
    )
}


def _objective(x, a, c):
    return fnp.sum((x - a) ** 2) + fnp.sum(x**4) / 4 + c * fnp.sum(x[:-1] * x[1:])


def _equations(x, p):
    return x**3 + x - p + 0.1 * fnp.roll(x, 1)


T = np.linspace(0.0, 1.0, 6)


def _decay(k, y):
    return k[1] * fnp.exp(-k[0] * T) - y


# References: SciPy's solvers called directly, with fgrad's derivatives on plain values (the
# ones fgrad supplies), so that the iterates, and the solution, are the same bits.
_grad_objective = fgrad.grad(_objective)
_hess_objective = fgrad.jacfwd(fgrad.grad(_objective))


def _hessp_objective(x, v, a, c):
    return fgrad.jvp(lambda y: _grad_objective(y, a, c), (x,), (v,))[1]


def _ref_minimize(method, options, scalar_fun=False):
    def ref(a, c):
        kw = {"hess": _hess_objective} if method == "trust-exact" else {"hessp": _hessp_objective}
        res = counterpart("scipy.optimize.minimize")(
            lambda x, a, c: (float(_objective(x, a, c)), _grad_objective(x, a, c)),
            np.zeros(3),
            (a, c),
            method,
            jac=True,
            options=options,
            **kw,
        )
        return res.fun if scalar_fun else res.x

    return ref


def _ref_least_squares(y):
    return counterpart("scipy.optimize.least_squares")(
        lambda k, y: np.asarray(_decay(k, y)),
        np.ones(2),
        fgrad.jacfwd(_decay),
        gtol=1e-15,
        ftol=1e-15,
        xtol=1e-15,
        args=(y,),
    ).x


def _ref_fixed_point(a):
    # fgrad's fixed_point is real: it refuses complex args (SciPy's would iterate in complex)
    if np.iscomplexobj(a):
        raise TypeError("fixed_point: complex args are refused")
    return counterpart("scipy.optimize.fixed_point")(
        lambda x, a: np.cos(a * x), np.array([0.5, 0.6]), (a,), xtol=1e-15
    )


def _params(rng):
    return (rng.uniform(-1.5, 1.5, 3), rng.uniform(0.1, 0.4))


ROWS = [
    Row(
        "scipy.optimize.minimize",
        lambda a, c: (
            minimize(
                _objective, np.zeros(3), args=(a, c), method="trust-exact", options={"gtol": 1e-10}
            ).x
        ),
        make=_params,
        variant="trust-exact",
        reference=_ref_minimize("trust-exact", {"gtol": 1e-10}),
        float32=FLOAT64,
    ),
    Row(
        "scipy.optimize.minimize",
        lambda a, c: (
            minimize(
                _objective, np.zeros(3), args=(a, c), method="Newton-CG", options={"xtol": 1e-13}
            ).fun
        ),
        make=_params,
        variant="Newton-CG-fun",
        reference=_ref_minimize("Newton-CG", {"xtol": 1e-13}, scalar_fun=True),
        float32=FLOAT64,
    ),
    Row(
        "scipy.optimize.minimize",
        lambda a, c: (
            minimize(
                _objective,
                np.zeros(3),
                args=(a, c),
                method="Newton-CG",
                options={"xtol": 1e-13},
                implicit_solve="cg",
                implicit_tol=1e-14,  # cg to 1e-10 leaves 1e-5 relative errors at order 2
            ).x
        ),
        make=_params,
        variant="Newton-CG-cg",
        reference=_ref_minimize("Newton-CG", {"xtol": 1e-13}),
        float32=FLOAT64,
    ),
    Row(
        "scipy.optimize.root",
        lambda p: root(_equations, np.ones(3), args=(p,), tol=1e-13).x,
        make=lambda rng: (rng.uniform(-3.0, 3.0, 3),),
        float32=FLOAT64,
    ),
    Row(
        "scipy.optimize.least_squares",
        lambda y: (
            least_squares(_decay, np.ones(2), args=(y,), gtol=1e-15, ftol=1e-15, xtol=1e-15).x
        ),
        make=lambda rng: (1.5 * np.exp(-2.0 * T) + rng.uniform(-0.05, 0.05, 6),),
        reference=_ref_least_squares,
        float32=FLOAT64,
        eps=1e-3,
    ),
    Row(
        "scipy.optimize.root_scalar",
        lambda a: root_scalar(lambda x, a: x**3 + x - a, args=(a,), x0=1.0, xtol=1e-15).root,
        shapes=((),),
        domains=("positive",),
        float32=FLOAT64,
    ),
    Row(
        "scipy.optimize.brentq",
        lambda c: brentq(lambda x, c: fnp.exp(x) + x - c, -5.0, 5.0, args=(c,)),
        shapes=((),),
        domains=("positive",),
        float32=FLOAT64,
    ),
    Row(
        "scipy.optimize.fixed_point",
        lambda a: fixed_point(
            lambda x, a: fnp.cos(a * x), np.array([0.5, 0.6]), args=(a,), xtol=1e-15
        ),
        make=lambda rng: (rng.uniform(0.3, 1.0, 2),),
        reference=_ref_fixed_point,
        float32=FLOAT64,
    ),
]


# fgrad.custom_linear_solve with the right-hand side as the argument (a matrix the functions
# close over is a constant): the solve is differentiated as A^-1 b, A^-T for reverse mode.
_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])


ROWS.append(
    Row(
        "custom_linear_solve",
        lambda b: fgrad.custom_linear_solve(
            lambda x: _SPD @ x, b, lambda matvec, b: fnp.linalg.solve(_SPD, b), symmetric=True
        ),
        ((3,),),
        promotes=True,  # the matrix is float64, as NumPy's solve would promote
        reference=lambda b: np.linalg.solve(_SPD, b),
    )
)
DASK_CANNOT["custom_linear_solve"] = (
    "the solve's derivative is a solve of the user's functions on values: a lazy array is "
    "refused rather than computed at each solve"
)


# fgrad.custom_root: the root of x^3 + x = theta, elementwise, found by Newton's method in fgrad
# operations (the user's solver), differentiated implicitly; theta reaches f from a closure, as
# JAX's custom_root takes it.
def _newton(f, x):
    for _ in range(40):
        x = x - f(x) / (3 * x**2 + 1)
    return x


def _cubic_root(theta):
    return fgrad.custom_root(
        lambda x: x**3 + x - theta,
        fnp.zeros_like(theta),
        _newton,
        lambda g, y: y / g(fnp.ones_like(y)),  # g is diagonal here: g(1) is its diagonal
    )


def _ref_cubic_root(theta):
    x = np.zeros_like(theta)
    for _ in range(40):
        x = x - (x**3 + x - theta) / (3 * x**2 + 1)
    return x


ROWS.append(
    Row(
        "custom_root",
        _cubic_root,
        ((3,),),
        reference=_ref_cubic_root,
    )
)
DASK_CANNOT["custom_root"] = (
    "the user's solver runs on the values of the guess: a lazy array is refused rather than "
    "computed at each solve"
)
# custom_root reads theta from a closure: inside a differentiating transform or a jit, a vmap
# of it cannot pair the closure's rows with each row's solve (fgrad.solve says so; vmap(grad)
# and vmap(jit) work, and test_custom_solve checks them)
REFUSED = {
    "custom_root": {
        "grad(vmap)": (r"vmap\(grad\(f\)\) rather than grad\(vmap\(f\)\)", "closure under vmap"),
        "jit(vmap)": (r"vmap\(jit\(f\)\) rather than jit\(vmap\(f\)\)", "closure under vmap"),
    }
}
