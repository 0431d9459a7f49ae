"""Closed-form values and derivatives, conventions at kinks and degenerate cases of
fgrad.numpy's statistics (var, std, cumsum, cumprod, quantiles, nan-functions, average)."""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, hessian, jacfwd, jacrev

rng = np.random.default_rng(7)
X = rng.normal(size=(4, 3, 5))
XN = X.copy()
XN[0, 1, 2] = np.nan
XN[1, :, 3] = np.nan
XN[2, 0, :] = np.nan  # an all-NaN slice along the last axis

METHODS = [
    "linear",
    "lower",
    "higher",
    "nearest",
    "midpoint",
    "hazen",
    "weibull",
    "median_unbiased",
    "normal_unbiased",
    "interpolated_inverted_cdf",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=0, equal_nan=True)


# --- values are NumPy's ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_values_match_numpy(axis, keepdims):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ddof in (0, 1, 5):
            for name in ("var", "std"):
                _same(
                    getattr(fnp, name)(X, axis=axis, ddof=ddof, keepdims=keepdims),
                    getattr(np, name)(X, axis=axis, ddof=ddof, keepdims=keepdims),
                )
            for name in ("nanvar", "nanstd"):
                _same(
                    getattr(fnp, name)(XN, axis=axis, ddof=ddof, keepdims=keepdims),
                    getattr(np, name)(XN, axis=axis, ddof=ddof, keepdims=keepdims),
                )
        for name in ("ptp", "median", "average"):
            _same(
                getattr(fnp, name)(X, axis=axis, keepdims=keepdims),
                getattr(np, name)(X, axis=axis, keepdims=keepdims),
            )
        for name in ("nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanmedian", "median"):
            _same(
                getattr(fnp, name)(XN, axis=axis, keepdims=keepdims),
                getattr(np, name)(XN, axis=axis, keepdims=keepdims),
            )
        for method in METHODS:
            for q in (0.0, 0.37, 1.0, [0.1, 0.5, 0.9], np.array([[0.2, 0.7], [1.0, 0.0]])):
                kw = dict(axis=axis, keepdims=keepdims, method=method)
                _same(fnp.quantile(X, q, **kw), np.quantile(X, q, **kw))
                _same(fnp.quantile(XN, q, **kw), np.quantile(XN, q, **kw))
                if np.ndim(q) < 2:  # NumPy's nanquantile orders the axes of a 2-D q oddly
                    _same(fnp.nanquantile(XN, q, **kw), np.nanquantile(XN, q, **kw))
            _same(
                fnp.percentile(X, [30, 95], axis=axis, keepdims=keepdims, method=method),
                np.percentile(X, [30, 95], axis=axis, keepdims=keepdims, method=method),
            )
            _same(
                fnp.nanpercentile(XN, 30, axis=axis, keepdims=keepdims, method=method),
                np.nanpercentile(XN, 30, axis=axis, keepdims=keepdims, method=method),
            )


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_scans_match_numpy(axis):
    for name in ("cumsum", "cumprod"):
        _same(getattr(fnp, name)(X, axis=axis), getattr(np, name)(X, axis=axis))
        _same(getattr(fnp, "nan" + name)(XN, axis=axis), getattr(np, "nan" + name)(XN, axis=axis))
    _same(fnp.cumsum(np.float64(2.0)), np.cumsum(np.float64(2.0)))


def test_average_with_weights_matches_numpy():
    w = rng.uniform(size=X.shape)
    for axis in (None, 0, (0, 2)):
        avg, scl = fnp.average(X, axis=axis, weights=w, returned=True)
        avg_np, scl_np = np.average(X, axis=axis, weights=w, returned=True)
        _same(avg, avg_np)
        _same(scl, scl_np)
    _same(fnp.average(X, axis=1, weights=w[0, :, 0]), np.average(X, axis=1, weights=w[0, :, 0]))
    np.testing.assert_allclose(
        fnp.average(X, axis=(2, 0), weights=w[:, 0, :].T),
        np.average(X, axis=(2, 0), weights=w[:, 0, :].T),
        rtol=1e-13,
    )


# --- closed forms ---------------------------------------------------------------------------------


def test_var_gradient_is_2_centred_over_n_minus_ddof():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    for ddof in (0, 1):
        expected = 2 * (x - x.mean()) / (4 - ddof)
        np.testing.assert_allclose(grad(lambda v: fnp.var(v, ddof=ddof))(x), expected, rtol=1e-14)
        np.testing.assert_allclose(jacfwd(lambda v: fnp.var(v, ddof=ddof))(x), expected, rtol=1e-14)


def test_std_at_zero_variance_is_0_with_a_0_subgradient_to_every_order():
    x = np.full(4, 1.5)
    assert float(fnp.std(x)) == 0.0
    for d in (grad(fnp.std), jacfwd(fnp.std), jacrev(fnp.std)):
        np.testing.assert_array_equal(d(x), np.zeros(4))
    np.testing.assert_array_equal(hessian(fnp.std)(x), np.zeros((4, 4)))
    np.testing.assert_array_equal(
        grad(lambda v: fnp.nanstd(v))(np.array([2.0, np.nan, 2.0])), np.zeros(3)
    )
    # std is a minimum there: the directional derivatives are >= 0 either side, so 0 is a
    # subgradient; the value right next to it is as NumPy computes it
    g = grad(lambda v: fnp.sum(fnp.std(v, axis=0)))(np.array([[1.0, 2.0], [1.0, 3.0]]))
    np.testing.assert_allclose(g, [[0.0, -0.5], [0.0, 0.5]])


