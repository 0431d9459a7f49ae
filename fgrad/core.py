"""The core of fgrad: levels, boxes, `bind`, the K transform (reverse mode) and forward mode.

How a derivative is computed
----------------------------
Every transform call (`grad`, `vjp`, `jvp`, ...) opens a *level*: an object on a per-thread stack.
Inputs are wrapped in a `Box(value, level, aux)`; `aux` is the box's tape position on a reverse
level and its tangent on a forward level. A primitive applied to arguments that include boxes is
processed by the innermost live level among them (`bind`). That level strips its own boxes,
applies the primitive again to what is left (so boxes of outer levels are processed by their
own levels: no perturbation confusion), and records what it needs:

- a `ReverseLevel` appends to its tape an entry `(parents, bprop)`: the bprop closures built
  by the primitive's fprop (the K transform: each fprop returns `(ans, bprop)`) and the tape
  positions of the inputs they send cotangents to; a box's `aux` is the position of the entry
  that made it. The backward pass walks the tape from the end, iteratively, holding one
  cotangent per position and summing the cotangents of values used twice;
- a `ForwardLevel` computes the tangent of the result from the primitive's jvp rule, or, when a
  primitive has only a bprop, by transposing the bprop (it is linear in the cotangent).

Rules are written in fgrad operations, so the bprop of a level is itself traced by the levels
outside it: that is all higher-order differentiation needs.

A box whose level has exited is just the value it carries; `bind` unwraps it.

This module imports the standard library and NumPy only. The NumPy layer (`fgrad.numpy`)
attaches the array operators to `Box`; the core never imports it.
"""

import threading

import numpy as _np

__all__ = [
    "Box",
    "INPUT_ENTRY",
    "Level",
    "ReverseLevel",
    "ForwardLevel",
    "Primitive",
    "NondiffPrimitive",
    "bind",
    "bind_one",
    "bind_two",
    "backward_pass",
    "primal",
    "add_any",
    "zeros_like_value",
]


class _TraceState(threading.local):
    """The live levels of the current thread, innermost last."""

    def __init__(self):
        self.stack = []


_state = _TraceState()


# --- boxes and tape entries ---------------------------------------------------------------


class Box:
    """A value being differentiated by `level`.

    `aux` is the position of the box's tape entry on a reverse level and its tangent on a
    forward level. The array operators and attributes (`+`, `@`, `.shape`, ...) are attached
    by `fgrad.numpy`.
    """

    __slots__ = ("value", "level", "aux")

    def __init__(self, value, level, aux):
        self.value = value
        self.level = level
        self.aux = aux


# A reverse level's tape is a list of entries `(parents, bprop)`, one per primitive application
# and one per input; a plain tuple, as an entry is made for every operation. `parents` holds the
# tape positions of the inputs, and `bprop` maps the output cotangent to input cotangents. It is
# either a tuple of per-input closures aligned with `parents` (built-in rules: only the inputs
# that need a gradient get a closure), or one closure returning a cotangent for every argument,
# aligned with `parents` where `None` marks an argument that is not a box of this level (user
# fprops). An input of the traced function is the entry `INPUT_ENTRY`.
INPUT_ENTRY = ((), None)


def primal(x):
    """The plain value under every box: what a constant at every level sees. A list or tuple
    (an array-like, as NumPy reads it) gets the plain values of its elements."""
    while type(x) is Box:
        x = x.value
    if type(x) is list or type(x) is tuple:
        return type(x)(primal(v) for v in x)
    return x


def holds_box(seq):
    """Whether a list or tuple holds a box, at any depth."""
    for v in seq:
        if type(v) is Box or ((type(v) is list or type(v) is tuple) and holds_box(v)):
            return True
    return False


def holds_box_of(x, level):
    """Whether x's nesting of boxes holds a box of `level`."""
    while type(x) is Box:
        if x.level is level:
            return True
        x = x.value
    return False


# How a list or tuple holding traced values becomes one traced array, as NumPy reads an
# array-like: a differentiable stack, which the NumPy layer provides when it is imported
# (the core never imports it). `bind` applies it to such arguments.
array_from_sequence = None


