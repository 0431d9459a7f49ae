"""The NumPy names of issue 34's breadth (differentiable half) beyond the gradient table
(tests/rows_breadth.py): NumPy's values bit for bit on traced inputs, at the special values
too; NumPy's in-place functions on plain arrays and their refusals of traced ones; the error
messages; derivatives against closed forms; piecewise under vmap with conditions read from
the rows."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def _traced_value(f, *args):
    """f's value computed on traced inputs (jvp's primal output)."""
    return fgrad.jvp(f, args, tuple(np.ones_like(a) for a in args))[0]


def _identical(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(a, b)
    if a.dtype.kind != "c":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))  # signed zeros too


SPECIAL = np.array([0.0, -0.0, -3.0, 3.0, -2.5, 2.5, np.inf, -np.inf, np.nan, 1e300, 5e-324])


# --- NumPy's values on traced inputs --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_i0_traced_is_numpys_bit_for_bit_on_both_branches(dtype):
    x = np.linspace(-20.0, 20.0, 401).astype(dtype)
    _identical(_traced_value(fnp.i0, x), np.i0(x))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.uint8])
def test_i0_of_bool_and_small_ints_is_numpys_float64_under_jit_and_vmap(dtype):
    # np.i0 computes non-floats in float64; a ufunc's smallest float (float16) was used
    x = np.array([1, 0, 3], dtype)
    _identical(fgrad.jit(fnp.i0)(x), np.i0(x))
    _identical(fgrad.vmap(fnp.i0)(x), np.i0(x))


def test_i0_slope_is_i1_and_its_second_derivative_at_0_is_one_half():
    scipy_special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(0.05, 30.0, 300), -np.linspace(0.05, 30.0, 300)])
    slope = fgrad.vmap(fgrad.grad(fnp.i0))(x)
    np.testing.assert_allclose(slope, scipy_special.i1(x), rtol=1e-14)
    assert abs(float(fgrad.grad(fgrad.grad(fnp.i0))(0.0)) - 0.5) < 1e-13


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_i0_odd_derivatives_at_0_are_exactly_0_in_every_mode(dtype):
    # i0 is even; the series' own slope at 0 is -2.2e-16, which grad returned (float16: -0.000977,
    # where jacfwd gave +0.000977), and grad three times 4.7e-13
    zero = dtype(0.0)
    d1 = [fgrad.grad(fnp.i0), fgrad.jacfwd(fnp.i0), fgrad.derivative(fnp.i0, 1)]
    d3 = [fgrad.grad(fgrad.grad(fgrad.grad(fnp.i0))), fgrad.derivative(fnp.i0, 3)]
    d3.append(fgrad.jacfwd(fgrad.jacfwd(fgrad.jacfwd(fnp.i0))))
    for d in d1 + d3 + [fgrad.jit(d1[0])]:
        assert d(zero) == 0
    np.testing.assert_array_equal(fgrad.vmap(d1[0])(np.zeros(2, dtype)), 0)


def test_modf_and_frexp_traced_are_numpys_at_special_values():
    with np.errstate(all="ignore"):
        for mine, theirs in zip(_traced_value(fnp.modf, SPECIAL), np.modf(SPECIAL)):
            _identical(mine, theirs)
        for mine, theirs in zip(_traced_value(fnp.frexp, SPECIAL), np.frexp(SPECIAL)):
            _identical(mine, theirs)


def test_nextafter_traced_is_numpys_and_has_slope_1_in_x1_and_none_in_x2():
    # signed zeros: where x1 == x2 NumPy returns x2 (nextafter(0.0, -0.0) is -0.0), and a step
    # onto zero keeps the sign of the side it comes from (x1 + step was +0.0 in both)
    x1 = np.array([1.0, 0.0, np.inf, -np.inf, np.nan, 1e308, -1.0, 5e-324, 0.0, -0.0, -5e-324])
    x2 = np.array([2.0, -1.0, 0.0, 0.0, 1.0, np.inf, 5.0, 0.0, -0.0, -0.0, 0.0])
    want = np.nextafter(x1, x2)
    _identical(_traced_value(fnp.nextafter, x1, x2), want)
    _identical(fgrad.vmap(fnp.nextafter)(x1, x2), want)
    jitted = fgrad.jit(fnp.nextafter)
    for a, b, w in zip(x1, x2, want):
        _identical(jitted(a, b), w)
    g1, g2 = fgrad.grad(lambda a, b: fnp.sum(fnp.nextafter(a, b)), argnums=(0, 1))(
        np.array([1.0, -2.0]), np.array([3.0, -5.0])
    )
    np.testing.assert_array_equal(g1, [1.0, 1.0])
    np.testing.assert_array_equal(g2, [0.0, 0.0])


def test_divmod_traced_is_numpys_and_its_remainder_slope_in_x2_is_minus_the_quotient():
    x1, x2 = np.array([7.5, -7.5, 7.5]), np.array([2.0, 2.0, -2.0])
    for mine, theirs in zip(_traced_value(fnp.divmod, x1, x2), np.divmod(x1, x2)):
        _identical(mine, theirs)
    g = fgrad.grad(lambda b: fnp.sum(fnp.divmod(x1, b)[1]))(x2)
    np.testing.assert_array_equal(g, -np.floor_divide(x1, x2))


def test_kaiser_traced_is_numpys_and_its_slope_matches_finite_differences():
    for beta in (0.0, 2.5, 9.0, 14.0):
        _identical(_traced_value(lambda b: fnp.kaiser(7, b), np.float64(beta)), np.kaiser(7, beta))
    h = 1e-6
    fd = (np.kaiser(6, 3.0 + h) - np.kaiser(6, 3.0 - h)) / (2 * h)
    np.testing.assert_allclose(fgrad.jacfwd(lambda b: fnp.kaiser(6, b))(3.0), fd, rtol=1e-7)


def test_the_ufuncs_refuse_out_by_name_and_take_numpys_signature():
    import inspect

    for name in ("frexp", "modf", "divmod", "nextafter"):
        assert inspect.signature(getattr(fnp, name)) == inspect.signature(getattr(np, name))
    with pytest.raises(TypeError, match=r"modf\(\.\.\., out=\.\.\.\)"):
        fgrad.grad(lambda x: fnp.modf(x, out=(np.zeros(()), np.zeros(())))[0])(1.5)


def test_frexp_of_a_complex_value_names_the_argument_shape_and_dtype():
    with pytest.raises(TypeError, match=r"frexp: argument x is complex \(shape \(2,\) and dtype"):
        fgrad.jvp(fnp.frexp, (np.ones(2, complex),), (np.ones(2, complex),))


# --- polynomials ----------------------------------------------------------------------------------


def test_roots_slope_is_the_closed_form_of_a_simple_root():
    # p(x) = c (x - r1)(x - r2)(x - r3): a simple root moves by -(dp/dp_k)(r) / p'(r)
    r = np.array([-1.5, 0.3, 1.7])
    p = 1.3 * np.poly(r)
    jac = fgrad.jacfwd(lambda p: fnp.sort(fnp.roots(p)))(p)
    for i, root in enumerate(np.sort(r)):
        powers = root ** np.arange(len(p) - 1, -1, -1)
        np.testing.assert_allclose(jac[i], -powers / np.polyval(np.polyder(p), root), atol=1e-12)


def test_roots_traced_keeps_numpys_zero_roots_and_refuses_a_matrix():
    p = np.array([0.0, 2.0, -3.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(np.sort(_traced_value(fnp.roots, p)), np.sort(np.roots(p)))
    with pytest.raises(ValueError, match=r"roots: p must be a 1-D .* shape \(2, 2\)"):
        fgrad.grad(lambda p: fnp.sum(fnp.roots(p)))(np.ones((2, 2)))


def test_poly_of_conjugate_roots_is_real_as_numpys():
    a = np.array([[0.0, -2.0], [1.0, 0.0]])  # eigenvalues +-i sqrt(2)
    out = _traced_value(fnp.poly, a)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, np.poly(a), atol=1e-15)


# --- histograms -----------------------------------------------------------------------------------


_X32 = np.array([0.5, 1.25, 2.0, 3.5], np.float32)
_WEAK_SCALAR_CASES = {
    "histogram": lambda s: fnp.histogram(_X32, 3, range=(s, 4.0))[1],
    "histogram_bin_edges": lambda s: fnp.histogram_bin_edges(_X32, 5, range=(s, 4.0)),
    "choose": lambda s: fnp.choose(np.array([0, 1, 0, 1]), [_X32, s]),
    "cov": lambda s: fnp.cov(_X32, aweights=[s, 1.0, 1.0, 1.0]),
    "polyint": lambda s: fnp.polyint(_X32[:3], k=s),
}


@pytest.mark.parametrize("name", sorted(_WEAK_SCALAR_CASES))
def test_a_python_number_under_jit_stays_weak_as_eagerly(name):
    # jit holds a Python-number argument as given; counting it as float64 changed the dtype
    f = _WEAK_SCALAR_CASES[name]
    for s in (0.75, 0.1):
        _identical(fgrad.jit(f)(s), f(s))


def test_histogram_and_choose_with_a_traced_python_number_are_numpys():
    _identical(fgrad.jit(_WEAK_SCALAR_CASES["histogram"])(0.1), np.histogram(_X32, 3, (0.1, 4))[1])
    _identical(fgrad.jit(_WEAK_SCALAR_CASES["choose"])(0.1), np.choose([0, 1, 0, 1], [_X32, 0.1]))
    # and a plain Python number next to a traced float32 choice (float64 before)
    _identical(
        fgrad.jvp(lambda x: fnp.choose([0, 1, 0, 1], [x, 0.1]), (_X32,), (_X32,))[0],
        np.choose([0, 1, 0, 1], [_X32, 0.1]),
    )


def test_choose_of_a_scalar_index_is_numpys_scalar_under_every_transform():
    # jit gave a 0-d ndarray where NumPy (and eager) give np.float64
    def f(i, c):
        return fnp.choose(i, [1.0, c, 3.0])

    want = np.choose(1, [1.0, 2.0, 3.0])
    for got in (
        fgrad.jit(f)(1, 2.0),
        fgrad.jit(lambda c: f(1, c))(2.0),
        fgrad.jvp(lambda c: f(1, c), (2.0,), (1.0,))[0],
    ):
        assert type(got) is type(want), type(got)
        _identical(got, want)
    assert fgrad.grad(lambda c: f(1, c))(2.0) == 1.0


def test_histogram_bin_edges_slope_is_linspaces_of_min_and_max():
    a = np.array([0.0, 1.0, 3.0, 2.5])
    jac = fgrad.jacfwd(lambda a: fnp.histogram_bin_edges(a, bins=3))(a)
    t = np.linspace(0.0, 1.0, 4)
    want = np.zeros((4, 4))
    want[:, 0], want[:, 2] = 1 - t, t  # a[0] is the min, a[2] the max
    np.testing.assert_allclose(jac, want, atol=1e-15)
    np.testing.assert_array_equal(
        _traced_value(lambda a: fnp.histogram_bin_edges(a, "auto"), a),
        np.histogram_bin_edges(a, "auto"),
    )


def test_histogram_bin_edges_of_bools_under_jit_and_vmap_are_numpys_float_edges():
    # NumPy reads bools as uint8; the traced path made bool edges [False, True, True, ...]
    b = np.array([True, False, True])
    with pytest.warns(RuntimeWarning, match="bool"):
        want = np.histogram_bin_edges(b, bins=4)

    def f(a):
        return fnp.histogram_bin_edges(a, bins=4)

    _identical(fgrad.jit(f)(b), want)
    _identical(fgrad.vmap(f)(np.stack([b, ~b]))[0], want)


def test_histogramdd_traced_weights_and_density_are_numpys():
    rng = np.random.default_rng(1)
    s, w = rng.uniform(-2, 2, (30, 3)), rng.uniform(0.5, 2.0, 30)
    for kw in (dict(bins=3), dict(bins=(2, 3, 4), density=True), dict(bins=2, range=[(-1, 1)] * 3)):
        want = np.histogramdd(s, weights=w, **kw)
        got = _traced_value(lambda w: fnp.histogramdd(s, weights=w, **kw)[0], w)
        np.testing.assert_allclose(got, want[0], rtol=1e-14)
    x, y = s[:, 0], s[:, 1]
    got = _traced_value(lambda x: fnp.histogram2d(x, y, bins=4, density=True)[0], x)
    np.testing.assert_allclose(got, np.histogram2d(x, y, bins=4, density=True)[0], rtol=1e-14)


def test_histogramdd_names_the_weights_shape():
    with pytest.raises(ValueError, match=r"weights must hold one weight per point, shape \(3,\)"):
        fgrad.grad(lambda w: fnp.sum(fnp.histogramdd(np.ones((3, 2)), weights=w)[0]))(np.ones(4))


# --- NumPy's in-place functions -------------------------------------------------------------------


def test_put_and_place_write_plain_arrays_as_numpy_does():
    a, b = np.arange(6.0), np.arange(6.0)
    assert fnp.put(a, [0, 5, 5], [7.0, 8.0, 9.0]) is None
    np.put(b, [0, 5, 5], [7.0, 8.0, 9.0])
    _identical(a, b)
    assert fnp.place(a, a > 3, [1.0, 2.0]) is None
    np.place(b, b > 3, [1.0, 2.0])
    _identical(a, b)


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda x: fnp.put(x, [0], 1.0), "a"),
        (lambda x: fnp.put(np.zeros(3), [0], x[0]), "v"),
        (lambda x: fnp.place(x, x > 0, [1.0]), "arr"),
        (lambda x: fnp.place(np.zeros(3), [True, False, True], x), "vals"),
    ],
)
def test_put_and_place_refuse_a_traced_array_naming_the_functional_form(call, arg):
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(TypeError, match=rf"and {arg} is traced \(shape .* dtype float64\)") as e:
        fgrad.grad(lambda x: fnp.sum(x) + 0.0 * fnp.sum(fnp.asarray(call(x) or 0.0)))(x)
    assert "fgrad.numpy.at(" in str(e.value) or "fgrad.numpy.where(" in str(e.value)


def test_put_along_axis_and_fill_diagonal_write_plain_arrays_and_return_new_ones_by_jaxs_keyword():
    a = np.arange(6.0).reshape(3, 2)
    idx = np.array([[1], [0], [1]])
    plain, ref = a.copy(), a.copy()
    assert fnp.put_along_axis(plain, idx, 9.0, 1) is None
    np.put_along_axis(ref, idx, 9.0, 1)
    _identical(plain, ref)
    _identical(fnp.put_along_axis(a, idx, 9.0, 1, inplace=False), ref)  # a new array
    assert np.array_equal(a, np.arange(6.0).reshape(3, 2))
    traced = _traced_value(lambda a: fnp.put_along_axis(a, idx, 9.0, 1, inplace=False), a)
    _identical(traced, ref)
    m, ref = np.zeros((4, 4)), np.zeros((4, 4))
    np.fill_diagonal(ref, [1.0, 2.0])
    fill = lambda v: fnp.fill_diagonal(m, v, inplace=False)
    _identical(_traced_value(fill, np.array([1.0, 2.0])), ref)
    assert not m.any()  # the plain array given with a traced value is left as it is
    g = fgrad.grad(lambda v: fnp.sum(fill(v) ** 2))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [2 * (1 + 1), 2 * (2 + 2)])  # each value fills 2 places


def test_put_along_axis_and_fill_diagonal_of_a_traced_value_written_in_place_are_refused():
    # NumPy-style code calls them for their write and drops the result: the new array they
    # returned for a traced value was lost, and the write with it (jit: loss 5.13 for 0.13;
    # grad [[2, .4], [.6, 4]] for [[0, .4], [.6, 0]])
    def loss(a):
        b = a * 1.0
        fnp.fill_diagonal(b, 0.0)
        return fnp.sum(b**2)

    a = np.array([[1.0, 0.2], [0.3, 2.0]])
    for transform in (fgrad.grad, fgrad.jit, fgrad.vmap):
        with pytest.raises(TypeError, match=r"fill_diagonal\(a, val, inplace=False\)"):
            transform(loss)(a if transform is not fgrad.vmap else a[None])
    put = lambda a: fnp.put_along_axis(a * 1.0, np.array([[0], [0]]), 0.0, 1)
    with pytest.raises(TypeError, match=r"arr is traced .*inplace=False\)"):
        fgrad.grad(lambda a: fnp.sum(put(a)))(a)


def _zero_diagonal(z):
    np.fill_diagonal(z, 0.0)  # NumPy's calling convention: it writes into z, returns None
    return z


def _zero_first_column(z):
    np.put_along_axis(z, np.array([[0], [0]]), 0.0, axis=1)
    return z


def _put_into_plain(z):
    a = np.zeros(2)
    np.put_along_axis(a, np.array([1]), z[0, :1], axis=0)  # a traced value into a plain array
    return a


def _clean(z):
    np.nan_to_num(z, copy=False)
    return z


@pytest.mark.parametrize(
    "f, arg, instead",
    [
        (_zero_diagonal, "a", "a = fgrad.numpy.fill_diagonal(a, val, inplace=False)"),
        (_zero_first_column, "arr", "arr = fgrad.numpy.put_along_axis(arr, indices, values"),
        (_put_into_plain, "values", "arr = fgrad.numpy.put_along_axis(arr, indices, values"),
        (_clean, "x", "x = fgrad.numpy.nan_to_num(x, nan="),
    ],
)
@pytest.mark.parametrize("transform", ["jit", "vmap", "grad"])
def test_numpys_in_place_functions_refuse_a_traced_value_instead_of_losing_the_write(
    f, arg, instead, transform
):
    # NumPy's calls write into an argument and return None: the new array fgrad's functions
    # return for a traced one was dropped, and eagerly different values came out unchanged
    # (jit of _zero_diagonal gave [[1, .2], [.3, 2]] where NumPy gives [[0, .2], [.3, 0]])
    m = np.array([[1.0, 0.2], [0.3, np.nan]])
    traced = {
        "jit": fgrad.jit(f),
        "vmap": lambda m: fgrad.vmap(f)(m[None]),
        "grad": fgrad.grad(lambda m: fnp.sum(f(m))),
    }[transform]
    with pytest.raises(TypeError, match=rf"writes into an array, and {arg} is traced") as e:
        traced(m)
    assert instead in str(e.value)


@pytest.mark.parametrize("copy", [np.False_, 0, None, 0.0])
def test_nan_to_num_refuses_every_copy_numpy_reads_as_in_place(copy):
    # NumPy writes in place for any copy np.array reads as "no copy": copy=np.False_ or 0
    # slipped past the refusal (which tested `is False`), and jit gave [nan, 2] for [0, 2]
    def clean(z):
        np.nan_to_num(z, copy=copy)
        return z * 1.0

    x = np.array([np.nan, 2.0])
    assert np.array_equal(clean(x.copy()), [0.0, 2.0])  # NumPy's own: in place
    for traced in (fgrad.jit(clean), fgrad.grad(lambda z: fnp.sum(clean(z)))):
        with pytest.raises(TypeError, match=rf"copy={copy!r}\) writes into an array, and x is"):
            traced(x.copy())
    assert np.array_equal(fgrad.jit(lambda z: np.nan_to_num(z, copy=np.True_))(x), [0.0, 2.0])


def test_the_forms_named_for_numpys_in_place_functions_give_numpys_values():
    m = np.array([[1.0, 0.2], [0.3, np.nan]])
    ref = m.copy()
    np.fill_diagonal(ref, 0.0)
    _identical(fgrad.jit(lambda a: fnp.at(a)[fnp.diag_indices_from(a)].set(0.0))(m), ref)
    ref = m.copy()
    np.nan_to_num(ref, copy=False)
    _identical(fgrad.jit(lambda x: fnp.nan_to_num(x))(m), ref)


def test_put_along_axis_refuses_indices_batched_by_vmap():
    a = np.zeros((2, 3))
    with pytest.raises(TypeError, match="indices is batched by vmap"):
        fgrad.vmap(lambda i, v: fnp.put_along_axis(a, i, v, 1, inplace=False))(
            np.array([[[0]], [[1]]]), np.ones((2, 1, 1))
        )


# --- selection and manipulation -------------------------------------------------------------------


def test_piecewise_with_conditions_read_from_the_rows_under_vmap_equals_a_loop():
    def f(x):
        return fnp.piecewise(x, [x < 0, x > 1], [lambda v: v**2, lambda v: fnp.sin(v), 0.5])

    xs = np.array([[-1.0, 2.0, 0.5], [1.5, -2.0, 3.0], [0.2, 0.3, 0.4]])
    np.testing.assert_allclose(fgrad.vmap(f)(xs), np.stack([f(x) for x in xs]))
    g = fgrad.grad(lambda x: fnp.sum(f(x)))
    np.testing.assert_allclose(fgrad.vmap(g)(xs), np.stack([g(x) for x in xs]))
    np.testing.assert_allclose(g(xs[0]), [-2.0, np.cos(2.0), 0.0])


def test_piecewise_of_a_plain_x_differentiates_what_its_functions_close_over():
    # x and the conditions are plain; the functions close over a traced parameter (NumPy's
    # piecewise, which this took, could not write a traced value into its array)
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])

    def f(a):
        return fnp.sum(fnp.piecewise(x, [x > 0, x <= 0], [lambda v: v * a, lambda v: v * a**2]))

    expected = np.sum(x[x > 0]) + 2 * 2.0 * np.sum(x[x <= 0])
    np.testing.assert_allclose(fgrad.grad(f)(2.0), expected)
    assert fgrad.jit(f)(3.0) == f(3.0)
    np.testing.assert_allclose(fgrad.vmap(f)(np.array([2.0, 3.0])), [f(2.0), f(3.0)])


def test_choose_out_of_range_names_the_mode_to_pass():
    """Eagerly too (it passed on NumPy's bare 'invalid entry in choice array'), and under jit:
    the same message, naming a's range."""
    message = r"choose: a holds indices outside \[0, 2\) .* from -1 to 2\); pass mode='wrap'"
    a, c = np.array([0, 2, -1]), [np.zeros(3), np.ones(3)]
    with pytest.raises(ValueError, match=message):
        fgrad.grad(lambda z: fnp.sum(fnp.choose(a, [z, z])))(np.ones(3))
    with pytest.raises(ValueError, match=message):
        fnp.choose(a, c)
    with pytest.raises(ValueError, match=message):
        fgrad.jit(fnp.choose)(a, c)
    with pytest.raises(ValueError):  # what NumPy raises
        np.choose(a, c)


def _grad_of_sum(f):
    return fgrad.grad(lambda t: fnp.sum(f(t)))


def test_selection_and_histogram_errors_name_the_function_and_argument():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.5])
    with pytest.raises(np.exceptions.AxisError, match=r"compress: axis 1 .* a of shape \(5,\)"):
        _grad_of_sum(lambda t: fnp.compress([True, False], t, axis=1))(x)
    with pytest.raises(TypeError, match=r"choose: a must hold integer .* dtype float64"):
        _grad_of_sum(lambda t: fnp.choose(np.array([0.0, 1.0]), [t[:2], t[2:4]]))(x)
    with pytest.raises(ValueError, match=r"histogram2d: x and y .* same length .*\(3,\)"):
        _grad_of_sum(lambda t: fnp.histogram2d(t, t[:3])[1])(x)
    with pytest.raises(TypeError, match=r"bincount: x must be .* integers, got shape \(3,\)"):
        fgrad.jit(fnp.bincount)(np.ones(3))
    with pytest.raises(ValueError, match=r"select: .* broadcast .* choicelist shapes \[\(5,\)"):
        _grad_of_sum(lambda t: fnp.select([t > 0, t[:2] > 1], [t, t[:2]]))(x)


