"""Forward mode: a level whose boxes carry their tangents.

A `ForwardLevel` computes the tangent of each primitive's result from the primitive's forward
rule or, when a primitive has only a reverse rule, by transposing that rule: a bprop is linear
in its cotangent, and the vjp of a linear map is its transpose (`transpose_bprop`).

Imports: `fgrad.core`, `fgrad.reverse`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import core
from .core import Box, Level, Primitive, add_any, bind, enter_phase, leave_phase
from .reverse import ReverseLevel, backward_pass

__all__ = ["ForwardLevel", "tangent_rule", "transpose_bprop"]


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
            jvps, jvp = prim.jvps, prim.jvp  # never both (Primitive refuses it)
            if jvps is not None or jvp is not None:
                ans = bind(prim, vals, params)
                if phase is not None:
                    phase.kind = "tangent"
                if jvp is not None:
                    t_out = jvp(tangents, ans, *vals, **params)
                else:
                    t_out = _sum_of_jvps(jvps, tangents, ans, vals, params)
            else:
                if phase is not None:
                    phase.kind = "tangent"
                ans, pull = _reverse_rule(prim, tangents, vals, params)
                t_out = transpose_bprop(pull, ans, tangents, prim.multiple_results)
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


def transpose_bprop(
    pull: Callable[[Any], Sequence[Any]],
    ans: Any,
    tangents: Sequence[Any],
    multiple_results: bool = False,
) -> Any:
    """J t from a bprop alone: `pull` is ct -> J^T ct, linear in ct, so its own vjp is J t.

    The cotangent is a zero placeholder (one per output) boxed on a fresh reverse level; the
    backward pass of that level, seeded with the tangents at pull's outputs, gives the
    cotangent of each placeholder, which is J t. Returns one tangent (or None, a zero) per
    output with `multiple_results`, else the tangent.
    """
    outputs = ans if multiple_results else (ans,)
    with ReverseLevel() as level:
        cts = [
            level.new_input(core.zeros_like_value(a)) if core.is_differentiable_value(a) else None
            for a in outputs
        ]
        in_cts = pull(cts if multiple_results else cts[0])
    seeds = [
        (c.aux, t)
        for c, t in zip(in_cts, tangents)
        if t is not None and type(c) is Box and c.level is level
    ]
    if not seeds:
        t_out = [None] * len(outputs)
    else:
        summed = backward_pass(level, seeds, consume=True)
        t_out = [None if c is None else summed[c.aux] for c in cts]
    return t_out if multiple_results else t_out[0]
