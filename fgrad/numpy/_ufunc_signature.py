"""NumPy's ufunc signature, declared once for every ufunc mirror (fgrad.numpy's, and
fgrad.scipy.special's of SciPy's ufuncs):

    (x, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None, subok=True,
     signature=None)

with `x1, x2, ...` for several inputs. A mirror is a function of `*args, **kwargs` (no
keyword to bind on the common call, which passes the inputs alone) whose `__signature__` is
this one, with its hints; `parse` binds a call with keywords as Python would bind that
signature, with Python's errors.

Imports: nothing of fgrad.
"""

from __future__ import annotations

import inspect
from typing import Any

# The keyword-only parameters and their defaults, in NumPy's order
KEYWORDS: tuple[tuple[str, Any], ...] = (
    ("where", True),
    ("casting", "same_kind"),
    ("order", "K"),
    ("dtype", None),
    ("subok", True),
    ("signature", None),
)
DEFAULTS: dict[str, Any] = dict(KEYWORDS)
_HINTS = {
    "where": "ArrayLike",
    "casting": "str",
    "order": "Literal['K', 'A', 'C', 'F']",
    "dtype": "DTypeLike | None",
    "subok": "bool",
    "signature": "str | tuple[Any, ...] | None",
}


def input_names(nin: int) -> list[str]:
    return ["x"] if nin == 1 else [f"x{k + 1}" for k in range(nin)]


def signature(nin: int) -> inspect.Signature:
    """NumPy's signature of a ufunc of `nin` inputs, with fgrad's hints."""
    P = inspect.Parameter
    params = [P(n, P.POSITIONAL_ONLY, annotation="ArrayLike") for n in input_names(nin)]
    params.append(P("out", P.POSITIONAL_OR_KEYWORD, default=None, annotation="None"))
    params += [P(k, P.KEYWORD_ONLY, default=d, annotation=_HINTS[k]) for k, d in KEYWORDS]
    return inspect.Signature(params, return_annotation="Array")


def parse(name: str, nin: int, args: tuple, kwargs: dict) -> tuple[tuple, Any, dict[str, Any]]:
    """(inputs, out, every keyword's value) of a call `name(*args, **kwargs)`, bound as
    `signature(nin)` would bind it (a TypeError worded as Python's for a call that does not
    fit)."""
    if len(args) < nin:
        missing = ", ".join(repr(n) for n in input_names(nin)[len(args) :])
        raise TypeError(f"{name}() missing required positional argument(s): {missing}")
    if len(args) > nin + 1:
        raise TypeError(
            f"{name}() takes from {nin} to {nin + 1} positional arguments but {len(args)} "
            "were given"
        )
    kwargs = dict(kwargs)
    if len(args) == nin + 1:
        if "out" in kwargs:
            raise TypeError(f"{name}() got multiple values for argument 'out'")
        out = args[nin]
    else:
        out = kwargs.pop("out", None)
    for key in kwargs:
        if key not in DEFAULTS:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
    return args[:nin], out, {k: kwargs.get(k, d) for k, d in KEYWORDS}


def all_default(out: Any, keywords: dict[str, Any]) -> bool:
    """Whether no keyword asks for anything (`out` None, each keyword at its default)."""
    return out is None and all(
        keywords[k] is d or (type(d) is str and keywords[k] == d) for k, d in KEYWORDS
    )
