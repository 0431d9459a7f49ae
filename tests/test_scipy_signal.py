"""fgrad.scipy.signal beyond the gradient table (tests/rows_scipy_signal.py): values equal
SciPy's in every mode, dimension and method, closed-form gradients, the transpose of a
convolution is a correlation, errors."""

import itertools

import numpy as np
import pytest
import scipy.signal as ss

import fgrad
import fgrad.numpy as fnp
import fgrad.scipy.signal as sig
from fgrad import grad, hessian, jvp, vjp
from fgrad.test_util import check_grads

RNG = np.random.default_rng(3)
PAIRS = [
    ((5,), (3,)),
    ((3,), (5,)),
    ((6,), (6,)),
    ((4, 3), (2, 2)),
    ((2, 2), (4, 3)),
    ((4, 3), (4, 1)),
    ((3, 4, 2), (2, 3, 2)),
    ((), ()),
]


def _traced(f, *args):
    return jvp(f, args, tuple(np.zeros_like(a) for a in args))[0]


@pytest.mark.parametrize(
    "pair, mode, name",
    list(
        itertools.product(
            PAIRS, ["full", "same", "valid"], ["convolve", "correlate", "fftconvolve"]
        )
    ),
)
def test_values_equal_scipys_plain_and_traced(pair, mode, name):
    x, k = RNG.standard_normal(pair[0]), RNG.standard_normal(pair[1])
    expected = getattr(ss, name)(x, k, mode)
    traced = _traced(lambda x, k: getattr(sig, name)(x, k, mode), x, k)
    for out in (getattr(sig, name)(x, k, mode), traced):
        assert np.shape(out) == np.shape(expected)
        np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["direct", "fft", "auto"])
def test_methods_agree_with_scipy(method):
    x, k = RNG.standard_normal((7, 5)), RNG.standard_normal((3, 4))
    for name in ("convolve", "correlate"):
        np.testing.assert_allclose(
            getattr(sig, name)(x, k, "same", method),
            getattr(ss, name)(x, k, "same", method),
            atol=1e-12,
        )


@pytest.mark.parametrize(
    "axes, k_shape", [(1, (1, 3, 4)), ((0,), (2, 2, 1)), (-1, (3, 1, 2)), ([0, 2], (2, 1, 3))]
)
def test_fftconvolve_axes_agree_with_scipy(axes, k_shape):
    x, k = RNG.standard_normal((3, 2, 4)), RNG.standard_normal(k_shape)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(
            sig.fftconvolve(x, k, mode, axes=axes),
            ss.fftconvolve(x, k, mode, axes=axes),
            atol=1e-12,
        )


@pytest.mark.parametrize(
    "s1, s2, mode, axes",
    [
        # 'same' kept the broadcast axes whole: (4, 3) where SciPy cuts to in1's (4, 1)
        ((4, 1), (1, 3), "same", 0),
        ((1, 5), (3, 2), "same", -1),
        ((3, 1, 4), (3, 5, 2), "same", (0, 2)),
        # 'valid' refused an input of length 1 along an axis SciPy leaves out (a product)
        ((1, 5), (3, 2), "valid", None),
        ((4, 1), (1, 3), "valid", None),
        ((2, 1, 4), (1, 3, 2), "valid", (1, 2)),
    ],
)
def test_fftconvolve_modes_along_broadcast_axes_are_scipys(s1, s2, mode, axes):
    x, k = RNG.standard_normal(s1), RNG.standard_normal(s2)
    expected = ss.fftconvolve(x, k, mode, axes=axes)

    def f(x, k):
        return sig.fftconvolve(x, k, mode, axes=axes)

    for out in (f(x, k), _traced(f, x, k), fgrad.jit(f)(x, k)):
        assert np.shape(out) == expected.shape
        np.testing.assert_allclose(out, expected, atol=1e-12)
    check_grads(f, (x, k), order=2)
    xs = RNG.standard_normal((3,) + s1)
    np.testing.assert_array_equal(
        fgrad.vmap(f, in_axes=(0, None))(xs, k), np.stack([f(row, k) for row in xs])
    )


