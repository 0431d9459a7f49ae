"""`make_graph`: a look inside a computation, derivatives included.

`make_graph(f)(*args)` runs `f` once and records every primitive it applies as an equation of a
small graph: the primitive, its inputs and output (shape and dtype), and the line of your code
that applied it. Run on a derivative, `make_graph(grad(f))(x)`, the same record shows what the
K transform built: the forward equations, then the backward pass, equation by equation, grouped
by the bprop closure that applied them, with the forward values each closure keeps (its
residuals) and the sums of the cotangents of values used more than once.

How it records. The graph is one more level (see `fgrad.core`): the arguments are boxed on a
`GraphLevel`, which is the outermost level, so every primitive application of every transform
inside it ends up at this level, with plain values underneath, exactly once. The level learns
*why* a primitive was applied (your forward code, a bprop of the backward pass, a jvp rule)
from the core's watch (`fgrad.provenance`): the phases of the levels applying it, and the tape
position each reverse level recorded it at.

Imports: `fgrad.core`, `fgrad.provenance` and `fgrad.tree_util`.
"""

from __future__ import annotations

import html
import types
from typing import TYPE_CHECKING

import numpy as _np

from . import provenance
from .boundary import api_boundary
from .core import Box, Level, bind, primal
from .tree_util import keystr, leaf_paths, tree_flatten

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .tree_util import ArrayLike

__all__ = ["Equation", "Graph", "Var", "make_graph"]


class Var:
    """A value in the graph: an input of the function or the output of an equation."""

    __slots__ = ("dtype", "name", "producer", "shape")

    def __init__(self, name: str, value: ArrayLike, producer: Equation | None = None) -> None:
        self.name = name
        self.shape = _np.shape(value)
        self.dtype = _np.result_type(value)
        self.producer = producer  # the Equation that computed it; None for an input

    @property
    def type(self) -> str:
        """Short type as in a jaxpr: `f64[3,2]`."""
        return f"{_short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        return f"{self.name}:{self.type}"


class Const:
    """A value an equation uses that is not traced: a literal, or an array your code holds,
    named when your code holds it in a variable: `w:f64[3](free)` for a free variable of a
    closure, `(local)` or `(global)` otherwise, `const:f64[3]` when it has no name."""

    __slots__ = ("name", "value")

    def __init__(self, value: ArrayLike, name: str | None = None) -> None:
        self.value = value
        self.name = name

    def __repr__(self) -> str:
        v = primal(self.value)
        if _np.ndim(v) == 0 and not isinstance(v, (list, tuple)):
            return repr(v.item() if hasattr(v, "item") else v)
        a = _np.asarray(v)
        return f"{self.name or 'const'}:{_short_dtype(a.dtype)}[{','.join(map(str, a.shape))}]"


class Equation(provenance.Equation):
    """One primitive application (`fgrad.provenance.Equation`), whose inputs are `Var`s or
    `Const`s and whose outputs are `Var`s.

    `role` says why it ran: "forward" (your function), "backward" (a bprop, in the backward
    pass of the reverse level `level`), "tangent" (a forward-mode rule of `level`) or
    "residual" (computed at forward time by a reverse rule, for its bprop). For the last
    three, `rule_of` is the equation whose rule applied it; where that rule belongs to a
    primitive with no equation of its own (a `custom_vjp` under `grad` runs your fwd instead of
    the primitive), `rule_call` names the primitive instead. `sums_cotangent_of` is set on the
    additions that sum two cotangents of one value (a value used more than once).
    """

    rule_call: _RuleCall | None = None

    def text(self) -> str:
        """`c:f64[3] = mul a b` with its parameters."""
        args = " ".join(repr(x) if isinstance(x, Const) else x.name for x in self.inputs)
        params = " ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        rhs = " ".join(p for p in (self.primitive, args, params) if p)
        return f"{', '.join(map(repr, self.outputs))} = {rhs}"

    def __repr__(self) -> str:
        return f"<Equation {self.text()}>"


class _Block:
    """The equations one bprop applied in a backward pass: the bprop of equation `of`, keeping
    the forward values `keeps`."""

    __slots__ = ("equations", "keeps", "level", "of", "phase")

    def __init__(self, of, level, keeps, phase):
        self.of = of
        self.level = level
        self.keeps = keeps
        self.phase = phase
        self.equations = []


