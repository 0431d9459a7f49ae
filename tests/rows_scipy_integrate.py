"""Gradient-table rows for fgrad.scipy.integrate: `odeint`, differentiated with respect to the
initial state, the time points and the arguments (see tests/gradtable.py).

The solves use tight tolerances (1e-10): the adjoint gradients are accurate to about the
solver's tolerance, and the table compares them with central differences at 1e-5. The time
points are drawn sorted and well apart, so a step of 1e-4 never reorders them. Systems are
small and time points few: each order-2 check runs dozens of solves.
"""

import numpy as np
from gradtable import Row

import fgrad.numpy as fnp
from fgrad.scipy.integrate import (
    cumulative_trapezoid,
    fixed_quad,
    odeint,
    quad,
    simpson,
    trapezoid,
)

TOL = dict(rtol=1e-10, atol=1e-10)


def _times(rng, n=3):
    """n sorted time points, at least 0.2 apart, starting near 0."""
    return np.cumsum(rng.uniform(0.2, 0.5, n)) - 0.2


def _decay(y, t, k):
    return -k * y


def _forced(y, t, k, w):
    # non-autonomous: d/dt[i] involves the explicit dependence on t
    return -k * y + fnp.sin(w * t)


def _linear(y, t, a):
    return a @ y


def _lotka_volterra(y, t, p):
    prey, pred = y[0], y[1]
    return fnp.stack([p[0] * prey - p[1] * prey * pred, p[2] * prey * pred - p[3] * pred])


def _pendulum(t, state, params):  # tfirst=True; the state and params are dicts
    theta, omega = state["theta"], state["omega"]
    return {
        "theta": omega,
        "omega": -params["g"] / params["l"] * fnp.sin(theta) - params["c"] * omega,
    }


# Names whose rows cannot run on Dask arrays, and why (tests/test_dask_table.py).
DASK_CANNOT = {
    "scipy.integrate.quad": "SciPy's QUADPACK evaluates the integrand on plain numbers, so its "
    "limits and arguments are read (and Dask has no adaptive quadrature)",
    "scipy.integrate.odeint": "SciPy's odeint (LSODA, compiled) steps on a NumPy state vector, "
    "converting the state and every right-hand side it evaluates with np.asarray: a lazy "
    "array would be computed at each step, and Dask has no ODE solver",
}

ROWS = [
    Row(
        "scipy.integrate.odeint",
        lambda y0, t, k: odeint(_decay, y0, t, (k,), **TOL),
        make=lambda rng: (rng.uniform(0.5, 2.0, 3), _times(rng), rng.uniform(0.3, 1.0)),
        variant="decay",
    ),
    Row(
        "scipy.integrate.odeint",
        lambda y0, t, k, w: odeint(_forced, y0, t, (k, w), **TOL),
        make=lambda rng: (
            rng.uniform(0.5, 2.0),
            _times(rng),
            rng.uniform(0.3, 1.0),
            rng.uniform(1.0, 2.0),
        ),
        variant="forced-scalar-state",
    ),
    Row(
        "scipy.integrate.odeint",
        lambda y0, t, a: odeint(_linear, y0, t, (a,), **TOL),
        make=lambda rng: (
            rng.uniform(-1.0, 1.0, 2),
            _times(rng),
            rng.uniform(-0.5, 0.5, (2, 2)) - 0.5 * np.eye(2),
        ),
        variant="linear",
    ),
    Row(
        "scipy.integrate.odeint",
        lambda y0, p: odeint(_lotka_volterra, y0, np.array([0.0, 0.6]), (p,), **TOL),
        make=lambda rng: (rng.uniform(0.8, 1.5, 2), rng.uniform(0.5, 1.0, 4)),
        variant="lotka-volterra",
    ),
    Row(
        "scipy.integrate.odeint",
        lambda theta0, omega0, t, g: odeint(
            _pendulum,
            {"theta": theta0, "omega": omega0},
            t,
            ({"g": g, "l": 1.5, "c": 0.1},),
            tfirst=True,
            **TOL,
        ),
        make=lambda rng: (
            rng.uniform(-1.0, 1.0),
            rng.uniform(-0.5, 0.5),
            _times(rng, 2),
            rng.uniform(8.0, 10.0),
        ),
        variant="pendulum-pytree-tfirst",
    ),
    Row(
        "scipy.integrate.odeint",
        lambda y0, k: odeint(_decay, y0, np.array([0.0, 0.3, 0.7]), (k,), **TOL),
        make=lambda rng: (rng.uniform(0.5, 2.0, (2, 2)), rng.uniform(0.3, 1.0, (2, 1))),
        variant="matrix-state",
    ),
]

