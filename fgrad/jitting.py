"""`jit`: record a function once, replay the record on later calls, every Python branch guarded.

The first call of a jitted function with a *signature* (the arguments' pytree structure, each
leaf's shape and dtype or Python type, the static arguments' values) runs the function eagerly
under a `StagingLevel` (`fgrad.staging`), which records every primitive applied and every
value the Python read (a guard), and returns the eager result. Later calls with that
signature replay the record: a plain Python function generated from it, one line per
operation calling the primitive's implementation (NumPy), with no boxes, levels or rules,
each intermediate deleted after its last use.

A tree of paths
---------------
A replay checks each guard where it arises. When a value read differs from the recorded one
(another branch of an `if`, another trip count of a `while`), the replay stops and the
function runs again, eagerly, recording the new path; paths share the operations before the
guard where they part, and the generated code branches there. Past `max_paths` paths for one
signature the function runs eagerly from then on, with one warning naming the line whose
value keeps changing.

Inside other transforms
-----------------------
When an argument is traced by an outer transform (`grad(jit(f))`, `vmap(jit(f))`), the record
is made and replayed the same way, but a replay applies each primitive through `bind`, so the
outer transform traces the record (it differentiates or batches the record, not the Python).
`jit(grad(f))` records the whole derivative: the backward pass's operations are primitives
applied to the level's boxes like any other.

Imports: `fgrad.core`, `fgrad.staging`, `fgrad.tree_util`.
"""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import dis
import functools
import inspect
import operator
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from . import core
from .boundary import api_boundary, users_error
from .core import (
    Box,
    NondiffPrimitive,
    bind,
    is_foreign_array,
    primal,
    raises_on_values,
)
from .staging import (
    CANNOT_RECORD,
    CLOSES_OVER,
    HANDED_A_CLOSURE,
    RECORD_FILE_PREFIX,
    Const,
    Guard,
    Op,
    StagingLevel,
    constant,
    describe_value,
    guard_key,
    read_at,
    same_op,
    shape_key,
    user_frame,
)
from .tree_util import LEAF, tree_aux_data, tree_flatten, tree_unflatten

__all__ = ["Record", "jit", "make_record"]


class _Miss(Exception):
    """A replay read a value its record has no path for (at the line `source`)."""

    def __init__(self, source):
        super().__init__(source)
        self.source = source


class _Unstable(Exception):
    """Two runs that read the same values computed different operations."""


# The jit of f while a jit(grad(f)) records the gradient from it (`Jitted._record_deferred`),
# per thread
_recording_from = threading.local()


class _Deferred(Exception):
    """The record of f inside jit(grad(f)) (`Jitted._deferred`), replayed to record the
    gradient, has no path for these values (or runs eagerly, `settled`): the gradient's
    record is not made from this call. Recording f's Python there instead would put paths
    of two origins into one tree (the operations the Python meets above a vmap inside f
    differ from those the record holds below it: `_Unstable`)."""

    def __init__(self, settled=False):
        super().__init__("the record of the function has no path for these values")
        self.settled = settled


# --- one recorded run, and the tree of them -------------------------------------------------------


class _Path:
    """One run of the function: its items (`Op`s and `Guard`s), outputs (slots or `Const`s),
    which outputs must be copied (they may share memory with an argument or a constant), and
    the outputs' tree structure."""

    __slots__ = ("fresh", "items", "n_inputs", "out_tree", "outputs", "settled", "unsafe")

    def __init__(self, items, outputs, fresh, out_tree, n_inputs, unsafe, settled=False):
        self.items = items
        self.outputs = outputs
        self.fresh = fresh
        self.out_tree = out_tree
        self.n_inputs = n_inputs
        self.unsafe = unsafe  # why the record must not be replayed (None: it may)
        # whether that holds for every call of this signature (then it runs eagerly from now
        # on), not just this one (a closure over an outer transform's value changes per call)
        self.settled = settled


class _Node:
    """Operations and single-path guards (`items`), then either the end of a path (`path`,
    whose outputs are returned) or a guard where paths part (`branch`: the first path's
    `Guard`, and a list of (key, node), one per value read)."""

    __slots__ = ("branch", "items", "path")

    def __init__(self, items, path=None, branch=None):
        self.items = items
        self.path = path
        self.branch = branch


def _insert(node: _Node, path: _Path, start: int = 0) -> bool:
    """Add `path`'s items from `start` on into the tree under `node`; False if the tree already
    has this path. Raises `_Unstable` where the two disagree before any guard parts them."""
    items = path.items
    i = start
    for j, item in enumerate(node.items):
        if i >= len(items):
            raise _Unstable
        mine = items[i]
        if type(item) is Guard:
            if type(mine) is not Guard or (mine.slot, mine.kind) != (item.slot, item.kind):
                raise _Unstable
            if mine.key != item.key:  # the paths part here
                rest = _Node(node.items[j + 1 :], node.path, node.branch)
                new = _Node(items[i + 1 :], path)
                node.items = node.items[:j]
                node.path = None
                node.branch = (item, [(item.key, rest), (mine.key, new)])
                return True
        elif type(mine) is Guard or not same_op(item, mine):
            raise _Unstable
        i += 1
    if node.branch is None:
        if i != len(items):
            raise _Unstable
        return False  # the same path again (another thread recorded it first)
    guard, children = node.branch
    mine = items[i] if i < len(items) else None
    if type(mine) is not Guard or (mine.slot, mine.kind) != (guard.slot, guard.kind):
        raise _Unstable
    for key, child in children:
        if key == mine.key:
            return _insert(child, path, i + 1)
    children.append((mine.key, _Node(items[i + 1 :], path)))
    return True


def _count_paths(node: _Node) -> int:
    if node.branch is None:
        return 1
    return sum(_count_paths(child) for _, child in node.branch[1])


# --- recording ------------------------------------------------------------------------------------


def _global_random_state():
    """The words of NumPy's global random generator (MT19937: its key and position), read in
    place without the copies `np.random.get_state` makes (60 us): enough to tell that a
    function drew from it. None where NumPy does not expose them."""
    global _random_words
    try:
        generator = _np.random.mtrand._rand._bit_generator
    except AttributeError:
        return None
    if _random_words is None or _random_words[0] is not generator:
        # A view of the generator's state, made once (its `ctypes` attribute builds an
        # object at each access: 0.4 us of a jit's first call); the generator is kept alive
        # with it, so the address stays valid.
        try:
            address = generator.ctypes.state_address
        except AttributeError:
            return None
        _random_words = (generator, (ctypes.c_uint32 * 625).from_address(address))
    return bytes(_random_words[1])


_random_words: tuple | None = None


def _constant_output(v) -> bool:
    """Whether an output leaf that is not computed in the record can be returned again by
    every replay: an array (copied), a number, a string, None."""
    return (
        v is None
        or type(v) in _SCALARS
        or type(v) is str
        or isinstance(v, (_np.ndarray, _np.generic))
        or is_foreign_array(v)
    )


def _copy(v):
    """A copy of `v` in its layout as NumPy's order='A' reads it (Fortran order for a
    Fortran-contiguous `v`, else C), as the eager output is read by `ravel(order='A')`:
    order='K' made a strided view such as `x[:, ::2].T` Fortran-contiguous, and ravel('A')
    of it gave another element order than eager's. (Also `_unshared`'s and `_apart`'s.)"""
    return v.copy(order="A") if type(v) is _np.ndarray else v


def _unshared(v, args):
    """`v`, or a copy where it shares memory with an argument: whether `reshape` or `ravel`
    gives a view of its input depends on the input's memory layout, which a signature does not
    hold, so a record made on a Fortran-ordered argument (where the output was a copy) may
    replay a view of a C-ordered one; a caller writing into the result would write into its
    argument. (An array that owns its memory, what most operations return, is answered by its
    `base` alone.)"""
    if type(v) is _np.ndarray and v.base is not None:
        for x in args:
            if type(x) is _np.ndarray and _np.may_share_memory(v, x):
                return v.copy(order="A")
    return v


def _apart(outs):
    """`outs`, each view among them that shares memory with another output copied, and each
    array returned again in a later place: a replay computes an operation repeated on the
    same inputs once (`_without_repeats`), so two outputs computed apart (`sin(x)` and
    `sin(x)[:2]`) may come out as an array and a view of it, and two equal gradients (of two
    arguments, which eager returns as two arrays) as one array; a caller writing into one
    would change the other."""
    arrays = [v for v in outs if type(v) is _np.ndarray]
    if len(arrays) < 2 or (
        all(v.base is None for v in arrays) and len(set(map(id, arrays))) == len(arrays)
    ):
        return outs
    out = list(outs)
    for i, v in enumerate(outs):
        if type(v) is not _np.ndarray:
            continue
        if any(w is v for w in outs[:i]):
            out[i] = v.copy(order="A")
        elif v.base is not None:
            others = (w for j, w in enumerate(outs) if j != i and type(w) is _np.ndarray)
            if any(_np.may_share_memory(v, w) for w in others):
                out[i] = v.copy(order="A")
    return tuple(out)


# NumPy's random generators: a draw changes one's state, which a replay would not
_RANDOM_TYPES = (_np.random.Generator, _np.random.RandomState, _np.random.BitGenerator)


def _generators_in(watched, *groups) -> tuple:
    """The NumPy random generators the function may draw from: among the values of `groups`
    (its arguments, static ones included) and what the functions of `watched` read (closure
    cells, globals, default arguments), each also inside a list, tuple or dict, or as the
    owner of a bound method (`normal = rng.normal`). (Only when recording: it costs a few
    microseconds.)"""
    found: list = []
    for fun, _ in watched:
        cells = _free_values(((fun, ()),))  # (its closure cells' values)
        groups += (cells, fun.__defaults__ or (), (fun.__kwdefaults__ or {}).values())
        namespace = fun.__globals__
        groups += ([namespace[n] for n in _global_loads(fun.__code__) if n in namespace],)
    for group in groups:
        for v in group:
            _add_generators(v, found, 2)
    return tuple(dict.fromkeys(found))  # (each once, in order)


