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
