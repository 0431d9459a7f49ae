"""fgrad/numpy/ufuncs.py beyond the gradient table (tests/rows_ufuncs.py): values against
NumPy, closed-form derivatives, and the conventions at kinks and degenerate points."""

import math

import numpy as np
import pytest
from gradtable import derivatives as _derivatives

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jacrev, vjp

X = np.array([-0.7, 0.2, 0.55])


@pytest.mark.parametrize(
    "name, x",
    [
        ("arcsin", X),
        ("arccos", X),
        ("arctan", X),
        ("sinh", X),
        ("cosh", X),
        ("arcsinh", X),
        ("arccosh", X + 2.0),
        ("arctanh", X),
        ("exp2", X),
        ("log2", X + 1.0),
        ("log10", X + 1.0),
        ("cbrt", X),
        ("square", X),
        ("reciprocal", X),
        ("fabs", X),
        ("deg2rad", X),
        ("rad2deg", X),
        ("degrees", X),
        ("radians", X),
        ("sinc", X),
        ("positive", X),
    ],
)
def test_unary_values_are_numpys_and_np_ufuncs_dispatch(name, x):
    np.testing.assert_allclose(getattr(fnp, name)(x), getattr(np, name)(x), rtol=1e-15)
    # NumPy's own function applied to a traced value is differentiated too
    if isinstance(getattr(np, name), np.ufunc):
        g = grad(lambda v: np.sum(getattr(np, name)(v)))(x)
        np.testing.assert_array_equal(g, grad(lambda v: fnp.sum(getattr(fnp, name)(v)))(x))


@pytest.mark.parametrize(
    "name, dfdx",
    [
        ("arcsin", lambda x: 1 / np.sqrt(1 - x * x)),
        ("arccos", lambda x: -1 / np.sqrt(1 - x * x)),
        ("arctan", lambda x: 1 / (1 + x * x)),
        ("arcsinh", lambda x: 1 / np.sqrt(1 + x * x)),
        ("arctanh", lambda x: 1 / (1 - x * x)),
        ("exp2", lambda x: np.log(2) * 2**x),
        ("log2", lambda x: 1 / (x * np.log(2))),
        ("log10", lambda x: 1 / (x * np.log(10))),
        ("cbrt", lambda x: np.abs(x) ** (-2 / 3) / 3),
        ("reciprocal", lambda x: -1 / x**2),
        ("deg2rad", lambda x: np.pi / 180 + 0 * x),
        ("rad2deg", lambda x: 180 / np.pi + 0 * x),
    ],
)
def test_closed_form_first_derivatives(name, dfdx):
    f = getattr(fnp, name)
    x = X + 1.0 if name.startswith("log") else X
    np.testing.assert_allclose(jacrev(lambda v: f(v))(x).diagonal(), dfdx(x), rtol=1e-13)
    np.testing.assert_allclose(jacfwd(lambda v: f(v))(x).diagonal(), dfdx(x), rtol=1e-13)


def test_arccosh_near_one_keeps_its_digits():
    # (x - 1)(x + 1) instead of x*x - 1: at x = 1 + 1e-12 the slope is 1/sqrt(2e-12) to ~1e-4
    x = 1.0 + 1e-12
    assert grad(fnp.arccosh)(x) == pytest.approx(1 / math.sqrt((x - 1) * (x + 1)), rel=1e-12)


def _in_every_mode(f, x, order):
    """f's derivatives 1..order at x by nested grad, jit of it, Taylor mode (derivative),
    and nested jacfwd; and the first by vmap of grad (over x alone)."""
    got = []
    for k in range(1, order + 1):
        nested, forward = f, f
        for _ in range(k):
            nested, forward = grad(nested), jacfwd(forward)
        got += [
            (k, "grad", nested(x)),
            (k, "jit", fgrad.jit(nested)(x)),
            (k, "jacfwd", forward(x)),
            (k, "derivative", fgrad.derivative(f, k)(x)),
        ]
    got.append((1, "vmap", fgrad.vmap(grad(f))(np.array([x]))[0]))
    return got