def _add_generators(v, found: list, depth: int) -> None:
    kind = type(v)
    if isinstance(v, _RANDOM_TYPES):
        found.append(v)
    elif kind is types.BuiltinMethodType or kind is types.MethodType:
        if isinstance(v.__self__, _RANDOM_TYPES):  # a generator's bound method
            found.append(v.__self__)
    elif depth and kind is functools.partial:  # (partial(rng.normal, size=3))
        for w in (v.func, *v.args, *v.keywords.values()):
            _add_generators(w, found, depth - 1)
    elif depth and (kind is list or kind is tuple):
        for w in v:
            _add_generators(w, found, depth - 1)
    elif depth and kind is dict:
        for w in v.values():
            _add_generators(w, found, depth - 1)


def _generator_states(generators) -> list:
    """What each generator's state is now, comparable with ==."""
    return [_comparable(_state_of(g)) for g in generators]


def _state_of(generator):
    if isinstance(generator, _np.random.RandomState):
        return generator.get_state()
    if isinstance(generator, _np.random.Generator):
        return generator.bit_generator.state
    return generator.state  # a BitGenerator


def _comparable(state):
    """A generator's state (dicts, tuples, arrays) with its arrays as bytes."""
    if isinstance(state, dict):
        return {k: _comparable(v) for k, v in state.items()}
    if isinstance(state, (tuple, list)):
        return tuple(_comparable(v) for v in state)
    if isinstance(state, _np.ndarray):
        return (state.dtype.str, state.shape, state.tobytes())
    return state


def _record(fun, leaves, rebuild, sources=False, generators=()):
    """Run `fun` on `leaves` (rebuilt into its arguments by `rebuild`) under a staging level:
    the eager result and the `_Path` of the run. `generators`: the NumPy random generators
    the function may draw from besides the global one (`_generators_in`)."""
    level = StagingLevel(sources)
    random_state = _global_random_state()
    generator_states = _generator_states(generators)
    with level:
        boxed = _inputs(level, leaves)
        args, kwargs = rebuild(boxed)
        out = fun(*args, **kwargs)
    unsafe = level.unsafe
    if unsafe is not None and unsafe.startswith((CLOSES_OVER, CANNOT_RECORD)):
        args, kwargs = rebuild(leaves)  # (this call's result nested the levels wrongly)
        out = fun(*args, **kwargs)
        return out, _Path([], (), (), tree_flatten(out)[1], len(leaves), unsafe, True)
    out_leaves, out_tree = tree_flatten(out)
    if unsafe is None and _global_random_state() != random_state:
        unsafe = (
            "NumPy's global random generator was drawn from while the function ran, and a "
            "replay would reuse those draws; so this function runs eagerly. Draw outside it "
            "and pass the draws as arguments (or a numpy.random.Generator's), to jit it"
        )
    if unsafe is None and _generator_states(generators) != generator_states:
        unsafe = (
            "a NumPy random generator (a numpy.random.Generator or RandomState) the function "
            "reads from its closure, its globals or a static argument was drawn from while the "
            "function ran, and a replay would reuse those draws; so this function runs "
            "eagerly. Draw outside it and pass the draws as arguments, to jit it"
        )
    outputs, values = [], []
    for o in out_leaves:
        if type(o) is Box and o.level is level:
            outputs.append(o.aux)
            values.append(o.value)
        else:
            if type(o) is Box and o.level.live and unsafe is None:
                unsafe = "the function returned a value of an outer transform it closes over"
            elif not _constant_output(o):
                # An object of its own (not a pytree of arrays) may hold what was computed, as
                # the level's boxes: a replay would return this one object again, and this one
                # holds boxes. The function runs again without the level, for this call.
                args, kwargs = rebuild(leaves)
                reason = (
                    f"{RETURNED_AN_OBJECT} ({type(o).__name__}), which a record cannot give "
                    "back, so it runs eagerly for these shapes and dtypes (this first call ran "
                    "it twice). Return arrays or numbers (res.x of a solver's result), or "
                    "register the type with fgrad.tree_util.register_pytree_node"
                )
                return fun(*args, **kwargs), _Path([], (), (), out_tree, len(leaves), reason, True)
            outputs.append(Const(o))
            values.append(o)
    # An output that may share memory with an argument or a constant (x itself, a view of
    # it) is copied, in this call and in every replay: a caller may write into its result.
    # (An array that owns its memory, what most operations return, shares it with nothing
    # made before it.)
    fresh = [
        type(v) is _np.ndarray
        and (type(o) is Const or v.base is not None or any(v is x for x in leaves))
        for o, v in zip(outputs, values)
    ]
    if any(fresh):
        shared = [x for x in leaves if type(x) is _np.ndarray]
        for op in level.items:
            if type(op) is tuple:  # an operation: its constant arrays
                shared += [r for r in op[1] if type(r) is _np.ndarray]
        fresh = [
            f and (type(o) is Const or any(_np.may_share_memory(v, s) for s in shared))
            for f, o, v in zip(fresh, outputs, values)
        ]
    # (and one value returned in two places, a gradient equal in two arguments where eager's
    # `api._fresh` gives each its own array, is copied in the second: `_apart`)
    values = list(_apart(tuple(_copy(v) if f else v for v, f in zip(values, fresh))))
    settled = unsafe is not None and unsafe.startswith(_WARNED_REASONS)
    path = _Path(level.items, tuple(outputs), tuple(fresh), out_tree, len(leaves), unsafe, settled)
    return tree_unflatten(out_tree, values), path


# The start of the reason a function that returned an object of its own (not a pytree of
# arrays and numbers) runs eagerly
RETURNED_AN_OBJECT = "the function returned an object that is not a pytree of arrays"

# Why a function runs eagerly from then on (for one signature), with a warning: what a record
# cannot hold. (`StagingLevel.raised` writes the second.)
_WARNED_REASONS = (
    RETURNED_AN_OBJECT,
    "NumPy's global random generator",
    "a NumPy random generator (",
    "an operation raised",
    CLOSES_OVER,
    CANNOT_RECORD,
    HANDED_A_CLOSURE,
)


# --- the code of a tree of paths ------------------------------------------------------------------

_LITERAL_TYPES = (bool, int, str, type(None))


def _is_literal(v) -> bool:
    t = type(v)
    if t in _LITERAL_TYPES:
        return True
    if t is float:
        return v == v and v not in (float("inf"), float("-inf"))
    if t is tuple:
        return all(_is_literal(x) for x in v)
    return False


class _Writer:
    """Writes the Python source of a tree of paths; `general` applies primitives through
    `bind` (arguments traced by outer transforms) instead of their implementations."""

    def __init__(self, general: bool, n_inputs: int = 0):
        self.general = general
        # the inputs' slots: the caller holds them (and `_args`), so deleting one frees nothing
        self.n_inputs = n_inputs
        self.names: dict = {}  # namespace of the generated function
        self.ids: dict = {}  # id(object) -> its name in the namespace
        self.lines: list = []

    def name(self, obj, prefix) -> str:
        key = id(obj)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = f"{prefix}{len(self.ids)}"
            self.names[found] = obj
        return found

    def operand(self, ref, nested: dict | None = None) -> str:
        """How the source reads `ref`: a slot's variable (or, in `nested`, the expression
        that computes it, written where it is read), or a constant."""
        if type(ref) is int:
            if nested and ref in nested:
                return nested.pop(ref)
            return f"v{ref}"
        v = constant(ref)
        return repr(v) if _is_literal(v) else self.name(v, "c")

    def targets(self, op: tuple) -> str:
        names = ", ".join(f"v{s}" for s in op[3])
        return names + "," if len(op[3]) == 1 and op[4] else names

    def call(self, op: tuple, nested: dict) -> str:
        """The expression of `op`'s call; an input in `nested` (slot -> the expression of the
        operation that computes it) is written as that expression."""
        prim, ins, params = op[:3]
        args = [self.operand(r, nested) for r in ins]
        if self.general and type(prim) is not NondiffPrimitive:
            named = self.name(params, "p") if params else "_NO_PARAMS"
            tail = "," if len(args) == 1 else ""
            how = "_bind_call" if hasattr(params.get("call"), "inputs") else "_bind"
            call = f"{how}({self.name(prim, 'P')}, ({', '.join(args)}{tail}), {named})"
        else:
            fn = prim if self.general else prim.impl
            for key, value in params.items():
                shown = repr(value) if _is_literal(value) else self.name(value, "k")
                args.append(f"{key}={shown}")
            call = f"{self.name(fn, 'f')}({', '.join(args)})"
        return call

    def read(self, guard) -> str:
        if guard.kind == "shape":
            return f"_shape(v{guard.slot})"
        if not self.general:  # plain values: each is its own value, and all its rows
            if guard.reader is not None:
                return f"{self.name(guard.reader, 'r')}(v{guard.slot})"
            return f"v{guard.slot}"
        # (traced values: a recording outside reads them as a guard of its own, and names the
        # line the guard was read at: `read_at`)
        read = self.name(guard.reader, "r") if guard.reader is not None else _READERS[guard.kind]
        return f"_read_at({guard.source!r}, {read}, v{guard.slot})"

    def node(self, node: _Node, indent: str, live: set) -> None:
        """Write `node` and its subtree; `live` holds the slots defined before it that are
        still alive. Slots are deleted after their last use in this subtree."""
        needs, computed, dies = _liveness(node, self.general)
        for dead in sorted(live - needs):
            self.lines.append(f"{indent}del v{dead}")
        live = live & needs
        nested = _nestable(node, computed, self.general)
        pending: dict = {}  # slot -> the expression of the operation that computes it
        depth: dict = {}  # slot -> how deep its pending expression nests calls
        for k, item in enumerate(node.items):
            if type(item) is tuple:  # an operation
                if not computed[k]:
                    continue  # dead: nothing reads it, and it raises on no value
                level = 1 + max((depth.pop(r, 0) for r in item[1] if type(r) is int), default=0)
                call = self.call(item, pending)
                out = item[3][0]
                if (
                    out in nested
                    and level < _MAX_NESTING
                    and not any(s in live and s >= self.n_inputs for s in dies.get(k, ()))
                ):
                    # written inside the call of the operation that reads it, next (only if
                    # it reads no intermediate for the last time: that one would live on
                    # through the reading operation's call, where its deletion frees it
                    # before; an input is held by the caller either way)
                    pending[out], depth[out] = call, level
                    continue
                self.lines.append(f"{indent}{self.targets(item)} = {call}")
                live |= set(item[3])
            else:
                read = self.read(item)
                self.lines.append(
                    f"{indent}if {read if item.direct else self.key_expr(item.key, read)} != "
                    f"{self.key_name(item.key)}:"
                )
                self.lines.append(f"{indent}    raise _Miss({item.source!r})")
            dead = [s for s in dies.get(k, ()) if s in live]
            if dead:
                self.lines.append(f"{indent}del {', '.join(f'v{s}' for s in sorted(dead))}")
                live.difference_update(dead)
        if node.branch is None:
            path = node.path
            outs = []
            for ref, fresh in zip(path.outputs, path.fresh):
                if fresh:
                    outs.append(f"_copy({self.operand(ref)})")
                elif type(ref) is int and not self.general:
                    outs.append(f"_unshared({self.operand(ref)}, _args)")
                else:
                    outs.append(self.operand(ref))
            tree = path.out_tree
            if tree is LEAF:  # the result itself, without a tree to rebuild
                self.lines.append(f"{indent}return {outs[0]}")
            else:
                tail = "," if len(outs) == 1 else ""
                named = self.name(tree, "T")
                values = f"({', '.join(outs)}{tail})"
                if not self.general and sum(type(r) is int for r in path.outputs) > 1:
                    values = f"_apart({values})"
                self.lines.append(f"{indent}return _unflatten({named}, {values})")
            return
        guard, children = node.branch
        slot, source = guard.slot, guard.source
        read = self.read(guard)
        key0 = children[0][0]
        self.lines.append(
            f"{indent}k = {read if guard.direct else self.key_expr(key0, read, True)}"
        )
        if slot in live and not any(slot in _liveness(c, self.general)[0] for _, c in children):
            self.lines.append(f"{indent}del v{slot}")
            live = live - {slot}
        for n, (key, child) in enumerate(children):
            word = "if" if n == 0 else "elif"
            self.lines.append(f"{indent}{word} k == {self.key_name(key)}:")
            self.node(child, indent + "    ", set(live))
        self.lines.append(f"{indent}raise _Miss({source!r})")

    def key_expr(self, key, read, always=False) -> str:
        if type(key) is tuple:
            return f"_key({read})"
        return f"_key({read})" if always else read

    def key_name(self, key) -> str:
        if type(key) is bool or type(key) is int:
            return repr(key)
        return self.name(key, "K")


