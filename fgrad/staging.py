"""Staging, `jit`'s level: run a function once, eagerly, and record what it computes.

A `StagingLevel` box is `Box(value, level, slot)`: `value` is what the traced code computes
now, and `slot` numbers it in the record (the inputs are slots 0 to n-1, each operation's
outputs take the next numbers). A primitive applied to such boxes is applied to the values
under them (outer levels trace it as usual) and appended to the record as an `Op`: the
primitive, its inputs (slots, or the values that are not this level's boxes) and its
parameters. Operations without a derivative (comparisons, `argmax`, ...) are recorded too: the
level `reads_values`, so `NondiffPrimitive` hands them to it.

Guards
------
Python reads values: `if x > 0`, `float(x)`, `while err > tol`, an index from `argmax`, a
rule's check for ties. Reading a box of this level (`StagingLevel.read`) gives the value and
appends a `Guard`: the slot read and the value it had (`guard_key`, bit for bit). A replay
computes the same slot and goes on only where it reads the same value; elsewhere the function
runs again (see `fgrad.jit`). So a record is a straight-line program valid for every input of
its signature that reads the same values at its guards.

What a record cannot hold
-------------------------
A value of an outer transform that the function reads from outside its arguments (a closure
over a value `grad` is differentiating, say) is not an input of the record: a replay would
use the old one. Such a record is `unsafe` (with the reason): `jit` runs the function as it
is instead of keeping the record. The same for a traced value inside a primitive's parameters.

Imports: `fgrad.core`.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as _np

from . import core
from .core import (
    _NO_PARAMS,
    _PLAIN,
    Box,
    Level,
    NondiffPrimitive,
    Primitive,
    bind,
    bind_one,
    bind_two,
    dtype_of,
    innermost,
    primal,
    shape_from_values,
    shape_of,
)

__all__ = [
    "CANNOT_RECORD",
    "CLOSES_OVER",
    "HANDED_A_CLOSURE",
    "Const",
    "Guard",
    "Op",
    "StagingLevel",
    "constant",
    "guard_key",
    "same_op",
    "shape_key",
    "user_line",
]


# The start of `StagingLevel.unsafe` when a primitive's own function (a custom rule's, a
# checkpoint's) computed with the level's boxes: `jit` then runs the function again without
# the level, as this call's result was computed with the levels nested wrongly.
CLOSES_OVER = "a custom rule, checkpoint or primitive closes over a traced value"
# The same, for what `cannot_record` is told (its reason follows)
CANNOT_RECORD = "a value of the function being recorded is read where a replay cannot give it"
# The start of `StagingLevel.unsafe` when a checkpoint's function reads one of the level's
# values from its closure (`closed_over`): this call's result is right (the function ran with
# this call's values), but a replay would run it with them again.
HANDED_A_CLOSURE = "a checkpoint's function closes over a traced value"


class Const:
    """A Python int that is an input of an operation but not a slot (slots are ints): a
    constant of the function. Every other constant (a float, an array the function made or
    closes over) stands in an operation's inputs as it is, by reference."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def constant(ref) -> Any:
    """The value of an input of an operation that is not a slot."""
    return ref.value if type(ref) is Const else ref


class Op(NamedTuple):
    """`outs = prim(*ins, **params)`: `ins` holds slots (int) and constants (see `Const`);
    `outs` is a tuple of slots, one per output; `many` says the result is a tuple to unpack
    (one slot per element) rather than one value; `source` is the user's line, when kept.

    A record holds each operation as a plain tuple of these fields in this order (making an
    `Op` costs five times a tuple's time, and a recording makes one per operation); `Op(*op)`
    gives the named view."""

    prim: Any
    ins: tuple
    params: dict
    outs: tuple
    many: bool = False
    source: str | None = None


def same_op(a: tuple, b: tuple) -> bool:
    """Whether two recorded operations are the same primitive on the same slots with equal
    constants (a function run again makes new constants, equal to the old ones unless it
    depends on state that is not an argument)."""
    if a[0] is not b[0] or a[3] != b[3] or len(a[1]) != len(b[1]) or a[2].keys() != b[2].keys():
        return False
    for x, y in zip(a[1], b[1]):
        if (type(x) is int) != (type(y) is int):
            return False
        if type(x) is int:
            if x != y:
                return False
        elif not _equal_values(constant(x), constant(y)):
            return False
    return all(_equal_params(v, b[2][k]) for k, v in a[2].items())


