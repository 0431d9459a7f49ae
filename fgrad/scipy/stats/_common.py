"""Shared pieces of `fgrad.scipy.stats`: constant masks from primal values, the double-`where`
guard that keeps masked branches finite, location/scale standardization, and the CDF
primitives of the t and beta families (and poisson's, whose k is a constant).

The CDFs of t and beta are regularized incomplete beta functions. Their derivative in the
upper limit is the density (closed form, written in fgrad operations, so every order works in
x, loc and scale); in the shape parameters it is `fgrad.scipy.special.betainc`'s series (no
closed form; written in fgrad operations too, checked against mpmath there), so they are
differentiable in a, b and df as well (t's in df, from df = 100 on, by quadrature of the
density's derivative, `_t_df_by_quadrature`: the beta form cancels there). gamma and chi2
do not use these: their CDFs are `fgrad.scipy.special.gammainc` / `gammaincc`.

Imports: `fgrad.core`, `fgrad.primitive`,
`fgrad.numpy`, `fgrad.scipy.special`, and `scipy.special` for values.
"""

import inspect
import math

import numpy as _np
import scipy.special as _sc

from ... import numpy as fnp
from ...core import dtype_of, holds_batch, innermost, is_foreign_array, shape_of
from ...numpy.elementwise import (
    bool_mask,
    elementwise_batch_rule,
    mask_values,
    may_hold,
    read_any,
)
from ...numpy.shaping import (
    as_array,
    broadcast_like,
    meta,
    read_constant as read_constant,  # (poisson's k)
    unbroadcast,
)
from ...primitive import defprimitive, register_rules
from .. import special as sp

LOG_2PI = math.log(2.0 * math.pi)


# Masks are computed from values with NumPy; under `vmap` a value holds one array per row, and
# `value` gives it then as a batched constant (fgrad.numpy.elementwise's `mask_values`: NumPy's
# functions dispatch to fgrad's on it), so masks are combined with NumPy's functions
# (`_np.logical_and`, not `&`) and asked `some(mask)` / `every(mask)`, not `mask.any()` /
# `mask.all()`.

value = mask_values
some = may_hold


def every(mask):
    """Whether a mask holds everywhere; a batched mask is taken not to, unread, and so is a
    lazy one (of a Dask array, traced or not)."""
    return not holds_batch(mask) and not is_foreign_array(innermost(mask)) and bool(mask.all())


def any_row(condition):
    """Whether a condition (for an error) holds anywhere (`read_any`: under `vmap` every row's
    at once, which agree, all False, unless a row is out of range, and `vmap` splits the batch
    then; under `jit` one boolean the record checks; a lazy one, Dask's, is not read)."""
    return read_any(condition)


def squeeze_ones(out):
    """`out` without its length-1 axes, as SciPy squeezes dirichlet's and
    multivariate_normal's results (a 0-d one a NumPy scalar, `scipy_scalar`)."""
    shape = tuple(n for n in shape_of(out) if n != 1)
    return scipy_scalar(fnp.reshape(out, shape) if shape != shape_of(out) else out)


def mask(condition, *like):
    """A constant boolean mask, broadcast to the broadcast shape of `like`."""
    shape = _np.broadcast_shapes(*(shape_of(v) for v in like)) if like else ()
    return bool_mask(condition, _np.broadcast_shapes(shape, shape_of(condition)))


def is_plain_number(x):
    """Whether x is a Python int or float (not a bool), as given or as `jit` holds one (a
    traced value that stays weakly typed: 2.5 next to float32 data is float32)."""
    return type(innermost(x)) in (int, float)


def number_as_float(x, dtype):
    """A Python number x (`is_plain_number`, or a bool) as a 0-d array of dtype; traced if
    `jit` holds it."""
    return _np.asarray(x, dtype) if type(x) in (bool, int, float) else fnp.astype(x, dtype)


def sequences_as_arrays(*args):
    """The arguments with every list or tuple made an array, as SciPy takes array-likes
    (`fgrad.numpy.asarray`: one holding traced values is traced)."""
    return tuple(fnp.asarray(a) if isinstance(a, (list, tuple)) else a for a in args)


def scipy_float(dtype):
    """The float dtype SciPy's distributions compute data of `dtype` in, as fgrad keeps it:
    float64, or the dtype itself for float32 and wider floats (float32 in, float32 out)."""
    return dtype if dtype.kind == "f" and dtype.itemsize >= 4 else _np.dtype(_np.float64)


