"""Values against NumPy, closed-form derivatives and conventions for the extras (the gradient
table in tests/rows_extras.py checks their derivatives against central differences)."""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads


def traced_value(f, *args):
    """f's value computed on traced inputs (what a user sees inside grad)."""
    return fgrad.vjp(f, *args)[0]


# --- linspace, logspace, geomspace ----------------------------------------------------------------


@pytest.mark.parametrize("num", [0, 1, 2, 7])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("axis", [0, -1, 1])
def test_linspace_values_are_numpys_bit_for_bit(num, endpoint, axis):
    a, b = np.array([[0.3], [-1.1]]), np.array([2.0, 1e-3, -7.5])
    expected = np.linspace(a, b, num, endpoint, axis=axis)
    got = traced_value(lambda a, b: fnp.linspace(a, b, num, endpoint, axis=axis), a, b)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype


def test_linspace_of_plain_values_is_numpys_own():
    assert fnp.linspace is not np.linspace
    np.testing.assert_array_equal(fnp.linspace(0, 1, 11), np.linspace(0, 1, 11))
    got, step = fnp.linspace(2, 3, 5, retstep=True, dtype=np.float32)
    assert got.dtype == np.float32 and step == 0.25
    np.testing.assert_array_equal(
        fnp.linspace(0, 10, 4, dtype=int), np.linspace(0, 10, 4, dtype=int)
    )


