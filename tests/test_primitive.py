"""User-registered primitives: fprop -> (ans, bprop), rules in fgrad ops, jvp by transposition."""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import grad, hessian, jacfwd, jacrev, jvp
from fgrad.test_util import check_grads


@fgrad.primitive
def logsumexp(x):
    m = fnp.max(x)
    ans = m + fnp.log(fnp.sum(fnp.exp(x - m)))
    return ans, lambda ct: (ct * fnp.exp(x - ans),)


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_user_primitive_value_and_gradient():
    x = np.array([0.5, -1.0, 2.0])
    assert logsumexp(x) == pytest.approx(np.log(np.exp(x).sum()))
    np.testing.assert_allclose(grad(logsumexp)(x), _softmax(x))
    big = np.array([0.0, 1000.0])  # the stable rule: no overflow to nan
    np.testing.assert_allclose(grad(logsumexp)(big), [0.0, 1.0])


def test_forward_mode_of_an_fprop_only_primitive_transposes_its_bprop():
    x, t = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, -0.5])
    _, tangent = jvp(logsumexp, (x,), (t,))
    assert tangent == pytest.approx(_softmax(x) @ t)
    np.testing.assert_allclose(jacfwd(logsumexp)(x), jacrev(logsumexp)(x), atol=1e-14)
    s = _softmax(x)
    np.testing.assert_allclose(hessian(logsumexp)(x), np.diag(s) - np.outer(s, s), atol=1e-12)
    check_grads(logsumexp, (x,), order=2)


def test_user_primitive_with_two_inputs_keywords_and_a_native_jvp():
    def jvp_rule(tangents, ans, x, y, power):
        tx, ty = tangents
        out = 0.0
        if tx is not None:
            out = out + tx * power * x ** (power - 1) * y
        if ty is not None:
            out = out + ty * x**power
        return out

    @fgrad.primitive(jvp=jvp_rule)
    def scaled_power(x, y, power):
        ans = x**power * y
        return ans, lambda ct: (ct * power * x ** (power - 1) * y, ct * x**power)

    assert scaled_power.__name__ == "scaled_power"
    assert grad(scaled_power, argnums=(0, 1))(2.0, 3.0, power=3) == (36.0, 8.0)
    assert jvp(lambda x: scaled_power(x, 3.0, power=3), (2.0,), (1.0,))[1] == 36.0
    check_grads(lambda x, y: scaled_power(x, y, power=3), (1.3, 0.7), order=2)
    with pytest.raises(TypeError, match="keyword argument 'power' is a traced value"):
        grad(lambda p: scaled_power(2.0, 3.0, power=p))(2.0)


def test_bprop_may_return_none_for_an_input_with_no_gradient():
    @fgrad.primitive
    def scale_by(x, factor):
        return x * factor, lambda ct: (ct * factor, None)

    assert grad(scale_by, argnums=(0, 1))(2.0, 3.0) == (3.0, 0.0)
    assert jvp(lambda f: scale_by(2.0, f), (3.0,), (1.0,))[1] == 0.0


def test_what_a_users_rules_return_is_checked():
    """A bprop that forgot to sum a broadcast back gave a gradient of shape (3,) for a scalar;
    too few cotangents gave a silent zero, too many were dropped, a str was returned as the
    gradient; a jvp returning a tuple made the tangent one; a batching rule that dropped
    rows passed on a result of one row."""
    import fgrad

    cases = [
        (
            lambda x, y: (x * y, lambda ct: (ct * y, ct * x)),
            "shape \\(3,\\) as the cotangent of input 1",
        ),
        (lambda x, y: (x * y, lambda ct: (ct * y,)), "1 cotangent\\(s\\) for 2"),
        (
            lambda x, y: (x * y, lambda ct: (ct * y, fnp.sum(ct * x), ct)),
            "3 cotangent\\(s\\) for 2",
        ),
        (lambda x, y: (x * y, lambda ct: ("oops", None)), "a str as the cotangent of input 0"),
        (lambda x, y: (x * y, lambda ct: ct), "must return a tuple"),
        (lambda x, y: x * y, "must return \\(ans, bprop\\)"),
    ]
    for fprop, message in cases:
        op = fgrad.primitive(fprop, name="op")
        with pytest.raises((ValueError, TypeError), match=message):
            fgrad.grad(lambda y: fnp.sum(op(np.arange(3.0), y)), argnums=0)(2.0)
    good = fgrad.primitive(lambda x, y: (x * y, lambda ct: (ct * y, fnp.sum(ct * x))), name="good")
    assert fgrad.grad(lambda y: fnp.sum(good(np.arange(3.0), y)))(2.0) == 3.0
    tangent_tuple = fgrad.primitive(
        lambda x: (x * 2, lambda ct: (ct * 2,)), jvp=lambda t, ans, x: (t[0] * 2,), name="tj"
    )
    with pytest.raises(ValueError, match="jvp returned a tuple as the tangent of output 0"):
        fgrad.jvp(tangent_tuple, (np.ones(2),), (np.ones(2),))

    def drops_rows(args, dims):
        return fnp.sin(args[0])[:1], dims[0]

    s = fgrad.primitive(lambda x: (fnp.sin(x), lambda ct: (ct * fnp.cos(x),)), batch=drops_rows)
    with pytest.raises(ValueError, match="batching rule returned output 0 with shape \\(1,\\)"):
        fgrad.vmap(s)(np.array([0.1, 0.2, 0.3]))


