"""The signal family beyond the gradient table: values against NumPy over argument grids,
closed-form derivatives, conventions at knots and degenerate inputs, errors, and einsum's
fast path for large operands."""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, hessian, jacfwd, jacrev, vjp
from fgrad.numpy import products

RNG = np.random.default_rng(7)


# --- values agree with NumPy ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_match_numpy_for_every_length_order(mode):
    for n in range(1, 7):
        for m in range(1, 7):
            a, v = RNG.normal(size=n), RNG.normal(size=m)
            np.testing.assert_allclose(fnp.convolve(a, v, mode), np.convolve(a, v, mode))
            np.testing.assert_allclose(fnp.correlate(a, v, mode), np.correlate(a, v, mode))


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ba", [(2, 3)]),
    ("bA", [(2, 3)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->ij", [(2, 2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("...i,...i->...", [(3, 1, 2), (4, 2)]),
    ("i...j", [(4, 2, 3)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    ("ijk,jl,lk->i", [(2, 3, 4), (3, 5), (5, 4)]),
    (",->", [(), ()]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS, ids=[s for s, _ in EINSUMS])
def test_einsum_matches_numpy(subscripts, shapes):
    ops = [RNG.normal(size=s) for s in shapes]
    got, expected = fnp.einsum(subscripts, *ops), np.einsum(subscripts, *ops)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected)


def test_einsum_sublist_form_matches_numpy():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(fnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    np.testing.assert_allclose(
        fnp.einsum(a, [Ellipsis, 1], b, [1, 2]), np.einsum(a, [Ellipsis, 1], b, [1, 2])
    )


def test_products_match_numpy():
    a3, b3 = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(4, 3, 2))
    np.testing.assert_allclose(
        fnp.tensordot(a3, b3, axes=([1, 2], [1, 0])), np.tensordot(a3, b3, axes=([1, 2], [1, 0]))
    )
    np.testing.assert_allclose(fnp.tensordot(a3, a3, axes=0), np.tensordot(a3, a3, axes=0))
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(4, 3))
    np.testing.assert_allclose(fnp.inner(a, b), np.inner(a, b))
    np.testing.assert_allclose(fnp.outer(a, b), np.outer(a, b))
    np.testing.assert_allclose(fnp.vdot(a, b[:2]), np.vdot(a, b[:2]))
    for x, y in [(a, b), (a3, a), (2.0, a), (RNG.normal(size=3), RNG.normal(size=(2, 1, 2)))]:
        np.testing.assert_allclose(fnp.kron(x, y), np.kron(x, y))


def test_cross_matches_numpy_with_axes_and_2_vectors():
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(fnp.cross(a, b, axisb=0), np.cross(a, b, axisb=0))
    np.testing.assert_allclose(fnp.cross(a.T, b, axis=0), np.cross(a.T, b, axis=0))
    np.testing.assert_allclose(fnp.cross(a, b.T, axisc=0), np.cross(a, b.T, axisc=0))
    with warnings.catch_warnings():  # NumPy 2 deprecates 2-vectors; fgrad keeps them
        warnings.simplefilter("ignore", DeprecationWarning)
        for x, y in [(a[:, :2], b.T), (a, b.T[:, :2]), (a[:, :2], b.T[:, 1:])]:
            np.testing.assert_allclose(fnp.cross(x, y), np.cross(x, y))


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"n": 2},
        {"axis": 0},
        {"n": 2, "axis": 0, "prepend": 0.5},
        {"n": 5},
        {"prepend": 1.0, "append": 2.0, "n": 3},
    ],
)
def test_diff_matches_numpy(kw):
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(fnp.diff(x, **kw), np.diff(x, **kw))


def test_ediff1d_interp_polyval_vander_trapezoid_match_numpy():
    x = RNG.normal(size=(3, 4))
    np.testing.assert_allclose(
        fnp.ediff1d(x, to_begin=[1, 2], to_end=3.0), np.ediff1d(x, to_begin=[1, 2], to_end=3.0)
    )
    xp, fp = np.array([0.0, 0.5, 1.5, 2.0]), RNG.normal(size=4)
    xs = np.array([-0.3, 0.0, 0.2, 0.5, 1.7, 2.0, 2.45])
    for kw in [{}, {"left": -5.0, "right": 7.0}, {"period": 1.9}]:
        np.testing.assert_allclose(fnp.interp(xs, xp, fp, **kw), np.interp(xs, xp, fp, **kw))
    np.testing.assert_allclose(fnp.interp(xs, [1.0], [3.0]), np.interp(xs, [1.0], [3.0]))
    p = RNG.normal(size=4)
    np.testing.assert_allclose(fnp.polyval(p, x), np.polyval(p, x))
    np.testing.assert_allclose(fnp.vander(p, 6, increasing=True), np.vander(p, 6, increasing=True))
    np.testing.assert_array_equal(fnp.vander(np.arange(3)), np.vander(np.arange(3)))
    t = np.sort(RNG.normal(size=4))
    np.testing.assert_allclose(fnp.trapezoid(x, t), np.trapezoid(x, t))
    np.testing.assert_allclose(fnp.trapezoid(x.T, x.T, axis=0), np.trapezoid(x.T, x.T, axis=0))


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"rowvar": False},
        {"bias": True},
        {"ddof": 2},
        {"fweights": [1, 2, 1, 3, 1, 1]},
        {"aweights": [0.5, 1.0, 0.2, 2.0, 1.5, 1.0]},
        {"fweights": [1, 2, 1, 3, 1, 1], "aweights": [0.5, 1.0, 0.2, 2.0, 1.5, 1.0], "ddof": 0},
    ],
)
def test_cov_and_corrcoef_match_numpy(kw):
    m = RNG.normal(size=(3, 6))
    np.testing.assert_allclose(fnp.cov(m, **kw), np.cov(m, **kw))
    np.testing.assert_allclose(fnp.cov(m[0], m[1], **kw), np.cov(m[0], m[1], **kw))
    np.testing.assert_allclose(fnp.corrcoef(m), np.corrcoef(m))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex64, np.int8])