def test_linspace_slopes_are_its_linear_weights():
    # sample i = start + (stop - start) i / (num - 1)
    d_start = fgrad.jacfwd(lambda a: fnp.linspace(a, 4.0, 5))(1.0)
    d_stop = fgrad.jacrev(lambda b: fnp.linspace(1.0, b, 5))(4.0)
    np.testing.assert_allclose(d_start, [1.0, 0.75, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(d_stop, [0.0, 0.25, 0.5, 0.75, 1.0])
    d_stop = fgrad.jacfwd(lambda b: fnp.linspace(1.0, b, 4, endpoint=False))(4.0)
    np.testing.assert_allclose(d_stop, [0.0, 0.25, 0.5, 0.75])
    assert fgrad.grad(lambda b: fnp.linspace(1.0, b, 1)[0])(4.0) == 0.0  # one sample: start
    _, step = fgrad.value_and_grad(lambda b: fnp.linspace(1.0, b, 5, retstep=True)[1])(4.0)
    assert step == 0.25


LISTS_HOLDING_TRACED = {
    "linspace": lambda m, t: m.linspace([t, 0.0], [1.0, 2.0], 3),
    "linspace, int": lambda m, t: m.linspace([t, 0.0], [1.0, 2.0], 3, dtype=int),
    "linspace, step": lambda m, t: m.linspace([t, 0.0], (1.0, t), 4, retstep=True)[1],
    "logspace": lambda m, t: m.logspace([t, 0.0], [1.0, 2.0], 3),
    "logspace, base": lambda m, t: m.logspace(0.0, [1.0, 2.0], 3, base=[2.0, t + 2.0]),
    "geomspace": lambda m, t: m.geomspace([t, 1.0], [2.0, 3.0], 3),
    "diagflat": lambda m, t: m.diagflat([t, 2.0]),
    "median": lambda m, t: m.median([t, 2.0, 3.0]),
    "var": lambda m, t: m.var([t, 2.0]),
    "average": lambda m, t: m.average([t, 2.0], weights=[1.0, t]),
    "ptp": lambda m, t: m.ptp((t, 2.0)),
    "quantile": lambda m, t: m.quantile([t, 2.0, 3.0], 0.3),
    "bincount": lambda m, t: m.bincount([0, 1, 1], [t, 2.0, t]),
    "cov": lambda m, t: m.cov([t, 2.0, 5.0]),
    "cov, rows": lambda m, t: m.cov([[t, 2.0, 5.0], [0.0, 1.0, t]]),
    "interp": lambda m, t: m.interp(0.25, [0.0, 1.0], [t, 3.0]),
    "polyder": lambda m, t: m.polyder([t, 2.0, 3.0]),
    "polyint": lambda m, t: m.polyint([t, 2.0, 3.0]),
}


@pytest.mark.parametrize("name", LISTS_HOLDING_TRACED)
def test_lists_holding_traced_values_are_arrays_as_numpy_reads_them(name):
    """A list (or tuple) holding a traced value is an array-like, as NumPy reads it: the
    value, dtype and shape are NumPy's in every transform, and the derivative goes through."""
    f = LISTS_HOLDING_TRACED[name]
    want = f(np, 0.5)
    for got in (
        f(fnp, 0.5),
        traced_value(lambda t: f(fnp, t), 0.5),
        fgrad.jvp(lambda t: f(fnp, t), (0.5,), (1.0,))[0],
        fgrad.vmap(lambda t: f(fnp, t))(np.array([0.5]))[0],
    ):
        np.testing.assert_array_equal(got, want, strict=True)
    if name != "linspace, int":  # floored samples have no derivative
        check_grads(lambda t: f(fnp, t), (0.5,), order=2)


def test_linspace_keeps_float32():
    a = np.float32(1.0)
    out = traced_value(lambda a: fnp.linspace(a, 2.0, 3), a)
    assert out.dtype == np.float32
    assert fgrad.grad(lambda a: fnp.sum(fnp.linspace(a, 2.0, 3)))(a).dtype == np.float32


def test_linspace_of_a_complex_start_into_real_samples_has_real_tangents():
    # the tangent was complex64 for a float32 primal; the samples keep the real part only
    f = lambda s: fnp.linspace(s, 1.0, 4, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)  # NumPy's, as eagerly
        out, tangent = fgrad.jvp(f, (np.complex64(0.3 + 0.1j),), (np.complex64(1.0 + 2.0j),))
        want = np.linspace(np.complex64(0.3 + 0.1j), 1.0, 4, dtype=np.float32)
    assert out.dtype == tangent.dtype == want.dtype
    # linear in start: the tangent is the samples from Re(t) = 1 to 0
    np.testing.assert_allclose(tangent, np.linspace(1.0, 0.0, 4, dtype=np.float32), rtol=1e-6)


def test_logspace_and_geomspace_values_are_numpys():
    a, b = np.array([0.3, -1.0]), np.array([[2.0], [1.5]])
    for f, g in [
        (lambda a, b: fnp.logspace(a, b, 4), lambda a, b: np.logspace(a, b, 4)),
        (
            lambda a, b: fnp.logspace(a, b, 4, base=2.0, axis=-1),
            lambda a, b: np.logspace(a, b, 4, base=2.0, axis=-1),
        ),
        (lambda a, b: fnp.geomspace(a + 3, b + 3, 5), lambda a, b: np.geomspace(a + 3, b + 3, 5)),
        (
            lambda a, b: fnp.geomspace(-a - 3, -b - 3, 4, endpoint=False, axis=1),
            lambda a, b: np.geomspace(-a - 3, -b - 3, 4, endpoint=False, axis=1),
        ),
    ]:
        np.testing.assert_array_equal(traced_value(f, a, b), g(a, b))


def test_logspace_base_derivative_and_geomspace_end_points():
    # d/dbase of base ** 2 = 2 base
    assert fgrad.grad(lambda c: fnp.logspace(0.0, 2.0, 3, base=c)[-1])(3.0) == pytest.approx(6.0)
    # geomspace's ends are start and stop exactly: slopes 1 there
    jac = fgrad.jacfwd(lambda s: fnp.geomspace(s, 8.0, 4))(2.0)
    assert jac[0] == 1.0 and jac[-1] == 0.0
    with pytest.raises(ValueError, match="zero"):
        fgrad.grad(lambda s: fnp.sum(fnp.geomspace(s, 0.0, 3)))(1.0)


def test_geomspace_of_complex_end_points_is_numpys_and_holomorphic():
    a, b = 1.0 + 0.5j, -2.0 + 3.0j
    for kw in ({}, {"endpoint": False}):
        np.testing.assert_array_equal(
            traced_value(lambda a, b: fnp.geomspace(a, b, 5, **kw), a, b),
            np.geomspace(a, b, 5, **kw),
        )
    # sample i is a**(1 - t) b**t (t = i/2 here): its slopes are (1 - t) s / a and t s / b
    s = np.geomspace(a, b, 3)[1]
    for mode in (fgrad.grad, lambda f, **kw: fgrad.jacfwd(f, **kw)):
        assert mode(lambda b: fnp.geomspace(a, b, 3)[1], holomorphic=True)(b) == pytest.approx(
            0.5 * s / b, rel=1e-13
        )
        assert mode(lambda a: fnp.geomspace(a, b, 3)[1], holomorphic=True)(a) == pytest.approx(
            0.5 * s / a, rel=1e-13
        )


def test_float32_stays_float32_traced_or_not_where_numpy_returns_float64():
    # NumPy computes these in float64 and returns float64; fgrad returns NumPy's value rounded
    # once to float32, the same bits traced or not (README: float32 in, float32 out)
    a, b = np.float32(1.5), np.float32(7.25)
    w = np.array([0.1, 0.7, 2.3], dtype=np.float32)
    p = np.array([0.3, -1.7, 2.9, 0.45], dtype=np.float32)
    k = np.array([0.5, -0.25], dtype=np.float32)
    for f, ref, args in [
        (lambda a, b: fnp.geomspace(a, b, 5), lambda a, b: np.geomspace(a, b, 5), (a, b)),
        (
            lambda a: fnp.geomspace(-a, np.float32(-3.0), 4, endpoint=False),
            lambda a: np.geomspace(-a, np.float32(-3.0), 4, endpoint=False),
            (a,),
        ),
        (
            lambda a, b: fnp.geomspace(a * (1 + 1j), b, 3),
            lambda a, b: np.geomspace(a * (1 + 1j), b, 3),
            (a, b),
        ),
        (lambda w: fnp.bincount([0, 2, 2], w), lambda w: np.bincount([0, 2, 2], w), (w,)),
        (lambda p: fnp.polyder(p, 3), lambda p: np.polyder(p, 3), (p,)),
        (lambda p, k: fnp.polyint(p, 2, k), lambda p, k: np.polyint(p, 2, k), (p, k)),
    ]:
        plain, expected = f(*args), ref(*args)
        single = {np.float64: np.float32, np.complex128: np.complex64}[expected.dtype.type]
        assert plain.dtype == single
        np.testing.assert_array_equal(plain, expected.astype(single))
        traced = traced_value(f, *args)
        assert traced.dtype == plain.dtype
        np.testing.assert_array_equal(traced, plain)
    # an explicit dtype is NumPy's, as are float64 end points
    assert fnp.geomspace(a, b, 3, dtype=np.float64).dtype == np.float64
    assert traced_value(lambda b: fnp.geomspace(1.0, b, 3), 2.0).dtype == np.float64
    np.testing.assert_array_equal(
        fnp.geomspace([1.0, 2.0], 10.0, 3), np.geomspace([1.0, 2.0], 10.0, 3)
    )
    np.testing.assert_array_equal(
        traced_value(lambda b: fnp.geomspace([1.0, b], 10.0, 3), 2.0),
        np.geomspace([1.0, 2.0], 10.0, 3),
    )


def test_bincount_refuses_complex_weights_as_numpy_does():
    for w in (np.array([1.0, 2.0j]), [1.0, 2.0j]):
        with pytest.raises(
            TypeError,
            match=r"weights are complex \(shape \(2,\) and dtype "
            r"complex128\); .* real and imaginary parts",
        ):
            fnp.bincount([0, 1], w)
    with pytest.raises(TypeError, match="weights are complex"):
        fgrad.grad(lambda w: fnp.real(fnp.bincount([0, 1], w)[0]))(np.array([1.0, 2.0j]))


# --- copy, NumPy 2's spellings --------------------------------------------------------------------


def test_copy_is_a_new_array_and_the_identity():
    x = np.arange(3.0)
    y = fnp.copy(x)
    y[0] = 9.0
    assert x[0] == 0.0
    np.testing.assert_array_equal(fgrad.jacrev(fnp.copy)(x), np.eye(3))


def test_array_api_spellings_agree_with_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(fnp.permute_dims(x, (2, 0, 1)), np.permute_dims(x, (2, 0, 1)))
    np.testing.assert_array_equal(fnp.matrix_transpose(x), np.matrix_transpose(x))
    np.testing.assert_array_equal(fnp.concat([x, x], axis=None), np.concat([x, x], axis=None))
    np.testing.assert_array_equal(fnp.diagflat(x[0], -1), np.diagflat(x[0], -1))
    with pytest.raises(ValueError, match="at least 2-D"):
        fnp.matrix_transpose(np.ones(3))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concat_of_one_array_joins_its_pieces_as_numpys(axis):
    # NumPy's concat is concatenate: an array passed whole is joined along its first axis
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(fnp.concat(x, axis=axis), np.concat(x, axis=axis))
    check_grads(lambda x: fnp.concat(x, axis=axis), (x,), order=1)


def test_where_of_the_condition_alone_is_nonzero():
    x = np.array([0.5, -1.0, 2.0, -3.0])
    for where in (fnp.where, np.where):  # np.where dispatches to fgrad's on a traced value
        np.testing.assert_array_equal(fgrad.jit(lambda x: where(x > 0)[0])(x), [0, 2])
        g = fgrad.grad(lambda x: fnp.sum(x[where(x > 0)] ** 2))(x)
        np.testing.assert_array_equal(g, [1.0, 0.0, 4.0, 0.0])
    rows = fgrad.vmap(lambda x: fnp.sum(x[fnp.where(x > 0)]))(np.stack([x, -x]))
    np.testing.assert_array_equal(rows, [2.5, 4.0])
    with pytest.raises(ValueError, match="both x and y, or neither.*shape \\(4,\\)"):
        fnp.where(x > 0, x)


# --- cumulative_sum, cumulative_prod --------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("kw", [{}, {"include_initial": True}])
def test_cumulative_values_are_numpys(name, kw):
    x = np.array([[1.5, -2.0, 0.5], [3.0, 0.25, -1.0]])
    for axis in (0, 1, -1):
        got = traced_value(lambda x: getattr(fnp, name)(x, axis=axis, **kw), x)
        np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis, **kw))
    np.testing.assert_array_equal(
        traced_value(lambda v: getattr(fnp, name)(v, **kw), x[0]), getattr(np, name)(x[0], **kw)
    )
    with pytest.raises(ValueError, match="axis must be given"):
        getattr(fnp, name)(x)


