"""Forward mode: a level whose boxes carry their tangents.

A `ForwardLevel` computes the tangent of each primitive's result from the primitive's forward
rule or, when a primitive has only a reverse rule, by transposing that rule: a bprop is linear
in its cotangent, and the vjp of a linear map is its transpose (`transpose_bprop`).

Imports: `fgrad.core`, `fgrad.reverse`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from . import core
from .core import Box, Level, Primitive, add_any, bind, enter_phase, leave_phase
from .reverse import ReverseLevel, backward_pass

__all__ = [
    "ForwardLevel",
    "NotLinearError",
    "PlaceholderLevel",
    "PlaceholderRead",
    "linear_transpose",
    "tangent_rule",
    "transpose_bprop",
]


class ForwardLevel(Level):
    """A level of forward mode: each box carries its tangent in `aux`."""

    __slots__ = ()

    def process(self, prim: Primitive, args: Sequence, params: dict) -> Any:
        vals = list(args)
        tangents = [None] * len(args)
        some = False
        for i, a in enumerate(args):
            if type(a) is Box and a.level is self:
                vals[i] = a.value
                tangents[i] = t = a.aux
                some = some or t is not None
        if not some:  # boxes without a tangent (inputs not perturbed): a constant here
            return bind(prim, vals, params)
        watch = core.watch
        phase = None if watch is None else enter_phase("apply", self, prim)
        try:
            try:
                ans, t_out = _value_and_tangent(prim, vals, tangents, params, phase)
            except FloatingPointError:
                # The user's `np.errstate(...="raise")` is in force: the value raises as it
                # would eagerly, but a tangent (sqrt's 0.5/sqrt(x) at 0: inf) is no value of
                # the function, and must not send it down its `except` branch.
                ans = bind(prim, vals, params)
                with _np.errstate(all="ignore"):
                    ans, t_out = _value_and_tangent(prim, vals, tangents, params, phase)
        finally:
            if phase is not None:
                leave_phase(phase)
        if watch is not None:
            watch.tangent(phase, vals, t_out)
        if prim.multiple_results:
            return tuple(a if t is None else Box(a, self, t) for a, t in zip(ans, t_out))
        if t_out is None:
            return ans  # a structural zero tangent: the result is a constant at this level
        return Box(ans, self, t_out)


def _value_and_tangent(prim, vals, tangents, params, phase):
    jvps, jvp = prim.jvps, prim.jvp  # never both (Primitive refuses it)
    if jvps is not None or jvp is not None:
        ans = bind(prim, vals, params)
        if phase is not None:
            phase.kind = "tangent"
        if jvp is not None:
            return ans, jvp(tangents, ans, *vals, **params)
        return ans, _sum_of_jvps(jvps, tangents, ans, vals, params)
    if phase is not None:
        phase.kind = "tangent"
    ans, pull = _reverse_rule(prim, tangents, vals, params)
    return ans, transpose_bprop(pull, ans, tangents, prim.multiple_results)


def _sum_of_jvps(jvps, tangents, ans, vals, params):
    t_out = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        rule = jvps[i] if i < len(jvps) else None
        if rule is None:
            continue
        ti = rule(t, ans, *vals, **params)
        if ti is not None:
            t_out = ti if t_out is None else bind(add_any, (t_out, ti), core._NO_PARAMS)
    return t_out


def tangent_rule(
    prim: Primitive, tangents: Sequence[Any], ans: Any, vals: Sequence[Any], params: dict
) -> Any:
    """J t: the tangent of prim's output at `vals` for the input tangents (None for none),
    given its value `ans`, from the forward rule or by transposing the reverse rule. (A
    primitive defined by its fprop computes its value again.)"""
    if prim.jvps is not None:
        return _sum_of_jvps(prim.jvps, tangents, ans, vals, params)
    if prim.jvp is not None:
        return prim.jvp(tangents, ans, *vals, **params)
    if prim.fprop is None:
        ans, pull = _reverse_rule(prim, tangents, vals, params, ans)
    else:
        ans, pull = _reverse_rule(prim, tangents, vals, params)
    return transpose_bprop(pull, ans, tangents, prim.multiple_results)


def _reverse_rule(prim, tangents, vals, params, ans=None):
    """The value and a function from the output cotangent to one cotangent (or None) per
    input, from the primitive's reverse rule."""
    wanted = [t is not None for t in tangents]
    if prim.fprop is not None:
        return prim.fprop(*vals, **params)
    if ans is None:
        ans = bind(prim, vals, params)
    if prim.vjp is not None:
        return ans, prim.vjp(wanted, ans, *vals, **params)
    closures = [
        maker(ans, *vals, **params) if w and maker is not None else None
        for w, maker in zip(wanted, prim.vjps)
    ]
    return ans, lambda ct: [None if f is None else f(ct) for f in closures]


