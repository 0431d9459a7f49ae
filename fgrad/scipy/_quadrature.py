"""SciPy's integrators of sampled data, its fixed-order Gaussian quadrature and its adaptive
quadrature, differentiable: `trapezoid`, `cumulative_trapezoid`, `simpson`, `fixed_quad` and
`quad` (exported by `fgrad.scipy.integrate`).

Each is SciPy's own function on plain values (its result bit for bit; SciPy's `trapezoid` is
not NumPy's, whose dtype it does not follow). On traced values (or
an array of another library) it is SciPy's computation written in `fgrad.numpy`, step for
step in SciPy's order, so the value is SciPy's and it is differentiable in the samples, the
coordinates, the spacing, and (`fixed_quad`) the limits and whatever the integrand reads.
SciPy's guards against a division by a zero step (`true_divide(..., where=den != 0)`, 0
there) are `where`s whose other side divides by 1, so that no derivative is nan where the
value is not.

`quad` is SciPy's QUADPACK on plain values, one recorded operation under `jit` and one
integral per row under `vmap`; its derivative is Leibniz's rule, d/dtheta of the integral of
f(x, theta) from a to b = f(b) b' - f(a) a' + the integral of df/dtheta, each integral of a
partial derivative computed by `quad` again (so every order works, to the tolerances).

Imports: `fgrad.core`, `fgrad.numpy`, `fgrad.api` (`grad`), `fgrad.custom` (`custom_vjp`),
`fgrad.primitive` and `fgrad.batching` (the integral as one operation, row by row under
`vmap`), `fgrad.tree_util`, `fgrad.scipy._closures`, `fgrad.scipy._failure` (`on_failure`),
and `scipy.integrate` for values.
"""

from __future__ import annotations

import functools
import numbers as _numbers
from typing import TYPE_CHECKING

import numpy as _np
import scipy.integrate as _si

from .. import numpy as fnp
from ..api import grad
from ..core import Box, constant_of, dtype_of, holds_box, innermost, is_foreign_array, primal
from ..custom import custom_vjp
from ..numpy.shaping import describe, is_traced, numpy_applies, read_constant
from ..primitive import nondiff, register_rules
from ..tree_util import tree_flatten, tree_unflatten
from ._closures import check_closure, check_reads
from ._failure import check_on_failure, report_failure

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..typing import Array, ArrayLike

__all__ = ["cumulative_trapezoid", "fixed_quad", "quad", "simpson", "trapezoid"]


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: Any = 1.0, axis: int = -1) -> Array:
    """SciPy's `trapezoid`: the composite trapezoidal rule along `axis`, summed in y's
    floating dtype (NumPy's promotes with x's: a float32 y with float64 x gives float64 there,
    float32 here).

    >>> import numpy as np, fgrad, fgrad.scipy.integrate as fsi
    >>> y, x = np.array([0.0, 1.0, 4.0]), np.array([0.0, 1.0, 3.0])
    >>> float(fsi.trapezoid(y, x=x))
    5.5
    >>> fgrad.grad(lambda x: fsi.trapezoid(y, x=x))(x)
    array([-0.5, -2. ,  2.5])
    """
    if numpy_applies(y, x, dx):
        return _si.trapezoid(y, x, dx=dx, axis=axis)
    y = fnp.asarray(y)
    kind = fnp.result_type(y)
    result_dtype = kind if _np.issubdtype(kind, _np.inexact) else _np.dtype(_np.float64)
    nd = fnp.ndim(y)
    if x is None:
        d = dx
    else:
        x = fnp.asarray(x)
        if fnp.ndim(x) == 1:
            shape = [1] * nd
            shape[axis] = -1
            d = fnp.reshape(x[1:] - x[:-1], tuple(shape))
        else:  # broadcast to y's shape (SciPy's)
            x = fnp.broadcast_to(x, fnp.shape(y))
            d = x[_along(slice(1, None), axis, nd)] - x[_along(slice(None, -1), axis, nd)]
    halves = d * (y[_along(slice(1, None), axis, nd)] + y[_along(slice(None, -1), axis, nd)]) / 2.0
    return fnp.sum(halves, axis=axis, dtype=result_dtype)


