"""`fgrad.scipy.special`: SciPy's special functions with forward and reverse rules.

Each value is computed by `scipy.special` (a primitive's implementation); each derivative is
written in fgrad operations built from other functions of this module and `fgrad.numpy`
(`erf' = 2/sqrt(pi) exp(-x**2)`, `gammaln' = digamma`, `digamma' = polygamma(1, .)`,
`polygamma(n, .)' = polygamma(n + 1, .)`, ...), so every order works in both modes. Where
the textbook derivative is unstable it is taken another way: `expit' = expit(x) expit(-x)`;
`log_ndtr' = phi/Phi` through `erfcx` and its excess over `-x` by a continued fraction (no
underflow or cancellation at x = -1000); the softmax family from the (exact) result; the
modified Bessel functions through `I_n(x) / x**n`, which is smooth at 0. Rules that would be
0 * inf or 0 / 0 at the edge of a domain use masks (constants from the primal values) and say
so in their docstrings. Bessel functions of any order are differentiated in x through the
recurrences in the order (J_v' = (J_{v-1} - J_{v+1}) / 2, ...), exact at x = 0; the order is a
constant. They take a complex x as SciPy does (complex values), with the holomorphic derivative
(`ive`'s factor exp(-|Re x|) is not holomorphic: its rule reads the tangent's real part). So
does digamma, whose derivatives polygamma(n, x) fgrad computes for complex x (SciPy's
polygamma is real only). The incomplete gamma functions are differentiable in a too: d/da has
no closed form and is a series or a continued fraction written in fgrad operations (see that
section); so are the incomplete beta function's d/da and d/db (a hypergeometric series).

The primitives of one argument are `fgrad.primitive.defunary(impl, derivative)`; those of
two (with broadcasting) are built by `_binary` below on `defprimitive`. Each of SciPy's ufuncs
is then one row, `erf = _ufunc(_erf_p, "docstring")`, in its primitive's section: the row
makes the public function with SciPy's ufunc signature (`erf(x, /, out=None, *, where=True,
...)`; the ufunc keywords are refused with a TypeError naming the one given, never ignored),
its docstring and its declaration as a mirror of the kind "ufunc" (`fgrad.numpy._mirror`);
SciPy's plain functions (`logsumexp`, `zeta`, ...) are declared by `@mirror("function")`, and
`__all__` is read off the declarations. A new ufunc is a primitive and a row.

Functions of two arguments follow NumPy 2's promotion: a Python int or float takes the other
argument's dtype (`xlogy(0.0, float32 array)` is float32), where SciPy's ufuncs would promote
it to float64 (`weak_scalars`); a Python number that `jit` holds as a traced argument too.
The functions of an integer order and a real argument (`expn`, `yn`, `jn` of integer arrays,
`polygamma`, `multigammaln`) keep the argument's precision: float32 for a float32 `x`, where
SciPy, which computes them in float64 only, returns float64. float16 follows SciPy: it has no
float16 loops, computes a float16 argument in float32 or float64 and returns that dtype, and
so does fgrad, with that precision (`_x_in_scipy_loop`; the derivative in a float16 argument
is float16, as always).

Imports: `fgrad.core`, `fgrad.taylor` (rules), `fgrad.primitive`,
`fgrad.numpy`, and `scipy.special` for values.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as _np
import scipy.special as _sc

from .. import numpy as fnp, taylor as _taylor
from ..core import (
    Box,
    Primitive,
    bind,
    dtype_of,
    innermost,
    is_foreign_array,
    primal,
    shape_of,
)
from ..numpy import _box, _ufunc_signature
from ..numpy._mirror import exported, mirror, missing_names
from ..numpy.elementwise import (
    _weights,
    bool_mask,
    mask_values as _values,
    may_hold as _some,
    read_any,
    register_elementwise,
)
from ..numpy.shaping import (
    _kept_shape,
    _normalize_axes,
    all_rows,
    as_array,
    batch_size,
    batch_to_front,
    broadcast_like,
    describe,
    every_row,
    held_number,
    meta,
    ndim,
    read_constant,
    unbroadcast,
    with_example_ndim,
)
from ..primitive import defprimitive, defunary, nondiff, register_rules

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..primitive import UnaryFunction
    from ..typing import Array, ArrayLike

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


# --- builders of functions of two arguments and of an order ---------------------------------------
# Constants are Python floats: a NumPy float64 constant would promote float32 inputs.


def _binary(impl, dx, dy, name):
    """A two-input primitive with broadcasting; `dx(x, y, ans)`, `dy(x, y, ans)` are partials."""

    def vjp(i, d):
        def maker(ans, x, y):
            like = meta((x, y)[i])
            return lambda ct: unbroadcast(ct * d(x, y, ans), like)

        return maker

    def jvp(d):
        return lambda t, ans, x, y: broadcast_like(t * d(x, y, ans), ans)

    return defprimitive(
        impl, vjp=(vjp(0, dx), vjp(1, dy)), jvp=(jvp(dx), jvp(dy)), name=name, forward="derived"
    )


def _is_python_number(x):
    return type(x) in (int, float)


def _weak_number(x):
    """The Python int or float x is, or that a traced x holds as it was given (`jit` records
    a Python-number argument as itself, weakly typed: `held_number`); None for anything
    else."""
    number = held_number(x) if type(x) is Box else x  # (a plain array: no call, a hot path)
    return number if _is_python_number(number) else None


def weak_scalars(*args, ufunc=None):
    """The arguments with each Python int or float made a 0-d array of the dtype NumPy 2
    gives the whole expression: a Python scalar takes the arrays' dtype (0.5 next to float32
    data is float32), whereas SciPy's ufuncs promote such a pair to float64
    (`scipy.special.xlogy(0.0, np.float32([0.5]))` is float64). Arrays, NumPy scalars and
    lists keep their dtypes; an all-integer or all-Python call is left alone. A number that
    `jit` holds is one too (cast by a recorded `astype`): under `jit` alone a Python number
    keeps its type.

    float16 data is computed by SciPy's `ufunc` in a wider loop (float32 or float64, its
    result's dtype): a Python scalar takes that loop's dtype, as NumPy 2 converts it; rounded
    to float16 first, betainc(float16 data, 2.0, 0.4) was 1.4e-4 off SciPy's float32 result."""
    numbers = [_weak_number(a) for a in args]
    if numbers.count(None) in (0, len(numbers)):  # (no weak number, or nothing else)
        return args
    dtypes = tuple(dtype_of(a) if n is None else type(n) for a, n in zip(args, numbers))
    dtype = _np.result_type(*(d if n is None else n for n, d in zip(numbers, dtypes)))
    if dtype.kind != "f":
        return args
    loop = _loop_dtypes(ufunc, dtypes) if dtype == _np.float16 and ufunc is not None else None
    converted = [dtype] * len(args) if loop is None else loop
    return tuple(a if n is None else _weak_as(a, d) for a, n, d in zip(args, numbers, converted))


def _weak_as(number, dtype):
    """A weak number (`_weak_number`) as a 0-d array of dtype: a recorded `astype` of the
    traced value if `jit` holds it, so that a replay converts the number it is given."""
    return _np.asarray(number, dtype) if _is_python_number(number) else fnp.astype(number, dtype)


@functools.lru_cache(maxsize=256)
def _loop_dtypes(ufunc, dtypes):
    """The input dtypes of the loop `ufunc` selects for operands of `dtypes` (Python `int`
    and `float` standing for weak scalars, as NumPy 2 takes them); None if it has none."""
    try:
        return ufunc.resolve_dtypes(dtypes + (None,) * ufunc.nout)[: ufunc.nin]
    except TypeError:  # (no loop: SciPy's own call raises its error)
        return None


def _like_x(out, x):
    """SciPy's result in x's precision (some functions compute in float64 only): x's float
    dtype, or its complex dtype where SciPy's result is complex (a complex argument)."""
    out, dtype = as_array(out), _float_dtype(x)
    if out.dtype.kind == "c":
        dtype = _np.result_type(dtype, _np.complex64)
    if out.dtype != dtype:
        out = out.astype(dtype)
    return _result(out)


def _float_dtype(x):
    """x's real floating dtype (float32 for complex64), float64 for integers."""
    dtype = dtype_of(x)
    return _np.finfo(dtype).dtype if dtype.kind in "fc" else _np.dtype(_np.float64)


def _result(out):
    """A NumPy result, 0-d as a scalar as NumPy gives it; another library's array as it is."""
    return out[()] if out.ndim == 0 and type(out) is _np.ndarray else out


# Masks and bounds are computed from the values with NumPy; under `vmap`, from one value per
# row (`_values`, `_some`: fgrad.numpy.elementwise's `mask_values` and `may_hold`).


def _sign(x):
    """sign(x) (of its real part, for complex x) as a constant in x's real dtype (sign(0) =
    0)."""
    return _weights(_np.sign(_np.real(_values(x))), _float_dtype(x))


def _static_order(n, who, minimum=0):
    """An order argument (n of polygamma, expn) as a constant integer array. A `jit` argument
    is read (a guard of the record: another order records another path)."""
    n = read_constant(n, who, "the order n", "it is an integer: pass fgrad.stop_gradient(n)")
    n_arr = _np.asarray(n)
    if n_arr.dtype.kind not in "iub" and not (
        n_arr.dtype.kind == "f" and _np.all(_np.floor(n_arr) == n_arr)
    ):
        raise TypeError(f"{who}: the order n must be an integer; got dtype {n_arr.dtype}")
    n_arr = n_arr.astype(_np.int64)
    if _np.any(n_arr < minimum):
        raise ValueError(f"{who}: the order n must be >= {minimum}; got {n!r}")
    return n_arr


def _x_in_scipy_loop(x, v, name):
    """An integer, bool or float16 x (array or NumPy scalar) cast to the float dtype of the
    loop that SciPy's ufunc `name` picks for (v, x), the dtype of SciPy's result (SciPy has
    no float16 loops): jv(1, int8) and jv(1, float16) run `ff->f` (float32), jv(1.5, int8)
    and jv(np.int64(1), int8) run `dd->d`, as yn(1, float16). `_like_x` keeps a float32 or
    float64 x's precision, which the order does not change. A Python number (also one that
    `jit` holds as given) is weakly typed, as in SciPy."""
    dtype = dtype_of(x)
    if _is_python_number(innermost(x)) or not (dtype.kind in "biu" or dtype == _np.float16):
        return x
    v_dtype = type(innermost(v)) if _is_python_number(innermost(v)) else dtype_of(v)
    return fnp.astype(x, getattr(_sc, name).resolve_dtypes((v_dtype, dtype, None))[-1])


def _of_integer_order(prim, minimum=0):
    """SciPy's (n, x) -> prim(x, n=n) at a constant integer order n >= minimum (yn, expn)."""

    def fn(n, x):
        order = _static_order(n, prim.name, minimum)
        return prim(_x_in_scipy_loop(x, n, prim.name), n=order)

    fn.__name__ = prim.name
    return fn


# --- SciPy's ufunc signatures ---------------------------------------------------------------------


def _refuse_keywords(name, nin, given_args, out, keywords):
    """A TypeError naming the first ufunc keyword given a value other than its default. An
    `out` given positionally (one argument more than the `nin` inputs, bound as NumPy binds
    it) is most often a second input to a function of one (`gamma(a, x)` for the incomplete
    gamma): the error says both."""
    if _ufunc_signature.all_default(out, keywords):
        return
    if len(given_args) > nin:
        hint = " (the incomplete gamma is gammainc, or gammaincc)" if name == "gamma" else ""
        raise TypeError(
            f"scipy.special.{name} takes {nin} input(s), got {len(given_args)} positional "
            f"arguments: as in SciPy, the argument after the inputs is out= (here out={out!r}), "
            f"which fgrad does not support; pass {nin} input(s){hint} and use the returned array"
        )
    given = {"out": out, **keywords}
    for key, default in (("out", None), *_ufunc_signature.KEYWORDS):
        value = given[key]
        if value is not default and not (type(value) is str and value == default):
            raise TypeError(
                f"scipy.special.{name}: fgrad does not support the ufunc argument {key}="
                f"{value!r}; leave it out (fgrad returns a new array: select from it with "
                "fgrad.numpy.where, convert it with astype)"
            )


# The mirror of each SciPy ufunc is one row, `name = _ufunc(function, docstring)`, in the
# section of its primitive, declared of the kind "ufunc" (`fgrad.numpy._mirror`); `__all__`
# (at the end) is read off the declarations, as a family of fgrad.numpy's is.


def _ufunc(fn: Callable[..., Any], doc: str, name: str | None = None) -> Callable[..., Array]:
    """SciPy's ufunc `name` (by default the name of `fn`'s primitive) as `fn`, a function of
    its inputs, with the ufunc's signature (`fgrad.numpy._ufunc_signature`: the inputs
    positional-only, then `out` and the ufunc keywords, which fgrad refuses with a TypeError
    unless they are left at their defaults) and the docstring `doc`. Several inputs follow
    NumPy 2's promotion of Python scalars (`weak_scalars`)."""
    name = name or getattr(getattr(fn, "primitive", fn), "name", None) or fn.__name__
    nin = getattr(_sc, name).nin

    def ufunc(*args: ArrayLike, **kwargs: Any) -> Array:
        if kwargs or len(args) != nin:  # the common call passes the inputs alone
            inputs, out, keywords = _ufunc_signature.parse(name, nin, args, kwargs)
            _refuse_keywords(name, nin, args, out, keywords)
            args = inputs
        return fn(*args) if nin == 1 else fn(*weak_scalars(*args, ufunc=getattr(_sc, name)))

    ufunc.__signature__ = _ufunc_signature.signature(nin)  # type: ignore[attr-defined]
    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = doc
    return mirror("ufunc")(ufunc)


# --- Taylor rules (`fgrad.taylor`): the builders ------------------------------------------------
# Without a direct rule, a function whose derivative is another special function takes the
# general rule, which applies that function's own rule one order lower at every order: for a
# chain of them (gammaln -> psi -> polygamma -> ..., the Bessel functions, the Mills ratio)
# the work doubles with each order. These rules are quadratic in the order, or cubic in
# elementwise products only (`_known_derivatives_rule`).


def slope_taylor_rule(prim, slope):
    """The rule of y = prim(x, *rest) with y' = slope(x, *rest, **params) x' (`fgrad.taylor.
    from_slope` with further inputs that are constant here, and parameters): the slope's
    series comes from one pass of its own rules at order K - 1, then y is its integral along
    the path. A further input with a series: the general rule (a CDF's shape parameters)."""

    def rule(primals, series, **params):
        x0, *rest = primals
        if any(s is not None for s in series[1:]):
            return _taylor.general_rule(prim, primals, series, params)
        ans = bind(prim, primals, params)
        s = series[0]
        order = len(s)
        if order == 1:
            d = [slope(x0, *rest, **params)]
        else:
            with _taylor.TaylorLevel(order - 1) as inner:
                dbox = slope(inner.box(x0, s[: order - 1]), *rest, **params)
            if type(dbox) is Box and dbox.level is inner:
                d = [dbox.value, *dbox.aux]
            else:
                d = [dbox] + [None] * (order - 1)
        x = _taylor.full(x0, s, order)
        out = (_taylor.integrate(x, d, k) for k in range(1, order + 1))
        return ans, tuple(None if c is None else broadcast_like(c, ans) for c in out)

    return _taylor.kind_of_rule(rule, "derived")


