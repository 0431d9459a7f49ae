"""check_rule must pass right rules and blame exactly the wrong part of a wrong one."""

import functools

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core import primal
from fgrad.test_util import check_grads, check_rule

X = (np.array([0.3, -1.2, 2.0]),)


def sin_rule(value=1.0, bprop=1.0, jvp=1.0):
    """sin as an fprop primitive with its own jvp; each part can be scaled to make it wrong."""

    def fprop(x):
        return value * fnp.sin(x), lambda ct: (bprop * ct * fnp.cos(x),)

    return fgrad.primitive(fprop, jvp=lambda ts, ans, x: jvp * ts[0] * fnp.cos(x), name="sin_")


def sin_vjp(bwd=1.0, fwd_value=1.0):
    """sin as a custom_vjp: forward mode is derived by transposing bwd."""
    f = fgrad.custom_vjp(lambda x: fnp.sin(x))
    f.defvjp(lambda x: (fwd_value * fnp.sin(x), x), lambda x, ct: (bwd * ct * fnp.cos(x),))
    return f


def sin_jvp(scale=1.0):
    """sin as a custom_jvp: reverse mode is derived by transposing the jvp rule."""
    f = fgrad.custom_jvp(lambda x: fnp.sin(x))
    f.defjvp(lambda p, t: (fnp.sin(p[0]), scale * t[0] * fnp.cos(p[0])))
    return f


def failed(f, *args, **kwargs):
    with pytest.raises(AssertionError) as info:
        check_rule(f, *args, **kwargs)
    return info.value.failed, str(info.value)


def test_correct_rules_pass_to_order_2():
    check_rule(sin_rule(), X, reference=np.sin, order=2)
    check_rule(sin_vjp(), X, reference=np.sin, order=2)
    check_rule(sin_jvp(), X, reference=np.sin, order=2)
    check_rule(fnp.tanh, X, reference=np.tanh, order=2)  # a built-in


def test_pytrees_and_several_arguments_pass():
    @fgrad.custom_vjp
    def polar(r, theta):
        return {"x": r * fnp.cos(theta), "y": r * fnp.sin(theta)}

    def fwd(r, theta):
        return polar(r, theta), (r, theta)

    def bwd(res, ct):
        r, theta = res
        c, s = fnp.cos(theta), fnp.sin(theta)
        return ct["x"] * c + ct["y"] * s, r * (ct["y"] * c - ct["x"] * s)

    polar.defvjp(fwd, bwd)
    check_rule(polar, (np.array([1.0, 2.0]), np.array([0.4, -0.7])), order=2)


def test_a_bprop_0_1_percent_wrong_is_blamed_on_the_reverse_rule():
    parts, message = failed(sin_rule(bprop=1.001), X, reference=np.sin)
    assert parts == ("reverse rule",)
    assert "the reverse rule (bprop) of f is wrong" in message
    assert "reverse rule (bprop): WRONG" in message
    assert "forward rule (jvp): ok" in message
    assert "transpose consistency of jvp and bprop: fails too, as a consequence" in message
    assert "along s = conj(bprop(ct)) / |bprop(ct)|: <bprop(ct), s> = " in message


def test_a_wrong_custom_vjp_bwd_is_blamed_on_it_not_on_the_forward_mode_derived_from_it():
    parts, message = failed(sin_vjp(bwd=1.001), X, reference=np.sin)
    assert parts == ("reverse rule",)
    assert "forward rule (jvp, transposed from your bprop): fails too, as a consequence" in message


def test_a_wrong_jvp_is_blamed_on_the_forward_rule():
    parts, message = failed(sin_rule(jvp=1.001), X, reference=np.sin)
    assert parts == ("forward rule",)
    assert "forward rule (jvp): WRONG: output leaf 0: jvp(t) = [" in message
    assert "reverse rule (bprop): ok" in message
    parts, message = failed(sin_jvp(scale=0.999), X)
    assert parts == ("forward rule",)
    assert "reverse rule (bprop, transposed from your jvp rule): fails too" in message


def test_an_inconsistent_jvp_bprop_pair_is_caught_below_what_differences_can_see():
    slightly_off = sin_rule(jvp=1 + 1e-7)
    check_grads(slightly_off, X, order=1)  # central differences cannot see 1e-7
    parts, message = failed(slightly_off, X, reference=np.sin)
    assert parts == ("transpose consistency",)
    assert "transpose consistency of jvp and bprop: WRONG: <ct, jvp(t)> = " in message
    assert "reverse rule (bprop): ok" in message and "forward rule (jvp): ok" in message


def test_a_bwd_that_is_not_linear_in_the_cotangent_is_caught():
    f = fgrad.custom_vjp(lambda x: fnp.sin(x))
    f.defvjp(lambda x: (fnp.sin(x), x), lambda x, ct: (ct * fnp.cos(x) + 1e-9,))
    parts, message = failed(f, X)
    # forward mode transposes bwd on a zero cotangent, where a linear bwd gives exactly 0
    assert parts == ("forward rule",)
    assert "is not linear: for zero ct it is np.float64(1e-09), not 0" in message


def test_a_wrong_value_is_blamed_on_the_value():
    parts, message = failed(sin_rule(value=1.001), X, reference=np.sin)
    assert parts == ("value",)
    assert "value: WRONG: f(*args) = [" in message and "but reference(*args) = [" in message
    assert "reverse rule (bprop): ok" in message
    # without a reference: fwd's value disagrees with the function's own
    parts, message = failed(sin_vjp(fwd_value=1.001), X)
    assert parts == ("value",)
    assert "but the value of f under vjp (from fwd or the fprop) = [" in message