def _along(index: Any, axis: int, nd: int) -> tuple:
    """An index of `index` along `axis` of an array with `nd` dimensions (SciPy's tupleset)."""
    out: list = [slice(None)] * nd
    out[axis] = index
    return tuple(out)


def _checked_steps(y: Any, x: Any, axis: int) -> Any:
    """The steps of the coordinates `x` along `axis`, laid along it, checked as SciPy checks
    them (1-D, or with y's dimensions; one more than the steps per sample)."""
    nd = fnp.ndim(y)
    if fnp.ndim(x) == 1:
        shape = [1] * nd
        shape[axis] = -1
        d = fnp.reshape(fnp.diff(x), tuple(shape))
    elif fnp.ndim(x) != nd:
        raise ValueError(
            f"If given, shape of x must be 1-D or the same as y (x: {describe(x)}, y: "
            f"{describe(y)})."
        )
    else:
        d = fnp.diff(x, axis=axis)
    if fnp.shape(d)[axis] != fnp.shape(y)[axis] - 1:
        raise ValueError(
            f"If given, length of x along axis must be the same as y (x: {describe(x)}, y: "
            f"{describe(y)}, axis {axis})."
        )
    return d


def cumulative_trapezoid(
    y: ArrayLike,
    x: ArrayLike | None = None,
    dx: Any = 1.0,
    axis: int = -1,
    initial: Any = None,
) -> Array:
    """SciPy's `cumulative_trapezoid`: the running trapezoidal integral along `axis` (one
    value fewer than `y`, or as many with `initial=0` in front).

    >>> import numpy as np, fgrad, fgrad.scipy.integrate as fsi
    >>> fsi.cumulative_trapezoid(np.array([0.0, 1.0, 4.0]), dx=0.5)
    array([0.25, 1.5 ])
    >>> fgrad.grad(lambda y: fsi.cumulative_trapezoid(y)[-1])(np.array([0.0, 1.0, 4.0]))
    array([0.5, 1. , 0.5])
    """
    # (a `jit` argument is read: its value, guarded)
    initial = read_constant(initial, "cumulative_trapezoid", "initial", "it is None or 0")
    if numpy_applies(y, x, dx, initial):
        return _si.cumulative_trapezoid(y, x, dx=dx, axis=axis, initial=initial)
    y = fnp.asarray(y)
    if fnp.shape(y)[axis] == 0:
        raise ValueError(f"At least one point is required along `axis` (y: {describe(y)}).")
    d = dx if x is None else _checked_steps(y, fnp.asarray(x), axis)
    nd = fnp.ndim(y)
    halves = d * (y[_along(slice(1, None), axis, nd)] + y[_along(slice(None, -1), axis, nd)]) / 2.0
    res = fnp.cumsum(halves, axis=axis)
    if initial is not None:
        if is_traced(initial) or not _np.isscalar(initial):
            raise ValueError("`initial` parameter should be a scalar.")
        if initial != 0:
            raise ValueError("`initial` must be `None` or `0`.")
        shape = list(fnp.shape(res))
        shape[axis] = 1
        res = fnp.concatenate([fnp.zeros(tuple(shape), dtype=fnp.result_type(res)), res], axis=axis)
    return res


def _safe_divide(num: Any, den: Any) -> Any:
    """num / den where den != 0, else 0 (SciPy's true_divide(..., where=den != 0)); the
    other side divides by 1, so its derivative is 0, not nan."""
    nonzero = den != 0
    return fnp.where(nonzero, num / fnp.where(nonzero, den, 1.0), 0.0)


def _in_place(result: Any, value: Any) -> Any:
    """`value` as SciPy's `result op= ...` leaves it: an array keeps its dtype (the float64
    correction of a float32 result is rounded to float32), a number (the sum of a vector) is
    bound to the promoted value."""
    if fnp.ndim(result) and fnp.result_type(value) != fnp.result_type(result):
        return fnp.astype(value, fnp.result_type(result))
    return value