# How deep a replay's source nests calls (`_nestable`); Python's parser refuses 200 levels.
_MAX_NESTING = 16


def _nestable(node: _Node, computed: list, keep_all: bool = False) -> set:
    """The slots of `node`'s items that a replay computes inside the call of the operation
    that reads them, rather than into a variable of their own: an operation's only output,
    read once, by the operation computed right after it, and by nothing later. Fewer
    statements to compile (Python's compiler takes about 3 us each, most of the second call
    of a record of hundreds of operations: the gradient of a 200-operation chain has 919
    lines, not 1,077, compiled in 2.7 ms, not 2.9), and fewer loads and stores in each
    replay. The value is freed when that call
    returns, as its deleted variable would be. (`_Writer.node` nests only an operation that
    reads no variable for the last time: such a variable would live on through the reading
    operation's call, and a replay's peak memory exceed eager's: 15.3 against 11.4 MiB on
    `x = exp(x) * cos(x)` of 3.8 MiB arrays.)"""
    reads: dict = {}
    for k, item in enumerate(node.items):
        if type(item) is tuple:
            if computed[k]:
                for r in item[1]:
                    if type(r) is int:
                        reads[r] = reads.get(r, 0) + 1
        else:
            reads[item.slot] = 2  # read by a guard: kept in a variable
    if node.branch is None:
        for r in node.path.outputs:
            if type(r) is int:
                reads[r] = 2
    else:
        guard, children = node.branch
        reads[guard.slot] = 2
        for _, child in children:
            for r in _liveness(child, keep_all)[0]:
                reads[r] = 2
    out: set = set()
    previous = None  # the last operation computed, or None after a guard
    for k, item in enumerate(node.items):
        if type(item) is tuple:
            if not computed[k]:
                continue
            if previous is not None:
                o = previous[3][0]
                if reads.get(o) == 1 and len(previous[3]) == 1 and o in _slots_of(item):
                    out.add(o)
            previous = None if item[4] else item
        else:
            previous = None
    return out


def _slots_of(op: tuple) -> list:
    return [r for r in op[1] if type(r) is int]


def _bind_call(prim, args, params):
    """`bind` for the primitive of a custom rule or a checkpoint (`fgrad.custom`): its rules
    read the inputs it is bound to from its `call` parameter, as `_Call.bind` sets them. The
    record holds one call object for every replay, so each binding sets the inputs on a copy
    of its own: threads replaying one record at once read each other's inputs otherwise (a
    custom_jvp rule's level, under grad(jit(f)), came from another thread's call)."""
    call = copy.copy(params["call"])
    call.inputs = args
    try:
        return bind(prim, args, {**params, "call": call})
    finally:
        call.inputs = None


def _needed(op: tuple, later: set) -> bool:
    """Whether a replay computes the operation: something later reads one of its outputs, or
    it may raise on values (`core.raises_on_values`: `cholesky(a)` called to check that a is
    positive definite raises eagerly, and so must its replay)."""
    return bool(later.intersection(op[3])) or op[0] in raises_on_values


def _liveness(node: _Node, keep_all: bool = False) -> tuple[set, list, dict]:
    """What writing `node` needs to know, from one backward scan of its items: the slots it
    and its subtree read from before it; for each item, whether a replay computes it (an
    operation nothing reads, and that raises on no value, is left out; with `keep_all`, as
    for a replay on traced arguments, none is: a recording outside it would otherwise record
    one path without the operation and another, made after the tree grew a branch that reads
    it, with it, and the two would disagree, `_Unstable`); and for each item's
    index, the slots read there for the last time (or made there and never read), which the
    replay deletes after it. (A scan, not a set of live slots per item: that was quadratic in
    a record's length, 7 s to compile the gradient of a 5000-operation chain.)"""
    later = set()
    if node.branch is None:
        later |= {r for r in node.path.outputs if type(r) is int}
    else:
        guard, children = node.branch
        later.add(guard.slot)
        for _, child in children:
            later |= _liveness(child, keep_all)[0]
    n = len(node.items)
    computed = [True] * n
    last = dict.fromkeys(later, n)  # slot -> the index of the item that reads it last
    needed = set(later)
    for k in range(n - 1, -1, -1):
        item = node.items[k]
        if type(item) is tuple:  # an operation
            if not keep_all and not _needed(item, needed):
                computed[k] = False
                continue
            needed.difference_update(item[3])
            for r in item[1]:
                if type(r) is int:
                    needed.add(r)
                    last.setdefault(r, k)
        else:
            needed.add(item.slot)
            last.setdefault(item.slot, k)
    dies: dict = {}
    for slot, k in last.items():
        if k < n:
            dies.setdefault(k, []).append(slot)
    for k, item in enumerate(node.items):  # made and never read: deleted where made
        if type(item) is tuple and computed[k]:
            dies.setdefault(k, []).extend(o for o in item[3] if o not in last)
    return needed, computed, dies


def _op_key(op: tuple) -> tuple | None:
    """What makes two recorded operations compute the same values: the primitive, the inputs
    (slots; constants by value where they are numbers, else by identity) and the parameters
    (numbers, strings, indices by value). None for an operation whose parameters hold any
    other object (a custom rule's call, an index array): never taken for another."""
    prim, ins, params, _, many, _ = op
    refs = []
    for r in ins:
        t = type(r)
        if t is int:
            refs.append(r)
        elif t is Const:
            refs.append(("int", r.value))
        elif t is float:
            refs.append(("float", _np.float64(r).tobytes()))
        else:
            refs.append(("object", id(r)))
    parts = []
    for key, value in params.items():
        if (
            _is_literal(value)
            or type(value) is slice
            or (type(value) is tuple and all(type(v) in _INDEX_TYPES for v in value))
        ):
            parts.append((key, repr(value)))
        else:
            return None
    return (prim, tuple(refs), tuple(parts), many)


_INDEX_TYPES = (int, bool, slice, type(None), type(Ellipsis))


def _without_repeats(node: _Node, subst: dict | None = None, seen: dict | None = None) -> _Node:
    """A copy of the tree in which an operation already computed on the same inputs, earlier
    in its path, is not computed again: later reads take the first one's slots (and a
    `stop_gradient`, the identity here, is not computed at all). Forward-mode
    and batched derivatives compute such repeats (a JVP under `vmap` reads `y[1]` for the value
    and again for the tangent; odeint's sensitivities had 2 of 22), and a primitive's
    implementation gives the same bits for the same inputs. An output that would come back as
    the same array twice is copied, as distinct computations gave distinct arrays. Only for a
    replay on plain values (see `_compile`)."""
    subst = dict(subst or {})
    seen = dict(seen or {})
    items: list = []
    for item in node.items:
        if type(item) is tuple:
            prim, ins, params, outs, many, source = item
            if subst:
                ins = tuple(subst.get(r, r) if type(r) is int else r for r in ins)
                item = (prim, ins, params, outs, many, source)
            if prim is core.stop_gradient_p and type(ins[0]) is int:
                # the identity on plain values (a rule's `constant_of`, a record's most
                # frequent operation in linalg rules): later reads take its input's slot
                subst[outs[0]] = ins[0]
                continue
            key = _op_key(item)
            if key is not None:
                first = seen.get(key)
                if first is not None:
                    subst.update(zip(outs, first))
                    continue
                seen[key] = outs
        elif item.slot in subst:
            item = item.at(subst[item.slot])
        items.append(item)
    if node.branch is None:
        path = node.path
        if subst:
            outputs = tuple(subst.get(r, r) if type(r) is int else r for r in path.outputs)
            fresh = tuple(
                f or (o is not n and outputs.count(n) > 1)
                for f, o, n in zip(path.fresh, path.outputs, outputs)
            )
            path = _Path(
                path.items, outputs, fresh, path.out_tree, path.n_inputs, path.unsafe, path.settled
            )
        return _Node(items, path)
    guard, children = node.branch
    if guard.slot in subst:
        guard = guard.at(subst[guard.slot])
    return _Node(
        items, branch=(guard, [(k, _without_repeats(c, subst, seen)) for k, c in children])
    )


