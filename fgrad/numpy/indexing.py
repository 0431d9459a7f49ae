"""Index helpers and array conversions (from NumPy's "Indexing routines" and "Array creation
routines"): `ix_`, `unravel_index`, `ravel_multi_index`, `diag_indices_from`,
`tril_indices_from`, `triu_indices_from`, NumPy's index makers `s_`, `index_exp`, `mgrid`,
`ogrid` (which read a `jit` argument in a slice); the conversions `asanyarray`,
`ascontiguousarray`, `asfortranarray`, `asarray_chkfinite`; and NumPy's in-place `putmask`
and `copyto`.

Indices have no derivative: `ix_`, `unravel_index` and `ravel_multi_index` are NumPy's own
functions applied to plain values (`ix_` reshapes an array of floats, as NumPy does, and its
derivative passes through), and the `*_from` functions read only the shape of their
argument. The conversions are `asarray` for a traced value (identities, differentiable; a
traced value has no memory layout to make contiguous); `asarray_chkfinite` checks the values
of every row at once (under `jit`, a guard of the record). `putmask` and `copyto` write into
a NumPy array, as NumPy's do; a traced value cannot be written into (it is a value), so they
refuse one and name the functional form, `fgrad.numpy.where`.

Imports: `fgrad.core`, `fgrad.primitive`, `fgrad.numpy.shaping`,
`fgrad.numpy.arrays`.
"""

from typing import Any, Literal

import numpy as _np
from numpy import (  # NumPy's own: index tuples
    index_exp as index_exp,
    s_ as s_,
)

from .. import core as _core
from ..core import bind, dtype_of, primal, shape_of
from ..primitive import nondiff, register_rules
from ..protocols import is_foreign_array, refuse_lazy
from ._coverage import no_derivative
from ._mirror import exported, mirror
from .arrays import diag_indices, flatnonzero, tril_indices, triu_indices
from .datatypes import Casting
from .elementwise import read_any
from .shaping import (
    asarray,
    batch_to_front,
    broadcast_to,
    describe,
    is_traced,
    moveaxis,
    numpy_applies,
    read_constant,
    refuse_layout,
    refuse_traced,
    reshape,
    stack,
)

# NumPy's memory orders, as its stubs spell them
Order = Literal["C", "F"]


# --- grids: NumPy's, with the numbers of their slices read ----------------------------------------


class _Grid:
    """NumPy's `mgrid` or `ogrid` (`grid`), whose slices' numbers may be traced numbers with no
    derivative: a `jit` argument in `mgrid[0:1:n * 1j]` is read (a guard of the record, so
    another n records another path), where NumPy would convert it with float() and fail."""

    def __init__(self, grid, name):
        self._grid, self._name = grid, name

    def __getitem__(self, key):
        if is_traced(_slice_numbers(key)):
            key = _read_slices(key, self._name)
        return self._grid[key]

    def __repr__(self):
        return f"fgrad.numpy.{self._name} (NumPy's, reading traced slice numbers)"


def _slice_numbers(key):
    """The start, stop and step of every slice of an index (a tuple of them)."""
    parts = key if type(key) is tuple else (key,)
    return [n for p in parts if type(p) is slice for n in (p.start, p.stop, p.step)]


def _read_slices(key, name):
    def read(p):
        if type(p) is not slice:
            return p
        return slice(
            *read_constant(
                [p.start, p.stop, p.step],
                name,
                "a slice's number",
                "build the grid with fgrad.numpy.linspace, which is differentiable in its ends",
            )
        )

    return tuple(map(read, key)) if type(key) is tuple else read(key)


mgrid = mirror("creation")(_Grid(_np.mgrid, "mgrid"))
ogrid = mirror("creation")(_Grid(_np.ogrid, "ogrid"))


# --- indices: no derivative -----------------------------------------------------------------------


def _ix_one(a: Any, k: int, n: int) -> Any:
    """The k-th of n open-mesh index arrays: NumPy's `ix_` of one argument (its conversion of
    lists, booleans and empty sequences, and its checks), shaped to run along axis k."""
    return _np.ix_(a)[0].reshape((1,) * k + (-1,) + (1,) * (n - k - 1))


