"""The first `fgrad.numpy`, beyond the gradient table (tests/test_gradtable.py): conventions at
kinks, powers at 0, attributes, operators, NumPy functions on traced values, dtypes."""

import itertools
import math
import warnings

import numpy as np
import pytest
from gradtable import derivatives as _derivatives

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, hessian, jacfwd, jacrev

# --- conventions at kinks: JAX's ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_abs_has_slope_one_at_zero_and_no_curvature(mode):
    assert _derivatives(fnp.abs, 0.0, 3, mode) == [1.0, 0.0, 0.0]
    assert _derivatives(fnp.abs, -2.0, 2, mode) == [-1.0, 0.0]


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_ties_split_the_gradient_evenly(mode):
    x = np.array([1.0, 3.0, 3.0, -2.0])
    jac = jacrev if mode == "rev" else jacfwd
    np.testing.assert_array_equal(jac(fnp.max)(x), [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(jac(fnp.min)(np.array([2.0, 2.0, 2.0])), [1 / 3] * 3)
    np.testing.assert_array_equal(
        jac(lambda x: fnp.max(x, axis=1))(np.array([[1.0, 1.0], [0.0, 2.0]])),
        [[[0.5, 0.5], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]],
    )
    # maximum(x, y) at x == y: half to each; a tie with a constant still gives x its half
    assert grad(lambda x, y: fnp.maximum(x, y), argnums=(0, 1))(1.0, 1.0) == (0.5, 0.5)
    assert grad(lambda x: fnp.minimum(x, 1.0))(1.0) == 0.5
    assert grad(lambda x: fnp.clip(x, 0.0, 1.0))(1.0) == 0.5  # at a bound, as in JAX


_SIGNED_ZEROS = np.array([-0.0, 0.0, -1.0, 1.0, np.nan], np.float32)


@pytest.mark.parametrize(
    "a, lo, hi",
    # NumPy's clip keeps `a` at a tie with both bounds (clip(-0.0, 0.0, 1.0) is -0.0), and is
    # maximum(a, a_min) with one (clip(-0.0, 0.0, None) is 0.0)
    [(_SIGNED_ZEROS, lo, hi) for lo, hi in [(0.0, 1.0), (-0.0, 1.0), (0.0, -0.0)]]
    + [(_SIGNED_ZEROS, 0.0, None), (_SIGNED_ZEROS, -0.0, None), (_SIGNED_ZEROS, None, 0.0)]
    # NumPy 2's clip drops a Python-int bound past an integer array's range (it clips
    # nothing) where `maximum` would refuse it
    + [
        (np.array([100, -100, 5], np.int8), 1, 150),
        (np.array([3, 400], np.uint16), -1, 5),
        (np.array([3, 400], np.uint16), -1, None),
        (np.array([100, -100, 5], np.int8), -300, 300),
    ],
)
def test_clip_is_numpys_eager_jitted_and_batched(a, lo, hi):
    want = np.clip(a, lo, hi)
    jitted = fgrad.jit(lambda x: fnp.clip(x, lo, hi))
    jitted(a)
    for got in (fnp.clip(a, lo, hi), jitted(a.copy()), fgrad.vmap(jitted)(a)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize(
    "p, expected",
    [
        (0.0, [0.0, 0.0, 0.0, 0.0]),
        (1.0, [1.0, 0.0, 0.0, 0.0]),
        (2.0, [0.0, 2.0, 0.0, 0.0]),
        (3.0, [0.0, 0.0, 6.0, 0.0]),
    ],
)
def test_powers_are_exact_at_zero_to_every_order(mode, p, expected):
    derivs = _derivatives(lambda x: x**p, 0.0, 4, mode)
    assert derivs == expected
    assert not np.isnan(derivs).any()


def test_power_with_a_traced_exponent_at_a_zero_base():
    # d/dy 0**y = 0 (JAX's convention), not 0 * log(0) = nan; d/dx x**y at x = 0, y = 2 is 0.
    gx, gy = grad(lambda x, y: x**y, argnums=(0, 1))(0.0, 2.0)
    assert (gx, gy) == (0.0, 0.0)
    # where y is traced, the mixed partial d2/dxdy x**y = x**(y-1) (1 + y log x) is kept exact
    assert grad(grad(lambda x, y: x**y, 0), 1)(2.0, 1.0) == pytest.approx(1 + np.log(2.0))


def _nth_derivative(f, order):
    for _ in range(order):
        f = grad(f)
    return f


def _at_zero(n, k):
    """d^k/dx^k x**n at x = 0 for an integer n >= 0: n! where k == n, else 0."""
    return float(math.factorial(n)) if k == n else 0.0


_POWERS = {
    "power": lambda x, y: x**y,
    "float_power": fnp.float_power,
    "abs_power": lambda x, y: fnp.abs(x) ** y,
}


@pytest.mark.parametrize("power", list(_POWERS))
@pytest.mark.parametrize("order", [1, 2, 3])
def test_powers_with_a_traced_exponent_are_exact_at_zero_to_every_order(power, order):
    # An exponent that vmap batches, jit records or jacfwd differentiates is a box: the guard
    # at y == 0 was for constants only, and 0 * 0**-1 gave nan where the constant gives 0.
    f = _POWERS[power]
    ns = np.array([0.0, 1.0, 2.0, 3.0])
    zeros = np.zeros_like(ns)
    expected = [_at_zero(int(n), order) for n in ns]

    def d_at(x, n):
        return _nth_derivative(lambda t: f(t, n), order)(x)

    np.testing.assert_array_equal(fgrad.vmap(d_at)(zeros, ns), expected)
    np.testing.assert_array_equal(
        fgrad.vmap(lambda x, n: fgrad.derivative(lambda t: f(t, n), order)(x))(zeros, ns),
        expected,
    )
    jitted = fgrad.jit(d_at)
    for n, e in zip(ns, expected):
        assert jitted(0.0, n) == e == d_at(0.0, n)
    # the exponent differentiated too: d/dx and d2/dx2 taken with the derivatives in (x, n)
    of_both = lambda xn: f(xn[0], xn[1])
    in_both = {1: lambda xn: grad(of_both)(xn)[0], 2: lambda xn: hessian(of_both)(xn)[0, 0]}
    if order in in_both:
        for n, e in zip(ns, expected):
            assert in_both[order](np.array([0.0, n])) == e
    # c ** x differentiated in c with x batched
    np.testing.assert_array_equal(
        fgrad.vmap(lambda n: _nth_derivative(lambda c: f(c, n), order)(0.0))(ns), expected
    )


def test_traced_power_at_a_zero_exponent_keeps_the_mixed_partial():
    # d2/dxdy x**y at y = 0 is 1/x: the guard of y == 0 must not drop y's derivative, under
    # jit (a record replayed under grad) as eagerly
    mixed = grad(grad(lambda x, y: x**y, 0), 1)
    replayed = grad(fgrad.jit(grad(lambda x, y: x**y, 0)), 1)
    for x in (0.5, 2.0, 4.0):
        assert mixed(x, 0.0) == replayed(x, 0.0) == 1 / x
    # at the zero base the first derivative is the constant exponent's 0, bit for bit, and at
    # a subnormal base, whose 1/x overflows (0 * inf was nan under jit and vmap)
    bases = np.array([0.0, -2.0, np.nan, 1e-310, -5e-324, 3e-308])
    for power in (lambda x, y: x**y, fnp.float_power):
        first = grad(power)
        zero_exponents = np.zeros_like(bases)
        eager = np.array([first(x, 0.0) for x in bases])
        np.testing.assert_array_equal(eager, np.zeros_like(bases))
        jitted = fgrad.jit(first)
        assert np.array([jitted(x, 0.0) for x in bases]).tobytes() == eager.tobytes()
        assert fgrad.vmap(first)(bases, zero_exponents).tobytes() == eager.tobytes()


@pytest.mark.parametrize(
    "dtype, x", [(np.float16, 1e-4), (np.float32, 1e-25), (np.float64, 1e-200), (np.float64, 0.3)]
)
def test_power_mixed_partials_agree_where_the_value_underflows(dtype, x):
    # d/dx of d/dy x**y = x**y log x lost the term x**y / x where x**y underflows (x**2 at
    # 1e-4 in float16: -0.0018425, true -0.0017423); the Hessian was not symmetric
    mpmath = pytest.importorskip("mpmath")
    x, y = dtype(x), dtype(2.0)
    with mpmath.workdps(30):
        want = float(mpmath.mpf(float(x)) * (1 + 2 * mpmath.log(float(x))))  # x^(y-1)(1 + y log x)
    rtol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-14}[dtype]
    h = hessian(lambda v: v[0] ** v[1])(np.array([x, y]))
    for got in (h[0, 1], h[1, 0], grad(grad(lambda x, y: x**y, 1), 0)(x, y)):
        assert float(got) == pytest.approx(want, rel=rtol, abs=0)
    ulp = np.finfo(dtype).smallest_subnormal  # (d/dy x**y = x**y log x is subnormal)
    for mode in (jacfwd, jacrev):
        d = mode(lambda y: x**y)(y)
        assert float(d) == pytest.approx(float(x) ** 2 * math.log(float(x)), rel=rtol, abs=ulp)


def test_prod_is_exact_at_zeros():
    x = np.array([0.0, 2.0, 3.0])
    np.testing.assert_array_equal(grad(fnp.prod)(x), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(jacfwd(grad(fnp.prod))(x), [[0, 3, 2], [3, 0, 0], [2, 0, 0]])


@pytest.mark.parametrize(
    "jac", [jacfwd, jacrev, lambda f: fgrad.jit(jacfwd(f)), lambda f: fgrad.jit(jacrev(f))]
)
def test_prod_jacobian_at_an_inf_is_inf_only_where_the_inf_is_another_factor(jac):
    # A one-hot tangent (cotangent) is 0 on the other elements (outputs): 0 * inf there was a
    # nan in every entry of the Jacobian, where the derivative is the product of the others.
    with np.errstate(invalid="ignore"):
        got = jac(fnp.prod)(np.array([np.inf, 2.0, 3.0]))
        np.testing.assert_array_equal(got, [6.0, np.inf, np.inf])
        m = np.array([[1.0, np.inf], [2.0, 3.0]])
        got = jac(lambda m: fnp.prod(m, axis=0))(m)
    np.testing.assert_array_equal(got, [[[2, 0], [1, 0]], [[0, 3], [0, np.inf]]])


@pytest.mark.parametrize(
    "jac", [jacfwd, jacrev, lambda f: fgrad.jit(jacfwd(f)), lambda f: fgrad.jit(jacrev(f))]
)
def test_cumprod_jacobian_at_an_inf_is_zero_above_the_diagonal(jac):
    # d P_i / d x_j = 0 for j > i; the scans multiplied the tangent's (cotangent's) zeros by
    # an infinite product: nan in every entry (jacfwd) or above the diagonal (jacrev)
    x = np.array([2.0, np.inf, 3.0])
    with np.errstate(invalid="ignore"):
        got = jac(fnp.cumprod)(x)
    np.testing.assert_array_equal(got, [[1, 0, 0], [np.inf, 2, 0], [np.inf, 6, np.inf]])


# --- attributes, queries and operators ------------------------------------------------------------


def test_attributes_inside_a_transform():
    seen = {}

    def f(x):
        seen.update(
            shape=x.shape,
            ndim=x.ndim,
            size=x.size,
            dtype=x.dtype,
            T=x.T.shape,
            fshape=fnp.shape(x),
            fndim=fnp.ndim(x),
            fsize=fnp.size(x),
            len=len(x),
        )
        return fnp.sum(x)

    grad(f)(np.ones((3, 2), np.float32))
    assert seen == dict(
        shape=(3, 2),
        ndim=2,
        size=6,
        dtype=np.float32,
        T=(2, 3),
        fshape=(3, 2),
        fndim=2,
        fsize=6,
        len=3,
    )


def test_every_ndarray_attribute_works_on_a_traced_value_or_says_why_not():
    """NumPy users call x.copy(), x.item(), x.nbytes...: each public ndarray attribute is
    either a traced value's too, or an error naming it and what to use instead (never a bare
    "'Box' object has no attribute")."""
    names = sorted(n for n in dir(np.ndarray) if not n.startswith("_"))
    supported, refused = [], {}

    def f(x):
        for name in names:
            try:
                getattr(x, name)
                supported.append(name)
            except AttributeError as e:
                refused[name] = str(e)
        return fnp.sum(x)

    grad(f)(np.ones((2, 3)))
    assert set(supported) | set(refused) == set(names)
    for name, message in refused.items():
        assert f"x.{name} is not supported on a traced array (shape (2, 3)" in message, name
    # in-place methods exist, to say what to write instead
    assert {"sort", "partition", "fill", "put", "resize", "copy", "item", "mT"} <= set(supported)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_copy_mt_nbytes_and_itemsize_methods(mode):
    from fgrad.test_util import check_grads

    x = np.arange(1.0, 7.0).reshape(2, 3)
    check_grads(lambda x: fnp.sum(x.copy() ** 3), (x,), order=2, modes=(mode,))
    check_grads(lambda x: x.mT @ fnp.sin(x), (x,), order=2, modes=(mode,))
    jac = jacrev if mode == "rev" else jacfwd
    np.testing.assert_array_equal(jac(lambda x: x.copy())(x), jac(lambda x: x)(x))
    np.testing.assert_array_equal(jac(lambda x: x.mT)(x), jac(lambda x: x.T)(x))
    assert grad(lambda x: x.nbytes * fnp.sum(x))(np.ones(3, np.float32)).tolist() == [12.0] * 3
    assert fgrad.vmap(lambda r: r.itemsize * fnp.sum(r))(np.ones((2, 3), np.float32)).tolist() == [
        12.0,
        12.0,
    ]
    np.testing.assert_array_equal(
        fgrad.vmap(lambda r: r.mT)(np.ones((4, 2, 3))), np.ones((4, 3, 2))
    )
    with pytest.raises(TypeError, match=r"copy\(\.\.\., order=\.\.\.\)"):
        grad(lambda x: fnp.sum(x.copy(order="F")))(x)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_compress_choose_and_divmod_of_a_traced_value(mode):
    # x.compress and x.choose were refused ("use x[condition]"), and divmod(x, c) raised
    # Python's "unsupported operand type(s) for divmod()": NumPy's arrays have all three
    from fgrad.test_util import check_grads

    x = np.array([[0.31, -1.2, 2.5], [1.1, 0.65, -0.4]])  # x / 0.7 and 3 / x: no integer
    keep = [True, False, True]
    for f in (
        lambda x: x.compress(keep, axis=1),
        lambda x: x.compress(keep),
        lambda x: divmod(x, 0.7)[1] + divmod(x, 0.7)[0],
        lambda x: divmod(3.0, x)[1],
    ):
        np.testing.assert_array_equal(fgrad.jit(f)(x), f(x))
        check_grads(f, (x,), order=2, modes=(mode,))
    index = fgrad.jit(lambda i, x: i.choose([x[0], x[1]]))
    np.testing.assert_array_equal(index(np.array([1, 0, 1]), x), [1.1, -1.2, -0.4])
    np.testing.assert_array_equal(index(np.array([0, 0, 1]), x), [0.31, -1.2, -0.4])


def test_methods_that_give_python_values_or_change_arrays_in_place_say_what_to_do():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for method in ("item", "tolist", "tobytes"):
        with pytest.raises(TypeError, match=rf"x\.{method}\(\) of a traced value .* drop its"):
            grad(lambda x: getattr(x, method)() * fnp.sum(x))(x)
    # under vmap alone they read each row's value: the rows split by the branch they take
    out = fgrad.vmap(lambda r: r * 2.0 if r.item() > 2.0 else r)(np.arange(5.0))
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0, 6.0, 8.0])
    for method, instead in [("sort", "fgrad.numpy.sort"), ("fill", "full_like"), ("put", "at")]:
        with pytest.raises(
            TypeError, match=rf"x\.{method}\(\) changes an array in place.*{instead}"
        ):
            grad(lambda x: (getattr(x, method)(0.0), fnp.sum(x))[1])(x)
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # never mutated
    # searchsorted and argpartition are fgrad.numpy's functions: integer results, no tangent
    out, tangent = fgrad.jvp(lambda v: v.searchsorted(3.5) * v, (x[0],), (np.ones(3),))
    np.testing.assert_array_equal(out, 3 * x[0])
    np.testing.assert_array_equal(tangent, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(
        fgrad.vmap(lambda r: r.argpartition(1))(x[:, ::-1]), np.argpartition(x[:, ::-1], 1, axis=1)
    )


def test_comparisons_give_plain_booleans_for_control_flow():
    def f(x):
        checks = [x > 0, x >= 0, x < 0, x <= 0, x == 1.5, x != 1.5]
        assert all(type(c) in (bool, np.bool_) for c in checks)
        return x * 2.0 if x > 0 else x

    assert grad(f)(1.5) == 2.0 and grad(f)(-1.5) == 1.0


def test_iterating_over_a_traced_array_yields_differentiable_rows():
    g = grad(lambda x: sum(r * r for r in x))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [2.0, 4.0, 6.0])


def test_inputs_are_never_mutated():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x.setflags(write=False)  # a write would raise
    v = np.array([9.0, 9.0])
    g = grad(
        lambda x, v: fnp.sum(x.at[1].set(v) ** 2) + fnp.sum(x.at[[0, 0]].add(v)), argnums=(0, 1)
    )(x, v)
    np.testing.assert_array_equal(x, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(v, [9.0, 9.0])
    np.testing.assert_array_equal(g[0], 2 * x * np.array([[1.0], [0.0], [1.0]]) + 1.0)
    np.testing.assert_array_equal(g[1], 2 * v + 2.0)


def test_astype_keeps_the_gradient_in_the_input_dtype():
    x = np.array([1.0, 2.0])
    g = grad(lambda x: fnp.sum(x.astype(np.float32) ** 2))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x)
    assert grad(lambda x: fnp.sum(x.astype(int) * x))(np.array([1.7, 2.2])).tolist() == [1.0, 2.0]


def test_python_scalars_keep_the_array_dtype():
    x = np.float32(2.0)
    assert grad(lambda x: 3.0 * x**2 + 1.0 / x)(x).dtype == np.float32
    assert (
        grad(lambda x: fnp.sum(fnp.maximum(x, 0.5) * 2))(np.ones(3, np.float32)).dtype == np.float32
    )


def test_numpy_reductions_on_traced_values_call_the_differentiable_methods():
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_array_equal(grad(lambda x: np.sum(x * x))(x), 2 * x)
    np.testing.assert_array_equal(grad(lambda x: np.mean(x, keepdims=True))(x), [1 / 3] * 3)
    np.testing.assert_array_equal(grad(lambda x: np.prod(x))(x), [8.0, 4.0, 2.0])
    np.testing.assert_array_equal(grad(lambda x: np.max(x) + np.min(x, axis=0))(x), [1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match=r"sum\(\.\.\., out=\.\.\.\) cannot write into an array"):
        grad(lambda x: np.sum(x, out=np.zeros(())))(x)


def test_out_and_where_refusals_name_shapes_and_dtypes():
    # these named neither the traced argument nor the array given
    x = np.array([1.0, 2.0, 4.0])
    cases = [
        (lambda x: fnp.max(x, where=x > 1), r"max of a with shape \(3,\) and dtype float64 "),
        (lambda x: fnp.isnan(x, out=np.zeros(3, bool)), r"out: shape \(3,\) and dtype bool; "),
        (lambda x: fnp.argmax(x, out=np.zeros((), np.int64)), "argument 0 is traced, shape"),
        (lambda x: np.floor(x, out=np.zeros(3)), r"\(out: shape \(3,\) and dtype float64\)"),
    ]
    for f, message in cases:
        with pytest.raises((TypeError, ValueError), match=message):
            fgrad.jit(f)(x)


def _out_like(z, dtype=float):
    return np.zeros(z.shape, dtype)


def _out_along_0(z, dtype):
    return np.zeros(z.shape[1:], dtype)


@pytest.mark.parametrize(
    "name, call",
    [
        ("round", lambda z: np.round(z, 1, out=_out_like(z))),
        ("round", lambda z: z.round(1, _out_like(z))),
        ("round", lambda z: np.around(z, 1, out=_out_like(z))),
        ("argmax", lambda z: z.argmax(axis=0, out=_out_along_0(z, np.intp))),
        ("argmin", lambda z: np.argmin(z, 0, _out_along_0(z, np.intp))),
        ("all", lambda z: z.all(axis=0, out=_out_along_0(z, bool))),
        ("any", lambda z: np.any(z, axis=0, out=_out_along_0(z, bool))),
    ],
)
@pytest.mark.parametrize("transform", ["jit", "vmap", "grad"])
def test_out_of_the_functions_without_derivative_is_refused_on_traced_values(name, call, transform):
    # NumPy wrote into `out` once, while jit recorded: replays returned the first call's
    # values (round(., 1) of [5.55, 7.77] gave [0.1, 0.3]); vmap raised NumPy's shape error
    def f(z):
        call(z)
        return z

    z = np.array([[0.12, 0.34], [5.55, 7.77]])
    traced = {"jit": fgrad.jit(f), "vmap": fgrad.vmap(f), "grad": grad(lambda z: fnp.sum(f(z)))}
    with pytest.raises(TypeError, match=rf"{name}\(\.\.\., out=\.\.\.\) cannot write into"):
        traced[transform](z if transform != "vmap" else z[None])
    if transform == "jit":  # an `out` given to the jitted function: replays left it unwritten
        with pytest.raises(TypeError, match="out=.... cannot write into"):
            fgrad.jit(lambda z, o: np.round(z, 1, out=o))(z, np.zeros(z.shape))
    out = call(z)  # plain values: NumPy writes into out, as before
    assert type(out) is np.ndarray


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_python_number_inputs_follow_numpy_semantics_in_rules(mode):
    # As Python floats, 0.0 ** -2.0 and 1.0 / 0.0 raise ZeroDivisionError; as NumPy, inf.
    with np.errstate(divide="ignore"):
        assert _derivatives(lambda x: x**-1.0, 0.0, 1, mode) == [-np.inf]
        assert _derivatives(fnp.log, 0.0, 1, mode) == [np.inf]


# --- a traced Python number (a `jit` argument, held as given): Python's arithmetic, as eagerly ---


def _same_value(got, want):
    """The same type, dtype and bits: a Python number as the same Python number."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same_value(g, w)
    elif isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (got, want)
    else:
        assert got == want or (got != got and want != want), (got, want)


def _same_as_eager_under_jit(f, *calls):
    """f jitted against f, on first calls and replays."""
    jitted = fgrad.jit(f)
    for args in calls + calls:
        _same_value(jitted(*args), f(*args))


def test_comparisons_of_a_traced_python_number_give_a_python_bool():
    """`s > 1.0` of a Python number argument gave np.True_ under jit, where eagerly it is
    True: np.True_ + np.True_ is np.True_ (a logical or), so `(s > 1.0) + (s > 0.5)` counted 1
    where eagerly 2, np.True_ * 3 is a strong int64 (int8 arrays became int64), and np.True_ -
    np.False_ raises. A NumPy scalar or 0-d array compared keeps NumPy's np.bool_."""
    x, x8 = np.array([1.5, 2.5]), np.array([1, 2], np.int8)
    count = lambda x, s: x * ((s > 1.0) + (s > 0.5))
    _same_as_eager_under_jit(count, (x, 2.0), (x, 0.7))
    _same_as_eager_under_jit(lambda x, s: x * ((s > 1) * 3), (x8, 2.0), (x8, 0.5))
    _same_as_eager_under_jit(lambda x, s: x * ((s > 1.0) - (s > 3.0)), (x, 2.0), (x, 4.0))
    comparisons = lambda s, t: (s < t, s <= t, s > t, s >= t, s == t, s != t, 1.0 < s, 2 == s)
    for s, t in [(2.0, 1.0), (2, 2), (2**70 + 1, 2**70), (np.float64(2.0), 1.0)]:
        _same_as_eager_under_jit(lambda s: comparisons(s, t), (s,))
    _same_as_eager_under_jit(lambda s: comparisons(s, 1.0), (np.array(2.0, np.float32),))
    _same_as_eager_under_jit(lambda s: comparisons(s, 1.0), (np.float32(0.5),))
    # grad and jvp in x, and vmap, with the number held by jit
    total = lambda x, s: fnp.sum(x * x * ((s > 1.0) + (s > 0.5)))
    d = fgrad.jit(grad(total))(x, 2.0)
    steps = np.eye(2) * 1e-6
    fd = [(total(x + e, 2.0) - total(x - e, 2.0)) / 2e-6 for e in steps]
    np.testing.assert_allclose(d, fd, rtol=1e-6)
    np.testing.assert_array_equal(d, 4 * x)
    jvp = fgrad.jit(lambda x, s: fgrad.jvp(lambda x: count(x, s), (x,), (np.ones(2),)))(x, 2.0)
    np.testing.assert_array_equal(jvp[1], [2.0, 2.0])
    rows = np.array([[2.0, 0.7], [0.2, 3.0]])
    batched = fgrad.vmap(lambda r: (r > 1.0) + (r > 0.5))(rows)
    _same_value(batched, np.stack([(r > 1.0) + (r > 0.5) for r in rows]))


def test_a_traced_python_bool_is_an_index_as_eagerly():
    """[1.0, 2.0][flag] and flag.__index__() of a Python bool argument raised under jit
    ("only integer scalar arrays can be converted to a scalar index": the value was read
    as a NumPy bool); a bool is an int in Python, as a comparison of a Python number is."""
    x, x32 = np.ones(2), np.array([1.5, 2.5], np.float32)
    _same_as_eager_under_jit(lambda x, flag: x * [1.0, 2.0][flag], (x, True), (x, False))
    _same_as_eager_under_jit(lambda x, flag: x * flag.__index__(), (x32, True), (x32, False))
    _same_as_eager_under_jit(lambda x, s: x * (3, 5)[s > 1.0], (x32, 2.0), (x32, 0.5))
    _same_as_eager_under_jit(lambda x, n: x[: n.__index__()], (x, 1), (x, 2**0))
    with pytest.raises(TypeError, match="only integer scalar arrays"):  # as np.True_ eagerly
        fgrad.jit(lambda x, flag: x * [1.0, 2.0][flag])(x, np.True_)


def test_divmod_of_a_traced_python_number_keeps_the_eager_dtype():
    """divmod(s, 1.0) of a Python number argument went through NumPy's divmod under jit and
    gave float64 (int64) scalars, which promoted float32 (int8) arrays; eagerly they are
    Python numbers. divmod(x, y) is (x // y, x % y), the operators' values."""
    x32, x8 = np.array([1.5, 2.5], np.float32), np.array([1, 2], np.int8)
    _same_as_eager_under_jit(lambda x, s: x * divmod(s, 1.0)[0], (x32, 3.5), (x32, -2.25))
    _same_as_eager_under_jit(lambda x, s: x * divmod(5.0, s)[1], (x32, 3.5), (x32, -2.25))
    _same_as_eager_under_jit(lambda x, n: x * divmod(n, 3)[1], (x8, 2), (x8, -7))
    _same_as_eager_under_jit(lambda n: divmod(n, 3), (2**70 + 1,))
    for a, b in [(x32, 0.7), (x8, np.int8(3)), (np.float64(7.5), 2.0)]:  # NumPy's divmod
        _same_as_eager_under_jit(lambda a: divmod(a, b) + divmod(b, a), (a,))
    # grad and jvp in x, with the number held by jit; vmap against NumPy's divmod of the rows
    loss = lambda x, s: fnp.sum(x * divmod(s, 1.0)[1] + divmod(x, s)[1])
    g = fgrad.jit(grad(loss))(x32, 3.5)
    _same_value(g, grad(loss)(x32, 3.5))
    np.testing.assert_array_equal(g, [1.5, 1.5])
    t = fgrad.jit(lambda x, s: fgrad.jvp(lambda x: x * divmod(s, 1.0)[1], (x,), (x,)))(x32, 3.5)
    assert t[1].dtype == np.float32
    rows = np.array([[7.5, -2.0], [3.25, 0.5]], np.float32)
    _same_value(fgrad.vmap(lambda r: divmod(r, 0.75))(rows), np.divmod(rows, 0.75))


def test_python_number_methods_of_a_traced_python_number_are_its_values():
    """math.trunc(s), s.is_integer(), n.bit_length(), pow(n, 2, 7), n.numerator and
    s.as_integer_ratio() of a Python number argument raised under jit (no such method on a
    traced value, or `pow` given three arguments); math.floor(n) of an int beyond 2**53 went
    through float() and lost its last bits. They are the value's, read as int(x) reads it."""
    x = np.array([1.5, 2.5], np.float32)
    for f, calls in [
        (lambda x, s: x * math.trunc(s), [(x, 3.5), (x, -2.5)]),
        (lambda x, s: x * s.is_integer(), [(x, 3.0), (x, 3.5)]),
        (lambda x, n: x * n.bit_length(), [(x, 5), (x, 1000)]),
        (lambda x, n: x * pow(n, 2, 7), [(x, 5), (x, 4)]),
        (lambda x, n: x * (n.numerator + n.denominator), [(x, 5), (x, 6)]),
        (lambda x, s: x * s.as_integer_ratio()[1], [(x, 0.5), (x, 0.25)]),
        (lambda x, n: (x * n.bit_count(), n.to_bytes(2, "big")), [(x, 5), (x, 300)]),
        (lambda x, s: (x * s.real, x * s.imag, s.hex()), [(x, 0.5), (x, 0.25)]),
        (lambda n: (math.floor(n), math.ceil(n), math.trunc(n)), [(2**60 + 1,), (-(2**60) - 1,)]),
        (lambda s: (math.floor(s), math.ceil(s), s.is_integer()), [(np.float64(2.5),)]),
    ]:
        _same_as_eager_under_jit(f, *calls)
    with pytest.raises(AttributeError, match=r"x.is_integer: a traced array \(shape \(2,\)"):
        fgrad.jit(lambda x: x.is_integer())(x)
    # grad and jvp in x with the number held by jit; vmap reads each row, as a loop does
    loss = lambda x, s: fnp.sum(x * x * math.trunc(s) * s.as_integer_ratio()[1])
    np.testing.assert_array_equal(fgrad.jit(grad(loss))(x, 3.5), 2 * x * 3 * 2)
    jvp = fgrad.jit(lambda x, n: fgrad.jvp(lambda x: x * pow(n, 2, 7), (x,), (x,)))(x, 5)
    _same_value(jvp[1], x * 4)
    rows = np.array([[1.5, 2.0], [3.0, 4.5]])
    f = lambda r: r * r[0].is_integer() * r[1].as_integer_ratio()[1] * math.trunc(r[1])
    _same_value(fgrad.vmap(f)(rows), np.stack([f(r) for r in rows]))
    # a transform that differentiates the number refuses the read (as float(s) and round(s))
    with pytest.raises(TypeError, match=r"math.trunc\(\) of a traced value .* would drop"):
        grad(lambda s: s * math.trunc(s))(3.5)


def test_pythons_round_of_a_traced_number_is_numpys_with_derivative_zero():
    """round(x, n) and round(x) of a traced number were refused under grad, jet and
    derivative ("would drop its gradient"), where rounding has derivative 0: NumPy's
    round(np.float64(2.37), 1) is np.float64(2.4), round(x) an int (JAX answers too)."""
    x = np.float64(2.37)
    assert fgrad.derivative(lambda x: round(x, 1) * x, 1)(x) == np.float64(2.4)
    assert grad(lambda x: round(x) * x)(x) == 2.0
    assert fgrad.derivative(lambda x: round(x, 1) * x, 1)(2.37) == 2.4  # a Python float
    _same_as_eager_under_jit(lambda x: round(x, 1) * x, (x,), (np.float64(3.14),))
    rows = np.array([2.37, 3.14])
    for f in (lambda r: round(r, 1) * r, lambda r: round(r) * r):
        _same_value(fgrad.vmap(f)(rows), np.stack([f(r) for r in rows]))
    # a NumPy array has no __round__, traced or not
    with pytest.raises(TypeError):
        round(np.array([2.37]), 1)
    with pytest.raises(TypeError, match=r"round\(\) of a traced array .* fgrad.numpy.round"):
        grad(lambda x: fnp.sum(round(x, 1)))(np.ones(2))


def test_numpys_full_like_of_a_plain_array_and_a_traced_fill_value():
    """np.full_like(p, fill) with a plain p dispatches on p alone: NumPy's body ran and its
    np.copyto of the traced fill was refused under jit, vmap and grad, naming copyto. Under
    jit and vmap it now copies the value read (a guard of the record, each row's), as np.full
    reads it; under grad NumPy's plain array cannot carry a derivative, and the refusal names
    full_like and fgrad.numpy.full_like, which does."""
    x, p = np.array([0.3, -1.2, 2.5]), np.array([1.0, 2.0, 3.0])
    f = lambda z: np.full_like(p, z[2]) * z
    _same_as_eager_under_jit(f, (x,), (x + 1,))
    i8 = np.array([1, 2], np.int8)
    filled = lambda s: (np.full_like(i8, s), np.full_like(p, s, np.float32))
    _same_as_eager_under_jit(filled, (7.9,))
    rows = np.stack([x, x * 2])
    _same_value(fgrad.vmap(f)(rows), np.stack([f(r) for r in rows]))
    for transform in (grad(lambda z: fnp.sum(f(z))), lambda z: fgrad.jvp(f, (z,), (z,))):
        with pytest.raises(TypeError, match=r"np.full_like.*fgrad.numpy.full_like\(a, fill_va"):
            transform(x)
    ours = grad(lambda z: fnp.sum(fnp.full_like(p, z[2]) * z))(x)
    np.testing.assert_array_equal(ours, [2.5, 2.5, 4.1])


def test_numpys_nan_to_num_of_a_plain_array_and_traced_fill_values():
    """np.nan_to_num(p, nan=r, posinf=2 * r) with a plain p dispatches on p alone: NumPy's
    body copies the fill values in with np.copyto, which was refused under jit, vmap and
    jacfwd, naming copyto (the user's call is nan_to_num). Under jit and vmap it now gives
    NumPy's value, as np.full_like does; under a transform that differentiates the refusal
    names nan_to_num and fgrad.numpy.nan_to_num, whose derivative is checked here."""
    p = np.array([np.nan, 1.0, np.inf, -np.inf])
    c = np.array([np.nan + 1j, np.inf + 2j])
    f = lambda r: np.nan_to_num(p, nan=r, posinf=2 * r, neginf=-3.0)
    _same_as_eager_under_jit(f, (0.8,), (np.float64(-1.5),))
    _same_as_eager_under_jit(lambda r: np.nan_to_num(c, nan=r, posinf=r * r), (0.5,), (2.0,))
    rows = np.array([0.8, 1.1])
    _same_value(fgrad.vmap(f)(rows), np.stack([f(r) for r in rows]))
    for transform in (fgrad.jacfwd(f), fgrad.jacrev(f), grad(lambda r: fnp.sum(f(r)))):
        with pytest.raises(TypeError, match=r"np.nan_to_num.*fgrad.numpy.nan_to_num\(x, nan="):
            transform(0.8)
    ours = fgrad.jacfwd(lambda r: fnp.nan_to_num(p, nan=r, posinf=2 * r, neginf=-3.0))(0.8)
    h = 1e-6
    np.testing.assert_allclose(ours, (f(0.8 + h) - f(0.8 - h)) / (2 * h), atol=1e-8)


def test_full_of_a_traced_fill_value_takes_a_length_given_alone_as_numpy_does():
    """fnp.full(n, x[1]) under jit, n a Python-int argument, raised "iteration over a 0-d
    traced array" (only an int or NumPy integer was read as one length; a traced int, or a
    0-d array, was iterated as a sequence); so did full_like(..., shape=n). The length is read
    as NumPy reads it (under jit a guard: another n records again)."""
    x = np.arange(4.0)
    for f in [
        lambda x, n: fnp.full(n, x[1]),
        lambda x, n: fnp.full(np.array(n), x[1], np.float32),
        lambda x, n: fnp.full([n, 2], x[1]),
        lambda x, n: fnp.full_like(x, x[1], shape=n),
        lambda x, n: fnp.full_like(x, x[1], shape=(2, n)),
        lambda x, n: fnp.zeros_like(x, shape=n) + x[1],
        lambda x, n: fnp.eye(n, n + 1, k=n - 3) + fnp.tri(n, n + 1, n - 3) * x[1],
        lambda x, n: fnp.arange(1, n + 2, 2) * fnp.linspace(0.0, x[1], n)[:1],
    ]:
        _same_as_eager_under_jit(f, (x, 3), (x, 4), (x, np.int64(2)))
    rows = np.stack([x, 2 * x])
    loop = np.stack([np.full(3, r[1]) for r in rows])
    _same_value(fgrad.vmap(lambda r: fnp.full(3, r[1]))(rows), loop)
    np.testing.assert_array_equal(grad(lambda v: fnp.sum(fnp.full(np.array(3), v)))(0.5), 3.0)


# --- array-likes: lists and tuples that hold traced values, anywhere NumPy takes an array ---------


@pytest.mark.parametrize(
    "name, f",
    [
        ("squeeze", fnp.squeeze),
        ("reshape", lambda a: fnp.reshape(a, (3,))),
        ("trim_zeros", fnp.trim_zeros),
        ("histogramdd", lambda a: fnp.histogramdd(a, bins=3)),
        ("histogramdd of columns", lambda a: fnp.histogramdd([a, a], bins=2)),
    ],
)
def test_a_list_argument_under_jit_gives_the_eager_result(name, f):
    """jit gives a function a list argument as a list of traced numbers (a pytree, as JAX).
    squeeze returned that list (eagerly an array), trim_zeros an array (eagerly NumPy's
    sliced list) and histogramdd failed inside (not enough values to unpack): each is now
    the eager result, whose type, structure, dtypes and values are compared, on a record
    and its replays."""
    jitted = fgrad.jit(f)
    for a in ([0.0, 1.5, 0.0], [0.3, 1.2, 2.5], [0.0, 2.0, 0.0]):
        want, got = f(a), jitted(a)
        want_leaves, want_tree = fgrad.tree_util.tree_flatten(want)
        got_leaves, got_tree = fgrad.tree_util.tree_flatten(got)
        assert got_tree == want_tree, name
        for g, w in zip(got_leaves, want_leaves):
            assert type(g) is type(w) and np.result_type(g) == np.result_type(w), name
            np.testing.assert_array_equal(g, w)


def test_unstack_refuses_a_list_eagerly_and_under_jit_alike():
    """NumPy's unstack takes no list (AttributeError: a list has no ndim); under jit fgrad's
    unstacked the list of traced numbers. Both now raise one TypeError saying what to do."""
    with pytest.raises(AttributeError):
        np.unstack([0.3, 1.2])
    for call in (fnp.unstack, fgrad.jit(fnp.unstack)):
        with pytest.raises(TypeError, match="unstack: x is a list; .*asarray"):
            call([0.3, 1.2])


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_lists_of_traced_values_are_differentiable_arrays(mode):
    w = np.array([1.0, 2.0])
    cases = [
        (lambda x: fnp.dot([x, 2 * x], w), lambda x: 5.0),
        (lambda x: fnp.sum([x, x * x]), lambda x: 1 + 2 * x),
        (lambda x: fnp.sum(x * [1.0, x]), lambda x: 1 + 2 * x),
        (lambda x: fnp.sum(fnp.concatenate([[x], (1.0, x)])), lambda x: 2.0),
        (lambda x: fnp.sum(fnp.sin([[x, x], [x, 1.0]])), lambda x: 3 * np.cos(x)),
        (lambda x: fnp.max([x, 2.0 * x]), lambda x: 2.0),
        (lambda x: fnp.sum(fnp.array([[x, 1.0], [x * x, 3.0]])), lambda x: 1 + 2 * x),
        (lambda x: fnp.sign([x, -x])[0] * x, lambda x: 1.0),
    ]
    for f, df in cases:
        assert _derivatives(f, 1.5, 1, mode) == [pytest.approx(df(1.5))]


def test_second_derivatives_through_lists():
    h = hessian(lambda x: fnp.dot([x[0], x[1] * x[0]], [1.0, 1.0]))(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(h, [[0.0, 1.0], [1.0, 0.0]])


# --- NumPy's own functions on traced values go to fgrad.numpy -------------------------------------


def test_numpy_functions_on_traced_values_are_differentiated():
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(grad(lambda x: np.var(x))(x), 2 * (x - x.mean()) / 3)
    np.testing.assert_allclose(grad(lambda x: np.linalg.norm(x))(x), x / np.linalg.norm(x))
    np.testing.assert_allclose(grad(lambda x: np.einsum("i,i->", x, x))(x), 2 * x)
    # sum of Re rfft: X0 + Re X1, so the gradient is 1 + cos(2 pi n / 3)
    np.testing.assert_allclose(
        grad(lambda x: np.sum(np.fft.rfft(x).real))(x), 1 + np.cos(2 * np.pi * np.arange(3) / 3)
    )
    np.testing.assert_allclose(
        grad(lambda x: x.std() + x.cumsum()[-1])(x), (x - x.mean()) / (3 * x.std()) + 1
    )
    with pytest.raises(TypeError, match="numpy.busday_count was applied to a traced value"):
        grad(lambda x: np.busday_count(x, x))(x)


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_modulo_and_floor_division_operators(mode):
    assert _derivatives(lambda x: x % 1.5, 2.0, 1, mode) == [1.0]
    assert _derivatives(lambda x: 5.0 % x, 2.0, 1, mode) == [-2.0]  # -floor(5 / 2)
    assert _derivatives(lambda x: x // 1.5 * x, 2.0, 1, mode) == [1.0]  # floor_divide is flat


def test_jacobians_give_no_tangent_to_the_other_inputs_and_outputs():
    # sqrt's rule at 0 is inf: a zero tangent or cotangent through it would be 0 * inf = nan.
    with np.errstate(divide="ignore"):
        for jac in (jacfwd, jacrev):
            assert jac(lambda x, y: fnp.sqrt(x) + y, argnums=(0, 1))(0.0, 1.0) == (np.inf, 1.0)
        assert jacrev(lambda x: (fnp.sqrt(x), 2.0 * x))(0.0) == (np.inf, 2.0)
        assert jacfwd(lambda x: (fnp.sqrt(x), 2.0 * x))(0.0) == (np.inf, 2.0)


def test_numpy_ufunc_keywords_on_traced_values():
    x = np.ones(3)
    np.testing.assert_array_equal(grad(lambda x: np.vecdot(x, x, axis=0))(x), 2 * x)
    with pytest.raises(
        TypeError,
        match=r"numpy.sin was applied to a traced value with keyword arguments \['where'\]",
    ):
        grad(lambda x: np.sum(np.sin(x, where=x > 0)))(x)
    with pytest.raises(TypeError, match=r"numpy.sin\(\.\.\., out=\.\.\.\) cannot write"):
        grad(lambda x: np.sum(np.sin(x, out=np.zeros(3))))(x)


def test_linalg_vecdot_conjugates_its_first_argument():
    z, w = np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 0.5j])
    assert fnp.linalg.vecdot(z, w) == np.linalg.vecdot(z, w)
    # Re(conj(z) w) = x Re(w) + y Im(w) for z = x + iy: the gradient d/dx - i d/dy is conj(w)
    g = grad(lambda z: fnp.real(fnp.linalg.vecdot(z, w)))(z)
    np.testing.assert_allclose(g, np.conj(w), rtol=1e-15)


@pytest.mark.parametrize("f", ["dot", "inner"])
def test_dot_and_inner_read_a_python_number_as_numpy_does_a_strong_float64(f):
    # they are no ufuncs: float32 . 2.0 is float64 in NumPy (it was float32, complex64 -> 64)
    a32, c64, h16 = np.float32([0.3, 0.5]), np.complex64([1 + 2j, 3]), np.float16([1, 2])
    for x, y in [(a32, 1.7), (1.7, a32), (c64, 1.7), (h16, 2.0), (a32, 2j), (np.float32(3), 2.0)]:
        want = getattr(np, f)(x, y)
        got = getattr(fnp, f)(x, y)
        assert type(got) is type(want) and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        if isinstance(x, np.ndarray):  # (jit's Python-number arguments have their own rule)
            traced = fgrad.jit(lambda x: getattr(fnp, f)(x, y))(x)
            assert traced.dtype == want.dtype


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
def test_inner_and_vdot_of_vectors_are_numpys_to_the_bit_under_every_transform(dtype):
    """inner and vdot of two vectors were einsum's sum, NumPy's are BLAS's dot (as dot's):
    81 of 200 float64 pairs differed in the last bit under jit, vmap and as jvp's primal, and
    fnp.inner/fnp.vdot of plain arrays too. vmap of two batched complex vectors of length 1
    (dot's too) multiplied them, which rounds otherwise than NumPy's product."""
    rng = np.random.default_rng(5)

    def same(got, want):
        got, want = np.asarray(got), np.asarray(want)
        return got.dtype == want.dtype and got.tobytes() == want.tobytes()

    for n in (1, 2, 3, 5, 9, 40):
        xs = rng.standard_normal((2, 6, n)) + (1j if dtype in (np.complex128, np.complex64) else 0)
        xs = (xs * rng.standard_normal((2, 6, n))).astype(dtype)
        rows_a, rows_b = xs
        a, b = rows_a[0], rows_b[0]
        for name in ("inner", "vdot", "dot"):
            npf = getattr(np, name)
            want = npf(a, b)
            assert same(getattr(fnp, name)(a, b), want), (name, n)
            assert same(fgrad.jit(lambda z, npf=npf: npf(a, z))(b), want), (name, n)
            assert same(fgrad.jit(lambda z, npf=npf: npf(z, b))(a), want), (name, n)
            assert same(fgrad.jvp(lambda z, npf=npf: npf(a, z), (b,), (b,))[0], want), (name, n)
            assert same(fgrad.vmap(lambda z, npf=npf: npf(a, z))(rows_b)[0], want), (name, n)
            loop = [npf(u, v) for u, v in zip(rows_a, rows_b)]
            assert same(fgrad.vmap(npf)(rows_a, rows_b), np.array(loop)), (name, n)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float64])