@pytest.mark.parametrize("ddof", [3, 4])
def test_var_and_std_with_ddof_at_least_n_are_numpys_inf_or_nan_and_do_not_crash(ddof):
    x = np.array([1.0, 2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("var", "std", "nanvar", "nanstd"):
            f = getattr(fnp, name)
            _same(f(x, ddof=ddof), getattr(np, name)(x, ddof=ddof))
            g = grad(lambda v, f=f: f(v, ddof=ddof))(x)
            assert np.shape(g) == (3,)


def test_cumsum_vjp_is_the_reversed_cumsum():
    c = np.array([1.0, -2.0, 0.5, 3.0])
    g = grad(lambda x: fnp.sum(fnp.cumsum(x) * c))(np.zeros(4))
    np.testing.assert_array_equal(g, np.cumsum(c[::-1])[::-1])
    g = grad(lambda x: fnp.sum(fnp.cumsum(x, axis=0) * c[:, None]))(np.zeros((4, 2)))
    np.testing.assert_array_equal(g, np.repeat(np.cumsum(c[::-1])[::-1][:, None], 2, axis=1))


def test_cumprod_is_exact_at_zeros_to_third_order():
    x = np.zeros(3)
    last = lambda v: fnp.cumprod(v)[-1]  # x0 x1 x2
    np.testing.assert_array_equal(grad(last)(x), np.zeros(3))
    np.testing.assert_array_equal(hessian(last)(x), np.zeros((3, 3)))
    third = jacfwd(hessian(last))(x)  # d3/dx0 dx1 dx2 = 1 for every distinct triple
    expected = np.zeros((3, 3, 3))
    for i, j, k in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]:
        expected[i, j, k] = 1.0
    np.testing.assert_array_equal(third, expected)
    y = np.array([2.0, 0.0, 3.0, 5.0])
    np.testing.assert_array_equal(jacrev(fnp.cumprod)(y), jacfwd(fnp.cumprod)(y))
    np.testing.assert_array_equal(
        jacrev(fnp.cumprod)(y), [[1, 0, 0, 0], [0, 2, 0, 0], [0, 6, 0, 0], [0, 30, 0, 0]]
    )


def test_cumprod_gradient_is_exact_where_the_product_underflows():
    x = np.array([1e-300, 1e-300, 2.0])  # the product underflows to 0; ans / x would give 0
    g = grad(lambda v: fnp.cumprod(v)[1])(x)
    np.testing.assert_array_equal(g, [1e-300, 1e-300, 0.0])
    h = hessian(lambda v: fnp.cumprod(v)[-1])(x)
    np.testing.assert_array_equal(
        h, [[0.0, 2.0, 1e-300], [2.0, 0.0, 1e-300], [1e-300, 1e-300, 0.0]]
    )


def _cumprod_jacobian(x):
    """d P_i / d x_j of P = cumprod(x) for a 1-D x: the product of x_0 .. x_i but x_j, by
    NumPy (nan where it meets 0 and inf), 0 above the diagonal."""
    n = len(x)
    J = np.zeros((n, n), x.dtype)
    for i in range(n):
        for j in range(i + 1):
            J[i, j] = np.prod(np.delete(x[: i + 1], j))
    return J


def _assert_same_with_nan(got, expected):
    """Equal, nan in the same places (the other entries to rounding: the modes associate the
    products differently)."""
    got, expected = np.asarray(got), np.asarray(expected)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], rtol=1e-13)


