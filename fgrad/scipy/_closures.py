"""The check that a function handed to a SciPy solver closes over no value being
differentiated: SciPy calls it on plain numbers, so the derivative by such a value would be
lost (`odeint`, `quad`).

Imports: `fgrad.core`, `fgrad.tree_util`, `fgrad.numpy.shaping` (`describe`).
"""

from __future__ import annotations

import functools
from typing import Any

from .. import core
from ..core import Box
from ..numpy.shaping import describe
from ..tree_util import tree_flatten

__all__ = ["check_closure"]


def check_closure(func: Any, who: str, instead: str) -> None:
    """Refuse `func` (naming `who` and what to do `instead`) when it closes over a value being
    differentiated: in a closure cell, a default argument or a partial's arguments, also of
    the functions it closes over."""
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


def _refuse_traced(v: Any, who: str, instead: str) -> None:
    try:
        leaves = tree_flatten(v)[0]
    except Exception:  # not a pytree fgrad knows: nothing of it can be traced
        return
    # (a free variable of a checkpoint's function is read as its traced input there)
    for x in core.live_leaves(leaves):
        y = x
        while type(y) is Box:
            if y.level.live:
                raise TypeError(
                    f"{who}: func closes over a value being differentiated (a traced value "
                    f"with {describe(x)}); its derivative would be lost. {instead}"
                )
            y = y.value
