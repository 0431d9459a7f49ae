"""NumPy's indexing routines that pick or place values: `choose`, `compress`, `extract`,
`piecewise`, and the in-place updates `put`, `place`, `put_along_axis`, `fill_diagonal`.

Every differentiable function here is a gather (`take`, `take_along_axis`, indexing) and a
`where`, so it has every rule with none of its own. Which element goes where is worked out by
NumPy itself on an array of element numbers: `put(a, ind, v)` becomes NumPy's `put` of the
numbers of v's elements into an array of -1, and then each element of the result is v's
element of that number, or a's where the number is -1. So every mode, every repeated index
(the last one wins, as in NumPy) and every error is NumPy's.

NumPy's `put`, `place`, `put_along_axis` and `fill_diagonal` write into their first argument
and return None. All four do so on plain arrays. A traced array cannot be written into (it is
a value), and a plain array cannot hold a traced value: there all four raise a TypeError that
names the functional form instead of losing the write silently. `put_along_axis` and
`fill_diagonal` have that form themselves: with `inplace=False` (JAX's keyword) they return
the updated array as a new value, differentiable in the array and the values, and leave the
array passed in as it is (on plain arrays too); use their result.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`, `fgrad.numpy.elementwise`,
`fgrad.numpy.arrays`, `fgrad.numpy.statistics`.
"""

import math as _math
from typing import Any, Literal

import numpy as _np

from .. import core as _core
from ..core import constant_of, dtype_of, primal
from ..primitive import register_rules
from ._mirror import exported, mirror
from ._values import constant_values
from .arrays import take, take_along_axis
from .elementwise import logical_not, scalar_if_0d, where
from .shaping import (
    asarray,
    astype,
    broadcast_to,
    describe,
    getitem,
    held_number,
    is_traced,
    ndim,
    nondiff_function,
    numpy_applies,
    ravel,
    refuse_out,
    refuse_traced,
    reshape,
    result_type,
    shape,
    stack,
    zeros_like,
)
from .statistics import any as _any


def _placed(a: Any, source: Any, values: Any) -> Any:
    """a with each element where `source` (an int array of a's shape) is k >= 0 replaced by
    the k-th element of the flattened values, cast to a's dtype as NumPy's assignment does."""
    a = asarray(a)
    chosen = source >= 0
    if not chosen.any():
        return a
    if type(values) is complex and dtype_of(a).kind != "c":
        # NumPy's assignment converts a Python complex by float(), which refuses it (a
        # NumPy complex array is cast, with NumPy's ComplexWarning, as astype casts it here)
        raise TypeError("float() argument must be a string or a real number, not 'complex'")
    flat = astype(ravel(asarray(values)), dtype_of(a))
    return where(chosen, take(flat, _np.where(chosen, source, 0)), a)


# NumPy's in-place put and place, declared without a derivative: they write plain arrays only
# (a traced or batched array is refused before, by `refuse_traced`)
_put = nondiff_function(_np.put)
_place = nondiff_function(_np.place)


def _in_place_batch(name: str) -> Any:
    def rule(args: Any, dims: Any, **params: Any) -> Any:
        raise TypeError(
            f"{name} writes into its first argument, which vmap cannot do row by row: use "
            "fgrad.numpy.put_along_axis or fgrad.numpy.at(...).set(...), which return the array"
        )

    return rule


register_rules(_put.primitive, batch=_in_place_batch("put"))
register_rules(_place.primitive, batch=_in_place_batch("place"))


@mirror("shape")
def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """NumPy's `put`: a.flat[ind] = v, in place, on plain arrays. A traced a or v is refused
    with a TypeError naming the functional form, which returns a new array:
    `fnp.put_along_axis(a, ind, v, axis=None)` (for a 1-D a) or `fnp.at(a)[idx].set(v)`.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> a = np.zeros(4)
    >>> fnp.put(a, [0, 2], [5.0, 6.0])
    >>> a
    array([5., 0., 6., 0.])
    """
    refuse_traced(
        "put",
        "y = fgrad.numpy.at(a)[fgrad.numpy.unravel_index(ind, a.shape)].set(v), or "
        "fgrad.numpy.put_along_axis(a, ind, v, axis=None) for a 1-D a",
        a=a,
        ind=ind,
        v=v,
    )
    _put(a, ind, v, mode)


@mirror("shape")
def place(arr: Any, mask: Any, vals: Any) -> None:
    """NumPy's `place`: the elements of arr where mask is true get the values of vals in turn,
    in place, on plain arrays. A traced arr or vals is refused with a TypeError naming the
    functional form, `fnp.where(mask, values, arr)`, which returns a new array.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> a = np.arange(4.0)
    >>> fnp.place(a, np.array([1, 0, 1, 1]), [9.0, 8.0])
    >>> a
    array([9., 1., 8., 9.])
    """
    refuse_traced(
        "place",
        "y = fgrad.numpy.where(mask, values, arr), with values laid out as arr (or "
        "fgrad.numpy.at(arr)[mask].set(vals) when vals has one value per true element)",
        arr=arr,
        mask=mask,
        vals=vals,
    )
    _place(arr, mask, vals)


