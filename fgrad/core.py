"""The core of fgrad: boxes, levels, `bind` and primitives. The transforms are levels defined in
modules of their own (`fgrad.reverse`: the K transform; `fgrad.forward`: forward mode).

How a derivative is computed
----------------------------
Every transform call (`grad`, `vjp`, `jvp`, ...) opens a *level*: an object on a per-thread stack.
Inputs are wrapped in a `Box(value, level, aux)`; what `aux` holds is the level's business (a
tape position, a tangent). A primitive applied to arguments that include boxes is processed by
the innermost live level among them (`bind`). That level strips its own boxes, applies the
primitive again to what is left (so boxes of outer levels are processed by their own levels: no
perturbation confusion), and records what it needs by the primitive's rules. Rules are written
in fgrad operations, so the rules a level applies are themselves traced by the levels outside
it: that is all higher-order differentiation needs.

A primitive has one output, or several (`multiple_results`): then its value is a tuple, each
output is a box of its own, a reverse rule receives one cotangent per output (`None` for an
output nobody used) and a forward rule returns one tangent per output.

A box whose level has exited is just the value it carries; `bind` unwraps it.

Levels that batch
-----------------
A batching level (`vmap`'s, `fgrad.batching`) is not a derivative: its box holds one value per
row of a batch, along the axis in `aux`, and that axis is not part of the value the traced code
sees. So `shape_of` leaves it out, a non-differentiable primitive keeps such boxes (its result
is different for each row), and reading a box's plain value (`primal`, which `bool(x)` and
`float(x)` use) asks the level (`Level.read`): it gives the rows' common value or, when the
rows disagree, goes on with one group of rows that agree and leaves the others to run again
(see `fgrad.batching`, "Reading rows").

Levels that read values
-----------------------
Batching is one of three kinds of level whose boxes the traced code may read
(`Level.reads_values`): the others are a staging level (`jit`'s, `fgrad.staging`), whose boxes
hold the value itself and whose `read` records the value as a guard of the record, and a
placeholder's (`fgrad.forward.PlaceholderLevel`), whose `read` refuses, since its value stands
for every value. Batching and staging levels (`batches`, `stages`) see the operations without
a derivative too, and `constant_of` keeps their boxes: a constant still has one value per row,
or is still computed by the record from its inputs (`holds_staged`). A shape that depends on
values (`nonzero`) is guarded by a staging level for the primitives in `shape_from_values`.

Free variables
--------------
A function may close over boxes (through closure cells, globals, default arguments, `self`).
`capturing` runs a function with the live levels suspended and lists the boxes it reads;
`replacing` runs it again with those boxes replaced by other values. `checkpoint` uses both
to make a function's free variables explicit inputs of its primitive. Such blocks nest (a
checkpoint inside a checkpoint, a solve inside one): a box the inner block does not claim is
read by the blocks around it, innermost first, and what one of them reads it as is offered
again from the innermost (see `_live_value`); a `jit` recording inside keeps no record of it.

Watching
--------
`watch`, off (None) by default, is told of every value computed and of what each level is doing
(`Phase`): `make_graph` and `debug_nans` are built on it. Each primitive application checks it
once.

Two policies of the layers above
---------------------------------
The core holds two things that belong to the layers above it, because moving them out would
add a call to the two hottest paths of every program:

- NumPy's ufunc keywords. The arithmetic primitives (`add`, `multiply`, ...) are exported
  bare, without a wrapper with NumPy's signature, and their implementation is the ufunc
  itself; `Primitive.__call__` gives such a call with keywords to NumPy when no argument is
  traced, and refuses it (`out=`, `dtype=`, ...) when one is. The other ufunc mirrors parse
  the keywords in `fgrad.numpy` (`_ufunc_signature`).
- The Dask guard. `bind` applies a primitive to plain values itself, so it is where an array
  of another library (`fgrad.protocols.is_foreign_array`) is guarded against being computed
  whole behind the user's back (`dispatch_guard`), as the transforms are in
  `fgrad.boundary`.

This module imports the standard library, NumPy and `fgrad.protocols` (which imports NumPy
only). The NumPy layer (`fgrad.numpy`) attaches the array operators to `Box`; the core never
imports it.
"""

from __future__ import annotations

import contextlib
import os as _os
import sys as _sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as _np

