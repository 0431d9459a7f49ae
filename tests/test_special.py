"""fgrad.scipy.special beyond the gradient table (tests/rows_special.py): values equal SciPy's,
closed-form derivatives, the incomplete gamma functions' derivatives in a against mpmath,
Bessel functions at 0 and at half-integer orders, stability at +-1000 in value and first and
second derivatives (with warnings as errors), -inf entries and signed weights in logsumexp,
conventions at x == 0 and at the edges of the domains, errors, and that `import fgrad` never
needs SciPy."""

import functools
import math
import subprocess
import sys
import warnings

import mpmath
import numpy as np
import pytest
import scipy.special as sc
from gradtable import derivatives as _derivatives

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.special as sp
from fgrad import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap
from fgrad.test_util import check_grads


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --- values are SciPy's ---------------------------------------------------------------------------

X = np.array([0.3, 1.7, 2.5])
UNARY = [
    "expit",
    "log_expit",
    "erf",
    "erfc",
    "erfcx",
    "gammaln",
    "digamma",
    "psi",
    "gamma",
    "gammasgn",
    "rgamma",
    "entr",
    "ndtr",
    "log_ndtr",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "exp1",
    "expi",
    "j0",
    "j1",
    "y0",
    "y1",
]
BINARY = [
    "xlogy",
    "xlog1py",
    "rel_entr",
    "kl_div",
    "beta",
    "betaln",
    "gammainc",
    "gammaincc",
    "jv",
    "yv",
    "iv",
    "ive",
    "kv",
    "kve",
]


@pytest.mark.parametrize("name", UNARY)
def test_unary_values_are_scipys(name):
    np.testing.assert_array_equal(getattr(sp, name)(X), getattr(sc, name)(X))


@pytest.mark.parametrize("name", BINARY)
def test_binary_values_are_scipys(name):
    y = np.array([[0.5], [2.0]])
    np.testing.assert_array_equal(getattr(sp, name)(X, y), getattr(sc, name)(X, y))


def test_values_with_parameters_are_scipys():
    p = np.array([0.1, 0.5, 0.8])
    np.testing.assert_array_equal(sp.logit(p), sc.logit(p))
    np.testing.assert_array_equal(sp.ndtri(p), sc.ndtri(p))
    np.testing.assert_array_equal(sp.erfinv(p), sc.erfinv(p))
    np.testing.assert_array_equal(sp.erfcinv(p), sc.erfcinv(p))
    np.testing.assert_array_equal(sp.polygamma(2, X), sc.polygamma(2, X))
    np.testing.assert_array_equal(sp.expn(3, X), sc.expn(3, X))
    np.testing.assert_array_equal(sp.jn(3, X), sc.jn(3, X))
    np.testing.assert_array_equal(sp.yn(-2, X), sc.yn(-2, X))
    np.testing.assert_array_equal(sp.gammaincinv(X, p), sc.gammaincinv(X, p))
    np.testing.assert_array_equal(sp.gammainccinv(X, p), sc.gammainccinv(X, p))
    np.testing.assert_allclose(sp.multigammaln(X + 2.0, 3), sc.multigammaln(X + 2.0, 3), rtol=1e-14)
    a = np.arange(6.0).reshape(3, 2)
    for axis in (None, 0, -1, (0, 1)):
        np.testing.assert_array_equal(sp.softmax(a, axis=axis), sc.softmax(a, axis=axis))
        np.testing.assert_array_equal(sp.log_softmax(a, axis=axis), sc.log_softmax(a, axis=axis))
        np.testing.assert_array_equal(
            sp.logsumexp(a, axis=axis, keepdims=True), sc.logsumexp(a, axis=axis, keepdims=True)
        )
    assert np.shape(sp.logsumexp(np.float64(0.5))) == ()  # SciPy's axis=() would give (1,)


ORDERS = [1, 1.5, True, np.bool_(True), np.int8(1), np.uint8(1), np.int16(2), np.int64(1)]
ORDERS += [np.float16(0.5), np.float32(1), np.float64(1), np.array([1, 2], np.int8)]


@pytest.mark.parametrize("name", ["jv", "jn", "yv", "iv", "ive", "kv", "kve"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32])
def test_bessel_of_integer_x_takes_scipys_loop_dtype(name, dtype):
    # SciPy runs `ff->f` where both inputs cast safely to float32 (jv(1, int8) is float32)
    for v in ORDERS:
        for x in (np.array([2, 3], dtype), dtype(2), np.array(3, dtype), True):
            want, got = getattr(sc, name)(v, x), getattr(sp, name)(v, x)
            assert type(got) is type(want) and got.dtype == want.dtype, (v, x)
            np.testing.assert_array_equal(got, want)
            jitted = fgrad.jit(getattr(sp, name))
            for call in (1, 2):  # the record, then its replay
                assert jitted(v, x).dtype == want.dtype, (v, x, call)
                np.testing.assert_array_equal(jitted(v, x), want)
    rows = np.array([[2, 3], [1, 4]], dtype)
    batched = vmap(lambda x: getattr(sp, name)(1, x))(rows)
    assert batched.dtype == getattr(sc, name)(1, rows).dtype
    np.testing.assert_array_equal(batched, getattr(sc, name)(1, rows))


# --- closed forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_closed_form_derivatives(mode):
    d = lambda f, x, n=1: _derivatives(f, x, n, mode)
    assert d(sp.erf, 0.0) == pytest.approx([2 / math.sqrt(math.pi)], rel=1e-15)
    assert d(sp.erfinv, 0.0, 2) == pytest.approx([math.sqrt(math.pi) / 2, 0.0], abs=1e-15)
    assert d(sp.expit, 0.0, 2) == pytest.approx([0.25, 0.0], abs=1e-15)
    assert d(sp.gammaln, 1.0, 3) == pytest.approx(
        [-np.euler_gamma, math.pi**2 / 6, -2 * float(mpmath.zeta(3))], rel=1e-12
    )
    assert d(sp.gamma, 1.0) == pytest.approx([-np.euler_gamma], rel=1e-12)
    assert d(lambda x: sp.beta(x, 1.0), 2.0) == pytest.approx([-0.25], rel=1e-12)  # 1/x
    assert d(lambda x: sp.polygamma(2, x), 1.0) == pytest.approx([math.pi**4 / 15], rel=1e-12)
    assert d(sp.ndtr, 0.0, 2) == pytest.approx([1 / math.sqrt(2 * math.pi), 0.0], abs=1e-15)
    assert d(sp.ndtri, 0.5) == pytest.approx([math.sqrt(2 * math.pi)], rel=1e-15)
    assert d(sp.log_ndtr, 0.0) == pytest.approx([math.sqrt(2 / math.pi)], rel=1e-15)
    assert d(sp.exp1, 1.0, 2) == pytest.approx([-math.exp(-1), 2 * math.exp(-1)], rel=1e-12)
    assert d(lambda x: sp.expn(0, x), 1.0) == pytest.approx([-2 * math.exp(-1)], rel=1e-12)
    assert d(lambda x: sp.multigammaln(x, 2), 2.0) == pytest.approx(
        [float(mpmath.digamma(2.0) + mpmath.digamma(1.5))], rel=1e-12
    )


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_bessel_functions_are_exact_at_zero_to_every_order(mode):
    # I0 = 1 + x^2/4 + x^4/64, I1 = x/2 + x^3/16 + x^5/384: derivatives at 0 from the series
    assert _derivatives(sp.i0, 0.0, 4, mode) == pytest.approx([0.0, 0.5, 0.0, 0.375], abs=1e-15)
    assert _derivatives(sp.i1, 0.0, 5, mode) == pytest.approx(
        [0.5, 0.0, 0.375, 0.0, 120 / 384], abs=1e-15
    )
    assert _derivatives(sp.i1e, 0.0, 1, mode) == [0.5]
    assert _derivatives(sp.i0e, 0.0, 1, mode) == [0.0]  # the mean of -1 and +1, as JAX
    for x in (1e-20, 1e-3, 3.0):  # the series near 0 and the quotient beyond it agree
        i = [float(mpmath.besseli(n, x)) for n in range(4)]
        # I1' = (I0 + I2) / 2 and I1'' = (3 I1 + I3) / 4, from I_n' = (I_{n-1} + I_{n+1}) / 2
        assert _derivatives(sp.i1, x, 2, mode) == pytest.approx(
            [(i[0] + i[2]) / 2, (3 * i[1] + i[3]) / 4], rel=1e-13, abs=1e-30
        )