def result_float(*args):
    """The float dtype of a result from these arguments (`scipy_float` of their promoted
    dtype; a Python number is weak and None is left out)."""
    kinds = [dtype_of(a) for a in args if a is not None and not is_plain_number(a)]
    return scipy_float(_np.result_type(*kinds)) if kinds else _np.dtype(_np.float64)


def _computed_wider(a):
    """Whether an argument is converted to the result's float dtype first: an integer array
    (in its own type x - loc wraps around, 3 - 4 is 255 in uint8, and log(scale) of an int8
    is computed in float16) or a float16 one. A bool array is not (NumPy refuses x - loc of
    two, as in SciPy), nor a Python number (weak)."""
    if a is None or is_plain_number(a):
        return False
    dtype = dtype_of(a)
    return dtype.kind in "iu" or (dtype.kind == "f" and dtype.itemsize < 4)


def float_arguments(*args):
    """The arguments with every list or tuple made an array (`sequences_as_arrays`) and every
    integer or float16 array in the result's float dtype (`result_float`, `_computed_wider`):
    SciPy converts them to float64 (after subtracting loc; fgrad before, so that nothing
    wraps around), and computes a float16 argument in float64."""
    args = sequences_as_arrays(*args)
    wider = [_computed_wider(a) for a in args]
    if not any(wider):  # (the common case, float arguments: no dtype to work out)
        return args
    dtype = result_float(*args)
    return tuple(fnp.astype(a, dtype) if w else a for a, w in zip(args, wider))


def harmonize(*args):
    """The arguments in one float dtype (`float_arguments`), with every Python number a 0-d
    array of that dtype: some SciPy ufuncs promote float32 data with a Python float
    (xlogy(0.0, float32) is float64), and fgrad keeps float32 in, float32 out (under `jit`
    too)."""
    args = float_arguments(*args)
    dtype = result_float(*args)
    return tuple(number_as_float(a, dtype) if is_plain_number(a) else a for a in args)


def weak(f, x, like):
    """f(x), kept a Python float when x is a Python number: NumPy's float64 scalar result
    would promote float32 data `like` (log(scale) with the default scale=1). A number that
    `jit` holds gives f(x) rounded to like's dtype, the same bits as the Python float next
    to `like` eagerly."""
    if type(x) in (int, float):
        return float(f(x))
    return fnp.astype(f(x), result_float(like)) if is_plain_number(x) else f(x)


def scipy_scalar(out):
    """out as SciPy returns it: a 0-d result (a Python float, from Python numbers, or a 0-d
    array, from `where`) as a NumPy scalar of its dtype, as SciPy's `output[()]`."""
    v = innermost(out)
    if type(v) in (int, float):
        return fnp.asarray(out)[()]
    if type(v) is _np.ndarray and v.ndim == 0:
        return out[()]
    return out


def guard(inside, x, fill=1.0):
    """x where the constant mask `inside` holds, `fill` elsewhere: the branch that `where`
    masks still runs (and its derivative would be nan or inf times a zero cotangent)."""
    if every(inside):
        return x
    return fnp.where(inside, x, fill)


def select(inside, x, outside_value):
    """x where `inside`, the constant `outside_value` elsewhere (no derivative there)."""
    if every(inside):
        return x
    return fnp.where(inside, x, outside_value)


def log_probability(p, q):
    """log p, given p and q = 1 - p, each computed directly: log1p(-q) where p > 1/2, since
    log p keeps no relative precision as p nears 1 (log(1 - 6e-40) is 0 in floats; SciPy's
    log-CDFs are accurate there). Each branch gets a harmless value where the other is
    taken, so neither makes a nan derivative."""
    high = mask(value(p) > 0.5, p, q)
    if every(high):
        return fnp.log1p(0.0 - q)  # (0.0 - q, not -q: log p is +0.0 where q is 0, as SciPy's)
    low = _np.logical_not(high) if type(high) is _np.ndarray else ~high
    if every(low):
        return fnp.log(p)
    return fnp.where(high, fnp.log1p(0.0 - guard(high, q, 0.0)), fnp.log(guard(low, p, 1.0)))


def invalid_to_nan(bad, out, *given):
    """nan where a parameter is out of its range (scale <= 0, a shape <= 0, or nan), as SciPy,
    and there a nan derivative in each of the arguments `given` that is traced (`nan_branch`).
    """
    if not some(bad):
        return out
    return fnp.where(bad, nan_branch(bad, out, given), out)