# one primitive per output array, so that every transform sees single outputs
_ix_p = nondiff(_ix_one, "ix_")


@mirror("shape")
def ix_(*args: Any) -> tuple[Any, ...]:
    """NumPy's `ix_`: an open mesh of index arrays, the k-th shaped to run along axis k,
    without a derivative (an array of floats, which NumPy reshapes too, keeps its own). A
    traced boolean argument becomes its indices first (their number is read: under `vmap`,
    rows that differ in it run apart).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> x = np.arange(6.0).reshape(2, 3)
    >>> x[fnp.ix_([1], [0, 2])]
    array([[3., 5.]])
    """

    # NumPy reshapes an array of numbers that are not indices as it is: so does this, and
    # the derivative of a traced one passes through (an index array has none to pass); a
    # lazy one (Dask) stays lazy
    def reshaped(a):
        return (is_traced(a) or is_foreign_array(a)) and dtype_of(a).kind in "fc"

    if not any(is_traced(a) or reshaped(a) for a in args):
        return _np.ix_(*args)
    n = len(args)
    out = []
    for k, a in enumerate(args):
        if reshaped(a):
            if len(shape_of(a)) != 1:
                raise ValueError(f"ix_: argument {k} must be 1-dimensional, got {describe(a)}")
            out.append(reshape(a, (1,) * k + (-1,) + (1,) * (n - k - 1)))
            continue
        if is_traced(a) and dtype_of(a).kind == "b" and len(shape_of(a)) == 1:
            a = flatnonzero(a)
        out.append(_ix_p(a, k=k, n=n))
    return tuple(out)


def _ix_batch(args: Any, dims: Any, k: int, n: int) -> tuple[Any, Any]:
    """One argument's rows reshaped to run along axis k, behind the batch axis (`ix_` made
    traced booleans indices)."""
    (a,), (d,) = args, dims
    rows = batch_to_front(a, d)
    if len(shape_of(rows)) != 2:
        raise ValueError(f"ix_: argument {k} must be 1-dimensional, got {describe(rows)}")
    if dtype_of(rows).kind not in "iu":
        raise IndexError(
            f"ix_: argument {k} must be of integer (or boolean) type, got {describe(rows)}"
        )
    return reshape(rows, (shape_of(rows)[0],) + (1,) * k + (-1,) + (1,) * (n - k - 1)), 0


register_rules(_ix_p, batch=_ix_batch)


def _unravel_stacked(indices: Any, shape: Any, order: Order) -> Any:
    """NumPy's `unravel_index` as one array, the coordinates along its first axis (one output,
    as every transform expects of a primitive)."""
    coords = _np.unravel_index(indices, shape, order=order)
    return _np.array(coords, dtype=_np.intp).reshape((len(coords),) + _np.shape(indices))


_unravel_p = nondiff(_unravel_stacked, "unravel_index")


@mirror("constant")
def unravel_index(indices: Any, shape: Any, order: Order = "C") -> tuple[Any, ...]:
    """NumPy's `unravel_index`, declared without a derivative: the coordinates, one array per
    axis of `shape`, of each flat index.

    >>> import fgrad.numpy as fnp
    >>> fnp.unravel_index([5, 1], (2, 3))
    (array([1, 0]), array([2, 1]))
    """
    if not is_traced(indices) and not is_traced(shape):
        return _np.unravel_index(indices, shape, order=order)
    coords = _unravel_p(indices, _sizes(shape), order=order)
    return tuple(coords[k] for k in range(shape_of(coords)[0]))


unravel_index.primitive = _unravel_p  # type: ignore[attr-defined]


def _sizes(shape: Any) -> Any:
    """A shape (of `unravel_index`, `ravel_multi_index`): sizes are read, as NumPy's shapes
    are ints (a guard under `jit`; under `vmap`, rows that differ run apart)."""
    if is_traced(shape):
        return tuple(int(s) for s in _np.atleast_1d(primal(asarray(shape))))
    return shape


def _unravel_batch(args: Any, dims: Any, order: str) -> tuple[Any, Any]:
    """Elementwise in the indices: the batched indices at once, the batch axis one along, behind
    the coordinates (`unravel_index` read the shape, so it is the same in every row)."""
    (indices, sizes), (d, _) = args, dims
    return bind(_unravel_p, (indices, sizes), {"order": order}), d + 1