from .protocols import dispatch_guard, is_foreign_array, refuse_lazy

if TYPE_CHECKING:
    from typing import Literal

    from typing_extensions import Self

__all__ = [
    "Box",
    "Level",
    "NondiffPrimitive",
    "Phase",
    "Primitive",
    "bind",
    "bind_one",
    "bind_two",
    "capturing",
    "dispatch_guard",
    "dtype_of",
    "enter_phase",
    "holds_batch",
    "holds_box",
    "holds_box_of",
    "holds_staged",
    "innermost",
    "is_fgrads",
    "is_foreign_array",
    "leave_phase",
    "live_leaves",
    "live_levels",
    "live_levels_of",
    "primal",
    "processing_level",
    "refuse_lazy",
    "replacements",
    "replacing",
    "shape_of",
    "whole_value",
    "zeros_like_value",
]


class _TraceState(threading.local):
    """The live levels of the current thread (innermost last), what they are doing while a
    watch is set, and how boxes of levels that are not live are read."""

    def __init__(self):
        self.stack = []
        self.phases = []
        self.rewrite = None
        self.batching = 0  # how many batching levels are on the stack
        self.reading = 0  # how many levels that read values (`Level.reads_values`) are on it


_state = _TraceState()


# --- boxes ----------------------------------------------------------------------------------------


class Box:
    """A value being differentiated by `level`; `aux` is the level's (a tape position, a
    tangent). The array operators and attributes (`+`, `@`, `.shape`, ...) are attached by
    `fgrad.numpy`.
    """

    __slots__ = ("aux", "level", "value")

    def __init__(self, value: Any, level: Level, aux: Any) -> None:
        self.value = value
        self.level = level
        self.aux = aux

    # A traced value is immutable (its operators make new ones; writes into it are refused),
    # so a copy of it is itself: `copy.deepcopy` of a function's parameters keeps them
    # traced. (Python's default copied the box and its level, a level no transform knew:
    # the gradient through the copy was silently 0.)
    def __copy__(self) -> Box:
        return self

    def __deepcopy__(self, memo: dict) -> Box:
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(
            f"cannot pickle a traced value (shape {getattr(self, 'shape', '?')}, dtype "
            f"{getattr(self, 'dtype', '?')}): it exists only while a transform runs. Pickle "
            "the transform's result instead, or copy.deepcopy the value inside the function"
        )


def primal(x: Any) -> Any:
    """The plain value under every box: what a constant at every level sees. A list or tuple
    (an array-like, as NumPy reads it) gets the plain values of its elements. A live batching
    level's box is read by its level (`Level.read`): the rows' common value, if they have one."""
    while type(x) is Box:
        level = x.level
        if level.reads_values and level.live:
            return level.read(x)
        x = x.value
    if type(x) is list or type(x) is tuple:
        return type(x)(primal(v) for v in x)
    return x


def holds_box(seq: Sequence[Any]) -> bool:
    """Whether a list or tuple holds a box, at any depth."""
    for v in seq:
        if type(v) is Box or ((type(v) is list or type(v) is tuple) and holds_box(v)):
            return True
    return False


_FGRAD_DIR = _os.path.dirname(_os.path.abspath(__file__)) + _os.sep


def is_fgrads(fn: Any) -> bool:
    """Whether `fn` (a function or a bound method) is fgrad's own code rather than a user's:
    what a user's rule reads through it, or `jit` watches in it, is not the user's state."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code is not None and _os.path.abspath(code.co_filename).startswith(_FGRAD_DIR)


def holds_box_of(x: Any, level: Level) -> bool:
    """Whether x's nesting of boxes holds a box of `level`."""
    while type(x) is Box:
        if x.level is level:
            return True
        x = x.value
    return False


def live_levels_of(leaves: Sequence[Any]) -> list[Level]:
    """The live levels of the boxes in `leaves`, at any depth of a box's nesting."""
    seen: dict[int, Level] = {}
    for x in leaves:
        while type(x) is Box:
            if x.level.live:
                seen[id(x.level)] = x.level
            x = x.value
    return list(seen.values())


def processing_level(inputs: Sequence[Any], vals: Sequence[Any]) -> Level:
    """The level applying a rule, given a primitive's inputs as bound and the values that level
    was handed: each level strips its own boxes before the next outer one sees the arguments,
    so it is the outermost level of `inputs` deeper than every live box in `vals`."""
    left = max((lv.depth for lv in live_levels_of(vals)), default=-1)
    return min((lv for lv in live_levels_of(inputs) if lv.depth > left), key=_depth)


