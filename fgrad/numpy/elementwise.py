"""Elementwise operations: arithmetic with broadcasting, unary functions, comparisons, `where`.

Each primitive and its rules sit in one block. A vjp rule is a maker `(ans, *args)` called at
forward time that returns the bprop closure for one input, keeping only the residuals it needs;
a jvp rule maps one input's tangent to the tangent of `ans`. Binary bprops undo broadcasting
with `unbroadcast`. Conventions at kinks follow JAX: `abs'(0) = 1`; ties of `maximum` and
`minimum` split the gradient evenly.

The ufunc mirrors take NumPy's ufunc signature (`as_ufunc`): `dtype`, `casting` and
`signature` choose NumPy's loop, as in NumPy; see `as_ufunc` for the rest.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`.
"""

from __future__ import annotations

import builtins as _builtins
import functools
import importlib
import operator as _operator
from typing import TYPE_CHECKING, cast

import numpy as _np

from .. import batching as _batching, taylor as _taylor
from ..core import (
    Box,
    NondiffPrimitive,
    Primitive,
    add_any,
    bind,
    bind_one,
    bind_two,
    constant_of,
    dtype_of,
    holds_batch,
    holds_staged,
    innermost,
    is_foreign_array,
    live_levels_of,
    primal,
    refuse_lazy,
    shape_of,
)
from ..primitive import defprimitive, defunary, forward_rules, nondiff, register_rules
from . import _ufunc_signature
from ._mirror import exported, mirror
from .shaping import (
    NO_VALUE,
    _broadcast_to_p,
    as_array,
    asarray,
    astype,
    broadcast_like,
    describe,
    given,
    is_traced,
    meta,
    ndim,
    nondiff_function,
    numpy_applies,
    refuse,
    refuse_layout,
    refuse_out,
    shape,
    strongly_typed,
    unbroadcast,
    unbroadcast_meta,
    with_example_ndim,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class Ufunc(Protocol):
        """What `as_ufunc` returns: NumPy's ufunc signature over a primitive, which it carries
        as `.primitive` (and as `.bare` when it binds it directly)."""

        primitive: Primitive
        bare: Primitive

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    from ..primitive import UnaryFunction
    from ..typing import Array, ArrayLike


# The vjp makers for an input whose cotangent is the output's, summed to its shape.
def _ct_to_x(ans, x, y):
    like = unbroadcast_meta(x, ans)
    return _identity if like is None else lambda ct: unbroadcast(ct, like)


def _ct_to_y(ans, x, y):
    like = unbroadcast_meta(y, ans)
    return _identity if like is None else lambda ct: unbroadcast(ct, like)


def _identity(ct):
    return ct


def _t_broadcast(t, ans, *args):
    return broadcast_like(t, ans)


def _weights(values, dtype):
    """A constant (no derivative) array of gradient weights, in the dtype of the result."""
    if type(values) is Box:  # computed in a `jit` record (`mask_values`)
        return astype(values, dtype)
    if is_foreign_array(values):
        return values.astype(dtype)
    return _np.asarray(values, dtype=dtype)


def _dtype_of(ans):
    return dtype_of(ans)


# --- NumPy's ufunc signature ----------------------------------------------------------------------
# A ufunc mirror has NumPy's signature, `(x, /, out=None, *, where=True, casting='same_kind',
# order='K', dtype=None, subok=True, signature=None)` (`x1, x2` for two inputs). Without
# keywords it is the primitive itself. With keywords and no traced input it is NumPy's own
# ufunc, so every keyword means what it means in NumPy. On traced inputs `dtype`, `casting`
# and `signature` choose NumPy's loop and the inputs are cast to its dtypes (so the value is
# NumPy's); `out`, `where`, `order` and `subok` cannot mean anything there and are refused by
# name. (sin, cos, tanh, exp, log, negative and the arithmetic operators stay bare primitives,
# without keywords: they are tuned for speed, and these keyword-only parameters cost about
# 130 ns a call.)


def as_ufunc(fn: Callable[..., Any], theirs: _np.ufunc) -> Ufunc:
    """`fn` (a function of the ufunc's inputs, usually a primitive) with NumPy's signature of
    the ufunc `theirs` (`fgrad.numpy._ufunc_signature`), whose name and `.primitive` it
    keeps."""
    # a primitive is bound directly (what calling it would do); None when fn is a function
    bare = fn if isinstance(fn, Primitive) else None
    nin, name = theirs.nin, theirs.__name__

    def ufunc(*args: ArrayLike, **kwargs: Any) -> Array:
        if not kwargs and len(args) == nin:  # the common call: the inputs alone
            if bare is None:
                return scalar_if_0d(fn(*args))
            if nin > 2:
                return fn(*args)
            return bind_one(bare, args[0]) if nin == 1 else bind_two(bare, args[0], args[1])
        inputs, out, keywords = _ufunc_signature.parse(name, nin, args, kwargs)
        if _ufunc_signature.all_default(out, keywords):
            return scalar_if_0d(fn(*inputs))
        return scalar_if_0d(_with_keywords(fn, theirs, inputs, out, **keywords))

    ufunc.__signature__ = _ufunc_signature.signature(nin)  # type: ignore[attr-defined]
    prim = fn if isinstance(fn, Primitive) else getattr(fn, "primitive", None)
    ufunc.__name__ = ufunc.__qualname__ = prim.name if prim is not None else fn.__name__
    ufunc.__doc__ = (
        fn.__doc__
        if prim is None
        else f"NumPy's `{theirs.__name__}`, differentiable to every order."
    )
    made = cast("Ufunc", ufunc)
    if prim is not None:
        made.primitive = prim  # what the batching rules and the graph know it by
    if bare is not None:
        made.bare = bare  # without keywords, the wrapper binds this primitive: see `_box`
    return mirror("ufunc")(made)


def scalar_if_0d(ans):
    """A result as NumPy's ufuncs and reductions give it: a NumPy scalar where it is 0-d (a
    function written in fgrad's operations may end in a `where`, which makes a 0-d array, as
    NumPy's `where` does); each of a tuple's. Rows of a `vmap` stay as they are."""
    if type(ans) is tuple:
        return tuple(scalar_if_0d(a) for a in ans)
    if type(ans) is _np.ndarray:
        return ans[()] if ans.ndim == 0 else ans
    if type(ans) is Box and type(innermost(ans)) is _np.ndarray and not holds_batch(ans):
        return ans[()] if innermost(ans).ndim == 0 else ans
    return ans


def _with_keywords(fn, theirs, args, out, *, where, casting, order, dtype, subok, signature):
    """A ufunc mirror called with NumPy's keywords (see `as_ufunc`)."""
    name = theirs.__name__
    refuse_out(out, name)
    # (another library's arrays take fgrad's path: Dask's ufuncs take fewer keywords)
    if numpy_applies(*args):
        keywords = dict(
            where=where, casting=casting, order=order, dtype=dtype, subok=subok, signature=signature
        )
        return theirs(*args, **{k: v for k, v in keywords.items() if v is not None})
    if where is not True:
        raise refuse(
            name,
            "where",
            "without `out`, NumPy leaves the elements where the mask "
            "is False uninitialized, and fgrad has no `out`",
            f"Use fgrad.numpy.where(mask, fgrad.numpy.{name}(x), fill) instead",
        )
    refuse_layout(name, order=(order, "K"), subok=(subok, True))
    if dtype is None and signature is None and casting == "same_kind":
        return fn(*args)
    loop = loop_dtypes(theirs, [_dtype_or_weak(a) for a in args], dtype, signature, casting)
    return fn(*(_in_dtype(a, dt) for a, dt in zip(args, loop)))


def loop_dtypes(theirs, dtypes, dtype, signature, casting):
    """The dtypes of the loop NumPy's (g)ufunc `theirs` runs for inputs of `dtypes` with its
    keywords `dtype`, `signature` and `casting` (a TypeError where NumPy gives one)."""
    if dtype is not None and signature is not None:
        raise TypeError(f"{theirs.__name__}: cannot specify both 'signature' and 'dtype'")
    if dtype is not None:
        signature = (None,) * len(dtypes) + (_np.dtype(dtype),) * theirs.nout
    keywords = (
        {"casting": casting} if signature is None else {"casting": casting, "signature": signature}
    )
    return theirs.resolve_dtypes(tuple(dtypes) + (None,) * theirs.nout, **keywords)


def _dtype_or_weak(a):
    """An input's dtype as `ufunc.resolve_dtypes` takes it: a Python number is weakly typed."""
    if type(a) in (int, float, complex):
        return type(a)
    return dtype_of(a)


def _in_dtype(a, dtype):
    if type(a) in (int, float, complex) or dtype_of(a) == dtype:
        return a
    return astype(a, dtype) if is_traced(a) else _np.asarray(a, dtype=dtype)


# --- the operators --------------------------------------------------------------------------------
# `x * y` on traced values binds these: the rules of the primitive of the same name, with the
# operator itself as the impl, so that the value is the operator's on the plain values
# (NumPy's scalar arithmetic for NumPy scalars, `ndarray ** 2` as np.square, ...), whose last
# bits the ufunc does not always give for complex and float32 values. The unary methods have
# theirs too: `-s`, `abs(s)`, `~n` and `s.conjugate()` of a Python number that a `jit` record
# holds as it was given compute as Python does, as they do eagerly: a Python float stays weak
# (float32 times -2.0 is float32, not float64) and a Python int keeps its unbounded precision.
# On arrays and NumPy scalars each is the ufunc. Each twin is made next to its primitive, and
# takes its Taylor rule there if it has one.


def _operator_of(prim, op):
    twin = Primitive(prim.name, op, vjps=prim.vjps, jvps=prim.jvps)
    register_rules(twin, forward=forward_rules[prim])
    return twin


# --- arithmetic -----------------------------------------------------------------------------------


def _sum_taylor_rule(prim, sign):
    """x + y and x - y: coefficient by coefficient, broadcast to the result's shape and dtype."""

    def rule(primals, series):
        ans = bind(prim, primals, {})
        sx, sy = series
        out = []
        for k in range(len(sx if sx is not None else sy)):
            a = None if sx is None else sx[k]
            b = None if sy is None else sy[k]
            if b is not None and sign < 0:
                b = negative(b)
            c = _taylor.add(a, b)
            out.append(None if c is None else broadcast_like(c, ans))
        return ans, tuple(out)

    return _taylor.kind_of_rule(rule, "linear")


add = mirror("ufunc")(
    defprimitive(
        _np.add, vjp=(_ct_to_x, _ct_to_y), jvp=(_t_broadcast, _t_broadcast), forward="linear"
    )
)
add_operator = _operator_of(add, _operator.add)
register_rules(add, taylor=_sum_taylor_rule(add, 1))
register_rules(add_operator, taylor=_sum_taylor_rule(add_operator, 1))


def _neg_ct_to_y(ans, x, y):
    like = unbroadcast_meta(y, ans)
    if like is None:
        return lambda ct: -ct
    return lambda ct: unbroadcast(-ct, like)


subtract = mirror("ufunc")(
    defprimitive(
        _np.subtract,
        vjp=(_ct_to_x, _neg_ct_to_y),
        jvp=(_t_broadcast, lambda t, ans, x, y: broadcast_like(negative(t), ans)),
        forward="linear",
    )
)
subtract_operator = _operator_of(subtract, _operator.sub)
register_rules(subtract, taylor=_sum_taylor_rule(subtract, -1))
register_rules(subtract_operator, taylor=_sum_taylor_rule(subtract_operator, -1))


# Bprops use operators, which cost nothing over NumPy's on plain values (a cotangent and a
# residual are plain in a first derivative) and are fgrad's on traced ones. A list operand
# is made an array first, as NumPy reads it: `numpy.float64 * list` would be Python's
# sequence repetition, not a product.
def _operand(y):
    return _np.asarray(y) if isinstance(y, (list, tuple)) else y


def _mul_vjp_x(ans, x, y):
    like, y = unbroadcast_meta(x, ans), _operand(y)
    if like is None:
        return lambda ct: ct * y
    return lambda ct: unbroadcast(ct * y, like)


def _mul_vjp_y(ans, x, y):
    like, x = unbroadcast_meta(y, ans), _operand(x)
    if like is None:
        return lambda ct: x * ct
    return lambda ct: unbroadcast(x * ct, like)


multiply: Primitive = mirror("ufunc")(
    defprimitive(
        _np.multiply,
        vjp=(_mul_vjp_x, _mul_vjp_y),
        jvp=(
            lambda t, ans, x, y: broadcast_like(multiply(t, y), ans),
            lambda t, ans, x, y: broadcast_like(multiply(x, t), ans),
        ),
        forward="linear",
    )
)
multiply_operator = _operator_of(multiply, _operator.mul)
register_rules(multiply, taylor=_taylor.bilinear_rule(multiply))
register_rules(multiply_operator, taylor=_taylor.bilinear_rule(multiply_operator))


def _div_vjp_x(ans, x, y):
    like = unbroadcast_meta(x, ans)
    if like is None:
        return lambda ct: ct / y
    return lambda ct: unbroadcast(ct / y, like)


def _div_vjp_y(ans, x, y):
    like = unbroadcast_meta(y, ans)
    return lambda ct: unbroadcast(-(ct * ans / y), like)


def _quotient_taylor_rule(prim):
    def rule(primals, series):
        ans = bind(prim, primals, {})
        order = len(series[0] if series[0] is not None else series[1])
        x = _taylor.full(primals[0], series[0], order)
        if series[1] is None:  # a constant divisor: linear
            return ans, tuple(
                None if c is None else broadcast_like(c / primals[1], ans) for c in x[1:]
            )
        y = _taylor.full(primals[1], series[1], order)
        z = _taylor.quotient_coefficients(x, y, ans, order)
        return ans, tuple(None if c is None else broadcast_like(c, ans) for c in z)

    return _taylor.kind_of_rule(rule, "speed")


divide = mirror("ufunc")(
    defprimitive(
        _np.divide,
        vjp=(_div_vjp_x, _div_vjp_y),
        jvp=(
            lambda t, ans, x, y: broadcast_like(t / y, ans),
            lambda t, ans, x, y: broadcast_like(negative(t * ans / y), ans),
        ),
        forward="speed",
    )
)
true_divide = divide
divide_operator = _operator_of(divide, _operator.truediv)
register_rules(divide, taylor=_quotient_taylor_rule(divide))
register_rules(divide_operator, taylor=_quotient_taylor_rule(divide_operator))


def _negative(x):
    """`np.negative`, but a NumPy float scalar by its own arithmetic (`-x`: 0.02 us, where the
    ufunc takes 0.14; the derivative of cos, `-sin(x)`, is one per use), the same value."""
    if type(x) in _SCALAR_FLOATS:
        return -x
    return _np.negative(x)


_SCALAR_FLOATS = frozenset((_np.float64, _np.float32, _np.complex128, _np.complex64))

negative: UnaryFunction = mirror("ufunc")(
    defunary(
        _negative,
        vjp=lambda ans, x: negative,
        jvp=lambda t, ans, x: negative(t),
        name="negative",
        forward="linear",
    )
)
negative.__doc__ = "-x: NumPy's `negative`, without the ufunc's keywords; linear, derivative -1."
register_rules(negative.primitive, taylor=_taylor.linear_rule(negative.primitive))
negative_operator = _operator_of(negative.primitive, _operator.neg)


# --- power: exact at 0 to every order -------------------------------------------------------------


def _is_constant(y):
    return type(y) is not Box


def _dpow_dx(x, y):
    """d(x**y)/dx = y * x**(y-1), with an exact 0 where the exponent y is 0.

    Without the guard, the third derivative of x**2.0 at 0 would be 0 * 0**-1 = nan. A traced
    exponent (batched, recorded or differentiated) takes `_dpow_dx_traced`.
    """
    if not _is_constant(y):
        return _dpow_dx_traced(x, y)
    if isinstance(y, (list, tuple)):
        y = _np.asarray(y)  # NumPy's meaning of a list exponent; `[2.0] - 1` is an error
    if isinstance(y, (_np.ndarray, _np.integer)) and y.dtype.kind in "iub":
        # in the power's float dtype, as NumPy computes x**y: y - 1 in int8 wraps at -128
        y = _np.asarray(y, dtype=_np.result_type(dtype_of(x), y.dtype, _np.float16))
    if is_lazy(y):  # its values are not read: the guard always applies
        y_is_zero = y == 0
        return where(y_is_zero, 0.0, y * x ** _np.where(y_is_zero, 1.0, y - 1.0))
    if _np.ndim(y) == 0 and y in (1, 2):  # x**1 and x**2: no power to differentiate again
        return y if y == 1 else y * x
    y_is_zero = _np.asarray(y) == 0
    if y_is_zero.all():
        return None
    if y_is_zero.any():
        safe_y = _np.where(y_is_zero, 1.0, _np.asarray(y) - 1.0)
        return where(y_is_zero, 0.0, y * x**safe_y)
    return y * x ** (y - 1)


def _dpow_dx_traced(x, y):
    """`_dpow_dx` for a traced exponent, with the constant exponent's values bit for bit: 0
    where y's value is 0. y's own derivative stays: d2/dxdy x**y at y == 0 is 1/x, so the
    formula is guarded (a 0, no derivative in y) only where 1/x is not finite: x == 0, nan,
    or a subnormal x whose reciprocal overflows (0 * inf would be nan there). At x == 0 d/dx
    x**y is 0 at y == 0 and +-inf on either side (no derivative in y exists); at a tiny
    subnormal x the mixed partial 1/x overflows, and the guard gives 0 for it. At the other
    zeros of y, + 0.0 turns 0 * (1/x) < 0 into the constant exponent's +0.0."""
    y_value = mask_values(y)
    y_is_zero = y_value == 0
    if not may_hold(y_is_zero):
        return y * x ** (y - 1)
    x_value = mask_values(x)
    dtype = _np.result_type(dtype_of(x), dtype_of(y), _np.float16)
    guarded = _np.logical_and(y_is_zero, _reciprocal_is_not_finite(x_value, dtype))
    d = where(guarded, 0.0, y * x ** where(guarded, 1, y - 1))
    return where(y_is_zero, d + 0.0, d)


def _reciprocal_is_not_finite(x_value, dtype):
    """Where 1/x in `dtype` is not finite, read without computing it (a replayed record would
    warn of the overflow): x == 0, nan, and the subnormals below the smallest finite 1/max."""
    if dtype_of(x_value).kind not in "fc":
        return x_value == 0  # an integer's reciprocal is finite but at 0
    return _np.logical_not(_np.abs(x_value) >= _smallest_invertible(dtype))


@functools.cache
def _smallest_invertible(dtype):
    """The smallest positive float of dtype (or of its real part) whose reciprocal is finite."""
    real = _np.finfo(dtype).dtype
    tiny = real.type(1) / _np.finfo(real).max
    with _np.errstate(over="ignore", divide="ignore"):
        while not _np.isfinite(real.type(1) / tiny):
            tiny = _np.nextafter(tiny, real.type(_np.inf))
    return tiny


def _dpow_dy(ans, x, y):
    """d(x**y)/dy = x**y * log(x), taken as 0 at x == 0 (as JAX does) instead of 0 * -inf.
    log(x) in the power's dtype: NumPy's log of a uint8 or float16 base is float16.

    Where x**y is subnormal or 0 and x is a normal number, it is x**(y-1) * (x log(x))
    (`_dpow_dy_by_slope`): its derivative in x, x**(y-1) (1 + y log x), then keeps the term
    x**y / x, which the product x**y * log(x) rounds away (x**2 at x = 1e-4 in float16: d/dx
    d/dy was -0.0018425, true -0.0017423). Not at a subnormal x: there x**(y-2), which the
    form's own derivative in y takes, overflows (d2/dy2 x**y at 1e-310 was inf)."""
    if dtype_of(x) != dtype_of(ans):
        x = astype(x, dtype_of(ans))
    x_value = mask_values(x)
    tiny = _np.finfo(dtype_of(ans)).tiny
    x_is_zero = x_value == 0
    by_slope = _np.logical_and(_np.abs(mask_values(ans)) < tiny, _np.abs(x_value) >= tiny)
    if may_hold(by_slope):
        by_value = ans * log(where(_np.logical_or(by_slope, x_is_zero), 1.0, x))
        return where(x_is_zero, 0.0, where(by_slope, _dpow_dy_by_slope(x, y, by_slope), by_value))
    if may_hold(x_is_zero):
        return where(x_is_zero, 0.0, ans * log(where(x_is_zero, 1.0, x)))
    return ans * log(x)


def _dpow_dy_by_slope(x, y, mask):
    """x**(y-1) * (x log(x)) where `mask` holds (elsewhere that of x = 1, 0: no inf or nan
    for a reverse pass to multiply by 0); y - 1 in the power's float dtype, as `_dpow_dx`."""
    if isinstance(y, (list, tuple)):
        y = _np.asarray(y)
    if dtype_of(y).kind in "iub":  # (y - 1 in int8 wraps at -128)
        y = astype(y, _np.result_type(dtype_of(x), dtype_of(y), _np.float16))
    safe_x = where(mask, x, 1.0)
    return power(safe_x, y - 1) * _x_log_x(safe_x)


def _x_log_x_value(x):
    return x * _np.log(x)


# x log(x) as one function (slope log(x) + 1): as a product, reverse mode sent log(x) the
# cotangent ct x**(y-1) x = ct x**y, which underflows (`_dpow_dy`), before dividing it by x
_x_log_x = defunary(_x_log_x_value, "log(x) + 1.0", name="x_log_x", namespace=globals())


def _pow_vjp_x(ans, x, y):
    like = meta(x)
    d = _dpow_dx(x, y)
    if d is None:
        return _no_gradient
    return lambda ct: unbroadcast(ct * d, like)


def _pow_vjp_y(ans, x, y):
    like = meta(y)
    d = _dpow_dy(ans, x, y)
    return lambda ct: unbroadcast(ct * d, like)


def _no_gradient(ct):
    return None


def _pow_jvp_x(t, ans, x, y):
    d = _dpow_dx(x, y)
    return None if d is None else broadcast_like(t * d, ans)


power = mirror("ufunc")(
    defprimitive(
        _np.power,
        vjp=(_pow_vjp_x, _pow_vjp_y),
        jvp=(_pow_jvp_x, lambda t, ans, x, y: broadcast_like(t * _dpow_dy(ans, x, y), ans)),
        forward="derived",  # _dpow_dx and _dpow_dy, each in both rules
    )
)
power_operator = _operator_of(power, _operator.pow)
# `float_power`'s value: NumPy's own (for float64 arrays np.power takes a vectorised loop whose
# last bit differs from float_power's in about 5% of elements), with power's rules
float_power_values = _operator_of(power, _np.float_power)


# Its Taylor rule: by products of series for a small integer exponent, by recurrences
# otherwise, the general rule where those divide by 0.

_SMALL_POWERS = range(1, 17)  # x**n by products of series, exact at x = 0


def _traced_power(prim, primals, series):
    """x ** a with a traced exponent, for a real base x > 0: exp(a log x), the series of log x,
    times a, through exp's recurrence (y' = y p' for p = a log x):
    y_k = sum_(j=1..k) (j / k) p_j y_(k-j). Its last term p_k y_0 is not taken from the value
    y_0 = x_0^a: p_k = a_k log x_0 + r_k / x_0, r_k = sum_(i<k) a_i x_0 ln_(k-i), so
    p_k y_0 = a_k log(x_0) y_0 + r_k x_0^(a-1), the slope `jvp` computes. From y_0 the
    coefficients were 0 or inf wherever the value under- or overflows and they do not
    (x^a at x = 1e-40, a = 8.5: 1e-340, its derivative in x 8.5e-300)."""
    x0, a0 = primals
    ans = bind(prim, primals, {})
    order = len(series[0] if series[0] is not None else series[1])
    x = _taylor.full(x0, series[0], order)
    a = _taylor.full(a0, series[1], order)
    log_x0 = log(x0)
    slope = _traced_power_slope(x0, a0)
    ln = [log_x0]  # log x: x ln' = x', so x0 ln_k = x_k - sum_(j<k) (j/k) ln_j x_(k-j)
    scaled_ln = [None]  # x0 ln_k, k >= 1
    p = [None]
    y = [None]  # y_0 = ans is left out: it enters only the last term, p_k y_0
    for k in range(1, order + 1):
        inner = None
        for j in range(1, k):
            if ln[j] is not None and x[k - j] is not None:
                inner = _taylor.add(inner, _taylor.scaled_product(ln[j], x[k - j], j / k))
        num = x[k] if inner is None else (-inner if x[k] is None else x[k] - inner)
        scaled_ln.append(num)
        ln.append(None if num is None else num / x0)
        rest = _taylor.cauchy(a, scaled_ln, k)  # i = k drops out: scaled_ln[0] is None
        by_a = None if a[k] is None else a[k] * log_x0
        p.append(_taylor.add(by_a, None if rest is None else rest / x0))
        last = _taylor.add(
            None if by_a is None else by_a * ans, None if rest is None else rest * slope
        )
        y.append(_taylor.add(_taylor.integrate(p, y, k), last))
    return ans, tuple(None if c is None else broadcast_like(c, ans) for c in y[1:])


def _traced_power_slope(x0, a0):
    """x0**(a0-1) by NumPy's ufunc, as under `vmap` (a scalar's ** rounds otherwise), and 0
    where a0 is 0 and 1/x0 is not finite, as `_dpow_dx_traced` takes it: at a subnormal x0
    it multiplies x's zero coefficients (0 * inf was nan where jvp gave log x)."""
    a_is_zero = mask_values(a0) == 0
    if not may_hold(a_is_zero):
        return power(x0, a0 - 1)
    dtype = _np.result_type(dtype_of(x0), dtype_of(a0), _np.float16)
    guarded = _np.logical_and(a_is_zero, _reciprocal_is_not_finite(mask_values(x0), dtype))
    return where(guarded, 0.0, power(x0, where(guarded, 1, a0 - 1)))


def _is_small_power(a):
    """Whether a constant exponent is one integer 0..16 (a real, finite scalar). An exponent
    an outer transform differentiates is not one: the products of series for an integer
    power drop its derivative (and `int(a)` of it raised: `grad` of a `laplacian` of x ** y
    in y; probe FE #3); the recurrence keeps it."""
    if _np.ndim(a) != 0 or not _np.isrealobj(a):
        return False
    if any(not (lv.batches or lv.stages) for lv in live_levels_of([a])):
        return False
    if not _np.isfinite(a):
        return False
    return a == int(a) and (int(a) in _SMALL_POWERS or int(a) == 0)


def _power_taylor_rule(prim):
    def rule(primals, series):
        x0, a = primals
        if series[1] is None and holds_batch(a):  # one exponent per row, constant here
            by_recurrence = _in_float64_where_the_slope_is_not_normal(_by_recurrence)
            return _by_rows(prim, primals, series, mask_values(x0) == 0, by_recurrence)
        if series[1] is not None:  # a traced exponent: not a constant power
            if "c" in (dtype_of(x0).kind, dtype_of(a).kind):
                return _taylor.general_rule(prim, primals, series, {})
            traced = _in_float64_where_the_slope_is_not_normal(_traced_power)
            return _by_rows(prim, primals, series, mask_values(x0) <= 0, traced)
        a = _np.asarray(a) if isinstance(a, (list, tuple)) else a
        if _is_small_power(a):
            if int(a) == 0:
                return bind(prim, primals, {}), None
            return _constant_power(prim, primals, series)
        # the recurrence divides by x0
        constant = _in_float64_where_the_slope_is_not_normal(_constant_power)
        return _by_rows(prim, primals, series, mask_values(x0) == 0, constant)

    return _taylor.kind_of_rule(rule, "speed")


def _constant_power(prim, primals, series):
    """x ** a for a constant exponent a: by products of series for a small integer a (exact
    at x = 0), else by x y' = a y x' (`power_coefficients`, which needs x0 != 0)."""
    x0, a = primals
    ans = bind(prim, primals, {})
    order = len(series[0])
    x = _taylor.full(x0, series[0], order)
    a = _np.asarray(a) if isinstance(a, (list, tuple)) else a
    if _is_small_power(a):
        out = _taylor.integer_power_coefficients(x, int(a), order)
    else:
        out = _taylor.power_coefficients(x, power(x0, a - 1), a, order)
    return ans, tuple(None if c is None else broadcast_like(c, ans) for c in out)


def _by_recurrence(prim, primals, series):
    """x ** a for an exponent a constant here (one per row of a `vmap`) by x y' = a y x'
    (`power_coefficients`, in range where the value is not, at any order; needs x0 != 0)."""
    x0, a = primals
    ans = bind(prim, primals, {})
    x = _taylor.full(x0, series[0], len(series[0]))
    out = _taylor.power_coefficients(x, power(x0, a - 1), a, len(series[0]))
    return ans, tuple(None if c is None else broadcast_like(c, ans) for c in out)


def _in_float64_where_the_slope_is_not_normal(direct):
    """`direct(prim, primals, series)` for x ** a, its coefficients computed in float64 and
    cast back where x is float16 or float32 and the slope x0**(a0-1) is not a normal number
    of that dtype: the recurrences start each coefficient from that slope, so a subnormal one
    left its few digits in all (x**2.5 at 1e-30 in float32: the second derivative 12% off) and
    an underflowed one 0 (float16 at 1e-5: inf, nan with a traced exponent). Their true
    values, x**(a-k) for x < 1, are in range. Read row by row under `vmap`, as `_by_rows`."""

    def rule(prim, primals, series):
        x0, a0 = primals
        if dtype_of(x0) not in (_np.float16, _np.float32) or any(map(is_lazy, primals)):
            return direct(prim, primals, series)
        a_value = a0 if type(a0) in (int, float) else mask_values(a0)  # (a weak Python float)
        with _np.errstate(all="ignore"):
            slope = _np.power(mask_values(x0), a_value - 1)  # (in x0**a0's dtype)
        dtype = dtype_of(slope)
        if dtype not in (_np.float16, _np.float32):
            return direct(prim, primals, series)
        if not bool(_np.any(_np.abs(slope) < _np.finfo(dtype).tiny)):
            return direct(prim, primals, series)
        ans = bind(prim, primals, {})
        wide = [_to_float64(v) for v in primals]
        series = [None if s is None else tuple(map(_to_float64, s)) for s in series]
        _, out = direct(prim, wide, series)
        return ans, tuple(None if c is None else astype(c, dtype_of(ans)) for c in out)

    return rule


def _to_float64(v):
    return None if v is None else astype(v, _np.float64)


def _by_rows(prim, primals, series, excluded, direct):
    """The Taylor rule `direct(prim, primals, series)` where the mask `excluded` (of x0's
    values) holds nowhere, else the general rule. Under `vmap` each row reads its own mask,
    as a loop over the rows does: rows that differ run apart (`fgrad.batching`). Taken to hold
    in every row unread (`may_hold`), it sent `vmap` to the general rule where the loop took
    the recurrence, and the coefficients differed in their last bits. A lazy mask (Dask) is
    not read: the general rule."""
    if is_lazy(excluded) or bool(_np.any(excluded)):
        return _taylor.general_rule(prim, primals, series, {})
    return direct(prim, primals, series)


register_rules(power, taylor=_power_taylor_rule(power))
register_rules(power_operator, taylor=_power_taylor_rule(power_operator))
register_rules(float_power_values, taylor=_power_taylor_rule(float_power_values))


# --- unary functions ------------------------------------------------------------------------------

# Each is written once, as its derivative: the reverse rule is ct times it, the forward rule t
# times it (`defunary`). These five stay bare primitives, without NumPy's ufunc keywords (see
# "NumPy's ufunc signature" above), and their derivatives are expressions written into both
# rules: they are the functions of the hottest loops. The others take the keywords. Their
# docstrings are set on the function objects (free: a call never reads them). Their Taylor
# rules are `fgrad.taylor`'s recurrences, each registered under its function.
sin = mirror("ufunc")(defunary(_np.sin, "cos(x)", namespace=globals()))
sin.__doc__ = "sin(x): NumPy's `sin`, without the ufunc's keywords; derivative cos(x)."
cos: UnaryFunction = mirror("ufunc")(defunary(_np.cos, "-sin(x)", namespace=globals()))
cos.__doc__ = "cos(x): NumPy's `cos`, without the ufunc's keywords; derivative -sin(x)."
# (sin and cos: one recurrence of the pair)
register_rules(sin.primitive, taylor=_taylor.sine_pair_rule(sin.primitive, cos.primitive, 0, -1))
register_rules(cos.primitive, taylor=_taylor.sine_pair_rule(sin.primitive, cos.primitive, 1, -1))
tanh = mirror("ufunc")(defunary(_np.tanh, "1.0 - ans * ans", namespace=globals()))
tanh.__doc__ = "tanh(x): NumPy's `tanh`, without the ufunc's keywords; derivative 1 - tanh(x)**2."
register_rules(tanh.primitive, taylor=_taylor.tanh_rule(tanh.primitive))
exp = mirror("ufunc")(defunary(_np.exp, "ans", namespace=globals()))
exp.__doc__ = "e**x: NumPy's `exp`, without the ufunc's keywords; derivative exp(x)."
register_rules(exp.primitive, taylor=_taylor.exp_rule(exp.primitive))
log = mirror("ufunc")(defunary(_np.log, "1.0 / x", namespace=globals()))
log.__doc__ = "The natural logarithm: NumPy's `log`, without the ufunc's keywords; derivative 1/x."
register_rules(log.primitive, taylor=_taylor.log_rule(log.primitive))
tan = as_ufunc(defunary(_np.tan, lambda ans, x: 1.0 + ans * ans), _np.tan)
register_rules(tan.primitive, taylor=_taylor.tan_rule(tan.primitive))
log1p = as_ufunc(defunary(_np.log1p, lambda ans, x: 1.0 / (1.0 + x)), _np.log1p)
register_rules(log1p.primitive, taylor=_taylor.log_rule(log1p.primitive, shift=True))
# expm1' = exp(x), not ans + 1: expm1(-40) rounds to -1, and ans + 1 is 0 for 4.2e-18
expm1 = as_ufunc(defunary(_np.expm1, lambda ans, x: exp(x)), _np.expm1)
register_rules(expm1.primitive, taylor=_taylor.expm1_rule(expm1.primitive, lambda ans, x: exp(x)))
sqrt = as_ufunc(defunary(_np.sqrt, lambda ans, x: 0.5 / ans), _np.sqrt)
register_rules(sqrt.primitive, taylor=_taylor.sqrt_rule(sqrt.primitive))


def _abs_slope(ans, x):
    """+1 where x >= 0 and -1 elsewhere: abs'(0) = 1, as in JAX."""
    return _weights(_np.where(mask_values(x) >= 0, 1, -1), _dtype_of(ans))


def _is_complex(x):
    return dtype_of(x).kind == "c"


def _unit_phase(ans, x):
    """conj(z) / |z| for complex z, with 0 at z = 0 (the subgradient JAX also picks there)."""
    zero = mask_values(ans) == 0
    if may_hold(zero):
        return where(zero, 0.0, _over_real(conj(x), where(zero, 1.0, ans)))
    return _over_real(conj(x), ans)


def _over_real(w, r):
    """w / r for a complex w and a real r > 0, part by part: NumPy's complex division by a
    subnormal r overflowed (nan for |z| at 5e-320 + 5e-320j, where each part's quotient is
    0.7)."""
    return real(w) / r + 1j * (imag(w) / r)


def _abs_vjp(ans, x):
    if _is_complex(x):  # d|z| = Re(conj(z) dz) / |z|: the cotangent is ct conj(z) / |z|
        phase = _unit_phase(ans, x)
        return lambda ct: ct * phase
    slope = _abs_slope(ans, x)
    return lambda ct: ct * slope


def _abs_jvp(t, ans, x):
    if _is_complex(x):
        return real(t * _unit_phase(ans, x))
    return t * _abs_slope(ans, x)


abs = as_ufunc(
    defunary(_np.abs, vjp=_abs_vjp, jvp=_abs_jvp, name="abs", forward="derived"), _np.absolute
)
absolute = abs
abs_operator = _operator_of(abs.primitive, _builtins.abs)


# --- complex numbers ------------------------------------------------------------------------------
# JAX's convention: the cotangent of a complex input z of a real-valued f is
# df/dRe(z) - i df/dIm(z), so grad(|z|^2) at 1+2j is 2-4j (PyTorch returns the conjugate).
# It follows from rules that never conjugate the cotangent except where the function itself
# conjugates: holomorphic rules are ct * f'(z), conj's is conj(ct), real's is ct and imag's
# is -i ct, and a complex cotangent of a real input keeps its real part (`unbroadcast`).


def _linear_unary(theirs, vjp, name: str) -> UnaryFunction:
    """A real-linear unary primitive (conj, real, imag): its tangent is itself of the tangent."""
    prim: UnaryFunction = defunary(
        theirs, vjp=vjp, jvp=lambda t, ans, x: prim(t), name=name, forward="linear"
    )
    # each Taylor coefficient mapped alike
    register_rules(prim.primitive, taylor=_taylor.linear_rule(prim.primitive))
    return prim


_conj: UnaryFunction = _linear_unary(_np.conjugate, lambda ans, x: _conj, "conj")
conj = as_ufunc(_conj, _np.conjugate)
conjugate = conj
conj_operator = _operator_of(_conj.primitive, _operator.methodcaller("conjugate"))


def _real_vjp(ans, x):
    like = meta(x)
    return lambda ct: unbroadcast(ct, like)  # a real cotangent, cast to x's (complex) dtype


_real = _linear_unary(_np.real, _real_vjp, "real")


@mirror("function")
def real(val: ArrayLike) -> Array:
    """NumPy's `real`: the real part (a real input as it is). Its cotangent is real, cast to
    the input's dtype."""
    return _real(val)


def _imag_vjp(ans, x):
    like = meta(x)
    return lambda ct: unbroadcast(multiply(ct, -1j), like)


_imag = _linear_unary(_np.imag, _imag_vjp, "imag")


@mirror("function")
def imag(val: ArrayLike) -> Array:
    """NumPy's `imag`: the imaginary part (0 for a real input). The cotangent of a complex
    input is -i times the output's cotangent."""
    return _imag(val)


@mirror("function")
def real_if_close(a: ArrayLike, tol: float = 100) -> Array:
    """NumPy's `real_if_close`: the real part of a complex `a` whose imaginary parts are all
    below `tol` (in machine epsilons of a's dtype when `tol > 1`), else `a` as it is. Which of
    the two is decided on the values; either way the result is differentiable (the real part's
    derivative, or the identity).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.real_if_close(np.array([2.1 + 4e-14j, 5.2 + 3e-15j]), tol=1000)
    array([2.1, 5.2])
    """
    why = "its result's dtype (real or complex) depends on the values"
    refuse_lazy("real_if_close", why, innermost(a))
    if not is_traced(a):
        return _np.real_if_close(a, tol=tol)
    a = asarray(a)  # (NumPy's result is an array, for a number too)
    if not _is_complex(a):
        return a
    if tol > 1:
        tol = _np.finfo(dtype_of(a)).eps * tol
    # The choice sets the result's dtype, so it is read: under `vmap` the rows' masks, which
    # agree unless rows choose differently (then `vmap` splits the batch).
    return real(a) if _np.all(primal(_np.abs(_np.imag(mask_values(a))) < tol)) else a


@mirror("function")
def angle(z: ArrayLike, deg: bool = False) -> Array:
    """NumPy's `angle`: arctan2(imag(z), real(z)), in radians unless `deg`. A real input has
    angle 0 or pi and zero derivative; at z = 0 the derivative is taken as 0."""
    if not _is_complex(z):
        return _np.angle(primal(z), deg=deg)
    out = _angle_p(z)
    return out * (180 / _np.pi) if deg else out


def _angle_grad(ans, z):
    """conj(z) / |z|^2, 0 at z = 0: d angle = Im(conj(z) dz) / |z|^2; divided by |z| twice,
    part by part (|z|^2 itself underflowed below |z| = 1.5e-162, where the gradient was 0,
    and overflowed above 1.3e154), as arctan2's rule does."""
    r = abs(z)
    zero = mask_values(r) == 0
    if may_hold(zero):
        r = where(zero, 1.0, r)
        return where(zero, 0.0, _over_real(_over_real(conj(z), r), r))
    return _over_real(_over_real(conj(z), r), r)


def _angle_vjp(ans, z):
    g = _angle_grad(ans, z)
    return lambda ct: multiply(ct * g, -1j)


_angle_p = defprimitive(
    _np.angle,
    vjp=_angle_vjp,
    jvp=lambda t, ans, z: imag(t * _angle_grad(ans, z)),
    name="angle",
    forward="derived",
)


# --- maximum and minimum: ties split evenly -------------------------------------------------------


# the operands `_choice_weights` compares as they are
_PLAIN_OPERANDS = frozenset((_np.ndarray, float))


def _choice_weights(ans, x, y, wins):
    """Weights of x's share of the gradient: 1 where x wins, 1/2 at ties, 0 where y wins.

    Without ties (the common case: relu away from 0) the weights are the boolean mask itself,
    which multiplies a cotangent in its own dtype and costs a fraction of a float array."""
    if type(x) in _PLAIN_OPERANDS and type(y) in _PLAIN_OPERANDS:  # first: relu is hot
        xv, yv = x, y
    else:  # (under `vmap` or `jit`, constants with one value per row or computed in the
        # record: these NumPy calls dispatch to fgrad's)
        xv, yv = mask_values(x), mask_values(y)
        # compared in the result's dtype, as the choice was made: a float32 x ties with the
        # bound 0.7 where x == float32(0.7) (NEP 50), which a Python number read as a float64
        # array (a `jit` argument, a NumPy float32 scalar's partner) would miss
        dt = _dtype_of(ans)
        xv = xv if dtype_of(xv) == dt else astype(xv, dt)
        yv = yv if dtype_of(yv) == dt else astype(yv, dt)
    w = wins(xv, yv)
    ties = xv == yv
    if type(ties) is _np.ndarray:
        tied = _np.count_nonzero(ties)  # a third of ties.any()'s time
    else:  # a batched or lazy mask is not read (ties are taken to be possible); a record's
        # reads a bool
        tied = may_hold(ties)
    if tied:
        w = _weights(_np.where(w, 1.0, _np.where(ties, 0.5, 0.0)), _dtype_of(ans))
    ans_shape = ans.shape if type(ans) is _np.ndarray else shape_of(ans)
    return w if w.shape == ans_shape else _np.broadcast_to(w, ans_shape)


def _chooser(impl, wins_x, wins_y):
    def vjp_x(ans, x, y):
        like, w = unbroadcast_meta(x, ans), _choice_weights(ans, x, y, wins_x)
        if like is None:
            return lambda ct: ct * w
        return lambda ct: unbroadcast(ct * w, like)

    def vjp_y(ans, x, y):
        like, w = unbroadcast_meta(y, ans), _choice_weights(ans, y, x, wins_y)
        if like is None:
            return lambda ct: ct * w
        return lambda ct: unbroadcast(ct * w, like)

    def jvp_x(t, ans, x, y):
        return broadcast_like(t * _choice_weights(ans, x, y, wins_x), ans)

    def jvp_y(t, ans, x, y):
        return broadcast_like(t * _choice_weights(ans, y, x, wins_y), ans)

    return defprimitive(impl, vjp=(vjp_x, vjp_y), jvp=(jvp_x, jvp_y), forward="derived")


maximum = as_ufunc(_chooser(_np.maximum, _np.greater, _np.greater), _np.maximum)
minimum = as_ufunc(_chooser(_np.minimum, _np.less, _np.less), _np.minimum)


def _positive(x):
    """x itself (a traced value is returned as it is; arrays are immutable inside a
    transform), a copy for a plain array. A Python number (traced under `jit`, which holds it
    as given) becomes NumPy's scalar, as the ufunc makes it."""
    if type(x) is not Box:
        return _np.positive(x)
    strong = strongly_typed(x)
    return x if strong is x else strong[()]


positive = as_ufunc(_positive, _np.positive)
positive.__doc__ = "NumPy's `positive`: " + (_positive.__doc__ or "")


def _int_bound(a, bound, outside):
    """A Python int bound of an integer array that lies on or past the far end of the array's
    range (`outside` -1: the low end, for a_min; +1: the high end, for a_max) clips nothing:
    None, as NumPy 2's clip drops it (clip(int8 array, 1, 150) is maximum(a, 1), where
    `minimum` would refuse 150 for int8). A bound past the other end is refused by
    maximum/minimum, as by NumPy."""
    kind = getattr(getattr(a, "dtype", None), "kind", None)
    if type(bound) is not int or kind is None or kind not in "iu":
        return bound
    info = _np.iinfo(a.dtype)
    past = bound <= info.min if outside < 0 else bound >= info.max
    return None if past else bound


@mirror("function")
def clip(
    a: ArrayLike,
    a_min: ArrayLike = NO_VALUE,
    a_max: ArrayLike = NO_VALUE,
    out: None = None,
    *,
    min: ArrayLike = NO_VALUE,
    max: ArrayLike = NO_VALUE,
    **kwargs: Any,
) -> Array:
    """NumPy's `clip`, as `minimum(maximum(a, a_min), a_max)` (JAX's definition, so a value
    exactly at a bound gets half the gradient, and the bounds are differentiable too).
    `min`/`max` are NumPy 2's names of the bounds; the other keywords are the ufunc keywords
    of `maximum` and `minimum` (`dtype`, `casting`)."""
    refuse_out(out, "clip")
    if given(min):
        if given(a_min):
            raise TypeError("clip: give a_min or min, not both")
        a_min = min
    if given(max):
        if given(a_max):
            raise TypeError("clip: give a_max or max, not both")
        a_max = max
    a_min = None if a_min is NO_VALUE else _int_bound(a, a_min, -1)
    a_max = None if a_max is NO_VALUE else _int_bound(a, a_max, +1)
    if a_min is None and a_max is None:
        return positive(a, **kwargs)  # NumPy's clip without bounds
    # Signed zeros as NumPy's clip gives them: at a tie maximum/minimum return their second
    # argument; with one bound NumPy's clip is maximum(a, a_min) (clip(-0.0, 0.0, None) is
    # 0.0), with both it keeps `a` (clip(-0.0, 0.0, 1.0) is -0.0)
    if a_max is None:
        return maximum(a, a_min, **kwargs)
    if a_min is None:
        return minimum(a, a_max, **kwargs)
    return minimum(a_max, maximum(a_min, a, **kwargs), **kwargs)


# --- where ----------------------------------------------------------------------------------------


def _where_vjp(i):
    def maker(ans, c, x, y):
        like = unbroadcast_meta((c, x, y)[i], ans)
        # c is the constant boolean mask `where` bound (plain, lazy, or one per row)
        if i == 1:
            return lambda ct: unbroadcast(where(c, ct, 0.0), like)
        return lambda ct: unbroadcast(where(c, 0.0, ct), like)

    return maker


@mirror("function")
def where(condition: ArrayLike, x: ArrayLike | None = None, y: ArrayLike | None = None, /) -> Array:
    """NumPy's `where`: the condition is a constant; x and y are differentiable. With the
    condition alone, its `nonzero()` indices, as in NumPy.

    A masked branch still runs: `where(x > 0, sqrt(x), 0)` at x <= 0 gives a nan gradient from
    sqrt's rule, as in NumPy, JAX and PyTorch; guard the input too:
    `where(x > 0, sqrt(where(x > 0, x, 1.0)), 0)`.
    """
    if x is None or y is None:
        if x is None and y is None:
            # `nonzero` is a family above this one (its batching of counts that differ by
            # row): imported by name, as a later layer's function
            return importlib.import_module("fgrad.numpy.arrays").nonzero(condition)
        raise ValueError(
            "where: pass both x and y, or neither (then where(condition) gives the indices "
            f"where condition holds); got {'x' if y is None else 'y'} alone, "
            f"{describe(x if y is None else y)}"
        )
    if holds_batch(condition) or holds_staged(condition):  # one per row, or a record's
        return _where_p(astype(constant_of(condition), bool), x, y)
    c = primal(condition)  # (`bool_mask`, inline: `where` is hot; a call costs 3%)
    if is_foreign_array(c):
        return _where_p(c if c.dtype == bool else c.astype(bool), x, y)
    return _where_p(_np.asarray(c, dtype=bool), x, y)


_where_p = defprimitive(
    _np.where,
    vjp=(None, _where_vjp(1), _where_vjp(2)),
    jvp=(
        None,
        lambda t, ans, c, x, y: broadcast_like(where(c, t, 0.0), ans),
        lambda t, ans, c, x, y: broadcast_like(where(c, 0.0, t), ans),
    ),
    name="where",
    forward="linear",
)
# Linear in x and y. Sparsity detection: `where` keeps both sides' dependencies, or the
# chosen side's where the condition is a constant of every input (`fgrad.sparsity`).
register_rules(_where_p, taylor=_taylor.linear_rule(_where_p, (1, 2)), sparsity="where")


def bool_mask(condition, shape=None):
    """A condition's values as a constant boolean mask (no derivative), broadcast to `shape`
    if given: a NumPy array; a lazy one for an array of another library (Dask); under `vmap`
    one mask per row, and under `jit` one the record computes, as a constant box (NumPy's
    functions dispatch to fgrad's on it). Rules call this, not `holds_batch` and
    `is_foreign_array` themselves."""
    if holds_batch(condition) or holds_staged(condition):
        mask = astype(constant_of(condition), bool)
    else:
        c = primal(condition)
        if is_foreign_array(c):
            mask = c if c.dtype == bool else c.astype(bool)
        else:
            mask = _np.asarray(c, dtype=bool)
    if shape is None or shape_of(mask) == shape:
        return mask
    return _np.broadcast_to(mask, shape)


# --- no derivative: piecewise constant and boolean results ----------------------------------------

_sign_of_values = nondiff_function(_np.sign)


def _sign_scale(ans, x):
    """1 / |z| for complex z, and 0 where z = 0 (where sign has no derivative: 0, as abs's and
    angle's rules pick there)."""
    zero = mask_values(ans) == 0
    if may_hold(zero):
        return where(zero, 0.0, 1.0 / where(zero, 1.0, abs(x)))
    return 1.0 / abs(x)


def _across(phase, v, scale):
    """i phase Im(conj(phase) v) scale: the part of v across the unit complex `phase`, scaled.

    The one derivative of sign(z) = z / |z| (NumPy 2), which turns with the phase of z and
    keeps its length: its tangent is the part of dz / |z| across z, `_across(sign, dz, 1/|z|)`
    (not holomorphic). That map's transpose under the pairing Re(sum(a b)) (the convention
    above `_linear_unary`) is the same map across conj(sign): Re(ct i s Im(conj(s) t)) =
    -Im(ct s) Im(conj(s) t) = Re(i conj(s) Im(s ct) t)."""
    return 1j * phase * imag(conj(phase) * v) * scale


def _complex_sign_vjp(ans, x):
    phase, scale = conj(ans), _sign_scale(ans, x)
    return lambda ct: _across(phase, ct, scale)


def _complex_sign_jvp(t, ans, x):
    return _across(ans, t, _sign_scale(ans, x))


_complex_sign = as_ufunc(
    defunary(
        _np.sign, vjp=_complex_sign_vjp, jvp=_complex_sign_jvp, name="sign", forward="derived"
    ),
    _np.sign,
)


@mirror("ufunc")
def sign(x: ArrayLike, /, *args: Any, **kwargs: Any) -> Array:
    """NumPy's `sign`: a constant (its derivative is 0 wherever it has one) for real input;
    for complex input NumPy 2's `z / |z|` (0 at 0), differentiable: JAX gives it no
    derivative, which is wrong for every z but 0."""
    if is_traced(x) and dtype_of(x).kind == "c":
        return _complex_sign(x, *args, **kwargs)
    return _sign_of_values(x, *args, **kwargs)


sign.__signature__ = _sign_of_values.__signature__  # type: ignore[attr-defined]
floor = nondiff_function(_np.floor)
ceil = nondiff_function(_np.ceil)
trunc = nondiff_function(_np.trunc)
round = nondiff_function(_np.round, name="round", settings=("decimals",))
around = round
greater = nondiff_function(_np.greater)
greater_equal = nondiff_function(_np.greater_equal)
less = nondiff_function(_np.less)
less_equal = nondiff_function(_np.less_equal)
equal = nondiff_function(_np.equal)
not_equal = nondiff_function(_np.not_equal)
logical_and = nondiff_function(_np.logical_and)
logical_or = nondiff_function(_np.logical_or)
logical_not = nondiff_function(_np.logical_not)
invert = nondiff_function(_np.invert)  # `~x`: logical not of booleans, bitwise not of integers


invert_operator = nondiff(_operator.invert, "invert")  # `~n` (see "the operators")
# and `&`, `|`, `^`, `<<`, `>>` (installed by `fgrad.numpy.bitwise`), by their methods' names
bitwise_operators = {
    name: nondiff(getattr(_operator, f"{name}_" if name in ("and", "or") else name), ufunc)
    for name, ufunc in (
        ("and", "bitwise_and"),
        ("or", "bitwise_or"),
        ("xor", "bitwise_xor"),
        ("lshift", "left_shift"),
        ("rshift", "right_shift"),
    )
}
# and `<`, `<=`, `>`, `>=`, `==`, `!=`, by their methods' names: a traced Python number compared
# gives a Python bool, as eagerly, not np.bool_ (`(s > 1.0) + (s > 0.5)` is 2; np.True_ +
# np.True_ is np.True_, and np.True_ * 3 a strong int64)
comparison_operators = {
    name: nondiff(getattr(_operator, name), ufunc)
    for name, ufunc in (
        ("lt", "less"),
        ("le", "less_equal"),
        ("gt", "greater"),
        ("ge", "greater_equal"),
        ("eq", "equal"),
        ("ne", "not_equal"),
    )
}
bitwise_not = invert
isnan = nondiff_function(_np.isnan)
isfinite = nondiff_function(_np.isfinite)
isinf = nondiff_function(_np.isinf)


# --- batching (vmap) ------------------------------------------------------------------------------


def elementwise_batch_rule(prim):
    """The batching rule of a primitive that broadcasts its arguments as a NumPy ufunc does.

    When every batched argument has its batch axis at the same place and the same rank, and the
    unbatched ones are too short to reach that axis when broadcast from the right, one call on
    the values as they are is right. Otherwise the batch axes go first, each batched argument
    gets length-1 axes up to the longest row, and the unbatched ones broadcast from the right."""

    def rule(args, dims, **params):
        if len(args) == 1:
            return _with_dim(bind(prim, args, params), dims[0])
        batched = [(len(shape(a)), d) for a, d in zip(args, dims) if d is not None]
        nd, d = batched[0]
        if all(b == (nd, d) for b in batched) and all(
            ndim(a) < nd - d for a, e in zip(args, dims) if e is None
        ):
            return _with_dim(bind(prim, args, params), d)
        rows_nd = max(ndim(a) - (e is not None) for a, e in zip(args, dims))
        aligned = [a if e is None else with_example_ndim(a, e, rows_nd) for a, e in zip(args, dims)]
        return _with_dim(bind(prim, aligned, params), 0)

    def _with_dim(out, d):
        return (out, (d,) * len(out)) if prim.multiple_results else (out, d)

    rule.elementwise = True  # BatchLevel's shortcuts apply it directly where rows line up
    return rule


def register_elementwise(namespace):
    """Give every primitive in `namespace` (a module's variables; a function holding its
    primitive counts) the elementwise batching rule, unless it has a rule already."""
    for value in list(namespace.values()):
        prim = getattr(value, "primitive", value)
        if isinstance(prim, (Primitive, NondiffPrimitive)) and prim not in _batching.rules:
            register_rules(prim, batch=elementwise_batch_rule(prim))


# The batching rule of every primitive of this module (and of the core's add_any): each
# broadcasts as a ufunc, and so do the twins of the operators, the comparisons' and the
# bitwise ones' (whose ufuncs are in `fgrad.numpy.bitwise`).
def _add_any_batch_rule(args, dims):
    """add_any of rows and a value the same for every row (under `vmap` of a `jvp`, the
    tangent `t_a * b + a * t_b` of a product with one tangent batched): every operand is first
    broadcast to the rows' shape. add_any's own rules pass a cotangent or tangent through
    unchanged, which is right only for operands of one shape; with NumPy broadcasting inside
    it, the gradient of the unbatched operand kept the rows' axis (shape (3, 2) for an input
    of shape (2,), its values wrong; probe FC #1). `_broadcast_to_p`'s bprop sums the rows."""
    rows_nd = max(ndim(a) - (d is not None) for a, d in zip(args, dims))
    aligned = [a if d is None else with_example_ndim(a, d, rows_nd) for a, d in zip(args, dims)]
    full = _np.broadcast_shapes(*(shape(a) for a in aligned))
    same = [a if shape(a) == full else _broadcast_to_p(a, shape=full) for a in aligned]
    return bind(add_any, same, {}), 0


# (BatchLevel's shortcut applies to add_any only where both operands are rows: `_two_lined_up`)
_add_any_batch_rule.elementwise = True  # type: ignore[attr-defined]
register_rules(add_any, batch=_add_any_batch_rule)
register_elementwise(globals())
register_elementwise(comparison_operators)
register_elementwise(bitwise_operators)


# --- values that rules read -----------------------------------------------------------------------
# A rule that computes a mask or a weight from values calls these instead of testing
# `holds_batch` (vmap) and `is_foreign_array` (Dask) itself: `mask_values`/`array_value` (the
# values), `may_hold`/`read_any` (whether a mask holds), `bool_mask` (a condition as a mask),
# `_weights` (a constant in the result's dtype), `is_lazy` (values not to read at all);
# `fgrad.numpy.shaping` has `as_array` and `numpy_applies` for implementations and for NumPy's
# own function.


def mask_values(x):
    """x's values for a mask computed with NumPy in a rule: a NumPy array, or, when x holds the
    rows of a `vmap`, x as a batched constant (no derivative), on which NumPy's ufuncs and
    functions dispatch to fgrad's and give one mask per row. Such code combines masks with
    NumPy's functions (`_np.logical_and`, not `&`) and asks `may_hold(mask)`, not
    `mask.any()`. An array of another library (Dask) stays one: its mask is lazy too. Under
    `jit`, x stays a value the record computes (reading it whole would be a guard on every
    element), and `may_hold` reads one boolean."""
    return constant_of(x) if holds_batch(x) or holds_staged(x) else array_value(x)


def array_value(x):
    """x's plain value (no derivative) as an array NumPy's functions compute with: a NumPy
    array, or an array of another library (Dask) as it is, lazy, never converted."""
    return as_array(primal(x))


def is_lazy(x):
    """Whether x's values are an array of another library (Dask's), traced or not, which a
    rule does not read (reading would compute it): it takes the branch that holds whatever
    the values are."""
    return is_foreign_array(innermost(x))


def may_hold(mask):
    """Whether a mask holds anywhere. A batched mask is taken to, unread: the branch it guards
    runs for every row, its masked entries on guarded values. So is a lazy mask (of a Dask
    array, traced or not): reading it would compute it."""
    return holds_batch(mask) or is_foreign_array(innermost(mask)) or bool(mask.any())


def read_any(mask):
    """Whether a mask holds anywhere, read from its values for a check (one that raises or
    warns): under `vmap` every row's at once (the rows agree, all False, unless one is wrong;
    otherwise `vmap` runs them apart), under `jit` one boolean the record checks. A lazy mask
    (of a Dask array) is not read: False, and the check is left to the values (a nan)."""
    if is_foreign_array(innermost(mask)):
        return False
    return bool(primal(_np.any(mask)))


__all__ = exported(globals())