@pytest.mark.parametrize("name", ["dot", "inner"])
def test_dot_and_inner_with_a_0d_operand_are_numpys_to_the_bit_under_every_transform(dtype, name):
    """With a 0-d operand they multiplied with the ufunc; np.dot rounds as BLAS's axpy onto
    zeros (or, for two numbers, as the scalar `*`): complex64 scalars differed in the last bit
    in 448 of 1000 pairs, a complex scalar times a vector in about 90% of vectors, and
    np.dot(-1.0, [0.0, 1.0]) is [0.0, -1.0] where the product has -0.0."""
    rng = np.random.default_rng(7)
    npf, f = getattr(np, name), getattr(fnp, name)
    cx = 1j if np.dtype(dtype).kind == "c" else 0

    def draw(*s):
        return (rng.standard_normal(s) + cx * rng.standard_normal(s)).astype(dtype)

    def same(got, want):
        return type(got) is type(want) and np.asarray(got).tobytes() == np.asarray(want).tobytes()

    for _ in range(30):
        a, b, v = draw(), draw(), draw(5)
        v[0] = 0
        for x, y in [(a[()], b[()]), (a, b), (-a, v), (v, a), (a, draw(2, 3))]:
            want = npf(x, y)
            assert same(f(x, y), want)
            for tx in (0, 1):
                g = (lambda z: f(z, y)) if tx == 0 else (lambda z: f(x, z))
                z = (x, y)[tx]
                assert same(fgrad.jit(g)(z), want) and same(fgrad.jit(g)(z), want)
                assert same(fgrad.vjp(g, z)[0], want)
                assert same(fgrad.jvp(g, (z,), (z,))[0], want)
            rows = np.stack([x, -x, 2 * x])
            loop = np.stack([npf(r, y) for r in rows])
            assert same(fgrad.vmap(lambda r: f(r, y))(rows), loop)
    from fgrad.test_util import check_grads

    check_grads(f, (draw(), draw(3)), order=2)


