"""Sparse forward accumulation: a level whose boxes carry the rows of their Jacobian.

`fgrad.sparse`'s first call of a function finds the pattern of its Jacobian, colours it and
pushes the colours' seeds forward: three runs of the function. For a function made of
elementwise operations, moves and sums (a discretised PDE's residual: shifts, slices, products
and sums of fields), one run can give the Jacobian itself: each value carries, for each of
its elements, the input elements it depends on and the derivatives by them. An
`AccumulationLevel` box is `Box(value, level, rows)`, `rows` a `_Rows`: row i (element i of
the value, C order) is the sum over k of `vals[k, i]` times the unit row of input
`cols[k, i]` (-1: no input; a column may repeat, its values then add up). (Entries along the
first axis: a sum of rows is a concatenation of whole blocks, a move a `take` along the
second, each several times faster than along the other axis.)

- elementwise primitives: an output element's row is the sum of its inputs' rows (broadcast),
  each times the partial derivative there, which the primitive's forward rule gives (its
  tangent for the tangent 1 in that input alone), so the entries are `jacfwd`'s;
- moves (reshape, indexing, concatenate, roll, ...: `sparsity`'s "moves" declaration): the
  primitive applied to the element numbers of its inputs says which row each output element
  takes;
- `where` with a condition that is a constant of every input (read before any value was):
  the side it takes, as `sparsity`'s rule has it; otherwise both sides, as elementwise;
- a cast of float64 to float64 keeps its rows (a value of another dtype ends the run);
- a plain `sum` along axes: each output row holds the entries of the rows summed into it
  (rows of more than 64 distinct entries end the run).

Any other primitive (another reduction, a product of matrices, a solve, one with several outputs,
a `checkpoint`), a value that is not float64, or a value of an outer transform (a closure over
one) raises `NoAccumulation`: `fgrad.sparse` then takes its three runs. The pattern is the one
sparsity detection gives for these primitives (an entry is kept where its derivative is 0 at
this input, as `sparsity` keeps it: the pattern holds at every input). The level counts the
reads of values (`reads`), as `sparsity.SparsityLevel` does.

A partial derivative that is not finite (log's or sqrt's at 0) or an entry that is not (an
overflow) raises `NoAccumulation` too: from there on 0 * inf decides entries, a product's
(`x + w * sqrt(x)` at x = 0, w = 0: nan) as a `where`'s, and jacfwd and jacrev differ on it
(`nan_to_num(log(x))` at 0: 0 and nan; a `where`'s side not taken: jacfwd drops its inf, jacrev
gives it the cotangent 0 and makes nan), which one forward run cannot tell apart. The passes of
the mode asked for then give the first call's entries, as they give every later call's.

Imports: `fgrad.core`, `fgrad.forward` (the forward rules), `fgrad.numpy.shaping` (`sum`'s
primitive), `fgrad.primitive` (the sparsity declarations) and `fgrad.sparsity` (its kinds,
its moves, SciPy).
"""

from __future__ import annotations

import math as _math
from collections.abc import Sequence
from typing import Any

import numpy as _np

from .core import Box, Level, NondiffPrimitive, Primitive, bind, dtype_of, primal, shape_of
from .forward import tangent_rule
from .numpy import shaping as _shaping
from .primitive import sparsity_declarations
from .sparsity import move_numbers, rule_kind, sparse_module

__all__ = ["AccumulationLevel", "NoAccumulation"]

# Past this many entries per row (repeats included), the repeats are summed into one.
_WIDE = 32
# A sum giving rows of more distinct entries than this ends the run: the dense couplings
# that follow (a total spread back over every element) are detection's and the pass's job.
_WIDEST = 64
# More entries than this in one value (64 MB of columns and values) end the run: detection,
# whose patterns of large inputs are CSR arrays, and the passes take less memory there.
_MOST_ENTRIES = 4_000_000


class NoAccumulation(Exception):
    """The traced code applied a primitive this level has no rule for."""


class _Rows:
    """The Jacobian rows of a value: `cols` and `vals` of shape (width, elements)."""

    __slots__ = ("cols", "vals")

    def __init__(self, cols: _np.ndarray, vals: _np.ndarray) -> None:
        self.cols = cols
        self.vals = vals


def _size(shape) -> int:
    size = 1
    for n in shape:
        size *= n
    return size


