"""NumPy's `histogram_bin_edges`, `histogram2d` and `histogramdd`.

The counts are piecewise constant in the sample: they have no derivative in it. The weighted
counts are linear in the weights (each weight adds to its bin). The edges are NumPy's: given
edges are returned as they are (differentiable in themselves), and equal-width edges are
`linspace(lo, hi, n + 1)` between the given range or the sample's min and max, so they, the
bin widths and the densities, are differentiable in the sample through its min and max.
`histogram`'s counts are NumPy's own histogram of the values (`statistics.weighted_histogram`,
linear in the weights), and its edges these.

Each is NumPy's steps written in fgrad operations (`linspace`, `min`, `max`, `searchsorted`,
`bincount`), so every transform applies: the bins of the points are found by `searchsorted` on
each row's edges, and each row's weights are summed into its bins (by `bincount`, or, when the
sample itself is batched by vmap, by a sum over a one-hot table of the bins).

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`, `fgrad.numpy.arrays`,
`fgrad.numpy.statistics`, `fgrad.numpy.creation`, `fgrad.numpy.reductions`,
`fgrad.numpy.signal`.
"""

import builtins as _builtins
import operator as _operator
from collections.abc import Sequence
from typing import Any

import numpy as _np

from .. import core as _core
from ..core import constant_of, dtype_of, primal
from ._mirror import exported, mirror
from ._values import is_true
from .arrays import searchsorted
from .creation import linspace
from .elementwise import equal, isfinite, less, logical_and, where
from .reductions import max as _max, min as _min
from .shaping import (
    asarray,
    astype,
    describe,
    expand_dims,
    is_traced,
    ndim,
    numpy_applies,
    read_int,
    reshape,
    result_type,
    shape,
    stack,
    sum,
    transpose,
    zero_with_derivatives_of,
)
from .signal import diff
from .statistics import any as _any, bincount, weighted_histogram

_READS = "the bins of the points and the range of the sample are read from the values"


def _is_true(x: Any) -> bool:
    return is_true(x, "histogram", _READS)


def _refuse_lazy(name: str, *xs: Any) -> None:
    for x in xs:
        if isinstance(x, (list, tuple)):
            _refuse_lazy(name, *x)
        else:
            _core.refuse_lazy(name, _READS, _core.innermost(x))


def _plain(x: Any) -> Any:
    """x's values for NumPy's checks and estimators (None for a batched x)."""
    if x is None or _core.holds_batch(x):
        return None
    return _np.asarray(primal(x)) if not isinstance(x, (list, tuple)) else [_plain(v) for v in x]


def _outer_edges(a: Any, range: Any, name: str) -> tuple[Any, Any]:
    """NumPy's `_get_outer_edges`: the given range, or a's min and max, widened by 0.5 each
    way when they are equal."""
    if range is not None:
        lo, hi = range
        # (only a traced end becomes an array: a Python float stays weak, as in NumPy, so a
        # float32 end keeps linspace in float32 as NumPy's does; so does one `jit` holds)
        lo, hi = (asarray(v) if is_traced(v) and not _is_number(v) else v for v in (lo, hi))
        if _is_true(lo > hi) if is_traced(lo) or is_traced(hi) else lo > hi:
            raise ValueError(f"{name}: max must be larger than min in range, got {range}")
        _check_finite(lo, hi, f"{name}: the supplied range", "pass a finite range")
    elif shape(a)[0] == 0:
        lo, hi = 0, 1
    else:
        lo, hi = _min(a), _max(a)
        what = f"{name}: the range of the values ({describe(a)})"
        _check_finite(lo, hi, what, "drop its nan and inf values, or pass range=(lo, hi)")
    if _is_true(lo == hi) if is_traced(lo) or is_traced(hi) else lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _is_number(x: Any) -> bool:
    """Whether x is a Python number, maybe held by `jit` as given (weakly typed)."""
    return type(_core.innermost(x)) in (int, float)


def _check_finite(lo: Any, hi: Any, what: str, instead: str) -> None:
    """NumPy's ValueError for a range with an infinite or nan end (read from the values: a
    `jit` record checks it at every replay)."""
    if is_traced(lo) or is_traced(hi):
        finite = _is_true(logical_and(isfinite(lo), isfinite(hi)))
    else:
        finite = bool(_np.isfinite(lo) and _np.isfinite(hi))
    if not finite:
        ends = [primal(e) if is_traced(e) else e for e in (lo, hi)]
        raise ValueError(f"{what}, [{ends[0]}, {ends[1]}], is not finite; {instead}")