def _compile(root: _Node, n_inputs: int, general: bool, name: str) -> Callable:
    writer = _Writer(general, n_inputs)
    # Under an outer transform (`general`) a repeat stays: the transform's result depends on
    # the structure (a gradient summed before one pullback rounds otherwise than two).
    writer.node(root if general else _without_repeats(root), "    ", set(range(n_inputs)))
    params = ", ".join(f"v{i}" for i in range(n_inputs))
    # the arguments, for `_unshared` (the function deletes each after its last use)
    head = [] if general else [f"    _args = ({params}{',' if n_inputs == 1 else ''})"]
    source = "\n".join([f"def replay({params}):", *head, *writer.lines]) + "\n"
    namespace = dict(writer.names)
    namespace.update(
        _bind=bind,
        _bind_call=_bind_call,
        _primal=primal,
        _whole=core.whole_value,
        _read_at=read_at,
        _key=guard_key,
        _shape=shape_key,
        _copy=_copy,
        _unshared=_unshared,
        _apart=_apart,
        _unflatten=tree_unflatten,
        _Miss=_Miss,
        _NO_PARAMS=core._NO_PARAMS,
    )
    exec(_code_of(source, f"{RECORD_FILE_PREFIX}{name}>"), namespace)
    replay = namespace["replay"]
    replay.source = source
    return replay


def _interpret(root: _Node, *leaves) -> Any:
    """A replay of a tree of paths on arguments traced by outer transforms (`general`), by
    walking its items rather than compiling them: every operation (a general replay leaves
    none out: `_liveness`'s keep_all), through `bind`, in the record's order, and its guards,
    raising `_Miss` as the compiled replay does. For a record replayed once or twice:
    jit(grad(f)) replays its first call's record of f once, at its second call, to record the
    gradient from it; compiling those 600 lines cost 3 ms, 12 eager calls of a 200-operation
    chain (`benchmarks/bench_jit.py`)."""
    env = dict(enumerate(leaves))
    node = root
    while True:
        for item in node.items:
            if type(item) is not tuple:
                if _guard_read(item, env, item.key) != item.key:
                    raise _Miss(item.source)
                continue
            prim, ins, params, outs, many, _ = item
            args = tuple(env[r] if type(r) is int else constant(r) for r in ins)
            if type(prim) is NondiffPrimitive:
                ans = prim(*args, **params)
            elif hasattr(params.get("call"), "inputs"):
                ans = _bind_call(prim, args, params)
            else:
                ans = bind(prim, args, params)
            if many:
                env.update(zip(outs, ans))
            else:
                env[outs[0]] = ans
        if node.branch is None:
            break
        guard, children = node.branch
        k = _guard_read(guard, env, None)
        taken = next((child for key, child in children if k == key), None)
        if taken is None:
            raise _Miss(guard.source)
        node = taken
    path = node.path
    outs = []
    for ref, fresh in zip(path.outputs, path.fresh):
        v = env[ref] if type(ref) is int else constant(ref)
        outs.append(_copy(v) if fresh else v)
    return outs[0] if path.out_tree is LEAF else tree_unflatten(path.out_tree, outs)


# How a general replay reads a guard's value by its kind (`_Writer.read`): `whole_value`, not
# `innermost`, so that a recording outside records the read as a guard (read_whole)
_READERS = {"value": "_primal", "whole": "_whole", "layout": "_primal"}


def _guard_read(guard, env, key):
    """The value a compiled general replay compares with a guard's key (`_Writer.read` and
    `key_expr`): `key` the guard's own key for an item, None for a branch's."""
    v = env[guard.slot]
    if guard.kind == "shape":
        read = shape_key(v)
    else:
        reader = guard.reader or (core.whole_value if guard.kind == "whole" else primal)
        read = read_at(guard.source, reader, v)
    if guard.direct:
        return read
    return guard_key(read) if key is None or type(key) is tuple else read


# Compiled sources, by their text. A function jitted anew at each call of a solver (odeint
# jits its right-hand side at each solve, as the function's arguments may differ) writes the
# same source each time, and Python's compiler takes about 3 us a line (0.6 ms of the 9 ms
# pendulum gradient of benchmarks/bench_jit.py). The names in a source are numbered in the
# order they appear and the objects they stand for are in each function's own namespace, so
# one code object serves every record of that text. The oldest entry goes first.
_CODE_CACHE: dict = {}
_CODE_CACHE_SIZE = 64
_code_lock = threading.Lock()


def _code_of(source: str, filename: str) -> types.CodeType:
    key = (source, filename)
    code = _CODE_CACHE.get(key)
    if code is None:
        code = compile(source, filename, "exec")
        with _code_lock:
            if len(_CODE_CACHE) >= _CODE_CACHE_SIZE:
                del _CODE_CACHE[next(iter(_CODE_CACHE))]
            _CODE_CACHE[key] = code
    return code


# --- signatures -----------------------------------------------------------------------------------

_SCALARS = frozenset((float, int, bool, complex))
# Python and NumPy numbers, whose signature is their type (`_leaf_signature`)
_FAST_SCALARS = _SCALARS | frozenset(_np.dtype(c).type for c in "?bhilqBHILQefdgFDG")


def _fast_key(args) -> tuple | None:
    """The key of the common call, positional arguments that are all arrays or numbers: the
    tuple of their signatures (as `_leaf_signature` gives them); None for any other call."""
    sigs: list = []
    for x in args:
        t = type(x)
        if t is _np.ndarray:
            sigs.append((x.shape, x.dtype))
        elif t in _FAST_SCALARS:
            sigs.append(t)
        else:
            return None
    return tuple(sigs)


def _leaf_signature(x) -> tuple[Any, bool]:
    """What a replay's code may depend on in a leaf, and whether the leaf needs `bind` (it is
    traced by an outer transform, or an array of another library)."""
    t = type(x)
    if t is _np.ndarray:
        return (x.shape, x.dtype), False
    if isinstance(x, _np.ndarray):  # a subclass (np.memmap): read as the array it views
        _plain_array(x)
        return (x.shape, x.dtype), False
    if isinstance(x, (str, bytes)):  # (NumPy's np.str_ and np.bytes_ too)
        return ("value", t, x), False  # immutable, compared by value: a record per value
    if t in _SCALARS or isinstance(x, _np.generic):
        return t, False
    if t is Box:
        chain, live = [], False
        while type(x) is Box:
            level = x.level
            if not level.live:
                x = x.value
                continue
            live = True
            # An outer recording's box (another jit's) is not part of the signature: the
            # record, replayed through `bind`, is recorded by it as by any transform, and
            # jit(grad(f)) finds at its second call the record of f its first call made.
            if not level.stages:
                # a batching level's box: its axis and batch size are part of the signature
                batch = (x.aux, getattr(level, "size", None)) if level.batches else None
                chain.append((type(level), batch))
            x = x.value
        inner, _ = _leaf_signature(x)
        return ((tuple(chain), inner) if chain else inner), live
    if is_foreign_array(x):
        return (t, x.shape, x.dtype, getattr(x, "chunks", None)), True
    if isinstance(x, type):
        raise TypeError(
            f"jit: an argument is a class ({x.__name__}), which a record cannot take as an "
            "input; pass it as static (static_argnums), as a classmethod's cls: "
            "@classmethod above @functools.partial(fgrad.jit, static_argnums=0)"
        )  # (the caller says which argument it is)
    if isinstance(x, _RANDOM_TYPES) or (
        t in (types.BuiltinMethodType, types.MethodType) and isinstance(x.__self__, _RANDOM_TYPES)
    ):
        raise TypeError(
            f"jit: an argument is a NumPy random generator or its method ({t.__name__}): a "
            "record cannot take it as an input, and a replay would reuse the first call's "
            "draws. Draw outside the jitted function and pass the draws as an argument"
        )  # (the caller says which argument it is)
    raise TypeError(
        f"jit: an argument leaf of type {t.__name__} is not an array or a number, so a "
        "record cannot take it as an input. Pass it through static_argnums or "
        "static_argnames if it is hashable and compared by value (a record is kept per "
        "value), register its type as a pytree (fgrad.tree_util.register_pytree_node) if it "
        "holds arrays, or close over it in the function"
    )  # (the caller says which argument it is)


def _plain_array(x: _np.ndarray) -> _np.ndarray:
    """An argument leaf of an ndarray subclass as the plain ndarray it views (as
    `np.asarray(x)` reads it, its memory shared, never written): a `np.memmap` or a subclass
    of the user's, whose operations are an ndarray's. A masked array or a matrix is refused:
    read as a plain array, it would lose its mask or its products, silently."""
    if isinstance(x, (_np.ma.MaskedArray, _np.matrix)):
        raise TypeError(
            f"jit: an argument leaf is a {type(x).__name__} (shape {x.shape}, dtype {x.dtype}), "
            "whose operations differ from a plain array's (a mask, matrix products), and a "
            "record reads its inputs as plain arrays. Pass np.asarray(x) (x.filled(value) for "
            "a masked array) if its plain values are what the function computes with, or call "
            "the function unjitted"
        )  # (the caller says which argument it is)
    return x.view(_np.ndarray)


def _leaf_place(tree, n_leaves, i, call_args, static_argnums, call_kwargs) -> str:
    """Where leaf i of a call's flattened dynamic arguments is, as an error says it. `tree` is
    of the positional arguments, or of the pair (dynamic positional, keyword arguments) where
    the call has keywords or static arguments (`_flatten_call`)."""
    unflattened = tree_unflatten(tree, list(range(n_leaves)))
    static = {j % len(call_args) for j in static_argnums if -len(call_args) <= j < len(call_args)}
    if call_kwargs or static_argnums:
        args, kwargs = unflattened
    else:
        args, kwargs = unflattened, {}
    positions = [j for j in range(len(call_args)) if j not in static]
    for position, arg in zip(positions, args):
        if i in tree_flatten(arg)[0]:
            whole = type(arg) is int  # the argument is the leaf itself
            return f"positional argument {position}" + ("" if whole else " (inside its pytree)")
    for name, arg in kwargs.items():
        if i in tree_flatten(arg)[0]:
            return f"argument {name!r}"
    return f"leaf {i} of the arguments"


