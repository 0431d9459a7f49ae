"""Set routines (NumPy's "Set routines"): `isin`, `intersect1d`, `setdiff1d`, `setxor1d`,
`union1d`, and NumPy 2's `unique_all`, `unique_counts`, `unique_inverse`, `unique_values`.

`isin` answers a question about values (a boolean array), so it has no derivative: NumPy's own
function applied to plain values. The others return elements of their inputs, and those are
differentiable as `unique`'s are: each output element is gathered from the input element NumPy's
algorithm takes it from (for `unique`, its first occurrence; for `intersect1d`, its occurrence in
`ar1`), so the gradient of an output element goes to that one input element. They follow
NumPy's own steps (unique, concatenate, stable sort, a mask of neighbours), written with fgrad's
operations: the values and dtypes are NumPy's, and under `vmap` rows whose results have
different lengths run apart (`vmap` stacks rows, so such rows must end in results of one shape,
a sum for example); under `jit` the lengths are guards of the record. The indices and counts
they return are integers, constants at every level.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`,
`fgrad.numpy.elementwise`, `fgrad.numpy.arrays`, `fgrad.numpy.statistics`.
"""

from typing import Any

import numpy as _np

from .. import core as _core
from ..core import bind, constant_of, dtype_of, primal
from ..primitive import nondiff, register_rules
from ..protocols import refuse_lazy
from ._mirror import exported, mirror
from .arrays import argsort, unique
from .elementwise import equal, logical_and, logical_not, not_equal
from .shaping import (
    asarray,
    astype,
    batch_to_front,
    concatenate,
    describe,
    every_row,
    getitem,
    ravel,
    reshape,
    shape,
    sum as _sum,
)
from .statistics import any as _any

# NumPy's named tuples of the unique_* functions, so that results unpack and read alike
_UniqueAll = type(_np.unique_all(_np.zeros(1)))
_UniqueCounts = type(_np.unique_counts(_np.zeros(1)))
_UniqueInverse = type(_np.unique_inverse(_np.zeros(1)))


# --- isin: no derivative --------------------------------------------------------------------------


def _isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    kind: Any = None,  # (str | None: checked by NumPy, or by _check_kind)
) -> Any:
    """NumPy's `isin`. `kind` picks NumPy's algorithm, never the answer, and another library's
    isin (Dask's) takes none: with an array of another library it is checked as NumPy checks
    it (without reading values), then left out."""
    if kind is None:
        return _np.isin(element, test_elements, assume_unique=assume_unique, invert=invert)
    if _core.is_foreign_array(element) or _core.is_foreign_array(test_elements):
        _check_kind(kind, element, test_elements)
        return _np.isin(element, test_elements, assume_unique=assume_unique, invert=invert)
    return _np.isin(element, test_elements, assume_unique=assume_unique, invert=invert, kind=kind)


def _check_kind(kind: str, element: Any, test_elements: Any) -> None:
    """NumPy's checks of isin's `kind`: a known name, and 'table' only for integer and
    boolean arrays."""
    if kind not in ("sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    if kind == "table" and any(dtype_of(x).kind not in "uib" for x in (element, test_elements)):
        raise ValueError(
            "isin: kind='table' works only on integer and boolean arrays, got element of "
            f"{describe(element)} and test_elements of {describe(test_elements)}; leave kind "
            "out or pass kind='sort'"
        )


_isin_p = nondiff(_isin, "isin")


@mirror("function")
def isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    kind: str | None = None,
) -> Any:
    """NumPy's `isin`, declared without a derivative: whether each element of `element` is
    among `test_elements` (a boolean array shaped like `element`).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.isin(np.array([1.0, 2.0, 3.0]), [3.0, 1.0])
    array([ True, False,  True])
    >>> fgrad.grad(lambda x: fnp.sum(fnp.where(fnp.isin(x, [2.0]), 0.0, x ** 2)))(
    ...     np.array([1.0, 2.0, 3.0]))
    array([2., 0., 6.])
    """
    return _isin_p(element, test_elements, assume_unique=assume_unique, invert=invert, kind=kind)