def test_vander_is_numpys_bits_under_every_transform(dtype):
    # NumPy multiplies step by step (multiply.accumulate) in x's dtype promoted with int;
    # single precision (float32, complex64) keeps its dtype, NumPy's values rounded once, and
    # float16 takes NumPy's float64
    x = RNG.standard_normal(7) * 2
    x = (x + 1j * x[::-1] if np.dtype(dtype).kind == "c" else x).astype(dtype)
    for n, increasing in [(None, False), (9, True), (1, False), (0, False)]:
        want = np.vander(x, n, increasing)
        want = want.astype(dtype) if dtype in (np.float32, np.complex64) else want

        def f(x):
            return fnp.vander(x, n, increasing)

        got = [f(x), fgrad.jit(f)(x), fgrad.vmap(f)(np.stack([x, x]))[1]]
        if np.dtype(dtype).kind in "fc":
            got.append(fgrad.jvp(f, (x,), (np.ones_like(x),))[0])
        for g in got:
            assert g.dtype == want.dtype and g.shape == want.shape
            np.testing.assert_array_equal(g, want)


def test_vander_jacobian_is_k_x_to_the_k_minus_1():
    x = np.array([0.0, -1.5, 0.7, 2.0])
    k = np.arange(5)
    want = k * np.where(k > 0, x[:, None] ** np.maximum(k - 1, 0), 0.0)  # d x^k / dx
    for jac in (jacfwd, jacrev):
        got = jac(lambda x: fnp.vander(x, 5, increasing=True))(x)
        np.testing.assert_allclose(np.einsum("ikj,ij->ik", got, np.eye(4)), want)


def test_cov_with_traced_weights_keeps_the_datas_dtype():
    # the plain weights were cast to the data's dtype, the traced ones not (float64 results)
    x = RNG.normal(size=(2, 4)).astype(np.float32)
    a, f = np.array([1.0, 2.0, 0.5, 1.5]), np.array([1, 2, 1, 1])
    want = fnp.cov(x, aweights=a)
    assert want.dtype == np.float32
    np.testing.assert_array_equal(fgrad.jit(lambda a: fnp.cov(x, aweights=a))(a), want)
    np.testing.assert_array_equal(fgrad.jvp(lambda a: fnp.cov(x, aweights=a), (a,), (a,))[0], want)
    want = fnp.cov(x, fweights=f)
    got = fgrad.jit(lambda f: fnp.cov(x, fweights=f))(f)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cov_and_corrcoef_with_a_dtype_are_numpys_bits(dtype):
    # NumPy scales by a float64 1/fact and rounds once; a weak Python float rounded twice
    m = np.random.default_rng(2).standard_normal((3, 6)).astype(np.float32)  # 1 ulp off before
    for f, ref in [(fnp.cov, np.cov), (fnp.corrcoef, np.corrcoef)]:
        want = ref(m, dtype=dtype)
        for got in (f(m, dtype=dtype), fgrad.jvp(lambda m: f(m, dtype=dtype), (m,), (m,))[0]):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_cov_refuses_a_fractional_ddof_as_numpy():
    x = RNG.normal(size=5)
    with pytest.raises(ValueError, match=r"cov: ddof must be an integer .* got 1\.5"):
        fnp.cov(x, ddof=1.5)
    with pytest.raises(ValueError, match="ddof must be an integer"):
        grad(lambda x: fnp.cov(x, ddof=1.5))(x)
    np.testing.assert_array_equal(fnp.cov(x, ddof=2.0), np.cov(x, ddof=2.0))  # as NumPy


# --- closed-form derivatives ----------------------------------------------------------------------


def test_trace_and_diagonal_gradients_are_identity_patterns():
    a = RNG.normal(size=(3, 3))
    np.testing.assert_array_equal(grad(lambda x: fnp.einsum("ii", x))(a), np.eye(3))
    jac = jacrev(lambda x: fnp.einsum("ii->i", x))(a)  # d diag_i / d a_jk = [i == j == k]
    np.testing.assert_array_equal(jac, np.einsum("ij,ik->ijk", np.eye(3), np.eye(3)))
    np.testing.assert_array_equal(jacfwd(lambda x: fnp.einsum("ii->i", x))(a), jac)


def test_einsum_gradient_of_a_bilinear_form():
    x, A, y = RNG.normal(size=3), RNG.normal(size=(3, 4)), RNG.normal(size=4)
    g = grad(lambda x, A, y: fnp.einsum("i,ij,j->", x, A, y), argnums=(0, 1, 2))(x, A, y)
    np.testing.assert_allclose(g[0], A @ y)
    np.testing.assert_allclose(g[1], np.outer(x, y))
    np.testing.assert_allclose(g[2], x @ A)


def test_einsum_keeps_float32_through_its_constants():
    a = RNG.normal(size=(3, 3)).astype(np.float32)
    for s in ["ii", "ii->i", "ij->i"]:
        g = grad(lambda x: fnp.sum(fnp.einsum(s, x)))(a)
        assert g.dtype == np.float32


def test_large_einsum_takes_numpys_optimized_path_and_matches_matmul():
    x, w = RNG.normal(size=(64, 128)), RNG.normal(size=(128, 32))
    assert products._einsum_plan("bi,ij->bj", (x.shape, w.shape)) is not False
    assert products._einsum_plan("i,i->", ((3,), (3,))) is False
    f_einsum = lambda w: fnp.sum(fnp.tanh(fnp.einsum("bi,ij->bj", x, w, optimize=True)))
    f_matmul = lambda w: fnp.sum(fnp.tanh(x @ w))
    np.testing.assert_allclose(grad(f_einsum)(w), grad(f_matmul)(w), rtol=1e-12)


@pytest.mark.parametrize("optimize", [False, True, "greedy"])
def test_einsum_values_are_numpys_for_its_optimize(optimize):
    x, w = RNG.normal(size=(64, 128)), RNG.normal(size=(128, 32))
    want = np.einsum("bi,ij->bj", x, w, optimize=optimize)
    got = vjp(lambda w: fnp.einsum("bi,ij->bj", x, w, optimize=optimize), w)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fnp.einsum("bi,ij->bj", x, w, optimize=optimize), want)


