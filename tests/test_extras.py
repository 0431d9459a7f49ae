"""Values against NumPy, closed-form derivatives and conventions for the extras (the gradient
table in tests/rows_extras.py checks their derivatives against central differences)."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def traced_value(f, *args):
    """f's value computed on traced inputs (what a user sees inside grad)."""
    return fgrad.vjp(f, *args)[0]


# --- linspace, logspace, geomspace --------------------------------------------------------


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
    np.testing.assert_array_equal(fnp.linspace(0, 10, 4, dtype=int),
                                  np.linspace(0, 10, 4, dtype=int))


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


def test_linspace_keeps_float32():
    a = np.float32(1.0)
    out = traced_value(lambda a: fnp.linspace(a, 2.0, 3), a)
    assert out.dtype == np.float32
    assert fgrad.grad(lambda a: fnp.sum(fnp.linspace(a, 2.0, 3)))(a).dtype == np.float32


def test_logspace_and_geomspace_values_are_numpys():
    a, b = np.array([0.3, -1.0]), np.array([[2.0], [1.5]])
    for f, g in [
        (lambda a, b: fnp.logspace(a, b, 4), lambda a, b: np.logspace(a, b, 4)),
        (lambda a, b: fnp.logspace(a, b, 4, base=2.0, axis=-1),
         lambda a, b: np.logspace(a, b, 4, base=2.0, axis=-1)),
        (lambda a, b: fnp.geomspace(a + 3, b + 3, 5), lambda a, b: np.geomspace(a + 3, b + 3, 5)),
        (lambda a, b: fnp.geomspace(-a - 3, -b - 3, 4, endpoint=False, axis=1),
         lambda a, b: np.geomspace(-a - 3, -b - 3, 4, endpoint=False, axis=1)),
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


# --- copy, NumPy 2's spellings ------------------------------------------------------------


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


# --- cumulative_sum, cumulative_prod ------------------------------------------------------


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("kw", [{}, {"include_initial": True}])
def test_cumulative_values_are_numpys(name, kw):
    x = np.array([[1.5, -2.0, 0.5], [3.0, 0.25, -1.0]])
    for axis in (0, 1, -1):
        got = traced_value(lambda x: getattr(fnp, name)(x, axis=axis, **kw), x)
        np.testing.assert_array_equal(got, getattr(np, name)(x, axis=axis, **kw))
    np.testing.assert_array_equal(traced_value(lambda v: getattr(fnp, name)(v, **kw), x[0]),
                                  getattr(np, name)(x[0], **kw))
    with pytest.raises(ValueError, match="axis must be given"):
        getattr(fnp, name)(x)


def test_cumulative_prod_is_exact_at_zeros():
    g = fgrad.grad(lambda x: fnp.cumulative_prod(x, include_initial=True)[-1])
    np.testing.assert_array_equal(g(np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])


# --- vector products and bincount ---------------------------------------------------------


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
    np.testing.assert_array_equal(traced_value(lambda w: fnp.bincount(x, w, 4), w),
                                  np.bincount(x, w, 4))
    g = fgrad.grad(lambda w: fnp.bincount(x, w) @ np.array([10.0, 20.0, 30.0]))(w)
    np.testing.assert_array_equal(g, [10.0, 30.0, 30.0, 20.0, 10.0])
    assert traced_value(lambda w: fnp.bincount(x, w), w.astype(np.float32)).dtype == np.float32
    np.testing.assert_array_equal(fnp.bincount(x), np.bincount(x))  # counts: NumPy's own


# --- polynomials --------------------------------------------------------------------------


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
        np.testing.assert_array_equal(traced_value(lambda p: fnp.polyder(p, m), p),
                                      np.polyder(p, m))
    np.testing.assert_allclose(traced_value(lambda p: fnp.polyint(p, 2, [1.0, 2.0]), p),
                               np.polyint(p, 2, [1.0, 2.0]))
    np.testing.assert_array_equal(fnp.polyder([1, 1, 1, 1], 2), np.polyder([1, 1, 1, 1], 2))


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


# --- unwrap and gradient ------------------------------------------------------------------


def test_unwrap_values_are_numpys_and_its_slope_is_one():
    rng = np.random.default_rng(3)
    p = np.angle(np.exp(1j * np.cumsum(rng.normal(size=(2, 10)) * 2, axis=1)))
    for kw in ({}, {"axis": 0}, {"period": 4.0}, {"discont": 5.0}):
        np.testing.assert_array_equal(traced_value(lambda p: fnp.unwrap(p, **kw), p),
                                      np.unwrap(p, **kw))
    np.testing.assert_array_equal(fgrad.grad(lambda p: fnp.sum(fnp.unwrap(p) ** 2))(p),
                                  2 * np.unwrap(p))
    with pytest.raises(TypeError, match="period is a traced value"):
        fgrad.grad(lambda c: fnp.sum(fnp.unwrap(p, period=c)))(5.0)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_is_numpys_linear_map(edge_order):
    f = np.array([[1.0, 2.5, 4.0, 7.5], [0.0, -1.0, 3.0, 2.0], [2.0, 2.0, 5.0, 1.0]])
    for args, kw in [((), {}), ((0.5,), {"axis": 1}), ((2.0, 0.25), {}), ((), {"axis": (1, 0)})]:
        got = traced_value(lambda f: fnp.gradient(f, *args, edge_order=edge_order, **kw), f)
        expected = np.gradient(f, *args, edge_order=edge_order, **kw)
        np.testing.assert_allclose(got, expected, rtol=1e-14)
    # the Jacobian's columns are NumPy's gradient of the unit vectors
    x = np.arange(5.0) ** 2
    jac = fgrad.jacrev(lambda x: fnp.gradient(x, 0.5, edge_order=edge_order))(x)
    np.testing.assert_allclose(jac, np.stack([np.gradient(e, 0.5, edge_order=edge_order)
                                              for e in np.eye(5)], axis=1), rtol=1e-14)
    with pytest.raises(ValueError, match="too small"):
        fgrad.grad(lambda x: fnp.sum(fnp.gradient(x, edge_order=2)))(np.ones(2))
    with pytest.raises(TypeError, match="scalar spacings"):
        fgrad.grad(lambda x: fnp.sum(fnp.gradient(x, np.arange(5.0))))(x)


def test_declared_names_return_numpys_answers():
    x = np.array([-1.3, 0.4, 2.6])
    assert fgrad.grad(lambda x: fnp.sum(x) * fnp.array_equal(x, x))(x).tolist() == [1.0] * 3
    np.testing.assert_array_equal(fnp.digitize(x, [0.0, 1.0]), np.digitize(x, [0.0, 1.0]))
    counts, edges = fnp.histogram(x, bins=2)
    np.testing.assert_array_equal(counts, np.histogram(x, bins=2)[0])
    assert fnp.isrealobj(x) and not fnp.iscomplexobj(x) and fnp.isscalar(1.0)
    np.testing.assert_array_equal(fnp.full_like(x, 2.0), np.full_like(x, 2.0))
