"""custom_vjp, custom_jvp, checkpoint and tap_cotangent: values, every transform to order 2,
pytrees, nondiff_argnums, closures over traced values, and the errors users get."""

import collections
import dataclasses
import functools
import types

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import (
    checkpoint,
    custom_jvp,
    custom_vjp,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jit,
    jvp,
    remat,
    tap_cotangent,
    vjp,
)
from fgrad.reverse import ReverseLevel
from fgrad.test_util import check_grads

Pair = collections.namedtuple("Pair", "a b")
X = np.array([0.3, -1.2, 0.7])


def assert_close(a, b, rtol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-14)


# --- custom_vjp -----------------------------------------------------------------------------------


def make_sin_mul(scale=1.0):
    """f(x, y) = sin(x) * y with a reverse rule scaled by `scale` (1: the true derivative;
    another value shows which rule a transform used)."""
    calls = []

    @custom_vjp
    def f(x, y):
        calls.append("fun")
        return fnp.sin(x) * y

    def f_fwd(x, y):
        calls.append("fwd")
        return fnp.sin(x) * y, (fnp.cos(x), fnp.sin(x), y)

    def f_bwd(res, ct):
        cos_x, sin_x, y = res
        return scale * ct * cos_x * y, scale * fnp.sum(ct * sin_x)  # y is a scalar

    f.defvjp(f_fwd, f_bwd)
    return f, calls


def test_custom_vjp_outside_transforms_runs_fun():
    f, calls = make_sin_mul()
    assert_close(f(X, 2.0), np.sin(X) * 2.0)
    assert calls == ["fun"]
    assert f.__name__ == "f" and "custom_vjp" in repr(f)


def test_custom_vjp_grad_uses_the_rule_in_both_modes():
    f, calls = make_sin_mul(scale=3.0)  # a "wrong" rule: every mode must follow it
    gx, gy = grad(lambda x, y: fnp.sum(f(x, y)), argnums=(0, 1))(X, 2.0)
    assert_close(gx, 3.0 * np.cos(X) * 2.0)
    assert_close(gy, 3.0 * np.sum(np.sin(X)))
    assert "fun" not in calls
    _, t = jvp(f, (X, 2.0), (np.ones(3), 0.0))  # forward mode, from the transposed bwd
    assert_close(t, 3.0 * np.cos(X) * 2.0)
    assert_close(jacfwd(f)(X, 2.0), np.diag(3.0 * np.cos(X) * 2.0))
    assert_close(jacrev(f)(X, 2.0), np.diag(3.0 * np.cos(X) * 2.0))


def test_custom_vjp_every_transform_to_order_2():
    f, _ = make_sin_mul()
    check_grads(f, (X, np.array(1.7)), order=2, modes=("fwd", "rev"))
    assert_order_2_like_plain(lambda x: f(x, 2.0))


def assert_order_2_like_plain(f):
    """f(x) == sin(x) * 2 with custom rules: every second-order transform agrees with the
    plain function's, and the third derivative too."""
    plain = lambda x: fnp.sin(x) * 2.0
    for second in (
        hessian,
        lambda f: jacfwd(jacfwd(f)),
        lambda f: jacrev(jacrev(f)),
        lambda f: jacrev(jacfwd(f)),
    ):
        assert_close(second(lambda x: fnp.sum(f(x)))(X), np.diag(-2.0 * np.sin(X)))
        assert_close(second(f)(X), second(plain)(X))
    assert_close(grad(grad(f))(0.4), -2.0 * np.sin(0.4))
    assert_close(grad(grad(grad(f)))(0.4), -2.0 * np.cos(0.4))


def test_custom_vjp_pytrees_and_none_cotangents():
    @custom_vjp
    def f(p, z):
        return {"s": p["w"] * p["b"][0], "t": Pair(fnp.sum(z), z * 2.0)}

    def f_fwd(p, z):
        return f(p, z), {"w": p["w"], "b0": p["b"][0]}

    def f_bwd(res, ct):
        w, b0 = res["w"], res["b0"]
        ct_z = ct["t"].a + 2.0 * ct["t"].b
        # None for a leaf (b[1]) is a zero
        return {"w": ct["s"] * b0, "b": [ct["s"] * w, None]}, ct_z

    f.defvjp(f_fwd, f_bwd)
    p = {"w": np.array([1.0, 2.0]), "b": [np.array([3.0, -1.0]), np.array(0.5)]}
    z = np.array([0.2, 0.4])
    check_grads(f, (p, z), order=2, modes=("fwd", "rev"))
    g = grad(lambda p: fnp.sum(f(p, z)["s"]))(p)
    assert_close(g["w"], p["b"][0])
    assert_close(g["b"][1], 0.0)


def test_custom_vjp_none_for_a_whole_argument():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, y), lambda y, ct: (ct * y, None))
    gx, gy = grad(f, argnums=(0, 1))(2.0, 3.0)
    assert gx == 3.0 and gy == 0.0


def test_custom_vjp_nondiff_argnums():
    @functools.partial(custom_vjp, nondiff_argnums=(0, 2))
    def apply(fn, x, power):
        return fn(x) ** power

    def apply_fwd(fn, x, power):
        y = fn(x)
        return y**power, y

    def apply_bwd(fn, power, y, ct):  # nondiff arguments first, in order
        return (ct * power * y ** (power - 1) * fnp.cos(fnp.arcsin(y)),)

    apply.defvjp(apply_fwd, apply_bwd)
    f = lambda x: fnp.sum(apply(fnp.sin, x, 3))
    assert_close(grad(f)(X), 3 * np.sin(X) ** 2 * np.cos(X))
    check_grads(lambda x: apply(fnp.sin, x, 3), (X,), order=2, modes=("fwd", "rev"))
    assert_close(apply(fnp.sin, X, 2), np.sin(X) ** 2)  # keyword arguments resolved too:
    assert_close(grad(lambda x: apply(fnp.sin, x=x, power=2))(0.5), np.sin(1.0))


class Quadratic:
    """A plain object (not a pytree) whose methods have custom rules: `self` is argument 0,
    counted in nondiff_argnums as in the function defined."""

    def __init__(self, c):
        self.c = c

    @functools.partial(custom_jvp, nondiff_argnums=(0,))
    def energy(self, x):  # c x^2
        return self.c * x**2

    @energy.defjvp
    def _energy_jvp(self, primals, tangents):
        (x,), (t,) = primals, tangents
        return self.c * x**2, 2 * self.c * x * t

    @functools.partial(custom_vjp, nondiff_argnames=("self",))
    def wave(self, x):  # c sin x
        return self.c * fnp.sin(x)

    def _wave_fwd(self, x):
        return self.c * fnp.sin(x), fnp.cos(x)

    def _wave_bwd(self, cos_x, ct):
        return (ct * self.c * cos_x,)

    wave.defvjp(_wave_fwd, _wave_bwd)