def test_products_refuse_an_axis_out_of_bounds_traced_or_not():
    # `% ndim` read axis 3 of a 2-d x as axis 1: vecdot(x, x, axis=3) under jvp gave [5, 50]
    # (plain x: NumPy's AxisError), cross(..., axis=3) and tensordot(x, b, ([3], [0])) values
    x, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    calls = [
        (lambda m, x: m.vecdot(x, x, axis=3), "axis 3"),
        (lambda m, x: m.vecdot(x, x, axes=[(0,), (-3,), ()]), "axis -3"),
        (lambda m, x: m.cross(x, x[::-1], axis=3), "axisa: axis 3"),
        (lambda m, x: m.cross(x, x[::-1], axisb=-3), "axisb: axis -3"),
        (lambda m, x: m.cross(x, x[::-1], axisc=2), "axisc: axis 2"),
        (lambda m, x: m.tensordot(x, b, ([3], [0])), "axis 3"),
        (lambda m, x: m.tensordot(x, b, ([1], [-3])), "axis -3"),
    ]
    for call, message in calls:
        with pytest.raises(IndexError):  # NumPy's (AxisError is an IndexError; tensordot's is one)
            call(np, x)
        with pytest.raises(np.exceptions.AxisError, match=message):
            call(fnp, x)
        with pytest.raises(np.exceptions.AxisError, match=message):
            fgrad.jvp(lambda x, c=call: c(fnp, x), (x,), (x,))
        with pytest.raises(np.exceptions.AxisError, match=message):
            grad(lambda x, c=call: fnp.sum(c(fnp, x)))(x)


def test_contracted_axes_of_unequal_lengths_are_refused_as_numpy_does():
    # einsum broadcast a length 1 against 3: inner([2.], [1, 2, 3]) was 12.0
    a, b = np.array([2.0]), np.array([1.0, 2.0, 3.0])
    a2, b2 = np.ones((2, 3)), np.ones((4, 5))
    calls = [
        (lambda m: m.inner(a, b), r"inner: .*shape \(1,\).*shape \(3,\)"),
        (lambda m: m.tensordot(a, b, 1), r"tensordot: .*length 1 .*length 3"),
        (lambda m: m.tensordot(a2, b2, ([1], [0])), r"tensordot: .*axis 1 of a .* axis 0 of b"),
        (lambda m: m.inner(a2, b2), r"inner: .*shape \(2, 3\).*shape \(4, 5\)"),
        (lambda m: m.dot(a2, b2), r"dot: shapes \(2, 3\) and \(4, 5\) not aligned"),
        (lambda m: m.dot(np.ones((2, 2, 3)), np.ones((2, 4, 5))), r"dot: .*3 \(dim 2\) != 4"),
        (lambda m: m.linalg.multi_dot([a2, b2]), r"multi_dot: array 0 .* array 1 .* 3 != 4"),
    ]
    for call, message in calls:
        with pytest.raises(ValueError):
            call(np)
        with pytest.raises(ValueError, match=message):
            call(fnp)
    with pytest.raises(ValueError, match="inner: "):
        grad(lambda b: fnp.inner(a, b))(b)


@pytest.mark.parametrize(
    "subscripts,x_shape,y_shape",
    [
        ("i,i->", (1,), (3,)),
        ("ij,ij->", (3, 1), (3, 4)),
        ("ijk,ijk->ik", (2, 1, 4), (1, 3, 1)),
        ("ij,jj->", (2, 3), (1, 1)),
        ("ij,jj->", (2, 1), (3, 3)),
    ],
)
def test_einsum_gradients_where_an_operand_broadcasts_a_length_1_axis(subscripts, x_shape, y_shape):
    # grad and jacrev raised "cannot reshape array of size 1 into shape (3,)": the cotangent of
    # y took its letters' lengths from x, of length 1 there. NumPy's einsum broadcasts them.
    x, y = RNG.normal(size=x_shape), RNG.normal(size=y_shape)

    def f(x, y):
        return fnp.einsum(subscripts, x, y)

    for argnum in (0, 1):
        want = jacfwd(f, argnums=argnum)(x, y)
        np.testing.assert_allclose(jacrev(f, argnums=argnum)(x, y), want, rtol=1e-13)
        np.testing.assert_allclose(fgrad.jit(jacrev(f, argnums=argnum))(x, y), want, rtol=1e-13)
    fgrad.test_util.check_grads(f, (x, y), order=2, modes=("rev",))
    x, y = np.array([2.0]), np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(grad(lambda y: fnp.einsum("i,i->", x, y))(y), [2.0, 2.0, 2.0])


def test_cross_gradient_is_a_cross_product():
    a, b, c = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    g = grad(lambda a: fnp.dot(c, fnp.cross(a, b)))(a)  # c . (a x b) = a . (b x c)
    np.testing.assert_allclose(g, np.cross(b, c))
    np.testing.assert_allclose(fnp.cross(a, a), np.zeros(3), atol=1e-15)


def test_convolve_jacobian_is_the_toeplitz_matrix():
    a, v = RNG.normal(size=4), RNG.normal(size=3)
    jac = jacrev(lambda a: fnp.convolve(a, v))(a)
    toeplitz = np.array([[v[k - i] if 0 <= k - i < 3 else 0.0 for i in range(4)] for k in range(6)])
    np.testing.assert_allclose(jac, toeplitz)


def _interp_eager_jitted_batched(x, xp, fp):
    """fnp.interp's value eagerly, replayed by jit (recorded on the same values), and under
    vmap over x."""
    jitted = fgrad.jit(fnp.interp)
    jitted(x, xp, fp)
    return (
        fnp.interp(x, xp, fp),
        jitted(x, xp, fp),
        fgrad.vmap(fnp.interp, in_axes=(0, None, None))(x, xp, fp),
    )


def test_interp_derivative_conventions_at_knots_and_outside():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 1.0])
    dydx = grad(lambda x: fnp.interp(x, xp, fp))
    slopes = [float(dydx(x)) for x in [-1.0, 0.0, 0.5, 1.0, 3.0, 4.0]]
    # outside: 0; at a knot: the slope to the right; at the last knot: the last segment's slope
    assert slopes == [0.0, 2.0, 2.0, -0.5, -0.5, 0.0]
    # the value is linear in fp with the interpolation weights
    np.testing.assert_allclose(grad(lambda fp: fnp.interp(2.0, xp, fp))(fp), [0.0, 0.5, 0.5])