@pytest.mark.parametrize("x", [-40.0, -100.0, -700.0, -1e-10, 1e-10, 3.0, 700.0])
def test_expm1_derivatives_are_exp_for_very_negative_x(x):
    # expm1(-40) rounds to -1: the slope ans + 1 was 0 for exp(-40) = 4.2e-18, in every mode
    for k, mode, got in _in_every_mode(fnp.expm1, x, 3):
        assert got == pytest.approx(math.exp(x), rel=1e-14, abs=0), (k, mode)


@pytest.mark.parametrize(
    "x",
    [
        *np.array([3e-309, 1e308, 0.5]),
        *np.array([3.4e38, 1e-38], dtype=np.float32),
        np.float16(1e-5),
    ],
)
@pytest.mark.parametrize("name", ["log10", "log2"])
def test_log10_and_log2_slopes_do_not_overflow_on_the_way(name, x):
    # 1/(ln(10) x) overflowed in the product at x = 1e308 (grad 0), and 1/x then / ln(10) at
    # 3e-309 (derivative inf), where the slope log10(e)/x is a float
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    base = {"log10": 10, "log2": 2}[name]
    want = type(x)(1 / (mpmath.mpf(float(x)) * mpmath.log(base)))
    f = getattr(fnp, name)
    for mode, got in [
        ("grad", grad(f)(x)),
        ("jacfwd", jacfwd(f)(x)),
        ("derivative", fgrad.derivative(f, 1)(x)),
        ("jit", fgrad.jit(grad(f))(x)),
    ]:
        assert got.dtype == want.dtype
        assert got == pytest.approx(want, rel=2 * np.finfo(want.dtype).eps, abs=0), mode


@pytest.mark.parametrize(
    "name, x, limit",
    [
        ("arcsin", 1.0, np.inf),  # x (1 - x**2)**-1.5
        ("arcsin", -1.0, -np.inf),
        ("arccos", 1.0, -np.inf),
        ("arctanh", 1.0, np.inf),  # 2x / (1 - x**2)**2
        ("arctanh", -1.0, -np.inf),
        ("arccosh", 1.0, -np.inf),  # -x (x**2 - 1)**-1.5
    ],
)
def test_second_derivatives_at_the_ends_of_the_domain_are_the_infinite_limit(name, x, limit):
    # reverse mode through (1 - x)(1 + x) sent the infinite cotangent into one factor times
    # the other, 0: grad(grad(arcsin))(1.0) was nan where hessian and derivative gave inf
    f = getattr(fnp, name)
    with np.errstate(divide="ignore", invalid="ignore"):
        for mode, got in [
            ("grad(grad)", grad(grad(f))(x)),
            ("hessian", fgrad.hessian(f)(x)),
            ("jacfwd(jacfwd)", jacfwd(jacfwd(f))(x)),
            ("derivative", fgrad.derivative(f, 2)(x)),
            ("jit", fgrad.jit(grad(grad(f)))(x)),
            ("vmap", fgrad.vmap(grad(grad(f)))(np.array([x]))[0]),
        ]:
            assert got == limit, mode


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_sinc_is_exact_at_zero_to_order_four(mode):
    d = _derivatives(fnp.sinc, 0.0, 4, mode)
    expected = [0.0, -(np.pi**2) / 3, 0.0, np.pi**4 / 5]
    np.testing.assert_allclose(d, expected, rtol=1e-14, atol=0)
    assert fnp.sinc(0.0) == 1.0
    # away from 0 it is the quotient's derivative: (cos(pi x) - sinc(x)) / x
    x = 0.3
    assert _derivatives(fnp.sinc, x, 1, mode)[0] == pytest.approx(
        (np.cos(np.pi * x) - np.sinc(x)) / x, rel=1e-13
    )


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("x", [1e-8, -1e-5, 1e-3, 0.9 / np.pi, 1.1 / np.pi, 2.5])
def test_sinc_derivatives_are_accurate_near_zero_and_elsewhere(mode, x):
    # sin(u)/u's derivatives in closed form (u = pi x) where they have no cancellation, else
    # its series; differentiating the quotient (JAX's way) loses every digit of sinc'' by 1e-8
    u = np.pi * x
    if abs(u) < 0.1:
        d1 = -u / 3 + u**3 / 30 - u**5 / 840 + u**7 / 45360
        d2 = -1 / 3 + u**2 / 10 - u**4 / 168 + u**6 / 6480
    else:
        d1 = (u * np.cos(u) - np.sin(u)) / u**2
        d2 = ((2 - u * u) * np.sin(u) - 2 * u * np.cos(u)) / u**3
    got = _derivatives(fnp.sinc, x, 2, mode)
    np.testing.assert_allclose(got, [np.pi * d1, np.pi**2 * d2], rtol=1e-13, atol=0)