def test_cumprod_derivatives_are_nan_where_a_zero_element_meets_an_inf():
    """d P_i / d x_j multiplies x_0 .. x_i but x_j: inf * 0 = nan when both occur, as in
    prod's gradient; only a zero (co)tangent is kept out. Both modes read a running
    derivative that was 0 because of a zero element of x as "no term", and gave 0 (reverse:
    grad at [3, inf, 2, 0] was [0, 0, 0, inf]; forward: J[3, 0] at [nan, 0, inf, 1.5] was 0)."""
    x = np.array([3.0, np.inf, 2.0, 0.0])
    expected = [np.nan, 0.0, np.nan, np.inf]  # x1 x2 x3, x0 x2 x3, x0 x1 x3, x0 x1 x2
    last = lambda scan: lambda z: scan(z)[-1]
    scans = (fnp.cumprod, fnp.nancumprod, lambda z: fnp.cumulative_prod(z, include_initial=True))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(grad(fnp.prod)(x), expected)
        for scan in scans:
            np.testing.assert_array_equal(grad(last(scan))(x), expected)
            np.testing.assert_array_equal(jacfwd(last(scan))(x), expected)
        pool = np.array([0.0, np.inf, -np.inf, np.nan, 1.5, -2.0, 0.5, 3.0])
        for _ in range(60):
            x = rng.choice(pool, rng.integers(1, 8))
            J = _cumprod_jacobian(x)
            for jac in (jacfwd, jacrev):
                _assert_same_with_nan(jac(fnp.cumprod)(x), J)
                got = jac(lambda z: fnp.cumulative_prod(z, include_initial=True))(x)
                _assert_same_with_nan(got, np.vstack([np.zeros((1, len(x))), J]))
                J_nan = _cumprod_jacobian(np.where(np.isnan(x), 1.0, x))
                J_nan[:, np.isnan(x)] = 0.0  # nancumprod: a nan counts as 1, gradient 0
                _assert_same_with_nan(jac(fnp.nancumprod)(x), J_nan)
            # along either axis of a 2-D array, complex: a complex product with an inf part
            # has nan parts depending on how it is associated (NumPy's (inf+0j) * (2+0j) is
            # inf+nanj), so only its zeros are compared; they are the entries at stake
            m = rng.choice(pool, (3, 4)) + 1j * rng.normal(size=(3, 4))
            m[rng.random((3, 4)) < 0.3] = 0.0
            for axis in (0, 1):
                for jac in (jacfwd, jacrev):
                    got = jac(lambda z: fnp.cumprod(z, axis=axis), holomorphic=True)(m)
                    for r in range(m.shape[1 - axis]):
                        block = got[:, r, :, r] if axis == 0 else got[r, :, r, :]
                        J = _cumprod_jacobian(np.take(m, r, 1 - axis))
                        np.testing.assert_array_equal(block == 0, J == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_vmap_of_cumprod_derivatives_equals_the_loop_bit_for_bit(dtype):
    """vmap takes the masked path of cumprod's rules (a batched mask is not read), the loop
    the plain one; the masked path multiplied complex operands in the other order (earlier *
    a for a * earlier), and NumPy's complex product is not bitwise commutative: the two
    differed by up to 8.9e-16."""
    W, V = (
        rng.normal(size=(3, 4)) + (1j * rng.normal(size=(3, 4)) if dtype is np.complex128 else 0)
        for _ in range(2)
    )
    W[1, 2] = np.inf  # one row on the masked path in the loop too
    jvp = lambda w, v: fgrad.jvp(fnp.cumprod, (w,), (v,))[1]
    vjp = lambda w, v: fgrad.vjp(fnp.cumprod, w)[1](v)[0]
    with np.errstate(invalid="ignore"):
        for f in (jvp, vjp):
            loop = np.stack([f(w, v) for w, v in zip(W, V)])
            np.testing.assert_array_equal(fgrad.vmap(f)(W, V), loop)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize(
    "a, axis",
    [(np.zeros(0), None), (np.zeros((0, 3)), 0), (np.zeros((2, 0), np.float32), None)],
)
def test_median_of_no_values_is_numpys_nan_with_a_warning(name, a, axis):
    # it raised "cannot take a median or quantile over an empty axis"
    with pytest.warns(RuntimeWarning):
        want = getattr(np, name)(a, axis=axis)
    for f in (getattr(fnp, name), fgrad.jit(getattr(fnp, name), static_argnums=1)):
        with pytest.warns(RuntimeWarning):
            got = f(a, axis)
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_median_gradient_goes_to_the_middle_order_statistics():
    np.testing.assert_array_equal(
        grad(fnp.median)(np.array([3.0, 1.0, 2.0, 4.0])), [0.5, 0.0, 0.5, 0.0]
    )
    np.testing.assert_array_equal(grad(fnp.median)(np.array([3.0, 1.0, 2.0])), [0.0, 0.0, 1.0])


def test_median_and_quantile_ties_follow_the_stable_sort_like_jax():
    # the tied elements take ranks in array order; the rank the median reads gets it all
    np.testing.assert_array_equal(grad(fnp.median)(np.ones(3)), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(grad(lambda x: fnp.quantile(x, 1.0))(np.ones(3)), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(
        jacfwd(lambda x: fnp.quantile(x, 0.0))(np.ones(3)), [1.0, 0.0, 0.0]
    )


def test_quantile_derivative_in_q_is_n_minus_1_times_the_gap():
    x = np.array([0.0, 1.0, 4.0, 9.0])  # q = 0.5 reads between 1 and 4 at gamma 0.5
    assert float(grad(lambda q: fnp.quantile(x, q))(0.5)) == pytest.approx(3 * (4.0 - 1.0))
    assert float(grad(lambda p: fnp.percentile(x, p))(50.0)) == pytest.approx(3 * 3.0 / 100)
    g = jacfwd(lambda q: fnp.quantile(x, q, method="hazen"))(np.array([0.4, 0.6]))
    np.testing.assert_allclose(np.diag(g), [4 * 3.0, 4 * 3.0])  # slope n for hazen
    assert float(grad(lambda q: fnp.quantile(x, q, method="lower"))(0.5)) == 0.0


def test_weighted_quantile_picks_numpys_element_and_differentiates_through_it():
    """quantile and percentile refused any weights=, even of plain arrays; NumPy (method
    'inverted_cdf') picks one element per quantile, so the derivative is one-hot in a."""
    rng = np.random.default_rng(0)
    x = np.array([0.3, -1.2, 2.0, 0.7, -0.4])
    w = np.array([1.0, 2.0, 1.0, 3.0, 1.0])
    f = lambda v, w: fnp.quantile(v, 0.4, method="inverted_cdf", weights=w)
    assert f(x, w) == np.quantile(x, 0.4, method="inverted_cdf", weights=w) == 0.3
    np.testing.assert_array_equal(grad(f)(x, w), [1.0, 0.0, 0.0, 0.0, 0.0])  # (JAX's too)
    for trial in range(60):
        a = rng.normal(size=(4, 3)) if trial % 2 else rng.integers(-2, 3, (4, 3)) * 1.0  # ties
        axis, keepdims = [None, 0, 1, -1][trial % 4], trial % 3 == 1
        wt = rng.integers(0, 3, size=(4, 3)) * 1.0  # zero weights
        wt[0, :] += 1.0  # (every row and every column has a positive weight)
        wt[:, 0] += 1.0
        if trial % 5 == 0 and axis is not None:
            wt = wt[(slice(None), 0) if axis == 0 else (0, slice(None))]  # along the axis
        q = [0.0, 1.0, 0.37, np.array([0.0, 0.25, 0.5, 1.0]), rng.random((2, 2))][trial % 5]
        for name, qq in [("quantile", q), ("percentile", np.asarray(q) * 100.0)]:
            want = getattr(np, name)(
                a, qq, axis=axis, method="inverted_cdf", weights=wt, keepdims=keepdims
            )

            def g(v, w):
                fn = getattr(fnp, name)
                return fn(v, qq, axis=axis, method="inverted_cdf", weights=w, keepdims=keepdims)

            jitted = fgrad.jit(g)
            jitted(a, wt[::-1])  # recorded with other weights: the replay reads wt
            for got in (g(a, wt), g(fnp.array(a), wt), jitted(a, wt)):
                np.testing.assert_array_equal(got, want)
                assert np.shape(got) == np.shape(want)
            rows = fgrad.vmap(g, in_axes=(None, 0))(a, np.stack([wt, wt[::-1]]))
            np.testing.assert_array_equal(rows[0], want)
            np.testing.assert_array_equal(rows[1], g(a, wt[::-1]))
            if trial % 2:  # no ties: central differences of the element picked
                u = rng.normal(size=a.shape)
                e = 1e-6
                fd = (np.sum(g(a + e * u, wt)) - np.sum(g(a - e * u, wt))) / (2 * e)
                got = np.sum(grad(lambda v: fnp.sum(g(v, wt)))(a) * u)
                assert got == pytest.approx(fd, rel=1e-7, abs=1e-9)
            assert np.all(grad(lambda ww: fnp.sum(g(a, ww)))(wt) == 0)


def test_quantile_errors_say_what_to_do():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match="method='bogus' is not supported; use one of linear"):
        fnp.quantile(x, 0.5, method="bogus")
    with pytest.raises(ValueError, match=r"q must be in the range \[0, 1\]"):
        fnp.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"q must be in the range \[0, 100\]"):
        fnp.percentile(x, -1)
    for a in (x, fnp.array(x)):  # (weights: NumPy's refusal of another method)
        with pytest.raises(ValueError, match="Only method 'inverted_cdf' supports weights"):
            grad(lambda v: fnp.quantile(v, 0.5, weights=np.ones(4)))(a)
    # complex data or quantiles, which NumPy refuses too (median orders complex numbers)
    for name, q in [
        ("quantile", 0.5),
        ("percentile", 50.0),
        ("nanquantile", 0.5),
        ("nanpercentile", 50.0),
    ]:
        with pytest.raises(
            TypeError,
            match=rf"{name}: a is complex \(shape \(4,\) and dtype "
            r"complex128\); .*fgrad.numpy.real\(a\)",
        ):
            getattr(fnp, name)(x + 1j, q)
        with pytest.raises(TypeError):
            getattr(np, name)(x + 1j, q)
        with pytest.raises(TypeError, match=rf"{name}: q is complex"):
            getattr(fnp, name)(x, q + 0j)
    with pytest.raises(TypeError, match="a is complex"):
        grad(lambda z: fnp.real(fnp.quantile(z, 0.5)))(x + 1j)
    with pytest.raises(TypeError, match="out="):
        fnp.var(x, out=np.zeros(()))


# --- the nan-functions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "nansum",
        "nanmean",
        "nanmax",
        "nanmin",
        "nanprod",
        "nanvar",
        "nanstd",
        "nanmedian",
        "nanquantile",
        "nanpercentile",
        "nancumsum",
        "nancumprod",
    ],
)
def test_nan_functions_give_0_at_nans_and_no_nan_elsewhere_to_order_2(name):
    f = getattr(fnp, name)
    if name in ("nanquantile", "nanpercentile"):
        q = 0.3 if name == "nanquantile" else 30.0
        f = lambda x, f=f, **kw: getattr(fnp, name)(x, q, **kw)
    x = np.array([[0.3, np.nan, -1.2], [np.nan, np.nan, np.nan], [1.7, 0.4, np.nan]])
    loss = lambda v: fnp.nansum(f(v, axis=1) * np.array([1.0, 2.0, 3.0])[:3])
    if name in ("nancumsum", "nancumprod"):
        loss = lambda v: fnp.sum(f(v, axis=1))
    nan = np.isnan(x)
    for g in (grad(loss)(x), jacfwd(loss)(x)):
        assert np.isfinite(g).all(), g
        np.testing.assert_array_equal(g[nan], 0.0)
    h = hessian(loss)(x)
    assert np.isfinite(h).all()
    np.testing.assert_array_equal(h.reshape(9, 9)[nan.ravel()], 0.0)