# --- reshape's order and the rule for NumPy's keywords (issue 15) ---------------------------------


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_reshape_order_f_moves_each_element_where_numpy_puts_it(jac):
    x = np.arange(6.0).reshape(2, 3)
    j = jac(lambda x: fnp.reshape(x, (3, 2), order="F"))(x)
    # output element (i, j) is x's element with the same Fortran-order position
    target = np.reshape(np.arange(6).reshape(2, 3), (3, 2), order="F")  # each one's source
    np.testing.assert_array_equal(j.reshape(6, 6), np.eye(6)[target.ravel()])
    np.testing.assert_array_equal(
        jac(lambda x: x.reshape((6,), order="F"))(x).reshape(6, 6),
        np.eye(6)[np.ravel(np.arange(6).reshape(2, 3), order="F")],
    )
    with pytest.raises(ValueError, match="order must be one of 'C', 'F', 'A'"):
        grad(lambda x: fnp.sum(fnp.reshape(x, (6,), order="K")))(x)


def test_a_keyword_fgrad_does_not_take_is_a_type_error_naming_it():
    x = np.ones(3)
    for call in (
        lambda x: fnp.sum(x, bogus=1),
        lambda x: fnp.sin(x, dtype=np.float32),
        lambda x: fnp.einsum("i->", x, bogus=1),
        lambda x: fnp.reshape(x, 3, bogus=1),
    ):
        with pytest.raises(TypeError, match="bogus|dtype"):
            grad(call)(x)


