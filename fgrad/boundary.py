"""The boundary between your code and fgrad's: errors show your code first.

Every function a user calls to transform or check a function (`grad(f)`, `vjp`, `jvp`,
`jacfwd(f)`, a `custom_vjp` function, `make_graph(f)`, `check_grads`, ...) is wrapped by
`api_boundary`. An exception that passes through it leaves with fgrad's own frames removed
from its traceback, as JAX's `api_boundary` does: what remains is your line that called the
transform, the lines of your function that fgrad ran, and the line that raised. A note on the
exception says so. Set the environment variable `FGRAD_TRACEBACK_FILTERING=off` to see every
frame.

The boundary also clears what a failed transform left of the core's watched phases, and, once
Dask is imported, turns Dask's fallback to NumPy for a function it does not implement (a
warning, then the whole array computed in memory) into an error (`fgrad.protocols`).

Imports: `fgrad.core`, `fgrad.protocols` and the standard library.
"""

from __future__ import annotations

import functools
import os
import sys
import types
from typing import TYPE_CHECKING

from . import core
from .protocols import dispatch_guard

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["api_boundary", "users_error"]

_FGRAD_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_NOTE = (
    "fgrad removed its own frames from this traceback; set the environment variable "
    "FGRAD_TRACEBACK_FILTERING=off to see them"
)


def _filtering():
    value = os.environ.get("FGRAD_TRACEBACK_FILTERING", "on").strip().lower()
    return value not in ("off", "0", "false", "no")


def _is_fgrads(tb):
    return tb.tb_frame.f_code.co_filename.startswith(_FGRAD_DIR)


def _without_fgrad_frames(tb):
    """The traceback `tb` without the entries of frames in fgrad's files."""
    kept = []
    while tb is not None:
        if not _is_fgrads(tb):
            kept.append(tb)
        tb = tb.tb_next
    filtered = None
    for entry in reversed(kept):
        filtered = types.TracebackType(filtered, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return filtered


def api_boundary(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun`, whose exceptions leave without fgrad's frames in their tracebacks."""

    @functools.wraps(fun)
    def boundary(*args, **kwargs):
        __tracebackhide__ = True  # pytest shows the boundary's own frame no more than this
        phases = len(core.phases())
        try:
            if "dask" in sys.modules:  # a NumPy-only program does not pay for the guard
                with dispatch_guard():
                    return fun(*args, **kwargs)
            return fun(*args, **kwargs)
        except Exception as e:
            del core.phases()[phases:]
            raise users_error(e)  # noqa: B904 (the same exception, re-raised)

    return boundary


def users_error(e: Exception) -> Exception:
    """The exception `e`, caught at a boundary, as it leaves it: without fgrad's frames in its
    traceback (with a note saying so), or fgrad's error that NumPy had replaced (for a
    boundary that is a method on a hot path, `fgrad.jit`'s call, which a wrapper would slow)."""
    e = _fgrads_error_first(e)
    tb = e.__traceback__
    if not _filtering() or tb is None:
        return e
    filtered = _without_fgrad_frames(tb)
    if _count(filtered) == _count(tb):
        return e
    notes = getattr(e, "__notes__", ())
    if _NOTE not in notes and hasattr(e, "add_note"):
        e.add_note(_NOTE)
    return e.with_traceback(filtered)


def _fgrads_error_first(e):
    """fgrad's TypeError in place of NumPy's ValueError that replaced it. NumPy stores
    `out[i] = v` in a float array by float(v) and, for a v with __getitem__ (a traced value
    has it), replaces any error of float(v) by "setting an array element with a sequence",
    keeping the error as its cause; fgrad's error says what the user wrote and what to do."""
    cause = e.__cause__
    if type(e) is not ValueError or not isinstance(cause, TypeError):
        return e
    if not str(e).startswith("setting an array element with a sequence"):
        return e  # the user's own ValueError, raised from fgrad's error: theirs to see
    last = cause.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    if last is None or not _is_fgrads(last):
        return e
    cause.__suppress_context__ = True  # NumPy's ValueError is not news
    return cause.with_traceback(e.__traceback__)


def _count(tb):
    n = 0
    while tb is not None:
        n += 1
        tb = tb.tb_next
    return n
