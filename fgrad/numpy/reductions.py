"""Reductions other than `sum`: `mean`, `max`, `min`, `prod`, with NumPy's keywords
(`dtype`, `keepdims`, `initial`, `where`); their values are NumPy's own.

Ties of `max`/`min` split the gradient evenly among the tied elements (JAX's convention),
`initial` included when it ties. `prod`'s gradient is the product of the other elements,
taken without division, so it is exact at zeros and at tiny values to every order. A `where=`
mask is a constant: the elements it leaves out get no gradient.

Imports: `fgrad.core`, `fgrad.primitive`,
`fgrad.numpy.shaping`, `fgrad.numpy.elementwise`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as _np

from .. import core as _core
from ..core import Box, bind, constant_of, dtype_of, primal, shape_of
from ..primitive import defprimitive, register_rules
from ._mirror import exported, mirror
from .elementwise import (
    _weights,
    array_value,
    equal,
    isfinite,
    logical_not,
    mask_values,
    may_hold,
    where,
    where as _where,  # for functions with a `where=` parameter
)
from .shaping import (
    NO_VALUE,
    _kept_shape,
    _normalize_axes,
    astype,
    batch_to_front,
    broadcast_to,
    concatenate,
    describe,
    ndim,
    rechunk_p,
    reduction_mask,
    refuse_out,
    reshape,
    shape,
    sum,
    transpose,
    variant,
    without_derivatives,
    zero_with_derivatives_of,
)

if TYPE_CHECKING:
    from typing import Any

    from ..typing import Array, ArrayLike, DTypeLike


def _keepdims(keepdims):
    return False if keepdims is NO_VALUE else bool(keepdims)


@mirror("reduction")
def mean(
    a: ArrayLike,
    axis: int | tuple[int, ...] | None = None,
    dtype: DTypeLike | None = None,
    out: None = None,
    keepdims: bool = NO_VALUE,
    *,
    where: ArrayLike = NO_VALUE,
) -> Array:
    """NumPy's `mean` with `axis`, `dtype`, `keepdims` and `where` (a boolean mask: the mean
    of the True elements; a traced one is an operand, as `sum`'s), computed as NumPy does (the sum
    in `dtype`, float64 for integers, divided by the count), so the value is NumPy's.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.mean(x, where=x > 0))(np.array([-1.0, 2.0, 4.0]))
    array([0. , 0.5, 0.5])
    """
    refuse_out(out, "mean")
    keepdims = _keepdims(keepdims)
    a_dtype = dtype_of(a)
    float16 = False
    if dtype is None:
        if a_dtype.kind in "iub":
            dtype = _np.dtype(_np.float64)
        elif a_dtype == _np.float16:  # NumPy sums float16 in float32
            dtype, float16 = _np.dtype(_np.float32), True
    s = shape(a)
    axes = _normalize_axes(axis, len(s), s)
    total = sum(a, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    mask = reduction_mask(where, a, "mean", operand=True)
    count: Any  # an int, or NumPy's counts where a `where=` mask is given
    if mask is True:
        count = int(_np.prod([s[i] for i in axes], dtype=_np.int64))
        if count == 0:  # an empty axis: NumPy's 0/0, NaN, which no element has a derivative of
            total = constant_of(total)
        if dtype_of(total) == _np.complex64:
            # NumPy divides by its integer count in complex128 and casts back: a complex
            # division is not one rounding, so complex64's own gives other last bits
            ans = astype(total / _np.intp(count), dtype_of(total))
        else:
            ans = total / count
    else:
        count = _np.sum(mask, axis=axes, dtype=_np.intp, keepdims=keepdims)
        # NumPy divides by the integer counts in float64 and casts back (which for one division
        # rounds as the division in the sum's own dtype would)
        with _np.errstate(divide="ignore", invalid="ignore"):
            ans = astype(_divided_by_counts(total, count), dtype_of(total))
    if float16:
        return astype(ans, a_dtype)
    if dtype is not None and dtype_of(ans) != dtype:  # NumPy casts to an integer dtype asked for
        return astype(ans, dtype)
    return ans


def _divided_by_counts(total, count):
    """total / count, NumPy's division of a masked sum by its integer counts. Where a count is
    0 (a group the where= mask leaves empty) the value is NumPy's 0/0, NaN, and its derivatives
    are 0, as the reverse mode finds (no element reaches that group) and `var` gives: the
    forward mode's 0/0 would make them NaN. A total that no transform differentiates or
    batches (plain, or only recorded by `jit`) is divided as it is, without the guard's five
    operations (whose counts a record computes, so that a record always guarded). Under a
    reverse level the guard stays: `linearize` transposes its pullback into tangents."""
    with _np.errstate(divide="ignore", invalid="ignore"):
        if not _derived(total):
            return total / count
        empty = equal(count, 0)
        if type(empty) is Box or may_hold(empty):  # (counts per row, or computed by a record)
            return _where(empty, constant_of(total) / count, total / _where(empty, 1, count))
        return total / count


def _derived(x) -> bool:
    """Whether x is traced by a level other than a `jit` recording (which computes values)."""
    while type(x) is Box:
        if not x.level.stages:
            return True
        x = x.value
    return False


# --- the batching rule of max, min and prod -------------------------------------------------------
# A `where` mask has one row's shape, so with the batch axis in front it still broadcasts
# against the trailing (row) axes. Sparsity detection takes each as the union reduced
# (`sparsity="reduces"`, declared with them).


def _reduction_batch(prim):
    def rule(args, dims, axis, **params):
        (x,), (d,) = args, dims
        return prim(batch_to_front(x, d), axis=tuple(a + 1 for a in axis), **params), 0

    return rule


# --- max and min ----------------------------------------------------------------------------------


def _tie_weights(ans, x, axis, initial=NO_VALUE, where=True):
    """1/k at each of the k elements equal to the extremum along `axis`, 0 elsewhere; with
    `initial`, it counts among the k when it ties (and its own share is returned too); with a
    `where` mask, only the True elements count. Under `vmap` (one set of weights per row) and
    `jit` (weights the record computes) the values are constant boxes (`mask_values`) on which
    these NumPy calls dispatch to fgrad's."""
    xv = mask_values(x)
    kept = _kept_shape(shape(x), axis)
    extremum = _np.reshape(mask_values(ans), kept)
    hit = xv == extremum
    if where is not True:
        hit = _np.logical_and(hit, where)
    count = _np.sum(hit, axis=axis, keepdims=True, dtype=_np.intp)
    initial_hit = None
    if initial is not NO_VALUE:
        # in the result's dtype, as NumPy casts it: a float64 -0.55 is not float32(-0.55), and
        # with no element tied that gave 0/0 weights (nan) where the initial is the extremum
        initial_hit = astype(mask_values(initial), dtype_of(ans)) == extremum
        count = count + initial_hit
    dtype = dtype_of(x)
    with _np.errstate(divide="ignore", invalid="ignore"):
        weights = _weights(hit / count, dtype)
        share = None if initial_hit is None else _weights(initial_hit / count, dtype)
    return weights, kept, share