def nan_branch(bad, out, given):
    """The nan that stands where `bad` holds, in `out`'s dtype, with a nan derivative there in
    each traced float argument of `given`: a nan value has no derivative. (`in_range` put 1.0
    in an invalid parameter's place, so the formula's derivative there is finite, and `where`
    with a constant nan would give 0 in every argument, silently.)"""
    return sp.nan_of([sp.nan_carrier(bad, a) for a in sp.traced_floats(given)], out)


def in_range(p, ok, *like, bad=None):
    """A parameter valid where `ok` holds (a condition on its values, false at nan: scale > 0,
    a shape > 0, mu >= 0), where SciPy's result is nan: p with 1.0 where it is not valid, so
    that the formulas stay finite there, and the mask of those places broadcast with `like`
    (or'ed into `bad` if given)."""
    out = _np.logical_not(ok)
    p_out = mask(out, p)
    if some(p_out):
        p = fnp.where(p_out, 1.0, p)
    out = mask(out, p, *like)
    return p, out if bad is None else _np.logical_or(bad, out)


def located(x, loc, scale, *shapes):
    """The arguments of a location-scale distribution: in one float dtype (`harmonize`), as
    (z, scale, bad, shapes): z = (x - loc) / scale, and `bad` the mask where scale or a shape
    parameter (each must be > 0) is out of range, where 1.0 stands in for it (`in_range`), or
    where z is nan (a nan x or loc: the value is nan, as SciPy's, where the support's masks,
    false at nan, would give a constant such as -inf or 0)."""
    x, loc, scale, *shapes = harmonize(x, loc, scale, *shapes)
    z, scale, bad = _standardized(x, loc, scale)
    bad = _np.logical_or(bad, mask(_np.isnan(value(z)), z))
    valid = []
    for p in shapes:
        p, bad = in_range(p, value(p) > 0, z, *shapes, bad=bad)
        valid.append(p)
    return z, scale, bad, tuple(valid)


def standardize(x, loc, scale):
    """(x - loc) / scale, and a mask of scale <= 0 (or nan) with scale replaced by 1 there
    (lists and tuples taken as arrays, integers and float16 as floats: `float_arguments`)."""
    return _standardized(*float_arguments(x, loc, scale))


def _standardized(x, loc, scale):
    """`standardize` of arguments in their float dtypes already (`float_arguments`)."""
    scale, bad = in_range(scale, value(scale) > 0)
    return (x - loc) / scale, scale, bad


# --- CDF primitives: the density in the upper limit, series in the shape parameters -------------


def cdf_primitive(impl, density, name, shape_partials):
    """A primitive `p(z, *shapes)` with value `impl(z, *shapes)`, derivative in z
    `density(z, *shapes)` and derivatives in the shapes `shape_partials(z, *shapes)` (a tuple,
    one per shape; fgrad ops, so every order works). The shape partials are computed when a
    rule needs them, all together (they share their series)."""

    def vjp_z(ans, z, *shapes):
        like = meta(z)
        return lambda ct: unbroadcast(ct * density(z, *shapes), like)

    def jvp_z(t, ans, z, *shapes):
        return broadcast_like(t * density(z, *shapes), ans)

    def vjp_shape(i):
        def maker(ans, z, *shapes):
            like = meta(shapes[i])
            return lambda ct: unbroadcast(ct * shape_partials(z, *shapes)[i], like)

        return maker

    def jvp_shape(i):
        def rule(t, ans, z, *shapes):
            return broadcast_like(t * shape_partials(z, *shapes)[i], ans)

        return rule

    n = len(inspect.signature(impl).parameters) - 1
    prim = defprimitive(
        impl,
        vjp=(vjp_z,) + tuple(vjp_shape(i) for i in range(n)),
        jvp=(jvp_z,) + tuple(jvp_shape(i) for i in range(n)),
        name=name,
        forward="derived",
    )
    register_rules(
        prim,
        batch=elementwise_batch_rule(prim),  # a ufunc of z and the shapes
        taylor=sp.slope_taylor_rule(prim, density),
    )
    return prim


def _float_like(out, *args):
    """SciPy's result in the inputs' float dtype (float32 in, float32 out; `scipy_float`)."""
    dtype = scipy_float(_np.result_type(*[value(a) if not is_plain_number(a) else a for a in args]))
    out = as_array(out).astype(dtype, copy=False)
    return out[()] if out.ndim == 0 and type(out) is _np.ndarray else out