class _RuleCall:
    """A primitive that a reverse level applied by running its rule alone, which computes the
    value too (`Primitive.fprop`: a `custom_vjp`'s fwd, a `custom_jvp`'s rule, a
    `fgrad.primitive`'s function): no level under the graph applies the primitive itself, so
    it has no equation. The equations its rule applies, and its bprop, are named after it."""

    __slots__ = ("prim", "source")

    def __init__(self, prim):
        self.prim = prim
        self.source = None  # the line of yours that applied it, once the level recorded it

    @property
    def primitive(self):
        return self.prim.name

    def describe(self):
        """`custom_vjp_call (f, file.py line 12)`."""
        return f"{self.primitive} ({self.source.place() if self.source else 'in a bprop'})"


def _computes_own_value(rule, prim):
    """Whether `prim` is being applied by its own reverse rule to compute its value, as
    `stack`'s rule does, and that rule has applied nothing before it."""
    return rule is not None and rule.kind == "residual" and rule.note is None and rule.prim is prim


class Graph:
    """What `make_graph(f)(*args)` recorded. `len(graph)` is the number of primitive
    applications; `graph.counts()` splits it by role; `print(graph)` lists the equations;
    a notebook draws it (`_repr_svg_`)."""

    inputs: list[Var]
    equations: list[Equation]
    outputs: list[Var | Const]
    _blocks: list[_Block]
    # the key path of each input and output in its pytree ("['w']"; "" for a bare array)
    _input_paths: list[str]
    _output_paths: list[str]

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs = []
        self.equations = []
        self.outputs = []
        self._blocks = []
        self._input_paths = []
        self._output_paths = []

    def __len__(self) -> int:
        return len(self.equations)

    def counts(self) -> dict[str, int]:
        """Number of primitive applications by role: forward, residual, backward, tangent."""
        out: dict[str, int] = {}
        for e in self.equations:
            out[e.role] = out.get(e.role, 0) + 1
        return out

    def count(self, role: str | None = None, primitive: str | None = None) -> int:
        """How many equations have this role and/or apply this primitive."""
        return sum(
            1
            for e in self.equations
            if (role is None or e.role == role) and (primitive is None or e.primitive == primitive)
        )

    # --- text ------------------------------------------------------------------------------

    def __str__(self) -> str:
        lines = [
            f"make_graph({self.name}): {self._summary()}",
            "inputs: " + (_listed(map(repr, self.inputs), self._input_paths) or "none"),
        ]
        block_of = {id(e): b for b in self._blocks for e in b.equations}
        heading = None
        for e in self.equations:
            new_heading = self._heading(e, block_of.get(id(e)))
            if new_heading != heading:
                heading = new_heading
                lines.append(heading)
            note = self._note(e)
            lines.append(f"    {e.text():<44}  # {note}" if note else f"    {e.text()}")
        names = (repr(x) if isinstance(x, Const) else x.name for x in self.outputs)
        lines.append("outputs: " + (_listed(names, self._output_paths) or "none"))
        return "\n".join(lines)

    __repr__ = __str__

    def _summary(self):
        counts = self.counts()
        parts = ", ".join(f"{counts[r]} {r}" for r in _ROLES if r in counts)
        return f"{len(self)} primitive applications" + (f" ({parts})" if parts else "")

    def _heading(self, e, block):
        if e.role == "backward":
            head = f"  backward pass of reverse level {e.level}"
            if block is None or block.of is None:
                return head + ":"
            of = block.of
            keeps = (
                ", ".join(v.name if isinstance(v, Var) else repr(v) for v in block.keeps)
                or "nothing"
            )
            if isinstance(of, _RuleCall):
                # what your rule keeps may sit deeper than a closure's free variables (a
                # custom_jvp's bprop keeps a tape): "nothing" is not claimed for it
                kept = f", keeps {keeps}" if block.keeps else ""
                return f"{head}: bprop of {of.describe()}{kept}"
            origin = (
                of.source.place()
                if of.source
                else f"applied by the {of.role} pass of level {of.level}"
            )
            return f"{head}: bprop of {of.output.name} = {of.primitive} ({origin}), keeps {keeps}"
        if e.role == "tangent":
            return f"  tangents of forward level {e.level}:"
        return "  forward:"

    @staticmethod
    def _note(e):
        if e.sums_cotangent_of is not None:
            return f"sums two cotangents of {e.sums_cotangent_of}"
        if e.role == "residual" and e.rule_of is not None:
            return f"kept for the bprop of {e.rule_of.output.name}"
        if e.role == "residual" and e.rule_call is not None:
            where = f": {e.source}" if e.source else ""
            return _clip(f"in the rule of {e.rule_call.describe()}{where}", 80)
        if e.role == "tangent" and e.rule_of is not None:
            return f"tangent of {e.rule_of.output.name} = {e.rule_of.primitive}"
        if e.role == "forward":
            return _clip(str(e.source), 80) if e.source else ""
        return ""

    # --- picture ---------------------------------------------------------------------------

    def _repr_svg_(self):
        return _draw_svg(self)

    def to_svg(self) -> str:
        """The picture a notebook shows, as an SVG string (save it to a .svg file to view)."""
        return _draw_svg(self)