def _unary_of_x(impl, slope, name):
    """A function of one argument whose derivative `slope(x)` reads x only (`defunary`), and
    its Taylor rule: the integral of the slope's own series (`fgrad.taylor.from_slope`).

    SciPy computes a float16 x in a wider type (erf of float16 is float64): the slope is
    computed in the value's type too, so that the derivatives have the value's precision, and
    Taylor coefficients its dtype (the cotangent of x is cast back to x's dtype, as always)."""
    fn = defunary(impl, lambda ans, x: slope(_in_dtype_of_value(x, ans)), name=name)
    register_rules(
        fn.primitive,
        taylor=_taylor.from_slope(fn.primitive, slope, widen=_in_dtype_of_value),
    )
    return fn


def _widened(x0, series, ans):
    """x's value and series in the value's dtype where SciPy computes in a wider one (see
    `_in_dtype_of_value`): the Taylor coefficients then have the value's dtype and precision."""
    return _in_dtype_of_value(x0, ans), [
        None if c is None else _in_dtype_of_value(c, ans) for c in series
    ]


def _in_dtype_of_value(x, ans):
    """x in the dtype of the value `ans` computed from it, where that is a wider float."""
    x_dtype, ans_dtype = dtype_of(x), dtype_of(ans)
    if x_dtype == ans_dtype or x_dtype.kind != "f" or ans_dtype.kind != "f":
        return x
    return fnp.astype(x, ans_dtype)


def _ode_rule(prim, slope):
    """The rule of y = prim(x) from y' = d x', where d's coefficient m follows from those of
    x and y up to m: `slope(x, y)` returns the function m -> d_m, called for m = 0, 1, ...
    while y grows (it may keep series of its own). Quadratic in the order."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        x = _taylor.full(x0, s, order)
        y = [bind(prim, (x0,), {})]
        slope_at = slope(x, y)
        d = []
        for k in range(1, order + 1):
            d.append(slope_at(k - 1))
            y.append(_taylor.integrate(x, d, k))
        return y[0], tuple(y[1:])

    return _taylor.kind_of_rule(rule, "speed")


def _known_derivatives_rule(prim, derivatives):
    """The rule of y = prim(x, **params) from its derivatives at x_0, `derivatives(x0, order,
    **params)` -> [f'(x0), ..., f^(order)(x0)] in fgrad operations: f(x(t)) is
    sum_n f^(n)(x0) / n! (x(t) - x0)^n, the powers of the path's increment taken as products of
    series (about K^3 / 6 elementwise products)."""

    def rule(primals, series, **params):
        (x0,), (s,) = primals, series
        ans = bind(prim, (x0,), params)
        x0, s = _widened(x0, s, ans)
        return ans, tuple(_taylor.composed(derivatives(x0, len(s), **params), s))

    return _taylor.kind_of_rule(rule, "derived")


# --- logsumexp and the softmax family -------------------------------------------------------------


def _lse_impl(a, b, signs, axis, keepdims):
    return _scipy_logsumexp(a, axis, b, keepdims, signs is not None)[0]


def _lse_sign_impl(a, b, axis, keepdims):
    _, signs = _scipy_logsumexp(a, axis, b, keepdims, True)
    return _result(as_array(signs))  # in the value's dtype, as SciPy's (float16 for float16)


def _scipy_logsumexp(a, axis, b, keepdims, return_sign):
    """(log|s|, sign(s)) or (log s,) by SciPy. An empty `axis` (a reduction over nothing, as
    for a 0-d `a`) goes through a new last axis of length 1: SciPy returns shape (1,) there."""
    if axis == ():
        a = _np.expand_dims(a, -1)
        if b is not None and not _is_python_number(b):  # (a Python number stays weak: made
            b = _np.expand_dims(b, -1)  # a float64 array, it widened complex64 a to complex128)
        axis, keepdims = -1, False
    if is_foreign_array(a) or is_foreign_array(b):
        return _foreign_logsumexp(a, axis, b, keepdims, return_sign)
    out = _sc.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    return out if return_sign else (out,)


def _foreign_logsumexp(a, axis, b, keepdims, return_sign):
    """`_scipy_logsumexp` for arrays of another library (SciPy's converts them to NumPy
    arrays): log(sum(b exp(a - m))) + m with m the largest (real part), 0 where it is not
    finite; the log of a complex sum has its imaginary part in (-pi, pi] already."""
    if b is not None:
        a = _np.broadcast_to(a, _np.broadcast_shapes(_np.shape(a), _np.shape(b)))
    if a.dtype.kind not in "fc":
        a = a.astype(_np.float64)
    m = _np.max(_np.real(a), axis=axis, keepdims=True)
    m = _np.where(_np.isfinite(m), m, 0.0)
    terms = _np.exp(a - m) if b is None else b * _np.exp(a - m)
    total = _np.sum(terms, axis=axis, keepdims=True)
    sign = _np.sign(total) if return_sign else None
    out = _np.log(_np.abs(total) if return_sign else total) + m
    if not keepdims:
        out = _np.squeeze(out, axis=axis)
        sign = None if sign is None else _np.squeeze(sign, axis=axis)
    return (out, sign) if return_sign else (out,)


def _lse_weights(a, b, ans, axis, signs, with_b):
    """d ans / d a (with_b) or d ans / d b: sign * [b *] exp(a - ans), in a and b's broadcast
    shape, the kept shape of the reduction, and whether some sum is 0 (see `_times_weights`).
    For complex input (`signs` is None then) these are the holomorphic derivatives of
    log(sum(b exp(a))): exp(ans) is the sum, whatever the branch of the log.

    Where the sum s is 0 (ans = -inf) the derivative t / s of each term t ([b] exp(a)) is
    t / +0: +-inf where t != 0 (terms that cancel, or a zero b at a finite a: the one-sided
    derivative, log is nan for s < 0), and 0 where t is 0 whatever the argument (an entry at
    -inf, or a zero b for d/da): that argument does not move the sum.
    """
    a_shape = _np.broadcast_shapes(shape_of(a), shape_of(b))
    kept = _kept_shape(a_shape, axis)
    empty = bool_mask(_np.isneginf(_np.real(_values(ans))))
    cancelled = _some(empty)
    if cancelled:  # ans at the largest a there, so that exp(a - ans) keeps each term's sign
        ans = fnp.where(empty, _row_max(a, a_shape, axis, _values(ans)), ans)
        if signs is not None:  # the sign of an empty sum is 0; t / +0
            signs = fnp.where(empty, 1.0, signs)
    ans = fnp.reshape(ans, kept)
    if with_b and b is not None:
        # A zero weight on an entry so large that exp(a - ans) overflows: 0 * inf would be
        # nan; the entry takes no part in the sum, so it gets no gradient.
        with _np.errstate(over="ignore"):
            big = _np.isinf(_np.exp(_values(a) - _values(ans)))
        off = bool_mask(_np.logical_and(big, _values(b) == 0), a_shape)
        if _some(off):
            a = fnp.where(off, -math.inf, a)
        w = fnp.multiply(fnp.exp(fnp.subtract(a, ans)), b)
    else:
        w = fnp.exp(fnp.subtract(a, ans))
    if signs is not None:  # real input: 1/sign = sign
        w = w * fnp.reshape(signs, kept)
    w = w if shape_of(w) == a_shape else fnp.broadcast_to(w, a_shape)
    if cancelled:
        w = _over_zero(w, _np.reshape(empty, kept), a_shape)
    return w, kept, cancelled


def _over_zero(w, empty, shape):
    """The weights w where their sum is not 0 (`empty` False); where it is, w / +0: +-inf for
    a real w != 0 (a constant: no derivative), nan for a complex one (a pole: no one value),
    and w (0) where w is 0."""
    values = _values(w)
    over_zero = bool_mask(_np.logical_and(empty, _np.not_equal(values, 0)), shape)
    poles = math.nan if _np.iscomplexobj(values) else _np.copysign(math.inf, values)
    return fnp.where(over_zero, poles, w)


def _times_weights(v, w, cancelled):
    """v * w, a tangent or cotangent times the weights; where a sum is 0 the weights may be
    +-inf, and a zero of v there means no change in that direction: 0, not 0 * inf = nan."""
    if not cancelled:
        return v * w
    return v * fnp.where(bool_mask(_np.equal(_values(v), 0), shape_of(w)), 0.0, w)


def _row_max(a, a_shape, axis, like):
    """The largest real part of `a` along `axis` (a constant), in the reduction's shape (as
    `like`), 0 where it is not finite."""
    m = fnp.max(fnp.real(fnp.broadcast_to(_values(a), a_shape)), axis=axis)
    return fnp.reshape(fnp.where(fnp.isfinite(m), m, 0.0), shape_of(like))


def _lse_vjp(i):
    def maker(ans, a, b, signs, axis, keepdims):
        like = meta((a, b)[i])

        def bprop(ct):
            w, kept, cancelled = _lse_weights(a, b, ans, axis, signs, with_b=i == 0)
            return unbroadcast(_times_weights(fnp.reshape(ct, kept), w, cancelled), like)

        return bprop

    return maker


def _lse_jvp(i):
    def rule(t, ans, a, b, signs, axis, keepdims):
        w, _, cancelled = _lse_weights(a, b, ans, axis, signs, with_b=i == 0)
        return fnp.sum(_times_weights(t, w, cancelled), axis=axis, keepdims=keepdims)

    return rule


def _softmax_series(x, p0, axis):
    """Along the path x (coefficients 0..K): the coefficients of L = logsumexp(x) over `axis`
    (kept), of the weights p = exp(x - L) and of x - L, from L' = sum(p x') and
    p' = p (x - L)', starting at the weights' value p0 (quadratic in the order)."""
    p, lse, shifted = [p0], [None], [None]
    for k in range(1, len(x)):
        t = _taylor.integrate(x, p, k)
        lse.append(None if t is None else fnp.sum(t, axis=axis, keepdims=True))
        term = _taylor.add(x[k], None if lse[k] is None else -lse[k])
        if x[k] is None and term is not None:  # -L's coefficient alone: x's shape, not L's
            term = fnp.broadcast_to(term, fnp.shape(x[0]))
        shifted.append(term)
        p.append(_taylor.integrate(shifted, p, k))
    return lse, p, shifted


@_taylor.declared("speed")
def _logsumexp_taylor(primals, series, axis, keepdims):
    """log(sum(b exp(a))) over `axis`: without b, L's coefficients from the weights (see
    `_softmax_series`); with b, or signs, or for complex input, the general rule."""
    a, b, signs = primals
    params = dict(axis=axis, keepdims=keepdims)
    if b is not None or signs is not None or fnp.iscomplexobj(a):
        return _taylor.general_rule(_logsumexp_p, primals, series, params)
    ans = bind(_logsumexp_p, primals, params)
    w, _, _ = _lse_weights(a, None, ans, axis, None, with_b=True)  # finite: 0 where empty
    s = series[0]
    lse, _, _ = _softmax_series(_taylor.full(a, s, len(s)), w, axis)
    return ans, tuple(None if c is None else fnp.reshape(c, shape_of(ans)) for c in lse[1:])


def _row_shape(x, dim):
    s = shape_of(x)
    return s if dim is None else s[:dim] + s[dim + 1 :]


def _lse_batch_rule(prim):
    """logsumexp (a, b, signs) and its signs (a, b): the rows first, a and b with the axes
    of the rows' broadcast shape, so the reduced axes move up by one; the signs (one per
    result) with their rows first too."""

    def rule(args, dims, axis, keepdims):
        size = batch_size(args, dims)
        nd = len(_np.broadcast_shapes(*(_row_shape(v, d) for v, d in zip(args[:2], dims[:2]))))
        a, b = args[:2]
        if dims[0] is None and dims[1] is None:  # only the signs hold rows
            a = every_row(a, None, size)
            dims = (0,) + tuple(dims[1:])
        operands = [v if d is None else with_example_ndim(v, d, nd) for v, d in zip((a, b), dims)]
        if len(args) == 3:
            signs, d = args[2], dims[2]
            operands.append(None if signs is None else every_row(signs, d, size))
        params = {"axis": tuple(ax + 1 for ax in axis), "keepdims": keepdims}
        return bind(prim, operands, params), 0

    return rule


# The signs of a real sum are an argument (a constant: they have no derivative), so that under
# `vmap` they are one per row like the values they come from.
_logsumexp_p = defprimitive(
    _lse_impl,
    vjp=(_lse_vjp(0), _lse_vjp(1), None),
    jvp=(_lse_jvp(0), _lse_jvp(1), None),
    name="logsumexp",
    forward="speed",
)
register_rules(
    _logsumexp_p,
    taylor=_logsumexp_taylor,
    batch=_lse_batch_rule(_logsumexp_p),
    sparsity="logsumexp",
)
_lse_sign_p = nondiff(_lse_sign_impl, name="logsumexp_sign")
register_rules(_lse_sign_p, batch=_lse_batch_rule(_lse_sign_p))


@mirror("function")
def logsumexp(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    b: ArrayLike | None = None,
    keepdims: bool = False,
    return_sign: bool = False,
) -> Array | tuple[Array, Array]:
    """SciPy's `logsumexp`: log(sum(b * exp(a))) over `axis`, stable at any magnitude.

    `a` and the weights `b` are both differentiable; the gradient in `a` is the softmax
    weights `b * exp(a - ans)`, 0 at entries that are -inf (and 0, not nan, when every entry
    is -inf). With `return_sign=True` it returns `(log|s|, sign(s))`; the sign of a real sum is
    a constant (+-1, or 0).

    Complex a or b: the value is SciPy's (the log's imaginary part in (-pi, pi]) and the
    derivative holomorphic, the same weights. With `return_sign`, the sign s/|s| is then a
    phase that varies with a and b: both results come from the complex log s, as Re(log s) and
    exp(i Im(log s)), so both are differentiable.

    >>> import fgrad, fgrad.numpy as fnp
    >>> from fgrad.scipy.special import logsumexp, softmax
    >>> fgrad.grad(logsumexp)(fnp.array([0.0, 1000.0, -fnp.inf]))
    array([0., 1., 0.])
    >>> z = fnp.array([0.5j, 1.0])
    >>> bool(fnp.allclose(fgrad.grad(logsumexp, holomorphic=True)(z), softmax(z)))
    True
    """
    if b is not None:
        a, b = weak_scalars(a, b)
    shape = _np.broadcast_shapes(shape_of(a), shape_of(b))
    axes = _normalize_axes(axis, len(shape))
    keepdims = bool(keepdims)
    if return_sign and (fnp.iscomplexobj(a) or (b is not None and fnp.iscomplexobj(b))):
        log_s = _logsumexp_p(a, b, None, axis=axes, keepdims=keepdims)
        out = fnp.real(log_s)
        sign = fnp.exp(1j * fnp.imag(log_s))
        zero = bool_mask(_np.isneginf(_values(out)))  # an empty sum: sign 0, as SciPy's
        return out, (fnp.where(zero, 0.0, sign) if _some(zero) else sign)
    signs = _lse_sign_p(a, b, axis=axes, keepdims=keepdims) if return_sign else None
    out = _logsumexp_p(a, b, signs, axis=axes, keepdims=keepdims)
    if keepdims and not shape:  # SciPy reads a 0-d a as 1-d: keepdims keeps that axis
        out = fnp.reshape(out, (1,))
        signs = None if signs is None else fnp.reshape(signs, (1,))
    return (out, signs) if return_sign else out


def _softmax_impl(x, axis):
    if is_foreign_array(x):  # SciPy's formula; SciPy's softmax converts x to a NumPy array
        shifted = _np.exp(x - _np.max(x, axis=axis, keepdims=True))
        return shifted / _np.sum(shifted, axis=axis, keepdims=True)
    return _sc.softmax(x, axis=axis)


def _log_softmax_impl(x, axis):
    if is_foreign_array(x):  # SciPy's formula, as for softmax
        x_max = _np.max(x, axis=axis, keepdims=True)
        shifted = x - _np.where(_np.isfinite(x_max), x_max, 0)
        return shifted - _np.log(_np.sum(_np.exp(shifted), axis=axis, keepdims=True))
    return _sc.log_softmax(x, axis=axis)


