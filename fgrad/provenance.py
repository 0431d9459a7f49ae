"""Where a value came from, as data: the watcher the core tells of every value, the record of
an equation, and the line of your code behind an application.

`make_graph` and `debug_nans` both need to say *why* a primitive ran — your forward code, a
bprop in a backward pass, a forward-mode rule — and which line of your code is behind it.
While a watcher is installed (`watching`), the core keeps a stack of `core.Phase` records
saying what each level is doing, and tells the watcher of each value it computes; `context`
reads that stack. No hook costs anything while no watcher is installed.

`Equation` is the one record of a primitive application, shared by `make_graph` and anything
that replays a pass.

Imports: `fgrad.core` and the standard library.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import threading
from typing import TYPE_CHECKING

from . import core

if TYPE_CHECKING:
    import types
    from collections.abc import Iterator, Sequence
    from typing import Any

__all__ = [
    "Equation",
    "Source",
    "Watcher",
    "context",
    "role_of",
    "source_here",
    "user_frame",
    "watching",
]

_FGRAD_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


# --- the record of an application -----------------------------------------------------------------


class Equation:
    """One primitive application: `prim` applied to `inputs` with `params`, giving `outputs`
    (one per output of the primitive). What an input or output is depends on who records it
    (a graph's values, a replay's variables); the rest is what a watcher learned, set by the
    recorders that know it (None otherwise): `role` ("forward", "residual", "backward",
    "tangent"), the `level` whose rule applied it, the equation `rule_of` whose rule it was,
    the line of your code, `source`, and `sums_cotangent_of`."""

    __slots__ = ("__dict__", "inputs", "outputs", "params", "prim")

    # what only some recorders set (a replay needs none of it), read from here until set
    role = "forward"
    level = rule_of = source = index = sums_cotangent_of = None

    def __init__(
        self,
        prim: core.Primitive | core.NondiffPrimitive,
        inputs: Sequence[Any],
        params: dict[str, Any],
        outputs: Sequence[Any] = (),
    ) -> None:
        self.prim = prim
        self.inputs = inputs
        self.params = params
        self.outputs = outputs

    @property
    def primitive(self) -> str:
        """The primitive's name."""
        return self.prim.name

    @property
    def output(self) -> Any:
        """The first (for most primitives, the only) output."""
        return self.outputs[0]


# --- your line of code ----------------------------------------------------------------------------


class Source:
    """A line of your code: file, line number, function and the line's text."""

    __slots__ = ("filename", "function", "lineno", "text")

    def __init__(self, frame: types.FrameType) -> None:
        code = frame.f_code
        self.filename = code.co_filename
        self.lineno = frame.f_lineno
        self.function = code.co_name
        self.text = linecache.getline(self.filename, self.lineno).strip()

    def place(self) -> str:
        """`function, file.py line 12` (a notebook's cells are `a notebook cell`)."""
        # IPython names a cell's code after a file in a temporary ipykernel folder
        name = (
            "a notebook cell" if "ipykernel" in self.filename else os.path.basename(self.filename)
        )
        where = f"{name} line {self.lineno}"
        return where if self.function == "<module>" else f"{self.function}, {where}"

    def __str__(self) -> str:
        return f"{self.place()}: {self.text}" if self.text else self.place()


def user_frame() -> types.FrameType | None:
    """The innermost frame of your code (not fgrad's) on the current stack, or None."""
    f: types.FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_FGRAD_DIR):
        f = f.f_back
    return f


def source_here() -> Source | None:
    """The innermost line of your code (not fgrad's) on the current stack, or None."""
    f = user_frame()
    return Source(f) if f is not None else None


# --- what the levels are doing --------------------------------------------------------------------


def context(
    prim: core.Primitive | core.NondiffPrimitive,
) -> tuple[list[core.Phase], core.Phase | None]:
    """(chain, rule) for an application of `prim` being computed now: `chain` holds the phases
    of the levels applying it (innermost level first), `rule` the phase inside which it was
    applied: None for your own code, else a phase of kind "residual", "tangent", "backward" or
    "sum" (a rule of a level), or "apply" (a primitive computing its value, like checkpoint)."""
    phases = core.phases()
    i = len(phases)
    while i > 0 and phases[i - 1].kind == "apply" and phases[i - 1].prim is prim:
        i -= 1
    return phases[i:], (phases[i - 1] if i > 0 else None)


def enclosing_backward(rule: core.Phase) -> core.Phase | None:
    """The backward phase a "sum" phase sits in (the bprop whose cotangent is being summed),
    or None for a sum of seeds."""
    phases = core.phases()
    if rule in phases:
        for p in reversed(phases[: phases.index(rule)]):
            if p.kind == "backward" and p.level is rule.level:
                return p
    return None


def role_of(rule: core.Phase | None) -> str:
    """The role of an application inside `rule` (see `context`)."""
    if rule is None or rule.kind == "apply":
        return "forward"
    return "backward" if rule.kind == "sum" else rule.kind


# --- the watcher ----------------------------------------------------------------------------------


class Watcher:
    """What the core tells of the values it computes (see `fgrad.core.watch`); these do nothing."""

    def value(
        self,
        prim: core.Primitive | core.NondiffPrimitive,
        args: Sequence[Any],
        params: dict[str, Any],
        ans: Any,
    ) -> None:
        pass

    def input(self, level: core.Level, position: int, x: Any) -> None:
        pass

    def recorded(self, level: core.Level, position: int, phase: core.Phase) -> None:
        pass

    def cotangent(self, phase: core.Phase, ct: Any, cts: Any) -> None:
        pass

    def tangent(self, phase: core.Phase, args: Sequence[Any], t: Any) -> None:
        pass


class _Several(Watcher):
    """Several watchers at once (make_graph while debug_nans is on): each is told everything."""

    def __init__(self, watchers):
        self.watchers = tuple(watchers)


def _tell_each(name):
    def tell(self, *args):
        for w in self.watchers:
            getattr(w, name)(*args)

    return tell


for _name in ("value", "input", "recorded", "cotangent", "tangent"):
    setattr(_Several, _name, _tell_each(_name))


_lock = threading.Lock()
_installed: list[Watcher] = []  # the watchers the core's watch tells, in the order they were added


def _set_watch():
    n = len(_installed)
    core.watch = None if n == 0 else _installed[0] if n == 1 else _Several(_installed)


def add_watcher(watcher: Watcher) -> None:
    """Tell `watcher` of every value from now on, beside the watchers already added."""
    with _lock:
        _installed.append(watcher)
        _set_watch()


def remove_watcher(watcher: Watcher) -> None:
    """Stop telling `watcher` (added with `add_watcher`)."""
    with _lock:
        if watcher in _installed:
            _installed.remove(watcher)
        _set_watch()


@contextlib.contextmanager
def watching(watcher: Watcher) -> Iterator[Watcher]:
    """Within the block, `watcher` is told of every value (beside the other watchers)."""
    add_watcher(watcher)
    try:
        yield watcher
    finally:
        remove_watcher(watcher)