_ROLES = ("forward", "residual", "backward", "tangent")


def _listed(names, paths):
    """`a:f64[] ['b'], c:f64[2] ['w']`: each value with its key path, where it has one."""
    return ", ".join(f"{n} {p}" if p else n for n, p in zip(names, paths))


def make_graph(
    fun: Callable[..., Any], static_argnums: int | Sequence[int] = ()
) -> Callable[..., Graph]:
    """Return a function that runs `fun` once and returns the `Graph` of what it applied.

    Parameters
    ----------
    fun : callable
        Any function of arrays, or a transformed one: `make_graph(grad(f))(x)` shows the
        backward pass the K transform built, `make_graph(grad(grad(f)))(x)` why higher order
        costs more.
    static_argnums : int or tuple of int, default ()
        Positional arguments that are constants of the graph rather than inputs (a negative
        position counts from the end, as `jit`'s).

    Returns
    -------
    callable
        A function of `fun`'s arguments returning a `Graph`: it prints like a jaxpr (each
        primitive application with shapes, dtypes and your source line), draws itself as SVG in
        a notebook (`to_svg()`), `len(graph)` counts primitive applications and `counts()` gives
        them by role (forward, backward, ...).

    Notes
    -----
    Every float (or complex) leaf of the positional arguments is an input of the graph; other
    arguments (ints, strings, the positions in `static_argnums`) are constants.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sin(x) * x
    >>> g = fgrad.make_graph(fgrad.grad(f))(1.0)
    >>> g.counts()
    {'forward': 2, 'backward': 5}
    >>> print(g)  # doctest: +ELLIPSIS
    make_graph(grad(<lambda>)): 7 primitive applications (2 forward, 5 backward)
    inputs: a:f64[]
      forward:
        b:f64[] = sin a ...
        c:f64[] = multiply b a ...
      backward pass of reverse level 1: bprop of c = multiply (...), keeps a, b
        d:f64[] = multiply 1.0 a
        e:f64[] = multiply b 1.0
      backward pass of reverse level 1: bprop of b = sin (...), keeps a
        f:f64[] = cos a
        g:f64[] = multiply d f
        h:f64[] = add_any e g                         # sums two cotangents of the input a
    outputs: h
    """
    if not callable(fun):
        raise TypeError(
            f"make_graph expects a function, got {fun!r} of type "
            f"{type(fun).__name__}; pass the function itself, e.g. make_graph(f)"
        )
    positions = _positions(static_argnums)
    name = _name_of(fun)

    def graphed(*args, **kwargs):
        static = _static_places(positions, len(args))
        graph = Graph(name)
        with GraphLevel(graph) as level, provenance.watching(_GraphWatcher(level)):
            boxed = []
            for i, arg in enumerate(args):
                if i in static:
                    boxed.append(arg)
                    continue
                leaves, tree = tree_flatten(arg)
                # a leaf of a container is named by its key path (and its argument, if several)
                arg_key = f"args[{i}]" if len(args) > 1 else ""
                paths = [arg_key + keystr(p) if p else "" for p in leaf_paths(tree)]
                boxed.append(tree.unflatten(list(map(level.new_input, leaves, paths))))
            out = fun(*boxed, **kwargs)
            leaves, tree = tree_flatten(out)
            graph.outputs = [
                x.aux if type(x) is Box and x.level is level else Const(x) for x in leaves
            ]
            graph._output_paths = [keystr(p) for p in leaf_paths(tree)]
        return graph

    graphed.__name__ = f"make_graph({name})"
    return api_boundary(graphed)