def _closing_over(a):
    """sin(y) * a as a primitive of y whose fprop reads `a` from its closure (probe BW)."""

    @fgrad.primitive
    def scaled_sin(y):
        return fnp.sin(y) * a, lambda ct: (ct * fnp.cos(y) * a,)

    return scaled_sin


def test_an_fprop_closing_over_a_value_the_same_transform_differentiates_is_refused():
    """d/dt [sin(2t) t] is sin(2t) + 2t cos(2t) = 1.2747 at 0.4; grad gave 0.5574 (the
    derivative through the closed-over t dropped), jvp, derivative and jet the same, and the
    Hessian of sin(v1) v0 was not even symmetric. custom_vjp refuses this program: so now does
    a primitive, naming the value, under every transform that applies its rule."""
    t = 0.4

    def f(t):
        return _closing_over(t)(2.0 * t)

    def h(v):
        return _closing_over(v[0])(v[1])

    message = "fprop reads 'a' .*differentiated by the transform.*explicit argument"
    for run in (
        lambda: grad(f)(t),
        lambda: jvp(f, (t,), (1.0,)),
        lambda: fgrad.derivative(f, 2)(t),
        lambda: fgrad.jet(f, (t,), ((1.0, 0.0),)),
        lambda: hessian(h)(np.array([0.4, 0.7])),
        lambda: jacrev(h)(np.array([0.4, 0.7])),
        lambda: grad(lambda s: grad(f)(s))(t),
    ):
        with pytest.raises(TypeError, match=message):
            run()
    # what it is still right for: a value of an outer transform (its operations in the fprop
    # are differentiated by that transform), or a primitive applied to constants only (it runs
    # as itself, its operations differentiated)
    x = 0.3
    assert grad(lambda a: grad(_closing_over(a))(x))(0.5) == pytest.approx(np.cos(x), abs=1e-15)
    assert jacfwd(lambda a: grad(_closing_over(a))(x))(0.5) == pytest.approx(np.cos(x), abs=1e-15)
    assert grad(lambda a: _closing_over(a)(x))(0.5) == pytest.approx(np.sin(x), abs=1e-15)
    assert grad(lambda y: _closing_over(0.5)(y))(x) == pytest.approx(0.5 * np.cos(x), abs=1e-15)


def test_vmap_of_an_fprop_closing_over_a_value_the_same_vmap_batches_is_refused():
    """With the argument batched too, each row's result was batched over every row of the
    closed-over value: shape (2, 2, 2) where the loop gives (2, 2). Refused, naming the value;
    with only the closed-over value batched, or batched by an outer vmap, it stays the loop."""
    A = np.array([0.5, 1.7])
    X = np.array([[0.3, 0.9], [0.1, 0.2]])
    with pytest.raises(TypeError, match="fprop reads 'a' .*batched by the vmap"):
        fgrad.vmap(lambda a, x: _closing_over(a)(x))(A, X)
    only_a = fgrad.vmap(lambda a, x: _closing_over(a)(x), in_axes=(0, None))(A, X[0])
    np.testing.assert_allclose(only_a, np.stack([np.sin(X[0]) * a for a in A]), rtol=1e-15)
    outer = fgrad.vmap(lambda a: fgrad.vmap(_closing_over(a))(X))(A)
    np.testing.assert_allclose(outer, np.stack([np.sin(X) * a for a in A]), rtol=1e-15)
    with pytest.raises(TypeError, match="fprop reads 'a' .*batched by the vmap"):
        # the outer vmap applies it to the rows of the inner one's: the same pairing inside
        fgrad.vmap(lambda a, x: fgrad.vmap(_closing_over(a))(x))(A, X)
    rows = fgrad.vmap(grad(lambda a, x: fnp.sum(_closing_over(a)(x)), argnums=1))(A, X)
    np.testing.assert_allclose(rows, np.stack([np.cos(x) * a for a, x in zip(A, X)]), rtol=1e-15)