def _softmax_taylor(prim, log):
    """softmax (its coefficients are p's) and log_softmax (x - L's), from the result's value:
    exact where a weight is 0 or 1, as their forward rules."""

    def rule(primals, series, axis):
        (x0,), (s,) = primals, series
        ans = prim(x0, axis=axis)
        x = _taylor.full(x0, s, len(s))
        _, p, shifted = _softmax_series(x, fnp.exp(ans) if log else ans, axis)
        return ans, tuple((shifted if log else p)[1:])

    return _taylor.kind_of_rule(rule, "speed")


def _axis_batch_rule(prim):
    """softmax and log_softmax: the rows first, the axes moved up by one."""

    def rule(args, dims, axis):
        x = batch_to_front(args[0], dims[0])
        return bind(prim, [x], {"axis": tuple(ax + 1 for ax in axis)}), 0

    return rule


def _softmax_primitive(name, impl, vjp, jvp, log):
    """softmax's or log_softmax's primitive (`log`): the two differ in their value and their
    first-order rules, and share the rest, written from the result (Taylor), the axes
    (batching) and the lanes along them (sparsity)."""
    prim = defprimitive(impl, vjp=vjp, jvp=jvp, name=name, forward="speed")
    register_rules(
        prim, taylor=_softmax_taylor(prim, log), batch=_axis_batch_rule(prim), sparsity="lanes"
    )
    return prim


_softmax_p = _softmax_primitive(
    "softmax",
    _softmax_impl,
    vjp=lambda ans, x, axis: lambda ct: ans * (ct - fnp.sum(ct * ans, axis=axis, keepdims=True)),
    jvp=lambda t, ans, x, axis: ans * (t - fnp.sum(t * ans, axis=axis, keepdims=True)),
    log=False,
)


@mirror("function")
def softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = None) -> Array:
    """SciPy's `softmax` over `axis` (all axes by default); its rules use only the result,
    so they are exact where an entry is 0 or 1 (inputs like +-1000).

    >>> import fgrad.numpy as fnp
    >>> from fgrad.scipy.special import softmax
    >>> softmax(fnp.array([0.0, 1000.0]))
    array([0., 1.])
    """
    return _softmax_p(x, axis=_normalize_axes(axis, fnp.ndim(x)))


def _log_softmax_vjp(ans, x, axis):
    return lambda ct: ct - fnp.exp(ans) * fnp.sum(ct, axis=axis, keepdims=True)


_log_softmax_p = _softmax_primitive(
    "log_softmax",
    _log_softmax_impl,
    vjp=_log_softmax_vjp,
    jvp=lambda t, ans, x, axis: t - fnp.sum(fnp.exp(ans) * t, axis=axis, keepdims=True),
    log=True,
)


@mirror("function")
def log_softmax(x: ArrayLike, axis: int | tuple[int, ...] | None = None) -> Array:
    """SciPy's `log_softmax` over `axis` (all axes by default): x - logsumexp(x), stable at
    any magnitude in value and every derivative (they use exp(ans) <= 1)."""
    return _log_softmax_p(x, axis=_normalize_axes(axis, fnp.ndim(x)))


# --- logistic -------------------------------------------------------------------------------------


def _logistic_slope(x, p):
    """expit' = p q, p = expit(x) and q = expit(-x) = 1 - p, whose coefficients beyond the
    value are -p's: the product keeps the digits that p - p^2 loses where p is near 1."""
    q = [_expit_p(fnp.negative(x[0]))]

    def at(m):
        if m:
            q.append(None if p[m] is None else -p[m])
        return _taylor.cauchy(p, q, m)

    return at


# expit' = expit(x) (1 - expit(x)), taken as expit(x) expit(-x): 1 - expit(x) loses every
# digit where expit(x) is near 1.
_expit_p: UnaryFunction = defunary(
    _sc.expit, lambda ans, x: ans * _expit_p(fnp.negative(x)), name="expit"
)
register_rules(_expit_p.primitive, taylor=_ode_rule(_expit_p.primitive, _logistic_slope))
# 1/x + 1/(1-x), not 1/(x (1-x)): the product's reverse rule formed -inf * 0 = nan for
# logit'' at 0 and 1 (forward mode: -inf and inf, the limits); the sum has no zero factor
_logit_p = _unary_of_x(_sc.logit, lambda x: 1.0 / x + 1.0 / (1.0 - x), name="logit")
_log_expit_p = _unary_of_x(_sc.log_expit, lambda x: _expit_p(fnp.negative(x)), name="log_expit")


expit = _ufunc(
    _expit_p,
    "The logistic sigmoid 1 / (1 + exp(-x)); derivative expit(x) expit(-x), exact at +-1000.",
)
logit = _ufunc(
    _logit_p,
    """log(x / (1 - x)) for x in (0, 1), the inverse of `expit`; derivative 1 / (x (1 - x)),
    written 1/x + 1/(1-x) (its second derivative is -inf at 0 and inf at 1 in both modes).""",
)
log_expit = _ufunc(_log_expit_p, "log(expit(x)), stable at any magnitude; derivative expit(-x).")


# --- error functions ------------------------------------------------------------------------------


def _exp_square_slope(scale, rate):
    """The slope scale exp(rate y^2) of erfinv, erfcinv and ndtri (inverses of Gaussian
    integrals), its series through u = rate y^2 and e = exp(u) (e' = e u')."""

    def slope(x, y):
        u, e = [None], []

        def at(m):
            if m == 0:
                e.append(fnp.exp(rate * (y[0] * y[0])))
            else:
                sq = _taylor.square_coefficient(y, m)
                u.append(None if sq is None else rate * sq)
                e.append(_taylor.integrate(u, e, m))
            return None if e[m] is None else scale * e[m]

        return at

    return slope


def _erfcx_slope(x, y):  # 2 x y - 2 / sqrt(pi)
    def at(m):
        if m == 0:
            return _erfcx_deriv(y[0], x[0])
        xy = _taylor.cauchy(x, y, m)
        return None if xy is None else 2.0 * xy

    return at


_erf_p = _unary_of_x(_sc.erf, lambda x: (2.0 / _SQRT_PI) * fnp.exp(-(x * x)), name="erf")
_erfc_p = _unary_of_x(_sc.erfc, lambda x: (-2.0 / _SQRT_PI) * fnp.exp(-(x * x)), name="erfc")
_erfinv_p = defunary(
    _sc.erfinv, lambda ans, x: (_SQRT_PI / 2.0) * fnp.exp(ans * ans), name="erfinv"
)
register_rules(
    _erfinv_p.primitive,
    taylor=_ode_rule(_erfinv_p.primitive, _exp_square_slope(_SQRT_PI / 2.0, 1.0)),
)
_erfcinv_p = defunary(
    _sc.erfcinv, lambda ans, x: (-_SQRT_PI / 2.0) * fnp.exp(ans * ans), name="erfcinv"
)
register_rules(
    _erfcinv_p.primitive,
    taylor=_ode_rule(_erfcinv_p.primitive, _exp_square_slope(-_SQRT_PI / 2.0, 1.0)),
)
_erfcx_p = defunary(_sc.erfcx, lambda ans, x: _erfcx_deriv(ans, x), name="erfcx")
register_rules(_erfcx_p.primitive, taylor=_ode_rule(_erfcx_p.primitive, _erfcx_slope))

# From here erfcx's derivative is taken through the normal Mills ratio's excess, whose
# continued fraction serves x < -5 (`_mills_excess_impl`): 5 / sqrt(2) in erfcx's argument.
_ERFCX_FAR = 5.0 / _SQRT_2


def _erfcx_deriv(ans, x):
    """2 x erfcx(x) - 2/sqrt(pi); for real x > 5/sqrt(2) as -sqrt(2) erfcx(x) h(-sqrt(2) x),
    h(t) = t + phi(t)/Phi(t) (erfcx(x) = sqrt(2/pi) Phi(t)/phi(t) at t = -sqrt(2) x): the
    two terms, each near 1.128, cancel to about 1/(sqrt(pi) x^2) (at x = 1e7 the
    difference kept 1 digit, at 1e9 none, in float32 at 1e3 none)."""
    plain = 2.0 * x * ans - 2.0 / _SQRT_PI
    if dtype_of(x).kind == "c":
        return plain
    far = bool_mask(_values(x) > _ERFCX_FAR, shape_of(x))
    if not _some(far):
        return plain
    t = -_SQRT_2 * fnp.where(far, x, 2.0 * _ERFCX_FAR)
    return fnp.where(far, -_SQRT_2 * ans * _mills_excess_p(t), plain)


erf = _ufunc(_erf_p, "The error function; derivative 2/sqrt(pi) exp(-x**2).")
erfc = _ufunc(
    _erfc_p, "1 - erf(x), accurate where erf(x) is near 1; derivative -2/sqrt(pi) exp(-x**2)."
)
erfinv = _ufunc(
    _erfinv_p, "The inverse of `erf` on (-1, 1); derivative sqrt(pi)/2 exp(erfinv(x)**2)."
)
erfcinv = _ufunc(
    _erfcinv_p, "The inverse of `erfc` on (0, 2); derivative -sqrt(pi)/2 exp(erfcinv(x)**2)."
)
erfcx = _ufunc(
    _erfcx_p,
    """The scaled complementary error function exp(x**2) erfc(x); derivative
    2 x erfcx(x) - 2/sqrt(pi), for x > 5/sqrt(2) through a continued fraction (the two terms
    cancel there; its higher derivatives still lose about log10(x**2) digits).""",
)


def _order_batch_rule(prim, order):
    """A function of x with a constant order (the parameter `order`: v or n), which broadcasts
    against x as a ufunc's argument: an order array meets the rows of x with their batch axis
    first and length-1 axes up to the order's rank."""

    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        nd = _np.ndim(params[order])
        if nd == 0:
            return bind(prim, [x], params), d
        return bind(prim, [with_example_ndim(x, d, max(ndim(x) - 1, nd))], params), 0

    return rule


def _with_order(impl, deriv, name):
    """A primitive `impl(x, n=...)` with a static order `n`, differentiable in x only:
    `deriv(x, ans, n)` is its derivative in x, written in fgrad operations; its batching rule
    is `_order_batch_rule`, and it is elementwise in x for sparsity detection."""

    def vjp(ans, x, n):
        like = meta(x)
        return lambda ct: unbroadcast(ct * deriv(x, ans, n), like)

    prim = defprimitive(
        impl,
        vjp=vjp,
        jvp=lambda t, ans, x, n: broadcast_like(t * deriv(x, ans, n), ans),
        name=name,
        forward="derived",
    )
    register_rules(prim, batch=_order_batch_rule(prim, "n"), sparsity="elementwise")
    return prim


# --- gamma and friends ----------------------------------------------------------------------------


# SciPy's polygamma is for real x only, but digamma takes complex x, and its derivatives are
# polygamma(n, x): for complex x fgrad computes them itself (`_complex_polygamma`). Only the
# rules reach that path; the public `polygamma` refuses complex x as SciPy does.
_BERNOULLI = _sc.bernoulli(28)[2::2]  # B_2, B_4, ..., B_28


def _complex_polygamma(n, z):
    """polygamma(n, z) for n >= 1 and complex z, in complex128: the recurrence
    psi_n(z) = psi_n(z + m) + (-1)^(n+1) n! sum_{k<m} (z + k)^-(n+1) shifts z to w = z + m with
    Re w >= 16 + n, where the asymptotic series (-1)^(n+1) [(n-1)!/w^n + n!/(2 w^(n+1))
    + sum_k B_2k (2k+n-1)!/(2k)! / w^(2k+n)] (14 terms) is accurate to rounding: within 1e-13
    (relative) of mpmath for n <= 8 away from the poles 0, -1, -2, ..."""
    if is_foreign_array(z):
        return _foreign_complex_polygamma(n, z)
    z = _np.asarray(z, dtype=_np.complex128)
    shift = _np.maximum(0.0, _np.ceil(16.0 + n - z.real)).astype(_np.int64)
    return _shifted_polygamma(n, z, shift, int(shift.max(initial=0)))


def _shifted_polygamma(n, z, shift, most):
    """polygamma(n, z) by the recurrence over `shift` (at most `most`) places and the
    asymptotic series at w = z + shift (see `_complex_polygamma`)."""
    total = _np.zeros_like(z)
    with _np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(most):
            total = total + _np.where(k < shift, (z + k) ** -(n + 1), 0.0)
        w = z + shift
        inv2 = 1.0 / (w * w)
        series = _np.zeros_like(w)
        for k in range(len(_BERNOULLI), 0, -1):  # Horner in 1/w^2
            series = (series + _BERNOULLI[k - 1] * math.prod(range(2 * k + 1, 2 * k + n))) * inv2
        asymptotic = (math.factorial(n - 1) + math.factorial(n) / (2.0 * w) + series) / w**n
    return (-1.0) ** (n + 1) * (asymptotic + math.factorial(n) * total)


def _foreign_complex_polygamma(n, z):
    """`_complex_polygamma` for an array of another library (Dask), whose values are not read
    to bound the recurrence: the half-plane Re z < 1/2 goes over to Re(1 - z) > 1/2 by the
    reflection psi_n(z) = (-1)^n psi_n(1 - z) - pi d^n/dz^n cot(pi z), so a shift of 16 + n
    places serves every value. For Im z >= 0, with q = exp(2 i pi z) (|q| <= 1),
    cot(pi z) = -i (1 + 2 sum_k q^k), so d^n/dz^n cot(pi z) = -2i (2 i pi)^n q A_n(q) /
    (1 - q)^(n+1), A_n the Eulerian polynomial (positive coefficients: no cancellation where
    cot(pi z) nears -i); below the real axis by conjugation."""
    z = z.astype(_np.complex128)
    reflect = z.real < 0.5
    psi = _shifted_polygamma(n, _np.where(reflect, 1.0 - z, z), 16 + n, 16 + n)
    upper = z.imag >= 0
    q = _np.exp(2j * math.pi * _np.where(upper, z, _np.conj(z)))
    eulerian = [
        sum((-1) ** j * math.comb(n + 1, j) * (m + 1 - j) ** n for j in range(m + 2))
        for m in range(n)
    ]
    a_n = 0.0
    for c in reversed(eulerian):  # Horner
        a_n = a_n * q + float(c)
    with _np.errstate(divide="ignore", invalid="ignore"):
        d_cot = -2j * (2j * math.pi) ** n * q * a_n / (1.0 - q) ** (n + 1)
    d_cot = _np.where(upper, d_cot, _np.conj(d_cot))
    return _np.where(reflect, (-1.0) ** n * psi - math.pi * d_cot, psi)


def _polygamma_impl(x, n):
    if _np.iscomplexobj(x):  # only from digamma's rules, with a scalar n >= 1
        return _like_x(_complex_polygamma(int(n), x), x)
    if is_foreign_array(x):  # SciPy's polygamma converts x to a NumPy array; its formula, lazily
        n = _np.asarray(n)
        tail = (-1.0) ** (n + 1) * _sc.gamma(n + 1.0) * _sc.zeta(n + 1, x)
        return _like_x(_np.where(n == 0, _sc.psi(x), tail), x)
    return _like_x(_sc.polygamma(n, x), x)


def _polygamma_derivatives(x0, order, n):
    return [_polygamma_p(x0, n=n + k) for k in range(1, order + 1)]


def _psi_derivatives(x0, order):
    return [_polygamma_p(x0, n=_np.int64(k)) for k in range(1, order + 1)]


def _gammaln_derivatives(x0, order):
    return [_psi_p(x0)] + _psi_derivatives(x0, order - 1)