def test_sinc_at_zero_inside_an_array_has_no_nan():
    x = np.array([0.0, 0.5, -1.0])
    h = jacfwd(jacrev(lambda v: fnp.sum(fnp.sinc(v))))(x)
    assert not np.isnan(h).any()
    assert h[0, 0] == pytest.approx(-(np.pi**2) / 3, rel=1e-14)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64, np.int32])
def test_sinc_values_are_numpys_bit_for_bit_in_every_dtype(dtype):
    # NumPy computes sin(pi x)/(pi x) in x's dtype; computed in float64 and rounded, a third of
    # float32 (float16, complex64) values were 1 ulp off, on plain arrays and traced alike
    rng = np.random.default_rng(0)
    x = rng.standard_normal(300) * 4 + (
        1j * rng.standard_normal(300) if dtype == np.complex64 else 0
    )
    x = x.astype(dtype)
    x[:2] = 0
    want = np.sinc(x)
    jitted = fgrad.jit(fnp.sinc)
    jitted(x)
    for got in (fnp.sinc(x), jitted(x), fgrad.vmap(fnp.sinc)(x)):
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()
    if dtype != np.int32:
        assert fgrad.jvp(fnp.sinc, (x,), (np.ones_like(x),))[0].tobytes() == want.tobytes()


Z = np.array([0.3 + 0.2j, -1.2 + 0.1j, 0.01 - 0.98j, -2.0 - 3.0j])


def test_sinc_and_arcsinh_of_complex_input_are_numpys_with_holomorphic_derivatives():
    np.testing.assert_array_equal(fnp.sinc(Z), np.sinc(Z))
    np.testing.assert_array_equal(vjp(fnp.sinc, Z)[0], np.sinc(Z))
    assert fnp.sinc(Z.astype(np.complex64)).dtype == np.complex64
    d_sinc = (np.cos(np.pi * Z) - np.sinc(Z)) / Z  # the quotient's derivative, away from 0
    d_arcsinh = 1 / np.sqrt(1 + Z * Z)
    for f, d in [(fnp.sinc, d_sinc), (fnp.arcsinh, d_arcsinh), (fnp.asinh, d_arcsinh)]:
        for jac in (jacrev, jacfwd):
            np.testing.assert_allclose(np.diag(jac(f, holomorphic=True)(Z)), d, rtol=1e-13)
    # at and near 0 the complex sinc takes its series: sinc'(0) = 0, sinc''(0) = -pi**2/3
    d2 = grad(grad(fnp.sinc, holomorphic=True), holomorphic=True)(0j)
    assert d2 == pytest.approx(-(np.pi**2) / 3, rel=1e-15)
    z = 1e-4 + 2e-4j
    u = np.pi * z
    assert grad(fnp.sinc, holomorphic=True)(z) == pytest.approx(
        np.pi * (-u / 3 + u**3 / 30), rel=1e-13
    )


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_hypot_at_the_origin_has_zero_derivatives(jac):
    f = lambda v: fnp.hypot(v[0], v[1])
    origin = np.zeros(2)
    np.testing.assert_array_equal(jac(f)(origin), [0.0, 0.0])
    np.testing.assert_array_equal(jac(jac(f))(origin), np.zeros((2, 2)))
    # and elsewhere it is (x, y) / hypot, with no overflow for large values
    np.testing.assert_allclose(jac(f)(np.array([3e200, 4e200])), [0.6, 0.8], rtol=1e-15)


