"""Complex numbers, with JAX's convention: for a real-valued f of z = x + iy the gradient is
df/dx - i df/dy (PyTorch returns the conjugate); holomorphic=True gives f'(z)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jacrev, jvp, value_and_grad, vjp
from fgrad.test_util import check_grads

Z = np.array([1 + 2j, -0.5 + 0.3j, 0.7 - 1.1j])


def test_grad_of_abs_squared_at_1_plus_2j_is_2_minus_4j():
    assert grad(lambda z: fnp.abs(z) ** 2)(1 + 2j) == 2 - 4j
    assert grad(lambda z: fnp.real(z * fnp.conj(z)))(1 + 2j) == 2 - 4j


def test_gradient_of_a_real_function_is_d_dx_minus_i_d_dy():
    # f(x + iy) = x^2 y + sin(y): df/dx = 2xy, df/dy = x^2 + cos(y)
    f = lambda z: fnp.real(z) ** 2 * fnp.imag(z) + fnp.sin(fnp.imag(z))
    x, y = 0.7, -1.3
    assert grad(f)(x + 1j * y) == pytest.approx(2 * x * y - 1j * (x**2 + np.cos(y)))
    # angle = atan2(y, x): d/dx = -y / r^2, d/dy = x / r^2
    r2 = x * x + y * y
    assert grad(fnp.angle)(x + 1j * y) == pytest.approx(-y / r2 - 1j * x / r2)


@pytest.mark.parametrize(
    "f, df",
    [
        (lambda z: z**2, lambda z: 2 * z),
        (fnp.sin, np.cos),
        (fnp.exp, np.exp),
        (fnp.log, lambda z: 1 / z),
        (lambda z: 1 / z, lambda z: -1 / z**2),
        (lambda z: fnp.sqrt(z) * z, lambda z: 1.5 * np.sqrt(z)),
        (lambda z: fnp.tanh(z) ** 3, lambda z: 3 * np.tanh(z) ** 2 * (1 - np.tanh(z) ** 2)),
    ],
)
def test_holomorphic_derivatives_in_both_modes(f, df):
    for z in Z:
        assert grad(f, holomorphic=True)(z) == pytest.approx(df(z), rel=1e-12)
        assert jvp(f, (z,), (1.0 + 0j,))[1] == pytest.approx(df(z), rel=1e-12)
    np.testing.assert_allclose(
        jacrev(lambda z: f(z), holomorphic=True)(Z), np.diag(df(Z)), rtol=1e-12
    )
    np.testing.assert_allclose(
        jacfwd(lambda z: f(z), holomorphic=True)(Z), np.diag(df(Z)), rtol=1e-12
    )


@pytest.mark.parametrize(
    "f",
    [
        fnp.sin,
        fnp.exp,
        fnp.log,
        fnp.sqrt,
        fnp.tanh,
        fnp.conj,
        fnp.real,
        fnp.imag,
        fnp.angle,
        fnp.abs,
        lambda z: z * fnp.conj(z),
        lambda z: 1 / z,
        lambda z: z @ z,
        lambda z: z**3,
        lambda z: fnp.sum(fnp.abs(z) ** 2),
        lambda z: fnp.real(z) * fnp.imag(z) ** 2,
        lambda z: fnp.abs(fnp.exp(z)) * fnp.angle(z),
        lambda z: z.conj().real * z.imag,
        lambda z: fnp.where(np.array([True, False, True]), z, 2.0) * z,
        lambda z: fnp.stack([z, fnp.conj(z)])[:, 1:],
    ],
)
def test_complex_rules_match_finite_differences_in_both_modes_to_order_2(f):
    check_grads(f, (Z,), order=2)


def test_check_grads_catches_a_rule_that_conjugates_the_cotangent():
    # A PyTorch-convention rule for z * c (ct * conj(c)) is wrong under fgrad's convention.
    c = 0.3 + 0.8j

    @fgrad.primitive
    def scale(z):
        return z * c, lambda ct: (ct * np.conj(c),)

    with pytest.raises(AssertionError, match="reverse mode"):
        check_grads(scale, (Z,), order=1, modes="rev")


def test_real_inputs_through_complex_intermediates_get_real_gradients():
    x = np.array([0.3, -1.2], dtype=np.float32)
    g = grad(lambda x: fnp.sum(fnp.abs(fnp.exp(1j * x) * (2 + x))))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.sign(2 + x), rtol=1e-6)  # |e^{ix}| = 1


def test_complex64_in_complex64_out():
    z = Z.astype(np.complex64)
    assert grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(z).dtype == np.complex64
    assert vjp(fnp.sin, z)[1](np.ones(3, np.complex64))[0].dtype == np.complex64
    assert jvp(fnp.sin, (z,), (z,))[1].dtype == np.complex64


def test_abs_and_angle_at_zero_are_finite():
    assert grad(fnp.abs)(0j) == 0 and grad(fnp.angle)(0j) == 0
    assert jvp(fnp.abs, (0j,), (1 + 1j,))[1] == 0


def test_holomorphic_misuse_says_what_to_do():
    with pytest.raises(TypeError, match="requires a real output.*holomorphic=True"):
        grad(lambda z: z**2)(1 + 2j)
    with pytest.raises(TypeError, match="holomorphic=True requires a complex output"):
        grad(fnp.abs, holomorphic=True)(1 + 2j)
    with pytest.raises(TypeError, match=r"requires complex inputs.*astype\(complex\)"):
        value_and_grad(lambda z: z * 1j, holomorphic=True)(1.0)
    for jac in (jacfwd, jacrev):  # a complex output of a complex input
        with pytest.raises(TypeError, match="not both.*pass holomorphic=True"):
            jac(fnp.sin)(Z)


# --- linear algebra of complex input --------------------------------------------------------------

_rng = np.random.default_rng(5)
_M = _rng.standard_normal((3, 3)) + 1j * _rng.standard_normal((3, 3)) + 2 * np.eye(3)
_HERM = _M + _M.conj().T
la = fnp.linalg


def _df_dx_minus_i_df_dy(f, z, h=1e-6):
    """JAX's gradient of a real-valued f, entry by entry, from central differences along the
    real and the imaginary axis of each entry."""
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[idx] = h
        dx = (f(z + e) - f(z - e)) / (2 * h)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * h)
        g[idx] = dx - 1j * dy
    return g


@pytest.mark.parametrize(
    "f",
    [
        lambda a: la.norm(a),
        lambda a: la.norm(a, 2),
        lambda a: la.norm(a[0], 3),
        lambda a: la.cond(a),
        lambda a: la.svdvals(a)[1],
        lambda a: la.eigvalsh(a)[0] * la.eigvalsh(a)[2],
        lambda a: la.slogdet(a).logabsdet,
        lambda a: fnp.real(la.slogdet(a).sign),
        lambda a: fnp.abs(la.det(a)) ** 2,
        lambda a: fnp.sum(fnp.abs(la.qr(a).R) ** 2 * np.arange(9.0).reshape(3, 3)),
        lambda a: fnp.sum(fnp.imag(la.cholesky(a @ fnp.conj(a.T)))),
        lambda a: fnp.sum(fnp.real(la.pinv(a[:, :2]))),
        lambda a: fnp.imag(la.eigvals(a)[0]),
        lambda a: fnp.real(la.eig(a)[1][0, 2]),
        lambda a: fnp.sum(fnp.abs(la.eigh(a)[1]) ** 3),
        lambda a: (
            fnp.sum(fnp.real(la.lstsq(a[:, :2], a[:, 2])[0])) + la.lstsq(a[:, :2], a[:, 2])[1][0]
        ),
    ],
    ids=[
        "norm",
        "norm-2",
        "norm-3",
        "cond",
        "svdvals",
        "eigvalsh",
        "logabsdet",
        "sign",
        "|det|^2",
        "qr",
        "cholesky",
        "pinv",
        "eigvals",
        "eig",
        "eigh",
        "lstsq",
    ],
)
def test_linalg_gradients_of_complex_input_are_df_dx_minus_i_df_dy(f):
    z = _HERM if {"eigh", "eigvalsh"} & set(f.__code__.co_names) else _M
    want = _df_dx_minus_i_df_dy(lambda x: float(f(x)), z)
    np.testing.assert_allclose(grad(f)(z), want, rtol=1e-6, atol=1e-7)


def test_inverse_trigonometric_derivatives_on_branch_cuts_take_numpys_side():
    """On a cut, NumPy's arcsin(2 + 0j) is the limit from above, arcsin(2 - 0j) from below;
    the derivative was the other side's (formulas in x lost the sign of the zero imaginary
    part: 1 - (2 + 0j) is -1 + 0j): grad of imag(arcsin(x + 0j)) at 2 gave -0.577 for 0.577.
    Then grad and jvp read the slope off NumPy's value but Taylor mode (derivative, jet) kept
    the formulas in x, and took the other side; the formulas keep the zero's sign now, in every
    mode, complex64 too."""
    h = 1e-7
    points = {
        "arcsin": [2 + 0j, complex(2, -0.0), -2 + 0j, complex(-2, -0.0)],
        "arccos": [2 + 0j, complex(2, -0.0), -2 + 0j, complex(-2, -0.0)],
        "arccosh": [-2 + 0j, complex(-2, -0.0), 0.5 + 0j, complex(0.5, -0.0)],
        "arcsinh": [complex(0.0, 2), complex(-0.0, 2), complex(0.0, -2), complex(-0.0, -2)],
    }
    for name, zs in points.items():
        f, theirs = getattr(fnp, name), getattr(np, name)
        for z in zs:
            # along the cut, where the side (the zero's sign) stays the same
            step = h if name != "arcsinh" else 1j * h
            bump = (
                (lambda z, d: complex(z.real + d.real, z.imag))
                if name != "arcsinh"
                else (lambda z, d: complex(z.real, z.imag + d.imag))
            )
            fd = (theirs(bump(z, step)) - theirs(bump(z, -step))) / (2 * step)
            for dtype, tol in ((np.complex128, 1e-6), (np.complex64, 1e-3)):
                x = dtype(z)
                modes = {
                    "grad": fgrad.grad(f, holomorphic=True)(x),
                    "jvp": fgrad.jvp(f, (x,), (dtype(1),))[1],
                    "jacfwd": fgrad.jacfwd(f, holomorphic=True)(x),
                    "derivative": fgrad.derivative(f, 1)(x),
                    "jet": fgrad.jet(f, (x,), ([dtype(1)],))[1][0],
                    "jit(grad)": fgrad.jit(fgrad.grad(f, holomorphic=True))(x),
                }
                for mode, got in modes.items():
                    assert abs(complex(got) - fd) < tol * (1 + abs(fd)), (name, z, mode, got, fd)
    x = 2.0
    slope = fgrad.grad(lambda x: fnp.imag(fnp.arcsin(fnp.asarray(x).astype(complex))))(x)
    np.testing.assert_allclose(slope, 1 / np.sqrt(x * x - 1), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_inverse_trigonometric_derivatives_at_branch_points_are_not_finite(dtype):
    """At a branch point the derivative is infinite (|f(z + h) - f(z)| grows as sqrt(h)), as
    arcsin'(1.0) is inf for real x. Read off the value, 1/cos(arcsin(1 + 0j)) was 1/cos(fl(pi/2))
    = 1.6e16 (in complex64 -2.3e7, of the wrong sign); now it is 1/0, nan + nanj in NumPy's
    complex arithmetic, in every mode."""
    points = {
        "arcsin": [1 + 0j, -1 + 0j],
        "arccos": [1 + 0j, -1 + 0j],
        "arccosh": [1 + 0j, -1 + 0j],
        "arcsinh": [1j, -1j],
    }
    for name, zs in points.items():
        f = getattr(fnp, name)
        for z in zs:
            x = dtype(z)
            with np.errstate(divide="ignore", invalid="ignore"):
                step = 1e-12 if dtype == np.complex128 else 1e-6
                grows = abs(getattr(np, name)(x + step * (x / abs(x))) - getattr(np, name)(x))
                assert grows > 1e3 * step  # the difference quotient diverges: no finite slope
                for got in (
                    fgrad.grad(f, holomorphic=True)(x),
                    fgrad.jvp(f, (x,), (dtype(1),))[1],
                    fgrad.derivative(f, 1)(x),
                    fgrad.jit(fgrad.grad(f, holomorphic=True))(x),
                ):
                    assert not np.isfinite(got), (name, z, got)


def test_log_ndtr_of_complex_input_and_jacfwd_of_a_real_output_refused():
    """log_ndtr's derivative cast a complex x to real (phi/Phi lost its imaginary part:
    1.6749 for 1.6749 - 0.4128j); jacfwd(holomorphic=True) of abs returned a number, where
    jacrev, grad and JAX refuse a real output."""
    special = pytest.importorskip("fgrad.scipy.special")
    import scipy.special as sc

    z = -1.2 + 0.5j
    phi = np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    want = phi / sc.ndtr(z)
    np.testing.assert_allclose(fgrad.grad(special.log_ndtr, holomorphic=True)(z), want, rtol=1e-13)
    nested = fgrad.grad(fgrad.grad(special.log_ndtr, holomorphic=True), holomorphic=True)(z)
    np.testing.assert_allclose(fgrad.derivative(special.log_ndtr, 2)(z), nested, rtol=1e-13)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires complex outputs"):
        fgrad.jacfwd(fnp.abs, holomorphic=True)(np.array([1 + 1j, 2j]))


def test_sign_of_complex_input_is_differentiable():
    """NumPy 2's sign(z) is z / |z|, which turns with the phase of z: its derivative was 0 (a
    constant, as for real input, and as JAX has it). Now i sign Im(conj(sign) dz) / |z| in both
    modes, to second order and in Taylor mode; 0 at z = 0; real input keeps derivative 0."""
    w = np.array([0.3 - 1j, 2 + 0.5j, -1 + 1j])
    f = lambda z: fnp.sum(fnp.real(fnp.sign(z) * w))
    # f = sum Re(w z / |z|): df/dx - i df/dy, by hand
    r = np.abs(Z)
    dfdx = np.real(w / r - w * Z * Z.real / r**3)
    dfdy = np.real(1j * w / r - w * Z * Z.imag / r**3)
    np.testing.assert_allclose(grad(f)(Z), dfdx - 1j * dfdy, rtol=1e-13)
    check_grads(lambda z: fnp.sign(z) * w, (Z,), order=2)
    v = np.array([1 + 1j, 0.5 - 2j, -1j])
    # the forward rule, by hand: d sign = dz / |z| - z Re(conj(z) dz) / |z|^3; both rules are
    # made from one expression, the reverse one its transpose (checked to third order)
    tangent = v / r - Z * np.real(np.conj(Z) * v) / r**3
    np.testing.assert_allclose(jvp(fnp.sign, (Z,), (v,))[1], tangent, rtol=1e-13)
    check_grads(fnp.sign, (Z,), order=3, modes=("fwd", "rev"))
    second = fgrad.jet(fnp.sign, (Z,), ((v, 0 * v),))[1][1]
    nested = jvp(lambda t: jvp(lambda s: fnp.sign(Z + s * v), (t,), (1.0,))[1], (0.0,), (1.0,))
    np.testing.assert_allclose(second, nested[1], rtol=1e-12)
    assert grad(lambda z: fnp.real(fnp.sign(z)))(0j) == 0
    assert grad(lambda x: fnp.sign(x) * x)(-2.0) == -1.0
    assert fnp.sign(Z.astype(np.complex64)).dtype == np.complex64
    np.testing.assert_array_equal(fgrad.jit(fnp.sign)(Z), np.sign(Z))


def test_abs_and_angle_gradients_at_extreme_magnitudes():
    # |z|^2 underflowed below |z| = 1.5e-162 (angle's gradient 0) and overflowed above 1e154;
    # NumPy's complex division by a subnormal |z| overflowed (abs's gradient nan at 5e-320)
    # (z = s (1 + i): conj(z) / |z| = (1 - i) / sqrt(2), -i / z = -(1 + i) / (2 s))
    for scale in (5e-320, 1e-200, 1e-150, 1.0, 1e150, 1e200):
        z = scale * (1 + 1j)
        want = (1 - 1j) / np.sqrt(2)
        rtol = 1e-4 if scale < 1e-300 else 1e-12  # (|z| of subnormal parts: 4 digits)
        np.testing.assert_allclose(fgrad.grad(fnp.abs)(z), want, rtol=rtol)
        if scale > 1e-300:  # (beyond, -i / z overflows)
            want = -(1 + 1j) / 2 / scale
            np.testing.assert_allclose(fgrad.grad(fnp.angle)(z), want, rtol=1e-12)


def test_complex_spacings_weights_and_fill_values_as_numpy_under_every_transform():
    """Probe EG: gradient(f, 0.5+0.5j) raised "float() argument ... not 'complex'" under jvp
    and jit (a scalar spacing was read by float()); cov of complex data with weights warned
    of a discarded imaginary part (its weights were cast to the data's complex dtype), which
    NumPy does not; fill_diagonal(real a, 1j, inplace=False) dropped the imaginary part
    under every transform where eager raises, as NumPy's assignment of a Python complex."""
    import warnings

    z = np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j, 2 + 2j])
    spaced = lambda a: fnp.gradient(a, 0.5 + 0.5j)
    want = np.gradient(z, 0.5 + 0.5j)
    np.testing.assert_array_equal(fgrad.jit(spaced)(z), want)
    np.testing.assert_array_equal(jvp(spaced, (z,), (np.ones(4, complex),))[0], want)
    data = (np.arange(6) * (1 + 1j)).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for weights in ({"aweights": np.array([1.0, 2.0, 3.0])}, {"fweights": [1, 2, 3]}):
            np.testing.assert_allclose(fnp.cov(data, **weights), np.cov(data, **weights))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    fill = lambda b: fnp.fill_diagonal(b.reshape(2, 2), 1j, inplace=False)
    for transform in (fgrad.jit, fgrad.vmap, lambda f: grad(lambda b: fnp.sum(f(b)))):
        arg = x[None] if transform is fgrad.vmap else x
        with pytest.raises(TypeError, match="not 'complex'"):
            transform(fill)(arg)