def _extremum(impl, name):
    def vjp(ans, x, axis, keepdims, initial, where):
        weights, kept, _ = _tie_weights(ans, x, axis, initial, where)
        return lambda ct: reshape(ct, kept) * weights

    def jvp(t, ans, x, axis, keepdims, initial, where):
        weights, _, _ = _tie_weights(ans, x, axis, initial, where)
        return sum(t * weights, axis=axis, keepdims=keepdims)

    def run(x, axis, keepdims, initial, where):
        if initial is NO_VALUE:
            # a mask without an initial comes from `_with_batched_initial` only (`reduce`
            # refuses it, as NumPy does): its masked elements hold the initial's value, so it
            # is there for the tie weights, and the value is the reduction of them all
            where = True
        if _core.is_foreign_array(x) or _core.is_foreign_array(where):  # (NumPy's refuses a
            # Dask mask: "operand type(s) all returned NotImplemented")
            return _foreign_reduce(x, impl, axis, keepdims, None, initial, where)
        keywords = {} if initial is NO_VALUE else {"initial": initial}
        return impl(x, axis=axis, keepdims=keepdims, where=where, **keywords)

    def taylor_rule(primals, series, axis, keepdims, initial, where):
        # Linear near x, with the tie weights fixed: each coefficient is the forward rule's
        # weighted sum of x's, the weights computed once (the general rule finds the same).
        ans = bind(prim, primals, dict(axis=axis, keepdims=keepdims, initial=initial, where=where))
        weights, _, _ = _tie_weights(ans, primals[0], axis, initial, where)
        return ans, tuple(
            None if c is None else sum(c * weights, axis=axis, keepdims=keepdims) for c in series[0]
        )

    prim = defprimitive(
        run,
        vjp=vjp,
        jvp=jvp,
        name=name,
        taylor=taylor_rule,
        forward="derived",
        taylor_kind="linear",  # the forward rule's weighted sum, the weights fixed
        sparsity="reduces",
    )
    register_rules(prim, batch=_reduction_batch(prim))

    def reduce(
        a: ArrayLike,
        axis: int | tuple[int, ...] | None = None,
        out: None = None,
        keepdims: bool = NO_VALUE,
        initial: ArrayLike = NO_VALUE,
        where: ArrayLike = NO_VALUE,
    ) -> Array:
        refuse_out(out, name)
        s = shape(a)
        axes = _normalize_axes(axis, len(s), s, ufunc=True)
        if initial is NO_VALUE:
            if 0 in s:
                _refuse_empty_slices(name, a, axes)
        elif shape(initial) != ():
            raise ValueError(
                f"{name}: initial= must be one number (a bound the result cannot go past), "
                f"got {describe(initial)}; pass a scalar, or for a bound per slice apply "
                f"{'maximum' if name == 'max' else 'minimum'} to the result"
            )
        mask = reduction_mask(where, a, name)
        if mask is not True and initial is NO_VALUE:
            raise ValueError(
                f"{name} of a with {describe(a)} and a where= mask of shape "
                f"{shape(mask)}: where= needs "
                f"initial= (a value the result cannot go past, as NumPy "
                f"requires: {name} has no identity to give a slice with no element); pass "
                f"initial=-numpy.inf for max, numpy.inf for min, or the dtype's bound"
            )
        if type(mask) is Box:  # a lazy mask (Dask's) under `jit` or `vmap`: never read
            a, mask = _where(mask, a, _never_extreme(name, dtype_of(a))), True
        if _core.holds_batch(initial):
            return _with_batched_initial(prim, a, axes, _keepdims(keepdims), initial, mask)
        c = primal(initial)
        ans = prim(a, axis=axes, keepdims=_keepdims(keepdims), initial=c, where=mask)
        if type(initial) is Box:
            # initial's share of the gradient, by a term that is zero in value
            share = _tie_weights(ans, a, axes, c, mask)[2]
            if not _keepdims(keepdims):
                share = reshape(share, shape(ans))
            ans = ans + zero_with_derivatives_of(initial) * share
        return ans

    reduce.__name__ = reduce.__qualname__ = name
    reduce.primitive = prim  # what the batching rules know it by
    reduce.__doc__ = (
        f"NumPy's `{name}` with `axis`, `keepdims`, `initial` (a value the result cannot go "
        "past: a constant, or a traced scalar, differentiable) and `where` (a constant mask; "
        "NumPy requires `initial` with it). Ties share the gradient evenly, `initial` "
        "included."
    )
    return mirror("reduction")(reduce)


