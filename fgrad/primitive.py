"""Registering primitives: the public `primitive` decorator and the builders of the built-ins.

A primitive is an operation fgrad differentiates as a unit, through rules you give it, instead
of through the operations inside it. Each derivative is written once; the builders make the
rest:

- `defunary(impl, derivative)`: an elementwise function from its derivative expression
  `derivative(ans, x)`; the reverse rule is `ct * derivative`, the forward rule `t * derivative`.
- `deflinear(impl, transpose)`: an operation linear in its one input, whose forward rule is the
  operation itself applied to the tangent ("the same as the impl"); `transpose` is its reverse
  rule.
- `defbilinear(impl, vjp)`: linear in each of two inputs (products, convolutions); each forward
  rule is the operation with that input replaced by its tangent.
- `defprimitive(impl, vjp, jvp)`: any rules, one per input.
- `Primitive(..., multiple_results=True)` (from `fgrad.core`) for several outputs.

Every rule receives, after the tangent (forward) or nothing (a reverse rule's maker, called
at forward time), the primitive's output and then its inputs: `(t, ans, *args, **params)` and
`(ans, *args, **params)`.

Builders register the Taylor rules that follow from what they know: a linear primitive's
coefficients are the primitive applied to each, a bilinear one's are sums of products
(`fgrad.taylor`).

Imports: `fgrad.core`, `fgrad.taylor`.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

from . import taylor
from .core import Box, NondiffPrimitive, Primitive, bind, bind_one

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class UnaryFunction(Protocol):
        """What `defunary` returns: a function of one argument that carries the primitive it
        binds as `.primitive` (for the rule tables, batching and the graph)."""

        primitive: Primitive

        def __call__(self, x: Any, /) -> Any: ...


__all__ = ["defbilinear", "deflinear", "defprimitive", "defunary", "nondiff", "primitive"]


def primitive(
    fprop: Callable[..., tuple[Any, Callable[..., Any]]] | None = None,
    *,
    jvp: Callable[..., Any] | None = None,
    name: str | None = None,
    multiple_results: bool = False,
) -> Callable[..., Any]:
    """Register a differentiable operation from its fprop (usable as a decorator).

    Parameters
    ----------
    fprop : callable
        Takes the inputs and returns `(ans, bprop)`; `bprop` is a closure over the residuals it
        needs that maps the cotangent of `ans` to a tuple with one cotangent per positional
        input (`None` for "no gradient"). Write both in `fgrad.numpy` operations so that higher
        derivatives work. Keyword arguments are static parameters, never differentiated.
    jvp : callable, optional
        `jvp(tangents, ans, *args, **params)`, the forward-mode rule (`tangents` has `None` for
        inputs with no tangent). Without it, forward mode transposes the bprop.
    name : str, optional
        The primitive's name in graphs and errors; the function's name by default.
    multiple_results : bool, default False
        `ans` is a tuple of outputs; the bprop receives a list with one cotangent per output
        (None for an output that was not used) and `jvp` returns one tangent per output.

    Returns
    -------
    callable
        The operation, differentiable in both modes and under `vmap` and `jet`; its `.primitive`
        attribute is the registered `Primitive`.

    Notes
    -----
    fgrad trusts the rule; check it with `fgrad.test_util.check_rule`.

    Examples
    --------
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

        prim = Primitive(
            name or fn.__name__, impl, fprop=fn, jvp=jvp, multiple_results=multiple_results
        )

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


def defprimitive(
    impl: Callable[..., Any],
    vjp: Callable[..., Any] | tuple[Callable[..., Any] | None, ...] | None,
    jvp: Callable[..., Any] | tuple[Callable[..., Any] | None, ...] | None,
    name: str | None = None,
) -> Primitive:
    """A built-in primitive from per-input rules (see `fgrad.core.Primitive`).

    `vjp` and `jvp` are one rule for a one-input primitive or a tuple with one per input.
    """
    vjps = vjp if type(vjp) is tuple else (vjp,)
    jvps = jvp if type(jvp) is tuple else (jvp,)
    # mypy cannot tell that a rule is never a tuple subclass, which the tests above leave wrapped
    return Primitive(name or impl.__name__, impl, vjps=vjps, jvps=jvps)  # type: ignore[arg-type]


def _as_function(prim):
    """A one-input primitive without parameters as a plain function, with the primitive as its
    `.primitive` (as `primitive` returns).

    Why a function: calling a `Primitive` object goes through Python's generic `__call__`
    slot and packs `*args, **params`, which costs about twice a plain call, and these are the
    functions that programs and their bprops apply most.
    """

    def apply(x: Any) -> Any:
        return bind_one(prim, x)

    apply.__name__ = apply.__qualname__ = prim.name
    apply.primitive = prim
    return apply


