"""User-registered primitives: fprop -> (ans, bprop), rules in fgrad ops, jvp by transposition."""

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