def test_a_bprop_cotangent_of_another_dtype_is_cast_to_its_inputs():
    """A complex cotangent for a real input came back as the gradient (complex128 from grad,
    jacrev and hessian of a float64 function), an int64 one as int64: cast to the input's
    dtype now, as custom_vjp casts bwd's (the real part of a complex one)."""
    x = np.array([0.1, 0.4])

    @fgrad.primitive
    def q(x):
        return fnp.sin(x), lambda ct: (fnp.astype(ct * fnp.cos(x), np.complex128),)

    @fgrad.primitive
    def u(x):
        return x * 2.0, lambda ct: (fnp.astype(ct * 2.0, np.int64),)

    with pytest.warns(np.exceptions.ComplexWarning):
        g = grad(lambda x: fnp.sum(q(2.0 * x)))(x)
        jr = jacrev(q)(x)
        hs = hessian(lambda x: fnp.sum(q(x)))(x)
        g32 = grad(lambda x: fnp.sum(q(x)))(x.astype(np.float32))
    assert g32.dtype == np.float32
    assert g.dtype == jr.dtype == hs.dtype == np.float64
    np.testing.assert_allclose(g, 2.0 * np.cos(2.0 * x), rtol=1e-15)
    np.testing.assert_allclose(jr, np.diag(np.cos(x)), rtol=1e-15)
    np.testing.assert_allclose(hs, np.diag(-np.sin(x)), rtol=1e-15)
    gu = grad(lambda x: fnp.sum(u(x)))(np.array([0.5, 1.5]))
    assert gu.dtype == np.float64
    np.testing.assert_array_equal(gu, [2.0, 2.0])


def test_an_fprop_returning_a_python_number_has_its_forward_derivative():
    """sum(x^2) returned as a Python float: grad was right, but jvp, jacfwd (also under jit),
    linearize and derivative gave 0 (a float has no dtype, so transposing the bprop gave it no
    tangent). The value is now the NumPy scalar NumPy makes of it (probeCS #1)."""
    x, t = np.array([0.5, 0.6]), np.array([1.0, -2.0])

    @fgrad.primitive
    def sumsq(x):  # a first-order rule in plain NumPy, as the docstring allows
        return float(np.sum(x**2)), lambda ct: (2 * ct * x,)

    assert type(sumsq(x)) is np.float64 and sumsq(x) == np.sum(x**2)
    assert jvp(sumsq, (x,), (t,))[1] == pytest.approx(2 * x @ t, rel=1e-15)
    np.testing.assert_allclose(jacfwd(sumsq)(x), 2 * x, rtol=1e-15)
    np.testing.assert_allclose(fgrad.jit(jacfwd(sumsq))(x), 2 * x, rtol=1e-15)
    assert fgrad.linearize(sumsq, x)[1](t) == pytest.approx(2 * x @ t, rel=1e-15)
    d = fgrad.derivative(lambda s: sumsq(x * s), 1)(1.0)
    assert d == pytest.approx(2 * np.sum(x**2), rel=1e-15)
    np.testing.assert_allclose(grad(sumsq)(x), 2 * x, rtol=1e-15)