def test_large_bessel_arguments_stay_finite_with_scaling(no_warnings):
    g = grad(grad(sp.i1e))(800.0)
    expected = float(mpmath.diff(lambda t: mpmath.exp(-t) * mpmath.besseli(1, t), 800, 2))
    assert g == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_bessel_closed_forms(mode):
    d = lambda f, x, n=1: _derivatives(f, x, n, mode)
    x = 1.7
    s = math.sqrt(2 / (math.pi * x))
    # half-integer orders are elementary: jv(1/2) = s sin x, yv(1/2) = -s cos x,
    # iv(1/2) = s sinh x, kv(1/2) = pi/2 s exp(-x); their derivatives by hand
    assert d(lambda t: sp.jv(0.5, t), x) == pytest.approx(
        [s * (math.cos(x) - math.sin(x) / (2 * x))], rel=1e-13
    )
    assert d(lambda t: sp.yv(0.5, t), x) == pytest.approx(
        [s * (math.sin(x) + math.cos(x) / (2 * x))], rel=1e-13
    )
    assert d(lambda t: sp.iv(0.5, t), x) == pytest.approx(
        [s * (math.cosh(x) - math.sinh(x) / (2 * x))], rel=1e-13
    )
    assert d(lambda t: sp.kv(0.5, t), x) == pytest.approx(
        [-math.pi / 2 * s * math.exp(-x) * (1 + 1 / (2 * x))], rel=1e-13
    )
    assert d(lambda t: sp.kve(0.5, t), x) == pytest.approx([-math.pi / 2 * s / (2 * x)], rel=1e-13)
    assert d(sp.j0, x, 2) == pytest.approx([-sc.j1(x), -(sc.j0(x) - sc.jv(2, x)) / 2], rel=1e-13)
    assert d(sp.y0, x) == pytest.approx([-sc.y1(x)], rel=1e-13)
    # J1 = x/2 - x**3/16 + ...: exact at 0, where the textbook J0 - J1/x is 0/0
    assert d(sp.j1, 0.0, 3) == pytest.approx([0.5, 0.0, -0.375], abs=1e-15)
    assert d(lambda t: sp.jn(2, t), 0.0, 2) == pytest.approx([0.0, 0.25], abs=1e-15)
    assert d(lambda t: sp.iv(2, t), 0.0, 2) == pytest.approx([0.0, 0.25], abs=1e-15)
    assert d(lambda t: sp.ive(1, t), 0.0) == [0.5]
    assert d(lambda t: sp.ive(0, t), 0.0) == [0.0]  # the kink of exp(-|x|): the mean, as JAX
    # Y_{-n} = (-1)^n Y_n, so are the derivatives
    assert d(lambda t: sp.yn(-3, t), x, 2) == pytest.approx(
        [-v for v in d(lambda t: sp.yn(3, t), x, 2)], rel=1e-14
    )


@pytest.mark.parametrize("x", [1e-200, -1e-300, 1e-310, 1e-6, 2.5])
@pytest.mark.parametrize("name", ["i0", "i1", "i0e", "i1e"])
def test_taylor_mode_of_i0_i1_near_zero_matches_mpmath(name, x):
    # their Taylor rule took SciPy's iv, 0 below |x| ~ 1e-154 and nan at a subnormal x:
    # derivative(i0, 1)(1e-200) was 0.0 (true 5e-201), derivative(i1, 1)(1e-310) nan (0.5)
    n, scaled = int(name[1]), name.endswith("e")
    sign = 1 if x > 0 else -1

    def bessel_i(k, t):  # I_n^(k) = 2^-k sum_j C(k, j) I_(n-k+2j), I_(-m) = I_m
        return (
            sum(math.comb(k, j) * mpmath.besseli(abs(n - k + 2 * j), t) for j in range(k + 1))
            / 2**k
        )

    def exact(k, t):  # i0e, i1e: I_n(t) exp(-sign t), by Leibniz's rule
        if not scaled:
            return bessel_i(k, t)
        return sum(math.comb(k, i) * bessel_i(i, t) * (-sign) ** (k - i) for i in range(k + 1)) * (
            mpmath.exp(-sign * t)
        )

    with mpmath.workdps(40):
        want = [float(exact(k, mpmath.mpf(x))) for k in (1, 2, 3)]
    f = getattr(sp, name)
    _, terms = fgrad.jet(f, (x,), ([1.0, 0.0, 0.0],))
    subnormal_ulps = 4 * 5e-324  # (a subnormal result has fewer digits)
    for k in (1, 2, 3):
        got = fgrad.derivative(f, k)(x)
        assert got == pytest.approx(want[k - 1], rel=1e-14, abs=subnormal_ulps), k
        assert terms[k - 1] == pytest.approx(want[k - 1], rel=1e-14, abs=subnormal_ulps), k


BESSEL_COMPLEX = ["iv", "ive", "jn", "jv", "kv", "kve", "yv"]


@pytest.mark.parametrize("name", BESSEL_COMPLEX)
def test_complex_bessel_values_are_scipys_and_derivatives_mpmaths(name, no_warnings):
    z = np.array([0.8 + 0.6j, 1.9 - 1.1j])
    v = 2 if name == "jn" else 1.5

    def f(z):
        return getattr(sp, name)(v, z)

    np.testing.assert_array_equal(f(z), getattr(sc, name)(v, z))
    mp = {
        "iv": mpmath.besseli,
        "jn": mpmath.besselj,
        "jv": mpmath.besselj,
        "kv": mpmath.besselk,
        "yv": mpmath.bessely,
        "ive": mpmath.besseli,
        "kve": mpmath.besselk,
    }[name]
    scale = {"ive": lambda w: mpmath.exp(-abs(w.real)), "kve": mpmath.exp}.get(name, lambda w: 1)
    for zi in z:
        w = mpmath.mpc(zi)
        dz = mpmath.diff(lambda u: mp(v, u), w)  # the holomorphic part: f'(z) along 1
        expected = complex(
            dz * scale(w)
            + (mp(v, w) * mpmath.exp(w) if name == "kve" else 0)
            - (mpmath.sign(w.real) * mp(v, w) * scale(w) if name == "ive" else 0)
        )
        assert complex(jvp(f, (zi,), (1.0 + 0j,))[1]) == pytest.approx(expected, rel=1e-12)
        # along i: ive's factor exp(-|Re z|) does not change, so i f'(z) without its term
        along_i = complex(
            1j * dz * scale(w) + (1j * mp(v, w) * mpmath.exp(w) if name == "kve" else 0)
        )
        assert complex(jvp(f, (zi,), (1j,))[1]) == pytest.approx(along_i, rel=1e-12)


@pytest.mark.parametrize("name", [*BESSEL_COMPLEX, "digamma", "gamma"])
def test_complex_arguments_keep_complex64(name):
    z = np.array([0.8 + 0.6j, 1.9 - 1.1j], dtype=np.complex64)

    def f(z):  # a Bessel function with integer orders; digamma's and gamma's derivative
        if name in BESSEL_COMPLEX:
            return getattr(sp, name)(np.array([[0], [2]]), z)
        return grad(getattr(sp, name), holomorphic=True)(z[0]) * z

    value, bprop = vjp(f, z)
    assert value.dtype == np.complex64  # SciPy's is complex128 (float32 in, float32 out)
    assert bprop(np.ones_like(value))[0].dtype == np.complex64
    assert jvp(f, (z,), (z,))[1].dtype == np.complex64


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_digamma_of_complex_input_has_mpmaths_derivatives(mode):
    """SciPy's polygamma is real only: the derivatives of digamma at complex z are fgrad's
    own, to every order, within 1e-12 of mpmath's polygamma(n, z)."""
    points = [0.3 + 0.2j, 2.5 - 1.3j, -2.5 + 0.4j, 7.0 + 25.0j, 0.01 - 3.0j, 150.0 + 1.0j]
    for z in points:
        f = sp.digamma
        for n in range(1, 5):
            if mode == "rev":
                f = grad(f, holomorphic=True)
            else:
                f = (lambda g: lambda w: jvp(g, (w,), (1.0 + 0j,))[1])(f)
            expected = complex(mpmath.polygamma(n, mpmath.mpc(z)))
            assert abs(complex(f(np.complex128(z))) - expected) <= 1e-12 * abs(expected), (n, z)


def test_polygamma_refuses_complex_input_as_scipy():
    with pytest.raises(TypeError):
        sc.polygamma(1, 1j)
    with pytest.raises(TypeError, match=r"polygamma: x has shape \(\) and dtype complex128"):
        sp.polygamma(1, 1j)


@pytest.mark.parametrize("f", [sp.jv, sp.iv, sp.ive, sp.kv, sp.kve, sp.yv, sp.jn, sp.yn])
def test_bessel_orders_are_not_differentiated(f):
    name = f.__name__
    with pytest.raises(TypeError, match=f"{name}: the order . is a traced value"):
        grad(lambda v: f(v, 2.0))(1.0)
    with pytest.raises(TypeError, match=f"{name}: the order . is a traced value"):
        jacfwd(lambda v: f(v, 2.0))(1.0)


def _mp_q(a, x):
    """-P or Q by mpmath, whichever is not near 1 (their a-derivatives then keep their digits)."""
    if x < a:
        return -mpmath.gammainc(a, 0, x, regularized=True)
    return mpmath.gammainc(a, x, mpmath.inf, regularized=True)


GAMMAINC_POINTS = [
    (0.05, 0.01),
    (0.6, 0.5),
    (0.6, 2.0),
    (3.0, 0.5),
    (3.0, 3.9),
    (3.0, 4.1),
    (3.0, 45.0),
    (40.0, 2.0),
    (40.0, 39.5),
    (40.0, 41.5),
    (40.0, 100.0),
    (500.0, 480.0),
    (500.0, 550.0),
]


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_gammainc_derivatives_in_a_match_mpmath_to_order_2(mode):
    """d/da has no closed form: the series (x < a + 1) and the continued fraction
    (x >= a + 1), and their derivatives in a and x, against mpmath to 1e-10 (relative), where
    Q = 1 - P is as small as 1e-15."""
    jac = jacrev if mode == "rev" else jacfwd
    for a, x in GAMMAINC_POINTS:
        with mpmath.workdps(50):
            exact = [float(mpmath.diff(_mp_q, (a, x), order)) for order in ((1, 0), (2, 0), (1, 1))]
        got = [
            jac(sp.gammaincc)(a, x),
            jac(jac(sp.gammaincc))(a, x),
            jac(jac(sp.gammaincc), argnums=1)(a, x),
        ]
        assert got == pytest.approx(exact, rel=1e-10, abs=0), (a, x)
        got_p = [jac(sp.gammainc)(a, x), jac(jac(sp.gammainc))(a, x)]
        assert got_p == pytest.approx([-exact[0], -exact[1]], rel=1e-10, abs=0), (a, x)


