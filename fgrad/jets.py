"""Taylor mode for users: `jet`, `derivative` and `laplacian`, on `fgrad.taylor`'s level.

`jet` has the signature and series convention of `jax.experimental.jet.jet`: the series given
and returned are derivatives of the path (x'(0), x''(0), ...), not divided by factorials. The
level works with normalized coefficients (divided by k!), converted here.

Imports: `fgrad.core`, `fgrad.taylor`, `fgrad.api` (its checks of what the user passed),
`fgrad.vmapping`, `fgrad.tree_util`, `fgrad.numpy`.
"""

from __future__ import annotations

import fractions
import functools
import math
import operator
from typing import TYPE_CHECKING

import numpy as _np

from . import numpy as fnp
from .api import (
    _check_callable,
    _check_float_leaves,
    _check_like,
    _check_outputs,
    _describe,
    _fresh,
    _fresh_tree,
    _leaf_labels,
    _named,
    _numpy_scalar,
    _own_aux,
    _strip,
)
from .boundary import api_boundary
from .core import Box, dtype_of, shape_of, zeros_like_value
from .taylor import TaylorLevel
from .tree_util import structure_difference, tree_flatten, tree_map, tree_unflatten
from .vmapping import vmap

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .tree_util import PyTree

__all__ = ["derivative", "jet", "laplacian"]


def _run(fun, leaves, in_tree, coefficients, order, collapse=None, who="jet"):
    """`fun` on a Taylor level of `order`: input leaf i has the normalized coefficients
    `coefficients[i]`. Returns the output's leaves, their coefficients (zeros where none) and
    its structure."""
    with TaylorLevel(order, collapse) as level:
        args = [Box(p, level, tuple(c)) for p, c in zip(leaves, coefficients)]
        out = fun(*tree_unflatten(in_tree, args))
    out_leaves, out_tree = tree_flatten(out)
    _check_outputs(out_leaves, who)
    values, series = [], []
    for o in out_leaves:
        s = _own_aux(o, level)
        value = _strip(o, level)
        values.append(value)
        zero = None
        terms = []
        for k in range(order):
            c = None if s is None else s[k]
            if c is None:
                zero = zeros_like_value(value) if zero is None else zero
                c = zero
            terms.append(c)
        series.append(terms)
    return values, series, out_tree