def _never_extreme(name, dtype):
    """The value an element masked out of max (min) takes when the mask is an operand: the
    dtype's lowest (highest), which no other element exceeds, so it changes no result, and
    ties with no element that gets a gradient (but one equal to that bound)."""
    low = name == "max"
    if dtype.kind == "b":
        return _np.array(not low)
    if dtype.kind in "iu":
        bounds = _np.iinfo(dtype)
        return _np.array(bounds.min if low else bounds.max, dtype)
    return _np.array(-_np.inf if low else _np.inf, dtype)


def _refuse_empty_slices(name, a, axes):
    """NumPy's ValueError for max or min over an axis of length 0 (a slice with no element,
    and no identity to give it), naming a, the axis, and what to pass instead."""
    s = shape(a)
    empty = [ax for ax in axes if s[ax] == 0]
    if empty:
        raise ValueError(
            f"{name} of a with {describe(a)} over axis {empty[0]} (of length 0): a slice has no "
            f"element, and {name} has no identity to give it; pass initial= (a value the result "
            f"cannot go past, e.g. {'-' if name == 'max' else ''}numpy.inf), or reduce over "
            "axes that are not empty"
        )


def _to_last(a, axes):
    """a with the reduced axes moved to the end and merged: shape (rest..., n)."""
    s = shape(a)
    rest = [i for i in range(len(s)) if i not in axes]
    lead = tuple(s[i] for i in rest)
    n = int(_np.prod([s[i] for i in axes], dtype=_np.int64))  # 1 for a 0-d a
    a = transpose(a, tuple(rest) + tuple(axes)) if ndim(a) else a
    return reshape(a, lead + (n,))