def test_all_nan_slices_give_nan_like_numpy():
    x = np.array([[np.nan, np.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanmedian"):
            _same(getattr(fnp, name)(x, axis=1), getattr(np, name)(x, axis=1))
        _same(fnp.nanquantile(x, 0.4, axis=1), np.nanquantile(x, 0.4, axis=1))


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
@pytest.mark.parametrize("name", ["mean", "nanmean"])
def test_an_empty_group_is_nan_with_a_zero_derivative_in_every_mode(name):
    """A where= mask leaving a row empty (or an empty axis): jacfwd, jvp, linearize and jet
    gave NaN for that row (the tangent's 0/0) where jacrev gave 0; var's is 0 in every mode.
    The values are NumPy's to the bit, the sign of its 0/0 NaN included (nanmean's NaN of an
    all-NaN row under vmap was a positive NaN)."""
    f, ref = getattr(fnp, name), getattr(np, name)
    x = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 1.0], [0.5, 0.25, 7.0]])
    m = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1]], bool)
    y, e = np.where(m, x, -x), np.ones((0, 3))
    cases = [
        (lambda z: f(z, axis=1, where=m), x, ref(x, axis=1, where=m)),
        (lambda z: f(z, axis=1, where=z > 0.0), y, ref(y, axis=1, where=y > 0)),  # traced mask
        (lambda z: f(z, axis=0), e, ref(e, axis=0)),
    ]
    if name == "nanmean":
        n = np.where(m, x, np.nan)
        cases.append((lambda z: f(z, axis=1), n, ref(n, axis=1)))
    for g, a, want in cases:
        t = np.ones_like(a)
        jr = jacrev(g)(a)
        np.testing.assert_array_equal(jacfwd(g)(a), jr)
        tangents = [
            fgrad.jvp(g, (a,), (t,))[1],
            fgrad.linearize(g, a)[1](t),
            fgrad.jit(lambda z, g=g, t=t: fgrad.jvp(g, (z,), (t,))[1])(a),
            fgrad.vmap(lambda z, g=g, t=t: fgrad.jvp(g, (z,), (t,))[1])(a[None])[0],
            *fgrad.jet(g, (a,), ((t, t),))[1],
        ]
        for tangent in tangents:
            assert not np.isnan(tangent).any(), tangent
        np.testing.assert_array_equal(tangents[0], np.tensordot(jr, t, axes=t.ndim))
        values = [g(a), fgrad.jit(g)(a), fgrad.vmap(g)(a[None])[0], fgrad.jvp(g, (a,), (t,))[0]]
        assert np.isnan(want).any()
        for v in values:
            assert np.asarray(v).tobytes() == np.asarray(want).tobytes(), (v, want)


def test_nanmax_ties_share_evenly_like_max():
    x = np.array([2.0, np.nan, 2.0, 1.0])
    np.testing.assert_array_equal(grad(fnp.nanmax)(x), [0.5, 0.0, 0.5, 0.0])


# --- average --------------------------------------------------------------------------------------


def test_average_gradients_in_a_and_weights():
    a, w = np.array([1.0, 3.0]), np.array([3.0, 1.0])
    ga, gw = grad(lambda a, w: fnp.average(a, weights=w), argnums=(0, 1))(a, w)
    np.testing.assert_allclose(ga, w / w.sum())
    np.testing.assert_allclose(gw, (a - 1.5) / w.sum())