@api_boundary
def jet(
    fun: Callable[..., Any], primals: Sequence[PyTree], series: Sequence[Sequence[PyTree]]
) -> tuple[PyTree, PyTree]:
    """Taylor mode: `fun` on truncated Taylor series of its arguments, giving its output's series.

    Each argument follows the path x(t) = x0 + x1 t + x2 t^2/2! + ... + xK t^K/K!; `jet`
    returns the output's value and its derivatives along the path up to order K, in one pass.

    Parameters
    ----------
    fun : callable
        A function of arrays or pytrees of arrays.
    primals : tuple
        One entry per argument of `fun` (each a pytree of arrays): x0.
    series : tuple
        One entry per argument: the list of its K terms [x1, ..., xK], each shaped like the
        argument. The terms are derivatives of the path, not divided by factorials, as in
        `jax.experimental.jet.jet`.

    Returns
    -------
    primal_out : array or pytree
        `fun(*primals)`.
    series_out : list or pytree of lists
        The K derivatives of the output along the path, for each leaf of the output.

    Notes
    -----
    Every primitive has a Taylor rule: common ones propagate the series directly (time quadratic
    in K), the others through a general rule derived from their forward rule (cubic in K). `jet`
    composes with `grad`, `vmap` and the other transforms.

    At a pole (x**-1, x**2.5, xlogy(x, x) at x0 = 0) the derivatives after the first
    infinite one may be nan where a term of the series is a zero given as a number: that term
    multiplies an infinity (0 * inf = nan, IEEE's), as in nested `jvp` along the same path,
    f(t + 0.0 * t**2): `jet(lambda x: x**-1.0, (0.0,), ((1.0, 0.0),))` gives the derivatives
    [-inf, nan]. `derivative`, whose path has no terms past the first, gives the infinities
    nested `jvp` of f(t) gives: `derivative(lambda x: x**-1.0, 2)(0.0)` is inf.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> y0, (y1, y2, y3) = fgrad.jet(fnp.exp, (0.0,), ((1.0, 0.0, 0.0),))
    >>> float(y0), float(y1), float(y2), float(y3)
    (1.0, 1.0, 1.0, 1.0)
    """
    _check_callable(fun, "jet")
    for name, val in (("primals", primals), ("series", series)):
        if not isinstance(val, (tuple, list)):
            raise TypeError(
                f"jet: {name} must be a tuple (or list) with one entry per argument, like "
                f"jet(f, (x,), ((x1, x2),)); got {type(val).__name__}"
            )
    if len(series) != len(primals):
        raise ValueError(
            f"jet: series has {len(series)} entries but primals has {len(primals)}; give one "
            "list of terms per argument"
        )
    for i, terms in enumerate(series):
        if not isinstance(terms, (tuple, list)):
            raise TypeError(
                f"jet: series[{i}] must be a list of terms [x1, x2, ...] for argument {i}, got "
                f"{type(terms).__name__}; for one term write (x1,)"
            )
    orders = sorted({len(terms) for terms in series})
    if len(orders) > 1:
        lengths = ", ".join(f"argument {i}: {len(t)}" for i, t in enumerate(series))
        raise ValueError(
            f"jet: the series of the arguments have different numbers of terms ({lengths}); "
            "give every argument the same number of terms, padding with zeros"
        )
    order = orders[0] if orders else 0
    p_leaves, p_tree = tree_flatten(tuple(primals))
    _check_float_leaves(p_leaves, lambda: _leaf_labels(primals, range(len(primals))), "jet")
    p_leaves = [_numpy_scalar(p) for p in p_leaves]
    step = _step(order, p_leaves, "jet")
    # given[leaf][k]: term k+1 of that leaf, as given
    given: list[list[Any]] = [[] for _ in p_leaves]
    for k in range(order):
        term = tuple(leaf_terms[k] for leaf_terms in series)
        t_leaves, t_tree = tree_flatten(term)
        if t_tree != p_tree:
            where = structure_difference(term, tuple(primals))
            raise ValueError(
                f"jet: term {k + 1} of the series does not match the primals: "
                f"{where + '; ' if where else ''}it has structure {t_tree} but primals have "
                f"structure {p_tree}; give each term shaped like its argument"
            )
        for i, (t, p) in enumerate(zip(t_leaves, p_leaves)):
            _check_like(t, p, f"jet: term {k + 1} of leaf {i}", "primal")
            given[i].append(_numpy_scalar(t, p))
    if order == 0:
        out = _fresh_tree(fun(*tree_unflatten(p_tree, p_leaves)), p_leaves)
        return out, tree_map(lambda _: [], out)
    coefficients = _normalized(given, p_leaves, step)
    values, out_series, out_tree = _run(fun, p_leaves, p_tree, coefficients, order)
    # a float64 input computed in float32 inside: the outputs need the step too (or refuse).
    # (`_step` gives 1 or the one h of this order, whatever the dtype that needs it: a
    # float16 input computed in float64 keeps its h.)
    needed = _step(order, values, "jet", "output of the function")
    if step == 1.0 and needed != 1.0:
        step = needed
        coefficients = _normalized(given, p_leaves, step)
        values, out_series, out_tree = _run(fun, p_leaves, p_tree, coefficients, order)
    # one list per output leaf
    per_leaf = [
        [
            c
            if k == 0 and step == 1.0
            else c * _np.asarray(1 / _power_over_factorial(step, k + 1), dtype_of(c))[()]
            for k, c in enumerate(s)
        ]
        for s in out_series
    ]
    # arrays of the caller's own, as jvp's: the identity's value is the primal given, a linear
    # function's first term the term given, and two outputs may share one term
    given = p_leaves + [t for terms in series for t in tree_flatten(tuple(terms))[0]]
    fresh = _fresh(values + [c for s in per_leaf for c in s], given)
    values, flat_series = fresh[: len(values)], iter(fresh[len(values) :])
    per_leaf = [[next(flat_series) for _ in s] for s in per_leaf]
    return tree_unflatten(out_tree, values), tree_unflatten(out_tree, per_leaf)


def _normalized(terms, primals, step):
    """The level's coefficients of the terms along x + step t: term k+1 times
    step**(k+1) / (k+1)!, in its primal's dtype."""
    return [
        [
            t
            if k == 0 and step == 1.0
            else t * _np.asarray(_power_over_factorial(step, k + 1), dtype_of(p))[()]
            for k, t in enumerate(leaf_terms)
        ]
        for leaf_terms, p in zip(terms, primals)
    ]