def _reduced_with_initial(prim, a, axes, keepdims, initial, mask, **params):
    """`prim` (a reduction) of a over `axes` with `initial` one more element of each group
    (and `mask` its where=, with the initial's element kept): a reduction whose initial is
    traced (or one per row) reduces it with the elements, so it is differentiated as they are."""
    groups = _to_last(a, axes)
    lead = shape(groups)[:-1]
    extra = broadcast_to(reshape(astype(initial, dtype_of(a)), (1,) * (len(lead) + 1)), lead + (1,))
    if mask is not True:
        mask = _np.concatenate([_to_last(mask, axes), _np.ones(lead + (1,), bool)], axis=-1)
    ans = prim(
        concatenate([groups, extra], axis=-1),
        axis=(len(lead),),
        keepdims=False,
        initial=NO_VALUE,
        where=mask,
        **params,
    )
    return reshape(ans, _kept_shape(shape(a), axes)) if keepdims else ans


def _with_batched_initial(prim, a, axes, keepdims, initial, mask):
    """max or min with one initial per row: the initial joins each reduction group as one
    more element (so ties share the gradient with it as with any element). Masked-out
    elements take the initial's value, and stay out of the ties (counted among them, each
    copy took a share of the initial's gradient)."""
    if mask is not True:
        a = where(mask, a, initial)
    return _reduced_with_initial(prim, a, axes, keepdims, initial, mask)


def _foreign_reduce(x, reduce, axis, keepdims, dtype, initial, where):
    """`reduce` (a ufunc's reduce method) of an array of another library, by the function
    form it implements (Dask's ufuncs have no methods): masked-out elements take the ufunc's
    identity (the initial value for max and min, which have none), and the initial value then
    joins the result as NumPy's reduce takes it, cast to the result's dtype."""
    ufunc = reduce.__self__
    function = {_np.maximum: _np.max, _np.minimum: _np.min, _np.multiply: _np.prod}[ufunc]
    if where is not True:
        fill = initial if ufunc.identity is None else ufunc.identity  # NumPy needs one of them
        x = _np.where(where, x, fill).astype(x.dtype)
    keywords = {} if dtype is None else {"dtype": dtype}
    out = function(x, axis=axis, keepdims=keepdims, **keywords)
    return out if initial is NO_VALUE else ufunc(out, initial).astype(out.dtype)


max = _extremum(_np.maximum.reduce, "max")
min = _extremum(_np.minimum.reduce, "min")
amax = max
amin = min


# --- prod -----------------------------------------------------------------------------------------


def _product_of_others(x, axes):
    """For each element, the product of the other elements in its reduction group.

    `ans / x` would be the short way, but it is nan where x is 0, wrong where the product
    underflows, and its derivative cancels catastrophically for tiny x. So it is taken as
    (product of the elements before) * (product of the elements after), both by exclusive
    scans made of multiplications only: exact at zeros and differentiable to every order.
    """
    x_shape = shape_of(x)
    rest = [i for i in range(len(x_shape)) if i not in axes]
    order = rest + list(axes)
    lead_shape = tuple(x_shape[i] for i in rest)
    n = int(_np.prod([x_shape[i] for i in axes], dtype=_np.int64))
    if n == 0:
        return _np.zeros(x_shape, dtype=dtype_of(x))
    flat = reshape(transpose(x, order), lead_shape + (n,))
    before = _exclusive_cumprod(flat)
    after = _exclusive_cumprod(flat[..., ::-1])[..., ::-1]
    moved_shape = lead_shape + tuple(x_shape[i] for i in axes)
    return transpose(reshape(before * after, moved_shape), tuple(_np.argsort(order)))


def _shifted(p, k, fill):
    """p moved k places along its last axis, with `fill` (1 or 0) coming in at the start."""
    n = shape(p)[-1]
    if k >= n:
        return _np.full(shape(p), fill, dtype=dtype_of(p))
    pad = _np.full(shape(p)[:-1] + (k,), fill, dtype=dtype_of(p))
    return _chunked_like(concatenate([pad, p[..., : n - k]], axis=-1), p)