@fgrad.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
    """A pytree model: `self` is differentiated like any argument when it is not nondiff."""

    w: object

    @custom_vjp
    def apply(self, x):  # sum(w * sin x)
        return fnp.sum(self.w * fnp.sin(x))

    def _apply_fwd(self, x):
        return fnp.sum(self.w * fnp.sin(x)), (self.w, x)

    def _apply_bwd(res, ct):
        w, x = res
        return Linear(ct * fnp.sin(x)), ct * w * fnp.cos(x)

    apply.defvjp(_apply_fwd, _apply_bwd)


def test_custom_rules_used_as_methods_bind_self_under_every_transform():
    m = Quadratic(3.0)
    assert m.energy(2.0) == 12.0 and Quadratic.energy(m, 2.0) == 12.0
    for f, df, d2f in (
        (m.energy, lambda x: 6.0 * x, lambda x: 6.0 + 0 * x),
        (m.wave, lambda x: 3.0 * np.cos(x), lambda x: -3.0 * np.sin(x)),
    ):
        assert_close(grad(f)(0.7), df(0.7))
        assert_close(grad(lambda x: f(x) * 2.0)(0.7), 2.0 * df(0.7))
        assert_close(jvp(f, (0.7,), (1.0,))[1], df(0.7))
        assert_close(fgrad.vmap(grad(f))(X), df(X))
        assert_close(fgrad.vmap(f)(X), f(X))
        assert_close(fgrad.jit(grad(f))(0.7), df(0.7))
        assert_close(jacrev(f)(X), np.diag(df(X)))
        assert_close(jacfwd(f)(X), np.diag(df(X)))
        assert_close(hessian(f)(0.7), d2f(0.7))
    # a pytree `self` outside nondiff_argnums is an argument like x: its cotangent is a Linear
    lin, x = Linear(np.array([2.0, -1.0, 0.5])), X
    assert_close(lin.apply(x), np.sum(lin.w * np.sin(x)))
    assert_close(grad(Linear.apply)(lin, x).w, np.sin(x))
    assert_close(grad(lambda model: model.apply(x))(lin).w, np.sin(x))
    assert_close(grad(lin.apply)(x), lin.w * np.cos(x))
    assert_close(jvp(lin.apply, (x,), (np.ones(3),))[1], np.sum(lin.w * np.cos(x)))
    assert_close(fgrad.jit(grad(lin.apply))(x), lin.w * np.cos(x))

    # a plain `self` left out of nondiff_argnums has no cotangent: said so, with the fix
    class Scaled:
        c = 3.0

        @custom_vjp
        def plain(self, x):
            return self.c * x

        plain.defvjp(lambda self, x: (self.c * x, None), lambda r, ct: (None, ct))

    with pytest.raises(TypeError, match=r"argument 0 \(self\) is a Scaled.*nondiff_argnums"):
        grad(Scaled().plain)(1.0)


def test_custom_rules_take_nondiff_argnames():
    # names become positions (by the signature), added to nondiff_argnums; the rules get the
    # nondiff arguments first, in position order, as with nondiff_argnums alone
    @functools.partial(custom_vjp, nondiff_argnums=(0,), nondiff_argnames=("power",))
    def apply(fn, x, power):
        return fn(x) ** power

    apply.defvjp(
        lambda fn, x, power: (fn(x) ** power, x),
        lambda fn, power, x, ct: (ct * power * fnp.sin(x) ** (power - 1) * fnp.cos(x),),
    )
    assert apply.nondiff_argnums == (0, 2)
    d_sin_cubed = 3 * np.sin(0.5) ** 2 * np.cos(0.5)
    assert_close(grad(lambda x: apply(fnp.sin, x, 3))(0.5), d_sin_cubed)
    assert_close(grad(lambda x: apply(fnp.sin, x, power=3))(0.5), d_sin_cubed)

    scale = custom_jvp(lambda x, n: x * n, nondiff_argnames="n")
    scale.defjvp(lambda n, primals, tangents: (primals[0] * n, tangents[0] * n))
    assert_close(grad(scale)(2.0, 5.0), 5.0)
    assert_close(jvp(lambda x: scale(x, n=5.0), (2.0,), (1.0,))[1], 5.0)
    with pytest.raises(TypeError, match=r"nondiff_argnames names 'm'.*x, n.*nondiff_argnums"):
        custom_vjp(lambda x, n: x * n, nondiff_argnames=("m",))
    with pytest.raises(TypeError, match=r"nondiff_argnames names 'k', which is not a positional"):
        custom_jvp(lambda x, *, k: x * k, nondiff_argnames=("k",))
    with pytest.raises(TypeError, match=r"nondiff_argnames must be a tuple of parameter names"):
        custom_jvp(lambda x, n: x * n, nondiff_argnames=(1,))


def test_custom_vjp_closure_over_an_outer_level_is_differentiated():
    # y is traced by the outer grad only; the inner grad processes f: its fwd and bwd are
    # traced by the outer level, so d/dy of the inner gradient is right.
    def inner_grad(y):
        @custom_vjp
        def f(x):
            return fnp.sin(x) * y

        f.defvjp(lambda x: (fnp.sin(x) * y, fnp.cos(x)), lambda c, ct: (ct * c * y,))
        return grad(f)(0.4)

    assert_close(inner_grad(2.0), 2.0 * np.cos(0.4))
    assert_close(grad(inner_grad)(2.0), np.cos(0.4))
    assert_close(jvp(inner_grad, (2.0,), (1.0,))[1], np.cos(0.4))


def closure_vjp(y, where):
    """A custom_vjp function closing over y in its fwd (where='fwd') or bwd ('bwd')."""

    @custom_vjp
    def f(x):
        return x * y

    if where == "fwd":
        f.defvjp(lambda x: (x * y, None), lambda res, ct: (ct * 2.0,))
    else:
        f.defvjp(lambda x: (2.0 * x, None), lambda res, ct: (ct * y,))
    return f


@pytest.mark.parametrize("where", ["fwd", "bwd"])
def test_custom_vjp_closure_over_a_traced_value_is_refused(where):
    g = lambda x, y: closure_vjp(y, where)(x)
    # x not differentiated: f runs as `fun`, traced like any function, which is right
    assert grad(g, argnums=1)(3.0, 2.0) == 3.0
    with pytest.raises(
        TypeError,
        match=r"reads 'y'.*shape \(\) and dtype float64"
        r".*explicit argument",
    ):
        grad(g, argnums=(0, 1))(3.0, 2.0)
    with pytest.raises(TypeError, match="reads 'y'"):
        jvp(g, (3.0, 2.0), (1.0, 1.0))
    with pytest.raises(TypeError, match="reads 'y'"):  # x outer, y inner
        grad(lambda x: grad(lambda y: g(x, y))(2.0))(3.0)
    # y outer, x inner: the inner grad's rules are traced by the outer one, which is right
    # (the rules here are deliberately not fun's derivative: d/dy of bwd's answer)
    assert grad(lambda y: grad(g)(3.0, y))(2.0) == (0.0 if where == "fwd" else 1.0)