def _step(order, leaves, who, what="input") -> float:
    """The step h of the path x + h t along which the coefficients are taken: 1, unless the
    normalized coefficients of order k (h**k / k! times the k-th derivative) would leave the
    range of a leaf's precision at h = 1 (1/9! is below float16's smallest normal number,
    9! above its largest; 1/35! below float32's): then h = (order!)**(1/order), with which
    h**k / k! stays within about e**h of 1 for every k up to the order. The terms are scaled
    back by k! / h**k at the end (exp's 9th derivative in float16 was inf: 1/9! lost its
    digits and 9! overflowed). h is rounded to 11 significant bits, so that it is exact in
    float16, float32 and float64: the path x + h t and the scale k! / h**k have the same h
    (rounded in the path only, it cost k eps: 1.4e-3 at float16's order 8). `leaves` are the
    inputs (`what`), or the outputs: a float64 input computed in float32 needs the step too."""
    for p in leaves:
        dt = _np.dtype(dtype_of(p))
        if _needs_step(order, dt):
            _check_in_range(order, dt, who, what)
            mantissa, exponent = math.frexp(math.exp(math.lgamma(order + 1) / order))
            return math.ldexp(round(math.ldexp(mantissa, 11)), exponent - 11)
    return 1.0


@functools.lru_cache(maxsize=256)
def _needs_step(order: int, dt: _np.dtype) -> bool:
    """Whether 1/order! leaves dt's normal range (`_step`), kept: `derivative` asks it of its
    input and its outputs at every call, and NumPy's finfo took a fifth of an 8th derivative."""
    return dt.kind in "fc" and math.lgamma(order + 1) > -math.log(_np.finfo(dt).tiny) - 2.0


def _fits(order, dt) -> bool:
    """Whether exp's normalized coefficients h**k / k! at `_step`'s h, whose largest is about
    e**h / sqrt(2 pi h), stay below dt's largest number (an entire function's intermediate
    coefficients do at most that)."""
    h = math.exp(math.lgamma(order + 1) / order)
    return h - 0.5 * math.log(2 * math.pi * h) <= math.log(_np.finfo(dt).max)


def _check_in_range(order, dt, who, what="input"):
    """Refuse an order whose intermediate coefficients leave dt's range (they were inf, and
    the derivative an inf or nan where the answer is an ordinary number)."""
    if _fits(order, dt):
        return
    largest = order
    while not _fits(largest, dt):
        largest -= 1
    remedy = "pass the input as float64" if what == "input" else "compute in float64"
    raise ValueError(
        f"{who}: order {order} is beyond what a {dt} {what} can carry (its Taylor coefficients "
        f"would overflow; the highest order for {dt} is {largest}); {remedy}, or ask for a "
        "lower order"
    )


def _power_over_factorial(step, k) -> float:
    """step**k / k!, the factor of the k-th normalized coefficient. Near 1 for `_step`'s h, but
    from k = 171 on step**k and k! each exceed a float64 (an OverflowError in Python's float
    arithmetic): there the ratio is taken exactly, in rationals, and rounded once."""
    try:
        return step**k / math.factorial(k)
    except OverflowError:
        return float(fractions.Fraction(step) ** k / math.factorial(k))


def _check_order(order, who):
    if isinstance(order, bool) or not isinstance(order, (int, _np.integer)) or order < 0:
        raise TypeError(
            f"{who}: order must be a non-negative int, got {order!r} of type "
            f"{type(order).__name__}; pass order=2 for the second derivative"
        )
    return operator.index(order)


def _check_argnum(argnums, nargs, who):
    if isinstance(argnums, bool) or not isinstance(argnums, (int, _np.integer)):
        raise TypeError(
            f"{who}: argnums must be an int (one argument), got {argnums!r} of type "
            f"{type(argnums).__name__}; for several arguments take one at a time"
        )
    if not -nargs <= argnums < nargs:
        raise ValueError(
            f"{who}: argnums {argnums} is out of range: the function was called with {nargs} "
            f"positional argument{'s' if nargs != 1 else ''}; pass the value to "
            "differentiate positionally"
        )
    return operator.index(argnums) % nargs


def _differentiated_argument(args, argnums, who, what):
    """The position and the value (checked: a float) of the argument to differentiate."""
    if not args:
        raise ValueError(
            f"{who}: the function was called with no positional arguments; pass the {what} "
            "to differentiate positionally"
        )
    i = _check_argnum(argnums, len(args), who)
    x = args[i]
    _check_float_leaves([x], lambda: [f"argument {i}"], who)
    return i, _numpy_scalar(_np.asarray(x) if isinstance(x, (list, tuple)) else x)


def _of_one_argument(fun, args, kwargs, i):
    """fun as a function of its argument i, the others fixed."""

    def of_x(x):
        return fun(*args[:i], x, *args[i + 1 :], **kwargs)

    return of_x


