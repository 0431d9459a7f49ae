"""check_grads must catch wrong rules, not only pass right ones."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.primitive import defprimitive
from fgrad.test_util import check_grads


def sin_with(vjp_scale=1.0, jvp_scale=1.0):
    """sin whose reverse and forward rules are scaled: 1.001 is a rule that is 0.1% wrong."""
    return defprimitive(
        np.sin,
        vjp=lambda ans, x: lambda ct: ct * fnp.cos(x) * vjp_scale,
        jvp=lambda t, ans, x: t * fnp.cos(x) * jvp_scale,
        name="scaled_sin",
    )


X = (np.array([0.3, -1.2, 2.0]),)


def test_a_correct_rule_passes_in_both_modes_to_order_2():
    check_grads(sin_with(), X, order=2)
    check_grads(lambda x: fnp.sum(sin_with()(x) ** 2), X, order=3)


def test_a_reverse_rule_0_1_percent_wrong_is_caught():
    with pytest.raises(AssertionError, match="reverse mode"):
        check_grads(sin_with(vjp_scale=1.001), X, order=1, modes="rev")


def test_a_forward_rule_0_1_percent_wrong_is_caught():
    with pytest.raises(AssertionError, match="forward mode"):
        check_grads(sin_with(jvp_scale=1.001), X, order=1, modes="fwd")


def test_a_rule_wrong_only_in_its_second_derivative_is_caught_at_order_2():
    # The first derivative is right, but its rule is written in raw NumPy, so the second
    # derivative sees cos(x) as a constant: exactly the bug "rules in fgrad ops" prevents.
    raw_rule = defprimitive(
        np.sin,
        vjp=lambda ans, x: lambda ct: ct * np.cos(fgrad.core.primal(x)),
        jvp=lambda t, ans, x: t * np.cos(fgrad.core.primal(x)),
        name="sin_with_raw_numpy_rule",
    )
    check_grads(raw_rule, X, order=1)
    with pytest.raises(AssertionError):
        check_grads(raw_rule, X, order=2)


def test_jax_s_atol_and_rtol_are_accepted_and_mean_jax_s_bound():
    # (Python's "unexpected keyword argument 'atol'" before). A forward rule 1% wrong:
    # |jvp - numerical| is about 0.01 |J t|, so rtol=0.02 passes it and rtol=0.005 does not
    wrong = sin_with(jvp_scale=1.01)
    check_grads(wrong, X, order=1, modes="fwd", atol=0.0, rtol=0.02)
    check_grads(wrong, X, order=1, modes="fwd", atol=0.02)  # (rtol: tol's default, 1e-5)
    with pytest.raises(AssertionError, match=r"atol 0.0, rtol 0.005"):
        check_grads(wrong, X, order=1, modes="fwd", atol=0.0, rtol=0.005)
    with pytest.raises(AssertionError, match=r"reverse mode.*atol 1e-05, rtol 1e-08"):
        check_grads(sin_with(vjp_scale=1.001), X, order=1, modes="rev", atol=1e-5, rtol=1e-8)
    with pytest.raises(TypeError, match=r"pass tol .*or atol and rtol.*not both"):
        check_grads(fnp.sin, X, tol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(order="2"), TypeError, r"order must be a positive int.*'2' of type str"),  # '>'
        (dict(order=0), ValueError, r"order must be a positive int.*got 0"),  # checked nothing
        (dict(modes=3), TypeError, r"modes must be 'fwd', 'rev' or a tuple.*int"),
        (dict(eps="1e-3"), TypeError, r"eps must be a finite real number.*str"),
        (dict(eps=0.0), ValueError, r"eps must be > 0"),  # 0/0 in the differences: passed
        (dict(atol="x"), TypeError, r"atol must be a finite real number"),
    ],
)
def test_bad_order_modes_eps_and_tolerances_are_named(kwargs, error, match):
    with pytest.raises(error, match=rf"^check_grads: {match}"):
        check_grads(fnp.sin, (np.ones(3),), **kwargs)


@pytest.mark.parametrize("args", [1.0, np.array([1.0, 2.0])])
def test_args_that_are_not_a_tuple_are_refused_with_what_to_write(args):
    # a float raised "'float' object is not iterable", an array was split into its elements
    # ("sin() takes 1 positional argument but 2 were given")
    for check in (check_grads, fgrad.test_util.check_jvp, fgrad.test_util.check_vjp):
        with pytest.raises(TypeError, match=r"args must be a tuple .* write \(x,\)"):
            check(fnp.sin, args)
    check_grads(fnp.sin, (args,), order=1)
    check_grads(fnp.sin, [args], order=1)


def test_a_real_function_s_numerical_values_are_shown_as_real():
    # the failure text showed np.complex128(0.87...+0j) for a real function's differences
    with pytest.raises(AssertionError) as error:
        check_grads(sin_with(jvp_scale=1.001), (0.3,), order=1, modes="fwd")
    text = str(error.value)
    numerical = text.split("numerical = ")[1].split("\n")[0]
    jvp_shown = text.split("jvp       = ")[1].split("\n")[0]
    assert numerical.startswith("np.float64(") and "j" not in numerical
    value = lambda shown: float(shown.split("(")[1].rstrip(")"))
    assert value(jvp_shown) / value(numerical) == pytest.approx(1.001, rel=1e-6)
    with pytest.raises(AssertionError) as error:  # a complex function's stay complex
        check_grads(lambda z: sin_with(jvp_scale=1.001)(z) * 1j, (0.3,), order=1, modes="fwd")
    assert "j)" in str(error.value).split("numerical = ")[1].split("\n")[0]


def test_modes_are_validated():
    with pytest.raises(ValueError, match="'fwd' and/or 'rev'"):
        check_grads(fnp.sin, X, modes=("forward",))


def test_a_custom_rules_wrong_value_is_flagged():
    """A custom_vjp fwd or custom_jvp rule returning 1.01 f passed check_grads(order=2): the
    derivatives' checks compare the transform with itself, and the value was not compared."""
    x, y = np.array([0.3, 1.2]), np.array([0.7, -0.4])

    @fgrad.custom_vjp
    def f(x, y):
        return fnp.sin(x) * y**2

    f.defvjp(
        lambda x, y: (1.01 * fnp.sin(x) * y**2, (x, y)),
        lambda r, ct: (ct * fnp.cos(r[0]) * r[1] ** 2, 2 * ct * fnp.sin(r[0]) * r[1]),
    )

    @fgrad.custom_jvp
    def g(x, y):
        return fnp.sin(x) * y**2

    g.defjvp(
        lambda p, t: (
            1.01 * fnp.sin(p[0]) * p[1] ** 2,
            fnp.cos(p[0]) * p[1] ** 2 * t[0] + 2 * fnp.sin(p[0]) * p[1] * t[1],
        )
    )
    for wrong in (f, g):  # (under jvp, a custom_jvp gives the function's own value)
        with pytest.raises(AssertionError, match="under (jvp|vjp) differs"):
            check_grads(wrong, (x, y), order=2)


