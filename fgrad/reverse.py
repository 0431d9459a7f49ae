"""Reverse mode, the K transform: a level that records a tape, and the backward pass over it.

A `ReverseLevel` appends to its tape an entry `(parents, bprop)` for each primitive it
processes: the bprop closures built by the primitive's rules (the K transform: each rule
returns a closure over the residuals it needs, mapping the output cotangent to input
cotangents) and the tape positions of the inputs they send cotangents to. A box's `aux` is the
position of the entry that made it. `backward_pass` walks the tape from the end, iteratively,
holding one cotangent per position and summing the cotangents of values used twice.

Imports: `fgrad.core`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import core
from .core import (
    _NO_PARAMS,
    Box,
    Level,
    Primitive,
    add_any,
    bind,
    bind_one,
    bind_two,
    enter_phase,
    leave_phase,
)

__all__ = ["INPUT_ENTRY", "ReverseLevel", "backward_pass"]


# A tape entry is a plain tuple `(parents, bprop)`, as an entry is made for every operation.
# The most common entry, one input that needs a cotangent, is `(position, closure)`: that
# input's tape position and its closure. Otherwise `parents` is a tuple of the inputs' tape
# positions, and `bprop` is one of:
# - a tuple of per-input closures aligned with `parents` (built-in rules: only the inputs that
#   need a gradient get a closure);
# - one closure returning a cotangent for every argument, aligned with `parents`, where `None`
#   marks an argument that is not a box of this level;
# - an `_Output`: the entry of one output of a primitive with several, whose cotangent goes to
#   that primitive's entry (its only parent);
# - None: an input of the traced function, `INPUT_ENTRY`.
INPUT_ENTRY = ((), None)

_new_box = object.__new__


class _Output:
    """Output `index` of `count` of a primitive with several outputs."""

    __slots__ = ("count", "index")

    def __init__(self, index, count):
        self.index = index
        self.count = count


class ReverseLevel(Level):
    """A level of the K transform: records a tape of entries for the backward pass."""

    __slots__ = ("tape",)

    def __init__(self) -> None:
        super().__init__()
        self.tape: Any = []  # a list of entries; None once a consuming backward pass ran

    def new_input(self, x: Any) -> Box:
        tape = self.tape
        tape.append(INPUT_ENTRY)
        if core.watch is not None:
            core.watch.input(self, len(tape) - 1, x)
        return Box(x, self, len(tape) - 1)

    # Shortcuts, only for speed (the general path, `_process_general`, gives the same
    # entries): built-in rules of one or two inputs are most of a program. Without parameters
    # they call the impl and the rules without `**params` (a slower call in CPython); when no
    # box is left under this level's, the impl directly instead of a second pass of `bind`;
    # and they make the output's box by setting its slots, as `Box(...)` is a call of its
    # Python `__init__` through the type (a third of the cost of making a box).

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        n = len(args)
        if n == 1:
            if not params:
                return self.process_one(prim, args[0])
            vjps = prim.vjps
            if vjps is not None and core.watch is None:
                x = args[0]  # the only argument holds the innermost box, so it is this level's
                xv = x.value
                ans = bind(prim, (xv,), params) if type(xv) is Box else prim.impl(xv, **params)
                maker = vjps[0]
                if maker is None:
                    return ans
                tape = self.tape
                tape.append((x.aux, maker(ans, xv, **params)))
                box = _new_box(Box)  # Box(ans, self, position), without its __init__ call
                box.value, box.level, box.aux = ans, self, len(tape) - 1
                return box
        elif n == 2 and not params:
            return self.process_two(prim, args[0], args[1])
        return self._process_general(prim, args, params)

    def process_one(self, prim: Primitive, x: Box) -> Any:
        vjps = prim.vjps
        if vjps is None or core.watch is not None:
            return self._process_general(prim, (x,), _NO_PARAMS)
        xv = x.value
        ans = bind_one(prim, xv) if type(xv) is Box else prim.impl(xv)
        maker = vjps[0]
        if maker is None:
            return ans
        tape = self.tape
        tape.append((x.aux, maker(ans, xv)))
        box = _new_box(Box)
        box.value, box.level, box.aux = ans, self, len(tape) - 1
        return box

    def process_two(self, prim: Primitive, x: Any, y: Any) -> Any:
        vjps = prim.vjps
        if vjps is None or core.watch is not None:
            return self._process_general(prim, (x, y), _NO_PARAMS)
        # each input: its value, and its vjp maker when it is this level's box (else None)
        if type(x) is Box and x.level is self:
            xv, fx = x.value, vjps[0]
        else:
            xv, fx = x, None
        if type(y) is Box and y.level is self:
            yv, fy = y.value, vjps[1]
        else:
            yv, fy = y, None
        if type(xv) is Box or type(yv) is Box:
            ans = bind_two(prim, xv, yv)
        else:
            ans = prim.impl(xv, yv)
        if fx is not None:
            if fy is not None:
                entry = ((x.aux, y.aux), (fx(ans, xv, yv), fy(ans, xv, yv)))
            else:
                entry = (x.aux, fx(ans, xv, yv))
        elif fy is not None:
            entry = (y.aux, fy(ans, xv, yv))
        else:
            return ans
        tape = self.tape
        tape.append(entry)
        box = _new_box(Box)
        box.value, box.level, box.aux = ans, self, len(tape) - 1
        return box

    def _process_general(self, prim, args, params):
        own = [type(a) is Box and a.level is self for a in args]
        vals = [a.value if o else a for a, o in zip(args, own)]
        watch = core.watch
        phase = None if watch is None else enter_phase("apply", self, prim)
        try:
            if prim.fprop is not None:
                if phase is not None:
                    phase.kind = "residual"
                ans, bprop = prim.fprop(*vals, **params)
                parents = tuple(a.aux if o else None for a, o in zip(args, own))
            else:
                ans = bind(prim, vals, params)
                if phase is not None:
                    phase.kind = "residual"
                vjps = prim.vjps
                if vjps is None:
                    bprop = prim.vjp(own, ans, *vals, **params)
                    parents = tuple(a.aux if o else None for a, o in zip(args, own))
                else:
                    parents, closures = [], []
                    for i, a in enumerate(args):
                        maker = vjps[i] if i < len(vjps) else None
                        if own[i] and maker is not None:
                            parents.append(a.aux)
                            closures.append(maker(ans, *vals, **params))
                    if not closures:
                        return ans
                    parents, bprop = tuple(parents), tuple(closures)
        finally:
            if phase is not None:
                leave_phase(phase)
        tape = self.tape
        tape.append((parents, bprop))
        position = len(tape) - 1
        if watch is not None:
            watch.recorded(self, position, phase)
        if not prim.multiple_results:
            return Box(ans, self, position)
        count = len(ans)
        outputs = []
        for i, a in enumerate(ans):
            tape.append(((position,), _Output(i, count)))
            outputs.append(Box(a, self, len(tape) - 1) if core.is_differentiable_value(a) else a)
        return tuple(outputs)


# --- the backward pass ----------------------------------------------------------------------------


def backward_pass(
    level: ReverseLevel, seeds: Sequence[tuple[int, Any]], consume: bool = False
) -> list:
    """Propagate cotangents through `level`'s tape, last entry first; no recursion.

    `seeds` is a list of (tape position, cotangent). Returns a list with the summed cotangent
    of each input's position (`None`, a structural zero, elsewhere). Each entry is dropped as
    the pass reaches it, so its residuals are freed during the pass. With `consume` the pass
    empties the level's own tape (for one-shot gradients); without, a copy of it (a vjp
    function may be called again).
    """
    tape = level.tape
    if tape is None:
        raise RuntimeError(
            "this gradient's backward pass was already run and its residuals freed; "
            "use vjp(f, x) to get a function you can call more than once"
        )
    cts = [None] * len(tape)
    for pos, ct in seeds:
        _accumulate(cts, pos, ct, level)
    if consume:
        level.tape = None  # emptied below, entry by entry
    else:
        tape = list(tape)  # the level keeps its tape for another pass; this one empties a copy
    watch = core.watch
    if watch is None:
        _pass(tape, cts, level, watch)
        return cts
    left = len(core.phases())  # a watched pass that raises leaves no phase behind
    try:
        _pass(tape, cts, level, watch)
    finally:
        del core.phases()[left:]
    return cts


def _pass(tape, cts, level, watch):
    pop = tape.pop
    for k in range(len(tape) - 1, -1, -1):
        parents, bprop = pop()  # entry k, dropped as it is read (with its residuals)
        ct = cts[k]
        if ct is None or bprop is None:
            continue  # no cotangent reached it, or an input: its cotangent is the answer
        cts[k] = None  # used once: freed as the pass moves on
        if type(parents) is int:  # the most common entry: one input, one closure
            if watch is None:
                c = bprop(ct)
                if c is not None:
                    if cts[parents] is None:
                        cts[parents] = c
                    else:
                        _accumulate(cts, parents, c, level)
                continue
            parents, bprop = (parents,), (bprop,)  # watched: the general code below
        phase = None if watch is None else enter_phase("backward", level, None, k, ct)
        if type(bprop) is tuple:
            for parent, f in zip(parents, bprop):
                c = f(ct)
                if phase is not None:
                    watch.cotangent(phase, ct, (c,))
                # Most values are used once: their first cotangent is stored as it is, and
                # only a second one pays for the call that sums them.
                if c is not None:
                    if cts[parent] is None:
                        cts[parent] = c
                    else:
                        _accumulate(cts, parent, c, level)
            # The loop's names would keep the last closure (its residuals) and cotangent alive
            # through the next entries: on a large gradient, memory the next operations could
            # reuse while it is in the cache (the seed MLP's gradient peaks at 702 KiB of
            # arrays without them, 780 with them).
            f = c = None
        elif type(bprop) is _Output:  # one output of several: a slot of its primitive's entry
            (parent,) = parents
            slots = cts[parent]
            if slots is None:
                slots = cts[parent] = [None] * bprop.count
            slots[bprop.index] = ct
        else:
            in_cts = bprop(ct)
            if phase is not None:
                watch.cotangent(phase, ct, in_cts)
            for parent, c in zip(parents, in_cts):
                if parent is not None and c is not None:
                    _accumulate(cts, parent, c, level)
            in_cts = c = None  # as above
        if phase is not None:
            leave_phase(phase)


def _accumulate(cts, pos, ct, level):
    old = cts[pos]
    if old is None:
        cts[pos] = ct
    elif core.watch is not None:
        phase = enter_phase("sum", level, add_any, pos)
        try:
            cts[pos] = bind_two(add_any, old, ct)
        finally:
            leave_phase(phase)
    elif type(old) is Box or type(ct) is Box:
        cts[pos] = bind_two(add_any, old, ct)
    else:  # two plain arrays (a first derivative): NumPy's sum, without bind's scan
        cts[pos] = add_any.impl(old, ct)