def test_interp_values_are_numpys_bits_eager_and_traced():
    # fgrad computed f0 + w (f1 - f0) with w = (x - x0) / dx, where NumPy computes
    # slope (x - x0) + f0 and gives fp[-1] itself at the last knot: 595 of 7,365 values an
    # ulp off NumPy's (118 of them at the last knot)
    rng = np.random.default_rng(0)
    for _ in range(60):
        k = int(rng.integers(2, 8))
        xp, fp = np.sort(rng.normal(size=k)), rng.normal(size=k) * 10.0 ** rng.integers(-3, 4)
        x = np.concatenate([rng.normal(size=20) * 2, xp])
        want = np.interp(x, xp, fp)
        jvp_value = fgrad.jvp(lambda a: fnp.interp(a, xp, fp), (x,), (np.ones_like(x),))[0]
        for got in (*_interp_eager_jitted_batched(x, xp, fp), jvp_value):
            assert np.array_equal(got, want)
    # the last knot keeps the last segment's derivatives (the convention)
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.1, 2.3, 1.7])
    assert grad(lambda fp: fnp.interp(3.0, xp, fp))(fp).tolist() == [0.0, 0.0, 1.0]
    assert float(grad(lambda x: fnp.interp(x, xp, fp))(3.0)) == (1.7 - 2.3) / 2.0


def test_interp_derivatives_in_fp_with_an_infinite_x():
    """The formula's value is not taken outside the knots, but its 0 * inf reached the
    derivatives: one infinite x made the whole reverse derivative in fp nan."""
    xp, fp = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 4.0])
    x = np.array([0.5, -np.inf, np.inf, 1.5, 2.0, -3.0])
    # each point's weights of fp: a convex combination of its segment's ends, or an end
    want = [[0.5, 0.5, 0], [1, 0, 0], [0, 0, 1], [0, 0.5, 0.5], [0, 0, 1], [1, 0, 0]]
    f = lambda fp: fnp.interp(x, xp, fp)
    for jac in (fgrad.jacrev(f), fgrad.jacfwd(f), fgrad.jit(fgrad.jacrev(f))):
        np.testing.assert_array_equal(jac(fp), want)
    rows = fgrad.vmap(fgrad.grad(lambda fp, x: fnp.interp(x, xp, fp)), in_axes=(None, 0))
    np.testing.assert_array_equal(rows(fp, x), want)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's 0 * inf, as eager)
def test_interp_with_an_infinite_knot_retries_from_the_other_end_as_numpy():
    # slope * (x - x0) + f0 is 0 * inf = nan in a segment with an infinite end: NumPy
    # retries slope * (x - x1) + f1 (then f0 if f0 == f1), and gives f0 at x == x0; fgrad
    # gave nan (interp(-1, [-inf, 0, 1, inf], [1, 2, 4, 5]) is 2)
    inf = np.inf
    x = np.array([-1.0, 0.5, 5.0, 0.0, -inf, inf, -3.0])
    for xp, fp in [
        ([-inf, 0.0, 1.0, inf], [1.0, 2.0, 4.0, 5.0]),
        ([-inf, 0.0, 1.0, inf], [2.0, 2.0, 4.0, 4.0]),
        ([-inf, -2.0, 1.0, 2.0], [inf, inf, 1.0, 2.0]),
        ([-4.0, 0.0, 1.0], [-inf, inf, 1.0]),
    ]:
        xp, fp = np.array(xp), np.array(fp)
        want = np.interp(x, xp, fp)
        for got in _interp_eager_jitted_batched(x, xp, fp):
            np.testing.assert_array_equal(got, want)
    # the derivatives of the value taken: 0 in x, in fp that of the end it comes from
    xp, fp = np.array([-inf, 0.0, 1.0, inf]), np.array([1.0, 2.0, 4.0, 5.0])
    for at, end in [(-1.0, 1), (-inf, 0), (5.0, 2)]:
        dx, dxp, dfp = grad(fnp.interp, argnums=(0, 1, 2))(at, xp, fp)
        assert dx == 0.0 and not dxp.any() and dfp.tolist() == np.eye(4)[end].tolist()
    # and in a finite segment they are unchanged
    dx, dxp, dfp = grad(fnp.interp, argnums=(0, 1, 2))(0.25, xp, fp)
    assert (dx, dxp.tolist(), dfp.tolist()) == (2.0, [0.0, -1.5, -0.5, 0.0], [0.0, 0.75, 0.25, 0.0])


def test_interp_of_a_nan_point_is_nan_when_the_last_knots_are_equal():
    # the flat last segment (xp[-2] == xp[-1]) took fp[-1] for a nan x, clipped into it,
    # where NumPy gives nan; with equal last values the retry from the other end did too
    xp = np.array([0.0, 1.0, 2.0, 2.0])
    x = np.array([np.nan, 1.5, 2.0])
    for fp in (np.array([1.0, 3.0, -1.0, 5.0]), np.array([1.0, 3.0, 5.0, 5.0])):
        want = np.interp(x, xp, fp)
        f = lambda v: fnp.interp(v, xp, fp)
        for got in (f(x), fgrad.jit(f)(x), fgrad.vmap(f)(x)):
            np.testing.assert_array_equal(got, want)