def _chunked_like(a, p):
    """a with p's chunks, when both are chunked arrays of another library (Dask). A shift by k
    moves every chunk boundary by k, and a scan's product of p and its shift has the
    boundaries of both: over the log2(n) doubling steps they would add up to O(n) chunks (and
    tasks) for n elements along the axis. A traced value (a derivative's under `jit`, or a
    higher one's) is rechunked by `rechunk_p`, an operation the record replays."""
    if type(a) is _np.ndarray:
        return a
    if type(a) is Box:
        chunks = getattr(_core.innermost(p), "chunks", None)
        if chunks is None or not _core.is_foreign_array(_core.innermost(a)):
            return a
        return rechunk_p(a, chunks=chunks)
    if not _core.is_foreign_array(a):
        return a
    chunks = getattr(p, "chunks", None)
    return a if chunks is None or a.chunks == chunks else a.rechunk(chunks)


def _exclusive_cumprod(a):
    """[1, a0, a0 a1, ..., a0 ... a_{n-2}] along the last axis, in log2(n) doubling steps."""
    n = shape(a)[-1]
    p, k = _shifted(a, 1, 1), 1
    while k < n:
        p, k = p * _shifted(p, k, 1), 2 * k
    return p


def _linear_recurrence(a, b, weighted=None):
    """h with h_i = b_i + a_i h_{i-1} (h_{-1} = 0) along the last axis, in log2(n) doubling
    steps of multiplications and additions only (no division: exact at zeros, to every order).
    Returns (h, the running `weighted`).

    `weighted` is given when a may hold an inf or a nan: a mask of the terms b_i that enter h
    (h is a derivative; b_i's weight, a tangent or a cotangent, is not 0). Where no such term
    reaches h_{i-1}, a_i h_{i-1} is 0 even for an infinite a_i (`_weighted_product`). Where
    one does, the product is kept as it is, nan for 0 * inf: then h_{i-1} is 0 because of a
    zero element of x, and the term is a product of x's elements with 0 and inf in it, as
    `prod`'s derivative is. (Reading "h_{i-1} == 0" as "no term" gave 0 there.) The running
    `weighted` marks the h_i that some weighted term reaches.

    After the step with shift k, (A_i, B_i) is the affine map h_{i-2k} -> h_i, so composing
    it with the map k places before doubles the window; B_i is h_i once the window covers i.
    """
    n = shape(b)[-1]
    k = 1
    while k < n:
        earlier = _shifted(b, k, 0)
        if weighted is None:
            b = b + a * earlier
        else:  # a * earlier on both paths: a complex product is not bitwise commutative
            earlier_weighted = _shifted(weighted, k, False)
            b = b + _weighted_product(a * earlier, earlier_weighted, a)
            weighted = _np.logical_or(weighted, earlier_weighted)
        if 2 * k < n:
            a = a * _shifted(a, k, 1)
        k *= 2
    return b, weighted


def _weighted_product(product, weighted, factor):
    """product (of factor and something with a weight), with 0 where `weighted` is False and
    factor is not finite: there the weight is 0, and 0 * inf would put a nan in a derivative
    that has none. The caller forms the product in the operand order of its plain path, so
    both give the same bits."""
    unweighted = _np.logical_and(
        _np.logical_not(weighted), logical_not(isfinite(mask_values(factor)))
    )
    return _where(unweighted, _np.zeros((), dtype_of(product)), product)


# prod(x) = initial * x_0 * x_1 * ... over the True elements of the mask (x is given 1 where
# the mask is False, so the product of the others needs no mask): its derivative in x_i is
# initial times the product of the others. The value is NumPy's `multiply.reduce` with the
# same keywords; `dtype` is where the product is taken.


def _prod_impl(x, axis, keepdims, dtype, initial, where):
    if _core.is_foreign_array(x):
        return _foreign_reduce(x, _np.multiply.reduce, axis, keepdims, dtype, initial, where)
    keywords = {} if initial is NO_VALUE else {"initial": initial}
    return _np.multiply.reduce(
        x, axis=axis, dtype=dtype, keepdims=keepdims, where=where, **keywords
    )