def defunary(
    impl: Callable[[Any], Any],
    derivative: Callable[[Any, Any], Any] | str | None = None,
    *,
    vjp: Callable[[Any, Any], Callable[[Any], Any]] | None = None,
    jvp: Callable[[Any, Any, Any], Any] | None = None,
    name: str | None = None,
    namespace: dict[str, Any] | None = None,
) -> UnaryFunction:
    """An elementwise primitive of one argument without parameters (sin, exp, ...), returned as
    a plain function (see `_as_function`).

    Give `derivative(ans, x)`, the derivative of `impl` at x in fgrad operations: the reverse
    rule is `ct * derivative` and the forward rule `t * derivative`, both computed when they run
    (so the bprop keeps x and ans, not the derivative). Or give `vjp` and `jvp` for a function
    whose rules are not a product with its derivative (abs, conj, real, ...).

    The derivative may also be an expression in `ans` and `x`, as a string, with the module
    whose names it uses as `namespace` (its `globals()`): it is then written into both rules
    (`_inlined_rules`), which saves the call of a derivative function in every bprop, about 5%
    of a chain of small operations (benchmarks/bench_peers.py, chain10).

    >>> import numpy as np, fgrad
    >>> cube = defunary(lambda x: x ** 3, lambda ans, x: 3.0 * x * x, name="cube")
    >>> float(fgrad.grad(cube)(2.0)), float(fgrad.jvp(cube, (2.0,), (1.0,))[1])
    (12.0, 12.0)
    >>> square = defunary(np.square, "2.0 * x", name="square", namespace={})
    >>> float(fgrad.grad(square)(3.0)), float(fgrad.jvp(square, (3.0,), (1.0,))[1])
    (6.0, 6.0)
    """
    if (derivative is None) == (vjp is None or jvp is None):
        raise ValueError("defunary: give derivative, or both vjp and jvp")
    if isinstance(derivative, str):
        if namespace is None:
            raise ValueError("defunary: a derivative given as an expression needs its namespace")
        vjp, jvp = _inlined_rules(derivative, name or impl.__name__, namespace)
    elif derivative is not None:

        def vjp(ans, x):
            return lambda ct: ct * derivative(ans, x)

        def jvp(t, ans, x):
            return t * derivative(ans, x)

    return _as_function(defprimitive(impl, vjp, jvp, name))


def _inlined_rules(expression: str, name: str, namespace: dict[str, Any]) -> tuple[Any, Any]:
    """The reverse rule `ct * (expression)` and the forward rule `t * (expression)` of an
    elementwise function, the derivative's expression written into each. Their names are looked
    up in `namespace` when a rule runs, as a function defined in that module would."""
    source = (
        f"def vjp(ans, x):\n    return lambda ct: ct * ({expression})\n"
        f"def jvp(t, ans, x):\n    return t * ({expression})\n"
    )
    rules: dict[str, Any] = {}
    # a file name inside the package, so that tracebacks and `fgrad.provenance` (which looks for
    # the user's line outside the package) read the rules as fgrad's own code
    where = os.path.join(os.path.dirname(__file__), f"<the derivative of {name}: {expression}>")
    exec(compile(source, where, "exec"), namespace, rules)
    return rules["vjp"], rules["jvp"]


def deflinear(
    impl: Callable[..., Any], transpose: Callable[..., Any], name: str | None = None
) -> Primitive:
    """A primitive linear in its one input (reshapes, sums, FFTs, ...): the forward rule is the
    primitive itself applied to the tangent, with the same parameters. `transpose(ans, x,
    **params) -> (ct -> cotangent of x)` is the reverse rule: the transposed map.

    >>> import numpy as np, fgrad
    >>> double = deflinear(lambda x: 2.0 * x, lambda ans, x: lambda ct: 2.0 * ct, name="double")
    >>> float(fgrad.grad(double)(1.0)), float(fgrad.jvp(double, (1.0,), (3.0,))[1])
    (2.0, 6.0)
    """
    prim = None

    def same(t, ans, x, /, **params):  # positional-only: a parameter may be named x
        return bind(prim, (t,), params)

    prim = defprimitive(impl, transpose, same, name)
    taylor.rules[prim] = taylor.linear_rule(prim)
    return prim


def defbilinear(
    impl: Callable[..., Any],
    vjp: tuple[Callable[..., Any] | None, Callable[..., Any] | None],
    name: str | None = None,
) -> Primitive:
    """A primitive of two inputs, linear in each (products, convolutions): the forward rule of
    each input is the primitive with that input replaced by its tangent. `vjp` is the pair of
    reverse rules.

    >>> import fgrad
    >>> mul = defbilinear(lambda x, y: x * y, (lambda ans, x, y: lambda ct: ct * y,
    ...                                        lambda ans, x, y: lambda ct: x * ct), name="mul")
    >>> fgrad.jvp(mul, (2.0, 3.0), (1.0, 1.0))[1]
    np.float64(5.0)
    """
    prim = None

    def jvp_x(t, ans, x, y, /, **params):
        return bind(prim, (t, y), params)

    def jvp_y(t, ans, x, y, /, **params):
        return bind(prim, (x, t), params)

    prim = defprimitive(impl, vjp, (jvp_x, jvp_y), name)
    taylor.rules[prim] = taylor.bilinear_rule(prim)
    return prim


def nondiff(impl: Callable[..., Any], name: str | None = None) -> NondiffPrimitive:
    """A built-in with no derivative: its result is a constant at every level."""
    return NondiffPrimitive(name or impl.__name__, impl)