def test_fftconvolve_of_integers_along_no_axis_is_scipys_product():
    # every axis has a length 1: SciPy multiplies, in the integers' dtype
    x, k = np.arange(4).reshape(4, 1), np.arange(1, 4).reshape(1, 3)
    for mode in ("full", "same", "valid"):
        want = ss.fftconvolve(x, k, mode)
        got = sig.fftconvolve(x, k, mode)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "s1, s2, axes, message",
    [
        # were wrapped modulo ndim (convolving along another axis) or dropped when repeated
        ((5,), (3,), 1, "axes=1 with in1 of shape \\(5,\\).*exceeds dimensionality"),
        ((3, 4), (2, 4), 2, "axes=2 .*exceeds dimensionality.*\\[-2, 2\\)"),
        ((3, 4), (2, 4), -3, "axes=-3 .*exceeds dimensionality"),
        ((3, 4), (2, 2), (1, 1), "axes=\\(1, 1\\) .*all axes must be unique"),
        ((3, 4), (2, 2), (), "axes cannot be empty"),
        ((3, 4), (2, 2), 1.0, "axes must be an integer or a sequence of integers"),
        ((3, 4), (2, 2), 1, "incompatible shapes for in1 and in2: \\(3, 4\\) and \\(2, 2\\)"),
    ],
)
def test_fftconvolve_refuses_the_axes_scipy_refuses(s1, s2, axes, message):
    with pytest.raises(ValueError):
        ss.fftconvolve(np.ones(s1), np.ones(s2), axes=axes)
    with pytest.raises(ValueError, match=message):
        sig.fftconvolve(np.ones(s1), np.ones(s2), axes=axes)


def test_gradient_of_the_total_is_the_other_inputs_total():
    # sum(convolve(x, k, 'full')) = sum(x) sum(k)
    x, k = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 2))
    np.testing.assert_allclose(
        grad(lambda x: fnp.sum(sig.convolve(x, k)))(x), np.full((4, 3), k.sum())
    )
    np.testing.assert_allclose(
        grad(lambda k: fnp.sum(sig.correlate(x, k)))(k), np.full((2, 2), x.sum())
    )


def test_lag_zero_autocorrelation_is_the_squared_norm():
    x = RNG.standard_normal((3, 4))

    def f(x):  # the centre of the full autocorrelation: sum x**2
        return sig.correlate(x, x)[2, 3]

    assert float(f(x)) == pytest.approx(np.sum(x * x))
    np.testing.assert_allclose(grad(f)(x), 2 * x)
    np.testing.assert_allclose(hessian(f)(x).reshape(12, 12), 2 * np.eye(12), atol=1e-12)


def test_transpose_of_a_convolution_is_a_correlation_with_the_kernel():
    x, k = RNG.standard_normal((6, 5)), RNG.standard_normal((3, 2))
    out, f_vjp = vjp(lambda x: sig.convolve(x, k), x)
    ct = RNG.standard_normal(out.shape)
    np.testing.assert_allclose(f_vjp(ct)[0], ss.correlate(ct, k, "valid"))


def test_float32_stays_float32():
    x, k = RNG.standard_normal(5).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    for f in (sig.convolve, sig.correlate, sig.fftconvolve):
        assert f(x, k).dtype == np.float32
        assert grad(lambda k: fnp.sum(f(x, k)))(k).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.bool_, np.float16])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("shapes", [((3000,), (2000,)), ((7, 5), (3, 4))], ids=["1d", "2d"])
def test_method_fft_rounds_and_casts_back_as_scipy(dtype, name, shapes):
    # method='fft' gave fftconvolve's float: 1234.9999998 in float64 for integers, float32
    # for float16, float64 for bool; SciPy rounds integers and casts to the inputs' dtype
    a, b = ((RNG.normal(size=s) * 3).astype(dtype) for s in shapes)
    want = getattr(ss, name)(a, b, method="fft")
    f = fgrad.jit(lambda a, b: getattr(sig, name)(a, b, method="fft"))
    for ours in [getattr(sig, name)(a, b, method="fft"), f(a, b), f(a, b)]:
        assert np.asarray(ours).dtype == want.dtype
        np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("dtype", [np.float16, np.bool_])