def _stacked(blocks: Sequence[_Rows]) -> _Rows:
    """The blocks' rows one after another, at the width of the widest."""
    if len(blocks) == 1:
        return blocks[0]
    width = max(b.cols.shape[0] for b in blocks)
    size = sum(b.cols.shape[1] for b in blocks)
    cols = _np.full((width, size), -1, dtype=_np.int64)
    vals = _np.zeros((width, size))
    start = 0
    for b in blocks:
        end = start + b.cols.shape[1]
        cols[: b.cols.shape[0], start:end] = b.cols
        vals[: b.vals.shape[0], start:end] = b.vals
        start = end
    return _Rows(cols, vals)


def _taken(blocks: Sequence[_Rows], rows: _np.ndarray) -> _Rows:
    """Row rows[i] of the blocks stacked (-1: a row of no input)."""
    total = sum(b.cols.shape[1] for b in blocks)
    if len(rows) == total and _np.array_equal(rows, _np.arange(total)):
        return _stacked(blocks)  # (a reshape, a concatenation: the rows as they are)
    stacked = _stacked(blocks)
    if total == 0:
        return _Rows(_np.full((1, len(rows)), -1, _np.int64), _np.zeros((1, len(rows))))
    taken_cols, taken_vals = stacked.cols.take(rows, axis=1), stacked.vals.take(rows, axis=1)
    if len(rows) and rows.min() < 0:
        empty = rows < 0
        taken_cols[:, empty], taken_vals[:, empty] = -1, 0.0
    return _Rows(taken_cols, taken_vals)


def _joined(parts: Sequence[_Rows]) -> _Rows:
    """The sum of rows of one shape: their entries side by side (repeats summed past
    `_WIDE`)."""
    if len(parts) == 1:
        return parts[0]
    return _compacted(
        _np.concatenate([p.cols for p in parts]), _np.concatenate([p.vals for p in parts])
    )


def _compacted(cols: _np.ndarray, vals: _np.ndarray) -> _Rows:
    """Entries as they are, or past `_WIDE` per element with each column's repeats summed
    into one."""
    if len(cols) <= _WIDE:
        return _Rows(cols, vals)
    order = _np.argsort(cols, axis=0, kind="stable")
    cols = _np.take_along_axis(cols, order, axis=0)
    vals = _np.take_along_axis(vals, order, axis=0)
    for k in range(len(cols) - 1, 0, -1):  # each run of a column into its first entry
        repeat = (cols[k] == cols[k - 1]) & (cols[k] >= 0)
        vals[k - 1, repeat] += vals[k, repeat]
        cols[k, repeat] = -1
        vals[k, repeat] = 0.0
    width = int((cols >= 0).sum(axis=0).max(initial=0))
    keep = _np.argsort(cols < 0, axis=0, kind="stable")[: max(width, 1)]  # entries first
    return _Rows(_np.take_along_axis(cols, keep, axis=0), _np.take_along_axis(vals, keep, axis=0))


def _broadcast(v, rows: _Rows, shape) -> _Rows:
    s = tuple(shape_of(v))
    if s == shape:
        return rows
    numbers = _np.arange(_size(s), dtype=_np.int64).reshape(s)
    return _taken([rows], _np.broadcast_to(numbers, shape).ravel())


def _elementwise(prim, vals, rows, ans, params) -> _Rows:
    out_shape = tuple(shape_of(ans))
    partials: list = []  # (rows, the partial derivative by them: a number or a flat array)
    for i, r in enumerate(rows):
        if r is None:
            continue
        # The forward rule's tangent for the tangent 1 in this input alone: the partial
        # derivative, elementwise (a number where it is one: a sum's 1, a scalar factor)
        tangents: list = [None] * len(vals)
        # (a NumPy 1 of the input's dtype, not Python's 1.0: a rule's `t / y` by a Python
        # 0.0, `v / 0.0`, raised ZeroDivisionError where NumPy gives inf)
        tangents[i] = _one_like(vals[i])
        d = tangent_rule(prim, tangents, ans, vals, params)
        d = _np.zeros(()) if d is None else _np.asarray(d)
        if d.dtype.kind != "f":
            raise NoAccumulation(f"{prim.name} has a derivative that is not real")
        if d.ndim and d.size and not any(d.strides):  # one number, broadcast (a sum's 1)
            d = d.reshape(-1)[0].reshape(())
        if not (_math.isfinite(d) if d.ndim == 0 else _np.isfinite(d).all()):
            # (0 * inf ahead: the passes' entries, as the module docstring says)
            raise NoAccumulation(f"{prim.name} has a partial derivative that is not finite")
        if d.size == 1 and d.shape != out_shape:
            d = d.reshape(())
        elif d.shape != out_shape:
            d = _np.broadcast_to(d, out_shape)
        d = d.ravel()[None, :] if d.ndim else d
        if tuple(shape_of(vals[i])) != out_shape:
            r = _broadcast(vals[i], r, out_shape)
        for k, (q, e) in enumerate(partials):
            if q is r:  # x * x: one row, the sum of both partial derivatives
                partials[k] = (q, e + d)
                break
        else:
            partials.append((r, d))
    return _joined([_scaled(r, d) for r, d in partials])