def test_custom_vjp_leak_through_a_global_is_refused():
    # not a closure cell (an attribute of an object): found in the output and residuals
    holder = types.SimpleNamespace()

    @custom_vjp
    def f(x):
        return x

    def g(y):
        holder.y = y
        return f(1.0 + 0.0 * y)

    f.defvjp(lambda x: (x, x * holder.y), lambda r, ct: (ct * 1.0,))
    with pytest.raises(
        TypeError,
        match=r"residuals depends on a value being differentiated "
        r"that is not one of the function's arguments",
    ):
        grad(g)(2.0)
    f.defvjp(lambda x: (x * holder.y, None), lambda r, ct: (ct * 1.0,))
    with pytest.raises(TypeError, match=r"its output depends on a value being differentiated"):
        jvp(g, (2.0,), (1.0,))
    f.defvjp(lambda x: (x, None), lambda r, ct: (ct * holder.y,))  # only bwd uses it
    with pytest.raises(TypeError, match=r"cotangents its bprop returned depends on a value"):
        jvp(g, (2.0,), (1.0,))
    assert grad(g)(2.0) == 0.0  # reverse mode: f's output, from fwd, does not depend on y


def test_custom_vjp_traced_value_as_an_argument_gives_the_right_gradient():
    @custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, ct: (ct * r[1], ct * r[0]))
    g = lambda x, y: fnp.sin(f(x, y))
    assert_close(grad(g, argnums=1)(3.0, 2.0), 3.0 * np.cos(6.0))
    assert_close(jvp(g, (3.0, 2.0), (0.0, 1.0))[1], 3.0 * np.cos(6.0))
    d2 = grad(lambda y: grad(g, argnums=1)(3.0, y))(2.0)
    assert_close(d2, -9.0 * np.sin(6.0))
    check_grads(g, (3.0, 2.0), order=2, modes=("fwd", "rev"))


def test_custom_vjp_nondiff_argument_being_differentiated_is_refused():
    @functools.partial(custom_vjp, nondiff_argnums=(1,))
    def f(x, s):
        return x * s

    f.defvjp(lambda x, s: (x * s, None), lambda s, r, ct: (ct * s,))
    with pytest.raises(
        TypeError,
        match=r"argument 1 is in nondiff_argnums.*shape \(\).*"
        r"stop_gradient",
    ):
        grad(lambda x: f(x, x))(3.0)
    with pytest.raises(TypeError, match=r"argument 1 is in nondiff_argnums"):
        grad(lambda x: grad(lambda s: f(x, s) * s)(3.0))(2.0)  # s inner, x outer
    # s traced by an outer grad only: fwd and bwd are traced by it, which is right
    assert grad(lambda s: grad(lambda x: f(x, s))(2.0))(3.0) == 1.0
    assert grad(lambda x: f(x, fgrad.stop_gradient(x)))(3.0) == 3.0
    # x not differentiated: f runs as `fun`, traced like any function
    assert grad(lambda s: f(2.0, s))(3.0) == 2.0


def test_custom_vjp_errors():
    @custom_vjp
    def f(x, y):
        return x * y

    with pytest.raises(TypeError, match=r"no rule yet.*defvjp"):
        f(1.0, 2.0)
    with pytest.raises(TypeError, match="fwd must be a function"):
        f.defvjp(1.0, lambda r, ct: ct)
    f.defvjp(lambda x, y: (x * y, None), lambda r, ct: (ct,))
    with pytest.raises(TypeError, match=r"one cotangent per differentiable argument \(2"):
        grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: x * y, lambda r, ct: (ct, ct))
    with pytest.raises(TypeError, match="fwd must return a pair"):
        grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (x * y, None), lambda r, ct: (fnp.ones(3), ct))
    with pytest.raises(ValueError, match=r"argument.*shape \(3,\).*shape \(\)"):
        grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (x * y, None), lambda r, ct: ((ct, ct), ct))
    with pytest.raises(
        ValueError, match=r"cotangent of argument 0 has structure PyTreeDef\(\(\*, \*\)\)"
    ):
        grad(f)(1.0, 2.0)
    g = custom_vjp(lambda x: x, nondiff_argnums=(5,))
    g.defvjp(lambda x: (x, None), lambda r, ct: (ct,))
    with pytest.raises(ValueError, match="nondiff_argnums names argument 5"):
        g(1.0)
    with pytest.raises(TypeError, match="nondiff_argnums must be a tuple of ints"):
        custom_vjp(lambda x: x, nondiff_argnums="0")
    with pytest.raises(TypeError, match="custom_vjp expects a function"):
        custom_vjp(None)


def test_custom_vjp_float32_cotangents_keep_their_dtype():
    @custom_vjp
    def f(x):
        return x * 2

    f.defvjp(lambda x: (x * 2, None), lambda r, ct: (2.0 * np.float64(1.0) * ct,))
    x = np.array([1.0, 2.0], np.float32)
    g = grad(lambda x: fnp.sum(f(x)))(x)
    assert g.dtype == np.float32


# --- custom_jvp -----------------------------------------------------------------------------------


def make_jvp_sin_mul(scale=1.0):
    calls = []

    @custom_jvp
    def f(x, y):
        calls.append("fun")
        return fnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("rule")
        (x, y), (tx, ty) = primals, tangents
        return fnp.sin(x) * y, scale * (fnp.cos(x) * y * tx + fnp.sin(x) * ty)

    return f, calls


def test_custom_jvp_uses_the_rule_in_both_modes():
    f, calls = make_jvp_sin_mul(scale=3.0)
    assert_close(f(X, 2.0), 2.0 * np.sin(X))
    assert calls == ["fun"]
    gx, gy = grad(lambda x, y: fnp.sum(f(x, y)), argnums=(0, 1))(X, 2.0)
    assert_close(gx, 3.0 * np.cos(X) * 2.0)
    assert_close(gy, 3.0 * np.sum(np.sin(X)))
    _, t = jvp(f, (X, 2.0), (np.ones(3), 1.0))
    assert_close(t, 3.0 * (np.cos(X) * 2.0 + np.sin(X)))
    assert_close(jacrev(f)(X, 2.0), np.diag(6.0 * np.cos(X)))
    assert_close(jacfwd(f)(X, 2.0), np.diag(6.0 * np.cos(X)))


def test_custom_jvp_every_transform_to_order_2():
    f, _ = make_jvp_sin_mul()
    check_grads(f, (X, np.array(1.7)), order=2, modes=("fwd", "rev"))
    assert_order_2_like_plain(lambda x: f(x, 2.0))