def _gamma_density(z, a):
    """d/dz P(a, z) = z**(a-1) exp(-z) / Gamma(a) for z >= 0, 0 for z < 0 (at large a near
    the peak in Stirling's form: `fgrad.scipy.special`'s `_in_stirlings_form`)."""
    inside = mask(value(z) >= 0, z, a)
    zg = guard(inside, z)
    log_density = sp.xlogy(a - 1.0, zg) - zg - sp.gammaln(a)
    log_density = sp._in_stirlings_form(log_density, a, zg, sp._gammainc_log_density_large)
    return select(inside, fnp.exp(log_density), 0.0)


def _beta_density(z, a, b):
    """d/dz I(a, b, z) = z**(a-1) (1-z)**(b-1) / B(a, b) on [0, 1], 0 outside (at large a
    and b near the peak in Stirling's form: `fgrad.scipy.special`'s)."""
    zv = value(z)
    inside = mask(_np.logical_and(zv >= 0, zv <= 1), z, a, b)
    zg = guard(inside, z, 0.5)
    log_density = sp._betainc_log_density(a, b, zg)
    return select(inside, fnp.exp(log_density), 0.0)


def _t_density(z, df):
    """The standard t density, the derivative of stdtr in z."""
    return fnp.exp(t_log_density(z, df))


def t_log_density(z, df):
    """log of the standard t density, log c(df) - (df+1)/2 log1p(z^2/df) (`t_log_norm`);
    for df >= `_T_LARGE_DF` the second term as z^2/2 (1 + 1/df) log1p(u)/u, u = z^2/df,
    whose derivative in df is a sum of terms of order 1/df^2 (-log1p(u)/2 + (df+1) u /
    (2 df (1 + u)) cancels to that), and whose value at df = inf is z^2/2 (the normal's,
    as SciPy's; the other form is inf * 0 there). -inf where z is infinite or z^2 overflows,
    as SciPy's (the large-df form is inf / inf there), with the kernel's derivatives there
    (`_t_far_kernel`; a nan z stays nan)."""
    with _np.errstate(over="ignore"):
        far = mask(_np.isinf(value(z) * value(z)), z, df)
    if not some(far):
        return _t_log_density_finite(z, df)
    near = _np.logical_not(far)
    inside = _t_log_density_finite(guard(near, z, 0.0), df)
    return fnp.where(far, t_log_norm(df) - _t_far_kernel(guard(far, z, 2.0), df), inside)


def _t_far_kernel(z, df):
    """(df+1)/2 log1p(z^2/df) where z^2 overflows: inf, as SciPy's, plus the form
    (df+1)/2 (2 log|z| - log df) (z^2/2 at df = inf), whose derivatives are the kernel's (to
    df/z^2 < 1e-300 relative): in z (df+1)/z, so the log density's in scale is df/scale at a
    finite z (at z = inf it is 0 * inf, nan), and in df the limit -inf at z = inf."""
    normal = mask(_np.isposinf(value(df)), z, df)
    if every(normal):
        return 0.5 * (z * z)
    d = guard(_np.logical_not(normal), df)
    out = 0.5 * (d + 1.0) * (2.0 * fnp.log(fnp.abs(z)) - fnp.log(d)) + math.inf
    if not some(normal):
        return out
    zn = guard(normal, z, 2.0)  # (0.5 z^2's derivative z, times where's 0, is nan at z = inf)
    return fnp.where(normal, 0.5 * (zn * zn), out)


def _t_log_density_finite(z, df):
    """`t_log_density` where z^2 is finite."""
    large = mask(value(df) >= _T_LARGE_DF, z, df)
    kernel = _by_df(
        large,
        df,
        lambda d: 0.5 * (d + 1.0) * fnp.log1p(z * z / d),
        lambda d: 0.5 * (z * z) * (1.0 + 1.0 / d) * _log1p_ratio(z * z / d),
    )
    return t_log_norm(df) - kernel


# From this df on, t's normalising constant is the asymptotic series of `_log_poch_half`
# (its error there is below 1e-18), not a difference of gammaln's.
_T_LARGE_DF = 100.0
# log Gamma(h + 1/2) - log Gamma(h) - log(h)/2 = sum_n c_n h^-n (odd n), c_n =
# (-1)^(n+1) (B_(n+1)(1/2) - B_(n+1)) / (n (n+1)), B Bernoulli's polynomials and numbers
_POCH_HALF = (-1.0 / 8.0, 1.0 / 192.0, -1.0 / 640.0, 17.0 / 14336.0, -31.0 / 18432.0)