@pytest.mark.parametrize("name", ["quantile", "percentile", "nanquantile", "nanpercentile"])
def test_quantiles_of_booleans_are_refused_where_numpy_refuses_them(name):
    """NumPy refuses boolean data for the methods that interpolate (its lerp subtracts two
    booleans: TypeError) and picks an element of them for the others; fgrad interpolated
    (percentile([True, False, True], 50) was 1.0). Now the same TypeError, naming a and
    saying what to do, eagerly and under jit; the picking methods stay NumPy's."""
    q = 0.5 if "quantile" in name else 50.0
    for a in (np.array([True, False, True]), np.array(True), [[True, False]]):
        for method in METHODS:
            try:
                want = getattr(np, name)(a, q, method=method)
            except TypeError:
                for f in (getattr(fnp, name), fgrad.jit(getattr(fnp, name), static_argnums=2)):
                    with pytest.raises(TypeError, match=rf"{name}: a is boolean .*astype"):
                        f(np.asarray(a), q, method)
                continue
            assert method in ("lower", "higher", "nearest", "inverted_cdf", "closest_observation")
            got = getattr(fnp, name)(a, q, method=method)
            assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="a is boolean"):
        getattr(fnp, name)(np.array([True, False]), q)  # the default method, 'linear'


def test_average_errors():
    with pytest.raises(ZeroDivisionError, match="weights sum to zero"):
        fnp.average(np.ones(2), weights=np.array([1.0, -1.0]))
    with pytest.raises(TypeError, match="give the axis"):
        fnp.average(np.ones((2, 3)), weights=np.ones(3))
    with pytest.raises(ValueError, match=r"need shape \(2, 3\) or \(2,\)"):
        fnp.average(np.ones((2, 3)), axis=0, weights=np.ones(3))


def test_non_differentiable_reductions_match_numpy():
    b = X > 0
    for axis in (None, 0, (1, 2)):
        np.testing.assert_array_equal(fnp.all(b, axis=axis), np.all(b, axis=axis))
        np.testing.assert_array_equal(
            fnp.any(b, axis=axis, keepdims=True), np.any(b, axis=axis, keepdims=True)
        )
        np.testing.assert_array_equal(
            fnp.count_nonzero(b, axis=axis), np.count_nonzero(b, axis=axis)
        )
    g = fgrad.grad(lambda x: fnp.sum(x) * fnp.count_nonzero(x > 0))(np.array([1.0, -1.0]))
    assert g.tolist() == [1.0, 1.0]


# --- NumPy's keywords of the reductions (issue 15) ------------------------------------------------


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_where_masked_elements_get_no_gradient(jac):
    x = np.array([[1.0, -2.0], [3.0, 4.0]])
    m = np.array([[True, False], [True, True]])
    np.testing.assert_array_equal(jac(lambda x: fnp.sum(x, where=m))(x), m.astype(float))
    np.testing.assert_array_equal(
        jac(lambda x: fnp.mean(x, axis=0, where=m))(x), [[[0.5, 0], [0.5, 0]], [[0, 0], [0, 1.0]]]
    )
    # prod over the True elements: d/dx_i is the product of the others (and initial)
    np.testing.assert_array_equal(
        jac(lambda x: fnp.prod(x, where=m, initial=2.0))(x), [[24.0, 0.0], [8.0, 6.0]]
    )
    np.testing.assert_array_equal(
        jac(lambda x: fnp.max(x, initial=0.0, where=m))(x), [[0, 0], [0, 1.0]]
    )


def test_initial_of_max_shares_ties_and_is_differentiable_when_traced():
    x = np.array([1.0, 3.0, 2.0])
    # initial 3 ties with x[1]: half each (JAX's even split of ties)
    assert fgrad.grad(lambda x: fnp.max(x, initial=3.0))(x).tolist() == [0, 0.5, 0]
    assert fgrad.grad(lambda c: fnp.max(x, initial=c))(3.0) == 0.5
    assert fgrad.grad(lambda c: fnp.max(x, initial=c))(5.0) == 1.0
    assert fgrad.grad(lambda c: fnp.min(x, initial=c))(5.0) == 0.0
    assert fgrad.grad(lambda c: fnp.sum(x, initial=c))(5.0) == 1.0
    assert fgrad.grad(lambda c: fnp.prod(x, initial=c))(5.0) == 6.0
    assert fgrad.jacfwd(lambda c: fnp.prod(x, initial=c))(5.0) == 6.0
    with pytest.raises(ValueError, match="initial"):
        fnp.max(x, where=np.array([True, False, True]))  # NumPy's own rule


def test_initial_of_max_and_min_ties_in_float32_as_numpy_casts_it():
    # NumPy casts initial to the data's dtype: float32(-0.55), which the float64 -0.55 does
    # not equal. The tie count compared the float64 one, found no tie where the initial is
    # the minimum, and weighed each element by 0/0: a nan gradient in float32 only.
    m = np.array([[True, False], [True, True], [False, True]])
    x = np.array([[0.8, 0.1], [2.2, 1.5], [-1.3, -0.6]], dtype=np.float32)
    for fn, initial, want in (
        (fnp.min, -0.55, [0, 0, 0, 0, 0, 1]),
        (fnp.max, 1.9, [0, 0, 1, 0, 0, 0]),
    ):
        f = lambda x, fn=fn, c=initial: fnp.sum(fn(x, axis=0, initial=c, where=m))
        for d in (fgrad.grad(f)(x), fgrad.jacfwd(f)(x), fgrad.vmap(fgrad.grad(f))(x[None])[0]):
            assert d.dtype == np.float32
            np.testing.assert_array_equal(d.ravel(), want)


def test_var_of_complex_data_is_real_as_numpys():
    z = np.array([1j, 2.0, 1.0 - 1j])
    assert fnp.var(z) == np.var(z) and np.isrealobj(fnp.var(z))
    # var = mean |z - mean z|^2, real: JAX's convention (d/dRe - i d/dIm) gives
    # 2 conj(z - mean) / n
    np.testing.assert_allclose(fgrad.grad(fnp.var)(z), 2 * np.conj(z - z.mean()) / 3, rtol=1e-14)