def branching_sin_times_two(kind):
    """sin(x) * 2 by a rule whose Python reads the values it is given: a zero shortcut on the
    cotangent or tangent (forward mode of a custom_vjp and reverse mode of a custom_jvp run
    the rule on placeholders, issue 31), and a branch on the point (rows of a vmap part)."""
    if kind == "custom_vjp":
        f = custom_vjp(lambda x: fnp.sin(x) * 2.0)

        def bwd(x, ct):
            if not fnp.any(ct != 0):
                return (fnp.zeros_like(ct),)
            if fnp.all(x > 0):
                return (2.0 * ct * fnp.cos(x),)
            return (ct * (fnp.cos(x) + fnp.cos(x)),)

        f.defvjp(lambda x: (f(x), x), bwd)
        return f
    f = custom_jvp(lambda x: fnp.sin(x) * 2.0)

    @f.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        if not fnp.any(t != 0):
            return f(x), fnp.zeros_like(t)
        return f(x), (2.0 * fnp.cos(x) if fnp.all(x > 0) else fnp.cos(x) + fnp.cos(x)) * t

    return f


@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
def test_rules_that_branch_on_the_values_they_get_are_right_in_every_transform(kind):
    f = branching_sin_times_two(kind)
    plain = lambda x: fnp.sin(x) * 2.0
    assert_order_2_like_plain(f)
    for first in (jacfwd, jacrev, lambda f: fgrad.vmap(grad(lambda x: fnp.sum(f(x))))):
        assert_close(first(f)(X), first(plain)(X))
    assert_close(jvp(f, (X,), (np.ones(3),))[1], 2.0 * np.cos(X))
    assert_close(grad(lambda x: fnp.sum(f(x)))(X), 2.0 * np.cos(X))
    for series in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)):
        assert_close(fgrad.jet(f, (0.4,), (series,))[1], fgrad.jet(plain, (0.4,), (series,))[1])
    assert_close(fgrad.derivative(f, 3)(0.4), -2.0 * np.cos(0.4))
    assert_close(fgrad.linearize(f, X)[1](np.ones(3)), 2.0 * np.cos(X))


def test_custom_jvp_pytrees_nondiff_and_defjvps():
    @functools.partial(custom_jvp, nondiff_argnums=(1,))
    def f(p, k):
        return Pair(p["a"] * k, fnp.exp(p["b"]))

    @f.defjvp
    def f_jvp(k, primals, tangents):
        (p,), (t,) = primals, tangents
        out = f(p, k)
        return out, Pair(t["a"] * k, None if k > 10 else out.b * t["b"])  # None: a zero

    p = {"a": np.array([1.0, 2.0]), "b": np.array(0.3)}
    check_grads(lambda p: f(p, 2.0), (p,), order=2, modes=("fwd", "rev"))
    g = grad(lambda p: fnp.sum(f(p, 20.0).b))(p)
    assert_close(g["b"], 0.0)

    h = custom_jvp(lambda x, y: x * fnp.sin(y))
    h.defjvps(lambda tx, ans, x, y: tx * fnp.sin(y), lambda ty, ans, x, y: x * fnp.cos(y) * ty)
    check_grads(h, (X, 0.8), order=2, modes=("fwd", "rev"))
    z = custom_jvp(lambda x, y: x * y)
    z.defjvps(None, lambda ty, ans, x, y: x * ty)  # None: no derivative for x
    assert grad(z, argnums=(0, 1))(2.0, 3.0) == (0.0, 2.0)
    with pytest.raises(TypeError, match="defjvps cannot be used with nondiff_argnums"):
        f.defjvps(None, None)


def test_custom_jvp_closure_over_a_traced_value():
    def g(x, y):
        @custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda p, t: (p[0] * y, t[0] * y))
        return f(x)

    assert grad(g, argnums=1)(3.0, 2.0) == 3.0  # x not differentiated: fun is traced
    for transform in (
        lambda: grad(g, argnums=(0, 1))(3.0, 2.0),
        lambda: jvp(g, (3.0, 2.0), (1.0, 1.0)),
        lambda: grad(lambda x: grad(lambda y: g(x, y))(2.0))(3.0),
    ):
        with pytest.raises(TypeError, match=r"reads 'y'.*shape \(\).*explicit argument"):
            transform()
    assert grad(lambda y: grad(g)(3.0, y))(2.0) == 1.0  # y outer, x inner: right

    @custom_jvp
    def f2(x, y):  # the same, with y as an argument
        return x * y

    f2.defjvp(lambda p, t: (p[0] * p[1], t[0] * p[1] + p[0] * t[1]))
    assert grad(f2, argnums=(0, 1))(3.0, 2.0) == (2.0, 3.0)
    assert jvp(f2, (3.0, 2.0), (1.0, 1.0))[1] == 5.0
    assert grad(lambda y: grad(f2, argnums=1)(3.0, y) * y)(2.0) == 3.0
    assert grad(lambda y: grad(f2)(3.0, y))(2.0) == 1.0
    assert grad(lambda x: grad(lambda y: f2(x, y))(2.0))(3.0) == 1.0


def test_custom_jvp_closure_over_an_outer_level_is_differentiated():
    def inner(y):
        @custom_jvp
        def f(x):
            return fnp.sin(x) * y

        f.defjvp(lambda p, t: (fnp.sin(p[0]) * y, fnp.cos(p[0]) * y * t[0]))
        return grad(f)(0.4)

    assert_close(grad(inner)(2.0), np.cos(0.4))
    assert_close(jvp(inner, (2.0,), (1.0,))[1], np.cos(0.4))


def test_custom_jvp_errors():
    f = custom_jvp(lambda x: x)
    with pytest.raises(TypeError, match=r"no rule yet.*defjvp"):
        f(1.0)
    f.defjvp(lambda p, t: p[0])
    with pytest.raises(TypeError, match="must return a pair"):
        grad(f)(1.0)
    f.defjvp(lambda p, t: (p[0], (t[0], t[0])))
    for transform in (grad(f), jacfwd(f)):
        with pytest.raises(ValueError, match=r"tangent.* has structure PyTreeDef\(\(\*, \*\)\)"):
            transform(1.0)
    f.defjvp(lambda p, t: (p[0], fnp.ones(2)))
    for transform in (grad(f), jacfwd(f)):
        with pytest.raises(ValueError, match=r"tangent.*shape \(2,\).*shape \(\)"):
            transform(1.0)
    with pytest.raises(TypeError, match="custom_jvp expects a function"):
        custom_jvp(3.0)


