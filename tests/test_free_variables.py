"""Free variables: a function transformed inside another may read values being differentiated
by the outer transform without being given them, through a closure cell, a global, a default
argument or a bound method's `self`. The derivative with respect to them is right at every
order and in every pair of modes (`check_grads` to order 2, forward and reverse, of the outer
function), for every inner transform, `checkpoint` included.

`custom_vjp` and `custom_jvp` functions give no rule for what their rules read: a value of an
outer transform is differentiated through the rules' operations, and a value being
differentiated by the transform that applies the rule raises a TypeError naming it, through
each route (never a silent zero).
"""

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
    jvp,
    linearize,
    vjp,
)
from fgrad.test_util import check_grads

X = np.array([0.3, -0.7])


def body(a, x):
    return fnp.sin(a * x) * a + fnp.exp(0.5 * a * x)


# Each route makes g(x) = body(a, x) where g reads `a` without taking it as an argument.
A_GLOBAL = None


def _global_g(x):
    return body(A_GLOBAL, x)


class _Holder:
    def __init__(self, a):
        self.a = a

    def g(self, x):
        return body(self.a, x)


def via_closure(a):
    return lambda x: body(a, x)


def via_global(a):
    global A_GLOBAL
    A_GLOBAL = a
    return _global_g


def via_default(a):
    def g(x, a=a):
        return body(a, x)

    return g


def via_self(a):
    return _Holder(a).g


ROUTES = {"closure": via_closure, "global": via_global, "default": via_default, "self": via_self}

# What the inner transform does with g at x; each gives an array depending on a.
INNERS = {
    "none": lambda g, x: g(x),
    "checkpoint": lambda g, x: checkpoint(g)(x),
    "grad": lambda g, x: grad(lambda x: fnp.sum(g(x)))(x),
    "vjp": lambda g, x: vjp(g, x)[1](fnp.ones(2))[0],
    "jvp": lambda g, x: jvp(g, (x,), (np.array([1.0, -2.0]),))[1],
    "linearize": lambda g, x: linearize(g, x)[1](np.array([1.0, -2.0])),
    "jacfwd": lambda g, x: jacfwd(g)(x),
    "jacrev": lambda g, x: jacrev(g)(x),
    "hessian": lambda g, x: hessian(lambda x: fnp.sum(g(x)))(x),
    "checkpoint-in-grad": lambda g, x: grad(lambda x: fnp.sum(checkpoint(g)(x) ** 2))(x),
    # a capture inside a capture: the inner one's reads are the outer one's too
    "checkpoint-in-checkpoint": lambda g, x: checkpoint(lambda x: checkpoint(g)(x))(x),
    "checkpoint-in-checkpoint-no-args": lambda g, x: checkpoint(lambda: checkpoint(g)(x))(),
    "checkpoint-of-jit": lambda g, x: checkpoint(fgrad.jit(g))(x),
    "checkpoint-of-jit-of-checkpoint": lambda g, x: checkpoint(fgrad.jit(checkpoint(g)))(x),
    "vmap-in-checkpoint": lambda g, x: checkpoint(lambda x: fgrad.vmap(g)(fnp.stack([x, -x])))(x),
    # the vmapped row read from the checkpointed function's closure
    "checkpoint-in-vmap": lambda g, x: fgrad.vmap(lambda r: checkpoint(lambda u: g(u * r))(x))(
        np.array([1.0, 2.0])
    ),
}


@pytest.mark.parametrize("inner", sorted(INNERS))
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_outer_derivatives_of_what_an_inner_function_reads(route, inner):
    def outer(a):
        return INNERS[inner](ROUTES[route](a), X)

    check_grads(outer, (0.8,), order=2, modes=("fwd", "rev"))


def test_checkpoint_of_a_function_reading_a_value_of_its_own_level():
    """The argument and the free variable differentiated by the same transform."""

    def f(a, x):
        return fnp.sum(checkpoint(via_closure(a))(x) * x)

    ref = lambda a, x: fnp.sum(body(a, x) * x)
    for argnums in (0, 1, (0, 1)):
        got, want = grad(f, argnums)(0.8, X), grad(ref, argnums)(0.8, X)
        for g, w in zip(*(([got], [want]) if argnums != (0, 1) else (got, want))):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    check_grads(f, (0.8, X), order=2, modes=("fwd", "rev"))


def test_checkpoint_returning_its_free_variable_and_a_constant():
    a0 = 0.8
    f = lambda a: checkpoint(lambda x: (a, x * 2.0, 3.0))(1.5)
    out = f(a0)
    assert out[0] == a0 and out[1] == 3.0 and out[2] == 3.0
    assert grad(lambda a: f(a)[0] * 2.0)(a0) == 2.0
    assert jvp(lambda a: f(a)[0], (a0,), (1.0,))[1] == 1.0


def test_checkpoint_reruns_once_per_backward_pass_with_free_variables():
    calls = []

    def outer(a):
        def g(x):
            calls.append(1)
            return fnp.tanh(a * x)

        return fnp.sum(checkpoint(g)(X))

    grad(outer)(0.8)
    assert len(calls) == 2  # the forward pass, and once more in the bprop