# --- subpackages by attribute, as `jax.scipy` after `import jax` ----------------------------------


def _run(code):
    """Run `code` in a fresh interpreter (this one has loaded every subpackage already)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_subpackages_load_on_first_attribute_access():
    run = _run(
        "import sys, fgrad\n"
        "assert 'fgrad.scipy' not in sys.modules and 'scipy' not in sys.modules\n"
        "assert {'scipy', 'numpy'} <= set(dir(fgrad)), dir(fgrad)\n"
        "assert {'special', 'stats', 'linalg', 'signal', 'integrate'} <= set(dir(fgrad.scipy))\n"
        "print(fgrad.scipy.special.expit(0.0), fgrad.scipy.stats.norm.pdf(0.0) > 0.39,\n"
        "      fgrad.scipy.linalg.expm.__module__, fgrad.scipy.signal.convolve.__module__,\n"
        "      callable(fgrad.scipy.integrate.odeint), fgrad.numpy.linalg.det([[2.0]]),\n"
        "      fgrad.numpy.fft.fft([1.0]).real[0])\n"
        "print(float(fgrad.grad(fgrad.scipy.special.expit)(0.0)))\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        "0.5",
        "True",
        "fgrad.scipy.linalg",
        "fgrad.scipy.signal",
        "True",
        "2.0",
        "1.0",
        "0.25",
    ]
    run = _run("import fgrad; fgrad.no_such_thing")
    assert "module 'fgrad' has no attribute 'no_such_thing'" in run.stderr


def test_without_scipy_fgrad_works_and_fgrad_scipy_says_how_to_install_it():
    run = _run(
        "import sys; sys.modules['scipy'] = None\n"  # makes `import scipy` fail
        "import fgrad\n"
        "assert fgrad.grad(lambda x: x * x)(3.0) == 6.0\n"
        "assert not hasattr(fgrad, 'scipy')\n"
        "fgrad.scipy.special.expit(0.0)\n"
    )
    assert "AttributeError: fgrad.scipy is unavailable" in run.stderr, run.stderr
    assert "pip install 'fgrad[scipy]'" in run.stderr


def test_full_of_a_traced_fill_value_is_a_new_writable_array_as_numpys():
    # (it was a read-only broadcast view with zero strides; NumPy's full writes a new array)
    out, tangent = fgrad.jvp(lambda v: fnp.full((2, 3), v), (-0.0,), (1.0,))
    np.testing.assert_array_equal(out, np.full((2, 3), -0.0))
    assert np.signbit(out).all() and out.flags.writeable and out.strides == (24, 8)
    np.testing.assert_array_equal(tangent, np.ones((2, 3)))
    x = np.array([1.0, 2.0, 3.0])
    out = fgrad.jvp(lambda x: fnp.full_like(x, x[1]), (x,), (np.ones(3),))[0]
    assert out.flags.writeable and out.strides == (8,)


def test_derivatives_by_a_float_of_small_integer_or_float16_constants():
    """arctan2's slope in x was -y / r**2 with -y in y's dtype (a uint8 200 wrapped to 56,
    a bool raised); x ** k's k - 1 wrapped at int8's -128 (-3.8e16 for -2.6e-13); b ** x's
    log(b) was float16 for a uint8 or float16 base (5192.29 for 5193.70)."""
    x = np.array([1.3, 2.2, 0.7])
    for y in (np.array([200, 3, 255], np.uint8), np.array([-128, 3, 127], np.int8)):
        yf = y.astype(np.float64)
        want = -yf / (x**2 + yf**2)
        np.testing.assert_allclose(
            fgrad.jvp(lambda x: fnp.arctan2(y, x), (x,), (np.ones(3),))[1], want, rtol=1e-12
        )
    np.testing.assert_allclose(
        fgrad.grad(lambda x: fnp.sum(fnp.arctan2(np.array([True, False, True]), x)))(x),
        -np.array([1.0, 0.0, 1.0]) / (x**2 + np.array([1.0, 0.0, 1.0])),
        rtol=1e-12,
    )
    for k in (np.int8(-128), np.int16(-32768), np.array([-128, 127], np.int8)):
        got = fgrad.jacfwd(lambda a: fnp.sum(a**k))(1.3)
        np.testing.assert_allclose(got, np.sum(k * 1.3 ** (k.astype(float) - 1)), rtol=1e-12)
    for base in (np.uint8(200), np.float16(1.5), np.int8(3)):
        b = float(base)
        np.testing.assert_allclose(
            fgrad.grad(lambda a: base**a)(1.3), b**1.3 * np.log(b), rtol=1e-13
        )


def test_an_integer_dtype_asked_for_is_the_one_summed_in():
    """sum, nansum, cumsum, cumprod, cumulative_sum and mean of small integers ignored dtype=
    when it was the input's own: NumPy sums int8 in int64 by default, in int8 when asked."""
    a = np.array([100, 100, 27], np.int8)
    for name in ("sum", "nansum", "cumsum", "cumprod", "nancumsum", "mean", "prod"):
        for dtype in (np.int8, np.uint8, np.int16, bool, None):
            want = getattr(np, name)(a, dtype=dtype)
            got = getattr(fnp, name)(a, dtype=dtype)
            assert np.asarray(got).dtype == np.asarray(want).dtype, (name, dtype)
            np.testing.assert_array_equal(got, want)
    b = np.array([100, 100, 27], np.int8)
    np.testing.assert_array_equal(
        fnp.cumulative_sum(b, dtype=np.int8), np.cumulative_sum(b, dtype=np.int8)
    )