@pytest.mark.parametrize(
    "primal_out, error, match",
    [
        (lambda x: fnp.ones(4), ValueError, r"primal_out \(leaf 0\) has shape \(4,\)"),
        (lambda x: (fnp.sin(x),), TypeError, r"primal_out has structure PyTreeDef\(\(\*,\)\)"),
    ],
    ids=["shape", "structure"],
)
def test_a_jvp_rules_wrong_primal_out_is_named_not_its_right_tangent_out(primal_out, error, match):
    # grad blamed the right tangent_out and advised giving it the wrong shape (4,); jvp ignored
    # the rule's primal_out and returned the function's value
    @custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: (primal_out(p[0]), fnp.cos(p[0]) * t[0]))
    x = np.array([0.3, 0.7, 1.1])
    runs = [
        lambda: jvp(f, (x,), (x,)),
        lambda: grad(lambda x: fnp.sum(f(x)))(x),
        lambda: jacfwd(f)(x),
        lambda: jacrev(f)(x),
        lambda: jit(grad(lambda x: fnp.sum(f(x))))(x),
    ]
    for run in runs:
        with pytest.raises(error, match=rf"'f': the jvp rule's {match}.*function's (output|value)"):
            run()
    f.defjvp(lambda p, t: (fnp.sin(p[0]).astype(np.float32), fnp.cos(p[0]) * t[0]))
    with pytest.raises(ValueError, match=r"primal_out \(leaf 0\) .* float32.* float64"):
        jvp(f, (x,), (x,))


@pytest.mark.parametrize("tangent", ["forgot_t", "affine"])
def test_a_custom_jvp_rule_not_linear_in_its_tangent_is_refused_by_reverse_mode(tangent):
    # Reverse mode transposes the rule's tangent part on zero placeholders: `cos(x)` (the
    # tangent forgotten) or `cos(x) * t + 1` gave grad 0.0 and cos(x) silently, where jvp
    # gives the rule's own numbers; a linear tangent part is exactly 0 at zero tangents.
    f = custom_jvp(fnp.sin)
    if tangent == "forgot_t":
        f.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0])))
    else:
        f.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * t[0] + 1.0))
    x = np.array([0.5, 1.0])
    for transform in (
        lambda: grad(f)(0.5),
        lambda: jacrev(f)(x),
        lambda: fgrad.vmap(grad(f))(x),
        lambda: fgrad.jit(grad(f))(0.5),
    ):
        with pytest.raises(
            ValueError, match=r"tangent_out \(leaf 0, .*\) is not linear: for zero "
        ):
            transform()


def test_a_custom_vjp_bwd_not_linear_in_its_cotangent_is_refused_by_forward_mode():
    f = custom_vjp(fnp.sin)
    f.defvjp(lambda x: (fnp.sin(x), x), lambda x, ct: (fnp.cos(x),))  # ct forgotten
    x = np.array([0.5, 1.0])
    assert np.allclose(grad(f)(0.5), np.cos(0.5))  # reverse mode uses bwd as it is
    for transform in (lambda: jacfwd(f)(x), lambda: fgrad.jvp(f, (x,), (x,))):
        with pytest.raises(ValueError, match=r"bwd's cotangent .* is not linear: for zero ct"):
            transform()


def test_a_linear_rule_that_gives_nan_at_a_singular_point_is_not_refused():
    # t / x at x = 0 is nan for a zero t: no evidence of a constant part
    f = custom_jvp(fnp.log)
    f.defjvp(lambda p, t: (fnp.log(p[0]), t[0] / p[0]))
    with np.errstate(divide="ignore", invalid="ignore"):
        assert np.isinf(grad(f)(0.0)) and np.isclose(grad(f)(2.0), 0.5)


# --- checkpoint -----------------------------------------------------------------------------------


def mlp(w, h):
    for _ in range(3):
        h = fnp.tanh(w @ h + 0.1)
    return h


W = np.random.default_rng(0).standard_normal((3, 3)) * 0.5


def loss(w, x, layer):
    return fnp.sum(layer(w, layer(w, x)) ** 2)


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: grad(f),
        lambda f: jacfwd(f),
        lambda f: jacrev(f),
        lambda f: hessian(f),
        lambda f: jacfwd(jacfwd(f)),
        lambda f: jacrev(jacrev(f)),
        lambda f: jacrev(jacfwd(f)),
        lambda f: grad(lambda x: fnp.sum(grad(f)(x) ** 2)),
    ],
    ids=["grad", "jacfwd", "jacrev", "hessian", "fwd-fwd", "rev-rev", "rev-fwd", "grad-grad"],
)
def test_checkpoint_gradients_equal_the_unchecked_ones(transform):
    plain = transform(lambda x: loss(W, x, mlp))
    checked = transform(lambda x: loss(W, x, checkpoint(mlp)))
    assert_close(checked(X), plain(X), rtol=1e-12)
    plain_w = transform(lambda w: loss(w, X, mlp))
    checked_w = transform(lambda w: loss(w, X, checkpoint(mlp)))
    assert_close(checked_w(W), plain_w(W), rtol=1e-12)


def test_checkpoint_first_order_gradient_is_bitwise_equal():
    g_plain = grad(lambda x: loss(W, x, mlp))(X)
    g_checked = grad(lambda x: loss(W, x, checkpoint(mlp)))(X)
    np.testing.assert_array_equal(g_checked, g_plain)


def test_checkpoint_stores_one_node_and_reruns_fun():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(fnp.cos(fnp.exp(x)))

    with ReverseLevel() as level:  # the tape: the input's entry, checkpoint's, its output's
        y = checkpoint(f)(level.new_input(0.3))
    assert len(level.tape) == 3 and len(calls) == 1
    with ReverseLevel() as level:
        f(level.new_input(0.3))
    assert len(level.tape) == 4
    calls.clear()
    g = grad(checkpoint(f))(0.3)
    assert len(calls) == 2  # the forward pass, and once more in the bprop
    assert_close(g, grad(f)(0.3))
    assert type(y) is fgrad.core.Box


def test_checkpoint_pytrees_kwargs_constants_and_remat():
    c = np.array([1.0, 2.0, 3.0])  # a constant closed over: fine

    def f(p, x, scale=1.0):
        return {"u": fnp.sin(p["a"] * x) * c, "v": (fnp.sum(p["b"] * x) * scale,)}

    p = {"a": np.array(0.7), "b": np.array([0.1, 0.2, 0.3])}
    assert remat is checkpoint
    cf = checkpoint(f)
    assert cf.__name__ == "checkpoint(f)"
    out = cf(p, X, scale=2.0)
    assert_close(out["u"], f(p, X)["u"])
    check_grads(lambda p, x: cf(p, x, scale=2.0), (p, X), order=2, modes=("fwd", "rev"))
    g1 = grad(lambda p: fnp.sum(cf(p, X, scale=2.0)["u"]) + cf(p, X, scale=2.0)["v"][0])(p)
    g2 = grad(lambda p: fnp.sum(f(p, X, scale=2.0)["u"]) + f(p, X, scale=2.0)["v"][0])(p)
    assert_close(g1["a"], g2["a"])
    assert_close(g1["b"], g2["b"])


