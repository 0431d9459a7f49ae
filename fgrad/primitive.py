"""Registering primitives: the public `primitive` decorator and the builders of the built-ins.

A primitive is an operation fgrad differentiates as a unit, through rules you give it, instead
of through the operations inside it. Imports: `fgrad.core` only.
"""

import functools

from .core import Box, NondiffPrimitive, Primitive, bind, bind_one

__all__ = ["primitive", "defprimitive", "defunary", "nondiff"]


def primitive(fprop=None, *, jvp=None, name=None):
    """Register a differentiable operation from its fprop.

    The fprop takes the inputs and returns `(ans, bprop)`; `bprop` is a closure over the
    residuals it needs that maps the cotangent of `ans` to a tuple with one cotangent per
    positional input (`None` for "no gradient"). Write both in `fgrad.numpy` operations so that
    higher derivatives work. Keyword arguments are static parameters, never differentiated.

    `jvp(tangents, ans, *args, **params)`, optional, is the forward-mode rule (`tangents` has
    `None` for inputs with no tangent). Without it, forward mode transposes the bprop.

    >>> import fgrad, fgrad.numpy as fnp
    >>> @fgrad.primitive
    ... def logsumexp(x):
    ...     m = fnp.max(x)
    ...     ans = m + fnp.log(fnp.sum(fnp.exp(x - m)))
    ...     return ans, lambda ct: (ct * fnp.exp(x - ans),)
    >>> g = fgrad.grad(logsumexp)(fnp.array([0.0, 1000.0]))
    >>> [round(float(v), 6) for v in g]
    [0.0, 1.0]
    """

    def register(fn):
        def impl(*args, **params):
            return fn(*args, **params)[0]

        prim = Primitive(name or fn.__name__, impl, fprop=fn, jvp=jvp)

        @functools.wraps(fn)
        def apply(*args, **params):
            for key, value in params.items():
                if type(value) is Box:
                    raise TypeError(
                        f"{prim.name}: keyword argument {key!r} is a traced value; keyword "
                        "arguments of a primitive are static parameters and are not "
                        "differentiated. Pass it positionally to differentiate it."
                    )
            return bind(prim, args, params)

        apply.primitive = prim
        return apply

    return register(fprop) if fprop is not None else register


def defprimitive(impl, vjp, jvp, name=None):
    """A built-in primitive from per-input rules (see `fgrad.core.Primitive`).

    `vjp` and `jvp` are one rule for a one-input primitive or a tuple with one per input.
    """
    vjps = vjp if type(vjp) is tuple else (vjp,)
    jvps = jvp if type(jvp) is tuple else (jvp,)
    return Primitive(name or impl.__name__, impl, vjps=vjps, jvps=jvps)


def defunary(impl, vjp, jvp, name=None):
    """A built-in primitive of one argument without parameters (sin, exp, ...), returned as a
    plain function with the primitive as its `.primitive` (as `primitive` returns).

    Why a function: calling a `Primitive` object goes through Python's generic `__call__`
    slot and packs `*args, **params`, which costs about twice a plain call, and these are the
    functions that programs and their bprops apply most.
    """
    prim = defprimitive(impl, vjp, jvp, name)

    def apply(x):
        return bind_one(prim, x)

    apply.__name__ = apply.__qualname__ = prim.name
    apply.primitive = prim
    return apply


def nondiff(impl, name=None):
    """A built-in with no derivative: its result is a constant at every level."""
    return NondiffPrimitive(name or impl.__name__, impl)