@pytest.mark.parametrize("a", [1e2, 1e3, 1e6, 1e10, 1e12, 1e15])
def test_gammainc_derivative_in_x_at_large_a_matches_mpmath(a, no_warnings):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) near the mean: its exponent was a difference of
    terms of size a log x (4e-3 relative at a = x = 1e12; a*eps in general)."""
    mpmath.mp.dps = 60
    for k in (-3.0, -0.5, 0.0, 1.0, 3.0):
        x = a + k * math.sqrt(a)
        xm, am = mpmath.mpf(x), mpmath.mpf(a)
        want = float(mpmath.exp((am - 1) * mpmath.log(xm) - xm - mpmath.loggamma(am)))
        assert grad(sp.gammainc, argnums=1)(a, x) == pytest.approx(want, rel=2e-14)
        assert jvp(lambda x: sp.gammaincc(a, x), (x,), (1.0,))[1] == pytest.approx(-want, rel=2e-14)


@pytest.mark.parametrize("a, b", [(1e4, 3e4), (1e6, 2e5), (1e10, 1e10), (1e12, 3e12)])
def test_betainc_derivative_in_x_at_large_a_and_b_matches_mpmath(a, b, no_warnings):
    """d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b) near the mean: its exponent was a
    difference of terms of size (a+b) log x (1.3e-2 relative at a = b = 1e12)."""
    mpmath.mp.dps = 60
    n, p = a + b, a / (a + b)
    sd = math.sqrt(p * (1 - p) / n)
    for k in (-3.0, -0.5, 0.0, 1.0, 3.0):
        x = p + k * sd
        xm, am, bm = mpmath.mpf(x), mpmath.mpf(a), mpmath.mpf(b)
        log_density = (am - 1) * mpmath.log(xm) + (bm - 1) * mpmath.log1p(-xm)
        want = float(mpmath.exp(log_density - mpmath.log(mpmath.beta(am, bm))))
        # the density's condition number in x, |x d/dx log f| (p = a / n rounds: x - p moves
        # by eps p), beside the method's own 2e-14
        rel = 2e-14 + 4 * 2.0**-52 * abs((a - 1) - (b - 1) * x / (1 - x))
        assert grad(sp.betainc, argnums=2)(a, b, x) == pytest.approx(want, rel=rel), (k,)
        got = jvp(lambda x: sp.betainc(a, b, x), (x,), (1.0,))[1]
        assert got == pytest.approx(want, rel=rel), (k,)


def test_gammainc_closed_forms_and_edges():
    # P(1, x) = 1 - exp(-x); P(a, x)_x = x**(a-1) exp(-x) / Gamma(a)
    assert grad(sp.gammainc, argnums=1)(1.0, 0.7) == pytest.approx(math.exp(-0.7), rel=1e-15)
    assert grad(grad(sp.gammainc, argnums=1), argnums=1)(1.0, 0.7) == pytest.approx(
        -math.exp(-0.7), rel=1e-15
    )
    assert grad(sp.gammaincc, argnums=1)(2.5, 1.5) == pytest.approx(
        -(1.5**1.5) * math.exp(-1.5) / math.gamma(2.5), rel=1e-14
    )
    # at x == 0: P_x is 1 for a == 1 (0 log 0 = 0), 0 for a > 1; P_a is 0 there and at inf
    assert grad(sp.gammainc, argnums=(0, 1))(1.0, 0.0) == (0.0, 1.0)
    assert grad(sp.gammainc, argnums=(0, 1))(2.0, 0.0) == (0.0, 0.0)
    assert grad(sp.gammaincc, argnums=0)(2.0, np.inf) == 0.0
    # broadcasting: cotangents come back in each argument's shape
    a, x = np.array([[0.5], [2.0], [30.0]]), np.array([0.3, 31.0])
    ga, gx = grad(lambda a, x: fnp.sum(sp.gammainc(a, x)), argnums=(0, 1))(a, x)
    assert ga.shape == (3, 1) and gx.shape == (2,)


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_zeta_values_are_scipys_and_its_derivative_in_q(jac):
    """zeta was missing; d/dq zeta(x, q) = -x zeta(x + 1, q), against mpmath to order 2, and
    SciPy's own zeta on a traced q is fgrad's."""
    x, q = np.array([1.5, 2.5, 6.0]), np.array([0.3, 1.0, 7.5])
    np.testing.assert_array_equal(sp.zeta(x, q), sc.zeta(x, q))
    np.testing.assert_array_equal(sp.zeta(np.array([0.5, -1.5, 2.0])), sc.zeta([0.5, -1.5, 2.0]))
    assert sp.zeta(np.float32(2.5), np.float32(1.5)).dtype == np.float32
    for xi, qi in zip(x, q):
        with mpmath.workdps(30):
            want = [float(mpmath.diff(lambda t: mpmath.zeta(xi, t), qi, k)) for k in (1, 2)]
        got = [jac(lambda t: sp.zeta(xi, t))(qi), jac(jac(lambda t: sp.zeta(xi, t)))(qi)]
        assert got == pytest.approx(want, rel=1e-13, abs=0), (xi, qi)
        assert jac(lambda t: sc.zeta(xi, t))(qi) == got[0]
    np.testing.assert_array_equal(
        vmap(grad(lambda t: sp.zeta(2.5, t)))(q), [grad(lambda t: sp.zeta(2.5, t))(v) for v in q]
    )


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_zeta_derivative_in_x_is_refused_by_name(jac):
    for f in (sp.zeta, lambda x: sp.zeta(x, 1.5), sc.zeta, lambda x: sc.zeta(x, 1.5)):
        with pytest.raises(TypeError, match=r"scipy.special.zeta: the derivative of .* in x"):
            jac(f)(2.5)


def test_an_unmirrored_scipy_ufunc_names_the_function_as_called():
    """SciPy's zeta calls the private ufunc _riemann_zeta (or _zeta): the message read
    "ufunc's ufunc._zeta ... fgrad.ufunc has no differentiable _zeta"; it names
    scipy.special.zeta (and any other SciPy function as called) and says what to do."""
    from fgrad.numpy._box import _no_mirror_message

    for ufunc in (sc._ufuncs._riemann_zeta, sc._ufuncs._zeta):
        message = _no_mirror_message(fnp.asarray(0.5), ufunc, "__call__")
        assert message.startswith("SciPy's scipy.special.zeta was applied to a traced value")
    with pytest.raises(TypeError) as info:
        grad(lambda x: sc.ndtri_exp(x))(-0.5)
    message = str(info.value)
    assert message.startswith("SciPy's scipy.special.ndtri_exp was applied to a traced value")
    assert "fgrad has no derivative for it" in message
    assert "fgrad.scipy.special.__all__" in message and "fgrad.stop_gradient" in message


def _mp_q_through_zero(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a), entire in a (0 at a = 0), by mpmath."""
    return mpmath.gammainc(a, x, mpmath.inf) * mpmath.rgamma(a)


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_gammainc_derivatives_in_a_at_a_zero(jac):
    """SciPy's P(0, x) = 1: P_a = -E1(x) there, and Q_a = E1(x). The continued fraction's
    branch (x >= 1) formed Q * digamma(0) = 0 * inf: nan at x = 1 and 2 (-0.2193839343955205,
    -0.0489005107080611), right below x = 1 (the series). Now every order is right through
    a = 0, and the fraction runs deep enough near x = 1 (40 terms left 2e-10 there)."""
    for x in [0.5, 1.0, 2.0, 10.0, 50.0]:
        assert jac(sp.gammainc)(0.0, x) == pytest.approx(-sc.exp1(x), rel=4e-15, abs=0)
        assert jac(sp.gammaincc)(0.0, x) == pytest.approx(sc.exp1(x), rel=4e-15, abs=0)
        with mpmath.workdps(50):
            exact = [
                float(mpmath.diff(_mp_q_through_zero, (0, x), order))
                for order in ((2, 0), (1, 1), (3, 0))
            ]
        got = [
            jac(jac(sp.gammaincc))(0.0, x),
            jac(jac(sp.gammaincc), argnums=1)(0.0, x),
            jac(jac(jac(sp.gammaincc)))(0.0, x),
        ]
        assert got == pytest.approx(exact, rel=1e-13, abs=0), x
        # d/da of d/dx, the other way round: exp(-x) / x (gammaln's pole made it nan)
        mixed = jac(jac(sp.gammaincc, argnums=1))(0.0, x)
        assert mixed == pytest.approx(exact[1], rel=1e-13, abs=0), x
    # a subnormal a, and a just above the old boundary, whose Q times digamma(a) overflowed
    for a, x in [(1e-310, 2.0), (0.5, 1.5), (1.0, 2.0)]:
        with mpmath.workdps(50):
            want = float(mpmath.diff(_mp_q_through_zero, (a, x), (1, 0)))
        assert jac(sp.gammaincc)(a, x) == pytest.approx(want, rel=1e-14, abs=0), (a, x)


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_betainc_derivatives_at_a_or_b_zero(jac):
    """SciPy's I_x(0, b) = 1 and I_x(a, 0) = 0 (0 < x < 1); d/da at a = 0 is
    -B(1 - x; b, 0), finite: it was nan (B's pole: -log p - betaln(p, q) = inf - inf, and
    0 * digamma(0)). Against mpmath (I through a = 0 as 1 - I_{1-x}(b, a)), to order 2."""

    def minus_tail(a, b, x):
        return (
            -mpmath.betainc(b, a, 0, 1 - x)
            * mpmath.gamma(a + b)
            * mpmath.rgamma(a)
            * (mpmath.rgamma(b))
        )

    def tail(a, b, x):
        return (
            mpmath.betainc(a, b, 0, x) * mpmath.gamma(a + b) * mpmath.rgamma(a) * (mpmath.rgamma(b))
        )

    for b, x in [(2.0, 0.5), (2.0, 0.1), (0.5, 0.3), (3.0, 0.9), (0.5, 0.01)]:
        with mpmath.workdps(50):
            want = [
                float(mpmath.diff(minus_tail, (0, b, x), order))
                for order in ((1, 0, 0), (2, 0, 0), (1, 1, 0), (1, 0, 1))
            ]
            want_b = [
                float(mpmath.diff(tail, (b, 0, x), order)) for order in ((0, 1, 0), (1, 1, 0))
            ]
        got = [
            jac(sp.betainc)(0.0, b, x),
            jac(jac(sp.betainc))(0.0, b, x),
            jac(jac(sp.betainc), argnums=1)(0.0, b, x),
            jac(jac(sp.betainc), argnums=2)(0.0, b, x),
        ]
        assert got == pytest.approx(want, rel=1e-13, abs=0), (b, x)
        got_b = [jac(sp.betainc, argnums=1)(b, 0.0, x), jac(jac(sp.betainc, argnums=1))(b, 0.0, x)]
        assert got_b == pytest.approx(want_b, rel=1e-13, abs=0), (b, x)