def _gamma_taylor(prim, sign):
    """gamma (sign 1) and rgamma (sign -1): y' = sign y psi(x) x' = sign y g' with g =
    gammaln(x) along the path, the exponential's recurrence on gammaln's series."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        g = [None, *_taylor.composed(_gammaln_derivatives(x0, order), s)]
        y = [bind(prim, (x0,), {})]
        for k in range(1, order + 1):
            c = _taylor.integrate(g, y, k)
            y.append(c if sign > 0 or c is None else -c)
        return y[0], tuple(y[1:])

    return _taylor.kind_of_rule(rule, "speed")


_polygamma_p: Primitive = _with_order(
    _polygamma_impl, lambda x, ans, n: _polygamma_p(x, n=n + 1), "polygamma"
)
register_rules(_polygamma_p, taylor=_known_derivatives_rule(_polygamma_p, _polygamma_derivatives))
# (each derivative in the value's dtype: SciPy computes a float16 x in float64)
_psi_p = defunary(
    _sc.psi,
    lambda ans, x: _polygamma_p(_in_dtype_of_value(x, ans), n=_np.int64(1)),
    name="psi",
)
register_rules(_psi_p.primitive, taylor=_known_derivatives_rule(_psi_p.primitive, _psi_derivatives))
_gammaln_p = defunary(
    _sc.gammaln, lambda ans, x: _psi_p(_in_dtype_of_value(x, ans)), name="gammaln"
)
register_rules(
    _gammaln_p.primitive, taylor=_known_derivatives_rule(_gammaln_p.primitive, _gammaln_derivatives)
)
_gamma_p = defunary(
    _sc.gamma, lambda ans, x: ans * _psi_p(_in_dtype_of_value(x, ans)), name="gamma"
)
register_rules(_gamma_p.primitive, taylor=_gamma_taylor(_gamma_p.primitive, 1))
_rgamma_p = defunary(
    _sc.rgamma, lambda ans, x: -(ans * _psi_p(_in_dtype_of_value(x, ans))), name="rgamma"
)
register_rules(_rgamma_p.primitive, taylor=_gamma_taylor(_rgamma_p.primitive, -1))


gammaln = _ufunc(_gammaln_p, "log|Gamma(x)| for real x; derivative digamma(x).")
digamma = _ufunc(
    _psi_p,
    """The digamma function Gamma'(x)/Gamma(x); derivative polygamma(1, x). For complex x
    (SciPy's complex value) the derivatives, holomorphic, are computed by fgrad (SciPy's
    polygamma is real only): a recurrence and an asymptotic series, to about 1e-13.

    >>> import fgrad, numpy as np
    >>> from fgrad.scipy.special import digamma
    >>> d = fgrad.jvp(digamma, (0.5 + 1j,), (1.0,))[1]  # polygamma(1, 1/2 + i)
    >>> bool(np.isclose(2 * d.real, (np.pi / np.cosh(np.pi)) ** 2))  # by reflection
    True
    """,
    name="digamma",
)


psi = digamma


@mirror("function")
def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """The n-th derivative of digamma at x; n is a constant integer >= 0 (or integer array),
    differentiable in x: derivative polygamma(n + 1, x).

    >>> import fgrad
    >>> from fgrad.scipy.special import polygamma
    >>> round(float(fgrad.grad(lambda x: polygamma(0, x))(1.0)), 9)  # pi**2 / 6
    1.644934067
    """
    n, x = weak_scalars(n, x)
    if dtype_of(x).kind == "c":
        raise TypeError(
            f"polygamma: x has {describe(x)}; polygamma takes real x, as SciPy's. For complex "
            "x, differentiate digamma: its derivatives (polygamma(n, x)) are computed for "
            "complex x too."
        )
    if dtype_of(x) == _np.float16:  # (SciPy's polygamma of a float16 x is float64)
        x = fnp.astype(x, _np.float64)
    return _polygamma_p(x, n=_static_order(n, "polygamma"))


# --- the zeta functions ---------------------------------------------------------------------------
# zeta(x, q) = sum_k (k + q)**-x: d/dq = -x zeta(x + 1, q), exact, SciPy's values again. d/dx,
# sum_k -log(k + q) (k + q)**-x, has no closed form in SciPy's functions, and fgrad refuses it
# rather than approximate it.


def _zeta_in_x_refused(x, hurwitz):
    """The TypeError for a derivative of zeta in x, raised when the rule runs."""
    what = "zeta(x, q)" if hurwitz else "zeta(x)"
    raise TypeError(
        f"scipy.special.zeta: the derivative of {what} in x (the exponent; {describe(x)}) is "
        "not available in fgrad: it has no closed form in SciPy's functions. Differentiate "
        "in q only (d/dq zeta(x, q) = -x zeta(x + 1, q)), or pass x as a plain value "
        "(fgrad.stop_gradient(x) where no derivative should flow to it)."
    )


@_taylor.declared("derived")
def _hurwitz_zeta_taylor(primals, series):
    """In q, with x constant: d^n/dq^n zeta(x, q) = (-1)^n (x)_n zeta(x + n, q), the rising
    factorial (x)_n = x (x + 1) ... (x + n - 1), composed into the series
    (`fgrad.taylor.composed`). The general rule would recurse through x + 1, x + 2, ... twice
    per order (2^K work). A series in x goes to the general rule, which refuses it."""
    (x, q), (sx, sq) = primals, series
    if sx is not None:
        return _taylor.general_rule(_hurwitz_zeta_p, primals, series, {})
    ans = _hurwitz_zeta_p(x, q)
    derivatives, rising = [], x
    for n in range(1, len(sq) + 1):
        d = rising * _hurwitz_zeta_p(x + float(n), q)
        derivatives.append(-d if n % 2 else d)
        rising = rising * (x + float(n))
    out = _taylor.composed(derivatives, sq)
    return ans, tuple(None if c is None else broadcast_like(c, ans) for c in out)


_riemann_zeta_p = defunary(
    _sc.zeta, lambda ans, x: _zeta_in_x_refused(x, hurwitz=False), name="riemann_zeta"
)
_hurwitz_zeta_p: Primitive = _binary(
    _sc.zeta,
    lambda x, q, ans: _zeta_in_x_refused(x, hurwitz=True),
    lambda x, q, ans: -(x * _hurwitz_zeta_p(x + 1.0, q)),
    "zeta",
)
register_rules(_hurwitz_zeta_p, taylor=_hurwitz_zeta_taylor)


@mirror("function")
def zeta(x: ArrayLike, q: ArrayLike | None = None, out: None = None) -> Array:
    """The Riemann zeta function (q None) or the Hurwitz zeta function
    sum_k (k + q)**-x, SciPy's values; differentiable in q: d/dq = -x zeta(x + 1, q), to
    every order. The derivative in x is refused with a TypeError (no closed form).

    >>> import fgrad
    >>> from fgrad.scipy.special import zeta
    >>> round(float(fgrad.grad(lambda q: zeta(3.0, q))(1.0)), 12)  # -3 zeta(4) = -pi**4 / 30
    -3.246969701133
    """
    if out is not None:
        raise TypeError(
            "scipy.special.zeta: fgrad does not support out=; leave it out (fgrad returns a "
            "new array)"
        )
    if q is None:
        return _riemann_zeta_p(x)
    return _hurwitz_zeta_p(*weak_scalars(x, q))


gamma = _ufunc(
    _gamma_p, "The gamma function; derivative gamma(x) digamma(x) (nan at the poles 0, -1, ...)."
)


_gammasgn_p = nondiff(_sc.gammasgn, name="gammasgn")


gammasgn = _ufunc(_gammasgn_p, "The sign of gamma(x): piecewise constant, so it has no derivative.")
rgamma = _ufunc(
    _rgamma_p,
    """1 / gamma(x); derivative -rgamma(x) digamma(x). At the zeros 0, -1, -2, ... of rgamma
    that product is 0 * inf and the derivative is nan there.""",
)


# From here (in x and x + y) `_digamma_drop` takes digamma's asymptotic series, whose first 8
# terms are within 1e-16 there.
_DIGAMMA_FAR = 10.0


def _digamma_drop(x, y):
    """digamma(x) - digamma(x + y), the derivative of betaln in x. Where x and x + y are both
    >= 10 by digamma's asymptotic series psi(t) ~ log t - 1/(2t) - sum_k B_2k / (2k t^2k),
    the difference taken term by term: -r - y / (2 x (x+y)) + sum_k B_2k / (2k x^2k)
    expm1(-2k r), r = log1p(y/x), so it keeps its digits when y << x (the difference of the
    digammas kept none of -1e-14 at x = 1e14, y = 1)."""
    plain = _psi_p(x) - _psi_p(fnp.add(x, y))
    if dtype_of(plain).kind == "c":
        return plain
    xv, yv = _values(x), _values(y)
    far = bool_mask(_np.logical_and(xv >= _DIGAMMA_FAR, xv + yv >= _DIGAMMA_FAR), shape_of(plain))
    if not _some(far):
        return plain
    xf, yf = fnp.where(far, x, _DIGAMMA_FAR), fnp.where(far, y, 0.0)
    r = fnp.log1p(yf / xf)
    w = (1.0 / xf) * (1.0 / xf)  # (x * x overflows at 1e200)
    total, power = -r - 0.5 * (yf / xf) / (xf + yf), 1.0
    for k, b in enumerate(_BERNOULLI[:8], start=1):
        power = power * w
        total = total + (float(b) / (2 * k)) * power * fnp.expm1(-2.0 * k * r)
    return fnp.where(far, total, plain)


_betaln_p = _binary(
    _sc.betaln,
    lambda x, y, ans: _digamma_drop(x, y),
    lambda x, y, ans: _digamma_drop(y, x),
    "betaln",
)
_beta_p = _binary(
    _sc.beta,
    lambda x, y, ans: ans * _digamma_drop(x, y),
    lambda x, y, ans: ans * _digamma_drop(y, x),
    "beta",
)


beta = _ufunc(
    _beta_p,
    """The beta function Gamma(a) Gamma(b) / Gamma(a + b), with broadcasting;
    d/da = beta(a, b) (digamma(a) - digamma(a + b)).""",
)
betaln = _ufunc(
    _betaln_p, "log|beta(a, b)|, with broadcasting; d/da = digamma(a) - digamma(a + b)."
)


def traced_floats(given):
    """The arguments of `given` that a transform traces and that have derivatives."""
    return [a for a in given if type(a) is Box and dtype_of(a).kind in "fc"]


def nan_carrier(bad, a):
    """a where `bad` holds, 1.0 elsewhere: a term of `nan_of`. Written -where(bad, -a, -1) so
    that the derivative it sends back to a where `bad` does not hold is -0.0, not where's 0.0:
    added to a's other derivatives there, -0.0 keeps each as it is, -0.0 included (under
    `vmap`, where the nan branch is always built, 0.0 turned a -0.0 gradient into 0.0)."""
    return -fnp.where(bad, -a, -1.0)


def nan_of(carriers, out):
    """nan in `out`'s dtype, as exp(the sum of `carriers`) * nan: each carrier is an argument
    with 1.0 where `out` is valid (`nan_carrier`), so that the derivatives of every order
    are nan where it is not (exp's are never 0: a linear carrier's second derivative would
    be 0), and the `where` keeps the nan off the valid places (their cotangent here is 0)."""
    if not carriers:
        return math.nan
    nan = fnp.exp(sum(carriers[1:], carriers[0])) * math.nan
    if dtype_of(nan) != dtype_of(out):  # (a float64 argument of a float32 result's)
        nan = fnp.astype(nan, dtype_of(out))
    return nan


@mirror("function")
def multigammaln(a: ArrayLike, d: int) -> Array:
    """log of the multivariate gamma function of dimension `d` (a constant int >= 1):
    d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2), j = 0 .. d - 1, for a > (d - 1) / 2
    (an a outside raises ValueError, as in SciPy; for a Dask array, whose values are not read,
    it gives nan there). Built from `gammaln`, so it needs no rules of its own."""
    d = read_constant(d, "multigammaln", "d", "it is an integer: pass fgrad.stop_gradient(d)")
    if _np.ndim(d) != 0 or int(d) != d or d < 1:
        raise ValueError(f"multigammaln: d must be an integer >= 1; got {d!r}")
    if _np.asarray(d).dtype.kind not in "biu":  # (SciPy's raises at range(1, d + 1))
        raise TypeError(
            f"multigammaln: the dimension d must be an integer, as in SciPy; got {d!r} (shape "
            f"(), dtype {_np.asarray(d).dtype}): pass {int(d)}"
        )
    d = int(d)
    if type(a) is list or type(a) is tuple:  # (as SciPy takes them; `a - j / 2` needs an array)
        a = fnp.asarray(a)
    outside = fnp.less_equal(_values(a), 0.5 * (d - 1))
    if is_foreign_array(innermost(outside)):  # not read: nan where a is outside the domain
        nan = nan_of([nan_carrier(outside, a) for a in traced_floats([a])], _values(a))
        return fnp.where(outside, nan, _multigammaln(fnp.where(outside, 0.5 * d, a), d))
    # (`read_any`: under `vmap` the rows' masks, which agree, all False, unless a row is out of
    # the domain, and `vmap` splits the batch then; under `jit` one boolean)
    if read_any(outside):
        av = _np.asarray(primal(a))
        raise ValueError(
            f"multigammaln: every a must be > (d - 1) / 2 = {0.5 * (d - 1)}; "
            f"got a with minimum {av.min()!r} (shape {av.shape}, dtype {av.dtype})"
        )
    return _multigammaln(a, d)


def _multigammaln(a, d):
    out = gammaln(a)
    for j in range(1, d):
        out = out + gammaln(a - 0.5 * j)
    return out + 0.25 * d * (d - 1) * math.log(math.pi)


# --- incomplete gamma functions -------------------------------------------------------------------
# P = gammainc(a, x) and Q = gammaincc(a, x) = 1 - P. In x: P_x = x**(a-1) exp(-x) / Gamma(a).
# In a there is no closed form; P_a is computed, in fgrad operations (so it has derivatives of
# every order in a and x), where each way is free of cancellation:
#   x < a + 1: from the series P = sum_k exp((a+k) log x - x - gammaln(a+k+1)), whose terms
#     decrease from k = 0: P_a = sum_k exp(...) (log x - digamma(a+k+1)), terms of one sign
#     up to the small first few;
#   x >= a + 1: from Legendre's continued fraction Q = x**a exp(-x) / Gamma(a) * r,
#     r = 1 / (x + 1 - a - f_1), f_n = n (n - a) / (x + 2n + 1 - a - f_{n+1}), run backwards
#     with its derivative in a alongside; Q_a = Q (log x - digamma(a) + r'/r), a sum of
#     positive terms, so Q_a keeps its relative accuracy even where Q is 1e-50.
# Below a = 1, Q_a is written without Gamma's pole at a = 0 (`_gammaincc_da`), so every order is
# right through a = 0 (SciPy's P(0, x) = 1; P_a = -E1(x) there). Each element takes its own
# number of terms (`_row_bounds`): its value never depends on the others', nor, under `vmap`,
# on the other rows'. Checked against mpmath, to order 2 in a and mixed, to 1e-11 or better for
# 0 <= a <= 1e5 and 1e-300 <= x <= 1e5 (tests/test_special.py).


def _gammainc_da(a, x):
    """d gammainc(a, x) / da in a and x's broadcast shape (0 at x == 0 and x == inf)."""
    av, xv = _values(a), _values(x)
    shape = _np.broadcast_shapes(shape_of(a), shape_of(x))
    dtype = _np.result_type(_float_dtype(a), _float_dtype(x))
    edge = _np.logical_or(xv == 0, _np.isposinf(xv))
    series = bool_mask(_np.logical_and(xv < av + 1, _np.logical_not(edge)), shape)
    fraction = bool_mask(_np.logical_not(_np.logical_or(series, edge)))
    out = _np.zeros(shape, dtype)
    if _some(series):
        sa, sx = fnp.where(series, a, 1.0), fnp.where(series, x, 0.5)
        length = _np.floor(40.0 + 12.0 * _np.sqrt(_np.fmax(_np.where(series, xv, 0.0), 0.0)))
        shortest, longest = _row_bounds(length, 40.0)
        k = _np.arange(int(longest), dtype=dtype)
        ak1 = fnp.expand_dims(sa, -1) + (k + 1.0)
        log_x = fnp.expand_dims(fnp.log(sx), -1)
        terms = fnp.exp((ak1 - 1.0) * log_x - fnp.expand_dims(sx, -1) - gammaln(ak1))
        if shortest < longest:  # each element sums its own terms
            terms = fnp.where(_np.less(k, _np.expand_dims(length, -1)), terms, 0.0)
        out = fnp.where(series, _own_sum(terms * (log_x - digamma(ak1))), out)
    if _some(fraction):
        fa, fx = fnp.where(fraction, a, 1.0), fnp.where(fraction, x, 3.0)
        # terms enough for the last bit of r and r' (checked for 0 <= a <= 1e5, x >= a + 1
        # against 6000 terms): near x = 1, 106 (40 left 2e-10 at a = 0, x = 1)
        depth = _np.floor(
            24.0
            + 4.0 * _np.sqrt(_np.fmax(_np.where(fraction, av, 1.0), 0.0))
            + 100.0 / _np.where(fraction, xv, 3.0)
        )
        shallowest, deepest = _row_bounds(depth, 24.0)
        f = df = 0.0  # f_n and d f_n / da
        for n in range(int(deepest), 0, -1):
            d = fx + (2.0 * n + 1.0) - fa - f
            f_next = (n * (n - fa)) / d
            df_next = (f_next * (1.0 + df) - float(n)) / d
            if n > shallowest:  # each element starts at its own depth, with f = df = 0
                f_next = fnp.where(_np.less(depth, n), 0.0, f_next)
                df_next = fnp.where(_np.less(depth, n), 0.0, df_next)
            f, df = f_next, df_next
        r = 1.0 / (fx + 1.0 - fa - f)
        out = fnp.where(fraction, -_gammaincc_da(fa, fx, r, (1.0 + df) * r), out)
    return out