NONDIFF = []


def _coordinates(rng, n=6):
    """n sorted coordinates, unevenly spaced, at least 0.2 apart."""
    return np.cumsum(rng.uniform(0.2, 0.8, n))


# Integrators of sampled data and fixed-order quadrature: differentiable in the samples, the
# coordinates, the spacing and the limits.
ROWS += [
    Row("scipy.integrate.trapezoid", trapezoid, ((5,),)),
    Row("scipy.integrate.simpson", simpson, ((5,),), variant="odd"),
    # an even number of samples: SciPy adds its float64 correction of the last interval into
    # the result in place, so a float32 result stays float32 (a vector's sum, a number, not)
    Row("scipy.integrate.simpson", lambda y: simpson(y, axis=0), ((6, 2),), variant="even"),
    Row(
        "scipy.integrate.simpson",
        lambda y, d: simpson(y, dx=d),
        ((4,), ()),
        ("real", "positive"),
        variant="traced dx",
        promotes=True,
    ),
    Row(
        "scipy.integrate.simpson",
        lambda y, x: simpson(y, x=x),
        make=lambda rng: (rng.normal(size=6), _coordinates(rng)),
        variant="uneven x, even n",
        promotes=True,  # SciPy computes the steps in float64
    ),
    Row(
        "scipy.integrate.simpson",
        lambda y, x: simpson(y, x=x, axis=1),
        make=lambda rng: (rng.normal(size=(2, 5)), _coordinates(rng, 5)),
        variant="uneven x, odd n",
        promotes=True,
    ),
    Row("scipy.integrate.cumulative_trapezoid", cumulative_trapezoid, ((5,),)),
    Row(
        "scipy.integrate.cumulative_trapezoid",
        lambda y, x: cumulative_trapezoid(y, x=x, axis=0, initial=0),
        make=lambda rng: (rng.normal(size=(4, 3)), _coordinates(rng, 4)),
        variant="x, initial=0",
    ),
    Row(
        "scipy.integrate.fixed_quad",
        lambda a, b, k: fixed_quad(lambda t: fnp.sin(k * t) * t, a, b, n=6)[0],
        make=lambda rng: (
            np.array(rng.uniform(-1.0, 0.0)),
            np.array(rng.uniform(0.5, 1.5)),
            np.array(rng.uniform(0.5, 2.0)),
        ),
        promotes=True,  # SciPy's Gauss-Legendre nodes are float64
    ),
]


def _damped(x, p):
    return fnp.sin(p[0] * x) * fnp.exp(-p[1] * x)


# Adaptive quadrature: Leibniz's rule, each integral of a partial derivative by quad again
ROWS += [
    Row(
        "scipy.integrate.quad",
        lambda a, b, p: quad(_damped, a, b, args=(p,), epsabs=1e-13, epsrel=1e-13)[0],
        make=lambda rng: (
            np.array(rng.uniform(0.0, 0.5)),
            np.array(rng.uniform(1.0, 2.0)),
            rng.uniform(0.5, 1.5, 2),
        ),
        promotes=True,  # QUADPACK integrates in float64
    ),
    Row(
        "scipy.integrate.quad",
        lambda k: quad(lambda x, k: fnp.exp(-k * x * x), 0.0, np.inf, args=(k,))[0],
        make=lambda rng: (np.array(rng.uniform(0.5, 2.0)),),
        variant="infinite limit",
        promotes=True,
    ),
]