# --- custom rules: the rule names what it reads from the level applying it ------------------------


def _custom_vjp_reading(route_a):
    """A custom_vjp function of x whose fun, fwd and bwd read `a` by the route given."""

    @custom_vjp
    def f(x):
        return route_a()(x)

    f.defvjp(lambda x: (route_a()(x), x), lambda x, ct: (ct * 0.0,))
    return f


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_custom_vjp_reading_a_value_of_its_own_level_is_refused_by_name(route):
    names = {
        "closure": "'a'",
        "global": "global 'A_GLOBAL'",
        "default": "default argument 'a'",
        "self": "self.a",
    }

    def f(a, x):
        g = ROUTES[route](a)
        h = custom_vjp(lambda x: g(x))
        h.defvjp(lambda x: (g(x), x), lambda x, ct: (ct,))
        return fnp.sum(h(x))

    with pytest.raises(TypeError, match=f"reads .*{names[route]}|depends on a value being"):
        grad(f, argnums=(0, 1))(0.8, X)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_custom_jvp_reading_a_value_of_its_own_level_is_refused(route):
    def f(a, x):
        g = ROUTES[route](a)
        h = custom_jvp(lambda x: g(x))
        h.defjvp(lambda p, t: (g(p[0]), t[0]))
        return fnp.sum(h(x))

    for transform in (
        lambda: grad(f, argnums=(0, 1))(0.8, X),
        lambda: jvp(f, (0.8, X), (1.0, np.ones(2))),
    ):
        with pytest.raises(TypeError, match="reads|depends on a value being"):
            transform()


def test_custom_vjp_reading_a_value_of_an_outer_level_differentiates_its_rules():
    """fwd and bwd reading `a` of the outer transform: the outer derivative is that of the
    rules' operations, here the true derivative since the rule is right."""

    def inner_grad(a):
        @custom_vjp
        def f(x):
            return fnp.sin(a * x)

        f.defvjp(lambda x: (f(x), x), lambda x, ct: (ct * a * fnp.cos(a * x),))
        return grad(lambda x: fnp.sum(f(x)))(X)

    ref = lambda a: a * fnp.cos(a * X)
    np.testing.assert_allclose(jacfwd(inner_grad)(0.8), jacfwd(ref)(0.8), rtol=1e-12)
    np.testing.assert_allclose(jacrev(inner_grad)(0.8), jacrev(ref)(0.8), rtol=1e-12)


def test_no_module_reads_local_variables_off_the_stack():
    """Provenance is data: nothing in fgrad reads another function's locals (renaming a local
    variable of the core must break nothing)."""
    import pathlib

    root = pathlib.Path(fgrad.__file__).parent
    offenders = [
        str(p.relative_to(root)) for p in root.rglob("*.py") if "f_locals" in p.read_text()
    ]
    assert offenders == ["graph.py"]  # it names constants by your code's variables
    text = (root / "graph.py").read_text()
    assert text.count("f_locals") == 1 and "scope = frame.f_locals" in text


def test_watching_restores_no_state():
    from fgrad import core, provenance

    class Count(provenance.Watcher):
        n = 0

        def value(self, prim, args, params, ans):
            Count.n += 1

    with provenance.watching(Count()):
        grad(lambda x: fnp.sum(fnp.sin(x)))(X)
    assert Count.n > 0 and core.watch is None and core.phases() == []
    types.SimpleNamespace()  # keep the import used


# --- captures inside captures: closed forms at every order ----------------------------------------
# A checkpoint, jit or solve run while a checkpoint finds (or replaces) its free variables: what
# the inner one reads from its closure is the outer one's free variable too, and a jit's
# record may not keep what the checkpoint read it as. Each case is f(a), checked by grad, jvp,
# the second derivative both ways and vmap(grad) against its closed form.


def _newton(f, x):
    for _ in range(40):
        x = x - f(x) / grad(f)(x)
    return x


def _root_in_checkpoint(a):  # x^2 = 1.3 a
    f = lambda y: fgrad.custom_root(lambda x: x * x - a * y, 1.0, _newton, lambda g, r: r / g(1.0))
    return checkpoint(f)(1.3)


def _solve_in_checkpoint(a):  # a v = 1.3
    f = lambda y: fgrad.custom_linear_solve(
        lambda v: v * a, y, lambda mv, b: b / mv(1.0), symmetric=True
    )
    return checkpoint(f)(1.3)


def _minimize_in_checkpoint(a):  # argmin (x - a)^2 = a, squared
    from fgrad.scipy.optimize import minimize

    f = lambda: minimize(lambda x: fnp.sum((x - a) ** 2), np.array([0.0])).x[0] ** 2
    return checkpoint(lambda: checkpoint(f)())()