def _name_of(fun) -> str:
    """How a graph's title names `fun`: `grad(f)` for a transform of f (its `__name__`), and
    `jit(f)` for a jitted f, whose `__name__` is f's own (as JAX's is) and whose repr says
    `jit(f)`; without that, `make_graph(jit(f))` was titled as if f were not jitted."""
    name = getattr(fun, "__name__", None)
    if name is None:
        return type(fun).__name__
    if not isinstance(fun, types.FunctionType):
        shown = repr(fun)
        if shown.endswith(f"({name})"):  # a wrapper saying which transform it is
            return shown
    return name


def _positions(static_argnums) -> tuple[int, ...]:
    """make_graph's `static_argnums`, one position or a sequence of them, as `jit` reads them
    (ints or NumPy ints)."""
    nums = static_argnums if isinstance(static_argnums, (tuple, list)) else (static_argnums,)
    for i in nums:
        if not isinstance(i, (int, _np.integer)) or isinstance(i, bool):
            raise TypeError(
                f"make_graph: static_argnums takes an int or a tuple of ints (argument "
                f"positions), got {static_argnums!r}; pass e.g. static_argnums=1 or (0, 2)"
            )
    return tuple(int(i) for i in nums)


def _static_places(positions, n_args) -> set[int]:
    """The static positions of a call of `n_args` positional arguments, a negative one
    counted from the end (as `jit` counts it); one past the call is refused rather than
    left out (the argument it meant would silently be an input of the graph)."""
    for i in positions:
        if not -n_args <= i < n_args:
            raise ValueError(
                f"make_graph: static_argnums names argument {i}, but the call passes {n_args} "
                f"positional argument(s) (valid: {-n_args} to {n_args - 1}); pass the static "
                "argument positionally, or fix static_argnums"
            )
    return {i % n_args for i in positions}