def _one_like(x):
    """1 as a NumPy scalar of x's floating dtype (float64 for any other)."""
    dtype = dtype_of(x)
    one = _ONES.get(dtype)
    if one is None:
        kind = _np.dtype(dtype)
        one = _ONES[dtype] = kind.type(1) if kind.kind in "fc" else _np.float64(1.0)
    return one


_ONES: dict = {}  # dtype -> its 1 (`_one_like`)


def _scaled(r: _Rows, d) -> _Rows:
    """Rows times a (finite) partial derivative: a number or a row of one per element."""
    if d.ndim == 0 and d == 1.0:
        return r
    return _Rows(r.cols, r.vals * d)


def _where(prim, vals, rows, ans, params, fixed: bool) -> _Rows:
    """`where(c, x, y)`: a constant condition read before any value (`fixed`) picks each
    element's side; otherwise both sides, as an elementwise operation."""
    if not fixed or rows[0] is not None:
        return _elementwise(prim, vals, rows, ans, params)
    out_shape = tuple(shape_of(ans))
    take_x = _np.broadcast_to(_np.asarray(vals[0], dtype=bool), out_shape).ravel()
    parts = []
    for v, r, keep in ((vals[1], rows[1], take_x), (vals[2], rows[2], ~take_x)):
        if r is None:
            continue
        moved = _broadcast(v, r, out_shape)
        cols, values = moved.cols.copy(), moved.vals.copy()
        cols[:, ~keep], values[:, ~keep] = -1, 0.0
        parts.append(_Rows(cols, values))
    return _joined(parts)


def _sum(vals, rows, params) -> _Rows:
    """NumPy's sum along `axis`: an output element's row is the sum of the rows of the
    elements summed into it, their entries side by side (each group's entries gathered,
    then laid out as `width * group` entries). Too wide a row (a sum of many elements that
    depend on many inputs, then spread by broadcasting) ends the run."""
    (x,), (r,) = vals, rows
    s = tuple(shape_of(x))
    axis = params["axis"]
    axes = tuple(range(len(s))) if axis is None else tuple(a % len(s) for a in axis)
    kept = tuple(1 if d in axes else n for d, n in enumerate(s))
    size, groups = _size(s), _size(kept)
    if size == 0 or groups == 0:
        return _Rows(_np.full((1, groups), -1, _np.int64), _np.zeros((1, groups)))
    numbers = _np.arange(groups, dtype=_np.int64).reshape(kept)
    order = _np.argsort(_np.broadcast_to(numbers, s).ravel(), kind="stable")
    m, w = size // groups, r.cols.shape[0]

    def gathered(a):  # (width, elements) -> (width * m, groups): each group's entries together
        return _np.moveaxis(a[:, order].reshape(w, groups, m), 2, 1).reshape(w * m, groups)

    out = _compacted(gathered(r.cols), gathered(r.vals))
    if out.cols.shape[0] > _WIDEST:
        raise NoAccumulation(f"a sum gives rows of {out.cols.shape[0]} entries")
    return out


def _moves(prim, vals, rows, params, data, numbers_dtype) -> _Rows:
    """A move (`sparsity.move_numbers`): each output element takes the row of the element
    it got."""
    traced = [r is not None for r in rows]
    moved = move_numbers(prim, vals, traced, params, data, numbers_dtype)
    blocks = [r for i, r in enumerate(rows) if r is not None and (data is None or i in data)]
    return _taken(blocks, moved)


# primitive -> its sparsity declaration's name and arguments ("elementwise" for the primitives
# whose kind is elementwise without a declaration), looked up once
_DECLARED: dict = {}