def derivative(fun: Callable[..., Any], order: int, argnums: int = 0) -> Callable[..., Any]:
    """The `order`-th derivative of `fun` with respect to a scalar argument, by Taylor mode.

    Parameters
    ----------
    fun : callable
        A function of a scalar argument (others held fixed); outputs may have any shape, each
        element differentiated.
    order : int
        The order k >= 1 of the derivative.
    argnums : int, default 0
        Which positional argument is the scalar variable.

    Returns
    -------
    callable
        A function of the same arguments returning d^k fun / dx^k, shaped like the output.

    Notes
    -----
    One pass of `order` coefficients, where nested `grad` would trace a graph that grows about
    threefold per order: the 20th derivative costs about what a few first derivatives do.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.derivative(fnp.sin, 3)(0.0))  # -cos(0)
    -1.0
    >>> print(f"{fgrad.derivative(fnp.tanh, 20)(0.5):.6e}")  # mpmath: 2.517500890802245e13
    2.517501e+13
    """
    _check_callable(fun, "derivative")
    order = _check_order(order, "derivative")
    who = "derivative"

    def derivative_fun(*args, **kwargs):
        i, x = _differentiated_argument(args, argnums, who, "scalar")
        if shape_of(x) != ():
            raise ValueError(
                f"{who}: argument {i} must be a scalar (the derivative is with respect to one "
                f"number), got an array with {_describe(x)}; for a directional derivative "
                "use fgrad.jet with the direction as its first term"
            )
        if order == 0:
            return fun(*args, **kwargs)
        of_x = _of_one_argument(fun, args, kwargs, i)
        in_tree = tree_flatten((x,))[1]

        def along(step):
            first = _np.asarray(step, dtype_of(x))[()]  # x + step t
            return _run(of_x, [x], in_tree, [[first] + [None] * (order - 1)], order, who=who)

        step = _step(order, [x], who)
        values, series, out_tree = along(step)
        # a float64 input computed in float32 inside: the outputs need the step too (or refuse)
        needed = _step(order, values, who, "output of the function")
        if step == 1.0 and needed != 1.0:
            step = needed
            values, series, out_tree = along(step)
        scale = 1 / _power_over_factorial(step, order)
        return tree_unflatten(
            out_tree, [s[-1] * _np.asarray(scale, dtype_of(s[-1]))[()] for s in series]
        )

    return _named(derivative_fun, fun, f"derivative[{order}]")


def laplacian(fun: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """The Laplacian of `fun` with respect to an array argument: the trace of its Hessian.

    Parameters
    ----------
    fun : callable
        A function of an array x (others held fixed); outputs may have any shape.
    argnums : int, default 0
        Which positional argument is x.

    Returns
    -------
    callable
        A function returning sum_i d2 fun / dx_i2, one for each element of the output.

    Notes
    -----
    Computed by collapsed Taylor mode (the "forward Laplacian"): one pass that carries the
    first-order coefficients of every direction x_i (batched, as `vmap` does) and only the sum
    of the second-order ones, where a Hessian computes every mixed derivative.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sum(x ** 3)
    >>> fgrad.laplacian(f)(fnp.array([1.0, 2.0]))  # 6 x_1 + 6 x_2
    np.float64(18.0)
    """
    _check_callable(fun, "laplacian")
    who = "laplacian"

    def laplacian_fun(*args, **kwargs):
        i, x = _differentiated_argument(args, argnums, who, "array")
        shape, dtype = shape_of(x), dtype_of(x)
        size = math.prod(shape)
        directions = _np.eye(size, dtype=dtype).reshape((size, *shape))
        of_x = _of_one_argument(fun, args, kwargs, i)

        def along(direction):
            level = direction.level if type(direction) is Box else None

            def mean_over_directions(c):
                if type(c) is Box and c.level is level:
                    rows = c.value
                    if type(rows) is _np.ndarray:  # plain rows: NumPy's mean, without dispatch
                        return rows.mean(axis=c.aux)
                    return fnp.mean(rows, axis=c.aux)
                return c

            zero = zeros_like_value(x)
            _, series, out_tree = _run(
                of_x, [x], tree_flatten((x,))[1], [[direction, zero]], 2, mean_over_directions, who
            )
            return tree_unflatten(out_tree, [s[1] for s in series])

        if size == 0:
            out = of_x(x)
            return tree_map(lambda o: zeros_like_value(o), out)
        means = vmap(along, out_axes=None)(directions)
        two_d = 2.0 * size
        return tree_map(lambda m: m * _np.asarray(two_d, dtype_of(m))[()], means)

    return _named(laplacian_fun, fun, "laplacian")