def test_a_nan_point_of_interp_leaves_the_other_points_derivatives_alone():
    # the nan point went through the formula: reverse mode summed 0 * nan into the values'
    # gradient, so every point's derivatives in fp were nan (jacfwd's were right), and
    # sparse_jacobian's fwd and rev modes disagreed
    x, xp, fp = np.array([np.nan, 0.5, 2.5]), np.arange(4.0), np.arange(4.0) * 2 + 1
    f = lambda v: fnp.interp(x, xp, v)
    np.testing.assert_array_equal(f(fp), np.interp(x, xp, fp))
    want = np.array([[0, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    np.testing.assert_array_equal(fgrad.jacrev(f)(fp), want)
    np.testing.assert_array_equal(fgrad.jacfwd(f)(fp), want)
    np.testing.assert_array_equal(fgrad.jit(fgrad.jacrev(f))(fp), want)


def test_interp_of_a_nan_point_with_one_knot_is_numpys_fp0():
    # NumPy's one-knot interp gives fp[0] at a nan x (neither below nor above the knot);
    # the nan-point step gave nan there
    x = np.array([np.nan, 0.0, 2.0])
    for fp, kw in [(np.array([5.0]), {}), (np.array([5.0]), {"left": -7.0, "right": 9.0})]:
        f = lambda v: fnp.interp(x, np.array([1.0]), v, **kw)
        want = np.interp(x, [1.0], fp, **kw)
        np.testing.assert_array_equal(f(fp), want)
        np.testing.assert_array_equal(fgrad.jit(f)(fp), want)


@pytest.mark.parametrize("knots, values", [(np.float32, np.float64), (np.float64, np.float32)])
def test_interp_with_traced_knots_takes_the_results_precision_as_constant_ones(knots, values):
    # traced knots kept their dtype: float32 knots of a float64 result made the segment
    # widths in float32 (3.4e-10 off NumPy), and float64 knots of a float32 result gave
    # 1 ulp from the constant knots' value, so jit, grad and vmap differed from eager
    rng = np.random.default_rng(0)
    for _ in range(20):
        xp = np.sort(rng.uniform(-1.0, 1.0, 4)).astype(knots)
        x = rng.uniform(-1.0, 1.0, 3).astype(values)
        fp = rng.normal(size=4).astype(values)
        eager = fnp.interp(x, xp, fp)  # constant knots
        traced = fgrad.jvp(lambda k: fnp.interp(x, k, fp), (xp,), (np.ones_like(xp),))[0]
        assert traced.tobytes() == eager.tobytes()
        assert fgrad.jit(lambda k: fnp.interp(x, k, fp))(xp).tobytes() == eager.tobytes()


@pytest.mark.parametrize("values", [np.float16, np.float32, np.complex64])
def test_interp_of_narrower_values_in_a_double_result_is_numpys_bits(values):
    """fp was cast to the result's dtype only when integer: float16 or float32 fp with float64
    points took f1 - f0 in fp's precision, 7e-5 (float16) and 4.5e-9 (float32) off NumPy,
    which interpolates in float64 (complex128 for complex fp)."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        xp = np.sort(rng.uniform(-1.0, 1.0, 5))
        x = np.concatenate([rng.uniform(-1.2, 1.2, 6), xp])
        fp = rng.normal(size=5) + (1j * rng.normal(size=5) if values == np.complex64 else 0)
        fp = fp.astype(values)
        want = np.interp(x, xp, fp)
        in_fp = fgrad.jvp(lambda v: fnp.interp(x, xp, v), (fp,), (np.ones_like(fp),))[0]
        in_xp = fgrad.jvp(lambda k: fnp.interp(x, k, fp), (xp,), (np.ones_like(xp),))[0]
        jit_fp = fgrad.jit(lambda v: fnp.interp(x, xp, v))
        jit_fp(fp)
        for got in (*_interp_eager_jitted_batched(x, xp, fp), in_fp, in_xp, jit_fp(fp)):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_interp_of_a_nan_point_with_complex_values_is_numpys_nan_plus_0j():
    # nan + nanj, where NumPy sets the imaginary part of a nan point's value to 0
    x, xp = np.array([np.nan, 2.0]), np.array([0.0, 1.0, 2.0, 3.0])
    fp = np.array([1.0, 3.0, 4.0, 5.0]) + 1j * np.array([5.0, 4.0, 3.0, 1.0])
    want = np.interp(x, xp, fp)
    f = lambda v: fnp.interp(x, xp, v)
    for got in (f(fp), fgrad.jit(f)(fp), fgrad.vmap(lambda r: fnp.interp(r, xp, fp))(x)):
        assert np.asarray(got).tobytes() == want.tobytes()


def test_interp_under_jit_with_traced_values_searches_the_constant_points_with_numpy():
    # with only fp traced, the points' segments were found by a len(x) x len(xp) table of
    # comparisons in the record (1 GB for 1e5 points and 5000 knots) where NumPy's
    # searchsorted of the constant points does
    import tracemalloc

    xp, x = np.linspace(0.0, 1.0, 1000), np.linspace(-0.1, 1.1, 5000)
    jitted = fgrad.jit(lambda fp: fnp.interp(x, xp, fp))
    tracemalloc.start()
    try:
        got = jitted(np.sin(xp))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, np.interp(x, xp, np.sin(xp)))
    assert peak < 2_000_000  # (the table's booleans alone were 5 MB)


def test_interp_in_xp_closed_form():
    # on [x0, x1]: y = f0 + (x - x0) (f1 - f0) / (x1 - x0)
    x, xp, fp = 0.25, np.array([0.0, 1.0]), np.array([1.0, 3.0])
    g = grad(lambda xp: fnp.interp(x, xp, fp))(xp)
    np.testing.assert_allclose(g, [-(1 - x) * 2.0, -x * 2.0])


def test_polyval_derivatives():
    p, x = RNG.normal(size=5), RNG.normal(size=3)
    np.testing.assert_allclose(
        jacfwd(lambda x: fnp.polyval(p, x))(x), np.diag(np.polyval(np.polyder(p), x))
    )
    np.testing.assert_allclose(jacrev(lambda p: fnp.polyval(p, x))(p), np.vander(x, 5))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32])
def test_polyder_of_integer_coefficients_is_numpys_integer_under_jit_and_vmap(dtype):
    # the traced path multiplied by float64 powers: int64 eagerly, float64 under jit/vmap
    p = np.array([1, 2, 3, 1], dtype)
    for m in (1, 2):
        want = np.polyder(p, m)
        for got in [
            fgrad.jit(lambda p: fnp.polyder(p, m))(p),
            fgrad.vmap(lambda p: fnp.polyder(p, m))(np.stack([p, p]))[1],
        ]:
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_vander_is_exact_at_zero_to_second_order():
    h = hessian(lambda x: fnp.sum(fnp.vander(x, 4)))(np.zeros(2))
    assert np.all(np.isfinite(h))
    np.testing.assert_array_equal(h, np.diag([2.0, 2.0]))  # d2/dx2 (x^3 + x^2 + x + 1) at 0


def test_trapezoid_gradient_is_the_quadrature_weights():
    g = grad(lambda y: fnp.trapezoid(y, dx=0.5))(RNG.normal(size=5))
    np.testing.assert_allclose(g, [0.25, 0.5, 0.5, 0.5, 0.25])
    x = np.array([0.0, 1.0, 3.0])  # weights (x[i+1] - x[i-1]) / 2
    np.testing.assert_allclose(
        grad(lambda y: fnp.trapezoid(y, x))(RNG.normal(size=3)), [0.5, 1.5, 1.0]
    )


def test_variance_gradient_closed_form():
    x = RNG.normal(size=6)
    np.testing.assert_allclose(grad(fnp.cov)(x), 2 * (x - x.mean()) / 5)


def test_corrcoef_hessian_is_not_zeroed_by_the_clip_at_perfect_correlation():
    x = RNG.normal(size=5)
    y = 2.0 * x + 1.0  # r = 1 up to rounding, which NumPy's clip corrects

    def r_exact(y):
        dx, dy = x - fnp.mean(x), y - fnp.mean(y)
        return fnp.sum(dx * dy) / fnp.sqrt(fnp.sum(dx * dx) * fnp.sum(dy * dy))

    h = hessian(lambda y: fnp.corrcoef(x, y)[0, 1])(y)
    assert np.abs(h).max() > 1e-3
    np.testing.assert_allclose(h, hessian(r_exact)(y), atol=1e-12)
    assert abs(float(fnp.corrcoef(x, y)[0, 1])) <= 1.0


# --- degenerate cases and errors ------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # 0 * inf, as NumPy
def test_cov_with_no_degrees_of_freedom_warns_like_numpy():
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        out = fnp.cov(np.array([1.0]))
    assert np.isnan(out) or np.isinf(out)


def test_diff_axis_out_of_bounds_is_numpys_axis_error():
    with pytest.raises(np.exceptions.AxisError, match=r"diff: axis 2 .* shape \(3,\)"):
        grad(lambda t: fnp.sum(fnp.diff(t, axis=2)))(np.ones(3))
    with pytest.raises(IndexError):  # (AxisError is an IndexError, as NumPy's)
        fnp.diff(fgrad.numpy.array([1.0, 2.0]), axis=-2)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="no '...'"):
        fnp.einsum("ij...->ij", np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="2 operands but 1"):
        fnp.einsum("ij,jk", np.ones((2, 3)))
    with pytest.raises(ValueError, match="3 dimensions"):
        fnp.einsum("ij", np.ones((2, 3, 4)))
    with pytest.raises(TypeError, match="out="):  # (a traced operand: plain ones are NumPy's)
        fgrad.jvp(lambda x: fnp.einsum("ii", x, out=np.zeros(())), (np.eye(2),), (np.eye(2),))
    with pytest.raises(ValueError, match="one-dimensional"):
        fnp.convolve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="mode"):
        fnp.convolve(np.ones(3), np.ones(2), mode="middle")
    with pytest.raises(ValueError, match="2 or 3"):
        fnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="same length"):
        fnp.interp(0.5, [0.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-negative"):
        fnp.diff(np.ones(3), n=-1)
    with pytest.raises(ValueError, match="axes"):
        fnp.tensordot(np.ones(3), np.ones(3), axes=2)


def test_complex_operands_conjugate_where_numpy_does():
    def c(*s):
        return RNG.normal(size=s) + 1j * RNG.normal(size=s)

    for n, m in [(4, 2), (2, 4), (3, 3)]:
        a, v = c(n), c(m)
        for mode in ["full", "same", "valid"]:
            np.testing.assert_allclose(fnp.correlate(a, v, mode), np.correlate(a, v, mode))
    a, b, m = c(2, 3), c(6), c(3, 5)
    np.testing.assert_allclose(fnp.vdot(a, b), np.vdot(a, b))
    np.testing.assert_allclose(fnp.cov(m), np.cov(m))
    np.testing.assert_allclose(fnp.corrcoef(m), np.corrcoef(m))
    xp, fp = np.array([0.0, 0.5, 1.5]), c(3)
    xs = np.array([-0.3, 0.2, 0.7, 1.7])
    np.testing.assert_allclose(fnp.interp(xs, xp, fp), np.interp(xs, xp, fp))


def test_what_numpy_refuses_is_refused_naming_the_argument():
    xp, fp = np.array([0.0, 0.5, 1.5]), np.array([1.0, -1.0, 2.0])
    ones, w = np.ones((2, 3)), np.ones(3) + 1j
    # (fgrad's call, NumPy's call, fgrad's error, its message): NumPy raises, or drops an
    # imaginary part with a ComplexWarning
    refusals = [
        (
            lambda m: m.correlate(2.0, np.ones(3)),
            ValueError,
            r"correlate: a is a scalar \(shape \(\) and dtype float64\); .*\(pass \[a\]",
        ),
        (
            lambda m: m.correlate(np.ones(3), np.float32(2.0)),
            ValueError,
            r"v is a scalar \(shape \(\) and dtype float32\)",
        ),
        (
            lambda m: m.interp(np.array([0.2 + 1j]), xp, fp),
            TypeError,
            r"interp: x is complex \(shape \(1,\) and dtype complex128\); .* fgrad.numpy.real",
        ),
        (
            lambda m: m.interp(np.complex128(0.3 + 0.1j), xp, fp),
            TypeError,
            r"x is complex \(shape \(\)",
        ),
        (lambda m: m.interp(0.3, xp + 0j, fp), TypeError, "xp is complex"),
        (
            lambda m: m.interp(0.3, xp, fp, left=1j),
            TypeError,
            "left is complex .* but fp is real .* make fp complex",
        ),
        (
            lambda m: m.cov(ones, aweights=w),
            TypeError,
            r"cov: aweights are complex \(shape \(3,\) and dtype complex128\); .* real",
        ),
        (lambda m: m.cov(ones, fweights=np.array([1, 1j, 1])), TypeError, "fweights are complex"),
    ]
    for call, error, message in refusals:
        with pytest.raises(error, match=message):
            call(fnp)
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            with pytest.raises((TypeError, ValueError, np.exceptions.ComplexWarning)):
                call(np)
    # a complex fp, with a complex left, is NumPy's too
    np.testing.assert_array_equal(
        fnp.interp(-1.0, xp, fp + 1j, left=2j), np.interp(-1.0, xp, fp + 1j, left=2j)
    )
    # and under a transform they refuse alike
    with pytest.raises(TypeError, match="xp is complex"):
        grad(lambda xp: fnp.real(fnp.interp(0.3, xp, fp)))(xp + 0j)
    with pytest.raises(TypeError, match="aweights are complex"):
        grad(lambda w: fnp.sum(fnp.real(fnp.cov(ones, aweights=w))))(w)


def test_einsum_dtype_is_ignored_where_numpy_returns_a_view_of_the_operand():
    x = RNG.normal(size=(3, 3)).astype(np.float32)
    for subscripts, operand in [("ii->i", x), ("ij->ji", x + 1j), ("ij", x), ("ij->i", x)]:
        expected = np.einsum(subscripts, operand, dtype=np.float64, casting="unsafe")
        got = fnp.einsum(subscripts, operand, dtype=np.float64, casting="unsafe")
        traced = vjp(
            lambda a: fnp.einsum(subscripts, a, dtype=np.float64, casting="unsafe"), operand
        )[0]
        assert got.dtype == traced.dtype == expected.dtype
        np.testing.assert_array_equal(traced, expected)


def test_interp_of_integer_values_and_tied_periodic_knots_is_numpys():
    """interp's f1 - f0 ran in fp's dtype: uint8 [3, 1, 0] at 0.5 gave 130 (1 - 3 wrapped to
    254), int8 [-100, 100] gave -128 for 0, the gradient 254 for -2; a bool fp raised. Knots
    that tie after the modulo of `period` were sorted stably, not as NumPy sorts them."""
    for fp in (
        np.array([3, 1, 0], np.uint8),
        np.array([-100, 100, 7], np.int8),
        np.array([True, False, True]),
    ):
        x = np.array([0.5, 1.5, -1.0, 3.0])
        np.testing.assert_array_equal(
            fnp.interp(x, [0.0, 1.0, 2.0], fp), np.interp(x, [0.0, 1.0, 2.0], fp)
        )
    slope = fgrad.grad(
        lambda x: fnp.interp(x, np.array([0.0, 1.0, 2.0]), np.array([3, 1, 0], np.uint8))
    )(0.5)
    assert slope == -2.0
    xp, fp = np.array([0.0, 2.0, 4.0, 6.0]), np.array([1.2, 3.0, 4.8, 2.0])
    np.testing.assert_array_equal(
        fnp.interp(np.array([0.0, 1.0, 5.0]), xp, fp, period=4.0),
        np.interp(np.array([0.0, 1.0, 5.0]), xp, fp, period=4.0),
    )


def test_gradient_with_a_list_of_coordinates_and_polyval_of_no_coefficients():
    """gradient(z, [coordinates as a list]) raised TypeError (list - list) under grad, jacfwd
    and jit; polyval([], x) raised IndexError where NumPy gives zeros."""
    z, coords = np.arange(6.0) ** 2, [0.0, 1.0, 3.0, 4.0, 7.0, 8.0]
    want = np.gradient(z, coords)
    np.testing.assert_allclose(fgrad.jit(lambda z: fnp.gradient(z, coords))(z), want, rtol=1e-15)
    np.testing.assert_allclose(
        fgrad.jacfwd(lambda z: fnp.gradient(z, coords))(z),
        fgrad.jacfwd(lambda z: fnp.gradient(z, np.array(coords)))(z),
    )
    np.testing.assert_array_equal(fnp.polyval([], np.arange(3.0)), np.polyval([], np.arange(3.0)))
    assert fgrad.grad(lambda x: fnp.sum(fnp.polyval([], x)))(np.ones(2)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "axes", [([0, 0], [0, 1]), ([0, -2], [0, 1]), ([0, 1], [0, 0]), ([1, 0], [-1, 1])]
)
def test_tensordot_refuses_an_axis_summed_twice_as_numpy(axes):
    # A repeated axis became a repeated einsum letter, a diagonal: tensordot(A, A, ([0, 0],
    # [0, 1])) was einsum('ab,aa->b') = [60, 72, 84] where NumPy and JAX raise
    a = np.arange(9.0).reshape(3, 3)
    with pytest.raises((ValueError, IndexError)):
        np.tensordot(a, a, axes)
    calls = [
        lambda x: fnp.tensordot(x, a, axes),
        lambda x: fnp.linalg.tensordot(x, a, axes=axes),
        lambda x: np.tensordot(x, a, axes),  # NumPy's dispatched on a traced value
    ]
    message = (
        r"tensordot: axes=.* repeats axis \d of [ab] \(shape \(3, 3\) and dtype float64\).*einsum"
    )
    for call in calls:
        if call is not calls[2]:  # (NumPy's own on a plain array)
            with pytest.raises(ValueError, match=message):
                call(a)
        with pytest.raises(ValueError, match=message):
            fgrad.jvp(call, (a,), (a,))
        with pytest.raises(ValueError, match=message):
            fgrad.jit(call)(a)


@pytest.mark.parametrize(
    "a_shape,b_shape", [((2, 0), (4, 0, 3)), ((0,), (4, 0, 3)), ((5, 2, 0), (0, 3))]
)
def test_dot_of_stacks_summing_an_axis_of_length_0_gives_numpys_zeros(a_shape, b_shape):
    # reshape(a, (-1, 0)) raised "cannot reshape array of size 0 into shape (0)": NumPy sums
    # over nothing, zeros of shape (2, 4, 3)
    a, b = np.ones(a_shape), np.ones(b_shape)
    want = np.dot(a, b)
    for got in (fnp.dot(a, b), fgrad.jit(fnp.dot)(a, b), fgrad.jvp(fnp.dot, (a, b), (a, b))[1]):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # the derivatives of a sum over nothing are zeros of each operand's shape
    ga, gb = grad(lambda a, b: fnp.sum(fnp.dot(a, b)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, np.zeros(a_shape))
    np.testing.assert_array_equal(gb, np.zeros(b_shape))
    assert jacfwd(fnp.dot)(a, b).shape == want.shape + a_shape
    rows = np.ones((3, *a_shape))
    batched = fgrad.vmap(fnp.dot, in_axes=(0, None))(rows, b)
    np.testing.assert_array_equal(batched, np.stack([np.dot(r, b) for r in rows]))
    g_rows = fgrad.vmap(grad(lambda a, b: fnp.sum(fnp.dot(a, b))), in_axes=(0, None))(rows, b)
    np.testing.assert_array_equal(g_rows, np.zeros(rows.shape))


@pytest.mark.parametrize("how", ["fnp", "np"])
def test_einsum_path_of_traced_operands_is_numpys_for_their_shapes(how):
    # NumPy's einsum_path called asanyarray on a traced operand: grad, jit and vmap raised a
    # TypeError saying fgrad.numpy had no einsum_path. It reads shapes only.
    module = fnp if how == "fnp" else np
    x, w = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5))
    want_path, want_report = np.einsum_path("ij,jk,kl->", x, w, w.T, optimize="greedy")
    seen = []

    def f(x):
        path, report = module.einsum_path("ij,jk,kl->", x, w, w.T, optimize="greedy")
        seen.append((path, report))
        return fnp.einsum("ij,jk,kl->", x, w, w.T, optimize=path)

    want_grad = np.broadcast_to(np.einsum("jk,kl->j", w, w.T), x.shape)
    np.testing.assert_allclose(grad(f)(x), want_grad, rtol=1e-12)
    np.testing.assert_allclose(fgrad.jit(f)(x), np.einsum("ij,jk,kl->", x, w, w.T), rtol=1e-12)
    rows = RNG.normal(size=(6, 3, 4))  # each row has x's shape: the path of one row's
    np.testing.assert_allclose(
        fgrad.vmap(grad(f))(rows), np.broadcast_to(want_grad, rows.shape), rtol=1e-12
    )
    assert seen and all(path == want_path and report == want_report for path, report in seen)
    sublists = []  # NumPy's sublist form: operands and their lists of axis numbers
    fgrad.jvp(lambda x: sublists.append(module.einsum_path(x, [0, 1], w, [1, 2])) or x, (x,), (x,))
    assert sublists == [np.einsum_path(x, [0, 1], w, [1, 2])]


ELLIPSIS_SUMMED = [
    ("...->", [(2, 3)]),
    ("...i,i->", [(2, 3), (3,)]),
    ("...i,...i->i", [(2, 3), (1, 3)]),
    ("i...->i", [(2, 3, 4)]),
    ("...ij->j", [(2, 3, 4)]),
    ("...,->", [(2, 3), ()]),
]


@pytest.mark.parametrize("subscripts,shapes", ELLIPSIS_SUMMED, ids=[s for s, _ in ELLIPSIS_SUMMED])
@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", None])
def test_einsum_sums_ellipsis_axes_left_out_of_the_output_as_numpy_for_its_optimize(
    subscripts, shapes, optimize
):
    # NumPy's C parser (optimize=False) refuses them and its Python parser (any other optimize)
    # sums them, as JAX does: fgrad refused them for every optimize
    ops = [RNG.normal(size=s) for s in shapes]

    def f(*ops):
        return fnp.einsum(subscripts, *ops, optimize=optimize)

    if optimize is False:
        with pytest.raises(ValueError):
            np.einsum(subscripts, *ops, optimize=optimize)
        with pytest.raises(ValueError, match=r"has no '\.\.\.'.*optimize=True"):
            f(*ops)
        with pytest.raises(ValueError, match=r"has no '\.\.\.'"):
            fgrad.jvp(f, ops, ops)
        return
    want = np.einsum(subscripts, *ops, optimize=optimize)
    for got in (f(*ops), fgrad.jit(f)(*ops), fgrad.jvp(f, ops, ops)[0]):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-13)
    fgrad.test_util.check_grads(f, ops, order=2)
    rows = RNG.normal(size=(4, *shapes[0]))
    np.testing.assert_allclose(
        fgrad.vmap(lambda x: f(x, *ops[1:]))(rows),
        [np.einsum(subscripts, r, *ops[1:], optimize=optimize) for r in rows],
        rtol=1e-13,
    )


OUT_CALLS = [
    ("dot", lambda m, a, b, out: m.dot(a, b, out=out)),
    ("einsum", lambda m, a, b, out: m.einsum("ij,jk->ik", a, b, out=out)),
    ("einsum sublists", lambda m, a, b, out: m.einsum(a, [0, 1], b, [1, 2], [0, 2], out=out)),
    ("outer", lambda m, a, b, out: m.outer(a[0], b[:, 0], out=out)),
    ("vecdot", lambda m, a, b, out: m.vecdot(a, b.T, out=out)),
    ("trace", lambda m, a, b, out: m.trace(m.stack([a, b], axis=-1), out=out)),
]
if hasattr(np, "matvec"):  # NumPy >= 2.2
    OUT_CALLS += [
        ("matvec", lambda m, a, b, out: m.matvec(a, b[:, 0], out=out)),
        ("vecmat", lambda m, a, b, out: m.vecmat(a[0], b, out=out)),
    ]


@pytest.mark.parametrize("call", [c for _, c in OUT_CALLS], ids=[n for n, _ in OUT_CALLS])
def test_out_on_plain_arrays_is_numpys_and_refused_for_traced_ones(call):
    # dot, einsum, outer and the gufuncs refused out= with nothing traced, where matmul,
    # linalg.multi_dot and the FFTs write into it as NumPy does
    a, b = RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2))
    want = call(np, a, b, None)
    out = np.full_like(want, np.nan)
    assert call(fnp, a, b, out) is out
    np.testing.assert_array_equal(out, call(np, a, b, np.empty_like(want)))
    with pytest.raises(TypeError, match="out="):
        fgrad.jvp(lambda a: call(fnp, a, b, np.empty_like(want)), (a,), (a,))
