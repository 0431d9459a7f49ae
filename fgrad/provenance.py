"""Where a primitive application came from, read off the Python stack.

`make_graph` and `debug_nans` both need to say *why* a primitive ran — your forward code, a
bprop in a backward pass, a forward-mode rule — and which line of your code is behind it. The
core keeps no record of this (it would cost every program); the stack has it while the
primitive runs: the core functions on it (`bind`, a level's `process`, `backward_pass`) and
their local variables (`prim`, `level`, `k`, `bprop`, `ct`) say what is being done.

Imports: `fgrad.core` (for the code objects of its functions) and the standard library.
"""

import linecache
import os

from . import core

__all__ = ["Source", "application_chain", "user_frame", "source_of", "enclosing_rule"]

_FGRAD_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# The core functions a primitive application passes through on its way down the levels.
_BINDS = frozenset({core.bind.__code__, core.bind_one.__code__, core.bind_two.__code__})
REVERSE_PROCESS = frozenset({core.ReverseLevel.process.__code__,
                             core.ReverseLevel._process_fprop.__code__})
FORWARD_PROCESS = core.ForwardLevel.process.__code__
LEVEL_PROCESS = REVERSE_PROCESS | {FORWARD_PROCESS}
BACKWARD_PASS = core.backward_pass.__code__
ACCUMULATE = core._accumulate.__code__
TRANSPOSE = core._jvp_by_transposing.__code__


class Source:
    """A line of your code: file, line number, function and the line's text."""

    __slots__ = ("filename", "lineno", "function", "text")

    def __init__(self, frame):
        code = frame.f_code
        self.filename = code.co_filename
        self.lineno = frame.f_lineno
        self.function = code.co_name
        self.text = linecache.getline(self.filename, self.lineno).strip()

    def place(self):
        """`function, file.py line 12` (a notebook's cells are `a notebook cell`)."""
        # IPython names a cell's code after a file in a temporary ipykernel folder
        name = "a notebook cell" if "ipykernel" in self.filename else \
            os.path.basename(self.filename)
        where = f"{name} line {self.lineno}"
        return where if self.function == "<module>" else f"{self.function}, {where}"

    def __str__(self):
        return f"{self.place()}: {self.text}" if self.text else self.place()


def application_chain(frame, prim):
    """Walk up from `frame` (inside `bind` or below it) past the chain bind <- level.process
    <- bind (or bind_one, bind_two) ... that carries one application of `prim` down the levels. Returns the level
    `process` frames of that chain and the first frame above it.

    A level's `process` belongs to the chain only while it processes `prim` itself, not while
    it applies one of its rules (which calls other primitives)."""
    chain = []
    f = frame
    while f is not None:
        code = f.f_code
        if code in _BINDS:
            pass
        elif code in LEVEL_PROCESS and f.f_locals["prim"] is prim:
            chain.append(f)
        else:
            break
        f = f.f_back
    return chain, f


def user_frame(frame):
    """The first frame at or above `frame` that is not fgrad's own code: your line."""
    f = frame
    while f is not None and f.f_code.co_filename.startswith(_FGRAD_DIR):
        f = f.f_back
    return f


def source_of(frame):
    f = user_frame(frame)
    return Source(f) if f is not None else None


def enclosing_rule(frame):
    """The innermost core frame at or above `frame` that applies a rule, and what kind:
    ("backward", a `backward_pass` frame) while a bprop runs (or its cotangents are summed),
    ("tangent", a `ForwardLevel.process` or transposition frame) while a forward-mode rule runs,
    ("residual", a `ReverseLevel.process` frame) while a reverse rule is built at forward time,
    or ("forward", None): your own code."""
    f = frame
    while f is not None:
        code = f.f_code
        if code is BACKWARD_PASS:
            return "backward", f
        if code is FORWARD_PROCESS or code is TRANSPOSE:
            return "tangent", f
        if code in REVERSE_PROCESS:
            return "residual", f
        f = f.f_back
    return "forward", None