def test_an_integer_dtype_makes_sum_and_prod_piecewise_constant():
    """NumPy casts each element (and initial) to an integer or bool dtype= before reducing,
    so the derivative is 0, as astype's and mean's with it. sum, nansum, trace and prod gave
    the float derivative (grad of sum(x, dtype=int64) was ones, of prod the products of the
    others) in every mode; vmap over a float initial added it before the cast (sum with
    initial=-2.5 was 1 where NumPy's is 2)."""
    x = np.array([1.5, 2.7, -3.2, 4.1])
    rows = np.stack([x, 1.3 * x, -x])
    for f in (
        lambda z: fnp.sum(z, dtype=np.int64),
        lambda z: fnp.nansum(z, dtype=np.int32),
        lambda z: fnp.trace(fnp.diag(z), dtype=np.int64),
        lambda z: fnp.sum(z, dtype=bool),
        lambda z: fnp.sum(z, dtype=np.int64, where=z > 0, initial=2.5),
        lambda z: fnp.prod(z, dtype=np.int64),
        lambda z: fnp.nanprod(z, dtype=np.int64, initial=-2.5),
    ):
        g = lambda z, f=f: f(z) * 1.0
        for d in (grad(g)(x), jacfwd(g)(x), fgrad.jit(grad(g))(x), fgrad.vmap(grad(g))(rows)):
            np.testing.assert_array_equal(d, 0.0)
        assert not hessian(g)(x).any()
        assert not np.any(fgrad.jvp(f, (x,), (np.ones(4),))[1])
        assert not np.any(fgrad.jet(f, (x,), ((x, x),))[1])
        assert fgrad.jit(f)(x) == f(x) and fgrad.jit(f)(-x) == f(-x)
        np.testing.assert_array_equal(fgrad.vmap(f)(rows), [f(r) for r in rows])
    for red in ("sum", "prod"):
        starts = np.array([2.5, -2.5, 3.9])
        h = lambda c, red=red: getattr(fnp, red)(x, dtype=np.int64, initial=c)
        assert grad(lambda c: h(c) * 1.0)(-2.5) == 0.0 and jacfwd(lambda c: h(c) * 1.0)(3.9) == 0
        want = [getattr(np, red)(x, dtype=np.int64, initial=c) for c in starts]
        np.testing.assert_array_equal(fgrad.vmap(h)(starts), want)


