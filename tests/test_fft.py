"""Closed-form checks of `fgrad.numpy.fft`: values and dtypes as NumPy's, vjps that are
transposes (JAX's convention: never the adjoint), the Hermitian weighting of `irfft`, Parseval,
round trips, and errors that say what to do. The gradient table (tests/rows_fft.py) checks
every transform against finite differences."""

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad import grad, jacfwd, jacrev, jvp, vjp
from fgrad.test_util import check_grads

F = fnp.fft
RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 6))
Z = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)


def _dft(n):
    k = np.arange(n)
    return np.exp(-2j * np.pi * np.outer(k, k) / n)


@pytest.mark.parametrize(
    "name",
    [
        "fft",
        "ifft",
        "rfft",
        "irfft",
        "hfft",
        "ihfft",
        "fftn",
        "ifftn",
        "rfftn",
        "irfftn",
        "fft2",
        "ifft2",
        "rfft2",
        "irfft2",
        "fftshift",
        "ifftshift",
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_dtypes_match_numpy(name, dtype):
    x = X.astype(dtype)
    ours, theirs = getattr(F, name)(x), getattr(np.fft, name)(x)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_jacobian_of_fft_is_the_dft_matrix_in_both_modes():
    for n in (4, 5):
        z = Z[:n]
        np.testing.assert_allclose(jacfwd(F.fft, holomorphic=True)(z), _dft(n), atol=1e-12)
        np.testing.assert_allclose(jacrev(F.fft, holomorphic=True)(z), _dft(n), atol=1e-12)
        np.testing.assert_allclose(
            jacrev(F.ifft, holomorphic=True)(z), np.conj(_dft(n)) / n, atol=1e-12
        )


def test_vjp_of_fft_is_the_transpose_not_the_adjoint():
    ct = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)
    for norm in (None, "ortho", "forward"):
        np.testing.assert_allclose(
            vjp(lambda z: F.fft(z, norm=norm), Z)[1](ct)[0], np.fft.fft(ct, norm=norm), atol=1e-12
        )
    # n larger than the input: the padding's transpose cuts the cotangent back
    ct8 = RNG.standard_normal(8) + 1j * RNG.standard_normal(8)
    np.testing.assert_allclose(
        vjp(lambda z: F.fft(z, 8), Z)[1](ct8)[0], (ct8 @ _dft(8))[:6], atol=1e-12
    )


def test_gradient_of_one_real_frequency_is_a_cosine():
    n, k = 6, 2
    g = grad(lambda x: fnp.real(F.fft(x))[k])(np.zeros(n))
    np.testing.assert_allclose(g, np.cos(2 * np.pi * k * np.arange(n) / n), atol=1e-12)
    g = grad(lambda x: fnp.imag(F.rfft(x))[k])(np.zeros(n))
    np.testing.assert_allclose(g, -np.sin(2 * np.pi * k * np.arange(n) / n), atol=1e-12)


def test_parseval_gives_gradient_2x_and_2_conj_z():
    np.testing.assert_allclose(
        grad(lambda x: fnp.sum(fnp.abs(F.fft(x, norm="ortho")) ** 2))(X), 2 * X, atol=1e-12
    )
    # JAX's convention: the gradient of sum |z|^2 is 2 conj(z), through any unitary transform
    np.testing.assert_allclose(
        grad(lambda z: fnp.sum(fnp.abs(F.fftn(z, norm="ortho")) ** 2))(Z),
        2 * np.conj(Z),
        atol=1e-12,
    )


@pytest.mark.parametrize("n", [4, 5])
def test_irfft_ignores_the_imaginary_parts_numpy_ignores(n):
    """The cotangent of irfft is w conj(rfft(ct)) / n with w = 1 at the zero frequency and, for
    even n, the Nyquist frequency, 2 elsewhere, so the imaginary parts irfft drops get 0."""
    z = Z[: n // 2 + 1]
    ct = RNG.standard_normal(n)
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    got = vjp(lambda z: F.irfft(z, n), z)[1](ct)[0]
    np.testing.assert_allclose(got, w * np.conj(np.fft.rfft(ct)) / n, atol=1e-12)
    assert got[0].imag == 0 and (n % 2 or got[-1].imag == 0)
    # in forward mode a change of those imaginary parts changes nothing
    t = np.zeros(n // 2 + 1, complex)
    t[0] = 1j
    if n % 2 == 0:
        t[-1] = 1j
    assert np.all(jvp(lambda z: F.irfft(z, n), (z,), (t,))[1] == 0)


@pytest.mark.parametrize("n", [5, 6])
def test_round_trip_has_identity_jacobian(n):
    x = RNG.standard_normal(n)
    np.testing.assert_allclose(jacfwd(lambda x: F.irfft(F.rfft(x), n))(x), np.eye(n), atol=1e-12)
    np.testing.assert_allclose(
        jacrev(lambda x: F.ihfft(F.hfft(x[: n // 2 + 1] + 0j, n)).real)(x),
        np.diag([1.0] * (n // 2 + 1) + [0.0] * (n - n // 2 - 1))[: n // 2 + 1],
        atol=1e-12,
    )


def test_float32_gradients_stay_float32():
    x = X.astype(np.float32)
    assert grad(lambda x: fnp.sum(fnp.abs(F.rfft2(x)) ** 2))(x).dtype == np.float32
    assert grad(lambda x: fnp.sum(F.irfft(x, 7) ** 2))(x).dtype == np.float32
    z = Z.astype(np.complex64)
    assert grad(lambda z: fnp.sum(fnp.abs(F.ifft(z, 9)) ** 2))(z).dtype == np.complex64


def test_shifts_invert_each_other_and_match_numpy():
    x = RNG.standard_normal((3, 5))
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(F.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(F.ifftshift(F.fftshift(x, axes), axes), x)
    np.testing.assert_array_equal(jacfwd(lambda x: F.ifftshift(F.fftshift(x)))(x[0]), np.eye(5))


def test_shifts_of_a_scalar_are_refused_as_numpy_refuses_them():
    """NumPy's fftshift and ifftshift of a 0-d input raise (ValueError, inside its roll);
    fgrad returned the scalar. Now a ValueError that names x and says what to do."""
    for name in ("fftshift", "ifftshift"):
        for x in (np.array(1.5), 1.5, np.float32(1.5)):
            for axes in (None, ()):
                with pytest.raises(ValueError):
                    getattr(np.fft, name)(x, axes)
                with pytest.raises(ValueError, match=rf"{name}: x is a scalar \(shape \(\)"):
                    getattr(F, name)(x, axes)
        with pytest.raises(ValueError, match="x is a scalar"):
            grad(getattr(F, name))(1.5)


def test_frequencies_are_constants_but_a_traced_spacing_is_differentiated():
    np.testing.assert_array_equal(F.fftfreq(5, 0.5), np.fft.fftfreq(5, 0.5))
    np.testing.assert_array_equal(F.rfftfreq(5, 0.5), np.fft.rfftfreq(5, 0.5))
    # sum(fftfreq(4, d)) = -0.5 / d, whose derivative is 0.5 / d^2
    assert grad(lambda d: fnp.sum(F.fftfreq(4, d)))(2.0) == pytest.approx(0.125)
    check_grads(lambda d: F.rfftfreq(7, d), (0.7,))
    # a traced spacing gives NumPy's values bit for bit (the integers times 1 / (n d))
    for d in (np.float64(0.37), np.float32(0.37), np.complex128(0.37 + 0.05j), -0.3):
        for ours, numpys in [(F.fftfreq, np.fft.fftfreq), (F.rfftfreq, np.fft.rfftfreq)]:
            for n in (1, 4, 7):
                value = vjp(lambda d: ours(n, d), d)[0]
                expected = numpys(n, d)
                assert value.dtype == expected.dtype
                np.testing.assert_array_equal(value, expected)


def test_frequencies_of_a_small_integer_or_bool_length_under_jit_are_numpys():
    # jit read n as a Python int: fftfreq(np.uint8(2)) gave [0, -0.5] for NumPy's [0, 127.5]
    # (its uint8 -(n // 2) wraps), and rfftfreq(True) raised "n should be an integer"
    import fgrad

    for ours, numpys, bool_ok in [
        (F.fftfreq, np.fft.fftfreq, False),
        (F.rfftfreq, np.fft.rfftfreq, True),
    ]:
        for n in (np.uint8(2), np.uint8(4), np.int8(5), 6) + ((True,) if bool_ok else ()):
            with np.errstate(over="ignore"):
                want = numpys(n)
                jitted = fgrad.jit(ours)
                for got in (jitted(n), jitted(n), vjp(lambda d: ours(n, d), 1.0)[0]):
                    assert got.dtype == want.dtype
                    np.testing.assert_array_equal(got, want)


def test_repeated_axes_transform_twice_as_numpy():
    x = RNG.standard_normal((4, 3))
    np.testing.assert_allclose(F.fftn(x, axes=(0, 0)), np.fft.fftn(x, axes=(0, 0)), atol=1e-12)
    check_grads(lambda x: fnp.abs(F.fftn(x, axes=(0, 0), norm="ortho")) ** 2, (x,))


@pytest.mark.parametrize(
    "name, s, axes",
    [
        ("irfftn", (2, None), (0, 1)),  # None is irfft's default length 2 (m - 1), not m
        ("irfft2", (None, None), (-2, -1)),
        ("irfftn", (3, None), (1, 1)),  # an axis given twice: m after the first transform
        ("fftn", (None, 3), (0, 0)),  # None: the length when the axis is transformed
        ("rfftn", (None, 4), (1, 0)),
    ],
)
def test_none_in_s_is_the_default_n_of_that_axis_as_numpy(name, s, axes):
    # irfftn(a, s=(2, None)) had shape (2, 4) (None was read as -1) where NumPy's is (2, 6),
    # and no warning
    a = RNG.standard_normal((2, 4))
    if not name.startswith("rfft"):
        a = a + 1j * RNG.standard_normal((2, 4))
    with pytest.warns(DeprecationWarning, match="containing `None` values to `s`"):
        expected = getattr(np.fft, name)(a, s=s, axes=axes)
    with pytest.warns(DeprecationWarning, match="containing `None` values to `s`") as ours:
        got = getattr(F, name)(a, s=s, axes=axes)
    assert ours[0].filename == __file__  # the caller's line
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    with pytest.warns(DeprecationWarning):
        check_grads(lambda a: fnp.abs(getattr(F, name)(a, s=s, axes=axes)) ** 2, (a,), order=2)


def test_a_bool_is_not_a_length():
    # fft(x, n=True) was n=1 (NumPy: TypeError, an integer is required)
    for call in (lambda: F.fft(X, n=True), lambda: F.irfftn(X, s=(True, 2), axes=(0, 1))):
        with pytest.raises(TypeError, match="must be an integer, got True"):
            call()


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match="norm='bad'.*'ortho'"):
        F.fft(X, norm="bad")
    with pytest.raises(ValueError, match="n=0.*>= 1"):
        F.fft(X, 0)
    with pytest.raises(TypeError, match="rfft takes a real input.*use the complex transform"):
        F.rfft(Z)
    with pytest.raises(ValueError, match="axis 2 is out of bounds.*shape \\(3, 6\\)"):
        F.fft(X, axis=2)
    with pytest.raises(ValueError, match="s=\\(4,\\) and axes=\\(0, 1\\) have different lengths"):
        F.fftn(X, s=(4,), axes=(0, 1))
    with pytest.raises(ValueError, match="pass n"):
        F.irfft(np.ones(1))
    with pytest.raises(TypeError, match=r"out=\.\.\.\): argument 'a' \(shape \(3, 6\).*traced"):
        grad(lambda x: fnp.sum(fnp.real(F.fft(x, out=np.empty((3, 6), complex)))))(X)
    with pytest.raises(TypeError, match="n is a traced value"):
        grad(lambda x: fnp.sum(fnp.real(F.fft(np.ones(3), x))))(3.0)


@pytest.mark.parametrize(
    "name",
    ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "fft2", "ifft2"]
    + ["rfftn", "rfft2", "irfftn", "irfft2"],
)
def test_out_on_plain_input_is_numpys(name):
    # as matmul(..., out=): plain input is NumPy's own call. Where NumPy writes into out and
    # returns it, so does fgrad; where it does not (NumPy 2.4's hfft, ifft2, irfft2 ignore
    # out), the value returned is still NumPy's
    expected = getattr(np.fft, name)(X)
    numpy_buf, buf = np.empty_like(expected), np.empty_like(expected)
    writes = getattr(np.fft, name)(X, out=numpy_buf) is numpy_buf
    got = getattr(F, name)(X, out=buf)
    np.testing.assert_array_equal(got, expected)
    if writes:
        assert got is buf


def test_the_callers_array_is_not_modified():
    x = X.copy()
    grad(lambda x: fnp.sum(fnp.abs(F.fft(x, 9)) ** 2) + fnp.sum(F.irfft(x, 4) ** 2))(x)
    np.testing.assert_array_equal(x, X)