def test_block_refuses_tuples_and_uneven_nesting_as_numpy_does():
    x = np.ones(2)
    with pytest.raises(TypeError, match=r"arrays\[0\] is a tuple"):
        fgrad.grad(lambda x: fnp.sum(fnp.block([(x, x)])))(x)
    with pytest.raises(ValueError, match="nested to different depths"):
        fgrad.grad(lambda x: fnp.sum(fnp.block([[x], x])))(x)
    with pytest.raises(ValueError, match="empty list"):
        fgrad.grad(lambda x: fnp.sum(fnp.block([x, []])))(x)


@pytest.mark.parametrize(
    "f",
    [
        lambda a: fnp.block([[a, a[:, :1]], [a[:1], a[:1, :1]]]),
        lambda a: fnp.resize(a, (4, 5)),
        lambda a: fnp.unstack(a, axis=1),
        lambda a: fnp.trim_zeros(fnp.pad(a, 1), "b"),
        lambda a: fnp.sort_complex(a[0] + 1j * a[1]),
        lambda a: fnp.apply_over_axes(fnp.sum, a, [1, 0]),
        lambda a: fnp.compress([1, 0, 1], a, axis=1),
        lambda a: fnp.extract(a > 2, a),
        lambda a: fnp.choose(np.array([[0, 1, 0], [1, 1, 0]]), [a, 2 * a]),
    ],
)
def test_traced_value_is_numpys(f):
    from gradtable import reference

    a = np.array([[1.0, 2.0, 3.0], [4.0, 0.5, 6.0]])
    for mine, theirs in zip(
        *(
            np.atleast_1d(v) if not isinstance(v, tuple) else v
            for v in (_traced_value(f, a), reference(f)(a))
        )
    ):
        _identical(mine, theirs)


def test_trim_zeros_under_vmap_keeps_the_rows_common_bounds():
    rows = np.array([[0.0, 1.0, 2.0, 0.0], [0.0, 3.0, 4.0, 0.0]])
    np.testing.assert_array_equal(fgrad.vmap(fnp.trim_zeros)(rows), rows[:, 1:3])


@pytest.mark.parametrize(
    "name",
    [
        "bartlett",
        "blackman",
        "hamming",
        "hanning",
        "logical_xor",
        "spacing",
        "nanargmax",
        "nanargmin",
        "tri",
    ],
)
def test_the_examples_of_the_names_declared_without_a_derivative_run(name):
    """Their functions are made in fgrad.numpy.shaping, so --doctest-modules does not find
    their examples in the modules that declare them: run here."""
    import doctest

    test = doctest.DocTestParser().get_doctest(getattr(fnp, name).__doc__, {}, name, name, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = []
    runner.run(test, out=report.append)
    assert test.examples and runner.failures == 0, "".join(report)