def test_plain_results_are_new_arrays_as_numpys():
    """repeat(x, 1), tile(x, 1) and roll(x, 0) returned views of x (writing the result wrote
    x); broadcast_to(x, x.shape) returned x itself, writable, where NumPy's is a read-only
    view. insert and delete with an empty list of indices raised IndexError."""
    x = np.array([1.0, 2.0, 3.0])
    for out in (fnp.repeat(x, 1), fnp.tile(x, 1), fnp.roll(x, 0), fnp.roll(x, 3)):
        assert not np.shares_memory(out, x)
    assert not fnp.broadcast_to(x, x.shape).flags.writeable
    np.testing.assert_array_equal(fnp.insert(x, [], []), np.insert(x, [], []))
    np.testing.assert_array_equal(fnp.delete(x, []), np.delete(x, []))
    g = fgrad.grad(lambda x: fnp.sum(fnp.delete(fnp.insert(x, [], []), []) ** 2))(x)
    np.testing.assert_array_equal(g, 2 * x)


def test_average_and_order_statistics_of_integers_have_numpys_dtype():
    """average of int8 data with float32 weights was float32 (NumPy: float64 at least for
    integer data); quantiles of integers by the methods that pick an element were float64
    (NumPy keeps the integers)."""
    a = np.array([1, 5, 3, 9], np.int8)
    for w in (np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([1, 2, 3, 4])):
        want, got = (
            np.average(a, weights=w, returned=True),
            fnp.average(a, weights=w, returned=True),
        )
        assert repr(got) == repr(want)
    for method in ("lower", "higher", "nearest", "inverted_cdf", "closest_observation", "linear"):
        for q in (0.3, np.array([0.2, 0.9])):
            want, got = np.quantile(a, q, method=method), fnp.quantile(a, q, method=method)
            assert repr(got) == repr(want), method


@pytest.mark.parametrize("name", ["subtract", "add", "multiply", "maximum", "hypot", "logaddexp"])
def test_ufunc_methods_on_traced_values(name):
    """np.<ufunc>.outer / .reduce / .accumulate of a traced value raised ('fgrad supports only
    calling ufuncs'), and the mirrors had no such methods: NumPy's values now, differentiable."""
    from fgrad.test_util import check_grads

    theirs = getattr(np, name)
    x = np.array([[0.3, 1.5, -0.7], [0.9, -0.2, 0.4]])
    y = np.array([2.0, 0.5])
    calls = [
        (lambda x: theirs.outer(x, y), lambda x: theirs.outer(x, y)),
        (lambda x: theirs.reduce(x, axis=1), lambda x: theirs.reduce(x, axis=1)),
        (lambda x: theirs.accumulate(x, axis=0), lambda x: theirs.accumulate(x, axis=0)),
    ]
    for traced, plain in calls:
        np.testing.assert_allclose(fgrad.jit(traced)(x), plain(x), rtol=1e-14)
        check_grads(traced, (x,), order=2)
        want = np.stack([traced(r) for r in x]) if traced is calls[0][0] else None
        if want is not None:
            np.testing.assert_allclose(fgrad.vmap(traced)(x), want, rtol=1e-14)
    mirror = getattr(fnp, name)
    if hasattr(mirror, "outer"):  # (add, multiply and subtract are bare primitives: no methods)
        np.testing.assert_allclose(mirror.reduce(x, axis=1), theirs.reduce(x, axis=1), rtol=1e-14)
        g = fgrad.grad(lambda x: fnp.sum(mirror.accumulate(x, axis=1)))(x)
        np.testing.assert_allclose(
            g, fgrad.jacfwd(lambda x: fnp.sum(theirs.accumulate(x, axis=1)))(x)
        )
    with pytest.raises(TypeError, match=r"\.at writes into its first argument in place"):
        fgrad.grad(lambda x: theirs.at(x, [0], 1.0))(x)