def _basic_simpson(y, start, stop, x, dx, axis):
    nd = fnp.ndim(y)
    slice0 = _along(slice(start, stop, 2), axis, nd)
    slice1 = _along(slice(start + 1, stop + 1, 2), axis, nd)
    slice2 = _along(slice(start + 2, stop + 2, 2), axis, nd)
    if x is None:  # evenly spaced
        result = fnp.sum(y[slice0] + 4.0 * y[slice1] + y[slice2], axis=axis)
        return _in_place(result, result * (dx / 3.0))
    h = fnp.diff(x, axis=axis)
    h0 = fnp.astype(h[slice0], _np.float64)
    h1 = fnp.astype(h[slice1], _np.float64)
    hsum = h0 + h1
    hprod = h0 * h1
    h0divh1 = _safe_divide(h0, h1)
    tmp = (
        hsum
        / 6.0
        * (
            y[slice0] * (2.0 - _safe_divide(1.0, h0divh1))
            + y[slice1] * (hsum * _safe_divide(hsum, hprod))
            + y[slice2] * (2.0 - h0divh1)
        )
    )
    return fnp.sum(tmp, axis=axis)


def simpson(y: ArrayLike, x: ArrayLike | None = None, *, dx: Any = 1.0, axis: int = -1) -> Array:
    """SciPy's `simpson`: the composite Simpson's rule along `axis`, with Cartwright's
    correction for the last interval of an even number of samples, as SciPy's.

    >>> import numpy as np, fgrad, fgrad.scipy.integrate as fsi
    >>> x = np.linspace(0.0, 2.0, 5)
    >>> float(fsi.simpson(x**2, x=x))  # exact for a parabola
    2.6666666666666665
    >>> fgrad.grad(lambda y: fsi.simpson(y, x=x))(x**2)
    array([0.16666667, 0.66666667, 0.33333333, 0.66666667, 0.16666667])
    """
    if numpy_applies(y, x, dx):
        return _si.simpson(y, x=x, dx=dx, axis=axis)
    y = fnp.asarray(y)
    nd = fnp.ndim(y)
    n = fnp.shape(y)[axis]
    last_dx = dx
    if x is not None:
        x = fnp.asarray(x)
        if fnp.ndim(x) == 1:
            shape = [1] * nd
            shape[axis] = fnp.shape(x)[0]
            x = fnp.reshape(x, tuple(shape))
        elif fnp.ndim(x) != nd:
            raise ValueError(
                f"If given, shape of x must be 1-D or the same as y (x: {describe(x)}, y: "
                f"{describe(y)})."
            )
        if fnp.shape(x)[axis] != n:
            raise ValueError(
                f"If given, length of x along axis must be the same as y (x: {describe(x)}, "
                f"y: {describe(y)}, axis {axis})."
            )
    if n % 2:
        return _basic_simpson(y, 0, n - 2, x, dx, axis)
    last, second, third = (_along(k, axis, nd) for k in (-1, -2, -3))
    if n == 2:  # two samples: the trapezoid
        if x is not None:
            last_dx = x[last] - x[second]
        return 0.0 + 0.5 * last_dx * (y[last] + y[second])
    result = _basic_simpson(y, 0, n - 3, x, dx, axis)
    if x is None:
        h0 = h1 = fnp.astype(fnp.asarray(dx), _np.float64)
    else:
        steps = fnp.astype(fnp.diff(x, axis=axis), _np.float64)
        h0 = fnp.squeeze(steps[_along(slice(-2, -1), axis, nd)], axis=axis)
        h1 = fnp.squeeze(steps[_along(slice(-1, None), axis, nd)], axis=axis)
    # Cartwright's correction of the last interval (SciPy's alpha, beta and eta)
    alpha = _safe_divide(2 * h1**2 + 3 * h0 * h1, 6 * (h1 + h0))
    beta = _safe_divide(h1**2 + 3.0 * h0 * h1, 6 * h0)
    eta = _safe_divide(1 * h1**3, 6 * h0 * (h0 + h1))
    result = _in_place(result, result + (alpha * y[last] + beta * y[second] - eta * y[third]))
    return result + 0.0