def _inputs(level, leaves):
    """The leaves as the recorded function sees them: boxes of `level` (slots 0 to n-1), but
    a string (compared by value in the signature) as it is, in its slot."""
    level.n_slots = len(leaves)
    for x in leaves:
        if type(x) is _np.ndarray and x.dtype.hasobject:
            raise TypeError(
                f"jit: an argument is an array of dtype object (shape {x.shape}); a record "
                "cannot see what its elements hold (a replay would reuse what they held at "
                "the recording). Pass it through static_argnums or static_argnames as a tuple, "
                "close over it in the function, or convert it to an array of numbers"
            )
    return [
        x if isinstance(x, (str, bytes)) else Box(x, level, slot) for slot, x in enumerate(leaves)
    ]


# --- the transform --------------------------------------------------------------------------------


class _Entry:
    """The record of one signature: its tree of paths, the replay compiled from it (made at
    the first replay, so the first call pays no compile), whether it gave up, and what the
    function's closure cells held when it was recorded."""

    __slots__ = (
        "cells",
        "eager",
        "general",
        "interpreted",
        "n_inputs",
        "rebinds",
        "replay",
        "root",
    )

    def __init__(self, root, n_inputs, general, cells, rebinds=0):
        self.root = root
        self.n_inputs = n_inputs
        self.general = general
        self.cells = cells
        self.replay = None
        self.interpreted = False  # a general record's first replay walks it (`_interpret`)
        self.eager = False
        # how many calls in a row recorded this signature again, each because a variable the
        # function reads was rebound since the last (with no replay between)
        self.rebinds = rebinds


_WRAPPED_ATTRIBUTES = ("__wrapped__", "transformed", "fun", "fwd", "bwd", "jvp")


def _code_functions(fun, seen=None) -> list:
    """The functions with code whose closure cells and globals `fun` reads: `fun` itself,
    and, through the wrappers that hide them, a `functools.partial`'s function (and the
    functions among its bound arguments, which it calls), a jitted function's, what a
    `functools.wraps` decorator wrapped (`__wrapped__`), the function an fgrad transform
    (`grad(f)`, `vmap(f)`, a checkpoint) applies, a custom rule's function and rules, and a
    callable object's `__call__`."""
    seen = set() if seen is None else seen
    if id(fun) in seen:
        return []
    seen.add(id(fun))
    found = [fun] if getattr(fun, "__code__", None) is not None else []
    inner = []
    if isinstance(fun, functools.partial):
        bound = (*fun.args, *fun.keywords.values())
        inner = [fun.func, *(a for a in bound if callable(a))]
    elif isinstance(fun, Jitted):
        inner = [fun._fun]
    elif found == [] and not isinstance(fun, type) and callable(fun):
        inner = [type(fun).__call__]  # a callable object: what its __call__ reads
    # what a decorator wraps, what fgrad's transforms transform, a custom rule's function
    # and its rules (a global the backward rule reads is state the record holds too)
    for attribute in _WRAPPED_ATTRIBUTES:
        wrapped = getattr(fun, attribute, None)
        if callable(wrapped):
            inner.append(wrapped)
    for f in inner:
        found += _code_functions(f, seen)
    return found


def _state_names(fun) -> tuple:
    """The globals `fun`'s code reads that hold data (not code: `_CODE_TYPES`), and those not
    assigned yet (a decorator at the top of a module runs before the assignments below it):
    with its closure cells, the state a record cannot see. Read off the code's global loads,
    its nested functions' included, not `co_names`, which holds attribute names too."""
    code, namespace = getattr(fun, "__code__", None), getattr(fun, "__globals__", None)
    if code is None or namespace is None:
        return ()
    builtins = namespace.get("__builtins__", {})
    builtins = getattr(builtins, "__dict__", builtins)  # a module outside __main__
    return tuple(
        n
        for n in dict.fromkeys(_global_loads(code))
        if (n not in namespace and n not in builtins)
        or (n in namespace and not isinstance(namespace[n], _CODE_TYPES))
    )


# What a global that `_state_names` leaves unwatched holds: code (functions, classes, modules,
# NumPy's ufuncs, fgrad's primitives), rarely rebound. A callable that holds data (a model
# object with `__call__`, a `functools.partial`) is watched as data is.
_CODE_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    types.ModuleType,
    _np.ufunc,
    core.Primitive,
    core.NondiffPrimitive,
)