def test_cumulative_prod_is_exact_at_zeros():
    g = fgrad.grad(lambda x: fnp.cumulative_prod(x, include_initial=True)[-1])
    np.testing.assert_array_equal(g(np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])


# --- vector products and bincount -----------------------------------------------------------------


def test_vecdot_conjugates_its_first_argument_and_numpy_dispatches():
    z = np.array([1 + 2j, 3 - 1j])
    w = np.array([2 - 1j, 0.5j])
    assert fnp.vecdot(z, w) == np.vecdot(z, w)
    assert traced_value(lambda a: fnp.vecdot(a * z, w), 1.0) == pytest.approx(np.vecdot(z, w))
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(fgrad.grad(lambda x: np.vecdot(x, x))(x), 2 * x)
    with pytest.raises(ValueError, match="lengths 3 and 2"):
        fgrad.grad(lambda x: fnp.vecdot(x, np.ones(2)))(x)


@pytest.mark.skipif(not hasattr(np, "matvec"), reason="matvec and vecmat need NumPy >= 2.2")
def test_matvec_and_vecmat_against_numpy():
    rng = np.random.default_rng(0)
    a, v, u = rng.normal(size=(4, 2, 3)), rng.normal(size=3), rng.normal(size=2)
    np.testing.assert_allclose(traced_value(fnp.matvec, a, v), np.matvec(a, v))
    np.testing.assert_allclose(traced_value(fnp.vecmat, u, a), np.vecmat(u, a))
    z = u + 1j * rng.normal(size=2)
    np.testing.assert_allclose(fnp.vecmat(z, a.astype(complex)), np.vecmat(z, a))
    # d(u^T A v)/dv = A^T u
    np.testing.assert_allclose(fgrad.grad(lambda v: u @ fnp.matvec(a[0], v))(v), a[0].T @ u)


def test_bincount_weights_gradient_and_dtype():
    x = np.array([0, 2, 2, 1, 0])
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(
        traced_value(lambda w: fnp.bincount(x, w, 4), w), np.bincount(x, w, 4)
    )
    g = fgrad.grad(lambda w: fnp.bincount(x, w) @ np.array([10.0, 20.0, 30.0]))(w)
    np.testing.assert_array_equal(g, [10.0, 30.0, 30.0, 20.0, 10.0])
    assert traced_value(lambda w: fnp.bincount(x, w), w.astype(np.float32)).dtype == np.float32
    np.testing.assert_array_equal(fnp.bincount(x), np.bincount(x))  # counts: NumPy's own