def _row_bounds(lengths, default):
    """The least and the most of `lengths` (one per element, nan read as `default`) over
    every row of every batch: the arrays are the most's long, and the elements that need fewer
    take theirs alone (`_own_sum`, a mask), so an element's value never depends on the others
    (under `vmap`, a row's on the other rows)."""
    every = all_rows(lengths, "scipy.special.gammainc")
    if not every.size:
        return default, default
    least, most = float(every.min()), float(every.max())
    if not least <= most:  # a nan (of a nan argument)
        every = _np.nan_to_num(every, nan=default)
        least, most = float(every.min()), float(every.max())
    return least, most


def _own_sum(terms):
    """The sum along the last axis, in order (a running sum's end): the zeros that pad an
    element's own terms then leave its bits as they are (a pairwise sum's blocks follow the
    length)."""
    return fnp.cumsum(terms, axis=-1)[..., -1]


def _gammaincc_da(a, x, r, dlog_r):
    """Q_a from the continued fraction's r (and r'/r = `dlog_r`) where x >= a + 1:
    Q (log x - digamma(a) + r'/r), whose terms are positive, with SciPy's Q (accurate where it
    is 1e-50); below a = 1 as x**a exp(-x) r (1 + a (log x + r'/r - digamma(a + 1))) /
    Gamma(a + 1), the same (Q = x**a exp(-x) r / Gamma(a), -a digamma(a) =
    1 - a digamma(a + 1)) without Gamma's pole at a = 0, where Q = 0 times digamma = -inf was
    nan: there Q_a = exp(-x) r = E1(x), and every derivative is smooth through a = 0."""
    near_zero = _np.less(_values(a), 1.0)
    log_x = fnp.log(x)
    out = None
    if _some(_np.logical_not(near_zero)):
        big = fnp.where(near_zero, 1.0, a)
        out = _gammaincc_p(big, x) * (log_x - digamma(big) + dlog_r)
    if _some(near_zero):
        small = fnp.where(near_zero, a, 0.5)
        front = fnp.exp(small * log_x - x - gammaln(small + 1.0)) * r
        near = front * (1.0 + small * (log_x + dlog_r - digamma(small + 1.0)))
        out = near if out is None else fnp.where(near_zero, near, out)
    return out


def _gammainc_dx(a, x):
    """x**(a-1) exp(-x) / Gamma(a), 1 at x == 0 when a == 1 (xlogy's 0 log 0 = 0); below
    a = 1 as a x**(a-1) exp(-x) / Gamma(a + 1), whose derivatives in a are finite at a = 0
    (gammaln's pole made them nan: d/da d/dx P at a = 0 is exp(-x) / x); from
    `_STIRLING_A` on, near the peak, in Stirling's form (`_in_stirlings_form`)."""
    near_zero = _np.less(_values(a), 1.0)
    if not _some(near_zero):
        out = fnp.exp(xlogy(a - 1.0, x) - x - gammaln(a))
    else:
        big, small = fnp.where(near_zero, 1.0, a), fnp.where(near_zero, a, 0.5)
        near = small * fnp.exp(xlogy(small - 1.0, x) - x - gammaln(small + 1.0))
        out = fnp.where(near_zero, near, fnp.exp(xlogy(big - 1.0, x) - x - gammaln(big)))
    return _in_stirlings_form(out, a, x, lambda a, x: fnp.exp(_gammainc_log_density_large(a, x)))


def _in_stirlings_form(out, a, x, large_form):
    """`out` (a function of the gamma density), and where a is from `_STIRLING_A` on and x
    within `_NEAR_THE_PEAK` of a (relative), `large_form(a, x)`, the same in Stirling's form
    (in out's dtype: float32 data keeps its dtype). Also for `fgrad.scipy.stats.gamma`'s
    densities."""
    av = _values(a)
    large = _np.logical_and(_np.greater_equal(av, _STIRLING_A), _np.less(av, math.inf))
    if not _some(large):
        return out
    near = _np.less_equal(_np.abs(_values(x) - av), _NEAR_THE_PEAK * _np.abs(av))
    large = bool_mask(_np.logical_and(large, near), shape_of(out))
    a_l = fnp.where(large, a, _STIRLING_A)  # (the others at mu = 0: no nan to mask)
    return fnp.where(
        large, fnp.astype(large_form(a_l, fnp.where(large, x, a_l)), dtype_of(out)), out
    )


# From here on the density's exponent (a-1) log x - x - gammaln(a), a difference of terms of
# size a log x, is formed near its peak with the large terms cancelled by hand (it kept about
# a*eps absolutely: 9.8e-6 relative at a = x = 1e10, 4e-3 at 1e12); Stirling's series
# `_stirling_tail` has eps there. Below, and away from the peak (where x -> 0 made
# log1p(mu) -inf, and the form's derivative in a cancelled), the direct exponent: a*eps is
# 2e-12 at a = 1e4, and ordinary shapes pay nothing for the switch.
_STIRLING_A = 1e4
# x within this fraction of the peak (|x - a| <= a / 2 for gamma; for beta, x - p within half
# of p and of 1 - p): there mu - log1p(mu) and its derivatives are of size 1
_NEAR_THE_PEAK = 0.5


def _stirling_tail(a):
    """gammaln(a) - ((a - 1/2) log a - a + log(2 pi)/2), by its asymptotic series: 5 terms
    are exact to double precision from a = 100 on (the next is 2e-25 there)."""
    r = 1.0 / a
    r2 = r * r
    return r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))


def _mu_minus_log1p(mu):
    """mu - log1p(mu) (>= 0), without the cancellation near mu = 0: there its series
    sum_{k >= 2} (-mu)^k / k, to k = 19 (0.1^20 / 20 is below eps of mu^2 / 2)."""
    near = bool_mask(_np.less(_np.abs(_values(mu)), 0.1))
    m, s = fnp.where(near, 0.5, mu), fnp.where(near, mu, 0.0)
    poly = 0.0
    for k in range(19, 1, -1):
        poly = poly * s + (-1.0) ** k / k
    return fnp.where(near, s * s * poly, m - fnp.log1p(m))


def _gammainc_log_density_large(a, x):
    """log(x**(a-1) exp(-x) / Gamma(a)) with mu = (x - a) / a: -a (mu - log1p(mu))
    - log1p(mu) - log(2 pi a) / 2 - `_stirling_tail`(a), every term of size 1 or the
    exponent itself."""
    mu = (x - a) / a
    exponent = -a * _mu_minus_log1p(mu) - fnp.log1p(mu)
    return exponent - 0.5 * fnp.log(2 * math.pi * a) - _stirling_tail(a)


_gammainc_p = _binary(
    _sc.gammainc,
    lambda a, x, ans: _gammainc_da(a, x),
    lambda a, x, ans: _gammainc_dx(a, x),
    "gammainc",
)
_gammaincc_p = _binary(
    _sc.gammaincc,
    lambda a, x, ans: -_gammainc_da(a, x),
    lambda a, x, ans: -_gammainc_dx(a, x),
    "gammaincc",
)
# x = P^-1(a, p) has x_p = 1 / P_x(a, x) and x_a = -P_a(a, x) / P_x(a, x); the same x_a for
# Q^-1, whose x_q = -1 / P_x.
_gammaincinv_p = _binary(
    _sc.gammaincinv,
    lambda a, p, ans: -(_gammainc_da(a, ans) / _gammainc_dx(a, ans)),
    lambda a, p, ans: 1.0 / _gammainc_dx(a, ans),
    "gammaincinv",
)
_gammainccinv_p = _binary(
    _sc.gammainccinv,
    lambda a, q, ans: -(_gammainc_da(a, ans) / _gammainc_dx(a, ans)),
    lambda a, q, ans: -1.0 / _gammainc_dx(a, ans),
    "gammainccinv",
)


gammainc = _ufunc(
    _gammainc_p,
    """The regularized lower incomplete gamma function P(a, x) for a > 0, x >= 0, with
    broadcasting. d/dx = x**(a-1) exp(-x) / Gamma(a); d/da has no closed form and is
    computed by a series (x < a + 1) or a continued fraction (x >= a + 1) written in fgrad
    operations, so every order works in both arguments (JAX: first order in a only).

    >>> import fgrad
    >>> from fgrad.scipy.special import gammainc
    >>> round(float(fgrad.grad(gammainc, argnums=1)(1.0, 2.0)), 12)  # exp(-2)
    0.135335283237
    """,
)
gammaincc = _ufunc(
    _gammaincc_p,
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x); derivatives the
    negatives of `gammainc`'s, d/da accurate where Q is tiny too.""",
)
gammaincinv = _ufunc(
    _gammaincinv_p,
    """The inverse of `gammainc` in x for p in [0, 1]; d/dp = 1 / P_x(a, x) and
    d/da = -P_a(a, x) / P_x(a, x) at x = gammaincinv(a, p).""",
)
gammainccinv = _ufunc(
    _gammainccinv_p,
    """The inverse of `gammaincc` in x for q in [0, 1]; d/dq = -1 / P_x(a, x) and
    d/da = -P_a(a, x) / P_x(a, x) at x = gammainccinv(a, q).""",
)


# --- x log y and the entropies --------------------------------------------------------------------


def _safe_ratio(x, y, zero_at):
    """x / y, taken as 0 where the constant mask `zero_at` holds (x == 0 and y == 0 there)."""
    if _some(zero_at):
        return fnp.where(zero_at, 0.0, x / fnp.where(zero_at, 1.0, y))
    return x / y


def _both_zero(x, y, y_value=0.0):
    both = _np.logical_and(_values(x) == 0, _values(y) == y_value)
    return bool_mask(both, _np.broadcast_shapes(shape_of(x), shape_of(y)))


_xlogy_p = _binary(
    _sc.xlogy,
    lambda x, y, ans: fnp.log(y),
    lambda x, y, ans: _safe_ratio(x, y, _both_zero(x, y)),
    "xlogy",
)
_xlog1py_p = _binary(
    _sc.xlog1py,
    lambda x, y, ans: fnp.log1p(y),
    lambda x, y, ans: _safe_ratio(x, 1.0 + y, _both_zero(x, y, -1.0)),
    "xlog1py",
)


xlogy = _ufunc(
    _xlogy_p,
    """x * log(y), with the value 0 where x == 0 (even at y == 0), with broadcasting.

    d/dx = log(y) (-inf at y == 0); d/dy = x / y, taken as 0 where x == 0 and y == 0 (JAX
    gives nan there).

    >>> import fgrad
    >>> from fgrad.scipy.special import xlogy
    >>> fgrad.grad(xlogy, argnums=(0, 1))(0.0, 0.0)
    (np.float64(-inf), np.float64(0.0))
    """,
)
xlog1py = _ufunc(
    _xlog1py_p,
    """x * log1p(y), with the value 0 where x == 0 (even at y == -1), with broadcasting.

    d/dx = log1p(y); d/dy = x / (1 + y), taken as 0 where x == 0 and y == -1 (JAX: nan).""",
)


def _entr_deriv(ans, x):
    """-(log x + 1) for x >= 0 (+inf at 0); 0 for x < 0, where entr is the constant -inf."""
    neg = bool_mask(_values(x) < 0)
    if _some(neg):
        return fnp.where(neg, 0.0, -(fnp.log(fnp.where(neg, 1.0, x)) + 1.0))
    return -(fnp.log(x) + 1.0)


_entr_p = _unary_of_x(_sc.entr, lambda x: _entr_deriv(None, x), name="entr")


entr = _ufunc(
    _entr_p,
    """-x log(x) for x > 0, 0 at x == 0, -inf for x < 0; derivative -(log(x) + 1) (+inf at
    0, and 0 for x < 0 where the value is the constant -inf).""",
)


def _outside(x, y):
    """Where rel_entr and kl_div are the constant +inf (x < 0 or y < 0, or x > 0 == y)."""
    xv, yv = _values(x), _values(y)
    out = _np.logical_or(_np.logical_or(xv < 0, yv < 0), _np.logical_and(xv > 0, yv == 0))
    return bool_mask(out, _np.broadcast_shapes(shape_of(x), shape_of(y)))


def _guarded(partial, at_origin):
    """A partial of rel_entr/kl_div: 0 where the function is the constant +inf, `at_origin`
    at x == y == 0 (where the formula is inf - inf or 0 / 0), `partial(x, y)` elsewhere."""

    def d(x, y, ans):
        off, origin = _outside(x, y), _both_zero(x, y)
        special = _np.logical_or(off, origin)
        if not _some(special):
            return partial(x, y)
        inside = partial(fnp.where(special, 1.0, x), fnp.where(special, 1.0, y))
        return fnp.where(off, 0.0, fnp.where(origin, at_origin, inside))

    return d


_rel_entr_p = _binary(
    _sc.rel_entr,
    _guarded(lambda x, y: fnp.log(x) - fnp.log(y) + 1.0, math.inf),
    _guarded(lambda x, y: -(x / y), 0.0),
    "rel_entr",
)
_kl_div_p = _binary(
    _sc.kl_div,
    _guarded(lambda x, y: fnp.log(x) - fnp.log(y), math.inf),
    _guarded(lambda x, y: 1.0 - x / y, 1.0),
    "kl_div",
)