def _by_df(large, df, small_form, large_form):
    """small_form(df) where the constant mask `large` does not hold, large_form(df) where it
    does, each branch given a harmless df (1 or `_T_LARGE_DF`) where the other is taken.

    The mask is read (`read_any`), not assumed to hold under `vmap`: the rows
    whose mask holds everywhere, nowhere, or in part then run apart, each the way a loop over
    the rows runs it. (Both branches and `where` give a row the same value, but sum its
    derivative in df in another order: t.pdf's differed from the loop's by up to 128 ulps.)"""
    if not is_foreign_array(innermost(large)):  # (a lazy mask, Dask's, is not read)
        if not read_any(_np.logical_not(large)):
            return large_form(df)
        if not read_any(large):
            return small_form(df)
    return fnp.where(
        large,
        large_form(guard(large, df, _T_LARGE_DF)),
        small_form(guard(_np.logical_not(large), df, 1.0)),
    )


def _log_poch_half(h):
    """log Gamma(h + 1/2) - log Gamma(h) - log(h)/2 for h >= `_T_LARGE_DF` / 2, by its
    asymptotic series (each gammaln is about h log h: their difference, of order 1/h, kept no
    digits at h = 5e14 and was inf - inf at h = inf)."""
    v = 1.0 / h
    w = v * v  # (not 1 / h^2: h^2 overflows at df = 1e300)
    total = 0.0
    for c in reversed(_POCH_HALF):  # Horner in 1/h^2
        total = total * w + c
    return total * v


def _log1p_ratio(u):
    """log1p(u) / u for u >= 0: its Taylor series below 0.01 (9 terms, to 1e-19), so that
    it is 1 at u = 0 and its derivatives keep their digits there."""
    small = mask(value(u) < 0.01, u)
    series = 0.0
    us = guard(small, u, 0.0)
    for k in range(9, 0, -1):  # 1 - u/2 + u^2/3 - ..., by Horner
        series = 1.0 / k - us * series
    if every(small):
        return series
    ub = guard(_np.logical_not(small), u, 1.0)
    return fnp.where(small, series, fnp.log1p(ub) / ub)


def t_log_norm(df):
    """log c(df) = gammaln((df+1)/2) - gammaln(df/2) - log(pi df)/2, the log of t's density
    at 0; for df >= `_T_LARGE_DF` as `_log_poch_half`(df/2) - log(2 pi)/2."""
    return _by_df(
        mask(value(df) >= _T_LARGE_DF, df),
        df,
        lambda d: sp.gammaln(0.5 * (d + 1.0)) - sp.gammaln(0.5 * d) - 0.5 * fnp.log(d * math.pi),
        lambda d: _log_poch_half(0.5 * d) - 0.5 * LOG_2PI,
    )


def _gammainc_impl(z, a):
    with _np.errstate(invalid="ignore"):
        return _float_like(_sc.gammainc(a, _np.maximum(z, 0.0)), z, a)


def _gammaincc_impl(z, a):
    with _np.errstate(invalid="ignore"):
        return _float_like(_sc.gammaincc(a, _np.maximum(z, 0.0)), z, a)


def _betainc_impl(z, a, b):
    with _np.errstate(invalid="ignore"):
        return _float_like(_sc.betainc(a, b, _np.clip(z, 0.0, 1.0)), z, a, b)


def _betaincc_impl(z, a, b):
    with _np.errstate(invalid="ignore"):
        return _float_like(_sc.betaincc(a, b, _np.clip(z, 0.0, 1.0)), z, a, b)


def _stdtr_impl(z, df):
    return _float_like(_sc.stdtr(df, z), z, df)


def _neg(density):
    return lambda *args: -density(*args)


def _gamma_partials(z, a):
    """(d/da P(a, z),): special's series, 0 for z <= 0 (where P is 0 for every a)."""
    return (sp._gammainc_da(a, fnp.maximum(z, 0.0)),)


def _beta_partials(z, a, b):
    """(d/da, d/db) of I(a, b, z): special's series (0 outside (0, 1), where I is 0 or 1)."""
    return sp._betainc_dab(a, b, fnp.clip(z, 0.0, 1.0))