def test_checkpoint_differentiates_what_its_function_closes_over():
    g = lambda w, x: fnp.sum(checkpoint(lambda x: fnp.tanh(w * x))(x))
    ref = lambda w, x: fnp.sum(fnp.tanh(w * x))
    assert_close(grad(g)(0.5, X), grad(ref)(0.5, X))  # x not traced: fun is traced
    for got, want in zip(grad(g, argnums=(0, 1))(0.5, X), grad(ref, argnums=(0, 1))(0.5, X)):
        assert_close(got, want)
    assert_close(jvp(g, (0.5, X), (1.0, X))[1], jvp(ref, (0.5, X), (1.0, X))[1])
    mixed = lambda f: grad(lambda x: grad(lambda w: f(w, x))(0.5))(0.2)
    assert_close(mixed(g), mixed(ref))  # x outer, w inner
    d2 = lambda f: grad(lambda w: fnp.sum(grad(f, argnums=1)(w, X)))(0.5)
    assert_close(d2(g), d2(ref))  # w outer, x inner
    h = lambda w, x: fnp.sum(checkpoint(lambda w, x: fnp.tanh(w * x))(w, x))
    assert_close(grad(h)(0.5, X), grad(ref)(0.5, X))
    assert_close(jvp(h, (0.5, X), (1.0, X))[1], jvp(ref, (0.5, X), (1.0, X))[1])
    assert_close(d2(h), d2(ref))


def test_checkpoint_integer_arguments_and_nesting():
    def f(x, n):
        for _ in range(n):
            x = fnp.sin(x)
        return x

    outer = checkpoint(lambda x: checkpoint(f)(x, 3) * 2.0)
    assert_close(grad(outer)(0.4), grad(lambda x: f(x, 3) * 2.0)(0.4))
    assert_close(hessian(outer)(0.4), hessian(lambda x: f(x, 3) * 2.0)(0.4))


# --- tap_cotangent --------------------------------------------------------------------------------


def test_tap_clips_reverse_mode_and_passes_tangents():
    clip = lambda ct: fnp.clip(ct, -1.0, 1.0)
    f = lambda x: 10.0 * tap_cotangent(x, clip) + x
    assert_close(grad(lambda x: fnp.sum(f(x)))(X), np.full(3, 2.0))
    assert_close(jvp(f, (X,), (np.ones(3),))[1], np.full(3, 11.0))  # unchanged tangents
    assert_close(tap_cotangent(X, clip), X)


def test_tap_logs_and_is_differentiable_to_order_2():
    seen = []
    f = lambda x: fnp.sin(tap_cotangent(x, seen.append)) * x
    check_grads(f, (X,), order=2, modes=("fwd", "rev"))
    assert seen  # it saw the cotangents
    seen.clear()
    grad(lambda x: fnp.sum(f(x)))(X)
    assert len(seen) == 1
    assert_close(seen[0], np.cos(X) * X)
    scaled = lambda x: fnp.sum(fnp.sin(tap_cotangent(x, lambda ct: ct * 3.0)) ** 2)
    assert_close(hessian(scaled)(X), np.diag(3.0 * 2.0 * np.cos(2 * X)))


def test_tap_pytrees():
    got = {}

    def on_ct(ct):
        got.update(ct)
        return {"a": ct["a"] * 0.5, "b": None}  # None for a leaf: a zero cotangent

    def f(p):
        t = tap_cotangent(p, on_ct)
        return fnp.sum(t["a"] * 2.0) + t["b"] ** 2 + p["b"]

    p = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}
    g = grad(f)(p)
    assert_close(g["a"], [1.0, 1.0])
    assert_close(g["b"], 1.0)  # only the direct use of p["b"]
    assert_close(got["a"], [2.0, 2.0])
    assert_close(got["b"], 6.0)
    with pytest.raises(TypeError, match="expects a function second"):
        tap_cotangent(1.0, 2.0)
    with pytest.raises(ValueError, match=r"on_cotangent's result \(leaf 0\) has shape \(3,\)"):
        grad(lambda x: tap_cotangent(x, lambda ct: fnp.ones(3)))(1.0)


# --- combinations ---------------------------------------------------------------------------------


def test_custom_rules_inside_checkpoint_and_tap_inside_custom_rules():
    f, _ = make_sin_mul()
    g, _ = make_jvp_sin_mul()
    h = checkpoint(lambda x: g(f(x, 2.0), 1.5) + tap_cotangent(x, lambda ct: ct))
    ref = lambda x: fnp.sin(fnp.sin(x) * 2.0) * 1.5 + x
    check_grads(h, (X,), order=2, modes=("fwd", "rev"))
    for transform in (jacfwd, jacrev, hessian):
        assert_close(transform(lambda x: fnp.sum(h(x)))(X), transform(lambda x: fnp.sum(ref(x)))(X))


def test_integer_arguments_and_outputs_pass_through():
    @custom_vjp
    def f(x, n):
        return x**n, n + 1

    f.defvjp(lambda x, n: ((x**n, n + 1), x), lambda x, ct: (ct[0] * 3 * x**2, None))
    y, m = f(2.0, 3)
    assert y == 8.0 and m == 4
    assert grad(lambda x: f(x, 3)[0])(2.0) == 12.0
    assert jvp(lambda x: f(x, 3)[0], (2.0,), (1.0,))[1] == 12.0


# --- the caller's arrays are never written into ---------------------------------------------------


def _doubled_in_place(x):
    x *= 2.0  # on a traced value this rebinds x: grad leaves the caller's x alone
    return fnp.sum(x**2)  # = 4 sum(x**2): gradient 8 x


class _Sub(np.ndarray):
    """A user's ndarray subclass (as np.memmap is NumPy's)."""


def _array_of_layout(layout, values, tmp_path):
    """`values` as a plain array, an np.memmap on a file, or an ndarray subclass."""
    if layout == "memmap":
        m = np.memmap(tmp_path / "x.dat", dtype=float, mode="w+", shape=(len(values),))
        m[:] = values
        return m
    x = np.array(values)
    return x.view(_Sub) if layout == "subclass" else x