def _live_value(x):
    """Unwrap boxes of exited levels only; a box of a live level is kept."""
    while type(x) is Box and not x.level.live:
        x = x.value
    return x


# --- levels -------------------------------------------------------------------------------


class Level:
    """A transform call in progress. Use as a context manager; boxes compare levels by identity."""

    __slots__ = ("depth", "live", "__weakref__")

    def __init__(self):
        self.depth = -1
        self.live = False

    def __enter__(self):
        stack = _state.stack
        self.depth = len(stack)
        self.live = True
        stack.append(self)
        return self

    def __exit__(self, *exc):
        # Leave no state behind, even when the traced function raised.
        self.live = False
        stack = _state.stack
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            stack.remove(self)
        return False

    def __repr__(self):
        state = "live" if self.live else "exited"
        return f"<{type(self).__name__} depth={self.depth} {state}>"


class ReverseLevel(Level):
    """A level of the K transform: records a tape of entries for the backward pass."""

    __slots__ = ("tape",)

    def __init__(self):
        super().__init__()
        self.tape = []

    def new_input(self, x):
        tape = self.tape
        tape.append(INPUT_ENTRY)
        return Box(x, self, len(tape) - 1)

    def process(self, prim, args, params):
        vjps = prim.vjps
        if vjps is None:
            return self._process_fprop(prim, args, params)
        # Built-in rules: build closures only for the inputs that need a gradient. One- and
        # two-input primitives without parameters are most of a program, so they skip the
        # general loop, and call their impl and rules without `**params` (a slower call in
        # CPython). When no box is left under this level's, the value is the primitive's impl:
        # calling it directly skips a second pass of `bind` over the arguments (unless a watch,
        # such as debug_nans, must see it).
        if len(args) == 1 and not params:
            x = args[0]  # the only argument holds the innermost box, so it is this level's
            xv = x.value
            if type(xv) is Box or watch is not None:
                ans = bind(prim, (xv,), params)
            else:
                ans = prim.impl(xv)
            maker = vjps[0]
            if maker is None:
                return ans
            entry = ((x.aux,), (maker(ans, xv),))
        elif len(args) == 2 and not params:
            x, y = args
            x_own = type(x) is Box and x.level is self
            y_own = type(y) is Box and y.level is self
            xv = x.value if x_own else x
            yv = y.value if y_own else y
            if type(xv) is Box or type(yv) is Box or watch is not None:
                ans = bind(prim, (xv, yv), params)
            else:
                ans = prim.impl(xv, yv)
            fx = vjps[0] if x_own else None
            fy = vjps[1] if y_own else None
            if fx is not None and fy is not None:
                entry = ((x.aux, y.aux), (fx(ans, xv, yv), fy(ans, xv, yv)))
            elif fx is not None:
                entry = ((x.aux,), (fx(ans, xv, yv),))
            elif fy is not None:
                entry = ((y.aux,), (fy(ans, xv, yv),))
            else:
                return ans
        else:
            vals = [a.value if type(a) is Box and a.level is self else a for a in args]
            ans = bind(prim, vals, params)
            parents, bprops = [], []
            for i, a in enumerate(args):
                maker = vjps[i] if i < len(vjps) else None
                if maker is not None and type(a) is Box and a.level is self:
                    parents.append(a.aux)
                    bprops.append(maker(ans, *vals, **params))
            if not bprops:
                return ans
            entry = (tuple(parents), tuple(bprops))
        tape = self.tape
        tape.append(entry)
        return Box(ans, self, len(tape) - 1)

    def _process_fprop(self, prim, args, params):
        vals = [a.value if type(a) is Box and a.level is self else a for a in args]
        ans, bprop = prim.fprop(*vals, **params)
        parents = tuple(a.aux if type(a) is Box and a.level is self else None for a in args)
        tape = self.tape
        tape.append((parents, bprop))
        return Box(ans, self, len(tape) - 1)


