"""NumPy's indexing routines that pick or place values: `choose`, `compress`, `extract`,
`piecewise`, and the in-place updates `put`, `place`, `put_along_axis`, `fill_diagonal`.

Every differentiable function here is a gather (`take`, `take_along_axis`, indexing) and a
`where`, so it has every rule with none of its own. Which element goes where is worked out by
NumPy itself on an array of element numbers: `put(a, ind, v)` becomes NumPy's `put` of the
numbers of v's elements into an array of -1, and then each element of the result is v's
element of that number, or a's where the number is -1. So every mode, every repeated index
(the last one wins, as in NumPy) and every error is NumPy's.

NumPy's `put`, `place`, `put_along_axis` and `fill_diagonal` write into their first argument
and return None. They do so here on plain arrays (`inplace=True`, the default, as in JAX's
signatures). A traced array cannot be written into, and a plain array cannot hold a traced
value: with either, `inplace=True` raises a TypeError that names the functional form,
`inplace=False`, which returns the updated array as a new value and is differentiable in the
array and the values.

Imports: `fgrad.core`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`, `fgrad.numpy.arrays`,
`fgrad.numpy.statistics`.
"""

import collections.abc as _abc
import math as _math
from typing import Any

import numpy as _np

from ..core import constant_of, dtype_of, primal, refuse_lazy
from ._values import constant_values, numpy_applies
from .arrays import take, take_along_axis
from .elementwise import logical_not, where
from .shaping import (
    asarray,
    astype,
    broadcast_to,
    describe,
    getitem,
    is_traced,
    ndim,
    ravel,
    refuse_out,
    reshape,
    shape,
    stack,
    zeros_like,
)
from .statistics import any as _any

__all__ = [
    "choose",
    "compress",
    "extract",
    "fill_diagonal",
    "piecewise",
    "place",
    "put",
    "put_along_axis",
]


def _placed(a: Any, source: Any, values: Any) -> Any:
    """a with each element where `source` (an int array of a's shape) is k >= 0 replaced by
    the k-th element of the flattened values, cast to a's dtype as NumPy's assignment does."""
    a = asarray(a)
    chosen = source >= 0
    if not chosen.any():
        return a
    flat = astype(ravel(asarray(values)), dtype_of(a))
    return where(chosen, take(flat, _np.where(chosen, source, 0)), a)


def _in_place(name: str, target: Any, values: Any, update: Any, **plain: Any) -> None:
    """NumPy's in-place update on plain arrays, refused for traced ones."""
    for arg, v in (("a", target), ("values", values)):
        if is_traced(v):
            raise TypeError(
                f"{name} writes into its array, and {arg} is traced ({describe(v)}): traced "
                f"arrays are values that cannot be written into or written to a plain array. "
                f"Use the functional form, which returns the updated array: "
                f"y = fgrad.numpy.{name}(..., inplace=False)"
            )
    update(target, values, **plain)


def put(a: Any, ind: Any, v: Any, mode: str = "raise", *, inplace: bool = True) -> Any:
    """NumPy's `put`: a.flat[ind] = v (v repeated as needed; `mode` for out-of-range indices).
    In place on a plain array; with `inplace=False` the updated array is returned, as a new
    value differentiable in a and v.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.put(np.zeros(4), [0, 2], [5.0, 6.0], inplace=False)
    array([5., 0., 6., 0.])
    >>> fgrad.grad(lambda v: fnp.sum(fnp.put(np.zeros(4), [0, 2], v, inplace=False) ** 2))(
    ...     np.array([5.0, 6.0]))
    array([10., 12.])
    """
    if inplace:
        return _in_place("put", a, v, lambda t, w: _np.put(t, ind, w, mode))
    ind = constant_values(ind, "put", "ind")
    n_v = int(_np.prod(shape(v), dtype=int))
    source = _np.full(shape(a), -1, dtype=_np.intp)
    if n_v:
        _np.put(source, ind, _np.arange(n_v), mode)
    return _placed(a, source, v)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """NumPy's `place`: the elements of arr where mask is true get the values of vals in turn
    (repeated as needed). In place on a plain array; with `inplace=False` the updated array is
    returned, as a new value differentiable in arr and vals.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.place(np.arange(4.0), np.array([1, 0, 1, 1]), [9.0, 8.0], inplace=False)
    array([9., 1., 8., 9.])
    """
    if inplace:
        return _in_place("place", arr, vals, lambda t, w: _np.place(t, mask, w))
    mask = constant_values(mask, "place", "mask")
    source = _np.full(shape(arr), -1, dtype=_np.intp)
    _np.place(source, mask, _np.arange(int(_np.prod(shape(vals), dtype=int))))
    return _placed(arr, source, vals)