def test_bincount_of_booleans_is_numpys_under_every_transform():
    """A boolean x (a mask) is binned as 0 and 1 by NumPy and eagerly; under jit, vmap and
    grad in the weights it was refused ("x must be a 1-D array of non-negative integers")."""
    mask = np.array([True, True, False, True])
    w = np.array([1.5, -2.0, 4.0, 0.25])
    counts = np.bincount(mask)
    np.testing.assert_array_equal(fgrad.jit(fnp.bincount)(mask), counts)
    np.testing.assert_array_equal(
        fgrad.vmap(fnp.bincount)(np.stack([mask, ~mask])), [counts, np.bincount(~mask)]
    )
    np.testing.assert_array_equal(
        traced_value(lambda w: fnp.bincount(mask, w, 3), w), np.bincount(mask, w, 3)
    )
    # d(bin 1)/dw is 1 where the mask is True
    g = fgrad.grad(lambda w: fnp.bincount(mask, weights=w)[1])(w)
    np.testing.assert_array_equal(g, mask.astype(float))
    np.testing.assert_array_equal(
        fgrad.vmap(lambda w: fnp.bincount(mask, weights=w))(np.stack([w, 2 * w])),
        [np.bincount(mask, w), np.bincount(mask, 2 * w)],
    )


# --- polynomials ----------------------------------------------------------------------------------


def test_polymul_of_an_empty_factor_is_numpys_zero_polynomial():
    # NumPy reads no coefficients as the zero polynomial [0]; the traced product convolved
    # the empty array and raised ("convolve: a is empty") under grad, jacfwd, vmap and jit.
    e, q = np.zeros(0), np.array([1.0, 2.0, 3.0])
    for a, b in ((e, q), (q, e)):
        np.testing.assert_array_equal(traced_value(fnp.polymul, a, b), np.polymul(a, b))
    ge, gq = fgrad.grad(lambda a, b: fnp.sum(fnp.polymul(a, b)), argnums=(0, 1))(e, q)
    assert ge.shape == (0,) and np.all(gq == 0)
    np.testing.assert_array_equal(fgrad.jit(fnp.polymul)(e, q), np.zeros(3))
    np.testing.assert_array_equal(fgrad.vmap(fnp.polymul, (None, 0))(e, np.stack([q, q])), 0)


def test_polynomial_arithmetic_values_are_numpys():
    p, q = np.array([1.0, -2.0, 0.5, 3.0]), np.array([2.0, 1.0])
    for name in ("polyadd", "polysub", "polymul"):
        for a, b in [(p, q), (q, p)]:
            got = traced_value(getattr(fnp, name), a, b)
            np.testing.assert_allclose(got, getattr(np, name)(a, b), rtol=1e-15)
    quot, rem = traced_value(fnp.polydiv, p, q)
    nq, nr = np.polydiv(p, q)
    np.testing.assert_allclose(quot, nq)
    np.testing.assert_allclose(rem, nr)
    for m in (0, 1, 3, 5):
        np.testing.assert_array_equal(
            traced_value(lambda p: fnp.polyder(p, m), p), np.polyder(p, m)
        )
    np.testing.assert_allclose(
        traced_value(lambda p: fnp.polyint(p, 2, [1.0, 2.0]), p), np.polyint(p, 2, [1.0, 2.0])
    )
    np.testing.assert_array_equal(fnp.polyder([1, 1, 1, 1], 2), np.polyder([1, 1, 1, 1], 2))


@pytest.mark.parametrize(
    "du,dv",
    [
        (np.float64, np.float32),
        (np.float64, np.float16),
        (np.float32, np.float64),
        (np.int16, np.float16),
        (np.complex128, np.complex64),
    ],
)
def test_polydiv_of_mixed_precisions_traced_is_numpys(du, dv):
    # traced, 1 / v[0] was computed in the common dtype where NumPy rounds it to v's own:
    # with float64 u and float32 v, 0.78720947 for 0.78720948, and the remainder's leading
    # 1e-8's cancelled exactly and were dropped (shape (1,) for NumPy's (3,))
    u = np.array([1.7640523, 0.4001572, 0.978738]).astype(du)
    v = np.array([2.2408931, 1.867558]).astype(dv)
    want = np.polydiv(u, v)
    jitted = fgrad.jit(fnp.polydiv)
    jitted(u, v)
    candidates = [jitted(u, v)]
    if u.dtype.kind in "fc":
        candidates.append(traced_value(fnp.polydiv, u, v))
    for got in candidates:
        for ours, theirs in zip(got, want):
            assert np.asarray(ours).dtype == theirs.dtype
            np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_polydiv_of_complex_coefficients_traced_is_numpys(dtype):
    # with u traced, `scale * r[k]` (a NumPy scalar times a traced one) took the multiply
    # ufunc, which rounds complex products otherwise than NumPy's scalar `*`: the primal under
    # vjp/jvp/jet differed from NumPy's by 1e-16 (complex128) or 3e-8 (complex64)
    rng = np.random.default_rng(11)
    for _ in range(20):
        m, n = rng.integers(2, 7), rng.integers(1, 4)
        u = (rng.normal(size=m) + 1j * rng.normal(size=m)).astype(dtype)
        v = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
        want = np.polydiv(u, v)
        for got in [
            traced_value(lambda u: fnp.polydiv(u, v), u),
            traced_value(lambda v: fnp.polydiv(u, v), v),
            traced_value(fnp.polydiv, u, v),
            fgrad.jvp(lambda u: fnp.polydiv(u, v), (u,), (u,))[0],
            fgrad.jet(lambda u: fnp.polydiv(u, v), (u,), ((u,),))[0],
        ]:
            for ours, theirs in zip(got, want):
                assert ours.dtype == theirs.dtype
                np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_, np.float32])
