"""NumPy's mathematical functions that split a float into parts or step between floats, and
`i0`: `frexp`, `modf`, `divmod`, `nextafter`, `spacing`, `i0`, with `logical_xor` and the
constant `euler_gamma`.

On plain arrays each is NumPy's own function. On traced values each differentiable function
is a composition of fgrad.numpy operations, so each has every rule (reverse, forward, vmap,
Taylor, sparsity, jit, Dask) with none of its own:

- `frexp(x)` is (x * 2**-e, e) with the integer exponent e read from NumPy's frexp: the
  mantissa has slope 2**-e, the exponent none.
- `modf(x)` is (x - trunc(x), trunc(x)): the fractional part has slope 1, the integral part
  none (both are NumPy's values, signed zeros included).
- `divmod(x1, x2)` is (floor_divide(x1, x2), remainder(x1, x2)): the quotient has no
  derivative, the remainder those of `remainder` (1 in x1, -floor(x1 / x2) in x2).
- `nextafter(x1, x2)` is x1 plus the constant step to the next float: slope 1 in x1, as the
  real function it rounds (x1 plus a step that is constant inside each binade) has; none in
  x2, of which it is a step function. `spacing` is a step function of x: no derivative.
- `i0(x)` is NumPy's own algorithm (Chebyshev series on [0, 8] and beyond, from Cephes)
  written in fgrad operations: its value is NumPy's bit for bit, and its derivative is the
  derivative of that approximation, which agrees with I_1(x) to 7e-15 relative (measured
  on [0.05, 30]).

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`, `fgrad.numpy.ufuncs`.
"""

import importlib as _importlib
from typing import Any

import numpy as _np

from ..core import dtype_of
from ._mirror import exported, mirror
from ._values import ufunc_mirror, with_example
from .elementwise import (
    add,
    exp,
    greater,
    isfinite,
    isinf,
    less,
    less_equal,
    multiply,
    negative,
    register_elementwise,
    sqrt,
    subtract,
    trunc,
    where,
)
from .shaping import asarray, astype, describe, held_number, nondiff_function, numpy_applies
from .ufuncs import floor_divide, ldexp, remainder, signbit

euler_gamma = _np.euler_gamma

logical_xor = with_example(
    nondiff_function(_np.logical_xor),
    """    >>> import fgrad.numpy as fnp
    >>> fnp.logical_xor([True, True, False], [True, False, False])
    array([False,  True, False])""",
)
spacing = with_example(
    nondiff_function(_np.spacing),
    """    >>> import fgrad.numpy as fnp
    >>> float(fnp.spacing(1.0)) == 2.0**-52
    True""",
)
register_elementwise({"logical_xor": logical_xor, "spacing": spacing})


def _frexp_exponent(x):
    return _np.frexp(x)[1]


# the integer exponent of frexp; NumPy's nextafter and x1's value, as constants
_exponent = nondiff_function(_frexp_exponent, "frexp_exponent")
_nextafter = nondiff_function(_np.nextafter)
_value_of = nondiff_function(_np.positive, "nextafter_base")
register_elementwise({"_exponent": _exponent, "_nextafter": _nextafter, "_value_of": _value_of})


def _real_float(x: Any, name: str, arg: str = "x") -> Any:
    x = asarray(x)
    kind = dtype_of(x).kind
    if kind == "c":
        raise TypeError(
            f"{name}: argument {arg} is complex ({describe(x)}); NumPy's {name} takes real "
            f"numbers only. Apply it to fnp.real({arg}) and fnp.imag({arg}) separately"
        )
    if kind not in "f":
        x = astype(x, _np.result_type(dtype_of(x), _np.float16))  # NumPy's float of an int
    return x


def _frexp(x: Any) -> tuple[Any, Any]:
    """NumPy's `frexp`: (mantissa, exponent) with x = mantissa * 2**exponent and
    0.5 <= |mantissa| < 1. The mantissa is differentiable (slope 2**-exponent); the exponent
    is an integer constant.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fnp.frexp(12.0)
    (np.float64(0.75), np.int32(4))
    >>> float(fgrad.grad(lambda x: fnp.frexp(x)[0])(12.0))
    0.0625
    """
    x = _real_float(x, "frexp")
    e = _exponent(x)
    return ldexp(x, negative(e)), e