class ForwardLevel(Level):
    """A level of forward mode: each box carries its tangent."""

    __slots__ = ()

    def process(self, prim, args, params):
        vals = list(args)
        tangents = [None] * len(args)
        for i, a in enumerate(args):
            if type(a) is Box and a.level is self:
                vals[i] = a.value
                tangents[i] = a.aux
        jvps = prim.jvps
        if jvps is not None:
            ans = bind(prim, vals, params)
            t_out = None
            for i, t in enumerate(tangents):
                if t is None:
                    continue
                rule = jvps[i] if i < len(jvps) else None
                if rule is None:
                    continue
                ti = rule(t, ans, *vals, **params)
                if ti is not None:
                    t_out = ti if t_out is None else add_any(t_out, ti)
        elif prim.jvp is not None:
            ans = bind(prim, vals, params)
            t_out = prim.jvp(tangents, ans, *vals, **params)
        else:
            ans, bprop = prim.fprop(*vals, **params)
            t_out = _jvp_by_transposing(bprop, ans, tangents)
        if t_out is None:
            return ans  # a structural zero tangent: the result is a constant at this level
        if watch is not None:
            watch.tangent(prim, vals, t_out)
        return Box(ans, self, t_out)


def _jvp_by_transposing(bprop, ans, tangents):
    """J t from a bprop alone: bprop is ct -> J^T ct, linear in ct, so its own vjp is J t.

    The cotangent is a zero placeholder boxed on a fresh reverse level; the backward pass of
    that level, seeded with the tangents at bprop's outputs, gives the cotangent of the
    placeholder, which is J t.
    """
    with ReverseLevel() as level:
        ct = level.new_input(zeros_like_value(ans))
        in_cts = bprop(ct)
    seeds = [
        (c.aux, t)
        for c, t in zip(in_cts, tangents)
        if t is not None and type(c) is Box and c.level is level
    ]
    if not seeds:
        return None
    return backward_pass(level, seeds)[ct.aux]


def zeros_like_value(x):
    """A plain zero with the shape and dtype of x's primal value (a NumPy scalar for shape ())."""
    v = primal(x)
    z = _np.zeros_like(v)
    return z[()] if z.ndim == 0 else z


# --- primitives ---------------------------------------------------------------------------


class Primitive:
    """An operation fgrad differentiates as a unit.

    Two ways to give its rules:

    - per-input rules (the built-ins): `impl` computes the value with NumPy; `vjps[i]` is a
      maker `(ans, *args, **params) -> (ct -> cotangent of args[i])` called at forward time,
      so the closure keeps only the residuals it needs, and `jvps[i]` is
      `(t, ans, *args, **params) -> tangent of ans`. `None` marks an input with no derivative;
      a closure or rule may return `None` for a structural zero.
    - an `fprop(*args, **params) -> (ans, bprop)` where `bprop(ct)` returns one cotangent (or
      `None`) per argument, with an optional full `jvp(tangents, ans, *args, **params)`. Without
      a jvp, forward mode transposes the bprop.
    """

    __slots__ = ("name", "impl", "vjps", "jvps", "fprop", "jvp", "__weakref__")

    def __init__(self, name, impl, vjps=None, jvps=None, fprop=None, jvp=None):
        if (vjps is None) == (fprop is None):
            raise ValueError(f"primitive {name!r}: give exactly one of vjps (per input) or fprop")
        if vjps is not None and jvps is None:
            raise ValueError(f"primitive {name!r}: per-input vjps need per-input jvps too")
        self.name = name
        self.impl = impl
        self.vjps = vjps
        self.jvps = jvps
        self.fprop = fprop
        self.jvp = jvp

    def __call__(self, *args, **params):
        return bind(self, args, params)

    def __repr__(self):
        return f"<fgrad primitive {self.name}>"


class NondiffPrimitive:
    """An operation with no derivative (comparisons, floor, argmax, ...): it sees plain values,
    and its result is a constant at every level."""

    __slots__ = ("name", "impl")

    def __init__(self, name, impl):
        self.name = name
        self.impl = impl

    def __call__(self, *args, **params):
        return self.impl(*[primal(a) for a in args], **params)

    def __repr__(self):
        return f"<fgrad non-differentiable primitive {self.name}>"