def test_a_python_number_returned_by_a_rule_keeps_the_inputs_precision():
    """A Taylor rule returning `float(...)` for a float32 input made `jet`'s value and
    coefficients float64, where the primitive's own value is float32; an fprop returning one
    made float64 of a float32 input. The number takes the dtype NumPy gives it beside the
    inputs (float32 here; float64 beside float64 inputs or none)."""

    def taylor(primals, series):
        (x,), ((t1, t2),) = primals, series
        second = -np.sin(x) * t1 * t1 / 2 + (0.0 if t2 is None else np.cos(x) * t2)
        return float(np.sin(x)), [float(np.cos(x) * t1), float(second)]

    mysin = fgrad.primitive(lambda x: (np.sin(x), lambda ct: (ct * fnp.cos(x),)), taylor=taylor)
    x = np.float32(0.5)
    y, (c1, c2) = fgrad.jet(mysin, (x,), ((np.float32(1), np.float32(0)),))
    assert type(y) is np.float32 and y == np.sin(x)
    assert np.asarray(c1).dtype == np.asarray(c2).dtype == np.float32
    assert c1 == np.float32(np.cos(0.5)) and c2 == np.float32(-np.sin(0.5))  # (jet: unscaled)
    assert fgrad.derivative(mysin, 2)(x).dtype == np.float32

    total = fgrad.primitive(lambda x: (float(np.sum(x)), lambda ct: (ct * fnp.ones_like(x),)))
    assert type(total(np.ones(2, np.float32))) is np.float32
    assert type(total(np.ones(2))) is np.float64 and type(total(1.5)) is np.float64
    # a count or a flag stays NumPy's int64 or bool (they became floats, and overflowed)
    count = fgrad.primitive(lambda x: (int(np.sum(x)), lambda ct: (None,)))
    flag = fgrad.primitive(lambda x: (bool(np.all(x > 0)), lambda ct: (None,)))
    assert (
        type(count(np.full(300, 1, np.uint8))) is np.int64 and count(np.ones(300, np.uint8)) == 300
    )
    assert type(count(np.ones(3, np.float32))) is np.int64 and type(flag(x)) is np.bool_
    f32 = np.ones(2, np.float32)
    assert jvp(total, (f32,), (f32,))[1].dtype == np.float32


def test_an_fprop_returning_a_list_or_dict_or_tuple_as_one_value_is_refused():
    """[sin x, cos x] as ans: jvp gave tangents [0, 0] (the right ones are [cos x, -sin x]);
    a dict gave 0 as well, an IndexError under grad and an object array under vmap."""
    returns = {
        "a list of length 2": lambda x: [fnp.sin(x), fnp.cos(x)],
        "a dict": lambda x: {"s": fnp.sin(x)},
        "a tuple of length 2": lambda x: (fnp.sin(x), fnp.cos(x)),
    }
    for what, value in returns.items():
        op = fgrad.primitive(lambda x, value=value: (value(x), lambda ct: (ct,)), name="op")
        message = f"op: its fprop returned {what} as ans; return an array.*multiple_results=True"
        for run in (
            lambda: op(0.5),
            lambda: jvp(op, (0.5,), (1.0,)),
            lambda: grad(lambda x: op(x)[0])(0.5),
            lambda: fgrad.vmap(op)(np.array([0.5, 0.6])),
            lambda: fgrad.jet(op, (0.5,), ((1.0,),)),
        ):
            with pytest.raises(TypeError, match=message):
                run()


def test_multiple_results_with_an_fprop_returning_one_array_is_refused():
    """multiple_results=True and one array returned: jvp read its rows as the outputs (a
    tangent cos .5 + cos .6 for "output 0", 0 for "output 1"), jacfwd of s(x)[1] gave 0 where
    sin gives [0, cos .6], grad failed inside the user's bprop (probeCS #2)."""
    x = np.array([0.5, 0.6])

    @fgrad.primitive(multiple_results=True)
    def s(x):
        return fnp.sin(x), lambda cts: (cts[0] * fnp.cos(x),)

    message = "s: with multiple_results=True its fprop must return a tuple of outputs.*ndarray"
    for run in (
        lambda: s(x),
        lambda: jvp(s, (x,), (np.ones(2),)),
        lambda: jacfwd(lambda x: s(x)[1])(x),
        lambda: grad(lambda x: s(x)[1])(x),
    ):
        with pytest.raises(TypeError, match=message):
            run()

    @fgrad.primitive(multiple_results=True)
    def sc(x):  # the same as a tuple, and with a Python float among the outputs
        return (fnp.sin(x), float(np.sum(x))), lambda cts: (cts[0] * fnp.cos(x) + cts[1],)

    t = np.array([1.0, -2.0])
    (_, total), (ts, tt) = jvp(sc, (x,), (t,))
    np.testing.assert_allclose(ts, np.cos(x) * t, rtol=1e-15)
    assert type(total) is np.float64 and tt == pytest.approx(np.sum(t), rel=1e-15)