NESTED = {
    # name: (f, f', f'')
    "checkpoint-in-checkpoint": (
        lambda a: checkpoint(lambda x: checkpoint(lambda y: a * y)(x))(1.3),
        lambda a: 1.3,
        lambda a: 0.0,
    ),
    "checkpoint-in-checkpoint-both-read": (
        lambda a: checkpoint(lambda x: a * checkpoint(lambda y: a * y)(x))(1.3),
        lambda a: 2.6 * a,
        lambda a: 2.6,
    ),
    "checkpoint-in-checkpoint-argument": (
        lambda a: checkpoint(lambda: checkpoint(lambda y: fnp.sin(y))(a))(),
        np.cos,
        lambda a: -np.sin(a),
    ),
    "three-deep": (
        lambda a: checkpoint(lambda: checkpoint(lambda: checkpoint(lambda: a**3)())())(),
        lambda a: 3 * a**2,
        lambda a: 6 * a,
    ),
    "checkpoint-of-jit": (
        lambda a: checkpoint(fgrad.jit(lambda u: a * u))(1.3) ** 2,
        lambda a: 2 * 1.3**2 * a,
        lambda a: 2 * 1.3**2,
    ),
    "checkpoint-jit-checkpoint": (
        lambda a: checkpoint(fgrad.jit(lambda u: checkpoint(lambda: fnp.exp(a * u))()))(1.3),
        lambda a: 1.3 * np.exp(1.3 * a),
        lambda a: 1.69 * np.exp(1.3 * a),
    ),
    "custom_root-in-checkpoint": (
        _root_in_checkpoint,
        lambda a: 0.5 * 1.3 / np.sqrt(1.3 * a),
        lambda a: -0.25 * 1.3**2 / (1.3 * a) ** 1.5,
    ),
    "custom_linear_solve-in-checkpoint": (
        _solve_in_checkpoint,
        lambda a: -1.3 / a**2,
        lambda a: 2.6 / a**3,
    ),
    "minimize-in-checkpoint-in-checkpoint": (
        _minimize_in_checkpoint,
        lambda a: 2 * a,
        lambda a: 2.0,
    ),
    "custom_jvp-in-checkpoint-argument": (
        lambda a: checkpoint(lambda: _custom_square(a))(),
        lambda a: 2 * a,
        lambda a: 2.0,
    ),
}


@custom_jvp
def _custom_square(x):
    return x * x


_custom_square.defjvp(lambda p, t: (p[0] * p[0], 2 * p[0] * t[0]))


@pytest.mark.parametrize("case", sorted(NESTED))
def test_captures_inside_captures_against_closed_forms(case):
    f, df, d2f = NESTED[case]
    a = 0.5
    np.testing.assert_allclose(grad(f)(a), df(a), rtol=1e-9)
    np.testing.assert_allclose(jvp(f, (a,), (1.0,))[1], df(a), rtol=1e-9)
    np.testing.assert_allclose(hessian(f)(a), d2f(a), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(jacfwd(grad(f))(a), d2f(a), rtol=1e-8, atol=1e-12)
    rows = np.array([0.3, 0.5])
    np.testing.assert_allclose(fgrad.vmap(grad(f))(rows), [df(r) for r in rows], rtol=1e-9)


def test_checkpoint_under_vmap_reading_the_row_from_its_closure():
    """sum over rows r of sin(1.3 a r): the checkpoint's function reads the row of a vmap
    inside the differentiating transform from its closure."""
    r = np.array([1.0, 2.0])
    h = lambda a: fnp.sum(fgrad.vmap(lambda ri: checkpoint(lambda u: fnp.sin(a * u * ri))(1.3))(r))
    a = 0.4
    np.testing.assert_allclose(h(a), np.sum(np.sin(1.3 * a * r)), rtol=1e-14)
    want = np.sum(1.3 * r * np.cos(1.3 * a * r))
    np.testing.assert_allclose(grad(h)(a), want, rtol=1e-12)
    np.testing.assert_allclose(jvp(h, (a,), (1.0,))[1], want, rtol=1e-12)
    np.testing.assert_allclose(hessian(h)(a), -np.sum((1.3 * r) ** 2 * np.sin(1.3 * a * r)))
    # and with the vmap outside the grad
    g = lambda ri: grad(lambda a: checkpoint(lambda u: fnp.sin(a * u * ri))(1.3))(a)
    np.testing.assert_allclose(fgrad.vmap(g)(r), 1.3 * r * np.cos(1.3 * a * r), rtol=1e-12)


def test_scipy_solver_in_checkpoint_closing_over_a_differentiated_value_is_refused():
    """odeint and quad refuse a func closing over a value being differentiated; inside a
    checkpoint that value is the checkpoint's free variable (it gave derivative 0)."""
    from fgrad.scipy.integrate import odeint, quad

    ts = np.array([0.0, 1.0])
    f = lambda a: checkpoint(lambda y0: odeint(lambda y, t: -a * y, y0, ts)[-1])(np.ones(1))[0]
    g = lambda a: checkpoint(lambda: quad(lambda x: a * x, 0.0, 1.0)[0])()
    for h in (f, g):
        for transform in (grad(h), lambda a: jvp(h, (a,), (1.0,))):
            with pytest.raises(TypeError, match="closes over a value being differentiated"):
                transform(0.5)