@pytest.mark.parametrize("layout", ["ndarray", "memmap", "subclass"])
def test_checkpoint_and_custom_primals_never_write_into_the_callers_arrays(layout, tmp_path):
    """checkpoint's first run, and a custom function's primal and fwd, ran the function on
    the caller's own arrays: `x *= 2` doubled them, and the recomputation then saw the doubled
    values (grad(checkpoint(g)) was 16 x, jvp's tangent 96 instead of 48). An np.memmap or
    another ndarray subclass was still handed over writeable (the caller's file changed)."""
    cj = custom_jvp(_doubled_in_place)
    cj.defjvp(lambda p, t: (fnp.sum((2 * p[0]) ** 2), fnp.sum(8.0 * p[0] * t[0])))
    calls_f = custom_jvp(_doubled_in_place)
    # (the rule's own code reads x after f(x) doubled it in place: 16 x t, NumPy's meaning)
    calls_f.defjvp(lambda p, t: (calls_f(p[0]), fnp.sum(8.0 * p[0] * t[0])))
    cv = custom_vjp(_doubled_in_place)
    kept = lambda x: (lambda r: (_doubled_in_place(x), r))(x * 1.0)  # x kept, then doubled
    cv.defvjp(kept, lambda x, ct: (8.0 * x * ct,))
    t = np.ones(3)
    runs = {
        "grad(checkpoint)": lambda x: grad(checkpoint(_doubled_in_place))(x),
        "checkpoint": lambda x: 8.0 * checkpoint(_doubled_in_place)(x) / (4 * x),
        "jvp(checkpoint)": lambda x: jvp(checkpoint(_doubled_in_place), (x,), (t,))[1] + 0 * x,
        "hessian(checkpoint)": lambda x: hessian(checkpoint(_doubled_in_place))(x) @ x,
        "jit(grad(checkpoint))": lambda x: fgrad.jit(grad(checkpoint(_doubled_in_place)))(x),
        "grad(custom_vjp)": lambda x: grad(cv)(x),
        "jvp(custom_jvp)": lambda x: jvp(cj, (x,), (t,))[1] + 0 * x,
        # JAX's idiom, a rule that calls the function: it ran it on the caller's x
        "jvp(custom_jvp calling f)": lambda x: jvp(calls_f, (x,), (t,))[1] + 0 * x,
        "grad(custom_jvp calling f)": lambda x: grad(calls_f)(x),
    }
    expected = {"jvp(checkpoint)": 48.0, "jvp(custom_jvp)": 48.0, "checkpoint": None}
    expected.update({"jvp(custom_jvp calling f)": 96.0, "grad(custom_jvp calling f)": None})
    for name, run in runs.items():
        if layout != "ndarray" and name.startswith("jit"):
            continue  # (jit's reading of a subclass argument is jit's own test)
        x = _array_of_layout(layout, [1.0, 2.0, 3.0], tmp_path)
        out = run(x)
        np.testing.assert_array_equal(x, [1.0, 2.0, 3.0], err_msg=name)
        if name == "checkpoint":  # the value: 4 sum(x**2) = 56
            np.testing.assert_allclose(checkpoint(_doubled_in_place)(x), 56.0)
            continue
        want = expected.get(name, 8.0 * x)
        np.testing.assert_allclose(out, 16.0 * x if want is None else want, err_msg=name)


def test_checkpoint_of_an_in_place_sort_is_refused_and_leaves_the_argument_alone():
    def s(x):
        x.sort()
        return fnp.sum(x)

    x = np.array([3.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="sort"):
        grad(checkpoint(s))(x)
    np.testing.assert_array_equal(x, [3.0, 1.0, 2.0])


def test_checkpoint_of_an_identity_returns_the_argument_untransformed():
    x = np.ones(2)
    assert checkpoint(lambda x: x)(x) is x


def test_a_bwd_that_works_in_place_on_its_cotangent_gets_one_of_its_own():
    """add's bprop hands both operands the same cotangent: a bwd computing 2 ct in place
    (`ct *= 2`) also doubled x's own share. grad of sum((dbl(x) + x)**2) = 9 sum(x**2) was
    24 x instead of 18 x, while jit's was right."""

    @custom_vjp
    def dbl(x):
        return 2.0 * x

    def dbl_bwd(res, ct):
        ct *= 2.0
        return (ct,)

    dbl.defvjp(lambda x: (2.0 * x, None), dbl_bwd)
    f = lambda x: fnp.sum((dbl(x) + x) ** 2)  # = 9 sum(x**2): gradient 18 x
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(grad(f)(x), 18.0 * x)
    np.testing.assert_array_equal(grad(f)(x), fgrad.jit(grad(f))(x))


@pytest.mark.parametrize("layout", ["ndarray", "memmap", "subclass"])
def test_checkpoint_of_a_function_using_at_works_as_without_checkpoint(layout, tmp_path):
    """checkpoint ran the function on plain arrays, which have no `.at`: AttributeError (for
    an np.memmap argument still, after plain arrays were fixed)."""
    f = lambda x: fnp.sum(x.at[0].set(1.0) ** 2)
    x = _array_of_layout(layout, [3.0, 2.0, 5.0], tmp_path)
    np.testing.assert_array_equal(grad(checkpoint(f))(x), [0.0, 4.0, 10.0])  # 2 x, 0 at [0]
    assert checkpoint(f)(x) == 30.0
    assert jvp(checkpoint(f), (x,), (np.ones(3),)) == (30.0, 14.0)
    np.testing.assert_array_equal(jacfwd(grad(checkpoint(f)))(x), np.diag([0.0, 2.0, 2.0]))


def test_python_number_arguments_reach_checkpoint_and_rules_as_python_numbers():
    """checkpoint and custom_vjp/custom_jvp handed a Python number argument to the function's
    re-run and to the rules as a NumPy scalar, which promotes and overflows as Python's does
    not: grad(checkpoint(f)) of sum(h**2) / n**3 at n = 3e6 was 3x the closed form (n**3
    wrapped around in int64), float32 data times a Python 0.1 became float64 (a custom rule's
    primal and jacfwd float64 where jacrev gave float32; checkpoint raised a mismatch), and
    2 ** -k raised NumPy's "Integers to negative integer powers" (probe DE)."""
    x = np.array([1.0, 2.0, 3.0])
    n = 3_000_000
    want = 2 * x / n**3
    f = lambda h, n: fnp.sum(h**2) / n**3
    np.testing.assert_allclose(grad(checkpoint(f))(x, n), want, rtol=1e-15)

    x32 = x.astype(np.float32)
    g = checkpoint(lambda h, s: fnp.sum(h * s))
    for transform in (grad, jacfwd, jacrev):
        out = transform(g)(x32, 0.1)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, np.float32(0.1))
    layer = checkpoint(lambda h, k: fnp.sum(h * 2**-k))
    np.testing.assert_array_equal(grad(layer)(np.ones(3), 3), 0.125)

    @custom_vjp
    def scaled(h, s):
        return h * s

    scaled.defvjp(lambda h, s: (h * s, s), lambda s, ct: (ct * s, None))

    @custom_jvp
    def scaled_j(h, s):
        return h * s

    scaled_j.defjvp(lambda p, t: (scaled_j(*p), t[0] * p[1]))
    for op in (scaled, scaled_j):
        y, t = jvp(lambda h, op=op: op(h, 0.1), (x32,), (np.ones(3, np.float32),))
        assert y.dtype == t.dtype == np.float32
        assert jacfwd(op)(x32, 0.1).dtype == jacrev(op)(x32, 0.1).dtype == np.float32
    assert vjp(lambda h: scaled(h, 0.1), x32)[0].dtype == np.float32