def _modf(x: Any) -> tuple[Any, Any]:
    """NumPy's `modf`: (fractional part, integral part), both with the sign of x. The
    fractional part has slope 1; the integral part is a constant.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fnp.modf(-2.5)
    (np.float64(-0.5), np.float64(-2.0))
    >>> float(fgrad.grad(lambda x: fnp.modf(x)[0] * 3.0)(-2.5))
    3.0
    """
    x = _real_float(x, "modf")
    whole = trunc(x)
    # -(|x| - trunc(|x|)) where x has its sign bit set gives NumPy's -0.0 at -0.0 and at
    # negative integers (x - trunc(x) would give +0.0); the fraction is computed on finite
    # values (NumPy's is a zero of x's sign at +-inf, and inf - inf would warn)
    negative_x = signbit(x)
    infinite = isinf(x)
    finite_x = where(infinite, 0.0, x)
    minus_x = negative(finite_x)
    frac = where(negative_x, negative(subtract(minus_x, trunc(minus_x))), subtract(finite_x, whole))
    zero = astype(where(negative_x, -0.0, 0.0), dtype_of(x))
    return where(infinite, zero, frac), whole


def _divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    """NumPy's `divmod`: (floor_divide(x1, x2), remainder(x1, x2)). The quotient is a
    constant; the remainder is differentiable as `remainder` is (1 in x1, -floor(x1/x2) in
    x2).

    >>> import fgrad, fgrad.numpy as fnp
    >>> fnp.divmod(7.5, 2.0)
    (np.float64(3.0), np.float64(1.5))
    >>> fgrad.grad(lambda a, b: fnp.divmod(a, b)[1], argnums=(0, 1))(7.5, 2.0)
    (np.float64(1.0), np.float64(-3.0))
    """
    return floor_divide(x1, x2), remainder(x1, x2)


def _nextafter_traced(x1: Any, x2: Any) -> Any:
    """NumPy's `nextafter`: the next float after x1 towards x2. Slope 1 in x1 (the step to
    the next float is constant inside a binade), none in x2 (the result is a step function of
    it).

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fnp.nextafter(1.0, 2.0) - 1.0) == float(fnp.spacing(1.0))
    True
    >>> float(fgrad.grad(fnp.nextafter)(1.0, 2.0))
    1.0
    """
    _real_float(x1, "nextafter", "x1")  # (refuses complex numbers)
    _real_float(x2, "nextafter", "x2")
    # NumPy's loop for the two: a Python number (traced under `jit`, held as given) is weak
    dtype = _np.nextafter.resolve_dtypes((_operand_type(x1), _operand_type(x2), None))[-1]
    x1, x2 = astype(x1, dtype), astype(x2, dtype)
    # NumPy's value minus (x1's constant value - x1): the difference is +0.0, with slope -1 in
    # x1, and subtracting +0.0 keeps every float, -0.0 too (adding a step to x1 did not: 0.0 +
    # -0.0 is +0.0 where NumPy's nextafter(0.0, -0.0) is -0.0); at inf or nan, NumPy's value
    target = _nextafter(x1, x2)
    finite = isfinite(x1)
    x1_finite = where(finite, x1, 0.0)
    return where(finite, subtract(target, subtract(_value_of(x1_finite), x1_finite)), target)


def _operand_type(x: Any) -> Any:
    """What a ufunc's `resolve_dtypes` takes for an operand: the type of a Python number
    (weak, NEP 50), else the dtype."""
    number = held_number(x)
    return type(number) if number is not None and type(number) is not bool else dtype_of(x)


frexp = ufunc_mirror(_frexp, _np.frexp)
modf = ufunc_mirror(_modf, _np.modf)
divmod = ufunc_mirror(_divmod, _np.divmod)
nextafter = ufunc_mirror(_nextafter_traced, _np.nextafter)


