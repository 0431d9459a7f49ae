"""Every derivative of order 1 to 20 of tanh, sin, exp(sin x) and 1/(1 + x^2) by
`fgrad.derivative` (Taylor mode) against its closed form, evaluated with 40 digits, at three
points, to 1e-8 relative (issue 17).

The closed forms, each exact:
- tanh: d^k tanh / dx^k = p_k(tanh x), with p_0(t) = t and p_(k+1) = p_k'(t) (1 - t^2);
- exp(sin x): d^k / dx^k = exp(s) q_k(s, c) at s = sin x, c = cos x, with q_0 = 1 and
  q_(k+1) = c q_k + c dq_k/ds - s dq_k/dc (the chain rule, s' = c and c' = -s);
- sin: sin(x + k pi / 2);
- 1/(1 + x^2) = Im 1/(x - i), so its k-th derivative is Im (-1)^k k! (x - i)^-(k+1).
The polynomials are built by sympy with integer coefficients and evaluated by mpmath at 40
digits; the first test checks all four against sympy's own differentiation of the expression
(to order 6: beyond that sympy's expressions of tanh's derivatives grow for minutes).
"""

import functools

import mpmath
import numpy as np
import pytest
import sympy as sp

import fgrad
import fgrad.numpy as fnp

ORDERS = range(1, 21)
POINTS = (-1.3, 0.3, 2.1)  # no derivative of order <= 20 is within 1% of zero at these
DIGITS = 40
RTOL = 1e-8

_t, _s, _c, _x = sp.symbols("t s c x")

FUNCTIONS = {  # name -> (fgrad's function, sympy's expression)
    "tanh": (fnp.tanh, sp.tanh(_x)),
    "sin": (fnp.sin, sp.sin(_x)),
    "exp(sin x)": (lambda x: fnp.exp(fnp.sin(x)), sp.exp(sp.sin(_x))),
    "1/(1+x^2)": (lambda x: 1.0 / (1.0 + x**2), 1 / (1 + _x**2)),
}


@functools.cache
def _polynomials(name):
    """The closed forms' polynomials of orders 1..20, exact (sympy `Poly`, integer
    coefficients): p_k(t) for tanh, q_k(s, c) for exp(sin x)."""
    if name == "tanh":
        p, slope = sp.Poly(_t, _t), sp.Poly(1 - _t**2, _t)

        def step(p):
            return p.diff(_t) * slope
    else:
        p, s, c = sp.Poly(1, _s, _c), sp.Poly(_s, _s, _c), sp.Poly(_c, _s, _c)

        def step(q):
            return c * q + c * q.diff(_s) - s * q.diff(_c)

    out = []
    for _ in ORDERS:
        p = step(p)
        out.append(p)
    return out


def _value(poly, *at):
    """poly at the mpmath numbers `at`, in the current precision."""
    return mpmath.fsum(
        int(k) * mpmath.fprod(a**n for a, n in zip(at, powers)) for powers, k in poly.terms()
    )


def closed_forms(name, x):
    """[d^k f / dx^k at x for k = 1..20], mpmath numbers with DIGITS digits."""
    with mpmath.workdps(DIGITS):
        x = mpmath.mpf(x)
        if name == "tanh":
            t = mpmath.tanh(x)
            return [_value(p, t) for p in _polynomials("tanh")]
        if name == "exp(sin x)":
            s, c = mpmath.sin(x), mpmath.cos(x)
            return [mpmath.exp(s) * _value(q, s, c) for q in _polynomials("exp(sin x)")]
        if name == "sin":
            return [mpmath.sin(x + k * mpmath.pi / 2) for k in ORDERS]
        return [
            (-1) ** k * mpmath.factorial(k) * mpmath.im(mpmath.mpc(x, -1) ** -(k + 1))
            for k in ORDERS
        ]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_closed_forms_are_sympys_derivatives(name):
    expression = FUNCTIONS[name][1]
    x = 0.7
    forms = closed_forms(name, x)
    at = sp.Float(x, DIGITS)  # the float's own binary value, as mpmath takes it
    d = expression
    for k in range(1, 7):
        d = sp.diff(d, _x)
        with mpmath.workdps(DIGITS):
            exact = mpmath.mpf(d.subs(_x, at).evalf(DIGITS))
            assert abs(forms[k - 1] - exact) <= mpmath.mpf(10) ** (5 - DIGITS) * abs(exact), k


def relative_error(got, want):
    with mpmath.workdps(DIGITS):
        return float(abs((mpmath.mpf(float(got)) - want) / want))


@pytest.mark.parametrize("x", POINTS)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_order_to_20_matches_the_closed_form(name, x):
    fun = FUNCTIONS[name][0]
    forms = closed_forms(name, x)
    wrong = []
    for k, want in zip(ORDERS, forms):
        got = fgrad.derivative(fun, k)(x)
        assert np.shape(got) == () and np.result_type(got) == np.float64
        error = relative_error(got, want)
        if not error <= RTOL:
            wrong.append(f"order {k}: {float(got)!r} against {mpmath.nstr(want, 17)}, {error:.1e}")
    assert not wrong, f"{name} at {x}:\n" + "\n".join(wrong)


def test_the_check_sees_a_derivative_one_part_in_1e7_off():
    """The comparison above is not vacuous: tanh's 20th derivative scaled by 1 + 1e-7 fails."""
    want = closed_forms("tanh", 0.3)[-1]
    got = fgrad.derivative(fnp.tanh, 20)(0.3)
    assert relative_error(got, want) < 1e-13
    assert relative_error(got * (1 + 1e-7), want) > RTOL
