"""The checks that a function handed to a SciPy solver reads no value being differentiated
other than its arguments: SciPy calls it on plain numbers, so the derivative by such a value
would be lost (`odeint`, `quad`). `check_closure` looks at the function's closure cells,
defaults and partial arguments; `check_reads` runs it once and sees every value it reads
(through a bound method's `self`, a callable object's attributes, a global).

Imports: `fgrad.core`, `fgrad.tree_util`, `fgrad.numpy.shaping` (`describe`).
"""

from __future__ import annotations

import functools
from typing import Any

from .. import core
from ..core import Box
from ..numpy.shaping import describe
from ..tree_util import tree_flatten

__all__ = ["check_closure", "check_reads"]


def check_closure(func: Any, who: str, instead: str) -> None:
    """Refuse `func` (naming `who` and what to do `instead`) when it closes over a value being
    differentiated: in a closure cell, a default argument or a partial's arguments, also of
    the functions it closes over. A value a vmap batches or a jit records is not refused
    (see `check_reads`)."""
    todo, seen = [func], set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        while isinstance(fn, functools.partial):
            for v in list(fn.args) + list(fn.keywords.values()):
                _refuse_traced(v, who, instead)
            fn = fn.func
        values = list(getattr(fn, "__defaults__", None) or ())
        values += list((getattr(fn, "__kwdefaults__", None) or {}).values())
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:  # a cell not filled yet
                pass
        for v in values:
            if callable(v) and (hasattr(v, "__closure__") or isinstance(v, functools.partial)):
                todo.append(v)
            else:
                _refuse_traced(v, who, instead)


def check_reads(call: Any, who: str, instead: str) -> None:
    """Run `call()` (the function on its arguments, as constants) with every differentiating
    level suspended, and refuse it (naming `who` and what to do `instead`) if it read a box of
    one: a value being differentiated it reaches by other ways than a closure cell, which
    `check_closure` cannot see. Batching and staging levels stay live: a value a vmap batches
    or a jit records is computed right when read so (each row's solve; a jit that finds the
    value changed runs eagerly). Costs one call, and only under a differentiating transform."""
    if all(lv.batches or lv.stages for lv in core.live_levels()):
        return
    with core.capturing() as capture:
        call()
    if capture.boxes:
        raise TypeError(
            f"{who}: func reads a value being differentiated that is not one of its arguments "
            f"(a traced value with {describe(capture.boxes[0])}, reached through an object's "
            "attribute, a bound method's self, a global or a closure); SciPy calls func on "
            f"plain numbers, so its derivative would be lost. {instead}"
        )


def _refuse_traced(v: Any, who: str, instead: str) -> None:
    """Refuse `v` if a differentiating level holds it. A batching or staging level's value is
    fine, as for `check_reads`: SciPy's calls of func read it, each row's solve on its own
    value; a jit's record is not kept (`Level.closed_over`): each call runs the solve."""
    try:
        leaves = tree_flatten(v)[0]
    except Exception:  # not a pytree fgrad knows: nothing of it can be traced
        return
    # (a free variable of a checkpoint's function is read as its traced input there)
    for x in core.live_leaves(leaves):
        y = x
        while type(y) is Box:
            if y.level.live and y.level.stages:
                y.level.closed_over(y, who)
            elif y.level.live and not y.level.batches:
                raise TypeError(
                    f"{who}: func closes over a value being differentiated (a traced value "
                    f"with {describe(x)}); its derivative would be lost. {instead}"
                )
            y = y.value