def test_an_infinite_value_equal_under_the_transform_is_not_flagged():
    # |(-inf) - (-inf)| is nan, so the value check said f under jvp differed from f at every
    # point where f is infinite (betaln at a pole of its last term)
    # (its derivatives are nan, as the central differences are: equal, as NumPy's
    # assert_allclose and JAX's check_grads count nans)
    f = lambda x: fnp.log(fnp.abs(x) * 0.0) + fnp.sum(x)
    check_grads(f, (np.array([1.0, 2.0]),), order=1, modes=("fwd", "rev"))


def test_check_grads_takes_zero_d_arrays_pairs_and_a_zero_tolerance():
    """Probe EL #4: eps/tol as 0-d arrays, tol=(atol, rtol) and modes as an array were
    refused by the new argument checks; tol=0 meant the default 1e-5 (it passed a derivative
    1e-7 off)."""
    for kw in (
        {"eps": np.array(1e-4)},
        {"tol": np.array(1e-5)},
        {"tol": (1e-5, 1e-5)},
        {"modes": np.array(["fwd", "rev"])},
    ):
        check_grads(fnp.sin, (0.3,), **kw)

    @fgrad.custom_jvp
    def off(x):
        return fnp.sin(x)

    off.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * (1 + 1e-7) * t[0]))
    with pytest.raises(AssertionError):
        check_grads(off, (0.3,), order=1, modes="fwd", tol=0)