rel_entr = _ufunc(
    _rel_entr_p,
    """x log(x / y) for x, y > 0 (0 at x == 0 <= y, +inf elsewhere), with broadcasting.

    d/dx = log(x / y) + 1 (-inf at x == 0 < y, +inf at x == y == 0, where the value jumps to
    +inf for x > 0); d/dy = -x / y (0 at x == 0, also at y == 0); both are 0 where the value
    is the constant +inf (JAX gives 0 at x == 0 too).""",
)
kl_div = _ufunc(
    _kl_div_p,
    """x log(x / y) - x + y for x, y > 0 (y at x == 0 <= y, +inf elsewhere), with
    broadcasting. d/dx = log(x / y) (-inf at x == 0 < y, +inf at x == y == 0); d/dy = 1 - x / y
    (1 at x == 0, also at y == 0); both are 0 where the value is the constant +inf.""",
)


# --- the normal distribution ----------------------------------------------------------------------


def _mills_impl(x):
    """phi(x) / Phi(x), the derivative of log_ndtr, accurate for every x: through erfcx for
    x < 0 (where Phi underflows) and directly for x >= 0 (where erfcx(-x/sqrt 2) overflows)."""
    x = as_array(x)  # (a 0-d Dask array stays one in `_result`)
    if x.dtype.kind == "c":  # SciPy's complex log_ndtr, directly (x < 0 orders no complex x)
        with _np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            return _result(_np.exp(-0.5 * x * x - _sc.log_ndtr(x)) / _SQRT_2PI)
    with _np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        left = math.sqrt(2.0 / math.pi) / _sc.erfcx(-x / _SQRT_2)
        right = _np.exp(-0.5 * x * x - _sc.log_ndtr(x)) / _SQRT_2PI
        out = _np.where(x < 0, left, right).astype(_float_dtype(x))
    return _result(out)


def _mills_excess_impl(x):
    """x + phi(x)/Phi(x), without the cancellation of the sum at x -> -inf (where it is about
    -1/x): by the continued fraction 1 / (z + 2 / (z + 3 / (z + ...))), z = -x, for x < -5,
    where 50 terms give full precision, and as the plain sum elsewhere."""
    x = as_array(x)  # (a 0-d Dask array stays one in `_result`)
    if x.dtype.kind == "c":
        return _result(x + _mills_impl(x))
    with _np.errstate(divide="ignore", invalid="ignore"):
        z = _np.where(x < -5.0, -x, 5.0).astype(_np.float64)
        t = z
        for k in range(50, 1, -1):
            t = z + k / t
        out = _np.where(x < -5.0, 1.0 / t, x + _mills_impl(x)).astype(_float_dtype(x))
    return _result(out)


def _mills_taylor(which):
    """m = phi/Phi and h = x + m together: m' = -m h x' and h' = (1 - m h) x'. `which` is 0
    for m, 1 for h."""

    def rule(primals, series):
        (x0,), (s,) = primals, series
        order = len(s)
        x = _taylor.full(x0, s, order)
        m, h = [_mills_p(x0)], [_mills_excess_p(x0)]
        dm, dh = [], []
        for k in range(1, order + 1):
            mh = _taylor.cauchy(m, h, k - 1)
            dm.append(None if mh is None else -mh)
            dh.append(1.0 - mh if k == 1 else dm[-1])
            m.append(_taylor.integrate(x, dm, k))
            h.append(_taylor.integrate(x, dh, k))
        y = (m, h)[which]
        return y[0], tuple(y[1:])

    return _taylor.kind_of_rule(rule, "speed")


# With m = phi/Phi and h = x + m: m' = -m h and h' = 1 + m' = 1 - m h. Both m and h are
# accurate at x -> -inf, so log_ndtr's first and second derivatives are (h' itself cancels,
# so the third loses about log10(x**2) digits there).
_mills_p = defunary(
    _mills_impl, lambda ans, x: -(ans * _mills_excess_p(x)), name="ndtr_mills_ratio"
)
register_rules(_mills_p.primitive, taylor=_mills_taylor(0))
_mills_excess_p: UnaryFunction = defunary(
    _mills_excess_impl, lambda ans, x: 1.0 - _mills_p(x) * ans, name="ndtr_mills_excess"
)
register_rules(_mills_excess_p.primitive, taylor=_mills_taylor(1))
_ndtr_p = _unary_of_x(_sc.ndtr, lambda x: fnp.exp(-0.5 * (x * x)) / _SQRT_2PI, name="ndtr")
_ndtri_p = defunary(_sc.ndtri, lambda ans, x: _SQRT_2PI * fnp.exp(0.5 * (ans * ans)), name="ndtri")
register_rules(
    _ndtri_p.primitive, taylor=_ode_rule(_ndtri_p.primitive, _exp_square_slope(_SQRT_2PI, 0.5))
)
_log_ndtr_p = _unary_of_x(_sc.log_ndtr, lambda x: _mills_p(x), name="log_ndtr")


ndtr = _ufunc(
    _ndtr_p, "The standard normal CDF; derivative the normal density exp(-x**2/2) / sqrt(2 pi)."
)
ndtri = _ufunc(
    _ndtri_p, "The inverse of `ndtr` on (0, 1); derivative sqrt(2 pi) exp(ndtri(x)**2 / 2)."
)
log_ndtr = _ufunc(
    _log_ndtr_p,
    """log(ndtr(x)), stable at any magnitude; its derivative phi(x)/Phi(x) is computed without
    underflow (about -x at x = -1000, 0 at x = 1000), and its second derivative without
    cancellation (about -1 + 1/x**2 at x = -1000).

    >>> import fgrad
    >>> from fgrad.scipy.special import log_ndtr
    >>> round(float(fgrad.grad(fgrad.grad(log_ndtr))(-1000.0)), 12)  # -1 + 1/x**2
    -0.999999000006
    """,
)


# --- modified Bessel functions --------------------------------------------------------------------
# I_n(x) / x**n is an even, entire function whose derivative is x * I_{n+1}(x) / x**(n+1):
# the rules go through it, so they are exact at x == 0 to every order (I_1(x) / x would be
# 0 / 0 there).


def _bessel_over_power(x, n, scaled):
    """[exp(-|x|)] I_n(x) / x**n, by a series near 0 where x**n underflows."""
    x = as_array(x)  # (a 0-d Dask array stays one in `_result`)
    dtype = x.dtype if x.dtype.kind == "f" else _np.float64
    xd = x.astype(_np.float64)
    small = _np.abs(xd) < 1e-5
    with _np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # (the series serves |x| < 1e-5 only: it overflows, unused, where x is large)
        q = 0.25 * xd * xd
        series = (1.0 + q / (n + 1) + q * q / (2.0 * (n + 1) * (n + 2))) / (
            2.0**n * math.factorial(int(n))
        )
        if scaled:
            series = series * _np.exp(-_np.abs(xd))
        scaled_bessel = _ive_int(n, xd) if scaled else _sc.iv(n, xd)
        big = scaled_bessel / _np.where(small, 1.0, xd) ** n
    out = _np.where(small, series, big).astype(dtype)
    return _result(out)


# SciPy's `ive` (AMOS) gives nan beyond this |x|, where `i0e` and `i1e` (Cephes) still answer
_IVE_LIMIT = 2.0**30 - 1.0


def _ive_int(n, x):
    """ive(n, x) for an integer order n >= 0, beyond `_IVE_LIMIT` by the recurrence
    I_{k+1} = I_{k-1} - (2k / x) I_k from i0e and i1e (stable there: x is far above n). i1e's
    derivative takes ive(1, x) / x: it was nan at |x| > 2**30, where i1e itself is finite."""
    out = _sc.ive(n, x)
    large = _np.abs(x) > _IVE_LIMIT
    if type(large) is _np.ndarray and not large.any():  # (a lazy array's is not read)
        return out
    xl = _np.where(large, x, 1.0)
    previous, current = _sc.i0e(xl), _sc.i1e(xl)
    if n == 0:
        current = previous
    for k in range(1, int(n)):
        previous, current = current, previous - (2.0 * k / xl) * current
    return _np.where(large, current, out)


def _ivx_impl(x, n):
    return _bessel_over_power(x, n, scaled=False)


def _ivxe_impl(x, n):
    return _bessel_over_power(x, n, scaled=True)


def _ivx_deriv(x, n):
    return x * _ivx_p(x, n=n + 1)


_ivx_p: Primitive = defprimitive(
    _ivx_impl,
    vjp=lambda ans, x, n: lambda ct: ct * _ivx_deriv(x, n),
    jvp=lambda t, ans, x, n: t * _ivx_deriv(x, n),
    name="i_n_over_x_n",
    forward="derived",
)
register_rules(_ivx_p, batch=_order_batch_rule(_ivx_p, "n"), sparsity="elementwise")


def _ivxe_deriv(x, ans, n):
    return x * _ivxe_p(x, n=n + 1) - _sign(x) * ans


_ivxe_p = defprimitive(
    _ivxe_impl,
    vjp=lambda ans, x, n: lambda ct: ct * _ivxe_deriv(x, ans, n),
    jvp=lambda t, ans, x, n: t * _ivxe_deriv(x, ans, n),
    name="ie_n_over_x_n",
    forward="derived",
)
register_rules(_ivxe_p, batch=_order_batch_rule(_ivxe_p, "n"), sparsity="elementwise")

# The scaled functions' derivatives, i0e' = i1e - sign(x) i0e and the like, subtract terms
# of order x^-1/2 that agree to order x^-3/2: about log10(2x) digits were lost (3e-4 relative
# at x = 1e12, 2% in float32 at 1e6). From |x| >= max(_SCALED_BESSEL_FAR, v^2 / 2) they are the
# large-x (Hankel) expansions differentiated term by term, which have no cancellation: there
# its terms fall at least 4-fold each, so that _HANKEL_TERMS of them reach 1e-18.
_SCALED_BESSEL_FAR = 50.0
_HANKEL_TERMS = 30


def _scaled_bessel_far(x, v, kind):
    """The constant mask where `_scaled_bessel_far_derivative` serves `kind`(v, x) ("ive" or
    "kve") at real x: |x| large against v, and x > 0 unless kind is ive with an integer
    order (ive(v, -x) = (-1)^v ive(v, x)); None where it serves nowhere."""
    if dtype_of(x).kind == "c":
        return None
    xv = _values(x)
    if not _some(_np.abs(xv) >= _SCALED_BESSEL_FAR):  # (the common case, first and fast)
        return None
    vv = _np.asarray(v, _np.float64)
    with _np.errstate(invalid="ignore", over="ignore"):
        far = _np.abs(xv) >= _np.maximum(_SCALED_BESSEL_FAR, 0.5 * vv * vv)
        if kind == "kve" or not _np.all(vv == _np.round(vv)):
            far = _np.logical_and(far, xv > 0)
    far = _np.logical_and(far, _np.isfinite(xv))
    shape = _np.broadcast_shapes(shape_of(x), _np.shape(vv))
    return bool_mask(far, shape) if _some(far) else None


def _scaled_bessel_far_derivative(x, far, v, kind, order):
    """d^order/dx^order of `kind`(v, x) where the mask `far` holds (other entries: a finite
    filler), from ive(v, x) ~ (2 pi x)^(-1/2) sum_k (-1)^k a_k x^-k and kve(v, x) ~
    (pi / (2 x))^(1/2) sum_k a_k x^-k, a_k = prod_(j<=k) (4 v^2 - (2j-1)^2) / (k! 8^k), term
    by term: x^(-k-1/2) has the derivative (-1)^m (k+1/2)(k+3/2)...(k+m-1/2) x^(-k-1/2-m).
    At x < 0 (ive, integer v) the value is (-1)^v times that at |x|, the m-th derivative
    (-1)^(v+m) times."""
    vv = _np.asarray(v, _np.float64)
    mu, sign = 4.0 * vv * vv, (-1.0 if kind == "ive" else 1.0)
    ax = fnp.where(far, fnp.abs(x), _SCALED_BESSEL_FAR)
    w = 1.0 / ax
    a, coefficients = _np.ones_like(mu), []
    for k in range(_HANKEL_TERMS):
        if k:
            a = a * (mu - (2 * k - 1) ** 2) / (8.0 * k)
        rising = math.prod(k + 0.5 + j for j in range(order))
        coefficients.append(a * sign**k * (-1.0) ** order * rising)
    dtype = _float_dtype(x)
    total = 0.0
    for c in reversed(coefficients):  # Horner in 1/x
        total = total * w + _weights(c, dtype)
    scale = 1.0 / math.sqrt(2.0 * math.pi) if kind == "ive" else math.sqrt(math.pi / 2.0)
    out = (scale * total) * fnp.sqrt(w) * w**order
    negative = _np.real(_values(x)) < 0
    if kind == "ive" and _some(negative):
        out = out * _weights(_np.where(negative, (-1.0) ** (_np.round(vv) + order), 1.0), dtype)
    return out


def _scaled_bessel_slope(x, v, kind, plain):
    """d/dx of `kind`(v, x) ("ive" or "kve"): `plain()` (the recurrence's difference), and
    where `_scaled_bessel_far` holds the expansion's derivative."""
    far = _scaled_bessel_far(x, v, kind)
    if far is None:
        return plain()
    return fnp.where(far, _scaled_bessel_far_derivative(x, far, v, kind, 1), plain())


_ONE, _TWO = _np.int64(1), _np.int64(2)


# Taylor rules: the k-th derivative follows from the recurrences in the order (the next
# section) applied k times,
# f^(k) = (s/2)^k sum_j C(k, j) r^j f_(v-k+2j), with (s, r) = (1, -1) for J and Y, (1, 1) for
# I and (-1, 1) for K, so the rules compose the path with known derivatives
# (`_known_derivatives_rule`). The same sums of the scaled functions (ive, kve, i0e, i1e) are
# the scaled derivatives; the scale's own factor along the path, exp(-sign(Re x0) Re e(t))
# for ive and exp(e(t)) for kve (e = x(t) - x0), multiplies their series.
_BESSEL_SIGNS = {"jv": (1, -1), "yv": (1, -1), "iv": (1, 1), "kv": (-1, 1)}
_BESSEL_SIGNS.update({"ive": _BESSEL_SIGNS["iv"], "kve": _BESSEL_SIGNS["kv"]})


def _bessel_derivatives(x0, order, v, kind, integer_i=False):
    """f', ..., f^(order) at x0 for f = `kind`(v, x); `integer_i` for i0, i1, i0e and i1e,
    whose orders v + m are integers, taken from `_integer_i` (I_(-n) = I_n)."""
    s, r = _BESSEL_SIGNS[kind]
    if integer_i:
        values = {n: _integer_i(x0, n, kind) for n in range(order + 2)}
        f = {m: values[abs(int(v + m))] for m in range(-order, order + 1)}
    else:
        f = {m: _bessel_p(x0, v=v + m, kind=kind) for m in range(-order, order + 1)}
    out = []
    for k in range(1, order + 1):
        total = None
        for j in range(k + 1):
            c = math.comb(k, j) * r**j * (s / 2.0) ** k
            total = _taylor.add(total, c * f[2 * j - k])
        out.append(total)
    return out


_I_SERIES_BELOW = 1e-5  # `_bessel_over_power`'s series


def _integer_i(x, n, kind):
    """I_n(x) (kind "iv") or exp(-|x|) I_n(x) ("ive") for an integer n >= 0 at real x, right
    down to subnormal x."""
    if n <= 1:
        return _CEPHES_I[kind, n](x)
    near = _np.abs(_values(x)) < _I_SERIES_BELOW
    if not _some(near):  # (the common case, first and fast)
        return _bessel_p(x, v=_np.int64(n), kind=kind)
    near = bool_mask(near, shape_of(x))
    far = _bessel_p(fnp.where(near, 1.0, x), v=_np.int64(n), kind=kind)  # (no nan to carry)
    over_power = _ivx_p(x, n=n) if kind == "iv" else _ivxe_p(x, n=n)
    return fnp.where(near, x**n * over_power, far)