class PlaceholderRead(Exception):
    """Code read the value of a placeholder (`PlaceholderLevel.read`): what it computes from
    there would be decided by the placeholder's value, which stands for every value."""


class PlaceholderLevel(ReverseLevel):
    """A reverse level whose input boxes are placeholders: their values (zeros) stand for every
    value, so code must not read them. A read (`bool(ct > 0)`, `float(ct)`, a NumPy mask of
    it) sets `was_read` and raises `PlaceholderRead`; the caller then computes without
    placeholders. (Code that catches that error still leaves `was_read` set.)"""

    __slots__ = ("was_read",)

    reads_values = True

    def __init__(self) -> None:
        super().__init__()
        self.was_read = False

    def read(self, box: Box) -> Any:
        self.was_read = True
        raise PlaceholderRead(f"the value of a placeholder at {self!r} was read")


class NotLinearError(ValueError):
    """A rule that must be linear (a bprop in its cotangent, a custom_jvp rule's tangent part)
    was found not to be: an error of the rule, which a transposition passes on rather than
    taking for a read of a placeholder (`fgrad.custom._check_linear`)."""


def linear_transpose(pull, outputs, consume=False):
    """The transpose of a linear map given by its bprop, or None.

    `pull` maps a list of cotangents (one per value in `outputs`, None for a zero) to a list
    of cotangents (one per input, None for a zero); it is linear. The result maps a list of
    tangents (one per input, None for a zero) to one tangent (None for a zero) per output, and
    may be called again (once only with `consume`). It is found by running `pull` once on
    placeholders: zeros boxed on a `PlaceholderLevel`, whose backward pass, seeded with the
    tangents, gives them. Where pull's Python reads a placeholder's value (or fails on it:
    `np.asarray(ct)`), the path it takes there need not be the path it takes for a real
    cotangent, and this returns None.
    """
    with PlaceholderLevel() as level:
        cts = [
            level.new_input(core.zeros_like_value(a)) if core.is_differentiable_value(a) else None
            for a in outputs
        ]
        try:
            in_cts = pull(cts)
        except NotLinearError:
            raise
        except Exception:  # a read of a placeholder, or a failure on one: see above
            return None
    if level.was_read:
        return None
    in_positions = [c.aux if type(c) is Box and c.level is level else None for c in in_cts]
    out_positions = [None if c is None else c.aux for c in cts]
    del cts, in_cts

    def transposed(tangents):
        seeds = [(n, t) for n, t in zip(in_positions, tangents) if n is not None and t is not None]
        if not seeds:
            return [None] * len(out_positions)
        summed = backward_pass(level, seeds, consume=consume)
        return [None if n is None else summed[n] for n in out_positions]

    return transposed


# J t from real cotangents, for a bprop whose Python reads its cotangent's value:
# `tangent_by_pulls(pull, outputs, tangents)` takes `linear_transpose`'s `pull` and returns
# one tangent (None for a zero) per output. It is written in fgrad operations, which this
# module does not import: `fgrad.custom` sets it.
def tangent_by_pulls(pull: Any, outputs: Any, tangents: Any) -> Any:
    """Replaced by `fgrad.custom`'s (see above) when it is imported."""
    raise RuntimeError("forward mode through a rule that reads its cotangent needs fgrad.custom")


def transpose_bprop(
    pull: Callable[[Any], Sequence[Any]],
    ans: Any,
    tangents: Sequence[Any],
    multiple_results: bool = False,
) -> Any:
    """J t from a bprop alone: `pull` is ct -> J^T ct, linear in ct, so its own vjp is J t.

    The fast path runs `pull` once on placeholder cotangents (`linear_transpose`). A bprop
    whose Python reads its cotangent's value (a loop to a tolerance, `if ct is zero`, a NumPy
    conversion) is pulled on real cotangents instead, one per output element
    (`tangent_by_pulls`): exact whatever its Python does. Returns one tangent (or None, a
    zero) per output with `multiple_results`, else the tangent.
    """
    outputs = ans if multiple_results else (ans,)
    pull_list = pull if multiple_results else (lambda cts: pull(cts[0]))
    transposed = linear_transpose(pull_list, outputs, consume=True)
    if transposed is not None:
        t_out = transposed(tangents)
    else:
        t_out = tangent_by_pulls(pull_list, outputs, tangents)
    t_out = [scalar_like(t, a) for t, a in zip(t_out, outputs)]
    return t_out if multiple_results else t_out[0]


def scalar_like(tangent: Any, output: Any) -> Any:
    """The tangent of a NumPy-scalar output as a NumPy scalar, as the output is and as every
    primitive's own forward rule gives it: a backward pass sums a cotangent to a 0-d array."""
    if type(tangent) is _np.ndarray and tangent.ndim == 0 and isinstance(output, _np.generic):
        return tangent[()]
    return tangent