def fixed_quad(
    func: Callable[..., Any], a: Any, b: Any, args: tuple = (), n: int = 5
) -> tuple[Any, None]:
    """SciPy's `fixed_quad`: Gauss-Legendre quadrature of order `n` of `func` (which takes a
    vector of points) over [a, b]; `(value, None)`. Differentiable in `a`, `b`, `args` and
    whatever `func` reads.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp, fgrad.scipy.integrate as fsi
    >>> area = lambda b: fsi.fixed_quad(fnp.sin, 0.0, b)[0]
    >>> round(float(fgrad.grad(area)(np.pi / 2)), 6)  # sin(b)
    1.0
    """
    x, w = _si._quadrature._cached_roots_legendre(n)
    x = _np.real(x)
    # SciPy's check reads the limits (under jit a guard); a lazy one (Dask) is not read, and
    # an infinite one gives an inf or nan value
    if not any(is_foreign_array(innermost(v)) for v in (a, b)) and bool(
        fnp.any(fnp.isinf(a)) or fnp.any(fnp.isinf(b))
    ):
        raise ValueError("Gaussian quadrature is only available for finite limits.")
    y = (b - a) * (x + 1) / 2.0 + a
    return (b - a) / 2.0 * fnp.sum(w * func(y, *args), axis=-1), None


# --- quad: SciPy's adaptive quadrature, differentiated by Leibniz's rule ------------------------

# SciPy's options that take plain numbers and pass through
_QUAD_OPTIONS = ("epsabs", "epsrel", "limit", "points", "maxp1", "limlst")


def _quad_impl(a, b, *args, func, tree, opts, policy):
    """SciPy's quad on plain values: [value, its error estimate], float64. `policy` is
    (on_failure, checked): a checked integral (one a derivative uses) that QUADPACK reports
    unconverged (ier > 0 but 2) raises RuntimeError, or with on_failure "warn" warns; an unchecked
    one warns as SciPy does (IntegrationWarning)."""
    plain = tree_unflatten(tree, [primal(v) for v in args])
    integrand = lambda x: float(func(x, *plain))  # noqa: E731
    on_failure, checked = policy
    if not checked:
        value, error = _si.quad(integrand, float(a), float(b), **dict(opts))
        return _np.array([value, error])
    value, error, *info = _si.quad(integrand, float(a), float(b), full_output=1, **dict(opts))
    # SciPy adds a message where ier > 0 (it returns no ier). Roundoff (ier 2: the tolerance
    # is below the rounding of the integrand's values, a float32 one's or a high
    # derivative's) is not a failure: the integral is as accurate as those values
    if len(info) > 1 and not str(info[1]).startswith(_ROUNDOFF):
        _unconverged(info[1], on_failure, _is_partial(func))
    return _np.array([value, error])


# the start of QUADPACK's message for ier 2, as SciPy words it
_ROUNDOFF = "The occurrence of roundoff error is detected"


def _unconverged(message, on_failure, derived):
    text = (
        f"quad: the integral {'of a derivative ' if derived else ''}did not converge "
        f"({' '.join(str(message).split()).split('.')[0]}): its derivative would be wrong. Raise "
        "limit, split the interval at its difficult points (points=...), or pass "
        "on_failure='warn' to get the result with a warning"
    )
    report_failure(text, on_failure, stacklevel=2)


_quad_p = nondiff(_quad_impl, name="quad")
register_rules(
    _quad_p,
    row_by_row=(
        "QUADPACK subdivides the interval by the error of one integrand: each row's integral is "
        "its own adaptive run"
    ),
)