@functools.lru_cache(maxsize=1024)  # a function jitted again (in a loop) is read once
def _global_loads(code) -> tuple:
    """The names `code` and the functions defined in it load as globals."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_LOADS]
    for c in code.co_consts:
        if type(c) is types.CodeType:
            names += _global_loads(c)
    return tuple(names)


_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def _free_values(watched) -> tuple:
    """What the closure cells and the data globals of each (function, global names) pair of
    `watched` hold now: a variable of an enclosing function or a global rebound to another
    object changes it (a cell not yet bound holds `_UNBOUND`)."""
    values: list = []
    for fun, names in watched:
        for cell in getattr(fun, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                values.append(_UNBOUND)
        if names:
            namespace = fun.__globals__
            values += [namespace.get(n, _UNBOUND) for n in names]
    return tuple(values)


_UNBOUND = object()


def _rebound_names(watched, recorded: tuple, now: tuple) -> list:
    """The names (closure variables, then globals, as `_free_values` lists their values) of
    those that `now` holds other objects than `recorded`."""
    names: list = []
    for fun, globals_read in watched:
        names += getattr(fun.__code__, "co_freevars", ()) if fun.__closure__ else ()
        names += globals_read
    return [n for n, a, b in zip(names, recorded, now) if a is not b]


def _same_cells(recorded: tuple, now: tuple) -> bool:
    return all(a is b for a, b in zip(recorded, now))


# The signatures (argument shapes, dtypes, static values) a jitted function keeps records for:
# past this many, the oldest is dropped (and recorded again if it comes back). A loop whose
# batch length or static value changes at every call held every record it ever made (1,500
# lengths, 11.7 MB). (JAX bounds its caches likewise, at 2,048 or 8,192.) Dropped in the
# order they were made, not by use, so that a replay pays nothing to keep an order.
_MAX_SIGNATURES = 2048


class Jitted:
    """A jitted function: call it like the function (see `jit`)."""

    def __init__(self, fun, static_argnums, static_argnames, max_paths):
        functools.update_wrapper(self, fun)  # first: it copies fun's __dict__ into this one
        self._fun = fun
        self._static_argnums = static_argnums
        self._static_argnames = static_argnames
        self._max_paths = max_paths
        self._cache: dict = {}
        self._lock = threading.Lock()
        self._warned = False
        self._name = getattr(fun, "__name__", None) or repr(fun)
        # What a record cannot see but a call can check cheaply: the function's closure cells
        # and the data globals it reads, by identity. A rebound one records again.
        # (`fun`'s own, or those of the function a partial, a jitted function or a decorator
        # wraps: jit(partial(f, ...)) and jit(jit(f)) watch what f reads.)
        # (Not fgrad's own functions, a transform's wrappers: their cells are bound once,
        # when the transform is made, and what they apply is watched itself; checking them
        # at every call cost a microsecond of logreg's 12 us replay, benchmarks/bench_jit.py.)
        self._watched = tuple(
            (f, _state_names(f)) for f in _code_functions(fun) if not core.is_fgrads(f)
        )
        self._has_state = any(getattr(f, "__closure__", None) or n for f, n in self._watched)
        # jit(grad(f)): the first call of a signature runs grad(jit(f)), which records f's
        # operations alone; the second records the gradient from f's record, without f's
        # Python (`_first_calls`: the signatures called once).
        own, transformed, remake = getattr(fun, "same_transform_of", (None, None, None))
        self._deferred = self._inner = None
        if own is not None and own() is fun:  # (grad's own function, not a copy's wrapper)
            inner = Jitted(transformed, static_argnums, static_argnames, max_paths)
            inner._holds_warnings = True  # (this one gives them)
            self._inner = inner
            self._deferred = remake(inner)
        self._first_calls: set = set()
        self._holds_warnings = False
        self._held: str | None = None
        self._held_count = 0

    def _recorded_outside(self) -> bool:
        """Whether this is f's jit while jit(grad(f)) records the gradient from it
        (`_recording_from`): it may replay, and raises `_Deferred` where it would record or
        run f."""
        return getattr(_recording_from, "inner", None) is self

    def _record_deferred(self, leaves, rebuild, generators):
        """`_record` of grad(f's jit), which raises `_Deferred` where f's jit cannot replay."""
        before = getattr(_recording_from, "inner", None)
        _recording_from.inner = self._inner
        try:
            return _record(self._deferred, leaves, rebuild, False, generators)
        finally:
            _recording_from.inner = before

    def __repr__(self):
        return f"jit({self._name})"

    def __get__(self, obj, objtype=None):  # a jitted method binds like a function
        return self if obj is None else functools.partial(self, obj)

    def _split(self, args, kwargs):
        """The dynamic arguments (a pytree) and the static ones (a hashable key)."""
        statics = []
        for i in self._static_argnums:
            j = i if i >= 0 else len(args) + i
            if not 0 <= j < len(args):
                # passed by name (it is in `_static_argnames` too), or left to its default
                continue
            statics.append(("arg", j, _static_key(args[j], j, self._fun)))
        for name in self._static_argnames:
            if name in kwargs:
                statics.append(("kw", name, _static_key(kwargs[name], f"argument {name!r}")))
        nums = {i if i >= 0 else len(args) + i for i in self._static_argnums}
        dyn_args = tuple(a for j, a in enumerate(args) if j not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return (dyn_args, dyn_kwargs), tuple(statics)

    def _flatten_call(self, args, kwargs):
        """The call's dynamic leaves, their structure, and the static values."""
        if not kwargs and not self._static_argnums:  # the common call: positional arguments
            leaves, tree = tree_flatten(args)
            return leaves, tree, None
        dyn, statics = self._split(args, kwargs)
        leaves, tree = tree_flatten(dyn)
        return leaves, tree, statics

    def _rebuild(self, args, kwargs, tree):
        """A function of the dynamic leaves giving the whole call's (args, kwargs) back."""
        if tree is None:  # the arguments were the leaves themselves
            return lambda leaves: (tuple(leaves), {})
        if not kwargs and not self._static_argnums:
            return lambda leaves: (tree_unflatten(tree, leaves), {})
        nums = {i if i >= 0 else len(args) + i for i in self._static_argnums}

        def rebuild(leaves):
            dyn_args, dyn_kwargs = tree_unflatten(tree, leaves)
            it = iter(dyn_args)
            full = tuple(a if j in nums else next(it) for j, a in enumerate(args))
            merged = {
                k: (v if k in self._static_argnames else dyn_kwargs[k]) for k, v in kwargs.items()
            }
            return full, merged

        return rebuild

    def __call__(self, *args, **kwargs):
        """The function's result: replayed, recorded or run eagerly. An error leaves without
        fgrad's frames in its traceback, as from any transform (`fgrad.boundary`); the body
        is one try, which costs nothing until it catches (a wrapper cost 0.13 us a call)."""
        __tracebackhide__ = True  # pytest shows this frame no more than the boundary's
        try:
            if core.watch is not None:  # make_graph, debug_nans: they watch each operation run
                return self._fun(*args, **kwargs)
            # The common call, only for speed: positional arguments that are all arrays or
            # numbers (their signatures as `_leaf_signature` gives them). Its key is the tuple of
            # their signatures (the general key is a triple of another kind).
            key = tree = None
            if not kwargs and not self._static_argnums:
                key = _fast_key(args)
                leaves, general = args, False
            if key is None:
                leaves, tree, statics = self._flatten_call(args, kwargs)
                sigs, general = [], False
                for x in leaves:
                    if type(x) is _np.ndarray:  # the common leaf, without a call
                        sigs.append((x.shape, x.dtype))
                        continue
                    try:
                        s, g = _leaf_signature(x)
                        if isinstance(x, _np.ndarray):  # a subclass: the record's input is a view
                            leaves[len(sigs)] = x.view(_np.ndarray)
                    except TypeError as error:  # say which leaf of which argument
                        raise TypeError(
                            f"{error}. It is "
                            + _leaf_place(
                                tree, len(leaves), len(sigs), args, self._static_argnums, kwargs
                            )
                        ) from None
                    sigs.append(s)
                    general = general or g
                key = (_tree_key(tree), statics, tuple(sigs), general)
            entry = self._cache.get(key)
            cells, rebinds, rebound = (), 0, ()
            if self._has_state:
                cells = _free_values(self._watched)
                if entry is not None and not _same_cells(entry.cells, cells):
                    # a variable the function reads was rebound: record again, unless that
                    # happened at every call (then it runs eagerly, `_settle_rebinds`)
                    if not (entry.eager and entry.rebinds >= self._max_paths):
                        replayed = entry.replay is not None or entry.interpreted
                        rebinds = 1 if replayed else entry.rebinds + 1
                        rebound = _rebound_names(self._watched, entry.cells, cells)
                        entry = None
            if entry is not None:
                if entry.eager:
                    if self._recorded_outside():
                        raise _Deferred(settled=True)
                    return self._fun(*args, **kwargs)
                replay = entry.replay
                if replay is None:
                    if entry.general and not entry.interpreted:
                        entry.interpreted = True
                        replay = functools.partial(_interpret, entry.root)
                    else:
                        replay = self._compiled(entry)
                marks = _recording_marks() if entry.general else None
                try:
                    return replay(*leaves)
                except _Miss as miss:
                    _roll_back(marks)
                    if self._recorded_outside():
                        raise _Deferred from None
                    rebuild = self._rebuild(args, kwargs, tree)
                    generators = _generators_in(self._watched, args, kwargs.values())
                    return self._again(entry, leaves, rebuild, miss, generators)
                except _Deferred:
                    raise
                except Exception:
                    # An operation raised on these values (inv of a singular matrix), which the
                    # function may catch (try/except): the replay cannot take that path, so this
                    # call runs eagerly, and raises, or goes on, as the function does.
                    _roll_back(marks)
                    if self._recorded_outside():
                        raise _Deferred from None
                    return self._fun(*args, **kwargs)
            if self._recorded_outside():
                raise _Deferred
            deferred = self._deferred
            if deferred is not None and not general and not rebinds:
                if key not in self._first_calls:
                    with self._lock:
                        if len(self._first_calls) >= _MAX_SIGNATURES:  # (as `_store`)
                            self._first_calls.clear()
                        self._first_calls.add(key)
                    # (the leaves as a record reads them: an ndarray subclass as the array it views)
                    args, kwargs = self._rebuild(args, kwargs, tree)(leaves)
                    return deferred(*args, **kwargs)
            generators = _generators_in(self._watched, args, kwargs.values())
            rebuild = self._rebuild(args, kwargs, tree)
            out, path = self._record_path(leaves, rebuild, generators, general)
            if path is None:  # f's jit runs eagerly: so does this one, for this signature
                entry = _Entry(None, len(leaves), general, cells)
                entry.eager = True
                with self._lock:
                    self._store(key, entry)
                self._give_held_warning(2)
                return out
            if path.unsafe is None and rebinds >= self._max_paths:
                self._settle_rebinds(key, len(leaves), general, cells, rebinds, rebound)
            elif path.unsafe is None:
                with self._lock:
                    known = self._cache.get(key)
                    if known is None or not _same_cells(known.cells, cells):
                        node = _Node(path.items, path)
                        self._store(key, _Entry(node, len(leaves), general, cells, rebinds))
            elif path.settled:  # runs eagerly from now on for this signature
                entry = _Entry(None, len(leaves), general, cells)
                entry.eager = True
                with self._lock:
                    self._store(key, entry)
                if path.unsafe.startswith(_WARNED_REASONS) and not self._warned:
                    self._warned = True
                    self._warn(f"fgrad.jit({self._name}): {path.unsafe}", 2)
            return out
        except (_Deferred, _Miss):  # the records' own control flow, for an outer jit
            raise
        except Exception as e:
            raise users_error(e)  # noqa: B904 (the same exception, re-raised)

    def with_signature_of(self, *args) -> Callable:
        """A function that calls this one on positional arguments of the signature of `args`
        (arrays of the same shapes and dtypes, numbers of the same types, in the same places:
        the caller vouches for it), looking the signature up once rather than at every call.
        For fgrad's own loops over one function (odeint calls its right-hand side at every
        step of the solver: the lookup was 1.3 of a 10 us call). `args` themselves are only
        read for their signature; a function that needs more (keyword or static arguments,
        pytrees, closure cells to check) gets this one itself."""
        key = _fast_key(args)
        if key is None or self._has_state or self._static_argnums:
            return self
        fun, entry = self._fun, None

        def call(*leaves):
            nonlocal entry
            if entry is None or entry.eager or core.watch is not None:
                out = self(*leaves)  # the first call records; a watched one runs eagerly
                entry = self._cache.get(key)
                return out
            replay = entry.replay or self._compiled(entry)
            marks = _recording_marks() if entry.general else None
            try:
                return replay(*leaves)
            except _Miss as miss:
                _roll_back(marks)
                return self._again(entry, leaves, lambda xs: (tuple(xs), {}), miss)
            except Exception:  # (as in `__call__`)
                _roll_back(marks)
                return fun(*leaves)

        call.__wrapped__ = fun  # type: ignore[attr-defined]
        return call

    def _compiled(self, entry):
        """The replay of `entry`'s tree of paths, compiled (again after a new path)."""
        with self._lock:
            replay = entry.replay = _compile(entry.root, entry.n_inputs, entry.general, self._name)
        return replay

    def _again(self, entry, leaves, rebuild, miss, generators=()):
        """A replay missed a guard: run the function again, recording its path."""
        out, path = self._record_path(leaves, rebuild, generators, entry.general)
        if path is None:
            entry.eager = True
            self._give_held_warning(3)
            return out
        if path.unsafe is not None:
            return out
        with self._lock:
            if entry.eager:
                return out
            if _count_paths(entry.root) >= self._max_paths:
                entry.eager = True
                self._warn_eager(miss.source)
                return out
            try:
                added = _insert(entry.root, path)
            except _Unstable:
                entry.eager = True
                self._warn_unstable()
                return out
            if added:
                entry.replay = None  # compiled again at the next call
        return out

    def _record_path(self, leaves, rebuild, generators, general):
        """`_record` of the function; for jit(grad(f)), of grad(f's jit), which f's jit may
        first have to learn this call's path for (`_learn_then_record`). (out, path), path
        None where this signature runs eagerly from now on, as f's jit does. Under an outer
        transform (`general`: jit(jit(grad(f))), vmap(jit(grad(f)))) the function's own
        Python is recorded, as for any function: learning f's path there would be recorded by
        the outer transform too, and a record of it would hold paths of two origins (a
        replay's and the Python's), which can disagree (`_Unstable`)."""
        if self._deferred is None or general:
            return _record(self._fun, leaves, rebuild, False, generators)
        try:
            return self._record_deferred(leaves, rebuild, generators)
        except _Deferred as apart:
            return self._learn_then_record(apart, leaves, rebuild, generators)

    def _learn_then_record(self, apart, leaves, rebuild, generators):
        """jit(grad(f)) whose record of f had no path for this call (`_Deferred`): grad of
        f's jit, run without recording the gradient, records f's new path (f's Python runs
        there, once), and then the gradient is recorded from it, in this call (a call that
        only taught f's jit cost a replay: a variable rebound before every other call left
        no call to replay, and the function settled to eager, warning of every call).
        (out, path); path None where f's jit runs eagerly (`settled`), or cannot replay
        even now."""
        args, kwargs = rebuild(leaves)
        held = self._inner._held_count
        out = self._deferred(*args, **kwargs)
        if apart.settled or self._inner._held_count != held:  # (it settled in this call)
            return out, None
        try:
            _, path = self._record_deferred(leaves, rebuild, generators)
        except _Deferred:
            return out, None
        return out, path

    def _store(self, key, entry) -> None:
        """Keep `entry` for the signature `key` (with the lock held), dropping the oldest
        signature past `_MAX_SIGNATURES`."""
        cache = self._cache
        cache[key] = entry
        if len(cache) > _MAX_SIGNATURES:
            del cache[next(iter(cache))]

    def _settle_rebinds(self, key, n_inputs, general, cells, rebinds, rebound):
        """`rebinds` calls in a row found a variable the function reads rebound, and recorded
        again, with no replay between: recording at every call costs more than running
        eagerly, so this signature runs eagerly from now on, with a warning naming it."""
        entry = _Entry(None, n_inputs, general, cells, rebinds)
        entry.eager = True
        with self._lock:
            self._store(key, entry)
            if self._warned:
                return
            self._warned = True
        names = ", ".join(rebound) or "a variable the function reads"
        was = "were" if len(rebound) > 1 else "was"
        self._warn(
            f"fgrad.jit({self._name}): {names} {was} rebound before each of the last {rebinds} "
            "calls, and a record holds the value it read, so each call recorded again (slower "
            "than running eagerly); this function runs eagerly from now on for these argument "
            "shapes. Pass it to the function as an argument instead, to jit it.",
            3,
        )

    def _warn(self, message: str, stacklevel: int) -> None:
        """Warn, from the caller's line `stacklevel` frames up; f's jit inside jit(grad(f))
        holds the warning instead (`_held`), for the outer one to give, from the user's call
        and naming itself, when it runs eagerly for that reason."""
        if self._holds_warnings:
            self._held, self._held_count = message, self._held_count + 1
            return
        # From the user's line, however deep in fgrad this jit was called (a jit the user
        # wrote inside grad or another jit warned from fgrad/api.py)
        frame = user_frame(2)
        if frame is None:
            warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)
            return
        warnings.warn_explicit(
            message,
            RuntimeWarning,
            frame.f_code.co_filename,
            frame.f_lineno,
            module=frame.f_globals.get("__name__"),
            registry=frame.f_globals.setdefault("__warningregistry__", {}),
        )

    def _give_held_warning(self, stacklevel: int) -> None:
        """jit(grad(f)) runs eagerly because f's jit does: its warning, once."""
        held = self._inner._held if self._inner is not None else None
        if held is not None and not self._warned:
            self._warned = True
            own = held.replace(f"fgrad.jit({self._inner._name})", f"fgrad.jit({self._name})", 1)
            self._warn(own, stacklevel + 1)  # (held in turn by a jit(grad) outside this one)

    def _warn_eager(self, source):
        if self._warned:
            return
        self._warned = True
        where = source or "a line of the function"
        self._warn(
            f"fgrad.jit({self._name}): the value read at {where} keeps changing from call "
            f"to call ({self._max_paths} paths recorded for these argument shapes), so this "
            "function runs eagerly from now on for them. Make the value an argument marked "
            "static (static_argnums) if it takes few values. If it is a value of each row "
            "of a vmap (jit(vmap(f)) with a branch on a row's value), put the jit inside: "
            "vmap(jit(f)) records a path per group of rows that branch alike, or choose with "
            "fgrad.numpy.where. Otherwise leave this function unjitted and jit the parts of "
            "it without the branch, or allow more paths with jit(..., max_paths=n).",
            4,
        )

    def _warn_unstable(self):
        if self._warned:
            return
        self._warned = True
        self._warn(
            f"fgrad.jit({self._name}): two calls that read the same values computed "
            "different operations, so the function depends on something that is not an "
            "argument (a global, a variable of an enclosing function that changed, NumPy's "
            "global random generator). It runs eagerly from now on; pass such state as an "
            "argument to jit it.",
            4,
        )

    def record_source(self, *args, **kwargs) -> str | None:
        """The Python source of the replay for these arguments' signature (None before the
        function was recorded with it, or where it runs eagerly)."""
        # (the keys `__call__` makes)
        fast = _fast_key(args) if not kwargs and not self._static_argnums else None
        if fast in self._first_calls and fast not in self._cache:
            self(*args, **kwargs)  # (jit(grad): the first call recorded only the function)
        entry = None if fast is None else self._cache.get(fast)
        if entry is None:
            leaves, tree, statics = self._flatten_call(args, kwargs)
            signatures = [_leaf_signature(x) for x in leaves]
            general = any(g for _, g in signatures)
            key = (_tree_key(tree), statics, tuple(s for s, _ in signatures), general)
            if key in self._first_calls and key not in self._cache:
                self(*args, **kwargs)
            entry = self._cache.get(key)
        if entry is None or entry.eager:  # not recorded, or run eagerly
            return None
        return (entry.replay or self._compiled(entry)).source