def put_along_axis(
    arr: Any, indices: Any, values: Any, axis: int | None, *, inplace: bool = True
) -> Any:
    """NumPy's `put_along_axis`: values put at `indices` along `axis` (as `take_along_axis`
    reads them). In place on a plain array; with `inplace=False` the updated array is
    returned, as a new value differentiable in arr and values.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> fnp.put_along_axis(a, np.array([[1], [0]]), 0.0, axis=1, inplace=False)
    array([[1., 0.],
           [0., 4.]])
    """
    if inplace:
        return _in_place(
            "put_along_axis", arr, values, lambda t, w: _np.put_along_axis(t, indices, w, axis)
        )
    indices = constant_values(indices, "put_along_axis", "indices")
    # NumPy places the numbers of the elements of values broadcast to the indexed shape
    source = _np.full(shape(arr), -1, dtype=_np.intp)
    probe = _np.zeros(shape(arr), dtype=bool)
    n = _np.take_along_axis(probe, indices, axis).shape
    values = _broadcast_values(values, n, "put_along_axis")
    _np.put_along_axis(source, indices, _np.arange(int(_np.prod(n))).reshape(n), axis)
    return _placed(arr, source, values)


def _broadcast_values(values: Any, to: tuple, name: str) -> Any:
    try:
        _np.broadcast_shapes(shape(values), to)
    except ValueError:
        raise ValueError(
            f"{name}: values ({describe(values)}) do not broadcast to the indexed shape {to}"
        ) from None
    return broadcast_to(asarray(values), to)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """NumPy's `fill_diagonal`: the main diagonal of a (all axes of equal length, or a tall
    matrix, `wrap` as NumPy's) set to val, repeated as needed. In place on a plain array; with
    `inplace=False` the updated array is returned, as a new value differentiable in a and
    val.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.fill_diagonal(np.zeros((2, 2)), [1.0, 2.0], inplace=False)
    array([[1., 0.],
           [0., 2.]])
    """
    if inplace:
        return _in_place("fill_diagonal", a, val, lambda t, w: _np.fill_diagonal(t, w, wrap))
    source = _np.full(shape(a), -1, dtype=_np.intp)
    _np.fill_diagonal(source, _np.arange(max(int(_np.prod(shape(val), dtype=int)), 1)), wrap)
    return _placed(a, source, val)


# --- choosing values ------------------------------------------------------------------------------


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """NumPy's `choose`: result[i] = choices[a[i]][i], all broadcast together; `mode` 'raise',
    'wrap' or 'clip' for indices outside [0, n). Differentiable in the choices.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.choose(np.array([1, 0, 1]), [np.zeros(3), np.arange(3.0)])
    array([0., 0., 2.])
    """
    refuse_out(out, "choose")
    if numpy_applies(a, choices):
        return _np.choose(a, choices, mode=mode)
    index = constant_values(a, "choose", "a")
    choices = list(choices) if isinstance(choices, (list, tuple)) else list(asarray(choices))
    n = len(choices)
    if mode == "raise":
        if index.size and (index.min() < 0 or index.max() >= n):
            raise ValueError(
                f"choose: a holds indices outside [0, {n}) for {n} choices (its values run "
                f"from {index.min()} to {index.max()}); pass mode='wrap' or mode='clip'"
            )
    elif mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = _np.clip(index, 0, n - 1)
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    common = _np.broadcast_shapes(index.shape, *(shape(c) for c in choices))
    stacked = stack([broadcast_to(asarray(c), common) for c in choices])
    picked = take_along_axis(stacked, _np.broadcast_to(index, common)[None], 0)
    return reshape(picked, shape(picked)[1:])