def test_a_container_argument_holding_traced_values_is_refused():
    """A dict argument: bind found no box, so the fprop ran as plain code and its bprop was
    never applied: safe_norm's rule, 0 at 0, gave nan; a rule saying 100 gave cos(0.5)
    (probeCS #3). Refused, naming the argument; a dict of constants still runs."""

    @fgrad.primitive
    def scaled(d):
        return fnp.sin(d["a"]), lambda ct: ({"a": 100.0 * ct},)

    message = "scaled: argument 0 is a dict holding traced values.*positional arguments"
    for run in (
        lambda: grad(lambda a: scaled({"a": a}))(0.5),
        lambda: jvp(lambda a: scaled({"a": a}), (0.5,), (1.0,)),
        lambda: fgrad.jit(grad(lambda a: scaled({"a": a})))(0.5),
    ):
        with pytest.raises(TypeError, match=message):
            run()
    # vmap and jit take no derivative: the fprop's operations on the values inside are the
    # value (right, as eagerly, and recorded by jit)
    rows = np.array([0.5, 0.6])
    np.testing.assert_array_equal(fgrad.vmap(lambda a: scaled({"a": a}))(rows), np.sin(rows))
    jitted = fgrad.jit(lambda a: scaled({"a": a}))
    assert jitted(0.5) == np.sin(0.5) and jitted(0.7) == np.sin(0.7)
    with pytest.raises(TypeError, match="scaled: argument 0 is a list holding traced values"):
        grad(lambda a: scaled([{"a": a}]))(0.5)
    assert scaled({"a": 0.5}) == np.sin(0.5)
    assert grad(lambda b: scaled({"a": 0.5}) * b)(2.0) == np.sin(0.5)