def _bessel_rule(prim, kind=None, v=None):
    """The rule of `_bessel_p` (kind and v its parameters) or of a function of x alone that is
    one of its kinds at the order v (j0, i1e, yn's n, ...)."""

    def rule(primals, series, **params):
        (x0,), (s,) = primals, series
        order = len(s)
        ans = bind(prim, (x0,), params)
        x0, s = _widened(x0, s, ans)
        which = params.get("kind", kind)
        nu = v if v is not None else params.get("v", params.get("n"))
        integer_i = v is not None and which in ("iv", "ive")  # i0, i1, i0e, i1e
        derivatives = _bessel_derivatives(x0, order, nu, which, integer_i)
        f = [ans, *_taylor.composed(derivatives, s)]
        if which not in ("ive", "kve"):
            return ans, tuple(f[1:])
        if which == "kve":
            rate = 1.0
        else:
            rate = -_sign(x0)
            s = [None if c is None else fnp.real(c) for c in s] if fnp.iscomplexobj(x0) else s
        e = [None] + [None if c is None else rate * c for c in s]
        scale = [1.0]
        for k in range(1, order + 1):
            scale.append(_taylor.integrate(e, scale, k))
        out = tuple(_taylor.cauchy(f, scale, k) for k in range(1, order + 1))
        far = _scaled_bessel_far(x0, nu, which)
        if far is None:
            return ans, out
        derivatives = [
            _scaled_bessel_far_derivative(x0, far, nu, which, k) for k in range(1, order + 1)
        ]
        return ans, tuple(
            c if c is None else fnp.where(far, d, c)
            for c, d in zip(out, _taylor.composed(derivatives, s))
        )

    return _taylor.kind_of_rule(rule, "speed")


_i0_p = defunary(_sc.i0, lambda ans, x: _i1_p(x), name="i0")
_i1_p: UnaryFunction = defunary(_sc.i1, lambda ans, x: _i0_p(x) - _ivx_p(x, n=1), name="i1")
_i0e_p = defunary(
    _sc.i0e,
    lambda ans, x: _scaled_bessel_slope(x, 0, "ive", lambda: _i1e_p(x) - _sign(x) * ans),
    name="i0e",
)
_i1e_p: UnaryFunction = defunary(
    _sc.i1e,
    lambda ans, x: _scaled_bessel_slope(
        x, 1, "ive", lambda: _i0e_p(x) - _ivxe_p(x, n=1) - _sign(x) * ans
    ),
    name="i1e",
)
# The Taylor rules of i0, i1, i0e and i1e take I_0 and I_1 (scaled: ive) from Cephes' i0, i1
# (i0e, i1e), as their values and grad do, and I_n for n >= 2 near 0 as x^n times the series of
# `_ivx_p` (`_ivxe_p`): AMOS's iv, which they took, is 0 for |x| < 1e-154 (iv(1, 1e-300) is 0,
# true 5e-301) and nan at a subnormal x, where grad was right
_CEPHES_I = {("iv", 0): _i0_p, ("iv", 1): _i1_p, ("ive", 0): _i0e_p, ("ive", 1): _i1e_p}
register_rules(_i0_p.primitive, taylor=_bessel_rule(_i0_p.primitive, "iv", _np.int64(0)))
register_rules(_i1_p.primitive, taylor=_bessel_rule(_i1_p.primitive, "iv", _ONE))
register_rules(_i0e_p.primitive, taylor=_bessel_rule(_i0e_p.primitive, "ive", _np.int64(0)))
register_rules(_i1e_p.primitive, taylor=_bessel_rule(_i1e_p.primitive, "ive", _ONE))


i0 = _ufunc(_i0_p, "The modified Bessel function I_0; derivative i1(x).")
i1 = _ufunc(
    _i1_p,
    """The modified Bessel function I_1; derivative i0(x) - i1(x)/x (1/2 at 0, exact there to
    every order).""",
)
i0e = _ufunc(
    _i0e_p,
    """exp(-|x|) i0(x); derivative i1e(x) - sign(x) i0e(x), which is 0 at the kink x == 0 (the
    mean of the one-sided derivatives, as JAX).""",
)
i1e = _ufunc(_i1e_p, "exp(-|x|) i1(x); derivative i0e(x) - i1e(x)/x - sign(x) i1e(x) (1/2 at 0).")


# --- Bessel functions of any order ----------------------------------------------------------------
# Every derivative in x follows from the recurrences J_v' = (J_{v-1} - J_{v+1}) / 2 (the same
# for Y), I_v' = (I_{v-1} + I_{v+1}) / 2 and K_v' = -(K_{v-1} + K_{v+1}) / 2, which hold at
# x == 0 too (J_1'(0) = (J_0(0) - J_2(0)) / 2 = 1/2, where the textbook J_0 - J_1/x is 0 / 0).
# The order v is a constant: like JAX and autograd, fgrad does not differentiate in it.
# For complex x the recurrences hold as they are (the functions are holomorphic in x), so the
# rules are ct * f'(x) and t * f'(x); ive(v, x) = iv(v, x) exp(-|Re x|) adds the derivative of
# its factor, -sign(Re x) ive(v, x) Re(t), a real-linear term.


def _static_real_order(v, who):
    """The order v of jv, iv, kv, ... as a constant float array. A `jit` argument is read (a
    guard of the record: another order records another path)."""
    v = read_constant(
        v,
        who,
        "the order v",
        f"fgrad differentiates {who} in x only (the derivative in the order has no closed "
        "form, as in JAX and autograd); pass v without a derivative (fgrad.stop_gradient(v))",
    )
    v_arr = _np.asarray(v)
    if v_arr.dtype.kind not in "iubf":
        raise TypeError(f"{who}: the order v must be real; got dtype {v_arr.dtype}")
    return v_arr if v_arr.dtype.kind == "i" else v_arr.astype(_np.float64)


def _bessel_slope(x, ans, v, kind):
    """d/dx of `kind`(v, x) from the neighbouring orders (see the banner above), a holomorphic
    function of x; for `ive`, without the term of its factor exp(-|Re x|) (`_ive_scale_term`)."""
    lower, upper = _bessel_p(x, v=v - 1, kind=kind), _bessel_p(x, v=v + 1, kind=kind)
    if kind in ("jv", "yv"):
        return 0.5 * (lower - upper)
    if kind in ("iv", "ive"):
        return 0.5 * (lower + upper)
    if kind == "kv":
        return -0.5 * (lower + upper)
    return ans - 0.5 * (lower + upper)  # kve: exp(x) K_v(x), holomorphic for complex x too


def _ive_scale_term(t, x, ans):
    """The tangent of ive's factor exp(-|Re x|) (times I_v): -sign(Re x) ive Re(t), 0 at
    Re x == 0 (the mean of the one-sided derivatives, as JAX). Not holomorphic: it reads the
    real part of the tangent."""
    return -(_sign(x) * ans * (fnp.real(t) if fnp.iscomplexobj(t) else t))


def _bessel_impl(x, v, kind):
    return _like_x(getattr(_sc, kind)(v, x), x)


def _real_scaled_slope(x, ans, v, kind):
    """The whole derivative of ive or kve at real x (the scale's term with the rest: they
    cancel at large x, `_scaled_bessel_slope`)."""

    def plain():
        slope = _bessel_slope(x, ans, v, kind)
        return slope - _sign(x) * ans if kind == "ive" else slope

    return _scaled_bessel_slope(x, v, kind, plain)


def _bessel_jvp(t, ans, x, v, kind):
    if kind in ("ive", "kve") and dtype_of(x).kind != "c":
        return broadcast_like(t * _real_scaled_slope(x, ans, v, kind), ans)
    dt = t * _bessel_slope(x, ans, v, kind)
    if kind == "ive":
        dt = dt + _ive_scale_term(t, x, ans)
    return broadcast_like(dt, ans)


def _bessel_vjp(ans, x, v, kind):
    like = meta(x)
    if kind in ("ive", "kve") and dtype_of(x).kind != "c":
        return lambda ct: unbroadcast(ct * _real_scaled_slope(x, ans, v, kind), like)

    def bprop(ct):  # the transpose of _bessel_jvp: ct f'(x) (a plain product: holomorphic)
        g = ct * _bessel_slope(x, ans, v, kind)
        if kind == "ive":  # the transpose of t -> -s ans Re(t) is ct -> -Re(s ans ct)
            scaled = _sign(x) * ans * ct
            g = g - (fnp.real(scaled) if fnp.iscomplexobj(scaled) else scaled)
        return unbroadcast(g, like)

    return bprop


_bessel_p = defprimitive(
    _bessel_impl, vjp=_bessel_vjp, jvp=_bessel_jvp, name="bessel", forward="derived"
)
register_rules(
    _bessel_p,
    taylor=_bessel_rule(_bessel_p),
    batch=_order_batch_rule(_bessel_p, "v"),
    sparsity="elementwise",
)


def _yn_impl(x, n):
    return _like_x(_sc.yn(n, x), x)


_yn_p: Primitive = _with_order(
    _yn_impl, lambda x, ans, n: 0.5 * (_yn_p(x, n=n - 1) - _yn_p(x, n=n + 1)), "yn"
)
register_rules(_yn_p, taylor=_bessel_rule(_yn_p, "yv"))

_j0_p = defunary(_sc.j0, lambda ans, x: -_j1_p(x), name="j0")
register_rules(_j0_p.primitive, taylor=_bessel_rule(_j0_p.primitive, "jv", _np.int64(0)))
_j1_p: UnaryFunction = defunary(
    _sc.j1, lambda ans, x: 0.5 * (_j0_p(x) - _bessel_p(x, v=_TWO, kind="jv")), name="j1"
)
register_rules(_j1_p.primitive, taylor=_bessel_rule(_j1_p.primitive, "jv", _ONE))
_y0_p = defunary(_sc.y0, lambda ans, x: -_y1_p(x), name="y0")
register_rules(_y0_p.primitive, taylor=_bessel_rule(_y0_p.primitive, "yv", _np.int64(0)))
_y1_p: UnaryFunction = defunary(
    _sc.y1, lambda ans, x: 0.5 * (_y0_p(x) - _yn_p(x, n=_TWO)), name="y1"
)
register_rules(_y1_p.primitive, taylor=_bessel_rule(_y1_p.primitive, "yv", _ONE))


j0 = _ufunc(_j0_p, "The Bessel function of the first kind of order 0; derivative -j1(x).")
j1 = _ufunc(
    _j1_p,
    """The Bessel function of the first kind of order 1; derivative (j0(x) - jv(2, x)) / 2
    (1/2 at 0, exact there to every order).""",
)
y0 = _ufunc(
    _y0_p, "The Bessel function of the second kind of order 0, for x > 0; derivative -y1(x)."
)
y1 = _ufunc(
    _y1_p,
    """The Bessel function of the second kind of order 1, for x > 0; derivative
    (y0(x) - yn(2, x)) / 2.""",
)


def _of_real_order(kind, name=None):
    """SciPy's `name`(v, x) (by default `kind`): `_bessel_p` of that kind at a constant real
    order v."""

    def fn(v, x):
        order = _static_real_order(v, name or kind)
        return _bessel_p(_x_in_scipy_loop(x, v, name or kind), v=order, kind=kind)

    fn.__name__ = name or kind
    return fn


jv = _ufunc(
    _of_real_order("jv"),
    """The Bessel function of the first kind of real order `v` (a constant), with
    broadcasting; derivative in x (jv(v - 1, x) - jv(v + 1, x)) / 2 (holomorphic for complex x,
    whose value is SciPy's complex one). Not differentiable in v (a traced v is a TypeError).

    >>> import fgrad
    >>> from fgrad.scipy.special import jv
    >>> float(fgrad.grad(lambda x: jv(1, x))(0.0))
    0.5
    """,
)
jn = _ufunc(
    _of_real_order("jv", "jn"),
    """The Bessel function of the first kind of integer order `n` (SciPy's `jn` is `jv`), a
    constant; derivative in x (jn(n - 1, x) - jn(n + 1, x)) / 2.""",
)
yv = _ufunc(
    _of_real_order("yv"),
    """The Bessel function of the second kind of real order `v` (a constant), for x > 0;
    derivative in x (yv(v - 1, x) - yv(v + 1, x)) / 2.""",
)
yn = _ufunc(
    _of_integer_order(_yn_p, minimum=-(2**62)),
    """The Bessel function of the second kind of integer order `n` (a constant, negative
    allowed), for x > 0; derivative in x (yn(n - 1, x) - yn(n + 1, x)) / 2.""",
)
iv = _ufunc(
    _of_real_order("iv"),
    """The modified Bessel function of the first kind of real order `v` (a constant), with
    broadcasting (x > 0 unless v is an integer; complex x as SciPy); derivative in x
    (iv(v - 1, x) + iv(v + 1, x)) / 2, holomorphic. Not differentiable in v (a traced v is a
    TypeError).""",
)
ive = _ufunc(
    _of_real_order("ive"),
    """exp(-|x|) iv(v, x); derivative in x (ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x)
    ive(v, x), with sign(0) = 0 at x == 0: at the kink of ive(0, x) there that is the mean of
    the one-sided derivatives, as JAX. For complex x it is SciPy's exp(-|Re x|) iv(v, x),
    not holomorphic: along a tangent t the derivative is (ive(v - 1, x) + ive(v + 1, x)) / 2 t
    - sign(Re x) ive(v, x) Re(t).

    >>> import fgrad, numpy as np
    >>> from fgrad.scipy.special import iv, ive
    >>> z = np.complex128(1.0 + 0.5j)
    >>> bool(np.isclose(ive(1, z), iv(1, z) * np.exp(-1.0)))
    True
    >>> d = fgrad.jvp(lambda z: ive(1, z), (z,), (1j,))[1]  # along i: the factor is constant
    >>> bool(np.isclose(d, 1j * np.exp(-1.0) * (iv(0, z) + iv(2, z)) / 2))
    True
    """,
)
kv = _ufunc(
    _of_real_order("kv"),
    """The modified Bessel function of the second kind of real order `v` (a constant), for
    x > 0; derivative in x -(kv(v - 1, x) + kv(v + 1, x)) / 2.""",
)
kve = _ufunc(
    _of_real_order("kve"),
    """exp(x) kv(v, x), for x > 0; derivative in x kve(v, x) - (kve(v - 1, x) +
    kve(v + 1, x)) / 2.""",
)


# --- exponential integrals ------------------------------------------------------------------------


def _expn_impl(x, n):
    return _like_x(_sc.expn(n, x), x)


def _expn_deriv(x, ans, n):
    """E_n' = -E_{n-1} for n >= 1; E_0(x) = exp(-x)/x has E_0' = -E_0 (1 + 1/x); a negative
    n has nan (E_{n-1}, nan as E_n's value)."""
    zero = n == 0
    if not zero.any():
        return -_expn_p(x, n=n - 1)
    e0 = -(ans * (1.0 + 1.0 / x))
    if zero.all():
        return e0
    return fnp.where(zero, e0, -_expn_p(x, n=_np.where(zero, 0, n - 1)))


_expn_p = _with_order(_expn_impl, _expn_deriv, "expn")
_exp1_p = _unary_of_x(_sc.exp1, lambda x: -(fnp.exp(-x) / x), name="exp1")
_expi_p = _unary_of_x(_sc.expi, lambda x: fnp.exp(x) / x, name="expi")


expn = _ufunc(
    _of_integer_order(_expn_p, minimum=-(2**62)),  # (nan for n < 0, as SciPy's)
    """The generalized exponential integral E_n(x) for a constant integer n >= 0 (or integer
    array) and x > 0, nan for n < 0 as SciPy's; derivative -E_{n-1}(x) (-E_0(x) (1 + 1/x)
    for n == 0, nan for n < 0).""",
)
exp1 = _ufunc(_exp1_p, "The exponential integral E_1(x) for x > 0; derivative -exp(-x)/x.")
expi = _ufunc(_expi_p, "The exponential integral Ei(x); derivative exp(x)/x.")