def test_polyint_of_order_zero_is_p_as_it_is_under_every_transform(dtype):
    # NumPy returns p unchanged; traced, p was cast to float64 first (int8 -> float64)
    p = np.array([1, 0, 3]).astype(dtype)
    want = np.polyint(p, 0)
    f = lambda p: fnp.polyint(p, 0)
    jitted = fgrad.jit(f)
    for got in (f(p), jitted(p), jitted(p)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    rows = fgrad.vmap(f)(np.stack([p, p]))
    assert rows.dtype == want.dtype
    np.testing.assert_array_equal(rows, np.stack([want, want]))


@pytest.mark.parametrize("name", ["polyadd", "polysub"])
def test_polyadd_and_polysub_of_2d_arrays_of_one_length_are_numpys_when_traced(name):
    # NumPy adds operands of equal length as they are, so two (2, 3) arrays work; traced, they
    # were refused as "a1 must be a 1-D sequence of coefficients"
    a, b = np.arange(6.0).reshape(2, 3), np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])
    ours, theirs = getattr(fnp, name), getattr(np, name)
    want = theirs(a, b)
    np.testing.assert_array_equal(fgrad.jit(ours)(a, b), want)
    np.testing.assert_array_equal(traced_value(ours, a, b), want)
    np.testing.assert_array_equal(
        fgrad.jit(ours)(np.ones(2), np.ones((3, 3))), theirs(np.ones(2), np.ones((3, 3)))
    )
    sign = 1.0 if name == "polyadd" else -1.0
    np.testing.assert_array_equal(
        fgrad.grad(lambda b: fnp.sum(ours(a, b)))(b), np.full((2, 3), sign)
    )


def test_select_reads_a_1d_bool_array_as_a_list_of_conditions():
    # `if not condlist` raised "truth value of an array ... is ambiguous"; NumPy answers
    cond, choices = np.array([False, True, True]), np.array([1.0, 2.0, 3.0])
    for args in [(cond, choices), (cond, choices, 7.0)]:
        want = np.select(*args)
        for got in (fnp.select(*args), fgrad.jit(fnp.select)(*args)):
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert fgrad.grad(lambda c: fnp.select(cond, c))(choices).tolist() == [0.0, 1.0, 0.0]


def test_polyint_then_polyder_is_the_identity_and_polydiv_reconstructs():
    p = np.array([1.0, -2.0, 0.5])
    jac = fgrad.jacfwd(lambda p: fnp.polyder(fnp.polyint(p, 2, 3.0), 2))(p)
    np.testing.assert_allclose(jac, np.eye(3))
    # d/dk of polyint(p, 1, k) is the unit vector of the constant term
    np.testing.assert_array_equal(fgrad.grad(lambda k: fnp.polyint(p, 1, k)[-1])(0.5), 1.0)
    u, v = np.array([1.0, 2.0, -1.0, 4.0]), np.array([0.5, -1.0])

    def residual(u, v):
        quot, rem = fnp.polydiv(u, v)
        return fnp.polysub(u, fnp.polyadd(fnp.polymul(quot, v), rem))

    np.testing.assert_allclose(fgrad.jacrev(residual)(u, v), np.zeros((4, 4)), atol=1e-12)


# --- unwrap and gradient --------------------------------------------------------------------------


def test_unwrap_values_are_numpys_and_its_slope_is_one():
    rng = np.random.default_rng(3)
    p = np.angle(np.exp(1j * np.cumsum(rng.normal(size=(2, 10)) * 2, axis=1)))
    for kw in ({}, {"axis": 0}, {"period": 4.0}, {"discont": 5.0}):
        np.testing.assert_array_equal(
            traced_value(lambda p: fnp.unwrap(p, **kw), p), np.unwrap(p, **kw)
        )
    np.testing.assert_array_equal(
        fgrad.grad(lambda p: fnp.sum(fnp.unwrap(p) ** 2))(p), 2 * np.unwrap(p)
    )
    # a traced period's slope is the number of periods added (it was refused)
    k = (np.unwrap(p, period=5.0) - p) / 5.0
    np.testing.assert_allclose(fgrad.grad(lambda c: fnp.sum(fnp.unwrap(p, period=c)))(5.0), k.sum())


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_is_numpys_linear_map(edge_order):
    f = np.array([[1.0, 2.5, 4.0, 7.5], [0.0, -1.0, 3.0, 2.0], [2.0, 2.0, 5.0, 1.0]])
    uneven, even = np.array([0.0, 0.5, 1.75, 2.0]), np.array([1.0, 3.0, 5.0])
    for args, kw in [
        ((), {}),
        ((0.5,), {"axis": 1}),
        ((2.0, 0.25), {}),
        ((), {"axis": (1, 0)}),
        ((uneven,), {"axis": 1}),  # coordinates: NumPy's formulas for uneven steps
        ((even, uneven), {}),
        ((even, 0.5), {}),
    ]:
        got = traced_value(lambda f: fnp.gradient(f, *args, edge_order=edge_order, **kw), f)
        expected = np.gradient(f, *args, edge_order=edge_order, **kw)
        np.testing.assert_array_equal(got, expected)
    # the Jacobian's columns are NumPy's gradient of the unit vectors
    x = np.arange(5.0) ** 2
    jac = fgrad.jacrev(lambda x: fnp.gradient(x, 0.5, edge_order=edge_order))(x)
    np.testing.assert_allclose(
        jac,
        np.stack([np.gradient(e, 0.5, edge_order=edge_order) for e in np.eye(5)], axis=1),
        rtol=1e-14,
    )
    with pytest.raises(ValueError, match="too small"):
        fgrad.grad(lambda x: fnp.sum(fnp.gradient(x, edge_order=2)))(np.ones(2))
    with pytest.raises(ValueError, match="one entry per element along it, 5"):
        fgrad.grad(lambda x: fnp.sum(fnp.gradient(x, np.arange(4.0))))(x)