def test_a_python_number_output_of_a_rule_keeps_python_promotion_under_every_transform():
    """A custom rule's or checkpoint's Python float output was made a float64 NumPy scalar
    under transforms, so float32 work became float64: x * f(x) with f returning 2.0 was float32
    eagerly but float64 under jit, vmap, jvp and value_and_grad. Now it stays a Python number,
    which promotes as it does eagerly, and still carries the rule's derivative."""

    @custom_vjp
    def two_v(x):
        return 2.0

    two_v.defvjp(lambda x: (2.0, None), lambda r, ct: (ct * 5.0,))

    @custom_jvp
    def two_j(x):
        return 2.0

    two_j.defjvp(lambda p, t: (2.0, t[0] * 5.0))
    two_c = checkpoint(lambda x: 2.0)
    x32, xs32 = np.float32(1.5), np.array([1.5, 2.5], np.float32)
    for two, slope in ((two_v, 5.0), (two_j, 5.0), (two_c, 0.0)):
        f = lambda x, two=two: x * two(x)
        assert np.asarray(f(x32)).dtype == np.float32  # eager: Python's promotion
        assert fgrad.jit(f)(x32).dtype == fgrad.jit(f)(x32).dtype == np.float32
        assert fgrad.vmap(f)(xs32).dtype == np.float32
        value, tangent = jvp(f, (x32,), (np.float32(1.0),))
        assert value.dtype == tangent.dtype == np.float32
        value, g = fgrad.value_and_grad(f)(x32)
        assert value.dtype == g.dtype == np.float32
        assert g == np.float32(2.0 + slope * 1.5)  # d/dx x f(x) = f + x f', f' by the rule


def test_checkpoint_takes_jaxs_keywords():
    """checkpoint(f, static_argnums=1), prevent_cse= and policy= raised Python's bare
    "unexpected keyword argument" (probe DE #5)."""

    def block(x, n, act):
        for _ in range(n):
            x = fnp.tanh(x) if act == "tanh" else fnp.sin(x)
        return fnp.sum(x)

    x = np.array([0.3, -0.7])
    for keywords in ({"static_argnums": (1, 2)}, {"static_argnums": -1}, {"prevent_cse": False}):
        ck = checkpoint(block, **keywords)
        np.testing.assert_array_equal(grad(ck)(x, 3, "tanh"), grad(block)(x, 3, "tanh"))
        jitted = fgrad.jit(grad(ck), static_argnums=(1, 2))
        np.testing.assert_array_equal(jitted(x, 2, "sin"), grad(block)(x, 2, "sin"))
    with pytest.raises(TypeError, match="argument 0 is in static_argnums but is a traced value"):
        grad(checkpoint(block, static_argnums=0))(x, 1, "sin")
    with pytest.raises(TypeError, match="policy=.* is not supported"):
        checkpoint(block, policy=lambda *a: True)
    with pytest.raises(TypeError, match="static_argnums must be an int or a sequence"):
        checkpoint(block, static_argnums="n")


def test_a_python_bool_output_of_a_rule_is_taken_as_numpys_bool():
    """checkpoint(lambda y: y > 0)(1.0) and a custom_jvp returning x > 0 under jit were
    refused ("return numbers or numeric arrays"); np.bool_ was taken (JAX returns True)."""
    positive = fgrad.checkpoint(lambda y: y > 0)
    assert positive(1.0) == np.True_ and fgrad.jit(positive)(1.0) == np.True_
    assert fgrad.jit(positive)(-2.0) == np.False_

    @fgrad.custom_jvp
    def above(x):
        return x > 0

    above.defjvp(lambda p, t: (above(*p), t[0] * 0))
    assert bool(fgrad.jit(above)(2.0)) is True and bool(fgrad.jit(above)(-2.0)) is False
    mixed = fgrad.checkpoint(lambda y: (y * 2.0, y > 0))
    f = lambda x: mixed(x)[0] * (1.0 if mixed(x)[1] else -1.0)
    for v in (1.5, -1.5):
        assert fgrad.grad(f)(v) == fgrad.jit(fgrad.grad(f))(v) == (2.0 if v > 0 else -2.0)


def test_a_wrong_tangent_out_is_named_when_the_function_itself_cannot_run():
    """Under grad a tangent_out that does not fit runs the function to tell which part is
    wrong; a function that raises there replaced the tangent_out message (probe EL #3)."""

    @custom_jvp
    def g(x):
        raise NotImplementedError("g is only evaluated through its rule")

    @g.defjvp
    def g_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.tanh(x), fnp.stack([t, t])  # tangent_out of shape (2,)

    with pytest.raises(ValueError, match=r"tangent_out \(leaf 0\) has shape \(2,\)"):
        grad(g)(0.3)


def test_reverse_mode_checks_a_rules_primal_out_once_per_signature():
    """vjp and value_and_grad returned a jvp rule's wrong primal_out silently (shape (3,) for
    a scalar function; float32 for a float64 one) where jvp refuses it (probe EL #1). The
    function runs once per signature of the inputs to check it."""
    runs = []

    @custom_jvp
    def g(x):
        runs.append(1)
        return fnp.sum(fnp.sin(x))

    g.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.sum(fnp.cos(p[0]) * t[0])))  # primal_out (3,)
    with pytest.raises(ValueError, match=r"primal_out \(leaf 0\) has shape \(3,\)"):
        fgrad.value_and_grad(g)(np.ones(3))

    @custom_jvp
    def h(x):
        runs.append(1)
        return fnp.sin(x)

    h.defjvp(lambda p, t: (fnp.sin(p[0]), fnp.cos(p[0]) * t[0]))
    runs.clear()
    for _ in range(3):
        _, pull = fgrad.vjp(h, np.ones(3))
        np.testing.assert_allclose(pull(np.ones(3))[0], np.cos(np.ones(3)))
    assert len(runs) == 1  # checked once for this signature


def test_checkpoint_under_forward_mode_sees_every_traced_argument_traced():
    """jacfwd and hessian of checkpoint(lambda x, y: x.dot(y)) failed: the checkpoint's
    forward rule re-ran the function with an argument this pass does not differentiate as a
    plain array, where without the checkpoint it is traced, and NumPy's own ndarray.dot met
    the traced other argument (probe FE #5)."""
    x = np.arange(6.0).reshape(2, 3) / 7
    y = np.array([0.3, -0.2, 0.5])
    dot = lambda x, y: x.dot(y)
    ck = checkpoint(dot)
    for got, want in zip(jacfwd(ck, argnums=(0, 1))(x, y), jacfwd(dot, argnums=(0, 1))(x, y)):
        np.testing.assert_array_equal(got, want)
    square = lambda f: lambda x, y: fnp.sum(f(x, y) ** 2)
    got = fgrad.hessian(square(ck), argnums=(0, 1))(x, y)
    want = fgrad.hessian(square(dot), argnums=(0, 1))(x, y)
    for g, w in zip(fgrad.tree_util.tree_leaves(got), fgrad.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-15)