def test_slopes_neither_overflow_nor_underflow_where_x_squared_would():
    gy, gx = grad(fnp.arctan2, argnums=(0, 1))(1e-200, 1e-200)
    assert (gy, gx) == pytest.approx((5e199, -5e199), rel=1e-14)
    gy, gx = grad(fnp.arctan2, argnums=(0, 1))(3e200, 4e200)
    assert (gy, gx) == pytest.approx((1.6e-201, -1.2e-201), rel=1e-14)
    assert grad(fnp.arcsinh)(1e200) == pytest.approx(1e-200, rel=1e-14)
    assert grad(fnp.arccosh)(1e200) == pytest.approx(1e-200, rel=1e-14)


def test_arctan2_gradient_and_its_nan_at_the_origin_as_jax():
    gy, gx = grad(fnp.arctan2, argnums=(0, 1))(1.0, 2.0)
    assert (gy, gx) == pytest.approx((2 / 5, -1 / 5), rel=1e-15)
    with np.errstate(invalid="ignore"):
        gy, gx = grad(fnp.arctan2, argnums=(0, 1))(0.0, 0.0)
    assert np.isnan(gy) and np.isnan(gx)
    assert fnp.atan2 is fnp.arctan2


@pytest.mark.parametrize("f", [fnp.logaddexp, fnp.logaddexp2])
def test_logaddexp_gradients_sum_to_one_even_where_the_result_is_infinite(f):
    g = grad(f, argnums=(0, 1))
    assert g(0.3, 0.3) == pytest.approx((0.5, 0.5), rel=1e-15)
    assert g(-np.inf, -np.inf) == (0.5, 0.5)
    assert g(np.inf, 3.0) == (1.0, 0.0)
    assert g(-np.inf, 3.0) == (0.0, 1.0)
    assert sum(g(800.0, 801.0)) == pytest.approx(1.0, rel=1e-15)
    # second derivative at a tie: sigmoid'(0) = 1/4 (times ln 2 in base 2)
    scale = 1.0 if f is fnp.logaddexp else math.log(2.0)
    assert grad(grad(f))(1.0, 1.0) == pytest.approx(scale / 4, rel=1e-14)


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_fmax_fmin_give_the_gradient_to_the_non_nan_operand(jac):
    x = np.array([1.0, np.nan, np.nan, 2.0, 0.5])
    y = np.array([np.nan, 3.0, np.nan, 2.0, 0.7])
    for name, ties_and_winner in [
        ("fmax", [1.0, 0.0, 0.5, 0.5, 0.0]),
        ("fmin", [1.0, 0.0, 0.5, 0.5, 1.0]),
    ]:
        f = getattr(fnp, name)
        dx = jac(lambda a: f(a, y))(x).diagonal()
        dy = jac(lambda b: f(x, b))(y).diagonal()
        np.testing.assert_array_equal(dx, ties_and_winner)
        np.testing.assert_array_equal(dx + dy, [1.0, 1.0, 1.0, 1.0, 1.0])
        np.testing.assert_array_equal(f(x, y), getattr(np, name)(x, y))


def test_copysign_slope_follows_both_signs_and_y_gets_nothing():
    x = np.array([2.0, -2.0, 2.0, -2.0, 0.0, 0.0])
    y = np.array([1.0, 1.0, -0.0, -3.0, 0.0, -1.0])
    np.testing.assert_array_equal(
        jacrev(lambda a: fnp.copysign(a, y))(x).diagonal(), [1.0, -1.0, -1.0, 1.0, 1.0, -1.0]
    )
    np.testing.assert_array_equal(
        jacfwd(lambda a: fnp.copysign(a, y))(x).diagonal(), [1.0, -1.0, -1.0, 1.0, 1.0, -1.0]
    )
    np.testing.assert_array_equal(jacrev(lambda b: fnp.copysign(x, b))(y), np.zeros((6, 6)))


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_fmod_and_remainder_slopes_are_one_and_minus_the_quotient(jac):
    x = np.array([7.5, -7.5, 7.5, -7.5, 6.0])
    y = np.array([2.0, 2.0, -2.0, -2.0, 4.0])
    for name, q in [
        ("fmod", np.trunc(x / y)),
        ("remainder", np.floor(x / y)),
        ("mod", np.floor(x / y)),
    ]:
        f = getattr(fnp, name)
        np.testing.assert_array_equal(f(x, y), getattr(np, name)(x, y))
        np.testing.assert_array_equal(jac(lambda a: f(a, y))(x), np.eye(5))
        np.testing.assert_array_equal(jac(lambda b: f(x, b))(y), np.diag(-q))