@pytest.mark.parametrize(
    "name, x, kwargs",
    [
        ("add", np.array(0.3), {}),
        ("subtract", np.array(0.3), {}),
        ("maximum", np.array(0.3), {"keepdims": True}),
        ("hypot", np.array(0.3), {"axis": None}),
        ("subtract", np.array(0.3), {"axis": -1, "initial": 1.0}),
        ("subtract", np.array([3.0, 1.0, 0.5]), {"axis": None}),
        ("subtract", np.array([3.0, 1.0, 0.5]), {"axis": None, "keepdims": True}),
        ("subtract", np.array([[3.0, 1.0], [0.5, 2.0]]), {"axis": (1,)}),
        ("subtract", np.array([[3.0, 1.0], [0.5, 2.0]]), {"axis": ()}),
        ("hypot", np.array([[3.0, 1.0], [0.5, 2.0]]), {"axis": None}),
        ("hypot", np.array([[3.0, 1.0], [0.5, 2.0]]), {"axis": (1, 0), "keepdims": True}),
    ],
)
def test_ufunc_reduce_of_a_0d_value_and_over_axes_numpy_allows_is_numpys(name, x, kwargs):
    """reduce of a 0-d traced value raised (axis 0 out of bounds; subtract: ZeroDivisionError,
    an axis modulo 0), and subtract.reduce(axis=None) of a 1-D value, hypot.reduce over
    several axes were refused; NumPy gives the value itself (with `initial` folded in) and
    folds as one axis."""
    theirs = getattr(np, name)

    def f(z):
        return theirs.reduce(z, **kwargs)

    want = f(x)
    for got in (fgrad.jit(f)(x), fgrad.jit(f)(x), fgrad.jvp(f, (x,), (np.ones_like(x),))[0]):
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fgrad.vmap(f)(np.stack([x, 2 * x])), [want, f(2 * x)])
    from fgrad.test_util import check_grads

    check_grads(f, (x,), order=2)


_TWO_INPUT_UFUNCS = sorted(
    {
        u
        for u in vars(np).values()
        if isinstance(u, np.ufunc) and u.nin == 2 and u.nout == 1 and u.signature is None
    },
    key=lambda u: u.__name__,
)


def _same_as_numpys(got, want):
    want_, got_ = np.asarray(want), np.asarray(got)
    return (
        type(got) is type(want)
        and got_.shape == want_.shape
        and got_.dtype == want_.dtype
        and np.array_equal(got_, want_, equal_nan=True)
        and (want_.dtype.kind != "f" or np.array_equal(np.signbit(got_), np.signbit(want_)))
    )


@pytest.mark.parametrize("theirs", _TWO_INPUT_UFUNCS, ids=lambda u: u.__name__)
def test_ufunc_reduce_of_one_element_is_numpys_for_every_ufunc(theirs):
    """NumPy folds a ufunc's identity in: hypot.reduce(-3.0) is hypot(0, -3) = 3,
    add.reduce(-0.0) is 0.0, logical_xor.reduce(-3.0) is True, and it computes in the loop's
    dtype (dtype=float32 gives float32). A 0-d value or axis=() gave the value itself, x for
    |x|, with dtype= ignored; 1-element axes of hypot, logaddexp, logical_xor gave x too."""
    inputs = [
        np.array(-3.0),
        np.array(-0.0),
        np.array(np.nan),
        np.array(-3),
        np.array([-2.5]),
        np.array([-3.0, 4.0]),
        np.array([[-0.0], [2.0]]),
        np.array([-0.0, 2.5], np.float32),
        np.array([True, False]),
        np.zeros((2, 0)),
    ]
    calls = [{}, {"axis": ()}, {"axis": -1}, {"axis": 0, "keepdims": True}, {"dtype": np.float32}]
    calls += [{"axis": (), "dtype": np.int64}, {"initial": 2.0}, {"axis": (), "initial": 2.0}]
    for x, kwargs in itertools.product(inputs, calls):
        if theirs in (np.power, np.arctan2) and "initial" in kwargs and np.size(x) > 1:
            continue  # NumPy 2.4 drops the first element (power.reduce([3, 2], initial=2): 4)
        if theirs is np.ldexp and x.dtype.kind in "bi":
            continue  # NumPy reduces ints with ldexp in float16/float64, which fgrad refuses

        def f(z, kwargs=kwargs):
            return theirs.reduce(z, **kwargs)

        try:
            want = f(x)
        except (TypeError, ValueError):
            with pytest.raises((TypeError, ValueError)):
                fgrad.jit(f)(x)
            continue
        got = fgrad.jit(f)(x)
        assert _same_as_numpys(got, want), (theirs.__name__, x, kwargs, got, want)


def test_hypot_and_logaddexp_reduce_of_one_element_differentiate_numpys_value():
    # hypot.reduce(x) of one element is |x|: derivative sign(x) (it was x's, 1)
    assert fgrad.grad(lambda z: np.hypot.reduce(z))(-3.0) == -1.0
    np.testing.assert_array_equal(
        fgrad.grad(lambda z: fnp.sum(np.hypot.reduce(z, axis=())))(np.array([-3.0, 4.0])),
        [-1.0, 1.0],
    )
    np.testing.assert_array_equal(
        fgrad.grad(lambda z: np.logaddexp.reduce(z))(np.array([-3.0])), [1.0]
    )


def test_ufunc_reduce_refuses_what_numpy_refuses():
    m = np.ones((2, 2))
    with pytest.raises(ValueError, match="'subtract' is not reorderable"):
        fgrad.jit(lambda z: np.subtract.reduce(z, axis=None))(m)
    with pytest.raises(np.exceptions.AxisError, match="axis 1 is out of bounds"):
        fgrad.jit(lambda z: np.add.reduce(z[0, 0], axis=1))(m)
    with pytest.raises(TypeError, match="cannot accumulate on a scalar"):
        fgrad.jit(lambda z: np.add.accumulate(z[0, 0]))(m)


def test_var_and_std_take_numpys_mean_none():
    """mean=None (NumPy's explicit 'compute it') raised TypeError (float - None)."""
    x = np.random.default_rng(0).normal(size=(2, 3))
    for name in ("var", "std"):
        np.testing.assert_array_equal(
            getattr(fnp, name)(x, axis=1, mean=None), getattr(np, name)(x, axis=1, mean=None)
        )


# --- axis validation: NumPy's errors, never another axis ------------------------------------------

_REDUCTIONS_BY_AXIS = [
    "sum", "prod", "max", "min", "amax", "amin", "ptp", "mean", "var", "std",
    "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
    "median", "nanmedian", "average",
]  # fmt: skip


def _ran(f):
    try:
        return f()
    except Exception as e:  # the exception is the result compared
        return e


@pytest.mark.parametrize("name", _REDUCTIONS_BY_AXIS)
@pytest.mark.parametrize("axis", [(0, 0), (1, -1), (0, -2), 1.5, np.float64(1.0), True, 2, -3])
def test_an_axis_numpy_refuses_is_refused_plain_and_traced(name, axis):
    """A repeated axis ((0, 0), (1, -1)), a float (1.5 read as 1) or a bool (True read as 1)
    reduced some axis, silently, where NumPy raises: now NumPy's exception type, plain and
    under grad, jit and vmap, with a message naming axis= and the array's shape. (A bool:
    NumPy's median and average take True as 1; fgrad refuses it in every reduction.)"""
    x = np.arange(1.0, 7.0).reshape(2, 3)
    ours = getattr(fnp, name)
    want = _ran(lambda: getattr(np, name)(x, axis=axis))
    kind = type(want) if isinstance(want, Exception) else TypeError  # (median's bool)
    for run in (
        lambda: ours(x, axis=axis),
        lambda: grad(lambda z: fnp.sum(ours(z, axis=axis)))(x),
        lambda: fgrad.jit(lambda z: ours(z, axis=axis))(x),
        lambda: fgrad.vmap(lambda z: ours(z, axis=axis))(x[None]),
    ):
        with pytest.raises(kind, match=r"axis|\(2, 3\)"):
            run()


def test_axis_errors_name_the_axis_and_the_shape():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match=r"axis=\(1, -1\) names an axis twice.*shape \(2, 3\)"):
        fnp.var(x, axis=(1, -1))
    with pytest.raises(TypeError, match=r"axis=1.5: 1.5 \(float\) is not an integer"):
        fnp.max(x, axis=1.5)
    with pytest.raises(TypeError, match="axis=True: True is a bool"):
        fnp.sum(x, axis=True)
    with pytest.raises(np.exceptions.AxisError, match=r"axis 2 is out of bounds.*shape \(2, 3\)"):
        fnp.sum(x, axis=(0, 2))
    # linalg.vector_norm reads its axes through the same helper (NumPy: "repeated axis")
    for axis in ((0, 0), (1, -1), (0, -2)):
        with pytest.raises(ValueError, match="names an axis twice"):
            fnp.linalg.vector_norm(x, axis=axis)
    # an integer NumPy takes stays taken: np.int64, a 0-d integer array, a traced int (jit)
    for axis in (np.int64(1), np.array(1), (np.int64(0), -1)):
        np.testing.assert_array_equal(fnp.sum(x, axis=axis), np.sum(x, axis=axis))
    summed = fgrad.jit(lambda z, ax: fnp.sum(z, axis=ax))
    np.testing.assert_array_equal(summed(x, 1), np.sum(x, axis=1))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_a_scan_refuses_an_axis_numpy_refuses(name):
    """cumsum(axis=1.5) or (axis=True) scanned axis 1, and a 0-d value took any axis (axis=5
    of np.array(2.5) gave [2.5]): NumPy raises TypeError or AxisError."""
    for x in (np.ones((2, 3)), np.array(2.5)):
        for axis in (1.5, True, (0,), 5, -3):
            want = _ran(lambda: getattr(np, name)(x, axis=axis))
            assert isinstance(want, Exception)
            with pytest.raises(type(want)):
                getattr(fnp, name)(x, axis=axis)
            with pytest.raises(type(want)):
                grad(lambda z: fnp.sum(getattr(fnp, name)(z, axis=axis)))(x)
    np.testing.assert_array_equal(getattr(fnp, name)(np.array(2.5), axis=-1), [2.5])