class GraphLevel(Level):
    """The outermost level while a graph is made: records each primitive application."""

    __slots__ = ("_const_names", "_forward_of", "_input_var", "_keeps", "_kept", "_names", "graph")

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self._names = _var_names()
        # (reverse level, tape position) -> (the equation that level recorded there, which of
        # its outputs), so that the equations of a backward pass can name the bprop they belong
        # to; (reverse level, position of an input) -> the graph value it carries, to name the
        # input whose cotangents are summed; (reverse level, position) -> what its bprop keeps.
        self._forward_of = {}
        self._input_var = {}
        self._keeps = {}
        # id of a constant array -> the name your code gave it where first seen, so a bprop
        # (which runs far from that code) shows the same name; `_kept` keeps those arrays
        # alive while recording, so their ids are not reused.
        self._const_names = {}
        self._kept = []

    def new_input(self, value, path=""):
        v = primal(value)
        if not (
            isinstance(v, (float, complex, _np.ndarray, _np.generic))
            and _np.issubdtype(_np.result_type(v), _np.inexact)
        ):
            return value  # not a float: a constant of the graph
        var = Var(next(self._names), v)
        self.graph.inputs.append(var)
        self.graph._input_paths.append(path)
        if type(value) in (float, complex):
            # a NumPy scalar, as the transforms make a Python number (1.0 / x at 0 is inf in
            # their rules), here rather than by an operation of the graph inside them
            value = _np.float64(value) if type(value) is float else _np.complex128(value)
        return Box(value, self, var)

    def process(self, prim, args, params):
        vals = [a.value if type(a) is Box and a.level is self else a for a in args]
        ans = bind(prim, vals, params)
        chain, rule = provenance.context(prim)
        if _computes_own_value(rule, prim):
            # a reverse rule computing its primitive's value by applying it (stack's): this is
            # the application itself, as make_graph shows it without the reverse level
            chain, rule = [*chain, rule], None
        user = provenance.user_frame()
        role = provenance.role_of(rule)
        inputs = [
            a.aux if type(a) is Box and a.level is self else self._const(a, user) for a in args
        ]
        eqn = Equation(prim, inputs, params)
        eqn.role, eqn.index = role, len(self.graph.equations)
        eqn.source = provenance.Source(user) if user is not None and role != "backward" else None
        if rule is not None and rule.kind != "apply":
            eqn.level = rule.level.depth - self.depth
            self._link(eqn, rule)
        results = ans if prim.multiple_results else (ans,)
        eqn.outputs = [Var(next(self._names), primal(a), eqn) for a in results]
        self.graph.equations.append(eqn)
        for phase in chain:
            phase.note = eqn
        boxes = [Box(a, self, var) for a, var in zip(results, eqn.outputs)]
        return tuple(boxes) if prim.multiple_results else boxes[0]

    def _link(self, eqn, rule):
        """Which equation's rule applied `eqn`, and the bprop block it belongs to."""
        if rule.kind == "residual" and rule.note is None:
            # the rule of a primitive that computes its value by running your code (a
            # custom_vjp's fwd): the primitive has no equation to name, so the rule is named
            rule.note = _RuleCall(rule.prim)
        if rule.kind in ("residual", "tangent"):
            if isinstance(rule.note, _RuleCall):
                eqn.rule_call = rule.note
            else:
                eqn.rule_of = rule.note
            return
        backward = rule if rule.kind == "backward" else provenance.enclosing_backward(rule)
        if rule.kind == "sum":
            eqn.sums_cotangent_of = self._value_at(rule.level, rule.position)
        if backward is None:
            return
        key = (backward.level, backward.position)
        of = self._forward_of.get(key, (None,))[0]
        if isinstance(of, _RuleCall):
            eqn.rule_call = of
        else:
            eqn.rule_of = of
        blocks = self.graph._blocks
        if not blocks or blocks[-1].phase is not backward:
            blocks.append(_Block(of, eqn.level, self._keeps.get(key, []), backward))
        blocks[-1].equations.append(eqn)

    def _value_at(self, level, position):
        """The name of the value at a tape position of `level` (an input of that level, an
        equation's output, or an output of a rule call)."""
        if (level, position) in self._input_var:
            var = self._input_var[level, position]
            return f"the input {var.name}" if var is not None else "an input"
        found = self._forward_of.get((level, position)) or self._rule_output(level, position)
        eqn, k = found
        if isinstance(eqn, _RuleCall):
            return f"output {k} of {eqn.describe()}"
        if eqn is None:
            return "a value"  # of an application this graph did not see
        return eqn.outputs[k].name if k is not None else eqn.output.name

    def _rule_output(self, level, position):
        """(the rule call, k) if `position` holds output k of a rule call, else (None, None).
        The entries of a rule call's outputs follow its own, and nobody tells of them."""
        if level.depth <= self.depth:
            return None, None  # a level outside the graph: what it recorded before is unknown
        for k, before in enumerate(range(position - 1, -1, -1)):
            if (level, before) in self._input_var:
                break
            found = self._forward_of.get((level, before))
            if found is not None:
                return (found[0], k) if isinstance(found[0], _RuleCall) else (None, None)
        return None, None

    def recorded(self, level, position, phase):
        """A reverse level recorded an application at `position` (its outputs after it)."""
        eqn = phase.note
        if eqn is None and phase.prim is not None and phase.prim.fprop is not None:
            eqn = phase.note = _RuleCall(phase.prim)  # a rule that applied nothing here
        if isinstance(eqn, _RuleCall):
            # the line of yours that applied it, unless a bprop did (as for an equation)
            _, rule = provenance.context(phase.prim)
            if provenance.role_of(rule) != "backward":
                eqn.source = provenance.source_here()
            self._forward_of[level, position] = (eqn, None)
            self._keeps[level, position] = _residuals(level.tape[position][1], self)
            return
        if (
            eqn is None
            or eqn.index is None
            or eqn.index >= len(self.graph.equations)
            or self.graph.equations[eqn.index] is not eqn
        ):
            self._forward_of[level, position] = (None, None)  # not an application this graph saw
            return
        self._forward_of[level, position] = (eqn, None)
        if phase.prim.multiple_results:
            for k in range(len(eqn.outputs)):
                self._forward_of[level, position + 1 + k] = (eqn, k)
        self._keeps[level, position] = _residuals(level.tape[position][1], self)

    def note_input(self, level, position, x):
        while type(x) is Box and x.level is not self:  # (grad(grad(f))'s inner input is a box
            x = x.value  # of the outer level, holding the graph's input)
        self._input_var[level, position] = x.aux if type(x) is Box else None

    def __exit__(self, *exc):
        # drop what was kept while recording: it holds the levels and the traced values
        for table in (
            self._forward_of,
            self._input_var,
            self._keeps,
            self._const_names,
            self._kept,
        ):
            table.clear()
        return super().__exit__(*exc)

    def _const(self, value, user):
        name = self._const_names.get(id(value))
        if name is None:
            name = _name_in(user, value)
            if name is not None:
                self._const_names[id(value)] = name
                self._kept.append(value)
        return Const(value, name)


