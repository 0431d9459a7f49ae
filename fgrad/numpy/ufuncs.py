"""The rest of NumPy's floating ufuncs: trigonometric and hyperbolic functions and their
inverses, exponentials and logarithms in other bases, roots, `hypot`, `arctan2`, `logaddexp`,
`sinc`, `copysign`, `fmod`, `remainder`, `fmax`/`fmin`, `nan_to_num`, and NumPy 2's short
aliases (`asin`, `atan2`, `pow`, ...).

Each primitive and its rules sit in one block; a derivative is written once, in fgrad operations
(the primitive's own inputs and output): `defunary(impl, derivative)` gives both rules of a
unary function, `_binary` those of a binary one from its two partial derivatives. Every rule
can itself be differentiated, and every ufunc takes NumPy's ufunc signature (`as_ufunc`).
Conventions:

- `hypot(x, y)` at x = y = 0 has gradient (0, 0), and every higher derivative there is 0 (the
  function has a cone point; 0 is the smallest subgradient). JAX gives (0.5, 0.5) there.
- `arctan2(y, x)` at y = x = 0 has a nan gradient (0/0), as in JAX: the function is not
  continuous there.
- `logaddexp(x, y)` where the result is infinite (both -inf, or an input +inf) gives the
  gradient to the larger input, split evenly at a tie, instead of exp(nan).
- `fmax`/`fmin`: the non-nan operand gets the gradient; ties, and two nans, split it evenly.
- `copysign(x, y)`: the slope in x is +-1 by the signs of x (with 0 counted as positive, as
  `abs'(0) = 1`) and of y (by its sign bit, so y = -0.0 counts as negative); y gets none.
- `fmod(x, y)` and `remainder(x, y)` (`mod`): slope 1 in x, and -q in y, where q is the integer
  quotient the result was taken with (trunc(x/y) for fmod, floor(x/y) for remainder, as JAX).
- `sinc` is exact at 0 to every order (sinc'(0) = 0, sinc''(0) = -pi**2/3), as in JAX, and,
  unlike JAX, accurate near 0 too (a series there instead of differentiating the quotient).
- `nan_to_num`: the gradient passes where x is finite and is 0 where a value was replaced.
- `ldexp(x, i)` is differentiable in x (slope 2**i); `i` is an integer and has none.
- `heaviside`, `signbit`, `rint`, `fix`, `floor_divide`, `isposinf`, `isneginf`, `isclose`,
  `allclose` are declared without a derivative.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

from __future__ import annotations

import math
import operator as _operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core, taylor as _taylor
from ..core import bind, dtype_of, shape_of
from ..primitive import deflinear, defprimitive, defunary, nondiff, register_rules
from ._mirror import exported, mirror
from .elementwise import (
    _operator_of,
    _weights as _dtype_weights,
    as_ufunc,
    elementwise_batch_rule,
    equal,
    exp,
    float_power_values,
    mask_values,
    may_hold,
    negative,
    power,
    register_elementwise,
    scalar_if_0d,
    sqrt,
    where,
)
from .shaping import (
    as_array,
    asarray,
    astype,
    axis_batch_rule,
    batch_to_front,
    broadcast_like,
    broadcast_to,
    describe,
    is_traced,
    meta,
    nondiff_function,
    numpy_applies,
    unbroadcast,
    zero_with_derivatives_of,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core import Primitive
    from ..typing import Array, ArrayLike
    from .elementwise import Ufunc


# Python floats, not NumPy float64 scalars: a Python float keeps a float32 array float32.
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_LOG2_E = 1.0 / _LN2
_LOG10_E = 1.0 / _LN10


def _operand(v):
    """A list or tuple operand as the array NumPy reads it (rules do arithmetic on it)."""
    return _np.asarray(v) if isinstance(v, (list, tuple)) else v


def _weights(values, ans):
    """A constant (no derivative) array of slopes, in the dtype and shape of the result
    (`elementwise._weights`, broadcast: under `vmap` one array per row, under `jit` a value
    the record computes)."""
    w = _dtype_weights(values, dtype_of(ans))
    return w if shape_of(w) == shape_of(ans) else broadcast_to(w, shape_of(ans))


# --- unary functions: each from its derivative d(ans)/dx = derivative(ans, x) ---------------------


def _unary(
    impl: _np.ufunc,
    derivative: Callable[[Any, Any], Any],
    of_x: bool = False,
    taylor: Callable[[Primitive], Any] | None = None,
) -> Ufunc:
    """The ufunc `impl` from its derivative, with NumPy's ufunc signature. Its Taylor rule is
    `taylor(primitive)` if given (a recurrence); else with `of_x` (a derivative that does not
    read `ans`), Taylor mode integrates the derivative's own series (`fgrad.taylor.from_slope`);
    else the general rule."""
    fn = defunary(impl, derivative)
    if taylor is not None:
        register_rules(fn.primitive, taylor=taylor(fn.primitive))
    elif of_x:
        register_rules(
            fn.primitive, taylor=_taylor.from_slope(fn.primitive, lambda x: derivative(None, x))
        )
    return as_ufunc(fn, impl)


# Near the ends of the domain, (1 - x)(1 + x) keeps the digits that 1 - x*x loses; hypot(x, 1)
# and sqrt(x - 1) sqrt(x + 1) do not overflow for |x| > 1e154 as x*x does.
#
# On a branch cut of a complex x (arcsin(2 + 0j)), NumPy's value is the limit from the side the
# sign of x's zero imaginary (for arcsinh, real) part names, and so must the derivative be, in
# every mode alike. The complex formulas keep that sign: they subtract (x - 1.0, x - (-1.0),
# x - 1j) where adding would lose it (-0.0 + 0.0 is +0.0), and negate a factor rather than
# subtract x from a constant (1.0 - (2 + 0j) is -1 + 0j, where the limit is -1 - 0j). At a
# branch point the derivative is infinite, as for real x at +-1 (inf): the slope is 1/(0 + 0j),
# nan + nanj in NumPy's complex division, never a finite number (1/cos(arcsin(1 + 0j)), read off
# the rounded value, was 1.6e16).


def _one_minus_square(x):
    """1 - x**2 for complex x as -(x - 1)(x + 1): no cancellation near +-1, and the sign of a
    zero imaginary part that names the side of the cut."""
    return -(x - 1.0) * (x - (-1.0))


def _one_minus_square_value(x):
    return (1.0 - x) * (1.0 + x)


# 1 - x**2 for real x, as (1 - x)(1 + x), differentiated as one function (slope -2x): taken
# apart, reverse mode at x = 1 sent the infinite cotangent of the arcsin's slope 1/sqrt(w)
# into the factor 1 + x times 1 - x = 0, and grad(grad(arcsin))(1.0) was inf * 0 = nan.
# Its Taylor coefficients 1..K are those of -x*x, the series' own product (-2 x0 x1, ...):
# (1 - x)(1 + x)'s cancel, x1 ((1 - x0) - (1 + x0)) is 0 where 1 +- x0 rounds to 1, and
# derivative(arcsin, 2)(1e-20) was -0.0 (true 1e-20)
_real_one_minus_square = defunary(
    _one_minus_square_value, lambda ans, x: -2.0 * x, name="one_minus_square"
)
register_rules(
    _real_one_minus_square.primitive,
    taylor=_taylor.by_formula(_real_one_minus_square.primitive, lambda x: 1.0 - x * x),
)


def _arcsin_slope(ans, x):
    if dtype_of(x).kind == "c":
        return 1.0 / sqrt(_one_minus_square(x))
    return 1.0 / sqrt(_real_one_minus_square(x))


def _arccos_slope(ans, x):
    if dtype_of(x).kind == "c":
        return -1.0 / sqrt(_one_minus_square(x))
    return -1.0 / sqrt(_real_one_minus_square(x))


arcsin = _unary(_np.arcsin, _arcsin_slope, of_x=True)
arccos = _unary(_np.arccos, _arccos_slope, of_x=True)
arctan = _unary(_np.arctan, lambda ans, x: 1.0 / (1.0 + x * x), of_x=True)
sinh = _unary(_np.sinh, lambda ans, x: cosh(x))
cosh: Ufunc = _unary(_np.cosh, lambda ans, x: sinh(x))
# (sinh and cosh: one recurrence of the pair)
register_rules(sinh.primitive, taylor=_taylor.sine_pair_rule(sinh.primitive, cosh.primitive, 0, 1))
register_rules(cosh.primitive, taylor=_taylor.sine_pair_rule(sinh.primitive, cosh.primitive, 1, 1))


def _arcsinh_slope(ans, x):
    """1 / sqrt(1 + x**2): for real x as 1 / hypot(x, 1) (no overflow); for complex x as
    1 / sqrt((x - i)(x + i)), the same function with arcsinh's own branch cuts (the imaginary
    axis beyond +-i), without the cancellation of 1 + x**2 near +-i, and with x + i taken as
    -((-x) - i), which keeps the sign of a zero real part (the side of the cut)."""
    if dtype_of(x).kind == "c":
        return 1.0 / sqrt((x - 1j) * -((-x) - 1j))
    return 1.0 / hypot(x, 1.0)


def _sqrt_square_minus_one_value(x):
    return _np.sqrt(x - 1.0) * _np.sqrt(x + 1.0)


# sqrt(x**2 - 1) for real x as sqrt(x - 1) sqrt(x + 1), differentiated as one function (slope
# x / sqrt(x**2 - 1)), for the reason of `_real_one_minus_square` (at x = 1 the product's
# factor sqrt(x + 1) got the infinite cotangent times sqrt(x - 1) = 0)
_real_sqrt_square_minus_one = defunary(
    _sqrt_square_minus_one_value, lambda ans, x: x / ans, name="sqrt_square_minus_one"
)
register_rules(
    _real_sqrt_square_minus_one.primitive,
    taylor=_taylor.by_formula(
        _real_sqrt_square_minus_one.primitive, lambda x: sqrt(x - 1.0) * sqrt(x + 1.0)
    ),
)


def _arccosh_slope(ans, x):
    if dtype_of(x).kind == "c":
        return 1.0 / (sqrt(x - 1.0) * sqrt(x - (-1.0)))  # x + 1 keeping a zero imaginary's sign
    return 1.0 / _real_sqrt_square_minus_one(x)


arcsinh = _unary(_np.arcsinh, _arcsinh_slope, of_x=True)
arccosh = _unary(_np.arccosh, _arccosh_slope, of_x=True)
arctanh = _unary(
    _np.arctanh,
    lambda ans, x: (
        1.0 / (_one_minus_square(x) if dtype_of(x).kind == "c" else _real_one_minus_square(x))
    ),
    of_x=True,
)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh

exp2 = _unary(_np.exp2, lambda ans, x: _LN2 * ans, taylor=_taylor.scaled_exp_rule(_LN2))
# log_b'(x) = log_b(e) / x: one division, which overflows only where the slope does
# (1 / (ln(10) x) overflowed in the product at x = 1e308, 1/x then / ln(10) at 3e-309)
log2 = _unary(
    _np.log2, lambda ans, x: _LOG2_E / x, taylor=lambda p: _taylor.log_rule(p, scale=_LOG2_E)
)
log10 = _unary(
    _np.log10, lambda ans, x: _LOG10_E / x, taylor=lambda p: _taylor.log_rule(p, scale=_LOG10_E)
)
cbrt = _unary(_np.cbrt, lambda ans, x: 1.0 / (3.0 * ans * ans))  # inf at 0, as in JAX


def _square_taylor_rule(prim):
    def rule(primals, series):
        ans = bind(prim, primals, {})
        x = _taylor.full(primals[0], series[0], len(series[0]))
        return ans, tuple(_taylor.square_coefficient(x, k) for k in range(1, len(x)))

    return _taylor.kind_of_rule(rule, "speed")


def _reciprocal_taylor_rule(prim):
    def rule(primals, series):
        ans = bind(prim, primals, {})
        order = len(series[0])
        y = _taylor.full(primals[0], series[0], order)
        return ans, tuple(_taylor.quotient_coefficients([None] * (order + 1), y, ans, order))

    return _taylor.kind_of_rule(rule, "speed")


square = _unary(_np.square, lambda ans, x: 2.0 * x, taylor=_square_taylor_rule)
reciprocal = _unary(_np.reciprocal, lambda ans, x: -(ans * ans), taylor=_reciprocal_taylor_rule)


def _fabs_slope(ans, x):
    """+1 where x >= 0 and -1 elsewhere: fabs'(0) = 1, as abs'(0) in JAX."""
    return _weights(_np.where(mask_values(x) >= 0, 1.0, -1.0), ans)


fabs = _unary(_np.fabs, _fabs_slope)


def _scaling(impl):
    """A unary ufunc that multiplies by a constant (degrees <-> radians): linear, and its own
    transpose."""
    prim = deflinear(impl, lambda ans, x: lambda ct: prim(ct))
    return as_ufunc(prim, impl)


deg2rad = _scaling(_np.deg2rad)
radians = _scaling(_np.radians)
rad2deg = _scaling(_np.rad2deg)
degrees = _scaling(_np.degrees)


# --- binary functions with broadcasting: d(ans)/dx = dx(ans, x, y), d(ans)/dy = dy(...) -----------


def _binary(impl, dx, dy):
    """The ufunc `impl` of two inputs from its two partial derivatives, with NumPy's ufunc
    signature. Each partial is written once and gives both rules of its input: the reverse
    rule `ct * d` summed back to the input's shape, the forward rule `t * d`. (fgrad.primitive
    has no builder for this: its `defbilinear` is for functions linear in each input.)"""

    def vjp(partial, i):
        def maker(ans, x, y):
            like = meta((x, y)[i])
            return lambda ct: unbroadcast(ct * partial(ans, _operand(x), _operand(y)), like)

        return maker

    def jvp(partial):
        return lambda t, ans, x, y: broadcast_like(t * partial(ans, _operand(x), _operand(y)), ans)

    prim = defprimitive(impl, (vjp(dx, 0), vjp(dy, 1)), (jvp(dx), jvp(dy)), forward="derived")
    return as_ufunc(prim, impl)


def _hypot_slope(ans, x):
    """x / hypot(x, y), taken as 0 where hypot is 0 (all its derivatives there are 0 too)."""
    zero = mask_values(ans) == 0
    if may_hold(zero):
        return where(zero, 0.0, x / where(zero, 1.0, ans))
    return x / ans


hypot = _binary(
    _np.hypot,
    lambda ans, x, y: _hypot_slope(ans, x),
    lambda ans, x, y: _hypot_slope(ans, y),
)


# arctan2(y, x) = the angle of the point (x, y): slopes (x, -y) / r**2 with r = hypot(x, y),
# taken as (x / r) / r so that neither overflows nor underflows where x*x + y*y would. At the
# origin both are 0/0 = nan, as in JAX: the function is not continuous there.
def _over_r_squared(a, y, x):
    r = hypot(y, x)
    return a / r / r


arctan2 = _binary(
    _np.arctan2,
    lambda ans, y, x: _over_r_squared(x, y, x),
    lambda ans, y, x: negative(_over_r_squared(y, y, x)),  # (-y of a uint8 y would wrap)
)
atan2 = arctan2


def _logaddexp_slope(exp_base):
    """d/dx log(e^x + e^y) = e^(x - ans) (base 2 for logaddexp2): the softmax weight of x.

    Where the result is infinite, x - ans is nan; there the larger input gets the gradient,
    half each at a tie (both -inf, or both +inf).
    """

    def slope(ans, x, y):
        xv, yv = mask_values(x), mask_values(y)
        inf = _np.isinf(mask_values(ans))
        if not may_hold(inf):
            return exp_base(x - ans)
        if _finite_constant(y):
            # y a known finite number (the softplus, logaddexp(0, x)): no tie is possible, and
            # the weight of x is the logistic sigmoid of u = x - y, 1 / (1 + e^-u) for u >= 0
            # and e^u / (1 + e^u) below, which neither overflows nor makes a nan (nor do its
            # derivatives) at any u, infinite ones included. It needs neither the result nor
            # the mask of the infinite ones: on a Dask array, where the mask cannot be read,
            # a gradient makes 7 cheap operations (8 when y is not 0) where that path makes 11
            # and the forward logaddexp (35 ns an element in NumPy, 20 times an exp).
            u = x if _np.ndim(y) == 0 and y == 0 else x - y
            up = mask_values(u) >= 0
            e = exp_base(where(up, -u, u))
            return where(up, 1.0, e) / (1.0 + e)
        w = _weights(_np.where(xv > yv, 1.0, _np.where(xv == yv, 0.5, 0.0)), ans)
        # Both branches run: the masked one sees 0 - 0, not inf - inf, so no nan is made.
        return where(inf, w, exp_base(where(inf, 0.0, x) - where(inf, 0.0, ans)))

    return slope


def _finite_constant(y):
    """Whether y is a constant whose values can be read (a number or a NumPy array, neither
    traced nor lazy) and are all finite. Also a value a `jit` record computes (not batched):
    the answer is one boolean the record checks. (Reverse mode hands the rule its inputs'
    plain values, and a record's are its own values: the two must take the same branch, or
    `jit(grad)` of logaddexp at an infinite x differed from eager `grad` in the last bits.)"""
    if isinstance(y, (float, int)) or type(y) is _np.ndarray or isinstance(y, _np.generic):
        return _np.asarray(y).dtype.kind in "biuf" and bool(_np.isfinite(y).all())
    if _core.holds_staged(y) and not _core.holds_batch(y):
        inner = _core.innermost(y)
        if type(inner) is _np.ndarray or isinstance(inner, (float, int, _np.generic)):
            kind = _np.asarray(inner).dtype.kind
            return kind in "biuf" and bool(_np.all(_np.isfinite(_core.constant_of(y))))
    return False


_dlogaddexp = _logaddexp_slope(exp)
logaddexp = _binary(_np.logaddexp, _dlogaddexp, lambda ans, x, y: _dlogaddexp(ans, y, x))
_dlogaddexp2 = _logaddexp_slope(lambda v: exp2(v))
logaddexp2 = _binary(_np.logaddexp2, _dlogaddexp2, lambda ans, x, y: _dlogaddexp2(ans, y, x))


def _as_float64(a):
    dtype = _np.result_type(dtype_of(_operand(a)), _np.float64)
    return astype(a, dtype)


def _float_power(x1, x2):
    """NumPy's `float_power`: `power` computed in float64 (complex128 for complex inputs),
    whatever the input dtypes; gradients come back in each input's own dtype.

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fgrad.grad(lambda x: fnp.float_power(x, 3))(2.0))
    12.0
    """
    return float_power_values(_as_float64(x1), _as_float64(x2))


float_power = as_ufunc(_float_power, _np.float_power)
pow = power


# --- piecewise: sign transfer, remainders, nan-aware extrema, scaling by 2**i ---------------------


def _copysign_slope(ans, x, y):
    """+-1: the sign of x (0 counts as positive) times the sign bit of y."""
    xv, yv = mask_values(x), mask_values(y)
    s = _np.where(xv >= 0, 1.0, -1.0) * _np.where(_np.signbit(yv), -1.0, 1.0)
    return _weights(s, ans)


def _copysign_vjp(ans, x, y):
    like, slope = meta(x), _copysign_slope(ans, x, y)
    return lambda ct: unbroadcast(ct * slope, like)


copysign = as_ufunc(
    defprimitive(
        _np.copysign,
        vjp=(_copysign_vjp, None),
        jvp=(lambda t, ans, x, y: broadcast_like(t * _copysign_slope(ans, x, y), ans), None),
        forward="derived",
    ),
    _np.copysign,
)


def _quotient(ans, x, y):
    """The integer quotient q with ans = x - q*y, recovered exactly from the result."""
    xv, yv = mask_values(x), mask_values(y)
    with _np.errstate(divide="ignore", invalid="ignore"):
        q = _np.round((xv - mask_values(ans)) / yv)
    return _weights(q, ans)


def _remainder_like(impl):
    # slope 1 in x; -q in y (q the integer quotient)
    return _binary(impl, lambda ans, x, y: 1.0, lambda ans, x, y: -_quotient(ans, x, y))


fmod = _remainder_like(_np.fmod)
remainder = _remainder_like(_np.remainder)
mod = remainder
# `%`: its operator's twin (see "the operators" in `fgrad.numpy.elementwise`)
remainder_operator = _operator_of(remainder.primitive, _operator.mod)


def _nan_aware_weights(ans, x, y, wins):
    """x's share of the gradient of fmax/fmin: 1 where x is chosen, 0 where y is, 1/2 at ties.

    A nan loses to any number; two nans are a tie.
    """
    xv, yv = mask_values(x), mask_values(y)
    xnan, ynan = _np.isnan(xv), _np.isnan(yv)
    w = _np.where(
        _np.logical_or(xnan, ynan),
        _np.where(_np.logical_and(xnan, ynan), 0.5, _np.where(xnan, 0.0, 1.0)),
        _np.where(wins(xv, yv), 1.0, _np.where(xv == yv, 0.5, 0.0)),
    )
    return _weights(w, ans)


def _nan_aware_chooser(impl, wins):
    return _binary(
        impl,
        lambda ans, x, y: _nan_aware_weights(ans, x, y, wins),
        lambda ans, x, y: _nan_aware_weights(ans, y, x, wins),
    )


fmax = _nan_aware_chooser(_np.fmax, _np.greater)
fmin = _nan_aware_chooser(_np.fmin, _np.less)


def _ldexp_vjp(ans, x, i):
    like = meta(x)
    return lambda ct: unbroadcast(_ldexp(ct, i), like)


# ldexp is linear in x: its bprop and jvp are ldexp itself (exact: a change of exponent).
_ldexp: Primitive = defprimitive(
    _np.ldexp,
    vjp=(_ldexp_vjp, None),
    jvp=(lambda t, ans, x, i: broadcast_like(_ldexp(t, i), ans), None),
    forward="linear",
)
register_rules(_ldexp, taylor=_taylor.linear_rule(_ldexp, (0,)))  # x 2^i: linear in x
ldexp = as_ufunc(_ldexp, _np.ldexp)


# --- sinc: exact at 0 and accurate near it, to every order ----------------------------------------

_SINC_TERMS = 40  # Taylor terms: enough for |u| <= 8 to double precision


def _sin_u_over_u(u, k):
    """The k-th derivative of sin(u)/u, in float64, or complex128 for complex u (the
    raw-NumPy implementation; sin(u)/u is entire, so the same formulas hold for complex u).

    Near 0 (|u| < max(1, k), at most 8) from its Taylor series
    sum_n (-1)**n u**(2n-k) / ((2n+1) (2n-k)!), which has no cancellation there; elsewhere by
    the recurrence u f^(k) = sin^(k)(u) - k f^(k-1), obtained by differentiating u f = sin u,
    which is stable once |u| exceeds k.
    """
    if _core.is_foreign_array(u):
        return _foreign_sin_u_over_u(u, k)
    u = _np.asarray(u, dtype=_np.complex128 if _np.iscomplexobj(u) else _np.float64)
    if k == 0:
        zero = u == 0
        return _np.where(zero, 1.0, _np.sin(u) / _np.where(zero, 1.0, u))
    out = _np.empty_like(u)
    small = _np.abs(u) < min(max(1.0, float(k)), 8.0)
    us = u[small]
    v = us * us
    n0 = (k + 1) // 2
    acc = _np.zeros_like(us)
    for n in range(n0 + _SINC_TERMS - 1, n0 - 1, -1):  # Horner in v = u**2
        acc = acc * v + (-1.0) ** n / ((2 * n + 1) * math.factorial(2 * n - k))
    out[small] = acc * us ** (2 * n0 - k)
    ub = u[~small]
    f = _np.sin(ub) / ub
    sin_derivs = (_np.sin(ub), _np.cos(ub), -_np.sin(ub), -_np.cos(ub))
    for j in range(1, k + 1):
        f = (sin_derivs[j % 4] - j * f) / ub
    out[~small] = f
    return out


def _sin_u_over_u_as_numpy(u):
    """sin(u)/u, and 1 at u == 0, as NumPy's `sinc` computes it: in u's dtype (float32 or
    complex64 too; in float64 a float32 quotient rounds twice, 1 ulp off in a third of them)."""
    zero = u == 0
    return _np.where(zero, u.dtype.type(1), _np.sin(u) / _np.where(zero, u.dtype.type(1), u))


def _foreign_sin_u_over_u(u, k):
    """`_sin_u_over_u` for an array of another library (Dask), which has no item assignment
    by a mask: both formulas over the whole array, each on values safe for it, chosen by
    `where`; element for element the same operations."""
    u = u.astype(_np.complex128 if _np.iscomplexobj(u) else _np.float64)
    if k == 0:
        zero = u == 0
        return _np.where(zero, 1.0, _np.sin(u) / _np.where(zero, 1.0, u))
    bound = min(max(1.0, float(k)), 8.0)
    small = _np.abs(u) < bound
    us = _np.where(small, u, 0.0)
    v = us * us
    n0 = (k + 1) // 2
    acc = _np.zeros_like(us)
    for n in range(n0 + _SINC_TERMS - 1, n0 - 1, -1):
        acc = acc * v + (-1.0) ** n / ((2 * n + 1) * math.factorial(2 * n - k))
    series = acc * us ** (2 * n0 - k)
    ub = _np.where(small, bound, u)
    f = _np.sin(ub) / ub
    sin_derivs = (_np.sin(ub), _np.cos(ub), -_np.sin(ub), -_np.cos(ub))
    for j in range(1, k + 1):
        f = (sin_derivs[j % 4] - j * f) / ub
    return _np.where(small, series, f)


def _sinc_k_impl(u, k):
    # float32 stays float32; Python numbers, integers: float64
    u = as_array(u)
    dtype = u.dtype
    if dtype.kind not in "fc":
        dtype = _np.dtype(_np.float64)
    if k == 0:  # the value: NumPy's sin(u)/u in u's own dtype, bit for bit
        out = _sin_u_over_u_as_numpy(u.astype(dtype, copy=False))
    else:  # the derivatives: in float64 (complex128), then rounded once to u's dtype
        out = _sin_u_over_u(u, k).astype(dtype, copy=False)
    return out[()] if out.ndim == 0 and type(out) is _np.ndarray else out


# The k-th derivative of sin(u)/u; its derivative is the (k+1)-th, so every order is exact.
def _sinc_k_slope(u, k):
    return _sinc_k(u, k=k + 1)


_sinc_k: Primitive = defprimitive(
    _sinc_k_impl,
    vjp=lambda ans, u, k: _scale_by(_sinc_k_slope(u, k)),
    jvp=lambda t, ans, u, k: t * _sinc_k_slope(u, k),
    name="sinc_derivative",
    forward="derived",
)


@_taylor.declared("derived")
def _sinc_k_taylor(primals, series, k):
    """Every derivative of sin(u)/u is this primitive one order up: the series is composed
    from them (`fgrad.taylor.composed`), exact at u = 0 as each is. (The general rule would
    recurse through k + 1, k + 2, ..., twice per order: 2^K work.)"""
    (u0,), (s,) = primals, series
    derivatives = [_sinc_k(u0, k=k + n) for n in range(1, len(s) + 1)]
    return _sinc_k(u0, k=k), tuple(_taylor.composed(derivatives, s))


register_rules(_sinc_k, taylor=_sinc_k_taylor)


def _scale_by(d):
    return lambda ct: ct * d


@mirror("function")
def sinc(x: ArrayLike) -> Array:
    """NumPy's normalized `sinc`: sin(pi x) / (pi x), and 1 at x = 0; for complex x too,
    where its derivative is the complex (holomorphic) one.

    Its derivatives come from the series of sin(u)/u near 0 and from a stable recurrence
    elsewhere, so they are exact at 0 (sinc'(0) = 0, sinc''(0) = -pi**2/3) and accurate to
    rounding near it, to every order and in both modes. (JAX is exact at 0 but differentiates
    the quotient elsewhere, which loses every digit of sinc''(x) by |x| = 1e-8.)

    >>> import fgrad, fgrad.numpy as fnp
    >>> d2 = float(fgrad.grad(fgrad.grad(fnp.sinc))(0.0))
    >>> abs(d2 - (-fnp.pi**2 / 3)) < 1e-15
    True
    """
    return _sinc_k(_np.pi * _operand(x), k=0)


# --- nan_to_num -----------------------------------------------------------------------------------


@mirror("function")
def nan_to_num(
    x: ArrayLike,
    copy: bool = True,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
) -> Array:
    """NumPy's `nan_to_num`. The gradient passes where x is finite; where a nan or an
    infinity was replaced, it goes to the value that replaced it (`nan`, `posinf`, `neginf`,
    when traced; a constant gets none).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.nan_to_num(x * 2.0)))(np.array([1.0, np.inf]))
    array([2., 0.])
    """
    if numpy_applies(x) and not is_traced([nan, posinf, neginf]):
        return _np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    x = asarray(x)  # (a Python number a `jit` record holds as given: NumPy's scalar of it)
    xv = mask_values(x)  # (one mask per row under `vmap`: no shortcut for rows all finite)
    finite = _np.isfinite(xv)
    traced = is_traced([nan, posinf, neginf])
    if traced and dtype_of(x).kind == "c":  # (1j * a part would turn an imaginary -0.0 to 0.0)
        raise TypeError(
            f"nan_to_num: a traced nan, posinf or neginf replaces the real and imaginary parts "
            f"of a complex x ({describe(x)}) apart; split x with fnp.real and fnp.imag"
        )
    if traced or _core.is_foreign_array(_core.innermost(finite)):
        # a traced replacement (differentiated where it replaces), or a Dask x (Dask's
        # nan_to_num takes none of the replacement values): the replacements put in by `where`
        return scalar_if_0d(where(finite, x, _nan_to_num_by_where(xv, nan, posinf, neginf)))
    if not may_hold(_np.logical_not(finite)):
        return scalar_if_0d(x)  # (NumPy's scalar for a 0-d x, as NumPy's gives)
    return scalar_if_0d(where(finite, x, _nan_to_num_p(xv, nan=nan, posinf=posinf, neginf=neginf)))


def _nan_to_num_by_where(x, nan, posinf, neginf):
    """NumPy's `nan_to_num` of x's values by `where`, real and imaginary parts apart, as NumPy
    does, each replacement cast to x's dtype: for an array of another library (Dask's own
    takes none of the replacement values), and for a traced replacement (on which NumPy's
    `where` dispatches to fgrad's, so it is differentiated where it replaces)."""
    if x.dtype.kind == "c":
        parts = [_nan_to_num_by_where(p, nan, posinf, neginf) for p in (_np.real(x), _np.imag(x))]
        return (parts[0] + 1j * parts[1]).astype(x.dtype)
    if x.dtype.kind != "f":
        return x
    big = _np.finfo(x.dtype)
    # the places found in x before any is replaced (a replacement may itself be infinite)
    found = (_np.isnan(x), _np.isposinf(x), _np.isneginf(x))
    out = x
    for place, value in zip(
        found, (nan, big.max if posinf is None else posinf, big.min if neginf is None else neginf)
    ):
        out = _np.where(place, value, out)
    return out.astype(x.dtype)


# --- no derivative --------------------------------------------------------------------------------

# nan_to_num of a constant (no derivative: the values that replace nan and the infinities).
_nan_to_num_p = nondiff_function(_np.nan_to_num)

# heaviside(x, h0) is a step: its derivative in x is 0 wherever it exists; the value is h0
# where x == 0, so the derivative in h0 is 1 there (`_heaviside`).
_heaviside_step = nondiff_function(_np.heaviside)
signbit = nondiff_function(_np.signbit)
rint = nondiff_function(_np.rint)
fix = nondiff_function(_np.fix)
floor_divide = nondiff_function(_np.floor_divide)
# `//`: its operator's twin (see "the operators" in `fgrad.numpy.elementwise`)
floor_divide_operator = nondiff(_operator.floordiv, "floor_divide")
isposinf = nondiff_function(_np.isposinf)
isneginf = nondiff_function(_np.isneginf)
isclose = nondiff_function(_np.isclose)
allclose = nondiff_function(_np.allclose)
_all_of = nondiff_function(_np.all)  # (statistics.all, which this module may not import)
axis_batch_rule(_all_of)


def _allclose_batch(args, dims, **params):
    """allclose under `vmap`: one answer per row, as a loop gives: `isclose` of the rows
    (elementwise, so its own rule) and `all` over each row's axes. (The elementwise rule
    would run NumPy's allclose once on all the rows, and answer for the whole batch.)"""
    close, d = elementwise_batch_rule(isclose.primitive)(args, dims, **params)
    close = batch_to_front(close, d)
    return _all_of(close, axis=tuple(range(1, len(shape_of(close))))), 0


register_rules(allclose.primitive, batch=_allclose_batch)


def _heaviside(x1, x2):
    """NumPy's `heaviside` (0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0), differentiable
    in a traced x2 where x1 == 0 (as JAX's); its derivative in x1 is 0 wherever it exists."""
    ans = _heaviside_step(x1, x2)
    if not is_traced(x2):
        return ans
    # (in ans's dtype: a Python number x2, traced under `jit`, times a bool array is float64)
    return ans + astype(zero_with_derivatives_of(x2) * equal(x1, 0), dtype_of(ans))


_heaviside.__name__ = _heaviside.__qualname__ = "heaviside"  # (the ufunc's name)
heaviside = as_ufunc(_heaviside, _np.heaviside)
heaviside.__doc__ = "NumPy's `heaviside`: " + (_heaviside.__doc__ or "")

register_elementwise(globals())  # every primitive here broadcasts as a ufunc

__all__ = exported(globals())