def _depth(level: Level) -> int:
    return level.depth


def shape_of(x: Any) -> tuple:
    """x's shape as the code that holds x sees it: a live batching level's box leaves out its
    batch axis (`aux`), which holds the rows. Lists and tuples are read as NumPy reads them."""
    while type(x) is Box:
        level = x.level
        if level.batches and level.live:
            s = shape_of(x.value)
            d = x.aux
            return s[:d] + s[d + 1 :]
        x = x.value
    known: tuple | None = getattr(x, "shape", None)
    if known is not None:
        return known
    if (type(x) is list or type(x) is tuple) and holds_box(x):
        return (len(x),) + (shape_of(x[0]) if x else ())
    return _np.shape(x)


def innermost(x: Any) -> Any:
    """The value under every box, whatever its level: for a batched value, every row at once
    (for its type or dtype, or a check that must hold in each row, which reads no row)."""
    while type(x) is Box:
        x = x.value
    return x


def dtype_of(x: Any) -> _np.dtype:
    """The dtype of x's value (a Python float counts as float64, as in NumPy)."""
    x = innermost(x)
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype
    if type(x) is list or type(x) is tuple:  # an array-like: NumPy's dtype of its elements
        # (`result_type` of the list itself would read it as a structured dtype's fields)
        return _np.result_type(*[dtype_of(v) for v in x]) if x else _np.dtype(_np.float64)
    return _np.result_type(x)


def zeros_like_value(x: Any) -> Any:
    """A plain zero with x's shape (`shape_of`) and dtype (a NumPy scalar for shape ()); of
    x's own array type for an array of another library (a Dask array's zero keeps its chunks)."""
    v = innermost(x)
    if type(v) is not _np.ndarray and is_foreign_array(v) and v is x:
        return _np.zeros_like(v)
    s = shape_of(x)
    z = _np.zeros(s, dtype_of(x))
    return z[()] if not s else z