@mirror("shape")
def put_along_axis(
    arr: Any, indices: Any, values: Any, axis: int | None, *, inplace: bool = True
) -> Any:
    """NumPy's `put_along_axis`: values put at `indices` along `axis` (as `take_along_axis`
    reads them). On plain arrays it writes into arr and returns None, as NumPy's. With
    `inplace=False` (JAX's keyword) it returns the updated array as a new value instead,
    differentiable in arr and values, and leaves arr as it is: the form for a traced arr or
    values (or a lazy Dask array), which cannot be written into. NumPy-style code calling it
    for its write on a traced value would lose the write silently, so there the default
    `inplace=True` raises a TypeError saying to pass `inplace=False` and use the result.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> put = lambda v: fnp.put_along_axis(a, np.array([[1], [0]]), v, 1, inplace=False)
    >>> fgrad.grad(lambda v: fnp.sum(put(v)))(2.0)
    np.float64(2.0)
    """
    if numpy_applies(arr, indices, values):
        if inplace:
            return _np.put_along_axis(arr, indices, values, axis)
        arr = _np.array(arr)  # (a copy, NumPy's dtype of it)
        _np.put_along_axis(arr, indices, values, axis)
        return arr
    if inplace:
        refuse_traced(
            "put_along_axis",
            "arr = fgrad.numpy.put_along_axis(arr, indices, values, axis, inplace=False), "
            "which returns the new array (JAX's form)",
            arr=arr,
            indices=indices,
            values=values,
        )
    indices = constant_values(indices, "put_along_axis", "indices")
    # NumPy places the numbers of the elements of values broadcast to the indexed shape
    source = _np.full(shape(arr), -1, dtype=_np.intp)
    n = _np.take_along_axis(_np.zeros(shape(arr), dtype=bool), indices, axis).shape
    try:
        _np.broadcast_shapes(shape(values), n)
    except ValueError:
        raise ValueError(
            f"put_along_axis: values ({describe(values)}) do not broadcast to the indexed shape {n}"
        ) from None
    _np.put_along_axis(source, indices, _np.arange(_math.prod(n)).reshape(n), axis)
    return _placed(arr, source, broadcast_to(asarray(values), n))


@mirror("shape")
def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """NumPy's `fill_diagonal`: the main diagonal of a (all axes of equal length, or a tall
    matrix, `wrap` as NumPy's) set to val, repeated as needed. On plain arrays it writes into
    a and returns None, as NumPy's. With `inplace=False` (JAX's keyword) it returns the
    updated array as a new value instead, differentiable in a and val, and leaves a as it is:
    the form for a traced a or val (or a lazy Dask array), which cannot be written into. There
    the default `inplace=True` raises a TypeError saying so, as NumPy-style code calling it
    for its write would lose the write silently.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fill = lambda v: fnp.fill_diagonal(np.zeros((2, 2)), v, inplace=False)
    >>> fgrad.grad(lambda v: fnp.sum(fill(v) ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    if numpy_applies(a, val):
        if inplace:
            return _np.fill_diagonal(a, val, wrap)
        a = _np.array(a)
        _np.fill_diagonal(a, val, wrap)
        return a
    if inplace:
        refuse_traced(
            "fill_diagonal",
            "a = fgrad.numpy.fill_diagonal(a, val, inplace=False), which returns the new "
            "array (JAX's form)",
            a=a,
            val=val,
        )
    source = _np.full(shape(a), -1, dtype=_np.intp)
    if _math.prod(shape(val)):  # (an empty val fills nothing, as NumPy's)
        _np.fill_diagonal(source, _np.arange(_math.prod(shape(val))), wrap)
    return _placed(a, source, val)


put.primitive = _put.primitive  # type: ignore[attr-defined]  # (what put runs: no derivative)
place.primitive = _place.primitive  # type: ignore[attr-defined]


# --- choosing values ------------------------------------------------------------------------------


@mirror("shape")
def choose(
    a: Any, choices: Any, out: Any = None, mode: Literal["raise", "wrap", "clip"] = "raise"
) -> Any:
    """NumPy's `choose`: result[i] = choices[a[i]][i], all broadcast together; `mode` 'raise',
    'wrap' or 'clip' for indices outside [0, n). Differentiable in the choices.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.choose(np.array([1, 0, 1]), [np.zeros(3), np.arange(3.0)])
    array([0., 0., 2.])
    """
    refuse_out(out, "choose")
    if numpy_applies(a, choices):
        try:
            return _np.choose(a, choices, mode=mode)
        except ValueError:  # NumPy's bare "invalid entry in choice array": say which and why
            if mode == "raise":
                _check_choice_range(_np.asarray(a), len(choices))
            raise
    index = constant_values(a, "choose", "a")
    if index.dtype.kind not in "biu":  # (NumPy: "Cannot cast ... according to the rule 'safe'")
        raise TypeError(
            f"choose: a must hold integer indices into the choices, got {describe(a)}; cast it "
            "with a.astype(int) if its values are whole numbers"
        )
    if index.dtype.kind == "b":  # (False, True index choices 0 and 1, as NumPy's)
        index = astype(index, _np.intp)
    choices = list(choices) if isinstance(choices, (list, tuple)) else list(asarray(choices))
    n = len(choices)
    if mode == "raise":
        _check_choice_range(index, n)
    elif mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = _np.clip(index, 0, n - 1)
    else:
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    common = _np.broadcast_shapes(index.shape, *(shape(c) for c in choices))
    # NumPy's dtype: a Python number is weakly typed (also where `jit` holds one as given)
    arrays = [asarray(c) for c in choices]
    dtype = result_type(*(c if _is_number(c) else x for c, x in zip(choices, arrays)))
    arrays = [x if dtype_of(x) == dtype else astype(x, dtype) for x in arrays]
    stacked = stack([broadcast_to(x, common) for x in arrays])
    picked = take_along_axis(stacked, _np.broadcast_to(index, common)[None], 0)
    return scalar_if_0d(reshape(picked, shape(picked)[1:]))  # (NumPy's scalar when 0-d)


def _check_choice_range(index: Any, n: int) -> None:
    """choose's ValueError, naming the range of `a`, where an index is outside [0, n)."""
    if index.size and (index.min() < 0 or index.max() >= n):
        raise ValueError(
            f"choose: a holds indices outside [0, {n}) for {n} choices (its values run "
            f"from {index.min()} to {index.max()}); pass mode='wrap' or mode='clip'"
        )