def _recording_marks():
    """Where each live `jit` recording of this thread stands (a replay under an outer
    recording is recorded by it, operation by operation), so that a replay that misses a
    guard part way can be taken back out (`_roll_back`) before the function runs again:
    else the outer record would hold the partial replay's operations, dead, before the
    re-run's (and two recordings of one path would differ: `_Unstable`)."""
    return [
        (lv, len(lv.items), lv.n_slots, set(lv.guarded), lv.unsafe)
        for lv in core.live_levels()
        if lv.stages
    ]


def _roll_back(marks):
    for level, n_items, n_slots, guarded, unsafe in marks or ():
        del level.items[n_items:]
        level.n_slots, level.guarded, level.unsafe = n_slots, guarded, unsafe


def _static_key(value, what, fun=None):
    """What selects a record for a static argument: its value, and what Python's equality
    does not tell apart but a function can (1, 1.0 and True are equal; so are 0.0 and -0.0):
    its type, and a float's exact text. `what` names the argument for an error: a keyword's
    text, or a position of `fun`'s (named on an error only: `_positional_label`)."""
    try:
        hash(value)
    except TypeError:
        path, part = _unhashable_part(value)
        where = f"its element {''.join(f'[{k}]' for k in path)} is " if path else "it is "
        what = _positional_label(fun, what) if type(what) is int else what
        raise TypeError(
            f"jit: the static {what} is not hashable: {where}{_describe_static(part)}; "
            "static arguments select a record by value, so pass a hashable one (a tuple "
            "instead of a list, a frozenset instead of a set), make it a dynamic argument if "
            "it is an array, a number or a pytree of them, or else close over it in the "
            "function"
        ) from None
    return _value_key(value)


def _positional_label(fun, j):
    """How an error names the static argument at position `j` of `fun`: by its parameter's
    name where the signature has one (static_argnames='opts' with opts passed by position
    is a static position), else by its position."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # a callable without a signature Python can read
        params = []
    if j < len(params) and params[j].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        return f"argument {params[j].name!r} (position {j})"
    return f"positional argument {j}"


def _unhashable_part(value, path=()):
    """The indices of the first unhashable part of `value` (() for `value` itself) and that
    part: a tuple is unhashable because of what it holds."""
    if isinstance(value, tuple):
        for k, v in enumerate(value):
            try:
                hash(v)
            except TypeError:
                return _unhashable_part(v, (*path, k))
    return path, value


def _describe_static(value):
    """A value in an error about static arguments: an array or a traced value by its shape
    and dtype."""
    if type(value) is Box:
        return (
            f"a traced value of shape {core.shape_of(value)} and dtype {core.dtype_of(value)} "
            "(leave it out of static_argnums and static_argnames: a traced value is a dynamic "
            "argument)"
        )
    if isinstance(value, _np.ndarray) or core.is_foreign_array(value):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"a {type(value).__name__}"


def _value_key(value):
    """`value` as a key that tells apart what `==` calls equal: the type of every part, and a
    float's exact text. Tuples (namedtuples too), frozensets and frozen dataclasses are keyed
    by their parts; any other object by its type and itself (its own `==`)."""
    kind = type(value)
    if kind is str or kind is int or value is None:
        return kind, value
    if kind in (float, complex) or isinstance(value, (_np.floating, _np.complexfloating)):
        return kind, repr(value)  # (repr tells -0.0 from 0.0, and round-trips every float)
    if isinstance(value, tuple):
        return kind, tuple(_value_key(v) for v in value)
    if isinstance(value, frozenset):
        return kind, frozenset(_value_key(v) for v in value)
    params = getattr(kind, "__dataclass_params__", None)
    if params is not None and params.frozen and params.eq:
        # the fields its == compares (not InitVars, nor fields with compare=False)
        compared = [f.name for f in dataclasses.fields(value) if f.compare]
        return kind, tuple(_value_key(getattr(value, name)) for name in compared)
    return kind, value


def _tree_key(tree):
    """The structure of the dynamic arguments as a key: `tree` itself compares the nodes' aux
    data (a dict's keys, a registered node's data) by `==`, so {1: x} and {True: x}, or a
    node holding 0.0 and one holding -0.0, would share a record and rebuild the first one's
    outputs. Their `_value_key`s are added where any aux data is not None."""
    auxes = tree_aux_data(tree)
    return tree if not auxes else (tree, tuple(_value_key(a) for a in auxes))


_PASSES_ON = [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]


def _static_positions(fun, argnums, argnames, who="jit"):
    """`argnums` and `argnames` completed from `fun`'s signature, as JAX completes them: a
    parameter named static by one is static passed either way (by position or by name).
    Errors name `who` (jit, or make_record, which records as jit does)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
        # a transform's function (grad(f), vmap(f): `*args, **kwargs`) passes its arguments
        # on as given: f's names are theirs (jit(grad(f), static_argnames="act"))
        for _ in range(8):
            inner = getattr(fun, "transformed", None)
            if inner is None or [p.kind for p in params] != _PASSES_ON:
                break
            fun, params = inner, list(inspect.signature(inner).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins)
        return argnums, argnames
    either = (inspect.Parameter.POSITIONAL_OR_KEYWORD,)
    positional = [p for p in params if p.kind in (*either, inspect.Parameter.POSITIONAL_ONLY)]
    if not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        for i in argnums:
            if not -len(positional) <= i < len(positional):
                n = len(positional)
                valid = (
                    f"valid: {-n} to {n - 1}; positions count from 0, negative ones from the end"
                    if n
                    else "no position is valid"
                )
                keywords = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
                by_name = (
                    f"; its keyword-only parameters ({', '.join(keywords)}) are named by "
                    "static_argnames"
                    if keywords
                    else ""
                )
                raise ValueError(
                    f"{who}: static_argnums names argument {i}, but "
                    f"{getattr(fun, '__name__', repr(fun))} takes {n} positional "
                    f"argument(s) ({valid}): fix static_argnums{by_name}"
                )
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        known = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
        for name in argnames:
            if name not in known:
                raise ValueError(
                    f"{who}: static_argnames names {name!r}, but "
                    f"{getattr(fun, '__name__', repr(fun))} has no such parameter (it has "
                    f"{', '.join(sorted(known)) or 'none'}): check the spelling"
                )
    nums, names = list(argnums), list(argnames)
    for i in argnums:
        if 0 <= i < len(params) and params[i].kind in either and params[i].name not in names:
            names.append(params[i].name)
    for k, p in enumerate(params):
        if p.name in argnames and p.kind in either and k not in nums:
            nums.append(k)
    return tuple(nums), tuple(names)