def _flat_positions(condition: Any, name: str) -> Any:
    c = constant_values(condition, name, "condition")
    return _np.flatnonzero(_np.ravel(c))


def compress(condition: Any, a: Any, axis: int | None = None, out: Any = None) -> Any:
    """NumPy's `compress`: the slices of a along `axis` (of the flattened a when None) where the
    1-D condition is true. Differentiable in a.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.compress([True, False, True], np.arange(6.0).reshape(3, 2), axis=0)
    array([[0., 1.],
           [4., 5.]])
    """
    refuse_out(out, "compress")
    if numpy_applies(condition, a):
        return _np.compress(condition, a, axis)
    c = constant_values(condition, "compress", "condition")
    along = _math.prod(shape(a)) if axis is None else shape(a)[axis]
    # NumPy's own choice of positions (its errors for a too long condition included)
    positions = _np.compress(c, _np.arange(along))
    return take(a, positions, axis=axis)


def extract(condition: Any, arr: Any) -> Any:
    """NumPy's `extract`: the elements of the flattened arr where the flattened condition is
    nonzero. Differentiable in arr.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.extract(np.array([[1, 0], [0, 1]]), np.arange(4.0).reshape(2, 2))
    array([0., 3.])
    """
    if numpy_applies(condition, arr):
        return _np.extract(condition, arr)
    return take(ravel(arr), _flat_positions(condition, "extract"))


def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """NumPy's `piecewise`: where condlist[i] holds, funclist[i] applied to those elements of x
    (a constant instead of a function gives that value); one more function than conditions is
    for the elements where none holds; elsewhere 0. Differentiable in x and in whatever the
    functions close over; the conditions are constants.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.piecewise(x, [x < 0], [lambda v: -v, lambda v: v ** 2])
    >>> f(np.array([-2.0, 3.0]))
    array([2., 9.])
    >>> fgrad.grad(lambda x: fnp.sum(f(x)))(np.array([-2.0, 3.0]))
    array([-1.,  6.])
    """
    constants = [f for f in funclist if not callable(f)]
    if numpy_applies(x, condlist, constants, args, list(kw.values())):
        return _np.piecewise(x, condlist, funclist, *args, **kw)
    x = asarray(x)
    if _np.isscalar(condlist) or (
        not isinstance(condlist[0], (list, _np.ndarray))
        and not is_traced(condlist[0])
        and ndim(x) != 0
    ):
        condlist = [condlist]
    conds = [asarray(constant_of(c)) for c in condlist]
    conds = [c if dtype_of(c) == _np.dtype(bool) else astype(c, bool) for c in conds]
    n, n2 = len(conds), len(funclist)
    if n == n2 - 1:
        conds.append(logical_not(_any(stack(conds), axis=0)))
    elif n != n2:
        raise ValueError(
            f"piecewise: with {n} condition(s), either {n} or {n + 1} functions are expected; "
            f"got {n2}"
        )
    y = zeros_like(x)
    dtype = dtype_of(x)
    for cond, func in zip(conds, funclist):
        if not isinstance(func, _abc.Callable):
            y = where(cond, astype(asarray(func), dtype), y)
            continue
        # the mask's values (under vmap, the rows' common mask: rows whose masks differ are
        # run apart, as NumPy calls func on each row's selection): func gets x[mask], and its
        # values go back by a gather (no scatter: `where` keeps y elsewhere)
        mask = primal(cond)
        refuse_lazy("piecewise", "its conditions are read to select the elements", mask)
        mask = _np.broadcast_to(_np.asarray(mask, dtype=bool), shape(x))
        vals = getitem(x, mask)
        if _math.prod(shape(vals)) > 0:
            out = astype(asarray(func(vals, *args, **kw)), dtype)
            source = _np.zeros(shape(x), dtype=_np.intp)
            source[mask] = _np.arange(int(mask.sum()))
            y = where(mask, take(broadcast_to(out, shape(vals)), source), y)
    return y