isin.primitive = _isin_p  # type: ignore[attr-defined]  # what the batching rules know it by


def _isin_batch(args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
    """Rows of `element` against one `test_elements`: isin is elementwise in `element`, one
    call. Rows of `test_elements` too: each row's elements compared with each of its row's
    test elements, all rows at once (equality is NumPy's test, NaN in none)."""
    (x, t), (dx, dt) = args, dims
    if dt is None:
        return bind(_isin_p, (x, t), params), dx
    n = shape(t)[dt]
    x = every_row(asarray(x), dx, n)
    tests = reshape(batch_to_front(t, dt), (n,) + (1,) * (len(shape(x)) - 1) + (-1,))
    found = _any(equal(reshape(x, shape(x) + (1,)), tests), axis=-1)
    return (logical_not(found) if params["invert"] else found), 0


register_rules(_isin_p, batch=_isin_batch)


# --- the set operations: elements of the inputs, differentiable -----------------------------------


def _kept(values: Any, mask: Any) -> Any:
    """values[mask] for a 1-d constant mask. Under `vmap` the kept elements of each row are
    found by a stable argsort of the mask, so only their number is read (rows that differ in
    it run apart), not the mask itself (which would split rows that keep other positions)."""
    if not _core.holds_batch(mask):
        return getitem(values, mask)
    count = int(primal(_sum(astype(mask, _np.intp))))
    return getitem(values, argsort(logical_not(mask), kind="stable")[:count])


def _not_lazy(name: str, *arrays: Any) -> None:
    """The set operations sort values and compare neighbours: a lazy (Dask) array would be
    computed, so it is refused, as `unique` refuses one."""
    refuse_lazy(name, "it sorts the values to find equal ones", *map(_core.innermost, arrays))


def _sorted_stably(values: Any) -> tuple[Any, Any]:
    """values gathered into stably sorted order, and the order (from its constant values)."""
    order = argsort(constant_of(values), kind="stable")
    return getitem(values, order), order


@mirror("function")
def union1d(ar1: Any, ar2: Any) -> Any:
    """NumPy's `union1d`: the sorted unique elements of both, each gathered from its first
    occurrence in `ar1` then `ar2` (as `unique` of their concatenation).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.union1d(np.array([3.0, 1.0]), np.array([1.0, 2.0]))
    array([1., 2., 3.])
    >>> fgrad.grad(lambda x: fnp.sum(fnp.union1d(x, np.array([1.0, 2.0])) ** 2))(
    ...     np.array([3.0, 1.0]))
    array([6., 2.])
    """
    _not_lazy("union1d", ar1, ar2)
    return unique(concatenate((ar1, ar2), axis=None))


@mirror("function")
def intersect1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False
) -> Any:
    """NumPy's `intersect1d`: the sorted elements in both, gathered from `ar1` (with
    `return_indices`, also the indices of those elements in the flattened `ar1` and `ar2`,
    constants).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.intersect1d(np.array([3.0, 1.0, 2.0]), np.array([2.0, 3.0, 5.0]))
    array([2., 3.])
    >>> fgrad.grad(lambda x: fnp.sum(fnp.intersect1d(x, x[:2]) ** 2))(np.array([3.0, 1.0, 2.0]))
    array([6., 2., 0.])
    """
    _not_lazy("intersect1d", ar1, ar2)
    if not assume_unique:
        if return_indices:
            ar1, ind1 = unique(ar1, return_index=True)
            ar2, ind2 = unique(ar2, return_index=True)
        else:
            ar1, ar2 = unique(ar1), unique(ar2)
    else:
        ar1, ar2 = ravel(asarray(ar1)), ravel(asarray(ar2))
    aux, order = _sorted_stably(concatenate((ar1, ar2)))
    same = constant_of(aux)
    mask = equal(same[1:], same[:-1])
    both = _kept(aux[:-1], mask)  # the first of each equal pair: ar1's element
    if not return_indices:
        return both
    n1 = shape(ar1)[0]
    in1 = _kept(order[:-1], mask)
    in2 = _kept(order[1:], mask) - n1
    if not assume_unique:
        in1, in2 = getitem(ind1, in1), getitem(ind2, in2)
    return both, in1, in2