def test_gradient_by_even_coordinates_is_differentiated_as_uneven_ones():
    # At evenly spaced coordinates NumPy uses the formula of one step, but moving one
    # coordinate makes them uneven: the derivative is the uneven formula's (finite
    # differences of NumPy's gradient), while the value stays NumPy's
    f, x = np.array([1.0, 2.5, 4.0, 7.5, 3.0]), np.arange(5.0) * 0.5
    for edge_order in (1, 2):

        def g(x, edge_order=edge_order):
            return fnp.sum(fnp.gradient(f, x, edge_order=edge_order) * np.arange(1.0, 6.0))

        got = fgrad.grad(g)(x)
        eps = 1e-6
        fd = [(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(5)]
        np.testing.assert_allclose(got, fd, rtol=1e-6)
        assert abs(got[2]) > 1.0  # the middle coordinate matters (the even formula: 0)
        assert (
            fgrad.jit(g)(x)
            == g(x)
            == np.sum(np.gradient(f, x, edge_order=edge_order) * np.arange(1.0, 6.0))
        )


def test_declared_names_return_numpys_answers():
    x = np.array([-1.3, 0.4, 2.6])
    assert fgrad.grad(lambda x: fnp.sum(x) * fnp.array_equal(x, x))(x).tolist() == [1.0] * 3
    np.testing.assert_array_equal(fnp.digitize(x, [0.0, 1.0]), np.digitize(x, [0.0, 1.0]))
    counts, _edges = fnp.histogram(x, bins=2)
    np.testing.assert_array_equal(counts, np.histogram(x, bins=2)[0])
    assert fnp.isrealobj(x) and not fnp.iscomplexobj(x) and fnp.isscalar(1.0)
    np.testing.assert_array_equal(fnp.full_like(x, 2.0), np.full_like(x, 2.0))


# --- tracing never changes a value: the names and keywords added for issue 15 ---------------------
# Each case: the fgrad call and NumPy's, on the same inputs. The untraced call must equal
# NumPy's exactly (value, dtype, shape), and so must the value under vjp and under jvp.

_R = np.random.default_rng(15)
_A = _R.normal(size=(4, 3))
_A32 = _A.astype(np.float32)
_AC = _A + 1j * _R.normal(size=(4, 3))
_M = _R.random((4, 3)) > 0.3
_N = np.where(_R.random((4, 3)) > 0.8, np.nan, _A)
_V = np.array([3.0, 1.0, 2.0, 1.0, 3.0, 0.5])
_W = _R.uniform(0.5, 2.0, 6)
_X6 = np.array([0.0, 0.4, 1.1, 1.5, 2.2, 3.0])


def _case(name, call, *args):
    """`call(m)` is the function under test written with m = fgrad.numpy or numpy."""
    return pytest.param(call(fnp), call(np), args, id=name)


VALUE_CASES = [
    _case("sum-where", lambda m: lambda a: m.sum(a, axis=0, where=_M), _A),
    _case("sum-initial", lambda m: lambda a: m.sum(a, initial=2.5), _A32),
    _case("sum-dtype", lambda m: lambda a: m.sum(a, axis=1, dtype=np.float64), _A32),
    _case("mean-where", lambda m: lambda a: m.mean(a, axis=1, where=_M, keepdims=True), _A32),
    _case("mean-complex", lambda m: lambda a: m.mean(a, where=_M), _AC),
    _case("prod-where-initial", lambda m: lambda a: m.prod(a, axis=0, where=_M, initial=1.5), _A),
    _case("prod-dtype", lambda m: lambda a: m.prod(a, dtype=np.float64), _A32),
    _case("max-initial-where", lambda m: lambda a: m.max(a, axis=0, initial=-0.3, where=_M), _A),
    _case("amin-initial", lambda m: lambda a: m.amin(a, initial=0.1), _A32),
    _case(
        "var-where-mean",
        lambda m: lambda a: m.var(a, 0, where=_M, mean=np.mean(_A, 0, keepdims=True)),
        _A,
    ),
    _case("std-complex", lambda m: lambda a: m.std(a, axis=1, ddof=1), _AC),
    _case("nanvar-where", lambda m: lambda a: m.nanvar(a, axis=0, where=_M), _N),
    _case(
        "nanmean-dtype", lambda m: lambda a: m.nanmean(a, dtype=np.float64), _N.astype(np.float32)
    ),
    _case("nanmax-initial", lambda m: lambda a: m.nanmax(a, axis=1, initial=5.0), _N),
    _case("reshape-F", lambda m: lambda a: m.reshape(a, (2, 6), order="F"), _A),
    _case("ravel-K", lambda m: lambda a: m.ravel(a.T, order="K"), _A),
    _case("concatenate-dtype", lambda m: lambda a: m.concatenate([a, a], dtype=np.float32), _A),
    _case("vstack-one-array", lambda m: m.vstack, _A),
    _case("hstack-one-array", lambda m: m.hstack, _A),
    _case("column_stack-one-array", lambda m: m.column_stack, _A),
    _case("dstack-one-array", lambda m: m.dstack, _A),
    _case("einsum-default", lambda m: lambda a: m.einsum("ij,kj->ik", a, a), _A),
    _case("arcsinh-dtype", lambda m: lambda a: m.arcsinh(a, dtype=np.float32), _A),
    _case(
        "hypot-signature",
        lambda m: lambda a: m.hypot(a, 2.0, signature=(np.float64, np.float64, None)),
        _A32,
    ),
    _case(
        "vecdot-axes-keepdims",
        lambda m: lambda a: m.vecdot(a, a, axes=[(0,), (0,), (0,)], keepdims=True),
        _A,
    ),
    _case("vecdot-complex", lambda m: lambda a: m.vecdot(a, a[::-1]), _AC),
    _case("vecdot-float32", lambda m: lambda a: m.vecdot(a, a, axis=0), _A32),
    _case("matvec-complex", lambda m: lambda a: m.matvec(a, a[0]), _AC),
    _case("vecmat-complex", lambda m: lambda a: m.vecmat(a[:, 0], a), _AC),
    _case("r_", lambda m: lambda a: m.r_[a[0], 0.5, a[1, :2]], _A32),
    _case("r_-directive", lambda m: lambda a: m.r_["0,2,0", a[0], a[1]], _A),
    _case("c_", lambda m: lambda a: m.c_[a[0], a[1]], _A),
    _case("c_-scalar", lambda m: lambda a: m.c_[a[:1], 1.0, a[1:2]], _A32),
    _case("partition", lambda m: lambda a: m.partition(a, (1, 2), axis=0), _A),
    _case("rollaxis", lambda m: lambda a: m.rollaxis(a, 1), _A),
    _case("real_if_close", lambda m: lambda a: m.real_if_close(a + 1e-16j), _A),
    _case("unique", lambda m: lambda v: m.unique(v, True, True, True), _V),
    _case("unique-axis", lambda m: lambda a: m.unique(a, axis=1), _A),
    _case(
        "apply_along_axis", lambda m: lambda a: m.apply_along_axis(lambda r: r[:2] * r[2], 1, a), _A
    ),
    _case("vectorize", lambda m: m.vectorize(lambda u: u * u if u > 0 else -u), _A32),
    _case("vectorize-signature", lambda m: m.vectorize(lambda r: r.sum(), signature="(n)->()"), _A),
    _case("polyfit", lambda m: lambda y: m.polyfit(_X6, y, 2, w=_W, full=True), _V),
    _case("polyfit-cov", lambda m: lambda y: m.polyfit(_X6, y, 1, cov=True), _V),
    _case("histogram-weights", lambda m: lambda w: m.histogram(_V, bins=3, weights=w), _W),
    _case(
        "histogram-density",
        lambda m: lambda w: m.histogram(_V, [0.0, 1.0, 2.5, 3.0], density=True, weights=w),
        _W,
    ),
]


def _assert_identical(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, type(want)) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_identical(g, w)
        return
    assert np.shape(got) == np.shape(want) and np.result_type(got) == np.result_type(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fgrad_call, numpy_call, args", VALUE_CASES)
def test_new_names_and_keywords_give_numpys_value_traced_or_not(fgrad_call, numpy_call, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = numpy_call(*args)
        _assert_identical(fgrad_call(*args), want)
        _assert_identical(fgrad.vjp(fgrad_call, *args)[0], want)
        tangents = tuple(np.ones_like(a) for a in args)
        _assert_identical(fgrad.jvp(fgrad_call, args, tangents)[0], want)


# --- r_ and c_ ------------------------------------------------------------------------------------


def test_index_tricks_differentiate_their_traced_items_and_slice_ends():
    x = np.array([0.5, 2.0])
    j = fgrad.jacfwd(lambda x: fnp.r_[x, 7.0, x[::-1]])(x)
    np.testing.assert_array_equal(j, [[1, 0], [0, 1], [0, 0], [0, 1], [1, 0]])
    # linspace slice: sample i = start + (stop - start) i / 3
    j = fgrad.jacrev(lambda x: fnp.r_[x[0] : x[1] : 4j])(x)
    np.testing.assert_allclose(j, [[1, 0], [2 / 3, 1 / 3], [1 / 3, 2 / 3], [0, 1]])
    # arange slice: start + i, so each sample moves with start; stop only sets the count
    np.testing.assert_array_equal(fgrad.jacrev(lambda x: fnp.r_[x[0] : x[1]])(x), [[1, 0], [1, 0]])
    j = fgrad.jacrev(lambda x: fnp.c_[x, 2 * x])(x)
    assert j.shape == (2, 2, 2) and j[1, 1, 1] == 2.0


def test_index_tricks_refuse_what_fgrad_cannot_differentiate_with_a_reason():
    x = np.array([0.5, 2.0])
    with pytest.raises(TypeError, match="numpy.matrix"):
        fgrad.grad(lambda x: fnp.sum(fnp.r_["r", x]))(x)
    with pytest.raises(ValueError, match="first entry"):
        fgrad.grad(lambda x: fnp.sum(fnp.r_[x, "0,2"]))(x)
    with pytest.raises(TypeError, match="step"):
        fgrad.grad(lambda x: fnp.sum(fnp.r_[0.0 : 3.0 : x[0]]))(x)
    assert len(fnp.r_) == 0 and repr(fnp.c_) == "fgrad.numpy.c_"
    np.testing.assert_array_equal(fnp.r_[1:4, 0, np.ones(2)], np.r_[1:4, 0, np.ones(2)])


# --- apply_along_axis and vectorize ---------------------------------------------------------------


def test_apply_along_axis_differentiates_closures_and_extra_arguments():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = lambda x, w: fnp.apply_along_axis(lambda r, s: fnp.dot(r, w) * s, 1, x, 2.0)
    jx, jw = fgrad.jacrev(f, argnums=(0, 1))(a, np.array([0.5, -1.0]))
    np.testing.assert_array_equal(jx, [[[1.0, -2.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, -2.0]]])
    np.testing.assert_array_equal(jw, 2.0 * a)
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        fnp.apply_along_axis(fnp.sum, 0, np.ones((3, 0)))
    with pytest.raises(ValueError, match="out of bounds"):
        fnp.apply_along_axis(fnp.sum, 2, a)


def test_vectorize_takes_numpys_keywords_and_differentiates_the_branches_taken():
    f = fnp.vectorize(lambda x, y: x * y if x > 0 else y - x)
    g = fgrad.grad(lambda x: fnp.sum(f(x, 3.0)))(np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(g, [-1.0, 3.0])
    pow_ = fnp.vectorize(lambda x, n: x**n, excluded={"n"})
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.sum(pow_(x, n=3)))(np.ones(2)), [3, 3])

    @fnp.vectorize(otypes=[np.float32], doc="doubles")
    def double(x):
        return 2 * x

    assert double.__doc__ == "doubles" and double.__name__ == "double"
    assert double(np.arange(3)).dtype == np.float32
    assert double(np.zeros(0)).shape == (0,)
    with pytest.raises(ValueError, match="size 0"):
        fnp.vectorize(lambda x: x)(np.zeros(0))
    with pytest.raises(TypeError, match="decorator"):
        fnp.vectorize(3)
    norm = fnp.vectorize(lambda r: fnp.sqrt(fnp.sum(r * r)), signature="(n)->()")
    a = np.array([[3.0, 4.0], [6.0, 8.0]])
    np.testing.assert_allclose(fgrad.grad(lambda a: fnp.sum(norm(a)))(a), a / [[5.0], [10.0]])
    with pytest.raises(ValueError, match="core dimension"):
        fnp.vectorize(lambda u, v: u, signature="(n),(n)->()")(np.ones(2), np.ones(3))


# --- polyfit and histogram ------------------------------------------------------------------------


def test_polyfit_derivatives_are_those_of_the_least_squares_fit():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([1.0, 2.5, 4.5, 7.5])
    # slope of a line fit: sum((x - mean x) y) / sum((x - mean x)^2), linear in y
    xc = x - x.mean()
    np.testing.assert_allclose(
        fgrad.grad(lambda y: fnp.polyfit(x, y, 1)[0])(y), xc / np.sum(xc * xc), rtol=1e-12
    )
    np.testing.assert_allclose(
        fgrad.jacfwd(lambda y: fnp.polyfit(x, y, 1)[0])(y), xc / np.sum(xc * xc), rtol=1e-12
    )
    # an exact fit stays exact when x moves: the coefficients of y = x^2 do not change
    g = fgrad.jacrev(lambda x: fnp.polyfit(x, x * x, 2))(x)
    np.testing.assert_allclose(g, np.zeros((3, 4)), atol=1e-12)
    with pytest.warns(np.exceptions.RankWarning):
        fgrad.grad(lambda y: fnp.polyfit(np.ones(4), y, 2)[0])(y)


@pytest.mark.parametrize("x_dtype", [np.float32, np.float16, np.complex64])
@pytest.mark.parametrize("y_dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("flags", [{}, {"full": True}, {"cov": True}])
def test_polyfit_under_vmap_is_numpys_double_precision_fit(x_dtype, y_dtype, flags):
    """NumPy's vander of single-precision x is double precision; fgrad's keeps x's dtype, so
    under vmap (the fgrad fit) polyfit(float32 x, y, 2) was 4e-7 off NumPy's, and float32
    for float32 y where NumPy gives float64."""
    x = np.arange(5.0).astype(x_dtype)
    rows = np.array([[0.3, -1.2, 0.8, 1.9, -0.4], [1.0, 0.2, -0.7, 0.5, 0.1]])
    rows = (rows * 10).astype(y_dtype) if y_dtype == np.int32 else rows.astype(y_dtype)
    f = lambda y: fnp.polyfit(x, y, 2, **flags)
    outputs = lambda r: r if flags else (r,)
    got = outputs(fgrad.vmap(f)(rows))
    for i, y in enumerate(rows):
        for want, batch in zip(outputs(np.polyfit(x, y, 2, **flags)), got):
            want, row = np.asarray(want), np.asarray(batch)[i]
            assert row.dtype == want.dtype
            np.testing.assert_allclose(row, want, rtol=1e-12, atol=1e-12)


def test_histogram_is_linear_in_its_weights_and_numpys_dispatches_here():
    a = np.array([0.1, 0.4, 0.45, 0.9, 1.5])
    j = fgrad.jacrev(lambda w: fnp.histogram(a, 2, (0.0, 1.0), weights=w)[0])(np.ones(5))
    np.testing.assert_array_equal(j, [[1, 1, 1, 0, 0], [0, 0, 0, 1, 0]])  # 1.5 is outside
    # numpy.histogram of traced weights reaches fgrad's (it used to recurse forever)
    g = fgrad.grad(lambda w: np.histogram(a, bins=[0.0, 0.45, 2.0], weights=w)[0][1])(np.ones(5))
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 1])  # the last bin includes its right edge
    d = fgrad.jacfwd(lambda w: fnp.histogram(a, bins=5, density=True, weights=w)[0])(np.ones(5))
    assert d.shape == (5, 5) and np.isfinite(d).all()
    with pytest.raises(ValueError, match="weights must have the shape of a"):
        fgrad.grad(lambda w: fnp.sum(fnp.histogram(a, weights=w)[0]))(np.ones(4))
    counts, _edges = fnp.histogram(a, bins=3)
    np.testing.assert_array_equal(counts, np.histogram(a, bins=3)[0])