def test_nan_to_num_passes_the_gradient_only_where_x_is_finite():
    x = np.array([1.5, np.inf, -np.inf, np.nan, -0.5])
    g = grad(lambda v: fnp.sum(fnp.nan_to_num(v * 3.0, nan=1.0, posinf=2.0)))(x)
    np.testing.assert_array_equal(g, [3.0, 0.0, 0.0, 0.0, 3.0])
    np.testing.assert_array_equal(
        fnp.nan_to_num(x, nan=1.0, posinf=2.0), np.nan_to_num(x, nan=1.0, posinf=2.0)
    )
    assert fnp.nan_to_num(x) is not x and np.isnan(x[3])  # the user's array is not changed


def test_ldexp_is_linear_in_x_with_slope_two_to_the_i():
    i = np.array([3, -1, 0])
    np.testing.assert_array_equal(
        jacrev(lambda v: fnp.ldexp(v, i))(np.ones(3)), np.diag([8.0, 0.5, 1.0])
    )
    np.testing.assert_array_equal(
        jacfwd(lambda v: fnp.ldexp(v, i))(np.ones(3)), np.diag([8.0, 0.5, 1.0])
    )
    assert fnp.ldexp(np.float32(1.5), 2).dtype == np.float32


def test_float_power_is_float64_and_gradients_keep_the_input_dtype():
    x = np.array([1.5, 2.0], dtype=np.float32)
    assert fnp.float_power(x, 2).dtype == np.float64
    g = grad(lambda v: fnp.sum(fnp.float_power(v, 3)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 3 * x.astype(np.float64) ** 2, rtol=1e-7)
    assert fnp.pow is fnp.power


def test_cbrt_is_inf_at_zero_as_jax_and_fabs_has_slope_one_there():
    with np.errstate(divide="ignore"):
        assert grad(fnp.cbrt)(0.0) == np.inf
    assert _derivatives(fnp.fabs, 0.0, 2, "rev") == [1.0, 0.0]
    assert _derivatives(fnp.fabs, -1.0, 2, "fwd") == [-1.0, 0.0]


def test_non_differentiable_names_see_through_traced_values():
    g = grad(lambda x: x * fnp.heaviside(x, 0.5) + fnp.rint(x) + fnp.fix(x))(1.7)
    assert g == 1.0
    assert grad(lambda x: x * fnp.signbit(x))(-2.0) == 1.0
    assert grad(lambda x: np.floor_divide(x, 0.5) * x)(1.2) == 2.0
    assert grad(lambda x: x * fnp.allclose(x, 1.0))(1.0) == 1.0


# --- NumPy's ufunc keywords (issue 15) ------------------------------------------------------------


def test_ufunc_dtype_casting_and_signature_choose_numpys_loop_on_traced_values():
    x = np.array([0.3, -1.2, 2.0])
    out, pull = vjp(lambda x: fnp.arcsinh(x, dtype=np.float32), x)
    assert out.dtype == np.float32 and np.array_equal(out, np.arcsinh(x, dtype=np.float32))
    assert pull(np.ones(3, np.float32))[0].dtype == np.float64  # back in the input's dtype
    # NumPy's own casting errors, on traced values as on plain ones
    for call in (
        lambda x: fnp.hypot(x, x.astype(np.float32), casting="no"),
        lambda x: fnp.arctan(x + 1j, dtype=np.float64),
    ):
        with pytest.raises(TypeError, match="[Cc]annot cast"):
            grad(lambda x: fnp.sum(fnp.real(call(x))))(x)
        with pytest.raises(TypeError, match="[Cc]annot cast"):
            call(x)
    # NumPy's ufuncs on traced values bring their keywords along
    g = grad(lambda x: fnp.sum(np.logaddexp(x, 0.0, dtype=np.float64)))(x.astype(np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-x)), rtol=1e-6)