def test_a_jvp_rules_tangent_of_another_dtype_is_cast_as_custom_jvps():
    """A complex tangent for a real output came back as the derivative (jacfwd complex128),
    an int64 one as int64: cast to the output's dtype now, as custom_jvp casts the same rule's
    (probeCS #4)."""
    x = np.array([1.3, 2.2])
    for dtype in (np.complex128, np.int64):
        rule = lambda t, ans, x, dtype=dtype: fnp.astype(2 * x * t[0], dtype)
        sq = fgrad.primitive(lambda x: (x * x, lambda ct: (2 * x * ct,)), jvp=rule, name="sq")
        cj = fgrad.custom_jvp(lambda x: x * x)
        cj.defjvp(lambda p, t, dtype=dtype: (p[0] * p[0], fnp.astype(2 * p[0] * t[0], dtype)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            ours, theirs = jacfwd(sq)(x), jacfwd(cj)(x)
            d = fgrad.derivative(sq, 1)(np.float32(3.0))
            series = fgrad.jet(sq, (3.0,), ((1.0, 0.0),))[1]
            their_series = fgrad.jet(cj, (3.0,), ((1.0, 0.0),))[1]
        assert ours.dtype == theirs.dtype == np.float64
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(
            ours, np.diag(np.trunc(2 * x)) if dtype is np.int64 else np.diag(2 * x)
        )
        assert d.dtype == np.float32 and d == 6.0
        assert [c.dtype for c in series] == [np.float64, np.float64]
        assert [float(c) for c in series] == [float(c) for c in their_series]
        assert series[0] == 6.0  # d/ds (3 + s)^2 at 0


def test_a_taylor_rules_coefficients_are_checked():
    """A Taylor rule giving coefficients of shape (3,) for a scalar: jet and derivative
    returned that shape; one coefficient where three were asked for: a bare IndexError
    (probeCS #5). Refused, naming the primitive, what was expected and what came back."""

    def fprop(x):
        return fnp.sin(x), lambda ct: (ct * fnp.cos(x),)

    def wide(primals, series):
        return fnp.sin(primals[0]), tuple(None if c is None else fnp.ones(3) * c for c in series[0])

    def short(primals, series):
        return fnp.sin(primals[0]), (fnp.cos(primals[0]) * series[0][0],)

    def right(primals, series):  # sin's normalized coefficients along a line x + x1 s
        (x,), ((x1, _),) = primals, series  # (the second coefficient of a line: 0, None)
        return fnp.sin(x), (fnp.cos(x) * x1, -fnp.sin(x) * x1 * x1 / 2)

    wide_op = fgrad.primitive(fprop, taylor=wide, name="wide")
    message = (
        "wide: its Taylor rule returned shape \\(3,\\) as coefficient 1 of its output, which "
        "has shape \\(\\)"
    )
    with pytest.raises(ValueError, match=message):
        fgrad.jet(wide_op, (0.5,), ((1.0, 0.0),))
    with pytest.raises(ValueError, match=message):
        fgrad.derivative(wide_op, 1)(0.5)
    short_op = fgrad.primitive(fprop, taylor=short, name="short")
    with pytest.raises(
        ValueError, match="short: .*a tuple of length 1 as the coefficients.*tuple of 3"
    ):
        fgrad.jet(short_op, (0.5,), ((1.0, 0.0, 0.0),))
    right_op = fgrad.primitive(fprop, taylor=right, name="right")
    assert fgrad.derivative(right_op, 2)(0.5) == pytest.approx(-np.sin(0.5), rel=1e-15)


def test_a_malformed_batching_rule_result_is_refused_naming_the_primitive():
    """An out_dim out of range gave a bare IndexError, the array alone an error about scalar
    indices (unpacking its rows), (out,) a bare unpacking error (probeCS #6)."""
    X = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    cases = {
        "returned the batch axis 5 for output 0, .*out of range.*shape \\(2, 3\\)": (
            lambda a, d: (fnp.sin(a[0]), 5)
        ),
        "must return \\(out, out_dim\\).*got an ndarray": lambda a, d: fnp.sin(a[0]),
        "must return \\(out, out_dim\\).*got a tuple of length 1": lambda a, d: (fnp.sin(a[0]),),
    }
    for message, rule in cases.items():
        op = fgrad.primitive(
            lambda x: (fnp.sin(x), lambda ct: (ct * fnp.cos(x),)), batch=rule, name="mysin"
        )
        with pytest.raises((TypeError, ValueError), match="mysin: its batching rule " + message):
            fgrad.vmap(op)(X)
    good = fgrad.primitive(
        lambda x: (fnp.sin(x), lambda ct: (ct * fnp.cos(x),)),
        batch=lambda a, d: (fnp.sin(a[0]), -2 if d[0] == 0 else d[0]),
        name="good",
    )
    np.testing.assert_array_equal(fgrad.vmap(good)(X), np.sin(X))


def test_multiple_results_may_be_returned_as_a_list_as_jax_primitives_do():
    # a list was refused once the outputs were checked (a tuple only)
    @fgrad.primitive(multiple_results=True)
    def both(x):
        return [fnp.sin(x), fnp.cos(x)], lambda cts: (cts[0] * fnp.cos(x) - cts[1] * fnp.sin(x),)

    a, b = both(0.5)
    assert (a, b) == (np.sin(0.5), np.cos(0.5))

    def total(x):
        s, c = both(x)
        return s + c

    assert grad(total)(0.5) == np.cos(0.5) - np.sin(0.5)


def test_an_fprop_not_returning_a_pair_is_named_on_a_plain_call_too():
    # the plain call took fprop(x)[0]: "'float' object is not subscriptable"
    @fgrad.primitive
    def f(x):
        return x

    with pytest.raises(TypeError, match=r"f: its fprop must return \(ans, bprop\).*got a float"):
        f(1.0)


def test_a_transposed_tangent_of_a_scalar_output_is_a_numpy_scalar():
    """Forward mode through a rule given only as a bprop (`fgrad.primitive`, `custom_vjp`)
    gave a 0-d ndarray tangent for a NumPy-scalar output (the backward pass sums to 0-d
    arrays), where the primal and every built-in rule's tangent are NumPy scalars; so did
    `linearize` of any function with such an output."""

    @fgrad.primitive
    def total(x):
        return fnp.sum(x), lambda ct: (ct * fnp.ones_like(x),)

    for dtype in (np.float64, np.float32):
        x = np.array([1.0, 2.0], dtype)
        y, t = fgrad.jvp(total, (x,), (np.ones(2, dtype),))
        _, want_t = fgrad.jvp(fnp.sum, (x,), (np.ones(2, dtype),))
        assert type(y) is type(t) is type(want_t) is dtype and t == want_t == 2.0
        for f in (total, fnp.sum):  # linearize's own transpose summed to 0-d arrays too
            assert type(fgrad.linearize(f, x)[1](np.ones(2, dtype))) is dtype