_UFUNC_LIKE = [
    "sum", "prod", "max", "min", "amax", "amin", "ptp",
    "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
]  # fmt: skip


@pytest.mark.parametrize("name", _UFUNC_LIKE + ["mean", "var", "std", "median", "nanmedian"])
@pytest.mark.parametrize("z", [np.array(2.5), np.array(2), np.array(np.nan)])
def test_a_0d_value_over_axis_0_or_minus_1_is_numpys(name, z):
    """NumPy's ufunc reductions (and nanmean, nanvar, nanstd of floats) read axis 0 or -1 of
    a 0-d value as no axis: np.sum(np.array(2.5), axis=0) is 2.5; fgrad raised AxisError.
    mean, var, std, median (and nanmean/nanvar of an integer) raise in NumPy: they still do.
    The derivative is the one with no axis (ptp, nanvar: 0; the others 1)."""
    ours, theirs = getattr(fnp, name), getattr(np, name)
    for axis in (0, -1, np.int64(0)):
        for keepdims in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = _ran(lambda: theirs(z, axis=axis, keepdims=keepdims))
                got = _ran(lambda: ours(z, axis=axis, keepdims=keepdims))
            if isinstance(want, Exception):
                assert isinstance(got, np.exceptions.AxisError), got
                continue
            assert type(got) is type(want) and np.shape(got) == np.shape(want)
            np.testing.assert_array_equal(got, want)
    if z.dtype.kind != "f" or np.isnan(z) or name in ("mean", "var", "std", "median", "nanmedian"):
        return

    def f(t):
        return ours(t, axis=0)

    free = grad(lambda t: ours(t))(z)  # the derivative with no axis given
    for d in (grad(f)(z), jacfwd(f)(z), fgrad.jit(grad(f))(z), fgrad.jvp(f, (z,), (1.0,))[1]):
        np.testing.assert_array_equal(d, free)
    np.testing.assert_array_equal(fgrad.vmap(f)(np.array([1.0, 2.0])), theirs([1.0, 2.0], axis=()))


def test_reduction_keyword_errors_name_the_argument_and_say_what_to_do():
    """Under grad these came through as NumPy's bare messages ("zero-size array to reduction
    operation maximum which has no identity", "setting an array element with a sequence",
    "operands could not be broadcast together ..."), naming neither the argument nor a fix.
    The exception types stay NumPy's (ValueError)."""
    x = np.arange(6.0).reshape(2, 3)

    def under_grad(f, z=x):
        return grad(lambda t: fnp.sum(f(t)))(z)

    cases = [
        (lambda t: fnp.max(t, axis=0), np.zeros((0, 3)), r"max of a with shape \(0, 3\).*initial="),
        (
            lambda t: fnp.nanmin(t, axis=1),
            np.zeros((2, 0)),
            r"min of a with shape \(2, 0\).*initial=",
        ),
        (
            lambda t: fnp.max(t, axis=0, initial=np.ones(3)),
            x,
            r"initial= must be one number.*\(3,\)",
        ),
        (
            lambda t: fnp.sum(t, where=np.array([True, False])),
            x,
            r"where= has shape \(2,\).*\(2, 3\)",
        ),
        (lambda t: fnp.mean(t, where=np.ones((3, 1), bool)), x, r"where= has shape \(3, 1\)"),
        (lambda t: fnp.var(t, axis=1, mean=np.ones(2)), x, r"mean= has shape \(2,\).*\(2, 1\)"),
        (lambda t: fnp.nanvar(t, axis=1, mean=np.ones(2)), x, r"mean= has shape \(2,\).*\(2, 1\)"),
    ]
    for f, z, message in cases:
        with pytest.raises(ValueError, match=message):
            f(z)
        with pytest.raises(ValueError, match=message):
            under_grad(f, z)
    # what NumPy takes is still taken: an empty axis with initial=, a 0-d initial, a mask
    # that broadcasts, a mean with the axes kept
    np.testing.assert_array_equal(
        fnp.max(np.zeros((0, 3)), axis=0, initial=-1.0), np.max(np.zeros((0, 3)), 0, initial=-1.0)
    )
    np.testing.assert_array_equal(fnp.max(np.zeros((0, 3)), axis=1), np.zeros(0))
    assert fnp.max(x, initial=np.array(9.0)) == 9.0
    np.testing.assert_array_equal(
        fnp.sum(x, where=np.array([True, False, True])), np.sum(x, where=[True, False, True])
    )
    m = np.ones((2, 1))
    np.testing.assert_array_equal(fnp.var(x, axis=1, mean=m), np.var(x, axis=1, mean=m))


def test_numpys_histogram_with_a_traced_range_is_refused_naming_range_and_fgrads_histogram():
    """np.histogram(x, range=traced) of a plain x dispatches on x, bins and weights only:
    NumPy's body ran on the traced range and failed under jit, vmap and jacfwd with errors
    about np.subtract's dtype= and item assignment, which the user never wrote. The refusal
    names histogram's `range` and fgrad.numpy.histogram, which gives NumPy's values and the
    derivative (checked against NumPy and central differences)."""
    x = np.array([0.3, -1.2, 2.5, 0.7])
    calls = {
        "histogram": lambda h, r: h(x, bins=3, range=(r - 2, r + 2)),
        "histogram2d": lambda h, r: h(x, x, bins=2, range=[[r - 2, r + 2], [-2.0, 3.0]]),
    }
    for name, call in calls.items():
        f = lambda r: call(getattr(np, name), r)[1]
        refusal = rf"np\.{name} .*`range` is traced.*Use fgrad\.numpy\.{name},"
        for transform, r in [
            (fgrad.jit, 0.8),
            (fgrad.vmap, np.array([0.8, 1.1])),
        ] + [(fgrad.jacfwd, 0.8)] * (name == "histogram"):  # (histogram2d's jacfwd runs)
            with pytest.raises(TypeError, match=refusal):
                transform(f)(r)
        ours = lambda r: call(getattr(fnp, name), r)[1]
        for r in (0.8, 1.1):
            _same_value(fgrad.jit(ours)(r), f(r))
        h = 1e-6
        np.testing.assert_allclose(fgrad.jacfwd(ours)(0.8), (f(0.8 + h) - f(0.8 - h)) / (2 * h))
        if name == "histogram2d":
            np.testing.assert_array_equal(fgrad.jacfwd(f)(0.8), fgrad.jacfwd(ours)(0.8))


def test_numpys_functions_that_do_not_dispatch_name_fgrads_mirror_when_refused():
    """np.kaiser, np.full, np.ascontiguousarray and np.asarray_chkfinite do not dispatch:
    under grad the refusal said they were functions 'that fgrad.numpy does not mirror' and
    gave np.stack/.at[] advice; it names the function and fgrad.numpy's, whose gradient is
    checked against central differences. np.from_dlpack(traced) raised "'Box' object has no
    attribute '__dlpack__'"."""
    x, b = np.array([0.3, -1.2, 2.5, 0.7]), 2.5
    cases = {
        "kaiser": lambda m, b: m.kaiser(5, b),
        "full": lambda m, b: m.full(3, b),
        "ascontiguousarray": lambda m, b: m.ascontiguousarray(b * x),
        "asarray_chkfinite": lambda m, b: m.asarray_chkfinite(b * x),
    }
    for name, call in cases.items():
        with pytest.raises(TypeError, match=rf"NumPy's np\.{name} .*Use fgrad\.numpy\.{name},"):
            grad(lambda b: fnp.sum(call(np, b)))(b)
        h = 1e-6
        fd = (np.sum(call(np, b + h)) - np.sum(call(np, b - h))) / (2 * h)
        np.testing.assert_allclose(grad(lambda b: fnp.sum(call(fnp, b)))(b), fd, rtol=1e-7)
    with pytest.raises(AttributeError, match=r"__dlpack__ .*numpy.from_dlpack on a plain array"):
        grad(lambda v: fnp.sum(np.from_dlpack(v)))(x)


def test_matmul_of_operands_that_do_not_fit_names_both_shapes_and_dtypes_under_every_transform():
    """`a @ b` and `fnp.matmul` passed NumPy's gufunc text through ("Input operand 1 has a
    mismatch in its core dimension 0, ..."), with no shape, dtype or advice; NumPy refuses
    the same operands, and fgrad's error names both (under vmap, one row's)."""
    a, b = np.ones((3, 4)), np.ones((5, 2), np.float32)
    with pytest.raises(ValueError):
        np.matmul(a, b)
    fit = (
        r"x1 \(the left operand: shape \(3, 4\) and dtype float64\) and x2 "
        r"\(the right: shape \(5, 2\) and dtype float32\) do not "
        r"fit.*4.*5.*transpose or reshape"
    )
    for call in (
        lambda: fnp.matmul(a, b),
        lambda: grad(lambda x: fnp.sum(x @ b))(a),
        lambda: grad(lambda x: fnp.sum(fnp.matmul(x, b)))(a),
        lambda: grad(lambda y: fnp.sum(a @ y))(b.astype(float)),  # ndarray @ traced value
        lambda: fgrad.jit(lambda x: x @ b)(a),
        lambda: fgrad.vmap(lambda x: x @ b)(np.ones((2, 3, 4))),
        lambda: fgrad.vmap(lambda x, y: x @ y)(np.ones((2, 3, 4)), np.ones((2, 5, 2), np.float32)),
    ):
        with pytest.raises(ValueError, match=fit.replace("float32", "float(32|64)")):
            call()
    with pytest.raises(
        ValueError, match=r"leading \(stacked\) axes \(2,\) and \(5,\) do not broadcast"
    ):
        grad(lambda x: fnp.sum(x @ np.ones((5, 4, 2))))(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"shape \(\) and dtype float64.*at least one axis.*\*"):
        grad(lambda x: fnp.sum(fnp.matmul(x, np.ones(3))))(2.0)
    np.testing.assert_array_equal(fnp.matmul(a, a.T), np.matmul(a, a.T))  # fitting ones work