def test_reduction_keywords_are_checked():
    x = np.ones((2, 2))
    with pytest.raises(TypeError, match="where= must be a boolean mask"):
        fnp.sum(x, where=np.ones((2, 2)))
    # a comparison of traced values is a constant mask, as a mask should be
    np.testing.assert_array_equal(
        fgrad.grad(lambda x: fnp.sum(x, where=x > 1))(x), np.zeros((2, 2))
    )
    with pytest.raises(ValueError, match="ddof and correction"):
        fnp.var(x, ddof=1, correction=1)


@pytest.mark.parametrize("name", ["std", "nanstd"])
def test_std_is_a_numpy_scalar_whatever_its_value(name):
    """NumPy's std of every element is a scalar; fgrad's was a 0-d array exactly where the
    value was 0 (the masked branch at v == 0 went through `where`)."""
    for a in (np.array([1.0, 2.0, 3.0]), np.ones(3), np.ones(3, np.float32)):
        want, got = getattr(np, name)(a), getattr(fnp, name)(a)
        assert type(got) is type(want) and got == want


def _every_mode(f, x):
    """f's Jacobian at x by jacrev, jacfwd, vmap of vjp rows and jvp columns, and jet."""
    y = np.asarray(f(x))
    eye = np.eye(x.size).reshape((x.size,) + x.shape)
    rows = np.eye(y.size).reshape((y.size,) + y.shape)
    by_vjp = fgrad.vmap(lambda ct: fgrad.vjp(f, x)[1](ct)[0])(rows).reshape(y.shape + x.shape)
    columns = [fgrad.jvp(f, (x,), (e,))[1] for e in eye]
    by_jvp = np.moveaxis(
        np.array(columns).reshape(x.shape + y.shape), range(x.ndim), range(-x.ndim, 0)
    )
    by_jet = [fgrad.jet(f, (x,), ((e, np.zeros_like(e)),))[1][0] for e in eye]
    by_jet = np.moveaxis(
        np.array(by_jet).reshape(x.shape + y.shape), range(x.ndim), range(-x.ndim, 0)
    )
    return {
        "jacrev": jacrev(f)(x),
        "jacfwd": jacfwd(f)(x),
        "vjp": by_vjp,
        "jvp": by_jvp,
        "jet": by_jet,
    }


