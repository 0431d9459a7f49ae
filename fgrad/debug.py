"""`debug_nans`: stop at the first nan or inf, and say where it came from.

With the check on, every value a primitive computes — a forward value, a cotangent in a
backward pass, a tangent in forward mode — is checked; the first that is not finite raises
`FloatingPointError` naming the primitive, which kind of value it was, the line of your code
that applied the primitive, and the first bad element with the inputs that gave it.

It recognises the masked-branch trap: `fnp.where(x > 0, fnp.sqrt(x), 0.0)` has a finite value
at `x = 0` but a nan gradient, because `where` sends a zero cotangent to the discarded branch
and `sqrt`'s bprop multiplies it by an infinite derivative (0 * inf = nan). The message says
so and gives the safe rewrite (a `where` on the input as well).

Functions that compute with inf on purpose stop too: a log-density outside its support
(-inf), `logsumexp` of -inf entries, `nanmax` and its kin on data with nan (they replace nan by
-inf or inf). Use `debug_nans(inf=False)` to stop only at nan, or leave such calls outside the
block.

The check costs a pass over every result (and a look at the stack for every primitive a
reverse level records, to remember the line that applied it), so it is for finding a bug, not
for production. It is process-wide, like NumPy's `errstate` is per thread and JAX's config global:
turn it on for a block with `with fgrad.debug_nans():`, or for everything with
`fgrad.set_debug_nans(True)` or the environment variable `FGRAD_DEBUG_NANS=1`.

Imports: `fgrad.core` and `fgrad.provenance` (the core's watch).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import TYPE_CHECKING

import numpy as _np

from . import core, provenance

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["debug_nans", "set_debug_nans"]

_lock = threading.Lock()
_settings = {"inf": True, "on": False}  # whether the check is on, and whether inf stops too

# reverse level -> {tape position: (primitive name, Source or the kind of rule that applied
# it)}: which primitive each tape entry applied and where, so a bprop that fails can be traced
# to your forward line
_origins: weakref.WeakKeyDictionary[core.Level, dict[int, tuple]] = weakref.WeakKeyDictionary()


def set_debug_nans(enabled: bool = True, *, inf: bool = True) -> tuple[bool, bool]:
    """Turn the nan and inf check on (or off) for the whole process.

    Parameters
    ----------
    enabled : bool, default True
        Check every value a primitive computes (forward values, cotangents, tangents).
    inf : bool, default True
        Stop at inf too; `inf=False` lets inf through and stops only at nan.

    Returns
    -------
    tuple of bool
        The previous setting, `(enabled, inf)`, to restore it later.

    Notes
    -----
    Process-wide and slow: it is for finding a bug. `debug_nans` turns it on for a block;
    `FGRAD_DEBUG_NANS=1` turns it on at import.

    Examples
    --------
    >>> import fgrad
    >>> enabled, inf = fgrad.set_debug_nans(True)
    >>> fgrad.set_debug_nans(enabled, inf=inf)  # back as it was; returns what it replaced
    (True, True)
    """
    with _lock:
        previous = (_settings["on"], _settings["inf"])
        _settings["inf"] = bool(inf)
        if bool(enabled) != _settings["on"]:
            _settings["on"] = bool(enabled)
            (provenance.add_watcher if enabled else provenance.remove_watcher)(_check)
    return previous


@contextlib.contextmanager
def debug_nans(enabled: bool = True, *, inf: bool = True) -> Iterator[None]:
    """A context manager: within the block, the first nan or inf computed raises, saying where.

    Parameters
    ----------
    enabled : bool, default True
        Check within the block (False turns a process-wide check off for the block).
    inf : bool, default True
        Stop at inf too; `inf=False` stops only at nan.

    Raises
    ------
    FloatingPointError
        At the first nan (or inf) any primitive computes — a forward value, a cotangent, a
        tangent — naming the primitive, the kind of value and your source line. It recognises
        the masked-branch trap (`where(x > 0, sqrt(x), 0)` at 0) and gives the safe rewrite.

    Examples
    --------
    >>> import fgrad, fgrad.numpy as fnp
    >>> f = lambda x: fnp.sum(fnp.where(x > 0, fnp.sqrt(x), 0.0))
    >>> with fgrad.debug_nans():
    ...     fgrad.grad(f)(fnp.array([0.0, 4.0]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FloatingPointError: debug_nans: the bprop of sqrt computed nan in a cotangent ...
    ...masked-branch trap...
    """
    previous = set_debug_nans(enabled, inf=inf)
    try:
        yield
    finally:
        set_debug_nans(previous[0], inf=previous[1])


# --- the check ------------------------------------------------------------------------------------


class _Watch(provenance.Watcher):
    """What the core tells of every value computed (see `fgrad.core.watch`)."""

    def value(self, prim, args, params, ans):
        if not _is_finite(ans):
            raise FloatingPointError(_explain(prim, args, ans))

    def recorded(self, level, position, phase):
        _, rule = provenance.context(phase.prim)
        role = provenance.role_of(rule)
        source = provenance.source_here() if role == "forward" else role
        _origins.setdefault(level, {})[position] = (phase.prim.name, source)

    def cotangent(self, phase, ct, cts):
        if not all(_is_finite(core.primal(c)) for c in cts if c is not None):
            raise FloatingPointError(_explain_bprop_result(phase, ct, cts))

    def tangent(self, phase, args, t):
        if t is not None and not _is_finite(core.primal(t)):
            raise FloatingPointError(_explain_tangent(phase.prim, args, core.primal(t)))


_check = _Watch()


def _bad_mask(v):
    v = _np.asarray(v)
    if not _np.issubdtype(v.dtype, _np.inexact):
        return None
    return _np.isnan(v) if not _settings["inf"] else ~_np.isfinite(v)


def _is_finite(ans):
    if type(ans) is tuple or type(ans) is list:
        return all(_is_finite(a) for a in ans)
    mask = _bad_mask(ans)
    return mask is None or not mask.any()


def _first_bad(ans):
    """(the array that is bad, its first bad index, the value there)."""
    parts = ans if type(ans) in (tuple, list) else (ans,)
    for part in parts:
        mask = _bad_mask(part)
        if mask is not None and mask.any():
            index = tuple(int(i) for i in _np.argwhere(mask)[0])
            return _np.asarray(part), index, _np.asarray(part)[index]
    return None, (), None


def _kind(value):
    return "nan" if _np.isnan(value) else ("inf" if value > 0 else "-inf")


def _inputs_at(args, shape, index):
    """The inputs' elements that produced the bad element (where they broadcast to it)."""
    shown = []
    for a in args:
        v = core.primal(a)
        try:
            shown.append(repr(_np.broadcast_to(v, shape)[index].item()))
        except (ValueError, TypeError, IndexError, AttributeError):
            shown.append(f"<{type(v).__name__} of shape {_np.shape(v)}>")
    return ", ".join(shown)


def _explain(prim, args, ans):
    part, index, value = _first_bad(ans)
    kind = _kind(value)
    at = f"index {index}" if index else "the value"
    inputs_finite = all(_is_finite(core.primal(a)) for a in args)
    element = f"{prim.name}({_inputs_at(args, part.shape, index)}) = {kind} at {at}"
    _, rule = provenance.context(prim)
    role = provenance.role_of(rule)
    if role == "backward":
        return _explain_cotangent(element, kind, part, index, rule, inputs_finite) + "\n" + _FIX
    source = provenance.source_here()
    if role == "tangent":
        head = (
            f"debug_nans: the forward-mode (jvp) rule of {rule.prim.name} computed {kind} "
            "in a tangent"
        )
    else:
        head = f"debug_nans: {prim.name} computed {kind} in the forward pass"
    lines = [f"{head}, at {source}" if source else head, f"  {element}"]
    if not inputs_finite:
        lines.append(
            "  Its inputs were not all finite already: the first non-finite value came "
            "from outside fgrad's operations (an input you passed, or NumPy code that "
            "is not traced)."
        )
    elif source is not None and "where(" in source.text:
        lines.append(_TRAP_FORWARD)
    else:
        lines.append(
            "  If this value is discarded later by where(...) or a mask, its gradient "
            "there will be nan all the same: " + _REWRITE
        )
    return "\n".join(lines + [_FIX])


def _explain_cotangent(element, kind, part, index, rule, inputs_finite):
    """A primitive applied inside a bprop (at higher order, where bprops are traced)."""
    backward = rule if rule.kind == "backward" else provenance.enclosing_backward(rule)
    name, source = _origin(backward)
    lines = [
        f"debug_nans: the bprop of {name} computed {kind} in a cotangent (in the backward pass)"
    ]
    lines += _applied_at(name, source)
    lines.append(f"  inside its bprop: {element}")
    if backward is not None and _masked(backward.ct, part, index):
        lines.append(_TRAP_BACKWARD.format(name=name))
    elif not inputs_finite:
        lines.append("  The cotangent or residual it was given was not finite already.")
    return "\n".join(lines)


def _explain_bprop_result(phase, ct, cts):
    """A bprop (computing with NumPy on plain values) returned a non-finite cotangent."""
    name, source = _origin(phase)
    i, c = next(
        (i, core.primal(c))
        for i, c in enumerate(cts)
        if c is not None and not _is_finite(core.primal(c))
    )
    part, index, value = _first_bad(c)
    at = f" at index {index}" if index else ""
    lines = [
        f"debug_nans: the bprop of {name} computed {_kind(value)} in a cotangent "
        f"(in the backward pass): the cotangent of its input {i}{at}"
    ]
    lines += _applied_at(name, source)
    if not _is_finite(core.primal(ct)):
        lines.append(
            "  The cotangent it was given was not finite already (a cotangent you "
            "passed to a vjp function?)."
        )
    elif _masked(ct, part, index):
        lines.append(_TRAP_BACKWARD.format(name=name))
    else:
        lines.append(f"  {name}'s derivative is not finite at the input it was applied to.")
    return "\n".join(lines + [_FIX])


def _explain_tangent(prim, args, t):
    part, index, value = _first_bad(t)
    at = f" at index {index}" if index else ""
    source = provenance.source_here()
    lines = [
        f"debug_nans: the forward-mode (jvp) rule of {prim.name} computed {_kind(value)} "
        f"in a tangent{at}" + (f", at {source}" if source else "")
    ]
    try:
        lines.append(f"  {prim.name}'s input there: {_inputs_at(args, part.shape, index)}")
    except Exception:  # pragma: no cover - describing the input is best effort
        pass
    if source is not None and "where(" in source.text:
        lines.append(
            "  This looks like the masked-branch trap: in forward mode where(...) "
            "discards this tangent, but in reverse mode the same program gives nan. "
            "The fix: " + _REWRITE
        )
    else:
        lines.append(
            f"  {prim.name}'s derivative is not finite there. If where(...) or a mask "
            "discards this value later, the fix is to " + _REWRITE
        )
    return "\n".join(lines + [_FIX])


def _origin(backward):
    """(name, Source or description) of the primitive whose bprop the backward phase applies."""
    if backward is None:
        return "a primitive", None
    found = _origins.get(backward.level, {}).get(backward.position)
    return found or ("a primitive", None)


def _applied_at(name, source):
    if isinstance(source, provenance.Source):
        return [f"  {name} was applied at {source}"]
    if source is not None:
        return [f"  {name} was applied by a {source} rule, not by your code directly"]
    return []


def _masked(ct, part, index):
    """Whether the cotangent reaching the bprop is zero at the bad element: the value there was
    discarded by the forward computation, so only the infinite derivative made the nan."""
    if ct is None:
        return False
    c = _np.asarray(core.primal(ct))
    try:
        return bool(_np.broadcast_to(c, part.shape)[index] == 0)
    except ValueError:
        return bool(c.size and not c.any())


_FIX = "Turn the check off (leave the `with fgrad.debug_nans():` block) to let it through."

_REWRITE = (
    "keep the unsafe inputs out of the discarded branch as well, e.g. "
    "safe = fnp.where(x > 0, x, 1.0); fnp.where(x > 0, fnp.sqrt(safe), 0.0)"
)

_TRAP_FORWARD = (
    "  This looks like the masked-branch trap: where(...) keeps the value finite by discarding "
    "this branch, but the gradient will be nan there all the same, because the branch's "
    "derivative is not finite and the zero cotangent that where sends it gives 0 * inf = nan. "
    "The fix: " + _REWRITE
)

_TRAP_BACKWARD = (
    "  This is the masked-branch trap: the cotangent that reached {name} is 0 at this element, "
    "so its value there was discarded (by where, a mask or indexing), yet {name}'s derivative "
    "there is not finite, and 0 * inf = nan. The forward value is fine; the gradient is not. "
    "The fix: " + _REWRITE
)


if os.environ.get("FGRAD_DEBUG_NANS", "").strip().lower() in ("1", "true", "yes", "on"):
    set_debug_nans(True)