@pytest.mark.parametrize("method", ["auto", "direct", "fft"])
def test_vmap_of_float16_and_bool_is_each_rows(dtype, method):
    # a batch of 1-D rows went to SciPy's n-dimensional direct sums: "Unsupported type"
    rows, b = (RNG.normal(size=(3, 6)) * 5).astype(dtype), (RNG.normal(size=4) * 5).astype(dtype)
    ours = fgrad.vmap(lambda a: sig.convolve(a, b, method=method))(rows)
    want = np.stack([ss.convolve(row, b, method=method) for row in rows])
    assert np.asarray(ours).dtype == want.dtype
    np.testing.assert_array_equal(ours, want)
    if dtype == np.float16:
        d = fgrad.vmap(fgrad.grad(lambda a: fnp.sum(sig.convolve(a, b, method=method))))(rows)
        assert d.dtype == np.float16 and np.array_equal(d, np.broadcast_to(b.sum(), d.shape))


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="same number of dimensions"):
        sig.convolve(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="at least as large"):
        sig.convolve(np.ones((4, 2)), np.ones((2, 4)), mode="valid")
    with pytest.raises(ValueError, match="mode must be"):
        sig.correlate(np.ones(3), np.ones(2), mode="middle")
    with pytest.raises(ValueError, match="method must be"):
        sig.convolve(np.ones(3), np.ones(2), method="slow")
    with pytest.raises(ValueError, match="empty"):
        sig.fftconvolve(np.ones(0), np.ones(2))


# --- convolve2d, correlate2d ----------------------------------------------------------------------

PAIRS_2D = [((4, 5), (2, 3)), ((3, 3), (5, 4)), ((2, 3), (4, 5)), ((4, 4), (1, 1))]


@pytest.mark.parametrize(
    "pair, mode, boundary, name",
    list(
        itertools.product(
            PAIRS_2D,
            ["full", "same", "valid"],
            ["fill", "wrap", "symm", "circular"],
            ["convolve2d", "correlate2d"],
        )
    ),
)
def test_2d_values_equal_scipys_plain_and_traced(pair, mode, boundary, name):
    s1, s2 = pair
    if mode == "valid" and not (
        all(a >= b for a, b in zip(s1, s2)) or all(b >= a for a, b in zip(s1, s2))
    ):
        with pytest.raises(ValueError, match="at least as large"):
            getattr(sig, name)(np.ones(s1), np.ones(s2), mode)
        return
    for dtype in (np.float64, np.float32, np.complex128):
        x = RNG.standard_normal(s1).astype(dtype)
        k = RNG.standard_normal(s2).astype(dtype)
        if dtype == np.complex128:
            x, k = x + 1j * RNG.standard_normal(s1), k + 1j * RNG.standard_normal(s2)
        f = getattr(sig, name)
        expected = getattr(ss, name)(x, k, mode, boundary, 0.5)
        traced = _traced(lambda x, k: f(x, k, mode, boundary, 0.5), x, k)
        for out in (f(x, k, mode, boundary, 0.5), traced):
            assert out.dtype == expected.dtype and out.shape == expected.shape
            np.testing.assert_array_equal(out, expected)


def test_2d_gradients_match_the_model_of_a_periodic_convolution():
    # wrap, 'same' with an odd kernel: the transpose of a circular convolution is the circular
    # correlation with the kernel
    x, k = RNG.standard_normal((5, 4)), RNG.standard_normal((3, 3))
    out, f_vjp = vjp(lambda x: sig.convolve2d(x, k, "same", "wrap"), x)
    ct = RNG.standard_normal(out.shape)
    np.testing.assert_allclose(f_vjp(ct)[0], ss.correlate2d(ct, k, "same", "wrap"), atol=1e-12)


