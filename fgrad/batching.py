"""Batching, `vmap`'s level: each box holds one value per row of a batch.

A `BatchLevel` box is `Box(value, level, axis)`: `value` holds every row, along `axis`, which is
not part of the shape the traced code sees (`core.shape_of`). A primitive applied to such boxes
is applied once to all rows by its *batching rule*, kept in `rules` and registered beside the
primitive's other rules by `fgrad.primitive.register_rules`:

    rule(args, dims, **params) -> (out, out_dim)

`args` are the values under this level's boxes (they may be boxes of other levels: rules apply
fgrad operations, so outer levels trace them), `dims[i]` is the batch axis of `args[i]` or None
for an argument that is the same for every row. The rule returns the result for all rows and
its batch axis (None when it is the same for every row). A primitive with several outputs
returns a tuple of results and a tuple of axes. A primitive that has no rule is applied to one
row at a time (`row_by_row`, set by `fgrad.numpy`, which has the indexing and stacking it
needs); `row_by_row_reasons` lists the primitives declared to work that way, and why.

Reading rows
------------
Python control flow reads values: `if x > 0`, `float(x)`, a rule that computes a mask with
NumPy. Reading a box of this level (`BatchLevel.read`) gives the rows' common value when every
row has the same one. When they differ, the rows are grouped by the value they read
(`Diverged`): the run goes on with the largest group's value, those rows becoming the level's
`active` rows (later reads look at them only), and the other groups are `pending`: `vmap` runs
the function again on each of them once this run is over and puts the rows back in place. The
rows that are not active are still computed (every operation takes all rows) on a path that is
not theirs: NumPy's floating-point errors they meet there are not the user's, so a primitive
applied while some rows are not active records them instead of reporting them, and when it met
any, runs again on the active rows alone, under the user's settings (`np.errstate`), which
report the active rows' own as the loop over rows would (a warning, or a FloatingPointError for
those rows alone, see `BatchLevel._apart`). If the run raises, every group runs on its own
instead. While a watch is set (`debug_nans`, `make_graph`)
the run stops at the read (`Diverged` is raised) and every group runs on its own. This assumes
the function is pure: it may run more than once, and on subsets of the rows.

Imports: `fgrad.core`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from . import core
from .core import (
    _NO_PARAMS,
    Box,
    Level,
    NondiffPrimitive,
    Primitive,
    add_any,
    bind_one,
    bind_two,
    primal,
    shape_of,
)

__all__ = [
    "BatchLevel",
    "Diverged",
    "declare_row_by_row",
    "partial_reasons",
    "row_by_row_reasons",
    "rows_one_by_one",
    "rules",
    "unboxed_outputs",
]


class _Rules(dict):
    """The registry of batching rules; registering or removing one, by any of a dict's
    methods, forgets which primitives `BatchLevel`'s shortcuts apply to (`_elementwise`),
    which is worked out again."""

    def __setitem__(self, prim, rule):
        super().__setitem__(prim, rule)
        _elementwise.clear()

    def __delitem__(self, prim):
        super().__delitem__(prim)
        _elementwise.clear()

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        _elementwise.clear()

    def setdefault(self, prim, rule=None):
        found = super().setdefault(prim, rule)
        _elementwise.clear()
        return found

    def pop(self, prim, *default):
        found = super().pop(prim, *default)
        _elementwise.clear()
        return found

    def popitem(self):
        found = super().popitem()
        _elementwise.clear()
        return found

    def clear(self):
        super().clear()
        _elementwise.clear()

    def __ior__(self, other: Any) -> _Rules:  # type: ignore[misc]
        self.update(other)
        return self


# Primitive (or NondiffPrimitive) -> rule(args, dims, **params) -> (out, out_dim).
rules: dict[Any, Callable] = _Rules()

# Primitive -> whether `BatchLevel`'s shortcuts apply to it (its rule is the elementwise one and
# it has one output), worked out on first use.
_elementwise: dict[Any, bool] = {}


def _is_elementwise(prim) -> bool:
    fast = _elementwise.get(prim)
    if fast is None:
        rule = rules.get(prim)
        fast = _elementwise[prim] = bool(
            getattr(rule, "elementwise", False) and not prim.multiple_results
        )
    return fast


def _ndim(v) -> int:
    """The rank of a value under a box (a NumPy array's own, first: the common case)."""
    return v.ndim if type(v) is _np.ndarray else len(shape_of(v))


# Primitive -> why it is applied one row at a time (see `declare_row_by_row`).
row_by_row_reasons: dict[Any, str] = {}


# `row_by_row(prim, args, dims, params, size) -> (out, 0)`: the primitive applied to each row,
# the results stacked along axis 0. Set by `fgrad.numpy`.
def row_by_row(prim, args, dims, params, size) -> tuple[Any, Any]:
    """Replaced by `fgrad.numpy`'s (see above) when it is imported."""
    raise RuntimeError("vmap needs fgrad.numpy, which sets fgrad.batching.row_by_row")


# Primitive -> the cases its rule applies one row at a time, and why (`rows_one_by_one`).
partial_reasons: dict[Any, set[str]] = {}
_declared = 0  # > 0 while `rows_one_by_one` runs: the rows go one by one on purpose


def unboxed_outputs(outs, level) -> tuple[tuple, tuple]:
    """Output leaves computed on `level`'s boxes (a function run on the batch inside a rule),
    as a batching rule returns them: their values and their batch axes (None for a leaf that
    is not this level's: the same for every row)."""
    values, dims = [], []
    for o in outs:
        own = type(o) is Box and o.level is level
        values.append(o.value if own else o)
        dims.append(o.aux if own else None)
    return tuple(values), tuple(dims)


def rows_one_by_one(
    prim: Primitive | NondiffPrimitive,
    args: Sequence[Any],
    dims: Sequence[int | None],
    params: dict,
    size: int,
    reason: str,
) -> tuple[Any, Any]:
    """For the cases of a rule that have no vectorized form (`reason` says why; the coverage
    test lists them): `prim` applied to one row at a time, the results stacked on axis 0."""
    global _declared
    partial_reasons.setdefault(prim, set()).add(reason)
    _declared += 1
    try:
        return row_by_row(prim, args, dims, params, size)
    finally:
        _declared -= 1


def declare_row_by_row(prim: Primitive | NondiffPrimitive, reason: str) -> None:
    """Apply `prim` to one row at a time under `vmap`, for the reason given (listed by the
    coverage test): for a primitive whose rows cannot share one NumPy call."""
    row_by_row_reasons[prim] = reason


class Diverged(BaseException):
    """The active rows of `level`'s batch read different values: `groups` holds the indices of
    the rows that read the same value (bit for bit), one array per value, in order of first
    appearance.

    Raised only while a watch is set (otherwise the run goes on, see the module docstring). A
    BaseException, so that a user's `except Exception` around the read does not swallow the
    signal that the batch must be split."""

    def __init__(self, level: BatchLevel, groups: list[Any]) -> None:
        super().__init__()
        self.level = level
        self.groups = groups

    def __str__(self) -> str:
        return f"the rows of {self.level!r} read different values"


def _same_signs(rows, first):
    """Whether each row's sign bits (of the real and imaginary parts) are `first`'s."""
    if rows.dtype.kind == "c":
        return _same_signs(rows.real, first.real) & _same_signs(rows.imag, first.imag)
    return _np.signbit(rows) == _np.signbit(first)


def _grouped(rows):
    """Indices of `rows` (row i is rows[i]) grouped by value, in order of first appearance."""
    n = len(rows)
    if rows.dtype == bool and rows.ndim == 1:  # an `if` on each row: two groups
        first = rows[0]
        return [_np.flatnonzero(rows == first), _np.flatnonzero(rows != first)]
    flat = _np.ascontiguousarray(rows).reshape(n, -1)
    keys = flat.view(_np.dtype((_np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()
    _, first, group_of = _np.unique(keys, return_index=True, return_inverse=True)
    group_of = group_of.ravel()
    by_group = _np.argsort(group_of, kind="stable")
    members = _np.split(by_group, _np.cumsum(_np.bincount(group_of))[:-1])
    return [members[g] for g in _np.argsort(first)]


class BatchLevel(Level):
    """A `vmap` in progress: each box holds `size` rows along the axis in its `aux`."""

    __slots__ = ("active", "pending", "size")

    batches = True
    reads_values = True

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.active: Any = None  # the rows this run is for (None: all); see "Reading rows"
        self.pending: list[Any] = []  # the groups of rows that run again after this run

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        vals = list(args)
        dims = [None] * len(args)
        for i, a in enumerate(args):
            if type(a) is Box and a.level is self:
                vals[i] = a.value
                dims[i] = a.aux
        try:
            if self.active is None:
                out, out_dim = self._apply(prim, vals, dims, params)
            else:
                out, out_dim = self._apply_for_active(prim, vals, dims, params)
        except Exception as error:
            out, out_dim = self._apart(prim, vals, dims, params, error)
        # Several outputs: a primitive's with `multiple_results`, or a tuple of arrays from one
        # without a derivative (`nonzero`), whose rule gives a tuple of axes: a box for each.
        if prim.multiple_results or type(out_dim) is tuple:
            return tuple(self._box(o, d) for o, d in zip(out, out_dim))
        return self._box(out, out_dim)

    def _apply(self, prim, vals, dims, params, size=None):
        rule = rules.get(prim)
        if rule is None or prim in row_by_row_reasons:
            return row_by_row(prim, vals, dims, params, self.size if size is None else size)
        return rule(vals, dims, **params)

    def _apply_for_active(self, prim, vals, dims, params):
        """The primitive on every row, while only the active rows are on their own path: the
        floating-point errors NumPy meets are recorded, not reported (the other rows' are not
        the user's), and if it met any that the user's settings report, the active rows run
        again alone under those settings, to report theirs as the loop would (a warning; a
        FloatingPointError goes to `_apart`, which sends the rows raising it apart)."""
        met = []
        with _np.errstate(all="call", call=lambda _kind, flag: met.append(flag)):
            found = self._apply(prim, vals, dims, params)
        if met and _reported(met, _np.geterr()):
            active = self.active
            own = [v if d is None else _np.take(v, active, axis=d) for v, d in zip(vals, dims)]
            try:
                self._apply(prim, own, dims, params, len(active))
            except Exception as error:
                return self._apart(prim, vals, dims, params, error, by_active=True)
        return found

    def _apart(self, prim, vals, dims, params, error, by_active=False):
        """The primitive raised `error` on the batch. Where only some of the active rows raise
        it on their own (`inv` of a stack holding one singular matrix, inside the user's
        `try`; a division by zero under `np.errstate(divide="raise")`), those rows go on
        apart, as rows that read different values do: they raise it in their own run, and
        this run goes on with the others, the failing rows computed on a good row's values.
        So are the rows of other groups, which this run computes on a path not theirs (a
        singular matrix there is none of the active rows'). Where every active row raises
        it, or none does and no other group's row is in the batch (or the active rows raised
        it without the others, `by_active`), it is raised."""
        rows = _np.arange(self.size) if self.active is None else self.active
        fails = _np.array([_raises_alone(prim, vals, dims, params, i) for i in rows], bool)
        if fails.all() or (not fails.any() and (by_active or len(rows) == self.size)):
            raise error
        good, bad = rows[~fails], rows[fails]
        if len(bad):
            if core.watch is not None:
                raise Diverged(self, [good, bad]) from error
            self.active = good
            self.pending.append(bad)  # (no warning to keep off: they compute good values)
        stand_in = _np.full(self.size, good[0])
        stand_in[good] = good
        vals = [v if d is None else _np.take(v, stand_in, axis=d) for v, d in zip(vals, dims)]
        return self._apply_for_active(prim, vals, dims, params)

    # Shortcuts for the most frequent case, only for speed: a primitive without parameters whose
    # rule is the elementwise one (`rule.elementwise`), applied to this level's boxes as they are
    # when their rows line up (the same batch axis in arguments of the same rank, or an
    # unbatched argument too short to reach the batch axis). `process` gives the same.

    def process_one(self, prim: Primitive, x: Box) -> Any:
        if _is_elementwise(prim):
            try:
                if self.active is None:
                    return Box(bind_one(prim, x.value), self, x.aux)
                out = self._recorded(_one_lined_up, self, prim, x)
                if out is not None:
                    return out
            except Exception:  # (some rows may raise it: `process` sees to that)
                pass
        return self.process(prim, (x,), _NO_PARAMS)

    def process_two(self, prim: Primitive, x: Any, y: Any) -> Any:
        if _is_elementwise(prim):
            try:
                if self.active is None:
                    out = _two_lined_up(self, prim, x, y)
                else:
                    out = self._recorded(_two_lined_up, self, prim, x, y)
                if out is not None:
                    return out
            except Exception:  # (some rows may raise it: `process` sees to that)
                pass
        return self.process(prim, (x, y), _NO_PARAMS)

    def _recorded(self, shortcut, *args):
        """A shortcut while only the active rows are on their own path: None (`process` then
        reports the active rows' errors, see `_apply_for_active`) where NumPy met a
        floating-point error that the user's settings report."""
        met = []
        with _np.errstate(all="call", call=lambda _kind, flag: met.append(flag)):
            out = shortcut(*args)
        return None if met and _reported(met, _np.geterr()) else out

    def _box(self, value, dim):
        return value if dim is None else Box(value, self, dim)

    def read(self, box: Box) -> Any:
        rows = _np.asarray(primal(box.value))
        if box.aux:
            rows = _np.moveaxis(rows, box.aux, 0)
        active = self.active
        seen = rows if active is None else rows[active]
        if len(seen):
            first = seen[0]
            same = seen == first
            if seen.dtype.kind in "fc":
                same |= (seen != seen) & (first != first)  # nan reads as nan in every row
                same &= _same_signs(seen, first)  # and -0.0 is not 0.0 (atan2 tells them apart)
            if same.all():
                return first[()] if first.ndim == 0 else first
        groups = _grouped(seen)
        if active is not None:
            groups = [active[g] for g in groups]
        signal = Diverged(self, groups)
        if core.watch is not None:
            raise signal  # a watcher must not see the rows that go on another's path
        keep = max(range(len(groups)), key=lambda i: len(groups[i]))
        self.active = groups[keep]
        self.pending += [g for i, g in enumerate(groups) if i != keep]
        value = rows[self.active[0]]
        return value[()] if value.ndim == 0 else value


def _one_lined_up(level, prim, x):
    return Box(bind_one(prim, x.value), level, x.aux)


def _two_lined_up(level, prim, x, y):
    """The elementwise `prim` on `level`'s boxes x and y (either may be a value the same for
    every row) where their rows line up, else None."""
    x_own = type(x) is Box and x.level is level
    y_own = type(y) is Box and y.level is level
    if x_own and y_own:
        xv, yv, d = x.value, y.value, x.aux
        if y.aux == d and _ndim(xv) == _ndim(yv):
            return Box(bind_two(prim, xv, yv), level, d)
    elif x_own:
        xv, d = x.value, x.aux
        if _ndim(y) < _ndim(xv) - d and not (prim is add_any and type(y) is Box):
            return Box(bind_two(prim, xv, y), level, d)
    else:
        yv, d = y.value, y.aux
        if _ndim(x) < _ndim(yv) - d and not (prim is add_any and type(x) is Box):
            return Box(bind_two(prim, x, yv), level, d)
    # (add_any's rules take operands of one shape: an outer level's traced value the same for
    # every row goes to its batching rule, which broadcasts it to the rows first)
    return None


def _raises_alone(prim, vals, dims, params, i) -> bool:
    """Whether the primitive raises on row i alone."""
    row = [v if d is None else _np.take(v, [i], axis=d) for v, d in zip(vals, dims)]
    try:
        row_by_row(prim, row, dims, params, 1)
    except Exception:
        return True
    return False


# NumPy's floating-point error flags (the second argument of an `np.seterrcall` function), by
# the name of the setting that says how each is reported
_FLAGS = {"divide": 1, "over": 2, "under": 4, "invalid": 8}


def _reported(flags, settings) -> bool:
    """Whether the errors NumPy flagged (`flags`) include one that `settings` report."""
    met = 0
    for flag in flags:
        met |= flag
    return any(met & bit and settings[name] != "ignore" for name, bit in _FLAGS.items())