@mirror("function")
def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    """NumPy's `setdiff1d`: the unique elements of `ar1` (all of its elements, in order, with
    `assume_unique`) that are not in `ar2`, each gathered from its first occurrence in `ar1`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.setdiff1d(np.array([3.0, 1.0, 2.0]), np.array([2.0]))
    array([1., 3.])
    >>> fgrad.grad(lambda x: fnp.sum(fnp.setdiff1d(x, np.array([2.0])) ** 2))(
    ...     np.array([3.0, 1.0, 2.0]))
    array([6., 2., 0.])
    """
    _not_lazy("setdiff1d", ar1, ar2)
    if assume_unique:
        ar1 = ravel(asarray(ar1))
    else:
        ar1, ar2 = unique(ar1), unique(ar2)
    return _kept(ar1, isin(constant_of(ar1), constant_of(ar2), assume_unique=True, invert=True))


@mirror("function")
def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    """NumPy's `setxor1d`: the sorted unique elements that are in exactly one of the arrays,
    each gathered from its first occurrence.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.setxor1d(np.array([3.0, 1.0, 2.0]), np.array([2.0, 5.0]))
    array([1., 3., 5.])
    >>> fgrad.grad(lambda x: fnp.sum(fnp.setxor1d(x, np.array([2.0, 5.0])) ** 2))(
    ...     np.array([3.0, 1.0, 2.0]))
    array([6., 2., 0.])
    """
    _not_lazy("setxor1d", ar1, ar2)
    if not assume_unique:
        ar1, ar2 = unique(ar1), unique(ar2)
    aux = concatenate((ar1, ar2), axis=None)
    if shape(aux)[0] == 0:
        return aux
    aux, _ = _sorted_stably(aux)
    values = constant_of(aux)
    differs = not_equal(values[1:], values[:-1])
    edge = _np.ones(1, bool)
    after = concatenate((edge, differs))  # unlike the element before it
    before = concatenate((differs, edge))  # unlike the element after it
    return _kept(aux, logical_and(after, before))


# --- NumPy 2's unique_* (the array API's): `unique` with its named tuples ------------------------


@mirror("function")
def unique_values(x: Any) -> Any:
    """NumPy's `unique_values`: the unique elements (NaNs apart), in an order of NumPy's own
    (it finds them by hashing); each gathered from its first occurrence, as `unique`'s.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> sorted(fnp.unique_values(np.array([2.0, 1.0, 2.0])).tolist())
    [1.0, 2.0]
    >>> fgrad.grad(lambda x: fnp.sum(fnp.unique_values(x) ** 2))(np.array([2.0, 1.0, 2.0]))
    array([4., 2., 0.])
    """
    return unique(x, equal_nan=False, sorted=False)


@mirror("function")
def unique_counts(x: Any) -> Any:
    """NumPy's `unique_counts`: the sorted unique elements (differentiable, as `unique`'s) and
    how many times each occurs, as NumPy's named tuple `(values, counts)`.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.unique_counts(np.array([2.0, 1.0, 2.0])).counts
    array([1, 2])
    """
    return _UniqueCounts(*unique(x, return_counts=True, equal_nan=False))


@mirror("function")
def unique_inverse(x: Any) -> Any:
    """NumPy's `unique_inverse`: the sorted unique elements (differentiable, as `unique`'s) and
    the index of each element of `x` among them, shaped like `x`, as NumPy's named tuple
    `(values, inverse_indices)`.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.unique_inverse(np.array([2.0, 1.0, 2.0])).inverse_indices
    array([1, 0, 1])
    """
    return _UniqueInverse(*unique(x, return_inverse=True, equal_nan=False))


@mirror("function")
def unique_all(x: Any) -> Any:
    """NumPy's `unique_all`: `(values, indices, inverse_indices, counts)`, NumPy's named tuple;
    the values are differentiable, as `unique`'s, the rest are integers.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.unique_all(np.array([2.0, 1.0, 2.0])).indices
    array([1, 0])
    """
    return _UniqueAll(
        *unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    )


__all__ = exported(globals())