# --- i0 -------------------------------------------------------------------------------------------
# NumPy's coefficients (Cephes' i0.c): Chebyshev series of exp(-x) I0(x) in x/2 - 2 on [0, 8],
# and of exp(-x) sqrt(x) I0(x) in 32/x - 2 beyond.
def _numpy_i0_coefficients() -> tuple[Any, Any]:
    """NumPy's own tables (private: where NumPy 2 keeps them, or NumPy 1), so that fgrad's i0
    computes what NumPy's computes, bit for bit."""
    for location in ("numpy.lib._function_base_impl", "numpy.lib.function_base"):
        try:
            module = _importlib.import_module(location)
        except ImportError:
            continue
        if hasattr(module, "_i0A"):
            return module._i0A, module._i0B
    raise ImportError("fgrad.numpy.i0: NumPy's i0 coefficients were not found in this NumPy")


_I0A, _I0B = _numpy_i0_coefficients()


def _chbevl(x: Any, vals: Any) -> Any:
    """Clenshaw's recurrence, in NumPy's order of operations (so the value is NumPy's)."""
    b0, b1, b2 = vals[0], 0.0, 0.0
    for v in vals[1:]:
        b2 = b1
        b1 = b0
        b0 = add(subtract(multiply(x, b1), b2), v)
    return multiply(0.5, subtract(b0, b2))


@mirror("function")
def i0(x: Any) -> Any:
    """NumPy's `i0`, the modified Bessel function of the first kind of order 0, by NumPy's own
    series, differentiable to every order (its slope is I_1 to 7e-15).

    >>> import fgrad, fgrad.numpy as fnp
    >>> float(fnp.i0(1.0))
    1.2660658777520082
    >>> round(float(fgrad.grad(fnp.i0)(1.0)), 12)  # I_1(1)
    0.565159103992
    """
    if numpy_applies(x):
        return _np.i0(x)
    x = asarray(x)
    if dtype_of(x).kind not in "fc":
        # np.i0 is no ufunc: it computes bool and integers in float64, not in result_type's
        # smallest float (float16 for bool/int8), which _real_float gives a ufunc's input
        x = astype(x, _np.float64)
    x = _real_float(x, "i0")
    # |x| without a kink in the chain at 0 (I_0''(0) = 1/2 needs it): where(x < 0, -x, x) has
    # slope +1 there, where(x > 0, x, -x) slope -1. i0 is even, so its odd derivatives vanish
    # at 0, but the series' own slope at 0 is not exactly 0 (-2.2e-16): the mean of the two
    # cancels it exactly, and keeps the value (v + v) / 2 = v and the even derivatives
    rising = where(less(x, 0), negative(x), x)
    falling = where(greater(x, 0), x, negative(x))
    small = less_equal(rising, 8.0)
    # each branch on values where it is finite, so that neither value nor derivative of the
    # branch not taken is nan (where's derivative multiplies it by 0)
    one = _mean(_i0_to_8(where(small, rising, 0.0)), _i0_to_8(where(small, falling, 0.0)))
    two = _mean(_i0_beyond_8(where(small, 9.0, rising)), _i0_beyond_8(where(small, 9.0, falling)))
    # NumPy computes in float64 (its coefficients are) and stores into an array of x's dtype
    return astype(where(small, one, two), dtype_of(x))


def _mean(u: Any, v: Any) -> Any:
    return multiply(add(u, v), 0.5)


def _i0_to_8(a: Any) -> Any:
    """NumPy's series of i0 at a = |x| in [0, 8], in float64."""
    return multiply(exp(a), _chbevl(subtract(a / 2.0, 2), _I0A))


def _i0_beyond_8(a: Any) -> Any:
    """NumPy's series of i0 at a = |x| > 8, in float64."""
    return multiply(exp(a), _chbevl(subtract(32.0 / a, 2.0), _I0B)) / sqrt(a)


__all__ = exported(globals())