def test_gammainc_derivative_in_a_under_vmap_equals_its_rows():
    """Each element takes its own number of terms (series and continued fraction alike), so a
    row's d/da never depends on the others: the series' and the fraction's lengths came from
    the whole batch, and vmap differed from the loop by 4.6e-15 at (0.25, 1.55)."""
    g, g2 = grad(sp.gammainc), grad(grad(sp.gammainc))
    for a, x in [
        ([0.25, 30.0], [1.55, 20.0]),
        ([0.5, 100.0], [0.3, 90.0]),
        ([2.0, 500.0], [0.5, 480.0]),
        ([0.0, 3.0, 1e-5, 40.0, 2.0], [2.0, 50.0, 1.7, 41.0, 1.2]),
    ]:
        a, x = np.array(a), np.array(x)
        for f in (g, g2):
            rows = [f(ai, xi) for ai, xi in zip(a, x)]
            np.testing.assert_array_equal(vmap(f)(a, x), rows)
        np.testing.assert_array_equal(
            grad(lambda a: fnp.sum(sp.gammainc(a, x)))(a), [g(ai, xi) for ai, xi in zip(a, x)]
        )


def _mp_beta_tail(a, b, x):
    """I_x(a, b) by its hypergeometric series (its own tail, never 1 minus something)."""
    return (
        x**a
        * (1 - x) ** b
        / (a * mpmath.beta(a, b))
        * mpmath.hyp2f1(a + b, 1, a + 1, x, maxterms=10**6)
    )


def _mp_betainc(a, b, x):
    """I or I - 1 near (a, b, x), whichever is not near 1, by mpmath (the derivatives keep
    their digits); the choice is made once, at the point."""
    if mpmath.betainc(a, b, 0, x, regularized=True) <= 0.5:
        return _mp_beta_tail
    return lambda a, b, x: -_mp_beta_tail(b, a, 1 - x)


BETAINC_POINTS = [
    (0.1, 0.3, 1e-5),
    (0.1, 60.0, 0.01),
    (0.7, 4.5, 0.3),
    (2.0, 1.0, 0.5),
    (2.0, 60.0, 0.99),
    (15.0, 0.3, 0.7),
    (80.0, 4.5, 0.01),
    (80.0, 60.0, 0.6),
    (1000.0, 1000.0, 0.5),
    (500.0, 20.0, 0.96),
]


def test_betaln_and_beta_derivatives_where_one_argument_dwarfs_the_other(no_warnings):
    # digamma(a) - digamma(a + b) cancelled: d/da betaln(1e14, 1) was -7.1e-15 (-1e-14)
    def exact(a, b, n=0):
        with mpmath.workdps(60):
            a, b = mpmath.mpf(a), mpmath.mpf(b)
            return float(mpmath.polygamma(n, a) - mpmath.polygamma(n, a + b))

    for a, b in [(1e10, 1.0), (1e14, 1.0), (1e14, 1e-3), (1e200, 2.0), (12.0, 3.0), (40.0, -25.5)]:
        for jac in (jacrev, jacfwd):
            assert float(jac(sp.betaln)(a, b)) == pytest.approx(exact(a, b), rel=1e-13)
            assert float(jac(sp.betaln, argnums=1)(b, a)) == pytest.approx(exact(a, b), rel=1e-13)
            if a < 1e100:
                assert float(jac(jac(sp.betaln))(a, b)) == pytest.approx(exact(a, b, 1), rel=1e-11)
    assert float(grad(sp.beta)(1e3, 0.5)) == pytest.approx(
        sc.beta(1e3, 0.5) * exact(1e3, 0.5), rel=1e-13
    )
    d = grad(sp.betaln)(np.float32(1e6), np.float32(1.0))
    assert d.dtype == np.float32 and float(d) == pytest.approx(-1e-6, rel=1e-6)


def test_erfcx_derivative_at_large_x_keeps_its_digits(no_warnings):
    # 2 x erfcx(x) - 2/sqrt(pi) cancelled: grad was -5.77e-15 at x = 1e7 (-5.64e-15), 0 at
    # 1e9, and in float32 -7.2e-7 at 1e3 (-5.64e-7)
    import fgrad

    def exact(x):
        with mpmath.workdps(60):
            x = mpmath.mpf(x)
            return float(2 * x * mpmath.exp(x * x) * mpmath.erfc(x) - 2 / mpmath.sqrt(mpmath.pi))

    for x in [3.0, 3.6, 10.0, 1e5, 1e7, 1e9, 1e150]:
        for d in (grad(sp.erfcx)(x), jacfwd(sp.erfcx)(x), fgrad.derivative(sp.erfcx, 1)(x)):
            assert float(d) == pytest.approx(exact(x), rel=1e-13)
    for x in [100.0, 1000.0]:
        d = grad(sp.erfcx)(np.float32(x))
        assert d.dtype == np.float32 and float(d) == pytest.approx(exact(x), rel=1e-6)
    assert float(grad(sp.erfcx)(-3.0)) == pytest.approx(exact(-3.0), rel=1e-14)


def test_logit_second_derivative_agrees_in_every_mode_at_the_ends():
    # the slope 1/(x (1-x))'s reverse rule formed -inf * 0: grad(grad(logit)) was nan at 0
    # and 1 while jacfwd gave the limits -inf and inf; (2x - 1) / (x (1-x))^2 inside
    import fgrad

    with np.errstate(divide="ignore", invalid="ignore"):
        for x, want in [(0.0, -np.inf), (1.0, np.inf), (0.3, -0.4 / 0.21**2)]:
            for d in (
                grad(grad(sp.logit))(x),
                jacfwd(grad(sp.logit))(x),
                jacrev(jacfwd(sp.logit))(x),
                fgrad.derivative(sp.logit, 2)(x),
            ):
                assert float(d) == pytest.approx(want, rel=1e-14)