def _is_number(x: Any) -> bool:
    """Whether x is a Python number, maybe held by `jit` as given."""
    return held_number(x) is not None


def _flat_positions(condition: Any, name: str) -> Any:
    c = constant_values(condition, name, "condition")
    return _np.flatnonzero(_np.ravel(c))


@mirror("shape")
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
    if axis is not None and not -ndim(a) <= axis < ndim(a):
        raise _np.exceptions.AxisError(
            f"compress: axis {axis} is out of bounds for a of {describe(a)} ({ndim(a)}-D); "
            "pass an axis in that range, or axis=None for the flattened a"
        )
    along = _math.prod(shape(a)) if axis is None else shape(a)[axis]
    # NumPy's own choice of positions (its errors for a too long condition included)
    positions = _np.compress(c, _np.arange(along))
    return take(a, positions, axis=axis)


@mirror("shape")
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


def _one_condition(condlist, x):
    """Whether `condlist` is one condition rather than a list of them, by NumPy's rule (a
    scalar, or a first element that is not an array or list, for an x that is not 0-d), with
    a traced value read as NumPy reads an array of its shape: its first element is an array
    only from 2 dimensions on (a traced 1-d condition's element was taken for a condition of
    its own: under jit and vmap piecewise gave x where NumPy gives funclist[0](x)); a traced
    0-d condition is one condition too (NumPy's 0-d array has no first element). An array of
    another library (a Dask condition) counts as NumPy's array of its shape: taken for one
    condition, a list of them was stacked into a single condition of one more axis."""
    if _np.isscalar(condlist) or (is_traced(condlist) and ndim(condlist) == 0):
        return True
    first = condlist[0]
    is_array = isinstance(first, (list, _np.ndarray)) or (
        (is_traced(first) or _core.is_foreign_array(first)) and ndim(first) >= 1
    )
    return not is_array and ndim(x) != 0


@mirror("function")
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
    # Inside a transform a function may close over a traced value (a parameter being
    # differentiated), which NumPy's piecewise could not write into its array: fgrad's path
    closures = len(constants) < len(funclist) and bool(_core.live_levels())
    if not closures and numpy_applies(x, condlist, constants, args, list(kw.values())):
        return _np.piecewise(x, condlist, funclist, *args, **kw)
    x = asarray(x)
    if _one_condition(condlist, x):
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
        if not callable(func):
            y = where(cond, astype(asarray(func), dtype), y)
            continue
        # the mask's values (under vmap, the rows' common mask: rows whose masks differ are
        # run apart, as NumPy calls func on each row's selection): func gets x[mask], and its
        # values go back by a gather (no scatter: `where` keeps y elsewhere)
        mask = primal(cond)
        _core.refuse_lazy("piecewise", "its conditions are read to select the elements", mask)
        mask = _np.broadcast_to(_np.asarray(mask, dtype=bool), shape(x))
        vals = getitem(x, mask)
        if _math.prod(shape(vals)) > 0:
            out = astype(asarray(func(vals, *args, **kw)), dtype)
            source = _np.zeros(shape(x), dtype=_np.intp)
            source[mask] = _np.arange(int(mask.sum()))
            y = where(mask, take(broadcast_to(out, shape(vals)), source), y)
    return y


__all__ = exported(globals())