def _argument_list(kind: str, value, check, who: str = "jit") -> list:
    """jit's `static_argnums` or `static_argnames`, one value or an iterable of them, each
    read by `check` (which names what it wants)."""
    if isinstance(value, (str, bytes, int, _np.integer)):  # one value (a bytes is refused)
        value = (value,)
    try:
        values = list(value)
    except TypeError:
        raise TypeError(
            f"{who}: {kind} takes one value or a sequence of them, got {value!r} of type "
            f"{type(value).__name__}"
        ) from None
    return [check(kind, v, who) for v in values]


def _position(kind: str, v, who: str = "jit") -> int:
    """An argument position, as JAX reads it (`operator.index`: a NumPy integer too)."""
    if not isinstance(v, (str, bytes, bool, _np.bool_)):
        try:
            return operator.index(v)
        except TypeError:
            pass
    other = " (an argument name goes in static_argnames)" if isinstance(v, str) else ""
    raise TypeError(
        f"{who}: {kind} takes ints (argument positions), got {v!r} of type "
        f"{type(v).__name__}{other}"
    )


def _name(kind: str, v, who: str = "jit") -> str:
    """An argument name."""
    if isinstance(v, str):
        return str(v)
    other = " (an argument position goes in static_argnums)" if isinstance(v, int) else ""
    raise TypeError(
        f"{who}: {kind} takes strs (argument names), got {v!r} of type {type(v).__name__}{other}"
    )


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    max_paths: int = 8,
    donate_argnums: int | Sequence[int] = (),
    donate_argnames: str | Sequence[str] = (),
    keep_unused: bool = False,
) -> Callable:
    """Record `fun` on its first call and replay the record on later calls.

    Parameters
    ----------
    fun : callable
        The function; its arguments are arrays, numbers or pytrees of them.
    static_argnums, static_argnames : int or str, or sequences of them
        Arguments passed by value rather than traced: each value gets its own record (they
        must be hashable).
    max_paths : int
        How many paths (outcomes of the Python branches on values) one signature may record
        before the function runs eagerly for it, with a warning.
    donate_argnums, donate_argnames, keep_unused
        Accepted for JAX code, and change nothing: an argument's buffer is never reused for
        an output (fgrad never writes into its inputs, which stay valid after the call), and
        every argument is kept (a record has no compiled signature to prune).

    Returns
    -------
    callable
        `fun`, recorded on the first call with each signature (the arguments' structure,
        shapes and dtypes, and the static arguments' values) and replayed on later ones. A
        replay gives the eager result bit for bit; a Python branch on a traced value is
        checked at every replay, and a new outcome records a new path.

    Examples
    --------
    >>> import numpy as np, fgrad, fgrad.numpy as fnp
    >>> f = fgrad.jit(fgrad.grad(lambda x: fnp.sum(fnp.sin(x) ** 2)))
    >>> f(np.zeros(2))   # recorded
    array([0., 0.])
    >>> f(np.ones(2)).round(6)   # replayed
    array([0.909297, 0.909297])
    >>> g = fgrad.jit(lambda x: x if x > 0 else -x)   # the branch is guarded
    >>> float(g(2.0)), float(g(-3.0))
    (2.0, 3.0)
    """
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            max_paths=max_paths,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            keep_unused=keep_unused,
        )
    if isinstance(fun, (classmethod, staticmethod)):
        kind = type(fun).__name__
        raise TypeError(
            f"jit expects a function, got a {kind}: put @{kind} above @fgrad.jit"
            + (
                " and pass the class as static (@functools.partial(fgrad.jit, "
                "static_argnums=0)), as it is no array"
                if kind == "classmethod"
                else ""
            )
        )
    if not callable(fun):
        raise TypeError(
            f"jit expects a function, got {type(fun).__name__}: use fgrad.jit(f) or @fgrad.jit"
        )
    if (
        inspect.isgeneratorfunction(fun)
        or inspect.iscoroutinefunction(fun)
        or inspect.isasyncgenfunction(fun)
    ):
        # (its body would run only when the iterator it returns is iterated, outside the
        # transform: one look at the code's flags here, not a check per call)
        raise TypeError(
            f"jit: {getattr(getattr(fun, 'func', fun), '__name__', '')} is a generator "
            "function (or an async one): calling it returns an iterator, whose body runs only "
            "when iterated, outside the transform; give a function that returns its result "
            "instead (for several values, return a list or tuple of what it yields)"
        )
    static_argnums = tuple(_argument_list("static_argnums", static_argnums, _position))
    static_argnames = tuple(_argument_list("static_argnames", static_argnames, _name))
    whole = isinstance(max_paths, (int, _np.integer)) and not isinstance(max_paths, bool)
    if not whole or max_paths < 1:
        raise ValueError(
            f"jit: max_paths must be a positive int, got {max_paths!r} of type "
            f"{type(max_paths).__name__}"
        )
    max_paths = int(max_paths)
    static_argnums, static_argnames = _static_positions(fun, static_argnums, static_argnames)
    return Jitted(fun, static_argnums, static_argnames, max_paths)


# --- a look inside --------------------------------------------------------------------------------


class Record:
    """One recorded run of a function, printable as a program (see `make_record`)."""

    def __init__(self, path: _Path, in_types: list, types: dict):
        self.path = path
        self.in_types = in_types
        self.types = types

    @property
    def ops(self) -> list:
        """The operations, in order (each an `Op`: `prim`, `ins`, `params`, `outs`, ...)."""
        return [Op(*item) for item in self.path.items if type(item) is tuple]

    @property
    def guards(self) -> list:
        """The values the function read (each a `Guard`: `slot`, `key`, `source`)."""
        return [item for item in self.path.items if type(item) is Guard]

    def __str__(self) -> str:
        def ref(r):
            if type(r) is int:
                return f"v{r}"
            v = constant(r)
            if _is_literal(v):
                return repr(v)
            return f"const:{describe_value(v)}"

        head = ", ".join(f"v{i}:{t}" for i, t in enumerate(self.in_types))
        lines = [f"record({head}):"]
        rows = []
        for item in self.path.items:
            if type(item) is tuple:
                item = Op(*item)
                outs = ", ".join(f"v{s}:{self.types.get(s, '?')}" for s in item.outs)
                args = [ref(r) for r in item.ins]
                args += [f"{k}={v!r}" for k, v in item.params.items()]
                rows.append((f"{outs} = {item.prim.name}({', '.join(args)})", item.source))
            elif item.shape:
                rows.append((f"guard shape(v{item.slot}) == {item.key!r}", item.source))
            elif item.kind == "layout":
                rows.append((f"guard layout(v{item.slot}) == {item.key!r}", item.source))
            else:
                rows.append((f"guard v{item.slot} == {_key_text(item.key)}", item.source))
        outs = ", ".join(ref(r) for r in self.path.outputs)
        rows.append((f"return {outs}", None))
        width = max(len(text) for text, _ in rows)
        for text, source in rows:
            lines.append(f"  {text.ljust(width)}  # {source}" if source else f"  {text}")
        return "\n".join(lines)

    __repr__ = __str__


def _key_text(key) -> str:
    """A guard's value as it reads in a record: a number or an array as NumPy prints it (a
    guard compares the bits of the value, `guard_key`, which are kept as bytes)."""
    if not isinstance(key, tuple):
        return repr(key)
    dtype, shape, data = key
    value = _np.frombuffer(data, dtype=dtype).reshape(shape)
    return repr(value[()]) if not shape else _np.array2string(value, separator=", ")


def make_record(fun: Callable, *, static_argnums=(), static_argnames=()) -> Callable:
    """A function that records `fun` on its arguments and returns the `Record`: a program of
    one line per operation, with shapes, dtypes and the user's source line (as
    `jax.make_jaxpr`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> print(fgrad.make_record(lambda x: fnp.sin(x) * 2.0)(1.0))  # doctest: +ELLIPSIS
    record(v0:float):
      v1:f64[] = sin(v0)         # ...
      v2:f64[] = multiply(v1, 2.0)  # ...
      return v2
    """
    who = "make_record"
    if not callable(fun):
        raise TypeError(
            f"{who} expects a function, got {fun!r} of type {type(fun).__name__}; pass the "
            f"function itself, e.g. {who}(f)(x), not {who}(f(x))"
        )
    static_argnums = tuple(_argument_list("static_argnums", static_argnums, _position, who))
    static_argnames = tuple(_argument_list("static_argnames", static_argnames, _name, who))
    static_argnums, static_argnames = _static_positions(fun, static_argnums, static_argnames, who)
    jitted = jit(fun, static_argnums=static_argnums, static_argnames=static_argnames)

    @api_boundary
    def recorder(*args, **kwargs):
        leaves, tree, _ = jitted._flatten_call(args, kwargs)
        rebuild = jitted._rebuild(args, kwargs, tree)
        level = StagingLevel(sources=True)
        with level:
            boxed = _inputs(level, leaves)
            full_args, full_kwargs = rebuild(boxed)
            out = fun(*full_args, **full_kwargs)
        out_leaves, out_tree = tree_flatten(out)
        outputs = tuple(
            o.aux if type(o) is Box and o.level is level else Const(o) for o in out_leaves
        )
        path = _Path(level.items, outputs, (), out_tree, len(leaves), level.unsafe)
        in_types = [type(x).__name__ if type(x) in _SCALARS else describe_value(x) for x in leaves]
        return Record(path, in_types, level.types)

    return recorder