class _GraphWatcher(provenance.Watcher):
    """Tells a graph level what the reverse levels record (the core's watch)."""

    def __init__(self, graph_level):
        self.graph_level = graph_level

    def recorded(self, level, position, phase):
        self.graph_level.recorded(level, position, phase)

    def input(self, level, position, x):
        self.graph_level.note_input(level, position, x)


def _residuals(bprop, graph_level):
    """The graph values a tape entry's bprop closures keep alive (their free variables)."""
    found, seen = [], set()

    def visit(obj, depth):
        if id(obj) in seen or depth > 3:
            return
        seen.add(id(obj))
        while type(obj) is Box and obj.level is not graph_level:
            obj = obj.value
        if type(obj) is Box:
            if obj.aux not in found:
                found.append(obj.aux)
        elif isinstance(obj, _np.ndarray) and obj.size > 1:
            # an array the bprop keeps that is not a traced value
            found.append(Const(obj, graph_level._const_names.get(id(obj))))
        elif callable(obj) and getattr(obj, "__closure__", None):
            for cell in obj.__closure__:
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:  # an empty cell
                    pass
        elif isinstance(obj, (tuple, list)):
            for item in obj:
                visit(item, depth + 1)

    visit(bprop, 0)
    return found


def _name_in(frame, value):
    """The name your code gives `value`, if it holds it in a variable (by identity)."""
    if frame is None or not isinstance(value, _np.ndarray):
        return None
    code = frame.f_code
    scope = frame.f_locals
    if scope is not frame.f_globals:  # inside a function
        for name, v in scope.items():
            if v is value:
                return f"{name}({'free' if name in code.co_freevars else 'local'})"
    for name, v in frame.f_globals.items():
        if v is value:
            return f"{name}(global)"
    return None


def _var_names():
    """a, b, ..., z, ba, bb, ... as in a jaxpr."""
    n = 0
    while True:
        digits, k = [], n
        while True:
            digits.append("abcdefghijklmnopqrstuvwxyz"[k % 26])
            k //= 26
            if k == 0:
                break
        yield "".join(reversed(digits))
        n += 1


def _short_dtype(dt):
    dt = _np.dtype(dt)
    return {"f": "f", "c": "c", "i": "i", "u": "u", "b": "bool"}.get(dt.kind, dt.kind) + (
        str(dt.itemsize * 8) if dt.kind != "b" else ""
    )


def _short(v):
    if isinstance(v, _np.ndarray):
        return f"array{list(v.shape)}"
    text = repr(v)
    return text if len(text) <= 24 else text[:21] + "..."


# --- the picture ----------------------------------------------------------------------------------

_COLOURS = {
    "input": "#e8e8e8",
    "forward": "#cfe2ff",
    "residual": "#e2d9f3",
    "backward": "#ffd8b5",
    "tangent": "#d1f0d5",
    "sum": "#f9c6d0",
}
_CONSTANT = "#ffffff"  # an output no equation computed
_MAX_DRAWN = 400
_W, _H, _GAP_X, _GAP_Y = 150, 38, 18, 46
_WAYPOINT = 6  # the width a long edge takes in a row it crosses
_SWATCH_W = 95  # a legend entry: a colour and its name
_DASHED_W = 175  # the legend entry of a dashed edge: a dashed arrow and what it means
_LEGEND_H = 28


def _layers(graph):
    """The row of each value: inputs on top, an equation below its inputs, and each backward
    pass below everything recorded before it (so a picture reads forward, then backward)."""
    layer = {id(v): 0 for v in graph.inputs}
    floor, floors, deepest = 0, {}, 0
    for e in graph.equations:
        if e.role == "backward" and e.level not in floors:
            floors[e.level] = deepest + 1
        floor = floors.get(e.level, 0) if e.role == "backward" else 0
        depth = 1 + max([layer[id(x)] for x in e.inputs if isinstance(x, Var)] or [0])
        row = max(depth, floor)
        for v in e.outputs:  # an equation is one box, whatever its number of outputs
            layer[id(v)] = row
        deepest = max(deepest, row)
    return layer


