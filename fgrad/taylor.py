"""Taylor mode, `jet`'s level: each box carries the Taylor coefficients of its value's path.

A `TaylorLevel` of order K propagates truncated power series. Its box is
`Box(x0, level, (x1, ..., xK))`: the value and the *normalized* coefficients of a path
x(t) = x0 + x1 t + ... + xK t^K through it (x_k is the k-th derivative of the path divided by
k!; None stands for a zero coefficient). Normalized coefficients keep the scale of the values
(the derivatives of tanh at order 20 are near 1e17, their normalized coefficients below 1), so
order 20 and beyond neither overflows nor loses digits; `fgrad.jets` converts at the edge.

A primitive applied to such boxes is processed by its Taylor rule, kept in `rules` and
registered beside the primitive's other rules by `fgrad.primitive.register_rules`:

    rule(primals, series, **params) -> (ans, out_series)

`primals` are the values under this level's boxes (they may be boxes of outer levels: rules
apply fgrad operations, so outer levels trace them); `series[i]` is the tuple of K coefficients
of input i, or None for an input that is constant here. The rule returns the primitive's value
and the K coefficients of its output (a tuple; None for all zero); a primitive with several
outputs returns a tuple of values and a tuple of coefficient tuples. Builders in this module
make the common rules: `linear_rule`, `bilinear_rule`, and the series arithmetic the
elementwise rules are written with (`cauchy`, `integrate`).

The general rule
----------------
A primitive without a rule of its own is processed by `general_rule`, built from its forward
rule: along the path, y'(t) = J(x(t)) x'(t). Its coefficient of t^(k-1) needs x and y up to
order k-1 only, so y is found order by order: for k = 1..K the forward rule is evaluated on
series of order k-1 (a fresh level), and y_k is its (k-1)-th coefficient divided by k. That is
right for every primitive whose forward rule is written in fgrad operations (every one), at a
cost cubic in K where the direct rules are quadratic.

Collapsed series
----------------
For the Laplacian (`fgrad.jets.laplacian`) the level runs inside a `vmap` over D directions:
first-order coefficients hold one value per direction, and the second-order coefficient is
*collapsed*, the mean over the directions (`collapse` maps a coefficient batched over them to
its mean). The second-order coefficient of an output is linear in the inputs' second-order
coefficients and quadratic in their first-order ones, so the mean of the outputs' is the output
of the means: one value is propagated where D were.

Imports: `fgrad.core`, `fgrad.forward`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from .core import Box, Level, Primitive, bind, dtype_of, zeros_like_value
from .forward import tangent_rule

__all__ = [
    "TaylorLevel",
    "bilinear_rule",
    "cauchy",
    "composed",
    "declared",
    "general_rule",
    "integrate",
    "kind_of_rule",
    "linear_rule",
    "rules",
]

# Primitive -> rule(primals, series, **params) -> (ans, out_series).
rules: dict[Any, Callable] = {}


class TaylorLevel(Level):
    """A level of Taylor mode of order `order`: each box carries its value's normalized
    Taylor coefficients of orders 1..order in `aux`."""

    __slots__ = ("collapse", "known", "order")

    def __init__(self, order: int, collapse: Callable | None = None):
        super().__init__()
        self.order = order
        self.collapse = collapse
        self.known = None  # see `general_rule`

    def box(self, value, coefficients):
        """`value` with these coefficients at this level; the value itself if all are zero."""
        for c in coefficients:
            if c is not None:
                return Box(value, self, tuple(coefficients))
        return value

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        primals = list(args)
        series = [None] * len(args)
        some = False
        for i, a in enumerate(args):
            if type(a) is Box and a.level is self:
                primals[i] = a.value
                series[i] = a.aux
                some = True
        if not some:
            return bind(prim, primals, params)
        known = self.known
        if known is not None and _is_known(known, prim, args, params):
            return known[3]
        rule = rules.get(prim)
        if rule is not None:
            ans, out = rule(primals, series, **params)
        else:
            ans, out = general_rule(prim, primals, series, params)
        if prim.multiple_results:
            return tuple(self._boxed(a, s) for a, s in zip(ans, out))
        return self._boxed(ans, out)

    def _boxed(self, ans, out):
        if out is None:
            return ans
        if self.collapse is not None and out[-1] is not None:
            out = (*out[:-1], self.collapse(out[-1]))
        return self.box(ans, out)


# Primitive -> whether two applications with these parameters compute the same function
# (`same(params, other_params)`), where parameters do not compare with `==` (custom calls).
same_params: dict[Any, Callable] = {}


def _is_known(known, prim, args, params):
    kprim, kargs, kparams, _ = known
    if prim is not kprim or len(args) != len(kargs):
        return False
    if any(a is not b for a, b in zip(args, kargs)):
        return False
    same = same_params.get(prim)
    if same is not None:
        return same(params, kparams)
    try:
        return bool(params == kparams)
    except (ValueError, TypeError):  # parameters holding arrays: not worth comparing
        return False


def _order(series):
    return next(len(s) for s in series if s is not None)


# --- the general rule -----------------------------------------------------------------------------


def general_rule(prim, primals, series, params, tangent=None):
    """The Taylor rule of any primitive, from its forward rule (see "The general rule").

    `tangent(tangents, ans, xs)` gives J(xs) tangents for the primitive's value `ans` at
    `xs`; by default the primitive's forward rule (or its transposed reverse rule).
    """
    if tangent is None:

        def tangent(ts, ans, xs):
            return tangent_rule(prim, ts, ans, xs, params)

    order = _order(series)
    multiple = prim.multiple_results
    ans = bind(prim, primals, params)
    outs = ans if multiple else (ans,)
    coefficients = [[None] * order for _ in outs]
    for k in range(1, order + 1):
        if k == 1:  # order 0: the forward rule at the values themselves
            ts = [None if s is None else s[0] for s in series]
            a = tangent(ts, ans, primals)
            firsts = a if multiple else (a,)
            for c, t in zip(coefficients, firsts):
                c[0] = t
            continue
        with TaylorLevel(k - 1) as inner:
            xs = [v if s is None else inner.box(v, s[: k - 1]) for v, s in zip(primals, series)]
            ts = [
                None if s is None else inner.box(_first(s, v), _path_derivative(s, k))
                for v, s in zip(primals, series)
            ]
            ys = [inner.box(o, c[: k - 1]) for o, c in zip(outs, coefficients)]
            ys = tuple(ys) if multiple else ys[0]
            # The forward rule may apply the primitive itself to these inputs (a custom_vjp's
            # fwd calling the function): its series is the one being found, known to order
            # k - 1. Without this, each order would redo all lower ones (2^K work).
            inner.known = (prim, xs, params, ys)
            a = tangent(ts, ys, xs)
        for c, t in zip(coefficients, a if multiple else (a,)):
            if type(t) is Box and t.level is inner:
                top = t.aux[k - 2]
                c[k - 1] = None if top is None else top / k
    out = tuple(None if all(v is None for v in c) else tuple(c) for c in coefficients)
    return ans, out if multiple else out[0]


def _first(s, primal):
    """x'(0), the first coefficient: a zero of the primal's shape where it is None (the
    derivative's value, boxed with the higher coefficients)."""
    return zeros_like_value(primal) if s[0] is None else s[0]


def _path_derivative(s, k):
    """Coefficients 1..k-1 of x'(t) = sum_m (m + 1) x_(m+1) t^m, from x's coefficients `s`."""
    return [None if s[m] is None else (m + 1) * s[m] for m in range(1, k)]


# --- builders of direct rules ---------------------------------------------------------------------


def full(primal, s, order):
    """The series [x0, x1, ..., x_order] of a value (None for zero coefficients)."""
    return [primal, *s] if s is not None else [primal] + [None] * order


def add(a, b):
    """a + b where None is a zero."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def cauchy(a, b, k, start=0):
    """Coefficient k of the product of the series a and b: sum over j of a_j b_(k-j), for j
    from `start` to k - start (None for a zero)."""
    total = None
    for j in range(start, k + 1 - start):
        x, y = a[j], b[k - j]
        if x is not None and y is not None:
            total = add(total, x * y)
    return total


def integrate(x, d, k):
    """Coefficient k of y where y' = d x' (a slope series d, a path x): y_k is
    sum_(j=1..k) (j / k) x_j d_(k-j)."""
    total = None
    for j in range(1, k + 1):
        xj, dj = x[j], d[k - j]
        if xj is not None and dj is not None:
            if j == 1 and _is_one(xj, dj):  # (j / k) d_(k-1): x_1 * that is it, bit for bit
                term = dj if k == 1 else (1 / k) * dj
            else:
                term = scaled_product(xj, dj, j / k)
            total = add(total, term)
    return total


def scaled_product(a, b, c):
    """c a b, grouped as a (c b) whichever factor is traced, so that `vmap` of a jet rounds as
    a loop over its rows does (grouped by which factor was traced, a (c b) under `vmap` against
    c (a b) in the loop, sin's coefficients differed in their last bits). Callers pass the
    factor of fewer values as b where they can (a slope against the Laplacian's directions).
    The traced factor goes first: `box * array` is Box's own operator, `array * box` NumPy's;
    a value only `jit` records counts as not traced, as eagerly it is a plain array."""
    cb = b if c == 1 else c * b
    if _traced(cb) and not _traced(a):
        return cb * a
    return a * cb


def _is_one(x, like) -> bool:
    """Whether x is the number 1 that multiplies `like` without changing its dtype: a Python
    number, or a NumPy scalar of like's dtype (a float64 one would make float32 float64).
    `derivative`'s path x + t has the term 1: multiplied by it at every order (`integrate`),
    tanh's 20th derivative took 351 operations, not 332. (An array, even of one 1, is
    multiplied.)"""
    t = type(x)
    if t is float or t is int:
        return x == 1
    if t in _NUMPY_SCALARS:
        # (a NumPy scalar of x's own type: its dtype, without asking for it)
        return x == 1 and (type(like) is t or x.dtype == dtype_of(like))
    return False


_NUMPY_SCALARS = frozenset(_np.dtype(c).type for c in "efdgFDGbhilqBHILQ")


def _traced(x) -> bool:
    """Whether a transform other than a `jit` recording traces x."""
    while type(x) is Box:
        if x.level.live and not x.level.stages:
            return True
        x = x.value
    return False


def linear_rule(prim, linear_in=None):
    """The rule of a primitive linear in the inputs `linear_in` (all by default) jointly, the
    others static: each coefficient of the output is the primitive applied to the inputs'
    coefficients of that order (a zero of the input's shape for one without a series). When a
    static input has a series the primitive is not linear in it: the general rule applies."""

    def rule(primals, series, **params):
        ins = range(len(primals)) if linear_in is None else linear_in
        if any(s is not None for i, s in enumerate(series) if i not in ins):
            return general_rule(prim, primals, series, params)
        ans = bind(prim, primals, params)
        order = _order(series)
        out = []
        for k in range(order):
            if all(series[i] is None or series[i][k] is None for i in ins):
                out.append(None)
                continue
            args = list(primals)
            for i in ins:
                s = series[i]
                args[i] = _zero_like(primals[i]) if s is None or s[k] is None else s[k]
            out.append(bind(prim, args, params))
        return ans, tuple(out)

    return kind_of_rule(rule, "linear")


def kind_of_rule(rule, kind):
    """`rule`, marked with its kind (`rule.kind`, what `fgrad.primitive.register_rules` records
    for it: "linear", "derived" or "speed", see `fgrad.primitive.TAYLOR_RULE_KINDS`)."""
    rule.kind = kind
    return rule


def declared(kind):
    """A decorator: the rule it decorates is of `kind` (`kind_of_rule`)."""
    return lambda rule: kind_of_rule(rule, kind)


def _zero_like(x):
    """A zero standing for x in a linear primitive's coefficient: a Python number stays a
    Python number, so that it promotes as weakly as x did (`where(m, x32, 0.0)` is float32)."""
    if type(x) in (float, int, complex):
        return type(x)(0)
    return zeros_like_value(x)


def bilinear_rule(prim):
    """The rule of a primitive of two inputs linear in each (products): coefficient k of the
    output is the sum over j of the primitive applied to x_j and y_(k-j)."""

    def rule(primals, series, **params):
        x, y = primals
        ans = bind(prim, primals, params)
        order = _order(series)
        xs, ys = full(x, series[0], order), full(y, series[1], order)
        out = []
        for k in range(1, order + 1):
            total = None
            for j in range(k + 1):
                if xs[j] is not None and ys[k - j] is not None:
                    total = add(total, bind(prim, (xs[j], ys[k - j]), params))
            out.append(total)
        return ans, tuple(out)

    return kind_of_rule(rule, "linear")


# --- elementwise functions: recurrences, quadratic in the order -----------------------------------
# Each follows from an ODE the function satisfies along the path (Griewank & Walther, ch. 13):
# exp: y' = y x'; tanh: y' = (1 - y^2) x'; log: x y' = x'; and so on. Coefficient k of y needs
# the coefficients of y below k only. The builders take the primitives they need for order 0.


def square_coefficient(a, m, scale=1):
    """Coefficient m of the square of the series a, times `scale`: 2 sum_(i < m/2) a_i a_(m-i),
    plus a_(m/2)^2 for even m."""
    total = None
    for i in range((m + 1) // 2):
        x, y = a[i], a[m - i]
        if x is not None and y is not None:
            total = add(total, scaled_product(x, y, 2 * scale))
    if m % 2 == 0 and a[m // 2] is not None:
        total = add(total, scaled_product(a[m // 2], a[m // 2], scale))
    return total


def _scaled(c, factor):
    return None if c is None else c * factor


def _tanh_slope(y, m):  # 1 - y^2
    if m == 0:
        return 1.0 - y[0] * y[0]
    return square_coefficient(y, m, -1)


def _tan_slope(y, m):  # 1 + y^2
    sq = square_coefficient(y, m)
    return 1.0 + sq if m == 0 else sq


def _cached_slope_rule(slope_of_value):
    """A rule maker for y' = d x' where the slope d is a series computed from y's own:
    `slope_of_value(y, m)` is coefficient m of d from y[0..m], kept as y grows. The maker's
    `first_slope(y0, x0)`, if given, is d's coefficient 0 instead, where the formula in y0
    loses digits that x0 keeps (expm1: y0 + 1 is 0 at x0 = -40, exp(x0) is not)."""

    def make(prim, first_slope=None):
        def rule(primals, series):
            (x0,), (s,) = primals, series
            order = len(s)
            x = full(x0, s, order)
            y = [bind(prim, (x0,), {})]
            d = []
            for k in range(1, order + 1):
                if k == 1 and first_slope is not None:
                    d.append(first_slope(y[0], x0))
                else:
                    d.append(slope_of_value(y, k - 1))
                y.append(integrate(x, d, k))
            return y[0], tuple(y[1:])

        return kind_of_rule(rule, "speed")

    return make


exp_rule = _cached_slope_rule(lambda y, m: y[m])
# y' = (y + 1) x' (expm1) and (1 - y^2) x' (tanh): their first slopes lose digits where y0
# nears -1 (+-1); the makers take a first_slope of x0 for them (`_cached_slope_rule`)
expm1_rule = _cached_slope_rule(lambda y, m: y[0] + 1.0 if m == 0 else y[m])
tanh_rule = _cached_slope_rule(_tanh_slope)
tan_rule = _cached_slope_rule(_tan_slope)


def scaled_exp_rule(scale):
    """y = base^x: y' = scale y x' (scale = log(base), a Python float)."""
    return _cached_slope_rule(lambda y, m: _scaled(y[m], scale))


def sine_pair_rule(sin_prim, cos_prim, which, sign):
    """sin and cos (sign -1: cos' = -sin) or sinh and cosh (sign +1): the pair's
    coefficients together, s' = c x', c' = sign s x'. `which` is 0 for the first, 1 for the
    second."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        x = full(x0, s, order)
        sn, cs = [bind(sin_prim, (x0,), {})], [bind(cos_prim, (x0,), {})]
        for k in range(1, order + 1):
            sn.append(integrate(x, cs, k))
            c = integrate(x, sn[:k], k)
            cs.append(c if sign > 0 or c is None else -c)
        y = (sn, cs)[which]
        return y[0], tuple(y[1:])

    return kind_of_rule(rule, "speed")


def log_rule(prim, scale=None, shift=False):
    """log (x y' = x'), log1p (shift: of 1 + x), log2 and log10 (`scale` = 1 / log(base)):
    x0 y_k = scale x_k - sum_(j=1..k-1) j y_j x_(k-j) / k. The scale multiplies x_k before the
    division by x0, not the natural log's coefficient after it: log10'(3e-309) = 1.4e308 is a
    float, 1/3e-309 is not."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        x = full(x0, s, order)
        u0 = 1.0 + x0 if shift else x0
        y = [bind(prim, (x0,), {})]
        for k in range(1, order + 1):
            total = None
            for j in range(1, k):
                if y[j] is not None and x[k - j] is not None:
                    total = add(total, (j * y[j]) * x[k - j])
            xk = x[k] if scale is None else _scaled(x[k], scale)
            num = xk if total is None else (total / -k if xk is None else xk - total / k)
            y.append(None if num is None else num / u0)
        return y[0], tuple(y[1:])

    return kind_of_rule(rule, "speed")


def sqrt_rule(prim):
    """y^2 = x: y_k = (x_k - sum_(j=1..k-1) y_j y_(k-j)) / (2 y_0)."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        x = full(x0, s, order)
        y = [bind(prim, (x0,), {})]
        twice = y[0] + y[0]
        for k in range(1, order + 1):
            inner = cauchy(y, y, k, start=1)
            num = x[k] if inner is None else (-inner if x[k] is None else x[k] - inner)
            y.append(None if num is None else num / twice)
        return y[0], tuple(y[1:])

    return kind_of_rule(rule, "speed")


def quotient_coefficients(x, y, z0, order):
    """The coefficients 1..order of z = x / y (series x, y; z0 the value): y z = x gives
    z_k = (x_k - sum_(j=1..k) y_j z_(k-j)) / y_0."""
    z = [z0]
    for k in range(1, order + 1):
        inner = _tail_product(y, z, k)
        num = x[k] if inner is None else (-inner if x[k] is None else x[k] - inner)
        z.append(None if num is None else num / y[0])
    return z[1:]


def _tail_product(y, z, k):
    """sum_(j=1..k) y_j z_(k-j)."""
    total = None
    for j in range(1, k + 1):
        if y[j] is not None and z[k - j] is not None:
            total = add(total, y[j] * z[k - j])
    return total


def power_coefficients(x, g, a, order):
    """The coefficients 1..order of y = x^a for a constant exponent a (x y' = a y x'):
    y_k = a x_k g + sum_(j=1..k-1) ((a j - (k - j)) / k) u_j y_(k-j), u_j = x_j / x_0, where
    g = x_0^(a-1) (the caller's, by NumPy's ufunc: a NumPy scalar's `**` rounds otherwise than
    an array's, and `vmap` must round as a loop does) gives the slope `jvp` computes. The value
    y_0 = x_0^a enters the recurrence only through its last term, a u_k y_0 = a x_k g: taken
    as y_0 / x_0 the coefficients were 0 or inf wherever the value under- or overflows and
    they do not (x^8.5 at 1e-40 is 1e-340, its derivative 8.5e-300). The integer k - j is kept
    apart: as (a j - k) + j the term j = k cancels for a small a (a = 1e-20 gave 0). Needs
    x_0 != 0."""
    x0 = x[0]
    slope = a * g
    u = [None] + [None if c is None else c / x0 for c in x[1:]]
    y = [None]
    for k in range(1, order + 1):
        total = None if x[k] is None else slope * x[k]
        for j in range(1, k):
            if u[j] is not None and y[k - j] is not None:
                total = add(total, (((a * j - (k - j)) / k) * u[j]) * y[k - j])
        y.append(total)
    return y[1:]


def integer_power_coefficients(x, n, order):
    """The coefficients 1..order of x^n for a small integer n >= 1 by products of series,
    exact where x_0 = 0 (where the recurrence would divide by zero)."""
    result = None
    base = list(x)
    while n:
        if n & 1:
            result = base if result is None else _product(result, base, order)
        n >>= 1
        if n:
            base = _product(base, base, order)
    return result[1:]


def _product(a, b, order):
    return [cauchy(a, b, k) for k in range(order + 1)]


def by_formula(prim, formula):
    """The rule of a unary primitive that computes, in one function, what `formula` computes
    in fgrad operations (so that its reverse rule has no inner zero factor): the coefficients
    1..K are the formula's on the series, coefficient 0 the primitive's own value."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        ans = bind(prim, (x0,), {})
        with TaylorLevel(order) as level:
            out = formula(level.box(x0, s))
        if type(out) is Box and out.level is level:
            return ans, tuple(out.aux)
        return ans, (None,) * order

    return kind_of_rule(rule, "derived")


def from_slope(prim, slope, widen=None):
    """y' = slope(x) x' for a slope written in fgrad operations of x alone (arcsin, arctan,
    erf, ...): the slope's series comes from one pass of this level's rules at order K - 1,
    then y is its integral along the path. `widen(v, ans)`, if given, casts x's series to the
    value's dtype where the function computes in a wider one (SciPy's float16)."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        ans = bind(prim, (x0,), {})
        if widen is not None:
            x0, s = widen(x0, ans), [None if c is None else widen(c, ans) for c in s]
        x = full(x0, s, order)
        if order == 1:
            d = [slope(x0)]
        else:
            with TaylorLevel(order - 1) as inner:
                dbox = slope(inner.box(x0, s[: order - 1]))
            if type(dbox) is Box and dbox.level is inner:
                d = [dbox.value, *dbox.aux]
            else:
                d = [dbox] + [None] * (order - 1)
        return ans, tuple(integrate(x, d, k) for k in range(1, order + 1))

    return kind_of_rule(rule, "derived")


def composed(derivatives, s):
    """The coefficients 1..K of f(x0 + e(t)) from f's derivatives at x0,
    `derivatives[n - 1]` = f^(n)(x0), where e has the coefficients `s` (e_0 = 0):
    f(x(t)) = sum_n f^(n)(x0) / n! e(t)^n, the powers of e taken as products of series
    (about K^3 / 6 of them). The rule of a function whose derivatives are known functions of
    their own (polygamma, the Bessel functions, sinc), where the general rule would recurse
    through that chain at a cost doubling with each order."""
    order = len(s)
    e = [None, *s]
    out = [None if c is None else derivatives[0] * c for c in s]
    power = e  # the coefficients of e^n; those below n are 0
    for n in range(2, order + 1):
        power = [None] * n + [_power_tail(power, e, k, n - 1) for k in range(n, order + 1)]
        scale = derivatives[n - 1] * (1.0 / math.factorial(n))
        for k in range(n, order + 1):
            if power[k] is not None:
                out[k - 1] = add(out[k - 1], scale * power[k])
    return out


def _power_tail(a, b, k, start):
    """sum_(j=start..k-1) a_j b_(k-j) (b_0 = 0)."""
    total = None
    for j in range(start, k):
        if a[j] is not None and b[k - j] is not None:
            total = add(total, a[j] * b[k - j])
    return total