def test_a_rule_right_only_to_first_order_fails_at_order_2_naming_the_derivative():
    def fprop(x):  # raw NumPy in the bprop: its own derivative sees cos(x) as a constant
        return fnp.sin(x), lambda ct: (ct * np.cos(primal(x)),)

    raw = fgrad.primitive(fprop, name="raw_sin")
    check_rule(raw, X, reference=np.sin)
    parts, message = failed(raw, X, reference=np.sin, order=2)
    # the bprop as a function of x has wrong derivatives in both modes: cos(x) is frozen
    assert parts == ("reverse rule of vjp(f)", "forward rule of vjp(f)")
    assert "the reverse rule (bprop) and forward rule (jvp) of vjp(f) are wrong" in message


def test_a_rule_that_raises_is_reported_as_that_part_with_its_cause():
    f = fgrad.custom_vjp(lambda x: fnp.sin(x))
    f.defvjp(lambda x: (fnp.sin(x), x), lambda x, ct: (ct[:1],))  # wrong shape
    with pytest.raises(AssertionError) as info:
        check_rule(f, X)
    assert info.value.failed == ("reverse rule",)
    assert "reverse rule (bprop): WRONG: raised ValueError" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


def test_non_differentiable_arguments_go_in_a_partial():
    @functools.partial(fgrad.custom_vjp, nondiff_argnums=(0,))
    def scale(k, x):
        return k * x

    scale.defvjp(lambda k, x: (k * x, None), lambda k, res, ct: (1.001 * k * ct,))
    parts, _ = failed(functools.partial(scale, 3.0), X)
    assert parts == ("reverse rule",)  # seen through the partial: forward mode is derived


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="order must be 1 or more"):
        check_rule(fnp.sin, X, order=0)
    with pytest.raises(TypeError, match="reference must be a function"):
        check_rule(fnp.sin, X, reference=np.array([1.0]))


# --- rules that branch on their inputs' values (issue 31) -----------------------------------------


def branching_rules():
    """Right rules whose Python reads the values they are given: a bwd that loops to a
    tolerance on the cotangent, one with a zero shortcut, a jvp rule with a zero shortcut on the
    tangent, a primitive's bprop that halves the cotangent until nothing is left, and rules
    that take a Python branch on the point (rows of a vmap go different ways)."""
    fixed_point = fgrad.custom_vjp(lambda x: fnp.sin(x))

    def fixed_point_bwd(x, ct):  # ct cos(x) as the fixed point of u = (ct cos(x) + u) / 2
        u = 0.0 * ct  # at a zero cotangent the loop stops at once, at half the answer
        while True:
            u2 = 0.5 * ct * fnp.cos(x) + 0.5 * u
            if fnp.max(fnp.abs(u2 - u)) < 1e-14:
                return (u2,)
            u = u2

    fixed_point.defvjp(lambda x: (fnp.sin(x), x), fixed_point_bwd)

    shortcut_vjp = fgrad.custom_vjp(lambda x: fnp.sin(x))
    shortcut_vjp.defvjp(
        lambda x: (fnp.sin(x), x),
        lambda x, ct: (fnp.zeros_like(ct),) if not fnp.any(ct != 0) else (ct * fnp.cos(x),),
    )

    shortcut_jvp = fgrad.custom_jvp(lambda x: fnp.sin(x))

    @shortcut_jvp.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        if not fnp.any(t != 0):
            return fnp.sin(x), fnp.zeros_like(t)
        return fnp.sin(x), fnp.cos(x) * t

    def halving_fprop(x):
        def bprop(ct):
            u, left = 0.0 * ct, ct
            while fnp.any(fnp.abs(left) > 1e-300):
                u, left = u + 0.5 * left, 0.5 * left
            return (u * fnp.cos(x),)

        return fnp.sin(x), bprop

    halving = fgrad.primitive(halving_fprop, name="halving_sin")

    # a piecewise function of a scalar, branching on the point in Python, in every part
    piecewise = fgrad.custom_vjp(lambda x: fnp.sin(x) if x > 0 else x - x**3 / 6)
    piecewise.defvjp(
        lambda x: (piecewise(x), x),
        lambda x, ct: (ct * fnp.cos(x),) if x > 0 else (ct * (1 - x**2 / 2),),
    )
    return {
        "fixed_point": fixed_point,
        "shortcut_vjp": shortcut_vjp,
        "shortcut_jvp": shortcut_jvp,
        "halving": halving,
        "piecewise": piecewise,
    }


@pytest.mark.parametrize("name", sorted(branching_rules()))
def test_rules_that_branch_on_the_values_they_are_given_pass_in_every_transform(name):
    f = branching_rules()[name]
    if name == "piecewise":
        for x in (0.7, -0.4):
            check_rule(f, (x,), order=2)
        return
    check_rule(f, X, reference=np.sin, order=2)


def test_a_transform_that_disagrees_with_the_rules_is_blamed_as_such(monkeypatch):
    # A deliberate defect in the batching of custom_vjp calls: jvp and vjp are untouched, so
    # only the part that runs the rules under jacfwd, jacrev and vmap can see it.
    from fgrad import batching, custom

    right = batching.rules[custom.custom_vjp_call]

    def off_by_a_percent(args, dims, call):
        outs, out_dims = right(args, dims, call)
        return tuple(1.01 * o for o in outs), out_dims

    monkeypatch.setitem(batching.rules, custom.custom_vjp_call, off_by_a_percent)
    parts, message = failed(sin_vjp(), X, reference=np.sin)
    assert parts == ("other transforms",)
    assert "transforms built on the rules (jacfwd, jacrev, vmap, jet): WRONG: " in message
    assert "reverse rule (bprop): ok" in message and "forward rule (jvp" in message