# When set (by `fgrad.debug_nans`, to stop at the first nan or inf), an object told of every
# value computed: `watch.value(prim, args, ans)` for each primitive applied at the bottom of the
# levels, `watch.cotangent(ct, cts)` for the cotangents a bprop returns and
# `watch.tangent(prim, args, t)` for each tangent a forward level computes. Bprops and jvp rules
# applied to plain values compute with NumPy directly, so the last two are the only way to see
# their results.
watch = None


def bind(prim, args, params):
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
        ans = prim.impl(*args, **params)
        if watch is not None:
            watch.value(prim, args, ans)
        return ans
    return level.process(prim, args, params)


_NO_PARAMS = {}  # shared and never written: for primitives applied without parameters


def bind_one(prim, x):
    """`bind` for a primitive of one argument without parameters: the most frequent call (the
    unary functions, in programs and in bprops), so it skips bind's scan of the arguments."""
    kind = type(x)
    if kind is Box:
        level = x.level
        if level.live:  # a box's level is the innermost of the levels it nests
            return level.process(prim, (x,), _NO_PARAMS)
    elif kind is not list and kind is not tuple and watch is None:
        return prim.impl(x)
    return bind(prim, (x,), _NO_PARAMS)


def bind_two(prim, x, y):
    """`bind` for a primitive of two arguments without parameters (the arithmetic operators,
    the sum of two cotangents): the common cases skip bind's scan of the arguments."""
    kx, ky = type(x), type(y)
    if kx is Box:
        lx = x.level
        if ky is Box:
            ly = y.level
            if lx.live and ly.live:
                return (lx if lx.depth >= ly.depth else ly).process(prim, (x, y), _NO_PARAMS)
        elif lx.live and ky is not list and ky is not tuple:
            return lx.process(prim, (x, y), _NO_PARAMS)
    elif ky is Box and kx is not list and kx is not tuple:
        ly = y.level
        if ly.live:
            return ly.process(prim, (x, y), _NO_PARAMS)
    return bind(prim, (x, y), _NO_PARAMS)


def _packed(a):
    if (type(a) is list or type(a) is tuple) and holds_box(a):
        return array_from_sequence(a)
    return a


# --- the backward pass --------------------------------------------------------------------


def backward_pass(level, seeds, consume=False):
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
        _accumulate(cts, pos, ct)
    if consume:
        level.tape = None  # emptied below, entry by entry
    else:
        tape = list(tape)  # the level keeps its tape for another pass; this one empties a copy
    pop = tape.pop
    for k in range(len(tape) - 1, -1, -1):
        parents, bprop = pop()  # entry k, dropped as it is read (with its residuals)
        ct = cts[k]
        if ct is None or bprop is None:
            continue  # no cotangent reached it, or an input: its cotangent is the answer
        cts[k] = None  # used once: freed as the pass moves on
        if type(bprop) is tuple:
            for parent, f in zip(parents, bprop):
                c = f(ct)
                if watch is not None:
                    watch.cotangent(ct, (c,))
                # Most values are used once: their first cotangent is stored as it is, and
                # only a second one pays for the call that sums them.
                if c is not None:
                    if cts[parent] is None:
                        cts[parent] = c
                    else:
                        _accumulate(cts, parent, c)
        else:
            in_cts = bprop(ct)
            if watch is not None:
                watch.cotangent(ct, in_cts)
            for parent, c in zip(parents, in_cts):
                if parent is not None and c is not None:
                    _accumulate(cts, parent, c)
    return cts


def _accumulate(cts, pos, ct):
    old = cts[pos]
    if old is None:
        cts[pos] = ct
    elif type(old) is Box or type(ct) is Box or watch is not None:
        cts[pos] = bind_two(add_any, old, ct)
    else:  # two plain arrays (a first derivative): NumPy's sum, without bind's scan
        cts[pos] = add_any.impl(old, ct)


# The sum of two cotangents (or tangents) of the same value. It lives in the core because
# the backward pass needs it; it is a primitive so that accumulation is differentiated too.
def _identity_bprop(ans, x, y):
    return _identity


def _identity(ct):
    return ct


def _pass_tangent(t, ans, x, y):
    return t


add_any = Primitive(
    "add_any",
    _np.add,
    vjps=(_identity_bprop, _identity_bprop),
    jvps=(_pass_tangent, _pass_tangent),
)