def _note_svg(text):
    """A one-line picture, for a graph there is nothing to draw of or too much."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="560" height="40">'
        f'<text x="8" y="24" font-family="sans-serif" font-size="14">'
        f"{html.escape(text)}</text></svg>"
    )


def _draw_svg(graph):
    """A layered drawing (inputs at the top, constant outputs at the bottom). An edge that
    skips rows passes through a narrow waypoint in each row it crosses, so it goes around the
    boxes there, not behind them."""
    if len(graph) > _MAX_DRAWN:
        return _note_svg(f"{graph._summary()}: too many to draw; print() it instead")
    layer = _layers(graph)
    constants = [c for c in graph.outputs if isinstance(c, Const)]
    if not layer and not constants:
        return _note_svg(f"{graph._summary()}, no inputs, no outputs: nothing to draw")
    bottom = max(layer.values(), default=-1) + 1
    for c in constants:  # computed by no equation: a row of their own, below the rest
        layer[id(c)] = bottom
    boxes = list(graph.inputs) + [e.output for e in graph.equations] + constants
    # every output of an equation is drawn as its one box, under its first output's key
    box_of = {id(v): id(e.output) for e in graph.equations for v in e.outputs}
    rows = {}  # row -> slots: a box (a Var or a Const) or a waypoint (edge index, row)
    for b in boxes:
        rows.setdefault(layer[id(b)], []).append(b)
    edges = []  # (source Var, target Var, [waypoint keys])
    for e in graph.equations:
        for x in e.inputs:
            if isinstance(x, Var):
                lo, hi = layer[id(x)], layer[id(e.output)]
                keys = [(len(edges), r) for r in range(lo + 1, hi)]
                for key in keys:
                    rows.setdefault(key[1], []).append(key)
                edges.append((x, e.output, keys))
    dashed = [_reads_forward(src, dst) for src, dst, _ in edges]
    legend = _legend(bool(constants), any(dashed))
    pos, width, height = _place(rows, edges, box_of, legend[0])
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
        f'height="{height:.0f}" font-family="sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#666"/>'
        "</marker></defs>",
        *legend[1],
    ]
    for (src, dst, keys), dash in zip(edges, dashed):
        points = [pos[box_of.get(id(src), id(src))]] + [pos[k] for k in keys] + [pos[id(dst)]]
        out.append(_edge_svg(points, dash))
    # box -> the key paths of the outputs it is ("" for an output that is not in a container)
    outputs: dict[int, list[str]] = {}
    for v, path in zip(graph.outputs, graph._output_paths):
        outputs.setdefault(box_of.get(id(v), id(v)), []).append(path)
    inputs = dict(zip(map(id, graph.inputs), graph._input_paths))
    levels = {e.level for e in graph.equations if e.level is not None}
    for b in boxes:
        out_paths = outputs.get(id(b))
        output = None if out_paths is None else " ".join(p for p in out_paths if p)
        out.append(_box_svg(b, pos[id(b)], inputs.get(id(b), ""), output, len(levels) > 1))
    out.append("</svg>")
    return "\n".join(out)


def _reads_forward(src, dst):
    """Whether an edge is drawn dashed: a backward or tangent equation reading a value your
    function computed (a residual its rule keeps, or the primal a tangent rule reads)."""
    return (
        dst.producer.role in ("backward", "tangent")
        and src.producer is not None
        and src.producer.role == "forward"
    )


def _legend(constants, dashed):
    """(width, SVG elements) of the legend: the colours of the roles, and the constant box and
    the dashed edge when the picture has them."""
    out, x = [], _GAP_X
    entries = list(_COLOURS.items()) + ([("constant", _CONSTANT)] if constants else [])
    for role, colour in entries:
        out.append(
            f'<rect x="{x}" y="6" width="14" height="14" rx="3" fill="{colour}" '
            f'stroke="#888"/><text x="{x + 19}" y="17">{role}</text>'
        )
        x += _SWATCH_W
    if dashed:
        out.append(
            f'<path d="M{x},13 L{x + 26},13" stroke="#777" stroke-dasharray="4 3" '
            f'marker-end="url(#arrow)"/><text x="{x + 32}" y="17">reads a forward value</text>'
        )
        x += _DASHED_W
    return x, out


def _place(rows, edges, box_of, legend_width):
    """The centre of each slot, ordering each row by the mean x of what feeds it (so edges
    cross less), and the picture's width and height."""

    def width_of(slot):
        return _WAYPOINT if isinstance(slot, tuple) else _W

    def key_of(slot):
        return slot if isinstance(slot, tuple) else id(slot)

    row_width = {r: sum(width_of(s) + _GAP_X for s in slots) + _GAP_X for r, slots in rows.items()}
    width = max(max(row_width.values()), legend_width)
    height = (max(rows) + 1) * (_H + _GAP_Y) + _GAP_Y + _LEGEND_H
    parents = {}
    for src, dst, keys in edges:
        chain = [box_of.get(id(src), id(src))] + keys + [id(dst)]
        for a, b in zip(chain, chain[1:]):
            parents.setdefault(b, []).append(a)
    pos = {}
    for r in sorted(rows):
        slots = rows[r]

        def mean_x(slot):
            xs = [pos[k][0] for k in parents.get(key_of(slot), ()) if k in pos]
            return sum(xs) / len(xs) if xs else 0.0

        slots.sort(key=mean_x)
        x = (width - row_width[r]) / 2 + _GAP_X
        y = _LEGEND_H + _GAP_Y + r * (_H + _GAP_Y) + _H / 2
        for slot in slots:
            pos[key_of(slot)] = (x + width_of(slot) / 2, y)
            x += width_of(slot) + _GAP_X
    return pos, width, height