def test_ufunc_keywords_without_meaning_for_traced_values_are_refused_by_name():
    x = np.array([0.3, -1.2])
    for keyword, value, says in [
        ("out", np.zeros(2), "cannot write into an array"),
        ("where", x > 0, "fgrad.numpy.where"),
        ("order", "F", "memory layout"),
        ("subok", False, "subclass"),
    ]:
        with pytest.raises(TypeError, match=rf"arcsinh\(\.\.\., {keyword}=\.\.\.\).*{says}"):
            grad(lambda x: fnp.sum(fnp.arcsinh(x, **{keyword: value})))(x)
    # on plain values, every keyword is NumPy's own (the where= mask included)
    got = fnp.arcsinh(x, order="F")
    np.testing.assert_array_equal(got, np.arcsinh(x))
    with pytest.raises(TypeError, match="out="):
        fnp.arcsinh(x, out=np.zeros(2))  # fgrad's differentiable functions never write


def test_a_scipy_ufunc_on_a_traced_value_is_named_as_scipys():
    special = pytest.importorskip("scipy.special")
    message = ""
    try:
        grad(lambda x: special.struve(1.0, x))(2.0)
    except TypeError as error:
        message = str(error)
    assert "SciPy's scipy.special.struve" in message and "NumPy's" not in message
    # every NumPy ufunc has a mirror but isnat, of dates, which fgrad leaves out on purpose
    with pytest.raises(TypeError, match="NumPy's numpy.isnat.*leaves isnat out on purpose"):
        grad(lambda x: np.isnat(x))(2.0)
    # a method of a ufunc without a mirror is named with the method
    with pytest.raises(TypeError, match="SciPy's scipy.special.struve.outer was applied"):
        grad(lambda x: special.struve.outer(x, x)[0, 0])(np.ones(2))


def test_real_if_close_and_the_complex_predicates_are_numpys():
    z = np.array([1.5 + 1e-15j, -2.0 + 0j])
    for tol in (100, 1e-20, 1e-10):
        np.testing.assert_array_equal(fnp.real_if_close(z, tol), np.real_if_close(z, tol))
        out = vjp(lambda z: fnp.real_if_close(z, tol), z)[0]
        assert out.dtype == np.real_if_close(z, tol).dtype
    # the real part: d Re(z) is Re(dz); the cotangent of z is the real cotangent, as for real()
    np.testing.assert_array_equal(grad(lambda z: fnp.sum(fnp.real_if_close(z)))(z), [1, 1])
    assert fnp.iscomplex(z).tolist() == [True, False] and fnp.isreal(z).tolist() == [False, True]


def test_allclose_under_vmap_answers_each_row_as_a_loop_does():
    # NumPy's allclose reduces a whole array: run on the stacked rows, it answered for the
    # batch (False for every row when one row differs) where a loop answers per row
    X = np.array([[0.3, 0.3], [0.3, 0.5], [1.0, 1.0]])
    B = np.array([[0.3, 0.3], [0.3, 0.3], [1.0, 1.0]])

    def keep_if_close(z):
        return z * np.allclose(z, 0.3)

    loop = np.stack([keep_if_close(r) for r in X])
    np.testing.assert_array_equal(fgrad.vmap(keep_if_close)(X), loop)
    np.testing.assert_array_equal(fgrad.jit(fgrad.vmap(keep_if_close))(X), loop)
    expected = [np.allclose(x, b) for x, b in zip(X, B)]
    np.testing.assert_array_equal(fgrad.vmap(np.allclose)(X, B), expected)
    np.testing.assert_array_equal(fgrad.vmap(lambda b: fnp.allclose(X[0], b))(B), [1, 1, 0])
    np.testing.assert_array_equal(fgrad.vmap(np.allclose, in_axes=(1, None))(X.T, 0.3), [1, 0, 0])
    nested = fgrad.vmap(fgrad.vmap(lambda z: np.allclose(z, 0.3)))(np.stack([X, X + 1]))
    np.testing.assert_array_equal(nested, [[1, 0, 0], [0, 0, 0]])