# --- the regularized incomplete beta function -----------------------------------------------------
# I = betainc(a, b, x). In x: I_x = x**(a-1) (1-x)**(b-1) / B(a, b). In a and b there is no
# closed form; with J(p, q, y) = y**p (1-y)**q / (p B(p, q)) sum_n t_n, t_0 = 1,
# t_n / t_{n-1} = y (p + q + n - 1) / (p + n) (the hypergeometric series of I_y(p, q)), each
# term's logarithm has the derivatives log y + psi(p+q+n) - psi(p+1+n) in p and
# log(1-y) - psi(q) + psi(p+q+n) in q. The series is summed where it converges fast,
# x < (a + 1) / (a + b + 2), as I = J(a, b, x); elsewhere I = 1 - J(b, a, 1 - x), so the
# derivative is always that of the smaller tail, without cancellation. Written in fgrad
# operations, so every order works in a, b and x.


def _beta_series_d(p, q, y, terms, lengths):
    """(dJ/dp, dJ/dq) of J(p, q, y) above, each element summing its own `lengths` terms of
    the `terms` of a trailing axis (those beyond are 0, and the sums are `_own_sum`'s), so
    that its value never depends on the others' lengths (under `vmap`, on the other rows')."""
    # (two at least: under `vmap` a branch that no row takes is computed, with no terms)
    n = _np.arange(max(terms, 2), dtype=_np.result_type(_float_dtype(p), _float_dtype(y)))
    p1, q1, y1 = (fnp.expand_dims(v, -1) for v in (p, q, y))
    # log t_n as sums of log1p((q - 1) / (p + k)) + log y, k = 1 .. n: accurate for every n
    steps = fnp.log1p((q1 - 1.0) / (p1 + n[1:])) + fnp.log(y1)
    log_t = fnp.concatenate([fnp.zeros_like(steps[..., :1]), fnp.cumsum(steps, axis=-1)], axis=-1)
    log_t = fnp.where(_np.less(n, _np.expand_dims(lengths, -1)), log_t, -_np.inf)  # t_n = 0
    log_front = xlogy(p, y) + xlog1py(q, fnp.negative(y))
    near_pole = _np.less(_np.fmin(_values(p), _values(q)), _BETA_NEAR_POLE)
    if not _some(near_pole):
        t = fnp.exp(fnp.expand_dims(log_front - fnp.log(p) - betaln(p, q), -1) + log_t)
        dp = fnp.log(y1) + digamma(p1 + q1 + n) - digamma(p1 + 1.0 + n)
        dq = fnp.log1p(fnp.negative(y1)) - digamma(q1) + digamma(p1 + q1 + n)
        return _own_sum(t * dp), _own_sum(t * dq)
    return _beta_series_d_near_pole(p, q, y1, n, log_t, log_front, near_pole)


# Below this p or q, 1 / (p B(p, q)) is taken another way (`_beta_series_d_near_pole`).
_BETA_NEAR_POLE = 1e-3


def _beta_series_d_near_pole(p, q, y1, n, log_t, log_front, near_pole):
    """`_beta_series_d` where p or q may be 0 (betainc's a or b): the front 1 / (p B(p, q)) is
    q / ((p + q) (p + q + 1) B(p + 1, q + 1)) there, J = q K: K and its derivatives are finite
    at p = 0 and at q = 0, where B's pole made them nan (-log p - betaln(p, q) = inf - inf;
    0 * digamma(0)); dJ/dq = K + q dK/dq, q digamma(q) = q digamma(q + 1) - 1 taken apart.
    Elsewhere the terms are `_beta_series_d`'s, bit for bit."""
    p_far, q_far = fnp.where(near_pole, 1.0, p), fnp.where(near_pole, 1.0, q)
    pq = p + q
    front_near = fnp.negative(fnp.log(pq) + fnp.log1p(pq) + betaln(p + 1.0, q + 1.0))
    # (log_front - log p - betaln(p, q) in `_beta_series_d`'s order, for its bits: under
    # `vmap` a row far from the pole comes here when another row is near it)
    far = log_front - fnp.log(p_far) - betaln(p_far, q_far)
    front = fnp.where(near_pole, log_front + front_near, far)
    t = fnp.exp(fnp.expand_dims(front, -1) + log_t)  # J's terms, over q near a pole
    p1, q1 = fnp.expand_dims(p, -1), fnp.expand_dims(q, -1)
    q_shift = fnp.where(fnp.expand_dims(near_pole, -1), q1 + 1.0, q1)  # + 1 / q near a pole
    dp = fnp.log(y1) + digamma(p1 + q1 + n) - digamma(p1 + 1.0 + n)
    dq = fnp.log1p(fnp.negative(y1)) - digamma(q_shift) + digamma(p1 + q1 + n)
    scale = fnp.where(near_pole, q, 1.0)
    dj_dq = _own_sum(t * dq) * scale
    return (
        _own_sum(t * dp) * scale,
        fnp.where(near_pole, _own_sum(t) + dj_dq, dj_dq),
    )


# The most terms a series of `_betainc_dab` may take (its arrays have a trailing axis this
# long); beyond, the other tail's series is taken if it is shorter, or an error is raised.
_BETA_SERIES_MAX = 20000


def _terms_needed(p, q, y):
    """Terms enough for 1e-17 of J(p, q, y)'s series (NumPy, on values): its ratio
    y (p + q + n - 1) / (p + n) exceeds 1 up to n* = (y (p + q - 1) - p) / (1 - y), then falls
    towards y, so beyond the peak m terms lose at least m log((p + k) / (y (p + q - 1 + k)))
    at k = n* + m, m found by doubling. (The start's ratio alone asked for 10^6 terms near
    x = (a + 1) / (a + b + 2) with a large, where the series was cut at 20000, silently.)"""
    with _np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = p + q - 1.0
        peak = _np.maximum(0.0, _np.ceil((y * c - p) / (1.0 - y)))
        m = _np.maximum(1.0, _np.ceil(-39.2 / _np.log(y)))  # enough where the ratio <= y
        for _ in range(48):
            k = peak + m
            short = m * (_np.log((p + k) / (c + k)) - _np.log(y)) < 39.2
            if not _some(short):  # (a batch's rows are not read: every doubling is taken)
                break
            m = _np.where(short, 2.0 * m, m)
        return 10.0 + peak + m


def _series_terms(needed, where):
    """The terms that serve every row where `where` holds (`needed` from `_terms_needed`)."""
    most = all_rows(_np.where(where, needed, 0.0), "scipy.special.betainc").max(initial=0.0)
    if not most <= _BETA_SERIES_MAX:  # (nan too)
        raise ValueError(
            "scipy.special.betainc: its derivative in a and b at these values needs about "
            f"{most:.3g} terms of either series (more than {_BETA_SERIES_MAX}); fgrad does not "
            "return a truncated value. These are a or b near 1e5 or more with x near "
            "(a + 1) / (a + b + 2)."
        )
    return int(most)


def _betainc_dab(a, b, x):
    """(dI/da, dI/db) in the broadcast shape of a, b and x (0 at x == 0 and x == 1): the
    series of the smaller tail, or of the other where that one would need more than
    `_BETA_SERIES_MAX` terms and the other fewer (to about 2e-9 there: the larger tail's
    derivative cancels a little)."""
    av, bv, xv = (_values(v) for v in (a, b, x))
    shape = _np.broadcast_shapes(*(shape_of(v) for v in (a, b, x)))
    dtype = _np.result_type(_float_dtype(a), _float_dtype(b), _float_dtype(x))
    zero = _np.zeros(shape, dtype)
    edge = _np.logical_or(
        _np.logical_or(xv <= 0, xv >= 1), _np.logical_not(_np.isfinite(av + bv + xv))
    )
    inside = _np.logical_not(edge)
    with _np.errstate(divide="ignore", invalid="ignore"):
        below = xv < (av + 1.0) / (av + bv + 2.0)
    p, q, y = _np.where(below, av, bv), _np.where(below, bv, av), _np.where(below, xv, 1.0 - xv)
    needed = _terms_needed(p, q, y)
    long = _np.logical_and(inside, needed > _BETA_SERIES_MAX)
    if _some(long):  # the other tail's series where it is shorter
        other_needed = _terms_needed(q, p, 1.0 - y)
        swap = _np.logical_and(long, other_needed < needed)
        below = _np.logical_xor(below, swap)
        needed = _np.where(swap, other_needed, needed)
    direct = bool_mask(_np.logical_and(inside, below), shape)
    other = bool_mask(_np.logical_and(inside, _np.logical_not(below)), shape)
    da, db = zero, zero
    if _some(direct):
        p, q, y = (fnp.where(direct, v, s) for v, s in ((a, 1.0), (b, 1.0), (x, 0.25)))
        dp, dq = _beta_series_d(p, q, y, _series_terms(needed, direct), needed)
        da, db = fnp.where(direct, dp, da), fnp.where(direct, dq, db)
    if _some(other):  # I = 1 - J(b, a, 1 - x)
        p, q = fnp.where(other, b, 1.0), fnp.where(other, a, 1.0)
        y = fnp.where(other, 1.0 - x, 0.25)
        dp, dq = _beta_series_d(p, q, y, _series_terms(needed, other), needed)
        da, db = fnp.where(other, -dq, da), fnp.where(other, -dp, db)
    return da, db


def _betainc_dx(a, b, x):
    """x**(a-1) (1-x)**(b-1) / B(a, b) (xlogy's 0 log 0 = 0 at the ends); where a and b are
    both from `_STIRLING_A` on, near the peak, in Stirling's form
    (`_beta_in_stirlings_form`)."""
    return fnp.exp(_betainc_log_density(a, b, x))


def _betainc_log_density(a, b, x):
    """log(x**(a-1) (1-x)**(b-1) / B(a, b)), where a and b are both from `_STIRLING_A` on,
    near the peak, in Stirling's form (`_beta_in_stirlings_form`)."""
    out = xlogy(a - 1.0, x) + xlog1py(b - 1.0, fnp.negative(x)) - betaln(a, b)
    return _beta_in_stirlings_form(out, a, b, x)


def _beta_in_stirlings_form(out, a, b, x, shift=0.0):
    """`out`, the log of the beta density minus `shift`, and where a and b are both from
    `_STIRLING_A` on and x is within `_NEAR_THE_PEAK` of the mean p = a / (a + b) (relative
    to p and to 1 - p), the same in Stirling's form (`_betainc_log_density_large`, in out's
    dtype). Also for `fgrad.scipy.stats.beta`'s densities."""
    av, bv = _values(a), _values(b)
    large = _np.logical_and(
        _np.logical_and(_np.greater_equal(av, _STIRLING_A), _np.greater_equal(bv, _STIRLING_A)),
        _np.logical_and(_np.less(av, math.inf), _np.less(bv, math.inf)),
    )
    if not _some(large):
        return out
    with _np.errstate(all="ignore"):  # (rows outside the region: any value)
        p = av / (av + bv)
        gap = _np.abs(_values(x) - p)
        near = _np.logical_and(
            _np.less_equal(gap, _NEAR_THE_PEAK * p), _np.less_equal(gap, _NEAR_THE_PEAK * (1 - p))
        )
    large = bool_mask(_np.logical_and(large, near), shape_of(out))
    # (the others at a = b = `_STIRLING_A`, x = 1/2: no nan to mask)
    a_l, b_l = fnp.where(large, a, _STIRLING_A), fnp.where(large, b, _STIRLING_A)
    in_large = _betainc_log_density_large(a_l, b_l, fnp.where(large, x, 0.5)) - shift
    return fnp.where(large, fnp.astype(in_large, dtype_of(out)), out)


def _betainc_log_density_large(a, b, x):
    """log(x**(a-1) (1-x)**(b-1) / B(a, b)) with n = a + b, p = a / n and mu, nu = (x - p) /
    p, (p - x) / (1 - p): -a (mu - log1p(mu)) - b (nu - log1p(nu)) - log(x) - log1p(-x)
    + log(a b / n) / 2 - log(2 pi) / 2 - c(a) - c(b) + c(n), c = `_stirling_tail` (a mu
    + b nu = 0 cancels the large terms of (a-1) log x + (b-1) log(1-x) - betaln(a, b), which
    kept (a+b) eps absolutely: 1.3e-2 relative at a = b = 1e12)."""
    n = a + b
    p = a / n
    mu, nu = (x - p) / p, (p - x) * n / b
    exponent = -a * _mu_minus_log1p(mu) - b * _mu_minus_log1p(nu) - fnp.log(x) - fnp.log1p(-x)
    tails = _stirling_tail(a) + _stirling_tail(b) - _stirling_tail(n)
    return exponent + 0.5 * fnp.log(a * b / n) - 0.5 * math.log(2 * math.pi) - tails


def _betainc_partials(wanted, a, b, x):
    da = db = None
    if wanted[0] or wanted[1]:
        da, db = _betainc_dab(a, b, x)
    return da, db, (_betainc_dx(a, b, x) if wanted[2] else None)


def _betainc_vjp(wanted, ans, a, b, x):
    likes = [meta(v) for v in (a, b, x)]
    partials = _betainc_partials(wanted, a, b, x)

    def bprop(ct):
        return tuple(
            None if d is None or not w else unbroadcast(ct * d, like)
            for d, w, like in zip(partials, wanted, likes)
        )

    return bprop


def _betainc_jvp(tangents, ans, a, b, x):
    partials = _betainc_partials([t is not None for t in tangents], a, b, x)
    out = None
    for t, d in zip(tangents, partials):
        if t is not None:
            term = t * d
            out = term if out is None else out + term
    return broadcast_like(out, ans)


_betainc_p = Primitive("betainc", _sc.betainc, vjp=_betainc_vjp, jvp=_betainc_jvp)
register_rules(_betainc_p, forward="derived")  # _betainc_partials, in both rules


betainc = _ufunc(
    _betainc_p,
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1, with
    broadcasting; differentiable in all three arguments to every order. d/dx =
    x**(a-1) (1-x)**(b-1) / B(a, b); d/da and d/db have no closed form and are series
    written in fgrad operations (see the section's notes), checked against mpmath (JAX
    differentiates in x only).

    >>> import fgrad
    >>> from fgrad.scipy.special import betainc
    >>> round(float(fgrad.grad(betainc, argnums=2)(2.0, 3.0, 0.5)), 12)  # 12 x (1 - x)**2
    1.5
    """,
)


# The exports: the rows (SciPy's ufuncs), the functions declared above, and `psi`, SciPy's
# alias of `digamma`.
__all__ = exported(globals(), of=_sc)

if not TYPE_CHECKING:  # a name of scipy.special not mirrored yet says so
    __getattr__ = missing_names(__name__, "scipy.special", page=__name__)

# The family's batching rule, for every primitive of this module without one of its own
# (registered in its block): all the others are elementwise, as SciPy's ufuncs are (erf, gamma,
# xlogy, betainc, ...; the functions of x with an order have `_order_batch_rule`).
register_elementwise(globals())


# scipy.special's own functions applied to a traced value are sent here (its ufuncs reach
# `__array_ufunc__`; logsumexp, softmax and log_softmax are plain functions and are not).
_box.dispatch_to(
    {
        getattr(_sc, name): globals()[name]
        for name in __all__
        if isinstance(getattr(_sc, name, None), _np.ufunc)
    }
)
# scipy.special.zeta is a function calling one of two private ufuncs; they are sent here too
_box.dispatch_to(
    {
        ufunc: fn
        for ufunc, fn in (
            (getattr(_sc._ufuncs, "_riemann_zeta", None), _riemann_zeta_p),
            (getattr(_sc._ufuncs, "_zeta", None), _hurwitz_zeta_p),
        )
        if isinstance(ufunc, _np.ufunc)
    }
)