def _negated(partials):
    return lambda *args: tuple(-d for d in partials(*args))


def _t_partials(z, df):
    """(d/d df stdtr(df, z),): for df >= `_T_LARGE_DF` by quadrature of the density's
    derivative (`_t_df_by_quadrature`), below as `_t_partial_moderate`."""
    large = mask(value(df) >= _T_LARGE_DF, z, df)
    return (
        _by_df(
            large,
            df,
            lambda d: _t_partial_moderate(z, d),
            lambda d: _t_df_by_quadrature(z, d),
        ),
    )


def _t_partial_moderate(z, df):
    """d/d df stdtr(df, z) for df < `_T_LARGE_DF`, written two ways, each where it keeps its
    digits and its derivatives: where (df + 1) z^2 / (2 df), the ratio of `_t_center_df`'s
    terms, is 0.01 or more from the incomplete beta function; below from that series of stdtr
    about z = 0 (`_t_center_df`). (The first way loses digits as z -> 0, where 1 - x =
    z^2 / (df + z^2) is rounded, and its own derivative in z is wrong at z = 0: there sign(z)
    meets a branch of betainc.)"""
    zv, dfv = value(z), value(df)
    with _np.errstate(over="ignore", invalid="ignore"):
        near = mask(zv * zv * (_np.abs(dfv) + 1.0) < 0.02 * _np.abs(dfv), z, df)
    far = _np.logical_not(near)
    out = None
    if some(far):
        zf = guard(far, z)
        out = _t_partial_far(zf, df)
    if some(near):
        zn = guard(near, z, 0.0)
        dfn = df if every(near) else fnp.where(near, df, 1.0)
        close = fnp.broadcast_to(
            _t_center_df(zn, dfn), _np.broadcast_shapes(shape_of(z), shape_of(df))
        )
        out = close if out is None else fnp.where(near, close, out)
    return out


def _t_partial_far(z, df):
    """With x = df / (df + z^2), stdtr is 1 - I/2 for z > 0 and I/2 for z < 0, I =
    I(df/2, 1/2, x): its derivative in df is -+(dI/da / 2 + dI/dx dx/d df) / 2, where
    dI/dx dx/d df = x^(df/2 - 1) z sign(z) (df + z^2)^(-3/2) / B(df/2, 1/2).

    That term is written as one exponential with log|z| inside it: the factor before z
    underflowed to 0 where the product did not (from |z| ~ 1e90 at df = 3, half of
    d log stdtr / d df was lost). log x = -log1p(z^2/df) is written so that z^2 may overflow
    (`_t_log_ratio`), and where x underflows dI/da is the leading term of I's series in x,
    I (log x - 1/a - digamma(a) + digamma(a + 1/2)), I = x^a / (a B(a, 1/2))."""
    a = 0.5 * df
    log_ratio = _t_log_ratio(z, df)  # log((df + z^2) / df) = -log x
    log_beta = sp.betaln(a, 0.5)
    log_through_x = (
        (1.0 - a) * log_ratio - log_beta - 1.5 * (fnp.log(df) + log_ratio) + fnp.log(fnp.abs(z))
    )
    tiny = mask(value(log_ratio) > _T_X_UNDERFLOW, z, df)
    da = None
    if not every(tiny):
        x = fnp.exp(0.0 - guard(_np.logical_not(tiny), log_ratio, 1.0))
        da = sp._betainc_dab(a, 0.5, x)[0]
    if some(tiny):
        lr = guard(tiny, log_ratio, 2.0 * _T_X_UNDERFLOW)
        log_i = -a * lr - fnp.log(a) - log_beta
        score = 0.0 - lr - 1.0 / a - sp.digamma(a) + sp.digamma(a + 0.5)
        small = fnp.exp(log_i) * score
        da = small if da is None else fnp.where(tiny, small, da)
    return -0.5 * fnp.sign(z) * (0.5 * da + fnp.exp(log_through_x))


# Beyond this -log x, x = df / (df + z^2) is below 1e-304: I(df/2, 1/2, x)'s series in x is
# its first term to 1e-300, and x itself would be subnormal or 0
_T_X_UNDERFLOW = 700.0