def _others(x, axis, initial):
    others = _product_of_others(x, axis)
    return others if initial is NO_VALUE else others * array_value(initial)


def _times_others(w, others):
    """w * others, where a zero weight gives 0 even against an infinite product of others.

    A weight of 0 means that element's derivative does not enter (another column of a
    Jacobian, a direction along other inputs): 0 * inf would put a nan there that the
    derivative does not have. Only those entries are masked, so a weight that is zero in
    value but carries derivatives (the traced `initial`'s term) keeps them wherever the
    product of the others is finite."""
    infinite = logical_not(isfinite(mask_values(others)))
    if may_hold(infinite):
        return _masked_product(w, others, infinite)
    return w * others


def _masked_product(w, others, infinite=None):
    """w * others, but 0 where w is 0 and others is not finite (see `_times_others`);
    `infinite`: that mask of others, when the caller has it."""
    product = w * others
    if infinite is None:
        infinite = logical_not(isfinite(mask_values(others)))
    unweighted = _np.logical_and(infinite, _np.equal(mask_values(w), 0))
    return _where(unweighted, _np.zeros((), dtype_of(product)), product)


def _prod_vjp(ans, x, axis, keepdims, dtype, initial, where):
    x_shape, x_dtype = shape_of(x), dtype_of(x)
    kept = _kept_shape(x_shape, axis)
    others = _others(x, axis, initial)
    return lambda ct: astype(_times_others(reshape(ct, kept), others), x_dtype)


def _prod_jvp(t, ans, x, axis, keepdims, dtype, initial, where):
    t = sum(_times_others(t, _others(x, axis, initial)), axis=axis, keepdims=keepdims)
    return astype(t, dtype_of(ans))


_prod_p = defprimitive(
    _prod_impl, vjp=_prod_vjp, jvp=_prod_jvp, name="prod", forward="speed", sparsity="reduces"
)
register_rules(_prod_p, batch=_reduction_batch(_prod_p))


def _prod(a, axis, dtype, out, keepdims, initial, where):
    refuse_out(out, "prod")
    s = shape(a)
    axes = _normalize_axes(axis, len(s), s, ufunc=True)
    mask = reduction_mask(where, a, "prod")
    if mask is not True:  # 1 where the mask is False: no effect, and no gradient there
        one = _np.ones((), dtype_of(a))
        a = _where(mask, a, one)  # (not `at(a)[~mask].set`: a Dask array has no item assignment)
    keep, dt = _keepdims(keepdims), None if dtype is None else _np.dtype(dtype)
    if dt is not None and dt.kind in "biu":
        a, initial = without_derivatives(a, initial, dt)

    # (a lazy mask, an operand, is not a parameter: its ones above already leave it out)
    kept = True if type(mask) is Box else mask

    def product(start):
        return _prod_p(a, axis=axes, keepdims=keep, dtype=dt, initial=start, where=kept)

    if type(initial) is not Box:
        return product(primal(initial))
    if _core.holds_batch(initial):  # one initial per row: a factor of the product
        rest = product(NO_VALUE)
        value = astype(rest * constant_of(initial), dtype_of(rest))
    else:
        value = product(primal(initial))  # NumPy's own value
    # The derivatives are those of the product with the initial as one more factor of each
    # group, so that it is differentiated as the elements are (the product of the others,
    # inf included, and 0 * inf kept out where a derivative does not enter); the value
    # stays the one above. (Scaling the product without the initial by it differentiated x
    # through a constant initial, and masked d/d initial to 0 where that product is inf.)
    factors = _with_initial_factor(astype(a, dtype_of(value)), axes, keep, initial)
    return constant_of(value) + zero_with_derivatives_of(factors)


def _with_initial_factor(a, axes, keepdims, initial):
    """prod of a over `axes`, with `initial` (a traced scalar) one more factor of each group."""
    return _reduced_with_initial(_prod_p, a, axes, keepdims, initial, True, dtype=None)


prod = variant(
    sum,
    "prod",
    _prod,
    """NumPy's `prod` with `axis`, `dtype`, `keepdims`, `initial` (a constant, or a traced
    scalar, differentiable) and `where` (a constant mask); exact at zeros to every order.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.prod(x, initial=2.0))(np.array([3.0, 0.0]))
    array([0., 6.])
    """,
)


__all__ = exported(globals())