def _finite(v):
    """v where it is finite, else 0 (so that f there, which is not used, stays finite)."""
    inf = fnp.isinf(v)
    return fnp.where(inf, 0.0, v), inf


def _wanted(values) -> tuple:
    """Which of the limits and args may be differentiated: traced floating values (an
    integer argument, an exponent or an index, has no derivative; a plain one needs none)."""
    return tuple(holds_box([v]) and dtype_of(v).kind == "f" for v in values)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _integral(func, tree, opts, wanted, policy, a, b, *args):
    return _quad_p(a, b, *args, func=func, tree=tree, opts=opts, policy=policy)


def _integral_fwd(func, tree, opts, wanted, policy, a, b, *args):
    # the value a derivative is taken at: an unconverged integral raises (or warns) where a
    # derivative integrates the integrand's (an argument of it is differentiated); the
    # derivative in a limit is the integrand there, exact whatever the integral's accuracy
    # (through _integral, so that the levels outside this one differentiate it in turn)
    checked = (policy[0], policy[1] or any(wanted[2:]))
    return _integral(func, tree, opts, wanted, checked, a, b, *args), (a, b, args)


def _integral_bwd(func, tree, opts, wanted, policy, res, ct):
    a, b, args = res
    policy = (policy[0], True)  # (the integrals of the derivative are checked too)
    ct = ct[0]  # (the error estimate has no derivative)
    f = lambda x: func(x, *tree_unflatten(tree, list(args)))  # noqa: E731
    cts: list = []
    for limit, sign, want in ((a, -1.0, wanted[0]), (b, 1.0, wanted[1])):
        if not want:
            cts.append(None)
            continue
        at, inf = _finite(limit)  # moving a limit: the integrand there
        cts.append(fnp.where(inf, 0.0, sign * ct * f(at)))
    inner = _wanted((a, b, *args))  # (for the derivatives of these integrals in turn)
    for k in range(len(args)):
        if not wanted[2 + k]:
            cts.append(None)
            continue
        # d/d args[k]: the integral of df/d args[k], elementwise (one quad per element)
        shape = fnp.shape(args[k])

        parts = [
            _integral(_Partial(func, tree, k, j), tree, opts, inner, policy, a, b, *args)[0]
            for j in range(_np.prod(shape, dtype=int))
        ]
        cts.append(ct * fnp.reshape(fnp.stack(parts) if parts else fnp.zeros(0), shape))
    return tuple(cts)


_integral.defvjp(_integral_fwd, _integral_bwd)


class _Partial:
    """The entry j of d func(x, *args) / d (leaf k of args): an integrand as quad calls it,
    with args as given (pytrees), its leaves taken apart here."""

    def __init__(self, func, tree, k, j):
        self.func, self.tree, self.k, self.j = func, tree, k, j

    def __call__(self, x, *args):
        leaves = tree_flatten(args)[0]
        k = self.k

        def of_leaf(v):
            return self.func(x, *tree_unflatten(self.tree, [*leaves[:k], v, *leaves[k + 1 :]]))

        return fnp.ravel(grad(of_leaf)(leaves[k]))[self.j]


def _first_point(a, b, points=None):
    """A point of [a, b] QUADPACK evaluates the integrand at: the midpoint, or with `points`
    (breakpoints, which QUADPACK never evaluates at: where users put a singularity) the
    midpoint of the first piece, or (an infinite limit, mapped from (0, 1] by
    x = a + (1 - t) / t) the image of t = 1/2, one from the finite limit. (Of the first row
    under vmap, read without reading the rows apart: it only chooses where to look.)"""
    lo, hi = (float(_np.ravel(_np.asarray(innermost(v)))[0]) for v in (a, b))
    if _np.isfinite(lo) and _np.isfinite(hi):
        if points is not None:
            inside = [
                float(p)
                for p in _np.ravel(_np.asarray(innermost(constant_of(points)), dtype=float))
                if min(lo, hi) < p < max(lo, hi)
            ]
            if inside:
                nearest = min(inside) if lo < hi else max(inside)
                return lo + (nearest - lo) / 2
        return lo + (hi - lo) / 2
    if _np.isfinite(lo) or _np.isfinite(hi):
        return lo + 1.0 if _np.isfinite(lo) else hi - 1.0
    return 1.0