def test_scaled_bessel_derivatives_at_large_x_keep_their_digits(no_warnings):
    # i0e' = i1e - sign(x) i0e (and ive's, kve's alike) cancelled about log10(2x) digits:
    # i0e'(1e12) was -1.99529e-19 (-1.99471e-19), float32 i0e'(1e6) 2% off, float32
    # ive'(1.5, 1e4) 1.8e-3; now the large-x expansion's derivative, in every mode and order
    import fgrad

    def scaled(kind, v):
        if kind == "ive":
            return lambda t: mpmath.besseli(v, t) * mpmath.exp(-abs(t))
        return lambda t: mpmath.besselk(v, t) * mpmath.exp(t)

    cases = [(sp.i0e, "ive", 0), (sp.i1e, "ive", 1)]
    cases += [(functools.partial(sp.ive, v), "ive", v) for v in (0.5, 3, 20.0)]
    # (mpmath's besselk of an integer order takes seconds a point)
    cases += [(functools.partial(sp.kve, v), "kve", v) for v in (0.5, 2.5, 20.5)]
    for f, kind, v in cases:
        for x in [60.0, 201.0, 1e5, -70.0]:
            if x < 0 and (kind == "kve" or v != int(v)):
                continue
            with mpmath.workdps(50):
                want = [float(mpmath.diff(scaled(kind, v), mpmath.mpf(x), k)) for k in (1, 2, 3)]
            if abs(x) < max(50.0, v * v / 2):  # (the plain difference serves: 1e-11 there)
                continue
            for d in (grad(f)(x), jacfwd(f)(x), fgrad.derivative(f, 1)(x)):
                assert float(d) == pytest.approx(want[0], rel=1e-14), (kind, v, x)
            assert float(grad(grad(f))(x)) == pytest.approx(want[1], rel=1e-14)
            assert float(fgrad.derivative(f, 3)(x)) == pytest.approx(want[2], rel=1e-13)
    for f, v in [(sp.i0e, 0), (sp.i1e, 1)]:  # the probe's; -1e12 by parity
        with mpmath.workdps(30):
            want = float(mpmath.diff(scaled("ive", v), mpmath.mpf(1e12)))
        assert float(grad(f)(1e12)) == pytest.approx(want, rel=1e-14)
        assert float(grad(f)(-1e12)) == pytest.approx((-1) ** (v + 1) * want, rel=1e-14)
    with mpmath.workdps(30):
        want = float(mpmath.diff(scaled("ive", 0), mpmath.mpf(1e6)))
    d = grad(sp.i0e)(np.float32(1e6))
    assert d.dtype == np.float32 and float(d) == pytest.approx(want, rel=1e-6)
    # a batch mixing the two ways, under vmap, equals its rows
    xs = np.array([3.0, 80.0, -2e5])
    np.testing.assert_array_equal(fgrad.vmap(grad(sp.i1e))(xs), [grad(sp.i1e)(x) for x in xs])


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_betainc_derivatives_match_mpmath_to_order_2(mode):
    """d/da and d/db have no closed form: the series of whichever tail is the smaller, and its
    derivatives, against mpmath to 1e-11 (relative) where the tail is as small as 1e-120."""
    jac = jacrev if mode == "rev" else jacfwd
    for a, b, x in BETAINC_POINTS:
        with mpmath.workdps(50):
            first = [
                float(mpmath.diff(_mp_betainc(a, b, x), (a, b, x), order))
                for order in ((1, 0, 0), (0, 1, 0), (0, 0, 1))
            ]
        got = [jac(sp.betainc, argnums=i)(a, b, x) for i in range(3)]
        assert got == pytest.approx(first, rel=1e-11, abs=0), (a, b, x)
    for a, b, x in BETAINC_POINTS[:6]:
        with mpmath.workdps(50):
            second = [
                float(mpmath.diff(_mp_betainc(a, b, x), (a, b, x), order))
                for order in ((2, 0, 0), (1, 1, 0), (1, 0, 1), (0, 2, 0))
            ]
        got = [
            jac(jac(sp.betainc, argnums=i), argnums=j)(a, b, x)
            for i, j in ((0, 0), (0, 1), (0, 2), (1, 1))
        ]
        assert got == pytest.approx(second, rel=1e-9, abs=0), (a, b, x)


def test_betainc_derivatives_near_the_switch_with_a_large_are_not_truncated():
    # the series was cut at 20000 terms where it needed 10^6: d/da at (5e4, 0.5, 0.99991)
    # was -2.287e-7 (-2.659e-7), d/db 8.31e-3 (9.83e-3); now the other tail's series there
    for a, b, x in [(1e5, 3.0, 0.99995), (5e4, 0.5, 0.99991), (2e4, 0.5, 0.9999)]:
        with mpmath.workdps(60):
            want = [
                float(mpmath.diff(_mp_betainc(a, b, x), (a, b, x), order))
                for order in ((1, 0, 0), (0, 1, 0))
            ]
        for jac in (jacrev, jacfwd):
            got = [jac(sp.betainc, argnums=i)(a, b, x) for i in range(2)]
            assert got == pytest.approx(want, rel=5e-9, abs=0), (a, b, x)  # (the larger tail's)
    # where both tails' series are too long: an error, not a truncated value
    with pytest.raises(ValueError, match="does not return a truncated value"):
        grad(sp.betainc)(1e8, 1e8, 0.5)


def test_betainc_values_closed_forms_and_edges(no_warnings):
    a, b, x = np.array([0.5, 2.0, 30.0]), np.array([[1.5], [0.7]]), np.array([0.2, 0.6, 0.99])
    np.testing.assert_array_equal(sp.betainc(a, b, x), sc.betainc(a, b, x))
    # I_x(a, 1) = x**a: d/da = x**a log x; I_x(1, b) = 1 - (1 - x)**b: d/db = -(1-x)**b log(1-x)
    assert grad(sp.betainc)(2.5, 1.0, 0.3) == pytest.approx(0.3**2.5 * math.log(0.3), rel=1e-14)
    assert grad(sp.betainc, argnums=1)(1.0, 3.0, 0.4) == pytest.approx(
        -(0.6**3) * math.log(0.6), rel=1e-14
    )
    # at the ends the value is 0 or 1 whatever a and b are
    assert grad(sp.betainc, argnums=(0, 1))(2.0, 3.0, 0.0) == (0.0, 0.0)
    assert grad(sp.betainc, argnums=(0, 1))(2.0, 3.0, 1.0) == (0.0, 0.0)
    ga, gb, gx = grad(lambda a, b, x: fnp.sum(sp.betainc(a, b, x)), argnums=(0, 1, 2))(a, b, x)
    assert ga.shape == (3,) and gb.shape == (2, 1) and gx.shape == (3,)
    a32 = np.float32([0.5, 2.0])
    assert sp.betainc(a32, 1.5, 0.3).dtype == np.float32
    assert grad(lambda a: fnp.sum(sp.betainc(a, 1.5, 0.3)))(a32).dtype == np.float32
    # SciPy's own betainc applied to a traced value is fgrad's
    assert grad(lambda x: sc.betainc(2.0, 3.0, x))(0.5) == pytest.approx(1.5, rel=1e-14)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_gammaincinv_derivatives_match_mpmath(mode):
    jac = jacrev if mode == "rev" else jacfwd
    for f, upper in ((sp.gammaincinv, False), (sp.gammainccinv, True)):
        for a, p in ((0.7, 0.3), (5.0, 0.9), (40.0, 0.05)):

            def inverse(a, p, upper=upper):
                return mpmath.findroot(
                    lambda t: (
                        mpmath.gammainc(a, t, mpmath.inf, regularized=True) - p
                        if upper
                        else mpmath.gammainc(a, 0, t, regularized=True) - p
                    ),
                    float(f(float(a), float(p))),
                )

            with mpmath.workdps(40):
                exact = [float(mpmath.diff(inverse, (a, p), order)) for order in ((1, 0), (0, 1))]
            got = [jac(f, argnums=0)(a, p), jac(f, argnums=1)(a, p)]
            assert got == pytest.approx(exact, rel=1e-9), (f.__name__, a, p)


# --- stability at +-1000 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x,value,d1,d2",
    [
        (1000.0, 1.0, 0.0, 0.0),
        (-1000.0, 0.0, 0.0, 0.0),
        (40.0, 1.0, math.exp(-40), -math.exp(-40)),
    ],
)
def test_expit_at_large_magnitude(no_warnings, x, value, d1, d2):
    assert sp.expit(x) == value
    for mode in ("rev", "fwd"):
        assert _derivatives(sp.expit, x, 2, mode) == pytest.approx([d1, d2], rel=1e-12, abs=0)


@pytest.mark.parametrize("x,value,d1,d2", [(1000.0, 0.0, 0.0, 0.0), (-1000.0, -1000.0, 1.0, 0.0)])
def test_log_expit_at_large_magnitude(no_warnings, x, value, d1, d2):
    assert sp.log_expit(x) == value
    for mode in ("rev", "fwd"):
        assert _derivatives(sp.log_expit, x, 2, mode) == [d1, d2]


def test_logit_near_the_ends(no_warnings):
    for p in (1e-100, 1 - 2**-52):
        q = 1 - p
        assert _derivatives(sp.logit, p, 2, "rev") == pytest.approx(
            [1 / (p * q), (2 * p - 1) / (p * q) ** 2], rel=1e-12
        )


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_log_ndtr_tails(no_warnings, mode):
    assert _derivatives(sp.log_ndtr, 1000.0, 3, mode) == [0.0, 0.0, 0.0]
    for x in (-1000.0, -40.0, -5.0):
        with mpmath.workdps(50):  # x + m cancels: the reference needs the digits
            m = mpmath.npdf(x) / mpmath.ncdf(x)
            exact = [float(m), float(-m * (x + m))]
        assert _derivatives(sp.log_ndtr, x, 2, mode) == pytest.approx(exact, rel=1e-9)
    assert sp.log_ndtr(-1000.0) == pytest.approx(float(mpmath.log(mpmath.ncdf(-1000))), rel=1e-14)