def _declared(prim) -> tuple:
    found = _DECLARED.get(prim)
    if found is None:
        declared = sparsity_declarations.get(prim)
        if declared is None:
            found = ("elementwise" if rule_kind(prim) == "elementwise" else None, ())
        elif isinstance(declared, str):
            found = (declared, ())
        else:
            found = (declared[0], tuple(declared[1:]))
        _DECLARED[prim] = found
    return found


class AccumulationLevel(Level):
    """A sparse forward accumulation in progress over `n` input elements (see the module
    docstring)."""

    __slots__ = ("n", "reads")

    reads_values = True  # comparisons and Python branches read values, as in detection

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.reads = 0

    def new_input(self, x, offset: int) -> Box:
        """x as input elements offset .. offset + x.size - 1."""
        size = _size(tuple(shape_of(x)))
        cols = _np.arange(offset, offset + size, dtype=_np.int64).reshape(1, size)
        return Box(x, self, _Rows(cols, _np.ones((1, size))))

    def new_variable(self, x) -> Box:
        """x as a value that may change between calls: its elements depend on the last input,
        column n - 1, which stands for it (dropped from the result: see `fgrad.sparse`)."""
        size = _size(tuple(shape_of(x)))
        return Box(x, self, _Rows(_np.full((1, size), self.n - 1, _np.int64), _np.zeros((1, size))))

    def jacobian_of(self, x):
        """The Jacobian of a value the traced code returned, as a `scipy.sparse.csr_array` of
        shape (x.size, n - 1), its entries sorted, the pattern's zeros kept (`NoAccumulation`
        if one is not finite)."""
        sp = sparse_module()
        size = _size(tuple(shape_of(x)))
        if type(x) is not Box or x.level is not self:
            return sp.csr_array((size, self.n - 1))
        cols, vals = x.aux.cols.T, x.aux.vals.T  # (by element: CSR's order)
        keep = (cols >= 0) & (cols < self.n - 1)  # (column n - 1: the values that may change)
        entries = vals[keep]
        if not _np.isfinite(entries).all():  # (an overflow: the passes' entries, not these)
            raise NoAccumulation("an entry of the Jacobian is not finite")
        indptr = _np.zeros(size + 1, dtype=_np.int64)
        _np.cumsum(keep.sum(axis=1), out=indptr[1:])
        out = sp.csr_array((entries, cols[keep], indptr), shape=(size, self.n - 1))
        out.sum_duplicates()  # (sorts the entries; keeps the zeros)
        return out

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        vals, rows = [], []
        for a in args:
            if type(a) is Box and a.level is self:
                vals.append(a.value)
                rows.append(a.aux)
            else:
                vals.append(a)
                rows.append(None)
        if type(prim) is NondiffPrimitive:  # a constant (its arguments' values were read)
            return prim.impl(*[primal(v) for v in vals], **params)
        if prim.multiple_results:
            raise NoAccumulation(f"{prim.name} has several outputs")
        ans = bind(prim, tuple(vals), params)
        if type(ans) is Box or dtype_of(ans) != _np.float64:
            # (a float32 value's derivative is rounded to float32 by jacfwd and the pass, which
            # these float64 rows would not be)
            raise NoAccumulation(f"{prim.name} gives a value that is not a float64 array")
        out = self._rule(prim, vals, rows, ans, params)
        if out.cols.size > _MOST_ENTRIES:
            raise NoAccumulation(f"{prim.name} gives {out.cols.size} entries")
        return Box(ans, self, out)

    def _rule(self, prim, vals, rows, ans, params) -> _Rows:
        name, extra = _declared(prim)
        if name == "elementwise":
            return _elementwise(prim, vals, rows, ans, params)
        if name == "where":
            return _where(prim, vals, rows, ans, params, fixed=self.reads == 0)
        if name == "moves":
            data, numbers_dtype = (list(extra) + [None, False])[:2]
            return _moves(prim, vals, rows, params, data, numbers_dtype)
        if name == "astype":  # (float64 to float64: process refuses other results)
            return rows[0]
        if prim is _shaping._sum_p:  # (a plain sum: not one with a mask, dtype or initial)
            return _sum(vals, rows, params)
        raise NoAccumulation(f"{prim.name}: no accumulation rule (its sparsity kind: {name})")

    def read(self, box: Box) -> Any:
        self.reads += 1
        return primal(box.value)