def test_2d_complex_and_fillvalue_derivatives_in_both_modes():
    from fgrad.test_util import check_grads

    x = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    k = RNG.standard_normal((2, 2)) + 1j * RNG.standard_normal((2, 2))
    for name in ("convolve2d", "correlate2d"):
        for mode, boundary in [("full", "symm"), ("same", "fill"), ("valid", "fill")]:
            check_grads(
                lambda x, k: getattr(sig, name)(x, k, mode, boundary, 0.25),
                (x, k),
                order=2,
                modes=("fwd", "rev"),
            )
            check_grads(
                lambda x, k: getattr(sig, name)(k, x, "valid"),
                (x, k),
                order=2,
                modes=("fwd", "rev"),
            )


def test_2d_errors_name_the_argument():
    with pytest.raises(ValueError, match="in2 has shape \\(3,\\)"):
        sig.convolve2d(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="boundary must be"):
        sig.correlate2d(np.ones((3, 2)), np.ones((2, 2)), boundary="reflect")
    with pytest.raises(ValueError, match="mode must be"):
        sig.convolve2d(np.ones((3, 2)), np.ones((2, 2)), mode="middle")
    with pytest.raises(TypeError, match="fillvalue"):
        grad(lambda v: fnp.sum(sig.convolve2d(np.ones((2, 2)), np.ones((2, 2)), fillvalue=v)))(1.0)


@pytest.mark.parametrize("name", sig.__all__)
def test_signature_is_scipys(name):
    import inspect

    def parameters(fn):  # names, kinds and defaults (fgrad's also carry type hints)
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert parameters(getattr(sig, name)) == parameters(getattr(ss, name))


@pytest.mark.parametrize(
    "pair, mode", list(itertools.product(PAIRS[:-1], ["full", "same", "valid"]))
)
def test_correlate_conjugates_in2_as_scipy(pair, mode):
    from fgrad.test_util import check_grads

    x = RNG.standard_normal(pair[0]) + 1j * RNG.standard_normal(pair[0])
    k = RNG.standard_normal(pair[1]) + 1j * RNG.standard_normal(pair[1])
    np.testing.assert_allclose(sig.correlate(x, k, mode), ss.correlate(x, k, mode), atol=1e-12)
    check_grads(lambda x, k: sig.correlate(x, k, mode), (x, k), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["convolve", "correlate", "convolve2d", "correlate2d"])
@pytest.mark.parametrize("special", [np.inf, np.nan])
@pytest.mark.parametrize("outer", [fnp.sum, lambda y: fnp.sum(fnp.sin(y))], ids=["sum", "sin"])
def test_a_row_with_an_inf_or_a_nan_leaves_the_other_rows_of_a_vmap_alone(name, special, outer):
    # Under vmap the convolution of all rows is one computation: a cotangent common to the
    # rows (a batch axis of length 1) was convolved with the rows over that axis too, so one
    # row's inf times another's zero padding made the finite row's gradient nan; and the 2-D
    # boundary extension, a product with 0/1 matrices, spread a nan over its row.
    shapes = ((4, 3), (2, 2)) if name.endswith("2d") else ((3,), (5,))
    x, k = (RNG.standard_normal((2, *s)) for s in shapes)
    x[1].flat[0] = special
    fn = getattr(sig, name)

    def f(x, k):  # (sum: a cotangent common to the rows)
        return outer(fn(x, k, mode="same"))

    g = fgrad.grad(f, argnums=(0, 1))
    with np.errstate(invalid="ignore", over="ignore"):
        values = fgrad.vmap(lambda x, k: fn(x, k, mode="same"))(x, k)
        (dx, dk) = fgrad.vmap(g)(x, k)
        for i in range(2):
            want_dx, want_dk = g(x[i], k[i])
            np.testing.assert_allclose(values[i], fn(x[i], k[i], mode="same"), rtol=1e-12)
            np.testing.assert_allclose(dx[i], want_dx, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(dk[i], want_dk, rtol=1e-12, atol=1e-15)
    assert np.isfinite(dx[0]).all() and np.isfinite(dk[0]).all()  # the finite row's