register_rules(_unravel_p, batch=_unravel_batch)

_ravel_p = nondiff(_np.ravel_multi_index, "ravel_multi_index")


@mirror("constant")
def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: Order = "C") -> Any:
    """NumPy's `ravel_multi_index`, declared without a derivative: the flat index of each
    coordinate tuple.

    >>> import fgrad.numpy as fnp
    >>> fnp.ravel_multi_index(([1, 0], [2, 1]), (2, 3))
    array([5, 1])
    """
    if not is_traced(multi_index) and not is_traced(dims):
        return _np.ravel_multi_index(multi_index, dims, mode=mode, order=order)
    if is_traced(multi_index):
        # one integer array with the coordinates along its first axis, as NumPy takes it too
        parts = [asarray(m) for m in multi_index]
        common = _np.broadcast_shapes(*[shape_of(p) for p in parts])
        multi_index = stack([broadcast_to(p, common) for p in parts])
    return _ravel_p(multi_index, _sizes(dims), mode=mode, order=order)


ravel_multi_index.primitive = _ravel_p  # type: ignore[attr-defined]


def _ravel_batch(args: Any, dims: Any, mode: Any, order: str) -> tuple[Any, Any]:
    """Elementwise in the coordinates: their batch axis goes second (the coordinates stay
    first), one call, the flat indices batched on axis 0."""
    (index, sizes), (d, _) = args, dims  # `ravel_multi_index` read the sizes: one for all
    rows = moveaxis(batch_to_front(index, d), 0, 1)
    return bind(_ravel_p, (rows, sizes), {"mode": mode, "order": order}), 0


register_rules(_ravel_p, batch=_ravel_batch)


@no_derivative("indices from the shape of the argument")
def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    """NumPy's `diag_indices_from`: the indices of the main diagonal of `arr`, from its shape
    alone (its values are not read).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.diag_indices_from(np.ones((2, 2)))
    (array([0, 1]), array([0, 1]))
    """
    s = shape_of(arr)
    if len(s) < 2:
        raise ValueError(f"diag_indices_from: arr must be at least 2-d, got {describe(arr)}")
    if len(set(s)) != 1:
        raise ValueError(
            f"diag_indices_from: all dimensions of arr must be of equal length, got {describe(arr)}"
        )
    return diag_indices(s[0], len(s))


def _indices_from(name: str, make: Any, arr: Any, k: Any) -> tuple[Any, ...]:
    s = shape_of(arr)
    if len(s) != 2:
        raise ValueError(f"{name}: arr must be 2-d, got {describe(arr)}")
    return make(s[-2], k=k, m=s[-1])


@no_derivative("indices from the shape of the argument")
def tril_indices_from(arr: Any, k: Any = 0) -> tuple[Any, ...]:
    """NumPy's `tril_indices_from`: the indices of the lower triangle of the 2-d `arr`, from
    its shape alone (its values are not read).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.tril_indices_from(np.ones((2, 2)))
    (array([0, 1, 1]), array([0, 0, 1]))
    """
    return _indices_from("tril_indices_from", tril_indices, arr, k)


@no_derivative("indices from the shape of the argument")
def triu_indices_from(arr: Any, k: Any = 0) -> tuple[Any, ...]:
    """NumPy's `triu_indices_from`: the indices of the upper triangle of the 2-d `arr`, from
    its shape alone (its values are not read).

    >>> import numpy as np, fgrad.numpy as fnp
    >>> fnp.triu_indices_from(np.ones((2, 2)), k=1)
    (array([0]), array([1]))
    """
    return _indices_from("triu_indices_from", triu_indices, arr, k)


# --- conversions: identities on traced values -----------------------------------------------------