def _edge_svg(points, dashed):
    """An edge through its points: it leaves a box from its bottom and enters one at its top."""
    path = []
    for i, ((x1, y1), (x2, y2)) in enumerate(zip(points, points[1:])):
        y1 += _H / 2 if i == 0 else 0
        y2 -= _H / 2 if i == len(points) - 2 else 0
        mid = (y1 + y2) / 2
        path.append(
            ("M" if i == 0 else "L") + f"{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} "
            f"{x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
        )
    dash = ' stroke-dasharray="4 3"' if dashed else ""
    return f'<path d="{" ".join(path)}" fill="none" stroke="#777"{dash} marker-end="url(#arrow)"/>'


def _box_svg(value, centre, input_path, output, show_level):
    """The box of an input, of an equation (`value` its first output) or of a constant output:
    its label, its type, and a tooltip with the whole equation and your line. `output` is None
    for a box that is not an output, else its key paths in the outputs ("" if none)."""
    x, y = centre
    marks = []  # after the type: the level, and whether (and where) it is an output
    if isinstance(value, Const):
        colour, label = _CONSTANT, repr(value)
        subtitle, title = "constant", f"{value!r}: an output no equation computes"
    elif value.producer is None:
        colour, label = _COLOURS["input"], f"{value.name}: input {input_path}".rstrip()
        subtitle, title = value.type, f"input {input_path}".rstrip()
    else:
        e = value.producer
        colour = _COLOURS["sum" if e.sums_cotangent_of is not None else e.role]
        consts = [repr(c) for c in e.inputs if isinstance(c, Const)]
        names = ", ".join(v.name for v in e.outputs)
        label = f"{names} = {e.primitive}" + (f" ({', '.join(consts)})" if consts else "")
        subtitle = ", ".join(v.type for v in e.outputs)
        if show_level and e.level is not None:
            marks.append(f"level {e.level}")
        title = e.text() + (f"\n{e.source}" if e.source else "")
        if e.rule_of is not None:
            title += f"\nrule of {e.rule_of.output.name} = {e.rule_of.primitive}"
        elif e.rule_call is not None:
            title += f"\nrule of {e.rule_call.describe()}"
    if output is not None:
        marks.append(f"output {output}".rstrip())
    if marks:  # the types are clipped first, so that the marks stay in sight
        tail = "".join(f" · {m}" for m in marks)
        subtitle = _clip(subtitle, max(26 - len(tail), 8)) + tail
    return (
        f"<g><title>{html.escape(title)}</title>"
        f'<rect x="{x - _W / 2:.1f}" y="{y - _H / 2:.1f}" width="{_W}" '
        f'height="{_H}" rx="6" fill="{colour}" stroke="#555" '
        f'stroke-width="{1 if output is None else 3}"/>'
        f'<text x="{x:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
        f'font-weight="bold">{html.escape(_clip(label, 21))}</text>'
        f'<text x="{x:.1f}" y="{y + 11:.1f}" text-anchor="middle" fill="#333">'
        f"{html.escape(_clip(subtitle, 26))}</text></g>"
    )


def _clip(text, n):
    return text if len(text) <= n else text[: n - 1] + "…"