@pytest.mark.parametrize(
    "f, x, want",
    [
        # an all-NaN row: NaN with a zero gradient (the module's convention); forward mode gave
        # nan (sqrt's rule, 0.5 / sqrt(nan), times the zero tangent)
        (
            lambda z: fnp.nanstd(z, axis=1),
            np.array([[1.0, 3.0], [np.nan, np.nan]]),
            [[[-0.5, 0.5], [0, 0]], [[0, 0], [0, 0]]],
        ),
        # count - ddof <= 0: NaN (NumPy's) with a zero gradient
        (lambda z: fnp.nanstd(z, ddof=2), np.array([1.0, np.nan, 3.0]), [0, 0, 0]),
        # ddof >= n: NumPy's inf, a constant nearby: reverse mode gave nan (inf - inf through
        # the mean), forward mode +-inf
        (lambda z: fnp.var(z, ddof=4), np.array([1.0, 2.0, 3.0, 4.0]), [0, 0, 0, 0]),
        (lambda z: fnp.std(z, ddof=4), np.array([1.0, 2.0, 3.0, 4.0]), [0, 0, 0, 0]),
        (lambda z: fnp.std(z, ddof=3, axis=0), np.ones((3, 2)), np.zeros((2, 3, 2))),
    ],
)
def test_variance_without_degrees_of_freedom_has_a_zero_derivative_in_every_mode(f, x, want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for mode, got in _every_mode(f, x).items():
            np.testing.assert_array_equal(got, want, err_msg=mode)


def test_variance_without_degrees_of_freedom_keeps_numpys_value():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a in (np.array([1.0, 2.0, 3.0]), np.ones(3), np.array([1, 2, 3])):
            for name in ("var", "std", "nanvar", "nanstd"):
                want, got = getattr(np, name)(a, ddof=3), getattr(fnp, name)(a, ddof=3)
                assert type(got) is type(want)
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["max", "min", "nanmax", "nanmin"])
def test_batched_initial_with_where_splits_ties_as_the_loop(name):
    """Masked-out elements took the batched initial's value and each counted as one more
    tied element: grad of max([3, 5], initial=3, where=[T, F]) gave initial 2/3, x[0] 1/3."""
    x, mask = np.array([3.0, 5.0, 3.0]), np.array([True, False, False])
    if name.endswith("min"):
        x = -x
    c = x[0]
    g = fgrad.grad(lambda z, c: getattr(fnp, name)(z, initial=c, where=mask), argnums=(0, 1))
    loop = g(x, c)
    np.testing.assert_array_equal(loop[0], [0.5, 0, 0])
    assert loop[1] == 0.5
    got = fgrad.vmap(g, in_axes=(None, 0))(x, np.array([c, 2 * c]))
    np.testing.assert_array_equal(got[0], [[0.5, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(got[1], [0.5, 1.0])
    f = lambda z, c: getattr(fnp, name)(z, initial=c, where=mask)
    np.testing.assert_array_equal(
        fgrad.vmap(jacfwd(f, 1), in_axes=(None, 0))(x, np.array([c])), [0.5]
    )


def test_traced_initial_of_prod_is_a_factor_as_the_elements_are():
    """d prod / d initial is the product of the others, inf included (it was masked to 0), and
    vmap over the initial equals the loop (it differentiated x through a constant initial)."""
    x = np.array([np.inf, 2.0])
    f = lambda z, c: fnp.prod(z, initial=c)
    with np.errstate(invalid="ignore"):
        assert fgrad.grad(f, 1)(x, 2.0) == np.inf
        assert jacfwd(f, 1)(x, 2.0) == np.inf
        np.testing.assert_array_equal(fgrad.grad(f, 0)(x, 2.0), [4.0, np.inf])
        loop = fgrad.grad(f, 0)(x, 0.0)
        np.testing.assert_array_equal(loop, [0.0, np.nan])  # d/dx1 = inf * 0
        got = fgrad.vmap(fgrad.grad(f, 0), in_axes=(None, 0))(x, np.array([0.0]))
        np.testing.assert_array_equal(got, [loop])
    # second order, against the closed form: f = c * x0 * x1
    y = np.array([1.5, -2.0])
    H = hessian(lambda v: fnp.prod(v[:2], initial=v[2]))(np.append(y, 3.0))
    np.testing.assert_allclose(H, [[0, 3, -2], [3, 0, 1.5], [-2, 1.5, 0]], rtol=1e-15)


@pytest.mark.parametrize(
    "method, name, q, slope",
    [
        ("linear", "quantile", 1.0, 12.0),
        ("linear", "percentile", 100.0, 0.12),
        ("interpolated_inverted_cdf", "quantile", 1.0, 15.0),
        ("linear", "nanquantile", 1.0, 12.0),
        ("weibull", "quantile", 1.0, 0.0),  # the virtual index is past the end: flat there
        ("hazen", "quantile", 1.0, 0.0),
    ],
)
def test_derivative_in_q_at_the_top_is_the_left_one(method, name, q, slope):
    """At q = 1 the last value is taken alone, which gave d/dq 0 where the derivative inside
    [0, 1] is (last - the one before) times d(virtual index)/dq."""
    x = np.array([4.0, 1.0, 3.0, 2.0, 7.0])  # sorted, the last two: 4, 7
    if name.startswith("nan"):
        x = np.insert(x, 2, np.nan)
    f = lambda q: getattr(fnp, name)(x, q, method=method)
    assert fgrad.grad(f)(q) == pytest.approx(slope, rel=1e-12)
    assert fgrad.jvp(f, (q,), (1.0,))[1] == pytest.approx(slope, rel=1e-12)
    assert fgrad.jit(fgrad.grad(f))(q) == pytest.approx(slope, rel=1e-12)
    h = 1e-6 * q
    g = getattr(np, name)
    assert (g(x, q, method=method) - g(x, q - h, method=method)) / h == pytest.approx(
        slope, rel=1e-6
    )
    # with x, the mixed derivative: d/dq of the gradient in x is slope / (last - before) on each
    y = np.array([[4.0, 1.0, 3.0], [2.0, 7.0, 2.0]])
    both = lambda z, q: fnp.sum(getattr(fnp, name)(z, q, axis=1, method=method))
    mixed = jacfwd(fgrad.grad(both, 0), 1)(y, q)
    assert mixed.shape == y.shape and np.all(np.isfinite(mixed))
    np.testing.assert_array_equal(mixed, jacrev(fgrad.grad(both, 1), 0)(y, q))


@pytest.mark.parametrize("method", ["linear", "hazen", "median_unbiased", "weibull", "midpoint"])
def test_float32_quantiles_are_numpys_bits(method):
    """NumPy keeps gamma a Python float for a Python-number q, so 1 - gamma is taken in
    float64: quantile([1.5, -1.75, -0.5, 0.5, -0.25], 0.68) was 0.29000002, NumPy's 0.29."""
    r = np.random.default_rng(5)
    for _ in range(60):
        d = r.standard_normal(r.integers(2, 20)).astype(np.float32)
        q = float(r.uniform())
        for name, qq in (("quantile", q), ("percentile", 100 * q)):
            want, got = (
                getattr(np, name)(d, qq, method=method),
                getattr(fnp, name)(d, qq, method=method),
            )
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (d, qq)


@pytest.mark.parametrize(
    "axis, w_shape", [((0, 2), (2, 4)), ((2, 0), (4, 2)), (1, (3,)), (None, (2, 3, 4))]
)
@pytest.mark.parametrize("returned", [False, True])
def test_average_with_reduced_shape_weights_is_numpys_bits(axis, w_shape, returned):
    """The weights were broadcast to a's shape before summing, which rounds otherwise than
    NumPy's sum of the reshaped weights: 5.6e-17 off at axis=(0, 2)."""
    r = np.random.default_rng(0)
    for _ in range(20):
        a, w = r.standard_normal((2, 3, 4)), r.uniform(1, 2, w_shape)
        want = np.average(a, axis=axis, weights=w, returned=returned)
        got = fnp.average(a, axis=axis, weights=w, returned=returned)
        for u, v in zip(
            np.broadcast_arrays(*np.atleast_1d(want)), np.broadcast_arrays(*np.atleast_1d(got))
        ):
            assert u.shape == v.shape and u.tobytes() == v.tobytes()


@pytest.mark.parametrize("name", ["nanquantile", "nanpercentile"])
@pytest.mark.parametrize(
    "shape, q, kw",
    [
        ((0,), 0.5, {}),
        ((2, 0), [0.1, 0.5], {"axis": -1}),
        ((0, 3), 0.5, {"axis": 0, "keepdims": True}),
    ],
)
def test_nanquantile_of_an_empty_array_is_numpys_nan(name, shape, q, kw):
    """It raised 'cannot take a median or quantile over an empty axis'; NumPy gives its
    nanmean's NaN (q's shape is not kept: NumPy's own rule)."""
    a, q = np.zeros(shape), np.multiply(q, 100) if name == "nanpercentile" else q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want, got = getattr(np, name)(a, q, **kw), getattr(fnp, name)(a, q, **kw)
    assert type(got) is type(want) and np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "name, q", [("median", None), ("nanmedian", None), ("quantile", 0.3), ("nanpercentile", 40)]
)
def test_order_statistics_of_a_0d_value_with_keepdims_are_0d_arrays(name, q):
    """median(np.array(2.5), keepdims=True) returned the scalar np.float64(2.5); NumPy
    returns the 0-d array array(2.5) (a scalar without keepdims, as before)."""
    z = np.array(2.5)
    args = (z,) if q is None else (z, q)
    for keepdims in (True, False):
        want = getattr(np, name)(*args, keepdims=keepdims)
        got = getattr(fnp, name)(*args, keepdims=keepdims)
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        np.testing.assert_array_equal(got, want)
    assert grad(lambda t: getattr(fnp, name)(*((t,) + args[1:]), keepdims=True))(2.5) == 1.0


def test_std_in_an_integer_dtype_and_nan_functions_refusing_one_are_numpys():
    """std(x, dtype=np.int64) returned the float root np.float64(2.236...); NumPy casts the
    root of its integer variance back, np.int64(2) (and raises for an array of them). The
    nan-functions of a float a took an integer dtype where NumPy refuses it."""
    x, xi = np.array([1.5, 2.5, 5.9]), np.array([1, 2, 6])
    for fn, a, dtype in (("std", x, np.int64), ("std", xi, np.int8), ("nanstd", xi, np.int64)):
        want, got = getattr(np, fn)(a, dtype=dtype), getattr(fnp, fn)(a, dtype=dtype)
        assert type(got) is type(want) and got == want, (fn, got, want)
        assert fgrad.jit(lambda a, fn=fn, dtype=dtype: getattr(fnp, fn)(a, dtype=dtype))(a) == want
    rows = np.stack([x, 2 * x, 3.3 * x])
    want = [np.std(r, dtype=np.int64) for r in rows]
    np.testing.assert_array_equal(fgrad.vmap(lambda r: fnp.std(r, dtype=np.int64))(rows), want)
    np.testing.assert_array_equal(grad(lambda t: fnp.std(t, dtype=np.int64) * 1.0)(x), 0.0)
    with pytest.raises(TypeError):
        np.std(x[None], dtype=np.int64, axis=1)
    with pytest.raises(TypeError, match="std: dtype=int64"):
        fnp.std(x[None], dtype=np.int64, axis=1)
    for fn in ("nanmean", "nanvar", "nanstd"):
        with pytest.raises(TypeError, match="If a is inexact"):
            getattr(np, fn)(x, dtype=np.int64)
        with pytest.raises(TypeError, match=f"{fn}: If a is inexact.*float64"):
            getattr(fnp, fn)(x, dtype=np.int64)


def test_nanmean_of_float16_without_a_nan_is_numpys_sum_and_division():
    """NumPy's nanmean of floats sums and divides even when no element is NaN; fgrad took
    mean there, which sums float16 in float32: 44 of 200 rows differed from np.nanmean."""
    rows = np.random.default_rng(1).normal(size=(200, 6)).astype(np.float16)
    for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
        want = np.nanmean(rows, **kw)
        got = fnp.nanmean(rows, **kw)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), kw
    want = np.array([np.nanmean(r) for r in rows])
    assert fgrad.vmap(fnp.nanmean)(rows).tobytes() == want.tobytes()
    assert fgrad.jit(fnp.nanmean)(rows[3]).tobytes() == want[3].tobytes()
    np.testing.assert_allclose(
        grad(lambda r: fnp.nanmean(r))(rows[0]), np.full(6, 1 / 6), rtol=1e-3
    )


@pytest.mark.parametrize("name", ["quantile", "percentile", "nanquantile", "nanpercentile"])
@pytest.mark.parametrize(
    "method", ["lower", "higher", "nearest", "inverted_cdf", "closest_observation"]
)
@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_picked_elements_of_integer_data_keep_their_dtype_under_jit_and_vmap(name, method, dtype):
    """The NaN mask of the all-NaN slices was applied whenever it was traced, so under jit and
    vmap (0 rows too) quantile(int32, 0.3, method='nearest') was float64, NumPy's int32."""
    x = np.array([[3, 1, 2, 5], [0, 4, 4, 1]]).astype(dtype)
    q = 30 if name.endswith("percentile") else 0.3
    f = lambda z: getattr(fnp, name)(z, q, axis=1, method=method)
    want = getattr(np, name)(x, q, axis=1, method=method)
    jitted = fgrad.jit(f)
    for got in (f(x), jitted(x), jitted(x), fgrad.vmap(f)(x[None])[0]):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert fgrad.vmap(f)(np.zeros((0, 2, 4), dtype)).dtype == want.dtype


@pytest.mark.parametrize("name", ["quantile", "percentile", "nanquantile", "nanpercentile"])
@pytest.mark.parametrize("method", ["linear", "hazen", "weibull", "nearest", "closest_observation"])
@pytest.mark.parametrize("q_dtype", [np.float32, np.float16])
def test_quantile_with_a_single_precision_q_is_numpys_bits(name, method, q_dtype):
    """NumPy takes q / 100 and the virtual index (n - 1) q in q's dtype; fgrad took them in
    float64: quantile(arange(12.0), float32(0.3)) was 3.3000001311302185, NumPy's
    3.3000001907348633 (and 'nearest' could pick another element)."""
    r = np.random.default_rng(7)
    scale = 100 if name.endswith("percentile") else 1
    for _ in range(15):
        for data in (r.standard_normal(r.integers(2, 30)), r.integers(-9, 9, 25)):
            data = data.astype(np.float32) if r.uniform() < 0.5 else data
            q = q_dtype(scale * r.uniform())
            f = lambda z, w: getattr(fnp, name)(z, w, method=method)
            want = getattr(np, name)(data, q, method=method)
            jitted = fgrad.jit(f)
            got = [f(data, q), jitted(data, q), jitted(data, q)]
            got.append(fgrad.vmap(f, in_axes=(0, None))(data[None], q)[0])
            got.append(fgrad.vmap(f, in_axes=(None, 0))(data, np.array([q]))[0])
            for g in got:
                assert g.dtype == want.dtype and g.tobytes() == want.tobytes(), (data, q)


@pytest.mark.parametrize("data_dtype", [np.int8, np.uint8, np.int16, np.bool_])
@pytest.mark.parametrize("q_dtype", [np.float32, np.float16])
def test_quantile_of_small_integers_with_a_single_precision_q_is_numpys(data_dtype, q_dtype):
    """Small integers promote with q as themselves (int16 and a float32 q: float32; uint8 and
    a float16 q: float16), as NumPy's lerp does: fgrad gave float64 (probe DG #3)."""
    data = np.array([3, 7, 12, 5, 0, 9, 2, 1]).astype(data_dtype)
    for name, scale in (("quantile", 1), ("percentile", 100)):
        for method in ("linear", "hazen", "midpoint", "lower"):
            q = np.array([0.3, 0.71], q_dtype) * q_dtype(scale)
            f = lambda z, w: getattr(fnp, name)(z, w, method=method)
            if data_dtype is np.bool_ and method not in ("lower",):
                continue  # (NumPy refuses to interpolate booleans)
            want = getattr(np, name)(data, q, method=method)
            jitted = fgrad.jit(f)
            for got in (f(data, q), jitted(data, q), jitted(data, q)):
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), name