@mirror("creation")
def asanyarray(
    a: Any,
    dtype: Any = None,
    order: Any = None,
    *,
    device: Any = None,
    copy: Any = None,
    like: Any = None,
) -> Any:
    """NumPy's `asanyarray`: a plain value gets NumPy's own (a subclass stays one); a traced
    value is `asarray`'s (a traced value is of no subclass).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.asanyarray(x) ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    if numpy_applies(a):
        return _np.asanyarray(a, dtype, order, device=device, copy=copy, like=like)
    return asarray(a, dtype, order, device=device, copy=copy, like=like)


def _at_least_1d(name: str, a: Any, dtype: Any, like: Any) -> Any:
    refuse_layout(name, like=(like, None))
    x = asarray(a, dtype)
    return reshape(x, (1,)) if shape_of(x) == () else x  # NumPy's: at least one axis


@mirror("creation")
def ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """NumPy's `ascontiguousarray` (a 0-d input becomes 1-d, as NumPy's does); a traced value
    has no memory layout, so for it this is `asarray`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fnp.ascontiguousarray(3.0)
    array([3.])
    >>> float(fgrad.grad(lambda x: fnp.ascontiguousarray(x)[0] ** 2)(3.0))
    6.0
    """
    if numpy_applies(a):
        return _np.ascontiguousarray(a, dtype, like=like)
    return _at_least_1d("ascontiguousarray", a, dtype, like)


@mirror("creation")
def asfortranarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """NumPy's `asfortranarray` (a 0-d input becomes 1-d, as NumPy's does); a traced value has
    no memory layout, so for it this is `asarray`.

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.asfortranarray(x) ** 2))(np.ones((2, 2)))
    array([[2., 2.],
           [2., 2.]])
    """
    if numpy_applies(a):
        return _np.asfortranarray(a, dtype, like=like)
    return _at_least_1d("asfortranarray", a, dtype, like)


@mirror("creation")
def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Any:
    """NumPy's `asarray_chkfinite`: `asarray`, and a ValueError if any value is inf or NaN.
    A traced value's values are checked in every row at once (under `jit`, the check is one
    boolean the record guards).

    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> fgrad.grad(lambda x: fnp.sum(fnp.asarray_chkfinite(x) ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    refuse_lazy("asarray_chkfinite", "it checks every value", _core.innermost(a))
    if not is_traced(a):
        return _np.asarray_chkfinite(a, dtype, order)
    x = asarray(a, dtype, order)
    if dtype_of(x).kind in "fc" and read_any(_np.logical_not(_np.isfinite(x))):
        raise ValueError(
            f"asarray_chkfinite: array must not contain infs or NaNs (a traced value of "
            f"{describe(x)})"
        )
    return x


# --- NumPy's in-place functions: plain arrays only ------------------------------------------------


@no_derivative("writes into a NumPy array (returns None); traced values are refused")
def putmask(a: Any, /, mask: Any, values: Any) -> None:
    """NumPy's `putmask`, on NumPy arrays: sets `a.flat[n] = values[n % len(values)]` where
    `mask` holds. A traced argument is refused: write `a = fnp.where(mask, values, a)`.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> a = np.arange(4.0)
    >>> fnp.putmask(a, a > 1, 0.0)
    >>> a
    array([0., 1., 0., 0.])
    """
    refuse_traced(
        "putmask",
        "a = fgrad.numpy.where(mask, values, a) (values broadcast against a)",
        a=a,
        mask=mask,
        values=values,
    )
    _np.putmask(a, mask, values)


@no_derivative("writes into a NumPy array (returns None); traced values are refused")
def copyto(dst: Any, src: Any, casting: Casting = "same_kind", where: Any = True) -> None:
    """NumPy's `copyto`, on NumPy arrays: copies `src` into `dst` where `where` holds. A
    traced argument is refused: write `dst = fnp.where(where, src, dst)`.

    >>> import numpy as np, fgrad.numpy as fnp
    >>> dst = np.zeros(3)
    >>> fnp.copyto(dst, np.array([1.0, 2.0, 3.0]), where=np.array([True, False, True]))
    >>> dst
    array([1., 0., 3.])
    """
    refuse_traced(
        "copyto",
        "dst = fgrad.numpy.where(where, src, dst) (or dst = fgrad.numpy.asarray(src) to copy "
        "all of it)",
        dst=dst,
        src=src,
        where=where,
    )
    _np.copyto(dst, src, casting=casting, where=where)


__all__ = exported(globals())
