"""Statistics over axes: `var`, `std`, `ptp`, `average`, `cumsum`, `cumprod`, `median`,
`percentile`, `quantile`, NumPy 2's `cumulative_sum`/`cumulative_prod`, the nan-ignoring
reductions, `bincount` and the weighted counts of `histogram` (both differentiable in their
weights; `histogram` itself is in `fgrad.numpy.histograms`), and
`all`/`any`/`count_nonzero`, `digitize` and the array predicates declared without a
derivative. They take NumPy's keywords (`where=`, `mean=`, `initial=`, ...) and compute in
NumPy's steps, so their values are NumPy's own.

Most are compositions of differentiable fgrad operations (sum, where, max, gathers), so they
need no rules of their own; `cumsum`, `cumprod`, `bincount` and the histogram's counts are
primitives.
Conventions:

- `std` (and `nanstd`) at zero variance returns 0 and a gradient of 0 (JAX gives nan). std is
  a norm of the centred data, so it has its minimum there and 0 is a valid subgradient;
  higher derivatives are 0 there too.
- `median`/`percentile`/`quantile` differentiate through the selected order statistics, as
  JAX does: the gradient of the k-th smallest value goes to the element a stable sort puts at
  rank k, so among equal elements the one that comes first in the array takes the lower rank
  (ties are not split). `q` is differentiable too for the continuous methods.
- The nan-functions give a gradient of exactly 0 at NaN positions, and no NaN reaches the other
  positions' gradients: NaNs are replaced by a neutral value with `where` before any
  arithmetic. An all-NaN slice gives NaN (as NumPy does) with a zero gradient.
- `cumprod`'s derivatives use no division (doubling scans of multiplications), so they are
  exact at zeros and for tiny values to every order.

Imports: `fgrad.core`, `fgrad.batching`, `fgrad.primitive`, `fgrad.numpy.shaping`,
`fgrad.numpy.elementwise`, `fgrad.numpy.reductions`, `fgrad.numpy.arrays`.
"""

from __future__ import annotations

import builtins as _builtins
import operator as _operator
from typing import TYPE_CHECKING

import numpy as _np

from .. import batching as _batching, core as _core
from ..core import Box, constant_of, dtype_of, primal, shape_of
from ..primitive import deflinear, defprimitive, register_rules
from ._mirror import exported, mirror
from .arrays import take_along_axis
from .elementwise import (
    _weights,
    conj,
    equal,
    imag,
    isfinite,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    mask_values,
    may_hold,
    read_any,
    real,
    register_elementwise,
    scalar_if_0d,
    sqrt,
    where,
    where as _where,  # for functions with a `where=` parameter
)
from .reductions import (
    _divided_by_counts,
    _exclusive_cumprod,
    _keepdims,
    _linear_recurrence,
    _to_last,
    _weighted_product,
    max,
    mean,
    min,
    prod,
)
from .shaping import (
    NO_VALUE,
    _axis_entry,
    _kept_shape,
    _normalize_axes,
    asarray,
    astype,
    axis_batch_rule,
    batch_size,
    batch_to_front,
    batched_axis,
    broadcast_to,
    concatenate,
    describe,
    getitem,
    is_traced,
    keeps_single_precision,
    moveaxis,
    ndim,
    nondiff_function,
    numpy_applies,
    ravel,
    reduction_mask,
    refuse_out,
    reshape,
    shape,
    sum,
    transpose,
    variant,
    with_example_ndim,
    zero_with_derivatives_of,
)

if TYPE_CHECKING:
    from ..core import Primitive
    from ..typing import Array, ArrayLike, DTypeLike
    from .shaping import _F


# --- helpers --------------------------------------------------------------------------------------


def _asarray(a):
    """A traced value, or an array of another library (Dask's, lazy), as it is; a list or
    tuple holding either, stacked by fgrad (as NumPy reads an array-like, keeping the
    derivative and the laziness); anything else (a list, a number) as a NumPy array."""
    if type(a) is Box:
        return a
    return _np.asarray(a) if numpy_applies(a) else asarray(a)


def _float_dtype(a):
    """The dtype of a's results: a's own if floating, float64 for ints and bools (NumPy's)."""
    dtype = dtype_of(a)
    return dtype if _np.issubdtype(dtype, _np.inexact) else _np.dtype(_np.float64)


def _as_float(a):
    return a if _np.issubdtype(dtype_of(a), _np.inexact) else astype(a, _np.float64)


def _count(a, axes):
    """The number of elements in each reduction group (a Python int)."""
    s = shape(a)
    return int(_np.prod([s[i] for i in axes], dtype=_np.int64))


def _nan_mask(a):
    """A constant boolean mask of a's NaNs, or None when there are none. For a value batched
    by `vmap`, the rows' masks (batched too), and for a lazy (Dask) one its lazy mask,
    whether or not they hold a NaN (`may_hold`). An integer or boolean array holds none (its
    batched mask would be taken to, and the fill made it float under `vmap` only)."""
    if dtype_of(a).kind not in "fc":
        return None
    m = _np.isnan(mask_values(a))
    return m if may_hold(m) else None


def _ddof(ddof, correction):
    if correction is not NO_VALUE:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def _counts(a, axes, mask, keepdims):
    """NumPy's count of the elements of each reduction group: an int, or with a mask the
    number of its True elements (an intp array)."""
    if mask is True:
        return _count(a, axes)
    return _np.sum(mask, axis=axes, dtype=_np.intp, keepdims=keepdims)


def _divide(total, count):
    """total / count as NumPy's reductions divide (into the total's own dtype)."""
    with _np.errstate(divide="ignore", invalid="ignore"):
        return astype(total / count, dtype_of(total))


def _squared_magnitude(x):
    """|x|**2, as NumPy's var computes it: x*x, or re**2 + im**2 for complex x."""
    if dtype_of(x).kind == "c":
        re, im = real(x), imag(x)
        return re * re + im * im
    return x * x


def _sqrt_or_zero(v):
    """sqrt(v), with value and every derivative 0 where v == 0 (the masked branch sees 1)."""
    zero = mask_values(v) == 0
    if not may_hold(zero):
        return sqrt(v)
    # (a NumPy scalar for a 0-d v, as `sqrt` gives, whatever the value: `where` makes an array)
    return scalar_if_0d(where(zero, 0.0, sqrt(where(zero, 1.0, v))))


# --- var, std, ptp --------------------------------------------------------------------------------


@mirror("reduction")
def var(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    dtype: DTypeLike | None = None,
    out: None = None,
    ddof: float = 0,
    keepdims: bool = NO_VALUE,
    *,
    where: ArrayLike = NO_VALUE,
    mean: ArrayLike = NO_VALUE,
    correction: float = NO_VALUE,
) -> Array:
    """NumPy's `var`: the mean squared deviation from the mean (|x - mean|**2 for complex
    data), divided by `n - ddof` instead of `n`, over the True elements of `where`; `mean`
    (differentiable) replaces the computed mean. `ddof >= n` gives inf or nan, as in NumPy,
    with a zero derivative (see `_per_dof`). Computed in NumPy's steps, so the value is NumPy's.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.var(x))(fnp.array([1.0, 2.0, 3.0]))  # 2 (x - mean) / n
    array([-0.66666667,  0.        ,  0.66666667])
    """
    refuse_out(out, "var")
    ss, dof = _squares(a, axis, dtype, ddof, keepdims, where, mean, correction)
    return _per_dof(ss, dof, False)