def _t_log_ratio(z, df):
    """log1p(z^2 / df) for z != 0, as 2 log|z| - log df + log1p(df / z^2) where z^2 / df is
    1e16 or more (there z^2 may overflow, and log1p(df / z^2) is below 1e-16)."""
    zv, dfv = value(z), value(df)
    with _np.errstate(over="ignore", invalid="ignore"):
        big = mask(zv * zv >= 1e16 * dfv, z, df)
    if not some(big):
        return fnp.log1p(z * z / df)
    small = _np.logical_not(big)
    zb = guard(big, z)
    far = 2.0 * fnp.log(fnp.abs(zb)) - fnp.log(df) + fnp.log1p(df / zb / zb)
    if every(big):
        return far
    zs = guard(small, z, 0.0)
    return fnp.where(big, far, fnp.log1p(zs * zs / df))


# Gauss-Legendre on [0, 1] for the density's df-derivative between 0 and z, Gauss-Laguerre for
# its tail beyond |z| >= `_T_TAIL_FROM`: with these lengths within 1e-11 of mpmath for df from
# 100 to 1e12 and |z| up to 1e4 (tests/test_scipy_stats.py)
_T_INNER = tuple(
    (nodes + 1.0) / 2.0 if k == 0 else nodes / 2.0
    for k, nodes in enumerate(_np.polynomial.legendre.leggauss(16))
)
_T_TAIL = _np.polynomial.laguerre.laggauss(24)
_T_TAIL_FROM = 2.5


def _t_df_by_quadrature(z, df):
    """d/d df stdtr(df, z) for df >= `_T_LARGE_DF`: the integral of the density's derivative
    in df, f(s) `_t_score_df`(s), from 0 to z (odd in z, since the density integrates to 1/2
    on either side for every df), or minus its integral from |z| to inf. The difference of
    the incomplete beta's two derivatives (`_t_partial_moderate`) cancels here from order
    1/df to order 1/df^2: at (3, 1e7) it gave 8.2e-17 for 3.32e-16. The tail is written in
    y = log f(|z|) - log f(s), s^2 = df expm1(log1p(z^2/df) + 2y/(df+1)), so that it is
    f(|z|) times a Gauss-Laguerre sum, whether the tail is the normal's or a power of s."""
    zv = value(z)
    with _np.errstate(invalid="ignore"):
        tail = mask(_np.abs(zv) >= _T_TAIL_FROM, z, df)
        finite = mask(_np.isfinite(zv), z, df)
    df = guard(mask(value(df) < _np.inf, df), df, 1e300)  # df = inf: 0, as at 1e300
    out = None
    if not every(tail):
        zi = guard(_np.logical_not(tail), z, 0.0)
        t, w = (_np.asarray(v, result_float(z, df)) for v in _T_INNER)
        s = fnp.expand_dims(zi, -1) * t
        dfs = fnp.expand_dims(df, -1)
        inner = zi * fnp.sum(w * fnp.exp(t_log_density(s, dfs)) * _t_score_df(s, dfs), axis=-1)
        out = fnp.broadcast_to(inner, _np.broadcast_shapes(shape_of(z), shape_of(df)))
    if some(tail):
        zt = guard(_np.logical_and(tail, finite), z, _T_TAIL_FROM)
        a = fnp.abs(zt)
        y, w = (_np.asarray(v, result_float(z, df)) for v in _T_TAIL)
        dfs, a_ = fnp.expand_dims(df, -1), fnp.expand_dims(a, -1)
        s2 = dfs * fnp.expm1(fnp.log1p(a_ * a_ / dfs) + 2.0 * y / (dfs + 1.0))
        s = fnp.sqrt(s2)
        ds_dy = (s2 + dfs) / ((dfs + 1.0) * s)
        beyond = fnp.sum(w * _t_score_df(s, dfs) * ds_dy, axis=-1)
        far = select(finite, -fnp.sign(zt) * fnp.exp(t_log_density(a, df)) * beyond, 0.0)
        out = far if out is None else fnp.where(tail, far, out)
    return out


def _t_score_df(s, df):
    """d/d df of `t_log_density`(s, df) for df >= `_T_LARGE_DF`, of order 1/df^2 and written
    so: `_t_log_norm_ddf` - d/d df of (df+1)/2 log1p(u), u = s^2/df, the latter
    (u/df)/2 (df u m(u) - 1/(1+u)), m = `_log1p_excess`."""
    u = s * s / df
    return _t_log_norm_ddf(df) - 0.5 * (u / df) * (df * u * _log1p_excess(u) - 1.0 / (1.0 + u))