@mirror("function")
def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    """NumPy's `histogram_bin_edges`: given edges as they are, or n + 1 equal-width edges over
    `range` or a's min and max (n given, or chosen by NumPy's estimator named by a string).
    Differentiable in a (through its min and max), in given edges and in a traced range.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.histogram_bin_edges(np.array([0.0, 1.0, 3.0]), bins=3)
    array([0., 1., 2., 3.])
    >>> fgrad.grad(lambda a: fnp.histogram_bin_edges(a, bins=3)[1])(np.array([0.0, 1.0, 3.0]))
    array([0.66666667, 0.        , 0.33333333])
    """
    if numpy_applies(a, bins, range, weights):
        return _np.histogram_bin_edges(a, bins, range, weights)
    _refuse_lazy("histogram_bin_edges", a, bins, range, weights)
    a = asarray(a)
    if dtype_of(a) == _np.bool_:
        a = astype(a, _np.uint8)  # as NumPy does, so that the edges are floats, not bools
    if ndim(bins) == 1:
        edges = _plain(bins)  # (None for edges batched by vmap: one row's check would not do)
        if edges is not None:
            _np.histogram_bin_edges(_np.zeros(1), edges)  # NumPy's check: increasing
        return asarray(bins)
    if isinstance(bins, str):
        if _core.holds_batch(a):
            raise TypeError(
                f"histogram_bin_edges: bins={bins!r} chooses the number of bins from each row's "
                f"values, and a is batched by vmap ({describe(a)}); pass a number of bins"
            )
        plain_range = None if range is None else (float(primal(range[0])), float(primal(range[1])))
        n = _np.histogram_bin_edges(_plain(a), bins, plain_range, _plain(weights)).size - 1
    else:
        try:
            n = _operator.index(bins)
        except TypeError:
            raise TypeError(
                f"histogram_bin_edges: bins must be an integer, a string or a 1-D "
                f"array of edges, got {bins!r}"
            ) from None
        if n < 1:
            raise ValueError(f"histogram_bin_edges: bins must be positive, got {n}")
    flat = reshape(a, (-1,))
    lo, hi = _outer_edges(flat, range, "histogram_bin_edges")
    bin_type = result_type(lo, hi, a)
    if _np.issubdtype(bin_type, _np.integer):
        bin_type = _np.result_type(bin_type, float)
    return linspace(lo, hi, n + 1, endpoint=True, dtype=bin_type)


@mirror("function")
def histogram(
    a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Any, Any]:
    """NumPy's `histogram`. The weighted counts are differentiable in `weights` (the counts of
    `a` have no derivative: they are piecewise constant in it); the edges are
    `histogram_bin_edges`', differentiable in given edges, in a traced range and in `a`
    through its min and max, and so are the densities of `density=True` (the weighted counts
    divided by their sum and the bin widths, as NumPy computes them). The counts are NumPy's
    own, of the values of `a`, `bins` and `range`: under `jit` they are read (guards).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> a = np.array([0.1, 0.4, 0.45, 0.9])
    >>> fgrad.grad(lambda w: fnp.histogram(a, bins=2, range=(0, 1), weights=w)[0][0])(np.ones(4))
    array([1., 1., 1., 0.])
    >>> fgrad.grad(lambda a: fnp.histogram(a, bins=2)[1][1])(a)  # the middle edge
    array([0.5, 0. , 0. , 0.5])
    """
    if numpy_applies(a, bins, range, weights):
        return _np.histogram(a, bins, range, density, weights)
    _refuse_lazy("histogram", a, bins, range)  # (lazy weights are summed lazily)
    plain_bins = _np.asarray(primal(bins)) if is_traced(bins) else bins
    plain_range = primal(range) if is_traced(range) else range
    hist, edges = weighted_histogram(a, plain_bins, plain_range, weights)
    if is_traced(a) or is_traced(bins) or is_traced(range):
        # NumPy's edges, with the derivatives of `histogram_bin_edges`' (its values are
        # NumPy's too, but for a float32 range they may round otherwise in the last bit)
        edges = edges + zero_with_derivatives_of(histogram_bin_edges(a, bins, range))
    if density:
        widths = astype(diff(edges), float)
        hist = hist / widths / sum(hist)
    return hist, edges


def _as_columns(sample: Any) -> Any:
    """NumPy's (N, D) reading of a sample: an (N, D) array as it is; anything else, D
    sequences of N values (N values: D = 1), as NumPy's atleast_2d(sample).T. (A list of
    numbers, which `jit` gives as a list of traced ones, is N points of one dimension.)"""
    if isinstance(sample, (list, tuple)):
        sample = stack([asarray(s) for s in sample])
    elif ndim(sample) == 2:
        return asarray(sample)
    s = asarray(sample)
    return transpose(reshape(s, (1, -1)) if ndim(s) < 2 else s)


@mirror("function")
def histogramdd(
    sample: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Any, Sequence[Any]]:
    """NumPy's `histogramdd`: (counts of the D-dimensional sample in each bin, the D arrays of
    edges). Differentiable in `weights` (linearly), in given edges, and in the sample through
    equal-width edges (and so in the density); the counts have no derivative in the sample.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> s = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    >>> fnp.histogramdd(s, bins=2, weights=np.array([1.0, 2.0, 3.0]))[0]
    array([[1., 0.],
           [3., 2.]])
    """
    if numpy_applies(sample, bins, range, weights):
        return _np.histogramdd(sample, bins, range, density, weights)
    _refuse_lazy("histogramdd", sample, bins, range)  # (lazy weights are summed lazily)
    return _histogramdd(sample, bins, range, density, weights, "histogramdd")