def _squares(a, axis, dtype, ddof, keepdims, where, mean, correction):
    """var's sum of squared deviations and its degrees of freedom (n - ddof, per slice)."""
    ddof = _ddof(ddof, correction)
    keepdims = _keepdims(keepdims)
    a = _asarray(a)
    if dtype is None and dtype_of(a).kind in "iub":
        dtype = _np.float64
    axes = _normalize_axes(axis, ndim(a), shape(a))
    mask = reduction_mask(where, a, "var")
    if mean is NO_VALUE or mean is None:  # (None: NumPy's explicit "compute it")
        total = sum(a, axis=axes, dtype=dtype, keepdims=True, where=where)
        # a slice with no element has no mean (NumPy's is 0/0, and its variance 0/0 too): 0
        # here keeps nan out of the other elements' gradients
        mean = _divide(total, _np.maximum(_counts(a, axes, mask, True), 1))
    else:
        _check_mean_shape(mean, a, axes, "var")
    x = _squared_magnitude(a - mean)
    ss = sum(x, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    return ss, _counts(a, axes, mask, keepdims) - ddof


def _check_mean_shape(mean, a, axes, name):
    """A ValueError naming mean= when it does not broadcast against a (NumPy subtracts it
    from a: its own message names neither)."""
    try:
        _np.broadcast_shapes(shape(mean), shape(a))
    except ValueError:
        raise ValueError(
            f"{name}: mean= has {describe(mean)}, which does not broadcast against a "
            f"({describe(a)}); pass it with the reduced axes kept, shape "
            f"{_kept_shape(shape(a), axes)}, as fnp.mean(a, axis=..., keepdims=True) gives it"
        ) from None


def _per_dof(ss, dof, root, fill=None):
    """ss / dof, the variance (with `root`, its square root: the deviation). Where dof <= 0
    it is `fill` (None: NumPy's ss / max(dof, 0), inf or nan) with a zero derivative.

    There the value is inf or nan for every input nearby, a constant. Computed through the
    division, the modes disagreed: reverse mode formed inf - inf through the mean (nan),
    forward mode gave +-inf, and sqrt's forward rule 0.5 / sqrt(nan) made a zero tangent nan.
    """
    bad = _np.less_equal(dof, 0)
    if not may_hold(bad):
        v = _divide(ss, dof)
        return _sqrt_or_zero(v) if root else v
    v = _divide(ss, _np.where(bad, 1, dof))
    if fill is None:
        fill = _divide(constant_of(ss), _np.maximum(dof, 0))
        fill = sqrt(fill) if root else fill
    return scalar_if_0d(_where(bad, fill, _sqrt_or_zero(v) if root else v))


def _std(a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    refuse_out(out, "std")
    ss, dof = _squares(a, axis, dtype, ddof, keepdims, where, mean, correction)
    return _root_in_dtype(_per_dof(ss, dof, True), dtype, "std")


def _root_in_dtype(deviation, dtype, name):
    """std's square root in an integer or bool `dtype`, as NumPy gives it: the variance is
    computed in that dtype, and its square root cast back to it for a single number
    (np.std(x, dtype=np.int64) is np.int64(2) where var is 5); for an array NumPy's sqrt
    cannot write floats into it, and raises. (A derivative through the cast is 0.)"""
    if dtype is None or _np.dtype(dtype).kind not in "biu":
        return deviation
    if ndim(deviation) != 0:
        raise TypeError(
            f"{name}: dtype={_np.dtype(dtype)} gives an array of integer variances, whose "
            "square roots NumPy cannot write back into that dtype (it raises here too); pass "
            "a float dtype, or take the root of the variance yourself and cast it"
        )
    return astype(deviation, dtype)


def _refuse_exact_dtype_of_inexact(a, dtype, name):
    """NumPy's nan-functions of a float or complex `a` refuse an integer or bool `dtype`."""
    if dtype is not None and not _np.issubdtype(_np.dtype(dtype), _np.inexact):
        raise TypeError(
            f"{name}: If a is inexact, then dtype must be inexact (a has "
            f"{describe(a)}, dtype={_np.dtype(dtype)}); pass a float dtype, or none"
        )


std = variant(
    var,
    "std",
    _std,
    """NumPy's `std`, the square root of `var` (with all of var's keywords).

    At zero variance (a constant slice) it returns 0 with a gradient of 0 where JAX gives nan:
    std is a norm of the centred data, so it has its minimum there and 0 is a subgradient.
    """,
)


@mirror("reduction")
def ptp(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    out: None = None,
    keepdims: bool = NO_VALUE,
) -> Array:
    """NumPy's `ptp` (peak to peak), `max - min`; ties share the gradient as in max and min."""
    refuse_out(out, "ptp")
    a = _asarray(a)
    return max(a, axis=axis, keepdims=keepdims) - min(a, axis=axis, keepdims=keepdims)


# --- average --------------------------------------------------------------------------------------


@mirror("reduction")
def average(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    weights: ArrayLike | None = None,
    returned: bool = False,
    *,
    keepdims: bool = NO_VALUE,
) -> Array | tuple[Array, Array]:
    """NumPy's `average`: `sum(a * w) / sum(w)` over `axis`; a and the weights are both
    differentiable. With `returned=True` it returns `(average, sum of weights)`.

    >>> import fgrad.numpy as fnp
    >>> float(fnp.average(fnp.array([1.0, 3.0]), weights=fnp.array([3.0, 1.0])))
    1.5
    """
    a = _asarray(a)
    nd = ndim(a)
    axes = _normalize_axes(axis, nd, shape(a))
    keepdims = _keepdims(keepdims)
    if weights is None:
        avg = mean(_as_float(a), axis=axes, keepdims=keepdims)
        scl = _np.full(shape(avg), _count(a, axes), dtype=dtype_of(avg))
        return (avg, scl) if returned else avg
    w = _asarray(weights)
    # NumPy's dtype of the result: float64 at least for integer (or bool) data
    kinds = (dtype_of(a), dtype_of(w)) + ((_np.float64,) if dtype_of(a).kind in "iub" else ())
    result_dtype = _np.result_type(*kinds)
    if dtype_of(a) != result_dtype:
        a = astype(a, result_dtype)
    if dtype_of(w) != result_dtype:
        w = astype(w, result_dtype)
    a_shape, w_shape = shape(a), shape(w)
    if a_shape != w_shape:
        if axis is None:
            raise TypeError(
                f"average: a has shape {a_shape} and weights shape {w_shape}; when they "
                "differ, give the axis the weights run along"
            )
        order = list(axis) if isinstance(axis, tuple) else [axis]
        order = [int(ax) % nd for ax in order]
        expected = tuple(a_shape[ax] for ax in order)
        if w_shape != expected:
            raise ValueError(
                f"average: weights of shape {w_shape} do not match a of shape {a_shape} "
                f"along axis {axis}; they need shape {a_shape} or {expected}"
            )
        w = transpose(w, tuple(_np.argsort(order))) if len(order) > 1 else w
        w = reshape(w, tuple(n if i in axes else 1 for i, n in enumerate(a_shape)))
    # the weights summed as NumPy sums them, unbroadcast (a broadcast sum rounds otherwise)
    scl = sum(w, axis=axes, keepdims=keepdims)
    if read_any(mask_values(scl) == 0):  # (a lazy sum is not read: 0 divides to inf/nan)
        raise ZeroDivisionError("average: weights sum to zero, so they cannot be normalized")
    avg = sum(a * w, axis=axes, keepdims=keepdims) / scl
    if returned:
        if shape(scl) != shape(avg):
            scl = broadcast_to(scl, shape(avg))
        return avg, scl
    return avg


# --- cumsum and cumprod ---------------------------------------------------------------------------
# Under `vmap` each runs along its axis, moved past the rows (`_scan_batch`, the rule of both);
# sparsity detection takes a scan as the running union along its axis.


def _scan_batch(prim):
    def rule(args, dims, axis, **params):
        (x,), (d,) = args, dims
        return prim(x, axis=batched_axis(axis, d), **params), d

    return rule


def _cumsum_impl(x, axis, reverse):
    if reverse:
        return _np.flip(_np.cumsum(_np.flip(x, axis), axis=axis), axis)
    return _np.cumsum(x, axis=axis)


# The adjoint of a running sum is the running sum taken from the other end.
_cumsum_p: Primitive = deflinear(
    _cumsum_impl,
    lambda ans, x, axis, reverse: lambda ct: _cumsum_p(ct, axis=axis, reverse=not reverse),
    name="cumsum",
    sparsity="scans",
)
register_rules(_cumsum_p, batch=_scan_batch(_cumsum_p))


def _scan_axis(a, axis, dtype):
    """(a, axis) as the scans take them: cast to dtype, flattened for axis=None or a 0-d a
    (NumPy scans a 0-d value as one element along axis 0 or -1). `axis` is one integer, with
    NumPy's errors (TypeError for a float, a bool or a tuple; AxisError out of bounds)."""
    a = _asarray(a)
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        return ravel(a), 0
    s = shape(a)
    if not s:
        return ravel(a), _axis_entry(axis, axis, 1, s)
    return a, _axis_entry(axis, axis, len(s), s)


@mirror("reduction")
def cumsum(
    a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: None = None
) -> Array:
    """NumPy's `cumsum`; `axis=None` runs over the flattened array."""
    refuse_out(out, "cumsum")
    a, axis = _scan_axis(a, axis, dtype)
    return _in_dtype(_cumsum_p(a, axis=axis, reverse=False), dtype)


def _in_dtype(y, dtype):
    """A scan of small integers (NumPy's cumsum and cumprod of int8 are int64) in the `dtype`
    asked for: NumPy then accumulates in it, wrapping around, which the cast of the wider
    result gives too (arithmetic modulo 2**bits, and or/and for bool)."""
    if dtype is not None and dtype_of(y) != _np.dtype(dtype):
        return astype(y, dtype)
    return y


def _infinite(x):
    """Whether x holds an inf or a nan: then cumprod's derivatives keep the terms with a zero
    tangent or cotangent out (`_weighted_product`), where 0 * inf is nan.
    One check a rule (under `jit`, one guarded boolean)."""
    return may_hold(logical_not(isfinite(mask_values(x))))


def _entering(w):
    """The mask of a tangent's or cotangent's entries that enter its derivative: not 0."""
    return _np.not_equal(mask_values(w), 0)


def _cumprod_vjp(ans, x, axis):
    xm = moveaxis(x, axis, -1)
    infinite = _infinite(xm)
    before = _exclusive_cumprod(xm)  # x_0 ... x_{j-1}
    n = shape(xm)[-1]
    ones = _np.ones(shape(xm)[:-1] + (1,), dtype=dtype_of(xm))
    # d(sum_i ct_i P_i)/dx_j = before_j * s_j with s_j = ct_j + x_{j+1} s_{j+1}: a linear
    # recurrence run from the end (so on reversed arrays), multiplications only.
    a_rev = concatenate([xm[..., 1:], ones], axis=-1)[..., ::-1] if n > 1 else ones

    def bprop(ct):
        ct_rev = moveaxis(ct, axis, -1)[..., ::-1]
        if not infinite:
            s = _linear_recurrence(a_rev, ct_rev)[0][..., ::-1]
            return moveaxis(before * s, -1, axis)
        # s_j is 0 against an infinite before_j only where every ct_i (i >= j) is 0
        s, weighted = _linear_recurrence(a_rev, ct_rev, _entering(ct_rev))
        s, weighted = s[..., ::-1], weighted[..., ::-1]
        return moveaxis(_weighted_product(before * s, weighted, before), -1, axis)

    return bprop


def _cumprod_jvp(t, ans, x, axis):
    # u_i = d P_i = x_i u_{i-1} + P_{i-1} t_i: the same recurrence, run forwards.
    xm = moveaxis(x, axis, -1)
    tm = moveaxis(t, axis, -1)
    before = _exclusive_cumprod(xm)
    if not _infinite(xm):
        return moveaxis(_linear_recurrence(xm, before * tm)[0], -1, axis)
    weighted = _entering(tm)
    b = _weighted_product(before * tm, weighted, before)
    return moveaxis(_linear_recurrence(xm, b, weighted)[0], -1, axis)


_cumprod_p = defprimitive(
    lambda x, axis: _np.cumprod(x, axis=axis),
    vjp=_cumprod_vjp,
    jvp=_cumprod_jvp,
    name="cumprod",
    forward="speed",
    sparsity="scans",
)
register_rules(_cumprod_p, batch=_scan_batch(_cumprod_p))


@mirror("reduction")
def cumprod(
    a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: None = None
) -> Array:
    """NumPy's `cumprod`; `axis=None` runs over the flattened array. Its derivatives are
    built from multiplications only (no division), so they are exact where elements are 0
    or tiny, to every order.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.cumprod(x)[-1])(fnp.array([2.0, 0.0, 3.0]))
    array([0., 6., 0.])
    """
    refuse_out(out, "cumprod")
    a, axis = _scan_axis(a, axis, dtype)
    return _in_dtype(_cumprod_p(a, axis=axis), dtype)


def _running_sum(a, axis):
    return _cumsum_p(a, axis=axis, reverse=False)


def _cumulative(x, axis, dtype, out, include_initial, scan, initial, name):
    refuse_out(out, name)
    x = _asarray(x)
    if axis is None:
        if ndim(x) > 1:
            raise ValueError(
                f"{name}: axis must be given for a {ndim(x)}-D array (shape {shape(x)}); pass axis="
            )
        axis = 0
    x, axis = _scan_axis(x, axis, dtype)
    y = _in_dtype(scan(x, axis=axis), dtype)
    if not include_initial:
        return y
    s = list(shape(y))
    s[axis] = 1
    return concatenate([_np.full(s, initial, dtype=dtype_of(y)), y], axis=axis)


@mirror("reduction")
def cumulative_sum(
    x: ArrayLike,
    /,
    *,
    axis: int | None = None,
    dtype: DTypeLike | None = None,
    out: None = None,
    include_initial: bool = False,
) -> Array:
    """NumPy 2's `cumulative_sum`: `cumsum` along `axis` (required for N-D arrays), with
    `include_initial` prepending the sum of nothing, 0."""
    return _cumulative(x, axis, dtype, out, include_initial, _running_sum, 0, "cumulative_sum")


cumulative_prod = variant(
    cumulative_sum,
    "cumulative_prod",
    lambda x, axis, dtype, out, include_initial: _cumulative(
        x, axis, dtype, out, include_initial, _cumprod_p, 1, "cumulative_prod"
    ),
    """NumPy 2's `cumulative_prod`: `cumprod` along `axis` (required for N-D arrays), with
    `include_initial` prepending the product of nothing, 1. Its derivatives are exact at
    zeros, as `cumprod`'s.""",
)


# --- the nan-ignoring reductions ------------------------------------------------------------------


def _nan_to(a, fill):
    """(a with NaNs replaced by fill, the NaN mask or None). The replacement is a `where`, so
    NaN positions get an exact 0 gradient and never feed NaN into the rest of the rule."""
    a = _asarray(a)
    m = _nan_mask(a)
    return (a, None) if m is None else (where(m, fill, a), m)


def _nan_as(fill, reduce, name):
    """nansum's body from sum's (likewise nanprod, nancumsum, nancumprod): `reduce` of a with
    its NaNs replaced by `fill`, the reduction's neutral element."""

    def body(a, out, **arguments):
        refuse_out(out, name)
        return reduce(_nan_to(a, fill)[0], **arguments)

    return body


def _nan_variant(reduce: _F, fill: float, name: str) -> _F:
    return variant(
        reduce,
        name,
        _nan_as(fill, reduce, name),
        f"NumPy's `{name}` (with `{name[3:]}`'s keywords): NaNs count as {fill:g} and get a "
        "gradient of 0.",
    )


nansum = _nan_variant(sum, 0.0, "nansum")
nanprod = _nan_variant(prod, 1.0, "nanprod")


def _nanmean(a, axis, dtype, out, keepdims, where):
    refuse_out(out, "nanmean")
    keepdims = _keepdims(keepdims)
    a0, m = _nan_to(a, 0.0)
    if not _np.issubdtype(dtype_of(a0), _np.inexact):
        # NumPy's nanmean of integers is its mean, which refuses axis=0 of a 0-d a
        return mean(a0, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    _refuse_exact_dtype_of_inexact(a0, dtype, "nanmean")
    s = shape(a0)
    axes = _normalize_axes(axis, len(s), s, ufunc=True)
    if m is None:
        if dtype is not None or dtype_of(a0) != _np.float16:
            return mean(a0, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
        # NumPy's nanmean of floats is a sum and a division even without a NaN: in float16
        # the sum's rounding is not mean's (which sums in float32), 44 of 200 rows apart
        m = _np.zeros(s, dtype=bool)
    count = _valid_counts(m, axes, reduction_mask(where, a0, "nanmean"), keepdims)
    total = sum(a0, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    return scalar_if_0d(_divide_or_nan(total, count))


nanmean = variant(
    mean,
    "nanmean",
    _nanmean,
    """NumPy's `nanmean`: the mean of the non-NaN elements (of the True elements of `where`),
    NaN for a slice without any.""",
)


def _valid_counts(m, axes, mask, keepdims):
    """The number of non-NaN (and unmasked) elements per group, an intp array."""
    if type(m) is Box:  # one mask per row
        valid = logical_not(m) if mask is True else logical_and(logical_not(m), mask)
        return sum(astype(valid, _np.intp), axis=axes, keepdims=keepdims)
    valid = ~m if mask is True else ~m & mask
    return _np.sum(valid, axis=axes, dtype=_np.intp, keepdims=keepdims)


def _divide_or_nan(total, count):
    """total / count into the total's dtype, NaN where count is 0 (NumPy's 0/0, its sign
    bit too), with no 0/0 in the derivatives."""
    return astype(_divided_by_counts(total, count), dtype_of(total))


def _nan_extremum(reduce: _F, fill: float, name: str) -> _F:
    def body(a, axis, out, keepdims, initial, where):
        refuse_out(out, name)
        a = _asarray(a)
        keepdims = _keepdims(keepdims)
        s = shape(a)
        axes = _normalize_axes(axis, len(s), s, ufunc=True)
        a0, m = _nan_to(a, fill)
        ans = reduce(a0, axis=axes, keepdims=keepdims, initial=initial, where=where)
        if type(m) is Box and initial is NO_VALUE:  # one mask per row
            mask = reduction_mask(where, a, name)
            all_nan = equal(_valid_counts(m, axes, mask, keepdims), 0)
            ans = _where(all_nan, _np.nan, ans)
        elif m is not None and initial is NO_VALUE:  # NumPy's fmax.reduce: NaN if all are NaN
            mask = reduction_mask(where, a, name)
            all_nan = _np.all(m if mask is True else m | ~mask, axis=axes, keepdims=keepdims)
            if may_hold(all_nan):
                ans = _where(all_nan, _np.nan, ans)
        return scalar_if_0d(ans)

    return variant(
        reduce,
        name,
        body,
        f"NumPy's `{name}` (with `{name[3:]}`'s keywords): NaNs are ignored and get a gradient "
        "of 0; an all-NaN slice gives NaN. Ties share the gradient evenly, as in max and min.",
    )


nanmax = _nan_extremum(max, -_np.inf, "nanmax")
nanmin = _nan_extremum(min, _np.inf, "nanmin")


def _nanvar(a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    refuse_out(out, "nanvar")
    return _nan_per_dof(a, axis, dtype, ddof, keepdims, where, mean, correction, False)


def _nanstd(a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    refuse_out(out, "nanstd")
    return _nan_per_dof(a, axis, dtype, ddof, keepdims, where, mean, correction, True)


def _nan_per_dof(a, axis, dtype, ddof, keepdims, where, mean, correction, root):
    """nanvar (with `root`, nanstd): NaN where count - ddof <= 0, with a zero derivative."""
    ddof = _ddof(ddof, correction)
    keepdims = _keepdims(keepdims)
    a0, m = _nan_to(a, 0.0)
    a_dtype = dtype_of(a0)
    name = "nanstd" if root else "nanvar"
    if not _np.issubdtype(a_dtype, _np.inexact):  # no NaN: NumPy calls var (inf where dof <= 0)
        ss, dof = _squares(a0, axis, dtype, ddof, keepdims, where, mean, NO_VALUE)
        return (
            _root_in_dtype(_per_dof(ss, dof, root), dtype, name)
            if root
            else _per_dof(ss, dof, root)
        )
    _refuse_exact_dtype_of_inexact(a0, dtype, name)
    s = shape(a0)
    if m is None:
        m = _np.zeros(s, dtype=bool)
    axes = _normalize_axes(axis, len(s), s, ufunc=True)
    mask = reduction_mask(where, a0, "nanvar")
    if mean is NO_VALUE or mean is None:
        total = sum(a0, axis=axes, dtype=dtype, keepdims=True, where=where)
        mean = _divide(total, _np.maximum(_valid_counts(m, axes, mask, True), 1))  # see var
    else:
        _check_mean_shape(mean, a0, axes, "nanvar")
    # NumPy subtracts and squares in place, in the data's own dtype (whatever `dtype` is)
    d = _where(m, 0.0, astype(a0 - mean, a_dtype))  # NaN positions: 0, and no gradient
    sqr = real(d * conj(d)) if dtype_of(d).kind == "c" else d * d
    ss = sum(sqr, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    dof = _valid_counts(m, axes, mask, keepdims) - ddof
    return _per_dof(ss, dof, root, fill=_np.nan)  # NumPy gives NaN where dof <= 0


nanvar = variant(
    var,
    "nanvar",
    _nanvar,
    """NumPy's `nanvar` (with `var`'s keywords): the variance of the non-NaN elements,
    divided by `count - ddof`; NaN where that is not positive. Computed in NumPy's steps.""",
)
nanstd = variant(
    var,
    "nanstd",
    _nanstd,
    "NumPy's `nanstd`; at zero variance the value and gradient are 0 (see `std`).",
)
nancumsum = variant(
    cumsum,
    "nancumsum",
    _nan_as(0.0, cumsum, "nancumsum"),
    "NumPy's `nancumsum`: NaNs count as 0 and get a gradient of 0.",
)
nancumprod = variant(
    cumprod,
    "nancumprod",
    _nan_as(1.0, cumprod, "nancumprod"),
    "NumPy's `nancumprod`: NaNs count as 1 and get a gradient of 0.",
)


# --- median, percentile, quantile -----------------------------------------------------------------
# The slice along the reduced axes is sorted (the permutation is a constant taken from the
# plain values) and the selected order statistics are gathered from the input itself, so the
# gradient flows to the elements at those ranks: exactly the gradient of sort, as in JAX.

# (alpha, beta) of Hyndman and Fan's continuous methods: virtual index n q + alpha +
# q (1 - alpha - beta) - 1. 'linear' is (1, 1), computed as (n - 1) q as NumPy does.
_CONTINUOUS = {
    "linear": (1.0, 1.0),
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
}
_DISCRETE = (
    "lower",
    "higher",
    "nearest",
    "midpoint",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
)
_QUANTILE_METHODS = tuple(_CONTINUOUS) + _DISCRETE
# the methods whose quantile is an element of a (the others interpolate between two)
_PICKING = ("lower", "higher", "nearest", "inverted_cdf", "closest_observation")


def _virtual_index(n, q, method):
    """(previous index, next index, gamma, d(virtual index)/dq or None, whether the virtual
    index is the last index exactly) for counts n and quantiles q (broadcast together), with
    NumPy's formulas for each method."""
    # NumPy's n is a Python int: the index is computed in q's precision (float32 for float32 q)
    nq = astype(n, dtype_of(q))
    if method in _CONTINUOUS:
        alpha, beta = _CONTINUOUS[method]
        if method == "linear":
            vi, slope = (nq - 1) * q, n - 1
        else:
            vi = nq * q + (alpha + q * (1 - alpha - beta)) - 1
            slope = n + (1 - alpha - beta)
    elif method in ("lower", "higher", "nearest"):
        rnd = {"lower": _np.floor, "higher": _np.ceil, "nearest": _np.around}[method]
        vi, slope = rnd((nq - 1) * q), None
    elif method == "midpoint":
        vi, slope = 0.5 * (_np.floor((nq - 1) * q) + _np.ceil((nq - 1) * q)), None
    elif method == "averaged_inverted_cdf":
        vi, slope = nq * q - 1, None
    else:  # inverted_cdf, closest_observation: an index chosen at the boundaries
        idx = nq * q - 1 if method == "inverted_cdf" else nq * q - 1 - 0.5
        prev = _np.floor(idx)
        at_int = (idx - prev) == 0
        if method == "closest_observation":
            at_int = at_int & (prev % 2 == 1)
        vi, slope = _np.where(at_int, prev, prev + 1), None
    vi = astype(vi, float) if type(vi) is Box else _np.asarray(vi, dtype=float)
    prev = _np.floor(vi)
    gamma = vi - prev
    if method == "averaged_inverted_cdf":
        gamma = _np.where(gamma == 0, 0.5, 1.0)
    nxt = prev + 1
    last = _np.broadcast_to(n - 1, vi.shape)
    above, below = vi >= last, vi < 0
    prev = _np.where(above, last, _np.where(below, 0, prev))
    nxt = _np.where(above, last, _np.where(below, 0, nxt))
    return prev.astype(_np.intp), nxt.astype(_np.intp), gamma, slope, vi == last


def _take_last(x, idx):
    """x[..., idx] taken per slice: x has shape L + (n,), idx shape L + (m,) -> L + (m,)."""
    lead = shape(x)[:-1]
    grids = tuple(
        _np.arange(k).reshape(tuple(k if j == i else 1 for j in range(len(lead))) + (1,))
        for i, k in enumerate(lead)
    )
    return getitem(x, grids + (idx,))


def _order_statistics(a, axis, nan_policy):
    """a's slices along `axis`, ready for gathering order statistics.

    Returns x (a with the reduced axes merged last, shape L + (n,), NaNs replaced by 0
    through `where`), the stable argsort of its plain values (NaNs last), the number of
    values per slice that count (all of them, or the non-NaN ones when `nan_policy` is
    "omit"), the mask of slices whose result is NaN, and a's shape with the axes kept.
    """
    a = _as_float(_asarray(a))
    axes = _normalize_axes(axis, ndim(a), shape(a))
    x = _to_last(a, axes)
    n_all = shape(x)[-1]
    if n_all == 0:
        raise ValueError(
            f"cannot take a median or quantile over an empty axis (a has shape {shape(a)})"
        )
    # (under `vmap` one order and one NaN mask per row: NumPy's functions dispatch to fgrad's)
    xv = mask_values(x)
    why = "the order statistics are gathered through np.argsort of the values"
    _core.refuse_lazy("a median, quantile or percentile", why, xv)
    nan = _np.isnan(xv)
    order = _np.argsort(xv, axis=-1, kind="stable")  # NaNs sort to the end
    if may_hold(nan):
        x = where(nan, 0.0, x)
    nans = _np.sum(nan, axis=-1, dtype=_np.intp)
    if nan_policy == "omit":
        counts = n_all - nans
        nan_slices = counts == 0
    else:
        counts = _np.full(shape(x)[:-1], n_all)
        nan_slices = nans != 0
    return x, order, counts, nan_slices, _kept_shape(shape(a), axes)


def _finish(res, nan_slices, kept, keepdims, q_shape):
    """res has shape L + (m,): move the quantiles first, restore the reduced axes' shape."""
    if dtype_of(res).kind in "iub":
        pass  # elements picked from integer or bool data: no NaN to mark, the dtype is kept
    elif type(nan_slices) is Box:  # one mask per row
        res = where(nan_slices[..., None], _np.nan, res)
    elif nan_slices.any():
        res = where(nan_slices[..., None], _np.nan, res)
    lead = shape(res)[:-1]
    res = moveaxis(res, -1, 0) if lead else res
    if keepdims:  # an array, 0-d too (NumPy's median(np.array(2.5), keepdims=True))
        return reshape(res, tuple(q_shape) + tuple(kept))
    return scalar_if_0d(reshape(res, tuple(q_shape) + tuple(lead)))


def _check_method(method, name):
    if method not in _QUANTILE_METHODS:
        raise ValueError(
            f"{name}: method={method!r} is not supported; use one of {', '.join(_QUANTILE_METHODS)}"
        )


def _quantile(a, q, axis, method, keepdims, nan_policy, name, scale=1.0):
    _check_method(method, name)
    weak = type(_core.innermost(q)) in (int, float)  # (traced under `jit`, held as given)
    a, q = _asarray(a), _asarray(q)
    if dtype_of(a).kind == "c":  # NumPy refuses too: complex numbers have no order
        raise TypeError(
            f"{name}: a is complex ({describe(a)}); quantiles need real numbers: "
            "pass fgrad.numpy.real(a) or fgrad.numpy.abs(a), whichever you mean "
            "to order by"
        )
    if dtype_of(q).kind == "c":
        raise TypeError(f"{name}: q is complex ({describe(q)}); pass real quantiles")
    if dtype_of(a) == _np.bool_ and method not in _PICKING:  # NumPy's raises (bool subtract)
        raise TypeError(
            f"{name}: a is boolean ({describe(a)}), and method {method!r} interpolates between "
            "two elements, which NumPy does not do for booleans: pass a.astype(float), or a "
            f"method that picks an element ({', '.join(map(repr, _PICKING))})"
        )
    qv = _checked_fractions(q, weak, scale, name)
    keepdims = _keepdims(keepdims)
    if nan_policy == "omit" and 0 in shape(a):
        # NumPy's nanquantile of an empty array is its nanmean's (NaN, whatever q is)
        return nanmean(a, axis, keepdims=keepdims)
    x, order, counts, nan_slices, kept = _order_statistics(a, axis, nan_policy)
    lead = shape(x)[:-1]
    q_shape = shape(qv)
    qf = reshape(qv, (-1,))
    n = counts[..., None]  # L + (1,) against the m quantiles
    prev, nxt, gamma, slope, on_last = _virtual_index(n, qf, method)
    prev = broadcast_to(prev, lead + shape(qf))
    nxt = broadcast_to(nxt, lead + shape(qf))
    # NumPy's result dtype: a Python number q (or integer quantiles) takes a's float dtype;
    # a q array promotes with it (percentile's q / 100 is float64 for integer percents).
    # Integer data promote as themselves (int16 with a float32 q: float32; uint8 with a
    # float16 q: float16), not as the float64 their order statistics are held in.
    q_dtype = (_np.zeros((), dtype_of(q)) / scale).dtype
    if weak or (scale == 1.0 and not _np.issubdtype(dtype_of(q), _np.inexact)):
        q_dtype = dtype_of(x)
    data_dtype = dtype_of(a) if dtype_of(a).kind in "iub" else dtype_of(x)
    dtype = _np.result_type(data_dtype, q_dtype)
    if dtype_of(a).kind in "iub" and dtype != dtype_of(x):
        x = astype(x, dtype)  # (exact: the integers fit the narrower float)
    lo = _take_last(x, take_along_axis(order, prev, axis=-1))
    if method in _PICKING:
        res = lo  # an element of a: of a's own dtype, as NumPy's (integers stay integers)
        if dtype_of(a).kind in "iub" and dtype_of(res) != dtype_of(a):
            res = astype(res, dtype_of(a))
    else:
        hi = _take_last(x, take_along_axis(order, nxt, axis=-1))
        gamma = broadcast_to(gamma, lead + shape(qf))
        g = astype(gamma, dtype)
        if weak:  # NumPy's gamma is then a Python float: 1 - gamma is taken before the cast
            upper, co_g = gamma >= 0.5, astype(1 - gamma, dtype)
        else:
            upper, co_g = g >= 0.5, 1 - g
        diff = hi - lo
        if slope is not None and type(q) is Box:
            # gamma moves with q at rate d(virtual index)/dq; q - primal(q) is 0 in value,
            # so the value stays NumPy's exactly while the derivative is carried.
            dq = reshape(q, (-1,)) / scale - reshape(constant_of(q), (-1,)) / scale
            dg = _np.asarray(slope, dtype=dtype) * astype(dq, dtype)
            g, co_g = g + dg, co_g - dg
            lo = lo + _left_slope_at_one(x, order, lo, on_last, n, qf, dg)
        # NumPy's lerp: from the nearer end, so that gamma = 1 gives hi exactly
        res = where(upper, hi - diff * co_g, lo + diff * g)
    return _finish(res, nan_slices, kept, keepdims, q_shape)


def _left_slope_at_one(x, order, last_value, on_last, n, qf, dg):
    """A term zero in value carrying the derivative in q at q = 1 where the virtual index is
    the last one (methods 'linear' and 'interpolated_inverted_cdf'): NumPy takes the last
    value alone there (the interpolation's difference is 0), which gave d/dq = 0, where the
    left derivative, (last - the one before) slope, is the only one inside [0, 1] (at q = 0
    the right one is given, from the interpolation). `dg`: slope dq, zero in value."""
    end = _np.logical_and(_np.logical_and(on_last, n > 1), qf == 1)
    if not may_hold(end):
        return 0
    before = _take_last(x, take_along_axis(order, _np.where(end, n - 2, 0), axis=-1))
    left = _where(end, last_value - before, 0)
    # (the product's value, 0 * inf where the step is infinite, is not the term's: -0.0)
    return zero_with_derivatives_of(left * dg)


@mirror("reduction")
def quantile(
    a: ArrayLike,
    q: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    out: None = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: ArrayLike | None = None,
) -> Array:
    """NumPy's `quantile` over `axis` (None, int or tuple), for a scalar or array `q`.

    Methods: 'linear' (the default), 'lower', 'higher', 'nearest', 'midpoint', 'hazen',
    'weibull', 'median_unbiased', 'normal_unbiased', 'interpolated_inverted_cdf',
    'inverted_cdf', 'averaged_inverted_cdf', 'closest_observation'. `weights` (NumPy's, for
    'inverted_cdf' only) picks an element per quantile: its derivative goes to that element.
    The gradient flows to the order statistics used (ties: the element a stable sort ranks
    there, as JAX's sort does), and to `q` for the continuous methods.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.quantile(x, 0.25))(fnp.array([4.0, 1.0, 3.0]))
    array([0. , 0.5, 0.5])
    """
    return _quantile_body("quantile", "propagate")(
        a, q, axis, out, overwrite_input, method, keepdims, weights
    )


def _checked_fractions(q, weak, scale, name):
    """q's values as the fractions NumPy computes with (q / 100 for a percentile), in q's
    precision (float32 for a float32 q; float64 for a Python number, `weak`), refused
    outside [0, 1] as NumPy refuses them. One q per row under `vmap`: the virtual indices are
    batched too. A lazy q is refused: its range is read."""
    qv = mask_values(q)
    _core.refuse_lazy("a quantile or percentile", "q is checked to lie in range", qv)
    q_float = dtype_of(q) if not weak and dtype_of(q).kind == "f" else _np.dtype(float)
    qv = _weights(qv, q_float) / scale
    if read_any(_np.logical_not(_np.logical_and(qv >= 0, qv <= 1))):
        lo, hi = (0, 100) if scale == 100 else (0, 1)
        raise ValueError(f"{name}: q must be in the range [{lo}, {hi}]; got {primal(q)!r}")
    return qv


def _quantile_body(name, nan_policy, scale=1.0):
    def body(a, q, axis, out, overwrite_input, method, keepdims, weights):
        refuse_out(out, name)
        if weights is not None:
            return _weighted_quantile(
                a, q, axis, method, keepdims, weights, nan_policy, name, scale
            )
        return _quantile(a, q, axis, method, keepdims, nan_policy, name, scale)

    return body


def _weighted_quantile(a, q, axis, method, keepdims, weights, nan_policy, name, scale):
    """NumPy's weighted quantile (method 'inverted_cdf' only, as NumPy's): the first sorted
    element whose cumulative weight reaches q times the total. It is one element of a per
    quantile, so the derivative is one-hot in a (ties: the element a stable sort ranks
    there) and zero in the weights and q (the choice is piecewise constant). The choice is
    computed by NumPy's functions on the values (under `jit` recorded, under `vmap` per row)."""
    if numpy_applies(a, q, weights):
        keep = {} if keepdims is NO_VALUE else {"keepdims": keepdims}
        return getattr(_np, name)(a, q, axis=axis, method=method, weights=weights, **keep)
    if method != "inverted_cdf":  # (NumPy's message)
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    for argument, value in (("a", a), ("q", q), ("weights", weights)):
        # (NumPy's function would hand them to Dask's quantile: along an axis only, and
        # with a NumPy `a` beside Dask weights an AttributeError)
        _refuse_lazy_values(name, argument, value)
    if nan_policy == "omit":
        raise TypeError(
            f"{name}: weights with a traced value are not supported by fgrad (a has "
            f"{describe(_asarray(a))}); use fgrad.numpy.{name.replace('nan', '')} with the "
            "NaNs' weights set to 0, or NumPy's on plain values"
        )
    a, q = _asarray(a), _asarray(q)
    weak = type(_core.innermost(q)) in (int, float)
    w = mask_values(_asarray(weights))  # (no derivative goes to the weights)
    axes = _normalize_axes(axis, ndim(a), shape(a))
    if shape(w) != shape(a):
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        given = tuple(_operator.index(k) % ndim(a) for k in _np.atleast_1d(axis))
        if shape(w) != tuple(shape(a)[k] for k in given):
            raise ValueError(
                "Shape of weights must be consistent with shape of a along specified axis."
            )
        w = _np.transpose(w, _np.argsort(given))
        w = _np.reshape(w, tuple(k if i in given else 1 for i, k in enumerate(shape(a))))
        w = _np.broadcast_to(w, shape(a))
    if read_any(_np.less(w, 0)):
        raise ValueError("Weights must be non-negative.")
    qv = _checked_fractions(q, weak, scale, name)
    keepdims = _keepdims(keepdims)
    x, order, counts, nan_slices, kept = _order_statistics(a, axis, nan_policy)
    ws = _np.take_along_axis(_to_last(w, axes), order, axis=-1)
    cdf = _np.cumsum(ws, axis=-1, dtype=_np.float64)
    cdf = cdf / cdf[..., -1:]  # (NumPy's normalization: the same roundings)
    if read_any(_np.isnan(cdf[..., -1])):
        raise ValueError("Weights included NaN, inf or were all zero.")
    if dtype_of(qv).kind == "f":
        cdf = _np.asarray(cdf, dtype_of(qv)) if type(cdf) is not Box else astype(cdf, dtype_of(qv))
    cdf = _np.where(_np.equal(cdf, 0), -1, cdf)  # a zero weight first is never picked
    qf = _np.reshape(qv, (-1,))
    # searchsorted(cdf, q, side="left") per slice: how many cumulative weights are below q
    below = _np.sum(_np.less(cdf[..., None, :], qf[:, None]), axis=-1)
    index = _np.minimum(below, counts[..., None] - 1)
    res = _take_last(x, take_along_axis(order, index, axis=-1))
    if dtype_of(a).kind in "iub" and dtype_of(res) != dtype_of(a):
        res = astype(res, dtype_of(a))
    return _finish(res, nan_slices, kept, keepdims, shape(qv))


def _refuse_lazy_values(name, argument, x):
    """DispatchError naming `argument` when x (at any depth of a list) holds an array of
    another library (a lazy Dask array): the weighted quantile reads the values."""
    if isinstance(x, (list, tuple)):
        for v in x:
            _refuse_lazy_values(name, argument, v)
        return
    why = (
        f"the values of its {argument} ({describe(x)}) are read: each quantile is the "
        "element of a whose cumulative weight, in a's sorted order, first reaches q"
    )
    _core.refuse_lazy(f"{name} with weights", why, _core.innermost(x))


percentile = variant(
    quantile,
    "percentile",
    _quantile_body("percentile", "propagate", scale=100.0),
    """NumPy's `percentile`: `quantile` with q in percent (see `quantile`).""",
)


nanquantile = variant(
    quantile,
    "nanquantile",
    _quantile_body("nanquantile", "omit"),
    """NumPy's `nanquantile`: `quantile` of the non-NaN elements (NaN for an all-NaN slice);
    NaN positions get a gradient of 0.""",
    keepdims=NO_VALUE,
)


nanpercentile = variant(
    quantile,
    "nanpercentile",
    _quantile_body("nanpercentile", "omit", scale=100.0),
    """NumPy's `nanpercentile`: `nanquantile` with q in percent.""",
    keepdims=NO_VALUE,
)


def _median(a, axis, keepdims, nan_policy):
    keepdims = _keepdims(keepdims)
    a = _asarray(a)
    s = shape(a)
    if 0 in (s[ax] for ax in _normalize_axes(axis, len(s), s)):
        # NumPy's median of no values is its mean's: nan, with a RuntimeWarning (a quantile
        # of no values raises, in NumPy too)
        return (mean if nan_policy == "propagate" else nanmean)(a, axis, keepdims=keepdims)
    x, order, counts, nan_slices, kept = _order_statistics(a, axis, nan_policy)
    lower = _np.maximum((counts - 1) // 2, 0)[..., None]
    upper = _np.maximum(counts // 2 - (counts == 0), 0)[..., None]
    lo = _take_last(x, take_along_axis(order, lower, axis=-1))
    hi = _take_last(x, take_along_axis(order, upper, axis=-1))
    return _finish((lo + hi) / 2, nan_slices, kept, keepdims, ())


@mirror("reduction")
def median(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    out: None = None,
    overwrite_input: bool = False,
    keepdims: bool = False,
) -> Array:
    """NumPy's `median`: the middle element, or the mean of the two middle elements. The
    gradient goes to them (ties: the elements a stable sort ranks in the middle)."""
    refuse_out(out, "median")
    return _median(a, axis, keepdims, "propagate")


def _nanmedian(a, axis, out, overwrite_input, keepdims):
    refuse_out(out, "nanmedian")
    return _median(a, axis, keepdims, "omit")


nanmedian = variant(
    median,
    "nanmedian",
    _nanmedian,
    "NumPy's `nanmedian`: the median of the non-NaN elements; NaNs get a gradient of 0.",
    keepdims=NO_VALUE,
)


# --- no derivative --------------------------------------------------------------------------------

all = nondiff_function(_np.all)
any = nondiff_function(_np.any)
count_nonzero = nondiff_function(_np.count_nonzero)
for _fn in (all, any, count_nonzero):
    axis_batch_rule(_fn)


# --- bincount: the counts have no derivative, the weighted sums are linear in the weights ---------


def _bincount(index, w, minlength):
    """NumPy's bincount of a constant index; weights of another library (Dask), whose bincount
    takes the index as one of its arrays chunked as the weights, get the index as one."""
    if _core.is_foreign_array(w):  # and the length, which Dask would leave unknown
        minlength = _builtins.max(minlength, int(index.max()) + 1 if index.size else 0)
        index = _np.zeros_like(w, dtype=_np.intp) + index
    if w.dtype.kind == "c":  # (NumPy's bincount takes real weights only; its histogram any)
        return _np.bincount(index, w.real, minlength) + 1j * _np.bincount(index, w.imag, minlength)
    return _np.bincount(index, w, minlength)


def _binned_batch(bins_of):
    """The rule of a weighted count (`bins_of(**params)` gives each weight's bin, -1 for
    none, and the number of bins): one bincount over all rows, row r's bins offset by r
    times the number of bins."""

    def rule(args, dims, **params):
        (w,), (d,) = args, dims
        w = batch_to_front(w, d)
        n = shape(w)[0]
        index, count = bins_of(**params)
        inside = index >= 0
        rows = _np.arange(n).reshape((n,) + (1,) * index.ndim)
        offsets = _np.where(inside, index + count * rows, 0)
        weights = w if inside.all() else where(inside, w, _np.zeros((), dtype_of(w)))
        total = _bincount_p(ravel(weights), index=offsets.ravel(), minlength=n * count)
        return reshape(total, (n, count)), 0

    return rule


# Sparsity detection (`fgrad.sparsity`) of a weighted count (bincount's, histogram's): it
# depends on the weights through bins not derived yet.
_BINNED_SPARSITY = (
    "dense",
    "the output's elements depend on the inputs' through a structure not derived yet (issue 35)",
)


def _bincount_bins(index, minlength):
    return index, _builtins.max(int(index.max()) + 1 if index.size else 0, minlength)


_bincount_p = deflinear(
    lambda w, index, minlength: _bincount(index, w, minlength).astype(w.dtype, copy=False),
    lambda ans, w, index, minlength: lambda ct: getitem(ct, index),
    name="bincount",
    batch=_binned_batch(_bincount_bins),
    sparsity=_BINNED_SPARSITY,
)


@mirror("function")
def bincount(x: ArrayLike, /, weights: ArrayLike | None = None, minlength: int = 0) -> Array:
    """NumPy's `bincount`, differentiable in `weights`: bin j holds the sum of the weights of
    the j's in `x` (a constant array of non-negative integers). The sums are NumPy's (made in
    float64); float32 weights, traced or not, give them rounded to float32 (NumPy returns
    float64; JAX keeps float32), other weights (float16 too) NumPy's float64.

    >>> import fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda w: fnp.bincount([0, 2, 2], w)[2])(fnp.array([1.0, 2.0, 3.0]))
    array([0., 1., 1.])
    """
    if _core.is_foreign_array(_core.innermost(x)):
        return _lazy_bincount(x, weights, minlength)
    traced = is_traced(x)
    x = _np.asarray(primal(x))
    if traced:  # (a plain x gets NumPy's own errors)
        _check_bin_numbers(x)
    if x.dtype == bool:  # NumPy casts booleans to bins 0 and 1 (as an index they would mask)
        x = x.astype(_np.intp)
    if weights is None:
        return _np.bincount(x, None, minlength)
    weights = _asarray(weights)
    w_dtype = dtype_of(weights)
    if w_dtype.kind == "c":  # NumPy refuses them too
        raise TypeError(
            f"bincount: weights are complex ({describe(weights)}); NumPy sums "
            "real weights only: bin the real and imaginary parts separately"
        )
    sums_dtype = w_dtype if keeps_single_precision(w_dtype) else _np.dtype(_np.float64)
    if numpy_applies(weights):  # (Dask's: fgrad's, lazily)
        return _np.bincount(x, weights, minlength).astype(sums_dtype, copy=False)
    _check_bin_numbers(x)
    if shape(weights) != x.shape:
        raise ValueError(
            f"bincount: weights must have x's shape {x.shape}, got shape {shape(weights)}"
        )
    if w_dtype != sums_dtype:  # (the primitive sums in float64 and returns the weights' dtype)
        weights = astype(weights, sums_dtype)
    return _bincount_p(weights, index=x, minlength=_operator.index(minlength))


def _lazy_bincount(x, weights, minlength):
    """bincount of a lazy (Dask) x: Dask's own, lazy, when nothing is traced and the weights
    (if any) are lazy too, as NumPy's own bincount would be. Otherwise x's values would have
    to be read (to place traced weights, or to bin NumPy weights), and are refused."""
    if not is_traced(x) and not is_traced(weights):
        if weights is None or _core.is_foreign_array(weights):
            return _np.bincount(x, weights, minlength)
    _core.refuse_lazy("bincount", "its x is read to place the weights", _core.innermost(x))


def _check_bin_numbers(x):
    """bincount's x: a 1-D array of integers or booleans, which NumPy casts safely (floats
    it would cast only unsafely)."""
    if x.ndim != 1 or not (_np.issubdtype(x.dtype, _np.integer) or x.dtype == bool):
        raise TypeError(
            f"bincount: x must be a 1-D array of non-negative integers, got shape "
            f"{x.shape} and dtype {x.dtype}; pass x.astype(int) for whole numbers"
        )


# --- histogram: the counts have no derivative; the weighted counts are linear in the weights ------
# The value is NumPy's own histogram of the plain weights; bin j holds the sum of the weights
# of the elements that fall in it, so the cotangent of weight i is that of its bin (0 for an
# element outside the range). NumPy puts x in bin j when edge_j <= x < edge_j+1, and the last
# bin includes its right edge.


def _histogram_bins(a, edges):
    """The bin of each element of the flattened a (-1 outside the range)."""
    n = edges.size - 1
    index = _np.searchsorted(edges, a, side="right") - 1
    index = _np.where(a == edges[-1], n - 1, index)
    return _np.where((a >= edges[0]) & (a <= edges[-1]), index, -1)


def _histogram_vjp(ans, w, a, bins, range, edges):
    index = _histogram_bins(a, edges)
    inside = index >= 0
    w_shape = shape(w)
    safe = _np.where(inside, index, 0)
    return lambda ct: reshape(_where(inside, getitem(ct, safe), 0.0), w_shape)


def _histogram_impl(w, a, bins, range, edges):
    if _core.is_foreign_array(w):
        # Dask's histogram wants the sample as one of its arrays: with the (constant) bins
        # known, the weighted counts are a bincount, the elements outside in an extra bin
        n = edges.size - 1
        index = _histogram_bins(a, edges)
        counts = _bincount(_np.where(index < 0, n, index), w, n + 1)[:n]
        return counts.astype(w.dtype)
    return _np.histogram(a, bins, range, weights=w)[0]


def _histogram_bins_of(a, bins, range, edges):
    return _histogram_bins(a, edges), edges.size - 1


_histogram_p = deflinear(
    _histogram_impl,
    _histogram_vjp,
    name="histogram",
    batch=_binned_batch(_histogram_bins_of),
    sparsity=_BINNED_SPARSITY,
)


def weighted_histogram(a, bins, range, weights):
    """NumPy's histogram of the values of `a` (its counts have no derivative: they are
    piecewise constant in it) with plain `bins` and `range`, weighted by `weights` (plain,
    traced or None): the counts, linear in the weights, and NumPy's edges, as constants.
    (`fgrad.numpy.histograms.histogram` gives the edges their derivatives.)"""
    a = _np.asarray(primal(a))
    if numpy_applies(weights):  # (Dask's: fgrad's, lazily)
        return _np.histogram(a, bins, range, weights=weights)
    w = asarray(weights)
    if shape(w) != a.shape:
        raise ValueError(
            f"histogram: weights must have the shape of a, {a.shape}; got {describe(w)}"
        )
    # (integer weights, traced by `jit` or `vmap`, give integer counts, as NumPy's; `grad`
    # and `jvp` refuse them as inputs)
    # the weights only make NumPy refuse the bin estimators that cannot weigh: ones do too
    edges = _np.histogram_bin_edges(a, bins, range, _np.ones(a.shape))
    flat_a = a.ravel()
    return _histogram_p(ravel(w), a=flat_a, bins=bins, range=range, edges=edges), edges


# --- no derivative: counts, bin indices and predicates --------------------------------------------


def _digitize(x, bins, right=False):
    """NumPy's `digitize`. It reads the bins to tell increasing from decreasing ones (and to
    refuse others), which a lazy Dask array cannot answer: Dask's own digitize computes the
    bins in memory, silently, so chunked bins are refused before it runs."""
    if getattr(bins, "chunks", None) is not None:
        why = (
            "its bins are read to tell increasing from decreasing ones (for increasing bins, "
            "fnp.searchsorted(bins, x, side='left' if right else 'right') stays lazy)"
        )
        _core.refuse_lazy("digitize", why, bins)
    return _np.digitize(x, bins, right)


digitize = nondiff_function(_digitize, name="digitize")


def _digitize_batch(args, dims, **params):
    """digitize is elementwise in x; the bins are one sorted array for every row."""
    (x, *rest), (d, *rest_dims) = args, dims
    if any(e is not None for e in rest_dims):
        why = "bins that differ by row (NumPy's digitize takes one array of bins)"
        n = batch_size(args, dims)
        return _batching.rows_one_by_one(digitize.primitive, args, dims, params, n, why)
    return digitize.primitive(x, *rest, **params), d


register_rules(digitize.primitive, batch=_digitize_batch)


array_equal = nondiff_function(_np.array_equal)
array_equiv = nondiff_function(_np.array_equiv)


def _same_values_batch(broadcast):
    """array_equal (`broadcast` False: the same shapes) and array_equiv (shapes that
    broadcast): one answer per row, from one elementwise comparison and an `all` over each
    row's axes; False for every row when one row's shapes do not allow it."""

    def rule(args, dims, equal_nan=False):
        a, b = args
        da, db = dims
        a_shape = shape(a)[:da] + shape(a)[da + 1 :] if da is not None else shape(a)
        b_shape = shape(b)[:db] + shape(b)[db + 1 :] if db is not None else shape(b)
        if not broadcast and a_shape != b_shape:
            return _np.False_, None
        try:
            rows_nd = len(_np.broadcast_shapes(a_shape, b_shape))
        except ValueError:
            return _np.False_, None
        a = a if da is None else with_example_ndim(a, da, rows_nd)
        b = b if db is None else with_example_ndim(b, db, rows_nd)
        same = equal(a, b)
        if equal_nan and dtype_of(a).kind in "fc" and dtype_of(b).kind in "fc":
            same = logical_or(same, logical_and(isnan(a), isnan(b)))
        n = shape(a)[0] if da is not None else shape(b)[0]
        same = broadcast_to(same, (n,) + shape(same)[1:])
        return all(same, axis=tuple(range(1, ndim(same)))), 0

    return rule


register_rules(array_equal.primitive, batch=_same_values_batch(broadcast=False))
register_rules(array_equiv.primitive, batch=_same_values_batch(broadcast=True))


@mirror("constant")
def iscomplexobj(x: ArrayLike) -> bool:
    """NumPy's `iscomplexobj`: whether x's dtype is complex (a question about the type, so a
    batched value answers it once for all its rows)."""
    return dtype_of(x).kind == "c" if is_traced(x) else _np.iscomplexobj(x)


@mirror("constant")
def isrealobj(x: ArrayLike) -> bool:
    """NumPy's `isrealobj`: whether x's dtype is not complex."""
    return not iscomplexobj(x)


@mirror("constant")
def isscalar(element: ArrayLike) -> bool:
    """NumPy's `isscalar`, of the value under the boxes; a row of a batch with no axes is a
    scalar, as a row of a NumPy array is."""
    if _core.holds_batch(element):
        return shape_of(element) == ()
    return _np.isscalar(primal(element))


iscomplex = nondiff_function(_np.iscomplex)
isreal = nondiff_function(_np.isreal)
register_elementwise({"iscomplex": iscomplex, "isreal": isreal})


__all__ = exported(globals())