def _equal_params(a, b) -> bool:
    """Whether two parameters of an operation are equal: values (numbers, arrays, strings,
    tuples of them) compared as values; an object of another kind (a custom rule's call, made
    anew at every call of the rule) by its type alone."""
    if type(a) is not type(b):
        return False
    if a is None or isinstance(
        a, (int, float, complex, str, bytes, tuple, _np.ndarray, _np.generic)
    ):
        return _equal_values(a, b)
    return True


def _equal_values(a, b) -> bool:
    """Whether two constants are the same value (bit for bit, for numbers and arrays)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is _np.ndarray or isinstance(a, (_np.generic, float, complex)):
        return guard_key(a) == guard_key(b)
    if type(a) is tuple:  # (an index: arrays, slices and numbers, each compared as a value)
        return len(a) == len(b) and all(_equal_values(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # an object that cannot say: not known to be equal
        return False


class Guard:
    """The traced code read slot `slot` and got the value whose `guard_key` is `key`;
    `source` is the user's line that read it ("file:line"). `kind` says what was read:
    "value" (`primal`), "whole" (every row of the batches the value is in at once,
    `innermost`: a rule's bound that must serve every row, `read_whole`), "shape" (the
    slot's shape, `shape_key`: the output of a primitive whose shape depends on values,
    `core.shape_from_values`) or "layout" (what `reader`, a function of the slot's value,
    gives: where NumPy's result depends on the memory layout, as order='A' or 'K' does,
    `read_with`)."""

    __slots__ = ("key", "kind", "reader", "slot", "source")

    def __init__(self, slot, key, source, kind="value", reader=None):
        self.slot = slot
        self.key = key
        self.source = source
        self.kind = kind
        self.reader = reader

    @property
    def shape(self) -> bool:
        return self.kind == "shape"

    @property
    def direct(self) -> bool:
        """Whether a replay compares what it reads with the key as it is (not its
        `guard_key`)."""
        return self.kind == "shape" or self.kind == "layout"

    def at(self, slot) -> Guard:
        """This guard, of another slot (the same value computed once, `jit`'s repeats)."""
        return Guard(slot, self.key, self.source, self.kind, self.reader)


def shape_key(v) -> tuple:
    """What a shape guard compares: the shape and dtype (a tuple of them for a tuple of
    arrays). The dtype too: NumPy's `eig` and SciPy's `sqrtm` give a real or a complex result
    by the values, and the operations after them were recorded for one of the two."""
    if type(v) is tuple:
        return tuple(shape_key(e) for e in v)
    return (tuple(shape_of(v)), dtype_of(v))


def guard_key(v) -> Any:
    """What a guard compares: the value read, bit for bit (so -0.0 is not 0.0, and a nan
    equals itself). A bool, integer or boolean scalar is its own key (cheap to compare);
    anything else is (dtype, shape, bytes)."""
    t = type(v)
    if t is bool or t is _np.bool_ or t is int or isinstance(v, _np.integer):
        return v
    a = _np.asarray(v)
    return (a.dtype.str, a.shape, a.tobytes())


_new_box = object.__new__

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# the file name of a compiled record (`fgrad.jitting`)
RECORD_FILE_PREFIX = "<fgrad.jit record of "
# NumPy's own functions call back into fgrad (`np.full(n, v)` reads `n` through its
# `__index__`): their frames are not the user's either
_NOT_USERS = (_PACKAGE_DIR + os.sep, os.path.dirname(os.path.abspath(_np.__file__)) + os.sep)


# The user's line of the guard a replay is reading (`read_at`), per thread
_reading = threading.local()


def read_at(source: str | None, read, v: Any) -> Any:
    """`read(v)` in a replay of a record under another recording (a traced `v`): the guard the
    other records on the value read names `source`, the line of the function that read it
    when the replayed record was made, not the line that called the replay (the replay's
    frames are fgrad's)."""
    _reading.source = source
    try:
        return read(v)
    finally:
        _reading.source = None


def user_line(depth: int = 2) -> str | None:
    """'file:line' of the innermost frame outside fgrad and NumPy (the user's code), or
    None. In a replay's read of a guard (`read_at`), that guard's own line."""
    source = getattr(_reading, "source", None)
    if source is not None:
        return source
    frame = user_frame(depth + 1)
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def user_frame(depth: int = 2) -> Any:
    """The innermost frame outside fgrad and NumPy (the user's code), or None."""
    frame: Any
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return None
    while frame is not None:
        filename = frame.f_code.co_filename
        # (a replay's compiled record, `<fgrad.jit record of f>`, is fgrad's code too: the
        # line that called the jitted f is the user's)
        if not (
            os.path.abspath(filename).startswith(_NOT_USERS)
            or filename.startswith(RECORD_FILE_PREFIX)
        ):
            return frame
        frame = frame.f_back
    return None


class StagingLevel(Level):
    """A `jit` recording in progress: `items` holds its operations (`Op` tuples) and `Guard`s,
    in the order they
    happened; `unsafe` says why the record must not be replayed (None when it may)."""

    __slots__ = ("guarded", "items", "n_slots", "reads", "sources", "types", "unsafe")

    reads_values = True
    stages = True

    def __init__(self, sources: bool = False):
        super().__init__()
        self.items: list = []
        self.n_slots = 0
        self.guarded: set = set()
        self.reads = 0  # values read (`read`): a read inside a primitive's computation
        self.unsafe: str | None = None
        # For printing a record (`make_record`): each operation keeps the user's line, and
        # `types` each slot's dtype and shape.
        self.sources = sources
        self.types: dict = {}

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        if not params and 0 < len(args) < 3:
            # (the calls other levels' rules make by `bind`: most are of one or two operands
            # without parameters, as `vmap`'s elementwise rule's; the shortcuts below)
            return (
                self.process_two(prim, *args) if len(args) == 2 else self.process_one(prim, *args)
            )
        return self._process(prim, args, params)

    def _process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        vals, ins = [], []
        plain = core.watch is None  # whether every value is a plain number or NumPy array
        for a in args:
            if type(a) is Box and a.level is self:
                v = a.value
                vals.append(v)
                ins.append(a.aux)
                plain = plain and type(v) in _PLAIN
            else:
                plain = plain and type(a) in _PLAIN
                if type(a) is Box and self.unsafe is None:
                    self.unsafe = (
                        f"{prim.name} was applied to a value of an outer transform that is not "
                        "an argument of the function (a closure over it)"
                    )
                vals.append(a)
                ins.append(Const(a) if type(a) is int else a)
        traced = None  # a parameter that is (or holds) a box: read by the computation?
        if params:
            for key, value in params.items():
                if type(value) is Box or (
                    type(value) in (list, tuple) and any(type(v) is Box for v in value)
                ):
                    traced = key
        recorded, reads = len(self.items), self.reads
        try:
            if type(prim) is NondiffPrimitive:
                ans = prim(*vals, **params)
            elif plain:  # no box, list or other library's array: the impl, as `bind` would
                ans = prim.impl(*vals, **params)
            else:
                ans = bind(prim, tuple(vals), params)
        except Exception:
            self.raised(prim)
            raise
        if traced is not None or self.reads != reads or len(self.items) != recorded:
            params = self._traced_params(prim, params, recorded, self.reads != reads, traced)
        # Several outputs: a primitive's with `multiple_results`, or a tuple of arrays from
        # one without a derivative (`nonzero`): each output is a slot and a box of its own.
        many = prim.multiple_results or (type(prim) is NondiffPrimitive and type(ans) is tuple)
        parts = ans if many else (ans,)
        first = self.n_slots
        self.n_slots += len(parts)
        outs = tuple(range(first, first + len(parts)))
        source = user_line() if self.sources else None
        self.items.append((prim, tuple(ins), params, outs, many, source))
        if self.sources:
            for s, a in zip(outs, parts):
                self.types[s] = describe_value(a)
        if prim in shape_from_values:  # later operations were recorded for these shapes
            line = source or user_line()
            for s, a in zip(outs, parts):
                self.items.append(Guard(s, shape_key(a), line, "shape"))
        if many:
            return tuple(Box(a, self, s) for a, s in zip(parts, outs))
        return Box(ans, self, first)

    def _traced_params(self, prim: Primitive, params: dict, recorded: int, read, traced) -> dict:
        """After a primitive's computation that read this level's values (`read`) or
        recorded items (from `recorded` on), or whose parameter `traced` holds a box: the
        parameters to record. A Python-int argument as
        a slice bound (`x[:n]`) or in a shape (`reshape(n, -1)`) is read by the computation
        (through `__index__`), as `int(n)` reads it, with a guard: the record holds the
        value read, and a replay that reads another takes a new path. (Only here, after
        the fact: looking into every operation's parameters for boxes cost 1-2 us each.)
        A value read or computed with other than through the parameters comes from a
        closure (a checkpoint or a custom rule closing over an argument of the jitted
        function): a replay would run it with this call's value, so the record is unsafe;
        so is a parameter holding a box the computation did not read as a number."""
        boxes: set = set()
        concrete = {key: self._read_in(value, boxes) for key, value in params.items()}
        new = self.items[recorded:]
        closure = any(type(item) is not Guard or item.slot not in boxes for item in new)
        if self.unsafe is None and (closure or (read and not boxes)):
            del self.items[recorded:]
            self.unsafe = (
                f"{CLOSES_OVER} ({prim.name}'s function, or the one that computed its "
                "arguments (a primitive's fprop under vmap, applied to each row), reads a "
                "traced value of the function being recorded other than through its "
                "arguments, which a replay would read "
                "as this call's value, and its result here nests the transforms the wrong way "
                "round): this function runs eagerly for these shapes and dtypes. Pass the "
                "value to that function as an argument instead"
            )
        if self.unsafe is None and traced is not None and _holds_box(concrete[traced]):
            self.unsafe = f"{prim.name}'s parameter {traced} is a traced value"
        return concrete

    def _read_in(self, v: Any, boxes: set) -> Any:
        """`v` (a parameter, or a part of one: a slice's bound, a tuple's item) with this
        level's boxes read (their slots added to `boxes`); `v` itself where it holds none."""
        t = type(v)
        if t is Box:
            if v.level is not self or type(v.value) is Box:
                return v  # (a value an outer transform also traces is no one number)
            boxes.add(v.aux)
            return self.read(v)
        if t is slice:
            parts: Any = (v.start, v.stop, v.step)
        elif t is tuple or t is list:
            parts = v
        else:
            return v
        read = [self._read_in(p, boxes) for p in parts]
        if all(a is b for a, b in zip(read, parts)):
            return v
        return slice(*read) if t is slice else t(read)

    # Shortcuts for a primitive of one or two arguments without parameters (most of a
    # program), only for speed: `_process` gives the same record. The output's box is made by
    # setting its slots, as in the reverse level.

    def process_one(self, prim: Primitive, x: Box) -> Any:
        if (
            prim.multiple_results
            or type(prim) is NondiffPrimitive
            or self.sources
            or prim in shape_from_values  # (its guard: `_process`)
        ):
            return self._process(prim, (x,), _NO_PARAMS)
        xv = x.value
        try:
            ans = bind_one(prim, xv) if type(xv) is Box else prim.impl(xv)
        except Exception:
            self.raised(prim)
            raise
        slot = self.n_slots
        self.n_slots = slot + 1
        self.items.append((prim, (x.aux,), _NO_PARAMS, (slot,), False, None))
        box = _new_box(Box)
        box.value, box.level, box.aux = ans, self, slot
        return box

    def process_two(self, prim: Primitive, x: Any, y: Any) -> Any:
        if (
            prim.multiple_results
            or type(prim) is NondiffPrimitive
            or self.sources
            or prim in shape_from_values
        ):
            return self._process(prim, (x, y), _NO_PARAMS)
        if type(x) is Box and x.level is self:
            xv, xi = x.value, x.aux
        elif type(x) is Box:
            return self._process(prim, (x, y), _NO_PARAMS)  # an outer box: not an input
        else:
            xv, xi = x, (Const(x) if type(x) is int else x)
        if type(y) is Box and y.level is self:
            yv, yi = y.value, y.aux
        elif type(y) is Box:
            return self._process(prim, (x, y), _NO_PARAMS)
        else:
            yv, yi = y, (Const(y) if type(y) is int else y)
        try:
            ans = (
                bind_two(prim, xv, yv) if type(xv) is Box or type(yv) is Box else prim.impl(xv, yv)
            )
        except Exception:
            self.raised(prim)
            raise
        slot = self.n_slots
        self.n_slots = slot + 1
        self.items.append((prim, (xi, yi), _NO_PARAMS, (slot,), False, None))
        box = _new_box(Box)
        box.value, box.level, box.aux = ans, self, slot
        return box

    def raised(self, prim: Primitive) -> None:
        """`prim` raised on the values being recorded. If the function catches it (a
        try/except around `inv`), the record would hold the path the exception took, with no
        operation to raise it again: a replay at values where it does not raise would take
        that path all the same. Such a record is not kept."""
        if self.unsafe is None or not self.unsafe.startswith("an operation raised"):
            self.unsafe = (
                f"an operation raised while the function was recorded ({prim.name}), and the "
                "function went on (it caught the exception): a replay cannot take the path an "
                "exception takes, so this function runs eagerly for these shapes and dtypes. "
                "Check the values before the operation instead (an `if` is guarded)"
            )

    def read(self, box: Box) -> Any:
        self.reads += 1
        value = primal(box.value)
        slot = box.aux
        if slot not in self.guarded:  # a second read of a slot reads the same value
            self.guarded.add(slot)
            self.items.append(Guard(slot, guard_key(value), user_line()))
        return value

    def read_rewritten(self, box: Box) -> None:
        # a free variable a checkpoint or a solve reads as another value in each call (a
        # traced input in its backward pass): a replay would keep this call's
        if self.unsafe is None:
            self.unsafe = (
                "the function read a value of an outer transform from a closure inside a "
                "checkpoint or a solve, which reads it as another value in each call"
            )

    def closed_over(self, box: Box, who: str, checkpoint: bool = False) -> None:
        """A function handed to `who` (a SciPy solver, or a `checkpoint` when `checkpoint`)
        reads `box`, a value of this level, from its closure: a replay would not compute with
        the new value. A solver's record is not kept: each call records again, silently (a
        closure is how a solver's function is usually written). A checkpoint's makes the
        function run eagerly from then on, with a warning (docs/jit.md)."""
        # (a SciPy solver calls the function with its own buffers, which it overwrites; a
        # checkpoint's replay runs it again: either would compute with this call's value)
        if self.unsafe is None and checkpoint:
            self.unsafe = (
                f"{HANDED_A_CLOSURE} of the function being recorded ({who}): a replay would "
                "run it with this call's value, so this function runs eagerly for these "
                "shapes and dtypes. Pass the value to that function as an argument instead"
            )
        elif self.unsafe is None:
            self.unsafe = (
                f"{who} was handed a function that closes over a traced value of the function "
                "being recorded; its later calls are not operations a record can replay (they "
                "would read this call's value): pass the value to it as an argument"
            )

    def cannot_record(self, reason: str) -> None:
        if self.unsafe is None:
            self.unsafe = (
                f"{CANNOT_RECORD} ({reason}): this function runs eagerly for these shapes and "
                "dtypes"
            )

    def read_with(self, box: Box, reader, key) -> None:
        """Record that the traced code read `key`, which is `reader(box.value)`, as a guard
        that a replay checks by calling `reader` on the slot's value: for what NumPy reads of
        an array besides its values, shape and dtype (the memory layout, which order='A'
        and 'K' follow and a signature does not hold: `fgrad.numpy.shaping`)."""
        read = (box.aux, reader)
        if read not in self.guarded:  # a second read of a slot reads the same
            self.guarded.add(read)
            self.items.append(Guard(box.aux, key, user_line(), "layout", reader))

    def read_whole(self, box: Box) -> Any:
        """The values under `box` in every row of the batches they are in (`innermost`),
        recorded as a guard: what a rule reads for a bound or a check that serves every row
        (`fgrad.numpy.shaping.all_rows`), without splitting a batch."""
        value = innermost(box.value)
        self.items.append(Guard(box.aux, guard_key(value), user_line(), "whole"))
        return value


def describe_value(v) -> str:
    """`f64[3,2]`: a value's dtype and shape, as a record prints them."""
    v = innermost(v)
    dtype = getattr(v, "dtype", None)
    if dtype is None:
        return type(v).__name__
    shape = getattr(v, "shape", ())
    return f"{dtype.kind}{dtype.itemsize * 8}[{','.join(str(n) for n in shape)}]"


def _holds_box(v) -> bool:
    t = type(v)
    if t is Box:
        return True
    if t is slice:
        return _holds_box((v.start, v.stop, v.step))
    return (t is tuple or t is list) and any(_holds_box(p) for p in v)