def _log1p_excess(u):
    """(log1p(u) - u/(1+u)) / u^2 for u >= 0: below 0.1 its Taylor series, sum_j (-1)^j
    (j+1)/(j+2) u^j (19 terms, to 1e-18), where the difference would cancel."""
    small = mask(value(u) < 0.1, u)
    us = guard(small, u, 0.0)
    series = 0.0
    for j in range(18, -1, -1):  # by Horner
        series = (j + 1.0) / (j + 2.0) - us * series
    if every(small):
        return series
    ub = guard(_np.logical_not(small), u, 1.0)
    return fnp.where(small, series, (fnp.log1p(ub) - ub / (1.0 + ub)) / (ub * ub))


# terms of `_t_center_df`'s series: where their ratio is below 0.01 (`_t_partials`), the
# next is below 1e-18 of the first
_T_CENTER_TERMS = 9


def _t_log_norm_ddf(df):
    """d/d df of `t_log_norm`: (digamma((df+1)/2) - digamma(df/2) - 1/df) / 2, for df >=
    `_T_LARGE_DF` the derivative of `_log_poch_half`'s series (the digammas cancel)."""

    def series_ddf(d):
        v = 2.0 / d
        w = v * v
        total = 0.0
        for n, c in reversed(list(enumerate(_POCH_HALF))):  # c_(2n+1) h^-(2n+1)
            total = total * w - (2 * n + 1) * c
        return 0.5 * total * w

    return _by_df(
        mask(value(df) >= _T_LARGE_DF, df),
        df,
        lambda d: 0.5 * sp.digamma(0.5 * (d + 1.0)) - 0.5 * sp.digamma(0.5 * d) - 0.5 / d,
        series_ddf,
    )


def _t_center_df(z, df):
    """d/d df of stdtr(df, z) - 1/2 = d0 S, S = sum_k binom(-(df+1)/2, k) z^(2k+1) /
    (df^k (2k+1)), the integral of the density d0 (1 + s^2/df)^(-(df+1)/2) from 0 (d0 its
    value at 0): d0 (L' S + S'), L' = d log d0 / d df, each term of S' its term times the sum
    of its factors' logarithmic derivatives."""
    half = 0.5 * (df + 1.0)
    log_d0 = t_log_norm(df)
    dlog_d0 = _t_log_norm_ddf(df)
    u = z * z / df
    term, dlog_term = fnp.ones_like(u), 0.0
    total, dtotal = term * z, 0.0
    for k in range(1, _T_CENTER_TERMS):
        term = term * ((-half - (k - 1)) / k) * u
        dlog_term = dlog_term + 0.5 / (half + (k - 1)) - 1.0 / df
        total = total + term * z / (2 * k + 1)
        dtotal = dtotal + term * dlog_term * z / (2 * k + 1)
    return fnp.exp(log_d0) * (dlog_d0 * total + dtotal)


def incomplete_gamma(name):
    """(P, Q): the lower and upper regularized incomplete gamma functions as primitives
    `(z, a)`, differentiable in z and a."""
    return (
        cdf_primitive(_gammainc_impl, _gamma_density, name, _gamma_partials),
        cdf_primitive(_gammaincc_impl, _neg(_gamma_density), name, _negated(_gamma_partials)),
    )


def incomplete_beta(name):
    """(I, 1 - I): the regularized incomplete beta function and its complement as primitives
    `(z, a, b)`, differentiable in z, a and b."""
    return (
        cdf_primitive(_betainc_impl, _beta_density, name, _beta_partials),
        cdf_primitive(_betaincc_impl, _neg(_beta_density), name, _negated(_beta_partials)),
    )


def student_t(name):
    """stdtr as a primitive `(z, df)`, differentiable in z and df."""
    return cdf_primitive(_stdtr_impl, _t_density, name, _t_partials)


def refuse_complex(who, **arguments):
    """A TypeError for a complex argument of a distribution whose SciPy counterpart refuses
    it, or casts it to real and drops the imaginary part (poisson, multivariate_normal)."""
    for what, x in arguments.items():
        if x is not None and dtype_of(x).kind == "c":
            raise TypeError(
                f"{who}: {what} is complex (shape {shape_of(x)}, dtype "
                f"{dtype_of(x)}); the distribution takes real values, as SciPy's does. Pass "
                f"a real {what} (fgrad.numpy.real(x) if the imaginary part is meant to be 0)"
            )