def _is_number(v) -> bool:
    """Whether v is a number or an array, traced or not: another value in args (a mode
    string, a function) is passed to func as it is, as SciPy passes it."""
    inner = innermost(v)
    return isinstance(inner, (_numbers.Number, _np.ndarray, _np.number, _np.bool_))


class _WithOthers:
    """func(x, *args) as a function of x and the numbers and arrays of args alone (a list of
    its leaves): args' other leaves (a mode string, a function) are given as they are."""

    def __init__(self, func, tree, leaves):
        self.func, self.tree = func, tree
        self.others = {k: v for k, v in enumerate(leaves) if not _is_number(v)}
        self.size = len(leaves)

    def __call__(self, x, *numbers):
        given = iter(numbers)
        leaves = [self.others[k] if k in self.others else next(given) for k in range(self.size)]
        return self.func(x, *tree_unflatten(self.tree, leaves))


def _differentiated(v) -> bool:
    """Whether a live level that differentiates (not vmap's, not jit's) holds v."""
    while type(v) is Box:
        if v.level.live and not (v.level.batches or v.level.stages):
            return True
        v = v.value
    return type(v) in (list, tuple) and any(map(_differentiated, v))


def _is_partial(func):
    return isinstance(func, _Partial)


def quad(
    func: Callable[..., Any],
    a: Any,
    b: Any,
    args: Any = (),
    full_output: int = 0,
    epsabs: float = 1.49e-8,
    epsrel: float = 1.49e-8,
    limit: int = 50,
    points: Any = None,
    weight: Any = None,
    wvar: Any = None,
    wopts: Any = None,
    maxp1: int = 50,
    limlst: int = 50,
    complex_func: bool = False,
    *,
    on_failure: str = "raise",
) -> tuple:
    """SciPy's `quad`: the integral of `func(x, *args)` from `a` to `b` and an estimate of its
    error, differentiable in `a`, `b` and `args` (Leibniz's rule: the integrals of the partial
    derivatives are computed by `quad` too, so they are as accurate as its tolerances). With
    plain values it is SciPy's own, every option included; `full_output`, `weight` and
    `complex_func` have no derivative: refused where a limit or an arg is differentiated,
    SciPy's own call on the values otherwise (under `vmap` each row's, under `jit` guarded by
    the values read), and `func` must take what it differentiates in `args` (a closure over a
    traced value is refused: its derivative would be lost). The entries of `args` may be
    pytrees (dicts, tuples) of floats.

    Convergence: when the result is differentiated and QUADPACK reports that the integral (or
    an integral of the derivative) did not converge (`ier` 1, 3, 4 or 5; 2, roundoff, limits
    the accuracy to that of the integrand's values), the call raises
    `RuntimeError`, or with `on_failure="warn"` warns (`RuntimeWarning`) and goes on, as
    `odeint` does; when nothing is differentiated, it is SciPy's, with its
    `IntegrationWarning`.

    Limit: Leibniz's rule needs `func` differentiable in the parameters for almost every x,
    and a jump whose position depends on a parameter is not seen: `where(x < c, 1.0, 0.0)`
    integrated over [0, 1] is c, but its derivative here is 0 (that of the integrand away
    from the jump, without the jump's f+ - f- times the speed of the breakpoint). Nothing
    detects this: make the breakpoint a limit of integration instead (the integral from 0
    to c of 1, or two quads split at c), whose derivative is exact.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp, fgrad.scipy.integrate as fsi
    >>> f = lambda x, k: fnp.exp(-k * x * x)
    >>> float(fsi.quad(f, 0.0, np.inf, args=(1.0,))[0])  # sqrt(pi) / 2
    0.8862269254527579
    >>> round(float(fgrad.grad(lambda k: fsi.quad(f, 0.0, np.inf, args=(k,))[0])(1.0)), 9)
    -0.443113463
    """
    check_on_failure("quad", on_failure)
    if not isinstance(args, tuple):
        args = (args,)
    leaves, tree = tree_flatten(args)
    instead = "Pass it in args instead: quad(func, a, b, args=(value,)) with func(x, value)"
    check_closure(func, "quad", instead)
    for name, v in [("a", a), ("b", b), *((f"args leaf {k}", v) for k, v in enumerate(leaves))]:
        if is_foreign_array(innermost(v)):
            raise TypeError(
                f"quad: its limits and args are numbers SciPy reads; got {describe(v)} for "
                f"{name}: compute it first (x.compute())"
            )
        if _is_number(v) and dtype_of(v).kind == "c":  # (its dtype: no value is read)
            # (SciPy would cast a complex limit to real, dropping its imaginary part silently)
            raise TypeError(
                f"quad: the limits and args must be real, got {describe(v)} for {name}; split "
                "a complex parameter into its real and imaginary parts (complex_func=True is "
                "for a complex integrand of real arguments)"
            )
    # a value read through a callable object's attribute or a bound method's self escapes
    # check_closure: one call, at a point QUADPACK evaluates first, sees every value read
    check_reads(
        lambda: func(
            _first_point(a, b, points), *tree_unflatten(tree, [constant_of(v) for v in leaves])
        ),
        "quad",
        instead,
    )
    # the integral does not depend on the points, which only guide QUADPACK's subdivision:
    # read at their values, with no derivative (a jit's value is guarded, vmap's rows read)
    points = read_constant(constant_of(points), "quad", "points")
    unsupported = [
        f"{name}={value!r}"
        for name, value in (
            ("full_output", full_output),
            ("weight", weight),
            ("complex_func", complex_func),
        )
        if value
    ]
    traced = holds_box([a, b, *leaves])
    if traced and unsupported:
        # SciPy's own call, on values read as a constant is (vmap's rows apart where they
        # differ, each its own call; a jit's guarded, so a replay never reuses another's)
        named = [("a", a), ("b", b), *((f"args leaf {k}", v) for k, v in enumerate(leaves))]
        differentiated = [(name, v) for name, v in named if _differentiated(v)]
        if differentiated:
            name, v = differentiated[0]
            raise TypeError(
                f"quad: {' and '.join(unsupported)} has no derivative, and {name} is "
                f"differentiated ({describe(v)}); call quad with values that are not "
                "differentiated for it (fgrad.stop_gradient), or leave it out"
            )
        a, b, args = primal(a), primal(b), tree_unflatten(tree, [primal(v) for v in leaves])
    if not traced or unsupported:
        return _si.quad(
            func,
            a,
            b,
            args=args,
            full_output=full_output,
            epsabs=epsabs,
            epsrel=epsrel,
            limit=limit,
            points=points,
            weight=weight,
            wvar=wvar,
            wopts=wopts,
            maxp1=maxp1,
            limlst=limlst,
            complex_func=complex_func,
        )
    opts = (
        ("epsabs", epsabs),
        ("epsrel", epsrel),
        ("limit", limit),
        ("maxp1", maxp1),
        ("limlst", limlst),
    ) + (
        (("points", tuple(_np.asarray(points, dtype=float).ravel())),) if points is not None else ()
    )
    a_, b_ = fnp.asarray(a, dtype=float), fnp.asarray(b, dtype=float)
    if not all(_is_number(v) for v in leaves):  # not arguments of the differentiated integral
        func = _WithOthers(func, tree, leaves)
        leaves = [v for v in leaves if _is_number(v)]
        tree = tree_flatten(tuple(leaves))[1]
    policy = (on_failure, False)
    out = _integral(func, tree, opts, _wanted((a, b, *leaves)), policy, a_, b_, *leaves)
    return out[0], constant_of(out[1])  # (the estimate: not read, so vmap and jit keep it)