def is_differentiable_value(x: Any) -> bool:
    """Whether a value can carry a derivative: a float or complex array or number (a Python
    float a custom rule or checkpoint returns too: it is computed from its inputs)."""
    x = innermost(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return type(x) is float or type(x) is complex
    return dtype.kind in "fc"


def holds_batch(x: Any) -> bool:
    """Whether x's nesting of boxes holds a box of a live batching level (then x has one value
    per row, which NumPy code must not read as one array)."""
    if not _state.batching:
        return False
    while type(x) is Box:
        if x.level.batches and x.level.live:
            return True
        x = x.value
    return False


def holds_staged(x):
    """Whether x's nesting holds a box of a live level that reads values but does not batch
    (`jit`'s staging level): then x is a value the record computes, which code that meets it
    treats as a constant of every level that differentiates, not as one fixed array."""
    if not _state.reading:
        return False
    while type(x) is Box:
        level = x.level
        if level.stages and level.live:
            return True
        x = x.value
    return False


def whole_value(x: Any) -> Any:
    """x's values in every row of the batches it is in at once (`innermost`), for a bound or a
    check that must serve every row. A staging level (`jit`) among x's boxes records them as
    a guard (`StagingLevel.read_whole`): a record that decided something on them is replayed
    only where they are the same."""
    if _state.reading:
        v = x
        while type(v) is Box:
            if v.level.stages and v.level.live:
                return v.level.read_whole(v)
            v = v.value
    return innermost(x)


def constant_of(x: Any) -> Any:
    """x as a constant at every level that differentiates: without their boxes. The boxes of
    live levels that read values stay: a constant still has one value per row (batching), and
    is still computed from the recorded inputs (staging)."""
    if type(x) is Box:
        level = x.level
        if level.reads_values and level.live:
            if level.stages:
                # an operation of the record, so that a replay under a transform outside
                # the `jit` (grad of the jitted function) takes its result as a constant too
                return level.process(stop_gradient_p, (x,), _NO_PARAMS)  # type: ignore[arg-type]
            if level.batches:
                return Box(constant_of(x.value), level, x.aux)
            return level.read(x)  # a value taken as a constant is read (a placeholder's)
        return constant_of(x.value)
    if (type(x) is list or type(x) is tuple) and holds_box(x):
        return type(x)(constant_of(v) for v in x)
    return x


# How a list or tuple holding traced values becomes one traced array, as NumPy reads an
# array-like: a differentiable stack, which the NumPy layer provides when it is imported
# (the core never imports it). `bind` applies it to such arguments.
array_from_sequence = None


# --- levels ---------------------------------------------------------------------------------------


class Level:
    """A transform call in progress. Use as a context manager; boxes compare levels by
    identity. A subclass defines `process(prim, args, params)`: apply `prim` to `args`, some of
    which are this level's boxes, and return the result (boxed where it depends on them)."""

    __slots__ = ("__weakref__", "depth", "live")

    # Whether the level batches (its boxes hold rows, see "Levels that batch") rather than
    # differentiates.
    batches = False
    # Whether the level records a program (`jit`'s staging level, `fgrad.staging`).
    stages = False
    # Whether code reading the plain value of this level's box (`primal`, `constant_of`, a
    # comparison) asks the level (`read`): a batching level (the rows' common value), a
    # staging level (the value, recorded as a guard) and the level of a placeholder that must
    # not be read (`fgrad.forward.PlaceholderLevel`, which refuses). Such a level also sees the
    # operations without a derivative (`NondiffPrimitive`); `constant_of` keeps the boxes of a
    # batching or staging level (a constant still has one value per row, or is still computed
    # from the recorded inputs) and reads a placeholder's.
    reads_values = False

    def __init__(self) -> None:
        self.depth = -1
        self.live = False

    def __enter__(self) -> Self:
        stack = _state.stack
        self.depth = len(stack)
        self.live = True
        stack.append(self)
        if self.batches:
            _state.batching += 1
        if self.reads_values:
            _state.reading += 1
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        # Leave no state behind, even when the traced function raised.
        self.live = False
        if self.batches:
            _state.batching -= 1
        if self.reads_values:
            _state.reading -= 1
        stack = _state.stack
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            stack.remove(self)
        return False

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        raise NotImplementedError

    # `bind_one` and `bind_two` call these for a primitive without parameters whose box
    # argument is this level's (`process_two`: one of x, y); a level may answer faster here.
    def process_one(self, prim: Primitive, x: Box) -> Any:
        return self.process(prim, (x,), _NO_PARAMS)

    def process_two(self, prim: Primitive, x: Any, y: Any) -> Any:
        return self.process(prim, (x, y), _NO_PARAMS)

    def read(self, box: Box) -> Any:
        """The plain value of this level's box, for code that reads it (a level that
        `reads_values`)."""
        raise NotImplementedError

    def read_whole(self, box: Box) -> Any:
        """Every row of the values under this level's box at once (a level that `stages`,
        see `whole_value`)."""
        raise NotImplementedError

    def read_rewritten(self, box: Box) -> None:
        """Called on a live level that `stages`, opened inside a `capturing` or `replacing`
        block, when the code it records reads a free variable (`box`) that the block reads as
        another value: that value is not an input of the record."""

    def closed_over(self, box: Box, who: str) -> None:
        """Called on a live level that `stages` when `who` (a SciPy solver) is handed a
        function closing over `box`: the solver's calls of it are not operations of the
        record, which must not be kept."""

    def cannot_record(self, reason: str) -> None:
        """Called on a live level that `stages` when a computation reads one of its values
        where a replay could not give it again (`reason` says where and what to do: a user
        primitive's fprop closing over it, a custom rule's nondiff argument): the record
        must not be kept, and the function runs again without the level."""

    def __repr__(self) -> str:
        state = "live" if self.live else "exited"
        return f"<{type(self).__name__} depth={self.depth} {state}>"


def live_levels() -> list[Level]:
    """The live levels of this thread, outermost first."""
    return [lv for lv in _state.stack if lv.live]


# --- primitives -----------------------------------------------------------------------------------


class Primitive:
    """An operation fgrad differentiates as a unit, through its rules.

    `impl(*args, **params)` computes the value with NumPy. Reverse mode takes one of:

    - `vjps`: one maker per input, `(ans, *args, **params) -> (ct -> cotangent of that input)`,
      called at forward time so that the closure keeps only the residuals it needs; `None`
      marks an input with no derivative. The built-ins with one output use these.
    - `vjp(wanted, ans, *args, **params) -> bprop`, where `wanted[i]` says whether input i needs
      a cotangent and `bprop(ct)` returns one cotangent (or None) per input.
    - `fprop(*args, **params) -> (ans, bprop)`: the value and the bprop together, written in
      fgrad operations (user primitives, custom rules).

    Forward mode takes `jvps` (one rule per input, `(t, ans, *args, **params)`, summed) or
    `jvp(tangents, ans, *args, **params)` (`tangents` has None for an input with no tangent);
    without either it transposes the reverse rule, which is linear in the cotangent. A rule
    returns None for a structural zero.

    With `multiple_results`, `impl` returns a tuple; bprops get a list with one cotangent per
    output (None for an output nobody used) and `jvp` returns one tangent (or None) per output.

    The rules of further transforms (batching, Taylor) are registered by
    `fgrad.primitive.register_rules` (or the builders' `batch=` and `taylor=`), beside the place
    where the primitive is defined; their tables live in those transforms' modules.
    """

    __slots__ = (
        "__weakref__",
        "fprop",
        "impl",
        "jvp",
        "jvps",
        "multiple_results",
        "name",
        "vjp",
        "vjps",
    )

    def __init__(
        self,
        name: str,
        impl: Callable,
        *,
        vjps: Sequence[Callable | None] | None = None,
        jvps: Sequence[Callable | None] | None = None,
        vjp: Callable | None = None,
        jvp: Callable | None = None,
        fprop: Callable | None = None,
        multiple_results: bool = False,
    ) -> None:
        if (vjps is not None) + (vjp is not None) + (fprop is not None) != 1:
            raise ValueError(f"primitive {name!r}: give exactly one of vjps, vjp and fprop")
        if jvps is not None and jvp is not None:
            raise ValueError(f"primitive {name!r}: give jvps (per input) or jvp, not both")
        if multiple_results and (vjps is not None or jvps is not None):
            raise ValueError(f"primitive {name!r}: several outputs need whole rules (vjp, jvp)")
        self.name = name
        self.impl = impl
        self.vjps = tuple(vjps) if vjps is not None else None
        self.jvps = tuple(jvps) if jvps is not None else None
        self.vjp = vjp
        self.jvp = jvp
        self.fprop = fprop
        self.multiple_results = multiple_results

    def __call__(self, *args: Any, **params: Any) -> Any:
        if params and isinstance(self.impl, _np.ufunc):  # a NumPy ufunc's keywords
            if not holds_box(args):
                return self.impl(*args, **params)  # plain values: NumPy's own, every keyword
            _refuse_ufunc_keywords(self.name, params)
        return bind(self, args, params)

    def __repr__(self) -> str:
        return f"<fgrad primitive {self.name}>"


def _refuse_ufunc_keywords(name, params):
    """The arithmetic primitives are NumPy's ufuncs, applied to traced values without keywords:
    `out=` would write into the user's array before anything else could refuse it."""
    given = ", ".join(sorted(params))
    raise TypeError(
        f"fgrad.numpy.{name} was called on a traced value with the keyword argument(s) "
        f"{given}, which it does not take there (fgrad returns values: it never writes into an "
        f"array, and chooses no loop); call {name}(x, y) and use the result, cast with "
        ".astype(dtype) if needed"
    )


class NondiffPrimitive:
    """An operation with no derivative (comparisons, floor, argmax, ...): it sees plain values,
    and its result is a constant at every level."""

    __slots__ = ("impl", "name")

    multiple_results = False

    def __init__(self, name: str, impl: Callable) -> None:
        self.name = name
        self.impl = impl

    def __call__(self, *args: Any, **params: Any) -> Any:
        if _state.reading:  # rows give different results, a record must compute it: the
            # levels that read values apply it
            return bind(self, tuple(constant_of(a) for a in args), params)
        return self.impl(*[primal(a) for a in args], **params)

    def __repr__(self) -> str:
        return f"<fgrad non-differentiable primitive {self.name}>"


def _same(x: Any) -> Any:
    return x


# `constant_of` (`stop_gradient`) of a value a `jit` record computes: the value itself, as an
# operation of the record (its batching rule, in fgrad.primitive, keeps the rows)
stop_gradient_p = NondiffPrimitive("stop_gradient", _same)


# Primitives (or NondiffPrimitives) whose outputs' shapes or dtypes depend on their inputs'
# values, not only on their shapes (nonzero, flatnonzero, argwhere; eig and sqrtm, real or
# complex): a staging level (`jit`) checks those shapes and dtypes at every replay, since later
# operations were recorded for them. (Written by `fgrad.primitive.register_rules`.)
shape_from_values: set = set()

# Primitives that raise on some values of inputs of valid shapes and dtypes (LAPACK's
# factorizations and solves: a matrix that is singular or not positive definite): a staging
# level (`jit`) replays them even where nothing reads their outputs, as a check eagerly made.
# (Written by `fgrad.primitive.register_rules`.)
raises_on_values: set = set()


# --- watching -------------------------------------------------------------------------------------

# When set (by `make_graph` and `debug_nans`, see `fgrad.provenance`), an object told of:
# `value(prim, args, params, ans)`: a primitive applied to plain values;
# `input(level, position, x)`: a reverse level made an input box at a tape position;
# `recorded(level, position, phase)`: a reverse level recorded the application `phase` at a tape
#     position (a primitive with n outputs: its outputs at the n positions after it);
# `cotangent(phase, ct, cts)`: a bprop returned the cotangents `cts` for `ct`;
# `tangent(phase, args, t)`: a forward rule returned the tangent `t`.
# While it is set, the levels keep `_state.phases`, the stack of what they are doing.
watch: Any = None  # a provenance.Watcher, which the core does not import


class Phase:
    """What a level is doing, while a watch is set. `kind` is "apply" (the level applies `prim`
    to the values under its boxes), "residual" (a reverse level builds prim's bprop at forward
    time), "tangent" (a forward level applies prim's forward rule), "backward" (a reverse level's
    backward pass applies the bprop of tape entry `position` to the cotangent `ct`) or "sum" (it
    sums two cotangents of the value at `position`). `note` is the watcher's."""

    __slots__ = ("ct", "kind", "level", "note", "position", "prim")

    def __init__(
        self,
        kind: str,
        level: Level,
        prim: Primitive | NondiffPrimitive | None = None,
        position: int | None = None,
        ct: Any = None,
    ) -> None:
        self.kind = kind
        self.level = level
        self.prim = prim
        self.position = position
        self.ct = ct
        self.note = None

    def __repr__(self) -> str:
        name = self.prim.name if self.prim is not None else ""
        at = f" @{self.position}" if self.position is not None else ""
        return f"<Phase {self.kind} {name}{at} of {self.level!r}>"


def enter_phase(
    kind: str,
    level: Level,
    prim: Primitive | NondiffPrimitive | None = None,
    position: int | None = None,
    ct: Any = None,
) -> Phase:
    phase = Phase(kind, level, prim, position, ct)
    _state.phases.append(phase)
    return phase


def leave_phase(phase: Phase) -> None:
    phases = _state.phases
    if phases and phases[-1] is phase:
        phases.pop()
    elif phase in phases:  # phases above it were left by an exception
        del phases[phases.index(phase) :]


def phases() -> list[Phase]:
    """The current thread's phases, outermost first (empty unless a watch is set)."""
    return _state.phases


# --- bind -----------------------------------------------------------------------------------------


def bind(prim: Primitive | NondiffPrimitive, args: Sequence, params: dict) -> Any:
    """Apply `prim` to `args`: plain NumPy when no live box is present, else the innermost level."""
    level = None
    for a in args:
        kind = type(a)
        if kind is Box:
            lv = a.level
            if not lv.live:
                return bind(prim, tuple(_live_value(b) for b in args), params)
            if level is None or lv.depth > level.depth:
                level = lv
        elif (kind is list or kind is tuple) and holds_box(a):
            packed = tuple(_packed(b) for b in args)
            return bind(prim, packed, params)
    if level is None:
        if "dask" in _sys.modules and any(is_foreign_array(a) for a in args):
            with dispatch_guard():  # Dask may not compute a whole array behind the user's back
                ans = prim.impl(*args, **params)
        else:
            ans = prim.impl(*args, **params)
        if watch is not None:
            watch.value(prim, args, params, ans)
        return ans
    return level.process(prim, args, params)


# shared and never written: for primitives applied without parameters
_NO_PARAMS: dict[str, Any] = {}

# The types `bind_one` applies a primitive to directly; anything else (a list, an array of
# another library, which `bind` guards) takes `bind`.
_PLAIN = frozenset(
    (_np.ndarray, float, int, complex, bool)
    + tuple(_np.dtype(c).type for c in "efdgFDGbhilqBHILQ?")
)


def bind_one(prim: Primitive, x: Any) -> Any:
    """`bind` for a primitive of one argument without parameters: the most frequent call (the
    unary functions, in programs and in bprops), so it skips bind's scan of the arguments."""
    kind = type(x)
    if kind is Box:
        level = x.level
        if level.live:  # a box's level is the innermost of the levels it nests
            return level.process_one(prim, x)
    elif kind in _PLAIN and watch is None:
        return prim.impl(x)
    return bind(prim, (x,), _NO_PARAMS)


def bind_two(prim: Primitive, x: Any, y: Any) -> Any:
    """`bind` for a primitive of two arguments without parameters (the arithmetic operators,
    the sum of two cotangents): the common cases skip bind's scan of the arguments."""
    kx, ky = type(x), type(y)
    if kx is Box:
        lx = x.level
        if ky is Box:
            ly = y.level
            if lx.live and ly.live:
                return (lx if lx.depth >= ly.depth else ly).process_two(prim, x, y)
        elif lx.live and ky is not list and ky is not tuple:
            return lx.process_two(prim, x, y)
    elif ky is Box and kx is not list and kx is not tuple:
        ly = y.level
        if ly.live:
            return ly.process_two(prim, x, y)
    elif kx in _PLAIN and ky in _PLAIN and watch is None:  # no box: the impl itself
        return prim.impl(x, y)
    return bind(prim, (x, y), _NO_PARAMS)


def _packed(a):
    if (type(a) is list or type(a) is tuple) and holds_box(a):
        return array_from_sequence(a)
    return a


def _live_value(x):
    """x without boxes of levels that are not live (exited, or suspended by a rewrite).

    A box is offered to the innermost rewrite first, then to the ones it is nested in: a
    function run by `capturing` or `replacing` may itself run a function that way (a
    checkpoint inside a checkpoint), and a value the inner function reads from its closure
    may be one the outer block captures or replaces. What an outer rewrite reads the box as
    is offered again from the innermost rewrite (it may be a box of a level the inner block
    suspended), which, if it captures it, learns the boxes read as it (`_Capture.aliases`)."""
    read_as: tuple = ()
    depth = None  # the depth of the outermost rewrite that read x as something
    first = x
    while type(x) is Box and not x.level.live:
        found = _UNWRAP
        rewrite = _state.rewrite
        while rewrite is not None:
            found = rewrite.read(x, read_as)
            if found is not _UNWRAP:
                break
            rewrite = rewrite.outer
        if found is _UNWRAP or found is x:
            x = x.value
            continue
        depth = rewrite.depth if depth is None else min(depth, rewrite.depth)
        if type(rewrite) is _Replace:
            read_as += (x,)
        x = found
    if depth is not None and _state.reading:
        _tell_recorders(first, depth)
    return x


def live_leaves(leaves: Sequence[Any]) -> list:
    """The leaves as a primitive bound to them sees them (`bind`): a box of a level that is
    not live is read as the rewrites in effect read it (a free variable captured or replaced
    for a checkpoint or a solve), or as the value under it. A function that decides from its
    arguments' levels whether to bind a primitive at all reads them so."""
    return [_live_value(x) if type(x) is Box and not x.level.live else x for x in leaves]


def _tell_recorders(box, depth):
    """A level that records (`jit`'s), opened inside a rewrite (at `depth` or deeper), must not
    keep a record that holds what the rewrite read a free variable as: a later call reads the
    variable again (a checkpoint's backward pass reruns the function with it replaced by a
    traced input)."""
    for level in _state.stack[depth:]:
        if level.stages and level.live:
            level.read_rewritten(box)


# --- free variables: running a function again with the boxes it reads replaced --------------------

_UNWRAP = object()


class _Capture:
    """Lists the boxes of suspended levels a function reads (its free variables), and for each
    the boxes that an outer rewrite read as it (`aliases`): the names the function knows it
    by, which a later run must replace too, when that outer rewrite is no longer in effect."""

    __slots__ = ("aliases", "boxes", "depth", "outer", "positions", "suspended")

    def __init__(self, suspended):
        self.outer = None  # the rewrite this one is nested in (set by `_rewritten`)
        self.depth = 0  # the depth of the levels opened inside the block (set by `_rewritten`)
        self.suspended = suspended
        self.boxes = []
        self.aliases = []  # per box: a list of boxes
        self.positions = {}  # id of a box -> its index in `boxes`

    def read(self, x, read_as=()):
        if x.level not in self.suspended:
            return _UNWRAP
        i = self.positions.get(id(x))
        if i is None:
            i = self.positions[id(x)] = len(self.boxes)
            self.boxes.append(x)
            self.aliases.append([])
        self.aliases[i] += [b for b in read_as if all(b is not a for a in self.aliases[i])]
        return constant_of(x)


class _Replace:
    """Reads each of some boxes (by identity) as another value."""

    __slots__ = ("depth", "outer", "values")

    def __init__(self, values):
        self.outer = None  # the rewrite this one is nested in (set by `_rewritten`)
        self.depth = 0  # the depth of the levels opened inside the block (set by `_rewritten`)
        self.values = values

    def read(self, x, read_as=()):
        return self.values.get(id(x), _UNWRAP)


@contextlib.contextmanager
def _rewritten(rewrite, suspend):
    state = _state
    previous = state.rewrite
    suspended = [lv for lv in suspend if lv.live]
    for lv in suspended:
        lv.live = False
    rewrite.outer = previous
    rewrite.depth = len(state.stack)
    state.rewrite = rewrite
    try:
        yield rewrite
    finally:
        state.rewrite = previous
        for lv in suspended:
            lv.live = True


def capturing() -> contextlib.AbstractContextManager[_Capture]:
    """Within the block, every live level that differentiates is suspended: a function run
    there computes with the values under their boxes, and the boxes of those levels that it
    reads are listed, in order, in the `boxes` of the object the block gives (with, in its
    `aliases`, the boxes read as each through an enclosing block: see `replacements`). Levels
    that read values stay live: batching levels' rows are still computed together, and a
    staging level still records (but keeps no record that read a free variable: see
    `Level.read_rewritten`)."""
    levels = [lv for lv in live_levels() if not (lv.batches or lv.stages)]
    return _rewritten(_Capture(set(levels)), levels)


def replacements(boxes: Sequence[Box], aliases: Sequence[Sequence[Box]], values: Sequence) -> dict:
    """The `values` of `replacing` that read each of `boxes` (a capture's), and each box read
    as it when it was captured (its `aliases`), as the value at its position."""
    replaced = {}
    for box, names, v in zip(boxes, aliases, values):
        replaced[id(box)] = v
        for name in names:
            replaced[id(name)] = v
    return replaced


def replacing(
    values: dict, suspend: Sequence[Level] = ()
) -> contextlib.AbstractContextManager[_Replace]:
    """Within the block, a box whose id is a key of `values` is read as that value, provided
    its level is not live; the levels in `suspend` are made not live for the block. The boxes
    must be kept alive by the caller while the block runs (ids are only unique among live
    objects)."""
    return _rewritten(_Replace(values), suspend)


# --- the sum of two cotangents (or tangents) of the same value ------------------------------------
# It lives in the core because the backward pass needs it; it is a primitive so that
# accumulation is differentiated too.


def _identity_bprop(ans, x, y):
    return _identity


def _identity(ct):
    return ct


def _pass_tangent(t, ans, x, y):
    return t


def _sum_of(x: Any, y: Any) -> Any:
    """x + y, the sum of two cotangents (or tangents): `np.add`, but for two NumPy scalars of
    one float or complex type NumPy's scalar arithmetic (Python's `+`: 0.04 us, where the
    ufunc takes 0.5 to make arrays of them; a gradient of a scalar function sums one per use
    of an input), which gives the same IEEE sum and type."""
    kind = type(x)
    if kind is type(y) and kind in _SCALAR_SUMS:
        return x + y
    return _np.add(x, y)


_SCALAR_SUMS = frozenset((_np.float64, _np.float32, _np.complex128, _np.complex64))


add_any = Primitive(
    "add_any",
    _sum_of,
    vjps=(_identity_bprop, _identity_bprop),
    jvps=(_pass_tangent, _pass_tangent),
)