def test_logsumexp_at_large_magnitude(no_warnings):
    x = np.array([1000.0, -1000.0, 0.0])
    assert sp.logsumexp(x) == 1000.0
    np.testing.assert_array_equal(grad(sp.logsumexp)(x), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(hessian(sp.logsumexp)(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(jacfwd(jacrev(sp.logsumexp))(x), np.zeros((3, 3)))
    # two equal large entries share the gradient, and the Hessian is diag(p) - p p^T
    y = np.array([1000.0, 1000.0])
    # (ans = 1000 + log 2 is rounded to the spacing of 1000, 1e-13: so are the weights)
    np.testing.assert_allclose(grad(sp.logsumexp)(y), [0.5, 0.5], rtol=1e-12)
    np.testing.assert_allclose(hessian(sp.logsumexp)(y), [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-12)


def test_softmax_and_log_softmax_at_large_magnitude(no_warnings):
    x = np.array([1000.0, -1000.0, 0.0])
    np.testing.assert_array_equal(sp.softmax(x), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(jacrev(sp.softmax)(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(jacfwd(sp.softmax)(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(sp.log_softmax(x), [0.0, -2000.0, -1000.0])
    expected = np.eye(3) - np.array([1.0, 0.0, 0.0])  # d log p_i / d x_j = delta_ij - p_j
    np.testing.assert_array_equal(jacrev(sp.log_softmax)(x), expected)
    np.testing.assert_array_equal(jacfwd(sp.log_softmax)(x), expected)
    second = jacfwd(jacrev(lambda x: sp.log_softmax(x)[1]))(x)
    np.testing.assert_array_equal(second, np.zeros((3, 3)))


# --- logsumexp: -inf entries, weights, signs ------------------------------------------------------


def test_logsumexp_gives_no_gradient_to_minus_inf_entries(no_warnings):
    x = np.array([0.0, -np.inf, np.log(3.0)])
    np.testing.assert_allclose(grad(sp.logsumexp)(x), [0.25, 0.0, 0.75], rtol=1e-15)
    h = hessian(sp.logsumexp)(x)
    assert np.all(np.isfinite(h)) and np.all(h[1] == 0) and np.all(h[:, 1] == 0)
    everything_inf = np.full(3, -np.inf)
    assert sp.logsumexp(everything_inf) == -np.inf
    np.testing.assert_array_equal(grad(sp.logsumexp)(everything_inf), np.zeros(3))
    np.testing.assert_array_equal(jacfwd(sp.logsumexp)(everything_inf), np.zeros(3))


def test_logsumexp_with_signed_weights():
    a, b = np.array([1.0, 2.0, 0.5]), np.array([2.0, -1.0, 0.5])
    (out, sign), (ref, ref_sign) = (
        sp.logsumexp(a, b=b, return_sign=True),
        sc.logsumexp(a, b=b, return_sign=True),
    )
    assert out == ref and sign == ref_sign == -1.0
    s = np.sum(b * np.exp(a))
    ga, gb = grad(lambda a, b: sp.logsumexp(a, b=b, return_sign=True)[0], argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, b * np.exp(a) / s, rtol=1e-14)  # d log|s| / da
    np.testing.assert_allclose(gb, np.exp(a) / s, rtol=1e-14)
    # a zero-weight entry contributes nothing, even at +1000
    g = grad(lambda a: sp.logsumexp(a, b=np.array([1.0, 0.0])))(np.array([0.0, 1000.0]))
    np.testing.assert_array_equal(g, [1.0, 0.0])


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
@pytest.mark.parametrize(
    "a, b",
    [
        ([0.0, 0.0, -np.inf], [1.0, -1.0, 1.0]),  # terms that cancel, and an entry at -inf
        ([-800.0, -800.0], [1.0, -1.0]),  # cancelling terms that exp(a) alone underflows
        ([1.0, 2.0], [0.0, 0.0]),  # zero weights
    ],
)
def test_logsumexp_derivatives_where_the_weighted_sum_is_zero(a, b):
    """At s = sum(b e^a) = 0 (value -inf) d/da_i = b_i e^a_i / s and d/db_i = e^a_i / s, with
    s = +0 (log s is nan for s < 0): +-inf, as JAX's, where the term is not 0, and 0 where the
    argument does not move the sum (an entry at -inf; d/da at a zero b). The -inf was replaced
    by 0, so the weights came out b e^a and e^a: finite."""
    a, b = np.array(a), np.array(b)
    terms = b * np.exp(a - a.max())  # (the common factor e^max a > 0 keeps the signs)
    with np.errstate(divide="ignore"):
        want_a = np.where(terms == 0, 0.0, terms / 0.0)
        want_b = np.where(np.exp(a - a.max()) == 0, 0.0, np.exp(a - a.max()) / 0.0)

    def f(a, b):
        return sp.logsumexp(a, b=b)

    def log_abs(a, b):
        return sp.logsumexp(a, b=b, return_sign=True)[0]

    assert f(a, b) == -np.inf
    for g in (f, log_abs):
        for jac in (jacrev, jacfwd, lambda g, argnums: fgrad.jit(grad(g, argnums=argnums))):
            np.testing.assert_array_equal(jac(g, argnums=0)(a, b), want_a)
            np.testing.assert_array_equal(jac(g, argnums=1)(a, b), want_b)
    for i in range(len(a)):  # one entry's tangent: the others' zero tangents add nothing
        e = np.eye(len(a))[i]
        assert jvp(lambda a: f(a, b), (a,), (e,))[1] == want_a[i]
        assert fgrad.jet(lambda b: f(a, b), (b,), ((e,),))[1][0] == want_b[i]
    rows = vmap(grad(f))(np.stack([a, a]), np.stack([b, b]))
    np.testing.assert_array_equal(rows, [want_a, want_a])


def _eager_jitted_batched(f, a):
    """f(a) eagerly, by jit (first call and replay) and as row 0 of vmap over a[None]."""
    jitted = fgrad.jit(f)
    return f(a), jitted(a), jitted(a), fgrad.tree_util.tree_map(lambda r: r[0], vmap(f)(a[None]))


@pytest.mark.parametrize("a", [np.array(1 + 1j, np.complex64), np.complex64(1 - 2j)])
@pytest.mark.parametrize("b", [0.5, 2, -1.5])
def test_logsumexp_of_a_0d_complex64_with_a_python_weight_is_complex64(a, b):
    """A 0-d a is reduced along a new axis, along which a Python-number b was made a float64
    array: complex64 a gave complex128, where SciPy (and a 1-d a) gives complex64."""
    want = sc.logsumexp(a, b=b)
    for got in _eager_jitted_batched(lambda z: sp.logsumexp(z, b=b), a):
        assert got.dtype == want.dtype and got.tobytes() == np.asarray(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float16, np.bool_, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("b", [None, 0.5, np.array([1.0, -3.0, 0.5], np.float16)])
def test_logsumexp_sign_has_the_values_dtype_as_scipys(dtype, b):
    """The sign was cast to result_type(a, float32): float32 for float16 and bool a, whose
    value (and SciPy's sign) is float16 or float64."""
    a = np.array([1, 0, 1]).astype(dtype)
    want = sc.logsumexp(a, b=b, return_sign=True)
    for got in _eager_jitted_batched(lambda z: sp.logsumexp(z, b=b, return_sign=True), a):
        for u, v in zip(got, want):
            assert np.asarray(u).dtype == np.asarray(v).dtype
            assert np.asarray(u).tobytes() == np.asarray(v).tobytes()


# --- conventions at 0 and at the edges of the domains ---------------------------------------------


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.filterwarnings("ignore:divide by zero")  # log(0) = -inf is the derivative in x
def test_xlogy_and_xlog1py_at_x_zero(mode):
    jac = jacrev if mode == "rev" else jacfwd
    for f, y0 in ((sp.xlogy, 0.0), (sp.xlog1py, -1.0)):
        assert f(0.0, y0) == 0.0
        # d/dx is log(y) = -inf; d/dy is 0, not nan. (One argument at a time: jacfwd over both
        # would seed x with a zero tangent, and 0 * -inf is nan.)
        assert jac(f, argnums=0)(0.0, y0) == -np.inf and jac(f, argnums=1)(0.0, y0) == 0.0
    # at x == 0 < y the mixed derivative is 1/y (the masks only touch y == 0)
    mixed = jac(jac(sp.xlogy, argnums=1), argnums=0)(0.0, 4.0)
    assert mixed == 0.25
    assert jac(sp.xlogy, argnums=(0, 1))(0.0, 2.0) == (math.log(2.0), 0.0)
    assert jac(jac(sp.xlogy, argnums=0), argnums=0)(0.0, 2.0) == 0.0


def test_entropies_at_the_edges():
    assert grad(sp.entr)(1.0) == -1.0
    assert grad(sp.entr)(-1.0) == 0.0  # entr is the constant -inf there
    with np.errstate(divide="ignore"):
        assert grad(sp.entr)(0.0) == np.inf
        assert grad(sp.rel_entr, argnums=(0, 1))(0.0, 2.0) == (-np.inf, 0.0)
        assert grad(sp.rel_entr, argnums=(0, 1))(0.0, 0.0) == (np.inf, 0.0)
        assert grad(sp.kl_div, argnums=(0, 1))(0.0, 2.0) == (-np.inf, 1.0)
        assert grad(sp.kl_div, argnums=(0, 1))(0.0, 0.0) == (np.inf, 1.0)
    for f in (sp.rel_entr, sp.kl_div):  # +inf constants: no gradient
        assert grad(f, argnums=(0, 1))(-1.0, 2.0) == (0.0, 0.0)
        assert grad(f, argnums=(0, 1))(1.0, 0.0) == (0.0, 0.0)
    assert grad(sp.kl_div, argnums=(0, 1))(2.0, 2.0) == (0.0, 0.0)  # the minimum


def test_gammasgn_is_a_constant():
    assert grad(lambda x: sp.gammasgn(x) * x)(-0.5) == -1.0


def test_expn_of_a_negative_order_is_nan_as_scipys():
    # a negative order in the array raised for the whole call
    n, x = np.array([-1, 0, 1, 3, -5]), np.array([0.5, 0.7, 1.2, 2.0, 1.0])
    want = sc.expn(n, x)
    np.testing.assert_array_equal(sp.expn(n, x), want)
    assert np.isnan(sp.expn(-1, 2.0))
    slope = vmap(grad(sp.expn, argnums=1))(n, x)  # E_n' = -E_{n-1}, -E_0 (1 + 1/x)
    np.testing.assert_allclose(slope[2:4], -sc.expn(n[2:4] - 1, x[2:4]), rtol=1e-14)
    assert slope[1] == pytest.approx(-want[1] * (1 + 1 / x[1]), rel=1e-14)
    assert np.isnan(slope[[0, 4]]).all()  # (a nan value has no derivative)


# --- errors ---------------------------------------------------------------------------------------


def test_integer_orders_are_static():
    with pytest.raises(TypeError, match="order n is a traced value"):
        grad(lambda n: sp.polygamma(n, 2.0))(1.0)
    with pytest.raises(TypeError, match="must be an integer"):
        sp.polygamma(1.5, 2.0)
    with pytest.raises(ValueError, match="d must be an integer >= 1; got 0"):
        sp.multigammaln(3.0, 0)
    with pytest.raises(ValueError, match=r"every a must be > \(d - 1\) / 2 = 1.0"):
        sp.multigammaln(np.array([3.0, 0.8]), 3)


def test_multigammaln_takes_a_list_as_scipy():
    np.testing.assert_array_equal(sp.multigammaln([3.0, 4.0], 2), sc.multigammaln([3.0, 4.0], 2))
    np.testing.assert_allclose(
        grad(lambda a: sp.multigammaln([a, 4.0], 2)[0])(3.0),
        sc.digamma(3.0) + sc.digamma(2.5),
        rtol=1e-14,
    )


# --- SciPy is optional ----------------------------------------------------------------------------


def test_fgrad_imports_without_scipy():
    code = (
        "import sys; sys.modules['scipy'] = None\n"  # makes `import scipy` fail
        "import fgrad, fgrad.numpy\n"
        "try:\n"
        "    import fgrad.scipy\n"
        "except ImportError as e:\n"
        "    assert 'pip install' in str(e), e\n"
        "else:\n"
        "    raise SystemExit('fgrad.scipy imported without SciPy')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fgrad_numpy_does_not_load_scipy():
    code = "import sys, fgrad, fgrad.numpy; assert 'scipy' not in sys.modules, 'scipy loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- third order: the rules are differentiable all the way down -----------------------------------

_X = np.array([0.7, 1.3, 2.1])
_P = np.array([0.2, 0.45, 0.8])
THIRD_ORDER = {
    "erf": (sp.erf, (_X,)),
    "erfinv": (sp.erfinv, (_P,)),
    "erfcx": (sp.erfcx, (_X - 1.0,)),
    "expit": (sp.expit, (_X - 1.0,)),
    "logit": (sp.logit, (_P,)),
    "log_expit": (sp.log_expit, (_X - 1.0,)),
    "gammaln": (sp.gammaln, (_X,)),
    "digamma": (sp.digamma, (_X,)),
    "polygamma": (lambda x: sp.polygamma(2, x), (_X,)),
    "rgamma": (sp.rgamma, (_X,)),
    "ndtri": (sp.ndtri, (_P,)),
    "log_ndtr": (sp.log_ndtr, (np.array([-30.0, -6.0, -2.0, 0.5, 4.0]),)),
    "i0": (sp.i0, (_X - 1.0,)),
    "i1": (sp.i1, (_X - 1.0,)),
    "i0e": (sp.i0e, (_X,)),
    "i1e": (sp.i1e, (_X,)),
    "expn": (lambda x: sp.expn(np.array([0, 1, 2]), x), (_X,)),
    "multigammaln": (lambda x: sp.multigammaln(x, 3), (_X + 1.0,)),
    "xlogy": (sp.xlogy, (_X - 1.0, _P)),
    "beta": (sp.beta, (_X, _P)),
    "kl_div": (sp.kl_div, (_X, _P)),
    "rel_entr": (sp.rel_entr, (_X, _P)),
    "logsumexp": (lambda x, b: sp.logsumexp(x, b=b, axis=0), (np.outer(_X, _P), _P[:, None])),
    "softmax": (lambda x: sp.softmax(x, axis=1), (np.outer(_X, _P),)),
    "log_softmax": (lambda x: sp.log_softmax(x, axis=0), (np.outer(_X, _P),)),
    "j1": (sp.j1, (_X - 1.0,)),
    "y1": (sp.y1, (_X,)),
    "jv": (lambda x: sp.jv(2.5, x), (_X,)),
    "ive": (lambda x: sp.ive(1.5, x), (_X,)),
    "kve": (lambda x: sp.kve(0.3, x), (_X,)),
    "gammainc": (sp.gammainc, (_X, np.array([0.4, 3.0, 6.0]))),
    "gammaincinv": (sp.gammaincinv, (_X, _P)),
}


@pytest.mark.parametrize("name", sorted(THIRD_ORDER))
def test_third_order_in_both_modes(name):
    f, args = THIRD_ORDER[name]
    check_grads(f, args, order=3, modes=("fwd", "rev"))


def test_scipy_special_ufuncs_on_traced_values_are_differentiated():

    assert grad(lambda x: sc.erf(x))(0.0) == pytest.approx(2 / np.sqrt(np.pi))
    assert grad(lambda x: sc.gammaln(x))(2.0) == pytest.approx(1 - np.euler_gamma)
    assert grad(lambda x: sc.jv(1, x))(0.0) == 0.5
    assert grad(lambda x: sc.jn(1, x))(0.0) == 0.5
    assert grad(lambda a: sc.gammaincc(a, 2.0))(1.0) == pytest.approx(
        float(mpmath.diff(lambda t: mpmath.gammainc(t, 2.0, mpmath.inf, regularized=True), 1.0)),
        rel=1e-12,
    )


# --- a Python scalar takes the other argument's dtype (NumPy 2's rule) ----------------------------

ALL_BINARY = [
    "xlogy",
    "xlog1py",
    "rel_entr",
    "kl_div",
    "beta",
    "betaln",
    "gammainc",
    "gammaincc",
    "gammaincinv",
    "gammainccinv",
]


@pytest.mark.parametrize("name", ALL_BINARY)
def test_python_float_next_to_float32_stays_float32(name):
    f = getattr(sp, name)
    y32 = np.float32([0.3, 0.6])
    for args in [(0.7, y32), (y32, 0.4), (1, y32), (0.7, np.float32(0.4))]:
        out = f(*args)
        assert out.dtype == np.float32, (args, out.dtype)
        # the value is SciPy's computed from the same float32 numbers
        theirs = getattr(sc, name)(*(np.float32(a) if type(a) in (int, float) else a for a in args))
        np.testing.assert_allclose(out, theirs, rtol=1e-6)
        for i in range(2):
            if type(args[i]) in (int, float):
                continue
            g = grad(lambda v, i=i: fnp.sum(f(*args[:i], v, *args[i + 1 :])))(args[i])
            gg = grad(
                lambda v, i=i: fnp.sum(grad(lambda w: fnp.sum(f(*args[:i], w, *args[i + 1 :])))(v))
            )(args[i])
            jf = jacfwd(lambda v, i=i: f(*args[:i], v, *args[i + 1 :]))(args[i])
            assert g.dtype == gg.dtype == jf.dtype == np.float32, (args, i)
    # NumPy's rule, not a blanket float32: float64 data, NumPy float64 scalars and integer
    # arrays next to a Python float stay or become float64, as NumPy would give
    assert f(0.7, np.float64([0.3])).dtype == np.float64
    assert f(np.float64(0.7), y32).dtype == np.float64
    with np.errstate(all="ignore"):
        assert f(0.7, np.array([1])).dtype == np.float64
    assert np.asarray(f(0.7, 0.3)).dtype == np.float64


@pytest.mark.parametrize("name", ALL_BINARY + ["betainc"])
def test_python_float_next_to_float16_takes_the_dtype_of_scipys_loop(name):
    """SciPy has no float16 loops: float16 data is computed in float32 or float64, and a
    Python float in that dtype (NumPy 2's rule). fgrad rounded it to float16 first:
    betainc(float16 data, 2.0, 0.4) was 1.4e-4 (4,700 float32 ulps) off SciPy's."""
    f, theirs = getattr(sp, name), getattr(sc, name)
    h = np.float16([0.3, 0.55, 0.8])
    for i in range(theirs.nin):
        args = [0.4] * theirs.nin
        args[i] = h
        want = theirs(*args)
        for got in _eager_jitted_batched(lambda z, i=i: f(*args[:i], z, *args[i + 1 :]), h):
            assert got.dtype == want.dtype, (i, got.dtype, want.dtype)
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(want.dtype).eps)


def test_python_scalars_with_orders_and_weights_keep_float32():
    v32 = np.float32([0.0, 1.5])
    for f in (sp.jv, sp.yv, sp.iv, sp.ive, sp.kv, sp.kve):
        assert f(v32, 0.7).dtype == np.float32
        assert f(np.array([0, 1]), 0.7).dtype == np.float64  # int order, Python x: float64
    assert sp.polygamma(np.float32(1.0), 0.7).dtype == np.float32
    x32 = np.float32([0.5, 1.5])
    assert sp.logsumexp(x32, b=2.0).dtype == np.float32
    assert sp.logsumexp(0.5, b=x32).dtype == np.float32
    assert grad(lambda b: sp.logsumexp(0.5, b=b))(x32).dtype == np.float32


BESSEL = ["jv", "jn", "yv", "iv", "ive", "kv", "kve"]
ORDER_FIRST = ["expn", "yn", "polygamma"]  # (n, x): n an integer, here a float32 array of them


@pytest.mark.parametrize("name", ALL_BINARY + BESSEL + ORDER_FIRST)
def test_jit_keeps_a_python_number_argument_weak(name):
    """Under jit alone a Python number keeps its type (README). jit holds a Python-number
    argument as a traced value, which `weak_scalars` did not take for one: jit(beta)(float32
    data, 1.2) was float64 where the eager call is float32 (18 functions)."""
    f = getattr(sp, name)
    if name in ORDER_FIRST:
        n32 = np.float32([1.0, 2.0])
        calls = [((n32, 1.2), (n32, 0.7)), ((n32, 2), (n32, 3))]
    else:
        y32 = np.float32([0.3, 0.6])
        calls = [((y32, 1.2), (y32, 0.7)), ((0.4, y32), (1.5, y32)), ((y32, 2), (y32, 3))]
    for first, then in calls:
        jitted = fgrad.jit(f)
        for args in (first, first, then):  # the record, its replay, a replay with another number
            want, got = f(*args), jitted(*args)
            assert got.dtype == want.dtype, (args, got.dtype, want.dtype)
            np.testing.assert_array_equal(got, want)
    if name not in ORDER_FIRST:  # (and the eager dtype is the float32 NumPy 2 gives)
        assert f(*calls[0][0]).dtype == np.float32


@pytest.mark.parametrize("name", BESSEL + ORDER_FIRST)
def test_float16_x_gives_scipys_dtype_and_precision(name):
    """SciPy has no float16 loops: it computes a float16 x in float32 or float64 and returns
    that dtype. fgrad cast the result back to float16 (a 2e-4 relative error, under a dtype
    that said float32 or float64). The derivative in x stays float16, as x."""
    f, theirs = getattr(sp, name), getattr(sc, name)
    h = np.float16([0.5, 1.25, 3.0])
    for order in (1, np.int64(2), np.float16(1.0), np.array([1, 2, 3])):
        dtype = theirs(order, h).dtype
        # (SciPy's polygamma is float64 with float32's precision: its zeta runs `ff->f`)
        want = theirs(order, h.astype(dtype))
        for got in _eager_jitted_batched(lambda x, order=order: f(order, x), h):
            assert got.dtype == dtype, (order, got.dtype, dtype)
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps)
        d = grad(lambda x, order=order: fnp.sum(f(order, x)))(h)
        assert d.dtype == np.float16, order


def test_multigammaln_refuses_a_float_dimension_as_scipy():
    """SciPy raises for a float d (a TypeError for 2.0, a ValueError for 2.5); fgrad took an
    integral one as int(d)."""
    for d in (2.0, np.float64(2.0), np.float32(3.0), np.array(3.0)):
        with pytest.raises(TypeError):
            sc.multigammaln(3.0, d)
        with pytest.raises(TypeError, match=r"d must be an integer, as in SciPy; got .*: pass \d"):
            sp.multigammaln(3.0, d)
    with pytest.raises(TypeError, match="d must be an integer"):
        fgrad.jit(sp.multigammaln)(3.0, 2.0)  # (a number jit holds, read)
    for d in (2.5, np.array([2])):
        with pytest.raises(ValueError):
            sc.multigammaln(3.0, d)
        with pytest.raises(ValueError, match="d must be an integer >= 1"):
            sp.multigammaln(3.0, d)
    for d in (2, np.int8(2), True):  # integers and bools, as SciPy takes them
        assert sp.multigammaln(3.0, d) == sc.multigammaln(3.0, d)


# --- signatures and tracing -----------------------------------------------------------------------


@pytest.mark.parametrize("name", sp.__all__)
def test_signature_is_scipys(name):
    import inspect

    def parameters(fn):  # names, kinds and defaults (fgrad's also carry type hints)
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert parameters(getattr(sp, name)) == parameters(getattr(sc, name))


@pytest.mark.parametrize(
    "kw",
    [
        {"out": np.zeros(3)},
        {"where": np.ones(3, bool)},
        {"casting": "unsafe"},
        {"order": "C"},
        {"dtype": np.float32},
        {"subok": False},
        {"signature": "d->d"},
    ],
)
def test_ufunc_keywords_are_refused_by_name(kw):
    (key,) = kw
    with pytest.raises(TypeError, match=f"erf: fgrad does not support the ufunc argument {key}="):
        sp.erf(X, **kw)
    with pytest.raises(TypeError, match=f"betainc: .* argument {key}="):
        sp.betainc(X, X, X / 3, **kw)


def test_betainc_value_is_scipys_untraced_and_under_vjp_and_jvp():
    from fgrad import jvp, vjp

    a, b = np.array([0.5, 2.0, 30.0]), np.array([[1.5], [0.7]])
    for x in (np.array([0.2, 0.6, 0.99]), np.float32([0.2, 0.6, 0.99])):
        expected = sc.betainc(a.astype(x.dtype), b.astype(x.dtype), x)
        plain = sp.betainc(a.astype(x.dtype), b.astype(x.dtype), x)
        assert plain.dtype == expected.dtype == x.dtype
        np.testing.assert_array_equal(plain, expected)
        for out in (
            vjp(lambda x: sp.betainc(a.astype(x.dtype), b.astype(x.dtype), x), x)[0],
            jvp(
                lambda a, x: sp.betainc(a, b.astype(x.dtype), x),
                (a.astype(x.dtype), x),
                (a.astype(x.dtype), x),
            )[0],
        ):
            assert out.dtype == plain.dtype and out.shape == plain.shape
            np.testing.assert_array_equal(out, plain)


def test_i1e_derivative_beyond_the_range_of_scipys_ive():
    # i1e's derivative takes ive(1, x) / x, and SciPy's ive is nan beyond |x| = 2**30 (where
    # i1e itself is finite): the gradient was nan there. Now by the recurrence from i0e, i1e.
    for x in (2.0**30 + 5.0, 3e9, -1e12):
        want = mpmath.diff(lambda t: mpmath.besseli(1, t) * mpmath.exp(-abs(t)), mpmath.mpf(x))
        got = grad(sp.i1e)(x)
        assert np.isfinite(got) and got == pytest.approx(float(want), rel=1e-5)
        assert np.isfinite(grad(grad(sp.i1e))(x))


def test_taylor_mode_of_log_softmax_along_a_line_and_logsumexp_of_a_0d_value():
    """derivative() along x + t v (whose higher terms are zero) of log_softmax gave a term of
    logsumexp's kept shape, (2, 1) for (2, 2), and half the second derivative of its sum;
    logsumexp(0-d, keepdims=True) had shape () where SciPy's is (1,)."""
    import fgrad
    import fgrad.numpy as fnp
    import fgrad.scipy.special as fs

    x = np.array([[0.3, -0.5], [1.1, 0.2]])
    v = np.array([[1.0, 0.5], [-0.3, 0.7]])
    for fn in (lambda y: fs.log_softmax(y, axis=-1), lambda y: fs.softmax(y, axis=-1)):
        g = lambda t: fn(x + t * v)
        nested = g
        for k in (1, 2, 3):
            nested = fgrad.jacfwd(nested)
            np.testing.assert_allclose(fgrad.derivative(g, k)(0.0), nested(0.0), atol=1e-14)
    p = np.exp(x - np.log(np.exp(x).sum(1, keepdims=True)))
    closed = -2 * sum(v[r] @ (np.diag(p[r]) - np.outer(p[r], p[r])) @ v[r] for r in range(2))
    g = lambda t: fnp.sum(fs.log_softmax(x + t * v, axis=-1))
    np.testing.assert_allclose(fgrad.derivative(g, 2)(0.0), closed, rtol=1e-13)
    import scipy.special as sc

    assert (
        fs.logsumexp(np.array(0.3), keepdims=True).shape
        == sc.logsumexp(np.array(0.3), keepdims=True).shape
    )
    assert fgrad.grad(lambda x: fs.logsumexp(x, keepdims=True).sum(axis=-1))(0.3) == 1.0


def test_vmap_of_betainc_derivatives_in_a_and_b_is_the_loops_bit_for_bit():
    # the series' length was the longest row's, summed pairwise, and a row far from the pole
    # at a or b = 0 took the near-pole form's order of additions when another row was near
    # it: vmap differed from the loop by 1.8e-15 (d/da at a=2, b=5, x=0.9)
    a = np.array([0.3, 2.0, 50.0, 1e-3, 0.0, 12.0])
    b = np.array([0.7, 5.0, 0.5, 300.0, 2.0, 0.01])
    x = np.array([0.2, 0.9, 0.5, 0.999, 0.5, 0.3])
    for argnum in (0, 1):
        d = grad(sp.betainc, argnums=argnum)
        rows = np.array([d(*args) for args in zip(a, b, x)])
        np.testing.assert_array_equal(vmap(d)(a, b, x), rows)
        for i in range(len(a)):  # and each row alone, as in a batch of one
            np.testing.assert_array_equal(
                vmap(d)(a[i : i + 1], b[i : i + 1], x[i : i + 1]), rows[i]
            )


def test_a_second_positional_argument_to_a_ufunc_of_one_input_says_both_meanings():
    """gamma(1.0, 2.0) was refused as an unsupported out=2.0 only (a ufunc's argument after
    its inputs is out, as in SciPy, which refuses it too); the error now says gamma takes one
    input, that the second is out=, and where the incomplete gamma is."""
    with pytest.raises(TypeError):
        sc.gamma(1.0, 2.0)
    said = (
        r"scipy.special.gamma takes 1 input\(s\), got 2 positional arguments: "
        r".*out= \(here out=2.0\).*gammainc"
    )
    with pytest.raises(TypeError, match=said):
        sp.gamma(1.0, 2.0)
    with pytest.raises(TypeError, match=said):
        grad(lambda a: sp.gamma(a, 2.0))(1.0)
    with pytest.raises(TypeError, match=r"erf takes 1 input\(s\), got 2 .*out="):
        sp.erf(X, X)