def _histogramdd(
    sample: Any, bins: Any, range: Any, density: Any, weights: Any, name: str
) -> tuple[Any, list[Any]]:
    s = _as_columns(sample)
    n_points, d = shape(s)
    if weights is not None:
        weights = asarray(weights)
        if shape(weights) != (n_points,):
            raise ValueError(
                f"{name}: weights must hold one weight per point, shape ({n_points},); got "
                f"{describe(weights)}"
            )
        if dtype_of(weights).kind == "c":
            raise TypeError(f"{name}: weights must be real, got {describe(weights)}")
    try:
        m = len(bins)
        if m != d:
            raise ValueError(
                f"{name}: bins has {m} entries for a sample of dimension {d}; pass one per "
                "dimension, or a single number of bins"
            )
        per_dim = list(bins)
    except TypeError:
        per_dim = [bins] * d
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"{name}: range has {len(ranges)} entries for {d} dimensions")
    edges, counts_at = [], []
    for i in _builtins.range(d):
        col = s[:, i]
        b = read_int(per_dim[i])  # (a traced count, a `jit` argument: its value, guarded)
        if _np.ndim(b) == 0 and not is_traced(b):
            if _operator.index(b) < 1:
                raise ValueError(f"{name}: bins[{i}] must be a positive integer, got {b}")
            lo, hi = _outer_edges(col, ranges[i], name)
            e = linspace(lo, hi, _operator.index(b) + 1)
        else:
            e = asarray(b)
            if ndim(e) != 1:
                raise ValueError(f"{name}: bins[{i}] must be 1-D edges, got {describe(e)}")
            if _is_true(_any(less(diff(constant_of(e)), 0))):
                raise ValueError(
                    f"{name}: bins[{i}] must increase monotonically, got {describe(e)} with a "
                    "decreasing step; sort the edges"
                )
        edges.append(e)
        # the bin of each point, as NumPy finds it (a point on the last edge is in the last
        # bin); 0 and len(e) are the bins outside
        ce, cc = constant_of(e), constant_of(col)
        k = searchsorted(ce, cc, side="right")
        counts_at.append(k - astype(equal(cc, ce[-1]), dtype_of(k)))
    nbin = [shape(e)[0] + 1 for e in edges]
    flat_index = counts_at[0]
    for i in _builtins.range(1, d):
        flat_index = flat_index * nbin[i] + counts_at[i]
    total = int(_np.prod(nbin))
    w = None if weights is None else astype(weights, _np.float64)  # NumPy's sums are float64
    if not _core.holds_batch(flat_index):
        hist = bincount(_np.asarray(primal(flat_index)), w, minlength=total)
        hist = astype(hist, _np.float64) if w is None else hist
    else:
        onehot = equal(expand_dims(flat_index, -1), _np.arange(total))
        ones = _np.ones(n_points) if w is None else w
        hist = sum(where(onehot, expand_dims(ones, -1), 0.0), axis=0)
    hist = reshape(hist, tuple(nbin))[(slice(1, -1),) * d]
    if density:
        s_total = sum(hist)
        for i in _builtins.range(d):
            along_i = tuple(nbin[i] - 2 if j == i else 1 for j in _builtins.range(d))
            hist = hist / reshape(diff(edges[i]), along_i)
        hist = hist / s_total
    return hist, edges


@mirror("function")
def histogram2d(
    x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Any, Any, Any]:
    """NumPy's `histogram2d`: (counts, x edges, y edges), differentiable as `histogramdd`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> x, y = np.array([0.0, 1.0, 1.0]), np.array([0.0, 1.0, 0.0])
    >>> w = np.array([1.0, 2.0, 3.0])
    >>> fgrad.grad(lambda w: fnp.histogram2d(x, y, bins=2, weights=w)[0][1, 0])(w)
    array([0., 0., 1.])
    """
    if numpy_applies(x, y, bins, range, weights):
        return _np.histogram2d(x, y, bins, range, density, weights)
    _refuse_lazy("histogram2d", x, y, bins, range)  # (lazy weights are summed lazily)
    if len(shape(x)) != 1 or shape(x) != shape(y):
        raise ValueError(
            f"histogram2d: x and y must be 1-D and have the same length (one point each), got "
            f"x of {describe(x)} and y of {describe(y)}"
        )
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [bins, bins]  # one array of edges, for both
    hist, edges = _histogramdd([x, y], bins, range, density, weights, "histogram2d")
    return hist, edges[0], edges[1]


__all__ = exported(globals())
